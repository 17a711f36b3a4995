/*
 * test_opt_o1.c - the -O1 passes other than simplify (see
 * test_opt_simplify.c): constant folding, CSE, DCE, and the -O1 pipeline
 * as a whole.  Graphs are text IR in, checked structurally out, then
 * numerically against the reference interpreter on the original graph;
 * cases that must not fold / merge / die; idempotence; and the traced test
 * models of tests/models.h at -O1 (params kept, and params folded) against
 * the unoptimized interpreter at several batch sizes.
 */
#include "models.h"
#include "opt_test_util.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

/* Optimizes a copy of text with pass p (+ DCE) and compares with it. */
static graph *pass_case(const char *what, const char *text, const opt_pass *p,
                        opt_pass_stats *st)
{
    graph *ref = ir(text), *g = ir(text);
    if (!ref || !g) {
        graph_free(ref);
        graph_free(g);
        return NULL;
    }
    opt_pass_stats s = run_pass(g, p, 0);
    if (st)
        *st = s;
    if (p != &opt_pass_dce)
        run_pass(g, &opt_pass_dce, 0);
    compare(ref, g, what);
    graph *h = ir(text);
    if (h) {
        run_o1(h, 0);
        compare(ref, h, what);
        check_idempotent(h, 0, what);
    }
    graph_free(h);
    graph_free(ref);
    return g;
}

/* The data of the live node op's input k if it is a constant, else NULL. */
static const void *const_in(const graph *g, graph_op op, int k)
{
    int32_t n = g ? find_op(g, op) : -1;
    if (n < 0 || k >= g->nodes[n].nin)
        return NULL;
    const graph_value *v = &g->values[g->nodes[n].in[k]];
    return v->kind == GRAPH_VALUE_CONST ? v->data : NULL;
}

/* ---- fold ---- */

static void test_fold_chain(void)
{
    opt_pass_stats st;
    graph *g = pass_case("fold add+relu",
                         "graph t(%x: f32[2,3]) -> (y: f32[2,3]) {\n"
                         "  %c1: f32[3] = const [1, -2, 3]\n"
                         "  %c2: f32[2,3] = const [1, 1, 1, 2, 2, 2]\n"
                         "  %a: f32[2,3] = add(%c1, %c2)\n  %b: f32[2,3] = relu(%a)\n"
                         "  %y: f32[2,3] = mul(%x, %b)\n  return y = %y\n}\n",
                         &opt_pass_fold, &st);
    CHECK(g && g->nnodes == 1 && count_op(g, GRAPH_OP_mul) == 1);
    const float *c = const_in(g, GRAPH_OP_mul, 1);
    float want[6] = {2, 0, 4, 3, 0, 5};
    CHECK(c && memcmp(c, want, sizeof want) == 0);
    CHECK_MSG(st.removed == 2 && st.bytes == 12, "fold stats: removed %d, bytes %lld",
              st.removed, (long long)st.bytes);
    graph_free(g);

    g = pass_case("fold ints, compare, where",
                  "graph t(%x: f32[4]) -> (y: f32[4]) {\n"
                  "  %i: i32[4] = const [1, 2, 3, 4]\n  %j: i32[] = const [3]\n"
                  "  %m: bool[4] = lt(%i, %j)\n  %k: f32[] = const [0]\n"
                  "  %y: f32[4] = where(%m, %x, %k)\n  return y = %y\n}\n",
                  &opt_pass_fold, NULL);
    CHECK(g && count_op(g, GRAPH_OP_lt) == 0 && count_op(g, GRAPH_OP_where) == 1);
    const uint8_t *m = const_in(g, GRAPH_OP_where, 0);
    CHECK(m && m[0] == 1 && m[1] == 1 && m[2] == 0 && m[3] == 0);
    graph_free(g);
}

static void test_fold_shape_ops(void)
{
    graph *g = pass_case("fold split/transpose/reshape of constants",
                         "graph t(%x: f32[2,2]) -> (y: f32[2,2], z: f32[2,2]) {\n"
                         "  %c: f32[2,3] = const [1, 2, 3, 4, 5, 6]\n"
                         "  %s1: f32[2,1], %s2: f32[2,2] = split(%c) {axis=1, sizes=[1,2]}\n"
                         "  %t: f32[2,2] = transpose(%s2) {perm=[1,0]}\n"
                         "  %r: f32[1,2] = reshape(%s1) {shape=[1,2]}\n"
                         "  %y: f32[2,2] = add(%x, %t)\n  %z: f32[2,2] = mul(%x, %r)\n"
                         "  return y = %y\n  return z = %z\n}\n",
                         &opt_pass_fold, NULL);
    CHECK(g && g->nnodes == 2);
    const float *t = const_in(g, GRAPH_OP_add, 1), *r = const_in(g, GRAPH_OP_mul, 1);
    CHECK(t && t[0] == 2 && t[1] == 5 && t[2] == 3 && t[3] == 6);
    CHECK(r && r[0] == 1 && r[1] == 4);
    graph_free(g);
}

