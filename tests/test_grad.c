/*
 * test_grad.c - every gradient rule of graph/grad.def against central
 * finite differences computed here, in double, from the op's forward
 * (the eager kernel: a code path the rules do not take).
 *
 * Each case draws inputs (at chosen shapes: broadcasting, reductions,
 * strides, padding; then binary ops and reductions at random shapes and
 * axes), runs the forward, takes the loss L = sum_o w_o . y_o
 * with random weights w_o (so each output element has its own weight),
 * and compares the rule's gradient (eager builder, eager_op_grad) with
 * (L(x + h e) - L(x - h e)) / (x+h - x-h) at each element e (all of them,
 * or 40 drawn at random for big inputs).  Inputs that meet a kink (relu,
 * abs and clip near their corners, max / maximum / max_pool ties) are
 * drawn "spaced": distinct multiples of 0.05 offset by 0.025, so no two
 * are closer than 0.05, none is within 0.025 of 0 or of +-0.5, and h =
 * 1e-3 never crosses a kink.  The same rule is then run through the graph
 * builder (graph_backward on a graph of the op and the loss) and the
 * reference interpreter, which must agree with the eager builder.
 *
 * Then: every op with a rule has a case here; NODIFF and NORULE ops and
 * non-differentiable inputs fail with their messages; graph_backward's
 * refusals; and a two-layer MLP with a cross-entropy loss made of ops,
 * whose parameters feed two branches (gradients accumulate), against
 * finite differences of the whole graph; and a traced MLP whose backward
 * graph_backward appends, optimized at -O2 and replayed, against eager
 * autograd.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/conv_attrs.h"
#include "../graph/graph_impl.h"
#include "check.h"
#include "pool_ref_util.h"
#define TU_SEED 0x1234567
#include "rand_util.h"
#include "eager/eager.h"
#include "eager/grad_eager.h"
#include "eager/interp.h"
#include "graph/grad.h"
#include "graph/graph.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"

/* ---- inputs ---- */

enum { GEN_UNIFORM, GEN_SPACED, GEN_INTS, GEN_BOOL };

typedef struct in_spec {
    graph_dtype dt;
    int gen;
    double lo, hi;   /* GEN_UNIFORM: the range; GEN_INTS: indices in [lo, hi) */
    graph_ints shape;
} in_spec;

#define F(lo, hi, ...) ((in_spec){GRAPH_F32, GEN_UNIFORM, lo, hi, TG_SHAPE(__VA_ARGS__)})
#define F0(lo, hi) ((in_spec){GRAPH_F32, GEN_UNIFORM, lo, hi, TG_NOINTS})
#define SP(...) ((in_spec){GRAPH_F32, GEN_SPACED, 0, 0, TG_SHAPE(__VA_ARGS__)})
#define IX(lo, hi, ...) ((in_spec){GRAPH_I64, GEN_INTS, lo, hi, TG_SHAPE(__VA_ARGS__)})
#define BL(...) ((in_spec){GRAPH_BOOL, GEN_BOOL, 0, 0, TG_SHAPE(__VA_ARGS__)})

static int64_t numel_of(const graph_ints *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->n; i++)
        n *= s->v[i];
    return n;
}

/* A spaced draw shares one pool across a case's inputs (maximum's two
 * sides never tie either). */
static int64_t g_spaced_next;
static int64_t *g_perm;
static int64_t g_perm_n;

static void spaced_reset(int64_t total)
{
    free(g_perm);
    g_perm_n = total;
    g_perm = malloc((size_t)(total ? total : 1) * sizeof *g_perm);
    for (int64_t i = 0; i < total; i++)
        g_perm[i] = i;
    for (int64_t i = total - 1; i > 0; i--) {
        int64_t j = (int64_t)(next_u64() % (uint64_t)(i + 1)), t = g_perm[i];
        g_perm[i] = g_perm[j];
        g_perm[j] = t;
    }
    g_spaced_next = 0;
}

static eager_tensor *make_input(const in_spec *s)
{
    int64_t n = numel_of(&s->shape);
    if (s->dt == GRAPH_F32) {
        float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
        for (int64_t i = 0; i < n; i++) {
            if (s->gen == GEN_SPACED) {
                int64_t k = g_perm[g_spaced_next++] - g_perm_n / 2;
                f[i] = (float)(0.05 * (double)k + 0.025);
            } else {
                f[i] = (float)(s->lo + (s->hi - s->lo) * urand());
            }
        }
        eager_tensor *t = eager_from_data(GRAPH_F32, s->shape, f);
        free(f);
        return t;
    }
    if (s->dt == GRAPH_I64) {
        int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = (int64_t)s->lo + (int64_t)(next_u64() % (uint64_t)(s->hi - s->lo));
        eager_tensor *t = eager_from_data(GRAPH_I64, s->shape, v);
        free(v);
        return t;
    }
    unsigned char *b = malloc((size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        b[i] = (unsigned char)(next_u64() & 1);
    eager_tensor *t = eager_from_data(GRAPH_BOOL, s->shape, b);
    free(b);
    return t;
}

/* ---- the loss ---- */

#define MAXO 8

static int forward(graph_op op, eager_tensor **in, int nin, const void *attrs, eager_tensor **out)
{
    return eager_dispatch(op, in, nin, attrs, out, MAXO, &(eager_site){EAGER_SITE});
}

static double loss_of(eager_tensor **out, int nout, eager_tensor **w)
{
    double l = 0;
    for (int o = 0; o < nout; o++) {
        if (!w[o])
            continue;
        const float *y = eager_peek(out[o]), *wo = eager_peek(w[o]);
        for (int64_t i = 0; i < eager_numel(out[o]); i++)
            l += (double)wo[i] * (double)y[i];
    }
    return l;
}

static void release_n(eager_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i])
            eager_release(t[i]);
}

/* ---- the graph path: op + loss in a graph, graph_backward, interpreted ---- */

static void graph_path(graph_op op, eager_tensor **in, int nin, const void *attrs,
                       eager_tensor **w, int nout, const unsigned char *need,
                       eager_tensor **gin, int line)
{
    graph *g = graph_new("grad_case");
    int32_t ids[8], outs[MAXO], loss = -1, wrt[8], grads[8];
    int nwrt = 0;
    for (int i = 0; i < nin; i++) {
        ids[i] = graph_add_value(g, GRAPH_VALUE_INPUT, eager_type(in[i]), NULL);
        graph_add_input(g, ids[i]);
        if (need[i])
            wrt[nwrt++] = ids[i];
    }
    int32_t node = graph_add_node(g, op, ids, nin, attrs, outs, MAXO);
    CHECK_MSG(node >= 0, "line %d: graph node: %s", line, graph_error(g));
    for (int o = 0; node >= 0 && o < nout; o++) {
        if (!w[o])
            continue;
        int32_t wv = graph_add_value(g, GRAPH_VALUE_CONST, eager_type(w[o]), NULL);
        graph_set_data(g, wv, eager_peek(w[o]), eager_nbytes(w[o]));
        int32_t p, s, in2[2] = {outs[o], wv};
        graph_add_node(g, GRAPH_OP_mul, in2, 2, NULL, &p, 1);
        graph_add_node(g, GRAPH_OP_reduce_sum, &p, 1, NULL, &s, 1);
        if (loss < 0) {
            loss = s;
        } else {
            int32_t in3[2] = {loss, s};
            graph_add_node(g, GRAPH_OP_add, in3, 2, NULL, &loss, 1);
        }
    }
    tg_status st = node >= 0 ? graph_backward(g, loss, wrt, nwrt, grads) : TG_ERR_ARG;
    CHECK_MSG(st == TG_OK, "line %d: graph_backward: %s", line, graph_error(g));
    if (st == TG_OK) {
        char name[16];
        for (int k = 0; k < nwrt; k++) {
            snprintf(name, sizeof name, "g%d", k);
            graph_add_output(g, grads[k], name);
        }
        eager_tensor *got[8] = {0};
        st = eager_interpret(g, in, nin, got, nwrt, NULL);
        CHECK_MSG(st == TG_OK, "line %d: interpret: %s", line, eager_error());
        for (int i = 0, k = 0; st == TG_OK && i < nin; i++) {
            if (!need[i])
                continue;
            const float *a = eager_peek(got[k]), *b = eager_peek(gin[i]);
            double err = check_normalized_error(a, b, eager_numel(gin[i]));
            CHECK_MSG(eager_numel(got[k]) == eager_numel(gin[i]) && err <= 1e-6,
                      "line %d: input %d: graph builder vs eager builder: error %g", line, i, err);
            k++;
        }
        release_n(got, nwrt);
    }
    eager_clear_error();
    graph_free(g);
}

