/*
 * test_gather_elements.c - gather_elements and scatter_elements against
 * naive references written here: for every position of the indices, its
 * coordinates unravelled one by one, the axis coordinate replaced by the
 * index (plus the dim when negative), and the element copied (gather) or
 * combined into a copy of the data (scatter, positions in row-major
 * order, so the last of duplicate indices wins without a reduction).
 * Ranks 1 to 4, every axis in both spellings, indices i64 and i32 with
 * negative values, smaller than the data on other dims and larger along
 * the axis; f32, i64, i32 and bool data; every reduction, with NaN,
 * infinities and integer wrap-around; the ONNX spec's examples; large
 * tensors on 1 and 4 threads.  Then every error with its exact message
 * and the caller's file:line, the kernels called directly (a bad index
 * fails before anything is written), and the ops in graphs with indices
 * computed at run time: a trace with a dynamic batch, -O3, .tgraph and
 * ONNX round trips (opset 18 for max and min), replay on CPU with its
 * data error, and the ONNX importer's refusals.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "eager/kernel.h"
#include "formats/onnx.h"
#include "formats/onnx/onnx_impl.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "graph_query.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

#define MAXD GRAPH_MAX_DIMS

static const char *const red_names[] = {"none", "add", "mul", "max", "min"};

/* ---- data ---- */

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int64_t numel_of(graph_ints shape)
{
    int64_t n = 1;
    for (int i = 0; i < shape.n; i++)
        n *= shape.v[i];
    return n;
}

/* Seeded data: whole numbers in [-span, span] (f32, i64, i32), 0/1 (bool). */
static eager_tensor *rand_data(graph_dtype dt, graph_ints shape, uint64_t seed, int span)
{
    int64_t n = numel_of(shape);
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)(next(&s) % (uint64_t)(2 * span + 1)) - span;
        if (dt == GRAPH_F32)
            ((float *)buf)[i] = (float)v;
        else if (dt == GRAPH_I64)
            ((int64_t *)buf)[i] = v;
        else if (dt == GRAPH_I32)
            ((int32_t *)buf)[i] = (int32_t)v;
        else
            ((uint8_t *)buf)[i] = (uint8_t)(v & 1);
    }
    eager_tensor *t = eager_from_data(dt, shape, buf);
    free(buf);
    return t;
}

/* Indices of dt in [-n, n-1]: negative ones count from the end. */
static eager_tensor *rand_idx(graph_dtype dt, graph_ints shape, int64_t n, uint64_t seed)
{
    int64_t cnt = numel_of(shape);
    void *buf = malloc((size_t)(cnt ? cnt : 1) * 8);
    uint64_t s = seed * 0xBF58476D1CE4E5B9ull + 3;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t v = (int64_t)(next(&s) % (uint64_t)(2 * n)) - n;
        if (dt == GRAPH_I64)
            ((int64_t *)buf)[i] = v;
        else
            ((int32_t *)buf)[i] = (int32_t)v;
    }
    eager_tensor *t = eager_from_data(dt, shape, buf);
    free(buf);
    return t;
}

static int64_t idx_at(const eager_tensor *t, int64_t k)
{
    return eager_dtype(t) == GRAPH_I64 ? ((const int64_t *)eager_peek(t))[k]
                                       : ((const int32_t *)eager_peek(t))[k];
}

static void unravel(int64_t f, const int64_t *dims, int nd, int64_t *c)
{
    for (int k = nd - 1; k >= 0; k--) {
        c[k] = f % dims[k];
        f /= dims[k];
    }
}

static int64_t ravel(const int64_t *c, const int64_t *dims, int nd)
{
    int64_t f = 0;
    for (int k = 0; k < nd; k++)
        f = f * dims[k] + c[k];
    return f;
}

/* t has dtype dt and the dims of want. */
static int type_is(const eager_tensor *t, graph_dtype dt, const graph_type *want)
{
    const graph_type *g = t ? eager_type(t) : NULL;
    if (!g || g->dtype != dt || g->ndim != want->ndim)
        return 0;
    for (int d = 0; d < g->ndim; d++)
        if (g->dim[d] != want->dim[d])
            return 0;
    return 1;
}

/* The first differing element of n of size es, or -1. */
static int64_t first_diff(const void *a, const void *b, int64_t n, size_t es)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * (int64_t)es, (const char *)b + i * (int64_t)es, es))
            return i;
    return -1;
}

/* ---- references ---- */

/* The data's element an index position names: its coordinates with the
 * axis's replaced by the index. */
static int64_t target(const graph_type *xt, const graph_type *it, int ax, int64_t pos, int64_t v)
{
    int64_t c[MAXD];
    unravel(pos, it->dim, it->ndim, c);
    c[ax] = v < 0 ? v + xt->dim[ax] : v;
    return ravel(c, xt->dim, xt->ndim);
}

