/*
 * cmd_bench.c - `tracegraph bench`: times replay runs of a saved graph.
 *
 * Each run is timed alone (monotonic clock around replay_run, outputs left
 * in the session's buffers so no copy is timed), after warm-up runs that
 * bind the plan and warm the caches.  A long benchmark shows progress on
 * stderr: one carriage-return-updated line on a terminal, a plain line
 * every few seconds otherwise (logs, CI), starting once it has run ~2 s.
 */
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
           "  --seed N          seed of the random inputs (default 1)\n"
           "  --backend B       replay backend, cpu or opencl (default cpu)\n"
           "  --device D        OpenCL device: index or name substring\n\n"
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

/* Runs the warm-up and the timed runs; times[] in seconds. */
static int time_runs(const cli_run_opts *o, cli_setup *s, double *times)
{
    replay_tensor *outs = cli_outputs_new(o->cmd, s->g);
    if (!outs)
        return CLI_ERROR;
    progress p = {cli_now(), 0, isatty(2), 0};
    for (long k = 0; k < o->warmup + o->runs; k++) {
        for (int i = 0; i < s->g->noutputs; i++)
            outs[i] = (replay_tensor){s->g->outputs[i].name, {0}, NULL};
        double t0 = cli_now();
        tg_status st = replay_run(s->session, s->in.t, s->in.n, outs, s->g->noutputs);
        double t1 = cli_now();
        if (st != TG_OK) {
            if (p.shown && p.tty)
                fprintf(stderr, "\n");
            cli_error(o->cmd, "%s", replay_session_error(s->session));
            if (st == TG_ERR_GUARD && s->random_inputs)
                cli_error(o->cmd, "the inputs were random: give inputs that take the traced "
                          "path with -i");
            tg_free(outs);
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
    tg_free(outs);
    return CLI_OK;
}

static void print_stats(const cli_run_opts *o, const cli_setup *s, double *times)
{
    long n = o->runs;
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += times[i];
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    const char *gemm = replay_opencl_gemm(s->plan);
    printf("bench %s: %s%s%s%s, %d thread%s, %ld runs after %ld warm-up, ", o->file,
           o->replay.backend == REPLAY_CPU ? "cpu" : "opencl", gemm ? " (GEMM " : "",
           gemm ? gemm : "", gemm ? ")" : "", o->replay.threads, o->replay.threads > 1 ? "s" : "",
           n, o->warmup);
    if (s->random_inputs)
        printf("random inputs (seed %ld)\n", o->seed);
    else
        printf("inputs from .npy\n");
    printf("  min %.4g ms  median %.4g ms  mean %.4g ms  max %.4g ms\n", times[0] * 1e3,
           median * 1e3, sum / (double)n * 1e3, times[n - 1] * 1e3);
    printf("  %.1f runs/s\n", sum > 0 ? (double)n / sum : 0.0);
}

int cli_bench(int argc, char **argv)
{
    static const int ids[] = {RUN_OPT_INPUT, RUN_OPT_BACKEND, RUN_OPT_DEVICE, RUN_OPT_THREADS, RUN_OPT_SEED,
                              RUN_OPT_WARMUP, RUN_OPT_RUNS, 0};
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
    if (rc == CLI_OK)
        rc = time_runs(&o, &s, times);
    if (rc == CLI_OK)
        print_stats(&o, &s, times);
    tg_free(times);
    cli_teardown(&s);
    cli_run_opts_free(&o);
    return rc;
}
