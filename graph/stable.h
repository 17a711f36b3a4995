/*
 * stable.h - arrays whose elements never move (internal).
 *
 * A stable array is one reserved range of address space, mapped with no
 * access (mmap PROT_NONE, MAP_NORESERVE: no memory, no commit charge),
 * of which a growing prefix is made readable and writable (mprotect) as
 * the array grows.  The array is contiguous, so a[i] is a plain index,
 * and an element keeps its address until tg_stable_release: a pointer
 * into it stays valid across any growth.  The graph keeps every one of
 * its arrays in one (graph_impl.h); docs/ARCHITECTURE.md, "Graph storage",
 * says why this and not chunks or ids.
 *
 * Reservation is lazy: an array that never grows holds no mapping.  The
 * first growth reserves room for max elements; where the address space
 * will not give that much (RLIMIT_AS, a process with thousands of live
 * graphs), it halves the request down to the growth asked for, and the
 * array then holds at most what it got (tg_stable_limit): growing past it
 * is TG_STABLE_FULL, an error, never a move.  A commit that the kernel
 * refuses (overcommit accounting, ENOMEM), and a growth that the
 * allocation hook (graph/alloc.h) fails, is TG_STABLE_NOMEM; the array is
 * unchanged either way.  Committed memory is returned at release only.
 *
 * Release keeps up to 64 arrays of at most 1 MiB committed each (8 MiB in
 * all) for the next reservation of the same size, so making and freeing
 * small graphs in a loop costs no system calls (stable.c).  What a growth
 * commits is therefore zero when the pages are fresh but may hold an
 * earlier array's bytes: write every element before reading it.
 */
#ifndef TG_GRAPH_STABLE_H
#define TG_GRAPH_STABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tg_stable {
    char *base;       /* NULL until the first growth */
    size_t committed; /* bytes from base readable and writable */
    size_t reserved;  /* bytes of address space held from base */
    size_t dirty;     /* bytes from base that may hold an earlier array's
                         data when it was taken from the cache; the rest
                         of what is committed reads zero until written */
} tg_stable;

enum { TG_STABLE_OK = 0, TG_STABLE_NOMEM = -1, TG_STABLE_FULL = -2 };

/*
 * Makes room for at least need elements of elem bytes (elem at most a
 * page), reserving room for max of them on the first call; *cap becomes
 * the elements committed.  0, TG_STABLE_NOMEM or TG_STABLE_FULL.
 */
int tg_stable_grow(tg_stable *s, size_t elem, int64_t need, int32_t max, int32_t *cap);
/* The most elements of elem bytes s can hold: max before it reserved. */
int32_t tg_stable_limit(const tg_stable *s, size_t elem, int32_t max);
/* Zeroes the first bytes of s (committed): only what s->dirty says may
 * not be zero already, so a fresh array costs nothing. */
void tg_stable_zero(tg_stable *s, size_t bytes);
/* Unmaps s (or keeps it for reuse) and zeroes it. */
void tg_stable_release(tg_stable *s);

#endif
