/*
 * onnx_read_pool.c - the ONNX importer's MaxPool and AveragePool (1-D,
 * 2-D and 3-D), on the window attributes of onnx_read_window.h, split
 * from onnx_read_conv.c.
 */
#include <stdint.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_window.h"

/*
 * ceil_mode 1 as extra end padding: the window count rounds up, so the
 * last window may hang past the padded input.  Pool kernels skip padding,
 * so the result is the same unless the padding is counted.  H and W, and
 * D for a 3-D pool.  A window that would start in the end padding is not
 * added (the ONNX spec since 1.16, PyTorch and ONNX Runtime: a MaxPool2d(2,
 * 2, padding=1, ceil_mode=True) on 5 rows gives 3, not 4).  With
 * count_include_pad the divisor still ends at the model's own end pad (the
 * ONNX reference and ONNX Runtime: min(start + k, size + end pad) -
 * start): the added part is kept in w->ceil_end for pool_counts and
 * pool_depth.
 */
static tg_status ceil_pads(onnx_reader *r, int32_t xv, window2d *w,
                           int64_t count_pad)
{
    const graph_type *x = onnx_vtype(r, xv);
    for (int i = 0; i < 2 + w->three_d; i++) { /* H, W, then D */
        int ax = i < 2 ? h_axis(w) + i : 2;
        int64_t begin = i < 2 ? w->pads.v[i] : w->dpads[0];
        int64_t *end = i < 2 ? &w->pads.v[2 + i] : &w->dpads[1];
        /* kernel, dilation below 2^31: the dilated window below 2^62 */
        int64_t span = x->dim[ax] + begin + *end - ((w->k[i] - 1) * w->d[i] + 1);
        if (span < 0 || span % w->s[i] == 0)
            continue;
        /* the added window's first row, counted from the input's first */
        if ((span / w->s[i] + 1) * w->s[i] - begin >= x->dim[ax]) {
            if (!r->ceil_node) {
                r->ceil_node = r->node;
                r->ceil_index = r->index;
            }
            continue;
        }
        if (onnx_dynamic_dims(r, xv) & (1u << ax))
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "ceil_mode 1 over a dynamic "
                             "dim is not supported");
        w->ceil_end[i] = count_pad ? w->s[i] - span % w->s[i] : 0;
        *end += w->s[i] - span % w->s[i];
    }
    return TG_OK;
}

/* MaxPool and AveragePool: the window attributes they share. */
static tg_status pool_window(onnx_reader *r, int32_t x, window2d *w,
                             int64_t count_pad)
{
    int64_t ceil_mode;
    tg_status st = onnx_window_ints(r, w, "kernel_shape", 0, 1, w->k);
    if (st == TG_OK && !onnx_attr(r, "kernel_shape"))
        st = onnx_fail(r, TG_ERR_FORMAT, "kernel_shape is missing");
    if (st == TG_OK)
        st = onnx_window_ints(r, w, "strides", 1, 1, w->s);
    if (st == TG_OK)
        st = onnx_window_ints(r, w, "dilations", 1, 1, w->d);
    /* D's dilation is pool_depth's taps; the 2-D pools have none */
    if (st == TG_OK && (w->d[0] != 1 || w->d[1] != 1))
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "dilations other than 1 %sare not "
                       "supported", w->three_d ? "in H and W " : "");
    if (st == TG_OK)
        st = onnx_attr_int(r, "ceil_mode", 0, &ceil_mode);
    if (st == TG_OK)
        st = onnx_window_pads(r, x, w);
    if (st == TG_OK && w->pads.n == 0)
        w->pads = (graph_ints){4, {0, 0, 0, 0}};
    if (st == TG_OK && ceil_mode)
        st = ceil_pads(r, x, w, count_pad);
    return st;
}

