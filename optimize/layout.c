/*
 * layout.c - layout transformation for conv chains (-O3): convolutions
 * run in oneDNN's blocked nChw16c layout (measured: 3x3 64->64 56x56 on
 * one core, plain NCHW ~1.7 ms, blocked ~1.0 ms, Winograd ~0.5 ms) and the
 * values between them stay blocked, so the layout is converted only where
 * a chain starts and where a value leaves it.
 *
 * A blocked value is a plain 5-D tensor [N,ceil(C/16),H,W,16] (graph/
 * infer_blocked.c), so the IR needs no layout attribute:
 *   - every conv2d / conv2d_ep with an f32 [N,C,H,W] input and only N
 *     dynamic becomes conv2d_blk (algo auto: the kernel picks Winograd
 *     for 3x3 stride 1), its input and residual taken blocked (a
 *     to_blocked is made once per plain value entering the chain); a
 *     missing bias becomes zeros.  Grouped and depthwise convs too:
 *     oneDNN runs a depthwise conv in nChw16c with its jit_dw kernel,
 *     20-50x faster than the per-group GEMM it gets in NCHW.  Any channel
 *     count: a C that is not a multiple of 16 has its last block padded
 *     with zero lanes (mobilenet's 24, shufflenet's 58...: measured on
 *     mobilenet_v3_small, 3.2 ms with such convs plain, 1.7 ms padded);
 *   - a conv whose x has fewer than 16 channels and is not in a chain yet
 *     (an RGB stem) reads x plain and writes blocked (oneDNN's nchw ->
 *     nChw16c kernel), rather than padding 3 channels to 16;
 *   - an elementwise op with an f32 output of such a 4-D shape, at least
 *     one input already blocked and every input either of the output's
 *     exact type or a one-element value, is rebuilt on blocked inputs
 *     (relu, a residual add, a fused chain...).  When the output's blocks
 *     are padded, only if the op maps zero lanes to zeros (run once on
 *     zeros here: add, mul, relu, silu do; sigmoid, x + 3 do not), so the
 *     padded lanes stay zeros for the next conv, which reads them against
 *     zero weights (a NaN or inf there would spread);
 *   - an elementwise input of the output's channels broadcast over N, H
 *     or W ([N,C,1,1], [1,C,1,1]) is taken blocked too, and the
 *     global_avg_pool of a chain value becomes an H x W avg_pool2d_blk over the
 *     blocked H and W: a squeeze-and-excitation block (pool, two 1x1
 *     convs, the gate's mul) stays in the chain;
 *   - max_pool2d / avg_pool2d of a chain value become their _blk forms;
 *   - a channel concat of values whose channels are multiples of 16, one
 *     of them in the chain, concatenates their blocks;
 *   - a batch_norm of a chain value with constant statistics becomes a
 *     depthwise 1x1 conv2d_blk (with the relu that alone reads it as its
 *     epilogue);
 *   - a from_blocked is made for each chain value still read by an
 *     unconverted node or named as a graph output, which then read it.
 * Nodes are visited in order (the manager keeps them sorted), so a
 * node's inputs are decided before it.  A chain value read by a guard is
 * never replaced: its producer stays plain (declined with a reason).
 *
 * The pass plans all that first (plan_all), grouping the nodes into
 * regions, then a cost model (layout_cost.c) keeps a region plain where its
 * conversions cost more than its convs gain blocked: a lone 1x1 conv
 * between plain ops is not wrapped in two conversions.  Only then does it
 * rewrite (convert_all).
 *
 * Also, every to_blocked(from_blocked(v)) becomes v (this pass never makes
 * such a pair, but a graph may hold one) where v's padded lanes are known
 * zeros (v made by to_blocked or conv2d_blk), so running twice is a no-op.
 *
 * Declines are explained: "a dynamic dim other than the batch", "output
 * is guarded (must stay plain)", "oneDNN has only a reference kernel...",
 * "lone conv kept plain: its 2 conversions (...) cost more than...".
 *
 * oneDNN is asked, for each conv that fits, which implementation its
 * conv2d_blk kernel would run (eager_dnnl_impl_of, on one thread): where
 * it has only its reference loops in the blocked layout (oneDNN 2.6: the
 * 3x3 convs of a DeepLabV3 ASPP, 256 channels with dilation 12 and more,
 * ~1.2 s each against ~33 ms plain, which runs gemm:jit), or cannot make
 * the blocked primitive at all, the conv stays plain.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../eager/cpu_target.h"
#include "../eager/kernel.h"
#include "../graph/alloc.h"
#include "layout_impl.h"
#include "../graph/graph_impl.h"

int layout_is_output(const graph *g, int32_t v)
{
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].value == v)
            return 1;
    return 0;
}

/* f32 [N,C,H,W] with only N dynamic. */
static int blockable(const graph *g, int32_t v)
{
    const graph_value *val = &g->values[v];
    return val->type.dtype == GRAPH_F32 && val->type.ndim == 4 && !(val->dyn & ~1u);
}

