/*
 * onnx_write.c - ONNX export (formats/onnx.h): the model around the nodes.
 *
 * The ModelProto is built as protobuf-c structs whose every byte (names,
 * arrays, attributes, small initializers) comes from one arena, freed in
 * one go whatever happened; only the node and initializer lists grow by
 * realloc.  Large initializers borrow the values' data (little-endian
 * hosts), so export holds no second copy of the weights.  The per-op
 * translation is onnx_write_ops.c.
 *
 * Tensor names are unique: graph inputs keep their names first, then the
 * graph's output names, then the names of params, constants and
 * intermediates; unnamed values get "v<id>" and temporaries
 * "<op>_<node>_<what>", each made unique with a "_<n>" suffix, so a
 * user's "v3" never meets a generated one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/tg_hash.h"
#include "../file.h"
#include "onnx_write_impl.h"
#include "../../graph/graph_impl.h"

_Thread_local long onnxw_fail_countdown;

/* Every allocation of export goes through here (uthash's too, below). */
static void *w_malloc(size_t n)
{
    if (onnxw_fail_countdown > 0 && --onnxw_fail_countdown == 0)
        return NULL;
    return tg_malloc(n);
}

static void *w_realloc(void *p, size_t n)
{
    if (onnxw_fail_countdown > 0 && --onnxw_fail_countdown == 0)
        return NULL;
    return tg_realloc(p, n);
}

#undef uthash_malloc
#define uthash_malloc(sz) w_malloc(sz)

#define CHUNK_SIZE ((size_t)64 << 10)
#define MAX_ATTRS 8

struct onnxw_chunk {
    onnxw_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char mem[];
};

struct onnxw_name {
    const char *key;
    UT_hash_handle hh;
};

/* ---- errors ---- */

