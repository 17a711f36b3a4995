/*
 * infer_linalg.c - shape and dtype inference for matmul, linear, conv2d,
 * conv_transpose2d, max_pool2d, avg_pool2d and global_avg_pool.  Every
 * attribute is validated here, so the kernels (eager/kernels_matmul.c,
 * kernels_conv.c, kernels_pool.c) trust them.
 *
 * Choices (documented once, here):
 * - matmul follows NumPy: a [...,M,K] x b [...,K,N] -> [...,M,N] with the
 *   batch dims broadcast.  A 1-D a is [K] -> [1,K] with M dropped from the
 *   result, a 1-D b is [K] -> [K,1] with N dropped (1-D x 1-D is a 0-d
 *   dot product).  transpose_a / transpose_b (0 or 1) swap the last two
 *   dims of a rank >= 2 operand before that; on a 1-D operand they change
 *   nothing, as a vector's transpose is itself.  0-d operands are errors.
 * - linear: x [...,K] (rank >= 1), w [N,K], optional b [N] -> [...,N].
 * - conv2d and the pools take NCHW.  stride and dilation: 0 entries
 *   (default 1; pools: stride = kernel), 1 (both dims) or 2 (h, w);
 *   padding: 0, 1 (all sides), 2 (h, w on both sides) or 4 (top, left,
 *   bottom, right).  Out size = floor((H + pt + pb - dil*(kh-1) - 1) /
 *   stride) + 1 and must be >= 1.
 * - conv_transpose2d takes x [N,C,H,W], w [C,O/groups,kh,kw] (PyTorch's
 *   and ONNX's layout) and the same stride, padding and dilation lists;
 *   output_padding has 0, 1 or 2 entries >= 0, each smaller than its
 *   dim's stride or its dilation (as PyTorch).  Out size = stride*(H-1) +
 *   output_padding + dil*(kh-1) + 1 - pt - pb and must be >= 1: padding
 *   removes output rows and columns, output_padding adds them at the
 *   bottom and right (those beyond every input's reach hold the bias).
 * - Pool padding must be smaller than the kernel, so that every window
 *   holds an input element (PyTorch is stricter: <= kernel / 2).
 * - global_avg_pool takes rank >= 3, [N,C,spatial...] -> [N,C,1,...].
 * - Arithmetic on sizes is overflow-checked; a size that does not fit in
 *   int64 is TG_ERR_SHAPE.
 */
#include <stdio.h>

#include "conv_attrs.h"
#include "infer.h"

static tg_status need_f32(graph_infer_ctx *c, int i, const char *name)
{
    if (c->in[i].dtype != GRAPH_F32)
        return graph_infer_fail(c, TG_ERR_DTYPE, "%s has dtype %s, want f32",
                                name, graph_dtype_name(c->in[i].dtype));
    return TG_OK;
}

static tg_status need_rank(graph_infer_ctx *c, int i, const char *name,
                           int ndim, const char *layout)
{
    if (c->in[i].ndim != ndim)
        return graph_infer_fail(c, TG_ERR_SHAPE, "%s must be %d-D %s, got %d-D",
                                name, ndim, layout, (int)c->in[i].ndim);
    return TG_OK;
}

/* ---- matmul, linear ---- */

