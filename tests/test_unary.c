/*
 * test_unary.c - the unary elementwise ops and cast, against naive
 * double-precision references written here (libm in double), and the
 * vmath.h approximations over a dense sweep of all floats (with the
 * AVX-512 forms of vmath512.h checked to give the same bits).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/vmath.h"
#include "unary_levels.h"

/* Asserts that call failed with an error containing msg that names this
 * file at the call's line.  Keep each use on one line. */
#define EXPECT_ERROR(call, msg) expect_error((call), __LINE__, (msg))

static void expect_error(eager_tensor *r, int line, const char *msg)
{
    char where[64];
    snprintf(where, sizeof where, "test_unary.c:%d ", line);
    CHECK_MSG(r == NULL, "line %d: op should have failed", line);
    CHECK_MSG(strstr(eager_error(), where) != NULL, "error \"%s\" should name %s",
              eager_error(), where);
    check_error(msg, __FILE__, line); /* failures name the caller's line */
    eager_release(r);
}

static eager_tensor *f32s(graph_ints shape, const float *v)
{
    return eager_from_data(GRAPH_F32, shape, v);
}

static const float *fdata(const eager_tensor *t) { return eager_peek(t); }

/* ---- accuracy of the transcendental ops over a sweep of all floats ---- */

static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
/* silu(-inf) = -inf * sigmoid(-inf) = NaN, as PyTorch and oneDNN's swish */
static double ref_silu(double x) { return isinf(x) && x < 0 ? NAN : x / (1.0 + exp(-x)); }
/* PyTorch's F.softplus: x above its threshold 20, else log1p(exp(x)) */
static double ref_softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double ref_gelu(double x)
{
    /* at -inf the formula x/2 (1 + erf(x/sqrt2)) is -inf * 0 = NaN (PyTorch,
     * ONNX's Gelu, oneDNN's gelu_erf); erfc would give the limit -0 */
    return isinf(x) && x < 0 ? NAN : 0.5 * x * erfc(-x / sqrt(2.0));
}

/* Worst error of one op: relative where the reference is a normal float,
 * in units of 2^-149 where it is subnormal; counts outright misses (NaN
 * vs number, inf vs finite, wrong sign of infinity). */
typedef struct accuracy {
    double rel, sub;
    float rel_x, sub_x;
    long miss;
    float miss_x;
} accuracy;

static void measure(accuracy *a, float x, float got, double ref)
{
    double fr = fabs(ref);
    int ok_class = 1;
    if (isnan(ref))
        ok_class = isnan(got);
    else if (fr >= 0x1.ffffffp127) /* rounds to inf in float */
        ok_class = isinf(got) && (got > 0) == (ref > 0);
    else if (isnan(got) || isinf(got))
        ok_class = 0;
    else if (fr < FLT_MIN) {
        double e = fabs(got - ref) / 0x1p-149;
        if (e > a->sub) {
            a->sub = e;
            a->sub_x = x;
        }
    } else {
        double e = fabs(got - ref) / fr;
        if (e > a->rel) {
            a->rel = e;
            a->rel_x = x;
        }
    }
    if (!ok_class && a->miss++ == 0)
        a->miss_x = x;
}

/* Every 1021st bit pattern (both signs, NaNs and infinities included) and
 * the edges that matter: zeros, FLT_MIN/MAX, subnormals, the exp
 * overflow/underflow thresholds, the switch points of the polynomials. */
static float *sweep_values(int64_t *count)
{
    static const float edges[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN,
        FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f, 0x1.fffffcp-127f,
        88.7228f, 88.72284f, 88.7229f, 89.0f, -87.3365f, -103.9720f,
        -103.9721f, -104.0f, 0.55f, -0.55f, 0.875f, -0.875f, 1.2374369f,
        -1.2374369f, 10.0f, -13.2f, -20.0f, -20.0001f, 20.0001f, -64.0f,
        -64.0001f, -88.8f, -95.0f, 1.0f, -1.0f, 0.70710677f, 1.4142135f,
    };
    const int64_t stride = 1021;
    int64_t n_sweep = (int64_t)(0x100000000LL / stride) + 1;
    int64_t n_edges = (int64_t)(sizeof edges / sizeof edges[0]);
    float *v = malloc((size_t)(n_sweep + n_edges) * sizeof *v);
    int64_t n = 0;
    for (int64_t u = 0; u < 0x100000000LL; u += stride)
        v[n++] = vm_asfloat((uint32_t)u);
    for (int64_t i = 0; i < n_edges; i++)
        v[n++] = edges[i];
    *count = n;
    return v;
}

