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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

enum { N = 8, D = 5, HID = 7, C = 4 };

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
    m.x = check_rand_tensor(TG_SHAPE(N, D), seed, -1, 1);
    m.w1 = check_rand_tensor(TG_SHAPE(HID, D), seed + 1, -0.7f, 0.7f);
    m.b1 = check_rand_tensor(TG_SHAPE(HID), seed + 2, -0.2f, 0.2f);
    m.w2 = check_rand_tensor(TG_SHAPE(C, HID), seed + 3, -0.7f, 0.7f);
    m.b2 = check_rand_tensor(TG_SHAPE(C), seed + 4, -0.2f, 0.2f);
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
    eager_tensor *x = check_rand_tensor(TG_SHAPE(N, D), 3, -1, 1), *w = check_rand_tensor(TG_SHAPE(C, D), 4, -1, 1);
    eager_tensor *y = check_rand_tensor(TG_SHAPE(N, C), 5, -1, 1);
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
    eager_tensor *w = check_rand_tensor(TG_SHAPE(2, 3), 7, -1, 1);
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
    /* an end with no scope open is an error, and changes nothing */
    eager_clear_error();
    eager_no_grad_end();
    CHECK(eager_status() == TG_ERR_STATE &&
          !strcmp(eager_error(), "eager_no_grad_end: no eager_no_grad_begin is open on this "
                                 "thread"));
    eager_clear_error();
}

/* A backward on a thread other than the one that recorded the tape. */
static eager_tensor *g_other_loss;
static tg_status g_other_st;
static char g_other_err[512];
static int g_other_line;
static void *backward_elsewhere(void *arg)
{
    (void)arg;
    g_other_line = __LINE__ + 1;
    g_other_st = eager_backward(g_other_loss);
    snprintf(g_other_err, sizeof g_other_err, "%s", eager_error());
    eager_clear_error();
    return NULL;
}

static void test_other_thread(void)
{
    eager_tensor *w = check_rand_tensor(TG_SHAPE(3), 12, -1, 1);
    eager_requires_grad(w, 1);
    eager_tensor *m = eager_mul(w, w);
    g_other_loss = eager_reduce_sum(m, TG_NOINTS, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, backward_elsewhere, NULL) == 0 && pthread_join(t, NULL) == 0);
    char want[300];
    snprintf(want, sizeof want, "eager_backward: the tensor belongs to the thread that made it "
             "(references are not atomic: retain and release it there, or copy its data) "
             "(test_autograd.c:%d backward_elsewhere)", g_other_line);
    CHECK_MSG(g_other_st == TG_ERR_STATE && !strcmp(g_other_err, want), "%d '%s'",
              (int)g_other_st, g_other_err);
    CHECK(eager_grad(w) == NULL || eager_numel(eager_grad(w)) == 3);
    /* on its own thread the same backward works */
    CHECK(eager_backward(g_other_loss) == TG_OK);
    /* the gradient is the leaf's: a release of it is refused, and it stays */
    eager_clear_error();
    int line = __LINE__ + 1;
    eager_release(eager_grad(w));
    CHECK(eager_status() == TG_ERR_STATE);
    check_fail_at("eager_release: the tensor is a leaf's gradient (eager_grad)", __FILE__, line,
                  __func__);
    eager_clear_error();
    CHECK(eager_grad(w) && eager_numel(eager_grad(w)) == 3);
    eager_tensor *mine = eager_retain(eager_grad(w)); /* a reference of one's own */
    eager_zero_grad(w);
    CHECK(eager_grad(w) == NULL && eager_numel(mine) == 3 && eager_status() == TG_OK);
    eager_release(mine);
    CHECK(eager_status() == TG_OK);
    eager_release(g_other_loss);
    eager_release(m);
    eager_release(w);
}

