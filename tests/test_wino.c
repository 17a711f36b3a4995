/*
 * test_wino.c - our Winograd F(4x4,3x3) (eager/kernels_wino.c), which
 * conv2d_blk runs on 8-lane blocks where oneDNN has no Winograd (AVX2,
 * SSE4.1; at AVX-512 oneDNN has none for 8 lanes either), against a naive
 * conv in double written here:
 *   - output sizes that are and are not multiples of the 4x4 tile, padding
 *     0, 1, 2 and asymmetric, a batch of 2, input and output channels
 *     padded to the block (C 12, O 20), the lanes past O zeros;
 *   - more tiles than one chunk (V and M of a chunk near 2 MB), at 1 and 2
 *     threads;
 *   - the epilogue (bias, residual add, relu) after it;
 *   - eagerly (algo 2: the weights transformed per call) and replayed
 *     (algo auto with the weights a param: transformed once, run twice on
 *     new inputs);
 *   - that the probe names it ("tg_wino_4x3:..."), and that a 5x5, a
 *     strided, a dilated and a grouped conv do not run it.
 * The error bound: 2e-5 of the output's largest magnitude (F(4x4,3x3)
 * scales by up to 8 and 1/24; measured ~1e-6 at these sizes, the direct
 * conv ~1e-7).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/dnnl_util.h"
#include "eager/eager.h"
#include "graph/graph_impl.h"
#include "replay/replay.h"
#include "tracer/trace.h"

#define TOL 2e-5

typedef struct wcase {
    int64_t n, c, h, w, o;
    int64_t pad[4]; /* top, left, bottom, right */
} wcase;

static int64_t oh_of(const wcase *k) { return k->h + k->pad[0] + k->pad[2] - 2; }
static int64_t ow_of(const wcase *k) { return k->w + k->pad[1] + k->pad[3] - 2; }

/* y = relu(conv3x3(x, w) + b + r) in double, plain NCHW; r may be NULL. */
static void naive(const wcase *k, const float *x, const float *w, const float *b, const float *r,
                  int relu, double *y)
{
    int64_t oh = oh_of(k), ow = ow_of(k);
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double s = b[o];
                    for (int64_t c = 0; c < k->c; c++)
                        for (int u = 0; u < 3; u++)
                            for (int v = 0; v < 3; v++) {
                                int64_t hi = i - k->pad[0] + u, wi = j - k->pad[1] + v;
                                if (hi >= 0 && hi < k->h && wi >= 0 && wi < k->w)
                                    s += (double)x[((n * k->c + c) * k->h + hi) * k->w + wi] *
                                         w[((o * k->c + c) * 3 + u) * 3 + v];
                            }
                    int64_t at = ((n * k->o + o) * oh + i) * ow + j;
                    s += r ? r[at] : 0.0;
                    y[at] = relu && s < 0 ? 0.0 : s;
                }
}

/* max |got - want| / max |want| over y (plain, from_blocked'd). */
static double rel_error(const float *got, const double *want, int64_t n)
{
    double scale = 1e-30, diff = 0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(want[i]));
        diff = fmax(diff, check_abs_diff(got[i], want[i]));
    }
    return diff / scale;
}

/* The lanes past O of a blocked y are zeros. */
static int pad_lanes_zero(const eager_tensor *yb, int64_t o)
{
    const graph_type *t = eager_type(yb);
    const float *p = eager_peek(yb);
    int64_t per = t->dim[2] * t->dim[3];
    for (int64_t n = 0; n < t->dim[0]; n++)
        for (int64_t cb = 0; cb < t->dim[1]; cb++)
            for (int64_t q = 0; q < per; q++)
                for (int64_t l = 0; l < 8; l++)
                    if (cb * 8 + l >= o && p[(((n * t->dim[1] + cb) * per) + q) * 8 + l] != 0.0f)
                        return 0;
    return 1;
}

static graph_ints pad_list(const wcase *k)
{
    return TG_INTS(k->pad[0], k->pad[1], k->pad[2], k->pad[3]);
}

