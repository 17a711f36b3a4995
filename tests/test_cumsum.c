/*
 * test_cumsum.c - cumsum against a naive reference written here: for
 * every element, the sum of the elements of its line it covers (those at
 * or before it, or strictly before it with exclusive; after instead of
 * before with reverse) added up from scratch in the order of the sums,
 * in f32 for f32 (the op's documented order, so the bits must match) and
 * in unsigned arithmetic for the integers (two's complement wrap).  Shapes
 * cover 0-d, 1-D to 4-D, size-1 axes, empty dims (on the axis and off
 * it), every axis in both spellings, the four exclusive / reverse
 * combinations, each dtype; integers over the whole range of their type,
 * so sums wrap; known answers, -0 and NaN; large tensors on 1 and 4
 * threads (rows, columns, blocks of columns wider than one task).  Then
 * every error with its exact message, and the op through the rest of the
 * system: text IR, .tgraph and ONNX round trips, constant folding, the
 * RoBERTa position ids pattern at -O3 and replay on CPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
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

/* Element `at` of the reference: the covered elements of its line, from
 * the first one summed (index 0, or len - 1 with reverse) towards k. */
static void ref_elem(const void *x, void *y, graph_dtype dt, int64_t base, int64_t len,
                     int64_t inner, int64_t k, int excl, int rev)
{
    int64_t from = rev ? len - 1 : 0, dir = rev ? -1 : 1;
    int64_t count = (rev ? len - 1 - k : k) + (excl ? 0 : 1); /* elements covered */
    int64_t at = base + k * inner;
    if (dt == GRAPH_F32) {
        const float *xf = x;
        float s = 0;
        for (int64_t m = 0; m < count; m++) {
            float v = xf[base + (from + m * dir) * inner];
            s = m == 0 && !excl ? v : s + v; /* inclusive: starts at x (-0 stays) */
        }
        ((float *)y)[at] = s;
    } else if (dt == GRAPH_I64) {
        uint64_t s = 0;
        for (int64_t m = 0; m < count; m++)
            s += (uint64_t)((const int64_t *)x)[base + (from + m * dir) * inner];
        ((int64_t *)y)[at] = (int64_t)s;
    } else {
        uint32_t s = 0;
        for (int64_t m = 0; m < count; m++)
            s += (uint32_t)((const int32_t *)x)[base + (from + m * dir) * inner];
        ((int32_t *)y)[at] = (int32_t)s;
    }
}

/* Runs cumsum and compares shape, dtype and every element's bits with
 * the reference (for lines longer than 64: one running sum per line, the
 * same order, in place of the sums from scratch). */
static void check_case(eager_tensor *x, int64_t axis, int excl, int rev, int line)
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
    eager_tensor *y = eager_cumsum(x, axis, excl, rev);
    CHECK_MSG(y != NULL, "line %d: cumsum ran: %s", line, eager_error());
    if (!y) {
        eager_clear_error();
        return;
    }
    const graph_type *yt = eager_type(y);
    int same = yt->dtype == t->dtype && yt->ndim == nd;
    for (int d = 0; same && d < nd; d++)
        same = yt->dim[d] == t->dim[d];
    CHECK_MSG(same, "line %d: cumsum output type", line);
    size_t es = graph_dtype_size(t->dtype), nb = (size_t)eager_numel(x) * es;
    void *want = malloc(nb ? nb : 1);
    const void *p = eager_peek(x);
    if (len > 64 && want) {
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t base = o * len * inner + j;
                for (int64_t q = 0; q < len; q++) {
                    int64_t k = rev ? len - 1 - q : q, prev = rev ? k + 1 : k - 1;
                    int64_t at = base + k * inner, pat = base + prev * inner;
                    /* the first: x (or 0); then the previous sum + the new element */
                    int64_t src = q == 0 ? at : excl ? pat : at;
                    if (t->dtype == GRAPH_F32) {
                        const float *xf = p;
                        float *w = want;
                        w[at] = q == 0 ? (excl ? 0.0f : xf[at]) : w[pat] + xf[src];
                    } else if (t->dtype == GRAPH_I64) {
                        const int64_t *xl = p;
                        int64_t *w = want;
                        w[at] = q == 0 ? (excl ? 0 : xl[at])
                                       : (int64_t)((uint64_t)w[pat] + (uint64_t)xl[src]);
                    } else {
                        const int32_t *xi = p;
                        int32_t *w = want;
                        w[at] = q == 0 ? (excl ? 0 : xi[at])
                                       : (int32_t)((uint32_t)w[pat] + (uint32_t)xi[src]);
                    }
                }
            }
    } else {
        for (int64_t o = 0; want && o < outer; o++)
            for (int64_t j = 0; j < inner; j++)
                for (int64_t k = 0; k < len; k++)
                    ref_elem(p, want, t->dtype, o * len * inner + j, len, inner, k, excl, rev);
    }
    const unsigned char *got = eager_peek(y);
    for (size_t i = 0; same && want && i < nb; i += es)
        if (memcmp(got + i, (unsigned char *)want + i, es)) {
            double g = t->dtype == GRAPH_F32 ? ((const float *)got)[i / es]
                       : t->dtype == GRAPH_I64 ? (double)((const int64_t *)got)[i / es]
                                               : ((const int32_t *)got)[i / es];
            double w = t->dtype == GRAPH_F32 ? ((const float *)want)[i / es]
                       : t->dtype == GRAPH_I64 ? (double)((const int64_t *)want)[i / es]
                                               : ((const int32_t *)want)[i / es];
            CHECK_MSG(0, "line %d: cumsum %s axis %lld exclusive %d reverse %d: element %zu "
                      "is %.9g, want %.9g", line, graph_dtype_name(t->dtype), (long long)axis,
                      excl, rev, i / es, g, w);
            break;
        }
    free(want);
    eager_release(y);
}

