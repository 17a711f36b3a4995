/*
 * onnx_read_conv.c - the ONNX importer's converters of Conv and
 * ConvTranspose, and the window attributes they share with the pools of
 * onnx_read_pool.c (kernel_shape, strides, dilations, pads, auto_pad;
 * onnx_read_window.h), split from onnx_read_ops.c, whose table names
 * them.
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

/* An INTS attribute of one entry per spatial dim, each >= lo (def when
 * absent); a 1-D node's entry goes to W, H gets 1; a 3-D node's first
 * goes to out[2] (D), which is def otherwise. */
tg_status onnx_window_ints(onnx_reader *r, const window2d *w, const char *name,
                           int64_t def, int64_t lo, int64_t out[3])
{
    graph_ints v;
    int present, want = spatial_dims(w);
    tg_status st = onnx_attr_ints(r, name, &v, GRAPH_MAX_INTS, &present);
    if (st != TG_OK)
        return st;
    out[0] = w->one_d ? 1 : def;
    out[1] = out[2] = def;
    if (!present)
        return TG_OK;
    if (v.n != want)
        return onnx_fail(r, TG_ERR_FORMAT, "%s has %d entries, want %d", name, (int)v.n,
                         want);
    for (int i = 0; i < want; i++)
        if (v.v[i] < lo || v.v[i] > INT32_MAX)
            return onnx_fail(r, TG_ERR_FORMAT, "%s must be >= %lld and < 2^31", name,
                             LL(lo));
    out[0] = w->one_d ? 1 : v.v[want - 2];
    out[1] = v.v[want - 1];
    if (w->three_d)
        out[2] = v.v[0];
    return TG_OK;
}

/* SAME_UPPER / SAME_LOWER in spatial dim i (2: D) of an input in long:
 * out = ceil(in / stride), pads to fit. */
static void same_pad(const window2d *w, int i, int64_t in, int lower, int64_t *begin,
                     int64_t *end)
{
    int64_t out = (in + w->s[i] - 1) / w->s[i];
    int64_t total = (out - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in;
    total = total < 0 ? 0 : total;
    int64_t small = total / 2, big = total - small;
    *begin = lower ? big : small;
    *end = lower ? small : big;
}

/*
 * Explicit pads from auto_pad and pads, for input x (value xv).  Sizes,
 * kernel, strides, dilations and pads are all below 2^31 here, so the
 * window arithmetic below cannot overflow int64.
 */
tg_status onnx_window_pads(onnx_reader *r, int32_t xv, window2d *w)
{
    char mode[32];
    int present;
    const graph_type *x = onnx_vtype(r, xv);
    int h = h_axis(w), nsp = spatial_dims(w);
    tg_status st = onnx_attr_str(r, "auto_pad", "NOTSET", mode, sizeof mode);
    if (st == TG_OK)
        st = onnx_attr_ints(r, "pads", &w->pads, GRAPH_MAX_INTS, &present);
    if (st != TG_OK)
        return st;
    w->dpads[0] = w->dpads[1] = 0;
    for (int i = 0; i < 3; i++)
        if (x->dim[i < 2 ? h + i : 2] > INT32_MAX || w->k[i] > INT32_MAX)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "a window over 2^31 is not "
                             "supported");
    if (!strcmp(mode, "NOTSET")) {
        int want = 2 * nsp;
        if (present && w->pads.n != want)
            return onnx_fail(r, TG_ERR_FORMAT, "pads has %d entries, want %d",
                             (int)w->pads.n, want);
        for (int i = 0; i < w->pads.n; i++)
            if (w->pads.v[i] < 0 || w->pads.v[i] > INT32_MAX)
                return onnx_fail(r, TG_ERR_FORMAT, "pads must be >= 0 and < 2^31");
        if (present && w->one_d) /* begin, end of L: left and right */
            w->pads = (graph_ints){4, {0, w->pads.v[0], 0, w->pads.v[1]}};
        if (present && w->three_d) { /* D, H, W begins, then their ends */
            const int64_t *p = w->pads.v;
            w->dpads[0] = p[0];
            w->dpads[1] = p[3];
            w->pads = (graph_ints){4, {p[1], p[2], p[4], p[5]}};
        }
        return TG_OK;
    }
    memset(&w->pads, 0, sizeof w->pads);
    if (!strcmp(mode, "VALID"))
        return TG_OK;
    if (strcmp(mode, "SAME_UPPER") && strcmp(mode, "SAME_LOWER"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "auto_pad '%s' is not supported", mode);
    /* The pads follow the input size unless the stride is 1. */
    if ((onnx_dynamic_dims(r, xv) & spatial_mask(w)) &&
        (w->s[0] != 1 || w->s[1] != 1 || w->s[2] != 1))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "auto_pad '%s' with a stride over a "
                         "dynamic dim is not supported", mode);
    int lower = !strcmp(mode, "SAME_LOWER");
    w->pads.n = 4;
    for (int i = 0; i < 2; i++)
        same_pad(w, i, x->dim[h + i], lower, &w->pads.v[i], &w->pads.v[2 + i]);
    if (w->three_d)
        same_pad(w, 2, x->dim[2], lower, &w->dpads[0], &w->dpads[1]);
    return TG_OK;
}