tg_status graph_infer_matmul(graph_infer_ctx *c)
{
    const graph_matmul_attrs *at = c->attrs;
    const graph_type *a = &c->in[0], *b = &c->in[1];
    tg_status st = need_f32(c, 1, "b");
    if (st != TG_OK)
        return st;
    if ((at->transpose_a != 0 && at->transpose_a != 1) ||
        (at->transpose_b != 0 && at->transpose_b != 1))
        return graph_infer_fail(c, TG_ERR_ARG,
                                "transpose_a and transpose_b must be 0 or 1, "
                                "got %lld and %lld",
                                (long long)at->transpose_a,
                                (long long)at->transpose_b);
    if (a->ndim < 1 || b->ndim < 1)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "operands must have rank >= 1, got %d-D and %d-D",
                                (int)a->ndim, (int)b->ndim);
    int ta = a->ndim >= 2 && at->transpose_a;
    int tb = b->ndim >= 2 && at->transpose_b;
    int64_t ka = a->dim[a->ndim - (ta ? 2 : 1)];
    int64_t kb = b->ndim == 1 ? b->dim[0] : b->dim[b->ndim - (tb ? 1 : 2)];
    if (ka != kb)
        return graph_infer_fail(c, TG_ERR_SHAPE, "inner dims differ (%lld vs %lld)",
                                (long long)ka, (long long)kb);
    /* Batch dims: all but the last two of each rank >= 2 operand. */
    graph_type ba = {GRAPH_F32, a->ndim >= 2 ? a->ndim - 2 : 0, {0}};
    graph_type bb = {GRAPH_F32, b->ndim >= 2 ? b->ndim - 2 : 0, {0}};
    for (int i = 0; i < ba.ndim; i++)
        ba.dim[i] = a->dim[i];
    for (int i = 0; i < bb.ndim; i++)
        bb.dim[i] = b->dim[i];
    graph_type *out = &c->out[0];
    if (graph_broadcast(&ba, &bb, out) != TG_OK) {
        char sa[160], sb[160];
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "batch dims %s and %s do not broadcast",
                                graph_shape_str(&ba, sa, sizeof sa),
                                graph_shape_str(&bb, sb, sizeof sb));
    }
    out->dtype = GRAPH_F32;
    if (a->ndim >= 2)
        out->dim[out->ndim++] = a->dim[a->ndim - (ta ? 1 : 2)];
    if (b->ndim >= 2)
        out->dim[out->ndim++] = b->dim[b->ndim - (tb ? 2 : 1)];
    return TG_OK;
}

tg_status graph_infer_linear(graph_infer_ctx *c)
{
    const graph_type *x = &c->in[0], *w = &c->in[1];
    tg_status st = need_f32(c, 1, "w");
    if (st == TG_OK && c->nin > 2)
        st = need_f32(c, 2, "b");
    if (st == TG_OK)
        st = need_rank(c, 1, "w", 2, "[N,K]");
    if (st == TG_OK && c->nin > 2)
        st = need_rank(c, 2, "b", 1, "[N]");
    if (st != TG_OK)
        return st;
    if (x->ndim < 1)
        return graph_infer_fail(c, TG_ERR_SHAPE, "x must have rank >= 1, got 0-D");
    int64_t k = x->dim[x->ndim - 1], n = w->dim[0];
    if (w->dim[1] != k)
        return graph_infer_fail(c, TG_ERR_SHAPE, "inner dims differ (%lld vs %lld)",
                                (long long)k, (long long)w->dim[1]);
    if (c->nin > 2 && c->in[2].dim[0] != n)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "b has %lld entries, want %lld (rows of w)",
                                (long long)c->in[2].dim[0], (long long)n);
    c->out[0] = *x;
    c->out[0].dim[x->ndim - 1] = n;
    return TG_OK;
}

/* ---- attribute lists of conv2d and the pools ---- */

/*
 * A (h, w) list: 1 or 2 entries, or 0 when def > 0 (then both are def);
 * each >= lo.  Sets out[2].
 */
static tg_status check_pair(graph_infer_ctx *c, const graph_ints *v,
                            const char *name, int64_t def, int64_t lo,
                            int64_t out[2])
{
    char buf[200];
    if (v->n < (def > 0 ? 0 : 1) || v->n > 2)
        return graph_infer_fail(c, TG_ERR_ARG, "%s takes %s entries, got %d",
                                name, def > 0 ? "0, 1 or 2" : "1 or 2",
                                (int)v->n);
    graph_ints_pair(v, def, out);
    if (out[0] < lo || out[1] < lo)
        return graph_infer_fail(c, TG_ERR_ARG, "%s must be >= %lld, got %s",
                                name, (long long)lo,
                                graph_ints_str(v, buf, sizeof buf));
    return TG_OK;
}

