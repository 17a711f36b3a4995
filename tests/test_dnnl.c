/*
 * test_dnnl.c - the oneDNN glue's choices that other tests do not pin
 * down, each against an independent reference:
 *   - implementation preference (eager_dnnl_spec.prefer): the prim runs
 *     the first implementation whose name has the substring when oneDNN
 *     offers one (the test walks oneDNN's list itself), oneDNN's first
 *     choice otherwise;
 *   - conv2d_blk with Winograd (which now prefers F(4x4,3x3)) prepared as
 *     replay runs it, on odd spatial sizes, with and without the residual
 *     epilogue, vs a naive double-precision conv;
 *   - to_blocked / from_blocked on sizes around the tile (16 positions)
 *     and the 4-tile step, vs the index formula;
 *   - linear with packed weights big enough for the huge-page buffer, vs
 *     naive loops, across calls and after the weights move.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_caps.h"
#include "eager/dnnl_util.h"
#include "eager/eager.h"

#define BLK 16
#define NO TG_INTS()

/* ---- implementation preference ---- */

/* A Winograd convolution desc on nChw16c, 1 x c x h x w -> c, 3x3 pad 1. */
static void wino_desc(int64_t c, int64_t h, int64_t w, dnnl_memory_desc_t md[4],
                      dnnl_convolution_desc_t *desc)
{
    dnnl_dims_t dx = {1, c, h, w}, dw = {c, c, 3, 3}, db = {c}, one = {1, 1};
    dnnl_memory_desc_t wany;
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md[0], 4, dx, dnnl_f32, dnnl_nChw16c);
    s = s ? s : dnnl_memory_desc_init_by_tag(&md[1], 4, dw, dnnl_f32, dnnl_oihw);
    s = s ? s : dnnl_memory_desc_init_by_tag(&md[2], 4, dx, dnnl_f32, dnnl_nChw16c);
    s = s ? s : dnnl_memory_desc_init_by_tag(&md[3], 1, db, dnnl_f32, dnnl_a);
    s = s ? s : dnnl_memory_desc_init_by_tag(&wany, 4, dw, dnnl_f32, dnnl_format_tag_any);
    s = s ? s : dnnl_convolution_forward_desc_init(desc, dnnl_forward_inference,
                                                   dnnl_convolution_winograd, &md[0], &wany,
                                                   &md[3], &md[2], one, one, one);
    CHECK_MSG(s == dnnl_success, "winograd desc: %s", eager_dnnl_status_str(s));
}

/*
 * Walks oneDNN's implementation list for desc: copies the first name to
 * first and the first name containing want (or "") to match.
 */