/* Every axis (both spellings), every exclusive / reverse combination. */
static void check_all(eager_tensor *x, int line)
{
    int nd = eager_type(x)->ndim, n = nd ? nd : 1;
    for (int a = 0; a < n; a++)
        for (int m = 0; m < 4; m++) {
            check_case(x, a, m & 1, m >> 1, line);
            check_case(x, a - n, m & 1, m >> 1, line);
        }
}

/* Seeded data: f32 in [-span, span) with fractions (so the order of the
 * sums shows in the bits), integers in [-span, span], or (wide) spread
 * over the whole integer type, so sums wrap. */
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
            ((float *)buf)[i] = (float)v + (float)((s >> 20) & 1023) / 1024.0f;
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
    graph_ints shapes[] = {TG_SHAPE(7), TG_SHAPE(1), TG_SHAPE(3, 5), TG_SHAPE(4, 1, 6),
                           TG_SHAPE(2, 3, 5, 4), TG_SHAPE(1, 40, 1), TG_SHAPE(3, 33),
                           TG_SHAPE(2, 0, 3), TG_SHAPE(0), TG_SHAPE(3, 0)};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int di = 0; di < 3; di++)
            for (int wide = 0; wide < (dts[di] == GRAPH_F32 ? 1 : 2); wide++) {
                eager_tensor *x = rand_tensor(dts[di], shapes[s], 10 * s + (uint64_t)di, 50, wide);
                check_all(x, __LINE__);
                eager_release(x);
            }
    /* 0-d: a line of one (exclusive: 0) */
    eager_tensor *sc = eager_scalar(-2.5);
    check_all(sc, __LINE__);
    eager_tensor *s0 = eager_cumsum(sc, -1, 0, 1), *s1 = eager_cumsum(sc, 0, 1, 0);
    CHECK(s0 && eager_ndim(s0) == 0 && eager_item(s0) == -2.5);
    CHECK(s1 && eager_ndim(s1) == 0 && eager_item(s1) == 0);
    eager_release(s0), eager_release(s1), eager_release(sc);
}

