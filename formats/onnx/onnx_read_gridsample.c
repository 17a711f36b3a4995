/*
 * onnx_read_gridsample.c - ONNX GridSample (opset 16; 20's names too) on a
 * 2-D input, as elementwise ops and gather_elements (f32):
 *
 *   X [N, C, H, W], grid [N, Ho, Wo, 2] (x then y, in [-1, 1]);
 *   ix = ((gx + 1) / 2) * (W - 1)         align_corners 1
 *   ix = ((gx + 1) * W - 1) / 2           align_corners 0   (iy likewise)
 *   border padding clamps ix to [0, W - 1] (iy likewise) first;
 *   bilinear: the four neighbours (floor(ix) + {0, 1}, floor(iy) + {0, 1}),
 *   weighted (x1 - ix)(y1 - iy), ...; nearest: round(ix), round(iy)
 *   (half to even); a neighbour outside the image weighs 0 (zeros
 *   padding), its index clamped into it so the gather stays in range.
 *
 * Each neighbour is one gather_elements of X as [N, C, H*W] at its flat
 * index y*W + x (computed in f32, exact for H*W <= 2^24, then cast to
 * i64) broadcast over C, times its weight [N, 1, Ho*Wo]: PyTorch's
 * grid_sampler_2d arithmetic in the same order.  Refused, saying so:
 * bicubic/cubic, reflection padding, a grid that is not [N, Ho, Wo, 2],
 * H*W past 2^24.  A dynamic dim other than N is taken at its traced size
 * (the node is flagged specialized).
 */
#include <string.h>

#include "onnx_read_impl.h"

/* x [.., P, 1] -> [N, 1, P]. */
static tg_status to_row(onnx_reader *r, int32_t x, int64_t n, int64_t p, int dyn, int32_t *y)
{
    int64_t s[3] = {n, 1, p};
    return onnx_reshape_to(r, x, dyn, s, 3, y);
}

/* 1.0 where lo < v < hi, else 0.0 (f32). */
static tg_status inside(onnx_reader *r, int32_t v, double lo, double hi, int32_t *m)
{
    int32_t a, b;
    graph_cast_attrs ca = {GRAPH_F32};
    tg_status st = onnx_op_k(r, GRAPH_OP_gt, v, lo, &a);
    if (st == TG_OK)
        st = onnx_op_k(r, GRAPH_OP_lt, v, hi, &b);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_cast, a, -1, &ca, &a);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_cast, b, -1, &ca, &b);
    return st == TG_OK ? onnx_op2(r, GRAPH_OP_mul, a, b, NULL, m) : st;
}

/* y = min(max(v, lo), hi). */
static tg_status clamp(onnx_reader *r, int32_t v, double lo, double hi, int32_t *y)
{
    tg_status st = onnx_op_k(r, GRAPH_OP_maximum, v, lo, y);
    return st == TG_OK ? onnx_op_k(r, GRAPH_OP_minimum, *y, hi, y) : st;
}

typedef struct gs_ctx {
    int32_t xf;         /* X as [N, C, H*W] */
    int64_t n, c, h, w, p;
    int dyn;            /* N follows the dynamic batch */
} gs_ctx;