static void test_fold_not(void)
{
    graph *g =
        pass_case("pinned result is not folded",
                  "graph t(%x: f32[3]) -> (y: f32[3], z: f32[3]) {\n"
                  "  %c: f32[3] = const [1, 2, 3]\n  %a: f32[3] = neg(%c)\n"
                  "  %b: f32[3] = exp(%c)\n  guard value %b[0] == 2.7182817459106445 warn\n"
                  "  %z: f32[3] = add(%x, %b)\n  return y = %a\n  return z = %z\n}\n",
                  &opt_pass_fold, NULL);
    CHECK(g && count_op(g, GRAPH_OP_neg) == 1 && count_op(g, GRAPH_OP_exp) == 1);
    graph_free(g);
    g = pass_case("params are not constants",
                  "graph t(%x: f32[3]) -> (y: f32[3]) {\n"
                  "  %p: f32[3] = param [1, 2, 3]\n  %a: f32[3] = neg(%p)\n"
                  "  %y: f32[3] = add(%x, %a)\n  return y = %y\n}\n",
                  &opt_pass_fold, NULL);
    CHECK(g && count_op(g, GRAPH_OP_neg) == 1);
    graph_free(g);
    /* An integer division by zero stays, to fail at run time as it would. */
    const char *divz = "graph t(%x: i32[2]) -> (y: i32[2]) {\n"
                       "  %a: i32[2] = const [4, 6]\n  %z: i32[2] = const [2, 0]\n"
                       "  %d: i32[2] = div(%a, %z)\n  %y: i32[2] = add(%x, %d)\n"
                       "  return y = %y\n}\n";
    g = ir(divz);
    opt_pass_stats st = g ? run_pass(g, &opt_pass_fold, 0) : st;
    CHECK(g && count_op(g, GRAPH_OP_div) == 1 && st.removed == 0);
    graph_free(g);
}

static void test_fold_size_cap(void)
{
    const char *big = "graph t(%x: f32[1024,1024]) -> (y: f32[1024,1024]) {\n"
                      "  %c: f32[1] = const [0.5]\n"
                      "  %e: f32[1024,1024] = expand(%c) {shape=[1024,1024]}\n"
                      "  %y: f32[1024,1024] = mul(%x, %e)\n  return y = %y\n}\n";
    graph *g = ir(big);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    opt_options o = opt_default_options();
    o.explain = f;
    if (g)
        run_pass_opts(g, &opt_pass_fold, &o, NULL);
    fclose(f);
    CHECK_MSG(g && count_op(g, GRAPH_OP_expand) == 1, "a 4 MiB broadcast is not folded");
    CHECK_MSG(buf && strstr(buf, "fold: node") && strstr(buf, "16x"), "explained: %s",
              buf ? buf : "");
    free(buf);
    graph_free(g);
    g = pass_case("a 256 KiB broadcast is folded",
                  "graph t(%x: f32[256,256]) -> (y: f32[256,256]) {\n"
                  "  %c: f32[1] = const [0.5]\n"
                  "  %e: f32[256,256] = expand(%c) {shape=[256,256]}\n"
                  "  %y: f32[256,256] = mul(%x, %e)\n  return y = %y\n}\n",
                  &opt_pass_fold, NULL);
    CHECK(g && count_op(g, GRAPH_OP_expand) == 0);
    graph_free(g);
}

/*
 * A chain of expand/reshape pairs, each 4x its input (under the per-node
 * FOLD_BLOWUP), from a 16-byte constant: steps pairs make 4^(steps+1)
 * floats.  Returned as text IR (caller frees); the output adds it to x.
 */
static char *expand_chain(int steps)
{
    size_t cap = 256 + (size_t)steps * 200, len = 0;
    char *t = malloc(cap);
    int64_t n = (int64_t)4 << (2 * steps);
    len += (size_t)snprintf(t + len, cap - len,
                            "graph t(%%x: f32[%lld]) -> (y: f32[%lld]) {\n"
                            "  %%r0: f32[4] = const [1, 2, 3, 4]\n",
                            (long long)n, (long long)n);
    int64_t prev = 4;
    for (int k = 1; k <= steps; k++, prev *= 4)
        len += (size_t)snprintf(t + len, cap - len,
                                "  %%e%d: f32[4,%lld] = expand(%%r%d) {shape=[4,%lld]}\n"
                                "  %%r%d: f32[%lld] = reshape(%%e%d) {shape=[%lld]}\n",
                                k, (long long)prev, k - 1, (long long)prev, k,
                                (long long)(4 * prev), k, (long long)(4 * prev));
    snprintf(t + len, cap - len, "  %%y: f32[%lld] = add(%%x, %%r%d)\n  return y = %%y\n}\n",
             (long long)n, steps);
    return t;
}

/* Bytes of the live constants of g. */
static int64_t const_bytes(const graph *g)
{
    int64_t b = 0;
    for (int32_t v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GRAPH_VALUE_CONST)
            b += (int64_t)graph_value_nbytes(&g->values[v]);
    return b;
}

/*
 * The folding budget is one bound for the whole opt_optimize call: a chain
 * of 4x steps, none past the per-node cap, is folded only while the
 * constants it makes fit (issue 29: a 1.5 KB file folded to 9 GB).
 */
