/*
 * replay.h - compile a graph into an immutable plan and run it fast.
 *
 *   // example (given: graph *g; graph_type xtype; const float *xdata)
 *   char err[512];
 *   replay_plan *plan = replay_compile(g, NULL, err, sizeof err);  // NULL: see err
 *   replay_session *s = replay_session_new(plan, NULL, 0);
 *   replay_tensor in = {.name = "x", .type = xtype, .input = xdata};
 *   float ybuf[64];
 *   replay_tensor out = {.name = "y", .data = ybuf, .size = sizeof ybuf};
 *   if (replay_run(s, &in, 1, &out, 1) != TG_OK)   // else out.type: what the run made
 *       fprintf(stderr, "%s\n", replay_session_error(s));
 *   replay_session_free(s);
 *   replay_plan_free(plan);
 *
 * (The "// example" blocks at the top of the installed headers compile as
 * they stand, given what their first line names, in C11 and C++20:
 * scripts/test_install.sh builds each one.)
 *
 * The structs here may grow at the end (docs/GUIDE.md, "Structs and the ABI"): initialize
 * them by name, designated as above or from REPLAY_OPTS_INIT, so that the
 * fields you leave out are zero (their defaults).
 *
 * A plan holds the schedule, the kernels and their arguments bound ahead of
 * time, the arena layout (optimize/memplan.h) and its own copies of params
 * and constants; it does not refer to the graph after compile.  A session
 * owns an arena (or uses one the caller brings: replay_workspace_size), so
 * several sessions run one plan on several threads at once.  A run is a
 * flat loop of kernel calls.
 *
 * Threads: a plan may be shared; a session belongs to one thread at a time
 * (one session per thread), and may be handed to another thread between
 * runs, also after the thread that made it has exited.  A replay_run on a session that another thread
 * is running is refused with TG_ERR_STATE and the message "session used by
 * two threads at once" (replay_session_error, on the refused thread), and
 * replay_session_free of such a session frees nothing.
 *
 * Inputs are matched by name (replay_tensor.name) or, when name is NULL, by
 * position; their dtype and shape are checked.  Dynamic dims (marked at
 * trace time) may differ from the traced sizes, consistently per symbol;
 * each distinct set of input shapes is planned once and cached.  The
 * signature's types (replay_input_type, replay_output_type) hold the
 * traced sizes; replay_input_dim_symbol and replay_output_dim_symbol say
 * which dims are dynamic, and replay_output_types gives the output types
 * for other input shapes, without running.  A name the plan lacks is an
 * error that lists the names it has ("no input named \"z\" (inputs: x)").
 *
 * Guards (tracer/trace.h records them) are checked as their values are
 * computed.  A strict guard that fails stops the run with TG_ERR_GUARD; the
 * message says what the trace recorded and where (the exact value an
 * eager_item / eager_get read, the branch an eager_bool decision took, the
 * hash of a buffer eager_data read), what the replay saw, and the remedy.
 * A warn-policy guard (trace_opts.value_reads = GRAPH_GUARD_WARN) that
 * changed does not stop the run: replay_run returns TG_OK, and the change
 * is reported three ways: the message goes to opts.guard_warn, or, when
 * that is NULL, to stderr (once per guard and session, so a loop of runs
 * does not flood it); replay_session_guard_warnings counts the changed
 * guards of the last run and replay_session_guard_warning gives the first
 * one's message.
 *
 * Errors: functions return a status; the message is replay_session_error()
 * (or the err buffer of replay_compile), naming the node and its call site.
 */
#ifndef TG_REPLAY_H
#define TG_REPLAY_H

#include <stddef.h>

#include "../graph/graph.h"
#include "../graph/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Deprecated (kept one release): name the backend in replay_opts.device
 * instead ("cpu", "opencl:0"; see "Backends, by name" below).
 */
typedef enum replay_backend_kind {
    REPLAY_CPU TG_DEPRECATED("name the backend: replay_opts.device = \"cpu\" (or leave it NULL)"),
    REPLAY_OPENCL TG_DEPRECATED("name the backend: replay_opts.device = \"opencl\" or \"opencl:N\""),
} replay_backend_kind;

