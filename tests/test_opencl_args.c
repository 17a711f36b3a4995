/*
 * test_opencl_args.c - kernel arguments in the OpenCL replay are set only
 * when they change (issue 20: on NVIDIA's OpenCL every clSetKernelArg
 * costs host time per launch).  The test defines clSetKernelArg: the
 * backend, linked into this executable, calls it, and it counts the calls
 * (and those whose value is a watched cl_mem) and forwards to the ICD
 * loader's (dlsym RTLD_NEXT), as test_opencl_nosync does.
 *
 * Per benchmark workload (reduced sizes) at -O2, one session:
 *   the first run sets every argument; a second and third with the same
 *   host data set none; a run with a caller's cl_mem input sets exactly the
 *   arguments that hold it (every one of its calls passes that cl_mem: a
 *   caller's buffer is set every time, the session cannot see it released
 *   and its handle reused), again the same with a second cl_mem; back to
 *   host data: the same count (those arguments move to the session's
 *   input buffer), then none.  Every output equals the CPU replay's
 *   (normalized error <= 1e-4) and the first run's bit for bit.
 * A graph with a dynamic batch and a param (y = gelu(x * w + 1) - relu(x),
 * checked against naive loops): a larger batch grows the input buffer and
 * the pool (buffers released and made), after which every argument is set
 * (as many as a fresh session's first run at that batch); back to the
 * smaller batch rebinds without new buffers: fewer set, then none;
 * replay_set_param replaces the param's buffer: every argument set again.
 * A clSetKernelArg that fails (injected: the kernel keeps its old value)
 * fails the run, and the next run sets that argument again.
 * TG_OPENCL_ARGCACHE=0: every argument every run.
 *
 * No OpenCL platform: "SKIP: ..." and exit 77.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload_sizes.h"
#include "eager/eager.h"
#include "optimize/opt.h"
#include "replay/internal.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "workloads/workloads.h"
#include "graph/graph_impl.h"

#define TOL 1e-4

/* ---- the counting clSetKernelArg ---- */

static long nset, nwatched, fail_at;
static cl_mem watched;

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel k, cl_uint i, size_t size,
                                               const void *value)
{
    static __typeof__(&clSetKernelArg) next;
    if (!next && !(next = (__typeof__(&clSetKernelArg))dlsym(RTLD_NEXT, "clSetKernelArg"))) {
        fprintf(stderr, "test_opencl_args: no clSetKernelArg after this executable: %s\n",
                dlerror());
        abort();
    }
    if (++nset == fail_at) /* an injected failure: the kernel keeps what it had */
        return CL_INVALID_ARG_VALUE;
    nwatched += watched && value && size == sizeof(cl_mem) &&
                !memcmp(value, &watched, sizeof(cl_mem));
    return next(k, i, size, value);
}

/* ---- helpers ---- */

/* One run of s counting its clSetKernelArg calls (*w: those passing
 * watch); y: a malloc'd copy of output 0, or NULL after a failed check. */
static long counted_run(replay_session *s, const replay_tensor *in, cl_mem watch, long *w,
                        float **y, const char *what)
{
    replay_tensor out = {NULL};
    nset = nwatched = 0;
    watched = watch;
    tg_status st = replay_run(s, in, 1, &out, 1);
    long n = nset;
    if (w)
        *w = nwatched;
    watched = NULL;
    CHECK_MSG(st == TG_OK, "%s: %s", what, replay_session_error(s));
    *y = NULL;
    if (st == TG_OK) {
        size_t bytes = (size_t)graph_type_numel(&out.type) * sizeof(float);
        *y = malloc(bytes + 1);
        memcpy(*y, out.data, bytes);
    }
    return n;
}

