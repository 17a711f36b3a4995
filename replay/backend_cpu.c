/*
 * backend_cpu.c - the CPU backend: eager's kernels, every op.  Every other
 * entry is the generic code's default (internal.h): a host arena and the
 * bound steps of session.c.
 */
#include "internal.h"
#include "graph/graph_impl.h"

static int cpu_supports(const replay_plan *p, const graph_node *n, char *why, size_t len)
{
    (void)p;
    if ((unsigned)n->op < GRAPH_OP_COUNT && eager_kernels[n->op])
        return 1;
    snprintf(why, len, "no CPU kernel");
    return 0;
}

static eager_kernel_fn cpu_kernel(graph_op op) { return eager_kernels[op]; }

const replay_backend replay_backend_cpu = {
    .name = "cpu",
    .supports_op = cpu_supports,
    .kernel = cpu_kernel,
};
