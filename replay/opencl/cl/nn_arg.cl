/*
 * nn_arg.cl - argmax, argmin.  Semantics as eager/kernels_reduce.c: the
 * i64 index of the extreme along one axis; NaN is the extreme of both ops
 * and NaNs tie (the first NaN wins); ties give the first index, or the
 * last when `last` (select_last) is set.
 *
 * The axis (length len >= 1) sits between outer and inner dims: output
 * i = o * inner + j is the index k of the extreme of
 * x[(o * len + k) * inner + j] (host: replay/opencl/ops_nn.c).
 *
 * Two kernels per (op, dtype), NAME_items and NAME_groups:
 *  _items  one item per output walking the axis; neighbouring items read
 *          neighbouring addresses when inner > 1.
 *  _groups one work-group of 64 items per output, for long rows
 *          (inner 1): item l walks k = l, l + 64, ... in order, then the
 *          64 candidates are combined in __local memory by value and, on
 *          a tie, by index, so the result does not depend on which item
 *          saw which element.
 */
#define AWG 64

/* v (at a later index than b's) replaces b: WIN strictly, TIE also on a
 * tie (neither wins).  A NaN beats any number. */
#define FGT(v, b) ((v) > (b) || (isnan(v) && !isnan(b)))
#define FGE(v, b) ((v) >= (b) || isnan(v))
#define FLT(v, b) ((v) < (b) || (isnan(v) && !isnan(b)))
#define FLE(v, b) ((v) <= (b) || isnan(v))
#define IGT(v, b) ((v) > (b))
#define IGE(v, b) ((v) >= (b))
#define ILT(v, b) ((v) < (b))
#define ILE(v, b) ((v) <= (b))

#define ARG_KERNELS(NAME, T, WIN, TIE)                                                \
    __kernel void NAME##_items(__global const T *x, __global long *y, long nout,      \
                               long len, long inner, int last)                        \
    {                                                                                 \
        long i = get_global_id(0);                                                    \
        if (i >= nout)                                                                \
            return;                                                                   \
        long o = i / inner, j = i - o * inner;                                        \
        __global const T *p = x + o * len * inner + j;                                \
        T best = p[0];                                                                \
        long at = 0;                                                                  \
        for (long k = 1; k < len; k++) {                                              \
            T v = p[k * inner];                                                       \
            if (last ? TIE(v, best) : WIN(v, best)) {                                 \
                best = v;                                                             \
                at = k;                                                               \
            }                                                                         \
        }                                                                             \
        y[i] = at;                                                                    \
    }                                                                                 \
    __kernel __attribute__((reqd_work_group_size(AWG, 1, 1)))                        \
    void NAME##_groups(__global const T *x, __global long *y, long len, int last)     \
    {                                                                                 \
        __local T pv[AWG];                                                            \
        __local long pk[AWG];                                                         \
        int lid = get_local_id(0);                                                    \
        long o = get_group_id(1);                                                     \
        __global const T *p = x + o * len;                                            \
        T best = p[0];                                                                \
        long at = -1; /* none yet: an item past the row's end keeps it */            \
        for (long k = lid; k < len; k += AWG) {                                       \
            T v = p[k];                                                               \
            if (at < 0 || (last ? TIE(v, best) : WIN(v, best))) {                     \
                best = v;                                                             \
                at = k;                                                               \
            }                                                                         \
        }                                                                             \
        pv[lid] = best;                                                               \
        pk[lid] = at;                                                                 \
        barrier(CLK_LOCAL_MEM_FENCE);                                                 \
        for (int w = AWG / 2; w > 0; w >>= 1) {                                       \
            if (lid < w) {                                                            \
                T v = pv[lid + w], b = pv[lid];                                       \
                long kv = pk[lid + w], kb = pk[lid];                                  \
                if (kv >= 0 && (kb < 0 || WIN(v, b) ||                                \
                                (!WIN(b, v) && (last ? kv > kb : kv < kb)))) {        \
                    pv[lid] = v;                                                      \
                    pk[lid] = kv;                                                     \
                }                                                                     \
            }                                                                         \
            barrier(CLK_LOCAL_MEM_FENCE);                                             \
        }                                                                             \
        if (lid == 0)                                                                 \
            y[o] = pk[0];                                                             \
    }

ARG_KERNELS(nn_argmax_f32, float, FGT, FGE)
ARG_KERNELS(nn_argmax_i64, long, IGT, IGE)
ARG_KERNELS(nn_argmax_i32, int, IGT, IGE)
ARG_KERNELS(nn_argmin_f32, float, FLT, FLE)
ARG_KERNELS(nn_argmin_i64, long, ILT, ILE)
ARG_KERNELS(nn_argmin_i32, int, ILT, ILE)

/*
 * topk (f32): one item per element of x, global size n = outer*len*inner.
 * The element's rank in its line is the count of elements that come
 * before it in the op's order (largest: greater first; smallest: smaller
 * first; NaN counts as the largest; equal values by index); an element of
 * rank below k is written at that rank, with its index.  O(len) per item.
 */
__kernel void nn_topk_f32(__global const float *x, __global float *y, __global long *yi,
                          long n, long len, long inner, long k, int largest)
{
    long g = get_global_id(0);
    if (g >= n)
        return;
    long o = g / (len * inner), e = g / inner % len, j = g % inner;
    __global const float *line = x + o * len * inner + j;
    float v = line[e * inner];
    long rank = 0;
    for (long m = 0; m < len; m++) {
        float w = line[m * inner];
        int gt = FGT(w, v), lt = FGT(v, w);
        rank += largest ? (gt || (!lt && m < e)) : (lt || (!gt && m < e));
    }
    if (rank < k) {
        y[(o * k + rank) * inner + j] = v;
        yi[(o * k + rank) * inner + j] = e;
    }
}
