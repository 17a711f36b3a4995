/*
 * simplify_shape.c - shape rules of the simplify pass: no-op shape ops
 * removed (a one-input concat and an all-zero pad included), chains of views, transposes, expands and casts merged.  All
 * exact (they move or copy elements).  A chain is merged even when its
 * inner node has other users (then the graph keeps the same node count but
 * a shorter chain; the inner node goes when nothing else reads it).
 */
#include <string.h>

#include "../graph/infer_shape.h"
#include "simplify.h"
#include "../graph/graph_impl.h"

static int fired(opt_o1_state *s, int32_t node, int32_t v, int removed)
{
    opt_o1_forward(s, s->g->nodes[node].out[0], v);
    opt_o1_kill(s, node);
    if (removed)
        s->ctx->stats->removed++;
    else
        s->ctx->stats->rewritten++;
    s->ctx->changed = 1;
    return 1;
}

static int is_view(graph_op op)
{
    return op == GRAPH_OP_reshape || op == GRAPH_OP_flatten || op == GRAPH_OP_squeeze ||
           op == GRAPH_OP_unsqueeze;
}

/* Slice that takes every element in order, at type t. */
static int slice_is_identity(const graph_type *t, const graph_slice_attrs *a)
{
    graph_slice_plan plan;
    if (graph_slice_resolve(t, a, &plan, NULL, 0) != TG_OK)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (plan.start[d] != 0 || plan.len[d] != t->dim[d] ||
            (plan.len[d] > 1 && plan.step[d] != 1))
            return 0;
    return 1;
}

/*
 * A slice along a dynamic dim is the identity at every size only if it
 * runs from 0 to the end: start 0 and an end at least the largest dim
 * (2^48) with step 1.  ("ends=[1000]" is the identity at the traced batch
 * 4 but not at batch 2000.)
 */
static int slice_unbounded_on_dynamic(const graph *g, int32_t x, const graph_slice_attrs *a)
{
    const graph_value *v = &g->values[x];
    for (int k = 0; k < a->starts.n; k++) {
        int ax = graph_axis(a->axes.n ? a->axes.v[k] : k, v->type.ndim);
        if (ax < 0 || !(v->dyn >> ax & 1))
            continue;
        int64_t step = a->steps.n ? a->steps.v[k] : 1;
        if (a->starts.v[k] != 0 || a->ends.v[k] < ((int64_t)1 << 48) || step != 1)
            return 0;
    }
    return 1;
}

/*
 * A squeeze without axes drops every dim of size 1 at the run's sizes
 * (graph/infer_shape.c), so over a dynamic dim its rank follows the run:
 * x [N,2] is [2] at N = 1.  Neither the identity nor a reshape then.
 */
static int squeeze_by_size(const graph *g, int32_t node)
{
    const graph_node *n = &g->nodes[node];
    if (n->op != GRAPH_OP_squeeze || ((const graph_squeeze_attrs *)tg_node_attrs(n))->axes.n)
        return 0;
    const graph_value *x = &g->values[n->in[0]];
    return x->dyn || x->dder;
}

/* Whether node (given same input and output types) is the identity. */
static int noop(opt_o1_state *s, int32_t node)
{
    const graph_node *n = &s->g->nodes[node];
    int32_t x = n->in[0];
    const graph_type *t = &s->g->values[x].type;
    switch (n->op) {
    case GRAPH_OP_squeeze: return !squeeze_by_size(s->g, node);
    case GRAPH_OP_reshape:
    case GRAPH_OP_flatten:
    case GRAPH_OP_unsqueeze:
    case GRAPH_OP_expand:
    case GRAPH_OP_cast:
    case GRAPH_OP_concat: return 1; /* same type (one input): copies every element */
    case GRAPH_OP_pad: { /* zero pads (+1 / -1 pairs keep the type but shift) */
        const graph_pad_attrs *a = tg_node_attrs(n);
        for (int d = 0; d < a->pads.n; d++)
            if (a->pads.v[d] != 0)
                return 0;
        return 1;
    }
    case GRAPH_OP_transpose: {
        const graph_transpose_attrs *a = tg_node_attrs(n);
        int perm[GRAPH_MAX_DIMS];
        if (graph_transpose_perm(t, &a->perm, perm, NULL, 0) != TG_OK)
            return 0;
        for (int d = 0; d < t->ndim; d++)
            if (perm[d] != d)
                return 0;
        return 1;
    }
    case GRAPH_OP_slice: {
        graph_type pt;
        opt_o1_probe_type(s, x, &pt);
        return slice_is_identity(t, tg_node_attrs(n)) &&
               slice_unbounded_on_dynamic(s->g, x, tg_node_attrs(n));
    }
    default: return 0;
    }
}

/* A shape op whose output has its input's type and elements -> its input. */
static int rule_noop(opt_o1_state *s, int32_t node)
{
    const graph_node *n = &s->g->nodes[node];
    if (n->nin != 1 || n->nout != 1 || !opt_o1_same_type(s, n->in[0], n->out[0]) ||
        !noop(s, node))
        return 0;
    return fired(s, node, n->in[0], 1);
}

/*
 * view(view(x)) -> reshape(x): a reshape keeps its own shape list (it
 * depends only on the element count); other views become a reshape to
 * their output dims, with -1 for a dynamic dim (so at most one).
 */
