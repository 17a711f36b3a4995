/*
 * onnx_write.c - ONNX export (formats/onnx.h): the model around the nodes.
 *
 * The ModelProto is built as protobuf-c structs whose every byte (names,
 * arrays, attributes, small initializers) comes from one arena, freed in
 * one go whatever happened; only the node and initializer lists grow by
 * realloc.  Large initializers borrow the values' data (little-endian
 * hosts), so export holds no second copy of the weights.  This file holds
 * the helpers every writer file calls (the arena, names, nodes,
 * attributes, initializers, messages); the model around the nodes is
 * onnx_write_model.c's, the per-op translation onnx_write_ops.c's, and
 * neither is called from here (docs/ARCHITECTURE.md, "Leaves").
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
void *onnxw_malloc(size_t n)
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
#define uthash_malloc(sz) onnxw_malloc(sz)

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

void onnxw_errf(onnx_w *w, const char *fmt, ...)
{
    if (!w->err || !w->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errlen, fmt, ap);
    va_end(ap);
}

const char *onnxw_gname(const graph *g)
{
    return g->name ? g->name : "?";
}

void *onnxw_nomem(onnx_w *w)
{
    if (w->st == TG_OK) {
        w->st = TG_ERR_NOMEM;
        onnxw_errf(w, "graph '%s': out of memory exporting to ONNX", onnxw_gname(w->g));
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
    onnxw_errf(w, "graph '%s': node %d (%s at %s): %s", onnxw_gname(w->g), (int)w->cur_id,
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
        c = onnxw_malloc(sizeof *c + size);
        if (!c)
            return onnxw_nomem(w);
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
            onnxw_nomem(w);
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
const char *onnxw_take(onnx_w *w, const char *base)
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
        return onnxw_nomem(w);
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
    return onnxw_take(w, base);
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
                onnxw_errf(w, "graph '%s': node %d: a tensor has no name", onnxw_gname(w->g),
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
        onnxw_errf(w, "graph '%s': node %s has more than %d attributes", onnxw_gname(w->g),
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
tg_status onnxw_value_init(onnx_w *w, int32_t id)
{
    const graph_value *v = &w->g->values[id];
    if (!v->data) {
        char shape[160];
        onnxw_errf(w, "graph '%s': %s '%s' %s%s has no data (elided): ONNX needs it",
             onnxw_gname(w->g), graph_value_kind_name(v->kind), w->vname[id],
             graph_dtype_name(v->type.dtype), graph_shape_str(&v->type, shape, sizeof shape));
        return w->st = TG_ERR_UNSUPPORTED;
    }
    Onnx__TensorProto *t = tensor_new(w, w->vname[id], v->type.dtype, v->type.dim,
                                      v->type.ndim, v->data, graph_type_numel(&v->type), 1);
    push(w, (void ***)&w->inits, &w->ninits, &w->cap_inits, t);
    return w->st;
}

void onnxw_free(onnx_w *w)
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
