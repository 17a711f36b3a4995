/*
 * kernels_conv.c - CPU kernels of conv2d, conv_transpose2d and conv2d's
 * gradients conv2d_grad_weight and conv2d_grad_input (f32, NCHW), through
 * oneDNN's convolution (forward and backward) and deconvolution primitives.
 * Shapes and attributes were checked by graph/infer_linalg.c.
 *
 * Layout.  Source and destination are the tensors' own plain NCHW buffers
 * and the weights their plain OIHW (GOIHW when grouped: the same bytes).
 * For plain NCHW src/dst oneDNN 2.6 has two implementations: im2col + JIT
 * GEMM ("x64:gemm:jit", which takes OIHW weights) and the reference loops
 * (~1000x slower); its direct and depthwise JIT kernels (jit, brgconv,
 * jit_dw) want blocked or NHWC tensors.  So a conv with a kernel larger
 * than 1x1 that is grouped (any width) or has 16 or more channels in and
 * out is described with format "any"
 * everywhere, its tensors converted at each run (conv_prepare), unless
 * oneDNN's choice then is GEMM or a reference loop; keeping blocked
 * layouts across layers (no conversions in between) is left to the
 * optimizer (-O3's layout pass).  Measured, one thread: the training
 * CNN's 3x3 32->64 on 14x14, batch 64: gemm:jit 4.8 ms, brgconv 2.0 ms +
 * 0.45 ms of reorders; resnet18 replayed at -O0 31-34 -> 21-22 ms,
 * mobilenet_v2 at -O2 19.3 -> 8.2 ms (also at TG_CPU=avx2
 * ONEDNN_MAX_CPU_ISA=AVX2, -O0: 26 -> 12 ms, nChw8c jit_dw:avx2).  The
 * choice is a rule on the shapes, not a measurement, so eager and replay
 * compute the same bits.
 *
 * Algorithm: direct ("auto" picks the same implementation; Winograd is
 * unimplemented for plain layouts in oneDNN 2.6).
 *
 * Special cases: an empty output returns at once; an empty input (C, H or
 * W is 0) makes every output the bias (or 0) without calling oneDNN.
 *
 * Prepared state: given a slot (replay), the primitive is made once; when
 * the weights are also fixed (eager_kargs.fixed_in: a constant or param)
 * they are described as format "any" and reordered once, at the first
 * call, into the layout oneDNN prefers (for plain NCHW src/dst that is
 * usually OIHW itself, and then nothing is copied).  conv2d_ep
 * (kernels_ep.c) runs here too, its epilogue as oneDNN post-ops, except
 * on the gemm implementation (the one for plain NCHW), whose post-ops are
 * a scalar reference loop in oneDNN 2.6: there the epilogue runs in
 * vectorized C right after the convolution (eager_dnnl_spec.post).
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
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

/* The convolution descriptor; wany: weights as format any; blocked: source
 * and destination too. */
static dnnl_status_t conv_desc(const eager_kargs *a, const eager_conv_geom *geom,
                               const dnnl_memory_desc_t md[4], int wany, int blocked,
                               dnnl_convolution_desc_t *desc)
{
    int64_t stride[2], dil[2], pad[4];
    graph_ints_pair(geom->stride, 1, stride);
    graph_ints_pair(geom->dilation, 1, dil);
    graph_ints_pad4(geom->padding, pad);
    /* oneDNN counts dilation from 0 (0 = dense kernel). */
    dnnl_dims_t ds = {stride[0], stride[1]}, dd = {dil[0] - 1, dil[1] - 1};
    dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2], pad[3]};
    dnnl_memory_desc_t xmd = md[0], wmd = md[1], ymd = md[3];
    dnnl_status_t s = dnnl_success;
    if (wany || blocked)
        s = dnnl_memory_desc_init_by_tag(&wmd, md[1].ndims, md[1].dims, dnnl_f32,
                                         dnnl_format_tag_any);
    if (s == dnnl_success && blocked)
        s = dnnl_memory_desc_init_by_tag(&xmd, 4, md[0].dims, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success && blocked)
        s = dnnl_memory_desc_init_by_tag(&ymd, 4, md[3].dims, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_dilated_convolution_forward_desc_init(
            desc, dnnl_forward_inference, dnnl_convolution_direct, &xmd, &wmd,
            a->nin > 2 ? &md[2] : NULL, &ymd, ds, dd, pl, pr);
    return s;
}

