/*
 * ops_nn.c - the generator's convolutions, pools, Resize, Upsample and
 * Einsum (ops.h): 1-D, 2-D and 3-D, with pads, strides, dilations, groups,
 * auto_pad and ceil_mode in the ranges of the ONNX operator spec.
 */
#include "ops.h"

#include <stdio.h>
#include <string.h>

static const char *const auto_pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};

/* Window geometry of one spatial dim. */
typedef struct win {
    int64_t k, s, d, pb, pe; /* kernel, stride, dilation, pads */
} win;

/* Conv (arg 0) or ConvTranspose (arg 1). */
int df_gen_conv(df_gen *g, df_cur *x, int arg)
{
    int tr = arg == 1;
    int sp = df_chance(g, 50) ? 2 : df_chance(g, 50) ? 1 : 3;
    int reuse = x->name[0] && x->dtype == DF_F32 && x->nd >= 3 && x->nd <= 5;
    if (reuse)
        sp = x->nd - 2;
    int64_t C = reuse ? x->dims[1] : 0, G = 1;
    if (reuse) {
        if (C > 1 && df_chance(g, 30))
            G = C;
    } else {
        G = df_chance(g, 60) ? 1 : df_range(g, 2, 3);
        C = G * df_range(g, 1, 3);
    }
    if (C == 0) /* ONNX Runtime leaves a convolution over 0 channels unwritten (or hangs) */
        return -1;
    int64_t mg = df_range(g, 1, 3), M = G * mg;
    int ap = df_chance(g, 80) ? 0 : df_range(g, 1, 3);
    win w[3];
    int64_t in[5], out[5], wd[5];
    in[0] = reuse ? x->dims[0] : df_dim(g, 2, 0);
    in[1] = C;
    for (int i = 0; i < sp; i++) {
        w[i].k = df_range(g, 1, 3);
        w[i].s = df_chance(g, 60) ? 1 : df_range(g, 2, 3);
        w[i].d = df_chance(g, 70) ? 1 : 2;
        w[i].pb = df_chance(g, 50) ? 0 : df_range(g, 1, 2);
        w[i].pe = df_chance(g, 50) ? 0 : df_range(g, 1, 2);
        if (g->edge && df_chance(g, 30))
            w[i].pb = df_range(g, 3, 6);
        int64_t span = w[i].d * (w[i].k - 1) + 1;
        int64_t s = reuse ? x->dims[2 + i] : df_range(g, 1, 5) + (tr ? 0 : span - 1);
        if (!tr && s + w[i].pb + w[i].pe < span) {
            w[i].k = w[i].d = 1;
            span = 1;
        }
        in[2 + i] = s;
        if (tr && (ap == 1 || ap == 2) && w[i].s > span) {
            ap = 0; /* SAME needs a negative total pad: ORT takes it as 0, one short */
            i = -1; /* the dims before with explicit pads */
            continue;
        }
        if (tr) {
            int64_t full = w[i].s * (s - 1) + span;
            if (w[i].pb + w[i].pe >= full)
                w[i].pb = w[i].pe = 0;
            out[2 + i] = ap == 1 || ap == 2 ? s * w[i].s : full - (ap ? 0 : w[i].pb + w[i].pe);
        } else if (ap == 1 || ap == 2) {
            out[2 + i] = (s + w[i].s - 1) / w[i].s;
        } else {
            int64_t padded = s + (ap ? 0 : w[i].pb + w[i].pe);
            out[2 + i] = padded >= span ? (padded - span) / w[i].s + 1 : 0;
            if (padded < span && ap) {
                ap = 0; /* VALID would leave nothing: explicit pads, from the start */
                i = -1;
            }
        }
    }
    out[0] = in[0];
    out[1] = M;
    wd[0] = tr ? C : M;
    wd[1] = tr ? mg : C / G;
    for (int i = 0; i < sp; i++)
        wd[2 + i] = w[i].k;
    if (g->invalid) {
        wd[1] += 1;
        g->m->invalid = 1;
    }
    if (!reuse)
        df_input(g, x, DF_F32, sp + 2, in, 1);
    char wn[DF_NAME], bn[DF_NAME];
    if (df_chance(g, 85)) {
        df_init(g, wn, DF_F32, sp + 2, wd, NULL);
    } else {
        df_cur y;
        df_input(g, &y, DF_F32, sp + 2, wd, 0);
        memcpy(wn, y.name, DF_NAME);
    }
    const char *ins[3] = {x->name, wn, bn};
    int nin = 2;
    if (df_chance(g, 50)) {
        df_init(g, bn, DF_F32, 1, &M, NULL);
        nin = 3;
    }
    df_node *n = df_node_new(g, tr ? "ConvTranspose" : "Conv", nin, ins, 1);
    int64_t v[3];
    if (df_chance(g, 60)) {
        for (int i = 0; i < sp; i++)
            v[i] = w[i].k;
        df_attr_ints(n, "kernel_shape", sp, v);
    }
    int strided = 0, dilated = 0, padded = 0;
    for (int i = 0; i < sp; i++) {
        strided |= w[i].s != 1;
        dilated |= w[i].d != 1;
        padded |= w[i].pb || w[i].pe;
    }
    if (strided || df_chance(g, 20)) {
        for (int i = 0; i < sp; i++)
            v[i] = w[i].s;
        df_attr_ints(n, "strides", sp, v);
    }
    if (dilated || df_chance(g, 20)) {
        for (int i = 0; i < sp; i++)
            v[i] = w[i].d;
        df_attr_ints(n, "dilations", sp, v);
    }
    if (ap) {
        df_attr_s(n, "auto_pad", auto_pads[ap]);
    } else if (padded || df_chance(g, 20)) {
        int64_t p[6];
        for (int i = 0; i < sp; i++) {
            p[i] = w[i].pb;
            p[sp + i] = w[i].pe;
        }
        df_attr_ints(n, "pads", 2 * sp, p);
    }
    if (G > 1 || df_chance(g, 10))
        df_attr_i(n, "group", G);
    if (tr && strided && !ap && df_chance(g, 30)) { /* output_padding below the stride */
        for (int i = 0; i < sp; i++) {
            v[i] = df_range(g, 0, (int)w[i].s - 1);
            out[2 + i] += v[i];
        }
        df_attr_ints(n, "output_padding", sp, v);
    }
    for (int i = 0; i < sp + 2; i++)
        if (out[i] < 0)
            return -1;
    df_set(x, n, 0, DF_F32, sp + 2, out, x->dyn);
    return g->m->invalid ? -1 : 0;
}

