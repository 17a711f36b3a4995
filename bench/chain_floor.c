/*
 * chain_floor.c - how fast the `chain` workload (issue 6) can replay on
 * this core, and why: tanh(x sigmoid(x) + 0.5 x) 2 - 1 over 4M floats.
 *
 * At -O2/-O3 the chain is one fused node whose streaming path keeps every
 * value in registers (eager/kernels_fused_reg.c), so its time is the
 * arithmetic of sigmoid and tanh: two exponentials and two divisions per
 * element, bit for bit what eager computes.  This prints
 *   1. the core's throughput for that arithmetic: fp32 FMA in GFLOP/s
 *      with 512-bit and with 256-bit vectors (equal figures mean the
 *      512-bit ops run as two 256-bit halves, as on Zen 4), and the
 *      cycles one 512-bit division costs alone and among six FMAs;
 *   2. the replayed chain in ns per element with its data in cache
 *      (16K floats: arithmetic only) and at the workload's 4M floats
 *      (arithmetic plus memory), and eager at 4M: if the two replay
 *      figures are close, the replay is bound by arithmetic, and
 *      eager / replay at 4M is what issue 6's "chain >= 5x" is measured on.
 * Medians over repetitions in one run (the machine is shared).  Cycles are
 * derived from the FMA rate (one 512-bit FMA per cycle when the two
 * vector widths tie), so they are estimates, not counter readings.
 *
 *   chain_floor [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "bench_util.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracegraph.h"
#include "tracer/trace.h"

#define CHAINS 12 /* independent FMA chains: more than latency x pipes */

static volatile float bench_sink; /* the loops' results go here, so they run */

#if defined(__AVX512F__)
/*
 * Seconds for it rounds of CHAINS (12) independent FMAs with 512-bit
 * (w 16) or 256-bit (w 8) vectors, spelled out so that each chain stays
 * in a register whatever the optimization level; the sum goes to *sink
 * so nothing is dropped.
 */
#define FMA12(T, fma)                                                                          \
    do {                                                                                       \
        a0 = fma(a0, b, c), a1 = fma(a1, b, c), a2 = fma(a2, b, c), a3 = fma(a3, b, c);         \
        a4 = fma(a4, b, c), a5 = fma(a5, b, c), a6 = fma(a6, b, c), a7 = fma(a7, b, c);         \
        a8 = fma(a8, b, c), a9 = fma(a9, b, c), a10 = fma(a10, b, c), a11 = fma(a11, b, c);     \
    } while (0)
/* distinct starts: equal chains would be computed once */
#define INIT12(T, set)                                                                         \
    T a0 = set(1), a1 = set(2), a2 = set(3), a3 = set(4), a4 = set(5), a5 = set(6),            \
      a6 = set(7), a7 = set(8), a8 = set(9), a9 = set(10), a10 = set(11), a11 = set(12)
#define SUM12(add) add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))), \
                       add(add(a8, a9), add(a10, a11)))

static double fma_run(long it, int w, float *sink)
{
    double t0 = bench_now_ns();
    if (w == 16) {
        __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
        INIT12(__m512, _mm512_set1_ps);
        for (long k = 0; k < it; k++)
            FMA12(__m512, _mm512_fmadd_ps);
        *sink += _mm512_reduce_add_ps(SUM12(_mm512_add_ps));
    } else {
        __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
        INIT12(__m256, _mm256_set1_ps);
        for (long k = 0; k < it; k++)
            FMA12(__m256, _mm256_fmadd_ps);
        float o[8];
        _mm256_storeu_ps(o, SUM12(_mm256_add_ps));
        *sink += o[0];
    }
    return (bench_now_ns() - t0) * 1e-9;
}

/* Seconds for it rounds of 8 independent 512-bit divisions, alone
 * (nfma 0) or each beside 6 FMAs on the other registers (nfma 6). */
static double div_run(long it, int nfma, float *sink)
{
    double t0 = bench_now_ns();
    __m512 one = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    __m512 d0 = _mm512_set1_ps(1), d1 = _mm512_set1_ps(2), d2 = _mm512_set1_ps(3),
           d3 = _mm512_set1_ps(4), d4 = _mm512_set1_ps(5), d5 = _mm512_set1_ps(6),
           d6 = _mm512_set1_ps(7), d7 = _mm512_set1_ps(8);
    INIT12(__m512, _mm512_set1_ps);
#define DIV8                                                                                   \
    d0 = _mm512_div_ps(one, d0), d1 = _mm512_div_ps(one, d1), d2 = _mm512_div_ps(one, d2),      \
    d3 = _mm512_div_ps(one, d3), d4 = _mm512_div_ps(one, d4), d5 = _mm512_div_ps(one, d5),      \
    d6 = _mm512_div_ps(one, d6), d7 = _mm512_div_ps(one, d7)
    if (nfma == 0) {
        for (long k = 0; k < it; k++)
            DIV8;
    } else { /* 48 FMAs per 8 divisions: four rounds of the 12 chains */
        for (long k = 0; k < it; k++) {
            DIV8;
            FMA12(__m512, _mm512_fmadd_ps);
            FMA12(__m512, _mm512_fmadd_ps);
            FMA12(__m512, _mm512_fmadd_ps);
            FMA12(__m512, _mm512_fmadd_ps);
        }
    }
#undef DIV8
    __m512 d = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(d0, d1), _mm512_add_ps(d2, d3)),
                             _mm512_add_ps(_mm512_add_ps(d4, d5), _mm512_add_ps(d6, d7)));
    *sink += _mm512_reduce_add_ps(_mm512_add_ps(d, SUM12(_mm512_add_ps)));
    return (bench_now_ns() - t0) * 1e-9;
}

