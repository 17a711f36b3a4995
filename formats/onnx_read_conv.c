/*
 * onnx_read_conv.c - the ONNX importer's converters of Conv,
 * ConvTranspose, MaxPool and AveragePool, and the window attributes they
 * share (kernel_shape, strides, dilations, pads, auto_pad), split from
 * onnx_read_ops.c, whose table names them.
 */
#include <stdint.h>
#include <string.h>

#include "onnx_read_impl.h"

/*
 * ---- convolution and pooling (2-D NCHW; 1-D NCL as 2-D with H = 1) ----
 *
 * A 1-D Conv, ConvTranspose or pool runs as the 2-D op on x unsqueezed
 * to [N, C, 1, L] (and W to [M, C/group, 1, K], or ConvTranspose's
 * [C, M/group, 1, K]), its window 1 high with stride and dilation 1 and
 * no padding (or output padding) in H, the output squeezed back: the
 * same sums in the same order.
 */

/* The window of a Conv, ConvTranspose or pool: kernel, strides,
 * dilations, pads. */
typedef struct window2d {
    int one_d; /* the ONNX node is 1-D: its attributes have one entry per dim */
    int64_t k[2], s[2], d[2];
    graph_ints pads; /* top, left, bottom, right */
} window2d;

/* An INTS attribute of one entry per spatial dim, each >= lo (def when
 * absent); a 1-D node's entry goes to W, H gets 1. */
static tg_status pair_attr(onnx_reader *r, const window2d *w, const char *name,
                           int64_t def, int64_t lo, int64_t out[2])
{
    graph_ints v;
    int present, want = w->one_d ? 1 : 2;
    tg_status st = onnx_attr_ints(r, name, &v, GRAPH_MAX_INTS, &present);
    if (st != TG_OK)
        return st;
    out[0] = w->one_d ? 1 : def;
    out[1] = def;
    if (!present)
        return TG_OK;
    if (v.n != want)
        return onnx_fail(r, TG_ERR_FORMAT, "%s has %d entries, want %d", name, (int)v.n,
                         want);
    for (int i = 0; i < want; i++)
        if (v.v[i] < lo || v.v[i] > INT32_MAX)
            return onnx_fail(r, TG_ERR_FORMAT, "%s must be >= %lld and < 2^31", name,
                             LL(lo));
    out[0] = w->one_d ? 1 : v.v[0];
    out[1] = v.v[want - 1];
    return TG_OK;
}

/* SAME_UPPER / SAME_LOWER: out = ceil(in / stride), pads to fit. */
static void same_pads(const window2d *w, const graph_type *x, int lower,
                      graph_ints *pads)
{
    pads->n = 4;
    for (int i = 0; i < 2; i++) {
        int64_t in = x->dim[2 + i], out = (in + w->s[i] - 1) / w->s[i];
        int64_t total = (out - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in;
        total = total < 0 ? 0 : total;
        int64_t small = total / 2, big = total - small;
        pads->v[i] = lower ? big : small;
        pads->v[2 + i] = lower ? small : big;
    }
}

/*
 * Explicit pads from auto_pad and pads, for input x (value xv).  Sizes,
 * kernel, strides, dilations and pads are all below 2^31 here, so the
 * window arithmetic below cannot overflow int64.
 */
static tg_status window_pads(onnx_reader *r, int32_t xv, window2d *w)
{
    char mode[32];
    int present;
    const graph_type *x = onnx_vtype(r, xv);
    tg_status st = onnx_attr_str(r, "auto_pad", "NOTSET", mode, sizeof mode);
    if (st == TG_OK)
        st = onnx_attr_ints(r, "pads", &w->pads, GRAPH_MAX_INTS, &present);
    if (st != TG_OK)
        return st;
    for (int i = 0; i < 2; i++)
        if (x->dim[2 + i] > INT32_MAX || w->k[i] > INT32_MAX)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "a window over 2^31 is not "
                             "supported");
    if (!strcmp(mode, "NOTSET")) {
        int want = w->one_d ? 2 : 4;
        if (present && w->pads.n != want)
            return onnx_fail(r, TG_ERR_FORMAT, "pads has %d entries, want %d",
                             (int)w->pads.n, want);
        for (int i = 0; i < w->pads.n; i++)
            if (w->pads.v[i] < 0 || w->pads.v[i] > INT32_MAX)
                return onnx_fail(r, TG_ERR_FORMAT, "pads must be >= 0 and < 2^31");
        if (present && w->one_d) /* begin, end of L: left and right */
            w->pads = (graph_ints){4, {0, w->pads.v[0], 0, w->pads.v[1]}};
        return TG_OK;
    }
    memset(&w->pads, 0, sizeof w->pads);
    if (!strcmp(mode, "VALID"))
        return TG_OK;
    if (strcmp(mode, "SAME_UPPER") && strcmp(mode, "SAME_LOWER"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "auto_pad '%s' is not supported", mode);
    /* The pads follow the input size unless the stride is 1. */
    if ((onnx_dynamic_dims(r, xv) & 0xC) && (w->s[0] != 1 || w->s[1] != 1))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "auto_pad '%s' with a stride over a "
                         "dynamic dim is not supported", mode);
    same_pads(w, x, !strcmp(mode, "SAME_LOWER"), &w->pads);
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
 * [N, C, 1, L] and w->one_d is set); other ranks are unsupported.
 */
