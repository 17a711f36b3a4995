/*
 * test_ep.c - linear_ep and conv2d_ep against naive double-precision
 * loops (linear / conv computed here, then the epilogue steps in order):
 * every post code alone and in chains, with and without a residual, 1-D,
 * 2-D and batched linear inputs, conv strides / padding / groups, the
 * paths that never reach oneDNN (K = 0, an empty conv input), every error
 * path.  Then prepared state: the matmul, linear, conv2d and _ep kernels
 * called with a state slot (as replay does) give the eager result on
 * every call, also when the inputs change between calls and when the
 * fixed weights move; and a replayed conv model whose conv weights were
 * packed at prepare time sees a param swap.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/kernel.h"
#include "models.h"
#include "replay/replay.h"
#include "tracer/trace.h"

#define NO TG_NOINTS
#define NOCLIP -INFINITY, INFINITY /* clip_min, clip_max when post has no CLIP */
enum { ADD = GRAPH_POST_ADD, RELU, GELU, SIGMOID, TANH, SILU, LEAKY, CLIP, HSIG, HSWISH };

/* The epilogue in double: the reference every kernel result meets. */
static double post_ref(const graph_ints *post, float alpha, double v, double res)
{
    for (int k = 0; k < post->n; k++) {
        switch (post->v[k]) {
        case ADD: v += res; break;
        case RELU: v = v > 0 ? v : 0; break;
        case GELU: v = 0.5 * v * (1 + erf(v / sqrt(2.0))); break;
        case SIGMOID: v = 1 / (1 + exp(-v)); break;
        case TANH: v = tanh(v); break;
        case SILU: v = v / (1 + exp(-v)); break;
        case LEAKY: v = v > 0 ? v : alpha * v; break;
        case HSIG: v = fmin(fmax(v / 6 + 0.5, 0), 1); break;
        case HSWISH: v = v * fmin(fmax(v / 6 + 0.5, 0), 1); break;
        }
    }
    return v;
}

static int has_add(const graph_ints *post)
{
    for (int k = 0; k < post->n; k++)
        if (post->v[k] == ADD)
            return 1;
    return 0;
}

/* ---- CLIP: bit for bit as the unfused clip, NaN, infinities and bounds ---- */

/* Same bits (NaN: any NaN, as the clip kernel keeps the one it got). */
static int same_bits(float a, float b)
{
    return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a);
}

/* clip as kernels_unary.c defines it: min(max(x, lo), hi), NaN passes. */
static float clip_ref(float x, float lo, float hi)
{
    float v = x < lo ? lo : x;
    return v > hi ? hi : v;
}

/* got and unfused against clip_ref of x: element i of got holds x[i / per]
 * (per > 0) or x[i % nx] (per < 0: NCHW, one channel per output). */
static void check_clip_bits(int line, const char *what, eager_tensor *got, eager_tensor *unfused,
                            const float *x, int64_t nx, int64_t per, float lo, float hi)
{
    check_report(got && unfused, __FILE__, line, "%s runs: %s", what, eager_error());
    if (!got || !unfused)
        return;
    const float *g = eager_peek(got), *u = eager_peek(unfused);
    int64_t n = nx * (per < 0 ? -per : per), bad = -1;
    float want = 0;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        want = clip_ref(x[per > 0 ? i / per : i % nx] + 0.0f, lo, hi); /* + the zero bias */
        if (!same_bits(g[i], u[i]) || !same_bits(g[i], want))
            bad = i;
    }
    check_report(bad < 0, __FILE__, line, "%s [%g, %g]: element %lld is %g, unfused %g, want %g",
                 what, (double)lo, (double)hi, (long long)bad, bad < 0 ? 0.0 : (double)g[bad],
                 bad < 0 ? 0.0 : (double)u[bad], (double)want);
}

/*
 * y = x * 1 + 0 (K = 1 linear, 1x1 convs whose one nonzero weight is 1):
 * every output is its x exactly, so CLIP meets NaN, +-inf, +-0 and the
 * bounds themselves (oneDNN's clip would send NaN to the lower bound).
 * linear_ep (oneDNN matmul), conv2d_ep (NCHW) and conv2d_blk (direct and
 * auto), alone and after a residual add, bit for bit against the unfused
 * clip and clip_ref.  (-0 + 0 is +0: the bias add comes first.)
 */
