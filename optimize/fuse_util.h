/*
 * fuse_util.h - small graph queries shared by the fusion passes
 * (conv_bn.c, transpose_absorb.c, horizontal.c, epilogue.c).  Internal to
 * optimize/.
 *
 * Pinned values, as these passes read the rule of opt.h: a value that a
 * rewrite makes disappear (an intermediate absorbed into a fused node)
 * must not be pinned at all; the value a fused node replaces may be a
 * graph output (the output then names the fused node's value, equal in
 * type and, within rounding, in data) but never a guarded value, which
 * must be computed exactly as traced.
 */
#ifndef TG_OPTIMIZE_FUSE_UTIL_H
#define TG_OPTIMIZE_FUSE_UTIL_H

#include <string.h>

#include "opt.h"
#include "graph/graph_impl.h"

/* The live node producing v, or -1 (inputs, params, constants). */
static inline int32_t fu_producer(const graph *g, int32_t v)
{
    const graph_value *val = &g->values[v];
    if (val->kind != GRAPH_VALUE_INTER || val->node < 0 ||
        (g->nodes[val->node].flags & GRAPH_NODE_DEAD))
        return -1;
    return val->node;
}

/* v's f32 data when v is a constant that has it (not elided), else NULL. */
static inline const float *fu_const_f32(const graph *g, int32_t v)
{
    const graph_value *val = &g->values[v];
    if (val->kind != GRAPH_VALUE_CONST || val->type.dtype != GRAPH_F32 || !val->data)
        return NULL;
    return val->data;
}

/* Nonzero if a guard reads v. */
static inline int fu_guarded(const graph *g, int32_t v)
{
    for (int32_t i = 0; i < g->nguards; i++)
        if (g->guards[i].value == v)
            return 1;
    return 0;
}

/* Same dtype, shape, and dynamic dims tied to the same symbols. */
static inline int fu_same_type(const graph *g, int32_t a, int32_t b)
{
    const graph_value *x = &g->values[a], *y = &g->values[b];
    if (x->type.dtype != y->type.dtype || x->type.ndim != y->type.ndim || x->dyn != y->dyn)
        return 0;
    for (int d = 0; d < x->type.ndim; d++)
        if (x->type.dim[d] != y->type.dim[d] ||
            ((x->dyn >> d & 1u) && x->sym[d] != y->sym[d]))
            return 0;
    return 1;
}

/* Bytes of v's data when it is a constant only n nodes read, else 0:
 * what dropping those uses frees. */
static inline int64_t fu_freed_bytes(const graph *g, const opt_uses *u, int32_t v, int n)
{
    const graph_value *val = &g->values[v];
    if (val->kind != GRAPH_VALUE_CONST || opt_nuses(u, v) != n || opt_pinned(g, v))
        return 0;
    return (int64_t)graph_value_nbytes(val);
}

/* The single live user of v (nuses 1), or -1. */
static inline int32_t fu_sole_user(const opt_uses *u, int32_t v)
{
    return opt_nuses(u, v) == 1 ? u->list[u->first[v]] : -1;
}

/*
 * Appends a node and gives it the provenance of src[0..nsrc) in order
 * (the first is the primary).  Returns the node id, or -1 with the
 * failure in ctx->err.
 */
static inline int32_t fu_add_node(graph *g, opt_ctx *ctx, graph_op op, const int32_t *in,
                                  int nin, const void *attrs, int32_t *outs, int max_out,
                                  const int32_t *src, int nsrc)
{
    int32_t n = graph_add_node(g, op, in, nin, attrs, outs, max_out);
    if (n < 0) {
        opt_fail(ctx, g, src[0], TG_ERR_STATE, "cannot add %s: %s", graph_ops[op].name,
                 graph_error(g));
        return -1;
    }
    for (int i = 0; i < nsrc; i++)
        if (opt_merge_prov(g, n, src[i]) != TG_OK) {
            opt_fail(ctx, g, src[0], TG_ERR_NOMEM, "out of memory merging provenance");
            return -1;
        }
    return n;
}

#endif
