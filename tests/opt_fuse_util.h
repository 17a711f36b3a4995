/*
 * opt_fuse_util.h - helpers of the fusion pass tests (test_opt_fuse.c,
 * test_opt_epilogue.c): graphs from text IR templates with seeded
 * constants, one pass run as the manager runs it, op counts, provenance
 * checks, the interpreter comparison, idempotence and must-not-fire
 * checks with the --explain reason, and replay vs the interpreter.
 *
 * Templates: @R(n) expands to n seeded numbers in [-1, 1], @P(n) to n in
 * [0.5, 1.5] (scales, variances).
 */
#ifndef TG_TESTS_OPT_FUSE_UTIL_H
#define TG_TESTS_OPT_FUSE_UTIL_H

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
#include "replay/replay.h"
#include "graph/graph_impl.h"

/* ---- building graphs from templates ---- */

/* Expands @R(n) / @P(n) into n seeded numbers; the caller frees. */
static inline char *expand(const char *tpl)
{
    size_t cap = strlen(tpl) * 2 + 4096, len = 0;
    char *out = malloc(cap);
    static uint64_t seed = 1;
    for (const char *s = tpl; *s;) {
        int n;
        char kind;
        if (s[0] == '@' && sscanf(s, "@%c(%d)", &kind, &n) == 2) {
            float *v = malloc(sizeof *v * (size_t)(n + 1));
            check_fill(v, n, seed++, kind == 'P' ? 0.5f : -1.0f, kind == 'P' ? 1.5f : 1.0f);
            if (len + (size_t)n * 20 + 8 > cap)
                out = realloc(out, cap = cap * 2 + (size_t)n * 20 + 8);
            out[len++] = '[';
            for (int i = 0; i < n; i++)
                len += (size_t)sprintf(out + len, "%s%.9g", i ? ", " : "", v[i]);
            out[len++] = ']';
            free(v);
            s = strchr(s, ')') + 1;
            continue;
        }
        if (len + 2 > cap)
            out = realloc(out, cap *= 2);
        out[len++] = *s++;
    }
    out[len] = '\0';
    return out;
}

static inline graph *parse_at(const char *file, int line, const char *tpl)
{
    char *text = expand(tpl), err[256] = "";
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    check_report(g != NULL, file, line, "graph parses: %s\n%s", err, text);
    free(text);
    return g;
}
#define PARSE(tpl) parse_at(__FILE__, __LINE__, tpl)

/* Runs one pass on g like the manager does; the explain text in why. */
static inline int run_pass_at(const char *file, int line, graph *g, const opt_pass *p, char *why, size_t len)
{
    opt_options o = opt_default_options();
    opt_pass_stats stats = {p->name, 0, 0, 0, 0, 0, 0};
    char err[512] = "";
    FILE *f = fmemopen(why, len, "w");
    o.explain = f;
    opt_ctx ctx = {&o, &stats, 0, err, sizeof err};
    if (why && len)
        why[0] = '\0';
    tg_status st = p->run(g, &ctx);
    fclose(f);
    check_report(st == TG_OK, file, line, "pass %s runs: %s", p->name, err);
    if (ctx.changed) {
        st = graph_toposort(g);
        if (st == TG_OK)
            st = graph_compact(g);
        if (st == TG_OK)
            st = graph_propagate_dynamic(g);
        if (st == TG_OK)
            st = graph_verify(g, 1);
        check_report(st == TG_OK, file, line, "graph valid after %s: %s", p->name,
                     graph_error(g));
    }
    return ctx.changed;
}

static char why_buf[4096] __attribute__((unused));
#define RUN(g, pass) run_pass_at(__FILE__, __LINE__, (g), &(pass), why_buf, sizeof why_buf)

/* Nonzero if node n carries provenance ids 0..np-1 (p0, p1, ...). */
static inline int has_provs(const graph *g, int32_t n, int np)
{
    for (int p = 0; p < np; p++) {
        int have = 0;
        for (int32_t k = 0; k < g->nodes[n].nprov; k++)
            have |= g->nodes[n].prov[k] == p;
        if (!have)
            return 0;
    }
    return 1;
}

