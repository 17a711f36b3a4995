/*
 * eager.h - the eager tensor API.
 *
 * Every op runs at once on the CPU and returns a new tensor.  Ops are
 * declared in graph/ops.def; their functions eager_<op>() are generated
 * into eager_ops.h.  Each is a macro that passes the caller's file, line
 * and function, so errors (and traces) name the user's own code.
 *
 * Ownership.  A tensor returned by an op or a creation function carries
 * one reference.  Outside a pool the caller owns it and calls
 * eager_release().  Inside eager_pool_push()/eager_pool_pop() the pool owns
 * it and drops it at pop, unless the caller took a reference of its own
 * with eager_retain().  Tensors are not thread-safe: one thread at a time.
 * Misuse is detected, not undefined: every function taking a tensor checks
 * its header, so a tensor released twice, used after the pool that owned
 * it popped, or released while its pool still owns it gives an error
 * naming the call ("add: input 0: the tensor was already freed ...
 * (model.c:42 f)") and frees nothing twice.  This holds after its data
 * block went to a new tensor of the same size: headers live apart from
 * the data, in memory never given back to malloc, and a freed header is
 * reused only after 4096 more tensors were freed on that thread (a stale
 * pointer older than that may alias a new tensor; TG_EAGER_NO_CACHE=1
 * under a sanitizer then still reports a read of its data).
 *
 * Threads.  A tensor's references belong to the thread that made it (they
 * are counted without atomics): eager_retain, eager_release, eager_keep
 * and a view op (reshape) on another thread are refused with TG_ERR_STATE
 * ("eager_release: the tensor belongs to the thread that made it ...")
 * while that thread runs; once it has exited, any thread may release its
 * tensors.  Reading a tensor, or passing it as an op's input, from another
 * thread is allowed while no thread changes it.
 *
 * Errors.  An op that fails returns NULL and records an error; an op given
 * NULL returns NULL without a new error, so a chain of calls can be checked
 * once at the end.  The first error is kept until eager_clear_error():
 *   "matmul: [64,784] x [512,512]: inner dims differ (784 vs 512)
 *    (model.c:42 mlp_forward)"
 * Errors, pools and hooks are per thread.
 */
#ifndef TG_EAGER_H
#define TG_EAGER_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eager_tensor eager_tensor;

/* Where user code called into the API. */
typedef struct eager_site {
    const char *file;
    int line;
    const char *func;
} eager_site;

#define EAGER_SITE_PARAMS const char *site_file_, int site_line_, const char *site_func_
#define EAGER_SITE __FILE__, __LINE__, __func__

/* Pass for an optional trailing input that is absent (a conv bias). */
extern TG_API eager_tensor eager_none_;
#define EAGER_NONE (&eager_none_)

/* ---- errors ---- */

/* The first error since the last clear; TG_OK if none. */
TG_API tg_status eager_status(void);
/* Its message; "" if none. Valid until the next clear on this thread. */
TG_API const char *eager_error(void);
TG_API void eager_clear_error(void);
/*
 * Records an error (kept only if none is pending). The site, if not NULL,
 * is appended as " (file:line func)". For layers built on eager.  fmt
 * NULL: the status's own text.
 */
