/*
 * test_pool.c - max_pool2d, avg_pool2d (count_include_pad both ways) and
 * global_avg_pool against naive double-precision loops: default and
 * explicit strides, symmetric and asymmetric padding, NaN propagation,
 * empty inputs, two threads, every error path, leaks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

enum { MAX, AVG, AVG_PAD };

typedef struct pool_case {
    int64_t n, c, h, w;
    graph_ints kernel, stride, padding;
    int kind;
} pool_case;

/* One output of the reference pool: window clipped to the input. */
static float pool_at(const pool_case *k, const float *x, const int64_t kk[2],
                     const int64_t s[2], const int64_t p[4], int64_t plane,
                     int64_t oy, int64_t ox)
{
    double acc = k->kind == MAX ? -INFINITY : 0.0;
    int64_t count = 0;
    for (int64_t ky = 0; ky < kk[0]; ky++)
        for (int64_t kx = 0; kx < kk[1]; kx++) {
            int64_t iy = oy * s[0] - p[0] + ky, ix = ox * s[1] - p[1] + kx;
            if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w)
                continue;
            double v = x[plane * k->h * k->w + iy * k->w + ix];
            if (k->kind == MAX)
                acc = (v > acc || isnan(v)) ? v : acc;
            else
                acc += v;
            count++;
        }
    if (k->kind == AVG_PAD)
        return (float)(acc / (double)(kk[0] * kk[1]));
    if (k->kind == AVG)
        return count ? (float)(acc / (double)count) : NAN;
    return (float)acc;
}

static eager_tensor *run_pool(const pool_case *k, eager_tensor *x)
{
    if (k->kind == MAX)
        return eager_max_pool2d(x, k->kernel, k->stride, k->padding);
    return eager_avg_pool2d(x, k->kernel, k->stride, k->padding, k->kind == AVG_PAD);
}

/* Runs the pool on x (or seeded data when x is NULL) and compares. */
static void check_pool_on(int line, pool_case k, eager_tensor *x)
{
    int64_t kk[2], s[2], p[4];
    kk[0] = k.kernel.v[0], kk[1] = k.kernel.n > 1 ? k.kernel.v[1] : kk[0];
    s[0] = k.stride.n ? k.stride.v[0] : kk[0];
    s[1] = k.stride.n > 1 ? k.stride.v[1] : k.stride.n ? s[0] : kk[1];
    if (k.padding.n == 4) {
        memcpy(p, k.padding.v, sizeof p);
    } else {
        p[0] = p[2] = k.padding.n ? k.padding.v[0] : 0;
        p[1] = p[3] = k.padding.n > 1 ? k.padding.v[1] : p[0];
    }
    int64_t oh = (k.h + p[0] + p[2] - kk[0]) / s[0] + 1;
    int64_t ow = (k.w + p[1] + p[3] - kk[1]) / s[1] + 1;
    eager_pool_push();
    if (!x)
        x = eager_rand_uniform(TG_SHAPE(k.n, k.c, k.h, k.w), (uint64_t)line, -2.0f, 2.0f);
    eager_tensor *y = run_pool(&k, x);
    int ok = y && eager_ndim(y) == 4 && eager_dim(y, 0) == k.n && eager_dim(y, 1) == k.c &&
             eager_dim(y, 2) == oh && eager_dim(y, 3) == ow;
    check_report(ok, __FILE__, line, "pool shape [%lld,%lld,%lld,%lld]", (long long)k.n,
                 (long long)k.c, (long long)oh, (long long)ow);
    int64_t total = k.n * k.c * oh * ow;
    float *want = malloc((size_t)(total + 1) * sizeof *want);
    const float *px = eager_peek(x);
    for (int64_t pl = 0, i = 0; pl < k.n * k.c; pl++)
        for (int64_t yy = 0; yy < oh; yy++)
            for (int64_t xx = 0; xx < ow; xx++)
                want[i++] = pool_at(&k, px, kk, s, p, pl, yy, xx);
    if (ok)
        check_floats(eager_peek(y), want, total, 1e-5, __FILE__, line, "pool");
    free(want);
    eager_pool_pop();
}

static void check_pool(int line, pool_case k)
{
    check_pool_on(line, k, NULL);
}

#define NO TG_NOINTS

