/*
 * conv_taps.c - drops the kernel rows and columns of a conv that read
 * only padding at every output position (-O2).
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
    for (int64_t j = 0; j < nk * kh * kw; j++)
        if (!isfinite(src[j])) {
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

static tg_status run(graph *g, opt_ctx *ctx)
{
    tg_status st = TG_OK;
    for (int32_t i = 0, end = g->nnodes; i < end && st == TG_OK; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD) &&
            (n->op == GRAPH_OP_conv2d || n->op == GRAPH_OP_conv2d_ep))
            st = crop(g, ctx, i);
    }
    return st;
}

const opt_pass opt_pass_conv_taps = {"conv-taps", run};