TG_API void eager_set_error(tg_status st, const eager_site *site, const char *fmt,
                            ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/*
 * ---- creation (dtype, shape as TG_SHAPE(2, 3)) ----
 *
 * Values given as double (eager_full, eager_arange) are converted to the
 * dtype as the cast op converts a float: f32 rounds to nearest; i32 and
 * i64 truncate toward zero, NaN gives 0, values beyond the range saturate
 * to its min or max (+-inf included: eager_full(I32, ..., 1e10) is
 * INT32_MAX); bool is value != 0 (NaN gives 1).
 */

TG_API eager_tensor *eager_empty_at(EAGER_SITE_PARAMS, graph_dtype dt, graph_ints shape);
TG_API eager_tensor *eager_full_at(EAGER_SITE_PARAMS, graph_dtype dt, graph_ints shape, double value);
/* Copies numel elements of dt from data. */
TG_API eager_tensor *eager_from_data_at(EAGER_SITE_PARAMS, graph_dtype dt, graph_ints shape, const void *data);
/* start, start+step, ... while < stop (> stop for a negative step). */
TG_API eager_tensor *eager_arange_at(EAGER_SITE_PARAMS, graph_dtype dt, double start, double stop, double step);
/*
 * Seeded random f32 tensors.  Element i takes its bits from SplitMix64
 * applied to (seed + (i+1) * 0x9E3779B97F4A7C15): uniform = top 24 bits /
 * 2^24 in [0,1) scaled to [lo,hi); normal uses Box-Muller on the pair
 * (2k, 2k+1).  The same seed gives the same tensor on every machine.
 */
TG_API eager_tensor *eager_rand_uniform_at(EAGER_SITE_PARAMS, graph_ints shape, uint64_t seed, float lo, float hi);
TG_API eager_tensor *eager_rand_normal_at(EAGER_SITE_PARAMS, graph_ints shape, uint64_t seed, float mean, float std);

#define eager_empty(...) eager_empty_at(EAGER_SITE, __VA_ARGS__)
#define eager_zeros(dt, shape) eager_full_at(EAGER_SITE, dt, shape, 0.0)
#define eager_ones(dt, shape) eager_full_at(EAGER_SITE, dt, shape, 1.0)
#define eager_full(...) eager_full_at(EAGER_SITE, __VA_ARGS__)
#define eager_scalar(value) eager_full_at(EAGER_SITE, GRAPH_F32, TG_NOINTS, value)
#define eager_from_data(...) eager_from_data_at(EAGER_SITE, __VA_ARGS__)
#define eager_arange(...) eager_arange_at(EAGER_SITE, __VA_ARGS__)
#define eager_rand_uniform(...) eager_rand_uniform_at(EAGER_SITE, __VA_ARGS__)
#define eager_rand_normal(...) eager_rand_normal_at(EAGER_SITE, __VA_ARGS__)

/* ---- references and pools ---- */

/*
 * Takes one more reference; returns t (NULL for NULL, or with an error for
 * a freed tensor).
 */
TG_API eager_tensor *eager_retain_at(EAGER_SITE_PARAMS, eager_tensor *t);
/*
 * Drops one reference; frees at zero.  NULL is a no-op.  Refused, with an
 * error naming the call and nothing freed: a tensor already freed (released
 * twice), and the last reference of a tensor a pool owns (made inside
 * eager_pool_push and not retained: the pool drops it at pop, so releasing
 * it here would free it twice).
 */
TG_API void eager_release_at(EAGER_SITE_PARAMS, eager_tensor *t);
/*
 * For code that releases the tensors it makes but may run inside a
 * caller's pool (libraries): if a pool owns t, takes a reference of the
 * caller's own (as eager_retain), so that one eager_release is right
 * either way.  Returns t; NULL-safe.
 */
TG_API eager_tensor *eager_keep_at(EAGER_SITE_PARAMS, eager_tensor *t);
#define eager_retain(t) eager_retain_at(EAGER_SITE, t)
#define eager_release(t) eager_release_at(EAGER_SITE, t)
#define eager_keep(t) eager_keep_at(EAGER_SITE, t)
/* The same without a call site, for function pointers: (eager_release). */
TG_API eager_tensor *(eager_retain)(eager_tensor *t);
TG_API void (eager_release)(eager_tensor *t);
/*
 * Opens a pool on this thread; pools nest.  TG_OK, or TG_ERR_NOMEM (also
 * recorded as the thread's error) when a level deeper than 8 finds no
 * memory: then no new level opens, tensors made until the matching
 * eager_pool_pop go to the enclosing pool (dropped at its pop), and that
 * pop closes nothing, so pushes and pops stay paired.  The first 8 levels
 * need no memory and never fail.
 */
TG_API tg_status eager_pool_push(void);
/*
 * Closes the innermost pool, dropping its reference to each tensor made in
 * it.  With no pool open: an error, nothing else.
 */
TG_API void eager_pool_pop_at(EAGER_SITE_PARAMS);
#define eager_pool_pop() eager_pool_pop_at(EAGER_SITE)
TG_API void (eager_pool_pop)(void);
/*
 * Frees this thread's cache of small tensor blocks (kept to make small ops
 * cheap; released automatically when the thread exits).
 *
 * Debugging: with the environment variable TG_EAGER_NO_CACHE=1 (read once,
 * at a thread's first tensor) tensors go straight to malloc and free, so
 * AddressSanitizer and valgrind see every block: a use after free is
 * reported at the faulty access.  TG_EAGER_NO_CACHE=0 turns the cache on.
 * Builds configured with TG_SANITIZE (make asan) have the cache off unless
 * TG_EAGER_NO_CACHE=0 says otherwise (CMake option TG_EAGER_NO_CACHE).
 */
TG_API void eager_trim_cache(void);
/* Number of live tensors on all threads (for leak checks in tests). */
TG_API long eager_live_tensors(void);
/*
 * TG_OK if t is a live tensor.  Otherwise records an error "what: ..."
 * naming the call site and returns its status: TG_ERR_NULL for NULL (no
 * new error if one is pending), TG_ERR_STATE for a tensor already freed.
 * For layers built on eager (the tracer checks what it is given).
 */
TG_API tg_status eager_check_at(EAGER_SITE_PARAMS, const eager_tensor *t, const char *what);

/* ---- inspection and element access ---- */

/*
 * Each takes the call site (a freed tensor is reported there).  Given NULL
 * (no new error) or a freed tensor (an error): eager_dtype returns
 * GRAPH_DTYPE_COUNT, eager_ndim, eager_dim and eager_numel -1,
 * eager_nbytes 0, eager_type NULL.
 */
TG_API graph_dtype eager_dtype_at(EAGER_SITE_PARAMS, const eager_tensor *t);
TG_API int eager_ndim_at(EAGER_SITE_PARAMS, const eager_tensor *t);
/* Size of dim i (negative counts from the end); -1 if out of range. */
TG_API int64_t eager_dim_at(EAGER_SITE_PARAMS, const eager_tensor *t, int i);
TG_API int64_t eager_numel_at(EAGER_SITE_PARAMS, const eager_tensor *t);
TG_API size_t eager_nbytes_at(EAGER_SITE_PARAMS, const eager_tensor *t);
TG_API const graph_type *eager_type_at(EAGER_SITE_PARAMS, const eager_tensor *t);
#define eager_dtype(t) eager_dtype_at(EAGER_SITE, t)
#define eager_ndim(t) eager_ndim_at(EAGER_SITE, t)
#define eager_dim(t, i) eager_dim_at(EAGER_SITE, t, i)
#define eager_numel(t) eager_numel_at(EAGER_SITE, t)
#define eager_nbytes(t) eager_nbytes_at(EAGER_SITE, t)
#define eager_type(t) eager_type_at(EAGER_SITE, t)

/*
 * Reads of tensor data.  While a trace is active these are recorded as
 * guards (see tracer/), so each takes the call site.
 *   eager_item: the value of a 1-element tensor as double (NaN + error
 *     otherwise).  eager_get: element at a full index.
 *   eager_bool: a 1-element tensor read as a decision (nonzero -> 1); a
 *     trace records only the decision, so branch on eager_bool of a
 *     comparison rather than on eager_item, which records the exact value.
 *   eager_data: pointer to the contiguous row-major elements; a trace
 *     records a hash of all of them (use eager_peek for a debug print).
 */
TG_API double eager_item_at(EAGER_SITE_PARAMS, const eager_tensor *t);
TG_API double eager_get_at(EAGER_SITE_PARAMS, const eager_tensor *t, graph_ints index);
TG_API int eager_bool_at(EAGER_SITE_PARAMS, const eager_tensor *t);
TG_API const void *eager_data_at(EAGER_SITE_PARAMS, const eager_tensor *t);
#define eager_item(t) eager_item_at(EAGER_SITE, t)
#define eager_get(t, index) eager_get_at(EAGER_SITE, t, index)
#define eager_bool(t) eager_bool_at(EAGER_SITE, t)
#define eager_data(t) eager_data_at(EAGER_SITE, t)
/* Reads without recording anything, for debugging and tests (NULL for
 * NULL, or with an error for a freed tensor). */
TG_API const void *eager_peek(const eager_tensor *t);
/*
 * Writable data.  Writing into a tensor that other tensors view (reshape
 * shares storage) changes them too.  Reported to the hooks (a tracer must
 * know that a captured constant may change).
 */
TG_API void *eager_data_mut_at(EAGER_SITE_PARAMS, eager_tensor *t);
#define eager_data_mut(t) eager_data_mut_at(EAGER_SITE, t)

/*
 * An in-place write: copies src's data into dst (the same dtype and
 * shape), as `dst.copy_(src)` does.  Views of dst's storage see it.  A
 * gradient saved from dst before the write then fails the backward,
 * naming this call (as a write through eager_data_mut does); writing a
 * tensor that requires a gradient, or one computed from such tensors, is
 * refused while gradients are recorded (open eager_no_grad_begin first,
 * as optimizers do).  A tracer sees the write (hook on_write): dst holds
 * src's traced value from here on, and a traced step that writes a
 * tensor from outside the step needs it declared state (trace_state).
 * TG_OK, or an error with dst unchanged.
 */
TG_API tg_status eager_assign_at(EAGER_SITE_PARAMS, eager_tensor *dst, eager_tensor *src);
#define eager_assign(dst, src) eager_assign_at(EAGER_SITE, dst, src)
/*
 * Declares t state of a traced step under name: a tensor the step reads
 * and writes across runs (a parameter, an optimizer's moments, running
 * statistics, a step count).  Does nothing when no tracer listens on this
 * thread; library code that owns such tensors (an optimizer) calls it on
 * each step, user code calls trace_state (tracer/trace.h).
 */
TG_API tg_status eager_declare_state_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name);
#define eager_declare_state(t, name) eager_declare_state_at(EAGER_SITE, t, name)

