/*
 * trace_save.c - step 1 of the demo: build a model with the eager API, run
 * it eagerly (timed), trace it with a dynamic batch, and save the graph.
 *
 *   example_trace_save [model.tgraph]
 *
 * The model is the benchmark MLP: x[64,784] -> linear 512 -> relu ->
 * linear 512 -> relu -> linear 10.  Its weights are params, so a replay can
 * swap them.  The eager median time is written next to the file
 * (model.tgraph.eager_ms) for step 2 to compare against.
 */
#include <stdio.h>
#include <string.h>

#include "example_util.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "tracegraph.h"
#include "tracer/trace.h"

static eager_tensor *mlp(eager_tensor *x, eager_tensor *const *w)
{
    eager_tensor *h = eager_relu(eager_linear(x, w[0], w[1]));
    h = eager_relu(eager_linear(h, w[2], w[3]));
    return eager_linear(h, w[4], w[5]);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "model.tgraph";
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: example_trace_save [model.tgraph]\n");
        return 2;
    }
    static const int64_t dims[4] = {784, 512, 512, 10};
    eager_tensor *w[6];
    for (int l = 0; l < 3; l++) {
        w[2 * l] = eager_rand_normal(TG_SHAPE(dims[l + 1], dims[l]), 10 + (uint64_t)l, 0.0f, 0.05f);
        w[2 * l + 1] = eager_rand_normal(TG_SHAPE(dims[l + 1]), 20 + (uint64_t)l, 0.0f, 0.01f);
    }
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(64, 784), 1, 0.0f, 1.0f);

    double t[30];
    for (int r = 0; r < 30; r++) {
        eager_pool_push();
        double t0 = example_now_ms();
        eager_tensor *y = mlp(x, w);
        t[r] = example_now_ms() - t0;
        eager_pool_pop();
        if (!y) {
            fprintf(stderr, "trace_save: %s\n", eager_error());
            return 1;
        }
    }
    double eager_ms = example_median(t, 30);

    eager_pool_push();
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "batch");
    static const char *names[6] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                   "fc3.weight", "fc3.bias"};
    for (int i = 0; i < 6; i++)
        trace_param(w[i], names[i]);
    trace_output(mlp(x, w), "logits");
    graph *g = trace_freeze();
    eager_pool_pop();
    if (!g) {
        fprintf(stderr, "trace_save: %s\n", eager_error());
        return 1;
    }
    trace_summary(g, stdout);
    char err[512];
    if (format_save(g, path, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "trace_save: %s\n", err);
        return 1;
    }
    /* The same graph as ONNX, for other engines, and the optimized graph,
     * saved beside it. */
    int stem = (int)(strlen(path) > 7 && !strcmp(path + strlen(path) - 7, ".tgraph")
                         ? strlen(path) - 7 : strlen(path));
    char onnx_path[1024], opt_path[1024];
    snprintf(onnx_path, sizeof onnx_path, "%.*s.onnx", stem, path);
    if (format_onnx_save(g, onnx_path, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "trace_save: %s\n", err);
        return 1;
    }
    printf("exported %s (ONNX opset %d, for ONNX Runtime and other engines)\n", onnx_path,
           FORMAT_ONNX_OPSET);
    snprintf(opt_path, sizeof opt_path, "%.*s.opt.tgraph", stem, path);
    graph *o = graph_clone(g);
    opt_options oo = OPT_OPTIONS_INIT;
    oo.level = 3;
    opt_report rep;
    if (!o || opt_optimize(o, &oo, &rep, err, sizeof err) != TG_OK ||
        format_save(o, opt_path, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "trace_save: optimize: %s\n", err);
        return 1;
    }
    printf("optimized -O3: %d nodes -> %d; saved %s\n", rep.nodes_before, rep.nodes_after,
           opt_path);
    graph_print_opts po = GRAPH_PRINT_OPTS_INIT;
    po.provenance = 0;
    graph_print(o, stdout, &po);
    graph_free(o);

    char side[1024];
    snprintf(side, sizeof side, "%s.eager_ms", path);
    FILE *f = fopen(side, "w");
    if (f) {
        fprintf(f, "%.6f\n", eager_ms);
        fclose(f);
    }
    printf("eager: median of 30 runs %.3f ms (batch 64, 1 thread)\n", eager_ms);
    printf("saved %s\n", path);
    graph_free(g);
    eager_release(x);
    for (int i = 0; i < 6; i++)
        eager_release(w[i]);
    return 0;
}
