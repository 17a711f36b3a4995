/*
 * test_assert.c - the error plumbing of graph/errors.h: the positioned
 * messages (tg_errpos) against strings written out by hand, and TG_ASSERT:
 * in a build with TG_ASSERTS (Debug, sanitizers) a violated one calls the
 * installed handler with its expression, file, line and function, and the
 * library's own asserts do too; where it is off it compiles away (its
 * condition is not even evaluated) and the handler is never called.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "graph/errors.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "graph/invariants.h"
#include "optimize/memplan.h"

/* ---- messages ---- */

static tg_status fail_in(char *err, size_t errlen, int bad, const tg_errpos *at)
{
    TG_FAIL_IF(bad == 1, TG_ERR_ARG, "bad is %d", bad);
    if (bad == 2)
        TG_FAIL_AT(TG_ERR_FORMAT, at, "the %s is wrong", "count");
    TG_FAIL_AT_IF(bad == 3, TG_ERR_UNSUPPORTED, at, "%d", 3);
    return TG_OK;
}

static void test_messages(void)
{
    char err[200];
    /* No position: the message alone. */
    memset(err, 'x', sizeof err);
    CHECK(tg_fail(TG_ERR_NOMEM, err, sizeof err, "out of %s", "memory") == TG_ERR_NOMEM);
    CHECK(strcmp(err, "out of memory") == 0);
    CHECK(fail_in(err, sizeof err, 1, NULL) == TG_ERR_ARG);
    CHECK(strcmp(err, "bad is 1") == 0);
    strcpy(err, "untouched");
    CHECK(fail_in(err, sizeof err, 0, NULL) == TG_OK);
    CHECK(strcmp(err, "untouched") == 0);
    /* Each part of a position, as the loaders write them. */
    tg_errpos dec = {.file = "m.tgraph", .section = "nodes", .unit = "byte", .offset = 17,
                     .item = "node", .index = 4};
    CHECK(fail_in(err, sizeof err, 2, &dec) == TG_ERR_FORMAT);
    CHECK_MSG(strcmp(err, "m.tgraph: section 'nodes' at byte 17: node 4: the count is wrong")
                  == 0, "%s", err);
    tg_errpos sec = {.file = "m.tgraph", .section = "strings", .unit = "byte", .offset = 0};
    CHECK(fail_in(err, sizeof err, 3, &sec) == TG_ERR_UNSUPPORTED);
    CHECK_MSG(strcmp(err, "m.tgraph: section 'strings' at byte 0: 3") == 0, "%s", err);
    tg_errpos npy = {.file = "a.npy", .unit = "byte", .offset = 12345678901ull};
    tg_fail_at(TG_ERR_FORMAT, err, sizeof err, &npy, "x");
    CHECK_MSG(strcmp(err, "a.npy: at byte 12345678901: x") == 0, "%s", err);
    tg_errpos onnx = {.file = "m.onnx", .item = "node", .index = 2, .name = "", .op = "Conv"};
    tg_fail_at(TG_ERR_FORMAT, err, sizeof err, &onnx, "y");
    CHECK_MSG(strcmp(err, "m.onnx: node 2 '' (Conv): y") == 0, "%s", err);
    onnx.name = "c1";
    onnx.op = NULL;
    tg_fail_at(TG_ERR_FORMAT, err, sizeof err, &onnx, "y");
    CHECK_MSG(strcmp(err, "m.onnx: node 2 'c1' (): y") == 0, "%s", err);
    tg_errpos file = {.file = "m.onnx"};
    tg_fail_at(TG_ERR_FORMAT, err, sizeof err, &file, "z");
    CHECK_MSG(strcmp(err, "m.onnx: z") == 0, "%s", err);
    tg_errpos text = {.line = 3, .col = 9};
    tg_fail_at(TG_ERR_FORMAT, err, sizeof err, &text, "expected ')'");
    CHECK_MSG(strcmp(err, "line 3, col 9: expected ')'") == 0, "%s", err);
    tg_errpos none = {0};
    tg_fail_at(TG_ERR_FORMAT, err, sizeof err, &none, "plain");
    CHECK_MSG(strcmp(err, "plain") == 0, "%s", err);
    /* Truncated to the buffer, at every length, terminated, never past it. */
    const char *full = "m.tgraph: section 'nodes' at byte 17: node 4: the count is wrong";
    for (size_t len = 1; len <= strlen(full) + 2; len++) {
        char small[80];
        memset(small, '#', sizeof small);
        fail_in(small, len, 2, &dec);
        size_t want = len - 1 < strlen(full) ? len - 1 : strlen(full);
        CHECK_MSG(strlen(small) == want && strncmp(small, full, want) == 0 &&
                      small[len] == '#',
                  "errlen %zu: '%s'", len, small);
    }
    /* No buffer: nothing written, the status still returned. */
    CHECK(tg_fail_at(TG_ERR_IO, NULL, 10, &dec, "q") == TG_ERR_IO);
    strcpy(err, "kept");
    CHECK(tg_fail(TG_ERR_IO, err, 0, "q") == TG_ERR_IO);
    CHECK(strcmp(err, "kept") == 0);
}

