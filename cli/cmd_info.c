/*
 * cmd_info.c - the commands that look at a saved graph without running
 * it: `info` (file layout and what the trace holds; for an IDX data file,
 * its element type, dims and values), `dump` (text IR) and `dot`
 * (Graphviz, optionally rendered by the `dot` program).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* Parses "CMD [opts] FILE": the one operand in *file.  CLI_OK to go on,
 * -1 after --help was printed, or CLI_USAGE. */
typedef int (*opt_fn)(void *ctx, int id, const char *arg);

static int parse_file_cmd(int argc, char **argv, const cli_opt *opts, opt_fn on_opt,
                          void *ctx, void (*help)(void), const char **file)
{
    cli_args a = {argc, argv, 1, 0, argv[0]};
    const char *arg;
    *file = NULL;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        if (id == CLI_HELP) {
            help();
            return -1;
        }
        if (id == CLI_BAD)
            return CLI_USAGE;
        if (id == CLI_POS) {
            if (*file)
                return cli_usage_error(argv[0], "one FILE.tgraph only ('%s' is extra)", arg);
            *file = arg;
        } else if (on_opt(ctx, id, arg) != CLI_OK) {
            return CLI_USAGE;
        }
    }
    if (!*file)
        return cli_usage_error(argv[0], "no FILE.tgraph given");
    return CLI_OK;
}

static int no_opts(void *ctx, int id, const char *arg) { return CLI_OK; }

/* ---- info ---- */

static void info_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("info"));
    printf("Describes a saved graph: the file's format version and sections (compressed\n"
           "and raw bytes), node count and ops, inputs and outputs with their types\n"
           "(dynamic dims by symbol), params (names, shapes, bytes), constants, the\n"
           "states of a training step (names, shapes, bytes, whether the step updates\n"
           "each), guards (kind, policy, call site), specialized nodes, and the oneDNN\n"
           "kernel each conv / matmul node gets on the CPU (counted by name; a\n"
           "reference kernel is named with its node).\n\n"
           "An IDX data file (MNIST, Fashion-MNIST: a name ending in .idx, -ubyte or\n"
           ".gz, plain or gzip-compressed) is checked whole and described: its element\n"
           "type and dims, its size (compressed and decompressed), the range and mean\n"
           "of its values, and for a 1-D file of integers (labels) how many of each\n"
           "value it holds.\n\n"
           "example:\n  tracegraph info model.tgraph\n"
           "  tracegraph info /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz\n");
}

/* ---- info on an IDX file ---- */

/*
 * The IDX file's header and sizes, its values' range and mean, and for a
 * 1-D file of integers the count of each value (up to 32 distinct).
 */
static int info_idx(const char *file)
{
    char err[1024], dims[200];
    format_idx_info fi;
    graph_type t;
    void *data = NULL;
    tg_status st = format_idx_inspect(file, &fi, err, sizeof err);
    if (st == TG_OK)
        st = format_idx_load(file, GRAPH_F32, 0, &t, &data, err, sizeof err);
    if (st != TG_OK) {
        cli_error("info", "%s", err);
        return CLI_ERROR;
    }
    printf("file %s: IDX file", cli_escs(file));
    if (fi.gzip)
        printf(", gzip-compressed: %llu bytes, %llu decompressed\n",
               (unsigned long long)fi.file_bytes, (unsigned long long)fi.idx_bytes);
    else
        printf(", %llu bytes\n", (unsigned long long)fi.file_bytes);
    printf("  elements: %s%s, %lld of them\n", format_idx_type_name(fi.type),
           graph_shape_str(&t, dims, sizeof dims), (long long)graph_type_numel(&t));
    int64_t n = graph_type_numel(&t);
    const float *v = data;
    if (n > 0) {
        double lo = v[0], hi = v[0], sum = 0;
        for (int64_t i = 0; i < n; i++) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
            sum += v[i];
        }
        printf("  values: min %.9g, max %.9g, mean %.6g\n", lo, hi, sum / (double)n);
    }
    int integer = fi.type != FORMAT_IDX_F32 && fi.type != FORMAT_IDX_F64;
    if (integer && fi.ndim == 1 && n > 0) {
        enum { MAX_DISTINCT = 32 };
        float val[MAX_DISTINCT];
        int64_t count[MAX_DISTINCT];
        int k = 0, more = 0;
        for (int64_t i = 0; i < n && !more; i++) {
            int j = 0;
            while (j < k && val[j] != v[i])
                j++;
            if (j == k && k == MAX_DISTINCT)
                more = 1;
            else if (j == k)
                val[k] = v[i], count[k++] = 1;
            else
                count[j]++;
        }
        if (more) {
            printf("  counts: more than %d distinct values\n", MAX_DISTINCT);
        } else {
            /* in order of value */
            for (int a = 1; a < k; a++)
                for (int b = a; b > 0 && val[b] < val[b - 1]; b--) {
                    float tv = val[b];
                    int64_t tc = count[b];
                    val[b] = val[b - 1], count[b] = count[b - 1];
                    val[b - 1] = tv, count[b - 1] = tc;
                }
            printf("  counts (%d distinct):", k);
            for (int j = 0; j < k; j++)
                printf(" %.0f=%lld", val[j], (long long)count[j]);
            printf("\n");
        }
    }
    cli_free(data);
    return CLI_OK;
}

