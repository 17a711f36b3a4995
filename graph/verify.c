/*
 * verify.c - the graph verifier.  Callable after any stage; every message
 * about a node names its index, op and the user's call site.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "graph.h"
#include "graph_impl.h"

/* "node 3 (matmul at model.c:42 mlp_forward)" */
static const char *node_str(const graph *g, int32_t i, char *buf, size_t len)
{
    char site[256];
    const graph_node *n = &g->nodes[i];
    snprintf(buf, len, "node %d (%s at %s)", i, graph_ops[n->op].name,
             graph_prov_str(g, n->nprov ? n->prov[0] : -1, site, sizeof site));
    return buf;
}

static tg_status check_values(graph *g, int allow_elided)
{
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        if ((unsigned)v->type.dtype >= GRAPH_DTYPE_COUNT || v->type.ndim < 0 ||
            v->type.ndim > GRAPH_MAX_DIMS)
            return graph_fail(g, TG_ERR_FORMAT, "value %%%d has an invalid type", i);
        for (int d = 0; d < v->type.ndim; d++) {
            if (v->type.dim[d] < 0)
                return graph_fail(g, TG_ERR_FORMAT, "value %%%d has a negative dim", i);
            if ((v->dyn >> d & 1) && (v->sym[d] < 0 || v->sym[d] >= g->nsyms))
                return graph_fail(g, TG_ERR_FORMAT,
                                  "value %%%d: dim %d names no symbol", i, d);
        }
        if (v->kind == GRAPH_VALUE_INTER) {
            if (v->node < 0 || v->node >= g->nnodes)
                return graph_fail(g, TG_ERR_FORMAT,
                                  "value %%%d has no producer node", i);
        } else if (graph_kind_has_data(v->kind)) {
            if (!v->data && !allow_elided)
                return graph_fail(g, TG_ERR_FORMAT, "%s value %%%d has no data",
                                  graph_value_kind_name(v->kind), i);
        } else if (v->kind != GRAPH_VALUE_INPUT) {
            return graph_fail(g, TG_ERR_FORMAT, "value %%%d has kind %d", i, (int)v->kind);
        }
    }
    /* Every input value is in the signature exactly once (linear: a mark
     * per value; a hostile file may hold many inputs). */
    char *listed = tg_calloc((size_t)g->nvalues + 1, 1);
    if (!listed)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory verifying");
    tg_status st = TG_OK;
    for (int32_t i = 0; i < g->ninputs && st == TG_OK; i++) {
        int32_t v = g->inputs[i];
        if (v < 0 || v >= g->nvalues || g->values[v].kind != GRAPH_VALUE_INPUT)
            st = graph_fail(g, TG_ERR_FORMAT, "input %d is not an input value", i);
        else if (listed[v]++)
            st = graph_fail(g, TG_ERR_FORMAT, "input %%%d is listed twice", v);
    }
    for (int32_t i = 0; i < g->nvalues && st == TG_OK; i++)
        if (g->values[i].kind == GRAPH_VALUE_INPUT && !listed[i])
            st = graph_fail(g, TG_ERR_FORMAT, "input value %%%d is not in the signature", i);
    tg_free(listed);
    if (st != TG_OK)
        return st;
    return TG_OK;
}