/*
 * ---- training-mode ops and the random generator ----
 *
 * Random numbers come from Philox4x32-10, a counter-based generator: the
 * numbers of a draw depend only on a key and a counter, so eager runs, a
 * replayed graph and any thread count draw the same ones.  A generator is
 * an i64 [2] tensor {seed, offset}: key = seed, and draw i of a random op
 * is word offset + i of the stream (graph/ops.def, eager/philox.h).  Each
 * thread has one, which eager_dropout reads and then replaces by a new
 * tensor whose offset is past its draws (the op rng_advance: offset +
 * numel(x) rounded up to a multiple of 4); the old tensor is never
 * written, so a dropout's backward, which saved it, draws the same mask.
 */

/* Starts this thread's generator anew: {seed, 0}.  TG_OK or an error. */
TG_API tg_status eager_manual_seed_at(EAGER_SITE_PARAMS, uint64_t seed);
#define eager_manual_seed(seed) eager_manual_seed_at(EAGER_SITE, seed)
/* This thread's generator tensor (borrowed: eager_retain to keep it past
 * the next random op); made {0, 0} on first use if never seeded.  NULL
 * (an error) only when out of memory. */
TG_API eager_tensor *eager_rng_get_at(EAGER_SITE_PARAMS);
#define eager_rng_get() eager_rng_get_at(EAGER_SITE)
/* This thread's generator tensor, or NULL when it has none yet (makes
 * none; borrowed). */
