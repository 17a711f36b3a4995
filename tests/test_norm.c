/*
 * test_norm.c - batch_norm, layer_norm, softmax and log_softmax against
 * naive double-precision references written here: several shapes and axes
 * (first, middle, last), large tensors on 1 and 4 threads, 0-d and
 * zero-sized inputs, extremes (large means, -inf, +inf, 1e4), and every
 * error path with the message and this file's line.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

static int64_t numel_of(graph_ints s)
{
    int64_t n = 1;
    for (int i = 0; i < s.n; i++)
        n *= s.v[i];
    return n;
}

static eager_tensor *rand_f32(graph_ints shape, uint64_t seed, float lo, float hi)
{
    int64_t n = numel_of(shape);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    check_fill(f, n, seed, lo, hi);
    eager_tensor *t = eager_from_data(GRAPH_F32, shape, f);
    free(f);
    return t;
}

static const float *fdata(const eager_tensor *t) { return t ? eager_peek(t) : NULL; }

/* Checks y has x's shape and values want (n floats). */
static void check_out(const eager_tensor *y, const eager_tensor *x,
                      const float *want, double tol, int line)
{
    CHECK_MSG(y != NULL, "line %d: op ran", line);
    if (!y) {
        eager_clear_error();
        return;
    }
    const graph_type *a = eager_type(y), *b = eager_type(x);
    int same = a->ndim == b->ndim && a->dtype == GRAPH_F32;
    for (int d = 0; same && d < a->ndim; d++)
        same = a->dim[d] == b->dim[d];
    CHECK_MSG(same, "line %d: output shape", line);
    if (same)
        check_floats(fdata(y), want, eager_numel(y), tol, __FILE__, line, "y");
}

/* ---- batch_norm ---- */

static void ref_batch_norm(const eager_tensor *x, const float *sc, const float *bi,
                           const float *mu, const float *va, double eps, float *out)
{
    const float *p = fdata(x);
    int64_t n = eager_dim(x, 0), c = eager_dim(x, 1), s = eager_numel(x) / (n * c != 0 ? n * c : 1);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < s; j++) {
                int64_t at = (i * c + k) * s + j;
                out[at] = (float)(((double)p[at] - mu[k]) / sqrt((double)va[k] + eps) * sc[k] + bi[k]);
            }
}

static void bn_case(graph_ints shape, float eps, int line)
{
    int64_t c = shape.v[1], n = numel_of(shape);
    eager_tensor *x = rand_f32(shape, 1 + (uint64_t)n, -3.0f, 5.0f);
    eager_tensor *sc = rand_f32(TG_SHAPE(c), 2, 0.5f, 2.0f);
    eager_tensor *bi = rand_f32(TG_SHAPE(c), 3, -1.0f, 1.0f);
    eager_tensor *mu = rand_f32(TG_SHAPE(c), 4, -1.0f, 2.0f);
    eager_tensor *va = rand_f32(TG_SHAPE(c), 5, 0.0f, 3.0f);
    float *want = malloc((size_t)(n ? n : 1) * sizeof *want);
    ref_batch_norm(x, fdata(sc), fdata(bi), fdata(mu), fdata(va), eps, want);
    eager_tensor *y = eager_batch_norm(x, sc, bi, mu, va, eps);
    check_out(y, x, want, 1e-5, line);
    free(want);
    eager_release(y), eager_release(x), eager_release(sc);
    eager_release(bi), eager_release(mu), eager_release(va);
}

static void test_batch_norm(void)
{
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        bn_case(TG_SHAPE(2, 3), 1e-5f, __LINE__);
        bn_case(TG_SHAPE(2, 3, 4, 5), 1e-3f, __LINE__);
        bn_case(TG_SHAPE(1, 1, 7), 0.0f, __LINE__);
        bn_case(TG_SHAPE(3, 16, 1000), 1e-5f, __LINE__); /* one task per row */
        bn_case(TG_SHAPE(1, 2, 200, 200), 1e-5f, __LINE__); /* rows split */
        bn_case(TG_SHAPE(0, 3, 4), 1e-5f, __LINE__);
        bn_case(TG_SHAPE(2, 3, 0), 1e-5f, __LINE__);
    }
    eager_set_threads(1);
    /* known answers: per-channel mean 0, var 1 and 4, eps 0 */
    float xv[] = {1, 2, 3, 4}, one[] = {1, 1}, zero[] = {0, 0}, var[] = {1, 4};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(2, 2), xv);
    eager_tensor *o = eager_from_data(GRAPH_F32, TG_SHAPE(2), one);
    eager_tensor *z = eager_from_data(GRAPH_F32, TG_SHAPE(2), zero);
    eager_tensor *v = eager_from_data(GRAPH_F32, TG_SHAPE(2), var);
    eager_tensor *y = eager_batch_norm(x, o, z, z, v, 0.0f);
    const float *p = fdata(y);
    CHECK(p && p[0] == 1.0f && p[1] == 1.0f && p[2] == 3.0f && p[3] == 2.0f);
    eager_release(y), eager_release(x), eager_release(o);
    eager_release(z), eager_release(v);
}

