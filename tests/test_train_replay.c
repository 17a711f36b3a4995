/*
 * test_train_replay.c - replay equals eager training (issue 32, Tests):
 * a small CNN (conv, training-mode batch norm with running statistics,
 * ReLU, max-pool, dropout, linear, cross-entropy with label smoothing)
 * trained 5 steps eagerly, its 6th step traced whole (forward, loss,
 * backward, optimizer) and replayed for the remaining steps, against the
 * same 100 steps run eagerly from the same start: bit for bit at -O0,
 * within 1e-5 relative (losses, parameters, running statistics) at -O2,
 * 1e-4 at -O3 (blocked convolutions: another summation order);
 * for SGD with Nesterov momentum and for AdamW under a learning rate that
 * changes every step (the rate is state: one graph serves the schedule).
 * Half way, the session's state is saved, and a new process (fork) loads
 * the .tgraph and the checkpoint and finishes: the same bytes.  Gradient
 * accumulation: an MLP step over 2 micro-batches, traced and replayed,
 * equals eager bit for bit, and equals one step over the double batch
 * within 1e-6.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/optim.h"
#include "formats/tgraph.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"

enum { B = 8, IMG = 8, C1 = 4, K = 10, STEPS = 100, CAPTURE = 5, HALF = 52 };

/* Batch k: images and labels, the same for every run. */
static eager_tensor *images(int k)
{
    return check_rand_tensor(TG_SHAPE(B, 1, IMG, IMG), 1000 + (uint64_t)k, -1, 1);
}
static eager_tensor *labels(int k)
{
    int64_t l[B];
    for (int i = 0; i < B; i++)
        l[i] = (int64_t)((k * 7 + i * 3) % K);
    return eager_from_data(GRAPH_I64, TG_SHAPE(B), l);
}

enum { NPARAM = 5, NSTAT = 3 };
typedef struct cnn {
    eager_tensor *p[NPARAM]; /* conv w (no bias: batch norm follows), bn gamma, bn beta, fc w, fc b */
    eager_tensor *st[NSTAT]; /* running mean, running var, batches tracked */
    eager_optim *opt;
} cnn;

static const char *pname[NPARAM] = {"conv.weight", "bn.weight", "bn.bias", "fc.weight",
                                    "fc.bias"};