TG_API eager_tensor *eager_rng_peek(void);
/*
 * Makes gen (an i64 [2] tensor {seed, offset} of this thread; the thread
 * takes a reference, not a copy) this thread's generator, as a replay or a
 * tracer that restores a saved state does.  EAGER_NONE drops the thread's
 * generator (the next use starts from {0, 0}); a thread's generator is
 * also dropped when the thread exits.  TG_OK, or an error (wrong dtype or
 * shape, a freed tensor, another running thread's tensor).
 */
TG_API tg_status eager_rng_set_at(EAGER_SITE_PARAMS, eager_tensor *gen);
#define eager_rng_set(gen) eager_rng_set_at(EAGER_SITE, gen)
/*
 * Dropout in training mode: y = x * keep / (1 - p), keep drawn from this
 * thread's generator (the op dropout), which then moves on (rng_advance).
 * p in [0, 1); p = 0 copies x (and still moves the generator on).  In
 * evaluation, do not call it (or set a traced graph to eval:
 * opt_set_training).  NULL and an error on bad input.
 */
TG_API eager_tensor *eager_dropout_at(EAGER_SITE_PARAMS, eager_tensor *x, double p);
#define eager_dropout(x, p) eager_dropout_at(EAGER_SITE, x, p)
/*
 * Batch norm in training mode (nn.BatchNorm2d.train()): y normalized with
 * the batch's mean and biased variance per channel (dim 1), then, as the
 * op batch_norm_train computes them, writes the new running statistics
 * into running_mean and running_var ((1 - momentum) old + momentum batch,
 * the variance unbiased) and num_batches_tracked + 1 into
 * num_batches_tracked (one i64 element, or EAGER_NONE), each with
 * eager_assign under no-grad.  Returns y (the gradient flows to x, scale
 * and bias), or NULL and an error (nothing written when the op fails).
 */
