/*
 * test_opencl_nosync.c - an OpenCL run does not synchronise with the host
 * between nodes (issue 20): one in-order queue, every step enqueued, one
 * wait at the end; a guard is the documented exception (its value is read
 * back to be checked on the host, a blocking read per guard).
 *
 * The test defines the OpenCL entry points that can block or copy to or
 * from the host (clFinish, clWaitForEvents, clEnqueueRead/WriteBuffer and
 * their Rect forms, clEnqueueMapBuffer, clEnqueueCopyBufferToImage is not
 * used): the backend, linked into this executable, calls these, which count
 * and forward to the ICD loader's (dlsym RTLD_NEXT).  For each benchmark
 * workload (reduced sizes, as test_opencl_workloads) at -O0 and -O3, one
 * run counts:
 *   host data:   1 clFinish, no other wait, no blocking transfer, one
 *                non-blocking write per input, one read per output plus the
 *                4-byte error flag when a node can raise it (gather, ...);
 *   cl_mem data: 1 clFinish, no write, no read but that flag's, so no
 *                tensor crosses to the host, and no copy into the output's
 *                cl_mem (each workload's output is made by a node, which
 *                writes it there); and the same output as the host run
 *                (read back by the test after counting).
 * A graph with one guard: one blocking read more, and still one clFinish.
 * test_direct_outputs: the outputs that must still be copied into the
 * caller's cl_mem (a view's, an input's, one given twice, one whose
 * buffer is also an input or a sub-buffer) are, with the right values.
 *
 * No OpenCL platform: "SKIP: ..." and exit 77.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload_sizes.h"
#include "eager/eager.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/internal.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "workloads/workloads.h"
#include "graph/graph_impl.h"

/* ---- counting wrappers ---- */

typedef struct counts {
    long finish, waits, blocking, writes, reads, read_bytes, write_bytes, maps, copies;
} counts;

static counts cnt;

#define NEXT(name) ((__typeof__(&name))next_sym(#name))

static void *next_sym(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "test_opencl_nosync: no %s after this executable: %s\n", name, dlerror());
        abort();
    }
    return f;
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue q)
{
    cnt.finish++;
    return NEXT(clFinish)(q);
}