/* ---- layer_norm ---- */

static void ref_layer_norm(const float *x, int64_t rows, int64_t d, const float *w,
                           const float *b, double eps, float *out)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < d; i++)
            mean += xr[i];
        mean /= (double)d;
        for (int64_t i = 0; i < d; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)d;
        for (int64_t i = 0; i < d; i++) {
            double v = (xr[i] - mean) / sqrt(var + eps);
            out[r * d + i] = (float)(v * (w ? w[i] : 1.0) + (b ? b[i] : 0.0));
        }
    }
}

/* nparam: 0 none, 1 weight, 2 weight and bias. */
static void ln_case(eager_tensor *x, int64_t axis, int nparam, float eps,
                    double tol, int line)
{
    const graph_type *t = eager_type(x);
    int ax = (int)(axis < 0 ? axis + (t->ndim ? t->ndim : 1) : axis);
    graph_ints pshape = {0, {0}};
    int64_t rows = 1, d = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i < ax)
            rows *= t->dim[i];
        else
            d *= t->dim[i], pshape.v[pshape.n++] = t->dim[i];
    }
    eager_tensor *w = nparam >= 1 ? rand_f32(pshape, 7, 0.5f, 1.5f) : EAGER_NONE;
    eager_tensor *b = nparam >= 2 ? rand_f32(pshape, 8, -1.0f, 1.0f) : EAGER_NONE;
    float *want = malloc((size_t)(rows * d != 0 ? rows * d : 1) * sizeof *want);
    ref_layer_norm(fdata(x), rows, d, nparam >= 1 ? fdata(w) : NULL,
                   nparam >= 2 ? fdata(b) : NULL, eps, want);
    eager_tensor *y = eager_layer_norm(x, w, b, axis, eps);
    check_out(y, x, want, tol, line);
    free(want);
    eager_release(y);
    if (w != EAGER_NONE)
        eager_release(w);
    if (b != EAGER_NONE)
        eager_release(b);
}

static void test_layer_norm(void)
{
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        eager_tensor *a = rand_f32(TG_SHAPE(4, 16), 21, -2.0f, 3.0f);
        eager_tensor *b = rand_f32(TG_SHAPE(2, 3, 5), 22, -2.0f, 3.0f);
        eager_tensor *c = rand_f32(TG_SHAPE(512, 768), 23, -4.0f, 4.0f);
        eager_tensor *e = rand_f32(TG_SHAPE(3, 37), 24, -1.0f, 1.0f);
        ln_case(a, -1, 2, 1e-5f, 1e-5, __LINE__);
        ln_case(a, 1, 1, 1e-5f, 1e-5, __LINE__);
        ln_case(a, 0, 0, 1e-5f, 1e-5, __LINE__);  /* first axis: whole tensor */
        ln_case(b, 1, 2, 1e-3f, 1e-5, __LINE__);  /* middle axis, 2-d params */
        ln_case(b, -1, 0, 1e-5f, 1e-5, __LINE__);
        ln_case(b, -3, 2, 1e-5f, 1e-5, __LINE__);
        ln_case(c, -1, 2, 1e-5f, 1e-5, __LINE__); /* transformer-sized */
        ln_case(e, 1, 2, 0.0f, 1e-5, __LINE__);   /* odd length, eps 0 */
        eager_release(a), eager_release(b), eager_release(c), eager_release(e);
    }
    eager_set_threads(1);
    /* A large mean with small noise: a one-pass float variance gets this
     * badly wrong; two passes in double do not. */
    eager_tensor *big = rand_f32(TG_SHAPE(4, 4099), 31, -0.05f, 0.05f);
    float *p = eager_data_mut(big);
    for (int64_t i = 0; i < eager_numel(big); i++)
        p[i] += 1e4f;
    ln_case(big, -1, 2, 1e-12f, 1e-4, __LINE__);
    ln_case(big, -1, 0, 0.0f, 1e-4, __LINE__);
    eager_release(big);
    /* constant rows: zero variance gives exactly the bias */
    eager_tensor *k = eager_full(GRAPH_F32, TG_SHAPE(3, 5), 7.0);
    eager_tensor *y = eager_layer_norm(k, EAGER_NONE, EAGER_NONE, -1, 1e-5f);
    const float *q = fdata(y);
    CHECK(q && q[0] == 0.0f && q[14] == 0.0f);
    eager_release(y), eager_release(k);
    /* 0-d: one element normalized to 0, then scaled and shifted */
    eager_tensor *s = eager_scalar(3.0), *w = eager_scalar(2.0), *bb = eager_scalar(0.5);
    y = eager_layer_norm(s, w, bb, -1, 1e-5f);
    CHECK(y && eager_ndim(y) == 0 && eager_item(y) == 0.5);
    eager_release(y), eager_release(s), eager_release(w), eager_release(bb);
    /* zero-sized */
    eager_tensor *z0 = eager_zeros(GRAPH_F32, TG_SHAPE(0, 8));
    eager_tensor *z1 = eager_zeros(GRAPH_F32, TG_SHAPE(8, 0));
    ln_case(z0, -1, 2, 1e-5f, 1e-5, __LINE__);
    ln_case(z1, -1, 2, 1e-5f, 1e-5, __LINE__);
    ln_case(z1, 0, 0, 1e-5f, 1e-5, __LINE__);
    eager_release(z0), eager_release(z1);
}

