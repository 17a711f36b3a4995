/*
 * unlayout.c - the layout pass undone: every blocked value of the graph
 * back to plain [N,C,H,W], so that opt_relayout can plan the layout anew
 * for another target (a .tgraph laid out with 16-channel blocks on an
 * AVX-512 machine, compiled on an AVX2 one, or for OpenCL).
 *
 * Nodes are visited in order (sorted), each blocked value v getting its
 * plain counterpart pl[v] with ch[v] channels:
 *   - to_blocked(x): x itself;
 *   - from_blocked(b): its readers (and the graph outputs) read pl[b]
 *     instead, which must have its channels;
 *   - conv2d_blk(x, w, b[, r]): conv2d_ep on pl[x] (or the plain stem x)
 *     and pl[r], same geometry and epilogue (the algorithm is the next
 *     plan's choice); its channels are the weights' O;
 *   - max_pool2d_blk / avg_pool2d_blk: the plain pools, same window;
 *   - a concat of blocked values along the blocks: along the channels
 *     (each input's channels must fill its blocks, as the layout made it);
 *   - an elementwise node on blocked inputs: the same node on their plain
 *     counterparts, a blocked broadcast input that has none (a per-channel
 *     constant made blocked) through from_blocked (folded afterwards), a
 *     one-element input of rank 5 reshaped to [1].
 * A conv whose groups the layout packed k to a block (regroup_k; its
 * input then has fewer channels than the packed weights say) becomes the
 * conv of the original groups again, its weights and bias unpacked from
 * the block diagonal (unpack_groups), when they are constants of that
 * shape.  Any other reader of a blocked value, or channels that disagree
 * otherwise, and the pass fails with the reason: opt_relayout then leaves the graph
 * as it was (the CPU runs either block).  Constants the layout made
 * (packed weights, a batch_norm as a depthwise conv) stay as they are:
 * the next layout plans on them like on any conv.
 */
#include <string.h>

#include "../graph/alloc.h"
#include "fuse_util.h"
#include "../graph/graph_impl.h"

typedef struct unl {
    graph *g;
    opt_ctx *ctx;
    int32_t *pl;  /* blocked value -> its plain counterpart, or -1 */
    int64_t *ch;  /* blocked value -> the plain channels */
    int32_t *map; /* plain value (a from_blocked's output) -> what replaces it, or -1 */
    int32_t nv;   /* values when the pass started: the arrays' size */
} unl;

static int blocked5(const graph *g, int32_t v)
{
    const graph_type *t = &g->values[v].type;
    return t->ndim == 5 && (t->dim[4] == 8 || t->dim[4] == 16);
}

static int32_t mapped(const unl *U, int32_t v)
{
    return v < U->nv && U->map[v] >= 0 ? U->map[v] : v;
}

/* Adds op on in (one output), the provenance of node src; its output or -1. */
static int32_t add(unl *U, graph_op op, const int32_t *in, int nin, const void *attrs,
                   int32_t src)
{
    int32_t out;
    if (fu_add_node(U->g, U->ctx, op, in, nin, attrs, &out, 1, &src, 1) < 0)
        return -1;
    return out;
}

/* The node replaced: v (its output) now stands for plain p of c channels. */
static void made(unl *U, int32_t i, int32_t v, int32_t p, int64_t c)
{
    U->pl[v] = p;
    U->ch[v] = c;
    U->g->nodes[i].flags |= GRAPH_NODE_DEAD;
    U->ctx->stats->rewritten++;
    U->ctx->changed = 1;
}

static tg_status no(unl *U, int32_t i, const char *why)
{
    return opt_fail(U->ctx, U->g, i, TG_ERR_UNSUPPORTED, "cannot undo the blocked layout: %s",
                    why);
}

/*
 * The groups the layout packed (optimize/layout.c, regroup_consts): conv
 * node i's constant weights w' [G'*B, B, kh, kw] hold k = B / cg groups of
 * cg channels on the block diagonal of each packed group of B, zeros
 * elsewhere and past the C real channels (a last, partial packed group).
 * Finds the largest such cg that divides C and for which every weight
 * outside those blocks and every row (and bias) past C is zero (then the
 * conv of C / cg groups of cg computes the same), and writes its plain
 * weights [C, cg, kh, kw] and bias [C] as constants into in[1], in[2];
 * 0 when the weights are not so.
 */
