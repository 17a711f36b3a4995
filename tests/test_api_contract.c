/*
 * test_api_contract.c - the public API's documented answers to misuse:
 * NULL arguments (no crash, the value each header states), a replay
 * session run by two threads at once (one is refused with TG_ERR_STATE,
 * never a crash or a wrong output), creation converting out-of-range and
 * NaN values as cast does, integer pad refusing a fraction, trace_freeze
 * repeating the recording error it dropped the trace for, and input names
 * (NULL, empty, duplicate) refused where they are given and at compile.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "formats/npy.h"
#include "models.h"
#include "tracegraph.h"
#include "graph/graph_impl.h"

/* ---- NULL arguments ---- */

static void test_null_eager(void)
{
    CHECK(eager_dtype(NULL) == GRAPH_DTYPE_COUNT);
    CHECK(eager_ndim(NULL) == -1);
    CHECK(eager_dim(NULL, 0) == -1);
    CHECK(eager_numel(NULL) == -1);
    CHECK(eager_nbytes(NULL) == 0);
    CHECK(eager_type(NULL) == NULL);
    CHECK(eager_peek(NULL) == NULL);
    CHECK(eager_tag(NULL) == 0);
    eager_set_tag(NULL, 1);
    CHECK(eager_retain(NULL) == NULL);
    CHECK(eager_keep(NULL) == NULL);
    eager_release(NULL);
    /* NULL means "an earlier error": none is made up */
    CHECK(eager_status() == TG_OK);
    CHECK(eager_check_at(EAGER_SITE, NULL, "mine") == TG_ERR_NULL);
    CHECK_ERROR("mine: tensor is NULL");
    eager_clear_error();
    double v = eager_item(NULL);
    CHECK(v != v);
    eager_clear_error();
    CHECK(eager_data(NULL) == NULL);
    eager_clear_error();
    CHECK(eager_data_mut(NULL) == NULL);
    eager_clear_error();
    CHECK(eager_dispatch(GRAPH_OP_add, NULL, 2, NULL, NULL, 1, NULL) == -1);
    CHECK(eager_status() == TG_ERR_NULL);
    CHECK_ERROR("inputs array is NULL");
    eager_clear_error();
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(2), 1.0);
    eager_tensor *in[2] = {a, a};
    CHECK(eager_dispatch(GRAPH_OP_add, in, 2, NULL, NULL, 1, NULL) == -1);
    CHECK_ERROR("outputs array is NULL");
    eager_clear_error();
    eager_release(a);
    eager_set_error(TG_ERR_IO, NULL, NULL);
    CHECK(eager_status() == TG_ERR_IO && strcmp(eager_error(), tg_status_str(TG_ERR_IO)) == 0);
    eager_clear_error();
    CHECK(eager_interpret(NULL, NULL, 0, NULL, 0, NULL) == TG_ERR_ARG);
    eager_clear_error();
}

