/*
 * horizontal.c - fuses linears that read the same input into one (-O2).
 *
 *   q = linear(x, wq, bq); k = linear(x, wk, bk); v = linear(x, wv, bv)
 *     -> qkv = linear(x, [wq; wk; wv], [bq; bk; bv])
 *        q, k, v = split(qkv) {axis=-1 as a positive axis, sizes=[Nq,Nk,Nv]}
 *
 * One GEMM over the concatenated weights reads x once and keeps the
 * cores busy with a wider N (the encoder's Q, K, V projections).
 *
 * Conditions: at least two linears with the same x whose weights (and
 * biases) are constants with data, all with a bias or all without (the
 * two kinds form separate groups); outputs not guarded (a graph output
 * is fine: it becomes a split output of the same type).  At most 16 per
 * group (the split's size list).  The split is along the feature dim,
 * which comes from the weights and is never dynamic; x's dims may be.
 * The weights' values are the same numbers, so nothing changes but the
 * GEMM's blocking: results agree within rounding.
 */
#include <stdlib.h>

#include "../graph/alloc.h"
#include "fuse_util.h"
#include "../graph/graph_impl.h"

#define GROUP_MAX GRAPH_MAX_INTS

/* Nonzero if linear node i may join a group: constant weights/bias. */
static int candidate(const graph *g, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    if ((n->flags & GRAPH_NODE_DEAD) || n->op != GRAPH_OP_linear)
        return 0;
    return fu_const_f32(g, n->in[1]) && (n->nin < 3 || fu_const_f32(g, n->in[2]));
}

/* Concatenates input j (1: weights, 2: bias) of the group into a constant. */
static int32_t concat_const(graph *g, const int32_t *grp, int n, int j, int64_t total)
{
    const graph_type *t0 = &g->values[g->nodes[grp[0]].in[j]].type;
    int64_t per_row = j == 1 ? t0->dim[1] : 1;
    float *buf = tg_malloc(sizeof *buf * (size_t)(total * per_row + 1));
    if (!buf)
        return -1;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int32_t v = g->nodes[grp[i]].in[j];
        int64_t cnt = graph_type_numel(&g->values[v].type);
        memcpy(buf + at, fu_const_f32(g, v), sizeof *buf * (size_t)cnt);
        at += cnt;
    }
    graph_type t = {GRAPH_F32, j == 1 ? 2 : 1, {total, per_row}};
    int32_t id = opt_add_const(g, &t, buf);
    tg_free(buf);
    return id;
}

/* Replaces the group's linears by one linear and a split. */
static tg_status fuse(graph *g, opt_ctx *ctx, const opt_uses *u, const int32_t *grp, int n)
{
    graph_split_attrs sp = {0, {n, {0}}};
    int64_t total = 0, freed = 0;
    int bias = g->nodes[grp[0]].nin > 2;
    for (int i = 0; i < n; i++) {
        const graph_node *l = &g->nodes[grp[i]];
        sp.sizes.v[i] = g->values[l->in[1]].type.dim[0];
        total += sp.sizes.v[i];
        freed += fu_freed_bytes(g, u, l->in[1], 1) + (bias ? fu_freed_bytes(g, u, l->in[2], 1) : 0);
    }
    int32_t w = concat_const(g, grp, n, 1, total);
    int32_t b = bias && w >= 0 ? concat_const(g, grp, n, 2, total) : -1;
    if (w < 0 || (bias && b < 0))
        return opt_fail(ctx, g, grp[0], TG_ERR_NOMEM, "cannot add the concatenated weights");
    int32_t in[3] = {g->nodes[grp[0]].in[0], w, b}, wide = -1, outs[GROUP_MAX];
    if (fu_add_node(g, ctx, GRAPH_OP_linear, in, bias ? 3 : 2, NULL, &wide, 1, grp, n) < 0)
        return TG_ERR_STATE;
    sp.axis = g->values[wide].type.ndim - 1;
    if (fu_add_node(g, ctx, GRAPH_OP_split, &wide, 1, &sp, outs, n, grp, n) < 0)
        return TG_ERR_STATE;
    for (int i = 0; i < n; i++) {
        opt_replace_uses(g, g->nodes[grp[i]].out[0], outs[i]);
        g->nodes[grp[i]].flags |= GRAPH_NODE_DEAD;
    }
    ctx->stats->fused += n;
    ctx->stats->bytes += freed - (int64_t)graph_value_nbytes(&g->values[w]) -
                         (bias ? (int64_t)graph_value_nbytes(&g->values[b]) : 0);
    ctx->changed = 1;
    return TG_OK;
}

/* Collects the candidates after `first` with its x and bias presence. */
static int gather(graph *g, opt_ctx *ctx, int32_t first, int32_t end, unsigned char *taken,
                  int32_t *grp)
{
    const graph_node *f = &g->nodes[first];
    int n = 0;
    for (int32_t j = first; j < end; j++) {
        const graph_node *l = &g->nodes[j];
        if (taken[j] || !candidate(g, j) || l->in[0] != f->in[0])
            continue;
        if ((l->nin > 2) != (f->nin > 2)) {
            opt_explain(ctx, g, j, "shares its input with node %d but %s a bias", (int)first,
                        l->nin > 2 ? "has" : "lacks");
            continue;
        }
        if (fu_guarded(g, l->out[0])) {
            opt_explain(ctx, g, j, "output is guarded: computed as traced");
            taken[j] = 1;
            continue;
        }
        if (n == GROUP_MAX)
            break; /* the rest form the next group */
        taken[j] = 1;
        grp[n++] = j;
    }
    return n;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_uses u;
    int32_t end = g->nnodes, grp[GROUP_MAX];
    unsigned char *taken = tg_calloc((size_t)end + 1, 1);
    if (!taken || opt_uses_build(g, &u) != TG_OK) {
        tg_free(taken);
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "horizontal: out of memory");
    }
    tg_status st = TG_OK;
    for (int32_t i = 0; i < end && st == TG_OK; i++) {
        if (taken[i] || !candidate(g, i))
            continue;
        int n = gather(g, ctx, i, end, taken, grp);
        if (n >= 2)
            st = fuse(g, ctx, &u, grp, n);
    }
    opt_uses_free(&u);
    tg_free(taken);
    return st;
}

const opt_pass opt_pass_horizontal = {"horizontal", run};