/* Eager, algo 2, with and without the residual + relu, 1 and 2 threads. */
static void check_eager(int line, wcase k)
{
    eager_pool_push();
    int64_t oh = oh_of(&k), ow = ow_of(&k), ny = k.n * k.o * oh * ow;
    eager_tensor *x = eager_rand_uniform(TG_INTS(k.n, k.c, k.h, k.w), (uint64_t)line, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(k.o, k.c, 3, 3), (uint64_t)line + 1, -0.3f, 0.3f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(k.o), (uint64_t)line + 2, -1, 1);
    eager_tensor *r = eager_rand_uniform(TG_INTS(k.n, k.o, oh, ow), (uint64_t)line + 3, -1, 1);
    double *want = malloc(sizeof *want * (size_t)(ny + 1));
    for (int th = 1; th <= 2; th++)
        for (int post = 0; post < 2; post++) {
            eager_set_threads(th);
            eager_tensor *yb = eager_conv2d_blk(
                eager_to_blocked(x, 8), w, b, post ? eager_to_blocked(r, 8) : EAGER_NONE,
                TG_INTS(1), pad_list(&k), TG_INTS(1), 1,
                post ? TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU) : TG_INTS(), 0.0f, 2, -INFINITY,
                INFINITY, 8);
            eager_tensor *y = yb ? eager_from_blocked(yb, k.o) : NULL;
            check_report(y != NULL, __FILE__, line, "conv2d_blk algo 2 runs: %s", eager_error());
            if (!y) {
                eager_clear_error();
                continue;
            }
            naive(&k, eager_peek(x), eager_peek(w), eager_peek(b), post ? eager_peek(r) : NULL,
                  post, want);
            double e = rel_error(eager_peek(y), want, ny);
            check_report(e <= TOL, __FILE__, line,
                         "Winograd %lldx%lldx%lldx%lld -> %lld (post %d, %d threads): error %g",
                         (long long)k.n, (long long)k.c, (long long)k.h, (long long)k.w,
                         (long long)k.o, post, th, e);
            check_report(pad_lanes_zero(yb, k.o), __FILE__, line, "lanes past O are zeros");
        }
    eager_set_threads(1);
    free(want);
    eager_pool_pop();
}

static void test_eager(void)
{
    /* n, c, h, w, o, {top, left, bottom, right} */
    check_eager(__LINE__, (wcase){1, 8, 8, 8, 8, {1, 1, 1, 1}});       /* 2x2 tiles exactly */
    check_eager(__LINE__, (wcase){2, 16, 9, 10, 24, {1, 1, 1, 1}});    /* partial tiles */
    check_eager(__LINE__, (wcase){1, 12, 7, 6, 20, {1, 1, 1, 1}});     /* padded C and O */
    check_eager(__LINE__, (wcase){1, 16, 11, 13, 16, {0, 0, 0, 0}});   /* no padding */
    check_eager(__LINE__, (wcase){1, 8, 5, 6, 16, {2, 2, 2, 2}});      /* output > input */
    check_eager(__LINE__, (wcase){1, 16, 10, 9, 8, {0, 1, 2, 1}});     /* asymmetric */
    check_eager(__LINE__, (wcase){1, 8, 3, 3, 8, {0, 0, 0, 0}});       /* one output pixel */
    check_eager(__LINE__, (wcase){1, 64, 56, 56, 64, {1, 1, 1, 1}});   /* several chunks */
    check_eager(__LINE__, (wcase){2, 160, 14, 14, 40, {1, 1, 1, 1}});  /* wide C */
}

