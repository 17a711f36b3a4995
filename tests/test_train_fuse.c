/*
 * test_train_fuse.c - the optimizer's rewrites of a training step's
 * conv - BN - relu - pool blocks, each against naive loops written here:
 *
 * - simplify (-O1): relu_grad(max_pool2d_grad(g, y), y) becomes
 *   max_pool2d_grad(relu_grad(g, max_pool2d(y)), y).  On every pool shape
 *   of test_grad's max_pool2d_grad cases (overlapping windows, padding,
 *   gaps, uneven attributes) and on y full of ties, zeros of both signs,
 *   NaN and infinities (relu's output holds +0 for every negative, so
 *   windows tie often), the optimized graph's gradient equals, bit for
 *   bit, y > 0 ? (the max_pool2d_grad definition of pool_ref_util.h) : 0.
 *   The rule does not fire without the forward's pool, for another y, or
 *   when the pool gradient has a second reader.
 * - epilogue (-O2): a relu alone after batch_norm_train becomes its relu
 *   attribute, and a max_pool2d of that its output 5 (no pool, the CNN's
 *   2x2 on an odd height, a padded overlapping 3x3): the output against
 *   batch norm, relu and pool in double (1e-5), and the whole step
 *   (output, running statistics, gradients) the same bits as the
 *   unoptimized graph; set to eval, the fused node gives batch_norm, relu
 *   and max_pool2d again (against the running statistics' formula).
 * - epilogue (-O2), backward: a batch_norm_train_grad of a max_pool2d_grad
 *   becomes batch_norm_pool_grad; the op itself gives its two ops' bits on
 *   every pool case (ties, NaN), at one and two threads.
 * - batch_norm_train's gradient rule for the fused forms (a graph
 *   differentiated after -O2) gives the unfused graph's gradients bit for
 *   bit; eager, which keeps only the batch statistics, refuses it with a
 *   message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/conv_attrs.h"
#include "../graph/graph_impl.h"
#include "check.h"
#define TU_SEED 0x243f6a8885a308d3ull
#include "rand_util.h"
#include "eager/eager.h"
#include "eager/grad_eager.h"
#include "eager/interp.h"
#include "graph/grad.h"
#include "graph/graph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "pool_ref_util.h"

static int count_live(const graph *g, graph_op op)
{
    int n = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        n += !(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op;
    return n;
}

static tg_status optimize(graph *g, int level, char *err, size_t errlen)
{
    opt_options o = opt_default_options();
    o.level = level;
    opt_report rep;
    return opt_optimize(g, &o, &rep, err, errlen);
}

/* ---- relu_grad past max_pool2d_grad ---- */

/* z before the relu: values that make ties, both zeros and the specials. */
static float z_value(int mode)
{
    static const float pick[] = {-2.0f, -1.0f, -0.0f, 0.0f, 1.0f, 1.0f, 2.0f, 0.5f};
    double u = urand();
    if (mode == 0)
        return (float)(4 * u - 2);
    if (mode == 1)
        return pick[next_u64() % 8];
    if (u < 0.05)
        return NAN;
    if (u < 0.10)
        return INFINITY;
    if (u < 0.15)
        return -INFINITY;
    return pick[next_u64() % 8];
}

/* Which variant of the graph: the rule's case, or one it must leave. */
enum { PLAIN, NO_POOL, OTHER_Y, TWO_READERS };

/*
 * y = relu(z); p = max_pool2d(y); d = relu_grad(max_pool2d_grad(g, y), y).
 * NO_POOL: no forward pool; OTHER_Y: relu_grad reads relu(z2) instead;
 * TWO_READERS: the pool gradient is a graph output too.  Inputs z, g, z2
 * and one (all ones).
 */
