/*
 * ocl_nn_case.h - one-node cases of the OpenCL backend's heavy ops, for
 * test_ocl_nn.c (matmul, linear, conv) and test_ocl_pool_reduce.c (pools,
 * norms, reductions, arg): a node with its inputs as graph inputs (or
 * constants), compiled for backend "opencl", run once, compared with a naive
 * reference the test computes.  ocl_nn_case_setup first: it reads the
 * device's GEMM path, which every plan must report.
 */
#ifndef TG_TESTS_OCL_NN_CASE_H
#define TG_TESTS_OCL_NN_CASE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "replay/replay.h"

#define TOL 1e-4
#define MAXIN 5

/* The device's GEMM/conv path is CLBlast (TG_OPENCL_GEMM=clblast, or a
 * GPU's default): every plan must say so, and test_gemm_path's cases take
 * it. */
static int blas_on;       /* CLBlast calls expected: the path is clblast or auto */
static char path_name[8]; /* "clblast", "auto" or "own" */

/* One node's inputs: types, data; bit j of cmask makes input j a constant. */
typedef struct ncase {
    graph_op op;
    const void *attrs;
    int nin;
    graph_type t[MAXIN];
    void *d[MAXIN];
    unsigned cmask;
} ncase;

static inline graph_type ty(graph_dtype dt, int nd, const int64_t *dims)
{
    graph_type t = {dt, nd, {0}};
    for (int i = 0; i < nd; i++)
        t.dim[i] = dims[i];
    return t;
}
#define F32(...) ty(GRAPH_F32, sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__})

/* Random f32 data in [-1, 1] for a type (seeded). */
static inline float *rnd(const graph_type *t, uint64_t seed)
{
    int64_t n = graph_type_numel(t);
    float *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    check_fill(p, n, seed, -1.0f, 1.0f);
    return p;
}

/*
 * Runs c on OpenCL; returns the output (malloc'd, type in *out) or NULL
 * with a failed check.
 */
static inline void *run_ocl(const ncase *c, graph_type *out)
{
    char err[2048];
    graph *g = graph_new("ocl_nn");
    int32_t ids[MAXIN], y = -1;
    int nrun = 0;
    replay_tensor in[MAXIN];
    for (int i = 0; i < c->nin; i++) {
        char name[8];
        snprintf(name, sizeof name, "i%d", i);
        int cst = (c->cmask >> i) & 1;
        ids[i] = graph_add_value(g, cst ? GRAPH_VALUE_CONST : GRAPH_VALUE_INPUT, &c->t[i], name);
        if (cst)
            graph_set_data(g, ids[i], c->d[i],
                           (size_t)graph_type_numel(&c->t[i]) * graph_dtype_size(c->t[i].dtype));
        else {
            graph_add_input(g, ids[i]);
            in[nrun++] = (replay_tensor){.type = c->t[i], .input = c->d[i]};
        }
    }
    int32_t node = graph_add_node(g, c->op, ids, c->nin, c->attrs, &y, 1);
    CHECK_MSG(node >= 0, "graph_add_node(%s): %s", graph_ops[c->op].name, graph_error(g));
    void *res = NULL;
    if (node >= 0 && graph_add_output(g, y, "y") == TG_OK) {
        replay_opts o = {.device = "opencl"};
        replay_plan *p = replay_compile(g, &o, err, sizeof err);
        CHECK_MSG(p != NULL, "compile %s: %s", graph_ops[c->op].name, err);
        if (p)
            CHECK_MSG(!strcmp(replay_plan_property(p, "gemm"), path_name),
                      "plan's GEMM path %s", replay_plan_property(p, "gemm"));
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        if (s) {
            *out = *replay_output_type(p, 0);
            size_t nb = (size_t)graph_type_numel(out) * graph_dtype_size(out->dtype);
            res = calloc(1, nb ? nb : 1);
            replay_tensor ot = {.type = *out, .data = res};
            tg_status st = replay_run(s, in, nrun, &ot, 1);
            CHECK_MSG(st == TG_OK, "run %s: %s", graph_ops[c->op].name, replay_session_error(s));
            if (st != TG_OK) {
                free(res);
                res = NULL;
            }
        }
        replay_session_free(s);
        replay_plan_free(p);
    }
    graph_free(g);
    return res;
}

/* got vs want: NaN exactly where want is NaN, else normalized error. */
static inline void compare(const char *what, const float *got, const float *want, int64_t n, double tol)
{
    int64_t bad_nan = -1;
    float *g = calloc((size_t)(n ? n : 1), sizeof *g), *w = calloc((size_t)(n ? n : 1), sizeof *w);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i]) != isnan(got[i]) && bad_nan < 0)
            bad_nan = i;
        if (!isnan(want[i]) && !isnan(got[i]))
            g[m] = got[i], w[m++] = want[i];
    }
    double e = check_normalized_error(g, w, m);
    CHECK_MSG(bad_nan < 0, "%s: element %lld is %g, want %g", what, (long long)bad_nan,
              bad_nan >= 0 ? got[bad_nan] : 0.0, bad_nan >= 0 ? want[bad_nan] : 0.0);
    CHECK_MSG(e <= tol, "%s: normalized error %.3g > %.3g", what, e, tol);
    free(g);
    free(w);
}

/* Runs c and compares its f32 output with want (n elements). */
static inline void expect(const char *what, const ncase *c, const float *want, int64_t n)
{
    graph_type ot;
    float *got = run_ocl(c, &ot);
    if (got) {
        CHECK_MSG(graph_type_numel(&ot) == n, "%s: %lld outputs, want %lld", what,
                  (long long)graph_type_numel(&ot), (long long)n);
        compare(what, got, want, n, TOL);
    }
    free(got);
}

/* Frees every input buffer (also those made but not used by the node). */
static inline void free_case(ncase *c)
{
    for (int i = 0; i < MAXIN; i++)
        free(c->d[i]);
}

/* The device's GEMM path (in replay_device_info.details) into blas_on / path_name. */
static inline void ocl_nn_case_setup(const replay_device_info *dev)
{
    /* auto times CLBlast against our tile for each matmul/linear at
     * compile (so CLBlast is called whichever wins) and puts conv on it */
    blas_on = strstr(dev->details, "GEMM clblast") || strstr(dev->details, "GEMM auto");
    snprintf(path_name, sizeof path_name, "%s",
             strstr(dev->details, "GEMM clblast") ? "clblast" : blas_on ? "auto" : "own");
    printf("GEMM path: %s\n", path_name);
}

static inline int64_t conv_out(int64_t in, int64_t lo, int64_t hi, int64_t k, int64_t d, int64_t s)
{
    return (in + lo + hi - d * (k - 1) - 1) / s + 1;
}

#endif
