/*
 * simplify_state.c - the rewrite state shared by the -O1 passes: the
 * forwarding map, use counts, pinned values, and new nodes whose dynamic
 * dims are named on the spot (see simplify.h).
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "simplify.h"
#include "../graph/graph_impl.h"

static tg_status nomem(opt_o1_state *s)
{
    if (s->st == TG_OK) {
        s->st = TG_ERR_NOMEM;
        opt_fail(s->ctx, s->g, -1, TG_ERR_NOMEM, "out of memory");
    }
    return s->st;
}

int opt_o1_grow(opt_o1_state *s)
{
    int32_t need = s->g->nvalues;
    if (need <= s->cap)
        return 0;
    int32_t cap = s->cap * 2 > need ? s->cap * 2 : need + 64;
    int32_t *r = tg_realloc(s->repl, sizeof *r * (size_t)cap);
    if (r)
        s->repl = r;
    int32_t *u = tg_realloc(s->nuses, sizeof *u * (size_t)cap);
    if (u)
        s->nuses = u;
    uint8_t *p = tg_realloc(s->pinned, (size_t)cap);
    if (p)
        s->pinned = p;
    if (!r || !u || !p) {
        nomem(s);
        return -1;
    }
    for (int32_t v = s->cap; v < cap; v++) {
        s->repl[v] = v;
        s->nuses[v] = 0;
        s->pinned[v] = 0;
    }
    s->cap = cap;
    return 0;
}

/* Bytes of constants that something still reads (or that are pinned). */
static int64_t const_bytes_in_use(const opt_o1_state *s)
{
    int64_t total = 0;
    for (int32_t v = 0; v < s->g->nvalues && v < s->cap; v++) {
        const graph_value *val = &s->g->values[v];
        if (val->kind == GRAPH_VALUE_CONST && (s->nuses[v] > 0 || s->pinned[v]))
            total += (int64_t)graph_value_nbytes(val);
    }
    return total;
}

tg_status opt_o1_init(opt_o1_state *s, graph *g, opt_ctx *ctx)
{
    memset(s, 0, sizeof *s);
    s->g = g;
    s->ctx = ctx;
    if (opt_o1_grow(s) != 0)
        return s->st;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD))
            for (int k = 0; k < n->nin; k++)
                s->nuses[n->in[k]]++;
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        s->pinned[g->outputs[i].value] = 1;
    for (int32_t i = 0; i < g->nguards; i++)
        s->pinned[g->guards[i].value] = 1;
    s->bytes0 = const_bytes_in_use(s);
    return TG_OK;
}

tg_status opt_o1_finish(opt_o1_state *s)
{
    graph *g = s->g;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            opt_o1_resolve_inputs(s, i);
    if (s->st == TG_OK && opt_o1_grow(s) == 0)
        s->ctx->stats->bytes += s->bytes0 - const_bytes_in_use(s);
    tg_free(s->repl);
    tg_free(s->nuses);
    tg_free(s->pinned);
    s->repl = s->nuses = NULL;
    s->pinned = NULL;
    s->cap = 0;
    return s->st;
}

int32_t opt_o1_find(opt_o1_state *s, int32_t v)
{
    if (v < 0 || v >= s->cap)
        return v;
    int32_t root = v;
    while (s->repl[root] != root)
        root = s->repl[root];
    while (s->repl[v] != root) { /* path compression */
        int32_t next = s->repl[v];
        s->repl[v] = root;
        v = next;
    }
    return root;
}

void opt_o1_resolve_inputs(opt_o1_state *s, int32_t node)
{
    graph_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->nin; k++)
        n->in[k] = opt_o1_find(s, n->in[k]);
}

void opt_o1_forward(opt_o1_state *s, int32_t from, int32_t to)
{
    from = opt_o1_find(s, from);
    to = opt_o1_find(s, to);
    if (from == to || from >= s->cap || to >= s->cap)
        return;
    s->repl[from] = to;
    s->nuses[to] += s->nuses[from];
    s->nuses[from] = 0;
}

void opt_o1_kill(opt_o1_state *s, int32_t node)
{
    graph_node *n = &s->g->nodes[node];
    if (n->flags & GRAPH_NODE_DEAD)
        return;
    n->flags |= GRAPH_NODE_DEAD;
    for (int k = 0; k < n->nin; k++) {
        int32_t v = opt_o1_find(s, n->in[k]);
        if (v < s->cap && s->nuses[v] > 0)
            s->nuses[v]--;
    }
}

