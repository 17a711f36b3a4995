/*
 * opencl_device_resident.c - replay on an OpenCL device with the data kept
 * there: no host copy between runs.  Written against the installed headers
 * only (tracegraph.h and the OpenCL headers); scripts/test_install.sh builds
 * it against an installed prefix and runs it.
 *
 *   example_opencl_device_resident [DEVICE]     (an index or name substring
 *                                                of `tracegraph devices`)
 *
 * 1. Trace a small recurrent step, h' = tanh(h W^T + b) + 0.5 h, and
 *    optimize it (-O2).
 * 2. Compile it for OpenCL; replay_plan_handle(plan, "cl_context") is the cl_context
 *    the plan's device buffers live in.
 * 3. Make two cl_mem buffers in that context, write the start state into
 *    one once, then replay N steps ping-ponging between them: each run reads
 *    its input from one buffer (replay_tensor.buffer) and writes its output
 *    into the other, on the device.  replay_run returns when the output is
 *    complete (one wait per run), and nothing crosses to the host.
 * 4. Read the last state back once and compare it with the same N steps
 *    replayed on the CPU (host data).  Also times N steps each way: host
 *    copies in every run against none.
 * Exit 0 when the states match within 1e-4 relative, 1 otherwise (or on an
 * error), 77 when the machine has no OpenCL platform.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tracegraph.h>

enum { B = 32, D = 256, STEPS = 50 };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The step h' = tanh(h W^T + b) + 0.5 h, traced and optimized. */
static graph *trace_step(void)
{
    eager_pool_push();
    eager_tensor *w = eager_rand_normal(TG_SHAPE(D, D), 1, 0.0f, 1.0f / 32);
    eager_tensor *b = eager_rand_normal(TG_SHAPE(D), 2, 0.0f, 0.1f);
    eager_tensor *h = eager_rand_uniform(TG_SHAPE(B, D), 3, -1.0f, 1.0f);
    trace_begin(NULL);
    trace_input(h, "h");
    eager_tensor *next = eager_add(eager_tanh(eager_linear(h, w, b)),
                                   eager_mul(h, eager_scalar(0.5)));
    trace_output(next, "next");
    graph *g = trace_freeze();
    eager_pool_pop();
    char err[512];
    opt_options o = opt_default_options();
    o.level = 2;
    if (!g || opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "device_resident: %s\n", g ? err : eager_error());
        graph_free(g);
        return NULL;
    }
    return g;
}