/* The blocked counterpart of plain v, made on first use (prov of node). */
static int32_t get_blocked(lay *L, int32_t v, int32_t node)
{
    if (v < L->nv && L->blk[v] >= 0)
        return L->blk[v];
    graph_to_blocked_attrs at = {L->bs};
    int32_t out;
    if (fu_add_node(L->g, L->ctx, GRAPH_OP_to_blocked, &v, 1, &at, &out, 1, &node, 1) < 0)
        return -1;
    if (v < L->nv)
        L->blk[v] = out;
    return out;
}

/* [N,C,H,W] -> the blocked [N,ceil(C/bs),H,W,bs]. */
graph_type layout_blocked_type(const graph_type *t, int bs)
{
    graph_type b = {GRAPH_F32, 5,
                    {t->dim[0], (t->dim[1] + bs - 1) / bs, t->dim[2], t->dim[3], bs}};
    return b;
}

/*
 * Conv node i reads its x plain (a stem: oneDNN reads NCHW and writes
 * nChw16c, ~2x faster than padding 3 channels to a block of 16): x has
 * fewer than 16 channels and is not in the chain already.
 */
static int stem_input(const lay *L, int32_t i)
{
    int32_t v = L->g->nodes[i].in[0];
    return L->g->values[v].type.dim[1] < L->bs && !(v < L->nv && L->blk[v] >= 0);
}

/* conv2d / conv2d_ep node n's attributes as conv2d_blk's (algo auto). */
graph_conv2d_blk_attrs layout_blk_attrs(const graph_node *n, int bs)
{
    graph_conv2d_blk_attrs at = {.block = bs};
    if (n->op == GRAPH_OP_conv2d) {
        const graph_conv2d_attrs *c = tg_node_attrs(n);
        at.stride = c->stride, at.padding = c->padding, at.dilation = c->dilation;
        at.groups = c->groups, at.clip_min = -INFINITY, at.clip_max = INFINITY;
    } else {
        const graph_conv2d_ep_attrs *c = tg_node_attrs(n);
        at.stride = c->stride, at.padding = c->padding, at.dilation = c->dilation;
        at.groups = c->groups, at.post = c->post, at.alpha = c->alpha;
        at.clip_min = c->clip_min, at.clip_max = c->clip_max;
    }
    return at;
}

/* The groups of a conv with `groups` packed k to a group of 16. */
static int64_t packed_groups(int64_t groups, int k)
{
    return (groups + k - 1) / k;
}

/*
 * Grouped convs with few channels per group (regnet's 8): oneDNN 2.6 has
 * only its reference kernel for them in nChw16c, and runs them in NCHW as
 * a GEMM per group.  k = 16 / cg groups of cg input and cg output
 * channels each are packed into one group of 16, the weights
 * block-diagonal (zeros between the packed groups; a last, partial group
 * zero-padded): twice the multiplies for cg = 8, but oneDNN's blocked
 * grouped kernel (measured, 104 channels in 13 groups, 28x28 3x3, one
 * thread: 0.55 ms as 13 GEMMs in NCHW, 0.24 ms as 7 blocked groups of 16).
 * The padded output channels come out as the epilogue of 0, so only an
 * epilogue that maps 0 to 0 (relu, a residual add, silu...) qualifies, and
 * only 16 channels or more (fewer would be read plain, as a stem).
 * Returns k, or 1 when the conv does not fit.
 */
