/*
 * gpu_bench.c - one round of the GPU benchmark of issue 20 (bench/gpu/run.sh
 * runs several, alternating with the PyTorch CUDA peer, and merges them).
 *
 *   gpu_bench [--device N|NAME] [--workloads mlp,tiny,...] [--runs N]
 *             [--budget-ms MS] [--threads N] [--quick] [--no-fork] [--out FILE]
 *
 * For each workload of workloads/workloads.h (full size, as bench/suite.c)
 * it measures, in a child process of its own (a crash or a hang costs that
 * workload only, and says at which stage):
 *   - CPU eager: a forward inside a pool, popped, on --threads threads
 *     (default: every online core), timed before OpenCL is touched;
 *   - for each level -O0..-O3, the traced graph optimized, replayed once on
 *     the CPU (the reference) and compiled for the OpenCL device --device
 *     (an index of `tracegraph devices` or a name substring; default the
 *     first), then timed two ways on one session:
 *       host    replay_run with host inputs and outputs: every run writes
 *               the input to the device and reads the output back (what a
 *               caller whose data lives in host memory pays);
 *       device  replay_run with cl_mem input and output (replay_tensor.buffer,
 *               made in replay_plan_handle(p, "cl_context"), the input written
 *               once before timing): no host copies, one wait per run;
 *     and each output compared with the CPU replay at the same level:
 *     max |ocl - cpu| / max |cpu| (host: the first run's output; device:
 *     the output buffer read back after the timed runs).  Above 1e-4 the
 *     level fails.
 * Timing: warm-up (>= 3 runs and >= 20 ms each), then rounds of one run of
 * each OpenCL runner (8: 4 levels x host/device), interleaved so that a
 * change in the machine's state hits them alike, until each has --runs
 * runs (default 21; --quick 10) and the rounds took --budget-ms per runner
 * (default 300; --quick 20), at most MAX_RUNS.  Every run's time is kept
 * (bench/gpu/merge.py pools the rounds of several processes into medians).
 *
 * Output (--out, default gpu-round.json), schema "tracegraph-gpu-round-1",
 * times in ms, null where not measured:
 * { "schema", "device": "platform / device name" or null, "cpu", "cores",
 *   "threads", "date", "config": {"min_runs", "budget_ms", "rel_tolerance"},
 *   "ok", "records": [ { "workload", "desc", "ok", "error",
 *     "eager_ms": [times...],
 *     "levels": [ { "level", "ok", "error", "compile_ms", "cpu_vs_eager",
 *                   "host_ms": [...], "device_ms": [...],
 *                   "host_rel_err", "device_rel_err",
 *                   "kernels_per_run", "blas_calls_per_run": what one more
 *                   device-resident run enqueued, our kernels and CLBlast
 *                   calls, "args_set_per_run": the clSetKernelArg calls it
 *                   made (arguments that changed), "enqueue_us_per_run":
 *                   host time enqueueing a device-resident run, in us, the
 *                   mean of 5 more } ] } ] }
 * Exit status 1 when a workload or level failed (the file is written
 * anyway), 2 on a bad command line.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "optimize/opt.h"
#include "replay/opencl/ocl_blas.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"
#include "tracegraph.h"
#include "../workloads/workloads.h"

#define NLEVELS 4
#define MAX_RUNS 2000
#define OCL_TOL 1e-4      /* OpenCL vs the CPU replay at the same level (issue 20) */
#define EAGER_TOL 1e-3    /* the CPU replay vs eager (as bench/suite.c) */
#define RECORD_TIMEOUT_S 300

typedef struct config {
    const char *out, *device;
    int min_runs, threads, no_fork;
    double budget_ms;
    int use[WL_COUNT];
} config;

typedef struct series {
    int runs;
    double t[MAX_RUNS];
} series;

typedef struct level_out {
    int ok, compiled;
    char error[512];
    double compile_ms, cpu_vs_eager, host_rel, device_rel;
    double kernels, blas_calls; /* what one device-resident run enqueued (NAN: unknown) */
    double args_set, enqueue_us; /* its clSetKernelArg calls; host us enqueueing (mean of 5) */
    series host, dev;
} level_out;

typedef struct record {
    int ok, measured; /* measured: the times below are complete */
    char error[768], stage[64], desc[256], device[300];
    series eager;
    level_out lv[NLEVELS];
} record;

