/*
 * onnx_read_resize.c - ONNX Resize (opset 11 on) as gathers and a
 * weighted sum, one resized axis at a time.
 *
 * Resize is separable: along an axis of input size in and output size
 * out, output element o reads taps of the input at indices fixed by o
 * alone, weighted by numbers fixed by o alone.  Both are worked out here
 * at load time, from the spec's formulas (the ONNX reference
 * implementation, onnx/reference/ops/op_resize.py):
 *
 *   x = the coordinate transformation of o (half_pixel, asymmetric, ...)
 *   nearest: 1 tap, x rounded by nearest_mode;
 *   linear:  2 taps, i0 and i0 + 1, weights 1 - t and t;
 *   cubic:   4 taps, i0 - 1 .. i0 + 2, the Keys weights of t with
 *            cubic_coeff_a (exclude_outside: taps outside the input get
 *            weight 0 and the rest are scaled to sum to 1);
 *   with i0 = floor(x) and t = x - i0 in [0, 1) (a whole x is tap i0
 *   with t = 0: its neighbours of weight 0 are ONNX Runtime's, whose 0 *
 *   NaN is NaN, where the reference takes ceil(x) - 1 and t = 1), and taps
 *   past either end reading the edge element.
 *
 * Each axis then becomes, for each tap k, gather(y, idx_k, axis) times a
 * column of weights w_k broadcast along the axis, summed over the taps
 * (nearest: the gather alone).  An axis whose map is the identity is
 * left out; the optimizer folds and fuses the rest like any other ops.
 * The sizes, scales and roi must be known at load time; an axis with a
 * dynamic size that is resized is fixed at its traced size (the node is
 * flagged specialized).  Not supported: tf_crop_and_resize, antialias,
 * opset 18's axes and keep_aspect_ratio_policy other than stretch.
 * Upsample, the op Resize replaced, goes the same way (nearest only).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"

enum { CT_HALF_PIXEL, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_TF_HALF_PIXEL,
       CT_HALF_PIXEL_SYMMETRIC };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL };
enum { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC };

typedef struct resize_spec {
    int mode, coord, nearest, exclude_outside;
    double cubic_a;
} resize_spec;

/* One string attribute, matched against names (its index, or a failure). */
static tg_status attr_choice(onnx_reader *r, const char *attr, const char *def,
                             const char *const *names, int n, int *out)
{
    char buf[32];
    tg_status st = onnx_attr_str(r, attr, def, buf, sizeof buf);
    if (st != TG_OK)
        return st;
    for (int i = 0; i < n; i++)
        if (!strcmp(buf, names[i])) {
            *out = i;
            return TG_OK;
        }
    if (!strcmp(attr, "coordinate_transformation_mode") && !strcmp(buf, "tf_crop_and_resize"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "%s '%s' is not supported", attr, buf);
    return onnx_fail(r, TG_ERR_FORMAT, "%s '%s' is not a known value", attr, buf);
}

static tg_status read_spec(onnx_reader *r, resize_spec *s)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn",
                                         "half_pixel_symmetric"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    char policy[32];
    int64_t excl, anti;
    float a;
    tg_status st = attr_choice(r, "mode", "nearest", modes, 3, &s->mode);
    if (st == TG_OK)
        st = attr_choice(r, "coordinate_transformation_mode", "half_pixel", coords,
                         r->opset >= 19 ? 6 : 5, &s->coord);
    if (st == TG_OK)
        st = attr_choice(r, "nearest_mode", "round_prefer_floor", nearests, 4, &s->nearest);
    if (st == TG_OK)
        st = onnx_attr_float(r, "cubic_coeff_a", -0.75f, &a);
    if (st == TG_OK)
        st = onnx_attr_int(r, "exclude_outside", 0, &excl);
    if (st == TG_OK)
        st = onnx_attr_int(r, "antialias", 0, &anti);
    if (st == TG_OK)
        st = onnx_attr_str(r, "keep_aspect_ratio_policy", "stretch", policy, sizeof policy);
    if (st == TG_OK && anti)
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "antialias 1 is not supported");
    if (st == TG_OK && strcmp(policy, "stretch"))
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s' is not "
                       "supported", policy);
    if (st == TG_OK && onnx_attr(r, "axes"))
        st = onnx_fail(r, TG_ERR_UNSUPPORTED, "the axes attribute is not supported");
    s->cubic_a = a;
    s->exclude_outside = excl != 0;
    return st;
}

