/*
 * test_ocl_nn.c - the OpenCL backend's products (replay/opencl/ops_gemm.c,
 * ops_conv.c, ops_dw.c; cl/nn_gemm.cl, nn_conv.cl, nn_dw.cl) on
 * replay-OpenCL against naive references written here: matmul (batch
 * broadcasting, transposes, 1-D operands), linear and linear_ep (every
 * epilogue step), conv2d / conv2d_ep / conv2d_blk (groups, stride,
 * asymmetric padding, dilation, depthwise, blocked layout; depthwise under
 * every TG_OPENCL_DW mode).  The pools, norms, reductions and arg are
 * test_ocl_pool_reduce.c's (the one-node case runner both use:
 * ocl_nn_case.h).  Shapes are odd on purpose, so tiles are partial; both
 * the tiled kernels and their one-item-per-output fallbacks run.
 *
 * Each case is one node: a graph with the node's inputs as graph inputs
 * (or constants, where constant uploads should be covered), compiled for
 * backend "opencl" and run once.  Tolerance: normalized error <= 1e-4 for
 * matmul/conv/reductions/norms (issue 7), NaN only where NaN is expected.
 * Without an OpenCL platform the test prints "SKIP: no OpenCL platform"
 * and exits 77.
 *
 * ctest runs it twice: as the device chooses (PoCL: our kernels) and with
 * TG_OPENCL_GEMM=clblast, where matmul, linear and ungrouped conv (the
 * blocked conv2d_blk too) go through CLBlast (replay/opencl/clblast.c);
 * test_gemm_path checks which path each of a set of cases took (CLBlast
 * calls counted) and its results.  ctest's other copies run it on the auto
 * path and with TG_OPENCL_TILE=gpu (the conv cases then on nn_conv_sk);
 * test_splitk and test_conv_sk force the GPU tile themselves and count
 * the kernels each case ran.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "ocl_nn_case.h"
#include "replay/opencl/ocl_blas.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"

/* ---- epilogue reference ---- */

/* The CLIP bounds every case here takes (hardtanh). */
#define CLIP_BOUNDS -1.0f, 1.0f

static double post_ref(double v, const graph_ints *post, float alpha, const float *res,
                       int64_t i)
{
    for (int k = 0; post && k < post->n; k++) {
        switch (post->v[k]) {
        case GRAPH_POST_ADD: v += res[i]; break;
        case GRAPH_POST_RELU: v = v > 0 ? v : 0; break;
        case GRAPH_POST_GELU: v = 0.5 * v * (1 + erf(v / sqrt(2.0))); break;
        case GRAPH_POST_SIGMOID: v = 1 / (1 + exp(-v)); break;
        case GRAPH_POST_TANH: v = tanh(v); break;
        case GRAPH_POST_SILU: v = v / (1 + exp(-v)); break;
        case GRAPH_POST_LEAKY_RELU: v = v > 0 ? v : alpha * v; break;
        case GRAPH_POST_CLIP: v = v < -1 ? -1 : v > 1 ? 1 : v; break; /* CLIP_BOUNDS */
        case GRAPH_POST_HARDSIGMOID: v = fmin(fmax(v / 6 + 0.5, 0), 1); break;
        case GRAPH_POST_HARDSWISH: v = v * fmin(fmax(v / 6 + 0.5, 0), 1); break;
        }
    }
    return v;
}

/* ---- matmul ---- */

/* NumPy matmul of a and b (types ta, tb; transposes) into want (type to). */
static void matmul_ref(const float *a, const graph_type *ta, const float *b,
                       const graph_type *tb, int tra, int trb, const graph_type *to, float *want)
{
    int a1 = ta->ndim == 1, b1 = tb->ndim == 1;
    int64_t ar = a1 ? 1 : ta->dim[ta->ndim - 2], ac = ta->dim[ta->ndim - 1];
    int64_t br = b1 ? tb->dim[0] : tb->dim[tb->ndim - 2], bc = b1 ? 1 : tb->dim[tb->ndim - 1];
    int64_t M = tra && !a1 ? ac : ar, K = tra && !a1 ? ar : ac, N = trb && !b1 ? br : bc;
    int nb = to->ndim - !a1 - !b1, nba = a1 ? 0 : ta->ndim - 2, nbb = b1 ? 0 : tb->ndim - 2;
    int64_t batch = 1;
    for (int i = 0; i < nb; i++)
        batch *= to->dim[i];
    for (int64_t z = 0; z < batch; z++) {
        int64_t za = 0, zb = 0, rem = z, sa = 1, sb = 1;
        for (int i = nb - 1; i >= 0; i--) { /* batch coords, broadcast per operand */
            int64_t c = rem % to->dim[i];
            rem /= to->dim[i];
            int ja = i - (nb - nba), jb = i - (nb - nbb);
            if (ja >= 0) {
                za += (ta->dim[ja] == 1 ? 0 : c) * sa;
                sa *= ta->dim[ja];
            }
            if (jb >= 0) {
                zb += (tb->dim[jb] == 1 ? 0 : c) * sb;
                sb *= tb->dim[jb];
            }
        }
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) {
                    float av = a[za * ar * ac + (tra && !a1 ? k * ac + m : m * ac + k)];
                    float bv = b[zb * br * bc + (trb && !b1 ? n * bc + k : k * bc + n)];
                    s += (double)av * bv;
                }
                want[(z * M + m) * N + n] = (float)s;
            }
    }
}

static void matmul_case(graph_type ta, graph_type tb, int tra, int trb, unsigned cmask)
{
    graph_matmul_attrs at = {tra, trb};
    ncase c = {GRAPH_OP_matmul, &at, 2, {ta, tb}, {rnd(&ta, 1), rnd(&tb, 2)}, cmask};
    graph_type to;
    char err[256], sa[64], sb[64], what[200];
    int nout;
    if (graph_infer(GRAPH_OP_matmul, c.t, 2, &at, &to, 1, &nout, err, sizeof err) != TG_OK) {
        CHECK_MSG(0, "bad case: %s", err);
        free_case(&c);
        return;
    }
    int64_t n = graph_type_numel(&to);
    float *want = malloc((size_t)(n ? n : 1) * sizeof *want);
    matmul_ref(c.d[0], &ta, c.d[1], &tb, tra, trb, &to, want);
    snprintf(what, sizeof what, "matmul %s x %s ta=%d tb=%d", graph_shape_str(&ta, sa, sizeof sa),
             graph_shape_str(&tb, sb, sizeof sb), tra, trb);
    expect(what, &c, want, n);
    free(want);
    free_case(&c);
}