CL_API_ENTRY cl_int CL_API_CALL clWaitForEvents(cl_uint n, const cl_event *ev)
{
    cnt.waits++;
    return NEXT(clWaitForEvents)(n, ev);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool block,
                                                    size_t off, size_t size, void *p, cl_uint n,
                                                    const cl_event *wl, cl_event *ev)
{
    cnt.reads++;
    cnt.read_bytes += (long)size;
    cnt.blocking += block != CL_FALSE;
    return NEXT(clEnqueueReadBuffer)(q, m, block, off, size, p, n, wl, ev);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool block,
                                                     size_t off, size_t size, const void *p,
                                                     cl_uint n, const cl_event *wl, cl_event *ev)
{
    cnt.writes++;
    cnt.write_bytes += (long)size;
    cnt.blocking += block != CL_FALSE;
    return NEXT(clEnqueueWriteBuffer)(q, m, block, off, size, p, n, wl, ev);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBufferRect(
    cl_command_queue q, cl_mem m, cl_bool block, const size_t *bo, const size_t *ho,
    const size_t *r, size_t brp, size_t bsp, size_t hrp, size_t hsp, void *p, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    cnt.reads++;
    cnt.blocking += block != CL_FALSE;
    return NEXT(clEnqueueReadBufferRect)(q, m, block, bo, ho, r, brp, bsp, hrp, hsp, p, n, wl,
                                         ev);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBufferRect(
    cl_command_queue q, cl_mem m, cl_bool block, const size_t *bo, const size_t *ho,
    const size_t *r, size_t brp, size_t bsp, size_t hrp, size_t hsp, const void *p, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    cnt.writes++;
    cnt.blocking += block != CL_FALSE;
    return NEXT(clEnqueueWriteBufferRect)(q, m, block, bo, ho, r, brp, bsp, hrp, hsp, p, n, wl,
                                          ev);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst,
                                                    size_t so, size_t dof, size_t size, cl_uint n,
                                                    const cl_event *wl, cl_event *ev)
{
    cnt.copies++;
    return NEXT(clEnqueueCopyBuffer)(q, src, dst, so, dof, size, n, wl, ev);
}

CL_API_ENTRY void *CL_API_CALL clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool block,
                                                  cl_map_flags fl, size_t off, size_t size,
                                                  cl_uint n, const cl_event *wl, cl_event *ev,
                                                  cl_int *e)
{
    cnt.maps++;
    cnt.blocking += block != CL_FALSE;
    return NEXT(clEnqueueMapBuffer)(q, m, block, fl, off, size, n, wl, ev, e);
}

/* ---- the checks ---- */


/* One run of s counted: host data (in/out host) or the cl_mem ones. */
static counts counted_run(replay_session *s, replay_tensor *in, replay_tensor *out,
                          const char *what)
{
    memset(&cnt, 0, sizeof cnt);
    tg_status st = replay_run(s, in, 1, out, 1);
    counts c = cnt;
    CHECK_MSG(st == TG_OK, "%s: %s", what, replay_session_error(s));
    return c;
}

/* Runs g on OpenCL with host data and with cl_mem data, counting each run;
 * guards: the guards a run checks. */
static void check_graph(const graph *g, const replay_tensor *x, int guards, const char *what)
{
    char err[4096] = "";
    replay_opts ro = {.device = "opencl", .threads = 1};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s: %s", what, p ? "out of memory" : err);
    if (!s) {
        replay_plan_free(p);
        return;
    }
    /* the error flag is cleared and read back only when a node's kernels
     * can raise it (gather and the like) */
    int flag = 0;
    for (int32_t i = 0; i < p->g->nnodes; i++)
        flag |= ((const ocl_plan *)p->bplan)->nodes[i].flag_msg != NULL;
    /* views (reshape, flatten, squeeze, unsqueeze) of an intermediate share
     * its device buffer: they copy only a graph input, param or constant */
    long view_copies = 0;
    for (int32_t i = 0; i < p->g->nnodes; i++) {
        graph_op op = p->g->nodes[i].op;
        if (op == GRAPH_OP_reshape || op == GRAPH_OP_flatten || op == GRAPH_OP_squeeze ||
            op == GRAPH_OP_unsqueeze)
            view_copies += p->traced->mp.buffer[p->g->nodes[i].in[0]] < 0;
    }
    const graph_type *yt = replay_output_type(p, 0);
    size_t xbytes = (size_t)graph_type_numel(&x->type) * sizeof(float);
    size_t ybytes = (size_t)graph_type_numel(yt) * sizeof(float);
    float *host_y = malloc(ybytes), *dev_y = malloc(ybytes);
    cl_context ctx = replay_plan_handle(p, "cl_context");
    cl_device_id dev;
    cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_mem xb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, xbytes, NULL, &e);
    cl_mem yb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ybytes, NULL, &e);
    clEnqueueWriteBuffer(q, xb, CL_TRUE, 0, xbytes, x->data, 0, NULL, NULL);
    replay_tensor hin = *x, hout = {.type = *yt, .data = host_y};
    replay_tensor din = {.name = x->name, .type = x->type, .buffer = xb},
                  dout = {.type = *yt, .buffer = yb};
    /* the first run of each binds the plan: count the second */
    for (int r = 0; r < 2; r++) {
        char w[160];
        snprintf(w, sizeof w, "%s host data", what);
        counts h = counted_run(s, &hin, &hout, w);
        snprintf(w, sizeof w, "%s cl_mem data", what);
        counts d = counted_run(s, &din, &dout, w);
        if (r == 0)
            continue;
        CHECK_MSG(h.copies == view_copies && d.copies == view_copies,
                  "%s: buffer copies per run: %ld host, %ld cl_mem (want %ld views of inputs, "
                  "none for the cl_mem output)", what, h.copies, d.copies, view_copies);
        CHECK_MSG(h.finish == 1 && d.finish == 1, "%s: clFinish per run: %ld host, %ld cl_mem "
                  "(want 1: one wait at the end)", what, h.finish, d.finish);
        CHECK_MSG(h.waits == 0 && d.waits == 0 && h.maps == 0 && d.maps == 0,
                  "%s: clWaitForEvents %ld/%ld, maps %ld/%ld per run (want none)", what,
                  h.waits, d.waits, h.maps, d.maps);
        CHECK_MSG(h.blocking == guards && d.blocking == guards,
                  "%s: blocking transfers per run: %ld host, %ld cl_mem (want %d: one per guard)",
                  what, h.blocking, d.blocking, guards);
        CHECK_MSG(h.writes == 1 && (size_t)h.write_bytes == xbytes,
                  "%s: host data: %ld writes of %ld bytes (want 1 of %zu)", what, h.writes,
                  h.write_bytes, xbytes);
        CHECK_MSG(h.reads == 1 + flag + guards, "%s: host data: %ld reads (want the output, "
                  "%d flag and %d guards)", what, h.reads, flag, guards);
        CHECK_MSG(d.writes == 0 && d.reads == flag + guards && d.read_bytes >= 4 * flag &&
                  (guards || d.read_bytes == 4 * flag),
                  "%s: cl_mem data: %ld writes, %ld reads of %ld bytes (want none but %d "
                  "4-byte flag%s)", what, d.writes, d.reads, d.read_bytes, flag,
                  guards ? " and the guards" : "");
    }
    e = clEnqueueReadBuffer(q, yb, CL_TRUE, 0, ybytes, dev_y, 0, NULL, NULL);
    CHECK_MSG(e == CL_SUCCESS && !memcmp(dev_y, host_y, ybytes),
              "%s: the cl_mem output equals the host output", what);
    clReleaseMemObject(xb);
    clReleaseMemObject(yb);
    clReleaseCommandQueue(q);
    free(host_y);
    free(dev_y);
    replay_session_free(s);
    replay_plan_free(p);
}

