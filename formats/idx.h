/*
 * idx.h - IDX files, the format of MNIST and Fashion-MNIST, plain or
 * gzip-compressed: one array read into memory, and a pair of images and
 * labels files held as a dataset that fills training batches.
 *
 *   // example (given: const int64_t *order)
 *   // Fashion-MNIST's training set, as Debian's dataset-fashion-mnist installs it;
 *   // order: 64 image indices, e.g. from a seeded permutation of 0..count-1.
 *   format_idx_dataset *train;
 *   char err[512];
 *   if (format_idx_dataset_load_dir(FORMAT_IDX_FASHION_MNIST, "train", 10, &train, err,
 *                                   sizeof err) != TG_OK) {
 *       fprintf(stderr, "%s\n", err);
 *       return 1;
 *   }
 *   int64_t h, w;
 *   format_idx_dataset_shape(train, &h, &w);          // 28, 28
 *   float *x = (float *)malloc((size_t)(64 * h * w) * sizeof(float));
 *   int64_t y[64];
 *   if (x && format_idx_dataset_batch(train, order, 64, x, y, err, sizeof err) == TG_OK)
 *       printf("%lld images; the first of this batch is class %lld\n",
 *              (long long)format_idx_dataset_count(train), (long long)y[0]);
 *   // x is a [64,1,28,28] f32 batch in [0,1]: eager_from_data(GRAPH_F32, ...) or a
 *   // replay_tensor takes it as it is.
 *   free(x);
 *   format_idx_dataset_free(train);
 *
 * The file (Y. LeCun's MNIST page; every number big-endian):
 *   offset  size
 *     0       2   zero
 *     2       1   element type: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32,
 *                 0x0D f32, 0x0E f64
 *     3       1   ndim (1..8 are read)
 *     4   4*ndim  the dims, u32 each
 *   then the elements, row-major, exactly numel * size bytes.
 * A file that starts with gzip's magic (1f 8b) is decompressed as it is
 * read (zlib; concatenated gzip members are one stream, as gunzip reads
 * them); a name need not end in .gz.
 *
 * Loading converts the elements into a tracegraph dtype: f32 from any
 * element type (f64 rounded to nearest; i32 beyond 2^24 rounded), optionally
 * scaled (FORMAT_IDX_SCALE: u8 x becomes x / 255.0f, as torchvision's
 * ToTensor does, so pixels are in [0,1]); i64 or i32 from the integer
 * types (a float file is refused rather than truncated).  Labels load as
 * i64, the class indices cross-entropy takes.
 *
 * Loading is safe on untrusted input.  The header is checked first: the
 * magic, the type, 1..8 dims, their product within GRAPH_MAX_NUMEL, and
 * the data size against the file: a plain file must hold exactly the
 * header's bytes, a gzip file no more than deflate's largest ratio
 * (1032:1) of its compressed size.  Memory then follows the bytes actually
 * decompressed (grown as they arrive, never past the header's size), so a
 * small file cannot make the reader allocate what it does not hold, and a
 * gzip stream from a pipe is read no further than the header's size needs.
 * Every damage is an error naming the file and the byte: "at byte N" in a
 * plain file, "at decompressed byte N" inside a gzip stream's IDX data,
 * "at file byte N" for the gzip stream itself, e.g.
 *   "train.idx: at byte 16: the data is truncated: [60000,28,28] of u8
 *    needs 47040000 bytes, the file has 1000"
 *   "train.gz: at file byte 8211: gzip error: invalid block type"
 */
#ifndef TG_FORMATS_IDX_H
#define TG_FORMATS_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where Debian's dataset-fashion-mnist puts the four files. */
#define FORMAT_IDX_FASHION_MNIST "/usr/share/datasets/fashion-mnist"

/* The element types of IDX (the third byte of the file). */
typedef enum format_idx_type {
    FORMAT_IDX_U8 = 0x08,
    FORMAT_IDX_I8 = 0x09,
    FORMAT_IDX_I16 = 0x0B,
    FORMAT_IDX_I32 = 0x0C,
    FORMAT_IDX_F32 = 0x0D,
    FORMAT_IDX_F64 = 0x0E
} format_idx_type;

/* What an IDX file holds (format_idx_inspect). */
typedef struct format_idx_info {
    format_idx_type type;
    int32_t ndim;
    int64_t dim[GRAPH_MAX_DIMS];
    int gzip;            /* 1: gzip-compressed */
    uint64_t file_bytes; /* the bytes read from the file (compressed ones for gzip) */
    uint64_t idx_bytes;  /* header and data as IDX (decompressed) */
} format_idx_info;

/* format_idx_load's flag: u8 elements to f32 as x / 255.0f (dt GRAPH_F32 only). */
#define FORMAT_IDX_SCALE 1u

