/*
 * test_autograd.c - eager autograd (eager/autograd.c): an MLP's gradients
 * (linear, relu, linear, cross-entropy with and without label smoothing;
 * mean-squared error) against a naive backward written here in double;
 * accumulation across backwards, eager_zero_grad, the no-grad scope; and
 * misuse with its exact messages: a second backward through a freed tape,
 * a loss of more than one element, a saved tensor written before the
 * backward, eager_requires_grad on an integer tensor or a non-leaf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

enum { N = 8, D = 5, HID = 7, C = 4 };

static eager_tensor *rand_t(graph_ints shape, uint64_t seed, float lo, float hi)
{
    int64_t n = 1;
    for (int i = 0; i < shape.n; i++)
        n *= shape.v[i];
    float *f = malloc((size_t)n * sizeof *f);
    check_fill(f, n, seed, lo, hi);
    eager_tensor *t = eager_from_data(GRAPH_F32, shape, f);
    free(f);
    return t;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static const float *fd(const eager_tensor *t) { return eager_peek(t); }

/* max |got - want| / max(max |want|, 1) over n */
static double rel_err(const float *got, const double *want, int n)
{
    double m = 1, e = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs(want[i]));
    for (int i = 0; i < n; i++)
        e = fmax(e, fabs((double)got[i] - want[i]));
    return e / m;
}

typedef struct mlp {
    eager_tensor *x, *w1, *b1, *w2, *b2, *t;
} mlp;

static mlp make_mlp(uint64_t seed)
{
    mlp m;
    m.x = rand_t(TG_SHAPE(N, D), seed, -1, 1);
    m.w1 = rand_t(TG_SHAPE(HID, D), seed + 1, -0.7f, 0.7f);
    m.b1 = rand_t(TG_SHAPE(HID), seed + 2, -0.2f, 0.2f);
    m.w2 = rand_t(TG_SHAPE(C, HID), seed + 3, -0.7f, 0.7f);
    m.b2 = rand_t(TG_SHAPE(C), seed + 4, -0.2f, 0.2f);
    int64_t t[N];
    for (int i = 0; i < N; i++)
        t[i] = (i * 3 + (int)seed) % C;
    m.t = eager_from_data(GRAPH_I64, TG_SHAPE(N), t);
    eager_tensor *p[4] = {m.w1, m.b1, m.w2, m.b2};
    for (int i = 0; i < 4; i++)
        CHECK(eager_requires_grad(p[i], 1) == TG_OK);
    return m;
}

static void free_mlp(mlp *m)
{
    eager_tensor *p[6] = {m->x, m->w1, m->b1, m->w2, m->b2, m->t};
    for (int i = 0; i < 6; i++)
        eager_release(p[i]);
}

static eager_tensor *mlp_loss(const mlp *m, double smoothing)
{
    eager_tensor *h = eager_linear(m->x, m->w1, m->b1);
    eager_tensor *a = eager_relu(h);
    eager_tensor *z = eager_linear(a, m->w2, m->b2);
    return eager_cross_entropy(z, m->t, smoothing);
}

/* The naive backward, in double: the gradients of w1, b1, w2, b2 and the loss. */
static double naive_mlp(const mlp *m, double eps, double *gw1, double *gb1, double *gw2,
                        double *gb2)
{
    const float *x = fd(m->x), *w1 = fd(m->w1), *b1 = fd(m->b1), *w2 = fd(m->w2),
                *b2 = fd(m->b2);
    const int64_t *t = eager_peek(m->t);
    double h[N][HID], z[N][C], dz[N][C], dh[N][HID], loss = 0;
    memset(gw1, 0, sizeof(double) * HID * D);
    memset(gb1, 0, sizeof(double) * HID);
    memset(gw2, 0, sizeof(double) * C * HID);
    memset(gb2, 0, sizeof(double) * C);
    for (int n = 0; n < N; n++) {
        for (int j = 0; j < HID; j++) {
            double s = b1[j];
            for (int k = 0; k < D; k++)
                s += (double)x[n * D + k] * w1[j * D + k];
            h[n][j] = s;
        }
        double mx = -INFINITY, se = 0;
        for (int c = 0; c < C; c++) {
            double s = b2[c];
            for (int j = 0; j < HID; j++)
                s += fmax(h[n][j], 0) * w2[c * HID + j];
            z[n][c] = s;
            mx = fmax(mx, s);
        }
        for (int c = 0; c < C; c++)
            se += exp(z[n][c] - mx);
        for (int c = 0; c < C; c++) {
            double lsm = z[n][c] - mx - log(se);
            double want = (1 - eps) * (c == t[n]) + eps / C;
            loss -= want * lsm / N;
            dz[n][c] = (exp(lsm) - want) / N;
        }
    }
    for (int n = 0; n < N; n++) {
        for (int j = 0; j < HID; j++) {
            double s = 0;
            for (int c = 0; c < C; c++)
                s += dz[n][c] * w2[c * HID + j];
            dh[n][j] = h[n][j] > 0 ? s : 0;
        }
        for (int c = 0; c < C; c++) {
            gb2[c] += dz[n][c];
            for (int j = 0; j < HID; j++)
                gw2[c * HID + j] += dz[n][c] * fmax(h[n][j], 0);
        }
        for (int j = 0; j < HID; j++) {
            gb1[j] += dh[n][j];
            for (int k = 0; k < D; k++)
                gw1[j * D + k] += dh[n][j] * x[n * D + k];
        }
    }
    return loss;
}

