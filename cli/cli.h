/*
 * cli.h - what the files of the `tracegraph` command-line tool share:
 * exit codes, messages, a small option parser, and loading graphs and
 * tensors (.npy) for the commands.
 *
 * One file per command group: main.c (dispatch, usage, version),
 * cmd_info.c (info, dump, dot), cmd_run.c (run, check), cmd_bench.c
 * (bench), cmd_train.c (train), cmd_opt.c (opt), cmd_convert.c (convert), util.c (options, messages), io.c (graphs,
 * inputs, outputs).
 *
 * Every message goes to stderr as "tracegraph <cmd>: <message>".
 *
 * The tool is a client of the library's public API only, as any program
 * is: it includes tracegraph.h (the installed headers) and links
 * libtracegraph.so, which exports nothing else.
 */
#ifndef TG_REPLAY_CLI_H
#define TG_REPLAY_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "../tracegraph.h"

/* The tool's allocator (alloc.c): libc's; the library's in test_alloc_fail,
 * which fails each allocation in turn.  Free with cli_free (or free). */
void *cli_malloc(size_t n);
void *cli_calloc(size_t n, size_t size);
void *cli_aligned_alloc(size_t align, size_t size);
void cli_free(void *p);

/* Exit codes, the same for every command (listed in `tracegraph --help`). */
enum {
    CLI_OK = 0,
    CLI_ERROR = 1,    /* a file, model or runtime error */
    CLI_USAGE = 2,    /* bad command line */
    CLI_GUARD = 3,    /* a guard failed: the inputs take another path */
    CLI_MISMATCH = 4, /* check: outputs differ beyond the tolerance */
};

/* ---- messages ---- */

/* "tracegraph <cmd>: <message>\n" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The usage line(s) of a command ("tracegraph run FILE.tgraph ..."). */
const char *cli_synopsis(const char *cmd);
/* The same as cli_error, then the command's usage and a pointer to
 * `tracegraph <cmd> --help`; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The exit code of a failed replay or interpreter status. */
int cli_exit_code(tg_status st);

/* ---- options ---- */

/* One option: short and/or long spelling, whether it takes a value. */
typedef struct cli_opt {
    const char *shrt; /* "-i", or NULL */
    const char *lng;  /* "--input", or NULL */
    int has_arg;
    int id;
} cli_opt;

typedef struct cli_args {
    int argc;
    char **argv;
    int i;        /* next argv index */
    int only_pos; /* after "--" */
    const char *cmd;
} cli_args;

enum { CLI_END = -1, CLI_POS = -2, CLI_BAD = -3, CLI_HELP = -4 };

/*
 * The next option's id (its value in *arg), CLI_POS for an operand (in
 * *arg), CLI_HELP for -h/--help, CLI_END, or CLI_BAD after printing the
 * reason.  Values: "-i V", "--input V" or "--input=V".
 */
int cli_next(cli_args *a, const cli_opt *opts, const char **arg);
/* Parses an integer in [lo, hi] for option opt; 0, or -1 after a message. */
int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
/* Parses a finite double >= 0; 0, or -1 after a message. */
int cli_double(const char *cmd, const char *opt, const char *s, double *out);

/* ---- graphs ---- */

/* Nonzero when path ends in ".onnx" (any case): an ONNX model. */
int cli_is_onnx(const char *path);
/* 1 when path names an IDX file, plain or gzip: it ends in ".idx", ".gz"
 * or "-ubyte" (MNIST's names: train-images-idx3-ubyte.gz). */
int cli_is_idx(const char *path);
/* Loads a .tgraph file, or an ONNX model (cli_is_onnx); NULL after a message. */
graph *cli_load_graph(const char *cmd, const char *path);
/* The same, with the ONNX import options (NULL: defaults). */
struct format_onnx_load_opts;
graph *cli_load_graph_onnx(const char *cmd, const char *path,
                           const struct format_onnx_load_opts *opts);
/*
 * Saves g as .tgraph, or as ONNX when cli_is_onnx(path) (drop_guards: as
 * format_onnx_save_opts).  0, or -1 after a message.
 */
int cli_save_graph(const char *cmd, const graph *g, const char *path, int drop_guards);
/*
 * Replaces every string of g that a file gave (graph, value, output and
 * symbol names, call sites' files and functions) by its cli_esc form, for
 * commands that print a graph they do not run (info).  0, or -1 after a
 * message.
 */
int cli_escape_names(const char *cmd, graph *g);
/* "f32[B,32]": dynamic dims by symbol, as they are (buf always terminated). */
const char *cli_value_type(const graph *g, int32_t v, char *buf, size_t len);
/* "f32[4,32]" (buf always terminated). */
const char *cli_type_str(const graph_type *t, char *buf, size_t len);

/* ---- tensors ---- */

/* The graph's inputs in signature order, data owned (64-byte aligned);
 * t has n entries, as many as the graph has inputs (no fixed cap). */
typedef struct cli_inputs {
    int n;
    replay_tensor *t;
} cli_inputs;

