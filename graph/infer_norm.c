/*
 * infer_norm.c - shape and dtype inference for normalization, softmax and
 * reductions: batch_norm, layer_norm, layer_norm_grad, softmax,
 * log_softmax, reduce_sum, reduce_mean, reduce_max, argmax, argmin, topk,
 * cumsum.  Every attribute is validated
 * here, so the kernels in eager/kernels_norm.c and eager/kernels_reduce.c
 * trust them.
 *
 * Choices (documented once, here):
 * - Axes follow PyTorch: negative counts from the end; a 0-d tensor
 *   accepts axis 0 or -1 and acts as a length-1 dim (softmax of a scalar
 *   is 1, layer_norm of a scalar is its bias, reducing it is a copy).
 * - Reductions keep the input dtype.  A duplicate axis is an error.
 *   An empty reduction gives 0 for reduce_sum and NaN for reduce_mean; for
 *   reduce_max it is an error ("reduce_max over an empty axis"), raised
 *   only when the output has elements (as NumPy).
 * - argmax/argmin reduce one axis to i64 indices (ONNX ArgMax/ArgMin);
 *   keepdim and select_last are 0 or 1; an empty axis is an error as for
 *   reduce_max, and a 0-d input gives index 0.
 * - cumsum keeps x's shape and dtype; exclusive and reverse are 0 or 1;
 *   an empty axis is fine (no sums), a 0-d x is a line of one.
 * - eps must be finite and >= 0.
 */
#include <math.h>
#include <stdio.h>

#include "infer.h"
#include "infer_norm.h"

int graph_norm_axis(int64_t axis, int ndim)
{
    if (ndim == 0)
        return (axis == 0 || axis == -1) ? 0 : -1;
    return graph_axis(axis, ndim);
}

tg_status graph_reduce_mask(const graph_type *in, const graph_ints *axes,
                            unsigned char mask[GRAPH_MAX_DIMS], char *err,
                            size_t errlen)
{
    char buf[160];
    for (int d = 0; d < GRAPH_MAX_DIMS; d++)
        mask[d] = axes->n == 0 && d < in->ndim;
    if (axes->n < 0 || axes->n > GRAPH_MAX_INTS) {
        snprintf(err, errlen, "axes has %d entries", (int)axes->n);
        return TG_ERR_ARG;
    }
    for (int i = 0; i < axes->n; i++) {
        int d = graph_norm_axis(axes->v[i], in->ndim);
        if (d < 0) {
            snprintf(err, errlen, "axis %lld out of range for %d dims",
                     (long long)axes->v[i], in->ndim);
            return TG_ERR_AXIS;
        }
        if (mask[d]) {
            snprintf(err, errlen, "duplicate axis %lld in axes %s",
                     (long long)axes->v[i],
                     graph_ints_str(axes, buf, sizeof buf));
            return TG_ERR_AXIS;
        }
        mask[d] = 1;
    }
    return TG_OK;
}

static tg_status check_eps(graph_infer_ctx *c, float eps)
{
    if (!(eps >= 0.0f) || isinf(eps))
        return graph_infer_fail(c, TG_ERR_ARG, "eps must be finite and >= 0, got %g",
                                (double)eps);
    return TG_OK;
}

/* Checks that input i (called name) is f32 with the given shape. */
static tg_status check_param(graph_infer_ctx *c, int i, const char *name,
                             const graph_type *want)
{
    const graph_type *t = &c->in[i];
    char got_s[160], want_s[160];
    if (t->dtype != GRAPH_F32)
        return graph_infer_fail(c, TG_ERR_DTYPE, "%s has dtype %s, want f32",
                                name, graph_dtype_name(t->dtype));
    int same = t->ndim == want->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->dim[d] == want->dim[d];
    if (!same)
        return graph_infer_fail(c, TG_ERR_SHAPE, "%s has shape %s, want %s", name,
                                graph_shape_str(t, got_s, sizeof got_s),
                                graph_shape_str(want, want_s, sizeof want_s));
    return TG_OK;
}

tg_status graph_infer_batch_norm(graph_infer_ctx *c)
{
    static const char *const names[] = {"scale", "bias", "mean", "var"};
    const graph_batch_norm_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    tg_status st = check_eps(c, a->eps);
    if (st != TG_OK)
        return st;
    if (x->ndim < 2)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "x needs at least 2 dims [N,C,...], has %d",
                                x->ndim);
    graph_type want = {GRAPH_F32, 1, {x->dim[1]}};
    for (int i = 1; i < 5; i++) {
        st = check_param(c, i, names[i - 1], &want);
        if (st != TG_OK)
            return st;
    }
    c->out[0] = *x;
    return TG_OK;
}

