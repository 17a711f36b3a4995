/*
 * test_trace.c - the tracer: traced MLP, conv block and attention block
 * replayed by the reference interpreter bit for bit; provenance naming this
 * file; guards; dynamic batch; error cases; stacks.
 */
#include <math.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "models.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

/* Bitwise equality of two f32 tensors. */
static int same_bits(eager_tensor *a, eager_tensor *b)
{
    return a && b && eager_nbytes(a) == eager_nbytes(b) &&
           eager_ndim(a) == eager_ndim(b) &&
           memcmp(eager_peek(a), eager_peek(b), eager_nbytes(a)) == 0;
}

/* Every node names a line of the test's model source (tests/models.c). */
static void check_provenance(const graph *g)
{
    int ok = 1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->nprov < 1) {
            ok = 0;
            break;
        }
        const graph_prov *p = &g->provs[n->prov[0]];
        if (!strstr(p->file, "tests/models.c") || p->line <= 0 ||
            strncmp(p->func, "model_", 6) != 0)
            ok = 0;
    }
    CHECK_MSG(ok && g->nnodes > 0, "every node names tests/models.c:LINE model_*");
}

/*
 * The text IR of a traced graph round-trips: print -> parse -> print gives
 * the same text, and the parsed graph (constants inlined) computes the
 * same bits.
 */
static void check_text_round_trip(const graph *g, eager_tensor *x, eager_tensor *want)
{
    graph_print_opts o = GRAPH_PRINT_DEFAULTS;
    o.inline_all = 1;
    size_t len = 0, len2 = 0;
    char *text = graph_print_str(g, &o, &len);
    char err[512] = "";
    graph *h = text ? graph_parse(text, len, err, sizeof err) : NULL;
    CHECK_MSG(h != NULL, "traced graph's text parses: %s", err);
    char *again = h ? graph_print_str(h, &o, &len2) : NULL;
    CHECK_MSG(again && len == len2 && memcmp(text, again, len) == 0,
              "print(parse(print(g))) == print(g)");
    eager_tensor *out[1] = {NULL};
    CHECK(h && eager_interpret(h, &x, 1, out, 1, NULL) == TG_OK);
    CHECK_MSG(same_bits(out[0], want), "the parsed graph computes the same bits");
    eager_release(out[0]);
    free(text);
    free(again);
    graph_free(h);
    /* DOT names each node's op and call site */
    char *dot = NULL;
    size_t dlen = 0;
    FILE *f = open_memstream(&dot, &dlen);
    CHECK(f && graph_write_dot(g, f) == TG_OK);
    if (f)
        fclose(f);
    CHECK_MSG(dot && strstr(dot, "digraph") && strstr(dot, "models.c:") &&
              strstr(dot, graph_ops[g->nodes[0].op].name), "DOT has ops and call sites");
    free(dot);
}

/* Traces f(x, params) with x an input, runs the interpreter, compares. */
static graph *trace_and_check(const char *name, eager_tensor *x,
                              eager_tensor *(*f)(eager_tensor *, eager_tensor *const *),
                              eager_tensor *const *params, int nparams)
{
    eager_pool_push();
    eager_tensor *eager_y = f(x, params);
    CHECK_MSG(eager_y != NULL, "%s runs eagerly: %s", name, eager_error());
    trace_opts o = trace_default_opts();
    o.name = name;
    CHECK(trace_begin(&o) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK);
    for (int i = 0; i < nparams; i++)
        trace_param(params[i], "p");
    eager_tensor *y = f(x, params);
    CHECK(trace_output(y, "y") == TG_OK);
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s freezes: %s", name, eager_error());
    if (g) {
        CHECK(same_bits(y, eager_y));
        eager_tensor *out[1] = {NULL};
        CHECK(eager_interpret(g, &x, 1, out, 1, NULL) == TG_OK);
        CHECK_MSG(same_bits(out[0], eager_y), "%s: interpreter == eager bit for bit", name);
        eager_release(out[0]);
        check_provenance(g);
        CHECK(graph_verify(g, 0) == TG_OK);
        check_text_round_trip(g, x, eager_y);
    }
    eager_pool_pop();
    return g;
}