typedef struct replay_opts {
    /* Deprecated: 0, and the backend named in device.  REPLAY_OPENCL
     * (1) still picks OpenCL, device then naming only its device ("1",
     * a name substring), as before, or the full name ("opencl:1"). */
    replay_backend_kind backend;
    /* Threads each kernel may use: 1..TG_MAX_THREADS (graph/api.h), 0 for
     * the default 1; others are refused by replay_compile. */
    int threads;
    int no_inplace;     /* disable in-place buffer reuse (debugging) */
    /*
     * The backend and its device, by name (replay_backend_find): "cpu",
     * "opencl" (its first device), "opencl:1" (the second device it lists),
     * "opencl:NVIDIA" (the first whose description contains the text).
     * NULL or "": "cpu".  Only read by replay_compile and replay_target.
     */
    const char *device;
    /*
     * Called, on the thread running replay_run, for each warn-policy guard
     * whose data changed in a run (see "Guards" above), with its message.
     * NULL: the message goes to stderr, once per guard and session.
     */
    void (*guard_warn)(void *ctx, const char *msg);
    void *guard_warn_ctx;
    /*
     * The most bytes a session may need (0: no limit).  Counted: the arena
     * the memory plan lays out for the input shapes (every intermediate
     * value; replay_workspace_size for the traced ones, also when the
     * caller brings the workspace) plus the params and constants the plan
     * holds.  Not counted: the kernels' own state made at a session's
     * first run (weights repacked for oneDNN, its scratchpads), the
     * sessions' small bookkeeping, and the caller's inputs and outputs.
     * replay_compile fails when the traced shapes need more ("replay: the
     * traced shapes need N bytes (arena A + params and constants C), more
     * than replay_opts.max_memory (M)"); replay_run at other dynamic sizes
     * that need more fails with TG_ERR_NOMEM and the same message ("these
     * input shapes need ...") before the session's arena grows for them.
     */
    size_t max_memory;
    /*
     * Nonzero: choose each GEMM's implementation by measurement (CPU
     * plans).  replay_compile times, for every matmul, linear and
     * linear_ep node at its traced shapes, oneDNN's prepared primitive
     * and, where libopenblas.so.0 is installed (it is loaded with dlopen,
     * never linked), OpenBLAS's cblas_sgemm, a few runs each (about 20 ms
     * per candidate at most), and keeps the faster for the plan's steps.
     * Each choice goes into a tuning cache keyed by the CPU model, the
     * instruction sets of oneDNN and of tracegraph's kernels, the BLAS
     * core, threads, op and shapes, so the next compile of the same
     * shapes on this machine measures nothing: the file $TG_TUNE_CACHE,
     * else $XDG_CACHE_HOME/tracegraph/tune.txt or
     * ~/.cache/tracegraph/tune.txt (plain text; a damaged line is
     * ignored and the file rewritten whole).  replay_plan_tuning says
     * what was chosen.  0 (the default): a static rule (oneDNN).
     */
    int tune;
} replay_opts;

/*
 * replay_opts' defaults (every field zero: the CPU, 1 thread, no limit),
 * as an initializer: replay_opts o = REPLAY_OPTS_INIT; o.threads = 4;
 * C++17, which has no designated initializers, gets a value-initialized
 * replay_opts{} with the same meaning.
 */
#ifdef __cplusplus
#define REPLAY_OPTS_INIT replay_opts{}
#else
#define REPLAY_OPTS_INIT {.device = NULL}
#endif

typedef struct replay_tensor {
    const char *name; /* match by name; NULL: by position */
    graph_type type;  /* outputs: see size */
    /*
     * The elements, row-major: one pointer under two names (an anonymous
     * union, so the struct's size and layout are those of a single
     * void *data).  Inputs: set input, a const void *, so that const data
     * (eager_peek's, a const array) needs no cast:
     *   replay_tensor in = {.name = "x", .type = t, .input = eager_peek(x)};
     * the library reads an input through input only and never writes it.
     * data on an input is the same pointer and still accepted (code
     * written before input existed).  Outputs: data, written by the run
     * (NULL: see replay_run).  Read back the member you set (C++: the
     * other one is not the active member).
     */
    union {
        void *data;        /* outputs: written; inputs: accepted, read only */
        const void *input; /* inputs: read only, never written */
    };
    /*
     * Plans of a backend with device buffers (OpenCL): a buffer of the
     * plan's device, from replay_buffer_new or, for OpenCL, a cl_mem (cast
     * to void *) in the plan's context (replay_plan_handle(p,
     * "cl_context")), used instead of data, so no host copy is
     * made: an input is read from it directly, an output is copied into
     * it on the device.  The caller's own queues must have finished
     * writing it before replay_run; it is complete when replay_run
     * returns.  NULL: use data.
     */
    void *buffer;
    /*
     * Bytes at data (or in buffer); 0: not said.  An output with size
     * set takes whatever the run makes if it fits (the run sets type to
     * it; type need not be filled in, so a zero-initialized replay_tensor
     * with data and size serves every batch size); larger is TG_ERR_SHAPE
     * naming both sizes.  An output with size 0 must have the exact type
     * the run makes.  An input with size set must hold its type's bytes.
     */
    size_t size;
} replay_tensor;

