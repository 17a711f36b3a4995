/* alloc.c - the library's allocator entry point and its test hook. */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int hook_on;
static atomic_uint_fast64_t hook_count;
static atomic_int_fast64_t hook_fail_at; /* 0: none armed */
static atomic_int hook_fired;

void tg_alloc_hook(int64_t fail_nth)
{
    atomic_store(&hook_on, 0);
    atomic_store(&hook_count, 0);
    atomic_store(&hook_fail_at, fail_nth > 0 ? fail_nth : 0);
    atomic_store(&hook_fired, 0);
    if (fail_nth >= 0)
        atomic_store(&hook_on, 1);
}

uint64_t tg_alloc_hook_count(void) { return atomic_load(&hook_count); }

int tg_alloc_hook_fired(void) { return atomic_load(&hook_fired); }

/* Counts one allocation; 1 when it is the armed one (which fails once). */
static int hook_hit(void)
{
    uint_fast64_t k = atomic_fetch_add(&hook_count, 1) + 1;
    int_fast64_t at = atomic_load(&hook_fail_at);
    if (at > 0 && (uint_fast64_t)at == k &&
        atomic_compare_exchange_strong(&hook_fail_at, &at, 0)) {
        atomic_store(&hook_fired, 1);
        return 1;
    }
    return 0;
}

#define HOOK_FAILS()                                                       \
    (atomic_load_explicit(&hook_on, memory_order_relaxed) && hook_hit())

int tg_alloc_hook_fails(void) { return HOOK_FAILS(); }

void *tg_malloc(size_t n) { return HOOK_FAILS() ? NULL : malloc(n); }

void *tg_calloc(size_t count, size_t size)
{
    return HOOK_FAILS() ? NULL : calloc(count, size);
}

void *tg_realloc(void *p, size_t n)
{
    return HOOK_FAILS() ? NULL : realloc(p, n);
}

void *tg_aligned_alloc(size_t align, size_t n)
{
    if (HOOK_FAILS())
        return NULL;
    size_t r = (n + align - 1) & ~(align - 1);
    if (r < n)
        return NULL;
    return aligned_alloc(align, r ? r : align);
}

char *tg_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tg_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void tg_free(void *p) { free(p); }
