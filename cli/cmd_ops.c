/*
 * cmd_ops.c - `tracegraph ops`: the ops a graph may hold (the registry,
 * graph/ops.def) or, with --onnx, the ONNX ops the importer reads (its
 * converter table, through format_onnx_op).  --markdown prints the table
 * docs/ONNX.md carries (tests/check_docs_ops.sh keeps the two equal).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_ONNX = 1, OPT_MARKDOWN };

static int by_name(const void *a, const void *b)
{
    return strcmp(((const format_onnx_op_info *)a)->name,
                  ((const format_onnx_op_info *)b)->name);
}

/* "1", "1-3", "2 or more". */
static const char *arity(char *buf, size_t len, int lo, int hi)
{
    if (hi < 0)
        snprintf(buf, len, "%d or more", lo);
    else if (lo == hi)
        snprintf(buf, len, "%d", lo);
    else
        snprintf(buf, len, "%d-%d", lo, hi);
    return buf;
}

/* The attribute list with ", " between names; "-" for none. */
static void print_attrs(const char *attrs)
{
    if (!attrs || !*attrs) {
        fputs("-", stdout);
        return;
    }
    for (const char *p = attrs; *p; p++)
        if (*p == ',')
            fputs(", ", stdout);
        else
            putchar(*p);
}

static int list_onnx(int markdown)
{
    int n = 0;
    format_onnx_op_info info;
    while (format_onnx_op(n, &info))
        n++;
    format_onnx_op_info *ops = cli_malloc((size_t)(n ? n : 1) * sizeof *ops);
    if (!ops) {
        cli_error("ops", "out of memory");
        return CLI_ERROR;
    }
    for (int i = 0; i < n; i++)
        format_onnx_op(i, &ops[i]);
    qsort(ops, (size_t)n, sizeof *ops, by_name);
    char in[32];
    if (markdown)
        printf("| ONNX op | inputs | outputs | attributes read | note |\n"
               "|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const format_onnx_op_info *o = &ops[i];
        arity(in, sizeof in, o->min_inputs, o->max_inputs);
        if (markdown) {
            printf("| %s | %s | %d | ", o->name, in, o->max_outputs);
            print_attrs(o->attributes);
            printf(" | %s |\n", o->load_time_only ? "load time only" : "");
        } else {
            printf("%-22s inputs %-10s outputs %-3d attributes: ", o->name, in, o->max_outputs);
            print_attrs(o->attributes);
            printf("%s\n", o->load_time_only ? "  (load time only)" : "");
        }
    }
    if (!markdown)
        printf("\n%d ONNX ops of the default domain, opsets %d-%d; an attribute not listed is\n"
               "refused. docs/ONNX.md says what of each is read.\n",
               n, FORMAT_ONNX_MIN_OPSET, FORMAT_ONNX_MAX_OPSET);
    cli_free(ops);
    return CLI_OK;
}

static int list_graph(int markdown)
{
    char in[32];
    if (markdown)
        printf("| op | inputs | outputs | attributes |\n|---|---|---|---|\n");
    for (int op = 0; op < GRAPH_OP_COUNT; op++) {
        const graph_op_info *o = &graph_ops[op];
        arity(in, sizeof in, o->min_in, o->max_in);
        char out[16];
        if (o->nout < 0)
            snprintf(out, sizeof out, "varies");
        else
            snprintf(out, sizeof out, "%d", o->nout);
        if (markdown)
            printf("| %s | %s | %s | ", o->name, in, out);
        else
            printf("%-20s inputs %-10s outputs %-7s attributes: ", o->name, in, out);
        const graph_attr_desc *d = o->attr_descs ? o->attr_descs() : NULL;
        if (!d || o->nattrs == 0)
            fputs("-", stdout);
        for (int k = 0; d && k < o->nattrs; k++)
            printf("%s%s", k ? ", " : "", d[k].name);
        printf("%s\n", markdown ? " |" : "");
    }
    if (!markdown)
        printf("\n%d ops (graph/ops.def); `tracegraph ops --onnx` lists the ONNX ops read.\n",
               (int)GRAPH_OP_COUNT);
    return CLI_OK;
}

int cli_ops(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {NULL, "--onnx", 0, OPT_ONNX},
        {NULL, "--markdown", 0, OPT_MARKDOWN},
        {0},
    };
    cli_args a = {argc, argv, 1, 0, "ops"};
    const char *arg;
    int onnx = 0, markdown = 0;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
            printf("usage: %s\n\n", cli_synopsis("ops"));
            printf("Lists the ops a graph may hold (graph/ops.def): each one's inputs, outputs\n"
                   "and attributes. With --onnx, lists instead the ONNX ops of the default\n"
                   "domain that `convert` and every command reading a .onnx file import:\n"
                   "the inputs and outputs a node may have, the attributes read (any other\n"
                   "is refused), and which are evaluated at load time only (on constants).\n"
                   "The list is the importer's own table. --markdown prints a Markdown\n"
                   "table (docs/ONNX.md holds the --onnx one).\n\n"
                   "example:\n  tracegraph ops --onnx | grep Conv\n");
            return CLI_OK;
        case OPT_ONNX:
            onnx = 1;
            break;
        case OPT_MARKDOWN:
            markdown = 1;
            break;
        case CLI_POS:
            return cli_usage_error("ops", "unexpected argument '%s'", arg);
        default:
            return CLI_USAGE;
        }
    }
    return onnx ? list_onnx(markdown) : list_graph(markdown);
}
