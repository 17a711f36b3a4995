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
 * The layout around it (test_layout): graphs shaped as the encoder's,
 * x -> linear -> split -> reshape, transpose (x3) -> the chain ->
 * transpose -> reshape -> neg, with a second linear alive across the
 * chain (the memory the absorbed layout must not share), at sequence
 * lengths 7 and 130, heads 1 and 3, head dims 8 and 80; each node checked
 * absorbed or not: all of them; a permutation that puts the heads first
 * (still views); a q transpose or a k split output with a second
 * consumer, a graph output inside the output's views, the output's last
 * view a graph output, a reshape that is no view of the split (each
 * absorbing what it still can).
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
#include "graph/graph_impl.h"
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
    replay_opts opts = {.device = "opencl"};
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
        replay_tensor ri[3] = {
            {.type = rq, .input = dq}, {.type = rk, .input = dk}, {.type = rv, .input = dv}};
        replay_tensor ot = {.name = "o", .type = shape(&rc, rc.m, rc.dv), .data = got};
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
    replay_opts opts = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &opts, err, sizeof err);
    CHECK_MSG(!p && strstr(err, "TG_OPENCL_ATTN=\"maybe\""), "bad TG_OPENCL_ATTN: %s", err);
    replay_plan_free(p);
    graph_free(g);
    setenv("TG_OPENCL_ATTN", "fused", 1);
}

/* ---- the layout around the chain ---- */

/* What differs from the encoder's layout: nothing; the heads first
 * (perm [2,0,1,3], out [1,2,0,3]); q's transpose output also a graph
 * output; k's split output also negated to an output; the output's
 * transpose output also a graph output; the last reshape the graph
 * output; q through transpose, reshape [1,H*S,Dh] (no view of the split),
 * reshape back. */
enum { L_ENC, L_PERM, L_Q2, L_SPLIT2, L_OUTMID, L_OUTLAST, L_NOVIEW };

typedef struct lcase {
    int64_t s, h, dh;
    int kind; /* L_* */
} lcase;

/* Encoder-style layout case c: nodes expected absorbed in absorbed[]
 * (node ids, in[i] 1/0) and compared to the plan. */
