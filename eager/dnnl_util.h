/*
 * dnnl_util.h - the oneDNN glue of the CPU kernels (kernels_matmul.c,
 * kernels_conv.c, kernels_ep.c): one CPU engine per process, one stream
 * per thread, the thread count oneDNN sees, readable error text, prepared
 * primitives (built once, run on caller-owned buffers), epilogue post-ops,
 * and the small attribute-list helpers the conv and pool kernels share.  Internal to eager/ and the
 * replay runtime's kernels; not part of the public API.
 *
 * Caching.  Without a state slot (eager), kernels build the operation
 * descriptor and ask oneDNN for the primitive on every call.  oneDNN's
 * primitive cache (capacity 1024 by default;
 * ONEDNN_PRIMITIVE_CACHE_CAPACITY) returns the already-compiled primitive
 * for a descriptor it has seen with the same thread count, so a repeated
 * call costs about 2 us of lookup, not a JIT compile (measured: first
 * 64x784x512 matmul ~1.6 ms of setup, later calls ~2.7 us).  With a slot
 * (replay), the primitive is built once per step and a call only attaches
 * buffers and executes (see eager_dnnl_prim).  The one eager kernel that
 * also reorders its weights per call is conv2d_blk (oneDNN's blocked
 * convs take only blocked weights: 0.9 ms for 512x512x3x3), which for
 * that reason runs direct, never Winograd, unless asked (kernels_blocked.c;
 * bench/eager_onednn times each eager oneDNN op).
 */
#ifndef TG_EAGER_DNNL_UTIL_H
#define TG_EAGER_DNNL_UTIL_H

#include <oneapi/dnnl/dnnl.h>

#include "../graph/graph.h"
#include "kernel.h"

/* A sentence for a dnnl status ("unimplemented: no implementation ..."). */
const char *eager_dnnl_status_str(dnnl_status_t s);

/*
 * The instruction set oneDNN's CPU kernels use in this process
 * (dnnl_get_effective_cpu_isa: the highest the CPU supports, capped by the
 * environment variable ONEDNN_MAX_CPU_ISA), named as oneDNN names it in
 * lower case: "avx2", "avx512_core", "avx512_core_amx", ...; an unknown
 * value as "0x..." (a static buffer).  For the benchmarks and `tracegraph
 * version`, which say where they ran.
 */
const char *eager_dnnl_isa_name(void);

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

#define EAGER_DNNL_MAX_ARGS 8

/*
 * Prepared primitives.  A oneDNN primitive with its memory objects, made
 * once and run many times: the prepared state of the matmul, linear,
 * conv2d, linear_ep and conv2d_ep kernels when the caller gives a state
 * slot (replay), or made and freed around one call (eager).  Buffers are
 * attached per run, only when a pointer changed.
 *
 * One argument may be "packed": the operation descriptor gave it as
 * format any, and when the primitive prefers a layout other than the
 * caller's, the prim keeps a copy of the caller's buffer reordered into
 * it, redone only when the caller's pointer changes.  So pack only a
 * buffer whose contents are fixed while the prim lives
 * (eager_kargs.fixed_in).  A packed copy of 512 KB or more sits in
 * transparent huge pages (packed_alloc in dnnl_util.c says why).
 */
typedef struct eager_dnnl_prim eager_dnnl_prim;

