/*
 * infer_train.c - shape and dtype inference of the training-mode ops:
 * rng_advance, dropout, batch_norm_train and its gradient op
 * batch_norm_train_grad (graph/ops.def says what they compute).  Every attribute and operand is checked here, so the kernels
 * in eager/kernels_train.c trust them.
 *
 * - A generator is an i64 tensor of shape [2]: {seed, offset}.
 * - dropout's p is in [0, 1) (1 would scale by 1/0); rng_advance's n >= 0.
 * - batch_norm_train needs more than one value per channel (N * H * W > 1,
 *   as PyTorch: the unbiased variance divides by N * H * W - 1); eps is
 *   finite and >= 0, momentum in [0, 1].
 * - batch_norm_train_grad takes any number of values per channel (0 too:
 *   its sums are then 0); dy has x's type, weight, mean and invstd are
 *   f32 [C].  batch_norm_pool_grad: y has x's type, dp max_pool2d(y)'s
 *   (max_pool2d's checks), the rest as batch_norm_train_grad's.
 */
#include <math.h>

#include "infer.h"

/* Checks that input i is a generator (i64 [2]). */
static tg_status check_gen(graph_infer_ctx *c, int i)
{
    const graph_type *t = &c->in[i];
    char s[160];
    if (t->dtype != GRAPH_I64 || t->ndim != 1 || t->dim[0] != 2)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "the generator (input %d) must be i64 [2] {seed, offset}, got %s %s",
                                i, graph_dtype_name(t->dtype), graph_shape_str(t, s, sizeof s));
    return TG_OK;
}

tg_status graph_infer_rng_advance(graph_infer_ctx *c)
{
    const graph_rng_advance_attrs *a = c->attrs;
    tg_status st = check_gen(c, 0);
    if (st != TG_OK)
        return st;
    if (a->n < 0 || a->n > INT64_MAX - 3)
        return graph_infer_fail(c, TG_ERR_ARG, "n must be >= 0, got %lld", (long long)a->n);
    c->out[0] = c->in[0];
    return TG_OK;
}

tg_status graph_infer_dropout(graph_infer_ctx *c)
{
    const graph_dropout_attrs *a = c->attrs;
    if (!(a->p >= 0.0f && a->p < 1.0f))
        return graph_infer_fail(c, TG_ERR_ARG, "p must be in [0, 1), got %g", (double)a->p);
    tg_status st = check_gen(c, 1);
    if (st != TG_OK)
        return st;
    c->out[0] = c->in[0];
    return TG_OK;
}

/* The shape max_pool2d gives x with these attributes, by max_pool2d's own
 * checks (its reason, prefixed "the fused pool: ", into c on failure). */
static tg_status pool_of(graph_infer_ctx *c, const graph_type *x, const graph_ints *kernel,
                         const graph_ints *stride, const graph_ints *padding, graph_type *out)
{
    graph_max_pool2d_attrs mp = {*kernel, *stride, *padding};
    char perr[200] = "";
    graph_infer_ctx pc = {&graph_ops[GRAPH_OP_max_pool2d], x, 1, &mp, out, 1, 0, perr,
                          sizeof perr};
    tg_status st = graph_infer_pool2d(&pc);
    return st == TG_OK ? TG_OK : graph_infer_fail(c, st, "the fused pool: %s", perr);
}

tg_status graph_infer_batch_norm_train(graph_infer_ctx *c)
{
    static const char *const names[] = {"scale", "bias", "running_mean", "running_var"};
    const graph_batch_norm_train_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    char s[160], w[160];
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return graph_infer_fail(c, TG_ERR_ARG, "eps must be finite and >= 0, got %g",
                                (double)a->eps);
    if (!(a->momentum >= 0.0f && a->momentum <= 1.0f))
        return graph_infer_fail(c, TG_ERR_ARG, "momentum must be in [0, 1], got %g",
                                (double)a->momentum);
    if (a->relu != 0 && a->relu != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "relu must be 0 or 1, got %lld",
                                (long long)a->relu);
    if (x->ndim < 2)
        return graph_infer_fail(c, TG_ERR_SHAPE, "x needs at least 2 dims [N,C,...], has %d",
                                x->ndim);
    graph_type want = {GRAPH_F32, 1, {x->dim[1]}};
    for (int i = 1; i < 5; i++) {
        const graph_type *t = &c->in[i];
        if (t->dtype != GRAPH_F32)
            return graph_infer_fail(c, TG_ERR_DTYPE, "%s has dtype %s, want f32", names[i - 1],
                                    graph_dtype_name(t->dtype));
        if (!graph_type_eq(t, &want))
            return graph_infer_fail(c, TG_ERR_SHAPE, "%s has shape %s, want %s", names[i - 1],
                                    graph_shape_str(t, s, sizeof s),
                                    graph_shape_str(&want, w, sizeof w));
    }
    int64_t per_channel = 1;
    for (int d = 0; d < x->ndim; d++)
        if (d != 1)
            per_channel *= x->dim[d];
    if (per_channel <= 1)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "expected more than 1 value per channel when training, got %lld "
                                "(input %s)",
                                (long long)per_channel, graph_shape_str(x, s, sizeof s));
    c->out[0] = *x;
    for (int k = 1; k < 5; k++)
        c->out[k] = want;
    c->nout = 5;
    if (a->pool_kernel.n == 0) {
        if (a->pool_stride.n || a->pool_padding.n)
            return graph_infer_fail(c, TG_ERR_ARG, "pool_stride or pool_padding without a "
                                                   "pool_kernel");
        return TG_OK;
    }
    if (c->max_out < 6)
        return graph_infer_fail(c, TG_ERR_ARG, "the fused pool's output needs room for 6 "
                                               "outputs, have %d", c->max_out);
    graph_type pt;
    tg_status st = pool_of(c, x, &a->pool_kernel, &a->pool_stride, &a->pool_padding, &pt);
    if (st != TG_OK)
        return st;
    c->out[5] = pt;
    c->nout = 6;
    return TG_OK;
}

