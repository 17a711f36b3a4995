/* backend_cpu.c - the CPU backend: eager's kernels, every op. */
#include "internal.h"

static int cpu_supports(const graph *g, const graph_node *n, char *why, size_t len)
{
    (void)g;
    if ((unsigned)n->op < GRAPH_OP_COUNT && eager_kernels[n->op])
        return 1;
    snprintf(why, len, "no CPU kernel");
    return 0;
}

static eager_kernel_fn cpu_kernel(graph_op op) { return eager_kernels[op]; }

const replay_backend replay_backend_cpu = {"cpu", cpu_supports, cpu_kernel};
