/*
 * stable.h - arrays whose elements never move (internal).
 *
 * A stable set is up to TG_STABLE_MAX arrays in one reserved range of
 * address space, mapped with no access (mmap PROT_NONE, MAP_NORESERVE: no
 * memory, no commit charge).  Each array has its own sub-range, room for
 * its maximum count, followed by one guard page; a growing prefix of it
 * is made readable and writable (mprotect) as the array grows.  An array
 * is contiguous, so a[i] is a plain index, and an element keeps its
 * address until tg_stable_release: a pointer into it stays valid across
 * any growth.  The graph keeps all its arrays in one set (graph_impl.h);
 * docs/ARCHITECTURE.md, "Graph storage", says why this and not chunks or
 * ids.
 *
 * Reservation is lazy: a set whose arrays never grow holds no mapping.
 * The first growth of any of its arrays reserves room for every array's
 * maximum (one mmap); where the address space will not give that much
 * (RLIMIT_AS, a process with thousands of live graphs), every array's
 * room halves together until the set fits, down to what that growth
 * needs, and each array then holds at most what it got (tg_stable_limit):
 * growing past it is TG_STABLE_FULL, an error, never a move.  A commit
 * that the kernel refuses (overcommit accounting, ENOMEM), and a growth
 * that the allocation hook (graph/alloc.h) fails, is TG_STABLE_NOMEM; the
 * set is unchanged either way.  Committed memory is returned at release
 * only.
 *
 * Release keeps up to 16 whole sets of at most 2 MiB committed each (8 MiB
 * in all) for the next set of the same spec, their arrays committed as
 * they were, so making, cloning and freeing small graphs costs no system
 * calls once one was freed (stable.c).  What a growth commits is
 * therefore zero when the pages are fresh but may hold an earlier set's
 * bytes: write every element before reading it.  Under AddressSanitizer a
 * kept set's committed bytes are poisoned until it is taken again, so a
 * read through a freed graph's pointer is still reported.
 */
#ifndef TG_GRAPH_STABLE_H
#define TG_GRAPH_STABLE_H

#include <stddef.h>
#include <stdint.h>

/* One array of a set: elements of elem bytes (at most a page), at most
 * max of them.  A set's spec is a static table: kept sets are reused by
 * sets of the same table. */
typedef struct tg_stable_spec {
    size_t elem;
    int32_t max;
} tg_stable_spec;

enum { TG_STABLE_MAX = 8 };

typedef struct tg_stable {
    char *base;       /* NULL until the set is reserved */
    size_t committed; /* bytes from base readable and writable */
    size_t reserved;  /* bytes of address space for this array from base */
    size_t dirty;     /* bytes from base that may hold an earlier set's
                         data when it was taken from the cache; the rest
                         of what is committed reads zero until written */
} tg_stable;

typedef struct tg_stable_set {
    char *base;                 /* the reservation; NULL until the first growth */
    size_t reserved;            /* its bytes */
    const tg_stable_spec *spec; /* the arrays, from the first growth */
    int n;                      /* how many */
    int shift;                  /* each array's room is its maximum >> shift
                                   (0 unless the address space was short) */
    tg_stable a[TG_STABLE_MAX];
} tg_stable_set;

enum { TG_STABLE_OK = 0, TG_STABLE_NOMEM = -1, TG_STABLE_FULL = -2 };

/*
 * Makes room for at least need elements in array i of s (spec: the set's
 * n arrays, the same table at every call), reserving the whole set on its
 * first growth; *cap becomes the elements committed in array i.  0,
 * TG_STABLE_NOMEM or TG_STABLE_FULL.
 */
int tg_stable_grow(tg_stable_set *s, const tg_stable_spec *spec, int n, int i, int64_t need,
                   int32_t *cap);
/* The most elements array i of s can hold: spec[i].max before it reserved. */
int32_t tg_stable_limit(const tg_stable_set *s, const tg_stable_spec *spec, int i);
/* Zeroes the first bytes of array i (committed): only what its dirty says
 * may not be zero already, so a fresh array costs nothing. */
void tg_stable_zero(tg_stable_set *s, int i, size_t bytes);
/* Unmaps s (or keeps it for reuse) and zeroes it. */
void tg_stable_release(tg_stable_set *s);

#endif
