/* internal.h - the tensor struct and helpers shared inside eager/. */
#ifndef TG_EAGER_INTERNAL_H
#define TG_EAGER_INTERNAL_H

#include "eager.h"

enum {
    EAGER_T_STATIC = 1u << 0, /* never freed (EAGER_NONE) */
    EAGER_T_POOLED = 1u << 1, /* one of its references belongs to a pool */
    EAGER_T_REQGRAD = 1u << 2, /* a leaf whose gradient eager_backward fills */
    EAGER_T_GRAD = 1u << 3,    /* a leaf's gradient: the leaf holds its reference */
};

/*
 * The magic word of a tensor's header: EAGER_LIVE while it is allocated,
 * EAGER_DEAD once freed.  Every entry point that takes a tensor checks it
 * (eager_check), so a tensor released twice or used after its pool popped
 * is refused instead of handing its storage out twice.
 *
 * Headers are not in the data's block: they come from per-thread slabs
 * that are never given back to malloc (tensor.c), and a freed header is
 * reused only after EAGER_HEADER_QUARANTINE more headers were freed on
 * that thread.  So a stale pointer's check always reads a header (never
 * freed memory, even with the block cache off under a sanitizer), and
 * finds it dead even when the freed data block went at once to the next
 * tensor of its size.
 */
#define EAGER_LIVE 0x7447e11eu
#define EAGER_DEAD 0x7447dea0u
#define EAGER_HEADER_QUARANTINE 4096

struct eager_thread_state;

struct eager_tensor {
    graph_type type;
    int64_t numel;
    void *data;   /* 64-byte aligned, numel elements, row-major */
    int32_t refs; /* references; freed at 0 */
    uint16_t flags;
    int16_t block; /* size class of the data block in the cache, -1: plain free */
    /* For views: the tensor owning the storage.  In a freed header: the
     * next one in its slab's queue of freed headers. */
    eager_tensor *base;
    uint64_t tag;       /* see eager_tag() */
    /* The thread that made it (its state and that state's serial, which
     * changes when the thread exits): references are counted without
     * atomics, so another thread may not retain or release it. */
    struct eager_thread_state *owner;
    uint32_t owner_serial;
    uint32_t magic;     /* EAGER_LIVE or EAGER_DEAD */
    /* Autograd's state (eager/autograd.c), made when first needed: NULL
     * for every tensor of a program that never asks for a gradient. */
    struct eager_ag *ag;
};

/*
 * A tensor's autograd state.  gnode: the recorded op that made it (one
 * reference; NULL for a leaf) and its output index there; grad: a leaf's
 * accumulated gradient (one reference); version and wsite, on a storage
 * owner (the base of views) that a recorded op saved: the writes through
 * eager_data_mut since, and the last one's call site.
 */
typedef struct eager_ag {
    struct eager_gnode *gnode;
    eager_tensor *grad;
    int32_t gout;
    uint32_t version;
    eager_site wsite;
} eager_ag;

/* One op through the dispatcher (library code composing ops: losses,
 * optimizers); its one output, or NULL with the error set. */
static inline eager_tensor *eager_op1(graph_op op, eager_tensor *x, const void *attrs,
                                      const eager_site *s)
{
    eager_tensor *out = NULL;
    return eager_dispatch(op, &x, 1, attrs, &out, 1, s) == 1 ? out : NULL;
}
static inline eager_tensor *eager_op2(graph_op op, eager_tensor *x, eager_tensor *y,
                                      const void *attrs, const eager_site *s)
{
    eager_tensor *in[2] = {x, y}, *out = NULL;
    return eager_dispatch(op, in, 2, attrs, &out, 1, s) == 1 ? out : NULL;
}

/* Autograd (eager/autograd.c): whether this thread may record (some
 * tensor of it asked for a gradient, and no eager_no_grad_begin is open):
 * the dispatcher's one test on its fast path. */
extern _Thread_local int eager_tl_grad_on;
/* Records op (it just ran) on the tape when an input needs a gradient:
 * 0, or -1 with the error set. */
int eager_grad_record(graph_op op, eager_tensor *const *in, int nin, const void *attrs,
                      eager_tensor *const *out, int nout, const eager_site *site);
/* Drops t's autograd state (its op, its gradient): the tensor is being
 * freed. */
void eager_grad_detach(eager_tensor *t);

/*
 * 0 if t is a live tensor.  Otherwise records an error "what: ..." at site
 * and returns -1: NULL (no new error when one is pending: NULL means "an
 * earlier error"), a freed tensor, or a pointer that is no tensor at all.
 */
int eager_check_live(const eager_tensor *t, const char *what,
                     const eager_site *site);
static inline int eager_check(const eager_tensor *t, const char *what,
                              const eager_site *site)
{
    return t && t->magic == EAGER_LIVE ? 0 : eager_check_live(t, what, site);
}

/*
 * Nonzero (and an error "what: ..." at site) if the live tensor t (or the
 * base of the view t) belongs to a thread other than this one that is
 * still running: references are counted without atomics, so only its own
 * thread may take or drop one.  A tensor of an exited thread is anyone's.
 */
int eager_foreign(const eager_tensor *t, const char *what, const eager_site *site);

/* Allocates a tensor of type t (data uninitialized); NULL + error on OOM. */
eager_tensor *eager_alloc(const graph_type *t, const eager_site *site);
/* A tensor of type t sharing base's storage (takes a reference on base). */
eager_tensor *eager_alloc_view(eager_tensor *base, const graph_type *t,
                               const eager_site *site);
/* Room in the innermost pool (if any) for n more tensors: 0, or -1 with
 * TG_ERR_NOMEM recorded.  Ops reserve before their hooks run, so that the
 * adoption after them cannot fail. */
int eager_pool_reserve(int n);
/* Hands a new tensor to the innermost pool, if any: 0, or -1 (out of
 * memory, recorded; t not adopted) when no room was reserved. */
int eager_pool_adopt(eager_tensor *t);
/* The hooks of this thread, or NULL. */
extern _Thread_local const eager_hooks *eager_tl_hooks;

/* Drops this thread's generator (train.c); called when the thread exits,
 * before its tensor cache goes (tensor.c). */
void eager_rng_thread_exit(void);

/* Builds a graph_type from a dtype and a shape list; -1 + error if bad. */
int eager_make_type(graph_dtype dt, const graph_ints *shape, graph_type *out,
                    const char *what, const eager_site *site);

#endif