static void test_known(void)
{
    /* [[1,2,3,4],[10,20,30,40]] along axis 1, each combination */
    float v[] = {1, 2, 3, 4, 10, 20, 30, 40};
    struct { int excl, rev; float want[8]; } known[] = {
        {0, 0, {1, 3, 6, 10, 10, 30, 60, 100}},
        {1, 0, {0, 1, 3, 6, 0, 10, 30, 60}},
        {0, 1, {10, 9, 7, 4, 100, 90, 70, 40}},
        {1, 1, {9, 7, 4, 0, 90, 70, 40, 0}},
    };
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(2, 4), v);
    for (int k = 0; k < 4; k++) {
        eager_tensor *y = eager_cumsum(x, 1, known[k].excl, known[k].rev);
        CHECK_MSG(y && !memcmp(eager_peek(y), known[k].want, sizeof known[k].want),
                  "known answers exclusive %d reverse %d", known[k].excl, known[k].rev);
        eager_release(y);
    }
    /* axis 0 (the default): columns */
    float w0[] = {1, 2, 3, 4, 11, 22, 33, 44};
    eager_tensor *y0 = eager_cumsum(x, 0, 0, 0);
    CHECK(y0 && !memcmp(eager_peek(y0), w0, sizeof w0));
    eager_release(y0), eager_release(x);
    /* -0 stays -0 inclusive (x, not 0 + x), becomes +0 after an exclusive
     * 0 + -0; NaN and infinities propagate from where they enter */
    float z[] = {-0.0f, -0.0f, 1, NAN, 2, INFINITY, -INFINITY, 3};
    eager_tensor *xz = eager_from_data(GRAPH_F32, TG_SHAPE(2, 4), z);
    check_all(xz, __LINE__);
    eager_tensor *yz = eager_cumsum(xz, 1, 0, 0), *ye = eager_cumsum(xz, 1, 1, 0);
    const float *pz = yz ? eager_peek(yz) : NULL, *pe = ye ? eager_peek(ye) : NULL;
    CHECK(pz && signbit(pz[0]) && signbit(pz[1]) && pz[2] == 1 && isnan(pz[3]));
    CHECK(pz && pz[4] == 2 && pz[5] == INFINITY && isnan(pz[6]) && isnan(pz[7]));
    CHECK(pe && !signbit(pe[0]) && !signbit(pe[1]) && !signbit(pe[2]) && pe[3] == 1);
    eager_release(yz), eager_release(ye), eager_release(xz);
    /* integers wrap in two's complement */
    int64_t l[] = {INT64_MAX, 1, INT64_MIN, -1};
    int64_t lw[] = {INT64_MAX, INT64_MIN, 0, -1};
    eager_tensor *xl = eager_from_data(GRAPH_I64, TG_SHAPE(4), l), *yl = eager_cumsum(xl, 0, 0, 0);
    CHECK(yl && !memcmp(eager_peek(yl), lw, sizeof lw));
    int32_t i[] = {INT32_MAX, 2, INT32_MIN, INT32_MIN};
    int32_t iw[] = {INT32_MIN + 1, 2, 0, INT32_MIN}; /* reverse: sums from the end */
    eager_tensor *xi = eager_from_data(GRAPH_I32, TG_SHAPE(4), i), *yi = eager_cumsum(xi, 0, 0, 1);
    CHECK(yi && !memcmp(eager_peek(yi), iw, sizeof iw));
    eager_release(xl), eager_release(yl), eager_release(xi), eager_release(yi);
}

/* Big tensors on 1 and 4 threads: many short rows, a long row, columns,
 * columns wider than one task's block, outer and inner together. */
static void test_large(void)
{
    struct { graph_ints shape; int axis; } cases[] = {
        {TG_SHAPE(640, 100), 1},   /* rows */
        {TG_SHAPE(100003), 0},     /* one long row */
        {TG_SHAPE(1000, 64), 0},   /* columns */
        {TG_SHAPE(20, 3000), 0},   /* columns wider than a block */
        {TG_SHAPE(9, 500, 13), 1}, /* outer and inner */
        {TG_SHAPE(3, 7, 2500), 1}, /* outer, inner of blocks */
    };
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            eager_tensor *x = rand_tensor(GRAPH_F32, cases[c].shape, 100 + c, 1000, 0);
            eager_tensor *xi = rand_tensor(GRAPH_I32, cases[c].shape, 200 + c, 3, 1);
            eager_tensor *xl = rand_tensor(GRAPH_I64, cases[c].shape, 300 + c, 3, 1);
            for (int m = 0; m < 4; m++) {
                check_case(x, cases[c].axis, m & 1, m >> 1, __LINE__);
                check_case(xi, cases[c].axis - (int)cases[c].shape.n, m & 1, m >> 1, __LINE__);
                check_case(xl, cases[c].axis, m & 1, m >> 1, __LINE__);
            }
            eager_release(x), eager_release(xi), eager_release(xl);
        }
    }
    eager_set_threads(1);
}

