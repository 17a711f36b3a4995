/*
 * test_optim.c - the optimizer updates sgd_step and adamw_step against
 * PyTorch's formulas written here as naive double loops (several steps,
 * the learning rate changed between them, Nesterov on and off, weight
 * decay, one and four threads), run in place through the kernel (each
 * output buffer its input's) against out of place, their refusals; the
 * eager optimizers of eager/optim.h against the same references and
 * training a linear regression to its known solution, the state they
 * declare; gradient clipping by global norm against a hand computation;
 * and the ops through the text IR, .tgraph, -O3 and replay.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/kernel.h"
#include "eager/optim.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/replay.h"

/* ---- helpers ---- */

static float *randv(int64_t n, uint64_t *s, float lo, float hi)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = lo + (hi - lo) * (float)((*s >> 40) / 16777216.0);
    }
    return v;
}

static eager_tensor *vec(const float *v, int64_t n)
{
    return eager_from_data(GRAPH_F32, TG_SHAPE(n), v);
}

static eager_tensor *f32s(double v) { return eager_scalar(v); }

static eager_tensor *i64s(int64_t v) { return eager_from_data(GRAPH_I64, TG_NOINTS, &v); }

/* max over i of |got - want| / (rtol |want| + atol), <= 1 passes */
static double rel_err(const float *got, const double *want, int64_t n, double rtol, double atol)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = check_abs_diff(got[i], want[i]) / (rtol * fabs(want[i]) + atol);
        worst = e > worst || isnan(e) ? e : worst;
    }
    return worst;
}

/* The float a hyperparameter holds, as a double: what the kernels see. */
static double fl(double v) { return (double)(float)v; }

/* ---- sgd_step against PyTorch's formula ---- */

/* One step of torch.optim.SGD (dampening 0) in double. */
static void sgd_ref(double *p, const float *g, double *buf, int64_t n, double lr, double mom,
                    double wd, int nesterov)
{
    for (int64_t i = 0; i < n; i++) {
        double d = g[i] + (wd != 0 ? wd * p[i] : 0);
        buf[i] = mom * buf[i] + d;
        d = nesterov ? d + mom * buf[i] : buf[i];
        p[i] -= lr * d;
    }
}

static void test_sgd_op(int64_t n, int threads, int nesterov, double wd)
{
    eager_set_threads(threads);
    uint64_t s = 7 + (uint64_t)n + (uint64_t)nesterov;
    float *p0 = randv(n, &s, -1, 1);
    double *rp = malloc((size_t)n * sizeof *rp), *rb = calloc((size_t)n, sizeof *rb);
    for (int64_t i = 0; i < n; i++)
        rp[i] = p0[i];
    eager_pool_push();
    eager_tensor *p = vec(p0, n), *buf = eager_zeros(GRAPH_F32, TG_SHAPE(n));
    eager_tensor *mom = f32s(0.9), *wdt = f32s(wd);
    static const double lrs[] = {0.1, 0.05, 0.2, 0.01, 0.3};
    int ok = 1;
    for (int step = 0; step < 5 && ok; step++) {
        float *g = randv(n, &s, -2, 2);
        eager_tensor *out[2] = {NULL, NULL};
        ok = eager_sgd_step(p, vec(g, n), buf, f32s(lrs[step]), mom, wdt, nesterov, out, 2) == 2;
        CHECK_MSG(ok, "sgd_step runs: %s", eager_error());
        sgd_ref(rp, g, rb, n, fl(lrs[step]), fl(0.9), fl(wd), nesterov);
        if (ok) {
            p = out[0];
            buf = out[1];
            double ep = rel_err(eager_peek(p), rp, n, 1e-5, 1e-6);
            double eb = rel_err(eager_peek(buf), rb, n, 1e-5, 1e-6);
            CHECK_MSG(ep <= 1 && eb <= 1,
                      "sgd_step n=%lld threads=%d nesterov=%d wd=%g step %d: param err %.3g, "
                      "buf err %.3g (of the tolerance)",
                      (long long)n, threads, nesterov, wd, step, ep, eb);
        }
        free(g);
    }
    eager_pool_pop();
    free(p0);
    free(rp);
    free(rb);
    eager_set_threads(1);
}

/* ---- adamw_step against PyTorch's formula ---- */

/* One step of torch.optim.AdamW (amsgrad off) in double; t the step count
 * after its increment. */
static void adamw_ref(double *p, const float *g, double *m, double *v, int64_t n, int64_t t,
                      double lr, double b1, double b2, double eps, double wd)
{
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    for (int64_t i = 0; i < n; i++) {
        p[i] *= 1 - lr * wd;
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        p[i] -= lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + eps);
    }
}