/* MaxPool or AveragePool, drawn. */
int df_gen_pool(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int avg = df_chance(g, 50), opset = g->m->opset;
    int sp = df_chance(g, 50) ? 2 : df_chance(g, 50) ? 1 : 3;
    int reuse = x->name[0] && x->dtype == DF_F32 && x->nd >= 3 && x->nd <= 5;
    if (reuse)
        sp = x->nd - 2;
    int ceil_mode = opset >= 10 && df_chance(g, 30);
    int can_dilate = avg ? opset >= 19 : opset >= 10;
    int ap = df_chance(g, 85) ? 0 : df_range(g, 1, 3), dropped = 0;
    if (ap && ceil_mode)
        ap = 0;
    win w[3];
    int64_t in[5], out[5];
    in[0] = reuse ? x->dims[0] : df_dim(g, 2, 0);
    in[1] = reuse ? x->dims[1] : df_range(g, 1, 3);
    for (int i = 0; i < sp; i++) {
        w[i].k = df_range(g, 1, 3);
        w[i].s = df_chance(g, 50) ? 1 : df_range(g, 2, 3);
        w[i].d = can_dilate && df_chance(g, 25) ? 2 : 1;
        if (ap == 1 || ap == 2) /* ORT pads a SAME pool as if undilated (a D of 9 gives 7) */
            w[i].d = 1;
        /* a stride over the window makes SAME's total pad negative: ORT
         * refuses that in 2-D and shifts the 3-D window by it (W 3, k 1, s 3
         * reads column 1) */
        if ((ap == 1 || ap == 2) && w[i].s > w[i].k)
            w[i].s = w[i].k;
        w[i].pb = w[i].k > 1 && df_chance(g, 40) ? df_range(g, 0, (int)w[i].k - 1) : 0;
        w[i].pe = w[i].k > 1 && df_chance(g, 40) ? df_range(g, 0, (int)w[i].k - 1) : 0;
        int64_t span = w[i].d * (w[i].k - 1) + 1;
        int64_t s = reuse ? x->dims[2 + i] : df_range(g, 1, 5) + span - 1;
        if (s + w[i].pb + w[i].pe < span) {
            w[i].k = w[i].d = 1;
            w[i].pb = w[i].pe = 0;
            span = 1;
        }
        in[2 + i] = s;
        if (ap == 1 || ap == 2) {
            out[2 + i] = (s + w[i].s - 1) / w[i].s;
        } else if (ap == 3) {
            out[2 + i] = s >= span ? (s - span) / w[i].s + 1 : 0;
        } else {
            int64_t padded = s + w[i].pb + w[i].pe - span;
            int64_t o = (ceil_mode ? (padded + w[i].s - 1) / w[i].s : padded / w[i].s) + 1;
            if (ceil_mode && (o - 1) * w[i].s >= s + w[i].pb) {
                o--; /* the last window would start in the end padding */
                dropped = 1;
            }
            out[2 + i] = o;
        }
    }
    out[0] = in[0];
    out[1] = in[1];
    if (!reuse)
        df_input(g, x, DF_F32, sp + 2, in, 1);
    const char *ins[1] = {x->name};
    df_node *n = df_node_new(g, avg ? "AveragePool" : "MaxPool", 1, ins, 1);
    int64_t v[6];
    for (int i = 0; i < sp; i++)
        v[i] = w[i].k;
    if (g->invalid) {
        v[0] = 0;
        g->m->invalid = 1;
    }
    df_attr_ints(n, "kernel_shape", sp, v);
    int strided = 0, dilated = 0, padded = 0;
    for (int i = 0; i < sp; i++) {
        strided |= w[i].s != 1;
        dilated |= w[i].d != 1;
        padded |= w[i].pb || w[i].pe;
    }
    if (strided || df_chance(g, 20)) {
        for (int i = 0; i < sp; i++)
            v[i] = w[i].s;
        df_attr_ints(n, "strides", sp, v);
    }
    if (dilated) {
        for (int i = 0; i < sp; i++)
            v[i] = w[i].d;
        df_attr_ints(n, "dilations", sp, v);
    }
    if (ap) {
        df_attr_s(n, "auto_pad", auto_pads[ap]);
    } else if (padded) {
        for (int i = 0; i < sp; i++) {
            v[i] = w[i].pb;
            v[sp + i] = w[i].pe;
        }
        df_attr_ints(n, "pads", 2 * sp, v);
    }
    if (ceil_mode)
        df_attr_i(n, "ceil_mode", 1);
    if (avg && df_chance(g, 40))
        df_attr_i(n, "count_include_pad", df_rnd(g, 2));
    /* ONNX's shape inference, which ORT runs at load, keeps that window
     * (its kernels drop it, as ours): no node after it, whose shapes
     * would disagree with ORT's inference */
    for (int i = 2; i < sp + 2; i++)
        if (out[i] <= 0 || dropped)
            return -1;
    df_set(x, n, 0, DF_F32, sp + 2, out, x->dyn);
    return g->m->invalid ? -1 : 0;
}

