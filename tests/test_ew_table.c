/*
 * test_ew_table.c - graph/ew_ops.def, the one table of the f32
 * elementwise ops: every such op of graph/ops.def is in it, and each is
 * fusable on every backend and exported to ONNX.  No OpenCL device is
 * needed (the OpenCL kernels are checked as generated source).
 *
 *   - the registry: which ops qualify is recomputed here from graph_ops
 *     (f32 elementwise, unary or binary NumPy inference, f32 attributes
 *     only), independently of fused_prog.c; fused_op_ok must accept
 *     exactly those, and every other elementwise op must be one of the
 *     few this file names with the reason it is not fusable;
 *   - the CPU: each op as the one-statement program r0=op(i0[,i1]), run
 *     by the fused kernel at sizes that take its register, streaming and
 *     tile paths (scalar and broadcast operands too), gives the bits of
 *     the op's own eager kernel (pow: within 1 ulp, libm's powf against
 *     kernels_binary.c's), on values that include the special ones;
 *   - OpenCL: the generated source of each op's program (scalar and
 *     float8 forms) holds its expression with the operands and
 *     attributes substituted; a few known answers;
 *   - the backends' own tables (eager/ew_cpu.def, replay/opencl/ew_ocl.def):
 *     each has one line per row of graph/ew_ops.def, keyed by its name, in
 *     its order, and no line for an op the table lacks (a missing line
 *     also stops the build; a stale one would not);
 *   - formats: each op's one-node graph prints and parses back as text
 *     IR, saves and loads as .tgraph, exports to ONNX and reads back, and
 *     each copy computes the original's values in the interpreter
 *     (exactly, but for ONNX's expansions: within 1e-6).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "eager/kernel.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/fused_prog.h"
#include "graph/infer.h"
#include "graph/text.h"
#include "replay/opencl/ocl.h"
#include "graph/graph_impl.h"

/* ---- the registry ---- */

/* The rule of fused_prog.h, from the registry alone: 1 or 2 operands,
 * 0 if op does not qualify. */
static int qualifies(graph_op op)
{
    const graph_op_info *info = &graph_ops[op];
    int n = info->infer == graph_infer_unary ? 1 : info->infer == graph_infer_binary ? 2 : 0;
    if (!n || !(info->props & GRAPH_PROP_ELEMENTWISE) || !(info->dtypes & GRAPH_DT_F32) ||
        info->min_in != n || info->max_in != n || info->nout != 1 ||
        info->nattrs > FUSED_MAX_ATTRS)
        return 0;
    for (int k = 0; k < info->nattrs; k++)
        if (info->attr_descs()[k].kind != GRAPH_ATTR_F32)
            return 0;
    return n;
}

/* The elementwise ops that are not fusable, and why. */
static const struct {
    graph_op op;
    const char *why;
} not_fusable[] = {
    {GRAPH_OP_eq, "bool output"},
    {GRAPH_OP_lt, "bool output"},
    {GRAPH_OP_gt, "bool output"},
    {GRAPH_OP_where, "a bool operand, three operands"},
    {GRAPH_OP_cast, "changes the dtype"},
    {GRAPH_OP_fused, "a program itself"},
};

static int excused(graph_op op)
{
    for (size_t i = 0; i < sizeof not_fusable / sizeof not_fusable[0]; i++)
        if (not_fusable[i].op == op)
            return 1;
    return 0;
}