tg_status graph_infer_layer_norm(graph_infer_ctx *c)
{
    static const char *const names[] = {"weight", "bias"};
    const graph_layer_norm_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    tg_status st = check_eps(c, a->eps);
    if (st != TG_OK)
        return st;
    int axis = graph_norm_axis(a->axis, x->ndim);
    if (axis < 0)
        return graph_infer_fail(c, TG_ERR_AXIS, "axis %lld out of range for %d dims",
                                (long long)a->axis, x->ndim);
    /* weight and bias cover the normalized dims x.shape[axis:] exactly. */
    graph_type want = {GRAPH_F32, 0, {0}};
    for (int d = axis; d < x->ndim; d++)
        want.dim[want.ndim++] = x->dim[d];
    for (int i = 1; i < c->nin; i++) {
        st = check_param(c, i, names[i - 1], &want);
        if (st != TG_OK)
            return st;
    }
    c->out[0] = *x;
    return TG_OK;
}

/* layer_norm_grad(dy, x[, weight]): x and weight are checked as
 * layer_norm's, with the same attributes; dy must have x's type.  Outputs
 * dx (x's type), dweight and dbias (f32, x.shape[axis:]). */
tg_status graph_infer_layer_norm_grad(graph_infer_ctx *c)
{
    const graph_layer_norm_grad_attrs *a = c->attrs;
    const graph_type *dy = &c->in[0], *x = &c->in[1];
    if (x->dtype != GRAPH_F32)
        return graph_infer_fail(c, TG_ERR_DTYPE, "x has dtype %s, want f32",
                                graph_dtype_name(x->dtype));
    graph_layer_norm_attrs la = {a->axis, a->eps};
    graph_type y;
    graph_infer_ctx sub = *c;
    sub.op = &graph_ops[GRAPH_OP_layer_norm];
    sub.in = x;
    sub.nin = c->nin - 1;
    sub.attrs = &la;
    sub.out = &y;
    sub.max_out = 1;
    tg_status st = graph_infer_layer_norm(&sub);
    if (st != TG_OK)
        return st;
    if (!graph_type_eq(dy, x)) {
        char sd[160], sx[160];
        return graph_infer_fail(c, TG_ERR_SHAPE, "dy is %s %s, x is %s %s: they must match",
                                graph_dtype_name(dy->dtype), graph_shape_str(dy, sd, sizeof sd),
                                graph_dtype_name(x->dtype), graph_shape_str(x, sx, sizeof sx));
    }
    int axis = graph_norm_axis(a->axis, x->ndim);
    graph_type p = {GRAPH_F32, 0, {0}};
    for (int d = axis; d < x->ndim; d++)
        p.dim[p.ndim++] = x->dim[d];
    c->out[0] = *x;
    c->out[1] = p;
    c->out[2] = p;
    c->nout = 3;
    return TG_OK;
}

tg_status graph_infer_softmax(graph_infer_ctx *c)
{
    /* softmax and log_softmax share this; their attrs differ in type only. */
    int64_t axis = c->op == &graph_ops[GRAPH_OP_softmax]
                       ? ((const graph_softmax_attrs *)c->attrs)->axis
                       : ((const graph_log_softmax_attrs *)c->attrs)->axis;
    if (graph_norm_axis(axis, c->in[0].ndim) < 0)
        return graph_infer_fail(c, TG_ERR_AXIS, "axis %lld out of range for %d dims",
                                (long long)axis, c->in[0].ndim);
    c->out[0] = c->in[0];
    return TG_OK;
}

tg_status graph_infer_reduce(graph_infer_ctx *c)
{
    const graph_ints *axes;
    int64_t keepdim;
    int is_max = 0;
    if (c->op == &graph_ops[GRAPH_OP_reduce_sum]) {
        const graph_reduce_sum_attrs *a = c->attrs;
        axes = &a->axes, keepdim = a->keepdim;
    } else if (c->op == &graph_ops[GRAPH_OP_reduce_mean]) {
        const graph_reduce_mean_attrs *a = c->attrs;
        axes = &a->axes, keepdim = a->keepdim;
    } else {
        const graph_reduce_max_attrs *a = c->attrs;
        axes = &a->axes, keepdim = a->keepdim;
        is_max = 1;
    }
    if (keepdim != 0 && keepdim != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "keepdim must be 0 or 1, got %lld",
                                (long long)keepdim);
    const graph_type *x = &c->in[0];
    unsigned char mask[GRAPH_MAX_DIMS];
    tg_status st = graph_reduce_mask(x, axes, mask, c->err, c->errlen);
    if (st != TG_OK)
        return st;
    graph_type *y = &c->out[0];
    int64_t count = 1, nout = 1;
    y->dtype = x->dtype;
    y->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (mask[d])
            count *= x->dim[d];
        else
            nout *= x->dim[d];
        if (!mask[d] || keepdim)
            y->dim[y->ndim++] = mask[d] ? 1 : x->dim[d];
    }
    if (is_max && count == 0 && nout > 0)
        return graph_infer_fail(c, TG_ERR_SHAPE, "reduce_max over an empty axis");
    return TG_OK;
}

