/*
 * kernels_unary.c - CPU kernels of the unary elementwise ops.
 *
 * Each op is one contiguous loop the compiler vectorizes (`omp simd`:
 * the replay planner may run these in place, out == in, which is safe
 * for a loop without loop-carried dependences but rules out `restrict`).
 * Transcendentals come from vmath.h, never libm.  Large tensors are split
 * over threads by eager_ew_parallel.
 *
 * Semantics worth knowing:
 *   neg, abs on integers wrap: neg(INT_MIN) = abs(INT_MIN) = INT_MIN
 *     (computed in unsigned arithmetic, so no undefined behaviour).
 *   abs(-0) = +0, abs(NaN) = NaN; neg flips the sign of zeros and NaNs.
 *   sign(x) = -1, 0 or +1 (integers too); sign(-0) = +0 and
 *     sign(NaN) = NaN, as ONNX Runtime 1.30 computes Sign.
 *   floor, ceil, round are exact (vm_round_loop: one vrndscaleps per
 *     vector); round is half to even (ONNX Round, numpy.round):
 *     round(2.5) = 2, round(-0.5) = -0; NaN, +-inf and +-0 pass.
 *   relu(x) = x > 0 ? x : +0, except relu(NaN) = NaN.
 *   leaky_relu(x) = x < 0 ? alpha x : x (NaN passes, -0 stays -0).
 *   clip(x) = min(max(x, min), max); NaN passes; min > max gives max.
 *   sqrt(x < 0) = NaN, rsqrt(+-0) = +-inf, reciprocal(+-0) = +-inf.
 *   gelu is the exact erf form; gelu(-inf) = NaN, the formula's value
 *     (-inf/2 * 0), as PyTorch, ONNX's Gelu function and oneDNN's gelu_erf
 *     epilogue; silu(-inf) = NaN likewise (PyTorch's x * sigmoid(x), oneDNN's
 *     swish epilogue).
 */
#include <math.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "ew_bcast.h"
#include "vmath.h"

/* One contiguous stretch: y[0..n) = op(x[0..n)). */
typedef void (*unary_fn)(const void *x, void *y, int64_t n,
                         const void *attrs);

typedef struct unary_job {
    unary_fn fn;
    const char *x;
    char *y;
    size_t esize;
    const void *attrs;
} unary_job;

static void unary_range(int64_t start, int64_t end, void *ctx)
{
    const unary_job *j = ctx;
    size_t off = (size_t)start * j->esize;
    j->fn(j->x + off, j->y + off, end - start, j->attrs);
}

/* Runs fn over the kernel's one input; fn == NULL means the dtype has no
 * kernel (infer lets through only dtypes that do). */
static tg_status run_unary(const eager_kargs *a, unary_fn fn)
{
    if (!fn)
        return eager_kernel_fail(a, TG_ERR_DTYPE, "dtype %s not supported",
                                 graph_dtype_name(a->in_type[0].dtype));
    unary_job j = {fn, a->in[0], a->out[0],
                   graph_dtype_size(a->in_type[0].dtype), a->attrs};
    eager_ew_parallel(graph_type_numel(a->out_type), a->nthreads,
                      unary_range, &j);
    return TG_OK;
}

/* Defines static void <name>(x, y, n, attrs) computing y[i] = EXPR of v. */
#define UNARY_FN(name, T, EXPR)                                            \
    static void name(const void *xv, void *yv, int64_t n, const void *attrs) \
    {                                                                      \
        const T *x = xv;                                                   \
        T *y = yv;                                                         \
        (void)attrs;                                                       \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                \
        {                                                                  \
            T v = x[i];                                                    \
            y[i] = (EXPR);                                                 \
        }                                                                  \
    }

/* Picks the loop for the input dtype. */
static unary_fn by_dtype(const eager_kargs *a, unary_fn f32, unary_fn i64,
                         unary_fn i32)
{
    switch (a->in_type[0].dtype) {
    case GRAPH_F32: return f32;
    case GRAPH_I64: return i64;
    case GRAPH_I32: return i32;
    default: return NULL;
    }
}

/* ---- neg, abs, sign: all numeric dtypes ---- */

