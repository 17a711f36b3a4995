/*
 * check.h - a small test helper: CHECK reports a failure with its line and
 * carries on; check_done() prints "N passed, N failed" and gives the exit
 * code.  Also leak accounting for eager tensors.
 */
#ifndef TG_TESTS_CHECK_H
#define TG_TESTS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "eager/eager.h"

void check_report(int ok, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, "%s", #cond)
#define CHECK_MSG(cond, ...) check_report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* |a - b| <= tol * (1 + |b|), NaN equal only to NaN. */
#define CHECK_NEAR(a, b, tol) check_near((a), (b), (tol), __FILE__, __LINE__, #a)
/* Compares n floats; reports the first mismatch and its index. */
#define CHECK_FLOATS(got, want, n, tol) \
    check_floats((got), (want), (n), (tol), __FILE__, __LINE__, #got)
/* The current eager error contains substr (and there is an error). */
#define CHECK_ERROR(substr) check_error((substr), __FILE__, __LINE__)

void check_near(double a, double b, double tol, const char *file, int line,
                const char *what);
void check_floats(const float *got, const float *want, int64_t n, double tol,
                  const char *file, int line, const char *what);
void check_error(const char *substr, const char *file, int line);

/*
 * |got - want|, but infinite where one is NaN and the other not, or where
 * an infinity differs (0 where both are NaN or the same infinity): a max
 * over it (fmax drops NaN) cannot pass a NaN.
 */
double check_abs_diff(double got, double want);

/*
 * Normalized error of got vs want: max |got - want| / max(max |want|, 1e-6)
 * (check_abs_diff: a NaN or infinity that does not match makes it
 * infinite), the measure the optimizer tests use (fused kernels are not
 * bit-exact).
 */
double check_normalized_error(const float *got, const float *want, int64_t n);

/*
 * The pending error contains want and names this test's file, line and
 * function (the user's call site); clears it.
 */
void check_fail_at(const char *want, const char *file, int line, const char *func);

/* expr (one call, on one line) must fail with a message containing want. */
#define CHECK_FAILS(expr, want)                                            \
    do {                                                                   \
        int line_ = __LINE__;                                              \
        CHECK_MSG((expr) == NULL, "%s should fail", #expr);                \
        check_fail_at((want), __FILE__, line_, __func__);                  \
    } while (0)

/* The same for calls that return a count (-1 on error), like split. */
#define CHECK_FAILS_N(expr, want)                                          \
    do {                                                                   \
        int line_ = __LINE__;                                              \
        CHECK_MSG((expr) == -1, "%s should fail", #expr);                  \
        check_fail_at((want), __FILE__, line_, __func__);                  \
    } while (0)


/*
 * The OpenCL tests' preamble: 1 when an OpenCL device exists (*dev, if
 * given, is the first), else prints "SKIP: <why>" and returns 0; the test
 * then exits CHECK_SKIP, which ctest reports as skipped (SKIP_RETURN_CODE
 * in CMakeLists.txt), never as passed.
 */
struct replay_device_info;
int check_opencl_device(struct replay_device_info *dev);
#define CHECK_SKIP 77

/* Prints the summary line; returns the process exit code. */
int check_done(void);

/* Naive references shared by tests: deterministic data. */
void check_fill(float *p, int64_t n, uint64_t seed, float lo, float hi);
/* An f32 tensor of that shape filled as check_fill (NULL with the eager
 * error on failure). */
eager_tensor *check_rand_tensor(graph_ints shape, uint64_t seed, float lo, float hi);

#endif