static void test_models(void)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        model m = model_make(k);
        eager_tensor *x = model_input(&m, m.input_shape.v[0], 9 + (uint64_t)k);
        graph *g = trace_and_check(m.name, x, m.forward, m.params, m.nparams);
        if (g && k == MODEL_MLP) {
            CHECK(g->ninputs == 1 && g->noutputs == 1 && g->nnodes == 4);
            int params = 0;
            for (int32_t i = 0; i < g->nvalues; i++)
                params += g->values[i].kind == GRAPH_VALUE_PARAM;
            CHECK(params == 4);
        }
        if (g && k == MODEL_ATTENTION) {
            int consts = 0;
            for (int32_t i = 0; i < g->nvalues; i++)
                consts += g->values[i].kind == GRAPH_VALUE_CONST;
            CHECK(consts == 1); /* the 1/sqrt(8) scalar made inside the trace */
        }
        graph_free(g);
        eager_release(x);
        model_free(&m);
    }
}

/* No recorded stack starts inside the dispatcher or the tracer, even for
 * ops called in a return statement (a tail call leaves the user's frame). */
static void check_no_internal_frames(const graph *g)
{
    static const char *const internal[] = {"on_op", "on_read", "record_prov",
                                           "eager_dispatch", "report"};
    int bad = 0;
    for (int32_t i = 0; i < g->nprovs; i++) {
        const graph_prov *p = &g->provs[i];
        const char *f = p->nframes ? g->frames[p->frame0].func : NULL;
        if (!f)
            continue;
        size_t n = strcspn(f, ".");
        for (size_t k = 0; k < sizeof internal / sizeof internal[0]; k++)
            bad += strlen(internal[k]) == n && strncmp(f, internal[k], n) == 0;
        bad += strncmp(f, "eager_", 6) == 0 && n > 3 && strncmp(f + n - 3, "_at", 3) == 0;
    }
    CHECK_MSG(bad == 0, "%d stacks start inside the library", bad);
}

/* ---- guards ---- */

static int branch_line;

static eager_tensor *branchy(eager_tensor *x)
{
    eager_tensor *s = eager_reduce_sum(x, TG_NOINTS, 0);
    branch_line = __LINE__ + 1;
    if (eager_item(s) > 0)
        return eager_relu(x);
    return eager_neg(x);
}

static void test_guards(void)
{
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){1, 2, -0.5f}));
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    trace_output(branchy(x), "y");
    graph *g = trace_freeze();
    CHECK(g && g->nguards == 1);
    if (!g) {
        eager_pool_pop();
        return;
    }
    CHECK(g->guards[0].kind == GRAPH_GUARD_VALUE && g->guards[0].policy == GRAPH_GUARD_STRICT);
    CHECK(g->guards[0].expect == 2.5);
    check_no_internal_frames(g); /* branchy ends in "return eager_neg(x)" */
    char site[64];
    snprintf(site, sizeof site, "test_trace.c:%d branchy", branch_line);
    char prov[300];
    CHECK_MSG(strstr(graph_prov_str(g, g->guards[0].prov, prov, sizeof prov), site),
              "guard names %s (got %s)", site, prov);
    /* the same data replays */
    eager_tensor *out[1];
    CHECK(eager_interpret(g, &x, 1, out, 1, NULL) == TG_OK);
    eager_release(out[0]);
    /* data that takes the other branch fails, naming the read */
    eager_tensor *x2 = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){-1, -2, 0.5f}));
    CHECK(eager_interpret(g, &x2, 1, out, 1, NULL) == TG_ERR_GUARD);
    CHECK_MSG(strstr(eager_error(), site) != NULL, "error \"%s\" names %s", eager_error(), site);
    CHECK_ERROR("guard failed: the value read at");
    /* the summary lists it */
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    trace_summary(g, f);
    fclose(f);
    CHECK_MSG(strstr(buf, "guards: 1") && strstr(buf, site), "summary: %s", buf);
    graph_free(g);

    /* a decision guard passes while the branch holds, with other data */
    trace_opts o = trace_default_opts();
    o.value_reads = GRAPH_GUARD_WARN;
    CHECK(trace_begin(&o) == TG_OK);
    trace_input(x, "x");
    eager_tensor *pos = eager_gt(eager_reduce_sum(x, TG_NOINTS, 0), eager_scalar(0));
    eager_tensor *y = eager_bool(pos) ? eager_relu(x) : eager_neg(x);
    eager_item(eager_reduce_max(x, TG_NOINTS, 0)); /* a "printed loss": warn only */
    trace_output(y, "y");
    g = trace_freeze();
    CHECK(g && g->nguards == 2);
    if (g) {
        CHECK(g->guards[0].kind == GRAPH_GUARD_DECISION && g->guards[0].policy == GRAPH_GUARD_STRICT);
        CHECK(g->guards[1].policy == GRAPH_GUARD_WARN);
        eager_tensor *x3 = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){5, 1, 1}));
        eager_interp_report rep;
        CHECK(eager_interpret(g, &x3, 1, out, 1, &rep) == TG_OK);
        CHECK(rep.guard_warnings == 1 && strstr(rep.first_warning, "test_trace.c"));
        eager_release(out[0]);
        CHECK(eager_interpret(g, &x2, 1, out, 1, NULL) == TG_ERR_GUARD);
        CHECK_ERROR("the decision at");
    }
    graph_free(g);
    eager_pool_pop();
}

