/* stable.c - arrays whose elements never move: one reservation per set,
 * each array committed as it grows. */
#include "stable.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TG_STABLE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TG_STABLE_ASAN 1
#endif
#endif
#ifdef TG_STABLE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) __asan_poison_memory_region((p), (n))
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The first commit of an array: small graphs touch a few pages per array
 * at most. */
#define FIRST_COMMIT ((size_t)16384)

/*
 * Released sets kept for reuse.  A set of new mappings costs an mmap, an
 * mprotect per array it uses, a first-touch page fault per page (about
 * 1 us each here) and an munmap: 10-20 us for a small graph, which a
 * program that makes graphs in a loop (a trace per call, a load per
 * request) or clones one (replay_compile) would pay every time.  A set
 * with at most KEEP_BYTES committed in all goes here on release, whole,
 * the oldest ones leaving (and unmapped) when that makes more than
 * KEEP_COUNT sets or KEEP_TOTAL bytes; a first growth takes one of the
 * same spec with every array committed as it was (its pages warm, not
 * zeroed: every writer of a record writes it whole) and continues from
 * there, with no system call until an array outgrows what it had.  Only
 * sets with their full room are kept (a set halved under a short address
 * space is unmapped), so a kept set never lowers a limit.
 */
#define KEEP_COUNT 16
#define KEEP_BYTES ((size_t)2 << 20)
#define KEEP_TOTAL ((size_t)8 << 20)
static struct {
    pthread_mutex_t lock;
    int n;
    size_t bytes;
    tg_stable_set kept[KEEP_COUNT];
} cache = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {{0}}};

/* fork() while another thread holds the lock would leave it held in the
 * child: the lock is taken around fork (as malloc's are). */
static void fork_prepare(void) { pthread_mutex_lock(&cache.lock); }
static void fork_done(void) { pthread_mutex_unlock(&cache.lock); }
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_register(void) { pthread_atfork(fork_prepare, fork_done, fork_done); }

static void cache_lock(void)
{
    pthread_once(&fork_once, fork_register);
    pthread_mutex_lock(&cache.lock);
}

static size_t set_committed(const tg_stable_set *s)
{
    size_t n = 0;
    for (int j = 0; j < s->n; j++)
        n += s->a[j].committed;
    return n;
}

/* Under ASan a kept set's committed bytes read as freed memory. */
static void set_poison(const tg_stable_set *s, int poison)
{
    for (int j = 0; j < s->n; j++)
        if (s->a[j].committed) {
            if (poison)
                POISON(s->a[j].base, s->a[j].committed);
            else
                UNPOISON(s->a[j].base, s->a[j].committed);
        }
    (void)poison;
}

/*
 * A kept set of this spec into s, for a first growth of array i to need
 * bytes; 0 or -1 (none).  Of those whose array i holds need committed, the
 * one with least committed in all; else the one whose array i has most:
 * pages an earlier graph touched are warm, and a first touch costs a
 * page fault.
 */
static int cache_take(tg_stable_set *s, const tg_stable_spec *spec, int n, int i, size_t need)
{
    int best = -1;
    size_t best_all = 0;
    cache_lock();
    for (int k = 0; k < cache.n; k++) {
        const tg_stable_set *c = &cache.kept[k];
        if (c->spec != spec || c->n != n)
            continue;
        size_t have = c->a[i].committed, all = set_committed(c);
        if (best >= 0) {
            size_t b = cache.kept[best].a[i].committed;
            if (b >= need ? have < need || all >= best_all : have <= b)
                continue;
        }
        best = k;
        best_all = all;
    }
    if (best >= 0) {
        *s = cache.kept[best];
        memmove(&cache.kept[best], &cache.kept[best + 1],
                sizeof *cache.kept * (size_t)(cache.n - 1 - best));
        cache.n--;
        cache.bytes -= best_all;
    }
    pthread_mutex_unlock(&cache.lock);
    if (best < 0)
        return -1;
    set_poison(s, 0);
    for (int j = 0; j < n; j++)
        s->a[j].dirty = s->a[j].committed;
    return 0;
}

/* 1 if s went into the cache (the caller forgets it), 0 otherwise.  A
 * full cache unmaps its oldest entries to make room (kept[] is in order of
 * release), so it follows what the program makes now. */
static int cache_put(const tg_stable_set *s)
{
    size_t bytes = set_committed(s);
    if (s->shift || bytes > KEEP_BYTES)
        return 0;
    set_poison(s, 1);
    tg_stable_set old[KEEP_COUNT];
    int nold = 0;
    cache_lock();
    while (cache.n > 0 && (cache.n == KEEP_COUNT || cache.bytes + bytes > KEEP_TOTAL)) {
        old[nold] = cache.kept[0];
        cache.bytes -= set_committed(&old[nold++]);
        memmove(&cache.kept[0], &cache.kept[1], sizeof *cache.kept * (size_t)--cache.n);
    }
    cache.kept[cache.n++] = *s;
    cache.bytes += bytes;
    pthread_mutex_unlock(&cache.lock);
    for (int k = 0; k < nold; k++) {
        set_poison(&old[k], 0); /* the shadow must not outlive the mapping */
        munmap(old[k].base, old[k].reserved);
    }
    return 1;
}

