/*
 * file.h - files for every format: reading one whole, safely, and
 * writing a saved file in one piece, for every format writer
 * (.tgraph, ONNX, .npy): the bytes go to a temporary "<path>.tmpXXXXXX"
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
 * Reads all of stream f (at most max bytes) into *buf (malloc'd, free()
 * it; never NULL on success), growing as bytes actually arrive, from a
 * first buffer of hint bytes (0: 64 KiB; the OS's size of a regular
 * file, never a size a file declares).  name is used in messages.
 * TG_OK, or TG_ERR_IO ("<name>: read error: ...") / TG_ERR_NOMEM.
 */
tg_status format_read_stream(FILE *f, const char *name, size_t max, size_t hint, uint8_t **buf,
                             size_t *len, char *err, size_t errlen);

/*
 * Reads the file at path (at most its first max bytes) into *buf, as
 * format_read_stream; *size (may be NULL) gets the file's size for a
 * regular file, else the bytes read.  Errors: "<path>: cannot open:
 * <reason>", "<path>: is a directory", read errors, TG_ERR_NOMEM.
 */
tg_status format_read_file(const char *path, size_t max, uint8_t **buf, size_t *len,
                           uint64_t *size, char *err, size_t errlen);

#endif