static void test_fold_budget(void)
{
    /* A small explicit budget: 8 steps make 1 MiB at the end, 1.3 MiB
     * over the chain; 100 KiB folds the first steps only. */
    char *text = expand_chain(8);
    graph *ref = ir(text), *g = ir(text);
    char *buf = NULL, err[512] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    opt_options o = opt_default_options();
    o.level = 1;
    o.fold_budget = 100 << 10;
    o.explain = f;
    tg_status st = g ? opt_optimize(g, &o, NULL, err, sizeof err) : TG_ERR_NULL;
    fclose(f);
    CHECK_MSG(st == TG_OK, "-O1 with a 100 KiB fold budget: %s", err);
    CHECK_MSG(g && count_op(g, GRAPH_OP_expand) >= 1 && count_op(g, GRAPH_OP_expand) < 8,
              "the first expands fold, the last stay (%d left)",
              g ? count_op(g, GRAPH_OP_expand) : -1);
    CHECK_MSG(g && const_bytes(g) <= 100 << 10, "constants within the budget: %lld bytes",
              g ? (long long)const_bytes(g) : -1LL);
    CHECK_MSG(buf && strstr(buf, "would pass the folding budget"), "explained: %s",
              buf ? buf : "");
    if (ref && g)
        compare(ref, g, "fold budget");
    free(buf);
    graph_free(g);
    graph_free(ref);
    free(text);

    /* The default budget (64 MiB + twice the constants): 12 steps end in
     * 256 MiB and make 341 MiB over the chain; folding stops below 64 MiB. */
    text = expand_chain(12);
    g = ir(text);
    o = opt_default_options();
    o.level = 1;
    st = g ? opt_optimize(g, &o, NULL, err, sizeof err) : TG_ERR_NULL;
    CHECK_MSG(st == TG_OK, "-O1 on the 12-step chain: %s", err);
    CHECK_MSG(g && const_bytes(g) <= OPT_FOLD_BUDGET_MIN && count_op(g, GRAPH_OP_expand) >= 1,
              "the default budget holds: %lld bytes of constants, %d expands left",
              g ? (long long)const_bytes(g) : -1LL, g ? count_op(g, GRAPH_OP_expand) : -1);
    graph_free(g);
    free(text);
}

/* opt_optimize refuses options out of range, naming the field. */
static void test_options_refused(void)
{
    graph *g = ir("graph t(%x: f32[2]) -> (y: f32[2]) {\n  %y: f32[2] = relu(%x)\n"
                  "  return y = %y\n}\n");
    const struct {
        int level;
        int64_t budget;
        double rtol;
        const char *msg;
    } bad[] = {
        {99, 0, 1e-4, "optimize: level 99 is not one of 0, 1, 2, 3 (opt_options.level)"},
        {-5, 0, 1e-4, "optimize: level -5 is not one of 0, 1, 2, 3 (opt_options.level)"},
        {1, -1, 1e-4, "optimize: fold_budget -1 is negative (0 takes the default)"},
        {1, 0, NAN, "optimize: verify_rtol nan is not a tolerance (0 or more)"},
    };
    for (size_t i = 0; g && i < sizeof bad / sizeof bad[0]; i++) {
        opt_options o = opt_default_options();
        o.level = bad[i].level;
        o.fold_budget = bad[i].budget;
        o.verify_rtol = bad[i].rtol;
        char err[256] = "";
        tg_status st = opt_optimize(g, &o, NULL, err, sizeof err);
        CHECK_MSG(st == TG_ERR_ARG && strcmp(err, bad[i].msg) == 0, "refused: %s", err);
        CHECK(count_op(g, GRAPH_OP_relu) == 1);
    }
    graph_free(g);
}

static void test_fold_empty(void)
{
    opt_pass_stats st;
    graph *g = pass_case("empty result folds whatever the inputs",
                         "graph t(%x: f32[3,4]) -> (y: f32[3,4]) {\n"
                         "  %s: f32[0,4] = slice(%x) {axes=[0], starts=[1], ends=[1]}\n"
                         "  %e: f32[0,4] = exp(%s)\n"
                         "  %y: f32[3,4] = concat(%e, %x) {axis=0}\n  return y = %y\n}\n",
                         &opt_pass_fold, &st);
    CHECK(g && count_op(g, GRAPH_OP_slice) == 0 && count_op(g, GRAPH_OP_exp) == 0 &&
          st.removed == 2);
    graph_free(g);
    g = pass_case("empty result with a dynamic dim is kept",
                  "graph t(%x: f32[B,4]) -> (y: f32[B,4]) {\n  sym B = 2\n"
                  "  %s: f32[B,0] = slice(%x) {axes=[1], starts=[1], ends=[1]}\n"
                  "  %y: f32[B,4] = concat(%s, %x) {axis=1}\n  return y = %y\n}\n",
                  &opt_pass_fold, NULL);
    CHECK(g && count_op(g, GRAPH_OP_slice) == 1);
    graph_free(g);
}

/*
 * A node that may fail on its operands' values (opt_may_fail) is neither
 * folded as empty nor removed as dead: a gather of a 0-size axis has an
 * empty output and fails on any index at -O0 (issue 29, difffuzz seed 3003
 * model 522 ran at -O3 and returned an empty tensor).  Once its failure is
 * impossible (no index, or constant indices in range) it goes as before.
 */