/*
 * Describes the convolution (with its epilogue) and prepares it.  With a
 * state slot and fixed weights, oneDNN picks the weights' layout and the
 * prim keeps them reordered (once) into it.  blocked: source, destination
 * (and weights that are not fixed) as format any, converted at every run
 * (eager_dnnl_spec.convert), as the backward kernels do.
 */
static tg_status conv_build(const eager_kargs *a, const eager_conv_geom *geom,
                            const graph_ints *post, graph_post_prm prm, int blocked,
                            eager_dnnl_prim **out)
{
    eager_dnnl_spec sp = {"convolution", NULL, NULL, 3,
                          {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, {{0}}, -1};
    dnnl_memory_desc_t md[4];
    dnnl_convolution_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    int res_index = -1, wany = a->state && (a->fixed_in & 2u);
    dnnl_status_t s = conv_mds(a, geom->groups, md);
    if (s == dnnl_success)
        s = conv_desc(a, geom, md, wany, blocked, &desc);
    if (s == dnnl_success)
        s = eager_dnnl_post_attr(post, prm, &md[3], &attr, &res_index);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "convolution descriptor", s);
    sp.md[0] = md[0], sp.md[1] = md[1], sp.md[2] = md[3];
    sp.packed = wany ? 1 : -1;
    sp.convert = blocked ? (wany ? 5u : 7u) : 0u;
    if (a->nin > 2) {
        sp.arg[sp.nargs] = DNNL_ARG_BIAS;
        sp.md[sp.nargs++] = md[2];
    }
    if (res_index >= 0) {
        sp.arg[sp.nargs] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(res_index) | DNNL_ARG_SRC_1;
        sp.md[sp.nargs++] = md[3];
    }
    sp.desc = &desc;
    sp.attr = attr;
    sp.post = post;
    sp.prm = prm;
    tg_status st = eager_dnnl_prim_new(a, &sp, out);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/*
 * Blocked or plain.  On plain NCHW oneDNN runs im2col + GEMM; its direct
 * and depthwise JIT kernels want blocked tensors.  Where the convolution is
 * wide enough for them to pay for the two reorders (at least 16 input and
 * output channels, or grouped, whose GEMM per group is the slow case at
 * any width; a kernel larger than 1x1: a 1x1 is a GEMM already) and
 * the blocked form is used (with a residual in its epilogue, the epilogue
 * runs in C on the converted output: the residual is in the plain layout)
 * when oneDNN's choice for it is neither a reference loop nor
 * GEMM.  Shape-based, not measured, so that eager and replay make the same
 * choice and so compute the same bits.  One thread: training CNN's conv
 * 32->64 3x3 on 14x14, batch 64: 4.8 ms (gemm:jit) -> 2.0 ms (brgconv) +
 * 0.45 ms of reorders; replayed at -O2, mobilenet_v2 19.3 -> 8.2 ms and
 * efficientnet_b0 38 -> 12.4 ms (their depthwise convs: jit_dw).
 */
static tg_status conv_prepare(const eager_kargs *a, const eager_conv_geom *geom,
                              const graph_ints *post, graph_post_prm prm, eager_dnnl_prim **out)
{
    const graph_type *x = &a->in_type[0], *w = &a->in_type[1];
    /* grouped and depthwise: any width (GEMM per group is the slow case) */
    int blocked = w->dim[2] * w->dim[3] > 1 &&
                  (geom->groups > 1 || (x->dim[1] >= 16 && w->dim[0] >= 16));
    if (blocked) {
        tg_status st = conv_build(a, geom, post, prm, 1, out);
        if (st == TG_OK) {
            const char *impl = eager_dnnl_prim_impl(*out);
            if (!eager_dnnl_impl_is_ref(impl) && !strstr(impl, "gemm"))
                return TG_OK;
            eager_dnnl_prim_free(*out);
            *out = NULL;
        } else if (a->err && a->errlen) {
            a->err[0] = '\0'; /* no blocked form here: the plain one */
        }
    }
    return conv_build(a, geom, post, prm, 0, out);
}

tg_status eager_conv_run(const eager_kargs *a, const eager_conv_geom *geom,
                         const graph_ints *post, graph_post_prm prm)
{
    int has_bias = a->nin > 2;
    const void *res = a->nin > 3 ? a->in[3] : NULL;
    if (graph_type_numel(a->out_type) == 0)
        return TG_OK;
    if (graph_type_numel(&a->in_type[0]) == 0) {
        fill_bias(a);
        if (post)
            eager_post_apply(a->out[0], graph_type_numel(a->out_type), post, prm, res,
                             a->nthreads);
        return TG_OK;
    }
    eager_dnnl_prim *p = eager_dnnl_prim_get(a);
    if (!p) {
        tg_status st = conv_prepare(a, geom, post, prm, &p);
        if (st != TG_OK)
            return st;
    }
    const void *data[5] = {a->in[0], a->in[1], a->out[0], has_bias ? a->in[2] : res, res};
    return eager_dnnl_prim_finish(a, p, data);
}

tg_status eager_kernel_conv2d(const eager_kargs *a)
{
    const graph_conv2d_attrs *at = a->attrs;
    eager_conv_geom geom = {&at->stride, &at->padding, &at->dilation, at->groups};
    return eager_conv_run(a, &geom, NULL, (graph_post_prm){0});
}

/* ---- conv_transpose2d ---- */

/*
 * The geometry oneDNN is given: strides, dilations counted from 0, begin
 * padding, end padding and the rows and columns of the output it writes.
 * Output row oh gets input row ih through tap kh when oh = ih*stride -
 * pad_top + kh*dil, whatever the end padding and output_padding are: only
 * their difference, pad_end - output_padding, sets where y stops, and a
 * negative one means rows past every input's reach (bias only).  oneDNN
 * takes an end padding down to 1 - stride, so a difference reaching the
 * stride or beyond (output_padding past the stride, below the dilation)
 * makes oneDNN write only the rows (columns) in reach, to a buffer of
 * its own, and the kernel copies them into y filled with the bias.
 */
typedef struct deconv_geom {
    dnnl_dims_t stride, dil, pad_l, pad_r;
    int64_t view[2]; /* rows and columns oneDNN writes */
    int partial;     /* view smaller than y */
} deconv_geom;

static void deconv_geometry(const eager_kargs *a, deconv_geom *g)
{
    const graph_conv_transpose2d_attrs *at = a->attrs;
    const graph_type *y = a->out_type;
    int64_t stride[2], dil[2], pad[4], op[2];
    graph_ints_pair(&at->stride, 1, stride);
    graph_ints_pair(&at->dilation, 1, dil);
    graph_ints_pad4(&at->padding, pad);
    graph_ints_pair(&at->output_padding, 0, op);
    g->partial = 0;
    for (int i = 0; i < 2; i++) {
        int64_t end = pad[2 + i] - op[i];
        g->stride[i] = stride[i];
        g->dil[i] = dil[i] - 1;
        g->pad_l[i] = pad[i];
        g->view[i] = y->dim[2 + i];
        if (end <= -stride[i]) {
            g->view[i] += end; /* the rows past reach are left out */
            end = 0;
            g->partial = 1;
        }
        g->pad_r[i] = end;
    }
}

/* The memory descriptors of x, w (giohw when grouped), b and the
 * [N, O, view] output oneDNN writes. */
static dnnl_status_t deconv_mds(const eager_kargs *a, const deconv_geom *g,
                                dnnl_memory_desc_t md[4])
{
    const graph_conv_transpose2d_attrs *at = a->attrs;
    const graph_type *x = &a->in_type[0], *w = &a->in_type[1], *y = a->out_type;
    int64_t groups = at->groups;
    dnnl_dims_t dx = {x->dim[0], x->dim[1], x->dim[2], x->dim[3]};
    dnnl_dims_t dy = {y->dim[0], y->dim[1], g->view[0], g->view[1]};
    dnnl_dims_t db = {y->dim[1]};
    /* oneDNN's logical order is (O, C); w stores [C, O/groups] */
    dnnl_dims_t dw = {w->dim[1], w->dim[0], w->dim[2], w->dim[3]};
    dnnl_dims_t dgw = {groups, w->dim[1], w->dim[0] / groups, w->dim[2], w->dim[3]};
    dnnl_status_t s;
    s = dnnl_memory_desc_init_by_tag(&md[0], 4, dx, dnnl_f32, dnnl_nchw);
    if (s == dnnl_success)
        s = groups > 1 ? dnnl_memory_desc_init_by_tag(&md[1], 5, dgw, dnnl_f32, dnnl_giohw)
                       : dnnl_memory_desc_init_by_tag(&md[1], 4, dw, dnnl_f32, dnnl_iohw);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[2], 1, db, dnnl_f32, dnnl_a);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[3], 4, dy, dnnl_f32, dnnl_nchw);
    return s;
}