static void test_matmul(void)
{
    matmul_case(F32(37, 29), F32(29, 53), 0, 0, 0);
    matmul_case(F32(29, 37), F32(53, 29), 1, 1, 2);
    matmul_case(F32(5, 70, 33), F32(33, 130), 0, 0, 0);   /* tiles partial in M, N, K */
    matmul_case(F32(2, 1, 3, 20, 18), F32(4, 1, 18, 17), 0, 0, 0); /* batch broadcast */
    matmul_case(F32(3, 18, 20), F32(3, 17, 18), 1, 1, 0);
    matmul_case(F32(4, 2, 9, 6), F32(2, 6, 40), 0, 0, 0); /* simple: M < 16 */
    /* M or N below 16 with K of 64 or more: nn_gemm_thin on the GPU tile
     * (test_ocl_nn_gputile), broadcast batch, transposed operands */
    matmul_case(F32(3, 4, 100), F32(100, 20), 0, 0, 0);
    matmul_case(F32(2, 100, 5), F32(2, 7, 100), 1, 1, 0);
    matmul_case(F32(29), F32(29, 53), 0, 0, 0);           /* 1-D a */
    matmul_case(F32(6, 37, 29), F32(29), 0, 1, 0);        /* 1-D b */
    matmul_case(F32(300), F32(300), 0, 0, 0);             /* dot */
    matmul_case(F32(3, 0), F32(0, 20), 0, 0, 0);          /* K = 0: zeros */
    /* K long against few tiles: the GPU tile (TG_OPENCL_TILE=gpu) splits K */
    matmul_case(F32(3, 20, 600), F32(3, 600, 30), 0, 0, 0);
    matmul_case(F32(40, 1000), F32(70, 1000), 0, 1, 0);
    matmul_case(F32(1000, 40), F32(1000, 70), 1, 0, 0);
}

/* ---- linear, linear_ep ---- */

static void linear_case(graph_type tx, int64_t n, int bias, const graph_ints *post, float alpha)
{
    int64_t k = tx.dim[tx.ndim - 1], rows = 1;
    for (int i = 0; i < tx.ndim - 1; i++)
        rows *= tx.dim[i];
    graph_type tw = F32(n, k), tb = F32(n), ty_ = tx;
    ty_.dim[tx.ndim - 1] = n;
    int adds = 0;
    for (int i = 0; post && i < post->n; i++)
        adds += post->v[i] == GRAPH_POST_ADD;
    graph_linear_ep_attrs at = {post ? *post : (graph_ints){0}, alpha, CLIP_BOUNDS};
    ncase c = {post ? GRAPH_OP_linear_ep : GRAPH_OP_linear, post ? &at : NULL,
               2 + (bias || post) + adds, {tx, tw, tb, ty_},
               {rnd(&tx, 3), rnd(&tw, 4), rnd(&tb, 5), rnd(&ty_, 6)}, 2};
    const float *x = c.d[0], *w = c.d[1], *b = c.d[2], *r = c.d[3];
    float *want = malloc((size_t)(rows * n > 0 ? rows * n : 1) * sizeof *want);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = c.nin > 2 ? b[j] : 0;
            for (int64_t q = 0; q < k; q++)
                s += (double)x[i * k + q] * w[j * k + q];
            want[i * n + j] = (float)post_ref(s, post, alpha, r, i * n + j);
        }
    char what[120];
    snprintf(what, sizeof what, "%s rows=%lld n=%lld k=%lld bias=%d post=%d",
             graph_ops[c.op].name, (long long)rows, (long long)n, (long long)k, c.nin > 2,
             post ? post->n : 0);
    for (int i = c.nin; i < 4; i++) {
        free(c.d[i]);
        c.d[i] = NULL;
    }
    expect(what, &c, want, rows * n);
    free(want);
    free_case(&c);
}

static void test_linear(void)
{
    graph_ints every = {7, {GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SIGMOID, GRAPH_POST_TANH,
                            GRAPH_POST_SILU, GRAPH_POST_LEAKY_RELU, GRAPH_POST_RELU}};
    graph_ints relu = {1, {GRAPH_POST_RELU}}, none = {0};
    graph_ints acts = {4, {GRAPH_POST_LEAKY_RELU, GRAPH_POST_SILU, GRAPH_POST_ADD,
                           GRAPH_POST_TANH}};
    linear_case(F32(3, 7, 40), 33, 1, NULL, 0);  /* tiled, partial tiles */
    linear_case(F32(70, 50), 130, 0, NULL, 0);   /* no bias */
    linear_case(F32(5, 50), 10, 1, NULL, 0);     /* simple: few rows and outputs */
    linear_case(F32(40), 20, 1, NULL, 0);        /* 1-D x */
    linear_case(F32(66, 45), 70, 1, &every, 0.1f);
    linear_case(F32(6, 45), 9, 1, &every, 0.1f); /* the same epilogue on the simple kernel */
    linear_case(F32(66, 45), 70, 1, &relu, 0);
    linear_case(F32(20, 30), 24, 1, &acts, -0.3f);
    graph_ints clip = {3, {GRAPH_POST_LEAKY_RELU, GRAPH_POST_ADD, GRAPH_POST_CLIP}};
    linear_case(F32(66, 45), 70, 1, &clip, 1.0f); /* slope 1: a whole-number literal */
    linear_case(F32(6, 45), 9, 1, &clip, 2.0f);
    graph_ints hard = {3, {GRAPH_POST_HARDSWISH, GRAPH_POST_ADD, GRAPH_POST_HARDSIGMOID}};
    linear_case(F32(66, 45), 70, 1, &hard, 0);
    linear_case(F32(20, 30), 24, 1, &none, 0);
    linear_case(F32(4, 0), 24, 1, &relu, 0);     /* K = 0: the bias */
    linear_case(F32(33, 777), 47, 1, &every, 0.1f); /* K split on the GPU tile */
    linear_case(F32(64, 784), 130, 1, &relu, 0);
    linear_case(F32(64, 512), 10, 1, NULL, 0);      /* thin on the GPU tile: few outputs */
    linear_case(F32(6, 200), 9, 1, &every, 0.1f);   /* thin, every epilogue */
}

