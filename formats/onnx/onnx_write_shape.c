/*
 * onnx_write_shape.c - ONNX export of the shape and data-movement ops
 * (reshape, flatten, transpose, concat, split, slice, pad, squeeze,
 * unsqueeze, expand, gather, gather_elements, scatter_elements) and of
 * the blocked layout (to_blocked, from_blocked), for onnx_write_ops.c.
 *
 * Lists opset 17 takes as inputs are int64 initializers.  A shape export
 * makes up itself (flatten's, the blocked layout's) copies dynamic dims
 * from the running tensor, so a graph traced with a dynamic batch runs at
 * any batch: as Reshape's 0 when the dim keeps its place, else with
 * Shape + Concat + Gather; static shapes are initializers.
 */
#include <stdio.h>

#include "../../graph/infer_shape.h"
#include "onnx_write_impl.h"
#include "../../graph/graph_impl.h"

/* ---- shapes ---- */

/*
 * A 1-D int64 shape of n dims for a Reshape of src (of src_nd dims): dim
 * i is lit[i], or, when copy[i] >= 0, dim copy[i] of src as it runs.  A
 * dim copied to the same place is Reshape's 0 ("keep this dim"; *keep
 * set) when no literal is a real 0, so the usual dynamic batch needs no
 * shape arithmetic and the importer reads it back; other copies take
 * Gather(Concat(Shape(src), lit)).  Without copies it is an initializer.
 */
static const char *shape_of(onnx_w *w, const int64_t *lit, const int *copy, int n,
                            const char *src, int src_nd, int *keep)
{
    int64_t idx[GRAPH_MAX_DIMS], val[GRAPH_MAX_DIMS];
    int copies = 0, real_zero = 0;
    for (int i = 0; i < n; i++)
        real_zero |= copy[i] < 0 && lit[i] == 0;
    *keep = 0;
    for (int i = 0; i < n; i++) {
        val[i] = lit[i];
        if (copy[i] == i && i < src_nd && !real_zero) {
            val[i] = 0;
            *keep = 1;
            continue;
        }
        copies += copy[i] >= 0;
    }
    if (!copies)
        return onnxw_const_i64s(w, "shape", val, n);
    *keep = 0; /* the Gather below copies every dim, the kept ones too */
    for (int i = 0; i < n; i++)
        idx[i] = copy[i] >= 0 ? copy[i] : src_nd + i;
    const char *s = onnxw_tmp(w, "src_shape"), *cat = onnxw_tmp(w, "shape_parts");
    const char *y = onnxw_tmp(w, "shape");
    onnxw_node1(w, "Shape", src, s);
    onnxw_attr_i(w, onnxw_node2(w, "Concat", s, onnxw_const_i64s(w, "shape_lit", lit, n), cat),
                 "axis", 0);
    onnxw_attr_i(w, onnxw_node2(w, "Gather", cat, onnxw_const_i64s(w, "shape_idx", idx, n), y),
                 "axis", 0);
    return y;
}

/*
 * Reshape; allowzero when a literal 0 is a real size (not with -1, and
 * never when a 0 means "keep": keep).
 */
static void reshape(onnx_w *w, const char *x, const char *shape, const int64_t *lit,
                    int n, int keep, const char *y)
{
    int zero = 0, minus = 0;
    for (int i = 0; i < n; i++) {
        zero |= lit[i] == 0;
        minus |= lit[i] == -1;
    }
    Onnx__NodeProto *o = onnxw_node2(w, "Reshape", x, shape, y);
    if (zero && !minus && !keep)
        onnxw_attr_i(w, o, "allowzero", 1);
}

/* Reshape of x (src_nd dims) to lit / copy, as shape_of. */
static void reshape_to(onnx_w *w, const char *x, int src_nd, const int64_t *lit,
                       const int *copy, int n, const char *y)
{
    int keep;
    const char *shape = shape_of(w, lit, copy, n, x, src_nd, &keep);
    reshape(w, x, shape, lit, n, keep, y);
}

static tg_status emit_reshape(onnx_w *w)
{
    const graph_reshape_attrs *a = tg_node_attrs(w->cur);
    reshape(w, onnxw_in(w, 0), onnxw_const_i64s(w, "shape", a->shape.v, a->shape.n), a->shape.v,
            a->shape.n, 0, onnxw_out(w, 0));
    return w->st;
}

