/*
 * transpose_absorb.c - removes transposes that matmul and linear can read
 * through their own flags, and puts weight products in linear form (-O2).
 *
 * Rules, each exact (no rounding changes the math; oneDNN reads the
 * swapped operand through strides instead of a copy):
 *   1. matmul(transpose(a), b), the transpose swapping the last two dims
 *      only (perm = identity but the last two) of a rank >= 2 operand
 *      -> matmul(a, b) with transpose_a toggled; the same for b.
 *   2. matmul(x, w) {transpose_a=0, transpose_b=1} with a 2-D w
 *      -> linear(x, w)   (x·wᵀ is what linear computes; x may have any
 *      batch dims, and a 1-D x gives [N] either way)
 *   3. matmul(x, c) {transpose_a=0, transpose_b=0} with a 2-D constant c
 *      [K, N] -> linear(x, cᵀ), cᵀ a new [N, K] constant of the same
 *      size, when every reader of c is such a matmul (c as its second
 *      operand): weights shared between layers get one cᵀ that all of
 *      them read, and c goes.  A c also read otherwise stays a matmul
 *      operand rather than being held twice.
 *   4. linear(x, transpose(t)) without bias, t 2-D and not a constant
 *      -> matmul(x, t)  (a constant t is folded by the fold pass instead,
 *      which keeps the linear form; with a bias the transpose stays, as
 *      matmul + add is not clearly cheaper).
 * Rules 2 and 3 put traced "x @ W.T" / "x @ W" products in the form the
 * other -O2 passes fuse (conv-bn, horizontal, epilogue) and the replay
 * kernels pack.  A transpose left without users is removed.
 *
 * Never fires on a node whose output is guarded (it must be computed as
 * traced); the output may be a graph output (same value and type).
 * A matmul with 2-D weights that stays a matmul says why (--explain).
 */
#include <stdlib.h>

#include "../graph/alloc.h"
#include "fuse_util.h"
#include "../graph/graph_impl.h"

/* Nonzero if node t is a transpose swapping only the last two dims. */
static int swaps_last_two(const graph *g, int32_t t)
{
    const graph_node *n = &g->nodes[t];
    if (n->op != GRAPH_OP_transpose)
        return 0;
    const graph_ints *perm = &((const graph_transpose_attrs *)tg_node_attrs(n))->perm;
    int nd = g->values[n->in[0]].type.ndim;
    if (nd < 2 || perm->n != nd)
        return 0;
    for (int i = 0; i < nd - 2; i++)
        if (perm->v[i] != i)
            return 0;
    return perm->v[nd - 2] == nd - 1 && perm->v[nd - 1] == nd - 2;
}

/* Marks transpose node t dead when nothing reads its output any more. */
static void drop_if_unused(graph *g, opt_ctx *ctx, int32_t t)
{
    int32_t v = g->nodes[t].out[0];
    if (opt_pinned(g, v))
        return;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == v)
                return;
    }
    g->nodes[t].flags |= GRAPH_NODE_DEAD;
    ctx->stats->removed++;
}

/* Rule 1 on matmul node m, in place (same output value, same type); m
 * gains the provenance of each transpose it absorbs. */
static tg_status absorb_operands(graph *g, opt_ctx *ctx, int32_t m)
{
    for (int j = 0; j < 2; j++) {
        graph_node *n = &g->nodes[m];
        int32_t t = fu_producer(g, n->in[j]);
        if (t < 0 || !swaps_last_two(g, t))
            continue;
        graph_matmul_attrs *at = tg_node_attrs_mut(n);
        int64_t *flag = j == 0 ? &at->transpose_a : &at->transpose_b;
        n->in[j] = g->nodes[t].in[0];
        *flag = !*flag;
        if (opt_merge_prov(g, m, t) != TG_OK)
            return opt_fail(ctx, g, m, TG_ERR_NOMEM, "out of memory merging provenance");
        ctx->stats->rewritten++;
        ctx->changed = 1;
        drop_if_unused(g, ctx, t);
    }
    return TG_OK;
}

/* [K, N] data transposed into a new [N, K] constant; its id or -1. */
static int32_t transposed_const(graph *g, int32_t c)
{
    const graph_type t = g->values[c].type;
    int64_t k = t.dim[0], n = t.dim[1];
    const float *src = fu_const_f32(g, c);
    float *dst = tg_malloc(sizeof *dst * (size_t)(k * n + 1));
    if (!dst)
        return -1;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++)
            dst[j * k + i] = src[i * n + j];
    graph_type tt = {GRAPH_F32, 2, {n, k}};
    int32_t id = opt_add_const(g, &tt, dst);
    tg_free(dst);
    return id;
}

/* Replaces node old (one output) by op(in) with its provenance and that
 * of node also (an absorbed transpose; -1: none). */
static tg_status replace(graph *g, opt_ctx *ctx, int32_t old, int32_t also, graph_op op,
                         const int32_t *in, int nin, const void *attrs)
{
    int32_t out = -1, prov[2] = {old, also};
    if (fu_add_node(g, ctx, op, in, nin, attrs, &out, 1, prov, also < 0 ? 1 : 2) < 0)
        return TG_ERR_STATE;
    opt_replace_uses(g, g->nodes[old].out[0], out);
    g->nodes[old].flags |= GRAPH_NODE_DEAD;
    ctx->stats->rewritten++;
    ctx->changed = 1;
    return TG_OK;
}