/* SSA order, single producers and fresh type inference, node by node. */
static tg_status check_nodes(graph *g, char *defined)
{
    char what[400], msg[400];
    graph_type itype[GRAPH_MAX_NODE_IO], otype[GRAPH_MAX_NODE_IO];
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if ((unsigned)n->op >= GRAPH_OP_COUNT)
            return graph_fail(g, TG_ERR_FORMAT, "node %d has invalid op %d", i, (int)n->op);
        for (int k = 0; k < n->nprov; k++)
            if (n->prov[k] < 0 || n->prov[k] >= g->nprovs)
                return graph_fail(g, TG_ERR_FORMAT, "node %d names provenance %d, "
                                  "which does not exist", i, n->prov[k]);
        /* Messages name the node; formatted only when one is needed. */
#define WHAT node_str(g, i, what, sizeof what)
        if (n->nin > GRAPH_MAX_NODE_IO || n->nout > GRAPH_MAX_NODE_IO || n->nin < 0 || n->nout < 0)
            return graph_fail(g, TG_ERR_FORMAT, "%s: %d inputs, %d outputs", WHAT,
                              n->nin, n->nout);
        for (int k = 0; k < n->nin; k++) {
            int32_t v = n->in[k];
            if (v < 0 || v >= g->nvalues)
                return graph_fail(g, TG_ERR_FORMAT, "%s: input %d is value %d, "
                                  "which does not exist", WHAT, k, v);
            if (!defined[v])
                return graph_fail(g, TG_ERR_FORMAT, "%s: input %d uses %%%d before "
                                  "it is defined", WHAT, k, v);
            itype[k] = g->values[v].type;
        }
        int nout = 0;
        tg_status st = graph_infer(n->op, itype, n->nin,
                                   tg_node_attrs(n),
                                   otype, GRAPH_MAX_NODE_IO, &nout, msg, sizeof msg);
        if (st != TG_OK)
            return graph_fail(g, st, "%s: %s", WHAT, msg);
        if (nout != n->nout)
            return graph_fail(g, TG_ERR_FORMAT, "%s: has %d outputs, its op makes %d",
                              WHAT, n->nout, nout);
        for (int k = 0; k < n->nout; k++) {
            int32_t v = n->out[k];
            if (v < 0 || v >= g->nvalues)
                return graph_fail(g, TG_ERR_FORMAT, "%s: output %d is value %d, "
                                  "which does not exist", WHAT, k, v);
            const graph_value *val = &g->values[v];
            if (val->kind != GRAPH_VALUE_INTER || val->node != i || val->out_index != k)
                return graph_fail(g, TG_ERR_FORMAT, "%s: output %d (%%%d) names "
                                  "another producer", WHAT, k, v);
            if (defined[v])
                return graph_fail(g, TG_ERR_FORMAT, "%s: output %%%d is defined twice",
                                  WHAT, v);
            if (!graph_type_eq(&val->type, &otype[k])) {
                char a[160], b[160];
                return graph_fail(g, TG_ERR_SHAPE, "%s: output %%%d is %s%s but the op "
                                  "makes %s%s", WHAT, v, graph_dtype_name(val->type.dtype),
                                  graph_shape_str(&val->type, a, sizeof a),
                                  graph_dtype_name(otype[k].dtype),
                                  graph_shape_str(&otype[k], b, sizeof b));
            }
            defined[v] = 1;
        }
#undef WHAT
    }
    return TG_OK;
}

static int by_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const char *const *)a, y = (uintptr_t)*(const char *const *)b;
    return (x > y) - (x < y);
}

/* Output names are present and unique (interned: equal names, equal
 * pointers; sorted, so a hostile file with many outputs stays cheap). */
static tg_status check_output_names(graph *g)
{
    const char **names = tg_malloc(sizeof(char *) * (size_t)(g->noutputs + 1));
    if (!names)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory verifying");
    tg_status st = TG_OK;
    for (int32_t i = 0; i < g->noutputs; i++)
        if (!(names[i] = g->outputs[i].name))
            st = graph_fail(g, TG_ERR_FORMAT, "output %d has no name", i);
    if (st == TG_OK) {
        qsort(names, (size_t)g->noutputs, sizeof *names, by_ptr);
        for (int32_t i = 1; i < g->noutputs && st == TG_OK; i++)
            if (names[i] == names[i - 1])
                st = graph_fail(g, TG_ERR_FORMAT, "output name \"%s\" is used twice", names[i]);
    }
    tg_free(names);
    return st;
}

/* Input names are present, non-empty and unique: replay matches inputs by
 * name (same sorted check as the outputs'). */
static tg_status check_input_names(graph *g)
{
    const char **names = tg_malloc(sizeof(char *) * (size_t)(g->ninputs + 1));
    if (!names)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory verifying");
    tg_status st = TG_OK;
    for (int32_t i = 0; i < g->ninputs && st == TG_OK; i++) {
        names[i] = g->values[g->inputs[i]].name;
        if (!names[i] || !names[i][0])
            st = graph_fail(g, TG_ERR_FORMAT, "input %d (%%%d) has no name", i,
                            g->inputs[i]);
    }
    if (st == TG_OK) {
        qsort(names, (size_t)g->ninputs, sizeof *names, by_ptr);
        for (int32_t i = 1; i < g->ninputs && st == TG_OK; i++)
            if (names[i] == names[i - 1])
                st = graph_fail(g, TG_ERR_FORMAT, "input name \"%s\" is used twice",
                                names[i]);
    }
    tg_free(names);
    return st;
}

