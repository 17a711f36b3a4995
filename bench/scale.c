/*
 * scale.c - how trace, optimize (-O2), save, load and replay_compile grow
 * with the size of a graph (issue 16: nothing may be quadratic in nodes).
 *
 * Three shapes of generated graphs, each at 10k, 100k and 1M nodes (up to
 * --max), all on one [16] f32 input:
 *   chain  y = tanh(sigmoid(tanh(... x))): n unary nodes in a line;
 *   wide   y_i = x + c_i for n constants c_i, every y_i an output: n nodes
 *          all alive at once (the memory planner's worst case), n outputs;
 *   cse    t_i = sigmoid(x) n/2 times, each from its own call site (a line
 *          number of its own: n/2 provenance entries), summed in a chain
 *          of n/2 adds: CSE merges the n/2 sigmoids into one node that
 *          keeps all their provenance.
 * Stages: trace (trace_begin .. ops .. trace_freeze, through the eager API,
 * without call stacks), opt_optimize at -O2, format_save (.tgraph, level 3,
 * to /tmp), format_load of that file, replay_compile of the loaded graph.
 *
 * Each shape and size runs in a child process of its own (a fresh heap).
 * Memory: the peak resident set of each stage above the resident set when
 * the stage starts (Linux: /proc/self/clear_refs "5" resets the peak,
 * VmHWM reads it; malloc_trim(0) first returns freed memory, so that a
 * stage is not credited with what an earlier one freed).  The table gives
 * milliseconds and MB per stage, then per 10x nodes the growth factor of
 * each (10 for linear; ~11-12 for n log n).  Target: 100k nodes through
 * every stage in under 1 s, memory linear in nodes.
 *
 *   scale [--max N] [--shapes chain,wide,cse]     (default --max 1000000)
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "formats/tgraph.h"
#include "optimize/memplan.h"
#include "optimize/opt.h"
#include "tracegraph.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

enum { ST_TRACE, ST_OPT, ST_SAVE, ST_LOAD, ST_COMPILE, NSTAGES };
static const char *const stage_names[NSTAGES] = {"trace", "-O2", "save", "load", "compile"};

typedef struct result {
    int ok;
    double ms[NSTAGES];
    double mb[NSTAGES];
    int64_t nodes_traced, nodes_opt, file_bytes;
    char err[256];
} result;

/* Resident set and its peak (VmRSS, VmHWM) in kB; -1 when unknown. */
static void rss_kb(long *rss, long *hwm)
{
    *rss = *hwm = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6))
            *rss = atol(line + 6);
        else if (!strncmp(line, "VmHWM:", 6))
            *hwm = atol(line + 6);
    }
    fclose(f);
}

static long stage_rss0;
static double stage_t0;

static void stage_begin(void)
{
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f); /* resets VmHWM to the current VmRSS */
        fclose(f);
    }
    long hwm;
    rss_kb(&stage_rss0, &hwm);
    stage_t0 = bench_now_ns();
}

static void stage_end(result *r, int st)
{
    r->ms[st] = (bench_now_ns() - stage_t0) / 1e6;
    long rss, hwm;
    rss_kb(&rss, &hwm);
    r->mb[st] = hwm >= 0 && stage_rss0 >= 0 ? (double)(hwm - stage_rss0) / 1024.0 : -1;
}

/* Traces one shape with about n nodes. */
static graph *trace_shape(const char *shape, int64_t n, char *err, size_t errlen)
{
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(16), 1, -1, 1);
    trace_opts o = trace_default_opts();
    o.capture_stack = 0;
    o.name = shape;
    if (!x || trace_begin(&o) != TG_OK || trace_input(x, "x") != TG_OK) {
        snprintf(err, errlen, "trace_begin: %s", eager_error());
        eager_release(x);
        return NULL;
    }
    int fail = 0;
    if (!strcmp(shape, "chain")) {
        eager_tensor *y = eager_retain(x);
        for (int64_t i = 0; i < n && !fail; i++) {
            eager_tensor *z = i & 1 ? eager_sigmoid(y) : eager_tanh(y);
            eager_release(y);
            y = z;
            fail = !z;
        }
        fail = fail || trace_output(y, "y") != TG_OK;
        eager_release(y);
    } else if (!strcmp(shape, "wide")) {
        for (int64_t i = 0; i < n && !fail; i++) {
            eager_tensor *c = eager_full(GRAPH_F32, TG_SHAPE(1), (double)i * 1e-3);
            eager_tensor *y = eager_add(x, c);
            char name[32];
            snprintf(name, sizeof name, "y%lld", (long long)i);
            fail = !y || trace_output(y, name) != TG_OK;
            eager_release(c);
            eager_release(y);
        }
    } else { /* cse */
        eager_tensor *acc = eager_retain(x);
        for (int64_t i = 0; i < n / 2 && !fail; i++) {
            /* One call site per node: its own line number. */
            eager_tensor *t = eager_sigmoid_at(__FILE__, (int)(1000 + i), "cse_shape", x);
            eager_tensor *s = eager_add(acc, t);
            eager_release(t);
            eager_release(acc);
            acc = s;
            fail = !s;
        }
        fail = fail || trace_output(acc, "y") != TG_OK;
        eager_release(acc);
    }
    graph *g = fail ? NULL : trace_freeze();
    if (!g) {
        snprintf(err, errlen, "tracing: %s", eager_error());
        trace_abort();
    }
    eager_release(x);
    return g;
}

