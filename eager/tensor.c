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


/* The data block of a tensor owning `bytes` of data (a view owns none):
 * 64-byte multiples, at least 64 so that an empty tensor's data is a
 * pointer of its own. */
#define BLOCK_BYTES(bytes) ((bytes) ? (((bytes) + 63) & ~(size_t)63) : 64)

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
 * Per-thread state: a cache of small data blocks, the slabs of tensor
 * headers and a live-tensor count.
 *
 * Small ops are dominated by allocation (an aligned malloc and free were
 * ~40% of a 16-element add), so blocks up to CACHE_CLASSES * 64 bytes are
 * kept on per-size free lists of the thread that frees them, linked
 * through the freed blocks themselves.  The live count is per thread too
 * (a shared atomic counter cost ~10 ns per tensor); eager_live_tensors()
 * sums the threads' counts.  A thread's cache is released when it exits (a
 * pthread key destructor) or on eager_trim_cache().  The state itself is
 * never freed: headers in its slabs may still be referenced (live tensors
 * of the exited thread, stale pointers), so it goes to a spare list, its
 * serial bumped, and a later thread takes it over.
 *
 * The lists hold up to CACHE_BYTES in all, only as much as the program
 * actually freed: a pool of many small tensors (a long eager loop) that
 * is popped and filled again then reuses every block.  A small per-class
 * cap made such a program free most blocks back to malloc, which trimmed
 * the heap and faulted the pages in again: 3x slower per op at 7000 ops
 * than at 700.  Large blocks likewise: a training step frees dozens of
 * activations and gradients together at its end, and with 8 slots most
 * went back to malloc and were faulted in again the next step (the
 * training benchmark's CNN, eager, one thread: 21.8 -> 17.5 ms a step
 * with 64).
 */
#define CACHE_CLASSES 32
#define CACHE_BYTES ((size_t)64 << 20)
#define LARGE_SLOTS 64
#define LARGE_CACHE_BYTES ((size_t)256 << 20)
#define BLOCK_LARGE ((int16_t)-2) /* block class of a large, cacheable block */

typedef struct free_block {
    struct free_block *next;
} free_block;

/*
 * Tensor headers come from slabs of SLAB_BYTES, never freed (internal.h):
 * a freed header joins the tail of the thread's queue and is taken again
 * from its head only while more than EAGER_HEADER_QUARANTINE wait, so a
 * stale pointer keeps reading a dead header until that many more tensors
 * were freed on the thread.  The first 64 bytes of a slab link the slabs.
 */
#define SLAB_BYTES ((size_t)64 << 10)