static void test_workload(workload_kind k)
{
    workload w;
    workload_size sz = test_workload_size(k);
    if (workload_make(&w, k, &sz) != TG_OK) {
        CHECK_MSG(0, "workload %d: %s", (int)k, eager_error());
        return;
    }
    graph *traced = workload_trace(&w, 0);
    CHECK_MSG(traced != NULL, "%s: trace: %s", w.name, eager_error());
    replay_tensor x = {.name = "x", .type = *eager_type(w.x), .input = eager_peek(w.x)};
    for (int level = 0; traced && level <= 3; level += 3) {
        graph *g = graph_clone(traced);
        opt_options o = opt_default_options();
        o.level = level;
        char err[512] = "", what[64];
        CHECK_MSG(g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "%s -O%d: %s",
                  w.name, level, err);
        snprintf(what, sizeof what, "%s -O%d", w.name, level);
        if (g)
            check_graph(g, &x, 0, what);
        graph_free(g);
    }
    graph_free(traced);
    workload_free(&w);
}

/* A value read while tracing (eager_item: a strict guard) between nodes. */
static void test_guard(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(4, 8), 7, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    eager_tensor *n = eager_reduce_sum(eager_mul(x, x), TG_NOINTS, 0);
    double v = eager_item(n);
    trace_output(eager_mul(eager_relu(x), eager_scalar(v)), "y");
    graph *g = trace_freeze();
    CHECK_MSG(g && g->nguards == 1, "guard graph: %s", g ? "want one guard" : eager_error());
    replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)};
    if (g && g->nguards == 1)
        check_graph(g, &in, 1, "one guard");
    graph_free(g);
    eager_pool_pop();
}

/*
 * A cl_mem output is written by the node that makes it, except where that
 * would show: graphs on x f32[4,8] (x[i] = i - 13.5), each output checked
 * against loops here and its copies into the caller's buffers counted, in
 * runs alternating with host outputs and other buffers.
 */
static const char *const direct_ir[] = {
    /* 0: relu(x): written in place, no copy */
    "graph d(%x: f32[4,8]) -> (y: f32[4,8]) {\n  %y: f32[4,8] = relu(%x)\n  return y = %y\n}\n",
    /* 1: a view of an intermediate shares its buffer: copied */
    "graph d(%x: f32[4,8]) -> (y: f32[32]) {\n  %t: f32[4,8] = relu(%x)\n"
    "  %y: f32[32] = reshape(%t) {shape=[32]}\n  return y = %y\n}\n",
    /* 2: the input itself: copied */
    "graph d(%x: f32[4,8]) -> (y: f32[4,8]) {\n  return y = %x\n}\n",
    /* 3: relu(x) and relu(x) + x from it: y read by a node after it is made */
    "graph d(%x: f32[4,8]) -> (y: f32[4,8], z: f32[4,8]) {\n  %y: f32[4,8] = relu(%x)\n"
    "  %z: f32[4,8] = add(%y, %x)\n  return y = %y\n  return z = %z\n}\n",
};

static float direct_want(int graph, int out, float x)
{
    float r = x > 0 ? x : 0;
    return graph == 2 ? x : graph == 3 && out == 1 ? r + x : r;
}

/* Runs graph gi with x in xb and outputs into bufs (NULL: host data), names
 * (NULL: by position); checks values and copies. */
