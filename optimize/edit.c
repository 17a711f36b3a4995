/* edit.c - graph editing helpers shared by the passes (see opt.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "opt.h"
#include "../graph/graph_impl.h"

tg_status opt_uses_build(const graph *g, opt_uses *u)
{
    if (!g || !u)
        return TG_ERR_NULL;
    memset(u, 0, sizeof *u);
    u->nvalues = g->nvalues;
    u->first = tg_calloc((size_t)g->nvalues + 2, sizeof *u->first);
    size_t total = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            total += (size_t)g->nodes[i].nin;
    u->list = tg_malloc(sizeof *u->list * (total + 1));
    int32_t *fill = tg_calloc((size_t)g->nvalues + 1, sizeof *fill);
    if (!u->first || !u->list || !fill) {
        tg_free(fill);
        opt_uses_free(u);
        return TG_ERR_NOMEM;
    }
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD))
            for (int k = 0; k < n->nin; k++)
                u->first[n->in[k] + 1]++;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        u->first[v + 1] += u->first[v];
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD))
            for (int k = 0; k < n->nin; k++) {
                int32_t v = n->in[k];
                u->list[u->first[v] + fill[v]++] = i;
            }
    }
    tg_free(fill);
    return TG_OK;
}

void opt_uses_free(opt_uses *u)
{
    if (!u)
        return;
    tg_free(u->first);
    tg_free(u->list);
    u->first = u->list = NULL;
}

int opt_pinned(const graph *g, int32_t v)
{
    if (!g)
        return 0;
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].value == v)
            return 1;
    for (int32_t i = 0; i < g->nguards; i++)
        if (g->guards[i].value == v)
            return 1;
    for (int32_t i = 0; i < g->nstates; i++)
        if (g->states[i].next == v || g->states[i].value == v)
            return 1;
    return 0;
}

int32_t opt_replace_uses(graph *g, int32_t from, int32_t to)
{
    int32_t changed = 0;
    if (!g)
        return 0;
    /* A use moves to a value of the same type: a pass that replaces a value
     * by one of another shape or dtype breaks every reader's inference. */
    TG_ASSERT(from >= 0 && from < g->nvalues && to >= 0 && to < g->nvalues &&
              graph_type_eq(&g->values[from].type, &g->values[to].type));
    for (int32_t i = 0; i < g->nnodes; i++) {
        graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == from) {
                n->in[k] = to;
                changed++;
            }
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].value == from) {
            g->outputs[i].value = to;
            changed++;
        }
    for (int32_t i = 0; i < g->nstates; i++)
        if (g->states[i].next == from) {
            g->states[i].next = to;
            changed++;
        }
    return changed;
}

int32_t opt_add_const(graph *g, const graph_type *t, const void *data)
{
    if (!g || !t || !data)
        return -1;
    int32_t v = graph_add_value(g, GRAPH_VALUE_CONST, t, NULL);
    if (v < 0)
        return -1;
    if (graph_set_data(g, v, data, graph_value_nbytes(&g->values[v])) != TG_OK)
        return -1;
    return v;
}

static double element(const void *data, graph_dtype dt, int64_t i)
{
    switch (dt) {
    case GRAPH_F32: return ((const float *)data)[i];
    case GRAPH_I64: return (double)((const int64_t *)data)[i];
    case GRAPH_I32: return ((const int32_t *)data)[i];
    default: return ((const uint8_t *)data)[i];
    }
}

int opt_const_scalar(const graph *g, int32_t v, double *x)
{
    if (!g || !x || v < 0 || v >= g->nvalues)
        return 0;
    const graph_value *val = &g->values[v];
    int64_t n = graph_type_numel(&val->type);
    if (val->kind != GRAPH_VALUE_CONST || !val->data || n < 1)
        return 0;
    double first = element(val->data, val->type.dtype, 0);
    for (int64_t i = 1; i < n; i++) {
        double e = element(val->data, val->type.dtype, i);
        if (e != first && !(e != e && first != first)) /* NaN equals NaN here */
            return 0;
    }
    *x = first;
    return 1;
}

