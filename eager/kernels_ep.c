/*
 * kernels_ep.c - CPU kernels of linear_ep and conv2d_ep: linear / conv2d
 * (kernels_matmul.c, kernels_conv.c) with the epilogue run by oneDNN as
 * post-ops on the output while it is still in cache: GRAPH_POST_ADD as a
 * binary add of the residual (same shape as the output), the activations
 * as eltwise post-ops (relu, gelu_erf, logistic, tanh, swish with alpha 1,
 * relu with the leaky slope).  Types and post codes were checked by
 * graph/infer_ep.c.
 *
 * The cases that never reach oneDNN (K = 0, an empty conv input: the
 * output is the bias) run the same epilogue in plain C here.
 */
#include <math.h>

#include "dnnl_util.h"

static float post_one(int64_t code, float v, float alpha)
{
    switch (code) {
    case GRAPH_POST_RELU: return v > 0.0f ? v : 0.0f;
    case GRAPH_POST_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case GRAPH_POST_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case GRAPH_POST_TANH: return tanhf(v);
    case GRAPH_POST_SILU: return v / (1.0f + expf(-v));
    case GRAPH_POST_LEAKY_RELU: return v > 0.0f ? v : alpha * v;
    }
    return v;
}

void eager_post_apply(float *y, int64_t n, const graph_ints *post, float alpha,
                      const float *res)
{
    for (int k = 0; k < post->n; k++) {
        int64_t code = post->v[k];
        if (code == GRAPH_POST_ADD) {
            for (int64_t i = 0; res && i < n; i++)
                y[i] += res[i];
            continue;
        }
        for (int64_t i = 0; i < n; i++)
            y[i] = post_one(code, y[i], alpha);
    }
}

tg_status eager_kernel_linear_ep(const eager_kargs *a)
{
    const graph_linear_ep_attrs *at = a->attrs;
    return eager_linear_run(a, &at->post, at->alpha);
}

tg_status eager_kernel_conv2d_ep(const eager_kargs *a)
{
    const graph_conv2d_ep_attrs *at = a->attrs;
    eager_conv_geom geom = {&at->stride, &at->padding, &at->dilation, at->groups};
    return eager_conv_run(a, &geom, &at->post, at->alpha);
}