/*
 * A 3-D MaxPool or AveragePool, X [N, C, D, H, W], as the 2-D pool of
 * every depth, then a pool along D: the window is separable (a max of
 * maxes; an average of averages, since the H-W count is the same at every
 * depth of a window).  pool2d(xv) is the 2-D pool of X transposed to
 * [N, D, C, H, W] and reshaped to [N*D, C, H, W], [N*D, C, H', W']; it is
 * reshaped to [N, D, C*H'*W'] and gathered at each output depth's kd taps
 * o*sd + k*dd - pd0 (dd: D's dilation; constant [Do, kd] indices: [N, Do,
 * kd, C*H'*W']):
 *   max: a tap in the padding reads the window's first tap inside instead
 *   (max is idempotent), then reduce_max over the taps;
 *   average: zero-padded in D first, reduce_sum over the taps, divided by
 *   the taps counted (kd with count_include_pad, else those inside D: a
 *   constant [Do, 1]).
 * Then reshaped to [N, Do, C, H', W'] and transposed to [N, C, Do, H', W'].
 * A window along D that holds no depth of X (padding only) is refused.
 * A dynamic batch follows; a dynamic C, D, H or W is fixed at its traced
 * size (the node is flagged specialized).
 */
static tg_status pool_depth(onnx_reader *r, int max, int32_t xv, int32_t y, const window2d *w,
                            int64_t count_pad)
{
    const graph_type *xt = onnx_vtype(r, xv), *yt = onnx_vtype(r, y);
    int64_t n = xt->dim[0], c = yt->dim[1], d = xt->dim[2], oh = yt->dim[2], ow = yt->dim[3];
    int64_t kd = w->k[2], sd = w->s[2], dd = w->d[2], p0 = w->dpads[0];
    /* sizes, pads, kd and dd below 2^31 (window_pads, pair_attr), D's end
     * pad by ceil_mode at most one stride more: no overflow */
    int64_t eff = (kd - 1) * dd + 1, span = d + p0 + w->dpads[1] - eff;
    if (span < 0)
        return onnx_fail(r, TG_ERR_SHAPE, "output depth <= 0: the padded input depth %lld "
                         "is smaller than the %skernel depth %lld", LL(span + eff),
                         dd > 1 ? "dilated " : "", LL(eff));
    int64_t od = span / sd + 1;
    if (od > ONNX_MAX_FOLD_BYTES / (int64_t)sizeof(int64_t) / kd)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "a 3-D pool of %lld output depths and %lld "
                         "taps is not supported", LL(od), LL(kd));
    for (int64_t i = 0; i < od; i++) {
        int64_t lo = i * sd - p0, k = lo >= 0 ? 0 : (-lo + dd - 1) / dd; /* first inside */
        if (k >= kd || lo + k * dd >= d)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "output depth %lld's window holds "
                             "padding only: not supported", LL(i));
    }
    int db = onnx_dynamic_dims(r, xv) & 1;
    int64_t flat[3] = {n, d, c * oh * ow};
    tg_status st = onnx_reshape_to(r, y, db, flat, 3, &y);
    if (st == TG_OK && !max && (p0 || w->dpads[1])) {
        graph_pad_attrs pa;
        memset(&pa, 0, sizeof pa);
        pa.pads = (graph_ints){6, {0, p0, 0, 0, w->dpads[1], 0}};
        st = onnx_add(r, GRAPH_OP_pad, &y, 1, &pa, &y, 1);
    }
    int64_t *taps = st == TG_OK ? onnx_new_taps(r, od, kd) : NULL;
    if (!taps)
        return st == TG_OK ? TG_ERR_NOMEM : st;
    float *count = max ? NULL : tg_malloc(sizeof *count * (size_t)od);
    if (!max && !count) {
        tg_free(taps);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for %lld counts", LL(od));
    }
    for (int64_t i = 0; i < od; i++) {
        int64_t lo = i * sd - p0, inside = 0; /* the window's first depth in X */
        int64_t first = lo >= 0 ? lo : lo + (-lo + dd - 1) / dd * dd; /* its first inside */
        /* count_include_pad: the taps before the model's own end pad */
        int64_t counted = 0, stop = d + w->dpads[1] - w->ceil_end[2];
        for (int64_t k = 0; k < kd; k++) {
            int64_t t = lo + k * dd;
            inside += t >= 0 && t < d;
            counted += t < stop;
            /* max: a tap outside reads the window's first tap inside */
            taps[i * kd + k] = !max ? t + p0 : t < 0 || t >= d ? first : t;
        }
        if (count)
            count[i] = (float)(count_pad ? counted : inside);
    }
    st = onnx_gather_taps(r, y, 1, taps, od, kd, &y);
    graph_reduce_sum_attrs ra = {{1, {2}}, 0}; /* reduce_max's layout too */
    if (st == TG_OK)
        st = onnx_add(r, max ? GRAPH_OP_reduce_max : GRAPH_OP_reduce_sum, &y, 1, &ra, &y, 1);
    graph_type ct = {GRAPH_F32, 2, {od, 1}};
    int32_t div[2] = {y, -1};
    if (st == TG_OK && count)
        st = onnx_const_value(r, &ct, count, &div[1]);
    tg_free(count);
    if (st == TG_OK && !max)
        st = onnx_add(r, GRAPH_OP_div, div, 2, NULL, &y, 1);
    int64_t y5[5] = {n, od, c, oh, ow};
    static const int64_t swap12[5] = {0, 2, 1, 3, 4};
    if (st == TG_OK)
        st = onnx_reshape_to(r, y, db, y5, 5, &y);
    if (st == TG_OK)
        st = onnx_permute(r, y, swap12, 5, &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * AveragePool with count_include_pad whose ceil_mode added end padding in
 * H or W: avg_pool2d divided each window by kh*kw, the windows over the
 * added padding must count only up to the model's end pad; y times the
 * constant kh*kw / count [H', W'] (the H and W sizes are static here).
 */
static tg_status pool_counts(onnx_reader *r, int32_t x, const window2d *w, int32_t *y)
{
    const graph_type *xt = onnx_vtype(r, x), *yt = onnx_vtype(r, *y);
    int64_t oh = yt->dim[2], ow = yt->dim[3], size[2] = {xt->dim[2], xt->dim[3]};
    float *f = tg_malloc(sizeof *f * (size_t)(oh * ow + 1));
    if (!f)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for %lld counts", LL(oh * ow));
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
            int64_t o[2] = {i, j}, n = 1;
            for (int a = 0; a < 2; a++) {
                int64_t lo = o[a] * w->s[a] - w->pads.v[a];
                int64_t hi = lo + w->k[a], stop = size[a] + w->pads.v[2 + a] - w->ceil_end[a];
                n *= (hi < stop ? hi : stop) - lo;
            }
            f[i * ow + j] = (float)((double)(w->k[0] * w->k[1]) / (double)n);
        }
    graph_type ft = {GRAPH_F32, 2, {oh, ow}};
    int32_t in[2] = {*y, -1};
    tg_status st = onnx_const_value(r, &ft, f, &in[1]);
    tg_free(f);
    return st == TG_OK ? onnx_add(r, GRAPH_OP_mul, in, 2, NULL, y, 1) : st;
}

