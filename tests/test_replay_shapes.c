/*
 * test_replay_shapes.c - a plan at sizes other than the traced ones, as a
 * caller bringing its own buffers meets it: the output types for given
 * input shapes (replay_output_types) and which dims follow which symbol,
 * output buffers given by size with their type left zero, the hint for a
 * reshape that holds the traced batch, and the names listed when a name
 * is wrong; on the CPU and (where there is a device) OpenCL.  Values
 * against a naive MLP written here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/tgraph.h"
#include "models.h"
#include "optimize/opt.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracer/trace.h"

/* model_mlp (models.c) by loops: x [b,32] -> linear 16 -> relu -> linear
 * 10 -> log_softmax, into y [b,10]. */
static void naive_mlp(const float *x, int64_t b, eager_tensor *const *p, float *y)
{
    const float *w0 = eager_peek(p[0]), *b0 = eager_peek(p[1]);
    const float *w1 = eager_peek(p[2]), *b1 = eager_peek(p[3]);
    for (int64_t r = 0; r < b; r++) {
        double h[16], z[10], mx = -INFINITY, sum = 0;
        for (int j = 0; j < 16; j++) {
            double acc = b0[j];
            for (int k = 0; k < 32; k++)
                acc += (double)x[r * 32 + k] * w0[j * 32 + k];
            h[j] = acc > 0 ? acc : 0;
        }
        for (int j = 0; j < 10; j++) {
            double acc = b1[j];
            for (int k = 0; k < 16; k++)
                acc += h[k] * w1[j * 16 + k];
            z[j] = acc;
            mx = acc > mx ? acc : mx;
        }
        for (int j = 0; j < 10; j++)
            sum += exp(z[j] - mx);
        for (int j = 0; j < 10; j++)
            y[r * 10 + j] = (float)(z[j] - mx - log(sum));
    }
}

/* The MLP traced at batch 4, optimized at -O2 and through a .tgraph. */
static replay_plan *mlp_plan(const model *m)
{
    eager_tensor *x = model_input(m, 4, 900);
    graph *g = model_trace(m, x);
    opt_options o = OPT_OPTIONS_INIT;
    o.keep_params = 1;
    char err[512] = "";
    void *buf = NULL;
    size_t len = 0;
    graph *h = NULL;
    if (g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK &&
        format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        h = format_load_mem(buf, len, "mlp.tgraph", err, sizeof err);
    replay_plan *p = h ? replay_compile(h, NULL, err, sizeof err) : NULL;
    CHECK_MSG(p != NULL, "optimize, save, load, compile: %s", err);
    free(buf);
    graph_free(h);
    graph_free(g);
    eager_release(x);
    return p;
}

static void test_shapes_at_other_sizes(void)
{
    model m = model_make(MODEL_MLP);
    replay_plan *p = mlp_plan(&m);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK(s != NULL);
    if (!s) {
        replay_plan_free(p);
        model_free(&m);
        return;
    }
    /* the stored types are the traced ones; the symbols say what moves */
    CHECK(replay_output_type(p, 0)->dim[0] == 4 && replay_input_type(p, 0)->dim[0] == 4);
    CHECK(replay_input_dim_symbol(p, 0, 0) && !strcmp(replay_input_dim_symbol(p, 0, 0), "B"));
    CHECK(replay_output_dim_symbol(p, 0, 0) && !strcmp(replay_output_dim_symbol(p, 0, 0), "B"));
    CHECK(replay_input_dim_symbol(p, 0, 1) == NULL && replay_output_dim_symbol(p, 0, 1) == NULL);
    CHECK(replay_output_dim_symbol(p, 0, 2) == NULL && replay_output_dim_symbol(p, 1, 0) == NULL);
    CHECK(replay_input_dim_symbol(p, -1, 0) == NULL && replay_input_dim_symbol(NULL, 0, 0) == NULL);

    /* one output tensor, its type left zero, reused at every size */
    float *ybuf = malloc(33 * 10 * sizeof(float)), *want = malloc(33 * 10 * sizeof(float));
    replay_tensor out = {.name = "y", .data = ybuf, .size = 33 * 10 * sizeof(float)};
    const int64_t batches[] = {1, 7, 33, 4};
    for (int b = 0; b < 4; b++) {
        eager_tensor *x = model_input(&m, batches[b], 910 + (uint64_t)b);
        /* the query needs the shapes only */
        replay_tensor shape_only = {.name = "x", .type = *eager_type(x)};
        graph_type t[1];
        char err[512] = "";
        CHECK_MSG(replay_output_types(p, &shape_only, 1, t, 1, err, sizeof err) == TG_OK, "%s",
                  err);
        CHECK_MSG(t[0].dtype == GRAPH_F32 && t[0].ndim == 2 && t[0].dim[0] == batches[b] &&
                      t[0].dim[1] == 10, "batch %lld: f32[%lld,%lld]", (long long)batches[b],
                  (long long)t[0].dim[0], (long long)t[0].dim[1]);
        replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)};
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "batch %lld: %s",
                  (long long)batches[b], replay_session_error(s));
        CHECK(out.type.ndim == 2 && out.type.dim[0] == batches[b] && out.type.dim[1] == 10 &&
              out.data == ybuf);
        naive_mlp(eager_peek(x), batches[b], m.params, want);
        CHECK_FLOATS(ybuf, want, batches[b] * 10, 1e-4);
        eager_release(x);
    }

    /* too small a buffer, a zero type without a size, an input's size */
    eager_tensor *x7 = model_input(&m, 7, 920);
    replay_tensor in = {.name = "x", .type = *eager_type(x7), .input = eager_peek(x7)};
    replay_tensor small = {.name = "y", .data = ybuf, .size = 100};
    CHECK(replay_run(s, &in, 1, &small, 1) == TG_ERR_SHAPE);
    CHECK_MSG(!strcmp(replay_session_error(s), "replay: output \"y\" is f32[7,10] (280 bytes), "
                      "the buffer given holds 100 (.size)"), "%s", replay_session_error(s));
    replay_tensor zero = {.name = "y", .data = ybuf};
    CHECK(replay_run(s, &in, 1, &zero, 1) == TG_ERR_SHAPE);
    CHECK_MSG(!strcmp(replay_session_error(s), "replay: output \"y\" is f32[7,10], the buffer "
                      "given is f32[] (a buffer for any shape: set .size to the bytes it holds; "
                      "replay_output_types gives the shapes for given inputs)"),
              "%s", replay_session_error(s));
    in.size = 100;
    CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_SHAPE);
    CHECK_MSG(!strcmp(replay_session_error(s), "replay: input 0 (\"x\") is f32[7,32] (896 bytes), "
                      "its .size says the buffer holds 100"), "%s", replay_session_error(s));
    in.size = 896;
    CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));

    /* the query's refusals */
    graph_type t[2];
    char err[512] = "";
    replay_tensor bad = {.name = "x", .type = {GRAPH_F32, 2, {7, 31}}};
    CHECK(replay_output_types(p, &bad, 1, t, 1, err, sizeof err) == TG_ERR_SHAPE);
    CHECK_MSG(!strcmp(err, "replay: input \"x\" is f32[7,31], the plan takes f32[B,32] (only "
                      "dims marked dynamic, by name, may change, consistently)"), "%s", err);
    bad.name = "z";
    CHECK(replay_output_types(p, &bad, 1, t, 1, err, sizeof err) == TG_ERR_ARG);
    CHECK_MSG(!strcmp(err, "replay: the plan has no input named \"z\" (inputs: x)"), "%s", err);
    CHECK(replay_output_types(p, &in, 1, t, 2, err, sizeof err) == TG_ERR_ARG);
    CHECK_MSG(!strcmp(err, "replay_output_types: the plan makes 1 outputs, asked for 2"), "%s",
              err);
    CHECK(replay_output_types(NULL, &in, 1, t, 1, err, sizeof err) == TG_ERR_NULL);
    CHECK(replay_output_types(p, &in, 1, NULL, 1, NULL, 0) == TG_ERR_NULL);
    CHECK(replay_output_types(p, &in, 1, NULL, 0, NULL, 0) == TG_OK); /* checks only */

    eager_release(x7);
    free(ybuf);
    free(want);
    replay_session_free(s);
    replay_plan_free(p);
    model_free(&m);
}

