/*
 * test_reduce.c - reduce_sum, reduce_mean, reduce_max against a naive
 * reference that walks every input element and accumulates into its output
 * slot in double (wrapping unsigned 64-bit for integer sums).  Shapes cover
 * first/middle/last/several/all axes, keepdim both ways, size-1 dims, 0-d,
 * zero-sized, large tensors on 1 and 4 threads (every parallel split), NaN
 * and integer wrap-around, and every error path with the caller's line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

enum { SUM, MEAN, MAX };
static const char *const op_names[] = {"reduce_sum", "reduce_mean", "reduce_max"};

static graph_ints ints_of(const int64_t *v, int n)
{
    graph_ints r = {n, {0}};
    for (int i = 0; i < n; i++)
        r.v[i] = v[i];
    return r;
}

static eager_tensor *run_op(int op, eager_tensor *x, graph_ints axes, int64_t keepdim)
{
    switch (op) {
    case SUM: return eager_reduce_sum(x, axes, keepdim);
    case MEAN: return eager_reduce_mean(x, axes, keepdim);
    default: return eager_reduce_max(x, axes, keepdim);
    }
}

/* Element i of a tensor's data as double (int64 values exact up to 2^53). */
static double get_d(const void *p, graph_dtype dt, int64_t i)
{
    switch (dt) {
    case GRAPH_F32: return ((const float *)p)[i];
    case GRAPH_I64: return (double)((const int64_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

/* The reference: output shape and values.  want_u holds integer sums
 * modulo 2^64, want_d everything else. */
typedef struct ref_out {
    int ndim;
    int64_t dim[8];
    int64_t n;
    double *want_d;
    uint64_t *want_u;
} ref_out;

static void reference(int op, const graph_type *t, const void *data,
                      const int *mask, int keepdim, ref_out *r)
{
    int64_t numel = 1, nout = 1, ostride[8] = {0};
    r->ndim = 0;
    for (int d = 0; d < t->ndim; d++) {
        numel *= t->dim[d];
        if (!mask[d])
            nout *= t->dim[d];
        if (!mask[d] || keepdim)
            r->dim[r->ndim++] = mask[d] ? 1 : t->dim[d];
    }
    /* stride of each kept input dim in the output */
    int64_t os = 1;
    for (int d = t->ndim - 1; d >= 0; d--)
        if (!mask[d])
            ostride[d] = os, os *= t->dim[d];
    r->n = nout;
    r->want_d = calloc((size_t)nout + 1, sizeof *r->want_d);
    r->want_u = calloc((size_t)nout + 1, sizeof *r->want_u);
    int64_t *cnt = calloc((size_t)nout + 1, sizeof *cnt);
    for (int64_t o = 0; o < nout; o++)
        r->want_d[o] = op == MAX ? -INFINITY : 0.0;
    for (int64_t i = 0; i < numel; i++) {
        int64_t rem = i, o = 0;
        for (int d = t->ndim - 1; d >= 0; d--) {
            o += (rem % t->dim[d]) * ostride[d];
            rem /= t->dim[d];
        }
        double v = get_d(data, t->dtype, i);
        cnt[o]++;
        if (op == MAX) {
            if (isnan(v) || isnan(r->want_d[o]))
                r->want_d[o] = NAN;
            else if (v > r->want_d[o])
                r->want_d[o] = v;
        } else {
            r->want_d[o] += v;
            if (t->dtype == GRAPH_I64)
                r->want_u[o] += (uint64_t)((const int64_t *)data)[i];
            else if (t->dtype == GRAPH_I32)
                r->want_u[o] += (uint64_t)(int64_t)((const int32_t *)data)[i];
        }
    }
    if (op == MEAN)
        for (int64_t o = 0; o < nout; o++)
            r->want_d[o] = cnt[o] ? r->want_d[o] / (double)cnt[o] : NAN;
    if (op == MAX && t->dtype != GRAPH_F32)
        for (int64_t o = 0; o < nout; o++) /* ints: keep exact values */
            r->want_u[o] = 0;
    free(cnt);
}

/* Runs op over x with the given axes and compares with the reference. */
static void check_case(int op, eager_tensor *x, const int64_t *axv, int nax,
                       int keepdim, int line)
{
    const graph_type *t = eager_type(x);
    int mask[8] = {0};
    for (int d = 0; d < t->ndim; d++)
        mask[d] = nax == 0;
    for (int k = 0; k < nax; k++)
        mask[axv[k] < 0 ? axv[k] + (t->ndim ? t->ndim : 1) : axv[k]] = 1;
    ref_out r;
    reference(op, t, eager_peek(x), mask, keepdim, &r);
    eager_tensor *y = run_op(op, x, ints_of(axv, nax), keepdim);
    CHECK_MSG(y != NULL, "line %d: %s ran", line, op_names[op]);
    if (!y) {
        eager_clear_error();
        free(r.want_d), free(r.want_u);
        return;
    }
    const graph_type *yt = eager_type(y);
    int same = yt->ndim == r.ndim && yt->dtype == t->dtype;
    for (int d = 0; same && d < r.ndim; d++)
        same = yt->dim[d] == r.dim[d];
    CHECK_MSG(same, "line %d: %s output shape", line, op_names[op]);
    const void *p = eager_peek(y);
    int64_t bad = -1;
    for (int64_t o = 0; same && o < r.n && bad < 0; o++) {
        if (t->dtype == GRAPH_I64 && op == SUM) {
            if ((uint64_t)((const int64_t *)p)[o] != r.want_u[o])
                bad = o;
        } else if (t->dtype == GRAPH_I32 && op == SUM) {
            if ((uint32_t)((const int32_t *)p)[o] != (uint32_t)r.want_u[o])
                bad = o;
        } else if (t->dtype != GRAPH_F32) {
            if (get_d(p, t->dtype, o) != r.want_d[o])
                bad = o;
        } else {
            double g = get_d(p, t->dtype, o), w = r.want_d[o];
            int ok = isnan(w) ? isnan(g) : isinf(w) ? g == w
                                                   : fabs(g - w) <= 1e-5 * (1 + fabs(w));
            if (!ok)
                bad = o;
        }
    }
    CHECK_MSG(bad < 0, "line %d: %s value [%lld] = %.9g, want %.9g", line,
              op_names[op], (long long)bad,
              bad >= 0 ? get_d(p, t->dtype, bad) : 0.0,
              bad >= 0 ? r.want_d[bad] : 0.0);
    eager_release(y);
    free(r.want_d), free(r.want_u);
}

static eager_tensor *rand_tensor(graph_dtype dt, graph_ints shape, uint64_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < shape.n; i++)
        n *= shape.v[i];
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    check_fill(f, n, seed, -1.0f, 1.0f);
    void *buf = f;
    if (dt != GRAPH_F32) {
        buf = malloc((size_t)(n ? n : 1) * 8);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = (int64_t)(f[i] * 1000.0f);
            if (dt == GRAPH_I64)
                ((int64_t *)buf)[i] = v * 1000000007LL;
            else
                ((int32_t *)buf)[i] = (int32_t)v;
        }
    }
    eager_tensor *t = eager_from_data(dt, shape, buf);
    if (buf != f)
        free(buf);
    free(f);
    return t;
}

/* All ops, all axis subsets of a 3-d and a 4-d shape, keepdim both ways. */
static void test_axis_subsets(void)
{
    static const graph_dtype dts[] = {GRAPH_F32, GRAPH_I64, GRAPH_I32};
    graph_ints shapes[] = {TG_SHAPE(2, 3, 5), TG_SHAPE(3, 1, 4, 17), TG_SHAPE(37)};
    for (int s = 0; s < 3; s++) {
        int nd = shapes[s].n;
        for (int di = 0; di < 3; di++) {
            eager_tensor *x = rand_tensor(dts[di], shapes[s], 11 + (uint64_t)s);
            for (int op = SUM; op <= MAX; op++) {
                if (op == MEAN && dts[di] != GRAPH_F32)
                    continue;
                for (int m = 0; m < (1 << nd); m++) {
                    int64_t ax[8];
                    int nax = 0;
                    for (int d = 0; d < nd; d++)
                        if (m >> d & 1) /* alternate spellings: -1 for odd subsets */
                            ax[nax++] = (m & 1) ? d - nd : d;
                    check_case(op, x, ax, nax, m % 2, __LINE__);
                    check_case(op, x, ax, nax, 1 - m % 2, __LINE__);
                }
            }
            eager_release(x);
        }
    }
}

/* Big tensors: every layout on 1 and 4 threads, so each parallel split
 * (per output, per chunk of a long reduction, per column block) runs. */
static void test_large(void)
{
    struct { graph_ints shape; int64_t ax[3]; int nax; } cases[] = {
        {TG_SHAPE(64, 1000), {1}, 1},       /* rows, many outputs */
        {TG_SHAPE(2, 100000), {1}, 1},      /* rows, split each */
        {TG_SHAPE(200003), {0}, 1},         /* all, split */
        {TG_SHAPE(1000, 64), {0}, 1},       /* cols */
        {TG_SHAPE(100000, 5), {0}, 1},      /* cols, split steps */
        {TG_SHAPE(40, 30, 50), {0, 2}, 2},  /* rows + odometer */
        {TG_SHAPE(40, 30, 50), {1}, 1},     /* cols + outer */
        {TG_SHAPE(20, 3, 30, 40), {0, 2}, 2}, /* cols + odometer */
        {TG_SHAPE(3, 20000, 2, 3), {1, 3}, 2}, /* rows, odometer, split */
        {TG_SHAPE(50, 2, 400, 3), {0, 2}, 2}, /* cols, odometer, split */
        {TG_SHAPE(3, 5000, 7), {0, 1}, 2},  /* cols, few outputs, split */
        {TG_SHAPE(5, 3000), {0}, 1},        /* cols wider than a block */
        {TG_SHAPE(3, 1001, 2), {1}, 1},     /* short rows folded flat */
        {TG_SHAPE(4096, 256, 4), {1}, 1},   /* the same, many outputs */
    };
    for (int th = 1; th <= 4; th += 3) {
        eager_set_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            eager_tensor *x = rand_tensor(GRAPH_F32, cases[c].shape, 100 + c);
            eager_tensor *xi = rand_tensor(GRAPH_I32, cases[c].shape, 200 + c);
            for (int op = SUM; op <= MAX; op++)
                check_case(op, x, cases[c].ax, cases[c].nax, 0, __LINE__);
            check_case(SUM, xi, cases[c].ax, cases[c].nax, 1, __LINE__);
            check_case(MAX, xi, cases[c].ax, cases[c].nax, 0, __LINE__);
            eager_release(x);
            eager_release(xi);
        }
    }
    eager_set_threads(1);
}

static void test_scalar_and_empty(void)
{
    eager_tensor *s = eager_scalar(2.5);
    int64_t zero = 0, minus = -1;
    for (int op = SUM; op <= MAX; op++) {
        check_case(op, s, NULL, 0, 0, __LINE__);
        check_case(op, s, &zero, 1, 1, __LINE__);
        check_case(op, s, &minus, 1, 0, __LINE__);
    }
    eager_release(s);
    /* [0,3]: over axis 0 the reductions are empty; over axis 1 the
     * output is. */
    eager_tensor *e = eager_zeros(GRAPH_F32, TG_SHAPE(0, 3));
    eager_tensor *ei = eager_zeros(GRAPH_I64, TG_SHAPE(4, 0));
    int64_t one = 1;
    check_case(SUM, e, &zero, 1, 0, __LINE__);   /* [0,0,0] */
    check_case(MEAN, e, &zero, 1, 1, __LINE__);  /* NaN */
    check_case(SUM, e, NULL, 0, 0, __LINE__);
    check_case(MAX, e, &one, 1, 0, __LINE__);    /* shape [0] */
    check_case(SUM, ei, &one, 1, 1, __LINE__);   /* [4,1] zeros */
    check_case(MAX, ei, &zero, 1, 0, __LINE__);  /* shape [0] */
    eager_tensor *m = eager_reduce_mean(e, TG_INTS(0), 0);
    CHECK(m && eager_numel(m) == 3 && isnan(((const float *)eager_peek(m))[1]));
    eager_release(m);
    eager_release(e);
    eager_release(ei);
}

static void test_extremes(void)
{
    /* NaN propagates through max; -inf is an ordinary value. */
    float v[] = {1, NAN, 3, -INFINITY, -INFINITY, -INFINITY, 5, 2, NAN, 0, 0, 0};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(4, 3), v);
    int64_t a0 = 0, a1 = 1;
    check_case(MAX, x, &a1, 1, 0, __LINE__);
    check_case(MAX, x, &a0, 1, 0, __LINE__);
    check_case(SUM, x, &a1, 1, 0, __LINE__);
    eager_tensor *y = eager_reduce_max(x, TG_INTS(1), 0);
    const float *p = y ? eager_peek(y) : NULL;
    CHECK(p && isnan(p[0]) && p[1] == -INFINITY && isnan(p[2]) && p[3] == 0);
    eager_release(y);
    eager_release(x);
    /* NaN late in a long row and in a long column, on 4 threads. */
    eager_set_threads(4);
    eager_tensor *big = eager_zeros(GRAPH_F32, TG_SHAPE(100000, 3));
    ((float *)eager_data_mut(big))[99999 * 3 + 1] = NAN;
    eager_tensor *c = eager_reduce_max(big, TG_INTS(0), 0);
    eager_tensor *all = eager_reduce_max(big, TG_NOINTS, 0);
    p = c ? eager_peek(c) : NULL;
    CHECK(p && p[0] == 0 && isnan(p[1]) && p[2] == 0);
    CHECK(all && isnan(eager_item(all)));
    eager_release(c), eager_release(all), eager_release(big);
    eager_set_threads(1);
    /* NaN inside the vector body of one long row, one thread */
    eager_tensor *row = eager_zeros(GRAPH_F32, TG_SHAPE(2, 1000));
    ((float *)eager_data_mut(row))[1000 + 37] = NAN;
    ((float *)eager_data_mut(row))[500] = INFINITY;
    eager_tensor *rm = eager_reduce_max(row, TG_INTS(-1), 1);
    p = rm ? eager_peek(rm) : NULL;
    CHECK(p && p[0] == INFINITY && isnan(p[1]));
    eager_release(rm), eager_release(row);
    /* Integer sums wrap (two's complement), integer max is exact. */
    int64_t i64[] = {INT64_MAX, 1, INT64_MIN, -1, INT64_MIN, INT64_MIN + 1};
    eager_tensor *xl = eager_from_data(GRAPH_I64, TG_SHAPE(3, 2), i64);
    eager_tensor *sl = eager_reduce_sum(xl, TG_INTS(1), 0);
    eager_tensor *ml = eager_reduce_max(xl, TG_INTS(0), 0);
    const int64_t *pl = sl ? eager_peek(sl) : NULL;
    CHECK(pl && pl[0] == INT64_MIN && pl[1] == INT64_MAX && pl[2] == 1);
    pl = ml ? eager_peek(ml) : NULL;
    CHECK(pl && pl[0] == INT64_MAX && pl[1] == 1);
    int32_t i32[] = {INT32_MAX, 1, INT32_MIN, -1, 7, -9};
    eager_tensor *xs = eager_from_data(GRAPH_I32, TG_SHAPE(3, 2), i32);
    eager_tensor *ss = eager_reduce_sum(xs, TG_INTS(-1), 1);
    const int32_t *ps = ss ? eager_peek(ss) : NULL;
    CHECK(ss && eager_ndim(ss) == 2 && eager_dim(ss, 1) == 1);
    CHECK(ps && ps[0] == INT32_MIN && ps[1] == INT32_MAX && ps[2] == -2);
    check_case(SUM, xl, NULL, 0, 0, __LINE__);
    check_case(SUM, xs, NULL, 0, 0, __LINE__);
    eager_release(xl), eager_release(sl), eager_release(ml);
    eager_release(xs), eager_release(ss);
    /* float sums keep precision: 1e8 + many ones (f32 accumulation loses them) */
    eager_tensor *ones = eager_ones(GRAPH_F32, TG_SHAPE(4097));
    ((float *)eager_data_mut(ones))[0] = 1e8f;
    eager_tensor *so = eager_reduce_sum(ones, TG_NOINTS, 0);
    CHECK(so && eager_item(so) == (double)(float)(1e8 + 4096));
    eager_release(so), eager_release(ones);
}

