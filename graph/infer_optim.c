/*
 * infer_optim.c - shape and dtype inference of the optimizer updates
 * (sgd_step, adamw_step): the parameter and its gradient and moment
 * buffers share one f32 type, which every output has; each
 * hyperparameter is one f32 element, adamw_step's step count one i64
 * element.  Each refusal names the input by its role.
 */
#include <string.h>

#include "infer.h"

/* Input k (name) has exactly param's dtype and shape. */
static tg_status same_as_param(graph_infer_ctx *c, int k, const char *name)
{
    const graph_type *p = &c->in[0], *t = &c->in[k];
    if (graph_type_eq(p, t))
        return TG_OK;
    char a[160], b[160];
    return graph_infer_fail(c, TG_ERR_SHAPE,
                            "%s (input %d) is %s %s, param is %s %s: they must match",
                            name, k, graph_dtype_name(t->dtype), graph_shape_str(t, a, sizeof a),
                            graph_dtype_name(p->dtype), graph_shape_str(p, b, sizeof b));
}

/* Input k (name) is one element of dtype dt. */
static tg_status one_element(graph_infer_ctx *c, int k, const char *name, graph_dtype dt)
{
    const graph_type *t = &c->in[k];
    if (t->dtype == dt && graph_type_numel(t) == 1)
        return TG_OK;
    char a[160];
    return graph_infer_fail(c, t->dtype == dt ? TG_ERR_SHAPE : TG_ERR_DTYPE,
                            "%s (input %d) must be one %s element (a scalar tensor), got %s %s",
                            name, k, graph_dtype_name(dt), graph_dtype_name(t->dtype),
                            graph_shape_str(t, a, sizeof a));
}

/* Outputs: n copies of param's type. */
static tg_status outputs(graph_infer_ctx *c, int n)
{
    if (c->max_out < n)
        return graph_infer_fail(c, TG_ERR_ARG, "%s makes %d outputs, room for %d", c->op->name,
                                n, c->max_out);
    for (int k = 0; k < n; k++)
        c->out[k] = c->in[0];
    c->nout = n;
    return TG_OK;
}

/* sgd_step(param, grad, momentum_buf, lr, momentum, weight_decay)
 * {nesterov} -> (param', momentum_buf') */
tg_status graph_infer_sgd_step(graph_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "momentum_buf", "lr", "momentum",
                                        "weight_decay"};
    const graph_sgd_step_attrs *a = c->attrs;
    if (a->nesterov != 0 && a->nesterov != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "nesterov must be 0 or 1, got %lld",
                                (long long)a->nesterov);
    tg_status st = TG_OK;
    for (int k = 1; k < 3 && st == TG_OK; k++)
        st = same_as_param(c, k, names[k]);
    for (int k = 3; k < 6 && st == TG_OK; k++)
        st = one_element(c, k, names[k], GRAPH_F32);
    return st == TG_OK ? outputs(c, 2) : st;
}

/* adamw_step(param, grad, m, v, step, lr, beta1, beta2, eps, weight_decay)
 * -> (param', m', v') */
tg_status graph_infer_adamw_step(graph_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "m", "v", "step", "lr", "beta1",
                                        "beta2", "eps", "weight_decay"};
    tg_status st = TG_OK;
    for (int k = 1; k < 4 && st == TG_OK; k++)
        st = same_as_param(c, k, names[k]);
    if (st == TG_OK)
        st = one_element(c, 4, names[4], GRAPH_I64);
    for (int k = 5; k < 10 && st == TG_OK; k++)
        st = one_element(c, k, names[k], GRAPH_F32);
    return st == TG_OK ? outputs(c, 3) : st;
}
