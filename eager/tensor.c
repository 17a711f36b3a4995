/* tensor.c - allocation, references, pools, inspection. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "internal.h"

eager_tensor eager_none_ = {.refs = 1, .flags = EAGER_T_STATIC, .block = -1,
                            .magic = EAGER_LIVE};


/* Header rounded up so the data after it stays 64-byte aligned. */
#define HEADER_BYTES ((sizeof(eager_tensor) + 63) & ~(size_t)63)
/* The block of a tensor owning `bytes` of data (a view owns none). */
#define BLOCK_BYTES(bytes) (HEADER_BYTES + (((bytes) + 63) & ~(size_t)63))

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
    for (int i = 0; i < shape->n; i++) {
        if (shape->v[i] < 0) {
            eager_set_error(TG_ERR_SHAPE, site, "%s: negative dim %lld", what,
                            (long long)shape->v[i]);
            return -1;
        }
        out->dim[i] = shape->v[i];
    }
    char why[200];
    tg_status st = graph_type_check(out, why, sizeof why);
    if (st != TG_OK) {
        eager_set_error(st, site, "%s: %s", what, why);
        return -1;
    }
    return 0;
}

/*
 * Per-thread state: a cache of small tensor blocks and a live-tensor count.
 *
 * Small ops are dominated by allocation (an aligned malloc and free were
 * ~40% of a 16-element add), so blocks up to CACHE_CLASSES * 64 bytes are
 * kept on per-size free lists of the thread that frees them, linked
 * through the freed blocks themselves.  The live count is per thread too
 * (a shared atomic counter cost ~10 ns per tensor); eager_live_tensors()
 * sums the threads' counts.  A thread's state is released when it exits (a
 * pthread key destructor folds its count into exited_live) or, for the
 * cache, on eager_trim_cache().
 *
 * The lists hold up to CACHE_BYTES in all, only as much as the program
 * actually freed: a pool of many small tensors (a long eager loop) that
 * is popped and filled again then reuses every block.  A small per-class
 * cap made such a program free most blocks back to malloc, which trimmed
 * the heap and faulted the pages in again: 3x slower per op at 7000 ops
 * than at 700.
 */
#define CACHE_CLASSES 32
#define CACHE_BYTES ((size_t)64 << 20)
#define LARGE_SLOTS 8
#define LARGE_CACHE_BYTES ((size_t)256 << 20)
#define BLOCK_LARGE ((int16_t)-2) /* block class of a large, cacheable block */

typedef struct free_block {
    struct free_block *next;
} free_block;

typedef struct thread_state {
    long live; /* tensors allocated minus freed on this thread */
    int nocache; /* TG_EAGER_NO_CACHE: every block from and back to malloc */
    struct thread_state *prev, *next;
    struct free_block *head[CACHE_CLASSES]; /* free blocks of (k + 1) * 64 bytes */
    size_t cached_bytes;
    /* Large blocks, reused at exactly the same size: a chain of big
     * elementwise ops otherwise maps fresh pages for every result (the
     * page faults cost 3x the arithmetic of a 16 MB add here). */
    int nlarge;
    size_t large_bytes;
    struct {
        void *p;
        size_t size;
    } large[LARGE_SLOTS];
} thread_state;

static _Thread_local thread_state *tl_state;
static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t states_mu = PTHREAD_MUTEX_INITIALIZER;
static thread_state *states;  /* all live threads' states */
static long exited_live;      /* counts of exited threads (under states_mu) */

static void trim(thread_state *t)
{
    for (int k = 0; k < CACHE_CLASSES; k++) {
        while (t->head[k]) {
            free_block *b = t->head[k];
            t->head[k] = b->next;
            tg_free(b);
        }
    }
    t->cached_bytes = 0;
    for (int i = 0; i < t->nlarge; i++)
        tg_free(t->large[i].p);
    t->nlarge = 0;
    t->large_bytes = 0;
}

/* A cached large block of exactly size bytes, or NULL. */
static void *large_take(thread_state *t, size_t size)
{
    for (int i = t->nlarge - 1; i >= 0; i--) {
        if (t->large[i].size != size)
            continue;
        void *p = t->large[i].p;
        t->large_bytes -= size;
        t->large[i] = t->large[--t->nlarge];
        return p;
    }
    return NULL;
}

/* Keeps a large block for reuse, evicting the oldest if needed. */
static void large_keep(thread_state *t, void *p, size_t size)
{
    if (size > LARGE_CACHE_BYTES / 2) {
        tg_free(p);
        return;
    }
    while (t->nlarge > 0 && (t->nlarge == LARGE_SLOTS ||
                             t->large_bytes + size > LARGE_CACHE_BYTES)) {
        tg_free(t->large[0].p);
        t->large_bytes -= t->large[0].size;
        memmove(&t->large[0], &t->large[1], sizeof t->large[0] * (size_t)--t->nlarge);
    }
    t->large[t->nlarge].p = p;
    t->large[t->nlarge++].size = size;
    t->large_bytes += size;
}