static int unpack_groups(unl *U, const graph_node *n, int64_t C, int32_t in[4], int64_t *groups)
{
    graph *g = U->g;
    const graph_value *wv = &g->values[n->in[1]];
    const graph_value *bv = n->nin > 2 ? &g->values[n->in[2]] : NULL;
    const graph_conv2d_blk_attrs *a = tg_node_attrs(n);
    int64_t B = wv->type.dim[1], O2 = wv->type.dim[0], kk = wv->type.dim[2] * wv->type.dim[3];
    if (!wv->data || (bv && !bv->data) || wv->type.dtype != GRAPH_F32 || B < 2 ||
        O2 != a->groups * B || C <= 0 || C >= O2 || C <= O2 - B)
        return 0;
    const float *w = wv->data, *b = bv ? bv->data : NULL;
    for (int64_t cg = B / 2; cg >= 1; cg--) {
        if (B % cg || C % cg)
            continue;
        int ok = 1;
        for (int64_t oc = 0; oc < O2 && ok; oc++) {
            int64_t c0 = oc % B / cg * cg;
            for (int64_t c = 0; c < B && ok; c++)
                if (oc >= C || c < c0 || c >= c0 + cg)
                    for (int64_t t = 0; t < kk && ok; t++)
                        ok = w[(oc * B + c) * kk + t] == 0.0f;
            if (oc >= C && b)
                ok = ok && b[oc] == 0.0f;
        }
        if (!ok)
            continue;
        graph_type wt = {GRAPH_F32, 4, {C, cg, wv->type.dim[2], wv->type.dim[3]}};
        graph_type bt = {GRAPH_F32, 1, {C}};
        float *pw = tg_malloc((size_t)(C * cg * kk + C) * sizeof *pw), *pb = pw + C * cg * kk;
        if (!pw)
            return -1;
        for (int64_t oc = 0; oc < C; oc++) {
            int64_t c0 = oc % B / cg * cg;
            memcpy(pw + oc * cg * kk, w + (oc * B + c0) * kk, (size_t)(cg * kk) * sizeof *pw);
            pb[oc] = b ? b[oc] : 0.0f;
        }
        in[1] = opt_add_const(g, &wt, pw);
        in[2] = opt_add_const(g, &bt, pb);
        tg_free(pw);
        if (in[1] < 0 || in[2] < 0)
            return -1;
        *groups = C / cg;
        return 1;
    }
    return 0;
}

static tg_status conv(unl *U, int32_t i)
{
    graph *g = U->g;
    graph_node n = g->nodes[i];
    const graph_conv2d_blk_attrs *a = tg_node_attrs(&n);
    graph_conv2d_ep_attrs ep = {a->stride,  a->padding, a->dilation, a->groups,
                                a->post,    a->alpha,   a->clip_min, a->clip_max};
    int32_t in[4] = {mapped(U, n.in[0]), n.in[1], n.in[2], n.nin > 3 ? n.in[3] : -1};
    int64_t o = g->values[n.in[1]].type.dim[0], cin = g->values[n.in[1]].type.dim[1] * a->groups;
    int32_t x = n.in[0];
    if (g->values[x].type.ndim != 4 && U->pl[x] >= 0 && n.nin > 2 && U->ch[x] != cin) {
        /* packed groups (layout.c, regroup_k): the plain conv unpacked */
        int r = unpack_groups(U, &n, U->ch[x], in, &ep.groups);
        if (r < 0)
            return opt_fail(U->ctx, g, i, TG_ERR_NOMEM, "out of memory");
        if (r > 0)
            o = cin = U->ch[x];
    }
    for (int k = 0; k < n.nin; k += 3) { /* x and the residual */
        int32_t v = n.in[k];
        if (k == 0 && g->values[v].type.ndim == 4)
            continue; /* a stem reads x plain */
        if (U->pl[v] < 0)
            return no(U, i, "a blocked input not made by the layout");
        if (U->ch[v] != (k == 0 ? cin : o))
            return no(U, i, "an input's channels disagree with the weights");
        in[k] = U->pl[v];
    }
    int32_t out = add(U, GRAPH_OP_conv2d_ep, in, n.nin, &ep, i);
    if (out < 0)
        return TG_ERR_STATE;
    made(U, i, n.out[0], out, o);
    return TG_OK;
}

