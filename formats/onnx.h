/*
 * onnx.h - ONNX import and export: a graph (graph/graph.h) written as an
 * ONNX model for the rest of the ecosystem (ONNX Runtime, TensorRT,
 * Triton), and ONNX models read into a graph to optimize and replay.
 *
 *   // example (given: graph *g)
 *   char err[512];
 *   if (format_onnx_save(g, "model.onnx", NULL, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   graph *h = format_onnx_load("model.onnx", NULL, err, sizeof err);  // NULL: see err
 *   graph_free(h);
 *
 * docs/ONNX.md says what export writes and import reads: every op of
 * graph/ops.def is exported (a few as several ONNX nodes), at opset
 * FORMAT_ONNX_OPSET, each node's doc_string holding its call site; import
 * reads IR versions 3..13, default-domain opsets FORMAT_ONNX_MIN_OPSET..
 * FORMAT_ONNX_MAX_OPSET, the ops format_onnx_op lists (`tracegraph ops
 * --onnx`: the converter table itself), dtypes f32, i64, i32 and bool,
 * and keeps dynamic dims (dim_param) dynamic where the model's shape
 * arithmetic allows.  Bad input (not a ModelProto, an unsupported op,
 * opset, dtype or attribute value, a dangling name, data that does not
 * match its dims) gives NULL and a message naming the file and the node:
 *   "model.onnx: node 17 'Pool_3' (MaxPool): storage_order 1 is not supported"
 * The loader never trusts a count or a size before checking it against
 * the bytes present (tests/fuzz_onnx.c).  The protobuf code is generated
 * at build time by protoc-c from Debian's onnx.proto; nothing of it
 * appears in this header.
 */
#ifndef TG_FORMATS_ONNX_H
#define TG_FORMATS_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The opset export writes (18 for some ScatterElements: see above), and
 * the range import reads. */
#define FORMAT_ONNX_OPSET 17
#define FORMAT_ONNX_MIN_OPSET 7
#define FORMAT_ONNX_MAX_OPSET 25

typedef struct format_onnx_save_opts {
    int drop_guards; /* export a graph with guards, dropping them */
} format_onnx_save_opts;

/*
 * The defaults of format_onnx_save_opts and format_onnx_load_opts (every
 * field zero), as initializers: format_onnx_load_opts o =
 * FORMAT_ONNX_LOAD_OPTS_INIT; o.params = 1;  C++17, which has no
 * designated initializers, gets value-initialized structs.  Both may grow
 * at the end.
 */
#ifdef __cplusplus
#define FORMAT_ONNX_SAVE_OPTS_INIT format_onnx_save_opts{}
#define FORMAT_ONNX_LOAD_OPTS_INIT format_onnx_load_opts{}
#else
#define FORMAT_ONNX_SAVE_OPTS_INIT {.drop_guards = 0}
#define FORMAT_ONNX_LOAD_OPTS_INIT {.params = 0}
#endif

typedef struct format_onnx_load_opts {
    int params;          /* initializers become params, not constants */
    int64_t dim_default; /* size of a dim_param dim (values < 1: 1) */
    /* Called at load time with a message naming the node: once per ONNX
     * node that a size of a dynamic dim fixes at its traced value (the
     * nodes flagged specialized), naming the dims; and for a graph output
     * declared larger than a ceil_mode pool computes it (a window that
     * would start in the end padding is dropped; the computed size holds).
     * NULL: not called. */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
} format_onnx_load_opts;

/*
 * Writes g to path as an ONNX model (through a temporary file renamed
 * into place; on error no file is left).  g is not changed.  opts may be
 * NULL.  Returns TG_OK, or TG_ERR_NULL / TG_ERR_IO / TG_ERR_NOMEM /
 * TG_ERR_UNSUPPORTED (a guard, an elided constant: see "export" above)
 * with a message in err (errlen bytes, always terminated; err may be
 * NULL).
 */
TG_API tg_status format_onnx_save(const graph *g, const char *path,
                                  const format_onnx_save_opts *opts, char *err,
                                  size_t errlen);

/*
 * Like format_onnx_save, into memory: *buf (free() it) holds *len bytes;
 * on error *buf is NULL and *len 0.
 */
TG_API tg_status format_onnx_save_mem(const graph *g, const format_onnx_save_opts *opts,
                                      void **buf, size_t *len, char *err,
                                      size_t errlen);

/* The largest ONNX model read (2 GiB - 1: protobuf's limit for a message). */
#define FORMAT_ONNX_MAX_BYTES 0x7fffffffull

/*
 * Loads an ONNX model from path; the caller frees the graph with
 * graph_free.  opts may be NULL.  NULL on error, with a message in err
 * (errlen bytes, always terminated; err may be NULL).  A pipe or device
 * is read as a file is, up to FORMAT_ONNX_MAX_BYTES; its first byte must
 * start a protobuf field, which a stream of other bytes fails at once.
 * A directory is refused.
 */
TG_API graph *format_onnx_load(const char *path, const format_onnx_load_opts *opts,
                               char *err, size_t errlen);

/* Loads from len bytes at buf (not kept); name is used in messages. */
TG_API graph *format_onnx_load_mem(const void *buf, size_t len, const char *name,
                                   const format_onnx_load_opts *opts, char *err,
                                   size_t errlen);

/*
 * One ONNX op (default domain) the importer reads, as its converter table
 * has it: what `tracegraph ops --onnx` and docs/ONNX.md list.
 */
typedef struct format_onnx_op_info {
    const char *name;           /* op_type: "Conv" */
    int min_inputs, max_inputs; /* max_inputs -1: any number */
    int max_outputs;            /* outputs a node may name */
    const char *attributes;     /* those it reads, comma-separated; "" none
                                   (any other attribute is refused) */
    int load_time_only;         /* evaluated at load time, on constants only */
} format_onnx_op_info;

/*
 * Fills *out with the i-th op the importer reads (i from 0; the order is
 * the table's, not alphabetical) and returns 1; past the last one, or out
 * NULL, returns 0.  The list is the converter table itself, so it cannot
 * disagree with what format_onnx_load reads.
 */
TG_API int format_onnx_op(int i, format_onnx_op_info *out);

#ifdef __cplusplus
}
#endif

#endif
