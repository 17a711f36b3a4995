/*
 * test_bn_grad.c - batch_norm_train_grad (batch_norm_train's gradients
 * from y's in one op) against naive loops in double written here from the
 * formulas: per channel c over its M values, xhat = (x - mean) * invstd,
 * dbias = sum(dy), dweight = sum(dy * xhat), dx = weight * invstd * (dy -
 * dbias / M - xhat * dweight / M).  Shapes of rank 2 to 5 with N = 1,
 * H * W = 1, C = 1 and odd sizes, large enough ones for two threads to
 * split them; mean and invstd from x (as batch_norm_train gives them) and
 * arbitrary.  Then: one and two threads give the same bits; a NaN in x or
 * dy makes its channel NaN and leaves the others alone; empty tensors
 * (M = 0, C = 0); bad shapes and dtypes fail naming what is wrong; and
 * batch_norm_train's gradients through eager_backward, and through
 * graph_backward (one batch_norm_train_grad node, no reduction), are this
 * op's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph_impl.h"
#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/grad.h"
#include "graph/graph.h"
#include "graph/text.h"

typedef struct bn_ref {
    double *dx, *dw, *db;
} bn_ref;

/* The channel count and M of x's shape; s: the values per (batch, channel). */
static void geometry(const int64_t *dims, int nd, int64_t *n, int64_t *c, int64_t *s)
{
    *n = dims[0], *c = dims[1], *s = 1;
    for (int d = 2; d < nd; d++)
        *s *= dims[d];
}

/* The formulas, in double, element by element. */
static void reference(const int64_t *dims, int nd, const float *dy, const float *x,
                      const float *w, const float *mean, const float *invstd, bn_ref *r)
{
    int64_t n, c, s;
    geometry(dims, nd, &n, &c, &s);
    double m = (double)(n * s);
    for (int64_t ch = 0; ch < c; ch++) {
        double db = 0, dw = 0;
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++) {
                int64_t k = (b * c + ch) * s + i;
                double xh = ((double)x[k] - mean[ch]) * invstd[ch];
                db += dy[k];
                dw += dy[k] * xh;
            }
        r->db[ch] = db;
        r->dw[ch] = dw;
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++) {
                int64_t k = (b * c + ch) * s + i;
                double xh = ((double)x[k] - mean[ch]) * invstd[ch];
                r->dx[k] = (double)w[ch] * invstd[ch] * (dy[k] - db / m - xh * dw / m);
            }
    }
}

/* The batch mean and 1/sqrt(var + 1e-5) of x per channel, rounded to f32. */
static void batch_stats(const int64_t *dims, int nd, const float *x, float *mean, float *invstd)
{
    int64_t n, c, s;
    geometry(dims, nd, &n, &c, &s);
    for (int64_t ch = 0; ch < c; ch++) {
        double sum = 0, sq = 0, m = (double)(n * s);
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++)
                sum += x[(b * c + ch) * s + i];
        double mu = sum / m;
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++)
                sq += pow(x[(b * c + ch) * s + i] - mu, 2);
        mean[ch] = (float)mu;
        invstd[ch] = (float)(1 / sqrt(sq / m + 1e-5));
    }
}

static void to_f32(const double *d, float *f, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        f[i] = (float)d[i];
}

/* Runs the op at 1 and 2 threads on random x and dy of shape dims and
 * checks it against the reference, and the two runs against each other
 * bit for bit.  from_x: mean and invstd from x, else random. */
