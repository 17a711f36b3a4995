/*
 * nn_conv.cl - conv2d, conv2d_ep and conv2d_blk (NCHW, or nChw16c when
 * blocked), with groups, stride, padding, dilation, an optional bias and
 * the epilogue tg_epilogue.  Prefixed with nn_common.cl.
 *
 * Geometry comes as two int8 arguments:
 *   g0 = (C, H, W, O, OH, OW, KH, KW)
 *   g1 = (stride h, stride w, pad top, pad left, dil h, dil w, groups,
 *         blocked: bit 0 x, bit 1 y and the residual)
 * Weights are plain OIHW (w[o][c/groups][kh][kw]) in every case.  A
 * blocked tensor is [N, ceil(C/16), H, W, 16]: element (n, c, h, w) at
 * (((n*ceil(C/16) + c/16)*H + h)*W + w)*16 + c%16.  The lanes past C (or
 * O) of a padded last block are never read, nor written here (ops_conv.c
 * zeroes the output first: ocl_conv_zero_lanes).
 *
 * nn_conv_tiled: the convolution as an implicit GEMM per (image, group):
 * Y[m][p] = sum_k Wt[m][k] * X[k][p] with m an output channel of the
 * group, p = oh*OW + ow an output pixel and k = (c, kh, kw); X is never
 * materialized: each slice of 16 k is first described in a __local
 * table (channel offset and kernel tap, one division each, by 16
 * items), then the 16x128 slice of X is gathered from x through it
 * (zero outside the image), and the 64x16 slice of Wt is read from w.
 * The multiply is the register tile of nn_common.cl (the CPU tile).
 *
 * nn_conv_sk (+ nn_conv_sk_sum): the same implicit GEMM on the GPU tile
 * of nn_gemm.cl's nn_gemm_sk (16x16 items, 64x64 tiles, K split over
 * work-groups so that small convs fill the device), below.
 *
 * nn_conv_direct: one item per output, the plain loops; used when the
 * group has few output channels (depthwise, tiny convs), where a 64-row
 * tile would be mostly empty.
 */

/* The geometry arguments unpacked (see the top) for the implicit GEMM
 * kernels: P output pixels, Cg channels and Mg outputs per group, K =
 * Cg*KH*KW, ps the pixel stride of x (16 when blocked). */
#define CONV_GEOMETRY(g0, g1)                                                         \
    int C = (g0).s0, H = (g0).s1, W = (g0).s2, O = (g0).s3, OW = (g0).s5;             \
    int KH = (g0).s6, KW = (g0).s7;                                                   \
    int sh = (g1).s0, sw = (g1).s1, dh = (g1).s4, dw = (g1).s5, groups = (g1).s6;     \
    int blocked = (g1).s7 & 1, yblocked = (g1).s7 >> 1 & 1;                           \
    int P = (g0).s4 * OW, Cg = C / groups, Mg = O / groups, KK = KH * KW, K = Cg * KK; \
    long HW = (long)H * W;                                                            \
    int ps = blocked ? 16 : 1

/* Offset of channel c's plane in image n, and the pixel stride. */
inline long chan_off(int n, int c, int C, long HW, int blocked)
{
    return blocked ? ((long)n * ((C + 15) / 16) + c / 16) * HW * 16 + c % 16
                   : ((long)n * C + c) * HW;
}

/* Bias, epilogue and store of output (n, o, p). */
inline void conv_store(__global float *y, int n, int o, int p, float v, int O, int P,
                       int blocked, __global const float *bias,
                       __global const float *res TG_TAIL_PARAMS)
{
    long i = blocked ? (((long)n * ((O + 15) / 16) + o / 16) * P + p) * 16 + o % 16
                     : ((long)n * O + o) * P + p;
    if (bias)
        v += bias[o];
    TG_STORE(y, i, tg_epilogue(v, res, i));
}