/* ---- TG_ASSERT in this file ---- */

static jmp_buf jump;
static int calls;
static const char *got_expr, *got_file, *got_func;
static int got_line;

static void record(const char *expr, const char *file, int line, const char *func)
{
    calls++;
    got_expr = expr;
    got_file = file;
    got_line = line;
    got_func = func;
    longjmp(jump, 1);
}

static int evaluated;
static int broken(void)
{
    evaluated++;
    return 0;
}

static void test_local_assert(void)
{
#if defined(TG_ASSERTS)
    const int on = 1;
#else
    const int on = 0;
#endif
    /* The library and this test agree on the build mode (one definition in CMake). */
    CHECK_MSG(tg_asserts_enabled() == on, "library %d, test %d", tg_asserts_enabled(), on);
    /* ... and it is the one CMake promises: on in Debug (no NDEBUG) and sanitized builds. */
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
    CHECK_MSG(on, "a Debug or sanitized build without TG_ASSERTS");
#else
    CHECK_MSG(!on, "a release build with TG_ASSERTS");
#endif
    CHECK(tg_set_assert_handler(record) == NULL); /* the default was set */
    calls = 0;
    evaluated = 0;
    static volatile int line;
    TG_ASSERT(1 + 1 == 2); /* holds: no call in either mode */
    CHECK(calls == 0);
    if (setjmp(jump) == 0) {
        line = __LINE__ + 1;
        TG_ASSERT(broken() == 1);
    }
    if (on) {
        CHECK(calls == 1 && evaluated == 1);
        CHECK_MSG(got_expr && strcmp(got_expr, "broken() == 1") == 0, "expr '%s'", got_expr);
        CHECK_MSG(got_file && strcmp(got_file, __FILE__) == 0, "file '%s'", got_file);
        CHECK_MSG(got_line == line, "line %d, want %d", got_line, line);
        CHECK_MSG(got_func && strcmp(got_func, "test_local_assert") == 0, "func '%s'",
                  got_func);
    } else {
        CHECK_MSG(calls == 0, "release: the handler was called %d times", calls);
        CHECK_MSG(evaluated == 0, "release: the condition was evaluated %d times", evaluated);
    }
    CHECK(tg_set_assert_handler(NULL) == record);
}

/* ---- the library's asserts, in a child process ---- */

/*
 * Runs fn in a child with stderr into a pipe; returns its wait status and
 * what it wrote in out.  The children leave with _exit or abort, so the
 * memory a broken call left behind is not a leak of this test.
 */
static int in_child(void (*fn)(void), char *out, size_t outlen)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn();
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < outlen && (k = read(fd[0], out + n, outlen - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fd[0]);
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
}

/* A buffer alive from step 2 to step 1: memplan.c's 0 <= f <= l. */
static void place_broken(void)
{
    opt_memplan_buf b = {64, 2, 1};
    int64_t off = -1;
    opt_memplan_place(&b, 1, 64, &off, NULL);
}

