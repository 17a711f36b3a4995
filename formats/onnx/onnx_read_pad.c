/*
 * onnx_read_pad.c - the ONNX importer's Pad: constant mode as tracegraph's
 * pad op; edge, reflect and wrap as slices, expands and concats (wrap past
 * the dim's size as one gather), split from onnx_read_shape.c and
 * onnx_read_compose.c.
 */
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"

/* Pads given for some axes (opset 18) spread over all dims. */
static tg_status pads_for_axes(onnx_reader *r, int nd, graph_ints *pads)
{
    graph_ints axes, full;
    tg_status st = onnx_const_ints(r, 3, "axes", &axes, GRAPH_MAX_DIMS);
    if (st != TG_OK)
        return st;
    if (pads->n != 2 * axes.n)
        return onnx_fail(r, TG_ERR_FORMAT, "pads has %d entries for %d axes",
                         (int)pads->n, (int)axes.n);
    memset(&full, 0, sizeof full);
    full.n = 2 * nd;
    for (int k = 0; k < axes.n; k++) {
        int ax = graph_axis(axes.v[k], nd);
        if (ax < 0)
            return onnx_fail(r, TG_ERR_FORMAT, "axis %lld out of range for %d dims",
                             LL(axes.v[k]), nd);
        full.v[ax] = pads->v[k];
        full.v[nd + ax] = pads->v[axes.n + k];
    }
    *pads = full;
    return TG_OK;
}

tg_status onnx_cv_pad(onnx_reader *r, const onnx_op *op)
{
    char mode[32];
    graph_pad_attrs a;
    int present;
    const graph_type *x;
    graph_attrs_default(GRAPH_OP_pad, &a);
    tg_status st = onnx_attr_str(r, "mode", "constant", mode, sizeof mode);
    onnx_pad_mode pm = !strcmp(mode, "reflect") ? PAD_REFLECT
                       : !strcmp(mode, "wrap")  ? PAD_WRAP
                                                : PAD_EDGE;
    int border = pm != PAD_EDGE || !strcmp(mode, "edge");
    if (st == TG_OK && pm == PAD_WRAP && r->opset < 19)
        st = onnx_fail(r, TG_ERR_FORMAT, "mode 'wrap' needs opset 19");
    if (st == TG_OK && strcmp(mode, "constant") && !border)
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "mode '%s' is not supported", mode);
    if (st == TG_OK)
        st = onnx_ints_operand(r, 1, 11, "pads", &a.pads, &present);
    if (st == TG_OK && !present)
        st = onnx_fail(r, TG_ERR_FORMAT, "pads is missing");
    if (st == TG_OK && r->opset < 11)
        st = onnx_attr_float(r, "value", 0.0f, &a.value);
    double v;
    if (st == TG_OK && r->opset >= 11 && onnx_has_input(r, 2) &&
        (st = onnx_const_scalar(r, 2, "constant_value", &v)) == TG_OK)
        a.value = (float)v;
    if (st == TG_OK) /* Pad-2: floats; Pad-11: numbers; bool from Pad-13 */
        st = onnx_older_types(r, 0, 11, 0);
    if (st == TG_OK)
        st = onnx_older_types(r, 0, 13, 1);
    if (st == TG_OK)
        st = onnx_input_type(r, 0, &x);
    if (st == TG_OK && onnx_has_input(r, 3))
        st = r->opset >= 18 ? pads_for_axes(r, x->ndim, &a.pads)
                            : onnx_fail(r, TG_ERR_FORMAT, "axes needs opset 18");
    if (st == TG_OK && border)
        return onnx_pad_border(r, pm, &a.pads);
    if (st != TG_OK)
        return st;
    int32_t xv, y;
    st = onnx_input(r, 0, &xv);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_pad, &xv, 1, &a, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * Pad modes edge, reflect and wrap (opset 19; pads: begins then ends,
 * >= 0), axis by axis as concat(before, x, after):
 *   edge     before = x[0:1] expanded to b, after = x[n-1:n] expanded to e;
 *   reflect  before = x[b:0:-1], after = x[n-2:n-2-e:-1] (the border
 *            element not repeated: b and e at most n - 1);
 *   wrap     before = x[n-b:n], after = x[0:e] (b and e at most n);
 *            past n (ONNX's wrap is modular, as ONNX Runtime runs it) one
 *            gather of x at (j mod n) for j in [-b, n + e): wrap_gather.
 * A padded dim that is dynamic is fixed at its traced size (specialized).
 */
static tg_status wrap_gather(onnx_reader *r, int32_t x, int d, int64_t n, int64_t b, int64_t e,
                             int32_t *y)
{
    int64_t out = n + b + e; /* b, e below 2^31, n below 2^40: no overflow */
    if (out > ONNX_MAX_FOLD_BYTES / (int64_t)sizeof(int64_t))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "mode 'wrap' pads dim %d of size %lld to "
                         "%lld: its indices would take over %lld MiB", d, LL(n), LL(out),
                         LL(ONNX_MAX_FOLD_BYTES >> 20));
    int64_t *idx = tg_malloc(sizeof *idx * (size_t)out);
    if (!idx)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for %lld indices", LL(out));
    for (int64_t j = 0; j < out; j++)
        idx[j] = ((j - b) % n + n) % n;
    graph_type it = {GRAPH_I64, 1, {out}};
    graph_gather_attrs ga = {d};
    int32_t in[2] = {x, -1};
    tg_status st = onnx_const_value(r, &it, idx, &in[1]);
    tg_free(idx);
    return st == TG_OK ? onnx_add(r, GRAPH_OP_gather, in, 2, &ga, y, 1) : st;
}

