/*
 * infer_ep.c - shape and dtype inference for linear_ep and conv2d_ep: the
 * inference of linear / conv2d (graph/infer_linalg.c, run on the first
 * three inputs) plus checks of the epilogue.
 *
 * Choices (documented once, here):
 * - post lists GRAPH_POST_* codes (graph/op.h), run in order on the
 *   output; it may be empty (then the op is linear / conv2d with a bias).
 * - There is one residual slot (input 3), so post holds at most one
 *   GRAPH_POST_ADD, and holds one exactly when the residual is given.
 *   The residual is f32 with exactly the output's shape (no broadcasting:
 *   a per-channel or per-feature constant belongs in the bias).
 * - alpha is the LEAKY_RELU slope; it must be finite (also when unused,
 *   so a file cannot carry a NaN that a later edit would start using).
 * - clip_min / clip_max are the CLIP bounds, as clip's (graph/ops.def):
 *   not NaN (also when unused), infinite allowed, min > max gives max.
 */
#include <math.h>
#include <stdio.h>

#include "infer.h"

/* Post codes, the ADD count against the inputs, the residual's type. */
static tg_status check_epilogue(graph_infer_ctx *c, const graph_ints *post,
                                graph_post_prm prm)
{
    char want[160], got[160];
    int adds = 0;
    if (post->n < 0 || post->n > GRAPH_MAX_INTS)
        return graph_infer_fail(c, TG_ERR_ARG, "post has %d entries", (int)post->n);
    for (int i = 0; i < post->n; i++) {
        if (post->v[i] < GRAPH_POST_ADD || post->v[i] > GRAPH_POST_HARDSWISH)
            return graph_infer_fail(c, TG_ERR_ARG,
                                    "post[%d] = %lld is not an epilogue step (1..10)", i,
                                    (long long)post->v[i]);
        adds += post->v[i] == GRAPH_POST_ADD;
    }
    if (!isfinite(prm.alpha))
        return graph_infer_fail(c, TG_ERR_ARG, "alpha must be finite, got %g",
                                (double)prm.alpha);
    if (isnan(prm.clip_min) || isnan(prm.clip_max))
        return graph_infer_fail(c, TG_ERR_ARG,
                                "clip bounds must not be NaN (clip_min %g, clip_max %g)",
                                (double)prm.clip_min, (double)prm.clip_max);
    if (adds > 1)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "post has %d ADD steps, at most 1 (one residual input)", adds);
    if (adds != c->nin - 3)
        return graph_infer_fail(c, TG_ERR_ARG,
                                adds ? "post has an ADD step but no residual input is given"
                                     : "a residual input is given but post has no ADD step");
    if (c->nin < 4)
        return TG_OK;
    const graph_type *r = &c->in[3], *y = &c->out[0];
    int same = r->ndim == y->ndim;
    for (int d = 0; same && d < y->ndim; d++)
        same = r->dim[d] == y->dim[d];
    if (!same || r->dtype != GRAPH_F32)
        return graph_infer_fail(c, same ? TG_ERR_DTYPE : TG_ERR_SHAPE,
                                "residual is %s%s, want f32%s (the output's)",
                                graph_dtype_name(r->dtype), graph_shape_str(r, got, sizeof got),
                                graph_shape_str(y, want, sizeof want));
    return TG_OK;
}

/* Runs op's own inference on the first three inputs, with attrs. */
static tg_status infer_base(graph_infer_ctx *c, graph_infer_fn fn, const void *attrs)
{
    graph_infer_ctx base = *c;
    base.nin = 3;
    base.attrs = attrs;
    return fn(&base);
}

tg_status graph_infer_linear_ep(graph_infer_ctx *c)
{
    const graph_linear_ep_attrs *at = c->attrs;
    tg_status st = infer_base(c, graph_infer_linear, NULL);
    return st != TG_OK ? st : check_epilogue(c, &at->post, GRAPH_POST_PRM(at));
}

tg_status graph_infer_conv2d_ep(graph_infer_ctx *c)
{
    const graph_conv2d_ep_attrs *at = c->attrs;
    graph_conv2d_attrs conv = {at->stride, at->padding, at->dilation, at->groups};
    tg_status st = infer_base(c, graph_infer_conv2d, &conv);
    return st != TG_OK ? st : check_epilogue(c, &at->post, GRAPH_POST_PRM(at));
}
