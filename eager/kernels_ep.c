/*
 * kernels_ep.c - CPU kernels of linear_ep and conv2d_ep: linear / conv2d
 * (kernels_matmul.c, kernels_conv.c) with the epilogue run by oneDNN as
 * post-ops on the output while it is still in cache: GRAPH_POST_ADD as a
 * binary add of the residual (same shape as the output), the activations
 * as eltwise post-ops (relu, gelu_erf, logistic, tanh, swish with alpha 1,
 * relu with the leaky slope, hardswish).  Types and post codes were checked by
 * graph/infer_ep.c.  An epilogue with a CLIP, RELU or HARDSIGMOID step
 * runs in C (below) after oneDNN: oneDNN's clip sends NaN to the lower
 * bound and its relu sends NaN to 0, where clip and relu let it pass, and
 * oneDNN 2.6 has no hardsigmoid (dnnl_util.c, prim_build).
 *
 * The same epilogue in vectorized C (eager_post_apply) serves the cases
 * that never reach oneDNN (K = 0, an empty conv input: the output is the
 * bias) and the implementations whose post-ops are slow (oneDNN's gemm
 * convolution, i.e. every conv on plain NCHW: dnnl_util.c decides).
 */
#include "dnnl_util.h"
#include "vmath.h"

/* Elements per block: a block stays in L1 through every step. */
#define POST_BLOCK 4096

/* GRAPH_POST_HARDSIGMOID: the ops ONNX's HardSigmoid (alpha 1/6, beta
 * 1/2) imports as, in their order (no FMA: C11 mode does not contract),
 * so a fused step gives their bits; NaN passes the clip. */
static inline float hard_sigmoid(float x)
{
    float v = x * (1.0f / 6.0f) + 0.5f;
    v = v < 0.0f ? 0.0f : v;
    return v > 1.0f ? 1.0f : v;
}

/* One step over a block.  relu/leaky as selects so NaN passes through
 * relu as 0 like oneDNN's (x > 0 is false for NaN). */
static void post_step(float *restrict y, const float *restrict r, int64_t n, int64_t code,
                      graph_post_prm prm)
{
    const float alpha = prm.alpha, lo = prm.clip_min, hi = prm.clip_max;
    switch (code) {
    case GRAPH_POST_ADD:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] += r[i];
        break;
    case GRAPH_POST_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] > 0.0f || y[i] != y[i] ? y[i] : 0.0f; /* as relu: NaN passes */
        break;
    case GRAPH_POST_LEAKY_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] > 0.0f ? y[i] : alpha * y[i];
        break;
    case GRAPH_POST_GELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = vm_geluf(y[i]);
        break;
    case GRAPH_POST_SIGMOID:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = vm_sigmoidf(y[i]);
        break;
    case GRAPH_POST_TANH:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = vm_tanhf(y[i]);
        break;
    case GRAPH_POST_SILU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = vm_siluf(y[i]);
        break;
    case GRAPH_POST_HARDSIGMOID: /* as ONNX HardSigmoid imports: mul, add, clip */
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = hard_sigmoid(y[i]);
        break;
    case GRAPH_POST_HARDSWISH:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] * hard_sigmoid(y[i]);
        break;
    case GRAPH_POST_CLIP: /* as the clip kernel (kernels_unary.c): NaN passes */
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] < lo ? lo : y[i];
            y[i] = v > hi ? hi : v;
        }
        break;
    }
}

void eager_post_apply(float *y, int64_t n, const graph_ints *post, graph_post_prm prm,
                      const float *res, int nthreads)
{
    int64_t nblocks = (n + POST_BLOCK - 1) / POST_BLOCK;
#pragma omp parallel for num_threads(nthreads) if (n >= EAGER_PAR_MIN && nthreads > 1) \
    schedule(static)
    for (int64_t b = 0; b < nblocks; b++) {
        int64_t at = b * POST_BLOCK, len = n - at < POST_BLOCK ? n - at : POST_BLOCK;
        for (int k = 0; k < post->n; k++)
            if (post->v[k] != GRAPH_POST_ADD || res)
                post_step(y + at, res ? res + at : NULL, len, post->v[k], prm);
    }
}

tg_status eager_kernel_linear_ep(const eager_kargs *a)
{
    const graph_linear_ep_attrs *at = a->attrs;
    return eager_linear_run(a, &at->post, GRAPH_POST_PRM(at));
}

tg_status eager_kernel_conv2d_ep(const eager_kargs *a)
{
    const graph_conv2d_ep_attrs *at = a->attrs;
    eager_conv_geom geom = {&at->stride, &at->padding, &at->dilation, at->groups};
    return eager_conv_run(a, &geom, &at->post, GRAPH_POST_PRM(at));
}