static void test_misuse(void)
{
    char want[1024];
    eager_tensor *x = check_rand_tensor(TG_SHAPE(2, 3), 8, -1, 1), *w = check_rand_tensor(TG_SHAPE(2, 3), 9, -1, 1);
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
    /* shapes a loss cannot compare: named in the loss's own terms */
    eager_tensor *m23 = check_rand_tensor(TG_SHAPE(2, 3), 13, -1, 1), *m34 = check_rand_tensor(TG_SHAPE(3, 4), 14, -1, 1);
    int lm = __LINE__ + 1;
    CHECK(eager_mse_loss(m23, m34) == NULL);
    check_fail_at("eager_mse_loss: a is f32[2,3], b is f32[3,4]: they must have one shape (or "
                  "broadcast to one)", __FILE__, lm, __func__);
    eager_clear_error();
    /* a NORULE op on the path: the backward names it */
    eager_tensor *w4 = eager_reshape(w, TG_INTS(1, 2, 3, 1));
    eager_tensor *k = check_rand_tensor(TG_SHAPE(2, 2, 1, 1), 11, -1, 1);
    int lct = __LINE__ + 1;
    eager_tensor *ct = eager_conv_transpose2d(w4, k, EAGER_NONE, TG_NOINTS, TG_NOINTS, TG_NOINTS,
                                              TG_NOINTS, 1);
    int lr = __LINE__ + 1;
    CHECK(eager_backward(eager_reduce_sum(ct, TG_NOINTS, 0)) == TG_ERR_UNSUPPORTED);
    snprintf(want, sizeof want, "eager_backward: conv_transpose2d: no gradient rule: not written "
             "yet (the op recorded at test_autograd.c:%d test_misuse) (test_autograd.c:%d "
             "test_misuse)", lct, lr);
    CHECK_MSG(!strcmp(eager_error(), want), "'%s'", eager_error());
    eager_pool_pop();
    eager_release(x);
    eager_release(w);
}

/* ---- a CNN and an encoder block: eager autograd against finite
 * differences of the eager forward (in double, from f32 losses) ---- */

typedef eager_tensor *(*model_fn)(eager_tensor **p, eager_tensor *x, eager_tensor *y);

static eager_tensor *cnn(eager_tensor **p, eager_tensor *x, eager_tensor *y)
{
    /* conv 1->4 3x3 pad 1, BN, relu, max-pool 2, conv 4->6 3x3, relu,
     * avg-pool 2, flatten, linear 6->3, cross-entropy */
    eager_tensor *h = eager_conv2d(x, p[0], p[1], TG_NOINTS, TG_INTS(1), TG_NOINTS, 1);
    h = eager_batch_norm(h, p[2], p[3], p[4], p[5], 1e-5f);
    h = eager_max_pool2d(eager_relu(h), TG_INTS(2), TG_NOINTS, TG_NOINTS);
    h = eager_relu(eager_conv2d(h, p[6], p[7], TG_NOINTS, TG_NOINTS, TG_NOINTS, 1));
    h = eager_flatten(eager_avg_pool2d(h, TG_INTS(2), TG_NOINTS, TG_NOINTS, 0), 1, -1);
    return eager_cross_entropy(eager_linear(h, p[8], p[9]), y, 0.05);
}

static eager_tensor *encoder(eager_tensor **p, eager_tensor *x, eager_tensor *y)
{
    /* pre-norm block, one head: x + attn(ln1(x)), then + mlp(ln2(.)); mse */
    eager_tensor *a = eager_layer_norm(x, p[0], p[1], -1, 1e-5f);
    eager_tensor *q = eager_linear(a, p[2], EAGER_NONE), *k = eager_linear(a, p[3], EAGER_NONE),
                 *v = eager_linear(a, p[4], EAGER_NONE);
    eager_tensor *s = eager_matmul(q, eager_transpose(k, TG_INTS(0, 2, 1)), 0, 0);
    s = eager_mul(s, eager_scalar(1.0 / sqrt(8.0)));
    eager_tensor *att = eager_matmul(eager_softmax(s, -1), v, 0, 0);
    eager_tensor *h = eager_add(x, eager_linear(att, p[5], p[6]));
    eager_tensor *f = eager_layer_norm(h, p[7], p[8], -1, 1e-5f);
    f = eager_linear(eager_gelu(eager_linear(f, p[9], p[10])), p[11], p[12]);
    return eager_mse_loss(eager_add(h, f), y);
}

static double loss_value(model_fn m, eager_tensor **p, eager_tensor *x, eager_tensor *y)
{
    eager_no_grad_begin();
    eager_pool_push();
    double l = eager_item(m(p, x, y));
    eager_pool_pop();
    eager_no_grad_end();
    return l;
}