static int regroup_k(const graph *g, int32_t i, int bs)
{
    const graph_node *n = &g->nodes[i];
    const graph_type *w = &g->values[n->in[1]].type;
    graph_conv2d_blk_attrs at = layout_blk_attrs(n, bs);
    int64_t cg = w->dim[1];
    if (at.groups < 2 || w->dim[0] != cg * at.groups || cg < 2 || bs % cg || w->dim[0] < bs ||
        !g->values[n->in[1]].data || (n->nin > 2 && !g->values[n->in[2]].data))
        return 1;
    if (at.post.n) { /* the epilogue of 0 (a residual's padded lanes are 0) */
        float y = 0.0f, zero = 0.0f;
        eager_post_apply(&y, 1, &at.post, GRAPH_POST_PRM(&at), &zero, 1);
        if (y != 0.0f)
            return 1;
    }
    return (int)(bs / cg);
}

/*
 * The conv2d_blk node i would become (convert_conv), its groups packed k
 * to a group of 16 when k > 1: its attrs and input types, the bias always
 * present.  Returns the input count.
 */
static int blk_form(const lay *L, int32_t i, int k, graph_conv2d_blk_attrs *at, graph_type in[4],
                    graph_type *out)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    *at = layout_blk_attrs(n, L->bs);
    const graph_type *w = &g->values[n->in[1]].type;
    const graph_type *x = &g->values[n->in[0]].type;
    in[0] = stem_input(L, i) ? *x : layout_blocked_type(x, L->bs);
    in[1] = *w;
    in[2] = (graph_type){GRAPH_F32, 1, {w->dim[0]}};
    if (k > 1) { /* packed groups: see regroup_k */
        at->groups = packed_groups(at->groups, k);
        in[1] = (graph_type){GRAPH_F32, 4, {at->groups * L->bs, L->bs, w->dim[2], w->dim[3]}};
        in[2].dim[0] = at->groups * L->bs;
    }
    *out = layout_blocked_type(&g->values[n->out[0]].type, L->bs);
    if (n->nin > 3)
        in[3] = layout_blocked_type(&g->values[n->in[3]].type, L->bs);
    return n->nin > 3 ? 4 : 3;
}

/*
 * Why oneDNN's blocked kernel does not fit conv node i (a reference
 * implementation, or none), or NULL.
 */
static const char *impl_decline(const lay *L, int32_t i, int k, char *buf, size_t len)
{
    graph_conv2d_blk_attrs at;
    graph_type in[4], out;
    char impl[64], err[160];
    if (!L->t->impl_of)
        return NULL;
    int nin = blk_form(L, i, k, &at, in, &out);
    tg_status st = L->t->impl_of(L->t, GRAPH_OP_conv2d_blk, &at, in, nin, &out, 2u, impl,
                                 sizeof impl, err, sizeof err);
    if (st != TG_OK)
        snprintf(buf, len, "left plain: %s cannot run it in the blocked layout (%s)",
                 L->t->name, err[0] ? err : tg_status_str(st));
    else if (L->t->impl_is_ref && L->t->impl_is_ref(impl))
        snprintf(buf, len,
                 "left plain: %s has only a reference kernel for it in the blocked "
                 "layout (%s)", L->t->name, impl);
    else
        return NULL;
    return buf;
}

/*
 * Why conv node i cannot go blocked, or NULL; *k: its groups are packed
 * k to a group of 16 (regroup_k) when that is what makes it fit.
 */
static const char *conv_decline(const lay *L, int32_t i, int *k, char *buf, size_t len)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    if (g->values[n->in[0]].type.dtype != GRAPH_F32)
        snprintf(buf, len, "not f32");
    else if (!blockable(g, n->in[0]) || !blockable(g, n->out[0]))
        snprintf(buf, len, "a dynamic dim other than the batch");
    else if (fu_guarded(g, n->out[0]))
        snprintf(buf, len, "output is guarded (must stay plain)");
    else if (impl_decline(L, i, 1, buf, len)) {
        char alt[320];
        int kk = regroup_k(g, i, L->bs);
        if (kk > 1 && !impl_decline(L, i, kk, alt, sizeof alt)) {
            *k = kk;
            return NULL;
        }
    } else {
        return NULL;
    }
    return buf;
}

/*
 * Adds node i's blocked form (op on in[0..nin), the provenance of src):
 * its output stands for plain v in the chain, and node i dies.
 */
static tg_status add_blocked(lay *L, int32_t i, graph_op op, const int32_t *in, int nin,
                             const void *attrs, int32_t v, const int32_t *src, int nsrc)
{
    int32_t out;
    if (fu_add_node(L->g, L->ctx, op, in, nin, attrs, &out, 1, src, nsrc) < 0)
        return TG_ERR_STATE;
    L->blk[v] = out;
    L->made[v] = 1;
    L->g->nodes[i].flags |= GRAPH_NODE_DEAD;
    L->ctx->stats->rewritten++;
    return TG_OK;
}