/* Max normalized error of g's outputs vs ref's on seeded inputs. */
static inline double compare(const graph *g, const graph *ref, uint64_t seed)
{
    eager_pool_push();
    eager_tensor *in[8] = {NULL}, *a[8] = {NULL}, *b[8] = {NULL};
    for (int32_t i = 0; i < ref->ninputs; i++) {
        const graph_type *t = &ref->values[ref->inputs[i]].type;
        graph_ints shape = {t->ndim, {0}};
        memcpy(shape.v, t->dim, sizeof(int64_t) * (size_t)t->ndim);
        in[i] = eager_rand_uniform(shape, seed + (uint64_t)i, -1, 1);
    }
    double worst = -1;
    if (eager_interpret(ref, in, ref->ninputs, a, ref->noutputs, NULL) == TG_OK &&
        eager_interpret(g, in, g->ninputs, b, g->noutputs, NULL) == TG_OK) {
        worst = 0;
        for (int32_t k = 0; k < ref->noutputs; k++) {
            if (eager_numel(a[k]) != eager_numel(b[k])) {
                worst = INFINITY;
                break;
            }
            worst = fmax(worst, check_normalized_error(eager_peek(b[k]), eager_peek(a[k]),
                                                       eager_numel(a[k])));
        }
    }
    eager_clear_error();
    for (int32_t k = 0; k < 8; k++) { /* interpreter outputs are the caller's */
        eager_release(a[k]);
        eager_release(b[k]);
    }
    eager_pool_pop();
    return worst;
}

/* Replays g twice (the second run on the prepared state) on x; max
 * normalized error vs the interpreter on ref. */
static inline double replay_error(const graph *g, const graph *ref, eager_tensor *x)
{
    char err[512] = "";
    double worst = -1;
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "optimized graph compiles: %s", err);
    eager_pool_push();
    eager_tensor *want[1] = {NULL};
    if (s && eager_interpret(ref, &x, 1, want, 1, NULL) == TG_OK) {
        for (int run = 0; run < 2; run++) {
            replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                          out = {NULL};
            if (replay_run(s, &in, 1, &out, 1) != TG_OK) {
                worst = INFINITY;
                break;
            }
            worst = fmax(worst, check_normalized_error(out.data, eager_peek(want[0]),
                                                       eager_numel(want[0])));
        }
    }
    eager_release(want[0]);
    eager_pool_pop();
    replay_session_free(s);
    replay_plan_free(p);
    return worst;
}

/*
 * The common tail of a rule test: numerics vs ref, then a second run of
 * the pass changes nothing.
 */
static inline void check_rest(const char *file, int line, graph *g, const graph *ref, const opt_pass *p)
{
    double e = compare(g, ref, (uint64_t)line);
    check_report(e >= 0 && e <= 1e-4, file, line, "%s: normalized error %g", p->name, e);
    char *before = graph_print_str(g, NULL, NULL);
    char why[1024];
    int again = run_pass_at(file, line, g, p, why, sizeof why);
    char *after = graph_print_str(g, NULL, NULL);
    check_report(!again && before && after && !strcmp(before, after), file, line,
                 "%s is idempotent", p->name);
    free(before);
    free(after);
}

/* Runs pass p on a copy; checks that it does not fire and why it declined. */
static inline void check_no_fire(const char *file, int line, const char *tpl, const opt_pass *p, const char *reason)
{
    graph *g = parse_at(file, line, tpl);
    if (!g)
        return;
    char *before = graph_print_str(g, NULL, NULL), why[2048];
    int changed = run_pass_at(file, line, g, p, why, sizeof why);
    char *after = graph_print_str(g, NULL, NULL);
    check_report(!changed && before && after && !strcmp(before, after), file, line,
                 "%s must not fire", p->name);
    check_report(!reason || strstr(why, reason) != NULL, file, line,
                 "explained \"%s\", want \"%s\"", why, reason ? reason : "");
    free(before);
    free(after);
    graph_free(g);
}
#define NO_FIRE(tpl, pass, reason) check_no_fire(__FILE__, __LINE__, (tpl), &(pass), (reason))

#define PROV "provenance {\n p0 = \"m.c\":1 \"f\"\n p1 = \"m.c\":2 \"f\"\n" \
             " p2 = \"m.c\":3 \"f\"\n p3 = \"m.c\":4 \"f\"\n}\n"

#endif
