/*
 * onnx_read_conv.c - the ONNX importer's converters of Conv and
 * ConvTranspose; the window attributes they share with the pools of
 * onnx_read_pool.c (kernel_shape, strides, dilations, pads, auto_pad) are
 * onnx_read_window.c's.  onnx_read_ops.c's table names them.
 */
#include <stdint.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_window.h"

/*
 * ---- convolution and pooling (2-D NCHW; 1-D NCL as 2-D with H = 1;
 *      3-D NCDHW as the 2-D ops with D's taps as channels, or pooled
 *      apart) ----
 *
 * A 1-D Conv, ConvTranspose or pool runs as the 2-D op on x unsqueezed
 * to [N, C, 1, L] (and W to [M, C/group, 1, K], or ConvTranspose's
 * [C, M/group, 1, K]), its window 1 high with stride and dilation 1 and
 * no padding (or output padding) in H, the output squeezed back: the
 * same sums in the same order.  3-D: conv3d, conv_transpose3d below and
 * onnx_read_pool.c's pool_depth.
 */

/*
 * The 3-D output of a 2-D op run on every output depth: y [N*Do, c, H', W']
 * reshaped to [N, Do, c, H', W'] (db: N is dynamic), transposed to
 * [N, c, Do, H', W'] and bound as the node's output.
 */