static graph *pool_graph(int variant, const graph_type *tz, const graph_type *tg,
                         const graph_max_pool2d_attrs *mp)
{
    graph *g = graph_new("relu_pool_grad");
    int32_t z = graph_add_value(g, GRAPH_VALUE_INPUT, tz, "z");
    int32_t gv = graph_add_value(g, GRAPH_VALUE_INPUT, tg, "g");
    int32_t z2 = graph_add_value(g, GRAPH_VALUE_INPUT, tz, "z2");
    int32_t one = graph_add_value(g, GRAPH_VALUE_INPUT, tz, "one");
    graph_add_input(g, z);
    graph_add_input(g, gv);
    graph_add_input(g, z2);
    graph_add_input(g, one);
    int32_t y, y2, p = -1, a, d, e;
    graph_add_node(g, GRAPH_OP_relu, &z, 1, NULL, &y, 1);
    graph_add_node(g, GRAPH_OP_relu, &z2, 1, NULL, &y2, 1);
    if (variant != NO_POOL)
        graph_add_node(g, GRAPH_OP_max_pool2d, &y, 1, mp, &p, 1);
    graph_max_pool2d_grad_attrs ga = {mp->kernel, mp->stride, mp->padding};
    graph_add_node(g, GRAPH_OP_max_pool2d_grad, (int32_t[]){gv, y}, 2, &ga, &a, 1);
    graph_add_node(g, GRAPH_OP_relu_grad, (int32_t[]){a, variant == OTHER_Y ? y2 : y}, 2, NULL,
                   &d, 1);
    /* d is read (x 1, exact): a graph output's producer is never rewritten */
    graph_add_node(g, GRAPH_OP_mul, (int32_t[]){d, one}, 2, NULL, &e, 1);
    graph_add_output(g, e, "d");
    graph_add_output(g, y2, "y2");
    if (p >= 0)
        graph_add_output(g, p, "p");
    if (variant == TWO_READERS)
        graph_add_output(g, a, "a");
    return g;
}