static tg_status pool(unl *U, int32_t i)
{
    graph *g = U->g;
    graph_node n = g->nodes[i];
    int32_t x = n.in[0];
    if (U->pl[x] < 0)
        return no(U, i, "a blocked input not made by the layout");
    graph_op op = n.op == GRAPH_OP_max_pool2d_blk ? GRAPH_OP_max_pool2d : GRAPH_OP_avg_pool2d;
    int32_t out = add(U, op, &U->pl[x], 1, tg_node_attrs(&n), i);
    if (out < 0)
        return TG_ERR_STATE;
    made(U, i, n.out[0], out, U->ch[x]);
    return TG_OK;
}

/*
 * Node i as op (attrs) on the plain operands in (node i's input count,
 * tg_calloc'd; freed here) when st is TG_OK, its output of c channels
 * standing for node i's; st otherwise.
 */
static tg_status rebuild(unl *U, int32_t i, tg_status st, graph_op op, int32_t *in,
                         const void *attrs, int64_t c)
{
    graph_node n = U->g->nodes[i];
    int32_t out = st == TG_OK ? add(U, op, in, n.nin, attrs, i) : -1;
    tg_free(in);
    if (st != TG_OK)
        return st;
    if (out < 0)
        return TG_ERR_STATE;
    made(U, i, n.out[0], out, c);
    return TG_OK;
}

static tg_status concat(unl *U, int32_t i)
{
    graph *g = U->g;
    graph_node n = g->nodes[i];
    const graph_concat_attrs *a = tg_node_attrs(&n);
    if (a->axis != 1 && a->axis != -4)
        return no(U, i, "a concat of blocked values along another axis than the blocks");
    int32_t *in = tg_calloc((size_t)n.nin, sizeof *in);
    if (!in)
        return opt_fail(U->ctx, g, i, TG_ERR_NOMEM, "out of memory");
    int64_t c = 0;
    tg_status st = TG_OK;
    for (int k = 0; k < n.nin && st == TG_OK; k++) {
        int32_t v = n.in[k];
        const graph_type *t = &g->values[v].type;
        if (U->pl[v] < 0 || U->ch[v] != t->dim[1] * t->dim[4])
            st = no(U, i, "a concat input whose channels do not fill its blocks");
        in[k] = U->pl[v];
        c += U->ch[v];
    }
    graph_concat_attrs ca = {1};
    return rebuild(U, i, st, GRAPH_OP_concat, in, &ca, c);
}

static tg_status elementwise(unl *U, int32_t i)
{
    graph *g = U->g;
    graph_node n = g->nodes[i];
    int64_t c = -1;
    for (int k = 0; k < n.nin; k++) {
        int32_t v = n.in[k];
        if (U->pl[v] >= 0 && c >= 0 && U->ch[v] != c)
            return no(U, i, "blocked inputs of different channels");
        if (U->pl[v] >= 0)
            c = U->ch[v];
    }
    int32_t *in = tg_calloc((size_t)n.nin, sizeof *in);
    if (!in)
        return opt_fail(U->ctx, g, i, TG_ERR_NOMEM, "out of memory");
    tg_status st = TG_OK;
    for (int k = 0; k < n.nin && st == TG_OK; k++) {
        int32_t v = mapped(U, n.in[k]);
        const graph_type *t = &g->values[v].type;
        in[k] = v;
        if (U->pl[n.in[k]] >= 0) {
            in[k] = U->pl[n.in[k]];
        } else if (graph_type_numel(t) == 1 && t->ndim == 5) {
            graph_reshape_attrs ra = {{1, {1}}};
            if ((in[k] = add(U, GRAPH_OP_reshape, &v, 1, &ra, i)) < 0)
                st = TG_ERR_STATE;
        } else if (blocked5(g, v)) { /* a blocked broadcast operand */
            graph_from_blocked_attrs fa = {c};
            if ((in[k] = add(U, GRAPH_OP_from_blocked, &v, 1, &fa, i)) < 0)
                st = TG_ERR_STATE;
        } else if (t->ndim > 4) {
            st = no(U, i, "an operand of rank 5 that is not blocked");
        }
    }
    return rebuild(U, i, st, n.op, in, tg_node_attrs(&n), c);
}

