/*
 * opt.h - the graph optimizer: a pass manager and its passes.
 *
 *   // example (given: graph *g)
 *   char err[512];
 *   opt_options o = OPT_OPTIONS_INIT;          // -O2; or opt_default_options()
 *   o.level = 3;
 *   opt_report rep;
 *   if (opt_optimize(g, &o, &rep, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   else
 *       opt_report_print(&rep, stdout);
 *
 * Levels, as ONNX Runtime's: -O0 nothing; -O1 constant folding, algebraic
 * simplification, CSE and DCE, repeated to a fixed point; -O2 adds params
 * folded as constants (unless keep_params), conv/linear + batch-norm
 * folding, transpose absorption, pattern fusion (layer_norm, softmax,
 * GELU written as primitive ops), horizontal matmul fusion, epilogue
 * fusion into matmul/conv and elementwise-chain fusion; -O3 adds layout
 * transformation for conv chains.
 *
 * Rules every pass keeps: graph outputs and guarded values are never
 * removed or folded away (a guard's value is computed exactly as traced);
 * dynamic dims stay dynamic; fused nodes keep the provenance of every node
 * they absorbed.  The manager checks the last two after each pass.
 *
 * A pass is {name, run} in its own file; run() edits the graph in place
 * (appending new nodes, marking old ones GRAPH_NODE_DEAD) and counts what
 * it did in ctx->stats.  The manager then sorts, compacts and checks.
 */
#ifndef TG_OPTIMIZE_OPT_H
#define TG_OPTIMIZE_OPT_H

#include <stdio.h>

#include "../graph/graph.h"
#include "../graph/target.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opt_options {
    int level;            /* 0..3 (default 2) */
    int keep_params;      /* params stay swappable params at -O2+ (default 0) */
    int finite_math;      /* allow rewrites only valid without inf/NaN: x*0 -> 0 */
    int verify;           /* graph_verify after every pass (default: 1) */
    int verify_each;      /* run the graph after every pass against the
                             unoptimized one; name the first pass that
                             changes an output beyond verify_rtol */
    double verify_rtol;   /* default 1e-4 */
    uint64_t verify_seed; /* seeded random inputs at the traced shapes */
    FILE *print_after_each; /* text IR after every pass that changed it */
    FILE *explain;          /* fusion candidates that were not fused, and why;
                               the oneDNN implementation of each conv / matmul */
    int64_t fold_budget;    /* bytes of constants that folding may make in one
                               opt_optimize call, all passes together; 0: the
                               default, OPT_FOLD_BUDGET_MIN plus twice the bytes
                               of the graph's constants and params; a fold past
                               it is not done (--explain says so), the node is
                               left to run at replay.  Negative: TG_ERR_ARG */
    /* -O3: the target (graph/target.h) the layout is planned for, as
     * replay_target gives it for the backend that will run the plan.
     * NULL: the CPU this process runs on, at one thread.  The graph
     * records its name (graph.target). */
    const graph_target *target;
} opt_options;

/* The least default folding budget (64 MiB): what a small graph may fold. */
#define OPT_FOLD_BUDGET_MIN ((int64_t)64 << 20)

/* -O2, verify on, verify_each off, rtol 1e-4, the default fold budget. */
TG_API opt_options opt_default_options(void);

/*
 * The same defaults as an initializer (opt_options o = OPT_OPTIONS_INIT;
 * o.level = 3;): fields by name in C, opt_default_options() in C++17,
 * which has no designated initializers.  opt_options may grow at the end.
 */
#ifdef __cplusplus
#define OPT_OPTIONS_INIT opt_default_options()
#else
#define OPT_OPTIONS_INIT {.level = 2, .verify = 1, .verify_rtol = 1e-4, .verify_seed = 1}
#endif

