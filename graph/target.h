/*
 * target.h - what a plan is made for: the machine (or device) whose
 * kernels will run it, as the backend that compiles the plan describes it.
 *
 * The -O3 layout pass (optimize/layout.c) decides for a target: which
 * convolutions run in the blocked layout and with how many channels to a
 * block (oneDNN's nChw16c on AVX-512, nChw8c on AVX2: the block its direct
 * and depthwise kernels want, asked from oneDNN, not assumed).  The graph
 * records the target's name (graph.target; the .tgraph keeps it), and
 * replay_compile re-plans the layout when the backend that compiles the
 * plan has another target: a file optimized on an AVX-512 machine runs
 * with 8-channel blocks on an AVX2 one.
 *
 *   // example (given: graph *g)
 *   char err[512];
 *   graph_target t;
 *   replay_opts ro = REPLAY_OPTS_INIT;   // the CPU backend's target
 *   if (replay_target(&ro, &t, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   opt_options o = OPT_OPTIONS_INIT;
 *   o.level = 3;
 *   o.target = &t;                       // NULL: the CPU this process runs on
 *   if (opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *
 * A target is a value filled by the library (replay_target, or the CPU's
 * when opt_options.target is NULL); the function pointers are its
 * backend's and stay valid for the life of the process.
 */
#ifndef TG_GRAPH_TARGET_H
#define TG_GRAPH_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct graph_target graph_target;

/*
 * The machine rates of the -O3 layout pass's cost model
 * (optimize/layout_cost.c): how fast this target runs a conv plain and
 * blocked, and what a layout conversion costs.  The CPU's are measured
 * once per CPU model, ISA, block and threads by a short micro-benchmark
 * (under a second) and kept in a cache file beside the tuning cache
 * ($TG_RATES_CACHE, else $XDG_CACHE_HOME/tracegraph/rates.txt or
 * ~/.cache/tracegraph/rates.txt); $TG_COST_RATES=builtin takes the
 * built-in ones (GRAPH_COST_RATES_BUILTIN) and "gemm=48,copy=50,..."
 * pins any of them (the others built-in), so a result need not depend on
 * timing.
 */
typedef struct graph_cost_rates {
    double gemm;       /* plain 1x1 stride-1 conv (one GEMM), MACs per ns */
    double im2col;     /* plain conv with a larger kernel or a stride, MACs per ns */
    double blk_1x1;    /* blocked 1x1 conv, channels whole blocks, padded MACs per ns */
    double blk_1x1_padded; /* blocked 1x1 conv with a padded last block, padded MACs per ns */
    double blk_kxk;    /* blocked conv with a larger kernel (direct or Winograd), padded MACs/ns */
    double copy;       /* to_blocked / from_blocked, bytes read and written per ns */
    double step;       /* a conversion's fixed cost, ns */
    double plain_call; /* a plain conv's fixed cost beyond a blocked one's, ns */
    /* Where they come from: "measured here (...)", "cached (PATH)",
     * "built-in (...)", "pinned by TG_COST_RATES". */
    char from[320];
} graph_cost_rates;

/* The built-in rates (one thread, Zen 5, oneDNN 2.6: layout_cost.c). */
#define GRAPH_COST_RATES_BUILTIN                                                                \
    {48.0, 40.0, 54.0, 48.0, 90.0, 50.0, 350.0, 500.0, "built-in (fitted on one Zen 5 machine)"}

struct graph_target {
    /* "cpu avx2", "cpu avx512_core", "cpu sse41", "opencl": what the graph
     * records, and what replay_compile compares. */
    char name[48];
    /* Channels to a block of the blocked layout (8 or 16); 0: the layout
     * pass keeps every conv plain. */
    int block;
    /* Threads the plan's kernels run on (what the implementations are
     * asked at). */
    int threads;
    /* How block was chosen ("oneDNN's preferred layout for a 3x3 conv on
     * avx2: nChw8c"). */
    char why[160];
    /*
     * The kernel implementation op (conv2d, conv2d_ep, conv2d_blk, matmul,
     * linear, linear_ep) would run here at these types, attributes and
     * fixed inputs (bit i: input i is a constant), in impl ("jit:avx2";
     * "" when no library kernel is called: an empty operand).  TG_OK, or
     * the reason it cannot run in err.  NULL: the target names none, and
     * the layout pass takes every conv as runnable blocked.
     */
    tg_status (*impl_of)(const graph_target *t, graph_op op, const void *attrs,
                         const graph_type *in, int nin, const graph_type *out,
                         uint32_t fixed_in, char *impl, size_t len, char *err, size_t errlen);
    /* Nonzero when impl names a slow reference kernel (NULL: none is). */
    int (*impl_is_ref)(const char *impl);
    /*
     * The cost model's rates for this target into r (r->from says where
     * they came from), measured on the first call for this machine and
     * threads when no cache has them: TG_OK, or a reason in err (a
     * TG_COST_RATES that does not parse).  NULL: the built-in rates.
     */
    tg_status (*rates)(const graph_target *t, graph_cost_rates *r, char *err, size_t errlen);
};

#ifdef __cplusplus
}
#endif

#endif