typedef struct sweep_op {
    const char *name;
    eager_tensor *(*run)(eager_tensor *x);
    double (*ref)(double);
    float (*scalar)(float);
    double max_rel; /* the bound on the relative error */
} sweep_op;

static eager_tensor *run_exp(eager_tensor *x) { return eager_exp(x); }
static eager_tensor *run_log(eager_tensor *x) { return eager_log(x); }
static eager_tensor *run_tanh(eager_tensor *x) { return eager_tanh(x); }
static eager_tensor *run_sigmoid(eager_tensor *x) { return eager_sigmoid(x); }
static eager_tensor *run_erf(eager_tensor *x) { return eager_erf(x); }
static eager_tensor *run_gelu(eager_tensor *x) { return eager_gelu(x); }
static eager_tensor *run_silu(eager_tensor *x) { return eager_silu(x); }
static eager_tensor *run_softplus(eager_tensor *x) { return eager_softplus(x); }

static void test_sweep(void)
{
    static const sweep_op ops[] = {
        /* exp, tanh, sigmoid: a few ulp (measured over every 61st float:
         * 8.9e-8, 1.9e-7, 1.5e-7), what the fused kernel relies on */
        {"exp", run_exp, exp, vm_expf, 1.5e-7},
        {"log", run_log, log, vm_logf, 2e-6},
        {"tanh", run_tanh, tanh, vm_tanhf, 3e-7},
        {"sigmoid", run_sigmoid, ref_sigmoid, vm_sigmoidf, 3e-7},
        {"erf", run_erf, erf, vm_erff, 2e-6},
        {"gelu", run_gelu, ref_gelu, vm_geluf, 2e-6},
        {"silu", run_silu, ref_silu, vm_siluf, 2e-6},
        {"softplus", run_softplus, ref_softplus, vm_softplusf, 4e-7},
    };
    int64_t n;
    float *v = sweep_values(&n);
    eager_pool_push();
    eager_set_threads(2); /* the sweep is far above EAGER_PAR_MIN */
    eager_tensor *x = f32s(TG_SHAPE(n), v);
    /* The kernels run in the set the library picked (eager/isa.h): the
     * scalar path compiled as that set is what they must match. */
    const char *level = eager_cpu_level();
    int here = strcmp(level, "baseline") == 0 || strcmp(level, "native") == 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const sweep_op *op = &ops[k];
        unary_scalar_fn scalar = here ? op->scalar
                                 : strcmp(level, "avx2") == 0 ? unary_avx2_scalar(op->name)
                                                              : unary_avx512_scalar(op->name);
        CHECK_MSG(scalar != NULL, "%s: a scalar path for kernel level %s", op->name, level);
        if (!scalar)
            continue;
        eager_tensor *y = op->run(x);
        CHECK_MSG(y != NULL, "%s ran", op->name);
        if (!y)
            continue;
        const float *got = fdata(y);
        accuracy a = {0};
        long scalar_diff = 0;
        for (int64_t i = 0; i < n; i++) {
            measure(&a, v[i], got[i], op->ref(v[i]));
            /* The header's scalar path gives the same bits as the loop. */
            if (i % 7 == 0 && vm_asuint(scalar(v[i])) != vm_asuint(got[i]) &&
                !(isnan(got[i]) && isnan(scalar(v[i]))))
                scalar_diff++;
        }
        CHECK_MSG(a.rel <= op->max_rel, "%s: max relative error %.3g at %a (bound %.3g)",
                  op->name, a.rel, a.rel_x, op->max_rel);
        CHECK_MSG(a.sub <= 4.0, "%s: subnormal result off by %.3g x 2^-149 at %a",
                  op->name, a.sub, a.sub_x);
        CHECK_MSG(a.miss == 0, "%s: %ld wrong NaN/inf results, first at %a",
                  op->name, a.miss, a.miss_x);
        CHECK_MSG(scalar_diff == 0, "%s: scalar vm_ differs from the kernel at %ld points",
                  op->name, scalar_diff);
    }
    eager_set_threads(1);
    eager_pool_pop();
    free(v);
}