/* The same buffers on an OpenCL plan (its own output path): a zero type
 * with a size, too small a size, a wrong output name.  Skipped (with a
 * line saying so) where there is no OpenCL device. */
static void test_opencl_sizes(void)
{
    if (!check_opencl_device(NULL))
        return;
    model m = model_make(MODEL_MLP);
    eager_tensor *x = model_input(&m, 4, 940);
    graph *g = model_trace(&m, x);
    replay_opts o = REPLAY_OPTS_INIT;
    o.device = "opencl";
    char err[1024] = "";
    replay_plan *p = g ? replay_compile(g, &o, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "OpenCL plan: %s", err);
    if (s) {
        float y[7 * 10], want[7 * 10];
        eager_tensor *x7 = model_input(&m, 7, 941);
        replay_tensor in = {.name = "x", .type = *eager_type(x7), .input = eager_peek(x7)};
        replay_tensor out = {.name = "y", .data = y, .size = sizeof y};
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
        CHECK(out.type.ndim == 2 && out.type.dim[0] == 7 && out.type.dim[1] == 10);
        naive_mlp(eager_peek(x7), 7, m.params, want);
        CHECK_FLOATS(y, want, 7 * 10, 1e-4);
        out.size = 100;
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_SHAPE);
        CHECK_MSG(!strcmp(replay_session_error(s), "replay: output \"y\" is f32[7,10] (280 "
                          "bytes), the buffer given holds 100 (.size)"),
                  "%s", replay_session_error(s));
        /* a cl_mem of the exact type, but said to be smaller: refused, and
         * not written by the nodes directly (direct_outputs) either */
        cl_context ctx = replay_plan_handle(p, "cl_context");
        cl_device_id dev;
        clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
        cl_int e;
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
        float sentinel[7 * 10], back[7 * 10];
        for (int i = 0; i < 70; i++)
            sentinel[i] = -12345.0f;
        cl_mem yb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   sizeof sentinel, sentinel, &e);
        replay_tensor dout = {.name = "y", .type = out.type, .buffer = yb, .size = 100};
        CHECK(replay_run(s, &in, 1, &dout, 1) == TG_ERR_SHAPE);
        CHECK_MSG(strstr(replay_session_error(s), "the buffer given holds 100 (.size)"), "%s",
                  replay_session_error(s));
        clEnqueueReadBuffer(q, yb, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
        CHECK_MSG(!memcmp(back, sentinel, sizeof back), "a buffer said to hold 100 bytes was "
                  "written: %g", back[0]);
        dout.size = sizeof sentinel; /* now it fits: written on the device */
        CHECK_MSG(replay_run(s, &in, 1, &dout, 1) == TG_OK, "%s", replay_session_error(s));
        clEnqueueReadBuffer(q, yb, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
        CHECK_FLOATS(back, want, 7 * 10, 1e-4);
        clReleaseMemObject(yb);
        clReleaseCommandQueue(q);
        out.name = "logits";
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_ARG);
        CHECK_MSG(!strcmp(replay_session_error(s),
                          "replay: the plan has no output named \"logits\" (outputs: y)"),
                  "%s", replay_session_error(s));
        eager_release(x7);
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_release(x);
    model_free(&m);
}

