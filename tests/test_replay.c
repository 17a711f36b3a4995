/*
 * test_replay.c - the replay runtime against the reference interpreter and
 * eager: bit-identical outputs for the traced models, dynamic batch,
 * guards, param swap, many threads on one plan, workspaces, errors.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_caps.h"
#include "eager/interp.h"
#include "formats/tgraph.h"
#include "models.h"
#include "optimize/memplan.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

static replay_tensor as_input(eager_tensor *t, const char *name)
{
    replay_tensor r = {.name = name, .type = *eager_type(t), .input = eager_peek(t)};
    return r;
}

static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

/* A copy of g that went through a .tgraph file in memory. */
static graph *through_file(const graph *g)
{
    void *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    graph *h = NULL;
    if (format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        h = format_load_mem(buf, len, "model.tgraph", err, sizeof err);
    CHECK_MSG(h != NULL, "save -> load: %s", err);
    free(buf);
    return h;
}

/*
 * Replay == interpreter == eager, bit for bit, at several batches; the
 * plan is compiled from a graph saved to and loaded from a .tgraph.
 */
static void test_models(void)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        model m = model_make(k);
        eager_tensor *x = model_input(&m, m.input_shape.v[0], 100 + (uint64_t)k);
        graph *traced = model_trace(&m, x);
        graph *g = traced ? through_file(traced) : NULL;
        graph_free(traced);
        char err[512] = "";
        replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
        CHECK_MSG(p != NULL, "%s compiles: %s", m.name, err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        for (int b = 0; s && b < 3; b++) {
            int64_t batch = b == 0 ? m.input_shape.v[0] : b == 1 ? 1 : 7;
            eager_pool_push();
            eager_tensor *xb = model_input(&m, batch, 200 + (uint64_t)b);
            eager_tensor *want = m.forward(xb, m.params), *interp[1] = {NULL};
            CHECK(eager_interpret(g, &xb, 1, interp, 1, NULL) == TG_OK);
            replay_tensor in = as_input(xb, NULL), out = {NULL};
            tg_status st = replay_run(s, &in, 1, &out, 1);
            CHECK_MSG(st == TG_OK, "%s batch %lld runs: %s", m.name, (long long)batch,
                      replay_session_error(s));
            if (st == TG_OK && want && interp[0]) {
                CHECK(graph_type_numel(&out.type) == eager_numel(want));
                /* Bit for bit where oneDNN has AVX-512.  Below it, a plan keeps
                 * matmul weights packed in the layout oneDNN prefers and eager
                 * does not, and oneDNN's GEMM then sums in another order
                 * (cpu_caps.h): equal to a few ulp. */
                int64_t n = eager_numel(want);
                int exact = test_avx512();
                CHECK_MSG(exact ? same_bits(out.data, eager_peek(interp[0]), eager_nbytes(want))
                                : check_normalized_error(out.data, eager_peek(interp[0]), n) < 1e-6,
                          "%s batch %lld: replay == interpreter", m.name, (long long)batch);
                CHECK_MSG(exact ? same_bits(out.data, eager_peek(want), eager_nbytes(want))
                                : check_normalized_error(out.data, eager_peek(want), n) < 1e-6,
                          "%s batch %lld: replay == eager", m.name, (long long)batch);
            }
            eager_release(interp[0]);
            eager_pool_pop();
        }
        replay_session_free(s);
        replay_plan_free(p);
        graph_free(g);
        eager_release(x);
        model_free(&m);
    }
}

/* ---- many threads, one plan ---- */

typedef struct worker {
    replay_plan *p;
    const float *x;
    graph_type xt;
    float *first;
    size_t n;
    int mismatches, errors;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    replay_session *s = replay_session_new(w->p, NULL, 0);
    float *buf = malloc(w->n * sizeof(float));
    for (int i = 0; s && buf && i < 1000; i++) {
        replay_tensor in = {.name = "x", .type = w->xt, .input = w->x};
        replay_tensor out = {.name = "y", .type = *replay_output_type(w->p, 0), .data = buf};
        if (replay_run(s, &in, 1, &out, 1) != TG_OK)
            w->errors++;
        else if (memcmp(buf, w->first, w->n * sizeof(float)) != 0)
            w->mismatches++;
    }
    free(buf);
    replay_session_free(s);
    return NULL;
}

