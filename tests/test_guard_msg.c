/*
 * test_guard_msg.c - what a failed or changed guard says: the kind of read
 * the trace recorded (an exact value, a decision, a buffer hash), its call
 * site, what replay saw, and the remedies; a warn-policy guard reaches
 * replay_opts.guard_warn, replay_session_guard_warning, or stderr once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

static int read_line;

/* FNV-1a 64, written out (the reference for the buffer guard's hash). */
static unsigned long long fnv1a(const void *p, size_t n)
{
    unsigned long long h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

#define HAS(msg, s) CHECK_MSG(strstr((msg), (s)) != NULL, "message lacks \"%s\": %s", (s), (msg))

/* Traces fn(x) at xs with value_reads = policy. */
static graph *trace_fn(eager_tensor *(*fn)(eager_tensor *), const float *xs,
                       graph_guard_policy policy)
{
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), xs);
    trace_opts o = trace_default_opts();
    o.value_reads = policy;
    trace_begin(&o);
    trace_input(x, "x");
    trace_output(fn(x), "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    return g;
}

/* Replays g on xs; the status, with the session's message in msg. */
static tg_status replay_once(const graph *g, const float *xs, const replay_opts *o, char *msg,
                             size_t len)
{
    char err[512];
    replay_plan *p = replay_compile(g, o, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    if (!p)
        return TG_ERR_STATE;
    replay_session *s = replay_session_new(p, NULL, 0);
    float y[3];
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 1, {3}}, .input = xs};
    replay_tensor out = {.name = "y", .type = {GRAPH_F32, 1, {3}}, .data = y};
    tg_status st = replay_run(s, &in, 1, &out, 1);
    snprintf(msg, len, "%s", st == TG_OK ? replay_session_guard_warning(s) : replay_session_error(s));
    replay_session_free(s);
    replay_plan_free(p);
    return st;
}

/* `if (eager_item(sum) > 0)`: an exact-value guard, though only the sign matters. */
static eager_tensor *by_item(eager_tensor *x)
{
    read_line = __LINE__ + 1;
    return eager_item(eager_reduce_sum(x, TG_NOINTS, 0)) > 0 ? eager_relu(x) : eager_neg(x);
}

/* the same with the decision recorded */
static eager_tensor *by_bool(eager_tensor *x)
{
    eager_tensor *pos = eager_gt(eager_reduce_sum(x, TG_NOINTS, 0), eager_scalar(0));
    read_line = __LINE__ + 1;
    return eager_bool(pos) ? eager_relu(x) : eager_neg(x);
}

/* a debug print through eager_data: no branch at all */
static eager_tensor *by_data(eager_tensor *x)
{
    read_line = __LINE__ + 1;
    const float *d = eager_data(x);
    if (!d)
        return NULL;
    return eager_relu(x);
}

/* the same print through eager_peek: nothing recorded */
static eager_tensor *by_peek(eager_tensor *x)
{
    const float *d = eager_peek(x);
    if (!d)
        return NULL;
    return eager_relu(x);
}

static const float traced[3] = {1, 2, -0.5f};  /* sum 2.5 */
static const float same_sign[3] = {1, 3, -0.5f}; /* sum 3.5: the same branch */
static const float other[3] = {-1, -2, 0.5f};    /* sum -2.5: the other branch */

