/*
 * test_argmax.c - argmax and argmin against a naive reference written
 * here: for each output a plain loop over the axis that keeps the most
 * extreme element seen, where "more extreme" is spelled out case by case
 * (NaN beats every number, NaNs tie, then > for argmax and < for argmin)
 * and a tie moves the pick only with select_last.  Shapes cover 0-d, 1-D
 * to 4-D, size-1 dims, every axis in both spellings, keepdim and
 * select_last both ways, f32 (whole numbers in a small range, so ties are
 * everywhere), i32 and i64 (extremes of the type), NaN, infinities and
 * signed zeros; large tensors on 1 and 4 threads run every layout and
 * parallel split.  Then every error with its exact message, and the op
 * through the rest of the system: text IR, .tgraph and ONNX round trips,
 * constant folding, -O3 behind a blocked conv chain, and replay on CPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_caps.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "graph_query.h"
#include "op_test_util.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"

static const char *const op_names[] = {"argmax", "argmin"};

/* Element i of f32 or i32 data as a double (exact). */
static double get_d(const void *p, graph_dtype dt, int64_t i)
{
    return dt == GRAPH_F32 ? ((const float *)p)[i] : ((const int32_t *)p)[i];
}

/* 1 if element a is more extreme than element b, -1 if less, 0 on a tie. */
static int extremer(const void *p, graph_dtype dt, int is_min, int64_t a, int64_t b)
{
    if (dt == GRAPH_I64) { /* exact: no detour through double */
        int64_t u = ((const int64_t *)p)[a], v = ((const int64_t *)p)[b];
        int c = (u > v) - (u < v);
        return is_min ? -c : c;
    }
    double u = get_d(p, dt, a), v = get_d(p, dt, b);
    if (isnan(u) && isnan(v))
        return 0;
    if (isnan(u))
        return 1;
    if (isnan(v))
        return -1;
    int c = (u > v) - (u < v);
    return is_min ? -c : c;
}

/* Runs the op and checks shape, dtype and every index. */
static void check_case(int is_min, eager_tensor *x, int64_t axis, int keepdim, int last,
                       int line)
{
    const graph_type *t = eager_type(x);
    int nd = t->ndim, ax = (int)(axis < 0 ? axis + (nd ? nd : 1) : axis);
    int64_t outer = 1, inner = 1, len = nd ? t->dim[ax] : 1;
    for (int d = 0; d < nd; d++) {
        if (d < ax)
            outer *= t->dim[d];
        if (d > ax)
            inner *= t->dim[d];
    }
    eager_tensor *y = is_min ? eager_argmin(x, axis, keepdim, last)
                             : eager_argmax(x, axis, keepdim, last);
    CHECK_MSG(y != NULL, "line %d: %s ran: %s", line, op_names[is_min], eager_error());
    if (!y) {
        eager_clear_error();
        return;
    }
    const graph_type *yt = eager_type(y);
    int same = yt->dtype == GRAPH_I64 && yt->ndim == (keepdim || !nd ? nd : nd - 1);
    for (int d = 0, e = 0; same && d < nd; d++) {
        if (d == ax && !keepdim)
            continue;
        same = yt->dim[e++] == (d == ax ? 1 : t->dim[d]);
    }
    CHECK_MSG(same, "line %d: %s output type", line, op_names[is_min]);
    const int64_t *got = eager_peek(y);
    const void *p = eager_peek(x);
    for (int64_t o = 0; same && o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * len * inner + j, best = 0;
            for (int64_t k = 1; k < len; k++) {
                int c = extremer(p, t->dtype, is_min, base + k * inner, base + best * inner);
                if (c > 0 || (c == 0 && last))
                    best = k;
            }
            if (got[o * inner + j] != best) {
                CHECK_MSG(0, "line %d: %s axis %lld keepdim %d select_last %d: output %lld "
                          "is %lld, want %lld", line, op_names[is_min], (long long)axis,
                          keepdim, last, (long long)(o * inner + j),
                          (long long)got[o * inner + j], (long long)best);
                same = 0;
                break;
            }
        }
    }
    eager_release(y);
}

