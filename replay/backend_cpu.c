/*
 * backend_cpu.c - the CPU backend: eager's kernels, every op.  Every other
 * entry is the generic code's default (internal.h): a host arena and the
 * bound steps of session.c.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "../eager/cost_rates.h"
#include "../eager/dnnl_util.h"
#include "../eager/eager.h"
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

/* The CPU's model from /proc/cpuinfo ("model name"; read once per
 * process), or "CPU". */
static void cpu_model(char *buf, size_t len)
{
    if (!eager_cpu_model_name(buf, len))
        snprintf(buf, len, "CPU");
}

/* The cores online, read once per process: replay_compile asks for the
 * device on every compile, and sysconf reads
 * /sys/devices/system/cpu/online (2-17 us here). */
static long cpu_cores;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static void cpu_read(void) { cpu_cores = sysconf(_SC_NPROCESSORS_ONLN); }

/* One device, "cpu": the machine this process runs on. */
static int cpu_devices(replay_device_info *out, int max, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    if (out && max > 0) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "cpu");
        cpu_model(out->device, sizeof out->device);
        pthread_once(&cpu_once, cpu_read);
        snprintf(out->details, sizeof out->details, "%ld cores online, kernels %s, oneDNN %s",
                 cpu_cores, eager_cpu_level(), eager_dnnl_isa_name());
    }
    return 1;
}

const replay_backend replay_backend_cpu = {
    .name = "cpu",
    .devices = cpu_devices,
    .supports_op = cpu_supports,
    .kernel = cpu_kernel,
};
