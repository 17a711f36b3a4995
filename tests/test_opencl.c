/*
 * test_opencl.c - the OpenCL replay runtime (replay/opencl): devices,
 * compile-time refusals with call sites and build logs, user cl_mem
 * inputs and outputs, dynamic batch, guards, data errors raised by
 * kernels (gather, from an empty axis too, integer division,
 * gather_elements, scatter_elements),
 * param swap, many sessions on threads, the program cache, out
 * of memory, and the count of live cl objects back to zero.  Results are
 * checked against naive loops written here or the reference interpreter.
 *
 * No OpenCL platform: "SKIP: ..." and exit 77 (ctest: skipped).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "models.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

static const replay_opts OCL = {.threads = 1, .device = "opencl"};
static char devname[128];

static replay_tensor input_of(eager_tensor *t, const char *name)
{
    return (replay_tensor){.name = name, .type = *eager_type(t), .input = eager_peek(t)};
}

/* y = gelu(x * w + 1) - relu(x): a graph traced from this file (sites). */
static int site_line;
static eager_tensor *small_model(eager_tensor *x, eager_tensor *w)
{
    eager_tensor *a = eager_add(eager_mul(x, w), eager_scalar(1));
    site_line = __LINE__ + 1;
    return eager_sub(eager_gelu(a), eager_relu(x));
}

static float ref_small(float x, float w)
{
    double a = (double)x * w + 1;
    return (float)(0.5 * a * (1 + erf(a / sqrt(2))) - (x > 0 ? x : 0));
}

static graph *trace_small(int64_t batch, int dynamic)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_normal(TG_SHAPE(batch, 8), 5, 0, 1);
    eager_tensor *w = eager_rand_normal(TG_SHAPE(8), 6, 0, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    if (dynamic)
        trace_dynamic(x, 0, "B");
    trace_param(w, "w");
    trace_output(small_model(x, w), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    return g;
}

/* The OpenCL devices by name: listed as "opencl:N", found by index and by
 * a text of their description; a wrong name lists the names there are. */
static void test_devices(void)
{
    replay_device_info d[8];
    char err[1024] = "", want[512];
    int n = replay_backend_devices("opencl", d, 8, err, sizeof err);
    CHECK_MSG(n >= 1 && !strcmp(d[0].name, "opencl:0") && d[0].device[0] &&
              strstr(d[0].details, "GEMM "), "devices: %s", err);
    for (int i = 1; i < n && i < 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "opencl:%d", i);
        CHECK_MSG(!strcmp(d[i].name, name), "device %d is named %s", i, d[i].name);
    }
    CHECK(replay_backend_devices("opencl", NULL, 0, NULL, 0) == n); /* counts only */
    graph *g = trace_small(4, 0);
    replay_opts o = OCL;
    o.device = "opencl:no such device";
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL);
    snprintf(want, sizeof want, "replay: no device \"opencl:no such device\" (devices: opencl:0 = %s",
             n >= 1 ? d[0].device : "?");
    CHECK_MSG(strstr(err, want) == err, "\"%s\" starts with \"%s\"", err, want);
    o.device = "opencl:99";
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "replay: no device \"opencl:99\" (devices: opencl:0 = ") == err, "%s", err);
    replay_device_info found;
    char text[300];
    /* by a text of the description: the device's model name, after the platform */
    snprintf(text, sizeof text, "opencl:%s", n >= 1 ? d[n - 1].device : "?");
    CHECK_MSG(replay_backend_find(text, &found, err, sizeof err) == TG_OK &&
              !strcmp(found.device, d[n - 1].device), "%s: %s", text, err);
    o.device = text;
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL && replay_plan_handle(p, "cl_context") != NULL, "by name: %s", err);
    CHECK(p && !strcmp(replay_plan_property(p, "backend"), "opencl"));
    CHECK_MSG(p && !strcmp(replay_plan_property(p, "device"), found.name), "device %s, not %s",
              p ? replay_plan_property(p, "device") : "?", found.name);
    CHECK(p && replay_plan_property(p, "gemm") && replay_plan_property(p, "device_buffers"));
    CHECK(p && replay_plan_handle(p, "cuda_stream") == NULL &&
          replay_plan_property(p, "colour") == NULL);
    /* a device buffer of the plan, written at creation, read by a run */
    float xs[32], ws[8];
    for (int i = 0; i < 32; i++)
        xs[i] = (float)i / 7.0f - 2;
    void *buf = p ? replay_buffer_new(p, sizeof xs, xs, err, sizeof err) : NULL;
    CHECK_MSG(buf != NULL, "replay_buffer_new: %s", err);
    if (p && buf) {
        replay_session *s = replay_session_new(p, NULL, 0);
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {4, 8}}, .buffer = buf};
        float y[32];
        replay_tensor out = {.name = "y", .data = y, .size = sizeof y};
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
        /* w: the param the trace recorded (seed 6) */
        eager_pool_push();
        eager_tensor *w = eager_rand_normal(TG_SHAPE(8), 6, 0, 1);
        memcpy(ws, eager_peek(w), sizeof ws);
        eager_pool_pop();
        float want_y[32];
        for (int i = 0; i < 32; i++)
            want_y[i] = ref_small(xs[i], ws[i % 8]);
        CHECK_FLOATS(y, want_y, 32, 1e-4);
        replay_session_free(s);
    }
    replay_buffer_free(p, buf);
    replay_plan_free(p);
    /* the CPU has no device buffers */
    replay_plan *cpu = replay_compile(g, NULL, err, sizeof err);
    CHECK(cpu && replay_buffer_new(cpu, 16, NULL, err, sizeof err) == NULL);
    CHECK_MSG(!strcmp(err, "replay: backend cpu has no device buffers: pass .data"), "%s", err);
    CHECK(cpu && replay_plan_property(cpu, "gemm") == NULL &&
          replay_plan_property(cpu, "device_buffers") == NULL &&
          replay_plan_handle(cpu, "cl_context") == NULL);
    replay_plan_free(cpu);
    graph_free(g);
}

