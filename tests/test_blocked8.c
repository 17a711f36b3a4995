/*
 * test_blocked8.c - the blocked layout with 8-lane blocks (oneDNN's
 * nChw8c, what its AVX2 direct and depthwise kernels take; issue 30)
 * against naive loops written here, on plain data:
 *   - to_blocked / from_blocked: every element at [n][c/8][h][w][c%8],
 *     the lanes past C zeros, the round trip exact (C 12, 20, 8, 3, ...;
 *     positions below, at and past the 8x8 transpose tiles);
 *   - conv2d_blk with block 8: blocked x, a plain 3-channel stem x, the
 *     residual, padded C and O (12 -> 20), depthwise and grouped, stride,
 *     padding and dilation, epilogues, each algo; eagerly and replayed
 *     (prepared state, constant weights); the lanes past O zeros;
 *   - max_pool2d_blk / avg_pool2d_blk on 8-lane blocks vs naive pools;
 *   - the infer errors for blocks that do not match (x of 8 lanes with
 *     the attribute block 16, a residual of 16 lanes with block 8, ...);
 *   - which oneDNN implementation runs a block-8 conv2d_blk (a JIT one
 *     where oneDNN has AVX2: "jit:avx2" / "jit_dw:avx2" on an AVX2 CPU);
 *   - a block-8 graph through .tgraph and ONNX export and import; a
 *     .tgraph conv2d_blk of version 1 (no attribute block) loads with
 *     block 16, one of a newer version is refused;
 *   - OpenCL (when a device exists): block-8 graphs re-planned for it
 *     run; laid out as they are, to_blocked / from_blocked of 8 lanes run
 *     there, conv2d_blk and the pools on 8 lanes are refused at compile
 *     with the reason.
 */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/dnnl_util.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "formats/tgraph_impl.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

#define B8 8

/* ---- to_blocked / from_blocked ---- */

/*
 * x [N,C,H,W] to 8-lane blocks: every element where the naive index puts
 * it, zeros past C; a random blocked tensor back to plain; the round trip.
 */
static void check_roundtrip(int line, int64_t N, int64_t C, int64_t H, int64_t W)
{
    eager_pool_push();
    int64_t cb = (C + B8 - 1) / B8, p = H * W;
    eager_tensor *x = eager_rand_uniform(TG_INTS(N, C, H, W), (uint64_t)line, -1, 1);
    eager_tensor *b = eager_to_blocked(x, B8);
    const graph_type *bt = b ? eager_type(b) : NULL;
    check_report(bt && bt->ndim == 5 && bt->dim[0] == N && bt->dim[1] == cb &&
                     bt->dim[2] == H && bt->dim[3] == W && bt->dim[4] == B8,
                 __FILE__, line, "to_blocked(x, 8) is [N,ceil(C/8),H,W,8]: %s", eager_error());
    if (bt) {
        const float *px = eager_peek(x), *pb = eager_peek(b);
        int64_t bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < cb * B8; c++)
                for (int64_t q = 0; q < p; q++)
                    bad += pb[((n * cb + c / B8) * p + q) * B8 + c % B8] !=
                           (c < C ? px[(n * C + c) * p + q] : 0.0f);
        check_report(bad == 0, __FILE__, line,
                     "to_blocked places every element, zeros past C: %lld wrong", (long long)bad);
        eager_tensor *y = eager_from_blocked(b, C % B8 ? C : 0);
        check_report(y != NULL, __FILE__, line, "from_blocked: %s", eager_error());
        if (y)
            check_floats(eager_peek(y), px, N * C * H * W, 0, __FILE__, line, "round trip");
    }
    /* from_blocked of any blocked values (nonzero spare lanes): dropped */
    eager_tensor *r = eager_rand_uniform(TG_INTS(N, cb, H, W, B8), (uint64_t)line + 1, -1, 1);
    eager_tensor *u = eager_from_blocked(r, C);
    check_report(u && eager_numel(u) == N * C * p, __FILE__, line, "from_blocked(r, %lld): %s",
                 (long long)C, eager_error());
    if (u) {
        const float *pr = eager_peek(r), *pu = eager_peek(u);
        int64_t bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t q = 0; q < p; q++)
                    bad += pu[(n * C + c) * p + q] != pr[((n * cb + c / B8) * p + q) * B8 + c % B8];
        check_report(bad == 0, __FILE__, line, "from_blocked reads [n][c/8][h][w][c%%8]: %lld "
                     "wrong", (long long)bad);
    }
    eager_clear_error();
    eager_pool_pop();
}