static void test_null_graph_opt_replay(void)
{
    char err[256];
    graph_type ty = {GRAPH_F32, 1, {2}}, o[4];
    int n = -5;
    CHECK(graph_verify(NULL, 0) == TG_ERR_NULL);
    CHECK(graph_propagate_dynamic(NULL) == TG_ERR_NULL);
    strcpy(err, "");
    CHECK(graph_guard_check(NULL, NULL, NULL, NULL, err, sizeof err) == 2);
    CHECK(strstr(err, "NULL graph") != NULL);
    CHECK(graph_op_find(NULL, 3) == GRAPH_OP_COUNT);
    graph_attrs_default(GRAPH_OP_pad, NULL);
    CHECK(graph_infer(GRAPH_OP_relu, NULL, 1, NULL, o, 4, &n, err, sizeof err) == TG_ERR_NULL);
    CHECK(strstr(err, "relu: graph_infer given NULL inputs") != NULL);
    CHECK(graph_infer(GRAPH_OP_relu, &ty, 1, NULL, NULL, 4, &n, err, sizeof err) == TG_ERR_NULL);
    CHECK(graph_infer(GRAPH_OP_relu, &ty, 1, NULL, o, 4, NULL, err, sizeof err) == TG_ERR_NULL);
    CHECK(graph_infer(GRAPH_OP_relu, &ty, 1, NULL, o, 4, &n, NULL, 0) == TG_OK && n == 1);
    CHECK(graph_broadcast(NULL, &ty, o) == TG_ERR_NULL);
    CHECK(graph_broadcast(&ty, &ty, NULL) == TG_ERR_NULL);
    graph_dtype dt;
    CHECK(graph_dtype_parse(NULL, 3, &dt) == -1);
    CHECK(graph_dtype_parse("f32", 3, NULL) == -1);
    CHECK(graph_type_check(NULL, err, sizeof err) == TG_ERR_NULL);
    CHECK(strcmp(graph_shape_str(NULL, err, sizeof err), "[?]") == 0);
    CHECK(graph_shape_str(&ty, NULL, 5) == NULL);
    graph_type bad = {GRAPH_F32, 100, {0}};
    CHECK(strcmp(graph_shape_str(&bad, err, sizeof err), "[? 100 dims]") == 0);
    CHECK(strcmp(graph_ints_str(NULL, err, sizeof err), "[?]") == 0);
    trace_summary(NULL, stdout);
    /* the graph-building API: NULL graph, NULL arrays (issue 16: these crashed) */
    CHECK(graph_clone(NULL) == NULL);
    CHECK(graph_fail(NULL, TG_ERR_IO, "x") == TG_ERR_IO);
    CHECK(graph_intern(NULL, "x", -1) == NULL);
    CHECK(graph_add_value(NULL, GRAPH_VALUE_INPUT, &ty, "x") == -1);
    CHECK(graph_set_data(NULL, 0, "ab", 2) == TG_ERR_NULL);
    CHECK(graph_add_input(NULL, 0) == TG_ERR_NULL && graph_add_output(NULL, 0, "y") == TG_ERR_NULL);
    CHECK(graph_add_symbol(NULL, "B", 2) == -1);
    int32_t ids[2] = {0, 0};
    CHECK(graph_add_node(NULL, GRAPH_OP_relu, ids, 1, NULL, ids, 1) == -1);
    CHECK(graph_add_node_typed(NULL, GRAPH_OP_relu, ids, 1, NULL, &ty, 1, ids, 1, -1) == -1);
    CHECK(graph_reserve(NULL, 4, 4) == TG_ERR_NULL);
    CHECK(graph_add_prov(NULL, "f.c", 1, "f", NULL, 0) == -1);
    CHECK(graph_node_add_prov(NULL, 0, 0) == TG_ERR_NULL);
    CHECK(graph_node_reserve_prov(NULL, 0, 4) == TG_ERR_NULL);
    CHECK(graph_node_dedup_prov(NULL, 0) == TG_ERR_NULL);
    CHECK(graph_add_guard(NULL, NULL) == -1);
    CHECK(graph_alloc_ids(NULL, 4) == NULL && graph_alloc_bytes(NULL, 4) == NULL);
    CHECK(graph_value_nbytes(NULL) == 0 && graph_live_nodes(NULL) == 0);
    CHECK(strcmp(graph_prov_str(NULL, 0, err, sizeof err), "unknown site") == 0);
    CHECK(graph_compact(NULL) == TG_ERR_NULL && graph_toposort(NULL) == TG_ERR_NULL);
    {
        graph *g = graph_new("nulls");
        int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &ty, "x");
        int32_t c = graph_add_value(g, GRAPH_VALUE_CONST, &ty, "c");
        CHECK(x >= 0 && c >= 0);
        CHECK(graph_add_value(g, GRAPH_VALUE_INPUT, NULL, "y") == -1);
        CHECK(strstr(graph_error(g), "no type") != NULL);
        CHECK(graph_set_data(g, c, NULL, graph_value_nbytes(&g->values[c])) == TG_ERR_NULL);
        CHECK(graph_add_symbol(g, NULL, 2) == -1 && strstr(graph_error(g), "no name"));
        CHECK(graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, NULL, 1) == -1);
        CHECK(graph_add_node(g, GRAPH_OP_relu, NULL, 1, NULL, ids, 1) == -1);
        CHECK(graph_add_node_typed(g, GRAPH_OP_relu, &x, 1, NULL, NULL, 1, ids, 1, -1) == -1);
        CHECK(graph_add_prov(g, "f.c", 1, "f", NULL, 3) == -1);
        CHECK(graph_add_guard(g, NULL) == -1);
        graph_free(g);
    }
    /* .npy with nowhere to put the result */
    void *npy = NULL;
    size_t npylen = 0;
    CHECK(format_npy_load_mem("x", 1, "m.npy", NULL, &npy, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_npy_load_mem("x", 1, "m.npy", &ty, NULL, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_npy_load("m.npy", NULL, NULL, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_npy_save_mem(&ty, NULL, NULL, &npylen, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_npy_save_mem(&ty, NULL, &npy, NULL, err, sizeof err) == TG_ERR_NULL);
    /* optimize */
    CHECK(opt_optimize(NULL, NULL, NULL, err, sizeof err) == TG_ERR_NULL);
    CHECK(strstr(err, "no graph") != NULL);
    CHECK(opt_optimize(NULL, NULL, NULL, NULL, 0) == TG_ERR_NULL);
    opt_report_print(NULL, stdout);
    opt_uses u;
    CHECK(opt_uses_build(NULL, &u) == TG_ERR_NULL);
    opt_uses_free(NULL);
    CHECK(opt_pinned(NULL, 0) == 0);
    CHECK(opt_replace_uses(NULL, 0, 1) == 0);
    CHECK(opt_add_const(NULL, &ty, err) == -1);
    double d;
    CHECK(opt_const_scalar(NULL, 0, &d) == 0);
    CHECK(opt_merge_prov(NULL, 0, 0) == TG_ERR_NULL);
    CHECK(opt_fail(NULL, NULL, 0, TG_ERR_ARG, "x") == TG_ERR_ARG);
    opt_explain(NULL, NULL, 0, "x");
    /* replay */
    CHECK(replay_compile(NULL, NULL, err, sizeof err) == NULL && strstr(err, "no graph"));
    replay_plan_free(NULL);
    CHECK(replay_workspace_size(NULL) == 0);
    CHECK(replay_session_new(NULL, NULL, 0) == NULL);
    replay_session_free(NULL);
    CHECK(replay_run(NULL, NULL, 0, NULL, 0) == TG_ERR_NULL);
    CHECK(strcmp(replay_session_error(NULL), "no session") == 0);
    CHECK(replay_session_guard_warnings(NULL) == 0);
    CHECK(replay_set_param(NULL, NULL, NULL, 0, NULL, 0) != TG_OK);
    CHECK(replay_plan_handle(NULL, "cl_context") == NULL);
    CHECK(replay_plan_property(NULL, "gemm") == NULL);
    CHECK(replay_num_inputs(NULL) == 0 && replay_num_outputs(NULL) == 0 &&
          replay_num_steps(NULL) == 0);
    CHECK(replay_input_name(NULL, 0) == NULL && replay_output_name(NULL, 0) == NULL);
    CHECK(replay_input_type(NULL, 0) == NULL && replay_output_type(NULL, 0) == NULL);
    int ndev = replay_backend_devices("opencl", NULL, 4, NULL, 0); /* counts (or -1: none) */
    CHECK(ndev >= -1);
    CHECK(replay_backend_devices(NULL, NULL, 0, NULL, 0) == -1);
    CHECK(replay_backend_find("nope", NULL, NULL, 0) == TG_ERR_ARG);
    CHECK(replay_backend_find(NULL, NULL, NULL, 0) == TG_OK); /* NULL: the cpu */
    CHECK(replay_backend_name(-1) == NULL);
    CHECK(replay_plan_handle(NULL, NULL) == NULL && replay_plan_property(NULL, NULL) == NULL);
    CHECK(replay_buffer_new(NULL, 4, NULL, NULL, 0) == NULL);
    replay_buffer_free(NULL, NULL);
    /* trace entry points given NULL */
    CHECK(trace_input(NULL, "x") != TG_OK); /* no trace */
    eager_clear_error();
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(NULL, "x") == TG_ERR_NULL);
    CHECK(trace_param(NULL, "p") == TG_ERR_NULL);
    CHECK(trace_dynamic(NULL, 0, "B") != TG_OK);
    eager_clear_error();
    trace_abort();
}

/* ---- a type given from the graph's own values ---- */

/*
 * A type given by pointer into the graph's own values (a value's type as
 * the type of the next): the adders read it while writing the new record
 * into the same array, which must not disturb it (graph storage never
 * moves, test_graph_storage).
 */
static void test_type_from_graph(void)
{
    graph *g = graph_new("alias");
    graph_type ty = {GRAPH_F32, 2, {2, 3}};
    int32_t v = graph_add_value(g, GRAPH_VALUE_INPUT, &ty, "x");
    CHECK(v >= 0);
    for (int k = 0; k < 40 && v >= 0; k++) {
        int32_t y = -1;
        if (k % 2)
            v = graph_add_value(g, GRAPH_VALUE_PARAM, &g->values[v].type, NULL);
        else
            v = graph_add_node_typed(g, GRAPH_OP_relu, &v, 1, NULL, &g->values[v].type, 1, &y,
                                     1, -1) >= 0 ? y : -1;
        CHECK_MSG(v >= 0 && graph_type_eq(&g->values[v].type, &ty),
                  "value %d (step %d): the type given is not the type kept", v, k);
    }
    graph_free(g);
}

/* ---- one session, two threads ---- */

/* A chain of matmuls long enough (tens of ms) for the other thread to try
 * while a run is in progress. */
#define CHAIN_N 256
#define CHAIN_LEN 24

typedef struct shared {
    replay_session *s;
    const float *x, *want;
    atomic_int running; /* the worker is inside its run */
    atomic_int stop;
    atomic_int refused, ok, wrong, other;
} shared;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run_once(shared *sh, float *out)
{
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {CHAIN_N, CHAIN_N}}, .input = sh->x};
    replay_tensor o = {.name = "y", .type = {GRAPH_F32, 2, {CHAIN_N, CHAIN_N}}, .data = out};
    memset(out, 0, sizeof(float) * CHAIN_N * CHAIN_N);
    tg_status st = replay_run(sh->s, &in, 1, &o, 1);
    if (st == TG_ERR_STATE) {
        if (strstr(replay_session_error(sh->s), "session used by two threads at once"))
            atomic_fetch_add(&sh->refused, 1);
        else
            atomic_fetch_add(&sh->other, 1);
    } else if (st == TG_OK) {
        int same = memcmp(out, sh->want, sizeof(float) * CHAIN_N * CHAIN_N) == 0;
        atomic_fetch_add(same ? &sh->ok : &sh->wrong, 1);
    } else {
        atomic_fetch_add(&sh->other, 1);
    }
    return st;
}