/*
 * Loads the array in path (plain or gzip) as dtype dt (GRAPH_F32,
 * GRAPH_I64 or GRAPH_I32: see the top of this file), with flags 0 or
 * FORMAT_IDX_SCALE.  On TG_OK *type holds dt and the file's dims, and
 * *data a 64-byte aligned buffer of numel * dtype size bytes, which the
 * caller frees with free().  On error *data is NULL and the status is
 * TG_ERR_IO (cannot open or read), TG_ERR_FORMAT (damaged: bad magic,
 * truncated, trailing bytes, a gzip error), TG_ERR_UNSUPPORTED (an
 * element type that does not convert to dt, more than 8 dims), TG_ERR_ARG
 * (dt or flags) or TG_ERR_NOMEM, with a message in err (errlen bytes,
 * always terminated when errlen > 0; err may be NULL).
 */
TG_API tg_status format_idx_load(const char *path, graph_dtype dt, unsigned flags,
                                 graph_type *type, void **data, char *err, size_t errlen);

/* Like format_idx_load, from len bytes at buf (plain or gzip); name is
 * used in messages (NULL: "<memory>"). */
TG_API tg_status format_idx_load_mem(const void *buf, size_t len, const char *name,
                                     graph_dtype dt, unsigned flags, graph_type *type,
                                     void **data, char *err, size_t errlen);

/*
 * Reads the whole file and checks it as format_idx_load does (every byte
 * decompressed, the gzip checksums compared), keeping only its header:
 * *info says what it holds.  Uses a fixed amount of memory whatever the
 * file's size.  The errors of format_idx_load.
 */
TG_API tg_status format_idx_inspect(const char *path, format_idx_info *info, char *err,
                                    size_t errlen);

/* Like format_idx_inspect, from len bytes at buf. */
TG_API tg_status format_idx_inspect_mem(const void *buf, size_t len, const char *name,
                                        format_idx_info *info, char *err, size_t errlen);

/* "u8", "i8", "i16", "i32", "f32", "f64"; "?" for another value. */
TG_API const char *format_idx_type_name(format_idx_type t);

/*
 * A dataset: n images (an IDX file of u8 [n, rows, cols]) and their n
 * labels (u8 [n]), held in memory as bytes (47 MB for Fashion-MNIST's
 * 60,000 training images), converted batch by batch.
 */
typedef struct format_idx_dataset format_idx_dataset;

/*
 * Loads the images file and the labels file (each plain or gzip).  With
 * classes > 0 every label must be below it (10 for MNIST and
 * Fashion-MNIST); 0 checks nothing.  On TG_OK *ds holds the dataset (free
 * it with format_idx_dataset_free); on error *ds is NULL, with the errors
 * of format_idx_load and: images that are not u8 with 3 dims, labels not u8
 * with 1 dim (TG_ERR_FORMAT), counts that differ, a label outside
 * 0..classes-1 (TG_ERR_FORMAT, at its byte), classes < 0 (TG_ERR_ARG).
 */
TG_API tg_status format_idx_dataset_load(const char *images, const char *labels,
                                         int64_t classes, format_idx_dataset **ds, char *err,
                                         size_t errlen);

/*
 * Loads the split ("train" or "t10k") of an MNIST-style directory:
 * DIR/SPLIT-images-idx3-ubyte and DIR/SPLIT-labels-idx1-ubyte, each with
 * ".gz" or without (the first that exists), as format_idx_dataset_load.
 * A missing file is TG_ERR_IO naming both names looked for.
 */
TG_API tg_status format_idx_dataset_load_dir(const char *dir, const char *split,
                                             int64_t classes, format_idx_dataset **ds,
                                             char *err, size_t errlen);

/* The number of images (and labels); 0 for NULL. */
TG_API int64_t format_idx_dataset_count(const format_idx_dataset *ds);

/* Each image's rows and columns (28, 28 for MNIST); either may be NULL. */
TG_API void format_idx_dataset_shape(const format_idx_dataset *ds, int64_t *rows,
                                     int64_t *cols);

/*
 * Fills a batch of the n images at indices[0..n): images gets n * rows *
 * cols f32 (row-major: the bytes of a [n,1,rows,cols] or [n,rows*cols]
 * tensor), each pixel x / 255.0f; labels gets n i64.  Either may be NULL
 * to skip it.  An index outside 0..count-1 is TG_ERR_ARG ("index 3 of the
 * batch is 60000, the dataset has 60000 images"), with nothing written;
 * ds or indices NULL (n > 0): TG_ERR_NULL; n < 0: TG_ERR_ARG.
 */
TG_API tg_status format_idx_dataset_batch(const format_idx_dataset *ds, const int64_t *indices,
                                          int64_t n, float *images, int64_t *labels, char *err,
                                          size_t errlen);

/* Frees the dataset (NULL: nothing). */
TG_API void format_idx_dataset_free(format_idx_dataset *ds);

#ifdef __cplusplus
}
#endif

#endif
