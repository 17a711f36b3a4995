/*
 * ops.c - the generator's op table (gen.h) and the generators of the
 * elementwise, matrix, reduction and normalization ops; the data-movement
 * ops are in ops_shape.c, convolutions, pools, Resize and Einsum in
 * ops_nn.c.  Attribute ranges follow the ONNX operator spec
 * (onnx/docs/Operators.md) at the opset the model declares.
 */
#include "ops.h"

#include <string.h>

/* Random broadcastable partner shape of x: rank <= x's, each dim x's or 1. */
void df_bcast_shape(df_gen *g, const df_cur *x, int *nd, int64_t *d, int *dyn)
{
    *nd = df_chance(g, 25) ? df_range(g, 0, x->nd) : x->nd;
    int off = x->nd - *nd;
    for (int k = 0; k < *nd; k++)
        d[k] = df_chance(g, 25) ? 1 : x->dims[off + k];
    *dyn = 0;
    if (*nd == x->nd && x->dyn && d[0] == x->dims[0])
        *dyn = 1;
    if (g->invalid && *nd > 0 && x->dims[off] > 1) { /* a mismatch: not broadcastable */
        d[0] = x->dims[off] + 1;
        *dyn = 0;
        g->m->invalid = 1;
    }
}

/* ONNX Runtime reduces a tensor of 0 elements to its own shape (the
 * reduced dims neither 1 nor gone; ArgMax and ArgMin too): not ours to
 * judge, so x becomes a fresh input with elements.  1 if none was drawn. */
int df_nonempty(df_gen *g, df_cur *x, int dtype)
{
    for (int t = 0; t < 4 && df_numel_cur(x) == 0; t++)
        df_input_rand(g, x, dtype, df_range(g, 1, 4), 4);
    return df_numel_cur(x) == 0;
}

/* Broadcast result of x and a partner of nd dims d. */
static void bcast_out(const df_cur *x, int nd, const int64_t *d, df_cur *out)
{
    *out = *x;
    int r = x->nd > nd ? x->nd : nd;
    for (int k = 0; k < r; k++) {
        int i = k - (r - x->nd), j = k - (r - nd);
        int64_t a = i >= 0 ? x->dims[i] : 1, b = j >= 0 ? d[j] : 1;
        out->dims[k] = a == 1 ? b : a;
    }
    out->nd = r;
    out->dyn = x->dyn && r == x->nd;
}

/* ---- elementwise ---- */

static const char *const unary_f32[] = {
    "Neg", "Abs", "Sign", "Floor", "Ceil", "Exp", "Log", "Sqrt", "Reciprocal", "Relu",
    "Sigmoid", "Tanh", "Softplus", "Softsign", "Identity", "Erf", "Round", "HardSwish",
};
static const int unary_since[] = {7, 7, 9, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 9, 11, 14};

static int gen_unary(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int nu = (int)(sizeof unary_f32 / sizeof *unary_f32), k;
    do
        k = df_rnd(g, nu);
    while (unary_since[k] > g->m->opset);
    /* Neg, Abs, Sign, Relu (14+), Identity on integers too */
    int dt = DF_F32;
    if ((k <= 2 || k == 14 || (k == 9 && g->m->opset >= 14)) && df_chance(g, 25))
        dt = df_chance(g, 50) ? DF_I64 : DF_I32;
    df_need(g, x, dt, 0, 4);
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, unary_f32[k], 1, in, 1);
    df_set(x, n, 0, x->dtype, x->nd, x->dims, x->dyn);
    return 0;
}

