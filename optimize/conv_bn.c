/*
 * conv_bn.c - folds an inference batch_norm into the conv or linear before
 * it (-O2).
 *
 *   y = batch_norm(conv2d(x, w, b), scale, beta, mean, var)
 *     -> conv2d(x, w', b')   with, per output channel c (in double):
 *        f_c = scale_c / sqrt(var_c + eps)
 *        w'[c,...] = w[c,...] * f_c
 *        b'_c = (b_c - mean_c) * f_c + beta_c      (b_c = 0 without a bias)
 *
 * The same for conv2d_ep without epilogue steps, and for linear /
 * linear_ep (no steps) when batch_norm's channel axis (1) is the linear's
 * feature dim, i.e. the output is [N, F]: then w's rows are scaled.  And
 * for conv_transpose2d, whose weights are [C_in, O/groups, kh, kw]:
 * output channel c = g O/groups + j is w[i, j] for the C_in/groups input
 * channels i of group g, so those slices are scaled by f_c.
 *
 * Conditions: scale, beta, mean, var and the weights are constants with
 * data, the bias a constant or absent (params are swappable, so not
 * folded; fold-params makes them constants at -O2 unless keep_params);
 * the conv output is read by the batch_norm only and is not pinned; the
 * batch_norm output is not guarded (it may be a graph output); var + eps
 * > 0 with a finite factor for every channel.  Nothing depends on sizes,
 * so dynamic dims do not matter.
 */
#include <math.h>
#include <stdlib.h>

#include "../graph/alloc.h"
#include "fuse_util.h"
#include "../graph/graph_impl.h"

/* The producer of a batch_norm's input when it is a foldable kind. */
static int foldable_op(const graph *g, const graph_node *p)
{
    if (p->op == GRAPH_OP_conv2d || p->op == GRAPH_OP_linear ||
        p->op == GRAPH_OP_conv_transpose2d)
        return 1;
    if (p->op == GRAPH_OP_conv2d_ep)
        return ((const graph_conv2d_ep_attrs *)tg_node_attrs(p))->post.n == 0;
    if (p->op == GRAPH_OP_linear_ep)
        return ((const graph_linear_ep_attrs *)tg_node_attrs(p))->post.n == 0;
    return 0;
}

static const char *kind_name(graph_op op)
{
    return op == GRAPH_OP_linear || op == GRAPH_OP_linear_ep ? "linear"
           : op == GRAPH_OP_conv_transpose2d                 ? "conv_transpose2d"
                                                             : "conv";
}

/* Output channels of p (a foldable kind): w's rows, or for
 * conv_transpose2d its O/groups columns times groups. */
static int64_t out_channels(const graph *g, const graph_node *p)
{
    const graph_type *wt = &g->values[p->in[1]].type;
    if (p->op != GRAPH_OP_conv_transpose2d)
        return wt->dim[0];
    return wt->dim[1] * ((const graph_conv_transpose2d_attrs *)tg_node_attrs(p))->groups;
}

/* The output channel weight element k of p scales with (w flat). */
static int64_t weight_channel(const graph *g, const graph_node *p, int64_t k)
{
    const graph_type *wt = &g->values[p->in[1]].type;
    int64_t per = wt->ndim > 1 ? graph_type_numel(wt) / (wt->dim[0] ? wt->dim[0] : 1) : 1;
    if (p->op != GRAPH_OP_conv_transpose2d)
        return k / per;
    /* [C_in, O/groups, kh, kw]: row i in group i / (C_in/groups), column j */
    int64_t groups = ((const graph_conv_transpose2d_attrs *)tg_node_attrs(p))->groups;
    int64_t i = k / per, j = k % per / (wt->dim[2] * wt->dim[3]);
    return i / (wt->dim[0] / groups) * wt->dim[1] + j;
}

/* Why batch_norm node bn cannot fold into its producer p, or NULL. */
static const char *why_not(const graph *g, const opt_uses *u, int32_t bn, int32_t p,
                           char *buf, size_t len)
{
    static const char *const names[] = {"scale", "bias", "mean", "var"};
    const graph_node *b = &g->nodes[bn], *n = &g->nodes[p];
    const char *kind = kind_name(n->op);
    if (opt_nuses(u, b->in[0]) != 1) {
        snprintf(buf, len, "%s output has %d users", kind, (int)opt_nuses(u, b->in[0]));
        return buf;
    }
    if (opt_pinned(g, b->in[0]))
        return snprintf(buf, len, "%s output is a graph output or guarded", kind), buf;
    if (fu_guarded(g, b->out[0]))
        return "batch_norm output is guarded";
    for (int i = 1; i < 5; i++)
        if (!fu_const_f32(g, b->in[i]))
            return snprintf(buf, len, "batch_norm %s is not a constant", names[i - 1]), buf;
    if (!fu_const_f32(g, n->in[1]))
        return snprintf(buf, len, "%s weights are not a constant", kind), buf;
    if (n->nin > 2 && !fu_const_f32(g, n->in[2]))
        return snprintf(buf, len, "%s bias is not a constant", kind), buf;
    if (!strcmp(kind, "linear") && g->values[n->out[0]].type.ndim != 2)
        return snprintf(buf, len, "batch_norm channel axis is not the linear's feature dim "
                        "(output is %d-D)", (int)g->values[n->out[0]].type.ndim), buf;
    return NULL;
}

