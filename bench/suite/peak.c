/*
 * peak.c - this machine's fp32 multiply-add throughput, measured: the
 * ceiling the compute-bound workloads (mlp, resblock, encoder) are held
 * against in the suite's output ("fma_peak_gflops" of their records,
 * measured as each record starts: a shared machine's throughput varies
 * with what else runs on it).
 *
 * Each thread (plain pthreads, so that an OpenMP team the record makes
 * later starts clean) runs 12 independent chains of vector fused multiply-adds
 * at the instruction set in use (suite_peak_isa: AVX-512, AVX2 + FMA, or
 * scalar fmaf), enough to cover the latency of two FMA pipes; nothing else is in the
 * loop, so what it reaches is what the core can retire.  The best of 5
 * runs of about 10 ms counts (other work on a shared machine only ever
 * slows a run down).  A vendor's figure can differ from this one: Zen 4,
 * for one, runs a 512-bit FMA as two 256-bit halves, so its peak is half
 * of what its AVX-512 support suggests.
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "../bench_util.h"
#include "suite.h"

/*
 * fma_rounds_<isa>(iters): iters rounds of 12 FMAs on 12 chains; returns
 * a value that depends on all of them (so that none is optimized away).
 * One per instruction set, each compiled for its own (peak_rounds.inc);
 * the widest this CPU runs is measured, whatever the build targets.
 */
#pragma GCC push_options
#pragma GCC target("avx512f")
typedef __m512 vec512;
#define PEAK_FN fma_rounds_avx512
#define vec vec512
#define SPLAT(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SUM(v) _mm512_reduce_add_ps(v)
#include "peak_rounds.inc"
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
typedef __m256 vec256;
static float sum256(__m256 v)
{
    float f[8], s = 0;
    _mm256_storeu_ps(f, v);
    for (int i = 0; i < 8; i++)
        s += f[i];
    return s;
}
#define PEAK_FN fma_rounds_avx2
#define vec vec256
#define SPLAT(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SUM(v) sum256(v)
#include "peak_rounds.inc"
#pragma GCC pop_options

#define PEAK_FN fma_rounds_scalar
#define vec float
#define SPLAT(x) (x)
#define FMA(a, b, c) fmaf(a, b, c)
#define SUM(v) (v)
#include "peak_rounds.inc"

typedef float (*fma_fn)(int64_t iters);

enum { ITERS = 3000000 }; /* 36M vector FMAs a thread: ~10 ms */

/* The instruction set the matrix products run at: oneDNN's (they are
 * its kernels), capped at AVX2 when tracegraph's kernel set is avx2
 * (TG_CPU=avx2 with ONEDNN_MAX_CPU_ISA=AVX2 is the AVX2 path of issue 30),
 * and at what this CPU supports. */
const char *suite_peak_isa(void)
{
    dnnl_cpu_isa_t d = dnnl_get_effective_cpu_isa();
    int dnnl512 = ((unsigned)d & (unsigned)dnnl_cpu_isa_avx512_core) ==
                  (unsigned)dnnl_cpu_isa_avx512_core;
    int dnnl256 = ((unsigned)d & (unsigned)dnnl_cpu_isa_avx2) == (unsigned)dnnl_cpu_isa_avx2;
    int cap256 = strcmp(eager_cpu_level(), "avx2") == 0;
    int has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (dnnl512 && !cap256 && __builtin_cpu_supports("avx512f"))
        return "avx512";
    if ((dnnl512 || dnnl256) && has256)
        return "avx2";
    return "scalar";
}

typedef struct peak_job {
    fma_fn f;
    float r;
} peak_job;

static void *peak_thread(void *arg)
{
    peak_job *j = arg;
    j->r = j->f(ITERS);
    return NULL;
}

double suite_fma_peak_gflops_at(const char *isa, int threads)
{
    double best = 0;
    volatile float sink;
    peak_job part[SUITE_MAX_THREADS];
    pthread_t th[SUITE_MAX_THREADS];
    fma_fn fma_rounds = fma_rounds_scalar;
    int lanes = 1;
    if (threads < 1 || threads > SUITE_MAX_THREADS || !isa)
        return 0;
    if (!strcmp(isa, "avx512") && __builtin_cpu_supports("avx512f"))
        fma_rounds = fma_rounds_avx512, lanes = 16;
    else if (!strcmp(isa, "avx2") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma"))
        fma_rounds = fma_rounds_avx2, lanes = 8;
    else if (strcmp(isa, "scalar"))
        return 0;
    for (int run = 0; run < 5; run++) {
        double t0 = bench_now_ns();
        int started = 0;
        for (int t = 0; t < threads; t++)
            part[t].f = fma_rounds;
        while (started < threads - 1 &&
               pthread_create(&th[started], NULL, peak_thread, &part[started + 1]) == 0)
            started++;
        float r0 = fma_rounds(ITERS);
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        double gflops = (double)(started + 1) * ITERS * 12 * 2 * lanes / (bench_now_ns() - t0);
        sink = r0;
        if (started + 1 == threads && gflops > best)
            best = gflops;
    }
    (void)sink;
    return best;
}

double suite_fma_peak_gflops(int threads)
{
    return suite_fma_peak_gflops_at(suite_peak_isa(), threads);
}