tg_status opt_merge_prov(graph *g, int32_t dst, int32_t src)
{
    if (!g)
        return TG_ERR_NULL;
    /* Both are nodes of g; the one that keeps the ids is live. */
    TG_ASSERT(dst >= 0 && dst < g->nnodes && src >= 0 && src < g->nnodes &&
              !(g->nodes[dst].flags & GRAPH_NODE_DEAD));
    /* A short list is scanned, so it never holds an id twice.  A long one
     * (CSE merging thousands of nodes into one) takes src's ids as they
     * come, and drops the repeats when it is full, before it doubles, and
     * at graph_compact after the pass: n merges cost O(n log n), where a
     * scan per id was O(n^2). */
    int32_t ns = g->nodes[src].nprov;
    for (int32_t k = 0; k < ns && src != dst; k++) {
        int32_t p = g->nodes[src].prov[k];
        const graph_node *d = &g->nodes[dst];
        if (d->nprov <= 16) {
            int have = 0;
            for (int32_t j = 0; j < d->nprov && !have; j++)
                have = d->prov[j] == p;
            if (have)
                continue;
        } else if (d->nprov >= d->cap_prov) {
            if (graph_node_dedup_prov(g, dst) != TG_OK)
                return TG_ERR_NOMEM;
            /* Still more than half full: double now, so that the next
             * dedup is at least as many appends away as it costs. */
            if (d->nprov > d->cap_prov / 2 &&
                graph_node_reserve_prov(g, dst, d->nprov > INT32_MAX / 2 ? INT32_MAX
                                                           : 2 * d->nprov) != TG_OK)
                return TG_ERR_NOMEM;
        }
        if (graph_node_add_prov(g, dst, p) != TG_OK)
            return TG_ERR_NOMEM;
    }
    return TG_OK;
}

static void node_site(const graph *g, int32_t node, char *buf, size_t len)
{
    char site[300];
    if (node < 0 || node >= g->nnodes) {
        snprintf(buf, len, "the graph");
        return;
    }
    const graph_node *n = &g->nodes[node];
    snprintf(buf, len, "node %d (%s at %s)", node, graph_ops[n->op].name,
             graph_prov_str(g, n->nprov ? n->prov[0] : -1, site, sizeof site));
}

tg_status opt_fail(opt_ctx *ctx, const graph *g, int32_t node, tg_status st,
                   const char *fmt, ...)
{
    char what[400] = "", msg[600];
    if (!ctx || !fmt)
        return st;
    if (g && node >= 0 && node < g->nnodes)
        node_site(g, node, what, sizeof what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ctx->err && ctx->errlen)
        snprintf(ctx->err, ctx->errlen, "%s%s%s", what, what[0] ? ": " : "", msg);
    return st;
}

void opt_explain(opt_ctx *ctx, const graph *g, int32_t node, const char *fmt, ...)
{
    FILE *f = ctx && ctx->opts && g && fmt ? ctx->opts->explain : NULL;
    if (!f)
        return;
    char what[400];
    node_site(g, node, what, sizeof what);
    fprintf(f, "%s: %s: ", ctx->stats ? ctx->stats->name : "?", what);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

/* Nonzero if constant v's integer elements all lie in [lo, hi]. */
static int const_ints_within(const graph *g, int32_t v, int64_t lo, int64_t hi)
{
    const graph_value *val = &g->values[v];
    if (val->kind != GRAPH_VALUE_CONST || !val->data ||
        (val->type.dtype != GRAPH_I64 && val->type.dtype != GRAPH_I32))
        return 0;
    int64_t n = graph_type_numel(&val->type);
    for (int64_t k = 0; k < n; k++) {
        int64_t x = val->type.dtype == GRAPH_I64 ? ((const int64_t *)val->data)[k]
                                                  : ((const int32_t *)val->data)[k];
        if (x < lo || x > hi)
            return 0;
    }
    return 1;
}

int opt_may_fail(const graph *g, int32_t node)
{
    if (!g || node < 0 || node >= g->nnodes)
        return 0;
    const graph_node *n = &g->nodes[node];
    /* inferred at the traced sizes only: replay infers it again at the
     * run's sizes (replay/plan.c), where it fails */
    if (n->flags & GRAPH_NODE_SPECIALIZED)
        return 1;
    switch (n->op) {
    case GRAPH_OP_gather:
    case GRAPH_OP_gather_elements:
    case GRAPH_OP_scatter_elements: {
        const graph_type *x = &g->values[n->in[0]].type;
        const graph_attrs *at = tg_node_attrs(n);
        int64_t axis = n->op == GRAPH_OP_gather            ? at->gather.axis
                       : n->op == GRAPH_OP_gather_elements ? at->gather_elements.axis
                                                           : at->scatter_elements.axis;
        if (graph_type_numel(&g->values[n->in[1]].type) == 0)
            return 0;
        int64_t dim = x->dim[graph_axis(axis, x->ndim)];
        return dim == 0 || !const_ints_within(g, n->in[1], -dim, dim - 1);
    }
    case GRAPH_OP_div: {
        /* kernels_binary.c: an integer division by zero fails the op */
        const graph_value *b = &g->values[n->in[1]];
        if (b->type.dtype == GRAPH_F32 || graph_type_numel(&g->values[n->out[0]].type) == 0)
            return 0;
        return !const_ints_within(g, n->in[1], 1, INT64_MAX) &&
               !const_ints_within(g, n->in[1], INT64_MIN, -1);
    }
    case GRAPH_OP_adamw_step:
        /* kernels_optim.c: a step count below 1 fails the update */
        return !const_ints_within(g, n->in[4], 1, INT64_MAX);
    default:
        return 0;
    }
}
