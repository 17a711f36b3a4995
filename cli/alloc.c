/*
 * alloc.c - the tool's allocator: libc's in the tool, which uses only the
 * public API (it frees what the library hands it with free(), as any
 * caller does).  test_alloc_fail builds the tool's sources into itself
 * with TG_CLI_LIB_ALLOC defined, so that these go through the library's
 * allocator (graph/alloc.h), whose hook it uses to fail each allocation
 * of a `run` or `check` in turn, the tool's own included.
 */
#include <stdlib.h>

#include "cli.h"

#ifdef TG_CLI_LIB_ALLOC
#include "../graph/alloc.h"
void *cli_malloc(size_t n) { return tg_malloc(n); }
void *cli_calloc(size_t n, size_t size) { return tg_calloc(n, size); }
void *cli_aligned_alloc(size_t align, size_t size) { return tg_aligned_alloc(align, size); }
void cli_free(void *p) { tg_free(p); }
#else
void *cli_malloc(size_t n) { return malloc(n); }
void *cli_calloc(size_t n, size_t size) { return calloc(n, size); }
void *cli_aligned_alloc(size_t align, size_t size) { return aligned_alloc(align, size); }
void cli_free(void *p) { free(p); }
#endif