/*
 * The oneDNN implementation each conv / matmul node gets when a CPU plan
 * prepares it on one thread (what `opt --explain` lists node by node),
 * counted by name; a reference kernel, or a node oneDNN cannot run, is
 * listed with its node.  Nothing runs: oneDNN only picks.
 */
static int has_impl(graph_op op)
{
    return op == GRAPH_OP_conv2d || op == GRAPH_OP_conv2d_ep || op == GRAPH_OP_conv2d_blk ||
           op == GRAPH_OP_matmul || op == GRAPH_OP_linear || op == GRAPH_OP_linear_ep;
}

/* The implementation node i runs on target t at its traced types. */
static tg_status node_impl(const graph_target *t, const graph *g, int32_t i, char *impl,
                           size_t len, char *why, size_t wlen)
{
    graph_type in[GRAPH_MAX_NODE_IO];
    uint32_t fixed = 0;
    int nin = 0, nout = 0;
    const int32_t *ins = graph_node_inputs(g, i, &nin), *outs = graph_node_outputs(g, i, &nout);
    if (nout != 1 || nin > GRAPH_MAX_NODE_IO) {
        snprintf(why, wlen, "%d inputs, %d outputs: not a conv or matmul", nin, nout);
        return TG_ERR_UNSUPPORTED;
    }
    for (int j = 0; j < nin; j++) {
        int kind = graph_value_kind_of(g, ins[j]);
        in[j] = *graph_value_type(g, ins[j]);
        if (kind == GRAPH_VALUE_CONST || kind == GRAPH_VALUE_PARAM)
            fixed |= 1u << j;
    }
    return t->impl_of(t, (graph_op)graph_node_op(g, i), graph_node_attrs(g, i), in, nin,
                      graph_value_type(g, outs[0]), fixed, impl, len, why, wlen);
}

/*
 * The target the graph's layout was planned for, and this machine's: a
 * CPU plan made here re-plans when they differ.
 */
static void print_target(const graph *g, const graph_target *t)
{
    int blocked = 0;
    for (int32_t i = 0; i < graph_node_count(g); i++)
        blocked |= !(graph_node_flags(g, i) & GRAPH_NODE_DEAD) &&
                   graph_node_op(g, i) == GRAPH_OP_conv2d_blk;
    const char *target = graph_layout_target(g);
    if (target)
        printf("  layout: planned for %s%s\n", target,
               strcmp(target, t->name) == 0 ? " (this machine)" : "");
    else if (blocked)
        printf("  layout: blocks of 16 channels, target not recorded (an older file)\n");
    else
        printf("  layout: none planned (optimized below -O3)\n");
    printf("  this machine: %s, blocks of %d channels (%s)%s\n", t->name, t->block, t->why,
           (target ? strcmp(target, t->name) != 0 : blocked)
               ? "; a CPU plan made here re-plans the layout for it"
               : "");
    if (t->block && t->rates) { /* measured here the first time (under a second), then cached */
        graph_cost_rates r;
        char why[400];
        if (t->rates(t, &r, why, sizeof why) != TG_OK)
            printf("  cost rates: %s\n", why);
        else
            printf("  cost rates (-O3 layout, %d thread%s): %s: gemm %.1f, im2col %.1f, blocked "
                   "1x1 %.1f (padded %.1f), blocked kxk %.1f MACs/ns; copy %.1f bytes/ns, step "
                   "%.0f ns, plain call %.0f ns\n",
                   t->threads, t->threads == 1 ? "" : "s", r.from, r.gemm, r.im2col, r.blk_1x1,
                   r.blk_1x1_padded, r.blk_kxk, r.copy, r.step, r.plain_call);
    }
}