void opt_o1_set_input(opt_o1_state *s, int32_t node, int k, int32_t v)
{
    graph_node *n = &s->g->nodes[node];
    int32_t old = opt_o1_find(s, n->in[k]);
    if (old < s->cap && s->nuses[old] > 0)
        s->nuses[old]--;
    v = opt_o1_find(s, v);
    n->in[k] = v;
    if (v < s->cap)
        s->nuses[v]++;
}

int opt_o1_pinned(const opt_o1_state *s, int32_t v)
{
    return v >= 0 && v < s->cap && s->pinned[v];
}

int opt_o1_node_pinned(const opt_o1_state *s, int32_t node)
{
    const graph_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->nout; k++)
        if (opt_o1_pinned(s, n->out[k]))
            return 1;
    return 0;
}

int32_t opt_o1_uses(const opt_o1_state *s, int32_t v)
{
    return v >= 0 && v < s->cap ? s->nuses[v] : 0;
}

int32_t opt_o1_producer(const opt_o1_state *s, int32_t v)
{
    const graph_value *val = &s->g->values[v];
    if (val->kind != GRAPH_VALUE_INTER || val->node < 0)
        return -1;
    return (s->g->nodes[val->node].flags & GRAPH_NODE_DEAD) ? -1 : val->node;
}

static int same_dyn(const graph_value *a, const graph_value *b)
{
    if (a->dyn != b->dyn)
        return 0;
    for (int d = 0; d < a->type.ndim; d++)
        if ((a->dyn >> d & 1) && a->sym[d] != b->sym[d])
            return 0;
    return 1;
}

int opt_o1_same_type(const opt_o1_state *s, int32_t a, int32_t b)
{
    const graph_value *va = &s->g->values[a], *vb = &s->g->values[b];
    return graph_type_eq(&va->type, &vb->type) && same_dyn(va, vb);
}

/* The probe size of symbol k: as graph/dynamic.c picks it, so the marks
 * made here are the ones the manager's propagation finds afterwards. */
static int64_t probe_size(const graph *g, int k)
{
    return g->syms[k].traced + 1009 + 101 * (int64_t)k;
}

void opt_o1_probe_type(const opt_o1_state *s, int32_t v, graph_type *t)
{
    const graph_value *val = &s->g->values[v];
    *t = val->type;
    for (int d = 0; d < t->ndim; d++)
        if (val->dyn >> d & 1)
            t->dim[d] = probe_size(s->g, val->sym[d]);
}

int opt_o1_rewire_type_ok(opt_o1_state *s, int32_t node, int k, const graph_type *t,
                          const graph_type *pt)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    graph_type in[GRAPH_MAX_NODE_IO], out[GRAPH_MAX_NODE_IO], ot;
    int nout = 0;
    for (int j = 0; j < n->nin; j++)
        in[j] = j == k ? *t : g->values[opt_o1_find(s, n->in[j])].type;
    if (graph_infer(n->op, in, n->nin, tg_node_attrs(n), out, GRAPH_MAX_NODE_IO, &nout, NULL,
                    0) != TG_OK ||
        nout != n->nout)
        return 0;
    for (int j = 0; j < nout; j++)
        if (!graph_type_eq(&out[j], &g->values[n->out[j]].type))
            return 0;
    if (g->nsyms == 0)
        return 1;
    for (int j = 0; j < n->nin; j++)
        if (j == k)
            in[j] = *pt;
        else
            opt_o1_probe_type(s, opt_o1_find(s, n->in[j]), &in[j]);
    if (graph_infer(n->op, in, n->nin, tg_node_attrs(n), out, GRAPH_MAX_NODE_IO, &nout, NULL,
                    0) != TG_OK ||
        nout != n->nout)
        return 0;
    for (int j = 0; j < nout; j++) {
        opt_o1_probe_type(s, n->out[j], &ot);
        if (!graph_type_eq(&out[j], &ot))
            return 0;
    }
    return 1;
}

int opt_o1_rewire_ok(opt_o1_state *s, int32_t node, int k, int32_t v)
{
    graph_type pt;
    opt_o1_probe_type(s, v, &pt);
    return opt_o1_rewire_type_ok(s, node, k, &s->g->values[v].type, &pt);
}

