/*
 * test_replay_lifetime.c - the replay API's lifetimes and limits (issue 29
 * class 3): a session handed from the thread that created and ran it to
 * another (one thread at a time, replay.h) runs there with the same
 * output; a plan freed while a session lives stays until that session is
 * freed; replay_opts.threads out of range is refused at compile; and
 * replay_opts.max_memory refuses a plan, or a run at a larger dynamic
 * size, that would need more.
 *
 * The handover model runs the oneDNN kernels (conv2d, linear) at 1 and 4
 * threads; its output is checked against naive loops written here.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tracegraph.h"

#define C_IN 3
#define C_OUT 8
#define HW 12
#define K 3
#define OHW (HW - K + 1)
#define FEAT (C_OUT * OHW * OHW)
#define NOUT 10

typedef struct model {
    float x[C_IN * HW * HW];
    float w[C_OUT * C_IN * K * K], b[C_OUT];
    float w2[NOUT * FEAT], b2[NOUT];
    float want[NOUT];
} model;

static void fill(float *p, int n, unsigned seed, float scale)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    }
}

/* y = linear(flatten(relu(conv2d(x, w, b))), w2, b2), naive. */
static void reference(model *m)
{
    static float h[FEAT];
    for (int o = 0; o < C_OUT; o++)
        for (int y = 0; y < OHW; y++)
            for (int x = 0; x < OHW; x++) {
                double s = m->b[o];
                for (int c = 0; c < C_IN; c++)
                    for (int i = 0; i < K; i++)
                        for (int j = 0; j < K; j++)
                            s += (double)m->x[(c * HW + y + i) * HW + x + j] *
                                 m->w[((o * C_IN + c) * K + i) * K + j];
                h[(o * OHW + y) * OHW + x] = s > 0 ? (float)s : 0;
            }
    for (int n = 0; n < NOUT; n++) {
        double s = m->b2[n];
        for (int f = 0; f < FEAT; f++)
            s += (double)h[f] * m->w2[n * FEAT + f];
        m->want[n] = (float)s;
    }
}

/* The model traced into a graph (params w, b, w2, b2; input x). */
static graph *trace_model(const model *m)
{
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(1, C_IN, HW, HW), m->x);
    eager_tensor *w = eager_from_data(GRAPH_F32, TG_SHAPE(C_OUT, C_IN, K, K), m->w);
    eager_tensor *b = eager_from_data(GRAPH_F32, TG_SHAPE(C_OUT), m->b);
    eager_tensor *w2 = eager_from_data(GRAPH_F32, TG_SHAPE(NOUT, FEAT), m->w2);
    eager_tensor *b2 = eager_from_data(GRAPH_F32, TG_SHAPE(NOUT), m->b2);
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK);
    eager_pool_push();
    eager_tensor *h = eager_relu(eager_conv2d(x, w, b, TG_INTS(1, 1), TG_INTS(0, 0),
                                              TG_INTS(1, 1), 1));
    eager_tensor *y = eager_linear(eager_reshape(h, TG_SHAPE(1, FEAT)), w2, b2);
    CHECK(trace_output(y, "y") == TG_OK);
    eager_pool_pop();
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s", eager_error());
    eager_release(x);
    eager_release(w);
    eager_release(b);
    eager_release(w2);
    eager_release(b2);
    return g;
}

typedef struct hand {
    replay_session *s;
    const model *m;
    float out[NOUT];
    tg_status st;
    char err[512];
} hand;

static void *run_there(void *arg)
{
    hand *h = arg;
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 4, {1, C_IN, HW, HW}}, .input = h->m->x};
    replay_tensor out = {.name = "y", .type = {GRAPH_F32, 2, {1, NOUT}}, .data = h->out};
    h->st = replay_run(h->s, &in, 1, &out, 1);
    snprintf(h->err, sizeof h->err, "%s", replay_session_error(h->s));
    return NULL;
}

