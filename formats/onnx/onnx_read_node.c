/*
 * onnx_read_node.c - the helpers the ONNX importer's converters share
 * (onnx_read_impl.h): the name table, operands (graph values, constants
 * known at load time, int lists and scalars read from them), adding graph
 * nodes with the ONNX node's provenance, binding outputs, and typed
 * attribute access.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"
#include "../../graph/graph_impl.h"


/* ---- names ---- */

onnx_entry *onnx_find(const onnx_reader *r, const char *name)
{
    onnx_entry *e = NULL;
    if (name)
        HASH_FIND_STR(r->names, name, e);
    return e;
}

tg_status onnx_add_entry(onnx_reader *r, const char *name, onnx_entry **out)
{
    if (onnx_find(r, name))
        return onnx_fail(r, TG_ERR_FORMAT, "name '%s' is defined twice", name);
    onnx_entry *e = tg_calloc(1, sizeof *e);
    if (!e)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    e->key = name;
    e->value = -1;
    tg_hash_oom = 0;
    HASH_ADD_KEYPTR(hh, r->names, e->key, strlen(e->key), e);
    if (tg_hash_oom) {
        tg_free(e);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    *out = e;
    return TG_OK;
}

void onnx_free_entries(onnx_reader *r)
{
    onnx_entry *e, *tmp;
    HASH_ITER(hh, r->names, e, tmp) {
        HASH_DEL(r->names, e);
        tg_free(e->data);
        tg_free(e->sym);
        tg_free(e->src);
        tg_free(e);
    }
}

tg_status onnx_materialize(onnx_reader *r, onnx_entry *e)
{
    graph *g = r->g;
    int32_t v = graph_add_value(g, e->param ? GRAPH_VALUE_PARAM : GRAPH_VALUE_CONST,
                                &e->type, e->key);
    if (v < 0 || graph_set_data(g, v, e->data, graph_value_nbytes(&g->values[v])) != TG_OK)
        return onnx_fail(r, TG_ERR_NOMEM, "'%s': %s", e->key, graph_error(g));
    e->value = v;
    return TG_OK;
}

/* ---- operands ---- */

int onnx_has_input(const onnx_reader *r, int i)
{
    return i >= 0 && (size_t)i < r->node->n_input && r->node->input[i] &&
           r->node->input[i][0];
}

/* The entry of input i, which must be present and defined. */
static tg_status input_entry(onnx_reader *r, int i, onnx_entry **e)
{
    if (!onnx_has_input(r, i))
        return onnx_fail(r, TG_ERR_FORMAT, "input %d is missing", i);
    *e = onnx_find(r, r->node->input[i]);
    if (!*e)
        return onnx_fail(r, TG_ERR_FORMAT,
                         "input %d ('%s') is not defined by a graph input, an "
                         "initializer or an earlier node", i, r->node->input[i]);
    return TG_OK;
}

int onnx_entry_traced(const onnx_entry *e)
{
    if (!e->is_const)
        return 0;
    if (e->traced_shape)
        return 1;
    if (!e->sym)
        return 0;
    int64_t n = graph_type_numel(&e->type);
    for (int64_t k = 0; k < n; k++)
        if (e->sym[k] != ONNX_SYM_CONST)
            return 1;
    return 0;
}

tg_status onnx_input(onnx_reader *r, int i, int32_t *v)
{
    onnx_entry *e;
    tg_status st = input_entry(r, i, &e);
    if (st == TG_OK && onnx_entry_traced(e))
        r->specialized = 1; /* enters the graph at its traced value */
    if (st == TG_OK && e->value < 0)
        st = onnx_materialize(r, e);
    if (st == TG_OK)
        *v = e->value;
    return st;
}

tg_status onnx_input_type(onnx_reader *r, int i, const graph_type **t)
{
    onnx_entry *e;
    tg_status st = input_entry(r, i, &e);
    if (st == TG_OK)
        *t = e->is_const ? &e->type : onnx_vtype(r, e->value);
    return st;
}

tg_status onnx_older_types(onnx_reader *r, int i, int64_t since, int no_bool_only)
{
    const graph_type *t;
    tg_status st = onnx_input_type(r, i, &t);
    if (st != TG_OK || r->opset >= since)
        return st;
    if (no_bool_only ? t->dtype != GRAPH_BOOL : t->dtype == GRAPH_F32)
        return TG_OK;
    const char *op = r->node->op_type;
    /* the version in force (Max, Min, Sum, Mean: 6, 8, 12 or 13) */
    int64_t v = !strcmp(op, "Pad") ? (r->opset < 11 ? 2 : 11)
              : !strcmp(op, "Flatten") ? 1
              : r->opset < 8 ? 6 : r->opset < 12 ? 8 : r->opset < 13 ? 12 : 13;
    char later[48] = "";
    if (since < INT64_MAX)
        snprintf(later, sizeof later, " (%s from %s-%lld)", no_bool_only ? "bool" : "others",
                 op, LL(since));
    return onnx_fail(r, TG_ERR_FORMAT, "input %d is %s: %s-%lld takes %s only%s", i,
                     graph_dtype_name(t->dtype), op, LL(v), no_bool_only ? "numbers" : "floats",
                     later);
}

tg_status onnx_refuse_empty_extreme(onnx_reader *r, int32_t x, const graph_ints *axes,
                                    int64_t axis)
{
    const graph_type *t = onnx_vtype(r, x);
    for (int d = 0; d < t->ndim; d++) {
        int on = 0;
        /* d - ndim, not axis + ndim: the axes are not validated yet here
         * (INT64_MAX + 2 overflowed; fuzz_onnx) */
        if (!axes)
            on = axis == d || axis == d - t->ndim;
        for (int k = 0; axes && k < axes->n; k++)
            on |= axes->v[k] == d || axes->v[k] == d - t->ndim;
        if (axes && axes->n == 0)
            on = 1;
        if (on && t->dim[d] == 0)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "axis %d has size 0: %s over no element "
                             "is not supported (ONNX Runtime's answer has the wrong shape)", d,
                             r->node->op_type);
    }
    return TG_OK;
}