typedef struct replay_plan replay_plan;
typedef struct replay_session replay_session;

/*
 * Compiles g (verified first).  Returns NULL and a message in err when the
 * graph is invalid, the backend lacks an op ("op X is not supported on
 * backend Y", naming the node's call site), an option is out of range
 * ("replay: replay_opts.threads is 5000 (1 to 1024; 0 for the default 1)"), or the
 * traced shapes need more than opts.max_memory.  opts NULL: defaults.
 * A device name that names no backend or device is TG_ERR_ARG, listing the
 * names there are (replay_backend_find).  OpenCL ("opencl..."): opens the
 * device, uploads constants and params once and builds every kernel
 * now: an op the device cannot run,
 * or an OpenCL build error (its log included), fails here with the
 * node's call site, never at run time.
 */
TG_API replay_plan *replay_compile(const graph *g, const replay_opts *opts, char *err,
                                   size_t errlen);
/*
 * Gives up the caller's plan.  A session still open on it keeps it: the
 * plan is freed with the last of its sessions (replay_session_free), so
 * the sessions stay valid and may still run.  The caller must not use p
 * after this call (replay_session_new on it returns NULL while a session
 * keeps it alive).  NULL is a no-op.
 */
TG_API void replay_plan_free(replay_plan *p);

/* Arena bytes a session needs for the traced shapes (0 for NULL). */
TG_API size_t replay_workspace_size(const replay_plan *p);

/*
 * The target (graph/target.h) replay_compile with these options (NULL:
 * the defaults) makes plans for: the CPU's instruction set and its block
 * of channels ("cpu avx2", 8), or OpenCL's ("opencl", 16).  Give it to
 * opt_options.target to optimize for that backend; replay_compile
 * re-plans a graph laid out for another target.  TG_ERR_ARG for options
 * replay_compile would refuse.
 */
TG_API tg_status replay_target(const replay_opts *opts, graph_target *t, char *err,
                               size_t errlen);
/*
 * What the plan's layout was made for, as replay_compile found it:
 * "laid out for cpu avx2", "re-planned for cpu avx2 (the graph was laid
 * out for cpu avx512_core)", "laid out for X, not re-planned for Y: why",
 * or "no layout planned (optimized below -O3)".  Owned by the plan; NULL
 * for NULL.
 */
TG_API const char *replay_plan_layout(const replay_plan *p);
/*
 * What replay_opts.tune did: "tune: 7 GEMM nodes, 3 timed, 4 from the
 * cache: blas 2, onednn 5 (cache PATH)", with ", not saved: why" when the
 * cache could not be written; "not tuned (...)" without tune.  Owned by
 * the plan; NULL for NULL.
 */
TG_API const char *replay_plan_tuning(const replay_plan *p);
/*
 * A session on p.  workspace NULL: the session allocates its own arena;
 * otherwise a caller-owned buffer of size bytes, 64-byte aligned and at
 * least replay_workspace_size(p) (runs at other dynamic sizes that need
 * more fail with TG_ERR_NOMEM).  NULL on out of memory or bad workspace
 * (replay_session_create, below, says which).
 * OpenCL plans: the arena is device memory the session allocates;
 * workspace must be NULL.
 */
TG_API replay_session *replay_session_new(replay_plan *p, void *workspace, size_t size);
/*
 * replay_session_new with the reason for a NULL in err (errlen bytes,
 * always terminated; err may be NULL): a NULL or given-up plan, a
 * workspace misaligned or smaller than replay_workspace_size(p), a
 * workspace for an OpenCL plan, out of memory, or the device's refusal.
 */
TG_API replay_session *replay_session_create(replay_plan *p, void *workspace, size_t size,
                                             char *err, size_t errlen);
/* NULL is a no-op; a session another thread is running is not freed. */
TG_API void replay_session_free(replay_session *s);