/* Padding (top, left, bottom, right) from 0, 1, 2 or 4 entries >= 0. */
static tg_status check_padding(graph_infer_ctx *c, const graph_ints *v,
                               int64_t pad[4])
{
    char buf[200];
    if (v->n != 0 && v->n != 1 && v->n != 2 && v->n != 4)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "padding takes 0, 1, 2 or 4 entries, got %d",
                                (int)v->n);
    for (int i = 0; i < v->n; i++)
        if (v->v[i] < 0)
            return graph_infer_fail(c, TG_ERR_ARG, "padding must be >= 0, got %s",
                                    graph_ints_str(v, buf, sizeof buf));
    graph_ints_pad4(v, pad);
    return TG_OK;
}

/* Sliding-window geometry of one spatial dim. */
typedef struct window {
    int64_t in, pad_lo, pad_hi, kernel, stride, dilation;
    int64_t padded, effective, out; /* set by window_out */
} window;

/* Computes padded input, effective kernel and out; -1 on int64 overflow. */
static int window_out(window *w)
{
    if (__builtin_mul_overflow(w->dilation, w->kernel - 1, &w->effective) ||
        __builtin_add_overflow(w->effective, 1, &w->effective) ||
        __builtin_add_overflow(w->in, w->pad_lo, &w->padded) ||
        __builtin_add_overflow(w->padded, w->pad_hi, &w->padded))
        return -1;
    int64_t span = w->padded - w->effective; /* no overflow: both >= 0 */
    /* floor(span / stride) + 1; C's / truncates toward zero */
    w->out = span >= 0 ? span / w->stride + 1 : -((-span - 1) / w->stride);
    return 0;
}

/* Checks both dims' windows and writes [N, ch, out_h, out_w] to out. */
static tg_status spatial_out(graph_infer_ctx *c, window wh, window ww,
                             int64_t ch)
{
    const graph_type *x = &c->in[0];
    if (window_out(&wh) || window_out(&ww))
        return graph_infer_fail(c, TG_ERR_SHAPE, "sizes overflow int64");
    if (wh.out <= 0 || ww.out <= 0)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "output size %lldx%lld <= 0: padded input "
                                "%lldx%lld is smaller than the effective "
                                "kernel %lldx%lld",
                                (long long)wh.out, (long long)ww.out,
                                (long long)wh.padded, (long long)ww.padded,
                                (long long)wh.effective,
                                (long long)ww.effective);
    graph_type *out = &c->out[0];
    *out = (graph_type){GRAPH_F32, 4, {x->dim[0], ch, wh.out, ww.out}};
    return TG_OK;
}

/* ---- conv2d ---- */

/* Ranks, dtypes, groups and channel counts of x, w, b. */
static tg_status check_conv_inputs(graph_infer_ctx *c, int64_t groups)
{
    const graph_type *x = &c->in[0], *w = &c->in[1];
    tg_status st = need_f32(c, 1, "w");
    if (st == TG_OK && c->nin > 2)
        st = need_f32(c, 2, "b");
    if (st == TG_OK)
        st = need_rank(c, 0, "x", 4, "[N,C,H,W]");
    if (st == TG_OK)
        st = need_rank(c, 1, "w", 4, "[O,C/groups,kh,kw]");
    if (st == TG_OK && c->nin > 2)
        st = need_rank(c, 2, "b", 1, "[O]");
    if (st != TG_OK)
        return st;
    int64_t ch = x->dim[1], o = w->dim[0];
    if (groups < 1)
        return graph_infer_fail(c, TG_ERR_ARG, "groups must be >= 1, got %lld",
                                (long long)groups);
    if (ch % groups || o % groups)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "groups %lld must divide the input channels "
                                "%lld and the output channels %lld",
                                (long long)groups, (long long)ch, (long long)o);
    if (w->dim[1] != ch / groups)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "w has %lld input channels per group, want "
                                "%lld (C %lld / groups %lld)",
                                (long long)w->dim[1], (long long)(ch / groups),
                                (long long)ch, (long long)groups);
    if (w->dim[2] < 1 || w->dim[3] < 1)
        return graph_infer_fail(c, TG_ERR_SHAPE, "kernel size %lldx%lld must be >= 1",
                                (long long)w->dim[2], (long long)w->dim[3]);
    if (c->nin > 2 && c->in[2].dim[0] != o)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "b has %lld entries, want %lld (output channels)",
                                (long long)c->in[2].dim[0], (long long)o);
    return TG_OK;
}

