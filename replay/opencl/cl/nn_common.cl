/*
 * nn_common.cl - shared definitions of the heavy-op kernels (nn_*.cl),
 * passed by replay/opencl/nn_common.c's programs (ops_nn.c, ops_conv.c, ops_gemm.c) as part of the program prefix, after
 * the tg_epilogue function (ocl_epilogue_src; the identity for ops without
 * an epilogue) and before the op's own source.
 *
 * TG_FP64 (build option, set when the device has cl_khr_fp64): sums of
 * reductions, norms, softmax and average pools accumulate in double, as
 * the CPU kernels do; without it they accumulate in float.
 */
/*
 * The tail (ocl_tail_source, before tg_epilogue in the prefix): a fused
 * node the GEMM kernels run as they store, with its buffers as extra
 * kernel parameters (TG_TAIL_PARAMS, last in a storing kernel's list,
 * passed on as TG_TAIL_ARGS).  Without one a store is the plain one.
 */
#ifndef TG_TAIL
#define TG_TAIL_PARAMS
#define TG_TAIL_ARGS
#define TG_STORE(c, i, v) ((c)[(i)] = (v))
#endif

#if TG_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

/*
 * The head (ops_gemm.c's ocl_head_find; TG_HEAD defined first in the
 * prefix): a linear whose A is the output of a layer_norm over its rows
 * that nothing else reads reads the layer norm's input instead and
 * normalizes each element as it loads it (TG_HEAD_A: ((x - mean) * rstd)
 * * gamma + beta, as cl/nn_norm.cl's nn_layer_norm computes it), from row
 * statistics the kernel computes first; gamma (hg) and beta (hb) may be
 * NULL, heps is the norm's eps.  TG_HEAD_PARAMS / TG_HEAD_ARGS come before
 * the tail's in the kernels that take them (nn_gemm_sk, nn_gemm_simple).
 */
#ifdef TG_HEAD
#define TG_HEAD_PARAMS , __global const float *hg, __global const float *hb, float heps
#define TG_HEAD_ARGS , hg, hb, heps
#define TG_HEAD_A(v, mhi, mlo, rstd, k)                                                   \
    ((((((v) - (mhi)) - (mlo)) * (rstd)) * (hg ? hg[(k)] : 1.0f)) + (hb ? hb[(k)] : 0.0f))
#else
#define TG_HEAD_PARAMS
#define TG_HEAD_ARGS
#endif

/* The sum of v over a work-group of 64 items along dim 0, through part
 * (64 of them); every item gets it (nn_norm.cl's row kernels,
 * nn_gemm.cl's nn_gemm_thin). */
inline acc_t wg_sum64(acc_t v, __local acc_t *part)
{
    int i = get_local_id(0);
    part[i] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = 32; w > 0; w >>= 1) {
        if (i < w)
            part[i] += part[i + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    acc_t s = part[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

/*
 * The register tile of the tiled matmul and convolution kernels: a
 * work-group of 8x8 items computes a TM x TN = 64 x 128 tile of the
 * output; item (tx, ty) holds rows ty*8 .. +8 and columns tx*16 .. +16,
 * one float16 per row, so the inner loop is 8 vector FMAs per step of K
 * (PoCL maps a float16 onto one AVX-512 register; a GPU splits it).
 * Measured on PoCL (this EPYC, 512^3): 8x8 items of 8 rows x float16
 * ~23 GFLOP/s; float8 columns ~18; 16x16 items of 4x4 scalars ~10.
 * K is walked in slices of TK = 16 staged in __local memory.
 */
#define TM 64
#define TN 128
#define TK 16
#define RM 8
#define NITEMS 64

/* acc[i] += As[kk][ty*RM + i] * Bs[kk][tx*16 .. +16] over the slice. */
#define NN_TILE_FMA(As, Bs, acc, tx, ty)                                    \
    for (int kk_ = 0; kk_ < TK; kk_++) {                                    \
        float16 bv_ = vload16((tx), &(Bs)[kk_][0]);                         \
        for (int i_ = 0; i_ < RM; i_++)                                     \
            (acc)[i_] = mad((float16)((As)[kk_][(ty) * RM + i_]), bv_, (acc)[i_]); \
    }

/* The GPU tile (nn_gemm.cl's nn_gemm_sk, nn_conv.cl's nn_conv_sk): 16x16
 * items compute an SK_T x SK_T tile, K staged in __local slices of SK_K. */
#define SK_T 64
#define SK_K 16

/* acc[i][j] += As[kk][ty + 16 i] * Bs[kk][tx + 16 j] over the slice: item
 * (tx, ty) holds rows ty, ty+16, .. and columns tx, tx+16, .. of the tile. */
#define SK_TILE_FMA(As, Bs, acc, tx, ty)                                    \
    for (int kk_ = 0; kk_ < SK_K; kk_++) {                                  \
        float av_[4], bv_[4];                                               \
        for (int i_ = 0; i_ < 4; i_++)                                      \
            av_[i_] = (As)[kk_][(ty) + 16 * i_];                            \
        for (int j_ = 0; j_ < 4; j_++)                                      \
            bv_[j_] = (Bs)[kk_][(tx) + 16 * j_];                            \
        for (int i_ = 0; i_ < 4; i_++)                                      \
            for (int j_ = 0; j_ < 4; j_++)                                  \
                (acc)[i_][j_] = mad(av_[i_], bv_[j_], (acc)[i_][j_]);       \
    }

/*
 * One output's partials from the K splits, summed in split order (the
 * first's at ws[o], the next ones step floats apart): what the *_sk_sum
 * kernels and the last split of a tile (sk_last_split) store, so the two
 * ways give the same bits.  sk_sum_volatile is the last split's: it reads
 * partials that other work-groups wrote (see below); the sum kernels read
 * plain memory.
 */
#define SK_SUM_FN(name, qual)                                                      \
    inline float name(__global qual const float *ws, long o, long step, int splits) \
    {                                                                              \
        float v = 0.0f;                                                            \
        for (int t = 0; t < splits; t++)                                           \
            v += ws[o + t * step];                                                 \
        return v;                                                                  \
    }
SK_SUM_FN(sk_sum, )
SK_SUM_FN(sk_sum_volatile, volatile)

/*
 * K split in one launch (ocl_nn_node.fixup): every split of a tile writes
 * its partial tile to the partials' buffer as for the *_sk_sum kernel, then
 * counts itself in cnt[tile] (zero before the launch); the work-group that
 * counts last sums the tile's partials in split order (the sum kernel's
 * order: the same result) and stores them, and sets cnt[tile] back to zero
 * for the next launch.  Each item fences its partial stores device-wide
 * before its work-group counts itself, and the last work-group reads the
 * partials through volatile pointers (not from a cache filled before): the
 * pattern of CUDA's threadFenceReduction sample.  All items of the
 * work-group must call it; it returns nonzero in the last one's.  last:
 * an __local int of the kernel's.
 */
inline int sk_last_split(__global volatile int *cnt, long tile, int splits, __local int *last)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0 && get_local_id(1) == 0) {
        int is_last = atomic_inc(&cnt[tile]) == splits - 1;
        if (is_last)
            atomic_xchg(&cnt[tile], 0);
        *last = is_last;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int r = *last;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    return r;
}