/*
 * The deprecated entry points (replay.h, kept one release): the kind
 * REPLAY_OPENCL with the device alone in .device, replay_opencl_devices,
 * _context, _gemm and _shutdown, as programs written against them use
 * them; the warnings they carry are silenced here only.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_deprecated(void)
{
    replay_device d[8];
    char err[1024] = "";
    int n = replay_opencl_devices(d, 8, err, sizeof err);
    CHECK_MSG(n >= 1 && d[0].index == 0 && d[0].name[0] && d[0].platform[0], "devices: %s", err);
    snprintf(devname, sizeof devname, "%s", n >= 1 ? d[0].name : "?");
    graph *g = trace_small(4, 0);
    replay_opts o = {REPLAY_OPENCL, 1, 0, NULL};
    o.device = "no such device";
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "no device \"opencl:no such device\" (devices: opencl:0 = "), "%s", err);
    o.device = "99";
    CHECK(replay_compile(g, &o, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "no device \"opencl:99\""), "%s", err);
    o.device = n >= 1 ? d[0].name : "0"; /* by name substring */
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL && replay_opencl_context(p) != NULL, "by name: %s", err);
    CHECK(p && replay_opencl_context(p) == replay_plan_handle(p, "cl_context"));
    CHECK(p && replay_opencl_gemm(p) && !strcmp(replay_opencl_gemm(p), replay_plan_property(p, "gemm")));
    CHECK(replay_opencl_context(NULL) == NULL && replay_opencl_gemm(NULL) == NULL);
    replay_plan_free(p);
    o.device = "opencl:0"; /* half moved to the names: the full name works too */
    p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p && !strcmp(replay_plan_property(p, "device"), "opencl:0"), "%s", err);
    replay_plan_free(p);
    o.device = NULL; /* the first device */
    p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p && !strcmp(replay_plan_property(p, "device"), "opencl:0"), "%s", err);
    replay_plan_free(p);
    replay_opts c = {REPLAY_CPU, 1, 0, NULL};
    p = replay_compile(g, &c, err, sizeof err);
    CHECK(p && replay_opencl_context(p) == NULL && replay_opencl_gemm(p) == NULL &&
          !strcmp(replay_plan_property(p, "backend"), "cpu"));
    replay_plan_free(p);
    graph_free(g);
    replay_opencl_shutdown();
}
#pragma GCC diagnostic pop

/* ---- compile-time refusals, with the node's call site ---- */

static tg_status refuse_prepare(ocl_prep *c)
{
    return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "refused by the test");
}

static tg_status broken_prepare(ocl_prep *c)
{
    return ocl_prep_program(c, "fused", "__kernel void k(__global float *y) { y[0] = nope; }",
                            NULL);
}

static tg_status no_enqueue(ocl_launch *l) { return ocl_fail(l, TG_ERR_STATE, "not reached"); }

