/* invariants.c - graph_assert_links (see invariants.h). */
#include "invariants.h"

#include "errors.h"

#ifdef TG_ASSERTS
void graph_assert_links(const graph *g)
{
    TG_ASSERT(g && g->nvalues >= 0 && g->nnodes >= 0);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        TG_ASSERT((unsigned)n->op < GRAPH_OP_COUNT);
        const graph_op_info *op = &graph_ops[n->op];
        /* arity: what the op allows, after any rewrite */
        TG_ASSERT(n->nin >= op->min_in && n->nin <= GRAPH_MAX_NODE_IO &&
                  (op->max_in < 0 || n->nin <= op->max_in));
        TG_ASSERT(n->nout >= 1 && n->nout <= GRAPH_MAX_NODE_IO &&
                  (op->nout < 0 || n->nout == op->nout));
        for (int k = 0; k < n->nin; k++) {
            int32_t v = n->in[k];
            TG_ASSERT(v >= 0 && v < g->nvalues);
            const graph_value *val = &g->values[v];
            /* an intermediate read by a live node has a live producer */
            TG_ASSERT(val->kind != GRAPH_VALUE_INTER ||
                      (val->node >= 0 && val->node < g->nnodes &&
                       !(g->nodes[val->node].flags & GRAPH_NODE_DEAD)));
        }
        for (int k = 0; k < n->nout; k++) {
            int32_t v = n->out[k];
            TG_ASSERT(v >= 0 && v < g->nvalues);
            /* the value's producer is this node, at this output */
            TG_ASSERT(g->values[v].kind == GRAPH_VALUE_INTER && g->values[v].node == i &&
                      g->values[v].out_index == k);
        }
    }
    for (int32_t k = 0; k < g->noutputs; k++)
        TG_ASSERT(g->outputs[k].value >= 0 && g->outputs[k].value < g->nvalues);
    for (int32_t k = 0; k < g->ninputs; k++)
        TG_ASSERT(g->inputs[k] >= 0 && g->inputs[k] < g->nvalues &&
                  g->values[g->inputs[k]].kind == GRAPH_VALUE_INPUT);
}
#else
void graph_assert_links(const graph *g)
{
    (void)g;
}
#endif
