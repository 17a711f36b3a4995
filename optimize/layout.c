/*
 * layout.c - layout transformation for conv chains (-O3): convolutions
 * run in oneDNN's blocked nChw16c layout (measured: 3x3 64->64 56x56 on
 * one core, plain NCHW ~1.7 ms, blocked ~1.0 ms, Winograd ~0.5 ms) and the
 * values between them stay blocked, so the layout is converted only where
 * a chain starts and where a value leaves it.
 *
 * A blocked value is a plain 5-D tensor [N,C/16,H,W,16] (graph/
 * infer_blocked.c), so the IR needs no layout attribute:
 *   - every conv2d / conv2d_ep (grouped and depthwise ones too: oneDNN
 *     runs a depthwise conv in nChw16c with its jit_dw kernel, 20-50x
 *     faster than the per-group GEMM it gets in NCHW) with an f32
 *     [N,C,H,W] input, C and the output channels multiples of 16, and
 *     only N dynamic becomes
 *     conv2d_blk (algo auto: the kernel picks Winograd for 3x3 stride 1),
 *     its input and residual taken blocked (a to_blocked is made once per
 *     plain value entering the chain); a missing bias becomes zeros;
 *   - an elementwise op with an f32 output of such a 4-D shape, at least
 *     one input already blocked and every input either of the output's
 *     exact type or a one-element value, is rebuilt on blocked inputs
 *     (relu, a residual add, a fused chain...);
 *   - a from_blocked is made for each chain value still read by an
 *     unconverted node or named as a graph output, which then read it.
 * Nodes are visited in order (the manager keeps them sorted), so a
 * node's inputs are decided before it.  A chain value read by a guard is
 * never replaced: its producer stays plain (declined with a reason).
 *
 * Also, every to_blocked(from_blocked(v)) becomes v (this pass never makes
 * such a pair, but a graph may hold one), so running twice is a no-op.
 *
 * Declines are explained: "input channels 3 are not a multiple of 16",
 * "a dynamic dim other than the batch", ...
 *
 * oneDNN is asked, for each conv that fits, which implementation its
 * conv2d_blk kernel would run (eager_dnnl_impl_of, on one thread): where
 * it has only its reference loops in the blocked layout (oneDNN 2.6: the
 * 3x3 convs of a DeepLabV3 ASPP, 256 channels with dilation 12 and more,
 * ~1.2 s each against ~33 ms plain, which runs gemm:jit), or cannot make
 * the blocked primitive at all, the conv stays plain.
 */
#include <stdlib.h>
#include <string.h>

#include "../eager/dnnl_util.h"
#include "../graph/alloc.h"
#include "fuse_util.h"

#define BLK 16

typedef struct lay {
    graph *g;
    opt_ctx *ctx;
    int32_t *blk;  /* plain value -> its blocked counterpart, or -1 */
    uint8_t *made; /* plain value produced by a converted node */
    int32_t nv;    /* values when the pass started */
} lay;

static int is_output(const graph *g, int32_t v)
{
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].value == v)
            return 1;
    return 0;
}

/* f32 [N,C,H,W] with C % 16 == 0 and only N dynamic. */
static int blockable(const graph *g, int32_t v)
{
    const graph_value *val = &g->values[v];
    return val->type.dtype == GRAPH_F32 && val->type.ndim == 4 && val->type.dim[1] % BLK == 0 &&
           !(val->dyn & ~1u);
}

/* The blocked counterpart of plain v, made on first use (prov of node). */
static int32_t get_blocked(lay *L, int32_t v, int32_t node)
{
    if (v < L->nv && L->blk[v] >= 0)
        return L->blk[v];
    graph_to_blocked_attrs at = {BLK};
    int32_t out;
    if (fu_add_node(L->g, L->ctx, GRAPH_OP_to_blocked, &v, 1, &at, &out, 1, &node, 1) < 0)
        return -1;
    if (v < L->nv)
        L->blk[v] = out;
    return out;
}

/* [N,C,H,W] -> the blocked [N,C/16,H,W,16]. */
static graph_type blocked_type(const graph_type *t)
{
    graph_type b = {GRAPH_F32, 5, {t->dim[0], t->dim[1] / BLK, t->dim[2], t->dim[3], BLK}};
    return b;
}

/*
 * The conv2d_blk node i would become (convert_conv): its attrs and input
 * types, the bias always present.  Returns the input count.
 */