static void test_adamw_op(int64_t n, int threads, double wd)
{
    eager_set_threads(threads);
    uint64_t s = 11 + (uint64_t)n;
    float *p0 = randv(n, &s, -1, 1);
    double *rp = malloc((size_t)n * sizeof *rp), *rm = calloc((size_t)n, sizeof *rm),
           *rv = calloc((size_t)n, sizeof *rv);
    for (int64_t i = 0; i < n; i++)
        rp[i] = p0[i];
    eager_pool_push();
    eager_tensor *p = vec(p0, n), *m = eager_zeros(GRAPH_F32, TG_SHAPE(n));
    eager_tensor *v = eager_zeros(GRAPH_F32, TG_SHAPE(n));
    eager_tensor *b1 = f32s(0.9), *b2 = f32s(0.999), *eps = f32s(1e-8), *wdt = f32s(wd);
    static const double lrs[] = {1e-2, 5e-3, 2e-2, 1e-3, 3e-2};
    int ok = 1;
    for (int step = 1; step <= 5 && ok; step++) {
        float *g = randv(n, &s, -2, 2);
        eager_tensor *out[3] = {NULL, NULL, NULL};
        ok = eager_adamw_step(p, vec(g, n), m, v, i64s(step), f32s(lrs[step - 1]), b1, b2, eps,
                              wdt, out, 3) == 3;
        CHECK_MSG(ok, "adamw_step runs: %s", eager_error());
        adamw_ref(rp, g, rm, rv, n, step, fl(lrs[step - 1]), fl(0.9), fl(0.999), fl(1e-8),
                  fl(wd));
        if (ok) {
            p = out[0];
            m = out[1];
            v = out[2];
            double ep = rel_err(eager_peek(p), rp, n, 1e-5, 1e-6);
            double em = rel_err(eager_peek(m), rm, n, 1e-5, 1e-7);
            double ev = rel_err(eager_peek(v), rv, n, 1e-5, 1e-12);
            CHECK_MSG(ep <= 1 && em <= 1 && ev <= 1,
                      "adamw_step n=%lld threads=%d wd=%g step %d: param err %.3g, m err %.3g, "
                      "v err %.3g (of the tolerance)",
                      (long long)n, threads, wd, step, ep, em, ev);
        }
        free(g);
    }
    eager_pool_pop();
    free(p0);
    free(rp);
    free(rm);
    free(rv);
    eager_set_threads(1);
}

/* ---- in place: each output buffer is its input's ---- */

/*
 * Runs op's kernel on nin inputs of which the first nbig are f32[n]
 * (copies of big[k]) and the rest the scalars given; out of place, then
 * with output k in input alias[k]'s buffer; the results must be the same
 * bits.
 */
static void in_place_case(graph_op op, const void *attrs, int64_t n, int threads,
                          float *const *big, int nbig, const void *const *small,
                          const graph_type *small_t, int nin, const int *alias, int nout)
{
    graph_type ty[10], oty[3];
    const void *in[10];
    float *copy[10] = {0}, *sep[3];
    for (int k = 0; k < nin; k++) {
        if (k < nbig) {
            ty[k] = (graph_type){GRAPH_F32, 1, {n}};
            copy[k] = malloc((size_t)n * sizeof(float));
            memcpy(copy[k], big[k], (size_t)n * sizeof(float));
            in[k] = big[k];
        } else {
            ty[k] = small_t[k - nbig];
            in[k] = small[k - nbig];
        }
    }
    for (int k = 0; k < nout; k++) {
        oty[k] = ty[0];
        sep[k] = malloc((size_t)n * sizeof(float));
    }
    char err[256] = "";
    eager_kargs a = {.in_type = ty, .in = in, .nin = nin, .attrs = attrs, .out_type = oty,
                     .out = (void *const *)sep, .nout = nout, .nthreads = threads, .err = err,
                     .errlen = sizeof err};
    CHECK_MSG(eager_kernels[op](&a) == TG_OK, "%s out of place: %s", graph_ops[op].name, err);
    /* in place: the inputs are the copies, the outputs written over them */
    for (int k = 0; k < nbig; k++)
        in[k] = copy[k];
    void *outp[3];
    for (int k = 0; k < nout; k++)
        outp[k] = copy[alias[k]];
    a.out = outp;
    CHECK_MSG(eager_kernels[op](&a) == TG_OK, "%s in place: %s", graph_ops[op].name, err);
    for (int k = 0; k < nout; k++)
        CHECK_MSG(!memcmp(copy[alias[k]], sep[k], (size_t)n * sizeof(float)),
                  "%s n=%lld threads=%d: output %d written over input %d equals the "
                  "out-of-place result bit for bit",
                  graph_ops[op].name, (long long)n, threads, k, alias[k]);
    for (int k = 0; k < nbig; k++)
        free(copy[k]);
    for (int k = 0; k < nout; k++)
        free(sep[k]);
}

