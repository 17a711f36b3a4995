/*
 * onnx_read_shape.c - the ONNX importer's converters of shape and
 * data-movement ops (Reshape ... Gather, GatherElements, ScatterElements),
 * and of the ops that make constants at load time: Constant, Shape and
 * ConstantOfShape.
 *
 * Operands ONNX passes as tensors but tracegraph keeps as attributes
 * (Reshape's shape, Slice's starts, Pad's pads, axes from opset 13) must
 * be constants known at load time.  Where an ONNX version moved an
 * attribute into an input, both forms are read, by the model's opset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"
#include "../../graph/graph_impl.h"

/* Adds op on input 0 with attrs and binds output 0. */
static tg_status unary_node(onnx_reader *r, graph_op op, const void *attrs)
{
    int32_t x, y;
    tg_status st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_add(r, op, &x, 1, attrs, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- Reshape, Flatten, Transpose ---- */

/*
 * A shape with -1 and one entry that is symbol s, of an input whose only
 * dynamic dim is s (view(x.shape[0], -1)): the -1 does not depend on s,
 * so it becomes its traced value and the entry of s the -1.  1 if done.
 */
static int swap_minus(const graph_value *x, uint32_t dyn, graph_ints *shape,
                      int at, int8_t s)
{
    int64_t numel = graph_type_numel(&x->type), rest = 1;
    int minus_at = -1;
    if (s < 0 || __builtin_popcount(dyn) != 1 || !(x->dyn & dyn) ||
        x->sym[__builtin_ctz(dyn)] != s)
        return 0;
    for (int i = 0; i < shape->n; i++) {
        if (shape->v[i] == -1)
            minus_at = i;
        else if (__builtin_mul_overflow(rest, shape->v[i], &rest))
            return 0;
    }
    if (rest <= 0 || numel % rest)
        return 0;
    shape->v[minus_at] = numel / rest;
    shape->v[at] = -1;
    return 1;
}

/*
 * Reshape: a 0 copies the input's dim there unless allowzero is 1.  One
 * entry that follows a dynamic dim (a copied dynamic dim, or an entry
 * computed from Shape) becomes the shape's -1 when it has none (or when
 * swap_minus applies), so the reshape follows the dim instead of fixing
 * its loaded size; otherwise the traced sizes are used and the node is
 * specialized.
 */
tg_status onnx_cv_reshape(onnx_reader *r, const onnx_op *op)
{
    int64_t allowzero;
    graph_reshape_attrs a;
    int8_t sym[GRAPH_MAX_DIMS];
    int32_t xv;
    tg_status st = onnx_attr_int(r, "allowzero", 0, &allowzero);
    if (st == TG_OK)
        st = onnx_shape_ints(r, 1, "shape", &a.shape, sym, GRAPH_MAX_DIMS);
    if (st == TG_OK)
        st = onnx_input(r, 0, &xv);
    if (st != TG_OK)
        return st;
    const graph_value *x = &r->g->values[xv];
    uint32_t dyn = onnx_dynamic_dims(r, xv);
    int minus = 0, dyn_at = -1, ndyn = 0;
    for (int i = 0; i < a.shape.n; i++) {
        if (a.shape.v[i] == 0 && !allowzero) {
            if (i >= x->type.ndim)
                return onnx_fail(r, TG_ERR_FORMAT, "shape entry %d is 0 (copy the "
                                 "input's dim), the input has %d dims", i,
                                 (int)x->type.ndim);
            a.shape.v[i] = x->type.dim[i];
            sym[i] = onnx_dim_mark(r, xv, dyn, i);
        }
        minus |= a.shape.v[i] == -1;
        if (sym[i] != ONNX_SYM_CONST && a.shape.v[i] != -1)
            dyn_at = i, ndyn++;
    }
    if (ndyn == 1 && !minus) {
        /* the entry becomes the -1 only where the shape as written fits x:
         * a -1 would absorb a wrong count, or be ambiguous over 0 elements */
        int64_t n = 1;
        for (int i = 0; i < a.shape.n && n >= 0; i++)
            if (a.shape.v[i] < 0 || __builtin_mul_overflow(n, a.shape.v[i], &n))
                n = -1;
        if (n == graph_type_numel(&x->type) && n > 0)
            a.shape.v[dyn_at] = -1;
        else if (n == 0)
            r->specialized = 1;
    } else if (ndyn && !(ndyn == 1 && swap_minus(x, dyn, &a.shape, dyn_at, sym[dyn_at])))
        r->specialized = 1;
    return unary_node(r, GRAPH_OP_reshape, &a);
}

/* Flatten(axis): [prod(dims[:axis]), prod(dims[axis:])] as a reshape; a
 * side with a dynamic dim is the -1 (both sides: the first, and the node
 * is specialized). */
tg_status onnx_cv_flatten(onnx_reader *r, const onnx_op *op)
{
    int64_t axis;
    int32_t x;
    tg_status st = onnx_attr_int(r, "axis", 1, &axis);
    if (st == TG_OK) /* Flatten-1 takes floats only */
        st = onnx_older_types(r, 0, 9, 0);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    const graph_type *t = onnx_vtype(r, x);
    int nd = t->ndim;
    if (axis < -nd || axis > nd)
        return onnx_fail(r, TG_ERR_FORMAT, "axis %lld out of range for %d dims",
                         LL(axis), nd);
    if (axis < 0)
        axis += nd;
    int64_t outer = 1, inner = 1;
    uint32_t dyn = onnx_dynamic_dims(r, x);
    for (int d = 0; d < nd; d++)
        *(d < axis ? &outer : &inner) *= t->dim[d]; /* the input exists: no overflow */
    graph_reshape_attrs a = {{2, {outer, inner}}};
    uint32_t before = dyn & ((1u << axis) - 1), after = dyn & ~((1u << axis) - 1);
    /* a -1 is ambiguous where the other side has 0 elements */
    if (before && inner)
        a.shape.v[0] = -1;
    else if (after && !before && outer)
        a.shape.v[1] = -1;
    if ((before && after) || (before && !inner) || (after && !before && !outer))
        r->specialized = 1; /* a side keeps its traced size */
    return unary_node(r, GRAPH_OP_reshape, &a);
}

tg_status onnx_cv_transpose(onnx_reader *r, const onnx_op *op)
{
    graph_transpose_attrs a;
    tg_status st = onnx_attr_ints(r, "perm", &a.perm, GRAPH_MAX_DIMS, NULL);
    return st == TG_OK ? unary_node(r, GRAPH_OP_transpose, &a) : st;
}

/* ---- Concat, Split ---- */

tg_status onnx_cv_concat(onnx_reader *r, const onnx_op *op)
{
    int32_t in[GRAPH_MAX_NODE_IO], y;
    graph_concat_attrs a;
    size_t n = r->node->n_input;
    if (!onnx_attr(r, "axis"))
        return onnx_fail(r, TG_ERR_FORMAT, "axis is missing");
    if (n > GRAPH_MAX_NODE_IO)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "%zu inputs (at most %d)", n,
                         GRAPH_MAX_NODE_IO);
    tg_status st = onnx_attr_int(r, "axis", 0, &a.axis);
    for (size_t i = 0; st == TG_OK && i < n; i++)
        st = onnx_input(r, (int)i, &in[i]);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_concat, in, (int)n, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* Split sizes when none are given: n equal parts; from opset 18 (with
 * num_outputs) the last may be smaller. */
static tg_status equal_parts(onnx_reader *r, int64_t len, graph_ints *sizes)
{
    int64_t parts;
    tg_status st = onnx_attr_int(r, "num_outputs", (int64_t)r->node->n_output, &parts);
    if (st != TG_OK)
        return st;
    if (parts < 1 || parts > GRAPH_MAX_INTS)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "%lld parts (at most %d)", LL(parts),
                         GRAPH_MAX_INTS);
    int64_t each = len / parts;
    if (len % parts && r->opset < 18)
        return onnx_fail(r, TG_ERR_FORMAT, "dim of %lld does not split into %lld "
                         "equal parts", LL(len), LL(parts));
    if (len % parts)
        each = len / parts + 1;
    sizes->n = (int32_t)parts;
    for (int64_t i = 0; i < parts; i++) {
        int64_t left = len - i * each;
        sizes->v[i] = left < 0 ? 0 : left < each ? left : each;
    }
    return TG_OK;
}

tg_status onnx_cv_split(onnx_reader *r, const onnx_op *op)
{
    graph_split_attrs a;
    int present;
    int32_t x, out[GRAPH_MAX_INTS];
    tg_status st = onnx_attr_int(r, "axis", 0, &a.axis);
    if (st == TG_OK)
        st = onnx_ints_operand(r, 1, 13, "split", &a.sizes, &present);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    const graph_type *t = onnx_vtype(r, x);
    int ax = graph_axis(a.axis, t->ndim);
    if (ax < 0)
        return onnx_fail(r, TG_ERR_FORMAT, "axis %lld out of range for %d dims",
                         LL(a.axis), (int)t->ndim);
    if (!present)
        st = equal_parts(r, t->dim[ax], &a.sizes);
    if (st == TG_OK && (size_t)a.sizes.n != r->node->n_output)
        st = onnx_fail(r, TG_ERR_FORMAT, "%d parts for %zu outputs", (int)a.sizes.n,
                       r->node->n_output);
    for (int i = 0; st == TG_OK && i < a.sizes.n; i++)
        if (a.sizes.v[i] < 0)
            st = onnx_fail(r, TG_ERR_FORMAT, "negative split size %lld",
                           LL(a.sizes.v[i]));
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_split, &x, 1, &a, out, GRAPH_MAX_INTS);
    for (int i = 0; st == TG_OK && i < a.sizes.n; i++)
        st = onnx_bind(r, i, out[i]);
    return st;
}

