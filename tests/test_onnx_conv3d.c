/*
 * test_onnx_conv3d.c - ONNX import of 3-D Conv, ConvTranspose, MaxPool and
 * AveragePool (formats/onnx/onnx_read_conv.c: X [N, C, D, H, W] as one conv2d
 * or conv_transpose2d whose channels are D's taps, a pool as the 2-D pool
 * of each depth then one along D; no op of their own), on one-node models
 * built here in memory with protobuf-c:
 *
 *   - groups, strides, dilations and asymmetric pads in every axis, a
 *     bias, W and B initializers, a dynamic batch: imported at batch 2,
 *     run at 2 and 3 by the reference interpreter and by replays of the
 *     graph as imported and optimized at -O3 (where conv2d may go to the
 *     blocked layout); no node specialized, one conv2d;
 *   - auto_pad SAME_UPPER and SAME_LOWER with strides, kernel_shape given;
 *   - a kernel one deep with D padding (the gather becomes a reshape,
 *     the padded depths give the bias alone); depthwise; W a graph input
 *     computed at run time rather than a constant;
 *   - ConvTranspose: groups, strides, dilations, pads and output_padding,
 *     a dynamic batch; SAME_UPPER and SAME_LOWER; depthwise with W a
 *     graph input;
 *   - MaxPool and AveragePool: pads, strides, ceil_mode, count_include_pad,
 *     SAME_UPPER / SAME_LOWER, a dynamic batch;
 *   - refusals, each with its exact message: 6-D inputs, W of the wrong
 *     rank or channels, kernel_shape, pads of 4 entries, a group that does
 *     not divide C, a kernel deeper than the padded input, output_padding
 *     in D, pads that remove every output depth, a pool window of padding
 *     only in D.
 *
 * Every result is checked against naive 3-D loops written here (a
 * convolution, a transposed one that scatters each input element, pools;
 * pads of auto_pad worked out here from the spec's formulas), by the
 * reference interpreter and by replays as imported and at -O3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "onnx_test_util.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"

/* Float sums in another order (a conv2d over kd*C channels). */
#define TOL 1e-5

/* A 3-D Conv case. */
typedef struct conv3 {
    int64_t n, c, d, h, w;   /* x */
    int64_t o, kd, kh, kw, g; /* W [o, c/g, kd, kh, kw], group */
    int64_t s[3], dl[3];     /* strides and dilations, D H W */
    int64_t pads[6];         /* D H W begins, then ends (auto_pad NOTSET) */
    const char *auto_pad;    /* NULL: NOTSET with pads */
    int bias;                /* B given */
    int w_input;             /* W a graph input (else an initializer) */
    int dyn_batch;           /* x's N a dim_param */
    int kernel_shape;        /* kernel_shape given */
    int transpose;           /* ConvTranspose: W [c, o/g, kd, kh, kw] */
    int64_t opad[3];         /* its output_padding, D H W */
} conv3;

/* The model of a case: up to two graph inputs, two initializers, one
 * Conv node with up to six attributes. */
typedef struct model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node, *nodes[1];
    char *node_in[3], *node_out[1];
    Onnx__AttributeProto attr[6], *attrs[6];
    int64_t ints[6][6];
    Onnx__TensorProto init[2], *inits[2];
    int64_t init_dims[2][5];
    Onnx__ValueInfoProto in[2], out, *ins[2], *outs[1];
    onnx_test_tensor type[2];
} model;

/* Graph input i, f32 of nd dims (a dim < 0 is the dim_param "N"). */
static void add_input(model *b, const char *name, int nd, const int64_t *dv)
{
    static const char *const params[] = {"N"};
    int i = (int)b->g.n_input++;
    b->in[i] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    b->in[i].name = (char *)name;
    b->in[i].type = onnx_test_tensor_type(&b->type[i], 1, nd, dv, params);
    b->ins[i] = &b->in[i];
    b->g.input = b->ins;
}

/* An f32 initializer of nd dims holding data (the caller's). */
static void add_init(model *b, const char *name, int nd, const int64_t *dv, float *data)
{
    size_t i = b->g.n_initializer++;
    Onnx__TensorProto *t = &b->init[i];
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = 1;
    int64_t n = 1;
    for (int k = 0; k < nd; k++)
        n *= b->init_dims[i][k] = dv[k];
    t->n_dims = (size_t)nd;
    t->dims = b->init_dims[i];
    t->n_float_data = (size_t)n;
    t->float_data = data;
    b->inits[i] = t;
    b->g.initializer = b->inits;
}

/* An INTS attribute of n entries on the node. */
static void add_ints(model *b, const char *name, int n, const int64_t *v)
{
    size_t i = b->node.n_attribute++;
    Onnx__AttributeProto *a = &b->attr[i];
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    memcpy(b->ints[i], v, sizeof *v * (size_t)n);
    a->n_ints = (size_t)n;
    a->ints = b->ints[i];
    b->attrs[i] = a;
    b->node.attribute = b->attrs;
}