/* A wrong name at the API lists the names the plan has. */
static void test_names_listed(void)
{
    model m = model_make(MODEL_MLP);
    replay_plan *p = mlp_plan(&m);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK(s != NULL);
    if (s) {
        eager_tensor *x = model_input(&m, 2, 930);
        replay_tensor in = {.name = "z", .type = *eager_type(x), .input = eager_peek(x)};
        replay_tensor out = {.name = "y"};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_ARG);
        CHECK_MSG(!strcmp(replay_session_error(s),
                          "replay: the plan has no input named \"z\" (inputs: x)"),
                  "%s", replay_session_error(s));
        in.name = "x";
        out.name = "logits";
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_ARG);
        CHECK_MSG(!strcmp(replay_session_error(s),
                          "replay: the plan has no output named \"logits\" (outputs: y)"),
                  "%s", replay_session_error(s));
        char err[512] = "";
        float w[4] = {0};
        CHECK(replay_set_param(p, "fc.weight", w, sizeof w, err, sizeof err) == TG_ERR_ARG);
        CHECK_MSG(!strcmp(err, "replay_set_param: no param named \"fc.weight\" (params: p0, p1, "
                          "p2, p3; params folded into constants by the optimizer cannot be "
                          "swapped: -O2 and above fold them unless opt_options.keep_params is "
                          "set, tracegraph opt --keep-params)"), "%s", err);
        eager_release(x);
    }
    replay_session_free(s);
    replay_plan_free(p);
    model_free(&m);
}

/* y = relu(reshape(x, shape)) with x [4,6], batch dynamic: the reshape's
 * target holds the traced 4; replayed at 7 it fails with the remedy. */
static void check_reshape_hint(graph_ints shape, const char *want)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(4, 6), 5, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "batch");
    trace_output(eager_relu(eager_reshape(x, shape)), "y");
    graph *g = trace_freeze();
    replay_plan *p = g ? replay_compile(g, NULL, NULL, 0) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", eager_error());
    if (s) {
        float x7[7 * 6] = {0};
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {7, 6}}, .data = x7};
        replay_tensor out = {.name = "y"};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_SHAPE);
        const char *e = replay_session_error(s);
        /* the node and its call site come first; then the reason and hint */
        const char *head = "replay: node 0 (reshape at test_replay_shapes.c:";
        const char *tail = strstr(e, "): reshape:");
        CHECK_MSG(!strncmp(e, head, strlen(head)) && strstr(e, " check_reshape_hint): ") && tail &&
                      !strcmp(tail + 3, want), "%s\nwant ...): %s", e, want);
        graph_type t[1];
        char err[1536] = "";
        CHECK(replay_output_types(p, &in, 1, t, 1, err, sizeof err) == TG_ERR_SHAPE);
        CHECK_MSG(!strcmp(err, e), "the query says the same: %s", err);
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

static void test_reshape_hint(void)
{
    check_reshape_hint(TG_INTS(4, 3, 2),
                       "reshape: [7,6]: cannot reshape [7,6] (42 elements) to [4,3,2] "
                       "(24 elements) (this node was specialized on the traced sizes; its "
                       "target shape [4,3,2] holds the traced size of \"batch\" (4) at dim 0, "
                       "now 7: write -1 there, TG_SHAPE(-1, 3, 2), to follow the input)");
    check_reshape_hint(TG_INTS(4, -1),
                       "reshape: [7,6]: cannot reshape [7,6] (42 elements) to [4,-1] "
                       "(this node was specialized on the traced sizes; its "
                       "target shape [4,-1] holds the traced size of \"batch\" (4) at dim 0, "
                       "now 7: compute that dim from the input's shape)");
}

int main(void)
{
    test_shapes_at_other_sizes();
    test_names_listed();
    test_reshape_hint();
    test_opencl_sizes();
    return check_done();
}