static tg_status bind_depth_out(onnx_reader *r, int32_t y, int db, int64_t n, int64_t od,
                                int64_t c)
{
    static const int64_t swap12[5] = {0, 2, 1, 3, 4};
    const graph_type *yt = onnx_vtype(r, y);
    int64_t y5[5] = {n, od, c, yt->dim[2], yt->dim[3]}; /* read before adding */
    tg_status st = onnx_reshape_to(r, y, db, y5, 5, &y);
    if (st == TG_OK)
        st = onnx_permute(r, y, swap12, 5, &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * A 3-D Conv, X [N, C, D, H, W] and W [O, C/g, kd, kh, kw] (g groups), as
 * one conv2d whose channels are D's taps (an im2col along D only), with
 * no op of its own:
 *   X transposed to depth-major [N, D, C, H, W], zero-padded in D to Dp,
 *   viewed as [N, Dp, C*H*W], gathered at depth o*sd + k*dd for each
 *   output depth o < Do and tap k < kd (constant [Do, kd] indices): [N,
 *   Do, kd, C*H*W], whole [C, H, W] slabs; with g > 1 and kd > 1 viewed as
 *   [N, Do, kd, g, C/g*H*W] and transposed to [N, Do, g, kd, C/g*H*W];
 *   reshaped to [N*Do, kd*C, H, W];
 *   W transposed to [O, kd, C/g, kh, kw], reshaped to [O, kd*C/g, kh, kw]:
 *   group j's kd*C/g channels are its C/g channels at each tap, as in X;
 *   conv2d with H and W's window, the groups and B: [N*Do, O, H', W'];
 *   reshaped to [N, Do, O, H', W'] and transposed to [N, O, Do, H', W'].
 * The same products as the 3-D sum, added in another order; the gathered
 * copy is kd/sd times X.  With kd = 1 and sd = 1 the gather is a reshape.
 * The output's transpose and the input's are inverses: between two 3-D
 * Convs, once the view-sink pass (-O2) has moved the first one below the
 * relu and residual add between them, the -O1 fixed point cancels the
 * pair, and the activations stay depth-major from conv to conv.
 * A dynamic batch follows (-1 in the reshapes); a dynamic C, D, H or W is
 * fixed at its traced size (the node is flagged specialized).
 */
static tg_status conv3d(onnx_reader *r, const int32_t *in, int nin, const window2d *w,
                        const graph_conv2d_attrs *a)
{
    /* copies: adding nodes may move the graph's values */
    const graph_type xt = *onnx_vtype(r, in[0]), wt = *onnx_vtype(r, in[1]);
    int64_t n = xt.dim[0], c = xt.dim[1], hw = xt.dim[3] * xt.dim[4], o = wt.dim[0];
    int64_t g = a->groups, kd = w->k[2], sd = w->s[2], dd = w->d[2];
    if (g < 1)
        return onnx_fail(r, TG_ERR_FORMAT, "group must be >= 1, got %lld", LL(g));
    if (c % g || o % g)
        return onnx_fail(r, TG_ERR_FORMAT, "group %lld must divide the input channels %lld "
                         "and the output channels %lld", LL(g), LL(c), LL(o));
    if (wt.dim[1] != c / g)
        return onnx_fail(r, TG_ERR_FORMAT, "W has %lld input channels per group, want %lld "
                         "(C %lld / group %lld)", LL(wt.dim[1]), LL(c / g), LL(c), LL(g));
    /* D, the pads, kd and dd are below 2^31 (window_pads): no overflow */
    int64_t dp = xt.dim[2] + w->dpads[0] + w->dpads[1], eff = (kd - 1) * dd + 1;
    if (dp < eff)
        return onnx_fail(r, TG_ERR_SHAPE, "output depth <= 0: the padded input depth %lld "
                         "is smaller than the effective kernel depth %lld", LL(dp), LL(eff));
    int64_t od = (dp - eff) / sd + 1, rows, kc;
    if (od > ONNX_MAX_FOLD_BYTES / (int64_t)sizeof(int64_t) / kd)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "a 3-D Conv of %lld output depths and %lld "
                         "taps is not supported", LL(od), LL(kd));
    if (__builtin_mul_overflow(n, od, &rows) || __builtin_mul_overflow(kd, c, &kc))
        return onnx_fail(r, TG_ERR_SHAPE, "sizes overflow int64");
    uint32_t dyn = onnx_dynamic_dims(r, in[0]);
    int db = dyn & 1;
    if (dyn & ~1u)
        r->specialized = 1; /* the reshapes and the indices fix C, D, H and W */
    int32_t x = in[0], wv = in[1], y;
    /* swap12: X [N, C, D, ...] to [N, D, C, ...], W [O, C/g, kd, ...] to
     * [O, kd, C/g, ...] */
    static const int64_t swap12[5] = {0, 2, 1, 3, 4};
    tg_status st = onnx_permute(r, x, swap12, 5, &x);
    if (st == TG_OK && (w->dpads[0] || w->dpads[1])) {
        graph_pad_attrs pa;
        memset(&pa, 0, sizeof pa);
        pa.pads = (graph_ints){10, {0, w->dpads[0], 0, 0, 0, 0, w->dpads[1], 0, 0, 0}};
        st = onnx_add(r, GRAPH_OP_pad, &x, 1, &pa, &x, 1);
    }
    int64_t chw = c * hw; /* below X's element count */
    if (st == TG_OK && !(kd == 1 && sd == 1)) { /* else every depth is its own tap */
        int64_t view[3] = {n, dp, chw};
        st = onnx_reshape_to(r, x, db, view, 3, &x);
        int64_t *taps = st == TG_OK ? onnx_new_taps(r, od, kd) : NULL;
        if (!taps)
            return st == TG_OK ? TG_ERR_NOMEM : st;
        for (int64_t i = 0; i < od; i++)
            for (int64_t k = 0; k < kd; k++)
                taps[i * kd + k] = i * sd + k * dd;
        st = onnx_gather_taps(r, x, 1, taps, od, kd, &x);
        if (st == TG_OK && g > 1 && kd > 1) { /* group j's taps together */
            static const int64_t group_taps[5] = {0, 1, 3, 2, 4};
            int64_t v5[5] = {n, od, kd, g, chw / g};
            st = onnx_reshape_to(r, x, db, v5, 5, &x);
            if (st == TG_OK)
                st = onnx_permute(r, x, group_taps, 5, &x);
        }
    }
    int64_t x2[4] = {rows, kc, xt.dim[3], xt.dim[4]};
    int64_t w2[4] = {o, kd * (c / g), wt.dim[3], wt.dim[4]};
    if (st == TG_OK)
        st = onnx_reshape_to(r, x, db, x2, 4, &x);
    if (st == TG_OK && kd > 1)
        st = onnx_permute(r, wv, swap12, 5, &wv);
    if (st == TG_OK)
        st = onnx_reshape_to(r, wv, 0, w2, 4, &wv);
    int32_t cin[3] = {x, wv, nin > 2 ? in[2] : -1};
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_conv2d, cin, nin, a, &y, 1);
    return st == TG_OK ? bind_depth_out(r, y, db, n, od, o) : st;
}