static void test_relu_grad_pool(void)
{
    const pool_case *cs = pool_cases;
    for (int ci = 0; ci < POOL_NCASES; ci++)
        for (int mode = 0; mode < 3; mode++) {
            int64_t k[2], st[2], p[4], oh, ow;
            pool_case_geom(&cs[ci], k, st, p, &oh, &ow);
            int64_t h = cs[ci].h, w = cs[ci].w, nc = cs[ci].n * cs[ci].c;
            int64_t nx = nc * h * w, ny = nc * oh * ow, at = 0;
            float *z = malloc((size_t)nx * sizeof *z), *y = malloc((size_t)nx * sizeof *y);
            float *dy = malloc((size_t)ny * sizeof *dy), *want = malloc((size_t)nx * sizeof *want);
            for (int64_t i = 0; i < nx; i++) {
                z[i] = z_value(mode);
                y[i] = z[i] <= 0.0f ? 0.0f : z[i]; /* relu */
            }
            for (int64_t i = 0; i < ny; i++)
                dy[i] = mode == 2 && i % 17 == 3 ? NAN : (float)(2 * urand() - 1);
            dy[0] = -0.0f;
            pool_grad_ref(y, dy, want, nc, h, w, oh, ow, k, st, p);
            for (int64_t i = 0; i < nx; i++)
                want[i] = y[i] > 0.0f ? want[i] : 0.0f; /* relu_grad */
            graph_type tz = {GRAPH_F32, 4, {cs[ci].n, cs[ci].c, h, w}};
            graph_type tg = {GRAPH_F32, 4, {cs[ci].n, cs[ci].c, oh, ow}};
            graph_max_pool2d_attrs mp = {cs[ci].k, cs[ci].s, cs[ci].p};
            eager_pool_push();
            graph_ints sx = TG_SHAPE(cs[ci].n, cs[ci].c, h, w);
            eager_tensor *in[4] = {eager_from_data(GRAPH_F32, sx, z),
                                   eager_from_data(GRAPH_F32, TG_SHAPE(cs[ci].n, cs[ci].c, oh, ow), dy),
                                   eager_from_data(GRAPH_F32, sx, y), eager_ones(GRAPH_F32, sx)};
            for (int variant = PLAIN; variant <= TWO_READERS; variant++) {
                graph *g = pool_graph(variant, &tz, &tg, &mp);
                char err[512] = "";
                CHECK_MSG(optimize(g, 1, err, sizeof err) == TG_OK, "case %d: -O1: %s", ci, err);
                /* fired: relu_grad on the forward pool's output, one max_pool2d_grad */
                int fired = 0;
                for (int32_t i = 0; i < g->nnodes; i++) {
                    const graph_node *n = &g->nodes[i];
                    if (!(n->flags & GRAPH_NODE_DEAD) && n->op == GRAPH_OP_relu_grad) {
                        int32_t pn = g->values[n->in[1]].node;
                        fired = pn >= 0 && g->nodes[pn].op == GRAPH_OP_max_pool2d &&
                                graph_type_eq(&g->values[n->out[0]].type, &tg);
                    }
                }
                CHECK_MSG(fired == (variant == PLAIN) && count_live(g, GRAPH_OP_relu_grad) == 1 &&
                              count_live(g, GRAPH_OP_max_pool2d_grad) == 1,
                          "case %d variant %d: rule fired %d (want %d), %d relu_grad, %d "
                          "max_pool2d_grad", ci, variant, fired, variant == PLAIN,
                          count_live(g, GRAPH_OP_relu_grad),
                          count_live(g, GRAPH_OP_max_pool2d_grad));
                eager_tensor *out[4] = {NULL};
                CHECK_MSG(eager_interpret(g, in, 4, out, g->noutputs, NULL) == TG_OK,
                          "case %d: interpret: %s", ci, eager_error());
                if (variant != OTHER_Y && out[0]) {
                    int same = same_bits(eager_peek(out[0]), want, nx, &at);
                    CHECK_MSG(same,
                              "case %d mode %d variant %d: gradient vs the naive loops at %lld: "
                              "%g vs %g", ci, mode, variant, (long long)at,
                              ((const float *)eager_peek(out[0]))[at], want[at]);
                }
                for (int o = 0; o < 4; o++)
                    eager_release(out[o]);
                graph_free(g);
            }
            eager_pool_pop();
            free(z);
            free(y);
            free(dy);
            free(want);
        }
}

/* ---- batch_norm_train + relu (+ max_pool2d) ---- */

enum { N = 4, C = 3, H = 5, W = 6, M = N * H * W, NX = N * C * H * W };

/* The pools tried after the relu: none, the CNN's 2x2 (H = 5: the last
 * row unused), and an overlapping padded 3x3 (the general plane path). */
static const struct {
    const char *attrs; /* IR */
    int64_t k, s, p, oh, ow;
} pools[] = {
    {NULL, 0, 0, 0, H, W},
    {"{kernel=[2,2]}", 2, 2, 0, 2, 3},
    {"{kernel=[3,3], stride=[2,2], padding=[1,1]}", 3, 2, 1, 3, 3},
};

/* relu(batch_norm(x)) with the batch's statistics in double, then the
 * pool (max over the in-bounds window elements); the new running
 * statistics (momentum 0.1, the variance unbiased). */