static void test_threads(void)
{
    model m = model_make(MODEL_ATTENTION);
    eager_tensor *x = model_input(&m, 2, 300);
    graph *g = model_trace(&m, x);
    replay_plan *p = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    CHECK(p != NULL);
    if (p) {
        eager_pool_push();
        eager_tensor *want = m.forward(x, m.params);
        worker w[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            w[i] = (worker){p, eager_peek(x), *eager_type(x), (float *)eager_peek(want),
                            (size_t)eager_numel(want), 0, 0};
            pthread_create(&th[i], NULL, work, &w[i]);
        }
        int bad = 0;
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            bad += w[i].mismatches + w[i].errors;
        }
        CHECK_MSG(bad == 0, "4 threads x 1000 runs identical to eager (%d bad)", bad);
        eager_pool_pop();
    }
    replay_plan_free(p);
    graph_free(g);
    eager_release(x);
    model_free(&m);
}

/* ---- param swap, guards, workspace, errors ---- */

static void test_param_swap(void)
{
    model m = model_make(MODEL_MLP);
    eager_tensor *x = model_input(&m, 4, 400);
    graph *g = model_trace(&m, x);
    replay_plan *p = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK(s != NULL);
    if (s) {
        eager_pool_push();
        eager_tensor *w2 = eager_rand_normal(TG_SHAPE(10, 16), 77, 0, 0.3f);
        char err[256];
        CHECK(replay_set_param(p, "p2", eager_peek(w2), eager_nbytes(w2), err, sizeof err) == TG_OK);
        eager_tensor *params[4] = {m.params[0], m.params[1], w2, m.params[3]};
        eager_tensor *want = model_mlp(x, params);
        replay_tensor in = as_input(x, "x"), out = {NULL};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK);
        CHECK_MSG(same_bits(out.data, eager_peek(want), eager_nbytes(want)),
                  "swapped param: replay == eager with the new weight");
        CHECK(replay_set_param(p, "p2", eager_peek(w2), 12, err, sizeof err) == TG_ERR_SHAPE);
        CHECK_MSG(strstr(err, "\"p2\" is f32[10,16] (640 bytes), got 12 bytes"), "%s", err);
        CHECK(replay_set_param(p, "nope", eager_peek(w2), 640, err, sizeof err) == TG_ERR_ARG);
        CHECK_MSG(strstr(err, "no param named \"nope\"") &&
                      strstr(err, "unless opt_options.keep_params is set, tracegraph opt "
                                  "--keep-params)"),
                  "names the remedy: %s", err);
        eager_pool_pop();
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_release(x);
    model_free(&m);
}

static void test_guards(void)
{
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){1, 2, -0.5f}));
    trace_begin(NULL);
    trace_input(x, "x");
    trace_output(model_branchy(x), "y");
    graph *g = trace_freeze();
    replay_plan *p = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK(s && replay_num_steps(p) == 4); /* reduce_sum, gt, its guard, relu */
    if (s) {
        float y[3];
        replay_tensor in = as_input(x, "x"), out = {.name = "y", .type = *eager_type(x), .data = y};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK && y[2] == 0.0f && y[0] == 1.0f);
        float other[3] = {-1, -2, 0.5f};
        in.data = other;
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_GUARD);
        char site[64];
        snprintf(site, sizeof site, "models.c:%d model_branchy", model_branchy_line);
        CHECK_MSG(strstr(replay_session_error(s), site) &&
                  strstr(replay_session_error(s), "guard failed: the decision at"),
                  "\"%s\" names %s", replay_session_error(s), site);
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