static void test_roundtrip(void)
{
    int64_t live = eager_live_tensors();
    check_roundtrip(__LINE__, 2, 12, 5, 7);  /* a padded block; 35 positions: tiles + tail */
    check_roundtrip(__LINE__, 2, 20, 3, 3);  /* 3 blocks, the last half empty */
    check_roundtrip(__LINE__, 1, 8, 8, 8);   /* one full block, 64 positions: a 4-tile step */
    check_roundtrip(__LINE__, 3, 3, 4, 9);   /* 3 channels */
    check_roundtrip(__LINE__, 2, 16, 7, 9);  /* two full blocks, 63: steps, tiles, tail */
    check_roundtrip(__LINE__, 1, 40, 10, 20);
    check_roundtrip(__LINE__, 1, 24, 1, 1);
    check_roundtrip(__LINE__, 2, 8, 1, 7);   /* below one tile */
    eager_pool_push();
    eager_tensor *z = eager_to_blocked(eager_rand_uniform(TG_INTS(0, 12, 2, 2), 1, -1, 1), B8);
    CHECK(z && eager_type(z)->dim[1] == 2 && eager_numel(eager_from_blocked(z, 12)) == 0);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* ---- conv2d_blk on 8-lane blocks vs a naive conv ---- */

typedef struct conv_case {
    int64_t n, c, h, w, o, k, stride, pad, dil, groups, algo;
    int plain_x; /* x given plain [N,C,H,W]: a stem */
} conv_case;

static int64_t out_size(int64_t in, const conv_case *k)
{
    return (in + 2 * k->pad - k->dil * (k->k - 1) - 1) / k->stride + 1;
}

static double post_ref(double y, const graph_ints *post, double r)
{
    for (int i = 0; i < post->n; i++)
        switch (post->v[i]) {
        case GRAPH_POST_ADD: y += r; break;
        case GRAPH_POST_RELU: y = y > 0 ? y : 0; break;
        case GRAPH_POST_SIGMOID: y = 1 / (1 + exp(-y)); break;
        case GRAPH_POST_TANH: y = tanh(y); break;
        }
    return y;
}

/* Plain NCHW conv in double: w [O, C/groups, k, k], groups, dilation. */
static void naive_conv(const conv_case *k, const float *x, const float *w, const float *b,
                       const float *res, const graph_ints *post, double *y)
{
    int64_t oh = out_size(k->h, k), ow = out_size(k->w, k);
    int64_t g = k->groups, cg = k->c / g, og = k->o / g;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double s = b[o];
                    for (int64_t cc = 0; cc < cg; cc++) {
                        int64_t c = o / og * cg + cc;
                        for (int64_t u = 0; u < k->k; u++)
                            for (int64_t v = 0; v < k->k; v++) {
                                int64_t hi = i * k->stride - k->pad + u * k->dil;
                                int64_t wi = j * k->stride - k->pad + v * k->dil;
                                if (hi >= 0 && hi < k->h && wi >= 0 && wi < k->w)
                                    s += (double)x[((n * k->c + c) * k->h + hi) * k->w + wi] *
                                         w[((o * cg + cc) * k->k + u) * k->k + v];
                            }
                    }
                    int64_t at = ((n * k->o + o) * oh + i) * ow + j;
                    y[at] = post_ref(s, post, res ? res[at] : 0);
                }
}

/* Normalized error of blocked yb (8 lanes, O channels) vs plain want;
 * *pad_ok: the lanes past O are zeros. */
static double blocked_error(const float *yb, const double *want, int64_t N, int64_t O,
                            int64_t P, int *pad_ok)
{
    int64_t cb = (O + B8 - 1) / B8;
    double scale = 1e-6, diff = 0;
    *pad_ok = 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < cb * B8; c++)
            for (int64_t q = 0; q < P; q++) {
                float got = yb[((n * cb + c / B8) * P + q) * B8 + c % B8];
                if (c >= O) {
                    *pad_ok &= got == 0.0f;
                    continue;
                }
                double w = want[(n * O + c) * P + q];
                scale = fmax(scale, fabs(w));
                diff = fmax(diff, check_abs_diff(got, w));
            }
    return diff / scale;
}

static void check_conv8(int line, conv_case k, graph_ints post)
{
    eager_pool_push();
    int has_res = 0;
    for (int i = 0; i < post.n; i++)
        has_res |= post.v[i] == GRAPH_POST_ADD;
    int64_t oh = out_size(k.h, &k), ow = out_size(k.w, &k);
    eager_tensor *x = eager_rand_uniform(TG_INTS(k.n, k.c, k.h, k.w), (uint64_t)line, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(k.o, k.c / k.groups, k.k, k.k),
                                         (uint64_t)line + 1, -0.3f, 0.3f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(k.o), (uint64_t)line + 2, -1, 1);
    eager_tensor *r = eager_rand_uniform(TG_INTS(k.n, k.o, oh, ow), (uint64_t)line + 3, -1, 1);
    eager_tensor *yb = eager_conv2d_blk(
        k.plain_x ? x : eager_to_blocked(x, B8), w, b, has_res ? eager_to_blocked(r, B8) : EAGER_NONE,
        TG_INTS(k.stride), TG_INTS(k.pad), TG_INTS(k.dil), k.groups, post, 0.0f, k.algo,
        -INFINITY, INFINITY, B8);
    const graph_type *t = yb ? eager_type(yb) : NULL;
    check_report(t && t->ndim == 5 && t->dim[1] == (k.o + 7) / 8 && t->dim[4] == B8, __FILE__,
                 line, "conv2d_blk block 8 runs, y [N,ceil(O/8),OH,OW,8]: %s", eager_error());
    if (t) {
        int64_t n = k.n * k.o * oh * ow;
        double *want = malloc(sizeof *want * (size_t)(n + 1));
        naive_conv(&k, eager_peek(x), eager_peek(w), eager_peek(b), has_res ? eager_peek(r) : NULL,
                   &post, want);
        int pad_ok;
        double e = blocked_error(eager_peek(yb), want, k.n, k.o, oh * ow, &pad_ok);
        double tol = k.algo == 2 ? 1e-3 : 1e-4;
        check_report(e <= tol, __FILE__, line, "conv2d_blk block 8 error %g <= %g", e, tol);
        check_report(pad_ok, __FILE__, line, "conv2d_blk block 8: the lanes past O are zeros");
        free(want);
    }
    eager_clear_error();
    eager_pool_pop();
}