/* Output 0 of g on the CPU replay for input x, malloc'd (NULL on failure). */
static float *cpu_output(const graph *g, const replay_tensor *x, const char *what)
{
    char err[4096] = "";
    replay_opts o = {.threads = 1};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s: cpu: %s", what, err);
    replay_tensor out = {NULL};
    float *y = NULL;
    if (s && replay_run(s, x, 1, &out, 1) == TG_OK) {
        size_t bytes = (size_t)graph_type_numel(&out.type) * sizeof(float);
        y = malloc(bytes + 1);
        memcpy(y, out.data, bytes);
    } else if (s) {
        CHECK_MSG(0, "%s: cpu run: %s", what, replay_session_error(s));
    }
    replay_session_free(s);
    replay_plan_free(p);
    return y;
}

/* ---- the workloads ---- */

static void check_graph(const graph *g, const replay_tensor *x, const char *what)
{
    char err[4096] = "";
    float *cpu = cpu_output(g, x, what);
    replay_opts ro = {.device = "opencl", .threads = 1};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL && cpu != NULL, "%s: %s", what, p ? "session" : err);
    if (!s || !cpu) {
        replay_session_free(s);
        replay_plan_free(p);
        free(cpu);
        return;
    }
    int64_t ny = graph_type_numel(replay_output_type(p, 0));
    size_t xbytes = (size_t)graph_type_numel(&x->type) * sizeof(float);
    cl_context ctx = replay_plan_handle(p, "cl_context");
    cl_device_id dev;
    cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_mem xb[2];
    for (int i = 0; i < 2; i++) {
        xb[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, xbytes, NULL, &e);
        clEnqueueWriteBuffer(q, xb[i], CL_TRUE, 0, xbytes, x->data, 0, NULL, NULL);
    }
    /* the runs: host data (-1) or cl_mem xb[i], and the sets each wants */
    enum { ALL = -1, SAME_AS_CLMEM = -2 };
    static const struct { int mem; long want; } runs[] = {
        {-1, ALL}, {-1, 0}, {-1, 0}, {0, SAME_AS_CLMEM}, {0, SAME_AS_CLMEM},
        {1, SAME_AS_CLMEM}, {-1, SAME_AS_CLMEM}, {-1, 0}};
    float *first = NULL;
    long clmem_sets = -1;
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        char w[160];
        int m = runs[r].mem;
        snprintf(w, sizeof w, "%s run %zu (%s)", what, r + 1, m < 0 ? "host data" : "cl_mem");
        replay_tensor in = *x;
        if (m >= 0)
            in = (replay_tensor){.name = x->name, .type = x->type, .buffer = xb[m]};
        long watched_sets = 0;
        float *y = NULL;
        long n = counted_run(s, &in, m >= 0 ? xb[m] : NULL, &watched_sets, &y, w);
        if (!y)
            break;
        double err1 = check_normalized_error(y, cpu, ny);
        CHECK_MSG(err1 <= TOL, "%s: OpenCL vs CPU normalized error %.3g", w, err1);
        if (!first) {
            first = y;
            CHECK_MSG(n > 0, "%s: %ld kernel arguments set (want every one)", w, n);
            continue;
        }
        CHECK_MSG(!memcmp(y, first, (size_t)ny * sizeof *y), "%s: the output differs from "
                  "the first run's", w);
        free(y);
        if (runs[r].want == 0) {
            CHECK_MSG(n == 0, "%s: %ld kernel arguments set (want 0: nothing changed)", w, n);
        } else if (m >= 0) {
            /* exactly the arguments that hold the input: each call passes it */
            CHECK_MSG(n > 0 && watched_sets == n && (clmem_sets < 0 || n == clmem_sets),
                      "%s: %ld kernel arguments set, %ld of them the input's cl_mem (want "
                      "all of them, %ld as the previous cl_mem run)", w, n, watched_sets,
                      clmem_sets);
            clmem_sets = n;
        } else {
            CHECK_MSG(n == clmem_sets, "%s: %ld kernel arguments set (want %ld: those that "
                      "held the caller's cl_mem)", w, n, clmem_sets);
        }
    }
    free(first);
    free(cpu);
    for (int i = 0; i < 2; i++)
        clReleaseMemObject(xb[i]);
    clReleaseCommandQueue(q);
    replay_session_free(s);
    replay_plan_free(p);
}