/* ---- dynamic batch ---- */

static void test_dynamic(void)
{
    model m = model_make(MODEL_MLP);
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(4, 32), 31, -1, 1);
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_dynamic(x, 0, "B") == TG_OK);
    trace_output(model_mlp(x, m.params), "y");
    graph *g = trace_freeze();
    CHECK(g != NULL);
    if (g) {
        const graph_value *y = &g->values[g->outputs[0].value];
        CHECK(y->dyn == 1 && g->nsyms == 1 && strcmp(g->syms[y->sym[0]].name, "B") == 0);
        for (int b = 0; b < 3; b++) {
            int64_t batch = b == 0 ? 1 : b == 1 ? 32 : 4;
            eager_tensor *xb = eager_rand_uniform(TG_SHAPE(batch, 32), 40 + b, -1, 1);
            eager_tensor *want = model_mlp(xb, m.params), *out[1] = {NULL};
            CHECK(eager_interpret(g, &xb, 1, out, 1, NULL) == TG_OK);
            CHECK_MSG(same_bits(out[0], want), "batch %lld matches eager", (long long)batch);
            eager_release(out[0]);
        }
        eager_tensor *bad = eager_rand_uniform(TG_SHAPE(4, 31), 50, -1, 1);
        CHECK(eager_interpret(g, &bad, 1, (eager_tensor *[1]){0}, 1, NULL) == TG_ERR_SHAPE);
        CHECK_ERROR("input \"x\" is f32[4,31], the graph was traced with f32[4,32]");
    }
    graph_free(g);

    /* a reshape to the traced batch only works at that batch */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    eager_tensor *r = eager_reshape(x, TG_INTS(128));
    int line = __LINE__ - 1;
    trace_output(eager_relu(r), "y");
    g = trace_freeze();
    CHECK(g && (g->nodes[0].flags & GRAPH_NODE_SPECIALIZED));
    if (g) {
        eager_tensor *x2 = eager_rand_uniform(TG_SHAPE(2, 32), 51, -1, 1), *out[1];
        CHECK(eager_interpret(g, &x2, 1, out, 1, NULL) != TG_OK);
        char site[64];
        snprintf(site, sizeof site, "test_trace.c:%d test_dynamic", line);
        CHECK_MSG(strstr(eager_error(), site) && strstr(eager_error(), "specialized"),
                  "\"%s\" names %s and specialization", eager_error(), site);
        eager_clear_error();
    }
    graph_free(g);
    eager_pool_pop();
    model_free(&m);
}

/* ---- errors ---- */

static eager_tensor *other_thread_tensor;

static void *other_thread(void *arg)
{
    (void)arg;
    eager_pool_push();
    trace_begin(NULL);
    eager_tensor *y = eager_relu(other_thread_tensor);
    int ok = y == NULL && strstr(eager_error(), "another thread's active trace");
    eager_clear_error();
    trace_abort();
    eager_pool_pop();
    return ok ? (void *)1 : NULL;
}

/* What f(arg) writes to stderr, run in a child process that then exits
 * (exit(0) unless f returns nonzero).  Caller frees. */
static char *child_stderr(void (*f)(void))
{
    int fd[2];
    if (pipe(fd) != 0)
        return NULL;
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        f();
        exit(0);
    }
    close(fd[1]);
    size_t cap = 4096, len = 0;
    char *buf = calloc(1, cap);
    ssize_t n;
    while (buf && (n = read(fd[0], buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return buf;
}

static void *open_in_thread(void *arg)
{
    (void)arg;
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2));
    trace_begin(NULL); /* the line warn_thread looks for */
    trace_input(x, "x");
    eager_release(eager_relu(x));
    eager_release(x);
    return NULL; /* the trace is left open */
}

static void left_open_thread(void)
{
    pthread_t th;
    pthread_create(&th, NULL, open_in_thread, NULL);
    pthread_join(th, NULL);
    fprintf(stderr, "joined, active here: %d\n", trace_active());
}

static void left_open_exit(void)
{
    setenv("TG_TRACE_WARN_OPS", "3", 1);
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2));
    trace_begin(NULL);
    trace_input(x, "x");
    for (int i = 0; i < 5; i++)
        x = eager_relu(x);
}

/* A trace left open is not silent: a second trace_begin names where the
 * first began and what to call, and a thread or process ending with one
 * open warns (issue 33), as does one growing past TG_TRACE_WARN_OPS. */