tg_status graph_infer_conv2d(graph_infer_ctx *c)
{
    const graph_conv2d_attrs *at = c->attrs;
    int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, pad[4] = {0};
    tg_status st = check_conv_inputs(c, at->groups);
    if (st == TG_OK)
        st = check_pair(c, &at->stride, "stride", 1, 1, stride);
    if (st == TG_OK)
        st = check_pair(c, &at->dilation, "dilation", 1, 1, dil);
    if (st == TG_OK)
        st = check_padding(c, &at->padding, pad);
    if (st != TG_OK)
        return st;
    const graph_type *x = &c->in[0], *w = &c->in[1];
    window wh = {x->dim[2], pad[0], pad[2], w->dim[2], stride[0], dil[0]};
    window ww = {x->dim[3], pad[1], pad[3], w->dim[3], stride[1], dil[1]};
    return spatial_out(c, wh, ww, w->dim[0]);
}

/* ---- conv2d_grad_weight, conv2d_grad_input ---- */

/*
 * The forward conv2d of x [N, ch, xh, xw] by a (kh, kw) kernel with o
 * output channels in groups, at the attributes' stride, padding and
 * dilation, must give dy [N, o, dh, dw]: checks groups, the lists and
 * that dy is that output.
 */
static tg_status check_conv_grad(graph_infer_ctx *c, const graph_ints *stride_v,
                                 const graph_ints *padding_v, const graph_ints *dilation_v,
                                 int64_t groups, int64_t n, int64_t ch, int64_t o,
                                 const int64_t xs[2], const int64_t ks[2], const graph_type *dy)
{
    int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, pad[4] = {0};
    tg_status st = check_pair(c, stride_v, "stride", 1, 1, stride);
    if (st == TG_OK)
        st = check_pair(c, dilation_v, "dilation", 1, 1, dil);
    if (st == TG_OK)
        st = check_padding(c, padding_v, pad);
    if (st != TG_OK)
        return st;
    if (groups < 1)
        return graph_infer_fail(c, TG_ERR_ARG, "groups must be >= 1, got %lld",
                                (long long)groups);
    if (ch % groups || o % groups)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "groups %lld must divide the input channels %lld and the "
                                "output channels %lld",
                                (long long)groups, (long long)ch, (long long)o);
    window wh = {xs[0], pad[0], pad[2], ks[0], stride[0], dil[0]};
    window ww = {xs[1], pad[1], pad[3], ks[1], stride[1], dil[1]};
    if (window_out(&wh) || window_out(&ww))
        return graph_infer_fail(c, TG_ERR_SHAPE, "sizes overflow int64");
    if (dy->dim[0] != n || dy->dim[1] != o || dy->dim[2] != wh.out || dy->dim[3] != ww.out)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "dy is [%lld,%lld,%lld,%lld], want the forward's output "
                                "[%lld,%lld,%lld,%lld]",
                                (long long)dy->dim[0], (long long)dy->dim[1],
                                (long long)dy->dim[2], (long long)dy->dim[3], (long long)n,
                                (long long)o, (long long)wh.out, (long long)ww.out);
    return TG_OK;
}

/* A 2-entry size list whose entries are >= lo. */
static tg_status check_size2(graph_infer_ctx *c, const graph_ints *v, const char *name,
                             int64_t lo, int64_t out[2])
{
    char buf[200];
    if (v->n != 2 || v->v[0] < lo || v->v[1] < lo)
        return graph_infer_fail(c, TG_ERR_ARG, "%s takes 2 entries >= %lld, got %s", name,
                                (long long)lo, graph_ints_str(v, buf, sizeof buf));
    out[0] = v->v[0], out[1] = v->v[1];
    return TG_OK;
}