/* Describes the deconvolution and prepares it; with a state slot and
 * fixed weights, oneDNN picks the weights' layout (as conv_prepare). */
static tg_status deconv_prepare(const eager_kargs *a, const deconv_geom *g,
                                eager_dnnl_prim **out)
{
    eager_dnnl_spec sp = {"deconvolution", NULL, NULL, 3,
                          {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, {{0}}, -1};
    dnnl_memory_desc_t md[4], wmd;
    dnnl_deconvolution_desc_t desc;
    int wany = a->state && (a->fixed_in & 2u);
    dnnl_status_t s = deconv_mds(a, g, md);
    wmd = md[1];
    if (s == dnnl_success && wany)
        s = dnnl_memory_desc_init_by_tag(&wmd, md[1].ndims, md[1].dims, dnnl_f32,
                                         dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_dilated_deconvolution_forward_desc_init(
            &desc, dnnl_forward_inference, dnnl_deconvolution_direct, &md[0], &wmd,
            a->nin > 2 ? &md[2] : NULL, &md[3], g->stride, g->dil, g->pad_l, g->pad_r);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "deconvolution descriptor", s);
    sp.md[0] = md[0], sp.md[1] = md[1], sp.md[2] = md[3];
    sp.packed = wany ? 1 : -1;
    if (a->nin > 2) {
        sp.arg[sp.nargs] = DNNL_ARG_BIAS;
        sp.md[sp.nargs++] = md[2];
    }
    sp.desc = &desc;
    return eager_dnnl_prim_new(a, &sp, out);
}

/* y (already the bias) gets the [N, O, view] planes of part. */
static void copy_view(const eager_kargs *a, const deconv_geom *g, const float *part)
{
    const graph_type *y = a->out_type;
    int64_t planes = y->dim[0] * y->dim[1], vh = g->view[0], vw = g->view[1];
    float *out = a->out[0];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t r = 0; r < vh; r++)
            memcpy(out + (p * y->dim[2] + r) * y->dim[3], part + (p * vh + r) * vw,
                   (size_t)vw * sizeof *out);
}

