/*
 * test_round.c - sign, floor, ceil and round (half to even) against
 * naive references written here: floorf and ceilf from libm, round as
 * floor plus a comparison of the remainder with one half (ties to the
 * even neighbour, the sign of a zero result taken from x), sign by cases.
 * Every comparison is bit for bit (NaN against NaN).
 *
 *   - known answers, signed zeros included (what ONNX Runtime 1.30 gives
 *     for Floor, Ceil, Round and Sign on the same inputs);
 *   - a sweep of every 1021st float (both signs, NaN, infinities,
 *     subnormals) plus the edges, on two threads;
 *   - sizes 1, 15, 16, 17 and 1000 with each edge value at every
 *     position (vector bodies, masked and scalar tails);
 *   - sign on i32 and i64, the extremes of the type included;
 *   - the errors, with their messages;
 *   - the optimizer: floor(floor x) and the like simplified, a constant
 *     rounded at -O1, and an -O3 chain (fused) replayed on CPU by the
 *     register, streaming and tile paths of the fused kernel and at -O0
 *     (single kernels, in place), against the reference.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "graph_query.h"
#include "op_test_util.h"
#include "optimize/opt.h"
#include "replay/replay.h"

/* ---- the references ---- */

static float ref_floor(float x) { return floorf(x); }
static float ref_ceil(float x) { return ceilf(x); }

/* Half to even without nearbyintf (so without the rounding mode): the
 * remainder x - floor(x) is exact for |x| < 2^23, and 0 above. */
static float ref_round(float x)
{
    if (!isfinite(x))
        return x;
    float r = floorf(x), d = x - r;
    if (d > 0.5f || (d == 0.5f && fmodf(r, 2.0f) != 0.0f))
        r += 1.0f;
    return r == 0.0f ? copysignf(0.0f, x) : r;
}

static float ref_sign(float x)
{
    if (isnan(x))
        return x;
    return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f;
}

typedef struct round_op {
    const char *name;
    eager_tensor *(*run)(eager_tensor *x);
    float (*ref)(float);
} round_op;

static eager_tensor *run_floor(eager_tensor *x) { return eager_floor(x); }
static eager_tensor *run_ceil(eager_tensor *x) { return eager_ceil(x); }
static eager_tensor *run_round(eager_tensor *x) { return eager_round(x); }
static eager_tensor *run_sign(eager_tensor *x) { return eager_sign(x); }

static const round_op ops[] = {
    {"floor", run_floor, ref_floor},
    {"ceil", run_ceil, ref_ceil},
    {"round", run_round, ref_round},
    {"sign", run_sign, ref_sign},
};
enum { NOPS = sizeof ops / sizeof ops[0] };

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* The values where these ops are easy to get wrong: NaN, zeros of both
 * signs, infinities, halves, the largest float below 0.5 (floor(x + 0.5)
 * rounds it to 1), 2^23 and its neighbours (integral from there on; the
 * 2^23 trick breaks there), 2^24 - 1, huge values, subnormals. */
static const float edges[] = {
    NAN, -NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f,
    -2.5f, 0.49999997f, -0.49999997f, 0.50000006f, 0.3f, -0.3f, 0.7f, -0.7f, 1.0f, -1.0f,
    8388607.5f, -8388607.5f, 8388608.0f, -8388608.0f, 8388609.0f, -8388609.0f, 4194303.75f,
    16777215.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, 1e-40f, -1e-40f, FLT_MIN, -FLT_MIN,
    0x1p-149f, -0x1p-149f, 123.25f, -123.75f,
};
enum { NEDGES = sizeof edges / sizeof edges[0] };

/* Compares op's output over x[0..n) with its reference; names the first
 * few differences. */
static void check_op(const round_op *op, const float *x, const float *got, int64_t n,
                     const char *where)
{
    long bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float want = op->ref(x[i]);
        if (!same_bits(got[i], want) && bad++ < 3)
            CHECK_MSG(0, "%s: %s(%a) = %a, want %a (element %lld)", where, op->name,
                      (double)x[i], (double)got[i], (double)want, (long long)i);
    }
    CHECK_MSG(bad == 0, "%s: %s: %ld elements differ", where, op->name, bad);
}

