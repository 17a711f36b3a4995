/*
 * grad_rules_shape.c - gradient rules of the shape and data-movement ops
 * (graph/grad.def), written with registry ops through a grad_builder:
 * views and reshapes reshape g back, transpose applies the inverse
 * permutation, concat / split slice / join, slice pads (or scatters, for
 * a step other than 1), pad crops, expand sums, gather and
 * gather_elements add g into zeros with scatter_elements.
 */
#include <string.h>

#include "alloc.h"
#include "grad_util.h"
#include "infer_shape.h"

#define G (c->gout[0])

static tg_status to_x_shape(grad_builder *b, const grad_ctx *c)
{
    c->gin[0] = gu_reshape_to(b, G, &c->in_type[0]);
    return gu_done(c);
}

tg_status grad_rule_reshape(grad_builder *b, const grad_ctx *c) { return to_x_shape(b, c); }
tg_status grad_rule_flatten(grad_builder *b, const grad_ctx *c) { return to_x_shape(b, c); }
tg_status grad_rule_squeeze(grad_builder *b, const grad_ctx *c) { return to_x_shape(b, c); }
tg_status grad_rule_unsqueeze(grad_builder *b, const grad_ctx *c) { return to_x_shape(b, c); }

tg_status grad_rule_transpose(grad_builder *b, const grad_ctx *c)
{
    const graph_transpose_attrs *a = c->attrs;
    int nd = c->in_type[0].ndim;
    graph_transpose_attrs inv;
    graph_attrs_default(GRAPH_OP_transpose, &inv);
    inv.perm.n = nd;
    for (int i = 0; i < nd; i++) {
        int p = a->perm.n ? graph_axis(a->perm.v[i], nd) : nd - 1 - i;
        inv.perm.v[p] = i;
    }
    c->gin[0] = gu_op1(b, GRAPH_OP_transpose, G, &inv);
    return gu_done(c);
}

tg_status grad_rule_concat(grad_builder *b, const grad_ctx *c)
{
    const graph_concat_attrs *a = c->attrs;
    int ax = graph_axis(a->axis, c->in_type[0].ndim);
    int64_t at = 0;
    for (int i = 0; i < c->nin; i++) {
        int64_t d = c->in_type[i].dim[ax];
        if (c->need[i])
            c->gin[i] = gu_slice1(b, G, ax, at, at + d);
        at += d;
    }
    return gu_done(c);
}

tg_status grad_rule_split(grad_builder *b, const grad_ctx *c)
{
    const graph_split_attrs *a = c->attrs;
    grad_v *parts = tg_malloc((size_t)c->nout * sizeof *parts);
    if (!parts)
        return gu_fail(b, c, TG_ERR_NOMEM, "no memory");
    for (int i = 0; i < c->nout; i++)
        parts[i] = c->gout[i] ? c->gout[i] : gu_zeros(b, &c->out_type[i]);
    graph_concat_attrs ca;
    graph_attrs_default(GRAPH_OP_concat, &ca);
    ca.axis = a->axis;
    c->gin[0] = b->op(b, GRAPH_OP_concat, parts, c->nout, &ca);
    tg_free(parts);
    return gu_done(c);
}

