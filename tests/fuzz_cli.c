/*
 * fuzz_cli.c - libFuzzer target for the `tracegraph` tool's input and
 * output handling: the fuzz bytes make a graph, .npy inputs and a command
 * line, and cli_main (cli/main.c) runs it in-process, the way
 * `tracegraph run|check|bench|train|info|dump|dot ...` would.  It must never
 * crash, leak or write outside its temporary directory.  Not named
 * test_*.c, so ctest does not pick it up; scripts/fuzz.sh builds and runs
 * it (seeds in tests/corpus/cli).
 *
 * The input, in lines:
 *
 *   COMMAND                      run, check, bench, train, info, dump or dot
 *   GRAPH ...                    text IR (starts with "graph"), or the raw
 *                                bytes of a .tgraph file, or of an ONNX
 *                                model when the line after COMMAND is "onnx"
 *   %%args                       then one argument per line:
 *   npy:FILE:DTYPE:DIMS:VALUES   writes FILE (f32[2,3]: "npy:a.npy:f32:2,3:
 *                                1,nan,-inf"; values repeat to fill it)
 *   ARG                          anything else is a command-line argument
 *
 * File names lose every '/', so -i, -o, train's --data, --state and --save,
 * and npy: files all land in the
 * temporary directory (mkdtemp under $TMPDIR), which is emptied after each
 * input; the graph is always that directory's g.tgraph (or g.onnx).
 * Options that would reach outside the process are dropped: --backend and
 * --device (OpenCL), and dot's -o/-T (they run Graphviz); bench runs at
 * most 3 timed runs after 1 warm-up, train at most 3 steps (a last
 * --steps 3; its batch is at most the rows of a data file, which npy:
 * keeps small).  Graphs whose values hold more than
 * 2^20 elements (4 MiB of f32) at the traced shapes are skipped, so that a
 * run fits the time and memory limits.  The commands' output goes to
 * /dev/null (FUZZ_CLI_VERBOSE=1 shows it).
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/npy.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "cli/cli.h"
#include "graph/graph_impl.h"

#define MAX_ARGS 600
#define MAX_NPY_NUMEL 4096
#define MAX_GRAPH_NUMEL (INT64_C(1) << 20)

static char dir[256];
static FILE *devnull;

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

static void cleanup(void)
{
    remove_dir();
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* -O3 from the built-in cost rates: no timing, no ~/.cache written */
    setenv("TG_COST_RATES", "builtin", 1);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz_cli.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz_cli: mkdtemp");
        abort();
    }
    atexit(cleanup);
    const char *v = getenv("FUZZ_CLI_VERBOSE");
    if (!v || strcmp(v, "1") != 0)
        devnull = fopen("/dev/null", "w");
    return 0;
}

/* dir/NAME with every '/' of name dropped; the result is malloc'd. */
static char *in_dir(const char *name, size_t len)
{
    char *p = malloc(strlen(dir) + len + 3);
    if (!p)
        return NULL;
    size_t k = (size_t)sprintf(p, "%s/", dir);
    for (size_t i = 0; i < len; i++)
        if (name[i] != '/' && name[i] != '\0')
            p[k++] = name[i];
    p[k] = '\0';
    const char *base = p + strlen(dir) + 1;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        strcpy(p + strlen(dir) + 1, "_"); /* the directory itself, or its parent */
    return p;
}

/* An -i/-o value: "NAME=FILE" keeps NAME, FILE goes into the directory. */
static char *spec_in_dir(const char *s)
{
    const char *eq = strchr(s, '=');
    const char *file = eq ? eq + 1 : s;
    char *f = in_dir(file, strlen(file));
    if (!f || !eq)
        return f;
    size_t n = (size_t)(eq - s);
    char *p = malloc(n + strlen(f) + 2);
    if (p) {
        memcpy(p, s, n + 1);
        strcpy(p + n + 1, f);
    }
    free(f);
    return p;
}

