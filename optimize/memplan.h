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
    uint64_t place_work;  /* offset ranges placement examined (its cost,
                             O(n log n) for n buffers; tests bound it) */
} opt_memplan;

/*
 * The next values of g's states that a run computes straight into their
 * state's buffer (outside the arena), when that cannot change what any
 * node reads: made by one node P (nodes run in graph order), no output
 * and no other state's next; every reader of the state's old value runs
 * before P, or is P reading it where P may write that output over it (an
 * elementwise op's first output over an input of as many elements;
 * sgd_step's and adamw_step's outputs over their own buffers,
 * batch_norm_train's running statistics over the old ones); the old
 * value is no output and no guard's.  Per value: the state's index, or
 * -1.  tg_malloc'd (the caller frees it); NULL out of memory.
 */
int32_t *opt_state_in_place(const graph *g);

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

/* One buffer to place: size bytes alive from step first to step last. */
typedef struct opt_memplan_buf {
    size_t size;
    int32_t first, last; /* 0 <= first <= last */
} opt_memplan_buf;

/*
 * Greedy-by-size placement of n buffers (what opt_memplan_build runs on
 * the buffers of a schedule): largest first (ties: lower index first),
 * each in the smallest gap (the lowest of equal ones) between the placed
 * buffers alive at one of its steps that holds it, else above them all.
 * Sizes are rounded up to align (as opt_memplan_build_aligned); a buffer
 * of 0 bytes gets offset 0.  Writes offset[i]; returns the arena size, or
 * (size_t)-1 out of memory or when the arena would pass 2^62 bytes.  *work (if not NULL): the offset ranges
 * examined, O(n log n) when placed buffers lie side by side.
 */
size_t opt_memplan_place(const opt_memplan_buf *bufs, int32_t n, size_t align,
                         int64_t *offset, uint64_t *work);
/*
 * What opt_memplan_build places with: opt_memplan_place, and when its
 * arena is above lb (the most bytes alive at one step: no placement does
 * better), the same greedy with buffers of equal size taken longest-lived
 * first, then latest-born first; the smallest arena wins (offsets and
 * return as opt_memplan_place's; *work sums the tries).
 */
size_t opt_memplan_place_best(const opt_memplan_buf *bufs, int32_t n, size_t align, size_t lb,
                              int64_t *offset, uint64_t *work);

#endif