static void test_clip_post(void)
{
    static const float bounds[][2] = {{0, 6}, {-1, 1}, {-INFINITY, 6}, {0, INFINITY}, {2, 1}};
    float x[32] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 6.0f, -1.0f, 1.0f, 7.0f,
                   -3.0f, 3.0f, 5.9999995f, 6.0000005f, -1.0000001f, -0.99999994f, 2.0f,
                   1e30f, -1e30f, 1e-40f, -1e-40f, 0.5f, -0.5f, 1.5f};
    for (int i = 24; i < 32; i++)
        x[i] = (float)(i - 28) * 1.75f;
    float x16[16 * 32] = {0}, w16[16 * 16] = {0};
    memcpy(x16, x, sizeof x); /* channel 0 holds x, the others 0 */
    for (int o = 0; o < 16; o++)
        w16[o * 16] = 1.0f; /* each output channel: 1 * channel 0 */
    for (size_t bi = 0; bi < sizeof bounds / sizeof *bounds; bi++) {
        float lo = bounds[bi][0], hi = bounds[bi][1];
        eager_pool_push();
        eager_tensor *xl = eager_from_data(GRAPH_F32, TG_SHAPE(32, 1), x);
        eager_tensor *w = eager_full(GRAPH_F32, TG_SHAPE(16, 1), 1.0);
        eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(16));
        check_clip_bits(__LINE__, "linear_ep",
                        eager_linear_ep(xl, w, b, EAGER_NONE, TG_INTS(CLIP), 0, lo, hi),
                        eager_clip(eager_linear(xl, w, b), lo, hi), x, 32, 16, lo, hi);
        eager_tensor *z = eager_zeros(GRAPH_F32, TG_SHAPE(32, 16));
        check_clip_bits(__LINE__, "linear_ep add+clip",
                        eager_linear_ep(xl, w, b, z, TG_INTS(ADD, CLIP), 0, lo, hi),
                        eager_clip(eager_add(eager_linear(xl, w, b), z), lo, hi), x, 32, 16, lo,
                        hi);
        eager_tensor *xc = eager_from_data(GRAPH_F32, TG_SHAPE(1, 1, 4, 8), x);
        eager_tensor *wc = eager_full(GRAPH_F32, TG_SHAPE(16, 1, 1, 1), 1.0);
        check_clip_bits(__LINE__, "conv2d_ep",
                        eager_conv2d_ep(xc, wc, b, EAGER_NONE, NO, NO, NO, 1, TG_INTS(CLIP), 0,
                                        lo, hi),
                        eager_clip(eager_conv2d(xc, wc, b, NO, NO, NO, 1), lo, hi), x, 32, -16,
                        lo, hi);
        eager_tensor *xb = eager_from_data(GRAPH_F32, TG_SHAPE(1, 16, 4, 8), x16);
        eager_tensor *wb = eager_from_data(GRAPH_F32, TG_SHAPE(16, 16, 1, 1), w16);
        eager_tensor *zb = eager_zeros(GRAPH_F32, TG_SHAPE(1, 16, 4, 8));
        for (int64_t algo = 0; algo <= 1; algo++) {
            eager_tensor *yb = eager_conv2d_blk(eager_to_blocked(xb, 16), wb, b,
                                                eager_to_blocked(zb, 16), NO, NO, NO, 1,
                                                TG_INTS(ADD, CLIP), 0, algo, lo, hi, 16);
            check_clip_bits(__LINE__, algo ? "conv2d_blk direct" : "conv2d_blk",
                            yb ? eager_from_blocked(yb, 0) : NULL,
                            eager_clip(eager_add(eager_conv2d(xb, wb, b, NO, NO, NO, 1), zb), lo,
                                       hi),
                            x, 32, -16, lo, hi);
        }
        eager_pool_pop();
    }
}

/* Same class of value (NaN, each infinity) and, for finite values, within
 * 1e-4 relative plus 1e-10 absolute: oneDNN's eltwise math is not our
 * vector math bit for bit (gelu at -3 differs by 4e-5 relative, and it
 * flushes the far tails of sigmoid, silu and gelu to zeros of either sign
 * where ours keeps tiny values), but its NaN and infinity handling must be
 * the same. */
static int same_class(float a, float b)
{
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b))
        return same_bits(a, b);
    return fabsf(a - b) <= 1e-4f * fabsf(b) + 1e-10f;
}

/* hardsigmoid and hardswish unfused, as ONNX's HardSigmoid (alpha 1/6,
 * beta 1/2) and HardSwish import (formats/onnx/onnx_read_compose.c). */
static eager_tensor *hsig_at(const char *file, int line, const char *func, eager_tensor *x)
{
    eager_tensor *k = eager_full(GRAPH_F32, TG_SHAPE(1), 1.0 / 6.0);
    eager_tensor *h = eager_full(GRAPH_F32, TG_SHAPE(1), 0.5);
    return eager_clip_at(file, line, func, eager_add(eager_mul(x, k), h), 0.0f, 1.0f);
}

static eager_tensor *hswish_at(const char *file, int line, const char *func, eager_tensor *x)
{
    return eager_mul(x, hsig_at(file, line, func, x));
}

/*
 * Every activation step at the edges (NaN, +-inf, +-0, huge, tiny), fused
 * (oneDNN post-ops, or the C epilogue) against the op applied to the
 * unfused result: fusing must not change a NaN or an infinity (issue 16).
 * oneDNN's relu sent NaN to 0 and its swish gave NaN at -inf where silu
 * gave -0; now relu runs in C and silu(-inf) is NaN everywhere.
 */
