/* example_util.h - timing helpers shared by the examples. */
#ifndef TG_EXAMPLE_UTIL_H
#define TG_EXAMPLE_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline double example_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int example_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n timings (sorts them). */
static inline double example_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, example_cmp);
    return t[n / 2];
}

#endif
