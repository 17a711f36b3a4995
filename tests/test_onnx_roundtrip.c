/*
 * test_onnx_roundtrip.c - ONNX export then import, end to end: the traced
 * MLP, conv and attention models of tests/models.h, as traced and
 * optimized at -O3, come back from an ONNX file as graphs that compute
 * what the eager API computes (checked against eager runs of the model,
 * at the traced batch and at others through the dynamic batch dim), keep
 * their input, output and param names, and keep each node's call site in
 * the model's source.  Guards: refused on export with the read's call
 * site, dropped on request.  Op by op coverage against ONNX Runtime is
 * test_onnx_export + test_onnx_ort.sh; import against ONNX's own node
 * tests is test_onnx_node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx.h"
#include "models.h"
#include "optimize/opt.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

static char err[1024];

/* Exports g and imports it back; NULL (and a failed check) on error. */
static graph *through_onnx(const graph *g, const format_onnx_load_opts *lo, const char *what)
{
    void *buf = NULL;
    size_t len = 0;
    tg_status st = format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err);
    CHECK_MSG(st == TG_OK && buf && len > 0, "%s: export: %s", what, err);
    graph *h = st == TG_OK ? format_onnx_load_mem(buf, len, "rt.onnx", lo, err, sizeof err)
                           : NULL;
    CHECK_MSG(h != NULL, "%s: import: %s", what, err);
    free(buf);
    return h;
}

/* Runs h on the model's input at batch b and compares with eager. */
static void check_batch(const model *m, const graph *h, int64_t b, const char *what)
{
    eager_pool_push();
    eager_tensor *x = model_input(m, b, 100 + (uint64_t)b);
    eager_tensor *want = m->forward(x, m->params);
    eager_tensor *got = NULL;
    tg_status st = eager_interpret(h, &x, 1, &got, 1, NULL);
    CHECK_MSG(st == TG_OK && got, "%s: batch %lld runs: %s", what, (long long)b, eager_error());
    if (st == TG_OK && got && want) {
        int64_t n = graph_type_numel(eager_type(want));
        CHECK_MSG(graph_type_numel(eager_type(got)) == n, "%s: batch %lld: output size", what,
                  (long long)b);
        /* Not bit for bit: linear comes back as MatMul + Add, fused
         * chains as separate ops, each with its own rounding. */
        double e = check_normalized_error(eager_peek(got), eager_peek(want), n);
        CHECK_MSG(e <= 1e-5, "%s: batch %lld: normalized error %.3g vs eager", what,
                  (long long)b, e);
    }
    eager_release(got);
    eager_pool_pop();
}

/* Every live node's primary call site is in tests/models.c. */
static void check_sites(const graph *h, const char *what)
{
    int bad = -1;
    for (int32_t i = 0; i < h->nnodes && bad < 0; i++) {
        const graph_node *n = &h->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if (n->nprov < 1 || !h->provs[n->prov[0]].file ||
            !strstr(h->provs[n->prov[0]].file, "models.c") || h->provs[n->prov[0]].line <= 0)
            bad = i;
    }
    CHECK_MSG(bad < 0, "%s: node %d keeps its call site in models.c", what, bad);
}

static void check_names(const graph *g, const graph *h, int params, const char *what)
{
    CHECK_MSG(h->ninputs == 1 && h->values[h->inputs[0]].name &&
                  strcmp(h->values[h->inputs[0]].name, "x") == 0,
              "%s: one input named x", what);
    CHECK_MSG(h->noutputs == 1 && strcmp(h->outputs[0].name, "y") == 0,
              "%s: one output named y", what);
    const graph_value *x = &h->values[h->inputs[0]];
    CHECK_MSG(x->dyn == 1u && strcmp(h->syms[x->sym[0]].name, "B") == 0,
              "%s: dim 0 of x is dynamic, named B", what);
    /* Each param of g comes back by name, with the same bytes. */
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *p = &g->values[i];
        if (p->kind != GRAPH_VALUE_PARAM)
            continue;
        int found = 0;
        for (int32_t j = 0; j < h->nvalues && !found; j++) {
            const graph_value *q = &h->values[j];
            found = q->name && strcmp(q->name, p->name) == 0 && q->data &&
                    q->kind == (params ? GRAPH_VALUE_PARAM : GRAPH_VALUE_CONST) &&
                    graph_value_nbytes(q) == graph_value_nbytes(p) &&
                    memcmp(q->data, p->data, graph_value_nbytes(p)) == 0;
        }
        CHECK_MSG(found, "%s: param %s comes back with its data", what, p->name);
    }
}