/* Every axis (both spellings), keepdim and select_last, both ops. */
static void check_all(eager_tensor *x, int line)
{
    int nd = eager_type(x)->ndim;
    for (int is_min = 0; is_min < 2; is_min++)
        for (int a = 0; a < (nd ? nd : 1); a++)
            for (int m = 0; m < 4; m++) {
                check_case(is_min, x, a, m & 1, m >> 1, line);
                check_case(is_min, x, a - (nd ? nd : 1), !(m & 1), m >> 1, line);
            }
}

/* Seeded data: f32 whole numbers in [-span, span] (ties), integers in the
 * same range, or (wide) spread over the whole integer type. */
static eager_tensor *rand_tensor(graph_dtype dt, graph_ints shape, uint64_t seed, int span,
                                 int wide)
{
    int64_t n = 1;
    for (int i = 0; i < shape.n; i++)
        n *= shape.v[i];
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int64_t v = (int64_t)((s >> 33) % (uint64_t)(2 * span + 1)) - span;
        if (dt == GRAPH_F32)
            ((float *)buf)[i] = (float)v;
        else if (dt == GRAPH_I64)
            ((int64_t *)buf)[i] = wide ? (int64_t)s : v;
        else
            ((int32_t *)buf)[i] = wide ? (int32_t)(uint32_t)(s >> 32) : (int32_t)v;
    }
    eager_tensor *t = eager_from_data(dt, shape, buf);
    free(buf);
    return t;
}

static void test_shapes(void)
{
    static const graph_dtype dts[] = {GRAPH_F32, GRAPH_I64, GRAPH_I32};
    graph_ints shapes[] = {TG_SHAPE(7), TG_SHAPE(37), TG_SHAPE(3, 5), TG_SHAPE(4, 1, 6),
                           TG_SHAPE(2, 3, 5, 4), TG_SHAPE(1, 40, 1), TG_SHAPE(3, 33)};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int di = 0; di < 3; di++)
            for (int span = 1; span <= 50; span += 49) {
                eager_tensor *x = rand_tensor(dts[di], shapes[s], 10 * s + (uint64_t)di, span, 0);
                check_all(x, __LINE__);
                eager_release(x);
            }
    /* the whole range of the integer types, where a double would round */
    eager_tensor *xl = rand_tensor(GRAPH_I64, TG_SHAPE(5, 41), 3, 1, 1);
    eager_tensor *xi = rand_tensor(GRAPH_I32, TG_SHAPE(5, 41), 4, 1, 1);
    check_all(xl, __LINE__);
    check_all(xi, __LINE__);
    eager_release(xl), eager_release(xi);
    int64_t big[] = {INT64_MAX - 1, INT64_MIN, INT64_MAX, INT64_MAX, INT64_MIN, INT64_MAX - 1};
    eager_tensor *b = eager_from_data(GRAPH_I64, TG_SHAPE(6), big);
    check_all(b, __LINE__);
    eager_tensor *m = eager_argmax(b, 0, 0, 0), *n = eager_argmin(b, 0, 0, 1);
    CHECK(m && eager_item(m) == 2 && n && eager_item(n) == 4);
    eager_release(m), eager_release(n), eager_release(b);
    /* 0-d: the only index is 0, whatever keepdim */
    eager_tensor *sc = eager_scalar(NAN);
    check_all(sc, __LINE__);
    eager_tensor *s0 = eager_argmin(sc, -1, 1, 1);
    CHECK(s0 && eager_ndim(s0) == 0 && eager_item(s0) == 0);
    eager_release(s0), eager_release(sc);
}

