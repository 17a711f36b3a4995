/*
 * onnx_read_ops.c - the ONNX importer's op table and the converters of
 * elementwise, linear-algebra, normalization and reduction ops
 * (convolution and pooling: onnx_read_conv.c; shape ops:
 * onnx_read_shape.c).
 *
 * A converter reads the node (r->node) through the helpers of
 * onnx_read_impl.h, adds graph nodes with onnx_add and binds the node's
 * outputs.  The node loop has already checked the domain, the input
 * count and that every attribute is one the row lists; an attribute
 * value or output tracegraph cannot express is TG_ERR_UNSUPPORTED.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"


/* ---- elementwise ---- */

static tg_status cv_unary(onnx_reader *r, const onnx_op *op)
{
    int32_t x, y;
    tg_status st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_add(r, op->op, &x, 1, NULL, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* Output 0 is input 0: a constant stays a constant. */
static tg_status pass_through(onnx_reader *r)
{
    onnx_entry *e = onnx_find(r, r->node->input[0]);
    if (e && e->is_const && e->value < 0)
        return onnx_bind_copy(r, 0, e);
    int32_t x;
    tg_status st = onnx_input(r, 0, &x);
    return st == TG_OK ? onnx_bind(r, 0, x) : st;
}

static tg_status cv_identity(onnx_reader *r, const onnx_op *op)
{
    return pass_through(r);
}

/*
 * Inference Dropout: the identity; its mask (if named) is all true.  So is
 * a training-mode one of ratio 0 (scale 1, nothing dropped): PyTorch
 * exports F.dropout(x, p=0.0), whose training defaults to True, so (swin_t).
 */
static tg_status cv_dropout(onnx_reader *r, const onnx_op *op)
{
    double training = 0, ratio = 0.5;
    tg_status st = TG_OK;
    if (onnx_has_input(r, 2))
        st = onnx_const_scalar(r, 2, "training_mode", &training);
    if (st == TG_OK && training != 0 && onnx_has_input(r, 1))
        st = onnx_const_scalar(r, 1, "ratio", &ratio);
    if (st == TG_OK && training != 0 && ratio != 0)
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "training_mode is not supported (but with a "
                       "ratio of 0, %g here)", ratio);
    if (st == TG_OK)
        st = pass_through(r);
    if (st != TG_OK || r->node->n_output < 2 || !r->node->output[1][0])
        return st;
    const graph_type *t;
    st = onnx_input_type(r, 0, &t);
    if (st != TG_OK)
        return st;
    onnx_entry *e = onnx_find(r, r->node->input[0]);
    if (e->value >= 0 && onnx_dynamic_dims(r, e->value))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "the mask of an input with dynamic "
                         "dims is not supported");
    graph_type mt = *t;
    mt.dtype = GRAPH_BOOL;
    int64_t n = graph_type_numel(&mt);
    if (n > ONNX_MAX_FOLD_BYTES)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "mask of %lld elements is too large",
                         LL(n));
    void *mask = tg_malloc(n ? (size_t)n : 1);
    if (!mask)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    memset(mask, 1, (size_t)n);
    return onnx_bind_const(r, 1, &mt, mask);
}