static void print_impls(const graph *g)
{
    enum { MAX_IMPLS = 32 };
    char names[MAX_IMPLS][64], impl[64], why[200], site[300];
    int counts[MAX_IMPLS] = {0}, n = 0, nodes = 0;
    graph_target t;
    replay_opts ro = REPLAY_OPTS_INIT;
    if (replay_target(&ro, &t, why, sizeof why) != TG_OK || !t.impl_of)
        return;
    print_target(g, &t);
    for (int32_t i = 0; i < graph_node_count(g); i++) {
        graph_op op = (graph_op)graph_node_op(g, i);
        if ((graph_node_flags(g, i) & GRAPH_NODE_DEAD) || !has_impl(op))
            continue;
        nodes++;
        tg_status st = node_impl(&t, g, i, impl, sizeof impl, why, sizeof why);
        const char *where = graph_node_site(g, i, site, sizeof site);
        if (st != TG_OK) {
            printf("  oneDNN: node %d %s at %s: no implementation (%s)\n", i,
                   graph_ops[op].name, where, why[0] ? why : tg_status_str(st));
            continue;
        }
        if (!impl[0])
            snprintf(impl, sizeof impl, "(not called: an empty operand)");
        else if (t.impl_is_ref && t.impl_is_ref(impl))
            printf("  oneDNN: node %d %s at %s runs a reference kernel (%s): slow\n", i,
                   graph_ops[op].name, where, impl);
        int k = 0;
        while (k < n && strcmp(names[k], impl) != 0)
            k++;
        if (k == n && n < MAX_IMPLS)
            snprintf(names[n++], sizeof names[0], "%s", impl);
        if (k < n)
            counts[k]++;
    }
    eager_clear_error();
    if (!nodes)
        return;
    printf("  oneDNN kernels (%d conv / matmul nodes, CPU, 1 thread):", nodes);
    for (int k = 0; k < n; k++)
        printf(" %s=%d", names[k], counts[k]);
    printf("\n");
}

/* Params, constants and states with their sizes (trace_summary lists
 * names and types only). */
static void print_storage(const graph *g)
{
    size_t pbytes = 0, cbytes = 0;
    int np = 0, nc = 0;
    for (int32_t i = 0; i < graph_value_count(g); i++) {
        int kind = graph_value_kind_of(g, i);
        if (kind == GRAPH_VALUE_PARAM)
            np++, pbytes += graph_type_bytes(graph_value_type(g, i));
        else if (kind == GRAPH_VALUE_CONST)
            nc++, cbytes += graph_type_bytes(graph_value_type(g, i));
    }
    printf("storage:\n  params: %d, %zu bytes\n", np, pbytes);
    for (int32_t i = 0; i < graph_value_count(g); i++) {
        const char *name = graph_value_name(g, i);
        char ty[200];
        if (graph_value_kind_of(g, i) == GRAPH_VALUE_PARAM)
            printf("    %-20s %-20s %zu bytes\n", name ? name : "(unnamed)",
                   cli_value_type(g, i, ty, sizeof ty), graph_type_bytes(graph_value_type(g, i)));
    }
    printf("  constants: %d, %zu bytes\n", nc, cbytes);
    if (!graph_num_states(g))
        return;
    size_t sbytes = 0;
    for (int32_t i = 0; i < graph_num_states(g); i++)
        sbytes += graph_type_bytes(graph_value_type(g, graph_state_value(g, i)));
    printf("  states: %d, %zu bytes (a training step: tracegraph train runs it)\n",
           graph_num_states(g), sbytes);
    for (int32_t i = 0; i < graph_num_states(g); i++) {
        int32_t v = graph_state_value(g, i);
        const char *name = graph_value_name(g, v);
        char ty[200];
        printf("    %-20s %-20s %zu bytes, %s\n", name ? name : "(unnamed)",
               cli_value_type(g, v, ty, sizeof ty), graph_type_bytes(graph_value_type(g, v)),
               graph_state_next(g, i) == v ? "not changed by the step" : "updated by each step");
    }
}

static void print_sections(const char *file, const format_info *fi)
{
    printf("file %s: .tgraph format version %u, %llu bytes, %d sections\n", cli_escs(file), fi->version,
           (unsigned long long)fi->file_size, fi->nsections);
    printf("  %-12s %12s %12s\n", "section", "compressed", "raw");
    for (int i = 0; i < fi->nsections; i++) {
        const format_section_info *sec = &fi->sections[i];
        printf("  %-12s %12llu %12llu\n", sec->name, (unsigned long long)sec->stored,
               (unsigned long long)sec->raw);
    }
}