/*
 * The weights and bias of conv node i with its groups packed k to a group
 * of 16 (regroup_k): w' [G'*16, 16, kh, kw] block-diagonal, b' [G'*16],
 * zeros past O; into in[1], in[2].
 */
static tg_status regroup_consts(lay *L, int32_t i, int k, int32_t in[3])
{
    graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    const graph_value *wv = &g->values[n->in[1]];
    int64_t cg = wv->type.dim[1], o = wv->type.dim[0], kk = wv->type.dim[2] * wv->type.dim[3];
    int64_t bs = L->bs, o2 = packed_groups(o / cg, k) * bs;
    graph_type wt = {GRAPH_F32, 4, {o2, bs, wv->type.dim[2], wv->type.dim[3]}};
    graph_type bt = {GRAPH_F32, 1, {o2}};
    float *w = tg_calloc((size_t)(o2 * bs * kk + o2), sizeof *w), *b = w ? w + o2 * bs * kk : NULL;
    if (!w)
        return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "out of memory");
    const float *src = wv->data, *bias = n->nin > 2 ? g->values[n->in[2]].data : NULL;
    for (int64_t oc = 0; oc < o; oc++) { /* its input channels: those of its old group */
        int64_t c0 = oc % bs / cg * cg;
        for (int64_t c = 0; c < cg; c++)
            memcpy(w + ((oc * bs) + c0 + c) * kk, src + (oc * cg + c) * kk,
                   (size_t)kk * sizeof *w);
        b[oc] = bias ? bias[oc] : 0.0f;
    }
    in[1] = opt_add_const(g, &wt, w);
    in[2] = opt_add_const(g, &bt, b);
    tg_free(w);
    if (in[1] < 0 || in[2] < 0)
        return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "cannot add the packed weights");
    opt_explain(L->ctx, g, i,
                "%lld groups of %lld channels packed %d to a blocked group of %lld (%s has "
                "only a reference kernel for the groups as they are)",
                (long long)(o / cg), (long long)cg, k, (long long)bs, L->t->name);
    return TG_OK;
}

/* conv2d / conv2d_ep node i -> conv2d_blk on blocked values (groups packed k). */
static tg_status convert_conv(lay *L, int32_t i, int k)
{
    graph *g = L->g;
    graph_node n = g->nodes[i];
    graph_conv2d_blk_attrs at = layout_blk_attrs(&n, L->bs);
    int32_t in[4] = {stem_input(L, i) ? n.in[0] : get_blocked(L, n.in[0], i), n.in[1], -1, -1};
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
    if (k > 1) {
        tg_status st = regroup_consts(L, i, k, in);
        if (st != TG_OK)
            return st;
        at.groups = packed_groups(at.groups, k);
    }
    if (n.nin > 3 && (in[3] = get_blocked(L, n.in[3], i)) < 0)
        return TG_ERR_STATE;
    return add_blocked(L, i, GRAPH_OP_conv2d_blk, in, n.nin > 3 ? 4 : 3, &at, n.out[0], &i, 1);
}

/*
 * Input v of an elementwise node with output out is taken blocked: v has
 * out's type, or is a 4-D f32 of out's channels broadcast over the other
 * dims (a squeeze-and-excitation gate [N,C,1,1], a per-channel scale
 * [1,C,1,1]): blocked, both keep N, H, W in place and C in the same two
 * dims, so the broadcast is the same.
 */
static int blocked_input(const graph *g, int32_t v, int32_t out)
{
    const graph_value *a = &g->values[v], *y = &g->values[out];
    return fu_same_type(g, v, out) ||
           (blockable(g, v) && a->type.dim[1] == y->type.dim[1] && !(y->dyn & 2u) &&
            graph_type_numel(&a->type) > 1);
}

/*
 * Padded lanes stay zero through elementwise node i: the node, run on
 * zeros for its blocked inputs (its one-element inputs as they are, which
 * must be constants), gives 0.  relu, add, mul, silu, clip to a range
 * holding 0 do; sigmoid (0.5) or x + 3 do not.
 */