static int blk_form(const graph *g, int32_t i, graph_conv2d_blk_attrs *at, graph_type in[4],
                    graph_type *out)
{
    const graph_node *n = &g->nodes[i];
    memset(at, 0, sizeof *at);
    if (n->op == GRAPH_OP_conv2d) {
        const graph_conv2d_attrs *c = graph_node_attrs(n);
        at->stride = c->stride, at->padding = c->padding, at->dilation = c->dilation;
        at->groups = c->groups;
    } else {
        const graph_conv2d_ep_attrs *c = graph_node_attrs(n);
        at->stride = c->stride, at->padding = c->padding, at->dilation = c->dilation;
        at->groups = c->groups, at->post = c->post, at->alpha = c->alpha;
    }
    const graph_type *w = &g->values[n->in[1]].type;
    in[0] = blocked_type(&g->values[n->in[0]].type);
    in[1] = *w;
    in[2] = (graph_type){GRAPH_F32, 1, {w->dim[0]}};
    *out = blocked_type(&g->values[n->out[0]].type);
    if (n->nin > 3)
        in[3] = blocked_type(&g->values[n->in[3]].type);
    return n->nin > 3 ? 4 : 3;
}

/*
 * Why oneDNN's blocked kernel does not fit conv node i (a reference
 * implementation, or none), or NULL.
 */
static const char *impl_decline(const graph *g, int32_t i, char *buf, size_t len)
{
    graph_conv2d_blk_attrs at;
    graph_type in[4], out;
    char impl[64], err[160];
    int nin = blk_form(g, i, &at, in, &out);
    tg_status st = eager_dnnl_impl_of(GRAPH_OP_conv2d_blk, &at, in, nin, &out, 2u, 1, impl,
                                      sizeof impl, err, sizeof err);
    if (st != TG_OK)
        snprintf(buf, len, "left plain: oneDNN cannot run it in the blocked layout (%s)",
                 err[0] ? err : tg_status_str(st));
    else if (eager_dnnl_impl_is_ref(impl))
        snprintf(buf, len,
                 "left plain: oneDNN has only a reference kernel for it in the blocked "
                 "layout (%s)", impl);
    else
        return NULL;
    return buf;
}

/* Why conv node i cannot go blocked, or NULL. */
static const char *conv_decline(const graph *g, int32_t i, char *buf, size_t len)
{
    const graph_node *n = &g->nodes[i];
    const graph_value *x = &g->values[n->in[0]], *y = &g->values[n->out[0]];
    if (x->type.ndim != 4 || x->type.dim[1] % BLK)
        snprintf(buf, len, "input channels %lld are not a multiple of 16",
                 (long long)x->type.dim[1]);
    else if (y->type.dim[1] % BLK)
        snprintf(buf, len, "output channels %lld are not a multiple of 16",
                 (long long)y->type.dim[1]);
    else if (!blockable(g, n->in[0]) || !blockable(g, n->out[0]))
        snprintf(buf, len, "a dynamic dim other than the batch");
    else if (fu_guarded(g, n->out[0]))
        snprintf(buf, len, "output is guarded (must stay plain)");
    else
        return impl_decline(g, i, buf, len);
    return buf;
}

/* conv2d / conv2d_ep node i -> conv2d_blk on blocked values. */
static tg_status convert_conv(lay *L, int32_t i)
{
    graph *g = L->g;
    graph_node n = g->nodes[i];
    graph_conv2d_blk_attrs at = {0};
    if (n.op == GRAPH_OP_conv2d) {
        const graph_conv2d_attrs *c = graph_node_attrs(&n);
        at.stride = c->stride, at.padding = c->padding, at.dilation = c->dilation;
        at.groups = c->groups, at.clip_min = -INFINITY, at.clip_max = INFINITY;
    } else {
        const graph_conv2d_ep_attrs *c = graph_node_attrs(&n);
        at.stride = c->stride, at.padding = c->padding, at.dilation = c->dilation;
        at.groups = c->groups, at.post = c->post, at.alpha = c->alpha;
        at.clip_min = c->clip_min, at.clip_max = c->clip_max;
    }
    int32_t in[4] = {get_blocked(L, n.in[0], i), n.in[1], -1, -1}, out;
    if (in[0] < 0)
        return TG_ERR_STATE;
    if (n.nin > 2) {
        in[2] = n.in[2];
    } else {
        graph_type bt = {GRAPH_F32, 1, {g->values[n.in[1]].type.dim[0]}};
        float *z = tg_calloc((size_t)bt.dim[0] + 1, sizeof *z);
        in[2] = z ? opt_add_const(g, &bt, z) : -1;
        tg_free(z);
        if (in[2] < 0)
            return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "cannot add a zero bias");
    }
    if (n.nin > 3 && (in[3] = get_blocked(L, n.in[3], i)) < 0)
        return TG_ERR_STATE;
    if (fu_add_node(g, L->ctx, GRAPH_OP_conv2d_blk, in, n.nin > 3 ? 4 : 3, &at, &out, 1, &i,
                    1) < 0)
        return TG_ERR_STATE;
    L->blk[n.out[0]] = out;
    L->made[n.out[0]] = 1;
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    L->ctx->stats->rewritten++;
    return TG_OK;
}