static void run_layout(const lcase *c)
{
    char what[200], err[2048];
    snprintf(what, sizeof what, "layout s=%lld h=%lld dh=%lld kind=%d", (long long)c->s,
             (long long)c->h, (long long)c->dh, c->kind);
    const int64_t E = 5, S = c->s, H = c->h, DH = c->dh, HD = H * DH;
    graph *g = graph_new("ocl_attn_layout");
    graph_type tx = {GRAPH_F32, 3, {1, S, E}}, tw = {GRAPH_F32, 2, {3 * HD, E}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x");
    int32_t w = graph_add_value(g, GRAPH_VALUE_INPUT, &tw, "w");
    int32_t w2 = graph_add_value(g, GRAPH_VALUE_INPUT, &tw, "w2");
    graph_type tw3 = {GRAPH_F32, 2, {HD, E}};
    int32_t w3 = graph_add_value(g, GRAPH_VALUE_INPUT, &tw3, "w3");
    graph_add_input(g, x);
    graph_add_input(g, w);
    graph_add_input(g, w2);
    graph_add_input(g, w3);
    int want[64], node[64], nn = 0;
#define ADD(op, ins, nins, attrs, outs, nouts, absorbed)                                     \
    do {                                                                                     \
        node[nn] = graph_add_node(g, op, ins, nins, attrs, outs, nouts);                     \
        CHECK_MSG(node[nn] >= 0, "%s: graph: %s", what, graph_error(g));                     \
        want[nn++] = absorbed;                                                               \
    } while (0)
    int32_t in2[2] = {x, w}, y, a, a2, qkv[3], r[3], t[3], extra = -1;
    ADD(GRAPH_OP_linear, in2, 2, NULL, &y, 1, 0);
    graph_split_attrs sp = {-1, {3, {HD, HD, HD}}};
    int split_abs = c->kind != L_Q2 && c->kind != L_SPLIT2 && c->kind != L_NOVIEW;
    ADD(GRAPH_OP_split, &y, 1, &sp, qkv, 3, split_abs);
    /* alive from here to after the chain: the plan may give it y's
     * memory (dead after the split in the CPU's order) */
    in2[1] = w2;
    ADD(GRAPH_OP_linear, in2, 2, NULL, &a, 1, 0);
    in2[1] = w3;
    ADD(GRAPH_OP_linear, in2, 2, NULL, &a2, 1, 0);
    int heads_first = c->kind == L_PERM;
    graph_transpose_attrs tp = {{4, {0, 2, 1, 3}}}, tpo = tp;
    if (heads_first)
        tp = (graph_transpose_attrs){{4, {2, 0, 1, 3}}},
        tpo = (graph_transpose_attrs){{4, {1, 2, 0, 3}}};
    graph_reshape_attrs rs = {{4, {1, S, H, DH}}};
    for (int i = 0; i < 3; i++) {
        int keep = i == 0 && c->kind == L_Q2 ? 0 : 1;
        int noview = i == 0 && c->kind == L_NOVIEW;
        ADD(GRAPH_OP_reshape, &qkv[i], 1, &rs, &r[i], 1, keep && !noview);
        ADD(GRAPH_OP_transpose, &r[i], 1, &tp, &t[i], 1, keep && !noview);
        if (i == 0 && c->kind == L_Q2)
            graph_add_output(g, t[0], "tq");
        if (noview) {
            graph_reshape_attrs m = {{3, {1, H * S, DH}}}, back = {{4, {1, H, S, DH}}};
            int32_t u;
            ADD(GRAPH_OP_reshape, &t[0], 1, &m, &u, 1, 1);
            ADD(GRAPH_OP_reshape, &u, 1, &back, &t[0], 1, 1);
        }
    }
    if (c->kind == L_SPLIT2) {
        ADD(GRAPH_OP_neg, &qkv[1], 1, NULL, &extra, 1, 0);
        graph_add_output(g, extra, "k2");
    }
    graph_matmul_attrs tb = {0, 1};
    int32_t in[2] = {t[0], t[1]}, sc, sd, pr, o, ot, oe, z, b;
    ADD(GRAPH_OP_matmul, in, 2, &tb, &sc, 1, 1);
    float cval = 8.0f;
    graph_type tc = {GRAPH_F32, 0, {0}};
    int32_t cst = graph_add_value(g, GRAPH_VALUE_CONST, &tc, "c");
    graph_set_data(g, cst, &cval, sizeof cval);
    in[0] = sc, in[1] = cst;
    ADD(GRAPH_OP_div, in, 2, NULL, &sd, 1, 1);
    graph_softmax_attrs sa = {-1};
    ADD(GRAPH_OP_softmax, &sd, 1, &sa, &pr, 1, 1);
    in[0] = pr, in[1] = t[2];
    ADD(GRAPH_OP_matmul, in, 2, NULL, &o, 1, 0);
    int fused_at = nn - 1;
    /* a's and a2's last uses after the chain (transposes: not in place):
     * the plan may give the output's memory to them (the output is
     * written later in the CPU's order) */
    graph_transpose_attrs t3 = {{3, {0, 2, 1}}};
    int32_t b2;
    ADD(GRAPH_OP_transpose, &a, 1, &t3, &b, 1, 0);
    graph_add_output(g, b, "b");
    ADD(GRAPH_OP_transpose, &a2, 1, &t3, &b2, 1, 0);
    graph_add_output(g, b2, "b2");
    ADD(GRAPH_OP_transpose, &o, 1, &tpo, &ot, 1, 1);
    if (c->kind == L_OUTMID)
        graph_add_output(g, ot, "ot");
    graph_reshape_attrs rso = {{3, {1, S, HD}}};
    ADD(GRAPH_OP_reshape, &ot, 1, &rso, &oe, 1, c->kind != L_OUTMID);
    if (c->kind == L_OUTLAST) {
        graph_add_output(g, oe, "z");
        z = oe;
    } else {
        ADD(GRAPH_OP_neg, &oe, 1, NULL, &z, 1, 0);
        graph_add_output(g, z, "z");
    }
#undef ADD
    replay_opts opts = {.device = "opencl"};
    replay_plan *pl = replay_compile(g, &opts, err, sizeof err);
    CHECK_MSG(pl != NULL, "%s: compile: %s", what, err);
    if (pl) {
        const ocl_plan *op = pl->bplan;
        CHECK_MSG(op->nodes[node[fused_at]].op == &ocl_attn_op, "%s: the chain is not fused",
                  what);
        for (int i = 0; i < nn; i++)
            CHECK_MSG(op->nodes[node[i]].absorbed == want[i], "%s: node %d (%s) %sabsorbed",
                      what, node[i], graph_ops[g->nodes[node[i]].op].name,
                      want[i] ? "not " : "");
    }
    /* the reference */
    float *dx = malloc(sizeof *dx * (size_t)(S * E)), *dw = malloc(sizeof *dw * (size_t)(3 * HD * E));
    float *dw2 = malloc(sizeof *dw2 * (size_t)(3 * HD * E)), *dw3 = malloc(sizeof *dw3 * (size_t)(HD * E));
    check_fill(dx, S * E, 21, -1.0f, 1.0f);
    check_fill(dw, 3 * HD * E, 22, -1.0f, 1.0f);
    check_fill(dw2, 3 * HD * E, 23, -1.0f, 1.0f);
    check_fill(dw3, HD * E, 24, -1.0f, 1.0f);
    /* hb [3HD, S] and hb2 [HD, S]: the transposed side linears */
    float *hy = malloc(sizeof *hy * (size_t)(S * 3 * HD)), *hb = malloc(sizeof *hb * (size_t)(S * 3 * HD));
    float *hb2 = malloc(sizeof *hb2 * (size_t)(S * HD));
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < 3 * HD; j++) {
            double u = 0, u2 = 0, u3 = 0;
            for (int64_t e = 0; e < E; e++) {
                u += (double)dx[i * E + e] * dw[j * E + e];
                u2 += (double)dx[i * E + e] * dw2[j * E + e];
                u3 += j < HD ? (double)dx[i * E + e] * dw3[j * E + e] : 0;
            }
            hy[i * 3 * HD + j] = (float)u;
            hb[j * S + i] = (float)u2;
            if (j < HD)
                hb2[j * S + i] = (float)u3;
        }
    float *hq = malloc(sizeof *hq * (size_t)(3 * S * HD)), *hk = hq + S * HD, *hv = hk + S * HD;
    for (int64_t h = 0; h < H; h++) /* [H, S, DH] */
        for (int64_t i = 0; i < S; i++)
            for (int64_t d = 0; d < DH; d++) {
                int64_t at = (h * S + i) * DH + d, from = i * 3 * HD + h * DH + d;
                hq[at] = hy[from], hk[at] = hy[from + HD], hv[at] = hy[from + 2 * HD];
            }
    float *ho = malloc(sizeof *ho * (size_t)(S * HD)), *hz = malloc(sizeof *hz * (size_t)(S * HD));
    attn_ref(hq, hk, hv, H, S, S, DH, DH, SC_DIV, cval, 0, ho);
    for (int64_t h = 0; h < H; h++) /* [1, S, H*DH] */
        for (int64_t i = 0; i < S; i++)
            for (int64_t d = 0; d < DH; d++)
                hz[i * HD + h * DH + d] = ho[(h * S + i) * DH + d];
    replay_session *se = pl ? replay_session_new(pl, NULL, 0) : NULL;
    if (se) {
        float *gz = calloc((size_t)(S * HD), sizeof *gz), *gb = calloc((size_t)(S * 3 * HD), sizeof *gb);
        float *gt = calloc((size_t)(3 * S * HD), sizeof *gt), *gb2 = calloc((size_t)(S * HD), sizeof *gb2);
        graph_type tz = {GRAPH_F32, 3, {1, S, HD}}, tbv = {GRAPH_F32, 3, {1, 3 * HD, S}},
                   tbv2 = {GRAPH_F32, 3, {1, HD, S}};
        replay_tensor ri[4] = {{.type = tx, .input = dx},
                               {.type = tw, .input = dw},
                               {.type = tw, .input = dw2},
                               {.type = tw3, .input = dw3}};
        replay_tensor ro[4] = {{.name = "z", .type = tz, .data = gz},
                               {.name = "b", .type = tbv, .data = gb},
                               {.name = "b2", .type = tbv2, .data = gb2},
                               {.data = gt}};
        int nro = 3;
        if (c->kind == L_Q2)
            ro[nro++] =
                (replay_tensor){.name = "tq", .type = {GRAPH_F32, 4, {1, H, S, DH}}, .data = gt};
        if (c->kind == L_OUTMID)
            ro[nro++] =
                (replay_tensor){.name = "ot", .type = {GRAPH_F32, 4, {1, S, H, DH}}, .data = gt};
        if (c->kind == L_SPLIT2)
            ro[nro++] =
                (replay_tensor){.name = "k2", .type = {GRAPH_F32, 3, {1, S, HD}}, .data = gt};
        tg_status st = replay_run(se, ri, 4, ro, nro);
        CHECK_MSG(st == TG_OK, "%s: run: %s", what, replay_session_error(se));
        if (st == TG_OK) {
            float *wz = malloc(sizeof *wz * (size_t)(S * HD));
            for (int64_t i = 0; i < S * HD; i++)
                wz[i] = c->kind == L_OUTLAST ? hz[i] : -hz[i];
            compare(what, gz, wz, S * HD);
            compare(what, gb, hb, S * 3 * HD);
            compare(what, gb2, hb2, S * HD);
            if (c->kind == L_Q2)
                compare(what, gt, hq, S * HD);
            if (c->kind == L_OUTMID)
                compare(what, gt, hz, S * HD);
            if (c->kind == L_SPLIT2) {
                for (int64_t i = 0; i < S; i++)
                    for (int64_t j = 0; j < HD; j++)
                        wz[i * HD + j] = -hy[i * 3 * HD + HD + j];
                compare(what, gt, wz, S * HD);
            }
            free(wz);
        }
        free(gz), free(gb), free(gt), free(gb2);
    }
    replay_session_free(se);
    replay_plan_free(pl);
    graph_free(g);
    free(dx), free(dw), free(dw2), free(dw3), free(hy), free(hb), free(hb2), free(hq), free(ho);
    free(hz);
}