UNARY_FN(neg_f32, float, -v)
UNARY_FN(neg_i64, int64_t, (int64_t)(0u - (uint64_t)v))
UNARY_FN(neg_i32, int32_t, (int32_t)(0u - (uint32_t)v))
UNARY_FN(abs_f32, float, fabsf(v))
UNARY_FN(abs_i64, int64_t, v < 0 ? (int64_t)(0u - (uint64_t)v) : v)
UNARY_FN(abs_i32, int32_t, v < 0 ? (int32_t)(0u - (uint32_t)v) : v)
UNARY_FN(sign_f32, float, vm_signf(v))
UNARY_FN(sign_i64, int64_t, (int64_t)(v > 0) - (int64_t)(v < 0))
UNARY_FN(sign_i32, int32_t, (int32_t)(v > 0) - (int32_t)(v < 0))

tg_status eager_kernel_neg(const eager_kargs *a)
{
    return run_unary(a, by_dtype(a, neg_f32, neg_i64, neg_i32));
}

tg_status eager_kernel_abs(const eager_kargs *a)
{
    return run_unary(a, by_dtype(a, abs_f32, abs_i64, abs_i32));
}

tg_status eager_kernel_sign(const eager_kargs *a)
{
    return run_unary(a, by_dtype(a, sign_f32, sign_i64, sign_i32));
}

/* ---- f32 only ---- */

static void sqrt_f32(const void *x, void *y, int64_t n, const void *attrs)
{
    (void)attrs;
    vm_sqrt_loop(x, y, n, 0);
}

static void rsqrt_f32(const void *x, void *y, int64_t n, const void *attrs)
{
    (void)attrs;
    vm_sqrt_loop(x, y, n, 1);
}

static void floor_f32(const void *x, void *y, int64_t n, const void *attrs)
{
    (void)attrs;
    vm_round_loop(x, y, n, VM_FLOOR);
}

static void ceil_f32(const void *x, void *y, int64_t n, const void *attrs)
{
    (void)attrs;
    vm_round_loop(x, y, n, VM_CEIL);
}

static void round_f32(const void *x, void *y, int64_t n, const void *attrs)
{
    (void)attrs;
    vm_round_loop(x, y, n, VM_RINT);
}

static void leaky_relu_f32(const void *xv, void *yv, int64_t n,
                           const void *attrs)
{
    const float *x = xv;
    float *y = yv;
    const float alpha = ((const graph_leaky_relu_attrs *)attrs)->alpha;
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] < 0.0f ? alpha * x[i] : x[i];
}

static void clip_f32(const void *xv, void *yv, int64_t n, const void *attrs)
{
    const float *x = xv;
    float *y = yv;
    const graph_clip_attrs *at = attrs;
    const float lo = at->min, hi = at->max;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] < lo ? lo : x[i]; /* comparisons let NaN through */
        y[i] = v > hi ? hi : v;
    }
}

/* Kernels of the ops that take f32 only. */
#define F32_KERNEL(op)                                                     \
    tg_status eager_kernel_##op(const eager_kargs *a)                      \
    {                                                                      \
        return run_unary(a, by_dtype(a, op##_f32, NULL, NULL));            \
    }

F32_KERNEL(sqrt)
F32_KERNEL(rsqrt)
F32_KERNEL(floor)
F32_KERNEL(ceil)
F32_KERNEL(round)
F32_KERNEL(leaky_relu)
F32_KERNEL(clip)

/* The ops eager/ew_cpu.def marks GEN: the loop of their scalar form
 * (exp, log, reciprocal, relu, sigmoid, tanh, gelu, silu, erf, ...). */
#define EAGER_GEN(OP, S)                                                   \
    static void OP##_f32(const void *xv, void *yv, int64_t n, const void *attrs) \
    {                                                                      \
        const float *xs = xv;                                              \
        float *ys = yv;                                                    \
        (void)attrs;                                                       \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                \
        {                                                                  \
            float x = xs[i];                                               \
            ys[i] = (S);                                                   \
        }                                                                  \
    }                                                                      \
    F32_KERNEL(OP)
#define EAGER_OWN(OP, S)
#define EWC(OP, N, COST, S, TILE, INL, VEC, EAGER) EAGER_##EAGER(OP, S)
#include "ew_cpu_rows.h"
#undef EWC