static void test_model(int kind)
{
    model m = model_make(kind);
    eager_pool_push();
    eager_tensor *x = model_input(&m, 4, 7);
    graph *g = model_trace(&m, x);
    eager_pool_pop();
    if (!g) {
        model_free(&m);
        return;
    }
    char what[64];
    for (int level = 0; level <= 3; level += 3) {
        graph *o = graph_clone(g);
        opt_options oo = opt_default_options();
        oo.level = level;
        CHECK_MSG(o && opt_optimize(o, &oo, NULL, err, sizeof err) == TG_OK, "%s -O%d: %s",
                  m.name, level, err);
        format_onnx_load_opts lo = {level == 0, 1};
        snprintf(what, sizeof what, "%s -O%d", m.name, level);
        graph *h = o ? through_onnx(o, &lo, what) : NULL;
        if (h) {
            if (level == 0)
                check_names(o, h, 1, what);
            check_sites(h, what);
            check_batch(&m, h, 4, what);
            check_batch(&m, h, 1, what);
            check_batch(&m, h, 9, what);
        }
        graph_free(h);
        graph_free(o);
    }
    graph_free(g);
    model_free(&m);
}

/* dim_default: the size a named dim is traced at. */
static void test_dim_default(void)
{
    model m = model_make(MODEL_MLP);
    eager_pool_push();
    graph *g = model_trace(&m, model_input(&m, 4, 7));
    eager_pool_pop();
    format_onnx_load_opts lo = {0, 3};
    graph *h = g ? through_onnx(g, &lo, "dim_default") : NULL;
    CHECK_MSG(h && h->nsyms == 1 && h->syms[0].traced == 3 &&
                  h->values[h->inputs[0]].type.dim[0] == 3,
              "dim_default 3: B traced at 3");
    graph_free(h);
    graph_free(g);
    model_free(&m);
}

/* A graph with a guard: refused, naming the read's call site. */
static void test_guards(void)
{
    eager_pool_push();
    float xs[4] = {1, -2, 3, 0.5f};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(4), xs);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_output(model_branchy(x), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK_MSG(g && g->nguards == 1, "branchy traces one guard: %s", eager_error());
    if (!g)
        return;
    void *buf = NULL;
    size_t len = 0;
    char site[64];
    snprintf(site, sizeof site, "models.c:%d model_branchy", model_branchy_line);
    tg_status st = format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err);
    CHECK_MSG(st == TG_ERR_UNSUPPORTED && !buf && strstr(err, site),
              "guarded graph refused naming %s: %s", site, err);
    format_onnx_save_opts so = {1};
    st = format_onnx_save_mem(g, &so, &buf, &len, err, sizeof err);
    CHECK_MSG(st == TG_OK && buf, "drop_guards exports: %s", err);
    graph *h = buf ? format_onnx_load_mem(buf, len, "b.onnx", NULL, err, sizeof err) : NULL;
    CHECK_MSG(h && h->nguards == 0, "the import has no guards: %s", err);
    free(buf);
    graph_free(h);
    graph_free(g);
}

/* where on bools leaves as And/Or/Not (ONNX Runtime has no bool Where)
 * and comes back as eq/where: the same truth table. */
static void test_bool_where(void)
{
    graph *g = graph_new("bw");
    graph_type t = {GRAPH_BOOL, 1, {8}};
    int32_t in[3], y = -1;
    static const char *const names[3] = {"c", "a", "b"};
    for (int i = 0; g && i < 3; i++) {
        in[i] = graph_add_value(g, GRAPH_VALUE_INPUT, &t, names[i]);
        graph_add_input(g, in[i]);
    }
    CHECK_MSG(g && graph_add_node(g, GRAPH_OP_where, in, 3, NULL, &y, 1) >= 0 &&
                  graph_add_output(g, y, "y") == TG_OK,
              "bool where graph: %s", g ? graph_error(g) : "out of memory");
    graph *h = g ? through_onnx(g, NULL, "bool where") : NULL;
    if (h) {
        uint8_t c[8], a[8], b[8];
        for (int i = 0; i < 8; i++) /* every (c, a, b) */
            c[i] = i >> 2 & 1, a[i] = i >> 1 & 1, b[i] = i & 1;
        eager_pool_push();
        eager_tensor *x[3] = {eager_from_data(GRAPH_BOOL, TG_SHAPE(8), c),
                              eager_from_data(GRAPH_BOOL, TG_SHAPE(8), a),
                              eager_from_data(GRAPH_BOOL, TG_SHAPE(8), b)};
        eager_tensor *out = NULL;
        CHECK_MSG(eager_interpret(h, x, 3, &out, 1, NULL) == TG_OK && out,
                  "bool where runs: %s", eager_error());
        const uint8_t *o = out ? eager_peek(out) : NULL;
        int ok = o && eager_type(out)->dtype == GRAPH_BOOL;
        for (int i = 0; ok && i < 8; i++)
            ok = o[i] == (c[i] ? a[i] : b[i]);
        CHECK_MSG(ok, "bool where through ONNX keeps its truth table");
        eager_release(out);
        eager_pool_pop();
    }
    graph_free(h);
    graph_free(g);
}

int main(void)
{
    test_bool_where();
    for (int k = 0; k < MODEL_COUNT; k++)
        test_model(k);
    test_dim_default();
    test_guards();
    return check_done();
}