static void test_registry(void)
{
    int count = 0;
    for (int op = 0; op < GRAPH_OP_COUNT; op++) {
        int n = qualifies((graph_op)op), nargs = -1;
        int ok = fused_op_ok((graph_op)op, &nargs);
        CHECK_MSG(ok == (n > 0), "%s: fused_op_ok %d, the registry says %d (a line in "
                  "graph/ew_ops.def?)", graph_ops[op].name, ok, n > 0);
        if (ok) {
            CHECK_MSG(nargs == n, "%s: %d operands, the registry says %d", graph_ops[op].name,
                      nargs, n);
            count++;
        }
        if (graph_ops[op].props & GRAPH_PROP_ELEMENTWISE)
            CHECK_MSG(ok || excused((graph_op)op), "%s is elementwise but not fusable: "
                      "give it a line in graph/ew_ops.def", graph_ops[op].name);
    }
    for (size_t i = 0; i < sizeof not_fusable / sizeof not_fusable[0]; i++)
        CHECK_MSG(!fused_op_ok(not_fusable[i].op, NULL), "%s is fusable (%s?)",
                  graph_ops[not_fusable[i].op].name, not_fusable[i].why);
    /* the ops of the table when it was made, at least */
    CHECK_MSG(count >= 26, "%d fusable ops", count);
    int n = 0;
    CHECK(fused_op_ok(GRAPH_OP_neg, &n) && n == 1);
    CHECK(fused_op_ok(GRAPH_OP_pow, &n) && n == 2);
    CHECK(fused_op_ok(GRAPH_OP_clip, &n) && n == 1);
    CHECK(!fused_op_ok(GRAPH_OP_matmul, NULL) && !fused_op_ok(GRAPH_OP_COUNT, NULL));
    CHECK(fused_op_cost(GRAPH_OP_add) == FUSED_COST_LIGHT);
    CHECK(fused_op_cost(GRAPH_OP_div) == FUSED_COST_SLOW);
    CHECK(fused_op_cost(GRAPH_OP_exp) == FUSED_COST_HEAVY);
}

/* ---- test data ---- */

/* Attribute values for op (its f32 attributes in order): within every
 * current op's domain (clip(-0.5, 0.75), leaky_relu(-0.5)). */
static const float attr_vals[FUSED_MAX_ATTRS] = {-0.5f, 0.75f};

static void set_attrs(graph_op op, graph_attrs *at)
{
    graph_attrs_default(op, at);
    const graph_op_info *info = &graph_ops[op];
    for (int k = 0; k < info->nattrs; k++)
        memcpy((char *)at + info->attr_descs()[k].offset, &attr_vals[k], sizeof(float));
}

/* "r0=op(i0[,i1][,attrs])" */
static void prog_of(graph_op op, int nargs, char *buf, size_t len)
{
    int at = snprintf(buf, len, "r0=%s(i0%s", graph_ops[op].name, nargs > 1 ? ",i1" : "");
    for (int k = 0; k < graph_ops[op].nattrs; k++)
        at += snprintf(buf + at, len - (size_t)at, ",%.9g", (double)attr_vals[k]);
    snprintf(buf + at, len - (size_t)at, ")");
}

static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 2.5f, 20.0f,
                                -20.0f, 88.0f, -104.0f, 1e-30f, INFINITY, -INFINITY, NAN,
                                3.0f};

/* Element i of operand j: the special values, then a spread over
 * [-6, 6] (operand 1 shifted, so pow and div see varied pairs). */
static float value(int j, int64_t i)
{
    int64_t ns = (int64_t)(sizeof special / sizeof special[0]);
    if (i < ns)
        return special[(i + 5 * j) % ns];
    return (float)(-6.0 + 12.0 * (double)((i * 37 + j * 11) % 1001) / 1000.0);
}

/* ---- the CPU ---- */

static tg_status run(graph_op op, const void *attrs, const graph_type *it, int nin,
                     const float *const *in, const graph_type *ot, float *out)
{
    char err[256] = "";
    eager_kstate *state = NULL;
    void *outp[1] = {out};
    eager_kargs a = {it, (const void *const *)in, nin, attrs, ot, outp, 1, 1, err, sizeof err,
                     &state, 0};
    tg_status st = eager_kernels[op](&a);
    CHECK_MSG(st == TG_OK, "%s: %s", graph_ops[op].name, err);
    if (state)
        state->free(state);
    return st;
}

static int same(float a, float b, int ulps)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (a == b)
        return 1;
    if (!ulps || isinf(a) || isinf(b) || signbit(a) != signbit(b))
        return 0;
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    return abs(ia - ib) <= ulps;
}

static void type_of(graph_type *t, graph_ints s)
{
    memset(t, 0, sizeof *t);
    t->dtype = GRAPH_F32;
    t->ndim = s.n;
    for (int d = 0; d < s.n; d++)
        t->dim[d] = s.v[d];
}

/* op as a fused program against op's own kernel, out = shape of in0
 * (and in1, which may broadcast). */
