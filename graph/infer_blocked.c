/*
 * infer_blocked.c - shape inference of the blocked-layout ops of the -O3
 * layout pass (optimize/layout.c): to_blocked, from_blocked, conv2d_blk,
 * max_pool2d_blk and avg_pool2d_blk.
 *
 * A blocked tensor is oneDNN's nChw16c or nChw8c as a plain 5-D tensor
 * [N, ceil(C/B), H, W, B], B the block (8 or 16, the tensor's dim 4):
 * element (n, c, h, w) of the plain [N,C,H,W] tensor sits at
 * [n][c/B][h][w][c%B].  Keeping the layout in the shape keeps the IR
 * plain: elementwise ops run unchanged on blocked tensors.  When C is not
 * a multiple of B the last block is padded: its lanes past C hold zeros
 * (to_blocked and conv2d_blk write them so; oneDNN reads them, multiplied
 * by zero-padded weights), and the shape does not say C: from_blocked
 * takes it as an attribute, conv2d_blk from its weights.
 *
 * Choices:
 * - B is 16 (oneDNN's AVX-512 f32 kernels) or 8 (its AVX2 direct and
 *   depthwise JIT kernels); other values are rejected so kernels need
 *   not handle them.  to_blocked takes B as its attribute block,
 *   from_blocked and the pools from x; conv2d_blk's attribute block is
 *   its output's B, which a blocked x and the residual must have too (a
 *   plain-x stem reads NCHW and writes blocked, so x cannot say it).
 * - conv2d_blk takes conv2d_ep's attributes (checked by
 *   graph_infer_conv2d_ep on the unblocked shapes, groups included) plus
 *   algo 0..2 and block.  Its x is blocked, or plain [N,C,H,W] (a
 *   3-channel stem reads the image as it is and writes blocked); C is the
 *   weights' dim 1 times groups, O their dim 0.
 */
#include "infer.h"

/* Nonzero for a block oneDNN's kernels take: 8 or 16 lanes. */
static int valid_block(int64_t b)
{
    return b == 8 || b == 16;
}

static int64_t nblocks(int64_t ch, int64_t b)
{
    return (ch + b - 1) / b;
}

/* The plain [N,C,H,W] type of a blocked [N,ceil(C/B),H,W,B] one. */
static void unblock(const graph_type *b, int64_t c, graph_type *p)
{
    *p = *b;
    p->ndim = 4;
    p->dim[1] = c;
}

static void block(const graph_type *p, int64_t blk, graph_type *b)
{
    *b = *p;
    b->ndim = 5;
    b->dim[1] = nblocks(p->dim[1], blk);
    b->dim[4] = blk;
}

/*
 * Input i must be f32 and blocked: [N,CB,H,W,B] with B == blk, or with B
 * 8 or 16 when blk is 0 (the block is then x's own).
 */
static tg_status need_blocked(graph_infer_ctx *c, int i, const char *name, int64_t blk)
{
    const graph_type *t = &c->in[i];
    if (t->dtype != GRAPH_F32)
        return graph_infer_fail(c, TG_ERR_DTYPE, "%s must be f32, got %s", name,
                                graph_dtype_name(t->dtype));
    if (blk && (t->ndim != 5 || t->dim[4] != blk)) {
        if (t->ndim != 5)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "%s must be blocked [N,C/%lld,H,W,%lld] (block %lld), got "
                                    "rank %d", name, (long long)blk, (long long)blk,
                                    (long long)blk, (int)t->ndim);
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "%s must be blocked [N,C/%lld,H,W,%lld] (block %lld), got "
                                "blocks of %lld", name, (long long)blk, (long long)blk,
                                (long long)blk, (long long)t->dim[4]);
    }
    if (t->ndim != 5)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "%s must be blocked [N,C/B,H,W,B] (B 8 or 16), got rank %d", name,
                                (int)t->ndim);
    if (!valid_block(t->dim[4]))
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "%s must be blocked [N,C/B,H,W,B] (B 8 or 16), got blocks of "
                                "%lld", name, (long long)t->dim[4]);
    return TG_OK;
}

/* Blocked input i (block blk) holds channels ch: ceil(ch/blk) blocks. */
static tg_status need_blocks(graph_infer_ctx *c, int i, const char *name, int64_t ch)
{
    int64_t blk = c->in[i].dim[4];
    if (c->in[i].dim[1] != nblocks(ch, blk))
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "%s has %lld channel blocks, %lld channels need %lld", name,
                                (long long)c->in[i].dim[1], (long long)ch,
                                (long long)nblocks(ch, blk));
    return TG_OK;
}

