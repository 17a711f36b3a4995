/* bench_util.h - timing helpers shared by the benchmark programs. */
#ifndef TG_BENCH_UTIL_H
#define TG_BENCH_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eager/eager.h"
#include "replay/replay.h"
#include "workloads/workloads.h"

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Something to time: run(ctx) is one run, 0 on success; t gets the
 * times (ms) of the timed runs; a runner that fails stops being timed. */
typedef struct bench_runner {
    int (*run)(void *ctx);
    void *ctx;
    double *t;
    int failed;
} bench_runner;

/*
 * Times n runners in rounds, one run of each per round, so that a burst of
 * load from elsewhere on the machine hits every runner alike and their
 * ratios stay fair.  Warm-up: >= 3 runs and >= 20 ms of each.  Then
 * rounds until each has >= min_runs runs and the rounds took budget_ms
 * per runner (at most max_runs).  Returns the rounds timed.
 */
static inline int bench_rounds(bench_runner *r, int n, int min_runs, double budget_ms,
                               int max_runs)
{
    for (int k = 0; k < n; k++) {
        double t0 = bench_now_ns() / 1e6;
        for (int i = 0; !r[k].failed && (i < 3 || bench_now_ns() / 1e6 - t0 < 20); i++)
            r[k].failed = r[k].run(r[k].ctx) != 0;
    }
    int runs = 0;
    double t0 = bench_now_ns() / 1e6;
    while (runs < max_runs && (runs < min_runs || bench_now_ns() / 1e6 - t0 < budget_ms * n)) {
        for (int k = 0; k < n; k++) {
            if (r[k].failed)
                continue;
            double s = bench_now_ns() / 1e6;
            r[k].failed = r[k].run(r[k].ctx) != 0;
            r[k].t[runs] = bench_now_ns() / 1e6 - s;
        }
        runs++;
    }
    return runs;
}

/* JSON numbers (null for NaN and infinities) and strings. */
static inline void bench_json_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, "%.6g", x);
    else
        fputs("null", f);
}

static inline void bench_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* One eager forward of a workload (a bench_runner's run): 0 on success. */
static inline int bench_workload_once(void *p)
{
    const workload *w = p;
    eager_pool_push();
    int bad = workload_forward(w, w->x) == NULL;
    eager_pool_pop();
    return bad;
}

/* A comma-separated list of workload names (--workloads) into
 * use[WL_COUNT], 1 for each named; 0 after naming an unknown one on
 * stderr (prog: the tool's name). */
static inline int bench_workload_list(const char *prog, const char *arg, int *use)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    memset(use, 0, sizeof(int) * WL_COUNT);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k = workload_find(tok);
        if (k < 0) {
            fprintf(stderr, "%s: unknown workload '%s'\n", prog, tok);
            return 0;
        }
        use[k] = 1;
    }
    return 1;
}

/* Sorts t[0..n) and returns its median. */
static inline double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    return t[n / 2];
}

/*
 * Median ns of reps replay runs of g (freed here) on its input "x" = x,
 * after 3 warm-up runs.  Benchmarks have no way on without it, so a
 * failure to plan (or a NULL g) prints why and exits.
 */
static inline double bench_replay_median_ns(graph *g, const eager_tensor *x, int reps)
{
    char err[512] = "no graph (tracing or optimizing failed)";
    replay_plan *pl = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = pl ? replay_session_new(pl, NULL, 0) : NULL;
    double *t = malloc(sizeof *t * (size_t)reps);
    if (!s || !t) {
        fprintf(stderr, "replay setup failed: %s\n", pl ? "out of memory" : err);
        exit(1);
    }
    replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)}, out = {NULL};
    for (int r = -3; r < reps; r++) {
        double t0 = bench_now_ns();
        replay_run(s, &in, 1, &out, 1);
        if (r >= 0)
            t[r] = bench_now_ns() - t0;
    }
    double med = bench_median(t, reps);
    free(t);
    replay_session_free(s);
    replay_plan_free(pl);
    graph_free(g);
    return med;
}

#endif
