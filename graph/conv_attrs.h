/*
 * conv_attrs.h - reading the attribute lists of the conv and pool ops
 * (stride, dilation, kernel, output_padding, padding) once
 * graph/infer_linalg.c has validated them (internal: not installed).
 * One definition for every reader: the kernels, the OpenCL backend, the
 * optimizer, the ONNX writer and the gradient rules.
 */
#ifndef TG_GRAPH_CONV_ATTRS_H
#define TG_GRAPH_CONV_ATTRS_H

#include "dtype.h"

/* (h, w) from a 2-entry list; 1 entry means both; 0 entries means def. */
static inline void graph_ints_pair(const graph_ints *v, int64_t def, int64_t out[2])
{
    out[0] = v->n > 0 ? v->v[0] : def;
    out[1] = v->n > 1 ? v->v[1] : out[0];
}

/*
 * Padding as (top, left, bottom, right): 0 entries none, 1 all sides,
 * 2 (h, w) on both sides, 4 (top, left, bottom, right).
 */
static inline void graph_ints_pad4(const graph_ints *v, int64_t out[4])
{
    if (v->n == 4) {
        for (int i = 0; i < 4; i++)
            out[i] = v->v[i];
        return;
    }
    graph_ints_pair(v, 0, out);
    out[2] = out[0];
    out[3] = out[1];
}

#endif