static void bn_relu_ref(int pi, const float *x, const float *w, const float *b,
                        const float *rm, const float *rv, double *out, double *nrm, double *nrv)
{
    static double y[NX];
    for (int c = 0; c < C; c++) {
        double s = 0, q = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H * W; i++)
                s += x[(n * C + c) * H * W + i];
        double mean = s / M;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H * W; i++) {
                double d = x[(n * C + c) * H * W + i] - mean;
                q += d * d;
            }
        double var = q / M, r = 1.0 / sqrt(var + 1e-5);
        nrm[c] = 0.9 * rm[c] + 0.1 * mean;
        nrv[c] = 0.9 * rv[c] + 0.1 * q / (M - 1);
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H * W; i++) {
                int64_t j = (n * C + c) * H * W + i;
                double v = (x[j] - mean) * r * w[c] + b[c];
                y[j] = v > 0 ? v : 0;
            }
    }
    int64_t oh = pools[pi].oh, ow = pools[pi].ow;
    for (int64_t pl = 0; pl < N * C; pl++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                if (!pools[pi].attrs) {
                    out[(pl * oh + i) * ow + j] = y[(pl * H + i) * W + j];
                    continue;
                }
                double m = -INFINITY;
                for (int64_t u = 0; u < pools[pi].k; u++)
                    for (int64_t v = 0; v < pools[pi].k; v++) {
                        int64_t r = i * pools[pi].s - pools[pi].p + u;
                        int64_t cc = j * pools[pi].s - pools[pi].p + v;
                        if (r >= 0 && r < H && cc >= 0 && cc < W && y[(pl * H + r) * W + cc] > m)
                            m = y[(pl * H + r) * W + cc];
                    }
                out[(pl * oh + i) * ow + j] = m;
            }
}

/*
 * A training step's block: o = [max_pool2d](relu(bn(x))), loss = sum(o *
 * dy), the gradients of x, w and b; outputs o, the running statistics,
 * gx, gw, gb.  fused: the batch norm written as -O2 makes it ({relu=1},
 * the pool as its output 5) and no relu or pool node.
 */
static graph *bn_graph(int pi, int fused, int backward)
{
    char ir[2048], dys[64], pool[160], bnat[200];
    const char *pa = pools[pi].attrs;
    snprintf(dys, sizeof dys, "f32[4,3,%lld,%lld]", (long long)pools[pi].oh,
             (long long)pools[pi].ow);
    if (!fused) {
        bnat[0] = 0;
        if (pa)
            snprintf(pool, sizeof pool,
                     "  %%6: f32[4,3,5,6] = relu(%%1)\n  %%9: %s = max_pool2d(%%6) %s\n", dys,
                     pa);
        else
            snprintf(pool, sizeof pool, "  %%9: f32[4,3,5,6] = relu(%%1)\n");
    } else {
        /* the pool attributes as batch_norm_train's pool_* */
        char pk[120] = "";
        if (pa) {
            snprintf(pk, sizeof pk, ", %s", pa + 1);
            pk[strlen(pk) - 1] = 0;
            char *q;
            while ((q = strstr(pk, " kernel=")) || (q = strstr(pk, " stride=")) ||
                   (q = strstr(pk, " padding="))) {
                char rest[120];
                snprintf(rest, sizeof rest, "%s", q + 1);
                snprintf(q, sizeof pk - (size_t)(q - pk), " pool_%s", rest);
            }
        }
        snprintf(bnat, sizeof bnat, " {relu=1%s}", pk);
        pool[0] = 0;
    }
    const char *o = fused ? (pa ? "%6" : "%1") : "%9";
    snprintf(ir, sizeof ir,
             "graph t(%%x: f32[4,3,5,6], %%w: f32[3], %%b: f32[3], %%rm: f32[3], %%rv: f32[3], "
             "%%dy: %s) -> (o: %s, nrm: f32[3], nrv: f32[3]) {\n"
             "  %%1: f32[4,3,5,6], %%2: f32[3], %%3: f32[3], %%4: f32[3], %%5: f32[3]%s%s = "
             "batch_norm_train(%%x, %%w, %%b, %%rm, %%rv)%s\n"
             "%s"
             "  %%7: %s = mul(%s, %%dy)\n"
             "  %%8: f32[] = reduce_sum(%%7)\n"
             "  return o = %s\n  return nrm = %%2\n  return nrv = %%3\n}\n",
             dys, dys, fused && pa ? ", %6: " : "", fused && pa ? dys : "", bnat, pool, dys, o,
             o);
    char err[256] = "";
    graph *g = graph_parse(ir, strlen(ir), err, sizeof err);
    CHECK_MSG(g != NULL, "parse: %s\n%s", err, ir);
    if (!g)
        return NULL;
    if (backward) {
        int32_t loss = -1;
        for (int32_t i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == GRAPH_OP_reduce_sum)
                loss = g->nodes[i].out[0];
        int32_t wrt[3] = {g->inputs[0], g->inputs[1], g->inputs[2]}, grads[3] = {-1, -1, -1};
        CHECK_MSG(graph_backward(g, loss, wrt, 3, grads) == TG_OK, "%s", graph_error(g));
        static const char *const names[3] = {"gx", "gw", "gb"};
        for (int k = 0; k < 3; k++)
            CHECK(grads[k] >= 0 && graph_add_output(g, grads[k], names[k]) == TG_OK);
    }
    return g;
}

