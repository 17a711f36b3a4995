/* stable.c - arrays whose elements never move: reserve, then commit. */
#include "stable.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* The first commit: small graphs touch a few pages per array at most. */
#define FIRST_COMMIT ((size_t)16384)

/*
 * Released arrays kept for reuse: a program that makes and frees small
 * graphs in a loop (a trace per call, a load per request) would otherwise
 * pay mmap, mprotect, first-touch page faults and munmap for each of a
 * graph's arrays, every time (tens of microseconds for a graph of 700
 * nodes, most of it first-touch page faults).  An array with at most
 * KEEP_BYTES committed goes here on release, the oldest ones leaving (and
 * unmapped) when that makes more than KEEP_COUNT arrays or KEEP_TOTAL
 * bytes; a growth that must reserve takes one of the same reservation
 * size, its committed pages as they were (not zeroed: every writer of a
 * record writes it whole), and continues from there.
 */
#define KEEP_COUNT 64
#define KEEP_BYTES ((size_t)1 << 20)
#define KEEP_TOTAL ((size_t)8 << 20)
static struct {
    pthread_mutex_t lock;
    int n;
    size_t bytes;
    tg_stable kept[KEEP_COUNT];
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

/*
 * A kept reservation of exactly reserved bytes into s, for a first growth
 * to need bytes; 0 or -1 (none).  Of those that hold need committed, the
 * smallest, else the largest: pages the earlier array touched are warm,
 * and a first touch costs a page fault (about 1 us each here).
 */
static int cache_take(tg_stable *s, size_t reserved, size_t need)
{
    int best = -1;
    cache_lock();
    for (int i = 0; i < cache.n; i++) {
        const tg_stable *k = &cache.kept[i];
        if (k->reserved != reserved)
            continue;
        size_t have = k->committed;
        if (best < 0)
            best = i;
        else {
            size_t b = cache.kept[best].committed;
            if (b < need ? have > b : have >= need && have < b)
                best = i;
        }
    }
    if (best >= 0) {
        *s = cache.kept[best];
        s->dirty = s->committed;
        memmove(&cache.kept[best], &cache.kept[best + 1],
                sizeof *cache.kept * (size_t)(cache.n - 1 - best));
        cache.n--;
        cache.bytes -= s->committed;
    }
    pthread_mutex_unlock(&cache.lock);
    return best >= 0 ? 0 : -1;
}

/* 1 if s went into the cache (the caller forgets it), 0 otherwise.  A
 * full cache unmaps its oldest entries to make room (kept[] is in order of
 * release), so it follows what the program makes now. */
static int cache_put(const tg_stable *s)
{
    if (s->committed > KEEP_BYTES)
        return 0;
    tg_stable old[KEEP_COUNT];
    int nold = 0;
    cache_lock();
    while (cache.n > 0 &&
           (cache.n == KEEP_COUNT || cache.bytes + s->committed > KEEP_TOTAL)) {
        old[nold++] = cache.kept[0];
        cache.bytes -= cache.kept[0].committed;
        memmove(&cache.kept[0], &cache.kept[1], sizeof *cache.kept * (size_t)--cache.n);
    }
    cache.kept[cache.n++] = *s;
    cache.bytes += s->committed;
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < nold; i++)
        munmap(old[i].base, old[i].reserved);
    return 1;
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* Reserves room for max elements, or less (down to need) where the
 * address space is short. */
static int reserve(tg_stable *s, size_t elem, size_t need, int32_t max)
{
    size_t ps = page_size();
    size_t want = round_up((size_t)max * elem, ps);
    if (cache_take(s, want, need * elem) == 0)
        return 0;
    size_t floor = round_up(need * elem, ps);
    if (floor < FIRST_COMMIT)
        floor = want < FIRST_COMMIT ? want : FIRST_COMMIT;
    for (;;) {
        void *p = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p != MAP_FAILED) {
            s->base = p;
            s->reserved = want;
            s->committed = s->dirty = 0;
            return 0;
        }
        if (want <= floor)
            return -1;
        want = round_up(want / 2, ps);
        if (want < floor)
            want = floor;
    }
}

int32_t tg_stable_limit(const tg_stable *s, size_t elem, int32_t max)
{
    if (!s->base)
        return max;
    size_t n = s->reserved / elem;
    return n < (size_t)max ? (int32_t)n : max;
}

int tg_stable_grow(tg_stable *s, size_t elem, int64_t need, int32_t max, int32_t *cap)
{
    if (need <= *cap)
        return TG_STABLE_OK;
    if (need > tg_stable_limit(s, elem, max))
        return TG_STABLE_FULL;
    /* Counted as one allocation by the test hook, which may fail it. */
    if (tg_alloc_hook_fails())
        return TG_STABLE_NOMEM;
    if (!s->base && reserve(s, elem, (size_t)need, max) < 0)
        return TG_STABLE_NOMEM;
    if (need > tg_stable_limit(s, elem, max))
        return TG_STABLE_FULL; /* the reservation came out short */
    size_t ps = page_size();
    size_t want = round_up((size_t)need * elem, ps);
    if (want <= s->committed) { /* a kept reservation, committed already */
        size_t n = s->committed / elem;
        *cap = n < (size_t)max ? (int32_t)n : max;
        return TG_STABLE_OK;
    }
    /* Doubling keeps the number of mprotect calls logarithmic. */
    size_t step = s->committed ? s->committed * 2 : FIRST_COMMIT;
    if (want < step)
        want = step;
    if (want > s->reserved)
        want = s->reserved;
    if (mprotect(s->base + s->committed, want - s->committed, PROT_READ | PROT_WRITE) != 0)
        return TG_STABLE_NOMEM;
    s->committed = want;
    size_t n = want / elem;
    *cap = n < (size_t)max ? (int32_t)n : max;
    return TG_STABLE_OK;
}

void tg_stable_zero(tg_stable *s, size_t bytes)
{
    size_t n = bytes < s->dirty ? bytes : s->dirty;
    if (n)
        memset(s->base, 0, n);
}

void tg_stable_release(tg_stable *s)
{
    if (s->base && !cache_put(s))
        munmap(s->base, s->reserved);
    s->base = NULL;
    s->committed = s->reserved = s->dirty = 0;
}
