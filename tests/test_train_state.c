/*
 * test_train_state.c - a training step captured whole (issue 32, item 5):
 * the forward, the loss, eager_backward and an SGD update written with
 * ops and eager_assign, traced with the parameters and the learning rate
 * declared state (trace_state).  Checks: the graph's states (names, next
 * values), the .tgraph and text IR keep them, replay continues training
 * from the traced state and equals the eager loop step for step (bit for
 * bit at -O0, 1e-5 relative at -O2), the learning rate is run-time state
 * (a schedule on one graph), a session's state is read and written by
 * name; and the refusals with their messages: a write to a tensor that is
 * not state, state read on the host, state declared after its write, an
 * input declared state, a duplicate name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "eager/eager.h"
#include "formats/ckpt.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"

enum { N = 8, D = 5, H = 6, C = 3 };

typedef struct model {
    eager_tensor *w1, *b1, *w2, *b2, *lr;
} model;

static model make_model(void)
{
    model m;
    m.w1 = check_rand_tensor(TG_SHAPE(H, D), 11, -0.6f, 0.6f);
    m.b1 = check_rand_tensor(TG_SHAPE(H), 12, -0.1f, 0.1f);
    m.w2 = check_rand_tensor(TG_SHAPE(C, H), 13, -0.6f, 0.6f);
    m.b2 = check_rand_tensor(TG_SHAPE(C), 14, -0.1f, 0.1f);
    m.lr = eager_scalar(0.05);
    eager_tensor *p[4] = {m.w1, m.b1, m.w2, m.b2};
    for (int i = 0; i < 4; i++)
        eager_requires_grad(p[i], 1);
    return m;
}

static void free_model(model *m)
{
    eager_tensor *p[5] = {m->w1, m->b1, m->w2, m->b2, m->lr};
    for (int i = 0; i < 5; i++) {
        eager_zero_grad(p[i]);
        eager_release(p[i]);
    }
}

/* One eager step: forward, MSE loss, backward, SGD; returns the loss. */
static double step(model *m, eager_tensor *x, eager_tensor *y, eager_tensor **loss_out)
{
    eager_pool_push();
    eager_tensor *h = eager_relu(eager_linear(x, m->w1, m->b1));
    eager_tensor *o = eager_linear(h, m->w2, m->b2);
    eager_tensor *loss = eager_mse_loss(o, y);
    CHECK(eager_backward(loss) == TG_OK);
    eager_tensor *p[4] = {m->w1, m->b1, m->w2, m->b2};
    eager_no_grad_begin();
    for (int i = 0; i < 4; i++) {
        eager_tensor *np = eager_sub(p[i], eager_mul(m->lr, eager_grad(p[i])));
        CHECK(eager_assign(p[i], np) == TG_OK);
        eager_zero_grad(p[i]);
    }
    eager_no_grad_end();
    double l = eager_peek(loss) ? *(const float *)eager_peek(loss) : NAN;
    if (loss_out)
        *loss_out = eager_retain(loss);
    eager_pool_pop();
    return l;
}

static eager_tensor *batch_x(int k) { return check_rand_tensor(TG_SHAPE(N, D), 100 + (uint64_t)k, -1, 1); }
static eager_tensor *batch_y(int k) { return check_rand_tensor(TG_SHAPE(N, C), 200 + (uint64_t)k, -1, 1); }

/* Traces one step (after `warm` eager steps); returns the graph. */
static graph *trace_step(model *m, int warm)
{
    for (int k = 0; k < warm; k++) {
        eager_tensor *x = batch_x(k), *y = batch_y(k);
        step(m, x, y, NULL);
        eager_release(x);
        eager_release(y);
    }
    eager_tensor *x = batch_x(warm), *y = batch_y(warm), *loss = NULL;
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK && trace_input(y, "y") == TG_OK);
    CHECK(trace_state(m->w1, "fc1.weight") == TG_OK && trace_state(m->b1, "fc1.bias") == TG_OK &&
          trace_state(m->w2, "fc2.weight") == TG_OK && trace_state(m->b2, "fc2.bias") == TG_OK &&
          trace_state(m->lr, "lr") == TG_OK);
    step(m, x, y, &loss);
    CHECK(trace_output(loss, "loss") == TG_OK);
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s", eager_error());
    eager_release(loss);
    eager_release(x);
    eager_release(y);
    return g;
}