/* ---- softmax, log_softmax ---- */

static void ref_softmax(const eager_tensor *x, int64_t axis, int log_sm, float *out)
{
    const graph_type *t = eager_type(x);
    const float *p = fdata(x);
    int ax = (int)(axis < 0 ? axis + (t->ndim ? t->ndim : 1) : axis);
    int64_t outer = 1, len = t->ndim ? t->dim[ax] : 1, inner = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i < ax)
            outer *= t->dim[i];
        else if (i > ax)
            inner *= t->dim[i];
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xr = p + o * len * inner + j;
            double m = -INFINITY, s = 0;
            for (int64_t l = 0; l < len; l++)
                m = xr[l * inner] > m ? xr[l * inner] : m;
            for (int64_t l = 0; l < len; l++)
                s += exp(xr[l * inner] - m);
            for (int64_t l = 0; l < len; l++) {
                double v = xr[l * inner] - m;
                out[o * len * inner + j + l * inner] = (float)(log_sm ? v - log(s) : exp(v) / s);
            }
        }
}

static void sm_case(eager_tensor *x, int64_t axis, int line)
{
    int64_t n = eager_numel(x);
    float *want = malloc((size_t)(n ? n : 1) * sizeof *want);
    for (int log_sm = 0; log_sm <= 1; log_sm++) {
        ref_softmax(x, axis, log_sm, want);
        eager_tensor *y = log_sm ? eager_log_softmax(x, axis) : eager_softmax(x, axis);
        check_out(y, x, want, 1e-5, line);
        eager_release(y);
    }
    free(want);
}

static void test_softmax(void)
{
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        eager_tensor *a = rand_f32(TG_SHAPE(5), 41, -3.0f, 3.0f);
        eager_tensor *b = rand_f32(TG_SHAPE(3, 7), 42, -3.0f, 3.0f);
        eager_tensor *c = rand_f32(TG_SHAPE(2, 3, 4), 43, -3.0f, 3.0f);
        eager_tensor *d = rand_f32(TG_SHAPE(2, 300, 5), 44, -9.0f, 9.0f);
        eager_tensor *e = rand_f32(TG_SHAPE(2, 3, 600), 45, -9.0f, 9.0f);
        eager_tensor *f = rand_f32(TG_SHAPE(256, 1000), 46, -20.0f, 20.0f);
        eager_tensor *g = rand_f32(TG_SHAPE(1000, 256), 47, -20.0f, 20.0f);
        eager_tensor *h = rand_f32(TG_SHAPE(2, 7, 2500), 48, -5.0f, 5.0f);
        sm_case(a, 0, __LINE__);
        sm_case(b, -1, __LINE__);
        sm_case(b, 0, __LINE__);
        for (int ax = -3; ax < 3; ax++)
            sm_case(c, ax, __LINE__);
        sm_case(d, 1, __LINE__);
        sm_case(e, 1, __LINE__); /* inner 600 */
        sm_case(h, 1, __LINE__); /* inner 2500: blocks of 1024 and a partial one */
        sm_case(e, 0, __LINE__);
        sm_case(f, -1, __LINE__);
        sm_case(f, 0, __LINE__);
        sm_case(g, 0, __LINE__);
        eager_release(a), eager_release(b), eager_release(c), eager_release(d);
        eager_release(e), eager_release(f), eager_release(g), eager_release(h);
    }
    eager_set_threads(1);
}

