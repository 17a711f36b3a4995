/*
 * test_shape2.c - slice, pad, expand and gather against naive references
 * written here, known answers for the ONNX edge cases, and their error
 * messages (see test_shape.c for the other shape ops).
 */
#include <math.h>
#include <stdint.h>

#include "eager/kernel.h"
#include "shape_util.h"

#define MAXD GRAPH_MAX_DIMS

/* ---- slice ---- */

/*
 * The input indices one axis visits, enumerated by stepping (not by a
 * length formula), with the clamping of the ONNX Slice spec text.
 * Returns the count; list gets at most cap entries.
 */
static int64_t ref_slice_axis(int64_t dim, int64_t start, int64_t end,
                              int64_t step, int64_t *list, int64_t cap)
{
    int64_t n = 0;
    if (dim == 0) /* [0, dim-1] is empty: nothing to visit */
        return 0;
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        for (int64_t i = start; i < end && n < cap; i += step)
            list[n++] = i;
    } else {
        start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        for (int64_t i = start; i > end && n < cap; i += step)
            list[n++] = i;
    }
    return n;
}

/* axes/steps may be empty (defaults); steps here stay small. */
static void check_slice(graph_dtype dt, graph_ints shape, graph_ints axes,
                        graph_ints starts, graph_ints ends, graph_ints steps,
                        int line)
{
    eager_pool_push();
    int nd = shape.n;
    int64_t pick[MAXD][64], cnt[MAXD], odims[MAXD], idx[MAXD], ii[MAXD];
    for (int k = 0; k < nd; k++) {
        cnt[k] = shape.v[k];
        for (int64_t i = 0; i < cnt[k]; i++)
            pick[k][i] = i;
    }
    for (int j = 0; j < starts.n; j++) {
        int ax = (int)(axes.n ? axes.v[j] : j);
        ax = ax < 0 ? ax + nd : ax;
        cnt[ax] = ref_slice_axis(shape.v[ax], starts.v[j], ends.v[j],
                                 steps.n ? steps.v[j] : 1, pick[ax], 64);
    }
    graph_ints oshape = {nd, {0}};
    for (int k = 0; k < nd; k++)
        oshape.v[k] = odims[k] = cnt[k];
    eager_tensor *x = make_seq(dt, shape, line);
    eager_tensor *y = eager_slice(x, axes, starts, ends, steps);
    CHECK_MSG(has_shape(y, oshape), "line %d: slice shape", line);
    int64_t n = ints_numel(oshape);
    char *want = malloc((size_t)n * 8 + 8);
    for (int64_t f = 0; f < n; f++) {
        unravel_idx(f, odims, nd, idx);
        for (int k = 0; k < nd; k++)
            ii[k] = pick[k][idx[k]];
        put_elem(want, f, eager_peek(x), ravel_idx(ii, shape.v, nd),
                 dt_size(dt));
    }
    check_data(y, want, n, __FILE__, line, "slice");
    free(want);
    eager_pool_pop();
}

/* Known answers on arange(10), including the extreme ONNX sentinels. */
static void check_slice_1d(int64_t start, int64_t end, int64_t step,
                           graph_ints want, int line)
{
    eager_tensor *x = eager_arange(GRAPH_I64, 0, 10, 1);
    eager_tensor *y = eager_slice(x, TG_NOINTS, TG_INTS(start), TG_INTS(end),
                                  TG_INTS(step));
    CHECK_MSG(has_shape(y, TG_SHAPE(want.n)), "line %d: slice_1d shape", line);
    if (y)
        check_data(y, want.v, want.n, __FILE__, line, "slice_1d");
    eager_release(x);
    eager_release(y);
}