/* acc += X[.., yc*W + xc] * wgt, zero where (xc, yc) is outside. */
static tg_status corner(onnx_reader *r, const gs_ctx *g, int32_t xc, int32_t yc, int32_t wgt,
                        int32_t *acc)
{
    int32_t mx, my, cx, cy, idx, v;
    graph_cast_attrs ci = {GRAPH_I64};
    tg_status st = inside(r, xc, -1.0, (double)g->w, &mx);
    if (st == TG_OK)
        st = inside(r, yc, -1.0, (double)g->h, &my);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_mul, mx, my, NULL, &mx);
    if (st == TG_OK && wgt >= 0)
        st = onnx_op2(r, GRAPH_OP_mul, wgt, mx, NULL, &mx);
    if (st == TG_OK)
        st = clamp(r, xc, 0.0, (double)(g->w - 1), &cx);
    if (st == TG_OK)
        st = clamp(r, yc, 0.0, (double)(g->h - 1), &cy);
    if (st == TG_OK)
        st = onnx_op_k(r, GRAPH_OP_mul, cy, (double)g->w, &idx);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_add, idx, cx, NULL, &idx);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_cast, idx, -1, &ci, &idx);
    if (st == TG_OK) {
        graph_expand_attrs ea;
        memset(&ea, 0, sizeof ea);
        ea.shape = (graph_ints){3, {1, g->c, g->p}}; /* N: idx's, which follows */
        st = onnx_op2(r, GRAPH_OP_expand, idx, -1, &ea, &idx);
    }
    if (st == TG_OK) {
        graph_gather_elements_attrs ga;
        memset(&ga, 0, sizeof ga);
        ga.axis = 2;
        st = onnx_op2(r, GRAPH_OP_gather_elements, g->xf, idx, &ga, &v);
    }
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_mul, v, mx, NULL, &v);
    if (st == TG_OK)
        st = *acc < 0 ? (*acc = v, TG_OK) : onnx_op2(r, GRAPH_OP_add, *acc, v, NULL, acc);
    return st;
}

/* The grid's coordinate along one axis of `size`, unnormalized. */
static tg_status unnormalize(onnx_reader *r, int32_t gcoord, int64_t size, int align,
                             int border, int32_t *ix)
{
    tg_status st = onnx_op_k(r, GRAPH_OP_add, gcoord, 1.0, ix);
    if (st == TG_OK && align) {
        st = onnx_op_k(r, GRAPH_OP_div, *ix, 2.0, ix);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_mul, *ix, (double)(size - 1), ix);
    } else if (st == TG_OK) {
        st = onnx_op_k(r, GRAPH_OP_mul, *ix, (double)size, ix);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_sub, *ix, 1.0, ix);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_div, *ix, 2.0, ix);
    }
    if (st == TG_OK && border)
        st = clamp(r, *ix, 0.0, (double)(size - 1), ix);
    return st;
}

