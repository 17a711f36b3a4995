/*
 * infer_shape.h - attribute resolution shared by the shape infer functions
 * (graph/infer_shape.c) and their CPU kernels (eager/kernels_shape.c), so
 * rules such as ONNX slice clamping are written once.
 *
 * Each function validates the attributes against the input type, writes
 * the resolved values and returns TG_OK, or returns an error status with a
 * reason (no op name, no shapes) in err.
 */
#ifndef TG_GRAPH_INFER_SHAPE_H
#define TG_GRAPH_INFER_SHAPE_H

#include "op.h"

/*
 * Transpose permutation: an empty perm reverses the dims; negative entries
 * count from the end.  Writes in->ndim entries to perm (out dim i is input
 * dim perm[i]).
 */
tg_status graph_transpose_perm(const graph_type *in, const graph_ints *p,
                               int *perm, char *err, size_t errlen);

/*
 * ONNX Slice, resolved per input dim: out dim i holds input elements
 * start[i], start[i]+step[i], ... (len[i] of them).  Dims that no axis
 * names get start 0, step 1, len = the input dim.
 */
typedef struct graph_slice_plan {
    int64_t start[GRAPH_MAX_DIMS];
    int64_t step[GRAPH_MAX_DIMS];
    int64_t len[GRAPH_MAX_DIMS];
} graph_slice_plan;

tg_status graph_slice_resolve(const graph_type *in,
                              const graph_slice_attrs *a,
                              graph_slice_plan *plan, char *err,
                              size_t errlen);

#endif