static void check_case(int line, const int64_t *dims, int nd, int from_x)
{
    graph_ints sh = {nd, {0}};
    int64_t numel = 1;
    for (int d = 0; d < nd; d++)
        sh.v[d] = dims[d], numel *= dims[d];
    int64_t c = dims[1];
    eager_pool_push();
    uint64_t seed = (uint64_t)line * 8;
    eager_tensor *x = eager_rand_normal(sh, seed, 0.5, 2);
    eager_tensor *dy = eager_rand_uniform(sh, seed + 1, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(c), seed + 2, -2, 2);
    eager_tensor *mean = eager_rand_uniform(TG_SHAPE(c), seed + 3, -1, 1);
    eager_tensor *invstd = eager_rand_uniform(TG_SHAPE(c), seed + 4, 0.25, 3);
    if (from_x)
        batch_stats(dims, nd, eager_peek(x), (float *)eager_peek(mean),
                    (float *)eager_peek(invstd));
    bn_ref r = {malloc((size_t)(numel + 1) * sizeof(double)),
                malloc((size_t)(c + 1) * sizeof(double)), malloc((size_t)(c + 1) * sizeof(double))};
    float *fx = malloc((size_t)(numel + 1) * sizeof *fx);
    float *fw = malloc((size_t)(c + 1) * sizeof *fw), *fb = malloc((size_t)(c + 1) * sizeof *fb);
    reference(dims, nd, eager_peek(dy), eager_peek(x), eager_peek(w), eager_peek(mean),
              eager_peek(invstd), &r);
    to_f32(r.dx, fx, numel);
    to_f32(r.dw, fw, c);
    to_f32(r.db, fb, c);
    eager_tensor *out[2][3] = {{NULL}};
    for (int t = 1; t <= 2; t++) {
        eager_set_threads(t);
        int k = eager_batch_norm_train_grad(dy, x, w, mean, invstd, out[t - 1], 3);
        check_report(k == 3, __FILE__, line, "%d threads: %d outputs: %s", t, k,
                     k == 3 ? "" : eager_error());
        if (k != 3)
            continue;
        eager_tensor **o = out[t - 1];
        check_report(eager_ndim(o[0]) == nd && eager_numel(o[0]) == numel &&
                         eager_ndim(o[1]) == 1 && eager_dim(o[1], 0) == c &&
                         eager_ndim(o[2]) == 1 && eager_dim(o[2], 0) == c,
                     __FILE__, line, "%d threads: output shapes", t);
        check_floats(eager_peek(o[0]), fx, numel, 2e-5, __FILE__, line, "dx");
        check_floats(eager_peek(o[1]), fw, c, 1e-5, __FILE__, line, "dweight");
        check_floats(eager_peek(o[2]), fb, c, 1e-5, __FILE__, line, "dbias");
    }
    if (out[0][0] && out[1][0])
        check_report(!memcmp(eager_peek(out[0][0]), eager_peek(out[1][0]),
                             (size_t)numel * sizeof(float)) &&
                         !memcmp(eager_peek(out[0][1]), eager_peek(out[1][1]),
                                 (size_t)c * sizeof(float)) &&
                         !memcmp(eager_peek(out[0][2]), eager_peek(out[1][2]),
                                 (size_t)c * sizeof(float)),
                     __FILE__, line, "1 and 2 threads: the same bits");
    eager_set_threads(1);
    free(r.dx), free(r.dw), free(r.db), free(fx), free(fw), free(fb);
    eager_pool_pop();
}

#define CASE(from_x, ...)                                                                     \
    check_case(__LINE__, (const int64_t[]){__VA_ARGS__},                                      \
               (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), from_x)

static void test_values(void)
{
    for (int f = 0; f <= 1; f++) {
        CASE(f, 4, 3, 5, 7);          /* odd sizes */
        CASE(f, 1, 5, 9, 11);         /* N = 1 */
        CASE(f, 6, 4, 1, 1);          /* H * W = 1 */
        CASE(f, 7, 1, 3, 5);          /* C = 1 */
        CASE(f, 9, 5);                /* rank 2: BatchNorm1d on [N, C] */
        CASE(f, 3, 4, 13);            /* rank 3: [N, C, L] */
        CASE(f, 2, 3, 3, 4, 5);       /* rank 5 */
        CASE(f, 2, 70, 3);            /* more channels than a block */
        CASE(f, 8, 8, 17, 19);        /* two threads split it (> 32768 values) */
        CASE(f, 3, 2, 1100, 3);       /* a channel's row longer than a column piece */
        CASE(f, 12000, 3);            /* [N, C], two threads */
        CASE(f, 500, 130);            /* [N, C], three channel blocks */
    }
    /* the training benchmark's CNN shapes */
    CASE(1, 64, 32, 28, 28);
    CASE(1, 64, 64, 14, 14);
}