int cli_info(int argc, char **argv)
{
    static const cli_opt opts[] = {{0}};
    const char *file;
    int rc = parse_file_cmd(argc, argv, opts, no_opts, NULL, info_help, &file);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    if (cli_is_idx(file))
        return info_idx(file);
    char err[1024];
    format_info fi;
    graph *g = NULL;
    if (cli_is_onnx(file)) {
        if (!(g = cli_load_graph("info", file)))
            return CLI_ERROR;
        printf("file %s: ONNX model, imported\n", cli_escs(file));
    } else {
        /* Read once, as far as its header declares, then the header and
         * the graph from memory: a pipe cannot be read twice. */
        void *buf = NULL;
        size_t len;
        tg_status st = format_read_file(file, &buf, &len, err, sizeof err);
        if (st == TG_OK)
            st = format_info_mem(buf, len, file, &fi, err, sizeof err);
        if (st == TG_OK && !(g = format_load_mem(buf, len, file, err, sizeof err)))
            st = TG_ERR_FORMAT;
        cli_free(buf);
        if (st != TG_OK) {
            cli_error("info", "%s", err);
            return CLI_ERROR;
        }
        print_sections(file, &fi);
    }
    if (cli_escape_names("info", g) != 0) {
        graph_free(g);
        return CLI_ERROR;
    }
    fflush(stdout);
    trace_summary(g, stdout);
    int spec = 0;
    for (int32_t i = 0; i < graph_node_count(g); i++)
        spec += (graph_node_flags(g, i) & (GRAPH_NODE_SPECIALIZED | GRAPH_NODE_DEAD)) ==
                GRAPH_NODE_SPECIALIZED;
    if (!spec && graph_symbol_count(g))
        printf("  specialized: none (every node follows the dynamic dims)\n");
    print_impls(g);
    print_storage(g);
    graph_free(g);
    return CLI_OK;
}

/* ---- dump ---- */

enum { OPT_INLINE_ALL = 1, OPT_NO_PROV, OPT_OUT, OPT_FORMAT };

static void dump_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("dump"));
    printf("Prints the graph as text IR (the form graph_parse reads back).\n\n"
           "options:\n"
           "  --inline-all     print the data of every param and constant (by default\n"
           "                   those of more than 16 elements are elided, shown by hash)\n"
           "  --no-provenance  leave out call sites: no '!pN' references, no\n"
           "                   '# file:line' comments, no provenance section\n\n"
           "example:\n  tracegraph dump model.tgraph --no-provenance | less\n");
}

static int dump_opt(void *ctx, int id, const char *arg)
{
    graph_print_opts *o = ctx;
    if (id == OPT_INLINE_ALL)
        o->inline_all = 1;
    else if (id == OPT_NO_PROV)
        o->provenance = o->comments = 0;
    return CLI_OK;
}

int cli_dump(int argc, char **argv)
{
    static const cli_opt opts[] = {{NULL, "--inline-all", 0, OPT_INLINE_ALL},
                                   {NULL, "--no-provenance", 0, OPT_NO_PROV},
                                   {0}};
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    const char *file;
    int rc = parse_file_cmd(argc, argv, opts, dump_opt, &po, dump_help, &file);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    graph *g = cli_load_graph("dump", file);
    if (!g)
        return CLI_ERROR;
    tg_status st = graph_print(g, stdout, &po);
    graph_free(g);
    if (st != TG_OK || fflush(stdout) != 0) {
        cli_error("dump", "cannot write the text IR: %s", tg_status_str(st ? st : TG_ERR_IO));
        return CLI_ERROR;
    }
    return CLI_OK;
}

/* ---- dot ---- */

typedef struct dot_opts {
    const char *out;    /* -o, or NULL for stdout */
    const char *format; /* -T: "png", "svg", or NULL for DOT text */
} dot_opts;

static void dot_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("dot"));
    printf("Writes the graph in Graphviz DOT: a box per node (op, types, call site),\n"
           "inputs, params, constants, guards and outputs.\n\n"
           "options:\n"
           "  -o OUT        write to OUT instead of standard output\n"
           "  -T png|svg    render through Graphviz's `dot` program (it must be on\n"
           "                PATH: apt-get install graphviz); without -T, an OUT ending\n"
           "                in .png or .svg picks the format, anything else gets DOT text\n\n"
           "example:\n  tracegraph dot model.tgraph -T svg -o model.svg\n"
           "  tracegraph dot model.tgraph | dot -Tpdf -o model.pdf\n");
}

