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
};

#ifdef __cplusplus
}
#endif

#endif