/* y = unsqueeze(x, axis 2) (squeeze: the reverse). */
static tg_status axis2(onnx_reader *r, graph_op op, int32_t x, int32_t *y)
{
    graph_squeeze_attrs a = {{1, {2}}}; /* unsqueeze's layout too */
    return onnx_add(r, op, &x, 1, &a, y, 1);
}

/*
 * Rank 4 (2-D NCHW) or 3 (1-D NCL: *x becomes x unsqueezed to
 * [N, C, 1, L] and w->one_d is set), or 5 where allow_3d (3-D NCDHW:
 * w->three_d is set); other ranks are unsupported.
 */
tg_status onnx_window_input(onnx_reader *r, int32_t *x, window2d *w, int allow_3d)
{
    int nd = onnx_vtype(r, *x)->ndim;
    memset(w, 0, sizeof *w);
    if (nd == 3) {
        w->one_d = 1;
        return axis2(r, GRAPH_OP_unsqueeze, *x, x);
    }
    if (nd == 5 && allow_3d) {
        w->three_d = 1;
        return TG_OK;
    }
    if (nd != 4)
        return allow_3d ? onnx_fail(r, TG_ERR_UNSUPPORTED, "only 1-D (NCL), 2-D (NCHW) and "
                                    "3-D (NCDHW) are supported, the input has %d dims", nd)
                        : onnx_fail(r, TG_ERR_UNSUPPORTED, "only 1-D (NCL) and 2-D (NCHW) "
                                    "are supported, the input has %d dims", nd);
    return TG_OK;
}