tg_status onnx_const_input(onnx_reader *r, int i, const char *what,
                           const onnx_entry **out)
{
    onnx_entry *e;
    tg_status st = input_entry(r, i, &e);
    if (st != TG_OK)
        return st;
    if (!e->is_const) {
        const graph_value *v = &r->g->values[e->value];
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "input %d (%s) must be a constant known at load time, "
                         "but '%s' is %s", i, what, e->key,
                         v->kind == GRAPH_VALUE_INPUT ? "a graph input"
                                                      : "computed at run time");
    }
    if (onnx_entry_traced(e))
        r->specialized = 1;
    *out = e;
    return TG_OK;
}

/* Element k of a constant as a double. */
static double const_at(const onnx_entry *e, int64_t k)
{
    switch (e->type.dtype) {
    case GRAPH_F32: return ((const float *)e->data)[k];
    case GRAPH_I64: return (double)((const int64_t *)e->data)[k];
    case GRAPH_I32: return ((const int32_t *)e->data)[k];
    default: return ((const uint8_t *)e->data)[k];
    }
}

tg_status onnx_const_ints(onnx_reader *r, int i, const char *what,
                          graph_ints *out, int maxn)
{
    const onnx_entry *e;
    tg_status st = onnx_const_input(r, i, what, &e);
    if (st != TG_OK)
        return st;
    if (e->type.dtype != GRAPH_I64 && e->type.dtype != GRAPH_I32)
        return onnx_fail(r, TG_ERR_FORMAT, "input %d (%s) has dtype %s, want int64",
                         i, what, graph_dtype_name(e->type.dtype));
    int64_t n = graph_type_numel(&e->type);
    if (e->type.ndim > 1)
        return onnx_fail(r, TG_ERR_FORMAT, "input %d (%s) has %d dims, want 1", i,
                         what, (int)e->type.ndim);
    if (n > maxn)
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "input %d (%s) has %lld entries (at most %d)", i, what,
                         LL(n), maxn);
    memset(out, 0, sizeof *out);
    out->n = (int32_t)n;
    for (int64_t k = 0; k < n; k++)
        out->v[k] = e->type.dtype == GRAPH_I64 ? ((const int64_t *)e->data)[k]
                                               : ((const int32_t *)e->data)[k];
    return TG_OK;
}

