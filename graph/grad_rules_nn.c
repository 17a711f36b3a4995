/*
 * grad_rules_nn.c - gradient rules of the linear-algebra and
 * neural-network ops (graph/grad.def), written with registry ops through
 * a grad_builder:
 *   matmul, linear   products with the other operand (batch dims summed back);
 *   conv2d           conv2d_grad_input and conv2d_grad_weight (oneDNN's
 *                    backward primitives), any groups; the bias: a sum;
 *   max_pool2d       the op max_pool2d_grad (g to the first maximum of
 *                    each window, as PyTorch), one pass over the windows;
 *   avg_pool2d       the windows' indices in the padded input (a constant),
 *                    g spread over them and added back with
 *                    scatter_elements;
 *   batch_norm       inference form: all five inputs;
 *   layer_norm       the op layer_norm_grad (the statistics recomputed
 *                    from the saved input, the three gradients in one
 *                    pass over the rows);
 *   softmax, log_softmax: the usual closed forms;
 *   dropout          the same dropout (same generator input, so the same
 *                    mask and scale) of the output gradient: exact;
 *   batch_norm_train the op batch_norm_train_grad (dx, dscale, dbias from
 *                    the saved x, scale and the forward's batch mean and
 *                    1/std, outputs 3 and 4) for y's gradient; outputs 3
 *                    and 4 take gradients too (closed forms added to dx);
 *                    the running statistics (outputs 1 and 2) carry none.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "conv_attrs.h"
#include "grad_util.h"

#define G (c->gout[0])
#define NEED(i) (c->need[i])

/* ---- matmul, linear ---- */

static grad_v mm(grad_builder *b, grad_v x, grad_v y, int ta, int tb)
{
    graph_matmul_attrs at;
    graph_attrs_default(GRAPH_OP_matmul, &at);
    at.transpose_a = ta;
    at.transpose_b = tb;
    grad_v in[2] = {x, y};
    return b->op(b, GRAPH_OP_matmul, in, 2, &at);
}

tg_status grad_rule_matmul(grad_builder *b, const grad_ctx *c)
{
    const graph_matmul_attrs *a = c->attrs;
    const graph_type *ta = &c->in_type[0], *tb = &c->in_type[1];
    /* 1-D operands as matrices: a [K] is [1,K], b [K] is [K,1]; g gets
     * the dims the product dropped back */
    graph_type a2 = *ta, b2 = *tb, g2 = c->out_type[0];
    int ta_ = (int)a->transpose_a, tb_ = (int)a->transpose_b;
    if (tb->ndim == 1) {
        b2.ndim = 2, b2.dim[0] = tb->dim[0], b2.dim[1] = 1, tb_ = 0;
        g2.dim[g2.ndim++] = 1;
    }
    if (ta->ndim == 1) {
        a2.ndim = 2, a2.dim[0] = 1, a2.dim[1] = ta->dim[0], ta_ = 0;
        g2.dim[g2.ndim] = g2.dim[g2.ndim - 1];
        g2.dim[g2.ndim - 1] = 1;
        g2.ndim++;
    }
    grad_v A = gu_reshape_to(b, c->in[0], &a2), B = gu_reshape_to(b, c->in[1], &b2);
    grad_v g = gu_reshape_to(b, G, &g2);
    if (NEED(0)) {
        /* C = op(A) op(B): dA from g op(B)^T, transposed back when ta */
        grad_v ga = !ta_ ? mm(b, g, B, 0, !tb_) : mm(b, B, g, tb_, 1);
        c->gin[0] = gu_reshape_to(b, gu_sum_to(b, ga, &a2), ta);
    }
    if (NEED(1)) {
        grad_v gb = !tb_ ? mm(b, A, g, !ta_, 0) : mm(b, g, A, 1, ta_);
        c->gin[1] = gu_reshape_to(b, gu_sum_to(b, gb, &b2), tb);
    }
    return gu_done(c);
}