static void test_conv8(void)
{
    int64_t live = eager_live_tensors();
    graph_ints posts[] = {TG_INTS(), TG_INTS(GRAPH_POST_RELU),
                          TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), TG_INTS(GRAPH_POST_SIGMOID),
                          TG_INTS(GRAPH_POST_TANH, GRAPH_POST_ADD)};
    for (int p = 0; p < (int)(sizeof posts / sizeof *posts); p++) {
        /* n, c, h, w, o, k, stride, pad, dil, groups, algo, plain_x */
        check_conv8(__LINE__, (conv_case){2, 16, 9, 10, 16, 3, 1, 1, 1, 1, 1}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 16, 9, 10, 24, 3, 1, 1, 1, 1, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 16, 8, 8, 16, 3, 1, 1, 1, 1, 2}, posts[p]);
        /* padded blocks: 12 -> 20, 3x3 and 1x1; 20 -> 12 */
        check_conv8(__LINE__, (conv_case){2, 12, 7, 6, 20, 3, 1, 1, 1, 1, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 12, 5, 5, 20, 1, 1, 0, 1, 1, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 20, 6, 7, 12, 3, 1, 1, 1, 1, 1}, posts[p]);
        /* stride, padding, dilation */
        check_conv8(__LINE__, (conv_case){1, 16, 11, 9, 16, 3, 2, 1, 1, 1, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 8, 12, 11, 8, 3, 1, 2, 2, 1, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 12, 13, 12, 20, 3, 2, 3, 3, 1, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 8, 9, 9, 16, 5, 1, 2, 1, 1, 0}, posts[p]);
        /* depthwise (padded 12, and 16 dilated, strided), grouped with 8
         * and 4 channels per group, channel multiplier 2 */
        check_conv8(__LINE__, (conv_case){2, 12, 9, 10, 12, 3, 1, 1, 1, 12, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 16, 11, 9, 16, 3, 2, 1, 1, 16, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 16, 10, 10, 16, 3, 1, 2, 2, 16, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 16, 6, 6, 16, 3, 1, 1, 1, 2, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 16, 6, 6, 24, 3, 1, 1, 1, 4, 0}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 8, 6, 6, 16, 3, 1, 1, 1, 8, 0}, posts[p]);
        /* stems: 3 plain channels in, 8 / 20 blocked out */
        check_conv8(__LINE__, (conv_case){2, 3, 15, 13, 8, 3, 2, 1, 1, 1, 0, 1}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 3, 12, 12, 20, 3, 2, 1, 1, 1, 0, 1}, posts[p]);
        check_conv8(__LINE__, (conv_case){1, 3, 9, 9, 12, 3, 1, 1, 1, 1, 2, 1}, posts[p]);
    }
    /* empty spatial input: the bias through the epilogue, lanes past O 0 */
    check_conv8(__LINE__, (conv_case){1, 12, 0, 0, 12, 1, 1, 1, 1, 1, 0},
                TG_INTS(GRAPH_POST_SIGMOID));
    CHECK(eager_live_tensors() == live);
}

/*
 * The same convs replayed (the graph marked laid out for this CPU's
 * target, so kept as traced): a traced to_blocked(8) -> conv2d_blk (weights
 * params: prepared state, Winograd tried for algo auto) -> conv2d_blk with
 * the residual -> from_blocked, run twice on new inputs, vs the naive
 * convs chained.
 */
