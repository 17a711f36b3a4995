/*
 * test_opt_ewchain.c - the elementwise-chain fusion pass (optimize/
 * ewchain.c): text IR in, checked structurally out (op counts, the fused
 * node's program, inputs and provenance); outputs vs the reference
 * interpreter on the unfused graph; the cases that must not fuse (pinned
 * and guarded values, values used outside the chain, non-f32, lone
 * nodes) with their --explain lines; program limits (a long chain is cut
 * into several nodes); the traced `tiny` loop; idempotence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "graph/fused_prog.h"
#include "chain_pattern_util.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

/* Runs ewchain on a copy of g; checks the result against g numerically
 * and that a second run changes nothing.  Returns the copy. */
static graph *fuse_checked(int line, const graph *g, float lo, float hi)
{
    graph *f = graph_clone(g);
    fu_run(line, f, &opt_pass_ewchain, NULL);
    double e = fu_compare(g, f, 7, lo, hi);
    check_report(e <= 1e-4, __FILE__, line, "normalized error %g", e);
    char *before = fu_text(f);
    int again = fu_run(line, f, &opt_pass_ewchain, NULL);
    char *after = fu_text(f);
    check_report(again == 0 && before && after && strcmp(before, after) == 0, __FILE__, line,
                 "second ewchain run changed the graph");
    free(before);
    free(after);
    return f;
}
#define FUSE(g, lo, hi) fuse_checked(__LINE__, g, lo, hi)

static const char *prog_of(const graph_node *n)
{
    return n && n->op == GRAPH_OP_fused
               ? ((const graph_fused_attrs *)tg_node_attrs(n))->prog.s
               : "";
}

/* ---- the benchmark chain ---- */

static const char chain_text[] =
    "graph chain(%x: f32[4194304]) -> (y: f32[4194304]) {\n"
    "  %half: f32[] = const [0.5]\n"
    "  %two: f32[] = const [2]\n"
    "  %one: f32[] = const [1]\n"
    "  %s: f32[4194304] = sigmoid(%x) !p0\n"
    "  %a: f32[4194304] = mul(%x, %s) !p1\n"
    "  %b: f32[4194304] = mul(%half, %x) !p2\n"
    "  %c: f32[4194304] = add(%a, %b) !p3\n"
    "  %t: f32[4194304] = tanh(%c) !p4\n"
    "  %m: f32[4194304] = mul(%t, %two) !p5\n"
    "  %y: f32[4194304] = sub(%m, %one) !p6\n"
    "  return y = %y\n"
    "}\n"
    "provenance {\n"
    "  p0 = \"bench.c\":10 \"chain\"\n  p1 = \"bench.c\":11 \"chain\"\n"
    "  p2 = \"bench.c\":12 \"chain\"\n  p3 = \"bench.c\":13 \"chain\"\n"
    "  p4 = \"bench.c\":14 \"chain\"\n  p5 = \"bench.c\":15 \"chain\"\n"
    "  p6 = \"bench.c\":16 \"chain\"\n"
    "}\n";

static void test_chain(void)
{
    graph *g = PARSE(chain_text);
    if (!g)
        return;
    graph *f = FUSE(g, -4, 4);
    CHECK(graph_live_nodes(f) == 1 && fu_count(f, GRAPH_OP_fused) == 1);
    const graph_node *n = fu_output_node(f, 0);
    CHECK(n && n->op == GRAPH_OP_fused && n->nin == 1 && f->values[n->in[0]].kind ==
          GRAPH_VALUE_INPUT);
    CHECK_MSG(!strcmp(prog_of(n), "r0=sigmoid(i0);r1=mul(i0,r0);r2=mul(0.5,i0);"
                      "r3=add(r1,r2);r4=tanh(r3);r5=mul(r4,2);r6=sub(r5,1)"),
              "prog %s", prog_of(n));
    /* every absorbed node's provenance, the root's first */
    CHECK(n && n->nprov == 7 && !strcmp(f->provs[n->prov[0]].file, "bench.c") &&
          f->provs[n->prov[0]].line == 16);
    int lines = 0;
    for (int k = 0; n && k < n->nprov; k++)
        lines |= 1 << (f->provs[n->prov[k]].line - 10);
    CHECK(lines == 0x7f);
    /* the output value keeps its name */
    CHECK(f->values[f->outputs[0].value].name &&
          !strcmp(f->values[f->outputs[0].value].name, "y"));
    graph_free(f);
    graph_free(g);
}