static void add_int(model *b, const char *name, int64_t v)
{
    add_ints(b, name, 1, &v);
    Onnx__AttributeProto *a = &b->attr[b->node.n_attribute - 1];
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->n_ints = 0;
    a->ints = NULL;
    a->has_i = 1;
    a->i = v;
}

static void add_str(model *b, const char *name, const char *v)
{
    add_int(b, name, 0);
    Onnx__AttributeProto *a = &b->attr[b->node.n_attribute - 1];
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_i = 0;
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
}

/* The header and the node op_type(x, w[, b]) -> y. */
static void model_init(model *b, const char *op, int bias)
{
    memset(b, 0, sizeof *b);
    onnx_test_header_init(&b->m, &b->g, &b->opset, b->opsets);
    b->node = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    b->node.op_type = (char *)op;
    b->node.name = "conv";
    b->node_in[0] = "x";
    b->node_in[1] = "w";
    b->node_in[2] = "b";
    b->node.n_input = bias ? 3 : 2;
    b->node.input = b->node_in;
    b->node_out[0] = "y";
    b->node.n_output = 1;
    b->node.output = b->node_out;
    b->nodes[0] = &b->node;
    b->g.n_node = 1;
    b->g.node = b->nodes;
    onnx_test_output(&b->g, &b->out, b->outs, "y");
}

static graph *load(model *b, int64_t dim_default, tg_status *st, char *err, size_t errlen)
{
    size_t len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(len + 1);
    onnx__model_proto__pack(&b->m, buf);
    format_onnx_load_opts o = {0, dim_default, NULL, NULL};
    graph *g = onnx_read_mem(buf, len, "c3.onnx", &o, st, err, errlen);
    free(buf);
    return g;
}

/* ---- the reference ---- */