tg_status grad_rule_linear(grad_builder *b, const grad_ctx *c)
{
    /* y = x w^T + bias: x [..., K], w [N, K] */
    const graph_type *tx = &c->in_type[0], *tw = &c->in_type[1];
    int64_t n = tw->dim[0], k = tw->dim[1];
    if (NEED(0))
        c->gin[0] = mm(b, G, c->in[1], 0, 0);
    if (NEED(1)) {
        int64_t gd[2] = {-1, n}, xd[2] = {-1, k};
        grad_v g2 = gu_reshape(b, G, gd, 2), x2 = gu_reshape(b, c->in[0], xd, 2);
        if (tx->ndim == 1)
            g2 = gu_reshape(b, G, (int64_t[2]){1, n}, 2), x2 = gu_reshape(b, c->in[0], (int64_t[2]){1, k}, 2);
        c->gin[1] = mm(b, g2, x2, 1, 0);
    }
    if (c->nin > 2 && NEED(2)) {
        int64_t axes[GRAPH_MAX_DIMS];
        int na = 0;
        for (int d = 0; d + 1 < tx->ndim; d++)
            axes[na++] = d;
        c->gin[2] = na ? gu_sum(b, G, axes, na, 0) : G;
    }
    return gu_done(c);
}

/* ---- conv2d ---- */

static graph_ints ints(const int64_t *v, int n)
{
    graph_ints r;
    memset(&r, 0, sizeof r);
    r.n = n;
    for (int i = 0; i < n; i++)
        r.v[i] = v[i];
    return r;
}

tg_status grad_rule_conv2d(grad_builder *b, const grad_ctx *c)
{
    /* oneDNN's backward primitives (eager/kernels_conv.c), any groups */
    const graph_conv2d_attrs *a = c->attrs;
    const graph_type *tx = &c->in_type[0], *tw = &c->in_type[1];
    if (NEED(0)) {
        graph_conv2d_grad_input_attrs at;
        graph_attrs_default(GRAPH_OP_conv2d_grad_input, &at);
        at.stride = a->stride;
        at.padding = a->padding;
        at.dilation = a->dilation;
        at.groups = a->groups;
        at.xsize = ints(&tx->dim[2], 2);
        grad_v in[2] = {G, c->in[1]};
        c->gin[0] = b->op(b, GRAPH_OP_conv2d_grad_input, in, 2, &at);
    }
    if (NEED(1)) {
        graph_conv2d_grad_weight_attrs at;
        graph_attrs_default(GRAPH_OP_conv2d_grad_weight, &at);
        at.stride = a->stride;
        at.padding = a->padding;
        at.dilation = a->dilation;
        at.groups = a->groups;
        at.ksize = ints(&tw->dim[2], 2);
        grad_v in[2] = {c->in[0], G};
        c->gin[1] = b->op(b, GRAPH_OP_conv2d_grad_weight, in, 2, &at);
    }
    if (c->nin > 2 && NEED(2))
        c->gin[2] = gu_sum(b, G, (int64_t[3]){0, 2, 3}, 3, 0);
    return gu_done(c);
}

/* ---- pooling ---- */

typedef struct pool_geo {
    int64_t n, ch, h, w, ho, wo, k[2], s[2], p[4], hp, wp, kk, l;
} pool_geo;

static void pool_geometry(const grad_ctx *c, const graph_ints *kernel, const graph_ints *stride,
                          const graph_ints *padding, pool_geo *q)
{
    const graph_type *x = &c->in_type[0], *y = &c->out_type[0];
    q->n = x->dim[0], q->ch = x->dim[1], q->h = x->dim[2], q->w = x->dim[3];
    q->ho = y->dim[2], q->wo = y->dim[3];
    graph_ints_pair(kernel, 1, q->k);
    if (stride->n == 0)
        q->s[0] = q->k[0], q->s[1] = q->k[1];
    else
        graph_ints_pair(stride, 1, q->s);
    graph_ints_pad4(padding, q->p);
    q->hp = q->h + q->p[0] + q->p[2];
    q->wp = q->w + q->p[1] + q->p[3];
    q->kk = q->k[0] * q->k[1];
    q->l = q->ho * q->wo * q->kk;
}