static void test_softmax_extremes(void)
{
    /* rows: large values; some -inf; all -inf (NaN); +inf (NaN); tiny */
    float v[] = {1e4f, 1e4f - 1, 1e4f - 2, -1e4f,
                 -INFINITY, 0, -INFINITY, 1,
                 -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                 INFINITY, 0, 1, 2,
                 -1e30f, -1e30f, -1e30f, -1e30f};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(5, 4), v);
    eager_tensor *xt = eager_from_data(GRAPH_F32, TG_SHAPE(4, 5), v); /* for axis 0 below */
    sm_case(x, 1, __LINE__);
    eager_tensor *y = eager_softmax(x, -1), *ly = eager_log_softmax(x, -1);
    const float *p = fdata(y), *lp = fdata(ly);
    CHECK(p && fabsf(p[0] - 0.66524096f) < 1e-6f && p[3] == 0.0f);
    CHECK(p && p[4] == 0.0f && p[6] == 0.0f && fabsf(p[7] - 0.7310586f) < 1e-6f);
    CHECK(p && isnan(p[8]) && isnan(p[11]) && isnan(p[12]) && isnan(p[13]));
    CHECK(p && p[16] == 0.25f && p[19] == 0.25f);
    CHECK(lp && lp[4] == -INFINITY && fabsf(lp[5] + 1.3132616f) < 1e-6f);
    CHECK(lp && fabsf(lp[3] + 20000.4076f) < 1e-2f && isnan(lp[9]));
    eager_release(y), eager_release(ly);
    /* the same through a non-innermost axis (strided rows) */
    eager_tensor *xtt = eager_transpose(x, TG_NOINTS);
    if (xtt)
        sm_case(xtt, 0, __LINE__);
    else
        eager_clear_error(); /* transpose is another helper's op */
    sm_case(xt, 0, __LINE__);
    eager_release(xtt), eager_release(x), eager_release(xt);
    /* 0-d: softmax 1, log_softmax 0 */
    eager_tensor *s = eager_scalar(123.0);
    y = eager_softmax(s, 0), ly = eager_log_softmax(s, -1);
    CHECK(y && eager_ndim(y) == 0 && eager_item(y) == 1.0);
    CHECK(ly && eager_ndim(ly) == 0 && eager_item(ly) == 0.0);
    eager_release(y), eager_release(ly), eager_release(s);
    /* zero-sized */
    eager_tensor *z0 = eager_zeros(GRAPH_F32, TG_SHAPE(0, 5));
    eager_tensor *z1 = eager_zeros(GRAPH_F32, TG_SHAPE(5, 0));
    sm_case(z0, 1, __LINE__);
    sm_case(z0, 0, __LINE__);
    sm_case(z1, 1, __LINE__);
    eager_release(z0), eager_release(z1);
}

/* A probability below FLT_MIN is written as 0 (a masked attention's
 * exp(-100)); one just above it stays.  Row and column paths, and a row
 * long enough for the vector loop's body and tail. */
