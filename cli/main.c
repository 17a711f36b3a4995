/*
 * main.c - the `tracegraph` command-line tool: look inside a saved
 * .tgraph (or an ONNX model), run it on .npy inputs, time it, check it
 * against the reference interpreter, optimize it, convert it.  This file
 * holds the command table, the overall usage and `version`; each command
 * lives in cmd_*.c; entry.c holds main(), so that the CLI fuzz target
 * can call cli_main in-process.
 */
#include <string.h>

#include "cli.h"

#ifndef TG_VERSION
#define TG_VERSION "unknown"
#endif

int cli_info(int argc, char **argv);
int cli_dump(int argc, char **argv);
int cli_dot(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_optimize(int argc, char **argv);
int cli_convert(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_ops(int argc, char **argv);
static int cli_version(int argc, char **argv);
static int cli_help(int argc, char **argv);

typedef struct command {
    const char *name;
    int (*main)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;
    const char *synopsis; /* the usage line(s) */
} command;

static const command commands[] = {
    {"info", cli_info, "what a .tgraph holds (sections, ops, signature, params, states, "
     "guards), or an IDX file",
     "tracegraph info FILE.tgraph | FILE.idx[.gz]"},
    {"dump", cli_dump, "print the graph as text IR",
     "tracegraph dump FILE.tgraph [--inline-all] [--no-provenance]"},
    {"dot", cli_dot, "draw the graph (Graphviz DOT, or PNG/SVG through `dot`)",
     "tracegraph dot FILE.tgraph [-o OUT] [-T png|svg]"},
    {"run", cli_run, "run the graph on .npy inputs, write or summarize the outputs",
     "tracegraph run FILE.tgraph [-i NAME=IN.npy | -i IN.npy]...\n"
     "                      [-o NAME=OUT.npy | -o OUT.npy]... [--backend NAME[:DEVICE]]\n"
     "                      [--threads N] [--max-memory SIZE] [--tune]"},
    {"bench", cli_bench, "time replay runs: min/median/mean/max and runs/s",
     "tracegraph bench FILE.tgraph [-i NAME=IN.npy | -i IN.npy]...\n"
     "                        [--warmup N] [--runs N] [--threads N] [--seed N]\n"
     "                        [--backend NAME[:DEVICE]] [--max-memory SIZE] [--tune]"},
    {"check", cli_check, "compare replay with the reference interpreter",
     "tracegraph check FILE.tgraph [-i NAME=IN.npy | -i IN.npy]...\n"
     "                        [--rtol X] [--atol X] [--seed N] [--threads N]\n"
     "                        [--backend NAME[:DEVICE]]"},
    {"train", cli_train, "run a saved training step on .npy or IDX batches; checkpoint its state",
     "tracegraph train STEP.tgraph --steps N [--data NAME=FILE]...\n"
     "                        [--batch B] [--start S] [--state CKPT] [--save CKPT]\n"
     "                        [--lr X [--lr-state NAME]] [--every K] [--threads T]\n"
     "                        [--print-state]"},
    {"opt", cli_optimize, "optimize a graph (-O0..-O3) and save it, with --stats and --explain",
     "tracegraph opt [-O0|-O1|-O2|-O3] IN.tgraph OUT.tgraph [--stats] [--explain]\n"
     "                      [--keep-params] [--finite-math] [--print-after-each]\n"
     "                      [--verify-each] [--params] [--dim N]"},
    {"convert", cli_convert, "convert between .tgraph and ONNX (.onnx), either way",
     "tracegraph convert IN OUT [--drop-guards] [--params] [--dim N]"},
    {"devices", cli_devices, "list every backend's devices by name (what --backend takes)",
     "tracegraph devices"},
    {"ops", cli_ops, "list the ops a graph may hold, or the ONNX ops read (--onnx)",
     "tracegraph ops [--onnx] [--markdown]"},
    {"version", cli_version, "print the version", "tracegraph version"},
    {"help", cli_help, "help on a command: tracegraph help run", "tracegraph help [COMMAND]"},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: tracegraph <command> [options] FILE.tgraph ...\n\n"
               "Inspect, run, time and check graphs saved by tracegraph (.tgraph files)\n"
               "or ONNX models (.onnx files, imported on load).\n\n"
               "commands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'tracegraph <command> --help' explains a command's options.\n\n"
               "exit codes:\n"
               "  0  success\n"
               "  1  error: unreadable or damaged file, bad input data, runtime failure\n"
               "  2  bad command line (unknown command or option, missing argument)\n"
               "  3  a guard failed: the inputs take a path the trace did not record\n"
               "  4  check: outputs differ beyond the tolerance\n"
               "  130 train: stopped by Ctrl-C (the state saved with --save)\n\n"
               "example:\n"
               "  tracegraph info model.tgraph\n"
               "  tracegraph run model.tgraph -i x=input.npy -o y=out.npy\n"
               "  tracegraph opt -O3 model.onnx model.tgraph\n");
}

static const command *find(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

const char *cli_synopsis(const char *cmd)
{
    const command *c = find(cmd);
    return c ? c->synopsis : "tracegraph <command> [options] FILE.tgraph ...";
}

static int cli_version(int argc, char **argv)
{
    static const cli_opt opts[] = {{0}};
    cli_args a = {argc, argv, 1, 0, "version"};
    const char *arg;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        if (id == CLI_HELP) {
            printf("usage: %s\n\n", cli_synopsis("version"));
            printf("Prints the tool's version, the file formats it reads and the CPU kernel\n"
                   "set in use (avx512, avx2 or baseline, picked from the CPU; the\n"
                   "environment variable TG_CPU names a lower one; native in a TG_NATIVE\n"
                   "build) and the instruction set oneDNN's kernels use (avx2, avx512_core,\n"
                   "...: the highest the CPU has unless ONEDNN_MAX_CPU_ISA caps it).\n\n"
                   "example:\n  tracegraph version\n");
            return CLI_OK;
        }
        if (id == CLI_POS)
            return cli_usage_error("version", "unexpected argument '%s'", arg);
        return CLI_USAGE;
    }
    printf("tracegraph %s (.tgraph format %d; ONNX opset %d written, %d..%d read; "
           ".npy 1.0, 2.0, 3.0)\n", TG_VERSION, FORMAT_VERSION, FORMAT_ONNX_OPSET,
           FORMAT_ONNX_MIN_OPSET, FORMAT_ONNX_MAX_OPSET);
    printf("CPU kernels: %s\n", eager_cpu_level());
    printf("oneDNN ISA: %s\n", eager_onednn_isa());
    return CLI_OK;
}

static int cli_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return CLI_OK;
    }
    if (argc > 2)
        return cli_usage_error("help", "one COMMAND only ('%s' is extra)", argv[2]);
    const command *c = find(argv[1]);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        (c && c->main == cli_help)) {
        printf("usage: %s\n\n", cli_synopsis("help"));
        printf("Without COMMAND, lists the commands and the exit codes; with one, prints\n"
               "its help (the same as tracegraph COMMAND --help).\n\n"
               "example:\n  tracegraph help bench\n");
        return CLI_OK;
    }
    if (!c)
        return cli_usage_error("help", "unknown command '%s'", argv[1]);
    char *args[] = {argv[1], "--help", NULL};
    return c->main(2, args);
}

int cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        name = "version";
    const command *c = find(name);
    if (!c) {
        fprintf(stderr, "tracegraph: unknown %s '%s'\n\n",
                name[0] == '-' ? "option" : "command", name);
        usage(stderr);
        return CLI_USAGE;
    }
    return c->main(argc - 1, argv + 1);
}