/* ---- one case ---- */

static int g_cases[GRAPH_OP_COUNT];
static unsigned g_bnt_drop; /* batch_norm_train: outputs given no weight */
static double g_worst;
static int g_checked;

#define MAX_FD_POINTS 40

static void run_case(graph_op op, const void *attrs, int nin, const in_spec *spec, double h,
                     int line)
{
    g_cases[op]++;
    int64_t total = 0;
    for (int i = 0; i < nin; i++)
        total += spec[i].gen == GEN_SPACED ? numel_of(&spec[i].shape) : 0;
    spaced_reset(total);
    eager_tensor *in[8], *out[MAXO] = {0}, *w[MAXO] = {0}, *gin[8] = {0};
    unsigned char need[8];
    for (int i = 0; i < nin; i++) {
        in[i] = make_input(&spec[i]);
        need[i] = (unsigned char)grad_input_diff(op, i, spec[i].dt);
    }
    int nout = forward(op, in, nin, attrs, out);
    CHECK_MSG(nout > 0, "line %d: forward %s: %s", line, graph_ops[op].name, eager_error());
    if (nout <= 0) {
        eager_clear_error();
        release_n(in, nin);
        return;
    }
    for (int o = 0; o < nout; o++) {
        if (eager_dtype(out[o]) != GRAPH_F32)
            continue;
        in_spec ws = F(-1, 1, 1);
        ws.shape.n = eager_ndim(out[o]);
        for (int d = 0; d < ws.shape.n; d++)
            ws.shape.v[d] = eager_dim(out[o], d);
        w[o] = make_input(&ws);
    }
    /* split: leave one output without a gradient (the rule fills zeros) */
    if (nout > 1 && op == GRAPH_OP_split) {
        eager_release(w[1]);
        w[1] = NULL;
    }
    /* batch_norm_train: the running statistics carry no gradient; the
     * outputs in g_bnt_drop take none either (each path of the rule) */
    for (int o = 0; op == GRAPH_OP_batch_norm_train && o < nout; o++)
        if ((o == 1 || o == 2 || ((g_bnt_drop >> o) & 1u)) && w[o]) {
            eager_release(w[o]);
            w[o] = NULL;
        }
    tg_status st = eager_op_grad(op, in, nin, attrs, out, nout, w, need, gin,
                                 &(eager_site){EAGER_SITE});
    CHECK_MSG(st == TG_OK, "line %d: %s rule: %s", line, graph_ops[op].name, eager_error());
    if (st != TG_OK)
        eager_clear_error();
    for (int i = 0; st == TG_OK && i < nin; i++) {
        if (!need[i])
            continue;
        CHECK_MSG(gin[i] && eager_ndim(gin[i]) == eager_ndim(in[i]) &&
                      eager_numel(gin[i]) == eager_numel(in[i]),
                  "line %d: %s: input %d's gradient has the input's shape", line,
                  graph_ops[op].name, i);
        if (!gin[i] || eager_numel(gin[i]) != eager_numel(in[i]))
            continue;
        for (int d = 0; d < eager_ndim(in[i]); d++)
            CHECK_MSG(eager_dim(gin[i], d) == eager_dim(in[i], d), "line %d: dim %d", line, d);
        int64_t n = eager_numel(in[i]);
        const float *ga = eager_peek(gin[i]);
        float *x = eager_data_mut(in[i]);
        double *fd = malloc((size_t)(n ? n : 1) * sizeof *fd);
        int64_t *pts = malloc((size_t)(n ? n : 1) * sizeof *pts);
        int64_t np = n <= MAX_FD_POINTS ? n : MAX_FD_POINTS;
        for (int64_t k = 0; k < np; k++)
            pts[k] = n <= MAX_FD_POINTS ? k : (int64_t)(next_u64() % (uint64_t)n);
        double scale = 0;
        for (int64_t k = 0; k < np; k++) {
            int64_t e = pts[k];
            float x0 = x[e], xp = (float)(x0 + h), xm = (float)(x0 - h);
            eager_tensor *o1[MAXO] = {0}, *o2[MAXO] = {0};
            x[e] = xp;
            int n1 = forward(op, in, nin, attrs, o1);
            double lp = n1 > 0 ? loss_of(o1, nout, w) : NAN;
            x[e] = xm;
            int n2 = forward(op, in, nin, attrs, o2);
            double lm = n2 > 0 ? loss_of(o2, nout, w) : NAN;
            x[e] = x0;
            release_n(o1, n1 > 0 ? n1 : 0);
            release_n(o2, n2 > 0 ? n2 : 0);
            fd[k] = (lp - lm) / ((double)xp - (double)xm);
            scale = fmax(scale, fabs(fd[k]));
        }
        double worst = 0;
        int64_t at = -1, atk = 0;
        for (int64_t k = 0; k < np; k++) {
            double err = fabs((double)ga[pts[k]] - fd[k]) / fmax(scale, 1.0);
            if (!(err <= worst)) {
                worst = err;
                at = pts[k];
                atk = k;
            }
        }
        g_checked += (int)np;
        if (worst > g_worst)
            g_worst = worst;
        CHECK_MSG(worst <= 2e-3, "line %d: %s input %d: rule vs finite differences: element "
                  "%lld: %g vs %g (error %g of %g)", line, graph_ops[op].name, i,
                  (long long)at, at >= 0 ? (double)ga[at] : 0.0,
                  fd[atk], worst, scale);
        free(fd);
        free(pts);
    }
    if (st == TG_OK)
        graph_path(op, in, nin, attrs, w, nout, need, gin, line);
    release_n(gin, nin);
    release_n(w, nout);
    release_n(out, nout);
    release_n(in, nin);
}