/*
 * The input coordinate of output index o (of out) along an axis.  The
 * resized length of align_corners, pytorch_half_pixel and
 * half_pixel_symmetric is in * scale before rounding down to the output
 * size, as in the reference (it differs when scales, not sizes, are
 * given); half_pixel_symmetric (opset 19) shifts half_pixel by
 * in/2 * (1 - out/len), centring the rounded-down output.
 */
static double source_coord(const resize_spec *s, int64_t o, int64_t in, int64_t out,
                           double scale)
{
    double len = (double)in * scale;
    switch (s->coord) {
    case CT_HALF_PIXEL_SYMMETRIC:
        return (double)in / 2 * (1 - (double)out / len) + (o + 0.5) / scale - 0.5;
    case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case CT_ALIGN_CORNERS: return len == 1 ? 0.0 : (double)o * (double)(in - 1) / (len - 1);
    case CT_ASYMMETRIC: return o / scale;
    case CT_TF_HALF_PIXEL: return (o + 0.5) / scale;
    default: return (o + 0.5) / scale - 0.5;
    }
}

/*
 * source_coord in single precision, as ONNX Runtime computes it: nearest
 * rounds the coordinate, so a coordinate that is a whole number in exact
 * arithmetic rounds as ORT's float does (scale 0.6 of 4, half_pixel,
 * output 1: 1.5f / 0.6f is 2.5f, 2.0 whole, where the double 1.9999999
 * floors to 1; seed 6003 model 3342).
 */
static float source_coord_f(const resize_spec *s, int64_t o, int64_t in, int64_t out,
                            double scale)
{
    float sc = (float)scale, fo = (float)o, fin = (float)in, len = fin * sc;
    switch (s->coord) {
    case CT_HALF_PIXEL_SYMMETRIC:
        return fin / 2 * (1 - (float)out / len) + (fo + 0.5f) / sc - 0.5f;
    case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (fo + 0.5f) / sc - 0.5f : 0.0f;
    case CT_ALIGN_CORNERS: return len == 1 ? 0.0f : fo * (fin - 1) / (len - 1);
    case CT_ASYMMETRIC: return fo / sc;
    case CT_TF_HALF_PIXEL: return (fo + 0.5f) / sc;
    default: return (fo + 0.5f) / sc - 0.5f;
    }
}

