/*
 * trace.h - record what the eager API dispatches into a graph.
 *
 *   // example (given: eager_tensor *x; eager_tensor *w)
 *   trace_begin(NULL);
 *   trace_input(x, "x");
 *   trace_dynamic(x, 0, "B");                         // the batch is dynamic
 *   trace_param(w, "fc1.weight");
 *   eager_tensor *y = eager_relu(eager_linear(x, w, EAGER_NONE));  // runs, and is recorded
 *   trace_output(y, "y");
 *   graph *g = trace_freeze();                        // NULL + eager_error() on failure
 *   if (!g)
 *       fprintf(stderr, "trace: %s\n", eager_error());
 *
 * While a trace is on, every op still runs and returns its result, and is
 * also appended to the graph with the call site that dispatched it: file,
 * line and function from the eager_<op>() macro, plus (unless turned off)
 * the call stack captured with libunwind, symbolized once per distinct
 * address at freeze.
 *
 * What becomes what:
 *   - trace_input: a graph input; trace_param: a param (data copied now);
 *     trace_output: an output.  Each takes a name, non-NULL and non-empty
 *     (replay finds them by name), and an input's or output's name is not
 *     one another input / output already has: TG_ERR_ARG otherwise;
 *   - any other tensor used by a recorded op (made before the trace, or by a
 *     creation function during it) becomes a constant, its data copied at
 *     first use; writing to it through eager_data_mut afterwards makes the
 *     next use capture a fresh constant;
 *   - reading data (eager_item, eager_get, eager_bool, eager_data) of a
 *     traced value records a guard with the call site, and what it records
 *     is exact: eager_item / eager_get the element's value (so
 *     `if (eager_item(s) > 0)` fails at replay for any other s, even one on
 *     the same branch), eager_bool the decision (any data that takes the same
 *     branch replays: write eager_bool(eager_gt(s, eager_scalar(0)))),
 *     eager_data a hash of the whole buffer (a debug print through it fails
 *     every replay on other data).  eager_peek reads without recording.
 *     A replay whose guard fails says which kind, where, what was recorded
 *     and what it saw.  eager_bool reads are always strict (they steer
 *     control flow); the policy for the others is trace_opts.value_reads
 *     (GRAPH_GUARD_WARN: replay reports a change, see replay/replay.h).
 * Out of memory is an error of the call that needed the memory
 * (TG_ERR_NOMEM; trace_freeze repeats it), never a graph with provenance
 * or call stacks missing; only the caches of walked stacks and provenance
 * entries stop growing (the next call walks its stack again).
 * Tracing is per thread: each thread may run its own trace.  Using a tensor
 * of another thread's active trace is an error.
 *
 * All functions report errors through the eager error (eager_error()) and
 * return a status; the calls take the caller's site for their messages.
 */
#ifndef TG_TRACER_TRACE_H
#define TG_TRACER_TRACE_H

#include "../eager/eager.h"
#include "../graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct trace_opts {
    const char *name;     /* graph name (default "main") */
    int capture_stack;    /* capture call stacks with libunwind (default 1) */
    int max_depth;        /* frames per stack (default 16, at most 64) */
    graph_guard_policy value_reads; /* policy of eager_item/get/data guards
                                       (default GRAPH_GUARD_STRICT) */
} trace_opts;

/* The defaults: name "main", stacks captured 16 frames deep, strict
 * value-read guards. */
TG_API trace_opts trace_default_opts(void);

/*
 * The same defaults as an initializer (trace_opts o = TRACE_OPTS_INIT;
 * o.max_depth = 32;): fields by name in C, trace_default_opts() in C++17,
 * which has no designated initializers.  trace_opts may grow at the end.
 */
#ifdef __cplusplus
#define TRACE_OPTS_INIT trace_default_opts()
#else
#define TRACE_OPTS_INIT                                                        \
    {.name = "main", .capture_stack = 1, .max_depth = 16,                      \
     .value_reads = GRAPH_GUARD_STRICT}
#endif

TG_API tg_status trace_begin_at(EAGER_SITE_PARAMS, const trace_opts *opts);
TG_API tg_status trace_input_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name);
/* Marks dim of input t as dynamic, named sym ("B"); call after trace_input. */
TG_API tg_status trace_dynamic_at(EAGER_SITE_PARAMS, eager_tensor *t, int dim, const char *sym);
TG_API tg_status trace_param_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name);
TG_API tg_status trace_output_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name);
/*
 * Declares t state of the traced step under name: a tensor made before the
 * step that the step reads and writes (eager_assign) and that lives on
 * across steps: a parameter, an optimizer's moments, batch norm's running
 * statistics, a step count.  The graph reads it at the start of a run and
 * pairs it with its value at the end (graph_add_state); its initial data
 * is the tensor's contents at trace_freeze (the state after the traced
 * step, where a replay goes on).  Declare before the step writes it.  The
 * step writing a tensor from before the step that is not state fails
 * trace_freeze, naming the write; so does reading state on the host
 * (eager_item, eager_bool, eager_data).  Optimizers declare their own
 * (eager_declare_state); a tensor declared twice keeps its first name.
 */
TG_API tg_status trace_state_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name);
/*
 * Ends the trace and returns its graph (caller frees with graph_free), or
 * NULL with an error (no outputs, ...); the trace is over either way.
 */
TG_API graph *trace_freeze_at(EAGER_SITE_PARAMS);
/*
 * Ends the trace, dropping what was recorded. No-op when none is active.
 * A trace never ended is freed when its thread exits, with a warning on
 * stderr naming trace_begin's call site; the thread that calls exit() with
 * one open, and a trace passing 2^20 recorded ops (TG_TRACE_WARN_OPS=n sets
 * the bound), warn the same way.
 */
TG_API void trace_abort(void);
/* Nonzero while this thread traces. */
TG_API int trace_active(void);

#define trace_begin(opts) trace_begin_at(EAGER_SITE, opts)
#define trace_input(t, name) trace_input_at(EAGER_SITE, t, name)
#define trace_state(t, name) trace_state_at(EAGER_SITE, t, name)
#define trace_dynamic(t, dim, sym) trace_dynamic_at(EAGER_SITE, t, dim, sym)
#define trace_param(t, name) trace_param_at(EAGER_SITE, t, name)
#define trace_output(t, name) trace_output_at(EAGER_SITE, t, name)
#define trace_freeze() trace_freeze_at(EAGER_SITE)

/* trace_summary(g, f), a readable account of a frozen graph, is declared
 * in graph/graph.h (it is graph code). */

#ifdef __cplusplus
}
#endif

#endif
