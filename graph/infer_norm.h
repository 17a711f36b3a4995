/*
 * infer_norm.h - axis resolution shared by the normalization and reduction
 * infer functions (graph/infer_norm.c) and their CPU kernels
 * (eager/kernels_norm.c, eager/kernels_reduce.c), so the axis rules are
 * written once.
 *
 * Axis convention (as PyTorch): a negative axis counts from the end; on a
 * 0-d tensor axis 0 and -1 name the scalar itself, which then acts as a
 * length-1 dim.
 */
#ifndef TG_GRAPH_INFER_NORM_H
#define TG_GRAPH_INFER_NORM_H

#include "op.h"

/*
 * Normalizes axis for a tensor of ndim dims: 0..ndim-1, or 0 for a 0-d
 * tensor given 0 or -1.  Returns -1 when out of range.
 */
int graph_norm_axis(int64_t axis, int ndim);

/*
 * Resolves reduction axes: sets mask[d] = 1 for each reduced dim of in
 * (all dims when axes is empty).  Returns TG_OK, or TG_ERR_AXIS /
 * TG_ERR_ARG with a reason in err for an axis out of range, a duplicate
 * axis, or a bad list length.
 */
tg_status graph_reduce_mask(const graph_type *in, const graph_ints *axes,
                            unsigned char mask[GRAPH_MAX_DIMS], char *err,
                            size_t errlen);

#endif