/* Elementwise node i fits the chain: see the file comment. */
static int ew_fits(const lay *L, int32_t i)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    int any = 0;
    if (!(graph_ops[n->op].props & GRAPH_PROP_ELEMENTWISE) || n->nout != 1 ||
        !blockable(g, n->out[0]) || fu_guarded(g, n->out[0]))
        return 0;
    for (int k = 0; k < n->nin; k++) {
        int32_t v = n->in[k];
        if (v < L->nv && L->made[v])
            any = 1;
        if (!fu_same_type(g, v, n->out[0]) &&
            !(graph_type_numel(&g->values[v].type) == 1 && g->values[v].type.ndim <= 5 &&
              !g->values[v].dyn))
            return 0;
    }
    return any;
}

static tg_status convert_ew(lay *L, int32_t i)
{
    graph *g = L->g;
    graph_node n = g->nodes[i];
    int32_t *in = tg_calloc((size_t)n.nin, sizeof *in), out;
    if (!in)
        return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "out of memory");
    tg_status st = TG_OK;
    for (int k = 0; k < n.nin && st == TG_OK; k++) {
        in[k] = n.in[k];
        if (fu_same_type(g, n.in[k], n.out[0]) && (in[k] = get_blocked(L, n.in[k], i)) < 0)
            st = TG_ERR_STATE;
    }
    if (st == TG_OK && fu_add_node(g, L->ctx, n.op, in, n.nin, graph_node_attrs(&n), &out, 1,
                                   &i, 1) < 0)
        st = TG_ERR_STATE;
    tg_free(in);
    if (st != TG_OK)
        return st;
    L->blk[n.out[0]] = out;
    L->made[n.out[0]] = 1;
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    L->ctx->stats->rewritten++;
    return TG_OK;
}

/* from_blocked for every chain value read outside the chain. */
static tg_status exits(lay *L, const opt_uses *u)
{
    graph *g = L->g;
    for (int32_t v = 0; v < L->nv; v++) {
        if (!L->made[v])
            continue;
        int outside = is_output(g, v);
        for (int32_t k = u->first[v]; k < u->first[v + 1] && !outside; k++)
            outside = !(g->nodes[u->list[k]].flags & GRAPH_NODE_DEAD);
        if (!outside)
            continue;
        int32_t src = g->values[v].node, out;
        if (fu_add_node(g, L->ctx, GRAPH_OP_from_blocked, &L->blk[v], 1, NULL, &out, 1, &src,
                        1) < 0)
            return TG_ERR_STATE;
        opt_replace_uses(g, v, out);
    }
    return TG_OK;
}

/* to_blocked(from_blocked(v)) -> v. */
static void cancel_pairs(graph *g, opt_ctx *ctx)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        graph_node *n = &g->nodes[i];
        if ((n->flags & GRAPH_NODE_DEAD) || n->op != GRAPH_OP_to_blocked)
            continue;
        int32_t p = fu_producer(g, n->in[0]);
        if (p < 0 || g->nodes[p].op != GRAPH_OP_from_blocked || fu_guarded(g, n->out[0]) ||
            !fu_same_type(g, g->nodes[p].in[0], n->out[0]))
            continue;
        opt_replace_uses(g, n->out[0], g->nodes[p].in[0]);
        n->flags |= GRAPH_NODE_DEAD;
        ctx->stats->removed++;
        ctx->changed = 1;
    }
}

static tg_status convert_all(lay *L)
{
    graph *g = L->g;
    char why[320];
    int32_t nn = g->nnodes;
    for (int32_t i = 0; i < nn; i++) {
        graph_op op = g->nodes[i].op;
        tg_status st = TG_OK;
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        if (op == GRAPH_OP_conv2d || op == GRAPH_OP_conv2d_ep) {
            const char *r = conv_decline(g, i, why, sizeof why);
            if (r)
                opt_explain(L->ctx, g, i, "%s", r);
            else
                st = convert_conv(L, i);
        } else if (ew_fits(L, i)) {
            st = convert_ew(L, i);
        }
        if (st != TG_OK)
            return st;
    }
    return TG_OK;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    cancel_pairs(g, ctx);
    lay L = {g, ctx, NULL, NULL, g->nvalues};
    opt_uses u;
    tg_status st = opt_uses_build(g, &u);
    if (st != TG_OK)
        return opt_fail(ctx, g, -1, st, "out of memory building uses");
    L.blk = tg_malloc(((size_t)L.nv + 1) * sizeof *L.blk);
    L.made = tg_calloc((size_t)L.nv + 1, 1);
    if (!L.blk || !L.made) {
        st = opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    } else {
        for (int32_t v = 0; v < L.nv; v++)
            L.blk[v] = -1;
        int32_t before = g->nnodes;
        st = convert_all(&L);
        if (st == TG_OK)
            st = exits(&L, &u);
        if (g->nnodes != before)
            ctx->changed = 1;
    }
    tg_free(L.blk);
    tg_free(L.made);
    opt_uses_free(&u);
    return st;
}

const opt_pass opt_pass_layout = {"layout", run};
