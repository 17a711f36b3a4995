/*
 * onnx_read_fold.h - what the load-time evaluator's files share
 * (onnx_read_fold.c: the table, elementwise ops, Cast, data movement,
 * Range; onnx_read_fold_eval.c: ReduceProd, Mod, ScatterND, which are
 * evaluated at load time only): a result under construction and the
 * element accessors.  Internal to formats/.
 */
#ifndef TG_FORMATS_ONNX_READ_FOLD_H
#define TG_FORMATS_ONNX_READ_FOLD_H

#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/infer_shape.h"
#include "onnx_read_impl.h"

/* A result under construction. */
typedef struct fres {
    graph_type t;
    char *data;
    int8_t *sym;
    int32_t *src; /* each element's source (onnx_entry.src), -1: none */
    int64_t n;
    size_t es;
} fres;

/* Input i of the node (present and constant: onnx_fold checked). */
static inline const onnx_entry *arg(const onnx_reader *r, int i)
{
    return onnx_find(r, r->node->input[i]);
}

static inline int8_t mark(const onnx_entry *e, int64_t k)
{
    return e->sym ? e->sym[k] : ONNX_SYM_CONST;
}

static inline int64_t get_l(const onnx_entry *e, int64_t k)
{
    switch (e->type.dtype) {
    case GRAPH_I64: return ((const int64_t *)e->data)[k];
    case GRAPH_I32: return ((const int32_t *)e->data)[k];
    case GRAPH_F32: return 0; /* not read as an integer */
    default: return ((const uint8_t *)e->data)[k];
    }
}

static inline double get_d(const onnx_entry *e, int64_t k)
{
    return e->type.dtype == GRAPH_F32 ? ((const float *)e->data)[k]
                                      : (double)get_l(e, k);
}

/* Stores an integer (I32 wraps as the kernels' int32 arithmetic does). */
static inline void put_l(fres *o, int64_t k, int64_t v)
{
    switch (o->t.dtype) {
    case GRAPH_I64: ((int64_t *)o->data)[k] = v; break;
    case GRAPH_I32: ((int32_t *)o->data)[k] = (int32_t)(uint32_t)(uint64_t)v; break;
    case GRAPH_F32: ((float *)o->data)[k] = (float)v; break;
    default: ((uint8_t *)o->data)[k] = v != 0; break;
    }
}

/* Frees a result that is not bound. */
static inline void res_free(fres *o)
{
    tg_free(o->data);
    tg_free(o->sym);
    tg_free(o->src);
    o->data = NULL;
    o->sym = NULL;
    o->src = NULL;
}

/* A result of type t; *ok 0 (nothing allocated) past the fold limit. */
static inline tg_status res_new(onnx_reader *r, fres *o, const graph_type *t, int *ok)
{
    memset(o, 0, sizeof *o);
    o->t = *t;
    o->n = 1;
    *ok = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->dim[d] < 0 || __builtin_mul_overflow(o->n, t->dim[d], &o->n) ||
            o->n > ONNX_MAX_FOLD_ELEMS)
            return TG_OK;
    o->es = graph_dtype_size(t->dtype);
    o->data = tg_malloc(o->n ? (size_t)o->n * o->es : 1);
    o->sym = tg_malloc(o->n ? (size_t)o->n : 1);
    o->src = tg_malloc(o->n ? (size_t)o->n * sizeof *o->src : 1);
    if (!o->data || !o->sym || !o->src) {
        res_free(o);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    memset(o->sym, (unsigned char)ONNX_SYM_CONST, (size_t)o->n);
    memset(o->src, 0xff, (size_t)o->n * sizeof *o->src); /* -1 */
    *ok = 1;
    return TG_OK;
}

/* Binds the result to output 0 (every element derived, with no source,
 * if `derived`: their positions follow traced values). */
static inline tg_status res_bind(onnx_reader *r, fres *o, int derived, int *done)
{
    if (derived) {
        memset(o->sym, (unsigned char)ONNX_SYM_DERIVED, (size_t)o->n);
        memset(o->src, 0xff, (size_t)o->n * sizeof *o->src);
    }
    *done = 1;
    return onnx_bind_const_src(r, 0, &o->t, o->data, o->sym, o->src);
}

/* Output element k is element src of e. */
static inline void copy_elem(fres *o, int64_t k, const onnx_entry *e, int64_t src)
{
    memcpy(o->data + k * (int64_t)o->es, (const char *)e->data + src * (int64_t)o->es,
           o->es);
    o->sym[k] = mark(e, src);
    o->src[k] = e->src ? e->src[src] : -1;
}

/* The one output type of op on in (0: the op refuses them; the
 * converter will then say why). */
static inline int infer1(graph_op op, const graph_type *in, int nin, const void *attrs,
                  graph_type *out)
{
    graph_type outs[GRAPH_MAX_NODE_IO];
    int nout = 0;
    if (graph_infer(op, in, nin, attrs, outs, GRAPH_MAX_NODE_IO, &nout, NULL, 0) !=
            TG_OK || nout != 1)
        return 0;
    *out = outs[0];
    return 1;
}

/* Row-major strides of t. */
static inline void strides_of(const graph_type *t, int64_t *s)
{
    int64_t acc = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        s[d] = acc;
        acc *= t->dim[d];
    }
}

/* The flat index into x (right-aligned against out) of out's element k. */
static inline int64_t bcast_at(const graph_type *out, const graph_type *x, int64_t k)
{
    int64_t idx = 0, stride = 1;
    int off = out->ndim - x->ndim;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t c = k % out->dim[d];
        k /= out->dim[d];
        if (d < off)
            continue;
        if (x->dim[d - off] != 1)
            idx += c * stride;
        stride *= x->dim[d - off];
    }
    return idx;
}

/* The product of dims [from, to) of t (t exists: no overflow). */
static inline int64_t dims_prod(const graph_type *t, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= t->dim[d];
    return p;
}

/* onnx_read_fold_eval.c: ops tracegraph evaluates at load time only. */
tg_status onnx_fold_reduce_prod(onnx_reader *r, int kind, int *done);
tg_status onnx_fold_mod(onnx_reader *r, int kind, int *done);
tg_status onnx_fold_scatter_nd(onnx_reader *r, int kind, int *done);
tg_status onnx_fold_nonzero(onnx_reader *r, int kind, int *done);

#endif
