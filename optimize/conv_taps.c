/*
 * conv_taps.c - drops the kernel rows and columns of a conv that read
 * only padding at every output position (-O2), then splits a dilated
 * conv whose taps still read mostly padding into 1x1 convs over the
 * positions each tap reads (split, below).
 *
 * Tap u of a kernel axis (input size n, output size m, stride s,
 * dilation d, padding lo before) reads input rows o*s - lo + u*d for
 * o in [0, m): it is live when some of them fall in [0, n).  Live taps
 * are contiguous ([u0, u1]); the others multiply zeros.  DeepLabV3's
 * ASPP runs 3x3 convs with dilation 24 and 36 on 14x14 maps: only the
 * centre tap ever sees the map, so each is a 1x1 conv in disguise (and
 * oneDNN 2.6 has only its reference kernel for the dilated form in the
 * blocked layout).
 *
 *   conv2d / conv2d_ep (x, w[O, C/g, kh, kw], ...)
 *     -> the same op on w[:, :, u0..u1, v0..v1], padding top - u0*d_h,
 *        left - v0*d_w, bottom - (kh-1-u1)*d_h, right - (kw-1-v1)*d_w,
 *        and dilation 1 on an axis left with one tap
 *
 * The output size is unchanged (the cropped kernel and padding cover the
 * same span).  Exact when the dropped weights are finite (0 * inf would
 * be NaN): the weights are a constant with data, checked.  Conditions:
 * H and W of x not dynamic (the live taps depend on them), every new
 * padding >= 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../eager/kernel.h"
#include "../graph/alloc.h"
#include "fuse_util.h"
#include "../graph/graph_impl.h"

/* The live taps [*u0, *u1] of one axis; 0 if none is live. */
static int live_taps(int64_t n, int64_t m, int64_t k, int64_t s, int64_t d, int64_t lo,
                     int64_t *u0, int64_t *u1)
{
    *u0 = -1, *u1 = -1;
    for (int64_t u = 0; u < k; u++) {
        int64_t first = -lo + u * d, last = (m - 1) * s - lo + u * d;
        if (last >= 0 && first <= n - 1) {
            if (*u0 < 0)
                *u0 = u;
            *u1 = u;
        }
    }
    return *u0 >= 0;
}

/* Nonzero when none of w's n floats is inf or NaN: dropping a tap's
 * products with padding (zeros) is exact only then (0 * inf is NaN). */
static int all_finite(const float *w, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        if (!isfinite(w[j]))
            return 0;
    return 1;
}

