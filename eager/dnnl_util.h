/*
 * dnnl_util.h - the oneDNN glue of the CPU kernels (kernels_matmul.c,
 * kernels_conv.c): one CPU engine per process, one stream per thread, the
 * thread count oneDNN sees, readable error text, and a helper that runs
 * one primitive on caller-owned buffers.  Also the small attribute-list
 * helpers the conv and pool kernels share.  Internal to eager/ and the
 * replay runtime's kernels; not part of the public API.
 *
 * Caching.  Kernels build the operation descriptor and ask oneDNN for the
 * primitive on every call.  oneDNN's primitive cache (capacity 1024 by
 * default; ONEDNN_PRIMITIVE_CACHE_CAPACITY) returns the already-compiled
 * primitive for a descriptor it has seen with the same thread count, so a
 * repeated call costs about 2 us of lookup, not a JIT compile (measured:
 * first 64x784x512 matmul ~1.6 ms of setup, later calls ~2.7 us).
 */
#ifndef TG_EAGER_DNNL_UTIL_H
#define TG_EAGER_DNNL_UTIL_H

#include <oneapi/dnnl/dnnl.h>

#include "kernel.h"

/* A sentence for a dnnl status ("unimplemented: no implementation ..."). */
const char *eager_dnnl_status_str(dnnl_status_t s);

/*
 * The process-wide CPU engine, made on first use (thread-safe) and kept
 * until exit.  Returns dnnl_success and sets *engine, or the creation
 * error (every later call returns the same error).
 */
dnnl_status_t eager_dnnl_engine(dnnl_engine_t *engine);

/*
 * This thread's stream on the engine, made on first use and destroyed when
 * the thread exits.  Returns dnnl_success and sets *stream, or an error.
 */
dnnl_status_t eager_dnnl_stream(dnnl_stream_t *stream);

/*
 * Sets the OpenMP thread count of the calling thread (oneDNN's OpenMP
 * build reads omp_get_max_threads() when it creates and when it runs a
 * primitive) and returns the previous count, for eager_dnnl_set_threads
 * again afterwards, so the caller's own OpenMP setting is left untouched.
 */
int eager_dnnl_set_threads(int n);

/* Records "oneDNN <what> failed: <status text>"; returns TG_ERR_BACKEND. */
tg_status eager_dnnl_fail(const eager_kargs *a, const char *what,
                          dnnl_status_t s);

/* One argument of a primitive: its DNNL_ARG_* index, layout and buffer. */
typedef struct eager_dnnl_arg {
    int arg;
    const dnnl_memory_desc_t *md;
    const void *data; /* inputs are only read (oneDNN takes void *) */
} eager_dnnl_arg;

#define EAGER_DNNL_MAX_ARGS 8

/*
 * Creates the primitive for op_desc (through oneDNN's cache) with
 * a->nthreads threads, wraps the buffers in memory objects, runs it on
 * this thread's stream and frees every oneDNN object it made.  what names
 * the primitive in errors ("matmul").  Returns TG_OK, or TG_ERR_BACKEND
 * with "oneDNN <what> <step> failed: <status text>" in a->err.
 */
tg_status eager_dnnl_run(const eager_kargs *a, const char *what,
                         const_dnnl_op_desc_t op_desc,
                         const eager_dnnl_arg *args, int nargs);

/*
 * Attribute lists of the conv and pool ops, already validated by
 * graph/infer_linalg.c.  A 2-entry list (stride, dilation, kernel) is
 * (h, w); 1 entry means both; 0 entries means def.
 */
static inline void eager_ints_pair(const graph_ints *v, int64_t def,
                                   int64_t out[2])
{
    out[0] = v->n > 0 ? v->v[0] : def;
    out[1] = v->n > 1 ? v->v[1] : out[0];
}

/*
 * Padding as (top, left, bottom, right): 0 entries none, 1 all sides,
 * 2 (h, w) on both sides, 4 (top, left, bottom, right).
 */
static inline void eager_ints_pad4(const graph_ints *v, int64_t out[4])
{
    if (v->n == 4) {
        for (int i = 0; i < 4; i++)
            out[i] = v->v[i];
        return;
    }
    eager_ints_pair(v, 0, out);
    out[2] = out[0];
    out[3] = out[1];
}

#endif