/*
 * A window larger than the padded input along an axis by exactly a stride
 * (span = -s) gives that axis floor(span / s) + 1 = 0 outputs, as the
 * spec's formula and ONNX Runtime do: an empty output, made from x0 (the
 * node's input) sliced empty and reshaped to the output's shape (*done).
 * By less than a stride the spec's size is still 0 but ORT's truncating
 * division gives 1 window (a kernel 2, stride 2 over 1 row): refused,
 * saying so.  Further than a stride the spec's size is negative (refused
 * by the pool below); with ceil_mode the size is 1 unless the axis is
 * empty and not padded before (the window would start past it).
 */
static tg_status pool_empty(onnx_reader *r, int32_t x0, int32_t x, const window2d *w,
                            int *done)
{
    int64_t ceil_mode;
    tg_status st = onnx_attr_int(r, "ceil_mode", 0, &ceil_mode);
    const graph_type *xt = onnx_vtype(r, x);
    int64_t out[3];
    int empty = 0, nsp = 2 + w->three_d;
    for (int i = 0; st == TG_OK && i < nsp; i++) { /* H, W, then D */
        int ax = i < 2 ? h_axis(w) + i : 2;
        int64_t b = i < 2 ? w->pads.v[i] : w->dpads[0], e = i < 2 ? w->pads.v[2 + i] : w->dpads[1];
        /* sizes, pads, kernel and dilation below 2^31 (window_pads): no overflow */
        int64_t span = xt->dim[ax] + b + e - ((w->k[i] - 1) * w->d[i] + 1);
        int64_t sd = w->s[i], n = xt->dim[ax];
        /* ceil_mode: ceil(span / s) + 1, less a last window that starts in
         * the end padding: 0 only from an empty axis unpadded before */
        if (span < 0 && (span < -sd || (ceil_mode && (span == -sd || n + b > 0))))
            return st; /* the pool's own refusal names it */
        if (span < 0 && !ceil_mode && span > -sd)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "the %s window is larger than the padded "
                             "input by less than the stride %lld: the spec's size is 0 "
                             "windows, ONNX Runtime's 1 (its division truncates): not "
                             "supported", i == 0 ? "H" : i == 1 ? "W" : "D", LL(sd));
        out[i] = span < 0 ? 0 : span / sd + 1; /* ceil_pads has padded for ceil_mode */
        empty |= span < 0;
    }
    if (st != TG_OK || !empty)
        return st;
    graph_type yt = *onnx_vtype(r, x0);
    int nd = yt.ndim;
    if (w->three_d)
        yt.dim[2] = out[2];
    if (!w->one_d)
        yt.dim[nd - 2] = out[0];
    yt.dim[nd - 1] = out[1];
    if (onnx_dynamic_dims(r, x0))
        r->specialized = 1; /* the reshape of 0 elements holds the traced sizes */
    int32_t y;
    st = onnx_slice_axis(r, x0, 0, 0, 0, 1, &y);
    if (st == TG_OK)
        st = onnx_reshape_to(r, y, 0, yt.dim, nd, &y);
    if (st == TG_OK) {
        *done = 1;
        st = onnx_bind(r, 0, y);
    }
    return st;
}