static void test_workload(workload_kind k, int level)
{
    workload w;
    workload_size sz = test_workload_size(k);
    if (workload_make(&w, k, &sz) != TG_OK) {
        CHECK_MSG(0, "workload %d: %s", (int)k, eager_error());
        return;
    }
    graph *g = workload_trace(&w, 0);
    CHECK_MSG(g != NULL, "%s: trace: %s", w.name, eager_error());
    replay_tensor x = {.name = "x", .type = *eager_type(w.x), .input = eager_peek(w.x)};
    opt_options o = opt_default_options();
    o.level = level;
    char err[512] = "", what[64];
    CHECK_MSG(g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "%s -O%d: %s", w.name,
              level, err);
    snprintf(what, sizeof what, "%s -O%d", w.name, level);
    if (g)
        check_graph(g, &x, what);
    graph_free(g);
    workload_free(&w);
}

/* ---- dynamic batch, buffers regrown, a param swapped ---- */

static double ref_small(float x, float w)
{
    double a = (double)x * w + 1;
    return 0.5 * a * (1 + erf(a / sqrt(2))) - (x > 0 ? x : 0);
}

/* y = gelu(x * w + 1) - relu(x), x [B, 8] with B dynamic, w [8] a param. */
static graph *trace_small(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_normal(TG_SHAPE(4, 8), 5, 0, 1);
    eager_tensor *w = eager_rand_normal(TG_SHAPE(8), 6, 0, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    trace_param(w, "w");
    eager_tensor *a = eager_add(eager_mul(x, w), eager_scalar(1));
    trace_output(eager_sub(eager_gelu(a), eager_relu(x)), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    return g;
}

/* A run of s on a [B, 8] input of seed: its sets, the output checked. */
static long small_run(replay_session *s, int64_t B, uint64_t seed, const float *w,
                      const char *what)
{
    float *x = malloc((size_t)B * 8 * sizeof *x), *y = NULL;
    check_fill(x, B * 8, seed, -2, 2);
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {B, 8}}, .input = x};
    long n = counted_run(s, &in, NULL, NULL, &y, what);
    if (y) {
        double worst = 0;
        for (int64_t i = 0; i < B * 8; i++) {
            double d = fabs(y[i] - ref_small(x[i], w[i % 8]));
            worst = d > worst ? d : worst;
        }
        CHECK_MSG(worst <= 1e-5, "%s: max error %.3g against the naive loop", what, worst);
    }
    free(x);
    free(y);
    return n;
}

/* The sets of a fresh session's first run at batch B (every argument). */
static long fresh_sets(replay_plan *p, int64_t B, const float *w, const char *what)
{
    replay_session *s = replay_session_new(p, NULL, 0);
    CHECK_MSG(s != NULL, "%s: session", what);
    long n = s ? small_run(s, B, 99, w, what) : -1;
    replay_session_free(s);
    return n;
}