/* ---- eager ---- */

/* Known answers, written out (the outputs of ONNX Runtime 1.30 for these
 * inputs): a check on the references themselves. */
static void test_known(void)
{
    static const float x[] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 0.5f, 1.5f, 2.5f, -0.5f,
                              -2.5f, -0.3f, 0.49999997f, 8388609.0f, 1e-40f, -1e-40f};
    enum { N = sizeof x / sizeof x[0] };
    static const float want[NOPS][N] = {
        {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 0, 1, 2, -1, -3, -1, 0, 8388609.0f, 0, -1},
        {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1, 2, 3, -0.0f, -2, -0.0f, 1, 8388609.0f, 1,
         -0.0f},
        {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 0, 2, 2, -0.0f, -2, -0.0f, 0, 8388609.0f, 0,
         -0.0f},
        {NAN, 0.0f, 0.0f, 1, -1, 1, 1, 1, -1, -1, -1, 1, 1, 1, -1},
    };
    eager_pool_push();
    eager_tensor *t = eager_from_data(GRAPH_F32, TG_SHAPE(N), x);
    for (int k = 0; k < NOPS; k++) {
        eager_tensor *y = ops[k].run(t);
        CHECK_MSG(y != NULL, "%s runs: %s", ops[k].name, eager_error());
        const float *g = y ? eager_peek(y) : NULL;
        for (int i = 0; i < N; i++) {
            CHECK_MSG(same_bits(ops[k].ref(x[i]), want[k][i]), "reference %s(%a) = %a, want %a",
                      ops[k].name, (double)x[i], (double)ops[k].ref(x[i]), (double)want[k][i]);
            CHECK_MSG(!g || same_bits(g[i], want[k][i]), "%s(%a) = %a, want %a", ops[k].name,
                      (double)x[i], g ? (double)g[i] : 0.0, (double)want[k][i]);
        }
    }
    eager_pool_pop();
}

/* Every 1021st bit pattern and the edges, on two threads (far above
 * EAGER_PAR_MIN, so the loop is split). */
static void test_sweep(void)
{
    const int64_t stride = 1021, nsweep = 0x100000000LL / stride + 1;
    int64_t n = 0;
    float *v = malloc((size_t)(nsweep + NEDGES) * sizeof *v);
    for (int64_t u = 0; u < 0x100000000LL; u += stride) {
        uint32_t b = (uint32_t)u;
        memcpy(&v[n++], &b, sizeof b);
    }
    for (int i = 0; i < NEDGES; i++)
        v[n++] = edges[i];
    eager_set_threads(2);
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(n), v);
    for (int k = 0; k < NOPS; k++) {
        eager_tensor *y = ops[k].run(x);
        CHECK_MSG(y != NULL, "%s runs: %s", ops[k].name, eager_error());
        if (y)
            check_op(&ops[k], v, eager_peek(y), n, "sweep");
    }
    eager_pool_pop();
    eager_set_threads(1);
    free(v);
}

/* Sizes around the 16-wide vector, each edge value at every position. */
static void test_sizes(void)
{
    static const int64_t sizes[] = {1, 15, 16, 17, 1000};
    float x[1000];
    char where[48];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t n = sizes[s];
        for (int rot = 0; rot < NEDGES; rot++) {
            for (int64_t i = 0; i < n; i++)
                x[i] = edges[(i + rot) % NEDGES];
            eager_pool_push();
            eager_tensor *t = eager_from_data(GRAPH_F32, TG_SHAPE(n), x);
            snprintf(where, sizeof where, "size %lld, rotation %d", (long long)n, rot);
            for (int k = 0; k < NOPS; k++) {
                eager_tensor *y = ops[k].run(t);
                CHECK_MSG(y && eager_numel(y) == n, "%s: %s runs", where, ops[k].name);
                if (y)
                    check_op(&ops[k], x, eager_peek(y), n, where);
            }
            eager_pool_pop();
        }
    }
    /* 0-d and empty */
    eager_pool_push();
    eager_tensor *s0 = eager_round(eager_scalar(-2.5));
    CHECK(s0 && eager_ndim(s0) == 0 && *(const float *)eager_peek(s0) == -2.0f);
    eager_tensor *e = eager_floor(eager_zeros(GRAPH_F32, TG_SHAPE(0, 3)));
    CHECK(e && eager_numel(e) == 0 && eager_ndim(e) == 2);
    eager_pool_pop();
}