/* ---- Slice (Pad: onnx_read_pad.c) ---- */

/*
 * Ends computed from Shape that equal the dynamic dim they slice (x[:, :n]
 * with n = x.shape[1]) become "to the end", so the slice follows the dim.
 * Leaves r->specialized set if any other traced entry remains.
 */
static tg_status slice_follow(onnx_reader *r, int32_t xv, graph_slice_attrs *a,
                              int specialized)
{
    for (int i = 1; i < 5; i++) {
        const onnx_entry *e = onnx_has_input(r, i) ? onnx_find(r, r->node->input[i]) : NULL;
        if (i != 2 && e && onnx_entry_traced(e))
            return TG_OK;
    }
    graph_ints ends;
    int8_t sym[GRAPH_MAX_INTS];
    tg_status st = onnx_shape_ints(r, 2, "ends", &ends, sym, GRAPH_MAX_INTS);
    if (st != TG_OK)
        return st;
    const graph_type *x = onnx_vtype(r, xv);
    uint32_t dyn = onnx_dynamic_dims(r, xv);
    for (int k = 0; k < ends.n; k++) {
        if (sym[k] == ONNX_SYM_CONST)
            continue;
        int ax = graph_axis(k < a->axes.n ? a->axes.v[k] : k, x->ndim);
        int8_t want = ax >= 0 ? onnx_dim_mark(r, xv, dyn, ax) : 0;
        if (ax < 0 || !(dyn >> ax & 1) || ends.v[k] != x->dim[ax] ||
            (k < a->steps.n && a->steps.v[k] < 0) ||
            (sym[k] != ONNX_SYM_DERIVED && sym[k] != want))
            return TG_OK;
        a->ends.v[k] = INT64_MAX;
    }
    r->specialized = specialized;
    return TG_OK;
}

