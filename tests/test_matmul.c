/*
 * test_matmul.c - matmul and linear against naive double-precision loops:
 * 2-D, batched, broadcast batches, transposes, 1-D operands, K = 1,
 * empty operands, many batch dims, two threads per op, two calling
 * threads at once, every error path (and a oneDNN failure reported as
 * TG_ERR_BACKEND), leaks.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/kernel.h"

static int64_t numel_of(const graph_ints *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->n; i++)
        n *= s->v[i];
    return n;
}

/*
 * Element (r, c) of matmul operand x (shape s) after its transpose; a 1-D
 * x is a row or a column, so one of r, c is 0.
 */
static double elem(const float *x, const graph_ints *s, int64_t off, int t,
                   int64_t r, int64_t c)
{
    if (s->n == 1)
        return x[r + c]; /* one of r, c is 0 */
    int64_t s1 = s->v[s->n - 1];
    return t ? x[off + c * s1 + r] : x[off + r * s1 + c];
}

/* Offset of the matrix of x (shape s) at output batch index idx[nb]. */
static int64_t batch_off(const graph_ints *s, const int64_t *idx, int nb)
{
    int xb = s->n >= 2 ? s->n - 2 : 0;
    int64_t off = 0, stride = s->n >= 2 ? s->v[s->n - 1] * s->v[s->n - 2] : 0;
    for (int j = xb - 1; j >= 0; j--) {
        int64_t i = s->v[j] == 1 ? 0 : idx[j + nb - xb];
        off += i * stride;
        stride *= s->v[j];
    }
    return off;
}

/* NumPy matmul in double; fills *so and returns a malloc'd result. */
static float *ref_matmul(const float *a, const graph_ints *sa, int ta,
                         const float *b, const graph_ints *sb, int tb,
                         graph_ints *so)
{
    int a1 = sa->n == 1, b1 = sb->n == 1;
    int ab = a1 ? 0 : sa->n - 2, bb = b1 ? 0 : sb->n - 2;
    int nb = ab > bb ? ab : bb;
    int64_t m = a1 ? 1 : sa->v[sa->n - (ta ? 1 : 2)];
    int64_t k = a1 ? sa->v[0] : sa->v[sa->n - (ta ? 2 : 1)];
    int64_t n = b1 ? 1 : sb->v[sb->n - (tb ? 2 : 1)];
    so->n = 0;
    for (int i = 0; i < nb; i++) {
        int64_t da = i >= nb - ab ? sa->v[i - (nb - ab)] : 1;
        int64_t db = i >= nb - bb ? sb->v[i - (nb - bb)] : 1;
        so->v[so->n++] = da == 1 ? db : da;
    }
    int64_t nbatch = numel_of(so);
    if (!a1)
        so->v[so->n++] = m;
    if (!b1)
        so->v[so->n++] = n;
    float *out = malloc((size_t)(numel_of(so) + 1) * sizeof *out);
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t idx[GRAPH_MAX_DIMS], rest = bi;
        for (int i = nb - 1; i >= 0; i--) {
            idx[i] = rest % so->v[i];
            rest /= so->v[i];
        }
        int64_t oa = batch_off(sa, idx, nb), ob = batch_off(sb, idx, nb);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t q = 0; q < k; q++)
                    acc += elem(a, sa, oa, ta, i, q) * elem(b, sb, ob, tb, q, j);
                out[(bi * m + i) * n + j] = (float)acc;
            }
    }
    return out;
}

static int same_shape(const eager_tensor *t, const graph_ints *s)
{
    if (eager_ndim(t) != s->n)
        return 0;
    for (int i = 0; i < s->n; i++)
        if (eager_dim(t, i) != s->v[i])
            return 0;
    return 1;
}

/* Runs matmul on seeded data and compares with the reference. */
static void check_mm(int line, graph_ints sa, int ta, graph_ints sb, int tb)
{
    eager_pool_push();
    eager_tensor *a = eager_rand_uniform(sa, (uint64_t)line, -1.0f, 1.0f);
    eager_tensor *b = eager_rand_uniform(sb, (uint64_t)line + 99, -1.0f, 1.0f);
    eager_tensor *c = eager_matmul(a, b, ta, tb);
    graph_ints so;
    float *want = ref_matmul(eager_peek(a), &sa, ta, eager_peek(b), &sb, tb, &so);
    check_report(c && same_shape(c, &so), __FILE__, line, "matmul shape");
    if (c && same_shape(c, &so))
        check_floats(eager_peek(c), want, numel_of(&so), 1e-4, __FILE__, line,
                     "matmul");
    free(want);
    eager_pool_pop();
}