static void *worker(void *arg)
{
    shared *sh = arg;
    float *out = malloc(sizeof(float) * CHAIN_N * CHAIN_N);
    while (out && !atomic_load(&sh->stop)) {
        atomic_store(&sh->running, 1);
        run_once(sh, out);
        atomic_store(&sh->running, 0);
    }
    free(out);
    return NULL;
}

static void test_session_two_threads(void)
{
    /* y = tanh(x @ x) repeated: traced, compiled once */
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(CHAIN_N, CHAIN_N), 3, -0.1f, 0.1f);
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK);
    eager_pool_push();
    eager_tensor *y = x;
    for (int i = 0; i < CHAIN_LEN; i++)
        y = eager_tanh(eager_add(eager_matmul(y, x, 0, 0), x));
    CHECK(trace_output(y, "y") == TG_OK);
    eager_pool_pop();
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s", eager_error());
    char err[512] = "";
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    CHECK_MSG(p != NULL, "%s", err);
    shared sh = {0};
    sh.s = p ? replay_session_new(p, NULL, 0) : NULL;
    sh.x = eager_peek(x);
    float *want = malloc(sizeof(float) * CHAIN_N * CHAIN_N);
    float *out = malloc(sizeof(float) * CHAIN_N * CHAIN_N);
    sh.want = want;
    if (sh.s && want && out) {
        /* the reference: one thread alone */
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {CHAIN_N, CHAIN_N}}, .input = sh.x};
        replay_tensor o = {.name = "y", .type = {GRAPH_F32, 2, {CHAIN_N, CHAIN_N}}, .data = want};
        CHECK(replay_run(sh.s, &in, 1, &o, 1) == TG_OK);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, worker, &sh) == 0);
        /* Try while the worker is running (each of its runs takes long
         * enough), until one try was refused and both threads completed
         * runs, or 20 s passed. */
        double t0 = now_s();
        while (now_s() - t0 < 20 && (atomic_load(&sh.refused) == 0 || atomic_load(&sh.ok) < 4)) {
            if (atomic_load(&sh.running))
                run_once(&sh, out);
        }
        atomic_store(&sh.stop, 1);
        pthread_join(t, NULL);
        /* after the worker, this thread may use the session again */
        CHECK(run_once(&sh, out) == TG_OK);
        CHECK(strcmp(replay_session_error(sh.s), "") == 0);
        printf("two threads: %d refused, %d ok, %d wrong, %d other\n", atomic_load(&sh.refused),
               atomic_load(&sh.ok), atomic_load(&sh.wrong), atomic_load(&sh.other));
        CHECK(atomic_load(&sh.refused) > 0);
        CHECK(atomic_load(&sh.wrong) == 0);
        CHECK(atomic_load(&sh.other) == 0);
        CHECK(atomic_load(&sh.ok) > 1);
    }
    free(want);
    free(out);
    replay_session_free(sh.s);
    replay_plan_free(p);
    graph_free(g);
    eager_release(x);
}