static void test_conv8_replay(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    conv_case k1 = {2, 12, 9, 8, 20, 3, 1, 1, 1, 1, 0}, k2 = {2, 20, 9, 8, 20, 3, 1, 1, 1, 20, 0};
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, 12, 9, 8), 5, -1, 1);
    eager_tensor *w1 = eager_rand_uniform(TG_INTS(20, 12, 3, 3), 6, -0.3f, 0.3f);
    eager_tensor *b1 = eager_rand_uniform(TG_INTS(20), 7, -1, 1);
    eager_tensor *w2 = eager_rand_uniform(TG_INTS(20, 1, 3, 3), 8, -0.3f, 0.3f);
    eager_tensor *b2 = eager_rand_uniform(TG_INTS(20), 9, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_param(w1, "w1");
    trace_param(b1, "b1");
    trace_param(w2, "w2");
    trace_param(b2, "b2");
    eager_tensor *h = eager_conv2d_blk(eager_to_blocked(x, B8), w1, b1, EAGER_NONE, TG_INTS(1),
                                       TG_INTS(1), TG_INTS(), 1, TG_INTS(GRAPH_POST_RELU), 0.0f, 0,
                                       -INFINITY, INFINITY, B8);
    eager_tensor *y = eager_conv2d_blk(h, w2, b2, h, TG_INTS(1), TG_INTS(1), TG_INTS(), 20,
                                       TG_INTS(GRAPH_POST_ADD, GRAPH_POST_SIGMOID), 0.0f, 0,
                                       -INFINITY, INFINITY, B8);
    trace_output(eager_from_blocked(y, 20), "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "block-8 convs trace: %s", eager_error());
    char err[512] = "";
    /* laid out for this CPU's target, so that replay_compile keeps the
     * 8-lane blocks whatever block the target takes */
    graph_target tg;
    CHECK_MSG(replay_target(NULL, &tg, err, sizeof err) == TG_OK, "target: %s", err);
    if (g)
        g->target = graph_intern(g, tg.name, -1);
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "block-8 convs compile: %s", err);
    if (p) /* the plan runs the traced 8-lane nodes */
        CHECK_MSG(strncmp(replay_plan_layout(p), "laid out for ", 13) == 0, "block-8 plan: %s",
                  replay_plan_layout(p));
    int64_t n = 2 * 20 * 9 * 8;
    double *mid = malloc(sizeof *mid * (size_t)n), *want = malloc(sizeof *want * (size_t)n);
    float *midf = malloc(sizeof *midf * (size_t)n), *wantf = malloc(sizeof *wantf * (size_t)n);
    for (int run = 0; s && run < 2; run++) {
        eager_tensor *xr = eager_rand_uniform(TG_INTS(2, 12, 9, 8), 20 + (uint64_t)run, -1, 1);
        replay_tensor in = {.name = "x", .type = *eager_type(xr), .input = eager_peek(xr)};
        replay_tensor out = {.name = NULL};
        tg_status st = replay_run(s, &in, 1, &out, 1);
        CHECK_MSG(st == TG_OK, "block-8 replay run %d: %s", run, replay_session_error(s));
        if (st != TG_OK)
            break;
        graph_ints relu = TG_INTS(GRAPH_POST_RELU), add_sig = TG_INTS(GRAPH_POST_ADD, GRAPH_POST_SIGMOID);
        naive_conv(&k1, eager_peek(xr), eager_peek(w1), eager_peek(b1), NULL, &relu, mid);
        for (int64_t i = 0; i < n; i++)
            midf[i] = (float)mid[i];
        naive_conv(&k2, midf, eager_peek(w2), eager_peek(b2), midf, &add_sig, want);
        for (int64_t i = 0; i < n; i++)
            wantf[i] = (float)want[i];
        CHECK(out.type.ndim == 4 && graph_type_numel(&out.type) == n);
        double e = check_normalized_error(out.data, wantf, n);
        CHECK_MSG(e <= 1e-4, "block-8 replay run %d: normalized error %g", run, e);
    }
    free(mid), free(want), free(midf), free(wantf);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* ---- pools on 8-lane blocks vs naive pools ---- */

/* Naive max / avg pool of plain x [N,C,H,W] (NaN propagates in max). */
static void naive_pool(const float *x, int64_t N, int64_t C, int64_t H, int64_t W, int avg,
                       const int64_t k[2], const int64_t s[2], const int64_t p[4], int incl,
                       int64_t oh, int64_t ow, float *y)
{
    for (int64_t nc = 0; nc < N * C; nc++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = avg ? 0 : -INFINITY;
                int64_t cnt = 0, nan = 0;
                for (int64_t u = 0; u < k[0]; u++)
                    for (int64_t v = 0; v < k[1]; v++) {
                        int64_t hi = i * s[0] - p[0] + u, wi = j * s[1] - p[1] + v;
                        if (hi < 0 || hi >= H || wi < 0 || wi >= W)
                            continue;
                        float e = x[(nc * H + hi) * W + wi];
                        nan |= e != e;
                        acc = avg ? acc + e : fmax(acc, e);
                        cnt++;
                    }
                if (avg)
                    acc /= incl ? (double)(k[0] * k[1]) : (double)cnt;
                y[(nc * oh + i) * ow + j] = nan ? NAN : (float)acc;
            }
}

static void check_pool8(int line, int64_t C, int avg, graph_ints kl, graph_ints sl, graph_ints pl,
                        int incl)
{
    eager_pool_push();
    int64_t N = 2, H = 9, W = 8, cb = (C + B8 - 1) / B8;
    eager_tensor *x = eager_rand_uniform(TG_INTS(N, C, H, W), (uint64_t)line, -1, 1);
    float *px = eager_data_mut(x);
    px[5] = NAN; /* only its windows are NaN */
    int64_t k[2] = {kl.v[0], kl.n > 1 ? kl.v[1] : kl.v[0]};
    int64_t s[2] = {sl.n ? sl.v[0] : k[0], sl.n > 1 ? sl.v[1] : sl.n ? sl.v[0] : k[1]};
    int64_t p[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        p[i] = pl.n == 4 ? pl.v[i] : pl.n == 1 ? pl.v[0] : 0;
    int64_t oh = (H + p[0] + p[2] - k[0]) / s[0] + 1, ow = (W + p[1] + p[3] - k[1]) / s[1] + 1;
    eager_tensor *xb = eager_to_blocked(x, B8);
    eager_tensor *yb = avg ? eager_avg_pool2d_blk(xb, kl, sl, pl, incl)
                           : eager_max_pool2d_blk(xb, kl, sl, pl);
    const graph_type *t = yb ? eager_type(yb) : NULL;
    check_report(t && t->ndim == 5 && t->dim[1] == cb && t->dim[2] == oh && t->dim[3] == ow &&
                     t->dim[4] == B8,
                 __FILE__, line, "%s_pool2d_blk on 8 lanes: %s", avg ? "avg" : "max",
                 eager_error());
    if (t) {
        float *want = malloc(sizeof *want * (size_t)(N * C * oh * ow));
        naive_pool(px, N, C, H, W, avg, k, s, p, incl, oh, ow, want);
        const float *pb = eager_peek(yb);
        double diff = 0, scale = 1e-6;
        int zero = 1;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < cb * B8; c++)
                for (int64_t q = 0; q < oh * ow; q++) {
                    float got = pb[((n * cb + c / B8) * oh * ow + q) * B8 + c % B8];
                    if (c >= C) {
                        zero &= got == 0.0f;
                        continue;
                    }
                    float w = want[(n * C + c) * oh * ow + q];
                    scale = fmax(scale, fabs(w));
                    diff = fmax(diff, check_abs_diff(got, w));
                }
        check_report(diff / scale <= 1e-6, __FILE__, line, "%s_pool2d_blk 8 lanes vs naive: %g",
                     avg ? "avg" : "max", diff / scale);
        check_report(zero, __FILE__, line, "pooled padded lanes are zeros");
        free(want);
    }
    eager_clear_error();
    eager_pool_pop();
}

static void test_pool8(void)
{
    int64_t live = eager_live_tensors();
    for (int avg = 0; avg < 2; avg++) {
        check_pool8(__LINE__, 16, avg, TG_INTS(3), TG_INTS(2), TG_INTS(1), 0);
        check_pool8(__LINE__, 12, avg, TG_INTS(2), TG_INTS(), TG_INTS(), 0);
        check_pool8(__LINE__, 20, avg, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1), 0);
        check_pool8(__LINE__, 12, avg, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1), 1);
        check_pool8(__LINE__, 3, avg, TG_INTS(3), TG_INTS(1), TG_INTS(1), 1);
        check_pool8(__LINE__, 8, avg, TG_INTS(5), TG_INTS(1), TG_INTS(2), 0);
    }
    CHECK(eager_live_tensors() == live);
}