static const char *sname[NSTAT] = {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"};

static void make_cnn(cnn *m, int adamw)
{
    m->p[0] = check_rand_tensor(TG_SHAPE(C1, 1, 3, 3), 1, -0.5f, 0.5f);
    m->p[1] = check_rand_tensor(TG_SHAPE(C1), 3, 0.8f, 1.2f);
    m->p[2] = check_rand_tensor(TG_SHAPE(C1), 4, -0.1f, 0.1f);
    m->p[3] = check_rand_tensor(TG_SHAPE(K, C1 * (IMG / 2) * (IMG / 2)), 5, -0.2f, 0.2f);
    m->p[4] = check_rand_tensor(TG_SHAPE(K), 6, -0.1f, 0.1f);
    m->st[0] = eager_zeros(GRAPH_F32, TG_SHAPE(C1));
    m->st[1] = eager_full(GRAPH_F32, TG_SHAPE(C1), 1.0);
    m->st[2] = eager_zeros(GRAPH_I64, TG_NOINTS);
    for (int i = 0; i < NPARAM; i++)
        eager_requires_grad(m->p[i], 1);
    if (adamw) {
        eager_adamw_opts o = EAGER_ADAMW_OPTS_INIT;
        o.lr = 0.01;
        o.weight_decay = 0.01;
        m->opt = eager_adamw_new(m->p, NPARAM, &o);
    } else {
        eager_sgd_opts o = EAGER_SGD_OPTS_INIT;
        o.lr = 0.05;
        o.momentum = 0.9;
        o.nesterov = 1;
        o.weight_decay = 1e-4;
        m->opt = eager_sgd_new(m->p, NPARAM, &o);
    }
    CHECK_MSG(m->opt != NULL, "%s", eager_error());
}

static void free_cnn(cnn *m)
{
    eager_optim_free(m->opt);
    for (int i = 0; i < NPARAM; i++) {
        eager_zero_grad(m->p[i]);
        eager_release(m->p[i]);
    }
    for (int i = 0; i < NSTAT; i++)
        eager_release(m->st[i]);
}

/* The learning rate of step k under the schedule (AdamW runs). */
static double lr_at(int k) { return 0.01 * (1.0 - k / 150.0); }

/* One eager step; the loss tensor (pool-owned) through *loss. */
static void cnn_step(cnn *m, eager_tensor *x, eager_tensor *y, eager_tensor **loss)
{
    /* no conv bias: batch norm cancels it, so its gradient is rounding
     * noise, which AdamW would turn into full-size steps of any sign */
    eager_tensor *h = eager_conv2d(x, m->p[0], EAGER_NONE, TG_NOINTS, TG_INTS(1, 1, 1, 1), TG_NOINTS, 1);
    h = eager_batch_norm_train(h, m->p[1], m->p[2], m->st[0], m->st[1], m->st[2], 1e-5, 0.1);
    h = eager_max_pool2d(eager_relu(h), TG_INTS(2, 2), TG_INTS(2, 2), TG_NOINTS);
    h = eager_dropout(eager_flatten(h, 1, -1), 0.25);
    eager_tensor *o = eager_linear(h, m->p[3], m->p[4]);
    *loss = eager_cross_entropy(o, y, 0.1);
    CHECK(eager_backward(*loss) == TG_OK);
    CHECK(eager_optim_step(m->opt) == TG_OK);
    CHECK(eager_optim_zero_grad(m->opt) == TG_OK);
}

static float loss_of(eager_tensor *l) { return l ? *(const float *)eager_peek(l) : NAN; }

/* Everything the step changes, as floats (the count as a float too). */
static int snapshot(cnn *m, float *buf, int cap)
{
    int n = 0;
    for (int i = 0; i < NPARAM + 2; i++) {
        eager_tensor *t = i < NPARAM ? m->p[i] : m->st[i - NPARAM];
        const float *d = eager_peek(t);
        for (int64_t j = 0; j < eager_numel(t) && n < cap; j++)
            buf[n++] = d[j];
    }
    return n;
}

static int snapshot_session(const replay_session *s, const replay_plan *p, float *buf, int cap)
{
    int n = 0;
    for (int i = 0; i < NPARAM + 2; i++) {
        int32_t k = replay_state_find(p, i < NPARAM ? pname[i] : sname[i - NPARAM]);
        CHECK(k >= 0);
        if (k < 0)
            continue;
        const float *d = replay_state_data(s, k);
        for (int64_t j = 0; j < graph_type_numel(replay_state_type(p, k)) && n < cap; j++)
            buf[n++] = d[j];
    }
    return n;
}

typedef struct run {
    float loss[STEPS];
    float state[2048];
    int nstate;
} run;

/* The reference: STEPS eager steps from the start. */
static void run_eager(int adamw, run *r)
{
    cnn m;
    make_cnn(&m, adamw);
    CHECK(eager_manual_seed(42) == TG_OK);
    for (int k = 0; k < STEPS; k++) {
        eager_pool_push();
        if (adamw)
            eager_optim_set_lr(m.opt, lr_at(k));
        eager_tensor *x = images(k), *y = labels(k), *l = NULL;
        cnn_step(&m, x, y, &l);
        r->loss[k] = loss_of(l);
        eager_pool_pop(); /* x, y too: made in the pool */
    }
    r->nstate = snapshot(&m, r->state, 2048);
    free_cnn(&m);
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK);
}