/* What one pass did (summed over its runs in a pipeline). */
typedef struct opt_pass_stats {
    const char *name;
    int runs;
    int32_t removed;   /* nodes removed (folded, simplified, dead, merged) */
    int32_t fused;     /* nodes absorbed into a fused node */
    int32_t rewritten; /* nodes replaced by a cheaper form */
    int64_t bytes;     /* constant bytes saved (negative: added) */
    double ms;
} opt_pass_stats;

#define OPT_MAX_PASSES 32

typedef struct opt_report {
    int npasses;
    opt_pass_stats pass[OPT_MAX_PASSES];
    int32_t nodes_before, nodes_after;
    int iterations;        /* of the -O1 fixed point, summed */
    char bad_pass[64];     /* verify_each: first pass beyond tolerance, or "" */
    double bad_error;      /* its largest relative error */
} opt_report;

/*
 * Optimizes g in place at o->level (o NULL: defaults).  rep may be NULL.
 * Returns TG_OK, or an error with a message in err naming the pass (and
 * the node and its call site when one is at fault); on error g is left
 * valid but possibly partly optimized.  g NULL: TG_ERR_NULL.  A level
 * outside 0..3, a negative fold_budget or a verify_rtol that is negative or
 * NaN: TG_ERR_ARG naming the field, g untouched.  verify_each may run
 * inside the caller's eager pool: the tensors it makes are its own.
 */
TG_API tg_status opt_optimize(graph *g, const opt_options *o, opt_report *rep, char *err,
                              size_t errlen);

/*
 * The train/eval switch of a graph recorded in training form
 * (optimize/train_mode.c).  training 0 rewrites g in place for evaluation:
 * dropout becomes its input, rng_advance its input (the generator is not
 * moved), batch_norm_train the inference batch_norm on the running
 * statistics, whose updates become the statistics as they were; then dead
 * code goes.  training 1 leaves g as recorded (TG_OK).  TG_ERR_UNSUPPORTED
 * with err naming the node, g unchanged, when a batch_norm_train's batch
 * statistics are read (a backward through it) or a replaced value is
 * guarded; TG_ERR_NULL for g NULL.
 */
TG_API tg_status opt_set_training(graph *g, int training, char *err, size_t errlen);

/* Prints the report as a table (passes, counts, times, node totals);
 * nothing when rep or f is NULL. */
TG_API void opt_report_print(const opt_report *rep, FILE *f);

/* What the memory planner makes of a graph's intermediates (the arena a
 * replay session of it holds at the traced shapes, on the CPU). */
typedef struct opt_memory {
    size_t naive_bytes; /* every intermediate in its own buffer */
    size_t lower_bound; /* the most bytes alive at one step */
    size_t arena_bytes; /* what the planner lays out (in-place reuse on) */
    int32_t inplace;    /* outputs that share their input's buffer */
} opt_memory;

/*
 * Plans g's intermediates at its traced shapes into *out.  TG_OK, or
 * TG_ERR_NULL (g or out NULL) or TG_ERR_NOMEM with a message in err.
 */
TG_API tg_status opt_memory_plan(const graph *g, opt_memory *out, char *err, size_t errlen);

/* ---- for passes ---- */

typedef struct opt_ctx {
    const opt_options *opts;
    opt_pass_stats *stats; /* of the running pass */
    int changed;           /* set by a pass that edited the graph */
    char *err;
    size_t errlen;
    int64_t *fold_left; /* bytes folding may still make in this opt_optimize
                           call (shared by its passes); NULL: no bound */
} opt_ctx;

typedef struct opt_pass {
    const char *name;
    tg_status (*run)(graph *g, opt_ctx *ctx);
} opt_pass;

/* The passes (one per file). */
extern TG_API const opt_pass opt_pass_fold, opt_pass_simplify, opt_pass_cse, opt_pass_dce,
    opt_pass_fold_params, opt_pass_conv_bn, opt_pass_conv_taps, opt_pass_transpose_absorb,
    opt_pass_patterns, opt_pass_horizontal, opt_pass_epilogue, opt_pass_ewchain,
    opt_pass_layout, opt_pass_view_sink, opt_pass_unlayout;