/* The flat index, in the padded H x W plane, of each window element:
 * [Ho*Wo*kh*kw], windows in row-major order, elements row-major inside. */
static grad_v window_index(grad_builder *b, const grad_ctx *c, const pool_geo *q)
{
    int64_t *idx = tg_malloc((size_t)(q->l ? q->l : 1) * sizeof *idx);
    if (!idx) {
        gu_fail(b, c, TG_ERR_NOMEM, "no memory for the window index");
        return NULL;
    }
    int64_t at = 0;
    for (int64_t i = 0; i < q->ho; i++)
        for (int64_t j = 0; j < q->wo; j++)
            for (int64_t u = 0; u < q->k[0]; u++)
                for (int64_t v = 0; v < q->k[1]; v++)
                    idx[at++] = (i * q->s[0] + u) * q->wp + j * q->s[1] + v;
    grad_v r = gu_i64(b, idx, &q->l, 1);
    tg_free(idx);
    return r;
}

/* Adds contrib [N,C,L] (one value per window element) into the padded
 * plane at idx, and cuts the padding off: x's gradient. */
static grad_v scatter_windows(grad_builder *b, const pool_geo *q, grad_v idx, grad_v contrib)
{
    int64_t plane[3] = {q->n, q->ch, q->hp * q->wp}, full[3] = {q->n, q->ch, q->l};
    graph_type tp = {0}, tf = {0};
    tp.dtype = tf.dtype = GRAPH_F32;
    tp.ndim = tf.ndim = 3;
    for (int i = 0; i < 3; i++)
        tp.dim[i] = plane[i], tf.dim[i] = full[i];
    grad_v ie = gu_expand_to(b, gu_reshape(b, idx, (int64_t[3]){1, 1, q->l}, 3), &tf);
    graph_scatter_elements_attrs at;
    graph_attrs_default(GRAPH_OP_scatter_elements, &at);
    at.axis = 2;
    at.reduction = GRAPH_SCATTER_ADD;
    grad_v in[3] = {gu_zeros(b, &tp), ie, contrib};
    grad_v gp = b->op(b, GRAPH_OP_scatter_elements, in, 3, &at);
    gp = gu_reshape(b, gp, (int64_t[4]){q->n, q->ch, q->hp, q->wp}, 4);
    if (q->p[0] || q->p[2])
        gp = gu_slice1(b, gp, 2, q->p[0], q->p[0] + q->h);
    if (q->p[1] || q->p[3])
        gp = gu_slice1(b, gp, 3, q->p[1], q->p[1] + q->w);
    return gp;
}

/* One op: max_pool2d_grad finds each window's first maximum itself, in one
 * pass (the same winner as a gather of the windows, eq against the output
 * and a cumsum for the first would pick). */
tg_status grad_rule_max_pool2d(grad_builder *b, const grad_ctx *c)
{
    const graph_max_pool2d_attrs *a = c->attrs;
    graph_max_pool2d_grad_attrs at = {a->kernel, a->stride, a->padding};
    grad_v in[2] = {G, c->in[0]};
    c->gin[0] = b->op(b, GRAPH_OP_max_pool2d_grad, in, 2, &at);
    return gu_done(c);
}