static void errf(onnx_w *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void errf(onnx_w *w, const char *fmt, ...)
{
    if (!w->err || !w->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errlen, fmt, ap);
    va_end(ap);
}

static const char *gname(const graph *g)
{
    return g->name ? g->name : "?";
}

static void *nomem(onnx_w *w)
{
    if (w->st == TG_OK) {
        w->st = TG_ERR_NOMEM;
        errf(w, "graph '%s': out of memory exporting to ONNX", gname(w->g));
    }
    return NULL;
}

tg_status onnxw_unsupported(onnx_w *w, const char *why)
{
    if (w->st != TG_OK)
        return w->st;
    char site[256] = "no call site";
    if (w->cur && w->cur->nprov > 0)
        graph_prov_str(w->g, w->cur->prov[0], site, sizeof site);
    errf(w, "graph '%s': node %d (%s at %s): %s", gname(w->g), (int)w->cur_id,
         w->cur ? graph_ops[w->cur->op].name : "?", site, why);
    w->st = TG_ERR_UNSUPPORTED;
    return w->st;
}

/* ---- arena ---- */

void *onnxw_alloc(onnx_w *w, size_t n)
{
    if (w->st != TG_OK)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    onnxw_chunk *c = w->arena;
    /* Under the test hook, small chunks: most helpers then allocate, so
     * a failure lands in the middle of every kind of node. */
    size_t chunk = onnxw_fail_countdown > 0 ? 256 : CHUNK_SIZE;
    if (!c || c->size - c->used < n) {
        size_t size = n > chunk ? n : chunk;
        c = w_malloc(sizeof *c + size);
        if (!c)
            return nomem(w);
        c->size = size;
        c->used = 0;
        /* A large block goes behind the current chunk, so the current
         * chunk's free space is still used by later small requests. */
        if (n > chunk && w->arena) {
            c->next = w->arena->next;
            w->arena->next = c;
        } else {
            c->next = w->arena;
            w->arena = c;
        }
    }
    void *p = c->mem + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *onnxw_strdup(onnx_w *w, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = onnxw_alloc(w, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* A list of pointers grown by doubling; -1 (and w->st) on out of memory. */
static int push(onnx_w *w, void ***list, size_t *n, size_t *cap, void *p)
{
    if (!p)
        return -1;
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        void **q = w_realloc(*list, nc * sizeof *q);
        if (!q) {
            nomem(w);
            return -1;
        }
        *list = q;
        *cap = nc;
    }
    (*list)[(*n)++] = p;
    return 0;
}

/* ---- names ---- */

static int taken(onnx_w *w, const char *s)
{
    onnxw_name *e;
    HASH_FIND_STR(w->names, s, e);
    return e != NULL;
}

/* base if free, else base_1, base_2, ...; the name is then taken. */
static const char *take(onnx_w *w, const char *base)
{
    if (!base || w->st != TG_OK)
        return NULL;
    size_t n = strlen(base) + 24;
    char *s = onnxw_alloc(w, n);
    onnxw_name *e = onnxw_alloc(w, sizeof *e);
    if (!s || !e)
        return NULL;
    snprintf(s, n, "%s", base);
    for (long k = 1; taken(w, s); k++)
        snprintf(s, n, "%s_%ld", base, k);
    e->key = s;
    tg_hash_oom = 0;
    HASH_ADD_KEYPTR(hh, w->names, e->key, strlen(e->key), e);
    if (tg_hash_oom)
        return nomem(w);
    return s;
}

const char *onnxw_tmp(onnx_w *w, const char *what)
{
    char base[128];
    if (w->cur)
        snprintf(base, sizeof base, "%s_%d_%s", graph_ops[w->cur->op].name,
                 (int)w->cur_id, what);
    else
        snprintf(base, sizeof base, "out_%s", what);
    return take(w, base);
}

const char *onnxw_in(onnx_w *w, int k)
{
    return w->vname[w->cur->in[k]];
}

const char *onnxw_out(onnx_w *w, int k)
{
    return w->vname[w->cur->out[k]];
}

/* ---- nodes and attributes ---- */

static char **names_copy(onnx_w *w, const char *const *v, int n)
{
    char **p = onnxw_alloc(w, (size_t)(n ? n : 1) * sizeof *p);
    for (int i = 0; p && i < n; i++) {
        if (!v[i]) { /* an earlier helper failed and set w->st, or a bug */
            if (w->st == TG_OK) {
                w->st = TG_ERR_STATE;
                errf(w, "graph '%s': node %d: a tensor has no name", gname(w->g),
                     (int)w->cur_id);
            }
            return NULL;
        }
        p[i] = (char *)v[i];
    }
    return p;
}

Onnx__NodeProto *onnxw_node(onnx_w *w, const char *op_type, const char *const *in,
                            int nin, const char *const *out, int nout)
{
    if (w->st != TG_OK)
        return NULL;
    Onnx__NodeProto *n = onnxw_alloc(w, sizeof *n);
    Onnx__AttributeProto **attrs = onnxw_alloc(w, MAX_ATTRS * sizeof *attrs);
    char **pin = names_copy(w, in, nin), **pout = names_copy(w, out, nout);
    if (!n || !attrs || !pin || !pout)
        return NULL;
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    n->op_type = (char *)op_type;
    n->n_input = (size_t)nin;
    n->input = pin;
    n->n_output = (size_t)nout;
    n->output = pout;
    n->attribute = attrs;
    char name[96];
    const char *base = w->cur ? graph_ops[w->cur->op].name : "output";
    if (w->nsub == 0)
        snprintf(name, sizeof name, "%s_%d", base, (int)w->cur_id);
    else
        snprintf(name, sizeof name, "%s_%d_%d", base, (int)w->cur_id, w->nsub);
    w->nsub++;
    n->name = onnxw_strdup(w, name);
    n->doc_string = (char *)w->doc;
    if (!n->name || push(w, (void ***)&w->nodes, &w->nnodes, &w->cap_nodes, n) < 0)
        return NULL;
    return n;
}

Onnx__NodeProto *onnxw_node1(onnx_w *w, const char *op_type, const char *x,
                             const char *y)
{
    return onnxw_node(w, op_type, &x, 1, &y, 1);
}

Onnx__NodeProto *onnxw_node2(onnx_w *w, const char *op_type, const char *a,
                             const char *b, const char *y)
{
    const char *in[2] = {a, b};
    return onnxw_node(w, op_type, in, 2, &y, 1);
}

static Onnx__AttributeProto *attr_new(onnx_w *w, Onnx__NodeProto *n,
                                      const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    if (!n || w->st != TG_OK)
        return NULL;
    if (n->n_attribute >= MAX_ATTRS) { /* a broken invariant of this file */
        w->st = TG_ERR_STATE;
        errf(w, "graph '%s': node %s has more than %d attributes", gname(w->g),
             n->name, MAX_ATTRS);
        return NULL;
    }
    Onnx__AttributeProto *a = onnxw_alloc(w, sizeof *a);
    if (!a)
        return NULL;
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

void onnxw_attr_i(onnx_w *w, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr_new(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) {
        a->has_i = 1;
        a->i = v;
    }
}

void onnxw_attr_f(onnx_w *w, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr_new(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) {
        a->has_f = 1;
        a->f = v;
    }
}

void onnxw_attr_s(onnx_w *w, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr_new(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *p = a ? onnxw_strdup(w, v) : NULL;
    if (p) {
        a->has_s = 1;
        a->s.len = strlen(p);
        a->s.data = (uint8_t *)p;
    }
}

void onnxw_attr_ints(onnx_w *w, Onnx__NodeProto *n, const char *name,
                     const int64_t *v, int count)
{
    Onnx__AttributeProto *a = attr_new(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *p = a ? onnxw_alloc(w, (size_t)(count ? count : 1) * sizeof *p) : NULL;
    if (!p)
        return;
    if (count)
        memcpy(p, v, (size_t)count * sizeof *p);
    a->n_ints = (size_t)count;
    a->ints = p;
}

/* ---- initializers ---- */

static int host_is_le(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/*
 * A TensorProto of dtype dt, shape dims[0..nd), raw_data = data.  On a
 * little-endian host data is borrowed (it must outlive the export) when
 * borrow is set, else copied; a big-endian host stores a byte-swapped
 * copy, since raw_data is little-endian.
 */
static Onnx__TensorProto *tensor_new(onnx_w *w, const char *name, graph_dtype dt,
                                     const int64_t *dims, int nd, const void *data,
                                     int64_t numel, int borrow)
{
    Onnx__TensorProto *t = onnxw_alloc(w, sizeof *t);
    int64_t *d = onnxw_alloc(w, (size_t)(nd ? nd : 1) * sizeof *d);
    if (!t || !d || !name)
        return NULL;
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)name;
    if (nd)
        memcpy(d, dims, (size_t)nd * sizeof *d);
    t->n_dims = (size_t)nd;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = onnx_dtype_code(dt);
    size_t es = graph_dtype_size(dt), nbytes = (size_t)numel * es;
    const uint8_t *src = data;
    uint8_t *raw = (uint8_t *)src;
    if (!(borrow && host_is_le())) {
        raw = onnxw_alloc(w, nbytes ? nbytes : 1);
        if (!raw)
            return NULL;
        for (size_t i = 0; i < nbytes; i += es)
            for (size_t b = 0; b < es; b++)
                raw[i + b] = src[i + (host_is_le() ? b : es - 1 - b)];
    }
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = raw;
    return t;
}

const char *onnxw_const(onnx_w *w, const char *what, graph_dtype dt,
                        const int64_t *dims, int nd, const void *data)
{
    int64_t numel = 1;
    for (int i = 0; i < nd; i++)
        numel *= dims[i];
    const char *name = onnxw_tmp(w, what);
    Onnx__TensorProto *t = tensor_new(w, name, dt, dims, nd, data, numel, 0);
    if (push(w, (void ***)&w->inits, &w->ninits, &w->cap_inits, t) < 0)
        return NULL;
    return name;
}

const char *onnxw_const_i64s(onnx_w *w, const char *what, const int64_t *v, int n)
{
    int64_t dim = n;
    return onnxw_const(w, what, GRAPH_I64, &dim, 1, v);
}

const char *onnxw_const_scalar(onnx_w *w, const char *what, graph_dtype dt, double v)
{
    union {
        float f;
        int64_t i64;
        int32_t i32;
        uint8_t b;
    } u;
    memset(&u, 0, sizeof u);
    switch (dt) {
    case GRAPH_F32: u.f = (float)v; break;
    case GRAPH_I64: u.i64 = (int64_t)v; break;
    case GRAPH_I32: u.i32 = (int32_t)v; break;
    default: u.b = v != 0; break; /* NaN is nonzero too */
    }
    return onnxw_const(w, what, dt, NULL, 0, &u);
}

/* The initializer of a param or constant; elided data is refused. */
static tg_status value_init(onnx_w *w, int32_t id)
{
    const graph_value *v = &w->g->values[id];
    if (!v->data) {
        char shape[160];
        errf(w, "graph '%s': %s '%s' %s%s has no data (elided): ONNX needs it",
             gname(w->g), graph_value_kind_name(v->kind), w->vname[id],
             graph_dtype_name(v->type.dtype), graph_shape_str(&v->type, shape, sizeof shape));
        return w->st = TG_ERR_UNSUPPORTED;
    }
    Onnx__TensorProto *t = tensor_new(w, w->vname[id], v->type.dtype, v->type.dim,
                                      v->type.ndim, v->data, graph_type_numel(&v->type), 1);
    push(w, (void ***)&w->inits, &w->ninits, &w->cap_inits, t);
    return w->st;
}

/* ---- graph inputs and outputs ---- */

/* Symbol s has a size guard (a node was specialized on it): the model
 * runs at its traced size only. */
static int sym_fixed(const graph *g, int s)
{
    for (int32_t i = 0; i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        const graph_value *v = &g->values[gd->value];
        if (gd->kind == GRAPH_GUARD_SIZE && gd->policy != GRAPH_GUARD_OFF &&
            gd->index >= 0 && gd->index < v->type.ndim && (v->dyn >> gd->index & 1) &&
            v->sym[gd->index] == s)
            return 1;
    }
    return 0;
}

/* A ValueInfoProto: dtype and dims, dynamic dims as the symbol's name
 * (the traced size where a size guard fixes the symbol). */
static Onnx__ValueInfoProto *value_info(onnx_w *w, const char *name, int32_t id)
{
    const graph_value *v = &w->g->values[id];
    int nd = v->type.ndim;
    Onnx__ValueInfoProto *vi = onnxw_alloc(w, sizeof *vi);
    Onnx__TypeProto *tp = onnxw_alloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = onnxw_alloc(w, sizeof *tt);
    Onnx__TensorShapeProto *sp = onnxw_alloc(w, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = onnxw_alloc(w, (size_t)(nd ? nd : 1) * sizeof *dims);
    if (!vi || !tp || !tt || !sp || !dims)
        return NULL;
    for (int d = 0; d < nd; d++) {
        Onnx__TensorShapeProto__Dimension *dim = onnxw_alloc(w, sizeof *dim);
        if (!dim)
            return NULL;
        *dim = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        int s = v->sym[d];
        if ((v->dyn >> d & 1) && s >= 0 && s < w->g->nsyms && !sym_fixed(w->g, s)) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = (char *)w->g->syms[s].name;
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = v->type.dim[d];
        }
        dims[d] = dim;
    }
    *sp = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    sp->n_dim = (size_t)nd;
    sp->dim = dims;
    *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    tt->has_elem_type = 1;
    tt->elem_type = onnx_dtype_code(v->type.dtype);
    tt->shape = sp;
    *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* ---- whole graph ---- */

static tg_status check_guards(onnx_w *w, const format_onnx_save_opts *opts)
{
    const graph *g = w->g;
    if (opts && opts->drop_guards)
        return TG_OK;
    for (int32_t i = 0; i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        if (gd->policy == GRAPH_GUARD_OFF || gd->kind == GRAPH_GUARD_SIZE)
            continue; /* a size guard: the dim is exported fixed (value_info) */
        char site[256];
        const graph_value *v =
            gd->value >= 0 && gd->value < g->nvalues ? &g->values[gd->value] : NULL;
        errf(w, "graph '%s': guard %d on value %s (a data read at %s) has no ONNX form: "
                "the export could take a branch the trace did not (set drop_guards to "
                "export anyway)", gname(g), (int)i, v && v->name ? v->name : "(unnamed)",
             graph_prov_str(g, gd->prov, site, sizeof site));
        return w->st = TG_ERR_UNSUPPORTED;
    }
    return TG_OK;
}

/* Marks the values export needs: node inputs/outputs, graph inputs/outputs. */
static uint8_t *used_values(onnx_w *w)
{
    const graph *g = w->g;
    uint8_t *used = onnxw_alloc(w, (size_t)g->nvalues + 1);
    if (!used)
        return NULL;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            used[n->in[k]] = 1;
        for (int k = 0; k < n->nout; k++)
            used[n->out[k]] = 1;
    }
    for (int32_t i = 0; i < g->ninputs; i++)
        used[g->inputs[i]] = 1;
    for (int32_t i = 0; i < g->noutputs; i++)
        used[g->outputs[i].value] = 1;
    return used;
}

/*
 * Names every used value and output (order in the file comment);
 * direct[k] is set when output k's value is written under the output's
 * name by its producer (else an Identity copies it).
 */
static tg_status assign_names(onnx_w *w, const uint8_t *used, const char **oname,
                              uint8_t *direct)
{
    const graph *g = w->g;
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t v = g->inputs[i];
        if (g->values[v].name && !w->vname[v])
            w->vname[v] = take(w, g->values[v].name);
    }
    for (int32_t k = 0; k < g->noutputs; k++) {
        int32_t v = g->outputs[k].value;
        oname[k] = take(w, g->outputs[k].name);
        if (g->values[v].kind == GRAPH_VALUE_INTER && !w->vname[v]) {
            w->vname[v] = oname[k];
            direct[k] = 1;
        }
    }
    for (int pass = 0; pass < 2; pass++)
        for (int32_t v = 0; v < g->nvalues; v++) {
            if (!used[v] || w->vname[v] || (pass == 0 && !g->values[v].name))
                continue;
            char gen[32];
            snprintf(gen, sizeof gen, "v%d", (int)v);
            w->vname[v] = take(w, pass == 0 ? g->values[v].name : gen);
        }
    return w->st;
}

static tg_status write_nodes(onnx_w *w)
{
    const graph *g = w->g;
    char site[256];
    for (int32_t i = 0; i < g->nnodes && w->st == TG_OK; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        w->cur = n;
        w->cur_id = i;
        w->nsub = 0;
        w->doc = NULL;
        if (n->nprov > 0)
            w->doc = onnxw_strdup(w, graph_prov_str(g, n->prov[0], site, sizeof site));
        if (w->st == TG_OK)
            onnxw_emit_node(w);
    }
    w->cur = NULL;
    return w->st;
}

/* Graph inputs, initializers, nodes, outputs. */
static Onnx__GraphProto *build_graph(onnx_w *w)
{
    const graph *g = w->g;
    uint8_t *used = used_values(w), *direct = onnxw_alloc(w, (size_t)g->noutputs + 1);
    const char **oname = onnxw_alloc(w, ((size_t)g->noutputs + 1) * sizeof *oname);
    Onnx__GraphProto *gp = onnxw_alloc(w, sizeof *gp);
    Onnx__ValueInfoProto **in = onnxw_alloc(w, ((size_t)g->ninputs + 1) * sizeof *in);
    Onnx__ValueInfoProto **out = onnxw_alloc(w, ((size_t)g->noutputs + 1) * sizeof *out);
    w->vname = onnxw_alloc(w, ((size_t)g->nvalues + 1) * sizeof *w->vname);
    if (w->st != TG_OK || assign_names(w, used, oname, direct) != TG_OK)
        return NULL;
    for (int32_t v = 0; v < g->nvalues && w->st == TG_OK; v++)
        if (used[v] && (g->values[v].kind == GRAPH_VALUE_PARAM ||
                        g->values[v].kind == GRAPH_VALUE_CONST))
            value_init(w, v);
    for (int32_t i = 0; i < g->ninputs; i++)
        in[i] = value_info(w, w->vname[g->inputs[i]], g->inputs[i]);
    if (write_nodes(w) != TG_OK)
        return NULL;
    w->doc = "graph output";
    for (int32_t k = 0; k < g->noutputs; k++) {
        int32_t v = g->outputs[k].value;
        if (!direct[k]) {
            w->cur_id = k;
            w->nsub = 0;
            onnxw_node1(w, "Identity", w->vname[v], oname[k]);
        }
        out[k] = value_info(w, oname[k], v);
    }
    if (w->st != TG_OK)
        return NULL;
    *gp = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    gp->name = (char *)(g->name ? g->name : "tracegraph");
    gp->n_node = w->nnodes;
    gp->node = w->nodes;
    gp->n_initializer = w->ninits;
    gp->initializer = w->inits;
    gp->n_input = (size_t)g->ninputs;
    gp->input = in;
    gp->n_output = (size_t)g->noutputs;
    gp->output = out;
    return gp;
}

static void w_free(onnx_w *w)
{
    HASH_CLEAR(hh, w->names);
    while (w->arena) {
        onnxw_chunk *next = w->arena->next;
        tg_free(w->arena);
        w->arena = next;
    }
    tg_free(w->nodes);
    tg_free(w->inits);
}

/*
 * The opset to write: FORMAT_ONNX_OPSET, or 18 when a scatter_elements
 * reduces by max or min, which ScatterElements has from 18 on (and which
 * no op of opset 17 computes).  Only ReduceMean and ReduceMax, whose axes
 * became an input at 18, are then written differently.
 */
static int64_t model_opset(const graph *g)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD || n->op != GRAPH_OP_scatter_elements)
            continue;
        const graph_scatter_elements_attrs *a = tg_node_attrs(n);
        if (a->reduction == GRAPH_SCATTER_MAX || a->reduction == GRAPH_SCATTER_MIN)
            return 18;
    }
    return FORMAT_ONNX_OPSET;
}

/* Builds and packs the model into a malloc'd buffer. */
static tg_status export_mem(const graph *g, const format_onnx_save_opts *opts,
                            void **buf, size_t *len, char *err, size_t errlen)
{
    onnx_w w = {.g = g, .opset = model_opset(g), .err = err, .errlen = errlen};
    if (check_guards(&w, opts) != TG_OK)
        return w.st;
    Onnx__GraphProto *gp = build_graph(&w);
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = w.opset;
    m.has_ir_version = 1;
    m.ir_version = ONNX_IR_VERSION;
    m.n_opset_import = 1;
    m.opset_import = opsets;
    m.producer_name = "tracegraph";
    m.graph = gp;
    tg_status st = w.st;
    if (st == TG_OK) {
        size_t n = onnx__model_proto__get_packed_size(&m);
        /* protobuf's parsers (ONNX Runtime's too) stop at 2 GiB. */
        if (n > (size_t)INT32_MAX) {
            errf(&w, "graph '%s': the ONNX model would take %zu bytes, more than "
                     "protobuf's 2 GiB", gname(g), n);
            st = TG_ERR_UNSUPPORTED;
        } else if (!(*buf = w_malloc(n ? n : 1))) {
            nomem(&w);
            st = w.st;
        } else {
            *len = onnx__model_proto__pack(&m, *buf);
        }
    }
    w_free(&w);
    return st;
}

tg_status format_onnx_save_mem(const graph *g, const format_onnx_save_opts *opts,
                               void **buf, size_t *len, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!g || !buf || !len) {
        if (err && errlen)
            snprintf(err, errlen, "format_onnx_save_mem: NULL argument");
        return TG_ERR_NULL;
    }
    *buf = NULL;
    *len = 0;
    return export_mem(g, opts, buf, len, err, errlen);
}

tg_status format_onnx_save(const graph *g, const char *path,
                           const format_onnx_save_opts *opts, char *err, size_t errlen)
{
    if (!path) {
        if (err && errlen)
            snprintf(err, errlen, "format_onnx_save: NULL argument");
        return TG_ERR_NULL;
    }
    void *buf;
    size_t len;
    tg_status st = format_onnx_save_mem(g, opts, &buf, &len, err, errlen);
    if (st != TG_OK)
        return st;
    st = format_write_bytes(path, buf, len, err, errlen);
    tg_free(buf);
    return st;
}