static tg_status crop(graph *g, opt_ctx *ctx, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    const graph_value *x = &g->values[n->in[0]], *w = &g->values[n->in[1]];
    const graph_value *y = &g->values[n->out[0]];
    if (x->type.ndim != 4 || (x->dyn & 0xcu) || w->type.dtype != GRAPH_F32 || !w->data ||
        w->type.ndim != 4 || fu_guarded(g, n->out[0]))
        return TG_OK;
    graph_attrs attrs; /* a copy: graph_add_node may move the nodes */
    memcpy(&attrs, tg_node_attrs(n), graph_ops[n->op].attr_size);
    graph_ints *sp, *pp, *dp;
    if (n->op == GRAPH_OP_conv2d) {
        graph_conv2d_attrs *c = &attrs.conv2d;
        sp = &c->stride, pp = &c->padding, dp = &c->dilation;
    } else {
        graph_conv2d_ep_attrs *c = &attrs.conv2d_ep;
        sp = &c->stride, pp = &c->padding, dp = &c->dilation;
    }
    int64_t st[2], dil[2], pad[4], u0, u1, v0, v1;
    const graph_type *wt = &w->type;
    graph_ints_pair(sp, 1, st);
    graph_ints_pair(dp, 1, dil);
    graph_ints_pad4(pp, pad);
    if (!live_taps(x->type.dim[2], y->type.dim[2], wt->dim[2], st[0], dil[0], pad[0], &u0, &u1) ||
        !live_taps(x->type.dim[3], y->type.dim[3], wt->dim[3], st[1], dil[1], pad[1], &v0, &v1) ||
        (u0 == 0 && u1 == wt->dim[2] - 1 && v0 == 0 && v1 == wt->dim[3] - 1))
        return TG_OK;
    int64_t np[4] = {pad[0] - u0 * dil[0], pad[1] - v0 * dil[1],
                     pad[2] - (wt->dim[2] - 1 - u1) * dil[0], pad[3] - (wt->dim[3] - 1 - v1) * dil[1]};
    if (np[0] < 0 || np[1] < 0 || np[2] < 0 || np[3] < 0) {
        opt_explain(ctx, g, i, "taps %lld..%lld x %lld..%lld read only padding, but dropping "
                               "them needs a negative padding",
                    (long long)u0, (long long)u1, (long long)v0, (long long)v1);
        return TG_OK;
    }
    const float *src = w->data;
    int64_t kh = wt->dim[2], kw = wt->dim[3], nk = wt->dim[0] * wt->dim[1];
    if (!all_finite(src, nk * kh * kw)) {
        opt_explain(ctx, g, i, "taps read only padding, but the weights are not finite");
        return TG_OK;
    }
    int64_t h2 = u1 - u0 + 1, w2 = v1 - v0 + 1;
    graph_type nt = {GRAPH_F32, 4, {wt->dim[0], wt->dim[1], h2, w2}};
    float *dst = tg_malloc((size_t)(nk * h2 * w2) * sizeof *dst + 1);
    if (!dst)
        return opt_fail(ctx, g, i, TG_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j < nk; j++)
        for (int64_t u = 0; u < h2; u++)
            for (int64_t v = 0; v < w2; v++)
                dst[(j * h2 + u) * w2 + v] = src[(j * kh + u0 + u) * kw + v0 + v];
    int32_t nw = opt_add_const(g, &nt, dst);
    tg_free(dst);
    if (nw < 0)
        return opt_fail(ctx, g, i, TG_ERR_NOMEM, "cannot add the cropped weights");
    *pp = (graph_ints){4, {np[0], np[1], np[2], np[3]}};
    *dp = (graph_ints){2, {h2 == 1 ? 1 : dil[0], w2 == 1 ? 1 : dil[1]}};
    n = &g->nodes[i];
    int32_t in[GRAPH_MAX_NODE_IO], out;
    for (int k = 0; k < n->nin; k++)
        in[k] = n->in[k];
    in[1] = nw;
    opt_explain(ctx, g, i, "kernel %lldx%lld -> %lldx%lld: the other taps read only padding",
                (long long)kh, (long long)kw, (long long)h2, (long long)w2);
    graph_op op = n->op;
    int nin = n->nin;
    if (fu_add_node(g, ctx, op, in, nin, &attrs, &out, 1, &i, 1) < 0)
        return TG_ERR_STATE;
    opt_replace_uses(g, g->nodes[i].out[0], out);
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    ctx->stats->rewritten++;
    ctx->changed = 1;
    return TG_OK;
}

/* Output positions [*o0, *o1) of one axis where tap u reads the input
 * (stride 1): o - lo + u*d in [0, n). */
static void tap_range(int64_t n, int64_t m, int64_t d, int64_t lo, int64_t u, int64_t *o0,
                      int64_t *o1)
{
    int64_t a = lo - u * d, b = n + lo - u * d;
    *o0 = a < 0 ? 0 : a > m ? m : a;
    *o1 = b < *o0 ? *o0 : b > m ? m : b;
}

/* Adds a node of one output; -1 on failure (ctx->err says why). */
static int32_t add1(graph *g, opt_ctx *ctx, graph_op op, const int32_t *in, int nin,
                    const void *attrs, int32_t src)
{
    int32_t out = -1;
    return fu_add_node(g, ctx, op, in, nin, attrs, &out, 1, &src, 1) < 0 ? -1 : out;
}