/* sign on integers: -1, 0, 1, the extremes of the type included, over
 * 37 elements (vector bodies and a tail). */
static void test_int_sign(void)
{
    static const int64_t base[] = {0, 1, -1, 42, -42, INT64_MAX, INT64_MIN, INT64_MIN + 1,
                                   INT32_MAX, INT32_MIN, 7};
    enum { NB = sizeof base / sizeof base[0], N = 37 };
    int64_t v64[N];
    int32_t v32[N];
    for (int i = 0; i < N; i++) {
        v64[i] = base[i % NB];
        v32[i] = (int32_t)(base[i % NB] < INT32_MIN ? INT32_MIN
                           : base[i % NB] > INT32_MAX ? INT32_MAX : base[i % NB]);
    }
    eager_pool_push();
    eager_tensor *a = eager_sign(eager_from_data(GRAPH_I64, TG_SHAPE(N), v64));
    eager_tensor *b = eager_sign(eager_from_data(GRAPH_I32, TG_SHAPE(N), v32));
    CHECK(a && b && eager_dtype(a) == GRAPH_I64 && eager_dtype(b) == GRAPH_I32);
    for (int i = 0; a && b && i < N; i++) {
        int64_t w64 = v64[i] > 0 ? 1 : v64[i] < 0 ? -1 : 0;
        int32_t w32 = v32[i] > 0 ? 1 : v32[i] < 0 ? -1 : 0;
        CHECK_MSG(((const int64_t *)eager_peek(a))[i] == w64, "sign i64 %lld",
                  (long long)v64[i]);
        CHECK_MSG(((const int32_t *)eager_peek(b))[i] == w32, "sign i32 %d", v32[i]);
    }
    eager_pool_pop();
}

/* Asserts that call failed with an error containing msg that names this
 * file at the call's line.  Keep each use on one line. */
#define EXPECT_ERROR(call, msg) expect_error((call), __LINE__, (msg))

static void expect_error(eager_tensor *r, int line, const char *msg)
{
    char where[64];
    snprintf(where, sizeof where, "test_round.c:%d ", line);
    CHECK_MSG(r == NULL, "line %d: op should have failed", line);
    CHECK_MSG(strstr(eager_error(), where) != NULL, "error \"%s\" should name %s",
              eager_error(), where);
    check_error(msg, __FILE__, line);
    eager_release(r);
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *i = eager_ones(GRAPH_I64, TG_SHAPE(3));
    eager_tensor *bo = eager_ones(GRAPH_BOOL, TG_SHAPE(2));
    eager_tensor *w = eager_ones(GRAPH_I32, TG_SHAPE(1));
    EXPECT_ERROR(eager_floor(i), "floor: i64[3]: dtype i64 not supported");
    EXPECT_ERROR(eager_ceil(w), "ceil: i32[1]: dtype i32 not supported");
    EXPECT_ERROR(eager_round(bo), "round: bool[2]: dtype bool not supported");
    EXPECT_ERROR(eager_sign(bo), "sign: bool[2]: dtype bool not supported");
    eager_pool_pop();
}

/* ---- the optimizer and replay ---- */

static tg_status optimize(graph *g, int level)
{
    opt_options o = opt_default_options();
    o.level = level;
    char err[512] = "";
    tg_status st = opt_optimize(g, &o, NULL, err, sizeof err);
    CHECK_MSG(st == TG_OK, "-O%d: %s", level, err);
    return st;
}