/* A NaN in x or dy: its channel's outputs are NaN, the others' are not;
 * an inf invstd with x == mean gives NaN too (0 * inf in xhat). */
static void test_nan(void)
{
    eager_pool_push();
    enum { N = 2, C = 3, S = 4 };
    float x[N * C * S], dy[N * C * S];
    float w[C] = {1, -2, 0.5f}, mean[C] = {0.1f, 0, -0.2f}, invstd[C] = {2, 1, 3};
    for (int i = 0; i < N * C * S; i++)
        x[i] = (float)((i * 7) % 11) / 5 - 1, dy[i] = (float)((i * 5) % 9) / 4 - 1;
    x[1 * C * S + 0 * S + 2] = NAN; /* channel 0 */
    dy[0 * C * S + 2 * S + 1] = NAN; /* channel 2 */
    eager_tensor *tx = eager_from_data(GRAPH_F32, TG_SHAPE(N, C, S), x);
    eager_tensor *tdy = eager_from_data(GRAPH_F32, TG_SHAPE(N, C, S), dy);
    eager_tensor *tw = eager_from_data(GRAPH_F32, TG_SHAPE(C), w);
    eager_tensor *tm = eager_from_data(GRAPH_F32, TG_SHAPE(C), mean);
    eager_tensor *tr = eager_from_data(GRAPH_F32, TG_SHAPE(C), invstd);
    eager_tensor *o[3];
    CHECK_MSG(eager_batch_norm_train_grad(tdy, tx, tw, tm, tr, o, 3) == 3, "%s", eager_error());
    const float *dx = eager_peek(o[0]), *dw = eager_peek(o[1]), *db = eager_peek(o[2]);
    CHECK(isnan(dw[0]) && !isnan(db[0]) && isnan(dw[2]) && isnan(db[2]));
    CHECK(isfinite(dw[1]) && isfinite(db[1]));
    int ok = 1;
    for (int b = 0; b < N; b++)
        for (int i = 0; i < S; i++)
            ok &= isnan(dx[(b * C + 0) * S + i]) && isfinite(dx[(b * C + 1) * S + i]) &&
                  isnan(dx[(b * C + 2) * S + i]);
    CHECK_MSG(ok, "dx: channels 0 and 2 NaN, channel 1 finite");
    /* and the finite channel is the reference's */
    double rdx[N * C * S], rdw[C], rdb[C];
    bn_ref r = {rdx, rdw, rdb};
    reference((const int64_t[]){N, C, S}, 3, dy, x, w, mean, invstd, &r);
    CHECK_NEAR(dw[1], rdw[1], 1e-5);
    CHECK_NEAR(db[1], rdb[1], 1e-5);
    for (int b = 0; b < N; b++)
        for (int i = 0; i < S; i++)
            CHECK_NEAR(dx[(b * C + 1) * S + i], rdx[(b * C + 1) * S + i], 1e-5);
    /* invstd inf (a constant channel with eps 0): dweight and dx NaN */
    float xc[N * C * S], inf3[C] = {INFINITY, INFINITY, INFINITY};
    for (int i = 0; i < N * C * S; i++)
        xc[i] = 0.1f;
    eager_tensor *txc = eager_from_data(GRAPH_F32, TG_SHAPE(N, C, S), xc);
    eager_tensor *tmc = eager_from_data(GRAPH_F32, TG_SHAPE(C), (float[C]){0.1f, 0.1f, 0.1f});
    eager_tensor *ti = eager_from_data(GRAPH_F32, TG_SHAPE(C), inf3);
    CHECK_MSG(eager_batch_norm_train_grad(tdy, txc, tw, tmc, ti, o, 3) == 3, "%s", eager_error());
    const float *cdx = eager_peek(o[0]), *cdw = eager_peek(o[1]);
    CHECK(isnan(cdw[1]) && isnan(cdx[S]));
    eager_pool_pop();
}