typedef struct eager_thread_state {
    long live; /* tensors allocated minus freed on this thread */
    int nocache; /* TG_EAGER_NO_CACHE: every block from and back to malloc */
    _Atomic uint32_t serial; /* bumped when the thread exits (eager_tensor.owner) */
    struct eager_thread_state *next;  /* all states */
    struct eager_thread_state *spare; /* the spare list (exited threads) */
    eager_tensor *fq_head, *fq_tail;  /* freed headers, oldest first */
    size_t fq_len;
    char *slabs;     /* this state's slabs (the first word links them) */
    char *slab_next; /* unused headers of the newest slab */
    size_t slab_left;
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
static thread_state *states; /* every state ever made (under states_mu) */
static thread_state *spares; /* states of exited threads, to take over */

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

/* At thread exit: the cache goes back to malloc, the state (slabs, live
 * count) to the spare list; tensors the thread made are now anyone's. */
static void state_free(void *p)
{
    thread_state *t = p;
    if (!t)
        return;
    eager_rng_thread_exit(); /* its block joins the cache trimmed next */
    trim(t);
    pthread_mutex_lock(&states_mu);
    atomic_fetch_add_explicit(&t->serial, 1, memory_order_relaxed);
    t->spare = spares;
    spares = t;
    pthread_mutex_unlock(&states_mu);
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
    pthread_mutex_lock(&states_mu);
    thread_state *t = spares;
    if (t)
        spares = t->spare;
    pthread_mutex_unlock(&states_mu);
    if (!t && (t = tg_calloc(1, sizeof *t)) != NULL) {
        pthread_mutex_lock(&states_mu);
        t->next = states;
        states = t;
        pthread_mutex_unlock(&states_mu);
    }
    if (!t)
        return NULL;
    t->nocache = no_cache;
    if (pthread_setspecific(state_key, t) != 0) {
        pthread_mutex_lock(&states_mu);
        t->spare = spares; /* listed already: kept for the next thread */
        spares = t;
        pthread_mutex_unlock(&states_mu);
        return NULL;
    }
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
    long n = 0;
    for (thread_state *t = states; t; t = t->next)
        n += t->live;
    pthread_mutex_unlock(&states_mu);
    return n;
}

/* header_alloc's way when the queue is short: a new header from the
 * slab (a new slab when it is used up), else (out of memory) the oldest
 * dead one; NULL when there is neither. */
static __attribute__((noinline)) eager_tensor *header_refill(thread_state *t)
{
    if (t->slab_left == 0) {
        char *slab = tg_aligned_alloc(64, SLAB_BYTES);
        if (slab) {
            *(char **)slab = t->slabs;
            t->slabs = slab;
            t->slab_next = slab + 64;
            t->slab_left = (SLAB_BYTES - 64) / sizeof(eager_tensor);
        }
    }
    if (t->slab_left > 0) {
        eager_tensor *h = (eager_tensor *)t->slab_next;
        t->slab_next += sizeof(eager_tensor);
        t->slab_left--;
        return h;
    }
    eager_tensor *h = t->fq_head;
    if (h) {
        t->fq_head = h->base;
        if (!t->fq_head)
            t->fq_tail = NULL;
        t->fq_len--;
    }
    return h;
}

/* A header for a new tensor owned by t, counted live; NULL if out of
 * memory.  A dead header is taken from the queue's head only while more
 * than the quarantine wait, except when no new slab can be had. */
static inline eager_tensor *header_alloc(thread_state *t)
{
    eager_tensor *h = t->fq_head;
    if (__builtin_expect(t->fq_len > EAGER_HEADER_QUARANTINE, 1)) {
        /* the steady state of a loop: the oldest dead header, whose
         * successor (freed thousands of tensors ago, out of L1) is
         * fetched now for the next allocation */
        t->fq_head = h->base;
        t->fq_len--;
        __builtin_prefetch(t->fq_head, 1);
        __builtin_prefetch((char *)t->fq_head + 64, 1);
        __builtin_prefetch((char *)t->fq_head + 128, 1); /* its autograd pointer */
    } else if (!(h = header_refill(t))) {
        return NULL;
    }
    t->live++;
    h->owner = t;
    h->owner_serial = atomic_load_explicit(&t->serial, memory_order_relaxed);
    return h;
}

/* A dead header joins the tail of t's queue (t NULL, out of memory for a
 * state: it stays dead where it is, never reused). */
static void header_free(thread_state *t, eager_tensor *h)
{
    TG_ASSERT(h->magic == EAGER_DEAD);
    if (!t)
        return;
    t->live--;
    h->base = NULL; /* the queue's link from here on */
    if (t->fq_tail)
        t->fq_tail->base = h;
    else
        t->fq_head = h;
    t->fq_tail = h;
    t->fq_len++;
}

/* A 64-aligned data block of total bytes from t's cache or malloc;
 * *cls: its cache class or BLOCK_LARGE. */
static void *block_alloc(thread_state *t, size_t total, int16_t *cls)
{
    TG_ASSERT(total >= 64 && total % 64 == 0); /* BLOCK_BYTES */
    size_t k = total / 64 - 1;
    void *p = NULL;
    *cls = k < CACHE_CLASSES ? (int16_t)k : BLOCK_LARGE;
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
    return p;
}

/* Gives a data block back to t's cache (t NULL: to malloc). */
static void block_free(thread_state *t, void *p, int16_t cls, size_t total)
{
    if (!t || t->nocache) {
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
    thread_state *st = tl_state ? tl_state : get_state();
    eager_tensor *x = st ? header_alloc(st) : NULL;
    int16_t cls = -1;
    void *data = x ? block_alloc(st, BLOCK_BYTES(bytes), &cls) : NULL;
    if (!data) {
        if (x) {
            x->magic = EAGER_DEAD;
            header_free(st, x);
        }
        eager_set_error(TG_ERR_NOMEM, site, "cannot allocate %zu bytes",
                        bytes);
        return NULL;
    }
    x->type = *t;
    x->numel = graph_type_numel(t);
    x->data = data;
    x->refs = 1;
    x->flags = 0;
    x->block = cls;
    x->ag = NULL;
    x->base = NULL;
    x->tag = 0;
    x->magic = EAGER_LIVE;
    return x;
}

eager_tensor *eager_alloc_view(eager_tensor *base, const graph_type *t,
                               const eager_site *site)
{
    while (base->base)
        base = base->base;
    thread_state *st = tl_state ? tl_state : get_state();
    eager_tensor *x = st ? header_alloc(st) : NULL;
    if (!x) {
        eager_set_error(TG_ERR_NOMEM, site, "cannot allocate a view");
        return NULL;
    }
    x->type = *t;
    x->numel = graph_type_numel(t);
    x->data = base->data;
    x->refs = 1;
    x->flags = 0;
    x->block = -1;
    x->ag = NULL;
    base->refs++; /* live and this thread's: the dispatcher checked (eager_foreign) */
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
 * zero: the header is marked dead and queued, the data block goes back. */
static void drop(eager_tensor *t)
{
    while (t && !(t->flags & EAGER_T_STATIC) && --t->refs <= 0) {
        eager_tensor *base = t->base;
        thread_state *st = tl_state ? tl_state : get_state();
        TG_ASSERT(t->magic == EAGER_LIVE && t->refs == 0);
        if (t->ag)
            eager_grad_detach(t);
        if (!base) {
            size_t bytes = (size_t)t->numel * graph_dtype_size(t->type.dtype);
            size_t total = BLOCK_BYTES(bytes);
            /* The header still describes the block it came with (its cache
             * class): else the block would go back to another size's list. */
            TG_ASSERT(t->block == (total / 64 - 1 < CACHE_CLASSES ? (int16_t)(total / 64 - 1)
                                                                  : BLOCK_LARGE));
            block_free(st, t->data, t->block, total);
        }
        t->magic = EAGER_DEAD;
        t->flags = 0;
        t->data = NULL;
        header_free(st, t);
        t = base;
    }
}

int eager_foreign(const eager_tensor *t, const char *what, const eager_site *site)
{
    while (t->base)
        t = t->base; /* a view's references go to its base too */
    const thread_state *o = t->owner;
    if (!o || o == tl_state ||
        atomic_load_explicit(&o->serial, memory_order_relaxed) != t->owner_serial)
        return 0;
    eager_set_error(TG_ERR_STATE, site,
                    "%s: the tensor belongs to the thread that made it (references are "
                    "not atomic: retain and release it there, or copy its data)", what);
    return 1;
}

/* eager_foreign, with its common case (a tensor of this thread) inline. */
static inline int foreign(const eager_tensor *t, const char *what, const eager_site *site)
{
    return (!t->base && t->owner == tl_state) ? 0 : eager_foreign(t, what, site);
}

eager_tensor *eager_retain_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!t)
        return NULL;
    if (eager_check(t, "eager_retain", &site) < 0 || foreign(t, "eager_retain", &site))
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
    if (eager_check(t, "eager_keep", &site) < 0 || foreign(t, "eager_keep", &site))
        return NULL;
    if (t->flags & EAGER_T_POOLED)
        t->refs++;
    return t;
}

void eager_release_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!t || eager_check(t, "eager_release", &site) < 0 ||
        foreign(t, "eager_release", &site))
        return;
    if (t->refs == 1 && (t->flags & EAGER_T_POOLED)) {
        eager_set_error(TG_ERR_STATE, &site,
                        "eager_release: the tensor belongs to the pool it was "
                        "made in, which releases it at eager_pool_pop; not "
                        "freed here (eager_retain it first to keep a "
                        "reference of your own)");
        return;
    }
    if (t->refs == 1 && (t->flags & EAGER_T_GRAD)) {
        eager_set_error(TG_ERR_STATE, &site,
                        "eager_release: the tensor is a leaf's gradient (eager_grad), which "
                        "the leaf releases (eager_zero_grad, or the leaf's own release); not "
                        "freed here (eager_retain it first to keep a reference of your own)");
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