/* ---- broadcasting, immediates, constants that shape the output ---- */

static void test_broadcast(void)
{
    graph *g = PARSE(
        "graph b(%x: f32[4,3], %r: f32[3], %c: f32[4,1]) -> (y: f32[4,3]) {\n"
        "  %k: f32[1,1] = const [3]\n"
        "  %h: f32[3] = const [0.5, 0.5, 0.5]\n"
        "  %1: f32[4,3] = add(%x, %r)\n"
        "  %2: f32[4,3] = mul(%1, %c)\n"
        "  %3: f32[4,3] = sub(%2, %k)\n"
        "  %4: f32[4,3] = mul(%3, %h)\n"
        "  %5: f32[4,3] = leaky_relu(%4) {alpha=0.25}\n"
        "  %6: f32[4,3] = clip(%5) {min=-1}\n"
        "  return y = %6\n"
        "}\n");
    if (!g)
        return;
    graph *f = FUSE(g, -3, 3);
    const graph_node *n = fu_output_node(f, 0);
    CHECK(graph_live_nodes(f) == 1 && n && n->nin == 3);
    CHECK_MSG(!strcmp(prog_of(n), "r0=add(i0,i1);r1=mul(r0,i2);r2=sub(r1,3);r3=mul(r2,0.5);"
                      "r4=leaky_relu(r3,0.25);r5=clip(r4,-1)"), "prog %s", prog_of(n));
    graph_free(f);
    graph_free(g);

    /* A [1,1] constant gives the output its rank and an all-equal [2,1]
     * one its leading dim: they stay inputs. */
    g = PARSE("graph b(%x: f32[4]) -> (y: f32[1,4], z: f32[2,4]) {\n"
              "  %k: f32[1,1] = const [3]\n"
              "  %q: f32[2,1] = const [2, 2]\n"
              "  %1: f32[4] = exp(%x)\n"
              "  %2: f32[1,4] = add(%1, %k)\n"
              "  %3: f32[4] = neg(%x)\n"
              "  %4: f32[2,4] = mul(%3, %q)\n"
              "  return y = %2\n"
              "  return z = %4\n"
              "}\n");
    if (!g)
        return;
    f = FUSE(g, -1, 1);
    n = fu_output_node(f, 0);
    CHECK(n && n->op == GRAPH_OP_fused && n->nin == 2 && !strcmp(prog_of(n),
          "r0=exp(i0);r1=add(r0,i1)"));
    n = fu_output_node(f, 1);
    CHECK(n && n->op == GRAPH_OP_fused && n->nin == 2 && !strcmp(prog_of(n),
          "r0=neg(i0);r1=mul(r0,i1)"));
    graph_free(f);
    graph_free(g);
}

/* ---- dynamic dims, fused nodes merged ---- */

