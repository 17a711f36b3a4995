/*
 * layout_impl.h - what layout.c (the pass: planning and rewriting) and
 * layout_cost.c (its cost model) share.  Internal to optimize/.
 */
#ifndef TG_OPTIMIZE_LAYOUT_IMPL_H
#define TG_OPTIMIZE_LAYOUT_IMPL_H

#include "fuse_util.h"
#include "graph/graph_impl.h"

typedef struct lay {
    graph *g;
    opt_ctx *ctx;
    const graph_target *t; /* what the layout is planned for */
    int bs;                /* its block: channels to a block (8 or 16) */
    int32_t *blk;  /* plain value -> its blocked counterpart, or -1 */
    uint8_t *made; /* plain value produced by a converted node */
    int32_t nv;    /* values when the pass started */
    const opt_uses *u;
} lay;

/* What the plan makes of a node (plan_all), before anything is rewritten. */
enum { LK_NONE, LK_CONV, LK_EW, LK_GAP, LK_CONCAT, LK_BN, LK_POOL, LK_ABSORBED };

typedef struct plan {
    int8_t *kind;    /* per node: LK_* */
    int8_t *k;       /* per conv node: its groups packed k to a group of bs */
    int32_t *parent; /* per node: union-find of the regions */
    int32_t *enter;  /* per plain value: the node whose to_blocked it takes, or -1 */
    int32_t *by;     /* per value made blocked: the node that makes it, or -1 */
} plan;

/* Union-find over the planned nodes: a blocked region's root. */
static inline int32_t root_of(int32_t *parent, int32_t i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

static inline void unite(int32_t *parent, int32_t a, int32_t b)
{
    a = root_of(parent, a), b = root_of(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b;
}

/* 1 if v is a graph output. */
int layout_is_output(const graph *g, int32_t v);
/* The blocked type [N, ceil(C/bs), H, W, bs] of a plain [N, C, H, W]. */
graph_type layout_blocked_type(const graph_type *t, int bs);
/* A conv2d / conv2d_ep node's attributes as conv2d_blk's, block bs. */
graph_conv2d_blk_attrs layout_blk_attrs(const graph_node *n, int bs);

/*
 * The cost model (layout_cost.c): marks LK_NONE every node of a region
 * whose conversions cost more than its convs gain blocked, explaining
 * why at each conv.  TG_OK, or TG_ERR_NOMEM through opt_fail.
 */
tg_status layout_plan_costs(lay *L, plan *P, int32_t nn);

#endif