static void check_gather(eager_tensor *x, eager_tensor *idx, int64_t axis, int line)
{
    const graph_type *xt = eager_type(x), *it = eager_type(idx);
    int ax = (int)(axis < 0 ? axis + xt->ndim : axis);
    size_t es = graph_dtype_size(xt->dtype);
    int64_t n = graph_type_numel(it);
    char *want = malloc((size_t)n * es + 1);
    for (int64_t p = 0; p < n; p++)
        memcpy(want + p * (int64_t)es,
               (const char *)eager_peek(x) + target(xt, it, ax, p, idx_at(idx, p)) * (int64_t)es,
               es);
    eager_pool_push(); /* y belongs to it */
    eager_tensor *y = eager_gather_elements(x, idx, axis);
    CHECK_MSG(y != NULL, "line %d: gather_elements ran: %s", line, eager_error());
    eager_clear_error();
    if (y) {
        CHECK_MSG(type_is(y, xt->dtype, it), "line %d: gather_elements output type", line);
        int64_t bad = type_is(y, xt->dtype, it) ? first_diff(eager_peek(y), want, n, es) : -1;
        CHECK_MSG(bad < 0, "line %d: gather_elements axis %lld (%s data, %s indices): element "
                  "%lld differs", line, (long long)axis, graph_dtype_name(xt->dtype),
                  graph_dtype_name(it->dtype), (long long)bad);
    }
    eager_pool_pop();
    free(want);
}

/* *d combined with *u by reduction red: NaN already there wins, then a
 * NaN update; a tie takes the update; integers wrap around. */
static void combine(graph_dtype dt, int red, void *d, const void *u)
{
    if (red == GRAPH_SCATTER_NONE) {
        memcpy(d, u, graph_dtype_size(dt));
    } else if (dt == GRAPH_F32) {
        float a = *(float *)d, b = *(const float *)u, r;
        if (red == GRAPH_SCATTER_ADD)
            r = a + b;
        else if (red == GRAPH_SCATTER_MUL)
            r = a * b;
        else if (isnan(a))
            r = a;
        else if (isnan(b))
            r = b;
        else if (red == GRAPH_SCATTER_MAX)
            r = a > b ? a : b;
        else
            r = a < b ? a : b;
        *(float *)d = r;
    } else if (dt == GRAPH_I64) {
        int64_t a = *(int64_t *)d, b = *(const int64_t *)u;
        uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
        *(int64_t *)d = red == GRAPH_SCATTER_ADD   ? (int64_t)(ua + ub)
                        : red == GRAPH_SCATTER_MUL ? (int64_t)(ua * ub)
                        : red == GRAPH_SCATTER_MAX ? (a > b ? a : b)
                                                   : (a < b ? a : b);
    } else {
        int32_t a = *(int32_t *)d, b = *(const int32_t *)u;
        uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
        *(int32_t *)d = red == GRAPH_SCATTER_ADD   ? (int32_t)(ua + ub)
                        : red == GRAPH_SCATTER_MUL ? (int32_t)(ua * ub)
                        : red == GRAPH_SCATTER_MAX ? (a > b ? a : b)
                                                   : (a < b ? a : b);
    }
}

static void check_scatter(eager_tensor *x, eager_tensor *idx, eager_tensor *upd, int64_t axis,
                          int red, int line)
{
    const graph_type *xt = eager_type(x), *it = eager_type(idx);
    int ax = (int)(axis < 0 ? axis + xt->ndim : axis);
    size_t es = graph_dtype_size(xt->dtype);
    int64_t n = graph_type_numel(xt), cnt = graph_type_numel(it);
    char *want = malloc((size_t)n * es + 1);
    memcpy(want, eager_peek(x), (size_t)n * es);
    for (int64_t p = 0; p < cnt; p++)
        combine(xt->dtype, red, want + target(xt, it, ax, p, idx_at(idx, p)) * (int64_t)es,
                (const char *)eager_peek(upd) + p * (int64_t)es);
    eager_pool_push();
    eager_tensor *y = eager_scatter_elements(x, idx, upd, axis, red);
    CHECK_MSG(y != NULL, "line %d: scatter_elements ran: %s", line, eager_error());
    eager_clear_error();
    if (y) {
        CHECK_MSG(type_is(y, xt->dtype, xt), "line %d: scatter_elements output type", line);
        int64_t bad = type_is(y, xt->dtype, xt) ? first_diff(eager_peek(y), want, n, es) : -1;
        CHECK_MSG(bad < 0, "line %d: scatter_elements axis %lld reduction %s (%s data, %s "
                  "indices): element %lld differs", line, (long long)axis, red_names[red],
                  graph_dtype_name(xt->dtype), graph_dtype_name(it->dtype), (long long)bad);
    }
    eager_pool_pop();
    free(want);
}

/* ---- values ---- */

/*
 * Ranks 1 to 4, every axis both ways.  The indices are smaller than the
 * data on some other dims (never larger) and along the axis shorter,
 * equal or longer (many duplicates for scatter).
 */