/* The activations with attributes: arg unused, one drawn. */
static int gen_act(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    static const char *const ops[] = {"LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu",
                                      "HardSigmoid", "Gelu", "Dropout"};
    static const int since[] = {7, 7, 7, 12, 10, 7, 20, 7};
    int k;
    do
        k = df_rnd(g, 8);
    while (since[k] > g->m->opset);
    df_need(g, x, DF_F32, 0, 4);
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, ops[k], 1, in, 1);
    float a = df_unif(g, 0.05f, 2.0f);
    switch (k) {
    case 0: case 1: case 4:
        if (df_chance(g, 70))
            df_attr_f(n, "alpha", a);
        break;
    case 2:
        if (df_chance(g, 50))
            df_attr_f(n, "alpha", a);
        if (df_chance(g, 50))
            df_attr_f(n, "gamma", df_unif(g, 0.5f, 2.0f));
        break;
    case 3:
        df_attr_f(n, "alpha", g->invalid ? 0.0f : a); /* alpha 0 divides by zero */
        g->m->invalid |= g->invalid;
        break;
    case 5:
        df_attr_f(n, "alpha", a);
        df_attr_f(n, "beta", df_unif(g, 0.0f, 1.0f));
        break;
    case 6:
        if (df_chance(g, 50))
            df_attr_s(n, "approximate", g->invalid ? "fast" : df_chance(g, 50) ? "tanh" : "none");
        g->m->invalid |= g->invalid;
        break;
    default:
        if (g->m->opset < 12 && df_chance(g, 50))
            df_attr_f(n, "ratio", df_unif(g, 0.0f, 0.9f));
        break;
    }
    df_set(x, n, 0, DF_F32, x->nd, x->dims, x->dyn);
    return 0;
}

static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
                                         "Sum", "Mean", "PRelu", "Mod"};

/* arg: index into binary_ops (-1: drawn). */
static int gen_binary(df_gen *g, df_cur *x, int arg)
{
    int k = arg >= 0 ? arg : df_rnd(g, 9);
    int dt = DF_F32;
    /* integers: Add..Div from 7, Max and Min from 12, Mod (ONNX's type constraints) */
    if (k <= 3 || ((k == 5 || k == 6) && g->m->opset >= 12) || k == 10)
        dt = df_chance(g, 25) ? (df_chance(g, 50) ? DF_I64 : DF_I32) : DF_F32;
    if (k == 10 && g->m->opset < 10)
        return -1;
    df_need(g, x, dt, 0, 4);
    int nd, dyn;
    int64_t d[DF_MAX_DIMS];
    df_bcast_shape(g, x, &nd, d, &dyn);
    if (k == 9 && g->m->opset < 9) /* PRelu: unidirectional broadcast from 9 on only */
        nd = 0;
    if (k >= 5 && k <= 8 && g->m->opset < 8 && !g->m->invalid) { /* Max..Mean: no broadcast before 8 */
        nd = x->nd;
        memcpy(d, x->dims, sizeof d);
        dyn = x->dyn;
    }
    df_cur y, out;
    if (df_chance(g, 30)) { /* the partner a constant */
        df_init(g, y.name, dt, nd, d, NULL);
    } else {
        df_input(g, &y, dt, nd, d, dyn);
    }
    if (dt != DF_F32 && (k == 3 || k == 10)) { /* integer division: no zero divisor */
        df_val *v = &g->m->val[g->m->nvals - 1];
        for (int64_t i = 0; i < df_numel(v); i++) {
            if (dt == DF_I64 && ((int64_t *)v->data)[i] == 0)
                ((int64_t *)v->data)[i] = 3;
            if (dt == DF_I32 && ((int32_t *)v->data)[i] == 0)
                ((int32_t *)v->data)[i] = -2;
        }
        if (v->alt)
            for (int64_t i = 0; i < df_numel(v) / v->dims[0] * g->m->alt_n; i++) {
                if (dt == DF_I64 && ((int64_t *)v->alt)[i] == 0)
                    ((int64_t *)v->alt)[i] = 3;
                if (dt == DF_I32 && ((int32_t *)v->alt)[i] == 0)
                    ((int32_t *)v->alt)[i] = -2;
            }
    }
    const char *in[2] = {x->name, y.name};
    int swap = k != 9 && !(dt != DF_F32 && (k == 3 || k == 10)) && df_chance(g, 30);
    if (swap) {
        in[0] = y.name;
        in[1] = x->name;
    }
    if (k == 9 && nd > x->nd)
        nd = x->nd;
    df_node *n = df_node_new(g, binary_ops[k], 2, in, 1);
    if (k == 10 && (dt == DF_F32 || df_chance(g, 50)))
        df_attr_i(n, "fmod", dt == DF_F32 ? 1 : df_rnd(g, 2));
    bcast_out(x, nd, d, &out);
    df_set(x, n, 0, dt, out.nd, out.dims, out.dyn);
    return 0;
}