static void test_value(void)
{
    eager_pool_push();
    graph *g = trace_fn(by_item, traced, GRAPH_GUARD_STRICT);
    char msg[2048], site[64];
    snprintf(site, sizeof site, "test_guard_msg.c:%d by_item", read_line);
    if (g) {
        CHECK(g->nguards == 1 && g->guards[0].kind == GRAPH_GUARD_VALUE);
        CHECK(replay_once(g, traced, NULL, msg, sizeof msg) == TG_OK);
        /* the same branch fails: the exact value was recorded */
        CHECK(replay_once(g, same_sign, NULL, msg, sizeof msg) == TG_ERR_GUARD);
        char want[256];
        snprintf(want, sizeof want, "replay: guard failed: the value read at %s (guard 0: "
                 "eager_item / eager_get) took element 0 of the reduce_sum result and recorded "
                 "its exact value 2.5; replay read 3.5; ", site);
        HAS(msg, want);
        HAS(msg, "if only the branch taken on it matters, record the decision instead: "
                 "eager_bool on a comparison (eager_bool(eager_gt(t, eager_scalar(0)))) holds "
                 "for all data that takes the same branch");
        HAS(msg, "use eager_peek, which records nothing");
        HAS(msg, "trace_opts.value_reads = GRAPH_GUARD_WARN (report only) or GRAPH_GUARD_OFF");
        CHECK_MSG(strstr(msg, "followed a branch") == NULL, "%s", msg);
        /* the interpreter says the same */
        eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), same_sign), *out[1];
        CHECK(eager_interpret(g, &x, 1, out, 1, NULL) == TG_ERR_GUARD);
        CHECK_ERROR(want + strlen("replay: "));
        /* a tensor with fewer elements than the index read */
        graph_guard gd = g->guards[0];
        gd.index = 2;
        graph_type one = {GRAPH_F32, 1, {1}};
        float v = 1;
        CHECK(graph_guard_check(g, &gd, &one, &v, msg, sizeof msg) == 2);
        HAS(msg, "(a guard: eager_item / eager_get) took element 2 of the reduce_sum result "
                 "and recorded its exact value 2.5; replay's tensor has 1 elements;");
    }
    graph_free(g);
    eager_pool_pop();
}

static void test_decision(void)
{
    eager_pool_push();
    graph *g = trace_fn(by_bool, traced, GRAPH_GUARD_STRICT);
    char msg[2048], site[64];
    snprintf(site, sizeof site, "test_guard_msg.c:%d by_bool", read_line);
    if (g) {
        CHECK(g->nguards == 1 && g->guards[0].kind == GRAPH_GUARD_DECISION);
        /* the decision holds for other data on the same branch */
        CHECK(replay_once(g, same_sign, NULL, msg, sizeof msg) == TG_OK);
        CHECK(strcmp(msg, "") == 0);
        CHECK(replay_once(g, other, NULL, msg, sizeof msg) == TG_ERR_GUARD);
        char want[512];
        snprintf(want, sizeof want, "replay: guard failed: the decision at %s (guard 0: "
                 "eager_bool of the gt result) recorded the branch taken, true, and the trace "
                 "followed that branch only; replay's data makes it false, a path the graph "
                 "does not hold: trace it with data that takes it, or compute both sides and "
                 "pick with eager_where", site);
        CHECK_MSG(strcmp(msg, want) == 0, "got  %s\nwant %s", msg, want);
    }
    graph_free(g);
    eager_pool_pop();
}

static void test_buffer(void)
{
    eager_pool_push();
    graph *g = trace_fn(by_data, traced, GRAPH_GUARD_STRICT);
    char msg[2048], site[64];
    snprintf(site, sizeof site, "test_guard_msg.c:%d by_data", read_line);
    if (g) {
        CHECK(g->nguards == 1 && g->guards[0].kind == GRAPH_GUARD_BUFFER);
        CHECK(replay_once(g, traced, NULL, msg, sizeof msg) == TG_OK);
        CHECK(replay_once(g, same_sign, NULL, msg, sizeof msg) == TG_ERR_GUARD);
        char want[512];
        snprintf(want, sizeof want, "replay: guard failed: the buffer read at %s (guard 0: "
                 "eager_data of input \"x\") recorded the hash of all its data, %016llx, and replay's data "
                 "differs (hash %016llx); for a read that decides nothing (a debug print) use "
                 "eager_peek, which records nothing; if a branch depends on it, compute the "
                 "condition as a tensor and read it with eager_bool; trace_opts.value_reads",
                 site, fnv1a(traced, sizeof traced), fnv1a(same_sign, sizeof same_sign));
        want[strlen(want) - strlen("trace_opts.value_reads")] = '\0';
        HAS(msg, want);
        HAS(msg, "or trace with trace_opts.value_reads = GRAPH_GUARD_WARN");
    }
    graph_free(g);
    /* eager_peek records nothing: any data replays */
    g = trace_fn(by_peek, traced, GRAPH_GUARD_STRICT);
    if (g) {
        CHECK(g->nguards == 0);
        CHECK(replay_once(g, other, NULL, msg, sizeof msg) == TG_OK);
    }
    graph_free(g);
    eager_pool_pop();
}