static void test_fold_empty_may_fail(void)
{
    const char *bad = "graph t(%x: f32[0,2,0], %i: i64[2]) -> (y: f32[2,2,0]) {\n"
                      "  %g: f32[2,2,0] = gather(%x, %i) {axis=0}\n"
                      "  %y: f32[2,2,0] = exp(%g)\n  return y = %y\n}\n";
    graph *g = ir(bad);
    opt_report rep = g ? run_o1(g, 0) : (opt_report){0};
    (void)rep;
    CHECK_MSG(g && count_op(g, GRAPH_OP_gather) == 1,
              "a gather that may fail is not folded as empty (or then dead)");
    graph_free(g);
    /* the same with the gather's result unused: it stays, to fail */
    const char *dead = "graph t(%x: f32[3,2], %i: i64[2]) -> (y: f32[3,2]) {\n"
                       "  %g: f32[2,2] = gather(%x, %i) {axis=0}\n"
                       "  %y: f32[3,2] = exp(%x)\n  return y = %y\n}\n";
    g = ir(dead);
    opt_pass_stats st = g ? run_pass(g, &opt_pass_dce, 0) : (opt_pass_stats){0};
    CHECK_MSG(g && count_op(g, GRAPH_OP_gather) == 1 && st.removed == 0,
              "an unused gather with run-time indices stays (removed %d)", st.removed);
    graph_free(g);
    /* integer div by a run-time divisor: the same */
    const char *divd = "graph t(%a: i32[2], %b: i32[2]) -> (y: i32[2]) {\n"
                       "  %d: i32[2] = div(%a, %b)\n  %y: i32[2] = neg(%a)\n"
                       "  return y = %y\n}\n";
    g = ir(divd);
    st = g ? run_pass(g, &opt_pass_dce, 0) : (opt_pass_stats){0};
    CHECK_MSG(g && count_op(g, GRAPH_OP_div) == 1, "an unused integer div stays");
    graph_free(g);
    /* a node specialized on the traced sizes fails at others: the expand
     * stays though the shape-only node after it folds (difffuzz seed 7202
     * model 806 ran at -O3 at another N) */
    const char *spec = "graph t(%x: f32[B]) -> (y: f32[B]) {\n  sym B = 4\n"
                       "  %e: f32[4] = expand(%x) {shape=[4]} specialized\n"
                       "  %s: f32[0] = slice(%e) {axes=[0], starts=[1], ends=[1]}\n"
                       "  %y: f32[B] = concat(%s, %x) {axis=0}\n  return y = %y\n}\n";
    g = ir(spec);
    if (g)
        run_o1(g, 0);
    CHECK_MSG(g && count_op(g, GRAPH_OP_expand) == 1, "a specialized expand stays");
    graph_free(g);
    const char *spec_dead = "graph t(%x: f32[B]) -> (y: f32[B]) {\n  sym B = 4\n"
                            "  %e: f32[4] = expand(%x) {shape=[4]} specialized\n"
                            "  %y: f32[B] = exp(%x)\n  return y = %y\n}\n";
    g = ir(spec_dead);
    st = g ? run_pass(g, &opt_pass_dce, 0) : (opt_pass_stats){0};
    CHECK_MSG(g && count_op(g, GRAPH_OP_expand) == 1 && st.removed == 0,
              "an unused specialized expand stays (removed %d)", st.removed);
    graph_free(g);
    /* empty only at the traced size: a slice to B-4 (a derived dim) is not
     * an empty constant (seed 7203 model 1473 gave [0,4] at B = 5) */
    const char *derived = "graph t(%x: f32[B,4]) -> (y: f32[0,4]) {\n  sym B = 4\n"
                          "  %s: f32[0,4] = slice(%x) {axes=[0], starts=[0], ends=[-4]}\n"
                          "  %y: f32[0,4] = exp(%s)\n  return y = %y\n}\n";
    g = ir(derived);
    CHECK(g && graph_propagate_dynamic(g) == TG_OK && g->values[value_named(g, "s")].dder == 1);
    st = g ? run_pass(g, &opt_pass_fold, 0) : (opt_pass_stats){0};
    CHECK_MSG(g && count_op(g, GRAPH_OP_slice) == 1 && count_op(g, GRAPH_OP_exp) == 1 &&
                  st.removed == 0,
              "an output empty only at the traced size is not folded (removed %d)", st.removed);
    graph_free(g);
    /* empty at the traced size B = 2 and at the probe size, not at B = 1,
     * so its dims are not marked (seeds 7304/1627, 7409/694): nothing read
     * from a dynamic input folds as empty */
    const char *blind = "graph t(%x: f32[B]) -> (y: f32[0]) {\n  sym B = 2\n"
                        "  %s: f32[0] = slice(%x) {axes=[0], starts=[-1], ends=[1], steps=[2]}\n"
                        "  %e: f32[0] = exp(%s)\n  %y: f32[0] = neg(%e)\n"
                        "  return y = %y\n}\n";
    g = ir(blind);
    CHECK(g && graph_propagate_dynamic(g) == TG_OK && g->values[value_named(g, "s")].dder == 0);
    st = g ? run_pass(g, &opt_pass_fold, 0) : (opt_pass_stats){0};
    CHECK_MSG(g && count_op(g, GRAPH_OP_slice) == 1 && count_op(g, GRAPH_OP_exp) == 1 &&
                  st.removed == 0,
              "nothing computed from a dynamic input folds as empty (removed %d)", st.removed);
    graph_free(g);
    /* failure impossible: constant indices in range, and no index at all */
    const char *ok = "graph t(%x: f32[3,2], %e: f32[0,2]) -> (y: f32[3,2]) {\n"
                     "  %i: i64[2] = const [2, -3]\n  %j: i64[0] = const []\n"
                     "  %g: f32[2,2] = gather(%x, %i) {axis=0}\n"
                     "  %h: f32[0,2] = gather(%e, %j) {axis=0}\n"
                     "  %y: f32[3,2] = exp(%x)\n  return y = %y\n}\n";
    g = ir(ok);
    st = g ? run_pass(g, &opt_pass_dce, 0) : (opt_pass_stats){0};
    CHECK_MSG(g && count_op(g, GRAPH_OP_gather) == 0 && st.removed == 2,
              "gathers that cannot fail go as dead (removed %d)", st.removed);
    graph_free(g);
}