/* ---- infer: blocks that do not match ---- */

static void test_errors(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(1, 16, 4, 4), 1, -1, 1);
    eager_tensor *x8 = eager_to_blocked(x, 8), *x16 = eager_to_blocked(x, 16);
    eager_tensor *w = eager_rand_uniform(TG_INTS(16, 16, 3, 3), 2, -1, 1);
    eager_tensor *b = eager_rand_uniform(TG_INTS(16), 3, -1, 1);
    eager_tensor *l4 = eager_rand_uniform(TG_INTS(1, 4, 4, 4, 4), 4, -1, 1);
    CHECK(x8 && x16);
    CHECK_FAILS(eager_to_blocked(x, 4), "block must be 8 or 16, got 4");
    CHECK_FAILS(eager_to_blocked(x, 32), "block must be 8 or 16, got 32");
    CHECK_FAILS(eager_from_blocked(l4, 0), "x must be blocked [N,C/B,H,W,B] (B 8 or 16), got blocks of 4");
    CHECK_FAILS(eager_from_blocked(x8, 17), "channels 17 do not fill the 2 blocks of 8 of x");
    CHECK_FAILS(eager_from_blocked(x8, 8), "channels 8 do not fill the 2 blocks of 8 of x");
    CHECK_FAILS(eager_max_pool2d_blk(l4, TG_INTS(2), TG_INTS(), TG_INTS()),
                "x must be blocked [N,C/B,H,W,B] (B 8 or 16), got blocks of 4");
    CHECK_FAILS(eager_avg_pool2d_blk(x, TG_INTS(2), TG_INTS(), TG_INTS(), 0),
                "x must be blocked [N,C/B,H,W,B] (B 8 or 16), got rank 4");
    /* conv2d_blk: x and the residual take the attribute block */
    CHECK_FAILS(eager_conv2d_blk(x8, w, b, EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1, TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 16),
                "x must be blocked [N,C/16,H,W,16] (block 16), got blocks of 8");
    CHECK_FAILS(eager_conv2d_blk(x16, w, b, EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1, TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 8),
                "x must be blocked [N,C/8,H,W,8] (block 8), got blocks of 16");
    CHECK_FAILS(eager_conv2d_blk(x8, w, b, x16, TG_INTS(), TG_INTS(1), TG_INTS(), 1, TG_INTS(GRAPH_POST_ADD), 0.0f, 0, -INFINITY, INFINITY, 8),
                "residual must be blocked [N,C/8,H,W,8] (block 8), got blocks of 16");
    CHECK_FAILS(eager_conv2d_blk(x, w, b, x16, TG_INTS(), TG_INTS(1), TG_INTS(), 1, TG_INTS(GRAPH_POST_ADD), 0.0f, 0, -INFINITY, INFINITY, 8),
                "residual must be blocked [N,C/8,H,W,8] (block 8), got blocks of 16");
    CHECK_FAILS(eager_conv2d_blk(x8, w, b, EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1, TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 12),
                "block must be 8 or 16, got 12");
    CHECK_FAILS(eager_conv2d_blk(x8, eager_rand_uniform(TG_INTS(16, 24, 1, 1), 5, -1, 1), b, EAGER_NONE, TG_INTS(), TG_INTS(), TG_INTS(), 1, TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 8),
                "x has 2 channel blocks, 24 channels need 3");
    CHECK_FAILS(eager_conv2d_blk(l4, w, b, EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1, TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 8),
                "x must be blocked [N,C/8,H,W,8] (block 8), got blocks of 4");
    /* the residual of 20 output channels in 8 lanes: 3 blocks */
    eager_tensor *w20 = eager_rand_uniform(TG_INTS(20, 16, 1, 1), 6, -1, 1);
    eager_tensor *b20 = eager_rand_uniform(TG_INTS(20), 7, -1, 1);
    CHECK_FAILS(eager_conv2d_blk(x8, w20, b20, x8, TG_INTS(), TG_INTS(), TG_INTS(), 1, TG_INTS(GRAPH_POST_ADD), 0.0f, 0, -INFINITY, INFINITY, 8),
                "residual has 2 channel blocks, 20 channels need 3");
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* ---- which oneDNN implementation a block-8 conv2d_blk runs ---- */

/* The impl of conv2d_blk c -> o (groups g, 3x3, pad 1) on 8 lanes, fixed weights. */
static void impl_of(int64_t c, int64_t o, int64_t g, char *impl, size_t len)
{
    graph_type in[3] = {{GRAPH_F32, 5, {1, (c + 7) / 8, 14, 14, 8}},
                        {GRAPH_F32, 4, {o, c / g, 3, 3}},
                        {GRAPH_F32, 1, {o}}};
    graph_type out = {GRAPH_F32, 5, {1, (o + 7) / 8, 14, 14, 8}};
    graph_conv2d_blk_attrs at = {TG_INTS(1), TG_INTS(1), TG_INTS(), g, TG_INTS(GRAPH_POST_RELU),
                                 0.0f, 1, -INFINITY, INFINITY, 8};
    char err[256] = "";
    tg_status st = eager_dnnl_impl_of(GRAPH_OP_conv2d_blk, &at, in, 3, &out, 2u, 1, impl, len,
                                      err, sizeof err);
    CHECK_MSG(st == TG_OK && impl[0], "impl of a block-8 conv2d_blk %lld -> %lld, groups %lld: %s",
              (long long)c, (long long)o, (long long)g, err);
}