/* Comparisons and logic: Equal, Less, Greater, LessOrEqual, GreaterOrEqual,
 * And, Or, Xor, Not. */
static int gen_compare(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    static const char *const ops[] = {"Equal", "Less", "Greater", "LessOrEqual",
                                      "GreaterOrEqual", "And", "Or", "Xor", "Not"};
    int k = df_rnd(g, 9);
    if (k == 3 || k == 4) {
        if (g->m->opset < 12)
            k = 1;
    }
    /* Less and Greater take integers from opset 9 on */
    int dt = k >= 5 ? DF_BOOL : (k == 0 || g->m->opset >= 9) && df_chance(g, 30) ? DF_I64 : DF_F32;
    if (k == 0 && g->m->opset < 11) /* Equal takes floats from opset 11 on */
        dt = DF_I64;
    df_need(g, x, dt, 0, 4);
    if (k == 8) {
        const char *in[1] = {x->name};
        df_node *n = df_node_new(g, ops[k], 1, in, 1);
        df_set(x, n, 0, DF_BOOL, x->nd, x->dims, x->dyn);
        return 0;
    }
    int nd, dyn;
    int64_t d[DF_MAX_DIMS];
    df_bcast_shape(g, x, &nd, d, &dyn);
    df_cur y, out;
    df_input(g, &y, dt, nd, d, dyn);
    const char *in[2] = {x->name, y.name};
    df_node *n = df_node_new(g, ops[k], 2, in, 1);
    bcast_out(x, nd, d, &out);
    df_set(x, n, 0, DF_BOOL, out.nd, out.dims, out.dyn);
    return 0;
}

static int gen_where(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int dt = df_chance(g, 25) ? DF_I64 : DF_F32;
    df_need(g, x, dt, 0, 4);
    int nd, dyn;
    int64_t d[DF_MAX_DIMS];
    df_cur c, y, o1, o2;
    df_bcast_shape(g, x, &nd, d, &dyn);
    df_input(g, &c, DF_BOOL, nd, d, dyn);
    bcast_out(x, nd, d, &o1);
    df_bcast_shape(g, x, &nd, d, &dyn);
    df_input(g, &y, dt, nd, d, dyn);
    bcast_out(&o1, nd, d, &o2);
    const char *in[3] = {c.name, x->name, y.name};
    if (df_chance(g, 50)) {
        in[1] = y.name;
        in[2] = x->name;
    }
    df_node *n = df_node_new(g, "Where", 3, in, 1);
    df_set(x, n, 0, dt, o2.nd, o2.dims, o2.dyn);
    return 0;
}

static int gen_clip(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int dt = g->m->opset >= 12 && df_chance(g, 25) ? DF_I64 : DF_F32;
    df_need(g, x, dt, 0, 4);
    float lo = df_unif(g, -2.0f, 0.5f), hi = df_unif(g, -0.5f, 2.0f);
    if (dt == DF_I64) {
        lo = (float)df_range(g, -3, 1);
        hi = (float)df_range(g, -1, 3);
    }
    const char *in[3] = {x->name, "", ""};
    char cmin[DF_NAME], cmax[DF_NAME];
    int nin = 1, has_min = df_chance(g, 70), has_max = df_chance(g, 70);
    if (g->m->opset >= 11) {
        if (has_min) {
            if (dt == DF_F32)
                df_init_f32(g, cmin, lo);
            else
                df_init_i64(g, cmin, -1, (int64_t[]){(int64_t)lo});
            in[1] = cmin;
            nin = 2;
        }
        if (has_max) {
            if (dt == DF_F32)
                df_init_f32(g, cmax, hi);
            else
                df_init_i64(g, cmax, -1, (int64_t[]){(int64_t)hi});
            in[2] = cmax;
            nin = 3;
        }
    }
    df_node *n = df_node_new(g, "Clip", nin, in, 1);
    if (g->m->opset < 11) {
        if (has_min)
            df_attr_f(n, "min", lo);
        if (has_max)
            df_attr_f(n, "max", hi);
    }
    df_set(x, n, 0, dt, x->nd, x->dims, x->dyn);
    return 0;
}