static void test_errors(void)
{
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 4));
    eager_tensor *xb = eager_zeros(GRAPH_BOOL, TG_SHAPE(2));
    eager_tensor *xi = eager_zeros(GRAPH_I64, TG_SHAPE(2));
    eager_tensor *e = eager_zeros(GRAPH_F32, TG_SHAPE(2, 0));
    eager_tensor *s = eager_scalar(1.0);
    CHECK_FAILS(eager_reduce_sum(x, TG_INTS(3), 0), "reduce_sum: [2,3,4]: axis 3 out of range for 3 dims (test_reduce.c:");
    CHECK_FAILS(eager_reduce_mean(x, TG_INTS(-4), 0), "reduce_mean: [2,3,4]: axis -4 out of range for 3 dims");
    CHECK_FAILS(eager_reduce_max(x, TG_INTS(1, -2), 0), "duplicate axis -2 in axes [1,-2]");
    CHECK_FAILS(eager_reduce_sum(x, TG_INTS(0, 2, 0), 1), "duplicate axis 0 in axes [0,2,0]");
    CHECK_FAILS(eager_reduce_sum(x, TG_INTS(0), 2), "keepdim must be 0 or 1, got 2");
    CHECK_FAILS(eager_reduce_max(x, TG_INTS(0), -1), "keepdim must be 0 or 1, got -1");
    CHECK_FAILS(eager_reduce_mean(xi, TG_NOINTS, 0), "reduce_mean: i64[2]: dtype i64 not supported");
    CHECK_FAILS(eager_reduce_sum(xb, TG_NOINTS, 0), "dtype bool not supported");
    CHECK_FAILS(eager_reduce_max(e, TG_INTS(1), 0), "reduce_max: [2,0]: reduce_max over an empty axis");
    CHECK_FAILS(eager_reduce_max(e, TG_NOINTS, 1), "reduce_max over an empty axis");
    CHECK_FAILS(eager_reduce_sum(s, TG_INTS(1), 0), "reduce_sum: []: axis 1 out of range for 0 dims");
    CHECK_FAILS(eager_reduce_sum(s, TG_INTS(0, -1), 0), "duplicate axis -1 in axes [0,-1]");
    CHECK(eager_reduce_sum(NULL, TG_NOINTS, 0) == NULL);
    CHECK_ERROR("reduce_sum: input 0 is NULL");
    eager_release(x), eager_release(xb), eager_release(xi);
    eager_release(e), eager_release(s);
}

