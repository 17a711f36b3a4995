/*
 * invariants.h - the structural invariants of a graph, asserted (internal:
 * not installed).
 *
 * graph_assert_links(g) TG_ASSERTs what every pass, the planner and the
 * replay compiler rely on without checking: each live node has a known op,
 * an input and output count its op allows, inputs that are values of the
 * graph and whose producer (for an intermediate) is a live node, and
 * outputs whose producer is this node at this index; every graph output is
 * a value of the graph.  It runs where TG_ASSERTS is defined (Debug and
 * sanitized builds) and is empty otherwise; graph_verify is the check for
 * input (it returns an error), this one for the library's own rewrites (a
 * broken invariant stops at the rewrite that broke it).
 */
#ifndef TG_GRAPH_INVARIANTS_H
#define TG_GRAPH_INVARIANTS_H

#include "graph_impl.h"

void graph_assert_links(const graph *g);

#endif