/* Each state pairs a named state value, listed once, with a defined next
 * value of its type; every state value is listed; names are unique. */
static tg_status check_states(graph *g, const char *defined)
{
    char *listed = tg_calloc((size_t)g->nvalues + 1, 1);
    const char **names = tg_malloc(sizeof(char *) * (size_t)(g->nstates + 1));
    tg_status st = listed && names ? TG_OK : graph_fail(g, TG_ERR_NOMEM, "out of memory verifying");
    for (int32_t i = 0; st == TG_OK && i < g->nstates; i++) {
        int32_t v = g->states[i].value, nx = g->states[i].next;
        if (v < 0 || v >= g->nvalues || g->values[v].kind != GRAPH_VALUE_STATE)
            st = graph_fail(g, TG_ERR_FORMAT, "state %d is value %d, not a state value", i, v);
        else if (!g->values[v].name || !g->values[v].name[0])
            st = graph_fail(g, TG_ERR_FORMAT, "state %d (%%%d) has no name", i, v);
        else if (listed[v]++)
            st = graph_fail(g, TG_ERR_FORMAT, "state \"%s\" (%%%d) is listed twice",
                            g->values[v].name, v);
        else if (nx < 0 || nx >= g->nvalues || !defined[nx])
            st = graph_fail(g, TG_ERR_FORMAT, "state \"%s\": its next value %d is not "
                            "defined by a live node", g->values[v].name, nx);
        else if (!graph_type_eq(&g->values[v].type, &g->values[nx].type))
            st = graph_fail(g, TG_ERR_FORMAT, "state \"%s\": its next value %%%d has "
                            "another type", g->values[v].name, nx);
        else
            names[i] = g->values[v].name;
    }
    for (int32_t i = 0; st == TG_OK && i < g->nvalues; i++)
        if (g->values[i].kind == GRAPH_VALUE_STATE && !listed[i])
            st = graph_fail(g, TG_ERR_FORMAT, "state value %%%d (\"%s\") is not in the "
                            "graph's states", i, g->values[i].name ? g->values[i].name : "?");
    if (st == TG_OK) {
        qsort(names, (size_t)g->nstates, sizeof *names, by_ptr);
        for (int32_t i = 1; i < g->nstates && st == TG_OK; i++)
            if (names[i] == names[i - 1])
                st = graph_fail(g, TG_ERR_FORMAT, "state name \"%s\" is used twice",
                                names[i]);
    }
    tg_free(listed);
    tg_free(names);
    return st;
}

tg_status graph_verify(graph *g, int allow_elided)
{
    if (!g)
        return TG_ERR_NULL;
    tg_status st = check_values(g, allow_elided);
    if (st != TG_OK)
        return st;
    char *defined = tg_calloc((size_t)g->nvalues + 1, 1);
    if (!defined)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory verifying");
    for (int32_t i = 0; i < g->nvalues; i++)
        defined[i] = g->values[i].kind != GRAPH_VALUE_INTER;
    st = check_nodes(g, defined);
    for (int32_t i = 0; st == TG_OK && i < g->noutputs; i++) {
        int32_t v = g->outputs[i].value;
        if (v < 0 || v >= g->nvalues || !defined[v])
            st = graph_fail(g, TG_ERR_FORMAT, "output \"%s\" is value %d, which no "
                            "live node defines", g->outputs[i].name, v);
    }
    if (st == TG_OK)
        st = check_output_names(g);
    if (st == TG_OK)
        st = check_input_names(g);
    if (st == TG_OK)
        st = check_states(g, defined);
    for (int32_t i = 0; st == TG_OK && i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        if (gd->value < 0 || gd->value >= g->nvalues || !defined[gd->value] ||
            gd->prov < -1 || gd->prov >= g->nprovs ||
            gd->index < (gd->kind == GRAPH_GUARD_SIZE ? 0 : -1) ||
            gd->index >= (gd->kind == GRAPH_GUARD_SIZE ? g->values[gd->value].type.ndim
                                                       : graph_type_numel(&g->values[gd->value].type)))
            st = graph_fail(g, TG_ERR_FORMAT, "guard %d is malformed", i);
    }
    tg_free(defined);
    return st;
}
