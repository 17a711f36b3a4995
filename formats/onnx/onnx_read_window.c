/*
 * onnx_read_window.c - the window attributes the ONNX importer's Conv,
 * ConvTranspose (onnx_read_conv.c) and pool (onnx_read_pool.c) converters
 * share (kernel_shape, strides, dilations, pads, auto_pad; 1-D as 2-D),
 * and the transposes and depth taps of their 3-D forms, declared in
 * onnx_read_window.h.  A helper file: it calls onnx_read_node.c and
 * onnx_read_base.c, never a converter (docs/ARCHITECTURE.md, "Leaves").
 */
#include <stdint.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_window.h"

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
tg_status onnx_conv_window(onnx_reader *r, int32_t *in, int nin, window2d *w,
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
