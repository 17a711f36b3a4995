/*
 * grad_rules_ew.c - gradient rules of the elementwise ops and the
 * reductions (graph/grad.def), written with registry ops through a
 * grad_builder.  Binary ops sum their gradients back to each input's
 * shape (broadcasting).  At a kink the rules choose PyTorch's side:
 * relu'(0) = 0, abs'(0) = 0, clip passes the gradient at its bounds,
 * maximum / minimum and reduce_max split it evenly between ties.
 */
#include <math.h>

#include "grad_util.h"

#define G (c->gout[0])
#define X (c->in[0])
#define Y (c->out[0])

/* ---- unary ---- */

tg_status grad_rule_neg(grad_builder *b, const grad_ctx *c)
{
    c->gin[0] = gu_op1(b, GRAPH_OP_neg, G, NULL);
    return gu_done(c);
}

tg_status grad_rule_abs(grad_builder *b, const grad_ctx *c)
{
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, gu_op1(b, GRAPH_OP_sign, X, NULL));
    return gu_done(c);
}

tg_status grad_rule_exp(grad_builder *b, const grad_ctx *c)
{
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, Y);
    return gu_done(c);
}

tg_status grad_rule_log(grad_builder *b, const grad_ctx *c)
{
    c->gin[0] = gu_op2(b, GRAPH_OP_div, G, X);
    return gu_done(c);
}

tg_status grad_rule_sqrt(grad_builder *b, const grad_ctx *c)
{
    /* 1 / (2 sqrt(x)) */
    c->gin[0] = gu_op2(b, GRAPH_OP_div, G, gu_mul_s(b, Y, 2.0));
    return gu_done(c);
}

tg_status grad_rule_rsqrt(grad_builder *b, const grad_ctx *c)
{
    /* -x^(-3/2) / 2 = -y / (2x) */
    grad_v d = gu_op2(b, GRAPH_OP_div, gu_mul_s(b, Y, -0.5), X);
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, d);
    return gu_done(c);
}

tg_status grad_rule_reciprocal(grad_builder *b, const grad_ctx *c)
{
    /* -1/x^2 = -y^2 */
    grad_v yy = gu_op2(b, GRAPH_OP_mul, Y, Y);
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, gu_op1(b, GRAPH_OP_neg, G, NULL), yy);
    return gu_done(c);
}

tg_status grad_rule_relu(grad_builder *b, const grad_ctx *c)
{
    /* y > 0 exactly where x > 0: one elementwise op, which fuses with its
     * neighbours (a gt's bool mask and a where did not) */
    c->gin[0] = gu_op2(b, GRAPH_OP_relu_grad, G, Y);
    return gu_done(c);
}

tg_status grad_rule_leaky_relu(grad_builder *b, const grad_ctx *c)
{
    const graph_leaky_relu_attrs *a = c->attrs;
    grad_v pos = gu_op2(b, GRAPH_OP_gt, X, gu_scalar(b, 0.0));
    c->gin[0] = gu_op3(b, GRAPH_OP_where, pos, G, gu_mul_s(b, G, a->alpha));
    return gu_done(c);
}

tg_status grad_rule_sigmoid(grad_builder *b, const grad_ctx *c)
{
    /* y (1 - y) */
    grad_v one_m = gu_op2(b, GRAPH_OP_sub, gu_scalar(b, 1.0), Y);
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, gu_op2(b, GRAPH_OP_mul, Y, one_m));
    return gu_done(c);
}

tg_status grad_rule_tanh(grad_builder *b, const grad_ctx *c)
{
    /* 1 - y^2 */
    grad_v d = gu_op2(b, GRAPH_OP_sub, gu_scalar(b, 1.0), gu_op2(b, GRAPH_OP_mul, Y, Y));
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, d);
    return gu_done(c);
}

tg_status grad_rule_gelu(grad_builder *b, const grad_ctx *c)
{
    /* gelu = x Phi(x): Phi(x) + x phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2,
     * phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
    grad_v cdf = gu_mul_s(b, gu_add_s(b, gu_op1(b, GRAPH_OP_erf, gu_mul_s(b, X, M_SQRT1_2), NULL),
                                      1.0), 0.5);
    grad_v xx = gu_op2(b, GRAPH_OP_mul, X, X);
    grad_v pdf = gu_mul_s(b, gu_op1(b, GRAPH_OP_exp, gu_mul_s(b, xx, -0.5), NULL),
                          0.3989422804014327 /* 1 / sqrt(2 pi) */);
    grad_v d = gu_op2(b, GRAPH_OP_add, cdf, gu_op2(b, GRAPH_OP_mul, X, pdf));
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, d);
    return gu_done(c);
}

