/*
 * load.c - how fast a .tgraph file loads: a matmul chain holding ~50 MB of
 * normally distributed f32 weights (full mantissas, as trained weights
 * have) is saved once (level 3), then loaded several times from a file
 * (warm page cache) and from memory; prints the median time and the
 * throughput in MB of weights per second.  Target: >= 1 GB/s.  Loading
 * uses OpenMP threads (OMP_NUM_THREADS) for the constants.
 *
 *   ./load [MB] [runs]       (defaults: 48 MB, 9 runs)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/tgraph.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Uniform in (0, 1) from a xorshift state. */
static double uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

/* x[8,n] -> (matmul W_i, relu) x layers; each W_i is [n,n] random f32. */
static graph *make_graph(int64_t n, int layers)
{
    graph *g = graph_new("load_bench");
    graph_type tx = {GRAPH_F32, 2, {8, n}}, tw = {GRAPH_F32, 2, {n, n}};
    int32_t h = graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x");
    graph_add_input(g, h);
    float *w = malloc(sizeof(float) * (size_t)(n * n));
    uint64_t s = 0x9E3779B97F4A7C15u;
    for (int l = 0; l < layers; l++) {
        for (int64_t i = 0; i < n * n; i++) /* N(0, 0.05), like trained weights */
            w[i] = (float)(0.05 * sqrt(-2 * log(uniform(&s))) * cos(6.283185307179586 * uniform(&s)));
        char name[32];
        snprintf(name, sizeof name, "w%d", l);
        int32_t v = graph_add_value(g, GRAPH_VALUE_PARAM, &tw, name), m;
        graph_set_data(g, v, w, sizeof(float) * (size_t)(n * n));
        int32_t in[2] = {h, v};
        graph_add_node(g, GRAPH_OP_matmul, in, 2, NULL, &m, 1);
        graph_add_node(g, GRAPH_OP_relu, &m, 1, NULL, &h, 1);
    }
    graph_add_output(g, h, "y");
    free(w);
    return g;
}

int main(int argc, char **argv)
{
    int mb = argc > 1 ? atoi(argv[1]) : 48, runs = argc > 2 ? atoi(argv[2]) : 9;
    if (mb < 1 || runs < 1 || runs > 99)
        return 2;
    int layers = 3;
    int64_t n = 1;
    while ((n + 1) * (n + 1) * 4 * layers <= (int64_t)mb << 20)
        n++;
    graph *g = make_graph(n, layers);
    double bytes = 4.0 * (double)(n * n) * layers;
    char err[512], path[] = "/tmp/tg_bench_load.tgraph";
    double t0 = now();
    if (format_save(g, path, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double tsave = now() - t0;
    format_info info;
    format_info_file(path, &info, err, sizeof err);
    printf("graph: %d matmuls of [%lld,%lld] f32, %.1f MB of weights; file %.1f MB; "
           "save %.0f ms\n", layers, (long long)n, (long long)n, bytes / 1e6,
           (double)info.file_size / 1e6, tsave * 1e3);

    void *buf = NULL;
    size_t len = 0;
    format_save_mem(g, NULL, &buf, &len, err, sizeof err);
    double tf[99], tm[99];
    for (int r = 0; r < runs; r++) {
        t0 = now();
        graph *h = format_load(path, err, sizeof err);
        tf[r] = now() - t0;
        t0 = now();
        graph *h2 = format_load_mem(buf, len, "mem", err, sizeof err);
        tm[r] = now() - t0;
        if (!h || !h2) {
            fprintf(stderr, "load failed: %s\n", err);
            return 1;
        }
        graph_free(h);
        graph_free(h2);
    }
    qsort(tf, (size_t)runs, sizeof *tf, cmp_double);
    qsort(tm, (size_t)runs, sizeof *tm, cmp_double);
    double mf = tf[runs / 2], mm = tm[runs / 2];
    printf("format_load (file):     median %.1f ms = %.2f GB/s (min %.1f ms)\n", mf * 1e3,
           bytes / mf / 1e9, tf[0] * 1e3);
    printf("format_load_mem:        median %.1f ms = %.2f GB/s (min %.1f ms)\n", mm * 1e3,
           bytes / mm / 1e9, tm[0] * 1e3);
    printf("target >= 1 GB/s: %s\n", bytes / mf >= 1e9 ? "met" : "NOT met");
    free(buf);
    remove(path);
    graph_free(g);
    return 0;
}
