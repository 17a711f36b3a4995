/*
 * test_workloads.c - the benchmark workloads (workloads/workloads.c) at small
 * sizes, so they cannot rot: each is checked against a naive reference
 * written here (double precision loops; the primitive encoder against the
 * one with fused layer_norm/gelu ops), then traced, saved and loaded
 * (.tgraph in memory), replayed at -O0 and compared with eager bit for bit,
 * and replayed at -O1..-O3 within the suite's tolerance (1e-3 of the
 * output's largest magnitude).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/workloads.h"
#include "check.h"
#include "eager/eager.h"
#include "formats/tgraph.h"
#include "optimize/opt.h"
#include "replay/replay.h"

static workload_size small_size(workload_kind k)
{
    switch (k) {
    case WL_MLP: return (workload_size){.batch = 4, .in = 12, .width = 8, .out = 3};
    case WL_RESBLOCK: return (workload_size){.batch = 2, .in = 6, .width = 4};
    case WL_ENCODER:
    case WL_ENCODER_FUSED:
        return (workload_size){.batch = 2, .in = 5, .width = 16, .out = 4, .ffn = 32};
    case WL_CHAIN: return (workload_size){.in = 1000};
    default: return (workload_size){.in = 16, .iters = 5};
    }
}

static const float *P(const workload *w, int i)
{
    return eager_peek(w->param[i]);
}

/* ---- naive references (double) ---- */

static double sigm(double x)
{
    return 1 / (1 + exp(-x));
}

static void ref_chain(const workload *w, float *y)
{
    const float *x = eager_peek(w->x);
    for (int64_t i = 0; i < w->size.in; i++)
        y[i] = (float)(tanh(x[i] * sigm(x[i]) + 0.5 * x[i]) * 2 - 1);
}

static void ref_tiny(const workload *w, float *y)
{
    const float *x = eager_peek(w->x);
    for (int64_t i = 0; i < w->size.in; i++) {
        double v = x[i];
        for (int64_t k = 0; k < w->size.iters; k++)
            v = fmax(v * 1.01 + 0.01, 0) - v * 0.5 + sigm(v);
        y[i] = (float)v;
    }
}

/* out[r][o] = act(sum_k in[r][k] * wt[o][k] + b[o]) */
static void dense(const double *in, int64_t rows, int64_t k, const float *wt, const float *b,
                  int64_t n, int relu, double *out)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < n; o++) {
            double s = b[o];
            for (int64_t j = 0; j < k; j++)
                s += in[r * k + j] * wt[o * k + j];
            out[r * n + o] = relu && s < 0 ? 0 : s;
        }
}

static void ref_mlp(const workload *w, float *y)
{
    const workload_size *s = &w->size;
    int64_t b = s->batch, n = s->width;
    double *x = malloc(sizeof(double) * (size_t)(b * s->in));
    double *h1 = malloc(sizeof(double) * (size_t)(b * n)), *h2 = malloc(sizeof(double) * (size_t)(b * n));
    double *o = malloc(sizeof(double) * (size_t)(b * s->out));
    for (int64_t i = 0; i < b * s->in; i++)
        x[i] = ((const float *)eager_peek(w->x))[i];
    dense(x, b, s->in, P(w, 0), P(w, 1), n, 1, h1);
    dense(h1, b, n, P(w, 2), P(w, 3), n, 1, h2);
    dense(h2, b, n, P(w, 4), P(w, 5), s->out, 0, o);
    for (int64_t i = 0; i < b * s->out; i++)
        y[i] = (float)o[i];
    free(x);
    free(h1);
    free(h2);
    free(o);
}