/* Idempotent: op(op(x)) -> op(x) at -O1; two different ones stay. */
static void test_simplify(void)
{
    static const char *const names[NOPS] = {"floor", "ceil", "round", "sign"};
    for (int k = 0; k < NOPS; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "graph t(%%x: f32[6]) -> (y: f32[6]) {\n  %%a: f32[6] = %s(%%x)\n"
                 "  %%b: f32[6] = %s(%%a)\n  %%y: f32[6] = neg(%%b)\n  return y = %%y\n}\n",
                 names[k], names[k]);
        graph *g = parse(text);
        if (!g || optimize(g, 1) != TG_OK) {
            graph_free(g);
            continue;
        }
        graph_op op = graph_op_find(names[k], strlen(names[k]));
        CHECK_MSG(count_op(g, op) == 1, "%s(%s(x)) -> %s(x)", names[k], names[k], names[k]);
        eager_pool_push();
        eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(6), edges), *y = NULL;
        CHECK(eager_interpret(g, &x, 1, &y, 1, NULL) == TG_OK);
        for (int i = 0; y && i < 6; i++) {
            float want = -ops[k].ref(ops[k].ref(edges[i]));
            CHECK_MSG(same_bits(((const float *)eager_peek(y))[i], want), "-%s(%s(%a))",
                      names[k], names[k], (double)edges[i]);
        }
        eager_release(y);
        eager_pool_pop();
        graph_free(g);
    }
    graph *g = parse("graph t(%x: f32[6]) -> (y: f32[6]) {\n  %a: f32[6] = ceil(%x)\n"
                     "  %b: f32[6] = floor(%a)\n  %c: f32[6] = sign(%b)\n"
                     "  %y: f32[6] = round(%c)\n  return y = %y\n}\n");
    if (g && optimize(g, 1) == TG_OK)
        CHECK(count_op(g, GRAPH_OP_ceil) == 1 && count_op(g, GRAPH_OP_floor) == 1 &&
              count_op(g, GRAPH_OP_sign) == 1 && count_op(g, GRAPH_OP_round) == 1);
    graph_free(g);
}

/* round of a constant is computed at -O1 (by the kernel): ties to even,
 * and -0.3 rounds to -0 (1 / -0 = -inf). */
static void test_fold(void)
{
    graph *g = parse("graph t(%x: f32[5]) -> (y: f32[5]) {\n"
                     "  %c: f32[5] = const [-2.5, 2.5, -0.3, 1.5, 0.5]\n"
                     "  %r: f32[5] = round(%c)\n  %y: f32[5] = div(%x, %r)\n"
                     "  return y = %y\n}\n");
    if (!g || optimize(g, 1) != TG_OK) {
        graph_free(g);
        return;
    }
    CHECK(count_op(g, GRAPH_OP_round) == 0 && count_op(g, GRAPH_OP_div) == 1);
    eager_pool_push();
    static const float ones[5] = {1, 1, 1, 1, 1};
    const float want[5] = {-0.5f, 0.5f, -INFINITY, 0.5f, INFINITY};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(5), ones), *y = NULL;
    CHECK(eager_interpret(g, &x, 1, &y, 1, NULL) == TG_OK);
    for (int i = 0; y && i < 5; i++)
        CHECK_MSG(((const float *)eager_peek(y))[i] == want[i], "folded round: element %d", i);
    eager_release(y);
    eager_pool_pop();
    graph_free(g);
}

/*
 * y = floor(round(floor(4x) / 2) * sign(x) + ceil(x)), and z the same
 * plus ceil(w) of a broadcast row w: f32[8].  x: f32[B,8].  The idempotent
 * round(round ...) goes at -O1; at -O3 each output is one fused node.
 */
static const char chain_ir[] =
    "graph t(%x: f32[B,8], %w: f32[8]) -> (y: f32[B,8], z: f32[B,8]) {\n  sym B = 2\n"
    "  %four: f32[] = const [4]\n  %half: f32[] = const [0.5]\n"
    "  %a: f32[B,8] = mul(%x, %four)\n  %b: f32[B,8] = floor(%a)\n"
    "  %c: f32[B,8] = mul(%b, %half)\n  %d: f32[B,8] = round(%c)\n"
    "  %d2: f32[B,8] = round(%d)\n  %s: f32[B,8] = sign(%x)\n"
    "  %m: f32[B,8] = mul(%d2, %s)\n  %e: f32[B,8] = ceil(%x)\n"
    "  %n: f32[B,8] = add(%m, %e)\n  %y: f32[B,8] = floor(%n)\n"
    "  %f: f32[8] = ceil(%w)\n  %z: f32[B,8] = add(%y, %f)\n"
    "  return y = %y\n  return z = %z\n}\n";