/* Runs h's session on a new thread and joins it. */
static void run_on_thread(hand *h)
{
    pthread_t t;
    memset(h->out, 0, sizeof h->out);
    CHECK(pthread_create(&t, NULL, run_there, h) == 0);
    pthread_join(t, NULL);
    CHECK_MSG(h->st == TG_OK, "run on another thread: %s", h->err);
}

static void check_out(const float *out, const float *want, const char *what)
{
    for (int n = 0; n < NOUT; n++)
        CHECK_MSG(fabsf(out[n] - want[n]) <= 1e-4f * (1 + fabsf(want[n])),
                  "%s: y[%d] = %g, want %g", what, n, out[n], want[n]);
}

/* Created and run on thread A, then run on B (A joined), then on C. */
static void test_handover(const graph *g, const model *m, int threads)
{
    replay_opts o = {.threads = threads};
    char err[512] = "";
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    hand a = {0};
    a.m = m;
    a.s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (!a.s)
        return;
    run_on_thread(&a); /* A: creates the kernels' state */
    check_out(a.out, m->want, "thread A");
    float first[NOUT];
    memcpy(first, a.out, sizeof first);
    for (int k = 0; k < 2; k++) {
        run_on_thread(&a); /* B, then C */
        CHECK_MSG(memcmp(a.out, first, sizeof first) == 0, "threads=%d: run %d on a new "
                  "thread differs from the first", threads, k + 2);
        check_out(a.out, m->want, "handed over");
    }
    replay_session_free(a.s);
    replay_plan_free(p);
}

/* replay_plan_free with sessions open: they keep the plan and still run
 * (ASan: no use after free); it goes with the last of them. */
static void test_plan_free_first(const graph *g, const model *m)
{
    char err[512] = "";
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return;
    hand a = {0}, b = {0};
    a.m = b.m = m;
    a.s = replay_session_new(p, NULL, 0);
    b.s = replay_session_new(p, NULL, 0);
    CHECK(a.s && b.s);
    replay_plan_free(p);
    replay_plan_free(p); /* given up once: drops nothing more */
    CHECK(replay_session_new(p, NULL, 0) == NULL); /* given up: no new session */
    if (!a.s || !b.s)
        return;
    run_there(&a);
    CHECK_MSG(a.st == TG_OK, "%s", a.err);
    check_out(a.out, m->want, "session a after replay_plan_free");
    replay_session_free(a.s); /* b still holds the plan */
    run_on_thread(&b);
    check_out(b.out, m->want, "session b after a was freed");
    replay_session_free(b.s); /* the plan goes here */
}

/* replay_opts.threads: 0 is the default 1; beyond TG_MAX_THREADS or
 * negative is refused at compile (2^30 made libgomp exit the process);
 * eager_set_threads refuses the same. */
static void test_threads_bound(const graph *g)
{
    static const struct {
        int threads;
        const char *msg;
    } bad[] = {
        {-1, "replay: replay_opts.threads is -1 (1 to 1024; 0 for the default 1)"},
        {TG_MAX_THREADS + 1, "replay: replay_opts.threads is 1025 (1 to 1024; 0 for the default 1)"},
        {1 << 30, "replay: replay_opts.threads is 1073741824 (1 to 1024; 0 for the default 1)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        replay_opts o = {.threads = bad[i].threads};
        char err[512] = "";
        replay_plan *p = replay_compile(g, &o, err, sizeof err);
        CHECK_MSG(p == NULL && strcmp(err, bad[i].msg) == 0, "threads %d: \"%s\"",
                  bad[i].threads, err);
        replay_plan_free(p);
    }
    replay_opts o = {.threads = 0};
    char err[512] = "";
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "threads 0: %s", err);
    replay_plan_free(p);
    int before = eager_threads();
    eager_set_threads(1 << 30);
    CHECK(eager_threads() == before);
    char want[160];
    snprintf(want, sizeof want, "eager_set_threads: 1073741824 threads (at most 1024); the "
             "setting stays %d", before);
    CHECK_ERROR(want);
}