/*
 * Re-plans the layout of g for target t: when g's layout was planned for
 * another target (g->target names another, or g has blocked values and no
 * target: an older file), a copy of g with every blocked value made plain
 * again (opt_pass_unlayout) and the layout pass run for t, each followed
 * by the -O1 fixed point, in *out; *out NULL when g needs nothing (its
 * target is t's, or it was never laid out).  g itself is not changed.
 * An error (TG_ERR_UNSUPPORTED: a blocked value the unlayout cannot take
 * back; err says which node) leaves *out NULL.  explain: as
 * opt_options.explain.
 */
TG_API tg_status opt_relayout(const graph *g, const graph_target *t, FILE *explain,
                              graph **out, char *err, size_t errlen);
/* Nonzero when g holds a live node of the blocked layout (to_blocked,
 * from_blocked, conv2d_blk, the blocked pools); 0 for NULL. */
TG_API int opt_has_blocked(const graph *g);

/* Uses of every value: the nodes reading it, as one CSR array. */
typedef struct opt_uses {
    int32_t *first; /* uses of v: node ids list[first[v] .. first[v+1]) */
    int32_t *list;
    int32_t nvalues;
} opt_uses;

/*
 * NULL arguments: opt_uses_build returns TG_ERR_NULL, opt_merge_prov
 * TG_ERR_NULL, opt_pinned, opt_replace_uses and opt_const_scalar 0,
 * opt_add_const -1; opt_uses_free, opt_explain do nothing; opt_fail with
 * no ctx returns st.
 */
/* Builds uses of live nodes (a node reading v twice is listed twice). */
TG_API tg_status opt_uses_build(const graph *g, opt_uses *u);
TG_API void opt_uses_free(opt_uses *u);
static inline int32_t opt_nuses(const opt_uses *u, int32_t v)
{
    return u->first[v + 1] - u->first[v];
}

/* Nonzero if v must stay as it is: a graph output or a guarded value. */
TG_API int opt_pinned(const graph *g, int32_t v);
/*
 * Makes every live node (and graph output) that reads from read to instead;
 * returns the number of uses changed.  from must not be guarded.
 */
TG_API int32_t opt_replace_uses(graph *g, int32_t from, int32_t to);
/*
 * Nonzero if node may fail at run time on what its operands hold, not
 * only on their types: a node specialized on the traced sizes
 * (GRAPH_NODE_SPECIALIZED: its shapes fail to infer at other sizes);
 * gather, gather_elements and scatter_elements with an index
 * operand that has elements (any of them may be out of range; none can
 * when it is a constant whose values all are in range), and an integer div
 * with elements whose divisor is not a constant without a zero; an
 * adamw_step whose step count is not a constant >= 1.  Such a
 * node fails at -O0, so a pass must not remove it as dead or fold it as
 * empty (fold.c, dce.c): an optimization must not turn an error into a
 * result.
 */
TG_API int opt_may_fail(const graph *g, int32_t node);
/* Adds a constant of type t with data (copied); its id or -1. */
TG_API int32_t opt_add_const(graph *g, const graph_type *t, const void *data);
/* If v is a constant whose elements are all equal, 1 and *x = that value. */
TG_API int opt_const_scalar(const graph *g, int32_t v, double *x);
/* Appends every provenance id of node src to node dst (skipping repeats;
 * a list longer than 16 ids may hold them until graph_compact). */
TG_API tg_status opt_merge_prov(graph *g, int32_t dst, int32_t src);
/* Formats a failure into ctx->err naming the node and its call site. */
TG_API tg_status opt_fail(opt_ctx *ctx, const graph *g, int32_t node, tg_status st,
                          const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Writes one --explain line: "<pass>: node N (op at site): <why>". */
TG_API void opt_explain(opt_ctx *ctx, const graph *g, int32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
