/* tensor.c - allocation, references, pools, inspection. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

eager_tensor eager_none_ = {.refs = 1, .flags = EAGER_T_STATIC};

static atomic_long live_tensors;

/* Header rounded up so the data after it stays 64-byte aligned. */
#define HEADER_BYTES ((sizeof(eager_tensor) + 63) & ~(size_t)63)

int eager_make_type(graph_dtype dt, const graph_ints *shape, graph_type *out,
                    const char *what, const eager_site *site)
{
    if ((unsigned)dt >= GRAPH_DTYPE_COUNT) {
        eager_set_error(TG_ERR_DTYPE, site, "%s: invalid dtype %d", what,
                        (int)dt);
        return -1;
    }
    if (shape->n < 0 || shape->n > GRAPH_MAX_DIMS) {
        eager_set_error(TG_ERR_SHAPE, site, "%s: %d dims (at most %d)", what,
                        (int)shape->n, GRAPH_MAX_DIMS);
        return -1;
    }
    out->dtype = dt;
    out->ndim = shape->n;
    int64_t numel = 1;
    for (int i = 0; i < shape->n; i++) {
        if (shape->v[i] < 0) {
            eager_set_error(TG_ERR_SHAPE, site, "%s: negative dim %lld", what,
                            (long long)shape->v[i]);
            return -1;
        }
        out->dim[i] = shape->v[i];
        if (shape->v[i] && numel > (INT64_C(1) << 40) / shape->v[i]) {
            eager_set_error(TG_ERR_NOMEM, site, "%s: shape too large", what);
            return -1;
        }
        numel *= shape->v[i];
    }
    return 0;
}

eager_tensor *eager_alloc(const graph_type *t, const eager_site *site)
{
    int64_t numel = graph_type_numel(t);
    size_t bytes = (size_t)numel * graph_dtype_size(t->dtype);
    size_t total = HEADER_BYTES + ((bytes + 63) & ~(size_t)63);
    eager_tensor *x = aligned_alloc(64, total);
    if (!x) {
        eager_set_error(TG_ERR_NOMEM, site, "cannot allocate %zu bytes",
                        bytes);
        return NULL;
    }
    x->type = *t;
    x->numel = numel;
    x->data = (char *)x + HEADER_BYTES;
    x->refs = 1;
    x->flags = 0;
    x->base = NULL;
    x->tag = 0;
    atomic_fetch_add_explicit(&live_tensors, 1, memory_order_relaxed);
    return x;
}

eager_tensor *eager_alloc_view(eager_tensor *base, const graph_type *t,
                               const eager_site *site)
{
    eager_tensor *x = malloc(sizeof *x);
    if (!x) {
        eager_set_error(TG_ERR_NOMEM, site, "cannot allocate a view");
        return NULL;
    }
    while (base->base)
        base = base->base;
    x->type = *t;
    x->numel = graph_type_numel(t);
    x->data = base->data;
    x->refs = 1;
    x->flags = 0;
    x->base = eager_retain(base);
    x->tag = 0;
    atomic_fetch_add_explicit(&live_tensors, 1, memory_order_relaxed);
    return x;
}

eager_tensor *eager_retain(eager_tensor *t)
{
    if (t && !(t->flags & EAGER_T_STATIC))
        t->refs++;
    return t;
}

void eager_release(eager_tensor *t)
{
    if (!t || (t->flags & EAGER_T_STATIC) || --t->refs > 0)
        return;
    eager_tensor *base = t->base;
    atomic_fetch_sub_explicit(&live_tensors, 1, memory_order_relaxed);
    free(t);
    eager_release(base);
}

long eager_live_tensors(void)
{
    return atomic_load_explicit(&live_tensors, memory_order_relaxed);
}

/* ---- pools: a per-thread stack of tensor lists ---- */

typedef struct pool {
    eager_tensor **items;
    size_t n, cap;
} pool;

static _Thread_local pool *tl_pools;
static _Thread_local int tl_depth, tl_cap;

void eager_pool_push(void)
{
    if (tl_depth == tl_cap) {
        int cap = tl_cap ? tl_cap * 2 : 8;
        pool *p = realloc(tl_pools, (size_t)cap * sizeof *p);
        if (!p) {
            /* Keep going without a new level: tensors land in the outer
             * pool (or the caller), which is safe, only later freed. */
            eager_set_error(TG_ERR_NOMEM, NULL, "eager_pool_push: no memory");
            return;
        }
        memset(p + tl_cap, 0, (size_t)(cap - tl_cap) * sizeof *p);
        tl_pools = p;
        tl_cap = cap;
    }
    tl_pools[tl_depth++].n = 0;
}

void eager_pool_pop(void)
{
    if (tl_depth == 0) {
        eager_set_error(TG_ERR_STATE, NULL,
                        "eager_pool_pop: no pool is open on this thread");
        return;
    }
    pool *p = &tl_pools[--tl_depth];
    for (size_t i = 0; i < p->n; i++)
        eager_release(p->items[i]);
    p->n = 0;
    if (tl_depth == 0) {
        /* Outermost pool closed: give the memory back. */
        for (int i = 0; i < tl_cap; i++)
            free(tl_pools[i].items);
        free(tl_pools);
        tl_pools = NULL;
        tl_cap = 0;
    }
}

void eager_pool_adopt(eager_tensor *t)
{
    if (tl_depth == 0 || !t)
        return;
    pool *p = &tl_pools[tl_depth - 1];
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        eager_tensor **items = realloc(p->items, cap * sizeof *items);
        if (!items) {
            /* The caller keeps the reference; reported, nothing freed. */
            eager_set_error(TG_ERR_NOMEM, NULL, "pool: no memory to adopt");
            return;
        }
        p->items = items;
        p->cap = cap;
    }
    p->items[p->n++] = t;
}

/* ---- inspection ---- */

graph_dtype eager_dtype(const eager_tensor *t) { return t->type.dtype; }
int eager_ndim(const eager_tensor *t) { return t->type.ndim; }
int64_t eager_numel(const eager_tensor *t) { return t->numel; }
const graph_type *eager_type(const eager_tensor *t) { return &t->type; }

int64_t eager_dim(const eager_tensor *t, int i)
{
    int a = graph_axis(i, t->type.ndim);
    return a < 0 ? -1 : t->type.dim[a];
}

size_t eager_nbytes(const eager_tensor *t)
{
    return (size_t)t->numel * graph_dtype_size(t->type.dtype);
}

const void *eager_peek(const eager_tensor *t) { return t ? t->data : NULL; }
uint64_t eager_tag(const eager_tensor *t) { return t ? t->tag : 0; }
void eager_set_tag(eager_tensor *t, uint64_t tag)
{
    if (t && !(t->flags & EAGER_T_STATIC))
        t->tag = tag;
}
