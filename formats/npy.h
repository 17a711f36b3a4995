/*
 * npy.h - NumPy .npy files: one array, read and written as NumPy does.
 *
 *   // example
 *   graph_type t;
 *   void *data;
 *   char err[512];
 *   if (format_npy_load("x.npy", &t, &data, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   else if (format_npy_save("y.npy", &t, data, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   free(data);                                    // NULL after a failed load
 *
 * The file (format versions 1.0, 2.0 and 3.0 are read; 1.0 is written):
 *   offset  size
 *     0       6   magic "\x93NUMPY"
 *     6       2   major, minor version (1.0, 2.0 or 3.0)
 *     8     2|4   header length H, little-endian (u16 for 1.0, u32 after)
 *   10|12     H   the header: a Python dict literal, ASCII (3.0: UTF-8),
 *                 padded with spaces and ending in '\n', e.g.
 *                 {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *   then the elements, C (row-major) order, exactly numel * itemsize bytes.
 *
 * dtypes: '<f4' f32, '<i8' i64, '<i4' i32, '|b1' bool.  Anything else is
 * refused with TG_ERR_UNSUPPORTED and a hint (e.g. float64 arrays: save
 * a.astype(np.float32)).  '|u1' (uint8) is refused too rather than read as
 * bool: an image of bytes 0..255 is not a mask, and reading it as one would
 * silently change its meaning.  Bool elements must be 0 or 1, as NumPy
 * writes them.  fortran_order True is refused (save
 * np.ascontiguousarray(a)) unless at most one dim exceeds 1 (then both
 * orders are the same bytes).  At most GRAPH_MAX_DIMS dims.
 *
 * Loading is safe on untrusted input: the header length, every dim, the
 * element count and the data size are checked against the bytes present
 * (with overflow checks) before anything is allocated or read, so a
 * hostile file can neither crash the reader nor make it allocate more
 * than the file holds.  Trailing bytes after the data are an error.
 * Errors name the file and the byte offset:
 *   "x.npy: at byte 64: the data is truncated: shape (2, 3) of '<f4' needs
 *    24 bytes, the file has 20"
 *
 * Writing produces the bytes current NumPy's np.save writes: keys sorted,
 * repr() of the shape, 21 - len(repr(shape[0])) spare spaces for in-place
 * growth, then spaces and '\n' so the data starts at a multiple of 64.
 */
#ifndef TG_FORMATS_NPY_H
#define TG_FORMATS_NPY_H

#include <stddef.h>

#include "../graph/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Loads the array in path.  On TG_OK *type holds its dtype and shape and
 * *data a 64-byte aligned buffer of numel * dtype size bytes (never NULL,
 * even for zero elements), which the caller frees with free().  On error
 * *data is NULL and the status is TG_ERR_IO (cannot open or read),
 * TG_ERR_FORMAT (malformed), TG_ERR_UNSUPPORTED (a valid .npy this build
 * does not read: dtype, version, Fortran order, too many dims) or
 * TG_ERR_NOMEM, with a message in err (errlen bytes, always terminated
 * when errlen > 0; err may be NULL).
 */
TG_API tg_status format_npy_load(const char *path, graph_type *type, void **data,
                                 char *err, size_t errlen);

/* Like format_npy_load, from len bytes at buf; name is used in messages
 * (NULL: "<memory>"). */
TG_API tg_status format_npy_load_mem(const void *buf, size_t len, const char *name,
                                     graph_type *type, void **data, char *err,
                                     size_t errlen);

/*
 * Writes numel(type) elements of data (row-major) to path as a version 1.0
 * .npy file, through a temporary file renamed into place.  data may be
 * NULL only for zero elements.  Returns TG_OK, TG_ERR_ARG (invalid type)
 * or TG_ERR_IO, with a message in err.
 */
TG_API tg_status format_npy_save(const char *path, const graph_type *type,
                                 const void *data, char *err, size_t errlen);

/* Like format_npy_save, into memory: *buf (free() it) holds *len bytes. */
TG_API tg_status format_npy_save_mem(const graph_type *type, const void *data,
                                     void **buf, size_t *len, char *err,
                                     size_t errlen);

/* The NumPy descr of dt ("<f4", "<i8", "<i4", "|b1"). */
TG_API const char *format_npy_descr(graph_dtype dt);

#ifdef __cplusplus
}
#endif

#endif
