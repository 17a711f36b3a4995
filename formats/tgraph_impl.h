/*
 * tgraph_impl.h - what the .tgraph writer, reader, tests and fuzz target
 * share: the container constants and the code tables of the spec in
 * tgraph.h, the checksum, and two entry points below the public API
 * (raw sections out of a graph, raw sections into a file) so a fuzzer can
 * reach the section decoders past the checksums.
 */
#ifndef TG_FORMATS_TGRAPH_IMPL_H
#define TG_FORMATS_TGRAPH_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "../graph/errors.h"
#include "bytes.h"
#include "tgraph.h"

#define FORMAT_MAGIC "\x89TGR\r\n\x1a\n"
#define FORMAT_HEADER_SIZE 32
#define FORMAT_ENTRY_SIZE 40
#define FORMAT_CODEC_ZSTD 1
/* Largest zstd window a reader accepts (log2): bounds zstd's own buffers. */
#define FORMAT_WINDOW_LOG_MAX 23
/* Global caps on a section's raw size: metadata and constants. */
#define FORMAT_MAX_META_RAW ((uint64_t)1 << 30)
#define FORMAT_MAX_CONST_RAW ((uint64_t)1 << 40)
#define FORMAT_NO_STR 0xFFFFFFFFu
#define FORMAT_DATA_ALIGN 64
/* Raw bytes per zstd frame of the constants section. */
#define FORMAT_CONST_CHUNK ((uint64_t)1 << 22)

/* Section ids, also the order sections are written in. */
enum {
    FORMAT_SEC_STRINGS = 1,
    FORMAT_SEC_SYMBOLS,
    FORMAT_SEC_VALUES,
    FORMAT_SEC_NODES,
    FORMAT_SEC_PROVENANCE,
    FORMAT_SEC_GUARDS,
    FORMAT_SEC_SIGNATURE,
    FORMAT_SEC_CONSTANTS,
    FORMAT_SEC_TARGET, /* optional: a file without it has no target */
    FORMAT_SEC_STATES, /* optional: a file without it has no state */
    FORMAT_NSEC = FORMAT_SEC_STATES, /* known ids are 1..FORMAT_NSEC */
    FORMAT_NSEC_REQUIRED = FORMAT_SEC_CONSTANTS /* ids 1..this must be present */
};

/* "strings", ..., or "?" for an unknown id. */
const char *format_section_name(uint32_t id);

/* XXH64 of n bytes (the published algorithm, written here). */
uint64_t format_xxh64(const void *p, size_t n, uint64_t seed);

/* Code tables: enum -> file code, and file code -> enum (-1 if unknown). */
int format_dtype_code(graph_dtype dt);
int format_dtype_from_code(unsigned code, graph_dtype *dt);

/*
 * The other code tables of the spec: entry i is the enum value of file
 * code i, so reordering an enum can never change what a file means.
 */
static const int format_value_kinds[] = {GRAPH_VALUE_INPUT, GRAPH_VALUE_PARAM,
                                         GRAPH_VALUE_CONST, GRAPH_VALUE_INTER,
                                         GRAPH_VALUE_STATE};
static const int format_attr_kinds[] = {GRAPH_ATTR_I64, GRAPH_ATTR_F32,
                                        GRAPH_ATTR_INTS, GRAPH_ATTR_DTYPE,
                                        GRAPH_ATTR_STR};
static const int format_guard_kinds[] = {GRAPH_GUARD_VALUE, GRAPH_GUARD_DECISION,
                                         GRAPH_GUARD_BUFFER, GRAPH_GUARD_SIZE};
static const int format_guard_policies[] = {GRAPH_GUARD_STRICT, GRAPH_GUARD_WARN,
                                            GRAPH_GUARD_OFF};
#define FORMAT_NCODES(table) ((unsigned)(sizeof table / sizeof table[0]))

/* The file code of enum value v in table, or -1. */
static inline int format_code_of(const int *table, unsigned n, int v)
{
    for (unsigned i = 0; i < n; i++)
        if (table[i] == v)
            return (int)i;
    return -1;
}
#define FORMAT_CODE(table, v) format_code_of(table, FORMAT_NCODES(table), (int)(v))

/* zstd contexts allocating through tg_malloc (graph/alloc.h); NULL when
   out of memory.  Freed by ZSTD_freeCCtx/ZSTD_freeDCtx. */
ZSTD_CCtx *format_zstd_cctx(void);
ZSTD_DCtx *format_zstd_dctx(void);

/*
 * Appends one zstd frame of n bytes at level to out: content size and
 * checksum on, window capped at FORMAT_WINDOW_LOG_MAX.  0, or -1.
 */
int format_compress_frame(ZSTD_CCtx *cc, int level, const void *src, size_t n,
                          format_wbuf *out);

/* One value's data as placed in the constants section. */
typedef struct format_blob {
    const void *data;
    uint64_t offset; /* 64-byte aligned, increasing */
    size_t nbytes;
} format_blob;

/* The raw constants bytes [a, b) (data and zero padding) into dst. */
void format_gather_constants(const format_blob *blobs, size_t nblobs, uint64_t a,
                             uint64_t b, uint8_t *dst);
/*
 * Compresses raw constants bytes (blobs, raw in total) as frames of
 * FORMAT_CONST_CHUNK raw bytes each, in parallel; appends to out.  0 or -1.
 */
int format_compress_constants(const format_blob *blobs, size_t nblobs, uint64_t raw,
                              int level, format_wbuf *out);

/* Raw (uncompressed) sections, indexed by id - 1. */
typedef struct format_raw_sections {
    uint8_t *p[FORMAT_NSEC];
    size_t len[FORMAT_NSEC];
} format_raw_sections;

/*
 * Encodes g into raw sections (constants included, materialized).  The
 * caller frees them with format_raw_free.  TG_OK or an error in err.
 */
tg_status format_encode_raw(const graph *g, format_raw_sections *out,
                            char *err, size_t errlen);
void format_raw_free(format_raw_sections *s);

/*
 * Wraps raw sections (any bytes) into a complete file: each is compressed
 * at level, checksummed and listed.  *buf is malloc'd.
 */
tg_status format_pack(const format_raw_sections *s, int level, void **buf,
                      size_t *len, char *err, size_t errlen);

/*
 * Reads the .tgraph file at path into *buf (tg_malloc'd, tg_free it) for
 * format_load_mem, as far as its header declares (plus one byte, to see
 * the end): the magic first, then the header and the section table,
 * checked as format_info_file does, then the sections.  A pipe or device
 * is read alike; a directory is refused.  TG_OK, or the header's error.
 */
tg_status format_read_tgraph(const char *path, uint8_t **buf, size_t *len, char *err,
                             size_t errlen);

#endif