static void test_values(void)
{
    for (int kind = MAX; kind <= AVG_PAD; kind++) {
        check_pool(__LINE__, (pool_case){2, 3, 8, 8, TG_INTS(2), NO, NO, kind});
        check_pool(__LINE__, (pool_case){2, 3, 9, 7, TG_INTS(2), NO, NO, kind}); /* odd edge dropped */
        check_pool(__LINE__, (pool_case){1, 4, 9, 10, TG_INTS(3), TG_INTS(2), TG_INTS(1), kind});
        check_pool(__LINE__, (pool_case){1, 2, 7, 8, TG_INTS(3), TG_INTS(1), TG_INTS(1), kind});
        check_pool(__LINE__, (pool_case){1, 2, 7, 8, TG_INTS(2, 3), TG_INTS(2, 1), TG_INTS(1, 1), kind});
        check_pool(__LINE__, (pool_case){1, 2, 7, 8, TG_INTS(3, 2), NO, TG_INTS(2, 0), kind});
        check_pool(__LINE__, (pool_case){2, 2, 6, 9, TG_INTS(3), TG_INTS(2), TG_INTS(0, 1, 2, 2), kind});
        check_pool(__LINE__, (pool_case){1, 1, 1, 1, TG_INTS(1), NO, NO, kind});
        check_pool(__LINE__, (pool_case){1, 1, 5, 5, TG_INTS(5), NO, NO, kind});
        check_pool(__LINE__, (pool_case){1, 3, 1, 6, TG_INTS(1, 2), NO, NO, kind});
        check_pool(__LINE__, (pool_case){0, 3, 8, 8, TG_INTS(2), NO, NO, kind});
        check_pool(__LINE__, (pool_case){2, 0, 8, 8, TG_INTS(2), NO, NO, kind});
        /* no input rows: max gives -inf, avg 0 or NaN (documented) */
        check_pool(__LINE__, (pool_case){1, 1, 0, 3, TG_INTS(2), NO, TG_INTS(1), kind});
        check_pool(__LINE__, (pool_case){2, 64, 56, 56, TG_INTS(3), TG_INTS(2), TG_INTS(1), kind});
    }
}

/* The 2x2, stride 2 pool (its own flat path, kernels_pool.c) against the
 * reference scan bit for bit, on data full of ties, signed zeros, -inf and
 * NaNs with distinct payloads (the winner decides which NaN comes out);
 * even and odd sizes, one and two threads. */
static void test_max_2x2_bits(void)
{
    static const int64_t shapes[][4] = {{2, 3, 8, 10}, {1, 3, 7, 9}, {3, 4, 40, 41}, {1, 1, 2, 2},
                                        {2, 2, 3, 6}, {1, 2, 28, 28}};
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++)
        for (int nt = 1; nt <= 2; nt++) {
            const int64_t *d = shapes[si];
            int64_t n = d[0] * d[1] * d[2] * d[3];
            float *x = malloc((size_t)n * sizeof *x);
            for (int64_t i = 0; i < n; i++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                unsigned v = (unsigned)(r >> 59); /* 0..31 */
                static const float pick[] = {-1.0f, 0.0f, -0.0f, 1.0f, 2.0f, -INFINITY};
                if (v < 3) {
                    uint32_t bits = 0x7fc00000u | (uint32_t)(i & 0xffff); /* NaN, payload i */
                    memcpy(&x[i], &bits, sizeof bits);
                } else {
                    x[i] = pick[v % 6];
                }
            }
            eager_pool_push();
            eager_set_threads(nt);
            eager_tensor *xt = eager_from_data(GRAPH_F32, TG_SHAPE(d[0], d[1], d[2], d[3]), x);
            eager_tensor *y = eager_max_pool2d(xt, TG_INTS(2), NO, NO);
            pool_case k = {d[0], d[1], d[2], d[3], TG_INTS(2), NO, NO, MAX};
            int64_t kk[2] = {2, 2}, s[2] = {2, 2}, p[4] = {0, 0, 0, 0};
            int64_t oh = d[2] / 2, ow = d[3] / 2, bad = -1;
            const float *py = y ? eager_peek(y) : NULL;
            for (int64_t pl = 0, i = 0; py && pl < d[0] * d[1]; pl++)
                for (int64_t yy = 0; yy < oh; yy++)
                    for (int64_t xx = 0; xx < ow; xx++, i++) {
                        float want = pool_at(&k, x, kk, s, p, pl, yy, xx);
                        if (memcmp(&want, &py[i], sizeof want) && bad < 0)
                            bad = i;
                    }
            CHECK_MSG(py && bad < 0, "2x2 max pool [%lld,%lld,%lld,%lld], %d threads: output "
                      "%lld differs in its bits from the reference scan", (long long)d[0],
                      (long long)d[1], (long long)d[2], (long long)d[3], nt, (long long)bad);
            eager_set_threads(1);
            eager_pool_pop();
            free(x);
        }
}

static void test_nan(void)
{
    float data[16];
    for (int i = 0; i < 16; i++)
        data[i] = (float)i;
    data[5] = NAN;
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(1, 1, 4, 4), data);
    eager_tensor *y = eager_max_pool2d(x, TG_INTS(2), NO, NO);
    const float *py = y ? eager_peek(y) : NULL;
    CHECK(py && isnan(py[0]) && py[1] == 7.0f && py[2] == 13.0f && py[3] == 15.0f);
    check_pool_on(__LINE__, (pool_case){1, 1, 4, 4, TG_INTS(3), TG_INTS(1), TG_INTS(1), MAX}, x);
    check_pool_on(__LINE__, (pool_case){1, 1, 4, 4, TG_INTS(3), TG_INTS(1), TG_INTS(1), AVG}, x);
    eager_pool_pop();
}

