/*
 * test_sizes.c - the size cap (issue 16, families 2 and 3): every layer
 * that turns a shape into a size refuses shapes whose size would wrap,
 * with a message naming the op, input or file position, and nothing is
 * written past a buffer.  Eager ops whose inferred output passes 2^40
 * elements (expand, pad, matmul with K = 0, conv_transpose2d, where,
 * concat); replay runs at dynamic sizes whose intermediates would wrap;
 * replay_run given bad shapes, counts and names by its caller; the
 * loaders (.tgraph, text IR, ONNX) given such types.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "formats/tgraph_impl.h"
#include "graph/text.h"
#include "replay/replay.h"
#include "tracer/trace.h"

#define P31 (INT64_C(1) << 31)
#define P62 (INT64_C(1) << 62)

/* graph_type_check against the rule written out: dims >= 0 and the
 * product of max(dim, 1) at most 2^40, computed here in long double. */
static void test_type_check(void)
{
    static const int64_t dims[][4] = {
        {1, 1, 1, 1},        {0, P31, P31, 1},      {0, 1 << 20, 1 << 20, 1},
        {0, 1 << 20, 1 << 21, 1}, {INT64_C(1) << 40, 1, 1, 1}, {(INT64_C(1) << 40) + 1, 0, 1, 1},
        {P62, 4, 1, 1},      {P62 + 1, 4, 1, 1},    {-1, 0, 1, 1},
        {3, 5, 7, 11},       {INT64_MAX, INT64_MAX, 0, 0}, {1 << 10, 1 << 10, 1 << 10, 1 << 10},
        {1 << 10, 1 << 10, 1 << 10, 1 << 11},
    };
    for (size_t c = 0; c < sizeof dims / sizeof dims[0]; c++) {
        graph_type t = {GRAPH_F32, 4, {0}};
        long double prod = 1;
        int neg = 0;
        for (int d = 0; d < 4; d++) {
            t.dim[d] = dims[c][d];
            neg |= dims[c][d] < 0;
            prod *= dims[c][d] > 1 ? (long double)dims[c][d] : 1;
        }
        int want = !neg && prod <= (long double)(INT64_C(1) << 40);
        char err[200] = "";
        tg_status st = graph_type_check(&t, err, sizeof err);
        CHECK_MSG((st == TG_OK) == want, "case %zu: status %d, want %s (%s)", c, (int)st,
                  want ? "ok" : "refused", err);
        CHECK_MSG(want || st == TG_ERR_SHAPE, "case %zu: status %d", c, (int)st);
        CHECK_MSG(want || strlen(err) > 10, "case %zu: no message", c);
    }
    graph_type t = {GRAPH_F32, 9, {0}};
    CHECK(graph_type_check(&t, NULL, 0) == TG_ERR_SHAPE);
    t.ndim = -1;
    CHECK(graph_type_check(&t, NULL, 0) == TG_ERR_SHAPE);
    t = (graph_type){(graph_dtype)7, 1, {1}};
    CHECK(graph_type_check(&t, NULL, 0) == TG_ERR_DTYPE);
    int64_t r = 0;
    CHECK(graph_size_mul(1 << 20, 1 << 20, &r) == 0 && r == INT64_C(1) << 40);
    CHECK(graph_size_mul(1 << 20, (1 << 20) + 1, &r) == -1);
    CHECK(graph_size_mul(P62, 4, &r) == -1);
    CHECK(graph_size_mul(-1, 4, &r) == -1);
    CHECK(graph_size_mul(0, INT64_MAX, &r) == 0 && r == 0);
}