#define CASE(op, attrs, h, ...)                                                         \
    do {                                                                                 \
        in_spec s_[] = {__VA_ARGS__};                                                    \
        run_case(GRAPH_OP_##op, attrs, (int)(sizeof s_ / sizeof s_[0]), s_, h, __LINE__); \
    } while (0)

#define H 1e-2   /* smooth ops */
#define HK 1e-3  /* near kinks (spaced inputs) */

/* ---- the cases ---- */

static void unary_cases(void)
{
    CASE(neg, NULL, H, F(-2, 2, 3, 4));
    CASE(abs, NULL, HK, SP(3, 5));
    CASE(exp, NULL, H, F(-2, 2, 2, 3, 4));
    CASE(log, NULL, H, F(0.5, 3, 17));
    CASE(sqrt, NULL, H, F(0.5, 3, 4, 5));
    CASE(rsqrt, NULL, H, F(0.5, 3, 4, 5));
    CASE(reciprocal, NULL, H, F(0.5, 3, 4, 5));
    CASE(relu, NULL, HK, SP(4, 6));
    graph_leaky_relu_attrs lr = {0.1f};
    CASE(leaky_relu, &lr, HK, SP(4, 6));
    CASE(sigmoid, NULL, H, F(-4, 4, 5, 3));
    CASE(tanh, NULL, H, F(-2, 2, 5, 3));
    CASE(gelu, NULL, H, F(-3, 3, 5, 7));
    CASE(silu, NULL, H, F(-4, 4, 5, 7));
    CASE(erf, NULL, H, F(-2, 2, 5, 7));
    CASE(softplus, NULL, H, F(-5, 5, 5, 7));
    graph_clip_attrs cl = {-0.5f, 0.5f};
    CASE(clip, &cl, HK, SP(4, 8));
    CASE(exp, NULL, H, F0(-1, 1)); /* 0-d */
}

static void binary_cases(void)
{
    CASE(add, NULL, H, F(-1, 1, 3, 4), F(-1, 1, 4));
    CASE(add, NULL, H, F(-1, 1, 2, 1, 3), F(-1, 1, 4, 1));
    CASE(sub, NULL, H, F(-1, 1, 3, 1), F(-1, 1, 3, 5));
    CASE(sub, NULL, H, F0(-1, 1), F(-1, 1, 2, 3));
    CASE(mul, NULL, H, F(-1, 1, 3, 4), F(-1, 1, 3, 1));
    CASE(mul, NULL, H, F(-1, 1, 2, 3, 4), F(-1, 1, 4));
    CASE(div, NULL, H, F(-1, 1, 3, 4), F(0.5, 2, 4));
    CASE(div, NULL, H, F(-1, 1, 1, 4), F(-2, -0.5, 3, 1));
    CASE(pow, NULL, H, F(0.5, 2, 3, 4), F(-1, 2, 4));
    CASE(maximum, NULL, HK, SP(3, 4), SP(4));
    CASE(minimum, NULL, HK, SP(3, 1), SP(3, 5));
    CASE(where, NULL, H, BL(3, 4), F(-1, 1, 3, 4), F(-1, 1, 4));
    CASE(where, NULL, H, BL(2, 1, 3), F(-1, 1, 1), F(-1, 1, 2, 4, 3));
}

static void linalg_cases(void)
{
    graph_matmul_attrs mm = {0, 0};
    CASE(matmul, &mm, H, F(-1, 1, 3, 4), F(-1, 1, 4, 5));
    CASE(matmul, &mm, H, F(-1, 1, 2, 1, 3, 4), F(-1, 1, 3, 4, 2));
    CASE(matmul, &mm, H, F(-1, 1, 4), F(-1, 1, 2, 4, 3));
    CASE(matmul, &mm, H, F(-1, 1, 2, 3, 4), F(-1, 1, 4));
    CASE(matmul, &mm, H, F(-1, 1, 4), F(-1, 1, 4));
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            /* M 3, K 4, N 5: a [M,K] or [K,M], b [K,N] or [N,K] */
            graph_matmul_attrs t = {ta, tb};
            in_spec a = ta ? F(-1, 1, 2, 4, 3) : F(-1, 1, 2, 3, 4);
            in_spec b = tb ? F(-1, 1, 5, 4) : F(-1, 1, 4, 5);
            CASE(matmul, &t, H, a, b);
            in_spec a2 = ta ? F(-1, 1, 4, 3) : F(-1, 1, 3, 4);
            in_spec b2 = tb ? F(-1, 1, 2, 1, 5, 4) : F(-1, 1, 2, 1, 4, 5);
            CASE(matmul, &t, H, a2, b2);
        }
    CASE(linear, NULL, H, F(-1, 1, 4, 6), F(-1, 1, 3, 6), F(-1, 1, 3));
    CASE(linear, NULL, H, F(-1, 1, 2, 3, 6), F(-1, 1, 5, 6));
    CASE(linear, NULL, H, F(-1, 1, 6), F(-1, 1, 5, 6), F(-1, 1, 5));

    graph_conv2d_attrs cv;
    graph_attrs_default(GRAPH_OP_conv2d, &cv);
    CASE(conv2d, &cv, H, F(-1, 1, 2, 3, 6, 5), F(-1, 1, 4, 3, 3, 3), F(-1, 1, 4));
    cv.stride = TG_INTS(2);
    cv.padding = TG_INTS(1);
    CASE(conv2d, &cv, H, F(-1, 1, 2, 3, 7, 6), F(-1, 1, 4, 3, 3, 3), F(-1, 1, 4));
    cv.stride = TG_INTS(2, 3);
    cv.padding = TG_INTS(1, 0, 2, 1);
    cv.dilation = TG_INTS(2, 1);
    CASE(conv2d, &cv, H, F(-1, 1, 1, 2, 8, 9), F(-1, 1, 3, 2, 2, 3));
    /* groups (2, and depthwise), with stride, padding and dilation */
    graph_attrs_default(GRAPH_OP_conv2d, &cv);
    cv.groups = 2;
    cv.stride = TG_INTS(2, 1);
    cv.padding = TG_INTS(0, 1, 1, 0);
    CASE(conv2d, &cv, H, F(-1, 1, 2, 4, 7, 6), F(-1, 1, 6, 2, 3, 2), F(-1, 1, 6));
    cv.groups = 3;
    cv.stride = TG_NOINTS;
    cv.padding = TG_INTS(1);
    cv.dilation = TG_INTS(2);
    CASE(conv2d, &cv, H, F(-1, 1, 2, 3, 6, 5), F(-1, 1, 3, 1, 3, 3));

    graph_max_pool2d_attrs mp;
    graph_attrs_default(GRAPH_OP_max_pool2d, &mp);
    mp.kernel = TG_INTS(2);
    CASE(max_pool2d, &mp, HK, SP(2, 3, 4, 6));
    mp.kernel = TG_INTS(3);
    mp.stride = TG_INTS(2);
    mp.padding = TG_INTS(1);
    CASE(max_pool2d, &mp, HK, SP(2, 2, 7, 6));
    graph_avg_pool2d_attrs ap;
    graph_attrs_default(GRAPH_OP_avg_pool2d, &ap);
    ap.kernel = TG_INTS(2);
    CASE(avg_pool2d, &ap, H, F(-1, 1, 2, 3, 4, 6));
    ap.kernel = TG_INTS(3, 2);
    ap.stride = TG_INTS(2, 1);
    ap.padding = TG_INTS(1, 1, 2, 0);
    CASE(avg_pool2d, &ap, H, F(-1, 1, 2, 2, 7, 6));
    ap.count_include_pad = 1;
    CASE(avg_pool2d, &ap, H, F(-1, 1, 2, 2, 7, 6));
    CASE(global_avg_pool, NULL, H, F(-1, 1, 2, 3, 4, 5));

    graph_batch_norm_attrs bn = {1e-3f};
    CASE(batch_norm, &bn, H, F(-2, 2, 3, 4, 2, 3), F(0.5, 2, 4), F(-1, 1, 4), F(-1, 1, 4),
         F(0.5, 2, 4));
    CASE(batch_norm, &bn, H, F(-2, 2, 5, 3), F(0.5, 2, 3), F(-1, 1, 3), F(-1, 1, 3),
         F(0.5, 2, 3));
    /* training form: the batch's statistics; y alone, then the batch mean
     * and 1/std alone, then all three outputs weighted */
    graph_batch_norm_train_attrs bt = {1e-3f, 0.1f};
    g_bnt_drop = 1u << 3 | 1u << 4;
    CASE(batch_norm_train, &bt, H, F(-2, 2, 3, 4, 2, 3), F(0.5, 2, 4), F(-1, 1, 4),
         F(-1, 1, 4), F(0.5, 2, 4));
    g_bnt_drop = 1u << 0;
    CASE(batch_norm_train, &bt, H, F(-2, 2, 5, 3), F(0.5, 2, 3), F(-1, 1, 3), F(-1, 1, 3),
         F(0.5, 2, 3));
    g_bnt_drop = 0;
    CASE(batch_norm_train, &bt, H, F(-2, 2, 2, 3, 3), F(0.5, 2, 3), F(-1, 1, 3), F(-1, 1, 3),
         F(0.5, 2, 3));
    /* dropout: exact (x times a mask the generator fixes); offsets of
     * every residue mod 4 */
    graph_dropout_attrs dr = {0.3f};
    CASE(dropout, &dr, H, F(-2, 2, 3, 7), IX(0, 1000, 2));
    dr.p = 0.0f;
    CASE(dropout, &dr, H, F(-2, 2, 5), IX(0, 1000, 2));
    dr.p = 0.75f;
    CASE(dropout, &dr, H, F(-2, 2, 2, 3, 5), IX(0, 1000, 2));
    graph_layer_norm_attrs ln = {-1, 1e-5f};
    CASE(layer_norm, &ln, H, F(-2, 2, 3, 8), F(0.5, 2, 8), F(-1, 1, 8));
    CASE(layer_norm, &ln, H, F(-2, 2, 2, 3, 6));
    ln.axis = 1;
    CASE(layer_norm, &ln, H, F(-2, 2, 2, 3, 4), F(0.5, 2, 3, 4), F(-1, 1, 3, 4));
    ln.axis = 0;
    CASE(layer_norm, &ln, H, F(-2, 2, 3, 4), F(0.5, 2, 3, 4));
    graph_softmax_attrs sm = {1};
    CASE(softmax, &sm, H, F(-2, 2, 2, 5, 3));
    sm.axis = -1;
    CASE(softmax, &sm, H, F(-2, 2, 4, 6));
    graph_log_softmax_attrs ls = {-1};
    CASE(log_softmax, &ls, H, F(-2, 2, 4, 6));
    ls.axis = 0;
    CASE(log_softmax, &ls, H, F(-2, 2, 4, 3, 2));
}