static void test_in_place(int64_t n, int threads)
{
    uint64_t s = 3;
    float *p = randv(n, &s, -1, 1), *g = randv(n, &s, -1, 1), *b = randv(n, &s, -1, 1);
    float *v = randv(n, &s, 0, 1);
    float lr = 0.1f, mom = 0.9f, wd = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    int64_t step = 3;
    graph_type sc = {GRAPH_F32, 0, {0}}, st = {GRAPH_I64, 0, {0}};
    /* each output over its own input; sgd_step's over any input (here
     * param' over the gradient, buf' over param), adamw_step's m' over
     * the gradient */
    static const int sgd_alias[2][2] = {{0, 2}, {1, 0}}, adamw_alias[2][3] = {{0, 2, 3}, {0, 1, 3}};
    for (int nest = 0; nest <= 1; nest++)
        for (int k = 0; k < 2; k++) {
            graph_sgd_step_attrs at = {nest};
            float *big[3] = {p, g, b};
            const void *small[3] = {&lr, &mom, &wd};
            graph_type small_t[3] = {sc, sc, sc};
            in_place_case(GRAPH_OP_sgd_step, &at, n, threads, big, 3, small, small_t, 6,
                          sgd_alias[k], 2);
        }
    for (int k = 0; k < 2; k++) {
        float *big[4] = {p, g, b, v};
        const void *small[6] = {&step, &lr, &b1, &b2, &eps, &wd};
        graph_type small_t[6] = {st, sc, sc, sc, sc, sc};
        in_place_case(GRAPH_OP_adamw_step, NULL, n, threads, big, 4, small, small_t, 10,
                      adamw_alias[k], 3);
    }
    free(p);
    free(g);
    free(b);
    free(v);
}

/* ---- the ops' refusals ---- */

static void test_op_errors(void)
{
    eager_pool_push();
    eager_tensor *p = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3)), *g = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3)), *s = f32s(0.1), *t = i64s(1);
    eager_tensor *out[3];
    CHECK_FAILS_N(eager_sgd_step(p, eager_zeros(GRAPH_F32, TG_SHAPE(3, 2)), b, s, s, s, 0, out, 2), "grad (input 1) is f32 [3,2], param is f32 [2,3]: they must match");
    CHECK_FAILS_N(eager_sgd_step(p, g, eager_zeros(GRAPH_I64, TG_SHAPE(2, 3)), s, s, s, 0, out, 2), "momentum_buf (input 2) is i64 [2,3], param is f32 [2,3]");
    CHECK_FAILS_N(eager_sgd_step(p, g, b, eager_zeros(GRAPH_F32, TG_SHAPE(2)), s, s, 0, out, 2), "lr (input 3) must be one f32 element (a scalar tensor), got f32 [2]");
    CHECK_FAILS_N(eager_sgd_step(p, g, b, s, s, i64s(0), 0, out, 2), "weight_decay (input 5) must be one f32 element (a scalar tensor), got i64 []");
    CHECK_FAILS_N(eager_sgd_step(p, g, b, s, s, s, 2, out, 2), "nesterov must be 0 or 1, got 2");
    CHECK_FAILS_N(eager_sgd_step(p, g, b, s, s, s, 0, out, 1), "makes 2 outputs, room for 1");
    CHECK_FAILS_N(eager_sgd_step(eager_zeros(GRAPH_I64, TG_SHAPE(2, 3)), g, b, s, s, s, 0, out, 2), "sgd_step");
    CHECK_FAILS_N(eager_adamw_step(p, g, b, eager_zeros(GRAPH_F32, TG_SHAPE(6)), t, s, s, s, s, s, out, 3), "v (input 3) is f32 [6], param is f32 [2,3]");
    CHECK_FAILS_N(eager_adamw_step(p, g, b, b, s, s, s, s, s, s, out, 3), "step (input 4) must be one i64 element (a scalar tensor), got f32 []");
    CHECK_FAILS_N(eager_adamw_step(p, g, b, b, t, s, s, s, eager_zeros(GRAPH_F32, TG_SHAPE(1, 2)), s, out, 3), "eps (input 8) must be one f32 element (a scalar tensor), got f32 [1,2]");
    /* one element of any rank is a scalar */
    CHECK(eager_adamw_step(p, g, b, b, eager_ones(GRAPH_I64, TG_SHAPE(1)), s, s, s, s, eager_zeros(GRAPH_F32, TG_SHAPE(1, 1)), out, 3) == 3);
    /* a step count below 1 fails when the kernel runs */
    CHECK_FAILS_N(eager_adamw_step(p, g, b, b, i64s(0), s, s, s, s, s, out, 3), "step is 0: the step count must be >= 1");
    eager_pool_pop();
}

/* ---- the eager optimizers ---- */

/* Records the names eager_declare_state gives and counts eager_assign. */
typedef struct seen_state {
    char names[64][48];
    int n, writes;
} seen_state;

static tg_status on_state(void *ud, eager_tensor *t, const char *name, const eager_site *site)
{
    seen_state *s = ud;
    if (s->n < 64)
        snprintf(s->names[s->n++], sizeof s->names[0], "%s", name);
    return TG_OK;
}

static tg_status on_write(void *ud, eager_tensor *dst, eager_tensor *src, const eager_site *site)
{
    ((seen_state *)ud)->writes++;
    return TG_OK;
}

static int seen(const seen_state *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name))
            return 1;
    return 0;
}