/* ---- conv2d, conv2d_ep, conv2d_blk ---- */

typedef struct conv_geom {
    int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups;
} conv_geom;


/* Naive NCHW conv (+ bias) (+ epilogue) into y [n, o, oh, ow]. */
static void conv_ref(const conv_geom *g, const float *x, const float *w, const float *b,
                     const graph_ints *post, float alpha, const float *res, float *y)
{
    int64_t oh = conv_out(g->h, g->pt, g->pb, g->kh, g->dh, g->sh);
    int64_t ow = conv_out(g->w, g->pl, g->pr, g->kw, g->dw, g->sw);
    int64_t cg = g->c / g->groups, mg = g->o / g->groups;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t o = 0; o < g->o; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double s = b ? b[o] : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t u = 0; u < g->kh; u++)
                            for (int64_t v = 0; v < g->kw; v++) {
                                int64_t ih = i * g->sh - g->pt + u * g->dh;
                                int64_t iw = j * g->sw - g->pl + v * g->dw;
                                if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)
                                    continue;
                                int64_t ci = o / mg * cg + c;
                                s += (double)w[((o * cg + c) * g->kh + u) * g->kw + v] *
                                     x[((n * g->c + ci) * g->h + ih) * g->w + iw];
                            }
                    int64_t at = ((n * g->o + o) * oh + i) * ow + j;
                    y[at] = (float)post_ref(s, post, alpha, res, at);
                }
}

/* nChw16c <-> NCHW of an [n, c, hw] tensor (blocked: [n, ceil(c/16),
 * hw, 16]; its lanes past c are left as they are). */
static void reblock(const float *src, float *dst, int64_t n, int64_t c, int64_t hw, int to)
{
    int64_t cb = (c + 15) / 16;
    for (int64_t a = 0; a < n; a++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t p = 0; p < hw; p++) {
                int64_t plain = (a * c + k) * hw + p;
                int64_t blk = ((a * cb + k / 16) * hw + p) * 16 + k % 16;
                if (to)
                    dst[blk] = src[plain];
                else
                    dst[plain] = src[blk];
            }
}

/* A blocked [n, c, hw] tensor from plain src, its lanes past c set to
 * fill (malloc'd; *nb: its elements). */
static float *to_blk(const float *src, int64_t n, int64_t c, int64_t hw, float fill, int64_t *nb)
{
    *nb = n * ((c + 15) / 16) * hw * 16;
    float *b = malloc((size_t)*nb * sizeof *b);
    for (int64_t i = 0; i < *nb; i++)
        b[i] = fill;
    reblock(src, b, n, c, hw, 1);
    return b;
}

/*
 * kind 0 conv2d, 1 conv2d_ep, 2 conv2d_blk: x, residual and output
 * blocked, x plain when stem.  Blocked, the lanes past C of x are NaN and
 * those of the residual 5 (neither may reach the output), and the output's
 * lanes past O must be exactly 0.
 */
static void conv_case_x(conv_geom g, int kind, int stem, int bias, const graph_ints *post,
                        float alpha)
{
    int64_t oh = conv_out(g.h, g.pt, g.pb, g.kh, g.dh, g.sh);
    int64_t ow = conv_out(g.w, g.pl, g.pr, g.kw, g.dw, g.sw);
    graph_type tx = F32(g.n, g.c, g.h, g.w), tw = F32(g.o, g.c / g.groups, g.kh, g.kw);
    graph_type tb = F32(g.o), tr = F32(g.n, g.o, oh, ow);
    int adds = 0;
    for (int i = 0; post && i < post->n; i++)
        adds += post->v[i] == GRAPH_POST_ADD;
    graph_ints stride = {2, {g.sh, g.sw}}, pad = {4, {g.pt, g.pl, g.pb, g.pr}};
    graph_ints dil = {2, {g.dh, g.dw}}, np = post ? *post : (graph_ints){0};
    graph_conv2d_attrs a0 = {stride, pad, dil, g.groups};
    graph_conv2d_ep_attrs a1 = {stride, pad, dil, g.groups, np, alpha};
    graph_conv2d_blk_attrs a2 = {stride, pad, dil, g.groups, np, alpha, 0, -INFINITY, INFINITY,
                                 16};
    static const graph_op ops[] = {GRAPH_OP_conv2d, GRAPH_OP_conv2d_ep, GRAPH_OP_conv2d_blk};
    const void *attrs[] = {&a0, &a1, &a2};
    ncase c = {ops[kind], attrs[kind], 2 + (bias || kind) + adds, {tx, tw, tb, tr},
               {rnd(&tx, 7), rnd(&tw, 8), rnd(&tb, 9), rnd(&tr, 10)}, kind == 1 ? 2 : 0};
    int64_t ny = graph_type_numel(&tr), nx;
    float *want = malloc((size_t)ny * sizeof *want);
    conv_ref(&g, c.d[0], c.d[1], c.nin > 2 ? c.d[2] : NULL, post, alpha, c.d[3], want);
    if (kind == 2) { /* blocked residual and output, x unless stem */
        int64_t nb;
        if (!stem) {
            float *xb = to_blk(c.d[0], g.n, g.c, g.h * g.w, NAN, &nx);
            free(c.d[0]);
            c.d[0] = xb;
            c.t[0] = F32(g.n, (g.c + 15) / 16, g.h, g.w, 16);
        }
        float *rb = to_blk(c.d[3], g.n, g.o, oh * ow, 5.0f, &nb);
        float *wb = to_blk(want, g.n, g.o, oh * ow, 0.0f, &ny);
        free(c.d[3]), free(want);
        c.d[3] = rb, want = wb;
        c.t[3] = F32(g.n, (g.o + 15) / 16, oh, ow, 16);
    }
    char what[256];
    snprintf(what, sizeof what,
             "%s x[%lld,%lld,%lld,%lld] o=%lld k=%lldx%lld s=%lld,%lld p=%lld,%lld,%lld,%lld "
             "d=%lld,%lld g=%lld bias=%d post=%d%s",
             graph_ops[c.op].name, (long long)g.n, (long long)g.c, (long long)g.h,
             (long long)g.w, (long long)g.o, (long long)g.kh, (long long)g.kw, (long long)g.sh,
             (long long)g.sw, (long long)g.pt, (long long)g.pl, (long long)g.pb, (long long)g.pr,
             (long long)g.dh, (long long)g.dw, (long long)g.groups, c.nin > 2, np.n,
             kind == 2 && stem ? " stem" : "");
    for (int i = c.nin; i < 4; i++) {
        free(c.d[i]);
        c.d[i] = NULL;
    }
    graph_type ot;
    float *got = run_ocl(&c, &ot);
    if (got) {
        CHECK_MSG(graph_type_numel(&ot) == ny, "%s: %lld outputs, want %lld", what,
                  (long long)graph_type_numel(&ot), (long long)ny);
        compare(what, got, want, ny, TOL);
        int64_t bad = -1, ob = (g.o + 15) / 16;
        for (int64_t i = 0; kind == 2 && i < ny && bad < 0; i++)
            if (i / 16 / (oh * ow) % ob * 16 + i % 16 >= g.o && got[i] != 0.0f)
                bad = i;
        CHECK_MSG(bad < 0, "%s: padded lane at %lld is %g, want 0", what, (long long)bad,
                  bad >= 0 ? got[bad] : 0.0);
    }
    free(got);
    free(want);
    free_case(&c);
}

