/*
 * infer_elementwise.c - shape and dtype inference for the elementwise ops:
 * unary (the output is the input's type), binary arithmetic and
 * comparisons (NumPy broadcasting, both inputs of one dtype: there is no
 * implicit promotion, a cast must be explicit), where, and cast.
 *
 * graph_infer() has already checked the input count and input 0's dtype
 * against the op's mask in ops.def; input 1 (and 2) must then equal it.
 */
#include <math.h>

#include "infer.h"

/* Checks the float attributes of the unary ops that have any. */
static tg_status check_unary_attrs(graph_infer_ctx *c)
{
    if (c->op == &graph_ops[GRAPH_OP_leaky_relu]) {
        const graph_leaky_relu_attrs *at = c->attrs;
        if (!isfinite(at->alpha))
            return graph_infer_fail(c, TG_ERR_ARG, "alpha must be finite, got %g",
                                    (double)at->alpha);
    } else if (c->op == &graph_ops[GRAPH_OP_clip]) {
        /* min > max is allowed: every element becomes max (as in PyTorch). */
        const graph_clip_attrs *at = c->attrs;
        if (isnan(at->min) || isnan(at->max))
            return graph_infer_fail(c, TG_ERR_ARG, "clip bounds must not be NaN "
                                    "(min %g, max %g)", (double)at->min,
                                    (double)at->max);
    }
    return TG_OK;
}

tg_status graph_infer_unary(graph_infer_ctx *c)
{
    tg_status st = check_unary_attrs(c);
    if (st != TG_OK)
        return st;
    c->out[0] = c->in[0];
    return TG_OK;
}

/* Same dtype for inputs [first, last]; names the first mismatch. */
static tg_status same_dtype(graph_infer_ctx *c, int first, int last)
{
    for (int i = first + 1; i <= last; i++) {
        if (c->in[i].dtype != c->in[first].dtype)
            return graph_infer_fail(c, TG_ERR_DTYPE, "dtype mismatch (%s vs %s)",
                                    graph_dtype_name(c->in[first].dtype),
                                    graph_dtype_name(c->in[i].dtype));
    }
    return TG_OK;
}

/*
 * Broadcasts a with b into out; on failure names the first incompatible
 * pair of dims, counted from the end as NumPy aligns them.
 */
static tg_status broadcast2(graph_infer_ctx *c, const graph_type *a,
                            const graph_type *b, graph_type *out)
{
    if (graph_broadcast(a, b, out) == TG_OK)
        return TG_OK;
    for (int k = 1; k <= a->ndim && k <= b->ndim; k++) {
        int64_t da = a->dim[a->ndim - k], db = b->dim[b->ndim - k];
        if (da != db && da != 1 && db != 1)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "cannot broadcast dim %d: %lld vs %lld", -k,
                                    (long long)da, (long long)db);
    }
    return graph_infer_fail(c, TG_ERR_SHAPE, "cannot broadcast");
}

tg_status graph_infer_binary(graph_infer_ctx *c)
{
    tg_status st = same_dtype(c, 0, 1);
    if (st != TG_OK)
        return st;
    st = broadcast2(c, &c->in[0], &c->in[1], &c->out[0]);
    c->out[0].dtype = c->in[0].dtype;
    return st;
}

tg_status graph_infer_compare(graph_infer_ctx *c)
{
    tg_status st = graph_infer_binary(c);
    c->out[0].dtype = GRAPH_BOOL;
    return st;
}

/* where(cond, a, b): cond is bool (checked by the op's dtype mask), a and
 * b share a dtype, and all three broadcast together. */
tg_status graph_infer_where(graph_infer_ctx *c)
{
    tg_status st = same_dtype(c, 1, 2);
    if (st != TG_OK)
        return st;
    graph_type ab;
    st = broadcast2(c, &c->in[1], &c->in[2], &ab);
    if (st == TG_OK)
        st = broadcast2(c, &c->in[0], &ab, &c->out[0]);
    c->out[0].dtype = c->in[1].dtype;
    return st;
}

tg_status graph_infer_cast(graph_infer_ctx *c)
{
    const graph_cast_attrs *at = c->attrs;
    if ((unsigned)at->to >= GRAPH_DTYPE_COUNT)
        return graph_infer_fail(c, TG_ERR_ARG, "invalid target dtype %d",
                                (int)at->to);
    c->out[0] = c->in[0];
    c->out[0].dtype = at->to;
    return TG_OK;
}
