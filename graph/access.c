/* access.c - reading a graph through functions (graph.h, "Reading a graph"). */
#include "graph.h"
#include "graph_impl.h"

#include <string.h>

#include "alloc.h"

const char *graph_name(const graph *g) { return g ? g->name : NULL; }
int32_t graph_value_count(const graph *g) { return g ? g->nvalues : 0; }
int32_t graph_node_count(const graph *g) { return g ? g->nnodes : 0; }
int32_t graph_input_count(const graph *g) { return g ? g->ninputs : 0; }
int32_t graph_output_count(const graph *g) { return g ? g->noutputs : 0; }
int32_t graph_symbol_count(const graph *g) { return g ? g->nsyms : 0; }
int32_t graph_guard_count(const graph *g) { return g ? g->nguards : 0; }

static const graph_node *node_at(const graph *g, int32_t i)
{
    return g && i >= 0 && i < g->nnodes ? &g->nodes[i] : NULL;
}

static const graph_value *value_at(const graph *g, int32_t v)
{
    return g && v >= 0 && v < g->nvalues ? &g->values[v] : NULL;
}

int graph_node_op(const graph *g, int32_t i)
{
    const graph_node *n = node_at(g, i);
    return n ? (int)n->op : -1;
}

uint32_t graph_node_flags(const graph *g, int32_t i)
{
    const graph_node *n = node_at(g, i);
    return n ? n->flags : 0;
}

const int32_t *graph_node_inputs(const graph *g, int32_t i, int *count)
{
    const graph_node *n = node_at(g, i);
    if (count)
        *count = n ? n->nin : 0;
    return n ? n->in : NULL;
}

const int32_t *graph_node_outputs(const graph *g, int32_t i, int *count)
{
    const graph_node *n = node_at(g, i);
    if (count)
        *count = n ? n->nout : 0;
    return n ? n->out : NULL;
}

const void *graph_node_attrs(const graph *g, int32_t i)
{
    const graph_node *n = node_at(g, i);
    return n ? tg_node_attrs(n) : NULL;
}

const char *graph_node_site(const graph *g, int32_t i, char *buf, size_t len)
{
    const graph_node *n = node_at(g, i);
    if (!buf || !len)
        return buf;
    return graph_prov_str(g, n && n->nprov > 0 ? n->prov[0] : -1, buf, len);
}

const graph_type *graph_value_type(const graph *g, int32_t v)
{
    const graph_value *p = value_at(g, v);
    return p ? &p->type : NULL;
}

int graph_value_kind_of(const graph *g, int32_t v)
{
    const graph_value *p = value_at(g, v);
    return p ? (int)p->kind : -1;
}

const char *graph_value_name(const graph *g, int32_t v)
{
    const graph_value *p = value_at(g, v);
    return p ? p->name : NULL;
}

const void *graph_value_data(const graph *g, int32_t v)
{
    const graph_value *p = value_at(g, v);
    return p ? p->data : NULL;
}

int32_t graph_value_producer(const graph *g, int32_t v, int *out_index)
{
    const graph_value *p = value_at(g, v);
    int inter = p && p->kind == GRAPH_VALUE_INTER && p->node >= 0;
    if (out_index)
        *out_index = inter ? p->out_index : -1;
    return inter ? p->node : -1;
}

int graph_value_dim_symbol(const graph *g, int32_t v, int d)
{
    const graph_value *p = value_at(g, v);
    if (!p || d < 0 || d >= p->type.ndim || d >= GRAPH_MAX_DIMS || !(p->dyn >> d & 1))
        return -1;
    return p->sym[d];
}

int32_t graph_input_at(const graph *g, int32_t k)
{
    return g && k >= 0 && k < g->ninputs ? g->inputs[k] : -1;
}

int32_t graph_output_at(const graph *g, int32_t k, const char **name)
{
    int ok = g && k >= 0 && k < g->noutputs;
    if (name)
        *name = ok ? g->outputs[k].name : NULL;
    return ok ? g->outputs[k].value : -1;
}

const char *graph_symbol_at(const graph *g, int32_t s, int64_t *traced)
{
    int ok = g && s >= 0 && s < g->nsyms;
    if (traced)
        *traced = ok ? g->syms[s].traced : -1;
    return ok ? g->syms[s].name : NULL;
}

const graph_guard *graph_guard_at(const graph *g, int32_t k)
{
    return g && k >= 0 && k < g->nguards ? &g->guards[k] : NULL;
}

const char *graph_layout_target(const graph *g)
{
    return g ? g->target : NULL;
}

/* *s through fn (see graph_map_strings); -1 out of memory. */
static int map_one(graph *g, const char **s,
                   int (*fn)(void *ctx, const char *s, char *buf, size_t len), void *ctx)
{
    if (!*s)
        return 0;
    size_t len = strlen(*s) * 4 + 8;
    char *buf = tg_malloc(len);
    if (!buf)
        return -1;
    int rc = 0;
    if (fn(ctx, *s, buf, len)) {
        buf[len - 1] = '\0';
        const char *e = graph_intern(g, buf, -1);
        if (e)
            *s = e;
        else
            rc = -1;
    }
    tg_free(buf);
    return rc;
}

tg_status graph_map_strings(graph *g,
                            int (*fn)(void *ctx, const char *s, char *buf, size_t len),
                            void *ctx)
{
    if (!g)
        return TG_ERR_NULL;
    if (!fn)
        return graph_fail(g, TG_ERR_NULL, "graph_map_strings: no function");
    int bad = map_one(g, &g->name, fn, ctx);
    for (int32_t i = 0; i < g->nvalues; i++)
        bad |= map_one(g, &g->values[i].name, fn, ctx);
    for (int32_t i = 0; i < g->noutputs; i++)
        bad |= map_one(g, &g->outputs[i].name, fn, ctx);
    for (int32_t i = 0; i < g->nsyms; i++)
        bad |= map_one(g, &g->syms[i].name, fn, ctx);
    for (int32_t i = 0; i < g->nprovs; i++)
        bad |= map_one(g, &g->provs[i].file, fn, ctx) | map_one(g, &g->provs[i].func, fn, ctx);
    for (int32_t i = 0; i < g->nframes; i++)
        bad |= map_one(g, &g->frames[i].file, fn, ctx) |
               map_one(g, &g->frames[i].func, fn, ctx);
    return bad ? graph_fail(g, TG_ERR_NOMEM, "graph_map_strings: out of memory") : TG_OK;
}
