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
 *
 * nn_dw_rows (below): no __local memory, DW_RR outputs of a row per item
 * from a window of input columns in registers.
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

/*
 * nn_dw_rows: no __local memory; each item computes DW_RR neighbouring
 * outputs of one output row in registers.  For each kernel row it loads
 * the DW_SPAN input columns those outputs read once into registers
 * (3x3 stride 1: DW_RR + 2 loads instead of 3 * DW_RR), zero outside the
 * image, then multiplies them out with every index known at compile time:
 * ops_dw.c builds the program with the node's kernel width DW_KW, column
 * stride DW_SW and column dilation DW_DIL (and DW_RR, from the output's
 * width), so that the window stays in registers on a GPU.  Neighbouring
 * items take neighbouring segments of a row (then rows, then channels),
 * so that a warp's loads cover one stretch of the input row.  The row's
 * last segment may be ragged: its outputs past OW are computed from
 * zero-guarded loads and not stored.
 */
#ifndef DW_RR
#define DW_RR 4
#endif
#ifndef DW_KW
#define DW_KW 3
#endif
#ifndef DW_SW
#define DW_SW 1
#endif
#ifndef DW_DIL
#define DW_DIL 1
#endif
#define DW_SPAN ((DW_RR - 1) * DW_SW + (DW_KW - 1) * DW_DIL + 1)

/* Global size (O * OH * ceil(OW / DW_RR), N) rounded up to local (64, 1):
 * the first index is o, oh and the segment of DW_RR columns, the segment
 * fastest; the program's DW_KW is the weights' width. */
__kernel void nn_dw_rows(__global const float *x, __global const float *w, __global float *y,
                         int8 g0, int8 g1, __global const float *bias,
                         __global const float *res TG_TAIL_PARAMS)
{
    int C = g0.s0, H = g0.s1, W = g0.s2, O = g0.s3, OH = g0.s4, OW = g0.s5, KH = g0.s6;
    int sh = g1.s0, dh = g1.s4, blocked = g1.s7 & 1, yblocked = g1.s7 >> 1 & 1;
    int segs = (OW + DW_RR - 1) / DW_RR, rows = OH * segs;
    int i = get_global_id(0), n = get_global_id(1);
    if (i >= O * rows)
        return;
    int o = i / rows, r = i - o * rows, oh = r / segs, ow0 = (r - oh * segs) * DW_RR;
    int ih0 = oh * sh - g1.s2, iw0 = ow0 * DW_SW - g1.s3;
    long HW = (long)H * W;
    int ps = blocked ? 16 : 1;
    __global const float *xc = x + chan_off(n, o / (O / C), C, HW, blocked);
    __global const float *wo = w + (long)o * KH * DW_KW;
    float acc[DW_RR];
    for (int j = 0; j < DW_RR; j++)
        acc[j] = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        int ih = ih0 + kh * dh;
        if ((uint)ih >= (uint)H)
            continue;
        __global const float *xr = xc + (long)ih * W * ps;
        float win[DW_SPAN];
#pragma unroll
        for (int m = 0; m < DW_SPAN; m++) {
            int iw = iw0 + m;
            win[m] = (uint)iw < (uint)W ? xr[(long)iw * ps] : 0.0f;
        }
#pragma unroll
        for (int kw = 0; kw < DW_KW; kw++) {
            float wv = wo[kh * DW_KW + kw];
#pragma unroll
            for (int j = 0; j < DW_RR; j++)
                acc[j] = mad(wv, win[j * DW_SW + kw * DW_DIL], acc[j]);
        }
    }
    long p = (long)oh * OW + ow0;
#pragma unroll
    for (int j = 0; j < DW_RR; j++)
        if (ow0 + j < OW)
            conv_store(y, n, o, (int)(p + j), acc[j], O, OH * OW, yblocked, bias,
                       res TG_TAIL_ARGS);
}