/*
 * Runs the plan.  outputs[i].data non-NULL: the result is copied there
 * (its type must match, or its size suffice: replay_tensor.size); NULL:
 * data is set to the session's own buffer, valid until the next run on
 * this session, and type is filled in (CPU plans: an output that is an
 * input or a constant of the graph gets that input's pointer or the
 * plan's copy instead: read it, never write through it).  Inputs are
 * only read (replay_tensor.input).  An input or output name the plan
 * lacks is TG_ERR_ARG, the message listing the names it has.
 * s NULL: TG_ERR_NULL.  s running on another thread: TG_ERR_STATE.
 */
TG_API tg_status replay_run(replay_session *s, const replay_tensor *inputs, int nin,
                            replay_tensor *outputs, int nout);
/* The last error of s ("" if none; "no session" for NULL). */
TG_API const char *replay_session_error(const replay_session *s);
/* Warn-policy guards that changed during the last run (0 for NULL). */
TG_API int replay_session_guard_warnings(const replay_session *s);
/* The message of the last run's first warn-policy guard that changed ("" if
 * none changed or s is NULL): what was recorded, where, and what the run
 * saw.  Valid until the next run on s. */
TG_API const char *replay_session_guard_warning(const replay_session *s);

/*
 * Replaces the data of param name (kept as a param in the graph) on a live
 * plan, the cudaGraphExecUpdate of tracegraph: no recompile, every session
 * sees it on its next run (which first drops the kernels' prepared state,
 * such as weights packed from the old data).  Must not run concurrently
 * with replay_run on any session of p.  nbytes must equal the param's
 * size (TG_ERR_SHAPE); a name that is no param is TG_ERR_ARG, the message
 * listing the params there are.  NULL p, name or data: TG_ERR_NULL.
 */
TG_API tg_status replay_set_param(replay_plan *p, const char *name, const void *data,
                                  size_t nbytes, char *err, size_t errlen);

/* ---- State: a training step's graph ---- */

/*
 * A graph traced from a training step (tracer/trace.h: trace_state) has
 * state: tensors each run reads at its start and replaces at its end
 * (parameters, moments, running statistics, the random generator, the
 * step count).  Each session owns its state, starting from the values the
 * graph holds (the state when it was traced, or what a checkpoint
 * loaded); each replay_run is one step that updates it.  The plan lists
 * the states (count, name, type; -1 / NULL out of range); a session's
 * state is read and written by name (replay_state_get/set: nbytes must be
 * the state's size, TG_ERR_SHAPE otherwise; an unknown name is TG_ERR_ARG
 * naming the states there are; not while the session runs) or by index
 * (replay_state_data: the session's buffer, valid until the session is
 * freed).  Only the cpu backend runs plans with state.
 */
TG_API int32_t replay_num_states(const replay_plan *p);
TG_API const char *replay_state_name(const replay_plan *p, int32_t i);
TG_API const graph_type *replay_state_type(const replay_plan *p, int32_t i);
TG_API int32_t replay_state_find(const replay_plan *p, const char *name);
TG_API tg_status replay_state_get(replay_session *s, const char *name, void *data,
                                  size_t nbytes);
TG_API tg_status replay_state_set(replay_session *s, const char *name, const void *data,
                                  size_t nbytes);
TG_API const void *replay_state_data(const replay_session *s, int32_t i);
TG_API void *replay_state_data_mut(replay_session *s, int32_t i);
/*
 * A session's state to a checkpoint file (formats/ckpt.h: every state by
 * name, with the graph's name) and back, so a run stopped in one process
 * resumes in another.  Loading checks the whole file first (checksum,
 * structure: every damage an error with its byte offset) and then that it
 * holds exactly the plan's states with their types; only then does any
 * state change (all of them).  TG_OK, or an error in err.
 */
TG_API tg_status replay_state_save(replay_session *s, const char *path, char *err,
                                   size_t errlen);
TG_API tg_status replay_state_load(replay_session *s, const char *path, char *err,
                                   size_t errlen);

/* ---- Backends, by name ---- */