static int keeps_zero_lanes(const graph *g, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO];
    const void *ip[GRAPH_MAX_NODE_IO];
    static const float zeros[1];
    float y = 1.0f;
    void *op[1] = {&y};
    char err[160];
    int nout = 0;
    if (n->nin > GRAPH_MAX_NODE_IO)
        return 0;
    for (int k = 0; k < n->nin; k++) {
        const graph_value *v = &g->values[n->in[k]];
        int blocked = blocked_input(g, n->in[k], n->out[0]);
        if (!blocked && !v->data)
            return 0;
        it[k] = (graph_type){blocked ? GRAPH_F32 : v->type.dtype, 1, {1}};
        ip[k] = blocked ? (const void *)zeros : v->data;
    }
    if (graph_infer(n->op, it, n->nin, tg_node_attrs(n), ot, GRAPH_MAX_NODE_IO, &nout, err,
                    sizeof err) != TG_OK ||
        nout != 1 || ot[0].dtype != GRAPH_F32 || graph_type_numel(&ot[0]) != 1)
        return 0;
    eager_kargs ka = {it, ip, n->nin, tg_node_attrs(n), ot, op, 1, 1, err, sizeof err, NULL};
    return eager_kernels[n->op](&ka) == TG_OK && y == 0.0f;
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
        if (!blocked_input(g, v, n->out[0]) &&
            !(graph_type_numel(&g->values[v].type) == 1 && g->values[v].type.ndim <= 5 &&
              !g->values[v].dyn))
            return 0;
    }
    return any && (g->values[n->out[0]].type.dim[1] % L->bs == 0 || keeps_zero_lanes(g, i));
}

/*
 * Node i as op (attrs; NULL: node i's own) on its inputs, those for which
 * take(g, input, output) holds (every one when take is NULL) taken
 * blocked.
 */
static tg_status convert_as(lay *L, int32_t i, graph_op op, const void *attrs,
                            int (*take)(const graph *, int32_t, int32_t))
{
    graph *g = L->g;
    graph_node n = g->nodes[i];
    int32_t *in = tg_calloc((size_t)n.nin, sizeof *in);
    if (!in)
        return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "out of memory");
    tg_status st = TG_OK;
    for (int k = 0; k < n.nin && st == TG_OK; k++) {
        in[k] = n.in[k];
        if ((!take || take(g, n.in[k], n.out[0])) && (in[k] = get_blocked(L, n.in[k], i)) < 0)
            st = TG_ERR_STATE;
    }
    if (st == TG_OK) /* n, a copy: adding nodes may move g->nodes */
        st = add_blocked(L, i, op, in, n.nin, attrs ? attrs : tg_node_attrs(&n), n.out[0],
                         &i, 1);
    tg_free(in);
    return st;
}
/* from_blocked for every chain value read outside the chain. */
static tg_status exits(lay *L, const opt_uses *u)
{
    graph *g = L->g;
    for (int32_t v = 0; v < L->nv; v++) {
        if (!L->made[v])
            continue;
        int outside = layout_is_output(g, v);
        for (int32_t k = u->first[v]; k < u->first[v + 1] && !outside; k++)
            outside = !(g->nodes[u->list[k]].flags & GRAPH_NODE_DEAD);
        if (!outside)
            continue;
        int32_t src = g->values[v].node, out;
        graph_from_blocked_attrs at = {g->values[v].type.dim[1]};
        if (fu_add_node(g, L->ctx, GRAPH_OP_from_blocked, &L->blk[v], 1, &at, &out, 1, &src,
                        1) < 0)
            return TG_ERR_STATE;
        opt_replace_uses(g, v, out);
    }
    return TG_OK;
}

/*
 * to_blocked(from_blocked(v)) -> v, where v's padded lanes (if any) are
 * zeros as to_blocked would make them: v made by to_blocked or conv2d_blk.
 */
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
        int32_t q = fu_producer(g, g->nodes[p].in[0]);
        int64_t bs = ((const graph_to_blocked_attrs *)tg_node_attrs(n))->block;
        if (g->values[n->in[0]].type.dim[1] % bs &&
            (q < 0 || (g->nodes[q].op != GRAPH_OP_to_blocked &&
                       g->nodes[q].op != GRAPH_OP_conv2d_blk)))
            continue;
        opt_replace_uses(g, n->out[0], g->nodes[p].in[0]);
        n->flags |= GRAPH_NODE_DEAD;
        ctx->stats->removed++;
        ctx->changed = 1;
    }
}

