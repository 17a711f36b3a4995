/*
 * suite.c - the workload benchmark of issue 6: eager vs optimized replay.
 *
 *   suite [--out FILE] [--runs N] [--budget-ms MS] [--threads 1,2]
 *         [--workloads mlp,tiny,...] [--quick] [--no-fork] [--no-opencl]
 *         [--save-dir DIR] [--commit REV]
 *
 * Each workload x threads record runs in a child process (--no-fork: in
 * this one, for a debugger), so a crash in the library fails that record
 * with the stage it reached and the suite goes on; so does one that takes
 * more than 5 minutes (a hang).  --save-dir DIR keeps each level's
 * optimized graph as DIR/<workload>-O<level>.tgraph, for `tracegraph dump`
 * or `tracegraph bench` when a number needs explaining.  --commit REV
 * names the code measured in the results (`make bench` passes git's
 * short hash, with "+changes" when tracked files differ from it).
 *
 * For each workload (workloads/workloads.h) at each thread count it measures:
 * eager time (a forward inside a pool, popped: what a user's loop pays),
 * trace time (trace_begin .. trace_freeze with call stacks, one eager run
 * included), then for each level -O0..-O3, on a fresh copy of the traced
 * graph: opt_optimize time and node counts, the .tgraph size of the result
 * (format_save_mem) and its load time (format_load_mem), replay_compile
 * time of the loaded graph, replay time (a session on that plan, threads
 * through replay_opts.threads and eager_set_threads, output left in the
 * session's buffer: no copy), the arena bytes of the plan's memory plan
 * (opt_memplan_build on the compiled graph, as replay_compile plans it) and
 * the error of the replay output against eager at the same thread count.
 *
 * Timed runs: eager and the four levels are timed in rounds, one run of
 * each per round, so that load from elsewhere on a shared machine hits
 * them alike (the cost: each run starts with the others' data in the
 * caches, as a model does inside a real program).  After warm-up (>= 3
 * runs and >= 20 ms each), at least --runs rounds (default 21) and more
 * until --budget-ms (default 1000) per timed thing is spent, at most 5000.
 * A progress line per workload goes to stderr.  Benchmarks never fail on a
 * time; the suite exits 1 if any level fails (optimize, save, load,
 * compile or run) or if replay differs from eager by more than 1e-3
 * relative (max_rel_err below): that is a bug.
 *
 * Output (--out, default bench/results/latest.json), schema
 * "tracegraph-bench-1"; times in ms, sizes in bytes, null for a value that
 * could not be measured:
 *
 * { "schema": "tracegraph-bench-1",
 *   "machine": {"cpu", "cores", "compiler", "cpu_kernels" (eager_cpu_level():
 *               avx512, avx2, baseline or native), "onednn_isa"
 *               (eager_dnnl_isa_name(): avx2, avx512_core, ...), "os", "date" (UTC), "loadavg"
 *               (1-minute load average when the suite started), "commit"
 *               (with --commit)},
 *   "config": {"min_runs", "budget_ms", "rel_tolerance"},
 *   "ok": true|false, "total_s": seconds for the whole suite,
 *   "records": [ one per workload x threads:
 *     { "workload": "mlp", "threads": 1, "ok": true|false, "error": "" (why not),
 *       "cpu": the CPU's model name, "cpu_kernels", "onednn_isa": the
 *       instruction sets in use (as in "machine"; TG_CPU and
 *       ONEDNN_MAX_CPU_ISA lower them: bench/bench_isa.h),
 *       "desc": "x[64,784] -> ...", "loadavg": 1-minute load average when
 *       the record started (other work on the machine skews its times),
 *       "eager_ms": {"median", "min", "max", "runs"},
 *       "trace_ms": median of 3 traces, "traced_nodes": live nodes traced,
 *       "gflop": the matrix products' work in GFLOP (workload_flops; 0 for
 *       chain and tiny), "fma_peak_gflops": fp32 multiply-add throughput
 *       on this many threads, measured as the record starts (the ceiling
 *       of the compute-bound workloads: bench/suite/peak.c; null for
 *       chain and tiny), "fma_peak_isa": the instruction set of that
 *       loop (avx512, avx2 or scalar: the matrix products' one,
 *       suite_peak_isa),
 *       "levels": [ one per level 0..3:
 *         { "level": 0, "ok": true, "error": "" (why not ok),
 *           "optimize_ms": median of 3, "nodes_before", "nodes_after",
 *           "tgraph_bytes", "load_ms": median of 5, "compile_ms",
 *           "replay_ms": {"median", "min", "max", "runs"},
 *           "speedup": eager median / replay median,
 *           "arena_bytes": {"naive", "lower_bound", "planned"},
 *           "max_abs_err": max |replay - eager|,
 *           "max_rel_err": max |replay - eager| / max |eager|,
 *           "opencl": null (--no-opencl, or no OpenCL platform), or the same
 *             plan replayed on backend "opencl" (issue 7): {"ok", "error",
 *             "compile_ms", "replay_ms": {...}, "speedup", "max_rel_err"
 *             (vs eager), "rel_err_vs_cpu" (vs this level's CPU replay;
 *             above 1e-4 fails the record)} } ] } ] }
 *   (and per record "opencl_device": "platform / device" or null)
 *
 * OpenCL runs on whatever device the first platform offers (PoCL in CI,
 * which uses every core whatever "threads" says), in the records of the
 * first thread count only.  The parent process
 * never touches OpenCL: a driver's threads do not survive fork.
 *
 * max_rel_err is relative to the output's largest magnitude, so outputs
 * near zero do not inflate it; a NaN where eager has none makes it null
 * (and fails the suite).  bench/table.sh, bench/plot.sh and
 * bench/compare.sh read this file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "formats/tgraph.h"
#include "optimize/memplan.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracegraph.h"
#include "../workloads/workloads.h"

#include "suite/suite.h"
#include "graph/graph_impl.h"

static double now_ms(void)
{
    return bench_now_ns() / 1e6;
}

/* The 1-minute load average (NaN if unknown). */
static double load_average(void)
{
    double load = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = NAN;
        fclose(f);
    }
    return load;
}

