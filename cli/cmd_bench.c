/*
 * cmd_bench.c - `tracegraph bench`: times replay runs of a saved graph.
 *
 * Each run is timed alone (monotonic clock around replay_run, outputs left
 * in the session's buffers so no copy is timed), after warm-up runs that
 * bind the plan and warm the caches.  A long benchmark shows progress on
 * stderr: one carriage-return-updated line on a terminal, a plain line
 * every few seconds otherwise (logs, CI), starting once it has run ~2 s.
 *
 * A backend with device buffers (opencl) is timed two ways, the same
 * warm-up and runs each (issue 20): host-copy (host inputs written to the
 * device and outputs read back into the session's host buffers every run,
 * what replay_run with host data costs) and device-resident (inputs and
 * outputs as buffers of replay_buffer_new on the plan's device,
 * replay_tensor.buffer: the inputs written once before timing, no host
 * copy in a run).
 */
#include <stdlib.h>
#include <unistd.h>

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
           "  --backend NAME    replay backend and device (cpu, opencl, opencl:1:\n"
           "                    tracegraph devices; default cpu)\n"
           "  --device D        the same as --backend NAME:D (older spelling)\n\n"
           "On a backend with device buffers (opencl) two lines of times, the same\n"
           "runs each:\n"
           "  host-copy         replay_run on host data: every run writes the inputs\n"
           "                    to the device and reads the outputs back\n"
           "  device-resident   inputs and outputs as buffers on the device\n"
           "                    (replay_buffer_new, replay_tensor.buffer; the inputs\n"
           "                    written once before timing): no host copies, one wait\n"
           "                    per run\n\n"
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
            cli_free(own);
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
    cli_free(own);
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
    const char *gemm = replay_plan_property(s->plan, "gemm");
    printf("bench %s: %s%s%s%s, %d thread%s, %ld runs after %ld warm-up, ", o->file,
           replay_plan_property(s->plan, "backend"), gemm ? " (GEMM " : "",
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

/* Device buffers for the device-resident runs: the inputs (written
 * once) and outputs (sized as the host run's outputs), on the plan's
 * device (replay_buffer_new). */
typedef struct dev_io {
    const replay_plan *plan;
    int nin, nout;
    replay_tensor *in, *out;
} dev_io;

static void dev_io_free(dev_io *d)
{
    for (int i = 0; d->in && i < d->nin; i++)
        replay_buffer_free(d->plan, d->in[i].buffer);
    for (int i = 0; d->out && i < d->nout; i++)
        replay_buffer_free(d->plan, d->out[i].buffer);
    cli_free(d->in);
    cli_free(d->out);
}

static size_t tensor_bytes(const graph_type *t)
{
    return (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
}

static int dev_io_new(const cli_run_opts *o, cli_setup *s, dev_io *d)
{
    *d = (dev_io){s->plan, s->in.n, replay_num_outputs(s->plan), NULL, NULL};
    /* one host run gives the output types at these inputs */
    replay_tensor *outs = cli_outputs_new(o->cmd, s->g);
    d->in = cli_calloc((size_t)d->nin + 1, sizeof *d->in);
    d->out = cli_calloc((size_t)d->nout + 1, sizeof *d->out);
    if (!outs || !d->in || !d->out) {
        cli_free(outs);
        dev_io_free(d);
        cli_error(o->cmd, "out of memory");
        return CLI_ERROR;
    }
    tg_status st = replay_run(s->session, s->in.t, s->in.n, outs, d->nout);
    char err[512] = "";
    int ok = st == TG_OK;
    if (!ok)
        cli_error(o->cmd, "%s", replay_session_error(s->session));
    for (int i = 0; ok && i < d->nin; i++) {
        d->in[i] = (replay_tensor){.name = s->in.t[i].name, .type = s->in.t[i].type};
        d->in[i].buffer = replay_buffer_new(s->plan, tensor_bytes(&s->in.t[i].type),
                                            s->in.t[i].input, err, sizeof err);
        ok = d->in[i].buffer != NULL;
    }
    for (int i = 0; ok && i < d->nout; i++) {
        d->out[i] = (replay_tensor){.name = outs[i].name, .type = outs[i].type};
        d->out[i].buffer = replay_buffer_new(s->plan, tensor_bytes(&outs[i].type), NULL, err,
                                             sizeof err);
        ok = d->out[i].buffer != NULL;
    }
    cli_free(outs);
    if (st == TG_OK && !ok)
        cli_error(o->cmd, "the device buffers of the device-resident runs: %s", err);
    if (!ok) {
        dev_io_free(d);
        return st != TG_OK ? cli_exit_code(st) : CLI_ERROR;
    }
    return CLI_OK;
}

/* A backend with device buffers: host-copy runs, then device-resident ones. */
static int bench_device(const cli_run_opts *o, cli_setup *s, double *times)
{
    int rc = time_runs(o, s, s->in.t, NULL, times);
    if (rc != CLI_OK)
        return rc;
    double *dtimes = cli_malloc(sizeof(double) * (size_t)o->runs);
    dev_io d = {NULL, 0, 0, NULL, NULL};
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
        printf("  device-resident (inputs and outputs as buffers on the device, no host copies):\n");
        print_times("  ", o->runs, dtimes);
    }
    if (d.in || d.out)
        dev_io_free(&d);
    cli_free(dtimes);
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
    double *times = rc == CLI_OK ? cli_malloc(sizeof(double) * (size_t)o.runs) : NULL;
    if (rc == CLI_OK && !times) {
        cli_error(o.cmd, "out of memory for %ld timings", o.runs);
        rc = CLI_ERROR;
    }
    if (rc == CLI_OK && replay_plan_property(s.plan, "device_buffers")) {
        rc = bench_device(&o, &s, times);
    } else if (rc == CLI_OK) {
        rc = time_runs(&o, &s, s.in.t, NULL, times);
        if (rc == CLI_OK) {
            print_header(&o, &s);
            print_times("", o.runs, times);
        }
    }
    cli_free(times);
    cli_teardown(&s);
    cli_run_opts_free(&o);
    return rc;
}
