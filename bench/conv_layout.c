/*
 * conv_layout.c - what the -O3 layout pass buys (issue 5 item 6), one
 * thread, medians:
 *   1. the 3x3 64->64 56x56 conv as prepared kernels (state slot, fixed
 *      weights, as replay calls them): conv2d on plain NCHW vs conv2d_blk
 *      direct vs Winograd, without and with the resblock's add + relu
 *      epilogue (Winograd runs that epilogue in C: oneDNN 2.6 has no
 *      binary post-op for it);
 *   2. the residual block x -> conv3x3 -> BN -> relu -> conv3x3 -> BN ->
 *      add x -> relu, traced, optimized at -O2 and -O3, replayed.
 * The machine is shared: compare rows of one run, not runs.
 *
 *   conv_layout [--reps R]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "eager/kernel.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracegraph.h"
#include "tracer/trace.h"

static int reps = 51;

/* Median us of one kernel with a state slot and inputs 1, 2 fixed. */
static double time_kernel(graph_op op, const void *attrs, eager_tensor *const *in, int nin,
                          eager_tensor *y)
{
    graph_type t[4];
    const void *p[4];
    void *out[1] = {eager_data_mut(y)};
    for (int i = 0; i < nin; i++) {
        t[i] = *eager_type(in[i]);
        p[i] = eager_peek(in[i]);
    }
    eager_kstate *st = NULL;
    char err[256] = "";
    eager_kargs a = {t, p, nin, attrs, eager_type(y), out, 1, 1, err, sizeof err, &st, 6u};
    double *tm = malloc(sizeof *tm * (size_t)reps), med;
    for (int r = -3; r < reps; r++) {
        double t0 = bench_now_ns();
        if (eager_kernels[op](&a) != TG_OK) {
            fprintf(stderr, "%s failed: %s\n", graph_ops[op].name, err);
            exit(1);
        }
        if (r >= 0)
            tm[r] = bench_now_ns() - t0;
    }
    eager_kstate_free(st);
    med = bench_median(tm, reps);
    free(tm);
    return med / 1e3;
}

static void conv_rows(void)
{
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(1, 64, 56, 56), 1, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(64, 64, 3, 3), 2, -0.1f, 0.1f);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(64), 3, -1, 1);
    eager_tensor *xb = eager_to_blocked(x, 16), *y = eager_zeros(GRAPH_F32, TG_SHAPE(1, 64, 56, 56));
    eager_tensor *yb = eager_to_blocked(y, 16);
    graph_conv2d_ep_attrs pa = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1, TG_NOINTS, 0};
    graph_conv2d_ep_attrs pe = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1,
                                TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0};
    eager_tensor *pin[4] = {x, w, b, x}, *bin[4] = {xb, w, b, xb};
    printf("%-36s %10s %10s\n", "conv3x3 64->64 56x56 (prepared)", "plain", "+add+relu");
    printf("%-36s %10.1f %10.1f\n", "conv2d / conv2d_ep, NCHW",
           time_kernel(GRAPH_OP_conv2d_ep, &pa, pin, 3, y),
           time_kernel(GRAPH_OP_conv2d_ep, &pe, pin, 4, y));
    for (int64_t algo = 1; algo <= 2; algo++) {
        graph_conv2d_blk_attrs ba = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1, TG_NOINTS, 0, algo,
                                     -INFINITY, INFINITY, 16};
        graph_conv2d_blk_attrs be = ba;
        be.post = TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU);
        printf("%-36s %10.1f %10.1f\n", algo == 1 ? "conv2d_blk direct" : "conv2d_blk winograd",
               time_kernel(GRAPH_OP_conv2d_blk, &ba, bin, 3, yb),
               time_kernel(GRAPH_OP_conv2d_blk, &be, bin, 4, yb));
    }
    printf("%-36s %10.1f\n", "to_blocked + from_blocked",
           time_kernel(GRAPH_OP_to_blocked, &(graph_to_blocked_attrs){16}, &x, 1, yb) +
               time_kernel(GRAPH_OP_from_blocked, &(graph_from_blocked_attrs){0}, &xb, 1, y));
    eager_tensor *all[] = {x, w, b, xb, y, yb};
    for (int i = 0; i < 6; i++)
        eager_release(all[i]);
}

/*
 * 3x3 convs on 8-lane blocks (the AVX2 block), prepared: oneDNN's direct
 * kernel against the Winograd that conv2d_blk runs there (ours where
 * oneDNN has none: kernels_wino.c), at resnet's shapes and smaller maps.
 */
