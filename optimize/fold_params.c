/*
 * fold_params.c - at -O2 and above, params become constants (unless the
 * caller keeps them swappable with opt_options.keep_params), so constant
 * folding and the fusions that rewrite weights (conv + batch-norm, layout)
 * can use their data.  A plan compiled after this pass cannot swap them.
 */
#include "opt.h"
#include "graph/graph_impl.h"

static tg_status run(graph *g, opt_ctx *ctx)
{
    for (int32_t v = 0; v < g->nvalues; v++) {
        graph_value *val = &g->values[v];
        if (val->kind != GRAPH_VALUE_PARAM)
            continue;
        val->kind = GRAPH_VALUE_CONST;
        ctx->stats->rewritten++;
        ctx->changed = 1;
    }
    return TG_OK;
}

const opt_pass opt_pass_fold_params = {"fold-params", run};