tg_status graph_infer_to_blocked(graph_infer_ctx *c)
{
    const graph_to_blocked_attrs *at = c->attrs;
    const graph_type *x = &c->in[0];
    if (!valid_block(at->block))
        return graph_infer_fail(c, TG_ERR_ARG, "block must be 8 or 16, got %lld",
                                (long long)at->block);
    if (x->ndim != 4)
        return graph_infer_fail(c, TG_ERR_SHAPE, "x must be [N,C,H,W], got rank %d",
                                (int)x->ndim);
    block(x, at->block, &c->out[0]);
    return TG_OK;
}

tg_status graph_infer_from_blocked(graph_infer_ctx *c)
{
    const graph_from_blocked_attrs *at = c->attrs;
    tg_status st = need_blocked(c, 0, "x", 0);
    if (st != TG_OK)
        return st;
    int64_t nb = c->in[0].dim[1], blk = c->in[0].dim[4];
    int64_t ch = at->channels ? at->channels : nb * blk;
    if (ch < 0 || nblocks(ch, blk) != nb)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "channels %lld do not fill the %lld blocks of %lld of x",
                                (long long)at->channels, (long long)nb, (long long)blk);
    unblock(&c->in[0], ch, &c->out[0]);
    return TG_OK;
}

tg_status graph_infer_conv2d_blk(graph_infer_ctx *c)
{
    const graph_conv2d_blk_attrs *at = c->attrs;
    const graph_type *w = &c->in[1];
    int plain_x = c->in[0].ndim == 4;
    if (!valid_block(at->block))
        return graph_infer_fail(c, TG_ERR_ARG, "block must be 8 or 16, got %lld",
                                (long long)at->block);
    tg_status st = plain_x ? TG_OK : need_blocked(c, 0, "x", at->block);
    if (st == TG_OK && c->nin > 3)
        st = need_blocked(c, 3, "residual", at->block);
    if (st != TG_OK)
        return st;
    if (at->algo < 0 || at->algo > 2)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "algo must be 0 (auto), 1 (direct) or 2 (winograd), got %lld",
                                (long long)at->algo);
    if (w->ndim != 4)
        return graph_infer_fail(c, TG_ERR_SHAPE, "w must be [O,C/groups,kh,kw], got rank %d",
                                (int)w->ndim);
    /* C and O from the weights: the blocks may be padded */
    if (at->groups < 1 || (w->dim[1] > 0 && at->groups > GRAPH_MAX_NUMEL / w->dim[1]))
        return graph_infer_fail(c, TG_ERR_ARG, "groups %lld: must be >= 1 and fit the weights",
                                (long long)at->groups);
    int64_t ch = w->dim[1] * at->groups;
    if (!plain_x && (st = need_blocks(c, 0, "x", ch)) != TG_OK)
        return st;
    if (c->nin > 3 && (st = need_blocks(c, 3, "residual", w->dim[0])) != TG_OK)
        return st;
    graph_type in[4];
    for (int i = 0; i < c->nin; i++)
        in[i] = c->in[i];
    if (!plain_x)
        unblock(&c->in[0], ch, &in[0]);
    if (c->nin > 3)
        unblock(&c->in[3], w->dim[0], &in[3]);
    graph_conv2d_ep_attrs ep = {at->stride, at->padding, at->dilation, at->groups,
                                at->post, at->alpha, at->clip_min, at->clip_max};
    graph_infer_ctx base = *c;
    base.in = in;
    base.attrs = &ep;
    if ((st = graph_infer_conv2d_ep(&base)) != TG_OK)
        return st;
    graph_type y = c->out[0];
    block(&y, at->block, &c->out[0]);
    return TG_OK;
}

/* The plain pool's checks on the unblocked [N,B*CB,H,W]; y blocked alike. */
tg_status graph_infer_pool2d_blk(graph_infer_ctx *c)
{
    tg_status st = need_blocked(c, 0, "x", 0);
    if (st != TG_OK)
        return st;
    int64_t blk = c->in[0].dim[4];
    graph_type in;
    unblock(&c->in[0], c->in[0].dim[1] * blk, &in);
    graph_infer_ctx base = *c;
    base.in = &in;
    base.op = &graph_ops[c->op == &graph_ops[GRAPH_OP_avg_pool2d_blk] ? GRAPH_OP_avg_pool2d
                                                                       : GRAPH_OP_max_pool2d];
    if ((st = graph_infer_pool2d(&base)) != TG_OK)
        return st;
    graph_type y = c->out[0];
    block(&y, blk, &c->out[0]);
    return TG_OK;
}
