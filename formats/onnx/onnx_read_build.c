/*
 * onnx_read_build.c - pieces of graph several of the ONNX importer's
 * converters build (declared in onnx_read_impl.h): a reshape to a shape
 * that may keep a dynamic batch, a slice, expand or concat along one axis,
 * an INTS operand from an input or an attribute, Slice's and Cast's
 * operands, a reduction's axes and keepdims.  A helper file: it calls
 * onnx_read_node.c and onnx_read_base.c, never a converter
 * (docs/ARCHITECTURE.md, "Leaves").
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"

tg_status onnx_reshape_to(onnx_reader *r, int32_t x, int dyn_batch, const int64_t *shape,
                          int n, int32_t *y)
{
    graph_reshape_attrs a;
    memset(&a, 0, sizeof a);
    a.shape.n = n;
    for (int i = 0; i < n; i++)
        a.shape.v[i] = i == 0 && dyn_batch ? -1 : shape[i];
    return onnx_add(r, GRAPH_OP_reshape, &x, 1, &a, y, 1);
}

/* y = x[start:end:step] along axis ax. */
tg_status onnx_slice_axis(onnx_reader *r, int32_t x, int ax, int64_t start, int64_t end,
                             int64_t step, int32_t *y)
{
    graph_slice_attrs a;
    memset(&a, 0, sizeof a);
    a.axes.n = a.starts.n = a.ends.n = a.steps.n = 1;
    a.axes.v[0] = ax;
    a.starts.v[0] = start;
    a.ends.v[0] = end;
    a.steps.v[0] = step;
    return onnx_add(r, GRAPH_OP_slice, &x, 1, &a, y, 1);
}

/* y = x broadcast to n along axis ax (x's dim there is 1). */
tg_status onnx_expand_axis(onnx_reader *r, int32_t x, int ax, int64_t n, int32_t *y)
{
    const graph_type *t = onnx_vtype(r, x);
    graph_expand_attrs a;
    memset(&a, 0, sizeof a);
    a.shape.n = t->ndim;
    for (int d = 0; d < t->ndim; d++)
        a.shape.v[d] = d == ax ? n : t->dim[d];
    return onnx_add(r, GRAPH_OP_expand, &x, 1, &a, y, 1);
}

/* y = concat(parts, axis ax), the parts with a negative id left out. */
tg_status onnx_concat_axis(onnx_reader *r, const int32_t *parts, int n, int ax, int32_t *y)
{
    int32_t in[3];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (parts[i] >= 0)
            in[k++] = parts[i];
    if (k == 1) {
        *y = in[0];
        return TG_OK;
    }
    graph_concat_attrs a = {ax};
    return onnx_add(r, GRAPH_OP_concat, in, k, &a, y, 1);
}

tg_status onnx_ints_operand(onnx_reader *r, int input, int64_t since,
                              const char *name, graph_ints *out, int *present)
{
    memset(out, 0, sizeof *out);
    if (r->opset >= since) {
        if (onnx_attr(r, name))
            return onnx_fail(r, TG_ERR_FORMAT, "%s is an input at opset %lld", name,
                             LL(r->opset));
        *present = onnx_has_input(r, input);
        return *present ? onnx_const_ints(r, input, name, out, GRAPH_MAX_INTS) : TG_OK;
    }
    if (onnx_has_input(r, input))
        return onnx_fail(r, TG_ERR_FORMAT, "%s is an attribute at opset %lld", name,
                         LL(r->opset));
    return onnx_attr_ints(r, name, out, GRAPH_MAX_INTS, present);
}

tg_status onnx_slice_attrs(onnx_reader *r, graph_slice_attrs *a)
{
    int has_starts, has_ends, has_axes;
    memset(a, 0, sizeof *a);
    tg_status st = onnx_ints_operand(r, 1, 10, "starts", &a->starts, &has_starts);
    if (st == TG_OK)
        st = onnx_ints_operand(r, 2, 10, "ends", &a->ends, &has_ends);
    if (st == TG_OK)
        st = onnx_ints_operand(r, 3, 10, "axes", &a->axes, &has_axes);
    if (st == TG_OK && r->opset >= 10 && onnx_has_input(r, 4))
        st = onnx_const_ints(r, 4, "steps", &a->steps, GRAPH_MAX_INTS);
    if (st == TG_OK && (!has_starts || !has_ends))
        st = onnx_fail(r, TG_ERR_FORMAT, "starts and ends are required");
    return st;
}

tg_status onnx_cast_to(onnx_reader *r, graph_dtype *dt)
{
    int64_t to;
    if (!onnx_attr(r, "to"))
        return onnx_fail(r, TG_ERR_FORMAT, "attribute 'to' is missing");
    tg_status st = onnx_attr_int(r, "to", 0, &to);
    if (st != TG_OK)
        return st;
    if (to < INT32_MIN || to > INT32_MAX || !onnx_dtype_from_code((int32_t)to, dt))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "cast to %s is not supported",
                         onnx_code_name(to < 0 || to > 100 ? -1 : (int32_t)to));
    return TG_OK;
}

tg_status onnx_reduce_args(onnx_reader *r, int sum, graph_ints *axes, int64_t *keep,
                           int *noop_out)
{
    int64_t noop;
    /* axes moved from an attribute to an input: ReduceSum at 13, the
     * others at 18. */
    int axes_input = r->opset >= (sum ? 13 : 18);
    tg_status st = onnx_attr_int(r, "keepdims", 1, keep);
    if (st == TG_OK)
        st = onnx_attr_int(r, "noop_with_empty_axes", 0, &noop);
    if (st == TG_OK && axes_input && onnx_attr(r, "axes"))
        st = onnx_fail(r, TG_ERR_FORMAT, "axes is an input at opset %lld", LL(r->opset));
    if (st == TG_OK && !axes_input && r->node->n_input > 1)
        st = onnx_fail(r, TG_ERR_FORMAT, "axes is an attribute at opset %lld",
                       LL(r->opset));
    memset(axes, 0, sizeof *axes);
    if (st == TG_OK && axes_input && onnx_has_input(r, 1))
        st = onnx_const_ints(r, 1, "axes", axes, GRAPH_MAX_DIMS);
    else if (st == TG_OK && !axes_input)
        st = onnx_attr_ints(r, "axes", axes, GRAPH_MAX_DIMS, NULL);
    *noop_out = st == TG_OK && axes->n == 0 && noop;
    return st;
}