static tg_status need_2d(onnx_reader *r, int32_t *x, window2d *w)
{
    int nd = onnx_vtype(r, *x)->ndim;
    memset(w, 0, sizeof *w);
    if (nd == 3) {
        w->one_d = 1;
        return axis2(r, GRAPH_OP_unsqueeze, *x, x);
    }
    if (nd != 4)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "only 1-D (NCL) and 2-D (NCHW) are "
                         "supported, the input has %d dims", nd);
    return TG_OK;
}

/* Binds y, squeezed back to 1-D if the node is. */
static tg_status bind_window_out(onnx_reader *r, const window2d *w, int32_t y)
{
    tg_status st = w->one_d ? axis2(r, GRAPH_OP_squeeze, y, &y) : TG_OK;
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * The inputs and window of a Conv or ConvTranspose: X (unsqueezed when
 * 1-D), W of the same rank (likewise), B if given; kernel_shape checked
 * against W's, strides, dilations.  W's first two dims are the two ops'
 * own (output and input channels, or the reverse), not looked at here.
 */
static tg_status conv_window(onnx_reader *r, int32_t *in, int nin, window2d *w)
{
    graph_ints ks;
    int has_k;
    tg_status st = TG_OK;
    for (int i = 0; st == TG_OK && i < nin; i++)
        st = onnx_input(r, i, &in[i]);
    if (st == TG_OK)
        st = need_2d(r, &in[0], w);
    if (st == TG_OK && onnx_vtype(r, in[1])->ndim != (w->one_d ? 3 : 4))
        st = onnx_fail(r, TG_ERR_FORMAT, "W must be %d-D", w->one_d ? 3 : 4);
    if (st == TG_OK && w->one_d)
        st = axis2(r, GRAPH_OP_unsqueeze, in[1], &in[1]);
    if (st == TG_OK)
        st = onnx_attr_ints(r, "kernel_shape", &ks, GRAPH_MAX_INTS, &has_k);
    const graph_type *wt = st == TG_OK ? onnx_vtype(r, in[1]) : NULL;
    if (st == TG_OK && has_k &&
        (ks.n != 2 - w->one_d || (!w->one_d && ks.v[0] != wt->dim[2]) ||
         ks.v[ks.n - 1] != wt->dim[3]))
        st = w->one_d ? onnx_fail(r, TG_ERR_FORMAT, "kernel_shape does not match W's %lld",
                                  LL(wt->dim[3]))
                      : onnx_fail(r, TG_ERR_FORMAT, "kernel_shape does not match W's "
                                  "%lldx%lld", LL(wt->dim[2]), LL(wt->dim[3]));
    if (st == TG_OK)
        st = pair_attr(r, w, "strides", 1, 1, w->s);
    if (st == TG_OK)
        st = pair_attr(r, w, "dilations", 1, 1, w->d);
    if (st == TG_OK) {
        w->k[0] = wt->dim[2];
        w->k[1] = wt->dim[3];
    }
    return st;
}

tg_status onnx_cv_conv(onnx_reader *r, const onnx_op *op)
{
    int32_t in[3], y;
    int nin = onnx_has_input(r, 2) ? 3 : 2;
    window2d w;
    tg_status st = conv_window(r, in, nin, &w);
    if (st != TG_OK)
        return st;
    graph_conv2d_attrs a;
    graph_attrs_default(GRAPH_OP_conv2d, &a);
    st = onnx_attr_int(r, "group", 1, &a.groups);
    if (st == TG_OK)
        st = window_pads(r, in[0], &w);
    if (st != TG_OK)
        return st;
    a.stride = (graph_ints){2, {w.s[0], w.s[1]}};
    a.dilation = (graph_ints){2, {w.d[0], w.d[1]}};
    a.padding = w.pads;
    st = onnx_add(r, GRAPH_OP_conv2d, in, nin, &a, &y, 1);
    return st == TG_OK ? bind_window_out(r, &w, y) : st;
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
static tg_status transpose_pads(onnx_reader *r, int32_t xv, window2d *w, int64_t opad[2],
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
    int nsp = w->one_d ? 1 : 2;
    const graph_type *x = onnx_vtype(r, xv);
    if (has_os && os.n != nsp && os.n != nsp + 2) /* spatial dims, or all of them */
        return onnx_fail(r, TG_ERR_FORMAT, "output_shape has %d entries, want %d",
                         (int)os.n, nsp);
    if (has_os && (onnx_dynamic_dims(r, xv) & 0xC))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "output_shape with a dynamic spatial dim "
                         "is not supported");
    w->pads = (graph_ints){4, {0, 0, 0, 0}};
    for (int i = 2 - nsp; i < 2; i++) {
        int64_t in = x->dim[2 + i], out = has_os ? os.v[os.n - 2 + i] : 0;
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
        w->pads.v[i] = begin;
        w->pads.v[2 + i] = end;
    }
    return TG_OK;
}

/*
 * ConvTranspose: X [N, C, ...], W [C, M/group, k...] as conv_transpose2d
 * takes them (1-D as 2-D with H = 1, as Conv), output_padding, and the
 * pads of transpose_pads or of the pads attribute.
 */
tg_status onnx_cv_conv_transpose(onnx_reader *r, const onnx_op *op)
{
    int32_t in[3], y;
    int nin = onnx_has_input(r, 2) ? 3 : 2, set;
    window2d w;
    int64_t opad[2];
    tg_status st = conv_window(r, in, nin, &w);
    if (st == TG_OK)
        st = pair_attr(r, &w, "output_padding", 0, 0, opad);
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
        st = window_pads(r, in[0], &w);
    if (st != TG_OK)
        return st;
    a.stride = (graph_ints){2, {w.s[0], w.s[1]}};
    a.dilation = (graph_ints){2, {w.d[0], w.d[1]}};
    a.padding = w.pads;
    a.output_padding = (graph_ints){2, {opad[0], opad[1]}};
    st = onnx_add(r, GRAPH_OP_conv_transpose2d, in, nin, &a, &y, 1);
    return st == TG_OK ? bind_window_out(r, &w, y) : st;
}

/*
 * ceil_mode 1 as extra end padding: the window count rounds up, so the
 * last window may hang past the padded input.  Pool kernels skip padding,
 * so the result is the same unless the padding is counted.
 */
static tg_status ceil_pads(onnx_reader *r, int32_t xv, window2d *w,
                           int64_t count_pad)
{
    const graph_type *x = onnx_vtype(r, xv);
    for (int i = 0; i < 2; i++) {
        int64_t span = x->dim[2 + i] + w->pads.v[i] + w->pads.v[2 + i] - w->k[i];
        if (span < 0 || span % w->s[i] == 0)
            continue;
        if (count_pad)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "ceil_mode 1 with "
                             "count_include_pad 1 is not supported");
        if (onnx_dynamic_dims(r, xv) & (4u << i))
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "ceil_mode 1 over a dynamic "
                             "dim is not supported");
        w->pads.v[2 + i] += w->s[i] - span % w->s[i];
    }
    return TG_OK;
}