static void test_refusals(void)
{
    static const ocl_op refuse = {refuse_prepare, no_enqueue}, broken = {broken_prepare, no_enqueue};
    graph *g = trace_small(4, 0);
    char err[4096] = "", site[128], want[256];
    snprintf(site, sizeof site, "test_opencl.c:%d small_model", site_line);
    const ocl_op *gelu = ocl_ops_replace(GRAPH_OP_gelu, &refuse);
    CHECK(replay_compile(g, &OCL, err, sizeof err) == NULL);
    snprintf(want, sizeof want, "op gelu is not supported on device %s: refused by the test",
             devname);
    CHECK_MSG(strstr(err, want) && strstr(err, site), "\"%s\" says %s at %s", err, want, site);
    ocl_ops_replace(GRAPH_OP_gelu, NULL);
    CHECK(replay_compile(g, &OCL, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "op gelu is not supported") && strstr(err, "no OpenCL kernel") &&
              strstr(err, site), "%s", err);
    ocl_ops_replace(GRAPH_OP_gelu, &broken);
    CHECK(replay_compile(g, &OCL, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "OpenCL build failed") && strstr(err, "build log") &&
              strstr(err, "nope") && strstr(err, site), "build failure: %s", err);
    /* supports_op is asked for every node before any is prepared: sub,
     * after the broken gelu, is refused and nothing is built */
    const ocl_op *sub = ocl_ops_replace(GRAPH_OP_sub, NULL);
    long builds = ocl_builds();
    CHECK(replay_compile(g, &OCL, err, sizeof err) == NULL);
    snprintf(want, sizeof want, "op sub is not supported on device %s: no OpenCL kernel", devname);
    CHECK_MSG(strstr(err, want) && strstr(err, site) && !strstr(err, "nope"),
              "\"%s\" says %s at %s", err, want, site);
    CHECK_MSG(ocl_builds() == builds, "%ld programs built before the refusal",
              ocl_builds() - builds);
    ocl_ops_replace(GRAPH_OP_sub, sub);
    ocl_ops_replace(GRAPH_OP_gelu, gelu);
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    CHECK_MSG(p != NULL, "restored: %s", err);
    replay_plan_free(p);
    graph_free(g);
    /* More elements than the kernels' 32-bit indexing: refused at compile. */
    static const char big[] = "graph big(%x: f32[65536,32769]) -> (y: f32[65536,32769]) {\n"
                              "  %1: f32[65536,32769] = relu(%x)\n  return y = %1\n}\n";
    g = graph_parse(big, sizeof big - 1, err, sizeof err);
    CHECK_MSG(g != NULL, "parse: %s", err);
    CHECK(g && replay_compile(g, &OCL, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "op relu is not supported on device") &&
                  strstr(err, "2147549184 elements exceeds the OpenCL kernels' 32-bit indexing"),
              "32-bit limit: %s", err);
    graph_free(g);
}

/* ---- runs ---- */

/* Dynamic batch: one plan at batches 4, 1, 9; param swap. */
static void test_dynamic_and_params(void)
{
    graph *g = trace_small(4, 1);
    char err[1024] = "";
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (p) { /* an OpenCL plan's arena is device memory: no host workspace */
        static _Alignas(64) char host[4096];
        CHECK(replay_session_create(p, host, sizeof host, err, sizeof err) == NULL);
        CHECK_MSG(strstr(err, "the workspace must be NULL"), "%s", err);
    }
    float w[8], w2[8];
    check_fill(w, 8, 6, -1, 1); /* overwritten below: the traced w is not this */
    for (int i = 0; i < 8; i++)
        w2[i] = 0.25f * (float)(i - 3);
    const graph_value *wv = NULL;
    for (int32_t v = 0; g && v < g->nvalues; v++)
        if (g->values[v].kind == GRAPH_VALUE_PARAM)
            wv = &g->values[v];
    if (wv)
        memcpy(w, wv->data, sizeof w);
    for (int round = 0; s && round < 2; round++) {
        if (round == 1)
            CHECK(replay_set_param(p, "w", w2, sizeof w2, err, sizeof err) == TG_OK);
        const float *wr = round ? w2 : w;
        int64_t batches[3] = {4, 1, 9};
        for (int b = 0; b < 3; b++) {
            int64_t n = batches[b] * 8;
            float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
            check_fill(x, n, 40 + (uint64_t)b, -2, 2);
            replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {batches[b], 8}}, .input = x};
            replay_tensor out = {.name = "y", .type = {GRAPH_F32, 2, {batches[b], 8}}, .data = y};
            CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "batch %lld: %s",
                      (long long)batches[b], replay_session_error(s));
            float worst = 0;
            for (int64_t i = 0; i < n; i++)
                worst = fmaxf(worst, (float)check_abs_diff(y[i], ref_small(x[i], wr[i % 8])));
            CHECK_MSG(worst < 1e-5f, "round %d batch %lld: max error %g", round,
                      (long long)batches[b], worst);
            free(x);
            free(y);
        }
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/* The caller's cl_mem as input and output: no host copies. */
static void test_user_buffers(void)
{
    graph *g = trace_small(3, 0);
    char err[1024] = "";
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (!s) {
        replay_plan_free(p);
        graph_free(g);
        return;
    }
    cl_context ctx = replay_plan_handle(p, "cl_context");
    cl_device_id dev;
    clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    float x[24], y[24], host_y[24];
    check_fill(x, 24, 9, -2, 2);
    cl_mem xb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x, x, &e);
    cl_mem yb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof y, NULL, &e);
    graph_type t = {GRAPH_F32, 2, {3, 8}};
    replay_tensor in = {.name = "x", .type = t, .buffer = xb},
                  out = {.name = "y", .type = t, .buffer = yb};
    CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
    clEnqueueReadBuffer(q, yb, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL);
    replay_tensor hin = {.name = "x", .type = t, .input = x},
                  hout = {.name = "y", .type = t, .data = host_y};
    CHECK(replay_run(s, &hin, 1, &hout, 1) == TG_OK);
    CHECK_MSG(!memcmp(y, host_y, sizeof y), "cl_mem in/out == host in/out");
    /* a host output handed out by the session */
    replay_tensor own = {.name = "y"};
    CHECK(replay_run(s, &in, 1, &own, 1) == TG_OK && own.data &&
          !memcmp(own.data, host_y, sizeof y) && own.type.dim[0] == 3);
    replay_tensor bad = {.name = "y", .type = {GRAPH_F32, 2, {4, 8}}, .buffer = yb};
    CHECK(replay_run(s, &in, 1, &bad, 1) == TG_ERR_SHAPE);
    CHECK_MSG(strstr(replay_session_error(s), "output \"y\" is f32[3,8], the buffer given is "
                     "f32[4,8]"), "%s", replay_session_error(s));
    /* a CPU plan refuses device buffers */
    replay_plan *cpu = replay_compile(g, NULL, err, sizeof err);
    replay_session *cs = cpu ? replay_session_new(cpu, NULL, 0) : NULL;
    CHECK(cs && replay_run(cs, &in, 1, &hout, 1) == TG_ERR_ARG &&
          strstr(replay_session_error(cs), "input 0 is a device buffer, but the plan runs on "
                 "the CPU"));
    CHECK(cs && replay_run(cs, &hin, 1, &out, 1) == TG_ERR_ARG &&
          strstr(replay_session_error(cs), "output \"y\" is a device buffer"));
    replay_session_free(cs);
    replay_plan_free(cpu);
    clReleaseMemObject(xb);
    clReleaseMemObject(yb);
    clReleaseCommandQueue(q);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/* Guards are checked on the host after reading their value back. */