static void conv_case(conv_geom g, int kind, int bias, const graph_ints *post, float alpha)
{
    conv_case_x(g, kind, 0, bias, post, alpha);
}

static void test_conv(void)
{
    graph_ints every = {7, {GRAPH_POST_RELU, GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SIGMOID,
                            GRAPH_POST_TANH, GRAPH_POST_SILU, GRAPH_POST_LEAKY_RELU}};
    graph_ints relu = {1, {GRAPH_POST_RELU}}, add_relu = {2, {GRAPH_POST_ADD, GRAPH_POST_RELU}};
    /* n c h w o kh kw sh sw pt pl pb pr dh dw groups */
    conv_geom tiled = {2, 6, 13, 11, 40, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 2};
    conv_geom plain3 = {1, 16, 19, 17, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    conv_geom small = {2, 6, 9, 11, 10, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 2};
    conv_geom depthwise = {1, 8, 10, 9, 8, 3, 3, 1, 2, 1, 1, 1, 1, 2, 1, 8};
    conv_geom wide = {1, 3, 20, 20, 70, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 1};
    conv_geom pointwise = {3, 20, 7, 5, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    conv_geom blk = {2, 32, 9, 8, 32, 3, 3, 1, 2, 1, 0, 0, 1, 1, 1, 1};
    conv_geom blk_d = {1, 16, 11, 10, 48, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1};
    conv_geom blk_dw = {2, 32, 9, 10, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32};
    conv_geom blk_g = {1, 64, 7, 6, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4};
    conv_case(tiled, 0, 1, NULL, 0);
    conv_case(tiled, 0, 0, NULL, 0);
    conv_case(plain3, 0, 1, NULL, 0);
    conv_case(small, 0, 1, NULL, 0);     /* direct: 5 output channels per group */
    conv_case(depthwise, 0, 1, NULL, 0); /* ops_dw.c: test_depthwise */
    conv_case(wide, 0, 1, NULL, 0);
    conv_case(pointwise, 0, 0, NULL, 0);
    conv_case(plain3, 1, 1, &every, 0.2f);
    conv_case(small, 1, 1, &every, 0.2f);
    conv_case(tiled, 1, 1, &relu, 0);
    conv_case(blk, 2, 1, &add_relu, 0);
    conv_case(blk_d, 2, 1, NULL, 0);
    conv_case(blk_d, 2, 1, &every, -0.1f);
    conv_case(blk_dw, 2, 1, &relu, 0); /* depthwise, blocked */
    conv_case(blk_g, 2, 1, NULL, 0);   /* grouped, 16 in / 8 out per group */
    graph_ints hard = {2, {GRAPH_POST_HARDSWISH, GRAPH_POST_HARDSIGMOID}};
    conv_case(plain3, 1, 1, &hard, 0);
    conv_case(blk, 2, 1, &hard, 0);
}

/*
 * Depthwise convs (ops_dw.c, cl/nn_dw.cl): every tile shape of
 * nn_dw_tiled (outputs >= 24, 12.., 6.. and < 6 wide, several channels per
 * work-group with a partial last one), strides 1-3, asymmetric pads,
 * dilations, 3x3 to 7x7 and 1x5, channel multipliers 1 and 2, a halo too
 * large to stage (the nn_conv_direct fallback), epilogues and the blocked
 * layout; for nn_dw_rows also outputs 1, 2, 3 and 5 wide (fewer outputs
 * per item, a ragged row end), rows whose width is no multiple of 4,
 * stride 2 with 5x5, dilation 2 at stride 1, batches, every epilogue with
 * the residual, hardswish/hardsigmoid.  Under TG_OPENCL_DW=direct, rows,
 * tiled, probe (the three timed, on PoCL too) and auto (rows on a CPU
 * device, the probe on a GPU's auto path), each node's way counted
 * (ocl_dw_ways), and a bad value refused.
 */
static int dw_on_cpu; /* the device is a CPU (its default GEMM path says so) */

static void test_depthwise(void)
{
    graph_ints every = {7, {GRAPH_POST_RELU, GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SIGMOID,
                            GRAPH_POST_TANH, GRAPH_POST_SILU, GRAPH_POST_LEAKY_RELU}};
    graph_ints relu = {1, {GRAPH_POST_RELU}}, add_relu = {2, {GRAPH_POST_ADD, GRAPH_POST_RELU}};
    graph_ints hard = {2, {GRAPH_POST_HARDSWISH, GRAPH_POST_HARDSIGMOID}};
    /* n c h w o kh kw sh sw pt pl pb pr dh dw groups */
    const conv_geom plain[] = {
        {2, 5, 31, 37, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5},     /* 32-wide tiles */
        {1, 7, 30, 29, 7, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 7},     /* stride 2, 15 wide */
        {1, 6, 17, 13, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 6},     /* 5x5, 13 wide */
        {3, 9, 14, 14, 9, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 9},     /* 7x7 s2: 7 wide, 4 ch */
        {2, 19, 5, 4, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 19},    /* 4 wide: 16 ch, partial */
        {1, 4, 23, 26, 8, 3, 3, 1, 2, 2, 0, 1, 3, 2, 3, 4},     /* multiplier 2, dilated */
        {1, 3, 40, 40, 3, 7, 7, 1, 1, 36, 36, 36, 36, 12, 12, 3}, /* halo too big: direct */
        {1, 5, 11, 60, 5, 1, 5, 1, 3, 0, 2, 0, 2, 1, 1, 5},     /* 1x5, stride 3 wide */
        {2, 3, 6, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},       /* 1 wide */
        {1, 4, 7, 2, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4},       /* 2 wide */
        {1, 2, 5, 3, 4, 3, 3, 1, 1, 0, 1, 2, 1, 1, 1, 2},       /* 3 wide, multiplier 2 */
        {2, 6, 12, 19, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 6},     /* dilation 2, 19 wide */
        {1, 4, 19, 21, 4, 5, 5, 2, 2, 2, 1, 2, 3, 1, 1, 4},     /* 5x5 s2, 5 wide.. */
        {2, 8, 9, 9, 16, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 8},      /* s2 asymmetric, mult 2 */
        {1, 3, 9, 30, 3, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 3},      /* 7x7 s1, 30 wide */
    };
    const conv_geom blocked[] = {
        {2, 32, 9, 10, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32},
        {1, 16, 28, 27, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 16},
        {1, 16, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16}, /* multiplier 2 */
        {2, 24, 9, 13, 24, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 24}, /* padded lanes */
    };
    size_t np = sizeof plain / sizeof plain[0], nb = sizeof blocked / sizeof blocked[0];
    static const char *const modes[] = {"direct", "rows", "tiled", "probe", "auto"};
    for (int m = 0; m < 5; m++) {
        setenv("TG_OPENCL_DW", modes[m], 1);
        long before[3], after[3];
        ocl_dw_ways(before);
        for (size_t i = 0; i < np; i++) {
            conv_case(plain[i], 0, i % 2, NULL, 0);
            conv_case(plain[i], 1, 1, i % 3 == 0 ? &every : i % 3 == 1 ? &relu : &hard, 0.2f);
        }
        for (size_t i = 0; i < nb; i++) {
            conv_case(blocked[i], 2, 1, &add_relu, 0);
            conv_case(blocked[i], 2, 1, &every, -0.1f);
        }
        ocl_dw_ways(after);
        long n = 2 * (long)(np + nb), got[3];
        for (int w = 0; w < 3; w++)
            got[w] = after[w] - before[w];
        /* auto: rows on a CPU device, else (unless off the auto path) the
         * probe; "halo too big" fits neither rows nor tiled: direct */
        printf("TG_OPENCL_DW=%s: %ld direct, %ld rows, %ld tiled\n", modes[m], got[0], got[1],
               got[2]);
        if (m == 3 || (m == 4 && !dw_on_cpu))
            CHECK_MSG(got[0] + got[1] + got[2] == n && got[0] >= 2,
                      "TG_OPENCL_DW=%s: %ld direct, %ld rows, %ld tiled of %ld nodes", modes[m],
                      got[0], got[1], got[2], n);
        else {
            long want[3] = {n, 0, 0};
            if (m == 1 || m == 2 || m == 4) /* all but "halo too big" */
                want[0] = 2, want[m == 4 ? 1 : m] = n - 2;
            CHECK_MSG(got[0] == want[0] && got[1] == want[1] && got[2] == want[2],
                      "TG_OPENCL_DW=%s: %ld direct, %ld rows, %ld tiled, want %ld, %ld, %ld",
                      modes[m], got[0], got[1], got[2], want[0], want[1], want[2]);
        }
    }
    /* a value none of those fails the compile, naming it */
    setenv("TG_OPENCL_DW", "fast", 1);
    graph *g = graph_new("dw_env");
    graph_type tx = F32(1, 4, 5, 5), tw = F32(4, 1, 3, 3);
    int32_t in[2] = {graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x"),
                     graph_add_value(g, GRAPH_VALUE_INPUT, &tw, "w")}, y = -1;
    graph_add_input(g, in[0]);
    graph_add_input(g, in[1]);
    graph_conv2d_attrs a = {{0}, {0}, {0}, 4};
    graph_add_node(g, GRAPH_OP_conv2d, in, 2, &a, &y, 1);
    graph_add_output(g, y, "y");
    char err[2048] = "";
    replay_opts o = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p == NULL, "TG_OPENCL_DW=fast compiled");
    CHECK_MSG(strstr(err, "TG_OPENCL_DW=\"fast\": want auto, direct, rows, tiled or probe") !=
                  NULL,
              "TG_OPENCL_DW=fast: %s", err);
    replay_plan_free(p);
    graph_free(g);
    unsetenv("TG_OPENCL_DW");
}

/* ---- the GEMM path (TG_OPENCL_GEMM) ---- */

/* The CLBlast calls so far, the auto path's probe results forgotten: a
 * conv whose shape and epilogue flags were probed before in this process
 * makes no CLBlast call on the auto path when our kernels won. */
static long path_start(void)
{
    ocl_gemm_probe_forget();
    return ocl_blas_calls();
}

/* Checks that the case just run took CLBlast (calls counted since before)
 * exactly when it should (want and blas_on; on the auto path: the probe
 * timed it). */
static void path_check(const char *what, long before, int want)
{
    long calls = ocl_blas_calls() - before;
    CHECK_MSG((calls > 0) == (want && blas_on), "%s: %ld CLBlast calls, want %s", what, calls,
              want && blas_on ? "some" : "none");
}

/* Odd sizes, batches (broadcast: stride 0), every epilogue, conv with
 * stride, padding and dilation: compared with the naive loops above on
 * whichever path runs, and the path checked. */
static void test_gemm_path(void)
{
    long b;
    b = path_start(), matmul_case(F32(37, 29), F32(29, 53), 0, 0, 0);
    path_check("matmul 37x29x53", b, 1);
    b = path_start(), matmul_case(F32(13, 31), F32(7, 13), 1, 1, 0);
    path_check("matmul transposed both", b, 1);
    b = path_start(), matmul_case(F32(4, 19, 23), F32(1, 23, 31), 0, 0, 0);
    path_check("matmul batch 4, b broadcast by a size-1 dim", b, 1);
    b = path_start(), matmul_case(F32(1, 19, 23), F32(3, 5, 23, 31), 0, 0, 1);
    path_check("matmul batch 3x5, a broadcast", b, 1);
    b = path_start(), matmul_case(F32(3, 5, 11, 7), F32(3, 5, 7, 9), 0, 0, 0);
    path_check("matmul batch 3x5 dense", b, 1);
    b = path_start(), matmul_case(F32(2, 1, 3, 20, 18), F32(4, 1, 18, 17), 0, 0, 0);
    path_check("matmul batch broadcast no stride expresses", b, 0);
    b = path_start(), matmul_case(F32(3, 0), F32(0, 20), 0, 0, 0);
    path_check("matmul K 0", b, 0);
    graph_ints acts = {4, {GRAPH_POST_RELU, GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SILU}};
    graph_ints relu_add = {2, {GRAPH_POST_RELU, GRAPH_POST_ADD}};
    b = path_start(), linear_case(F32(3, 7, 41), 33, 1, &relu_add, 0);
    path_check("linear_ep bias+relu+residual", b, 1);
    b = path_start(), linear_case(F32(17, 45), 9, 1, &acts, 0);
    path_check("linear_ep relu, add, gelu, silu", b, 1);
    b = path_start(), linear_case(F32(5, 50), 13, 0, NULL, 0);
    path_check("linear, no bias", b, 1);
    b = path_start(), linear_case(F32(4, 0), 24, 1, &relu_add, 0);
    path_check("linear K 0", b, 0);
    /* n c h w o kh kw sh sw pt pl pb pr dh dw groups */
    conv_geom sd = {2, 5, 13, 11, 19, 3, 2, 2, 1, 1, 2, 1, 2, 2, 1, 1};
    conv_geom asym = {2, 6, 13, 11, 10, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 1};
    conv_geom grouped = {1, 8, 10, 9, 8, 3, 3, 1, 2, 1, 1, 1, 1, 2, 1, 2};
    graph_ints add_relu = {2, {GRAPH_POST_ADD, GRAPH_POST_RELU}}, relu = {1, {GRAPH_POST_RELU}};
    b = path_start(), conv_case(sd, 0, 1, NULL, 0);
    path_check("conv2d stride 2,1 pad 1,2 dilation 2,1, bias", b, 1);
    b = path_start(), conv_case(sd, 0, 0, NULL, 0);
    path_check("conv2d no bias", b, 1);
    b = path_start(), conv_case(sd, 1, 1, &add_relu, 0);
    path_check("conv2d_ep residual+relu", b, 1);
    b = path_start(), conv_case(asym, 1, 1, &add_relu, 0);
    path_check("conv2d_ep asymmetric padding", b, 0);
    b = path_start(), conv_case(grouped, 0, 1, NULL, 0);
    path_check("conv2d groups 2", b, 0);
    /* conv2d_blk: blocked x / residual / output (unblocked around the
     * call), a plain stem x, channels not a multiple of 16 */
    conv_geom blk = {2, 32, 9, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    conv_geom blk_sd = {2, 24, 13, 11, 40, 3, 2, 2, 1, 1, 2, 1, 2, 2, 1, 1};
    conv_geom stem = {2, 3, 15, 14, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
    conv_geom blk_g = {1, 32, 7, 6, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2};
    conv_geom blk_asym = {1, 16, 9, 8, 16, 3, 3, 1, 1, 1, 0, 0, 1, 1, 1, 1};
    conv_geom blk_dw = {1, 32, 9, 10, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32};
    graph_ints every = {7, {GRAPH_POST_RELU, GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SIGMOID,
                            GRAPH_POST_TANH, GRAPH_POST_SILU, GRAPH_POST_LEAKY_RELU}};
    b = path_start(), conv_case(blk, 2, 1, &add_relu, 0);
    path_check("conv2d_blk 32->32 residual+relu", b, 1);
    b = path_start(), conv_case(blk_sd, 2, 1, &add_relu, 0);
    path_check("conv2d_blk 24->40 stride 2,1 dilation 2,1 residual+relu", b, 1);
    b = path_start(), conv_case(blk_sd, 2, 1, &every, -0.1f);
    path_check("conv2d_blk 24->40 every epilogue", b, 1);
    b = path_start(), conv_case(blk_sd, 2, 1, NULL, 0);
    path_check("conv2d_blk 24->40 bias only", b, 1);
    b = path_start(), conv_case_x(stem, 2, 1, 1, &relu, 0);
    path_check("conv2d_blk stem 3->20 stride 2", b, 1);
    b = path_start(), conv_case_x(stem, 2, 1, 1, &add_relu, 0);
    path_check("conv2d_blk stem 3->20 residual+relu", b, 1);
    b = path_start(), conv_case(blk_g, 2, 1, &relu, 0);
    path_check("conv2d_blk groups 2", b, 0);
    b = path_start(), conv_case(blk_asym, 2, 1, &relu, 0);
    path_check("conv2d_blk asymmetric padding", b, 0);
    b = path_start(), conv_case(blk_dw, 2, 1, &relu, 0);
    path_check("conv2d_blk depthwise", b, 0);
}

/*
 * What a test forcing our GPU tile (TG_OPENCL_TILE=gpu, TG_OPENCL_GEMM=own
 * on PoCL) changes: the switches it may set and the path every plan must
 * report, saved by gpu_env_enter and put back by gpu_env_leave.
 */
static const char *const gpu_env_names[3] = {"TG_OPENCL_TILE", "TG_OPENCL_GEMM",
                                             "TG_OPENCL_SPLITK"};
typedef struct gpu_env {
    char *saved[3];
    char path[sizeof path_name];
    int blas;
} gpu_env;

static void gpu_env_enter(gpu_env *e)
{
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(gpu_env_names[i]);
        e->saved[i] = v ? strdup(v) : NULL;
    }
    memcpy(e->path, path_name, sizeof path_name);
    e->blas = blas_on;
    setenv("TG_OPENCL_TILE", "gpu", 1);
    setenv("TG_OPENCL_GEMM", "own", 1);
    snprintf(path_name, sizeof path_name, "own"); /* what each plan must report */
    blas_on = 0;
}

static void gpu_env_leave(gpu_env *e)
{
    for (int i = 0; i < 3; i++) {
        if (e->saved[i])
            setenv(gpu_env_names[i], e->saved[i], 1);
        else
            unsetenv(gpu_env_names[i]);
        free(e->saved[i]);
    }
    memcpy(path_name, e->path, sizeof path_name);
    blas_on = e->blas;
}

/*
 * The GPU tile's K split (TG_OPENCL_SPLITK): a long K over one tile is
 * split (nn_gemm_sk, then nn_gemm_sk_sum: two kernels) by default and
 * walked in one pass (one kernel) with off, with the same results; auto
 * on the auto path times both against CLBlast.  Forced onto PoCL with
 * TG_OPENCL_TILE=gpu; the environment is restored after.
 */
static void test_splitk(void)
{
    gpu_env e;
    gpu_env_enter(&e);
    graph_ints every = {7, {GRAPH_POST_RELU, GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SIGMOID,
                            GRAPH_POST_TANH, GRAPH_POST_SILU, GRAPH_POST_LEAKY_RELU}};
    const char *modes[4] = {"on", "off", "auto", "fixup"};
    const long want[4] = {2, 1, 2, 1};
    for (int m = 0; m < 4; m++) {
        setenv("TG_OPENCL_SPLITK", modes[m], 1);
        long k0 = ocl_kernels_run();
        linear_case(F32(33, 777), 47, 1, &every, 0.1f);
        long ran = ocl_kernels_run() - k0;
        CHECK_MSG(ran == want[m], "linear 33x777x47 TG_OPENCL_SPLITK=%s: %ld kernels, want %ld",
                  modes[m], ran, want[m]);
        k0 = ocl_kernels_run();
        matmul_case(F32(3, 20, 600), F32(3, 600, 30), 0, 0, 0);
        ran = ocl_kernels_run() - k0;
        CHECK_MSG(ran == want[m], "matmul batch 3 20x600x30 TG_OPENCL_SPLITK=%s: %ld kernels, "
                  "want %ld", modes[m], ran, want[m]);
    }
    /* the auto path: whichever of the three ways the probe finds fastest
     * must give the same results */
    setenv("TG_OPENCL_GEMM", "auto", 1);
    setenv("TG_OPENCL_SPLITK", "auto", 1);
    snprintf(path_name, sizeof path_name, "auto");
    linear_case(F32(33, 777), 47, 1, &every, 0.1f);
    matmul_case(F32(40, 1000), F32(70, 1000), 0, 1, 0);
    /* the probe checks the split summed by the last split against the sum
     * kernel before it may take it: it must agree here */
    long fx0[2], fx1[2];
    ocl_fixup_checks(fx0);
    ocl_gemm_probe_forget();
    linear_case(F32(33, 777), 47, 1, &every, 0.1f);
    setenv("TG_OPENCL_SPLITK", "fixup", 1);
    ocl_gemm_probe_forget();
    matmul_case(F32(3, 20, 600), F32(3, 600, 30), 0, 0, 0);
    ocl_fixup_checks(fx1);
    CHECK_MSG(fx1[0] - fx0[0] == 2 && fx1[1] == fx0[1],
              "probe's checks of the split summed by the last split: %ld agreed, %ld did not, "
              "want 2 and 0", fx1[0] - fx0[0], fx1[1] - fx0[1]);
    setenv("TG_OPENCL_SPLITK", "sometimes", 1);
    graph *g = graph_new("splitk");
    graph_type tx = F32(4, 8), tw = F32(3, 8);
    int32_t in[2] = {graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x"),
                     graph_add_value(g, GRAPH_VALUE_INPUT, &tw, "w")}, y = -1;
    graph_add_input(g, in[0]);
    graph_add_input(g, in[1]);
    graph_add_node(g, GRAPH_OP_linear, in, 2, NULL, &y, 1);
    graph_add_output(g, y, "y");
    char err[512];
    replay_opts o = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p == NULL, "TG_OPENCL_SPLITK=sometimes compiled");
    CHECK_MSG(p || strstr(err, "TG_OPENCL_SPLITK=\"sometimes\"") != NULL,
              "TG_OPENCL_SPLITK=sometimes: %s", err);
    replay_plan_free(p);
    graph_free(g);
    gpu_env_leave(&e);
}

/* y[m][n] = sum_k x[m][k] w[n][k] */
static void linear_ref(const float *x, const float *w, int64_t M, int64_t N, int64_t K, float *y)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)x[m * K + k] * w[n * K + k];
            y[m * N + n] = (float)s;
        }
}

