/*
 * test_ocl_attn.c - attention as one kernel on replay-OpenCL
 * (replay/opencl/ops_attn.c, cl/nn_attn.cl): the chain
 * matmul(q, k, transpose_b) -> [div | mul by a scalar constant] ->
 * softmax(last axis) -> matmul(., v) against naive loops written here,
 * at sequence lengths 1, 7, 64, 130 (partial blocks and tiles), head
 * dims 8, 32, 64, 80, batch x heads 1..8 (one or two batch dims), with
 * and without the scale; a dynamic sequence length run at other sizes
 * than traced; and the chains that must run unfused (an intermediate
 * with a second consumer, softmax over another axis, an intermediate
 * that is a graph output, TG_OPENCL_ATTN=off) still correct.  The test
 * sets TG_OPENCL_ATTN=fused: the default (auto) fuses on GPUs only.  Each plan's
 * nodes are checked for being fused or not (the backend's plan).
 * Tolerance: normalized error <= 1e-4.  `test_ocl_attn small` runs one
 * small case only (for oclgrind --data-races).  Without an OpenCL platform the
 * test prints "SKIP: no OpenCL platform" and exits 77.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "replay/internal.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"

#define TOL 1e-4

enum { SC_NONE, SC_DIV, SC_MUL, SC_MUL_FIRST };
/* What else reads the chain: nothing, the scores are also an output,
 * the probabilities are also an output, the scaled scores feed a second
 * node (relu, an output), the softmax is over axis -2. */
enum { X_NONE, X_OUT_S, X_OUT_P, X_SECOND_USE, X_AXIS };

typedef struct acase {
    int nb;          /* batch dims: 1 ([BH]) or 2 ([B, H]) */
    int64_t b, h;    /* BH = b * h */
    int64_t m, n, d, dv;
    int scale;       /* SC_* */
    int extra;       /* X_* */
    int dyn;         /* the sequence length (M = N) is dynamic: run at m2 */
    int64_t m2;
} acase;

/* The reference: out [BH, M, DV] of q [BH, M, D], k [BH, N, D], v [BH, N, DV]. */
static void attn_ref(const float *q, const float *k, const float *v, int64_t bh, int64_t m,
                     int64_t n, int64_t d, int64_t dv, int scale, float c, int axis2,
                     float *out)
{
    double *s = malloc(sizeof *s * (size_t)(m * n + 1));
    for (int64_t b = 0; b < bh; b++) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t t = 0; t < d; t++)
                    acc += (double)q[(b * m + i) * d + t] * k[(b * n + j) * d + t];
                s[i * n + j] = scale == SC_DIV ? acc / c : scale != SC_NONE ? acc * c : acc;
            }
        /* softmax over j (last axis) or over i (axis -2) */
        int64_t rows = axis2 ? n : m, len = axis2 ? m : n;
        for (int64_t r = 0; r < rows; r++) {
#define S(x) s[axis2 ? (x) * n + r : r * n + (x)]
            double mx = -INFINITY, sum = 0;
            for (int64_t x = 0; x < len; x++)
                mx = S(x) > mx ? S(x) : mx;
            for (int64_t x = 0; x < len; x++)
                sum += exp(S(x) - mx);
            for (int64_t x = 0; x < len; x++)
                S(x) = exp(S(x) - mx) / sum;
#undef S
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t c2 = 0; c2 < dv; c2++) {
                double acc = 0;
                for (int64_t j = 0; j < n; j++)
                    acc += s[i * n + j] * v[(b * n + j) * dv + c2];
                out[(b * m + i) * dv + c2] = (float)acc;
            }
    }
    free(s);
}

static graph_type shape(const acase *c, int64_t rows, int64_t cols)
{
    graph_type t = {GRAPH_F32, c->nb + 2, {0}};
    if (c->nb == 2)
        t.dim[0] = c->b, t.dim[1] = c->h;
    else
        t.dim[0] = c->b * c->h;
    t.dim[c->nb] = rows;
    t.dim[c->nb + 1] = cols;
    return t;
}

static void compare(const char *what, const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (isnan(got[i]) || isinf(got[i])) {
            CHECK_MSG(0, "%s: element %lld is %g", what, (long long)i, got[i]);
            return;
        }
    double e = check_normalized_error(got, want, n);
    CHECK_MSG(e <= TOL, "%s: normalized error %.3g > %.3g", what, e, TOL);
}

/* Fused chains and absorbed nodes in p's OpenCL plan. */
static void count_roles(const replay_plan *p, int *fused, int *absorbed)
{
    const ocl_plan *op = p->bplan;
    *fused = *absorbed = 0;
    for (int32_t i = 0; i < op->nnodes; i++) {
        *fused += op->nodes[i].op == &ocl_attn_op;
        *absorbed += op->nodes[i].absorbed;
    }
}