/* ---- topk ---- */

/* Does w at index m come before v at index e (the op's order)? */
static int topk_before(float w, int64_t m, float v, int64_t e, int largest)
{
    int wgt = w > v || (isnan(w) && !isnan(v)), vgt = v > w || (isnan(v) && !isnan(w));
    return largest ? (wgt || (!vgt && m < e)) : (vgt || (!wgt && m < e));
}

/*
 * topk of x [o, n, i] along axis 1 against a reference by rank: the
 * element with r elements before it in the order is output r; ties from
 * values rounded to quarters, NaNs at two places.
 */
static void check_topk(int line, int64_t o, int64_t n, int64_t in, int64_t k, int largest)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(o, n, in), (uint64_t)line, -2, 2);
    float *px = eager_data_mut(x);
    for (int64_t e = 0; e < o * n * in; e++)
        px[e] = roundf(px[e] * 4) / 4;
    px[0] = NAN;
    px[o * n * in - 1] = NAN;
    eager_tensor *out[2] = {NULL, NULL};
    int got = eager_topk(x, k, 1, largest, 1, out, 2);
    check_report(got == 2, __FILE__, line, "topk runs: %s", eager_error());
    if (got == 2) {
        const float *v = eager_peek(out[0]);
        const int64_t *ix = eager_peek(out[1]);
        int ok = 1;
        for (int64_t a = 0; a < o; a++)
            for (int64_t c = 0; c < in; c++)
                for (int64_t e = 0; e < n; e++) {
                    float xe = px[(a * n + e) * in + c];
                    int64_t r = 0;
                    for (int64_t m = 0; m < n; m++)
                        r += topk_before(px[(a * n + m) * in + c], m, xe, e, largest);
                    if (r >= k)
                        continue;
                    int64_t at = (a * k + r) * in + c;
                    ok &= ix[at] == e && (v[at] == xe || (isnan(v[at]) && isnan(xe)));
                }
        check_report(ok, __FILE__, line, "topk k=%lld largest=%d matches the rank reference",
                     (long long)k, largest);
    }
    eager_pool_pop();
}