int df_gen_global_pool(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    df_need(g, x, DF_F32, 3, 5);
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, "GlobalAveragePool", 1, in, 1);
    int64_t o[5];
    memcpy(o, x->dims, sizeof o);
    for (int i = 2; i < x->nd; i++)
        o[i] = 1;
    df_set(x, n, 0, DF_F32, x->nd, o, x->dyn);
    return 0;
}

/* Resize (arg 0; opset 11+) or Upsample (arg 1; opsets 7-9). */
int df_gen_resize(df_gen *g, df_cur *x, int arg)
{
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn",
                                         "half_pixel_symmetric", "tf_crop_and_resize"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    static const float sc[] = {0.5f, 0.75f, 1.0f, 1.5f, 2.0f, 3.0f, 0.6f};
    int mode = df_rnd(g, arg ? 2 : 3); /* nearest, linear, cubic */
    int nd = mode == 0 ? df_range(g, 1, 4) : mode == 1 && df_chance(g, 20) ? 5 : 4;
    if (mode && df_chance(g, 20))
        nd = 2;
    df_need(g, x, DF_F32, nd, nd);
    float scales[DF_MAX_DIMS];
    int64_t o[DF_MAX_DIMS], sizes[DF_MAX_DIMS];
    int use_sizes = !arg && df_chance(g, 40);
    int nc = g->m->opset >= 19 ? 6 : 5;
    int c = df_chance(g, 2) ? 6 : df_rnd(g, nc);
    if (c == 4 && (mode || g->m->opset >= 20))
        c = 0; /* tf_half_pixel_for_nn: nearest only, and gone in opset 20 */
    int whole = 1;
    for (int k = 0; k < nd; k++) {
        int fixed = (mode && nd >= 4 && k < 2) || (k == 0 && x->dyn);
        scales[k] = fixed ? 1.0f : sc[df_rnd(g, 7)];
        o[k] = (int64_t)((float)x->dims[k] * scales[k]);
        whole &= (float)o[k] == (float)x->dims[k] * scales[k];
        sizes[k] = fixed ? x->dims[k] : df_range(g, 1, 7);
        if (use_sizes)
            o[k] = sizes[k];
    }
    /* The resized length of align_corners, pytorch_half_pixel and
     * half_pixel_symmetric is in * scale in ONNX's reference (ours too),
     * the output size in ONNX Runtime: they differ where scales do not
     * give whole sizes, and such models are not drawn. */
    if (!arg && !whole && !use_sizes && (c == 1 || c == 2 || c == 5)) {
        use_sizes = 1;
        for (int k = 0; k < nd; k++)
            sizes[k] = o[k];
    }
    if (g->invalid) {
        scales[nd - 1] = -1.0f;
        use_sizes = 0;
        g->m->invalid = 1;
    }
    const char *in[4] = {x->name, "", "", ""};
    char rn[DF_NAME], sn[DF_NAME];
    df_node *n;
    if (arg) {
        if (g->m->opset >= 9) {
            int64_t d = nd;
            df_init(g, sn, DF_F32, 1, &d, scales);
            in[1] = sn;
            n = df_node_new(g, "Upsample", 2, in, 1);
        } else {
            n = df_node_new(g, "Upsample", 1, in, 1);
            df_attr_floats(n, "scales", nd, scales);
        }
        if (mode || df_chance(g, 30))
            df_attr_s(n, "mode", mode ? "linear" : "nearest");
        df_set(x, n, 0, DF_F32, nd, o, x->dyn);
        x->ties |= mode != 0;
        return g->m->invalid ? -1 : 0;
    }
    if (g->m->opset < 13) { /* roi is a required input before 13 */
        int64_t z = 0;
        df_init(g, rn, DF_F32, 1, &z, NULL);
        in[1] = rn;
    }
    int64_t d = nd;
    if (use_sizes) {
        df_init_i64(g, sn, nd, sizes);
        if (g->m->opset < 13) { /* scales empty, not omitted */
            static char en[DF_NAME];
            int64_t z = 0;
            df_init(g, en, DF_F32, 1, &z, NULL);
            in[2] = en;
        }
        in[3] = sn;
        n = df_node_new(g, "Resize", 4, in, 1);
    } else {
        df_init(g, sn, DF_F32, 1, &d, scales);
        in[2] = sn;
        n = df_node_new(g, "Resize", 3, in, 1);
    }
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    if (mode || df_chance(g, 30))
        df_attr_s(n, "mode", modes[mode]);
    if (c || df_chance(g, 30))
        df_attr_s(n, "coordinate_transformation_mode", coords[c]);
    if (mode == 0 && df_chance(g, 50)) {
        /* half_pixel_symmetric with floor or ceil: a coordinate that is
         * whole in exact arithmetic (1.0 for 3 -> 1, ONNX's reference and
         * ours read element 1) comes out of ORT's float arithmetic just
         * below it (element 0: seeds 11006/455, 96/1946); not drawn */
        int nm = df_rnd(g, 4);
        df_attr_s(n, "nearest_mode", nearest[c == 5 && nm >= 2 ? nm - 2 : nm]);
    }
    if (mode == 2 && df_chance(g, 50))
        df_attr_f(n, "cubic_coeff_a", df_chance(g, 50) ? -0.5f : -0.75f);
    if (mode == 2 && df_chance(g, 30))
        df_attr_i(n, "exclude_outside", 1);
    for (int k = 0; k < nd; k++)
        if (o[k] <= 0 && !use_sizes)
            return -1;
    df_set(x, n, 0, DF_F32, nd, o, x->dyn);
    x->ties |= mode != 0;
    return g->m->invalid ? -1 : 0;
}