/* ---- CSE ---- */

static const char cse_text[] =
    "graph t(%x: f32[B,4], %w: f32[4]) -> (y: f32[B,4]) {\n  sym B = 2\n"
    "  %a1: f32[B,4] = relu(%x) !p0\n  %a2: f32[B,4] = relu(%x) !p1\n"
    "  %e1: f32[B,4] = exp(%a1) !p0\n  %e2: f32[B,4] = exp(%a2) !p1\n"
    "  %s1: f32[B,4] = add(%e1, %w) !p0\n  %s2: f32[B,4] = add(%w, %e2) !p1\n"
    "  %d1: f32[B,4] = sub(%s1, %w)\n  %d2: f32[B,4] = sub(%w, %s2)\n"
    "  %m: f32[B,4] = mul(%d1, %d2)\n  %y: f32[B,4] = mul(%m, %s2)\n"
    "  return y = %y\n}\n"
    "provenance {\n  p0 = \"m.c\":1 \"f\"\n  p1 = \"m.c\":2 \"f\"\n}\n";

static void test_cse_chain(void)
{
    opt_pass_stats st;
    graph *g = pass_case("duplicated chain collapses", cse_text, &opt_pass_cse, &st);
    CHECK(g && count_op(g, GRAPH_OP_relu) == 1 && count_op(g, GRAPH_OP_exp) == 1 &&
          count_op(g, GRAPH_OP_add) == 1 && count_op(g, GRAPH_OP_sub) == 2);
    CHECK_MSG(st.removed == 3, "cse removed %d", st.removed);
    int32_t r = g ? find_op(g, GRAPH_OP_relu) : -1;
    CHECK_MSG(r >= 0 && g->nodes[r].nprov == 2, "the survivor keeps both call sites");
    graph *ref = ir(cse_text);
    if (ref && g)
        compare_at(ref, g, 6, -1, 1, "cse at batch 6");
    graph_free(ref);
    graph_free(g);
}

static void test_cse_attrs_consts_params(void)
{
    graph *g = pass_case("different attributes are not merged",
                         "graph t(%x: f32[2,3,4]) -> (y: f32[4,3,2]) {\n"
                         "  %a: f32[4,3,2] = transpose(%x) {perm=[2,1,0]}\n"
                         "  %b: f32[4,3,2] = transpose(%x)\n"
                         "  %c: f32[3,4,2] = transpose(%x) {perm=[1,2,0]}\n"
                         "  %d: f32[4,3,2] = transpose(%c) {perm=[1,0,2]}\n"
                         "  %e: f32[4,3,2] = add(%a, %b)\n  %y: f32[4,3,2] = add(%e, %d)\n"
                         "  return y = %y\n}\n",
                         &opt_pass_cse, NULL);
    /* perm [] reverses, as [2,1,0] does, but the attributes differ */
    CHECK(g && count_op(g, GRAPH_OP_transpose) == 4);
    graph_free(g);
    opt_pass_stats st;
    g = pass_case("equal constants merge, then their users",
                  "graph t(%x: f32[4]) -> (y: f32[4]) {\n"
                  "  %c1: f32[4] = const [1, 2, 3, 4]\n  %c2: f32[4] = const [1, 2, 3, 4]\n"
                  "  %c3: f32[4] = const [1, 2, 3, 5]\n  %c4: i32[4] = const [1, 2, 3, 4]\n"
                  "  %a: f32[4] = mul(%x, %c1)\n  %b: f32[4] = mul(%c2, %x)\n"
                  "  %c: f32[4] = mul(%x, %c3)\n  %i: f32[4] = cast(%c4) {to=f32}\n"
                  "  %s: f32[4] = add(%a, %b)\n  %t: f32[4] = add(%s, %c)\n"
                  "  %y: f32[4] = add(%t, %i)\n  return y = %y\n}\n",
                  &opt_pass_cse, &st);
    CHECK(g && count_op(g, GRAPH_OP_mul) == 2);
    CHECK_MSG(st.bytes == 16 && st.removed == 1, "cse: bytes %lld removed %d",
              (long long)st.bytes, st.removed);
    graph_free(g);
    g = pass_case("params with equal data stay apart",
                  "graph t(%x: f32[2]) -> (y: f32[2]) {\n"
                  "  %p1: f32[2] = param [1, 2]\n  %p2: f32[2] = param [1, 2]\n"
                  "  %a: f32[2] = mul(%x, %p1)\n  %b: f32[2] = mul(%x, %p2)\n"
                  "  %y: f32[2] = add(%a, %b)\n  return y = %y\n}\n",
                  &opt_pass_cse, NULL);
    CHECK(g && count_op(g, GRAPH_OP_mul) == 2);
    graph_free(g);
}