/*
 * flatten (PyTorch's start..end) as Reshape to the output's shape; its
 * dynamic dims are copied from x, the merged one given as -1.
 */
static tg_status emit_flatten(onnx_w *w)
{
    const graph_flatten_attrs *a = tg_node_attrs(w->cur);
    const graph_value *xv = &w->g->values[w->cur->in[0]];
    const graph_value *yv = &w->g->values[w->cur->out[0]];
    int nd = xv->type.ndim, ond = yv->type.ndim;
    int s = nd ? graph_axis(a->start, nd) : 0, e = nd ? graph_axis(a->end, nd) : 0;
    int64_t lit[GRAPH_MAX_DIMS];
    int copy[GRAPH_MAX_DIMS];
    for (int j = 0; j < ond; j++) {
        lit[j] = yv->type.dim[j];
        copy[j] = -1;
        if (!(yv->dyn >> j & 1) || nd == 0)
            continue;
        if (j == s)
            lit[j] = -1;
        else
            copy[j] = j < s ? j : j + (e - s);
    }
    reshape_to(w, onnxw_in(w, 0), nd, lit, copy, ond, onnxw_out(w, 0));
    return w->st;
}

static tg_status emit_transpose(onnx_w *w)
{
    const graph_transpose_attrs *a = tg_node_attrs(w->cur);
    const graph_type *x = &w->g->values[w->cur->in[0]].type;
    int perm[GRAPH_MAX_DIMS];
    int64_t p[GRAPH_MAX_DIMS];
    char why[256];
    if (graph_transpose_perm(x, &a->perm, perm, why, sizeof why) != TG_OK)
        return onnxw_unsupported(w, why);
    for (int i = 0; i < x->ndim; i++)
        p[i] = perm[i];
    onnxw_attr_ints(w, onnxw_node1(w, "Transpose", onnxw_in(w, 0), onnxw_out(w, 0)), "perm", p,
                    x->ndim);
    return w->st;
}

static tg_status emit_concat(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_concat_attrs *a = tg_node_attrs(n);
    const char **in = onnxw_alloc(w, (size_t)n->nin * sizeof *in), *y = onnxw_out(w, 0);
    for (int k = 0; in && k < n->nin; k++)
        in[k] = onnxw_in(w, k);
    if (in)
        onnxw_attr_i(w, onnxw_node(w, "Concat", in, n->nin, &y, 1), "axis", a->axis);
    return w->st;
}

/* Split's sizes are the outputs' (a -1 resolved). */
static tg_status emit_split(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_split_attrs *a = tg_node_attrs(n);
    const graph_type *x = &w->g->values[n->in[0]].type;
    int ax = graph_axis(a->axis, x->ndim);
    int64_t sizes[GRAPH_MAX_INTS];
    const char **out = onnxw_alloc(w, (size_t)n->nout * sizeof *out);
    if (!out)
        return w->st;
    for (int k = 0; k < n->nout; k++) {
        sizes[k] = w->g->values[n->out[k]].type.dim[ax];
        out[k] = onnxw_out(w, k);
    }
    const char *in[2] = {onnxw_in(w, 0), onnxw_const_i64s(w, "split", sizes, n->nout)};
    onnxw_attr_i(w, onnxw_node(w, "Split", in, 2, out, n->nout), "axis", a->axis);
    return w->st;
}

static tg_status emit_slice(onnx_w *w)
{
    const graph_slice_attrs *a = tg_node_attrs(w->cur);
    int n = a->starts.n;
    if (n == 0) {
        onnxw_node1(w, "Identity", onnxw_in(w, 0), onnxw_out(w, 0));
        return w->st;
    }
    int64_t axes[GRAPH_MAX_DIMS], steps[GRAPH_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        axes[i] = a->axes.n ? a->axes.v[i] : i;
        steps[i] = a->steps.n ? a->steps.v[i] : 1;
    }
    const char *in[5] = {onnxw_in(w, 0), onnxw_const_i64s(w, "starts", a->starts.v, n),
                         onnxw_const_i64s(w, "ends", a->ends.v, n),
                         onnxw_const_i64s(w, "axes", axes, n),
                         onnxw_const_i64s(w, "steps", steps, n)};
    const char *y = onnxw_out(w, 0);
    onnxw_node(w, "Slice", in, 5, &y, 1);
    return w->st;
}