static void test_matmul_values(void)
{
    check_mm(__LINE__, TG_SHAPE(5, 7), 0, TG_SHAPE(7, 3), 0);
    check_mm(__LINE__, TG_SHAPE(4, 5, 7), 0, TG_SHAPE(4, 7, 3), 0);
    check_mm(__LINE__, TG_SHAPE(2, 1, 6, 5), 0, TG_SHAPE(3, 5, 4), 0);
    check_mm(__LINE__, TG_SHAPE(3, 5, 4), 0, TG_SHAPE(2, 1, 4, 6), 0);
    check_mm(__LINE__, TG_SHAPE(5, 4), 0, TG_SHAPE(3, 4, 2), 0);
    check_mm(__LINE__, TG_SHAPE(7, 5), 1, TG_SHAPE(7, 3), 0);
    check_mm(__LINE__, TG_SHAPE(5, 7), 0, TG_SHAPE(3, 7), 1);
    check_mm(__LINE__, TG_SHAPE(2, 7, 5), 1, TG_SHAPE(2, 3, 7), 1);
    check_mm(__LINE__, TG_SHAPE(2, 1, 7, 5), 1, TG_SHAPE(3, 6, 7), 1);
    /* 1-D operands, NumPy style */
    check_mm(__LINE__, TG_SHAPE(7), 0, TG_SHAPE(7, 3), 0);
    check_mm(__LINE__, TG_SHAPE(5, 7), 0, TG_SHAPE(7), 0);
    check_mm(__LINE__, TG_SHAPE(7), 0, TG_SHAPE(7), 0);
    check_mm(__LINE__, TG_SHAPE(7), 0, TG_SHAPE(2, 7, 3), 0);
    check_mm(__LINE__, TG_SHAPE(3, 5, 7), 0, TG_SHAPE(7), 0);
    check_mm(__LINE__, TG_SHAPE(7), 1, TG_SHAPE(3, 7), 1); /* 1-D ignores its flag */
    /* K = 1, one element, empty M / N / batch, K = 0 (zeros) */
    check_mm(__LINE__, TG_SHAPE(5, 1), 0, TG_SHAPE(1, 4), 0);
    check_mm(__LINE__, TG_SHAPE(1, 5), 1, TG_SHAPE(4, 1), 1);
    check_mm(__LINE__, TG_SHAPE(3, 7, 1), 1, TG_SHAPE(1, 7), 1); /* M = N = 1 */
    check_mm(__LINE__, TG_SHAPE(1, 1), 0, TG_SHAPE(1, 1), 0);
    check_mm(__LINE__, TG_SHAPE(0, 7), 0, TG_SHAPE(7, 3), 0);
    check_mm(__LINE__, TG_SHAPE(5, 7), 0, TG_SHAPE(7, 0), 0);
    check_mm(__LINE__, TG_SHAPE(0, 2, 3), 0, TG_SHAPE(3, 4), 0);
    check_mm(__LINE__, TG_SHAPE(3, 0), 0, TG_SHAPE(0, 4), 0);
    check_mm(__LINE__, TG_SHAPE(2, 3, 0), 0, TG_SHAPE(0), 0);
    /* many batch dims broadcast both ways; a real layer size */
    check_mm(__LINE__, TG_SHAPE(2, 1, 2, 1, 2, 1, 3, 4), 0,
             TG_SHAPE(1, 2, 1, 2, 1, 2, 4, 5), 0);
    check_mm(__LINE__, TG_SHAPE(64, 784), 0, TG_SHAPE(784, 512), 0);
    check_mm(__LINE__, TG_SHAPE(33, 65), 1, TG_SHAPE(17, 33), 1);
}

