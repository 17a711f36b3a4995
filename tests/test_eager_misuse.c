/*
 * test_eager_misuse.c - eager API misuse is an error naming the call site,
 * never memory handed out twice: a double release, a use after the pool
 * popped, releasing a tensor its pool still owns (each followed by a sum
 * that must come out right), the same mechanism in opt_optimize's
 * verify_each inside a caller's pool, and the TG_EAGER_NO_CACHE mode that
 * lets AddressSanitizer see every block.
 *
 * The misuse cases run with the block cache on (set before the first
 * tensor), where a freed block stays with the program: that is where the
 * corruption happened.  test_eager_stale.c reuses the blocks on purpose.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "models.h"
#include "tracegraph.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

/* a + b over n elements of fresh tensors filled with va and vb: every
 * element must be va + vb, and a, b, a + b three different blocks.  (In a
 * pool or not: eager_keep makes the releases right either way.) */
static void check_sum_intact(float va, float vb)
{
    eager_tensor *a = eager_keep(eager_full(GRAPH_F32, TG_SHAPE(4), va));
    eager_tensor *b = eager_keep(eager_full(GRAPH_F32, TG_SHAPE(4), vb));
    eager_tensor *c = eager_keep(eager_add(a, b));
    CHECK(a && b && c);
    CHECK(a != b && a != c && b != c);
    if (c) {
        const float *p = eager_peek(c);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(p[i] == va + vb, "a+b[%d] = %g, want %g", i, p[i], va + vb);
    }
    CHECK(eager_status() == TG_OK);
    eager_release(a);
    eager_release(b);
    eager_release(c);
}

static void test_double_release(void)
{
    long live = eager_live_tensors();
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(4), 1.0);
    eager_release(a);
    CHECK(eager_status() == TG_OK);
    int line = __LINE__ + 1;
    eager_release(a);
    CHECK(eager_status() == TG_ERR_STATE);
    check_fail_at("eager_release: the tensor was already freed", __FILE__, line, __func__);
    /* Freed once: the block sits once on its free list. */
    check_sum_intact(1, 3);
    /* A view released twice: its base is not dropped twice either. */
    eager_tensor *x = eager_full(GRAPH_F32, TG_SHAPE(2, 2), 2.0);
    eager_tensor *v = eager_reshape(x, TG_SHAPE(4));
    eager_release(x); /* v keeps the storage */
    CHECK(v && ((const float *)eager_peek(v))[3] == 2.0f);
    eager_release(v);
    line = __LINE__ + 1;
    eager_release(v);
    check_fail_at("eager_release: the tensor was already freed", __FILE__, line, __func__);
    check_sum_intact(2, 5);
    CHECK(eager_live_tensors() == live);
}

