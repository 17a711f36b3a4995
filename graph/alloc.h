/*
 * alloc.h - the one allocator entry point of tracegraph's own code.
 *
 * Every allocation the library makes itself (graph/, eager/, tracer/,
 * optimize/, formats/, replay/ and cli/, including the contexts it
 * hands to zstd and protobuf-c) goes through these functions, never through
 * malloc/calloc/realloc/aligned_alloc/strdup/free directly
 * (tests/test_alloc_fail.c checks the sources).  They are plain malloc,
 * calloc, realloc, aligned_alloc, strdup and free underneath, so memory the
 * library hands to its caller to free() (format_save_mem's buffer, npy
 * data, ...) is still freed with free(), and tg_free is free.
 *
 * A failed allocation is an error of the operation that needed it
 * (TG_ERR_NOMEM with a message), never a silent success with something
 * missing; the few places where the library degrades instead (a cache that
 * cannot grow) say so in their header.
 *
 * Outside this entry point: oneDNN (primitives, scratchpads, its own
 * caches), libunwind, OpenMP's runtime and the OpenCL driver allocate on
 * their own; their failures come back as their error codes, which the
 * library reports, but the test hook below cannot make them fail.
 *
 * Test hook: tg_alloc_hook(n) starts counting the allocations made from
 * now on (by every thread) and, for n > 0, makes the n-th of them fail
 * once (return NULL as malloc would); tg_alloc_hook(0) only counts;
 * tg_alloc_hook(-1) stops counting and disarms.  tg_alloc_hook_count()
 * says how many were counted since the last tg_alloc_hook, and
 * tg_alloc_hook_fired() whether the armed failure happened.  While off,
 * the hook costs one relaxed atomic load and a branch per allocation.
 * tg_free is never counted and never fails.  Memory the library maps
 * itself (graph/stable.c) asks tg_alloc_hook_fails() before each growth,
 * so the hook can fail those too.
 */
#ifndef TG_GRAPH_ALLOC_H
#define TG_GRAPH_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *tg_malloc(size_t n);
void *tg_calloc(size_t count, size_t size);
void *tg_realloc(void *p, size_t n);
/* aligned_alloc with the size rounded up to a multiple of align (C11 asks
   for one); align a power of two, at least sizeof(void *).  Freed by
   tg_free/free. */
void *tg_aligned_alloc(size_t align, size_t n);
char *tg_strdup(const char *s);
void tg_free(void *p);

void tg_alloc_hook(int64_t fail_nth);
uint64_t tg_alloc_hook_count(void);
int tg_alloc_hook_fired(void);
/* Counts one allocation made outside these functions; 1 when the hook
 * fails it (the caller then fails as if it were out of memory). */
int tg_alloc_hook_fails(void);

#endif