static void check_graph_states(const graph *g)
{
    CHECK(graph_num_states(g) == 5);
    const char *want[5] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "lr"};
    for (int i = 0; i < 5 && i < graph_num_states(g); i++) {
        int32_t v = graph_state_value(g, i), nx = graph_state_next(g, i);
        CHECK_MSG(graph_value_name(g, v) && !strcmp(graph_value_name(g, v), want[i]),
                  "state %d is %s", i, graph_value_name(g, v));
        CHECK(graph_value_kind_of(g, v) == GRAPH_VALUE_STATE);
        /* the parameters change every step, the learning rate does not */
        CHECK(i < 4 ? nx != v : nx == v);
    }
}

/* Replays `steps` steps from g's state and eagerly from m, comparing the
 * losses and the final parameters; returns the largest relative gap. */
static double replay_vs_eager(graph *g, model *m, int first, int steps, int level, double tol)
{
    char err[1024];
    graph *h = g;
    if (level > 0) {
        h = graph_clone(g);
        opt_options o = OPT_OPTIONS_INIT;
        o.level = level;
        opt_report rep;
        CHECK_MSG(opt_optimize(h, &o, &rep, err, sizeof err) == TG_OK, "%s", err);
        CHECK(graph_num_states(h) == 5);
    }
    replay_plan *p = replay_compile(h, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return INFINITY;
    replay_session *s = replay_session_create(p, NULL, 0, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    double worst = 0;
    for (int k = first; k < first + steps; k++) {
        eager_tensor *x = batch_x(k), *y = batch_y(k);
        replay_tensor in[2] = {{.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                               {.name = "y", .type = *eager_type(y), .input = eager_peek(y)}};
        float rl = NAN;
        replay_tensor out = {.name = "loss", .type = {GRAPH_F32, 0, {0}}, .data = &rl,
                             .size = sizeof rl};
        CHECK_MSG(replay_run(s, in, 2, &out, 1) == TG_OK, "%s", replay_session_error(s));
        double el = step(m, x, y, NULL);
        double gap = fabs(rl - el) / fmax(fabs(el), 1e-6);
        worst = fmax(worst, gap);
        eager_release(x);
        eager_release(y);
    }
    eager_tensor *params[4] = {m->w1, m->b1, m->w2, m->b2};
    const char *names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    for (int i = 0; i < 4; i++) {
        int64_t n = eager_numel(params[i]);
        float *buf = malloc((size_t)n * sizeof *buf);
        CHECK(replay_state_get(s, names[i], buf, (size_t)n * sizeof *buf) == TG_OK);
        const float *e = eager_peek(params[i]);
        for (int64_t j = 0; j < n; j++)
            worst = fmax(worst, fabs(buf[j] - e[j]) / fmax(fabs(e[j]), 1e-3));
        free(buf);
    }
    CHECK_MSG(worst <= tol, "-O%d: replay vs eager over %d steps: %.3g (tolerance %.3g)", level,
              steps, worst, tol);
    replay_session_free(s);
    replay_plan_free(p);
    if (h != g)
        graph_free(h);
    return worst;
}

static void test_capture_and_replay(void)
{
    /* two models from the same start: one traced at step 2 then replayed,
     * the other stepped eagerly alongside */
    model a = make_model(), b = make_model();
    graph *g = trace_step(&a, 2);
    if (!g)
        return;
    check_graph_states(g);
    if (getenv("TG_DEBUG_TEXT"))
        graph_print(g, stderr, NULL);
    for (int k = 0; k < 3; k++) {
        eager_tensor *x = batch_x(k), *y = batch_y(k);
        step(&b, x, y, NULL);
        eager_release(x);
        eager_release(y);
    }
    /* b is now where a was at freeze: the state the graph holds */
    double w0 = replay_vs_eager(g, &b, 3, 20, 0, 0);
    printf("replay -O0 vs eager, 20 steps: largest relative gap %.3g\n", w0);

    /* -O2 from the same state */
    model c = make_model();
    for (int k = 0; k < 3; k++) {
        eager_tensor *x = batch_x(k), *y = batch_y(k);
        step(&c, x, y, NULL);
        eager_release(x);
        eager_release(y);
    }
    double w2 = replay_vs_eager(g, &c, 3, 20, 2, 1e-5);
    printf("replay -O2 vs eager, 20 steps: largest relative gap %.3g\n", w2);

    /* the .tgraph keeps the states and their data */
    char err[1024];
    void *buf = NULL;
    size_t len = 0;
    CHECK_MSG(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK, "%s", err);
    graph *l = format_load_mem(buf, len, "step.tgraph", err, sizeof err);
    CHECK_MSG(l != NULL, "%s", err);
    if (l) {
        check_graph_states(l);
        int32_t v = graph_state_value(l, 0);
        CHECK(!memcmp(graph_value_data(l, v), graph_value_data(g, graph_state_value(g, 0)),
                      (size_t)graph_type_numel(graph_value_type(l, v)) * 4));
        graph_free(l);
    }
    free(buf);
    /* and so does the text IR */
    char *text = graph_print_str(g, NULL, NULL);
    CHECK(text && strstr(text, "= state") && strstr(text, "next "));
    graph *t = text ? graph_parse(text, strlen(text), err, sizeof err) : NULL;
    CHECK_MSG(t != NULL, "%s", err);
    if (t) {
        check_graph_states(t);
        graph_free(t);
    }
    free(text);
    graph_free(g);
    free_model(&a);
    free_model(&b);
    free_model(&c);
}

/* The learning rate is state: 0 freezes the parameters; by name. */
static void test_state_by_name(void)
{
    model a = make_model();
    graph *g = trace_step(&a, 0);
    if (!g)
        return;
    char err[1024];
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    replay_session *s = p ? replay_session_create(p, NULL, 0, err, sizeof err) : NULL;
    CHECK(s != NULL);
    if (!s) {
        replay_plan_free(p);
        graph_free(g);
        free_model(&a);
        return;
    }
    CHECK(replay_num_states(p) == 5 && !strcmp(replay_state_name(p, 4), "lr") &&
          replay_state_find(p, "fc2.bias") == 3 && replay_state_find(p, "nope") == -1);
    float zero = 0, w_before[H * D], w_after[H * D];
    CHECK(replay_state_set(s, "lr", &zero, sizeof zero) == TG_OK);
    CHECK(replay_state_get(s, "fc1.weight", w_before, sizeof w_before) == TG_OK);
    eager_tensor *x = batch_x(5), *y = batch_y(5);
    replay_tensor in[2] = {{.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                           {.name = "y", .type = *eager_type(y), .input = eager_peek(y)}};
    CHECK(replay_run(s, in, 2, NULL, 0) == TG_OK);
    CHECK(replay_state_get(s, "fc1.weight", w_after, sizeof w_after) == TG_OK);
    CHECK(!memcmp(w_before, w_after, sizeof w_before));
    float lr = 0.1f;
    CHECK(replay_state_set(s, "lr", &lr, sizeof lr) == TG_OK);
    CHECK(replay_run(s, in, 2, NULL, 0) == TG_OK);
    CHECK(replay_state_get(s, "fc1.weight", w_after, sizeof w_after) == TG_OK);
    CHECK(memcmp(w_before, w_after, sizeof w_before) != 0);
    /* errors name what was wrong */
    CHECK(replay_state_get(s, "fc9", w_after, sizeof w_after) == TG_ERR_ARG);
    CHECK_MSG(strstr(replay_session_error(s), "no state named \"fc9\" (states: fc1.weight, "
                                                "fc1.bias, fc2.weight, fc2.bias, lr)"),
              "%s", replay_session_error(s));
    CHECK(replay_state_set(s, "lr", w_after, 8) == TG_ERR_SHAPE);
    CHECK_MSG(strstr(replay_session_error(s), "state \"lr\" is f32[] (4 bytes), got 8 bytes"),
              "%s", replay_session_error(s));
    eager_release(x);
    eager_release(y);
    replay_session_free(s);
    replay_plan_free(p);
    /* ONNX holds no training step; OpenCL does not run one */
    void *ob = NULL;
    size_t olen = 0;
    CHECK(format_onnx_save_mem(g, NULL, &ob, &olen, err, sizeof err) == TG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err, "ONNX export: graph 'main' is a training step with 5 states "
                          "(fc1.weight, ...)"), "%s", err);
    replay_opts ro = REPLAY_OPTS_INIT;
    ro.device = "opencl";
    replay_plan *op = replay_compile(g, &ro, err, sizeof err);
    CHECK_MSG(!op, "an OpenCL plan of a training step");
    CHECK_MSG(!op && (strstr(err, "only the cpu backend runs such graphs, not opencl") ||
                      strstr(err, "OpenCL")), "%s", err);
    replay_plan_free(op);
    graph_free(g);
    free_model(&a);
}

static void expect_err(const char *what, const char *want)
{
    CHECK_MSG(strstr(eager_error(), want) != NULL, "%s: got \"%s\", want \"%s\"", what,
              eager_error(), want);
    eager_clear_error();
}

static void test_refusals(void)
{
    model m = make_model();
    eager_tensor *x = batch_x(0), *y = batch_y(0), *loss = NULL;

    /* a parameter written but not declared state */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    trace_input(y, "y");
    trace_state(m.w1, "fc1.weight");
    trace_state(m.b1, "fc1.bias");
    trace_state(m.w2, "fc2.weight"); /* fc2.bias left out */
    step(&m, x, y, &loss);
    trace_output(loss, "loss");
    CHECK(trace_freeze() == NULL);
    expect_err("undeclared write", "trace_freeze: the step writes a tensor from before the step "
                                   "that is not state (eager_assign at test_train_state.c:");
    eager_release(loss);

    /* reading state on the host */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_state(m.lr, "lr");
    double v = eager_item(m.lr);
    (void)v;
    expect_err("host read", "trace: reading state \"lr\" on the host (eager_item/eager_get) "
                            "would bake its value into the step");
    trace_abort();

    /* state declared after the step wrote it */
    CHECK(trace_begin(NULL) == TG_OK);
    eager_tensor *one = eager_scalar(1);
    eager_tensor *nb = eager_add(m.lr, one);
    CHECK(eager_assign(m.lr, nb) == TG_OK);
    CHECK(trace_state(m.lr, "lr") == TG_ERR_STATE);
    expect_err("late declaration", "trace_state: \"lr\" was written at test_train_state.c:");
    trace_abort();
    eager_release(nb);
    eager_release(one);

    /* an input is not state; a name is one tensor's */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_state(x, "x") == TG_ERR_STATE);
    expect_err("input", "trace_state: \"x\" is an input (trace_input) of the step");
    CHECK(trace_state(m.w1, "w") == TG_OK);
    CHECK(trace_state(m.w2, "w") == TG_ERR_ARG);
    expect_err("dup name", "trace_state: the name \"w\" already names the state of another "
                           "tensor (declared at test_train_state.c:");
    CHECK(trace_state(m.w1, "other") == TG_OK); /* keeps its first name */
    CHECK(trace_state(m.b1, "") == TG_ERR_ARG);
    eager_clear_error();
    trace_abort();

    /* gradients left from before the step: accumulating into them would
     * bake them into the step as constants */
    eager_pool_push();
    CHECK(eager_backward(eager_mse_loss(eager_linear(x, m.w1, m.b1), check_rand_tensor(TG_SHAPE(N, H), 9, -1, 1))) == TG_OK);
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(eager_backward(eager_mse_loss(eager_linear(x, m.w1, m.b1), check_rand_tensor(TG_SHAPE(N, H), 9, -1, 1))) != TG_OK);
    expect_err("stale gradient", "trace: a gradient accumulated before the step is read here");
    trace_abort();
    eager_zero_grad(m.w1);
    eager_zero_grad(m.b1);
    eager_pool_pop();

    /* a traced backward with a dynamic dim: refused (its 1/N is the traced N) */
    eager_pool_push();
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_dynamic(x, 0, "B") == TG_OK);
    eager_tensor *dl = eager_mse_loss(eager_linear(x, m.w1, m.b1), check_rand_tensor(TG_SHAPE(N, H), 9, -1, 1));
    CHECK(eager_backward(dl) == TG_OK);
    trace_output(dl, "loss");
    CHECK(trace_freeze() == NULL);
    expect_err("dynamic backward", "trace_freeze: the step runs eager_backward and has a dynamic "
                                   "dim (\"B\", trace_dynamic)");
    eager_zero_grad(m.w1);
    eager_zero_grad(m.b1);
    eager_pool_pop();

    /* eager_assign's own checks */
    eager_tensor *small = eager_scalar(3);
    CHECK(eager_assign(m.w1, small) == TG_ERR_SHAPE);
    expect_err("assign shape", "eager_assign: the destination is f32 [6,5], the source f32 []");
    CHECK(eager_assign(m.w1, m.w1) == TG_ERR_STATE); /* requires grad, grad recording on */
    expect_err("assign grad", "eager_assign: the destination requires a gradient");
    eager_release(small);

    eager_release(x);
    eager_release(y);
    free_model(&m);
}

/* Runs steps [from, to) on s. */
static void run_steps(replay_session *s, int from, int to)
{
    for (int k = from; k < to; k++) {
        eager_tensor *x = batch_x(k), *y = batch_y(k);
        replay_tensor in[2] = {{.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                               {.name = "y", .type = *eager_type(y), .input = eager_peek(y)}};
        CHECK_MSG(replay_run(s, in, 2, NULL, 0) == TG_OK, "%s", replay_session_error(s));
        eager_release(x);
        eager_release(y);
    }
}

static void state_bytes(replay_session *s, const replay_plan *p, uint8_t *buf, size_t cap,
                        size_t *len)
{
    *len = 0;
    for (int32_t i = 0; i < replay_num_states(p); i++) {
        size_t nb = (size_t)graph_type_numel(replay_state_type(p, i)) * 4;
        if (*len + nb <= cap)
            memcpy(buf + *len, replay_state_data(s, i), nb);
        *len += nb;
    }
}

/* Save half way, resume in a new process from the .tgraph and the
 * checkpoint: the same state as the session that went on; damage. */
static void test_checkpoint(void)
{
    model a = make_model();
    graph *g = trace_step(&a, 1);
    if (!g)
        return;
    char err[1024], gpath[64], cpath[64], rpath[64];
    snprintf(gpath, sizeof gpath, "/tmp/tg_train_%d.tgraph", (int)getpid());
    snprintf(cpath, sizeof cpath, "/tmp/tg_train_%d.tgstate", (int)getpid());
    snprintf(rpath, sizeof rpath, "/tmp/tg_train_%d.result", (int)getpid());
    CHECK_MSG(format_save(g, gpath, NULL, err, sizeof err) == TG_OK, "%s", err);
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = p ? replay_session_create(p, NULL, 0, err, sizeof err) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (!s) {
        graph_free(g);
        free_model(&a);
        return;
    }
    run_steps(s, 2, 7);
    CHECK_MSG(replay_state_save(s, cpath, err, sizeof err) == TG_OK, "%s", err);
    run_steps(s, 7, 12);
    static uint8_t want[4096], got[4096];
    size_t wlen, glen = 0;
    state_bytes(s, p, want, sizeof want, &wlen);
    CHECK(wlen > 0 && wlen <= sizeof want);

    pid_t pid = fork();
    if (pid == 0) {
        /* a new process: nothing but the two files */
        char e2[1024];
        graph *h = format_load(gpath, e2, sizeof e2);
        replay_plan *q = h ? replay_compile(h, NULL, e2, sizeof e2) : NULL;
        replay_session *r = q ? replay_session_create(q, NULL, 0, e2, sizeof e2) : NULL;
        if (!r || replay_state_load(r, cpath, e2, sizeof e2) != TG_OK) {
            fprintf(stderr, "child: %s\n", e2);
            _exit(2);
        }
        run_steps(r, 7, 12);
        size_t n;
        state_bytes(r, q, got, sizeof got, &n);
        FILE *f = fopen(rpath, "wb");
        if (!f || fwrite(got, 1, n, f) != n)
            _exit(3);
        fclose(f);
        _exit(0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the resuming process failed (%d)",
              status);
    FILE *f = fopen(rpath, "rb");
    if (f) {
        glen = fread(got, 1, sizeof got, f);
        fclose(f);
    }
    CHECK_MSG(glen == wlen && !memcmp(got, want, wlen),
              "resumed in a new process: %zu bytes of state, %s", glen,
              glen == wlen && !memcmp(got, want, wlen) ? "equal" : "different");

    /* damage: every kind an error, and the state untouched */
    void *buf = NULL;
    size_t len = 0;
    FILE *cf = fopen(cpath, "rb");
    if (cf) {
        buf = malloc(1 << 16);
        len = fread(buf, 1, 1 << 16, cf);
        fclose(cf);
    }
    CHECK(buf && len > 100 && len < (1 << 16));
    format_ckpt c;
    CHECK(format_ckpt_load_mem(buf, len - 3, "t.tgstate", &c, err, sizeof err) == TG_ERR_FORMAT);
    CHECK_MSG(strstr(err, "t.tgstate: at byte 16: the header gives a file size of") &&
                  strstr(err, "(truncated)"), "%s", err);
    ((uint8_t *)buf)[60] ^= 4;
    CHECK(format_ckpt_load_mem(buf, len, "t.tgstate", &c, err, sizeof err) == TG_ERR_FORMAT);
    CHECK_MSG(strstr(err, "the checksum does not match") && strstr(err, "(damaged file)"), "%s",
              err);
    ((uint8_t *)buf)[60] ^= 4;
    CHECK(format_ckpt_load_mem(buf, len, "t.tgstate", &c, err, sizeof err) == TG_OK);
    CHECK(c.n == 5 && !strcmp(c.e[4].name, "lr") && !strcmp(c.graph_name, "main"));
    format_ckpt_free(&c);
    CHECK(format_ckpt_load_mem("\x89TGR\r\n\x1a\n", 8, "x", &c, err, sizeof err) ==
          TG_ERR_FORMAT);
    CHECK_MSG(strstr(err, "x: not a state checkpoint (bad magic)"), "%s", err);

    /* a checkpoint of another graph (other names), of other shapes */
    float w[7 * 5] = {0}, bias[6] = {0};
    format_ckpt_entry other[1] = {{"conv1.weight", {GRAPH_F32, 2, {7, 5}}, w}};
    CHECK(format_ckpt_save(cpath, "other", other, 1, err, sizeof err) == TG_OK);
    size_t before_len;
    static uint8_t before[4096], after[4096];
    state_bytes(s, p, before, sizeof before, &before_len);
    CHECK(replay_state_load(s, cpath, err, sizeof err) == TG_ERR_ARG);
    CHECK_MSG(strstr(err, "holds no state \"fc1.weight\" (saved from graph \"other\" with 1 "
                          "states, this plan's graph \"main\" has 5): a checkpoint of another "
                          "graph?"), "%s", err);
    format_ckpt_entry wrong[5];
    for (int i = 0; i < 5; i++)
        wrong[i] = (format_ckpt_entry){replay_state_name(p, i), *replay_state_type(p, i),
                                       replay_state_data(s, i)};
    wrong[1] = (format_ckpt_entry){"fc1.bias", {GRAPH_F32, 1, {5}}, bias};
    CHECK(format_ckpt_save(cpath, "main", wrong, 5, err, sizeof err) == TG_OK);
    CHECK(replay_state_load(s, cpath, err, sizeof err) == TG_ERR_SHAPE);
    CHECK_MSG(strstr(err, "state \"fc1.bias\" is f32 [5] there, f32 [6] in the plan"), "%s", err);
    state_bytes(s, p, after, sizeof after, &before_len);
    CHECK(!memcmp(before, after, before_len)); /* nothing loaded */
    CHECK(replay_state_load(s, "/nonexistent/x.tgstate", err, sizeof err) == TG_ERR_IO);

    free(buf);
    unlink(gpath);
    unlink(cpath);
    unlink(rpath);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    free_model(&a);
}

/* State updates computed in place must not change what a later reader of
 * the old value sees: a step that reads w after computing w's update. */
static void test_in_place_order(void)
{
    static const char ir[] =
        "graph t(%x: f32[3]) -> (y: f32[3], z: f32[3]) {\n"
        "  %w: f32[3] = state [1, 2, 3]\n"
        "  %v: f32[3] = state [10, 20, 30]\n"
        "  %d: f32[3] = const [0.5, 0.5, 0.5]\n"
        "  %w2: f32[3] = sub(%w, %d)\n"
        "  %y: f32[3] = mul(%w, %x)\n"
        "  %v2: f32[3] = add(%v, %d)\n"
        "  %z: f32[3] = mul(%v2, %x)\n"
        "  return y = %y\n  return z = %z\n"
        "  next %w = %w2\n  next %v = %v2\n}\n";
    char err[512];
    graph *g = graph_parse(ir, strlen(ir), err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    /* DOT draws each state's next value back to it */
    char *dot = NULL;
    size_t dlen = 0;
    FILE *df = open_memstream(&dot, &dlen);
    CHECK(g && df && graph_write_dot(g, df) == TG_OK);
    if (df)
        fclose(df);
    CHECK_MSG(dot && strstr(dot, "v1 [shape=box3d, label=\"%w\\nstate f32[3]\"]") &&
                  strstr(dot, "n0 -> v1 [style=dashed, constraint=false, label=\"next\"];") &&
                  strstr(dot, "n2 -> v2 [style=dashed, constraint=false, label=\"next\"];"),
              "%s", dot ? dot : "(no DOT)");
    free(dot);
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_create(p, NULL, 0, err, sizeof err) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    float x[3] = {1, 1, 1}, y[3], z[3];
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 1, {3}}, .input = x};
    replay_tensor out[2] = {{.name = "y", .type = {GRAPH_F32, 1, {3}}, .data = y, .size = sizeof y},
                            {.name = "z", .type = {GRAPH_F32, 1, {3}}, .data = z, .size = sizeof z}};
    for (int k = 0; s && k < 3; k++) {
        CHECK(replay_run(s, &in, 1, out, 2) == TG_OK);
        for (int i = 0; i < 3; i++) {
            CHECK_MSG(y[i] == (float)(i + 1) - 0.5f * (float)k, "step %d: y[%d] = %g", k, i, y[i]);
            CHECK_MSG(z[i] == (float)(10 * (i + 1)) + 0.5f * (float)(k + 1), "step %d: z[%d] = %g",
                      k, i, z[i]);
        }
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

int main(void)
{
    test_capture_and_replay();
    test_state_by_name();
    test_refusals();
    test_checkpoint();
    test_in_place_order();
    return check_done();
}