static void test_dynamic_and_merge(void)
{
    graph *g = PARSE(
        "graph d(%x: f32[B,8], %w: f32[8,8]) -> (y: f32[B,8]) {\n"
        "  sym B = 3\n"
        "  %1: f32[B,8] = fused(%x) {prog=\"r0=mul(i0,i0);r1=add(r0,1)\"} !p0\n"
        "  %2: f32[B,8] = sqrt(%1) !p1\n"
        "  %3: f32[B,8] = fused(%2, %x) {prog=\"r0=div(i1,i0)\"} !p2\n"
        "  %4: f32[B,8] = matmul(%3, %w)\n"
        "  %5: f32[B,8] = gelu(%4) !p3\n"
        "  %6: f32[B,8] = add(%5, %3) !p4\n"
        "  return y = %6\n"
        "}\n"
        "provenance {\n  p0 = \"a.c\":1 \"f\"\n  p1 = \"a.c\":2 \"f\"\n  p2 = \"a.c\":3 \"f\"\n"
        "  p3 = \"a.c\":4 \"f\"\n  p4 = \"a.c\":5 \"f\"\n}\n");
    if (!g)
        return;
    graph *f = FUSE(g, 0.5f, 2);
    /* x -> fused+sqrt+fused merged (%3 is read by matmul and add: it is
     * a root); gelu + add fused on the other side of the matmul */
    CHECK(fu_count(f, GRAPH_OP_fused) == 2 && fu_count(f, GRAPH_OP_matmul) == 1 &&
          graph_live_nodes(f) == 3);
    const graph_node *m = fu_find(f, GRAPH_OP_matmul);
    const graph_node *a = m ? &f->nodes[f->values[m->in[0]].node] : NULL;
    CHECK_MSG(a && !strcmp(prog_of(a), "r0=mul(i0,i0);r1=add(r0,1);r2=sqrt(r1);r3=div(i0,r2)"),
              "prog %s", prog_of(a));
    CHECK(a && a->nin == 1 && a->nprov == 3);
    const graph_node *y = fu_output_node(f, 0);
    CHECK(y && !strcmp(prog_of(y), "r0=gelu(i0);r1=add(r0,i1)") && y->nprov == 2);
    CHECK(f->values[f->outputs[0].value].dyn == 1);
    graph_free(f);
    graph_free(g);
}

/* ---- what must not fuse, and the explanations ---- */

static char *explain_run(graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *ex = open_memstream(&buf, &len);
    fu_run(__LINE__, g, &opt_pass_ewchain, ex);
    fclose(ex);
    return buf;
}

static void test_declined(void)
{
    /* exp's value is read by the matmul: the chain relu+add stops there */
    graph *g = PARSE("graph d(%x: f32[4,4], %w: f32[4,4]) -> (y: f32[4,4]) {\n"
                     "  %e: f32[4,4] = exp(%x)\n"
                     "  %r: f32[4,4] = relu(%e)\n"
                     "  %m: f32[4,4] = matmul(%e, %w)\n"
                     "  %y: f32[4,4] = add(%r, %m)\n"
                     "  return y = %y\n"
                     "}\n");
    char *ex = g ? explain_run(g) : NULL;
    CHECK(g && fu_count(g, GRAPH_OP_fused) == 1 && fu_count(g, GRAPH_OP_exp) == 1);
    CHECK_MSG(ex && strstr(ex, "ewchain: node 0 (exp at unknown site): ends the chain ending at node 3: "
                           "its value is also used outside the chain") &&
              strstr(ex, "node 0 (exp at unknown site): not fused: no neighbouring elementwise node can join it"),
              "explain: %s", ex);
    free(ex);
    graph_free(g);

    /* pinned: an interior value is also a graph output; a guarded root */
    g = PARSE("graph p(%x: f32[4]) -> (y: f32[4], z: f32[4]) {\n"
              "  %a: f32[4] = exp(%x)\n"
              "  %b: f32[4] = neg(%a)\n"
              "  %c: f32[4] = tanh(%x)\n"
              "  guard value %c[0] == 0 strict\n"
              "  %d: f32[4] = relu(%c)\n"
              "  return y = %b\n"
              "  return z = %a\n"
              "}\n");
    ex = g ? explain_run(g) : NULL;
    CHECK(g && fu_count(g, GRAPH_OP_fused) == 0 && graph_live_nodes(g) == 4);
    CHECK_MSG(ex && strstr(ex, "node 0 (exp at unknown site): ends the chain ending at node 1: "
                           "its value is a graph output or guarded") &&
              strstr(ex, "node 2 (tanh at unknown site): not fused: its value is guarded"), "explain: %s",
              ex);
    free(ex);
    graph_free(g);

    /* not f32; a lone node */
    g = PARSE("graph i(%x: i32[4], %f: f32[4]) -> (y: i32[4], z: f32[4]) {\n"
              "  %a: i32[4] = neg(%x)\n"
              "  %b: i32[4] = add(%a, %x)\n"
              "  %c: f32[4] = sigmoid(%f)\n"
              "  return y = %b\n"
              "  return z = %c\n"
              "}\n");
    CHECK(g && RUN(g, opt_pass_ewchain) == 0 && graph_live_nodes(g) == 3);
    graph_free(g);
}