static void reduce_cases(void)
{
    graph_reduce_sum_attrs rs;
    graph_attrs_default(GRAPH_OP_reduce_sum, &rs);
    CASE(reduce_sum, &rs, H, F(-1, 1, 3, 4));
    rs.axes = TG_INTS(1);
    CASE(reduce_sum, &rs, H, F(-1, 1, 3, 4, 2));
    rs.axes = TG_INTS(0, -1);
    rs.keepdim = 1;
    CASE(reduce_sum, &rs, H, F(-1, 1, 3, 4, 2));
    graph_reduce_mean_attrs rm;
    graph_attrs_default(GRAPH_OP_reduce_mean, &rm);
    CASE(reduce_mean, &rm, H, F(-1, 1, 3, 4));
    rm.axes = TG_INTS(2, 0);
    CASE(reduce_mean, &rm, H, F(-1, 1, 3, 4, 2));
    rm.keepdim = 1;
    CASE(reduce_mean, &rm, H, F(-1, 1, 3, 4, 2));
    graph_reduce_max_attrs rx;
    graph_attrs_default(GRAPH_OP_reduce_max, &rx);
    CASE(reduce_max, &rx, HK, SP(3, 4));
    rx.axes = TG_INTS(1);
    CASE(reduce_max, &rx, HK, SP(3, 5, 2));
    rx.axes = TG_INTS(0, 2);
    rx.keepdim = 1;
    CASE(reduce_max, &rx, HK, SP(3, 5, 2));
    graph_cumsum_attrs cs;
    graph_attrs_default(GRAPH_OP_cumsum, &cs);
    cs.axis = 1;
    CASE(cumsum, &cs, H, F(-1, 1, 3, 5));
    cs.exclusive = 1;
    CASE(cumsum, &cs, H, F(-1, 1, 3, 5));
    cs.reverse = 1;
    CASE(cumsum, &cs, H, F(-1, 1, 3, 5));
    cs.exclusive = 0;
    cs.axis = 0;
    CASE(cumsum, &cs, H, F(-1, 1, 3, 5));
}

static void shape_cases(void)
{
    graph_reshape_attrs rs = {TG_INTS(4, -1)};
    CASE(reshape, &rs, H, F(-1, 1, 2, 3, 4));
    graph_flatten_attrs fl = {1, -1};
    CASE(flatten, &fl, H, F(-1, 1, 2, 3, 4));
    graph_transpose_attrs tr = {TG_INTS(2, 0, 1)};
    CASE(transpose, &tr, H, F(-1, 1, 2, 3, 4));
    tr.perm = TG_NOINTS;
    CASE(transpose, &tr, H, F(-1, 1, 2, 3, 4));
    graph_concat_attrs cc = {1};
    CASE(concat, &cc, H, F(-1, 1, 2, 3), F(-1, 1, 2, 1), F(-1, 1, 2, 4));
    cc.axis = -1;
    CASE(concat, &cc, H, F(-1, 1, 2, 2, 3), F(-1, 1, 2, 2, 2));
    graph_split_attrs sp = {0, TG_INTS(1, 2, 2)};
    CASE(split, &sp, H, F(-1, 1, 5, 3));
    graph_slice_attrs sl;
    graph_attrs_default(GRAPH_OP_slice, &sl);
    sl.axes = TG_INTS(1);
    sl.starts = TG_INTS(1);
    sl.ends = TG_INTS(4);
    CASE(slice, &sl, H, F(-1, 1, 3, 6));
    sl.axes = TG_INTS(0, 2);
    sl.starts = TG_INTS(-1, 0);
    sl.ends = TG_INTS(-100, 100);
    sl.steps = TG_INTS(-2, 2);
    CASE(slice, &sl, H, F(-1, 1, 5, 2, 5));
    sl.axes = TG_INTS(1);
    sl.starts = TG_INTS(0);
    sl.ends = TG_INTS(100);
    sl.steps = TG_INTS(-1);
    CASE(slice, &sl, H, F(-1, 1, 2, 4));
    graph_pad_attrs pd;
    graph_attrs_default(GRAPH_OP_pad, &pd);
    pd.pads = TG_INTS(1, 0, 2, 1);
    pd.value = 3.0f;
    CASE(pad, &pd, H, F(-1, 1, 3, 4));
    pd.pads = TG_INTS(-1, 2, 0, -2);
    CASE(pad, &pd, H, F(-1, 1, 4, 5));
    graph_squeeze_attrs sq;
    graph_attrs_default(GRAPH_OP_squeeze, &sq);
    CASE(squeeze, &sq, H, F(-1, 1, 3, 1, 4));
    graph_unsqueeze_attrs us = {TG_INTS(0, 3)};
    CASE(unsqueeze, &us, H, F(-1, 1, 3, 4));
    graph_expand_attrs ex = {TG_INTS(2, 3, 4)};
    CASE(expand, &ex, H, F(-1, 1, 3, 1));
    ex.shape = TG_INTS(3, 4);
    CASE(expand, &ex, H, F0(-1, 1));
    graph_cast_attrs ca = {GRAPH_F32};
    CASE(cast, &ca, H, F(-1, 1, 3, 4));
    graph_gather_attrs ga = {1};
    CASE(gather, &ga, H, F(-1, 1, 3, 5, 2), IX(0, 5, 2, 3));
    ga.axis = 0;
    CASE(gather, &ga, H, F(-1, 1, 4, 3), IX(-4, 4, 6));
    graph_gather_elements_attrs ge = {1};
    CASE(gather_elements, &ge, H, F(-1, 1, 3, 5), IX(0, 5, 3, 7));
}