static void test_shapes(void)
{
    static const graph_dtype dts[] = {GRAPH_F32, GRAPH_I64, GRAPH_I32, GRAPH_BOOL};
    static const graph_dtype its[] = {GRAPH_I64, GRAPH_I32};
    const graph_ints shapes[] = {TG_SHAPE(7), TG_SHAPE(4, 5), TG_SHAPE(3, 4, 5),
                                 TG_SHAPE(2, 3, 4, 3)};
    uint64_t seed = 1;
    eager_pool_push();
    for (int s = 0; s < 4; s++) {
        graph_ints xs = shapes[s];
        int nd = xs.n;
        for (int ax = 0; ax < nd; ax++)
            for (int along = 0; along < 3; along++) {
                graph_ints is = xs;
                for (int d = 0; d < nd; d++)
                    if (d != ax && (d + along) % 2)
                        is.v[d] = xs.v[d] - 1 > 0 ? xs.v[d] - 1 : 1;
                is.v[ax] = along == 0 ? 1 : along == 1 ? xs.v[ax] : xs.v[ax] + 3;
                for (int di = 0; di < 4; di++)
                    for (int ii = 0; ii < 2; ii++, seed++) {
                        eager_tensor *x = rand_data(dts[di], xs, seed, 50);
                        eager_tensor *idx = rand_idx(its[ii], is, xs.v[ax], seed);
                        eager_tensor *upd = rand_data(dts[di], is, seed + 1000, 3);
                        int64_t axis = (seed & 1) ? ax : ax - nd;
                        check_gather(x, idx, axis, __LINE__);
                        for (int red = 0; red < (dts[di] == GRAPH_BOOL ? 1 : 5); red++)
                            check_scatter(x, idx, upd, axis, red, __LINE__);
                    }
            }
    }
    /* empty indices: gather gives an empty tensor, scatter a copy */
    eager_tensor *x = rand_data(GRAPH_F32, TG_SHAPE(3, 4), 5, 9);
    eager_tensor *e0 = eager_zeros(GRAPH_I64, TG_SHAPE(0, 4));
    eager_tensor *u0 = eager_zeros(GRAPH_F32, TG_SHAPE(0, 4));
    eager_tensor *e1 = eager_zeros(GRAPH_I32, TG_SHAPE(3, 0));
    eager_tensor *u1 = eager_zeros(GRAPH_F32, TG_SHAPE(3, 0));
    check_gather(x, e0, 0, __LINE__);
    check_gather(x, e1, 0, __LINE__);
    check_scatter(x, e0, u0, 0, GRAPH_SCATTER_ADD, __LINE__);
    check_scatter(x, e1, u1, 1, GRAPH_SCATTER_NONE, __LINE__);
    /* an empty axis with empty indices */
    eager_tensor *xe = eager_zeros(GRAPH_I32, TG_SHAPE(2, 0));
    eager_tensor *ie = eager_zeros(GRAPH_I64, TG_SHAPE(2, 0));
    check_gather(xe, ie, 1, __LINE__);
    check_scatter(xe, ie, xe, 1, GRAPH_SCATTER_MUL, __LINE__);
    eager_pool_pop();
}

/* The examples of the ONNX operator spec, and duplicates with each
 * reduction, as known answers. */
static void test_known_answers(void)
{
    eager_pool_push();
    float d1[4] = {1, 2, 3, 4}, w1[4] = {1, 1, 4, 3};
    int64_t i1[4] = {0, 0, 1, 0};
    eager_tensor *y = eager_gather_elements(eager_from_data(GRAPH_F32, TG_SHAPE(2, 2), d1),
                                            eager_from_data(GRAPH_I64, TG_SHAPE(2, 2), i1), 1);
    CHECK(y && !memcmp(eager_peek(y), w1, sizeof w1));
    int32_t d2[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w2[6] = {4, 8, 3, 7, 2, 3};
    int32_t i2[6] = {1, 2, 0, 2, 0, 0};
    y = eager_gather_elements(eager_from_data(GRAPH_I32, TG_SHAPE(3, 3), d2),
                              eager_from_data(GRAPH_I32, TG_SHAPE(2, 3), i2), 0);
    CHECK(y && !memcmp(eager_peek(y), w2, sizeof w2));
    int64_t i3[6] = {-1, -3, 0, 2, -2, -2}; /* negative indices, as ONNX's own test */
    int32_t w3[6] = {7, 2, 3, 7, 5, 6};
    y = eager_gather_elements(eager_from_data(GRAPH_I32, TG_SHAPE(3, 3), d2),
                              eager_from_data(GRAPH_I64, TG_SHAPE(2, 3), i3), 0);
    CHECK(y && !memcmp(eager_peek(y), w3, sizeof w3));

    float sd[5] = {1, 2, 3, 4, 5}, su[2] = {1.1f, 2.1f};
    int64_t si[2] = {1, 3}, sdup[2] = {1, -4};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(1, 5), sd);
    eager_tensor *u = eager_from_data(GRAPH_F32, TG_SHAPE(1, 2), su);
    float ws[5] = {1, 1.1f, 3, 2.1f, 5};
    y = eager_scatter_elements(x, eager_from_data(GRAPH_I64, TG_SHAPE(1, 2), si), u, 1, 0);
    CHECK(y && !memcmp(eager_peek(y), ws, sizeof ws));
    /* indices 1 and -4 name the same element: the last wins, or both combine */
    eager_tensor *dup = eager_from_data(GRAPH_I64, TG_SHAPE(1, 2), sdup);
    const float want[5][5] = {{1, 2.1f, 3, 4, 5}, {1, 2 + 1.1f + 2.1f, 3, 4, 5},
                              {1, 2 * 1.1f * 2.1f, 3, 4, 5}, {1, 2.1f, 3, 4, 5},
                              {1, 1.1f, 3, 4, 5}};
    for (int red = 0; red < 5; red++) {
        y = eager_scatter_elements(x, dup, u, -1, red);
        CHECK_MSG(y && !memcmp(eager_peek(y), want[red], sizeof want[red]),
                  "duplicates with reduction %s", red_names[red]);
    }
    eager_pool_pop();
}

