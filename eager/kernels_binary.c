/*
 * kernels_binary.c - CPU kernels of the binary arithmetic ops with NumPy
 * broadcasting: add, sub, mul, div, maximum, minimum (f32, i64, i32) and
 * pow (f32).  Both inputs have the output's dtype (infer allows no
 * implicit promotion).
 *
 * Each op/dtype is one run function (see ew_bcast.h) with a vectorized
 * loop per mode: both inputs advance, or one of them is a single
 * repeated element (a scalar, or a broadcast dim at the inner end).
 *
 * Semantics:
 *   integer add, sub, mul wrap around (two's complement, computed in
 *     unsigned arithmetic: no undefined behaviour).
 *   integer div truncates toward zero (C, and PyTorch's
 *     rounding_mode="trunc"); INT_MIN / -1 wraps to INT_MIN; a zero
 *     divisor fails the op with TG_ERR_ARG "integer division by zero"
 *     (checked over the divisor's elements before anything is computed;
 *     an empty output divides nothing and succeeds).
 *   f32 div follows IEEE (x/0 = +-inf, 0/0 = NaN).
 *   maximum, minimum propagate NaN (either side), as PyTorch does.
 *   pow is C's powf (pow(x, 0) = 1 even for NaN x, pow(-8, 1/3) = NaN);
 *     a scalar exponent of 1, 2 or -1 takes an exact shortcut.
 */
#include <math.h>
#include <stdint.h>

#include "ew_bcast.h"

/*
 * Defines the run function <name>: out[k] = EXPR of a = x[k or 0] and
 * b = y[k or 0].  The mode switch hoists the broadcast choice out of the
 * loops; each case is a plain vectorizable loop.
 */
#define BIN_CASE(m, TI, TO, EXPR)                                          \
    case m:                                                                \
        _Pragma("omp simd") for (int64_t k = 0; k < n; k++)                \
        {                                                                  \
            TI a = x[(m & 1) ? k : 0], b = y[(m & 2) ? k : 0];             \
            o[k] = (EXPR);                                                 \
        }                                                                  \
        break;

#define BIN_FN(name, TI, TO, EXPR)                                         \
    static void name(const void *const *in, void *out, int64_t n,          \
                     unsigned mode)                                        \
    {                                                                      \
        const TI *x = in[0], *y = in[1];                                   \
        TO *o = out;                                                       \
        switch (mode & 3u) {                                               \
            BIN_CASE(3, TI, TO, EXPR)                                      \
            BIN_CASE(1, TI, TO, EXPR)                                      \
            BIN_CASE(2, TI, TO, EXPR)                                      \
            BIN_CASE(0, TI, TO, EXPR)                                      \
        }                                                                  \
    }

/* Wrapping integer arithmetic through the unsigned type. */
#define WRAP(T, U, a, op, b) ((T)((U)(a) op (U)(b)))

BIN_FN(add_f32, float, float, a + b)
BIN_FN(add_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, a, +, b))
BIN_FN(add_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, a, +, b))
BIN_FN(sub_f32, float, float, a - b)
BIN_FN(sub_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, a, -, b))
BIN_FN(sub_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, a, -, b))
BIN_FN(mul_f32, float, float, a * b)
BIN_FN(mul_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, a, *, b))
BIN_FN(mul_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, a, *, b))
BIN_FN(div_f32, float, float, a / b)
/* a != a: NaN on the left wins; NaN on the right falls through to b. */
BIN_FN(maximum_f32, float, float, (a > b || a != a) ? a : b)
BIN_FN(maximum_i64, int64_t, int64_t, a > b ? a : b)
BIN_FN(maximum_i32, int32_t, int32_t, a > b ? a : b)
BIN_FN(minimum_f32, float, float, (a < b || a != a) ? a : b)
BIN_FN(minimum_i64, int64_t, int64_t, a < b ? a : b)
BIN_FN(minimum_i32, int32_t, int32_t, a < b ? a : b)