tg_status onnx_shape_ints(onnx_reader *r, int i, const char *what,
                          graph_ints *out, int8_t *sym, int maxn)
{
    int specialized = r->specialized;
    tg_status st = onnx_const_ints(r, i, what, out, maxn);
    r->specialized = specialized; /* the caller decides */
    if (st != TG_OK)
        return st;
    const onnx_entry *e = onnx_find(r, r->node->input[i]);
    for (int k = 0; k < out->n; k++)
        sym[k] = e->sym ? e->sym[k] : ONNX_SYM_CONST;
    return TG_OK;
}

tg_status onnx_const_scalar(onnx_reader *r, int i, const char *what,
                            double *out)
{
    const onnx_entry *e;
    tg_status st = onnx_const_input(r, i, what, &e);
    if (st != TG_OK)
        return st;
    if (graph_type_numel(&e->type) != 1)
        return onnx_fail(r, TG_ERR_FORMAT, "input %d (%s) has %lld elements, want 1",
                         i, what, LL(graph_type_numel(&e->type)));
    *out = const_at(e, 0);
    return TG_OK;
}

uint32_t onnx_dynamic_dims(onnx_reader *r, int32_t v)
{
    if (r->g->nsyms == 0)
        return 0;
    /* Marks of intermediates are set by propagation, not as nodes are
     * added; run it now (on a graph still being built: cheap enough for
     * the few nodes that ask, Shape and size-dependent attributes). */
    if (graph_propagate_dynamic(r->g) != TG_OK)
        return ~0u; /* cannot tell: treat every dim as dynamic */
    return r->g->values[v].dyn | r->g->values[v].dder;
}

int8_t onnx_dim_mark(const onnx_reader *r, int32_t v, uint32_t dyn, int d)
{
    const graph_value *x = &r->g->values[v];
    if (!(dyn >> d & 1))
        return ONNX_SYM_CONST;
    return x->dyn >> d & 1 ? x->sym[d] : ONNX_SYM_DERIVED;
}

/* ---- adding nodes, binding outputs ---- */

/* Every output of a new node has a byte size that fits in int64. */
static tg_status check_sizes(onnx_reader *r, int32_t node)
{
    const graph_node *n = &r->g->nodes[node];
    for (int k = 0; k < n->nout; k++) {
        const graph_type *t = onnx_vtype(r, n->out[k]);
        int64_t b = (int64_t)graph_dtype_size(t->dtype);
        for (int d = 0; d < t->ndim; d++)
            if (__builtin_mul_overflow(b, t->dim[d], &b))
                return onnx_fail(r, TG_ERR_FORMAT, "%s: output %d is too large",
                                 graph_ops[n->op].name, k);
    }
    return TG_OK;
}