/* Exact answers at special points, signs of zero included. */
static void test_special_values(void)
{
    const float in[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f};
    enum { N = 7 };
    /* Expected output per op, -0.0f and 0.0f told apart. */
    static const struct { const char *name; float out[N]; } want[] = {
        {"exp", {1, 1, INFINITY, 0, NAN, 2.71828183f, 0.36787944f}},
        {"log", {-INFINITY, -INFINITY, INFINITY, NAN, NAN, 0, NAN}},
        {"tanh", {0.0f, -0.0f, 1, -1, NAN, 0.76159416f, -0.76159416f}},
        {"sigmoid", {0.5f, 0.5f, 1, 0, NAN, 0.73105858f, 0.26894142f}},
        {"erf", {0.0f, -0.0f, 1, -1, NAN, 0.84270079f, -0.84270079f}},
        {"gelu", {0.0f, -0.0f, INFINITY, NAN, NAN, 0.84134475f, -0.15865525f}},
        {"silu", {0.0f, -0.0f, INFINITY, NAN, NAN, 0.73105858f, -0.26894142f}},
        {"relu", {0.0f, 0.0f, INFINITY, 0.0f, NAN, 1, 0.0f}},
        {"abs", {0.0f, 0.0f, INFINITY, INFINITY, NAN, 1, 1}},
        {"neg", {-0.0f, 0.0f, -INFINITY, INFINITY, NAN, -1, 1}},
        {"sqrt", {0.0f, -0.0f, INFINITY, NAN, NAN, 1, NAN}},
        {"rsqrt", {INFINITY, -INFINITY, 0.0f, NAN, NAN, 1, NAN}},
        {"reciprocal", {INFINITY, -INFINITY, 0.0f, -0.0f, NAN, 1, -1}},
        {"softplus", {0.69314718f, 0.69314718f, INFINITY, 0.0f, NAN, 1.31326169f, 0.31326169f}},
    };
    eager_pool_push();
    eager_tensor *x = f32s(TG_SHAPE(N), in);
    eager_tensor *outs[] = {eager_exp(x), eager_log(x), eager_tanh(x), eager_sigmoid(x),
                            eager_erf(x), eager_gelu(x), eager_silu(x), eager_relu(x),
                            eager_abs(x), eager_neg(x), eager_sqrt(x), eager_rsqrt(x),
                            eager_reciprocal(x), eager_softplus(x)};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
        const float *g = outs[k] ? fdata(outs[k]) : NULL;
        for (int i = 0; g && i < N; i++) {
            float w = want[k].out[i];
            int ok = isnan(w) ? isnan(g[i])
                              : ((g[i] == w || fabsf(g[i] - w) <= 2e-7f * fabsf(w)) &&
                                 signbit(g[i]) == signbit(w));
            CHECK_MSG(ok, "%s(%g) = %g, want %g", want[k].name, (double)in[i],
                      (double)g[i], (double)w);
        }
        CHECK_MSG(g != NULL, "%s ran", want[k].name);
    }
    eager_pool_pop();
}

/* ---- every f32 op on several shapes ---- */

static double ref_neg(double x) { return -x; }
static double ref_relu(double x) { return x <= 0 ? 0.0 : x; }
static double ref_recip(double x) { return 1.0 / x; }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static eager_tensor *run_neg(eager_tensor *x) { return eager_neg(x); }
static eager_tensor *run_abs(eager_tensor *x) { return eager_abs(x); }
static eager_tensor *run_sqrt(eager_tensor *x) { return eager_sqrt(x); }
static eager_tensor *run_rsqrt(eager_tensor *x) { return eager_rsqrt(x); }
static eager_tensor *run_recip(eager_tensor *x) { return eager_reciprocal(x); }
static eager_tensor *run_relu(eager_tensor *x) { return eager_relu(x); }

typedef struct unary_case {
    const char *name;
    eager_tensor *(*run)(eager_tensor *x);
    double (*ref)(double);
    double tol; /* relative; 0: exact */
    float lo, hi;
} unary_case;

/* Nonzero if t has exactly the given shape. */
static int has_shape(const eager_tensor *t, graph_ints shape)
{
    if (!t || eager_ndim(t) != shape.n)
        return 0;
    for (int i = 0; i < shape.n; i++)
        if (eager_dim(t, i) != shape.v[i])
            return 0;
    return 1;
}