/* ---- timing ---- */

/* Something to time: a function and its context, and where its times go. */
typedef struct runner {
    int (*run)(void *ctx); /* 0 on success */
    void *ctx;
    stats *st;
    double *t; /* times of the timed runs */
    int failed;
} runner;

/* Times the runners (bench_rounds), then each one's stats. */
static void measure(const config *c, runner *r, int n)
{
    bench_runner br[2 * NLEVELS + 1];
    for (int k = 0; k < n; k++)
        br[k] = (bench_runner){r[k].run, r[k].ctx, r[k].t, r[k].failed};
    int runs = bench_rounds(br, n, c->min_runs, c->budget_ms, MAX_RUNS);
    for (int k = 0; k < n; k++) {
        r[k].failed = br[k].failed;
        if (r[k].failed)
            continue;
        r[k].st->median = bench_median(r[k].t, runs); /* sorts t */
        r[k].st->min = r[k].t[0];
        r[k].st->max = r[k].t[runs - 1];
        r[k].st->runs = runs;
    }
}

/* A compiled level ready to run. */
typedef struct replay_ctx {
    replay_plan *p;
    replay_session *s;
    replay_tensor in, out;
} replay_ctx;

static int replay_once(void *p)
{
    replay_ctx *r = p;
    r->out = (replay_tensor){.name = NULL}; /* NULL data: the session's buffer */
    return replay_run(r->s, &r->in, 1, &r->out, 1) != TG_OK;
}

/* ---- one level ---- */

/* max |a - b| and that over max |b|; NaN/inf where b is finite gives inf. */
static void compare(const float *a, const float *b, int64_t n, double *max_abs, double *max_rel)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(a[i]) != isnan(b[i]) || (isnan(d) && !isnan(b[i])))
            d = INFINITY;
        else if (isnan(d))
            d = 0; /* both NaN: agree */
        diff = d > diff ? d : diff;
        scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    }
    *max_abs = diff;
    *max_rel = diff == 0 ? 0 : diff / (scale > 0 ? scale : 1e-30);
}