/*
 * A stride-1 dilated conv whose taps mostly read padding: the sum of one
 * 1x1 conv per tap over the output rows and columns where that tap reads
 * the input (-O2).  DeepLabV3's ASPP conv of dilation 12 on a 14x14 map:
 * the centre tap reads the map at every position, the others at 2 of the
 * 14 rows or columns, so im2col + GEMM multiplied 9 taps where 1.65 were
 * live, and oneDNN 2.6 has no direct kernel for it in either layout.
 *
 *   y = conv1x1(x[window of a full tap], w[:, :, u, v], b)
 *       + sum over the other live taps t of
 *         pad(conv1x1(x[window of t], w[:, :, u_t, v_t]), to y's size)
 *
 * Conditions: conv2d (the epilogue pass comes later), not grouped,
 * stride 1, dilation above 1 on an axis, static H and W, finite constant
 * weights, a tap that reads the input at every output position (it
 * carries the bias), and live positions under half of taps x positions.
 * The sum is in another order than the conv's: float rounding only.
 */
static tg_status split(graph *g, opt_ctx *ctx, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    const graph_value *x = &g->values[n->in[0]], *w = &g->values[n->in[1]];
    const graph_value *y = &g->values[n->out[0]];
    if (n->op != GRAPH_OP_conv2d || x->type.ndim != 4 || (x->dyn & 0xcu) ||
        w->type.dtype != GRAPH_F32 || !w->data || w->type.ndim != 4 ||
        fu_guarded(g, n->out[0]))
        return TG_OK;
    const graph_conv2d_attrs *at = tg_node_attrs(n);
    int64_t st[2], dil[2], pad[4];
    graph_ints_pair(&at->stride, 1, st);
    graph_ints_pair(&at->dilation, 1, dil);
    graph_ints_pad4(&at->padding, pad);
    const graph_type *wt = &w->type, *xt = &x->type, *yt = &y->type;
    int64_t kh = wt->dim[2], kw = wt->dim[3], oh = yt->dim[2], ow = yt->dim[3];
    if (at->groups != 1 || st[0] != 1 || st[1] != 1 || (dil[0] == 1 && dil[1] == 1) ||
        kh * kw < 2 || kh * kw > 64 || oh * ow == 0)
        return TG_OK;
    int64_t live = 0, full = -1;
    for (int64_t u = 0; u < kh; u++)
        for (int64_t v = 0; v < kw; v++) {
            int64_t r0, r1, c0, c1;
            tap_range(xt->dim[2], oh, dil[0], pad[0], u, &r0, &r1);
            tap_range(xt->dim[3], ow, dil[1], pad[1], v, &c0, &c1);
            live += (r1 - r0) * (c1 - c0);
            if (full < 0 && r0 == 0 && r1 == oh && c0 == 0 && c1 == ow)
                full = u * kw + v;
        }
    if (full < 0 || 2 * live >= kh * kw * oh * ow)
        return TG_OK;
    const float *src = w->data;
    int64_t o = wt->dim[0], c = wt->dim[1];
    if (!all_finite(src, o * c * kh * kw))
        return TG_OK;
    float *wtap = tg_malloc((size_t)(o * c) * sizeof *wtap + 1);
    if (!wtap)
        return opt_fail(ctx, g, i, TG_ERR_NOMEM, "out of memory");
    int32_t x_id = n->in[0], b_id = n->nin > 2 ? n->in[2] : -1, acc = -1;
    graph_conv2d_attrs one = {TG_INTS(1), TG_INTS(0), TG_INTS(1), 1};
    int ntaps = 0;
    tg_status rc = TG_OK;
    /* the full tap first (it takes the bias), then the others in order */
    for (int64_t k = -1; k < kh * kw && rc == TG_OK; k++) {
        int64_t t = k < 0 ? full : k;
        if (k >= 0 && t == full)
            continue;
        int64_t u = t / kw, v = t % kw, r0, r1, c0, c1;
        tap_range(xt->dim[2], oh, dil[0], pad[0], u, &r0, &r1);
        tap_range(xt->dim[3], ow, dil[1], pad[1], v, &c0, &c1);
        if (r1 <= r0 || c1 <= c0)
            continue;
        for (int64_t j = 0; j < o * c; j++)
            wtap[j] = src[j * kh * kw + t];
        graph_type tt = {GRAPH_F32, 4, {o, c, 1, 1}};
        int32_t wid = opt_add_const(g, &tt, wtap), xin = x_id;
        if (wid < 0) {
            rc = opt_fail(ctx, g, i, TG_ERR_NOMEM, "cannot add a tap's weights");
            break;
        }
        /* the input window this tap reads for output rows [r0, r1) and
         * columns [c0, c1) */
        int64_t ih0 = r0 - pad[0] + u * dil[0], iw0 = c0 - pad[1] + v * dil[1];
        if (ih0 != 0 || iw0 != 0 || r1 - r0 != xt->dim[2] || c1 - c0 != xt->dim[3]) {
            graph_slice_attrs sa = {TG_INTS(2, 3), TG_INTS(ih0, iw0),
                                    TG_INTS(ih0 + r1 - r0, iw0 + c1 - c0), TG_INTS(1, 1)};
            if ((xin = add1(g, ctx, GRAPH_OP_slice, &x_id, 1, &sa, i)) < 0) {
                rc = TG_ERR_STATE;
                break;
            }
        }
        int32_t cin[3] = {xin, wid, b_id};
        int32_t yt_id = add1(g, ctx, GRAPH_OP_conv2d, cin, acc < 0 && b_id >= 0 ? 3 : 2, &one, i);
        if (yt_id < 0) {
            rc = TG_ERR_STATE;
            break;
        }
        if (acc < 0) {
            acc = yt_id;
        } else {
            if (r0 != 0 || c0 != 0 || r1 != oh || c1 != ow) {
                graph_pad_attrs pa = {TG_INTS(0, 0, r0, c0, 0, 0, oh - r1, ow - c1), 0.0f};
                if ((yt_id = add1(g, ctx, GRAPH_OP_pad, &yt_id, 1, &pa, i)) < 0) {
                    rc = TG_ERR_STATE;
                    break;
                }
            }
            int32_t ain[2] = {acc, yt_id};
            if ((acc = add1(g, ctx, GRAPH_OP_add, ain, 2, NULL, i)) < 0) {
                rc = TG_ERR_STATE;
                break;
            }
        }
        ntaps++;
    }
    tg_free(wtap);
    if (rc != TG_OK)
        return rc;
    opt_explain(ctx, g, i,
                "dilated %lldx%lld conv split into %d 1x1 convs over the positions each tap "
                "reads (%.0f%% of taps x positions live)",
                (long long)kh, (long long)kw, ntaps, 100.0 * (double)live / (double)(kh * kw * oh * ow));
    opt_replace_uses(g, g->nodes[i].out[0], acc);
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    ctx->stats->rewritten++;
    ctx->changed = 1;
    return TG_OK;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    tg_status st = TG_OK;
    for (int32_t i = 0, end = g->nnodes; i < end && st == TG_OK; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD) &&
            (n->op == GRAPH_OP_conv2d || n->op == GRAPH_OP_conv2d_ep))
            st = crop(g, ctx, i);
    }
    /* after the crops: the kernels left have only live rows and columns */
    for (int32_t i = 0, end = g->nnodes; i < end && st == TG_OK; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD) && n->op == GRAPH_OP_conv2d)
            st = split(g, ctx, i);
    }
    return st;
}

const opt_pass opt_pass_conv_taps = {"conv-taps", run};
