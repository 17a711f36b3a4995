/*
 * pass.c - the pass manager: pipelines by level, the -O1 fixed point,
 * per-pass statistics, and the checks after every pass (verifier, dynamic
 * dims, optional print-after-each and verify-each).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../graph/alloc.h"
#include "../graph/invariants.h"
#include "../eager/cpu_target.h"
#include "../eager/interp.h"
#include "../graph/text.h"
#include "opt.h"
#include "../graph/graph_impl.h"

opt_options opt_default_options(void)
{
    opt_options o = OPT_OPTIONS_INIT;
    return o;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The state of one optimization run. */
typedef struct run_state {
    graph *g;
    const opt_options *o;
    opt_report *rep;
    char *err;
    size_t errlen;
    uint32_t *out_dyn;  /* dynamic marks of each output, before */
    eager_tensor **ref; /* verify_each: reference outputs, or NULL */
    eager_tensor **in;  /* verify_each: the inputs */
    int64_t fold_left;  /* bytes folding may still make (opt_options.fold_budget) */
} run_state;

static opt_pass_stats *stats_for(opt_report *rep, const char *name)
{
    for (int i = 0; i < rep->npasses; i++)
        if (strcmp(rep->pass[i].name, name) == 0)
            return &rep->pass[i];
    if (rep->npasses == OPT_MAX_PASSES)
        return &rep->pass[OPT_MAX_PASSES - 1];
    opt_pass_stats *s = &rep->pass[rep->npasses++];
    memset(s, 0, sizeof *s);
    s->name = name;
    return s;
}

/* Largest normalized error of the current graph's outputs vs the reference:
 * max |a - b| / max(max |b|, 1e-6) per output; -1 if it cannot run. */
static double compare_to_ref(run_state *rs)
{
    graph *g = rs->g;
    eager_tensor **out = tg_calloc((size_t)g->noutputs + 1, sizeof *out);
    double worst = -1;
    if (out && eager_interpret(g, rs->in, g->ninputs, out, g->noutputs, NULL) == TG_OK) {
        worst = 0;
        for (int32_t k = 0; k < g->noutputs; k++) {
            const graph_type *t = eager_type(out[k]);
            if (t->dtype != GRAPH_F32 || eager_numel(out[k]) != eager_numel(rs->ref[k])) {
                worst = eager_numel(out[k]) != eager_numel(rs->ref[k]) ? INFINITY : worst;
                continue;
            }
            const float *a = eager_peek(out[k]), *b = eager_peek(rs->ref[k]);
            double scale = 1e-6, diff = 0;
            for (int64_t i = 0; i < eager_numel(out[k]); i++) {
                scale = fmax(scale, fabs(b[i]));
                double d = fabs((double)a[i] - b[i]);
                diff = d > diff || d != d ? d : diff;
            }
            worst = fmax(worst, diff != diff ? INFINITY : diff / scale);
        }
    }
    eager_clear_error();
    for (int32_t k = 0; out && k < g->noutputs; k++)
        eager_release(out[k]);
    tg_free(out);
    return worst;
}

/* After a pass changed the graph: sort, compact, re-mark dims, check. */
static tg_status settle(run_state *rs, const opt_pass *p)
{
    graph *g = rs->g;
    tg_status st = graph_toposort(g);
    if (st == TG_OK)
        st = graph_compact(g);
    if (st == TG_OK)
        st = graph_propagate_dynamic(g);
    if (st != TG_OK) {
        snprintf(rs->err, rs->errlen, "after pass %s: %s", p->name, graph_error(g));
        return st;
    }
    graph_assert_links(g); /* a pass that broke a link stops here, named by the stack */
    for (int32_t k = 0; k < g->noutputs; k++) {
        if (g->values[g->outputs[k].value].dyn != rs->out_dyn[k]) {
            snprintf(rs->err, rs->errlen, "pass %s changed the dynamic dims of output "
                     "\"%s\"", p->name, g->outputs[k].name);
            return TG_ERR_STATE;
        }
    }
    if (rs->o->verify && (st = graph_verify(g, 1)) != TG_OK) {
        snprintf(rs->err, rs->errlen, "pass %s left an invalid graph: %s", p->name,
                 graph_error(g));
        return st;
    }
    return TG_OK;
}

