/*
 * infer_blocked.c - shape inference of the blocked-layout ops of the -O3
 * layout pass (optimize/layout.c): to_blocked, from_blocked, conv2d_blk.
 *
 * A blocked tensor is oneDNN's nChw16c as a plain 5-D tensor
 * [N, C/16, H, W, 16]: element (n, c, h, w) of the plain [N,C,H,W] tensor
 * sits at [n][c/16][h][w][c%16].  Keeping the layout in the shape keeps
 * the IR plain: elementwise ops run unchanged on blocked tensors.
 *
 * Choices:
 * - block is 16 (the only block oneDNN's AVX-512 kernels use for f32);
 *   other values are rejected so kernels need not handle them.
 * - conv2d_blk takes conv2d_ep's attributes (checked by
 *   graph_infer_conv2d_ep on the unblocked shapes) plus algo 0..2; groups
 *   must be 1 and the output channels a multiple of 16.
 */
#include "infer.h"

#define BLK 16

/* The plain [N,C,H,W] type of a blocked [N,C/16,H,W,16] one. */
static void unblock(const graph_type *b, graph_type *p)
{
    *p = *b;
    p->ndim = 4;
    p->dim[1] = b->dim[1] * BLK;
}

static void block(const graph_type *p, graph_type *b)
{
    *b = *p;
    b->ndim = 5;
    b->dim[1] = p->dim[1] / BLK;
    b->dim[4] = BLK;
}

static tg_status need_blocked(graph_infer_ctx *c, int i, const char *name)
{
    const graph_type *t = &c->in[i];
    if (t->dtype != GRAPH_F32)
        return graph_infer_fail(c, TG_ERR_DTYPE, "%s must be f32, got %s", name,
                                graph_dtype_name(t->dtype));
    if (t->ndim != 5 || t->dim[4] != BLK)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "%s must be blocked [N,C/16,H,W,16], got rank %d", name,
                                (int)t->ndim);
    return TG_OK;
}

tg_status graph_infer_to_blocked(graph_infer_ctx *c)
{
    const graph_to_blocked_attrs *at = c->attrs;
    const graph_type *x = &c->in[0];
    if (at->block != BLK)
        return graph_infer_fail(c, TG_ERR_ARG, "block must be 16, got %lld",
                                (long long)at->block);
    if (x->ndim != 4)
        return graph_infer_fail(c, TG_ERR_SHAPE, "x must be [N,C,H,W], got rank %d",
                                (int)x->ndim);
    if (x->dim[1] % BLK)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "channels %lld are not a multiple of the block 16",
                                (long long)x->dim[1]);
    block(x, &c->out[0]);
    return TG_OK;
}

tg_status graph_infer_from_blocked(graph_infer_ctx *c)
{
    tg_status st = need_blocked(c, 0, "x");
    if (st == TG_OK)
        unblock(&c->in[0], &c->out[0]);
    return st;
}

tg_status graph_infer_conv2d_blk(graph_infer_ctx *c)
{
    const graph_conv2d_blk_attrs *at = c->attrs;
    tg_status st = need_blocked(c, 0, "x");
    if (st == TG_OK && c->nin > 3)
        st = need_blocked(c, 3, "residual");
    if (st != TG_OK)
        return st;
    if (at->algo < 0 || at->algo > 2)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "algo must be 0 (auto), 1 (direct) or 2 (winograd), got %lld",
                                (long long)at->algo);
    if (at->groups != 1)
        return graph_infer_fail(c, TG_ERR_ARG, "groups must be 1, got %lld",
                                (long long)at->groups);
    graph_type in[4];
    for (int i = 0; i < c->nin; i++)
        in[i] = c->in[i];
    unblock(&c->in[0], &in[0]);
    if (c->nin > 3)
        unblock(&c->in[3], &in[3]);
    graph_conv2d_ep_attrs ep = {at->stride, at->padding, at->dilation, at->groups,
                                at->post, at->alpha, at->clip_min, at->clip_max};
    graph_infer_ctx base = *c;
    base.in = in;
    base.attrs = &ep;
    if ((st = graph_infer_conv2d_ep(&base)) != TG_OK)
        return st;
    if (c->out[0].dim[1] % BLK)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "output channels %lld are not a multiple of the block 16",
                                (long long)c->out[0].dim[1]);
    graph_type y = c->out[0];
    block(&y, &c->out[0]);
    return TG_OK;
}