/*
 * A backend is found by name, never by an enum, so that a new one needs
 * no change to this header or to a program that takes the name from its
 * user (the tool's --backend NAME).  A name is the backend's ("cpu",
 * "opencl"), alone (its first device) or with a device after a colon: its
 * index in replay_backend_devices' list ("opencl:1") or a text that the
 * device's description contains ("opencl:NVIDIA", case-sensitive; the
 * first such device).  The backends built in are listed by
 * replay_backend_name(0), (1), ...  Listing every device, then compiling
 * for one (what `tracegraph devices` and `run --backend NAME` do):
 *
 *   char err[512];
 *   replay_device_info d[16];
 *   for (int i = 0; replay_backend_name(i); i++) {
 *       int n = replay_backend_devices(replay_backend_name(i), d, 16, err, sizeof err);
 *       for (int k = 0; k < n && k < 16; k++)
 *           printf("%s  %s\n", d[k].name, d[k].device);
 *   }
 *   replay_opts o = REPLAY_OPTS_INIT;
 *   o.device = "opencl:0";
 *   replay_plan *p = replay_compile(g, &o, err, sizeof err);
 *   if (p && replay_plan_property(p, "gemm"))
 *       printf("GEMM: %s\n", replay_plan_property(p, "gemm"));
 *   replay_plan_free(p);
 *   replay_backend_shutdown();
 */

/* One device of a backend, as replay_backend_devices lists it. */
typedef struct replay_device_info {
    char name[64];     /* "cpu", "opencl:0": what replay_opts.device takes */
    char device[256];  /* what a name's text is matched against: the model
                        * ("Intel(R) Xeon(R) ..."), or OpenCL's "platform
                        * device" */
    char details[192]; /* the rest, for people: "kernels avx512, oneDNN
                        * avx512_core", "OpenCL 3.0 ..., 16 compute units,
                        * 31.2 GiB, GEMM own (CPU device)" */
} replay_device_info;

/* The name of backend i (0, 1, ...: "cpu", "opencl"), NULL past the last. */
TG_API const char *replay_backend_name(int i);
/*
 * Lists the devices of backend `backend` (a backend's name, without a
 * device) into out (at most max; out NULL: only counts them).  Returns
 * their count (which may exceed max), or -1 and a message in err: a name
 * that is no backend's ("no backend named \"x\" (backends: cpu,
 * opencl)"), a backend this machine cannot run ("opencl: no OpenCL
 * platform (...)").
 */
TG_API int replay_backend_devices(const char *backend, replay_device_info *out, int max,
                                  char *err, size_t errlen);
/*
 * The device that `name` (replay_opts.device's form; NULL: "cpu") picks,
 * into *dev (may be NULL): TG_OK, or TG_ERR_ARG and a message in err
 * that lists the names there are: "replay: no backend named \"cuda\"
 * (backends: cpu, opencl)", "replay: no device \"opencl:7\" (devices:
 * opencl:0 = Portable Computing Language cpu-...)"; or TG_ERR_BACKEND
 * and why the backend cannot run here ("no OpenCL platform").
 */
TG_API tg_status replay_backend_find(const char *name, replay_device_info *dev, char *err,
                                     size_t errlen);
/*
 * What a plan's backend says about it, by key: "backend" ("cpu",
 * "opencl"), "device" (its device's name: "cpu", "opencl:0"),
 * "device_buffers" ("yes" when replay_buffer_new and replay_tensor.buffer
 * work, else NULL), "gemm" (the
 * GEMM/conv path an OpenCL plan was compiled with: "clblast" on GPUs and
 * accelerators, "own" on CPU devices, TG_OPENCL_GEMM overriding).  NULL
 * for a key the backend does not answer, or p NULL.  Owned by the plan.
 */
TG_API const char *replay_plan_property(const replay_plan *p, const char *key);
/*
 * A native handle of the plan's backend, by name: "cl_context" (OpenCL:
 * the cl_context, for the caller's own cl_mem inputs and outputs).  NULL
 * for a name the plan's backend does not have, or p NULL.
 */
TG_API void *replay_plan_handle(const replay_plan *p, const char *what);
/*
 * A device buffer of `bytes` bytes for replay_tensor.buffer, on the plan's
 * device, holding a copy of data (NULL: left unset): an input written
 * once, or an output left on the device.  The host reads one through the
 * backend's own API (OpenCL: clEnqueueReadBuffer on a queue of the
 * context replay_plan_handle gives).  NULL and a message in err when the
 * backend has no device buffers
 * ("replay: backend cpu has no device buffers: pass .data") or the device
 * cannot hold it.  Free it with replay_buffer_free before the plan.
 */
TG_API void *replay_buffer_new(const replay_plan *p, size_t bytes, const void *data, char *err,
                               size_t errlen);