static int rule_view_chain(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    int32_t p = is_view(n->op) ? opt_o1_producer(s, n->in[0]) : -1;
    if (p < 0 || !is_view(g->nodes[p].op) || squeeze_by_size(g, node) ||
        squeeze_by_size(g, p))
        return 0;
    int32_t x = opt_o1_find(s, g->nodes[p].in[0]), out = n->out[0], v;
    if (opt_o1_same_type(s, x, out))
        return fired(s, node, x, 1);
    graph_reshape_attrs ra;
    memset(&ra, 0, sizeof ra);
    if (n->op == GRAPH_OP_reshape) {
        ra.shape = ((const graph_reshape_attrs *)tg_node_attrs(n))->shape;
    } else {
        const graph_value *o = &g->values[out];
        ra.shape.n = o->type.ndim;
        for (int d = 0; d < o->type.ndim; d++)
            ra.shape.v[d] = (o->dyn >> d & 1) ? -1 : o->type.dim[d];
        if (__builtin_popcount(o->dyn) > 1)
            return 0;
    }
    int32_t prov[2] = {node, p};
    if (opt_o1_add_node(s, GRAPH_OP_reshape, &x, 1, &ra, out, prov, 2, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    return fired(s, node, v, 0);
}

/* transpose(transpose(x)) -> x or one transpose with the composed perm. */
static int rule_transpose_chain(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    int32_t p = n->op == GRAPH_OP_transpose ? opt_o1_producer(s, n->in[0]) : -1;
    if (p < 0 || g->nodes[p].op != GRAPH_OP_transpose)
        return 0;
    int32_t x = opt_o1_find(s, g->nodes[p].in[0]), out = n->out[0], v;
    const graph_transpose_attrs *pa = tg_node_attrs(&g->nodes[p]);
    const graph_transpose_attrs *na = tg_node_attrs(n);
    int pp[GRAPH_MAX_DIMS], np[GRAPH_MAX_DIMS], ident = 1;
    if (graph_transpose_perm(&g->values[x].type, &pa->perm, pp, NULL, 0) != TG_OK ||
        graph_transpose_perm(&g->values[n->in[0]].type, &na->perm, np, NULL, 0) != TG_OK)
        return 0;
    graph_transpose_attrs ta;
    memset(&ta, 0, sizeof ta);
    ta.perm.n = g->values[x].type.ndim;
    for (int d = 0; d < ta.perm.n; d++) { /* out dim d = mid dim np[d] = x dim pp[np[d]] */
        ta.perm.v[d] = pp[np[d]];
        ident &= ta.perm.v[d] == d;
    }
    if (ident)
        return opt_o1_same_type(s, x, out) ? fired(s, node, x, 1) : 0;
    int32_t prov[2] = {node, p};
    if (opt_o1_add_node(s, GRAPH_OP_transpose, &x, 1, &ta, out, prov, 2, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    return fired(s, node, v, 0);
}

/*
 * expand(expand(x, s1), s2) -> expand(x, s) with s the broadcast of s1
 * and s2 (broadcasting is associative).  A 1 that both keep stays 1, so a
 * dynamic dim of x passes through as before.
 */
static int rule_expand_chain(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    int32_t p = n->op == GRAPH_OP_expand ? opt_o1_producer(s, n->in[0]) : -1;
    if (p < 0 || g->nodes[p].op != GRAPH_OP_expand)
        return 0;
    const graph_ints *s1 = &((const graph_expand_attrs *)tg_node_attrs(&g->nodes[p]))->shape;
    const graph_ints *s2 = &((const graph_expand_attrs *)tg_node_attrs(n))->shape;
    graph_expand_attrs ea;
    memset(&ea, 0, sizeof ea);
    ea.shape.n = s1->n > s2->n ? s1->n : s2->n;
    for (int k = 1; k <= ea.shape.n; k++) { /* aligned from the right */
        int64_t a = k <= s1->n ? s1->v[s1->n - k] : 1, b = k <= s2->n ? s2->v[s2->n - k] : 1;
        if (a != b && a != 1 && b != 1)
            return 0;
        ea.shape.v[ea.shape.n - k] = a == 1 ? b : a;
    }
    int32_t x = opt_o1_find(s, g->nodes[p].in[0]), prov[2] = {node, p}, v;
    if (opt_o1_add_node(s, GRAPH_OP_expand, &x, 1, &ea, n->out[0], prov, 2, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    return fired(s, node, v, 0);
}

/* Every value of dtype from survives a cast to dtype to unchanged. */
static int lossless(graph_dtype from, graph_dtype to)
{
    return from == to || from == GRAPH_BOOL || (from == GRAPH_I32 && to == GRAPH_I64);
}

/* cast(cast(x, a), b) -> cast(x, b) (or x) when a holds x's values exactly. */
static int rule_cast_chain(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    int32_t p = n->op == GRAPH_OP_cast ? opt_o1_producer(s, n->in[0]) : -1;
    if (p < 0 || g->nodes[p].op != GRAPH_OP_cast)
        return 0;
    int32_t x = opt_o1_find(s, g->nodes[p].in[0]), out = n->out[0], v;
    graph_dtype a = g->values[n->in[0]].type.dtype;
    if (!lossless(g->values[x].type.dtype, a))
        return 0;
    if (opt_o1_same_type(s, x, out))
        return fired(s, node, x, 1);
    graph_cast_attrs ca;
    memset(&ca, 0, sizeof ca);
    ca.to = g->values[out].type.dtype;
    int32_t prov[2] = {node, p};
    if (opt_o1_add_node(s, GRAPH_OP_cast, &x, 1, &ca, out, prov, 2, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    return fired(s, node, v, 0);
}

int opt_o1_simplify_shape(opt_o1_state *s, int32_t node)
{
    static int (*const rules[])(opt_o1_state *, int32_t) = {
        rule_noop, rule_view_chain, rule_transpose_chain, rule_expand_chain, rule_cast_chain,
    };
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        int got = rules[r](s, node);
        if (got != 0)
            return got;
    }
    return 0;
}