/* MaxPool and AveragePool: the window attributes they share. */
static tg_status pool_window(onnx_reader *r, int32_t x, window2d *w,
                             int64_t count_pad)
{
    int64_t ceil_mode;
    tg_status st = pair_attr(r, w, "kernel_shape", 0, 1, w->k);
    if (st == TG_OK && !onnx_attr(r, "kernel_shape"))
        st = onnx_fail(r, TG_ERR_FORMAT, "kernel_shape is missing");
    if (st == TG_OK)
        st = pair_attr(r, w, "strides", 1, 1, w->s);
    if (st == TG_OK)
        st = pair_attr(r, w, "dilations", 1, 1, w->d);
    if (st == TG_OK && (w->d[0] != 1 || w->d[1] != 1))
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "dilations other than 1 are not "
                       "supported");
    if (st == TG_OK)
        st = onnx_attr_int(r, "ceil_mode", 0, &ceil_mode);
    if (st == TG_OK)
        st = window_pads(r, x, w);
    if (st == TG_OK && w->pads.n == 0)
        w->pads = (graph_ints){4, {0, 0, 0, 0}};
    if (st == TG_OK && ceil_mode)
        st = ceil_pads(r, x, w, count_pad);
    return st;
}

tg_status onnx_cv_pool(onnx_reader *r, const onnx_op *op)
{
    int32_t x, y;
    window2d w;
    int64_t count_pad = 0, order = 0;
    tg_status st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = need_2d(r, &x, &w);
    if (st == TG_OK && op->op == GRAPH_OP_avg_pool2d)
        st = onnx_attr_int(r, "count_include_pad", 0, &count_pad);
    if (st == TG_OK)
        st = onnx_attr_int(r, "storage_order", 0, &order);
    if (st == TG_OK && order != 0)
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "storage_order 1 is not supported");
    if (st == TG_OK)
        st = pool_window(r, x, &w, count_pad);
    if (st != TG_OK)
        return st;
    graph_ints k = {2, {w.k[0], w.k[1]}}, s = {2, {w.s[0], w.s[1]}};
    if (op->op == GRAPH_OP_max_pool2d) {
        graph_max_pool2d_attrs a = {k, s, w.pads};
        st = onnx_add(r, GRAPH_OP_max_pool2d, &x, 1, &a, &y, 1);
    } else {
        graph_avg_pool2d_attrs a = {k, s, w.pads, count_pad};
        st = onnx_add(r, GRAPH_OP_avg_pool2d, &x, 1, &a, &y, 1);
    }
    return st == TG_OK ? bind_window_out(r, &w, y) : st;
}