static void run_replay_steps(replay_session *s, int adamw, int from, int to, run *r)
{
    for (int k = from; k < to; k++) {
        eager_tensor *x = images(k), *y = labels(k);
        if (adamw) {
            float lr = (float)lr_at(k);
            CHECK(replay_state_set(s, "adamw.lr", &lr, sizeof lr) == TG_OK);
        }
        replay_tensor in[2] = {{.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                               {.name = "y", .type = *eager_type(y), .input = eager_peek(y)}};
        float l = NAN;
        replay_tensor out = {.name = "loss", .type = {GRAPH_F32, 0, {0}}, .data = &l,
                             .size = sizeof l};
        CHECK_MSG(replay_run(s, in, 2, &out, 1) == TG_OK, "%s", replay_session_error(s));
        if (r)
            r->loss[k] = l;
        eager_release(x);
        eager_release(y);
    }
}

/* CAPTURE eager steps, the next traced; returns the graph, fills r's
 * losses of those steps. */
static graph *capture(int adamw, run *r)
{
    cnn m;
    make_cnn(&m, adamw);
    CHECK(eager_manual_seed(42) == TG_OK);
    graph *g = NULL;
    for (int k = 0; k <= CAPTURE; k++) {
        eager_pool_push();
        if (adamw)
            eager_optim_set_lr(m.opt, lr_at(k));
        eager_tensor *x = images(k), *y = labels(k), *l = NULL;
        if (k == CAPTURE) {
            CHECK(trace_begin(NULL) == TG_OK);
            trace_input(x, "x");
            trace_input(y, "y");
            for (int i = 0; i < NPARAM; i++)
                CHECK(trace_state(m.p[i], pname[i]) == TG_OK);
            for (int i = 0; i < NSTAT; i++)
                CHECK(trace_state(m.st[i], sname[i]) == TG_OK);
        }
        cnn_step(&m, x, y, &l);
        r->loss[k] = loss_of(l);
        if (k == CAPTURE) {
            CHECK(trace_output(l, "loss") == TG_OK);
            g = trace_freeze();
            CHECK_MSG(g != NULL, "%s", eager_error());
        }
        eager_pool_pop();
    }
    free_cnn(&m);
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK);
    return g;
}

static double compare(const run *a, const run *b, const char *what, double tol)
{
    double worst = 0;
    for (int k = 0; k < STEPS; k++)
        worst = fmax(worst, check_abs_diff(a->loss[k], b->loss[k]) / fmax(fabs(b->loss[k]), 1e-6));
    CHECK_MSG(a->nstate == b->nstate, "%s: %d state floats vs %d", what, a->nstate, b->nstate);
    int wi = -1;
    for (int i = 0; i < a->nstate && i < b->nstate; i++) {
        double d = check_abs_diff(a->state[i], b->state[i]) / fmax(fabs(b->state[i]), 1e-3);
        if (d > worst) {
            worst = d;
            wi = i;
        }
    }
    if (getenv("TG_DEBUG_WORST"))
        fprintf(stderr, "%s: worst state float %d: %g vs %g\n", what, wi, wi >= 0 ? a->state[wi] : 0,
                wi >= 0 ? b->state[wi] : 0);
    CHECK_MSG(worst <= tol, "%s: largest relative difference %.3g over %d steps (tolerance %.3g)",
              what, worst, STEPS, tol);
    printf("%s: largest relative difference %.3g over %d steps\n", what, worst, STEPS);
    return worst;
}

