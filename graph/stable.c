/* stable.c - arrays whose elements never move: reserve, then commit. */
#include "stable.h"

#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* The first commit: small graphs touch one page per array at most. */
#define FIRST_COMMIT ((size_t)16384)

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
    size_t floor = round_up(need * elem, ps);
    if (floor < FIRST_COMMIT)
        floor = want < FIRST_COMMIT ? want : FIRST_COMMIT;
    for (;;) {
        void *p = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p != MAP_FAILED) {
            s->base = p;
            s->reserved = want;
            s->committed = 0;
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
    /* Doubling keeps the number of mprotect calls logarithmic. */
    size_t ps = page_size();
    size_t want = round_up((size_t)need * elem, ps);
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

void tg_stable_release(tg_stable *s)
{
    if (s->base)
        munmap(s->base, s->reserved);
    s->base = NULL;
    s->committed = s->reserved = 0;
}
