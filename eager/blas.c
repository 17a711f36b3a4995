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

/*
 * One library: its sgemm, how to set its thread count (OpenBLAS takes an
 * int, BLIS a long), its one-word core or arch and its description; and a
 * test hook's choice in its place (see blas.h).
 */
typedef struct blas_lib {
    pthread_once_t once;
    void (*open)(void);
    eager_sgemm_fn sgemm;
    void (*set_threads_int)(int);
    void (*set_threads_long)(long);
    atomic_int threads; /* last count given to set_threads (0: none yet) */
    char word[64];      /* OpenBLAS's core, BLIS's arch */
    char name[320];
    int hooked; /* 0: the real one; 1: hook fn; 2: hidden */
    eager_sgemm_fn hook_fn;
    char hook_word[64];
} blas_lib;

static void blas_open(void);
static void blis_open(void);
static blas_lib g_blas = {PTHREAD_ONCE_INIT, blas_open, .word = "none", .name = "none"};
static blas_lib g_blis = {PTHREAD_ONCE_INIT, blis_open, .word = "none", .name = "none"};

/* The key keeps a core or arch whole: one word of [A-Za-z0-9_]. */
static void one_word(char *q)
{
    for (; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
            *q = '_';
}

static void blis_open(void)
{
    static const char *const libs[] = {"libblis.so.4", "libblis.so"};
    const char *off = getenv("TG_BLIS");
    if (off && strcmp(off, "off") == 0) /* not loaded (sanitizer runs: see blas.h) */
        return;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !g_blis.sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        eager_sgemm_fn f = (eager_sgemm_fn)dlsym(h, "cblas_sgemm");
        const char *(*ver)(void) = (const char *(*)(void))dlsym(h, "bli_info_get_version_str");
        if (!f || !ver) { /* not BLIS, or built without its CBLAS */
            dlclose(h);
            continue;
        }
        g_blis.set_threads_long = (void (*)(long))dlsym(h, "bli_thread_set_num_threads");
        int (*arch)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
        const char *(*aname)(int) = (const char *(*)(int))dlsym(h, "bli_arch_string");
        const char *an = arch && aname ? aname(arch()) : NULL;
        snprintf(g_blis.word, sizeof g_blis.word, "%s", an && an[0] ? an : "unknown");
        one_word(g_blis.word);
        snprintf(g_blis.name, sizeof g_blis.name, "%s: BLIS %s, arch %s", libs[i], ver(),
                 g_blis.word);
        g_blis.sgemm = f; /* h stays open for the process */
    }
}

static void blas_open(void)
{
    static const char *const libs[] = {"libopenblas.so.0", "libopenblas.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !g_blas.sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        eager_sgemm_fn f = (eager_sgemm_fn)dlsym(h, "cblas_sgemm");
        if (!f) {
            dlclose(h);
            continue;
        }
        g_blas.set_threads_int = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        char *(*config)(void) = (char *(*)(void))dlsym(h, "openblas_get_config");
        char *(*core)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
        const char *c = core ? core() : NULL;
        snprintf(g_blas.word, sizeof g_blas.word, "%s", c && c[0] ? c : "unknown");
        one_word(g_blas.word);
        snprintf(g_blas.name, sizeof g_blas.name, "%s%s%s, core %s", libs[i], config ? ": " : "",
                 config ? config() : "", g_blas.word);
        g_blas.sgemm = f; /* h stays open for the process */
    }
}

static eager_sgemm_fn lib_now(blas_lib *l)
{
    if (l->hooked)
        return l->hook_fn;
    pthread_once(&l->once, l->open);
    return l->sgemm;
}

/* Its core / arch (which = 0) or description (1); "none" when hidden. */
static const char *lib_text(blas_lib *l, int which)
{
    if (l->hooked)
        return l->hook_fn ? l->hook_word : "none";
    pthread_once(&l->once, l->open);
    return which ? l->name : l->word;
}

static void lib_hook(blas_lib *l, eager_sgemm_fn fn, const char *word)
{
    l->hooked = fn ? 1 : word ? 2 : 0;
    l->hook_fn = fn;
    snprintf(l->hook_word, sizeof l->hook_word, "%s", word ? word : "");
}

int eager_blis_available(void) { return lib_now(&g_blis) != NULL; }
const char *eager_blis_arch(void) { return lib_text(&g_blis, 0); }
const char *eager_blis_name(void) { return lib_text(&g_blis, 1); }
void eager_blis_test_hook(eager_sgemm_fn fn, const char *arch) { lib_hook(&g_blis, fn, arch); }

int eager_blas_available(void) { return lib_now(&g_blas) != NULL; }
const char *eager_blas_core(void) { return lib_text(&g_blas, 0); }
const char *eager_blas_name(void) { return lib_text(&g_blas, 1); }
void eager_blas_test_hook(eager_sgemm_fn fn, const char *core) { lib_hook(&g_blas, fn, core); }

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
    blas_lib *l = lib == EAGER_GEMM_BLIS ? &g_blis : &g_blas;
    eager_sgemm_fn f = lib_now(l);
    if (nthreads < 1)
        nthreads = 1;
    int old = omp_get_max_threads();
    if (!l->hooked && (l->set_threads_int || l->set_threads_long) &&
        atomic_exchange(&l->threads, nthreads) != nthreads) {
        if (l->set_threads_int)
            l->set_threads_int(nthreads);
        else
            l->set_threads_long(nthreads);
    }
    if (omp_get_max_threads() != nthreads)
        omp_set_num_threads(nthreads);
    f(EAGER_CBLAS_ROW, ta ? EAGER_CBLAS_T : EAGER_CBLAS_N, tb ? EAGER_CBLAS_T : EAGER_CBLAS_N,
      (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    if (omp_get_max_threads() != old)
        omp_set_num_threads(old);
}