static void test_workspace_and_errors(void)
{
    model m = model_make(MODEL_CONV);
    eager_tensor *x = model_input(&m, 2, 500);
    graph *g = model_trace(&m, x);
    replay_plan *p = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    CHECK(p != NULL);
    if (!p) {
        graph_free(g);
        eager_release(x);
        model_free(&m);
        return;
    }
    size_t ws = replay_workspace_size(p);
    CHECK(ws > 0 && ws % 64 == 0);
    void *mem = aligned_alloc(64, ws);
    CHECK(replay_session_new(p, mem, ws - 64) == NULL); /* too small */
    {   /* replay_session_create says why */
        char err[256], want[160];
        CHECK(replay_session_create(p, mem, ws - 64, err, sizeof err) == NULL);
        snprintf(want, sizeof want, "replay_session_create: the workspace holds %zu bytes, the "
                 "plan needs replay_workspace_size = %zu", ws - 64, ws);
        CHECK_MSG(!strcmp(err, want), "%s", err);
        CHECK(replay_session_create(p, (char *)mem + 8, ws - 64, err, sizeof err) == NULL);
        CHECK_MSG(strstr(err, "is not 64-byte aligned"), "%s", err);
        CHECK(replay_session_create(NULL, NULL, 0, err, sizeof err) == NULL);
        CHECK_MSG(!strcmp(err, "replay_session_create: the plan is NULL"), "%s", err);
        replay_session *ok = replay_session_create(p, NULL, 0, err, sizeof err);
        CHECK_MSG(ok && !err[0], "%s", err);
        replay_session_free(ok);
    }
    replay_session *s = replay_session_new(p, mem, ws);
    CHECK(s != NULL);
    eager_pool_push();
    eager_tensor *want = m.forward(x, m.params);
    replay_tensor in = as_input(x, NULL), out = {NULL};
    CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK &&
          same_bits(out.data, eager_peek(want), eager_nbytes(want)));
    /* a bigger batch needs more than the caller's workspace */
    eager_tensor *big = model_input(&m, 8, 501);
    in = as_input(big, "x");
    CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_ERR_NOMEM, "%s", replay_session_error(s));
    CHECK_MSG(strstr(replay_session_error(s), "workspace"), "%s", replay_session_error(s));
    /* wrong shapes, names, counts */
    eager_tensor *bad = eager_zeros(GRAPH_F32, TG_SHAPE(2, 4, 8, 8));
    in = as_input(bad, "x");
    CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_SHAPE);
    CHECK_MSG(strstr(replay_session_error(s), "input \"x\" is f32[2,4,8,8], the plan takes f32[B,3,8,8]"),
              "%s", replay_session_error(s));
    in = as_input(x, "z");
    CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_ARG);
    CHECK(strstr(replay_session_error(s), "no input named \"z\"") != NULL);
    CHECK(replay_run(s, &in, 0, &out, 1) == TG_ERR_ARG);
    in = as_input(x, "x");
    float small[3];
    replay_tensor o2 = {.name = "y", .type = {GRAPH_F32, 1, {3}}, .data = small};
    CHECK(replay_run(s, &in, 1, &o2, 1) == TG_ERR_SHAPE);
    CHECK(strstr(replay_session_error(s), "output \"y\" is f32[2,4], the buffer given is f32[3]") != NULL);
    eager_pool_pop();
    replay_session_free(s);
    free(mem);
    CHECK(replay_plan_handle(p, "cl_context") == NULL); /* a CPU plan has no OpenCL context */
    CHECK(replay_plan_property(p, "gemm") == NULL);
    replay_plan_free(p);

    /* compile errors: a backend name there is none of (the message lists
     * them), the deprecated kind past either end of its enum; an invalid
     * graph */
    char err[512];
    replay_opts o = {.threads = 1, .device = "cuda:0"};
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL);
    CHECK_MSG(!strcmp(err, "replay: no backend named \"cuda\" (backends: cpu, opencl)"), "%s", err);
    o.device = "cpu:1";
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "replay: no device \"cpu:1\" (devices: cpu = ") == err, "%s", err);
    /* the backends by name: the CPU's one device, "cpu", on every machine */
    CHECK(!strcmp(replay_backend_name(0), "cpu") && !strcmp(replay_backend_name(1), "opencl") &&
          replay_backend_name(2) == NULL);
    replay_device_info dev[2];
    CHECK(replay_backend_devices("cpu", dev, 2, err, sizeof err) == 1 &&
          !strcmp(dev[0].name, "cpu") && dev[0].device[0] && strstr(dev[0].details, "kernels "));
    CHECK(replay_backend_devices("cpu:0", dev, 2, err, sizeof err) == -1);
    CHECK_MSG(!strcmp(err, "replay: no backend named \"cpu:0\" (backends: cpu, opencl)"), "%s", err);
    replay_device_info found;
    CHECK(replay_backend_find("cpu:0", &found, err, sizeof err) == TG_OK &&
          !strcmp(found.name, "cpu"));
    CHECK(replay_backend_find(NULL, &found, err, sizeof err) == TG_OK && !strcmp(found.name, "cpu"));
    CHECK(replay_backend_find("cpu:Z80", &found, err, sizeof err) == TG_ERR_ARG);
    CHECK_MSG(strstr(err, "replay: no device \"cpu:Z80\" (devices: cpu = ") == err, "%s", err);
    o.device = "cpu";
    replay_plan *pc = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(pc && !strcmp(replay_plan_property(pc, "backend"), "cpu") &&
              !strcmp(replay_plan_property(pc, "device"), "cpu"), "%s", err);
    replay_plan_free(pc);
    o.device = NULL;
    o.backend = (replay_backend_kind)7;
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL && strstr(err, "unknown backend 7"));
    o.backend = (replay_backend_kind)2;
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL && strstr(err, "unknown backend 2"));
    o.backend = (replay_backend_kind)-1;
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL && strstr(err, "unknown backend -1"));
    g->nodes[1].in[0] = g->nodes[3].out[0]; /* use before definition */
    CHECK(replay_compile(g, NULL, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "invalid graph") && strstr(err, "before it is defined") &&
              strstr(err, "models.c:"), "%s", err);
    graph_free(g);
    eager_release(x);
    model_free(&m);
}

