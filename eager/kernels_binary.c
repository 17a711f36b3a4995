/*
 * kernels_binary.c - CPU kernels of the binary arithmetic ops with NumPy
 * broadcasting: add, sub, mul, div, maximum, minimum (f32, i64, i32), pow
 * and relu_grad (f32).  Both inputs have the output's dtype (infer allows
 * no implicit promotion).
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
 *   pow follows C's powf (pow(x, 0) = 1 even for NaN x, pow(-8, 1/3) =
 *     NaN, the sign of odd integer powers of negative x); normal finite
 *     bases with finite exponents take a vectorized path good to about
 *     0.5 ulp, the rest (zeros, subnormals, inf, NaN) go to powf; a scalar
 *     exponent of 1, 2 or -1 is exact (x, x*x, 1/x).
 *   relu_grad(dy, y) = y > 0 ? dy : 0: a NaN y gives 0, dy's sign of zero
 *     passes where y > 0.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

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
/* relu's gradient: a (dy) where b (relu's output) > 0; NaN b gives 0 */
BIN_FN(relu_grad_f32, float, float, b > 0.0f ? a : 0.0f)

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

/*
 * x^y for 2^-126 <= x < inf and finite y, as 2^(y log2 x) in double: log2
 * from x = 2^k m, m in [sqrt(1/2), sqrt 2), via 2 atanh((m-1)/(m+1))
 * (Taylor to s^15, error < 1e-13), then 2^t = 2^n e^(r ln2) with |r| <=
 * 1/2 (Taylor to degree 11, error < 1e-14).  The result is within 1e-12
 * before the one rounding to float, which also produces inf and the
 * subnormals; exact powers (2^3, 3^2) come out exact.
 */
static inline float pow_pos(float xf, float yf)
{
    uint32_t ix;
    memcpy(&ix, &xf, sizeof ix);
    ix -= 0x3f3504f3u; /* as in vm_logf */
    double k = (double)((int32_t)ix >> 23);
    uint32_t mb = (ix & 0x007fffffu) + 0x3f3504f3u;
    float mf;
    memcpy(&mf, &mb, sizeof mf);
    double m = mf, s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = 1.0 / 15;
    p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11;
    p = p * z + 1.0 / 9;
    p = p * z + 1.0 / 7;
    p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;
    p = p * z + 1.0;
    double t = (double)yf * (k + s * p * 2.8853900817779268); /* 2/ln2 */
    /* Clamp (the result is inf or 0 anyway) with masks: with ?: GCC
     * folds the clamped ends to constants, branches, and stops vectorizing. */
    uint64_t hi = 0u - (uint64_t)(t > 200.0), lo = 0u - (uint64_t)(t < -200.0);
    uint64_t tb;
    memcpy(&tb, &t, sizeof tb);
    tb = (tb & ~(hi | lo)) | (0x4069000000000000ull & hi) | (0xc069000000000000ull & lo);
    memcpy(&t, &tb, sizeof t);
    double big = t + 6755399441055744.0; /* 1.5 * 2^52: rounds t */
    double n = big - 6755399441055744.0;
    double r = (t - n) * 0.69314718055994531;
    double e = 1.0 / 39916800; /* 1/11! */
    e = e * r + 1.0 / 3628800;
    e = e * r + 1.0 / 362880;
    e = e * r + 1.0 / 40320;
    e = e * r + 1.0 / 5040;
    e = e * r + 1.0 / 720;
    e = e * r + 1.0 / 120;
    e = e * r + 1.0 / 24;
    e = e * r + 1.0 / 6;
    e = e * r + 0.5;
    e = e * r + 1.0;
    e = e * r + 1.0;
    uint64_t nb;
    memcpy(&nb, &big, sizeof nb);
    uint64_t sb = (uint64_t)((int64_t)(nb - 0x4338000000000000ull) + 1023) << 52;
    double scale;
    memcpy(&scale, &sb, sizeof scale);
    return (float)(e * scale);
}

/* The inputs pow_fast does not take; powf handles them (zeros,
 * subnormals, infinities, NaN). */
