/*
 * kernels_scan.c - CPU kernel for cumsum (running sums along one axis).
 *
 * Layout.  x is [outer, len, inner] around the axis; each of the
 * outer * inner lines along the axis is independent.  A task is one outer
 * index and a block of up to SCAN_BLOCK neighbouring lines (inner
 * indices): it walks the axis once, in the order of the sums (from the
 * end with reverse), and each step is a contiguous, vectorizable loop
 * over the block: y[k] = y[k - 1] + x[k] (exclusive: y[k - 1] + x[k - 1],
 * and y[first] = 0).  The output row before is the accumulator, so no
 * scratch is needed.
 *
 * Numerics.  f32 adds in f32, one element after the other along the
 * axis, as ONNX Runtime's CumSum does: every line's sums are the same
 * bits whatever the thread count or the block, and the OpenCL kernel
 * (replay/opencl/cl/nn_scan.cl) repeats them (PyTorch's CPU cumsum
 * accumulates in double, so it may differ in the last bit).  Integers
 * add in unsigned arithmetic of their width: they wrap in two's
 * complement with no signed overflow.
 */
#include <stdint.h>

#include "../graph/infer_norm.h"
#include "kernel.h"

/* Lines per task: a block's row of the output stays in L1. */
#define SCAN_BLOCK 1024

/* The scan of one task: n lines starting at x / y (stride inner between
 * steps along the axis, len >= 1 steps). */
#define SCAN_FN(name, T)                                                          \
    static void name(const T *x, T *y, int64_t len, int64_t inner, int64_t n,     \
                     int excl, int rev)                                           \
    {                                                                             \
        int64_t step = rev ? -inner : inner, first = rev ? (len - 1) * inner : 0; \
        const T *xk = x + first;                                                  \
        T *yk = y + first;                                                        \
        for (int64_t j = 0; j < n; j++)                                           \
            yk[j] = excl ? (T)0 : xk[j];                                          \
        for (int64_t k = 1; k < len; k++) {                                       \
            const T *src = excl ? xk : xk + step;                                 \
            T *yn = yk + step;                                                    \
            for (int64_t j = 0; j < n; j++)                                       \
                yn[j] = yk[j] + src[j];                                           \
            yk = yn;                                                              \
            xk += step;                                                           \
        }                                                                         \
    }

SCAN_FN(scan_f32, float)
SCAN_FN(scan_u64, uint64_t)
SCAN_FN(scan_u32, uint32_t)

tg_status eager_kernel_cumsum(const eager_kargs *a)
{
    const graph_cumsum_attrs *at = a->attrs;
    const graph_type *t = &a->in_type[0];
    int axis = graph_norm_axis(at->axis, t->ndim); /* checked by infer */
    int64_t outer, len, inner;
    eager_axis_split(t, axis, &outer, &len, &inner);
    if (outer * len * inner == 0)
        return TG_OK;
    graph_dtype dt = t->dtype;
    int excl = at->exclusive != 0, rev = at->reverse != 0;
    int64_t nblk = (inner + SCAN_BLOCK - 1) / SCAN_BLOCK, ntask = outer * nblk;
    int nth = a->nthreads;
    int par = outer * len * inner >= EAGER_PAR_MIN && nth > 1 && ntask > 1;
#pragma omp parallel for num_threads(nth) if (par) schedule(static)
    for (int64_t task = 0; task < ntask; task++) {
        int64_t o = task / nblk, j0 = task % nblk * SCAN_BLOCK;
        int64_t n = inner - j0 < SCAN_BLOCK ? inner - j0 : SCAN_BLOCK;
        int64_t off = o * len * inner + j0;
        /* i64 / i32 through their unsigned types (same width: may alias) */
        if (dt == GRAPH_F32)
            scan_f32((const float *)a->in[0] + off, (float *)a->out[0] + off, len, inner, n,
                     excl, rev);
        else if (dt == GRAPH_I64)
            scan_u64((const uint64_t *)a->in[0] + off, (uint64_t *)a->out[0] + off, len,
                     inner, n, excl, rev);
        else
            scan_u32((const uint32_t *)a->in[0] + off, (uint32_t *)a->out[0] + off, len,
                     inner, n, excl, rev);
    }
    return TG_OK;
}
