/*
 * file.h - files for every format: reading one in steps bounded by its
 * own header (format_src), and writing a saved file in one piece, for
 * every format writer (.tgraph, ONNX, .npy): the bytes go to a temporary "<path>.tmpXXXXXX"
 * (mkstemp, mode 0644), renamed over path only once it is complete, so a
 * failed save never leaves a half-written file (nor destroys the file it
 * was replacing).  A path that exists and is not a regular file
 * (/dev/stdout, a pipe) is written directly.
 */
#ifndef TG_FORMATS_FILE_H
#define TG_FORMATS_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../graph/status.h"
#include "bytes.h"

/*
 * Writes parts[0..n) back to back to path.  Returns TG_OK, or TG_ERR_IO
 * ("<path>: cannot write: <reason>") / TG_ERR_NOMEM with the message in
 * err (errlen bytes; err may be NULL); the temporary file is removed on
 * error.
 */
tg_status format_write_file(const char *path, const format_wbuf *parts, int n, char *err,
                            size_t errlen);

/* format_write_file of the n bytes at p. */
tg_status format_write_bytes(const char *path, const void *p, size_t n, char *err,
                             size_t errlen);

/*
 * A file being read in steps (format_src_open, _fill, _read, _close), so
 * that every loader reads only as far as the bytes already read declare:
 * the magic from the first bytes, then the header, then the size the
 * header gives.  Regular files, pipes and devices are read alike, with
 * read(2): a pipe that sends a few bytes that are not the format's and
 * then stalls is refused at once rather than waited on, and a stream that
 * never ends (/dev/zero) costs no more than its header claims.
 * Directories are refused.
 */
typedef struct format_src {
    const char *name; /* the path, for messages */
    int fd;
    int regular;   /* a regular file, whose ... */
    uint64_t size; /* ... size is the OS's word (0 for others) */
    uint8_t *buf;  /* the bytes read so far (tg_malloc'd), ... */
    size_t len, cap;
    int eof; /* ... and whether they are all there are */
} format_src;

/*
 * Opens path for reading.  TG_OK, or TG_ERR_IO: "<path>: cannot open:
 * <reason>", "<path>: is a directory"; format_src_close is then a no-op.
 */
tg_status format_src_open(format_src *s, const char *path, char *err, size_t errlen);

/*
 * Reads until s->len >= n or the end of the file (s->eof), never past
 * byte n; the buffer grows as bytes arrive.  With magic (mlen bytes), it
 * stops as soon as the bytes read differ from it, so the caller's check
 * of the magic can fail without waiting for more.  A short file is not an
 * error here: the caller compares s->len.  TG_ERR_IO ("<path>: at byte N:
 * read error: ...") or TG_ERR_NOMEM.
 */
tg_status format_src_fill(format_src *s, size_t n, const void *magic, size_t mlen, char *err,
                          size_t errlen);

/*
 * Reads up to n bytes following s->buf's straight into dst; *got gets
 * how many (fewer only at the end of the file).  TG_ERR_IO on a read error.
 */
tg_status format_src_read(format_src *s, void *dst, size_t n, size_t *got, char *err,
                          size_t errlen);

/* Closes the file and frees the buffer (a buffer set to NULL was taken). */
void format_src_close(format_src *s);

#endif