/* The chain's reference, in float arithmetic as the kernels do it. */
static float ref_chain(float x)
{
    float d = ref_round(ref_floor(x * 4.0f) * 0.5f);
    return ref_floor(d * ref_sign(x) + ref_ceil(x));
}

/* Replays g on the CPU with x: f32[rows,8] from the edges (rotated by
 * rows), w: f32[8], and checks y and z against ref_chain. */
static void replay_chain(const graph *g, int64_t rows, const char *what)
{
    float *x = malloc(sizeof(float) * (size_t)rows * 8), w[8];
    for (int64_t i = 0; i < rows * 8; i++)
        x[i] = edges[(i + rows) % NEDGES];
    for (int j = 0; j < 8; j++)
        w[j] = edges[(3 * j + 5) % NEDGES];
    char err[512] = "";
    replay_opts ro = {.threads = 1};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    CHECK_MSG(p != NULL, "%s: replay compiles: %s", what, err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    graph_type tx = {GRAPH_F32, 2, {rows, 8}}, tw = {GRAPH_F32, 1, {8}};
    replay_tensor ri[2] = {{.type = tx, .input = x}, {.type = tw, .input = w}}, rout[2];
    memset(rout, 0, sizeof rout);
    tg_status st = s ? replay_run(s, ri, 2, rout, 2) : TG_ERR_NOMEM;
    CHECK_MSG(st == TG_OK, "%s: replay runs at %lld rows: %s", what, (long long)rows,
              s ? replay_session_error(s) : "no session");
    long bad = 0;
    for (int64_t i = 0; st == TG_OK && i < rows * 8; i++) {
        float y = ref_chain(x[i]), z = y + ref_ceil(w[i % 8]);
        const float *gy = rout[0].data, *gz = rout[1].data;
        if ((!same_bits(gy[i], y) || !same_bits(gz[i], z)) && bad++ < 3)
            CHECK_MSG(0, "%s, %lld rows: x = %a: y %a want %a, z %a want %a", what,
                      (long long)rows, (double)x[i], (double)gy[i], (double)y, (double)gz[i],
                      (double)z);
    }
    CHECK_MSG(bad == 0, "%s, %lld rows: %ld elements differ", what, (long long)rows, bad);
    replay_session_free(s);
    replay_plan_free(p);
    free(x);
}

static void test_chain(void)
{
    graph *g0 = parse(chain_ir), *g3 = parse(chain_ir);
    if (!g0 || !g3 || optimize(g3, 3) != TG_OK) {
        graph_free(g0), graph_free(g3);
        return;
    }
    /* both outputs fused; nothing of the chain left outside */
    CHECK_MSG(count_op(g3, GRAPH_OP_fused) == 2 && count_op(g3, GRAPH_OP_floor) == 0 &&
                  count_op(g3, GRAPH_OP_round) == 0 && count_op(g3, GRAPH_OP_sign) == 0,
              "-O3: %d fused nodes, %d floor, %d round, %d sign left", count_op(g3, GRAPH_OP_fused),
              count_op(g3, GRAPH_OP_floor), count_op(g3, GRAPH_OP_round),
              count_op(g3, GRAPH_OP_sign));
    /* 2 rows: 16 elements, the register path; 5: streaming (y) and tiles
     * (z, a broadcast input); 300: many steps and tiles */
    static const int64_t rows[] = {2, 5, 300};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        replay_chain(g0, rows[r], "-O0");
        replay_chain(g3, rows[r], "-O3");
    }
    graph_free(g0);
    graph_free(g3);
}

int main(void)
{
    long live = eager_live_tensors();
    test_known();
    test_sweep();
    test_sizes();
    test_int_sign();
    test_errors();
    test_simplify();
    test_fold();
    test_chain();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