static double now_ms(void)
{
    return bench_now_ns() / 1e6;
}

/* max |a - b| / max |b| (NaN or inf where b is finite: inf). */
static double rel_err(const float *a, const float *b, int64_t n)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(a[i]) != isnan(b[i]) || (isnan(d) && !isnan(b[i])))
            d = INFINITY;
        else if (isnan(d))
            d = 0;
        diff = d > diff ? d : diff;
        scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    }
    return diff == 0 ? 0 : diff / (scale > 0 ? scale : 1e-30);
}

/* ---- timing ---- */

typedef struct runner {
    int (*run)(void *ctx); /* 0 on success */
    void *ctx;
    series *s;
    int failed;
} runner;

/* Warm-up, then rounds of one run of each runner (see the top). */
static void measure(const config *c, runner *r, int n)
{
    bench_runner br[2 * NLEVELS];
    for (int k = 0; k < n; k++)
        br[k] = (bench_runner){r[k].run, r[k].ctx, r[k].s->t, r[k].failed};
    int runs = bench_rounds(br, n, c->min_runs, c->budget_ms, MAX_RUNS);
    for (int k = 0; k < n; k++) {
        r[k].failed = br[k].failed;
        r[k].s->runs = r[k].failed ? 0 : runs;
    }
}

/* One replay_run of a level, host or device resident. */
typedef struct ocl_ctx {
    replay_session *s;
    replay_tensor in, out;
} ocl_ctx;

static int ocl_once(void *p)
{
    ocl_ctx *o = p;
    return replay_run(o->s, &o->in, 1, &o->out, 1) != TG_OK;
}

/* ---- one level ---- */

typedef struct level_state {
    replay_plan *p;
    replay_session *s;
    cl_mem xb, yb;
    cl_command_queue q;
    float *host_y;
    ocl_ctx host, dev;
} level_state;

static void level_free(level_state *ls)
{
    replay_session_free(ls->s);
    if (ls->xb)
        clReleaseMemObject(ls->xb);
    if (ls->yb)
        clReleaseMemObject(ls->yb);
    if (ls->q)
        clReleaseCommandQueue(ls->q);
    replay_plan_free(ls->p);
    free(ls->host_y);
    memset(ls, 0, sizeof *ls);
}

/* The CPU replay of g on x: a malloc'd copy of its output, or NULL with lv->error. */
static float *cpu_replay(const graph *g, const replay_tensor *x, int threads, int64_t n,
                         level_out *lv)
{
    replay_opts ro = {.threads = threads};
    replay_plan *p = replay_compile(g, &ro, lv->error, sizeof lv->error);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    replay_tensor out = {.name = NULL};
    float *y = NULL;
    if (p && !s)
        snprintf(lv->error, sizeof lv->error, "CPU replay: out of memory");
    else if (s && replay_run(s, x, 1, &out, 1) != TG_OK)
        snprintf(lv->error, sizeof lv->error, "CPU replay: %s", replay_session_error(s));
    else if (s && (out.type.dtype != GRAPH_F32 || graph_type_numel(&out.type) != n))
        snprintf(lv->error, sizeof lv->error, "CPU replay: output type differs from eager's");
    else if (s && (y = malloc((size_t)n * sizeof *y + 1)) != NULL)
        memcpy(y, out.data, (size_t)n * sizeof *y);
    replay_session_free(s);
    replay_plan_free(p);
    return y;
}

/* Compiles g for OpenCL into ls (plan, session, cl_mem input written once
 * and output) and checks a first run of each way; 1 when ready to time. */
