/*
 * test_opt_layout.c - the blocked-layout ops (to_blocked, from_blocked,
 * conv2d_blk) against naive references, and the -O3 layout pass on text
 * IR: structure (conversions only at chain boundaries, adjacent inverse
 * pairs cancelled), numerics vs the interpreter on the unoptimized graph,
 * idempotence, declined cases with their --explain reason, and the
 * benchmark's residual block at -O3.
 *
 * Tolerances (normalized max error): direct 1e-4; Winograd 1e-3 (it
 * transforms tiles, losing ~3 digits; measured max is printed).
 */
#include "cpu_caps.h"
#include "opt_fuse_util.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

#define BLK 16
static double g_err_direct, g_err_wino;

/* ---- to_blocked / from_blocked ---- */

/* x [N,C,H,W] to blocked and back; lanes past C must be zeros. */
static void check_roundtrip(int line, int64_t N, int64_t C, int64_t H, int64_t W)
{
    int64_t cb = (C + BLK - 1) / BLK;
    eager_tensor *x = eager_rand_uniform(TG_INTS(N, C, H, W), (uint64_t)line, -1, 1);
    eager_tensor *b = eager_to_blocked(x, 16);
    check_report(b && eager_numel(b) == N * cb * BLK * H * W, __FILE__, line, "to_blocked");
    if (!b)
        return;
    const float *px = eager_peek(x), *pb = eager_peek(b);
    int ok = 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < cb * BLK; c++)
            for (int64_t p = 0; p < H * W; p++)
                ok &= pb[(((n * cb + c / BLK) * H * W) + p) * BLK + c % BLK] ==
                      (c < C ? px[(n * C + c) * H * W + p] : 0.0f);
    check_report(ok, __FILE__, line, "to_blocked places every element, zeros past C");
    eager_tensor *y = eager_from_blocked(b, C % BLK ? C : 0);
    check_report(y != NULL, __FILE__, line, "from_blocked: %s", eager_error());
    if (y)
        check_floats(eager_peek(y), px, N * C * H * W, 0, __FILE__, line, "round trip");
}

static void test_roundtrip(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    check_roundtrip(__LINE__, 2, 32, 5, 7); /* 35 positions: 2 tiles + a tail */
    check_roundtrip(__LINE__, 2, 24, 5, 7); /* a padded block */
    check_roundtrip(__LINE__, 3, 3, 4, 9);  /* one block, 3 channels */
    check_roundtrip(__LINE__, 1, 40, 8, 8);
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, 32, 5, 7), 7, -1, 1);
    eager_tensor *z = eager_to_blocked(eager_rand_uniform(TG_INTS(0, 16, 2, 2), 1, -1, 1), 16);
    CHECK(z && eager_numel(eager_from_blocked(z, 0)) == 0);
    /* errors name this file */
    eager_tensor *b24 = eager_to_blocked(eager_rand_uniform(TG_INTS(1, 24, 2, 2), 1, -1, 1), 16);
    CHECK(b24 && !eager_from_blocked(b24, 33));
    CHECK_ERROR("channels 33 do not fill the 2 blocks of 16 of x");
    CHECK(!eager_from_blocked(b24, 16));
    CHECK_ERROR("channels 16 do not fill the 2 blocks of 16 of x");
    CHECK(!eager_conv2d_blk(b24, eager_rand_uniform(TG_INTS(16, 40, 1, 1), 1, -1, 1),
                            eager_rand_uniform(TG_INTS(16), 1, -1, 1), EAGER_NONE, TG_INTS(), TG_INTS(), TG_INTS(), 1,
                            TG_INTS(), 0.0f, 0, -INFINITY, INFINITY, 16));
    CHECK_ERROR("x has 2 channel blocks, 40 channels need 3");
    CHECK_FAILS(eager_to_blocked(x, 4), "block must be 8 or 16, got 4"); /* names this file */
    CHECK(!eager_from_blocked(x, 0));
    CHECK_ERROR("x must be blocked [N,C/B,H,W,B] (B 8 or 16), got rank 4");
    CHECK(!eager_conv2d_blk(eager_to_blocked(x, 16),
                            eager_rand_uniform(TG_INTS(16, 32, 3, 3), 1, -1, 1),
                            eager_rand_uniform(TG_INTS(16), 1, -1, 1), EAGER_NONE, TG_INTS(),
                            TG_INTS(), TG_INTS(), 1, TG_INTS(), 0.0f, 3, -INFINITY, INFINITY, 16));
    CHECK_ERROR("algo must be 0 (auto), 1 (direct) or 2 (winograd), got 3");
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* ---- conv2d_blk vs a naive conv ---- */

typedef struct conv_case {
    int64_t n, c, h, w, o, k, stride, pad, algo, groups; /* groups 0: 1 */
    int plain_x;                                           /* x given plain (a stem) */
} conv_case;

static double post_ref(double y, const graph_ints *post, double r, double alpha)
{
    for (int i = 0; i < post->n; i++)
        switch (post->v[i]) {
        case GRAPH_POST_ADD: y += r; break;
        case GRAPH_POST_RELU: y = y > 0 ? y : 0; break;
        case GRAPH_POST_LEAKY_RELU: y = y > 0 ? y : alpha * y; break;
        case GRAPH_POST_GELU: y = 0.5 * y * (1 + erf(y / sqrt(2.0))); break;
        case GRAPH_POST_SIGMOID: y = 1 / (1 + exp(-y)); break;
        case GRAPH_POST_TANH: y = tanh(y); break;
        case GRAPH_POST_SILU: y = y / (1 + exp(-y)); break;
        }
    return y;
}

/* Plain NCHW reference in double (w [O, C/groups, k, k]). */
static void naive_conv(const conv_case *k, const float *x, const float *w, const float *b,
                       const float *res, const graph_ints *post, float alpha, int64_t oh,
                       int64_t ow, double *y)
{
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double s = b[o];
                    int64_t g = k->groups > 1 ? k->groups : 1, cg = k->c / g;
                    for (int64_t c = o / (k->o / g) * cg; c < (o / (k->o / g) + 1) * cg; c++)
                        for (int64_t u = 0; u < k->k; u++)
                            for (int64_t v = 0; v < k->k; v++) {
                                int64_t hi = i * k->stride - k->pad + u;
                                int64_t wi = j * k->stride - k->pad + v;
                                if (hi >= 0 && hi < k->h && wi >= 0 && wi < k->w)
                                    s += (double)x[((n * k->c + c) * k->h + hi) * k->w + wi] *
                                         w[((o * cg + c % cg) * k->k + u) * k->k + v];
                            }
                    int64_t at = ((n * k->o + o) * oh + i) * ow + j;
                    y[at] = post_ref(s, post, res ? res[at] : 0, alpha);
                }
}