static void test_impl(void)
{
    char direct[64] = "", dw[64] = "";
    impl_of(32, 32, 1, direct, sizeof direct);
    impl_of(32, 32, 32, dw, sizeof dw);
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    int avx2 = ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx2) == (unsigned)dnnl_cpu_isa_avx2;
    int avx512 = ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core) ==
                 (unsigned)dnnl_cpu_isa_avx512_core;
    printf("block-8 conv2d_blk: direct %s, depthwise %s (oneDNN isa %#x)\n", direct, dw,
           (unsigned)isa);
    if (avx2) { /* oneDNN's AVX2 kernels take nChw8c */
        CHECK_MSG(!eager_dnnl_impl_is_ref(direct), "block-8 direct conv runs %s", direct);
        CHECK_MSG(!eager_dnnl_impl_is_ref(dw), "block-8 depthwise conv runs %s", dw);
    }
    if (avx2 && !avx512) { /* exactly AVX2 (ONEDNN_MAX_CPU_ISA=AVX2) */
        CHECK_MSG(strcmp(direct, "jit:avx2") == 0, "block-8 direct conv: %s", direct);
        CHECK_MSG(strcmp(dw, "jit_dw:avx2") == 0, "block-8 depthwise conv: %s", dw);
    }
    /* the same through a traced node */
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(1, 32, 14, 14), 1, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(32, 32, 3, 3), 2, -1, 1);
    eager_tensor *b = eager_rand_uniform(TG_INTS(32), 3, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_param(w, "w");
    trace_param(b, "b");
    trace_output(eager_from_blocked(eager_conv2d_blk(eager_to_blocked(x, 8), w, b, EAGER_NONE,
                                                     TG_INTS(1), TG_INTS(1), TG_INTS(), 1,
                                                     TG_INTS(GRAPH_POST_RELU), 0.0f, 1, -INFINITY,
                                                     INFINITY, 8),
                                    0),
                 "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "traces: %s", eager_error());
    int found = 0;
    for (int32_t i = 0; g && i < g->nnodes; i++) {
        if (g->nodes[i].op != GRAPH_OP_conv2d_blk)
            continue;
        char impl[64] = "", err[256] = "";
        CHECK_MSG(eager_dnnl_node_impl(g, i, impl, sizeof impl, err, sizeof err) == TG_OK,
                  "node impl: %s", err);
        CHECK_MSG(strcmp(impl, direct) == 0, "node impl %s, direct probe %s", impl, direct);
        found++;
    }
    CHECK(found == 1);
    graph_free(g);
    eager_pool_pop();
}

/* ---- files: .tgraph and ONNX ---- */

/*
 * y = from_blocked(avg_pool_blk(max_pool_blk(conv_blk(conv_blk stem(x)
 * + residual)))) on 8 lanes, 20 channels (padded), traced.
 */
static graph *trace_block8(eager_tensor *x, eager_tensor *const *p)
{
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        trace_param(p[i], name);
    }
    eager_tensor *s = eager_conv2d_blk(x, p[0], p[1], EAGER_NONE, TG_INTS(1), TG_INTS(1),
                                       TG_INTS(), 1, TG_INTS(GRAPH_POST_RELU), 0.0f, 0, -INFINITY,
                                       INFINITY, B8);
    eager_tensor *c = eager_conv2d_blk(s, p[2], p[3], s, TG_INTS(1), TG_INTS(2), TG_INTS(2), 20,
                                       TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0.0f, 1,
                                       -INFINITY, INFINITY, B8);
    eager_tensor *m = eager_max_pool2d_blk(c, TG_INTS(3), TG_INTS(1), TG_INTS(1));
    eager_tensor *a = eager_avg_pool2d_blk(m, TG_INTS(2), TG_INTS(2), TG_INTS(), 0);
    eager_tensor *u = eager_from_blocked(a, 20);
    /* and a to_blocked of 8 lanes of a plain value */
    trace_output(eager_from_blocked(eager_to_blocked(eager_relu(u), B8), 20), "y");
    return trace_freeze();
}

static void check_same(const graph *g, const graph *h, eager_tensor *x, const char *what)
{
    eager_pool_push();
    eager_tensor *a = NULL, *b = NULL;
    CHECK_MSG(eager_interpret(g, &x, 1, &a, 1, NULL) == TG_OK, "%s: original runs: %s", what,
              eager_error());
    CHECK_MSG(eager_interpret(h, &x, 1, &b, 1, NULL) == TG_OK, "%s: loaded runs: %s", what,
              eager_error());
    if (a && b) {
        int64_t n = eager_numel(a);
        CHECK_MSG(eager_numel(b) == n, "%s: output sizes", what);
        double e = n == eager_numel(b) ? check_normalized_error(eager_peek(b), eager_peek(a), n)
                                       : INFINITY;
        CHECK_MSG(e <= 1e-5, "%s: normalized error %g", what, e);
    }
    eager_release(a);
    eager_release(b);
    eager_clear_error();
    eager_pool_pop();
}