static void test_softmax_denormal(void)
{
    enum { N = 37 };
    float v[N];
    for (int i = 0; i < N; i++)
        v[i] = i % 3 == 0 ? -100.0f : i % 3 == 1 ? -80.0f : 0.0f;
    v[N - 1] = -100.0f;
    double s = 0; /* the reference, in double: e^0 for 12 of them, e^-80 and e^-100 */
    for (int i = 0; i < N; i++)
        s += exp((double)v[i]);
    eager_tensor *row = eager_from_data(GRAPH_F32, TG_SHAPE(1, N), v);
    eager_tensor *col = eager_from_data(GRAPH_F32, TG_SHAPE(N, 1), v);
    eager_tensor *yr = eager_softmax(row, -1), *yc = eager_softmax(col, 0);
    const float *pr = fdata(yr), *pc = fdata(yc);
    int tiny_kept = 0, normal_lost = 0;
    for (int i = 0; pr && pc && i < N; i++) {
        float want = (float)(exp((double)v[i]) / s);
        for (int k = 0; k < 2; k++) {
            float got = k ? pc[i] : pr[i];
            if (want < FLT_MIN)
                tiny_kept += got != 0.0f; /* denormal: written as 0 */
            else
                normal_lost += fabsf(got - want) > 1e-5f * want;
        }
    }
    CHECK(pr && pc);
    CHECK_MSG(tiny_kept == 0, "%d denormal probabilities kept", tiny_kept);
    CHECK_MSG(normal_lost == 0, "%d normal probabilities wrong", normal_lost);
    CHECK(pr && pr[1] > 0.0f && pr[1] >= FLT_MIN); /* e^-80/12 = 1.5e-36 stays */
    eager_release(yr), eager_release(yc), eager_release(row), eager_release(col);

    /* Around ln FLT_MIN = -87.3365, where the kernel stops computing the
     * exponential (it would make a subnormal): one 0 makes the sum 1, so
     * each probability is e^d itself.  The row is long enough for the
     * vector loop, with the same values in the tail. */
    static const float edge[] = {0.0f,      -87.30f, -87.33f,  -87.3365f, -87.3366f, -87.34f,
                                 -87.5f,    -88.0f,  -103.9f,  -104.5f,   -150.0f,   -INFINITY,
                                 -86.0f,    -87.0f,  -87.33f,  -87.34f,   -90.0f,    -87.3365f,
                                 -87.3366f, -87.31f};
    enum { E = sizeof edge / sizeof edge[0] };
    eager_tensor *er = eager_from_data(GRAPH_F32, TG_SHAPE(1, E), edge);
    eager_tensor *ey = eager_softmax(er, -1), *el = eager_log_softmax(er, -1);
    const float *py = fdata(ey), *pl = fdata(el);
    double es = 0;
    for (int i = 0; i < E; i++)
        es += exp((double)edge[i]);
    int edge_bad = 0;
    for (int i = 0; py && pl && i < E; i++) {
        double want = exp((double)edge[i]) / es, lwant = edge[i] - log(es);
        float got = py[i];
        int ok = want < FLT_MIN ? got == 0.0f : fabs(got - want) <= 1e-6 * want;
        ok &= isinf(edge[i]) ? isinf(pl[i]) && pl[i] < 0 : fabs(pl[i] - lwant) <= 1e-6 * fabs(lwant) + 1e-7;
        if (!ok && edge_bad++ < 3)
            fprintf(stderr, "  softmax at %.7g: got %.9g (log %.9g), want %.9g (log %.9g)\n",
                    edge[i], got, pl[i], want, lwant);
    }
    CHECK(py && pl);
    CHECK_MSG(edge_bad == 0, "%d probabilities near ln FLT_MIN wrong", edge_bad);
    /* NaN stays NaN */
    float nv[E];
    memcpy(nv, edge, sizeof nv);
    nv[5] = NAN;
    eager_tensor *nr = eager_from_data(GRAPH_F32, TG_SHAPE(1, E), nv);
    eager_tensor *ny = eager_softmax(nr, -1);
    CHECK(ny && isnan(fdata(ny)[5]));
    eager_release(ey), eager_release(el), eager_release(er), eager_release(ny), eager_release(nr);
}

/* ---- errors ---- */