static void state_free(void *p)
{
    thread_state *t = p;
    if (!t)
        return;
    trim(t);
    pthread_mutex_lock(&states_mu);
    exited_live += t->live;
    if (t->prev)
        t->prev->next = t->next;
    else
        states = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&states_mu);
    tg_free(t);
}

/*
 * The debugging mode without the cache (eager.h): TG_EAGER_NO_CACHE=1 or 0,
 * else the build's default (on under sanitizers, CMake TG_EAGER_NO_CACHE).
 * Read once per process.
 */
#ifndef TG_EAGER_NO_CACHE_DEFAULT
#define TG_EAGER_NO_CACHE_DEFAULT 0
#endif
static int no_cache = TG_EAGER_NO_CACHE_DEFAULT;

static void state_key_init(void)
{
    pthread_key_create(&state_key, state_free);
    const char *e = getenv("TG_EAGER_NO_CACHE");
    if (e && (e[0] == '0' || e[0] == '1') && !e[1])
        no_cache = e[0] == '1';
}

/* This thread's state, made on first use; NULL only if out of memory. */
static thread_state *get_state(void)
{
    if (tl_state)
        return tl_state;
    pthread_once(&state_once, state_key_init);
    thread_state *t = tg_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->nocache = no_cache;
    if (pthread_setspecific(state_key, t) != 0) {
        tg_free(t);
        return NULL;
    }
    pthread_mutex_lock(&states_mu);
    t->next = states;
    if (states)
        states->prev = t;
    states = t;
    pthread_mutex_unlock(&states_mu);
    return tl_state = t;
}

void eager_trim_cache(void)
{
    if (tl_state)
        trim(tl_state);
}

long eager_live_tensors(void)
{
    pthread_mutex_lock(&states_mu);
    long n = exited_live;
    for (thread_state *t = states; t; t = t->next)
        n += t->live;
    pthread_mutex_unlock(&states_mu);
    return n;
}

/* A 64-aligned block of total bytes, counted live; *cls: cache class or -1. */
static void *block_alloc(size_t total, int16_t *cls)
{
    thread_state *t = tl_state ? tl_state : get_state();
    TG_ASSERT(total >= HEADER_BYTES && total % 64 == 0); /* BLOCK_BYTES */
    size_t k = total / 64 - 1;
    void *p = NULL;
    *cls = k < CACHE_CLASSES ? (int16_t)k : BLOCK_LARGE;
    if (!t)
        return NULL; /* out of memory for the state that counts the block */
    if (t->nocache)
        ;
    else if (t && k < CACHE_CLASSES && t->head[k]) {
        free_block *b = t->head[k];
        t->head[k] = b->next;
        t->cached_bytes -= total;
        p = b;
    }
    else if (t && k >= CACHE_CLASSES)
        p = large_take(t, total);
    if (!p)
        p = tg_aligned_alloc(64, total);
    if (p && t)
        t->live++;
    return p;
}

static void block_free(void *p, int16_t cls, size_t total)
{
    thread_state *t = tl_state ? tl_state : get_state();
    if (t)
        t->live--;
    else { /* no state (out of memory): counted against the exited threads' */
        pthread_mutex_lock(&states_mu);
        exited_live--;
        pthread_mutex_unlock(&states_mu);
    }
    if (t && t->nocache) {
        tg_free(p);
        return;
    }
    if (t && cls == BLOCK_LARGE) {
        large_keep(t, p, total);
        return;
    }
    if (t && cls >= 0 && t->cached_bytes + total <= CACHE_BYTES) {
        free_block *b = p;
        b->next = t->head[cls];
        t->head[cls] = b;
        t->cached_bytes += total;
        return;
    }
    tg_free(p);
}

eager_tensor *eager_alloc(const graph_type *t, const eager_site *site)
{
    size_t bytes = graph_type_bytes(t);
    int16_t cls;
    eager_tensor *x = block_alloc(BLOCK_BYTES(bytes), &cls);
    if (!x) {
        eager_set_error(TG_ERR_NOMEM, site, "cannot allocate %zu bytes",
                        bytes);
        return NULL;
    }
    x->type = *t;
    x->numel = graph_type_numel(t);
    x->data = (char *)x + HEADER_BYTES;
    x->refs = 1;
    x->flags = 0;
    x->block = cls;
    x->base = NULL;
    x->tag = 0;
    x->magic = EAGER_LIVE;
    return x;
}