static void list_impls(const dnnl_convolution_desc_t *desc, const char *want, char *first,
                       char *match, size_t len)
{
    dnnl_engine_t eng;
    dnnl_primitive_desc_iterator_t it;
    first[0] = match[0] = '\0';
    if (eager_dnnl_engine(&eng) != dnnl_success ||
        dnnl_primitive_desc_iterator_create(&it, desc, NULL, eng, NULL) != dnnl_success)
        return;
    do {
        dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl = "";
        if (!pd)
            break;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        if (!first[0])
            snprintf(first, len, "%s", impl);
        if (!match[0] && strstr(impl, want))
            snprintf(match, len, "%s", impl);
        dnnl_primitive_desc_destroy(pd);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
}

/* The implementation a prim built with prefer runs ("" if it failed). */
static void built_impl(const dnnl_convolution_desc_t *desc, const dnnl_memory_desc_t md[4],
                       const char *prefer, char *out, size_t len)
{
    char err[256] = "";
    eager_kargs a = {.nthreads = 1, .err = err, .errlen = sizeof err};
    eager_dnnl_spec sp = {"convolution", desc, NULL, 4,
                          {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS},
                          {md[0], md[1], md[2], md[3]}, 1};
    sp.prefer = prefer;
    eager_dnnl_prim *p = NULL;
    tg_status st = eager_dnnl_prim_new(&a, &sp, &p);
    CHECK_MSG(st == TG_OK, "prim with prefer %s: %s", prefer ? prefer : "NULL", err);
    snprintf(out, len, "%s", p ? eager_dnnl_prim_impl(p) : "");
    eager_dnnl_prim_free(p);
}

static void test_prefer(void)
{
    static const int64_t shapes[][3] = {{64, 20, 20}, {64, 23, 17}, {16, 9, 10}};
    for (int i = 0; i < 3; i++) {
        dnnl_memory_desc_t md[4];
        dnnl_convolution_desc_t desc;
        char first[128], match[128], got[128];
        wino_desc(shapes[i][0], shapes[i][1], shapes[i][2], md, &desc);
        list_impls(&desc, "wino_4x3", first, match, sizeof first);
        CHECK_MSG(first[0], "oneDNN offers a Winograd implementation for %lld x %lld x %lld",
                  (long long)shapes[i][0], (long long)shapes[i][1], (long long)shapes[i][2]);
        built_impl(&desc, md, "wino_4x3", got, sizeof got);
        CHECK_MSG(!strcmp(got, match[0] ? match : first), "prefer wino_4x3: got %s, want %s",
                  got, match[0] ? match : first);
        built_impl(&desc, md, "no such implementation", got, sizeof got);
        CHECK_MSG(!strcmp(got, first), "unknown preference: got %s, want oneDNN's first %s",
                  got, first);
        built_impl(&desc, md, NULL, got, sizeof got);
        CHECK_MSG(!strcmp(got, first), "no preference: got %s, want %s", got, first);
    }
    CHECK(!strcmp(eager_dnnl_prim_impl(NULL), ""));
}

/* ---- conv2d_blk Winograd, prepared ---- */

/* Naive 3x3 pad-1 conv of x [n,c,h,w] by w [o,c,3,3] + b, then the epilogue
 * (+ res, relu) in double; y is [n,o,h,w]. */
static void naive_conv3(const float *x, const float *w, const float *b, const float *res,
                        int relu, int64_t n, int64_t c, int64_t h, int64_t wd, int64_t o,
                        double *y)
{
    for (int64_t in = 0; in < n; in++)
        for (int64_t oc = 0; oc < o; oc++)
            for (int64_t i = 0; i < h; i++)
                for (int64_t j = 0; j < wd; j++) {
                    double s = b[oc];
                    for (int64_t ic = 0; ic < c; ic++)
                        for (int64_t u = 0; u < 3; u++)
                            for (int64_t v = 0; v < 3; v++) {
                                int64_t hi = i - 1 + u, wi = j - 1 + v;
                                if (hi >= 0 && hi < h && wi >= 0 && wi < wd)
                                    s += (double)x[((in * c + ic) * h + hi) * wd + wi] *
                                         w[((oc * c + ic) * 3 + u) * 3 + v];
                            }
                    int64_t at = ((in * o + oc) * h + i) * wd + j;
                    s += res ? res[at] : 0;
                    y[at] = relu && s < 0 ? 0 : s;
                }
}

/* One replay-like step of conv2d_blk (state slot st, weights and bias
 * fixed) on blocked xb (and rb, or NULL); returns the blocked output of
 * a 3x3 pad-1 stride-1 conv, or NULL. */
static eager_tensor *blk_step(eager_tensor *xb, eager_tensor *w, eager_tensor *b,
                              eager_tensor *rb, const graph_conv2d_blk_attrs *at,
                              eager_kstate **st)
{
    eager_tensor *ins[4] = {xb, w, b, rb};
    int nin = rb ? 4 : 3;
    graph_type in_t[4];
    const void *in_p[4];
    for (int i = 0; i < nin; i++) {
        in_t[i] = *eager_type(ins[i]);
        in_p[i] = eager_peek(ins[i]);
    }
    const int64_t *d = eager_type(xb)->dim;
    eager_tensor *y =
        eager_zeros(GRAPH_F32, TG_SHAPE(d[0], eager_type(w)->dim[0] / BLK, d[2], d[3], BLK));
    void *out_p[1] = {eager_data_mut(y)};
    char err[256] = "";
    eager_kargs ka = {in_t, in_p, nin, at, eager_type(y), out_p, 1, 1, err, sizeof err, st, 6};
    tg_status s = eager_kernel_conv2d_blk(&ka);
    CHECK_MSG(s == TG_OK, "conv2d_blk step: %s", err);
    return s == TG_OK ? y : NULL;
}

/*
 * Winograd conv2d_blk with a state slot, three calls on changing inputs
 * (prepared once), vs naive_conv3: odd spatial sizes, relu and add+relu
 * (the residual runs as a C epilogue after Winograd).
 */
static void test_wino_prepared(void)
{
    static const int64_t cases[][5] = {/* n, c, h, w, o */
                                       {1, 64, 23, 17, 64}, {2, 32, 13, 11, 48},
                                       {1, 64, 56, 56, 64}};
    for (int k = 0; k < 3; k++) {
        int64_t n = cases[k][0], c = cases[k][1], h = cases[k][2], wd = cases[k][3];
        int64_t o = cases[k][4];
        for (int with_res = 0; with_res < 2; with_res++) {
            eager_pool_push();
            graph_conv2d_blk_attrs at = {NO, TG_INTS(1), NO, 1,
                                         with_res ? TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU)
                                                  : TG_INTS(GRAPH_POST_RELU),
                                         0.0f, 2, -INFINITY, INFINITY, BLK};
            eager_tensor *w = eager_rand_uniform(TG_SHAPE(o, c, 3, 3), 31 + k, -0.2f, 0.2f);
            eager_tensor *b = eager_rand_uniform(TG_SHAPE(o), 41 + k, -1, 1);
            eager_tensor *r = eager_rand_uniform(TG_SHAPE(n, o, h, wd), 51 + k, -1, 1);
            eager_kstate *st = NULL;
            int64_t numel = n * o * h * wd;
            double *want = malloc(sizeof *want * (size_t)numel);
            float *wantf = malloc(sizeof *wantf * (size_t)numel);
            for (int call = 0; call < 3; call++) {
                eager_tensor *x = eager_rand_uniform(TG_SHAPE(n, c, h, wd), 61 + call, -1, 1);
                eager_tensor *yb = blk_step(eager_to_blocked(x, BLK), w, b,
                                            with_res ? eager_to_blocked(r, BLK) : NULL, &at,
                                            &st);
                eager_tensor *y = yb ? eager_from_blocked(yb, 0) : NULL;
                CHECK(y != NULL);
                if (!y)
                    break;
                naive_conv3(eager_peek(x), eager_peek(w), eager_peek(b),
                            with_res ? eager_peek(r) : NULL, 1, n, c, h, wd, o, want);
                for (int64_t i = 0; i < numel; i++)
                    wantf[i] = (float)want[i];
                double e = check_normalized_error(eager_peek(y), wantf, numel);
                CHECK_MSG(e <= 1e-3, "winograd %lldx%lldx%lldx%lld -> %lld, res %d, call %d: "
                          "normalized error %g", (long long)n, (long long)c, (long long)h,
                          (long long)wd, (long long)o, with_res, call, e);
            }
            CHECK_MSG(st != NULL, "conv2d_blk kept prepared state");
            eager_kstate_free(st);
            free(want);
            free(wantf);
            eager_clear_error();
            eager_pool_pop();
        }
    }
}