/* w1 [2,3] and b1 [3]: grads set to the constants c1, c2 by a backward of
 * sum(w1 * c1) + sum(b1 * c2). */
static void set_grads(eager_tensor *w, eager_tensor *b, const float *c1, const float *c2)
{
    eager_pool_push();
    graph_ints all = TG_NOINTS;
    eager_tensor *l1 = eager_reduce_sum(eager_mul(w, eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), c1)), all, 0);
    eager_tensor *l2 = eager_reduce_sum(eager_mul(b, vec(c2, 3)), all, 0);
    CHECK_MSG(eager_backward(eager_add(l1, l2)) == TG_OK, "backward: %s", eager_error());
    eager_pool_pop();
}

/* The optimizer objects over several steps against the references, with
 * gradients set by hand, a learning rate changed between steps, and a
 * parameter without a gradient skipped. */
static void test_optim_steps(int adamw)
{
    uint64_t s = 21;
    float *w0 = randv(6, &s, -1, 1), *b0 = randv(3, &s, -1, 1), *z0 = randv(4, &s, -1, 1);
    eager_tensor *w = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), w0), *b = vec(b0, 3);
    eager_tensor *z = vec(z0, 4); /* never gets a gradient */
    eager_requires_grad(w, 1);
    eager_requires_grad(b, 1);
    eager_requires_grad(z, 1);
    eager_tensor *params[] = {w, z, b};
    eager_optim *o;
    if (adamw) {
        eager_adamw_opts ao = EAGER_ADAMW_OPTS_INIT;
        ao.lr = 0.02;
        ao.weight_decay = 0.1;
        ao.prefix = "opt";
        o = eager_adamw_new(params, 3, &ao);
    } else {
        eager_sgd_opts so = EAGER_SGD_OPTS_INIT;
        so.lr = 0.1;
        so.momentum = 0.8;
        so.weight_decay = 0.05;
        so.nesterov = 1;
        o = eager_sgd_new(params, 3, &so);
    }
    CHECK_MSG(o != NULL, "optimizer made: %s", eager_error());
    if (!o)
        return;
    double rw[6], rb[3], mw[6] = {0}, mb[3] = {0}, vw[6] = {0}, vb[3] = {0};
    for (int i = 0; i < 6; i++)
        rw[i] = w0[i];
    for (int i = 0; i < 3; i++)
        rb[i] = b0[i];
    static const double lrs[] = {0.1, 0.1, 0.03, 0.5};
    seen_state st = {0};
    eager_hooks h = {.on_state = on_state, .on_write = on_write, .ud = &st};
    for (int step = 0; step < 4; step++) {
        double lr = adamw ? lrs[step] / 5 : lrs[step];
        CHECK(eager_optim_set_lr(o, lr) == TG_OK);
        CHECK_NEAR(eager_optim_lr(o), fl(lr), 0);
        float *c1 = randv(6, &s, -1, 1), *c2 = randv(3, &s, -1, 1);
        set_grads(w, b, c1, c2);
        const eager_hooks *old = step == 0 ? eager_set_hooks(&h) : NULL;
        CHECK_MSG(eager_optim_step(o) == TG_OK, "step: %s", eager_error());
        if (step == 0)
            eager_set_hooks(old);
        CHECK(eager_optim_zero_grad(o) == TG_OK && !eager_grad(w) && !eager_grad(b));
        if (adamw) {
            adamw_ref(rw, c1, mw, vw, 6, step + 1, fl(lr), fl(0.9), fl(0.999), fl(1e-8), fl(0.1));
            adamw_ref(rb, c2, mb, vb, 3, step + 1, fl(lr), fl(0.9), fl(0.999), fl(1e-8), fl(0.1));
        } else {
            sgd_ref(rw, c1, mw, 6, fl(lr), fl(0.8), fl(0.05), 1);
            sgd_ref(rb, c2, mb, 3, fl(lr), fl(0.8), fl(0.05), 1);
        }
        CHECK_MSG(rel_err(eager_peek(w), rw, 6, 1e-5, 1e-6) <= 1 &&
                      rel_err(eager_peek(b), rb, 3, 1e-5, 1e-6) <= 1,
                  "%s object step %d equals the reference", adamw ? "adamw" : "sgd", step);
        CHECK_MSG(rel_err(eager_peek(eager_optim_tensor(o, adamw ? "m.0" : "momentum_buffer.0")),
                          mw, 6, 1e-5, 1e-7) <= 1,
                  "%s object step %d: parameter 0's first buffer", adamw ? "adamw" : "sgd", step);
        if (adamw)
            CHECK(rel_err(eager_peek(eager_optim_tensor(o, "v.2")), vb, 3, 1e-5, 1e-12) <= 1);
        free(c1);
        free(c2);
    }
    CHECK_MSG(!memcmp(eager_peek(z), z0, sizeof(float) * 4),
              "a parameter without a gradient is left as it is");
    if (adamw) {
        CHECK(*(const int64_t *)eager_peek(eager_optim_tensor(o, "step.0")) == 4);
        CHECK(*(const int64_t *)eager_peek(eager_optim_tensor(o, "step.1")) == 0);
        CHECK(*(const int64_t *)eager_peek(eager_optim_tensor(o, "step.2")) == 4);
        static const char *const names[] = {"opt.lr", "opt.beta1", "opt.beta2", "opt.eps",
                                            "opt.weight_decay", "opt.param.0", "opt.m.0",
                                            "opt.v.0", "opt.step.0", "opt.param.2", "opt.m.2",
                                            "opt.v.2", "opt.step.2"};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            CHECK_MSG(seen(&st, names[k]), "adamw declares %s", names[k]);
        CHECK_MSG(st.n == 13 && !seen(&st, "opt.param.1"),
                  "adamw declares 13 states, none of the parameter without a gradient (%d)",
                  st.n);
        /* per updated parameter: step, param, m, v */
        CHECK_MSG(st.writes == 8, "adamw writes 8 tensors in a step (%d)", st.writes);
    } else {
        static const char *const names[] = {"sgd.lr", "sgd.momentum", "sgd.weight_decay",
                                            "sgd.param.0", "sgd.momentum_buffer.0",
                                            "sgd.param.2", "sgd.momentum_buffer.2"};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            CHECK_MSG(seen(&st, names[k]), "sgd declares %s", names[k]);
        CHECK_MSG(st.n == 7, "sgd declares 7 states (%d)", st.n);
        CHECK_MSG(st.writes == 4, "sgd writes 4 tensors in a step (%d)", st.writes);
    }
    /* no gradient at all: a step does nothing */
    CHECK(eager_optim_step(o) == TG_OK);
    CHECK(rel_err(eager_peek(w), rw, 6, 1e-5, 1e-6) <= 1);
    eager_optim_free(o);
    eager_release(w);
    eager_release(b);
    eager_release(z);
    free(w0);
    free(b0);
    free(z0);
}