tg_status grad_rule_slice(grad_builder *b, const grad_ctx *c)
{
    const graph_type *tx = &c->in_type[0];
    graph_slice_plan plan;
    char err[200];
    tg_status st = graph_slice_resolve(tx, c->attrs, &plan, err, sizeof err);
    if (st != TG_OK)
        return gu_fail(b, c, st, "%s", err);
    /* one axis at a time, from g's dims to x's */
    grad_v g = G;
    graph_type cur = c->out_type[0];
    for (int ax = 0; ax < tx->ndim && g; ax++) {
        int64_t d = tx->dim[ax], len = plan.len[ax], s0 = plan.start[ax], step = plan.step[ax];
        if (len == d && step == 1)
            continue; /* the whole axis, in order */
        if (step == 1 || len == 0) {
            graph_pad_attrs pa;
            graph_attrs_default(GRAPH_OP_pad, &pa);
            pa.pads.n = 2 * tx->ndim;
            memset(pa.pads.v, 0, sizeof pa.pads.v);
            pa.pads.v[ax] = len ? s0 : 0;
            pa.pads.v[tx->ndim + ax] = d - (len ? s0 : 0) - len;
            g = gu_op1(b, GRAPH_OP_pad, g, &pa);
        } else {
            /* element i of g goes to s0 + i step on this axis */
            int64_t *idx = tg_malloc((size_t)len * sizeof *idx);
            if (!idx)
                return gu_fail(b, c, TG_ERR_NOMEM, "no memory");
            for (int64_t i = 0; i < len; i++)
                idx[i] = s0 + i * step;
            int64_t shp[GRAPH_MAX_DIMS];
            for (int k = 0; k < tx->ndim; k++)
                shp[k] = k == ax ? len : 1;
            grad_v iv = gu_i64(b, idx, shp, tx->ndim);
            tg_free(idx);
            graph_type into = cur;
            into.dim[ax] = d;
            graph_scatter_elements_attrs sa;
            graph_attrs_default(GRAPH_OP_scatter_elements, &sa);
            sa.axis = ax;
            grad_v in[3] = {gu_zeros(b, &into), gu_expand_to(b, iv, &cur), g};
            g = b->op(b, GRAPH_OP_scatter_elements, in, 3, &sa);
        }
        cur.dim[ax] = d;
    }
    c->gin[0] = g;
    return gu_done(c);
}

tg_status grad_rule_pad(grad_builder *b, const grad_ctx *c)
{
    /* padding by -pads undoes it: what was added is cut, what was cut
     * comes back as zeros */
    graph_pad_attrs a = *(const graph_pad_attrs *)c->attrs;
    for (int i = 0; i < a.pads.n; i++)
        a.pads.v[i] = -a.pads.v[i];
    a.value = 0.0f;
    c->gin[0] = gu_op1(b, GRAPH_OP_pad, G, &a);
    return gu_done(c);
}

tg_status grad_rule_expand(grad_builder *b, const grad_ctx *c)
{
    c->gin[0] = gu_sum_to(b, G, &c->in_type[0]);
    return gu_done(c);
}

tg_status grad_rule_cast(grad_builder *b, const grad_ctx *c)
{
    /* only f32 -> f32 carries a gradient (the identity) */
    if (c->out_type[0].dtype != GRAPH_F32)
        return gu_fail(b, c, TG_ERR_ARG, "no gradient through a cast to %s",
                       graph_dtype_name(c->out_type[0].dtype));
    c->gin[0] = G;
    return gu_done(c);
}

static grad_v scatter_add(grad_builder *b, const graph_type *tx, grad_v idx, grad_v upd, int axis)
{
    graph_scatter_elements_attrs sa;
    graph_attrs_default(GRAPH_OP_scatter_elements, &sa);
    sa.axis = axis;
    sa.reduction = GRAPH_SCATTER_ADD;
    grad_v in[3] = {gu_zeros(b, tx), idx, upd};
    return b->op(b, GRAPH_OP_scatter_elements, in, 3, &sa);
}

tg_status grad_rule_gather(grad_builder *b, const grad_ctx *c)
{
    /* y = x[:axis] + idx.shape + x[axis+1:]: g as [pre, L, post], each
     * slice added at its index */
    const graph_gather_attrs *a = c->attrs;
    const graph_type *tx = &c->in_type[0], *ti = &c->in_type[1];
    int ax = graph_axis(a->axis, tx->ndim);
    int64_t l = 1;
    for (int d = 0; d < ti->ndim; d++)
        l *= ti->dim[d];
    graph_type tg = *tx; /* [pre, L, post] */
    tg.dim[ax] = l;
    int64_t ishape[GRAPH_MAX_DIMS];
    for (int d = 0; d < tx->ndim; d++)
        ishape[d] = d == ax ? l : 1;
    grad_v idx = gu_expand_to(b, gu_reshape(b, c->in[1], ishape, tx->ndim), &tg);
    c->gin[0] = scatter_add(b, tx, idx, gu_reshape_to(b, G, &tg), ax);
    return gu_done(c);
}

tg_status grad_rule_gather_elements(grad_builder *b, const grad_ctx *c)
{
    const graph_gather_elements_attrs *a = c->attrs;
    const graph_type *tx = &c->in_type[0];
    c->gin[0] = scatter_add(b, tx, c->in[1], G, graph_axis(a->axis, tx->ndim));
    return gu_done(c);
}