static int prepare_ocl(const config *c, const graph *g, const replay_tensor *x, const float *cpu_y,
                       int64_t n, level_out *lv, level_state *ls, char *device, size_t devlen)
{
    char name[160];
    snprintf(name, sizeof name, "opencl%s%s", c->device ? ":" : "", c->device ? c->device : "");
    replay_opts ro = {.threads = 1, .device = name};
    double t0 = now_ms();
    ls->p = replay_compile(g, &ro, lv->error, sizeof lv->error);
    lv->compile_ms = now_ms() - t0;
    if (!ls->p)
        return 0;
    lv->compiled = 1;
    cl_context ctx = replay_plan_handle(ls->p, "cl_context");
    cl_device_id dev = NULL;
    cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
    if (e == CL_SUCCESS && !device[0]) {
        char name[256] = "", plat[256] = "";
        cl_platform_id pid = NULL;
        clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof pid, &pid, NULL);
        if (pid)
            clGetPlatformInfo(pid, CL_PLATFORM_NAME, sizeof plat - 1, plat, NULL);
        snprintf(device, devlen, "%s / %s", plat, name);
    }
    size_t xbytes = (size_t)graph_type_numel(&x->type) * sizeof(float);
    size_t ybytes = (size_t)n * sizeof(float);
    if (e == CL_SUCCESS)
        ls->q = clCreateCommandQueue(ctx, dev, 0, &e);
    if (e == CL_SUCCESS)
        ls->xb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, xbytes, NULL, &e);
    if (e == CL_SUCCESS)
        ls->yb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ybytes, NULL, &e);
    if (e == CL_SUCCESS)
        e = clEnqueueWriteBuffer(ls->q, ls->xb, CL_TRUE, 0, xbytes, x->data, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        snprintf(lv->error, sizeof lv->error, "OpenCL setup of the device buffers failed "
                 "(error %d)", e);
        return 0;
    }
    ls->s = replay_session_new(ls->p, NULL, 0);
    ls->host_y = malloc(ybytes + 1);
    if (!ls->s || !ls->host_y) {
        snprintf(lv->error, sizeof lv->error, "replay_session_new: out of memory");
        return 0;
    }
    graph_type yt = *replay_output_type(ls->p, 0);
    ls->host = (ocl_ctx){ls->s, *x, {.type = yt, .data = ls->host_y}};
    ls->dev = (ocl_ctx){ls->s,
                        {.name = x->name, .type = x->type, .buffer = ls->xb},
                        {.type = yt, .buffer = ls->yb}};
    if (ocl_once(&ls->host) || ocl_once(&ls->dev)) {
        snprintf(lv->error, sizeof lv->error, "OpenCL replay_run: %s",
                 replay_session_error(ls->s));
        return 0;
    }
    lv->host_rel = rel_err(ls->host_y, cpu_y, n);
    return 1;
}

/* Reads the device-resident output back and checks both ways' errors. */
static void check_ocl(level_state *ls, const float *cpu_y, int64_t n, level_out *lv)
{
    /* one more device-resident run, counting what it enqueued: on a GPU
     * each launch costs host time, a floor under small graphs */
    long k0 = ocl_kernels_run(), b0 = ocl_blas_calls(), a0 = ocl_args_set();
    int counted = lv->dev.runs > 0 && ocl_once(&ls->dev) == 0;
    lv->kernels = counted ? (double)(ocl_kernels_run() - k0) : NAN;
    lv->blas_calls = counted ? (double)(ocl_blas_calls() - b0) : NAN;
    lv->args_set = counted ? (double)(ocl_args_set() - a0) : NAN;
    long long t0 = ocl_enqueue_ns();
    int timed = counted;
    for (int r = 0; r < 5 && timed; r++)
        timed = ocl_once(&ls->dev) == 0;
    lv->enqueue_us = timed ? (double)(ocl_enqueue_ns() - t0) / 5e3 : NAN;
    float *y = malloc((size_t)n * sizeof *y + 1);
    cl_int e = y ? clEnqueueReadBuffer(ls->q, ls->yb, CL_TRUE, 0, (size_t)n * sizeof *y, y, 0,
                                       NULL, NULL)
                 : CL_OUT_OF_HOST_MEMORY;
    lv->device_rel = e == CL_SUCCESS ? rel_err(y, cpu_y, n) : INFINITY;
    free(y);
    lv->ok = lv->host.runs > 0 && lv->dev.runs > 0 && lv->host_rel <= OCL_TOL &&
             lv->device_rel <= OCL_TOL;
    if (!lv->ok && !lv->error[0])
        snprintf(lv->error, sizeof lv->error, lv->host.runs && lv->dev.runs
                 ? "OpenCL differs from the CPU replay: host %.3g, device %.3g (limit %g)"
                 : "a timed run failed", lv->host_rel, lv->device_rel, OCL_TOL);
}

/* ---- one workload ---- */