tg_status onnx_cv_conv(onnx_reader *r, const onnx_op *op)
{
    int32_t in[3], y;
    int nin = onnx_has_input(r, 2) ? 3 : 2;
    window2d w;
    tg_status st = onnx_conv_window(r, in, nin, &w, 1);
    if (st != TG_OK)
        return st;
    graph_conv2d_attrs a;
    graph_attrs_default(GRAPH_OP_conv2d, &a);
    st = onnx_attr_int(r, "group", 1, &a.groups);
    if (st == TG_OK)
        st = onnx_window_pads(r, in[0], &w);
    if (st != TG_OK)
        return st;
    a.stride = (graph_ints){2, {w.s[0], w.s[1]}};
    a.dilation = (graph_ints){2, {w.d[0], w.d[1]}};
    a.padding = w.pads;
    if (w.three_d)
        return conv3d(r, in, nin, &w, &a);
    st = onnx_add(r, GRAPH_OP_conv2d, in, nin, &a, &y, 1);
    return st == TG_OK ? onnx_window_bind(r, &w, y) : st;
}

/* floor(a / 2), as the spec's Python // rounds (a may be negative). */
static int64_t half_floor(int64_t a)
{
    return a >= 0 ? a / 2 : -((1 - a) / 2);
}

/*
 * ConvTranspose's pads when output_shape or auto_pad SAME_UPPER /
 * SAME_LOWER sets them (*set is 0 otherwise, and pads come from the pads
 * attribute as for Conv).  The spec's total padding,
 *   stride*(in-1) + output_padding + (k-1)*dilation + 1 - out,
 * with out from output_shape or in*stride for SAME_*, is split with the
 * smaller half (floor) at the start for SAME_UPPER, at the end otherwise.
 * A negative end pad is more output_padding (rows past every input's
 * reach); a negative start pad is unsupported.  For SAME_* the total
 * does not depend on in, so a dynamic dim is fine; with output_shape it
 * does, and a dynamic H or W is refused.
 */
static tg_status transpose_pads(onnx_reader *r, int32_t xv, window2d *w, int64_t opad[3],
                                int *set)
{
    char mode[32];
    graph_ints os;
    int has_os;
    tg_status st = onnx_attr_str(r, "auto_pad", "NOTSET", mode, sizeof mode);
    if (st == TG_OK)
        st = onnx_attr_ints(r, "output_shape", &os, GRAPH_MAX_INTS, &has_os);
    if (st != TG_OK)
        return st;
    int upper = !strcmp(mode, "SAME_UPPER"), same = upper || !strcmp(mode, "SAME_LOWER");
    *set = has_os || same;
    if (!*set)
        return TG_OK;
    if (!same && strcmp(mode, "NOTSET") && strcmp(mode, "VALID"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "auto_pad '%s' is not supported", mode);
    int nsp = spatial_dims(w), h = h_axis(w);
    const graph_type *x = onnx_vtype(r, xv);
    if (has_os && os.n != nsp && os.n != nsp + 2) /* spatial dims, or all of them */
        return onnx_fail(r, TG_ERR_FORMAT, "output_shape has %d entries, want %d",
                         (int)os.n, nsp);
    if (has_os && (onnx_dynamic_dims(r, xv) & spatial_mask(w)))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "output_shape with a dynamic spatial dim "
                         "is not supported");
    w->pads = (graph_ints){4, {0, 0, 0, 0}};
    w->dpads[0] = w->dpads[1] = 0;
    for (int i = w->one_d; i < 2 + w->three_d; i++) { /* H, W, then D */
        int ax = i < 2 ? h + i : 2;
        int64_t in = x->dim[ax], out = has_os ? os.v[os.n - 2 + (i < 2 ? i : -1)] : 0;
        if (in > INT32_MAX || w->k[i] > INT32_MAX)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "a window over 2^31 is not supported");
        if (has_os && (out < 1 || out > INT32_MAX))
            return onnx_fail(r, TG_ERR_FORMAT, "output_shape must be >= 1 and < 2^31");
        if (!has_os)
            out = in * w->s[i];
        /* every term below 2^31 (in * stride below 2^62): no overflow */
        int64_t total = w->s[i] * (in - 1) + opad[i] + (w->k[i] - 1) * w->d[i] + 1 - out;
        int64_t small = half_floor(total);
        int64_t begin = upper ? small : total - small, end = total - begin;
        if (begin < 0)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "an output size of %lld needs a start "
                             "pad of %lld: negative pads are not supported", LL(out),
                             LL(begin));
        if (end < 0) {
            opad[i] -= end;
            end = 0;
            if (opad[i] >= w->s[i] && opad[i] >= w->d[i])
                return onnx_fail(r, TG_ERR_UNSUPPORTED, "an output size of %lld needs an "
                                 "output padding of %lld, which must be smaller than the "
                                 "stride %lld or the dilation %lld", LL(out), LL(opad[i]),
                                 LL(w->s[i]), LL(w->d[i]));
        }
        if (i == 2) {
            w->dpads[0] = begin;
            w->dpads[1] = end;
        } else {
            w->pads.v[i] = begin;
            w->pads.v[2 + i] = end;
        }
    }
    return TG_OK;
}