/* A linear regression y = x w^T + b trained to its exact solution. */
static void test_linreg(int adamw)
{
    enum { N = 32, K = 3 };
    static const float wt[K] = {2.0f, -3.0f, 0.5f}, bt = 1.0f;
    uint64_t s = 5;
    float *x = randv(N * K, &s, -1, 1), y[N];
    for (int i = 0; i < N; i++) {
        y[i] = bt;
        for (int k = 0; k < K; k++)
            y[i] += x[i * K + k] * wt[k];
    }
    eager_tensor *xt = eager_from_data(GRAPH_F32, TG_SHAPE(N, K), x);
    eager_tensor *yt = eager_from_data(GRAPH_F32, TG_SHAPE(N, 1), y);
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(1, K)), *b = eager_zeros(GRAPH_F32, TG_SHAPE(1));
    eager_requires_grad(w, 1);
    eager_requires_grad(b, 1);
    eager_tensor *params[] = {w, b};
    eager_optim *o;
    if (adamw) {
        eager_adamw_opts ao = EAGER_ADAMW_OPTS_INIT;
        ao.lr = 0.05;
        ao.weight_decay = 0;
        o = eager_adamw_new(params, 2, &ao);
    } else {
        eager_sgd_opts so = EAGER_SGD_OPTS_INIT;
        so.lr = 0.1;
        so.momentum = 0.9;
        so.nesterov = 1;
        o = eager_sgd_new(params, 2, &so);
    }
    CHECK(o != NULL);
    double loss = INFINITY;
    for (int step = 0; o && step < 400; step++) {
        eager_pool_push();
        if (adamw && step == 300) /* a schedule: a smaller rate to settle */
            eager_optim_set_lr(o, 0.005);
        eager_tensor *l = eager_mse_loss(eager_linear(xt, w, b), yt);
        loss = l ? *(const float *)eager_peek(l) : NAN;
        if (eager_backward(l) != TG_OK || eager_optim_step(o) != TG_OK ||
            eager_optim_zero_grad(o) != TG_OK) {
            CHECK_MSG(0, "training step %d: %s", step, eager_error());
            eager_pool_pop();
            break;
        }
        eager_pool_pop();
    }
    const float *wv = eager_peek(w), *bv = eager_peek(b);
    double tol = adamw ? 1e-3 : 1e-4;
    CHECK_MSG(fabs(wv[0] - wt[0]) < tol && fabs(wv[1] - wt[1]) < tol && fabs(wv[2] - wt[2]) < tol &&
                  fabs(bv[0] - bt) < tol && loss < tol * tol,
              "%s trains the regression: w = %g %g %g, b = %g, loss %g", adamw ? "adamw" : "sgd",
              wv[0], wv[1], wv[2], bv[0], loss);
    eager_optim_free(o);
    eager_release(xt);
    eager_release(yt);
    eager_release(w);
    eager_release(b);
    free(x);
}