/*
 * global_avg_pool of a chain value: an avg_pool2d_blk whose window is the
 * whole H x W, giving the blocked [N,C,1,1] (zero lanes give zero means;
 * as reduce_mean over the blocked H, W it took 0.70 ms for a 96x112x112
 * map, the pool 5x less).  Not for an empty H x W (NaN means in the
 * padded lanes).
 */
static int gap_fits(const lay *L, int32_t i)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    int32_t v = n->in[0];
    const graph_type *t = &g->values[v].type;
    return n->op == GRAPH_OP_global_avg_pool && v < L->nv && L->made[v] && t->ndim == 4 &&
           t->dim[2] * t->dim[3] > 0 && blockable(g, n->out[0]) && !fu_guarded(g, n->out[0]);
}

/*
 * max_pool2d / avg_pool2d of a chain value with a nonempty H x W: the
 * _blk op with the same attributes (zero lanes pool to zeros).
 */
static int pool_fits(const lay *L, int32_t i)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    int32_t v = n->in[0];
    return (n->op == GRAPH_OP_max_pool2d || n->op == GRAPH_OP_avg_pool2d) && v < L->nv &&
           L->made[v] && g->values[v].type.dim[2] * g->values[v].type.dim[3] > 0 &&
           blockable(g, n->out[0]) && !fu_guarded(g, n->out[0]);
}

/*
 * A channel concat with a chain value among its inputs, every input's
 * channels a multiple of 16: the same concat on the blocked values
 * (along their dim 1, the blocks), so densenet's and googlenet's
 * concatenations stay in the chain.
 */
static int concat_fits(const lay *L, int32_t i)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    if (n->op != GRAPH_OP_concat || !blockable(g, n->out[0]) || fu_guarded(g, n->out[0]))
        return 0;
    const graph_concat_attrs *at = tg_node_attrs(n);
    int any = 0;
    if (at->axis != 1 && at->axis != -3)
        return 0;
    for (int k = 0; k < n->nin; k++) {
        int32_t v = n->in[k];
        if (!blockable(g, v) || g->values[v].type.dim[1] % L->bs)
            return 0;
        any |= v < L->nv && L->made[v];
    }
    return any;
}

/*
 * batch_norm of a chain value with constant statistics (densenet's
 * pre-activation BN, which no conv absorbs): a depthwise 1x1 conv2d_blk,
 * x * f + (bias - mean * f) with f = scale / sqrt(var + eps) (in double,
 * as conv_bn.c folds a BN into a conv), oneDNN's one pass over the
 * blocked x; a relu that is the only reader of the result becomes its
 * epilogue.  (As a fused (x - mean) * f + bias node on blocked constants
 * it took the fused kernel's broadcast path: densenet121 -O3 58 ms
 * against 46 ms with the BN plain and the conversions around it.)
 */
static int bn_fits(const lay *L, int32_t i)
{
    const graph *g = L->g;
    const graph_node *n = &g->nodes[i];
    if (n->op != GRAPH_OP_batch_norm || !(n->in[0] < L->nv && L->made[n->in[0]]) ||
        !blockable(g, n->out[0]) || fu_guarded(g, n->out[0]))
        return 0;
    for (int k = 1; k < 5; k++)
        if (!g->values[n->in[k]].data || g->values[n->in[k]].type.dtype != GRAPH_F32)
            return 0;
    return 1;
}

/* The relu that alone reads v (not an output or guarded), or -1. */
static int32_t only_relu(const lay *L, int32_t v)
{
    const graph *g = L->g;
    int32_t r = v < L->nv && !layout_is_output(g, v) ? fu_sole_user(L->u, v) : -1;
    return r >= 0 && g->nodes[r].op == GRAPH_OP_relu && fu_same_type(g, g->nodes[r].out[0], v) &&
                   !fu_guarded(g, g->nodes[r].out[0])
               ? r
               : -1;
}