static void test_special_values(void)
{
    /* rows: NaNs (first wins; last with select_last), infinities, -0/+0 */
    float v[] = {1, NAN, 3, NAN, 3, 0,
                 NAN, 1, 1, 2, NAN, 2,
                 -1, 5, 5, -INFINITY, 0, -INFINITY,
                 INFINITY, -0.0f, 0.0f, INFINITY, -0.0f, 0.0f};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(4, 6), v);
    check_all(x, __LINE__);
    struct { int is_min, last; int64_t want[4]; } known[] = {
        {0, 0, {1, 0, 1, 0}}, {0, 1, {3, 4, 2, 3}}, {1, 0, {1, 0, 3, 1}}, {1, 1, {3, 4, 5, 5}},
    };
    for (int k = 0; k < 4; k++) {
        eager_tensor *y = known[k].is_min ? eager_argmin(x, 1, 0, known[k].last)
                                          : eager_argmax(x, 1, 0, known[k].last);
        const int64_t *p = y ? eager_peek(y) : NULL;
        CHECK_MSG(p && !memcmp(p, known[k].want, sizeof known[k].want),
                  "known answers %s select_last %d", op_names[known[k].is_min], known[k].last);
        eager_release(y);
    }
    eager_release(x);
    /* all NaN, all -inf, and NaN in the vector body and in the tail of
     * long rows (LANES blocks) and columns */
    float nn[] = {NAN, NAN, NAN, -INFINITY, -INFINITY, -INFINITY};
    eager_tensor *xn = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), nn);
    check_all(xn, __LINE__);
    eager_release(xn);
    eager_tensor *r = eager_zeros(GRAPH_F32, TG_SHAPE(3, 1000));
    float *rp = eager_data_mut(r);
    rp[37] = NAN, rp[900] = NAN, rp[1000 + 999] = NAN, rp[2000 + 5] = INFINITY;
    rp[2000 + 998] = INFINITY, rp[2000 + 3] = -INFINITY;
    check_all(r, __LINE__);
    eager_release(r);
}

/* Big tensors on 1 and 4 threads: rows split per output and within a
 * row, column blocks (wider than one block), columns split along the
 * axis. */
static void test_large(void)
{
    struct { graph_ints shape; int axis; } cases[] = {
        {TG_SHAPE(64, 1000), 1},   /* rows, many outputs */
        {TG_SHAPE(2, 100003), 1},  /* rows, each split */
        {TG_SHAPE(200003), 0},     /* one row, split */
        {TG_SHAPE(1000, 64), 0},   /* columns */
        {TG_SHAPE(100000, 3), 0},  /* columns, split along the axis */
        {TG_SHAPE(20, 3000), 0},   /* columns wider than a block */
        {TG_SHAPE(9, 5000, 3), 1}, /* outer and inner */
        {TG_SHAPE(3, 7, 2500), 1}, /* outer, inner of blocks */
    };
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            eager_tensor *x = rand_tensor(GRAPH_F32, cases[c].shape, 100 + c, 1000, 0);
            eager_tensor *xi = rand_tensor(GRAPH_I32, cases[c].shape, 200 + c, 3, 0);
            /* a few NaNs, one of them late, so chunk merging meets them */
            float *p = eager_data_mut(x);
            int64_t n = eager_numel(x);
            p[n / 3] = NAN, p[n - 2] = NAN;
            for (int m = 0; m < 4; m++) {
                check_case(m & 1, x, cases[c].axis, 0, m >> 1, __LINE__);
                check_case(m & 1, xi, cases[c].axis, 1, m >> 1, __LINE__);
            }
            eager_release(x);
            eager_release(xi);
        }
    }
    eager_set_threads(1);
}

static void test_errors(void)
{
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 4));
    eager_tensor *xb = eager_zeros(GRAPH_BOOL, TG_SHAPE(2));
    eager_tensor *e = eager_zeros(GRAPH_F32, TG_SHAPE(2, 0));
    eager_tensor *s = eager_scalar(1.0);
    CHECK_FAILS(eager_argmax(x, 3, 1, 0), "argmax: [2,3,4]: axis 3 out of range for 3 dims (test_argmax.c:");
    CHECK_FAILS(eager_argmin(x, -4, 1, 0), "argmin: [2,3,4]: axis -4 out of range for 3 dims");
    CHECK_FAILS(eager_argmax(x, 0, 2, 0), "keepdim must be 0 or 1, got 2");
    CHECK_FAILS(eager_argmin(x, 0, 1, -1), "select_last must be 0 or 1, got -1");
    CHECK_FAILS(eager_argmax(xb, 0, 1, 0), "argmax: bool[2]: dtype bool not supported");
    CHECK_FAILS(eager_argmax(e, 1, 0, 0), "argmax: [2,0]: argmax over an empty axis");
    CHECK_FAILS(eager_argmin(e, -1, 1, 1), "argmin: [2,0]: argmin over an empty axis");
    CHECK_FAILS(eager_argmax(s, 1, 1, 0), "argmax: []: axis 1 out of range for 0 dims");
    /* an empty axis with an empty output is fine (as reduce_max) */
    eager_tensor *ok = eager_argmax(e, 0, 0, 0);
    CHECK(ok && eager_ndim(ok) == 1 && eager_dim(ok, 0) == 0);
    eager_release(ok);
    CHECK(eager_argmin(NULL, 0, 1, 0) == NULL);
    CHECK_ERROR("argmin: input 0 is NULL");
    eager_clear_error();
    eager_release(x), eager_release(xb), eager_release(e), eager_release(s);
}

