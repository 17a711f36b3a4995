/*
 * chain_pattern_util.h - helpers shared by test_opt_ewchain.c and
 * test_opt_patterns.c: parse text IR, run one pass the way the pass
 * manager does (then sort, compact, re-mark dynamic dims, verify), count
 * ops, and compare a graph's outputs with the reference interpreter's
 * outputs of another graph on seeded inputs.
 */
#ifndef TG_TESTS_CHAIN_PATTERN_UTIL_H
#define TG_TESTS_CHAIN_PATTERN_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "graph/graph_impl.h"

/* Parses text; reports a failure (with the parser's message) at line. */
static inline graph *fu_parse(int line, const char *text)
{
    char err[512];
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    check_report(g != NULL, __FILE__, line, "parse: %s", err);
    return g;
}
#define PARSE(text) fu_parse(__LINE__, text)

/*
 * Runs pass p once on g as the manager would, --explain text written to
 * explain (may be NULL).  Returns 1 if it changed g, 0 if not, -1 on an
 * error (reported at line).
 */
static inline int fu_run(int line, graph *g, const opt_pass *p, FILE *explain)
{
    opt_options o = opt_default_options();
    o.explain = explain;
    opt_pass_stats s;
    memset(&s, 0, sizeof s);
    s.name = p->name;
    char err[600] = "";
    opt_ctx ctx = {&o, &s, 0, err, sizeof err};
    tg_status st = p->run(g, &ctx);
    if (st == TG_OK && ctx.changed) {
        st = graph_toposort(g);
        if (st == TG_OK)
            st = graph_compact(g);
        if (st == TG_OK)
            st = graph_propagate_dynamic(g);
        if (st == TG_OK)
            st = graph_verify(g, 1);
        if (st != TG_OK)
            snprintf(err, sizeof err, "%s", graph_error(g));
    }
    check_report(st == TG_OK, __FILE__, line, "pass %s: %s", p->name, err);
    return st != TG_OK ? -1 : ctx.changed;
}
#define RUN(g, pass) fu_run(__LINE__, g, &(pass), NULL)

static inline int fu_count(const graph *g, graph_op op)
{
    int n = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        n += !(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op;
    return n;
}

/* The first live node with op, or NULL. */
static inline const graph_node *fu_find(const graph *g, graph_op op)
{
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op)
            return &g->nodes[i];
    return NULL;
}

/* The producer of output k, or NULL. */
static inline const graph_node *fu_output_node(const graph *g, int k)
{
    int32_t n = g->values[g->outputs[k].value].node;
    return n >= 0 ? &g->nodes[n] : NULL;
}

/*
 * Largest normalized error (max |a - b| / max |b| per output) of opt's
 * outputs vs the interpreter on ref, on inputs uniform in [lo, hi) from
 * seed (ints: zeros); INFINITY if either run fails.
 */
static inline double fu_compare(const graph *ref, const graph *opt, uint64_t seed, float lo,
                                float hi)
{
    double worst = INFINITY;
    eager_pool_push();
    eager_tensor *in[16], *a[16], *b[16];
    int ni = ref->ninputs, no = ref->noutputs;
    if (ni > 16 || no > 16 || ni != opt->ninputs || no != opt->noutputs)
        goto out;
    for (int i = 0; i < ni; i++) {
        const graph_type *t = &ref->values[ref->inputs[i]].type;
        graph_ints shape = {t->ndim, {0}};
        memcpy(shape.v, t->dim, sizeof(int64_t) * (size_t)t->ndim);
        in[i] = t->dtype == GRAPH_F32 ? eager_rand_uniform(shape, seed + (uint64_t)i, lo, hi)
                                      : eager_zeros(t->dtype, shape);
    }
    if (eager_interpret(ref, in, ni, a, no, NULL) != TG_OK)
        goto out;
    if (eager_interpret(opt, in, ni, b, no, NULL) != TG_OK) {
        for (int k = 0; k < no; k++)
            eager_release(a[k]);
        goto out;
    }
    worst = 0;
    for (int k = 0; k < no; k++) {
        int64_t n = eager_numel(a[k]);
        if (n != eager_numel(b[k]) || eager_dtype(a[k]) != GRAPH_F32) {
            worst = n != eager_numel(b[k]) ? INFINITY : worst;
        } else {
            const float *x = eager_peek(a[k]), *y = eager_peek(b[k]);
            double scale = 1e-6, diff = 0;
            for (int64_t i = 0; i < n; i++) {
                scale = fmax(scale, fabs(x[i]));
                double d = fabs((double)x[i] - y[i]);
                diff = d > diff || d != d ? d : diff;
            }
            worst = fmax(worst, diff != diff ? INFINITY : diff / scale);
        }
        eager_release(a[k]);
        eager_release(b[k]);
    }
out:
    if (eager_status() != TG_OK) {
        fprintf(stderr, "     (compare: %s)\n", eager_error());
        eager_clear_error();
    }
    eager_pool_pop();
    return worst;
}

/* The text of g with all data inline, for idempotence checks. */
static inline char *fu_text(const graph *g)
{
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    po.inline_all = 1;
    return graph_print_str(g, &po, NULL);
}

#endif