tg_status onnx_cv_slice(onnx_reader *r, const onnx_op *op)
{
    graph_slice_attrs a;
    int32_t xv, y;
    tg_status st = onnx_input(r, 0, &xv);
    int specialized = r->specialized;
    if (st == TG_OK)
        st = onnx_slice_attrs(r, &a);
    if (st == TG_OK && r->opset >= 10 && r->specialized && !specialized)
        st = slice_follow(r, xv, &a, specialized);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_slice, &xv, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- Squeeze, Unsqueeze, Expand ---- */

/* Squeeze / Unsqueeze (op->op): axes an input from opset 13. */
tg_status onnx_cv_squeeze(onnx_reader *r, const onnx_op *op)
{
    graph_squeeze_attrs a; /* unsqueeze's attrs have the same layout */
    int present;
    tg_status st = onnx_ints_operand(r, 1, 13, "axes", &a.axes, &present);
    if (st == TG_OK && op->op == GRAPH_OP_unsqueeze && !present)
        st = onnx_fail(r, TG_ERR_FORMAT, "axes is missing");
    /* Squeeze without axes drops the dims of size 1: over a dynamic dim
     * the output's rank depends on the run's size (ONNX Runtime drops it
     * at 1, keeps it at 3), fixed here at the traced one */
    int32_t x;
    if (st == TG_OK && op->op == GRAPH_OP_squeeze && !present &&
        (st = onnx_input(r, 0, &x)) == TG_OK && onnx_dynamic_dims(r, x))
        r->specialized = 1;
    return st == TG_OK ? unary_node(r, op->op, &a) : st;
}

/* The graph input value and dim that define symbol s; 0 if none. */
static int sym_carrier(const graph *g, int8_t s, int32_t *v, int *dim)
{
    for (int i = 0; s >= 0 && i < g->ninputs; i++) {
        const graph_value *x = &g->values[g->inputs[i]];
        for (int d = 0; d < x->type.ndim; d++)
            if ((x->dyn >> d & 1) && x->sym[d] == s) {
                *v = g->inputs[i];
                *dim = d;
                return 1;
            }
    }
    return 0;
}

/*
 * The graph value and dim that element k (marked m) of the shape operand
 * e has as its size at run time: the dim it is a copy of (e->src), else
 * the graph input dim that defines its symbol.  0 if none.
 */
static int dim_carrier(const onnx_reader *r, const onnx_entry *e, int64_t k, int8_t m,
                       int32_t *v, int *dim)
{
    if (e && e->src && e->src[k] >= 0) {
        int32_t sv = e->src[k] / GRAPH_MAX_DIMS;
        int sd = (int)(e->src[k] % GRAPH_MAX_DIMS);
        if (sv < r->g->nvalues && sd < r->g->values[sv].type.ndim) {
            *v = sv;
            *dim = sd;
            return 1;
        }
    }
    return sym_carrier(r->g, m, v, dim);
}

/*
 * y = where(m, y, y) with m a bool [1,..,n,..,1] (n at dim `at` of nd)
 * cut from dim cd of value c: broadcasting makes y's dim `at` follow
 * c's dim cd, whatever m holds.
 */
static tg_status follow_dim(onnx_reader *r, int32_t c, int cd, int nd, int at, int32_t *y)
{
    int32_t in[3];
    const graph_type *ct = onnx_vtype(r, c);
    graph_slice_attrs sa;
    memset(&sa, 0, sizeof sa);
    for (int d = 0; d < ct->ndim; d++)
        if (d != cd) {
            sa.starts.v[sa.starts.n++] = 0;
            sa.ends.v[sa.ends.n++] = 1;
            sa.axes.v[sa.axes.n++] = d;
        }
    graph_reshape_attrs ra = {{nd, {0}}};
    for (int d = 0; d < nd; d++)
        ra.shape.v[d] = d == at ? -1 : 1;
    graph_cast_attrs ca = {GRAPH_BOOL};
    tg_status st = sa.axes.n ? onnx_add(r, GRAPH_OP_slice, &c, 1, &sa, &c, 1) : TG_OK;
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_reshape, &c, 1, &ra, &c, 1);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_cast, &c, 1, &ca, &in[0], 1);
    in[1] = in[2] = *y;
    return st == TG_OK ? onnx_add(r, GRAPH_OP_where, in, 3, NULL, y, 1) : st;
}