static int dot_opt(void *ctx, int id, const char *arg)
{
    dot_opts *o = ctx;
    if (id == OPT_OUT) {
        o->out = arg;
    } else if (id == OPT_FORMAT) {
        if (strcmp(arg, "png") != 0 && strcmp(arg, "svg") != 0)
            return cli_usage_error("dot", "-T takes png or svg, not '%s'", arg);
        o->format = arg;
    }
    return CLI_OK;
}

/* The full path of prog on $PATH in out; 0 if it is not there. */
static int find_program(const char *prog, char *out, size_t len)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; p;) {
        const char *colon = strchr(p, ':');
        int n = colon ? (int)(colon - p) : (int)strlen(p);
        snprintf(out, len, "%.*s/%s", n ? n : 1, n ? p : ".", prog);
        if (access(out, X_OK) == 0)
            return 1;
        p = colon ? colon + 1 : NULL;
    }
    return 0;
}

/* Pipes the DOT text into `dot -T<format> [-o out]`. */
static int render(const graph *g, const dot_opts *o, const char *dot)
{
    int fd[2];
    if (pipe(fd) != 0) {
        cli_error("dot", "cannot start Graphviz: %s", strerror(errno));
        return CLI_ERROR;
    }
    char tflag[16];
    snprintf(tflag, sizeof tflag, "-T%s", o->format);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[0], 0);
        close(fd[0]);
        close(fd[1]);
        char *args[] = {"dot", tflag, o->out ? "-o" : NULL, (char *)o->out, NULL};
        execv(dot, args);
        _exit(127);
    }
    close(fd[0]);
    FILE *f = pid > 0 ? fdopen(fd[1], "w") : NULL;
    if (!f) {
        close(fd[1]);
        cli_error("dot", "cannot start Graphviz (%s): %s", dot, strerror(errno));
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return CLI_ERROR;
    }
    void (*old)(int) = signal(SIGPIPE, SIG_IGN); /* dot may exit early */
    tg_status st = graph_write_dot(g, f);
    int bad = fclose(f) != 0;
    signal(SIGPIPE, old);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        cli_error("dot", "Graphviz (%s) failed (exit status %d)", dot,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return CLI_ERROR;
    }
    if (st != TG_OK || bad) {
        cli_error("dot", "cannot write to Graphviz: %s", tg_status_str(st ? st : TG_ERR_IO));
        return CLI_ERROR;
    }
    return CLI_OK;
}

/* Plain DOT text to -o or stdout. */
static int write_text(const graph *g, const char *out)
{
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        cli_error("dot", "cannot write %s: %s", out, strerror(errno));
        return CLI_ERROR;
    }
    tg_status st = graph_write_dot(g, f);
    int bad = out ? fclose(f) != 0 : fflush(f) != 0;
    if (st != TG_OK || bad) {
        cli_error("dot", "cannot write %s: %s", out ? out : "the output",
                  tg_status_str(st ? st : TG_ERR_IO));
        return CLI_ERROR;
    }
    return CLI_OK;
}

static const char *format_from_name(const char *out)
{
    size_t n = out ? strlen(out) : 0;
    if (n > 4 && strcmp(out + n - 4, ".png") == 0)
        return "png";
    if (n > 4 && strcmp(out + n - 4, ".svg") == 0)
        return "svg";
    return NULL;
}

int cli_dot(int argc, char **argv)
{
    static const cli_opt opts[] = {{"-o", "--output", 1, OPT_OUT},
                                   {"-T", "--format", 1, OPT_FORMAT},
                                   {0}};
    dot_opts o = {0};
    const char *file;
    int rc = parse_file_cmd(argc, argv, opts, dot_opt, &o, dot_help, &file);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    if (!o.format)
        o.format = format_from_name(o.out);
    char dot[4096];
    if (o.format && !find_program("dot", dot, sizeof dot)) {
        cli_error("dot", "-T %s needs Graphviz, which is not installed (no `dot` on PATH); "
                  "install it with: apt-get install graphviz (or write DOT text without -T "
                  "and render it elsewhere)", o.format);
        return CLI_ERROR;
    }
    if (o.format && strcmp(o.format, "png") == 0 && !o.out && isatty(1)) {
        cli_error("dot", "not writing PNG to a terminal; use -o FILE.png");
        return CLI_USAGE;
    }
    graph *g = cli_load_graph("dot", file);
    if (!g)
        return CLI_ERROR;
    rc = o.format ? render(g, &o, dot) : write_text(g, o.out);
    graph_free(g);
    return rc;
}