/* conv3x3 (pad 1, no bias) then batch norm with params p[first..first+4]. */
static void conv_bn(const workload *w, const double *in, int first, double *out)
{
    int64_t nb = w->size.batch, c = w->size.width, hw = w->size.in;
    const float *k = P(w, first), *sc = P(w, first + 1), *bi = P(w, first + 2);
    const float *mu = P(w, first + 3), *var = P(w, first + 4);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t o = 0; o < c; o++)
            for (int64_t i = 0; i < hw; i++)
                for (int64_t j = 0; j < hw; j++) {
                    double s = 0;
                    for (int64_t ci = 0; ci < c; ci++)
                        for (int di = -1; di <= 1; di++)
                            for (int dj = -1; dj <= 1; dj++) {
                                int64_t ii = i + di, jj = j + dj;
                                if (ii >= 0 && ii < hw && jj >= 0 && jj < hw)
                                    s += in[((b * c + ci) * hw + ii) * hw + jj] *
                                         k[((o * c + ci) * 3 + di + 1) * 3 + dj + 1];
                            }
                    s = (s - mu[o]) / sqrt(var[o] + 1e-5) * sc[o] + bi[o];
                    out[((b * c + o) * hw + i) * hw + j] = s;
                }
}

static void ref_resblock(const workload *w, float *y)
{
    int64_t n = eager_numel(w->x);
    const float *x = eager_peek(w->x);
    double *a = calloc((size_t)n, sizeof(double)), *b = calloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++)
        a[i] = x[i];
    conv_bn(w, a, 0, b);
    for (int64_t i = 0; i < n; i++)
        b[i] = fmax(b[i], 0);
    conv_bn(w, b, 5, a);
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)fmax(a[i] + x[i], 0);
    free(a);
    free(b);
}

/* ---- eager and replay outputs ---- */

/* w's eager output, copied (malloc); *n its element count. */
static float *eager_out(const workload *w, int64_t *n)
{
    eager_pool_push();
    eager_tensor *y = workload_forward(w, w->x);
    CHECK_MSG(y != NULL, "%s: eager: %s", w->name, eager_error());
    float *copy = NULL;
    *n = y ? eager_numel(y) : 0;
    if (y) {
        copy = malloc(eager_nbytes(y));
        memcpy(copy, eager_peek(y), eager_nbytes(y));
    }
    eager_pool_pop();
    return copy;
}

/* Traces w, optimizes at level, saves and loads it, replays: the output
 * (malloc, n floats), or NULL after reporting a failure. */
