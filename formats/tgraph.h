/*
 * tgraph.h - the .tgraph file: a graph (graph/graph.h) saved to bytes and
 * loaded back, zstd-compressed, checksummed, and safe to load from an
 * untrusted source.
 *
 *   // example (given: graph *g)
 *   char err[512];
 *   if (format_save(g, "model.tgraph", NULL, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   graph *h = format_load("model.tgraph", err, sizeof err);   // NULL: see err
 *   graph_free(h);
 *
 * Loading checks every count, index, offset, size, shape and string length
 * against the bytes present before using it, allocates only in proportion
 * to the bytes actually present (never by a declared size alone), and
 * runs graph_verify(g, 0) on the result.  A damaged or hostile file gives NULL
 * and a message naming the file, the section and the byte offset:
 *   "model.tgraph: section 'nodes' at byte 1234: node 17 names unknown op 'frobnicate'"
 * Offsets inside a section ("section 'X' at byte N") count from the start
 * of the section's decompressed bytes; offsets of the container ("at file
 * byte N") count from the start of the file.
 *
 * ======================== format version 1 ========================
 *
 * Every integer is little-endian, written byte by byte; i8/i32/i64 are
 * two's complement; f32/f64 are IEEE-754 bit patterns.  A string
 * reference (str) is a u32 index into the strings section, 0xFFFFFFFF for
 * "none".
 *
 * Container:
 *   offset  size
 *     0       8   magic 89 54 47 52 0D 0A 1A 0A  ("\x89TGR\r\n\x1a\n")
 *     8       4   u32 format version (1).  A reader refuses a newer one.
 *    12       4   u32 section count n (1..FORMAT_MAX_SECTIONS)
 *    16       8   u64 file size in bytes
 *    24       8   u64 flags, 0
 *    32    40*n   section table, one entry per section:
 *                   u32 id, u32 codec (1 = zstd), u64 offset,
 *                   u64 stored size, u64 raw (decompressed) size,
 *                   u64 XXH64 (seed 0) of the stored bytes
 *  32+40n     8   u64 XXH64 (seed 0) of bytes [0, 32+40n)
 *  40+40n         the sections' stored bytes, in table order, back to back,
 *                 ending exactly at the file size.
 * Each section's stored bytes are one zstd frame (constants: several, see
 * below) with the content checksum on and the content size set; a frame's
 * window is at most 8 MiB.  With the header checksum, the per-section
 * checksums and the tiling rule, every bit of a file is covered: any
 * single-bit flip is detected.  Readers skip sections of unknown id (room
 * for optional additions); each known id appears once, and the eight
 * first below are required (9, target, and 10, states, are optional).
 *
 * Codes (fixed by the format, independent of the C enums):
 *   value kind  0 input, 1 param, 2 const, 3 inter, 4 state
 *   dtype       0 f32, 1 i64, 2 i32, 3 bool
 *   attr kind   0 i64, 1 f32, 2 ints, 3 dtype, 4 str
 *   guard kind  0 value, 1 decision, 2 buffer, 3 size (index: the dim);
 *               policy 0 strict, 1 warn, 2 off
 *   node flags  bit 0 dead, bit 1 specialized (others must be 0)
 *   value flags bit 0 has data (param/const/state only; others must be 0)
 *
 * Sections (id name: raw content):
 *   1 strings:    u32 count; count x { u32 len; len bytes (no NUL byte) }
 *   2 symbols:    u32 count (<= 127); count x { str name; i64 traced (>= 0) }
 *                 (names unique)
 *   3 values:     u32 count; count x {
 *                   u8 kind; u8 dtype; u8 ndim (<= 8); u8 flags;
 *                   u32 dyn (bit d: dim d dynamic, d < ndim); str name;
 *                   i32 node; i32 out_index (inter: producer and its
 *                   output slot; others: node -1); u64 hash;
 *                   u64 data offset into constants (0 without data);
 *                   ndim x i64 dim (>= 0); ndim x i8 sym }
 *   4 nodes:      u32 count; count x {
 *                   str op name; u32 op version (1..this build's);
 *                   u32 flags; u32 nin; u32 nout; u32 nprov; u32 nattrs;
 *                   nin x i32 value; nout x i32 value; nprov x i32 prov;
 *                   nattrs x { str name; u8 kind; payload } }
 *                 payload by kind: i64 -> i64; f32 -> f32; dtype -> u8
 *                 code; ints -> u32 n (<= 16), n x i64; str -> u32 len
 *                 (< 512), len bytes (no NUL byte).
 *                 Ops and attributes are matched by name.  A missing
 *                 attribute takes its ops.def default; an unknown op, an
 *                 unknown attribute, a kind that differs from ops.def, or
 *                 an op version newer than this build's is an error.
 *   5 provenance: u32 nframes; nframes x { u64 ip; str func; u64 offset;
 *                   str file; i32 line };
 *                 u32 nprovs; nprovs x { str file; i32 line; str func;
 *                   u32 frame0; u32 nframes }  (file, func not none)
 *   6 guards:     u32 count; count x { i32 value; u8 kind; u8 policy;
 *                   u16 0; i64 index; f64 expect; u64 hash; i32 prov }
 *   7 signature:  str graph name; u32 ninputs; ninputs x i32 value;
 *                 u32 noutputs; noutputs x { i32 value; str name }
 *                 (output names present and unique)
 *   8 constants:  the data of every param/const/state with data, each at its
 *                 value's offset: 64-byte aligned, in value order, not
 *                 overlapping, numel * dtype size bytes; every other byte
 *                 (padding, gaps) is zero.  Stored as ceil(raw / 4 MiB)
 *                 zstd frames back to back (one when raw is 0): frame k
 *                 holds raw bytes [4 MiB * k, min(4 MiB * (k + 1), raw)),
 *                 so frames decode independently, in parallel.
 *   9 target:     str target (none: the graph's layout was not planned for
 *                 a target); the name of the target (graph/target.h,
 *                 1 to 47 bytes) the -O3 layout pass planned for:
 *                 replay_compile re-plans when its backend's differs.
 *                 Written by every build since it was added; a file
 *                 without it loads with no target.
 *  10 states:     u32 count; count x { i32 value; i32 next }: each state
 *                 value (kind state, listed once; every state value
 *                 listed) and the value it holds at the end of a run (of
 *                 its type).  Written by every build since it was added
 *                 (count 0 for a graph without state); a reader that
 *                 predates it stops at kind 4 of a training graph's
 *                 values, and loads every other file as before.
 *
 * Data is loaded into 64-byte aligned buffers (2 MiB aligned, as huge
 * pages, from 4 MiB up).  The stored value hash is kept as written (the
 * checksums already vouch for the bytes).  Loading decodes the constants
 * on OpenMP's default number of threads (OMP_NUM_THREADS).
 * ===================================================================
 */