/* Optimizes a fresh copy of traced at r->level three times; returns the last copy. */
static graph *optimize(const graph *traced, level_result *r)
{
    double t[3];
    graph *g = NULL;
    for (int i = 0; i < 3; i++) {
        graph_free(g);
        g = graph_clone(traced);
        if (!g) {
            snprintf(r->error, sizeof r->error, "graph_clone: out of memory");
            return NULL;
        }
        opt_options o = opt_default_options();
        o.level = r->level;
        opt_report rep;
        double t0 = now_ms();
        tg_status st = opt_optimize(g, &o, &rep, r->error, sizeof r->error);
        t[i] = now_ms() - t0;
        if (st != TG_OK) {
            graph_free(g);
            return NULL;
        }
        r->nodes_before = rep.nodes_before;
        r->nodes_after = rep.nodes_after;
    }
    r->optimize_ms = bench_median(t, 3);
    return g;
}

/* --save-dir, or NULL. */
static const char *save_dir;

/* Writes len bytes of a .tgraph to save_dir/<name>-O<level>.tgraph. */
static void keep_file(const char *name, int level, const void *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-O%d.tgraph", save_dir, name, level);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len)
        fprintf(stderr, "suite: cannot write %s\n", path);
    if (f)
        fclose(f);
}

/* Saves g to memory and loads it back five times; returns the last load. */
static graph *save_load(const graph *g, level_result *r)
{
    void *buf = NULL;
    size_t len = 0;
    if (format_save_mem(g, NULL, &buf, &len, r->error, sizeof r->error) != TG_OK)
        return NULL;
    r->tgraph_bytes = len;
    if (save_dir)
        keep_file(g->name ? g->name : "graph", r->level, buf, len);
    double t[5];
    graph *h = NULL;
    for (int i = 0; i < 5; i++) {
        graph_free(h);
        double t0 = now_ms();
        h = format_load_mem(buf, len, "optimized.tgraph", r->error, sizeof r->error);
        t[i] = now_ms() - t0;
        if (!h)
            break;
    }
    free(buf);
    r->load_ms = bench_median(t, 5);
    return h;
}

/* What every level is checked against: eager's output at the same thread
 * count, and the input to replay with. */
typedef struct reference {
    const float *y;
    int64_t n;
    replay_tensor in;
} reference;

/* Compiles h into rc (plan and session), plans its memory and checks one
 * run against ref; returns 1 when rc is ready to be timed. */
static int compile_level(const graph *h, int threads, const reference *ref, level_result *r,
                         replay_ctx *rc)
{
    replay_opts ro = {.threads = threads};
    double t0 = now_ms();
    rc->p = replay_compile(h, &ro, r->error, sizeof r->error);
    r->compile_ms = now_ms() - t0;
    if (!rc->p)
        return 0;
    /* The plan's own arena layout: replay_compile plans the same graph
     * (its verified copy) at the traced types with in-place reuse on. */
    opt_memplan mp;
    if (opt_memplan_build(h, NULL, 1, &mp) == TG_OK) {
        r->naive = mp.naive_bytes;
        r->lower = mp.lower_bound;
        r->planned = mp.arena_bytes;
        opt_memplan_free(&mp);
    }
    rc->s = replay_session_new(rc->p, NULL, 0);
    rc->in = ref->in;
    if (!rc->s) {
        snprintf(r->error, sizeof r->error, "replay_session_new: out of memory");
    } else if (replay_once(rc)) {
        snprintf(r->error, sizeof r->error, "replay_run: %s", replay_session_error(rc->s));
    } else if (rc->out.type.dtype != GRAPH_F32 || graph_type_numel(&rc->out.type) != ref->n) {
        snprintf(r->error, sizeof r->error, "replay output has another type than eager's");
    } else {
        compare(rc->out.data, ref->y, ref->n, &r->max_abs, &r->max_rel);
        if (r->max_rel <= REL_TOL)
            return 1;
        snprintf(r->error, sizeof r->error, "replay differs from eager: max rel err %.3g > %g",
                 r->max_rel, REL_TOL);
    }
    return 0;
}