/* Frees a buffer of replay_buffer_new (NULL: a no-op). */
TG_API void replay_buffer_free(const replay_plan *p, void *buffer);
/*
 * Releases what the backends keep for the process (OpenCL: devices,
 * contexts and program caches, shared by every plan on a device).
 * Optional; a device some plan still uses is kept.
 */
TG_API void replay_backend_shutdown(void);

/* ---- Deprecated: OpenCL by name of function (kept one release) ---- */

/* One OpenCL device as replay_opencl_devices lists it. */
typedef struct replay_device {
    int index; /* what opts.device takes, as a decimal string */
    char platform[128];
    char name[128];
    char version[64];
    size_t global_mem;
    int compute_units;
    /* The GEMM/conv path replay_compile takes on it, and why: "clblast
     * (GPU or accelerator device)", "own (CPU device)", "... (TG_OPENCL_GEMM)" */
    char gemm[96];
} replay_device;

/*
 * Lists the OpenCL devices of every platform into out (at most max; out
 * NULL: only counts them).  Returns their count (which may exceed max), or
 * -1 and a message in err when there is no platform ("no OpenCL platform
 * (...)").
 */
TG_DEPRECATED("use replay_backend_devices(\"opencl\", ...)")
TG_API int replay_opencl_devices(replay_device *out, int max, char *err, size_t errlen);
/* The cl_context (as void *) of an OpenCL plan; NULL for other backends. */
TG_DEPRECATED("use replay_plan_handle(p, \"cl_context\")")
TG_API void *replay_opencl_context(const replay_plan *p);
/* The GEMM/conv path an OpenCL plan was compiled with ("clblast", "own");
 * NULL for other backends. */
TG_DEPRECATED("use replay_plan_property(p, \"gemm\")")
TG_API const char *replay_opencl_gemm(const replay_plan *p);
/* Releases the OpenCL backend's devices, contexts and program caches. */
TG_DEPRECATED("use replay_backend_shutdown()")
TG_API void replay_opencl_shutdown(void);

/*
 * Signature queries: counts, names, types (for callers and the CLI).  The
 * types are the traced ones: a dynamic dim (replay_*_dim_symbol) holds the
 * size it had when traced; replay_output_types gives them at other sizes.
 * A NULL plan has 0 inputs, outputs and steps; names and types of a NULL
 * plan or an index out of range are NULL.  The strings and types belong
 * to the plan.
 */
TG_API int replay_num_inputs(const replay_plan *p);
TG_API int replay_num_outputs(const replay_plan *p);
TG_API const char *replay_input_name(const replay_plan *p, int i);
TG_API const char *replay_output_name(const replay_plan *p, int i);
TG_API const graph_type *replay_input_type(const replay_plan *p, int i);
TG_API const graph_type *replay_output_type(const replay_plan *p, int i);
/* Steps a run executes at the traced shapes (nodes + guard checks). */
TG_API int replay_num_steps(const replay_plan *p);
/*
 * The dynamic symbol ("batch") that dim `dim` of input (output) i follows,
 * or NULL when that dim is fixed, or changes with the symbols but is no
 * one of them (2*batch after a concat), or p, i or dim is out of range.
 * The string belongs to the plan.
 */
TG_API const char *replay_input_dim_symbol(const replay_plan *p, int i, int dim);
TG_API const char *replay_output_dim_symbol(const replay_plan *p, int i, int dim);
/*
 * The types of the first nout outputs (signature order) that a run with
 * these inputs would make, into out[0..nout), without running: to size
 * the caller's output buffers at a new batch size.  inputs are matched and
 * checked as replay_run does (by name or position; dtype, rank, static
 * dims, one size per symbol); their data is not read and may be NULL.
 * Returns TG_OK, or TG_ERR_NULL (p NULL, out NULL with nout > 0),
 * TG_ERR_ARG (a count out of range, an input name the plan lacks: the
 * message lists its inputs), TG_ERR_DTYPE / TG_ERR_SHAPE (an input that
 * does not fit the signature, a node that cannot take these sizes: as
 * replay_run says it), TG_ERR_NOMEM; the message goes to err (errlen
 * bytes, always terminated; err may be NULL).  Does not change p.
 */
TG_API tg_status replay_output_types(const replay_plan *p, const replay_tensor *inputs,
                                     int nin, graph_type *out, int nout, char *err,
                                     size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