tg_status grad_rule_silu(grad_builder *b, const grad_ctx *c)
{
    /* s (1 + x (1 - s)), s = sigmoid(x) */
    grad_v s = gu_op1(b, GRAPH_OP_sigmoid, X, NULL);
    grad_v one_m = gu_op2(b, GRAPH_OP_sub, gu_scalar(b, 1.0), s);
    grad_v d = gu_op2(b, GRAPH_OP_mul, s, gu_add_s(b, gu_op2(b, GRAPH_OP_mul, X, one_m), 1.0));
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, d);
    return gu_done(c);
}

tg_status grad_rule_erf(grad_builder *b, const grad_ctx *c)
{
    /* 2 / sqrt(pi) exp(-x^2) */
    grad_v xx = gu_op2(b, GRAPH_OP_mul, X, X);
    grad_v d = gu_mul_s(b, gu_op1(b, GRAPH_OP_exp, gu_op1(b, GRAPH_OP_neg, xx, NULL), NULL),
                        M_2_SQRTPI);
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, d);
    return gu_done(c);
}

tg_status grad_rule_softplus(grad_builder *b, const grad_ctx *c)
{
    /* sigmoid(x); above the threshold 20 softplus is x, and sigmoid(x)
     * rounds to 1 in f32 there */
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, G, gu_op1(b, GRAPH_OP_sigmoid, X, NULL));
    return gu_done(c);
}

tg_status grad_rule_clip(grad_builder *b, const grad_ctx *c)
{
    /* passes where min <= x <= max (PyTorch's clamp: also at the bounds) */
    const graph_clip_attrs *a = c->attrs;
    grad_v below = gu_op2(b, GRAPH_OP_lt, X, gu_scalar(b, a->min));
    grad_v above = gu_op2(b, GRAPH_OP_gt, X, gu_scalar(b, a->max));
    c->gin[0] = gu_drop(b, below, gu_drop(b, above, G));
    return gu_done(c);
}

/* ---- binary (NumPy broadcasting) ---- */

#define A (c->in[0])
#define B (c->in[1])
#define NEED(i) (c->need[i])
#define TO_IN(i, v) (c->gin[i] = gu_sum_to(b, (v), &c->in_type[i]))

tg_status grad_rule_add(grad_builder *b, const grad_ctx *c)
{
    if (NEED(0))
        TO_IN(0, G);
    if (NEED(1))
        TO_IN(1, G);
    return gu_done(c);
}

tg_status grad_rule_sub(grad_builder *b, const grad_ctx *c)
{
    if (NEED(0))
        TO_IN(0, G);
    if (NEED(1))
        TO_IN(1, gu_op1(b, GRAPH_OP_neg, G, NULL));
    return gu_done(c);
}

tg_status grad_rule_mul(grad_builder *b, const grad_ctx *c)
{
    if (NEED(0))
        TO_IN(0, gu_op2(b, GRAPH_OP_mul, G, B));
    if (NEED(1))
        TO_IN(1, gu_op2(b, GRAPH_OP_mul, G, A));
    return gu_done(c);
}

tg_status grad_rule_div(grad_builder *b, const grad_ctx *c)
{
    /* d/da = 1/b; d/db = -a/b^2 = -y/b */
    grad_v ga = gu_op2(b, GRAPH_OP_div, G, B);
    if (NEED(0))
        TO_IN(0, ga);
    if (NEED(1))
        TO_IN(1, gu_op1(b, GRAPH_OP_neg, gu_op2(b, GRAPH_OP_mul, ga, Y), NULL));
    return gu_done(c);
}

tg_status grad_rule_pow(grad_builder *b, const grad_ctx *c)
{
    /* d/da = b a^(b-1); d/db = y log(a) (a > 0; at a <= 0 it is NaN,
     * where PyTorch gives 0 for a = 0) */
    if (NEED(0)) {
        grad_v am = gu_op2(b, GRAPH_OP_pow, A, gu_add_s(b, B, -1.0));
        TO_IN(0, gu_op2(b, GRAPH_OP_mul, G, gu_op2(b, GRAPH_OP_mul, B, am)));
    }
    if (NEED(1)) {
        grad_v d = gu_op2(b, GRAPH_OP_mul, Y, gu_op1(b, GRAPH_OP_log, A, NULL));
        TO_IN(1, gu_op2(b, GRAPH_OP_mul, G, d));
    }
    return gu_done(c);
}