/* "npy:FILE:DTYPE:DIMS:VALUES": writes the file; errors just skip it. */
static void write_npy(const char *line)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", line + 4);
    char *file = buf, *dt = strchr(file, ':'), *dims = dt ? strchr(dt + 1, ':') : NULL;
    char *vals = dims ? strchr(dims + 1, ':') : NULL;
    if (!vals)
        return;
    *dt++ = *dims++ = *vals++ = '\0';
    graph_type t = {0};
    if (graph_dtype_parse(dt, strlen(dt), &t.dtype) != 0)
        return;
    int64_t numel = 1;
    for (char *d = dims; *d && t.ndim < GRAPH_MAX_DIMS;) {
        long v = strtol(d, &d, 10);
        if (v < 0 || v > MAX_NPY_NUMEL)
            return;
        t.dim[t.ndim++] = v;
        numel *= v;
        if (numel > MAX_NPY_NUMEL)
            return;
        if (*d != ',')
            break;
        d++;
    }
    double v[64];
    int nv = 0;
    for (char *p = vals; *p && nv < 64;) {
        char *end;
        v[nv] = strtod(p, &end);
        if (end == p)
            break;
        nv++;
        p = *end == ',' ? end + 1 : end;
        if (end[0] != ',')
            break;
    }
    size_t es = graph_dtype_size(t.dtype);
    uint8_t *data = calloc((size_t)numel + 1, es ? es : 1);
    if (!data)
        return;
    for (int64_t i = 0; i < numel && nv; i++) {
        double x = v[i % nv];
        switch (t.dtype) {
        case GRAPH_F32: ((float *)data)[i] = (float)x; break;
        case GRAPH_I64: ((int64_t *)data)[i] = isfinite(x) && fabs(x) < 1e18 ? (int64_t)x : 0; break;
        case GRAPH_I32: ((int32_t *)data)[i] = isfinite(x) && fabs(x) < 2e9 ? (int32_t)x : 0; break;
        default:
            if (es == 1)
                data[i] = x != 0;
            break;
        }
    }
    char *path = in_dir(file, strlen(file)), err[512];
    if (path)
        format_npy_save(path, &t, data, err, sizeof err);
    free(path);
    free(data);
}

/* Nonzero when g's values are small enough to run here. */
static int small_enough(const graph *g)
{
    int64_t total = 0;
    for (int32_t i = 0; i < g->nvalues; i++) {
        if (graph_type_check(&g->values[i].type, NULL, 0) != TG_OK)
            return 0;
        total += graph_type_numel(&g->values[i].type);
        if (total > MAX_GRAPH_NUMEL)
            return 0;
    }
    return 1;
}

/* Writes the graph part to dir/g.tgraph or g.onnx; its path, or NULL. */
static char *write_graph(const char *text, size_t len, int onnx)
{
    char err[512];
    char *path = in_dir(onnx ? "g.onnx" : "g.tgraph", onnx ? 6 : 8);
    if (!path)
        return NULL;
    graph *g = NULL;
    if (!onnx && len >= 5 && memcmp(text, "graph", 5) == 0) {
        if (!(g = graph_parse(text, len, err, sizeof err)) || !small_enough(g) ||
            format_save(g, path, NULL, err, sizeof err) != TG_OK) {
            graph_free(g);
            free(path);
            return NULL;
        }
        graph_free(g);
        return path;
    }
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(text, 1, len, f) == len;
    if (f)
        ok &= fclose(f) == 0;
    /* the same size limit for files that load */
    if (ok) {
        g = onnx ? format_onnx_load(path, NULL, err, sizeof err)
                 : format_load(path, err, sizeof err);
        ok = !g || small_enough(g);
        graph_free(g);
    }
    if (!ok) {
        free(path);
        return NULL;
    }
    return path;
}