/* ---- matrices ---- */

static int gen_matmul(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    df_need(g, x, DF_F32, 1, 4);
    int64_t K = x->dims[x->nd - 1], N = df_dim(g, 6, 1), d[DF_MAX_DIMS];
    if (K == 0) /* ONNX Runtime leaves a product over K = 0 unwritten */
        return -1;
    int nd = df_chance(g, 20) ? 1 : df_range(g, 2, x->nd > 2 ? x->nd : 2), dyn = 0;
    if (nd == 1) {
        d[0] = K;
    } else {
        for (int k = 0; k < nd - 2; k++) { /* batch dims broadcast against x's */
            int xi = x->nd - 2 - (nd - 2) + k;
            d[k] = xi >= 0 && df_chance(g, 70) ? x->dims[xi] : 1;
            if (k == 0 && xi == 0 && x->dyn && d[k] == x->dims[0] && x->nd == nd)
                dyn = 1;
        }
        d[nd - 2] = K;
        d[nd - 1] = N;
    }
    if (g->invalid) {
        d[nd == 1 ? 0 : nd - 2] = K + 1;
        g->m->invalid = 1;
    }
    df_cur y;
    char yn[DF_NAME];
    if (!dyn && df_chance(g, 50)) {
        df_init(g, yn, DF_F32, nd, d, NULL);
    } else {
        df_input(g, &y, DF_F32, nd, d, dyn);
        memcpy(yn, y.name, DF_NAME);
    }
    const char *in[2] = {x->name, yn};
    df_node *n = df_node_new(g, "MatMul", 2, in, 1);
    /* output: broadcast batch, then x's rows (unless 1-D) and y's cols */
    int64_t o[DF_MAX_DIMS];
    int xb = x->nd >= 2 ? x->nd - 2 : 0, yb = nd >= 2 ? nd - 2 : 0, rb = xb > yb ? xb : yb, r = 0;
    for (int k = 0; k < rb; k++) {
        int i = k - (rb - xb), j = k - (rb - yb);
        int64_t a = i >= 0 ? x->dims[i] : 1, b = j >= 0 ? d[j] : 1;
        o[r++] = a == 1 ? b : a;
    }
    if (x->nd >= 2)
        o[r++] = x->dims[x->nd - 2];
    if (nd >= 2)
        o[r++] = N;
    df_set(x, n, 0, DF_F32, r, o, x->dyn && xb >= rb && x->nd >= 2 && r == x->nd);
    return 0;
}

static int gen_gemm(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    df_need(g, x, DF_F32, 2, 2);
    int ta = df_chance(g, 30), tb = df_chance(g, 40);
    int64_t M = x->dims[ta ? 1 : 0], K = x->dims[ta ? 0 : 1], N = df_dim(g, 6, 1);
    if (K == 0)
        return -1;
    int64_t bd[2] = {tb ? N : K, tb ? K : N};
    if (g->invalid) {
        bd[tb ? 1 : 0] = K + 2;
        g->m->invalid = 1;
    }
    char bn[DF_NAME], cn[DF_NAME];
    df_init(g, bn, DF_F32, 2, bd, NULL);
    const char *in[3] = {x->name, bn, cn};
    int nin = 2;
    if (df_chance(g, 70) || g->m->opset < 11) { /* C optional from 11 */
        int64_t cd[2] = {df_chance(g, 40) ? 1 : M, df_chance(g, 40) ? 1 : N};
        int cnd = df_rnd(g, 3);
        df_init(g, cn, DF_F32, cnd, cnd == 1 ? cd + 1 : cd, NULL);
        nin = 3;
    }
    df_node *n = df_node_new(g, "Gemm", nin, in, 1);
    if (ta)
        df_attr_i(n, "transA", 1);
    if (tb)
        df_attr_i(n, "transB", 1);
    if (df_chance(g, 40))
        df_attr_f(n, "alpha", df_unif(g, -2.0f, 2.0f));
    if (df_chance(g, 40))
        df_attr_f(n, "beta", df_unif(g, -2.0f, 2.0f));
    int64_t o[2] = {M, N};
    df_set(x, n, 0, DF_F32, 2, o, x->dyn && !ta);
    return 0;
}

