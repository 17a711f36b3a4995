/*
 * nn_gemm.cl - matmul, linear and linear_ep: C = A x B (+ bias) (+ the
 * epilogue tg_epilogue), over a broadcast batch.  Prefixed with
 * nn_common.cl (see there).
 *
 * A is M x K, element (m, k) at a[m*ars + k*acs]; B is K x N, (k, n) at
 * b[k*brs + n*bcs]: any strides, so transposed operands, linear's w [N,K]
 * (B with brs 1, bcs K) and 1-D vectors need no copy.  C is M x N
 * row-major at c[batch*M*N].  Batch index z (the last NDRange dim) is
 * split over up to 8 dims bdim[0..nbd) (row-major); batch dim d moves A
 * by bsa[d] and B by bsb[d] elements (0 where it broadcasts).
 *
 * nn_gemm_tiled: a work-group of 8x8 items computes a 64x128 tile of C
 * (the register tile of nn_common.cl).  K is walked in slices of 16: the
 * 64x16 slice of A and the 16x128 slice of B go to __local memory, each
 * item loading 16 + 32 elements; out-of-range elements load as 0, so any
 * M, N, K work (stores are bounds-checked).
 *
 * nn_gemm_simple: one item per output, for shapes the 64x128 tile would
 * mostly waste (M or N below 16: matrix-vector products, tiny heads).
 *
 * nn_gemm_thin: the same shapes on the GPU tile's devices with K of 64 or
 * more: a work-group of 64 items per output, K split over them.
 *
 * nn_gemm_sk (+ nn_gemm_sk_sum): our tile for GPUs, below: 64x64 tiles of
 * 16x16 items with K split over work-groups so that a small product still
 * fills the device (ops_gemm.c picks it by device type, TG_OPENCL_TILE).
 *
 * nn_gemm_post, nn_conv_unblock, nn_conv_blk_post: around CLBlast's
 * calls (ops_gemm.c's CLBlast path), below.
 *
 * bias: bias[n] per column (linear), or NULL.  res: the residual of the
 * epilogue, with C's layout, or NULL.
 */
/* Offsets of batch z's matrices in A and B. */
inline void batch_offsets(long z, int nbd, int8 bdim, int8 bsa, int8 bsb, long *ao,
                          long *bo)
{
    int dim[8], sa[8], sb[8];
    vstore8(bdim, 0, dim);
    vstore8(bsa, 0, sa);
    vstore8(bsb, 0, sb);
    *ao = 0;
    *bo = 0;
    for (int d = nbd - 1; d >= 0; d--) {
        long i = z % dim[d];
        z /= dim[d];
        *ao += i * sa[d];
        *bo += i * sb[d];
    }
}

#ifdef TG_HEAD
/* The layer norm statistics of the k elements x[0], x[st], ..: mean as
 * mhi + mlo (float hi and lo parts) and 1 / sqrt(var + eps), two passes
 * as nn_layer_norm. */
inline void head_row_stats(__global const float *x, long st, int k, float eps, float *mhi,
                           float *mlo, float *rstd)
{
    acc_t s = 0;
    for (int i = 0; i < k; i++)
        s += x[i * st];
    acc_t mean = s / (acc_t)k;
    s = 0;
    for (int i = 0; i < k; i++) {
        acc_t t = x[i * st] - mean;
        s += t * t;
    }
    *rstd = (float)(1 / sqrt(s / (acc_t)k + (acc_t)eps));
    *mhi = (float)mean;
    *mlo = (float)(mean - (acc_t)*mhi);
}

/* The statistics of rows m0 .. m0 + SK_T - 1 (those below M) of A (rows
 * at a + m*ars, elements acs apart) into the __local arrays, by the
 * 16x16 work-group: 4 items per row, each over a quarter of K, summed
 * through part; every item must call it (it ends with a barrier). */
