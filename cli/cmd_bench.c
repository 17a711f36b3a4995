/*
 * cmd_bench.c - `tracegraph bench`: times replay runs of a saved graph.
 *
 * Each run is timed alone (monotonic clock around replay_run, outputs left
 * in the session's buffers so no copy is timed), after warm-up runs that
 * bind the plan and warm the caches.  A long benchmark shows progress on
 * stderr: one carriage-return-updated line on a terminal, a plain line
 * every few seconds otherwise (logs, CI), starting once it has run ~2 s.
 *
 * --backend opencl times two ways, the same warm-up and runs each (issue
 * 20): host-copy (host inputs written to the device and outputs read back
 * into the session's host buffers every run, what replay_run with host data
 * costs) and device-resident (inputs and outputs as cl_mem in the plan's
 * context, replay_tensor.buffer: the inputs written once before timing, no
 * host copy in a run).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdlib.h>
#include <unistd.h>

#include "../graph/alloc.h"
#include "cli.h"

/* Progress appears after this many seconds. */
#define BENCH_QUIET_SECONDS 2.0

static void bench_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("bench"));
    printf("Times replay runs: warm-up runs first (not timed), then N timed runs; prints\n"
           "the min, median, mean and max time of one run in milliseconds and the runs\n"
           "per second.  Progress goes to stderr when the runs take more than ~2 s.\n\n"
           "options:\n"
           "  -i, --input ...   inputs as for `run`; without any, seeded random inputs\n"
           "                    at the traced shapes (f32 in [-1,1), ints in [0,4),\n"
           "                    bools 0/1)\n"
           "  --warmup N        untimed runs first (default 10)\n"
           "  --runs N          timed runs (default 100)\n"
           "  --threads N       threads per kernel (default 1)\n"
           "  --max-memory SIZE fail when the session would need more (as for `run`)\n"
           "  --tune            choose each GEMM (oneDNN or OpenBLAS, when installed)\n"
           "                    by timing it at compile, kept in a tuning cache\n"
           "                    ($TG_TUNE_CACHE or ~/.cache/tracegraph/tune.txt); prints\n"
           "                    what it chose (replay.h, replay_opts.tune)\n"
           "  --seed N          seed of the random inputs (default 1)\n"
           "  --backend B       replay backend, cpu or opencl (default cpu)\n"
           "  --device D        OpenCL device: index or name substring\n\n"
           "With --backend opencl two lines of times, the same runs each:\n"
           "  host-copy         replay_run on host data: every run writes the inputs\n"
           "                    to the device and reads the outputs back\n"
           "  device-resident   inputs and outputs as cl_mem on the device\n"
           "                    (replay_tensor.buffer; the inputs written once before\n"
           "                    timing): no host copies, one wait per run\n\n"
           "exit codes: 0 ok, 1 error, 2 bad command line, 3 a guard failed.\n\n"
           "example:\n  tracegraph bench model.tgraph --runs 1000 --threads 4\n");
}

typedef struct progress {
    double start, last;
    int tty, shown;
} progress;

