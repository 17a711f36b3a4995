/*
 * kernels_conv.c - CPU kernel of conv2d (f32, NCHW), through oneDNN's
 * convolution primitive.  Shapes and attributes were checked by
 * graph/infer_linalg.c.
 *
 * Layout.  Source and destination are the tensors' own plain NCHW buffers
 * and the weights their plain OIHW (GOIHW when grouped: the same bytes),
 * so nothing is copied; choosing blocked layouts is left to the
 * optimizer, which can keep them across layers.  For plain NCHW src/dst
 * oneDNN 2.6 has two implementations: im2col + JIT GEMM ("x64:gemm:jit",
 * which takes OIHW weights, so asking for format "any" weights picks the
 * same OIHW and would only add a reorder) and the reference loops (~1000x
 * slower).  Measured on one Zen 5 core, 3x3 64->64 56x56: gemm:jit
 * 2.9-3.4 ms; the blocked brgconv path would be ~2.1 ms (+0.25 ms of
 * reorders if the tensors stayed NCHW), ~4x faster on depthwise, slower
 * on 1x1: a layout decision for the optimizer, not for one eager call.
 *
 * Algorithm: direct ("auto" picks the same implementation; Winograd is
 * unimplemented for plain layouts in oneDNN 2.6).
 *
 * Special cases: an empty output returns at once; an empty input (C, H or
 * W is 0) makes every output the bias (or 0) without calling oneDNN.
 */
#include "dnnl_util.h"

/* Every output element is its channel's bias, or 0 without one. */
static void fill_bias(const eager_kargs *a)
{
    const graph_type *y = a->out_type;
    int64_t plane = y->dim[2] * y->dim[3];
    const float *b = a->nin > 2 ? a->in[2] : NULL;
    float *out = a->out[0];
    for (int64_t n = 0; n < y->dim[0]; n++)
        for (int64_t o = 0; o < y->dim[1]; o++) {
            float *p = out + (n * y->dim[1] + o) * plane;
            float v = b ? b[o] : 0.0f;
            for (int64_t i = 0; i < plane; i++)
                p[i] = v;
        }
}

/* The memory descriptors of x, w (grouped when groups > 1), b, y. */
static dnnl_status_t conv_mds(const eager_kargs *a, int64_t groups,
                              dnnl_memory_desc_t md[4])
{
    const graph_type *x = &a->in_type[0], *w = &a->in_type[1];
    const graph_type *y = a->out_type;
    dnnl_dims_t dx = {x->dim[0], x->dim[1], x->dim[2], x->dim[3]};
    dnnl_dims_t dy = {y->dim[0], y->dim[1], y->dim[2], y->dim[3]};
    dnnl_dims_t db = {y->dim[1]};
    dnnl_dims_t dw = {w->dim[0], w->dim[1], w->dim[2], w->dim[3]};
    dnnl_dims_t dgw = {groups, w->dim[0] / groups, w->dim[1], w->dim[2],
                       w->dim[3]};
    dnnl_status_t s;
    s = dnnl_memory_desc_init_by_tag(&md[0], 4, dx, dnnl_f32, dnnl_nchw);
    if (s == dnnl_success)
        s = groups > 1 ? dnnl_memory_desc_init_by_tag(&md[1], 5, dgw, dnnl_f32,
                                                      dnnl_goihw)
                       : dnnl_memory_desc_init_by_tag(&md[1], 4, dw, dnnl_f32,
                                                      dnnl_oihw);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[2], 1, db, dnnl_f32, dnnl_a);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[3], 4, dy, dnnl_f32, dnnl_nchw);
    return s;
}

tg_status eager_kernel_conv2d(const eager_kargs *a)
{
    const graph_conv2d_attrs *at = a->attrs;
    if (graph_type_numel(a->out_type) == 0)
        return TG_OK;
    if (graph_type_numel(&a->in_type[0]) == 0) {
        fill_bias(a);
        return TG_OK;
    }
    int64_t stride[2], dil[2], pad[4];
    eager_ints_pair(&at->stride, 1, stride);
    eager_ints_pair(&at->dilation, 1, dil);
    eager_ints_pad4(&at->padding, pad);
    /* oneDNN counts dilation from 0 (0 = dense kernel). */
    dnnl_dims_t ds = {stride[0], stride[1]}, dd = {dil[0] - 1, dil[1] - 1};
    dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2], pad[3]};
    dnnl_memory_desc_t md[4];
    dnnl_convolution_desc_t desc;
    int has_bias = a->nin > 2;
    dnnl_status_t s = conv_mds(a, at->groups, md);
    if (s == dnnl_success)
        s = dnnl_dilated_convolution_forward_desc_init(
            &desc, dnnl_forward_inference, dnnl_convolution_direct, &md[0],
            &md[1], has_bias ? &md[2] : NULL, &md[3], ds, dd, pl, pr);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "convolution descriptor", s);
    eager_dnnl_arg args[4] = {
        {DNNL_ARG_SRC, &md[0], a->in[0]},
        {DNNL_ARG_WEIGHTS, &md[1], a->in[1]},
        {DNNL_ARG_DST, &md[3], a->out[0]},
        {DNNL_ARG_BIAS, &md[2], has_bias ? a->in[2] : NULL},
    };
    return eager_dnnl_run(a, "convolution", &desc, args, has_bias ? 4 : 3);
}
