/*
 * blas.h - a second GEMM for the matmul, linear and linear_ep kernels:
 * cblas_sgemm of an installed OpenBLAS, loaded with dlopen the first time
 * it is asked for (libopenblas.so.0: Debian's libopenblas0-openmp, which
 * shares the library's libgomp), and a third: BLIS's (libblis.so.4,
 * Debian's libblis4-openmp).  Never a build or link dependency: where
 * it is not installed the candidate does not exist and every GEMM runs
 * oneDNN.  Which one a replay step runs is eager_kargs.impl (EAGER_GEMM_*,
 * chosen by replay_compile's tuning, replay/tune.c); eager calls run the
 * static rule (oneDNN).  Internal to eager/ and replay/.
 */
#ifndef TG_EAGER_BLAS_H
#define TG_EAGER_BLAS_H

#include <stdint.h>

/* The GEMM a step runs (eager_kargs.impl). */
enum {
    EAGER_GEMM_DEFAULT = 0, /* the static rule: oneDNN */
    EAGER_GEMM_ONEDNN = 1,
    EAGER_GEMM_BLAS = 2, /* OpenBLAS */
    EAGER_GEMM_BLIS = 3, /* BLIS */
};

/* cblas_sgemm's signature (row-major 101, no transpose 111, transpose 112). */
enum { EAGER_CBLAS_ROW = 101, EAGER_CBLAS_N = 111, EAGER_CBLAS_T = 112 };
typedef void (*eager_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                               const float *a, int lda, const float *b, int ldb, float beta,
                               float *c, int ldc);

/*
 * Nonzero when a BLAS sgemm is there (loaded now if not yet: thread-safe,
 * once per process; a failed dlopen is not retried).
 */
int eager_blas_available(void);
/*
 * Its name for the tuning key and messages: OpenBLAS's core ("Haswell",
 * "SkylakeX", "Prescott": it changes with OPENBLAS_CORETYPE, and so does
 * its speed), "none" when absent.  Static storage.
 */
const char *eager_blas_core(void);
/* "libopenblas.so.0: OpenBLAS 0.3.21 ..., core Haswell", or "none". */
const char *eager_blas_name(void);
/*
 * C = A B (+ beta C) in row-major: ta/tb nonzero read A/B transposed; on
 * nthreads threads (OpenBLAS's own count follows it, and the OpenMP count
 * of the calling thread is put back after).  Dimensions fit in int (the
 * caller checks: EAGER_BLAS_MAX_DIM).  Only when eager_blas_available().
 */
#define EAGER_BLAS_MAX_DIM 0x7fffffffLL
void eager_blas_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc, int nthreads);
/* The same through the library lib: EAGER_GEMM_BLAS (OpenBLAS) or
 * EAGER_GEMM_BLIS (only when eager_blis_available()). */
void eager_blas_sgemm_lib(int lib, int ta, int tb, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *c, int64_t ldc, int nthreads);
/*
 * BLIS (Debian's libblis4-openmp: libblis.so.4, its CBLAS), a third GEMM
 * candidate, loaded apart from OpenBLAS (both may be there): nonzero when
 * it is; its arch for the key ("haswell", "skx", "zen3": BLIS's own pick,
 * BLIS_ARCH_TYPE changes it), "none" when absent; its name for messages.
 */
int eager_blis_available(void);
/* TG_BLIS=off: BLIS is never loaded (the sanitizer test runs: with BLIS in
 * the process LeakSanitizer's exit scan crashes on a bogus dynamic-TLS
 * range, google/sanitizers#1322; ASAN_OPTIONS=intercept_tls_get_addr=0
 * avoids it too). */
const char *eager_blis_arch(void);
const char *eager_blis_name(void);
/* Test hook for BLIS, as eager_blas_test_hook for OpenBLAS. */
void eager_blis_test_hook(eager_sgemm_fn fn, const char *arch);
/*
 * Test hook: fn non-NULL replaces the loaded BLAS with fn, named core
 * (the candidate then exists on machines without OpenBLAS: a test's naive
 * sgemm exercises the kernel's BLAS path and the tuning); fn NULL and
 * core "off" hides the BLAS; fn NULL and core NULL goes back to the real
 * one.  Not thread-safe: call before any compile or run.
 */
void eager_blas_test_hook(eager_sgemm_fn fn, const char *core);

#endif