static tg_status visit(unl *U, int32_t i)
{
    graph *g = U->g;
    graph_node *n = &g->nodes[i];
    int any = 0;
    for (int k = 0; k < n->nin; k++)
        any |= U->pl[n->in[k]] >= 0;
    switch (n->op) {
    case GRAPH_OP_to_blocked:
        made(U, i, n->out[0], mapped(U, n->in[0]), g->values[n->in[0]].type.dim[1]);
        return TG_OK;
    case GRAPH_OP_from_blocked: {
        int32_t b = n->in[0], o = n->out[0];
        if (U->pl[b] < 0) /* of a constant or a param: folding's business */
            break;
        if (U->ch[b] != g->values[o].type.dim[1])
            return no(U, i, "a from_blocked of fewer channels than its value holds");
        if (fu_guarded(g, o))
            return no(U, i, "a guarded from_blocked");
        U->map[o] = U->pl[b];
        n->flags |= GRAPH_NODE_DEAD;
        U->ctx->stats->removed++;
        U->ctx->changed = 1;
        return TG_OK;
    }
    case GRAPH_OP_conv2d_blk:
        return conv(U, i);
    case GRAPH_OP_max_pool2d_blk:
    case GRAPH_OP_avg_pool2d_blk:
        return pool(U, i);
    default:
        break;
    }
    if (any && n->op == GRAPH_OP_concat)
        return concat(U, i);
    if (any && (graph_ops[n->op].props & GRAPH_PROP_ELEMENTWISE) && n->nout == 1)
        return elementwise(U, i);
    if (any)
        return no(U, i, "a reader of a blocked value that the layout does not make");
    for (int k = 0; k < n->nin; k++)
        n->in[k] = mapped(U, n->in[k]);
    return TG_OK;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    int32_t nv = g->nvalues, nn = g->nnodes;
    unl U = {g, ctx, tg_malloc(((size_t)nv + 1) * sizeof(int32_t)),
             tg_calloc((size_t)nv + 1, sizeof(int64_t)),
             tg_malloc(((size_t)nv + 1) * sizeof(int32_t)), nv};
    tg_status st = TG_OK;
    if (!U.pl || !U.ch || !U.map) {
        st = opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int32_t v = 0; v < nv; v++)
        U.pl[v] = U.map[v] = -1;
    for (int32_t i = 0; i < nn && st == TG_OK; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            st = visit(&U, i);
    for (int32_t k = 0; st == TG_OK && k < g->noutputs; k++) {
        int32_t v = g->outputs[k].value;
        if (v < nv && U.pl[v] >= 0) /* the layout never makes one */
            st = no(&U, g->values[v].node, "a blocked value is a graph output");
        else if (v < nv)
            g->outputs[k].value = mapped(&U, v);
    }
    for (int32_t k = 0; st == TG_OK && k < g->nguards; k++) {
        int32_t v = g->guards[k].value;
        if (v >= 0 && v < nv && (U.pl[v] >= 0 || U.map[v] >= 0))
            st = no(&U, g->values[v].node, "a guarded value in the blocked layout");
    }
    if (st == TG_OK && g->target) {
        g->target = NULL;
        ctx->changed = 1;
    }
done:
    tg_free(U.pl);
    tg_free(U.ch);
    tg_free(U.map);
    return st;
}

const opt_pass opt_pass_unlayout = {"unlayout", run};