static tg_status convert_bn(lay *L, int32_t i)
{
    graph *g = L->g;
    graph_node n = g->nodes[i];
    const graph_batch_norm_attrs *at = tg_node_attrs(&n);
    const float *scale = g->values[n.in[1]].data, *bias = g->values[n.in[2]].data;
    const float *mean = g->values[n.in[3]].data, *var = g->values[n.in[4]].data;
    int64_t c = g->values[n.in[0]].type.dim[1];
    graph_type wt = {GRAPH_F32, 4, {c, 1, 1, 1}}, bt = {GRAPH_F32, 1, {c}};
    float *v = tg_calloc((size_t)(2 * c + 1), sizeof *v);
    if (!v)
        return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < c; k++) { /* in double, as conv_bn.c folds */
        double f = scale[k] / sqrt((double)var[k] + at->eps);
        v[k] = (float)f;
        v[c + k] = (float)(bias[k] - mean[k] * f);
    }
    int32_t in[3] = {L->blk[n.in[0]], opt_add_const(g, &wt, v), opt_add_const(g, &bt, v + c)};
    tg_free(v);
    if (in[1] < 0 || in[2] < 0)
        return opt_fail(L->ctx, g, i, TG_ERR_NOMEM, "cannot add the batch_norm constants");
    int32_t relu = only_relu(L, n.out[0]), prov[2] = {i, relu};
    graph_conv2d_blk_attrs ca = {.groups = c, .clip_min = -INFINITY, .clip_max = INFINITY,
                                 .block = L->bs};
    if (relu >= 0)
        ca.post = (graph_ints){1, {GRAPH_POST_RELU}};
    tg_status st = add_blocked(L, i, GRAPH_OP_conv2d_blk, in, 3, &ca,
                               relu >= 0 ? g->nodes[relu].out[0] : n.out[0], prov,
                               relu >= 0 ? 2 : 1);
    if (st == TG_OK && relu >= 0) {
        g->nodes[relu].flags |= GRAPH_NODE_DEAD;
        L->ctx->stats->removed++;
    }
    return st;
}


/* Whether node i of kind `kind` takes its input k blocked. */
static int takes_blocked(const lay *L, int32_t i, int kind, int k, int stem)
{
    const graph_node *n = &L->g->nodes[i];
    switch (kind) {
    case LK_CONV:
        return (k == 0 && !stem) || k == 3;
    case LK_EW:
        return blocked_input(L->g, n->in[k], n->out[0]);
    case LK_CONCAT:
        return 1;
    default: /* gap, pool, bn: x */
        return k == 0;
    }
}

/*
 * Decides what every node would become, in order, as convert_all then
 * does it, and groups the nodes into regions: nodes joined by a blocked
 * value, or sharing the to_blocked of a plain value.  L->made marks the
 * values made blocked and L->blk[v] = v each value in the chain (made or
 * entered), as the rewrite would leave them; plan_run resets both.
 */
static void plan_all(lay *L, plan *P, int32_t nn)
{
    graph *g = L->g;
    char why[320];
    for (int32_t i = 0; i < nn; i++) {
        graph_node *n = &g->nodes[i];
        int kind = LK_NONE, k = 1, stem = 0;
        if ((n->flags & GRAPH_NODE_DEAD) || P->kind[i] == LK_ABSORBED)
            continue;
        if (n->op == GRAPH_OP_conv2d || n->op == GRAPH_OP_conv2d_ep) {
            const char *r = conv_decline(L, i, &k, why, sizeof why);
            if (r)
                opt_explain(L->ctx, g, i, "%s", r);
            else
                kind = LK_CONV, stem = stem_input(L, i);
        } else if (ew_fits(L, i)) {
            kind = LK_EW;
        } else if (gap_fits(L, i)) {
            kind = LK_GAP;
        } else if (concat_fits(L, i)) {
            kind = LK_CONCAT;
        } else if (bn_fits(L, i)) {
            kind = LK_BN;
        } else if (pool_fits(L, i)) {
            kind = LK_POOL;
        }
        if (kind == LK_NONE)
            continue;
        P->kind[i] = (int8_t)kind;
        P->k[i] = (int8_t)k;
        for (int j = 0; j < n->nin; j++) {
            int32_t v = n->in[j];
            if (!takes_blocked(L, i, kind, j, stem) || v >= L->nv)
                continue;
            if (L->made[v]) {
                unite(P->parent, i, P->by[v]);
            } else if (P->enter[v] >= 0) {
                unite(P->parent, i, P->enter[v]);
            } else {
                P->enter[v] = i;
                L->blk[v] = v;
            }
        }
        int32_t out = n->out[0], relu = kind == LK_BN ? only_relu(L, out) : -1;
        if (relu >= 0) { /* convert_bn takes it as the epilogue */
            P->kind[relu] = LK_ABSORBED;
            unite(P->parent, relu, i);
            out = g->nodes[relu].out[0];
        }
        L->made[out] = 1;
        L->blk[out] = out;
        P->by[out] = i;
    }
}

