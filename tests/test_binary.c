/*
 * test_binary.c - binary arithmetic, comparisons and where with NumPy
 * broadcasting, against naive references written here: every output
 * index is unravelled and mapped to each input by the broadcasting rule,
 * values computed in double (f32) or exact integer arithmetic.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/kernel.h"

#define EXPECT_ERROR(call, msg) CHECK_FAILS((call), (msg))

/* ---- data and the broadcasting reference ---- */

static uint64_t rng_state = 0x1234567;

static uint64_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state >> 17;
}

static int64_t numel(graph_ints s)
{
    int64_t n = 1;
    for (int i = 0; i < s.n; i++)
        n *= s.v[i];
    return n;
}

/*
 * Random elements of dt, with the values that break careless code mixed
 * in: infinities, NaN, -0 for f32; INT_MIN, INT_MAX, -1, 0 for integers.
 * nonzero: no zeros (divisors).
 */
static eager_tensor *random_tensor(graph_dtype dt, graph_ints shape, int nonzero)
{
    static const float fspecial[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 1.0f};
    int64_t n = numel(shape);
    eager_tensor *t = eager_empty(dt, shape);
    void *p = eager_data_mut(t);
    for (int64_t i = 0; i < n; i++) {
        int special = rng() % 11 == 0;
        int64_t r = (int64_t)(rng() % 41) - 20; /* [-20, 20] */
        if (nonzero && r == 0)
            r = 7;
        switch (dt) {
        case GRAPH_F32:
            ((float *)p)[i] = special ? fspecial[rng() % 6] : (float)r / 4.0f + 0.125f;
            break;
        case GRAPH_I64: {
            const int64_t sp[] = {INT64_MIN, INT64_MAX, -1, nonzero ? 1 : 0};
            ((int64_t *)p)[i] = special ? sp[rng() % 4] : r;
            break;
        }
        case GRAPH_I32: {
            const int32_t sp[] = {INT32_MIN, INT32_MAX, -1, nonzero ? 1 : 0};
            ((int32_t *)p)[i] = special ? sp[rng() % 4] : (int32_t)r;
            break;
        }
        default: ((uint8_t *)p)[i] = (uint8_t)(rng() % 2); break;
        }
    }
    return t;
}

/* NumPy broadcast of two shapes (the test's own rule). */
static graph_ints bshape(graph_ints a, graph_ints b)
{
    graph_ints o = {a.n > b.n ? a.n : b.n, {0}};
    for (int i = 0; i < o.n; i++) {
        int ia = i - (o.n - a.n), ib = i - (o.n - b.n);
        int64_t da = ia >= 0 ? a.v[ia] : 1, db = ib >= 0 ? b.v[ib] : 1;
        o.v[i] = da == 1 ? db : da;
    }
    return o;
}

/* Flat index in a tensor of shape in of the element output index o (of
 * shape out) reads. */
static int64_t bindex(graph_ints out, graph_ints in, int64_t o)
{
    int64_t idx = 0, stride = 1;
    for (int d = out.n - 1, e = in.n - 1; d >= 0; d--, e--) {
        int64_t od = o % out.v[d];
        o /= out.v[d];
        if (e >= 0) {
            if (in.v[e] != 1)
                idx += od * stride;
            stride *= in.v[e];
        }
    }
    return idx;
}

static int same_shape(const eager_tensor *t, graph_ints s)
{
    if (!t || eager_ndim(t) != s.n)
        return 0;
    for (int i = 0; i < s.n; i++)
        if (eager_dim(t, i) != s.v[i])
            return 0;
    return 1;
}

/* ---- references: one value per op and dtype ---- */

static double ref_f32(graph_op op, float a, float b)
{
    switch (op) {
    case GRAPH_OP_add: return (double)a + b;
    case GRAPH_OP_sub: return (double)a - b;
    case GRAPH_OP_mul: return (double)a * b;
    case GRAPH_OP_div: return (double)a / b;
    case GRAPH_OP_pow: return pow(a, b);
    case GRAPH_OP_maximum: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case GRAPH_OP_minimum: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case GRAPH_OP_eq: return a == b;
    case GRAPH_OP_lt: return a < b;
    case GRAPH_OP_gt: return a > b;
    default: return NAN;
    }
}

