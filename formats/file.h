/*
 * file.h - writing a saved file in one piece, for every format writer
 * (.tgraph, ONNX, .npy): the bytes go to a temporary "<path>.tmpXXXXXX"
 * (mkstemp, mode 0644), renamed over path only once it is complete, so a
 * failed save never leaves a half-written file (nor destroys the file it
 * was replacing).  A path that exists and is not a regular file
 * (/dev/stdout, a pipe) is written directly.
 */
#ifndef TG_FORMATS_FILE_H
#define TG_FORMATS_FILE_H

#include <stddef.h>

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

#endif