/*
 * A view (reshape) shares its input's arena buffer while either lives:
 * r = reshape(a) stays alive past neg(a), which therefore must not write
 * over a's buffer in place; c reads both.  Against loops in the test, with
 * and without in-place planning, and the arena with views shared is no
 * larger than without.
 */
static void test_view_alias(void)
{
    float xs[24], want_r[24], want_c[24];
    for (int i = 0; i < 24; i++) {
        xs[i] = (float)(i % 7) - 3.0f + 0.25f * (float)i;
        float a = xs[i] > 0 ? xs[i] : 0.0f;
        want_r[i] = a;
        want_c[i] = (a + 1.0f) * -a; /* c[i] = reshape(a + 1) * reshape(-a) */
    }
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(4, 6), xs);
    trace_begin(NULL);
    trace_input(x, "x");
    eager_tensor *a = eager_relu(x);
    eager_tensor *r = eager_reshape(a, TG_SHAPE(6, 4));
    eager_tensor *b = eager_neg(a);
    eager_tensor *a1 = eager_add(eager_reshape(r, TG_SHAPE(4, 6)), eager_full(GRAPH_F32, TG_SHAPE(1), 1.0));
    eager_tensor *c = eager_mul(eager_reshape(a1, TG_SHAPE(6, 4)), eager_reshape(b, TG_SHAPE(6, 4)));
    trace_output(c, "c");
    trace_output(r, "r");
    graph *g = trace_freeze();
    CHECK(g != NULL);
    for (int inplace = 0; g && inplace < 2; inplace++) {
        replay_opts o = {.threads = 1, .no_inplace = !inplace};
        replay_plan *p = replay_compile(g, &o, NULL, 0);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        CHECK(s != NULL);
        float yc[24] = {0}, yr[24] = {0};
        replay_tensor in = {.name = "x", .type = *eager_type(x), .input = xs};
        replay_tensor out[2] = {{.name = "c", .data = yc, .size = sizeof yc},
                                {.name = "r", .data = yr, .size = sizeof yr}};
        CHECK(s && replay_run(s, &in, 1, out, 2) == TG_OK);
        CHECK_FLOATS(yc, want_c, 24, 0);
        CHECK_FLOATS(yr, want_r, 24, 0);
        replay_session_free(s);
        replay_plan_free(p);
    }
    if (g) {
        opt_memplan shared, apart;
        CHECK(opt_memplan_build(g, NULL, 1, &shared) == TG_OK);
        CHECK(opt_memplan_build(g, NULL, 0, &apart) == TG_OK);
        CHECK_MSG(shared.arena_bytes < apart.arena_bytes, "arena %zu with views shared, %zu "
                  "without", shared.arena_bytes, apart.arena_bytes);
        opt_memplan_free(&shared);
        opt_memplan_free(&apart);
    }
    graph_free(g);
    eager_pool_pop();
}