/* M = 0: dx empty, dweight and dbias zeros; C = 0: all empty. */
static void test_empty(void)
{
    eager_pool_push();
    eager_tensor *o[3];
    static const int64_t shapes[3][4] = {{0, 3, 4, 4}, {2, 3, 0, 4}, {2, 0, 4, 4}};
    for (int k = 0; k < 3; k++) {
        const int64_t *d = shapes[k];
        eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(d[0], d[1], d[2], d[3]));
        eager_tensor *v = eager_ones(GRAPH_F32, TG_SHAPE(d[1]));
        int n = eager_batch_norm_train_grad(x, x, v, v, v, o, 3);
        CHECK_MSG(n == 3 && eager_numel(o[0]) == 0 && eager_dim(o[1], 0) == d[1] &&
                      eager_dim(o[2], 0) == d[1],
                  "case %d: %s", k, n == 3 ? "shapes" : eager_error());
        int zero = n == 3;
        for (int64_t i = 0; n == 3 && i < d[1]; i++)
            zero &= ((const float *)eager_peek(o[1]))[i] == 0.0f &&
                    ((const float *)eager_peek(o[2]))[i] == 0.0f;
        CHECK_MSG(zero, "case %d: zero sums", k);
    }
    eager_pool_pop();
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *o[3];
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 3, 4), 1, -1, 1);
    eager_tensor *x5 = eager_rand_uniform(TG_SHAPE(2, 3, 5), 2, -1, 1);
    eager_tensor *x1 = eager_rand_uniform(TG_SHAPE(3), 3, -1, 1);
    eager_tensor *v = eager_ones(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *v4 = eager_ones(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *vi = eager_ones(GRAPH_I64, TG_SHAPE(3));
    CHECK_FAILS_N(eager_batch_norm_train_grad(x1, x1, v, v, v, o, 3),
                  "x needs at least 2 dims [N,C,...], has 1");
    CHECK_FAILS_N(eager_batch_norm_train_grad(x, x5, v, v, v, o, 3),
                  "dy has shape [2,3,4], x [2,3,5]: they must match");
    CHECK_FAILS_N(eager_batch_norm_train_grad(x, x, v4, v, v, o, 3),
                  "weight (input 2) has shape [4], want [3] (x's channels, dim 1)");
    CHECK_FAILS_N(eager_batch_norm_train_grad(x, x, v, v, v4, o, 3),
                  "invstd (input 4) has shape [4], want [3] (x's channels, dim 1)");
    CHECK_FAILS_N(eager_batch_norm_train_grad(x, x, v, vi, v, o, 3),
                  "mean (input 3) has dtype i64, want f32");
    eager_pool_pop();
}

/* batch_norm_train's gradients through eager_backward are this op's, bit
 * for bit (y's gradient only: no other output is used). */
static void test_backward(void)
{
    eager_pool_push();
    enum { N = 4, C = 3, H = 5, W = 6 };
    eager_tensor *x = eager_rand_normal(TG_SHAPE(N, C, H, W), 41, 1, 2);
    eager_tensor *scale = eager_rand_uniform(TG_SHAPE(C), 42, 0.5, 2);
    eager_tensor *bias = eager_rand_uniform(TG_SHAPE(C), 43, -1, 1);
    eager_tensor *rm = eager_zeros(GRAPH_F32, TG_SHAPE(C));
    eager_tensor *rv = eager_ones(GRAPH_F32, TG_SHAPE(C));
    eager_tensor *dy = eager_rand_uniform(TG_SHAPE(N, C, H, W), 44, -1, 1);
    CHECK(eager_requires_grad(x, 1) == TG_OK && eager_requires_grad(scale, 1) == TG_OK &&
          eager_requires_grad(bias, 1) == TG_OK);
    eager_tensor *bo[5];
    CHECK(eager_batch_norm_train_op(x, scale, bias, rm, rv, 1e-5f, 0.1f, bo, 5) == 5);
    eager_tensor *loss = eager_reduce_sum(eager_mul(bo[0], dy), TG_NOINTS, 0);
    CHECK_MSG(loss && eager_backward(loss) == TG_OK, "%s", eager_error());
    eager_tensor *o[3];
    CHECK_MSG(eager_batch_norm_train_grad(dy, x, scale, bo[3], bo[4], o, 3) == 3, "%s",
              eager_error());
    CHECK(eager_grad(x) && !memcmp(eager_peek(o[0]), eager_peek(eager_grad(x)),
                                   N * C * H * W * sizeof(float)));
    CHECK(eager_grad(scale) &&
          !memcmp(eager_peek(o[1]), eager_peek(eager_grad(scale)), C * sizeof(float)));
    CHECK(eager_grad(bias) &&
          !memcmp(eager_peek(o[2]), eager_peek(eager_grad(bias)), C * sizeof(float)));
    eager_pool_pop();
}

/* graph_backward of sum(batch_norm_train(x, ...)[0] * dy) emits one
 * batch_norm_train_grad and no reduction; interpreted, its gradients are
 * the op's, bit for bit. */
static void test_graph(void)
{
    static const char ir[] =
        "graph t(%x: f32[4,3,5,6], %w: f32[3], %b: f32[3], %rm: f32[3], %rv: f32[3], "
        "%dy: f32[4,3,5,6]) -> (y: f32[4,3,5,6]) {\n"
        "  %1: f32[4,3,5,6], %2: f32[3], %3: f32[3], %4: f32[3], %5: f32[3] = "
        "batch_norm_train(%x, %w, %b, %rm, %rv)\n"
        "  %6: f32[4,3,5,6] = mul(%1, %dy)\n"
        "  %7: f32[] = reduce_sum(%6)\n"
        "  return y = %1\n}\n";
    char err[256] = "";
    graph *g = graph_parse(ir, sizeof ir - 1, err, sizeof err);
    CHECK_MSG(g != NULL, "parse: %s", err);
    if (!g)
        return;
    int32_t loss = g->nodes[2].out[0], wrt[3] = {g->inputs[0], g->inputs[1], g->inputs[2]};
    int32_t grads[3] = {-1, -1, -1};
    CHECK_MSG(graph_backward(g, loss, wrt, 3, grads) == TG_OK, "%s", graph_error(g));
    int nbn = 0, nred = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        nbn += g->nodes[i].op == GRAPH_OP_batch_norm_train_grad;
        nred += g->nodes[i].op == GRAPH_OP_reduce_mean ||
                (i > 2 && g->nodes[i].op == GRAPH_OP_reduce_sum);
    }
    CHECK_MSG(nbn == 1 && nred == 0, "%d batch_norm_train_grad, %d reductions", nbn, nred);
    static const char *const names[3] = {"gx", "gw", "gb"};
    for (int k = 0; k < 3; k++)
        CHECK(grads[k] >= 0 && graph_add_output(g, grads[k], names[k]) == TG_OK);
    eager_pool_push();
    eager_tensor *in[6] = {eager_rand_normal(TG_SHAPE(4, 3, 5, 6), 51, 1, 2),
                           eager_rand_uniform(TG_SHAPE(3), 52, 0.5, 2),
                           eager_rand_uniform(TG_SHAPE(3), 53, -1, 1),
                           eager_zeros(GRAPH_F32, TG_SHAPE(3)),
                           eager_ones(GRAPH_F32, TG_SHAPE(3)),
                           eager_rand_uniform(TG_SHAPE(4, 3, 5, 6), 54, -1, 1)};
    eager_tensor *got[4] = {NULL}, *bo[5], *o[3];
    CHECK_MSG(eager_interpret(g, in, 6, got, 4, NULL) == TG_OK, "%s", eager_error());
    CHECK(eager_batch_norm_train_op(in[0], in[1], in[2], in[3], in[4], 1e-5f, 0.1f, bo, 5) == 5);
    CHECK(eager_batch_norm_train_grad(in[5], in[0], in[1], bo[3], bo[4], o, 3) == 3);
    static const size_t bytes[3] = {4 * 3 * 5 * 6 * sizeof(float), 3 * sizeof(float),
                                    3 * sizeof(float)};
    for (int k = 0; k < 3; k++)
        CHECK_MSG(got[k + 1] && !memcmp(eager_peek(got[k + 1]), eager_peek(o[k]), bytes[k]),
                  "graph %s equals the op's", names[k]);
    for (int k = 0; k < 4; k++)
        eager_release(got[k]);
    eager_pool_pop();
    graph_free(g);
}

int main(void)
{
    test_values();
    test_nan();
    test_empty();
    test_errors();
    test_backward();
    test_graph();
    return check_done();
}
