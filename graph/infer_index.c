/*
 * infer_index.c - shape and dtype inference for the element-indexing ops:
 * gather_elements and scatter_elements (ONNX GatherElements and
 * ScatterElements, torch.gather and Tensor.scatter / scatter_reduce).
 *
 * Rules, as ONNX Runtime and PyTorch check them (the ONNX text only asks
 * for equal ranks; ONNX's Python reference wants the dims off the axis
 * equal, a special case): x has at least one dim; the indices are i64 or
 * i32, of x's rank, and no larger than x on every dim but the axis (along
 * the axis any count is fine: each index names one element of it); the
 * updates of scatter_elements have x's dtype and exactly the indices'
 * shape.  Index values are data: the kernels check them when they run.
 */
#include <stdio.h>

#include "infer.h"

#define LL(x) ((long long)(x))

static const char *const reduction_names[] = {"none", "add", "mul", "max", "min"};

const char *graph_scatter_reduction_name(int64_t r)
{
    return r >= 0 && r < (int64_t)(sizeof reduction_names / sizeof reduction_names[0])
               ? reduction_names[r]
               : NULL;
}

/*
 * What both ops check of x and the indices: the indices' dtype, the axis,
 * equal ranks and the indices' dims.  Sets *ax to the axis in 0..ndim-1.
 */
static tg_status check_indices(graph_infer_ctx *c, int64_t axis, int *ax)
{
    const graph_type *x = &c->in[0], *idx = &c->in[1];
    char xs[160], is[160];
    if (idx->dtype != GRAPH_I64 && idx->dtype != GRAPH_I32)
        return graph_infer_fail(c, TG_ERR_DTYPE, "indices must be i64 or i32, got %s",
                                graph_dtype_name(idx->dtype));
    *ax = graph_axis(axis, x->ndim);
    if (*ax < 0)
        return graph_infer_fail(c, TG_ERR_AXIS, "axis %lld out of range for %d dims", LL(axis),
                                (int)x->ndim);
    if (idx->ndim != x->ndim)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "indices have %d dims, data %d (they must have the same rank)",
                                (int)idx->ndim, (int)x->ndim);
    for (int d = 0; d < x->ndim; d++)
        if (d != *ax && idx->dim[d] > x->dim[d])
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "indices %s are larger than data %s on dim %d (only "
                                    "axis %d may be)",
                                    graph_shape_str(idx, is, sizeof is),
                                    graph_shape_str(x, xs, sizeof xs), d, *ax);
    return TG_OK;
}

tg_status graph_infer_gather_elements(graph_infer_ctx *c)
{
    const graph_gather_elements_attrs *a = c->attrs;
    int ax;
    tg_status st = check_indices(c, a->axis, &ax);
    if (st != TG_OK)
        return st;
    c->out[0] = c->in[1];
    c->out[0].dtype = c->in[0].dtype;
    return TG_OK;
}

tg_status graph_infer_scatter_elements(graph_infer_ctx *c)
{
    const graph_scatter_elements_attrs *a = c->attrs;
    const graph_type *x = &c->in[0], *idx = &c->in[1], *u = &c->in[2];
    const char *red = graph_scatter_reduction_name(a->reduction);
    char us[160], is[160];
    int ax;
    if (!red)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "reduction must be 0 (none), 1 (add), 2 (mul), 3 (max) or "
                                "4 (min), got %lld", LL(a->reduction));
    if (a->reduction != GRAPH_SCATTER_NONE && x->dtype == GRAPH_BOOL)
        return graph_infer_fail(c, TG_ERR_DTYPE, "reduction %s is not defined for bool", red);
    tg_status st = check_indices(c, a->axis, &ax);
    if (st != TG_OK)
        return st;
    if (u->dtype != x->dtype)
        return graph_infer_fail(c, TG_ERR_DTYPE, "updates are %s, data %s (they must match)",
                                graph_dtype_name(u->dtype), graph_dtype_name(x->dtype));
    int same = u->ndim == idx->ndim;
    for (int d = 0; same && d < idx->ndim; d++)
        same = u->dim[d] == idx->dim[d];
    if (!same)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "updates %s and indices %s differ (they must have the same "
                                "shape)", graph_shape_str(u, us, sizeof us),
                                graph_shape_str(idx, is, sizeof is));
    c->out[0] = *x;
    return TG_OK;
}
