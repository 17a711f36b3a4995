/*
 * ckpt.h - state checkpoints: the state of a training step (a replay
 * session's parameters, moments, running statistics, generator, step
 * count: replay/replay.h, replay_state_save / replay_state_load) as a file
 * of named tensors apart from the .tgraph, so that training stopped in one
 * process resumes in another.
 *
 *   // example (given: format_ckpt_entry e[2])
 *   char err[512];
 *   if (format_ckpt_save("run.tgstate", "main", e, 2, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   format_ckpt c;
 *   if (format_ckpt_load("run.tgstate", &c, err, sizeof err) == TG_OK) {
 *       for (int32_t i = 0; i < c.n; i++)
 *           printf("%s\n", c.e[i].name);
 *       format_ckpt_free(&c);
 *   }
 *
 * Loading is as strict as .tgraph loading: every count, length, dtype,
 * shape and size is checked against the bytes present before use, the
 * whole file against its checksum first, and every damage is an error
 * naming the file and the byte offset ("run.tgstate: at byte 52: entry 1:
 * dtype code 9 is unknown"); nothing is allocated beyond the file's size.
 * Saving writes a temporary file and renames it over path, so a failed
 * save never destroys the checkpoint it was replacing.
 *
 * ===================== checkpoint version 1 =====================
 * Little-endian throughout.
 *   offset  size
 *     0       8   magic 89 54 47 53 0D 0A 1A 0A  ("\x89TGS\r\n\x1a\n")
 *     8       4   u32 version (1); a reader refuses a newer one
 *    12       4   u32 entry count (<= FORMAT_CKPT_MAX_ENTRIES)
 *    16       8   u64 file size in bytes
 *    24       4   u32 graph name length g (<= 4096); then g bytes
 *    28+g         the entries, back to back, each:
 *                   u32 name length (1..4096); the name's bytes;
 *                   u8 dtype (0 f32, 1 i64, 2 i32, 3 bool); u8 ndim (<= 8);
 *                   u16 0; ndim x i64 dim (>= 0); u64 data bytes
 *                   (numel x dtype size); zero padding to a multiple of 8
 *                   from the file's start; the data
 *   size-8    8   u64 XXH64 (seed 0) of bytes [0, size - 8)
 * Names are unique.  The data after the last entry ends at size - 8.
 * ================================================================
 */
#ifndef TG_FORMATS_CKPT_H
#define TG_FORMATS_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FORMAT_CKPT_VERSION 1
#define FORMAT_CKPT_MAX_ENTRIES (1 << 20)

typedef struct format_ckpt_entry {
    const char *name;
    graph_type type;
    const void *data; /* numel x dtype size bytes */
} format_ckpt_entry;

/* A loaded checkpoint: the graph's name and n entries, whose data point
 * into buf and names into strs (both owned; format_ckpt_free). */
typedef struct format_ckpt {
    const char *graph_name;
    int32_t n;
    format_ckpt_entry *e;
    void *buf;
    char *strs;
} format_ckpt;

/* Saves n entries (names unique, non-empty) under graph_name (may be
 * NULL).  TG_OK, or an error in err. */
TG_API tg_status format_ckpt_save(const char *path, const char *graph_name,
                                  const format_ckpt_entry *e, int32_t n, char *err,
                                  size_t errlen);
TG_API tg_status format_ckpt_save_mem(const char *graph_name, const format_ckpt_entry *e,
                                      int32_t n, void **buf, size_t *len, char *err,
                                      size_t errlen);
/* Loads a checkpoint into *out (zeroed on error).  A file or a pipe;
 * name is for messages (NULL: "<memory>"). */
TG_API tg_status format_ckpt_load(const char *path, format_ckpt *out, char *err,
                                  size_t errlen);
TG_API tg_status format_ckpt_load_mem(const void *buf, size_t len, const char *name,
                                      format_ckpt *out, char *err, size_t errlen);
TG_API void format_ckpt_free(format_ckpt *c);

#ifdef __cplusplus
}
#endif

#endif