/* ---- reductions, softmax, arg ---- */

static const char *const reduce_ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                         "ReduceSumSquare", "ReduceL1", "ReduceL2",
                                         "ReduceLogSum", "ReduceLogSumExp", "ReduceProd"};

static int gen_reduce(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int k = df_rnd(g, 10);
    int dt = (k <= 3 && df_chance(g, 20)) ? DF_I64 : DF_F32;
    df_need(g, x, dt, 1, 4);
    if (df_nonempty(g, x, dt))
        return -1;
    int as_input = g->m->opset >= (k == 0 ? 13 : 18);
    int64_t axes[DF_MAX_DIMS];
    int na = df_chance(g, 15) ? 0 : df_range(g, 1, x->nd), used[DF_MAX_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        int a;
        do
            a = df_rnd(g, x->nd);
        while (used[a]);
        used[a] = 1;
        axes[i] = df_chance(g, 30) ? a - x->nd : a;
    }
    if (g->invalid && na > 0) {
        axes[0] = x->nd + 1;
        g->m->invalid = 1;
    }
    /* noop_with_empty_axes: the input as it is (the spec, ONNX's reference
     * and ours); ONNX Runtime applies ReduceL1's abs, ReduceSumSquare's
     * square, ... all the same, so those are not drawn with it */
    int keep = df_chance(g, 50), noop = as_input && na == 0 && (k <= 3 || k == 9) && df_chance(g, 30);
    char an[DF_NAME];
    const char *in[2] = {x->name, an};
    int nin = 1;
    if (as_input && na > 0) {
        df_init_i64(g, an, na, axes);
        nin = 2;
    }
    df_node *n = df_node_new(g, reduce_ops[k], nin, in, 1);
    if (!as_input && na > 0)
        df_attr_ints(n, "axes", na, axes);
    if (!keep || df_chance(g, 30))
        df_attr_i(n, "keepdims", keep);
    if (noop)
        df_attr_i(n, "noop_with_empty_axes", 1);
    if (g->m->invalid)
        return -1;
    int64_t o[DF_MAX_DIMS];
    int r = 0, dyn = x->dyn;
    if (na == 0 && !noop)
        for (int i = 0; i < x->nd; i++)
            used[i] = 1;
    for (int i = 0; i < x->nd; i++) {
        if (!used[i])
            o[r++] = x->dims[i];
        else if (keep)
            o[r++] = 1;
        if (i == 0 && used[i])
            dyn = 0;
    }
    df_set(x, n, 0, dt, r, o, dyn);
    return 0;
}

static int gen_softmax(df_gen *g, df_cur *x, int arg)
{
    static const char *const ops[] = {"Softmax", "LogSoftmax", "Hardmax"};
    int k = arg >= 0 ? arg : df_rnd(g, 3);
    if (k == 2 && x->ties)
        return -1; /* see df_cur.ties */
    df_need(g, x, DF_F32, 1, 4);
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, ops[k], 1, in, 1);
    int64_t numel = 1;
    for (int d = 0; d < x->nd; d++)
        numel *= x->dims[d];
    /* ORT checks the axis only when there are elements: an invalid one on
     * an empty input, or the default 1 of a 1-D input before opset 13, ran
     * there (seeds 6004/3778, 7001/4898) */
    if (df_chance(g, 70) || (g->m->opset < 13 && x->nd < 2)) {
        int64_t a = df_axis(g, x->nd, 7);
        if (g->invalid && numel > 0) {
            a = x->nd;
            g->m->invalid = 1;
        }
        df_attr_i(n, "axis", a);
    }
    df_set(x, n, 0, DF_F32, x->nd, x->dims, x->dyn);
    return g->m->invalid ? -1 : 0;
}