static int outputs_same(eager_tensor *const *a, eager_tensor *const *b, int n, int *which,
                        int64_t *at)
{
    for (int k = 0; k < n; k++) {
        *which = k;
        if (!a[k] || !b[k] || eager_numel(a[k]) != eager_numel(b[k]) ||
            !same_bits(eager_peek(a[k]), eager_peek(b[k]), eager_numel(a[k]), at))
            return 0;
    }
    return 1;
}

static void release6(eager_tensor **a, eager_tensor **b)
{
    for (int k = 0; k < 6; k++) {
        eager_release(a[k]);
        eager_release(b[k]);
        a[k] = b[k] = NULL;
    }
}

/* The fused batch norms of g: how many, and how many with a pool. */
static int fused_bns(const graph *g, int *with_pool)
{
    int n = 0;
    *with_pool = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *nd = &g->nodes[i];
        if ((nd->flags & GRAPH_NODE_DEAD) || nd->op != GRAPH_OP_batch_norm_train)
            continue;
        const graph_batch_norm_train_attrs *a = tg_node_attrs(nd);
        n += a->relu == 1;
        *with_pool += a->pool_kernel.n > 0 && nd->nout == 6;
    }
    return n;
}

static void test_bn_relu_pool(int pi)
{
    int pooled = pools[pi].attrs != NULL;
    int64_t no = N * C * pools[pi].oh * pools[pi].ow;
    eager_pool_push();
    eager_tensor *in[6] = {eager_rand_normal(TG_SHAPE(N, C, H, W), 61 + pi, 0.5, 2),
                           eager_rand_uniform(TG_SHAPE(C), 62, 0.5, 2),
                           eager_rand_uniform(TG_SHAPE(C), 63, -1, 1),
                           eager_rand_uniform(TG_SHAPE(C), 64, -0.5, 0.5),
                           eager_rand_uniform(TG_SHAPE(C), 65, 0.5, 1.5),
                           eager_rand_uniform(TG_SHAPE(N, C, pools[pi].oh, pools[pi].ow), 66,
                                              -1, 1)};
    static double want[NX];
    double nrm[C], nrv[C];
    bn_relu_ref(pi, eager_peek(in[0]), eager_peek(in[1]), eager_peek(in[2]), eager_peek(in[3]),
                eager_peek(in[4]), want, nrm, nrv);

    /* -O2 fuses the relu (and the pool); the step's outputs are the
     * unoptimized graph's bits */
    graph *ref = bn_graph(pi, 0, 1), *g = bn_graph(pi, 0, 1);
    char err[512] = "";
    CHECK_MSG(ref && g && optimize(g, 2, err, sizeof err) == TG_OK, "pool %d: -O2: %s", pi, err);
    int with_pool = 0, nf = g ? fused_bns(g, &with_pool) : -1;
    CHECK_MSG(g && nf == 1 && with_pool == pooled && count_live(g, GRAPH_OP_relu) == 0 &&
                  count_live(g, GRAPH_OP_max_pool2d) == 0 &&
                  count_live(g, GRAPH_OP_max_pool2d_grad) == 0 &&
                  count_live(g, GRAPH_OP_batch_norm_pool_grad) == pooled,
              "pool %d: -O2: %d batch norms with relu = 1, %d with a pool, %d relu, %d "
              "max_pool2d, %d batch_norm_pool_grad", pi, nf, with_pool,
              g ? count_live(g, GRAPH_OP_relu) : -1, g ? count_live(g, GRAPH_OP_max_pool2d) : -1,
              g ? count_live(g, GRAPH_OP_batch_norm_pool_grad) : -1);
    eager_tensor *a[6] = {NULL}, *b[6] = {NULL};
    CHECK_MSG(ref && eager_interpret(ref, in, 6, a, 6, NULL) == TG_OK, "%s", eager_error());
    CHECK_MSG(g && eager_interpret(g, in, 6, b, 6, NULL) == TG_OK, "%s", eager_error());
    int which = 0;
    int64_t at = 0;
    CHECK_MSG(outputs_same(a, b, 6, &which, &at), "pool %d: -O2 output %d differs at %lld", pi,
              which, (long long)at);
    double worst = 0;
    for (int64_t i = 0; b[0] && i < no; i++) {
        double e = fabs(((const float *)eager_peek(b[0]))[i] - want[i]) / (1 + fabs(want[i]));
        worst = e > worst ? e : worst;
    }
    for (int c = 0; b[1] && b[2] && c < C; c++) {
        double e1 = fabs(((const float *)eager_peek(b[1]))[c] - nrm[c]);
        double e2 = fabs(((const float *)eager_peek(b[2]))[c] - nrv[c]);
        worst = e1 > worst ? e1 : worst;
        worst = e2 > worst ? e2 : worst;
    }
    CHECK_MSG(worst < 1e-5, "pool %d: fused output and running statistics vs double: %g", pi,
              worst);
    int zeros = 0;
    for (int64_t i = 0; b[0] && i < no; i++)
        zeros += ((const float *)eager_peek(b[0]))[i] == 0.0f;
    CHECK_MSG(zeros > 0 && zeros < no - no / 10, "pool %d: %d zeros of %d: relu ran", pi, zeros,
              (int)no);
    release6(a, b);
    graph_free(g);

    /* the rule of the fused form (a graph differentiated after -O2)
     * gives the unfused graph's gradients */
    graph *gf = bn_graph(pi, 1, 1);
    CHECK(gf && count_live(gf, GRAPH_OP_relu) == 0 && count_live(gf, GRAPH_OP_relu_grad) == 1 &&
          count_live(gf, GRAPH_OP_max_pool2d_grad) == pooled);
    CHECK_MSG(gf && eager_interpret(gf, in, 6, b, 6, NULL) == TG_OK, "%s", eager_error());
    CHECK_MSG(ref && eager_interpret(ref, in, 6, a, 6, NULL) == TG_OK, "%s", eager_error());
    CHECK_MSG(outputs_same(a, b, 6, &which, &at),
              "pool %d: the fused form's rule: output %d differs at %lld", pi, which,
              (long long)at);
    release6(a, b);
    graph_free(gf);
    graph_free(ref);

    /* set to eval: batch_norm, relu (and max_pool2d) again, with the
     * running statistics */
    graph *ge = bn_graph(pi, 0, 0);
    CHECK_MSG(ge && optimize(ge, 2, err, sizeof err) == TG_OK, "-O2: %s", err);
    CHECK(ge && count_live(ge, GRAPH_OP_relu) == 0 && count_live(ge, GRAPH_OP_max_pool2d) == 0);
    CHECK_MSG(ge && opt_set_training(ge, 0, err, sizeof err) == TG_OK, "eval: %s", err);
    CHECK(ge && count_live(ge, GRAPH_OP_batch_norm_train) == 0 &&
          count_live(ge, GRAPH_OP_batch_norm) == 1 && count_live(ge, GRAPH_OP_relu) == 1 &&
          count_live(ge, GRAPH_OP_max_pool2d) == pooled);
    CHECK_MSG(ge && eager_interpret(ge, in, 6, b, 3, NULL) == TG_OK, "%s", eager_error());
    if (b[0] && b[1]) {
        /* the reference: x normalized by the running statistics,
         * (x - rm) / sqrt(rv + eps) */
        const float *x = eager_peek(in[0]), *rm = eager_peek(in[3]), *rv = eager_peek(in[4]);
        const float *w = eager_peek(in[1]), *bb = eager_peek(in[2]);
        double e = 0;
        for (int64_t i = 0; i < no; i++) {
            /* recompute the eval value of output element i directly */
            int64_t pl = i / (pools[pi].oh * pools[pi].ow), c = pl % C;
            int64_t oi = i / pools[pi].ow % pools[pi].oh, oj = i % pools[pi].ow;
            double m = -INFINITY;
            int64_t k = pooled ? pools[pi].k : 1, s = pooled ? pools[pi].s : 1,
                    pp = pooled ? pools[pi].p : 0;
            for (int64_t u = 0; u < k; u++)
                for (int64_t v = 0; v < k; v++) {
                    int64_t r = oi * s - pp + u, cc = oj * s - pp + v;
                    if (r < 0 || r >= H || cc < 0 || cc >= W)
                        continue;
                    double val = (x[(pl * H + r) * W + cc] - rm[c]) / sqrt(rv[c] + 1e-5) * w[c] +
                                 bb[c];
                    val = val > 0 ? val : 0;
                    m = val > m ? val : m;
                }
            double d = fabs(((const float *)eager_peek(b[0]))[i] - m) / (1 + fabs(m));
            e = d > e ? d : e;
        }
        CHECK_MSG(e < 1e-5, "pool %d: eval form vs double: %g", pi, e);
        CHECK(!memcmp(eager_peek(b[1]), eager_peek(in[3]), C * sizeof(float)));
    }
    release6(a, b);
    graph_free(ge);
    eager_pool_pop();
}