/* Keys' cubic weights of the taps i0 - 1 .. i0 + 2 at offset t. */
static void cubic_weights(double t, double A, double w[4])
{
    double u = t + 1, v = 1 - t, q = v + 1;
    w[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
    w[3] = ((A * q - 5 * A) * q + 8 * A) * q - 4 * A;
}

/*
 * The taps of output index o: ntap indices (clamped to the input) and
 * weights.  Returns the tap count (1, 2 or 4), or 0 when the coordinate
 * is not a number within +-2^62 (it would not convert to an index).
 */
static int taps(const resize_spec *s, int64_t o, int64_t in, int64_t out, double scale,
                int64_t idx[4], double w[4])
{
    double x = source_coord(s, o, in, out, scale);
    if (!(fabs(x) <= 0x1p62))
        return 0;
    if (s->mode == MODE_NEAREST) {
        double k;
        x = source_coord_f(s, o, in, out, scale);
        if (!(fabs(x) <= 0x1p62))
            return 0;
        switch (s->nearest) {
        case NM_ROUND_PREFER_CEIL: k = floor(x + 0.5); break;
        case NM_FLOOR: k = floor(x); break;
        case NM_CEIL: k = ceil(x); break;
        default: k = ceil(x - 0.5); break;
        }
        idx[0] = k < 0 ? 0 : k > (double)(in - 1) ? in - 1 : (int64_t)k;
        w[0] = 1.0;
        return 1;
    }
    int64_t i0 = (int64_t)floor(x);
    double t = x - (double)i0;
    int n = s->mode == MODE_LINEAR ? 2 : 4;
    int64_t first = s->mode == MODE_LINEAR ? i0 : i0 - 1;
    if (n == 2) {
        w[0] = 1 - t;
        w[1] = t;
    } else {
        cubic_weights(t, s->cubic_a, w);
    }
    double sum = 0;
    for (int k = 0; k < n; k++) {
        int64_t i = first + k;
        if (s->exclude_outside && (i < 0 || i >= in))
            w[k] = 0;
        sum += w[k];
        idx[k] = i < 0 ? 0 : i >= in ? in - 1 : i;
    }
    if (s->exclude_outside && sum != 0)
        for (int k = 0; k < n; k++)
            w[k] /= sum;
    return n;
}

/*
 * One output's taps at one index (clamped at the border) made one tap,
 * their weights summed, and a sum within 1e-12 of 1 made 1: x (1 - t) +
 * x t was rounded off x, so linearly upsampled copies of one element were
 * not the ties they are in ONNX Runtime for a TopK after them (seed 6002
 * model 4156).  A tap keeps its index (0 * NaN stays NaN, as in ORT).
 */
static void merge_taps(int64_t *ti, double *tw, int n)
{
    for (int k = 1; k < n; k++)
        for (int j = 0; j < k; j++)
            if (ti[j] == ti[k] && tw[k] != 0) {
                tw[j] += tw[k];
                tw[k] = 0;
            }
    for (int k = 0; k < n; k++)
        if (fabs(tw[k] - 1) < 1e-12)
            tw[k] = 1;
}

/*
 * Resizes axis a of *y (size in) to out: gathers and weighted sums as
 * the header says.  A map that is the identity adds nothing.
 */
static tg_status resize_axis(onnx_reader *r, const resize_spec *s, int32_t *y, int a,
                             int64_t out, double scale)
{
    const graph_type *yt = onnx_vtype(r, *y);
    int64_t in = yt->dim[a];
    int nd = yt->ndim, ntap = s->mode == MODE_NEAREST ? 1 : s->mode == MODE_LINEAR ? 2 : 4;
    if (in == 0 && out == 0)
        return TG_OK; /* empty stays empty (Upsample) */
    /* Linear and cubic read every tap of the axes they interpolate (the
     * last two; the last three in a 5-D linear), zero weights included,
     * as ONNX Runtime's kernels do: a NaN neighbour of weight 0 makes 0 *
     * NaN = NaN, also on an axis of scale 1 (seed 11004 model 2719: a
     * bicubic resize of W alone, NaN in the row below).  Any other axis of
     * scale 1 is left as it is, as ORT leaves it (nearest's
     * tf_half_pixel_for_nn would read o + 1 rounded up; seed 95 model 587). */
    int every_tap = s->mode != MODE_NEAREST &&
                    a >= nd - (s->mode == MODE_LINEAR && nd == 5 ? 3 : 2);
    if (scale == 1.0 && in == out && !every_tap)
        return TG_OK;
    if (out == 0) { /* an empty output is legal ONNX (ORT gives it): no taps */
        if (onnx_dynamic_dims(r, *y) >> a & 1)
            r->specialized = 1; /* 0 from the traced size; another may give more */
        return onnx_slice_axis(r, *y, a, 0, 0, 1, y);
    }
    /* the scale would be infinite and every coordinate NaN (ONNX Runtime
     * refuses it too: "Input dim is zero", even when another axis is 0) */
    if (in == 0)
        return onnx_fail(r, TG_ERR_SHAPE, "axis %d has size 0: there is no element to "
                         "resize it to %lld from", a, LL(out));
    /* the taps are constants the importer makes: bounded as its others */
    if (out > ONNX_MAX_FOLD_BYTES / (ntap * (int64_t)(sizeof(int64_t) + sizeof(float))))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "resizing axis %d to %lld: its taps would "
                         "take over %lld MiB", a, LL(out), LL(ONNX_MAX_FOLD_BYTES >> 20));
    int64_t *idx = tg_malloc(sizeof *idx * (size_t)(out * ntap + 1));
    float *w = tg_malloc(sizeof *w * (size_t)(out * ntap + 1));
    tg_status st = TG_OK;
    if (!idx || !w) {
        tg_free(idx);
        tg_free(w);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for the taps of %lld outputs",
                         LL(out));
    }
    /* tap k of output o at [k * out + o] */
    int identity = in == out && !every_tap;
    for (int64_t o = 0; o < out; o++) {
        int64_t ti[4];
        double tw[4];
        if (!taps(s, o, in, out, scale, ti, tw)) {
            tg_free(idx);
            tg_free(w);
            return onnx_fail(r, TG_ERR_FORMAT, "resizing axis %d from %lld to %lld (scale "
                             "%g): output %lld's input coordinate is not a number in "
                             "range", a, LL(in), LL(out), scale, LL(o));
        }
        merge_taps(ti, tw, ntap);
        for (int k = 0; k < ntap; k++) {
            idx[k * out + o] = ti[k];
            w[k * out + o] = (float)tw[k];
            identity &= tw[k] == 0 || (tw[k] == 1 && ti[k] == o);
        }
    }
    if (!identity) {
        if (onnx_dynamic_dims(r, *y) >> a & 1)
            r->specialized = 1;
        graph_type it = {GRAPH_I64, 1, {out}};
        graph_type wt = {GRAPH_F32, (uint8_t)(nd - a), {out}};
        for (int d = 1; d < nd - a; d++)
            wt.dim[d] = 1;
        graph_gather_attrs ga = {a};
        int32_t sum = -1;
        for (int k = 0; st == TG_OK && k < ntap; k++) {
            int zero = 1;
            for (int64_t o = 0; o < out; o++)
                zero &= w[k * out + o] == 0;
            if (zero && !every_tap && (k < ntap - 1 || sum >= 0))
                continue; /* a tap no output reads (the last one kept if none is) */
            int32_t in2[2] = {*y, -1}, g, wv;
            st = onnx_const_value(r, &it, idx + k * out, &in2[1]);
            if (st == TG_OK)
                st = onnx_add(r, GRAPH_OP_gather, in2, 2, &ga, &g, 1);
            if (st == TG_OK && ntap > 1) {
                st = onnx_const_value(r, &wt, w + k * out, &wv);
                int32_t m[2] = {g, wv};
                if (st == TG_OK)
                    st = onnx_add(r, GRAPH_OP_mul, m, 2, NULL, &g, 1);
            }
            if (st == TG_OK && sum >= 0) {
                int32_t p[2] = {sum, g};
                st = onnx_add(r, GRAPH_OP_add, p, 2, NULL, &g, 1);
            }
            sum = g;
        }
        if (st == TG_OK)
            *y = sum;
    }
    tg_free(idx);
    tg_free(w);
    return st;
}

