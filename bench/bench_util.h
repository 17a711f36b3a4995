/* bench_util.h - timing helpers shared by the benchmark programs. */
#ifndef TG_BENCH_UTIL_H
#define TG_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "eager/eager.h"
#include "replay/replay.h"

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
    replay_tensor in = {"x", *eager_type(x), (void *)eager_peek(x)}, out = {NULL};
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