/* Random shapes: binary ops on a random shape against a random
 * broadcastable one (dims dropped from the front, dims set to 1), and the
 * reductions over random axes. */
static void random_shape_cases(void)
{
    static const graph_op bin[] = {GRAPH_OP_add, GRAPH_OP_sub, GRAPH_OP_mul, GRAPH_OP_div,
                                   GRAPH_OP_maximum, GRAPH_OP_minimum, GRAPH_OP_pow};
    for (int r = 0; r < 24; r++) {
        graph_op op = bin[r % (int)(sizeof bin / sizeof bin[0])];
        int nd = 1 + (int)(next_u64() % 4), nb = (int)(next_u64() % (uint64_t)(nd + 1));
        in_spec a = F(-1, 1, 1), b = F(-1, 1, 1);
        a.shape.n = nd;
        for (int d = 0; d < nd; d++)
            a.shape.v[d] = 1 + (int64_t)(next_u64() % 3);
        b.shape.n = nb;
        for (int d = 0; d < nb; d++)
            b.shape.v[d] = next_u64() % 3 == 0 ? 1 : a.shape.v[nd - nb + d];
        if (r & 1) { /* either side may be the smaller */
            in_spec t = a;
            a = b;
            b = t;
        }
        double h = H;
        if (op == GRAPH_OP_maximum || op == GRAPH_OP_minimum) {
            a.gen = b.gen = GEN_SPACED;
            h = HK;
        } else if (op == GRAPH_OP_div) {
            b.lo = 0.5, b.hi = 2;
        } else if (op == GRAPH_OP_pow) {
            a.lo = 0.5, a.hi = 2;
        }
        in_spec s2[2] = {a, b};
        run_case(op, NULL, 2, s2, h, __LINE__);
    }
    static const graph_op red[] = {GRAPH_OP_reduce_sum, GRAPH_OP_reduce_mean,
                                   GRAPH_OP_reduce_max};
    for (int r = 0; r < 12; r++) {
        graph_op op = red[r % 3];
        in_spec x = op == GRAPH_OP_reduce_max ? SP(1) : F(-1, 1, 1);
        x.shape.n = 1 + (int)(next_u64() % 4);
        for (int d = 0; d < x.shape.n; d++)
            x.shape.v[d] = 1 + (int64_t)(next_u64() % 4);
        graph_reduce_sum_attrs at;
        graph_attrs_default(GRAPH_OP_reduce_sum, &at);
        for (int d = 0; d < x.shape.n; d++)
            if (next_u64() & 1)
                at.axes.v[at.axes.n++] = (next_u64() & 1) ? d : d - x.shape.n;
        at.keepdim = (int64_t)(next_u64() & 1);
        run_case(op, &at, 1, &x, op == GRAPH_OP_reduce_max ? HK : H, __LINE__);
    }
}

/* ---- the table: coverage and marks ---- */

static void table_checks(void)
{
    for (int op = 0; op < GRAPH_OP_COUNT; op++) {
        const grad_info *gi = &graph_grads[op];
        if (gi->kind == GRAD_KIND_RULE)
            CHECK_MSG(g_cases[op] > 0, "%s has a gradient rule but no case here",
                      graph_ops[op].name);
        else
            CHECK_MSG(gi->why && gi->why[0] && !gi->rule, "%s: %s needs a reason",
                      graph_ops[op].name, grad_kind_name(gi->kind));
    }
    /* non-differentiable ops, a NORULE op, and a non-differentiable input */
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(2, 2), ((float[]){1, 2, 3, 4}));
    eager_tensor *y = eager_floor(x);
    unsigned char yes[2] = {1, 1};
    eager_tensor *gin[2] = {0};
    eager_site here = {EAGER_SITE};
    CHECK(eager_op_grad(GRAPH_OP_floor, &x, 1, NULL, &y, 1, &x, yes, gin, &here) == TG_ERR_ARG);
    check_fail_at("floor: not differentiable: piecewise constant", here.file,
                  here.line, here.func);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(2, 3, 1, 1), 1, -1, 1);
    eager_tensor *xc = eager_reshape(x, TG_INTS(1, 2, 2, 1));
    eager_tensor *yt = eager_conv_transpose2d(xc, w, EAGER_NONE, TG_NOINTS, TG_NOINTS,
                                              TG_NOINTS, TG_NOINTS, 1);
    eager_tensor *ct_in[2] = {xc, w};
    here = (eager_site){EAGER_SITE};
    CHECK(eager_op_grad(GRAPH_OP_conv_transpose2d, ct_in, 2, NULL, &yt, 1, &yt, yes, gin,
                        &here) == TG_ERR_UNSUPPORTED);
    check_fail_at("conv_transpose2d: no gradient rule: not written yet", here.file,
                  here.line, here.func);
    eager_tensor *idx = eager_from_data(GRAPH_I64, TG_SHAPE(2), ((int64_t[]){1, 0}));
    eager_tensor *gy = eager_gather(x, idx, 0);
    eager_tensor *g_in[2] = {x, idx};
    here = (eager_site){EAGER_SITE};
    CHECK(eager_op_grad(GRAPH_OP_gather, g_in, 2, NULL, &gy, 1, &gy, yes, gin, &here) ==
          TG_ERR_ARG);
    check_fail_at("gather: input 1 (i64) carries no gradient", here.file, here.line, here.func);
    eager_release(gy);
    eager_release(idx);
    eager_release(yt);
    eager_release(xc);
    eager_release(w);
    eager_release(y);
    eager_release(x);

    /* graph_backward: a NORULE node on the path fails naming it; a
     * non-scalar loss; a NODIFF node cuts the path (no gradient, -1) */
    graph *g = graph_new("refusals");
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    int32_t a = graph_add_value(g, GRAPH_VALUE_INPUT, &t, NULL), b, s, r;
    graph_add_input(g, a);
    graph_topk_attrs tk;
    graph_attrs_default(GRAPH_OP_topk, &tk);
    int32_t tko[2];
    graph_add_node(g, GRAPH_OP_topk, &a, 1, &tk, tko, 2);
    graph_add_node(g, GRAPH_OP_reduce_sum, &tko[0], 1, NULL, &s, 1);
    CHECK(graph_backward(g, s, &a, 1, &r) == TG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(graph_error(g), "graph_backward: node 0: topk: no gradient rule: not written yet") !=
                  NULL, "got: %s", graph_error(g));
    CHECK(graph_backward(g, tko[0], &a, 1, &r) == TG_ERR_SHAPE);
    CHECK_MSG(strstr(graph_error(g), "the loss must be one f32 element (it has 2") != NULL,
              "got: %s", graph_error(g));
    graph_add_node(g, GRAPH_OP_floor, &a, 1, NULL, &b, 1);
    graph_add_node(g, GRAPH_OP_reduce_sum, &b, 1, NULL, &s, 1);
    r = 7;
    CHECK(graph_backward(g, s, &a, 1, &r) == TG_OK && r == -1);
    graph_free(g);
}