static void check_grads(const mlp *m, double eps, double times, int line)
{
    double gw1[HID * D], gb1[HID], gw2[C * HID], gb2[C];
    naive_mlp(m, eps, gw1, gb1, gw2, gb2);
    double *want[4] = {gw1, gb1, gw2, gb2};
    int n[4] = {HID * D, HID, C * HID, C};
    eager_tensor *p[4] = {m->w1, m->b1, m->w2, m->b2};
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < n[i]; k++)
            want[i][k] *= times;
        eager_tensor *g = eager_grad(p[i]);
        CHECK_MSG(g && eager_numel(g) == n[i], "line %d: parameter %d has a gradient", line, i);
        if (!g)
            continue;
        double e = rel_err(fd(g), want[i], n[i]);
        CHECK_MSG(e <= 1e-5, "line %d: parameter %d: gradient vs the naive backward: %g", line,
                  i, e);
    }
}

static void test_mlp(void)
{
    for (int s = 0; s < 2; s++) {
        double eps = s ? 0.1 : 0.0;
        mlp m = make_mlp(10 + (uint64_t)s);
        eager_pool_push();
        eager_tensor *loss = mlp_loss(&m, eps);
        double gw1[HID * D], gb1[HID], gw2[C * HID], gb2[C];
        double want = naive_mlp(&m, eps, gw1, gb1, gw2, gb2);
        CHECK_NEAR(eager_item(loss), want, 1e-5);
        CHECK(eager_is_requires_grad(loss));
        CHECK(eager_backward(loss) == TG_OK);
        eager_pool_pop();
        check_grads(&m, eps, 1.0, __LINE__);
        /* a second forward and backward adds to the gradients */
        eager_pool_push();
        CHECK(eager_backward(mlp_loss(&m, eps)) == TG_OK);
        eager_pool_pop();
        check_grads(&m, eps, 2.0, __LINE__);
        /* zeroed, they start again */
        eager_tensor *p[4] = {m.w1, m.b1, m.w2, m.b2};
        for (int i = 0; i < 4; i++) {
            eager_zero_grad(p[i]);
            CHECK(eager_grad(p[i]) == NULL);
        }
        eager_pool_push();
        CHECK(eager_backward(mlp_loss(&m, eps)) == TG_OK);
        eager_pool_pop();
        check_grads(&m, eps, 1.0, __LINE__);
        free_mlp(&m);
    }
}

static void test_mse(void)
{
    /* loss = mean((x w^T - y)^2): dw = 2/(N C) (x w^T - y)^T x */
    eager_tensor *x = rand_t(TG_SHAPE(N, D), 3, -1, 1), *w = rand_t(TG_SHAPE(C, D), 4, -1, 1);
    eager_tensor *y = rand_t(TG_SHAPE(N, C), 5, -1, 1);
    eager_requires_grad(w, 1);
    eager_pool_push();
    eager_tensor *loss = eager_mse_loss(eager_linear(x, w, EAGER_NONE), y);
    CHECK(eager_backward(loss) == TG_OK);
    eager_pool_pop();
    double want[C * D] = {0};
    const float *px = fd(x), *pw = fd(w), *py = fd(y);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double r = -(double)py[n * C + c];
            for (int k = 0; k < D; k++)
                r += (double)px[n * D + k] * pw[c * D + k];
            for (int k = 0; k < D; k++)
                want[c * D + k] += 2.0 / (N * C) * r * px[n * D + k];
        }
    CHECK_MSG(eager_grad(w) && rel_err(fd(eager_grad(w)), want, C * D) <= 1e-5,
              "mse gradient vs the naive one");
    eager_release(x);
    eager_release(w);
    eager_release(y);
}

static void test_no_grad(void)
{
    eager_tensor *w = rand_t(TG_SHAPE(2, 3), 7, -1, 1);
    eager_requires_grad(w, 1);
    eager_pool_push();
    eager_no_grad_begin();
    eager_tensor *y = eager_reduce_sum(eager_mul(w, w), TG_NOINTS, 0);
    eager_no_grad_end();
    CHECK(!eager_is_requires_grad(y));
    int line = __LINE__ + 1;
    CHECK(eager_backward(y) == TG_ERR_ARG);
    check_fail_at("eager_backward: the loss does not depend on a tensor that requires a "
                  "gradient", __FILE__, line, __func__);
    /* after the scope, recording resumes */
    eager_tensor *y2 = eager_reduce_sum(eager_mul(w, w), TG_NOINTS, 0);
    CHECK(eager_is_requires_grad(y2));
    CHECK(eager_backward(y2) == TG_OK);
    eager_pool_pop();
    const float *g = fd(eager_grad(w)), *pw = fd(w);
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(g[i], 2.0 * pw[i], 1e-6);
    eager_release(w);
}

