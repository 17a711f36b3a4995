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
 *                tensor crosses to the host; and the same output as the host
 *                run (read back by the test after counting).
 * A graph with one guard: one blocking read more, and still one clFinish.
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
#include "optimize/opt.h"
#include "replay/internal.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "workloads/workloads.h"

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
    replay_opts ro = {REPLAY_OPENCL, 1, 0, NULL, NULL, NULL};
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
    cl_context ctx = replay_opencl_context(p);
    cl_device_id dev;
    cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_mem xb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, xbytes, NULL, &e);
    cl_mem yb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ybytes, NULL, &e);
    clEnqueueWriteBuffer(q, xb, CL_TRUE, 0, xbytes, x->data, 0, NULL, NULL);
    replay_tensor hin = *x, hout = {NULL, *yt, host_y, NULL};
    replay_tensor din = {x->name, x->type, NULL, xb}, dout = {NULL, *yt, NULL, yb};
    /* the first run of each binds the plan: count the second */
    for (int r = 0; r < 2; r++) {
        char w[160];
        snprintf(w, sizeof w, "%s host data", what);
        counts h = counted_run(s, &hin, &hout, w);
        snprintf(w, sizeof w, "%s cl_mem data", what);
        counts d = counted_run(s, &din, &dout, w);
        if (r == 0)
            continue;
        CHECK_MSG(h.copies == view_copies && d.copies == view_copies + 1,
                  "%s: buffer copies per run: %ld host, %ld cl_mem (want %ld views of inputs, "
                  "+1 for the cl_mem output)", what, h.copies, d.copies, view_copies);
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
    replay_tensor x = {"x", *eager_type(w.x), (void *)eager_peek(w.x), NULL};
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
    replay_tensor in = {"x", *eager_type(x), (void *)eager_peek(x), NULL};
    if (g && g->nguards == 1)
        check_graph(g, &in, 1, "one guard");
    graph_free(g);
    eager_pool_pop();
}

int main(void)
{
    if (!check_opencl_device(NULL))
        return CHECK_SKIP;
    for (int k = 0; k < WL_COUNT; k++)
        test_workload((workload_kind)k);
    test_guard();
    replay_opencl_shutdown();
    return check_done();
}
