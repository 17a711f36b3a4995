/*
 * memplan.h - memory planning: one 64-byte-aligned arena for every
 * intermediate value of a schedule, with buffer reuse.
 *
 * Lifetimes come from the schedule (a value lives from the step that makes
 * it to its last use; graph outputs live to the end).  An elementwise node
 * may write its output over an input that dies at that node (same byte
 * size, not a graph input/param/const): they share one buffer.  Buffers are
 * placed by greedy-by-size (Pisarchyk & Lee 2020, "Efficient Memory
 * Management for Deep Neural Net Inference", as TFLite's ArenaPlanner):
 * largest first, each at the lowest offset (best fit among gaps) that does
 * not overlap a placed buffer alive at the same time.
 */
#ifndef TG_OPTIMIZE_MEMPLAN_H
#define TG_OPTIMIZE_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/graph.h"

#define OPT_ARENA_ALIGN 64

typedef struct opt_memplan {
    int32_t nvalues;
    int64_t *offset;      /* per value: arena offset, -1 if not in the arena */
    int32_t *buffer;      /* per value: buffer id, -1 if not in the arena */
    int32_t nbuffers;
    size_t arena_bytes;   /* planned */
    size_t naive_bytes;   /* sum of all intermediates, no reuse */
    size_t lower_bound;   /* largest set of bytes alive at one step */
    int32_t inplace;      /* outputs that share their input's buffer */
} opt_memplan;

/*
 * Plans g's intermediates.  types gives each value's type for this plan
 * (NULL: the graph's own types; replay passes re-inferred types when the
 * dynamic dims differ).  allow_inplace enables elementwise reuse.
 * Returns TG_OK and fills *mp (free with opt_memplan_free), or an error in
 * graph_error(g)... (only out of memory).
 */
tg_status opt_memplan_build(const graph *g, const graph_type *types,
                            int allow_inplace, opt_memplan *mp);
/* The same with every offset a multiple of align (a power of two; values
 * below OPT_ARENA_ALIGN mean OPT_ARENA_ALIGN): the OpenCL backend places
 * sub-buffers at the device's base-address alignment. */
tg_status opt_memplan_build_aligned(const graph *g, const graph_type *types,
                                    int allow_inplace, size_t align, opt_memplan *mp);
void opt_memplan_free(opt_memplan *mp);

#endif