static void test_files(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, 3, 10, 9), 11, -1, 1), *p[4];
    p[0] = eager_rand_uniform(TG_INTS(20, 3, 3, 3), 12, -0.3f, 0.3f);
    p[1] = eager_rand_uniform(TG_INTS(20), 13, -1, 1);
    p[2] = eager_rand_uniform(TG_INTS(20, 1, 3, 3), 14, -0.3f, 0.3f);
    p[3] = eager_rand_uniform(TG_INTS(20), 15, -1, 1);
    graph *g = trace_block8(x, p);
    CHECK_MSG(g != NULL, "block-8 graph traces: %s", eager_error());
    char err[1024] = "";
    /* .tgraph keeps the attribute */
    void *buf = NULL;
    size_t len = 0;
    graph *h = NULL;
    if (g && format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        h = format_load_mem(buf, len, "b8.tgraph", err, sizeof err);
    free(buf);
    CHECK_MSG(h != NULL, ".tgraph round trip: %s", err);
    int nconv = 0;
    for (int32_t i = 0; h && i < h->nnodes; i++)
        if (h->nodes[i].op == GRAPH_OP_conv2d_blk) {
            nconv++;
            CHECK(((const graph_conv2d_blk_attrs *)tg_node_attrs(&h->nodes[i]))->block == 8);
        }
    CHECK(!h || nconv == 2);
    if (h)
        check_same(g, h, x, ".tgraph");
    graph_free(h);
    /* ONNX: exported as layout nodes around Conv / pools, back as plain ops */
    buf = NULL, len = 0, h = NULL;
    if (g && format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        h = format_onnx_load_mem(buf, len, "b8.onnx", NULL, err, sizeof err);
    free(buf);
    CHECK_MSG(h != NULL, "ONNX round trip: %s", err);
    if (h) {
        check_same(g, h, x, "ONNX");
        eager_tensor *x3 = eager_rand_uniform(TG_INTS(3, 3, 10, 9), 16, -1, 1);
        check_same(g, h, x3, "ONNX, batch 3");
    }
    graph_free(h);
    graph_free(g);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* Little-endian n-byte integers in the raw sections. */
static uint64_t le_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void le_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

/*
 * A file written before conv2d_blk had its attribute block: version 1, no
 * attribute; it loads with the default 16.  The stem conv (plain x) is
 * node 0 of the nodes section (byte 4: op, version, flags, nin, nout,
 * nprov, nattrs, 28 bytes), its attribute block (string index, kind
 * code, i64: 13 bytes) the only one in the file, removed.  The same file
 * claiming a version newer than this build's is refused.
 */
static void test_old_file(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(1, 3, 6, 6), 31, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(20, 3, 3, 3), 32, -0.3f, 0.3f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(20), 33, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_param(w, "w");
    trace_param(b, "b");
    trace_output(eager_from_blocked(eager_conv2d_blk(x, w, b, EAGER_NONE, TG_INTS(1), TG_INTS(1),
                                                     TG_INTS(), 1, TG_INTS(), 0.0f, 0, -INFINITY,
                                                     INFINITY, 16),
                                    20),
                 "y");
    graph *g = trace_freeze();
    CHECK_MSG(g && g->nnodes >= 1 && g->nodes[0].op == GRAPH_OP_conv2d_blk, "stem traced: %s",
              eager_error());
    char err[512] = "";
    format_raw_sections s;
    if (!g || g->nodes[0].op != GRAPH_OP_conv2d_blk ||
        format_encode_raw(g, &s, err, sizeof err) != TG_OK) {
        CHECK_MSG(0, "encode: %s", err);
        graph_free(g);
        eager_pool_pop();
        return;
    }
    /* the string index of "block" */
    const uint8_t *sp = s.p[FORMAT_SEC_STRINGS - 1];
    uint32_t nstr = (uint32_t)le_get(sp, 4), idx = UINT32_MAX;
    size_t at = 4;
    for (uint32_t i = 0; i < nstr && at + 4 <= s.len[FORMAT_SEC_STRINGS - 1]; i++) {
        uint32_t len = (uint32_t)le_get(sp + at, 4);
        if (len == 5 && memcmp(sp + at + 4, "block", 5) == 0)
            idx = i;
        at += 4 + len;
    }
    uint8_t pat[13] = {0};
    le_put(pat, idx, 4);
    pat[4] = (uint8_t)FORMAT_CODE(format_attr_kinds, GRAPH_ATTR_I64);
    le_put(pat + 5, 16, 8);
    uint8_t *np = s.p[FORMAT_SEC_NODES - 1];
    size_t nl = s.len[FORMAT_SEC_NODES - 1], found = 0, where = 0;
    for (size_t i = 4; i + 13 <= nl; i++)
        if (memcmp(np + i, pat, 13) == 0)
            found++, where = i;
    CHECK_MSG(idx != UINT32_MAX && found == 1, "string %u, %zu attributes block", idx, found);
    if (found == 1) {
        CHECK(le_get(np + 8, 4) == 2 && le_get(np + 28, 4) == 10); /* version, nattrs */
        /* newer than this build: refused */
        le_put(np + 8, 3, 4);
        void *buf = NULL;
        size_t len = 0;
        CHECK(format_pack(&s, 3, &buf, &len, err, sizeof err) == TG_OK);
        graph *h = buf ? format_load_mem(buf, len, "old.tgraph", err, sizeof err) : NULL;
        CHECK(h == NULL);
        CHECK_MSG(strstr(err, "op 'conv2d_blk' version 3 is newer than this build's (2)"), "%s",
                  err);
        graph_free(h);
        free(buf);
        /* version 1 without the attribute */
        le_put(np + 8, 1, 4);
        le_put(np + 28, 9, 4);
        memmove(np + where, np + where + 13, nl - where - 13);
        s.len[FORMAT_SEC_NODES - 1] = nl - 13;
        buf = NULL;
        CHECK(format_pack(&s, 3, &buf, &len, err, sizeof err) == TG_OK);
        h = buf ? format_load_mem(buf, len, "old.tgraph", err, sizeof err) : NULL;
        CHECK_MSG(h != NULL, "a version-1 conv2d_blk loads: %s", err);
        if (h) {
            CHECK(((const graph_conv2d_blk_attrs *)tg_node_attrs(&h->nodes[0]))->block == 16);
            check_same(g, h, x, "version-1 conv2d_blk");
        }
        graph_free(h);
        free(buf);
    }
    format_raw_free(&s);
    graph_free(g);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* ---- OpenCL: layout copies of 8 lanes run, blocked convs and pools refused ---- */

/*
 * k 0: y = from_blocked(relu(to_blocked(x, 8))); 1..3: conv2d_blk,
 * max_pool2d_blk, avg_pool2d_blk on x in 8-lane blocks, back to plain.
 */
static graph *trace_ocl_case(int k, eager_tensor *x, eager_tensor *w, eager_tensor *b)
{
    trace_begin(NULL);
    trace_input(x, "x");
    trace_param(w, "w");
    trace_param(b, "b");
    eager_tensor *xb = eager_to_blocked(x, B8), *y;
    if (k == 0)
        y = eager_relu(xb);
    else if (k == 1)
        y = eager_conv2d_blk(xb, w, b, EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_INTS(), 1,
                             TG_INTS(GRAPH_POST_RELU), 0.0f, 0, -INFINITY, INFINITY, B8);
    else if (k == 2)
        y = eager_max_pool2d_blk(xb, TG_INTS(2), TG_INTS(), TG_INTS());
    else
        y = eager_avg_pool2d_blk(xb, TG_INTS(2), TG_INTS(), TG_INTS(), 0);
    trace_output(eager_from_blocked(y, 12), "y");
    return trace_freeze();
}

/* Compiles g for OpenCL and runs it on x; the output vs the interpreter's
 * (tol) or NULL and err when compile fails. */
static replay_plan *ocl_run(const graph *g, eager_tensor *x, double tol, char *err, size_t len,
                            const char *what)
{
    const replay_opts ocl = {.device = "opencl", .threads = 1};
    replay_plan *p = replay_compile(g, &ocl, err, len);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (!s)
        return p;
    eager_pool_push();
    eager_tensor *want = NULL;
    CHECK(eager_interpret(g, &x, 1, &want, 1, NULL) == TG_OK);
    replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)};
    replay_tensor out = {.name = NULL};
    tg_status st = replay_run(s, &in, 1, &out, 1);
    CHECK_MSG(st == TG_OK, "%s: OpenCL run: %s", what, replay_session_error(s));
    if (st == TG_OK && want) {
        double e = check_normalized_error(out.data, eager_peek(want), eager_numel(want));
        CHECK_MSG(e <= tol, "%s on OpenCL (%s): error %g > %g", what, replay_plan_layout(p), e,
                  tol);
    }
    eager_release(want);
    eager_pool_pop();
    replay_session_free(s);
    return p;
}

/*
 * As traced (no target: an older graph's blocks) replay_compile re-plans
 * the layout for OpenCL, and each runs.  Claimed laid out for OpenCL
 * (graph.target "opencl", kept as is): the 8-lane layout copies run
 * there (strided copies of any block), conv2d_blk and the pools on 8
 * lanes are refused by supports_op with the reason.
 */
static void test_opencl(void)
{
    replay_device_info dev;
    char err[4096] = "";
    if (replay_backend_devices("opencl", &dev, 1, err, sizeof err) <= 0) {
        printf("OpenCL part skipped: no device (%s)\n", err);
        return;
    }
    int64_t live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, 12, 5, 6), 21, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(12, 12, 3, 3), 22, -0.3f, 0.3f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(12), 23, -1, 1);
    static const char *const ops[] = {"layout copies", "conv2d_blk", "max_pool2d_blk",
                                      "avg_pool2d_blk"};
    for (int k = 0; k < 4; k++) {
        graph *g = trace_ocl_case(k, x, w, b);
        CHECK_MSG(g != NULL, "%s traces: %s", ops[k], eager_error());
        if (!g)
            continue;
        err[0] = '\0';
        replay_plan *p = ocl_run(g, x, 1e-4, err, sizeof err, ops[k]);
        CHECK_MSG(p != NULL, "%s re-planned for OpenCL: %s", ops[k], err);
        replay_plan_free(p);
        g->target = graph_intern(g, "opencl", -1);
        err[0] = '\0';
        p = ocl_run(g, x, 0, err, sizeof err, ops[k]);
        if (k == 0) {
            CHECK_MSG(p != NULL, "8-lane to_blocked / from_blocked on OpenCL: %s", err);
        } else {
            CHECK(p == NULL);
            CHECK_MSG(strstr(err, ops[k]) && strstr(err, "not supported") &&
                          strstr(err, "blocked values of 8 lanes: the OpenCL kernels take 16"),
                      "%s refused: %s", ops[k], err);
        }
        replay_plan_free(p);
        graph_free(g);
    }
    eager_clear_error();
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

int main(void)
{
    test_roundtrip();
    test_conv8();
    test_conv8_replay();
    test_pool8();
    test_errors();
    test_impl();
    test_files();
    test_old_file();
    test_opencl();
    return check_done();
}