static void check_conv_blk(int line, conv_case k, graph_ints post)
{
    eager_pool_push();
    int has_res = 0;
    for (int i = 0; i < post.n; i++)
        has_res |= post.v[i] == GRAPH_POST_ADD;
    int64_t oh = (k.h + 2 * k.pad - k.k) / k.stride + 1, ow = (k.w + 2 * k.pad - k.k) / k.stride + 1;
    eager_tensor *x = eager_rand_uniform(TG_INTS(k.n, k.c, k.h, k.w), (uint64_t)line, -1, 1);
    int64_t groups = k.groups > 1 ? k.groups : 1;
    eager_tensor *w = eager_rand_uniform(TG_INTS(k.o, k.c / groups, k.k, k.k), (uint64_t)line + 1,
                                         -0.3f, 0.3f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(k.o), (uint64_t)line + 2, -1, 1);
    eager_tensor *r = eager_rand_uniform(TG_INTS(k.n, k.o, oh, ow), (uint64_t)line + 3, -1, 1);
    eager_tensor *yb = eager_conv2d_blk(
        k.plain_x ? x : eager_to_blocked(x, 16), w, b,
        has_res ? eager_to_blocked(r, 16) : EAGER_NONE, TG_INTS(k.stride), TG_INTS(k.pad),
        TG_INTS(), groups, post, 0.1f, k.algo, -INFINITY, INFINITY, 16);
    eager_tensor *y = eager_from_blocked(yb, k.o % BLK ? k.o : 0);
    check_report(y != NULL, __FILE__, line, "conv2d_blk runs: %s", eager_error());
    if (yb && k.o % BLK) { /* the lanes past O are zeros, whatever the epilogue */
        const float *pb = eager_peek(yb);
        int64_t cb = (k.o + BLK - 1) / BLK, zero = 1;
        for (int64_t n = 0; n < k.n; n++)
            for (int64_t p = 0; p < oh * ow; p++)
                for (int64_t c = k.o % BLK; c < BLK; c++)
                    zero &= pb[((n * cb + cb - 1) * oh * ow + p) * BLK + c] == 0.0f;
        check_report(zero, __FILE__, line, "conv2d_blk: padded lanes are zeros");
    }
    if (y) {
        int64_t n = eager_numel(y);
        double *want = malloc(sizeof *want * (size_t)(n + 1)), scale = 1e-6, diff = 0;
        naive_conv(&k, eager_peek(x), eager_peek(w), eager_peek(b),
                   has_res ? eager_peek(r) : NULL, &post, 0.1f, oh, ow, want);
        const float *got = eager_peek(y);
        for (int64_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs(want[i]));
            diff = fmax(diff, check_abs_diff(got[i], want[i]));
        }
        double e = diff / scale, tol = k.algo == 1 || k.stride != 1 || k.k != 3 ? 1e-4 : 1e-3;
        if (tol > 1e-4)
            g_err_wino = fmax(g_err_wino, e);
        else
            g_err_direct = fmax(g_err_direct, e);
        check_report(e <= tol, __FILE__, line, "conv2d_blk error %g <= %g", e, tol);
        free(want);
    }
    eager_clear_error();
    eager_pool_pop();
}

static void test_conv_blk(void)
{
    int64_t live = eager_live_tensors();
    graph_ints posts[] = {TG_INTS(), TG_INTS(GRAPH_POST_RELU),
                          TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU),
                          TG_INTS(GRAPH_POST_LEAKY_RELU), TG_INTS(GRAPH_POST_GELU),
                          TG_INTS(GRAPH_POST_SIGMOID), TG_INTS(GRAPH_POST_TANH),
                          TG_INTS(GRAPH_POST_SILU, GRAPH_POST_ADD)};
    for (int p = 0; p < (int)(sizeof posts / sizeof *posts); p++) {
        check_conv_blk(__LINE__, (conv_case){2, 32, 9, 10, 16, 3, 1, 1, 1}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){2, 32, 9, 10, 16, 3, 1, 1, 2}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 16, 12, 12, 32, 3, 1, 1, 0}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 16, 11, 9, 32, 3, 2, 1, 1}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 16, 7, 7, 16, 1, 1, 0, 0}, posts[p]);
        /* depthwise 3x3 (stride 1 and 2) and 7x7, grouped with 16 and 8
         * channels per group, channel multiplier 2 */
        check_conv_blk(__LINE__, (conv_case){2, 32, 9, 10, 32, 3, 1, 1, 0, 32}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 48, 11, 9, 48, 3, 2, 1, 0, 48}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 16, 10, 10, 16, 7, 1, 3, 0, 16}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 64, 6, 6, 32, 3, 1, 1, 0, 4}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 32, 6, 6, 32, 3, 1, 1, 0, 4}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 16, 6, 6, 32, 3, 1, 1, 0, 16}, posts[p]);
        /* padded blocks: 24 -> 40 channels, 1x1 and 3x3 (Winograd
         * offered), depthwise on 24, 40 -> 8 */
        check_conv_blk(__LINE__, (conv_case){2, 24, 7, 6, 40, 1, 1, 0, 0}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 24, 8, 8, 40, 3, 1, 1, 0}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 24, 9, 9, 24, 3, 2, 1, 0, 24}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 40, 5, 5, 8, 1, 1, 0, 0}, posts[p]);
        /* a stem: 3 plain channels in, 16 / 24 blocked out */
        check_conv_blk(__LINE__, (conv_case){2, 3, 15, 13, 16, 3, 2, 1, 0, 0, 1}, posts[p]);
        check_conv_blk(__LINE__, (conv_case){1, 3, 12, 12, 24, 3, 2, 1, 0, 0, 1}, posts[p]);
    }
    /* the benchmark shape, both algorithms, with the resblock's epilogue */
    check_conv_blk(__LINE__, (conv_case){1, 64, 56, 56, 64, 3, 1, 1, 1},
                   TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU));
    check_conv_blk(__LINE__, (conv_case){1, 64, 56, 56, 64, 3, 1, 1, 2},
                   TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU));
    /* empty spatial input: every output is the bias through the epilogue */
    check_conv_blk(__LINE__, (conv_case){1, 16, 0, 0, 16, 1, 1, 1, 0}, TG_INTS(GRAPH_POST_RELU));
    CHECK(eager_live_tensors() == live);
}

/*
 * Eager conv2d_blk has no prepared state: every call must see the weights
 * as they are now.  Two shapes called in turn, the weights of each
 * changed in place between calls (same buffer, new values), every result
 * against the naive conv; each algorithm.  Auto without state runs direct
 * (no per-call Winograd weight transform): the same bits as algo 1.
 */
