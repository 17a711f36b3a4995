/*
 * nn_dw.cl - depthwise conv2d, conv2d_ep and conv2d_blk (groups == C,
 * one input channel per group, any channel multiplier O / C), NCHW or
 * nChw16c as nn_conv.cl, which comes before this source in the prefix
 * (after tg_epilogue and nn_common.cl): chan_off, conv_store and the
 * geometry g0, g1 are its.
 *
 * nn_dw_tiled: a work-group of DW_ITEMS items computes a tile of TH x TW
 * output positions of CPG output channels: the input tile those outputs
 * read (its halo included, zero outside the image) and the CPG filters are
 * staged in __local memory once, then each item computes DW_RW
 * neighbouring outputs of one row in registers.  t = (TW, TH, CPG, input
 * tile rows, input tile cols, tiles per row, multiplier, 0), chosen by
 * ops_dw.c so that TH * TW / DW_RW * CPG == DW_ITEMS and the staged data
 * fits DW_LMEM floats.
 */
#define DW_ITEMS 64
#define DW_RW 4
#define DW_LMEM 4096

/* Global size (tiles * DW_ITEMS, ceil(O / CPG), N), local (DW_ITEMS, 1, 1). */
__kernel __attribute__((reqd_work_group_size(DW_ITEMS, 1, 1)))
void nn_dw_tiled(__global const float *x, __global const float *w, __global float *y,
                 int8 g0, int8 g1, int8 t, __global const float *bias,
                 __global const float *res TG_TAIL_PARAMS)
{
    __local float lm[DW_LMEM];
    int C = g0.s0, H = g0.s1, W = g0.s2, O = g0.s3, OH = g0.s4, OW = g0.s5;
    int KH = g0.s6, KW = g0.s7, sh = g1.s0, sw = g1.s1, dh = g1.s4, dw = g1.s5;
    int blocked = g1.s7 & 1, yblocked = g1.s7 >> 1 & 1;
    int tw = t.s0, th = t.s1, cpg = t.s2, iht = t.s3, iwt = t.s4, mult = t.s6;
    int tile = get_group_id(0), ob = get_group_id(1) * cpg, n = get_group_id(2);
    int oh0 = tile / t.s5 * th, ow0 = tile % t.s5 * tw;
    int ih0 = oh0 * sh - g1.s2, iw0 = ow0 * sw - g1.s3;
    int lid = get_local_id(0), plane = iht * iwt, KK = KH * KW;
    long HW = (long)H * W;
    int ps = blocked ? 16 : 1;
    __local float *wl = lm + cpg * plane;
    /* neighbouring items load neighbouring columns of a tile row */
    for (int i = lid; i < cpg * plane; i += DW_ITEMS) {
        int cl = i / plane, r = i % plane;
        int o = ob + cl, ih = ih0 + r / iwt, iw = iw0 + r % iwt;
        float v = 0.0f;
        if (o < O && (uint)ih < (uint)H && (uint)iw < (uint)W)
            v = x[chan_off(n, o / mult, C, HW, blocked) + ((long)ih * W + iw) * ps];
        lm[i] = v;
    }
    for (int i = lid; i < cpg * KK; i += DW_ITEMS) {
        int o = ob + i / KK;
        wl[i] = o < O ? w[(long)o * KK + i % KK] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int ipc = DW_ITEMS / cpg, cg = tw / DW_RW;
    int cl = lid / ipc, r = lid % ipc, ty = r / cg, tx = r % cg;
    int o = ob + cl, oh = oh0 + ty, ow = ow0 + tx * DW_RW;
    __local const float *xl = lm + cl * plane + ty * sh * iwt + tx * DW_RW * sw;
    __local const float *wc = wl + cl * KK;
    float acc[DW_RW];
    for (int j = 0; j < DW_RW; j++)
        acc[j] = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        __local const float *xr = xl + kh * dh * iwt;
        for (int kw = 0; kw < KW; kw++) {
            float wv = wc[kh * KW + kw];
            __local const float *xp = xr + kw * dw;
            for (int j = 0; j < DW_RW; j++)
                acc[j] = mad(wv, xp[j * sw], acc[j]);
        }
    }
    if (o >= O || oh >= OH)
        return;
    for (int j = 0; j < DW_RW; j++)
        if (ow + j < OW)
            conv_store(y, n, o, oh * OW + ow + j, acc[j], O, OH * OW, yblocked, bias,
                       res TG_TAIL_ARGS);
}