static void test_optim_errors(void)
{
    eager_pool_push();
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(2)), *k = eager_zeros(GRAPH_I64, TG_SHAPE(2));
    eager_tensor *ps[] = {w, k}, *dup[] = {w, w}, *none[] = {w, EAGER_NONE};
    eager_sgd_opts so = EAGER_SGD_OPTS_INIT;
    eager_adamw_opts ao = EAGER_ADAMW_OPTS_INIT;
    CHECK_FAILS(eager_sgd_new(ps, 0, NULL), "sgd: no parameters (0 given)");
    CHECK_FAILS(eager_sgd_new(ps, 2, NULL), "sgd: param 1 is i64: an optimizer updates f32 tensors");
    CHECK_FAILS(eager_adamw_new(dup, 2, NULL), "adamw: param 1 is param 0 again");
    CHECK_FAILS(eager_adamw_new(none, 2, NULL), "adamw: param 1 is EAGER_NONE");
    so.lr = -1;
    CHECK_FAILS(eager_sgd_new(ps, 1, &so), "sgd: lr -1 is out of range (want a finite value >= 0)");
    so.lr = 0.1;
    so.nesterov = 1;
    CHECK_FAILS(eager_sgd_new(ps, 1, &so), "sgd: Nesterov momentum needs momentum > 0, got 0");
    so.nesterov = 3;
    CHECK_FAILS(eager_sgd_new(ps, 1, &so), "sgd: nesterov must be 0 or 1, got 3");
    ao.beta2 = 1.0;
    CHECK_FAILS(eager_adamw_new(ps, 1, &ao), "adamw: beta2 1 is out of range (want 0 <= beta < 1)");
    ao.beta2 = 0.999;
    ao.eps = NAN;
    CHECK_FAILS(eager_adamw_new(ps, 1, &ao), "adamw: eps nan is out of range");
    eager_optim *o = eager_adamw_new(ps, 1, NULL);
    CHECK(o != NULL && eager_optim_get(o, "weight_decay") == (float)1e-2);
    int line = __LINE__ + 1;
    CHECK(eager_optim_set(o, "momentum", 0.9) == TG_ERR_ARG);
    check_fail_at("eager_optim_set: adamw has no hyperparameter \"momentum\" (it has lr, beta1, "
                  "beta2, eps, weight_decay)", __FILE__, line, __func__);
    CHECK(eager_optim_set_lr(o, INFINITY) == TG_ERR_ARG);
    CHECK_ERROR("adamw: lr inf is out of range");
    CHECK_NEAR(eager_optim_lr(o), fl(1e-3), 0);
    CHECK(isnan(eager_optim_get(o, "nope")));
    CHECK_ERROR("eager_optim_get: adamw has no hyperparameter \"nope\"");
    CHECK_FAILS(eager_optim_tensor(o, "m.1"), "eager_optim_tensor: adamw has no tensor \"m.1\"");
    CHECK_FAILS(eager_optim_tensor(o, "momentum_buffer.0"), "has no tensor \"momentum_buffer.0\"");
    CHECK_FAILS(eager_optim_tensor(o, "m.-0"), "has no tensor \"m.-0\"");
    CHECK(eager_optim_tensor(o, "m.0") != NULL && eager_optim_tensor(o, "beta1") != NULL);
    eager_optim_free(o);
    CHECK(eager_optim_step(NULL) == TG_ERR_NULL);
    CHECK_ERROR("eager_optim_step: no optimizer (NULL)");
    eager_optim_free(NULL);
    /* a step outside no-grad: the optimizer opens its own scope */
    eager_requires_grad(w, 1);
    eager_tensor *ws[] = {w};
    o = eager_sgd_new(ws, 1, NULL);
    float one[2] = {1, 1};
    eager_backward(eager_reduce_sum(eager_mul(w, vec(one, 2)), TG_NOINTS, 0));
    CHECK_MSG(eager_optim_step(o) == TG_OK, "step with gradients recorded: %s", eager_error());
    CHECK_NEAR(((const float *)eager_peek(w))[1], -1e-3, 1e-6);
    /* an earlier error is not zero_grad's */
    eager_set_error(TG_ERR_ARG, NULL, "an earlier error");
    CHECK(eager_optim_zero_grad(o) == TG_OK && !eager_grad(w));
    CHECK_ERROR("an earlier error");
    eager_optim_free(o);
    eager_pool_pop();
}

/* ---- gradient clipping ---- */

