/*
 * grad_util.c - helpers the gradient rules share (grad_util.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "grad_util.h"

grad_v gu_op1(grad_builder *b, graph_op op, grad_v x, const void *attrs)
{
    return b->op(b, op, &x, 1, attrs);
}

grad_v gu_op2(grad_builder *b, graph_op op, grad_v x, grad_v y)
{
    grad_v in[2] = {x, y};
    return b->op(b, op, in, 2, NULL);
}

grad_v gu_op3(grad_builder *b, graph_op op, grad_v x, grad_v y, grad_v z)
{
    grad_v in[3] = {x, y, z};
    return b->op(b, op, in, 3, NULL);
}

grad_v gu_scalar(grad_builder *b, double v)
{
    float f = (float)v;
    graph_ints none;
    memset(&none, 0, sizeof none);
    return b->constant(b, GRAPH_F32, &none, &f);
}

grad_v gu_mul_s(grad_builder *b, grad_v x, double s)
{
    return gu_op2(b, GRAPH_OP_mul, x, gu_scalar(b, s));
}

grad_v gu_add_s(grad_builder *b, grad_v x, double s)
{
    return gu_op2(b, GRAPH_OP_add, x, gu_scalar(b, s));
}

grad_v gu_keep(grad_builder *b, grad_v cond, grad_v a)
{
    return gu_op3(b, GRAPH_OP_where, cond, a, gu_scalar(b, 0.0));
}

grad_v gu_drop(grad_builder *b, grad_v cond, grad_v a)
{
    return gu_op3(b, GRAPH_OP_where, cond, gu_scalar(b, 0.0), a);
}

grad_v gu_f32(grad_builder *b, grad_v x)
{
    graph_cast_attrs at;
    graph_attrs_default(GRAPH_OP_cast, &at);
    at.to = GRAPH_F32;
    return gu_op1(b, GRAPH_OP_cast, x, &at);
}

grad_v gu_reshape(grad_builder *b, grad_v x, const int64_t *dims, int n)
{
    graph_reshape_attrs at;
    graph_attrs_default(GRAPH_OP_reshape, &at);
    at.shape.n = n;
    for (int i = 0; i < n; i++)
        at.shape.v[i] = dims[i];
    return gu_op1(b, GRAPH_OP_reshape, x, &at);
}

static int same_dims(const graph_type *a, const graph_type *t)
{
    if (a->ndim != t->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dim[i] != t->dim[i])
            return 0;
    return 1;
}

grad_v gu_reshape_to(grad_builder *b, grad_v x, const graph_type *t)
{
    if (!x)
        return NULL;
    if (same_dims(b->type(b, x), t))
        return x;
    return gu_reshape(b, x, t->dim, t->ndim);
}

grad_v gu_expand_to(grad_builder *b, grad_v x, const graph_type *t)
{
    if (!x)
        return NULL;
    if (same_dims(b->type(b, x), t))
        return x;
    graph_expand_attrs at;
    graph_attrs_default(GRAPH_OP_expand, &at);
    at.shape.n = t->ndim;
    for (int i = 0; i < t->ndim; i++)
        at.shape.v[i] = t->dim[i];
    return gu_op1(b, GRAPH_OP_expand, x, &at);
}

grad_v gu_zeros(grad_builder *b, const graph_type *t)
{
    return gu_expand_to(b, gu_scalar(b, 0.0), t);
}

static grad_v reduce(grad_builder *b, graph_op op, grad_v x, const int64_t *axes, int n,
                     int keepdim)
{
    if (!x)
        return NULL;
    if (n <= 0) {
        b->fail(b, TG_ERR_STATE, "gradient: an empty reduction (internal)");
        return NULL;
    }
    graph_reduce_sum_attrs at; /* reduce_mean's fields are the same */
    _Static_assert(sizeof(graph_reduce_sum_attrs) == sizeof(graph_reduce_mean_attrs),
                   "reduce attrs differ");
    graph_attrs_default(op, &at);
    at.axes.n = n;
    for (int i = 0; i < n; i++)
        at.axes.v[i] = axes[i];
    at.keepdim = keepdim;
    return gu_op1(b, op, x, &at);
}

grad_v gu_sum(grad_builder *b, grad_v x, const int64_t *axes, int n, int keepdim)
{
    return reduce(b, GRAPH_OP_reduce_sum, x, axes, n, keepdim);
}

grad_v gu_mean(grad_builder *b, grad_v x, const int64_t *axes, int n, int keepdim)
{
    return reduce(b, GRAPH_OP_reduce_mean, x, axes, n, keepdim);
}

grad_v gu_sum_to(grad_builder *b, grad_v g, const graph_type *t)
{
    if (!g)
        return NULL;
    const graph_type *gt = b->type(b, g);
    if (same_dims(gt, t))
        return g;
    int64_t axes[GRAPH_MAX_DIMS];
    int n = 0, lead = gt->ndim - t->ndim;
    for (int i = 0; i < gt->ndim; i++)
        if (i < lead || (t->dim[i - lead] == 1 && gt->dim[i] != 1))
            axes[n++] = i;
    if (n)
        g = gu_sum(b, g, axes, n, 1);
    return gu_reshape_to(b, g, t);
}

grad_v gu_slice1(grad_builder *b, grad_v x, int axis, int64_t start, int64_t end)
{
    graph_slice_attrs at;
    graph_attrs_default(GRAPH_OP_slice, &at);
    at.axes.n = at.starts.n = at.ends.n = 1;
    at.axes.v[0] = axis;
    at.starts.v[0] = start;
    at.ends.v[0] = end;
    return gu_op1(b, GRAPH_OP_slice, x, &at);
}

grad_v gu_i64(grad_builder *b, const int64_t *data, const int64_t *dims, int n)
{
    graph_ints s;
    memset(&s, 0, sizeof s);
    s.n = n;
    for (int i = 0; i < n; i++)
        s.v[i] = dims[i];
    return b->constant(b, GRAPH_I64, &s, data);
}

tg_status gu_fail(grad_builder *b, const grad_ctx *c, tg_status st, const char *fmt, ...)
{
    char msg[256];
    int k = snprintf(msg, sizeof msg, "%s: ", graph_ops[c->op].name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    return b->fail(b, st, msg);
}

tg_status gu_done(const grad_ctx *c)
{
    for (int i = 0; i < c->nin; i++)
        if (c->need[i] && !c->gin[i])
            return TG_ERR_STATE;
    return TG_OK;
}