/* ---- to_blocked / from_blocked around the tiles ---- */

static void test_blocked_sizes(void)
{
    /* positions: below a tile, one tile, tile + tail, the 4-tile step
     * and its neighbours, several steps + tiles + tail */
    static const int64_t hw[][2] = {{1, 1}, {3, 5}, {4, 4}, {1, 17}, {7, 9}, {8, 8},
                                    {5, 13}, {10, 20}, {7, 29}};
    int64_t live = eager_live_tensors();
    for (int k = 0; k < (int)(sizeof hw / sizeof *hw); k++) {
        eager_pool_push();
        int64_t n = 2, c = 48, h = hw[k][0], w = hw[k][1], p = h * w, cb = c / BLK;
        eager_tensor *x = eager_rand_uniform(TG_SHAPE(n, c, h, w), 70 + k, -1, 1);
        eager_tensor *xb = eager_to_blocked(x, BLK);
        eager_tensor *b = eager_rand_uniform(TG_SHAPE(n, cb, h, w, BLK), 80 + k, -1, 1);
        eager_tensor *y = eager_from_blocked(b, 0);
        CHECK(xb && y);
        if (xb && y) {
            const float *px = eager_peek(x), *pxb = eager_peek(xb);
            const float *pb = eager_peek(b), *py = eager_peek(y);
            int64_t bad_to = 0, bad_from = 0;
            for (int64_t in = 0; in < n; in++)
                for (int64_t ch = 0; ch < c; ch++)
                    for (int64_t q = 0; q < p; q++) {
                        int64_t plain = (in * c + ch) * p + q;
                        int64_t blk = ((in * cb + ch / BLK) * p + q) * BLK + ch % BLK;
                        bad_to += pxb[blk] != px[plain];
                        bad_from += py[plain] != pb[blk];
                    }
            CHECK_MSG(bad_to == 0 && bad_from == 0,
                      "%lldx%lld positions: %lld to_blocked and %lld from_blocked mismatches",
                      (long long)h, (long long)w, (long long)bad_to, (long long)bad_from);
        }
        eager_pool_pop();
    }
    CHECK(eager_live_tensors() == live);
}

