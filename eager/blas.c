/*
 * blas.c - OpenBLAS's and BLIS's cblas_sgemm through dlopen (see blas.h).
 * Compiled once, outside the per-ISA kernel sets: one handle and one
 * thread count per library and process, whichever kernel set calls it.
 * Both are opened RTLD_LOCAL, so each one's cblas_sgemm is its own.
 *
 * Threads.  Debian's libopenblas0-openmp runs its threads on OpenMP and,
 * at every call, takes the calling thread's omp_get_max_threads() as its
 * count (num_cpu_avail); openblas_set_num_threads also sets that count
 * (omp_set_num_threads).  So a call sets both to the kernel's nthreads,
 * as eager_dnnl_set_threads does for oneDNN, and puts the caller's OpenMP
 * count back after; a pthreads OpenBLAS follows openblas_set_num_threads.
 * The OpenBLAS count is process-wide: it is set only when it changes.
 * Debian's BLIS (libblis4-openmp) takes its count from
 * bli_thread_set_num_threads (process-wide too, set the same way).
 */
#include "blas.h"

#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
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

/* BLIS (libblis.so.4), apart: its own handle, arch and thread count. */
static pthread_once_t b_once = PTHREAD_ONCE_INIT;
static eager_sgemm_fn b_sgemm;
static void (*b_set_threads)(long);
static char b_arch[64] = "none";
static char b_name[320] = "none";
static atomic_int b_threads;
static int b_hooked;
static eager_sgemm_fn b_hook_fn;
static char b_hook_arch[64];

static void blis_open(void)
{
    static const char *const libs[] = {"libblis.so.4", "libblis.so"};
    const char *off = getenv("TG_BLIS");
    if (off && strcmp(off, "off") == 0) /* not loaded (sanitizer runs: see blas.h) */
        return;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !b_sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        eager_sgemm_fn f = (eager_sgemm_fn)dlsym(h, "cblas_sgemm");
        const char *(*ver)(void) = (const char *(*)(void))dlsym(h, "bli_info_get_version_str");
        if (!f || !ver) { /* not BLIS, or built without its CBLAS */
            dlclose(h);
            continue;
        }
        b_set_threads = (void (*)(long))dlsym(h, "bli_thread_set_num_threads");
        int (*arch)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
        const char *(*aname)(int) = (const char *(*)(int))dlsym(h, "bli_arch_string");
        const char *an = arch && aname ? aname(arch()) : NULL;
        snprintf(b_arch, sizeof b_arch, "%s", an && an[0] ? an : "unknown");
        for (char *q = b_arch; *q; q++) /* one word, as the key wants */
            if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                  (*q >= '0' && *q <= '9')))
                *q = '_';
        snprintf(b_name, sizeof b_name, "%s: BLIS %s, arch %s", libs[i], ver(), b_arch);
        b_sgemm = f; /* h stays open for the process */
    }
}

static eager_sgemm_fn blis_now(void)
{
    if (b_hooked)
        return b_hook_fn;
    pthread_once(&b_once, blis_open);
    return b_sgemm;
}

int eager_blis_available(void) { return blis_now() != NULL; }

const char *eager_blis_arch(void)
{
    if (b_hooked)
        return b_hook_fn ? b_hook_arch : "none";
    pthread_once(&b_once, blis_open);
    return b_arch;
}

const char *eager_blis_name(void)
{
    if (b_hooked)
        return b_hook_fn ? b_hook_arch : "none";
    pthread_once(&b_once, blis_open);
    return b_name;
}

void eager_blis_test_hook(eager_sgemm_fn fn, const char *arch)
{
    b_hooked = fn ? 1 : arch ? 2 : 0;
    b_hook_fn = fn;
    snprintf(b_hook_arch, sizeof b_hook_arch, "%s", arch ? arch : "");
}

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
    eager_blas_sgemm_lib(EAGER_GEMM_BLAS, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc,
                         nthreads);
}

void eager_blas_sgemm_lib(int lib, int ta, int tb, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *c, int64_t ldc, int nthreads)
{
    int blis = lib == EAGER_GEMM_BLIS;
    eager_sgemm_fn f = blis ? blis_now() : sgemm_now();
    if (nthreads < 1)
        nthreads = 1;
    int old = omp_get_max_threads();
    if (blis) {
        if (!b_hooked && b_set_threads && atomic_exchange(&b_threads, nthreads) != nthreads)
            b_set_threads(nthreads);
    } else if (!g_hooked && g_set_threads && atomic_exchange(&g_threads, nthreads) != nthreads) {
        g_set_threads(nthreads);
    }
    if (omp_get_max_threads() != nthreads)
        omp_set_num_threads(nthreads);
    f(EAGER_CBLAS_ROW, ta ? EAGER_CBLAS_T : EAGER_CBLAS_N, tb ? EAGER_CBLAS_T : EAGER_CBLAS_N,
      (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    if (omp_get_max_threads() != old)
        omp_set_num_threads(old);
}