/* ---- max_pool2d_grad: the op the max_pool2d rule emits, against a naive loop ---- */

/* pool_grad_ref: tests/pool_ref_util.h */

/* The chain of registry ops max_pool2d's rule was before max_pool2d_grad:
 * the windows gathered from x padded with -inf, eq against y, the first
 * hit by a cumsum, times dy, added back by scatter_elements, the padding
 * cut off.  Writes dx (n*c*h*w floats); 0 on an error. */
static int old_pool_rule(eager_tensor *x, eager_tensor *y, eager_tensor *dy, const int64_t k[2],
                         const int64_t s[2], const int64_t p[4], float *dx)
{
    const graph_type *xt = eager_type(x), *yt = eager_type(y);
    int64_t n = xt->dim[0], c = xt->dim[1], h = xt->dim[2], w = xt->dim[3];
    int64_t oh = yt->dim[2], ow = yt->dim[3], kk = k[0] * k[1], l = oh * ow * kk;
    int64_t hp = h + p[0] + p[2], wp = w + p[1] + p[3];
    int64_t *idx = malloc((size_t)l * sizeof *idx), at = 0;
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++)
            for (int64_t u = 0; u < k[0]; u++)
                for (int64_t v = 0; v < k[1]; v++)
                    idx[at++] = (i * s[0] + u) * wp + j * s[1] + v;
    eager_pool_push();
    eager_tensor *it = eager_from_data(GRAPH_I64, TG_SHAPE(l), idx);
    free(idx);
    eager_tensor *xp = eager_pad(x, TG_INTS(0, 0, p[0], p[1], 0, 0, p[2], p[3]), -INFINITY);
    eager_tensor *win = eager_gather(eager_reshape(xp, TG_INTS(n, c, hp * wp)), it, 2);
    win = eager_reshape(win, TG_INTS(n, c, oh, ow, kk));
    eager_tensor *hit = eager_cast(eager_eq(win, eager_reshape(y, TG_INTS(n, c, oh, ow, 1))),
                                   GRAPH_F32);
    eager_tensor *seen = eager_cumsum(hit, 4, 0, 0);
    eager_tensor *first = eager_mul(hit, eager_cast(eager_eq(seen, eager_scalar(1.0)), GRAPH_F32));
    eager_tensor *contrib = eager_reshape(
        eager_mul(first, eager_reshape(dy, TG_INTS(n, c, oh, ow, 1))), TG_INTS(n, c, l));
    eager_tensor *ie = eager_expand(eager_reshape(it, TG_INTS(1, 1, l)), TG_INTS(n, c, l));
    eager_tensor *gp = eager_scatter_elements(eager_zeros(GRAPH_F32, TG_SHAPE(n, c, hp * wp)),
                                              ie, contrib, 2, GRAPH_SCATTER_ADD);
    gp = eager_slice(eager_reshape(gp, TG_INTS(n, c, hp, wp)), TG_INTS(2, 3),
                     TG_INTS(p[0], p[1]), TG_INTS(p[0] + h, p[1] + w), TG_NOINTS);
    int ok = gp != NULL;
    if (ok)
        memcpy(dx, eager_peek(gp), (size_t)(n * c * h * w) * sizeof *dx);
    eager_pool_pop();
    return ok;
}

/* x's values: 0 distinct (a permutation of multiples of 0.25), 1 few
 * levels (ties everywhere, +0 and -0 among them), 2 as 1 with NaNs and
 * planes of -inf (a window of -inf whose first element is padding passes
 * nothing; one whose first element is in bounds passes to it). */
static void pool_grad_fill(float *x, int64_t n, int64_t plane, int mode)
{
    spaced_reset(n);
    for (int64_t i = 0; i < n; i++) {
        if (mode == 0) {
            x[i] = 0.25f * (float)(g_perm[i] - n / 2);
            continue;
        }
        int lv = (int)(next_u64() % 5);
        x[i] = lv == 0 ? -0.0f : lv == 1 ? 0.0f : (float)(lv - 3);
        if (mode == 2 && next_u64() % 23 == 0)
            x[i] = NAN;
    }
    if (mode == 2 && n >= 2 * plane)
        for (int64_t i = plane; i < 2 * plane; i++)
            x[i] = (next_u64() % 4) ? -INFINITY : NAN;
}