static void test_slice(void)
{
    const int64_t BIG = INT64_MAX, SMALL = INT64_MIN;
    check_slice_1d(-3, BIG, 1, TG_INTS(7, 8, 9), __LINE__);
    check_slice_1d(8, 1, -3, TG_INTS(8, 5, 2), __LINE__);
    check_slice_1d(BIG, SMALL, -1, TG_INTS(9, 8, 7, 6, 5, 4, 3, 2, 1, 0), __LINE__);
    check_slice_1d(-100, 100, 4, TG_INTS(0, 4, 8), __LINE__);
    check_slice_1d(2, 10, BIG, TG_INTS(2), __LINE__);
    check_slice_1d(-1, SMALL, SMALL, TG_INTS(9), __LINE__);
    check_slice_1d(-12, SMALL, -1, TG_INTS(0), __LINE__); /* start clamps to 0 */
    check_slice_1d(5, 2, 1, TG_NOINTS, __LINE__);
    check_slice_1d(2, 5, -1, TG_NOINTS, __LINE__);
    check_slice_1d(3, -2, 2, TG_INTS(3, 5, 7), __LINE__);
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        check_slice(dt, TG_SHAPE(5, 6, 7), TG_NOINTS, TG_INTS(1, -5, 0),
                    TG_INTS(4, 6, 7), TG_NOINTS, __LINE__);
        check_slice(dt, TG_SHAPE(5, 6, 7), TG_INTS(-1, 0), TG_INTS(6, 4),
                    TG_INTS(-100, 0), TG_INTS(-2, -1), __LINE__);
        check_slice(dt, TG_SHAPE(5, 6, 7), TG_INTS(1), TG_INTS(0),
                    TG_INTS(BIG), TG_INTS(3), __LINE__);
    }
    check_slice(GRAPH_F32, TG_SHAPE(4, 8), TG_NOINTS, TG_NOINTS, TG_NOINTS,
                TG_NOINTS, __LINE__);
    check_slice(GRAPH_F32, TG_SHAPE(4, 8), TG_INTS(1), TG_INTS(6),
                TG_INTS(2), TG_NOINTS, __LINE__);
    check_slice(GRAPH_I32, TG_SHAPE(0, 8), TG_INTS(1), TG_INTS(1),
                TG_INTS(5), TG_NOINTS, __LINE__);
    check_slice(GRAPH_I32, TG_SHAPE(0, 8), TG_INTS(0, 1), TG_INTS(-1, -1),
                TG_INTS(SMALL, 0), TG_INTS(-1, -2), __LINE__);
    check_slice(GRAPH_BOOL, TG_SHAPE(2, 3, 4, 5), TG_INTS(3, 1), TG_INTS(-1, 0),
                TG_INTS(SMALL, 3), TG_INTS(-2, 2), __LINE__);
    check_slice(GRAPH_I64, TG_SHAPE(4, 6, 5), TG_INTS(1), TG_INTS(-2),
                TG_INTS(0), TG_INTS(-1), __LINE__);
    eager_set_threads(2);
    check_slice(GRAPH_F32, TG_SHAPE(60, 60, 60), TG_INTS(2), TG_INTS(59),
                TG_INTS(SMALL), TG_INTS(-1), __LINE__);
    check_slice(GRAPH_I64, TG_SHAPE(60, 60, 60), TG_INTS(0), TG_INTS(1),
                TG_INTS(60), TG_INTS(2), __LINE__);
    /* One long strided run: split between threads inside the run. */
    eager_tensor *lx = eager_arange(GRAPH_I32, 0, 200000, 1);
    eager_tensor *ly = eager_slice(lx, TG_NOINTS, TG_INTS(-2), TG_INTS(SMALL),
                                   TG_INTS(-3));
    CHECK(ly && eager_numel(ly) == 66667);
    int bad = -1;
    for (int64_t i = 0; ly && i < 66667 && bad < 0; i++)
        if (((const int32_t *)eager_peek(ly))[i] != 199998 - 3 * i)
            bad = (int)i;
    CHECK_MSG(bad < 0, "long reversed slice differs at %d", bad);
    eager_release(lx);
    eager_release(ly);
    eager_set_threads(1);
    /* A 0-d input: the only valid slice is the empty one. */
    eager_tensor *s = eager_scalar(3.0);
    eager_tensor *t = eager_slice(s, TG_NOINTS, TG_NOINTS, TG_NOINTS, TG_NOINTS);
    CHECK(t && eager_ndim(t) == 0 && eager_item(t) == 3.0);
    eager_release(s);
    eager_release(t);
}

/* ---- pad ---- */

static void ref_value(graph_dtype dt, float v, void *out)
{
    switch (dt) {
    case GRAPH_F32: *(float *)out = v; break;
    case GRAPH_I64: *(int64_t *)out = (int64_t)v; break;
    case GRAPH_I32: *(int32_t *)out = (int32_t)v; break;
    default: *(uint8_t *)out = v != 0.0f;
    }
}

