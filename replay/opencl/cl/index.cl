/*
 * index.cl - the element-indexing ops, built with -DT=<element type>
 * -DIT=<index type> (long or int):
 *   gather_elements_k   ONNX GatherElements: y[c] = x[c with c[axis] =
 *                       idx[c]], one item per output;
 *   scatter_elements_k  ONNX ScatterElements on y, a copy of x made
 *                       before: one item per line (the positions of the
 *                       indices that differ only along the axis, the only
 *                       ones whose updates can land on the same element),
 *                       applying its updates in order along the axis, so
 *                       duplicates resolve as on the CPU (row-major order,
 *                       the last one wins) without atomics.
 * -DRED=<GRAPH_SCATTER_* code> picks how an update combines (none: T by
 * element size); integers give -DU=<unsigned type> so add and mul wrap
 * around, as eager/kernels_shape.c.  An index outside [-len, len) raises
 * the flag (the run fails after it) and is skipped; gather then writes 0
 * without reading x (which may have no elements at all).
 */
#if !defined(RED) || RED == 0
#define COMBINE(d, u) (u)
#elif RED == 1 && defined(U)
#define COMBINE(d, u) ((T)((U)(d) + (U)(u)))
#elif RED == 1
#define COMBINE(d, u) ((d) + (u))
#elif RED == 2 && defined(U)
#define COMBINE(d, u) ((T)((U)(d) * (U)(u)))
#elif RED == 2
#define COMBINE(d, u) ((d) * (u))
#elif RED == 3 && defined(U)
#define COMBINE(d, u) ((d) > (u) ? (d) : (u))
#elif RED == 3
#define COMBINE(d, u) tg_max(d, u)
#elif RED == 4 && defined(U)
#define COMBINE(d, u) ((d) < (u) ? (d) : (u))
#else
#define COMBINE(d, u) tg_min(d, u)
#endif

/* n outputs of dims (the indices' dims); xs: x's strides with the axis's
 * 0; sa, len: x's stride and size along the axis. */
__kernel void gather_elements_k(__global const T *x, __global const IT *idx, __global T *y,
                                long n, int nd, int8 dims, int8 xs, int sa, int len,
                                __global int *flag, int code)
{
    long i = get_global_id(0);
    if (i < n) {
        long v = idx[i];
        if (v < -len || v >= len) {
            atomic_cmpxchg(flag, 0, code);
            y[i] = 0;
            return;
        }
        int c[8];
        tg_coords(i, nd, dims, c);
        v += v < 0 ? len : 0;
        y[i] = x[tg_dot(nd, c, xs) + v * sa];
    }
}

/* nlines lines over the nd dims (ld) of the indices but the axis, is and
 * ys their strides in the indices (= updates) and y; K updates per line,
 * ia and ya the strides along the axis, len y's size there. */
__kernel void scatter_elements_k(__global const IT *idx, __global const T *u, __global T *y,
                                 long nlines, int nd, int8 ld, int8 is, int8 ys, int K, int ia,
                                 int ya, int len, __global int *flag, int code)
{
    long l = get_global_id(0);
    if (l < nlines) {
        int c[8];
        tg_coords(l, nd, ld, c);
        long ib = tg_dot(nd, c, is), yb = tg_dot(nd, c, ys);
        for (int k = 0; k < K; k++) {
            long p = ib + (long)k * ia, v = idx[p];
            if (v < -len || v >= len) {
                atomic_cmpxchg(flag, 0, code);
                continue;
            }
            v += v < 0 ? len : 0;
            __global T *d = y + yb + v * ya;
            *d = COMBINE(*d, u[p]);
        }
    }
}
