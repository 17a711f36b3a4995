/*
 * opt_test_util.h - helpers shared by the optimizer pass tests
 * (test_opt_*.c): text IR in, one pass run the way the manager runs it,
 * structural queries, and numeric comparison of an optimized graph with
 * the reference interpreter on the original graph.
 */
#ifndef TG_TESTS_OPT_TEST_UTIL_H
#define TG_TESTS_OPT_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "graph_query.h"
#include "optimize/opt.h"
#include "graph/graph_impl.h"

/* Parses text IR (the test fails on a parse error). */
static inline graph *ir(const char *text)
{
    char err[512] = "";
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(g != NULL, "test IR parses: %s", err);
    return g;
}

/* The text of g without provenance (for messages). */
static inline char *ir_text(const graph *g)
{
    graph_print_opts o = GRAPH_PRINT_DEFAULTS;
    o.provenance = 0;
    o.comments = 0;
    return graph_print_str(g, &o, NULL);
}

/*
 * Runs pass p once on g as the manager does (sort, compact, dynamic dims,
 * verify after a change) and returns its stats; *changed if not NULL.
 */
static inline opt_pass_stats run_pass_opts(graph *g, const opt_pass *p, const opt_options *o,
                                           int *changed)
{
    opt_pass_stats st;
    memset(&st, 0, sizeof st);
    st.name = p->name;
    char err[512] = "";
    opt_ctx ctx = {o, &st, 0, err, sizeof err};
    tg_status s = p->run(g, &ctx);
    CHECK_MSG(s == TG_OK, "pass %s runs: %s", p->name, err);
    if (ctx.changed) {
        tg_status v = graph_toposort(g);
        if (v == TG_OK)
            v = graph_compact(g);
        if (v == TG_OK)
            v = graph_propagate_dynamic(g);
        if (v == TG_OK)
            v = graph_verify(g, 1);
        CHECK_MSG(v == TG_OK, "graph valid after %s: %s", p->name, graph_error(g));
    }
    if (changed)
        *changed = ctx.changed;
    st.runs = 1;
    return st;
}

static inline opt_pass_stats run_pass(graph *g, const opt_pass *p, int finite_math)
{
    opt_options o = opt_default_options();
    o.finite_math = finite_math;
    return run_pass_opts(g, p, &o, NULL);
}

/* opt_optimize at -O1; returns the report. */
static inline opt_report run_o1(graph *g, int finite_math)
{
    opt_options o = opt_default_options();
    o.level = 1;
    o.finite_math = finite_math;
    opt_report rep;
    char err[512] = "";
    tg_status st = opt_optimize(g, &o, &rep, err, sizeof err);
    CHECK_MSG(st == TG_OK, "-O1 runs: %s", err);
    return rep;
}

/* Sum of removed + rewritten + fused over a report's passes. */
static inline int32_t report_edits(const opt_report *rep)
{
    int32_t n = 0;
    for (int i = 0; i < rep->npasses; i++)
        n += rep->pass[i].removed + rep->pass[i].rewritten + rep->pass[i].fused;
    return n;
}

/* The value named name (text IR %name), or -1. */
static inline int32_t value_named(const graph *g, const char *name)
{
    for (int32_t v = 0; v < g->nvalues; v++)
        if (g->values[v].name && strcmp(g->values[v].name, name) == 0)
            return v;
    return -1;
}

/* Seeded inputs for g's signature; dynamic dims at size dyn (if > 0). */
static inline void make_inputs(const graph *g, int64_t dyn, uint64_t seed, float lo, float hi,
                               eager_tensor **in)
{
    for (int32_t i = 0; i < g->ninputs; i++) {
        const graph_value *v = &g->values[g->inputs[i]];
        graph_ints shape = {v->type.ndim, {0}};
        for (int d = 0; d < v->type.ndim; d++)
            shape.v[d] = (dyn > 0 && (v->dyn >> d & 1)) ? dyn : v->type.dim[d];
        if (v->type.dtype == GRAPH_F32) {
            in[i] = eager_rand_uniform(shape, seed + (uint64_t)i, lo, hi);
        } else {
            eager_tensor *f = eager_rand_uniform(shape, seed + (uint64_t)i, -50, 50);
            in[i] = eager_cast(f, v->type.dtype); /* f is the caller's pool's */
        }
    }
}

/* Largest normalized difference of two outputs (inf if they differ in
 * type or in where they are NaN). */
static inline double out_error(eager_tensor *a, eager_tensor *b)
{
    const graph_type *ta = eager_type(a), *tb = eager_type(b);
    if (ta->dtype != tb->dtype || ta->ndim != tb->ndim)
        return INFINITY;
    for (int d = 0; d < ta->ndim; d++)
        if (ta->dim[d] != tb->dim[d])
            return INFINITY;
    if (ta->dtype != GRAPH_F32)
        return memcmp(eager_peek(a), eager_peek(b), eager_nbytes(a)) == 0 ? 0 : INFINITY;
    const float *x = eager_peek(a), *y = eager_peek(b);
    double scale = 1e-6, diff = 0;
    for (int64_t i = 0; i < eager_numel(a); i++) {
        if (isnan(x[i]) || isnan(y[i])) {
            if (isnan(x[i]) != isnan(y[i]))
                return INFINITY;
            continue;
        }
        if (isinf(y[i]) || isinf(x[i])) {
            if (x[i] != y[i])
                return INFINITY;
            continue;
        }
        scale = fmax(scale, fabs(y[i]));
        diff = fmax(diff, fabs((double)x[i] - y[i]));
    }
    return diff / scale;
}

/*
 * Runs ref and opt (same signature) on the same seeded inputs, dynamic
 * dims at size dyn (0: as traced), inputs in [lo, hi); checks every output
 * within 1e-4 normalized error.  Returns the largest error.
 */
static inline double compare_at(const graph *ref, const graph *opt, int64_t dyn, float lo,
                                float hi, const char *what)
{
    eager_pool_push();
    eager_tensor *in[16] = {NULL}, *a[16] = {NULL}, *b[16] = {NULL};
    make_inputs(ref, dyn, 7, lo, hi, in);
    tg_status s1 = eager_interpret(ref, in, ref->ninputs, a, ref->noutputs, NULL);
    tg_status s2 = eager_interpret(opt, in, opt->ninputs, b, opt->noutputs, NULL);
    CHECK_MSG(s1 == TG_OK && s2 == TG_OK, "%s: both graphs run (%s)", what, eager_error());
    eager_clear_error();
    double worst = 0;
    for (int32_t k = 0; s1 == TG_OK && s2 == TG_OK && k < ref->noutputs; k++)
        worst = fmax(worst, out_error(b[k], a[k]));
    CHECK_MSG(worst <= 1e-4, "%s: optimized output differs (normalized error %g)", what, worst);
    for (int32_t k = 0; k < 16; k++) {
        eager_release(a[k]);
        eager_release(b[k]);
    }
    eager_pool_pop();
    return worst;
}

static inline double compare(const graph *ref, const graph *opt, const char *what)
{
    return compare_at(ref, opt, 0, -1, 1, what);
}

/* Running -O1 again on g changes nothing. */
static inline void check_idempotent(graph *g, int finite_math, const char *what)
{
    opt_report rep = run_o1(g, finite_math);
    CHECK_MSG(report_edits(&rep) == 0 && rep.nodes_before == rep.nodes_after,
              "%s: a second -O1 run changes nothing (%d edits)", what, report_edits(&rep));
}

#endif
