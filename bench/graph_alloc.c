/*
 * graph_alloc.c - what a graph's storage costs: making a small graph and
 * freeing it, and cloning one (what replay_compile does first).
 *
 * A graph of N nodes (a relu/neg chain with one provenance entry per node,
 * an input and an output, as the tracer makes them) is built and freed,
 * then cloned and the clone freed while the original lives.  The first of
 * each is timed alone: in a fresh process it is the one that finds no
 * released storage to reuse (bench/suite's compile times are such first
 * calls); then the median of R repetitions, the steady state of a program
 * that makes graphs in a loop.  Run it several times (a fresh process
 * each) to get a median of the first calls.
 *
 *   graph_alloc [--nodes N] [--reps R]
 *
 * One line: "nodes N first-build us first-clone us build us clone us".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "graph/graph.h"

static double now_us(void) { return bench_now_ns() / 1e3; }

/* A chain of n nodes; NULL on failure (reported). */
static graph *build(int n)
{
    graph *g = graph_new("alloc");
    if (!g)
        return NULL;
    graph_type t = {GRAPH_F32, 2, {4, 8}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x");
    if (x < 0 || graph_add_input(g, x) != TG_OK)
        goto fail;
    for (int i = 0; i < n; i++) {
        int32_t p = graph_add_prov(g, "model.c", 10 + i, "forward", NULL, 0), y = -1;
        if (p < 0 || graph_add_node_typed(g, i % 2 ? GRAPH_OP_neg : GRAPH_OP_relu, &x, 1, NULL,
                                          &t, 1, &y, 1, p) < 0)
            goto fail;
        x = y;
    }
    if (graph_add_output(g, x, "y") != TG_OK)
        goto fail;
    return g;
fail:
    fprintf(stderr, "graph_alloc: %s\n", graph_error(g));
    graph_free(g);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = 50, reps = 201;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
    }
    if (n < 1 || reps < 1 || reps > 100000) {
        fprintf(stderr, "usage: graph_alloc [--nodes N] [--reps R]\n");
        return 2;
    }
    double t0 = now_us();
    graph *g = build(n);
    int ok = g != NULL;
    graph_free(g);
    double first_build = now_us() - t0;
    graph *orig = build(n);
    if (!ok || !orig)
        return 1;
    t0 = now_us();
    graph *c = graph_clone(orig);
    ok = c != NULL;
    graph_free(c);
    double first_clone = now_us() - t0;
    if (!ok)
        return 1;
    double *tb = malloc(sizeof *tb * (size_t)reps), *tc = malloc(sizeof *tc * (size_t)reps);
    if (!tb || !tc)
        return 1;
    for (int r = 0; r < reps; r++) {
        t0 = now_us();
        g = build(n);
        ok = g != NULL;
        graph_free(g);
        tb[r] = now_us() - t0;
        t0 = now_us();
        c = graph_clone(orig);
        ok = ok && c != NULL;
        graph_free(c);
        tc[r] = now_us() - t0;
        if (!ok)
            return 1;
    }
    printf("nodes %d first-build %.2f us first-clone %.2f us build %.2f us clone %.2f us\n", n,
           first_build, first_clone, bench_median(tb, reps), bench_median(tc, reps));
    graph_free(orig);
    free(tb);
    free(tc);
    return 0;
}