/* Traced with the weights a param (prepared once), replayed twice. */
static void test_replay(void)
{
    eager_pool_push();
    wcase k = {2, 12, 13, 11, 20, {1, 1, 1, 1}};
    int64_t oh = oh_of(&k), ow = ow_of(&k), ny = k.n * k.o * oh * ow;
    eager_tensor *x = eager_rand_uniform(TG_INTS(k.n, k.c, k.h, k.w), 11, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(k.o, k.c, 3, 3), 12, -0.3f, 0.3f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(k.o), 13, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_param(w, "w");
    trace_param(b, "b");
    eager_tensor *yb = eager_conv2d_blk(eager_to_blocked(x, 8), w, b, EAGER_NONE, TG_INTS(1),
                                        TG_INTS(1), TG_INTS(1), 1, TG_INTS(GRAPH_POST_RELU), 0.0f,
                                        0, -INFINITY, INFINITY, 8);
    trace_output(eager_from_blocked(yb, k.o), "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "traces: %s", eager_error());
    char err[512] = "";
    graph_target tg;
    CHECK_MSG(replay_target(NULL, &tg, err, sizeof err) == TG_OK, "target: %s", err);
    if (g) /* laid out for this target: replay_compile keeps the 8 lanes */
        g->target = graph_intern(g, tg.name, -1);
    /* which kernel a prepared step runs: ours where oneDNN has no
     * Winograd for 8 lanes (oneDNN 2.6: none below AVX-512, none for
     * nChw8c at AVX-512) */
    for (int32_t i = 0; g && i < g->nnodes; i++)
        if (g->nodes[i].op == GRAPH_OP_conv2d_blk) {
            char impl[64] = "";
            CHECK_MSG(eager_dnnl_node_impl(g, i, impl, sizeof impl, err, sizeof err) == TG_OK,
                      "node impl: %s", err);
            printf("prepared 3x3 conv2d_blk on 8 lanes runs %s\n", impl);
            CHECK_MSG(strstr(impl, "wino") != NULL, "runs Winograd: %s", impl);
        }
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "compile: %s", err);
    double *want = malloc(sizeof *want * (size_t)ny);
    for (int run = 0; s && run < 2; run++) {
        eager_tensor *xr = eager_rand_uniform(TG_INTS(k.n, k.c, k.h, k.w), 30 + (uint64_t)run, -1, 1);
        replay_tensor in = {.name = "x", .type = *eager_type(xr), .input = eager_peek(xr)};
        replay_tensor out = {.name = NULL};
        tg_status st = replay_run(s, &in, 1, &out, 1);
        CHECK_MSG(st == TG_OK, "run %d: %s", run, replay_session_error(s));
        if (st != TG_OK)
            break;
        naive(&k, eager_peek(xr), eager_peek(w), eager_peek(b), NULL, 1, want);
        double e = rel_error(out.data, want, ny);
        CHECK_MSG(e <= TOL, "replayed Winograd run %d: error %g", run, e);
    }
    free(want);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

/* The probe's name for a conv2d_blk on 8 lanes that asks for Winograd. */
static void impl_of(int64_t k, int64_t stride, int64_t dil, int64_t groups, char *impl,
                    size_t len)
{
    int64_t c = 16, o = 16, h = 14, oh = (h + 2 - dil * (k - 1) - 1) / stride + 1;
    graph_type in[3] = {{GRAPH_F32, 5, {1, c / 8, h, h, 8}},
                        {GRAPH_F32, 4, {o, c / groups, k, k}},
                        {GRAPH_F32, 1, {o}}};
    graph_type out = {GRAPH_F32, 5, {1, o / 8, oh, oh, 8}};
    graph_conv2d_blk_attrs at = {TG_INTS(stride), TG_INTS(1), TG_INTS(dil), groups, TG_INTS(),
                                 0.0f, 2, -INFINITY, INFINITY, 8};
    char err[256] = "";
    tg_status st = eager_dnnl_impl_of(GRAPH_OP_conv2d_blk, &at, in, 3, &out, 2u, 1, impl, len,
                                      err, sizeof err);
    CHECK_MSG(st == TG_OK && impl[0], "impl: %s", err);
}

static void test_which(void)
{
    char impl[64];
    impl_of(3, 1, 1, 1, impl, sizeof impl);
    CHECK_MSG(strncmp(impl, "tg_wino_4x3:", 12) == 0, "3x3 on 8 lanes, algo 2: %s", impl);
    /* not ours: 5x5, strided, dilated, grouped */
    int64_t other[4][4] = {{5, 1, 1, 1}, {3, 2, 1, 1}, {3, 1, 2, 1}, {3, 1, 1, 2}};
    for (int i = 0; i < 4; i++) {
        impl_of(other[i][0], other[i][1], other[i][2], other[i][3], impl, sizeof impl);
        CHECK_MSG(strstr(impl, "tg_wino") == NULL, "case %d runs %s", i, impl);
    }
}

int main(void)
{
    int64_t live = eager_live_tensors();
    test_eager();
    test_replay();
    test_which();
    CHECK(eager_live_tensors() == live);
    return check_done();
}