/* NaN, infinities and signed zeros in max/min/add/mul; integers at the
 * ends of their types wrap around as add and mul do. */
static void test_special_values(void)
{
    eager_pool_push();
    float xd[6] = {NAN, 1, -0.0f, INFINITY, 2, 0.0f};
    float ud[12] = {5, NAN, 0.0f, -INFINITY, NAN, -0.0f,
                    -1, 3, -0.0f, NAN, INFINITY, 0.0f};
    int64_t id[12] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(6), xd);
    eager_tensor *u = eager_from_data(GRAPH_F32, TG_SHAPE(12), ud);
    eager_tensor *i = eager_from_data(GRAPH_I64, TG_SHAPE(12), id);
    for (int red = 0; red < 5; red++)
        check_scatter(x, i, u, 0, red, __LINE__);
    eager_tensor *mx = eager_scatter_elements(x, i, u, 0, GRAPH_SCATTER_MAX);
    const float *m = mx ? eager_peek(mx) : NULL;
    /* a NaN there stays; a NaN update wins and stays: inf then NaN */
    CHECK(m && isnan(m[0]) && isnan(m[1]) && isnan(m[3]) && isnan(m[4]) && m[5] == 0.0f);

    int32_t xi[3] = {INT32_MAX, INT32_MIN, 65536}, ui[6] = {1, -1, 65536, 5, 7, 9};
    int64_t xl[3] = {INT64_MAX, INT64_MIN, INT64_C(1) << 40};
    int64_t ul[6] = {1, -1, INT64_C(1) << 30, 5, 7, 9};
    int32_t ii[6] = {0, 1, 2, 2, -3, -3};
    eager_tensor *ti = eager_from_data(GRAPH_I32, TG_SHAPE(3), xi);
    eager_tensor *tu = eager_from_data(GRAPH_I32, TG_SHAPE(6), ui);
    eager_tensor *tl = eager_from_data(GRAPH_I64, TG_SHAPE(3), xl);
    eager_tensor *tul = eager_from_data(GRAPH_I64, TG_SHAPE(6), ul);
    eager_tensor *tii = eager_from_data(GRAPH_I32, TG_SHAPE(6), ii);
    for (int red = 0; red < 5; red++) {
        check_scatter(ti, tii, tu, 0, red, __LINE__);
        check_scatter(tl, tii, tul, 0, red, __LINE__);
    }
    eager_tensor *wrap = eager_scatter_elements(ti, tii, tu, 0, GRAPH_SCATTER_ADD);
    CHECK(wrap && ((const int32_t *)eager_peek(wrap))[0] == INT32_MIN + 16 &&
          ((const int32_t *)eager_peek(wrap))[1] == INT32_MAX);
    eager_pool_pop();
}

/* Big tensors on 1 and 4 threads: chunks of gather positions; scatter
 * units over outer indices, and inner positions split when the outer
 * ones are too few (axis 0). */
static void test_large(void)
{
    struct { graph_ints x, i; int axis; } cases[] = {
        {TG_SHAPE(300, 200), TG_SHAPE(250, 200), 0},
        {TG_SHAPE(200, 300), TG_SHAPE(200, 400), 1},
        {TG_SHAPE(64, 1000), TG_SHAPE(500, 999), 0},
        {TG_SHAPE(8, 50, 100), TG_SHAPE(8, 60, 90), 1},
        {TG_SHAPE(3, 40, 30, 20), TG_SHAPE(3, 39, 30, 40), -1},
    };
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            eager_pool_push();
            int ax = cases[c].axis < 0 ? cases[c].axis + cases[c].x.n : cases[c].axis;
            eager_tensor *x = rand_data(GRAPH_F32, cases[c].x, 10 + c, 1000);
            eager_tensor *xi = rand_data(GRAPH_I32, cases[c].x, 20 + c, 1000);
            eager_tensor *idx = rand_idx(c % 2 ? GRAPH_I32 : GRAPH_I64, cases[c].i,
                                         cases[c].x.v[ax], 30 + c);
            eager_tensor *u = rand_data(GRAPH_F32, cases[c].i, 40 + c, 1000);
            eager_tensor *ui = rand_data(GRAPH_I32, cases[c].i, 50 + c, 1000);
            check_gather(x, idx, cases[c].axis, __LINE__);
            check_gather(xi, idx, cases[c].axis, __LINE__);
            for (int red = 0; red < 5; red++) {
                check_scatter(x, idx, u, cases[c].axis, red, __LINE__);
                check_scatter(xi, idx, ui, cases[c].axis, red, __LINE__);
            }
            eager_pool_pop();
        }
    }
    eager_set_threads(1);
}

