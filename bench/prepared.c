/*
 * prepared.c - what prepared oneDNN kernels save: linear 64x784 -> 512
 * (the MLP's first layer), a small linear 4x32 -> 16, and a 3x3 64 -> 64
 * conv on 56x56, each timed as
 *   eager API     eager_linear / eager_conv2d (dispatch, alloc, kernel)
 *   kernel        the kernel without a state slot (primitive looked up in
 *                 oneDNN's cache, memory objects made, every call)
 *   prepared      the kernel with a state slot and fixed weights, as
 *                 replay calls it (primitive built once, weights packed)
 *   replay        a traced one-op graph through replay_run
 * and the epilogue: linear + relu and conv + add + relu as separate eager
 * ops vs one linear_ep / conv2d_ep.  Medians, one thread (the machine is
 * shared: compare columns of one run, not runs).
 *
 *   prepared [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "eager/kernel.h"
#include "replay/replay.h"
#include "tracegraph.h"
#include "tracer/trace.h"

static int reps = 101;

/* One kernel call's arguments (3 inputs, 1 output). */
typedef struct kcall {
    graph_op op;
    graph_type in_t[3];
    const void *in[3];
    const void *attrs;
    graph_type out_t;
    void *out[1];
} kcall;

static kcall make_call(graph_op op, eager_tensor *const *p, const void *attrs, eager_tensor *y)
{
    kcall k = {op, {{0}}, {0}, attrs, *eager_type(y), {eager_data_mut(y)}};
    for (int i = 0; i < 3; i++) {
        k.in_t[i] = *eager_type(p[i]);
        k.in[i] = eager_peek(p[i]);
    }
    return k;
}

static double time_kernel(kcall *k, int prepared)
{
    double *t = malloc(sizeof *t * (size_t)reps), med;
    eager_kstate *st = NULL;
    char err[256];
    eager_kargs a = {k->in_t, k->in, 3, k->attrs, &k->out_t, k->out, 1, 1, err, sizeof err,
                     prepared ? &st : NULL, prepared ? 6u : 0u};
    for (int i = 0; i < 3; i++)
        eager_kernels[k->op](&a);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ns();
        if (eager_kernels[k->op](&a) != TG_OK) {
            fprintf(stderr, "kernel failed: %s\n", err);
            exit(1);
        }
        t[r] = bench_now_ns() - t0;
    }
    eager_kstate_free(st);
    med = bench_median(t, reps);
    free(t);
    return med;
}

typedef eager_tensor *(*model_fn)(eager_tensor *const *p);

static double time_eager(model_fn f, eager_tensor *const *p)
{
    double *t = malloc(sizeof *t * (size_t)reps), med;
    for (int r = -3; r < reps; r++) {
        eager_pool_push();
        double t0 = bench_now_ns();
        f(p);
        if (r >= 0)
            t[r] = bench_now_ns() - t0;
        eager_pool_pop();
    }
    med = bench_median(t, reps);
    free(t);
    return med;
}

/* f traced with p[0] as the input and p[1..np) as params. */
static double time_replay(model_fn f, eager_tensor *const *p, int np)
{
    eager_pool_push();
    trace_begin(NULL);
    trace_input(p[0], "x");
    for (int i = 1; i < np; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        trace_param(p[i], name);
    }
    trace_output(f(p), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    return bench_replay_median_ns(g, p[0], reps);
}

static eager_tensor *f_linear(eager_tensor *const *p) { return eager_linear(p[0], p[1], p[2]); }
static eager_tensor *f_conv(eager_tensor *const *p)
{
    return eager_conv2d(p[0], p[1], p[2], TG_NOINTS, TG_INTS(1), TG_NOINTS, 1);
}
static eager_tensor *f_linear_relu(eager_tensor *const *p) { return eager_relu(f_linear(p)); }
static eager_tensor *f_linear_ep(eager_tensor *const *p)
{
    return eager_linear_ep(p[0], p[1], p[2], EAGER_NONE, TG_INTS(GRAPH_POST_RELU), 0,
                           -INFINITY, INFINITY);
}
static eager_tensor *f_conv_add_relu(eager_tensor *const *p)
{
    return eager_relu(eager_add(f_conv(p), p[0]));
}
static eager_tensor *f_conv_ep(eager_tensor *const *p)
{
    return eager_conv2d_ep(p[0], p[1], p[2], p[0], TG_NOINTS, TG_INTS(1), TG_NOINTS, 1,
                           TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0, -INFINITY,
                           INFINITY);
}

static void row(const char *name, model_fn f, eager_tensor *const *p, const void *attrs,
                graph_op op, graph_ints yshape)
{
    eager_tensor *y = eager_zeros(GRAPH_F32, yshape);
    kcall k = make_call(op, p, attrs, y);
    printf("%-24s %11.2f %11.2f %11.2f %11.2f\n", name, time_eager(f, p) / 1e3,
           time_kernel(&k, 0) / 1e3, time_kernel(&k, 1) / 1e3, time_replay(f, p, 3) / 1e3);
    eager_release(y);
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[++i]) > 0 ? atoi(argv[i]) : reps;
    eager_set_threads(1);
    eager_tensor *lp[3] = {eager_rand_uniform(TG_SHAPE(64, 784), 1, -1, 1),
                           eager_rand_uniform(TG_SHAPE(512, 784), 2, -1, 1),
                           eager_rand_uniform(TG_SHAPE(512), 3, -1, 1)};
    eager_tensor *sp[3] = {eager_rand_uniform(TG_SHAPE(4, 32), 4, -1, 1),
                           eager_rand_uniform(TG_SHAPE(16, 32), 5, -1, 1),
                           eager_rand_uniform(TG_SHAPE(16), 6, -1, 1)};
    eager_tensor *cp[3] = {eager_rand_uniform(TG_SHAPE(1, 64, 56, 56), 7, -1, 1),
                           eager_rand_uniform(TG_SHAPE(64, 64, 3, 3), 8, -1, 1),
                           eager_rand_uniform(TG_SHAPE(64), 9, -1, 1)};
    graph_conv2d_attrs ca = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1};
    printf("%-24s %11s %11s %11s %11s   (median us, 1 thread)\n", "op", "eager API", "kernel",
           "prepared", "replay");
    row("linear 64x784->512", f_linear, lp, NULL, GRAPH_OP_linear, TG_SHAPE(64, 512));
    row("linear 4x32->16", f_linear, sp, NULL, GRAPH_OP_linear, TG_SHAPE(4, 16));
    row("conv3x3 64->64 56x56", f_conv, cp, &ca, GRAPH_OP_conv2d, TG_SHAPE(1, 64, 56, 56));
    printf("\n%-32s %11s %11s\n", "epilogue (eager API)", "separate", "fused _ep");
    printf("%-32s %11.2f %11.2f\n", "linear 64x784->512 + relu", time_eager(f_linear_relu, lp) / 1e3,
           time_eager(f_linear_ep, lp) / 1e3);
    printf("%-32s %11.2f %11.2f\n", "conv 64->64 56x56 + add + relu",
           time_eager(f_conv_add_relu, cp) / 1e3, time_eager(f_conv_ep, cp) / 1e3);
    for (int i = 0; i < 3; i++) {
        eager_release(lp[i]);
        eager_release(sp[i]);
        eager_release(cp[i]);
    }
    return 0;
}