/* Pads and output size of one axis (the spec's auto_pad formulas). */
static int64_t axis_out(const conv3 *p, int ax, int64_t in, int64_t k, int64_t *begin,
                        int64_t *end)
{
    int64_t s = p->s[ax], dl = p->dl[ax];
    *begin = p->pads[ax];
    *end = p->pads[3 + ax];
    if (p->transpose) { /* SAME_*: out = in * s, the smaller half first for UPPER */
        int64_t full = s * (in - 1) + p->opad[ax] + (k - 1) * dl + 1;
        if (p->auto_pad && strcmp(p->auto_pad, "VALID")) {
            int64_t total = full - in * s;
            *begin = !strcmp(p->auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
            *end = total - *begin;
        } else if (p->auto_pad) {
            *begin = *end = 0;
        }
        return full - *begin - *end;
    }
    if (p->auto_pad && strcmp(p->auto_pad, "VALID")) {
        int64_t out = (in + s - 1) / s, total = (out - 1) * s + (k - 1) * dl + 1 - in;
        total = total < 0 ? 0 : total;
        *begin = !strcmp(p->auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
        *end = total - *begin;
    } else if (p->auto_pad) {
        *begin = *end = 0;
    }
    return (in + *begin + *end - (k - 1) * dl - 1) / s + 1;
}

/* y [n, o, od, oh, ow] = the 3-D convolution of x by w plus b, one sum
 * per output element over its group's channels and the window. */
static float *naive(const conv3 *p, int64_t n, const float *x, const float *w,
                    const float *bias, int64_t od[3])
{
    int64_t pb[3], pe[3], in[3] = {p->d, p->h, p->w}, k[3] = {p->kd, p->kh, p->kw};
    for (int a = 0; a < 3; a++)
        od[a] = axis_out(p, a, in[a], k[a], &pb[a], &pe[a]);
    int64_t cg = p->c / p->g, og = p->o / p->g;
    float *y = malloc(sizeof *y * (size_t)(n * p->o * od[0] * od[1] * od[2]));
    float *yp = y;
    for (int64_t b = 0; b < n; b++)
        for (int64_t o = 0; o < p->o; o++)
            for (int64_t z = 0; z < od[0]; z++)
                for (int64_t i = 0; i < od[1]; i++)
                    for (int64_t j = 0; j < od[2]; j++) {
                        double acc = bias ? bias[o] : 0;
                        for (int64_t c = 0; c < cg; c++)
                            for (int64_t u = 0; u < p->kd; u++)
                                for (int64_t v = 0; v < p->kh; v++)
                                    for (int64_t t = 0; t < p->kw; t++) {
                                        int64_t zz = z * p->s[0] + u * p->dl[0] - pb[0];
                                        int64_t ii = i * p->s[1] + v * p->dl[1] - pb[1];
                                        int64_t jj = j * p->s[2] + t * p->dl[2] - pb[2];
                                        if (zz < 0 || zz >= p->d || ii < 0 || ii >= p->h ||
                                            jj < 0 || jj >= p->w)
                                            continue;
                                        int64_t ci = (o / og) * cg + c;
                                        acc += (double)x[(((b * p->c + ci) * p->d + zz) *
                                                              p->h + ii) * p->w + jj] *
                                               w[(((o * cg + c) * p->kd + u) * p->kh + v) *
                                                     p->kw + t];
                                    }
                        *yp++ = (float)acc;
                    }
    return y;
}

/* y [n, o, od...] of the transposed convolution: every input element
 * times each tap of its group's filters, added at z = q*s + u*dl - pad
 * in each axis (where that lies in the output), plus b. */
static float *naive_t(const conv3 *p, int64_t n, const float *x, const float *w,
                      const float *bias, int64_t od[3])
{
    int64_t pb[3], pe[3], in[3] = {p->d, p->h, p->w}, k[3] = {p->kd, p->kh, p->kw};
    for (int a = 0; a < 3; a++)
        od[a] = axis_out(p, a, in[a], k[a], &pb[a], &pe[a]);
    int64_t cg = p->c / p->g, og = p->o / p->g, plane = od[0] * od[1] * od[2];
    double *acc = calloc((size_t)(n * p->o * plane), sizeof *acc);
    for (int64_t b = 0; b < n; b++)
        for (int64_t ci = 0; ci < p->c; ci++)
            for (int64_t q = 0; q < p->d * p->h * p->w; q++) {
                int64_t qd = q / (p->h * p->w), qh = q / p->w % p->h, qw = q % p->w;
                double xv = x[(b * p->c + ci) * p->d * p->h * p->w + q];
                for (int64_t m = 0; m < og; m++)
                    for (int64_t u = 0; u < p->kd; u++)
                        for (int64_t v = 0; v < p->kh; v++)
                            for (int64_t t = 0; t < p->kw; t++) {
                                int64_t z = qd * p->s[0] + u * p->dl[0] - pb[0];
                                int64_t i = qh * p->s[1] + v * p->dl[1] - pb[1];
                                int64_t j = qw * p->s[2] + t * p->dl[2] - pb[2];
                                if (z < 0 || z >= od[0] || i < 0 || i >= od[1] || j < 0 ||
                                    j >= od[2])
                                    continue;
                                int64_t o = ci / cg * og + m;
                                acc[((b * p->o + o) * od[0] + z) * od[1] * od[2] +
                                    i * od[2] + j] +=
                                    xv *
                                    w[(((ci * og + m) * p->kd + u) * p->kh + v) * p->kw + t];
                            }
            }
    float *y = malloc(sizeof *y * (size_t)(n * p->o * plane));
    for (int64_t e = 0; e < n * p->o * plane; e++)
        y[e] = (float)(acc[e] + (bias ? bias[e / plane % p->o] : 0));
    free(acc);
    return y;
}

/* ---- running ---- */

/* Checks out (type ot, data) against y [n, o, od...]. */
static void check_y(const conv3 *p, const char *what, const graph_type *ot, const void *data,
                    int64_t n, const int64_t od[3], const float *y)
{
    int64_t want[5] = {n, p->o, od[0], od[1], od[2]};
    int same = ot->dtype == GRAPH_F32 && ot->ndim == 5;
    for (int d = 0; same && d < 5; d++)
        same = ot->dim[d] == want[d];
    CHECK_MSG(same, "%s: output shape, want [%lld,%lld,%lld,%lld,%lld]", what, LL(n),
              LL(p->o), LL(od[0]), LL(od[1]), LL(od[2]));
    if (same)
        CHECK_FLOATS((const float *)data, y, n * p->o * od[0] * od[1] * od[2], TOL);
}

/* g at batch n (x, and w when a graph input) by the interpreter and by a
 * replay of it as is and of it at -O3. */
static void run_all(const conv3 *p, const graph *g, const char *name, int64_t n,
                    const float *w, const float *bias)
{
    char what[160], err[1024] = "";
    int64_t xn = n * p->c * p->d * p->h * p->w, od[3];
    float *x = malloc(sizeof *x * (size_t)xn);
    check_fill(x, xn, 7 + (uint64_t)n, -1, 1);
    float *y = (p->transpose ? naive_t : naive)(p, n, x, w, bias, od);
    int64_t w0 = p->transpose ? p->c : p->o, w1 = p->transpose ? p->o / p->g : p->c / p->g;
    graph_type xt = {GRAPH_F32, 5, {n, p->c, p->d, p->h, p->w}};
    graph_type wt = {GRAPH_F32, 5, {w0, w1, p->kd, p->kh, p->kw}};
    int nin = p->w_input ? 2 : 1;

    eager_tensor *in[2], *out = NULL;
    graph_ints xs = {5, {n, p->c, p->d, p->h, p->w}};
    graph_ints ws = {5, {w0, w1, p->kd, p->kh, p->kw}};
    in[0] = eager_from_data(GRAPH_F32, xs, x);
    in[1] = p->w_input ? eager_from_data(GRAPH_F32, ws, w) : NULL;
    tg_status st = eager_interpret(g, in, nin, &out, 1, NULL);
    snprintf(what, sizeof what, "%s at batch %lld, interpreted", name, LL(n));
    CHECK_MSG(st == TG_OK && out, "%s: %s", what, eager_error());
    if (st == TG_OK && out)
        check_y(p, what, eager_type(out), eager_peek(out), n, od, y);
    eager_release(out);
    for (int i = 0; i < nin; i++)
        eager_release(in[i]);
    eager_clear_error();

    graph *o3 = graph_clone(g);
    opt_options oo = opt_default_options();
    oo.level = 3;
    st = o3 ? opt_optimize(o3, &oo, NULL, err, sizeof err) : TG_ERR_NOMEM;
    CHECK_MSG(st == TG_OK, "%s -O3: %s", name, o3 ? err : "out of memory");
    const graph *graphs[2] = {g, o3};
    replay_opts ro = {.threads = 1};
    for (int k = 0; k < (st == TG_OK ? 2 : 1); k++) {
        snprintf(what, sizeof what, "%s at batch %lld, %s replay", name, LL(n),
                 k ? "-O3" : "as imported");
        replay_plan *pl = replay_compile(graphs[k], &ro, err, sizeof err);
        CHECK_MSG(pl != NULL, "%s: compile: %s", what, err);
        replay_session *s = pl ? replay_session_new(pl, NULL, 0) : NULL;
        if (s) {
            replay_tensor rin[2] = {{.name = "x", .type = xt, .input = x},
                                    {.name = "w", .type = wt, .input = w}};
            replay_tensor rout = {.name = "y"};
            st = replay_run(s, rin, nin, &rout, 1);
            CHECK_MSG(st == TG_OK, "%s: %s", what, replay_session_error(s));
            if (st == TG_OK)
                check_y(p, what, &rout.type, rout.data, n, od, y);
        }
        replay_session_free(s);
        replay_plan_free(pl);
    }
    graph_free(o3);
    free(x);
    free(y);
}

/* Builds case p (imported at batch n), checks its graph's form and runs
 * it at batch n and, with a dynamic batch, n + 1. */
static void test_case(const conv3 *p, const char *name, int64_t n)
{
    model b;
    int64_t wn = p->o * (p->c / p->g) * p->kd * p->kh * p->kw;
    float *w = malloc(sizeof *w * (size_t)wn), bias[64];
    check_fill(w, wn, 3, -1, 1);
    check_fill(bias, p->o, 5, -1, 1);
    model_init(&b, p->transpose ? "ConvTranspose" : "Conv", p->bias);
    int64_t xd[5] = {p->dyn_batch ? -1 : n, p->c, p->d, p->h, p->w}, bd[1] = {p->o};
    int64_t wd[5] = {p->transpose ? p->c : p->o, p->transpose ? p->o / p->g : p->c / p->g,
                     p->kd, p->kh, p->kw};
    add_input(&b, "x", 5, xd);
    if (p->w_input)
        add_input(&b, "w", 5, wd);
    else
        add_init(&b, "w", 5, wd, w);
    if (p->bias)
        add_init(&b, "b", 1, bd, bias);
    add_int(&b, "group", p->g);
    add_ints(&b, "strides", 3, p->s);
    add_ints(&b, "dilations", 3, p->dl);
    if (p->auto_pad)
        add_str(&b, "auto_pad", p->auto_pad);
    else
        add_ints(&b, "pads", 6, p->pads);
    if (p->kernel_shape)
        add_ints(&b, "kernel_shape", 3, (const int64_t[]){p->kd, p->kh, p->kw});
    if (p->transpose)
        add_ints(&b, "output_padding", 3, p->opad);
    char err[512] = "";
    tg_status st;
    graph *g = load(&b, n, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", name, err);
    if (g) {
        int convs = 0, spec = 0;
        for (int32_t i = 0; i < g->nnodes; i++) {
            convs += g->nodes[i].op == (p->transpose ? GRAPH_OP_conv_transpose2d
                                                     : GRAPH_OP_conv2d);
            spec += !!(g->nodes[i].flags & GRAPH_NODE_SPECIALIZED);
        }
        CHECK_MSG(convs == 1 && g->nnodes <= 12, "%s: want one 2-D conv in at most 12 "
                  "nodes, have %d in %d", name, convs, (int)g->nnodes);
        CHECK_MSG(spec == 0, "%s: %d nodes specialized", name, spec);
        for (int64_t k = n; k <= n + !!p->dyn_batch; k++)
            run_all(p, g, name, k, w, p->bias ? bias : NULL);
    }
    graph_free(g);
    free(w);
}

static void cases(void)
{
    /* groups 2, every axis strided or dilated, pads asymmetric in each */
    conv3 a = {.n = 2, .c = 4, .d = 7, .h = 6, .w = 9, .o = 6, .kd = 3, .kh = 2, .kw = 3,
               .g = 2, .s = {2, 1, 2}, .dl = {2, 1, 2}, .pads = {1, 0, 2, 2, 1, 0},
               .bias = 1, .dyn_batch = 1};
    test_case(&a, "groups, strides, dilations, pads", 2);
    conv3 up = {.n = 1, .c = 3, .d = 5, .h = 7, .w = 6, .o = 4, .kd = 2, .kh = 3, .kw = 3,
                .g = 1, .s = {2, 2, 1}, .dl = {1, 1, 1}, .auto_pad = "SAME_UPPER",
                .bias = 1, .kernel_shape = 1};
    test_case(&up, "SAME_UPPER", 1);
    conv3 lo = up;
    lo.auto_pad = "SAME_LOWER";
    lo.bias = 0;
    test_case(&lo, "SAME_LOWER", 1);
    conv3 v = up;
    v.auto_pad = "VALID";
    test_case(&v, "VALID", 1);
    /* one deep: the gather is a reshape; the D pads give the bias alone */
    conv3 k1 = {.n = 2, .c = 5, .d = 3, .h = 4, .w = 4, .o = 3, .kd = 1, .kh = 3, .kw = 1,
                .g = 1, .s = {1, 1, 1}, .dl = {1, 1, 1}, .pads = {2, 1, 0, 1, 1, 0},
                .bias = 1};
    test_case(&k1, "kernel one deep, D padded", 2);
    conv3 dw = {.n = 1, .c = 6, .d = 4, .h = 5, .w = 5, .o = 6, .kd = 3, .kh = 3, .kw = 3,
                .g = 6, .s = {1, 1, 1}, .dl = {1, 1, 1}, .pads = {1, 1, 1, 1, 1, 1},
                .bias = 1, .dyn_batch = 1};
    test_case(&dw, "depthwise", 1);
    conv3 wi = {.n = 2, .c = 2, .d = 5, .h = 3, .w = 4, .o = 4, .kd = 2, .kh = 2, .kw = 2,
                .g = 2, .s = {3, 1, 1}, .dl = {1, 2, 1}, .pads = {0, 1, 0, 1, 0, 1},
                .w_input = 1};
    test_case(&wi, "W a graph input", 2);

    /* ConvTranspose: groups, strides, dilations, pads, output_padding in
     * each axis where it may be */
    conv3 t = {.n = 2, .c = 4, .d = 4, .h = 3, .w = 5, .o = 6, .kd = 3, .kh = 2, .kw = 3,
               .g = 2, .s = {2, 1, 3}, .dl = {2, 1, 1}, .pads = {1, 0, 2, 2, 1, 0},
               .opad = {1, 0, 2}, .bias = 1, .dyn_batch = 1, .transpose = 1};
    test_case(&t, "ConvTranspose, groups, strides, dilations, pads", 2);
    conv3 tu = {.n = 1, .c = 3, .d = 3, .h = 4, .w = 3, .o = 2, .kd = 3, .kh = 3, .kw = 2,
                .g = 1, .s = {2, 2, 1}, .dl = {1, 1, 1}, .auto_pad = "SAME_UPPER",
                .transpose = 1, .kernel_shape = 1};
    test_case(&tu, "ConvTranspose, SAME_UPPER", 1);
    conv3 tl = tu;
    tl.auto_pad = "SAME_LOWER";
    tl.bias = 1;
    test_case(&tl, "ConvTranspose, SAME_LOWER", 1);
    conv3 tw = {.n = 1, .c = 4, .d = 3, .h = 3, .w = 3, .o = 4, .kd = 2, .kh = 2, .kw = 2,
                .g = 4, .s = {1, 2, 1}, .dl = {1, 1, 2}, .pads = {0, 1, 0, 1, 0, 1},
                .transpose = 1, .w_input = 1};
    test_case(&tw, "ConvTranspose, depthwise, W a graph input", 1);
}

/* ---- pools ---- */

/* A 3-D MaxPool or AveragePool case (x as conv3's). */
typedef struct pool3 {
    int max;
    int64_t n, c, d, h, w;
    int64_t k[3], s[3], pads[6]; /* D H W; pads: begins, then ends */
    int64_t dd;                  /* D's dilation (0: none given, 1) */
    const char *auto_pad;        /* NULL: NOTSET with pads */
    int64_t ceil_mode, count_pad;
    int dyn_batch;
} pool3;

/* The reference: each output the max or the mean of its window (the
 * mean over the elements inside x, or inside x and its explicit pads with
 * count_include_pad); the output size rounds up with ceil_mode. */
static float *naive_pool(const pool3 *p, int64_t n, const float *x, int64_t od[3])
{
    int64_t in[3] = {p->d, p->h, p->w}, pb[3], pe[3], dl[3] = {p->dd ? p->dd : 1, 1, 1};
    int64_t ke[3]; /* the dilated window */
    for (int a = 0; a < 3; a++) {
        ke[a] = (p->k[a] - 1) * dl[a] + 1;
        pb[a] = p->pads[a];
        pe[a] = p->pads[3 + a];
        if (p->auto_pad) {
            int64_t out = (in[a] + p->s[a] - 1) / p->s[a];
            int64_t total = (out - 1) * p->s[a] + ke[a] - in[a];
            total = total < 0 ? 0 : total;
            pb[a] = !strcmp(p->auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
            pe[a] = total - pb[a];
        }
        int64_t span = in[a] + pb[a] + pe[a] - ke[a];
        od[a] = (p->ceil_mode ? (span + p->s[a] - 1) / p->s[a] : span / p->s[a]) + 1;
    }
    float *y = malloc(sizeof *y * (size_t)(n * p->c * od[0] * od[1] * od[2])), *yp = y;
    for (int64_t b = 0; b < n * p->c; b++)
        for (int64_t z = 0; z < od[0]; z++)
            for (int64_t i = 0; i < od[1]; i++)
                for (int64_t j = 0; j < od[2]; j++) {
                    double acc = p->max ? -INFINITY : 0;
                    int64_t cnt = 0;
                    for (int64_t u = 0; u < p->k[0]; u++)
                        for (int64_t v = 0; v < p->k[1]; v++)
                            for (int64_t t = 0; t < p->k[2]; t++) {
                                int64_t q[3] = {z * p->s[0] + u * dl[0] - pb[0],
                                                i * p->s[1] + v - pb[1],
                                                j * p->s[2] + t - pb[2]};
                                int inside = 1, padded = 1;
                                for (int a = 0; a < 3; a++) {
                                    inside &= q[a] >= 0 && q[a] < in[a];
                                    padded &= q[a] >= -pb[a] && q[a] < in[a] + pe[a];
                                }
                                cnt += p->count_pad ? padded : inside;
                                if (!inside)
                                    continue;
                                double e = x[((b * p->d + q[0]) * p->h + q[1]) * p->w + q[2]];
                                acc = p->max ? (e > acc ? e : acc) : acc + e;
                            }
                    *yp++ = (float)(p->max ? acc : acc / (double)cnt);
                }
    return y;
}

/* Builds pool case p (imported at batch n), runs it at batch n and, with a
 * dynamic batch, n + 1, interpreted and replayed as is and at -O3. */
static void test_pool(const pool3 *p, const char *name, int64_t n)
{
    model b;
    model_init(&b, p->max ? "MaxPool" : "AveragePool", 0);
    b.node.n_input = 1;
    int64_t xd[5] = {p->dyn_batch ? -1 : n, p->c, p->d, p->h, p->w};
    add_input(&b, "x", 5, xd);
    add_ints(&b, "kernel_shape", 3, p->k);
    add_ints(&b, "strides", 3, p->s);
    if (p->dd)
        add_ints(&b, "dilations", 3, (const int64_t[]){p->dd, 1, 1});
    if (p->auto_pad)
        add_str(&b, "auto_pad", p->auto_pad);
    else
        add_ints(&b, "pads", 6, p->pads);
    add_int(&b, "ceil_mode", p->ceil_mode);
    if (!p->max)
        add_int(&b, "count_include_pad", p->count_pad);
    char err[512] = "", what[160];
    tg_status st;
    graph *g = load(&b, n, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", name, err);
    for (int64_t bn = n; g && bn <= n + !!p->dyn_batch; bn++) {
        int64_t xn = bn * p->c * p->d * p->h * p->w, od[3];
        float *x = malloc(sizeof *x * (size_t)xn);
        check_fill(x, xn, 17 + (uint64_t)bn, -1, 1);
        float *y = naive_pool(p, bn, x, od);
        conv3 shape = {.o = p->c};
        graph_type xt = {GRAPH_F32, 5, {bn, p->c, p->d, p->h, p->w}};
        graph *o3 = graph_clone(g);
        opt_options oo = opt_default_options();
        oo.level = 3;
        st = o3 ? opt_optimize(o3, &oo, NULL, err, sizeof err) : TG_ERR_NOMEM;
        CHECK_MSG(st == TG_OK, "%s -O3: %s", name, o3 ? err : "out of memory");
        const graph *graphs[2] = {g, o3};
        replay_opts ro = {.threads = 1};
        for (int k = 0; k < (st == TG_OK ? 2 : 1); k++) {
            snprintf(what, sizeof what, "%s at batch %lld, %s replay", name, LL(bn),
                     k ? "-O3" : "as imported");
            replay_plan *pl = replay_compile(graphs[k], &ro, err, sizeof err);
            CHECK_MSG(pl != NULL, "%s: compile: %s", what, err);
            replay_session *s = pl ? replay_session_new(pl, NULL, 0) : NULL;
            if (s) {
                replay_tensor rin = {.name = "x", .type = xt, .input = x}, rout = {.name = "y"};
                tg_status rs = replay_run(s, &rin, 1, &rout, 1);
                CHECK_MSG(rs == TG_OK, "%s: %s", what, replay_session_error(s));
                if (rs == TG_OK)
                    check_y(&shape, what, &rout.type, rout.data, bn, od, y);
            }
            replay_session_free(s);
            replay_plan_free(pl);
        }
        eager_tensor *in = eager_from_data(GRAPH_F32, (graph_ints){5, {bn, p->c, p->d, p->h,
                                                                       p->w}}, x);
        eager_tensor *out = NULL;
        snprintf(what, sizeof what, "%s at batch %lld, interpreted", name, LL(bn));
        st = eager_interpret(g, &in, 1, &out, 1, NULL);
        CHECK_MSG(st == TG_OK && out, "%s: %s", what, eager_error());
        if (st == TG_OK && out)
            check_y(&shape, what, eager_type(out), eager_peek(out), bn, od, y);
        eager_release(out);
        eager_release(in);
        eager_clear_error();
        graph_free(o3);
        free(x);
        free(y);
    }
    graph_free(g);
}

static void pools(void)
{
    pool3 mx = {.max = 1, .n = 2, .c = 3, .d = 8, .h = 6, .w = 7, .k = {3, 3, 2},
                .s = {2, 1, 2}, .pads = {1, 1, 0, 1, 0, 1}, .ceil_mode = 1, .dyn_batch = 1};
    test_pool(&mx, "MaxPool, pads, ceil_mode", 2);
    pool3 av = {.n = 1, .c = 2, .d = 6, .h = 5, .w = 6, .k = {3, 2, 2}, .s = {2, 2, 1},
                .pads = {1, 0, 1, 0, 1, 1}, .ceil_mode = 1, .dyn_batch = 1};
    test_pool(&av, "AveragePool, pads, ceil_mode", 1);
    /* ceil_mode's extra windows in D and H counted up to the model's own
     * end pad (was refused; seed 5001 model 465) */
    pool3 acm = {.n = 1, .c = 2, .d = 6, .h = 5, .w = 6, .k = {3, 2, 2}, .s = {2, 2, 1},
                 .pads = {1, 0, 0, 1, 0, 0}, .ceil_mode = 1, .count_pad = 1, .dyn_batch = 1};
    test_pool(&acm, "AveragePool, ceil_mode, count_include_pad", 1);
    pool3 ac = {.n = 2, .c = 2, .d = 5, .h = 5, .w = 5, .k = {3, 3, 3}, .s = {2, 2, 2},
                .pads = {1, 1, 1, 1, 1, 1}, .count_pad = 1};
    test_pool(&ac, "AveragePool, count_include_pad", 2);
    pool3 su = {.max = 1, .n = 1, .c = 2, .d = 5, .h = 4, .w = 5, .k = {2, 2, 3},
                .s = {2, 1, 2}, .auto_pad = "SAME_UPPER"};
    test_pool(&su, "MaxPool, SAME_UPPER", 1);
    pool3 sl = su;
    sl.max = 0;
    sl.auto_pad = "SAME_LOWER";
    test_pool(&sl, "AveragePool, SAME_LOWER", 1);
    /* D's dilation: windows of taps dd apart (it was read as 1) */
    pool3 md = {.max = 1, .n = 2, .c = 2, .d = 9, .h = 4, .w = 5, .k = {3, 2, 2},
                .s = {2, 1, 2}, .pads = {2, 0, 1, 1, 1, 0}, .dd = 2, .ceil_mode = 1,
                .dyn_batch = 1};
    test_pool(&md, "MaxPool, D dilation, pads, ceil_mode", 2);
    pool3 ad = md;
    ad.max = 0;
    ad.dd = 3;
    ad.pads[0] = 3;
    test_pool(&ad, "AveragePool, D dilation, pads, ceil_mode", 1);
    ad.count_pad = 1;
    ad.ceil_mode = 0;
    test_pool(&ad, "AveragePool, D dilation, count_include_pad", 1);
    pool3 sd = su;
    sd.dd = 2;
    sd.d = 7;
    test_pool(&sd, "MaxPool, D dilation, SAME_UPPER", 1);
}

/* ---- refusals ---- */

/* op(x [xd], w [wd] initializer, attributes by the caller) fails with
 * status want_st and exactly message want. */
static void expect_fail(model *b, tg_status want_st, const char *want)
{
    char err[512] = "";
    tg_status st;
    graph *g = load(b, 1, &st, err, sizeof err);
    CHECK_MSG(!g && st == want_st && !strcmp(err, want), "got status %d \"%s\", want %d "
              "\"%s\"", (int)st, err, (int)want_st, want);
    graph_free(g);
}

static void refusals(void)
{
    static float wdata[4 * 2 * 3 * 3 * 3];
    model b;
    int64_t x5[5] = {1, 4, 3, 5, 5}, w5[5] = {4, 2, 3, 3, 3};
    int64_t x6[6] = {1, 4, 3, 5, 5, 2}, w4[4] = {4, 4, 3, 3};

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 6, x6);
    add_init(&b, "w", 4, w4, wdata);
    expect_fail(&b, TG_ERR_UNSUPPORTED, "c3.onnx: node 0 'conv' (Conv): only 1-D (NCL), "
                "2-D (NCHW) and 3-D (NCDHW) are supported, the input has 6 dims");

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 4, w4, wdata);
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (Conv): W must be 5-D");

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    add_int(&b, "group", 2);
    add_ints(&b, "kernel_shape", 3, (const int64_t[]){3, 3, 2});
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (Conv): kernel_shape does not "
                "match W's 3x3x3");

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    add_int(&b, "group", 2);
    add_ints(&b, "pads", 4, (const int64_t[]){1, 1, 1, 1});
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (Conv): pads has 4 entries, "
                "want 6");

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    add_int(&b, "group", 3);
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (Conv): group 3 must divide "
                "the input channels 4 and the output channels 4");

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (Conv): W has 2 input channels "
                "per group, want 4 (C 4 / group 1)");

    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    add_int(&b, "group", 2);
    add_ints(&b, "dilations", 3, (const int64_t[]){2, 1, 1});
    expect_fail(&b, TG_ERR_SHAPE, "c3.onnx: node 0 'conv' (Conv): output depth <= 0: the "
                "padded input depth 3 is smaller than the effective kernel depth 5");

    model_init(&b, "ConvTranspose", 0);
    add_input(&b, "x", 6, x6);
    add_init(&b, "w", 4, w4, wdata);
    expect_fail(&b, TG_ERR_UNSUPPORTED, "c3.onnx: node 0 'conv' (ConvTranspose): only 1-D "
                "(NCL), 2-D (NCHW) and 3-D (NCDHW) are supported, the input has 6 dims");

    model_init(&b, "ConvTranspose", 0); /* W [4, 2, 3, 3, 3]: 4 input channels */
    add_input(&b, "x", 5, (const int64_t[]){1, 2, 3, 5, 5});
    add_init(&b, "w", 5, w5, wdata);
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (ConvTranspose): W has 4 input "
                "channels, want 2 (the channels of X), which group 1 must divide");

    model_init(&b, "ConvTranspose", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    add_ints(&b, "output_padding", 3, (const int64_t[]){1, 0, 0});
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (ConvTranspose): output_padding 1 "
                "(D) must be smaller than the stride 1 or the dilation 1");

    model_init(&b, "ConvTranspose", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w5, wdata);
    add_ints(&b, "pads", 6, (const int64_t[]){3, 0, 0, 2, 0, 0});
    expect_fail(&b, TG_ERR_SHAPE, "c3.onnx: node 0 'conv' (ConvTranspose): output depth 0 "
                "<= 0: the pads 3+2 remove every depth");

    /* a kernel depth of 0 divided the output depths by it */
    static const int64_t w0[5] = {4, 4, 0, 3, 3};
    model_init(&b, "Conv", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w0, wdata);
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (Conv): W's kernel dims must be "
                ">= 1 (the kernel_shape), W has a depth of 0");
    model_init(&b, "ConvTranspose", 0);
    add_input(&b, "x", 5, x5);
    add_init(&b, "w", 5, w0, wdata);
    expect_fail(&b, TG_ERR_FORMAT, "c3.onnx: node 0 'conv' (ConvTranspose): W's kernel dims "
                "must be >= 1 (the kernel_shape), W has a depth of 0");

    model_init(&b, "MaxPool", 0);
    b.node.n_input = 1;
    add_input(&b, "x", 5, x5);
    add_ints(&b, "kernel_shape", 3, (const int64_t[]){2, 2, 2});
    add_ints(&b, "dilations", 3, (const int64_t[]){1, 2, 1});
    expect_fail(&b, TG_ERR_UNSUPPORTED, "c3.onnx: node 0 'conv' (MaxPool): dilations other "
                "than 1 in H and W are not supported");

    model_init(&b, "AveragePool", 0);
    b.node.n_input = 1;
    add_input(&b, "x", 5, x5);
    add_ints(&b, "kernel_shape", 3, (const int64_t[]){2, 2, 2});
    /* 2 past the depth of 3 with a stride of 1 (1 past is 0 windows, an
     * empty output as ONNX Runtime's: test_onnx_import's pool_empty) */
    add_ints(&b, "dilations", 3, (const int64_t[]){4, 1, 1});
    expect_fail(&b, TG_ERR_SHAPE, "c3.onnx: node 0 'conv' (AveragePool): output depth <= 0: "
                "the padded input depth 3 is smaller than the dilated kernel depth 5");

    model_init(&b, "MaxPool", 0);
    b.node.n_input = 1;
    add_input(&b, "x", 6, x6);
    add_ints(&b, "kernel_shape", 3, (const int64_t[]){2, 2, 2});
    expect_fail(&b, TG_ERR_UNSUPPORTED, "c3.onnx: node 0 'conv' (MaxPool): only 1-D (NCL), "
                "2-D (NCHW) and 3-D (NCDHW) are supported, the input has 6 dims");

    model_init(&b, "AveragePool", 0);
    b.node.n_input = 1;
    add_input(&b, "x", 5, x5);
    add_ints(&b, "kernel_shape", 3, (const int64_t[]){2, 2, 2});
    add_ints(&b, "pads", 6, (const int64_t[]){2, 0, 0, 0, 0, 0});
    expect_fail(&b, TG_ERR_UNSUPPORTED, "c3.onnx: node 0 'conv' (AveragePool): output depth "
                "0's window holds padding only: not supported");
}

int main(void)
{
    long live = eager_live_tensors();
    cases();
    pools();
    refusals();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
