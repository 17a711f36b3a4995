/* bench_util.h - timing helpers shared by the benchmark programs. */
#ifndef TG_BENCH_UTIL_H
#define TG_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

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

#endif