static void test_left_open(void)
{
    eager_pool_push();
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2));
    int line = __LINE__ + 1;
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_begin(NULL) == TG_ERR_STATE);
    char want[256];
    snprintf(want, sizeof want, "begun at %s:%d (test_left_open); end it first with "
             "trace_freeze() (keeps its graph) or trace_abort() (drops it)", __FILE__, line);
    CHECK_ERROR(want);
    trace_abort();
    eager_pool_pop();

    char *out = child_stderr(left_open_thread);
    CHECK_MSG(out && strstr(out, "tracegraph: warning: the trace begun at ") &&
                  strstr(out, "(open_in_thread) was never ended when its thread exited (1 ops "
                              "recorded); end it with trace_freeze() or trace_abort()") &&
                  strstr(out, "joined, active here: 0"),
              "thread exit warns: %s", out ? out : "");
    free(out);
    out = child_stderr(left_open_exit);
    CHECK_MSG(out && strstr(out, "(left_open_exit) has recorded 3 ops and grows with every op: "
                                 "a trace_freeze() or trace_abort() missing?") &&
                  strstr(out, "(left_open_exit) was never ended when the process exited (5 ops "
                              "recorded)"),
              "process exit and size warn: %s", out ? out : "");
    free(out);
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2, 2));
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_begin(NULL) == TG_ERR_STATE);
    CHECK_ERROR("already active on this thread");
    trace_input(x, "x");
    CHECK(trace_freeze() == NULL);
    CHECK_ERROR("no outputs");
    CHECK(!trace_active());

    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_output(x, "x_again") != TG_OK);
    CHECK_ERROR("does not depend on any recorded op");
    trace_abort();

    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_output(eager_relu(x), "y") == TG_OK);
    CHECK(trace_output(eager_neg(x), "y") != TG_OK);
    CHECK_ERROR("the name \"y\" is already an output");
    CHECK(trace_output(eager_neg(x), NULL) == TG_ERR_ARG);
    CHECK_ERROR("trace_output: a NULL name (every output needs one; replay returns outputs "
                "by name)");
    CHECK(trace_output(eager_neg(x), "") == TG_ERR_ARG);
    CHECK_ERROR("trace_output: an empty name");
    trace_abort();

    /* params: named (replay_set_param finds them by name) */
    eager_tensor *w = eager_ones(GRAPH_F32, TG_SHAPE(2, 2));
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_param(w, NULL) == TG_ERR_ARG);
    CHECK_ERROR("trace_param: a NULL name (every param needs one; replay_set_param finds "
                "params by name)");
    CHECK(trace_param(w, "") == TG_ERR_ARG);
    CHECK_ERROR("trace_param: an empty name");
    CHECK(trace_param(w, "w") == TG_OK);
    trace_abort();

    eager_tensor *c = eager_ones(GRAPH_F32, TG_SHAPE(2));
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    eager_add(x, c);
    CHECK(trace_input(c, "late") != TG_OK);
    CHECK_ERROR("already part of the trace (as const");
    CHECK(trace_dynamic(c, 0, "B") != TG_OK);
    CHECK_ERROR("not an input of this trace");
    trace_abort();

    CHECK(trace_output(x, "y") != TG_OK);
    CHECK_ERROR("no trace is active");

    /* a tensor of another thread's trace */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    other_thread_tensor = eager_relu(x);
    pthread_t th;
    void *ok = NULL;
    pthread_create(&th, NULL, other_thread, NULL);
    pthread_join(th, &ok);
    CHECK_MSG(ok != NULL, "other thread saw the error");
    trace_abort();

    /* writing into a traced intermediate */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    eager_tensor *y = eager_relu(x);
    CHECK(eager_data_mut(y) == NULL);
    CHECK_ERROR("writing into a traced inter tensor");
    trace_abort();
    eager_pool_pop();
}

/* A constant changed between uses is captured twice. */
static void test_constant_capture(void)
{
    eager_pool_push();
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2));
    eager_tensor *c = eager_full(GRAPH_F32, TG_SHAPE(2), 3.0);
    trace_begin(NULL);
    trace_input(x, "x");
    eager_tensor *a = eager_mul(x, c);
    ((float *)eager_data_mut(c))[0] = 5.0f;
    eager_tensor *b = eager_add(a, c);
    trace_output(b, "y");
    graph *g = trace_freeze();
    CHECK(g != NULL);
    if (g) {
        eager_tensor *out[1];
        CHECK(eager_interpret(g, &x, 1, out, 1, NULL) == TG_OK);
        const float *o = eager_peek(out[0]);
        CHECK(o[0] == 8.0f && o[1] == 6.0f); /* 1*3+5, 1*3+3 */
        eager_release(out[0]);
    }
    graph_free(g);
    eager_pool_pop();
}