static void test_conv_blk_eager_fresh(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    const conv_case cs[2] = {{1, 32, 7, 7, 32, 3, 1, 1, 0}, {2, 16, 9, 6, 48, 3, 1, 1, 0}};
    eager_tensor *x[2], *xb[2], *w[2], *b[2];
    for (int i = 0; i < 2; i++) {
        x[i] = eager_rand_uniform(TG_INTS(cs[i].n, cs[i].c, cs[i].h, cs[i].w), 60 + i, -1, 1);
        xb[i] = eager_to_blocked(x[i], 16);
        w[i] = eager_rand_uniform(TG_INTS(cs[i].o, cs[i].c, 3, 3), 70 + i, -0.3f, 0.3f);
        b[i] = eager_rand_uniform(TG_INTS(cs[i].o), 80 + i, -1, 1);
    }
    graph_ints none = TG_INTS();
    for (int round = 0; round < 6; round++) {
        int i = round % 2;
        const conv_case *k = &cs[i];
        if (round >= 2) { /* new values in the same buffer */
            float *pw = eager_data_mut(w[i]);
            int64_t nw = eager_numel(w[i]);
            for (int64_t j = 0; j < nw; j++)
                pw[j] = (float)(((j * 7 + round * 13) % 23) - 11) / 40.0f;
        }
        double *want = malloc(sizeof *want * (size_t)(k->n * k->o * k->h * k->w));
        naive_conv(k, eager_peek(x[i]), eager_peek(w[i]), eager_peek(b[i]), NULL, &none, 0, k->h,
                   k->w, want);
        const float *ys[3] = {NULL, NULL, NULL};
        for (int64_t algo = 0; algo < 3; algo++) {
            eager_tensor *yb = eager_conv2d_blk(xb[i], w[i], b[i], EAGER_NONE, TG_INTS(1),
                                                TG_INTS(1), TG_INTS(), 1, TG_INTS(), 0.0f, algo,
                                                -INFINITY, INFINITY, 16);
            eager_tensor *y = eager_from_blocked(yb, 0);
            CHECK_MSG(y != NULL, "eager conv2d_blk round %d algo %lld: %s", round,
                      (long long)algo, eager_error());
            if (!y)
                continue;
            ys[algo] = eager_peek(y);
            int64_t n = eager_numel(y);
            double scale = 1e-6, diff = 0;
            for (int64_t j = 0; j < n; j++) {
                scale = fmax(scale, fabs(want[j]));
                diff = fmax(diff, check_abs_diff(ys[algo][j], want[j]));
            }
            double tol = algo == 2 ? 1e-3 : 1e-4;
            CHECK_MSG(diff / scale <= tol, "eager conv2d_blk round %d algo %lld: error %g > %g",
                      round, (long long)algo, diff / scale, tol);
        }
        if (ys[0] && ys[1])
            CHECK_MSG(!memcmp(ys[0], ys[1], sizeof(float) * (size_t)(k->n * k->o * k->h * k->w)),
                      "eager conv2d_blk round %d: auto runs direct without prepared state",
                      round);
        free(want);
    }
    eager_clear_error();
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* ---- max_pool2d_blk / avg_pool2d_blk vs the plain pools ---- */

static void check_pool_blk(int line, int64_t c, int avg, graph_ints k, graph_ints st,
                           graph_ints pad, int64_t incl)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, c, 9, 8), (uint64_t)line, -1, 1);
    float *px = eager_data_mut(x);
    px[5] = NAN; /* max propagates it, avg too; only its windows */
    eager_tensor *xb = eager_to_blocked(x, 16);
    eager_tensor *want = avg ? eager_avg_pool2d(x, k, st, pad, incl) : eager_max_pool2d(x, k, st, pad);
    eager_tensor *yb = avg ? eager_avg_pool2d_blk(xb, k, st, pad, incl)
                           : eager_max_pool2d_blk(xb, k, st, pad);
    eager_tensor *y = eager_from_blocked(yb, c % BLK ? c : 0);
    check_report(y && want, __FILE__, line, "pools run: %s", eager_error());
    if (y && want) {
        int64_t n = eager_numel(want);
        const float *g = eager_peek(y), *w = eager_peek(want);
        double e = check_normalized_error(g, w, n);
        check_report(e <= 1e-6, __FILE__, line, "%s_pool2d_blk vs the plain pool: %g",
                     avg ? "avg" : "max", e);
        /* the lanes past C pool to zeros */
        const float *pb = eager_peek(yb);
        const graph_type *t = eager_type(yb);
        int zero = 1;
        for (int64_t i = 0; i < eager_numel(yb); i++)
            if ((i / (t->dim[2] * t->dim[3] * BLK)) % t->dim[1] == t->dim[1] - 1 &&
                (t->dim[1] - 1) * BLK + i % BLK >= c)
                zero &= pb[i] == 0.0f;
        check_report(zero, __FILE__, line, "pooled padded lanes are zeros");
    }
    eager_clear_error();
    eager_pool_pop();
}

static void test_pool_blk(void)
{
    int64_t live = eager_live_tensors();
    for (int avg = 0; avg < 2; avg++) {
        check_pool_blk(__LINE__, 32, avg, TG_INTS(3), TG_INTS(2), TG_INTS(1), 0);
        check_pool_blk(__LINE__, 24, avg, TG_INTS(2), TG_INTS(), TG_INTS(), 0);
        check_pool_blk(__LINE__, 40, avg, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1), 0);
        check_pool_blk(__LINE__, 24, avg, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1), 1);
    }
    CHECK(eager_live_tensors() == live);
}

/* ---- the layout pass ---- */

/* Normalized error of g vs ref at a tolerance, then idempotence. */
static void check_pass_rest(int line, graph *g, const graph *ref, double tol)
{
    double e = compare(g, ref, (uint64_t)line);
    check_report(e >= 0 && e <= tol, __FILE__, line, "layout: normalized error %g <= %g", e,
                 tol);
    if (tol > 1e-4)
        g_err_wino = fmax(g_err_wino, e);
    char *before = graph_print_str(g, NULL, NULL), why[1024];
    int again = run_pass_at(__FILE__, line, g, &opt_pass_layout, why, sizeof why);
    char *after = graph_print_str(g, NULL, NULL);
    check_report(!again && before && after && !strcmp(before, after), __FILE__, line,
                 "layout is idempotent");
    free(before);
    free(after);
}