static void test_clip(void)
{
    static const float c1[6] = {3, -4, 1, 0.5f, 2, -2}, c2[3] = {1, -1, 6};
    for (int big = 0; big <= 1; big++) {
        eager_pool_push();
        eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3)), *b = eager_zeros(GRAPH_F32, TG_SHAPE(3));
        eager_tensor *z = eager_zeros(GRAPH_F32, TG_SHAPE(2)); /* no gradient */
        eager_requires_grad(w, 1);
        eager_requires_grad(b, 1);
        set_grads(w, b, c1, c2);
        double ss = 0;
        for (int i = 0; i < 6; i++)
            ss += (double)c1[i] * c1[i];
        for (int i = 0; i < 3; i++)
            ss += (double)c2[i] * c2[i];
        double total = sqrt(ss), maxn = big ? 100.0 : 2.5;
        double coef = fmin(maxn / (total + 1e-6), 1.0);
        eager_tensor *ps[] = {w, z, b}, *tn = NULL;
        CHECK_MSG(eager_clip_grad_norm(ps, 3, f32s(maxn), &tn) == TG_OK, "clip: %s", eager_error());
        CHECK_NEAR(tn ? *(const float *)eager_peek(tn) : NAN, total, 1e-6);
        CHECK(tn && eager_ndim(tn) == 0);
        double want1[6], want2[3];
        for (int i = 0; i < 6; i++)
            want1[i] = c1[i] * coef;
        for (int i = 0; i < 3; i++)
            want2[i] = c2[i] * coef;
        CHECK_MSG(rel_err(eager_peek(eager_grad(w)), want1, 6, 1e-6, 1e-7) <= 1 &&
                      rel_err(eager_peek(eager_grad(b)), want2, 3, 1e-6, 1e-7) <= 1,
                  "clip to %g: the gradients scaled by %g", maxn, coef);
        if (big)
            CHECK_MSG(!memcmp(eager_peek(eager_grad(w)), c1, sizeof c1),
                      "under max_norm the gradients keep their bits (coef 1)");
        CHECK(eager_grad(z) == NULL);
        /* no gradients at all: total 0, nothing written; total_norm optional */
        eager_tensor *zs[] = {z};
        CHECK(eager_clip_grad_norm(zs, 1, f32s(1.0), &tn) == TG_OK && tn &&
              *(const float *)eager_peek(tn) == 0.0f);
        CHECK(eager_clip_grad_norm(ps, 3, f32s(1.0), NULL) == TG_OK);
        eager_pool_pop();
    }
    /* outside a pool the total is the caller's to release */
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(2)), *mx = f32s(1.0), *tn = NULL;
    eager_tensor *ps[] = {w};
    CHECK(eager_clip_grad_norm(ps, 1, mx, &tn) == TG_OK && tn);
    eager_release(tn);
    eager_pool_push();
    CHECK(eager_clip_grad_norm(ps, 1, eager_zeros(GRAPH_I64, TG_NOINTS), &tn) == TG_ERR_SHAPE);
    CHECK_ERROR("eager_clip_grad_norm: max_norm is i64 []; want one f32 element");
    CHECK(eager_clip_grad_norm(ps, 1, eager_zeros(GRAPH_F32, TG_SHAPE(2)), &tn) == TG_ERR_SHAPE && !tn);
    CHECK_ERROR("max_norm is f32 [2]");
    CHECK(eager_clip_grad_norm(ps, 1, NULL, &tn) == TG_ERR_NULL);
    CHECK_ERROR("eager_clip_grad_norm: max_norm is NULL");
    CHECK(eager_clip_grad_norm(NULL, 2, mx, &tn) == TG_ERR_ARG);
    CHECK_ERROR("eager_clip_grad_norm: bad parameter list (2, NULL)");
    eager_pool_pop();
    eager_release(w);
    eager_release(mx);
}

/* ---- the ops as graph nodes: text IR, .tgraph, replay ---- */

static const char *const ir =
    "graph opt(%p: f32[5,7], %g: f32[5,7], %b: f32[5,7], %m: f32[5,7], %v: f32[5,7], "
    "%t: i64[], %lr: f32[], %mo: f32[], %wd: f32[], %beta1: f32[], %beta2: f32[], %e: f32[]) "
    "-> (p1: f32[5,7], buf1: f32[5,7], p2: f32[5,7], m2: f32[5,7], v2: f32[5,7]) {\n"
    "  %1: f32[5,7], %2: f32[5,7] = sgd_step(%p, %g, %b, %lr, %mo, %wd) {nesterov=1}\n"
    "  %3: f32[5,7], %4: f32[5,7], %5: f32[5,7] = adamw_step(%p, %g, %m, %v, %t, %lr, %beta1, "
    "%beta2, %e, %wd)\n"
    "  return p1 = %1\n  return buf1 = %2\n  return p2 = %3\n  return m2 = %4\n"
    "  return v2 = %5\n"
    "}\n";