typedef struct seen {
    int calls;
    char last[2048];
} seen;

static void on_warn(void *ctx, const char *msg)
{
    seen *s = ctx;
    s->calls++;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

static void test_warn(void)
{
    eager_pool_push();
    graph *g = trace_fn(by_item, traced, GRAPH_GUARD_WARN);
    char site[64], want[512];
    snprintf(site, sizeof site, "test_guard_msg.c:%d by_item", read_line);
    snprintf(want, sizeof want, "warn-policy guard changed (the run went on; what the trace "
             "derived from the read may be wrong): the value read at %s (guard 0: eager_item / "
             "eager_get) took element 0 of the reduce_sum result and recorded its exact value "
             "2.5; replay read 3.5; ", site);
    if (g) {
        /* a handler gets every change, on every run */
        seen sn = {0, ""};
        replay_opts o = {.threads = 1, .guard_warn = on_warn, .guard_warn_ctx = &sn};
        char err[512];
        replay_plan *hp = replay_compile(g, &o, err, sizeof err);
        replay_session *s = replay_session_new(hp, NULL, 0);
        float y[3];
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 1, {3}}, .input = same_sign};
        replay_tensor out = {.name = "y", .type = {GRAPH_F32, 1, {3}}, .data = y};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK);
        HAS(replay_session_guard_warning(s), want);
        CHECK(sn.calls == 1 && strcmp(sn.last, replay_session_guard_warning(s)) == 0);
        CHECK(replay_session_guard_warnings(s) == 1);
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK && sn.calls == 2);
        /* a run where it holds clears the record */
        in.input = traced;
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK && sn.calls == 2);
        CHECK(replay_session_guard_warnings(s) == 0 && strcmp(replay_session_guard_warning(s), "") == 0);
        CHECK(strcmp(replay_session_guard_warning(NULL), "") == 0);
        replay_session_free(s);
        replay_plan_free(hp);

        /* no handler: stderr, once per guard and session */
        fflush(stderr);
        char path[] = "/tmp/test_guard_msg_XXXXXX";
        int fd = mkstemp(path), saved = dup(2);
        CHECK(fd >= 0 && saved >= 0);
        dup2(fd, 2);
        replay_plan *plan = replay_compile(g, NULL, err, sizeof err);
        replay_session *s2 = replay_session_new(plan, NULL, 0);
        in.input = same_sign;
        for (int k = 0; k < 3; k++)
            CHECK(replay_run(s2, &in, 1, &out, 1) == TG_OK);
        CHECK(replay_session_guard_warnings(s2) == 1);
        HAS(replay_session_guard_warning(s2), want);
        replay_session_free(s2);
        replay_plan_free(plan);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char text[8192] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        close(fd);
        unlink(path);
        text[n > 0 ? n : 0] = '\0';
        char line[700];
        snprintf(line, sizeof line, "tracegraph: replay: %s", want);
        HAS(text, line);
        HAS(text, "(written once per session; replay_opts.guard_warn takes these messages "
                  "instead)\n");
        const char *second = strstr(text, "warn-policy");
        CHECK_MSG(second && !strstr(second + 1, "warn-policy"), "written more than once: %s", text);
    }
    graph_free(g);
    eager_pool_pop();
}

int main(void)
{
    test_value();
    test_decision();
    test_buffer();
    test_warn();
    return check_done();
}
