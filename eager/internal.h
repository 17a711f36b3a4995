/* internal.h - the tensor struct and helpers shared inside eager/. */
#ifndef TG_EAGER_INTERNAL_H
#define TG_EAGER_INTERNAL_H

#include "eager.h"

enum {
    EAGER_T_STATIC = 1u << 0, /* never freed (EAGER_NONE) */
};

struct eager_tensor {
    graph_type type;
    int64_t numel;
    void *data;   /* 64-byte aligned, numel elements, row-major */
    int32_t refs; /* references; freed at 0 */
    uint16_t flags;
    int16_t block; /* size class in the block cache, -1: plain free */
    eager_tensor *base; /* for views: the tensor owning the storage */
    uint64_t tag;       /* see eager_tag() */
};

/* Allocates a tensor of type t (data uninitialized); NULL + error on OOM. */
eager_tensor *eager_alloc(const graph_type *t, const eager_site *site);
/* A tensor of type t sharing base's storage (takes a reference on base). */
eager_tensor *eager_alloc_view(eager_tensor *base, const graph_type *t,
                               const eager_site *site);
/* Hands a new tensor to the innermost pool, if any. */
void eager_pool_adopt(eager_tensor *t);
/* The hooks of this thread, or NULL. */
extern _Thread_local const eager_hooks *eager_tl_hooks;

/* Builds a graph_type from a dtype and a shape list; -1 + error if bad. */
int eager_make_type(graph_dtype dt, const graph_ints *shape, graph_type *out,
                    const char *what, const eager_site *site);

#endif