static size_t page_size(void)
{
    static size_t ps;
    if (!ps) {
        long p = sysconf(_SC_PAGESIZE);
        ps = p > 0 ? (size_t)p : 4096;
    }
    return ps;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* Array sp's room at shift: its maximum halved shift times, whole pages,
 * at least one. */
static size_t room(const tg_stable_spec *sp, int shift, size_t ps)
{
    size_t r = round_up(((size_t)sp->max * sp->elem) >> shift, ps);
    return r ? r : ps;
}

/* Reserves the set for a first growth of array i to need elements: a kept
 * set, or every array's room (and a guard page after each) in one
 * mapping, halved together where the address space is short, down to
 * what that growth needs. */
static int reserve(tg_stable_set *s, const tg_stable_spec *spec, int n, int i, size_t need)
{
    size_t ps = page_size();
    if (cache_take(s, spec, n, i, need * spec[i].elem) == 0)
        return 0;
    size_t floor = round_up(need * spec[i].elem, ps), full = room(&spec[i], 0, ps);
    if (floor < FIRST_COMMIT)
        floor = full < FIRST_COMMIT ? full : FIRST_COMMIT;
    for (int shift = 0; shift < 48 && room(&spec[i], shift, ps) >= floor; shift++) {
        size_t total = 0;
        for (int j = 0; j < n; j++)
            total += room(&spec[j], shift, ps) + ps;
        void *p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                       0);
        if (p == MAP_FAILED)
            continue;
        s->base = p;
        s->reserved = total;
        s->spec = spec;
        s->n = n;
        s->shift = shift;
        char *at = p;
        for (int j = 0; j < n; j++) {
            s->a[j] = (tg_stable){at, 0, room(&spec[j], shift, ps), 0};
            at += s->a[j].reserved + ps;
        }
        return 0;
    }
    return -1;
}

int32_t tg_stable_limit(const tg_stable_set *s, const tg_stable_spec *spec, int i)
{
    if (!s->base)
        return spec[i].max;
    size_t n = s->a[i].reserved / spec[i].elem;
    return n < (size_t)spec[i].max ? (int32_t)n : spec[i].max;
}

int tg_stable_grow(tg_stable_set *s, const tg_stable_spec *spec, int n, int i, int64_t need,
                   int32_t *cap)
{
    if (need <= *cap)
        return TG_STABLE_OK;
    if (n < 1 || n > TG_STABLE_MAX || i < 0 || i >= n || (s->base && (s->spec != spec || s->n != n)))
        return TG_STABLE_NOMEM; /* a caller's mistake: refused, nothing changed */
    if (need > tg_stable_limit(s, spec, i))
        return TG_STABLE_FULL;
    /* Counted as one allocation by the test hook, which may fail it. */
    if (tg_alloc_hook_fails())
        return TG_STABLE_NOMEM;
    if (!s->base && reserve(s, spec, n, i, (size_t)need) < 0)
        return TG_STABLE_NOMEM;
    if (need > tg_stable_limit(s, spec, i))
        return TG_STABLE_FULL; /* the reservation came out short */
    tg_stable *a = &s->a[i];
    size_t elem = spec[i].elem, max = (size_t)spec[i].max;
    size_t want = round_up((size_t)need * elem, page_size());
    if (want > a->committed) {
        /* Doubling keeps the number of mprotect calls logarithmic. */
        size_t step = a->committed ? a->committed * 2 : FIRST_COMMIT;
        if (want < step)
            want = step;
        if (want > a->reserved)
            want = a->reserved;
        if (mprotect(a->base + a->committed, want - a->committed, PROT_READ | PROT_WRITE) != 0)
            return TG_STABLE_NOMEM;
        a->committed = want;
    } /* else a kept set, committed already: no system call */
    size_t c = a->committed / elem;
    *cap = (int32_t)(c < max ? c : max);
    return TG_STABLE_OK;
}

void tg_stable_zero(tg_stable_set *s, int i, size_t bytes)
{
    size_t n = bytes < s->a[i].dirty ? bytes : s->a[i].dirty;
    if (n)
        memset(s->a[i].base, 0, n);
}

void tg_stable_release(tg_stable_set *s)
{
    if (s->base && !cache_put(s))
        munmap(s->base, s->reserved);
    memset(s, 0, sizeof *s);
}