static void test_cse_pinned(void)
{
    graph *g = pass_case("two outputs computing the same are both kept",
                         "graph t(%x: f32[3]) -> (y: f32[3], z: f32[3]) {\n"
                         "  %a: f32[3] = exp(%x)\n  %b: f32[3] = exp(%x)\n"
                         "  return y = %a\n  return z = %b\n}\n",
                         &opt_pass_cse, NULL);
    CHECK(g && count_op(g, GRAPH_OP_exp) == 2);
    graph_free(g);
    g = pass_case("an unpinned duplicate goes, the output stays",
                  "graph t(%x: f32[3]) -> (y: f32[3], z: f32[3]) {\n"
                  "  %a: f32[3] = exp(%x) !p0\n  %n: f32[3] = neg(%a)\n"
                  "  %b: f32[3] = exp(%x) !p1\n  return y = %n\n  return z = %b\n}\n"
                  "provenance {\n  p0 = \"m.c\":1 \"f\"\n  p1 = \"m.c\":2 \"f\"\n}\n",
                  &opt_pass_cse, NULL);
    int32_t e = g ? find_op(g, GRAPH_OP_exp) : -1, n = g ? find_op(g, GRAPH_OP_neg) : -1;
    CHECK(e >= 0 && n >= 0 && count_op(g, GRAPH_OP_exp) == 1 &&
          g->nodes[n].in[0] == g->nodes[e].out[0] &&
          g->outputs[1].value == g->nodes[e].out[0] && g->nodes[e].nprov == 2);
    graph_free(g);
}

/* ---- DCE ---- */

static void test_dce(void)
{
    opt_pass_stats st;
    graph *g = pass_case("dead chain and its param go",
                         "graph t(%x: f32[3]) -> (y: f32[3]) {\n"
                         "  %p: f32[3] = param [1, 2, 3]\n  %q: f32[3] = param [4, 5, 6]\n"
                         "  %a: f32[3] = mul(%x, %p)\n  %b: f32[3] = exp(%a)\n"
                         "  %r: f32[3] = relu(%x)\n  guard value %r[1] == 0 off\n"
                         "  %y: f32[3] = add(%x, %q)\n  return y = %y\n}\n",
                         &opt_pass_dce, &st);
    CHECK(g && count_op(g, GRAPH_OP_mul) == 0 && count_op(g, GRAPH_OP_exp) == 0);
    CHECK_MSG(g && count_op(g, GRAPH_OP_relu) == 1, "a guarded value's producer stays");
    CHECK_MSG(g && value_named(g, "p") < 0 && value_named(g, "q") >= 0,
              "the unused param is dropped at compaction");
    CHECK_MSG(st.removed == 2 && st.bytes == 12, "dce: removed %d bytes %lld", st.removed,
              (long long)st.bytes);
    graph_free(g);
}

/* ---- the -O1 pipeline ---- */

static const char mixed_text[] =
    "graph t(%x: f32[B,3,4], %w: f32[4]) -> (y: f32[B,4,3], z: f32[B,12]) {\n  sym B = 2\n"
    "  %c1: f32[4] = const [1, 2, 3, 4]\n  %c2: f32[4] = const [1, 2, 3, 4]\n"
    "  %k: f32[3,4] = const [1,2,3,4, 1,2,3,4, 1,2,3,4]\n  %z0: f32[] = const [-0]\n"
    "  %a: f32[B,3,4] = add(%x, %z0)\n  %b: f32[B,3,4] = mul(%a, %c1)\n"
    "  %b2: f32[B,3,4] = mul(%c2, %a)\n  %s: f32[B,3,4] = add(%b, %b2)\n"
    "  %n: f32[4] = neg(%w)\n  %t: f32[B,3,4] = sub(%s, %n)\n  %u: f32[B,3,4] = mul(%t, %k)\n"
    "  %r1: f32[B,4,3] = transpose(%u) {perm=[0,2,1]}\n"
    "  %r2: f32[B,3,4] = transpose(%r1) {perm=[0,2,1]}\n"
    "  %r3: f32[B,4,3] = transpose(%r2) {perm=[0,2,1]}\n"
    "  %cc: f32[4] = add(%c1, %c2)\n  %v: f32[B,3,4] = relu(%r2)\n"
    "  %v2: f32[B,3,4] = relu(%v)\n  %v3: f32[B,3,4] = add(%v2, %cc)\n"
    "  %f: f32[B,12] = flatten(%v3) {start=1}\n  %f2: f32[B,2,6] = reshape(%f) "
    "{shape=[-1,2,6]}\n"
    "  %f3: f32[B,12] = reshape(%f2) {shape=[-1,12]}\n  %dead: f32[B,12] = exp(%f3)\n"
    "  %z: f32[B,12] = neg(%f3)\n  return y = %r3\n  return z = %z\n}\n";