/* ---- linear with big packed weights ---- */

/*
 * want[rows,n] = x[rows,k] times the k x n matrix w whose element (i, j)
 * is w[i*wi + j*wj] (+ bias[j] when bias), summed in double.
 */
static void naive_product(const float *x, const float *w, int64_t wi, int64_t wj,
                          const float *bias, int64_t rows, int64_t k, int64_t n, float *want)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double acc = bias ? bias[j] : 0.0;
            for (int64_t i = 0; i < k; i++)
                acc += (double)x[r * k + i] * w[i * wi + j * wj];
            want[r * n + j] = (float)acc;
        }
}

/*
 * linear [5,600] x [320,600]^T (+ bias) with a state slot and fixed
 * weights: the packed copy is over the huge-page threshold.  Four calls:
 * the input changes each call, the weights move to a new buffer (and
 * change) at the third: repacked.  Also a small one below the threshold,
 * and two whose rows are a multiple of 4 KB (n = 1024, 2048): where
 * oneDNN wants them plain (gemm:jit, at AVX2 and SSE4.1) they are packed
 * with rows 64 bytes longer (kernels_matmul.c, padded_weights).
 */
static void test_packed_linear(void)
{
    static const int64_t sizes[][3] = {
        {5, 600, 320}, {3, 33, 17}, {4, 96, 1024}, {3, 40, 2048}}; /* rows, k, n */
    for (int s = 0; s < 4; s++) {
        eager_pool_push();
        int64_t rows = sizes[s][0], k = sizes[s][1], n = sizes[s][2];
        eager_tensor *w1 = eager_rand_uniform(TG_SHAPE(n, k), 91, -0.1f, 0.1f);
        eager_tensor *w2 = eager_rand_uniform(TG_SHAPE(n, k), 92, -0.1f, 0.1f);
        eager_tensor *b = eager_rand_uniform(TG_SHAPE(n), 93, -1, 1);
        eager_tensor *y = eager_zeros(GRAPH_F32, TG_SHAPE(rows, n));
        float *want = malloc(sizeof *want * (size_t)(rows * n));
        eager_kstate *st = NULL;
        for (int call = 0; call < 4; call++) {
            eager_tensor *x = eager_rand_uniform(TG_SHAPE(rows, k), 100 + call, -1, 1);
            eager_tensor *w = call < 2 ? w1 : w2;
            const float *px = eager_peek(x), *pw = eager_peek(w), *pb = eager_peek(b);
            naive_product(px, pw, 1, k, pb, rows, k, n, want); /* w [n,k] */
            graph_type in_t[3] = {*eager_type(x), *eager_type(w), *eager_type(b)};
            const void *in_p[3] = {px, pw, pb};
            void *out_p[1] = {eager_data_mut(y)};
            char err[256] = "";
            eager_kargs ka = {in_t, in_p, 3, NULL, eager_type(y), out_p, 1, 1, err, sizeof err,
                              &st, 6};
            tg_status rc = eager_kernel_linear(&ka);
            CHECK_MSG(rc == TG_OK, "linear step: %s", err);
            double e = check_normalized_error(eager_peek(y), want, rows * n);
            CHECK_MSG(e <= 1e-5, "linear %lldx%lld -> %lld call %d: normalized error %g",
                      (long long)rows, (long long)k, (long long)n, call, e);
        }
        CHECK_MSG(st != NULL, "linear kept prepared state");
        eager_kstate_free(st);
        free(want);
        eager_pool_pop();
    }
}