static void test_pass_chain(void)
{
    /* 1x1 conv -> relu -> 3x3 stride-2 conv_ep with a residual from
     * inside the chain; the relu is also a graph output (it leaves) */
    graph *g = PARSE("graph t(%x: f32[B,16,6,6]) -> (y: f32[B,32,3,3], r: f32[B,32,6,6]) {\n"
                     "  sym B = 2\n"
                     "  %w1: f32[32,16,1,1] = const @R(512)\n"
                     "  %w2: f32[32,32,3,3] = const @R(9216)\n  %b2: f32[32] = const @R(32)\n"
                     "  %w3: f32[32,32,1,1] = const @R(1024)\n  %b3: f32[32] = const @R(32)\n"
                     "  %c1: f32[B,32,6,6] = conv2d(%x, %w1) !p0\n"
                     "  %r1: f32[B,32,6,6] = relu(%c1) !p1\n"
                     "  %c2: f32[B,32,3,3] = conv2d(%r1, %w2, %b2) {stride=[2], padding=[1]} !p2\n"
                     "  %c3: f32[B,32,3,3] = conv2d_ep(%c2, %w3, %b3, %c2) {post=[1, 2]} !p3\n"
                     "  return y = %c3\n  return r = %r1\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    CHECK(count_op(g, GRAPH_OP_to_blocked) == 1 && count_op(g, GRAPH_OP_from_blocked) == 2 &&
          count_op(g, GRAPH_OP_conv2d_blk) == 3 && count_op(g, GRAPH_OP_conv2d) == 0 &&
          count_op(g, GRAPH_OP_conv2d_ep) == 0 && count_op(g, GRAPH_OP_relu) == 1);
    int32_t r = find_op(g, GRAPH_OP_relu), c = find_op(g, GRAPH_OP_conv2d_blk);
    CHECK(r >= 0 && g->values[g->nodes[r].out[0]].type.ndim == 5 &&
          g->nodes[r].prov[0] == 1);
    CHECK(c >= 0 && g->nodes[c].prov[0] == 0 && g->nodes[c].nin == 3);
    /* the batch stays dynamic through the blocked values */
    CHECK(g->values[g->outputs[0].value].dyn == 1u && g->values[g->nodes[r].out[0]].dyn == 1u);
    check_pass_rest(__LINE__, g, ref, 1e-4);
    graph_free(g);
    graph_free(ref);
}