static void test_pipeline(void)
{
    for (int fm = 0; fm < 2; fm++) {
        graph *ref = ir(mixed_text), *g = ir(mixed_text);
        if (!ref || !g) {
            graph_free(ref);
            graph_free(g);
            return;
        }
        opt_options o = opt_default_options();
        o.level = 1;
        o.finite_math = fm;
        o.verify_each = 1;
        opt_report rep;
        char err[512] = "";
        CHECK_MSG(opt_optimize(g, &o, &rep, err, sizeof err) == TG_OK, "-O1: %s", err);
        CHECK_MSG(rep.bad_pass[0] == '\0', "verify-each blames %s", rep.bad_pass);
        CHECK_MSG(rep.nodes_after < rep.nodes_before && g->nnodes <= 9 - fm,
                  "-O1 shrinks the graph: %d -> %d", rep.nodes_before, rep.nodes_after);
        CHECK(count_op(g, GRAPH_OP_transpose) == 1 && count_op(g, GRAPH_OP_relu) == 1 &&
              count_op(g, GRAPH_OP_exp) == 0 &&
              count_op(g, GRAPH_OP_flatten) + count_op(g, GRAPH_OP_reshape) == 1);
        compare(ref, g, "mixed -O1");
        compare_at(ref, g, 5, -1, 1, "mixed -O1 at batch 5");
        compare_at(ref, g, 1, -1, 1, "mixed -O1 at batch 1");
        check_idempotent(g, fm, "mixed");
        graph_free(ref);
        graph_free(g);
    }
}

/* -O1 on the traced models matches the unoptimized interpreter. */
static void test_models(void)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        model m = model_make(k);
        eager_tensor *x = model_input(&m, m.input_shape.v[0], 300 + (uint64_t)k);
        graph *ref = model_trace(&m, x);
        eager_release(x);
        for (int variant = 0; ref && variant < 2; variant++) {
            graph *g = graph_clone(ref);
            if (!g)
                break;
            if (variant == 1) /* params as constants, as -O2 makes them */
                run_pass(g, &opt_pass_fold_params, 0);
            opt_report rep = run_o1(g, 0);
            CHECK(rep.nodes_after <= rep.nodes_before);
            char what[64];
            snprintf(what, sizeof what, "%s -O1 (%s)", m.name,
                     variant ? "params folded" : "params");
            compare(ref, g, what);
            compare_at(ref, g, 1, -1, 1, what);
            compare_at(ref, g, 7, -1, 1, what);
            check_idempotent(g, 0, what);
            graph_free(g);
        }
        graph_free(ref);
        model_free(&m);
    }
}

/* ---- random graphs ---- */

static uint64_t rng_next(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15u;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* A constant the rules look for: splats of 0, -0, 1, 2, a row, repeated
 * rows (shapes [], [4], [1,4], [3,4] with B traced 3). */
static int32_t random_const(graph *g, uint64_t *r, int traced_rows)
{
    static const float splats[] = {0.0f, -0.0f, 1.0f, 2.0f, 0.5f};
    int shape = (int)(rng_next(r) % (traced_rows ? 4 : 3)), kind = (int)(rng_next(r) % 6);
    graph_type t = {GRAPH_F32, shape == 0 ? 0 : shape == 1 ? 1 : 2, {0}};
    if (shape == 1)
        t.dim[0] = 4;
    else if (shape >= 2) {
        t.dim[0] = shape == 2 ? 1 : 3;
        t.dim[1] = 4;
    }
    float data[12];
    for (int i = 0; i < 12; i++)
        data[i] = kind < 5 ? splats[kind] : (float)(i % 4) * 0.25f - 0.3f;
    return opt_add_const(g, &t, data);
}

/* Appends one random node (or a short chain) reading pool values; returns
 * its result or -1. */
static int32_t random_node(graph *g, uint64_t *r, int rows, const int32_t *pool, int np)
{
    static const graph_op bin[] = {GRAPH_OP_add, GRAPH_OP_sub, GRAPH_OP_mul, GRAPH_OP_maximum,
                                   GRAPH_OP_pow};
    static const graph_op un[] = {GRAPH_OP_neg, GRAPH_OP_relu, GRAPH_OP_abs, GRAPH_OP_clip,
                                  GRAPH_OP_tanh};
    int32_t a = pool[rng_next(r) % (uint64_t)np], in[2] = {a, a}, out = -1, id = -1;
    int what = (int)(rng_next(r) % 6);
    if (what <= 1) { /* binary with a pool value or a constant */
        graph_op op = bin[rng_next(r) % 5];
        in[1] = (what == 0 || op == GRAPH_OP_pow) ? random_const(g, r, rows)
                                                  : pool[rng_next(r) % (uint64_t)np];
        if (op == GRAPH_OP_pow) /* of |a|: no NaN from negative bases */
            in[0] = graph_add_node(g, GRAPH_OP_abs, &a, 1, NULL, &in[0], 1) < 0 ? a : in[0];
        if (rng_next(r) % 2 && op != GRAPH_OP_pow && op != GRAPH_OP_sub)
            in[0] = in[1], in[1] = a;
        id = graph_add_node(g, op, in, 2, NULL, &out, 1);
    } else if (what == 2) {
        graph_op op = un[rng_next(r) % 5];
        graph_clip_attrs ca = {-0.5f, 0.75f};
        id = graph_add_node(g, op, &a, 1, op == GRAPH_OP_clip ? &ca : NULL, &out, 1);
    } else if (what == 3) { /* transpose there and back, or a view chain */
        graph_transpose_attrs ta = {TG_INTS(1, 0)};
        graph_reshape_attrs r1 = {TG_INTS(-1, 2, 2)}, r2 = {TG_INTS(-1, 4)};
        int tr = rng_next(r) % 2;
        graph_op op = tr ? GRAPH_OP_transpose : GRAPH_OP_reshape;
        id = graph_add_node(g, op, &a, 1, tr ? (const void *)&ta : &r1, &out, 1);
        if (id >= 0)
            id = graph_add_node(g, op, &out, 1, tr ? (const void *)&ta : &r2, &out, 1);
    } else if (what == 4) { /* an operand broadcast by expand */
        int32_t c = random_const(g, r, rows);
        graph_expand_attrs ea = {rows ? TG_INTS(3, 4) : TG_INTS(1, 4)};
        id = graph_add_node(g, GRAPH_OP_expand, &c, 1, &ea, &in[1], 1);
        if (id >= 0)
            id = graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &out, 1);
    } else if (g->nnodes > 0) { /* a duplicate of an earlier node, for CSE */
        const graph_node *n = &g->nodes[rng_next(r) % (uint64_t)g->nnodes];
        if (n->nout == 1)
            id = graph_add_node(g, n->op, n->in, n->nin, tg_node_attrs(n), &out, 1);
    }
    return id >= 0 ? out : -1;
}

