/* summary.c - a readable account of a frozen trace (trace_summary, graph.h):
 * every role a value plays (inputs, params, a training step's states,
 * outputs, dynamic dims), the ops, specialized nodes and guards; graph
 * code only, so the tool prints it without the tracer. */
#include <string.h>

#include "graph.h"
#include "graph_impl.h"
#include "text_impl.h"

static const char *guard_kind(graph_guard_kind k)
{
    return k == GRAPH_GUARD_DECISION ? "decision" : k == GRAPH_GUARD_BUFFER ? "buffer"
           : k == GRAPH_GUARD_SIZE ? "size" : "value";
}

static const char *guard_policy(graph_guard_policy p)
{
    return p == GRAPH_GUARD_WARN ? "warn" : p == GRAPH_GUARD_OFF ? "off" : "strict";
}

static void print_value(const graph *g, int32_t v, FILE *f)
{
    const graph_value *val = &g->values[v];
    fprintf(f, "%s[", graph_dtype_name(val->type.dtype));
    for (int d = 0; d < val->type.ndim; d++) {
        if (val->dyn >> d & 1)
            fprintf(f, "%s%s", d ? "," : "", g->syms[val->sym[d]].name);
        else
            fprintf(f, "%s%lld", d ? "," : "", (long long)val->type.dim[d]);
    }
    fprintf(f, "]");
}

void trace_summary(const graph *g, FILE *f)
{
    if (!g || !f)
        return;
    int count[GRAPH_OP_COUNT] = {0};
    int32_t live = 0, consts = 0, spec = 0;
    size_t param_bytes = 0, const_bytes = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        count[g->nodes[i].op]++;
        live++;
        spec += !!(g->nodes[i].flags & GRAPH_NODE_SPECIALIZED);
    }
    for (int32_t i = 0; i < g->nvalues; i++) {
        if (g->values[i].kind == GRAPH_VALUE_PARAM)
            param_bytes += graph_value_nbytes(&g->values[i]);
        if (g->values[i].kind == GRAPH_VALUE_CONST) {
            consts++;
            const_bytes += graph_value_nbytes(&g->values[i]);
        }
    }
    size_t state_bytes = 0;
    for (int32_t i = 0; i < g->nstates; i++)
        state_bytes += graph_value_nbytes(&g->values[g->states[i].value]);
    fprintf(f, "trace %s: %d nodes, %d constants (%zu bytes), params %zu bytes", g->name, live,
            consts, const_bytes, param_bytes);
    if (g->nstates)
        fprintf(f, ", %d state%s (%zu bytes): a training step", (int)g->nstates,
                g->nstates == 1 ? "" : "s", state_bytes);
    fprintf(f, "\n");
    fprintf(f, "  ops:");
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        if (count[op])
            fprintf(f, " %s=%d", graph_ops[op].name, count[op]);
    fprintf(f, "\n");
    for (int32_t i = 0; i < g->ninputs; i++) {
        fprintf(f, "  input  %s: ", g->values[g->inputs[i]].name ? g->values[g->inputs[i]].name : "?");
        print_value(g, g->inputs[i], f);
        fprintf(f, "\n");
    }
    for (int32_t i = 0; i < g->nvalues; i++) {
        if (g->values[i].kind != GRAPH_VALUE_PARAM)
            continue;
        fprintf(f, "  param  %s: ", g->values[i].name ? g->values[i].name : "?");
        print_value(g, i, f);
        fprintf(f, "\n");
    }
    /* a training step's state: read at a run's start, its next value
     * stored at the end (the same value: the step leaves it as it is) */
    for (int32_t i = 0; i < g->nstates; i++) {
        int32_t v = g->states[i].value;
        fprintf(f, "  state  %s: ", g->values[v].name ? g->values[v].name : "?");
        print_value(g, v, f);
        fprintf(f, ", %s\n", g->states[i].next == v ? "not changed by the step"
                                                    : "updated by each step");
    }
    for (int32_t i = 0; i < g->noutputs; i++) {
        fprintf(f, "  output %s: ", g->outputs[i].name);
        print_value(g, g->outputs[i].value, f);
        fprintf(f, "\n");
    }
    for (int32_t s = 0; s < g->nsyms; s++)
        fprintf(f, "  dynamic dim %s (traced as %lld)\n", g->syms[s].name,
                (long long)g->syms[s].traced);
    char site[300];
    for (int32_t i = 0; spec && i < g->nnodes; i++)
        if ((g->nodes[i].flags & GRAPH_NODE_SPECIALIZED) && !(g->nodes[i].flags & GRAPH_NODE_DEAD))
            fprintf(f, "  specialized: node %d %s at %s works only at the traced sizes\n", i,
                    graph_ops[g->nodes[i].op].name,
                    graph_prov_str(g, g->nodes[i].nprov ? g->nodes[i].prov[0] : -1, site, sizeof site));
    fprintf(f, "  guards: %d%s\n", g->nguards,
            g->nguards ? " (data-dependent reads the trace baked in; size: a dim a specialized "
                         "node fixed)" : "");
    for (int32_t i = 0; i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        char what[160];
        graph_guard_value_str(g, gd->value, what, sizeof what);
        fprintf(f, "    guard %d: %s %s of ", (int)i, guard_policy(gd->policy),
                guard_kind(gd->kind));
        if (gd->kind == GRAPH_GUARD_BUFFER)
            fprintf(f, "%s (hash %016llx)", what, (unsigned long long)gd->hash);
        else
            fprintf(f, "%s %lld of %s == %.9g", gd->kind == GRAPH_GUARD_SIZE ? "dim" : "element",
                    (long long)gd->index, what, gd->expect);
        fprintf(f, " at %s\n", graph_prov_str(g, gd->prov, site, sizeof site));
    }
}