/* STEPS steps on the CPU from h (host data, updated in place). */
static int cpu_steps(const graph *g, float *h)
{
    char err[512];
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    graph_type t = {GRAPH_F32, 2, {B, D}};
    static float next[B * D];
    int ok = s != NULL;
    for (int i = 0; ok && i < STEPS; i++) {
        replay_tensor in = {.name = "h", .type = t, .input = h};
        replay_tensor out = {.name = "next", .type = t, .data = next};
        ok = replay_run(s, &in, 1, &out, 1) == TG_OK;
        memcpy(h, next, sizeof next);
    }
    if (!ok)
        fprintf(stderr, "device_resident: CPU replay: %s\n", s ? replay_session_error(s) : err);
    replay_session_free(s);
    replay_plan_free(p);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: example_opencl_device_resident [DEVICE]\n");
        return 2;
    }
    char err[4096];
    if (replay_backend_devices("opencl", NULL, 0, err, sizeof err) < 0) {
        printf("device_resident: skipped: %s\n", err);
        return 77;
    }
    graph *g = trace_step();
    if (!g)
        return 1;
    static float h0[B * D], cpu[B * D], dev[B * D];
    for (int i = 0; i < B * D; i++)
        h0[i] = (float)sin(0.37 * i);

    /* 2. the OpenCL plan and its context */
    replay_opts opts = REPLAY_OPTS_INIT;
    char backend[160];
    snprintf(backend, sizeof backend, "opencl%s%s", argc > 1 ? ":" : "", argc > 1 ? argv[1] : "");
    opts.device = backend; /* "opencl", or "opencl:1", "opencl:NVIDIA" */
    replay_plan *p = replay_compile(g, &opts, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (!s) {
        fprintf(stderr, "device_resident: %s\n", p ? "out of memory" : err);
        replay_plan_free(p);
        graph_free(g);
        return 1;
    }
    cl_context ctx = replay_plan_handle(p, "cl_context");
    cl_device_id device;
    cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof device, &device, NULL);
    char name[256] = "?";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    cl_command_queue q = e == CL_SUCCESS ? clCreateCommandQueue(ctx, device, 0, &e) : NULL;

    /* 3. two device buffers, the start state written once */
    cl_mem buf[2] = {NULL, NULL};
    for (int k = 0; k < 2 && e == CL_SUCCESS; k++)
        buf[k] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof h0, NULL, &e);
    if (e == CL_SUCCESS)
        e = clEnqueueWriteBuffer(q, buf[0], CL_TRUE, 0, sizeof h0, h0, 0, NULL, NULL);
    graph_type t = {GRAPH_F32, 2, {B, D}};
    int ok = e == CL_SUCCESS;
    if (!ok)
        fprintf(stderr, "device_resident: OpenCL setup failed (error %d)\n", e);
    /* a first run binds the plan (arena, kernel arguments): not timed; it
     * reads buf[0] and writes buf[1], as step 0 does again */
    replay_tensor in0 = {.name = "h", .type = t, .buffer = buf[0]};
    replay_tensor out0 = {.name = "next", .type = t, .buffer = buf[1]};
    if (ok && replay_run(s, &in0, 1, &out0, 1) != TG_OK) {
        fprintf(stderr, "device_resident: %s\n", replay_session_error(s));
        ok = 0;
    }
    double t0 = now_ms();
    for (int i = 0; ok && i < STEPS; i++) {
        replay_tensor in = {.name = "h", .type = t, .buffer = buf[i % 2]};
        replay_tensor out = {.name = "next", .type = t, .buffer = buf[(i + 1) % 2]};
        ok = replay_run(s, &in, 1, &out, 1) == TG_OK;
        if (!ok)
            fprintf(stderr, "device_resident: step %d: %s\n", i, replay_session_error(s));
    }
    double dev_ms = now_ms() - t0;

    /* 4. read back once; the same steps on the CPU; host copies for comparison */
    if (ok)
        ok = clEnqueueReadBuffer(q, buf[STEPS % 2], CL_TRUE, 0, sizeof dev, dev, 0, NULL,
                                 NULL) == CL_SUCCESS;
    memcpy(cpu, h0, sizeof h0);
    ok = ok && cpu_steps(g, cpu);
    double host_ms = 0;
    if (ok) {
        static float a[B * D], b[B * D];
        memcpy(a, h0, sizeof a);
        t0 = now_ms();
        for (int i = 0; ok && i < STEPS; i++) {
            replay_tensor in = {.name = "h", .type = t, .input = i % 2 ? b : a};
            replay_tensor out = {.name = "next", .type = t, .data = i % 2 ? a : b};
            ok = replay_run(s, &in, 1, &out, 1) == TG_OK;
        }
        host_ms = now_ms() - t0;
    }
    double diff = 0, scale = 0;
    for (int i = 0; i < B * D; i++) {
        diff = fmax(diff, fabs((double)dev[i] - cpu[i]));
        scale = fmax(scale, fabs((double)cpu[i]));
    }
    double rel = diff / (scale > 0 ? scale : 1);
    if (ok) {
        printf("device_resident: %d steps of h[%d,%d] on %s: %.3f ms a step with the data on "
               "the device, %.3f ms with host copies\n", STEPS, B, D, name, dev_ms / STEPS,
               host_ms / STEPS);
        printf("device_resident: state after %d steps vs the CPU replay: max rel err %.3g (%s)\n",
               STEPS, rel, rel <= 1e-4 ? "device-resident replay matches the CPU replay"
                                       : "MISMATCH");
    }
    for (int k = 0; k < 2; k++)
        if (buf[k])
            clReleaseMemObject(buf[k]);
    if (q)
        clReleaseCommandQueue(q);
    replay_session_free(s);
    replay_plan_free(p);
    replay_backend_shutdown();
    graph_free(g);
    return ok && rel <= 1e-4 ? 0 : 1;
}