static void test_errors(void)
{
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 4));
    eager_tensor *xb = eager_zeros(GRAPH_BOOL, TG_SHAPE(2));
    eager_tensor *s = eager_scalar(1.0);
    CHECK_FAILS(eager_cumsum(x, 3, 0, 0), "cumsum: [2,3,4]: axis 3 out of range for 3 dims (test_cumsum.c:");
    CHECK_FAILS(eager_cumsum(x, -4, 1, 1), "cumsum: [2,3,4]: axis -4 out of range for 3 dims");
    CHECK_FAILS(eager_cumsum(x, 0, 2, 0), "cumsum: [2,3,4]: exclusive must be 0 or 1, got 2");
    CHECK_FAILS(eager_cumsum(x, 0, 0, -1), "cumsum: [2,3,4]: reverse must be 0 or 1, got -1");
    CHECK_FAILS(eager_cumsum(xb, 0, 0, 0), "cumsum: bool[2]: dtype bool not supported");
    CHECK_FAILS(eager_cumsum(s, 1, 0, 0), "cumsum: []: axis 1 out of range for 0 dims");
    CHECK(eager_cumsum(NULL, 0, 0, 0) == NULL);
    CHECK_ERROR("cumsum: input 0 is NULL");
    eager_clear_error();
    eager_release(x), eager_release(xb), eager_release(s);
}

/* ---- the op in graphs ---- */

static const char *const ir_cumsum =
    "graph t(%x: f32[4,6]) -> (a: f32[4,6], b: f32[4,6]) {\n"
    "  %a: f32[4,6] = cumsum(%x) {axis=-1, exclusive=1, reverse=1}\n"
    "  %b: f32[4,6] = cumsum(%x)\n"
    "  return a = %a\n  return b = %b\n}\n";

/* Attributes survive text IR, .tgraph and ONNX; the results are the same. */
static void test_round_trips(void)
{
    graph *g = parse(ir_cumsum);
    if (!g)
        return;
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    po.provenance = 0, po.comments = 0;
    char *text = graph_print_str(g, &po, NULL);
    CHECK(text && strstr(text, "cumsum(%x) {axis=-1, exclusive=1, reverse=1}") &&
          strstr(text, "cumsum(%x)\n"));
    graph *h = text ? parse(text) : NULL;
    void *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    CHECK_MSG(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK, "save: %s", err);
    graph *f = buf ? format_load_mem(buf, len, "cumsum.tgraph", err, sizeof err) : NULL;
    CHECK_MSG(f != NULL, "load: %s", err);
    free(buf);
    buf = NULL;
    /* ONNX: CumSum with its axis input and attributes comes back as it went */
    CHECK_MSG(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "ONNX export: %s", err);
    graph *on = buf ? format_onnx_load_mem(buf, len, "cumsum.onnx", NULL, err, sizeof err) : NULL;
    CHECK_MSG(on != NULL, "ONNX import: %s", err);
    CHECK(on && count_op(on, GRAPH_OP_cumsum) == 2);
    for (int32_t i = 0; on && i < on->nnodes; i++) {
        if (on->nodes[i].op != GRAPH_OP_cumsum)
            continue;
        const graph_cumsum_attrs *a = tg_node_attrs(&on->nodes[i]);
        CHECK((a->axis == -1 && a->exclusive == 1 && a->reverse == 1) ||
              (a->axis == 0 && a->exclusive == 0 && a->reverse == 0));
    }
    eager_pool_push();
    float xv[24];
    for (int i = 0; i < 24; i++)
        xv[i] = (float)((i * 7) % 5) + 0.1f * (float)i;
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(4, 6), xv);
    eager_tensor *want[2] = {eager_cumsum(x, -1, 1, 1), eager_cumsum(x, 0, 0, 0)};
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