/*
 * Resize's sizes (input 3) or scales (input 2) for x (type xt): out and
 * scale per axis.  A size computed from a dynamic dim, or a number for a
 * dynamic dim of x (whose identity map at the traced size adds no node),
 * fixes the node at the traced sizes (r->specialized), unless the size is
 * that same dim of x (sizes = concat(x.shape[:2], [2*H, 2*W]) as PyTorch
 * exports it): that axis maps to itself at every size.
 */
static tg_status out_sizes(onnx_reader *r, int32_t x, const graph_type *xt, int64_t *out,
                           double *scale)
{
    int nd = xt->ndim;
    if (onnx_has_input(r, 3)) {
        graph_ints sz;
        int8_t sym[GRAPH_MAX_DIMS];
        tg_status st = onnx_shape_ints(r, 3, "sizes", &sz, sym, GRAPH_MAX_DIMS);
        if (st != TG_OK)
            return st;
        uint32_t dyn = onnx_dynamic_dims(r, x);
        for (int d = 0; d < sz.n && d < nd; d++) /* a known size of a dynamic dim too */
            if (sym[d] == ONNX_SYM_DERIVED || sym[d] != onnx_dim_mark(r, x, dyn, d))
                r->specialized = 1;
        if (onnx_has_input(r, 2)) {
            const onnx_entry *e;
            st = onnx_const_input(r, 2, "scales", &e);
            if (st == TG_OK && graph_type_numel(&e->type) != 0)
                return onnx_fail(r, TG_ERR_FORMAT, "both scales and sizes are given");
        }
        if (sz.n != nd)
            return onnx_fail(r, TG_ERR_FORMAT, "sizes has %d entries for %d dims", sz.n, nd);
        for (int d = 0; d < nd; d++) {
            if (sz.v[d] < 0 || sz.v[d] > ((int64_t)1 << 31))
                return onnx_fail(r, TG_ERR_FORMAT, "sizes[%d] = %lld is not in 0..2^31", d,
                                 LL(sz.v[d]));
            /* its scale would be 0, which ONNX Runtime refuses ("Scale value
             * should be greater than 0"): only an empty axis stays empty */
            if (sz.v[d] == 0 && xt->dim[d] != 0)
                return onnx_fail(r, TG_ERR_FORMAT, "sizes[%d] = 0 from %lld: a scale of 0 "
                                 "(an empty axis stays empty; scales whose floor is 0 "
                                 "empty one)", d, LL(xt->dim[d]));
            out[d] = sz.v[d];
            scale[d] = (double)out[d] / (double)xt->dim[d];
        }
        return TG_OK;
    }
    const onnx_entry *e;
    tg_status st = onnx_has_input(r, 2) ? onnx_const_input(r, 2, "scales", &e)
                                        : onnx_fail(r, TG_ERR_FORMAT, "neither scales nor "
                                                    "sizes is given");
    if (st != TG_OK)
        return st;
    if (e->type.dtype != GRAPH_F32 || graph_type_numel(&e->type) != nd)
        return onnx_fail(r, TG_ERR_FORMAT, "scales must be %d floats", nd);
    for (int d = 0; d < nd; d++) {
        double sc = ((const float *)e->data)[d];
        double o = floor((double)xt->dim[d] * sc);
        /* negated: an infinite scale of an empty dim gives NaN, refused too */
        if (!(sc > 0) || !(o <= (double)((int64_t)1 << 31)))
            return onnx_fail(r, TG_ERR_FORMAT, "scales[%d] = %g gives %g elements from %lld",
                             d, sc, o, LL(xt->dim[d]));
        out[d] = (int64_t)o;
        scale[d] = sc;
    }
    return TG_OK;
}