/* ---- errors ---- */

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = rand_data(GRAPH_F32, TG_SHAPE(2, 3), 1, 5);
    int64_t bv[6] = {0, 1, 1, 1, 2, 0}, nv[6] = {0, -4, 1, 0, 1, -3};
    eager_tensor *bad = eager_from_data(GRAPH_I64, TG_SHAPE(2, 3), bv);
    eager_tensor *neg = eager_from_data(GRAPH_I64, TG_SHAPE(2, 3), nv);
    eager_tensor *i3 = eager_zeros(GRAPH_I32, TG_SHAPE(3, 3));
    eager_tensor *i1 = eager_zeros(GRAPH_I64, TG_SHAPE(3));
    eager_tensor *fi = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    eager_tensor *u = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    eager_tensor *ui = eager_zeros(GRAPH_I32, TG_SHAPE(2, 3));
    eager_tensor *u2 = eager_zeros(GRAPH_F32, TG_SHAPE(2, 2));
    eager_tensor *xb = eager_zeros(GRAPH_BOOL, TG_SHAPE(2, 3));

    CHECK_FAILS(eager_gather_elements(x, fi, 0), "gather_elements: [2,3] x [2,3]: indices must be i64 or i32, got f32 (test_gather_elements.c:");
    CHECK_FAILS(eager_gather_elements(x, bad, 2), "gather_elements: [2,3] x i64[2,3]: axis 2 out of range for 2 dims");
    CHECK_FAILS(eager_gather_elements(x, bad, -3), "axis -3 out of range for 2 dims");
    CHECK_FAILS(eager_gather_elements(x, i1, 0), "gather_elements: [2,3] x i64[3]: indices have 1 dims, data 2 (they must have the same rank)");
    CHECK_FAILS(eager_gather_elements(x, i3, 1), "indices [3,3] are larger than data [2,3] on dim 0 (only axis 1 may be)");
    CHECK_FAILS(eager_gather_elements(eager_scalar(1.0), i1, 0), "gather_elements: [] x i64[3]: axis 0 out of range for 0 dims");
    /* index values are data: the kernel finds them, the call site is ours */
    CHECK_FAILS(eager_gather_elements(x, bad, 0), "gather_elements: index 2 out of range for axis 0 of size 2 (indices position [1,1])");
    CHECK_FAILS(eager_gather_elements(x, neg, 1), "gather_elements: index -4 out of range for axis 1 of size 3 (indices position [0,1])");
    eager_tensor *g0 = eager_gather_elements(x, i3, 0); /* longer along the axis is fine */
    CHECK(g0 && eager_dim(g0, 0) == 3 && eager_dim(g0, 1) == 3);

    CHECK_FAILS(eager_scatter_elements(x, fi, u, 0, 0), "scatter_elements: [2,3] x [2,3] x [2,3]: indices must be i64 or i32, got f32");
    CHECK_FAILS(eager_scatter_elements(x, bad, ui, 0, 0), "scatter_elements: [2,3] x i64[2,3] x i32[2,3]: updates are i32, data f32 (they must match)");
    CHECK_FAILS(eager_scatter_elements(x, bad, u2, 0, 0), "updates [2,2] and indices [2,3] differ (they must have the same shape)");
    CHECK_FAILS(eager_scatter_elements(x, bad, u, 0, 5), "reduction must be 0 (none), 1 (add), 2 (mul), 3 (max) or 4 (min), got 5");
    CHECK_FAILS(eager_scatter_elements(x, bad, u, 0, -1), "got -1");
    CHECK_FAILS(eager_scatter_elements(xb, bad, xb, 0, GRAPH_SCATTER_MAX), "scatter_elements: bool[2,3] x i64[2,3] x bool[2,3]: reduction max is not defined for bool");
    CHECK_FAILS(eager_scatter_elements(x, i3, eager_zeros(GRAPH_F32, TG_SHAPE(3, 3)), 1, 0), "indices [3,3] are larger than data [2,3] on dim 0 (only axis 1 may be)");
    CHECK_FAILS(eager_scatter_elements(x, bad, u, 3, 0), "axis 3 out of range for 2 dims");
    CHECK_FAILS(eager_scatter_elements(x, bad, u, 0, GRAPH_SCATTER_ADD), "scatter_elements: index 2 out of range for axis 0 of size 2 (indices position [1,1])");
    CHECK_FAILS(eager_scatter_elements(x, neg, u, -1, 0), "scatter_elements: index -4 out of range for axis 1 of size 3 (indices position [0,1])");
    /* every index of an empty axis is out of range */
    eager_tensor *e = eager_zeros(GRAPH_F32, TG_SHAPE(0, 3)), *j = eager_zeros(GRAPH_I32, TG_SHAPE(1, 3));
    CHECK_FAILS(eager_gather_elements(e, j, 0), "index 0 out of range for axis 0 of size 0 (indices position [0,0])");
    CHECK(eager_scatter_elements(NULL, bad, u, 0, 0) == NULL);
    CHECK_ERROR("scatter_elements: input 0 is NULL");
    eager_clear_error();
    eager_pool_pop();
}

/* The kernels called directly: a bad index fails before anything is
 * written (the output keeps its sentinel) and nothing outside the
 * buffers is read (ASan watches). */