tg_status grad_rule_avg_pool2d(grad_builder *b, const grad_ctx *c)
{
    const graph_avg_pool2d_attrs *a = c->attrs;
    pool_geo q;
    pool_geometry(c, &a->kernel, &a->stride, &a->padding, &q);
    /* 1 / (each window's divisor), [Ho, Wo, 1] */
    int64_t nw = q.ho * q.wo;
    float *inv = tg_malloc((size_t)(nw ? nw : 1) * sizeof *inv);
    if (!inv)
        return gu_fail(b, c, TG_ERR_NOMEM, "no memory for the window counts");
    for (int64_t i = 0; i < q.ho; i++)
        for (int64_t j = 0; j < q.wo; j++) {
            int64_t cnt = q.kk;
            if (!a->count_include_pad) {
                int64_t r0 = i * q.s[0] - q.p[0], c0 = j * q.s[1] - q.p[1];
                int64_t r1 = r0 + q.k[0], c1 = c0 + q.k[1];
                r0 = r0 < 0 ? 0 : r0, c0 = c0 < 0 ? 0 : c0;
                r1 = r1 > q.h ? q.h : r1, c1 = c1 > q.w ? q.w : c1;
                cnt = (r1 - r0) * (c1 - c0);
            }
            inv[i * q.wo + j] = cnt > 0 ? 1.0f / (float)cnt : 0.0f;
        }
    graph_ints sh = ints((int64_t[3]){q.ho, q.wo, 1}, 3);
    grad_v scale = b->constant(b, GRAPH_F32, &sh, inv);
    tg_free(inv);
    int64_t d5[5] = {q.n, q.ch, q.ho, q.wo, q.kk}, d5y[5] = {q.n, q.ch, q.ho, q.wo, 1};
    graph_type t5 = {0};
    t5.dtype = GRAPH_F32;
    t5.ndim = 5;
    for (int i = 0; i < 5; i++)
        t5.dim[i] = d5[i];
    grad_v share = gu_op2(b, GRAPH_OP_mul, gu_reshape(b, G, d5y, 5), scale);
    grad_v contrib = gu_reshape(b, gu_expand_to(b, share, &t5), (int64_t[3]){q.n, q.ch, q.l}, 3);
    c->gin[0] = scatter_windows(b, &q, window_index(b, c, &q), contrib);
    return gu_done(c);
}

tg_status grad_rule_global_avg_pool(grad_builder *b, const grad_ctx *c)
{
    const graph_type *x = &c->in_type[0];
    int64_t s = 1;
    for (int d = 2; d < x->ndim; d++)
        s *= x->dim[d];
    c->gin[0] = gu_expand_to(b, gu_mul_s(b, G, s ? 1.0 / (double)s : 0.0), x);
    return gu_done(c);
}

/* ---- normalization ---- */

tg_status grad_rule_batch_norm(grad_builder *b, const grad_ctx *c)
{
    /* y = (x - mean) r scale + bias, r = 1 / sqrt(var + eps), per channel
     * (dim 1); the statistics are inputs (inference form) */
    const graph_batch_norm_attrs *a = c->attrs;
    const graph_type *tx = &c->in_type[0];
    graph_type tc = *tx; /* [1, C, 1, ...] */
    int64_t axes[GRAPH_MAX_DIMS];
    int na = 0;
    for (int d = 0; d < tx->ndim; d++)
        if (d != 1)
            tc.dim[d] = 1, axes[na++] = d;
    grad_v scale = c->in[1], mean = c->in[3], var = c->in[4];
    grad_v r = gu_op1(b, GRAPH_OP_rsqrt, gu_add_s(b, var, a->eps), NULL);
    grad_v sr = gu_op2(b, GRAPH_OP_mul, scale, r);
    if (NEED(0))
        c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, gu_reshape_to(b, sr, &tc));
    grad_v gsum = NULL, gxm = NULL;
    if (NEED(2) || NEED(3))
        gsum = gu_sum(b, G, axes, na, 0);
    if (NEED(1) || NEED(4)) {
        grad_v xm = gu_op2(b, GRAPH_OP_sub, c->in[0], gu_reshape_to(b, mean, &tc));
        gxm = gu_sum(b, gu_op2(b, GRAPH_OP_mul, G, xm), axes, na, 0);
    }
    if (NEED(1))
        c->gin[1] = gu_op2(b, GRAPH_OP_mul, gxm, r);
    if (NEED(2))
        c->gin[2] = gsum;
    if (NEED(3))
        c->gin[3] = gu_op1(b, GRAPH_OP_neg, gu_op2(b, GRAPH_OP_mul, gsum, sr), NULL);
    if (NEED(4)) {
        /* d r / d var = -r^3 / 2 */
        grad_v r3 = gu_op2(b, GRAPH_OP_mul, r, gu_op2(b, GRAPH_OP_mul, r, r));
        grad_v d = gu_mul_s(b, gu_op2(b, GRAPH_OP_mul, scale, r3), -0.5);
        c->gin[4] = gu_op2(b, GRAPH_OP_mul, gxm, d);
    }
    return gu_done(c);
}