static void test_topk(void)
{
    check_topk(__LINE__, 2, 9, 3, 4, 1);
    check_topk(__LINE__, 2, 9, 3, 4, 0);
    check_topk(__LINE__, 1, 50, 1, 50, 1); /* everything, in order */
    check_topk(__LINE__, 3, 7, 2, 0, 1);   /* k 0: empty outputs */
    check_topk(__LINE__, 40, 300, 4, 7, 0); /* threads */
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 3), 1, -1, 1), *out[2];
    CHECK(eager_topk(x, 4, -1, 1, 1, out, 2) < 0);
    CHECK_ERROR("topk: [2,3]: k 4 is not in 0 .. 3 (dim 1)");
    CHECK(eager_topk(x, 1, 2, 1, 1, out, 2) < 0);
    CHECK_ERROR("axis 2 out of range for 2 dims");
    CHECK(eager_topk(x, 1, 0, 2, 1, out, 2) < 0);
    CHECK_ERROR("largest must be 0 or 1, got 2");
    CHECK(eager_topk(eager_full(GRAPH_F32, TG_NOINTS, 1), 1, 0, 1, 1, out, 2) < 0);
    CHECK_ERROR("x must have rank >= 1, got 0-D");
    eager_clear_error();
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_axis_subsets();
    test_large();
    test_scalar_and_empty();
    test_extremes();
    test_errors();
    test_topk();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(8, 9), 3, -1.0f, 1.0f);
    eager_tensor *y = eager_reduce_mean(eager_reduce_sum(x, TG_INTS(0), 1), TG_NOINTS, 0);
    CHECK(y != NULL);
    eager_pool_pop();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