/* Pad (constant mode) with pads in ONNX order and the value in x's dtype. */
static tg_status emit_pad(onnx_w *w)
{
    const graph_pad_attrs *a = tg_node_attrs(w->cur);
    graph_dtype dt = w->g->values[w->cur->in[0]].type.dtype;
    const char *in[3] = {onnxw_in(w, 0), onnxw_const_i64s(w, "pads", a->pads.v, a->pads.n),
                         onnxw_const_scalar(w, "value", dt, a->value)};
    const char *y = onnxw_out(w, 0);
    onnxw_node(w, "Pad", in, 3, &y, 1);
    return w->st;
}

/* Squeeze with explicit axes (empty: every size-1 dim as traced). */
static tg_status emit_squeeze(onnx_w *w)
{
    const graph_squeeze_attrs *a = tg_node_attrs(w->cur);
    const graph_type *x = &w->g->values[w->cur->in[0]].type;
    int64_t axes[GRAPH_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < a->axes.n; i++)
        axes[n++] = a->axes.v[i];
    for (int d = 0; a->axes.n == 0 && d < x->ndim; d++)
        if (x->dim[d] == 1)
            axes[n++] = d;
    if (n == 0)
        onnxw_node1(w, "Identity", onnxw_in(w, 0), onnxw_out(w, 0));
    else
        onnxw_node2(w, "Squeeze", onnxw_in(w, 0), onnxw_const_i64s(w, "axes", axes, n),
                    onnxw_out(w, 0));
    return w->st;
}

static tg_status emit_list_op(onnx_w *w)
{
    const graph_node *n = w->cur;
    const char *x = onnxw_in(w, 0), *y = onnxw_out(w, 0);
    if (n->op == GRAPH_OP_unsqueeze) {
        const graph_unsqueeze_attrs *a = tg_node_attrs(n);
        onnxw_node2(w, "Unsqueeze", x, onnxw_const_i64s(w, "axes", a->axes.v, a->axes.n), y);
    } else if (n->op == GRAPH_OP_expand) {
        const graph_expand_attrs *a = tg_node_attrs(n);
        onnxw_node2(w, "Expand", x, onnxw_const_i64s(w, "shape", a->shape.v, a->shape.n), y);
    } else { /* gather: ONNX Gather, negative indices included */
        const graph_gather_attrs *a = tg_node_attrs(n);
        onnxw_attr_i(w, onnxw_node2(w, "Gather", x, onnxw_in(w, 1), y), "axis", a->axis);
    }
    return w->st;
}

/* GatherElements; ScatterElements with its reduction (none, the default,
 * is left out; max and min make the model opset 18: onnx_write.c).  Our
 * rule for duplicate indices without a reduction (the last one wins) is
 * ONNX Runtime's order too; ONNX leaves it open. */
static tg_status emit_elements(onnx_w *w)
{
    const graph_node *n = w->cur;
    const char *y = onnxw_out(w, 0);
    if (n->op == GRAPH_OP_gather_elements) {
        const graph_gather_elements_attrs *a = tg_node_attrs(n);
        onnxw_attr_i(w, onnxw_node2(w, "GatherElements", onnxw_in(w, 0), onnxw_in(w, 1), y),
                     "axis", a->axis);
        return w->st;
    }
    const graph_scatter_elements_attrs *a = tg_node_attrs(n);
    const char *in[3] = {onnxw_in(w, 0), onnxw_in(w, 1), onnxw_in(w, 2)};
    Onnx__NodeProto *o = onnxw_node(w, "ScatterElements", in, 3, &y, 1);
    onnxw_attr_i(w, o, "axis", a->axis);
    if (a->reduction != GRAPH_SCATTER_NONE) /* infer checked it has a name */
        onnxw_attr_s(w, o, "reduction", graph_scatter_reduction_name(a->reduction));
    return w->st;
}

/* ---- blocked layout ---- */

/*
 * Plain [N,C,H,W] x to blocked [N,ceil(C/B),H,W,B], B = block (a C that
 * is not a multiple of B is first padded with zero channels).  N, H and
 * W sit at dims 0, 2, 3 in both layouts: a dynamic one (bit in dyn) is
 * copied from x at run time.
 */