/*
 * Names the dynamic dims of out (traced type) from its probe type pout:
 * a dim that moved must move exactly like one symbol.  0 if one cannot be
 * named.
 */
static int name_dims(const graph *g, const graph_type *out, const graph_type *pout,
                     graph_value *mark)
{
    mark->dyn = 0;
    for (int d = 0; d < out->ndim; d++) {
        if (pout->dim[d] == out->dim[d])
            continue;
        int k = 0;
        while (k < g->nsyms &&
               !(g->syms[k].traced == out->dim[d] && probe_size(g, k) == pout->dim[d]))
            k++;
        if (k == g->nsyms)
            return 0;
        mark->dyn |= 1u << d;
        mark->sym[d] = (int8_t)k;
    }
    return 1;
}

/*
 * Infers a new node's types from its inputs' types it[] (pt[]: at the
 * probe sizes) and names its dynamic dims in marks[]; 0 if refused.
 */
static int infer_types(opt_o1_state *s, graph_op op, const graph_type *it, const graph_type *pt,
                       int nin, const void *attrs, int32_t expect, graph_value *marks,
                       int *nout)
{
    graph *g = s->g;
    graph_type out[GRAPH_MAX_NODE_IO], pout[GRAPH_MAX_NODE_IO];
    graph_attrs defaults;
    if (graph_ops[op].attr_size && !attrs) {
        graph_attrs_default(op, &defaults);
        attrs = &defaults;
    }
    if (graph_infer(op, it, nin, attrs, out, GRAPH_MAX_NODE_IO, nout, NULL, 0) != TG_OK)
        return 0;
    if (expect >= 0 && (*nout != 1 || !graph_type_eq(&out[0], &g->values[expect].type)))
        return 0;
    int any_dyn = 0, pn = 0;
    for (int j = 0; j < nin; j++)
        any_dyn |= !graph_type_eq(&it[j], &pt[j]);
    if (any_dyn) {
        if (graph_infer(op, pt, nin, attrs, pout, GRAPH_MAX_NODE_IO, &pn, NULL, 0) != TG_OK ||
            pn != *nout)
            return 0;
    } else {
        memcpy(pout, out, sizeof *out * (size_t)*nout);
    }
    for (int k = 0; k < *nout; k++)
        if (!name_dims(g, &out[k], &pout[k], &marks[k]))
            return 0;
    if (expect >= 0) {
        marks[0].type = out[0];
        if (!same_dyn(&marks[0], &g->values[expect]))
            return 0;
    }
    return 1;
}

int opt_o1_node_ok(opt_o1_state *s, graph_op op, const graph_type *it, const graph_type *pt,
                   int nin, const void *attrs, int32_t expect)
{
    graph_value marks[GRAPH_MAX_NODE_IO];
    int nout = 0;
    memset(marks, 0, sizeof marks);
    return infer_types(s, op, it, pt, nin, attrs, expect, marks, &nout);
}

/* infer_types for inputs given as value ids. */
static int infer_new(opt_o1_state *s, graph_op op, const int32_t *in, int nin,
                     const void *attrs, int32_t expect, graph_value *marks, int *nout)
{
    graph_type it[GRAPH_MAX_NODE_IO], pt[GRAPH_MAX_NODE_IO];
    for (int j = 0; j < nin; j++) {
        it[j] = s->g->values[in[j]].type;
        opt_o1_probe_type(s, in[j], &pt[j]);
    }
    return infer_types(s, op, it, pt, nin, attrs, expect, marks, nout);
}