/* ---- creation converts as cast does ---- */

static void test_full_like_cast(void)
{
    const double vals[] = {1e10, -1e10, 2147483647.0, 2147483648.0, -2147483649.0, 7.9, -7.9,
                           NAN, INFINITY, -INFINITY, 1e19, -1e19, 0.5};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        double v = vals[k];
        eager_tensor *i32 = eager_full(GRAPH_I32, TG_SHAPE(3), v);
        eager_tensor *i64 = eager_full(GRAPH_I64, TG_SHAPE(3), v);
        eager_tensor *b = eager_full(GRAPH_BOOL, TG_SHAPE(3), v);
        /* independent reference: C's rules written out */
        int32_t w32 = v != v ? 0 : v >= 2147483648.0 ? INT32_MAX : v < -2147483648.0 ? INT32_MIN
                                                                                    : (int32_t)v;
        int64_t w64 = v != v                        ? 0
                      : v >= 9223372036854775808.0  ? INT64_MAX
                      : v < -9223372036854775808.0 ? INT64_MIN
                                                    : (int64_t)v;
        CHECK_MSG(i32 && ((const int32_t *)eager_peek(i32))[2] == w32, "full(i32, %g)", v);
        CHECK_MSG(i64 && ((const int64_t *)eager_peek(i64))[2] == w64, "full(i64, %g)", v);
        CHECK_MSG(b && ((const uint8_t *)eager_peek(b))[1] == (v != 0.0), "full(bool, %g)", v);
        /* and the cast op on the same value (as f32) agrees where f32 holds it */
        eager_tensor *f = eager_full(GRAPH_F32, TG_SHAPE(1), v);
        eager_tensor *c32 = eager_cast(f, GRAPH_I32), *c64 = eager_cast(f, GRAPH_I64);
        eager_tensor *r32 = eager_full(GRAPH_I32, TG_SHAPE(1), (double)(float)v);
        eager_tensor *r64 = eager_full(GRAPH_I64, TG_SHAPE(1), (double)(float)v);
        CHECK_MSG(c32 && r32 && *(const int32_t *)eager_peek(c32) == *(const int32_t *)eager_peek(r32),
                  "cast vs full, i32, %g", v);
        CHECK_MSG(c64 && r64 && *(const int64_t *)eager_peek(c64) == *(const int64_t *)eager_peek(r64),
                  "cast vs full, i64, %g", v);
        eager_release(i32);
        eager_release(i64);
        eager_release(b);
        eager_release(f);
        eager_release(c32);
        eager_release(c64);
        eager_release(r32);
        eager_release(r64);
    }
    CHECK(eager_status() == TG_OK);
    /* arange stores through the same rule */
    eager_tensor *a = eager_arange(GRAPH_I32, 0, 6e9, 2e9);
    CHECK(a && eager_numel(a) == 3);
    if (a) {
        const int32_t *p = eager_peek(a);
        CHECK(p[0] == 0 && p[1] == 2000000000 && p[2] == INT32_MAX);
    }
    eager_release(a);
}