static void test_kernels_direct(void)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, u[4] = {10, 20, 30, 40}, out[6];
    int32_t idx[4] = {1, 0, 0, 3}; /* 3 is out of range for 3 rows */
    graph_type in_t[3] = {{GRAPH_F32, 2, {3, 2}}, {GRAPH_I32, 2, {2, 2}}, {GRAPH_F32, 2, {2, 2}}};
    graph_type out_t = {GRAPH_F32, 2, {3, 2}};
    graph_scatter_elements_attrs at = {0, GRAPH_SCATTER_ADD};
    const void *ins[3] = {x, idx, u};
    void *outs[1] = {out};
    char err[256] = "";
    eager_kargs ka = {in_t, ins, 3, &at, &out_t, outs, 1, 1, err, sizeof err};
    for (int k = 0; k < 6; k++)
        out[k] = -7;
    CHECK(eager_kernels[GRAPH_OP_scatter_elements](&ka) == TG_ERR_ARG);
    CHECK_MSG(strstr(err, "index 3 out of range for axis 0 of size 3 (indices position [1,1])"),
              "err: %s", err);
    int untouched = 1;
    for (int k = 0; k < 6; k++)
        untouched &= out[k] == -7;
    CHECK_MSG(untouched, "a failed scatter wrote its output");
    idx[3] = -1;
    CHECK(eager_kernels[GRAPH_OP_scatter_elements](&ka) == TG_OK);
    float want[6] = {1 + 30, 2 + 20, 3 + 10, 4, 5, 6 + 40};
    CHECK(!memcmp(out, want, sizeof want));
    /* gather_elements [2,2] from [3,2] */
    graph_type gout = {GRAPH_F32, 2, {2, 2}};
    eager_kargs kg = {in_t, ins, 2, &at, &gout, outs, 1, 1, err, sizeof err};
    CHECK(eager_kernels[GRAPH_OP_gather_elements](&kg) == TG_OK);
    float gw[4] = {3, 2, 1, 6};
    CHECK(!memcmp(out, gw, sizeof gw));
}

/* ---- the ops in graphs ---- */

/*
 * The model traced below: indices computed at run time from x (argmax
 * along dims 1 and 2), gathers with them, and scatters of what was
 * gathered back into x with every reduction.  x: [B, 6, 5].
 */
static int scatter_line;
static void model(eager_tensor *x, eager_tensor **out)
{
    eager_tensor *i = eager_argmax(x, 1, 1, 0);  /* [B,1,5] i64 */
    eager_tensor *j = eager_argmin(x, -1, 1, 1); /* [B,6,1] */
    eager_tensor *top = eager_gather_elements(x, i, 1);
    eager_tensor *low = eager_gather_elements(x, j, -1);
    /* [B,6,3]: j twice (duplicates) and 4 - j */
    eager_tensor *jp[3] = {j, eager_sub(eager_full(GRAPH_I64, TG_NOINTS, 4), j), j};
    eager_tensor *jj = eager_concat(3, jp, -1);
    eager_tensor *sp[3] = {low, eager_mul(low, eager_scalar(0.5)), eager_neg(low)};
    eager_tensor *src = eager_concat(3, sp, -1);
    eager_tensor *y = eager_scatter_elements(x, i, eager_mul(top, eager_scalar(2)), 1, 0);
    y = eager_scatter_elements(y, jj, src, 2, GRAPH_SCATTER_ADD);
    y = eager_scatter_elements(y, jj, src, -1, GRAPH_SCATTER_MUL);
    out[0] = eager_scatter_elements(y, i, top, 1, GRAPH_SCATTER_MAX);
    scatter_line = __LINE__ + 1;
    out[1] = eager_scatter_elements(x, jj, eager_neg(src), 2, GRAPH_SCATTER_MIN);
}

static graph *trace_model(void)
{
    eager_pool_push();
    eager_tensor *x = rand_data(GRAPH_F32, TG_SHAPE(3, 6, 5), 77, 20), *y[2];
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    model(x, y);
    trace_output(y[0], "y");
    trace_output(y[1], "z");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    eager_clear_error();
    eager_pool_pop();
    return g;
}

/* g on x in the interpreter and in a CPU replay, against eager's model. */
static void check_graph(const graph *g, const char *what, int64_t batch)
{
    eager_pool_push();
    eager_tensor *x = rand_data(GRAPH_F32, TG_SHAPE(batch, 6, 5), 100 + (uint64_t)batch, 20);
    eager_tensor *want[2], *got[2] = {NULL, NULL};
    model(x, want);
    tg_status st = eager_interpret(g, &x, 1, got, 2, NULL);
    CHECK_MSG(st == TG_OK, "%s at batch %lld interpreted: %s", what, (long long)batch,
              eager_error());
    eager_clear_error();
    for (int k = 0; st == TG_OK && k < 2; k++)
        CHECK_MSG(want[k] && got[k] && eager_nbytes(got[k]) == eager_nbytes(want[k]) &&
                  !memcmp(eager_peek(got[k]), eager_peek(want[k]), eager_nbytes(want[k])),
                  "%s at batch %lld: output %d as eager", what, (long long)batch, k);
    eager_release(got[0]), eager_release(got[1]);
    char err[1024] = "";
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s compiles: %s", what, err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)}, out[2];
    memset(out, 0, sizeof out);
    out[0].name = "y", out[1].name = "z";
    st = s ? replay_run(s, &in, 1, out, 2) : TG_ERR_NOMEM;
    CHECK_MSG(st == TG_OK, "%s replay at batch %lld: %s", what, (long long)batch,
              s ? replay_session_error(s) : err);
    for (int k = 0; st == TG_OK && k < 2; k++)
        CHECK_MSG(!memcmp(out[k].data, eager_peek(want[k]), eager_nbytes(want[k])),
                  "%s replay at batch %lld: output %d as eager", what, (long long)batch, k);
    replay_session_free(s);
    replay_plan_free(p);
    eager_pool_pop();
}