/* Builds, compiles and runs case c; want_fused: the chain must run as one
 * kernel (else unfused). */
static void run_case(const acase *c, int want_fused)
{
    char what[200], err[2048];
    snprintf(what, sizeof what, "attn nb=%d bh=%lldx%lld m=%lld n=%lld d=%lld dv=%lld scale=%d "
             "extra=%d dyn=%d", c->nb, (long long)c->b, (long long)c->h, (long long)c->m,
             (long long)c->n, (long long)c->d, (long long)c->dv, c->scale, c->extra, c->dyn);
    graph *g = graph_new("ocl_attn");
    graph_type tq = shape(c, c->m, c->d), tk = shape(c, c->n, c->d), tv = shape(c, c->n, c->dv);
    int32_t q = graph_add_value(g, GRAPH_VALUE_INPUT, &tq, "q");
    int32_t k = graph_add_value(g, GRAPH_VALUE_INPUT, &tk, "k");
    int32_t v = graph_add_value(g, GRAPH_VALUE_INPUT, &tv, "v");
    graph_add_input(g, q);
    graph_add_input(g, k);
    graph_add_input(g, v);
    int32_t sym = c->dyn ? graph_add_symbol(g, "T", c->m) : -1;
    if (c->dyn) {
        int32_t ids[3] = {q, k, v};
        for (int i = 0; i < 3; i++) {
            g->values[ids[i]].dyn = 1u << c->nb;
            g->values[ids[i]].sym[c->nb] = (int8_t)sym;
        }
    }
    graph_matmul_attrs tb = {0, 1};
    int32_t in[2] = {q, k}, s, t, p, o, r;
    graph_add_node(g, GRAPH_OP_matmul, in, 2, &tb, &s, 1);
    float cval = c->scale == SC_DIV ? 8.0f : 0.125f;
    t = s;
    if (c->scale != SC_NONE) {
        graph_type tc = {GRAPH_F32, 0, {0}};
        int32_t cst = graph_add_value(g, GRAPH_VALUE_CONST, &tc, "c");
        graph_set_data(g, cst, &cval, sizeof cval);
        int32_t si[2] = {s, cst};
        if (c->scale == SC_MUL_FIRST)
            si[0] = cst, si[1] = s;
        graph_add_node(g, c->scale == SC_DIV ? GRAPH_OP_div : GRAPH_OP_mul, si, 2, NULL, &t, 1);
    }
    graph_softmax_attrs sa = {c->extra == X_AXIS ? -2 : -1};
    graph_add_node(g, GRAPH_OP_softmax, &t, 1, &sa, &p, 1);
    in[0] = p, in[1] = v;
    int32_t node = graph_add_node(g, GRAPH_OP_matmul, in, 2, NULL, &o, 1);
    CHECK_MSG(node >= 0, "%s: graph: %s", what, graph_error(g));
    graph_add_output(g, o, "o");
    if (c->extra == X_OUT_S)
        graph_add_output(g, s, "s");
    if (c->extra == X_OUT_P)
        graph_add_output(g, p, "p");
    if (c->extra == X_SECOND_USE) {
        graph_add_node(g, GRAPH_OP_relu, &t, 1, NULL, &r, 1);
        graph_add_output(g, r, "r");
    }
    if (c->dyn)
        CHECK(graph_propagate_dynamic(g) == TG_OK);
    replay_opts opts = {.backend = REPLAY_OPENCL};
    replay_plan *pl = node >= 0 ? replay_compile(g, &opts, err, sizeof err) : NULL;
    CHECK_MSG(pl != NULL, "%s: compile: %s", what, err);
    if (pl) {
        int fused, absorbed;
        count_roles(pl, &fused, &absorbed);
        CHECK_MSG(fused == want_fused && absorbed == want_fused * (c->scale ? 3 : 2),
                  "%s: %d fused, %d absorbed nodes, want %s", what, fused, absorbed,
                  want_fused ? "the chain fused" : "none");
    }
    replay_session *se = pl ? replay_session_new(pl, NULL, 0) : NULL;
    /* the run's sizes: the traced ones, or the dynamic length at m2 */
    int runs = c->dyn ? 2 : 1;
    for (int rix = 0; se && rix < runs; rix++) {
        acase rc = *c;
        if (rix == 1)
            rc.m = rc.n = c->m2;
        graph_type rq = shape(&rc, rc.m, rc.d), rk = shape(&rc, rc.n, rc.d),
                   rv = shape(&rc, rc.n, rc.dv);
        int64_t bh = rc.b * rc.h;
        float *dq = malloc(sizeof *dq * (size_t)(graph_type_numel(&rq) + 1));
        float *dk = malloc(sizeof *dk * (size_t)(graph_type_numel(&rk) + 1));
        float *dv = malloc(sizeof *dv * (size_t)(graph_type_numel(&rv) + 1));
        /* wide enough that the softmax is far from uniform */
        check_fill(dq, graph_type_numel(&rq), 11 + (uint64_t)rix, -2.0f, 2.0f);
        check_fill(dk, graph_type_numel(&rk), 12 + (uint64_t)rix, -2.0f, 2.0f);
        check_fill(dv, graph_type_numel(&rv), 13 + (uint64_t)rix, -1.0f, 1.0f);
        int64_t no = bh * rc.m * rc.dv;
        float *want = malloc(sizeof *want * (size_t)(no + 1));
        float *got = calloc((size_t)no + 1, sizeof *got);
        attn_ref(dq, dk, dv, bh, rc.m, rc.n, rc.d, rc.dv, c->scale, cval, c->extra == X_AXIS,
                 want);
        replay_tensor ri[3] = {{NULL, rq, dq, NULL}, {NULL, rk, dk, NULL}, {NULL, rv, dv, NULL}};
        replay_tensor ot = {"o", shape(&rc, rc.m, rc.dv), got, NULL};
        tg_status st = replay_run(se, ri, 3, &ot, 1);
        CHECK_MSG(st == TG_OK, "%s: run: %s", what, replay_session_error(se));
        if (st == TG_OK)
            compare(what, got, want, no);
        free(dq), free(dk), free(dv), free(want), free(got);
    }
    replay_session_free(se);
    replay_plan_free(pl);
    graph_free(g);
}