/* Rewrites every node the plan keeps, in order. */
static tg_status convert_all(lay *L, const plan *P, int32_t nn)
{
    graph *g = L->g;
    for (int32_t i = 0; i < nn; i++) {
        graph_op op = g->nodes[i].op;
        tg_status st = TG_OK;
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        switch (P->kind[i]) {
        case LK_CONV:
            st = convert_conv(L, i, P->k[i]);
            break;
        case LK_EW:
            st = convert_as(L, i, op, NULL, blocked_input);
            break;
        case LK_GAP: {
            const graph_type *t = &g->values[g->nodes[i].in[0]].type;
            graph_avg_pool2d_blk_attrs at = {{2, {t->dim[2], t->dim[3]}}, {0}, {0}, 0};
            st = convert_as(L, i, GRAPH_OP_avg_pool2d_blk, &at, NULL);
            break;
        }
        case LK_CONCAT:
            st = convert_as(L, i, GRAPH_OP_concat, &(graph_concat_attrs){1}, NULL);
            break;
        case LK_BN:
            st = convert_bn(L, i);
            break;
        case LK_POOL:
            st = convert_as(L, i,
                            op == GRAPH_OP_max_pool2d ? GRAPH_OP_max_pool2d_blk
                                                      : GRAPH_OP_avg_pool2d_blk,
                            NULL, NULL);
            break;
        default:
            break;
        }
        if (st != TG_OK)
            return st;
    }
    return TG_OK;
}

/* Plans, drops the regions that do not pay, then rewrites the rest. */
static tg_status plan_run(lay *L, int32_t nn)
{
    plan P = {tg_calloc((size_t)nn + 1, 1), tg_calloc((size_t)nn + 1, 1),
              tg_malloc(((size_t)nn + 1) * sizeof(int32_t)),
              tg_malloc(((size_t)L->nv + 1) * sizeof(int32_t)),
              tg_malloc(((size_t)L->nv + 1) * sizeof(int32_t))};
    tg_status st = TG_OK;
    if (!P.kind || !P.k || !P.parent || !P.enter || !P.by) {
        st = opt_fail(L->ctx, L->g, -1, TG_ERR_NOMEM, "out of memory");
    } else {
        for (int32_t v = 0; v < L->nv; v++)
            L->blk[v] = P.enter[v] = P.by[v] = -1;
        for (int32_t i = 0; i < nn; i++)
            P.parent[i] = i;
        plan_all(L, &P, nn);
        st = layout_plan_costs(L, &P, nn);
        for (int32_t v = 0; v < L->nv; v++) /* nothing is rewritten yet */
            L->blk[v] = -1, L->made[v] = 0;
        if (st == TG_OK)
            st = convert_all(L, &P, nn);
    }
    tg_free(P.kind);
    tg_free(P.k);
    tg_free(P.parent);
    tg_free(P.enter);
    tg_free(P.by);
    return st;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    graph_target host;
    const graph_target *t = ctx->opts->target;
    if (!t) { /* the CPU this process runs on, at one thread */
        eager_cpu_target(1, &host);
        t = &host;
    }
    /* recorded, not a change of the graph's nodes */
    if ((!g->target || strcmp(g->target, t->name) != 0) &&
        !(g->target = graph_intern(g, t->name, -1)))
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    cancel_pairs(g, ctx);
    if (t->block != 8 && t->block != 16) {
        if (t->block != 0)
            return opt_fail(ctx, g, -1, TG_ERR_ARG,
                            "target %s: a block of %d channels (the layout takes 8 or 16)",
                            t->name, t->block);
        opt_explain(ctx, g, -1, "every conv kept plain: target %s has no blocked layout (%s)",
                    t->name, t->why);
        return TG_OK;
    }
    lay L = {g, ctx, t, t->block, NULL, NULL, g->nvalues, NULL};
    opt_uses u;
    tg_status st = opt_uses_build(g, &u);
    if (st != TG_OK)
        return opt_fail(ctx, g, -1, st, "out of memory building uses");
    L.u = &u;
    L.blk = tg_malloc(((size_t)L.nv + 1) * sizeof *L.blk);
    L.made = tg_calloc((size_t)L.nv + 1, 1);
    if (!L.blk || !L.made) {
        st = opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    } else {
        int32_t before = g->nnodes;
        st = plan_run(&L, before);
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