tg_status onnx_cv_grid_sample(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    char mode[16], pad[16];
    int64_t align;
    tg_status st = onnx_attr_str(r, "mode", r->opset >= 20 ? "linear" : "bilinear", mode,
                                 sizeof mode);
    if (st == TG_OK)
        st = onnx_attr_str(r, "padding_mode", "zeros", pad, sizeof pad);
    if (st == TG_OK)
        st = onnx_attr_int(r, "align_corners", 0, &align);
    if (st != TG_OK)
        return st;
    if (r->opset < 16)
        return onnx_fail(r, TG_ERR_FORMAT, "GridSample needs opset 16 (the model has %lld)",
                         LL(r->opset));
    int linear = !strcmp(mode, r->opset >= 20 ? "linear" : "bilinear");
    if (!linear && strcmp(mode, "nearest"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "mode '%s' is not supported (%s or nearest)",
                         mode, r->opset >= 20 ? "linear" : "bilinear");
    int border = !strcmp(pad, "border");
    if (!border && strcmp(pad, "zeros"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "padding_mode '%s' is not supported (zeros "
                         "or border)", pad);
    int32_t x, grid;
    if ((st = onnx_input(r, 0, &x)) != TG_OK || (st = onnx_input(r, 1, &grid)) != TG_OK)
        return st;
    /* copies: adding nodes may move the graph's values */
    const graph_type xv = *onnx_vtype(r, x), gv = *onnx_vtype(r, grid);
    const graph_type *xt = &xv, *gt = &gv;
    if (xt->ndim != 4 || gt->ndim != 4 || gt->dim[3] != 2)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "X of %d dims and grid of %d dims: only a 2-D "
                         "sample (X [N, C, H, W], grid [N, Ho, Wo, 2]) is supported",
                         xt->ndim, gt->ndim);
    if (xt->dim[0] != gt->dim[0])
        return onnx_fail(r, TG_ERR_SHAPE, "X has batch %lld, grid %lld", LL(xt->dim[0]),
                         LL(gt->dim[0]));
    gs_ctx g = {-1, xt->dim[0], xt->dim[1], xt->dim[2], xt->dim[3], gt->dim[1] * gt->dim[2], 0};
    /* the clamps below take H - 1 and W - 1 as the last pixel */
    if (g.h < 1 || g.w < 1)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "X of %lldx%lld pixels: an empty image has "
                         "nothing to sample", LL(g.h), LL(g.w));
    if (g.h * g.w > (int64_t)1 << 24)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "an input of %lldx%lld pixels (more than "
                         "2^24) is not supported", LL(g.h), LL(g.w));
    uint32_t dx = onnx_dynamic_dims(r, x), dg = onnx_dynamic_dims(r, grid);
    g.dyn = (dx & 1) && (dg & 1);
    if ((dx | dg) & ~1u)
        r->specialized = 1;
    int64_t flat[3] = {g.n, g.c, g.h * g.w}, gs[3] = {g.n, g.p, 2};
    int32_t gr, gx, gy, ix, iy;
    st = onnx_reshape_to(r, x, g.dyn, flat, 3, &g.xf);
    if (st == TG_OK)
        st = onnx_reshape_to(r, grid, g.dyn, gs, 3, &gr);
    if (st == TG_OK)
        st = onnx_slice_axis(r, gr, 2, 0, 1, 1, &gx);
    if (st == TG_OK)
        st = onnx_slice_axis(r, gr, 2, 1, 2, 1, &gy);
    if (st == TG_OK)
        st = to_row(r, gx, g.n, g.p, g.dyn, &gx);
    if (st == TG_OK)
        st = to_row(r, gy, g.n, g.p, g.dyn, &gy);
    if (st == TG_OK)
        st = unnormalize(r, gx, g.w, align != 0, border, &ix);
    if (st == TG_OK)
        st = unnormalize(r, gy, g.h, align != 0, border, &iy);
    if (st != TG_OK)
        return st;
    int32_t acc = -1;
    if (!linear) {
        st = onnx_op2(r, GRAPH_OP_round, ix, -1, NULL, &ix);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_round, iy, -1, NULL, &iy);
        if (st == TG_OK)
            st = corner(r, &g, ix, iy, -1, &acc);
    } else {
        int32_t x0, y0, x1, y1, wx0, wx1, wy0, wy1, w;
        st = onnx_op2(r, GRAPH_OP_floor, ix, -1, NULL, &x0);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_floor, iy, -1, NULL, &y0);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_add, x0, 1.0, &x1);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_add, y0, 1.0, &y1);
        if (st == TG_OK) /* PyTorch's: nw = (x1 - ix) * (y1 - iy), ... */
            st = onnx_op2(r, GRAPH_OP_sub, x1, ix, NULL, &wx0);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_sub, ix, x0, NULL, &wx1);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_sub, y1, iy, NULL, &wy0);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_sub, iy, y0, NULL, &wy1);
        const int32_t cx[4] = {x0, x1, x0, x1}, cy[4] = {y0, y0, y1, y1};
        const int32_t wxs[4] = {wx0, wx1, wx0, wx1}, wys[4] = {wy0, wy0, wy1, wy1};
        for (int k = 0; k < 4 && st == TG_OK; k++) {
            st = onnx_op2(r, GRAPH_OP_mul, wxs[k], wys[k], NULL, &w);
            if (st == TG_OK)
                st = corner(r, &g, cx[k], cy[k], w, &acc);
        }
    }
    int64_t ys[4] = {g.n, g.c, gt->dim[1], gt->dim[2]};
    if (st == TG_OK)
        st = onnx_reshape_to(r, acc, g.dyn, ys, 4, &acc);
    return st == TG_OK ? onnx_bind(r, 0, acc) : st;
}