static void max_pool_grad_checks(void)
{
    const pool_case *cs = pool_cases;
    eager_site here = {EAGER_SITE};
    for (int ci = 0; ci < POOL_NCASES; ci++)
        for (int mode = 0; mode < 3; mode++) {
            int64_t k[2], st[2], p[4], oh, ow;
            pool_case_geom(&cs[ci], k, st, p, &oh, &ow);
            int64_t h = cs[ci].h, w = cs[ci].w, nc = cs[ci].n * cs[ci].c;
            int64_t nx = nc * h * w, ny = nc * oh * ow, at = 0;
            float *x = malloc((size_t)nx * sizeof *x), *dy = malloc((size_t)ny * sizeof *dy);
            float *want = malloc((size_t)nx * sizeof *want);
            pool_grad_fill(x, nx, h * w, mode);
            for (int64_t i = 0; i < ny; i++)
                dy[i] = (float)(2 * urand() - 1);
            dy[0] = -0.0f;
            pool_grad_ref(x, dy, want, nc, h, w, oh, ow, k, st, p);
            eager_tensor *xt = eager_from_data(GRAPH_F32, TG_SHAPE(cs[ci].n, cs[ci].c, h, w), x);
            eager_tensor *dyt =
                eager_from_data(GRAPH_F32, TG_SHAPE(cs[ci].n, cs[ci].c, oh, ow), dy);
            /* the op itself */
            eager_tensor *dx = eager_max_pool2d_grad(dyt, xt, cs[ci].k, cs[ci].s, cs[ci].p);
            CHECK_MSG(dx && eager_numel(dx) == nx, "case %d mode %d: max_pool2d_grad: %s", ci,
                      mode, eager_error());
            int same = dx && same_bits(eager_peek(dx), want, nx, &at);
            if (dx)
                CHECK_MSG(same,
                          "case %d mode %d: max_pool2d_grad vs the naive loop at %lld: %g vs %g",
                          ci, mode, (long long)at, ((const float *)eager_peek(dx))[at], want[at]);
            /* the rule, eager builder: the same op */
            graph_max_pool2d_attrs mp = {cs[ci].k, cs[ci].s, cs[ci].p};
            eager_tensor *y = eager_max_pool2d(xt, cs[ci].k, cs[ci].s, cs[ci].p);
            unsigned char yes = 1;
            eager_tensor *gin = NULL;
            CHECK(eager_op_grad(GRAPH_OP_max_pool2d, &xt, 1, &mp, &y, 1, &dyt, &yes, &gin,
                                &here) == TG_OK);
            same = gin && same_bits(eager_peek(gin), want, nx, &at);
            if (gin)
                CHECK_MSG(same,
                          "case %d mode %d: the max_pool2d rule vs the naive loop at %lld", ci,
                          mode, (long long)at);
            /* the rule's former chain: the same bits where windows do not
             * overlap; where they do, the additions run in the same order */
            float *old = malloc((size_t)nx * sizeof *old);
            CHECK_MSG(y && old_pool_rule(xt, y, dyt, k, st, p, old), "case %d: old rule: %s", ci,
                      eager_error());
            same = same_bits(old, want, nx, &at);
            CHECK_MSG(same,
                      "case %d mode %d: the former rule's chain vs the naive loop at %lld: %g vs "
                      "%g", ci, mode, (long long)at, old[at], want[at]);
            free(old);
            /* replay of the op (the plan's CPU kernel, threads) */
            graph *g = graph_new("pool_grad");
            int32_t in[2], out;
            in[0] = graph_add_value(g, GRAPH_VALUE_INPUT, eager_type(dyt), "dy");
            in[1] = graph_add_value(g, GRAPH_VALUE_INPUT, eager_type(xt), "x");
            graph_add_input(g, in[0]);
            graph_add_input(g, in[1]);
            graph_max_pool2d_grad_attrs ga = {cs[ci].k, cs[ci].s, cs[ci].p};
            CHECK(graph_add_node(g, GRAPH_OP_max_pool2d_grad, in, 2, &ga, &out, 1) >= 0);
            graph_add_output(g, out, "dx");
            char err[256] = "";
            replay_opts ro = {.threads = 2};
            replay_plan *rp = replay_compile(g, &ro, err, sizeof err);
            CHECK_MSG(rp != NULL, "case %d: compile: %s", ci, err);
            replay_session *rs = rp ? replay_session_new(rp, NULL, 0) : NULL;
            float *got = malloc((size_t)nx * sizeof *got);
            memset(got, 0xff, (size_t)nx * sizeof *got); /* NaNs where nothing is written */
            replay_tensor ins[2] = {{.name = "dy", .type = *eager_type(dyt), .input = dy},
                                    {.name = "x", .type = *eager_type(xt), .input = x}};
            replay_tensor outs = {.name = "dx", .data = got, .size = (size_t)nx * sizeof *got};
            CHECK_MSG(rs && replay_run(rs, ins, 2, &outs, 1) == TG_OK, "case %d: replay: %s",
                      ci, replay_session_error(rs));
            same = same_bits(got, want, nx, &at);
            CHECK_MSG(same,
                      "case %d mode %d: replayed max_pool2d_grad vs the naive loop at %lld", ci,
                      mode, (long long)at);
            replay_session_free(rs);
            replay_plan_free(rp);
            graph_free(g);
            free(got);
            release_n(&gin, 1);
            release_n(&y, 1);
            release_n(&dx, 1);
            eager_release(dyt);
            eager_release(xt);
            free(want);
            free(dy);
            free(x);
        }
    /* shape checks name what is wrong */
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(1, 2, 6, 6), 3, -1, 1);
    eager_tensor *dy = eager_rand_uniform(TG_SHAPE(1, 2, 3, 2), 4, -1, 1);
    eager_tensor *x3 = eager_rand_uniform(TG_SHAPE(2, 6, 6), 5, -1, 1);
    CHECK_FAILS(eager_max_pool2d_grad(dy, x, TG_INTS(2), TG_NOINTS, TG_NOINTS),
                "max_pool2d_grad: [1,2,3,2] x [1,2,6,6]: dy is f32 [1,2,3,2], max_pool2d "
                "of x gives f32 [1,2,3,3]: they must match");
    CHECK_FAILS(eager_max_pool2d_grad(dy, x3, TG_INTS(2), TG_NOINTS, TG_NOINTS),
                "x must be 4-D [N,C,H,W], got 3-D");
    CHECK_FAILS(eager_max_pool2d_grad(dy, x, TG_INTS(2), TG_NOINTS, TG_INTS(2)),
                "padding [2] must be smaller than the kernel [2]");
    eager_release(x3);
    eager_release(dy);
    eager_release(x);
}

/* ---- a two-layer MLP with cross-entropy, as one graph ---- */

static void mlp_check(void)
{
    /* loss = mean_n(-log_softmax(linear(relu(linear(x, w1, b1)), w2, b2))[n, y_n])
     *        + 0.01 * sum(w1 * w1)     (w1 feeds two branches) */
    graph *g = graph_new("mlp");
    enum { N = 4, D = 5, HID = 6, C = 3 };
    graph_type tx = {GRAPH_F32, 2, {N, D}}, tw1 = {GRAPH_F32, 2, {HID, D}},
               tb1 = {GRAPH_F32, 1, {HID}}, tw2 = {GRAPH_F32, 2, {C, HID}},
               tb2 = {GRAPH_F32, 1, {C}}, ty = {GRAPH_I64, 2, {N, 1}};
    const graph_type *ts[6] = {&tx, &tw1, &tb1, &tw2, &tb2, &ty};
    int32_t v[6];
    for (int i = 0; i < 6; i++) {
        v[i] = graph_add_value(g, GRAPH_VALUE_INPUT, ts[i], NULL);
        graph_add_input(g, v[i]);
    }
    int32_t h1, a1, z, lsm, pick, m, l1, sq, reg, loss, c01;
    graph_add_node(g, GRAPH_OP_linear, (int32_t[3]){v[0], v[1], v[2]}, 3, NULL, &h1, 1);
    graph_add_node(g, GRAPH_OP_relu, &h1, 1, NULL, &a1, 1);
    graph_add_node(g, GRAPH_OP_linear, (int32_t[3]){a1, v[3], v[4]}, 3, NULL, &z, 1);
    graph_log_softmax_attrs ls = {-1};
    graph_add_node(g, GRAPH_OP_log_softmax, &z, 1, &ls, &lsm, 1);
    graph_gather_elements_attrs ge = {1};
    graph_add_node(g, GRAPH_OP_gather_elements, (int32_t[2]){lsm, v[5]}, 2, &ge, &pick, 1);
    graph_add_node(g, GRAPH_OP_reduce_mean, &pick, 1, NULL, &m, 1);
    graph_add_node(g, GRAPH_OP_neg, &m, 1, NULL, &l1, 1);
    graph_add_node(g, GRAPH_OP_mul, (int32_t[2]){v[1], v[1]}, 2, NULL, &sq, 1);
    graph_add_node(g, GRAPH_OP_reduce_sum, &sq, 1, NULL, &reg, 1);
    graph_type t0 = {GRAPH_F32, 0, {0}};
    c01 = graph_add_value(g, GRAPH_VALUE_CONST, &t0, NULL);
    graph_set_data(g, c01, &(float){0.01f}, sizeof(float));
    graph_add_node(g, GRAPH_OP_mul, (int32_t[2]){reg, c01}, 2, NULL, &reg, 1);
    graph_add_node(g, GRAPH_OP_add, (int32_t[2]){l1, reg}, 2, NULL, &loss, 1);
    graph_add_output(g, loss, "loss");
    int32_t grads[5];
    CHECK_MSG(graph_backward(g, loss, v, 5, grads) == TG_OK, "mlp backward: %s", graph_error(g));
    graph *fwd = graph_clone(g); /* the forward alone: outputs = loss */
    char name[8];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "g%d", i);
        CHECK(grads[i] >= 0);
        graph_add_output(g, grads[i], name);
    }
    in_spec sp[6] = {F(-1, 1, N, D), F(-1, 1, HID, D), F(-0.5, 0.5, HID), F(-1, 1, C, HID),
                     F(-0.5, 0.5, C), IX(0, C, N, 1)};
    eager_tensor *in[6], *out[6] = {0};
    for (int i = 0; i < 6; i++)
        in[i] = make_input(&sp[i]);
    CHECK_MSG(eager_interpret(g, in, 6, out, 6, NULL) == TG_OK, "mlp: %s", eager_error());
    double worst = 0;
    int count = 0;
    for (int i = 0; i < 5 && out[i + 1]; i++) {
        float *x = eager_data_mut(in[i]);
        const float *ga = eager_peek(out[i + 1]);
        for (int64_t e = 0; e < eager_numel(in[i]); e++) {
            float x0 = x[e], xp = (float)(x0 + 1e-3), xm = (float)(x0 - 1e-3);
            eager_tensor *lp = NULL, *lm = NULL;
            x[e] = xp;
            eager_interpret(fwd, in, 6, &lp, 1, NULL);
            x[e] = xm;
            eager_interpret(fwd, in, 6, &lm, 1, NULL);
            x[e] = x0;
            double fd = ((double)*(const float *)eager_peek(lp) -
                         (double)*(const float *)eager_peek(lm)) / ((double)xp - (double)xm);
            eager_release(lp);
            eager_release(lm);
            worst = fmax(worst, fabs(fd - (double)ga[e]));
            count++;
        }
    }
    printf("mlp: %d gradient elements, worst |rule - finite difference| %.2e\n", count, worst);
    CHECK_MSG(worst <= 2e-3, "mlp gradients vs finite differences: %g", worst);
    release_n(out, 6);
    release_n(in, 6);
    graph_free(fwd);
    graph_free(g);
}