/* ---- integer pad refuses a fraction ---- */

static void test_pad_fraction(void)
{
    eager_tensor *x = eager_full(GRAPH_I32, TG_SHAPE(2), 1.0);
    CHECK_FAILS(eager_pad(x, TG_INTS(1, 1), 0.5f), "pad: i32[2]: value 0.5 is not an integer");
    eager_tensor *l = eager_full(GRAPH_I64, TG_SHAPE(2), 1.0);
    CHECK_FAILS(eager_pad(l, TG_INTS(0, 1), -2.25f), "value -2.25 is not an integer (the input is i64)");
    /* integral values, f32 and bool fractions still pad */
    eager_tensor *y = eager_pad(x, TG_INTS(1, 1), -3.0f);
    CHECK(y && ((const int32_t *)eager_peek(y))[0] == -3 && ((const int32_t *)eager_peek(y))[1] == 1);
    eager_tensor *f = eager_full(GRAPH_F32, TG_SHAPE(1), 1.0);
    eager_tensor *fy = eager_pad(f, TG_INTS(1, 0), 0.5f);
    CHECK(fy && ((const float *)eager_peek(fy))[0] == 0.5f);
    eager_tensor *b = eager_full(GRAPH_BOOL, TG_SHAPE(1), 0.0);
    eager_tensor *by = eager_pad(b, TG_INTS(1, 0), 0.5f);
    CHECK(by && ((const uint8_t *)eager_peek(by))[0] == 1);
    /* a graph built by hand is refused the same way */
    graph *g = graph_new("pad");
    graph_type t = {GRAPH_I32, 1, {2}};
    int32_t v = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), out;
    graph_pad_attrs pa = {TG_INTS(1, 0), 0.5f};
    CHECK(graph_add_node(g, GRAPH_OP_pad, &v, 1, &pa, &out, 1) < 0);
    CHECK(strstr(graph_error(g), "value 0.5 is not an integer") != NULL);
    graph_free(g);
    CHECK(eager_status() == TG_OK);
    eager_release(x);
    eager_release(l);
    eager_release(y);
    eager_release(f);
    eager_release(fy);
    eager_release(b);
    eager_release(by);
}