/* Runs one pass; *changed tells whether it edited the graph. */
static tg_status run_pass(run_state *rs, const opt_pass *p, int *changed)
{
    opt_pass_stats *s = stats_for(rs->rep, p->name);
    opt_ctx ctx = {rs->o, s, 0, rs->err, rs->errlen, &rs->fold_left};
    double t0 = now_ms();
    tg_status st = p->run(rs->g, &ctx);
    if (st == TG_OK && ctx.changed)
        st = settle(rs, p);
    s->runs++;
    s->ms += now_ms() - t0;
    if (st != TG_OK) {
        if (!rs->err[0])
            snprintf(rs->err, rs->errlen, "pass %s: %s", p->name, tg_status_str(st));
        return st;
    }
    *changed = ctx.changed;
    if (ctx.changed && rs->o->print_after_each) {
        fprintf(rs->o->print_after_each, "; after %s\n", p->name);
        graph_print(rs->g, rs->o->print_after_each, NULL);
    }
    if (ctx.changed && rs->ref && !rs->rep->bad_pass[0]) {
        double e = compare_to_ref(rs);
        if (e < 0 || e > rs->o->verify_rtol) {
            snprintf(rs->rep->bad_pass, sizeof rs->rep->bad_pass, "%s", p->name);
            rs->rep->bad_error = e < 0 ? INFINITY : e;
        }
    }
    return TG_OK;
}

static const opt_pass *const o1_passes[] = {&opt_pass_fold, &opt_pass_simplify,
                                             &opt_pass_cse, &opt_pass_dce};

/* fold, simplify, CSE, DCE until none changes anything (at most 16 rounds). */
static tg_status fixed_point(run_state *rs)
{
    for (int round = 0; round < 16; round++) {
        int any = 0;
        rs->rep->iterations++;
        for (size_t i = 0; i < sizeof o1_passes / sizeof o1_passes[0]; i++) {
            int changed = 0;
            tg_status st = run_pass(rs, o1_passes[i], &changed);
            if (st != TG_OK)
                return st;
            any |= changed;
        }
        if (!any)
            return TG_OK;
    }
    return TG_OK;
}

static const opt_pass *const o2_passes[] = {
    &opt_pass_view_sink, &opt_pass_conv_bn, &opt_pass_conv_taps, &opt_pass_transpose_absorb, &opt_pass_patterns,
    &opt_pass_horizontal, &opt_pass_epilogue, &opt_pass_ewchain};

static tg_status pipeline(run_state *rs)
{
    int changed;
    tg_status st = fixed_point(rs);
    if (st != TG_OK || rs->o->level < 2)
        return st;
    if (!rs->o->keep_params && (st = run_pass(rs, &opt_pass_fold_params, &changed)) != TG_OK)
        return st;
    if ((st = fixed_point(rs)) != TG_OK)
        return st;
    for (size_t i = 0; i < sizeof o2_passes / sizeof o2_passes[0]; i++)
        if ((st = run_pass(rs, o2_passes[i], &changed)) != TG_OK ||
            (changed && (st = fixed_point(rs)) != TG_OK))
            return st;
    if (rs->o->level >= 3 && (st = run_pass(rs, &opt_pass_layout, &changed)) == TG_OK && changed)
        st = fixed_point(rs);
    return st;
}

/* Seeded inputs at the traced shapes and the unoptimized outputs. */
static void make_reference(run_state *rs)
{
    graph *g = rs->g;
    rs->in = tg_calloc((size_t)g->ninputs + 1, sizeof *rs->in);
    rs->ref = tg_calloc((size_t)g->noutputs + 1, sizeof *rs->ref);
    if (!rs->in || !rs->ref)
        goto fail;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const graph_type *t = &g->values[g->inputs[i]].type;
        graph_ints shape = {t->ndim, {0}};
        memcpy(shape.v, t->dim, sizeof(int64_t) * (size_t)t->ndim);
        /* kept: released by opt_optimize even when a caller's pool adopted them */
        rs->in[i] = eager_keep(t->dtype == GRAPH_F32
                                   ? eager_rand_uniform(shape, rs->o->verify_seed + (uint64_t)i,
                                                        -1, 1)
                                   : eager_zeros(t->dtype, shape));
        if (!rs->in[i])
            goto fail;
    }
    if (eager_interpret(g, rs->in, g->ninputs, rs->ref, g->noutputs, NULL) == TG_OK)
        return;
fail:
    /* Guards may refuse random inputs: verify-each is then unavailable. */
    snprintf(rs->rep->bad_pass, sizeof rs->rep->bad_pass, "%s", "");
    for (int32_t k = 0; rs->ref && k < g->noutputs; k++)
        eager_release(rs->ref[k]);
    tg_free(rs->ref);
    rs->ref = NULL;
    eager_clear_error();
}

/* Ops whose implementation a target names (graph_target.impl_of). */
static int has_impl(graph_op op)
{
    return op == GRAPH_OP_conv2d || op == GRAPH_OP_conv2d_ep || op == GRAPH_OP_conv2d_blk ||
           op == GRAPH_OP_matmul || op == GRAPH_OP_linear || op == GRAPH_OP_linear_ep;
}