/* The eager ops of the issue: each refused, by name, at this call site. */
static void test_eager_ops(void)
{
    eager_pool_push();
    long live = eager_live_tensors();
    eager_tensor *one = eager_ones(GRAPH_F32, TG_SHAPE(1, 1));
    eager_tensor *row = eager_ones(GRAPH_F32, TG_SHAPE(1, 4));
    eager_tensor *vec = eager_ones(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *e3 = eager_zeros(GRAPH_F32, TG_SHAPE(0, 1, 1));
    CHECK_FAILS(eager_expand(one, TG_SHAPE(P31, P31)), "expand: [1,1]: output 0: shape "
                "[2147483648,2147483648] is too large (at most 2^40 elements");
    CHECK_FAILS(eager_expand(row, TG_SHAPE(P62 + 1, 4)), "is too large");
    CHECK_FAILS(eager_expand(e3, TG_SHAPE(0, P31, P31)), "[0,2147483648,2147483648] is too large");
    CHECK_FAILS(eager_pad(vec, TG_SHAPE(P62, 0), 0.0f), "pad: [4]: output 0: shape");
    CHECK_FAILS(eager_pad(vec, TG_SHAPE(INT64_MAX, 0), 0.0f), "overflow");
    /* K = 0: [2^31, 0] x [0, 2^31] would be 2^62 elements backed by 0 bytes */
    eager_tensor *a = eager_zeros(GRAPH_F32, TG_SHAPE(P31, 0));
    eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(0, P31));
    CHECK(a && b && eager_numel(a) == 0);
    CHECK_FAILS(eager_matmul(a, b, 0, 0), "matmul: [2147483648,0] x [0,2147483648]: output 0");
    /* the same sizes through broadcasting */
    eager_tensor *c = eager_zeros(GRAPH_BOOL, TG_SHAPE(P31, 1, 0));
    eager_tensor *d = eager_zeros(GRAPH_F32, TG_SHAPE(1, P31, 0));
    CHECK_FAILS(eager_where(c, d, d), "is too large");
    CHECK_FAILS(eager_add(eager_zeros(GRAPH_F32, TG_SHAPE(P31, 1, 0)),
                          eager_zeros(GRAPH_F32, TG_SHAPE(1, P31, 0))), "add:");
    /* a deconvolution whose stride multiplies a small input past the cap */
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(1, 1, 3, 3));
    eager_tensor *w = eager_ones(GRAPH_F32, TG_SHAPE(1, 1, 1, 1));
    CHECK_FAILS(eager_conv_transpose2d(x, w, EAGER_NONE, TG_SHAPE(P31, P31), TG_NOINTS,
                                       TG_NOINTS, TG_NOINTS, 1), "conv_transpose2d:");
    /* creation: the same cap and message */
    CHECK_FAILS(eager_zeros(GRAPH_F32, TG_SHAPE(0, P31, P31)), "is too large");
    CHECK_FAILS(eager_full(GRAPH_I64, TG_SHAPE(P62, 4), 1.0), "is too large");
    /* the largest empty tensors still work, and nothing was written */
    eager_tensor *big0 = eager_zeros(GRAPH_F32, TG_SHAPE(0, INT64_C(1) << 40));
    CHECK(big0 && eager_numel(big0) == 0 && eager_nbytes(big0) == 0);
    eager_tensor *s = eager_reduce_sum(eager_zeros(GRAPH_F32, TG_SHAPE(0, 4, 5)), TG_SHAPE(0), 0);
    CHECK(s && eager_numel(s) == 20 && ((const float *)eager_peek(s))[19] == 0.0f);
    eager_clear_error();
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