static inline int pow_special(float a, float b)
{
    float m = fabsf(a);
    return ((m >= FLT_MIN) & (m < INFINITY) & (fabsf(b) < INFINITY)) ^ 1;
}

/* Nonzero if v >= 0 is an integer: adding 2^23 rounds the fraction away
 * below 2^23, and every float from 2^23 up is an integer.  (truncf here
 * stops GCC 12 from vectorizing the loop.) */
static inline uint32_t is_int(float v)
{
    return v >= 8388608.0f || (v + 8388608.0f) - 8388608.0f == v;
}

/* x^y for the other inputs: |x|^y, negated for x < 0 and odd integer y,
 * NaN for x < 0 and non-integer y.  Bit masks rather than ?: keep GCC
 * from branching (see vm_sel_ in vmath.h). */
static inline float pow_fast(float a, float b)
{
    float r = pow_pos(fabsf(a), b);
    float m = fabsf(b);
    uint32_t integer = is_int(m), odd = integer & (is_int(0.5f * m) ^ 1u);
    uint32_t neg = a < 0.0f;
    uint32_t bad = 0u - (neg & (integer ^ 1u)); /* all ones: NaN */
    uint32_t bits;
    memcpy(&bits, &r, sizeof bits);
    bits ^= (neg & odd) << 31;
    bits = (bits & ~bad) | (0x7fc00000u & bad);
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* pow_fast over a block into t, whatever the inputs (special ones give
 * garbage that is fixed afterwards), then a count of the special inputs.
 * Kept as two loops: GCC 12 drops the vector code of the fused loop. */
#define POW_CASE(m)                                                        \
    case m:                                                                \
        _Pragma("omp simd") for (int64_t k = 0; k < len; k++)              \
            t[k] = pow_fast(x[(m & 1) ? k0 + k : 0], y[(m & 2) ? k0 + k : 0]); \
        _Pragma("omp simd reduction(+ : special)") for (int64_t k = 0; k < len; k++) \
            special += pow_special(x[(m & 1) ? k0 + k : 0], y[(m & 2) ? k0 + k : 0]); \
        break;

enum { POW_BLOCK = 1024 };

/*
 * Vectorized pow_fast over blocks, then powf for the rare special inputs
 * of a block.  Each block goes through a buffer on the stack so that the
 * fix-up still reads the inputs when the output overwrites one of them
 * (the replay planner runs elementwise ops in place).  A scalar exponent
 * of 1, 2 or -1 is done exactly as x, x*x, 1/x for every x.
 */
static void pow_f32(const void *const *in, void *out, int64_t n,
                    unsigned mode)
{
    const float *x = in[0], *y = in[1];
    float *o = out;
    if ((mode & 3u) == 1u && (y[0] == 1.0f || y[0] == 2.0f || y[0] == -1.0f)) {
        float b = y[0];
#pragma omp simd
        for (int64_t k = 0; k < n; k++)
            o[k] = b == 1.0f ? x[k] : b == 2.0f ? x[k] * x[k] : 1.0f / x[k];
        return;
    }
    int64_t sx = mode & 1u, sy = (mode >> 1) & 1u;
    float t[POW_BLOCK];
    for (int64_t k0 = 0; k0 < n; k0 += POW_BLOCK) {
        int64_t len = n - k0 < POW_BLOCK ? n - k0 : POW_BLOCK;
        int special = 0;
        switch (mode & 3u) {
            POW_CASE(3)
            POW_CASE(2)
            POW_CASE(1)
            POW_CASE(0)
        }
        for (int64_t k = 0; special && k < len; k++) {
            float a = x[(k0 + k) * sx], b = y[(k0 + k) * sy];
            if (pow_special(a, b))
                t[k] = powf(a, b);
        }
        memcpy(o + k0, t, (size_t)len * sizeof *t);
    }
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

tg_status eager_kernel_relu_grad(const eager_kargs *a)
{
    return run_binary(a, by_dtype(a, relu_grad_f32, NULL, NULL));
}