static void test_graph(void)
{
    char err[512] = "";
    graph *g = graph_parse(ir, strlen(ir), err, sizeof err);
    CHECK_MSG(g != NULL, "parse: %s", err);
    if (!g)
        return;
    char *t1 = graph_print_str(g, NULL, NULL);
    graph *g2 = t1 ? graph_parse(t1, strlen(t1), err, sizeof err) : NULL;
    char *t2 = g2 ? graph_print_str(g2, NULL, NULL) : NULL;
    CHECK_MSG(t1 && t2 && !strcmp(t1, t2) && strstr(t1, "sgd_step") && strstr(t1, "nesterov=1"),
              "text IR round trip:\n%s", t1 ? t1 : err);
    void *buf = NULL;
    size_t len = 0;
    graph *g3 = NULL;
    if (format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        g3 = format_load_mem(buf, len, "opt.tgraph", err, sizeof err);
    char *t3 = g3 ? graph_print_str(g3, NULL, NULL) : NULL;
    CHECK_MSG(t3 && t1 && !strcmp(t1, t3), ".tgraph round trip: %s", err);
    free(buf);
    free(t1);
    free(t2);
    free(t3);
    graph_free(g2);
    graph_free(g3);

    /* replay on the CPU equals the eager ops */
    uint64_t s = 9;
    float *d[5];
    for (int k = 0; k < 5; k++)
        d[k] = randv(35, &s, k == 4 ? 0 : -1, 1);
    int64_t step = 2;
    float hp[6] = {0.1f, 0.9f, 0.01f, 0.9f, 0.999f, 1e-8f};
    graph_type big = {GRAPH_F32, 2, {5, 7}}, sc = {GRAPH_F32, 0, {0}};
    static const char *const names[] = {"p", "g", "b", "m", "v", "t", "lr", "mo", "wd", "beta1",
                                        "beta2", "e"};
    replay_tensor in[12];
    for (int k = 0; k < 12; k++) {
        in[k] = (replay_tensor){.name = names[k], .type = k < 5 ? big : sc};
        in[k].input = k < 5 ? (const void *)d[k] : k == 5 ? (const void *)&step : &hp[k - 6];
    }
    in[5].type.dtype = GRAPH_I64;
    float got[5][35];
    replay_tensor out[5];
    static const char *const onames[] = {"p1", "buf1", "p2", "m2", "v2"};
    for (int k = 0; k < 5; k++)
        out[k] = (replay_tensor){.name = onames[k], .data = got[k], .size = sizeof got[k]};
    /* an adamw_step whose step count is not a constant may fail: kept */
    int32_t na = -1;
    for (int32_t i = 0; i < graph_node_count(g); i++)
        if (graph_node_op(g, i) == GRAPH_OP_adamw_step)
            na = i;
    CHECK(na >= 0 && opt_may_fail(g, na) && !opt_may_fail(g, 0));
    /* -O3 keeps both ops, and replay of the optimized graph runs them */
    opt_options oo = OPT_OPTIONS_INIT;
    oo.level = 3;
    CHECK_MSG(opt_optimize(g, &oo, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    int nops = 0;
    for (int32_t i = 0; i < graph_node_count(g); i++)
        nops += graph_node_op(g, i) == GRAPH_OP_adamw_step || graph_node_op(g, i) == GRAPH_OP_sgd_step;
    CHECK(nops == 2);
    replay_plan *plan = replay_compile(g, NULL, err, sizeof err);
    replay_session *ss = plan ? replay_session_new(plan, NULL, 0) : NULL;
    CHECK_MSG(ss && replay_run(ss, in, 12, out, 5) == TG_OK, "replay: %s",
              ss ? replay_session_error(ss) : err);
    eager_pool_push();
    eager_tensor *e[5];
    for (int k = 0; k < 5; k++)
        e[k] = eager_from_data(GRAPH_F32, TG_SHAPE(5, 7), d[k]);
    eager_tensor *o1[2], *o2[3];
    int ok = eager_sgd_step(e[0], e[1], e[2], f32s(hp[0]), f32s(hp[1]), f32s(hp[2]), 1, o1, 2) == 2 &&
             eager_adamw_step(e[0], e[1], e[3], e[4], i64s(step), f32s(hp[0]), f32s(hp[3]),
                              f32s(hp[4]), f32s(hp[5]), f32s(hp[2]), o2, 3) == 3;
    CHECK(ok);
    for (int k = 0; ok && k < 5; k++)
        CHECK_MSG(!memcmp(got[k], eager_peek(k < 2 ? o1[k] : o2[k - 2]), sizeof got[k]),
                  "replay output %s equals eager's bit for bit", onames[k]);
    eager_pool_pop();
    /* a step count of 0 fails the run, naming the node */
    step = 0;
    CHECK(ss && replay_run(ss, in, 12, out, 5) != TG_OK &&
          strstr(replay_session_error(ss), "step is 0: the step count must be >= 1"));
    replay_session_free(ss);
    replay_plan_free(plan);
    for (int k = 0; k < 5; k++)
        free(d[k]);
    graph_free(g);
}

int main(void)
{
    for (int nest = 0; nest <= 1; nest++) {
        test_sgd_op(37, 1, nest, 0.0);
        test_sgd_op(37, 1, nest, 0.01);
        test_sgd_op(70001, 4, nest, 0.01);
    }
    test_adamw_op(37, 1, 0.0);
    test_adamw_op(37, 1, 0.01);
    test_adamw_op(70001, 4, 0.1);
    test_in_place(37, 1);
    test_in_place(70001, 4);
    test_op_errors();
    test_optim_steps(0);
    test_optim_steps(1);
    test_linreg(0);
    test_linreg(1);
    test_optim_errors();
    test_clip();
    test_graph();
    CHECK_MSG(eager_live_tensors() == 0, "no tensor leaked (%ld live)", eager_live_tensors());
    return check_done();
}