static int64_t live_nodes(const graph *g)
{
    int64_t k = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        k += !(g->nodes[i].flags & GRAPH_NODE_DEAD);
    return k;
}

static void run_one(const char *shape, int64_t n, result *r)
{
    memset(r, 0, sizeof *r);
    char err[512] = "", path[64];
    snprintf(path, sizeof path, "/tmp/tg_scale_%d.tgraph", (int)getpid());

    stage_begin();
    graph *g = trace_shape(shape, n, err, sizeof err);
    stage_end(r, ST_TRACE);
    if (!g)
        goto fail;
    r->nodes_traced = live_nodes(g);

    stage_begin();
    opt_options o = opt_default_options();
    opt_report rep;
    tg_status st = opt_optimize(g, &o, &rep, err, sizeof err);
    stage_end(r, ST_OPT);
    if (st != TG_OK)
        goto fail;
    r->nodes_opt = live_nodes(g);

    stage_begin();
    st = format_save(g, path, NULL, err, sizeof err);
    stage_end(r, ST_SAVE);
    graph_free(g);
    g = NULL;
    if (st != TG_OK)
        goto fail;
    format_info info;
    if (format_info_file(path, &info, err, sizeof err) == TG_OK)
        r->file_bytes = (int64_t)info.file_size;

    stage_begin();
    g = format_load(path, err, sizeof err);
    stage_end(r, ST_LOAD);
    remove(path);
    if (!g)
        goto fail;

    stage_begin();
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    stage_end(r, ST_COMPILE);
    graph_free(g);
    if (!p)
        goto fail;
    replay_plan_free(p);
    r->ok = 1;
    return;
fail:
    graph_free(g);
    remove(path);
    snprintf(r->err, sizeof r->err, "%s", err);
}

/* Runs one shape and size in a child process; 0 on success. */
static int run_child(const char *shape, int64_t n, result *r)
{
    int fd[2];
    fflush(stdout);
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        result res;
        run_one(shape, n, &res);
        ssize_t w = write(fd[1], &res, sizeof res);
        _exit(w == (ssize_t)sizeof res ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t k = read(fd[0], (char *)r + got, sizeof *r - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != sizeof *r) {
        memset(r, 0, sizeof *r);
        snprintf(r->err, sizeof r->err, "the child process died (status %d)", status);
    }
    return r->ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    int64_t max = 1000000;
    const char *shapes = "chain,wide,cse";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            shapes = argv[++i];
        else {
            fprintf(stderr, "usage: scale [--max N] [--shapes chain,wide,cse]\n");
            return 2;
        }
    }
    if (max < 10000) {
        fprintf(stderr, "scale: --max must be at least 10000\n");
        return 2;
    }
    static const char *const all[] = {"chain", "wide", "cse"};
    int failed = 0, slow = 0;
    printf("per stage: ms / MB of peak resident memory above the stage's start\n");
    printf("%-6s %8s %8s %8s", "shape", "nodes", "after-O2", "file MB");
    for (int s = 0; s < NSTAGES; s++)
        printf(" %17s", stage_names[s]);
    printf("\n");
    for (int k = 0; k < 3; k++) {
        size_t len = strlen(all[k]);
        const char *at = strstr(shapes, all[k]);
        if (!at || (at != shapes && at[-1] != ',') || (at[len] && at[len] != ','))
            continue;
        result prev = {0};
        for (int64_t n = 10000; n <= max; n *= 10) {
            result r;
            if (run_child(all[k], n, &r) != 0) {
                printf("%-6s %8lld  FAILED: %s\n", all[k], (long long)n, r.err);
                failed = 1;
                break;
            }
            printf("%-6s %8lld %8lld %8.2f", all[k], (long long)r.nodes_traced,
                   (long long)r.nodes_opt, (double)r.file_bytes / 1e6);
            for (int s = 0; s < NSTAGES; s++) {
                printf(" %9.1f /%6.1f", r.ms[s], r.mb[s]);
                slow |= n == 100000 && r.ms[s] >= 1000;
            }
            printf("\n");
            if (prev.ok) {
                printf("%-6s %8s %8s %8s", "", "x10:", "", "");
                for (int s = 0; s < NSTAGES; s++) {
                    double tm = prev.ms[s] > 0.05 ? r.ms[s] / prev.ms[s] : 0;
                    double mm = prev.mb[s] > 0.5 ? r.mb[s] / prev.mb[s] : 0;
                    char a[16] = "-", b[16] = "-";
                    if (tm > 0)
                        snprintf(a, sizeof a, "%.1fx", tm);
                    if (mm > 0)
                        snprintf(b, sizeof b, "%.1fx", mm);
                    printf(" %9s /%6s", a, b);
                }
                printf("\n");
            }
            prev = r;
        }
    }
    if (max >= 100000)
        printf("target (100k nodes: every stage under 1 s): %s\n", slow ? "NOT met" : "met");
    return failed ? 1 : 0;
}