/* ---- trace_freeze repeats the error that broke the trace ---- */

static void test_freeze_repeats_error(void)
{
    eager_tensor *x = eager_full(GRAPH_F32, TG_SHAPE(2), 1.0);
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK);
    eager_tensor *y = eager_relu(x);
    int line = __LINE__ + 1;
    CHECK(trace_output(x, "notcomputed") == TG_ERR_ARG);
    CHECK_ERROR("does not depend on any recorded op");
    eager_clear_error(); /* the caller moves on; the trace stays broken */
    CHECK(trace_output(y, "y") == TG_OK);
    CHECK(trace_freeze() == NULL);
    CHECK(eager_status() == TG_ERR_ARG);
    char want[256];
    snprintf(want, sizeof want, "trace_output: \"notcomputed\" does not depend on any recorded "
             "op (it is not computed inside the trace) (test_api_contract.c:%d %s)", line, __func__);
    CHECK_MSG(strstr(eager_error(), "trace_freeze: the trace is dropped: recording failed") &&
              strstr(eager_error(), want), "%s", eager_error());
    eager_clear_error();
    CHECK(!trace_active());
    eager_release(y);
    eager_release(x);
}

/* ---- input names ---- */

static void test_input_names(void)
{
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(2), 1.0);
    eager_tensor *b = eager_full(GRAPH_F32, TG_SHAPE(2), 2.0);
    CHECK(trace_begin(NULL) == TG_OK);
    int line = __LINE__ + 1;
    CHECK(trace_input(a, NULL) == TG_ERR_ARG);
    check_fail_at("trace_input: a NULL name", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(trace_input(a, "") == TG_ERR_ARG);
    check_fail_at("trace_input: an empty name", __FILE__, line, __func__);
    CHECK(trace_input(a, "x") == TG_OK);
    line = __LINE__ + 1;
    CHECK(trace_input(b, "x") == TG_ERR_ARG);
    check_fail_at("trace_input: the name \"x\" is already input 0", __FILE__, line, __func__);
    /* the refusals did not break the trace: b gets its own name */
    CHECK(trace_input(b, "x2") == TG_OK);
    eager_tensor *y = eager_add(a, b);
    CHECK(trace_output(y, "y") == TG_OK);
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s", eager_error());
    /* graphs from elsewhere: graph_verify, hence the loaders and
     * replay_compile, refuse duplicate and missing input names */
    if (g) {
        char err[512] = "";
        graph *dup = graph_clone(g);
        dup->values[dup->inputs[1]].name = dup->values[dup->inputs[0]].name;
        CHECK(replay_compile(dup, NULL, err, sizeof err) == NULL);
        CHECK_MSG(strstr(err, "input name \"x\" is used twice"), "%s", err);
        dup->values[dup->inputs[1]].name = NULL;
        CHECK(replay_compile(dup, NULL, err, sizeof err) == NULL);
        CHECK_MSG(strstr(err, "input 1 (%") && strstr(err, "has no name"), "%s", err);
        graph_free(dup);
        replay_plan *p = replay_compile(g, NULL, err, sizeof err);
        CHECK_MSG(p != NULL, "%s", err);
        replay_plan_free(p);
    }
    graph_free(g);
    eager_release(y);
    eager_release(a);
    eager_release(b);
}

int main(void)
{
    long live = eager_live_tensors();
    test_null_eager();
    test_null_graph_opt_replay();
    test_type_from_graph();
    test_session_two_threads();
    test_full_like_cast();
    test_pad_fraction();
    test_freeze_repeats_error();
    test_input_names();
    CHECK_MSG(eager_live_tensors() == live, "%ld tensors leaked", eager_live_tensors() - live);
    return check_done();
}