tg_status eager_kernel_conv_transpose2d(const eager_kargs *a)
{
    if (graph_type_numel(a->out_type) == 0)
        return TG_OK;
    deconv_geom g;
    deconv_geometry(a, &g);
    /* no input (C, H or W is 0), or no output row or column in reach */
    if (graph_type_numel(&a->in_type[0]) == 0 || g.view[0] <= 0 || g.view[1] <= 0) {
        fill_bias(a);
        return TG_OK;
    }
    float *part = NULL; /* a rare case (see deconv_geom): a buffer per call */
    if (g.partial) {
        size_t n = (size_t)(a->out_type->dim[0] * a->out_type->dim[1] * g.view[0] * g.view[1]);
        if (!(part = tg_malloc(n * sizeof *part)))
            return eager_kernel_fail(a, TG_ERR_NOMEM, "out of memory for %zu floats", n);
    }
    eager_dnnl_prim *p = eager_dnnl_prim_get(a);
    tg_status st = p ? TG_OK : deconv_prepare(a, &g, &p);
    if (st == TG_OK) {
        const void *data[4] = {a->in[0], a->in[1], part ? (void *)part : a->out[0],
                               a->nin > 2 ? a->in[2] : NULL};
        st = eager_dnnl_prim_finish(a, p, data);
    }
    if (st == TG_OK && part) {
        fill_bias(a);
        copy_view(a, &g, part);
    }
    tg_free(part);
    return st;
}

/* ---- conv2d_grad_weight, conv2d_grad_input ---- */

/*
 * conv2d's gradients through oneDNN's backward primitives:
 * convolution_backward_weights (dw from x and dy) and
 * convolution_backward_data (dx from dy and w).  oneDNN makes a backward
 * primitive descriptor only against a forward one (its "hint"), made
 * here for forward training on the same descriptors and dropped once the
 * backward primitive exists.
 *
 * Layout.  Unlike the forward, every tensor is given as format any and
 * converted at each run (eager_dnnl_spec.convert): on plain NCHW/OIHW
 * oneDNN 2.6 runs these as im2col + GEMM ("x64:gemm:jit"), on the blocked
 * layouts it picks its direct JIT kernels ("jit:avx512_core").  Measured on
 * the training benchmark's CNN (one thread, batch 64, 3x3 padding 1):
 * 32->64 on 14x14, backward weights 4.3 ms plain against 1.9 blocked (2.1
 * with the reorders), backward data 4.8 against 1.8 (2.1); 1->32 on 28x28
 * backward weights 0.76 against 0.23 (0.48).  When oneDNN has only a
 * reference kernel for the blocked layouts, the plain ones are used.
 *
 * Prepared state as the forward's: given a slot (replay) the primitive,
 * its reorders and their buffers are made once.  Repeated runs give the
 * same bits at 1 and at 2 threads (tests/test_conv_grad.c).
 */