eager_tensor *eager_alloc_view(eager_tensor *base, const graph_type *t,
                               const eager_site *site)
{
    int16_t cls;
    eager_tensor *x = block_alloc(HEADER_BYTES, &cls);
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
    x->block = cls;
    base->refs++; /* base is live: the dispatcher checked in[0] */
    x->base = base;
    x->tag = 0;
    x->magic = EAGER_LIVE;
    return x;
}

int eager_check_live(const eager_tensor *t, const char *what,
                     const eager_site *site)
{
    if (!t) {
        if (eager_status() == TG_OK)
            eager_set_error(TG_ERR_NULL, site, "%s: tensor is NULL", what);
    } else if (t->magic == EAGER_DEAD) {
        eager_set_error(TG_ERR_STATE, site,
                        "%s: the tensor was already freed (released more often "
                        "than retained, or used after the pool that owned it "
                        "was popped)", what);
    } else if (t->magic != EAGER_LIVE) {
        eager_set_error(TG_ERR_STATE, site,
                        "%s: not a tensor (a stale or invalid pointer)", what);
    } else {
        return 0;
    }
    return -1;
}

tg_status eager_check_at(EAGER_SITE_PARAMS, const eager_tensor *t,
                         const char *what)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (eager_check(t, what ? what : "eager_check", &site) == 0)
        return TG_OK;
    return t ? TG_ERR_STATE : TG_ERR_NULL;
}

/* Drops one reference of a live tensor, freeing it (and then its base) at
 * zero.  The header is marked dead before the block goes back. */
static void drop(eager_tensor *t)
{
    while (t && !(t->flags & EAGER_T_STATIC) && --t->refs <= 0) {
        eager_tensor *base = t->base;
        size_t total =
            base ? HEADER_BYTES : BLOCK_BYTES((size_t)t->numel * graph_dtype_size(t->type.dtype));
        /* The header still describes the block it came with (its cache
         * class): else the block would go back to another size's list. */
        TG_ASSERT(t->magic == EAGER_LIVE && t->refs == 0 &&
                  t->block == (total / 64 - 1 < CACHE_CLASSES ? (int16_t)(total / 64 - 1)
                                                               : BLOCK_LARGE));
        t->magic = EAGER_DEAD;
        t->flags = 0;
        block_free(t, t->block, total);
        t = base;
    }
}

eager_tensor *eager_retain_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!t)
        return NULL;
    if (eager_check(t, "eager_retain", &site) < 0)
        return NULL;
    if (!(t->flags & EAGER_T_STATIC))
        t->refs++;
    return t;
}

eager_tensor *eager_keep_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!t)
        return NULL;
    if (eager_check(t, "eager_keep", &site) < 0)
        return NULL;
    if (t->flags & EAGER_T_POOLED)
        t->refs++;
    return t;
}

void eager_release_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!t || eager_check(t, "eager_release", &site) < 0)
        return;
    if (t->refs == 1 && (t->flags & EAGER_T_POOLED)) {
        eager_set_error(TG_ERR_STATE, &site,
                        "eager_release: the tensor belongs to the pool it was "
                        "made in, which releases it at eager_pool_pop; not "
                        "freed here (eager_retain it first to keep a "
                        "reference of your own)");
        return;
    }
    drop(t);
}

eager_tensor *(eager_retain)(eager_tensor *t) { return eager_retain_at(NULL, 0, NULL, t); }
void (eager_release)(eager_tensor *t) { eager_release_at(NULL, 0, NULL, t); }


/* ---- pools: a per-thread stack of tensor lists ---- */

typedef struct pool {
    eager_tensor **items;
    size_t n, cap;
    int phantoms; /* pushes above this level that failed (no level of their own) */
} pool;

/* The first POOL_INLINE levels need no allocation, so a push outside any
 * pool never fails; deeper levels live in a heap array. */
#define POOL_INLINE 8
static _Thread_local pool tl_inline[POOL_INLINE];
static _Thread_local pool *tl_pools;
static _Thread_local int tl_depth, tl_cap;

tg_status eager_pool_push(void)
{
    if (!tl_pools) {
        tl_pools = tl_inline;
        tl_cap = POOL_INLINE;
    }
    if (tl_depth == tl_cap) {
        int cap = tl_cap * 2;
        pool *p = tl_pools == tl_inline ? tg_malloc((size_t)cap * sizeof *p)
                                        : tg_realloc(tl_pools, (size_t)cap * sizeof *p);
        if (!p) {
            /* No new level: the matching pop is balanced (it closes
             * nothing), tensors made meanwhile land in the enclosing pool
             * (there is one: the first levels need no memory). */
            tl_pools[tl_depth - 1].phantoms++;
            eager_set_error(TG_ERR_NOMEM, NULL, "eager_pool_push: out of memory "
                            "(level %d)", tl_depth + 1);
            return TG_ERR_NOMEM;
        }
        if (tl_pools == tl_inline) { /* the levels move: the heap owns them now */
            memcpy(p, tl_inline, sizeof tl_inline);
            memset(tl_inline, 0, sizeof tl_inline);
        }
        memset(p + tl_cap, 0, (size_t)(cap - tl_cap) * sizeof *p);
        tl_pools = p;
        tl_cap = cap;
    }
    tl_pools[tl_depth].n = 0;
    tl_pools[tl_depth++].phantoms = 0;
    return TG_OK;
}