static void test_guards(void)
{
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){1, 2, -0.5f}));
    trace_begin(NULL);
    trace_input(x, "x");
    trace_output(model_branchy(x), "y");
    graph *g = trace_freeze();
    char err[1024] = "";
    replay_plan *p = g ? replay_compile(g, &OCL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        float y[3];
        replay_tensor in = input_of(x, "x"), out = {.name = "y", .type = *eager_type(x), .data = y};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_OK && y[2] == 0.0f && y[0] == 1.0f);
        float other[3] = {-1, -2, 0.5f};
        in.data = other;
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_GUARD);
        char site[64];
        snprintf(site, sizeof site, "models.c:%d model_branchy", model_branchy_line);
        CHECK_MSG(strstr(replay_session_error(s), site) &&
                  strstr(replay_session_error(s), "guard failed"), "%s",
                  replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

/* Bad data found by a kernel fails the run after it, naming the node. */
static int gather_line, div_line;
static void test_data_errors(void)
{
    eager_pool_push();
    eager_tensor *t = eager_rand_normal(TG_SHAPE(5, 3), 1, 0, 1);
    eager_tensor *idx = eager_from_data(GRAPH_I64, TG_SHAPE(2), ((int64_t[]){4, -5}));
    eager_tensor *a = eager_from_data(GRAPH_I32, TG_SHAPE(2), ((int32_t[]){7, -9}));
    eager_tensor *b = eager_from_data(GRAPH_I32, TG_SHAPE(2), ((int32_t[]){2, 4}));
    trace_begin(NULL);
    trace_input(idx, "idx");
    trace_input(b, "b");
    gather_line = __LINE__ + 1;
    trace_output(eager_gather(t, idx, 0), "g");
    div_line = __LINE__ + 1;
    trace_output(eager_div(a, b), "q");
    graph *g = trace_freeze();
    char err[1024] = "";
    replay_plan *p = g ? replay_compile(g, &OCL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    for (int k = 0; s && k < 3; k++) {
        int64_t iv[2] = {4, k == 1 ? 5 : -5};
        int32_t bv[2] = {2, k == 2 ? 0 : 4};
        replay_tensor in[2] = {{.name = "idx", .type = *eager_type(idx), .input = iv},
                               {.name = "b", .type = *eager_type(b), .input = bv}};
        replay_tensor out[2] = {{.name = "g"}, {.name = "q"}};
        tg_status st = replay_run(s, in, 2, out, 2);
        if (k == 0) {
            const float *tv = eager_peek(t);
            CHECK_MSG(st == TG_OK, "%s", replay_session_error(s));
            CHECK(st == TG_OK && ((float *)out[0].data)[0] == tv[12] &&
                  ((float *)out[0].data)[3] == tv[0] && ((int32_t *)out[1].data)[1] == -2);
            continue;
        }
        char site[64];
        snprintf(site, sizeof site, "test_opencl.c:%d", k == 1 ? gather_line : div_line);
        CHECK(st == TG_ERR_ARG);
        CHECK_MSG(strstr(replay_session_error(s), k == 1 ? "index is out of range"
                                                          : "integer division by zero") &&
                  strstr(replay_session_error(s), site), "%s", replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

/*
 * gather from a table whose gathered axis is empty at run time (a dynamic
 * dim at 0): every index is out of range, the run fails naming the gather
 * and reads nothing (gather_k read row 0 of the empty table, a NULL
 * buffer on PoCL: a crash, found by tests/fuzz_ocl.c); the same plan at 4
 * rows then matches a naive loop.
 */
static void test_gather_empty_axis(void)
{
    static const char ir[] = "graph g(%t: f32[A,3], %i: i64[B]) -> (y: f32[B,3]) {\n"
                             "  sym A = 4\n  sym B = 2\n"
                             "  %y: f32[B,3] = gather(%t, %i) {axis=0}\n"
                             "  return y = %y\n}\n";
    char err[1024] = "";
    graph *g = graph_parse(ir, sizeof ir - 1, err, sizeof err);
    replay_plan *p = g ? replay_compile(g, &OCL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    float t[12];
    for (int i = 0; i < 12; i++)
        t[i] = (float)i - 5.5f;
    for (int rows = 0; s && rows <= 4; rows += 4) {
        int64_t iv[5] = {0, -1, 3, -4, 2};
        float y[15] = {0};
        replay_tensor in[2] = {{.name = "t", .type = {GRAPH_F32, 2, {rows, 3}}, .input = t},
                               {.name = "i", .type = {GRAPH_I64, 1, {5}}, .input = iv}};
        replay_tensor out = {.name = "y", .type = {GRAPH_F32, 2, {5, 3}}, .data = y};
        tg_status st = replay_run(s, in, 2, &out, 1);
        if (rows == 0) {
            CHECK_MSG(st == TG_ERR_ARG && strstr(replay_session_error(s), "gather: an index is "
                                                 "out of range for the gathered axis"),
                      "gather from an empty axis: %s", replay_session_error(s));
            continue;
        }
        CHECK_MSG(st == TG_OK, "%s", replay_session_error(s));
        for (int k = 0; st == TG_OK && k < 5; k++)
            for (int c = 0; c < 3; c++)
                CHECK(y[k * 3 + c] == t[(iv[k] + (iv[k] < 0 ? 4 : 0)) * 3 + c]);
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * The same for gather_elements and scatter_elements, whose indices are
 * inputs: a bad gather index fails the run naming the gather, a bad
 * scatter index the scatter (whose good updates still land); a good run
 * after them matches naive loops.
 */
static int gel_line, sel_line;
static void test_index_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_normal(TG_SHAPE(4, 3), 2, 0, 1);
    eager_tensor *gi = eager_zeros(GRAPH_I64, TG_SHAPE(2, 3));
    eager_tensor *si = eager_zeros(GRAPH_I32, TG_SHAPE(5, 3));
    eager_tensor *u = eager_rand_normal(TG_SHAPE(5, 3), 3, 0, 1);
    trace_begin(NULL);
    trace_input(gi, "gi");
    trace_input(si, "si");
    gel_line = __LINE__ + 1;
    trace_output(eager_gather_elements(x, gi, 0), "g");
    sel_line = __LINE__ + 1;
    trace_output(eager_scatter_elements(x, si, u, 0, GRAPH_SCATTER_ADD), "s");
    graph *g = trace_freeze();
    char err[1024] = "";
    replay_plan *p = g ? replay_compile(g, &OCL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    const float *xv = eager_peek(x), *uv = eager_peek(u);
    for (int k = 0; s && k < 3; k++) {
        int64_t giv[6] = {3, -4, 0, 1, k == 1 ? 4 : 2, -1};
        int32_t siv[15] = {0, 1, 2, -1, -2, -3, 0, 0, 0, 3, k == 2 ? -5 : 1, 2, 1, 1, 1};
        replay_tensor in[2] = {{.name = "gi", .type = *eager_type(gi), .input = giv},
                               {.name = "si", .type = *eager_type(si), .input = siv}};
        replay_tensor out[2] = {{.name = "g"}, {.name = "s"}};
        tg_status st = replay_run(s, in, 2, out, 2);
        if (k == 0) {
            CHECK_MSG(st == TG_OK, "%s", replay_session_error(s));
            if (st != TG_OK)
                continue;
            float want_g[6], want_s[12];
            for (int i = 0; i < 6; i++)
                want_g[i] = xv[(giv[i] + (giv[i] < 0 ? 4 : 0)) * 3 + i % 3];
            memcpy(want_s, xv, sizeof want_s);
            for (int i = 0; i < 15; i++) /* row-major order, as the CPU */
                want_s[(siv[i] + (siv[i] < 0 ? 4 : 0)) * 3 + i % 3] += uv[i];
            CHECK(!memcmp(out[0].data, want_g, sizeof want_g));
            CHECK(!memcmp(out[1].data, want_s, sizeof want_s));
            continue;
        }
        char site[64];
        snprintf(site, sizeof site, "test_opencl.c:%d", k == 1 ? gel_line : sel_line);
        CHECK(st == TG_ERR_ARG);
        CHECK_MSG(strstr(replay_session_error(s), k == 1 ? "gather_elements: an index is out of "
                                                           "range for the axis"
                                                         : "scatter_elements: an index is out "
                                                           "of range for the axis") &&
                  strstr(replay_session_error(s), site), "%s", replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
}

/* ---- threads, cache, memory ---- */

typedef struct job {
    replay_plan *p;
    int seed, ok;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    replay_session *s = replay_session_new(j->p, NULL, 0);
    const float *w = NULL;
    j->ok = s != NULL;
    for (int r = 0; s && r < 20; r++) {
        float x[16], y[16];
        check_fill(x, 16, (uint64_t)(j->seed * 100 + r), -2, 2);
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {2, 8}}, .input = x};
        replay_tensor out = {.name = "y", .type = {GRAPH_F32, 2, {2, 8}}, .data = y};
        if (replay_run(s, &in, 1, &out, 1) != TG_OK) {
            j->ok = 0;
            break;
        }
        (void)w;
        float first = y[0];
        replay_tensor again = {.name = "y", .type = {GRAPH_F32, 2, {2, 8}}, .data = y};
        j->ok &= replay_run(s, &in, 1, &again, 1) == TG_OK && y[0] == first;
    }
    replay_session_free(s);
    return NULL;
}

static void test_threads_and_cache(void)
{
    graph *g = trace_small(2, 0);
    char err[1024] = "";
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    long builds = ocl_builds();
    replay_plan *p2 = replay_compile(g, &OCL, err, sizeof err);
    CHECK_MSG(p2 && ocl_builds() == builds, "a second plan builds nothing (%ld builds)",
              ocl_builds() - builds);
    replay_plan_free(p2);
    job jobs[4];
    pthread_t th[4];
    for (int i = 0; p && i < 4; i++) {
        jobs[i] = (job){p, i, 0};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; p && i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(jobs[i].ok, "thread %d: runs on its own session", i);
    }
    replay_plan_free(p);
    graph_free(g);
}

/* The disk cache: a fresh process (shutdown here) loads the binary. */
static void test_disk_cache(void)
{
    char dir[] = "/tmp/tg_ocl_cacheXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("TG_OPENCL_CACHE", dir, 1);
    eager_pool_push();
    eager_tensor *x = eager_rand_normal(TG_SHAPE(5), 3, 0, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    /* a constant no other test uses, so the program is new */
    trace_output(eager_tanh(eager_mul(x, eager_scalar(1.2345678f))), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    char err[1024] = "";
    float xs[5] = {1, 2, 3, -1, 0.5f}, want[5], got[5];
    for (int round = 0; round < 2; round++) {
        replay_backend_shutdown(); /* the in-process cache is gone */
        long builds = ocl_builds(), hits = ocl_disk_hits();
        replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 1, {5}}, .input = xs};
        replay_tensor out = {.name = "y", .type = {GRAPH_F32, 1, {5}}, .data = round ? got : want};
        CHECK_MSG(s && replay_run(s, &in, 1, &out, 1) == TG_OK, "round %d: %s", round, err);
        if (round == 0)
            CHECK_MSG(ocl_builds() > builds, "first process builds from source");
        else
            CHECK_MSG(ocl_builds() == builds && ocl_disk_hits() > hits,
                      "second process loads every program from disk (%ld built, %ld loaded)",
                      ocl_builds() - builds, ocl_disk_hits() - hits);
        replay_session_free(s);
        replay_plan_free(p);
    }
    CHECK(!memcmp(want, got, sizeof got));
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(got[i], tanh(xs[i] * 1.2345678), 1e-5);
    /* "1" keeps programs under $XDG_CACHE_HOME; "0" is off, as for the
     * other switches (it was taken as "on, the default directory"). */
    const char *xdg_old = getenv("XDG_CACHE_HOME");
    char *xdg_saved = xdg_old ? strdup(xdg_old) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    for (int round = 0; round < 2; round++) {
        setenv("TG_OPENCL_CACHE", round ? "0" : "1", 1);
        replay_backend_shutdown();
        long hits = ocl_disk_hits();
        replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
        CHECK_MSG(p != NULL, "TG_OPENCL_CACHE=%d: %s", 1 - round, err);
        if (round)
            CHECK_MSG(ocl_disk_hits() == hits, "TG_OPENCL_CACHE=0 loads nothing from disk "
                      "(%ld loaded)", ocl_disk_hits() - hits);
        replay_plan_free(p);
    }
    if (xdg_saved)
        setenv("XDG_CACHE_HOME", xdg_saved, 1);
    else
        unsetenv("XDG_CACHE_HOME");
    free(xdg_saved);
    unsetenv("TG_OPENCL_CACHE");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    graph_free(g);
}

/* Eight intermediates of 2^31 - 64 floats, 8 GB each (built by hand:
 * eager would try to allocate them; each just inside the kernels' 32-bit
 * indexing), all alive at once: a 64 GB arena, more than any device this
 * runs on (PoCL's memory is the machine's, 24 GB here; a single 8 GB
 * intermediate fit when the machine was otherwise idle), so the arena
 * cannot be allocated. */
static void test_out_of_memory(void)
{
    graph *g = graph_new("big");
    graph_type t1 = {GRAPH_F32, 1, {1}};
    int32_t xv = graph_add_value(g, GRAPH_VALUE_INPUT, &t1, "x"), e[8], y;
    graph_add_input(g, xv);
    graph_expand_attrs ea = {TG_SHAPE((1LL << 31) - 64)};
    for (int k = 0; k < 8; k++)
        CHECK(graph_add_node(g, GRAPH_OP_expand, &xv, 1, &ea, &e[k], 1) >= 0);
    for (int w = 8; w > 1; w /= 2) /* a tree of adds: e[0] + ... + e[7] */
        for (int k = 0; k < w / 2; k++)
            CHECK(graph_add_node(g, GRAPH_OP_add, (int32_t[]){e[2 * k], e[2 * k + 1]}, 2, NULL,
                                 &e[k], 1) >= 0);
    graph_reduce_max_attrs ra = {TG_NOINTS, 0};
    CHECK(graph_add_node(g, GRAPH_OP_reduce_max, &e[0], 1, &ra, &y, 1) >= 0);
    graph_add_output(g, y, "y");
    char err[1024] = "";
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        float xin = 1, yv;
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 1, {1}}, .input = &xin};
        replay_tensor out = {.name = "y", .type = {GRAPH_F32, 0, {0}}, .data = &yv};
        CHECK(replay_run(s, &in, 1, &out, 1) == TG_ERR_NOMEM);
        CHECK_MSG(strstr(replay_session_error(s), "out of memory") &&
                  strstr(replay_session_error(s), "intermediate values"), "%s",
                  replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * Intermediate values share device buffers by lifetime, without
 * sub-buffers: a chain of 12 negs (in-place off, so each is its own
 * planned buffer) needs 2 buffers for its values, not 12, and a second
 * batch size (a second variant) reuses them.  Negated 12 times, y == x.
 */
static void test_pool(void)
{
    graph *g = graph_new("pool");
    graph_type t = {GRAPH_F32, 2, {3, 1000}};
    int32_t sym = graph_add_symbol(g, "B", 3);
    int32_t v = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x");
    graph_add_input(g, v);
    g->values[v].dyn = 1;
    g->values[v].sym[0] = (int8_t)sym;
    for (int k = 0; k < 12; k++) {
        int32_t o;
        CHECK(graph_add_node(g, GRAPH_OP_neg, &v, 1, NULL, &o, 1) >= 0);
        v = o;
    }
    graph_add_output(g, v, "y");
    CHECK(graph_propagate_dynamic(g) == TG_OK);
    char err[1024] = "";
    replay_opts o = OCL;
    o.no_inplace = 1;
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    long before, after, subs0, subs1;
    ocl_obj_counts(OCL_OBJ_BUFFER, NULL, &before);
    ocl_obj_counts(OCL_OBJ_SUBBUFFER, &subs0, NULL);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    float x[5000], y[5000];
    for (int i = 0; i < 5000; i++)
        x[i] = (float)i - 2500.5f;
    for (int64_t b = 3; s && b <= 5; b += 2) {
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {b, 1000}}, .input = x};
        replay_tensor out = {.name = "y", .type = in.type, .data = y};
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s", replay_session_error(s));
        CHECK_MSG(memcmp(x, y, (size_t)b * 1000 * sizeof *x) == 0, "batch %lld: y == x",
                  (long long)b);
        ocl_obj_counts(OCL_OBJ_BUFFER, NULL, &after);
        /* the flag, the input's staging buffer, the values' buffers */
        CHECK_MSG(after - before == 2 + 2, "batch %lld: %ld device buffers for 12 values, want "
                  "4 (flag, input, two shared)", (long long)b, after - before);
    }
    ocl_obj_counts(OCL_OBJ_SUBBUFFER, &subs1, NULL);
    CHECK_MSG(subs1 == subs0, "no sub-buffers: %ld made", subs1 - subs0);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * A view shares its input's device buffer only if nothing writes that
 * buffer after it: a = -x; r = reshape(a); c = -a, planned in place over
 * a (a dies there, after the view); y = reshape(r) * c must be -x^2 (x^2
 * if r saw c's data).
 */
static void test_view_sharing(void)
{
    graph *g = graph_new("views");
    graph_type t = {GRAPH_F32, 2, {4, 6}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), a, r, c, r2, y;
    graph_add_input(g, x);
    graph_reshape_attrs to3 = {TG_SHAPE(2, 3, 4)}, to2 = {TG_SHAPE(4, 6)};
    CHECK(graph_add_node(g, GRAPH_OP_neg, &x, 1, NULL, &a, 1) >= 0);
    CHECK(graph_add_node(g, GRAPH_OP_reshape, &a, 1, &to3, &r, 1) >= 0);
    CHECK(graph_add_node(g, GRAPH_OP_neg, &a, 1, NULL, &c, 1) >= 0);
    CHECK(graph_add_node(g, GRAPH_OP_reshape, &r, 1, &to2, &r2, 1) >= 0);
    CHECK(graph_add_node(g, GRAPH_OP_mul, (int32_t[]){r2, c}, 2, NULL, &y, 1) >= 0);
    graph_add_output(g, y, "y");
    char err[1024] = "";
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    float xv[24], yv[24];
    for (int i = 0; i < 24; i++)
        xv[i] = (float)i * 0.5f - 3;
    replay_tensor in = {.name = "x", .type = t, .input = xv},
                  out = {.name = "y", .type = t, .data = yv};
    CHECK_MSG(s && replay_run(s, &in, 1, &out, 1) == TG_OK, "%s",
              s ? replay_session_error(s) : err);
    int ok = 1;
    for (int i = 0; s && i < 24; i++)
        ok &= yv[i] == -xv[i] * xv[i];
    CHECK_MSG(s && ok, "y = reshape(reshape(-x)) * x = -x^2: y[1] %g, x[1] %g", yv[1], xv[1]);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * The book of cl objects (objects.c) catches the release orders NVIDIA's
 * driver does not forgive: a buffer released before its sub-buffers, and
 * a second release (not passed on to OpenCL).  The parent gets one more
 * reference outside the book, so OpenCL itself sees a legal order.
 */
static void test_object_book(void)
{
    char err[512] = "", first[512] = "";
    ocl_dev *d = ocl_dev_open(NULL, err, sizeof err);
    CHECK_MSG(d != NULL, "open the device: %s", err);
    if (!d)
        return;
    long live = ocl_live_objects(), nv0 = ocl_obj_violations(NULL, 0);
    cl_int e;
    cl_mem parent = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, 4096, NULL, &e);
    CHECK_MSG(parent != NULL, "clCreateBuffer: %s", ocl_errstr(e));
    if (!parent) {
        ocl_dev_close(d);
        return;
    }
    ocl_obj_made(OCL_OBJ_BUFFER, parent, d->ctx);
    cl_buffer_region r = {d->align, 256};
    cl_mem sub = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r,
                                   &e);
    CHECK_MSG(sub != NULL, "clCreateSubBuffer: %s", ocl_errstr(e));
    ocl_obj_made(OCL_OBJ_SUBBUFFER, sub, parent);
    CHECK_MSG(ocl_live_objects() == live + 2, "two objects in the book: %ld",
              ocl_live_objects() - live);
    clRetainMemObject(parent); /* outside the book: keeps the order legal for OpenCL */
    ocl_obj_release(OCL_OBJ_BUFFER, parent);
    long nv = ocl_obj_violations(first, sizeof first);
    CHECK_MSG(nv == nv0 + 1 && strstr(first, "buffer") && strstr(first, "1 objects made from it"),
              "the parent released first is a violation: %ld, \"%s\"", nv - nv0, first);
    ocl_obj_release(OCL_OBJ_SUBBUFFER, sub);
    ocl_obj_release(OCL_OBJ_SUBBUFFER, sub); /* twice: counted, not passed on */
    nv = ocl_obj_violations(first, sizeof first);
    CHECK_MSG(nv == nv0 + 2, "a second release is a violation: %ld", nv - nv0);
    clReleaseMemObject(parent);
    CHECK_MSG(ocl_live_objects() == live, "the book is back where it was: %ld",
              ocl_live_objects() - live);
    ocl_obj_reset_violations();
    CHECK_MSG(ocl_obj_violations(NULL, 0) == 0, "reset");
    ocl_dev_close(d);
}

int main(void)
{
    char err[512] = "";
    if (!check_opencl_device(NULL))
        return CHECK_SKIP;
    replay_backend_shutdown();
    CHECK_MSG(ocl_live_objects() == 0, "no cl objects before: %ld", ocl_live_objects());
    test_deprecated(); /* first: sets devname */
    test_devices();
    test_refusals();
    test_dynamic_and_params();
    test_user_buffers();
    test_guards();
    test_data_errors();
    test_index_errors();
    test_gather_empty_axis();
    test_threads_and_cache();
    test_out_of_memory();
    test_disk_cache();
    test_pool();
    test_view_sharing();
    char first[512];
    long nv = ocl_obj_violations(first, sizeof first);
    CHECK_MSG(nv == 0, "%ld cl objects released out of order, the first: %s", nv, first);
    test_object_book();
    CHECK_MSG(ocl_live_objects() > 0, "the device and its programs stay open for later plans");
    graph *g = trace_small(2, 0);
    replay_plan *p = replay_compile(g, &OCL, err, sizeof err);
    replay_backend_shutdown(); /* keeps the device p uses */
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    float x[16] = {0}, y[16];
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {2, 8}}, .input = x},
                  out = {.name = "y", .type = in.type, .data = y};
    CHECK_MSG(s && replay_run(s, &in, 1, &out, 1) == TG_OK, "a plan outlives a shutdown");
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    replay_backend_shutdown();
    CHECK_MSG(ocl_live_objects() == 0, "every cl object released: %ld alive",
              ocl_live_objects());
    return check_done();
}