static tg_status cv_leaky_relu(onnx_reader *r, const onnx_op *op)
{
    graph_leaky_relu_attrs a;
    graph_attrs_default(GRAPH_OP_leaky_relu, &a);
    int32_t x, y;
    tg_status st = onnx_attr_float(r, "alpha", 0.01f, &a.alpha);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_leaky_relu, &x, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * Clip: bounds are attributes before opset 11, constant inputs after.  On
 * integers (opset 12) it is minimum(maximum(x, min), max) with the bounds
 * as they are (the op clip is f32): PyTorch's position_ids.clamp(min=0).
 */
static tg_status cv_clip(onnx_reader *r, const onnx_op *op)
{
    graph_clip_attrs a;
    graph_attrs_default(GRAPH_OP_clip, &a);
    tg_status st = TG_OK;
    const graph_type *xt;
    if (r->opset >= 12 && onnx_input_type(r, 0, &xt) == TG_OK && xt->dtype != GRAPH_F32) {
        int32_t x, b;
        st = onnx_input(r, 0, &x);
        for (int i = 1; i < 3 && st == TG_OK; i++) {
            if (!onnx_has_input(r, i))
                continue;
            st = onnx_input(r, i, &b);
            if (st == TG_OK)
                st = onnx_op2(r, i == 1 ? GRAPH_OP_maximum : GRAPH_OP_minimum, x, b, NULL, &x);
        }
        return st == TG_OK ? onnx_bind(r, 0, x) : st;
    }
    if (r->opset < 11) {
        st = onnx_attr_float(r, "min", -FLT_MAX, &a.min);
        if (st == TG_OK)
            st = onnx_attr_float(r, "max", FLT_MAX, &a.max);
    } else {
        double v;
        if (onnx_has_input(r, 1) && (st = onnx_const_scalar(r, 1, "min", &v)) == TG_OK)
            a.min = (float)v;
        if (st == TG_OK && onnx_has_input(r, 2) &&
            (st = onnx_const_scalar(r, 2, "max", &v)) == TG_OK)
            a.max = (float)v;
    }
    int32_t x, y;
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_clip, &x, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

static tg_status cv_binary(onnx_reader *r, const onnx_op *op)
{
    int32_t in[2], y;
    tg_status st = onnx_input(r, 0, &in[0]);
    if (st == TG_OK)
        st = onnx_input(r, 1, &in[1]);
    if (st == TG_OK)
        st = onnx_add(r, op->op, in, 2, NULL, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* Pow: an integer exponent of a float base is cast to f32 (exact for the
 * integers float holds exactly, which are the ones pow can use). */
static tg_status cv_pow(onnx_reader *r, const onnx_op *op)
{
    int32_t in[2], y;
    tg_status st = onnx_input(r, 0, &in[0]);
    if (st == TG_OK)
        st = onnx_input(r, 1, &in[1]);
    if (st != TG_OK)
        return st;
    graph_dtype bt = onnx_vtype(r, in[0])->dtype, et = onnx_vtype(r, in[1])->dtype;
    if (bt == GRAPH_F32 && (et == GRAPH_I64 || et == GRAPH_I32)) {
        graph_cast_attrs c = {GRAPH_F32};
        st = onnx_add(r, GRAPH_OP_cast, &in[1], 1, &c, &in[1], 1);
    }
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_pow, in, 2, NULL, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* Max, Min, Sum, Mean: variadic, as a chain of pairs (Mean: / n). */
static tg_status cv_variadic(onnx_reader *r, const onnx_op *op)
{
    int32_t acc, x;
    /* Sum and Mean take floats at every opset, Max and Min ints from 12 */
    int64_t ints = op->op == GRAPH_OP_add ? INT64_MAX : 12;
    tg_status st = onnx_older_types(r, 0, ints, 0);
    const graph_type *t0 = NULL, *ti;
    if (st == TG_OK)
        st = onnx_input_type(r, 0, &t0);
    graph_type first = st == TG_OK ? *t0 : (graph_type){0};
    if (st == TG_OK)
        st = onnx_input(r, 0, &acc);
    for (size_t i = 1; st == TG_OK && i < r->node->n_input; i++) {
        int32_t in[2] = {acc, 0};
        st = onnx_input_type(r, (int)i, &ti);
        /* before opset 8 the inputs have one shape: no broadcasting */
        if (st == TG_OK)
            first.dtype = ti->dtype; /* shapes compared; dtypes are checked by the op */
        if (st == TG_OK && r->opset < 8 && !graph_type_eq(ti, &first))
            st = onnx_fail(r, TG_ERR_FORMAT, "input %d's shape is not input 0's: %s-6 does "
                           "not broadcast (from %s-8)", (int)i, op->name, op->name);
        if (st == TG_OK)
            st = onnx_input(r, (int)i, &in[1]);
        /* equal at the traced sizes only, where a dim is dynamic in one input
         * and not in the other: at another size Sum-6 refuses, ours would
         * broadcast (seed 8001 model 1687) */
        if (st == TG_OK && r->opset < 8 &&
            onnx_dynamic_dims(r, acc) != onnx_dynamic_dims(r, in[1]))
            r->specialized = 1;
        if (st == TG_OK)
            st = onnx_add(r, op->op, in, 2, NULL, &acc, 1);
    }
    if (st == TG_OK && !strcmp(op->name, "Mean") && r->node->n_input > 1) {
        int32_t in[2] = {acc, 0};
        st = onnx_scalar(r, onnx_vtype(r, acc)->dtype, (double)r->node->n_input, &x);
        in[1] = x;
        if (st == TG_OK)
            st = onnx_add(r, GRAPH_OP_div, in, 2, NULL, &acc, 1);
    }
    return st == TG_OK ? onnx_bind(r, 0, acc) : st;
}

static tg_status cv_where(onnx_reader *r, const onnx_op *op)
{
    int32_t in[3], y;
    tg_status st = TG_OK;
    for (int i = 0; st == TG_OK && i < 3; i++)
        st = onnx_input(r, i, &in[i]);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_where, in, 3, NULL, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * The logical ops and <=, >=, which tracegraph spells with eq, lt, gt and
 * where (it has no logical ops; export writes bool where as And/Or/Not):
 * Not x = (x == false), And = where(a, b, false), Or = where(a, true, b),
 * Xor = ((a == b) == false), LessOrEqual = where(a < b, true, a == b)
 * and GreaterOrEqual likewise, so NaN compares false as in ONNX.
 */
static tg_status cv_logical(onnx_reader *r, const onnx_op *op)
{
    int32_t a, b = -1, t, f, in[3], y;
    const char *name = op->name;
    tg_status st = onnx_input(r, 0, &a);
    if (st == TG_OK && strcmp(name, "Not") != 0)
        st = onnx_input(r, 1, &b);
    if (st == TG_OK)
        st = onnx_scalar(r, GRAPH_BOOL, 1, &t);
    if (st == TG_OK)
        st = onnx_scalar(r, GRAPH_BOOL, 0, &f);
    if (st != TG_OK)
        return st;
    if (!strcmp(name, "Not") || !strcmp(name, "Xor")) {
        in[0] = a, in[1] = f;
        if (b >= 0) { /* Xor: not (a == b) */
            int32_t ab[2] = {a, b};
            st = onnx_add(r, GRAPH_OP_eq, ab, 2, NULL, &in[0], 1);
        }
        if (st == TG_OK)
            st = onnx_add(r, GRAPH_OP_eq, in, 2, NULL, &y, 1);
    } else if (!strcmp(name, "And") || !strcmp(name, "Or")) {
        int and = !strcmp(name, "And");
        in[0] = a, in[1] = and ? b : t, in[2] = and ? f : b;
        st = onnx_add(r, GRAPH_OP_where, in, 3, NULL, &y, 1);
    } else { /* LessOrEqual, GreaterOrEqual */
        int32_t ab[2] = {a, b};
        in[1] = t;
        st = onnx_add(r, name[0] == 'L' ? GRAPH_OP_lt : GRAPH_OP_gt, ab, 2, NULL, &in[0], 1);
        if (st == TG_OK)
            st = onnx_add(r, GRAPH_OP_eq, ab, 2, NULL, &in[2], 1);
        if (st == TG_OK)
            st = onnx_add(r, GRAPH_OP_where, in, 3, NULL, &y, 1);
    }
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- linear algebra ---- */

static tg_status cv_matmul(onnx_reader *r, const onnx_op *op)
{
    int32_t in[2], y;
    tg_status st = onnx_input(r, 0, &in[0]);
    if (st == TG_OK)
        st = onnx_input(r, 1, &in[1]);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_matmul, in, 2, NULL, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* y * s (s a new scalar constant), unless s is 1. */
static tg_status scale_by(onnx_reader *r, int32_t *y, float s)
{
    if (s == 1.0f)
        return TG_OK;
    int32_t in[2] = {*y, 0};
    tg_status st = onnx_scalar(r, GRAPH_F32, s, &in[1]);
    return st == TG_OK ? onnx_add(r, GRAPH_OP_mul, in, 2, NULL, y, 1) : st;
}

/* Gemm: alpha * A' B' + beta * C.  linear when it is x @ w^T + b. */
static tg_status cv_gemm(onnx_reader *r, const onnx_op *op)
{
    float alpha, beta;
    int64_t ta, tb;
    int32_t in[3], y;
    tg_status st = onnx_attr_float(r, "alpha", 1.0f, &alpha);
    if (st == TG_OK)
        st = onnx_attr_float(r, "beta", 1.0f, &beta);
    if (st == TG_OK)
        st = onnx_attr_int(r, "transA", 0, &ta);
    if (st == TG_OK)
        st = onnx_attr_int(r, "transB", 0, &tb);
    for (int i = 0; st == TG_OK && i < 2; i++)
        st = onnx_input(r, i, &in[i]);
    int has_c = onnx_has_input(r, 2);
    if (st == TG_OK && has_c)
        st = onnx_input(r, 2, &in[2]);
    if (st != TG_OK)
        return st;
    if (onnx_vtype(r, in[0])->ndim != 2 || onnx_vtype(r, in[1])->ndim != 2)
        return onnx_fail(r, TG_ERR_FORMAT, "A and B must be 2-D (have %d-D and %d-D)",
                         (int)onnx_vtype(r, in[0])->ndim, (int)onnx_vtype(r, in[1])->ndim);
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return onnx_fail(r, TG_ERR_FORMAT, "transA and transB must be 0 or 1");
    const graph_type *ct = has_c ? onnx_vtype(r, in[2]) : NULL;
    if (!ta && tb && alpha == 1.0f &&
        (!has_c || (beta == 1.0f && ct->ndim == 1 &&
                    ct->dim[0] == onnx_vtype(r, in[1])->dim[0]))) {
        st = onnx_add(r, GRAPH_OP_linear, in, has_c ? 3 : 2, NULL, &y, 1);
        return st == TG_OK ? onnx_bind(r, 0, y) : st;
    }
    graph_matmul_attrs a = {ta, tb};
    st = onnx_add(r, GRAPH_OP_matmul, in, 2, &a, &y, 1);
    if (st == TG_OK)
        st = scale_by(r, &y, alpha);
    if (st == TG_OK && has_c && beta != 0.0f) {
        int32_t c = in[2];
        st = scale_by(r, &c, beta);
        int32_t sum[2] = {y, c};
        if (st == TG_OK)
            st = onnx_add(r, GRAPH_OP_add, sum, 2, NULL, &y, 1);
    }
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- normalization ---- */

static tg_status cv_batch_norm(onnx_reader *r, const onnx_op *op)
{
    int64_t spatial, training;
    graph_batch_norm_attrs a;
    graph_attrs_default(GRAPH_OP_batch_norm, &a);
    tg_status st = onnx_attr_int(r, "spatial", 1, &spatial);
    if (st == TG_OK)
        st = onnx_attr_int(r, "training_mode", 0, &training);
    if (st == TG_OK)
        st = onnx_attr_float(r, "epsilon", 1e-5f, &a.eps);
    if (st == TG_OK && (spatial != 1 || training != 0))
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "%s is not supported",
                       spatial != 1 ? "spatial 0" : "training_mode 1");
    int32_t in[5], y;
    for (int i = 0; st == TG_OK && i < 5; i++)
        st = onnx_input(r, i, &in[i]);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_batch_norm, in, 5, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * LayerNormalization's optional outputs Mean and InvStdDev (over dims
 * axis.., kept as 1s), computed apart: mean, then 1 / sqrt(var + eps)
 * with var = mean((x - mean)^2), as the ONNX function body does.
 */
static tg_status layer_norm_stats(onnx_reader *r, int32_t x, int ax, float eps)
{
    const Onnx__NodeProto *n = r->node;
    int want_mean = n->n_output > 1 && n->output[1][0];
    int want_inv = n->n_output > 2 && n->output[2][0];
    if (!want_mean && !want_inv)
        return TG_OK;
    graph_reduce_mean_attrs m;
    memset(&m, 0, sizeof m);
    m.keepdim = 1;
    for (int d = ax; d < onnx_vtype(r, x)->ndim; d++)
        m.axes.v[m.axes.n++] = d;
    int32_t mean, t[2], v;
    tg_status st = onnx_add(r, GRAPH_OP_reduce_mean, &x, 1, &m, &mean, 1);
    if (st == TG_OK && want_mean)
        st = onnx_bind(r, 1, mean);
    if (st != TG_OK || !want_inv)
        return st;
    t[0] = x, t[1] = mean;
    st = onnx_add(r, GRAPH_OP_sub, t, 2, NULL, &v, 1);
    t[0] = t[1] = v;
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_mul, t, 2, NULL, &v, 1);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_reduce_mean, &v, 1, &m, &t[0], 1);
    if (st == TG_OK)
        st = onnx_scalar(r, GRAPH_F32, eps, &t[1]);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_add, t, 2, NULL, &v, 1);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_rsqrt, &v, 1, NULL, &v, 1);
    return st == TG_OK ? onnx_bind(r, 2, v) : st;
}

/* LayerNormalization: scale and bias must cover x.shape[axis:] exactly
 * (ONNX lets them broadcast; layer_norm does not). */
static tg_status cv_layer_norm(onnx_reader *r, const onnx_op *op)
{
    int64_t stash;
    graph_layer_norm_attrs a;
    graph_attrs_default(GRAPH_OP_layer_norm, &a);
    tg_status st = onnx_attr_int(r, "axis", -1, &a.axis);
    if (st == TG_OK)
        st = onnx_attr_float(r, "epsilon", 1e-5f, &a.eps);
    if (st == TG_OK)
        st = onnx_attr_int(r, "stash_type", 1, &stash);
    if (st == TG_OK && stash != 1)
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "stash_type %lld is not supported",
                       LL(stash));
    int32_t in[3], y;
    int nin = onnx_has_input(r, 2) ? 3 : 2;
    for (int i = 0; st == TG_OK && i < nin; i++)
        st = onnx_input(r, i, &in[i]);
    if (st != TG_OK)
        return st;
    const graph_type *x = onnx_vtype(r, in[0]);
    int ax = graph_axis(a.axis, x->ndim);
    for (int i = 1; ax >= 0 && i < nin; i++) {
        const graph_type *p = onnx_vtype(r, in[i]);
        int same = p->ndim == x->ndim - ax;
        for (int d = 0; same && d < p->ndim; d++)
            same = p->dim[d] == x->dim[ax + d];
        if (!same)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "a %s that broadcasts over the "
                             "normalized dims is not supported", i == 1 ? "Scale" : "B");
    }
    st = onnx_add(r, GRAPH_OP_layer_norm, in, nin, &a, &y, 1);
    if (st == TG_OK)
        st = onnx_bind(r, 0, y);
    if (st == TG_OK)
        st = layer_norm_stats(r, in[0], ax, a.eps);
    return st;
}

/*
 * Softmax / LogSoftmax.  Before opset 13 the input was coerced to 2-D at
 * axis (default 1): the same as ours only when axis is the last dim.
 */
static tg_status cv_softmax(onnx_reader *r, const onnx_op *op)
{
    int32_t x, y;
    int64_t axis;
    tg_status st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_attr_int(r, "axis", r->opset >= 13 ? -1 : 1, &axis);
    if (st != TG_OK)
        return st;
    int nd = onnx_vtype(r, x)->ndim;
    if (r->opset < 13 && graph_axis(axis, nd) != nd - 1)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "axis %lld before opset 13 (2-D "
                         "coercion) is supported only as the last dim", LL(axis));
    graph_softmax_attrs a = {axis}; /* log_softmax's attrs have the same layout */
    st = onnx_add(r, op->op, &x, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- reductions ---- */

static tg_status cv_reduce(onnx_reader *r, const onnx_op *op)
{
    int64_t keep;
    int noop;
    graph_ints axes;
    int32_t x, y;
    tg_status st = onnx_reduce_args(r, op->op == GRAPH_OP_reduce_sum, &axes, &keep, &noop);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    if (noop)
        return onnx_bind(r, 0, x);
    if (op->op == GRAPH_OP_reduce_max && (st = onnx_refuse_empty_extreme(r, x, &axes, 0)))
        return st;
    /* reduce_sum/mean/max share one attribute layout: axes, keepdim */
    graph_reduce_sum_attrs a = {axes, keep != 0};
    st = onnx_add(r, op->op, &x, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ArgMax / ArgMin: one axis (default 0), keepdims (default 1) and, from
 * opset 12, select_last_index; nonzero means set, as ONNX reads them. */
static tg_status cv_arg(onnx_reader *r, const onnx_op *op)
{
    int64_t axis, keep, last;
    int32_t x, y;
    tg_status st = onnx_attr_int(r, "axis", 0, &axis);
    if (st == TG_OK)
        st = onnx_attr_int(r, "keepdims", 1, &keep);
    if (st == TG_OK)
        st = onnx_attr_int(r, "select_last_index", 0, &last);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_refuse_empty_extreme(r, x, NULL, axis);
    if (st != TG_OK)
        return st;
    graph_argmax_attrs a = {axis, keep != 0, last != 0}; /* argmin's layout too */
    st = onnx_add(r, op->op, &x, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* TopK: K an input (opset 10 on, a constant) or the attribute k
 * (opset 1); Values and Indices. */
static tg_status cv_topk(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    int64_t axis, largest, sorted, kattr;
    graph_ints k = {1, {0}};
    int32_t x, y[2];
    tg_status st = onnx_attr_int(r, "axis", -1, &axis);
    if (st == TG_OK)
        st = onnx_attr_int(r, "largest", 1, &largest);
    if (st == TG_OK)
        st = onnx_attr_int(r, "sorted", 1, &sorted);
    if (st == TG_OK)
        st = onnx_attr_int(r, "k", -1, &kattr);
    if (st == TG_OK && onnx_has_input(r, 1))
        st = onnx_const_ints(r, 1, "K", &k, 1);
    else if (st == TG_OK)
        k.v[0] = kattr;
    if (st == TG_OK && k.n != 1)
        return onnx_fail(r, TG_ERR_FORMAT, "K has %d entries, want 1", k.n);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    graph_topk_attrs a = {k.v[0], axis, largest, sorted};
    st = onnx_add(r, GRAPH_OP_topk, &x, 1, &a, y, 2);
    if (st == TG_OK)
        st = onnx_bind(r, 0, y[0]);
    return st == TG_OK ? onnx_bind(r, 1, y[1]) : st;
}

/* CumSum: axis an input (int32 or int64, 0-D or one entry), a constant
 * known at load time; exclusive and reverse 0 or 1 (cumsum's inference
 * refuses other values, as ONNX Runtime does). */
static tg_status cv_cumsum(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    int64_t excl, rev;
    graph_ints axis;
    int32_t x, y;
    tg_status st = onnx_attr_int(r, "exclusive", 0, &excl);
    if (st == TG_OK)
        st = onnx_attr_int(r, "reverse", 0, &rev);
    if (st == TG_OK)
        st = onnx_const_ints(r, 1, "axis", &axis, 1);
    if (st == TG_OK && axis.n != 1)
        return onnx_fail(r, TG_ERR_FORMAT, "axis has %d entries, want 1", axis.n);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    graph_cumsum_attrs a = {axis.v[0], excl, rev};
    st = onnx_add(r, GRAPH_OP_cumsum, &x, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/* ---- the table ---- */

#define U(name, gop) {name, cv_unary, GRAPH_OP_##gop, 1, 1, 1, ""}
#define B(name, gop) {name, cv_binary, GRAPH_OP_##gop, 2, 2, 1, ""}
#define POOL_ATTRS "auto_pad,ceil_mode,dilations,kernel_shape,pads,strides"

static const onnx_op table[] = {
    {"Identity", cv_identity, 0, 1, 1, 1, ""},
    {"Dropout", cv_dropout, 0, 1, 3, 2, "ratio,seed"},
    {"Constant", onnx_cv_constant, 0, 0, 0, 1,
     "value,value_float,value_floats,value_int,value_ints"},
    {"LeakyRelu", cv_leaky_relu, 0, 1, 1, 1, "alpha"},
    {"Clip", cv_clip, 0, 1, 3, 1, "min,max"},
    B("Add", add), B("Sub", sub), B("Mul", mul), B("Div", div),
    B("Equal", eq), B("Less", lt), B("Greater", gt),
    {"Pow", cv_pow, 0, 2, 2, 1, ""},
    {"Max", cv_variadic, GRAPH_OP_maximum, 1, -1, 1, ""},
    {"Min", cv_variadic, GRAPH_OP_minimum, 1, -1, 1, ""},
    {"Sum", cv_variadic, GRAPH_OP_add, 1, -1, 1, ""},
    {"Mean", cv_variadic, GRAPH_OP_add, 1, -1, 1, ""},
    {"Where", cv_where, 0, 3, 3, 1, ""},
    {"Not", cv_logical, 0, 1, 1, 1, ""},
    {"And", cv_logical, 0, 2, 2, 1, ""},
    {"Or", cv_logical, 0, 2, 2, 1, ""},
    {"Xor", cv_logical, 0, 2, 2, 1, ""},
    {"LessOrEqual", cv_logical, 0, 2, 2, 1, ""},
    {"GreaterOrEqual", cv_logical, 0, 2, 2, 1, ""},
    {"MatMul", cv_matmul, 0, 2, 2, 1, ""},
    {"Gemm", cv_gemm, 0, 2, 3, 1, "alpha,beta,transA,transB"},
    {"Einsum", onnx_cv_einsum, 0, 1, -1, 1, "equation"},
    {"GridSample", onnx_cv_grid_sample, 0, 2, 2, 1, "align_corners,mode,padding_mode"},
    {"Conv", onnx_cv_conv, 0, 2, 3, 1, "auto_pad,dilations,group,kernel_shape,pads,strides"},
    {"ConvTranspose", onnx_cv_conv_transpose, 0, 2, 3, 1,
     "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides"},
    {"MaxPool", onnx_cv_pool, GRAPH_OP_max_pool2d, 1, 1, 1, POOL_ATTRS ",storage_order"},
    {"AveragePool", onnx_cv_pool, GRAPH_OP_avg_pool2d, 1, 1, 1, POOL_ATTRS ",count_include_pad"},
    U("GlobalAveragePool", global_avg_pool),
    {"BatchNormalization", cv_batch_norm, 0, 5, 5, 1,
     "epsilon,momentum,spatial,training_mode"},
    {"InstanceNormalization", onnx_cv_instance_norm, 0, 3, 3, 1, "epsilon"},
    {"GroupNormalization", onnx_cv_group_norm, 0, 3, 3, 1, "epsilon,num_groups,stash_type"},
    {"RMSNormalization", onnx_cv_rms_norm, 0, 2, 2, 1, "axis,epsilon,stash_type"},
    {"GatherND", onnx_cv_gather_nd, 0, 2, 2, 1, "batch_dims"},
#define RNN_ATTRS "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout"
    {"RNN", onnx_cv_rnn, 0, 3, 6, 2, RNN_ATTRS},
    {"GRU", onnx_cv_rnn, 0, 3, 6, 2, RNN_ATTRS ",linear_before_reset"},
    {"LSTM", onnx_cv_rnn, 0, 3, 8, 3, RNN_ATTRS ",input_forget"},
    {"LayerNormalization", cv_layer_norm, 0, 2, 3, 3, "axis,epsilon,stash_type"},
    {"Softmax", cv_softmax, GRAPH_OP_softmax, 1, 1, 1, "axis"},
    {"LogSoftmax", cv_softmax, GRAPH_OP_log_softmax, 1, 1, 1, "axis"},
    {"ReduceSum", cv_reduce, GRAPH_OP_reduce_sum, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMean", cv_reduce, GRAPH_OP_reduce_mean, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMax", cv_reduce, GRAPH_OP_reduce_max, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ArgMax", cv_arg, GRAPH_OP_argmax, 1, 1, 1, "axis,keepdims,select_last_index"},
    {"TopK", cv_topk, 0, 1, 2, 2, "axis,k,largest,sorted"},
    {"CumSum", cv_cumsum, 0, 2, 2, 1, "exclusive,reverse"},
    {"ArgMin", cv_arg, GRAPH_OP_argmin, 1, 1, 1, "axis,keepdims,select_last_index"},
    {"ReduceMin", onnx_cv_reduce_composite, 0, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceSumSquare", onnx_cv_reduce_composite, 0, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceL1", onnx_cv_reduce_composite, 0, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceL2", onnx_cv_reduce_composite, 0, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceLogSum", onnx_cv_reduce_composite, 0, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceLogSumExp", onnx_cv_reduce_composite, 0, 1, 2, 1,
     "axes,keepdims,noop_with_empty_axes"},
    {"PRelu", onnx_cv_activation, 0, 2, 2, 1, ""},
    {"HardSigmoid", onnx_cv_activation, 0, 1, 1, 1, "alpha,beta"},
    {"HardSwish", onnx_cv_activation, 0, 1, 1, 1, ""},
    {"Gelu", onnx_cv_activation, 0, 1, 1, 1, "approximate"},
    {"Swish", onnx_cv_activation, 0, 1, 1, 1, "alpha"},
    {"Softsign", onnx_cv_activation, 0, 1, 1, 1, ""},
    {"Elu", onnx_cv_activation, 0, 1, 1, 1, "alpha"},
    {"Selu", onnx_cv_activation, 0, 1, 1, 1, "alpha,gamma"},
    {"Celu", onnx_cv_activation, 0, 1, 1, 1, "alpha"},
    {"ThresholdedRelu", onnx_cv_activation, 0, 1, 1, 1, "alpha"},
    {"Trilu", onnx_cv_trilu, 0, 1, 2, 1, "upper"},
    {"Hardmax", onnx_cv_hardmax, 0, 1, 1, 1, "axis"},
    {"Resize", onnx_cv_resize, 0, 1, 4, 1,
     "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,exclude_outside,"
     "extrapolation_value,keep_aspect_ratio_policy,mode,nearest_mode"},
    {"Upsample", onnx_cv_resize, 0, 1, 2, 1, "mode,scales"},
    {"DepthToSpace", onnx_cv_depth_space, 0, 1, 1, 1, "blocksize,mode"},
    {"SpaceToDepth", onnx_cv_depth_space, 0, 1, 1, 1, "blocksize"},
    {"Reshape", onnx_cv_reshape, 0, 2, 2, 1, "allowzero"},
    {"Flatten", onnx_cv_flatten, 0, 1, 1, 1, "axis"},
    {"Transpose", onnx_cv_transpose, 0, 1, 1, 1, "perm"},
    {"Concat", onnx_cv_concat, 0, 1, -1, 1, "axis"},
    {"Split", onnx_cv_split, 0, 1, 2, 64, "axis,num_outputs,split"},
    {"Slice", onnx_cv_slice, 0, 1, 5, 1, "axes,ends,starts"},
    {"Pad", onnx_cv_pad, 0, 1, 4, 1, "mode,pads,value"},
    {"Squeeze", onnx_cv_squeeze, GRAPH_OP_squeeze, 1, 2, 1, "axes"},
    {"Unsqueeze", onnx_cv_squeeze, GRAPH_OP_unsqueeze, 1, 2, 1, "axes"},
    {"Tile", onnx_cv_tile, 0, 2, 2, 1, ""},
    {"Expand", onnx_cv_expand, 0, 2, 2, 1, ""},
    {"Cast", onnx_cv_cast, 0, 1, 1, 1, "round_mode,saturate,to"},
    {"Gather", onnx_cv_gather, 0, 2, 2, 1, "axis"},
    {"GatherElements", onnx_cv_elements, GRAPH_OP_gather_elements, 2, 2, 1, "axis"},
    {"ScatterElements", onnx_cv_elements, GRAPH_OP_scatter_elements, 3, 3, 1, "axis,reduction"},
    {"Scatter", onnx_cv_elements, GRAPH_OP_scatter_elements, 3, 3, 1, "axis"},
    {"Shape", onnx_cv_shape, 0, 1, 1, 1, "end,start"},
    {"Size", onnx_cv_shape, 0, 1, 1, 1, ""},
    {"ConstantOfShape", onnx_cv_constant_of_shape, 0, 1, 1, 1, "value"},
    {"Range", onnx_cv_range, 0, 3, 3, 1, ""},
    {"ReduceProd", onnx_cv_folded_only, 0, 1, 2, 1, "axes,keepdims,noop_with_empty_axes"},
    {"Mod", onnx_cv_folded_only, 0, 2, 2, 1, "fmod"},
    {"ScatterND", onnx_cv_folded_only, 0, 3, 3, 1, "reduction"},
    {"NonZero", onnx_cv_folded_only, 0, 1, 1, 1, ""},
};

/* The unary ops of graph/ew_ops.def that are one ONNX node (its onnx
 * column; NULL: the op is not, and the table above converts any ONNX
 * node that becomes it).  Looked up first. */
#define U_1(name, gop) {name, cv_unary, GRAPH_OP_##gop, 1, 1, 1, ""},
#define U_2(name, gop)
static const onnx_op ew_table[] = {
#define EW(OP, N, COST, S, ONNX) U_##N(ONNX, OP)
#include "../../graph/ew_ops.def"
#undef EW
};

int format_onnx_op(int i, format_onnx_op_info *out)
{
    if (!out || i < 0)
        return 0;
    const onnx_op *op = NULL;
    for (size_t k = 0; k < sizeof ew_table / sizeof ew_table[0] && !op; k++)
        if (ew_table[k].name && i-- == 0)
            op = &ew_table[k];
    if (!op && (size_t)i < sizeof table / sizeof table[0])
        op = &table[i];
    if (!op)
        return 0;
    *out = (format_onnx_op_info){
        .name = op->name,
        .min_inputs = op->min_in,
        .max_inputs = op->max_in,
        .max_outputs = op->max_out,
        .attributes = op->attrs,
        .load_time_only = op->fn == onnx_cv_folded_only || op->fn == onnx_cv_range,
    };
    return 1;
}

const onnx_op *onnx_op_find(const char *op_type)
{
    for (size_t i = 0; i < sizeof ew_table / sizeof ew_table[0]; i++)
        if (ew_table[i].name && !strcmp(ew_table[i].name, op_type))
            return &ew_table[i];
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, op_type))
            return &table[i];
    return NULL;
}