static void to_stderr(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "handler: %s|%s|%d|%s\n", expr, file, line, func);
    _exit(42);
}

static void child_handler(void)
{
    tg_set_assert_handler(to_stderr);
    place_broken();
}

static void child_default(void)
{
    tg_set_assert_handler(NULL);
    place_broken();
}

static void noop_handler(const char *expr, const char *file, int line, const char *func) {}

static void child_noop(void)
{
    tg_set_assert_handler(noop_handler);
    place_broken();
}

static void test_library_assert(void)
{
    /* A correct call places, in either mode (no false alarm, nothing changed). */
    opt_memplan_buf b[2] = {{100, 0, 1}, {10, 1, 2}};
    int64_t off[2] = {-1, -1};
    CHECK(opt_memplan_place(b, 2, 64, off, NULL) == 192);
    CHECK(off[0] == 0 && off[1] == 128);
    if (!tg_asserts_enabled())
        return; /* a broken call would run on unchecked: not made */
    /* An installed handler gets memplan.c's expression, file, line and function. */
    char out[1000];
    int st = in_child(child_handler, out, sizeof out);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status %d: %s", st, out);
    CHECK_MSG(strstr(out, "handler: 0 <= f && f <= l && l < steps|") != NULL, "%s", out);
    CHECK_MSG(strstr(out, "|place_order\n") != NULL, "%s", out); /* opt_memplan_place's body */
    int line = 0;
    const char *at = strstr(out, "optimize/memplan.c|");
    CHECK_MSG(at && sscanf(at, "optimize/memplan.c|%d|", &line) == 1 && line > 0, "%s", out);
    /* The default handler: the message on stderr, then abort. */
    st = in_child(child_default, out, sizeof out);
    CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d", st);
    char want[200];
    snprintf(want, sizeof want, "optimize/memplan.c:%d (place_order)\n", line);
    const char *msg = "tracegraph: internal error: 0 <= f && f <= l && l < steps at ";
    CHECK_MSG(strncmp(out, msg, strlen(msg)) == 0 && strstr(out, want) != NULL,
              "'%s' lacks '%s...%s'", out, msg, want);
    /* A handler that returns does not let the code go on: abort all the same. */
    st = in_child(child_noop, out, sizeof out);
    CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d", st);
    CHECK_MSG(out[0] == '\0', "the no-op handler's child wrote '%s'", out);
}

/* x -> relu -> y, with y's producer link broken when broken is set. */
static graph *relu_graph(int broken)
{
    graph *g = graph_new("links");
    graph_type t = {GRAPH_F32, 1, {4}};
    int32_t x = g ? graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x") : -1;
    int32_t y = -1;
    if (x < 0 || graph_add_input(g, x) != TG_OK ||
        graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1) < 0 ||
        graph_add_output(g, y, "y") != TG_OK) {
        graph_free(g);
        return NULL;
    }
    if (broken)
        g->values[y].out_index = 1; /* a rewrite that forgot to renumber */
    return g;
}

static void child_links(void)
{
    tg_set_assert_handler(to_stderr);
    graph_assert_links(relu_graph(1));
}

/* graph_assert_links: quiet on a sound graph, stops at a broken producer link. */
static void test_graph_links(void)
{
    graph *g = relu_graph(0);
    CHECK(g != NULL);
    if (g)
        graph_assert_links(g); /* a false alarm would abort the test here */
    graph_free(g);
    if (!tg_asserts_enabled())
        return;
    char out[1000];
    int st = in_child(child_links, out, sizeof out);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status %d: %s", st, out);
    CHECK_MSG(strstr(out, "g->values[v].out_index == k") && strstr(out, "graph/invariants.c|") &&
                  strstr(out, "|graph_assert_links\n"),
              "%s", out);
}

int main(void)
{
    test_messages();
    test_local_assert();
    test_library_assert();
    test_graph_links();
    return check_done();
}
