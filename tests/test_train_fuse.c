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
 *   attribute: y against batch norm and relu in double (1e-5), and the
 *   whole step (y, running statistics, gradients) the same bits as the
 *   unoptimized graph; set to eval, the fused node gives batch_norm then
 *   relu again (against the running statistics' formula in double).
 * - batch_norm_train's gradient rule with relu = 1 (a graph differentiated
 *   after -O2) gives the unfused graph's gradients bit for bit; eager,
 *   which keeps only the batch statistics, refuses it with a message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/conv_attrs.h"
#include "../graph/graph_impl.h"
#include "check.h"
#include "eager/eager.h"
#include "eager/grad_eager.h"
#include "eager/interp.h"
#include "graph/grad.h"
#include "graph/graph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "pool_ref_util.h"

static uint64_t g_state = 0x243f6a8885a308d3ull;

static uint64_t next_u64(void)
{
    uint64_t z = (g_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double urand(void) { return (double)(next_u64() >> 11) * 0x1p-53; }

static int same_bits(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) {
            *at = i;
            return 0;
        }
    return 1;
}

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
    const struct {
        int64_t n, c, h, w;
        graph_ints k, s, p;
    } cs[] = {
        {2, 3, 8, 10, TG_INTS(2), TG_NOINTS, TG_NOINTS},                  /* the CNN's pool */
        {1, 3, 7, 9, TG_INTS(2), TG_NOINTS, TG_NOINTS},                   /* odd row, column */
        {1, 2, 7, 9, TG_INTS(2), TG_INTS(2), TG_INTS(1)},                 /* padding */
        {1, 3, 7, 8, TG_INTS(2), TG_INTS(3), TG_NOINTS},                  /* gaps */
        {2, 3, 9, 7, TG_INTS(3), TG_INTS(2), TG_INTS(1)},                 /* overlap, padding */
        {1, 2, 6, 5, TG_INTS(3), TG_INTS(1), TG_INTS(1)},                 /* stride 1 */
        {2, 2, 7, 11, TG_INTS(3, 2), TG_INTS(1, 3), TG_INTS(1, 0, 2, 1)}, /* uneven */
        {3, 4, 40, 40, TG_INTS(2), TG_NOINTS, TG_NOINTS},                 /* large */
    };
    for (int ci = 0; ci < (int)(sizeof cs / sizeof cs[0]); ci++)
        for (int mode = 0; mode < 3; mode++) {
            int64_t k[2], st[2], p[4];
            graph_ints_pair(&cs[ci].k, 1, k);
            graph_ints_pair(&cs[ci].s, 0, st);
            if (cs[ci].s.n == 0)
                st[0] = k[0], st[1] = k[1];
            graph_ints_pad4(&cs[ci].p, p);
            int64_t h = cs[ci].h, w = cs[ci].w, nc = cs[ci].n * cs[ci].c;
            int64_t oh = (h + p[0] + p[2] - k[0]) / st[0] + 1;
            int64_t ow = (w + p[1] + p[3] - k[1]) / st[1] + 1;
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

/* ---- batch_norm_train + relu ---- */

enum { N = 4, C = 3, H = 5, W = 6, M = N * H * W, NX = N * C * H * W };

/* relu(batch_norm(x)) with the batch's statistics, in double; the new
 * running statistics too (momentum 0.1, the variance unbiased). */
static void bn_relu_ref(const float *x, const float *w, const float *b, const float *rm,
                        const float *rv, double *y, double *nrm, double *nrv)
{
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
}

/* A training step's block: y = relu(bn(x)), loss = sum(y * dy), the
 * gradients of x, w and b; outputs y, the running statistics, gx, gw, gb.
 * fused: the batch norm written with {relu=1} and no relu node. */
static graph *bn_graph(int fused, int backward)
{
    static const char plain[] =
        "graph t(%x: f32[4,3,5,6], %w: f32[3], %b: f32[3], %rm: f32[3], %rv: f32[3], "
        "%dy: f32[4,3,5,6]) -> (y: f32[4,3,5,6], nrm: f32[3], nrv: f32[3]) {\n"
        "  %1: f32[4,3,5,6], %2: f32[3], %3: f32[3], %4: f32[3], %5: f32[3] = "
        "batch_norm_train(%x, %w, %b, %rm, %rv)\n"
        "  %6: f32[4,3,5,6] = relu(%1)\n"
        "  %7: f32[4,3,5,6] = mul(%6, %dy)\n"
        "  %8: f32[] = reduce_sum(%7)\n"
        "  return y = %6\n  return nrm = %2\n  return nrv = %3\n}\n";
    static const char with_relu[] =
        "graph t(%x: f32[4,3,5,6], %w: f32[3], %b: f32[3], %rm: f32[3], %rv: f32[3], "
        "%dy: f32[4,3,5,6]) -> (y: f32[4,3,5,6], nrm: f32[3], nrv: f32[3]) {\n"
        "  %1: f32[4,3,5,6], %2: f32[3], %3: f32[3], %4: f32[3], %5: f32[3] = "
        "batch_norm_train(%x, %w, %b, %rm, %rv) {relu=1}\n"
        "  %7: f32[4,3,5,6] = mul(%1, %dy)\n"
        "  %8: f32[] = reduce_sum(%7)\n"
        "  return y = %1\n  return nrm = %2\n  return nrv = %3\n}\n";
    const char *ir = fused ? with_relu : plain;
    char err[256] = "";
    graph *g = graph_parse(ir, strlen(ir), err, sizeof err);
    CHECK_MSG(g != NULL, "parse: %s", err);
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

static void test_bn_relu(void)
{
    eager_pool_push();
    eager_tensor *in[6] = {eager_rand_normal(TG_SHAPE(N, C, H, W), 61, 0.5, 2),
                           eager_rand_uniform(TG_SHAPE(C), 62, 0.5, 2),
                           eager_rand_uniform(TG_SHAPE(C), 63, -1, 1),
                           eager_rand_uniform(TG_SHAPE(C), 64, -0.5, 0.5),
                           eager_rand_uniform(TG_SHAPE(C), 65, 0.5, 1.5),
                           eager_rand_uniform(TG_SHAPE(N, C, H, W), 66, -1, 1)};
    double y[NX], nrm[C], nrv[C];
    bn_relu_ref(eager_peek(in[0]), eager_peek(in[1]), eager_peek(in[2]), eager_peek(in[3]),
                eager_peek(in[4]), y, nrm, nrv);

    /* -O2 fuses the relu; the step's outputs are the unoptimized bits */
    graph *ref = bn_graph(0, 1), *g = bn_graph(0, 1);
    char err[512] = "";
    CHECK_MSG(ref && g && optimize(g, 2, err, sizeof err) == TG_OK, "-O2: %s", err);
    int fused = 0;
    for (int32_t i = 0; g && i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == GRAPH_OP_batch_norm_train)
            fused += ((const graph_batch_norm_train_attrs *)tg_node_attrs(&g->nodes[i]))->relu == 1;
    CHECK_MSG(g && fused == 1 && count_live(g, GRAPH_OP_relu) == 0,
              "-O2: %d batch norms with relu = 1, %d relu nodes", fused,
              g ? count_live(g, GRAPH_OP_relu) : -1);
    eager_tensor *a[6] = {NULL}, *b[6] = {NULL};
    CHECK_MSG(eager_interpret(ref, in, 6, a, 6, NULL) == TG_OK, "%s", eager_error());
    CHECK_MSG(eager_interpret(g, in, 6, b, 6, NULL) == TG_OK, "%s", eager_error());
    int which = 0;
    int64_t at = 0;
    CHECK_MSG(outputs_same(a, b, 6, &which, &at), "-O2 output %d differs at %lld", which,
              (long long)at);
    double worst = 0;
    for (int64_t i = 0; b[0] && i < NX; i++) {
        double e = fabs(((const float *)eager_peek(b[0]))[i] - y[i]) / (1 + fabs(y[i]));
        worst = e > worst ? e : worst;
    }
    for (int c = 0; b[1] && b[2] && c < C; c++) {
        double e1 = fabs(((const float *)eager_peek(b[1]))[c] - nrm[c]);
        double e2 = fabs(((const float *)eager_peek(b[2]))[c] - nrv[c]);
        worst = e1 > worst ? e1 : worst;
        worst = e2 > worst ? e2 : worst;
    }
    CHECK_MSG(worst < 1e-5, "fused y and running statistics vs double: %g", worst);
    int zeros = 0;
    for (int64_t i = 0; b[0] && i < NX; i++)
        zeros += ((const float *)eager_peek(b[0]))[i] == 0.0f;
    CHECK_MSG(zeros > NX / 10 && zeros < NX - NX / 10, "y has %d zeros of %d: relu ran", zeros,
              (int)NX);
    for (int k = 0; k < 6; k++) {
        eager_release(a[k]);
        eager_release(b[k]);
    }
    graph_free(g);

    /* the rule with relu = 1 (a graph differentiated after the fusion)
     * gives the unfused graph's gradients */
    graph *gf = bn_graph(1, 1);
    CHECK(gf && count_live(gf, GRAPH_OP_relu) == 0 && count_live(gf, GRAPH_OP_relu_grad) == 1);
    CHECK_MSG(gf && eager_interpret(gf, in, 6, b, 6, NULL) == TG_OK, "%s", eager_error());
    CHECK_MSG(eager_interpret(ref, in, 6, a, 6, NULL) == TG_OK, "%s", eager_error());
    CHECK_MSG(outputs_same(a, b, 6, &which, &at),
              "the fused form's rule: output %d differs at %lld", which, (long long)at);
    for (int k = 0; k < 6; k++) {
        eager_release(a[k]);
        eager_release(b[k]);
    }
    graph_free(gf);
    graph_free(ref);

    /* set to eval: batch_norm then relu, with the running statistics */
    graph *ge = bn_graph(0, 0);
    CHECK_MSG(ge && optimize(ge, 2, err, sizeof err) == TG_OK, "-O2: %s", err);
    CHECK(ge && count_live(ge, GRAPH_OP_relu) == 0);
    CHECK_MSG(ge && opt_set_training(ge, 0, err, sizeof err) == TG_OK, "eval: %s", err);
    CHECK(ge && count_live(ge, GRAPH_OP_batch_norm_train) == 0 &&
          count_live(ge, GRAPH_OP_batch_norm) == 1 && count_live(ge, GRAPH_OP_relu) == 1);
    CHECK_MSG(ge && eager_interpret(ge, in, 6, b, 3, NULL) == TG_OK, "%s", eager_error());
    {
        const float *x = eager_peek(in[0]), *w = eager_peek(in[1]), *bb = eager_peek(in[2]);
        const float *rm = eager_peek(in[3]), *rv = eager_peek(in[4]);
        double e = 0;
        for (int64_t i = 0; b[0] && i < NX; i++) {
            int c = (int)(i / (H * W) % C);
            double v = (x[i] - rm[c]) / sqrt(rv[c] + 1e-5) * w[c] + bb[c];
            v = v > 0 ? v : 0;
            double d = fabs(((const float *)eager_peek(b[0]))[i] - v) / (1 + fabs(v));
            e = d > e ? d : e;
        }
        CHECK_MSG(e < 1e-5, "eval form vs double: %g", e);
        CHECK(b[1] && !memcmp(eager_peek(b[1]), eager_peek(in[3]), C * sizeof(float)));
    }
    for (int k = 0; k < 3; k++)
        eager_release(b[k]);
    graph_free(ge);

    /* eager keeps no y for the rule: its backward is refused */
    graph_batch_norm_train_attrs at_relu;
    graph_attrs_default(GRAPH_OP_batch_norm_train, &at_relu);
    at_relu.relu = 1;
    eager_tensor *x = eager_rand_normal(TG_SHAPE(N, C, H, W), 67, 0, 1);
    eager_requires_grad(x, 1);
    eager_tensor *bo[5] = {NULL};
    eager_tensor *bin[5] = {x, in[1], in[2], in[3], in[4]};
    CHECK_MSG(eager_dispatch(GRAPH_OP_batch_norm_train, bin, 5, &at_relu, bo, 5,
                             &(eager_site){EAGER_SITE}) == 5,
              "%s", eager_error());
    if (bo[0]) {
        const float *yv = eager_peek(bo[0]);
        int neg = 0;
        for (int64_t i = 0; i < NX; i++)
            neg += !(yv[i] >= 0.0f);
        CHECK_MSG(neg == 0, "eager relu = 1: %d values below 0", neg);
        eager_tensor *l = eager_reduce_sum(bo[0], TG_NOINTS, 0);
        CHECK(eager_backward(l) != TG_OK);
        CHECK_MSG(strstr(eager_error(), "relu = 1") && strstr(eager_error(), "then relu"),
                  "message: %s", eager_error());
    }
    eager_pool_pop();
}

int main(void)
{
    test_relu_grad_pool();
    test_bn_relu();
    return check_done();
}
