/*
 * blas.c - OpenBLAS's cblas_sgemm through dlopen (see blas.h).  Compiled
 * once, outside the per-ISA kernel sets: one handle and one thread count
 * per process, whichever kernel set calls it.
 *
 * Threads.  Debian's libopenblas0-openmp runs its threads on OpenMP and,
 * at every call, takes the calling thread's omp_get_max_threads() as its
 * count (num_cpu_avail); openblas_set_num_threads also sets that count
 * (omp_set_num_threads).  So a call sets both to the kernel's nthreads,
 * as eager_dnnl_set_threads does for oneDNN, and puts the caller's OpenMP
 * count back after; a pthreads OpenBLAS follows openblas_set_num_threads.
 * The OpenBLAS count is process-wide: it is set only when it changes.
 */
#include "blas.h"

#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static eager_sgemm_fn g_sgemm;
static void (*g_set_threads)(int);
static char g_core[64] = "none";
static char g_name[320] = "none";
static atomic_int g_threads; /* last count given to g_set_threads (0: none yet) */

/* A test hook's choice, in place of the loaded library (see blas.h). */
static int g_hooked; /* 0: the real one; 1: hook fn; 2: hidden */
static eager_sgemm_fn g_hook_fn;
static char g_hook_core[64];

static void blas_open(void)
{
    static const char *const libs[] = {"libopenblas.so.0", "libopenblas.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !g_sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        eager_sgemm_fn f = (eager_sgemm_fn)dlsym(h, "cblas_sgemm");
        if (!f) {
            dlclose(h);
            continue;
        }
        g_set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        char *(*config)(void) = (char *(*)(void))dlsym(h, "openblas_get_config");
        char *(*core)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
        const char *c = core ? core() : NULL;
        snprintf(g_core, sizeof g_core, "%s", c && c[0] ? c : "unknown");
        /* the key keeps it whole: one word of [A-Za-z0-9_] */
        for (char *q = g_core; *q; q++)
            if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                  (*q >= '0' && *q <= '9')))
                *q = '_';
        snprintf(g_name, sizeof g_name, "%s%s%s, core %s", libs[i], config ? ": " : "",
                 config ? config() : "", g_core);
        g_sgemm = f; /* h stays open for the process */
    }
}

static eager_sgemm_fn sgemm_now(void)
{
    if (g_hooked)
        return g_hook_fn;
    pthread_once(&g_once, blas_open);
    return g_sgemm;
}

int eager_blas_available(void) { return sgemm_now() != NULL; }

const char *eager_blas_core(void)
{
    if (g_hooked)
        return g_hook_fn ? g_hook_core : "none";
    pthread_once(&g_once, blas_open);
    return g_core;
}

const char *eager_blas_name(void)
{
    if (g_hooked)
        return g_hook_fn ? g_hook_core : "none";
    pthread_once(&g_once, blas_open);
    return g_name;
}

void eager_blas_test_hook(eager_sgemm_fn fn, const char *core)
{
    g_hooked = fn ? 1 : core ? 2 : 0;
    g_hook_fn = fn;
    snprintf(g_hook_core, sizeof g_hook_core, "%s", core ? core : "");
}

void eager_blas_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc, int nthreads)
{
    eager_sgemm_fn f = sgemm_now();
    if (nthreads < 1)
        nthreads = 1;
    int old = omp_get_max_threads();
    if (!g_hooked && g_set_threads && atomic_exchange(&g_threads, nthreads) != nthreads)
        g_set_threads(nthreads);
    if (omp_get_max_threads() != nthreads)
        omp_set_num_threads(nthreads);
    f(EAGER_CBLAS_ROW, ta ? EAGER_CBLAS_T : EAGER_CBLAS_N, tb ? EAGER_CBLAS_T : EAGER_CBLAS_N,
      (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    if (omp_get_max_threads() != old)
        omp_set_num_threads(old);
}
