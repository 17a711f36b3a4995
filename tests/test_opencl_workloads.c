/*
 * test_opencl_workloads.c - the benchmark workloads (workloads/workloads.c)
 * replayed on OpenCL at -O0, -O2 and -O3 against replay-CPU at the same
 * level (and the CPU at -O0 against eager): normalized error <= 1e-4.
 * Sizes are reduced (the suite runs the full ones) but keep every
 * structure: conv chains with channels a multiple of 16 so -O3's blocked
 * layout and conv2d_blk appear, the encoder's attention and both gelu /
 * layer_norm forms, fused chains.  Also a second batch size on the same
 * plans (dynamic batch).
 *
 * Every OpenCL plan and session is freed after its run, and the book of
 * cl objects (replay/opencl/objects.c) must have seen no release out of
 * order (a second release, a buffer before its sub-buffers, a program
 * before its kernels) at any workload and level, and nothing alive after
 * the runtime shuts down.
 *
 * No OpenCL platform: "SKIP: ..." and exit 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/workloads.h"
#include "check.h"
#include "workload_sizes.h"
#include "cpu_caps.h"
#include "eager/eager.h"
#include "optimize/opt.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

#define TOL 1e-4


/* Runs g on backend for input x; a malloc'd copy of the output or NULL. */
static float *run(const graph *g, const char *backend, const eager_tensor *x,
                  const char *what)
{
    char err[4096] = "";
    replay_opts o = {.threads = 1, .device = backend};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "%s: compile: %s", what, err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)}, out = {NULL};
    float *y = NULL;
    if (s && replay_run(s, &in, 1, &out, 1) == TG_OK) {
        size_t n = (size_t)graph_type_numel(&out.type);
        y = malloc(n * sizeof *y + 1);
        memcpy(y, out.data, n * sizeof *y);
    } else if (s) {
        CHECK_MSG(0, "%s: run: %s", what, replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    char first[512];
    long nv = ocl_obj_violations(first, sizeof first);
    CHECK_MSG(nv == 0, "%s: %ld cl objects released out of order, the first: %s", what, nv,
              first);
    ocl_obj_reset_violations();
    return y;
}

static void check_level(const workload *w, const graph *traced, int level, const float *eager_y,
                        int64_t n)
{
    char err[512] = "", what[96];
    graph *g = graph_clone(traced);
    opt_options o = opt_default_options();
    o.level = level;
    o.verify = 0;
    CHECK_MSG(g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "%s -O%d: %s", w->name,
              level, err);
    snprintf(what, sizeof what, "%s -O%d cpu", w->name, level);
    float *cpu = run(g, "cpu", w->x, what);
    snprintf(what, sizeof what, "%s -O%d opencl", w->name, level);
    float *ocl = run(g, "opencl", w->x, what);
    if (cpu && ocl) {
        double e = check_normalized_error(ocl, cpu, n);
        CHECK_MSG(e <= TOL, "%s -O%d: OpenCL vs CPU normalized error %.3g", w->name, level, e);
        if (level == 0) {
            e = check_normalized_error(cpu, eager_y, n);
            CHECK_MSG(e <= TOL, "%s -O0: CPU vs eager normalized error %.3g", w->name, e);
        }
    }
    free(cpu);
    free(ocl);
    graph_free(g);
}

static void test_workload(workload_kind k)
{
    workload w;
    workload_size sz = test_workload_size(k);
    if (workload_make(&w, k, &sz) != TG_OK) {
        CHECK_MSG(0, "workload %d: %s", (int)k, eager_error());
        return;
    }
    eager_pool_push();
    eager_tensor *y = workload_forward(&w, w.x);
    graph *g = workload_trace(&w, 0);
    CHECK_MSG(y && g, "%s: forward and trace: %s", w.name, eager_error());
    if (y && g)
        for (int level = 0; level <= 3; level += level ? 1 : 2)
            check_level(&w, g, level, eager_peek(y), eager_numel(y));
    graph_free(g);
    eager_pool_pop();
    workload_free(&w);
}

/*
 * Channel counts that are not multiples of 16 at -O3: a 3-channel stem
 * read plain, 24- and 40-channel values in padded blocks (depthwise,
 * residual add, 1x1), an 8-channel output; OpenCL against the CPU at -O3
 * and the CPU at -O0.
 */
static void test_padded_blocks(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, 3, 16, 16), 3, -1, 1);
    eager_tensor *w1 = eager_rand_uniform(TG_INTS(24, 3, 3, 3), 4, -0.4f, 0.4f);
    eager_tensor *w2 = eager_rand_uniform(TG_INTS(24, 1, 3, 3), 5, -0.4f, 0.4f);
    eager_tensor *w3 = eager_rand_uniform(TG_INTS(40, 24, 1, 1), 6, -0.3f, 0.3f);
    eager_tensor *w4 = eager_rand_uniform(TG_INTS(8, 40, 3, 3), 7, -0.1f, 0.1f);
    trace_begin(NULL);
    trace_input(x, "x");
    eager_tensor *h = eager_clip(
        eager_conv2d(x, w1, EAGER_NONE, TG_INTS(2), TG_INTS(1), TG_INTS(), 1), 0.0f, 6.0f);
    h = eager_add(eager_conv2d(h, w2, EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 24), h);
    h = eager_relu(eager_conv2d(h, w3, EAGER_NONE, TG_INTS(), TG_INTS(), TG_INTS(), 1));
    trace_output(eager_conv2d(h, w4, EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1), "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "padded blocks: trace: %s", eager_error());
    graph *g3 = g ? graph_clone(g) : NULL;
    opt_options o = opt_default_options();
    o.level = 3;
    char err[512] = "";
    CHECK_MSG(g3 && opt_optimize(g3, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    int blk = 0;
    for (int32_t i = 0; g3 && i < g3->nnodes; i++)
        blk += g3->nodes[i].op == GRAPH_OP_conv2d_blk;
    CHECK_MSG(blk == (test_blocked_convs() ? 4 : 0), "padded blocks: %d blocked convs at -O3, got %d",
              test_blocked_convs() ? 4 : 0, blk);
    float *ref = g ? run(g, "cpu", x, "padded -O0 cpu") : NULL;
    float *cpu = g3 ? run(g3, "cpu", x, "padded -O3 cpu") : NULL;
    float *ocl = g3 ? run(g3, "opencl", x, "padded -O3 opencl") : NULL;
    if (ref && cpu && ocl) {
        int64_t n = 2 * 8 * 8 * 8;
        double e1 = check_normalized_error(cpu, ref, n), e2 = check_normalized_error(ocl, ref, n);
        CHECK_MSG(e1 <= TOL && e2 <= TOL, "padded blocks: -O3 CPU %.3g, OpenCL %.3g vs -O0", e1,
                  e2);
    }
    free(ref);
    free(cpu);
    free(ocl);
    graph_free(g);
    graph_free(g3);
    eager_pool_pop();
}

int main(void)
{
    if (!check_opencl_device(NULL))
        return CHECK_SKIP;
    for (int k = 0; k < WL_COUNT; k++)
        test_workload((workload_kind)k);
    test_padded_blocks();
    replay_backend_shutdown();
    CHECK_MSG(ocl_live_objects() == 0, "every cl object released: %ld alive",
              ocl_live_objects());
    long subs;
    ocl_obj_counts(OCL_OBJ_SUBBUFFER, &subs, NULL);
    CHECK_MSG(subs == 0, "no sub-buffers (NVIDIA's driver crashed releasing them): %ld made",
              subs);
    return check_done();
}