/* y = x @ w, x [B,64] with B dynamic (traced at b), w a 64x32 param. */
static graph *trace_matmul(int64_t b)
{
    eager_tensor *x = eager_full(GRAPH_F32, TG_SHAPE(b, 64), 0.5);
    eager_tensor *w = eager_full(GRAPH_F32, TG_SHAPE(64, 32), 0.25);
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK);
    CHECK(trace_dynamic(x, 0, "B") == TG_OK);
    CHECK(trace_param(w, "w") == TG_OK);
    eager_pool_push();
    eager_tensor *y = eager_relu(eager_matmul(x, w, 0, 0));
    CHECK(trace_output(y, "y") == TG_OK);
    eager_pool_pop();
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s", eager_error());
    eager_release(x);
    eager_release(w);
    return g;
}

/* The traced arena of g compiled without a budget. */
static size_t arena_of(const graph *g)
{
    char err[512] = "";
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    size_t n = replay_workspace_size(p);
    replay_plan_free(p);
    return n;
}

/* replay_opts.max_memory: the traced arena plus the params (w: 8192
 * bytes) fits exactly or fails at compile; a larger dynamic size that
 * needs more fails at run, naming the sizes. */
static void test_max_memory(void)
{
    graph *g = trace_matmul(4), *big = trace_matmul(256);
    if (!g || !big)
        goto done;
    size_t arena = arena_of(g), arena_big = arena_of(big), fixed = 64 * 32 * 4;
    CHECK(arena > 0 && arena_big > arena);
    replay_opts o = {.threads = 1, .max_memory = arena + fixed - 1};
    char err[512] = "", want[512];
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    snprintf(want, sizeof want, "replay: the traced shapes need %zu bytes (arena %zu + params "
             "and constants %zu), more than replay_opts.max_memory (%zu)", arena + fixed, arena,
             fixed, arena + fixed - 1);
    CHECK_MSG(p == NULL && strcmp(err, want) == 0, "got \"%s\"\nwant \"%s\"", err, want);
    o.max_memory = arena + fixed;
    p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "at the budget: %s", err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (s) {
        static float x[256 * 64], y[256 * 32];
        for (int i = 0; i < 256 * 64; i++)
            x[i] = 0.5f;
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {4, 64}}, .input = x};
        replay_tensor out = {.name = "y", .type = {GRAPH_F32, 2, {4, 32}}, .data = y};
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
        CHECK(y[0] == 64 * 0.5f * 0.25f && y[4 * 32 - 1] == y[0]);
        in.type.dim[0] = out.type.dim[0] = 256;
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_NOMEM);
        snprintf(want, sizeof want, "replay: these input shapes need %zu bytes (arena %zu + "
                 "params and constants %zu), more than replay_opts.max_memory (%zu)",
                 arena_big + fixed, arena_big, fixed, arena + fixed);
        CHECK_MSG(strcmp(replay_session_error(s), want) == 0, "got \"%s\"\nwant \"%s\"",
                  replay_session_error(s), want);
        /* the traced size still runs after the refusal */
        in.type.dim[0] = out.type.dim[0] = 4;
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
done:
    graph_free(g);
    graph_free(big);
}

int main(void)
{
    static model m;
    fill(m.x, C_IN * HW * HW, 1, 2);
    fill(m.w, C_OUT * C_IN * K * K, 2, 1);
    fill(m.b, C_OUT, 3, 1);
    fill(m.w2, NOUT * FEAT, 4, 0.2f);
    fill(m.b2, NOUT, 5, 1);
    reference(&m);
    graph *g = trace_model(&m);
    if (g) {
        test_handover(g, &m, 1);
        test_handover(g, &m, 4);
        test_plan_free_first(g, &m);
        test_threads_bound(g);
    }
    test_max_memory();
    graph_free(g);
    CHECK(eager_live_tensors() == 0);
    return check_done();
}