static void test_errors(void)
{
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 4));
    eager_tensor *x1 = eager_zeros(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *xi = eager_zeros(GRAPH_I64, TG_SHAPE(2, 3));
    eager_tensor *c3 = eager_ones(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *c5 = eager_ones(GRAPH_F32, TG_SHAPE(5));
    eager_tensor *c31 = eager_ones(GRAPH_F32, TG_SHAPE(3, 1));
    eager_tensor *i3 = eager_ones(GRAPH_I64, TG_SHAPE(3));
    eager_tensor *w34 = eager_ones(GRAPH_F32, TG_SHAPE(3, 4));
    eager_tensor *w4 = eager_ones(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *i4 = eager_ones(GRAPH_I32, TG_SHAPE(4));
    eager_tensor *s = eager_scalar(1.0);

    CHECK_FAILS(eager_batch_norm(x, c5, c3, c3, c3, 1e-5f), "batch_norm: [2,3,4] x [5] x [3] x [3] x [3]: scale has shape [5], want [3] (test_norm.c:");
    CHECK_FAILS(eager_batch_norm(x, c3, c5, c3, c3, 1e-5f), "bias has shape [5], want [3]");
    CHECK_FAILS(eager_batch_norm(x, c3, c3, c31, c3, 1e-5f), "mean has shape [3,1], want [3]");
    CHECK_FAILS(eager_batch_norm(x, c3, c3, c3, i3, 1e-5f), "var has dtype i64, want f32");
    CHECK_FAILS(eager_batch_norm(x1, c3, c3, c3, c3, 1e-5f), "x needs at least 2 dims [N,C,...], has 1");
    CHECK_FAILS(eager_batch_norm(s, c3, c3, c3, c3, 1e-5f), "batch_norm: [] x [3] x [3] x [3] x [3]: x needs at least 2 dims [N,C,...], has 0");
    CHECK_FAILS(eager_batch_norm(x, c3, c3, c3, c3, -1.0f), "eps must be finite and >= 0, got -1");
    CHECK_FAILS(eager_batch_norm(xi, c3, c3, c3, c3, 1e-5f), "batch_norm: i64[2,3] x [3] x [3] x [3] x [3]: dtype i64 not supported");
    CHECK_FAILS(eager_batch_norm(x, c3, c3, EAGER_NONE, EAGER_NONE, 1e-5f), "takes 5 inputs, got 3");

    CHECK_FAILS(eager_layer_norm(x, c5, EAGER_NONE, -2, 1e-5f), "layer_norm: [2,3,4] x [5]: weight has shape [5], want [3,4]");
    CHECK_FAILS(eager_layer_norm(x, w34, w4, -2, 1e-5f), "bias has shape [4], want [3,4]");
    CHECK_FAILS(eager_layer_norm(x, w4, i4, -1, 1e-5f), "bias has dtype i32, want f32");
    CHECK_FAILS(eager_layer_norm(x, EAGER_NONE, EAGER_NONE, 3, 1e-5f), "axis 3 out of range for 3 dims");
    CHECK_FAILS(eager_layer_norm(x, EAGER_NONE, EAGER_NONE, -4, 1e-5f), "axis -4 out of range for 3 dims");
    CHECK_FAILS(eager_layer_norm(x, EAGER_NONE, EAGER_NONE, -1, NAN), "eps must be finite and >= 0, got nan");
    CHECK_FAILS(eager_layer_norm(x, EAGER_NONE, EAGER_NONE, -1, INFINITY), "eps must be finite and >= 0, got inf");
    CHECK_FAILS(eager_layer_norm(s, EAGER_NONE, EAGER_NONE, 1, 1e-5f), "axis 1 out of range for 0 dims");
    CHECK_FAILS(eager_layer_norm(s, w4, EAGER_NONE, -1, 1e-5f), "weight has shape [4], want []");
    CHECK_FAILS(eager_layer_norm(xi, EAGER_NONE, EAGER_NONE, -1, 1e-5f), "dtype i64 not supported");
    CHECK_FAILS(eager_layer_norm(x, EAGER_NONE, w4, -1, 1e-5f), "input 1 is EAGER_NONE but a later input is given");

    CHECK_FAILS(eager_softmax(x, 3), "softmax: [2,3,4]: axis 3 out of range for 3 dims");
    CHECK_FAILS(eager_log_softmax(x, -4), "log_softmax: [2,3,4]: axis -4 out of range for 3 dims");
    CHECK_FAILS(eager_softmax(s, 1), "axis 1 out of range for 0 dims");
    CHECK_FAILS(eager_log_softmax(s, -2), "axis -2 out of range for 0 dims");
    CHECK_FAILS(eager_softmax(xi, -1), "softmax: i64[2,3]: dtype i64 not supported");

    eager_release(x), eager_release(x1), eager_release(xi), eager_release(c3);
    eager_release(c5), eager_release(c31), eager_release(i3), eager_release(w34);
    eager_release(w4), eager_release(i4), eager_release(s);
}

int main(void)
{
    long live = eager_live_tensors();
    test_batch_norm();
    test_layer_norm();
    test_softmax();
    test_softmax_extremes();
    test_softmax_denormal();
    test_errors();
    eager_pool_push();
    eager_tensor *x = eager_rand_normal(TG_SHAPE(4, 8), 9, 0.0f, 1.0f);
    eager_tensor *y = eager_softmax(eager_layer_norm(x, EAGER_NONE, EAGER_NONE, -1, 1e-5f), -1);
    CHECK(y != NULL);
    eager_pool_pop();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