tg_status grad_rule_batch_norm_train(grad_builder *b, const grad_ctx *c)
{
    /* xh = (x - mean) r, r = 1/sqrt(var + eps), y = xh scale + bias, the
     * statistics over every dim but 1 (M values per channel).  y's part is
     * the op batch_norm_train_grad (dx, dscale, dbias in two passes over
     * x); the batch statistics' gradients add to dx:
     *      + gm / M                      (from the batch mean, output 3)
     *      - gr r^2 xh / M               (from r, output 4: dr/dx = -r^3 (x - mean) / M)
     * The fused forms (a graph differentiated after -O2): with pool_kernel,
     * output 5's gradient reaches y through max_pool2d_grad(gp, y); with
     * relu (y = relu(bn)), y's gradient then goes through relu_grad(gy,
     * y), as those ops' own rules would take them. */
    if (c->gout[1] || c->gout[2])
        return gu_fail(b, c, TG_ERR_UNSUPPORTED,
                       "the running statistics (outputs 1 and 2) carry no gradient");
    const graph_type *tx = &c->in_type[0];
    graph_type tc = *tx; /* [1, C, 1, ...] */
    int64_t m = 1;
    for (int d = 0; d < tx->ndim; d++)
        if (d != 1)
            tc.dim[d] = 1, m *= tx->dim[d];
    grad_v gy = c->gout[0], gm = c->gout[3], gr = c->gout[4];
    grad_v gp = c->nout > 5 ? c->gout[5] : NULL;
    grad_v g3[3] = {NULL, NULL, NULL};
    const graph_batch_norm_train_attrs *at = c->attrs;
    if ((gp || (gy && at->relu)) && !c->out[0]) /* eager saves outputs 3 and 4 only */
        return gu_fail(b, c, TG_ERR_UNSUPPORTED,
                       "the fused forms (relu = 1, pool_kernel) are made by the optimizer; "
                       "their backward needs y, which eager does not keep: run "
                       "batch_norm_train, then relu, then max_pool2d");
    if (gp) { /* p = max_pool2d(y) */
        graph_max_pool2d_grad_attrs pa = {at->pool_kernel, at->pool_stride, at->pool_padding};
        grad_v in[2] = {gp, c->out[0]}, d = NULL;
        if (b->opn(b, GRAPH_OP_max_pool2d_grad, in, 2, &pa, &d, 1) != 1)
            return gu_done(c);
        gy = gy ? gu_op2(b, GRAPH_OP_add, gy, d) : d;
    }
    if (gy && at->relu)
        gy = gu_op2(b, GRAPH_OP_relu_grad, gy, c->out[0]);
    if (gy) {
        grad_v in[5] = {gy, c->in[0], c->in[1], c->out[3], c->out[4]};
        if (b->opn(b, GRAPH_OP_batch_norm_train_grad, in, 5, NULL, g3, 3) != 3)
            return gu_done(c);
    }
    if (NEED(0)) {
        grad_v dx = g3[0];
        if (gm) {
            grad_v t = gu_expand_to(b, gu_mul_s(b, gu_reshape_to(b, gm, &tc), 1.0 / (double)m), tx);
            dx = dx ? gu_op2(b, GRAPH_OP_add, dx, t) : t;
        }
        if (gr) {
            grad_v r = gu_reshape_to(b, c->out[4], &tc);
            grad_v xh = gu_op2(b, GRAPH_OP_mul,
                               gu_op2(b, GRAPH_OP_sub, c->in[0], gu_reshape_to(b, c->out[3], &tc)),
                               r);
            grad_v k = gu_mul_s(b, gu_op2(b, GRAPH_OP_mul, gu_reshape_to(b, gr, &tc),
                                          gu_op2(b, GRAPH_OP_mul, r, r)),
                                -1.0 / (double)m);
            grad_v t = gu_op2(b, GRAPH_OP_mul, xh, k);
            dx = dx ? gu_op2(b, GRAPH_OP_add, dx, t) : t;
        }
        c->gin[0] = dx ? dx : gu_zeros(b, tx);
    }
    if (NEED(1))
        c->gin[1] = gy ? g3[1] : gu_zeros(b, &c->in_type[1]);
    if (NEED(2))
        c->gin[2] = gy ? g3[2] : gu_zeros(b, &c->in_type[2]);
    return gu_done(c);
}