/*
 * K split in one launch (TG_OPENCL_SPLITK=fixup): the last split of each
 * tile sums the partials and sets its counter back to zero.  Two linears
 * in one session, K split over 1 tile and then 3 (the session's counters
 * grow), run four times with new inputs each run against naive loops: a
 * counter left nonzero by a run makes the next one store nothing or sum
 * partials not yet written.  One kernel per node per run.
 */
static void test_fixup_runs(void)
{
    gpu_env e;
    gpu_env_enter(&e);
    setenv("TG_OPENCL_SPLITK", "fixup", 1);
    const int64_t dims[2][3] = {{33, 47, 777}, {130, 20, 600}}; /* M N K */
    graph *g = graph_new("fixup");
    int32_t ids[4];
    for (int j = 0; j < 2; j++) {
        graph_type tx = F32(dims[j][0], dims[j][2]), tw = F32(dims[j][1], dims[j][2]);
        char nx[8], nw[8], ny[8];
        snprintf(nx, sizeof nx, "x%d", j);
        snprintf(nw, sizeof nw, "w%d", j);
        snprintf(ny, sizeof ny, "y%d", j);
        int32_t in[2] = {graph_add_value(g, GRAPH_VALUE_INPUT, &tx, nx),
                         graph_add_value(g, GRAPH_VALUE_INPUT, &tw, nw)}, y = -1;
        graph_add_input(g, in[0]);
        graph_add_input(g, in[1]);
        ids[2 * j] = in[0], ids[2 * j + 1] = in[1];
        graph_add_node(g, GRAPH_OP_linear, in, 2, NULL, &y, 1);
        graph_add_output(g, y, ny);
    }
    char err[512];
    replay_opts o = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(!p || s != NULL, "session: out of memory");
    for (int run = 0; s && run < 4; run++) {
        float *in[4], *got[2], *want[2];
        replay_tensor t[4], out[2];
        for (int i = 0; i < 4; i++) {
            const graph_type *ti = &g->values[ids[i]].type;
            in[i] = rnd(ti, 100 + 10 * (uint64_t)run + (uint64_t)i);
            t[i] = (replay_tensor){.type = *ti, .input = in[i]};
        }
        for (int j = 0; j < 2; j++) {
            size_t n = (size_t)(dims[j][0] * dims[j][1]);
            got[j] = calloc(n, sizeof(float));
            want[j] = malloc(n * sizeof(float));
            linear_ref(in[2 * j], in[2 * j + 1], dims[j][0], dims[j][1], dims[j][2], want[j]);
            out[j] = (replay_tensor){.type = F32(dims[j][0], dims[j][1]), .data = got[j]};
        }
        long k0 = ocl_kernels_run();
        tg_status st = replay_run(s, t, 4, out, 2);
        CHECK_MSG(st == TG_OK, "run %d: %s", run, replay_session_error(s));
        long ran = ocl_kernels_run() - k0;
        CHECK_MSG(ran == 2, "run %d: %ld kernels, want 2 (one per linear)", run, ran);
        for (int j = 0; j < 2 && st == TG_OK; j++) {
            char what[64];
            snprintf(what, sizeof what, "fixup run %d linear %d", run, j);
            compare(what, got[j], want[j], dims[j][0] * dims[j][1], 1e-5);
        }
        for (int i = 0; i < 4; i++)
            free(in[i]);
        for (int j = 0; j < 2; j++) {
            free(got[j]);
            free(want[j]);
        }
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    gpu_env_leave(&e);
}

/*
 * The conv on the GPU tile (nn_conv_sk, nn_conv_sk_sum; TG_OPENCL_TILE=gpu
 * forces it on PoCL): K split over several work-groups (one output tile,
 * K >= 256: at least two splits on any device), one split, channel and
 * pixel counts not multiples of 64, K not a multiple of 16, groups,
 * stride, padding and dilation, bias, every epilogue and the residual,
 * blocked x/y and a plain stem x, batches.  TG_OPENCL_SPLITK=on and off:
 * the kernels each case ran are counted (2 where K is split: nn_conv_sk
 * and the sum; the CPU tile would be 1), results against the naive loops.
 * Then the auto path, whose probe may pick any of CLBlast, the split and
 * the one-pass tile: the same results, and no probe failed (a failed one
 * falls back to CLBlast unseen).
 */
static void test_conv_sk(void)
{
    gpu_env e;
    gpu_env_enter(&e);
    graph_ints every = {7, {GRAPH_POST_RELU, GRAPH_POST_ADD, GRAPH_POST_GELU, GRAPH_POST_SIGMOID,
                            GRAPH_POST_TANH, GRAPH_POST_SILU, GRAPH_POST_LEAKY_RELU}};
    graph_ints relu = {1, {GRAPH_POST_RELU}}, add_relu = {2, {GRAPH_POST_ADD, GRAPH_POST_RELU}};
    graph_ints hard = {2, {GRAPH_POST_HARDSWISH, GRAPH_POST_HARDSIGMOID}};
    /* n c h w o kh kw sh sw pt pl pb pr dh dw groups; split: one output
     * tile and K >= 256 */
    struct {
        conv_geom g;
        int kind, stem, bias, split;
        const graph_ints *post;
        float alpha;
    } cases[] = {
        {{1, 64, 8, 8, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 0, 1, 1, NULL, 0},
        {{1, 64, 8, 8, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1, 0, 1, 1, &every, 0.2f},
        {{1, 96, 13, 11, 24, 3, 3, 2, 2, 2, 1, 2, 1, 2, 2, 1}, 0, 0, 0, 1, NULL, 0},
        {{1, 96, 13, 11, 24, 3, 3, 2, 2, 2, 1, 2, 1, 2, 2, 1}, 1, 0, 1, 1, &hard, 0},
        {{1, 48, 7, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2, 0, 1, 1, &add_relu, 0},
        {{1, 30, 8, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2, 1, 1, 1, &relu, 0},
        {{1, 48, 7, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2, 0, 1, 1, &every, -0.1f},
        {{2, 16, 21, 19, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1, 0, 1, 0, &add_relu, 0},
        {{2, 32, 10, 9, 48, 3, 3, 1, 2, 1, 0, 1, 2, 1, 2, 2}, 1, 0, 1, 0, &every, 0.3f},
        {{3, 20, 9, 7, 70, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}, 0, 0, 1, 0, NULL, 0},
        {{1, 64, 7, 6, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4}, 2, 0, 1, 0, &add_relu, 0},
        {{2, 40, 17, 15, 33, 5, 3, 2, 1, 2, 1, 1, 1, 1, 2, 1}, 2, 0, 0, 0, &relu, 0},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    const char *modes[3] = {"on", "off", "fixup"};
    for (int m = 0; m < 3; m++) {
        setenv("TG_OPENCL_SPLITK", modes[m], 1);
        for (int i = 0; i < ncases; i++) {
            long k0 = ocl_kernels_run();
            conv_case_x(cases[i].g, cases[i].kind, cases[i].stem, cases[i].bias, cases[i].post,
                        cases[i].alpha);
            long ran = ocl_kernels_run() - k0, want = m == 0 && cases[i].split ? 2 : 1;
            CHECK_MSG(ran == want || (m == 0 && !cases[i].split && ran == 2),
                      "conv case %d TG_OPENCL_SPLITK=%s: %ld kernels, want %ld", i, modes[m],
                      ran, want);
        }
    }
    setenv("TG_OPENCL_GEMM", "auto", 1);
    setenv("TG_OPENCL_SPLITK", "auto", 1);
    snprintf(path_name, sizeof path_name, "auto");
    long failed = ocl_probe_failures();
    for (int i = 0; i < ncases; i++) {
        ocl_gemm_probe_forget(); /* each case probed, not a cached result */
        conv_case_x(cases[i].g, cases[i].kind, cases[i].stem, cases[i].bias, cases[i].post,
                    cases[i].alpha);
    }
    CHECK_MSG(ocl_probe_failures() == failed, "auto path: %ld conv probes failed",
              ocl_probe_failures() - failed);
    gpu_env_leave(&e);
}

int main(void)
{
    replay_device_info dev;
    if (!check_opencl_device(&dev))
        return CHECK_SKIP;
    ocl_nn_case_setup(&dev);
    dw_on_cpu = strstr(dev.details, "GEMM own (CPU device)") != NULL;
    test_gemm_path();
    test_matmul();
    test_linear();
    test_conv();
    test_depthwise();
    test_splitk();
    test_fixup_runs();
    test_conv_sk();
    CHECK_MSG(ocl_probe_failures() == 0, "%ld auto-path probes failed", ocl_probe_failures());
    replay_backend_shutdown();
    return check_done();
}