TG_API eager_tensor *eager_batch_norm_train_at(EAGER_SITE_PARAMS, eager_tensor *x,
                                               eager_tensor *scale, eager_tensor *bias,
                                               eager_tensor *running_mean,
                                               eager_tensor *running_var,
                                               eager_tensor *num_batches_tracked, double eps,
                                               double momentum);
#define eager_batch_norm_train(x, scale, bias, running_mean, running_var, num_batches_tracked,  \
                               eps, momentum)                                                   \
    eager_batch_norm_train_at(EAGER_SITE, x, scale, bias, running_mean, running_var,            \
                              num_batches_tracked, eps, momentum)

/* ---- settings ---- */

/* Threads each kernel may use (default 1); n < 1 means 1.  More than
 * TG_MAX_THREADS (graph/api.h) is refused: an error, the setting kept. */
TG_API void eager_set_threads(int n);
TG_API int eager_threads(void);

/*
 * The CPU kernel set in use: "avx512", "avx2" or "baseline" (x86-64 with
 * SSE2) in the portable build, which picks the highest level the CPU
 * supports when the library loads; the environment variable TG_CPU names
 * a lower one (e.g. TG_CPU=baseline).  "native" in a TG_NATIVE build.
 * oneDNN picks its own (its ONEDNN_MAX_CPU_ISA caps it).
 */
TG_API const char *eager_cpu_level(void);
/*
 * The instruction set oneDNN's CPU kernels use in this process, as oneDNN
 * names it in lower case: "avx2", "avx512_core", ... (the highest the CPU
 * supports; the environment variable ONEDNN_MAX_CPU_ISA caps it).
 */
TG_API const char *eager_onednn_isa(void);

/* ---- gradients (autograd) ---- */

/*
 * on 1: t (an f32 leaf: a tensor no op made from tensors that require
 * gradients) requires a gradient: the ops run on it, and on what they
 * make, are recorded, and eager_backward fills its gradient.  on 0 clears
 * the flag.  Errors (not f32, not a leaf) are eager errors at the site.
 */
TG_API tg_status eager_requires_grad_at(EAGER_SITE_PARAMS, eager_tensor *t, int on);
#define eager_requires_grad(t, on) eager_requires_grad_at(EAGER_SITE, t, on)
/* Whether t requires a gradient (a flagged leaf, or made from one). */
TG_API int eager_is_requires_grad(const eager_tensor *t);
/* How many eager_backward calls this thread has made (a tracer compares
 * it before and after a step). */
TG_API uint64_t eager_backward_count(void);
/* Whether t is a leaf's accumulated gradient (what eager_grad returns). */
TG_API int eager_is_grad(const eager_tensor *t);
/*
 * Backpropagates from loss (one f32 element) to every leaf it depends on
 * through recorded ops: each leaf's gradient is added to what it holds
 * (accumulating across calls, as PyTorch does).  The tape's saved tensors
 * are freed: a second backward through the same ops fails, naming the
 * first.  A saved tensor written since it was saved (eager_data_mut) fails
 * it, naming both call sites.  The backward's own ops are not recorded.
 */
TG_API tg_status eager_backward_at(EAGER_SITE_PARAMS, eager_tensor *loss);
#define eager_backward(loss) eager_backward_at(EAGER_SITE, loss)
/* t's accumulated gradient (t's shape), or NULL before a backward reached
 * it or after eager_zero_grad.  Borrowed: t owns it (eager_retain to keep
 * it past the next eager_backward or eager_zero_grad). */
TG_API eager_tensor *eager_grad_at(EAGER_SITE_PARAMS, const eager_tensor *t);
#define eager_grad(t) eager_grad_at(EAGER_SITE, t)
/* Drops t's gradient (the next backward starts from zero). */
TG_API void eager_zero_grad_at(EAGER_SITE_PARAMS, eager_tensor *t);
#define eager_zero_grad(t) eager_zero_grad_at(EAGER_SITE, t)
/* A no-grad scope (nesting): nothing is recorded until the matching end.
 * An end with no scope open is a TG_ERR_STATE error (eager_error). */