/* Nonzero if node k will be a rule-3 matmul on w: w its second operand
 * only, neither operand transposed once rule 1 has run, not guarded. */
static int rule3_reader(const graph *g, int32_t k, int32_t w)
{
    const graph_node *n = &g->nodes[k];
    if (n->op != GRAPH_OP_matmul || n->in[0] == w || n->in[1] != w || fu_guarded(g, n->out[0]))
        return 0;
    const graph_matmul_attrs *at = tg_node_attrs(n);
    int32_t t = fu_producer(g, n->in[0]);
    int ta = (int)at->transpose_a ^ (t >= 0 && swaps_last_two(g, t));
    return !ta && !at->transpose_b;
}

/* Rules 2 and 3 on matmul node m.  wt_of[w] (w a value id below u's
 * count) is -1 until rule 3 first meets w, then w's transpose, or -2
 * when w has a reader other than rule-3 matmuls. */
static tg_status to_linear(graph *g, opt_ctx *ctx, const opt_uses *u, int32_t *wt_of,
                           int32_t m)
{
    const graph_node *n = &g->nodes[m];
    const graph_matmul_attrs *at = tg_node_attrs(n);
    int32_t x = n->in[0], w = n->in[1];
    if (g->values[w].type.ndim != 2)
        return TG_OK;
    if (at->transpose_a) {
        opt_explain(ctx, g, m, "first operand transposed: not linear's x @ wT");
        return TG_OK;
    }
    if (at->transpose_b)
        return replace(g, ctx, m, -1, GRAPH_OP_linear, (int32_t[]){x, w}, 2, NULL);
    if (!fu_const_f32(g, w) || w >= u->nvalues) {
        opt_explain(ctx, g, m, "weights are not a constant: x @ w stays a matmul");
        return TG_OK;
    }
    if (opt_pinned(g, w)) {
        opt_explain(ctx, g, m, "weights are a graph output: x @ w stays a matmul");
        return TG_OK;
    }
    if (wt_of[w] == -1) {
        for (int32_t k = u->first[w]; k < u->first[w + 1] && wt_of[w] == -1; k++)
            if (!rule3_reader(g, u->list[k], w)) {
                int32_t r = u->list[k];
                opt_explain(ctx, g, m,
                            "weights also read by node %d (%s): linear would hold them twice, "
                            "transposed", (int)r, graph_ops[g->nodes[r].op].name);
                wt_of[w] = -2;
            }
        if (wt_of[w] == -1 && (wt_of[w] = transposed_const(g, w)) < 0)
            return opt_fail(ctx, g, m, TG_ERR_NOMEM, "cannot add the transposed weights");
    }
    if (wt_of[w] == -2)
        return TG_OK;
    return replace(g, ctx, m, -1, GRAPH_OP_linear, (int32_t[]){x, wt_of[w]}, 2, NULL);
}

/* Rule 4 on linear node l. */
static tg_status linear_to_matmul(graph *g, opt_ctx *ctx, int32_t l)
{
    const graph_node *n = &g->nodes[l];
    int32_t t = fu_producer(g, n->in[1]);
    if (t < 0 || !swaps_last_two(g, t))
        return TG_OK;
    if (n->nin > 2) {
        opt_explain(ctx, g, l, "linear has a bias: the transpose of its weights stays");
        return TG_OK;
    }
    int32_t src = g->nodes[t].in[0];
    if (g->values[src].kind == GRAPH_VALUE_CONST)
        return TG_OK; /* transpose(constant) is the fold pass's */
    graph_matmul_attrs mm = {0, 0};
    tg_status st = replace(g, ctx, l, t, GRAPH_OP_matmul,
                           (int32_t[]){g->nodes[l].in[0], src}, 2, &mm);
    if (st == TG_OK)
        drop_if_unused(g, ctx, t);
    return st;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_uses u;
    if (opt_uses_build(g, &u) != TG_OK)
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "transpose-absorb: out of memory");
    int32_t *wt_of = tg_malloc(sizeof *wt_of * (size_t)(u.nvalues + 1));
    if (!wt_of) {
        opt_uses_free(&u);
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "transpose-absorb: out of memory");
    }
    for (int32_t v = 0; v < u.nvalues; v++)
        wt_of[v] = -1;
    tg_status st = TG_OK;
    for (int32_t i = 0, end = g->nnodes; i < end && st == TG_OK; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if (fu_guarded(g, n->out[0])) {
            if (n->op == GRAPH_OP_matmul || n->op == GRAPH_OP_linear)
                opt_explain(ctx, g, i, "output is guarded: computed as traced");
            continue;
        }
        if (n->op == GRAPH_OP_matmul) {
            st = absorb_operands(g, ctx, i);
            if (st == TG_OK)
                st = to_linear(g, ctx, &u, wt_of, i);
        } else if (n->op == GRAPH_OP_linear) {
            st = linear_to_matmul(g, ctx, i);
        }
    }
    opt_uses_free(&u);
    tg_free(wt_of);
    return st;
}

const opt_pass opt_pass_transpose_absorb = {"transpose-absorb", run};
