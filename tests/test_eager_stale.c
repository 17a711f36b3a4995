/*
 * test_eager_stale.c - a stale eager handle stays detectably dead after its
 * data block went to a new tensor (issue 29 class 2), and a tensor's
 * references stay with the thread that made it (class 7).
 *
 * Each reuse case frees t, makes u of the same size (with the block cache
 * on, u must get t's very block: the test checks that it does, so it
 * exercises the reuse it is about), then uses t again: a second release,
 * a read, an op.  Each must be an error naming its own line, and u must
 * keep its values and be freed exactly once.  The cases run in this
 * process with the cache on, then in a child with TG_EAGER_NO_CACHE=1
 * (blocks straight back to malloc: under ASan any read of freed memory in
 * the checks themselves would be reported there).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tracegraph.h"

/* Every element of the f32 tensor u is v (read without recording). */
static void check_values(const eager_tensor *u, int64_t n, float v, const char *what)
{
    CHECK_MSG(eager_numel(u) == n, "%s: %lld elements, want %lld", what,
              (long long)eager_numel(u), (long long)n);
    const float *p = eager_peek(u);
    CHECK_MSG(p != NULL, "%s: no data", what);
    for (int64_t i = 0; p && i < n; i++)
        if (p[i] != v) {
            CHECK_MSG(0, "%s[%lld] = %g, want %g", what, (long long)i, p[i], v);
            break;
        }
}

/* u took t's data block when the cache is on (else the test proves nothing). */
static void check_reused(const void *old, const eager_tensor *u, int cache)
{
    if (cache)
        CHECK_MSG(eager_peek(u) == old, "the new tensor did not get the freed block "
                  "(%p, freed %p): nothing was reused", eager_peek(u), old);
}

