/*
 * cmd_convert.c - `tracegraph convert`: a graph from one file format to
 * another, .tgraph and ONNX (by extension), unchanged otherwise.
 *
 *   tracegraph convert model.tgraph model.onnx [--drop-guards]
 *   tracegraph convert model.onnx model.tgraph [--params] [--dim N]
 */
#include <stdlib.h>

#include "cli.h"

enum { CONV_DROP_GUARDS = 1, CONV_PARAMS, CONV_DIM };

static void convert_help(void)
{
    printf("usage: %s\n\n"
           "Converts a graph between .tgraph and ONNX; the extension of each file\n"
           "(.onnx or anything else for .tgraph) says which.  Nothing is optimized:\n"
           "use tracegraph opt for that (it reads and writes both formats too).\n\n"
           "Export writes ONNX opset %d; every node keeps its call site in its\n"
           "doc_string.  Import reads opsets %d..%d of the default domain.\n\n"
           "options:\n"
           "  --drop-guards  export a graph that has guards, without them (ONNX has no\n"
           "                 guards: its replays will not notice a changed branch)\n"
           "  --params       import initializers as params (swappable with\n"
           "                 replay_set_param), not constants\n"
           "  --dim N        size of ONNX dims given by name (dim_param), marked\n"
           "                 dynamic (default 1)\n\n"
           "example:\n"
           "  tracegraph convert model.tgraph model.onnx\n"
           "  tracegraph convert resnet.onnx resnet.tgraph --dim 8\n",
           cli_synopsis("convert"), FORMAT_ONNX_OPSET, FORMAT_ONNX_MIN_OPSET,
           FORMAT_ONNX_MAX_OPSET);
}

int cli_convert(int argc, char **argv)
{
    static const cli_opt opts[] = {{NULL, "--drop-guards", 0, CONV_DROP_GUARDS},
                                   {NULL, "--params", 0, CONV_PARAMS},
                                   {NULL, "--dim", 1, CONV_DIM},
                                   {0}};
    format_onnx_load_opts lo = {0, 1};
    int drop_guards = 0;
    const char *files[2] = {NULL, NULL};
    int nfiles = 0;
    cli_args a = {argc, argv, 1, 0, "convert"};
    const char *arg;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        long v;
        if (id == CLI_HELP) {
            convert_help();
            return CLI_OK;
        }
        if (id == CLI_BAD)
            return CLI_USAGE;
        if (id == CLI_POS) {
            if (nfiles == 2)
                return cli_usage_error("convert", "unexpected argument '%s'", arg);
            files[nfiles++] = arg;
        } else if (id == CONV_DROP_GUARDS) {
            drop_guards = 1;
        } else if (id == CONV_PARAMS) {
            lo.params = 1;
        } else if (id == CONV_DIM) {
            if (cli_int("convert", "--dim", arg, 1, 1L << 30, &v) != 0)
                return CLI_USAGE;
            lo.dim_default = v;
        }
    }
    if (nfiles != 2)
        return cli_usage_error("convert", "needs an input and an output file");
    graph *g = cli_load_graph_onnx("convert", files[0], &lo);
    if (!g)
        return CLI_ERROR;
    int saved = cli_save_graph("convert", g, files[1], drop_guards);
    if (saved == 0)
        printf("%s -> %s: %d nodes, %d inputs, %d outputs\n", files[0], files[1],
               graph_live_nodes(g), graph_input_count(g), graph_output_count(g));
    graph_free(g);
    return saved == 0 ? CLI_OK : CLI_ERROR;
}