/* Per-channel factors; NULL with *bad set to the channel when var + eps <= 0. */
static double *factors(const graph *g, const graph_node *b, int64_t nc, int64_t *bad)
{
    const float *scale = fu_const_f32(g, b->in[1]), *var = fu_const_f32(g, b->in[4]);
    float eps = ((const graph_batch_norm_attrs *)tg_node_attrs(b))->eps;
    double *f = tg_malloc(sizeof *f * (size_t)(nc + 1));
    for (int64_t c = 0; f && c < nc; c++) {
        double d = (double)var[c] + eps;
        f[c] = d > 0 ? scale[c] / sqrt(d) : NAN;
        if (!isfinite(f[c])) {
            *bad = c;
            tg_free(f);
            return NULL;
        }
    }
    return f;
}

/* Builds w' and b' as constants; their ids in nw, nb (-1 on failure). */
static void fold_consts(graph *g, int32_t bn, int32_t p, const double *f, int32_t *nw,
                        int32_t *nb)
{
    const graph_node *b = &g->nodes[bn], *n = &g->nodes[p];
    const graph_type wt = g->values[n->in[1]].type;
    int64_t nc = out_channels(g, n), nw_elems = graph_type_numel(&wt);
    const float *w = fu_const_f32(g, n->in[1]);
    const float *bias = n->nin > 2 ? fu_const_f32(g, n->in[2]) : NULL;
    const float *beta = fu_const_f32(g, b->in[2]), *mean = fu_const_f32(g, b->in[3]);
    float *w2 = tg_malloc(sizeof *w2 * (size_t)(nw_elems + 1));
    float *b2 = tg_malloc(sizeof *b2 * (size_t)(nc + 1));
    *nw = *nb = -1;
    if (w2 && b2) {
        for (int64_t k = 0; k < nw_elems; k++)
            w2[k] = (float)(w[k] * f[weight_channel(g, n, k)]);
        for (int64_t c = 0; c < nc; c++)
            b2[c] = (float)(((bias ? bias[c] : 0.0) - mean[c]) * f[c] + beta[c]);
        graph_type bt = {GRAPH_F32, 1, {nc}};
        *nw = opt_add_const(g, &wt, w2);
        *nb = *nw >= 0 ? opt_add_const(g, &bt, b2) : -1;
    }
    tg_free(w2);
    tg_free(b2);
}

/* Replaces p -> bn by one node of p's kind with folded constants. */
static tg_status fold(graph *g, opt_ctx *ctx, const opt_uses *u, int32_t bn, int32_t p)
{
    int64_t nc = out_channels(g, &g->nodes[p]), bad = -1;
    double *f = factors(g, &g->nodes[bn], nc, &bad);
    if (!f) {
        if (bad >= 0)
            opt_explain(ctx, g, bn, "var + eps is not positive for channel %lld",
                        (long long)bad);
        return bad >= 0 ? TG_OK : opt_fail(ctx, g, bn, TG_ERR_NOMEM, "out of memory");
    }
    int32_t nw, nb;
    fold_consts(g, bn, p, f, &nw, &nb);
    tg_free(f);
    if (nw < 0 || nb < 0)
        return opt_fail(ctx, g, bn, TG_ERR_NOMEM, "cannot add the folded constants: %s",
                        graph_error(g));
    /* p's attributes, copied: graph_add_node may move the node array. */
    graph_attrs attrs;
    const graph_node *n = &g->nodes[p];
    graph_op op = n->op;
    if (graph_ops[op].attr_size)
        memcpy(&attrs, tg_node_attrs(n), graph_ops[op].attr_size);
    int32_t in[3] = {n->in[0], nw, nb}, out = -1, src[2] = {p, bn};
    int64_t freed = fu_freed_bytes(g, u, n->in[1], 1) +
                    (n->nin > 2 ? fu_freed_bytes(g, u, n->in[2], 1) : 0);
    for (int i = 1; i < 5; i++)
        freed += fu_freed_bytes(g, u, g->nodes[bn].in[i], 1);
    if (fu_add_node(g, ctx, op, in, 3, graph_ops[op].attr_size ? &attrs : NULL, &out, 1, src,
                    2) < 0)
        return TG_ERR_STATE;
    opt_replace_uses(g, g->nodes[bn].out[0], out);
    g->nodes[bn].flags |= GRAPH_NODE_DEAD;
    g->nodes[p].flags |= GRAPH_NODE_DEAD;
    ctx->stats->fused += 1;
    ctx->stats->bytes += freed - (int64_t)(graph_value_nbytes(&g->values[nw]) +
                                           graph_value_nbytes(&g->values[nb]));
    ctx->changed = 1;
    return TG_OK;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_uses u;
    if (opt_uses_build(g, &u) != TG_OK)
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "conv-bn: out of memory");
    tg_status st = TG_OK;
    for (int32_t i = 0, end = g->nnodes; i < end && st == TG_OK; i++) {
        const graph_node *b = &g->nodes[i];
        if ((b->flags & GRAPH_NODE_DEAD) || b->op != GRAPH_OP_batch_norm)
            continue;
        int32_t p = fu_producer(g, b->in[0]);
        if (p < 0 || !foldable_op(g, &g->nodes[p]))
            continue;
        char buf[160];
        const char *why = why_not(g, &u, i, p, buf, sizeof buf);
        if (why)
            opt_explain(ctx, g, i, "%s", why);
        else
            st = fold(g, ctx, &u, i, p);
    }
    opt_uses_free(&u);
    return st;
}

const opt_pass opt_pass_conv_bn = {"conv-bn", run};