tg_status graph_infer_conv2d_grad_weight(graph_infer_ctx *c)
{
    const graph_conv2d_grad_weight_attrs *at = c->attrs;
    const graph_type *x = &c->in[0], *dy = &c->in[1];
    int64_t ks[2];
    tg_status st = need_f32(c, 1, "dy");
    if (st == TG_OK)
        st = need_rank(c, 0, "x", 4, "[N,C,H,W]");
    if (st == TG_OK)
        st = need_rank(c, 1, "dy", 4, "[N,O,H',W']");
    if (st == TG_OK)
        st = check_size2(c, &at->ksize, "ksize", 1, ks);
    if (st == TG_OK)
        st = check_conv_grad(c, &at->stride, &at->padding, &at->dilation, at->groups,
                             x->dim[0], x->dim[1], dy->dim[1], &x->dim[2], ks, dy);
    if (st != TG_OK)
        return st;
    c->out[0] = (graph_type){GRAPH_F32, 4, {dy->dim[1], x->dim[1] / at->groups, ks[0], ks[1]}};
    return TG_OK;
}

tg_status graph_infer_conv2d_grad_input(graph_infer_ctx *c)
{
    const graph_conv2d_grad_input_attrs *at = c->attrs;
    const graph_type *dy = &c->in[0], *w = &c->in[1];
    int64_t xs[2];
    tg_status st = need_f32(c, 1, "w");
    if (st == TG_OK)
        st = need_rank(c, 0, "dy", 4, "[N,O,H',W']");
    if (st == TG_OK)
        st = need_rank(c, 1, "w", 4, "[O,C/groups,kh,kw]");
    if (st == TG_OK)
        st = check_size2(c, &at->xsize, "xsize", 0, xs);
    if (st != TG_OK)
        return st;
    if (w->dim[2] < 1 || w->dim[3] < 1)
        return graph_infer_fail(c, TG_ERR_SHAPE, "kernel size %lldx%lld must be >= 1",
                                (long long)w->dim[2], (long long)w->dim[3]);
    int64_t ch;
    if (__builtin_mul_overflow(w->dim[1], at->groups, &ch))
        return graph_infer_fail(c, TG_ERR_SHAPE, "sizes overflow int64");
    st = check_conv_grad(c, &at->stride, &at->padding, &at->dilation, at->groups, dy->dim[0],
                         ch, w->dim[0], xs, &w->dim[2], dy);
    if (st != TG_OK)
        return st;
    c->out[0] = (graph_type){GRAPH_F32, 4, {dy->dim[0], ch, xs[0], xs[1]}};
    return TG_OK;
}

/* ---- conv_transpose2d ---- */

/* Ranks, dtypes, groups and channel counts of x, w [C,O/groups,kh,kw], b;
 * sets *o to the output channels. */
static tg_status check_deconv_inputs(graph_infer_ctx *c, int64_t groups, int64_t *o)
{
    const graph_type *x = &c->in[0], *w = &c->in[1];
    tg_status st = need_f32(c, 1, "w");
    if (st == TG_OK && c->nin > 2)
        st = need_f32(c, 2, "b");
    if (st == TG_OK)
        st = need_rank(c, 0, "x", 4, "[N,C,H,W]");
    if (st == TG_OK)
        st = need_rank(c, 1, "w", 4, "[C,O/groups,kh,kw]");
    if (st == TG_OK && c->nin > 2)
        st = need_rank(c, 2, "b", 1, "[O]");
    if (st != TG_OK)
        return st;
    int64_t ch = x->dim[1];
    if (groups < 1)
        return graph_infer_fail(c, TG_ERR_ARG, "groups must be >= 1, got %lld",
                                (long long)groups);
    if (w->dim[0] != ch)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "w has %lld input channels, want %lld (the channels of x)",
                                (long long)w->dim[0], (long long)ch);
    if (ch % groups)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "groups %lld must divide the input channels %lld",
                                (long long)groups, (long long)ch);
    if (__builtin_mul_overflow(w->dim[1], groups, o))
        return graph_infer_fail(c, TG_ERR_SHAPE, "sizes overflow int64");
    if (w->dim[2] < 1 || w->dim[3] < 1)
        return graph_infer_fail(c, TG_ERR_SHAPE, "kernel size %lldx%lld must be >= 1",
                                (long long)w->dim[2], (long long)w->dim[3]);
    if (c->nin > 2 && c->in[2].dim[0] != *o)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "b has %lld entries, want %lld (output channels: %lld "
                                "per group x groups %lld)",
                                (long long)c->in[2].dim[0], (long long)*o,
                                (long long)w->dim[1], (long long)groups);
    return TG_OK;
}