/* What to build: the descriptor and each argument's caller layout. */
typedef struct eager_dnnl_spec {
    const char *what;                 /* "matmul", "convolution" (errors) */
    const_dnnl_op_desc_t desc;
    const_dnnl_primitive_attr_t attr; /* NULL: default attributes */
    int nargs;
    int arg[EAGER_DNNL_MAX_ARGS];               /* DNNL_ARG_* */
    dnnl_memory_desc_t md[EAGER_DNNL_MAX_ARGS]; /* the caller's layouts */
    int packed; /* index of the argument desc gives as format any, or -1 */
    /*
     * The epilogue attr describes (NULL: none), with its parameters.
     * When the implementation oneDNN picks would run post-ops in a
     * reference loop (its gemm-based convolution: measured 3.3 -> 15 ms
     * for add + relu on a 64-channel 56x56 conv), or when post has a
     * CLIP step (oneDNN's clip and clip_v2 send NaN to the lower bound,
     * clip lets it pass), or when the destination is converted at each
     * run (convert) and post has a residual (in the caller's layout), the
     * prim is built without attr and runs this in vectorized C on the
     * output instead; the residual is then the argument bound to a post-op
     * index.
     */
    const graph_ints *post;
    graph_post_prm prm;
    /*
     * NULL, or a substring of the implementation name to take when oneDNN
     * offers it (dnnl_query_impl_info_str; otherwise oneDNN's first
     * choice): oneDNN 2.6 lists its Winograd F(2x2,3x3)
     * "jit_fp32_wino_2x3" before F(4x4,3x3) "jit_wino_4x3", which does
     * 2.25x fewer multiplies (see kernels_blocked.c).
     */
    const char *prefer;
    /*
     * NULL, or the forward primitive descriptor a backward operation
     * (convolution_backward_data / _weights) is matched against: oneDNN
     * requires one for a backward primitive descriptor.  Only read while
     * the primitive is made; the caller keeps and destroys it.
     */
    const_dnnl_primitive_desc_t hint;
    /*
     * Bit i set: desc gives argument i as format any and the prim
     * converts it at every run when the primitive prefers another layout
     * than the caller's md[i]: an input is reordered from the caller's
     * buffer into one the prim owns before the run, an output
     * (DNNL_ARG_DST, DIFF_SRC, DIFF_WEIGHTS, DIFF_BIAS) back into the
     * caller's after it.  For arguments whose contents change between runs
     * (the backward convolutions' tensors); fixed weights use packed.
     */
    unsigned convert;
} eager_dnnl_spec;

/*
 * Creates the primitive of sp (through oneDNN's cache) for a->nthreads
 * threads and its memory objects.  Returns TG_OK and *out, or
 * TG_ERR_BACKEND / TG_ERR_NOMEM with "oneDNN <what> <step> failed: ..."
 * in a->err.
 */
tg_status eager_dnnl_prim_new(const eager_kargs *a, const eager_dnnl_spec *sp,
                              eager_dnnl_prim **out);
/* Frees p (NULL is a no-op). */
void eager_dnnl_prim_free(eager_dnnl_prim *p);
/*
 * The name of the implementation oneDNN runs for p ("brg:avx512_core",
 * "jit_wino_4x3:avx512_core", ...; "" if unknown), owned by p: for tests
 * and diagnostics (ONEDNN_VERBOSE=1 prints the same names).
 */
const char *eager_dnnl_prim_impl(const eager_dnnl_prim *p);
/*
 * Marks p as standing in for the reference implementation ref_impl (p runs
 * a JIT kernel on tensors it converts at each run, where the layout asked
 * for has only ref_impl): a probe (eager_dnnl_impl_of) then reports
 * "REF, converted at each run to IMPL", which eager_dnnl_impl_is_ref
 * counts as a reference kernel, so the layout pass still keeps such a
 * conv plain, while a plan that already has the layout runs fast.
 */
void eager_dnnl_prim_replaces(eager_dnnl_prim *p, const char *ref_impl);
/*
 * Nonzero when impl names one of oneDNN's reference implementations
 * ("ref:any", "gemm:ref", ...): plain C loops, 100x and more slower than
 * its JIT ones ("jit:avx512_core", "brg:avx512_core", "x64:gemm:jit",
 * "jit_wino_4x3:avx512_core").  oneDNN 2.6 falls back to "ref:any" where
 * no JIT kernel takes the case, e.g. a 256-channel 3x3 conv with dilation
 * 12 or more in the blocked nChw16c layout (the plain one runs gemm:jit).
 */
int eager_dnnl_impl_is_ref(const char *impl);