static void check_pad(graph_dtype dt, graph_ints shape, graph_ints pads,
                      float value, int line)
{
    eager_pool_push();
    int nd = shape.n;
    int64_t odims[MAXD], idx[MAXD];
    graph_ints oshape = {nd, {0}};
    for (int k = 0; k < nd; k++)
        oshape.v[k] = odims[k] = shape.v[k] + pads.v[k] + pads.v[nd + k];
    eager_tensor *x = make_seq(dt, shape, line);
    eager_tensor *y = eager_pad(x, pads, value);
    CHECK_MSG(has_shape(y, oshape), "line %d: pad shape", line);
    int64_t n = ints_numel(oshape);
    char *want = malloc((size_t)n * 8 + 8), val[8];
    ref_value(dt, value, val);
    for (int64_t f = 0; f < n; f++) {
        unravel_idx(f, odims, nd, idx);
        int inside = 1;
        for (int k = 0; k < nd; k++) {
            idx[k] -= pads.v[k];
            inside &= idx[k] >= 0 && idx[k] < shape.v[k];
        }
        if (inside)
            put_elem(want, f, eager_peek(x), ravel_idx(idx, shape.v, nd),
                     dt_size(dt));
        else
            put_elem(want, f, val, 0, dt_size(dt));
    }
    check_data(y, want, n, __FILE__, line, "pad");
    free(want);
    eager_pool_pop();
}

static void test_pad(void)
{
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        check_pad(dt, TG_SHAPE(2, 3), TG_INTS(1, 2, 0, 1), 7.0f, __LINE__);
        /* a fraction only where the dtype holds it (integers refuse one) */
        float v = dt == GRAPH_F32 || dt == GRAPH_BOOL ? -2.75f : -2.0f;
        check_pad(dt, TG_SHAPE(2, 3, 4), TG_INTS(0, 1, 2, 3, 0, 1), v, __LINE__);
        check_pad(dt, TG_SHAPE(5), TG_INTS(3, 0), 0.0f, __LINE__);
    }
    /* Negative pads crop. */
    check_pad(GRAPH_F32, TG_SHAPE(4, 5), TG_INTS(1, -1, -2, 2), 9.0f, __LINE__);
    check_pad(GRAPH_I32, TG_SHAPE(4, 5), TG_INTS(-1, -2, -1, -3), 9.0f, __LINE__);
    check_pad(GRAPH_I64, TG_SHAPE(3, 4), TG_INTS(-3, 2, 1, -6), 1.0f, __LINE__);
    check_pad(GRAPH_F32, TG_SHAPE(2, 3, 4, 5), TG_INTS(0, 0, 1, 1, 0, 0, 1, 1), 0.0f, __LINE__);
    /* Zero-sized input: all value; zero-sized output: nothing. */
    check_pad(GRAPH_F32, TG_SHAPE(0, 3), TG_INTS(1, 1, 1, 0), 5.0f, __LINE__);
    check_pad(GRAPH_I32, TG_SHAPE(2, 3), TG_INTS(0, 0, -2, 0), 5.0f, __LINE__);
    check_pad(GRAPH_BOOL, TG_SHAPE(3, 3), TG_INTS(1, 1, 1, 1), NAN, __LINE__);
    check_pad(GRAPH_I32, TG_SHAPE(3), TG_INTS(1, 1), -2147483648.0f, __LINE__);
    check_pad(GRAPH_I64, TG_SHAPE(3), TG_INTS(1, 1), -9223372036854775808.0f, __LINE__);
    eager_set_threads(2);
    check_pad(GRAPH_F32, TG_SHAPE(4, 8, 60, 60), TG_INTS(0, 0, 2, 3, 0, 0, 1, 2), 1.5f, __LINE__);
    eager_set_threads(1);
    eager_tensor *s = eager_scalar(6.0);
    eager_tensor *t = eager_pad(s, TG_NOINTS, 1.0f);
    CHECK(t && eager_ndim(t) == 0 && eager_item(t) == 6.0);
    eager_release(s);
    eager_release(t);
}

/* ---- expand ---- */

static void check_expand(graph_dtype dt, graph_ints shape, graph_ints to,
                         graph_ints want_shape, int line)
{
    eager_pool_push();
    eager_tensor *x = make_seq(dt, shape, line);
    eager_tensor *y = eager_expand(x, to);
    CHECK_MSG(has_shape(y, want_shape), "line %d: expand shape", line);
    int nd = want_shape.n, lead = nd - shape.n;
    int64_t n = ints_numel(want_shape), idx[MAXD], ii[MAXD];
    char *want = malloc((size_t)n * 8 + 8);
    for (int64_t f = 0; f < n; f++) {
        unravel_idx(f, want_shape.v, nd, idx);
        for (int k = 0; k < shape.n; k++)
            ii[k] = shape.v[k] == 1 ? 0 : idx[k + lead];
        put_elem(want, f, eager_peek(x), ravel_idx(ii, shape.v, shape.n),
                 dt_size(dt));
    }
    check_data(y, want, n, __FILE__, line, "expand");
    free(want);
    eager_pool_pop();
}