/* Shows "warm-up 3/10" or "run 40/100" when it is time to. */
static void show_progress(progress *p, double now, const char *phase, long i, long n)
{
    if (now - p->start < BENCH_QUIET_SECONDS || now - p->last < (p->tty ? 0.1 : 5.0))
        return;
    p->last = now;
    p->shown = 1;
    fprintf(stderr, "%sbench: %s %ld/%ld (%.1f s)%s", p->tty ? "\r" : "", phase, i, n,
            now - p->start, p->tty ? "" : "\n");
    fflush(stderr);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs the warm-up and the timed runs of in -> outs; times[] in seconds.
 * outs NULL: the session's own output buffers (host). */
static int time_runs(const cli_run_opts *o, cli_setup *s, const replay_tensor *in,
                     replay_tensor *outs, double *times)
{
    replay_tensor *own = outs ? NULL : cli_outputs_new(o->cmd, s->g);
    if (!outs && !own)
        return CLI_ERROR;
    progress p = {cli_now(), 0, isatty(2), 0};
    for (long k = 0; k < o->warmup + o->runs; k++) {
        for (int i = 0; own && i < graph_output_count(s->g); i++) {
            own[i] = (replay_tensor){.name = NULL};
            graph_output_at(s->g, i, &own[i].name);
        }
        double t0 = cli_now();
        tg_status st = replay_run(s->session, in, s->in.n, outs ? outs : own,
                                  graph_output_count(s->g));
        double t1 = cli_now();
        if (st != TG_OK) {
            if (p.shown && p.tty)
                fprintf(stderr, "\n");
            cli_error(o->cmd, "%s", replay_session_error(s->session));
            if (st == TG_ERR_GUARD && s->random_inputs)
                cli_error(o->cmd, "the inputs were random: give inputs that take the traced "
                          "path with -i");
            tg_free(own);
            return cli_exit_code(st);
        }
        if (k >= o->warmup)
            times[k - o->warmup] = t1 - t0;
        if (k < o->warmup)
            show_progress(&p, t1, "warm-up", k + 1, o->warmup);
        else
            show_progress(&p, t1, "run", k + 1 - o->warmup, o->runs);
    }
    if (p.shown && p.tty)
        fprintf(stderr, "\r\033[K"); /* clear the progress line */
    tg_free(own);
    return CLI_OK;
}

/* "  min .. median .. mean .. max .. ms" after label, then runs/s. */
static void print_times(const char *label, long n, double *times)
{
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += times[i];
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    printf("  %smin %.4g ms  median %.4g ms  mean %.4g ms  max %.4g ms\n", label, times[0] * 1e3,
           median * 1e3, sum / (double)n * 1e3, times[n - 1] * 1e3);
    printf("  %s%.1f runs/s\n", label, sum > 0 ? (double)n / sum : 0.0);
}

static void print_header(const cli_run_opts *o, const cli_setup *s)
{
    const char *gemm = replay_opencl_gemm(s->plan);
    printf("bench %s: %s%s%s%s, %d thread%s, %ld runs after %ld warm-up, ", o->file,
           o->replay.backend == REPLAY_CPU ? "cpu" : "opencl", gemm ? " (GEMM " : "",
           gemm ? gemm : "", gemm ? ")" : "", o->replay.threads, o->replay.threads > 1 ? "s" : "",
           o->runs, o->warmup);
    if (s->random_inputs)
        printf("random inputs (seed %ld)\n", o->seed);
    else
        printf("inputs from .npy\n");
    printf("  layout: %s\n", replay_plan_layout(s->plan));
    if (o->replay.tune)
        printf("  %s\n", replay_plan_tuning(s->plan));
}

/* cl_mem buffers for the device-resident runs: the inputs (written once)
 * and outputs (sized as host run's outputs, in the plan's context). */
typedef struct dev_io {
    int nin, nout;
    replay_tensor *in, *out;
} dev_io;

static void dev_io_free(dev_io *d)
{
    for (int i = 0; d->in && i < d->nin; i++)
        if (d->in[i].buffer)
            clReleaseMemObject((cl_mem)d->in[i].buffer);
    for (int i = 0; d->out && i < d->nout; i++)
        if (d->out[i].buffer)
            clReleaseMemObject((cl_mem)d->out[i].buffer);
    tg_free(d->in);
    tg_free(d->out);
}

static size_t tensor_bytes(const graph_type *t)
{
    return (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
}

static int dev_io_new(const cli_run_opts *o, cli_setup *s, dev_io *d)
{
    *d = (dev_io){s->in.n, graph_output_count(s->g), NULL, NULL};
    cl_context ctx = replay_opencl_context(s->plan);
    cl_device_id dev = NULL;
    cl_command_queue q = NULL;
    cl_int e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL);
    if (e == CL_SUCCESS)
        q = clCreateCommandQueue(ctx, dev, 0, &e);
    /* one host run gives the output types at these inputs */
    replay_tensor *outs = cli_outputs_new(o->cmd, s->g);
    d->in = tg_calloc((size_t)d->nin + 1, sizeof *d->in);
    d->out = tg_calloc((size_t)d->nout + 1, sizeof *d->out);
    if (!outs || !d->in || !d->out) {
        if (q)
            clReleaseCommandQueue(q);
        tg_free(outs);
        dev_io_free(d);
        cli_error(o->cmd, "out of memory");
        return CLI_ERROR;
    }
    tg_status st = replay_run(s->session, s->in.t, s->in.n, outs, d->nout);
    if (st != TG_OK) {
        cli_error(o->cmd, "%s", replay_session_error(s->session));
        e = CL_SUCCESS;
    }
    for (int i = 0; st == TG_OK && e == CL_SUCCESS && i < d->nin; i++) {
        size_t bytes = tensor_bytes(&s->in.t[i].type);
        d->in[i] = (replay_tensor){.name = s->in.t[i].name, .type = s->in.t[i].type};
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
        d->in[i].buffer = m;
        if (e == CL_SUCCESS && bytes)
            e = clEnqueueWriteBuffer(q, m, CL_TRUE, 0, bytes, s->in.t[i].data, 0, NULL, NULL);
    }
    for (int i = 0; st == TG_OK && e == CL_SUCCESS && i < d->nout; i++) {
        size_t bytes = tensor_bytes(&outs[i].type);
        d->out[i] = (replay_tensor){.name = outs[i].name, .type = outs[i].type};
        d->out[i].buffer = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
    }
    if (q)
        clReleaseCommandQueue(q);
    tg_free(outs);
    if (st == TG_OK && e != CL_SUCCESS)
        cli_error(o->cmd, "cannot make the device buffers of the device-resident runs "
                  "(OpenCL error %d)", e);
    if (st != TG_OK || e != CL_SUCCESS) {
        dev_io_free(d);
        return st != TG_OK ? cli_exit_code(st) : CLI_ERROR;
    }
    return CLI_OK;
}

/* OpenCL: host-copy runs, then device-resident ones. */
static int bench_opencl(const cli_run_opts *o, cli_setup *s, double *times)
{
    int rc = time_runs(o, s, s->in.t, NULL, times);
    if (rc != CLI_OK)
        return rc;
    double *dtimes = tg_malloc(sizeof(double) * (size_t)o->runs);
    dev_io d = {0, 0, NULL, NULL};
    if (!dtimes) {
        cli_error(o->cmd, "out of memory for %ld timings", o->runs);
        return CLI_ERROR;
    }
    rc = dev_io_new(o, s, &d);
    if (rc == CLI_OK)
        rc = time_runs(o, s, d.in, d.out, dtimes);
    if (rc == CLI_OK) {
        print_header(o, s);
        printf("  host-copy (inputs written to the device, outputs read back, each run):\n");
        print_times("  ", o->runs, times);
        printf("  device-resident (inputs and outputs as cl_mem on the device, no host copies):\n");
        print_times("  ", o->runs, dtimes);
    }
    if (d.in || d.out)
        dev_io_free(&d);
    tg_free(dtimes);
    return rc;
}

int cli_bench(int argc, char **argv)
{
    static const int ids[] = {RUN_OPT_INPUT, RUN_OPT_BACKEND, RUN_OPT_DEVICE, RUN_OPT_THREADS, RUN_OPT_SEED,
                              RUN_OPT_WARMUP, RUN_OPT_RUNS, RUN_OPT_MAX_MEMORY, RUN_OPT_TUNE, 0};
    cli_run_opts o;
    int rc = cli_parse_run(argc, argv, ids, bench_help, &o);
    if (rc) {
        cli_run_opts_free(&o);
        return rc < 0 ? CLI_OK : rc;
    }
    cli_setup s;
    rc = cli_setup_run(&o, 1, &s);
    double *times = rc == CLI_OK ? tg_malloc(sizeof(double) * (size_t)o.runs) : NULL;
    if (rc == CLI_OK && !times) {
        cli_error(o.cmd, "out of memory for %ld timings", o.runs);
        rc = CLI_ERROR;
    }
    if (rc == CLI_OK && o.replay.backend == REPLAY_OPENCL) {
        rc = bench_opencl(&o, &s, times);
    } else if (rc == CLI_OK) {
        rc = time_runs(&o, &s, s.in.t, NULL, times);
        if (rc == CLI_OK) {
            print_header(&o, &s);
            print_times("", o.runs, times);
        }
    }
    tg_free(times);
    cli_teardown(&s);
    cli_run_opts_free(&o);
    return rc;
}