/*
 * The same graph on OpenCL: compiled, one run compared with eager (as the
 * CPU, REL_TOL) and with the CPU replay's output cpu_y (OCL_CPU_TOL);
 * 1 when rc is ready to be timed.  No platform: not measured, not failed.
 */
static int compile_opencl(const graph *h, const reference *ref, const float *cpu_y,
                          level_result *r, record *rec, replay_ctx *rc)
{
    replay_opts ro = {.device = "opencl", .threads = 1};
    double t0 = now_ms();
    rc->p = replay_compile(h, &ro, r->ocl_error, sizeof r->ocl_error);
    r->ocl_compile_ms = now_ms() - t0;
    if (!rc->p) {
        r->ocl_ran = strstr(r->ocl_error, "no OpenCL platform") == NULL;
        return 0;
    }
    r->ocl_ran = 1;
    replay_device_info d;
    if (!rec->ocl_device[0] && replay_backend_find("opencl", &d, NULL, 0) == TG_OK)
        snprintf(rec->ocl_device, sizeof rec->ocl_device, "%s", d.device);
    rc->s = replay_session_new(rc->p, NULL, 0);
    rc->in = ref->in;
    double abs_err, cpu_abs;
    if (!rc->s) {
        snprintf(r->ocl_error, sizeof r->ocl_error, "replay_session_new: out of memory");
    } else if (replay_once(rc)) {
        snprintf(r->ocl_error, sizeof r->ocl_error, "replay_run: %s",
                 replay_session_error(rc->s));
    } else if (rc->out.type.dtype != GRAPH_F32 || graph_type_numel(&rc->out.type) != ref->n) {
        snprintf(r->ocl_error, sizeof r->ocl_error, "OpenCL output has another type");
    } else {
        compare(rc->out.data, ref->y, ref->n, &abs_err, &r->ocl_max_rel);
        compare(rc->out.data, cpu_y, ref->n, &cpu_abs, &r->ocl_vs_cpu);
        if (r->ocl_max_rel <= REL_TOL && r->ocl_vs_cpu <= OCL_CPU_TOL)
            return 1;
        snprintf(r->ocl_error, sizeof r->ocl_error, "OpenCL differs: max rel err %.3g vs "
                 "eager (limit %g), %.3g vs the CPU replay (limit %g)", r->ocl_max_rel,
                 REL_TOL, r->ocl_vs_cpu, OCL_CPU_TOL);
    }
    return 0;
}

/* Optimizes, saves, loads and compiles level l of rec; 1 when rc is ready.
 * rec->stage says what it is doing, for the report of a crash. */
static int prepare_level(const config *c, const graph *traced, const reference *ref,
                         record *rec, int l, replay_ctx *rc, replay_ctx *rco, int *ocl_ready)
{
    level_result *r = &rec->lv[l];
    r->level = l;
    snprintf(rec->stage, sizeof rec->stage, "-O%d: optimize", l);
    graph *g = optimize(traced, r);
    snprintf(rec->stage, sizeof rec->stage, "-O%d: save and load", l);
    graph *h = g ? save_load(g, r) : NULL;
    snprintf(rec->stage, sizeof rec->stage, "-O%d: compile and first run", l);
    int ok = h && compile_level(h, rec->threads, ref, r, rc);
    *ocl_ready = 0;
    /* OpenCL at the first thread count only: the driver has its own threads */
    if (ok && !c->no_opencl && rec->threads == c->threads[0]) {
        snprintf(rec->stage, sizeof rec->stage, "-O%d: OpenCL compile and first run", l);
        *ocl_ready = compile_opencl(h, ref, rc->out.data, r, rec, rco);
    }
    graph_free(g);
    graph_free(h);
    return ok;
}

/* ---- one workload at one thread count ---- */

/* Eager's output (copied to ref->y, malloc'd) and the input to replay with. */
static int make_reference(const workload *w, reference *ref)
{
    eager_pool_push();
    eager_tensor *y = workload_forward(w, w->x);
    int ok = y && eager_dtype(y) == GRAPH_F32;
    if (ok) {
        ref->n = eager_numel(y);
        float *copy = malloc(eager_nbytes(y) + 1);
        ok = copy != NULL;
        if (ok)
            memcpy(copy, eager_peek(y), eager_nbytes(y));
        ref->y = copy;
    }
    eager_pool_pop();
    ref->in = (replay_tensor){.name = "x", .type = *eager_type(w->x), .input = eager_peek(w->x)};
    return ok;
}

