/*
 * nn_reduce.cl - reduce_sum, reduce_mean, reduce_max.  Prefixed with
 * nn_common.cl.  Semantics as eager/kernels_reduce.c: f32 sums and means
 * accumulate in acc_t (double with fp64); integer sums wrap modulo 2^64
 * (i64) or 2^32 (i32), done in unsigned arithmetic; f32 max propagates
 * NaN; empty reductions give 0 (sum) or NaN (mean).
 *
 * Layout (prepared by the host, replay/opencl/ops_nn.c): size-1 dims are
 * dropped and neighbouring dims of the same kind merged, leaving at most
 * 4 kept and 4 reduced groups, outermost first: kept sizes/strides kd/ks
 * (nk of them; the output is row-major over them), reduced rd/rs (nr),
 * as int8 arguments (entries past nk / nr unused).  Strides are in
 * elements of x.
 *
 * Two kernels per (op, dtype), NAME_items and NAME_groups:
 *  _items  one item per output, walking its reduction with an odometer;
 *          used when the innermost input dim is kept, so neighbouring
 *          items read neighbouring addresses.
 *  _groups one work-group of 64 items per output, combined in __local
 *          memory; used when the innermost dim is reduced (rows).  The
 *          items split the last reduced group when it is long, else the
 *          flat reduction.
 */
#define RWG 64

/* Offset in x of output o's first element. */
inline long kept_off(long o, int nk, int8 kd, int8 ks)
{
    int d[8], s[8];
    vstore8(kd, 0, d);
    vstore8(ks, 0, s);
    long off = 0;
    for (int k = nk - 1; k >= 0; k--) {
        long q = o / d[k];
        off += (o - q * d[k]) * s[k];
        o = q;
    }
    return off;
}

#define SUM_STEP(a, v) ((a) + (v))
#define FMAX_STEP(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define IMAX_STEP(a, v) ((v) > (a) ? (v) : (a))

/*
 * NAME: T element, A accumulator, ID identity, STEP(acc, value), FIN(acc,
 * count) the output value.
 */
#define REDUCE_KERNELS(NAME, T, A, ID, STEP, FIN)                                \
    __kernel void NAME##_items(__global const T *x, __global T *y, long nout,         \
                               int nk, int8 kd, int8 ks, int nr, int8 rd, int8 rs)    \
    {                                                                                 \
        long o = get_global_id(0);                                                    \
        if (o >= nout)                                                                \
            return;                                                                   \
        int d[8], s[8], idx[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                        \
        vstore8(rd, 0, d);                                                            \
        vstore8(rs, 0, s);                                                            \
        long count = 1;                                                               \
        for (int k = 0; k < nr; k++)                                                  \
            count *= d[k];                                                            \
        __global const T *xp = x + kept_off(o, nk, kd, ks);                           \
        A acc = ID;                                                                   \
        long off = 0;                                                                 \
        for (long t = 0; t < count; t++) {                                            \
            acc = STEP(acc, (A)xp[off]);                                              \
            for (int k = nr - 1; k >= 0; k--) { /* odometer step */                   \
                off += s[k];                                                          \
                if (++idx[k] < d[k])                                                  \
                    break;                                                            \
                off -= (long)d[k] * s[k];                                             \
                idx[k] = 0;                                                           \
            }                                                                         \
        }                                                                             \
        y[o] = FIN(acc, count);                                                       \
    }                                                                                 \
    __kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))                        \
    void NAME##_groups(__global const T *x, __global T *y, long nout, int nk, int8 kd,  \
                       int8 ks, int nr, int8 rd, int8 rs)                             \
    {                                                                                 \
        __local A part[RWG];                                                          \
        int lid = get_local_id(0);                                                    \
        long o = get_group_id(1);                                                     \
        int d[8], s[8];                                                               \
        vstore8(rd, 0, d);                                                            \
        vstore8(rs, 0, s);                                                            \
        long outer = 1;                                                               \
        for (int k = 0; k < nr - 1; k++)                                              \
            outer *= d[k];                                                            \
        int L = d[nr - 1], ls = s[nr - 1];                                            \
        __global const T *xp = x + kept_off(o, nk, kd, ks);                           \
        A acc = ID;                                                                   \
        if (L >= RWG) { /* items split the last group */                              \
            for (long r = 0; r < outer; r++) {                                        \
                long ro = 0, q = r;                                                   \
                for (int k = nr - 2; k >= 0; k--) {                                   \
                    ro += (q % d[k]) * s[k];                                          \
                    q /= d[k];                                                        \
                }                                                                     \
                for (int j = lid; j < L; j += RWG)                                    \
                    acc = STEP(acc, (A)xp[ro + (long)j * ls]);                        \
            }                                                                         \
        } else { /* items split the flat reduction */                                 \
            for (long t = lid; t < outer * L; t += RWG) {                             \
                long ro = (t % L) * ls, q = t / L;                                    \
                for (int k = nr - 2; k >= 0; k--) {                                   \
                    ro += (q % d[k]) * s[k];                                          \
                    q /= d[k];                                                        \
                }                                                                     \
                acc = STEP(acc, (A)xp[ro]);                                           \
            }                                                                         \
        }                                                                             \
        part[lid] = acc;                                                              \
        barrier(CLK_LOCAL_MEM_FENCE);                                                 \
        for (int w = RWG / 2; w > 0; w >>= 1) {                                       \
            if (lid < w)                                                              \
                part[lid] = STEP(part[lid], part[lid + w]);                           \
            barrier(CLK_LOCAL_MEM_FENCE);                                             \
        }                                                                             \
        if (lid == 0)                                                                 \
            y[o] = FIN(part[0], outer * L);                                           \
    }

#define FIN_F32(a, n) ((float)(a))
#define FIN_MEAN(a, n) ((n) > 0 ? (float)((a) / (acc_t)(n)) : NAN)
#define FIN_I64(a, n) as_long(a)
#define FIN_I32(a, n) as_int(a)
#define FIN_SAME(a, n) (a)

REDUCE_KERNELS(nn_sum_f32, float, acc_t, 0, SUM_STEP, FIN_F32)
REDUCE_KERNELS(nn_mean_f32, float, acc_t, 0, SUM_STEP, FIN_MEAN)
REDUCE_KERNELS(nn_sum_i64, long, ulong, 0, SUM_STEP, FIN_I64)
REDUCE_KERNELS(nn_sum_i32, int, uint, 0, SUM_STEP, FIN_I32)
REDUCE_KERNELS(nn_max_f32, float, float, -INFINITY, FMAX_STEP, FIN_SAME)
REDUCE_KERNELS(nn_max_i64, long, long, LONG_MIN, IMAX_STEP, FIN_SAME)
REDUCE_KERNELS(nn_max_i32, int, int, INT_MIN, IMAX_STEP, FIN_SAME)