static void test_cnn(int adamw)
{
    const char *oname = adamw ? "AdamW, lr schedule" : "SGD Nesterov";
    run ref, rep;
    memset(&rep, 0, sizeof rep);
    run_eager(adamw, &ref);
    graph *g = capture(adamw, &rep);
    if (!g)
        return;
    /* the roles: 6 params, 3 BN statistics, the generator, the optimizer's */
    int nstate = graph_num_states(g);
    CHECK_MSG(nstate == NPARAM + NSTAT + 1 + (adamw ? 5 + 3 * NPARAM : 3 + NPARAM),
              "%s: %d states", oname, nstate);
    char err[1024];
    for (int level = 0; level <= 3; level += (level == 2 ? 1 : 2)) {
        graph *h = graph_clone(g);
        if (level) {
            opt_options o = OPT_OPTIONS_INIT;
            o.level = level;
            opt_report orep;
            CHECK_MSG(opt_optimize(h, &o, &orep, err, sizeof err) == TG_OK, "%s", err);
        }
        replay_plan *p = replay_compile(h, NULL, err, sizeof err);
        CHECK_MSG(p != NULL, "%s", err);
        replay_session *s = p ? replay_session_create(p, NULL, 0, err, sizeof err) : NULL;
        if (!s) {
            replay_plan_free(p);
            graph_free(h);
            continue;
        }
        run_replay_steps(s, adamw, CAPTURE + 1, STEPS, &rep);
        rep.nstate = snapshot_session(s, p, rep.state, 2048);
        char what[128];
        snprintf(what, sizeof what, "%s, replay -O%d vs eager", oname, level);
        /* -O3 lays the convolutions out blocked: another kernel, another
         * summation order, drifting over 95 steps (1.5e-5 here) */
        compare(&rep, &ref, what, level == 0 ? 0 : level == 2 ? 1e-5 : 1e-4);
        replay_session_free(s);
        replay_plan_free(p);
        graph_free(h);
    }

    /* stop half way, resume in a new process from the files */
    char gpath[64], cpath[64], rpath[64];
    snprintf(gpath, sizeof gpath, "/tmp/tg_trr_%d.tgraph", (int)getpid());
    snprintf(cpath, sizeof cpath, "/tmp/tg_trr_%d.tgstate", (int)getpid());
    snprintf(rpath, sizeof rpath, "/tmp/tg_trr_%d.out", (int)getpid());
    CHECK_MSG(format_save(g, gpath, NULL, err, sizeof err) == TG_OK, "%s", err);
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = p ? replay_session_create(p, NULL, 0, err, sizeof err) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        run_replay_steps(s, adamw, CAPTURE + 1, HALF, NULL);
        CHECK_MSG(replay_state_save(s, cpath, err, sizeof err) == TG_OK, "%s", err);
        run_replay_steps(s, adamw, HALF, STEPS, NULL);
        run here;
        here.nstate = snapshot_session(s, p, here.state, 2048);
        pid_t pid = fork();
        if (pid == 0) {
            char e2[1024];
            graph *h = format_load(gpath, e2, sizeof e2);
            replay_plan *q = h ? replay_compile(h, NULL, e2, sizeof e2) : NULL;
            replay_session *r = q ? replay_session_create(q, NULL, 0, e2, sizeof e2) : NULL;
            if (!r || replay_state_load(r, cpath, e2, sizeof e2) != TG_OK) {
                fprintf(stderr, "child: %s\n", e2);
                _exit(2);
            }
            run there;
            run_replay_steps(r, adamw, HALF, STEPS, NULL);
            there.nstate = snapshot_session(r, q, there.state, 2048);
            FILE *f = fopen(rpath, "wb");
            if (!f || fwrite(there.state, sizeof(float), (size_t)there.nstate, f) !=
                          (size_t)there.nstate)
                _exit(3);
            fclose(f);
            _exit(0);
        }
        int status = -1;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the resuming process "
                  "failed (%d)", oname, status);
        static float there[2048];
        size_t n = 0;
        FILE *f = fopen(rpath, "rb");
        if (f) {
            n = fread(there, sizeof(float), 2048, f);
            fclose(f);
        }
        CHECK_MSG(n == (size_t)here.nstate && n > 0 && !memcmp(there, here.state, n * sizeof(float)),
                  "%s: resumed in a new process at step %d: %zu floats, %s", oname, HALF, n,
                  n == (size_t)here.nstate && !memcmp(there, here.state, n * sizeof(float))
                      ? "equal" : "different");
        printf("%s: saved at step %d, resumed in a new process: %zu state floats equal\n", oname,
               HALF, n);
    }
    replay_session_free(s);
    replay_plan_free(p);
    unlink(gpath);
    unlink(cpath);
    unlink(rpath);
    graph_free(g);
}