/* Global size (ceil(P/128)*8, ceil((O/groups)/64)*8, N*groups), local (8,8,1). */
__kernel __attribute__((reqd_work_group_size(8, 8, 1)))
void nn_conv_tiled(__global const float *x, __global const float *w, __global float *y,
                   int8 g0, int8 g1, __global const float *bias,
                   __global const float *res TG_TAIL_PARAMS)
{
    __local float As[TK][TM];
    __local float Bs[TK][TN];
    __local long t_off[TK]; /* channel plane offset of k, or -1 past K */
    __local int t_dh[TK], t_dw[TK]; /* kernel tap (kh*dil, kw*dil) of k */
    CONV_GEOMETRY(g0, g1);
    int tx = get_local_id(0), ty = get_local_id(1), lid = ty * 8 + tx;
    int m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
    int z = get_group_id(2), img = z / groups, g = z % groups;
    /* This item gathers columns lid and lid + 64 of every X slice. */
    int ih0[2], iw0[2];
    for (int s = 0; s < 2; s++) {
        int p = n0 + lid + 64 * s;
        int oh = p / OW, ow = p % OW;
        /* a column past P gets a row no tap can bring into the image */
        ih0[s] = p < P ? oh * sh - g1.s2 : -(1 << 30);
        iw0[s] = ow * sw - g1.s3;
    }
    __global const float *wg = w + (long)g * Mg * K;
    float16 acc[RM];
    for (int i = 0; i < RM; i++)
        acc[i] = (float16)(0.0f);
    for (int k0 = 0; k0 < K; k0 += TK) {
        if (lid < TK) {
            int k = k0 + lid, c = k / KK, r = k % KK;
            t_off[lid] = k < K ? chan_off(img, g * Cg + c, C, HW, blocked) : -1;
            t_dh[lid] = r / KW * dh;
            t_dw[lid] = r % KW * dw;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = 0; r < TM * TK / NITEMS; r++) {
            int idx = lid + r * NITEMS, kk = idx % TK, m = m0 + idx / TK;
            As[kk][idx / TK] = (m < Mg && k0 + kk < K) ? wg[(long)m * K + k0 + kk] : 0.0f;
        }
        for (int r = 0; r < TN * TK / NITEMS; r++) {
            int kk = r >> 1, s = r & 1;
            int ih = ih0[s] + t_dh[kk], iw = iw0[s] + t_dw[kk];
            long off = t_off[kk];
            int ok = off >= 0 && (uint)ih < (uint)H && (uint)iw < (uint)W;
            Bs[kk][lid + 64 * s] = ok ? x[off + ((long)ih * W + iw) * ps] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        NN_TILE_FMA(As, Bs, acc, tx, ty);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < RM; i++) {
        int m = m0 + ty * RM + i;
        float o[16];
        vstore16(acc[i], 0, o);
        for (int j = 0; j < 16; j++) {
            int p = n0 + tx * 16 + j;
            if (m < Mg && p < P)
                conv_store(y, img, g * Mg + m, p, o[j], O, P, yblocked, bias,
                           res TG_TAIL_ARGS);
        }
    }
}

/*
 * nn_conv_sk: the implicit GEMM of nn_conv_tiled on the GPU tile (see
 * nn_gemm.cl's nn_gemm_sk): a work-group of 16x16 items computes a 64x64
 * tile of Y (output channels m of the group x output pixels p), item
 * (tx, ty) the rows ty + 16i and pixels tx + 16j (i, j < 4), so that
 * neighbouring items gather neighbouring pixels of x (unit stride in
 * NCHW) and store neighbouring outputs.  K = (c, kh, kw) is walked in
 * slices of SK_K described by the __local table of nn_conv_tiled; item
 * lid gathers pixel lid % 64 of slice rows lid / 64 + 4r.  K is split
 * over work-groups: NDRange dim 2 is N * groups * splits, and split s
 * sums k in [s*kper, (s+1)*kper) (kper a multiple of SK_K).  With one
 * split the tile is finished here (bias, epilogue, store); with more,
 * each split writes its partial tile to ws[s][n][o][p] (plain NCHW per
 * split, whatever y's layout) and nn_conv_sk_sum finishes, or, with cnt
 * (zeroed tile counters, not NULL), the last split of each tile to finish
 * does (nn_common.cl's sk_last_split): one launch.
 *
 * Global size (ceil(P/64)*16, ceil((O/groups)/64)*16, N*groups*splits),
 * local (16,16,1).
 */
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void nn_conv_sk(__global const float *x, __global const float *w, __global float *y,
                int8 g0, int8 g1, __global const float *bias, __global const float *res,
                int splits, int kper, __global float *ws,
                __global volatile int *cnt TG_TAIL_PARAMS)
{
    __local float As[SK_K][SK_T + 1];
    __local float Bs[SK_K][SK_T];
    __local int last;
    __local long t_off[SK_K]; /* channel plane offset of k, or -1 past the split's K */
    __local int t_dh[SK_K], t_dw[SK_K]; /* kernel tap (kh*dil, kw*dil) of k */
    CONV_GEOMETRY(g0, g1);
    int tx = get_local_id(0), ty = get_local_id(1), lid = ty * 16 + tx;
    int m0 = get_group_id(1) * SK_T, n0 = get_group_id(0) * SK_T;
    int zs = get_group_id(2), z = zs / splits, s = zs % splits;
    int img = z / groups, g = z % groups;
    int kb = s * kper, ke = min(K, kb + kper);
    /* the pixel this item gathers; one past P gets a row no tap brings
     * into the image */
    int pc = lid % SK_T, pg = n0 + pc;
    int ih0 = pg < P ? pg / OW * sh - g1.s2 : -(1 << 30);
    int iw0 = pg % OW * sw - g1.s3;
    __global const float *wg = w + (long)g * Mg * K;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (int k0 = kb; k0 < ke; k0 += SK_K) {
        if (lid < SK_K) {
            int k = k0 + lid, c = k / KK, r = k % KK;
            t_off[lid] = k < ke ? chan_off(img, g * Cg + c, C, HW, blocked) : -1;
            t_dh[lid] = r / KW * dh;
            t_dw[lid] = r % KW * dw;
        }
        /* weights along k: rows of w are contiguous in k */
        for (int r = 0; r < 4; r++) {
            int idx = lid + r * 256, kk = idx % SK_K, mm = idx / SK_K, m = m0 + mm;
            As[kk][mm] = (m < Mg && k0 + kk < ke) ? wg[(long)m * K + k0 + kk] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = 0; r < 4; r++) {
            int kk = lid / SK_T + 4 * r;
            int ih = ih0 + t_dh[kk], iw = iw0 + t_dw[kk];
            long off = t_off[kk];
            int ok = off >= 0 && (uint)ih < (uint)H && (uint)iw < (uint)W;
            Bs[kk][pc] = ok ? x[off + ((long)ih * W + iw) * ps] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        SK_TILE_FMA(As, Bs, acc, tx, ty);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    long nimg = get_num_groups(2) / splits / groups;
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
        for (int j = 0; j < 4; j++) {
            int p = n0 + tx + 16 * j;
            if (m < Mg && p < P) {
                if (splits == 1)
                    conv_store(y, img, g * Mg + m, p, acc[i][j], O, P, yblocked, bias,
                               res TG_TAIL_ARGS);
                else
                    ws[(((long)s * nimg + img) * O + g * Mg + m) * P + p] = acc[i][j];
            }
        }
    }
    if (splits == 1 || !cnt)
        return;
    long tile = ((long)z * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) +
                get_group_id(0);
    if (!sk_last_split(cnt, tile, splits, &last))
        return;
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
        for (int j = 0; j < 4; j++) {
            int p = n0 + tx + 16 * j;
            if (m < Mg && p < P) {
                long o = ((long)img * O + g * Mg + m) * P + p;
                float v = sk_sum_volatile(ws, o, (long)nimg * O * P, splits);
                conv_store(y, img, g * Mg + m, p, v, O, P, yblocked, bias, res TG_TAIL_ARGS);
            }
        }
    }
}

/* Global size (P, O, N), any local size: the splits' partial outputs of
 * nn_conv_sk summed in order, then bias, epilogue and store. */
__kernel void nn_conv_sk_sum(__global const float *ws, int splits, __global float *y,
                             int8 g0, int8 g1, __global const float *bias,
                             __global const float *res TG_TAIL_PARAMS)
{
    int O = g0.s3, P = g0.s4 * g0.s5;
    int p = get_global_id(0), o = get_global_id(1), n = get_global_id(2);
    if (p >= P || o >= O)
        return;
    long i = ((long)n * O + o) * P + p;
    float v = sk_sum(ws, i, (long)get_global_size(2) * O * P, splits);
    conv_store(y, n, o, p, v, O, P, g1.s7 >> 1 & 1, bias, res TG_TAIL_ARGS);
}

/* Global size (P, O, N), any local size. */
__kernel void nn_conv_direct(__global const float *x, __global const float *w,
                             __global float *y, int8 g0, int8 g1,
                             __global const float *bias,
                             __global const float *res TG_TAIL_PARAMS)
{
    int C = g0.s0, H = g0.s1, W = g0.s2, O = g0.s3, OW = g0.s5, KH = g0.s6, KW = g0.s7;
    int groups = g1.s6, blocked = g1.s7 & 1, yblocked = g1.s7 >> 1 & 1;
    int P = g0.s4 * OW, Cg = C / groups, Mg = O / groups;
    int p = get_global_id(0), o = get_global_id(1), n = get_global_id(2);
    if (p >= P || o >= O)
        return;
    int ih0 = p / OW * g1.s0 - g1.s2, iw0 = p % OW * g1.s1 - g1.s3;
    long HW = (long)H * W;
    int ps = blocked ? 16 : 1, c0 = o / Mg * Cg;
    __global const float *wo = w + (long)o * Cg * KH * KW;
    float s = 0.0f;
    for (int c = 0; c < Cg; c++) {
        long co = chan_off(n, c0 + c, C, HW, blocked);
        for (int kh = 0; kh < KH; kh++) {
            int ih = ih0 + kh * g1.s4;
            if ((uint)ih >= (uint)H)
                continue;
            for (int kw = 0; kw < KW; kw++) {
                int iw = iw0 + kw * g1.s5;
                if ((uint)iw < (uint)W)
                    s = mad(wo[(c * KH + kh) * KW + kw], x[co + ((long)ih * W + iw) * ps], s);
            }
        }
    }
    conv_store(y, n, o, p, s, O, P, yblocked, bias, res TG_TAIL_ARGS);
}