static void test_expand(void)
{
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        check_expand(dt, TG_SHAPE(3, 1), TG_SHAPE(2, 3, 4), TG_SHAPE(2, 3, 4), __LINE__);
        check_expand(dt, TG_SHAPE(4), TG_SHAPE(3, 4), TG_SHAPE(3, 4), __LINE__);
        check_expand(dt, TG_SHAPE(2, 1, 3), TG_SHAPE(1, 4, 1), TG_SHAPE(2, 4, 3), __LINE__);
    }
    check_expand(GRAPH_F32, TG_SHAPE(1), TG_SHAPE(5), TG_SHAPE(5), __LINE__);
    check_expand(GRAPH_F32, TG_SHAPE(2, 3), TG_SHAPE(3), TG_SHAPE(2, 3), __LINE__);
    check_expand(GRAPH_F32, TG_SHAPE(2, 3), TG_NOINTS, TG_SHAPE(2, 3), __LINE__);
    check_expand(GRAPH_I32, TG_SHAPE(1, 3), TG_SHAPE(0, 3), TG_SHAPE(0, 3), __LINE__);
    check_expand(GRAPH_I32, TG_SHAPE(0, 1), TG_SHAPE(0, 4), TG_SHAPE(0, 4), __LINE__);
    check_expand(GRAPH_BOOL, TG_SHAPE(1, 2, 1, 3), TG_SHAPE(2, 2, 3, 3), TG_SHAPE(2, 2, 3, 3), __LINE__);
    eager_set_threads(2);
    check_expand(GRAPH_F32, TG_SHAPE(1, 1000), TG_SHAPE(64, 1000), TG_SHAPE(64, 1000), __LINE__);
    check_expand(GRAPH_I64, TG_SHAPE(500, 1), TG_SHAPE(500, 130), TG_SHAPE(500, 130), __LINE__);
    check_expand(GRAPH_BOOL, TG_SHAPE(1), TG_SHAPE(70001), TG_SHAPE(70001), __LINE__);
    eager_set_threads(1);
    /* 0-d input. */
    eager_tensor *s = eager_scalar(2.5);
    eager_tensor *t = eager_expand(s, TG_SHAPE(2, 3));
    CHECK_SHAPE(t, TG_SHAPE(2, 3));
    CHECK(t && eager_get(t, TG_INTS(1, 2)) == 2.5);
    eager_release(s);
    eager_release(t);
}

/* ---- gather ---- */

static int64_t read_index(const eager_tensor *idx, int64_t k)
{
    return eager_dtype(idx) == GRAPH_I64
               ? ((const int64_t *)eager_peek(idx))[k]
               : ((const int32_t *)eager_peek(idx))[k];
}

static void check_gather(eager_tensor *tab, eager_tensor *idx, int64_t axis,
                         int line)
{
    int tn = eager_ndim(tab), in = eager_ndim(idx);
    int ax = (int)(axis < 0 ? axis + tn : axis), on = tn - 1 + in;
    int64_t tdims[MAXD], idims[MAXD], idx_o[MAXD], ii[MAXD], ti[MAXD];
    graph_ints oshape = {on, {0}};
    for (int k = 0; k < tn; k++)
        tdims[k] = eager_dim(tab, k);
    for (int k = 0; k < in; k++)
        idims[k] = eager_dim(idx, k);
    for (int k = 0; k < on; k++)
        oshape.v[k] = k < ax ? tdims[k] : k < ax + in ? idims[k - ax]
                                                      : tdims[k - in + 1];
    eager_tensor *y = eager_gather(tab, idx, axis);
    CHECK_MSG(has_shape(y, oshape), "line %d: gather shape", line);
    int64_t n = ints_numel(oshape);
    char *want = malloc((size_t)n * 8 + 8);
    for (int64_t f = 0; f < n; f++) {
        unravel_idx(f, oshape.v, on, idx_o);
        for (int k = 0; k < in; k++)
            ii[k] = idx_o[ax + k];
        int64_t v = read_index(idx, ravel_idx(ii, idims, in));
        for (int k = 0; k < tn; k++)
            ti[k] = k < ax ? idx_o[k] : k == ax ? (v < 0 ? v + tdims[ax] : v)
                                                : idx_o[k + in - 1];
        put_elem(want, f, eager_peek(tab), ravel_idx(ti, tdims, tn),
                 dt_size(eager_dtype(tab)));
    }
    check_data(y, want, n, __FILE__, line, "gather");
    free(want);
}