/* One site, reached through two call paths of the same depth and frame
 * size: the stack cache must tell them apart (tracer/stack.c). */
__attribute__((noinline)) static eager_tensor *leaf(eager_tensor *x)
{
    eager_tensor *y = eager_relu(x);
    __asm__ volatile(""); /* no tail call */
    return y;
}
__attribute__((noinline, no_icf)) static eager_tensor *path_a(eager_tensor *x)
{
    eager_tensor *y = leaf(x);
    __asm__ volatile("");
    return y;
}
__attribute__((noinline, no_icf)) static eager_tensor *path_b(eager_tensor *x)
{
    eager_tensor *y = leaf(x);
    __asm__ volatile("");
    return y;
}

/* Rounds 0 and 1 trace the same paths afresh: the second trace finds the
 * stacks in the thread's cache, walked by the first, and must still give
 * each path its own, complete provenance; round 2 asks for less depth
 * than the cached walks have. */
static void test_stack_paths(void)
{
    for (int round = 0; round < 3; round++) {
        eager_pool_push();
        eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2));
        trace_opts o = trace_default_opts();
        if (round == 2)
            o.max_depth = 2;
        trace_begin(&o);
        trace_input(x, "x");
        eager_tensor *a[2], *b[2];
        volatile int twice = 2; /* a loop the compiler cannot unroll */
        for (int i = 0; i < twice; i++) { /* the same call sites twice */
            a[i] = path_a(x);
            b[i] = path_b(x);
        }
        trace_output(eager_add(eager_add(a[0], b[0]), eager_add(a[1], b[1])), "y");
        graph *g = trace_freeze();
        CHECK(g && g->nnodes == 7);
        if (g) {
            int32_t pa = g->nodes[0].prov[0], pb = g->nodes[1].prov[0];
            CHECK_MSG(pa != pb, "round %d: two call paths, two provenances", round);
            CHECK_MSG(g->nodes[2].prov[0] == pa && g->nodes[3].prov[0] == pb,
                      "round %d: the same path again reuses its provenance", round);
            const graph_prov *A = &g->provs[pa], *B = &g->provs[pb];
            CHECK(A->nframes >= 2 && B->nframes >= 2);
            CHECK_MSG(round < 2 || (A->nframes == 2 && B->nframes == 2),
                      "round 2: max_depth 2 gives 2 frames (got %d, %d)", A->nframes,
                      B->nframes);
            if (A->nframes >= 2 && B->nframes >= 2) {
                const char *fa = g->frames[A->frame0 + 1].func;
                const char *fb = g->frames[B->frame0 + 1].func;
                CHECK_MSG(fa && fb && strcmp(fa, "path_a") == 0 && strcmp(fb, "path_b") == 0,
                          "round %d: callers named path_a and path_b (got %s, %s)", round,
                          fa ? fa : "?", fb ? fb : "?");
            }
        }
        graph_free(g);
        eager_pool_pop();
    }
}

__attribute__((noinline)) static void test_stacks(void)
{
    eager_pool_push();
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2));
    trace_opts o = trace_default_opts();
    o.max_depth = 3;
    trace_begin(&o);
    trace_input(x, "x");
    trace_output(eager_relu(x), "y");
    graph *g = trace_freeze();
    CHECK(g && g->nprovs == 1);
    if (g) {
        const graph_prov *p = &g->provs[0];
        CHECK(p->nframes >= 1 && p->nframes <= 3);
        CHECK_MSG(p->nframes >= 1 && g->frames[p->frame0].func &&
                  strcmp(g->frames[p->frame0].func, "test_stacks") == 0,
                  "first frame is test_stacks (got %s)",
                  p->nframes ? (g->frames[p->frame0].func ? g->frames[p->frame0].func : "?") : "none");
        CHECK(p->nframes < 2 || (g->frames[p->frame0 + 1].func &&
                                 strcmp(g->frames[p->frame0 + 1].func, "main") == 0));
    }
    graph_free(g);
    o.capture_stack = 0;
    trace_begin(&o);
    trace_input(x, "x");
    trace_output(eager_relu(x), "y");
    g = trace_freeze();
    CHECK(g && g->nprovs == 1 && g->provs[0].nframes == 0);
    graph_free(g);
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_models();
    test_guards();
    test_dynamic();
    test_errors();
    test_left_open();
    test_constant_capture();
    test_stacks();
    test_stack_paths();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