tg_status graph_infer_batch_norm_train_grad(graph_infer_ctx *c)
{
    static const char *const names[] = {"dy", "x", "weight", "mean", "invstd"};
    const graph_type *x = &c->in[1], *dy = &c->in[0];
    char s[160], w[160];
    for (int i = 0; i < 5; i++)
        if (c->in[i].dtype != GRAPH_F32)
            return graph_infer_fail(c, TG_ERR_DTYPE, "%s (input %d) has dtype %s, want f32",
                                    names[i], i, graph_dtype_name(c->in[i].dtype));
    if (x->ndim < 2)
        return graph_infer_fail(c, TG_ERR_SHAPE, "x needs at least 2 dims [N,C,...], has %d",
                                x->ndim);
    if (!graph_type_eq(dy, x))
        return graph_infer_fail(c, TG_ERR_SHAPE, "dy has shape %s, x %s: they must match",
                                graph_shape_str(dy, s, sizeof s), graph_shape_str(x, w, sizeof w));
    graph_type want = {GRAPH_F32, 1, {x->dim[1]}};
    for (int i = 2; i < 5; i++)
        if (!graph_type_eq(&c->in[i], &want))
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "%s (input %d) has shape %s, want %s (x's channels, dim 1)",
                                    names[i], i, graph_shape_str(&c->in[i], s, sizeof s),
                                    graph_shape_str(&want, w, sizeof w));
    c->out[0] = *x;
    c->out[1] = want;
    c->out[2] = want;
    c->nout = 3;
    return TG_OK;
}

tg_status graph_infer_batch_norm_pool_grad(graph_infer_ctx *c)
{
    const graph_batch_norm_pool_grad_attrs *a = c->attrs;
    const graph_type *dp = &c->in[0], *y = &c->in[1], *x = &c->in[2];
    char s[160], w[160];
    for (int i = 0; i < 2; i++)
        if (c->in[i].dtype != GRAPH_F32)
            return graph_infer_fail(c, TG_ERR_DTYPE, "%s (input %d) has dtype %s, want f32",
                                    i ? "y" : "dp", i, graph_dtype_name(c->in[i].dtype));
    if (!graph_type_eq(y, x))
        return graph_infer_fail(c, TG_ERR_SHAPE, "y has shape %s, x %s: they must match",
                                graph_shape_str(y, s, sizeof s), graph_shape_str(x, w, sizeof w));
    graph_type pt;
    tg_status st = pool_of(c, y, &a->kernel, &a->stride, &a->padding, &pt);
    if (st != TG_OK)
        return st;
    if (!graph_type_eq(dp, &pt))
        return graph_infer_fail(c, TG_ERR_SHAPE, "dp has shape %s, the pool of y %s",
                                graph_shape_str(dp, s, sizeof s), graph_shape_str(&pt, w, sizeof w));
    /* then batch_norm_train_grad's checks on (y's shape as dy, x, weight, mean, invstd) */
    graph_type in5[5] = {*x, c->in[2], c->in[3], c->in[4], c->in[5]};
    graph_infer_ctx bc = *c;
    bc.op = &graph_ops[GRAPH_OP_batch_norm_train_grad];
    bc.in = in5;
    bc.nin = 5;
    bc.attrs = NULL;
    if ((st = graph_infer_batch_norm_train_grad(&bc)) != TG_OK)
        return st; /* its reason is in c->err (bc's) */
    c->nout = bc.nout;
    return TG_OK;
}