static void test_misuse(void)
{
    char want[1024];
    eager_tensor *x = rand_t(TG_SHAPE(2, 3), 8, -1, 1), *w = rand_t(TG_SHAPE(2, 3), 9, -1, 1);
    eager_requires_grad(w, 1);
    eager_pool_push();

    /* a second backward through a freed tape */
    int rec = __LINE__ + 1;
    eager_tensor *p = eager_mul(x, w);
    eager_tensor *loss = eager_reduce_sum(p, TG_NOINTS, 0);
    int first = __LINE__ + 1;
    CHECK(eager_backward(loss) == TG_OK);
    int second = __LINE__ + 1;
    CHECK(eager_backward(loss) == TG_ERR_STATE);
    snprintf(want, sizeof want,
             "eager_backward: the tape through reduce_sum (recorded at %s:%d test_misuse) was "
             "freed by the eager_backward at %s:%d test_misuse: run the forward again for "
             "another backward (%s:%d test_misuse)", base(__FILE__), rec + 1, base(__FILE__),
             first, base(__FILE__), second);
    CHECK_MSG(strcmp(eager_error(), want) == 0, "got: %s\nwant: %s", eager_error(), want);
    eager_clear_error();

    /* a loss of more than one element */
    int ns = __LINE__ + 1;
    CHECK(eager_backward(p) == TG_ERR_SHAPE);
    snprintf(want, sizeof want,
             "eager_backward: the loss has 6 elements of f32; it must be one f32 element "
             "(reduce it first, e.g. with eager_reduce_mean) (%s:%d test_misuse)", base(__FILE__), ns);
    CHECK_MSG(strcmp(eager_error(), want) == 0, "got: %s\nwant: %s", eager_error(), want);
    eager_clear_error();

    /* a saved input written before the backward: both sites named */
    eager_zero_grad(w);
    int saved = __LINE__ + 1;
    eager_tensor *q = eager_mul(x, w);
    eager_tensor *l2 = eager_reduce_sum(q, TG_NOINTS, 0);
    int wrote = __LINE__ + 1;
    float *px = eager_data_mut(x);
    px[0] += 1.0f;
    int bw = __LINE__ + 1;
    CHECK(eager_backward(l2) == TG_ERR_STATE);
    snprintf(want, sizeof want,
             "eager_backward: mul's input 0, saved for the gradient at %s:%d test_misuse, was "
             "written at %s:%d test_misuse after it was saved (version 0 then, 1 now) "
             "(%s:%d test_misuse)", base(__FILE__), saved, base(__FILE__), wrote, base(__FILE__),
             bw);
    CHECK_MSG(strcmp(eager_error(), want) == 0, "got: %s\nwant: %s", eager_error(), want);
    eager_clear_error();
    CHECK(eager_grad(w) == NULL);

    /* a write through a view counts as a write of its base */
    eager_tensor *q2 = eager_mul(x, w);
    eager_tensor *l3 = eager_reduce_sum(q2, TG_NOINTS, 0);
    eager_tensor *xv = eager_reshape(x, TG_INTS(6));
    ((float *)eager_data_mut(xv))[1] += 1.0f;
    CHECK(eager_backward(l3) == TG_ERR_STATE);
    CHECK_ERROR("was written at");
    eager_clear_error();

    /* requires_grad on an integer tensor, on a non-leaf */
    eager_tensor *ix = eager_from_data(GRAPH_I64, TG_SHAPE(2), ((int64_t[]){1, 2}));
    int li = __LINE__ + 1;
    CHECK(eager_requires_grad(ix, 1) == TG_ERR_DTYPE);
    check_fail_at("eager_requires_grad: a i64 tensor cannot have a gradient (only f32)",
                  __FILE__, li, __func__);
    int ln = __LINE__ + 1;
    CHECK(eager_requires_grad(q, 1) == TG_ERR_ARG);
    check_fail_at("eager_requires_grad: the tensor was made by mul from tensors that require "
                  "gradients (only a leaf's flag can be set)", __FILE__, ln, __func__);
    /* a NORULE op on the path: the backward names it */
    eager_tensor *w4 = eager_reshape(w, TG_INTS(1, 2, 3, 1));
    eager_tensor *k = rand_t(TG_SHAPE(2, 2, 1, 1), 11, -1, 1);
    eager_tensor *ct = eager_conv_transpose2d(w4, k, EAGER_NONE, TG_NOINTS, TG_NOINTS, TG_NOINTS,
                                              TG_NOINTS, 1);
    int lr = __LINE__ + 1;
    CHECK(eager_backward(eager_reduce_sum(ct, TG_NOINTS, 0)) == TG_ERR_UNSUPPORTED);
    check_fail_at("eager_backward: conv_transpose2d: no gradient: no rule yet", __FILE__, lr,
                  __func__);
    eager_release(k);
    eager_pool_pop();
    eager_release(x);
    eager_release(w);
}

int main(void)
{
    test_mlp();
    test_mse();
    test_no_grad();
    test_misuse();
    CHECK_MSG(eager_live_tensors() == 0, "%ld tensors leaked", eager_live_tensors());
    return check_done();
}