static int gen_arg(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    if (x->ties)
        return -1; /* see df_cur.ties */
    int dt = df_chance(g, 25) ? DF_I64 : DF_F32;
    df_need(g, x, dt, 1, 4);
    if (df_nonempty(g, x, dt))
        return -1;
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, df_chance(g, 50) ? "ArgMax" : "ArgMin", 1, in, 1);
    int64_t a = df_axis(g, x->nd, 11);
    int keep = df_chance(g, 60);
    if (g->invalid) {
        a = -x->nd - 1;
        g->m->invalid = 1;
    }
    if (a != 0 || df_chance(g, 50))
        df_attr_i(n, "axis", a);
    if (!keep || df_chance(g, 30))
        df_attr_i(n, "keepdims", keep);
    if (g->m->opset >= 12 && df_chance(g, 40))
        df_attr_i(n, "select_last_index", df_rnd(g, 2));
    if (g->m->invalid)
        return -1;
    int ax = (int)(a < 0 ? a + x->nd : a), r = 0;
    int64_t o[DF_MAX_DIMS];
    for (int i = 0; i < x->nd; i++)
        if (i != ax)
            o[r++] = x->dims[i];
        else if (keep)
            o[r++] = 1;
    df_set(x, n, 0, DF_I64, r, o, x->dyn && ax != 0);
    return 0;
}

static int gen_topk(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    if (x->ties)
        return -1; /* see df_cur.ties */
    df_need(g, x, DF_F32, 1, 4);
    int64_t a = df_axis(g, x->nd, 10), ax = a < 0 ? a + x->nd : a;
    /* K = 0 from opset 10 (an input); TopK-1's k attribute must be positive */
    int64_t K = df_range(g, g->edge && g->m->opset >= 10 ? 0 : 1, (int)x->dims[ax]);
    if (K > x->dims[ax])
        K = x->dims[ax];
    if (K == 0 && g->m->opset < 10)
        return -1;
    if (g->invalid) {
        K = x->dims[ax] + 1;
        g->m->invalid = 1;
    }
    char kn[DF_NAME];
    const char *in[2] = {x->name, kn};
    df_node *n;
    if (g->m->opset >= 10) {
        df_init_i64(g, kn, 1, &K);
        n = df_node_new(g, "TopK", 2, in, 2);
    } else {
        n = df_node_new(g, "TopK", 1, in, 2);
        df_attr_i(n, "k", K);
    }
    if (a != -1 || df_chance(g, 50))
        df_attr_i(n, "axis", a);
    if (g->m->opset >= 11 && df_chance(g, 50))
        df_attr_i(n, "largest", df_rnd(g, 2));
    if (g->m->opset >= 11 && df_chance(g, 30))
        df_attr_i(n, "sorted", 1); /* sorted 0 leaves the order open */
    if (g->m->invalid)
        return -1;
    int64_t o[DF_MAX_DIMS];
    memcpy(o, x->dims, sizeof o);
    o[ax] = K;
    df_set(x, n, 0, DF_F32, x->nd, o, x->dyn && ax != 0);
    return 0;
}

static int gen_cumsum(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int dt = df_chance(g, 25) ? DF_I64 : DF_F32;
    df_need(g, x, dt, 1, 4);
    int64_t a = df_axis(g, x->nd, 11), numel = 1;
    for (int d = 0; d < x->nd; d++)
        numel *= x->dims[d];
    /* ORT checks CumSum's axis only when there are elements (seed 6006
     * model 2838: axis 3 of [2,0,4] ran) */
    if (g->invalid && numel > 0) {
        a = x->nd;
        g->m->invalid = 1;
    }
    char an[DF_NAME];
    df_init_i64(g, an, -1, &a);
    const char *in[2] = {x->name, an};
    df_node *n = df_node_new(g, "CumSum", 2, in, 1);
    if (df_chance(g, 40))
        df_attr_i(n, "exclusive", df_rnd(g, 2));
    if (df_chance(g, 40))
        df_attr_i(n, "reverse", df_rnd(g, 2));
    df_set(x, n, 0, dt, x->nd, x->dims, x->dyn && a != 0 && a != -x->nd);
    return g->m->invalid ? -1 : 0;
}

/* ---- normalization ---- */

/* A per-channel f32 initializer of c values (positive: a variance). */
static void channel_init(df_gen *g, char *out, int64_t c, int positive)
{
    float v[64];
    for (int64_t i = 0; i < c && i < 64; i++)
        v[i] = positive ? df_unif(g, 0.2f, 2.0f) : df_unif(g, -1.5f, 1.5f);
    df_init(g, out, DF_F32, 1, &c, v);
}