static float *replay_out(const workload *w, int level, int64_t n)
{
    char err[512] = "";
    graph *g = workload_trace(w, 1), *h = NULL;
    CHECK_MSG(g != NULL, "%s: trace: %s", w->name, eager_error());
    opt_options o = opt_default_options();
    o.level = level;
    int ok = g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK;
    CHECK_MSG(ok || !g, "%s -O%d: optimize: %s", w->name, level, err);
    void *buf = NULL;
    size_t len = 0;
    if (ok && format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        h = format_load_mem(buf, len, w->name, err, sizeof err);
    free(buf);
    CHECK_MSG(h || !ok, "%s -O%d: save/load: %s", w->name, level, err);
    replay_plan *p = h ? replay_compile(h, NULL, err, sizeof err) : NULL;
    CHECK_MSG(p || !h, "%s -O%d: compile: %s", w->name, level, err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    float *y = s ? malloc(sizeof(float) * (size_t)n) : NULL;
    if (s) {
        graph_type yt = *replay_output_type(p, 0);
        CHECK_MSG(graph_type_numel(&yt) == n, "%s -O%d: output size", w->name, level);
        replay_tensor in = {.name = "x", .type = *eager_type(w->x), .input = eager_peek(w->x)};
        replay_tensor out = {.type = yt, .data = y};
        if (graph_type_numel(&yt) != n || replay_run(s, &in, 1, &out, 1) != TG_OK) {
            CHECK_MSG(0, "%s -O%d: run: %s", w->name, level, replay_session_error(s));
            free(y);
            y = NULL;
        }
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    graph_free(h);
    return y;
}

/* max |a - b| / max |b|, as bench/suite.c; NaN counts as infinite. */
static double rel_err(const float *a, const float *b, int64_t n)
{
    double d = 0, m = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        d = e > d || e != e ? (e != e ? INFINITY : e) : d;
        m = fmax(m, fabs(b[i]));
    }
    return d / m;
}

/* The workload against its naive reference (or, for the encoders, each other). */
static void check_reference(const workload *w, const float *y, int64_t n)
{
    float *r = malloc(sizeof(float) * (size_t)n);
    workload other;
    switch (w->kind) {
    case WL_MLP: ref_mlp(w, r); break;
    case WL_RESBLOCK: ref_resblock(w, r); break;
    case WL_CHAIN: ref_chain(w, r); break;
    case WL_TINY: ref_tiny(w, r); break;
    default: { /* primitive and fused encoders compute the same function */
        int64_t m = 0;
        CHECK(workload_make(&other, w->kind == WL_ENCODER ? WL_ENCODER_FUSED : WL_ENCODER,
                            &w->size) == TG_OK);
        float *z = eager_out(&other, &m);
        CHECK(m == n);
        if (z && m == n)
            memcpy(r, z, sizeof(float) * (size_t)n);
        free(z);
        workload_free(&other);
    }
    }
    CHECK_FLOATS(y, r, n, 1e-4);
    free(r);
}

static void test_workload(workload_kind k)
{
    long live = eager_live_tensors();
    workload_size s = small_size(k);
    workload w;
    CHECK(workload_make(&w, k, &s) == TG_OK);
    CHECK(strcmp(w.name, workload_name(k)) == 0 && workload_find(w.name) == (int)k);
    int64_t n = 0;
    float *y = eager_out(&w, &n);
    if (y) {
        check_reference(&w, y, n);
        float *z = replay_out(&w, 0, n);
        CHECK_MSG(z && memcmp(z, y, sizeof(float) * (size_t)n) == 0,
                  "%s: -O0 replay is not bit-identical to eager", w.name);
        free(z);
        for (int level = 1; level <= 3; level++) {
            z = replay_out(&w, level, n);
            double e = z ? rel_err(z, y, n) : INFINITY;
            CHECK_MSG(e <= 1e-3, "%s -O%d: replay vs eager rel err %g", w.name, level, e);
            free(z);
        }
    }
    free(y);
    workload_free(&w);
    CHECK_MSG(eager_live_tensors() == live, "%s leaks %ld tensors", workload_name(k),
              eager_live_tensors() - live);
}

static void test_bad_sizes(void)
{
    workload w;
    workload_size s = small_size(WL_ENCODER);
    s.out = 3; /* 16 is not a multiple of 3 heads */
    CHECK(workload_make(&w, WL_ENCODER, &s) == TG_ERR_ARG);
    CHECK_ERROR("workload encoder: bad sizes");
    eager_clear_error();
    CHECK(workload_find("nope") == -1 && workload_name(WL_COUNT) == NULL);
    char d[256];
    workload_size big = workload_default_size(WL_MLP);
    workload_describe(WL_MLP, &big, d, sizeof d);
    CHECK(strstr(d, "x[64,784]") != NULL);
}

/* The matrix products' work at the sizes, counted by hand from
 * its shapes (2 flops per multiply-add). */
static void test_flops(void)
{
    workload_size s = workload_default_size(WL_MLP);
    /* 64 x (784x512 + 512x512 + 512x10) */
    CHECK(workload_flops(WL_MLP, &s) == 2.0 * 64 * (401408 + 262144 + 5120));
    s = workload_default_size(WL_RESBLOCK);
    /* two convs: 64 out x 64 in x 3x3 taps x 56x56 outputs */
    CHECK(workload_flops(WL_RESBLOCK, &s) == 2 * 2.0 * 64 * 64 * 9 * 3136);
    /* 128 tokens x (256x768 + 256x256 + 256x1024 + 1024x256), plus q k^T and
     * p v: 4 heads x 128 x 128 x 64, twice */
    s = workload_default_size(WL_ENCODER);
    double enc = 2.0 * 128 * (196608 + 65536 + 262144 + 262144) + 2 * 2.0 * 4 * 128 * 128 * 64;
    CHECK(workload_flops(WL_ENCODER, &s) == enc);
    s = workload_default_size(WL_ENCODER_FUSED);
    CHECK(workload_flops(WL_ENCODER_FUSED, &s) == enc);
    s = workload_default_size(WL_CHAIN);
    CHECK(workload_flops(WL_CHAIN, &s) == 0);
    s = workload_default_size(WL_TINY);
    CHECK(workload_flops(WL_TINY, &s) == 0);
}

int main(void)
{
    for (int k = 0; k < WL_COUNT; k++)
        test_workload((workload_kind)k);
    test_bad_sizes();
    test_flops();
    return check_done();
}