int df_gen_einsum(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int64_t size[26];
    int nl = df_range(g, 2, 5), nops = df_range(g, 1, 3), count[26] = {0};
    for (int i = 0; i < nl; i++)
        size[i] = df_dim(g, 4, 1);
    char eq[128], *p = eq, terms[3][8];
    int rank[3];
    int ell = df_chance(g, 15), ell_nd = df_range(g, 1, 2);
    int64_t ell_dims[2] = {df_range(g, 1, 3), df_range(g, 1, 3)};
    for (int t = 0; t < nops; t++) {
        rank[t] = df_range(g, t == 0 ? 1 : 0, 3);
        for (int k = 0; k < rank[t]; k++) {
            int l = df_rnd(g, nl);
            /* a letter twice in a term (a diagonal) only sometimes */
            for (int j = 0; j < k && df_chance(g, 85); j++)
                if (terms[t][j] == 'a' + l) {
                    l = df_rnd(g, nl);
                    j = -1;
                }
            terms[t][k] = (char)('a' + l);
            count[l]++;
        }
        terms[t][rank[t]] = 0;
        p += sprintf(p, "%s%s%s", t ? "," : "", ell ? "..." : "", terms[t]);
    }
    int64_t o[DF_MAX_DIMS];
    int r = 0;
    if (ell)
        for (int k = 0; k < ell_nd; k++)
            o[r++] = ell_dims[k];
    if (df_chance(g, 75)) { /* explicit output: some letters once each */
        p += sprintf(p, "->%s", ell ? "..." : "");
        for (int l = 0; l < nl; l++)
            if (count[l] && df_chance(g, 50) && r < DF_MAX_DIMS) {
                *p++ = (char)('a' + l);
                o[r++] = size[l];
            }
        *p = 0;
        if (g->invalid && r > 0) {
            p[0] = p[-1]; /* a letter twice in the output */
            p[1] = 0;
            g->m->invalid = 1;
        }
    } else { /* implicit: the letters seen once, in order */
        for (int l = 0; l < nl; l++)
            if (count[l] == 1 && r < DF_MAX_DIMS)
                o[r++] = size[l];
    }
    char names[3][DF_NAME];
    const char *in[3];
    for (int t = 0; t < nops; t++) {
        int64_t d[DF_MAX_DIMS];
        int nd = 0;
        if (ell)
            for (int k = 0; k < ell_nd; k++)
                d[nd++] = t && df_chance(g, 30) ? 1 : ell_dims[k];
        for (int k = 0; k < rank[t]; k++)
            d[nd++] = size[terms[t][k] - 'a'];
        df_cur y;
        df_input(g, &y, DF_F32, nd, d, 0);
        memcpy(names[t], y.name, DF_NAME);
        in[t] = names[t];
    }
    df_node *n = df_node_new(g, "Einsum", nops, in, 1);
    df_attr_s(n, "equation", eq);
    df_set(x, n, 0, DF_F32, r, o, 0);
    return g->m->invalid ? -1 : 0;
}