static void conv8_rows(void)
{
    static const int64_t shapes[][3] = {{64, 64, 56}, {128, 128, 28}, {256, 256, 14},
                                        {512, 512, 7}, {96, 128, 28}, {32, 32, 112},
                                        {64, 64, 28}, {256, 256, 7}};
    printf("\n%-36s %10s %10s %8s\n", "conv3x3 on 8-lane blocks (prepared)", "direct",
           "winograd", "w / d");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int64_t c = shapes[i][0], o = shapes[i][1], h = shapes[i][2];
        eager_tensor *x = eager_rand_uniform(TG_SHAPE(1, c, h, h), 1, -1, 1);
        eager_tensor *w = eager_rand_uniform(TG_SHAPE(o, c, 3, 3), 2, -0.1f, 0.1f);
        eager_tensor *b = eager_rand_uniform(TG_SHAPE(o), 3, -1, 1);
        eager_tensor *xb = eager_to_blocked(x, 8);
        eager_tensor *yb = eager_to_blocked(eager_zeros(GRAPH_F32, TG_SHAPE(1, o, h, h)), 8);
        eager_tensor *in[3] = {xb, w, b};
        double t[2];
        for (int64_t algo = 1; algo <= 2; algo++) {
            graph_conv2d_blk_attrs ba = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1,
                                         TG_INTS(GRAPH_POST_RELU), 0, algo, -INFINITY, INFINITY,
                                         8};
            t[algo - 1] = time_kernel(GRAPH_OP_conv2d_blk, &ba, in, 3, yb);
        }
        char name[64];
        snprintf(name, sizeof name, "%lld->%lld %lldx%lld", (long long)c, (long long)o,
                 (long long)h, (long long)h);
        printf("%-36s %10.1f %10.1f %8.2f\n", name, t[0], t[1], t[1] / t[0]);
        eager_tensor *all[] = {x, w, b, xb, yb};
        for (int j = 0; j < 5; j++)
            eager_release(all[j]);
    }
}

static eager_tensor *bn(eager_tensor *x, eager_tensor *const *p)
{
    return eager_batch_norm(x, p[0], p[1], p[2], p[3], 1e-5f);
}

static eager_tensor *resblock(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *h = eager_relu(
        bn(eager_conv2d(x, p[0], EAGER_NONE, TG_NOINTS, TG_INTS(1), TG_NOINTS, 1), p + 2));
    h = bn(eager_conv2d(h, p[1], EAGER_NONE, TG_NOINTS, TG_INTS(1), TG_NOINTS, 1), p + 6);
    return eager_relu(eager_add(h, x));
}

static double time_block(const graph *g0, eager_tensor *x, int level)
{
    graph *g = graph_clone(g0);
    opt_options o = opt_default_options();
    o.level = level;
    char err[512] = "";
    if (!g || opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "optimize failed: %s\n", err);
        exit(1);
    }
    return bench_replay_median_ns(g, x, reps) / 1e3;
}

static void block_rows(void)
{
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(1, 64, 56, 56), 11, -1, 1), *p[10];
    p[0] = eager_rand_uniform(TG_SHAPE(64, 64, 3, 3), 12, -0.1f, 0.1f);
    p[1] = eager_rand_uniform(TG_SHAPE(64, 64, 3, 3), 13, -0.1f, 0.1f);
    for (int i = 2; i < 10; i++)
        p[i] = eager_rand_uniform(TG_SHAPE(64), (uint64_t)(14 + i), i % 4 == 1 ? 0.5f : -0.5f,
                                  1.5f);
    eager_pool_push();
    trace_begin(NULL);
    trace_input(x, "x");
    for (int i = 0; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        trace_param(p[i], name);
    }
    trace_output(resblock(x, p), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    if (!g) {
        fprintf(stderr, "trace failed\n");
        exit(1);
    }
    printf("\n%-36s %10s %10s\n", "resblock 64ch 56x56 (replay)", "-O2", "-O3");
    printf("%-36s %10.1f %10.1f\n", "median us", time_block(g, x, 2), time_block(g, x, 3));
    graph_free(g);
    eager_release(x);
    for (int i = 0; i < 10; i++)
        eager_release(p[i]);
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[++i]) > 0 ? atoi(argv[i]) : reps;
    eager_set_threads(1);
    conv_rows();
    conv8_rows();
    block_rows();
    return 0;
}