#ifndef TG_FORMATS_TGRAPH_H
#define TG_FORMATS_TGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest format version this build reads and the one it writes. */
#define FORMAT_VERSION 1
/* Most sections a file may list. */
#define FORMAT_MAX_SECTIONS 32

typedef struct format_save_opts {
    int level; /* zstd level, ZSTD_minCLevel()..ZSTD_maxCLevel() (default 3) */
} format_save_opts;

/* The defaults: level 3. */
TG_API format_save_opts format_save_default_opts(void);

/*
 * The same defaults as an initializer (format_save_opts o =
 * FORMAT_SAVE_OPTS_INIT;): by name in C, format_save_default_opts() in
 * C++17.  format_save_opts may grow at the end.
 */
#ifdef __cplusplus
#define FORMAT_SAVE_OPTS_INIT format_save_default_opts()
#else
#define FORMAT_SAVE_OPTS_INIT {.level = 3}
#endif

/*
 * Writes g to path (through a temporary file renamed into place, so a
 * failed save leaves no half-written file).  opts may be NULL for the
 * defaults.  Returns TG_OK, or TG_ERR_IO / TG_ERR_ARG / TG_ERR_NOMEM /
 * TG_ERR_FORMAT (a malformed graph) with a message in err (errlen bytes,
 * always terminated; err may be NULL).
 */
TG_API tg_status format_save(const graph *g, const char *path,
                             const format_save_opts *opts, char *err, size_t errlen);

/*
 * Like format_save, into memory: *buf (the caller frees it with free())
 * holds *len bytes.  On error *buf is NULL and *len 0.
 */
TG_API tg_status format_save_mem(const graph *g, const format_save_opts *opts,
                                 void **buf, size_t *len, char *err, size_t errlen);

/*
 * Loads a graph from path; the caller frees it with graph_free.  NULL on
 * error with a message in err naming the file, the section and the byte.
 */
TG_API graph *format_load(const char *path, char *err, size_t errlen);

/*
 * Loads a graph from len bytes at buf (not kept).  name is used in
 * messages (NULL: "<memory>").
 */
TG_API graph *format_load_mem(const void *buf, size_t len, const char *name,
                              char *err, size_t errlen);

/* One entry of the section table. */
typedef struct format_section_info {
    const char *name; /* "nodes", or "?" for an id this build does not know */
    uint32_t id;
    uint64_t offset;  /* in the file */
    uint64_t stored;  /* compressed bytes */
    uint64_t raw;     /* decompressed bytes */
} format_section_info;

/* What the header says, without decompressing anything. */
typedef struct format_info {
    uint32_t version;
    uint64_t file_size;
    int nsections;
    format_section_info sections[FORMAT_MAX_SECTIONS];
} format_info;

/*
 * Reads and checks the header and section table only (magic, version,
 * header checksum, section bounds).  Cheap: format_info_file reads just
 * the header.  Returns TG_OK, or an error with a message as for loading
 * (a newer version is TG_ERR_UNSUPPORTED).
 */
TG_API tg_status format_info_mem(const void *buf, size_t len, const char *name,
                                 format_info *info, char *err, size_t errlen);
TG_API tg_status format_info_file(const char *path, format_info *info, char *err,
                                  size_t errlen);
/*
 * Reads the .tgraph file at path into *buf (malloc'd: free() it) and *len,
 * as far as its header declares: the magic first, then the header and
 * the section table, checked as format_info_file does, then the sections.
 * A pipe or device is read alike (once: read it with this, then
 * format_info_mem and format_load_mem on the bytes); a directory is
 * refused.  TG_OK, or the header's error with a message in err.
 */
TG_API tg_status format_read_file(const char *path, void **buf, size_t *len, char *err,
                                  size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