static void test_edge_posts(void)
{
    float x[24] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, 1e-40f, -1e-40f,
                   88.0f, -88.0f, 100.0f, -100.0f, 0.5f, -0.5f, 3.0f, -3.0f, 20.5f, -20.5f,
                   1.0f, -1.0f, 7.0f, -7.0f};
    static const struct {
        int code;
        eager_tensor *(*op)(const char *, int, const char *, eager_tensor *);
        const char *name;
    } steps[] = {{RELU, eager_relu_at, "relu"},       {GELU, eager_gelu_at, "gelu"},
                 {SIGMOID, eager_sigmoid_at, "sigmoid"}, {TANH, eager_tanh_at, "tanh"},
                 {SILU, eager_silu_at, "silu"},  {HSIG, hsig_at, "hardsigmoid"},
                 {HSWISH, hswish_at, "hardswish"}};
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        eager_pool_push();
        eager_tensor *xl = eager_from_data(GRAPH_F32, TG_SHAPE(24, 1), x);
        eager_tensor *w = eager_full(GRAPH_F32, TG_SHAPE(16, 1), 1.0);
        eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(16));
        eager_tensor *xc = eager_from_data(GRAPH_F32, TG_SHAPE(1, 1, 4, 6), x);
        eager_tensor *wc = eager_full(GRAPH_F32, TG_SHAPE(16, 1, 1, 1), 1.0);
        struct {
            const char *what;
            eager_tensor *got, *want;
        } c[2] = {
            {"linear_ep", eager_linear_ep(xl, w, b, EAGER_NONE, TG_INTS(steps[k].code), 0, NOCLIP),
             steps[k].op(EAGER_SITE, eager_linear(xl, w, b))},
            {"conv2d_ep", eager_conv2d_ep(xc, wc, b, EAGER_NONE, NO, NO, NO, 1,
                                          TG_INTS(steps[k].code), 0, NOCLIP),
             steps[k].op(EAGER_SITE, eager_conv2d(xc, wc, b, NO, NO, NO, 1))},
        };
        for (int j = 0; j < 2; j++) {
            CHECK_MSG(c[j].got && c[j].want, "%s %s runs: %s", c[j].what, steps[k].name,
                      eager_error());
            if (!c[j].got || !c[j].want)
                continue;
            const float *g = eager_peek(c[j].got), *u = eager_peek(c[j].want);
            for (int64_t i = 0; i < 24 * 16; i++)
                if (!same_class(g[i], u[i])) {
                    CHECK_MSG(0, "%s %s: element %lld: fused %g, unfused %g", c[j].what,
                              steps[k].name, (long long)i, (double)g[i], (double)u[i]);
                    break;
                }
        }
        eager_pool_pop();
    }
}

/* ---- linear_ep ---- */

/* The naive double-precision linear_ep: rows x k by w [n, k], bias b, post
 * steps with residual r (NULL: none); a malloc'ed [rows, n]. */
static float *linear_ref(const float *px, const float *pw, const float *pb, const float *pr,
                         int64_t rows, int64_t n, int64_t k, const graph_ints *post, float alpha)
{
    float *want = malloc(sizeof(float) * (size_t)(rows * n + 1));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = pb[j];
            for (int64_t q = 0; q < k; q++)
                acc += (double)px[i * k + q] * pw[j * k + q];
            want[i * n + j] = (float)post_ref(post, alpha, acc, pr ? pr[i * n + j] : 0);
        }
    return want;
}

/* x: nd dims xs (last is K); w [n, K]; b [n]; residual when post adds. */
static void check_linear(int line, int nd, const int64_t *xs, int64_t n, graph_ints post,
                         float alpha)
{
    eager_pool_push();
    graph_ints xshape = {nd, {0}}, yshape = {nd, {0}};
    int64_t rows = 1, k = xs[nd - 1];
    for (int i = 0; i < nd; i++) {
        xshape.v[i] = yshape.v[i] = xs[i];
        rows *= i < nd - 1 ? xs[i] : 1;
    }
    yshape.v[nd - 1] = n;
    eager_tensor *x = eager_rand_uniform(xshape, (uint64_t)line, -2, 2);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(n, k), (uint64_t)line + 1, -1, 1);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(n), (uint64_t)line + 2, -1, 1);
    eager_tensor *r = has_add(&post) ? eager_rand_uniform(yshape, (uint64_t)line + 3, -2, 2)
                                     : EAGER_NONE;
    eager_tensor *y = eager_linear_ep(x, w, b, r, post, alpha, NOCLIP);
    check_report(y && eager_numel(y) == rows * n, __FILE__, line, "linear_ep runs: %s",
                 eager_error());
    float *want = linear_ref(eager_peek(x), eager_peek(w), eager_peek(b),
                             r ? eager_peek(r) : NULL, rows, n, k, &post, alpha);
    if (y)
        check_floats(eager_peek(y), want, rows * n, 1e-4, __FILE__, line, "linear_ep");
    free(want);
    eager_pool_pop();
}