/*
 * The oneDNN implementation the CPU kernel of op (conv2d, conv2d_ep,
 * conv2d_blk, matmul, linear, linear_ep) runs for these input types,
 * attrs and output type, prepared as a replay plan prepares it (a state
 * slot; fixed_in as in eager_kargs: bit 1 set for constant weights): the
 * kernel's own descriptor, attributes and choices (Winograd first when
 * the weights are fixed, post-ops moved to C), its primitive built (through oneDNN's cache, so a
 * later plan reuses it) but never run, on no data.  Returns TG_OK with
 * the name in impl ("" when oneDNN is not called for these shapes: an
 * empty input or output), TG_ERR_UNSUPPORTED for another op or more than
 * EAGER_DNNL_MAX_ARGS inputs, or the kernel's own error; err (may be
 * NULL) gets the reason.
 */
int eager_dnnl_op_has_impl(graph_op op);
/*
 * For a kernel that runs its own implementation where oneDNN has none
 * (kernels_wino.c): inside eager_dnnl_impl_of, records impl as the name
 * and returns 1 (the kernel then returns TG_ERR_STATE without touching
 * its data, which the probe does not have); else 0.
 */
int eager_dnnl_probe_report(const char *impl);
tg_status eager_dnnl_impl_of(graph_op op, const void *attrs, const graph_type *in_type, int nin,
                             const graph_type *out_type, uint32_t fixed_in, int nthreads,
                             char *impl, size_t len, char *err, size_t errlen);
/* The same for the step choice eager_kargs.impl (EAGER_GEMM_*, EAGER_CONV_*). */
tg_status eager_dnnl_impl_of_choice(graph_op op, const void *attrs, const graph_type *in_type,
                                    int nin, const graph_type *out_type, uint32_t fixed_in,
                                    int nthreads, int choice, char *impl, size_t len, char *err,
                                    size_t errlen);
/*
 * The same for node of g, at its traced types, its constant and param
 * weights fixed, on one thread.
 */
tg_status eager_dnnl_node_impl(const graph *g, int32_t node, char *impl, size_t len, char *err,
                               size_t errlen);
/* The prim already prepared in a's state slot, or NULL. */
eager_dnnl_prim *eager_dnnl_prim_get(const eager_kargs *a);
/*
 * Runs p on data[i] for argument i (in spec order) on this thread's
 * stream, then keeps p in a's empty state slot, or frees it when a has no
 * slot.  Returns TG_OK or TG_ERR_BACKEND with a reason in a->err.
 */
tg_status eager_dnnl_prim_finish(const eager_kargs *a, eager_dnnl_prim *p,
                                 const void *const *data);

/*
 * The oneDNN attributes of an epilogue (linear_ep / conv2d_ep): post holds
 * GRAPH_POST_* codes (checked by infer), prm their parameters (CLIP as
 * an identity placeholder: such an epilogue runs in C, eager_dnnl_spec.post), res the
 * residual's layout for GRAPH_POST_ADD (a binary add post-op).  Sets
 * *attr (NULL when post is empty; the caller destroys it) and *res_index
 * to the post-op index of the add, or -1.
 */
dnnl_status_t eager_dnnl_post_attr(const graph_ints *post, graph_post_prm prm,
                                   const dnnl_memory_desc_t *res,
                                   dnnl_primitive_attr_t *attr, int *res_index);

/*
 * The kernels behind linear / linear_ep and conv2d / conv2d_ep
 * (kernels_matmul.c, kernels_conv.c): post NULL means no epilogue; conv
 * takes the conv attributes apart from the op's struct.
 */
tg_status eager_linear_run(const eager_kargs *a, const graph_ints *post,
                           graph_post_prm prm);
typedef struct eager_conv_geom {
    const graph_ints *stride, *padding, *dilation;
    int64_t groups;
} eager_conv_geom;
tg_status eager_conv_run(const eager_kargs *a, const eager_conv_geom *geom,
                         const graph_ints *post, graph_post_prm prm);

#endif