static void test_layout(void)
{
    static const lcase sizes[] = {{7, 1, 8, L_ENC}, {7, 3, 80, L_ENC}, {130, 3, 8, L_ENC},
                                  {130, 1, 80, L_ENC}, {130, 3, 64, L_ENC}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        run_layout(&sizes[i]);
    for (int kind = L_PERM; kind <= L_NOVIEW; kind++) {
        lcase c = {7 + 123 * (kind % 2), 3, 8 + 72 * (kind % 2), kind};
        run_layout(&c);
    }
}

int main(int argc, char **argv)
{
    replay_device_info dev;
    if (!check_opencl_device(&dev))
        return CHECK_SKIP;
    /* the default fuses on GPUs only; PoCL is a CPU */
    setenv("TG_OPENCL_ATTN", "fused", 1);
    if (argc > 1 && !strcmp(argv[1], "small")) {
        /* for oclgrind --data-races: two partial key tiles, a partial
         * row block, two batch-heads */
        acase c = {1, 2, 1, 7, 40, 8, 12, SC_DIV, X_NONE, 0, 0};
        run_case(&c, 1);
        /* and through the encoder's layout: 3 heads, strided q, k, v, out */
        lcase lc = {7, 3, 8, L_ENC};
        run_layout(&lc);
        replay_backend_shutdown();
        return check_done();
    }
    test_sizes();
    test_dynamic();
    test_not_fused();
    test_layout();
    replay_backend_shutdown();
    return check_done();
}