static void test_linear_ep(void)
{
    const int64_t m2[] = {5, 24}, m1[] = {24}, m3[] = {2, 3, 17}, k0[] = {3, 0}, r0[] = {0, 8};
    for (int code = ADD; code <= HSWISH; code++)
        if (code != CLIP)
            check_linear(__LINE__ + code * 1000, 2, m2, 7, (graph_ints){1, {code}}, 0.1f);
    check_linear(__LINE__, 2, m2, 7, TG_INTS(ADD, HSWISH, HSIG), 0);
    check_linear(__LINE__, 2, k0, 4, TG_INTS(ADD, HSWISH), 0); /* K = 0: C path */
    check_linear(__LINE__, 2, m2, 7, NO, 0);
    check_linear(__LINE__, 2, m2, 7, TG_INTS(ADD, RELU), 0);
    check_linear(__LINE__, 2, m2, 7, TG_INTS(GELU, ADD, TANH), 0);
    check_linear(__LINE__, 2, m2, 7, TG_INTS(LEAKY, SIGMOID, SILU), 0.25f);
    check_linear(__LINE__, 2, m2, 7, TG_INTS(RELU, RELU, GELU, SILU, TANH, SIGMOID), 0);
    check_linear(__LINE__, 1, m1, 9, TG_INTS(ADD, GELU), 0);
    check_linear(__LINE__, 3, m3, 11, TG_INTS(SILU, ADD), 0);
    check_linear(__LINE__, 2, (int64_t[]){64, 784}, 512, TG_INTS(ADD, RELU), 0);
    check_linear(__LINE__, 2, k0, 4, TG_INTS(ADD, LEAKY, TANH), -0.5f); /* K = 0: C path */
    check_linear(__LINE__, 2, k0, 4, TG_INTS(GELU, SIGMOID), 0);
    check_linear(__LINE__, 2, r0, 4, TG_INTS(ADD, RELU), 0); /* no rows */
    check_linear(__LINE__, 2, m2, 0, TG_INTS(RELU), 0);       /* no features */
}

/* ---- conv2d_ep ---- */

typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw;
    graph_ints stride, padding;
    int64_t groups;
} conv_case;

/* Out size with the attribute lists expanded as the op documents them. */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p)
{
    return (in + 2 * p - k) / s + 1;
}

static double conv_at(const conv_case *k, const float *x, const float *w, int64_t s,
                      int64_t p, int64_t n, int64_t o, int64_t oy, int64_t ox)
{
    int64_t cg = k->c / k->groups, og = k->o / k->groups, g = o / og;
    double acc = 0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t ky = 0; ky < k->kh; ky++)
            for (int64_t kx = 0; kx < k->kw; kx++) {
                int64_t iy = oy * s - p + ky, ix = ox * s - p + kx;
                if (iy >= 0 && iy < k->h && ix >= 0 && ix < k->w)
                    acc += (double)x[((n * k->c + g * cg + ci) * k->h + iy) * k->w + ix] *
                           w[((o * cg + ci) * k->kh + ky) * k->kw + kx];
            }
    return acc;
}

/* Stride and padding here are 0- or 1-entry lists (same for h and w). */
static void check_conv(int line, conv_case k, graph_ints post, float alpha)
{
    int64_t s = k.stride.n ? k.stride.v[0] : 1, p = k.padding.n ? k.padding.v[0] : 0;
    int64_t oh = out_size(k.h, k.kh, s, p), ow = out_size(k.w, k.kw, s, p);
    int64_t total = k.n * k.o * oh * ow;
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(k.n, k.c, k.h, k.w), (uint64_t)line, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(k.o, k.c / k.groups, k.kh, k.kw),
                                         (uint64_t)line + 1, -1, 1);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(k.o), (uint64_t)line + 2, -1, 1);
    eager_tensor *r = has_add(&post)
                          ? eager_rand_uniform(TG_SHAPE(k.n, k.o, oh, ow), (uint64_t)line + 3, -2, 2)
                          : EAGER_NONE;
    eager_tensor *y = eager_conv2d_ep(x, w, b, r, k.stride, k.padding, NO, k.groups, post, alpha,
                                     NOCLIP);
    check_report(y && eager_numel(y) == total, __FILE__, line, "conv2d_ep runs: %s",
                 eager_error());
    float *want = malloc(sizeof(float) * (size_t)(total + 1));
    const float *px = eager_peek(x), *pw = eager_peek(w), *pb = eager_peek(b);
    const float *pr = r ? eager_peek(r) : NULL;
    for (int64_t n = 0, i = 0; n < k.n; n++)
        for (int64_t o = 0; o < k.o; o++)
            for (int64_t yy = 0; yy < oh; yy++)
                for (int64_t xx = 0; xx < ow; xx++, i++) {
                    double v = pb[o] + conv_at(&k, px, pw, s, p, n, o, yy, xx);
                    want[i] = (float)post_ref(&post, alpha, v, pr ? pr[i] : 0);
                }
    if (y)
        check_floats(eager_peek(y), want, total, 1e-4, __FILE__, line, "conv2d_ep");
    free(want);
    eager_pool_pop();
}