inline void head_tile_stats(__global const float *a, long ars, long acs, int m0, int M, int K,
                            float eps, __local float *mhi, __local float *mlo,
                            __local float *rstd, __local acc_t *part)
{
    int lid = get_local_id(1) * 16 + get_local_id(0), r = lid / 4, q = lid % 4, m = m0 + r;
    __global const float *x = a + (long)m * ars;
    acc_t s = 0;
    for (int k = q; m < M && k < K; k += 4)
        s += x[k * acs];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    acc_t mean = (part[r * 4] + part[r * 4 + 1] + part[r * 4 + 2] + part[r * 4 + 3]) / (acc_t)K;
    barrier(CLK_LOCAL_MEM_FENCE);
    s = 0;
    for (int k = q; m < M && k < K; k += 4) {
        acc_t t = x[k * acs] - mean;
        s += t * t;
    }
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (q == 0) {
        acc_t var = (part[r * 4] + part[r * 4 + 1] + part[r * 4 + 2] + part[r * 4 + 3]) / (acc_t)K;
        rstd[r] = (float)(1 / sqrt(var + (acc_t)eps));
        mhi[r] = (float)mean;
        mlo[r] = (float)(mean - (acc_t)mhi[r]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

/* Bias, epilogue and store of output element ci (column n). */
inline void store_out(__global float *c, long ci, float v, __global const float *bias, int n,
                      __global const float *res TG_TAIL_PARAMS)
{
    if (bias)
        v += bias[n];
    TG_STORE(c, ci, tg_epilogue(v, res, ci));
}

__kernel __attribute__((reqd_work_group_size(8, 8, 1)))
void nn_gemm_tiled(__global const float *a, long ars, long acs,
                   __global const float *b, long brs, long bcs,
                   __global float *c, int M, int N, int K,
                   int nbd, int8 bdim, int8 bsa, int8 bsb,
                   __global const float *bias,
                   __global const float *res TG_TAIL_PARAMS)
{
    __local float As[TK][TM];
    __local float Bs[TK][TN];
    int tx = get_local_id(0), ty = get_local_id(1);
    int lid = ty * 8 + tx;
    int m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
    long z = get_group_id(2);
    long ao, bo;
    batch_offsets(z, nbd, bdim, bsa, bsb, &ao, &bo);
    long co = z * M * N;
    float16 acc[RM];
    for (int i = 0; i < RM; i++)
        acc[i] = (float16)(0.0f);
    /* Neighbouring items load neighbouring addresses: along k unless A
     * is stored transposed (ars 1), along n unless B is (brs 1). */
    int a_kfast = acs == 1 || ars != 1;
    int b_nfast = bcs == 1 || brs != 1;
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int r = 0; r < TM * TK / NITEMS; r++) {
            int idx = lid + r * NITEMS;
            int kk = a_kfast ? idx % TK : idx / TM;
            int mm = a_kfast ? idx / TK : idx % TM;
            int m = m0 + mm, k = k0 + kk;
            As[kk][mm] = (m < M && k < K) ? a[ao + m * ars + k * acs] : 0.0f;
        }
        for (int r = 0; r < TN * TK / NITEMS; r++) {
            int idx = lid + r * NITEMS;
            int kk = b_nfast ? idx / TN : idx % TK;
            int nn = b_nfast ? idx % TN : idx / TK;
            int n = n0 + nn, k = k0 + kk;
            Bs[kk][nn] = (n < N && k < K) ? b[bo + k * brs + n * bcs] : 0.0f;
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
            int n = n0 + tx * 16 + j;
            if (m < M && n < N)
                store_out(c, co + (long)m * N + n, o[j], bias, n, res TG_TAIL_ARGS);
        }
    }
}

/* Global size (N, M, batch), any local size. */
__kernel void nn_gemm_simple(__global const float *a, long ars, long acs,
                             __global const float *b, long brs, long bcs,
                             __global float *c, int M, int N, int K,
                             int nbd, int8 bdim, int8 bsa, int8 bsb,
                             __global const float *bias,
                             __global const float *res TG_HEAD_PARAMS TG_TAIL_PARAMS)
{
    int n = get_global_id(0), m = get_global_id(1);
    long z = get_global_id(2);
    if (n >= N || m >= M)
        return;
    long ao, bo;
    batch_offsets(z, nbd, bdim, bsa, bsb, &ao, &bo);
    float s = 0.0f;
#ifdef TG_HEAD
    /* the row's statistics, then the normalized row times column n */
    float mhi, mlo, rstd;
    head_row_stats(a + ao + m * ars, acs, K, heps, &mhi, &mlo, &rstd);
    for (int k = 0; k < K; k++)
        s = mad(TG_HEAD_A(a[ao + m * ars + k * acs], mhi, mlo, rstd, k),
                b[bo + k * brs + n * bcs], s);
#else
    for (int k = 0; k < K; k++)
        s = mad(a[ao + m * ars + k * acs], b[bo + k * brs + n * bcs], s);
#endif
    store_out(c, z * M * N + (long)m * N + n, s, bias, n, res TG_TAIL_ARGS);
}

/*
 * nn_gemm_thin: one output element per 64-item work-group, for products
 * with M or N below 16 on a GPU (few outputs, each a long dot product,
 * which one item per output walks serially): item i takes k = i, i + 64,
 * ... (neighbouring items read neighbouring elements where A's rows and
 * B's columns are contiguous in k, as a linear's are) and the work-group
 * sums the partial dot products in __local memory.  With a head the
 * work-group first computes its row's statistics the same way.
 * Global size (64 * N, M, batch), local (64, 1, 1).
 */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void nn_gemm_thin(__global const float *a, long ars, long acs,
                  __global const float *b, long brs, long bcs,
                  __global float *c, int M, int N, int K,
                  int nbd, int8 bdim, int8 bsa, int8 bsb,
                  __global const float *bias,
                  __global const float *res TG_HEAD_PARAMS TG_TAIL_PARAMS)
{
    __local acc_t part[64];
    int i = get_local_id(0), n = get_group_id(0), m = get_group_id(1);
    long z = get_group_id(2);
    long ao, bo;
    batch_offsets(z, nbd, bdim, bsa, bsb, &ao, &bo);
    __global const float *ar = a + ao + (long)m * ars, *bn = b + bo + (long)n * bcs;
    float s = 0.0f;
#ifdef TG_HEAD
    acc_t t = 0;
    for (int k = i; k < K; k += 64)
        t += ar[k * acs];
    acc_t mean = wg_sum64(t, part) / (acc_t)K;
    t = 0;
    for (int k = i; k < K; k += 64) {
        acc_t d = ar[k * acs] - mean;
        t += d * d;
    }
    float rstd = (float)(1 / sqrt(wg_sum64(t, part) / (acc_t)K + (acc_t)heps));
    float mhi = (float)mean, mlo = (float)(mean - (acc_t)mhi);
    for (int k = i; k < K; k += 64)
        s = mad(TG_HEAD_A(ar[k * acs], mhi, mlo, rstd, k), bn[k * brs], s);
#else
    for (int k = i; k < K; k += 64)
        s = mad(ar[k * acs], bn[k * brs], s);
#endif
    float v = (float)wg_sum64(s, part);
    if (i == 0)
        store_out(c, z * M * N + (long)m * N + n, v, bias, n, res TG_TAIL_ARGS);
}

/*
 * nn_gemm_post: the bias and epilogue of a product CLBlast computed
 * (the CLBlast path, ops_gemm.c and ops_conv.c, for linear_ep, conv2d_ep and biased linear
 * and conv2d), in place on y's n elements: y[i] = tg_epilogue(y[i] +
 * bias[(i / inner) % nb], res, i).  bias may be NULL; inner is 1 for
 * linear (bias per column), H*W for conv (per channel).
 */
__kernel void nn_gemm_post(__global float *y, long n, __global const float *bias, long inner,
                           int nb, __global const float *res TG_TAIL_PARAMS)
{
    long i = get_global_id(0);
    if (i >= n)
        return;
    float v = y[i];
    if (bias)
        v += bias[(i / inner) % nb];
    TG_STORE(y, i, tg_epilogue(v, res, i));
}

/*
 * The CLBlast path of conv2d_blk (blocked [N, ceil(C/16), H, W, 16]
 * tensors, ops_conv.c): CLBlast's convgemm reads and writes NCHW.
 *
 * nn_conv_unblock: x blocked -> t plain [N, C, H, W] (n = N*C*HW items,
 * one per element of t; the lanes past C are not read).
 */
__kernel void nn_conv_unblock(__global const float *x, __global float *t, long n, int C,
                              long HW)
{
    long i = get_global_id(0);
    if (i >= n)
        return;
    long p = i % HW, nc = i / HW;
    int c = (int)(nc % C);
    long img = nc / C;
    t[i] = x[((img * ((C + 15) / 16) + c / 16) * HW + p) * 16 + c % 16];
}

/*
 * nn_conv_blk_post: t plain [N, O, P] (CLBlast's output) -> y blocked
 * [N, ceil(O/16), P, 16] with bias and epilogue, the residual blocked as
 * y (n = y's elements, one item each); the lanes past O are written 0.
 */
__kernel void nn_conv_blk_post(__global const float *t, __global float *y, long n, int O,
                               long P, __global const float *bias,
                               __global const float *res)
{
    long i = get_global_id(0);
    if (i >= n)
        return;
    int lane = (int)(i % 16);
    long r = i / 16, p = r % P, nb = r / P;
    int OB = (O + 15) / 16, o = (int)(nb % OB) * 16 + lane;
    if (o >= O) {
        y[i] = 0.0f;
        return;
    }
    float v = t[(nb / OB * O + o) * P + p];
    if (bias)
        v += bias[o];
    y[i] = tg_epilogue(v, res, i);
}

/*
 * nn_gemm_sk: the GPU-shaped tile.  A work-group of 16x16 items computes a
 * 64x64 tile of C, item (tx, ty) the rows ty + 16i and columns tx + 16j
 * (i, j < 4: neighbouring items touch neighbouring columns, so loads from
 * B, stores to C and reads of the __local tiles are unit-stride across a
 * warp).  K is walked in slices of 16 staged in __local memory.  Small
 * products fill a big GPU only if K is split too: NDRange dim 2 is
 * batch * splits, and split s sums K in [s*kper, (s+1)*kper).  With one
 * split the tile is finished here (bias, epilogue); with more, each split
 * writes its partial tile to ws[s][z][M][N] and nn_gemm_sk_sum finishes,
 * or, with cnt (zeroed tile counters, not NULL), the last split of each
 * tile to finish does (nn_common.cl's sk_last_split): one launch.
 * SK_T and SK_K: nn_common.cl (nn_conv.cl's nn_conv_sk has the same tile).
 */
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void nn_gemm_sk(__global const float *a, long ars, long acs,
                __global const float *b, long brs, long bcs,
                __global float *c, int M, int N, int K,
                int nbd, int8 bdim, int8 bsa, int8 bsb,
                __global const float *bias, __global const float *res,
                int splits, int kper, __global float *ws,
                __global volatile int *cnt TG_HEAD_PARAMS TG_TAIL_PARAMS)
{
    __local float As[SK_K][SK_T + 1];
    __local float Bs[SK_K][SK_T];
    __local int last;
    int tx = get_local_id(0), ty = get_local_id(1);
    int lid = ty * 16 + tx;
    int m0 = get_group_id(1) * SK_T, n0 = get_group_id(0) * SK_T;
    long zs = get_group_id(2), nbatch = get_num_groups(2) / splits;
    long z = zs / splits;
    int s = (int)(zs % splits);
    int kb = s * kper, ke = min(K, kb + kper);
    long ao, bo;
    batch_offsets(z, nbd, bdim, bsa, bsb, &ao, &bo);
#ifdef TG_HEAD
    __local float h_mhi[SK_T], h_mlo[SK_T], h_rstd[SK_T];
    __local acc_t h_part[256];
    head_tile_stats(a + ao, ars, acs, m0, M, K, heps, h_mhi, h_mlo, h_rstd, h_part);
#endif
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    /* Loads: A along k when its rows are contiguous in k (acs 1), else
     * along m; B along n unless stored transposed (bcs != 1, brs 1). */
    int a_kfast = acs == 1;
    int b_nfast = bcs == 1 || brs != 1;
    for (int k0 = kb; k0 < ke; k0 += SK_K) {
        for (int r = 0; r < 4; r++) {
            int idx = lid + r * 256;
            int kk = a_kfast ? idx % SK_K : idx / SK_T;
            int mm = a_kfast ? idx / SK_K : idx % SK_T;
            int m = m0 + mm, k = k0 + kk;
#ifdef TG_HEAD
            As[kk][mm] = (m < M && k < ke) ? TG_HEAD_A(a[ao + m * ars + k * acs], h_mhi[mm],
                                                       h_mlo[mm], h_rstd[mm], k)
                                           : 0.0f;
#else
            As[kk][mm] = (m < M && k < ke) ? a[ao + m * ars + k * acs] : 0.0f;
#endif
            kk = b_nfast ? idx / SK_T : idx % SK_K;
            int nn = b_nfast ? idx % SK_T : idx / SK_K;
            int n = n0 + nn;
            k = k0 + kk;
            Bs[kk][nn] = (n < N && k < ke) ? b[bo + k * brs + n * bcs] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        SK_TILE_FMA(As, Bs, acc, tx, ty);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    long co = z * M * N;
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            if (m < M && n < N) {
                if (splits == 1)
                    store_out(c, co + (long)m * N + n, acc[i][j], bias, n, res TG_TAIL_ARGS);
                else
                    ws[((long)s * nbatch + z) * M * N + (long)m * N + n] = acc[i][j];
            }
        }
    }
    if (splits == 1 || !cnt)
        return;
    long tile = (z * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) + get_group_id(0);
    if (!sk_last_split(cnt, tile, splits, &last))
        return;
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            if (m < M && n < N) {
                long o = (long)m * N + n;
                float v = sk_sum_volatile(ws, z * M * N + o, nbatch * M * N, splits);
                store_out(c, co + o, v, bias, n, res TG_TAIL_ARGS);
            }
        }
    }
}

/* Global size (N, M, batch), any local size: the splits' partial tiles
 * summed in order, then bias and epilogue. */
__kernel void nn_gemm_sk_sum(__global const float *ws, int splits, long nbatch,
                             __global float *c, int M, int N,
                             __global const float *bias,
                             __global const float *res TG_TAIL_PARAMS)
{
    int n = get_global_id(0), m = get_global_id(1);
    long z = get_global_id(2);
    if (n >= N || m >= M)
        return;
    long i = z * M * N + (long)m * N + n;
    store_out(c, i, sk_sum(ws, i, nbatch * M * N, splits), bias, n, res TG_TAIL_ARGS);
}