static void progress(const record *rec, int index, int total, double secs)
{
    fprintf(stderr, "suite: [%d/%d] %-13s t=%d: eager ", index, total, rec->workload,
            rec->threads);
    if (rec->eager.runs)
        fprintf(stderr, "%8.3f ms |", rec->eager.median);
    else
        fprintf(stderr, "  FAILED    |");
    for (int l = 0; l < NLEVELS; l++) {
        const level_result *r = &rec->lv[l];
        if (r->ok)
            fprintf(stderr, " -O%d %8.3f (%5.2fx)", l, r->replay.median,
                    rec->eager.median / r->replay.median);
        else
            fprintf(stderr, " -O%d   FAILED        ", l);
    }
    for (int l = 0; l < NLEVELS; l++)
        if (rec->lv[l].ocl_ok)
            fprintf(stderr, "%s -O%d %.3f", l ? "" : " | opencl", l, rec->lv[l].ocl.median);
    fprintf(stderr, " | %.1f s\n", secs);
    if (rec->error[0])
        fprintf(stderr, "suite: FAIL %s t=%d: %s\n", rec->workload, rec->threads, rec->error);
    for (int l = 0; l < NLEVELS; l++) {
        if (rec->error[0] == 0 && !rec->lv[l].ok)
            fprintf(stderr, "suite: FAIL %s t=%d -O%d: %s\n", rec->workload, rec->threads, l,
                    rec->lv[l].error);
        if (rec->lv[l].ocl_ran && !rec->lv[l].ocl_ok)
            fprintf(stderr, "suite: FAIL %s t=%d -O%d OpenCL: %s\n", rec->workload,
                    rec->threads, l, rec->lv[l].ocl_error);
        else if (l == 0 && !rec->lv[l].ocl_ran && rec->lv[l].ocl_error[0])
            fprintf(stderr, "suite: note: OpenCL not measured: %s\n", rec->lv[l].ocl_error);
    }
}

/* Traces w three times (timed); the last graph, or NULL. */
static graph *trace(const workload *w, record *rec)
{
    double t[3];
    graph *g = NULL;
    snprintf(rec->stage, sizeof rec->stage, "trace");
    for (int i = 0; i < 3; i++) {
        graph_free(g);
        double t0 = now_ms();
        g = workload_trace(w, 1);
        t[i] = now_ms() - t0;
        if (!g) {
            snprintf(rec->error, sizeof rec->error, "trace: %s", eager_error());
            return NULL;
        }
    }
    rec->trace_ms = bench_median(t, 3);
    rec->traced_nodes = graph_live_nodes(g);
    return g;
}

/* Prepares every level of the traced graph g, then times eager and the
 * levels that work together (measure). */
