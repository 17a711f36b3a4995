/*
 * peak.c - this machine's fp32 multiply-add throughput, measured: the
 * ceiling the compute-bound workloads (mlp, resblock, encoder) are held
 * against in the suite's output ("fma_peak_gflops" of their records,
 * measured as each record starts: a shared machine's throughput varies
 * with what else runs on it).
 *
 * Each thread (plain pthreads, so that an OpenMP team the record makes
 * later starts clean) runs 12 independent chains of vector fused multiply-adds
 * (the widest the build targets: AVX-512, AVX2 + FMA, or scalar fmaf),
 * enough to cover the latency of two FMA pipes; nothing else is in the
 * loop, so what it reaches is what the core can retire.  The best of 5
 * runs of about 10 ms counts (other work on a shared machine only ever
 * slows a run down).  A vendor's figure can differ from this one: Zen 4,
 * for one, runs a 512-bit FMA as two 256-bit halves, so its peak is half
 * of what its AVX-512 support suggests.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#include "../bench_util.h"
#include "suite.h"

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SPLAT(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SUM(v) _mm512_reduce_add_ps(v)
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vec;
#define LANES 8
#define SPLAT(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float SUM(__m256 v)
{
    float f[8], s = 0;
    _mm256_storeu_ps(f, v);
    for (int i = 0; i < 8; i++)
        s += f[i];
    return s;
}
#else
typedef float vec;
#define LANES 1
#define SPLAT(x) (x)
#define FMA(a, b, c) fmaf(a, b, c)
#define SUM(v) (v)
#endif

/* Runs iters rounds of 12 FMAs on 12 chains; returns a value that depends
 * on all of them (so that none is optimized away). */
static float fma_rounds(int64_t iters)
{
    vec a0 = SPLAT(1.00f), a1 = SPLAT(1.01f), a2 = SPLAT(1.02f), a3 = SPLAT(1.03f);
    vec a4 = SPLAT(1.04f), a5 = SPLAT(1.05f), a6 = SPLAT(1.06f), a7 = SPLAT(1.07f);
    vec a8 = SPLAT(1.08f), a9 = SPLAT(1.09f), a10 = SPLAT(1.10f), a11 = SPLAT(1.11f);
    vec m = SPLAT(0.9999999f), c = SPLAT(1e-7f);
    for (int64_t i = 0; i < iters; i++) {
        a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);
        a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);
        a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);
#if defined(__GNUC__)
        /* keep the chains in registers and apart: the compiler may not
         * merge or shorten them */
        __asm__("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
        __asm__("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
#endif
    }
    return SUM(a0) + SUM(a1) + SUM(a2) + SUM(a3) + SUM(a4) + SUM(a5) + SUM(a6) + SUM(a7) +
           SUM(a8) + SUM(a9) + SUM(a10) + SUM(a11);
}

enum { ITERS = 3000000 }; /* 36M vector FMAs a thread: ~10 ms */

static void *peak_thread(void *out)
{
    *(float *)out = fma_rounds(ITERS);
    return NULL;
}

double suite_fma_peak_gflops(int threads)
{
    double best = 0;
    volatile float sink;
    float part[SUITE_MAX_THREADS];
    pthread_t th[SUITE_MAX_THREADS];
    if (threads < 1 || threads > SUITE_MAX_THREADS)
        return 0;
    for (int run = 0; run < 5; run++) {
        double t0 = bench_now_ns();
        int started = 0;
        while (started < threads - 1 &&
               pthread_create(&th[started], NULL, peak_thread, &part[started + 1]) == 0)
            started++;
        part[0] = fma_rounds(ITERS);
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        double gflops = (double)(started + 1) * ITERS * 12 * 2 * LANES / (bench_now_ns() - t0);
        sink = part[0];
        if (started + 1 == threads && gflops > best)
            best = gflops;
    }
    (void)sink;
    return best;
}