/* maximum (sel gt) / minimum (sel lt): the selected side gets g, a tie
 * splits it in halves (PyTorch). */
static tg_status grad_extreme(grad_builder *b, const grad_ctx *c, graph_op sel)
{
    grad_v win = gu_op2(b, sel, A, B);
    grad_v tie = gu_op2(b, GRAPH_OP_eq, A, B);
    grad_v ga = gu_op3(b, GRAPH_OP_where, win, G, gu_keep(b, tie, gu_mul_s(b, G, 0.5)));
    if (NEED(0))
        TO_IN(0, ga);
    if (NEED(1))
        TO_IN(1, gu_op2(b, GRAPH_OP_sub, G, ga));
    return gu_done(c);
}

tg_status grad_rule_maximum(grad_builder *b, const grad_ctx *c)
{
    return grad_extreme(b, c, GRAPH_OP_gt);
}

tg_status grad_rule_minimum(grad_builder *b, const grad_ctx *c)
{
    return grad_extreme(b, c, GRAPH_OP_lt);
}

tg_status grad_rule_where(grad_builder *b, const grad_ctx *c)
{
    /* input 0 is the condition: no gradient */
    if (NEED(1))
        TO_IN(1, gu_keep(b, c->in[0], G));
    if (NEED(2))
        TO_IN(2, gu_drop(b, c->in[0], G));
    return gu_done(c);
}

/* ---- reductions ---- */

/* The reduced dims of a reduce_* node: x's type with them set to 1
 * (*kt), and how many elements each output element reduced. */
static int64_t kept_type(const grad_ctx *c, const graph_ints *axes, graph_type *kt)
{
    const graph_type *x = &c->in_type[0];
    *kt = *x;
    int64_t count = 1;
    for (int d = 0; d < x->ndim; d++) {
        int red = axes->n == 0;
        for (int i = 0; i < axes->n && !red; i++)
            red = graph_axis(axes->v[i], x->ndim) == d;
        if (red) {
            count *= x->dim[d];
            kt->dim[d] = 1;
        }
    }
    return count;
}

tg_status grad_rule_reduce_sum(grad_builder *b, const grad_ctx *c)
{
    const graph_reduce_sum_attrs *a = c->attrs;
    graph_type kt;
    kept_type(c, &a->axes, &kt);
    c->gin[0] = gu_expand_to(b, gu_reshape_to(b, G, &kt), &c->in_type[0]);
    return gu_done(c);
}

tg_status grad_rule_reduce_mean(grad_builder *b, const grad_ctx *c)
{
    const graph_reduce_mean_attrs *a = c->attrs;
    graph_type kt;
    int64_t n = kept_type(c, &a->axes, &kt);
    grad_v g = gu_mul_s(b, gu_reshape_to(b, G, &kt), n ? 1.0 / (double)n : 0.0);
    c->gin[0] = gu_expand_to(b, g, &c->in_type[0]);
    return gu_done(c);
}

tg_status grad_rule_reduce_max(grad_builder *b, const grad_ctx *c)
{
    /* the maxima of each group share g evenly (PyTorch's amax) */
    const graph_reduce_max_attrs *a = c->attrs;
    graph_type kt;
    kept_type(c, &a->axes, &kt);
    int64_t axes[GRAPH_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < kt.ndim; d++)
        if (kt.dim[d] == 1)
            axes[n++] = d;
    grad_v at = gu_f32(b, gu_op2(b, GRAPH_OP_eq, X, gu_reshape_to(b, Y, &kt)));
    grad_v share = n ? gu_op2(b, GRAPH_OP_div, gu_reshape_to(b, G, &kt), gu_sum(b, at, axes, n, 1))
                     : gu_reshape_to(b, G, &kt);
    c->gin[0] = gu_op2(b, GRAPH_OP_mul, at, share);
    return gu_done(c);
}

tg_status grad_rule_cumsum(grad_builder *b, const grad_ctx *c)
{
    /* each x[j] is in the sums after it (before it, reversed): the
     * running sums of g the other way, exclusive as the forward */
    graph_cumsum_attrs a = *(const graph_cumsum_attrs *)c->attrs;
    a.reverse = !a.reverse;
    c->gin[0] = gu_op1(b, GRAPH_OP_cumsum, G, &a);
    return gu_done(c);
}
