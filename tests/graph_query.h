/*
 * graph_query.h - questions tests ask of a graph after a pass: how many
 * live nodes run an op, and which is the first.  Shared by the optimizer
 * tests' helper headers (opt_test_util.h, opt_fuse_util.h).
 */
#ifndef TG_TESTS_GRAPH_QUERY_H
#define TG_TESTS_GRAPH_QUERY_H

#include "graph/graph.h"
#include "graph/graph_impl.h"

/* Live nodes running op. */
static inline int count_op(const graph *g, graph_op op)
{
    int n = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        n += !(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op;
    return n;
}

/* The first live node running op, or -1. */
static inline int32_t find_op(const graph *g, graph_op op)
{
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op)
            return i;
    return -1;
}

#endif