static void run_record(const config *c, workload_kind k, record *rec)
{
    workload w;
    snprintf(rec->stage, sizeof rec->stage, "setup");
    if (workload_make(&w, k, NULL) != TG_OK) {
        snprintf(rec->error, sizeof rec->error, "workload_make: %s", eager_error());
        return;
    }
    workload_describe(k, &w.size, rec->desc, sizeof rec->desc);
    eager_set_threads(c->threads);
    /* eager's output: the CPU replay is checked against it */
    snprintf(rec->stage, sizeof rec->stage, "eager");
    eager_pool_push();
    eager_tensor *ey = workload_forward(&w, w.x);
    int64_t n = ey && eager_dtype(ey) == GRAPH_F32 ? eager_numel(ey) : 0;
    float *eager_y = n ? malloc((size_t)n * sizeof(float) + 1) : NULL;
    if (eager_y)
        memcpy(eager_y, eager_peek(ey), (size_t)n * sizeof(float));
    eager_pool_pop();
    graph *traced = NULL;
    if (!eager_y) {
        snprintf(rec->error, sizeof rec->error, "eager: %s", n ? "out of memory" : eager_error());
        goto done;
    }
    runner er = {bench_workload_once, &w, &rec->eager, 0};
    measure(c, &er, 1); /* before OpenCL: its threads must not disturb it */
    snprintf(rec->stage, sizeof rec->stage, "trace");
    traced = workload_trace(&w, 1);
    if (!traced) {
        snprintf(rec->error, sizeof rec->error, "trace: %s", eager_error());
        goto done;
    }
    replay_tensor x = {.name = "x", .type = *eager_type(w.x), .input = eager_peek(w.x)};
    level_state ls[NLEVELS];
    float *cpu_y[NLEVELS] = {NULL};
    runner r[2 * NLEVELS];
    int nr = 0;
    memset(ls, 0, sizeof ls);
    for (int l = 0; l < NLEVELS; l++) {
        level_out *lv = &rec->lv[l];
        snprintf(rec->stage, sizeof rec->stage, "-O%d: optimize and CPU replay", l);
        graph *g = graph_clone(traced);
        opt_options o = opt_default_options();
        o.level = l;
        if (!g || opt_optimize(g, &o, NULL, lv->error, sizeof lv->error) != TG_OK) {
            if (!g)
                snprintf(lv->error, sizeof lv->error, "graph_clone: out of memory");
            graph_free(g);
            continue;
        }
        cpu_y[l] = cpu_replay(g, &x, c->threads, n, lv);
        if (cpu_y[l]) {
            lv->cpu_vs_eager = rel_err(cpu_y[l], eager_y, n);
            snprintf(rec->stage, sizeof rec->stage, "-O%d: OpenCL compile and first runs", l);
            if (prepare_ocl(c, g, &x, cpu_y[l], n, lv, &ls[l], rec->device, sizeof rec->device)) {
                r[nr++] = (runner){ocl_once, &ls[l].host, &lv->host, 0};
                r[nr++] = (runner){ocl_once, &ls[l].dev, &lv->dev, 0};
            }
        }
        graph_free(g);
    }
    snprintf(rec->stage, sizeof rec->stage, "OpenCL timing");
    measure(c, r, nr);
    rec->ok = rec->eager.runs > 0;
    for (int l = 0; l < NLEVELS; l++) {
        level_out *lv = &rec->lv[l];
        if (ls[l].s && cpu_y[l])
            check_ocl(&ls[l], cpu_y[l], n, lv);
        if (lv->ok && lv->cpu_vs_eager > EAGER_TOL) {
            lv->ok = 0;
            snprintf(lv->error, sizeof lv->error, "the CPU replay differs from eager: %.3g "
                     "(limit %g)", lv->cpu_vs_eager, EAGER_TOL);
        }
        if (!lv->ok && lv->host.runs && lv->dev.runs && lv->error[0] == 0)
            snprintf(lv->error, sizeof lv->error, "failed");
        rec->ok = rec->ok && lv->ok;
    }
    rec->measured = 1;
    /* Freeing is a stage of its own: a driver that crashes here (issue 20's
     * mlp on NVIDIA) loses no figure. */
    snprintf(rec->stage, sizeof rec->stage, "freeing the OpenCL plans and sessions");
    for (int l = 0; l < NLEVELS; l++) {
        level_free(&ls[l]);
        free(cpu_y[l]);
    }
    replay_backend_shutdown();
done:
    snprintf(rec->stage, sizeof rec->stage, "done");
    graph_free(traced);
    free(eager_y);
    workload_free(&w);
    eager_clear_error();
}