static void test_pass_cancel(void)
{
    graph *g = PARSE("graph t(%x: f32[1,16,4,4]) -> (y: f32[1,16,4,4]) {\n"
                     "  %a: f32[1,1,4,4,16] = to_blocked(%x) !p0\n"
                     "  %b: f32[1,16,4,4] = from_blocked(%a) !p1\n"
                     "  %c: f32[1,1,4,4,16] = to_blocked(%b) !p2\n"
                     "  %d: f32[1,1,4,4,16] = relu(%c) !p3\n"
                     "  %y: f32[1,16,4,4] = from_blocked(%d) !p3\n"
                     "  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    /* the second to_blocked is gone; the first from_blocked is now dead code */
    CHECK(count_op(g, GRAPH_OP_to_blocked) == 1);
    int32_t r = find_op(g, GRAPH_OP_relu);
    CHECK(r >= 0 && g->values[g->nodes[r].in[0]].node == find_op(g, GRAPH_OP_to_blocked));
    check_pass_rest(__LINE__, g, ref, 1e-4);
    graph_free(g);
    graph_free(ref);
}

/*
 * A guarded value inside a chain stays plain: the chain splits there
 * (3x3 convs, each region paying for its two conversions).
 */
static void test_pass_guarded(void)
{
    graph *g = PARSE("graph t(%x: f32[1,16,16,16]) -> (y: f32[1,16,16,16]) {\n"
                     "  %w1: f32[16,16,3,3] = const @R(2304)\n"
                     "  %w2: f32[16,16,3,3] = const @R(2304)\n"
                     "  %c1: f32[1,16,16,16] = conv2d(%x, %w1) {padding=[1]} !p0\n"
                     "  %r: f32[1,16,16,16] = relu(%c1) !p1\n"
                     "  guard value %r[3] == 0.25 warn !p1\n"
                     "  %y: f32[1,16,16,16] = conv2d(%r, %w2) {padding=[1]} !p2\n"
                     "  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    int32_t r = find_op(g, GRAPH_OP_relu);
    CHECK(count_op(g, GRAPH_OP_to_blocked) == 2 && count_op(g, GRAPH_OP_from_blocked) == 2 &&
          count_op(g, GRAPH_OP_conv2d_blk) == 2 && r >= 0 &&
          g->values[g->nodes[r].out[0]].type.ndim == 4 && g->guards[0].value == g->nodes[r].out[0]);
    check_pass_rest(__LINE__, g, ref, 1e-3);
    graph_free(g);
    graph_free(ref);
}

/*
 * An inverted-residual block (mobilenet's): 1x1 expand + relu6, depthwise
 * 3x3 (stride 1, then a stride-2 one) + relu6, 1x1 project, a grouped 3x3
 * with 16 channels per group: one chain, blocked end to end.
 */
static void test_pass_depthwise(void)
{
    graph *g = PARSE("graph t(%x: f32[B,16,8,8]) -> (y: f32[B,32,4,4]) {\n"
                     "  sym B = 2\n"
                     "  %w1: f32[64,16,1,1] = const @R(1024)\n  %b1: f32[64] = const @R(64)\n"
                     "  %w2: f32[64,1,3,3] = const @R(576)\n  %b2: f32[64] = const @R(64)\n"
                     "  %w3: f32[64,1,3,3] = const @R(576)\n"
                     "  %w4: f32[32,64,1,1] = const @R(2048)\n"
                     "  %w5: f32[32,16,3,3] = const @R(4608)\n"
                     "  %c1: f32[B,64,8,8] = conv2d_ep(%x, %w1, %b1) {post=[8], clip_min=0, "
                     "clip_max=6} !p0\n"
                     "  %c2: f32[B,64,8,8] = conv2d_ep(%c1, %w2, %b2) {padding=[1], groups=64, "
                     "post=[8], clip_min=0, clip_max=6} !p1\n"
                     "  %c3: f32[B,64,4,4] = conv2d(%c2, %w3) {stride=[2], padding=[1], "
                     "groups=64} !p2\n"
                     "  %c4: f32[B,32,4,4] = conv2d(%c3, %w4) !p3\n"
                     "  %c5: f32[B,32,4,4] = conv2d(%c4, %w5) {padding=[1], groups=2} !p3\n"
                     "  return y = %c5\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    CHECK(count_op(g, GRAPH_OP_to_blocked) == 1 && count_op(g, GRAPH_OP_from_blocked) == 1 &&
          count_op(g, GRAPH_OP_conv2d_blk) == 5);
    check_pass_rest(__LINE__, g, ref, 1e-4);
    graph_free(g);
    graph_free(ref);
}

/*
 * Channel counts that are not multiples of 16: a 3-channel stem read
 * plain, 24- and 40-channel values in padded blocks, a residual add and a
 * mul kept blocked (0 op 0 = 0 in the padded lanes), a sigmoid left plain
 * (sigmoid(0) = 0.5 would put nonzeros there), an 8-channel output.
 */
static void test_pass_padded(void)
{
    graph *g = PARSE("graph t(%x: f32[B,3,16,16]) -> (y: f32[B,8,8,8]) {\n"
                     "  sym B = 2\n"
                     "  %w1: f32[24,3,3,3] = const @R(648)\n  %b1: f32[24] = const @R(24)\n"
                     "  %w2: f32[24,1,3,3] = const @R(216)\n"
                     "  %w3: f32[40,24,1,1] = const @R(960)\n"
                     "  %w4: f32[8,40,1,1] = const @R(320)\n"
                     "  %c1: f32[B,24,8,8] = conv2d_ep(%x, %w1, %b1) {stride=[2], padding=[1], "
                     "post=[8], clip_min=0, clip_max=6} !p0\n"
                     "  %c2: f32[B,24,8,8] = conv2d(%c1, %w2) {padding=[1], groups=24} !p1\n"
                     "  %a: f32[B,24,8,8] = add(%c2, %c1) !p1\n"
                     "  %c3: f32[B,40,8,8] = conv2d(%a, %w3) !p2\n"
                     "  %s: f32[B,40,8,8] = sigmoid(%c3) !p2\n"
                     "  %m: f32[B,40,8,8] = mul(%c3, %s) !p2\n"
                     "  %c4: f32[B,8,8,8] = conv2d(%m, %w4) !p3\n"
                     "  return y = %c4\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    int32_t sg = find_op(g, GRAPH_OP_sigmoid), ad = find_op(g, GRAPH_OP_add);
    CHECK(count_op(g, GRAPH_OP_conv2d_blk) == 4 && count_op(g, GRAPH_OP_to_blocked) == 1 &&
          count_op(g, GRAPH_OP_from_blocked) == 2 && sg >= 0 && ad >= 0 &&
          g->values[g->nodes[sg].out[0]].type.ndim == 4 &&
          g->values[g->nodes[ad].out[0]].type.ndim == 5 &&
          g->values[g->nodes[find_op(g, GRAPH_OP_mul)].out[0]].type.ndim == 5);
    for (int32_t i = 0; i < g->nnodes; i++) /* the stem reads x itself */
        if (g->nodes[i].op == GRAPH_OP_conv2d_blk && g->values[g->nodes[i].in[0]].node < 0)
            CHECK(g->values[g->nodes[i].in[0]].type.ndim == 4);
    check_pass_rest(__LINE__, g, ref, 1e-4);
    graph_free(g);
    graph_free(ref);
}

/*
 * A squeeze-and-excitation block on 24 channels (padded blocks) after a
 * 3x3 conv: the pool becomes an H x W avg_pool2d_blk, the gate [B,24,1,1]
 * multiplies the blocked x by broadcast, as does a per-channel scale
 * [1,24,1,1]: one to_blocked, one from_blocked.
 */
static void test_pass_se(void)
{
    graph *g = PARSE("graph t(%x: f32[B,16,12,12]) -> (y: f32[B,16,12,12]) {\n"
                     "  sym B = 2\n"
                     "  %w1: f32[24,16,3,3] = const @R(3456)\n"
                     "  %w2: f32[8,24,1,1] = const @R(192)\n  %b2: f32[8] = const @R(8)\n"
                     "  %w3: f32[24,8,1,1] = const @R(192)\n  %b3: f32[24] = const @R(24)\n"
                     "  %s: f32[1,24,1,1] = const @R(24)\n"
                     "  %w4: f32[16,24,1,1] = const @R(384)\n"
                     "  %c1: f32[B,24,12,12] = conv2d(%x, %w1) {padding=[1]} !p0\n"
                     "  %p: f32[B,24,1,1] = global_avg_pool(%c1) !p1\n"
                     "  %c2: f32[B,8,1,1] = conv2d_ep(%p, %w2, %b2) {post=[2]} !p1\n"
                     "  %c3: f32[B,24,1,1] = conv2d_ep(%c2, %w3, %b3) {post=[4]} !p1\n"
                     "  %m: f32[B,24,12,12] = mul(%c1, %c3) !p2\n"
                     "  %m2: f32[B,24,12,12] = mul(%m, %s) !p2\n"
                     "  %c4: f32[B,16,12,12] = conv2d(%m2, %w4) !p3\n"
                     "  return y = %c4\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    CHECK(count_op(g, GRAPH_OP_conv2d_blk) == 4 && count_op(g, GRAPH_OP_to_blocked) == 2 &&
          count_op(g, GRAPH_OP_from_blocked) == 1 && count_op(g, GRAPH_OP_global_avg_pool) == 0 &&
          count_op(g, GRAPH_OP_avg_pool2d_blk) == 1 && count_op(g, GRAPH_OP_mul) == 2);
    for (int32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == GRAPH_OP_mul && !(g->nodes[i].flags & GRAPH_NODE_DEAD))
            CHECK(g->values[g->nodes[i].out[0]].type.ndim == 5);
    check_pass_rest(__LINE__, g, ref, 1e-3);
    graph_free(g);
    graph_free(ref);
}

/*
 * densenet's pattern: a channel concat of a conv output and the block's
 * input, then batch_norm + relu before the next conv (no conv absorbs
 * that BN), and a BN that is a graph output: the concat joins the
 * blocks, each BN becomes a depthwise 1x1 blocked conv (the first with
 * its relu as epilogue).
 */
static void test_pass_concat_bn(void)
{
    graph *g = PARSE("graph t(%x: f32[B,16,5,5]) -> (y: f32[B,16,5,5]) {\n"
                     "  sym B = 2\n"
                     "  %w1: f32[32,16,3,3] = const @R(4608)\n"
                     "  %w2: f32[16,48,1,1] = const @R(768)\n"
                     "  %s1: f32[48] = const @P(48)\n  %b1: f32[48] = const @R(48)\n"
                     "  %m1: f32[48] = const @R(48)\n  %v1: f32[48] = const @P(48)\n"
                     "  %s2: f32[16] = const @P(16)\n  %b2: f32[16] = const @R(16)\n"
                     "  %m2: f32[16] = const @R(16)\n  %v2: f32[16] = const @P(16)\n"
                     "  %c1: f32[B,32,5,5] = conv2d(%x, %w1) {padding=[1]} !p0\n"
                     "  %cat: f32[B,48,5,5] = concat(%c1, %x) {axis=1} !p1\n"
                     "  %n1: f32[B,48,5,5] = batch_norm(%cat, %s1, %b1, %m1, %v1) !p1\n"
                     "  %r1: f32[B,48,5,5] = relu(%n1) !p1\n"
                     "  %c2: f32[B,16,5,5] = conv2d(%r1, %w2) !p2\n"
                     "  %n2: f32[B,16,5,5] = batch_norm(%c2, %s2, %b2, %m2, %v2) {eps=0.001} !p3\n"
                     "  return y = %n2\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    int32_t cat = find_op(g, GRAPH_OP_concat);
    CHECK(count_op(g, GRAPH_OP_conv2d_blk) == 4 && count_op(g, GRAPH_OP_to_blocked) == 1 &&
          count_op(g, GRAPH_OP_from_blocked) == 1 && count_op(g, GRAPH_OP_batch_norm) == 0 &&
          count_op(g, GRAPH_OP_relu) == 0 && cat >= 0 &&
          g->values[g->nodes[cat].out[0]].type.ndim == 5);
    check_pass_rest(__LINE__, g, ref, 1e-5);
    graph_free(g);
    graph_free(ref);
}

/*
 * regnet's grouped convs, 8 channels per group: oneDNN has only its
 * reference kernel for them blocked, so pairs of groups are packed into
 * blocked groups of 16 (40 channels: 5 groups -> 3, the last half empty),
 * with a relu epilogue and a residual; with a sigmoid epilogue (0 -> 0.5
 * in the empty half) the conv is left plain.
 */
static void test_pass_regroup(void)
{
    graph *g = PARSE("graph t(%x: f32[B,40,7,7]) -> (y: f32[B,40,7,7], z: f32[B,40,7,7]) {\n"
                     "  sym B = 2\n"
                     "  %w0: f32[40,40,1,1] = const @R(1600)\n"
                     "  %w1: f32[40,8,3,3] = const @R(2880)\n  %b1: f32[40] = const @R(40)\n"
                     "  %w2: f32[40,8,3,3] = const @R(2880)\n"
                     "  %c0: f32[B,40,7,7] = conv2d(%x, %w0) !p0\n"
                     "  %c1: f32[B,40,7,7] = conv2d_ep(%c0, %w1, %b1, %x) {padding=[1], "
                     "groups=5, post=[1, 2]} !p1\n"
                     "  %c2: f32[B,40,7,7] = conv2d_ep(%c1, %w2, %b1) {padding=[1], groups=5, "
                     "post=[4]} !p2\n"
                     "  return y = %c1\n  return z = %c2\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    int packed = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD) && n->op == GRAPH_OP_conv2d_blk &&
            ((const graph_conv2d_blk_attrs *)tg_node_attrs(n))->groups == 3)
            packed += g->values[n->in[1]].type.dim[0] == 48 && g->values[n->in[1]].type.dim[1] == 16;
    }
    CHECK(packed == 1 && count_op(g, GRAPH_OP_conv2d_blk) == 2 &&
          count_op(g, GRAPH_OP_conv2d_ep) == 1);
    check_pass_rest(__LINE__, g, ref, 1e-4);
    graph_free(g);
    graph_free(ref);
}

/*
 * The cost model: a region of convs between plain ops goes blocked only
 * where its convs gain more than its to_blocked / from_blocked cost.  A
 * lone 1x1 conv of 64 channels on 56x56 between two softmaxes (measured
 * 1.04x slower blocked with its conversions; 16 channels on 112x112,
 * 1.06x) stays plain, as does a chain of two 1x1 convs of 24 channels
 * (padded blocks: 1.5x slower blocked) with the batch_norm + relu the
 * region would have taken (as a depthwise conv2d_blk); a lone 3x3 conv
 * of 64 channels on 14x14 (2.2x faster blocked) or a depthwise one (3.4x)
 * goes blocked, and so do a chain of 1x1 convs around a 3x3 one and two
 * 1x1 convs of 64 channels on 7x7 (1.2x faster blocked: oneDNN's GEMM is
 * slow on few positions).
 */
#define COST_IO(c, h) "graph t(%x: f32[1," #c "," #h "," #h "]) -> (y: f32[1," #c "," #h "," #h "]) {\n"
#define COST_T(c, h) "f32[1," #c "," #h "," #h "]"
static void check_cost_blocked(int line, const char *tpl, int nblk, int nconv)
{
    char why[2048] = "";
    graph *g = parse_at(__FILE__, line, tpl), *ref = g ? graph_clone(g) : NULL;
    if (!g || !ref) {
        graph_free(g);
        return;
    }
    check_report(run_pass_at(__FILE__, line, g, &opt_pass_layout, why, sizeof why), __FILE__,
                 line, "layout fires");
    check_report(count_op(g, GRAPH_OP_conv2d_blk) == nblk &&
                     count_op(g, GRAPH_OP_to_blocked) + count_op(g, GRAPH_OP_from_blocked) ==
                         nconv &&
                     count_op(g, GRAPH_OP_conv2d) == 0 && !strstr(why, "kept plain"),
                 __FILE__, line, "%d blocked convs, %d conversions: %s", nblk, nconv, why);
    check_pass_rest(line, g, ref, 1e-3);
    graph_free(g);
    graph_free(ref);
}

static void test_pass_cost(void)
{
    NO_FIRE(COST_IO(64, 56) "  %w: f32[64,64,1,1] = const @R(4096)\n"
            "  %a: " COST_T(64, 56) " = softmax(%x) {axis=1} !p0\n"
            "  %c: " COST_T(64, 56) " = conv2d(%a, %w) !p1\n"
            "  %y: " COST_T(64, 56) " = softmax(%c) {axis=1} !p2\n"
            "  return y = %y\n}\n" PROV,
            opt_pass_layout,
            "lone conv kept plain: its 2 conversions (3.21 MB, ~64.9 us) cost more than the "
            "blocked layout saves (~32.5 us, estimated)");
    NO_FIRE(COST_IO(16, 112) "  %w: f32[16,16,1,1] = const @R(256)\n"
            "  %b: f32[16] = const @R(16)\n"
            "  %a: " COST_T(16, 112) " = softmax(%x) {axis=1} !p0\n"
            "  %c: " COST_T(16, 112) " = conv2d_ep(%a, %w, %b, %a) {post=[1, 2]} !p1\n"
            "  %y: " COST_T(16, 112) " = softmax(%c) {axis=1} !p2\n"
            "  return y = %y\n}\n" PROV,
            opt_pass_layout, "lone conv kept plain: its 2 conversions (3.21 MB");
    NO_FIRE(COST_IO(24, 28) "  %w1: f32[24,24,1,1] = const @R(576)\n"
            "  %b1: f32[24] = const @R(24)\n"
            "  %w2: f32[24,24,1,1] = const @R(576)\n"
            "  %a: " COST_T(24, 28) " = softmax(%x) {axis=1} !p0\n"
            "  %c1: " COST_T(24, 28) " = conv2d_ep(%a, %w1, %b1) {post=[2]} !p1\n"
            "  %c2: " COST_T(24, 28) " = conv2d(%c1, %w2) !p1\n"
            "  %s: f32[24] = const @P(24)\n  %m: f32[24] = const @R(24)\n"
            "  %v: f32[24] = const @P(24)\n"
            "  %n: " COST_T(24, 28) " = batch_norm(%c2, %s, %b1, %m, %v) !p2\n"
            "  %r: " COST_T(24, 28) " = relu(%n) !p2\n"
            "  %y: " COST_T(24, 28) " = softmax(%r) {axis=1} !p2\n"
            "  return y = %y\n}\n" PROV,
            opt_pass_layout,
            "conv kept plain: the blocked layout would be slower (~10.2 us, estimated: padded "
            "channels) and add its region's 2 conversions (0.35 MB, ~7.7 us)");
    check_cost_blocked(__LINE__,
                       COST_IO(64, 14) "  %w: f32[64,64,3,3] = const @R(36864)\n"
                       "  %a: " COST_T(64, 14) " = softmax(%x) {axis=1} !p0\n"
                       "  %c: " COST_T(64, 14) " = conv2d(%a, %w) {padding=[1]} !p1\n"
                       "  %y: " COST_T(64, 14) " = softmax(%c) {axis=1} !p2\n"
                       "  return y = %y\n}\n" PROV,
                       1, 2);
    check_cost_blocked(__LINE__,
                       COST_IO(64, 14) "  %w: f32[64,1,3,3] = const @R(576)\n"
                       "  %a: " COST_T(64, 14) " = softmax(%x) {axis=1} !p0\n"
                       "  %c: " COST_T(64, 14) " = conv2d(%a, %w) {padding=[1], groups=64} !p1\n"
                       "  %y: " COST_T(64, 14) " = softmax(%c) {axis=1} !p2\n"
                       "  return y = %y\n}\n" PROV,
                       1, 2);
    /* depthwise 1x1 on 24 channels: grouped convs always pay */
    check_cost_blocked(__LINE__,
                       COST_IO(24, 7) "  %w: f32[24,1,1,1] = const @R(24)\n"
                       "  %a: " COST_T(24, 7) " = softmax(%x) {axis=1} !p0\n"
                       "  %c: " COST_T(24, 7) " = conv2d(%a, %w) {groups=24} !p1\n"
                       "  %y: " COST_T(24, 7) " = softmax(%c) {axis=1} !p2\n"
                       "  return y = %y\n}\n" PROV,
                       1, 2);
    check_cost_blocked(__LINE__,
                       COST_IO(64, 14) "  %w1: f32[64,64,1,1] = const @R(4096)\n"
                       "  %b1: f32[64] = const @R(64)\n"
                       "  %w2: f32[64,64,3,3] = const @R(36864)\n"
                       "  %w3: f32[64,64,1,1] = const @R(4096)\n"
                       "  %a: " COST_T(64, 14) " = softmax(%x) {axis=1} !p0\n"
                       "  %c1: " COST_T(64, 14) " = conv2d_ep(%a, %w1, %b1) {post=[2]} !p1\n"
                       "  %c2: " COST_T(64, 14) " = conv2d_ep(%c1, %w2, %b1) {padding=[1], "
                       "post=[2]} !p1\n"
                       "  %c3: " COST_T(64, 14) " = conv2d(%c2, %w3) !p1\n"
                       "  %y: " COST_T(64, 14) " = softmax(%c3) {axis=1} !p2\n"
                       "  return y = %y\n}\n" PROV,
                       3, 2);
    check_cost_blocked(__LINE__,
                       COST_IO(64, 7) "  %w1: f32[64,64,1,1] = const @R(4096)\n"
                       "  %b1: f32[64] = const @R(64)\n"
                       "  %w2: f32[64,64,1,1] = const @R(4096)\n"
                       "  %a: " COST_T(64, 7) " = softmax(%x) {axis=1} !p0\n"
                       "  %c1: " COST_T(64, 7) " = conv2d_ep(%a, %w1, %b1) {post=[2]} !p1\n"
                       "  %c2: " COST_T(64, 7) " = conv2d(%c1, %w2) !p1\n"
                       "  %y: " COST_T(64, 7) " = softmax(%c2) {axis=1} !p2\n"
                       "  return y = %y\n}\n" PROV,
                       2, 2);
}

/* googlenet's stem: conv, max pool, conv, avg pool stay blocked. */
static void test_pass_pool(void)
{
    graph *g = PARSE("graph t(%x: f32[B,3,16,16]) -> (y: f32[B,24,4,4]) {\n"
                     "  sym B = 2\n"
                     "  %w1: f32[32,3,3,3] = const @R(864)\n"
                     "  %w2: f32[24,32,1,1] = const @R(768)\n"
                     "  %c1: f32[B,32,16,16] = conv2d(%x, %w1) {padding=[1]} !p0\n"
                     "  %p1: f32[B,32,8,8] = max_pool2d(%c1) {kernel=[3], stride=[2], "
                     "padding=[1]} !p1\n"
                     "  %c2: f32[B,24,8,8] = conv2d(%p1, %w2) !p2\n"
                     "  %p2: f32[B,24,4,4] = avg_pool2d(%c2) {kernel=[2]} !p3\n"
                     "  return y = %p2\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_layout));
    CHECK(count_op(g, GRAPH_OP_conv2d_blk) == 2 && count_op(g, GRAPH_OP_max_pool2d_blk) == 1 &&
          count_op(g, GRAPH_OP_avg_pool2d_blk) == 1 && count_op(g, GRAPH_OP_to_blocked) == 0 &&
          count_op(g, GRAPH_OP_from_blocked) == 1);
    check_pass_rest(__LINE__, g, ref, 1e-4);
    graph_free(g);
    graph_free(ref);
}

/* The benchmark's residual block through opt_optimize -O3. */
static void test_pass_resblock(void)
{
    graph *g = PARSE(
        "graph t(%x: f32[1,64,56,56]) -> (y: f32[1,64,56,56]) {\n"
        "  %w1: f32[64,64,3,3] = const @R(36864)\n  %w2: f32[64,64,3,3] = const @R(36864)\n"
        "  %s1: f32[64] = const @P(64)\n  %b1: f32[64] = const @R(64)\n"
        "  %m1: f32[64] = const @R(64)\n  %v1: f32[64] = const @P(64)\n"
        "  %s2: f32[64] = const @P(64)\n  %b2: f32[64] = const @R(64)\n"
        "  %m2: f32[64] = const @R(64)\n  %v2: f32[64] = const @P(64)\n"
        "  %c1: f32[1,64,56,56] = conv2d(%x, %w1) {padding=[1]} !p0\n"
        "  %n1: f32[1,64,56,56] = batch_norm(%c1, %s1, %b1, %m1, %v1) !p1\n"
        "  %r1: f32[1,64,56,56] = relu(%n1) !p1\n"
        "  %c2: f32[1,64,56,56] = conv2d(%r1, %w2) {padding=[1]} !p2\n"
        "  %n2: f32[1,64,56,56] = batch_norm(%c2, %s2, %b2, %m2, %v2) !p3\n"
        "  %a: f32[1,64,56,56] = add(%n2, %x) !p3\n"
        "  %y: f32[1,64,56,56] = relu(%a) !p3\n"
        "  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    opt_options o = opt_default_options();
    o.level = 3;
    char err[512] = "";
    CHECK(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK);
    CHECK(count_op(g, GRAPH_OP_to_blocked) == 1 && count_op(g, GRAPH_OP_from_blocked) == 1 &&
          count_op(g, GRAPH_OP_conv2d_blk) == 2 && g->nnodes == 4);
    /* Winograd (auto, 3x3 stride 1) */
    check_pass_rest(__LINE__, g, ref, 1e-3);
    graph_free(g);
    graph_free(ref);
}

static void test_pass_declines(void)
{
    check_no_fire(__FILE__, __LINE__, /* a dynamic spatial dim */
                  "graph t(%x: f32[1,16,H,6]) -> (y: f32[1,16,H,6]) {\n  sym H = 6\n"
                  "  %w: f32[16,16,1,1] = const @R(256)\n"
                  "  %y: f32[1,16,H,6] = conv2d(%x, %w) !p0\n"
                  "  return y = %y\n}\n" PROV,
                  &opt_pass_layout, "a dynamic dim other than the batch");
    check_no_fire(__FILE__, __LINE__, /* a guard reads the conv's output */
                  "graph t(%x: f32[1,16,4,4]) -> (y: f32[1,16,4,4]) {\n"
                  "  %w: f32[16,16,1,1] = const @R(256)\n"
                  "  %y: f32[1,16,4,4] = conv2d(%x, %w) !p0\n"
                  "  guard value %y[0] == 0.5 warn !p0\n"
                  "  return y = %y\n}\n" PROV,
                  &opt_pass_layout, "output is guarded (must stay plain)");
}

static void test_pass(void)
{
    int64_t live = eager_live_tensors();
    test_pass_chain();
    test_pass_cancel();
    test_pass_guarded();
    test_pass_resblock();
    test_pass_depthwise();
    test_pass_padded();
    test_pass_se();
    test_pass_concat_bn();
    test_pass_pool();
    test_pass_regroup();
    test_pass_declines();
    test_pass_cost();
    CHECK(eager_live_tensors() == live);
}

/* ---- a traced residual block, dynamic batch, -O3, replayed ---- */

static eager_tensor *bn(eager_tensor *x, eager_tensor *const *p)
{
    return eager_batch_norm(x, p[0], p[1], p[2], p[3], 1e-5f);
}

static eager_tensor *resblock(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *h = eager_relu(
        bn(eager_conv2d(x, p[0], EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1), p + 2));
    h = bn(eager_conv2d(h, p[1], EAGER_NONE, TG_INTS(), TG_INTS(1), TG_INTS(), 1), p + 6);
    return eager_relu(eager_add(h, x));
}

static void test_replay_block(void)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(2, 32, 10, 10), 31, -1, 1), *p[10];
    p[0] = eager_rand_uniform(TG_INTS(32, 32, 3, 3), 32, -0.2f, 0.2f);
    p[1] = eager_rand_uniform(TG_INTS(32, 32, 3, 3), 33, -0.2f, 0.2f);
    for (int i = 2; i < 10; i++) /* scale, shift, mean, variance (> 0) */
        p[i] = eager_rand_uniform(TG_INTS(32), (uint64_t)(34 + i), i % 4 == 1 ? 0.5f : -0.5f,
                                  1.5f);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    for (int i = 0; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        trace_param(p[i], name);
    }
    trace_output(resblock(x, p), "y");
    graph *g = trace_freeze(), *ref = g ? graph_clone(g) : NULL;
    CHECK_MSG(g != NULL, "resblock traces: %s", eager_error());
    opt_options o = opt_default_options();
    o.level = 3;
    char err[512] = "";
    CHECK_MSG(g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    if (g) {
        int blk = test_blocked_convs(); /* else both convs stay plain (no SSE4.1) */
        CHECK(count_op(g, GRAPH_OP_to_blocked) == blk && count_op(g, GRAPH_OP_from_blocked) == blk &&
              count_op(g, GRAPH_OP_conv2d_blk) == 2 * blk);
        CHECK(g->values[g->outputs[0].value].dyn == 1u);
        eager_tensor *x3 = eager_rand_uniform(TG_INTS(3, 32, 10, 10), 40, -1, 1);
        double e2 = replay_error(g, ref, x), e3 = replay_error(g, ref, x3);
        g_err_wino = fmax(g_err_wino, fmax(e2, e3));
        CHECK_MSG(e2 >= 0 && e2 <= 1e-3, "replayed -O3 resblock, batch 2: error %g", e2);
        CHECK_MSG(e3 >= 0 && e3 <= 1e-3, "replayed -O3 resblock, batch 3: error %g", e3);
    }
    graph_free(g);
    graph_free(ref);
    eager_pool_pop();
    for (int i = 0; i < 10; i++) /* params are referenced by the trace: released last */
        (void)p[i];
    CHECK(eager_live_tensors() == live);
}

int main(void)
{
    test_roundtrip();
    test_conv_blk();
    test_conv_blk_eager_fresh();
    test_pool_blk();
    if (test_avx512())
        test_pass();
    else /* its cases are written for this CPU's blocks being 16 channels */
        printf("test_pass skipped: the CPU's blocks are 8 channels below AVX-512\n");
    test_replay_block();
    printf("layout: max normalized error direct %.3g, winograd %.3g\n", g_err_direct,
           g_err_wino);
    return check_done();
}