/*
 * Upsample (opsets 7 to 9, deprecated by Resize): nearest only, scales
 * >= 1 as its spec says (ONNX Runtime's kernel refuses less too; only its
 * shape inference lets a Shape of such an output through; an attribute
 * before opset 9, input 1 from 9), as Resize with
 * asymmetric coordinates and nearest_mode floor: output o reads input
 * floor(o / scale), the reference's np.repeat for whole scales.
 */
static tg_status upsample_spec(onnx_reader *r, const graph_type *xt, resize_spec *s,
                               int64_t *out, double *scale)
{
    char mode[16];
    tg_status st = onnx_attr_str(r, "mode", "nearest", mode, sizeof mode);
    if (st == TG_OK && strcmp(mode, "nearest"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "Upsample mode '%s' is not supported (only "
                         "nearest; Resize has linear)", mode);
    s->mode = MODE_NEAREST;
    s->coord = CT_ASYMMETRIC;
    s->nearest = NM_FLOOR;
    int nd = xt->ndim;
    float sc[GRAPH_MAX_DIMS];
    if (r->opset >= 9) {
        const onnx_entry *e;
        if (st == TG_OK)
            st = onnx_const_input(r, 1, "scales", &e);
        if (st == TG_OK && (e->type.dtype != GRAPH_F32 || graph_type_numel(&e->type) != nd))
            st = onnx_fail(r, TG_ERR_FORMAT, "scales must be %d floats", nd);
        if (st == TG_OK)
            memcpy(sc, e->data, sizeof(float) * (size_t)nd);
    } else {
        const Onnx__AttributeProto *a = onnx_attr(r, "scales");
        if (st == TG_OK && (!a || (int)a->n_floats != nd))
            st = onnx_fail(r, TG_ERR_FORMAT, "the scales attribute must be %d floats", nd);
        for (int d = 0; st == TG_OK && d < nd; d++)
            sc[d] = a->floats[d];
    }
    for (int d = 0; st == TG_OK && d < nd; d++) {
        double o = floor((double)xt->dim[d] * sc[d]);
        if (!(sc[d] >= 1) || !(o <= (double)((int64_t)1 << 31)))
            return onnx_fail(r, TG_ERR_FORMAT, "Upsample scales[%d] = %g: Upsample-%lld "
                             "takes scales >= 1 only (Resize downsamples)", d, sc[d],
                             LL(r->opset < 9 ? 7 : 9));
        out[d] = (int64_t)o;
        scale[d] = sc[d];
    }
    return st;
}

tg_status onnx_cv_resize(onnx_reader *r, const onnx_op *op)
{
    resize_spec s = {0};
    int32_t x;
    int64_t out[GRAPH_MAX_DIMS];
    double scale[GRAPH_MAX_DIMS];
    int upsample = !strcmp(op->name, "Upsample");
    if (upsample && r->opset >= 10)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "Upsample is deprecated at opset %lld (Resize "
                         "replaces it)", LL(r->opset));
    if (!upsample && r->opset < 11)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "Resize below opset 11 is not supported");
    tg_status st = upsample ? TG_OK : read_spec(r, &s);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    const graph_type *xt = onnx_vtype(r, x);
    if (upsample) {
        graph_type x0 = *xt;
        st = upsample_spec(r, &x0, &s, out, scale);
        for (int d = x0.ndim - 1; st == TG_OK && d >= 0; d--)
            st = resize_axis(r, &s, &x, d, out[d], scale[d]);
        return st == TG_OK ? onnx_bind(r, 0, x) : st;
    }
    if (s.mode != MODE_NEAREST && xt->dtype != GRAPH_F32)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "%s resize of %s is not supported",
                         s.mode == MODE_LINEAR ? "linear" : "cubic",
                         graph_dtype_name(xt->dtype));
    graph_type x0 = *xt; /* onnx_add may move the value table */
    st = out_sizes(r, x, &x0, out, scale);
    /* the axes resized to 0 first (the gathers after them move nothing),
     * then the last axes first: the gathers there move the smallest blocks */
    for (int d = 0; st == TG_OK && d < x0.ndim; d++)
        if (out[d] == 0)
            st = resize_axis(r, &s, &x, d, 0, scale[d]);
    for (int d = x0.ndim - 1; st == TG_OK && d >= 0; d--)
        if (out[d] != 0)
            st = resize_axis(r, &s, &x, d, out[d], scale[d]);
    return st == TG_OK ? onnx_bind(r, 0, x) : st;
}