void onnxw_to_blocked(onnx_w *w, const char *x, const graph_type *t, uint32_t dyn,
                       int64_t block, const char *y)
{
    int64_t cb = (t->dim[1] + block - 1) / block;
    int64_t lit[5] = {t->dim[0], cb, block, t->dim[2], t->dim[3]};
    if (t->dim[1] % block) {
        const int64_t pads[8] = {0, 0, 0, 0, 0, cb * block - t->dim[1], 0, 0};
        const char *in[2] = {x, onnxw_const_i64s(w, "pads", pads, 8)};
        const char *xp = onnxw_tmp(w, "x_padded");
        onnxw_node(w, "Pad", in, 2, &xp, 1);
        x = xp;
    }
    int copy[5] = {dyn & 1 ? 0 : -1, -1, -1, dyn >> 2 & 1 ? 2 : -1, dyn >> 3 & 1 ? 3 : -1};
    static const int64_t perm[5] = {0, 1, 3, 4, 2};
    const char *r = onnxw_tmp(w, "ncbhw");
    reshape_to(w, x, 4, lit, copy, 5, r);
    onnxw_attr_ints(w, onnxw_node1(w, "Transpose", r, y), "perm", perm, 5);
}

/*
 * Blocked [N,ceil(C/B),H,W,B] x (type t, B its dim 4) back to plain
 * [N,C,H,W] (channels: C; 0 for every lane), the padded lanes sliced off.
 */
void onnxw_from_blocked(onnx_w *w, const char *x, const graph_type *t, uint32_t dyn,
                         int64_t channels, const char *y)
{
    /* Dims copied from the transposed tensor [N,C/B,B,H,W]: N, H, W at
     * 0, 3, 4. */
    int64_t lit[4] = {t->dim[0], t->dim[1] * t->dim[4], t->dim[2], t->dim[3]};
    int copy[4] = {dyn & 1 ? 0 : -1, -1, dyn >> 2 & 1 ? 3 : -1, dyn >> 3 & 1 ? 4 : -1};
    static const int64_t perm[5] = {0, 1, 4, 2, 3};
    const char *tr = onnxw_tmp(w, "ncbhw");
    onnxw_attr_ints(w, onnxw_node1(w, "Transpose", x, tr), "perm", perm, 5);
    if (!channels || channels == lit[1]) {
        reshape_to(w, tr, 5, lit, copy, 4, y);
        return;
    }
    const char *yp = onnxw_tmp(w, "y_padded");
    reshape_to(w, tr, 5, lit, copy, 4, yp);
    const int64_t zero = 0, one = 1;
    const char *in[4] = {yp, onnxw_const_i64s(w, "starts", &zero, 1),
                         onnxw_const_i64s(w, "ends", &channels, 1),
                         onnxw_const_i64s(w, "axes", &one, 1)};
    onnxw_node(w, "Slice", in, 4, &y, 1);
}

static tg_status emit_blocked(onnx_w *w)
{
    const graph_value *x = &w->g->values[w->cur->in[0]];
    if (w->cur->op == GRAPH_OP_to_blocked)
        onnxw_to_blocked(w, onnxw_in(w, 0), &x->type, x->dyn,
                         ((const graph_to_blocked_attrs *)tg_node_attrs(w->cur))->block,
                         onnxw_out(w, 0));
    else
        onnxw_from_blocked(w, onnxw_in(w, 0), &x->type, x->dyn,
                           ((const graph_from_blocked_attrs *)tg_node_attrs(w->cur))->channels,
                           onnxw_out(w, 0));
    return w->st;
}

tg_status onnxw_emit_shape_op(onnx_w *w)
{
    switch (w->cur->op) {
    case GRAPH_OP_reshape: return emit_reshape(w);
    case GRAPH_OP_flatten: return emit_flatten(w);
    case GRAPH_OP_transpose: return emit_transpose(w);
    case GRAPH_OP_concat: return emit_concat(w);
    case GRAPH_OP_split: return emit_split(w);
    case GRAPH_OP_slice: return emit_slice(w);
    case GRAPH_OP_pad: return emit_pad(w);
    case GRAPH_OP_squeeze: return emit_squeeze(w);
    case GRAPH_OP_unsqueeze:
    case GRAPH_OP_expand:
    case GRAPH_OP_gather: return emit_list_op(w);
    case GRAPH_OP_gather_elements:
    case GRAPH_OP_scatter_elements: return emit_elements(w);
    case GRAPH_OP_to_blocked:
    case GRAPH_OP_from_blocked: return emit_blocked(w);
    default: return onnxw_unsupported(w, "op has no ONNX export");
    }
}
