/*
 * test_trace.c - the tracer: traced MLP, conv block and attention block
 * replayed by the reference interpreter bit for bit; provenance naming this
 * file; guards; dynamic batch; error cases; stacks.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "tracer/trace.h"

/* ---- models, written with the eager API ---- */

typedef struct mlp_w {
    eager_tensor *w1, *b1, *w2, *b2;
} mlp_w;

static mlp_w mlp_make(void)
{
    mlp_w m = {eager_rand_normal(TG_SHAPE(16, 32), 1, 0, 0.2f),
               eager_rand_normal(TG_SHAPE(16), 2, 0, 0.1f),
               eager_rand_normal(TG_SHAPE(10, 16), 3, 0, 0.2f),
               eager_rand_normal(TG_SHAPE(10), 4, 0, 0.1f)};
    return m;
}

static void mlp_free(mlp_w *m)
{
    eager_release(m->w1);
    eager_release(m->b1);
    eager_release(m->w2);
    eager_release(m->b2);
}

static eager_tensor *mlp(eager_tensor *x, const mlp_w *m)
{
    eager_tensor *h = eager_relu(eager_linear(x, m->w1, m->b1));
    return eager_log_softmax(eager_linear(h, m->w2, m->b2), -1);
}

static eager_tensor *conv_block(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *y = eager_conv2d(x, p[0], EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1);
    y = eager_batch_norm(y, p[1], p[2], p[3], p[4], 1e-5f);
    y = eager_relu(y);
    y = eager_max_pool2d(y, TG_INTS(2), TG_NOINTS, TG_NOINTS);
    y = eager_conv2d(y, p[5], p[6], TG_NOINTS, TG_NOINTS, TG_NOINTS, 1);
    return eager_flatten(eager_global_avg_pool(y), 1, -1);
}

static eager_tensor *attention(eager_tensor *x, eager_tensor *const *p)
{
    /* x [2,5,16], 2 heads of 8 */
    eager_tensor *h = eager_layer_norm(x, p[0], p[1], -1, 1e-5f);
    eager_tensor *qkv = eager_linear(h, p[2], p[3]);
    eager_tensor *part[3];
    if (eager_split(qkv, -1, TG_INTS(16, 16, 16), part, 3) != 3)
        return NULL;
    eager_tensor *heads[3];
    for (int i = 0; i < 3; i++)
        heads[i] = eager_transpose(eager_reshape(part[i], TG_INTS(2, 5, 2, 8)),
                                   TG_INTS(0, 2, 1, 3));
    eager_tensor *s = eager_mul(eager_matmul(heads[0], heads[1], 0, 1),
                                eager_scalar(1.0 / sqrt(8.0)));
    eager_tensor *a = eager_matmul(eager_softmax(s, -1), heads[2], 0, 0);
    a = eager_reshape(eager_transpose(a, TG_INTS(0, 2, 1, 3)), TG_INTS(2, 5, 16));
    return eager_add(eager_linear(a, p[4], p[5]), x);
}

/* Bitwise equality of two f32 tensors. */
static int same_bits(eager_tensor *a, eager_tensor *b)
{
    return a && b && eager_nbytes(a) == eager_nbytes(b) &&
           eager_ndim(a) == eager_ndim(b) &&
           memcmp(eager_peek(a), eager_peek(b), eager_nbytes(a)) == 0;
}

/* Every node names a line of this file. */
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
        if (!strstr(p->file, "test_trace.c") || p->line <= 0)
            ok = 0;
    }
    CHECK_MSG(ok && g->nnodes > 0, "every node names test_trace.c:LINE");
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
    }
    eager_pool_pop();
    return g;
}

static eager_tensor *mlp_fn(eager_tensor *x, eager_tensor *const *p)
{
    mlp_w m = {p[0], p[1], p[2], p[3]};
    return mlp(x, &m);
}

static void test_models(void)
{
    mlp_w m = mlp_make();
    eager_tensor *mp[4] = {m.w1, m.b1, m.w2, m.b2};
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(4, 32), 9, -1, 1);
    graph *g = trace_and_check("mlp", x, mlp_fn, mp, 4);
    if (g) {
        CHECK(g->ninputs == 1 && g->noutputs == 1 && g->nnodes == 4);
        int params = 0;
        for (int32_t i = 0; i < g->nvalues; i++)
            params += g->values[i].kind == GRAPH_VALUE_PARAM;
        CHECK(params == 4);
    }
    graph_free(g);
    eager_release(x);

    eager_tensor *cp[7] = {
        eager_rand_normal(TG_SHAPE(8, 3, 3, 3), 11, 0, 0.3f),
        eager_rand_uniform(TG_SHAPE(8), 12, 0.5f, 1.5f),
        eager_rand_normal(TG_SHAPE(8), 13, 0, 0.1f),
        eager_rand_normal(TG_SHAPE(8), 14, 0, 0.1f),
        eager_rand_uniform(TG_SHAPE(8), 15, 0.5f, 1.5f),
        eager_rand_normal(TG_SHAPE(4, 8, 1, 1), 16, 0, 0.3f),
        eager_rand_normal(TG_SHAPE(4), 17, 0, 0.1f)};
    x = eager_rand_uniform(TG_SHAPE(2, 3, 8, 8), 18, -1, 1);
    g = trace_and_check("conv_block", x, conv_block, cp, 7);
    graph_free(g);
    eager_release(x);
    for (int i = 0; i < 7; i++)
        eager_release(cp[i]);

    eager_tensor *ap[6] = {
        eager_rand_uniform(TG_SHAPE(16), 21, 0.5f, 1.5f),
        eager_rand_normal(TG_SHAPE(16), 22, 0, 0.1f),
        eager_rand_normal(TG_SHAPE(48, 16), 23, 0, 0.25f),
        eager_rand_normal(TG_SHAPE(48), 24, 0, 0.1f),
        eager_rand_normal(TG_SHAPE(16, 16), 25, 0, 0.25f),
        eager_rand_normal(TG_SHAPE(16), 26, 0, 0.1f)};
    x = eager_rand_uniform(TG_SHAPE(2, 5, 16), 27, -1, 1);
    g = trace_and_check("attention", x, attention, ap, 6);
    if (g) {
        int consts = 0;
        for (int32_t i = 0; i < g->nvalues; i++)
            consts += g->values[i].kind == GRAPH_VALUE_CONST;
        CHECK(consts == 1); /* the 1/sqrt(8) scalar made inside the trace */
    }
    graph_free(g);
    eager_release(x);
    for (int i = 0; i < 6; i++)
        eager_release(ap[i]);
    mlp_free(&m);
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
    mlp_w m = mlp_make();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(4, 32), 31, -1, 1);
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_dynamic(x, 0, "B") == TG_OK);
    trace_output(mlp(x, &m), "y");
    graph *g = trace_freeze();
    CHECK(g != NULL);
    if (g) {
        const graph_value *y = &g->values[g->outputs[0].value];
        CHECK(y->dyn == 1 && g->nsyms == 1 && strcmp(g->syms[y->sym[0]].name, "B") == 0);
        for (int b = 0; b < 3; b++) {
            int64_t batch = b == 0 ? 1 : b == 1 ? 32 : 4;
            eager_tensor *xb = eager_rand_uniform(TG_SHAPE(batch, 32), 40 + b, -1, 1);
            eager_tensor *want = mlp(xb, &m), *out[1] = {NULL};
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
    mlp_free(&m);
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
    test_constant_capture();
    test_stacks();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