/* ---- the op in graphs ---- */

static const char *const ir_arg =
    "graph t(%x: f32[4,6]) -> (a: i64[4,1], b: i64[6]) {\n"
    "  %a: i64[4,1] = argmax(%x) {axis=-1, select_last=1}\n"
    "  %b: i64[6] = argmin(%x) {keepdim=0}\n"
    "  return a = %a\n  return b = %b\n}\n";

/* Attributes survive text IR, .tgraph and ONNX; the results are the same. */
static void test_round_trips(void)
{
    graph *g = parse(ir_arg);
    if (!g)
        return;
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    po.provenance = 0, po.comments = 0;
    char *text = graph_print_str(g, &po, NULL);
    CHECK(text && strstr(text, "argmax(%x) {axis=-1, select_last=1}") &&
          strstr(text, "argmin(%x) {keepdim=0}"));
    graph *h = text ? parse(text) : NULL;
    void *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    CHECK_MSG(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK, "save: %s", err);
    graph *f = buf ? format_load_mem(buf, len, "argmax.tgraph", err, sizeof err) : NULL;
    CHECK_MSG(f != NULL, "load: %s", err);
    free(buf);
    buf = NULL;
    /* ONNX: ArgMax / ArgMin and their attributes come back as they went */
    CHECK_MSG(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "ONNX export: %s", err);
    graph *on = buf ? format_onnx_load_mem(buf, len, "argmax.onnx", NULL, err, sizeof err) : NULL;
    CHECK_MSG(on != NULL, "ONNX import: %s", err);
    int32_t na = on ? find_op(on, GRAPH_OP_argmax) : -1;
    int32_t ni = on ? find_op(on, GRAPH_OP_argmin) : -1;
    const graph_argmax_attrs *aa = na >= 0 ? tg_node_attrs(&on->nodes[na]) : NULL;
    const graph_argmin_attrs *ai = ni >= 0 ? tg_node_attrs(&on->nodes[ni]) : NULL;
    CHECK(aa && aa->axis == -1 && aa->keepdim == 1 && aa->select_last == 1);
    CHECK(ai && ai->axis == 0 && ai->keepdim == 0 && ai->select_last == 0);
    eager_pool_push();
    float xv[24];
    for (int i = 0; i < 24; i++)
        xv[i] = (float)((i * 7) % 5);
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(4, 6), xv);
    eager_tensor *want[2] = {eager_argmax(x, -1, 1, 1), eager_argmin(x, 0, 0, 0)};
    const graph *gs[4] = {g, h, f, on};
    for (int k = 0; k < 4; k++) {
        eager_tensor *out[2] = {NULL, NULL};
        if (!gs[k] || !interp(gs[k], &x, out))
            continue;
        for (int i = 0; i < 2; i++)
            CHECK_MSG(want[i] && out[i] && !memcmp(eager_peek(out[i]), eager_peek(want[i]),
                                                   eager_nbytes(want[i])),
                      "round trip %d output %d", k, i);
        eager_release(out[0]), eager_release(out[1]);
    }
    eager_pool_pop();
    free(buf);
    free(text);
    graph_free(g), graph_free(h), graph_free(f), graph_free(on);
}

