/*
 * kernels_cast.c - the cast kernel: every pair of f32, i64, i32, bool.
 *
 * Conversions are defined for every input, with no undefined behaviour:
 *   f32 -> i32/i64: truncates toward zero; NaN -> 0; values beyond the
 *     target's range saturate to its min or max (+-inf included).
 *   i64 -> i32: saturates to [INT32_MIN, INT32_MAX] (like the float case,
 *     rather than keeping the low 32 bits).
 *   int -> f32: rounds to nearest even (i64 and large i32 values may not
 *     be exact).
 *   anything -> bool: x != 0 gives 1, else 0 (NaN -> 1, -0 -> 0).
 *   bool -> anything: any nonzero byte reads as 1.
 *   same dtype: a copy (bool normalized to 0/1).
 * Every loop is a branch-free select chain so it vectorizes; the float is
 * clamped before the conversion, which then never sees an out-of-range
 * value.
 */
#include <stdint.h>
#include <string.h>

#include "ew_bcast.h"

typedef void (*cast_fn)(const void *x, void *y, int64_t n);

#define CAST_FN(name, TI, TO, EXPR)                                        \
    static void name(const void *xv, void *yv, int64_t n)                  \
    {                                                                      \
        const TI *x = xv;                                                  \
        TO *y = yv;                                                        \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                \
        {                                                                  \
            TI v = x[i];                                                   \
            y[i] = (EXPR);                                                 \
        }                                                                  \
    }

/* The largest floats below 2^31 and 2^63; clamping to these makes the
 * conversion exact-range, and the >= 2^k test then picks the max. */
#define F32_BELOW_2P31 2147483520.0f
#define F32_BELOW_2P63 9223371487098961920.0f

static inline int32_t f32_to_i32(float v)
{
    float c = v != v ? 0.0f : v;
    c = c < -2147483648.0f ? -2147483648.0f : c;
    c = c > F32_BELOW_2P31 ? F32_BELOW_2P31 : c;
    int32_t r = (int32_t)c;
    return v >= 2147483648.0f ? INT32_MAX : r;
}

static inline int64_t f32_to_i64(float v)
{
    float c = v != v ? 0.0f : v;
    c = c < -9223372036854775808.0f ? -9223372036854775808.0f : c;
    c = c > F32_BELOW_2P63 ? F32_BELOW_2P63 : c;
    int64_t r = (int64_t)c;
    return v >= 9223372036854775808.0f ? INT64_MAX : r;
}

CAST_FN(f32_f32, float, float, v)
CAST_FN(f32_i64, float, int64_t, f32_to_i64(v))
CAST_FN(f32_i32, float, int32_t, f32_to_i32(v))
CAST_FN(f32_bool, float, uint8_t, v != 0.0f)
CAST_FN(i64_f32, int64_t, float, (float)v)
CAST_FN(i64_i64, int64_t, int64_t, v)
CAST_FN(i64_i32, int64_t, int32_t,
        (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v))
CAST_FN(i64_bool, int64_t, uint8_t, v != 0)
CAST_FN(i32_f32, int32_t, float, (float)v)
CAST_FN(i32_i64, int32_t, int64_t, v)
CAST_FN(i32_i32, int32_t, int32_t, v)
CAST_FN(i32_bool, int32_t, uint8_t, v != 0)
CAST_FN(bool_f32, uint8_t, float, v ? 1.0f : 0.0f)
CAST_FN(bool_i64, uint8_t, int64_t, v != 0)
CAST_FN(bool_i32, uint8_t, int32_t, v != 0)
CAST_FN(bool_bool, uint8_t, uint8_t, v != 0)

/* [from][to], in graph_dtype order (F32, I64, I32, BOOL). */
static const cast_fn cast_table[GRAPH_DTYPE_COUNT][GRAPH_DTYPE_COUNT] = {
    {f32_f32, f32_i64, f32_i32, f32_bool},
    {i64_f32, i64_i64, i64_i32, i64_bool},
    {i32_f32, i32_i64, i32_i32, i32_bool},
    {bool_f32, bool_i64, bool_i32, bool_bool},
};

typedef struct cast_job {
    cast_fn fn;
    const char *x;
    char *y;
    size_t isize, osize;
} cast_job;

static void cast_range(int64_t start, int64_t end, void *ctx)
{
    const cast_job *j = ctx;
    j->fn(j->x + (size_t)start * j->isize, j->y + (size_t)start * j->osize,
          end - start);
}

tg_status eager_kernel_cast(const eager_kargs *a)
{
    graph_dtype from = a->in_type[0].dtype, to = a->out_type->dtype;
    if ((unsigned)from >= GRAPH_DTYPE_COUNT || (unsigned)to >= GRAPH_DTYPE_COUNT)
        return eager_kernel_fail(a, TG_ERR_DTYPE, "cannot cast %s to %s",
                                 graph_dtype_name(from), graph_dtype_name(to));
    cast_job j = {cast_table[from][to], a->in[0], a->out[0],
                  graph_dtype_size(from), graph_dtype_size(to)};
    eager_ew_parallel(graph_type_numel(a->out_type), a->nthreads, cast_range,
                      &j);
    return TG_OK;
}
