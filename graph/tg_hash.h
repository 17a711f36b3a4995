/*
 * tg_hash.h - the one way tracegraph includes uthash: out-of-memory is
 * not fatal (uthash's default is exit(-1)), and a failed insert sets
 * tg_hash_oom so the caller can report it.  Include this, never uthash.h.
 */
#ifndef TG_GRAPH_HASH_H
#define TG_GRAPH_HASH_H

#include <stdlib.h>

extern _Thread_local int tg_hash_oom;

#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (tg_hash_oom = 1)
#define uthash_malloc(sz) tg_malloc(sz)
#define uthash_free(ptr, sz) tg_free(ptr)

#include "alloc.h"
#include <uthash.h>

#endif