/*
 * Integer division has no SIMD instruction, so these are plain loops (an
 * `omp simd` here would only ask for what cannot be done).  The zero
 * divisor was rejected before; b == -1 is routed to wrapping negation.
 */
#define IDIV_FN(name, T, U)                                                \
    static void name(const void *const *in, void *out, int64_t n,          \
                     unsigned mode)                                        \
    {                                                                      \
        const T *x = in[0], *y = in[1];                                    \
        T *o = out;                                                        \
        int64_t sx = mode & 1u, sy = (mode >> 1) & 1u;                     \
        for (int64_t k = 0; k < n; k++) {                                  \
            T a = x[k * sx], b = y[k * sy];                                \
            o[k] = b == -1 ? (T)(0u - (U)a) : a / b;                       \
        }                                                                  \
    }

IDIV_FN(div_i64, int64_t, uint64_t)
IDIV_FN(div_i32, int32_t, uint32_t)

/* powf is a libm call and does not vectorize; common scalar exponents
 * get exact shortcuts. */
static void pow_f32(const void *const *in, void *out, int64_t n,
                    unsigned mode)
{
    const float *x = in[0], *y = in[1];
    float *o = out;
    if ((mode & 3u) == 1u) {
        float b = y[0];
        if (b == 1.0f || b == 2.0f || b == -1.0f) {
#pragma omp simd
            for (int64_t k = 0; k < n; k++)
                o[k] = b == 1.0f ? x[k] : b == 2.0f ? x[k] * x[k] : 1.0f / x[k];
            return;
        }
    }
    int64_t sx = mode & 1u, sy = (mode >> 1) & 1u;
    for (int64_t k = 0; k < n; k++)
        o[k] = powf(x[k * sx], y[k * sy]);
}

/* Picks the run function for the output dtype; NULL if none. */
static ew_run_fn by_dtype(const eager_kargs *a, ew_run_fn f32, ew_run_fn i64,
                          ew_run_fn i32)
{
    switch (a->out_type->dtype) {
    case GRAPH_F32: return f32;
    case GRAPH_I64: return i64;
    case GRAPH_I32: return i32;
    default: return NULL;
    }
}

static tg_status run_binary(const eager_kargs *a, ew_run_fn fn)
{
    if (!fn)
        return eager_kernel_fail(a, TG_ERR_DTYPE, "dtype %s not supported",
                                 graph_dtype_name(a->out_type->dtype));
    eager_ew_broadcast(a, fn);
    return TG_OK;
}

/* Nonzero if any of the divisor's elements is 0. */
static int has_zero(const eager_kargs *a)
{
    int64_t n = graph_type_numel(&a->in_type[1]);
    int zero = 0;
    if (a->in_type[1].dtype == GRAPH_I64) {
        const int64_t *y = a->in[1];
#pragma omp simd reduction(| : zero)
        for (int64_t k = 0; k < n; k++)
            zero |= y[k] == 0;
    } else if (a->in_type[1].dtype == GRAPH_I32) {
        const int32_t *y = a->in[1];
#pragma omp simd reduction(| : zero)
        for (int64_t k = 0; k < n; k++)
            zero |= y[k] == 0;
    }
    return zero;
}

#define BIN_KERNEL(op)                                                     \
    tg_status eager_kernel_##op(const eager_kargs *a)                      \
    {                                                                      \
        return run_binary(a, by_dtype(a, op##_f32, op##_i64, op##_i32));   \
    }

BIN_KERNEL(add)
BIN_KERNEL(sub)
BIN_KERNEL(mul)
BIN_KERNEL(maximum)
BIN_KERNEL(minimum)

tg_status eager_kernel_div(const eager_kargs *a)
{
    if (a->out_type->dtype != GRAPH_F32 && graph_type_numel(a->out_type) > 0 &&
        has_zero(a))
        return eager_kernel_fail(a, TG_ERR_ARG, "integer division by zero");
    return run_binary(a, by_dtype(a, div_f32, div_i64, div_i32));
}

tg_status eager_kernel_pow(const eager_kargs *a)
{
    return run_binary(a, by_dtype(a, pow_f32, NULL, NULL));
}
