/*
 * eager_onednn.c - per-call cost of the eager oneDNN ops (no prepared
 * state: what a user calling the public API pays), one thread, medians
 * over rounds that take one call of every case in turn:
 *   conv2d_blk (Winograd and direct shapes, grouped), conv2d, conv2d_ep,
 *   conv_transpose2d, matmul, linear, linear_ep, max_pool2d_blk; and fused,
 *   whose kernel compiles its program on every eager call.
 * The machine is shared: compare rows of one run, not runs.
 *
 *   eager_onednn [--reps R] [--only NAME]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tracegraph.h"

typedef struct ecase {
    const char *name;
    eager_tensor *(*call)(eager_tensor **in);
    eager_tensor *in[4];
    double *t;
} ecase;

static eager_tensor *blk_wino(eager_tensor **in)
{
    return eager_conv2d_blk(in[0], in[1], in[2], EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_INTS(), 1,
                            TG_INTS(GRAPH_POST_RELU), 0.0f, 0, -INFINITY, INFINITY, 16);
}

static eager_tensor *blk_direct(eager_tensor **in)
{
    return eager_conv2d_blk(in[0], in[1], in[2], EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_INTS(), 1,
                            TG_INTS(GRAPH_POST_RELU), 0.0f, 1, -INFINITY, INFINITY, 16);
}

static eager_tensor *blk_1x1(eager_tensor **in)
{
    return eager_conv2d_blk(in[0], in[1], in[2], in[3], TG_INTS(1), TG_INTS(), TG_INTS(), 1,
                            TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0.0f, 0, -INFINITY,
                            INFINITY, 16);
}

static eager_tensor *blk_dw(eager_tensor **in)
{
    return eager_conv2d_blk(in[0], in[1], in[2], EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_INTS(),
                            eager_type(in[1])->dim[0], TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 16);
}

static eager_tensor *conv(eager_tensor **in)
{
    return eager_conv2d(in[0], in[1], in[2], TG_INTS(1), TG_INTS(1), TG_INTS(), 1);
}

static eager_tensor *conv_ep(eager_tensor **in)
{
    return eager_conv2d_ep(in[0], in[1], in[2], EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_INTS(), 1,
                           TG_INTS(GRAPH_POST_RELU), 0.0f, -INFINITY, INFINITY);
}

static eager_tensor *deconv(eager_tensor **in)
{
    return eager_conv_transpose2d(in[0], in[1], in[2], TG_INTS(2), TG_INTS(1), TG_INTS(),
                                  TG_INTS(), 1);
}

static eager_tensor *mm(eager_tensor **in)
{
    return eager_matmul(in[0], in[1], 0, 0);
}

static eager_tensor *lin(eager_tensor **in)
{
    return eager_linear(in[0], in[1], in[2]);
}

static eager_tensor *lin_ep(eager_tensor **in)
{
    return eager_linear_ep(in[0], in[1], in[2], EAGER_NONE, TG_INTS(GRAPH_POST_GELU), 0.0f,
                           -INFINITY, INFINITY);
}

static eager_tensor *pool_blk(eager_tensor **in)
{
    return eager_max_pool2d_blk(in[0], TG_INTS(3), TG_INTS(2), TG_INTS(1));
}

static eager_tensor *fused7(eager_tensor **in)
{
    return eager_fused(2, in,
                       TG_STR("r0=mul(i0,i1);r1=add(r0,i0);r2=sigmoid(r1);r3=mul(r2,r1);"
                              "r4=sub(r3,i1);r5=tanh(r4);r6=add(r5,r0)"));
}

static eager_tensor *add1(eager_tensor **in)
{
    return eager_add(in[0], in[1]);
}

static eager_tensor *rnd(graph_ints shape, uint64_t seed)
{
    return eager_rand_uniform(shape, seed, -1, 1);
}

static eager_tensor *blocked(graph_ints shape, uint64_t seed)
{
    eager_tensor *x = eager_rand_uniform(shape, seed, -1, 1);
    eager_tensor *b = eager_to_blocked(x, 16);
    eager_release(x);
    return b;
}

int main(int argc, char **argv)
{
    int reps = 21;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
    }
    if (reps < 1)
        reps = 1;
    eager_set_threads(1);
    ecase cs[] = {
        {"conv2d_blk 512->512 3x3 7x7 wino", blk_wino,
         {blocked(TG_INTS(1, 512, 7, 7), 1), rnd(TG_INTS(512, 512, 3, 3), 2),
          rnd(TG_INTS(512), 3)}, NULL},
        {"conv2d_blk 512->512 3x3 7x7 direct", blk_direct,
         {blocked(TG_INTS(1, 512, 7, 7), 1), rnd(TG_INTS(512, 512, 3, 3), 2),
          rnd(TG_INTS(512), 3)}, NULL},
        {"conv2d_blk 64->64 3x3 56x56 wino", blk_wino,
         {blocked(TG_INTS(1, 64, 56, 56), 4), rnd(TG_INTS(64, 64, 3, 3), 5),
          rnd(TG_INTS(64), 6)}, NULL},
        {"conv2d_blk 256->64 1x1 56x56 +add", blk_1x1,
         {blocked(TG_INTS(1, 256, 56, 56), 7), rnd(TG_INTS(64, 256, 1, 1), 8),
          rnd(TG_INTS(64), 9), blocked(TG_INTS(1, 64, 56, 56), 10)}, NULL},
        {"conv2d_blk dw 256 3x3 28x28", blk_dw,
         {blocked(TG_INTS(1, 256, 28, 28), 11), rnd(TG_INTS(256, 1, 3, 3), 12),
          rnd(TG_INTS(256), 13)}, NULL},
        {"conv2d 512->512 3x3 7x7", conv,
         {rnd(TG_INTS(1, 512, 7, 7), 1), rnd(TG_INTS(512, 512, 3, 3), 2), rnd(TG_INTS(512), 3)},
         NULL},
        {"conv2d_ep 512->512 3x3 7x7 relu", conv_ep,
         {rnd(TG_INTS(1, 512, 7, 7), 1), rnd(TG_INTS(512, 512, 3, 3), 2), rnd(TG_INTS(512), 3)},
         NULL},
        {"conv_transpose2d 256->128 4x4 s2 14x14", deconv,
         {rnd(TG_INTS(1, 256, 14, 14), 14), rnd(TG_INTS(256, 128, 4, 4), 15),
          rnd(TG_INTS(128), 16)}, NULL},
        {"matmul 64x784 * 784x512", mm,
         {rnd(TG_INTS(64, 784), 17), rnd(TG_INTS(784, 512), 18)}, NULL},
        {"linear 64x784 -> 512", lin,
         {rnd(TG_INTS(64, 784), 17), rnd(TG_INTS(512, 784), 19), rnd(TG_INTS(512), 20)}, NULL},
        {"linear_ep 64x784 -> 512 gelu", lin_ep,
         {rnd(TG_INTS(64, 784), 17), rnd(TG_INTS(512, 784), 19), rnd(TG_INTS(512), 20)}, NULL},
        {"max_pool2d_blk 64 56x56 3x3 s2", pool_blk, {blocked(TG_INTS(1, 64, 112, 112), 21)},
         NULL},
        /* not oneDNN: the fused kernel compiles its program on every eager call */
        {"fused 7 statements f32[16]", fused7, {rnd(TG_INTS(16), 22), rnd(TG_INTS(16), 23)}, NULL},
        {"add f32[16] (for scale)", add1, {rnd(TG_INTS(16), 22), rnd(TG_INTS(16), 23)}, NULL},
    };
    int n = (int)(sizeof cs / sizeof cs[0]);
    for (int i = 0; i < n; i++)
        cs[i].t = calloc((size_t)reps, sizeof(double));
    for (int r = -2; r < reps; r++)
        for (int i = 0; i < n; i++) {
            if (only && !strstr(cs[i].name, only))
                continue;
            double t0 = bench_now_ns();
            eager_tensor *y = cs[i].call(cs[i].in);
            double t = bench_now_ns() - t0;
            if (!y) {
                fprintf(stderr, "%s: %s\n", cs[i].name, eager_error());
                return 1;
            }
            eager_release(y);
            if (r >= 0)
                cs[i].t[r] = t / 1e6;
        }
    printf("%-40s %10s %10s\n", "eager call (1 thread)", "median ms", "min ms");
    for (int i = 0; i < n; i++) {
        if (only && !strstr(cs[i].name, only))
            continue;
        double mn = cs[i].t[0];
        for (int r = 1; r < reps; r++)
            mn = cs[i].t[r] < mn ? cs[i].t[r] : mn;
        printf("%-40s %10.4f %10.4f\n", cs[i].name, bench_median(cs[i].t, reps), mn);
    }
    for (int i = 0; i < n; i++) {
        free(cs[i].t);
        for (int k = 0; k < 4; k++)
            if (cs[i].in[k])
                eager_release(cs[i].in[k]);
    }
    return 0;
}