/* Integer ops: exact in __int128, then wrapped to bits of the type. */
static int64_t ref_int(graph_op op, int64_t a, int64_t b, int bits)
{
    __int128 r;
    switch (op) {
    case GRAPH_OP_add: r = (__int128)a + b; break;
    case GRAPH_OP_sub: r = (__int128)a - b; break;
    case GRAPH_OP_mul: r = (__int128)a * b; break;
    case GRAPH_OP_div: r = (__int128)a / b; break; /* C truncates */
    case GRAPH_OP_maximum: r = a > b ? a : b; break;
    case GRAPH_OP_minimum: r = a < b ? a : b; break;
    case GRAPH_OP_eq: return a == b;
    case GRAPH_OP_lt: return a < b;
    case GRAPH_OP_gt: return a > b;
    default: return 0;
    }
    unsigned __int128 m = (unsigned __int128)r & (((unsigned __int128)1 << bits) - 1);
    if (m >> (bits - 1)) /* negative in two's complement */
        return (int64_t)((__int128)m - ((__int128)1 << bits));
    return (int64_t)m;
}

static double get(const void *p, graph_dtype dt, int64_t i)
{
    switch (dt) {
    case GRAPH_F32: return ((const float *)p)[i];
    case GRAPH_I32: return ((const int32_t *)p)[i];
    case GRAPH_BOOL: return ((const uint8_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

static int64_t geti(const void *p, graph_dtype dt, int64_t i)
{
    return dt == GRAPH_I64 ? ((const int64_t *)p)[i] : (int64_t)get(p, dt, i);
}

/* Checks out = op(a, b) element by element; returns 1 if all match. */
static int check_values(graph_op op, const eager_tensor *a, const eager_tensor *b,
                        const eager_tensor *out, graph_ints sa, graph_ints sb,
                        graph_ints so, char *why, size_t len)
{
    graph_dtype dt = eager_dtype(a);
    int cmp = op == GRAPH_OP_eq || op == GRAPH_OP_lt || op == GRAPH_OP_gt;
    const void *pa = eager_peek(a), *pb = eager_peek(b), *po = eager_peek(out);
    for (int64_t o = 0; o < numel(so); o++) {
        int64_t ia = bindex(so, sa, o), ib = bindex(so, sb, o);
        double got = cmp ? ((const uint8_t *)po)[o] : get(po, dt, o);
        double want;
        int ok;
        if (dt == GRAPH_F32) {
            want = ref_f32(op, ((const float *)pa)[ia], ((const float *)pb)[ib]);
            if (op == GRAPH_OP_pow) /* powf is within an ulp */
                ok = isnan(want) ? isnan(got)
                                 : got == (float)want || fabs(got - want) <= 2.4e-7 * fabs(want);
            else /* correctly rounded: (float) of the exact double */
                ok = isnan(want) ? isnan(got) : got == (cmp ? want : (float)want);
        } else if (dt == GRAPH_BOOL) {
            want = (get(pa, dt, ia) != 0) == (get(pb, dt, ib) != 0);
            ok = got == want;
        } else {
            int64_t w = ref_int(op, geti(pa, dt, ia), geti(pb, dt, ib), dt == GRAPH_I64 ? 64 : 32);
            int64_t g = cmp ? ((const uint8_t *)po)[o] : geti(po, dt, o);
            want = (double)w;
            ok = g == w;
        }
        if (!ok) {
            snprintf(why, len, "out[%lld] = %.9g, want %.9g (a[%lld] = %.9g, b[%lld] = %.9g)",
                     (long long)o, got, want, (long long)ia, get(pa, dt, ia),
                     (long long)ib, get(pb, dt, ib));
            return 0;
        }
    }
    return 1;
}

/* ---- every op, dtype and broadcasting pattern ---- */

typedef struct shape_pair {
    graph_ints a, b;
} shape_pair;

static const shape_pair pairs[] = {
    {TG_SHAPE(2, 3, 4), TG_SHAPE(4)},        /* row broadcast */
    {TG_SHAPE(4), TG_SHAPE(2, 3, 4)},        /* ... on the left */
    {TG_SHAPE(2, 1, 4), TG_SHAPE(3, 1)},     /* both sides broadcast */
    {TG_NOINTS, TG_SHAPE(2, 3)},             /* 0-d scalar + tensor */
    {TG_SHAPE(2, 3), TG_NOINTS},             /* tensor + 0-d scalar */
    {TG_NOINTS, TG_NOINTS},                  /* 0-d + 0-d */
    {TG_SHAPE(0, 3), TG_SHAPE(3)},           /* empty */
    {TG_SHAPE(1), TG_SHAPE(1)},              /* one element */
    {TG_SHAPE(5, 7), TG_SHAPE(5, 7)},        /* same shape */
    {TG_SHAPE(1, 5, 7), TG_SHAPE(5, 1, 7)},  /* same numel, both broadcast */
    {TG_SHAPE(4, 1, 3), TG_SHAPE(1, 5, 1)},  /* outer product-like */
    {TG_SHAPE(2, 3, 4, 5), TG_SHAPE(3, 1, 5)}, /* middle broadcast */
    {TG_SHAPE(3, 4, 1), TG_SHAPE(3, 1, 1)},  /* column (inner scalar) */
    {TG_SHAPE(1, 1), TG_SHAPE(6, 1, 2)},     /* 1-element, not 0-d */
    {TG_SHAPE(300, 129), TG_SHAPE(129)},     /* threads, rows split */
    {TG_SHAPE(1000, 1), TG_SHAPE(1, 67)},    /* threads, general walk */
    {TG_SHAPE(70001), TG_SHAPE(70001)},      /* threads, flat */
    {TG_SHAPE(3, 1, 40000), TG_NOINTS},      /* threads, scalar */
    /* short rows repeated along the next dim (ew_bcast.c's tiles): a
     * blocked squeeze-and-excitation gate, either side, few rows, many
     * rows and units across threads, a 64-element row (the largest) */
    {TG_SHAPE(2, 3, 5, 7, 16), TG_SHAPE(2, 3, 1, 1, 16)},
    {TG_SHAPE(2, 3, 1, 1, 16), TG_SHAPE(2, 3, 5, 7, 16)},
    {TG_SHAPE(4, 3, 8), TG_SHAPE(4, 1, 8)},
    {TG_SHAPE(2, 4, 61, 33, 16), TG_SHAPE(2, 4, 1, 1, 16)},
    {TG_SHAPE(3, 300, 64), TG_SHAPE(3, 1, 64)},
    {TG_SHAPE(3, 300, 65), TG_SHAPE(3, 1, 65)},
};

typedef struct op_case {
    graph_op op;
    unsigned dtypes; /* GRAPH_DT_* bits to try */
} op_case;

static const op_case op_cases[] = {
    {GRAPH_OP_add, GRAPH_DT_NUM},     {GRAPH_OP_sub, GRAPH_DT_NUM},
    {GRAPH_OP_mul, GRAPH_DT_NUM},     {GRAPH_OP_div, GRAPH_DT_NUM},
    {GRAPH_OP_pow, GRAPH_DT_F32},     {GRAPH_OP_maximum, GRAPH_DT_NUM},
    {GRAPH_OP_minimum, GRAPH_DT_NUM}, {GRAPH_OP_eq, GRAPH_DT_ALL},
    {GRAPH_OP_lt, GRAPH_DT_NUM},      {GRAPH_OP_gt, GRAPH_DT_NUM},
};

static void run_case(graph_op op, graph_dtype dt, const shape_pair *sp)
{
    const char *name = graph_op_get(op)->name;
    char why[256] = "";
    eager_pool_push();
    eager_tensor *in[2] = {random_tensor(dt, sp->a, 0),
                           random_tensor(dt, sp->b, op == GRAPH_OP_div && dt != GRAPH_F32)};
    eager_tensor *out = NULL;
    graph_ints so = bshape(sp->a, sp->b);
    int n = eager_dispatch(op, in, 2, NULL, &out, 1, NULL);
    int is_cmp = op == GRAPH_OP_eq || op == GRAPH_OP_lt || op == GRAPH_OP_gt;
    int ok = n == 1 && same_shape(out, so) && eager_dtype(out) == (is_cmp ? GRAPH_BOOL : dt);
    CHECK_MSG(ok, "%s %s %s: ran with the right type", name, graph_dtype_name(dt),
              eager_error());
    if (ok)
        CHECK_MSG(check_values(op, in[0], in[1], out, sp->a, sp->b, so, why, sizeof why),
                  "%s %s, shapes #%d: %s", name, graph_dtype_name(dt), (int)(sp - pairs), why);
    eager_clear_error();
    eager_pool_pop();
}

static void test_all_ops(void)
{
    for (size_t k = 0; k < sizeof op_cases / sizeof op_cases[0]; k++)
        for (int dt = 0; dt < GRAPH_DTYPE_COUNT; dt++)
            for (size_t s = 0; (op_cases[k].dtypes >> dt & 1u) && s < sizeof pairs / sizeof pairs[0]; s++) {
                /* the large cases once with threads, once without */
                eager_set_threads(s % 2 ? 2 : 1);
                run_case(op_cases[k].op, (graph_dtype)dt, &pairs[s]);
            }
    eager_set_threads(1);
}

/* Hand-checked answers for the cases with a chosen meaning. */
static void test_semantics(void)
{
    eager_pool_push();
    const int64_t l[] = {-7, 7, -7, INT64_MIN, INT64_MAX, 5};
    const int64_t d[] = {2, -2, -2, -1, -1, 7};
    const int64_t want[] = {-3, -3, 3, INT64_MIN, -INT64_MAX, 0};
    const int64_t *q = eager_peek(eager_div(eager_from_data(GRAPH_I64, TG_SHAPE(6), l),
                                            eager_from_data(GRAPH_I64, TG_SHAPE(6), d)));
    for (int i = 0; q && i < 6; i++)
        CHECK_MSG(q[i] == want[i], "%lld / %lld = %lld", (long long)l[i], (long long)d[i],
                  (long long)q[i]);
    const int32_t m[] = {INT32_MIN, INT32_MAX};
    const int32_t m1[] = {-1};
    const int32_t *q32 = eager_peek(eager_div(eager_from_data(GRAPH_I32, TG_SHAPE(2), m),
                                              eager_from_data(GRAPH_I32, TG_SHAPE(1), m1)));
    CHECK(q32 && q32[0] == INT32_MIN && q32[1] == -INT32_MAX);
    const int32_t *s32 = eager_peek(eager_add(eager_from_data(GRAPH_I32, TG_SHAPE(2), m),
                                              eager_from_data(GRAPH_I32, TG_SHAPE(1), m1)));
    CHECK(s32 && s32[0] == INT32_MAX && s32[1] == INT32_MAX - 1); /* wraps */
    /* maximum/minimum propagate NaN from either side */
    const float fa[] = {NAN, 1.0f, 2.0f}, fb[] = {1.0f, NAN, -INFINITY};
    eager_tensor *ta = eager_from_data(GRAPH_F32, TG_SHAPE(3), fa);
    eager_tensor *tb = eager_from_data(GRAPH_F32, TG_SHAPE(3), fb);
    const float *mx = eager_peek(eager_maximum(ta, tb)), *mn = eager_peek(eager_minimum(ta, tb));
    CHECK(mx && isnan(mx[0]) && isnan(mx[1]) && mx[2] == 2.0f);
    CHECK(mn && isnan(mn[0]) && isnan(mn[1]) && mn[2] == -INFINITY);
    /* comparisons with NaN are false; -0 == 0 */
    const float ca[] = {NAN, -0.0f, 1.0f}, cb[] = {NAN, 0.0f, 2.0f};
    eager_tensor *xa = eager_from_data(GRAPH_F32, TG_SHAPE(3), ca);
    eager_tensor *xb = eager_from_data(GRAPH_F32, TG_SHAPE(3), cb);
    const uint8_t *eq = eager_peek(eager_eq(xa, xb)), *lt = eager_peek(eager_lt(xa, xb));
    const uint8_t *gt = eager_peek(eager_gt(xa, xb));
    CHECK(eq && eq[0] == 0 && eq[1] == 1 && eq[2] == 0);
    CHECK(lt && lt[0] == 0 && lt[1] == 0 && lt[2] == 1);
    CHECK(gt && gt[0] == 0 && gt[1] == 0 && gt[2] == 0);
    /* pow shortcuts agree with powf on the special points */
    const float pv[] = {-0.0f, 0.0f, -3.0f, INFINITY, NAN, 0.5f};
    eager_tensor *px = eager_from_data(GRAPH_F32, TG_SHAPE(6), pv);
    const float exps[] = {1.0f, 2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
    for (int e = 0; e < 6; e++) {
        const float *pw = eager_peek(eager_pow(px, eager_scalar(exps[e])));
        for (int i = 0; pw && i < 6; i++) {
            float w = powf(pv[i], exps[e]);
            CHECK_MSG(isnan(w) ? isnan(pw[i]) : pw[i] == w && signbit(pw[i]) == signbit(w),
                      "pow(%g, %g) = %g, want %g", (double)pv[i], (double)exps[e],
                      (double)pw[i], (double)w);
        }
    }
    eager_pool_pop();
}

/* ---- where ---- */

static void test_where(void)
{
    static const graph_ints shapes[][3] = { /* cond, a, b */
        {TG_SHAPE(2, 1, 4), TG_SHAPE(3, 1), TG_NOINTS},
        {TG_NOINTS, TG_SHAPE(2, 3), TG_SHAPE(2, 3)},
        {TG_SHAPE(5), TG_SHAPE(5), TG_SHAPE(5)},
        {TG_SHAPE(5), TG_NOINTS, TG_SHAPE(5)},
        {TG_SHAPE(5), TG_SHAPE(5), TG_NOINTS},
        {TG_SHAPE(2, 5), TG_SHAPE(2, 1), TG_SHAPE(1, 5)},
        {TG_SHAPE(0, 2), TG_SHAPE(2), TG_SHAPE(1)},
        {TG_NOINTS, TG_NOINTS, TG_NOINTS},
        {TG_SHAPE(300, 129), TG_SHAPE(129), TG_SHAPE(300, 1)},
        {TG_SHAPE(70001), TG_SHAPE(70001), TG_SHAPE(70001)},
    };
    for (int dt = 0; dt < GRAPH_DTYPE_COUNT; dt++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            eager_pool_push();
            eager_set_threads(s % 2 ? 2 : 1);
            const graph_ints *sh = shapes[s];
            eager_tensor *c = random_tensor(GRAPH_BOOL, sh[0], 0);
            eager_tensor *a = random_tensor((graph_dtype)dt, sh[1], 0);
            eager_tensor *b = random_tensor((graph_dtype)dt, sh[2], 0);
            eager_tensor *w = eager_where(c, a, b);
            graph_ints so = bshape(sh[0], bshape(sh[1], sh[2]));
            CHECK_MSG(same_shape(w, so) && (int)eager_dtype(w) == dt, "where %s #%zu: %s",
                      graph_dtype_name(dt), s, eager_error());
            size_t es = graph_dtype_size((graph_dtype)dt);
            int64_t bad = -1;
            for (int64_t o = 0; w && o < numel(so) && bad < 0; o++) {
                const char *pc = eager_peek(c);
                const char *pick = pc[bindex(so, sh[0], o)]
                                       ? (const char *)eager_peek(a) + bindex(so, sh[1], o) * es
                                       : (const char *)eager_peek(b) + bindex(so, sh[2], o) * es;
                if (memcmp((const char *)eager_peek(w) + o * es, pick, es) != 0)
                    bad = o;
            }
            CHECK_MSG(bad < 0, "where %s #%zu: element %lld", graph_dtype_name(dt), s,
                      (long long)bad);
            eager_pool_pop();
        }
    }
    eager_set_threads(1);
}

/* ---- errors ---- */

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *f2 = eager_ones(GRAPH_F32, TG_SHAPE(2));
    eager_tensor *f23 = eager_ones(GRAPH_F32, TG_SHAPE(2, 3));
    eager_tensor *f4 = eager_ones(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *l2 = eager_ones(GRAPH_I64, TG_SHAPE(2));
    eager_tensor *i2 = eager_ones(GRAPH_I32, TG_SHAPE(2));
    eager_tensor *b2 = eager_ones(GRAPH_BOOL, TG_SHAPE(2));
    eager_tensor *b3 = eager_ones(GRAPH_BOOL, TG_SHAPE(3));
    EXPECT_ERROR(eager_add(f2, l2), "add: [2] x i64[2]: dtype mismatch (f32 vs i64)");
    EXPECT_ERROR(eager_mul(i2, f2), "mul: i32[2] x [2]: dtype mismatch (i32 vs f32)");
    EXPECT_ERROR(eager_eq(f2, b2), "eq: [2] x bool[2]: dtype mismatch (f32 vs bool)");
    EXPECT_ERROR(eager_sub(f23, f4), "sub: [2,3] x [4]: cannot broadcast dim -1: 3 vs 4");
    EXPECT_ERROR(eager_add(eager_ones(GRAPH_F32, TG_SHAPE(2, 3, 4)), eager_ones(GRAPH_F32, TG_SHAPE(5, 4))), "add: [2,3,4] x [5,4]: cannot broadcast dim -2: 3 vs 5");
    EXPECT_ERROR(eager_lt(f23, f2), "lt: [2,3] x [2]: cannot broadcast dim -1: 3 vs 2");
    EXPECT_ERROR(eager_add(b2, b2), "add: bool[2] x bool[2]: dtype bool not supported");
    EXPECT_ERROR(eager_gt(b2, b2), "gt: bool[2] x bool[2]: dtype bool not supported");
    EXPECT_ERROR(eager_pow(l2, l2), "pow: i64[2] x i64[2]: dtype i64 not supported");
    EXPECT_ERROR(eager_where(f2, f2, f2), "where: [2] x [2] x [2]: dtype f32 not supported");
    EXPECT_ERROR(eager_where(b2, f2, i2), "where: bool[2] x [2] x i32[2]: dtype mismatch (f32 vs i32)");
    EXPECT_ERROR(eager_where(b3, f2, f2), "where: bool[3] x [2] x [2]: cannot broadcast dim -1: 3 vs 2");
    EXPECT_ERROR(eager_where(b2, f23, f2), "cannot broadcast dim -1: 3 vs 2");
    /* integer division by zero fails, wherever the zero is */
    const int64_t num[] = {1, 2, 3}, den[] = {1, 0, 3};
    eager_tensor *n3 = eager_from_data(GRAPH_I64, TG_SHAPE(3), num);
    EXPECT_ERROR(eager_div(n3, eager_from_data(GRAPH_I64, TG_SHAPE(3), den)), "div: integer division by zero");
    EXPECT_ERROR(eager_div(i2, eager_zeros(GRAPH_I32, TG_NOINTS)), "div: integer division by zero");
    /* ... but not for f32, nor when there is nothing to divide */
    const float *fz = eager_peek(eager_div(f2, eager_zeros(GRAPH_F32, TG_SHAPE(1))));
    CHECK(fz && fz[0] == INFINITY);
    eager_tensor *e = eager_div(eager_ones(GRAPH_I64, TG_SHAPE(0, 3)), eager_zeros(GRAPH_I64, TG_SHAPE(3)));
    CHECK(e && eager_numel(e) == 0 && eager_status() == TG_OK);
    eager_pool_pop();
}

/*
 * The replay planner may run an elementwise kernel with its output on top
 * of an input of the same shape: the result must equal the out-of-place
 * one, bit for bit.  Kernels are called directly here, as replay does.
 */
static void test_in_place(void)
{
    static const graph_op ops[] = {GRAPH_OP_add, GRAPH_OP_mul, GRAPH_OP_div, GRAPH_OP_pow,
                                   GRAPH_OP_maximum, GRAPH_OP_exp, GRAPH_OP_gelu,
                                   GRAPH_OP_neg, GRAPH_OP_sqrt, GRAPH_OP_where};
    enum { N = 5000 };
    eager_pool_push();
    eager_tensor *a = random_tensor(GRAPH_F32, TG_SHAPE(N), 0);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(N), 9, 0.5f, 3.0f);
    eager_tensor *c = random_tensor(GRAPH_BOOL, TG_SHAPE(N), 0);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const graph_op_info *info = graph_op_get(ops[k]);
        int is_where = ops[k] == GRAPH_OP_where;
        eager_tensor *in[3] = {is_where ? c : a, is_where ? a : b, b};
        int nin = info->min_in;
        eager_tensor *want = NULL;
        CHECK(eager_dispatch(ops[k], in, nin, NULL, &want, 1, NULL) == 1);
        for (int target = is_where ? 1 : 0; want && target < nin; target++) {
            /* the output overwrites input `target` */
            float *buf = malloc(N * sizeof *buf);
            memcpy(buf, eager_peek(in[target]), N * sizeof *buf);
            graph_type types[3];
            const void *ptrs[3];
            for (int i = 0; i < nin; i++) {
                types[i] = *eager_type(in[i]);
                ptrs[i] = i == target ? buf : eager_peek(in[i]);
            }
            void *outs[1] = {buf};
            eager_kargs ka = {types, ptrs, nin, NULL, eager_type(want), outs, 1, 2, NULL, 0};
            CHECK(eager_kernels[ops[k]](&ka) == TG_OK);
            CHECK_MSG(memcmp(buf, eager_peek(want), N * sizeof *buf) == 0,
                      "%s in place over input %d", info->name, target);
            free(buf);
        }
    }
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_all_ops();
    test_semantics();
    test_where();
    test_errors();
    test_in_place();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