tg_status grad_rule_dropout(grad_builder *b, const grad_ctx *c)
{
    /* y = x m with m fixed by the generator: dx = g m, the same op */
    grad_v in[2] = {G, c->in[1]};
    c->gin[0] = b->op(b, GRAPH_OP_dropout, in, 2, c->attrs);
    return gu_done(c);
}

/* One op: layer_norm_grad recomputes each row's statistics from x and
 * makes dx, dweight and dbias in one pass over the rows. */
tg_status grad_rule_layer_norm(grad_builder *b, const grad_ctx *c)
{
    const graph_layer_norm_attrs *a = c->attrs;
    const graph_type *tx = &c->in_type[0];
    if (tx->ndim == 0)
        return gu_fail(b, c, TG_ERR_UNSUPPORTED, "no gradient rule for a 0-d input");
    graph_layer_norm_grad_attrs at = {a->axis, a->eps};
    grad_v in[3] = {G, c->in[0], c->nin > 1 ? c->in[1] : NULL};
    grad_v out[3] = {NULL, NULL, NULL};
    if (b->opn(b, GRAPH_OP_layer_norm_grad, in, c->nin > 1 ? 3 : 2, &at, out, 3) != 3)
        return gu_done(c);
    if (NEED(0))
        c->gin[0] = out[0];
    if (c->nin > 1 && NEED(1))
        c->gin[1] = out[1];
    if (c->nin > 2 && NEED(2))
        c->gin[2] = out[2];
    return gu_done(c);
}

tg_status grad_rule_softmax(grad_builder *b, const grad_ctx *c)
{
    /* y (g - sum(g y)) along axis */
    const graph_softmax_attrs *a = c->attrs;
    int64_t ax = graph_axis(a->axis, c->in_type[0].ndim);
    grad_v y = c->out[0];
    grad_v s = gu_sum(b, gu_op2(b, GRAPH_OP_mul, G, y), &ax, 1, 1);
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, y, gu_op2(b, GRAPH_OP_sub, G, s));
    return gu_done(c);
}

tg_status grad_rule_log_softmax(grad_builder *b, const grad_ctx *c)
{
    /* g - exp(y) sum(g) along axis */
    const graph_log_softmax_attrs *a = c->attrs;
    int64_t ax = graph_axis(a->axis, c->in_type[0].ndim);
    grad_v s = gu_sum(b, G, &ax, 1, 1);
    grad_v p = gu_op1(b, GRAPH_OP_exp, c->out[0], NULL);
    c->gin[0] = gu_op2(b, GRAPH_OP_sub, G, gu_op2(b, GRAPH_OP_mul, p, s));
    return gu_done(c);
}
