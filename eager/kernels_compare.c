/*
 * kernels_compare.c - CPU kernels of the comparisons eq (every dtype), lt,
 * gt (numeric), which give bool (one byte, 0 or 1), and of
 * where(cond, a, b), with NumPy broadcasting over all inputs.
 *
 * Comparisons follow IEEE: anything compared with NaN is false (so
 * eq(NaN, NaN) = 0) and -0 == +0.  Bools compare as 0/1 (any nonzero byte
 * is true).  where picks a where cond is nonzero, else b; it moves bits
 * and so serves every dtype by element size.
 */
#include <stdint.h>

#include "ew_bcast.h"

/* Same shape as kernels_binary.c's BIN_FN, with a bool output. */
#define CMP_CASE(m, T, EXPR)                                               \
    case m:                                                                \
        _Pragma("omp simd") for (int64_t k = 0; k < n; k++)                \
        {                                                                  \
            T a = x[(m & 1) ? k : 0], b = y[(m & 2) ? k : 0];              \
            o[k] = (uint8_t)(EXPR);                                        \
        }                                                                  \
        break;

#define CMP_FN(name, T, EXPR)                                              \
    static void name(const void *const *in, void *out, int64_t n,          \
                     unsigned mode)                                        \
    {                                                                      \
        const T *x = in[0], *y = in[1];                                    \
        uint8_t *o = out;                                                  \
        switch (mode & 3u) {                                               \
            CMP_CASE(3, T, EXPR)                                           \
            CMP_CASE(1, T, EXPR)                                           \
            CMP_CASE(2, T, EXPR)                                           \
            CMP_CASE(0, T, EXPR)                                           \
        }                                                                  \
    }

CMP_FN(eq_f32, float, a == b)
CMP_FN(eq_i64, int64_t, a == b)
CMP_FN(eq_i32, int32_t, a == b)
CMP_FN(eq_bool, uint8_t, (a != 0) == (b != 0))
CMP_FN(lt_f32, float, a < b)
CMP_FN(lt_i64, int64_t, a < b)
CMP_FN(lt_i32, int32_t, a < b)
CMP_FN(gt_f32, float, a > b)
CMP_FN(gt_i64, int64_t, a > b)
CMP_FN(gt_i32, int32_t, a > b)

static tg_status run_compare(const eager_kargs *a, ew_run_fn f32,
                             ew_run_fn i64, ew_run_fn i32, ew_run_fn b8)
{
    ew_run_fn fn = NULL;
    switch (a->in_type[0].dtype) {
    case GRAPH_F32: fn = f32; break;
    case GRAPH_I64: fn = i64; break;
    case GRAPH_I32: fn = i32; break;
    case GRAPH_BOOL: fn = b8; break;
    default: break;
    }
    if (!fn)
        return eager_kernel_fail(a, TG_ERR_DTYPE, "dtype %s not supported",
                                 graph_dtype_name(a->in_type[0].dtype));
    eager_ew_broadcast(a, fn);
    return TG_OK;
}

tg_status eager_kernel_eq(const eager_kargs *a)
{
    return run_compare(a, eq_f32, eq_i64, eq_i32, eq_bool);
}

tg_status eager_kernel_lt(const eager_kargs *a)
{
    return run_compare(a, lt_f32, lt_i64, lt_i32, NULL);
}

tg_status eager_kernel_gt(const eager_kargs *a)
{
    return run_compare(a, gt_f32, gt_i64, gt_i32, NULL);
}

/* ---- where ---- */

/* Bit 0 of the mode is cond, bit 1 is a, bit 2 is b.  Both values are
 * loaded unconditionally: a load inside ?: would need a masked load,
 * which GCC does not vectorize for every element size. */
#define WHERE_CASE(m, T)                                                   \
    case m:                                                                \
        _Pragma("omp simd") for (int64_t k = 0; k < n; k++)                \
        {                                                                  \
            T va = x[(m & 2) ? k : 0], vb = y[(m & 4) ? k : 0];            \
            o[k] = c[(m & 1) ? k : 0] ? va : vb;                           \
        }                                                                  \
        break;

#define WHERE_FN(name, T)                                                  \
    static void name(const void *const *in, void *out, int64_t n,          \
                     unsigned mode)                                        \
    {                                                                      \
        const uint8_t *c = in[0];                                          \
        const T *x = in[1], *y = in[2];                                    \
        T *o = out;                                                        \
        switch (mode & 7u) {                                               \
            WHERE_CASE(7, T)                                                \
            WHERE_CASE(6, T)                                                \
            WHERE_CASE(5, T)                                                \
            WHERE_CASE(4, T)                                                \
            WHERE_CASE(3, T)                                                \
            WHERE_CASE(2, T)                                                \
            WHERE_CASE(1, T)                                                \
            WHERE_CASE(0, T)                                                \
        }                                                                  \
    }

WHERE_FN(where_8, uint8_t)
WHERE_FN(where_32, uint32_t)
WHERE_FN(where_64, uint64_t)

tg_status eager_kernel_where(const eager_kargs *a)
{
    ew_run_fn fn;
    switch (graph_dtype_size(a->out_type->dtype)) {
    case 1: fn = where_8; break;
    case 4: fn = where_32; break;
    case 8: fn = where_64; break;
    default:
        return eager_kernel_fail(a, TG_ERR_DTYPE, "dtype %s not supported",
                                 graph_dtype_name(a->out_type->dtype));
    }
    eager_ew_broadcast(a, fn);
    return TG_OK;
}