int32_t opt_o1_add_node(opt_o1_state *s, graph_op op, const int32_t *in, int nin,
                        const void *attrs, int32_t expect, const int32_t *prov_from, int nprov,
                        int32_t *out)
{
    graph *g = s->g;
    graph_value marks[GRAPH_MAX_NODE_IO];
    int32_t ids[GRAPH_MAX_NODE_IO];
    int nout = 0;
    memset(marks, 0, sizeof marks);
    if (s->st != TG_OK || !infer_new(s, op, in, nin, attrs, expect, marks, &nout))
        return -1;
    int32_t node = graph_add_node(g, op, in, nin, attrs, ids, GRAPH_MAX_NODE_IO);
    if (node < 0) {
        s->st = opt_fail(s->ctx, g, -1, TG_ERR_STATE, "%s", graph_error(g));
        return -1;
    }
    if (opt_o1_grow(s) != 0)
        return -1;
    for (int k = 0; k < nout; k++) {
        g->values[ids[k]].dyn = marks[k].dyn;
        memcpy(g->values[ids[k]].sym, marks[k].sym, sizeof marks[k].sym);
        if (out)
            out[k] = ids[k];
    }
    for (int j = 0; j < nin; j++)
        s->nuses[opt_o1_find(s, in[j])]++;
    for (int p = 0; p < nprov; p++)
        if (opt_merge_prov(g, node, prov_from[p]) != TG_OK) {
            nomem(s);
            return -1;
        }
    return node;
}

int32_t opt_o1_add_const(opt_o1_state *s, const graph_type *t, const void *data)
{
    int32_t v = opt_add_const(s->g, t, data);
    if (v < 0 || opt_o1_grow(s) != 0) {
        nomem(s);
        return -1;
    }
    return v;
}

int opt_o1_is_const(const opt_o1_state *s, int32_t v)
{
    const graph_value *val = &s->g->values[v];
    return val->kind == GRAPH_VALUE_CONST && val->data != NULL;
}

int opt_o1_const_splat(const opt_o1_state *s, int32_t v, double *x)
{
    if (!opt_o1_is_const(s, v))
        return 0;
    const graph_value *val = &s->g->values[v];
    int64_t n = graph_type_numel(&val->type);
    size_t es = graph_dtype_size(val->type.dtype);
    const unsigned char *p = val->data;
    if (n < 1)
        return 0;
    for (int64_t i = 1; i < n; i++)
        if (memcmp(p, p + (size_t)i * es, es) != 0)
            return 0;
    switch (val->type.dtype) {
    case GRAPH_F32: *x = *(const float *)p; break;
    case GRAPH_I64: *x = (double)*(const int64_t *)p; break;
    case GRAPH_I32: *x = *(const int32_t *)p; break;
    default: *x = *p; break;
    }
    return 1;
}

static int put(unsigned char *buf, size_t cap, size_t *len, const void *p, size_t n)
{
    if (*len + n > cap)
        return -1;
    memcpy(buf + *len, p, n);
    *len += n;
    return 0;
}

int opt_o1_attrs_key(graph_op op, const void *attrs, unsigned char *buf, size_t cap)
{
    const graph_op_info *info = &graph_ops[op];
    size_t len = 0;
    if (!info->attr_size || !attrs)
        return 0;
    const graph_attr_desc *d = info->attr_descs();
    for (int i = 0; i < info->nattrs; i++) {
        const char *f = (const char *)attrs + d[i].offset;
        int bad = 0;
        switch (d[i].kind) {
        case GRAPH_ATTR_I64: bad = put(buf, cap, &len, f, sizeof(int64_t)); break;
        case GRAPH_ATTR_F32: bad = put(buf, cap, &len, f, sizeof(float)); break;
        case GRAPH_ATTR_DTYPE: bad = put(buf, cap, &len, f, sizeof(graph_dtype)); break;
        case GRAPH_ATTR_INTS: {
            const graph_ints *l = (const graph_ints *)(const void *)f;
            int32_t n = l->n < 0 ? 0 : l->n > GRAPH_MAX_INTS ? GRAPH_MAX_INTS : l->n;
            bad = put(buf, cap, &len, &n, sizeof n) ||
                  put(buf, cap, &len, l->v, sizeof(int64_t) * (size_t)n);
            break;
        }
        case GRAPH_ATTR_STR: {
            const graph_str *str = (const graph_str *)(const void *)f;
            size_t n = strnlen(str->s, GRAPH_MAX_STR);
            bad = put(buf, cap, &len, str->s, n) || put(buf, cap, &len, "", 1);
            break;
        }
        }
        if (bad)
            return -1;
    }
    return (int)len;
}

int opt_o1_attrs_equal(graph_op op, const void *a, const void *b)
{
    unsigned char ka[1024], kb[1024];
    int la = opt_o1_attrs_key(op, a, ka, sizeof ka),
        lb = opt_o1_attrs_key(op, b, kb, sizeof kb);
    return la >= 0 && la == lb && memcmp(ka, kb, (size_t)la) == 0;
}