/*
 * A random graph over x: f32[B,4] of elementwise, shape and constant ops;
 * every fourth seed also uses constants of the traced batch's size (their
 * nodes only work at that size).  Outputs: the sum of the last values
 * made, and one value from the middle.
 */
static graph *random_graph(uint64_t seed)
{
    uint64_t r = seed;
    int rows = seed % 4 == 0;
    graph *g = graph_new("rand");
    int sym = graph_add_symbol(g, "B", 3);
    graph_type xt = {GRAPH_F32, 2, {3, 4}};
    int32_t pool[64], np = 0, out;
    pool[np++] = graph_add_value(g, GRAPH_VALUE_INPUT, &xt, "x");
    graph_add_input(g, pool[0]);
    g->values[pool[0]].dyn = 1;
    g->values[pool[0]].sym[0] = (int8_t)sym;
    for (int step = 0; step < 24; step++) {
        out = random_node(g, &r, rows, pool, np);
        if (out >= 0 && g->values[out].type.ndim == 2 && g->values[out].type.dim[1] == 4)
            pool[np++] = out;
    }
    int32_t sum = pool[np - 1];
    for (int k = np - 2; k >= 1 && k >= np - 8; k--) {
        int32_t in[2] = {sum, pool[k]};
        if (graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &out, 1) >= 0)
            sum = out;
    }
    graph_add_output(g, sum, "y");
    if (np > 2)
        graph_add_output(g, pool[np / 2], "z");
    graph_propagate_dynamic(g);
    CHECK_MSG(graph_verify(g, 0) == TG_OK, "random graph %llu: %s", (unsigned long long)seed,
              graph_error(g));
    return g;
}

static int any_specialized(const graph *g)
{
    for (int32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].flags & GRAPH_NODE_SPECIALIZED)
            return 1;
    return 0;
}

/* -O1 on random graphs: valid, equal to the original, idempotent. */
static void test_random(void)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        graph *ref = random_graph(seed);
        for (int fm = 0; fm < 2; fm++) {
            graph *g = graph_clone(ref);
            opt_report rep = run_o1(g, fm);
            char what[64];
            snprintf(what, sizeof what, "random graph %llu (finite_math %d)",
                     (unsigned long long)seed, fm);
            CHECK_MSG(rep.nodes_after <= rep.nodes_before, "%s shrinks", what);
            compare_at(ref, g, 0, -1, 1, what);
            if (!any_specialized(ref))
                compare_at(ref, g, 5, -1, 1, what);
            check_idempotent(g, fm, what);
            graph_free(g);
        }
        graph_free(ref);
    }
}

int main(void)
{
    long live0 = eager_live_tensors();
    test_fold_chain();
    test_fold_shape_ops();
    test_fold_not();
    test_fold_size_cap();
    test_fold_budget();
    test_options_refused();
    test_fold_empty();
    test_fold_empty_may_fail();
    test_cse_chain();
    test_cse_attrs_consts_params();
    test_cse_pinned();
    test_dce();
    test_pipeline();
    test_models();
    test_random();
    eager_trim_cache();
    CHECK_MSG(eager_live_tensors() == live0, "no tensor leaks (%ld live, %ld before)",
              eager_live_tensors(), live0);
    return check_done();
}