/* run_record in a child process writing into shared memory (see the top). */
static void run_isolated(const config *c, workload_kind k, record *rec)
{
    record *sh = c->no_fork ? MAP_FAILED
                            : mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        memset(rec, 0, sizeof *rec);
        run_record(c, k, rec);
        return;
    }
    memset(sh, 0, sizeof *sh);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(RECORD_TIMEOUT_S);
        run_record(c, k, sh);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        status = -1;
    memcpy(rec, sh, sizeof *rec);
    munmap(sh, sizeof *sh);
    if (status == -1 || !WIFEXITED(status)) {
        rec->ok = 0;
        snprintf(rec->error, sizeof rec->error,
                 "crashed (%s %d) during %s%s; debug with: gpu_bench --no-fork --workloads %s",
                 status == -1 ? "fork/wait failed" : "signal",
                 status == -1 ? errno : WTERMSIG(status), rec->stage[0] ? rec->stage : "setup",
                 rec->measured ? " (after the timings, which are kept)" : "", workload_name(k));
    }
}

/* ---- output ---- */

static void json_series(FILE *f, const char *key, const series *s)
{
    fprintf(f, "\"%s\": [", key);
    for (int i = 0; i < s->runs; i++) {
        fputs(i ? ", " : "", f);
        bench_json_num(f, s->t[i]);
    }
    fputs("]", f);
}

static const char *cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "?");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, len, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
    return buf;
}

static int write_json(const config *c, const record *recs, const int *kinds, int n, int ok)
{
    FILE *f = fopen(c->out, "w");
    if (!f) {
        fprintf(stderr, "gpu_bench: cannot write %s: %s\n", c->out, strerror(errno));
        return 0;
    }
    const char *device = NULL;
    for (int i = 0; i < n && !device; i++)
        if (recs[i].device[0])
            device = recs[i].device;
    char cpu[256], date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fputs("{\"schema\": \"tracegraph-gpu-round-1\", \"device\": ", f);
    if (device)
        bench_json_str(f, device);
    else
        fputs("null", f);
    fputs(", \"cpu\": ", f);
    bench_json_str(f, cpu_model(cpu, sizeof cpu));
    fprintf(f, ", \"cores\": %ld, \"threads\": %d, \"date\": \"%s\",\n", sysconf(_SC_NPROCESSORS_ONLN),
            c->threads, date);
    fprintf(f, " \"config\": {\"min_runs\": %d, \"budget_ms\": %g, \"rel_tolerance\": %g},\n",
            c->min_runs, c->budget_ms, OCL_TOL);
    fprintf(f, " \"ok\": %s, \"records\": [\n", ok ? "true" : "false");
    for (int i = 0; i < n; i++) {
        const record *r = &recs[i];
        fputs("  {\"workload\": ", f);
        bench_json_str(f, workload_name((workload_kind)kinds[i]));
        fputs(", \"desc\": ", f);
        bench_json_str(f, r->desc);
        fprintf(f, ", \"ok\": %s, \"error\": ", r->ok ? "true" : "false");
        bench_json_str(f, r->error);
        fputs(",\n   ", f);
        json_series(f, "eager_ms", &r->eager);
        fputs(",\n   \"levels\": [\n", f);
        for (int l = 0; l < NLEVELS; l++) {
            const level_out *lv = &r->lv[l];
            fprintf(f, "    {\"level\": %d, \"ok\": %s, \"error\": ", l, lv->ok ? "true" : "false");
            bench_json_str(f, lv->error);
            fputs(", \"compile_ms\": ", f);
            bench_json_num(f, lv->compiled ? lv->compile_ms : NAN);
            fputs(", \"cpu_vs_eager\": ", f);
            bench_json_num(f, lv->ok ? lv->cpu_vs_eager : NAN);
            fputs(", \"host_rel_err\": ", f);
            bench_json_num(f, lv->host.runs ? lv->host_rel : NAN);
            fputs(", \"device_rel_err\": ", f);
            bench_json_num(f, lv->dev.runs ? lv->device_rel : NAN);
            fputs(",\n     ", f);
            json_series(f, "host_ms", &lv->host);
            fputs(",\n     ", f);
            json_series(f, "device_ms", &lv->dev);
            fprintf(f, ", \"kernels_per_run\": ");
            bench_json_num(f, lv->dev.runs ? lv->kernels : NAN);
            fprintf(f, ", \"blas_calls_per_run\": ");
            bench_json_num(f, lv->dev.runs ? lv->blas_calls : NAN);
            fprintf(f, ", \"args_set_per_run\": ");
            bench_json_num(f, lv->dev.runs ? lv->args_set : NAN);
            fprintf(f, ", \"enqueue_us_per_run\": ");
            bench_json_num(f, lv->dev.runs ? lv->enqueue_us : NAN);
            fprintf(f, "}%s\n", l + 1 < NLEVELS ? "," : "");
        }
        fprintf(f, "   ]}%s\n", i + 1 < n ? "," : "");
    }
    fputs(" ]}\n", f);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "gpu_bench: error writing %s\n", c->out);
    return !bad;
}