static void test_use_after_pop(void)
{
    long live = eager_live_tensors();
    eager_tensor *one = eager_full(GRAPH_F32, TG_SHAPE(4), 1.0);
    eager_pool_push();
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(4), 2.0);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live + 1);
    /* a is known to be freed (also once a new tensor has its block:
     * test_eager_stale.c) */
    /* each use is refused, naming its own line */
    int line = __LINE__ + 1;
    CHECK(eager_add(a, a) == NULL);
    CHECK(eager_status() == TG_ERR_STATE);
    check_fail_at("add: input 0: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_mul(one, a) == NULL);
    check_fail_at("mul: input 1: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    double got = eager_get(a, TG_INTS(0));
    CHECK(got != got); /* NaN */
    check_fail_at("get: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_data(a) == NULL);
    check_fail_at("data: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_data_mut(a) == NULL);
    check_fail_at("data_mut: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_ndim(a) == -1);
    check_fail_at("eager_ndim: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_numel(a) == -1);
    check_fail_at("eager_numel: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_retain(a) == NULL);
    check_fail_at("eager_retain: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    eager_release(a);
    check_fail_at("eager_release: the tensor was already freed", __FILE__, line, __func__);
    CHECK(eager_live_tensors() == live + 1);
    eager_release(one);
    check_sum_intact(1, 3);
    CHECK(eager_live_tensors() == live);
}

static void test_release_pool_owned(void)
{
    long live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(4), 1.0);
    int line = __LINE__ + 1;
    eager_release(a);
    CHECK(eager_status() == TG_ERR_STATE);
    check_fail_at("eager_release: the tensor belongs to the pool", __FILE__, line, __func__);
    /* a is still alive and unchanged: nothing else gets its block */
    eager_tensor *b = eager_full(GRAPH_F32, TG_SHAPE(4), 3.0);
    CHECK(a != b);
    CHECK(((const float *)eager_peek(a))[0] == 1.0f);
    /* retained, a reference of our own: released in the pool, fine */
    eager_tensor *k = eager_retain(eager_full(GRAPH_F32, TG_SHAPE(4), 7.0));
    eager_release(k);
    CHECK(eager_status() == TG_OK);
    /* retained and kept past the pop */
    eager_tensor *kept = eager_retain(eager_add(a, b));
    eager_pool_pop();
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live + 1);
    CHECK(kept && ((const float *)eager_peek(kept))[2] == 4.0f);
    eager_release(kept);
    CHECK(eager_live_tensors() == live);
    /* the pool freed a and b once each */
    check_sum_intact(1, 3);
    eager_pool_push();
    check_sum_intact(2, 2);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

static void test_pool_misc(void)
{
    int line = __LINE__ + 1;
    eager_pool_pop();
    check_fail_at("eager_pool_pop: no pool is open", __FILE__, line, __func__);
    eager_release(EAGER_NONE); /* static: a no-op, twice */
    eager_release(EAGER_NONE);
    eager_release(NULL);
    CHECK(eager_status() == TG_OK);
    /* views in a pool: the base outlives the view in either order */
    long live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_full(GRAPH_F32, TG_SHAPE(2, 3), 1.5);
    eager_tensor *v = eager_reshape(x, TG_SHAPE(6));
    eager_tensor *w = eager_flatten(v, 0, -1);
    CHECK(w && ((const float *)eager_peek(w))[5] == 1.5f);
    eager_pool_pop();
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live);
    /* eager_keep: one release is right inside a pool and outside */
    eager_tensor *o = eager_keep(eager_full(GRAPH_F32, TG_SHAPE(4), 1.0));
    eager_release(o);
    eager_pool_push();
    eager_tensor *p = eager_keep(eager_full(GRAPH_F32, TG_SHAPE(4), 1.0));
    eager_release(p);
    eager_pool_pop();
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live);
    check_sum_intact(1, 3);
}

/* opt_optimize with verify_each made its reference inputs inside the
 * caller's pool and released them itself: freed twice at the pop. */
static void test_verify_each_in_pool(void)
{
    model m = model_make(MODEL_MLP);
    eager_tensor *x = model_input(&m, 2, 7);
    graph *g = model_trace(&m, x);
    CHECK(g != NULL);
    long live = eager_live_tensors();
    for (int pooled = 0; g && pooled < 2; pooled++) {
        graph *c = graph_clone(g);
        opt_options o = opt_default_options();
        o.level = 2;
        o.verify_each = 1;
        opt_report rep;
        char err[512] = "";
        if (pooled)
            eager_pool_push();
        tg_status st = opt_optimize(c, &o, &rep, err, sizeof err);
        CHECK_MSG(st == TG_OK, "%s", err);
        CHECK_MSG(rep.bad_pass[0] == '\0', "verify_each blames %s", rep.bad_pass);
        if (pooled)
            eager_pool_pop();
        CHECK_MSG(eager_status() == TG_OK, "%s", eager_error());
        CHECK_MSG(eager_live_tensors() == live, "%s a pool: %ld tensors left",
                  pooled ? "in" : "outside", eager_live_tensors() - live);
        graph_free(c);
        check_sum_intact(1, 3);
    }
    graph_free(g);
    eager_release(x);
    model_free(&m);
}

/* The child of test_no_cache: with the cache off, a double release is an
 * error (headers are never freed), and a read through a data pointer kept
 * past the release reads a freed block: ASan stops there. */
static int uaf_child(void)
{
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(4), 1.0);
    const float *p = eager_peek(a);
    eager_release(a);
    eager_release(a);
    if (eager_status() != TG_ERR_STATE)
        return 3;
    return p[0] == 1.0f ? 4 : 5; /* the stale read */
}

/* TG_EAGER_NO_CACHE=1: blocks go back to malloc at once, so ASan reports
 * the read of a tensor's data after its release as a heap-use-after-free. */
static void test_no_cache(const char *self)
{
#ifdef HAVE_ASAN
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TG_EAGER_NO_CACHE=1 ASAN_OPTIONS=abort_on_error=0:detect_leaks=0 "
             "'%s' --uaf 2>&1", self);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    char out[65536];
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = '\0';
    int rc = f ? pclose(f) : -1;
    CHECK_MSG(rc != 0 && strstr(out, "heap-use-after-free") && strstr(out, "uaf_child"),
              "child exit %d, output:\n%s", rc, out);
#else
    (void)self;
    printf("no AddressSanitizer in this build: the no-cache child is not run\n");
#endif
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--uaf") == 0)
        return uaf_child();
    setenv("TG_EAGER_NO_CACHE", "0", 1); /* before the first tensor */
    test_double_release();
    test_use_after_pop();
    test_release_pool_owned();
    test_pool_misc();
    test_verify_each_in_pool();
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    test_no_cache(self);
    return check_done();
}