/* In-place reuse keeps results identical, and the arena is smaller. */
static void test_memory(void)
{
    model m = model_make(MODEL_ATTENTION);
    eager_tensor *x = model_input(&m, 2, 600);
    graph *g = model_trace(&m, x);
    replay_opts o = {.threads = 1, .no_inplace = 1};
    replay_plan *p1 = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    replay_plan *p2 = g ? replay_compile(g, &o, NULL, 0) : NULL;
    CHECK(p1 && p2);
    if (p1 && p2) {
        CHECK(replay_workspace_size(p1) <= replay_workspace_size(p2));
        replay_session *s1 = replay_session_new(p1, NULL, 0), *s2 = replay_session_new(p2, NULL, 0);
        replay_tensor in = as_input(x, "x"), o1 = {NULL}, oo = {NULL};
        CHECK(replay_run(s1, &in, 1, &o1, 1) == TG_OK && replay_run(s2, &in, 1, &oo, 1) == TG_OK);
        CHECK(same_bits(o1.data, oo.data, (size_t)graph_type_numel(&o1.type) * 4));
        replay_session_free(s1);
        replay_session_free(s2);
    }
    replay_plan_free(p1);
    replay_plan_free(p2);
    graph_free(g);
    eager_release(x);
    model_free(&m);
}

/*
 * Inputs given as replay_tensor.input, a const void *: a const array and
 * eager_peek's pointer go in with no cast, and the run reads them (a
 * write would fault: xs is in read-only memory).  .data on an input, as
 * older callers set it, is the same pointer and gives the same output.
 */
static void test_const_inputs(void)
{
    static const float xs[6] = {1, -2, 3, -4, 5, -6};
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "batch");
    trace_output(eager_add(eager_relu(x), x), "y");
    graph *g = trace_freeze();
    replay_plan *p = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK(s != NULL);
    graph_type t = *eager_type(x);
    float y[6] = {0}, want[6];
    for (int i = 0; i < 6; i++)
        want[i] = (xs[i] > 0 ? xs[i] : 0) + xs[i];
    replay_tensor in = {.name = "x", .type = t, .input = xs};
    replay_tensor out = {.name = "y", .data = y, .size = sizeof y};
    CHECK(s && replay_run(s, &in, 1, &out, 1) == TG_OK);
    CHECK_FLOATS(y, want, 6, 0);
    /* batch 1, from eager_peek (const void *) */
    t.dim[0] = 1;
    eager_tensor *x1 = eager_from_data(GRAPH_F32, TG_SHAPE(1, 3), xs + 3);
    replay_tensor in1 = {.name = "x", .type = t, .input = eager_peek(x1)};
    float y1[3] = {0};
    replay_tensor out1 = {.name = "y", .data = y1, .size = sizeof y1};
    CHECK(s && replay_run(s, &in1, 1, &out1, 1) == TG_OK);
    CHECK_FLOATS(y1, want + 3, 3, 0);
    CHECK(out1.type.ndim == 2 && out1.type.dim[0] == 1 && out1.type.dim[1] == 3);
    /* .data on an input: the same pointer, the same run */
    float xm[6], y2[6] = {0};
    memcpy(xm, xs, sizeof xm);
    t.dim[0] = 2;
    replay_tensor in2 = {.name = "x", .type = t, .data = xm};
    replay_tensor out2 = {.name = "y", .data = y2, .size = sizeof y2};
    CHECK(in2.input == xm);
    CHECK(s && replay_run(s, &in2, 1, &out2, 1) == TG_OK);
    CHECK_FLOATS(y2, want, 6, 0);
    /* no data at all: the message still names the input */
    replay_tensor in3 = {.name = "x", .type = t};
    CHECK(s && replay_run(s, &in3, 1, &out2, 1) == TG_ERR_NULL);
    CHECK(s && strstr(replay_session_error(s), "input 0 (\"x\") has no data"));
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_models();
    test_threads();
    test_param_swap();
    test_guards();
    test_workspace_and_errors();
    test_memory();
    test_view_alias();
    test_const_inputs();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