/*
 * One spatial dim of a transposed convolution: sets *full to the rows the
 * input spreads over plus output_padding, stride*(in-1) + op + eff, and
 * *out to that minus both paddings; -1 on int64 overflow.  in may be 0
 * (then *full may be negative).
 */
static int deconv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t op,
                      int64_t plo, int64_t phi, int64_t *full, int64_t *out)
{
    int64_t eff;
    if (__builtin_mul_overflow(d, k - 1, &eff) || __builtin_add_overflow(eff, 1, &eff) ||
        __builtin_mul_overflow(s, in - 1, full) || __builtin_add_overflow(*full, op, full) ||
        __builtin_add_overflow(*full, eff, full) || __builtin_sub_overflow(*full, plo, out) ||
        __builtin_sub_overflow(*out, phi, out))
        return -1;
    return 0;
}

tg_status graph_infer_conv_transpose2d(graph_infer_ctx *c)
{
    const graph_conv_transpose2d_attrs *at = c->attrs;
    int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, op[2] = {0, 0}, pad[4] = {0}, o = 0;
    tg_status st = check_deconv_inputs(c, at->groups, &o);
    if (st == TG_OK)
        st = check_pair(c, &at->stride, "stride", 1, 1, stride);
    if (st == TG_OK)
        st = check_pair(c, &at->dilation, "dilation", 1, 1, dil);
    if (st == TG_OK)
        st = check_padding(c, &at->padding, pad);
    if (st != TG_OK)
        return st;
    /* check_pair allows no entries only with a default > 0 */
    if (at->output_padding.n > 2)
        return graph_infer_fail(c, TG_ERR_ARG, "output_padding takes 0, 1 or 2 entries, got %d",
                                (int)at->output_padding.n);
    if (at->output_padding.n > 0 &&
        (st = check_pair(c, &at->output_padding, "output_padding", 0, 0, op)) != TG_OK)
        return st;
    static const char *const dim_name[2] = {"h", "w"};
    for (int i = 0; i < 2; i++)
        if (op[i] >= stride[i] && op[i] >= dil[i])
            return graph_infer_fail(c, TG_ERR_ARG,
                                    "output_padding %lld (%s) must be smaller than the "
                                    "stride %lld or the dilation %lld",
                                    (long long)op[i], dim_name[i], (long long)stride[i],
                                    (long long)dil[i]);
    const graph_type *x = &c->in[0], *w = &c->in[1];
    int64_t full[2], out[2];
    for (int i = 0; i < 2; i++)
        if (deconv_out(x->dim[2 + i], w->dim[2 + i], stride[i], dil[i], op[i], pad[i],
                       pad[2 + i], &full[i], &out[i]))
            return graph_infer_fail(c, TG_ERR_SHAPE, "sizes overflow int64");
    if (out[0] <= 0 || out[1] <= 0)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "output size %lldx%lld <= 0: %lldx%lld (stride*(in-1) + "
                                "output_padding + effective kernel) less padding %lld+%lld x "
                                "%lld+%lld",
                                (long long)out[0], (long long)out[1], (long long)full[0],
                                (long long)full[1], (long long)pad[0], (long long)pad[2],
                                (long long)pad[1], (long long)pad[3]);
    c->out[0] = (graph_type){GRAPH_F32, 4, {x->dim[0], o, out[0], out[1]}};
    return TG_OK;
}