/*
 * batch_norm_pool_grad against its two ops, max_pool2d_grad then
 * batch_norm_train_grad (each checked against naive loops in test_grad and
 * test_bn_grad), bit for bit, on every pool case, y with ties, NaN and
 * infinities, at one and two threads; its shape checks name what is wrong.
 */
static void test_bn_pool_grad_op(void)
{
    int threads0 = eager_threads();
    for (int ci = 0; ci < POOL_NCASES; ci++)
        for (int mode = 0; mode < 3; mode++) {
            const pool_case *pc = &pool_cases[ci];
            int64_t k[2], st[2], p[4], oh, ow, c = pc->c;
            pool_case_geom(pc, k, st, p, &oh, &ow);
            int64_t nx = pc->n * c * pc->h * pc->w, np = pc->n * c * oh * ow;
            graph_ints sx = TG_SHAPE(pc->n, c, pc->h, pc->w), sp = TG_SHAPE(pc->n, c, oh, ow);
            float *y = malloc(sizeof *y * (size_t)nx), *dp = malloc(sizeof *dp * (size_t)np);
            for (int64_t i = 0; i < nx; i++)
                y[i] = z_value(mode);
            for (int64_t i = 0; i < np; i++)
                dp[i] = (float)(2 * urand() - 1);
            eager_pool_push();
            eager_tensor *yt = eager_from_data(GRAPH_F32, sx, y);
            eager_tensor *dpt = eager_from_data(GRAPH_F32, sp, dp);
            eager_tensor *x = eager_rand_normal(sx, 70 + (uint64_t)ci, 0.3f, 1.5f);
            eager_tensor *w = eager_rand_uniform(TG_SHAPE(c), 71, 0.5, 2);
            eager_tensor *m = eager_rand_uniform(TG_SHAPE(c), 72, -0.5, 0.5);
            eager_tensor *r = eager_rand_uniform(TG_SHAPE(c), 73, 0.5, 2);
            eager_tensor *d = eager_max_pool2d_grad(dpt, yt, pc->k, pc->s, pc->p);
            eager_tensor *want[3] = {NULL}, *got[3] = {NULL};
            CHECK(d && eager_batch_norm_train_grad(d, x, w, m, r, want, 3) == 3);
            for (int t = 1; t <= 2; t++) {
                eager_set_threads(t);
                CHECK_MSG(eager_batch_norm_pool_grad(dpt, yt, x, w, m, r, pc->k, pc->s, pc->p,
                                                     got, 3) == 3,
                          "case %d: %s", ci, eager_error());
                int which = 0;
                int64_t at = 0;
                CHECK_MSG(outputs_same(want, got, 3, &which, &at),
                          "case %d mode %d, %d threads: output %d differs at %lld", ci, mode, t,
                          which, (long long)at);
            }
            eager_set_threads(threads0);
            eager_pool_pop();
            free(y);
            free(dp);
        }
    /* shapes: dp not the pool of y, y not x's type */
    eager_clear_error();
    eager_pool_push();
    eager_tensor *y = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 4, 4)), *v = eager_ones(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *o[3];
    CHECK_FAILS_N(eager_batch_norm_pool_grad(eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 3, 2)), y, y, v,
                                             v, v, TG_INTS(2), TG_NOINTS, TG_NOINTS, o, 3),
                  "dp has shape [2,3,3,2], the pool of y [2,3,2,2]");
    CHECK_FAILS_N(eager_batch_norm_pool_grad(eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 2, 2)), y,
                                             eager_zeros(GRAPH_F32, TG_SHAPE(2, 3, 4, 5)), v, v,
                                             v, TG_INTS(2), TG_NOINTS, TG_NOINTS, o, 3),
                  "y has shape [2,3,4,4], x [2,3,4,5]");
    eager_pool_pop();
}