/* global_avg_pool of shape s against per-plane double means. */
static void check_global(int line, graph_ints s)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(s, (uint64_t)line, -1.0f, 3.0f);
    eager_tensor *y = eager_global_avg_pool(x);
    int64_t planes = s.v[0] * s.v[1], plane = 1;
    for (int i = 2; i < s.n; i++)
        plane *= s.v[i];
    int ok = y && eager_ndim(y) == s.n && eager_dim(y, 0) == s.v[0] && eager_dim(y, 1) == s.v[1];
    for (int i = 2; ok && i < s.n; i++)
        ok = eager_dim(y, i) == 1;
    check_report(ok, __FILE__, line, "global_avg_pool shape");
    float *want = malloc((size_t)(planes + 1) * sizeof *want);
    const float *px = eager_peek(x);
    for (int64_t i = 0; i < planes; i++) {
        double sum = 0;
        for (int64_t j = 0; j < plane; j++)
            sum += px[i * plane + j];
        want[i] = plane ? (float)(sum / (double)plane) : NAN;
    }
    if (ok)
        check_floats(eager_peek(y), want, planes, 1e-5, __FILE__, line, "global_avg_pool");
    free(want);
    eager_pool_pop();
}

static void test_global(void)
{
    check_global(__LINE__, TG_SHAPE(2, 3, 5, 7));
    check_global(__LINE__, TG_SHAPE(2, 3, 4));
    check_global(__LINE__, TG_SHAPE(1, 2, 3, 4, 5));
    check_global(__LINE__, TG_SHAPE(8, 512, 7, 7));
    check_global(__LINE__, TG_SHAPE(1, 4, 300, 301));
    check_global(__LINE__, TG_SHAPE(0, 3, 5, 5));
    check_global(__LINE__, TG_SHAPE(2, 3, 0, 5)); /* empty plane: NaN */
}

static void test_threads(void)
{
    eager_set_threads(2);
    check_pool(__LINE__, (pool_case){2, 64, 56, 56, TG_INTS(3), TG_INTS(2), TG_INTS(1), MAX});
    check_pool(__LINE__, (pool_case){2, 64, 56, 56, TG_INTS(2), NO, NO, AVG});
    check_pool(__LINE__, (pool_case){1, 3, 100, 100, TG_INTS(3), TG_INTS(1), TG_INTS(1), AVG_PAD});
    check_global(__LINE__, TG_SHAPE(8, 512, 7, 7));
    eager_set_threads(1);
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(1, 2, 4, 4));
    eager_tensor *x3 = eager_zeros(GRAPH_F32, TG_SHAPE(2, 4, 4));
    eager_tensor *x2 = eager_zeros(GRAPH_F32, TG_SHAPE(2, 4));
    eager_tensor *xi = eager_zeros(GRAPH_I32, TG_SHAPE(1, 2, 4, 4));
    long live = eager_live_tensors();
    CHECK_FAILS(eager_max_pool2d(x3, TG_INTS(2), NO, NO),
                 "max_pool2d: [2,4,4]: x must be 4-D [N,C,H,W], got 3-D");
    CHECK_FAILS(eager_avg_pool2d(x, NO, NO, NO, 0), "kernel takes 1 or 2 entries, got 0");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(2, 2, 2), NO, NO), "kernel takes 1 or 2 entries, got 3");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(2, 0), NO, NO), "kernel must be >= 1, got [2,0]");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(2), TG_INTS(1, 2, 3), NO),
                 "stride takes 0, 1 or 2 entries, got 3");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(2), TG_INTS(-1), NO), "stride must be >= 1, got [-1]");
    CHECK_FAILS(eager_avg_pool2d(x, TG_INTS(2), NO, TG_INTS(1, 1, 1), 0),
                 "padding takes 0, 1, 2 or 4 entries, got 3");
    CHECK_FAILS(eager_avg_pool2d(x, TG_INTS(2), NO, TG_INTS(-1), 0), "padding must be >= 0, got [-1]");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(2), NO, TG_INTS(2)),
                 "padding [2] must be smaller than the kernel [2]");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(3, 2), NO, TG_INTS(0, 0, 1, 2)),
                 "padding [0,0,1,2] must be smaller than the kernel [3,2]");
    CHECK_FAILS(eager_avg_pool2d(x, TG_INTS(2), NO, NO, 2), "count_include_pad must be 0 or 1, got 2");
    CHECK_FAILS(eager_max_pool2d(x, TG_INTS(5, 2), NO, NO),
                 "output size 0x2 <= 0: padded input 4x4 is smaller than the effective kernel 5x2");
    CHECK_FAILS(eager_max_pool2d(xi, TG_INTS(2), NO, NO), "dtype i32 not supported");
    CHECK_FAILS(eager_global_avg_pool(x2),
                 "global_avg_pool: [2,4]: x must have rank >= 3 [N,C,spatial...], got 2-D");
    CHECK_FAILS(eager_global_avg_pool(NULL), "global_avg_pool: input 0 is NULL");
    CHECK_MSG(eager_live_tensors() == live, "errors leaked %ld tensors", eager_live_tensors() - live);
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_values();
    test_nan();
    test_max_2x2_bits();
    test_global();
    test_threads();
    test_errors();
    CHECK(eager_status() == TG_OK);
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