static void check_cpu(graph_op op, int nargs, graph_ints s0, graph_ints s1)
{
    graph_type t[2], ot;
    type_of(&t[0], s0);
    type_of(&t[1], nargs > 1 ? s1 : s0);
    ot = t[0];
    int64_t n = graph_type_numel(&t[0]), n1 = graph_type_numel(&t[1]);
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n1);
    float *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = value(0, i);
    for (int64_t i = 0; i < n1; i++)
        y[i] = value(1, i);
    const float *in[2] = {x, y};
    graph_attrs at;
    set_attrs(op, &at);
    graph_fused_attrs fa;
    memset(&fa, 0, sizeof fa);
    prog_of(op, nargs, fa.prog.s, sizeof fa.prog.s);
    memset(want, 0xff, sizeof(float) * (size_t)n); /* NaN: a result not written shows */
    memset(got, 0x7f, sizeof(float) * (size_t)n);  /* 3.4e38 likewise */
    if (run(op, &at, t, nargs, in, &ot, want) == TG_OK &&
        run(GRAPH_OP_fused, &fa, t, nargs, in, &ot, got) == TG_OK) {
        long bad = 0, first = -1;
        for (int64_t i = 0; i < n; i++)
            if (!same(got[i], want[i], op == GRAPH_OP_pow)) {
                if (first < 0)
                    first = (long)i;
                bad++;
            }
        CHECK_MSG(bad == 0, "%s (%lld x %lld elements): %ld differ from the op's kernel, "
                  "first at %ld: %.9g, want %.9g", fa.prog.s, (long long)n, (long long)n1, bad,
                  first, first >= 0 ? (double)got[first] : 0.0,
                  first >= 0 ? (double)want[first] : 0.0);
    }
    free(x);
    free(y);
    free(want);
    free(got);
}

static void test_cpu(void)
{
    for (int op = 0; op < GRAPH_OP_COUNT; op++) {
        int nargs;
        if (!fused_op_ok((graph_op)op, &nargs))
            continue;
        /* register path (<= 16), streaming path (full inputs, with a
         * ragged tail), the tiles (a row operand broadcast) and a
         * uniform scalar operand */
        check_cpu((graph_op)op, nargs, TG_SHAPE(16), TG_SHAPE(16));
        check_cpu((graph_op)op, nargs, TG_SHAPE(7), TG_SHAPE(7));
        check_cpu((graph_op)op, nargs, TG_SHAPE(1000), TG_SHAPE(1000));
        check_cpu((graph_op)op, nargs, TG_SHAPE(40, 77), TG_SHAPE(77));
        check_cpu((graph_op)op, nargs, TG_SHAPE(4099), TG_SHAPE(1));
    }
}

/* ---- OpenCL, as generated source ---- */