static void direct_case(replay_session *s, cl_command_queue q, int gi, cl_mem xb,
                        const cl_mem *bufs, const char *const *names, int nout,
                        long want_copies, const char *what)
{
    float x[32], got[4][32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)i - 13.5f;
    clEnqueueWriteBuffer(q, xb, CL_TRUE, 0, sizeof x, x, 0, NULL, NULL);
    graph_type tx = {GRAPH_F32, 2, {4, 8}}, ty = tx;
    if (gi == 1)
        ty = (graph_type){GRAPH_F32, 1, {32}};
    replay_tensor in = {.name = "x", .type = tx, .buffer = xb}, out[4];
    for (int k = 0; k < nout; k++) {
        float fill = -99;
        if (bufs[k] && bufs[k] != xb)
            clEnqueueFillBuffer(q, bufs[k], &fill, sizeof fill, 0, sizeof got[k], 0, NULL, NULL);
        out[k] = (replay_tensor){.name = names ? names[k] : NULL,
                                 .type = ty,
                                 .data = bufs[k] ? NULL : got[k],
                                 .buffer = bufs[k]};
    }
    clFinish(q);
    memset(&cnt, 0, sizeof cnt);
    tg_status st = replay_run(s, &in, 1, out, nout);
    long copies = cnt.copies;
    CHECK_MSG(st == TG_OK, "%s: %s", what, replay_session_error(s));
    CHECK_MSG(copies == want_copies, "%s: %ld copies into the caller's buffers, want %ld", what,
              copies, want_copies);
    for (int k = 0; k < nout; k++) {
        if (bufs[k])
            clEnqueueReadBuffer(q, bufs[k], CL_TRUE, 0, sizeof got[k], got[k], 0, NULL, NULL);
        int o = names && !strcmp(names[k], "z") ? 1 : names ? 0 : k, bad = -1;
        for (int i = 0; i < 32 && bad < 0; i++)
            if (got[k][i] != direct_want(gi, o, x[i]))
                bad = i;
        CHECK_MSG(bad < 0, "%s: output %d element %d is %g, want %g", what, k, bad,
                  bad >= 0 ? got[k][bad] : 0.0, bad >= 0 ? direct_want(gi, o, x[bad]) : 0.0);
    }
}

static void test_direct_outputs(void)
{
    char err[512];
    for (int gi = 0; gi < 4; gi++) {
        graph *g = graph_parse(direct_ir[gi], strlen(direct_ir[gi]), err, sizeof err);
        CHECK_MSG(g != NULL, "graph %d: %s", gi, err);
        replay_opts ro = {.device = "opencl", .threads = 1};
        replay_plan *p = g ? replay_compile(g, &ro, err, sizeof err) : NULL;
        CHECK_MSG(!g || p != NULL, "graph %d: %s", gi, err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        if (!s) {
            replay_plan_free(p);
            graph_free(g);
            continue;
        }
        cl_context ctx = replay_plan_handle(p, "cl_context");
        cl_device_id dev;
        cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
        cl_mem xb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 128, NULL, &e);
        cl_mem b[3], big = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 256, NULL, &e);
        for (int k = 0; k < 3; k++)
            b[k] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 128, NULL, &e);
        cl_buffer_region reg = {0, 128};
        cl_mem sub = clCreateSubBuffer(big, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg,
                                       &e);
        char what[96];
        const cl_mem none[2] = {NULL, NULL};
        int nout = gi == 3 ? 2 : 1;
        long own = gi == 0 || gi == 3 ? 0 : 1; /* copies per cl_mem output */
        for (int r = 0; r < 2; r++) { /* the second time bound, and after host runs */
            snprintf(what, sizeof what, "graph %d round %d: cl_mem", gi, r);
            direct_case(s, q, gi, xb, b, NULL, nout, own * nout, what);
            snprintf(what, sizeof what, "graph %d round %d: host", gi, r);
            direct_case(s, q, gi, xb, none, NULL, nout, 0, what);
            snprintf(what, sizeof what, "graph %d round %d: other cl_mem", gi, r);
            direct_case(s, q, gi, xb, &b[1], NULL, nout, own * nout, what);
        }
        if (gi == 0) { /* the input's buffer as the output: copied at the end */
            direct_case(s, q, gi, xb, &xb, NULL, 1, 1, "graph 0: the input's buffer as output");
            direct_case(s, q, gi, xb, &sub, NULL, 1, 1, "graph 0: a sub-buffer as output");
        }
        if (gi == 3) { /* y and z, by name, in the other order; z by the host */
            const char *zy[2] = {"z", "y"};
            const cl_mem zb[2] = {NULL, b[2]};
            direct_case(s, q, gi, xb, zb, zy, 2, 0, "graph 3: z on the host, y to a cl_mem");
            const cl_mem yx[2] = {xb, b[0]}; /* z reads x after y is made */
            direct_case(s, q, gi, xb, yx, NULL, 2, 1, "graph 3: y into the input's buffer");
            const char *twice[2] = {"y", "y"};
            direct_case(s, q, gi, xb, b, twice, 2, 2, "graph 3: y asked for twice");
        }
        clReleaseMemObject(sub);
        clReleaseMemObject(big);
        for (int k = 0; k < 3; k++)
            clReleaseMemObject(b[k]);
        clReleaseMemObject(xb);
        clReleaseCommandQueue(q);
        replay_session_free(s);
        replay_plan_free(p);
        graph_free(g);
    }
}

int main(void)
{
    if (!check_opencl_device(NULL))
        return CHECK_SKIP;
    for (int k = 0; k < WL_COUNT; k++)
        test_workload((workload_kind)k);
    test_guard();
    test_direct_outputs();
    replay_backend_shutdown();
    return check_done();
}
