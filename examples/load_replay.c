/*
 * load_replay.c - step 2 of the demo, in a fresh process: load the saved
 * graph, compile a replay plan, run it on a seeded batch (timed), check it
 * against the reference interpreter, and compare with step 1's eager time.
 * The ONNX export step 1 wrote beside it comes back too, imported and
 * optimized.  When the machine has an OpenCL device (PoCL here), the
 * optimized graph is also replayed there: the same file, another backend.
 *
 *   example_load_replay [model.tgraph]
 */
#include <stdio.h>
#include <string.h>

#include "eager/interp.h"
#include "example_util.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracegraph.h"

/* A .tgraph, or an ONNX model (by its name) imported and optimized at
 * -O3 as `tracegraph opt -O3` would; NULL after a message. */
static graph *load_graph(const char *path)
{
    char err[1024];
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".onnx") != 0) {
        graph *g = format_load(path, err, sizeof err);
        if (!g)
            fprintf(stderr, "load_replay: %s\n", err);
        return g;
    }
    graph *g = format_onnx_load(path, NULL, err, sizeof err);
    opt_options o = opt_default_options();
    o.level = 3;
    if (!g || opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "load_replay: %s\n", err);
        graph_free(g);
        return NULL;
    }
    return g;
}

/* The graph's signature, read through graph.h's accessors: "x f32[B,784]"
 * with a dynamic dim shown by its symbol's name. */
static void print_signature(const char *path, const graph *g)
{
    printf("%s: %d nodes (%d live); inputs", path, (int)graph_node_count(g),
           (int)graph_live_nodes(g));
    for (int32_t k = 0; k < graph_input_count(g) + graph_output_count(g); k++) {
        int in = k < graph_input_count(g);
        const char *name = NULL;
        int32_t v = in ? graph_input_at(g, k) : graph_output_at(g, k - graph_input_count(g), &name);
        const graph_type *t = graph_value_type(g, v);
        if (in)
            name = graph_value_name(g, v);
        printf("%s %s %s[", k == graph_input_count(g) ? "; outputs" : k ? "," : "", name,
               graph_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) {
            int sym = graph_value_dim_symbol(g, v, d);
            if (sym >= 0)
                printf("%s%s", d ? "," : "", graph_symbol_at(g, sym, NULL));
            else
                printf("%s%lld", d ? "," : "", (long long)t->dim[d]);
        }
        printf("]");
    }
    printf("\n");
}

/* Loads path, replays it on x (timed) and on a batch of 8; compares with
 * the reference interpreter on the unoptimized graph ref.  0 on success. */
static int replay_file(const char *path, const replay_opts *opts, const graph *ref,
                       eager_tensor *x, double *ms, double *maxdiff)
{
    char err[1024];
    double t0 = example_now_ms();
    graph *g = load_graph(path);
    double load_ms = example_now_ms() - t0;
    if (!g)
        return 1;
    replay_plan *p = replay_compile(g, opts, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (!s) {
        fprintf(stderr, "load_replay: %s\n", p ? "out of memory" : err);
        return 1;
    }
    printf("%s: loaded in %.2f ms, %d steps, arena %zu bytes, on %s\n", path, load_ms,
           replay_num_steps(p), replay_workspace_size(p), replay_plan_property(p, "device"));
    replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)};
    replay_tensor out = {.name = NULL}; /* data NULL: the session's own buffer */
    double t[100];
    for (int r = 0; r < 100; r++) {
        t0 = example_now_ms();
        if (replay_run(s, &in, 1, &out, 1) != TG_OK) {
            fprintf(stderr, "load_replay: %s\n", replay_session_error(s));
            return 1;
        }
        t[r] = example_now_ms() - t0;
    }
    *ms = example_median(t, 100);
    /* The same batch through the reference interpreter on the original. */
    eager_tensor *want[1] = {NULL};
    *maxdiff = -1;
    if (eager_interpret(ref, &x, 1, want, 1, NULL) == TG_OK) {
        const float *a = out.data, *b = eager_peek(want[0]);
        *maxdiff = 0;
        for (int64_t i = 0; i < eager_numel(want[0]); i++) {
            double d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
            *maxdiff = d > *maxdiff ? d : *maxdiff;
        }
    }
    /* A batch of 8: the dynamic dim at work, planned on first use. */
    eager_tensor *x8 = eager_rand_uniform(TG_SHAPE(8, 784), 2, 0.0f, 1.0f);
    replay_tensor in8 = {.name = "x", .type = *eager_type(x8), .input = eager_peek(x8)};
    replay_tensor out8 = {.name = NULL};
    int ok8 = replay_run(s, &in8, 1, &out8, 1) == TG_OK;
    printf("  batch 8 on the same plan: %s\n", ok8 ? "ok" : replay_session_error(s));
    eager_release(want[0]);
    eager_release(x8);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    return ok8 && *maxdiff >= 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "model.tgraph";
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: example_load_replay [model.tgraph]\n");
        return 2;
    }
    char err[1024], opt_path[1024], onnx_path[1024];
    int stem = (int)(strlen(path) > 7 && !strcmp(path + strlen(path) - 7, ".tgraph")
                         ? strlen(path) - 7 : strlen(path));
    snprintf(opt_path, sizeof opt_path, "%.*s.opt.tgraph", stem, path);
    snprintf(onnx_path, sizeof onnx_path, "%.*s.onnx", stem, path);
    graph *ref = format_load(path, err, sizeof err);
    if (!ref) {
        fprintf(stderr, "load_replay: %s\n", err);
        return 1;
    }
    print_signature(path, ref);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(64, 784), 1, 0.0f, 1.0f);
    double ms0, ms3, msx, d0, d3, dx;
    int rc = replay_file(path, NULL, ref, x, &ms0, &d0) |
             replay_file(opt_path, NULL, ref, x, &ms3, &d3) |
             replay_file(onnx_path, NULL, ref, x, &msx, &dx);
    /* The optimized file again, on the first OpenCL device if there is one. */
    replay_device_info dev;
    double msc = 0, dc = 0;
    int ocl = replay_backend_find("opencl:0", &dev, err, sizeof err) == TG_OK;
    if (ocl) {
        replay_opts o = {.threads = 1, .device = "opencl:0"};
        rc |= replay_file(opt_path, &o, ref, x, &msc, &dc);
    } else {
        printf("(no OpenCL replay: %s)\n", err);
    }
    if (rc == 0) {
        printf("replay -O0 vs reference interpreter: max abs difference %g (same kernels)\n", d0);
        printf("replay -O3 vs reference interpreter: max abs difference %g (fused kernels)\n", d3);
        printf("the ONNX export, imported and optimized -O3: replay %.3f ms, max abs difference "
               "%g\n", msx, dx);
        char side[1024];
        snprintf(side, sizeof side, "%s.eager_ms", path);
        FILE *f = fopen(side, "r");
        double eager_ms = 0;
        if (f && fscanf(f, "%lf", &eager_ms) == 1)
            printf("\neager %.3f ms | replay -O0 %.3f ms (%.2fx) | replay -O3 %.3f ms (%.2fx)"
                   "  [batch 64, 1 thread, medians]\n", eager_ms, ms0, eager_ms / ms0, ms3,
                   eager_ms / ms3);
        if (f)
            fclose(f);
        if (ocl)
            printf("OpenCL replay -O3 on %s: %.3f ms, max abs difference %g vs the "
                   "reference interpreter\n", dev.device, msc, dc);
    }
    eager_release(x);
    graph_free(ref);
    return rc || d0 != 0 || d3 > 1e-3 || dx > 1e-3 || dc > 1e-3 ? 1 : 0;
}
