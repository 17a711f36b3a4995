/*
 * nn_norm.cl - batch_norm, layer_norm, softmax and log_softmax.
 * Prefixed with nn_common.cl.  Semantics and numerics as
 * eager/kernels_norm.c:
 *
 * - batch_norm: per-channel factor scale / sqrt(var + eps) in acc_t;
 *   y = (x - mean) * factor + bias.
 * - layer_norm: two passes per row (mean, then the mean squared
 *   deviation) in acc_t, population variance; x - mean is formed as
 *   (x - mhi) - mlo with mean = mhi + mlo split into two floats.
 * - softmax: the row max (NaN ignored, -inf if none) is subtracted before
 *   exp; the sum is in acc_t; log_softmax is (x - m) - log(sum).  An
 *   all -inf row, or one holding +inf or NaN, gives NaN, as on the CPU.
 *
 * Row kernels use one work-group of 64 items per row, reducing through
 * __local memory; softmax over a non-innermost axis uses one item per
 * column (neighbouring items read neighbouring addresses).
 */
#define WG 64

/* Global size (S rounded up, N*C): S = the product of dims 2.. */
__kernel void nn_batch_norm(__global const float *x, __global const float *scale,
                            __global const float *bias, __global const float *mean,
                            __global const float *var, __global float *y, long S, int C,
                            float eps)
{
    long i = get_global_id(0), r = get_global_id(1);
    if (i >= S)
        return;
    int c = r % C;
    float f = (float)((acc_t)scale[c] / sqrt((acc_t)var[c] + (acc_t)eps));
    y[r * S + i] = (x[r * S + i] - mean[c]) * f + bias[c];
}

/* Max of v over the work-group, NaN ignored (every item gets it). */
inline float wg_max(float v, __local float *part)
{
    int lid = get_local_id(0);
    part[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = WG / 2; w > 0; w >>= 1) {
        if (lid < w && part[lid + w] > part[lid])
            part[lid] = part[lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float m = part[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}

/* Global size (64, rows); rows of d elements; w, b may be NULL. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nn_layer_norm(__global const float *x, __global const float *w,
                   __global const float *b, __global float *y, long d, float eps)
{
    __local acc_t part[WG];
    int lid = get_local_id(0);
    long r = get_group_id(1);
    __global const float *xr = x + r * d;
    __global float *yr = y + r * d;
    acc_t s = 0;
    for (long i = lid; i < d; i += WG)
        s += xr[i];
    acc_t mean = wg_sum64(s, part) / (acc_t)d;
    s = 0;
    for (long i = lid; i < d; i += WG) {
        acc_t t = xr[i] - mean;
        s += t * t;
    }
    acc_t var = wg_sum64(s, part) / (acc_t)d;
    float rstd = (float)(1 / sqrt(var + (acc_t)eps));
    float mhi = (float)mean, mlo = (float)(mean - (acc_t)mhi);
    for (long i = lid; i < d; i += WG) {
        float v = ((xr[i] - mhi) - mlo) * rstd;
        if (w)
            v *= w[i];
        if (b)
            v += b[i];
        yr[i] = v;
    }
}

/* Global size (64, rows): softmax over contiguous rows of len. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nn_softmax_rows(__global const float *x, __global float *y, long len, int log_sm)
{
    __local acc_t part[WG];
    __local float mpart[WG];
    int lid = get_local_id(0);
    long r = get_group_id(1);
    __global const float *xr = x + r * len;
    __global float *yr = y + r * len;
    float m = -INFINITY;
    for (long i = lid; i < len; i += WG)
        m = xr[i] > m ? xr[i] : m;
    m = wg_max(m, mpart);
    acc_t s = 0;
    for (long i = lid; i < len; i += WG)
        s += exp(xr[i] - m);
    s = wg_sum64(s, part);
    if (log_sm) {
        float ls = (float)log(s);
        for (long i = lid; i < len; i += WG)
            yr[i] = (xr[i] - m) - ls;
    } else {
        float inv = (float)(1 / s);
        for (long i = lid; i < len; i += WG)
            yr[i] = exp(xr[i] - m) * inv;
    }
}

/* Global size (inner rounded up, outer): column j of slab o, stride inner. */
__kernel void nn_softmax_cols(__global const float *x, __global float *y, long len,
                              long inner, int log_sm)
{
    long j = get_global_id(0), o = get_global_id(1);
    if (j >= inner)
        return;
    __global const float *xc = x + o * len * inner + j;
    __global float *yc = y + o * len * inner + j;
    float m = -INFINITY;
    for (long l = 0; l < len; l++)
        m = xc[l * inner] > m ? xc[l * inner] : m;
    acc_t s = 0;
    for (long l = 0; l < len; l++)
        s += exp(xc[l * inner] - m);
    float f = log_sm ? (float)log(s) : (float)(1 / s);
    for (long l = 0; l < len; l++)
        yc[l * inner] = log_sm ? (xc[l * inner] - m) - f : exp(xc[l * inner] - m) * f;
}