static void test_gather(void)
{
    eager_pool_push();
    int64_t i64v[6] = {3, 0, -1, 9, -10, 3};
    int32_t i32v[6] = {2, -4, 0, 1, 3, -1};
    eager_tensor *i64 = eager_from_data(GRAPH_I64, TG_SHAPE(2, 3), i64v);
    eager_tensor *i32 = eager_from_data(GRAPH_I32, TG_SHAPE(3, 2), i32v);
    eager_tensor *i0 = eager_from_data(GRAPH_I64, TG_NOINTS, i64v);
    eager_tensor *iz = eager_zeros(GRAPH_I32, TG_SHAPE(0, 2));
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        eager_tensor *emb = make_seq(dt, TG_SHAPE(10, 8), d); /* embedding */
        check_gather(emb, i64, 0, __LINE__);
        check_gather(emb, i32, -2, __LINE__);
        check_gather(emb, i0, 0, __LINE__);
        check_gather(emb, iz, 0, __LINE__);
        eager_tensor *t3 = make_seq(dt, TG_SHAPE(3, 4, 5), d);
        check_gather(t3, i32, 1, __LINE__);
        check_gather(t3, i32, -1, __LINE__); /* single elements */
        check_gather(t3, i0, 2, __LINE__);
    }
    eager_tensor *v = make_seq(GRAPH_F32, TG_SHAPE(10), 0);
    check_gather(v, i64, 0, __LINE__);
    eager_set_threads(2);
    eager_tensor *big = make_seq(GRAPH_F32, TG_SHAPE(1000, 64), 1);
    int64_t *bi = malloc(64 * 32 * sizeof *bi);
    for (int k = 0; k < 64 * 32; k++)
        bi[k] = (k * 7919) % 1000 - (k % 3 == 0 ? 1000 : 0);
    eager_tensor *bidx = eager_from_data(GRAPH_I64, TG_SHAPE(64, 32), bi);
    free(bi);
    check_gather(big, bidx, 0, __LINE__);
    eager_tensor *bt = make_seq(GRAPH_I32, TG_SHAPE(64, 2000), 2);
    check_gather(bt, i32, 1, __LINE__);
    eager_set_threads(1);
    eager_pool_pop();
}