tg_status onnx_cv_pool(onnx_reader *r, const onnx_op *op)
{
    int32_t x, x0, y;
    window2d w;
    int64_t count_pad = 0, order = 0;
    tg_status st = onnx_input(r, 0, &x);
    x0 = x;
    if (st == TG_OK)
        st = onnx_window_input(r, &x, &w, 1);
    if (st == TG_OK && op->op == GRAPH_OP_avg_pool2d)
        st = onnx_attr_int(r, "count_include_pad", 0, &count_pad);
    if (st == TG_OK)
        st = onnx_attr_int(r, "storage_order", 0, &order);
    if (st == TG_OK && order != 0)
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "storage_order 1 is not supported");
    if (st == TG_OK)
        st = pool_window(r, x, &w, count_pad);
    int done = 0;
    if (st == TG_OK)
        st = pool_empty(r, x0, x, &w, &done);
    if (st != TG_OK || done)
        return st;
    if (w.three_d) { /* [N, C, D, H, W] to [N*D, C, H, W] */
        const graph_type *xt = onnx_vtype(r, x);
        int64_t rows[4] = {xt->dim[0] * xt->dim[2], xt->dim[1], xt->dim[3], xt->dim[4]};
        static const int64_t swap12[5] = {0, 2, 1, 3, 4};
        uint32_t dyn = onnx_dynamic_dims(r, x);
        if (dyn & ~1u)
            r->specialized = 1; /* the reshapes and the indices fix C, D, H and W */
        st = onnx_permute(r, x, swap12, 5, &x);
        if (st == TG_OK)
            st = onnx_reshape_to(r, x, dyn & 1, rows, 4, &x);
        if (st != TG_OK)
            return st;
    }
    graph_ints k = {2, {w.k[0], w.k[1]}}, s = {2, {w.s[0], w.s[1]}};
    if (op->op == GRAPH_OP_max_pool2d) {
        graph_max_pool2d_attrs a = {k, s, w.pads};
        st = onnx_add(r, GRAPH_OP_max_pool2d, &x, 1, &a, &y, 1);
    } else {
        graph_avg_pool2d_attrs a = {k, s, w.pads, count_pad};
        st = onnx_add(r, GRAPH_OP_avg_pool2d, &x, 1, &a, &y, 1);
        if (st == TG_OK && (w.ceil_end[0] || w.ceil_end[1]))
            st = pool_counts(r, x, &w, &y);
    }
    if (st == TG_OK && w.three_d)
        return pool_depth(r, op->op == GRAPH_OP_max_pool2d, x0, y, &w, count_pad);
    return st == TG_OK ? onnx_window_bind(r, &w, y) : st;
}
