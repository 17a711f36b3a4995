/*
 * dce.c - dead code elimination (-O1).
 *
 * Values are live if they are graph outputs or guarded (a guard is checked
 * when its value is computed, so its producer must run), and so, going
 * backwards, are the inputs of every node that makes a live value.  A node
 * with side effects (an op without GRAPH_PROP_PURE; none today) is live
 * whatever its outputs, and so is one that may fail on its operands'
 * values (opt_may_fail): it fails at -O0, and removing it would turn that
 * error into a result.  Every other node is marked GRAPH_NODE_DEAD; the
 * manager's graph_compact then drops it, and with it the constants and
 * params that only dead nodes read.  An unused param disappears from the
 * graph that way (it is not part of the signature); a plan compiled from
 * the optimized graph then has no slot to swap it into.
 *
 * Stats: removed = nodes marked dead; bytes = constant and param bytes that
 * nothing reads any more.
 */
#include <stdlib.h>

#include "../graph/alloc.h"
#include "opt.h"
#include "../graph/graph_impl.h"

/* Bytes of params and constants read by live nodes or pinned. */
static int64_t source_bytes(const graph *g, const uint8_t *live)
{
    int64_t total = 0;
    for (int32_t v = 0; v < g->nvalues; v++) {
        const graph_value *val = &g->values[v];
        if ((val->kind == GRAPH_VALUE_CONST || val->kind == GRAPH_VALUE_PARAM) && live[v])
            total += (int64_t)graph_value_nbytes(val);
    }
    return total;
}

/*
 * Marks live values and nodes.  Nodes are in order, so one backward sweep
 * normally sees every user before its producer; the sweep repeats until
 * nothing new turns up, in case a pass left the order unsorted.
 */
static void mark_live(const graph *g, uint8_t *live, uint8_t *node_live)
{
    for (int32_t i = 0; i < g->noutputs; i++)
        live[g->outputs[i].value] = 1;
    for (int32_t i = 0; i < g->nguards; i++)
        live[g->guards[i].value] = 1;
    for (int32_t i = 0; i < g->nstates; i++)
        live[g->states[i].value] = live[g->states[i].next] = 1;
    for (int more = 1; more;) {
        more = 0;
        for (int32_t i = g->nnodes - 1; i >= 0; i--) {
            const graph_node *n = &g->nodes[i];
            if ((n->flags & GRAPH_NODE_DEAD) || node_live[i])
                continue;
            int keep = !(graph_ops[n->op].props & GRAPH_PROP_PURE) || opt_may_fail(g, i);
            for (int k = 0; k < n->nout && !keep; k++)
                keep = live[n->out[k]];
            if (!keep)
                continue;
            node_live[i] = 1;
            for (int k = 0; k < n->nin; k++) {
                const graph_value *v = &g->values[n->in[k]];
                more |= !live[n->in[k]] && v->kind == GRAPH_VALUE_INTER &&
                        v->node > i; /* a producer the sweep has passed */
                live[n->in[k]] = 1;
            }
        }
    }
}

/* Sources read by live nodes, for the byte count before the pass. */
static void mark_read(const graph *g, uint8_t *read)
{
    for (int32_t i = 0; i < g->noutputs; i++)
        read[g->outputs[i].value] = 1;
    for (int32_t i = 0; i < g->nguards; i++)
        read[g->guards[i].value] = 1;
    for (int32_t i = 0; i < g->nstates; i++)
        read[g->states[i].value] = read[g->states[i].next] = 1;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            for (int k = 0; k < g->nodes[i].nin; k++)
                read[g->nodes[i].in[k]] = 1;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    uint8_t *live = tg_calloc((size_t)g->nvalues + 1, 1);
    uint8_t *read = tg_calloc((size_t)g->nvalues + 1, 1);
    uint8_t *node_live = tg_calloc((size_t)g->nnodes + 1, 1);
    if (!live || !read || !node_live) {
        tg_free(live);
        tg_free(read);
        tg_free(node_live);
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    }
    mark_read(g, read);
    mark_live(g, live, node_live);
    for (int32_t i = 0; i < g->nnodes; i++) {
        graph_node *n = &g->nodes[i];
        if ((n->flags & GRAPH_NODE_DEAD) || node_live[i])
            continue;
        n->flags |= GRAPH_NODE_DEAD;
        ctx->stats->removed++;
        ctx->changed = 1;
    }
    ctx->stats->bytes += source_bytes(g, read) - source_bytes(g, live);
    tg_free(live);
    tg_free(read);
    tg_free(node_live);
    return TG_OK;
}

const opt_pass opt_pass_dce = {"dce", run};