/* ---- a traced MLP step: its backward appended by graph_backward, then
 * optimized at -O2 and replayed, against eager autograd ---- */

static eager_tensor *traced_mlp(eager_tensor *const *p, eager_tensor *labels)
{
    eager_tensor *h = eager_gelu(eager_linear(p[0], p[1], p[2]));
    eager_tensor *z = eager_linear(h, p[3], p[4]);
    return eager_cross_entropy(z, labels, 0.1);
}

static void traced_backward(void)
{
    enum { B = 6, DI = 5, HD = 8, NC = 4 };
    in_spec sp[5] = {F(-1, 1, B, DI), F(-0.6, 0.6, HD, DI), F(-0.1, 0.1, HD),
                     F(-0.6, 0.6, NC, HD), F(-0.1, 0.1, NC)};
    const char *names[5] = {"x", "w1", "b1", "w2", "b2"};
    eager_tensor *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = make_input(&sp[i]);
    eager_tensor *labels = eager_from_data(GRAPH_I64, TG_SHAPE(B), ((int64_t[]){0, 3, 1, 2, 3, 0}));
    /* eager autograd: the reference */
    for (int i = 1; i < 5; i++)
        eager_requires_grad(p[i], 1);
    eager_pool_push();
    eager_tensor *l0 = traced_mlp(p, labels);
    double loss0 = eager_item(l0);
    CHECK(eager_backward(l0) == TG_OK);
    eager_pool_pop();
    for (int i = 1; i < 5; i++)
        eager_requires_grad(p[i], 0);
    /* the traced forward, its backward appended */
    eager_pool_push();
    CHECK(trace_begin_at(EAGER_SITE, NULL) == TG_OK);
    for (int i = 0; i < 5; i++)
        trace_input_at(EAGER_SITE, p[i], names[i]);
    trace_output_at(EAGER_SITE, traced_mlp(p, labels), "loss");
    graph *g = trace_freeze_at(EAGER_SITE);
    eager_pool_pop();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    if (!g)
        goto done;
    int32_t wrt[4], grads[4];
    for (int i = 0; i < 4; i++)
        wrt[i] = g->inputs[i + 1];
    int32_t nodes_fwd = graph_live_nodes(g);
    CHECK_MSG(graph_backward(g, g->outputs[0].value, wrt, 4, grads) == TG_OK, "backward: %s",
              graph_error(g));
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "d_%s", names[i + 1]);
        CHECK(grads[i] >= 0 && graph_add_output(g, grads[i], name) == TG_OK);
    }
    CHECK_MSG(graph_verify(g, 0) == TG_OK, "the joint graph verifies: %s", graph_error(g));
    int32_t nodes_joint = graph_live_nodes(g);
    opt_options o = opt_default_options();
    o.level = 2;
    opt_report rep;
    char err[512] = "";
    CHECK_MSG(opt_optimize(g, &o, &rep, err, sizeof err) == TG_OK, "-O2: %s", err);
    replay_plan *plan = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = plan ? replay_session_new(plan, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "compiles: %s", err);
    if (s) {
        replay_tensor in[5], out[5];
        memset(out, 0, sizeof out);
        for (int i = 0; i < 5; i++)
            in[i] = (replay_tensor){.name = names[i], .type = *eager_type(p[i]),
                                    .input = eager_peek(p[i])};
        CHECK_MSG(replay_run(s, in, 5, out, 5) == TG_OK, "replay: %s", replay_session_error(s));
        if (out[0].data)
            CHECK_NEAR(*(const float *)out[0].data, loss0, 1e-5);
        double worst = 0;
        for (int i = 1; i < 5 && out[i].data; i++) {
            const eager_tensor *ge = eager_grad(p[i]);
            double e = check_normalized_error(out[i].data, eager_peek(ge), eager_numel(ge));
            worst = fmax(worst, e);
            CHECK_MSG(e <= 1e-5, "d_%s replayed at -O2 vs eager autograd: %g", names[i], e);
        }
        printf("traced mlp: %d forward nodes, %d with the backward, %d after -O2; replayed "
               "gradients vs eager autograd: worst normalized error %.2e\n", (int)nodes_fwd,
               (int)nodes_joint, (int)graph_live_nodes(g), worst);
    }
    replay_session_free(s);
    replay_plan_free(plan);
    graph_free(g);
done:
    for (int i = 1; i < 5; i++)
        eager_zero_grad(p[i]);
    release_n(p, 5);
    eager_release(labels);
}

int main(void)
{
    unary_cases();
    binary_cases();
    linalg_cases();
    reduce_cases();
    shape_cases();
    random_shape_cases();
    table_checks();
    max_pool_grad_checks();
    mlp_check();
    traced_backward();
    free(g_perm);
    int ncases = 0;
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        ncases += g_cases[op];
    printf("gradient rules: %d cases, %d elements checked against finite differences, worst "
           "normalized error %.2e\n", ncases, g_checked, g_worst);
    CHECK_MSG(eager_live_tensors() == 0, "%ld tensors leaked", eager_live_tensors());
    return check_done();
}