/* Binds y, squeezed back to 1-D if the node is. */
tg_status onnx_window_bind(onnx_reader *r, const window2d *w, int32_t y)
{
    tg_status st = w->one_d ? axis2(r, GRAPH_OP_squeeze, y, &y) : TG_OK;
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * The inputs and window of a Conv or ConvTranspose: X (unsqueezed when
 * 1-D; 5-D where allow_3d), W of the same rank (likewise), B if given;
 * kernel_shape checked against W's, strides, dilations.  W's first two
 * dims are the two ops' own (output and input channels, or the reverse),
 * not looked at here.
 */
static tg_status conv_window(onnx_reader *r, int32_t *in, int nin, window2d *w,
                             int allow_3d)
{
    graph_ints ks;
    int has_k;
    tg_status st = TG_OK;
    for (int i = 0; st == TG_OK && i < nin; i++)
        st = onnx_input(r, i, &in[i]);
    if (st == TG_OK)
        st = onnx_window_input(r, &in[0], w, allow_3d);
    int wnd = w->one_d ? 3 : 4 + w->three_d, nsp = spatial_dims(w);
    if (st == TG_OK && onnx_vtype(r, in[1])->ndim != wnd)
        st = onnx_fail(r, TG_ERR_FORMAT, "W must be %d-D", wnd);
    if (st == TG_OK && w->one_d)
        st = axis2(r, GRAPH_OP_unsqueeze, in[1], &in[1]);
    if (st == TG_OK)
        st = onnx_attr_ints(r, "kernel_shape", &ks, GRAPH_MAX_INTS, &has_k);
    const graph_type *wt = st == TG_OK ? onnx_vtype(r, in[1]) : NULL;
    int ksame = has_k && ks.n == nsp;
    for (int i = 0; st == TG_OK && ksame && i < nsp; i++) /* the last nsp dims of W */
        ksame = ks.v[nsp - 1 - i] == wt->dim[wt->ndim - 1 - i];
    if (st == TG_OK && has_k && !ksame)
        st = w->one_d ? onnx_fail(r, TG_ERR_FORMAT, "kernel_shape does not match W's %lld",
                                  LL(wt->dim[3]))
             : w->three_d ? onnx_fail(r, TG_ERR_FORMAT, "kernel_shape does not match W's "
                                      "%lldx%lldx%lld", LL(wt->dim[2]), LL(wt->dim[3]),
                                      LL(wt->dim[4]))
                          : onnx_fail(r, TG_ERR_FORMAT, "kernel_shape does not match W's "
                                      "%lldx%lld", LL(wt->dim[2]), LL(wt->dim[3]));
    if (st == TG_OK)
        st = onnx_window_ints(r, w, "strides", 1, 1, w->s);
    if (st == TG_OK)
        st = onnx_window_ints(r, w, "dilations", 1, 1, w->d);
    if (st == TG_OK) {
        w->k[0] = wt->dim[wt->ndim - 2];
        w->k[1] = wt->dim[wt->ndim - 1];
        w->k[2] = w->three_d ? wt->dim[2] : 1;
        /* the window arithmetic divides by the kernel size (the taps) */
        for (int i = 0; i < 3; i++)
            if (w->k[i] < 1)
                return onnx_fail(r, TG_ERR_FORMAT, "W's kernel dims must be >= 1 (the "
                                 "kernel_shape), W has a %s of 0", i == 2 ? "depth"
                                 : i == 0 && !w->one_d ? "height" : "width");
    }
    return st;
}

/* y = transpose(x, perm of n entries). */
tg_status onnx_permute(onnx_reader *r, int32_t x, const int64_t *perm, int n, int32_t *y)
{
    graph_transpose_attrs a;
    memset(&a, 0, sizeof a);
    a.perm.n = n;
    memcpy(a.perm.v, perm, sizeof *perm * (size_t)n);
    return onnx_add(r, GRAPH_OP_transpose, &x, 1, &a, y, 1);
}

/* The taps array of a window along D: [od, kd] depths, the caller's to
 * fill and free (NULL after a failure, reported). */
int64_t *onnx_new_taps(onnx_reader *r, int64_t od, int64_t kd)
{
    int64_t *t = tg_malloc(sizeof *t * (size_t)(od * kd));
    if (!t)
        onnx_fail(r, TG_ERR_NOMEM, "out of memory for %lld indices", LL(od * kd));
    return t;
}

/* y = x gathered along axis ax at the depths taps ([od, kd], freed
 * here): x's dim ax becomes od, kd. */
tg_status onnx_gather_taps(onnx_reader *r, int32_t x, int ax, int64_t *taps, int64_t od,
                           int64_t kd, int32_t *y)
{
    graph_type it = {GRAPH_I64, 2, {od, kd}};
    int32_t in[2] = {x, -1};
    tg_status st = onnx_const_value(r, &it, taps, &in[1]);
    tg_free(taps);
    graph_gather_attrs ga = {ax};
    return st == TG_OK ? onnx_add(r, GRAPH_OP_gather, in, 2, &ga, y, 1) : st;
}

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
    tg_status st = conv_window(r, in, nin, &w, 1);
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
    tg_status st = conv_window(r, in, nin, &w, 1);
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