static void test_conv2d_ep(void)
{
    conv_case c3 = {2, 3, 8, 8, 4, 3, 3, NO, TG_INTS(1), 1};
    for (int code = ADD; code <= HSWISH; code++)
        if (code != CLIP)
            check_conv(__LINE__ + code * 1000, c3, (graph_ints){1, {code}}, 0.2f);
    /* oneDNN's direct conv, its hardswish post-op; hardsigmoid in C */
    check_conv(__LINE__, (conv_case){1, 64, 14, 14, 64, 3, 3, NO, TG_INTS(1), 1},
               TG_INTS(ADD, HSWISH), 0);
    check_conv(__LINE__, (conv_case){1, 64, 14, 14, 64, 1, 1, NO, NO, 1}, TG_INTS(HSIG), 0);
    check_conv(__LINE__, c3, NO, 0);
    check_conv(__LINE__, c3, TG_INTS(ADD, RELU), 0);
    check_conv(__LINE__, c3, TG_INTS(RELU, ADD), 0);
    check_conv(__LINE__, c3, TG_INTS(GELU, ADD, LEAKY, SIGMOID), 0.3f);
    check_conv(__LINE__, (conv_case){1, 4, 9, 9, 6, 3, 3, TG_INTS(2), TG_INTS(1), 2},
               TG_INTS(SILU, ADD), 0);
    check_conv(__LINE__, (conv_case){2, 8, 7, 7, 8, 3, 3, NO, TG_INTS(1), 8}, TG_INTS(TANH), 0);
    check_conv(__LINE__, (conv_case){2, 16, 5, 5, 8, 1, 1, NO, NO, 1}, TG_INTS(ADD, GELU), 0);
    check_conv(__LINE__, (conv_case){1, 64, 14, 14, 64, 3, 3, NO, TG_INTS(1), 1},
               TG_INTS(ADD, RELU), 0);
    /* empty input channels: the output is the bias, then the epilogue (C path) */
    check_conv(__LINE__, (conv_case){2, 0, 4, 4, 3, 3, 3, NO, TG_INTS(1), 1},
               TG_INTS(ADD, LEAKY, SILU), 0.5f);
    check_conv(__LINE__, (conv_case){0, 3, 4, 4, 3, 3, 3, NO, TG_INTS(1), 1}, TG_INTS(ADD), 0);
}

/* ---- errors ---- */

static void expect_error(const eager_tensor *r, int line, const char *func, tg_status st,
                         const char *msg)
{
    char want[128];
    snprintf(want, sizeof want, "test_ep.c:%d %s", line, func);
    check_report(r == NULL, __FILE__, line, "call should fail");
    check_report(eager_status() == st, __FILE__, line, "status %s, want %s",
                 tg_status_str(eager_status()), tg_status_str(st));
    check_report(strstr(eager_error(), want) != NULL, __FILE__, line,
                 "error \"%s\" should name %s", eager_error(), want);
    check_error(msg, __FILE__, line);
}
#define EXPECT_ERROR(call, st, msg) expect_error((call), __LINE__, __func__, (st), (msg))

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 4));
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(3, 4));
    eager_tensor *w5 = eager_zeros(GRAPH_F32, TG_SHAPE(3, 5));
    eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *r = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    eager_tensor *r3 = eager_zeros(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *ri = eager_zeros(GRAPH_I32, TG_SHAPE(2, 3));
    eager_tensor *cx = eager_zeros(GRAPH_F32, TG_SHAPE(1, 4, 5, 5));
    eager_tensor *cw = eager_zeros(GRAPH_F32, TG_SHAPE(6, 4, 3, 3));
    eager_tensor *cb = eager_zeros(GRAPH_F32, TG_SHAPE(6));
    eager_tensor *cr = eager_zeros(GRAPH_F32, TG_SHAPE(1, 6, 3, 3));
    eager_tensor *cr2 = eager_zeros(GRAPH_F32, TG_SHAPE(1, 6, 1, 1));
    long live = eager_live_tensors();
    EXPECT_ERROR(eager_linear_ep(x, w, b, EAGER_NONE, TG_INTS(RELU, 11), 0, NOCLIP),
                 TG_ERR_ARG, "linear_ep: [2,4] x [3,4] x [3]: post[1] = 11 is not an epilogue step (1..10)");
    EXPECT_ERROR(eager_linear_ep(x, w, b, EAGER_NONE, TG_INTS(0), 0, NOCLIP),
                 TG_ERR_ARG, "post[0] = 0 is not an epilogue step (1..10)");
    EXPECT_ERROR(eager_linear_ep(x, w, b, r, TG_INTS(ADD, ADD), 0, NOCLIP),
                 TG_ERR_ARG, "post has 2 ADD steps, at most 1 (one residual input)");
    EXPECT_ERROR(eager_linear_ep(x, w, b, EAGER_NONE, TG_INTS(ADD), 0, NOCLIP),
                 TG_ERR_ARG, "post has an ADD step but no residual input is given");
    EXPECT_ERROR(eager_linear_ep(x, w, b, r, TG_INTS(RELU), 0, NOCLIP),
                 TG_ERR_ARG, "a residual input is given but post has no ADD step");
    EXPECT_ERROR(eager_linear_ep(x, w, b, r3, TG_INTS(ADD), 0, NOCLIP),
                 TG_ERR_SHAPE, "residual is f32[3], want f32[2,3] (the output's)");
    EXPECT_ERROR(eager_linear_ep(x, w, b, ri, TG_INTS(ADD), 0, NOCLIP),
                 TG_ERR_DTYPE, "residual is i32[2,3], want f32[2,3] (the output's)");
    EXPECT_ERROR(eager_linear_ep(x, w, b, EAGER_NONE, TG_INTS(LEAKY), NAN, NOCLIP), TG_ERR_ARG, "alpha must be finite");
    EXPECT_ERROR(eager_linear_ep(x, w5, b, EAGER_NONE, TG_INTS(RELU), 0, NOCLIP),
                 TG_ERR_SHAPE, "inner dims differ (4 vs 5)");
    EXPECT_ERROR(eager_linear_ep(x, w, EAGER_NONE, EAGER_NONE, TG_INTS(RELU), 0, NOCLIP),
                 TG_ERR_ARG, "takes 3+ inputs, got 2");
    EXPECT_ERROR(eager_conv2d_ep(cx, cw, cb, cr2, NO, NO, NO, 1, TG_INTS(ADD), 0, NOCLIP),
                 TG_ERR_SHAPE, "conv2d_ep: [1,4,5,5] x [6,4,3,3] x [6] x [1,6,1,1]: residual is "
                 "f32[1,6,1,1], want f32[1,6,3,3] (the output's)");
    EXPECT_ERROR(eager_conv2d_ep(cx, cw, cb, cr, NO, NO, NO, 3, TG_INTS(ADD), 0, NOCLIP),
                 TG_ERR_SHAPE, "groups 3 must divide the input channels 4 and the output channels 6");
    EXPECT_ERROR(eager_conv2d_ep(cx, cw, cb, cr, TG_INTS(0), NO, NO, 1, TG_INTS(ADD), 0, NOCLIP),
                 TG_ERR_ARG, "stride must be >= 1, got [0]");
    EXPECT_ERROR(eager_conv2d_ep(cx, cw, cb, EAGER_NONE, NO, NO, NO, 1, TG_INTS(11), 0, NOCLIP),
                 TG_ERR_ARG, "post[0] = 11 is not an epilogue step (1..10)");
    CHECK_MSG(eager_live_tensors() == live, "errors leaked %ld tensors",
              eager_live_tensors() - live);
    eager_pool_pop();
}