void eager_pool_pop_at(EAGER_SITE_PARAMS)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (tl_depth == 0) {
        eager_set_error(TG_ERR_STATE, &site,
                        "eager_pool_pop: no pool is open on this thread");
        return;
    }
    if (tl_pools[tl_depth - 1].phantoms > 0) {
        tl_pools[tl_depth - 1].phantoms--; /* the pop of a push that failed */
        return;
    }
    pool *p = &tl_pools[--tl_depth];
    for (size_t i = 0; i < p->n; i++) {
        eager_tensor *t = p->items[i];
        if (eager_check(t, "eager_pool_pop: a tensor made in this pool", &site) < 0)
            continue; /* freed behind the pool's back: reported, not freed again */
        t->flags &= (uint16_t)~EAGER_T_POOLED;
        drop(t);
    }
    p->n = 0;
    if (tl_depth == 0) {
        /* Outermost pool closed: give the memory back. */
        for (int i = 0; i < tl_cap; i++) {
            tg_free(tl_pools[i].items);
            tl_pools[i].items = NULL;
            tl_pools[i].cap = 0;
        }
        if (tl_pools != tl_inline)
            tg_free(tl_pools);
        tl_pools = NULL;
        tl_cap = 0;
    }
}

void (eager_pool_pop)(void) { eager_pool_pop_at(NULL, 0, NULL); }

int eager_pool_reserve(int n)
{
    if (tl_depth == 0 || n <= 0)
        return 0;
    pool *p = &tl_pools[tl_depth - 1];
    if (p->cap - p->n >= (size_t)n)
        return 0;
    size_t cap = p->cap ? p->cap * 2 : 64;
    while (cap - p->n < (size_t)n)
        cap *= 2;
    eager_tensor **items = tg_realloc(p->items, cap * sizeof *items);
    if (!items) {
        eager_set_error(TG_ERR_NOMEM, NULL, "pool: out of memory adopting a tensor");
        return -1;
    }
    p->items = items;
    p->cap = cap;
    return 0;
}

int eager_pool_adopt(eager_tensor *t)
{
    if (tl_depth == 0 || !t)
        return 0;
    if (eager_pool_reserve(1) < 0)
        return -1;
    pool *p = &tl_pools[tl_depth - 1];
    p->items[p->n++] = t;
    t->flags |= EAGER_T_POOLED;
    return 0;
}

/* ---- inspection ---- */

/* The live tensor t, or NULL (an error for a freed one; none for NULL). */
#define INSPECT(name, t)                                                   \
    eager_site site = {site_file_, site_line_, site_func_};                \
    if (!(t) || eager_check(t, name, &site) < 0)

graph_dtype eager_dtype_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    INSPECT("eager_dtype", t) return GRAPH_DTYPE_COUNT;
    return t->type.dtype;
}

int eager_ndim_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    INSPECT("eager_ndim", t) return -1;
    return t->type.ndim;
}

int64_t eager_numel_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    INSPECT("eager_numel", t) return -1;
    return t->numel;
}

const graph_type *eager_type_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    INSPECT("eager_type", t) return NULL;
    return &t->type;
}

int64_t eager_dim_at(EAGER_SITE_PARAMS, const eager_tensor *t, int i)
{
    INSPECT("eager_dim", t) return -1;
    int a = graph_axis(i, t->type.ndim);
    return a < 0 ? -1 : t->type.dim[a];
}

size_t eager_nbytes_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    INSPECT("eager_nbytes", t) return 0;
    return (size_t)t->numel * graph_dtype_size(t->type.dtype);
}

const void *eager_peek(const eager_tensor *t)
{
    return t && eager_check(t, "eager_peek", NULL) == 0 ? t->data : NULL;
}

uint64_t eager_tag(const eager_tensor *t)
{
    return t && eager_check(t, "eager_tag", NULL) == 0 ? t->tag : 0;
}

void eager_set_tag(eager_tensor *t, uint64_t tag)
{
    if (t && eager_check(t, "eager_set_tag", NULL) == 0 && !(t->flags & EAGER_T_STATIC))
        t->tag = tag;
}