/* A traced graph whose dims are all dynamic. */
static graph *dyn_graph(int which)
{
    eager_pool_push();
    eager_tensor *a = eager_ones(GRAPH_F32, TG_SHAPE(2, 3));
    eager_tensor *b = eager_ones(GRAPH_F32, TG_SHAPE(3, 4));
    trace_begin(NULL);
    trace_input(a, "a");
    trace_dynamic(a, 0, "M");
    trace_dynamic(a, 1, "K");
    eager_tensor *y;
    if (which == 0) { /* matmul: M x K x N */
        trace_input(b, "b");
        trace_dynamic(b, 0, "K");
        trace_dynamic(b, 1, "N");
        y = eager_matmul(a, b, 0, 0);
    } else if (which == 1) { /* reduce over an empty axis */
        y = eager_reduce_sum(a, TG_SHAPE(0), 0);
    } else { /* broadcast: [M,1] + [1,K] -> [M,K] read as [M,1,1] + [1,K,1]... */
        trace_input(b, "b");
        trace_dynamic(b, 0, "K");
        trace_dynamic(b, 1, "N");
        y = eager_add(eager_unsqueeze(a, TG_SHAPE(2)), eager_unsqueeze(b, TG_SHAPE(0)));
    }
    trace_output(y, "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    eager_pool_pop();
    return g;
}

/* A plan of g (CPU) and a session on it; NULL (reported) on failure. */
static replay_session *open_session(const graph *g, replay_plan **p)
{
    char err[512] = "";
    *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = *p ? replay_session_new(*p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "compile: %s", err);
    return s;
}

static void test_replay_dynamic(void)
{
    float tiny[4] = {0};
    /* matmul with K = 0 at M = N = 2^31: the output would be 2^62 floats */
    graph *g = dyn_graph(0);
    replay_plan *p;
    replay_session *s = open_session(g, &p);
    if (s) {
        replay_tensor in[2] = {{.name = "a", .type = {GRAPH_F32, 2, {P31, 0}}, .input = tiny},
                               {.name = "b", .type = {GRAPH_F32, 2, {0, P31}}, .input = tiny}};
        replay_tensor out = {.name = "y"};
        CHECK(replay_run(s, in, 2, &out, 1) == TG_ERR_SHAPE);
        CHECK_MSG(strstr(replay_session_error(s), "matmul") &&
                      strstr(replay_session_error(s), "is too large"),
                  "%s", replay_session_error(s));
        /* the session still works at sane sizes */
        float a[6] = {1, 2, 3, 4, 5, 6}, b[12], y[8];
        for (int i = 0; i < 12; i++)
            b[i] = (float)(i % 3);
        in[0] = (replay_tensor){.name = "a", .type = {GRAPH_F32, 2, {2, 3}}, .input = a};
        in[1] = (replay_tensor){.name = "b", .type = {GRAPH_F32, 2, {3, 4}}, .input = b};
        out = (replay_tensor){.name = "y", .type = {GRAPH_F32, 2, {2, 4}}, .data = y};
        CHECK(replay_run(s, in, 2, &out, 1) == TG_OK);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                float want = 0;
                for (int k = 0; k < 3; k++)
                    want += a[i * 3 + k] * b[k * 4 + j];
                CHECK_NEAR(y[i * 4 + j], want, 1e-6);
            }
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);

    /* reduce over an empty axis of (0, 2^31, 2^31): refused at the input */
    g = dyn_graph(1);
    s = open_session(g, &p);
    if (s) {
        replay_tensor in = {.name = "a", .type = {GRAPH_F32, 2, {0, 1000}}, .input = tiny};
        replay_tensor out = {.name = "y"};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK && out.type.dim[0] == 1000 &&
              ((const float *)out.data)[999] == 0.0f);
        /* 0 x 2^41 is refused although it has no elements: a dim past the
         * cap next to a 0 */
        in.type.dim[1] = INT64_C(1) << 41;
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_SHAPE);
        CHECK_MSG(strstr(replay_session_error(s), "input \"a\"") &&
                      strstr(replay_session_error(s), "too large"),
                  "%s", replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);

    /* broadcast [M,K,1] + [1,K,N] at M = N = 2^31, K = 0 is refused; at
     * M = 2^20, N = 2^21 the intermediates would be 2^41 elements */
    g = dyn_graph(2);
    s = open_session(g, &p);
    if (s) {
        replay_tensor in[2] = {{.name = "a", .type = {GRAPH_F32, 2, {P31, 0}}, .input = tiny},
                               {.name = "b", .type = {GRAPH_F32, 2, {0, P31}}, .input = tiny}};
        replay_tensor out = {.name = "y"};
        CHECK(replay_run(s, in, 2, &out, 1) == TG_ERR_SHAPE);
        CHECK_MSG(strstr(replay_session_error(s), "add") &&
                      strstr(replay_session_error(s), "too large"),
                  "%s", replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/* replay_run given bad shapes, counts, NULLs and dtypes by its caller. */
static void test_replay_args(void)
{
    graph *g = dyn_graph(0);
    replay_plan *p;
    replay_session *s = open_session(g, &p);
    if (!s) {
        graph_free(g);
        return;
    }
    float a[6] = {0}, b[12] = {0}, y[8];
    replay_tensor in[2] = {{.name = "a", .type = {GRAPH_F32, 2, {2, 3}}, .input = a},
                           {.name = "b", .type = {GRAPH_F32, 2, {3, 4}}, .input = b}};
    replay_tensor out = {.name = "y", .type = {GRAPH_F32, 2, {2, 4}}, .data = y};
    CHECK(replay_run(s, in, 2, &out, 1) == TG_OK);
    struct {
        int input; /* which input to spoil, -1 none */
        graph_type t;
        tg_status want;
        const char *msg;
    } bad[] = {
        {0, {GRAPH_F32, 2, {-2, 3}}, TG_ERR_SHAPE, "input \"a\": dim 0 of [-2,3] is negative"},
        {1, {GRAPH_F32, 2, {3, INT64_C(1) << 60}}, TG_ERR_SHAPE, "input \"b\": shape"},
        {0, {GRAPH_F32, 2, {INT64_C(1) << 60, 3}}, TG_ERR_SHAPE, "is too large"},
        {0, {GRAPH_F32, 9, {2, 3}}, TG_ERR_SHAPE, "input \"a\": 9 dims (at most 8)"},
        {0, {GRAPH_F32, 1000, {2, 3}}, TG_ERR_SHAPE, "input \"a\": 1000 dims (at most 8)"},
        {0, {GRAPH_F32, -1, {2, 3}}, TG_ERR_SHAPE, "input \"a\": -1 dims"},
        {0, {(graph_dtype)99, 2, {2, 3}}, TG_ERR_DTYPE, "input \"a\": invalid dtype 99"},
        {0, {GRAPH_I32, 2, {2, 3}}, TG_ERR_DTYPE, "input \"a\" is i32[2,3], the plan takes f32[M,K]"},
        {1, {GRAPH_F32, 3, {3, 4, 1}}, TG_ERR_SHAPE, "input \"b\" is f32[3,4,1]"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        replay_tensor x[2] = {in[0], in[1]};
        x[bad[c].input].type = bad[c].t;
        tg_status st = replay_run(s, x, 2, &out, 1);
        CHECK_MSG(st == bad[c].want && strstr(replay_session_error(s), bad[c].msg),
                  "case %zu: status %d, \"%s\", want %d, \"%s\"", c, (int)st,
                  replay_session_error(s), (int)bad[c].want, bad[c].msg);
    }
    /* counts and pointers */
    CHECK(replay_run(s, in, -1, &out, 1) == TG_ERR_ARG);
    CHECK(replay_run(s, in, 2, &out, -1) == TG_ERR_ARG);
    CHECK(strstr(replay_session_error(s), "asked for -1"));
    CHECK(replay_run(s, in, 2, &out, 2) == TG_ERR_ARG);
    CHECK(replay_run(s, NULL, 2, &out, 1) == TG_ERR_NULL);
    CHECK(replay_run(s, in, 2, NULL, 1) == TG_ERR_NULL);
    CHECK(replay_run(NULL, in, 2, &out, 1) == TG_ERR_NULL);
    replay_tensor nodata[2] = {in[0], in[1]};
    nodata[1].data = NULL;
    CHECK(replay_run(s, nodata, 2, &out, 1) == TG_ERR_NULL);
    CHECK(strstr(replay_session_error(s), "input 1 (\"b\") has no data"));
    /* NULL names go by position */
    replay_tensor pos[2] = {in[0], in[1]};
    pos[0].name = pos[1].name = NULL;
    replay_tensor out0 = {.name = NULL};
    CHECK(replay_run(s, pos, 2, &out0, 1) == TG_OK && out0.type.dim[1] == 4);
    /* the output buffer's type is the caller's too */
    replay_tensor o2 = out;
    o2.type.ndim = 12;
    CHECK(replay_run(s, in, 2, &o2, 1) == TG_ERR_SHAPE);
    CHECK(strstr(replay_session_error(s), "output \"y\": 12 dims"));
    o2 = out;
    o2.type.dtype = GRAPH_I64;
    CHECK(replay_run(s, in, 2, &o2, 1) == TG_ERR_DTYPE);
    /* and after all that, a good run */
    CHECK(replay_run(s, in, 2, &out, 1) == TG_OK);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/* A plan with more inputs than a node may have (replay kept them in arrays
 * of 64): 100 inputs, each added once. */
static void test_many_inputs(void)
{
    enum { N = 100 };
    char text[N * 80 + 200];
    size_t k = (size_t)snprintf(text, sizeof text, "graph many(");
    for (int i = 0; i < N; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, "%s%%x%d: f32[B]", i ? ", " : "", i);
    k += (size_t)snprintf(text + k, sizeof text - k, ") -> (y: f32[B]) {\n  sym B = 3\n");
    k += (size_t)snprintf(text + k, sizeof text - k, "  %%s0: f32[B] = add(%%x0, %%x0)\n");
    for (int i = 1; i < N; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, "  %%s%d: f32[B] = add(%%s%d, %%x%d)\n",
                              i, i - 1, i);
    snprintf(text + k, sizeof text - k, "  return y = %%s%d\n}\n", N - 1);
    char err[512] = "";
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(g != NULL, "parse: %s", err);
    replay_plan *p;
    replay_session *s = open_session(g, &p);
    if (s) {
        static float data[N][3];
        replay_tensor in[N];
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < 3; j++)
                data[i][j] = (float)(i * 3 + j);
            in[i] = (replay_tensor){.type = {GRAPH_F32, 1, {3}}, .input = data[i]};
        }
        float y[3];
        replay_tensor out = {.type = {GRAPH_F32, 1, {3}}, .data = y};
        CHECK_MSG(replay_run(s, in, N, &out, 1) == TG_OK, "%s", replay_session_error(s));
        for (int j = 0; j < 3; j++) {
            float want = data[0][j];
            for (int i = 0; i < N; i++)
                want += data[i][j];
            CHECK_NEAR(y[j], want, 1e-6);
        }
        /* a different size for the last input only: a different variant key */
        in[N - 1].type.dim[0] = 2;
        CHECK(replay_run(s, in, N, &out, 1) == TG_ERR_SHAPE);
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/* The loaders refuse types past the cap, naming where. */
static void test_loaders(void)
{
    char err[512] = "";
    const char *t1 = "graph g(%x: f32[0,2147483648,2147483648]) -> (y: f32[2147483648,2147483648]) {\n"
                     "  %y: f32[2147483648,2147483648] = reduce_sum(%x) {axes=[0]}\n"
                     "  return y = %y\n}\n";
    graph *g = graph_parse(t1, strlen(t1), err, sizeof err);
    CHECK_MSG(!g && strstr(err, "line 1") && strstr(err, "too large"), "%s", err);
    graph_free(g);
    /* a .tgraph whose values have such types: a good graph encoded, its
     * dims [0,3,5] and [3,5] patched to [0,2^31,2^31] and [2^31,2^31] */
    const char *t2 = "graph g(%x: f32[0,3,5]) -> (y: f32[3,5]) {\n"
                     "  %y: f32[3,5] = reduce_sum(%x) {axes=[0]}\n"
                     "  return y = %y\n}\n";
    g = graph_parse(t2, strlen(t2), err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    format_raw_sections raw;
    if (g && format_encode_raw(g, &raw, err, sizeof err) == TG_OK) {
        uint8_t *v = raw.p[FORMAT_SEC_VALUES - 1];
        size_t n = raw.len[FORMAT_SEC_VALUES - 1];
        int hits = 0;
        for (size_t at = 0; at + 16 <= n; at++) {
            int64_t d0, d1;
            memcpy(&d0, v + at, 8);
            memcpy(&d1, v + at + 8, 8);
            if (d0 == 3 && d1 == 5) { /* little-endian on x86-64 */
                d0 = d1 = P31;
                memcpy(v + at, &d0, 8);
                memcpy(v + at + 8, &d1, 8);
                hits++;
            }
        }
        CHECK(hits == 2);
        void *buf = NULL;
        size_t len = 0;
        CHECK(format_pack(&raw, 3, &buf, &len, err, sizeof err) == TG_OK);
        graph *h = buf ? format_load_mem(buf, len, "big.tgraph", err, sizeof err) : NULL;
        CHECK_MSG(!h && strstr(err, "big.tgraph: section 'values' at byte") &&
                      strstr(err, "shape [0,2147483648,2147483648] is too large"),
                  "%s", err);
        graph_free(h);
        free(buf);
        format_raw_free(&raw);
    }
    graph_free(g);
}

int main(void)
{
    test_type_check();
    test_eager_ops();
    test_replay_dynamic();
    test_replay_args();
    test_many_inputs();
    test_loaders();
    return check_done();
}