static void test_graphs(void)
{
    graph *g = trace_model();
    if (!g)
        return;
    CHECK(count_op(g, GRAPH_OP_gather_elements) == 2 &&
          count_op(g, GRAPH_OP_scatter_elements) == 5);
    CHECK_MSG(g->values[g->outputs[0].value].dyn == 1 && g->values[g->outputs[1].value].dyn == 1,
              "the outputs follow the dynamic batch");
    check_graph(g, "traced", 3);
    check_graph(g, "traced", 7);

    /* -O3, then the text IR, .tgraph and ONNX round trips of the result */
    graph *o = graph_clone(g);
    opt_options oo = opt_default_options();
    oo.level = 3;
    char err[1024] = "";
    CHECK_MSG(o && opt_optimize(o, &oo, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    if (o) {
        CHECK(count_op(o, GRAPH_OP_scatter_elements) == 5);
        check_graph(o, "-O3", 3);
        check_graph(o, "-O3", 5);
    }
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    char *text = o ? graph_print_str(o, &po, NULL) : NULL;
    CHECK(text && strstr(text, "scatter_elements(") && strstr(text, "reduction=3") &&
          strstr(text, "gather_elements("));
    graph *t = text ? graph_parse(text, strlen(text), err, sizeof err) : NULL;
    CHECK_MSG(t != NULL, "text IR parses: %s", err);
    if (t)
        check_graph(t, "text IR", 4);
    void *buf = NULL;
    size_t len = 0;
    CHECK_MSG(o && format_save_mem(o, NULL, &buf, &len, err, sizeof err) == TG_OK, "save: %s", err);
    graph *f = buf ? format_load_mem(buf, len, "ge.tgraph", err, sizeof err) : NULL;
    CHECK_MSG(f != NULL, "load: %s", err);
    free(buf);
    if (f)
        check_graph(f, ".tgraph", 6);
    buf = NULL;
    CHECK_MSG(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "ONNX export: %s", err);
    Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    CHECK_MSG(m && m->n_opset_import == 1 && m->opset_import[0]->version == 18,
              "max and min reductions make the model opset 18");
    int reductions = 0;
    for (size_t k = 0; m && k < m->graph->n_node; k++)
        for (size_t a = 0; a < m->graph->node[k]->n_attribute; a++)
            reductions += !strcmp(m->graph->node[k]->attribute[a]->name, "reduction");
    CHECK_MSG(reductions == 4, "4 ScatterElements name their reduction, got %d", reductions);
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    graph *on = buf ? format_onnx_load_mem(buf, len, "ge.onnx", NULL, err, sizeof err) : NULL;
    CHECK_MSG(on != NULL, "ONNX import: %s", err);
    free(buf);
    if (on) {
        check_graph(on, "ONNX", 3);
        check_graph(on, "ONNX", 8);
    }
    free(text);
    graph_free(t), graph_free(f), graph_free(on), graph_free(o), graph_free(g);
}

/* A bad index given at run time fails the replay, naming the node and
 * the call site; the next good run works. */
static int bad_line;
static void test_replay_error(void)
{
    eager_pool_push();
    eager_tensor *x = rand_data(GRAPH_F32, TG_SHAPE(4, 3), 3, 9);
    eager_tensor *idx = rand_idx(GRAPH_I32, TG_SHAPE(2, 3), 4, 3);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_input(idx, "i");
    bad_line = __LINE__ + 1;
    trace_output(eager_scatter_elements(x, idx, eager_gather_elements(x, idx, 0), 0, 1), "y");
    graph *g = trace_freeze();
    char err[1024] = "";
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "compiles: %s", err);
    for (int k = 0; s && k < 3; k++) {
        int32_t iv[6] = {0, 3, -4, 1, k == 1 ? 4 : 2, k == 2 ? -5 : -1};
        replay_tensor in[2] = {{.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                               {.name = "i", .type = *eager_type(idx), .input = iv}};
        replay_tensor out = {.name = "y"};
        tg_status st = replay_run(s, in, 2, &out, 1);
        if (k == 0) {
            CHECK_MSG(st == TG_OK, "%s", replay_session_error(s));
            continue;
        }
        char site[96], msg[96];
        snprintf(site, sizeof site, "(gather_elements at test_gather_elements.c:%d", bad_line);
        snprintf(msg, sizeof msg, "index %d out of range for axis 0 of size 4 (indices "
                 "position [1,%d])", iv[3 + k], k);
        CHECK(st != TG_OK);
        CHECK_MSG(strstr(replay_session_error(s), msg) && strstr(replay_session_error(s), site),
                  "%s", replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

/* Folding: the ops on constants fold at -O1 (into the same values). */
static void test_fold(void)
{
    const char *text =
        "graph t(%x: f32[2,3]) -> (y: f32[2,3]) {\n"
        "  %c: f32[2,3] = const [1, 2, 3, 4, 5, 6]\n"
        "  %i: i64[2,3] = const [1, 0, -1, 0, 1, 1]\n"
        "  %g: f32[2,3] = gather_elements(%c, %i)\n"
        "  %s: f32[2,3] = scatter_elements(%c, %i, %g) {axis=1, reduction=1}\n"
        "  %y: f32[2,3] = add(%x, %s)\n  return y = %y\n}\n";
    char err[512] = "";
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(g != NULL, "parses: %s", err);
    if (!g)
        return;
    opt_options o = opt_default_options();
    o.level = 1;
    CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O1: %s", err);
    CHECK(count_op(g, GRAPH_OP_gather_elements) == 0 &&
          count_op(g, GRAPH_OP_scatter_elements) == 0);
    /* g = [[4,2,6],[1,5,6]]; row 0 gets 4 at 1, 2 at 0, 6 at 2; row 1
     * gets 1 at 0, 5 and 6 at 1 */
    eager_pool_push();
    float xv[6] = {0}, want[6] = {1 + 2, 2 + 4, 3 + 6, 4 + 1, 5 + 5 + 6, 6};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), xv), *y = NULL;
    CHECK(eager_interpret(g, &x, 1, &y, 1, NULL) == TG_OK && y &&
          !memcmp(eager_peek(y), want, sizeof want));
    eager_release(y);
    eager_pool_pop();
    graph_free(g);
}

/* ---- ONNX import refusals ---- */

/* A string protobuf-c may free (free_unpacked uses free). */
static char *heap(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    memcpy(p, s, n);
    return p;
}

/*
 * The model of one scatter with reduction add, exported, then given
 * opset, op_type and reduction (NULL: the attribute removed) and
 * imported: it fails with a message containing want, or (want NULL)
 * imports.
 */
static void expect_import(int64_t opset, const char *op_type, const char *reduction,
                          const char *want)
{
    const char *text =
        "graph t(%x: f32[2,3], %i: i64[2,3], %u: f32[2,3]) -> (y: f32[2,3]) {\n"
        "  %y: f32[2,3] = scatter_elements(%x, %i, %u) {reduction=1}\n  return y = %y\n}\n";
    char err[512] = "";
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    void *buf = NULL;
    size_t len = 0;
    CHECK_MSG(g && format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "export: %s", err);
    graph_free(g);
    Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    free(buf);
    CHECK(m && m->graph->n_node == 1 && m->graph->node[0]->n_attribute == 2);
    if (!m || m->graph->n_node != 1)
        return;
    Onnx__NodeProto *n = m->graph->node[0];
    m->opset_import[0]->version = opset;
    free(n->op_type);
    n->op_type = heap(op_type);
    for (size_t a = 0; a < n->n_attribute; a++) {
        Onnx__AttributeProto *at = n->attribute[a];
        if (strcmp(at->name, "reduction"))
            continue;
        if (reduction) {
            free(at->s.data);
            at->s.data = (uint8_t *)heap(reduction);
            at->s.len = strlen(reduction);
        } else {
            onnx__attribute_proto__free_unpacked(at, NULL);
            n->attribute[a] = n->attribute[--n->n_attribute];
        }
        break;
    }
    len = onnx__model_proto__get_packed_size(m);
    buf = malloc(len + 1);
    onnx__model_proto__pack(m, buf);
    onnx__model_proto__free_unpacked(m, NULL);
    g = format_onnx_load_mem(buf, len, "sc.onnx", NULL, err, sizeof err);
    free(buf);
    if (want)
        CHECK_MSG(!g && strstr(err, want), "import should fail with \"%s\", got \"%s\"", want,
                  g ? "success" : err);
    else
        CHECK_MSG(g && find_op(g, GRAPH_OP_scatter_elements) >= 0, "imports: %s", err);
    graph_free(g);
}

static void test_import_refusals(void)
{
    expect_import(16, "ScatterElements", "add", NULL);
    expect_import(18, "ScatterElements", "min", NULL);
    expect_import(13, "ScatterElements", NULL, NULL);
    expect_import(10, "Scatter", NULL, NULL);
    expect_import(18, "ScatterElements", "mean",
                  "sc.onnx: node 0 'scatter_elements_0' (ScatterElements): reduction 'mean' "
                  "is not supported");
    /* an empty string comes back from protobuf-c without data */
    expect_import(16, "ScatterElements", "",
                  "(ScatterElements): reduction '' is not supported");
    expect_import(13, "ScatterElements", "add",
                  "(ScatterElements): reduction 'add' needs opset 16 (the model is at 13)");
    expect_import(17, "ScatterElements", "max",
                  "(ScatterElements): reduction 'max' needs opset 18 (the model is at 17)");
    expect_import(11, "Scatter", NULL,
                  "(Scatter): Scatter is deprecated at opset 11 (ScatterElements replaces it)");
    expect_import(10, "Scatter", "add", "(Scatter): attribute 'reduction'");
}

int main(void)
{
    long live = eager_live_tensors();
    test_shapes();
    test_known_answers();
    test_special_values();
    test_large();
    test_errors();
    test_kernels_direct();
    test_graphs();
    test_replay_error();
    test_fold();
    test_import_refusals();
    CHECK_MSG(eager_status() == TG_OK, "stray error: %s", eager_error());
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