/* Best of 5 (other load only ever slows a run). */
static double best(double (*f)(long, int, float *), long it, int arg, float *sink)
{
    double b = 1e30;
    for (int r = 0; r < 5; r++) {
        double t = f(it, arg, sink);
        b = t < b ? t : b;
    }
    return b;
}

/* Prints the core's figures; returns its clock estimate in GHz. */
static double core_figures(void)
{
    float sink = 0;
    long it = 4000000;
    double t512 = best(fma_run, it, 16, &sink), t256 = best(fma_run, it, 8, &sink);
    double g512 = 2.0 * 16 * CHAINS * it / t512 * 1e-9, g256 = 2.0 * 8 * CHAINS * it / t256 * 1e-9;
    /* one 512-bit FMA per cycle when the widths tie, else two */
    double per_cycle = g512 < 1.3 * g256 ? 1 : 2, ghz = g512 / 32 / per_cycle;
    long dit = 1000000;
    double d0 = best(div_run, dit, 0, &sink), d6 = best(div_run, dit, 6, &sink);
    printf("core: fp32 FMA %.1f GFLOP/s with 512-bit vectors, %.1f with 256-bit "
           "(%s); about %.2f GHz\n",
           g512, g256, per_cycle == 1 ? "512-bit ops run as two halves" : "full width", ghz);
    printf("core: a 512-bit division every %.2f cycles alone; with 6 FMAs beside it "
           "%.2f cycles per group (6 + %.2f)\n",
           d0 * ghz * 1e9 / (dit * 8.0), d6 * ghz * 1e9 / (dit * 8.0),
           d6 * ghz * 1e9 / (dit * 8.0) - 6);
    bench_sink = sink;
    return ghz;
}
#else
static double core_figures(void)
{
    printf("core: built without AVX-512; no core figures\n");
    return 0;
}
#endif

static eager_tensor *chain(eager_tensor *x, eager_tensor *half, eager_tensor *two,
                           eager_tensor *one)
{
    eager_tensor *a = eager_add(eager_mul(x, eager_sigmoid(x)), eager_mul(x, half));
    return eager_sub(eager_mul(eager_tanh(a), two), one);
}

/* Median ns per element of the chain on n floats: replayed at -O3, and
 * (eager_ns != NULL) eager. */
static double chain_ns(int64_t n, int reps, double *eager_ns)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(n), 7, -4, 4);
    eager_tensor *half = eager_scalar(0.5f), *two = eager_scalar(2.0f), *one = eager_scalar(1.0f);
    graph *g = NULL;
    if (trace_begin(NULL) == TG_OK && trace_input(x, "x") == TG_OK) {
        eager_tensor *y = chain(x, half, two, one);
        if (y && trace_output(y, "y") == TG_OK)
            g = trace_freeze();
        else
            trace_abort();
    }
    opt_options o = opt_default_options();
    o.level = 3;
    char err[256];
    if (g && opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "chain_floor: -O3: %s\n", err);
        graph_free(g);
        g = NULL;
    }
    double replay = bench_replay_median_ns(g, x, reps) / (double)n; /* frees g */
    if (eager_ns) {
        double *t = malloc(sizeof *t * (size_t)reps);
        for (int r = -3; t && r < reps; r++) {
            eager_pool_push();
            double t0 = bench_now_ns();
            chain(x, half, two, one);
            if (r >= 0)
                t[r] = bench_now_ns() - t0;
            eager_pool_pop();
        }
        *eager_ns = t ? bench_median(t, reps) / (double)n : 0;
        free(t);
    }
    eager_pool_pop();
    return replay;
}

int main(int argc, char **argv)
{
    int reps = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: chain_floor [--reps R]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    eager_set_threads(1);
    double ghz = core_figures();
    const int64_t small = 16384, big = 4194304;
    double eager;
    double in_cache = chain_ns(small, reps * 50, NULL), full = chain_ns(big, reps, &eager);
    printf("chain -O3 replay, 1 thread: %.3f ns/element in cache (16K floats)", in_cache);
    if (ghz > 0)
        printf(", ~%.1f cycles per 16", in_cache * ghz * 16);
    printf("; %.3f ns/element at 4M floats: %.2f ms\n", full, full * big * 1e-6);
    printf("chain eager, 1 thread: %.2f ms at 4M floats; eager / replay = %.2fx "
           "(in-cache rate would give %.2fx)\n",
           eager * big * 1e-6, eager / full, eager / in_cache);
    return 0;
}