/*
 * --explain: the target, then the implementation each live conv / matmul
 * node will run there ("oneDNN: node 7 (conv2d_blk at ...): jit:avx512_core"),
 * at the target's threads, its constant inputs fixed, as a replay plan
 * prepares it; a reference one is flagged.
 */
static void explain_impls(const graph *g, const opt_options *o)
{
    opt_pass_stats stats = {"oneDNN"};
    opt_ctx ctx = {o, &stats, 0, NULL, 0};
    graph_target host;
    const graph_target *t = o->target;
    if (!o->explain)
        return;
    if (!t) {
        eager_cpu_target(1, &host);
        t = &host;
    }
    fprintf(o->explain, "target: %s, %d thread%s, blocks of %d channels (%s)%s%s\n", t->name,
            t->threads, t->threads == 1 ? "" : "s", t->block, t->why,
            g->target ? "; the graph's layout is planned for " : "",
            g->target ? g->target : "");
    for (int32_t i = 0; t->impl_of && i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if ((n->flags & GRAPH_NODE_DEAD) || !has_impl(n->op) || n->nout != 1 ||
            n->nin > GRAPH_MAX_NODE_IO)
            continue;
        graph_type in[GRAPH_MAX_NODE_IO];
        uint32_t fixed = 0;
        for (int j = 0; j < n->nin; j++) {
            const graph_value *v = &g->values[n->in[j]];
            in[j] = v->type;
            if (v->kind == GRAPH_VALUE_CONST || v->kind == GRAPH_VALUE_PARAM)
                fixed |= 1u << j;
        }
        char impl[64], why[200];
        tg_status st = t->impl_of(t, n->op, tg_node_attrs(n), in, n->nin,
                                  &g->values[n->out[0]].type, fixed, impl, sizeof impl, why,
                                  sizeof why);
        if (st != TG_OK)
            opt_explain(&ctx, g, i, "no implementation: %s", why[0] ? why : tg_status_str(st));
        else if (!impl[0])
            opt_explain(&ctx, g, i, "not called (an empty operand)");
        else
            opt_explain(&ctx, g, i, "%s%s", impl,
                        t->impl_is_ref && t->impl_is_ref(impl) ? " (a reference kernel: slow)"
                                                               : "");
    }
}

/*
 * The bytes of constants folding may make in one opt_optimize call: the
 * caller's fold_budget, or OPT_FOLD_BUDGET_MIN plus twice the graph's
 * constants and params (which -O2 may fold: a transposed weight is a copy).
 * One bound for the whole call, not per node: a chain of nodes each 4x its
 * input passes any per-node ratio while its last constant is 4^n times the
 * first (a 1.5 KB file folded to 9 GB before this bound).
 */
static int64_t fold_budget(const graph *g, const opt_options *o)
{
    if (o->fold_budget > 0)
        return o->fold_budget;
    int64_t have = 0;
    for (int32_t v = 0; v < g->nvalues; v++) {
        const graph_value *val = &g->values[v];
        if ((val->kind == GRAPH_VALUE_CONST || val->kind == GRAPH_VALUE_PARAM) && val->data)
            have += (int64_t)graph_value_nbytes(val);
    }
    return have > (INT64_MAX - OPT_FOLD_BUDGET_MIN) / 2 ? INT64_MAX
                                                         : OPT_FOLD_BUDGET_MIN + 2 * have;
}