/*
 * A 3-D ConvTranspose, X [N, C, D, H, W] and W [C, M/g, kd, kh, kw] (g
 * groups), as one conv_transpose2d whose input channels are D's taps, as
 * conv3d does: output depth z gets tap k of the input depth q with
 * q*sd + k*dd - pd0 = z, the others nothing.
 *   X, a zero depth appended (index D) where some tap reads none, viewed
 *   as [N, g, C/g, D+1, H*W], gathered for each output depth z < D' and
 *   tap k at that q ((z + pd0 - k*dd) / sd where it divides and lies in
 *   [0, D), else D): [N, g, C/g, D', kd, H*W]; transposed to
 *   [N, D', g, kd, C/g, H*W], reshaped to [N*D', kd*C, H, W];
 *   W viewed as [g, C/g, M/g, kd, kh*kw], transposed to
 *   [g, kd, C/g, M/g, kh*kw] and reshaped to [kd*C, M/g, kh, kw]: group j's
 *   rows are its C/g channels at each tap, as in X;
 *   conv_transpose2d with H and W's window, output padding, the groups and
 *   B: [N*D', M, H', W'], reshaped to [N, D', M, H', W'] and transposed to
 *   [N, M, D', H', W'].
 * D' = sd*(D-1) + opd + (kd-1)*dd + 1 - pd0 - pd1.  With a stride, most
 * gathered taps are the zero depth (sd times the direct sum's work).  A
 * dynamic batch follows; a dynamic C, D, H or W is fixed at its traced
 * size (the node is flagged specialized).
 */