/* ---- prepared state ---- */

/*
 * Runs kernel op on ins (eager tensors) into a new output, like one replay
 * step: with state slot st and the fixed_in mask.  NULL on failure.
 */
static eager_tensor *run_step_t(graph_op op, eager_tensor *const *ins, int nin,
                                const void *attrs, const graph_type *out_t, eager_kstate **st,
                                uint32_t fixed, int nthreads)
{
    graph_type in_t[4];
    const void *in_p[4];
    for (int i = 0; i < nin; i++) {
        in_t[i] = *eager_type(ins[i]);
        in_p[i] = eager_peek(ins[i]);
    }
    graph_ints shape = {out_t->ndim, {0}};
    memcpy(shape.v, out_t->dim, sizeof(int64_t) * (size_t)out_t->ndim);
    eager_tensor *y = eager_zeros(GRAPH_F32, shape);
    void *out_p[1] = {eager_data_mut(y)};
    char err[256] = "";
    eager_kargs ka = {in_t, in_p, nin, attrs, out_t, out_p, 1, nthreads, err, sizeof err, st,
                      fixed};
    tg_status s = eager_kernels[op](&ka);
    CHECK_MSG(s == TG_OK, "%s step: %s", graph_ops[op].name, err);
    return s == TG_OK ? y : NULL;
}
#define run_step(...) run_step_t(__VA_ARGS__, 1)

static void same_floats(int line, const eager_tensor *got, const eager_tensor *want, double tol)
{
    check_report(got && want && eager_numel(got) == eager_numel(want), __FILE__, line,
                 "prepared result has the eager shape");
    if (got && want && eager_numel(got) == eager_numel(want))
        check_floats(eager_peek(got), eager_peek(want), eager_numel(want), tol, __FILE__, line,
                     "prepared == eager");
}

/*
 * matmul, linear, linear_ep with fixed weights (packed at the first call):
 * the same bits as eager on every call of a slot, while the input changes
 * and after the weights move to another buffer (repacked from it).
 */