/* linear(x, w, b?) against x . w^T + b in double. */
static void check_linear(int line, graph_ints sx, int64_t n, int with_bias)
{
    eager_pool_push();
    int64_t k = sx.v[sx.n - 1], rows = 1;
    for (int i = 0; i < sx.n - 1; i++)
        rows *= sx.v[i];
    eager_tensor *x = eager_rand_uniform(sx, (uint64_t)line, -1.0f, 1.0f);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(n, k), (uint64_t)line + 1, -1.0f, 1.0f);
    eager_tensor *b = with_bias ? eager_rand_uniform(TG_SHAPE(n), (uint64_t)line + 2, -1.0f, 1.0f)
                                : EAGER_NONE;
    eager_tensor *y = eager_linear(x, w, b);
    graph_ints so = sx;
    so.v[so.n - 1] = n;
    check_report(y && same_shape(y, &so), __FILE__, line, "linear shape");
    float *want = malloc((size_t)(rows * n + 1) * sizeof *want);
    const float *px = eager_peek(x), *pw = eager_peek(w);
    const float *pb = with_bias ? eager_peek(b) : NULL;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double acc = pb ? pb[j] : 0.0;
            for (int64_t q = 0; q < k; q++)
                acc += (double)px[r * k + q] * pw[j * k + q];
            want[r * n + j] = (float)acc;
        }
    if (y && same_shape(y, &so))
        check_floats(eager_peek(y), want, rows * n, 1e-4, __FILE__, line, "linear");
    free(want);
    eager_pool_pop();
}

static void test_linear_values(void)
{
    check_linear(__LINE__, TG_SHAPE(5, 7), 3, 1);
    check_linear(__LINE__, TG_SHAPE(5, 7), 3, 0);
    check_linear(__LINE__, TG_SHAPE(2, 4, 7), 6, 1);
    check_linear(__LINE__, TG_SHAPE(7), 3, 1);
    check_linear(__LINE__, TG_SHAPE(64, 784), 512, 1);
    check_linear(__LINE__, TG_SHAPE(4, 1), 3, 1);
    check_linear(__LINE__, TG_SHAPE(0, 7), 3, 1);
    check_linear(__LINE__, TG_SHAPE(5, 7), 0, 1);
    check_linear(__LINE__, TG_SHAPE(2, 3, 0), 4, 1); /* K = 0: the bias */
    check_linear(__LINE__, TG_SHAPE(2, 0), 4, 0);
}

static void test_threads(void)
{
    eager_set_threads(2);
    check_mm(__LINE__, TG_SHAPE(64, 784), 0, TG_SHAPE(784, 512), 0);
    check_mm(__LINE__, TG_SHAPE(2, 1, 30, 40), 1, TG_SHAPE(3, 50, 30), 1);
    check_linear(__LINE__, TG_SHAPE(3, 40, 300), 200, 1);
    eager_set_threads(1);
    /* the same call gives the same bits with 1 and 2 threads */
    eager_pool_push();
    eager_tensor *a = eager_rand_uniform(TG_SHAPE(128, 256), 5, -1.0f, 1.0f);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(256, 96), 6, -1.0f, 1.0f);
    eager_tensor *c1 = eager_matmul(a, b, 0, 0);
    eager_set_threads(2);
    eager_tensor *c2 = eager_matmul(a, b, 0, 0);
    eager_set_threads(1);
    CHECK(c1 && c2);
    if (c1 && c2)
        CHECK_FLOATS((const float *)eager_peek(c2), (const float *)eager_peek(c1),
                     128 * 96, 1e-5);
    eager_pool_pop();
}

/*
 * Two threads at once, each with its own tensors (errors and pools are
 * per thread): exercises the lazy engine init and per-thread streams, and
 * their cleanup at thread exit (LSan).  check.c is not thread-safe, so a
 * thread only records its largest error.
 */
static void *mm_thread(void *arg)
{
    double *maxerr = arg;
    eager_pool_push();
    graph_ints sa = TG_SHAPE(3, 40, 50), sb = TG_SHAPE(50, 30), so;
    for (int it = 0; it < 20; it++) {
        eager_tensor *a = eager_rand_uniform(sa, (uint64_t)it, -1.0f, 1.0f);
        eager_tensor *b = eager_rand_uniform(sb, (uint64_t)it + 7, -1.0f, 1.0f);
        eager_tensor *c = eager_matmul(a, b, 0, 0);
        float *want = ref_matmul(eager_peek(a), &sa, 0, eager_peek(b), &sb, 0, &so);
        const float *got = c ? eager_peek(c) : NULL;
        for (int64_t i = 0; i < numel_of(&so); i++) {
            double e = got ? fabs((double)got[i] - want[i]) : INFINITY;
            *maxerr = e > *maxerr ? e : *maxerr;
        }
        free(want);
    }
    eager_pool_pop();
    return NULL;
}

static void test_two_threads(void)
{
    pthread_t th[2];
    double err[2] = {0, 0};
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, mm_thread, &err[i]) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CHECK_MSG(err[0] < 1e-4 && err[1] < 1e-4, "thread errors %g %g", err[0], err[1]);
}