tg_status graph_infer_arg(graph_infer_ctx *c)
{
    /* argmax and argmin share this; their attrs differ in type only. */
    graph_argmax_attrs a;
    if (c->op == &graph_ops[GRAPH_OP_argmin]) {
        const graph_argmin_attrs *m = c->attrs;
        a = (graph_argmax_attrs){m->axis, m->keepdim, m->select_last};
    } else {
        a = *(const graph_argmax_attrs *)c->attrs;
    }
    const graph_type *x = &c->in[0];
    if (a.keepdim != 0 && a.keepdim != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "keepdim must be 0 or 1, got %lld",
                                (long long)a.keepdim);
    if (a.select_last != 0 && a.select_last != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "select_last must be 0 or 1, got %lld",
                                (long long)a.select_last);
    int axis = graph_norm_axis(a.axis, x->ndim);
    if (axis < 0)
        return graph_infer_fail(c, TG_ERR_AXIS, "axis %lld out of range for %d dims",
                                (long long)a.axis, x->ndim);
    graph_type *y = &c->out[0];
    int64_t nout = 1;
    y->dtype = GRAPH_I64;
    y->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis)
            nout *= x->dim[d];
        if (d != axis || a.keepdim)
            y->dim[y->ndim++] = d == axis ? 1 : x->dim[d];
    }
    /* as reduce_max: only an output with elements needs a candidate */
    if (x->ndim > 0 && x->dim[axis] == 0 && nout > 0)
        return graph_infer_fail(c, TG_ERR_SHAPE, "%s over an empty axis", c->op->name);
    return TG_OK;
}

/* topk: values (x's dtype) and i64 indices, x's shape with k on axis. */
tg_status graph_infer_topk(graph_infer_ctx *c)
{
    const graph_topk_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    if (a->largest != 0 && a->largest != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "largest must be 0 or 1, got %lld",
                                (long long)a->largest);
    if (a->sorted != 0 && a->sorted != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "sorted must be 0 or 1, got %lld",
                                (long long)a->sorted);
    if (x->ndim < 1)
        return graph_infer_fail(c, TG_ERR_SHAPE, "x must have rank >= 1, got 0-D");
    int axis = graph_norm_axis(a->axis, x->ndim);
    if (axis < 0)
        return graph_infer_fail(c, TG_ERR_AXIS, "axis %lld out of range for %d dims",
                                (long long)a->axis, x->ndim);
    if (a->k < 0 || a->k > x->dim[axis])
        return graph_infer_fail(c, TG_ERR_ARG, "k %lld is not in 0 .. %lld (dim %d)",
                                (long long)a->k, (long long)x->dim[axis], axis);
    if (c->max_out < 2)
        return graph_infer_fail(c, TG_ERR_ARG, "topk makes 2 outputs, room for %d",
                                c->max_out);
    c->out[0] = *x;
    c->out[0].dim[axis] = a->k;
    c->out[1] = c->out[0];
    c->out[1].dtype = GRAPH_I64;
    c->nout = 2;
    return TG_OK;
}

/* cumsum: x's shape and dtype; axis as softmax's (a 0-d x: 0 or -1). */
tg_status graph_infer_cumsum(graph_infer_ctx *c)
{
    const graph_cumsum_attrs *a = c->attrs;
    if (a->exclusive != 0 && a->exclusive != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "exclusive must be 0 or 1, got %lld",
                                (long long)a->exclusive);
    if (a->reverse != 0 && a->reverse != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "reverse must be 0 or 1, got %lld",
                                (long long)a->reverse);
    if (graph_norm_axis(a->axis, c->in[0].ndim) < 0)
        return graph_infer_fail(c, TG_ERR_AXIS, "axis %lld out of range for %d dims",
                                (long long)a->axis, c->in[0].ndim);
    c->out[0] = c->in[0];
    return TG_OK;
}