static void test_release_after_reuse(int cache)
{
    long live = eager_live_tensors();
    eager_tensor *t = eager_full(GRAPH_F32, TG_SHAPE(16), 1.0);
    const void *old = eager_peek(t);
    eager_release(t);
    eager_tensor *u = eager_full(GRAPH_F32, TG_SHAPE(16), 7.0);
    check_reused(old, u, cache);
    int line = __LINE__ + 1;
    eager_release(t);
    CHECK(eager_status() == TG_ERR_STATE);
    check_fail_at("eager_release: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    double got = eager_get(t, TG_INTS(3));
    CHECK(got != got); /* NaN */
    check_fail_at("get: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_add(t, u) == NULL);
    check_fail_at("add: input 0: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_data_mut(t) == NULL);
    check_fail_at("data_mut: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_retain(t) == NULL);
    check_fail_at("eager_retain: the tensor was already freed", __FILE__, line, __func__);
    CHECK(eager_peek(t) == NULL);
    eager_clear_error();
    /* u untouched, owned once: one release frees it, a second is refused */
    check_values(u, 16, 7.0f, "u");
    CHECK(eager_live_tensors() == live + 1);
    eager_release(u);
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live);
    eager_release(u);
    check_error("eager_release: the tensor was already freed", __FILE__, __LINE__);
}

static void test_use_after_pop_reuse(int cache)
{
    long live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *a = eager_full(GRAPH_F32, TG_SHAPE(8), 2.0);
    const void *old = eager_peek(a);
    eager_pool_pop();
    eager_tensor *b = eager_full(GRAPH_F32, TG_SHAPE(8), 5.0);
    check_reused(old, b, cache);
    int line = __LINE__ + 1;
    CHECK(eager_mul(b, a) == NULL);
    check_fail_at("mul: input 1: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    CHECK(eager_data(a) == NULL);
    check_fail_at("data: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    eager_release(a);
    check_fail_at("eager_release: the tensor was already freed", __FILE__, line, __func__);
    check_values(b, 8, 5.0f, "b");
    /* b works as an op input, and the sum is right */
    eager_tensor *c = eager_add(b, b);
    CHECK(c != NULL);
    if (c)
        check_values(c, 8, 10.0f, "b + b");
    eager_release(c);
    eager_release(b);
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live);
}

/* A view's header is as dead as a tensor's once its storage is reused. */
static void test_view_after_reuse(int cache)
{
    long live = eager_live_tensors();
    eager_tensor *x = eager_full(GRAPH_F32, TG_SHAPE(2, 4), 3.0);
    eager_tensor *v = eager_reshape(x, TG_SHAPE(8));
    const void *old = eager_peek(x);
    eager_release(x);
    eager_release(v); /* frees x's storage too */
    eager_tensor *y = eager_full(GRAPH_F32, TG_SHAPE(8), 4.0);
    check_reused(old, y, cache);
    int line = __LINE__ + 1;
    CHECK(eager_reshape(v, TG_SHAPE(2, 4)) == NULL);
    check_fail_at("reshape: input 0: the tensor was already freed", __FILE__, line, __func__);
    line = __LINE__ + 1;
    eager_release(x);
    check_fail_at("eager_release: the tensor was already freed", __FILE__, line, __func__);
    check_values(y, 8, 4.0f, "y");
    eager_release(y);
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live);
}

/* The quarantine (eager.h): after 4000 more tensors of the same size were
 * made and freed, each reusing the block, t is still known to be freed. */
static void test_quarantine(int cache)
{
    eager_tensor *t = eager_full(GRAPH_F32, TG_SHAPE(4), 1.0);
    const void *old = eager_peek(t);
    eager_release(t);
    int reused = 0;
    for (int i = 0; i < 4000; i++) {
        eager_tensor *u = eager_full(GRAPH_F32, TG_SHAPE(4), (double)i);
        CHECK_MSG(u != t, "tensor %d has the freed tensor's handle", i);
        reused += eager_peek(u) == old;
        eager_release(u);
    }
    if (cache)
        CHECK_MSG(reused == 4000, "the freed block was reused %d times of 4000", reused);
    CHECK(eager_status() == TG_OK);
    eager_release(t);
    check_error("eager_release: the tensor was already freed", __FILE__, __LINE__);
}

static void run_reuse_cases(int cache)
{
    test_release_after_reuse(cache);
    test_use_after_pop_reuse(cache);
    test_view_after_reuse(cache);
    test_quarantine(cache);
}

/* ---- threads ---- */

typedef struct other {
    eager_tensor *main_t; /* made by the main thread, which still runs */
    eager_tensor *made;   /* made here, left for the main thread */
    tg_status release_st, retain_st, view_st, add_st;
    char release_msg[512], view_msg[512];
    float sum0;
} other;

static void *other_thread(void *arg)
{
    other *o = arg;
    eager_release(o->main_t);
    o->release_st = eager_status();
    snprintf(o->release_msg, sizeof o->release_msg, "%s", eager_error());
    eager_clear_error();
    o->retain_st = eager_retain(o->main_t) ? TG_OK : eager_status();
    eager_clear_error();
    o->view_st = eager_reshape(o->main_t, TG_SHAPE(2, 2)) ? TG_OK : eager_status();
    snprintf(o->view_msg, sizeof o->view_msg, "%s", eager_error());
    eager_clear_error();
    /* reading it (an op input) is allowed: the result is this thread's */
    eager_tensor *s = eager_add(o->main_t, o->main_t);
    o->add_st = eager_status();
    o->sum0 = s ? ((const float *)eager_peek(s))[0] : -1;
    eager_release(s);
    o->made = eager_full(GRAPH_F32, TG_SHAPE(4), 9.0);
    return NULL;
}

static void test_release_on_other_thread(void)
{
    long live = eager_live_tensors();
    other o = {0};
    o.main_t = eager_full(GRAPH_F32, TG_SHAPE(4), 2.0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, other_thread, &o) == 0);
    pthread_join(th, NULL);
    CHECK(o.release_st == TG_ERR_STATE);
    CHECK_MSG(strstr(o.release_msg, "eager_release: the tensor belongs to the thread that made "
                     "it") && strstr(o.release_msg, "test_eager_stale.c:"),
              "release on another thread: \"%s\"", o.release_msg);
    CHECK(o.retain_st == TG_ERR_STATE);
    CHECK(o.view_st == TG_ERR_STATE);
    CHECK_MSG(strstr(o.view_msg, "reshape: input 0 (a view takes a reference on it): the "
                     "tensor belongs to the thread that made it"),
              "view on another thread: \"%s\"", o.view_msg);
    CHECK(o.add_st == TG_OK && o.sum0 == 4.0f);
    /* still the main thread's, with its one reference: not freed there */
    check_values(o.main_t, 4, 2.0f, "main_t");
    eager_release(o.main_t);
    /* the other thread has exited: its tensor may be released here */
    check_values(o.made, 4, 9.0f, "made");
    eager_release(o.made);
    CHECK_MSG(eager_status() == TG_OK, "%s", eager_error());
    CHECK(eager_live_tensors() == live);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--no-cache") == 0) {
        run_reuse_cases(0);
        return check_done();
    }
    setenv("TG_EAGER_NO_CACHE", "0", 1); /* before the first tensor */
    run_reuse_cases(1);
    test_release_on_other_thread();
    /* the same with the cache off, in a child (read once per process) */
    char self[4096], cmd[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    snprintf(cmd, sizeof cmd, "TG_EAGER_NO_CACHE=1 '%s' --no-cache 2>&1", self);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    char out[65536];
    size_t len = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[len] = '\0';
    int rc = f ? pclose(f) : -1;
    CHECK_MSG(rc == 0 && strstr(out, " 0 failed"), "the no-cache child: exit %d:\n%s", rc, out);
    printf("no-cache child: %s", strrchr(out, '\n') && len > 1 ? out : "(no output)\n");
    return check_done();
}