/* argmax of a constant folds at -O1; the i64 result feeds an add. */
static void test_fold(void)
{
    graph *g = parse("graph t(%x: i64[3]) -> (y: i64[3]) {\n"
                     "  %c: f32[3,4] = const [1, 9, 9, 2, 5, 5, 5, 5, -1, -3, -2, -3]\n"
                     "  %a: i64[3] = argmax(%c) {axis=1, keepdim=0, select_last=1}\n"
                     "  %y: i64[3] = add(%x, %a)\n  return y = %y\n}\n");
    if (!g)
        return;
    opt_options o = opt_default_options();
    o.level = 1;
    char err[512] = "";
    CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O1: %s", err);
    CHECK(count_op(g, GRAPH_OP_argmax) == 0 && count_op(g, GRAPH_OP_add) == 1);
    eager_pool_push();
    int64_t xv[3] = {10, 20, 30}, want[3] = {12, 23, 30};
    eager_tensor *x = eager_from_data(GRAPH_I64, TG_SHAPE(3), xv), *y = NULL;
    if (interp(g, &x, &y))
        CHECK(!memcmp(eager_peek(y), want, sizeof want));
    eager_release(y); /* the interpreter's outputs are ours, not the pool's */
    eager_pool_pop();
    graph_free(g);
}

/*
 * -O3 turns the conv chain blocked; argmax over the channels must read the
 * plain layout back.  Checked against the optimized graph's own conv
 * output (an output too), so conv rounding cannot move a tie.  Then the
 * graph replays on CPU with the same answers.
 */
static void test_o3_and_replay(void)
{
    static const char *text =
        "graph t(%x: f32[2,16,6,6], %w: f32[32,16,3,3], %w2: f32[32,32,3,3]) ->"
        " (c: f32[2,32,6,6], a: i64[2,6,6]) {\n"
        "  %c0: f32[2,32,6,6] = conv2d(%x, %w) {stride=[1,1], padding=[1,1], dilation=[1,1]}\n"
        "  %r: f32[2,32,6,6] = relu(%c0)\n"
        "  %c: f32[2,32,6,6] = conv2d(%r, %w2) {stride=[1,1], padding=[1,1], dilation=[1,1]}\n"
        "  %a: i64[2,6,6] = argmin(%c) {axis=1, keepdim=0}\n"
        "  return c = %c\n  return a = %a\n}\n";
    graph *g = parse(text);
    if (!g)
        return;
    opt_options o = opt_default_options();
    o.level = 3;
    char err[512] = "";
    CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    CHECK(count_op(g, GRAPH_OP_conv2d_blk) == (test_blocked_convs() ? 2 : 0) &&
          count_op(g, GRAPH_OP_argmin) == 1);
    eager_pool_push();
    eager_tensor *in[3] = {eager_rand_uniform(TG_SHAPE(2, 16, 6, 6), 1, -1, 1),
                           eager_rand_uniform(TG_SHAPE(32, 16, 3, 3), 2, -1, 1),
                           eager_rand_uniform(TG_SHAPE(32, 32, 3, 3), 3, -1, 1)};
    eager_tensor *out[2] = {NULL, NULL};
    if (interp(g, in, out)) {
        eager_tensor *want = eager_argmin(out[0], 1, 0, 0);
        CHECK(want && !memcmp(eager_peek(out[1]), eager_peek(want), eager_nbytes(want)));
        replay_opts ro = {.threads = 1};
        replay_plan *p = replay_compile(g, &ro, err, sizeof err);
        CHECK_MSG(p != NULL, "replay compiles: %s", err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        replay_tensor ri[3], rout[2];
        for (int i = 0; i < 3; i++)
            ri[i] = (replay_tensor){.type = *eager_type(in[i]), .input = eager_peek(in[i])};
        memset(rout, 0, sizeof rout);
        tg_status st = s ? replay_run(s, ri, 3, rout, 2) : TG_ERR_NOMEM;
        CHECK_MSG(st == TG_OK, "replay runs: %s", s ? replay_session_error(s) : "no session");
        if (st == TG_OK)
            CHECK(rout[1].type.dtype == GRAPH_I64 &&
                  !memcmp(rout[1].data, eager_peek(out[1]), eager_nbytes(out[1])));
        replay_session_free(s);
        replay_plan_free(p);
    }
    eager_release(out[0]), eager_release(out[1]);
    eager_pool_pop();
    graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    test_shapes();
    test_special_values();
    test_large();
    test_errors();
    test_round_trips();
    test_fold();
    test_o3_and_replay();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
