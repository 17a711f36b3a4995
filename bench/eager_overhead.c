/*
 * eager_overhead.c - what one eager op costs beyond its arithmetic.
 *
 * A chain of elementwise ops (add, mul, relu, sub, neg, maximum, ...) on
 * 16-element f32 tensors, inside a pool that is popped every iteration, as
 * a user's loop would.  Prints the median and min ns per op over several
 * repetitions, and the same chain called directly on the kernels (no
 * dispatcher), so the difference is the dispatch overhead.
 *
 *   eager_overhead [--iters N] [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eager/kernel.h"
#include "bench_util.h"
#include "tracegraph.h"

#define CHAIN 10

/* One iteration: CHAIN eager ops. */
static eager_tensor *chain(eager_tensor *x, eager_tensor *c)
{
    eager_tensor *y = eager_add(x, c);
    y = eager_mul(y, c);
    y = eager_relu(y);
    y = eager_sub(y, x);
    y = eager_neg(y);
    y = eager_maximum(y, x);
    y = eager_add(y, c);
    y = eager_mul(y, x);
    y = eager_abs(y);
    return eager_minimum(y, c);
}

/* The same chain on kernels only: the arithmetic floor. */
static void chain_kernels(float *x, float *c, float *buf[2])
{
    static const graph_op ops[CHAIN] = {
        GRAPH_OP_add, GRAPH_OP_mul, GRAPH_OP_relu, GRAPH_OP_sub,
        GRAPH_OP_neg, GRAPH_OP_maximum, GRAPH_OP_add, GRAPH_OP_mul,
        GRAPH_OP_abs, GRAPH_OP_minimum};
    static const int second[CHAIN] = {1, 1, -1, 0, -1, 0, 1, 0, -1, 1};
    graph_type t = {GRAPH_F32, 1, {16}};
    graph_type ts[2] = {t, t};
    const float *cur = x;
    for (int i = 0; i < CHAIN; i++) {
        const void *in[2] = {cur, second[i] == 1 ? c : x};
        void *out[1] = {buf[i & 1]};
        eager_kargs a = {ts, in, second[i] < 0 ? 1 : 2, NULL, &t, out, 1, 1, NULL, 0};
        eager_kernels[ops[i]](&a);
        cur = buf[i & 1];
    }
}

int main(int argc, char **argv)
{
    long iters = 200000;
    int reps = 11;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: eager_overhead [--iters N] [--reps R]\n");
            return 2;
        }
    }
    if (iters < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "eager_overhead: iters and reps must be positive\n");
        return 2;
    }
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(16), 1, -1.0f, 1.0f);
    eager_tensor *c = eager_full(GRAPH_F32, TG_SHAPE(16), 0.5);
    double *eager_ns = malloc(sizeof(double) * (size_t)reps);
    double *kern_ns = malloc(sizeof(double) * (size_t)reps);
    float b0[16], b1[16], *buf[2] = {b0, b1};
    float xs[16], cs[16];
    memcpy(xs, eager_peek(x), sizeof xs);
    memcpy(cs, eager_peek(c), sizeof cs);

    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ns();
        for (long i = 0; i < iters; i++) {
            eager_pool_push();
            if (!chain(x, c)) {
                fprintf(stderr, "eager_overhead: %s\n", eager_error());
                return 1;
            }
            eager_pool_pop();
        }
        eager_ns[r] = (bench_now_ns() - t0) / ((double)iters * CHAIN);
        t0 = bench_now_ns();
        for (long i = 0; i < iters; i++)
            chain_kernels(xs, cs, buf);
        kern_ns[r] = (bench_now_ns() - t0) / ((double)iters * CHAIN);
    }
    qsort(eager_ns, (size_t)reps, sizeof(double), bench_cmp_double);
    qsort(kern_ns, (size_t)reps, sizeof(double), bench_cmp_double);
    double em = eager_ns[reps / 2], km = kern_ns[reps / 2];
    printf("eager_overhead: chain of %d elementwise ops on f32[16], %ld iterations x %d reps\n",
           CHAIN, iters, reps);
    printf("  eager op            median %7.1f ns   min %7.1f ns\n", em, eager_ns[0]);
    printf("  kernel only         median %7.1f ns   min %7.1f ns\n", km, kern_ns[0]);
    printf("  dispatch overhead   median %7.1f ns per op (target <= 100 ns)\n", em - km);
    free(eager_ns);
    free(kern_ns);
    eager_release(x);
    eager_release(c);
    return 0;
}
