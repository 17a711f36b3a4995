/*
 * replay_overhead.c - what replay adds per node beyond the kernels.
 *
 * A chain of 1000 elementwise ops (add, mul, relu, sub, neg, maximum, ...)
 * on 16-element f32 tensors is traced and compiled; a run is timed against
 * the same 1000 kernels called directly on two ping-pong buffers.  The
 * difference per node is the replay overhead.  Also prints eager on the
 * same chain.  Medians over repetitions, one run (the machine is shared).
 * Target: <= 20 ns/node (a bare function-pointer loop is ~3 ns here).
 *
 *   replay_overhead [--nodes N] [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eager/kernel.h"
#include "replay/replay.h"
#include "bench_util.h"
#include "tracegraph.h"
#include "tracer/trace.h"

static const graph_op chain_ops[10] = {
    GRAPH_OP_add, GRAPH_OP_mul, GRAPH_OP_relu, GRAPH_OP_sub, GRAPH_OP_neg,
    GRAPH_OP_maximum, GRAPH_OP_add, GRAPH_OP_mul, GRAPH_OP_abs, GRAPH_OP_minimum};

static eager_tensor *chain(eager_tensor *x, eager_tensor *c, int n)
{
    eager_tensor *y = x;
    for (int i = 0; i < n; i++) {
        switch (chain_ops[i % 10]) {
        case GRAPH_OP_add: y = eager_add(y, c); break;
        case GRAPH_OP_mul: y = eager_mul(y, c); break;
        case GRAPH_OP_relu: y = eager_relu(y); break;
        case GRAPH_OP_sub: y = eager_sub(y, x); break;
        case GRAPH_OP_neg: y = eager_neg(y); break;
        case GRAPH_OP_maximum: y = eager_maximum(y, x); break;
        case GRAPH_OP_abs: y = eager_abs(y); break;
        default: y = eager_minimum(y, c); break;
        }
    }
    return y;
}

static void kernels_only(const float *x, const float *c, float *buf[2], int n)
{
    graph_type t = {GRAPH_F32, 1, {16}};
    graph_type ts[2] = {t, t};
    const float *cur = x;
    for (int i = 0; i < n; i++) {
        graph_op op = chain_ops[i % 10];
        int unary = op == GRAPH_OP_relu || op == GRAPH_OP_neg || op == GRAPH_OP_abs;
        int with_x = op == GRAPH_OP_sub || op == GRAPH_OP_maximum;
        const void *in[2] = {cur, with_x ? x : c};
        void *out[1] = {buf[i & 1]};
        eager_kargs a = {ts, in, unary ? 1 : 2, NULL, &t, out, 1, 1, NULL, 0};
        eager_kernels[op](&a);
        cur = buf[i & 1];
    }
}

int main(int argc, char **argv)
{
    int nodes = 1000, reps = 21;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: replay_overhead [--nodes N] [--reps R]\n");
            return 2;
        }
    }
    if (nodes < 1 || nodes > 1000000 || reps < 1 || reps > 10000) {
        fprintf(stderr, "replay_overhead: --nodes 1..1000000, --reps 1..10000\n");
        return 2;
    }
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(16), 1, -1, 1);
    eager_tensor *c = eager_full(GRAPH_F32, TG_SHAPE(16), 0.5);
    eager_pool_push();
    trace_opts o = trace_default_opts();
    o.capture_stack = 0;
    trace_begin(&o);
    trace_input(x, "x");
    trace_output(chain(x, c, nodes), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    char err[512];
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (!s) {
        fprintf(stderr, "replay_overhead: %s\n", g ? err : eager_error());
        return 1;
    }
    float b0[16], b1[16], *buf[2] = {b0, b1}, y[16];
    replay_tensor in = {.type = *eager_type(x), .input = eager_peek(x)};
    replay_tensor out = {.type = *eager_type(x), .data = y};
    double *tr = malloc(sizeof(double) * (size_t)reps), *tk = malloc(sizeof(double) * (size_t)reps);
    double *te = malloc(sizeof(double) * (size_t)reps);
    int iters = 200000 / nodes + 1;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < iters; i++)
            if (replay_run(s, &in, 1, &out, 1) != TG_OK) {
                fprintf(stderr, "replay_overhead: %s\n", replay_session_error(s));
                return 1;
            }
        tr[r] = (bench_now_ns() - t0) / ((double)iters * nodes);
        t0 = bench_now_ns();
        for (int i = 0; i < iters; i++)
            kernels_only(eager_peek(x), eager_peek(c), buf, nodes);
        tk[r] = (bench_now_ns() - t0) / ((double)iters * nodes);
        t0 = bench_now_ns();
        for (int i = 0; i < iters; i++) {
            eager_pool_push();
            chain(x, c, nodes);
            eager_pool_pop();
        }
        te[r] = (bench_now_ns() - t0) / ((double)iters * nodes);
    }
    qsort(tr, (size_t)reps, sizeof(double), bench_cmp_double);
    qsort(tk, (size_t)reps, sizeof(double), bench_cmp_double);
    qsort(te, (size_t)reps, sizeof(double), bench_cmp_double);
    printf("replay_overhead: chain of %d elementwise ops on f32[16], %d reps (medians)\n",
           nodes, reps);
    printf("  replay           %7.1f ns/node\n", tr[reps / 2]);
    printf("  kernels only     %7.1f ns/node\n", tk[reps / 2]);
    printf("  replay overhead  %7.1f ns/node (target <= 20)\n", tr[reps / 2] - tk[reps / 2]);
    printf("  eager            %7.1f ns/op   (replay is %.1fx faster)\n", te[reps / 2],
           te[reps / 2] / tr[reps / 2]);
    free(tr);
    free(tk);
    free(te);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_release(x);
    eager_release(c);
    return 0;
}