static void test_sizes(void)
{
    static const int64_t seqs[] = {1, 7, 64, 130}, dims[] = {8, 32, 64, 80};
    int i = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++, i++) {
            /* batch x heads 1..8, scale none / div / mul / mul by a
             * leading constant, in turn */
            int64_t bh = 1 + i % 8;
            acase c = {1 + i % 2, i % 2 ? 1 + (bh > 1) : bh, i % 2 ? (bh + 1) / 2 : 1,
                       seqs[a], seqs[(a + b) % 4], dims[b], dims[(b + a) % 4], i % 4,
                       X_NONE, 0, 0};
            run_case(&c, 1);
        }
    /* every scale at one size, and q·kT with the rows of q fewer than of k */
    for (int sc = 0; sc < 4; sc++) {
        acase c = {2, 2, 4, 130, 64, 64, 64, sc, X_NONE, 0, 0};
        run_case(&c, 1);
    }
}

static void test_dynamic(void)
{
    /* traced at 7, run at 7 and at 130 (more blocks and tiles than traced) */
    acase c = {2, 1, 4, 7, 7, 64, 64, SC_DIV, X_NONE, 1, 130};
    run_case(&c, 1);
    acase c2 = {1, 3, 1, 64, 64, 32, 32, SC_MUL, X_NONE, 1, 1};
    run_case(&c2, 1);
}

static void test_not_fused(void)
{
    for (int x = X_OUT_S; x <= X_AXIS; x++) {
        acase c = {2, 1, 4, 64, 64, 64, 64, SC_DIV, x, 0, 0};
        run_case(&c, 0);
    }
    setenv("TG_OPENCL_ATTN", "off", 1);
    acase c = {2, 1, 4, 64, 64, 64, 64, SC_DIV, X_NONE, 0, 0};
    run_case(&c, 0);
    /* a bad mode is refused with its name */
    setenv("TG_OPENCL_ATTN", "maybe", 1);
    graph *g = graph_new("bad_mode");
    graph_type t = {GRAPH_F32, 1, {4}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), y;
    graph_add_input(g, x);
    graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1);
    graph_add_output(g, y, "y");
    char err[2048] = "";
    replay_opts opts = {.backend = REPLAY_OPENCL};
    replay_plan *p = replay_compile(g, &opts, err, sizeof err);
    CHECK_MSG(!p && strstr(err, "TG_OPENCL_ATTN=\"maybe\""), "bad TG_OPENCL_ATTN: %s", err);
    replay_plan_free(p);
    graph_free(g);
    setenv("TG_OPENCL_ATTN", "fused", 1);
}

int main(int argc, char **argv)
{
    replay_device dev;
    if (!check_opencl_device(&dev))
        return CHECK_SKIP;
    /* the default fuses on GPUs only; PoCL is a CPU */
    setenv("TG_OPENCL_ATTN", "fused", 1);
    if (argc > 1 && !strcmp(argv[1], "small")) {
        /* for oclgrind --data-races: two partial key tiles, a partial
         * row block, two batch-heads */
        acase c = {1, 2, 1, 7, 40, 8, 12, SC_DIV, X_NONE, 0, 0};
        run_case(&c, 1);
        replay_opencl_shutdown();
        return check_done();
    }
    test_sizes();
    test_dynamic();
    test_not_fused();
    replay_opencl_shutdown();
    return check_done();
}