TG_API void eager_no_grad_begin(void);
TG_API void eager_no_grad_end(void);
/* Cross-entropy from logits [N,C] with class indices target [N] (i64 or
 * i32), the mean over the batch; label_smoothing in [0, 1] (PyTorch's
 * F.cross_entropy(..., label_smoothing=)).  Made of ops, so differentiable. */
TG_API eager_tensor *eager_cross_entropy_at(EAGER_SITE_PARAMS, eager_tensor *logits,
                                            eager_tensor *target, double label_smoothing);
#define eager_cross_entropy(logits, target, ls) eager_cross_entropy_at(EAGER_SITE, logits, target, ls)
/* Mean-squared error mean((a - b)^2) (NumPy broadcasting). */
TG_API eager_tensor *eager_mse_loss_at(EAGER_SITE_PARAMS, eager_tensor *a, eager_tensor *b);
#define eager_mse_loss(a, b) eager_mse_loss_at(EAGER_SITE, a, b)

/* ---- the dispatcher ---- */

/*
 * Runs op on inputs in[0..nin): checks, infers the output types, allocates,
 * runs the CPU kernel, calls the hooks.  Trailing EAGER_NONE inputs are
 * dropped.  attrs is the op's graph_<op>_attrs (NULL for defaults or ops
 * without).  Writes up to max_out tensors to out and returns their number,
 * or -1 on error.  The generated eager_<op>() functions call this.  NULL
 * in (nin > 0) or out (max_out > 0): -1 and TG_ERR_NULL; a NULL input: -1
 * (no new error if one is pending); a freed input: -1 and TG_ERR_STATE.
 */
TG_API int eager_dispatch(graph_op op, eager_tensor *const *in, int nin,
                          const void *attrs, eager_tensor **out, int max_out,
                          const eager_site *site);

/* ---- hooks (how the tracer listens without eager knowing it) ---- */

typedef enum eager_read_kind {
    EAGER_READ_VALUE,    /* eager_item, eager_get */
    EAGER_READ_DECISION, /* eager_bool */
    EAGER_READ_BUFFER,   /* eager_data */
    EAGER_WRITE_BUFFER,  /* eager_data_mut: the data may change */
} eager_read_kind;

typedef struct eager_hooks {
    /* After an op ran; a non-OK return fails the op (hook sets the error). */
    tg_status (*on_op)(void *ud, graph_op op, eager_tensor *const *in,
                       int nin, const void *attrs, eager_tensor *const *out,
                       int nout, const eager_site *site);
    /* After a creation function made t. */
    tg_status (*on_create)(void *ud, eager_tensor *t, const eager_site *site);
    /* When user code reads (or is handed writable) data of t; index is the
     * element read (-1: all). A non-OK return makes the access fail. */
    tg_status (*on_read)(void *ud, const eager_tensor *t,
                         eager_read_kind kind, int64_t index,
                         const eager_site *site);
    void *ud;
    /* eager_assign(dst, src): dst now holds src's value (called before the
     * data is copied; a non-OK return refuses the write, dst unchanged).
     * May be NULL. */
    tg_status (*on_write)(void *ud, eager_tensor *dst, eager_tensor *src,
                          const eager_site *site);
    /* eager_declare_state(t, name).  May be NULL. */
    tg_status (*on_state)(void *ud, eager_tensor *t, const char *name,
                          const eager_site *site);
} eager_hooks;

/* Installs hooks for this thread (NULL removes); returns the previous. */
TG_API const eager_hooks *eager_set_hooks(const eager_hooks *h);

/*
 * A small word in each tensor that a hook owner may use (the tracer keeps
 * the traced value's id there).  0 on new tensors, and for NULL or a freed
 * tensor (eager_set_tag then does nothing).
 */
TG_API uint64_t eager_tag(const eager_tensor *t);
TG_API void eager_set_tag(eager_tensor *t, uint64_t tag);

#include "eager_ops.h"

#ifdef __cplusplus
}
#endif

#endif