/*
 * Expand: a shape entry computed from Shape that equals a dynamic dim of
 * the input it lines up with becomes 1 (broadcasting keeps the input's
 * dim, so the result follows it); an entry over an input dim of 1 whose
 * size has a carrier at run time (dim_carrier: the dim it was copied
 * from, or the input that defines its symbol, as cls.expand(B, -1, -1))
 * becomes 1 too, and follow_dim broadcasts the result to the carrier's
 * size; other such entries are taken at their traced sizes (the node is
 * specialized).
 */
tg_status onnx_cv_expand(onnx_reader *r, const onnx_op *op)
{
    graph_expand_attrs a;
    int8_t sym[GRAPH_MAX_DIMS];
    int32_t xv, y, fv[GRAPH_MAX_DIMS];
    int fd[GRAPH_MAX_DIMS];
    tg_status st = onnx_shape_ints(r, 1, "shape", &a.shape, sym, GRAPH_MAX_DIMS);
    if (st == TG_OK)
        st = onnx_input(r, 0, &xv);
    if (st != TG_OK)
        return st;
    const graph_value *x = &r->g->values[xv];
    uint32_t dyn = onnx_dynamic_dims(r, xv);
    const onnx_entry *se = onnx_find(r, r->node->input[1]);
    int off = a.shape.n - x->type.ndim, nd = off > 0 ? a.shape.n : x->type.ndim;
    for (int i = 0; i < a.shape.n; i++) {
        int j = i - off;
        fv[i] = -1;
        if (sym[i] == ONNX_SYM_CONST)
            continue;
        if (j >= 0 && (dyn >> j & 1) && a.shape.v[i] == x->type.dim[j] &&
            (sym[i] == ONNX_SYM_DERIVED || sym[i] == onnx_dim_mark(r, xv, dyn, j)))
            a.shape.v[i] = 1;
        else if ((j < 0 || (x->type.dim[j] == 1 && !(dyn >> j & 1))) &&
                 dim_carrier(r, se, i, sym[i], &fv[i], &fd[i]))
            a.shape.v[i] = 1;
        else
            r->specialized = 1;
    }
    st = onnx_add(r, GRAPH_OP_expand, &xv, 1, &a, &y, 1);
    for (int i = 0; st == TG_OK && i < a.shape.n; i++)
        if (fv[i] >= 0)
            st = follow_dim(r, fv[i], fd[i], nd, i + (nd - a.shape.n), &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- Cast, Gather ---- */

tg_status onnx_cv_cast(onnx_reader *r, const onnx_op *op)
{
    graph_cast_attrs a;
    tg_status st = onnx_cast_to(r, &a.to);
    return st == TG_OK ? unary_node(r, GRAPH_OP_cast, &a) : st;
}

tg_status onnx_cv_gather(onnx_reader *r, const onnx_op *op)
{
    graph_gather_attrs a;
    int32_t in[2], y;
    tg_status st = onnx_attr_int(r, "axis", 0, &a.axis);
    for (int i = 0; st == TG_OK && i < 2; i++)
        st = onnx_input(r, i, &in[i]);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_gather, in, 2, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * GatherElements (axis); ScatterElements (axis, and the reduction "none",
 * "add", "mul" from opset 16, "max", "min" from 18); Scatter, its name at
 * opsets 9 and 10.  The indices are run-time values like any other input.
 */
tg_status onnx_cv_elements(onnx_reader *r, const onnx_op *op)
{
    int scatter = op->op == GRAPH_OP_scatter_elements;
    /* gather_elements' attributes are the first field of these */
    graph_scatter_elements_attrs a = {0, GRAPH_SCATTER_NONE};
    int32_t in[3], y;
    char red[8];
    if (!strcmp(op->name, "Scatter") && r->opset >= 11)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "Scatter is deprecated at opset %lld "
                         "(ScatterElements replaces it)", LL(r->opset));
    tg_status st = onnx_attr_int(r, "axis", 0, &a.axis);
    if (st == TG_OK && scatter)
        st = onnx_attr_str(r, "reduction", "none", red, sizeof red);
    if (st != TG_OK)
        return st;
    if (scatter) {
        a.reduction = -1;
        for (int64_t k = 0; graph_scatter_reduction_name(k); k++)
            if (!strcmp(red, graph_scatter_reduction_name(k)))
                a.reduction = k;
        if (a.reduction < 0)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "reduction '%s' is not supported", red);
        int since = a.reduction >= GRAPH_SCATTER_MAX ? 18 : 16;
        if (onnx_attr(r, "reduction") && r->opset < since)
            return onnx_fail(r, TG_ERR_FORMAT, "reduction '%s' needs opset %d (the model is "
                             "at %lld)", red, since, LL(r->opset));
    }
    for (int i = 0; st == TG_OK && i < 2 + scatter; i++)
        st = onnx_input(r, i, &in[i]);
    if (st == TG_OK)
        st = onnx_add(r, op->op, in, 2 + scatter, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- constants made at load time ---- */

/* The marks of Shape's output: a dynamic dim is its symbol, a dim derived
 * from them ONNX_SYM_DERIVED, and each is a copy of its dim (src); the
 * dims of a constant that depends on traced sizes are derived from them. */
static tg_status shape_marks(onnx_reader *r, const onnx_entry *e, int64_t start,
                             int64_t end, int size, int8_t **sym, int32_t **src)
{
    uint32_t range = (uint32_t)(((1ull << end) - 1) & ~((1ull << start) - 1));
    uint32_t dyn = e->value >= 0 ? onnx_dynamic_dims(r, e->value) & range : 0;
    int traced = e->is_const && e->traced_shape;
    *sym = NULL;
    *src = NULL;
    if (!dyn && !traced)
        return TG_OK;
    *sym = tg_malloc((size_t)(end - start + 1));
    *src = tg_malloc(sizeof **src * (size_t)(end - start + 1));
    if (!*sym || !*src) {
        tg_free(*sym);
        tg_free(*src);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    int has_src = !size && !traced && e->value >= 0 && e->value <= ONNX_SRC_MAX_VALUE &&
                  dyn != ~0u; /* ~0u: propagation failed, the marks are stale */
    for (int64_t d = start; d < end; d++) {
        int8_t m = ONNX_SYM_CONST;
        if (traced)
            m = ONNX_SYM_DERIVED;
        else if (dyn >> d & 1)
            m = onnx_dim_mark(r, e->value, dyn, (int)d);
        (*sym)[d - start] = m;
        (*src)[d - start] = has_src && m != ONNX_SYM_CONST ? ONNX_SRC(e->value, d) : -1;
    }
    if (size) {
        (*sym)[0] = ONNX_SYM_DERIVED;
        (*src)[0] = -1;
    }
    return TG_OK;
}

/*
 * Shape: dims [start, end) as an int64 constant; Size (same row
 * function): the element count as an int64 scalar.  Dynamic dims are
 * their traced sizes, marked with their symbols (onnx_read_impl.h).
 */
tg_status onnx_cv_shape(onnx_reader *r, const onnx_op *op)
{
    int size = !strcmp(op->name, "Size");
    const graph_type *x;
    int64_t start, end;
    tg_status st = onnx_input_type(r, 0, &x);
    if (st == TG_OK)
        st = onnx_attr_int(r, "start", 0, &start);
    if (st == TG_OK)
        st = onnx_attr_int(r, "end", x->ndim, &end);
    if (st != TG_OK)
        return st;
    int nd = x->ndim;
    start = start < 0 ? start + nd : start;
    end = end < 0 ? end + nd : end;
    start = start < 0 ? 0 : start > nd ? nd : start;
    end = end < start ? start : end > nd ? nd : end;
    int8_t *sym;
    int32_t *src;
    st = shape_marks(r, onnx_find(r, r->node->input[0]), start, end, size, &sym, &src);
    if (st != TG_OK)
        return st;
    graph_type t = {GRAPH_I64, size ? 0 : 1, {size ? 0 : end - start}};
    int64_t *data = tg_malloc(sizeof(int64_t) * (size_t)(end - start + 1));
    if (!data) {
        tg_free(sym);
        tg_free(src);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    data[0] = 1;
    for (int64_t d = start; d < end; d++) {
        if (size)
            data[0] *= x->dim[d]; /* the tensor exists: no overflow */
        else
            data[d - start] = x->dim[d];
    }
    return onnx_bind_const_src(r, 0, &t, data, sym, src);
}

/* The one-element tensor of ConstantOfShape's value (f32 0 if absent). */
static tg_status fill_value(onnx_reader *r, graph_dtype *dt, void **one)
{
    const Onnx__AttributeProto *v = onnx_attr(r, "value");
    char why[300];
    graph_type t;
    if (!v) {
        *dt = GRAPH_F32;
        *one = tg_calloc(1, sizeof(float));
        return *one ? TG_OK : onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    if (v->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !v->t)
        return onnx_fail(r, TG_ERR_FORMAT, "attribute 'value' is not a tensor");
    tg_status st = onnx_tensor_decode(v->t, &t, one, why, sizeof why);
    if (st != TG_OK)
        return onnx_fail(r, st, "attribute 'value': %s", why);
    if (graph_type_numel(&t) != 1) {
        tg_free(*one);
        *one = NULL;
        return onnx_fail(r, TG_ERR_FORMAT, "attribute 'value' has %lld elements, "
                         "want 1", LL(graph_type_numel(&t)));
    }
    *dt = t.dtype;
    return TG_OK;
}

/*
 * ConstantOfShape with a shape computed from dynamic dims whose every
 * such entry has a carrier at run time (dim_carrier: zeros_like(x) is
 * ConstantOfShape(Shape(x)), torch.zeros(x.size(0), 4) a Concat of a
 * Gather of it): the constant with those entries 1, made to follow each
 * carrier's dim by follow_dim.  1 in *done if it did.
 */
static tg_status fill_follow(onnx_reader *r, const graph_ints *shape, const int8_t *marks,
                             graph_dtype dt, const void *one, int *done)
{
    const onnx_entry *se = onnx_find(r, r->node->input[0]);
    int32_t cv[GRAPH_MAX_DIMS];
    int cd[GRAPH_MAX_DIMS], any = 0;
    graph_type t = {dt, (uint8_t)shape->n, {0}};
    *done = 0;
    for (int d = 0; d < shape->n; d++) {
        cv[d] = -1;
        t.dim[d] = shape->v[d];
        if (marks[d] == ONNX_SYM_CONST)
            continue;
        if (!dim_carrier(r, se, d, marks[d], &cv[d], &cd[d]))
            return TG_OK;
        t.dim[d] = 1;
        any = 1;
    }
    int64_t n = graph_type_numel(&t); /* the caller checked the full size */
    size_t es = graph_dtype_size(dt);
    char *data = any ? tg_malloc(n ? (size_t)n * es : 1) : NULL;
    if (!any)
        return TG_OK;
    if (!data)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        memcpy(data + i * (int64_t)es, one, es);
    int32_t y;
    tg_status st = onnx_const_value(r, &t, data, &y);
    tg_free(data);
    for (int d = 0; st == TG_OK && d < shape->n; d++)
        if (cv[d] >= 0)
            st = follow_dim(r, cv[d], cd[d], shape->n, d, &y);
    if (st == TG_OK)
        st = onnx_bind(r, 0, y);
    *done = st == TG_OK;
    return st;
}

/*
 * ConstantOfShape: a shape computed from dynamic dims becomes a tensor
 * that follows them at run time when fill_follow can; otherwise it is
 * taken at its traced sizes, and the constant is marked traced_shape (so
 * what uses it is specialized).
 */
tg_status onnx_cv_constant_of_shape(onnx_reader *r, const onnx_op *op)
{
    graph_ints shape;
    graph_type t;
    void *one = NULL;
    int8_t marks[GRAPH_MAX_DIMS];
    int done = 0;
    tg_status st = onnx_shape_ints(r, 0, "shape", &shape, marks, GRAPH_MAX_DIMS);
    if (st == TG_OK)
        st = fill_value(r, &t.dtype, &one);
    if (st != TG_OK)
        return st;
    size_t es = graph_dtype_size(t.dtype);
    int64_t bytes = (int64_t)es;
    t.ndim = shape.n;
    for (int d = 0; d < shape.n && st == TG_OK; d++) {
        t.dim[d] = shape.v[d];
        if (shape.v[d] < 0)
            st = onnx_fail(r, TG_ERR_FORMAT, "negative dim %lld", LL(shape.v[d]));
        else if (__builtin_mul_overflow(bytes, shape.v[d], &bytes) ||
                 bytes > ONNX_MAX_FOLD_BYTES)
            st = onnx_fail(r, TG_ERR_UNSUPPORTED, "a constant of more than %lld bytes "
                           "is not made at load time", LL(ONNX_MAX_FOLD_BYTES));
    }
    if (st == TG_OK) /* at most the size just checked */
        st = fill_follow(r, &shape, marks, t.dtype, one, &done);
    if (st != TG_OK || done) {
        tg_free(one);
        return st;
    }
    char *data = st == TG_OK ? tg_malloc(bytes ? (size_t)bytes : 1) : NULL;
    if (st == TG_OK && !data)
        st = onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == TG_OK && i < bytes; i += (int64_t)es)
        memcpy(data + i, one, es);
    tg_free(one);
    int traced = 0;
    for (int d = 0; d < shape.n; d++)
        traced |= marks[d] != ONNX_SYM_CONST;
    if (st == TG_OK)
        st = onnx_bind_const(r, 0, &t, data);
    else
        tg_free(data);
    onnx_entry *e = st == TG_OK ? onnx_find(r, r->node->output[0]) : NULL;
    if (e)
        e->traced_shape = traced;
    return st;
}

/* A list attribute (value_floats / value_ints) as a 1-D constant. */
static tg_status list_const(onnx_reader *r, const Onnx__AttributeProto *a)
{
    int is_f = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    size_t n = is_f ? a->n_floats : a->n_ints, es = is_f ? 4 : 8;
    graph_type t = {is_f ? GRAPH_F32 : GRAPH_I64, 1, {(int64_t)n}};
    void *data = tg_malloc(n ? n * es : 1); /* n values are present in the message */
    if (!data)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    if (n)
        memcpy(data, is_f ? (void *)a->floats : (void *)a->ints, n * es);
    return onnx_bind_const(r, 0, &t, data);
}

/* Constant: exactly one of value, value_float(s), value_int(s). */
tg_status onnx_cv_constant(onnx_reader *r, const onnx_op *op)
{
    if (r->node->n_attribute != 1)
        return onnx_fail(r, TG_ERR_FORMAT, "needs exactly one value attribute, has %zu",
                         r->node->n_attribute);
    const Onnx__AttributeProto *a = r->node->attribute[0];
    static const struct {
        const char *name;
        Onnx__AttributeProto__AttributeType type;
    } kinds[] = {
        {"value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR},
        {"value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT},
        {"value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS},
        {"value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT},
        {"value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS},
    };
    size_t k = 0;
    while (strcmp(kinds[k].name, a->name))
        k++; /* the node loop checked the name against the same list */
    if (a->type != kinds[k].type || (k == 0 && !a->t))
        return onnx_fail(r, TG_ERR_FORMAT, "attribute '%s' has the wrong type", a->name);
    if (k == 2 || k == 4)
        return list_const(r, a);
    graph_type t = {k == 1 ? GRAPH_F32 : GRAPH_I64, 0, {0}};
    void *data = NULL;
    if (k == 0) {
        char why[300];
        tg_status st = onnx_tensor_decode(a->t, &t, &data, why, sizeof why);
        if (st != TG_OK)
            return onnx_fail(r, st, "attribute 'value': %s", why);
    } else if ((data = tg_malloc(8)) != NULL) {
        if (k == 1)
            memcpy(data, &a->f, sizeof(float));
        else
            memcpy(data, &a->i, sizeof(int64_t));
    }
    return data ? onnx_bind_const(r, 0, &t, data) : onnx_fail(r, TG_ERR_NOMEM, "out of memory");
}
