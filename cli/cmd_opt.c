/*
 * cmd_opt.c - `tracegraph opt`: optimize a graph into another (.tgraph or
 * .onnx, either way, by extension).
 *
 *   tracegraph opt -O2 in.tgraph out.tgraph [--stats] [--explain]
 *       [--keep-params] [--finite-math] [--print-after-each] [--verify-each]
 *       [--params] [--dim N]
 *
 * --stats prints the per-pass table and the memory plan of the result;
 * --explain lists every fusion candidate that was not fused, and why,
 * and the oneDNN implementation each conv / matmul node will run;
 * --print-after-each prints the text IR after each pass that changed it;
 * --verify-each runs the graph after every pass against the original on
 * seeded inputs and names the first pass that changes an output;
 * --params and --dim N import an ONNX input as `convert` does.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_O0, OPT_O1, OPT_O2, OPT_O3, OPT_STATS, OPT_EXPLAIN, OPT_KEEP, OPT_FINITE,
       OPT_PRINT, OPT_VERIFY_EACH, OPT_PARAMS, OPT_DIM, OPT_TARGET, OPT_THREADS };

static void opt_help(void)
{
    printf("usage: %s\n\n"
           "Optimizes a graph and saves the result.  Either file may be an ONNX model\n"
           "(named .onnx): tracegraph opt -O3 model.onnx model.tgraph imports, optimizes\n"
           "and saves for replay.\n\n"
           "options:\n"
           "  -O0 .. -O3          level (default -O2): -O1 folds constants, simplifies,\n"
           "                      removes common subexpressions and dead code; -O2 adds\n"
           "                      fusion (params become constants); -O3 adds layout\n"
           "  --stats             per-pass table (removed, fused, rewritten, bytes, ms)\n"
           "                      and the memory plan (naive, lower bound, planned bytes)\n"
           "  --explain           every fusion candidate that was not fused, and why;\n"
           "                      the oneDNN implementation of each conv / matmul\n"
           "  --target NAME       -O3: plan the layout for this backend's target (cpu,\n"
           "                      opencl, ...: tracegraph devices; default\n"
           "                      cpu: this machine's instruction set and channel block;\n"
           "                      a plan compiled elsewhere re-plans it for its own)\n"
           "  --threads N         the target's threads (what its kernels are asked at)\n"
           "  --keep-params       keep params swappable (replay_set_param) at -O2+\n"
           "  --finite-math       allow rewrites that assume no inf/NaN (x*0 -> 0, ...)\n"
           "  --print-after-each  the text IR after each pass that changed the graph\n"
           "  --verify-each       run after every pass vs the original (seeded inputs);\n"
           "                      name the first pass that changes an output\n"
           "  --params            ONNX input: initializers become params (with\n"
           "                      --keep-params, swappable in the result)\n"
           "  --dim N             ONNX input: size of dims given by name (dim_param),\n"
           "                      marked dynamic (default 1); the passes size their\n"
           "                      choices (layout, memory plan) at it\n\n"
           "example:\n"
           "  tracegraph opt -O3 model.tgraph model.O3.tgraph --stats --explain\n"
           "  tracegraph opt -O3 resnet.onnx resnet.tgraph --dim 8\n",
           cli_synopsis("opt"));
}

static void print_memplan(const graph *g)
{
    opt_memory mp;
    if (opt_memory_plan(g, &mp, NULL, 0) != TG_OK)
        return;
    printf("memory: naive %zu bytes, lower bound %zu, planned %zu (%.2fx the bound), "
           "%d in-place\n", mp.naive_bytes, mp.lower_bound, mp.arena_bytes,
           mp.lower_bound ? (double)mp.arena_bytes / (double)mp.lower_bound : 1.0, mp.inplace);
}

int cli_optimize(int argc, char **argv)
{
    static const cli_opt opts[] = {{"-O0", NULL, 0, OPT_O0},
                                   {"-O1", NULL, 0, OPT_O1},
                                   {"-O2", NULL, 0, OPT_O2},
                                   {"-O3", NULL, 0, OPT_O3},
                                   {NULL, "--stats", 0, OPT_STATS},
                                   {NULL, "--explain", 0, OPT_EXPLAIN},
                                   {NULL, "--keep-params", 0, OPT_KEEP},
                                   {NULL, "--finite-math", 0, OPT_FINITE},
                                   {NULL, "--print-after-each", 0, OPT_PRINT},
                                   {NULL, "--verify-each", 0, OPT_VERIFY_EACH},
                                   {NULL, "--params", 0, OPT_PARAMS},
                                   {NULL, "--dim", 1, OPT_DIM},
                                   {NULL, "--target", 1, OPT_TARGET},
                                   {NULL, "--threads", 1, OPT_THREADS},
                                   {0}};
    replay_opts ro = REPLAY_OPTS_INIT;
    graph_target target;
    format_onnx_load_opts lo = {0, 1};
    const char *onnx_only = NULL; /* an import option given */
    opt_options o = opt_default_options();
    int stats = 0;
    const char *files[2] = {NULL, NULL};
    int nfiles = 0;
    cli_args a = {argc, argv, 1, 0, "opt"};
    const char *arg;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        if (id == CLI_HELP) {
            opt_help();
            return CLI_OK;
        }
        if (id == CLI_BAD)
            return CLI_USAGE;
        if (id >= OPT_O0 && id <= OPT_O3) {
            o.level = id - OPT_O0;
        } else if (id == CLI_POS) {
            if (nfiles == 2)
                return cli_usage_error("opt", "unexpected argument '%s'", arg);
            files[nfiles++] = arg;
        } else if (id == OPT_STATS) {
            stats = 1;
        } else if (id == OPT_EXPLAIN) {
            o.explain = stdout;
        } else if (id == OPT_KEEP) {
            o.keep_params = 1;
        } else if (id == OPT_FINITE) {
            o.finite_math = 1;
        } else if (id == OPT_PRINT) {
            o.print_after_each = stdout;
        } else if (id == OPT_VERIFY_EACH) {
            o.verify_each = 1;
        } else if (id == OPT_PARAMS) {
            lo.params = 1;
            onnx_only = "--params";
        } else if (id == OPT_DIM) {
            long v;
            if (cli_int("opt", "--dim", arg, 1, 1L << 30, &v) != 0)
                return CLI_USAGE;
            lo.dim_default = v;
            onnx_only = "--dim";
        } else if (id == OPT_TARGET) {
            if (cli_backend_check("opt", "--target", arg) != CLI_OK)
                return CLI_USAGE;
            ro.device = arg;
        } else if (id == OPT_THREADS) {
            long v;
            if (cli_int("opt", "--threads", arg, 1, TG_MAX_THREADS, &v) != 0)
                return CLI_USAGE;
            ro.threads = (int)v;
        }
    }
    char terr[256];
    if (replay_target(&ro, &target, terr, sizeof terr) != TG_OK) {
        cli_error("opt", "%s", terr);
        return CLI_ERROR;
    }
    o.target = &target;
    if (nfiles != 2)
        return cli_usage_error("opt", "needs an input and an output file");
    if (onnx_only && !cli_is_onnx(files[0]))
        return cli_usage_error("opt", "%s applies to an ONNX input (named .onnx), not '%s'",
                               onnx_only, files[0]);
    graph *g = cli_load_graph_onnx("opt", files[0], &lo);
    if (!g)
        return CLI_ERROR;
    opt_report rep;
    char err[1024];
    tg_status st = opt_optimize(g, &o, &rep, err, sizeof err);
    if (st != TG_OK) {
        cli_error("opt", "%s", err);
        graph_free(g);
        return CLI_ERROR;
    }
    if (stats) {
        opt_report_print(&rep, stdout);
        print_memplan(g);
    }
    if (rep.bad_pass[0])
        printf("verify-each: pass %s changed an output (normalized error %g)\n", rep.bad_pass,
               rep.bad_error);
    else if (o.verify_each)
        printf("verify-each: every pass kept the outputs within %g\n", o.verify_rtol);
    int saved = cli_save_graph("opt", g, files[1], 0);
    graph_free(g);
    if (saved != 0)
        return CLI_ERROR;
    printf("-O%d: %d nodes -> %d, saved %s\n", o.level, rep.nodes_before, rep.nodes_after,
           files[1]);
    return CLI_OK;
}