/* ---- gradient accumulation: an MLP over 2 micro-batches ---- */

enum { MB = 6, D = 7, H = 9, MK = 4 };

static eager_tensor *mx(int k, int part)
{
    return check_rand_tensor(TG_SHAPE(MB, D), 5000 + 2 * (uint64_t)k + (uint64_t)part, -1, 1);
}
static eager_tensor *my(int k, int part)
{
    int64_t l[MB];
    for (int i = 0; i < MB; i++)
        l[i] = (int64_t)((k + 5 * i + part) % MK);
    return eager_from_data(GRAPH_I64, TG_SHAPE(MB), l);
}

typedef struct mlp {
    eager_tensor *p[4];
    eager_optim *opt;
} mlp;

static void make_mlp(mlp *m)
{
    m->p[0] = check_rand_tensor(TG_SHAPE(H, D), 71, -0.5f, 0.5f);
    m->p[1] = check_rand_tensor(TG_SHAPE(H), 72, -0.1f, 0.1f);
    m->p[2] = check_rand_tensor(TG_SHAPE(MK, H), 73, -0.5f, 0.5f);
    m->p[3] = check_rand_tensor(TG_SHAPE(MK), 74, -0.1f, 0.1f);
    for (int i = 0; i < 4; i++)
        eager_requires_grad(m->p[i], 1);
    eager_sgd_opts o = EAGER_SGD_OPTS_INIT;
    o.lr = 0.1;
    o.momentum = 0.9;
    m->opt = eager_sgd_new(m->p, 4, &o);
}

static void free_mlp(mlp *m)
{
    eager_optim_free(m->opt);
    for (int i = 0; i < 4; i++) {
        eager_zero_grad(m->p[i]);
        eager_release(m->p[i]);
    }
}

static eager_tensor *mlp_loss(mlp *m, eager_tensor *x, eager_tensor *y)
{
    eager_tensor *h = eager_relu(eager_linear(x, m->p[0], m->p[1]));
    return eager_cross_entropy(eager_linear(h, m->p[2], m->p[3]), y, 0.0);
}

/* Two micro-batches, each loss halved, one update: the mean over both. */
static eager_tensor *accum_step(mlp *m, eager_tensor *const *xs, eager_tensor *const *ys)
{
    eager_tensor *half = eager_scalar(0.5), *total = NULL;
    for (int part = 0; part < 2; part++) {
        eager_tensor *l = eager_mul(mlp_loss(m, xs[part], ys[part]), half);
        CHECK(eager_backward(l) == TG_OK);
        total = total ? eager_add(total, l) : l;
    }
    CHECK(eager_optim_step(m->opt) == TG_OK);
    CHECK(eager_optim_zero_grad(m->opt) == TG_OK);
    return total; /* half: the caller's pool frees it */
}

