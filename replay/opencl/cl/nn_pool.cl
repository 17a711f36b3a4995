/*
 * nn_pool.cl - max_pool2d, avg_pool2d (NCHW, or blocked for their _blk
 * forms) and global_avg_pool.
 * Prefixed with nn_common.cl.  Semantics as eager/kernels_pool.c:
 *
 * - max propagates NaN: a NaN input wins and stays;
 * - avg divides by kh*kw with count_include_pad, else by the number of
 *   in-bounds elements; an empty window (only when H or W is 0) gives
 *   -inf for max and NaN (0/0) for avg;
 * - global_avg_pool sums in acc_t (double with fp64); an empty plane gives
 *   NaN.
 *
 * Window geometry: g0 = (H, W, OH, OW, KH, KW, stride h, stride w),
 * g1 = (pad top, pad left, count_include_pad, blocked, 0, ...).  Blocked
 * ([N,CB,H,W,16], the _blk ops): plane p is lane p%16 of block p/16, its
 * elements 16 floats apart.
 */

/* Plane p's first element and element stride, in x (H*W) or y (OH*OW). */
inline long plane_base(long p, long hw, int blocked)
{
    return blocked ? p / 16 * hw * 16 + p % 16 : p * hw;
}

/* Global size (OW, OH, N*C) rounded up to the local size. */
__kernel void nn_max_pool(__global const float *x, __global float *y, int8 g0, int8 g1)
{
    int ow = get_global_id(0), oh = get_global_id(1);
    long plane = get_global_id(2);
    int H = g0.s0, W = g0.s1, OH = g0.s2, OW = g0.s3;
    if (ow >= OW || oh >= OH)
        return;
    int h0 = oh * g0.s6 - g1.s0, w0 = ow * g0.s7 - g1.s1;
    int ps = g1.s3 ? 16 : 1;
    __global const float *xp = x + plane_base(plane, (long)H * W, g1.s3);
    float m = -INFINITY;
    for (int kh = 0; kh < g0.s4; kh++) {
        int ih = h0 + kh;
        if ((uint)ih >= (uint)H)
            continue;
        for (int kw = 0; kw < g0.s5; kw++) {
            int iw = w0 + kw;
            if ((uint)iw < (uint)W) {
                float v = xp[(long)(ih * W + iw) * ps];
                m = (v > m || v != v) ? v : m;
            }
        }
    }
    y[plane_base(plane, (long)OH * OW, g1.s3) + (long)(oh * OW + ow) * ps] = m;
}

__kernel void nn_avg_pool(__global const float *x, __global float *y, int8 g0, int8 g1)
{
    int ow = get_global_id(0), oh = get_global_id(1);
    long plane = get_global_id(2);
    int H = g0.s0, W = g0.s1, OH = g0.s2, OW = g0.s3, KH = g0.s4, KW = g0.s5;
    if (ow >= OW || oh >= OH)
        return;
    int h0 = oh * g0.s6 - g1.s0, w0 = ow * g0.s7 - g1.s1;
    int h1 = min(h0 + KH, H), w1 = min(w0 + KW, W);
    h0 = max(h0, 0);
    w0 = max(w0, 0);
    int ps = g1.s3 ? 16 : 1;
    __global const float *xp = x + plane_base(plane, (long)H * W, g1.s3);
    acc_t s = 0;
    for (int ih = h0; ih < h1; ih++)
        for (int iw = w0; iw < w1; iw++)
            s += xp[(long)(ih * W + iw) * ps];
    float cnt = g1.s2 ? (float)(KH * KW) : (float)(max(h1 - h0, 0) * max(w1 - w0, 0));
    y[plane_base(plane, (long)OH * OW, g1.s3) + (long)(oh * OW + ow) * ps] =
        (float)s / cnt; /* 0/0 = NaN: empty window */
}

/* One work-group of 64 items per plane: global size (64, planes). */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void nn_global_avg_pool(__global const float *x, __global float *y, long plane)
{
    __local acc_t part[64];
    int lid = get_local_id(0);
    long i = get_group_id(1);
    __global const float *xp = x + i * plane;
    acc_t s = 0;
    for (long j = lid; j < plane; j += 64)
        s += xp[j];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = 32; w > 0; w >>= 1) {
        if (lid < w)
            part[lid] += part[lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        y[i] = (float)(part[0] / (acc_t)plane);
}