static void test_f32_shapes(void)
{
    static const unary_case cases[] = {
        {"neg", run_neg, ref_neg, 0, -8, 8},
        {"abs", run_abs, fabs, 0, -8, 8},
        {"relu", run_relu, ref_relu, 0, -8, 8},
        {"reciprocal", run_recip, ref_recip, 0, -8, 8},
        {"sqrt", run_sqrt, sqrt, 0, 0, 100},
        {"rsqrt", run_rsqrt, ref_rsqrt, 2.5e-7, 0.01f, 100},
        {"exp", run_exp, exp, 2e-6, -80, 80},
        {"log", run_log, log, 2e-6, 1e-6f, 1e6f},
        {"tanh", run_tanh, tanh, 2e-6, -8, 8},
        {"sigmoid", run_sigmoid, ref_sigmoid, 2e-6, -30, 30},
        {"erf", run_erf, erf, 2e-6, -5, 5},
        {"gelu", run_gelu, ref_gelu, 2e-6, -12, 12},
        {"silu", run_silu, ref_silu, 2e-6, -30, 30},
        {"softplus", run_softplus, ref_softplus, 2e-6, -80, 100},
    };
    const graph_ints shapes[] = {TG_NOINTS, TG_SHAPE(0, 3), TG_SHAPE(1), TG_SHAPE(2, 3, 4),
                                 TG_SHAPE(37), TG_SHAPE(3, 70001)};
    eager_set_threads(2);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t n = 1;
        for (int d = 0; d < shapes[s].n; d++)
            n *= shapes[s].v[d];
        float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const unary_case *c = &cases[k];
            eager_pool_push();
            check_fill(v, n, 1000 + k, c->lo, c->hi);
            eager_tensor *y = c->run(f32s(shapes[s], v));
            CHECK_MSG(has_shape(y, shapes[s]), "%s: shape %zu", c->name, s);
            const float *g = y ? fdata(y) : NULL;
            int64_t bad = -1;
            for (int64_t i = 0; g && i < n && bad < 0; i++) {
                double r = c->ref(v[i]);
                double err = c->tol == 0 ? (g[i] != (float)r) : fabs(g[i] - r) / fabs(r);
                if (!(err <= c->tol))
                    bad = i;
            }
            CHECK_MSG(bad < 0, "%s: shape %zu element %lld: %s(%.9g) = %.9g, want %.9g",
                      c->name, s, (long long)bad, c->name, bad < 0 ? 0.0 : v[bad],
                      bad < 0 ? 0.0 : g[bad], bad < 0 ? 0.0 : c->ref(v[bad]));
            eager_pool_pop();
        }
        free(v);
    }
    eager_set_threads(1);
}

/* leaky_relu and clip, whose attributes change the answer. */
static void test_attr_ops(void)
{
    const float in[] = {-3.0f, -0.0f, 0.0f, 0.5f, 2.0f, NAN, -INFINITY, INFINITY};
    enum { N = 8 };
    eager_pool_push();
    eager_tensor *x = f32s(TG_SHAPE(2, 4), in);
    const float *lr = fdata(eager_leaky_relu(x, 0.1f));
    const float *c1 = fdata(eager_clip(x, -1.0f, 1.0f));
    const float *c2 = fdata(eager_clip(x, 1.0f, -1.0f)); /* min > max: all max */
    const float *c3 = fdata(eager_clip(x, -INFINITY, 0.25f));
    for (int i = 0; i < N; i++) {
        float v = in[i];
        float wl = v < 0 ? (float)(0.1f * (double)v) : v;
        float w1 = isnan(v) ? v : v < -1 ? -1 : v > 1 ? 1 : v;
        float w2 = isnan(v) ? v : -1.0f;
        float w3 = isnan(v) ? v : v > 0.25f ? 0.25f : v;
        CHECK_MSG(isnan(wl) ? isnan(lr[i]) : lr[i] == wl && signbit(lr[i]) == signbit(wl),
                  "leaky_relu(%g) = %g", (double)v, (double)lr[i]);
        CHECK_MSG(isnan(w1) ? isnan(c1[i]) : c1[i] == w1, "clip(%g) = %g", (double)v, (double)c1[i]);
        CHECK_MSG(isnan(w2) ? isnan(c2[i]) : c2[i] == w2, "clip(%g, 1, -1) = %g", (double)v,
                  (double)c2[i]);
        CHECK_MSG(isnan(w3) ? isnan(c3[i]) : c3[i] == w3, "clip(%g, -inf, .25) = %g", (double)v,
                  (double)c3[i]);
    }
    /* defaults through eager_dispatch with NULL attributes: alpha 0.01 */
    eager_tensor *out = NULL;
    CHECK(eager_dispatch(GRAPH_OP_leaky_relu, &x, 1, NULL, &out, 1, NULL) == 1);
    CHECK(out && fdata(out)[0] == -3.0f * 0.01f); /* the pool owns out */
    eager_pool_pop();
}