/* ---- errors: the message and the test's own file:line ---- */

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = make_seq(GRAPH_F32, TG_SHAPE(4, 5), 0);
    const graph_ints no = TG_NOINTS;
    CHECK_FAILS(eager_slice(x, no, TG_INTS(0), TG_INTS(2), TG_INTS(0)), "slice: [4,5]: step 0 on axis 0");
    CHECK_FAILS(eager_slice(x, no, TG_INTS(0, 1), TG_INTS(2), no), "starts has 2 entries, ends 1");
    CHECK_FAILS(eager_slice(x, TG_INTS(0, 1), TG_INTS(0), TG_INTS(2), no), "axes has 2 entries, starts 1");
    CHECK_FAILS(eager_slice(x, no, TG_INTS(0), TG_INTS(2), TG_INTS(1, 1)), "steps has 2 entries, starts 1");
    CHECK_FAILS(eager_slice(x, TG_INTS(2), TG_INTS(0), TG_INTS(2), no), "axis 2 out of range for 2 dims");
    CHECK_FAILS(eager_slice(x, TG_INTS(1, -1), TG_INTS(0, 0), TG_INTS(2, 2), no), "axis -1 listed twice");
    CHECK_FAILS(eager_slice(x, no, TG_INTS(0, 0, 0), TG_INTS(1, 1, 1), no), "starts has 3 entries, input has 2 dims");
    CHECK_FAILS(eager_slice(x, no, (graph_ints){9, {0}}, (graph_ints){9, {0}}, no), "starts has 9 entries (at most 8)");

    CHECK_FAILS(eager_pad(x, TG_INTS(1, 1), 0.0f), "pad: [4,5]: pads has 2 entries, need 4 (a begin and an end per dim)");
    CHECK_FAILS(eager_pad(x, TG_INTS(0, -3, 0, -3), 0.0f), "pads -3,-3 crop dim 1 of size 5 below 0");
    CHECK_FAILS(eager_pad(x, TG_INTS(INT64_MAX, 0, 1, 0), 0.0f), "pads 9223372036854775807,1 on dim 0 overflow");
    eager_tensor *xi = make_seq(GRAPH_I32, TG_SHAPE(2), 0);
    CHECK_FAILS(eager_pad(xi, TG_INTS(1, 1), NAN), "value nan is not representable as i32");
    CHECK_FAILS(eager_pad(xi, TG_INTS(1, 1), 3e9f), "value 3e+09 is not representable as i32");
    eager_tensor *xl = make_seq(GRAPH_I64, TG_SHAPE(2), 0);
    CHECK_FAILS(eager_pad(xl, TG_INTS(1, 1), 9.3e18f), "is not representable as i64");
    CHECK_FAILS(eager_pad(xl, TG_INTS(1, 1), -INFINITY), "value -inf is not representable as i64");

    CHECK_FAILS(eager_expand(x, TG_SHAPE(3, 5)), "expand: [4,5]: cannot expand [4,5] to [3,5]");
    CHECK_FAILS(eager_expand(x, TG_SHAPE(2, -1)), "bad dim -1 in shape [2,-1]");
    CHECK_FAILS(eager_expand(x, (graph_ints){9, {0}}), "shape has 9 entries (at most 8)");

    int64_t iv[4] = {0, 3, 4, -6};
    eager_tensor *idx = eager_from_data(GRAPH_I64, TG_SHAPE(2, 2), iv);
    eager_tensor *fidx = eager_zeros(GRAPH_F32, TG_SHAPE(2));
    CHECK_FAILS(eager_gather(x, fidx, 0), "gather: [4,5] x [2]: indices must be i64 or i32, got f32");
    CHECK_FAILS(eager_gather(x, idx, 2), "axis 2 out of range for 2 dims");
    CHECK_FAILS(eager_gather(x, idx, 0), "gather: index 4 out of range for axis 0 of size 4 (indices position [1,0])");
    CHECK_FAILS(eager_gather(x, idx, 1), "gather: index -6 out of range for axis 1 of size 5 (indices position [1,1])");
    int32_t jv[3] = {0, 1, 2};
    eager_tensor *jdx = eager_from_data(GRAPH_I32, TG_SHAPE(3), jv);
    eager_tensor *empty = eager_zeros(GRAPH_F32, TG_SHAPE(0, 3));
    CHECK_FAILS(eager_gather(empty, jdx, 0), "index 0 out of range for axis 0 of size 0 (indices position [0])");
    eager_tensor *i7 = eager_zeros(GRAPH_I64, TG_SHAPE(1, 1, 1, 1, 1, 1, 1));
    eager_tensor *t3 = eager_zeros(GRAPH_F32, TG_SHAPE(2, 2, 2));
    CHECK_FAILS(eager_gather(t3, i7, 0), "result would have 9 dims (at most 8)");
    CHECK_FAILS(eager_gather(eager_scalar(1.0), jdx, 0), "axis 0 out of range for 0 dims");
    eager_pool_pop();
}

/* The gather kernel, called directly, never reads past the table. */
static void test_gather_kernel(void)
{
    float tab[6] = {1, 2, 3, 4, 5, 6}, out[4] = {0};
    int32_t idx[2] = {1, 3};
    graph_type in_t[2] = {{GRAPH_F32, 2, {3, 2}}, {GRAPH_I32, 1, {2}}};
    graph_type out_t = {GRAPH_F32, 2, {2, 2}};
    graph_gather_attrs at = {0};
    const void *ins[2] = {tab, idx};
    void *outs[1] = {out};
    char err[256] = "";
    eager_kargs ka = {in_t, ins, 2, &at, &out_t, outs, 1, 1, err, sizeof err};
    CHECK(eager_kernels[GRAPH_OP_gather](&ka) == TG_ERR_ARG);
    CHECK_MSG(strstr(err, "index 3 out of range for axis 0 of size 3 (indices position [1])") != NULL, "err: %s", err);
    idx[1] = -3;
    CHECK(eager_kernels[GRAPH_OP_gather](&ka) == TG_OK);
    float want[4] = {3, 4, 1, 2};
    CHECK(memcmp(out, want, sizeof want) == 0);
}

int main(void)
{
    long live = eager_live_tensors();
    test_slice();
    test_pad();
    test_expand();
    test_gather();
    test_errors();
    test_gather_kernel();
    CHECK_MSG(eager_status() == TG_OK, "stray error: %s", eager_error());
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors",
              eager_live_tensors() - live);
    return check_done();
}