/* The forward's geometry: its attributes and the shapes of x, w, y. */
typedef struct conv_bwd {
    const graph_ints *stride, *padding, *dilation;
    int64_t groups;
    int64_t xd[4], wd[4], yd[4];
} conv_bwd;

static dnnl_status_t conv_bwd_mds(const conv_bwd *c, dnnl_memory_desc_t md[3])
{
    dnnl_dims_t dx = {c->xd[0], c->xd[1], c->xd[2], c->xd[3]};
    dnnl_dims_t dy = {c->yd[0], c->yd[1], c->yd[2], c->yd[3]};
    dnnl_dims_t dw = {c->wd[0], c->wd[1], c->wd[2], c->wd[3]};
    dnnl_dims_t dgw = {c->groups, c->wd[0] / c->groups, c->wd[1], c->wd[2], c->wd[3]};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md[0], 4, dx, dnnl_f32, dnnl_nchw);
    if (s == dnnl_success)
        s = c->groups > 1 ? dnnl_memory_desc_init_by_tag(&md[1], 5, dgw, dnnl_f32, dnnl_goihw)
                          : dnnl_memory_desc_init_by_tag(&md[1], 4, dw, dnnl_f32, dnnl_oihw);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[2], 4, dy, dnnl_f32, dnnl_nchw);
    return s;
}

/* Strides, dilations counted from 0, begin and end padding. */
static void conv_bwd_geom(const conv_bwd *c, dnnl_dims_t st, dnnl_dims_t dd, dnnl_dims_t pl,
                          dnnl_dims_t pr)
{
    int64_t stride[2], dil[2], pad[4];
    graph_ints_pair(c->stride, 1, stride);
    graph_ints_pair(c->dilation, 1, dil);
    graph_ints_pad4(c->padding, pad);
    for (int i = 0; i < 2; i++) {
        st[i] = stride[i];
        dd[i] = dil[i] - 1;
        pl[i] = pad[i];
        pr[i] = pad[2 + i];
    }
}

/*
 * Prepares the backward primitive: weights (1) or data (0); blocked: every
 * tensor as format any (oneDNN's blocked JIT kernels, the tensors
 * reordered to and from them at each run), else the plain layouts.
 * Arguments in spec order: weights: src, diff_dst, diff_weights; data:
 * diff_dst, weights, diff_src.
 */