static void test_prepared_matmul(void)
{
    eager_pool_push();
    eager_tensor *a = eager_rand_uniform(TG_SHAPE(2, 6, 9), 1, -1, 1);
    eager_tensor *a2 = eager_rand_uniform(TG_SHAPE(2, 6, 9), 2, -1, 1);
    eager_tensor *bm1 = eager_rand_uniform(TG_SHAPE(7, 9), 3, -1, 1);
    eager_tensor *bias = eager_rand_uniform(TG_SHAPE(7), 4, -1, 1);
    eager_tensor *res = eager_rand_uniform(TG_SHAPE(2, 6, 7), 5, -1, 1);
    graph_matmul_attrs mt = {0, 1};
    graph_linear_ep_attrs ep = {TG_INTS(ADD, GELU), 0};
    eager_tensor *bm2 = eager_rand_uniform(TG_SHAPE(7, 9), 6, -1, 1);
    eager_kstate *s_mm = NULL, *s_lin = NULL, *s_ep = NULL;
    for (int call = 0; call < 4; call++) {
        eager_tensor *x = call & 1 ? a2 : a; /* the input moves and changes */
        eager_tensor *bm = call < 2 ? bm1 : bm2; /* then the fixed weights move: repacked */
        eager_tensor *want = eager_matmul(x, bm, 0, 1);
        eager_tensor *got = run_step(GRAPH_OP_matmul, (eager_tensor *[]){x, bm}, 2, &mt,
                                     eager_type(want), &s_mm, 2);
        same_floats(__LINE__, got, want, 0);
        want = eager_linear(x, bm, bias);
        got = run_step(GRAPH_OP_linear, (eager_tensor *[]){x, bm, bias}, 3, NULL,
                       eager_type(want), &s_lin, 6);
        same_floats(__LINE__, got, want, 0);
        want = eager_linear_ep(x, bm, bias, res, ep.post, 0, NOCLIP);
        got = run_step(GRAPH_OP_linear_ep, (eager_tensor *[]){x, bm, bias, res}, 4, &ep,
                       eager_type(want), &s_ep, 6);
        same_floats(__LINE__, got, want, 0);
    }
    CHECK_MSG(s_mm && s_lin && s_ep, "the kernels kept prepared state");
    eager_kstate_free(s_mm);
    eager_kstate_free(s_lin);
    eager_kstate_free(s_ep);
    eager_pool_pop();
}

/*
 * linear_ep as a replay step with fixed weights (oneDNN with the weights
 * packed once) against plain loops: sizes that are not multiples of any
 * blocking (rows 1..9, 13, 64; n 1, 5, 16, 17, 33, 100, 512; odd k),
 * epilogues of cheap and transcendental steps with and without a
 * residual, one and two threads, and weights that move between calls
 * (repacked) while the slot lives.
 */
static void test_prepared_gemm(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1},  {7, 5, 3},   {8, 16, 9},   {9, 17, 33},
                                        {13, 33, 64}, {3, 100, 70}, {64, 512, 784}};
    const graph_ints posts[] = {NO, TG_INTS(RELU), TG_INTS(ADD, RELU), TG_INTS(LEAKY),
                                TG_INTS(ADD, GELU), TG_INTS(SIGMOID, ADD)};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int64_t rows = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        for (size_t pi = 0; pi < sizeof posts / sizeof posts[0]; pi++) {
            eager_pool_push();
            uint64_t seed = 100 * si + 10 * pi;
            double ws = 1 / sqrt((double)k); /* sums of order 1, as in a network */
            eager_tensor *x = eager_rand_uniform(TG_SHAPE(rows, k), seed + 1, -2, 2);
            eager_tensor *w1 = eager_rand_uniform(TG_SHAPE(n, k), seed + 2, -ws, ws);
            eager_tensor *w2 = eager_rand_uniform(TG_SHAPE(n, k), seed + 3, -ws, ws);
            eager_tensor *b = eager_rand_uniform(TG_SHAPE(n), seed + 4, -1, 1);
            eager_tensor *r = eager_rand_uniform(TG_SHAPE(rows, n), seed + 5, -2, 2);
            graph_linear_ep_attrs ep = {posts[pi], 0.1f};
            graph_type yt = {GRAPH_F32, 2, {rows, n}};
            eager_kstate *st = NULL;
            for (int call = 0; call < 3; call++) {
                eager_tensor *w = call == 1 ? w2 : w1; /* moves, then moves back */
                int threads = 1 + (call == 2);
                float *want = linear_ref(eager_peek(x), eager_peek(w), eager_peek(b),
                                         has_add(&ep.post) ? eager_peek(r) : NULL, rows, n, k,
                                         &ep.post, ep.alpha);
                eager_tensor *got = run_step_t(GRAPH_OP_linear_ep,
                                               (eager_tensor *[]){x, w, b, r},
                                               has_add(&ep.post) ? 4 : 3, &ep, &yt, &st, 6,
                                               threads);
                if (got)
                    check_floats(eager_peek(got), want, rows * n, 1e-5, __FILE__, __LINE__,
                                 "prepared linear_ep vs plain loops");
                free(want);
            }
            eager_kstate_free(st);
            eager_pool_pop();
        }
    }
}

/*
 * conv2d and conv2d_ep with fixed weights (a prim per slot, its weights
 * packed at the first call when oneDNN wants another layout), on one and
 * two threads (the C epilogue runs in parallel above EAGER_PAR_MIN): the
 * input changes each call; then the weights move to another buffer.
 */