static void progress(const record *r, workload_kind k, double secs)
{
    static series a, b; /* copies: bench_median sorts */
    a = r->eager;
    fprintf(stderr, "gpu_bench: %-13s eager %8.3f ms |", workload_name(k),
            a.runs ? bench_median(a.t, a.runs) : NAN);
    for (int l = 0; l < NLEVELS; l++) {
        const level_out *lv = &r->lv[l];
        a = lv->host;
        b = lv->dev;
        if (a.runs && b.runs)
            fprintf(stderr, " -O%d %.3f/%.3f", l, bench_median(a.t, a.runs),
                    bench_median(b.t, b.runs));
        else
            fprintf(stderr, " -O%d FAILED", l);
    }
    fprintf(stderr, " ms (host/device) | %.1f s\n", secs);
    if (r->error[0])
        fprintf(stderr, "gpu_bench: FAIL %s: %s\n", workload_name(k), r->error);
    for (int l = 0; l < NLEVELS; l++)
        if (!r->lv[l].ok && r->lv[l].error[0])
            fprintf(stderr, "gpu_bench: FAIL %s -O%d: %s\n", workload_name(k), l,
                    r->lv[l].error);
}

static int usage(void)
{
    fprintf(stderr, "usage: gpu_bench [--device N|NAME] [--workloads mlp,resblock,encoder,"
                    "encoder_fused,chain,tiny]\n                 [--runs N] [--budget-ms MS] "
                    "[--threads N] [--quick] [--no-fork] [--out FILE]\n");
    return 2;
}

static int parse_args(config *c, int argc, char **argv)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *c = (config){"gpu-round.json", NULL, 21, cores > 0 ? (int)cores : 1, 0, 300, {0}};
    for (int k = 0; k < WL_COUNT; k++)
        c->use[k] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            c->min_runs = 10;
            c->budget_ms = 20;
            continue;
        }
        if (!strcmp(a, "--no-fork")) {
            c->no_fork = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "gpu_bench: unknown option or missing value: %s\n", a);
            return 0;
        }
        i++;
        char *end = NULL;
        if (!strcmp(a, "--out"))
            c->out = v;
        else if (!strcmp(a, "--device"))
            c->device = v;
        else if (!strcmp(a, "--runs"))
            c->min_runs = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--threads"))
            c->threads = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--budget-ms"))
            c->budget_ms = strtod(v, &end);
        else if (!strcmp(a, "--workloads")) {
            if (!bench_workload_list("gpu_bench", v, c->use))
                return 0;
        } else {
            fprintf(stderr, "gpu_bench: unknown option %s\n", a);
            return 0;
        }
        if (end && *end) {
            fprintf(stderr, "gpu_bench: %s wants a number, not '%s'\n", a, v);
            return 0;
        }
    }
    if (c->min_runs < 1 || c->min_runs > MAX_RUNS || c->threads < 1 || c->threads > 1024 ||
        !(c->budget_ms >= 0)) {
        fprintf(stderr, "gpu_bench: --runs must be 1..%d, --threads 1..1024, --budget-ms >= 0\n",
                MAX_RUNS);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    config c;
    if (!parse_args(&c, argc, argv))
        return usage();
    static record recs[WL_COUNT];
    int kinds[WL_COUNT], n = 0, ok = 1;
    for (int k = 0; k < WL_COUNT; k++) {
        if (!c.use[k])
            continue;
        double t0 = now_ms();
        run_isolated(&c, (workload_kind)k, &recs[n]);
        kinds[n] = k;
        progress(&recs[n], (workload_kind)k, (now_ms() - t0) / 1e3);
        ok &= recs[n].ok;
        n++;
    }
    if (!write_json(&c, recs, kinds, n, ok))
        return 1;
    return ok ? 0 : 1;
}