static void run_levels(const config *c, const workload *w, const graph *g, const reference *ref,
                       record *rec)
{
    static double times[2 * NLEVELS + 1][MAX_RUNS];
    replay_ctx rc[NLEVELS], rco[NLEVELS];
    runner r[2 * NLEVELS + 1];
    int n = 0, ocl_ready[NLEVELS];
    memset(rc, 0, sizeof rc);
    memset(rco, 0, sizeof rco);
    r[n++] = (runner){bench_workload_once, (void *)w, &rec->eager, times[0], 0};
    for (int l = 0; l < NLEVELS; l++)
        if (prepare_level(c, g, ref, rec, l, &rc[l], &rco[l], &ocl_ready[l]))
            r[n++] = (runner){replay_once, &rc[l], &rec->lv[l].replay, times[l + 1], 0};
    int ncpu = n;
    for (int l = 0; l < NLEVELS; l++)
        if (rc[l].s && ocl_ready[l])
            r[n++] = (runner){replay_once, &rco[l], &rec->lv[l].ocl, times[NLEVELS + 1 + l], 0};
    snprintf(rec->stage, sizeof rec->stage, "timing");
    /* CPU runs first, then OpenCL's apart: PoCL's worker threads keep
     * spinning on both cores for a while after a launch, which made CPU
     * runs interleaved with OpenCL ones up to 4x slower (tiny). */
    measure(c, r, ncpu);
    if (n > ncpu)
        measure(c, r + ncpu, n - ncpu);
    if (r[0].failed)
        snprintf(rec->error, sizeof rec->error, "eager: %s", eager_error());
    rec->ok = !r[0].failed;
    for (int l = 0, k = 1; l < NLEVELS; l++) {
        level_result *lv = &rec->lv[l];
        if (k < n && r[k].ctx == &rc[l]) {
            lv->ok = !r[k++].failed;
            if (!lv->ok)
                snprintf(lv->error, sizeof lv->error, "replay_run: %s",
                         replay_session_error(rc[l].s));
        }
        rec->ok = rec->ok && lv->ok;
        replay_session_free(rc[l].s);
        replay_plan_free(rc[l].p);
    }
    for (int l = 0; l < NLEVELS; l++) {
        level_result *lv = &rec->lv[l];
        for (int k = 1; k < n; k++)
            if (r[k].ctx == &rco[l]) {
                lv->ocl_ok = !r[k].failed;
                if (!lv->ocl_ok)
                    snprintf(lv->ocl_error, sizeof lv->ocl_error, "replay_run: %s",
                             replay_session_error(rco[l].s));
            }
        /* a level that ran on OpenCL and failed fails the record */
        rec->ok = rec->ok && (!lv->ocl_ran || lv->ocl_ok);
        replay_session_free(rco[l].s);
        replay_plan_free(rco[l].p);
    }
    if (!c->no_opencl && rec->threads == c->threads[0])
        replay_backend_shutdown();
}

/* Measures everything for workload k at threads; returns rec->ok. */
static int run_record(const config *c, workload_kind k, int threads, record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->workload = workload_name(k);
    rec->threads = threads;
    rec->loadavg = load_average();
    workload w;
    if (workload_make(&w, k, NULL) != TG_OK) {
        snprintf(rec->error, sizeof rec->error, "workload_make: %s", eager_error());
        eager_clear_error();
        return 0;
    }
    workload_describe(k, &w.size, rec->desc, sizeof rec->desc);
    rec->gflop = workload_flops(k, &w.size) / 1e9;
    rec->peak_gflops = rec->gflop > 0 ? suite_fma_peak_gflops(threads) : NAN;
    eager_set_threads(threads);
    reference ref = {NULL, 0, {0}};
    graph *g = NULL;
    snprintf(rec->stage, sizeof rec->stage, "eager");
    if (!make_reference(&w, &ref))
        snprintf(rec->error, sizeof rec->error, "eager: %s", eager_error());
    else if ((g = trace(&w, rec)) != NULL)
        run_levels(c, &w, g, &ref, rec);
    snprintf(rec->stage, sizeof rec->stage, "done");
    eager_clear_error();
    graph_free(g);
    free((void *)ref.y);
    workload_free(&w);
    eager_set_threads(1);
    return rec->ok;
}

/*
 * run_record in a child process writing into shared memory, so that a
 * crash in the library (a pass being written, say) costs one record, not
 * the suite: the record then says which stage crashed.  The parent runs
 * no tensor code (and so no OpenMP) itself, which keeps fork safe.
 */
