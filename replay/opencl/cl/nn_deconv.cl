/*
 * nn_deconv.cl - conv_transpose2d (NCHW), as eager/kernels_conv.c: input
 * row ih reaches output row oh through tap kh when
 * oh = ih*stride - pad_top + kh*dil (columns alike), so output (n, o, oh,
 * ow) gathers, over the taps whose ih and iw are whole and inside x, the
 * input channels c of o's group: x[n][c][ih][iw] * w[c][o % O/groups][kh][kw].
 * One item per output; rows no input reaches hold the bias.
 *
 * Geometry comes as two int8 arguments:
 *   g0 = (C, H, W, O, OH, OW, KH, KW)
 *   g1 = (stride h, stride w, pad top, pad left, dil h, dil w, groups, 0)
 * Global size (OH*OW, O, N), any local size; bias may be NULL.
 */
__kernel void nn_deconv(__global const float *x, __global const float *w,
                        __global float *y, int8 g0, int8 g1, __global const float *bias)
{
    int C = g0.s0, H = g0.s1, W = g0.s2, O = g0.s3, OW = g0.s5, KH = g0.s6, KW = g0.s7;
    int sh = g1.s0, sw = g1.s1, dh = g1.s4, dw = g1.s5, groups = g1.s6;
    int P = g0.s4 * OW;
    int p = get_global_id(0), o = get_global_id(1), n = get_global_id(2);
    if (p >= P || o >= O)
        return;
    int Cg = C / groups, Og = O / groups, c0 = o / Og * Cg;
    int th = p / OW + g1.s2, tw = p % OW + g1.s3; /* ih*sh + kh*dh, iw*sw + kw*dw */
    long HW = (long)H * W, KK = (long)KH * KW;
    __global const float *xn = x + ((long)n * C + c0) * HW;
    __global const float *wo = w + ((long)c0 * Og + o % Og) * KK;
    float s = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        int t = th - kh * dh;
        if (t < 0 || t % sh)
            continue;
        int ih = t / sh;
        if (ih >= H)
            continue;
        for (int kw = 0; kw < KW; kw++) {
            int u = tw - kw * dw;
            if (u < 0 || u % sw)
                continue;
            int iw = u / sw;
            if (iw >= W)
                continue;
            long xi = (long)ih * W + iw, wi = (long)kh * KW + kw;
            for (int c = 0; c < Cg; c++)
                s = mad(wo[c * Og * KK + wi], xn[c * HW + xi], s);
        }
    }
    y[((long)n * O + o) * P + p] = bias ? s + bias[o] : s;
}