tg_status onnx_add(onnx_reader *r, graph_op op, const int32_t *in, int nin,
                   const void *attrs, int32_t *out, int max_out)
{
    graph *g = r->g;
    int32_t id = graph_add_node(g, op, in, nin, attrs, out, max_out);
    if (id < 0) {
        tg_status st = g->err[0] && strstr(g->err, "out of memory") ? TG_ERR_NOMEM
                                                                  : TG_ERR_FORMAT;
        /* A dtype the op lacks (int MatMul, double anything) is a limit of
         * tracegraph's ops, not a fault of the model. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", graph_error(g));
        if (strstr(msg, "dtype"))
            st = TG_ERR_UNSUPPORTED;
        return onnx_fail(r, st, "%s", msg);
    }
    if (graph_node_add_prov(g, id, r->prov) != TG_OK)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    if (r->specialized)
        g->nodes[id].flags |= GRAPH_NODE_SPECIALIZED;
    return check_sizes(r, id);
}

/* Marks output k bound; FORMAT if the node names it twice. */
static tg_status bind_entry(onnx_reader *r, int k, onnx_entry **e)
{
    *e = NULL;
    if (k < 0 || (size_t)k >= r->node->n_output || !r->node->output[k] ||
        !r->node->output[k][0])
        return TG_OK; /* an optional output nobody names */
    tg_status st = onnx_add_entry(r, r->node->output[k], e);
    if (st == TG_OK)
        r->bound |= (uint64_t)1 << k;
    return st;
}

tg_status onnx_bind(onnx_reader *r, int k, int32_t v)
{
    onnx_entry *e;
    tg_status st = bind_entry(r, k, &e);
    if (st != TG_OK || !e)
        return st;
    e->value = v;
    graph_value *gv = &r->g->values[v];
    if (gv->kind == GRAPH_VALUE_INTER && !gv->name) {
        gv->name = graph_intern(r->g, e->key, -1);
        if (!gv->name)
            return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    return TG_OK;
}

tg_status onnx_bind_const(onnx_reader *r, int k, const graph_type *t,
                          void *data)
{
    return onnx_bind_const_sym(r, k, t, data, NULL);
}

tg_status onnx_bind_const_sym(onnx_reader *r, int k, const graph_type *t,
                              void *data, int8_t *sym)
{
    return onnx_bind_const_src(r, k, t, data, sym, NULL);
}

/*
 * Counts a constant of type t that the importer is about to bind or add
 * against r->made_limit: a ConstantOfShape of 64 MiB costs a file a few
 * bytes, and two hundred of them must not take 12 GiB.
 */
static tg_status onnx_made(onnx_reader *r, const graph_type *t)
{
    int64_t bytes = graph_type_numel(t) * (int64_t)graph_dtype_size(t->dtype);
    r->made += bytes;
    if (r->made <= r->made_limit)
        return TG_OK;
    return onnx_fail(r, TG_ERR_UNSUPPORTED, "the constants made at load time would take "
                     "%lld MiB in all (this one %lld bytes), past the %lld MiB a file of its "
                     "size may make", LL(r->made >> 20), LL(bytes), LL(r->made_limit >> 20));
}

tg_status onnx_bind_const_src(onnx_reader *r, int k, const graph_type *t,
                              void *data, int8_t *sym, int32_t *src)
{
    onnx_entry *e = NULL;
    tg_status st = onnx_made(r, t);
    if (st == TG_OK)
        st = bind_entry(r, k, &e);
    if (st != TG_OK || !e) {
        tg_free(data);
        tg_free(sym);
        tg_free(src);
        return st;
    }
    e->is_const = 1;
    e->type = *t;
    e->data = data;
    e->sym = sym;
    e->src = NULL;
    e->traced_shape = 0;
    if (sym && !onnx_entry_traced(e)) {
        tg_free(sym);
        e->sym = NULL;
    }
    int64_t n = graph_type_numel(t), any = 0;
    for (int64_t i = 0; e->sym && src && i < n; i++)
        any |= src[i] >= 0;
    if (any)
        e->src = src;
    else
        tg_free(src);
    return TG_OK;
}

tg_status onnx_bind_copy(onnx_reader *r, int k, const onnx_entry *e)
{
    size_t n = (size_t)graph_type_numel(&e->type);
    size_t bytes = graph_dtype_size(e->type.dtype) * n;
    void *data = tg_malloc(bytes ? bytes : 1); /* e exists: the sizes fit */
    int8_t *sym = e->sym ? tg_malloc(n ? n : 1) : NULL;
    int32_t *src = e->src ? tg_malloc(n ? n * sizeof *src : 1) : NULL;
    if (!data || (e->sym && !sym) || (e->src && !src)) {
        tg_free(data);
        tg_free(sym);
        tg_free(src);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    memcpy(data, e->data, bytes);
    if (sym)
        memcpy(sym, e->sym, n);
    if (src)
        memcpy(src, e->src, n * sizeof *src);
    return onnx_bind_const_src(r, k, &e->type, data, sym, src);
}

tg_status onnx_const_value(onnx_reader *r, const graph_type *t, const void *data, int32_t *v)
{
    *v = -1;
    tg_status st = onnx_made(r, t);
    if (st != TG_OK)
        return st;
    /* before adding: t may be a value's type, which adding moves */
    size_t bytes = (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
    *v = graph_add_value(r->g, GRAPH_VALUE_CONST, t, NULL);
    if (*v < 0 || graph_set_data(r->g, *v, data, bytes) != TG_OK)
        return onnx_fail(r, TG_ERR_NOMEM, "%s", graph_error(r->g));
    return TG_OK;
}

tg_status onnx_op2(onnx_reader *r, graph_op op, int32_t a, int32_t b, const void *attrs,
                   int32_t *y)
{
    int32_t in[2] = {a, b};
    return onnx_add(r, op, in, b < 0 ? 1 : 2, attrs, y, 1);
}

tg_status onnx_op_k(onnx_reader *r, graph_op op, int32_t a, double v, int32_t *y)
{
    int32_t k;
    tg_status st = onnx_scalar(r, onnx_vtype(r, a)->dtype, v, &k);
    return st == TG_OK ? onnx_op2(r, op, a, k, NULL, y) : st;
}

tg_status onnx_scalar(onnx_reader *r, graph_dtype dt, double x, int32_t *v)
{
    graph_type t = {dt, 0, {0}};
    union {
        float f;
        int64_t l;
        int32_t i;
        uint8_t b;
    } u;
    memset(&u, 0, sizeof u);
    /* a float attribute (alpha, a clamp) on an integer tensor: its cast is
     * defined only for a number within the type's range */
    double lim = dt == GRAPH_I64 ? 0x1p63 : 0x1p31;
    if ((dt == GRAPH_I64 || dt == GRAPH_I32) && !(x >= -lim && x < lim))
        return onnx_fail(r, TG_ERR_FORMAT, "the constant %g is not a number within the "
                         "range of %s", x, graph_dtype_name(dt));
    if (dt == GRAPH_F32)
        u.f = (float)x;
    else if (dt == GRAPH_I64)
        u.l = (int64_t)x;
    else if (dt == GRAPH_I32)
        u.i = (int32_t)x;
    else
        u.b = x != 0;
    return onnx_const_value(r, &t, &u, v);
}

/* ---- attributes ---- */

const Onnx__AttributeProto *onnx_attr(const onnx_reader *r, const char *name)
{
    for (size_t i = 0; i < r->node->n_attribute; i++)
        if (!strcmp(r->node->attribute[i]->name, name))
            return r->node->attribute[i];
    return NULL;
}

/* The attribute, checked to be of type want (NULL if absent). */
static tg_status attr_typed(onnx_reader *r, const char *name,
                            Onnx__AttributeProto__AttributeType want,
                            const char *wname, const Onnx__AttributeProto **a)
{
    *a = onnx_attr(r, name);
    if (*a && (*a)->type != want)
        return onnx_fail(r, TG_ERR_FORMAT, "attribute '%s' is not of type %s", name,
                         wname);
    return TG_OK;
}

tg_status onnx_attr_int(onnx_reader *r, const char *name, int64_t def,
                        int64_t *out)
{
    const Onnx__AttributeProto *a;
    tg_status st = attr_typed(r, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT,
                              "INT", &a);
    *out = a ? a->i : def;
    return st;
}

tg_status onnx_attr_float(onnx_reader *r, const char *name, float def,
                          float *out)
{
    const Onnx__AttributeProto *a;
    tg_status st = attr_typed(r, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT,
                              "FLOAT", &a);
    *out = a ? a->f : def;
    return st;
}

tg_status onnx_attr_ints(onnx_reader *r, const char *name, graph_ints *out,
                         int maxn, int *present)
{
    const Onnx__AttributeProto *a;
    memset(out, 0, sizeof *out);
    tg_status st = attr_typed(r, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS,
                              "INTS", &a);
    if (present)
        *present = a != NULL;
    if (st != TG_OK || !a)
        return st;
    if (a->n_ints > (size_t)maxn)
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "attribute '%s' has %zu entries (at most %d)", name,
                         a->n_ints, maxn);
    out->n = (int32_t)a->n_ints;
    for (size_t i = 0; i < a->n_ints; i++)
        out->v[i] = a->ints[i];
    return TG_OK;
}

tg_status onnx_attr_str(onnx_reader *r, const char *name, const char *def,
                        char *buf, size_t len)
{
    const Onnx__AttributeProto *a;
    tg_status st = attr_typed(r, name,
                              ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING,
                              "STRING", &a);
    if (st != TG_OK)
        return st;
    if (!a) {
        snprintf(buf, len, "%s", def);
        return TG_OK;
    }
    /* an empty string may come with no data at all (protobuf-c leaves it NULL) */
    if (a->s.len >= len || (a->s.len && memchr(a->s.data, 0, a->s.len)))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "attribute '%s' has an unknown value",
                         name);
    if (a->s.len)
        memcpy(buf, a->s.data, a->s.len);
    buf[a->s.len] = 0;
    return TG_OK;
}