/* ---- limits: a chain of 2 FUSED_MAX_STMTS + 11 ops is cut into programs
 * that fit ---- */

static void test_limits(void)
{
    char *text = malloc(20000);
    int n = sprintf(text, "graph l(%%x: f32[64]) -> (y: f32[64]) {\n"
                    "  %%v0: f32[64] = tanh(%%x)\n");
    const int nops = 2 * FUSED_MAX_STMTS + 11;
    for (int k = 1; k < nops; k++)
        n += k % 3 == 0 ? sprintf(text + n, "  %%v%d: f32[64] = tanh(%%v%d)\n", k, k - 1)
                        : sprintf(text + n, "  %%v%d: f32[64] = %s(%%v%d, %%x)\n", k,
                                  k % 3 == 1 ? "mul" : "add", k - 1);
    sprintf(text + n, "  return y = %%v%d\n}\n", nops - 1);
    graph *g = PARSE(text);
    free(text);
    if (!g)
        return;
    graph *f = FUSE(g, -1, 1);
    int fused = fu_count(f, GRAPH_OP_fused);
    CHECK_MSG(fused >= 3 && fused <= 4 && graph_live_nodes(f) == fused, "%d fused nodes, %d live",
              fused, graph_live_nodes(f));
    for (int32_t i = 0; i < f->nnodes; i++) {
        fused_prog p;
        const char *prog = prog_of(&f->nodes[i]);
        CHECK(fused_prog_parse(prog, f->nodes[i].nin, &p, NULL, 0) == TG_OK &&
              strlen(prog) < GRAPH_MAX_STR && p.nstmts <= FUSED_MAX_STMTS);
    }
    graph_free(f);
    graph_free(g);
}

/* ---- the traced `tiny` loop: 100 x (relu(x*1.01+0.01) - x*0.5 + sigmoid(x)) ---- */

static void test_tiny(void)
{
    eager_pool_push();
    eager_tensor *c101 = eager_scalar(1.01), *c001 = eager_scalar(0.01), *c05 = eager_scalar(0.5);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(16), 1, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    for (int i = 0; i < 100; i++) {
        eager_tensor *a = eager_relu(eager_add(eager_mul(x, c101), c001));
        x = eager_add(eager_sub(a, eager_mul(x, c05)), eager_sigmoid(x));
    }
    trace_output(x, "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK(g && graph_live_nodes(g) == 700);
    if (!g)
        return;
    graph *f = FUSE(g, -1, 1);
    int fused = fu_count(f, GRAPH_OP_fused);
    printf("tiny: 700 ops -> %d fused nodes\n", fused);
    CHECK_MSG(fused == graph_live_nodes(f) && fused <= 30, "%d fused of %d live", fused,
              graph_live_nodes(f));
    /* every node kept the provenance of what it absorbed: 7 call sites */
    const graph_node *y = fu_output_node(f, 0);
    CHECK(y && y->nprov == 7);
    /* through the whole -O2 pipeline as well */
    graph *o = graph_clone(g);
    char err[600];
    CHECK_MSG(opt_optimize(o, NULL, NULL, err, sizeof err) == TG_OK, "%s", err);
    CHECK(fu_count(o, GRAPH_OP_fused) == graph_live_nodes(o) && graph_live_nodes(o) <= 30);
    double e = fu_compare(g, o, 3, -1, 1);
    CHECK_MSG(e <= 1e-4, "error %g", e);
    graph_free(o);
    graph_free(f);
    graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    test_chain();
    test_broadcast();
    test_dynamic_and_merge();
    test_declined();
    test_limits();
    test_tiny();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