static int gen_norm(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int k = df_rnd(g, 3); /* BatchNormalization, InstanceNormalization, LayerNormalization */
    if (k == 2 && g->m->opset < 17)
        k = 0;
    df_need(g, x, DF_F32, k == 2 ? 1 : 2, 5);
    if (x->dims[k == 2 ? 0 : 1] > 64)
        return -1;
    char s[DF_NAME], b[DF_NAME], mean[DF_NAME], var[DF_NAME];
    const char *in[5] = {x->name, s, b, mean, var};
    df_node *n;
    if (k < 2) {
        int64_t c = x->dims[1] + (g->invalid ? 1 : 0);
        g->m->invalid |= g->invalid;
        channel_init(g, s, c, 0);
        channel_init(g, b, c, 0);
        if (k == 0) {
            channel_init(g, mean, c, 0);
            channel_init(g, var, c, 1);
        }
        n = df_node_new(g, k ? "InstanceNormalization" : "BatchNormalization", k ? 3 : 5, in, 1);
    } else {
        int64_t a = df_axis(g, x->nd, 17), ax = a < 0 ? a + x->nd : a;
        int64_t sd[DF_MAX_DIMS];
        int snd = x->nd - (int)ax;
        memcpy(sd, x->dims + ax, sizeof *sd * (size_t)snd);
        if (g->invalid) {
            sd[0]++;
            g->m->invalid = 1;
        }
        df_init(g, s, DF_F32, snd, sd, NULL);
        int nin = 2;
        if (df_chance(g, 60)) {
            df_init(g, b, DF_F32, snd, sd, NULL);
            nin = 3;
        }
        n = df_node_new(g, "LayerNormalization", nin, in, 1);
        if (a != -1 || df_chance(g, 30))
            df_attr_i(n, "axis", a);
    }
    /* InstanceNormalization over one element per channel: x - mean is 0
     * and the answer is the bias exactly (ours), where ORT's folded scale
     * and shift leave a rounding error times 1/sqrt(epsilon), 316 at the
     * default (seed 9004 model 53: 1.0e-3 off); a large epsilon keeps it
     * within tolerance. */
    int64_t per = 1;
    for (int d = 2; k == 1 && d < x->nd; d++)
        per *= x->dims[d];
    if (k == 1 && per == 1)
        df_attr_f(n, "epsilon", 0.1f);
    else if (df_chance(g, 40))
        df_attr_f(n, "epsilon", df_chance(g, 50) ? 1e-3f : 0.1f);
    df_set(x, n, 0, DF_F32, x->nd, x->dims, x->dyn);
    /* every output is then the bias: exact ties in ours, rounding apart
     * in ORT's (a TopK after it: seed 15004 model 2415) */
    x->ties |= k == 1 && per == 1;
    return g->m->invalid ? -1 : 0;
}

const df_op df_ops[] = {
    {"unary", 7, 0, gen_unary, 0, 8},
    {"activation", 7, 0, gen_act, 0, 5},
    {"binary", 7, 0, gen_binary, -1, 10},
    {"PRelu", 7, 0, gen_binary, 9, 1},
    {"Mod", 10, 0, gen_binary, 10, 1},
    {"compare", 7, 0, gen_compare, 0, 3},
    {"Where", 9, 0, gen_where, 0, 2},
    {"Clip", 7, 0, gen_clip, 0, 2},
    {"MatMul", 7, 0, gen_matmul, 0, 4},
    {"Gemm", 7, 0, gen_gemm, 0, 3},
    {"Reduce", 7, 0, gen_reduce, 0, 5},
    {"Softmax", 7, 0, gen_softmax, -1, 4},
    {"ArgMax", 7, 0, gen_arg, 0, 2},
    {"TopK", 7, 0, gen_topk, 0, 2},
    {"CumSum", 11, 0, gen_cumsum, 0, 2},
    {"norm", 7, 0, gen_norm, 0, 3},
    DF_SHAPE_OPS
    DF_NN_OPS
};
const int df_nops = (int)(sizeof df_ops / sizeof *df_ops);