static tg_status conv_transpose3d(onnx_reader *r, const int32_t *in, int nin,
                                  const window2d *w, const graph_conv_transpose2d_attrs *a,
                                  int64_t opd)
{
    /* copies: adding nodes may move the graph's values */
    const graph_type xt = *onnx_vtype(r, in[0]), wt = *onnx_vtype(r, in[1]);
    int64_t n = xt.dim[0], c = xt.dim[1], d = xt.dim[2], hw = xt.dim[3] * xt.dim[4];
    int64_t g = a->groups, kd = w->k[2], sd = w->s[2], dd = w->d[2], p0 = w->dpads[0], m;
    if (g < 1)
        return onnx_fail(r, TG_ERR_FORMAT, "group must be >= 1, got %lld", LL(g));
    if (wt.dim[0] != c || c % g)
        return onnx_fail(r, TG_ERR_FORMAT, "W has %lld input channels, want %lld (the "
                         "channels of X), which group %lld must divide", LL(wt.dim[0]),
                         LL(c), LL(g));
    if (opd >= sd && opd >= dd)
        return onnx_fail(r, TG_ERR_FORMAT, "output_padding %lld (D) must be smaller than the "
                         "stride %lld or the dilation %lld", LL(opd), LL(sd), LL(dd));
    /* D, the pads, kd, sd, dd and opd are below 2^31: no overflow */
    int64_t od = sd * (d - 1) + opd + (kd - 1) * dd + 1 - p0 - w->dpads[1], rows, kc;
    if (od <= 0)
        return onnx_fail(r, TG_ERR_SHAPE, "output depth %lld <= 0: the pads %lld+%lld remove "
                         "every depth", LL(od), LL(p0), LL(w->dpads[1]));
    if (od > ONNX_MAX_FOLD_BYTES / (int64_t)sizeof(int64_t) / kd)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "a 3-D ConvTranspose of %lld output depths "
                         "and %lld taps is not supported", LL(od), LL(kd));
    if (__builtin_mul_overflow(n, od, &rows) || __builtin_mul_overflow(kd, c, &kc) ||
        __builtin_mul_overflow(wt.dim[1], g, &m))
        return onnx_fail(r, TG_ERR_SHAPE, "sizes overflow int64");
    uint32_t dyn = onnx_dynamic_dims(r, in[0]);
    int db = dyn & 1, zero = 0;
    if (dyn & ~1u)
        r->specialized = 1; /* the reshapes and the indices fix C, D, H and W */
    int64_t *taps = onnx_new_taps(r, od, kd);
    if (!taps)
        return TG_ERR_NOMEM;
    for (int64_t z = 0; z < od; z++)
        for (int64_t k = 0; k < kd; k++) {
            int64_t t = z + p0 - k * dd, q = t >= 0 && t % sd == 0 ? t / sd : d;
            taps[z * kd + k] = q < d ? q : d;
            zero |= q >= d;
        }
    int32_t x = in[0], wv = in[1], y;
    tg_status st = TG_OK;
    if (zero) {
        graph_pad_attrs pa;
        memset(&pa, 0, sizeof pa);
        pa.pads = (graph_ints){10, {0, 0, 0, 0, 0, 0, 0, 1, 0, 0}};
        st = onnx_add(r, GRAPH_OP_pad, &x, 1, &pa, &x, 1);
    }
    int64_t view[5] = {n, g, c / g, d + zero, hw};
    if (st == TG_OK)
        st = onnx_reshape_to(r, x, db, view, 5, &x);
    if (st == TG_OK)
        st = onnx_gather_taps(r, x, 3, taps, od, kd, &x);
    else
        tg_free(taps);
    static const int64_t to_rows[6] = {0, 3, 1, 4, 2, 5}, wtaps[5] = {0, 3, 1, 2, 4};
    int64_t x2[4] = {rows, kc, xt.dim[3], xt.dim[4]};
    int64_t w5[5] = {g, c / g, wt.dim[1], kd, wt.dim[3] * wt.dim[4]};
    int64_t w2[4] = {kc, wt.dim[1], wt.dim[3], wt.dim[4]};
    if (st == TG_OK)
        st = onnx_permute(r, x, to_rows, 6, &x);
    if (st == TG_OK)
        st = onnx_reshape_to(r, x, db, x2, 4, &x);
    if (st == TG_OK)
        st = onnx_reshape_to(r, wv, 0, w5, 5, &wv);
    if (st == TG_OK)
        st = onnx_permute(r, wv, wtaps, 5, &wv);
    if (st == TG_OK)
        st = onnx_reshape_to(r, wv, 0, w2, 4, &wv);
    int32_t cin[3] = {x, wv, nin > 2 ? in[2] : -1};
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_conv_transpose2d, cin, nin, a, &y, 1);
    return st == TG_OK ? bind_depth_out(r, y, db, n, od, m) : st;
}

/*
 * ConvTranspose: X [N, C, ...], W [C, M/group, k...] as conv_transpose2d
 * takes them (1-D as 2-D with H = 1, as Conv; 3-D: conv_transpose3d),
 * output_padding, and the pads of transpose_pads or of the pads attribute.
 */
tg_status onnx_cv_conv_transpose(onnx_reader *r, const onnx_op *op)
{
    int32_t in[3], y;
    int nin = onnx_has_input(r, 2) ? 3 : 2, set;
    window2d w;
    int64_t opad[3];
    tg_status st = onnx_conv_window(r, in, nin, &w, 1);
    if (st == TG_OK)
        st = onnx_window_ints(r, &w, "output_padding", 0, 0, opad);
    if (st != TG_OK)
        return st;
    if (w.one_d)
        opad[0] = 0; /* pair_attr's H of a 1-D window is 1 */
    graph_conv_transpose2d_attrs a;
    graph_attrs_default(GRAPH_OP_conv_transpose2d, &a);
    st = onnx_attr_int(r, "group", 1, &a.groups);
    if (st == TG_OK)
        st = transpose_pads(r, in[0], &w, opad, &set);
    if (st == TG_OK && !set)
        st = onnx_window_pads(r, in[0], &w);
    if (st != TG_OK)
        return st;
    a.stride = (graph_ints){2, {w.s[0], w.s[1]}};
    a.dilation = (graph_ints){2, {w.d[0], w.d[1]}};
    a.padding = w.pads;
    a.output_padding = (graph_ints){2, {opad[0], opad[1]}};
    if (w.three_d)
        return conv_transpose3d(r, in, nin, &w, &a, opad[2]);
    st = onnx_add(r, GRAPH_OP_conv_transpose2d, in, nin, &a, &y, 1);
    return st == TG_OK ? onnx_window_bind(r, &w, y) : st;
}