static int run_isolated(const config *c, workload_kind k, int threads, record *rec)
{
    record *sh = c->no_fork ? MAP_FAILED
                            : mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return run_record(c, k, threads, rec);
    memset(sh, 0, sizeof *sh);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(RECORD_TIMEOUT_S); /* a hang is a bug too: SIGALRM reports it */
        _exit(run_record(c, k, threads, sh) ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        status = -1;
    *rec = *sh;
    munmap(sh, sizeof *sh);
    rec->workload = workload_name(k);
    rec->threads = threads;
    if (status == -1 || !WIFEXITED(status)) {
        rec->ok = 0;
        snprintf(rec->error, sizeof rec->error,
                 "crashed (%s %d) during %s; debug with: suite --no-fork --workloads %s "
                 "--threads %d", status == -1 ? "fork/wait failed" : "signal",
                 status == -1 ? errno : WTERMSIG(status), rec->stage[0] ? rec->stage : "setup",
                 rec->workload, threads);
    }
    return rec->ok;
}

/* ---- command line ---- */

static int usage(void)
{
    fprintf(stderr, "usage: suite [--out FILE] [--runs N] [--budget-ms MS] [--threads 1,2]\n"
                    "             [--workloads mlp,resblock,encoder,encoder_fused,chain,tiny]"
                    " [--quick]\n             [--no-fork] [--no-opencl] [--save-dir DIR]"
                    " [--commit REV]\n");
    return 2;
}

/* Parses a comma-separated list of thread counts or workload names. */
static int parse_list(config *c, const char *arg, int threads)
{
    if (!threads)
        return bench_workload_list("suite", arg, c->use);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    c->nthreads = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int t = atoi(tok);
        if (t < 1 || t > SUITE_MAX_THREADS || c->nthreads == 4)
            return 0;
        c->threads[c->nthreads++] = t;
    }
    return 1;
}

static int parse_args(config *c, int argc, char **argv)
{
    *c = (config){"bench/results/latest.json", 21, 1000, {1, 2}, 2, {0}, 0, 0, NAN};
    for (int k = 0; k < WL_COUNT; k++)
        c->use[k] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            c->min_runs = 20;
            c->budget_ms = 50;
            continue;
        }
        if (!strcmp(a, "--no-fork")) {
            c->no_fork = 1;
            continue;
        }
        if (!strcmp(a, "--no-opencl")) {
            c->no_opencl = 1;
            continue;
        }
        if (!v)
            return 0;
        i++;
        if (!strcmp(a, "--out"))
            c->out = v;
        else if (!strcmp(a, "--save-dir"))
            save_dir = v;
        else if (!strcmp(a, "--commit"))
            c->commit = v;
        else if (!strcmp(a, "--runs"))
            c->min_runs = atoi(v);
        else if (!strcmp(a, "--budget-ms"))
            c->budget_ms = atof(v);
        else if (!strcmp(a, "--threads") || !strcmp(a, "--workloads")) {
            if (!parse_list(c, v, a[2] == 't'))
                return 0;
        } else
            return 0;
    }
    if (c->min_runs < 1 || c->min_runs > MAX_RUNS || !(c->budget_ms >= 0))
        return 0;
    if (c->min_runs < 20)
        fprintf(stderr, "suite: note: --runs %d is below the 20 runs issue 6 asks for\n",
                c->min_runs);
    return 1;
}

int main(int argc, char **argv)
{
    config c;
    if (!parse_args(&c, argc, argv))
        return usage();
    record recs[4 * WL_COUNT];
    int n = 0, total = 0, ok = 1;
    for (int k = 0; k < WL_COUNT; k++)
        total += c.use[k] * c.nthreads;
    double t0 = now_ms();
    c.loadavg = load_average();
    bench_isa_get(&c.isa);
    c.peak_isa = suite_peak_isa();
    fprintf(stderr, "suite: on %s; CPU kernels %s, oneDNN ISA %s, FMA peak at %s\n", c.isa.cpu,
            c.isa.cpu_kernels, c.isa.onednn_isa, c.peak_isa);
    for (int k = 0; k < WL_COUNT; k++)
        for (int t = 0; t < c.nthreads && c.use[k]; t++) {
            double s = now_ms();
            ok &= run_isolated(&c, (workload_kind)k, c.threads[t], &recs[n]);
            progress(&recs[n], n + 1, total, (now_ms() - s) / 1e3);
            n++;
        }
    double secs = (now_ms() - t0) / 1e3;
    if (!suite_write_json(&c, recs, n, ok, secs))
        return 1;
    fprintf(stderr, "suite: %d records in %.1f s -> %s%s\n", n, secs, c.out,
            ok ? "" : " (FAILED: see the lines above; replay must run and match eager within 1e-3)");
    return ok ? 0 : 1;
}