static void test_accumulation(void)
{
    /* eager: 2 micro-batches of 6 against one batch of 12 */
    mlp a, b;
    make_mlp(&a);
    make_mlp(&b);
    double worst = 0;
    for (int k = 0; k < 10; k++) {
        eager_pool_push();
        eager_tensor *xs[2] = {mx(k, 0), mx(k, 1)}, *ys[2] = {my(k, 0), my(k, 1)};
        accum_step(&a, xs, ys);
        eager_tensor *cat_in[2] = {xs[0], xs[1]}, *cat_lab[2] = {ys[0], ys[1]};
        eager_tensor *x2 = eager_concat(2, cat_in, 0), *y2 = eager_concat(2, cat_lab, 0);
        CHECK(eager_backward(mlp_loss(&b, x2, y2)) == TG_OK);
        CHECK(eager_optim_step(b.opt) == TG_OK);
        CHECK(eager_optim_zero_grad(b.opt) == TG_OK);
        eager_pool_pop();
    }
    /* per tensor, max |a - b| / max |b|: the sums run in another order over
     * 2 x 6 rows than over 12 */
    for (int i = 0; i < 4; i++) {
        const float *pa = eager_peek(a.p[i]), *pb = eager_peek(b.p[i]);
        double d = 0, m = 0;
        for (int64_t j = 0; j < eager_numel(a.p[i]); j++) {
            d = fmax(d, fabs(pa[j] - pb[j]));
            m = fmax(m, fabs(pb[j]));
        }
        worst = fmax(worst, d / fmax(m, 1e-30));
    }
    CHECK_MSG(worst <= 1e-6, "2 micro-batches vs one double batch, 10 steps: %.3g", worst);
    printf("accumulation: 2 micro-batches vs one double batch, 10 SGD steps: largest relative "
           "difference %.3g\n", worst);
    free_mlp(&a);
    free_mlp(&b);

    /* the accumulating step traced at step 3, replayed, against eager */
    mlp r, e;
    make_mlp(&r);
    make_mlp(&e);
    graph *g = NULL;
    for (int k = 0; k <= 3; k++) {
        eager_pool_push();
        eager_tensor *xs[2] = {mx(k, 0), mx(k, 1)}, *ys[2] = {my(k, 0), my(k, 1)};
        if (k == 3) {
            CHECK(trace_begin(NULL) == TG_OK);
            trace_input(xs[0], "x0");
            trace_input(xs[1], "x1");
            trace_input(ys[0], "y0");
            trace_input(ys[1], "y1");
        }
        eager_tensor *l = accum_step(&r, xs, ys);
        if (k == 3) {
            trace_output(l, "loss");
            g = trace_freeze();
            CHECK_MSG(g != NULL, "%s", eager_error());
        }
        accum_step(&e, xs, ys);
        eager_pool_pop();
    }
    char err[1024];
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_create(p, NULL, 0, err, sizeof err) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    double gap = 0;
    for (int k = 4; s && k < 30; k++) {
        eager_pool_push();
        eager_tensor *xs[2] = {mx(k, 0), mx(k, 1)}, *ys[2] = {my(k, 0), my(k, 1)};
        replay_tensor in[4] = {
            {.name = "x0", .type = *eager_type(xs[0]), .input = eager_peek(xs[0])},
            {.name = "x1", .type = *eager_type(xs[1]), .input = eager_peek(xs[1])},
            {.name = "y0", .type = *eager_type(ys[0]), .input = eager_peek(ys[0])},
            {.name = "y1", .type = *eager_type(ys[1]), .input = eager_peek(ys[1])}};
        float rl = NAN;
        replay_tensor out = {.name = "loss", .type = {GRAPH_F32, 0, {0}}, .data = &rl,
                             .size = sizeof rl};
        CHECK_MSG(replay_run(s, in, 4, &out, 1) == TG_OK, "%s", replay_session_error(s));
        float el = loss_of(accum_step(&e, xs, ys));
        gap = fmax(gap, check_abs_diff(rl, el));
        eager_pool_pop();
    }
    for (int i = 0; s && i < 4; i++) {
        float buf[128];
        size_t nb = (size_t)eager_numel(e.p[i]) * sizeof(float);
        char name[32];
        snprintf(name, sizeof name, "sgd.param.%d", i);
        CHECK_MSG(replay_state_get(s, name, buf, nb) == TG_OK, "%s", replay_session_error(s));
        gap = fmax(gap, memcmp(buf, eager_peek(e.p[i]), nb) ? 1.0 : 0.0);
    }
    CHECK_MSG(gap == 0, "accumulating step, replay -O0 vs eager: %.3g", gap);
    printf("accumulation: the traced 2-micro-batch step replayed 26 steps, equal to eager: %s\n",
           gap == 0 ? "bit for bit" : "NO");
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    free_mlp(&r);
    free_mlp(&e);
}

int main(void)
{
    test_cnn(0);
    test_cnn(1);
    test_accumulation();
    return check_done();
}
