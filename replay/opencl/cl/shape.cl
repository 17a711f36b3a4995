/*
 * shape.cl - data movement by element size (-DT=uchar|uint|ulong):
 *   copy_strided  y[yb + c.ys] = x[xb + c.xs] for every coordinate c of
 *                 dims (transpose, expand, slice, concat, split, the
 *                 blocked-layout conversions); copy_rows is the same as
 *                 a row launch (common.cl), used for rows of 8 or more;
 *   pad_k         y[c] = x[c - begin] inside x, else the pad value;
 *   gather_k      ONNX Gather: y[o, k, r] = x[o, idx[k], r].
 */
__kernel void copy_strided(__global const T *x, __global T *y, long n, int nd, int8 dims,
                           int8 xs, int8 ys, long xb, long yb)
{
    long i = get_global_id(0);
    if (i < n) {
        int c[8];
        tg_coords(i, nd, dims, c);
        y[yb + tg_dot(nd, c, ys)] = x[xb + tg_dot(nd, c, xs)];
    }
}

/* The same as a row launch (common.cl), dims right-aligned.  Items past
 * the row's end write column L-1 again (the same value): copies are never
 * in place, so that is harmless. */
__kernel void copy_rows(__global const T *x, __global T *y, int8 dims, int8 xs, int8 ys, long xb,
                        long yb)
{
    int c = min((int)get_global_id(0), dims.s7 - 1), r = get_global_id(1);
    y[yb + tg_row_off(r, dims, ys) + (long)c * ys.s7] =
        x[xb + tg_row_off(r, dims, xs) + (long)c * xs.s7];
}

/* begin: pads before each dim (negative crops); xd: input dims. */
__kernel void pad_k(__global const T *x, __global T *y, long n, int nd, int8 dims, int8 xd,
                    int8 xs, int8 begin, T value)
{
    long i = get_global_id(0);
    if (i < n) {
        int c[8], d[8], b[8];
        tg_coords(i, nd, dims, c);
        vstore8(xd, 0, d);
        vstore8(begin, 0, b);
        int inside = 1;
        for (int k = 0; k < nd; k++) {
            c[k] -= b[k];
            inside &= c[k] >= 0 && c[k] < d[k];
        }
        y[i] = inside ? x[tg_dot(nd, c, xs)] : value;
    }
}

#ifdef IT
/* n = outer * K * inner outputs; an index outside [-len, len) raises the
 * flag and writes 0 (reading row 0 instead would read past an empty
 * axis: len 0, every index outside; as gather_elements_k). */
__kernel void gather_k(__global const T *x, __global const IT *idx, __global T *y, long n,
                       int K, int inner, int len, __global int *flag, int code)
{
    int i = (int)get_global_id(0); /* the host checks n fits */
    if (i < n) {
        int t = i / inner, r = i - t * inner, o = t / K, k = t - o * K;
        long v = idx[k];
        if (v < -len || v >= len) {
            atomic_cmpxchg(flag, 0, code);
            y[i] = 0;
            return;
        }
        v += v < 0 ? len : 0;
        y[i] = x[((long)o * len + v) * inner + r];
    }
}
#endif
