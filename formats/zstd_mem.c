/* zstd_mem.c - zstd contexts whose memory comes from tg_malloc/tg_free. */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem, ZSTD_create*_advanced */
#include <zstd.h>

#include "../graph/alloc.h"
#include "tgraph_impl.h"

static void *zmem_alloc(void *opaque, size_t n)
{
    (void)opaque;
    return tg_malloc(n);
}

static void zmem_free(void *opaque, void *p)
{
    (void)opaque;
    tg_free(p);
}

static const ZSTD_customMem zmem = {zmem_alloc, zmem_free, NULL};

ZSTD_CCtx *format_zstd_cctx(void) { return ZSTD_createCCtx_advanced(zmem); }

ZSTD_DCtx *format_zstd_dctx(void) { return ZSTD_createDCtx_advanced(zmem); }