static void test_invalidation(void)
{
    graph *g = trace_small();
    char err[4096] = "";
    replay_opts ro = {.device = "opencl", .threads = 1};
    replay_plan *p = g ? replay_compile(g, &ro, err, sizeof err) : NULL;
    CHECK_MSG(p != NULL, "dynamic graph: %s", g ? err : eager_error());
    if (!p) {
        graph_free(g);
        return;
    }
    float w[8];
    for (int32_t i = 0; i < g->nvalues; i++)
        if (g->values[i].kind == GRAPH_VALUE_PARAM)
            memcpy(w, g->values[i].data, sizeof w);
    long all4 = fresh_sets(p, 4, w, "fresh session, B=4");
    long all64 = fresh_sets(p, 64, w, "fresh session, B=64");
    CHECK_MSG(all4 > 0 && all64 > 0, "a first run sets every argument: %ld, %ld", all4, all64);
    replay_session *s = replay_session_new(p, NULL, 0);
    CHECK(s != NULL);
    if (s) {
        long n = small_run(s, 4, 1, w, "B=4");
        CHECK_MSG(n == all4, "B=4, first run: %ld set (want %ld)", n, all4);
        n = small_run(s, 4, 2, w, "B=4 again, other data");
        CHECK_MSG(n == 0, "B=4 again: %ld set (want 0)", n);
        /* the input buffer and the pool grow: released, made anew */
        n = small_run(s, 64, 3, w, "B=64");
        CHECK_MSG(n == all64, "B=64 after B=4 (buffers regrown): %ld set (want %ld, every "
                  "argument)", n, all64);
        n = small_run(s, 64, 4, w, "B=64 again");
        CHECK_MSG(n == 0, "B=64 again: %ld set (want 0)", n);
        /* rebound at B=4 in the buffers there are: the sizes change */
        n = small_run(s, 4, 5, w, "B=4 after B=64");
        CHECK_MSG(n > 0 && n < all4, "B=4 after B=64 (no new buffer): %ld set (want some, "
                  "fewer than all %ld)", n, all4);
        long rebind = n;
        n = small_run(s, 4, 6, w, "B=4 after B=64, again");
        CHECK_MSG(n == 0, "B=4 again: %ld set (want 0)", n);
        n = small_run(s, 64, 3, w, "B=64, bound before");
        CHECK_MSG(n > 0 && n < all64, "B=64, bound before: %ld set (want some, fewer than "
                  "all %ld)", n, all64);
        /* the first argument this run changes fails: not recorded */
        float x[32];
        check_fill(x, 32, 1, -2, 2);
        replay_tensor in = {.name = "x", .type = {GRAPH_F32, 2, {4, 8}}, .input = x}, out = {NULL};
        nset = 0;
        fail_at = 1;
        tg_status st = replay_run(s, &in, 1, &out, 1);
        fail_at = 0;
        CHECK_MSG(st != TG_OK && strstr(replay_session_error(s), "clSetKernelArg"),
                  "an injected clSetKernelArg failure fails the run: %s",
                  st ? replay_session_error(s) : "it succeeded");
        n = small_run(s, 4, 7, w, "B=4 after a failed run");
        CHECK_MSG(n == rebind, "B=4 after the failed run: %ld set (want %ld, as the first "
                  "time after B=64)", n, rebind);
        /* the param's device buffer is replaced */
        for (int i = 0; i < 8; i++)
            w[i] = 0.25f * (float)(i - 3);
        CHECK_MSG(replay_set_param(p, "w", w, sizeof w, err, sizeof err) == TG_OK, "%s", err);
        n = small_run(s, 4, 8, w, "after replay_set_param");
        CHECK_MSG(n == all4, "after replay_set_param: %ld set (want %ld, every argument)", n,
                  all4);
        n = small_run(s, 4, 9, w, "after replay_set_param, again");
        CHECK_MSG(n == 0, "after replay_set_param, again: %ld set (want 0)", n);
        replay_session_free(s);
    }
    /* switched off: every argument every run */
    setenv("TG_OPENCL_ARGCACHE", "0", 1);
    s = replay_session_new(p, NULL, 0);
    for (int r = 0; s && r < 2; r++) {
        long n = small_run(s, 4, 10 + (uint64_t)r, w, "TG_OPENCL_ARGCACHE=0");
        CHECK_MSG(n == all4, "TG_OPENCL_ARGCACHE=0, run %d: %ld set (want %ld)", r + 1, n, all4);
    }
    replay_session_free(s);
    unsetenv("TG_OPENCL_ARGCACHE");
    replay_plan_free(p);
    graph_free(g);
}

int main(void)
{
    if (!check_opencl_device(NULL))
        return CHECK_SKIP;
    static const workload_kind kinds[] = {WL_TINY, WL_MLP, WL_ENCODER, WL_ENCODER_FUSED,
                                          WL_RESBLOCK, WL_CHAIN};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        test_workload(kinds[i], 2);
    test_workload(WL_TINY, 0);
    test_workload(WL_ENCODER, 3);
    test_invalidation();
    replay_backend_shutdown();
    CHECK_MSG(ocl_live_objects() == 0, "every cl object released: %ld alive",
              ocl_live_objects());
    return check_done();
}