static tg_status conv_bwd_build(const eager_kargs *a, const conv_bwd *c, int weights,
                                int blocked, eager_dnnl_prim **out)
{
    dnnl_memory_desc_t md[3], dd_md[3];
    dnnl_dims_t st, dd, pl, pr;
    dnnl_convolution_desc_t fdesc, bdesc;
    dnnl_primitive_desc_t hint = NULL;
    dnnl_engine_t eng;
    const char *what = weights ? "convolution backward weights" : "convolution backward data";
    conv_bwd_geom(c, st, dd, pl, pr);
    dnnl_status_t s = conv_bwd_mds(c, md);
    for (int i = 0; i < 3 && s == dnnl_success; i++)
        s = blocked ? dnnl_memory_desc_init_by_tag(&dd_md[i], md[i].ndims, md[i].dims, dnnl_f32,
                                                   dnnl_format_tag_any)
                    : (dd_md[i] = md[i], dnnl_success);
    if (s == dnnl_success)
        s = dnnl_dilated_convolution_forward_desc_init(&fdesc, dnnl_forward_training,
                                                       dnnl_convolution_direct, &dd_md[0],
                                                       &dd_md[1], NULL, &dd_md[2], st, dd, pl, pr);
    if (s == dnnl_success)
        s = weights ? dnnl_dilated_convolution_backward_weights_desc_init(
                          &bdesc, dnnl_convolution_direct, &dd_md[0], &dd_md[1], NULL,
                          &dd_md[2], st, dd, pl, pr)
                    : dnnl_dilated_convolution_backward_data_desc_init(
                          &bdesc, dnnl_convolution_direct, &dd_md[0], &dd_md[1], &dd_md[2], st,
                          dd, pl, pr);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, weights ? "convolution backward weights descriptor"
                                          : "convolution backward data descriptor", s);
    /* the hint is made for the thread count the backward will run on */
    int old = eager_dnnl_set_threads(a->nthreads);
    s = eager_dnnl_engine(&eng);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(&hint, &fdesc, NULL, eng, NULL);
    eager_dnnl_set_threads(old);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "convolution forward (the backward's hint)", s);
    eager_dnnl_spec sp = {what, &bdesc, NULL, 3, {0}, {{0}}, -1};
    if (weights) {
        sp.arg[0] = DNNL_ARG_SRC, sp.md[0] = md[0];
        sp.arg[1] = DNNL_ARG_DIFF_DST, sp.md[1] = md[2];
        sp.arg[2] = DNNL_ARG_DIFF_WEIGHTS, sp.md[2] = md[1];
    } else {
        sp.arg[0] = DNNL_ARG_DIFF_DST, sp.md[0] = md[2];
        sp.arg[1] = DNNL_ARG_WEIGHTS, sp.md[1] = md[1];
        sp.arg[2] = DNNL_ARG_DIFF_SRC, sp.md[2] = md[0];
    }
    sp.hint = hint;
    sp.convert = blocked ? 7u : 0u;
    tg_status r = eager_dnnl_prim_new(a, &sp, out);
    dnnl_primitive_desc_destroy(hint);
    return r;
}

/* Blocked first; the plain layouts when oneDNN has only a reference
 * implementation for the blocked ones. */
static tg_status conv_bwd_prepare(const eager_kargs *a, const conv_bwd *c, int weights,
                                  eager_dnnl_prim **out)
{
    tg_status st = conv_bwd_build(a, c, weights, 1, out);
    if (st == TG_OK && eager_dnnl_impl_is_ref(eager_dnnl_prim_impl(*out))) {
        eager_dnnl_prim_free(*out);
        st = conv_bwd_build(a, c, weights, 0, out);
    }
    return st;
}

static void zero_out(const eager_kargs *a)
{
    memset(a->out[0], 0, (size_t)graph_type_numel(a->out_type) * sizeof(float));
}

static void dims4(const graph_type *t, int64_t d[4])
{
    for (int i = 0; i < 4; i++)
        d[i] = t->dim[i];
}

/* The run both gradient kernels share: nothing to write, zeros (no batch,
 * no output pixel or channel: no gradient flows), or oneDNN's backward
 * primitive (weights: backward-weights, else backward-data). */
static tg_status conv_bwd_run(const eager_kargs *a, const conv_bwd *c, int weights)
{
    if (graph_type_numel(a->out_type) == 0)
        return TG_OK;
    if (graph_type_numel(&a->in_type[0]) == 0 || graph_type_numel(&a->in_type[1]) == 0) {
        zero_out(a);
        return TG_OK;
    }
    eager_dnnl_prim *p = eager_dnnl_prim_get(a);
    tg_status st = p ? TG_OK : conv_bwd_prepare(a, c, weights, &p);
    if (st != TG_OK)
        return st;
    const void *data[3] = {a->in[0], a->in[1], a->out[0]};
    return eager_dnnl_prim_finish(a, p, data);
}

tg_status eager_kernel_conv2d_grad_weight(const eager_kargs *a)
{
    const graph_conv2d_grad_weight_attrs *at = a->attrs;
    conv_bwd c = {&at->stride, &at->padding, &at->dilation, at->groups,
                  {0}, {0}, {0}};
    dims4(&a->in_type[0], c.xd);
    dims4(&a->in_type[1], c.yd);
    dims4(a->out_type, c.wd);
    return conv_bwd_run(a, &c, 1);
}

tg_status eager_kernel_conv2d_grad_input(const eager_kargs *a)
{
    const graph_conv2d_grad_input_attrs *at = a->attrs;
    conv_bwd c = {&at->stride, &at->padding, &at->dilation, at->groups,
                  {0}, {0}, {0}};
    dims4(a->out_type, c.xd);
    dims4(&a->in_type[1], c.wd);
    dims4(&a->in_type[0], c.yd);
    return conv_bwd_run(a, &c, 0);
}