static void test_prepared_conv(void)
{
    for (int threads = 1; threads <= 2; threads++) {
        eager_pool_push();
        int64_t n = threads, c = 16, hw = threads == 1 ? 12 : 32;
        eager_tensor *x = eager_rand_uniform(TG_SHAPE(n, c, hw, hw), 11, -1, 1);
        eager_tensor *x2 = eager_rand_uniform(TG_SHAPE(n, c, hw, hw), 12, -1, 1);
        eager_tensor *w = eager_rand_uniform(TG_SHAPE(32, c, 3, 3), 13, -1, 1);
        eager_tensor *w2 = eager_rand_uniform(TG_SHAPE(32, c, 3, 3), 14, -1, 1);
        eager_tensor *b = eager_rand_uniform(TG_SHAPE(32), 15, -1, 1);
        eager_tensor *res = eager_rand_uniform(TG_SHAPE(n, 32, hw, hw), 16, -1, 1);
        graph_conv2d_attrs ca = {NO, TG_INTS(1), NO, 1};
        graph_conv2d_ep_attrs ea = {NO, TG_INTS(1), NO, 1, TG_INTS(ADD, RELU, GELU), 0};
        eager_kstate *s_conv = NULL, *s_ep = NULL;
        eager_set_threads(threads);
        for (int call = 0; call < 4; call++) {
            eager_tensor *xi = call & 1 ? x2 : x, *wi = call < 2 ? w : w2;
            eager_tensor *want = eager_conv2d(xi, wi, b, NO, TG_INTS(1), NO, 1);
            eager_tensor *got = run_step_t(GRAPH_OP_conv2d, (eager_tensor *[]){xi, wi, b}, 3,
                                           &ca, eager_type(want), &s_conv, 6, threads);
            same_floats(__LINE__, got, want, 1e-5);
            want = eager_conv2d_ep(xi, wi, b, res, NO, TG_INTS(1), NO, 1, ea.post, 0, NOCLIP);
            got = run_step_t(GRAPH_OP_conv2d_ep, (eager_tensor *[]){xi, wi, b, res}, 4, &ea,
                             eager_type(want), &s_ep, 6, threads);
            same_floats(__LINE__, got, want, 1e-5);
        }
        eager_set_threads(1);
        CHECK_MSG(s_conv && s_ep, "the kernels kept prepared state");
        eager_kstate_free(s_conv);
        eager_kstate_free(s_ep);
        eager_pool_pop();
    }
}

/* m traced with its params kept as params (p0, p1, ...). */
static graph *trace_with_params(const model *m, eager_tensor *x)
{
    eager_pool_push();
    trace_begin(NULL);
    trace_input(x, "x");
    for (int i = 0; i < m->nparams; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        trace_param(m->params[i], name);
    }
    trace_output(m->forward(x, m->params), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK_MSG(g != NULL, "%s traces: %s", m->name, eager_error());
    return g;
}

/*
 * A param swap after prepared runs: the MLP's linears and the conv
 * block's convs prepared state (linear weights packed once) on the first
 * runs; replay_set_param then replaces two weights, and the next runs
 * must match eager with the new weights (the session drops its states).
 */
static void test_replay_param_swap(void)
{
    const int kinds[2] = {MODEL_MLP, MODEL_CONV};
    for (int k = 0; k < 2; k++) {
        model m = model_make(kinds[k]);
        int swap[2] = {0, kinds[k] == MODEL_MLP ? 2 : 5};
        eager_tensor *x = model_input(&m, m.input_shape.v[0], 500);
        graph *g = trace_with_params(&m, x);
        char err[256] = "";
        replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        CHECK_MSG(s != NULL, "%s compiles: %s", m.name, err);
        for (int round = 0; s && round < 3; round++) {
            eager_pool_push();
            eager_tensor *params[8];
            memcpy(params, m.params, sizeof params);
            for (int j = 0; round > 0 && j < 2; j++) {
                eager_tensor *old = m.params[swap[j]];
                graph_ints shape = {eager_ndim(old), {0}};
                for (int d = 0; d < eager_ndim(old); d++)
                    shape.v[d] = eager_dim(old, d);
                params[swap[j]] = eager_rand_normal(shape, 600 + (uint64_t)(round * 2 + j), 0,
                                                    0.3f);
                char name[16];
                snprintf(name, sizeof name, "p%d", swap[j]);
                CHECK(replay_set_param(p, name, eager_peek(params[swap[j]]),
                                       eager_nbytes(params[swap[j]]), err, sizeof err) == TG_OK);
            }
            eager_tensor *want = m.forward(x, params);
            for (int run = 0; run < 2; run++) {
                replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                              out = {NULL};
                CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
                if (out.data)
                    check_floats(out.data, eager_peek(want), eager_numel(want), 1e-5, __FILE__,
                                 __LINE__, m.name);
            }
            eager_pool_pop();
        }
        replay_session_free(s);
        replay_plan_free(p);
        graph_free(g);
        eager_release(x);
        model_free(&m);
    }
}

int main(void)
{
    long live = eager_live_tensors();
    test_linear_ep();
    test_conv2d_ep();
    test_errors();
    test_clip_post();
    test_edge_posts();
    test_prepared_matmul();
    test_prepared_gemm();
    test_prepared_conv();
    test_replay_param_swap();
    CHECK(eager_status() == TG_OK);
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