/* Source of prog with nin inputs; NULL (and a failed check) if none. */
static char *gen_source(const char *prog, int nin)
{
    fused_prog fp;
    char msg[256];
    if (fused_prog_parse(prog, nin, &fp, msg, sizeof msg) != TG_OK) {
        CHECK_MSG(0, "%s: %s", prog, msg);
        return NULL;
    }
    size_t len = ocl_fused_source_bound(&fp, nin);
    char *buf = malloc(len);
    int r = ocl_fused_source(&fp, nin, buf, len);
    CHECK_MSG(r == 0, "%s: no OpenCL source (%d)", prog, r);
    if (r) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int count(const char *s, const char *sub)
{
    int c = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
        c++;
    return c;
}

static void test_opencl_source(void)
{
    for (int op = 0; op < GRAPH_OP_COUNT; op++) {
        int nargs;
        if (!fused_op_ok((graph_op)op, &nargs))
            continue;
        char prog[128];
        prog_of((graph_op)op, nargs, prog, sizeof prog);
        char *src = gen_source(prog, nargs);
        if (!src)
            continue;
        /* three kernels: fused_flat8 (float8 and its scalar tail),
         * fused, fused_rows; one statement each */
        CHECK_MSG(count(src, "float8 r0 = ") == 1 && count(src, "    float r0 = ") == 3,
                  "%s: statements in\n%s", prog, src);
        const char *st = strstr(src, "float8 r0 = ");
        const char *end = st ? strchr(st, ';') : NULL;
        if (st && end) {
            char e[256];
            snprintf(e, sizeof e, "%.*s", (int)(end - st), st + 12);
            CHECK_MSG(strchr(e, '$') == NULL && strstr(e, "x0") != NULL &&
                          (nargs < 2 || strstr(e, "x1") != NULL),
                      "%s: expression %s", prog, e);
            if (graph_ops[op].nattrs)
                CHECK_MSG(strstr(e, "(-0.5f)") != NULL, "%s: attribute in %s", prog, e);
        }
        free(src);
    }
    /* known answers: operands, immediates (float8 in the vector form),
     * attributes */
    char *src = gen_source("r0=add(i0,i1);r1=clip(r0,-0.5,2);r2=sub(1,r1)", 2);
    if (src) {
        CHECK(strstr(src, "    float8 r0 = x0 + x1;\n") != NULL);
        CHECK(strstr(src, "    float8 r1 = tg_clip(r0, (-0.5f), (2.0f));\n") != NULL);
        CHECK(strstr(src, "    float8 r2 = ((float8)(1.0f)) - r1;\n") != NULL);
        CHECK(strstr(src, "    float r2 = (1.0f) - r1;\n") != NULL);
        free(src);
    }
    src = gen_source("r0=rsqrt(i0);r1=neg(r0)", 1);
    if (src) {
        CHECK(strstr(src, "    float r0 = 1.0f / sqrt(x0);\n") != NULL);
        CHECK(strstr(src, "    float r1 = -r0;\n") != NULL);
        free(src);
    }
}

/* ---- text IR, .tgraph and ONNX ---- */

/* back (read from what) computes g's values, within tol relative. */
static void check_same_run(const graph *g, const graph *back, int nargs, const char *op,
                           const char *what, double tol)
{
    eager_pool_push();
    float xv[36], zv[36];
    for (int i = 0; i < 36; i++) {
        xv[i] = value(0, i);
        zv[i] = value(1, i);
    }
    eager_tensor *in[2] = {eager_from_data(GRAPH_F32, TG_SHAPE(4, 9), xv),
                           eager_from_data(GRAPH_F32, TG_SHAPE(4, 9), zv)};
    eager_tensor *want = NULL, *got = NULL;
    CHECK_MSG(eager_interpret(g, in, nargs, &want, 1, NULL) == TG_OK &&
                  eager_interpret(back, in, nargs, &got, 1, NULL) == TG_OK,
              "%s through %s: %s", op, what, eager_error());
    const float *w = want ? eager_peek(want) : NULL, *o = got ? eager_peek(got) : NULL;
    for (int i = 0; w && o && i < 36; i++)
        CHECK_MSG(check_abs_diff(o[i], w[i]) == 0 ||
                      check_abs_diff(o[i], w[i]) <= tol * fmax(1, fabs(w[i])),
                  "%s: element %d (x %.9g, z %.9g): %.9g through %s, %.9g", op, i,
                  (double)xv[i], (double)zv[i], (double)o[i], what, (double)w[i]);
    if (want)
        eager_release(want);
    if (got)
        eager_release(got);
    eager_pool_pop();
    eager_clear_error();
}

static void check_formats(graph_op op, int nargs)
{
    char text[1024], attrs[128] = "";
    const graph_op_info *info = &graph_ops[op];
    for (int k = 0, at = 0; k < info->nattrs; k++)
        at += snprintf(attrs + at, sizeof attrs - (size_t)at, "%s%s=%.9g", k ? ", " : " {",
                       info->attr_descs()[k].name, (double)attr_vals[k]);
    if (info->nattrs)
        strcat(attrs, "}");
    snprintf(text, sizeof text,
             "graph t(%%x: f32[4,9]%s) -> (y: f32[4,9]) {\n"
             "  %%1: f32[4,9] = %s(%%x%s)%s\n  return y = %%1\n}\n",
             nargs > 1 ? ", %z: f32[4,9]" : "", info->name, nargs > 1 ? ", %z" : "", attrs);
    char err[512];
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(g != NULL, "%s: %s\n%s", info->name, err, text);
    if (!g)
        return;
    /* the text IR prints it back as parsed */
    char *printed = graph_print_str(g, NULL, NULL);
    graph *back = printed ? graph_parse(printed, strlen(printed), err, sizeof err) : NULL;
    CHECK_MSG(back != NULL, "%s: printed text not parsed: %s", info->name, err);
    if (back) {
        char *again = graph_print_str(back, NULL, NULL);
        CHECK_MSG(again && !strcmp(again, printed), "%s: text changed:\n%s\n%s", info->name,
                  printed, again ? again : "");
        free(again);
        check_same_run(g, back, nargs, info->name, "the text IR", 0);
        graph_free(back);
    }
    free(printed);
    /* .tgraph: the same values exactly */
    void *buf = NULL;
    size_t len = 0;
    CHECK_MSG(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "%s: not saved: %s", info->name, err);
    back = buf ? format_load_mem(buf, len, info->name, err, sizeof err) : NULL;
    CHECK_MSG(back != NULL, "%s: .tgraph not loaded: %s", info->name, err);
    if (back) {
        check_same_run(g, back, nargs, info->name, ".tgraph", 0);
        graph_free(back);
    }
    free(buf);
    /* ONNX: exported, read back, the same values (an expansion such as
     * gelu's rounds differently) */
    buf = NULL;
    CHECK_MSG(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "%s: not exported: %s", info->name, err);
    back = buf ? format_onnx_load_mem(buf, len, info->name, NULL, err, sizeof err) : NULL;
    CHECK_MSG(!buf || back != NULL, "%s: exported model not read back: %s", info->name, err);
    if (back) {
        /* one node of an ONNX op type reads back as the op itself */
        int expansion = op == GRAPH_OP_rsqrt || op == GRAPH_OP_silu || op == GRAPH_OP_gelu ||
                        op == GRAPH_OP_relu_grad;
        CHECK_MSG(expansion || (back->nnodes == 1 && back->nodes[0].op == op),
                  "%s: read back from ONNX as %d nodes, the first %s", info->name,
                  back->nnodes, back->nnodes ? graph_ops[back->nodes[0].op].name : "-");
        check_same_run(g, back, nargs, info->name, "ONNX", 1e-6);
        graph_free(back);
    }
    free(buf);
    graph_free(g);
}

static void test_formats(void)
{
    for (int op = 0; op < GRAPH_OP_COUNT; op++) {
        int nargs;
        if (fused_op_ok((graph_op)op, &nargs))
            check_formats((graph_op)op, nargs);
    }
}

/* The names a table file defines, in order: the word after each line
 * start `prefix` up to a non-name character, into names (at most max);
 * their count, or -1 when the file cannot be read. */
static int table_names(const char *rel, const char *prefix, char names[][32], int max)
{
    char path[1024], line[1024];
    snprintf(path, sizeof path, "%s/../../%s", TG_TEST_DATA, rel);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0;
    size_t k = strlen(prefix);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, prefix, k) && n < max) {
            size_t len = strspn(line + k, "abcdefghijklmnopqrstuvwxyz_0123456789");
            snprintf(names[n++], 32, "%.*s", (int)len, line + k);
        }
    fclose(f);
    return n;
}