tg_status opt_optimize(graph *g, const opt_options *o, opt_report *rep, char *err,
                       size_t errlen)
{
    opt_options defaults = opt_default_options();
    opt_report local;
    char tmp[512];
    if (!o)
        o = &defaults;
    if (!rep)
        rep = &local;
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    memset(rep, 0, sizeof *rep);
    err[0] = '\0';
    if (!g) {
        snprintf(err, errlen, "optimize: no graph (NULL)");
        return TG_ERR_NULL;
    }
    if (o->level < 0 || o->level > 3) {
        snprintf(err, errlen, "optimize: level %d is not one of 0, 1, 2, 3 (opt_options.level)",
                 o->level);
        return TG_ERR_ARG;
    }
    if (o->fold_budget < 0) {
        snprintf(err, errlen, "optimize: fold_budget %lld is negative (0 takes the default)",
                 (long long)o->fold_budget);
        return TG_ERR_ARG;
    }
    if (!(o->verify_rtol >= 0)) {
        snprintf(err, errlen, "optimize: verify_rtol %g is not a tolerance (0 or more)",
                 o->verify_rtol);
        return TG_ERR_ARG;
    }
    rep->nodes_before = rep->nodes_after = graph_live_nodes(g);
    if (o->level == 0) {
        explain_impls(g, o);
        return TG_OK;
    }
    run_state rs = {g, o, rep, err, errlen, NULL, NULL, NULL, fold_budget(g, o)};
    rs.out_dyn = tg_malloc(sizeof(uint32_t) * ((size_t)g->noutputs + 1));
    if (!rs.out_dyn) {
        snprintf(err, errlen, "optimize: out of memory");
        return TG_ERR_NOMEM;
    }
    for (int32_t k = 0; k < g->noutputs; k++)
        rs.out_dyn[k] = g->values[g->outputs[k].value].dyn;
    if (o->verify_each)
        make_reference(&rs);
    tg_status st = pipeline(&rs);
    rep->nodes_after = graph_live_nodes(g);
    if (st == TG_OK)
        explain_impls(g, o);
    for (int32_t k = 0; rs.ref && k < g->noutputs; k++)
        eager_release(rs.ref[k]);
    for (int32_t i = 0; rs.in && i < g->ninputs; i++)
        eager_release(rs.in[i]);
    tg_free(rs.ref);
    tg_free(rs.in);
    tg_free(rs.out_dyn);
    return st;
}

int opt_has_blocked(const graph *g)
{
    for (int32_t i = 0; g && i < g->nnodes; i++) {
        graph_op op = g->nodes[i].op;
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) &&
            (op == GRAPH_OP_to_blocked || op == GRAPH_OP_from_blocked ||
             op == GRAPH_OP_conv2d_blk || op == GRAPH_OP_max_pool2d_blk ||
             op == GRAPH_OP_avg_pool2d_blk))
            return 1;
    }
    return 0;
}

tg_status opt_relayout(const graph *g, const graph_target *t, FILE *explain, graph **out,
                       char *err, size_t errlen)
{
    char tmp[512];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    err[0] = '\0';
    if (out)
        *out = NULL;
    if (!g || !t || !out) {
        snprintf(err, errlen, "relayout: NULL argument");
        return TG_ERR_NULL;
    }
    if (g->target ? strcmp(g->target, t->name) == 0 : !opt_has_blocked(g))
        return TG_OK;
    opt_options o = OPT_OPTIONS_INIT;
    o.level = 3;
    o.target = t;
    o.explain = explain;
    opt_report rep;
    memset(&rep, 0, sizeof rep);
    graph *c = graph_clone(g);
    if (!c) {
        snprintf(err, errlen, "relayout: out of memory");
        return TG_ERR_NOMEM;
    }
    run_state rs = {c, &o, &rep, err, errlen, NULL, NULL, NULL, fold_budget(c, &o)};
    rs.out_dyn = tg_malloc(sizeof(uint32_t) * ((size_t)c->noutputs + 1));
    tg_status st = rs.out_dyn ? TG_OK : TG_ERR_NOMEM;
    if (st == TG_ERR_NOMEM)
        snprintf(err, errlen, "relayout: out of memory");
    for (int32_t k = 0; st == TG_OK && k < c->noutputs; k++)
        rs.out_dyn[k] = c->values[c->outputs[k].value].dyn;
    int changed;
    if (st == TG_OK)
        st = run_pass(&rs, &opt_pass_unlayout, &changed);
    if (st == TG_OK)
        st = fixed_point(&rs);
    if (st == TG_OK)
        st = run_pass(&rs, &opt_pass_layout, &changed);
    if (st == TG_OK)
        st = fixed_point(&rs);
    tg_free(rs.out_dyn);
    if (st != TG_OK) {
        graph_free(c);
        return st;
    }
    *out = c;
    return TG_OK;
}

void opt_report_print(const opt_report *rep, FILE *f)
{
    if (!rep || !f)
        return;
    fprintf(f, "%-20s %5s %8s %7s %9s %12s %9s\n", "pass", "runs", "removed", "fused",
            "rewritten", "bytes saved", "ms");
    for (int i = 0; i < rep->npasses; i++) {
        const opt_pass_stats *s = &rep->pass[i];
        fprintf(f, "%-20s %5d %8d %7d %9d %12lld %9.3f\n", s->name, s->runs, s->removed,
                s->fused, s->rewritten, (long long)s->bytes, s->ms);
    }
    fprintf(f, "nodes: %d -> %d (%d fixed-point rounds)\n", rep->nodes_before,
            rep->nodes_after, rep->iterations);
    if (rep->bad_pass[0])
        fprintf(f, "verify-each: pass %s changed an output (normalized error %g)\n",
                rep->bad_pass, rep->bad_error);
}