/* Eager keeps no y for the fused forms' rule: their backward is refused. */
static void test_eager_refuses(void)
{
    eager_pool_push();
    eager_tensor *w = eager_ones(GRAPH_F32, TG_SHAPE(C)), *b = eager_zeros(GRAPH_F32, TG_SHAPE(C));
    for (int form = 0; form < 2; form++) {
        graph_batch_norm_train_attrs at;
        graph_attrs_default(GRAPH_OP_batch_norm_train, &at);
        at.relu = 1;
        if (form)
            at.pool_kernel = TG_INTS(2);
        eager_tensor *x = eager_rand_normal(TG_SHAPE(N, C, H, W), 67, 0, 1);
        eager_requires_grad(x, 1);
        eager_tensor *bo[6] = {NULL};
        eager_tensor *bin[5] = {x, w, b, eager_zeros(GRAPH_F32, TG_SHAPE(C)),
                                eager_ones(GRAPH_F32, TG_SHAPE(C))};
        int got = eager_dispatch(GRAPH_OP_batch_norm_train, bin, 5, &at, bo, 6,
                                 &(eager_site){EAGER_SITE});
        CHECK_MSG(got == 5 + form, "form %d: %d outputs: %s", form, got, eager_error());
        if (got != 5 + form)
            continue;
        const float *yv = eager_peek(bo[form ? 5 : 0]);
        int neg = 0;
        for (int64_t i = 0; i < eager_numel(bo[form ? 5 : 0]); i++)
            neg += !(yv[i] >= 0.0f);
        CHECK_MSG(neg == 0, "form %d: %d values below 0", form, neg);
        eager_tensor *l = eager_reduce_sum(bo[form ? 5 : 0], TG_NOINTS, 0);
        CHECK(eager_backward(l) != TG_OK);
        CHECK_MSG(strstr(eager_error(), "relu = 1") && strstr(eager_error(), "then max_pool2d"),
                  "message: %s", eager_error());
        eager_clear_error(); /* the first error stays until cleared */
    }
    eager_pool_pop();
}

int main(void)
{
    test_relu_grad_pool();
    for (int pi = 0; pi < (int)(sizeof pools / sizeof pools[0]); pi++)
        test_bn_relu_pool(pi);
    test_bn_pool_grad_op();
    test_eager_refuses();
    return check_done();
}