tg_status onnx_pad_border(onnx_reader *r, onnx_pad_mode pm, const graph_ints *pads)
{
    int32_t x;
    tg_status st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    static const char *const names[] = {"edge", "reflect", "wrap"};
    const char *mode = names[pm];
    int nd = onnx_vtype(r, x)->ndim;
    uint32_t dyn = onnx_dynamic_dims(r, x);
    if (pads->n != 2 * nd)
        return onnx_fail(r, TG_ERR_FORMAT, "pads has %d entries, want %d (2 per dim)",
                         pads->n, 2 * nd);
    for (int d = 0; d < nd; d++) {
        int64_t b = pads->v[d], e = pads->v[nd + d], n = onnx_vtype(r, x)->dim[d];
        if (b < 0 || e < 0)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "a negative pad (%lld) in mode '%s' "
                             "is not supported", LL(b < 0 ? b : e), mode);
        if (!b && !e)
            continue;
        int64_t most = pm == PAD_REFLECT ? n - 1 : n ? INT32_MAX : 0;
        if (b > most || e > most)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "mode '%s' pads dim %d of size %lld by "
                             "%lld; at most %lld is supported", mode, d, LL(n),
                             LL(b > most ? b : e), LL(most));
        if (dyn >> d & 1)
            r->specialized = 1;
        if (pm == PAD_WRAP && (b > n || e > n)) {
            if ((st = wrap_gather(r, x, d, n, b, e, &x)) != TG_OK)
                return st;
            continue;
        }
        int32_t parts[3] = {-1, x, -1};
        if (b)
            st = pm == PAD_REFLECT ? onnx_slice_axis(r, x, d, b, 0, -1, &parts[0])
                 : pm == PAD_WRAP  ? onnx_slice_axis(r, x, d, n - b, n, 1, &parts[0])
                                   : onnx_slice_axis(r, x, d, 0, 1, 1, &parts[0]);
        if (st == TG_OK && b && pm == PAD_EDGE)
            st = onnx_expand_axis(r, parts[0], d, b, &parts[0]);
        /* reflect's end n-2-e is >= -1; -1 must mean "before 0", not the
         * last element. */
        if (st == TG_OK && e)
            st = pm == PAD_REFLECT
                     ? onnx_slice_axis(r, x, d, n - 2, n - 2 - e >= 0 ? n - 2 - e : -n - 1, -1,
                                       &parts[2])
                 : pm == PAD_WRAP ? onnx_slice_axis(r, x, d, 0, e, 1, &parts[2])
                                  : onnx_slice_axis(r, x, d, n - 1, n, 1, &parts[2]);
        if (st == TG_OK && e && pm == PAD_EDGE)
            st = onnx_expand_axis(r, parts[2], d, e, &parts[2]);
        if (st == TG_OK)
            st = onnx_concat_axis(r, parts, 3, d, &x);
        if (st != TG_OK)
            return st;
    }
    return onnx_bind(r, 0, x);
}