static void fd_model(const char *name, model_fn m, eager_tensor **p, int np, eager_tensor *x,
                     eager_tensor *y, float h)
{
    for (int i = 0; i < np; i++)
        eager_requires_grad(p[i], 1);
    eager_pool_push();
    CHECK_MSG(eager_backward(m(p, x, y)) == TG_OK, "%s: backward: %s", name, eager_error());
    eager_pool_pop();
    double worst = 0;
    int count = 0;
    for (int i = 0; i < np; i++) {
        eager_tensor *g = eager_grad(p[i]);
        CHECK_MSG(g != NULL, "%s: parameter %d has a gradient", name, i);
        if (!g)
            continue;
        int64_t n = eager_numel(p[i]);
        float *w = eager_data_mut(p[i]);
        const float *ga = fd(g);
        double scale = 1e-3, err = 0;
        for (int64_t k = 0; k < n && k < 12; k++) {
            int64_t e = (k * 7919) % n;
            float w0 = w[e], wp = w0 + h, wm = w0 - h;
            w[e] = wp;
            double lp = loss_value(m, p, x, y);
            w[e] = wm;
            double lm = loss_value(m, p, x, y);
            w[e] = w0;
            double d = (lp - lm) / ((double)wp - (double)wm);
            scale = fmax(scale, fabs(d));
            err = fmax(err, fabs(d - (double)ga[e]));
            count++;
        }
        worst = fmax(worst, err / scale);
        CHECK_MSG(err / scale <= 2e-2, "%s: parameter %d: gradient vs finite differences: %g "
                  "of %g", name, i, err, scale);
    }
    printf("%s: %d parameter elements against finite differences, worst normalized error "
           "%.2e\n", name, count, worst);
}

static void test_models(void)
{
    eager_tensor *cp[10] = {
        check_rand_tensor(TG_SHAPE(4, 1, 3, 3), 21, -0.6f, 0.6f), check_rand_tensor(TG_SHAPE(4), 22, -0.1f, 0.1f),
        check_rand_tensor(TG_SHAPE(4), 23, 0.8f, 1.2f),           check_rand_tensor(TG_SHAPE(4), 24, -0.1f, 0.1f),
        check_rand_tensor(TG_SHAPE(4), 25, -0.1f, 0.1f),          check_rand_tensor(TG_SHAPE(4), 26, 0.5f, 1.5f),
        check_rand_tensor(TG_SHAPE(6, 4, 3, 3), 27, -0.3f, 0.3f), check_rand_tensor(TG_SHAPE(6), 28, -0.1f, 0.1f),
        check_rand_tensor(TG_SHAPE(3, 6), 29, -0.5f, 0.5f),       check_rand_tensor(TG_SHAPE(3), 30, -0.1f, 0.1f)};
    eager_tensor *cx = check_rand_tensor(TG_SHAPE(2, 1, 8, 8), 31, -1, 1);
    eager_tensor *cy = eager_from_data(GRAPH_I64, TG_SHAPE(2), ((int64_t[]){2, 0}));
    /* a step small enough not to cross a relu's corner or a pooling tie */
    fd_model("cnn", cnn, cp, 10, cx, cy, 1e-3f);
    eager_tensor *ep[13];
    const int64_t E = 8, F4 = 16;
    ep[0] = check_rand_tensor(TG_SHAPE(E), 41, 0.8f, 1.2f);
    ep[1] = check_rand_tensor(TG_SHAPE(E), 42, -0.1f, 0.1f);
    for (int i = 2; i < 6; i++)
        ep[i] = check_rand_tensor(TG_SHAPE(E, E), 40 + (uint64_t)i * 3, -0.4f, 0.4f);
    ep[6] = check_rand_tensor(TG_SHAPE(E), 51, -0.1f, 0.1f);
    ep[7] = check_rand_tensor(TG_SHAPE(E), 52, 0.8f, 1.2f);
    ep[8] = check_rand_tensor(TG_SHAPE(E), 53, -0.1f, 0.1f);
    ep[9] = check_rand_tensor(TG_SHAPE(F4, E), 54, -0.4f, 0.4f);
    ep[10] = check_rand_tensor(TG_SHAPE(F4), 55, -0.1f, 0.1f);
    ep[11] = check_rand_tensor(TG_SHAPE(E, F4), 56, -0.3f, 0.3f);
    ep[12] = check_rand_tensor(TG_SHAPE(E), 57, -0.1f, 0.1f);
    eager_tensor *ex = check_rand_tensor(TG_SHAPE(2, 4, E), 58, -1, 1), *ey = check_rand_tensor(TG_SHAPE(2, 4, E), 59, -1, 1);
    fd_model("encoder block", encoder, ep, 13, ex, ey, 1e-2f);
    for (int i = 0; i < 10; i++)
        eager_release(cp[i]);
    for (int i = 0; i < 13; i++)
        eager_release(ep[i]);
    eager_release(cx);
    eager_release(cy);
    eager_release(ex);
    eager_release(ey);
}

int main(void)
{
    test_mlp();
    test_mse();
    test_no_grad();
    test_other_thread();
    test_misuse();
    test_models();
    CHECK_MSG(eager_live_tensors() == 0, "%ld tensors leaked", eager_live_tensors());
    return check_done();
}