/*
 * matmul [rows,K] x [K,N] with a state slot but weights that are not fixed
 * (a replay step whose b is computed, as in a backward): no packed copy,
 * so oneDNN reads b's own buffer and must be told its real strides.  With
 * N = 1024 and 2048 the padded-rows rule for packed weights must not
 * apply here (it once did: every row read 64 bytes off, NaN in training).
 * Three calls, b changing in place between them.
 */
static void test_unfixed_matmul(void)
{
    static const int64_t sizes[][3] = {{6, 40, 1024}, {3, 24, 2048}, {5, 33, 17}};
    for (int s = 0; s < 3; s++) {
        eager_pool_push();
        int64_t rows = sizes[s][0], k = sizes[s][1], n = sizes[s][2];
        eager_tensor *bt = eager_rand_uniform(TG_SHAPE(k, n), 95, -1, 1);
        eager_tensor *y = eager_zeros(GRAPH_F32, TG_SHAPE(rows, n));
        float *want = malloc(sizeof *want * (size_t)(rows * n));
        graph_matmul_attrs at = {0, 0};
        eager_kstate *st = NULL;
        for (int call = 0; call < 3; call++) {
            eager_tensor *x = eager_rand_uniform(TG_SHAPE(rows, k), 110 + call, -1, 1);
            float *pb = eager_data_mut(bt);
            for (int64_t i = 0; call && i < k * n; i++)
                pb[i] = -0.5f * pb[i] + 0.25f; /* b changes in place */
            const float *px = eager_peek(x);
            naive_product(px, pb, n, 1, NULL, rows, k, n, want); /* b [k,n] */
            graph_type in_t[2] = {*eager_type(x), *eager_type(bt)};
            const void *in_p[2] = {px, pb};
            void *out_p[1] = {eager_data_mut(y)};
            char err[256] = "";
            eager_kargs ka = {in_t, in_p, 2, &at, eager_type(y), out_p, 1, 1, err, sizeof err,
                              &st, 0};
            tg_status rc = eager_kernel_matmul(&ka);
            CHECK_MSG(rc == TG_OK, "matmul step: %s", err);
            double e = check_normalized_error(eager_peek(y), want, rows * n);
            CHECK_MSG(e <= 1e-5, "matmul %lldx%lld x %lldx%lld, b not fixed, call %d: "
                      "normalized error %g", (long long)rows, (long long)k, (long long)k,
                      (long long)n, call, e);
        }
        eager_kstate_free(st);
        free(want);
        eager_pool_pop();
    }
}

int main(void)
{
    if (test_avx512()) { /* Winograd needs AVX-512 in oneDNN */
        test_prefer();
        test_wino_prepared();
    } else {
        printf("Winograd tests skipped: oneDNN has no Winograd kernel below AVX-512\n");
    }
    test_blocked_sizes();
    test_packed_linear();
    test_unfixed_matmul();
    return check_done();
}