static int known_command(const char *c)
{
    static const char *const cmds[] = {"run", "check", "bench", "train", "info", "dump", "dot"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(c, cmds[i]) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS + 8], *owned[MAX_ARGS + 8];
    int argc = 0, nowned = 0;

    /* COMMAND, then an optional "onnx" line */
    char *nl = memchr(text, '\n', size);
    char *sep = NULL, *args = NULL;
    if (!nl)
        goto done;
    *nl = '\0';
    const char *cmd = text;
    if (!known_command(cmd))
        goto done;
    char *gtext = nl + 1;
    int onnx = 0;
    if (strncmp(gtext, "onnx\n", 5) == 0) {
        onnx = 1;
        gtext += 5;
    }
    size_t glen = size - (size_t)(gtext - text);
    sep = memmem(gtext, glen, "\n%%args\n", 8);
    if (sep) {
        glen = (size_t)(sep - gtext);
        args = sep + 8;
    }
    char *gpath = write_graph(gtext, glen, onnx);
    if (!gpath)
        goto done;
    argv[argc++] = "tracegraph";
    argv[argc++] = (char *)cmd;
    argv[argc++] = owned[nowned++] = gpath;
    int is_dot = strcmp(cmd, "dot") == 0, pending = 0; /* 1: an -i/-o value next, 2: another */
    for (char *line = args, *next; line && *line && argc < MAX_ARGS; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "npy:", 4) == 0) {
            write_npy(line);
            continue;
        }
        if (pending) {
            char *s = pending == 1 ? spec_in_dir(line) : line;
            pending = 0;
            if (s)
                argv[argc++] = s;
            if (s && s != line)
                owned[nowned++] = s;
            continue;
        }
        if (strcmp(line, "--") == 0 || strncmp(line, "--backend", 9) == 0 ||
            strncmp(line, "--device", 8) == 0 || strncmp(line, "--threads", 9) == 0 ||
            strncmp(line, "--tune", 6) == 0 || (is_dot && line[0] == '-'))
            continue; /* its value, if any, becomes an operand (--tune: it would time
                       * GEMMs and write the user's tuning cache) */
        if (strcmp(line, "-i") == 0 || strcmp(line, "-o") == 0 ||
            strcmp(line, "--input") == 0 || strcmp(line, "--output") == 0 ||
            strcmp(line, "--data") == 0 || strcmp(line, "--state") == 0 ||
            strcmp(line, "--save") == 0) {
            argv[argc++] = line;
            pending = 1;
            continue;
        }
        if (strncmp(line, "--input=", 8) == 0 || strncmp(line, "--output=", 9) == 0 ||
            strncmp(line, "--data=", 7) == 0 || strncmp(line, "--state=", 8) == 0 ||
            strncmp(line, "--save=", 7) == 0) {
            char *eq = strchr(line, '='), *s = spec_in_dir(eq + 1);
            char *p = s ? malloc((size_t)(eq - line) + strlen(s) + 2) : NULL;
            if (p) {
                sprintf(p, "%.*s=%s", (int)(eq - line), line, s);
                argv[argc++] = owned[nowned++] = p;
            }
            free(s);
            continue;
        }
        if (line[0] == '-' && line[1]) {
            argv[argc++] = line;
            pending = strcmp(line, "--rtol") == 0 || strcmp(line, "--atol") == 0 ||
                      strcmp(line, "--seed") == 0 || strcmp(line, "--runs") == 0 ||
                      strcmp(line, "--warmup") == 0 || strcmp(line, "--steps") == 0 ||
                      strcmp(line, "--batch") == 0 || strcmp(line, "--start") == 0 ||
                      strcmp(line, "--every") == 0 || strcmp(line, "--lr") == 0 ||
                      strcmp(line, "--lr-state") == 0 ? 2 : 0;
            continue;
        }
        char *s = in_dir(line, strlen(line)); /* an operand: a file in the directory */
        if (s)
            argv[argc++] = owned[nowned++] = s;
    }
    if (strcmp(cmd, "bench") == 0) {
        argv[argc++] = "--runs";
        argv[argc++] = "3";
        argv[argc++] = "--warmup";
        argv[argc++] = "1";
    }
    if (strcmp(cmd, "train") == 0) {
        argv[argc++] = "--steps";
        argv[argc++] = "3";
    }
    argv[argc] = NULL;

    FILE *out = stdout, *err = stderr;
    if (devnull) {
        fflush(stdout);
        fflush(stderr);
        stdout = stderr = devnull;
    }
    cli_main(argc, argv);
    if (devnull) {
        fflush(devnull);
        stdout = out;
        stderr = err;
    }
done:
    for (int i = 0; i < nowned; i++)
        free(owned[i]);
    free(text);
    remove_dir();
    return 0;
}