/* r must be NULL with an error containing msg that names this file:line. */
static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *a = eager_zeros(GRAPH_F32, TG_SHAPE(64, 784));
    eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(512, 512));
    eager_tensor *v = eager_zeros(GRAPH_F32, TG_SHAPE(5));
    eager_tensor *s = eager_scalar(1.0);
    eager_tensor *bi = eager_zeros(GRAPH_I32, TG_SHAPE(784, 3));
    eager_tensor *b3 = eager_zeros(GRAPH_F32, TG_SHAPE(3, 4, 5));
    eager_tensor *b2 = eager_zeros(GRAPH_F32, TG_SHAPE(2, 5, 6));
    long live = eager_live_tensors();
    CHECK_FAILS(eager_matmul(a, b, 0, 0),
                 "matmul: [64,784] x [512,512]: inner dims differ (784 vs 512)");
    CHECK_FAILS(eager_matmul(a, b, 1, 0), "inner dims differ (64 vs 512)");
    CHECK_FAILS(eager_matmul(a, v, 0, 0), "inner dims differ (784 vs 5)");
    CHECK_FAILS(eager_matmul(v, a, 0, 0), "inner dims differ (5 vs 64)");
    CHECK_FAILS(eager_matmul(b3, b2, 0, 0), "batch dims [3] and [2] do not broadcast");
    CHECK_FAILS(eager_matmul(s, v, 0, 0), "operands must have rank >= 1, got 0-D and 1-D");
    CHECK_FAILS(eager_matmul(a, b, 2, 0), "transpose_a and transpose_b must be 0 or 1, got 2 and 0");
    CHECK_FAILS(eager_matmul(a, bi, 0, 0), "b has dtype i32, want f32");
    CHECK_FAILS(eager_matmul(bi, a, 0, 0), "matmul: i32[784,3] x [64,784]: dtype i32 not supported");
    CHECK_FAILS(eager_matmul(a, NULL, 0, 0), "matmul: input 1 is NULL");
    /* linear */
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(3, 6));
    eager_tensor *w3 = eager_zeros(GRAPH_F32, TG_SHAPE(1, 3, 5));
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 5));
    eager_tensor *wok = eager_zeros(GRAPH_F32, TG_SHAPE(3, 5));
    eager_tensor *b4 = eager_zeros(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *bint = eager_zeros(GRAPH_I64, TG_SHAPE(3));
    live = eager_live_tensors();
    CHECK_FAILS(eager_linear(x, w, EAGER_NONE), "linear: [2,5] x [3,6]: inner dims differ (5 vs 6)");
    CHECK_FAILS(eager_linear(x, w3, EAGER_NONE), "w must be 2-D [N,K], got 3-D");
    CHECK_FAILS(eager_linear(x, wok, b4), "b has 4 entries, want 3 (rows of w)");
    CHECK_FAILS(eager_linear(x, wok, bint), "b has dtype i64, want f32");
    CHECK_FAILS(eager_linear(x, wok, wok), "b must be 1-D [N], got 2-D");
    CHECK_FAILS(eager_linear(s, wok, EAGER_NONE), "x must have rank >= 1, got 0-D");
    CHECK_FAILS(eager_linear(x, EAGER_NONE, b4), "input 1 is EAGER_NONE but a later input is given");
    CHECK_MSG(eager_live_tensors() == live, "errors leaked %ld tensors",
              eager_live_tensors() - live);
    eager_pool_pop();
}

/*
 * A direct kernel call with an output batch that infer would reject:
 * oneDNN refuses the descriptor and the kernel reports TG_ERR_BACKEND.
 */
static void test_backend_error(void)
{
    graph_type in[2] = {{GRAPH_F32, 3, {2, 2, 3}}, {GRAPH_F32, 3, {2, 3, 4}}};
    graph_type out = {GRAPH_F32, 3, {3, 2, 4}};
    static float a[12], b[24], c[24];
    const void *ins[2] = {a, b};
    void *outs[1] = {c};
    graph_matmul_attrs at = {0, 0};
    char err[256] = "";
    eager_kargs ka = {in, ins, 2, &at, &out, outs, 1, 1, err, sizeof err};
    CHECK(eager_kernels[GRAPH_OP_matmul](&ka) == TG_ERR_BACKEND);
    CHECK_MSG(strstr(err, "oneDNN matmul descriptor failed: invalid arguments") != NULL,
              "err \"%s\"", err);
}

int main(void)
{
    long live = eager_live_tensors();
    test_matmul_values();
    test_linear_values();
    test_threads();
    test_two_threads();
    test_errors();
    test_backend_error();
    CHECK(eager_status() == TG_OK);
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