/*
 * Loads -i specs ("name=file.npy" or "file.npy": the k-th spec without a
 * name fills input k) into signature order.  0, or -1 after a message.
 */
int cli_load_inputs(const char *cmd, const graph *g, char *const *specs, int nspecs,
                    cli_inputs *in);
/*
 * Seeded random inputs at the traced shapes: f32 uniform in [-1, 1),
 * i32/i64 uniform in [0, 4) (small, so index inputs stay in range), bool
 * 0 or 1.  0, or -1 after a message (out of memory).
 */
int cli_random_inputs(const char *cmd, const graph *g, uint64_t seed, cli_inputs *in);
void cli_inputs_free(cli_inputs *in);

/*
 * Maps -o specs ("name=out.npy" or "out.npy", filling the outputs no spec
 * names, in order) to output indices slot[k] and paths path[k] (nspecs
 * entries each).  0, or -1 after a message.
 */
int cli_output_specs(const char *cmd, const graph *g, char *const *specs, int nspecs, int *slot,
                     const char **path);
/* The graph's outputs for replay_run (names set, data NULL), noutputs of
 * them (free); NULL after a message. */
replay_tensor *cli_outputs_new(const char *cmd, const graph *g);
/* Element i of a tensor as a double. */
double cli_element(const graph_type *t, const void *data, int64_t i);
/* "  y: f32[4,10] = [v0, v1, ... ] (min, max, mean)" on f. */
void cli_print_tensor(FILE *f, const char *name, const graph_type *t, const void *data);

/* ---- the options of run, bench and check (runopts.c) ---- */

enum {
    RUN_OPT_INPUT = 1,
    RUN_OPT_OUTPUT,
    RUN_OPT_BACKEND,
    RUN_OPT_THREADS,
    RUN_OPT_SEED,
    RUN_OPT_WARMUP,
    RUN_OPT_RUNS,
    RUN_OPT_RTOL,
    RUN_OPT_ATOL,
    RUN_OPT_DEVICE,
    RUN_OPT_MAX_MEMORY,
    RUN_OPT_TUNE,
};

typedef struct cli_run_opts {
    const char *cmd;
    const char *file;
    char **inputs; /* -i values, ninputs of them (room for argc) */
    int ninputs;
    char **outputs; /* -o values */
    int noutputs;
    replay_opts replay; /* .device: backend below */
    char backend[256];  /* --backend NAME[:DEVICE], with --device's DEVICE */
    const char *backend_arg, *device_arg; /* as given */
    long seed, warmup, runs;
    double rtol, atol;
} cli_run_opts;

/*
 * CLI_OK when name's backend part (before a colon) names a backend of the
 * library (replay_backend_name); else CLI_USAGE after a message naming
 * option opt of cmd and listing the backends.
 */
int cli_backend_check(const char *cmd, const char *opt, const char *name);

/* The option table entry of each RUN_OPT_* (a command lists the ids it takes). */
const cli_opt *cli_run_opt(int id);
/*
 * Parses "CMD FILE.tgraph [options]" accepting the RUN_OPT ids in ids[]
 * (0-terminated); defaults first.  CLI_OK, CLI_USAGE or CLI_ERROR (after a
 * message), or -1 after printing help; cli_run_opts_free in every case.
 */
int cli_parse_run(int argc, char **argv, const int *ids, void (*help)(void),
                  cli_run_opts *o);
void cli_run_opts_free(cli_run_opts *o);

/* What run, bench and check set up: the graph, its plan, a session, inputs. */
typedef struct cli_setup {
    graph *g;
    replay_plan *plan;
    replay_session *session;
    cli_inputs in;
    int random_inputs; /* no -i given: seeded random inputs */
} cli_setup;

/*
 * Loads the graph, its inputs (from -i, or seeded random at the traced
 * shapes when random_ok and none are given) and compiles a plan.  CLI_OK
 * or an exit code after a message; cli_teardown in either case.
 */
int cli_setup_run(const cli_run_opts *o, int random_ok, cli_setup *s);
void cli_teardown(cli_setup *s);

/* `tracegraph devices` (cmd_devices.c). */
int cli_devices(int argc, char **argv);

/* Seconds on a monotonic clock. */
double cli_now(void);

/*
 * A string from a file (a value, input, output or symbol name, a call
 * site, an op or doc string of an imported model) made safe to print:
 * control bytes, DEL, backslash and bytes that are not valid UTF-8 become
 * \xNN escapes, so a file cannot send escape sequences to the terminal.
 * NULL gives "(null)".  The result is in buf (always terminated, cut with
 * "..." when it does not fit) and returned.
 */
const char *cli_esc(const char *s, char *buf, size_t len);
/* The same into one of a few rotating static buffers of CLI_ESC_LEN
 * bytes, for several names in one printf (valid until 8 more calls). */
#define CLI_ESC_LEN 1024
const char *cli_escs(const char *s);

/*
 * The `tracegraph` dispatch: argv[0] is the program, argv[1] the command.
 * Returns the exit code; never exits (the fuzz target calls it).
 */
int cli_main(int argc, char **argv);

#endif
