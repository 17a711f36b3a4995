/* test_tensor.c - creation, references, pools, errors, PRNG, access. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"

static void test_creation(void)
{
    eager_tensor *z = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    CHECK(z && eager_ndim(z) == 2 && eager_dim(z, 0) == 2 && eager_dim(z, -1) == 3);
    CHECK(eager_numel(z) == 6 && eager_nbytes(z) == 24);
    const float *zp = eager_peek(z);
    int allzero = 1;
    for (int i = 0; i < 6; i++)
        allzero &= zp[i] == 0.0f;
    CHECK(allzero);
    eager_tensor *f = eager_full(GRAPH_I64, TG_SHAPE(4), 7.0);
    CHECK(f && ((const int64_t *)eager_peek(f))[3] == 7);
    eager_tensor *a = eager_arange(GRAPH_F32, 1.0, 2.0, 0.25);
    CHECK(a && eager_numel(a) == 4);
    if (a) {
        const float *ap = eager_peek(a);
        CHECK(ap[0] == 1.0f && ap[3] == 1.75f);
    }
    eager_tensor *neg = eager_arange(GRAPH_I32, 5, 0, -2);
    CHECK(neg && eager_numel(neg) == 3 && ((const int32_t *)eager_peek(neg))[2] == 1);
    float buf[3] = {1, 2, 3};
    eager_tensor *d = eager_from_data(GRAPH_F32, TG_SHAPE(3), buf);
    buf[0] = 9; /* copied, not borrowed */
    CHECK(d && ((const float *)eager_peek(d))[0] == 1.0f);
    eager_tensor *s = eager_scalar(2.5);
    CHECK(s && eager_ndim(s) == 0 && eager_numel(s) == 1 && eager_item(s) == 2.5);
    eager_tensor *e = eager_zeros(GRAPH_F32, TG_SHAPE(0, 5));
    CHECK(e && eager_numel(e) == 0);
    eager_release(z); eager_release(f); eager_release(a); eager_release(neg);
    eager_release(d); eager_release(s); eager_release(e);
}

static void test_prng(void)
{
    /* SplitMix64 from state 0 yields 0xE220A8397B1DCDAF, then
     * 0x6E789E6AA1B965F4: uniform takes the top 24 bits / 2^24. */
    eager_tensor *sm = eager_rand_uniform(TG_SHAPE(2), 0, 0.0f, 1.0f);
    CHECK(((const float *)eager_peek(sm))[0] == (float)(0xE220A8 / 16777216.0));
    CHECK(((const float *)eager_peek(sm))[1] == (float)(0x6E789E / 16777216.0));
    eager_release(sm);
    eager_tensor *u = eager_rand_uniform(TG_SHAPE(10000), 42, -1.0f, 1.0f);
    eager_tensor *u2 = eager_rand_uniform(TG_SHAPE(10000), 42, -1.0f, 1.0f);
    eager_tensor *u3 = eager_rand_uniform(TG_SHAPE(10000), 43, -1.0f, 1.0f);
    CHECK(memcmp(eager_peek(u), eager_peek(u2), 40000) == 0);
    CHECK(memcmp(eager_peek(u), eager_peek(u3), 40000) != 0);
    const float *p = eager_peek(u);
    double mean = 0, lo = 1, hi = -1;
    for (int i = 0; i < 10000; i++) {
        mean += p[i];
        lo = p[i] < lo ? p[i] : lo;
        hi = p[i] > hi ? p[i] : hi;
    }
    mean /= 10000;
    CHECK(fabs(mean) < 0.03 && lo >= -1.0 && hi < 1.0 && lo < -0.99 && hi > 0.99);
    eager_tensor *n = eager_rand_normal(TG_SHAPE(20001), 7, 3.0f, 2.0f);
    const float *q = eager_peek(n);
    double m = 0, v = 0;
    for (int i = 0; i < 20001; i++)
        m += q[i];
    m /= 20001;
    for (int i = 0; i < 20001; i++)
        v += (q[i] - m) * (q[i] - m);
    v /= 20000;
    CHECK_NEAR(m, 3.0, 0.02);
    CHECK_NEAR(sqrt(v), 2.0, 0.02);
    eager_release(u); eager_release(u2); eager_release(u3); eager_release(n);
}

static void test_pools(void)
{
    long before = eager_live_tensors();
    eager_tensor *kept;
    eager_pool_push();
    eager_tensor *a = eager_ones(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *b = eager_ones(GRAPH_F32, TG_SHAPE(4));
    eager_pool_push();
    eager_tensor *c = eager_zeros(GRAPH_F32, TG_SHAPE(8));
    (void)c;
    eager_pool_pop();
    CHECK(eager_live_tensors() == before + 2);
    kept = eager_retain(b);
    (void)a;
    eager_pool_pop();
    CHECK(eager_live_tensors() == before + 1);
    CHECK(((const float *)eager_peek(kept))[3] == 1.0f);
    eager_release(kept);
    CHECK(eager_live_tensors() == before);
    eager_pool_pop(); /* unbalanced */
    CHECK_ERROR("no pool is open");
    eager_release(NULL); /* no-op */
}

static void test_errors(void)
{
    eager_tensor *bad = eager_zeros(GRAPH_F32, TG_SHAPE(2, -3));
    int line = __LINE__ - 1;
    char want[64];
    CHECK(bad == NULL);
    snprintf(want, sizeof want, "test_tensor.c:%d test_errors", line);
    CHECK_MSG(strstr(eager_error(), want) != NULL, "error \"%s\" names %s", eager_error(), want);
    CHECK_ERROR("negative dim -3");
    /* the first error is kept */
    eager_zeros(GRAPH_F32, TG_SHAPE(-1));
    eager_arange(GRAPH_F32, 0, 1, 0);
    CHECK_ERROR("negative dim -1");
    eager_tensor *t = eager_zeros(GRAPH_F32, TG_SHAPE(2, 2));
    CHECK(isnan(eager_item(t)));
    CHECK_ERROR("needs exactly one element, has 4");
    CHECK(eager_get(t, TG_INTS(1, 1)) == 0.0);
    CHECK(isnan(eager_get(t, TG_INTS(2, 0))));
    CHECK_ERROR("out of range in dim 0");
    eager_release(t);
}

int main(void)
{
    long live = eager_live_tensors();
    test_creation();
    test_prng();
    test_pools();
    test_errors();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