/* ---- pools ---- */

tg_status graph_infer_pool2d(graph_infer_ctx *c)
{
    const graph_ints *kl, *sl, *pl;
    char kbuf[200], pbuf[200];
    if (c->op == &graph_ops[GRAPH_OP_avg_pool2d]) {
        const graph_avg_pool2d_attrs *at = c->attrs;
        kl = &at->kernel, sl = &at->stride, pl = &at->padding;
        if (at->count_include_pad != 0 && at->count_include_pad != 1)
            return graph_infer_fail(c, TG_ERR_ARG,
                                    "count_include_pad must be 0 or 1, got %lld",
                                    (long long)at->count_include_pad);
    } else {
        const graph_max_pool2d_attrs *at = c->attrs;
        kl = &at->kernel, sl = &at->stride, pl = &at->padding;
    }
    int64_t k[2] = {1, 1}, s[2] = {1, 1}, pad[4] = {0};
    tg_status st = need_rank(c, 0, "x", 4, "[N,C,H,W]");
    if (st == TG_OK)
        st = check_pair(c, kl, "kernel", 0, 1, k);
    if (st == TG_OK)
        st = check_pair(c, sl, "stride", 1, 1, s);
    if (st == TG_OK)
        st = check_padding(c, pl, pad);
    if (st != TG_OK)
        return st;
    if (sl->n == 0)
        s[0] = k[0], s[1] = k[1];
    if (pad[0] >= k[0] || pad[2] >= k[0] || pad[1] >= k[1] || pad[3] >= k[1])
        return graph_infer_fail(c, TG_ERR_ARG,
                                "padding %s must be smaller than the kernel %s",
                                graph_ints_str(pl, pbuf, sizeof pbuf),
                                graph_ints_str(kl, kbuf, sizeof kbuf));
    const graph_type *x = &c->in[0];
    window wh = {x->dim[2], pad[0], pad[2], k[0], s[0], 1};
    window ww = {x->dim[3], pad[1], pad[3], k[1], s[1], 1};
    return spatial_out(c, wh, ww, x->dim[1]);
}

/* max_pool2d_grad(dy, x): x is checked as max_pool2d's input, with the same
 * attributes; dy must have the shape max_pool2d gives x; dx has x's. */
tg_status graph_infer_max_pool2d_grad(graph_infer_ctx *c)
{
    const graph_max_pool2d_grad_attrs *a = c->attrs;
    graph_max_pool2d_attrs pa = {a->kernel, a->stride, a->padding};
    graph_type y;
    graph_infer_ctx sub = *c;
    sub.op = &graph_ops[GRAPH_OP_max_pool2d];
    sub.in = &c->in[1];
    sub.nin = 1;
    sub.attrs = &pa;
    sub.out = &y;
    sub.max_out = 1;
    tg_status st = need_f32(c, 1, "x");
    if (st == TG_OK)
        st = graph_infer_pool2d(&sub);
    if (st != TG_OK)
        return st;
    const graph_type *dy = &c->in[0];
    if (!graph_type_eq(dy, &y)) {
        char sd[160], sy[160];
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "dy is %s %s, max_pool2d of x gives %s %s: they must match",
                                graph_dtype_name(dy->dtype), graph_shape_str(dy, sd, sizeof sd),
                                graph_dtype_name(y.dtype), graph_shape_str(&y, sy, sizeof sy));
    }
    c->out[0] = c->in[1];
    return TG_OK;
}

tg_status graph_infer_global_pool(graph_infer_ctx *c)
{
    const graph_type *x = &c->in[0];
    if (x->ndim < 3)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "x must have rank >= 3 [N,C,spatial...], got %d-D",
                                (int)x->ndim);
    c->out[0] = *x;
    for (int i = 2; i < x->ndim; i++)
        c->out[0].dim[i] = 1;
    return TG_OK;
}