/* Every backend's table covers every row of graph/ew_ops.def, in order,
 * and nothing else. */
static void test_backend_tables(void)
{
    static char rows[128][32], cpu[128][32], ocl[128][32];
    int n = table_names("graph/ew_ops.def", "EW(", rows, 128);
    CHECK_MSG(n > 20, "graph/ew_ops.def: %d rows", n);
    const struct {
        const char *file;
        char (*names)[32];
        int n;
    } tabs[] = {{"eager/ew_cpu.def", cpu, table_names("eager/ew_cpu.def", "#define EW_CPU_", cpu, 128)},
                {"replay/opencl/ew_ocl.def", ocl,
                 table_names("replay/opencl/ew_ocl.def", "#define EW_OCL_", ocl, 128)}};
    for (size_t t = 0; t < sizeof tabs / sizeof *tabs; t++) {
        CHECK_MSG(tabs[t].n == n, "%s: %d lines for the %d rows of graph/ew_ops.def",
                  tabs[t].file, tabs[t].n, n);
        for (int i = 0; i < n && i < tabs[t].n; i++)
            CHECK_MSG(!strcmp(rows[i], tabs[t].names[i]), "%s: line %d is %s, the row is %s",
                      tabs[t].file, i, tabs[t].names[i], rows[i]);
    }
    /* every row is an op the registry has */
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int op = 0; op < GRAPH_OP_COUNT && !found; op++)
            found = !strcmp(graph_ops[op].name, rows[i]);
        CHECK_MSG(found, "graph/ew_ops.def: row %s is no op of ops.def", rows[i]);
    }
}

int main(void)
{
    test_registry();
    test_backend_tables();
    test_cpu();
    test_opencl_source();
    test_formats();
    return check_done();
}