/* cumsum of a constant folds at -O1; the i64 result feeds an add. */
static void test_fold(void)
{
    graph *g = parse("graph t(%x: i64[2,3]) -> (y: i64[2,3]) {\n"
                     "  %c: i64[2,3] = const [1, 2, 3, 4, 5, 6]\n"
                     "  %s: i64[2,3] = cumsum(%c) {axis=1, reverse=1}\n"
                     "  %y: i64[2,3] = add(%x, %s)\n  return y = %y\n}\n");
    if (!g)
        return;
    opt_options o = opt_default_options();
    o.level = 1;
    char err[512] = "";
    CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O1: %s", err);
    CHECK(count_op(g, GRAPH_OP_cumsum) == 0 && count_op(g, GRAPH_OP_add) == 1);
    eager_pool_push();
    int64_t xv[6] = {10, 20, 30, 40, 50, 60}, want[6] = {16, 25, 33, 55, 61, 66};
    eager_tensor *x = eager_from_data(GRAPH_I64, TG_SHAPE(2, 3), xv), *y = NULL;
    if (interp(g, &x, &y))
        CHECK(!memcmp(eager_peek(y), want, sizeof want));
    eager_release(y); /* the interpreter's outputs are ours, not the pool's */
    eager_pool_pop();
    graph_free(g);
}

/*
 * RoBERTa's position ids: cumsum of the i64 attention mask (computed at
 * run time) minus one, masked, gathered from a position table.  At -O3
 * and replayed on CPU the ids and the embedding are the interpreter's of
 * the unoptimized graph, bit for bit.
 */
static void test_o3_and_replay(void)
{
    static const char *text =
        "graph t(%m: i64[2,7], %tab: f32[9,4]) -> (p: i64[2,7], e: f32[2,7,4]) {\n"
        "  %c: i64[2,7] = cumsum(%m) {axis=1}\n"
        "  %p0: i64[2,7] = mul(%c, %m)\n"
        "  %one: i64[] = const [1]\n"
        "  %p1: i64[2,7] = add(%p0, %one)\n"
        "  %p: i64[2,7] = sub(%p1, %one)\n"
        "  %e: f32[2,7,4] = gather(%tab, %p)\n"
        "  return p = %p\n  return e = %e\n}\n";
    graph *g0 = parse(text), *g = parse(text);
    if (!g || !g0) {
        graph_free(g0), graph_free(g);
        return;
    }
    opt_options o = opt_default_options();
    o.level = 3;
    char err[512] = "";
    CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    CHECK(count_op(g, GRAPH_OP_cumsum) == 1);
    eager_pool_push();
    int64_t mv[14] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1};
    int64_t pw[14] = {1, 2, 3, 4, 5, 0, 0, 1, 2, 3, 4, 5, 6, 7};
    eager_tensor *in[2] = {eager_from_data(GRAPH_I64, TG_SHAPE(2, 7), mv),
                           eager_rand_uniform(TG_SHAPE(9, 4), 1, -1, 1)};
    eager_tensor *want[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    if (interp(g0, in, want) && interp(g, in, out)) {
        CHECK(!memcmp(eager_peek(want[0]), pw, sizeof pw));
        for (int i = 0; i < 2; i++)
            CHECK_MSG(!memcmp(eager_peek(out[i]), eager_peek(want[i]), eager_nbytes(want[i])),
                      "-O3 output %d", i);
        replay_opts ro = {.threads = 1};
        replay_plan *p = replay_compile(g, &ro, err, sizeof err);
        CHECK_MSG(p != NULL, "replay compiles: %s", err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        replay_tensor ri[2], rout[2];
        for (int i = 0; i < 2; i++)
            ri[i] = (replay_tensor){.type = *eager_type(in[i]), .input = eager_peek(in[i])};
        memset(rout, 0, sizeof rout);
        tg_status st = s ? replay_run(s, ri, 2, rout, 2) : TG_ERR_NOMEM;
        CHECK_MSG(st == TG_OK, "replay runs: %s", s ? replay_session_error(s) : "no session");
        for (int i = 0; st == TG_OK && i < 2; i++)
            CHECK_MSG(!memcmp(rout[i].data, eager_peek(want[i]), eager_nbytes(want[i])),
                      "replay output %d", i);
        replay_session_free(s);
        replay_plan_free(p);
    }
    for (int i = 0; i < 2; i++)
        eager_release(want[i]), eager_release(out[i]);
    eager_pool_pop();
    graph_free(g0), graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    test_shapes();
    test_known();
    test_large();
    test_errors();
    test_round_trips();
    test_fold();
    test_o3_and_replay();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
