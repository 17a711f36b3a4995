/*
 * shape_util.h - helpers shared by test_shape.c and test_shape2.c: typed
 * test data, row-major index arithmetic written independently of the
 * library's, element-wise comparison by bits, and error-site checks.
 */
#ifndef TG_TESTS_SHAPE_UTIL_H
#define TG_TESTS_SHAPE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

static const graph_dtype all_dtypes[] = {GRAPH_F32, GRAPH_I64, GRAPH_I32,
                                         GRAPH_BOOL};

static inline size_t dt_size(graph_dtype dt)
{
    return dt == GRAPH_I64 ? 8 : dt == GRAPH_BOOL ? 1 : 4;
}

/* Deterministic, mostly distinct values for element i of dtype dt. */
static inline void fill_seq(graph_dtype dt, void *p, int64_t n, int seed)
{
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case GRAPH_F32: ((float *)p)[i] = (float)((double)i * 0.25 + seed); break;
        case GRAPH_I64:
            ((int64_t *)p)[i] = i * 1000003LL + seed - (1LL << 40);
            break;
        case GRAPH_I32: ((int32_t *)p)[i] = (int32_t)(i * 7 + seed); break;
        default: ((uint8_t *)p)[i] = (uint8_t)((i * 13 + seed) % 3 == 0);
        }
    }
}

static inline int64_t ints_numel(graph_ints s)
{
    int64_t n = 1;
    for (int i = 0; i < s.n; i++)
        n *= s.v[i];
    return n;
}

/* A tensor of dt and shape filled by fill_seq. */
static inline eager_tensor *make_seq(graph_dtype dt, graph_ints shape,
                                     int seed)
{
    int64_t n = ints_numel(shape);
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    fill_seq(dt, buf, n, seed);
    eager_tensor *t = eager_from_data(dt, shape, buf);
    free(buf);
    return t;
}

/* Row-major flat index -> multi-index, and back. */
static inline void unravel_idx(int64_t flat, const int64_t *dims, int n,
                               int64_t *idx)
{
    for (int k = n - 1; k >= 0; k--) {
        idx[k] = flat % dims[k];
        flat /= dims[k];
    }
}

static inline int64_t ravel_idx(const int64_t *idx, const int64_t *dims,
                                int n)
{
    int64_t f = 0;
    for (int k = 0; k < n; k++)
        f = f * dims[k] + idx[k];
    return f;
}

/* Copies element si of src to element di of dst (es bytes each). */
static inline void put_elem(void *dst, int64_t di, const void *src,
                            int64_t si, size_t es)
{
    memcpy((char *)dst + di * (int64_t)es, (const char *)src + si * (int64_t)es,
           es);
}

/* t has dtype dt and exactly the dims of want. */
static inline int has_shape(const eager_tensor *t, graph_ints want)
{
    if (!t || eager_ndim(t) != want.n)
        return 0;
    for (int i = 0; i < want.n; i++)
        if (eager_dim(t, i) != want.v[i])
            return 0;
    return 1;
}
#define CHECK_SHAPE(t, want)                                               \
    CHECK_MSG(has_shape((t), (want)), "%s has the wrong shape", #t)

/* Compares t's elements with want bit for bit; reports the first miss. */
static inline void check_data(const eager_tensor *t, const void *want,
                              int64_t n, const char *file, int line,
                              const char *what)
{
    if (!t) {
        check_report(0, file, line, "%s is NULL", what);
        return;
    }
    size_t es = dt_size(eager_dtype(t));
    const char *got = eager_peek(t);
    if (eager_numel(t) != n) {
        check_report(0, file, line, "%s has %lld elements, want %lld", what,
                     (long long)eager_numel(t), (long long)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        if (memcmp(got + i * (int64_t)es, (const char *)want + i * (int64_t)es,
                   es) != 0) {
            check_report(0, file, line, "%s differs at element %lld", what,
                         (long long)i);
            return;
        }
    }
    check_report(1, file, line, "%s", what);
}
#define CHECK_DATA(t, want, n) check_data((t), (want), (n), __FILE__, __LINE__, #t)

#endif