/* neg and abs on integers, INT_MIN wrapping included. */
static void test_int_sign_ops(void)
{
    const int64_t v64[] = {0, 1, -1, 42, -42, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    const int32_t v32[] = {0, 1, -1, 42, -42, INT32_MAX, INT32_MIN, INT32_MIN + 1};
    enum { N = 8 };
    eager_pool_push();
    eager_tensor *a = eager_from_data(GRAPH_I64, TG_SHAPE(N), v64);
    eager_tensor *b = eager_from_data(GRAPH_I32, TG_SHAPE(2, 4), v32);
    eager_tensor *na = eager_neg(a), *aa = eager_abs(a), *nb = eager_neg(b), *ab = eager_abs(b);
    CHECK(eager_dtype(na) == GRAPH_I64 && eager_dtype(nb) == GRAPH_I32 && has_shape(ab, TG_SHAPE(2, 4)));
    const int64_t *pna = eager_peek(na), *paa = eager_peek(aa);
    const int32_t *pnb = eager_peek(nb), *pab = eager_peek(ab);
    for (int i = 0; i < N; i++) {
        /* the wrapped value: INT_MIN stays INT_MIN */
        int64_t w64 = v64[i] == INT64_MIN ? INT64_MIN : -v64[i];
        int32_t w32 = v32[i] == INT32_MIN ? INT32_MIN : -v32[i];
        CHECK_MSG(pna[i] == w64, "neg i64 %lld", (long long)v64[i]);
        CHECK_MSG(paa[i] == (v64[i] < 0 ? w64 : v64[i]), "abs i64 %lld", (long long)v64[i]);
        CHECK_MSG(pnb[i] == w32, "neg i32 %d", v32[i]);
        CHECK_MSG(pab[i] == (v32[i] < 0 ? w32 : v32[i]), "abs i32 %d", v32[i]);
    }
    eager_pool_pop();
}

/* ---- cast ---- */

/* Reads element i of t as double (bool as 0/1). */
static double elem(const void *p, graph_dtype dt, int64_t i)
{
    switch (dt) {
    case GRAPH_F32: return ((const float *)p)[i];
    case GRAPH_I64: return (double)((const int64_t *)p)[i];
    case GRAPH_I32: return ((const int32_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* The documented conversion of x (given as double) to dt, by cases. */
static double want_cast(double x, graph_dtype from, graph_dtype to)
{
    if (from == GRAPH_BOOL)
        x = x != 0;
    switch (to) {
    case GRAPH_F32: return (float)x;
    case GRAPH_BOOL: return x != 0;
    case GRAPH_I32:
    case GRAPH_I64: {
        double lo = to == GRAPH_I32 ? -2147483648.0 : -9223372036854775808.0;
        double hi = to == GRAPH_I32 ? 2147483647.0 : 9223372036854775807.0;
        if (isnan(x))
            return 0;
        x = trunc(x);
        return x < lo ? lo : x > hi ? hi : x;
    }
    default: return NAN;
    }
}

static void test_cast(void)
{
    const float f[] = {1.9f, -1.9f, 0.5f, -0.5f, -0.0f, NAN, INFINITY, -INFINITY, 3e9f, -3e9f,
                       2147483520.0f, -2147483648.0f, 2147483648.0f, 1e19f, -1e19f,
                       9223371487098961920.0f, 16777217.0f, 7.0f};
    const int64_t l[] = {0, 1, -1, 5, 2147483648LL, -2147483649LL, INT64_MAX, INT64_MIN,
                         (1LL << 53) + 1, 123456789012LL, 2147483647, -2147483648LL, 3, 4, 5, 6,
                         7, 8};
    const int32_t w[] = {0, 1, -1, 5, INT32_MAX, INT32_MIN, 16777217, -16777217, 9, 10,
                         11, 12, 13, 14, 15, 16, 17, 18};
    const uint8_t b[] = {0, 1, 2, 255, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    enum { N = 18 };
    const void *data[GRAPH_DTYPE_COUNT] = {f, l, w, b};
    eager_pool_push();
    for (int from = 0; from < GRAPH_DTYPE_COUNT; from++) {
        eager_tensor *x = eager_from_data((graph_dtype)from, TG_SHAPE(3, 6), data[from]);
        for (int to = 0; to < GRAPH_DTYPE_COUNT; to++) {
            eager_tensor *y = eager_cast(x, (graph_dtype)to);
            CHECK_MSG(y && (int)eager_dtype(y) == to && has_shape(y, TG_SHAPE(3, 6)), "cast %d->%d",
                      from, to);
            for (int i = 0; y && i < N; i++) {
                double in = elem(data[from], (graph_dtype)from, i);
                double got = elem(eager_peek(y), (graph_dtype)to, i);
                double want = want_cast(in, (graph_dtype)from, (graph_dtype)to);
                int ok = isnan(want) ? isnan(got) : got == want;
                CHECK_MSG(ok, "cast %s->%s of %.17g = %.17g, want %.17g",
                          graph_dtype_name(from), graph_dtype_name(to), in, got, want);
            }
        }
    }
    /* 0-d and empty tensors */
    eager_tensor *s = eager_cast(eager_scalar(-2.7), GRAPH_I32);
    CHECK(s && eager_ndim(s) == 0 && ((const int32_t *)eager_peek(s))[0] == -2);
    eager_tensor *e = eager_cast(eager_zeros(GRAPH_I64, TG_SHAPE(0, 3)), GRAPH_F32);
    CHECK(e && has_shape(e, TG_SHAPE(0, 3)) && eager_dtype(e) == GRAPH_F32);
    /* big enough for threads: the same as one thread */
    eager_set_threads(2);
    eager_tensor *big = eager_rand_uniform(TG_SHAPE(100000), 5, -3e9f, 3e9f);
    eager_tensor *bi = eager_cast(big, GRAPH_I32);
    eager_set_threads(1);
    int bad = 0;
    for (int64_t i = 0; bi && i < 100000; i++)
        bad += ((const int32_t *)eager_peek(bi))[i] !=
               want_cast(fdata(big)[i], GRAPH_F32, GRAPH_I32);
    CHECK_MSG(bi && bad == 0, "%d bad big casts", bad);
    eager_pool_pop();
}

/* ---- errors ---- */

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *i = eager_ones(GRAPH_I64, TG_SHAPE(3));
    eager_tensor *bo = eager_ones(GRAPH_BOOL, TG_SHAPE(2));
    eager_tensor *f = eager_ones(GRAPH_F32, TG_SHAPE(2, 2));
    EXPECT_ERROR(eager_exp(i), "exp: i64[3]: dtype i64 not supported");
    EXPECT_ERROR(eager_gelu(bo), "gelu: bool[2]: dtype bool not supported");
    EXPECT_ERROR(eager_sqrt(eager_ones(GRAPH_I32, TG_SHAPE(1))), "dtype i32 not supported");
    EXPECT_ERROR(eager_neg(bo), "neg: bool[2]: dtype bool not supported");
    EXPECT_ERROR(eager_leaky_relu(f, NAN), "leaky_relu: [2,2]: alpha must be finite, got nan");
    EXPECT_ERROR(eager_leaky_relu(f, INFINITY), "alpha must be finite, got inf");
    EXPECT_ERROR(eager_clip(f, NAN, 1.0f), "clip: [2,2]: clip bounds must not be NaN (min nan, max 1)");
    EXPECT_ERROR(eager_cast(f, (graph_dtype)9), "cast: [2,2]: invalid target dtype 9");
    EXPECT_ERROR(eager_cast(f, (graph_dtype)-1), "invalid target dtype -1");
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_sweep();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        int64_t n;
        float *v = sweep_values(&n);
        unary_avx512_same_bits(v, n);
        free(v);
    }
    test_special_values();
    test_f32_shapes();
    test_attr_ops();
    test_int_sign_ops();
    test_cast();
    test_errors();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
