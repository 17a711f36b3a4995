/*
 * onnx_export_cases.h - the graphs test_onnx_export.c exports: one small
 * graph per op of graph/ops.def (several attribute variants where the
 * ONNX meaning is subtle), built with graph_add_node on seeded inputs,
 * and the traced test models.  Included by test_onnx_export.c only.
 *
 * A case is a graph plus its inputs as eager tensors; its expected
 * outputs come from the reference interpreter (eager_interpret), and the
 * ONNX Runtime check (tests/onnx_ort_check.js) is the independent side.
 */
#ifndef TG_TESTS_ONNX_EXPORT_CASES_H
#define TG_TESTS_ONNX_EXPORT_CASES_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "graph/fused_prog.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "models.h"
#include "optimize/opt.h"

#define CASE_MAX_IN 8

typedef struct tcase {
    graph *g;
    int nin;
    eager_tensor *in[CASE_MAX_IN];
    uint64_t seed;
    int nout;
} tcase;

/* SplitMix64: the test's own deterministic data. */
static uint64_t case_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double case_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(case_rand(s) >> 11) * 0x1p-53;
}

/*
 * Seeded data of dtype dt: uniform in [lo, hi) for f32 (rounded to
 * integers when whole is set, so comparisons see equal values), integers
 * in [lo, hi] otherwise, 0/1 for bool.
 */
static eager_tensor *case_data(tcase *c, graph_dtype dt, graph_ints shape, double lo,
                               double hi, int whole)
{
    int64_t n = 1;
    for (int i = 0; i < shape.n; i++)
        n *= shape.v[i];
    size_t es = graph_dtype_size(dt);
    unsigned char *buf = calloc((size_t)(n ? n : 1), es);
    for (int64_t i = 0; buf && i < n; i++) {
        double u = case_uniform(&c->seed, 0, 1);
        double v = dt == GRAPH_F32 ? lo + (hi - lo) * u : floor(lo + (hi - lo + 1) * u);
        if (dt == GRAPH_F32 && whole)
            v = floor(v);
        if (dt == GRAPH_F32)
            ((float *)buf)[i] = (float)v;
        else if (dt == GRAPH_I64)
            ((int64_t *)buf)[i] = (int64_t)v;
        else if (dt == GRAPH_I32)
            ((int32_t *)buf)[i] = (int32_t)v;
        else
            buf[i] = u < 0.5;
    }
    eager_tensor *t = buf ? eager_from_data(dt, shape, buf) : NULL;
    free(buf);
    return t;
}

static graph_type case_type(graph_dtype dt, graph_ints shape)
{
    graph_type t = {dt, shape.n, {0}};
    for (int i = 0; i < shape.n; i++)
        t.dim[i] = shape.v[i];
    return t;
}

/* A graph input "x<k>" with seeded data. */
static int32_t inp_w(tcase *c, graph_dtype dt, graph_ints shape, double lo, double hi,
                     int whole)
{
    char name[16];
    snprintf(name, sizeof name, "x%d", c->nin);
    graph_type t = case_type(dt, shape);
    int32_t v = graph_add_value(c->g, GRAPH_VALUE_INPUT, &t, name);
    CHECK_MSG(v >= 0 && graph_add_input(c->g, v) == TG_OK && c->nin < CASE_MAX_IN,
              "input %s", name);
    c->in[c->nin++] = case_data(c, dt, shape, lo, hi, whole);
    return v;
}

static int32_t inp(tcase *c, graph_dtype dt, graph_ints shape, double lo, double hi)
{
    return inp_w(c, dt, shape, lo, hi, 0);
}

static int32_t inpf(tcase *c, graph_ints shape)
{
    return inp(c, GRAPH_F32, shape, -2, 2);
}

/* A constant with seeded data (an initializer in the export). */
static int32_t cst(tcase *c, graph_dtype dt, graph_ints shape, double lo, double hi)
{
    graph_type t = case_type(dt, shape);
    int32_t v = graph_add_value(c->g, GRAPH_VALUE_CONST, &t, NULL);
    eager_tensor *d = case_data(c, dt, shape, lo, hi, 0);
    CHECK(v >= 0 && d && graph_set_data(c->g, v, eager_peek(d), eager_nbytes(d)) == TG_OK);
    eager_release(d);
    return v;
}

/* A node; returns its first output (each output becomes a graph output
 * when out is set). */
static int32_t nd_n(tcase *c, graph_op op, const int32_t *in, int nin, const void *attrs,
                    int out)
{
    int32_t o[GRAPH_MAX_NODE_IO];
    int32_t id = graph_add_node(c->g, op, in, nin, attrs, o, GRAPH_MAX_NODE_IO);
    CHECK_MSG(id >= 0, "%s node: %s", graph_ops[op].name, graph_error(c->g));
    if (id < 0)
        return -1;
    for (int k = 0; out && k < c->g->nodes[id].nout; k++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", c->nout++);
        graph_add_output(c->g, o[k], name);
    }
    return o[0];
}

#define IDS(...) (const int32_t[]){__VA_ARGS__}, (int)(sizeof((int32_t[]){__VA_ARGS__}) / 4)
/* A node whose outputs are the graph's outputs. */
#define ND(c, op, attrs, ...) nd_n((c), GRAPH_OP_##op, IDS(__VA_ARGS__), (attrs), 1)
/* An inner node. */
#define NDI(c, op, attrs, ...) nd_n((c), GRAPH_OP_##op, IDS(__VA_ARGS__), (attrs), 0)
/* An attribute struct: every field, in ops.def order. */
#define ATTRS(op, ...) (&(graph_##op##_attrs){__VA_ARGS__})

#define SH TG_SHAPE
#define CASE(name) static void case_##name(tcase *c)

/* ---- elementwise ---- */

static void unary(tcase *c, graph_op op, const void *attrs, double lo, double hi)
{
    nd_n(c, op, IDS(inp(c, GRAPH_F32, SH(2, 3, 4), lo, hi)), attrs, 1);
}

CASE(neg) { unary(c, GRAPH_OP_neg, NULL, -3, 3); }
CASE(abs) { unary(c, GRAPH_OP_abs, NULL, -3, 3); }
CASE(exp) { unary(c, GRAPH_OP_exp, NULL, -3, 3); }
CASE(log) { unary(c, GRAPH_OP_log, NULL, 0.05, 4); }
CASE(sqrt) { unary(c, GRAPH_OP_sqrt, NULL, 0, 4); }
CASE(rsqrt) { unary(c, GRAPH_OP_rsqrt, NULL, 0.1, 4); }
CASE(reciprocal) { unary(c, GRAPH_OP_reciprocal, NULL, 0.5, 2); }
CASE(relu) { unary(c, GRAPH_OP_relu, NULL, -3, 3); }
CASE(leaky_relu) { unary(c, GRAPH_OP_leaky_relu, ATTRS(leaky_relu, 0.2f), -3, 3); }
CASE(sigmoid) { unary(c, GRAPH_OP_sigmoid, NULL, -6, 6); }
CASE(tanh) { unary(c, GRAPH_OP_tanh, NULL, -3, 3); }
CASE(gelu) { unary(c, GRAPH_OP_gelu, NULL, -5, 5); }
CASE(silu) { unary(c, GRAPH_OP_silu, NULL, -6, 6); }
CASE(erf) { unary(c, GRAPH_OP_erf, NULL, -3, 3); }
CASE(softplus) { unary(c, GRAPH_OP_softplus, NULL, -30, 30); }
CASE(clip) { unary(c, GRAPH_OP_clip, ATTRS(clip, -0.5f, 0.7f), -2, 2); }
CASE(clip_min_only) { unary(c, GRAPH_OP_clip, ATTRS(clip, 0.25f, INFINITY), -2, 2); }
CASE(clip_max_only) { unary(c, GRAPH_OP_clip, ATTRS(clip, -INFINITY, 1.0f), -2, 2); }
CASE(neg_i64) { ND(c, neg, NULL, inp(c, GRAPH_I64, SH(3, 4), -100, 100)); }
CASE(abs_i32) { ND(c, abs, NULL, inp(c, GRAPH_I32, SH(3, 4), -100, 100)); }
CASE(sign) { unary(c, GRAPH_OP_sign, NULL, -3, 3); }
CASE(sign_i64) { ND(c, sign, NULL, inp(c, GRAPH_I64, SH(3, 4), -2, 2)); }
CASE(floor) { unary(c, GRAPH_OP_floor, NULL, -9, 9); }
CASE(ceil) { unary(c, GRAPH_OP_ceil, NULL, -9, 9); }
CASE(round) { unary(c, GRAPH_OP_round, NULL, -9, 9); }
/* Exact halves (whole numbers times 0.5): Round ties to even in both. */
CASE(round_halves)
{
    int32_t h = NDI(c, mul, NULL, inp_w(c, GRAPH_F32, SH(4, 6), -9, 9, 1),
                    cst(c, GRAPH_F32, TG_NOINTS, 0.5, 0.5));
    ND(c, round, NULL, h);
}

CASE(add_bcast) { ND(c, add, NULL, inpf(c, SH(2, 3, 4)), inpf(c, SH(3, 1))); }
CASE(sub_bcast) { ND(c, sub, NULL, inpf(c, SH(4)), inpf(c, SH(2, 3, 4))); }
CASE(mul_scalar) { ND(c, mul, NULL, inpf(c, SH(2, 3)), inpf(c, TG_NOINTS)); }
CASE(div) { ND(c, div, NULL, inpf(c, SH(2, 3)), inp(c, GRAPH_F32, SH(2, 3), 0.5, 2)); }
CASE(pow) { ND(c, pow, NULL, inp(c, GRAPH_F32, SH(2, 3), 0.5, 2), inpf(c, SH(3))); }
CASE(maximum) { ND(c, maximum, NULL, inpf(c, SH(2, 3)), inpf(c, SH(2, 1))); }
CASE(minimum) { ND(c, minimum, NULL, inpf(c, SH(2, 3)), inpf(c, SH(2, 3))); }
/* Where(Greater(y, 0), dy, 0), y broadcast */
CASE(relu_grad) { ND(c, relu_grad, NULL, inpf(c, SH(2, 3)), inpf(c, SH(3))); }
CASE(add_i64) { ND(c, add, NULL, inp(c, GRAPH_I64, SH(2, 3), -50, 50), inp(c, GRAPH_I64, SH(3), -50, 50)); }
CASE(sub_i32) { ND(c, sub, NULL, inp(c, GRAPH_I32, SH(2, 3), -50, 50), inp(c, GRAPH_I32, SH(2, 3), -50, 50)); }
CASE(mul_i64) { ND(c, mul, NULL, inp(c, GRAPH_I64, SH(4), -50, 50), inp(c, GRAPH_I64, SH(4), -50, 50)); }
/* Integer division truncates toward zero, in both. */
CASE(div_i32) { ND(c, div, NULL, inp(c, GRAPH_I32, SH(3, 4), -50, 50), inp(c, GRAPH_I32, SH(4), 1, 7)); }
CASE(div_i64_neg) { ND(c, div, NULL, inp(c, GRAPH_I64, SH(3, 4), -50, 50), inp(c, GRAPH_I64, SH(4), -7, -1)); }
CASE(maximum_i32) { ND(c, maximum, NULL, inp(c, GRAPH_I32, SH(3, 4), -9, 9), inp(c, GRAPH_I32, SH(3, 1), -9, 9)); }
CASE(minimum_i64) { ND(c, minimum, NULL, inp(c, GRAPH_I64, SH(3, 4), -9, 9), inp(c, GRAPH_I64, SH(4), -9, 9)); }

CASE(eq_f32) { ND(c, eq, NULL, inp_w(c, GRAPH_F32, SH(3, 4), -2, 2, 1), inp_w(c, GRAPH_F32, SH(4), -2, 2, 1)); }
CASE(lt_f32) { ND(c, lt, NULL, inp_w(c, GRAPH_F32, SH(2, 3), -2, 2, 1), inp_w(c, GRAPH_F32, SH(2, 1), -2, 2, 1)); }
CASE(gt_i64) { ND(c, gt, NULL, inp(c, GRAPH_I64, SH(3, 4), -3, 3), inp(c, GRAPH_I64, SH(3, 4), -3, 3)); }
CASE(lt_i32) { ND(c, lt, NULL, inp(c, GRAPH_I32, SH(3, 4), -3, 3), inp(c, GRAPH_I32, TG_NOINTS, -3, 3)); }
CASE(eq_bool) { ND(c, eq, NULL, inp(c, GRAPH_BOOL, SH(3, 4), 0, 1), inp(c, GRAPH_BOOL, SH(3, 4), 0, 1)); }
CASE(eq_i64) { ND(c, eq, NULL, inp(c, GRAPH_I64, SH(3, 4), -2, 2), inp(c, GRAPH_I64, SH(3, 4), -2, 2)); }

CASE(where_f32) { ND(c, where, NULL, inp(c, GRAPH_BOOL, SH(2, 1, 4), 0, 1), inpf(c, SH(3, 4)), inpf(c, SH(2, 3, 1))); }
CASE(where_i64) { ND(c, where, NULL, inp(c, GRAPH_BOOL, SH(3, 4), 0, 1), inp(c, GRAPH_I64, SH(3, 4), -9, 9), inp(c, GRAPH_I64, TG_NOINTS, -9, 9)); }
CASE(where_bool) { ND(c, where, NULL, inp(c, GRAPH_BOOL, SH(3, 4), 0, 1), inp(c, GRAPH_BOOL, SH(3, 4), 0, 1), inp(c, GRAPH_BOOL, SH(4), 0, 1)); }

/* f32 -> int truncates toward zero (values kept in range: no NaN). */
CASE(cast_f32_i32) { ND(c, cast, ATTRS(cast, GRAPH_I32), inp(c, GRAPH_F32, SH(3, 4), -9, 9)); }
CASE(cast_f32_i64) { ND(c, cast, ATTRS(cast, GRAPH_I64), inp(c, GRAPH_F32, SH(3, 4), -9, 9)); }
CASE(cast_f32_bool) { ND(c, cast, ATTRS(cast, GRAPH_BOOL), inp_w(c, GRAPH_F32, SH(3, 4), -2, 2, 1)); }
CASE(cast_bool_f32) { ND(c, cast, ATTRS(cast, GRAPH_F32), inp(c, GRAPH_BOOL, SH(3, 4), 0, 1)); }
CASE(cast_i64_f32) { ND(c, cast, ATTRS(cast, GRAPH_F32), inp(c, GRAPH_I64, SH(3, 4), -1000, 1000)); }
CASE(cast_i32_i64) { ND(c, cast, ATTRS(cast, GRAPH_I64), inp(c, GRAPH_I32, SH(3, 4), -1000, 1000)); }
CASE(cast_i64_bool) { ND(c, cast, ATTRS(cast, GRAPH_BOOL), inp(c, GRAPH_I64, SH(3, 4), -2, 2)); }

/* ---- matmul, linear ---- */

static void mm(tcase *c, graph_ints a, graph_ints b, int ta, int tb)
{
    ND(c, matmul, ATTRS(matmul, ta, tb), inpf(c, a), inpf(c, b));
}

CASE(matmul) { mm(c, SH(3, 4), SH(4, 5), 0, 0); }
CASE(matmul_ta) { mm(c, SH(4, 3), SH(4, 5), 1, 0); }
CASE(matmul_tb) { mm(c, SH(3, 4), SH(5, 4), 0, 1); }
CASE(matmul_ta_tb) { mm(c, SH(2, 4, 3), SH(5, 4), 1, 1); }
CASE(matmul_batch_bcast) { mm(c, SH(2, 1, 3, 4), SH(5, 4, 6), 0, 0); }
CASE(matmul_batch_tb) { mm(c, SH(2, 3, 4), SH(2, 5, 4), 0, 1); }
CASE(matmul_1d_2d) { mm(c, SH(4), SH(4, 5), 0, 0); }
CASE(matmul_2d_1d) { mm(c, SH(3, 4), SH(4), 0, 0); }
CASE(matmul_1d_1d) { mm(c, SH(4), SH(4), 0, 0); }
CASE(matmul_ta_1d) { mm(c, SH(4), SH(5, 4), 1, 1); }
CASE(linear_bias) { ND(c, linear, NULL, inpf(c, SH(2, 3, 8)), cst(c, GRAPH_F32, SH(5, 8), -1, 1), cst(c, GRAPH_F32, SH(5), -1, 1)); }
CASE(linear_nobias) { ND(c, linear, NULL, inpf(c, SH(4, 8)), inpf(c, SH(6, 8))); }
CASE(linear_1d) { ND(c, linear, NULL, inpf(c, SH(8)), inpf(c, SH(6, 8)), inpf(c, SH(6))); }

/* ---- conv, pools ---- */

static void conv(tcase *c, graph_ints x, graph_ints w, int bias, graph_conv2d_attrs a)
{
    int32_t xi = inpf(c, x), wi = cst(c, GRAPH_F32, w, -0.5, 0.5);
    if (bias)
        ND(c, conv2d, &a, xi, wi, inpf(c, SH(w.v[0])));
    else
        ND(c, conv2d, &a, xi, wi);
}

CASE(conv2d) { conv(c, SH(2, 3, 7, 7), SH(4, 3, 3, 3), 1, (graph_conv2d_attrs){TG_NOINTS, TG_INTS(1), TG_NOINTS, 1}); }
CASE(conv2d_stride_pad4) { conv(c, SH(1, 3, 8, 7), SH(4, 3, 3, 2), 1, (graph_conv2d_attrs){TG_INTS(2), TG_INTS(1, 0, 2, 1), TG_NOINTS, 1}); }
CASE(conv2d_dilation) { conv(c, SH(1, 2, 9, 9), SH(3, 2, 3, 3), 0, (graph_conv2d_attrs){TG_INTS(1, 2), TG_INTS(2, 1), TG_INTS(2), 1}); }
CASE(conv2d_groups) { conv(c, SH(1, 4, 6, 6), SH(6, 2, 3, 3), 1, (graph_conv2d_attrs){TG_NOINTS, TG_INTS(1), TG_NOINTS, 2}); }
CASE(conv2d_depthwise) { conv(c, SH(2, 4, 5, 5), SH(4, 1, 3, 3), 1, (graph_conv2d_attrs){TG_INTS(2), TG_INTS(1), TG_NOINTS, 4}); }
CASE(conv2d_1x1) { conv(c, SH(2, 5, 4, 3), SH(7, 5, 1, 1), 0, (graph_conv2d_attrs){TG_NOINTS, TG_NOINTS, TG_NOINTS, 1}); }

/* conv_transpose2d: w is ONNX's [C, M/group, kH, kW] already */
static void deconv(tcase *c, graph_ints x, graph_ints w, int bias,
                   graph_conv_transpose2d_attrs a)
{
    int32_t xi = inpf(c, x), wi = cst(c, GRAPH_F32, w, -0.5, 0.5);
    if (bias)
        ND(c, conv_transpose2d, &a, xi, wi, inpf(c, SH(w.v[1] * a.groups)));
    else
        ND(c, conv_transpose2d, &a, xi, wi);
}

CASE(conv_transpose2d) { deconv(c, SH(2, 3, 4, 5), SH(3, 4, 3, 3), 1, (graph_conv_transpose2d_attrs){TG_INTS(2), TG_INTS(1), TG_INTS(1), TG_NOINTS, 1}); }
CASE(conv_transpose2d_asym) { deconv(c, SH(1, 2, 4, 3), SH(2, 3, 3, 2), 0, (graph_conv_transpose2d_attrs){TG_INTS(3, 2), TG_INTS(1, 0, 2, 1), TG_INTS(2, 1), TG_NOINTS, 1}); }
/* output_padding 1 reaches the stride 1 (allowed below the dilation 2):
 * exported as less end padding (onnx_write_ops.c says why) */
CASE(conv_transpose2d_dil_groups) { deconv(c, SH(2, 4, 5, 4), SH(4, 3, 3, 2), 1, (graph_conv_transpose2d_attrs){TG_NOINTS, TG_INTS(0, 1, 1, 2), TG_INTS(1), TG_INTS(2), 2}); }
CASE(conv_transpose2d_depthwise) { deconv(c, SH(1, 4, 3, 3), SH(4, 1, 4, 4), 1, (graph_conv_transpose2d_attrs){TG_INTS(2), TG_INTS(1), TG_NOINTS, TG_NOINTS, 4}); }

CASE(max_pool2d) { ND(c, max_pool2d, ATTRS(max_pool2d, TG_INTS(3), TG_INTS(2), TG_INTS(1)), inpf(c, SH(2, 3, 9, 9))); }
CASE(max_pool2d_default_stride) { ND(c, max_pool2d, ATTRS(max_pool2d, TG_INTS(2), TG_NOINTS, TG_NOINTS), inpf(c, SH(1, 2, 7, 6))); }
CASE(max_pool2d_asym) { ND(c, max_pool2d, ATTRS(max_pool2d, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1)), inpf(c, SH(1, 2, 6, 7))); }
CASE(avg_pool2d_excl) { ND(c, avg_pool2d, ATTRS(avg_pool2d, TG_INTS(3), TG_INTS(2), TG_INTS(1), 0), inpf(c, SH(2, 3, 9, 9))); }
CASE(avg_pool2d_incl) { ND(c, avg_pool2d, ATTRS(avg_pool2d, TG_INTS(3), TG_INTS(2), TG_INTS(1), 1), inpf(c, SH(2, 3, 9, 9))); }
CASE(avg_pool2d_asym) { ND(c, avg_pool2d, ATTRS(avg_pool2d, TG_INTS(2, 3), TG_NOINTS, TG_INTS(1, 1, 0, 2), 0), inpf(c, SH(1, 2, 7, 8))); }
CASE(global_avg_pool) { ND(c, global_avg_pool, NULL, inpf(c, SH(2, 3, 5, 4))); }
CASE(global_avg_pool_1d) { ND(c, global_avg_pool, NULL, inpf(c, SH(2, 3, 5))); }

/* ---- normalization, softmax, reductions ---- */

CASE(batch_norm)
{
    ND(c, batch_norm, ATTRS(batch_norm, 1e-3f), inpf(c, SH(2, 3, 4, 4)), cst(c, GRAPH_F32, SH(3), 0.5, 1.5),
       cst(c, GRAPH_F32, SH(3), -1, 1), cst(c, GRAPH_F32, SH(3), -1, 1), cst(c, GRAPH_F32, SH(3), 0.5, 2));
}
CASE(layer_norm) { ND(c, layer_norm, ATTRS(layer_norm, -1, 1e-5f), inpf(c, SH(2, 3, 8)), inpf(c, SH(8)), inpf(c, SH(8))); }
CASE(layer_norm_no_weight) { ND(c, layer_norm, ATTRS(layer_norm, 1, 1e-5f), inpf(c, SH(2, 3, 4))); }
CASE(layer_norm_weight_only) { ND(c, layer_norm, ATTRS(layer_norm, -2, 1e-2f), inpf(c, SH(2, 3, 4)), inpf(c, SH(3, 4))); }
CASE(softmax) { ND(c, softmax, ATTRS(softmax, 1), inp(c, GRAPH_F32, SH(2, 5, 3), -4, 4)); }
CASE(softmax_last) { ND(c, softmax, ATTRS(softmax, -1), inp(c, GRAPH_F32, SH(2, 5, 3), -4, 4)); }
CASE(log_softmax) { ND(c, log_softmax, ATTRS(log_softmax, -1), inp(c, GRAPH_F32, SH(3, 6), -4, 4)); }
CASE(log_softmax_0) { ND(c, log_softmax, ATTRS(log_softmax, 0), inp(c, GRAPH_F32, SH(3, 6), -4, 4)); }

CASE(reduce_sum) { ND(c, reduce_sum, ATTRS(reduce_sum, TG_INTS(1), 0), inpf(c, SH(2, 3, 4))); }
CASE(reduce_sum_all) { ND(c, reduce_sum, ATTRS(reduce_sum, TG_NOINTS, 0), inpf(c, SH(2, 3, 4))); }
CASE(reduce_sum_i64_keep) { ND(c, reduce_sum, ATTRS(reduce_sum, TG_INTS(0, 2), 1), inp(c, GRAPH_I64, SH(2, 3, 4), -9, 9)); }
CASE(reduce_sum_scalar) { ND(c, reduce_sum, ATTRS(reduce_sum, TG_NOINTS, 0), inpf(c, TG_NOINTS)); }
CASE(reduce_mean_keep) { ND(c, reduce_mean, ATTRS(reduce_mean, TG_INTS(-1), 1), inpf(c, SH(2, 3, 4))); }
CASE(reduce_mean_all) { ND(c, reduce_mean, ATTRS(reduce_mean, TG_NOINTS, 0), inpf(c, SH(2, 3, 4))); }
CASE(reduce_max) { ND(c, reduce_max, ATTRS(reduce_max, TG_INTS(0, 1), 0), inpf(c, SH(2, 3, 4))); }
CASE(reduce_max_all_keep) { ND(c, reduce_max, ATTRS(reduce_max, TG_NOINTS, 1), inpf(c, SH(2, 3, 4))); }
CASE(reduce_max_i32) { ND(c, reduce_max, ATTRS(reduce_max, TG_INTS(-1), 0), inp(c, GRAPH_I32, SH(2, 3, 4), -99, 99)); }
/* argmax/argmin on whole numbers in [-2, 2], so ties are common and
 * select_last matters.  No NaN: ONNX leaves it open and ONNX Runtime keeps
 * a NaN only when it comes first (eager/kernels_reduce.c). */
CASE(argmax) { ND(c, argmax, ATTRS(argmax, 1, 1, 0), inp_w(c, GRAPH_F32, SH(3, 5, 4), -2, 2, 1)); }
CASE(argmax_last_neg) { ND(c, argmax, ATTRS(argmax, -1, 0, 1), inp_w(c, GRAPH_F32, SH(3, 5, 4), -2, 2, 1)); }
CASE(argmax_i32_row) { ND(c, argmax, ATTRS(argmax, 0, 0, 0), inp(c, GRAPH_I32, SH(300), -9, 9)); }
CASE(argmax_scalar) { ND(c, argmax, ATTRS(argmax, -1, 1, 0), inpf(c, TG_NOINTS)); }
CASE(argmin) { ND(c, argmin, ATTRS(argmin, 0, 0, 0), inp_w(c, GRAPH_F32, SH(6, 7), -2, 2, 1)); }
CASE(argmin_last_i64) { ND(c, argmin, ATTRS(argmin, -2, 1, 1), inp(c, GRAPH_I64, SH(2, 9, 3), -3, 3)); }
/* cumsum: every combination of exclusive and reverse, each dtype, a
 * negative axis, a 0-d x (reshaped around CumSum) */
CASE(cumsum) { ND(c, cumsum, ATTRS(cumsum, 1, 0, 0), inpf(c, SH(3, 5, 4))); }
CASE(cumsum_excl_neg) { ND(c, cumsum, ATTRS(cumsum, -1, 1, 0), inpf(c, SH(3, 5, 4))); }
CASE(cumsum_rev_i64) { ND(c, cumsum, ATTRS(cumsum, 0, 0, 1), inp(c, GRAPH_I64, SH(6, 7), -9, 9)); }
CASE(cumsum_excl_rev_i32) { ND(c, cumsum, ATTRS(cumsum, -2, 1, 1), inp(c, GRAPH_I32, SH(2, 9, 3), -9, 9)); }
CASE(cumsum_scalar) { ND(c, cumsum, ATTRS(cumsum, -1, 0, 0), inpf(c, TG_NOINTS)); }

/* ---- shape and data movement ---- */

CASE(reshape) { ND(c, reshape, ATTRS(reshape, TG_INTS(-1, 6)), inpf(c, SH(2, 3, 4))); }
CASE(reshape_flat_bool) { ND(c, reshape, ATTRS(reshape, TG_INTS(24)), inp(c, GRAPH_BOOL, SH(2, 3, 4), 0, 1)); }
CASE(flatten) { ND(c, flatten, ATTRS(flatten, 1, -1), inpf(c, SH(2, 3, 4, 5))); }
CASE(flatten_0_2) { ND(c, flatten, ATTRS(flatten, 0, 2), inpf(c, SH(2, 3, 4, 5))); }
CASE(flatten_scalar) { ND(c, flatten, ATTRS(flatten, 0, -1), inpf(c, TG_NOINTS)); }
CASE(transpose) { ND(c, transpose, ATTRS(transpose, TG_INTS(2, 0, 1)), inpf(c, SH(2, 3, 4))); }
CASE(transpose_reverse_i64) { ND(c, transpose, ATTRS(transpose, TG_NOINTS), inp(c, GRAPH_I64, SH(2, 3, 4), -9, 9)); }
CASE(concat) { ND(c, concat, ATTRS(concat, 1), inpf(c, SH(2, 1, 3)), inpf(c, SH(2, 4, 3)), inpf(c, SH(2, 2, 3))); }
CASE(concat_i32_neg) { ND(c, concat, ATTRS(concat, -1), inp(c, GRAPH_I32, SH(2, 3), -9, 9), inp(c, GRAPH_I32, SH(2, 2), -9, 9)); }
CASE(topk) { ND(c, topk, ATTRS(topk, 3, 1, 1, 1), inpf(c, SH(2, 7, 3))); }
CASE(topk_smallest) { ND(c, topk, ATTRS(topk, 2, -1, 0, 1), inpf(c, SH(4, 5))); }
CASE(split_rest) { ND(c, split, ATTRS(split, 1, TG_INTS(2, -1, 1)), inpf(c, SH(2, 7, 3))); }
CASE(split_last) { ND(c, split, ATTRS(split, -1, TG_INTS(3, 3)), inp(c, GRAPH_I64, SH(2, 6), -9, 9)); }
CASE(slice_reverse) { ND(c, slice, ATTRS(slice, TG_INTS(1), TG_INTS(-1), TG_INTS(-100), TG_INTS(-1)), inpf(c, SH(2, 5, 3))); }
CASE(slice_neg_step2) { ND(c, slice, ATTRS(slice, TG_INTS(-1), TG_INTS(5), TG_INTS(0), TG_INTS(-2)), inpf(c, SH(2, 7))); }
CASE(slice_multi) { ND(c, slice, ATTRS(slice, TG_INTS(0, 2), TG_INTS(1, -3), TG_INTS(100, -1), TG_INTS(1, 2)), inpf(c, SH(3, 2, 7))); }
CASE(slice_no_axes) { ND(c, slice, ATTRS(slice, TG_NOINTS, TG_INTS(0, 1), TG_INTS(2, 3), TG_NOINTS), inpf(c, SH(3, 4))); }
CASE(pad) { ND(c, pad, ATTRS(pad, TG_INTS(1, 0, 2, 3), 1.5f), inpf(c, SH(2, 3))); }
CASE(pad_negative) { ND(c, pad, ATTRS(pad, TG_INTS(-1, 1, 0, -2), 0.0f), inpf(c, SH(3, 5))); }
CASE(pad_i64) { ND(c, pad, ATTRS(pad, TG_INTS(0, 1, 1, 0), 7.0f), inp(c, GRAPH_I64, SH(2, 3), -9, 9)); }
CASE(pad_bool) { ND(c, pad, ATTRS(pad, TG_INTS(1, 1), 1.0f), inp(c, GRAPH_BOOL, SH(3), 0, 1)); }
CASE(squeeze_all) { ND(c, squeeze, ATTRS(squeeze, TG_NOINTS), inpf(c, SH(1, 3, 1, 4))); }
CASE(squeeze_axis) { ND(c, squeeze, ATTRS(squeeze, TG_INTS(-2)), inpf(c, SH(1, 3, 1, 4))); }
CASE(unsqueeze) { ND(c, unsqueeze, ATTRS(unsqueeze, TG_INTS(0, 3)), inpf(c, SH(2, 3))); }
CASE(unsqueeze_neg) { ND(c, unsqueeze, ATTRS(unsqueeze, TG_INTS(-1)), inp(c, GRAPH_BOOL, SH(2, 3), 0, 1)); }
CASE(expand) { ND(c, expand, ATTRS(expand, TG_INTS(2, 3, 4)), inpf(c, SH(3, 1))); }
CASE(expand_keep) { ND(c, expand, ATTRS(expand, TG_INTS(3, 1, 1, 1)), inp(c, GRAPH_I32, SH(2, 1, 4), -9, 9)); }
CASE(gather) { ND(c, gather, ATTRS(gather, 0), inpf(c, SH(5, 4)), inp(c, GRAPH_I64, SH(2, 3), -5, 4)); }
CASE(gather_axis1_i32) { ND(c, gather, ATTRS(gather, 1), inp(c, GRAPH_I64, SH(2, 5, 3), -9, 9), inp(c, GRAPH_I32, SH(4), -5, 4)); }
CASE(gather_scalar) { ND(c, gather, ATTRS(gather, -1), inpf(c, SH(3, 4)), cst(c, GRAPH_I64, TG_NOINTS, -4, 3)); }
/* gather_elements / scatter_elements: indices are inputs in [-n, n-1]
 * for an axis of n, longer than it along it (scatter duplicates: ONNX
 * leaves reduction none open there, ONNX Runtime applies them in order
 * as we do), shorter on other dims; max and min make the model opset 18. */
CASE(gather_elements) { ND(c, gather_elements, ATTRS(gather_elements, 0), inpf(c, SH(4, 5)), inp(c, GRAPH_I64, SH(6, 3), -4, 3)); }
CASE(gather_elements_i32_neg) { ND(c, gather_elements, ATTRS(gather_elements, -1), inp(c, GRAPH_I32, SH(2, 3, 5), -9, 9), inp(c, GRAPH_I32, SH(2, 2, 7), -5, 4)); }
CASE(gather_elements_bool) { ND(c, gather_elements, ATTRS(gather_elements, 1), inp(c, GRAPH_BOOL, SH(3, 4), 0, 1), inp(c, GRAPH_I64, SH(3, 2), -4, 3)); }
CASE(scatter_elements) { ND(c, scatter_elements, ATTRS(scatter_elements, 0, GRAPH_SCATTER_NONE), inpf(c, SH(3, 4)), inp(c, GRAPH_I64, SH(5, 4), -3, 2), inpf(c, SH(5, 4))); }
CASE(scatter_elements_add_i32) { ND(c, scatter_elements, ATTRS(scatter_elements, 1, GRAPH_SCATTER_ADD), inp(c, GRAPH_I32, SH(2, 4), -9, 9), inp(c, GRAPH_I32, SH(2, 9), -4, 3), inp(c, GRAPH_I32, SH(2, 9), -9, 9)); }
CASE(scatter_elements_mul) { ND(c, scatter_elements, ATTRS(scatter_elements, -1, GRAPH_SCATTER_MUL), inpf(c, SH(2, 3, 4)), inp(c, GRAPH_I64, SH(2, 2, 6), -4, 3), inpf(c, SH(2, 2, 6))); }
CASE(scatter_elements_max) { ND(c, scatter_elements, ATTRS(scatter_elements, 0, GRAPH_SCATTER_MAX), inpf(c, SH(4, 3)), inp(c, GRAPH_I64, SH(7, 3), -4, 3), inpf(c, SH(7, 3))); }
CASE(scatter_elements_min_i64) { ND(c, scatter_elements, ATTRS(scatter_elements, 1, GRAPH_SCATTER_MIN), inp(c, GRAPH_I64, SH(3, 5), -50, 50), inp(c, GRAPH_I32, SH(3, 8), -5, 4), inp(c, GRAPH_I64, SH(3, 8), -50, 50)); }
/* opset 18 moves ReduceMean's and ReduceMax's axes into an input */
CASE(scatter_max_reduce)
{
    int32_t s = NDI(c, scatter_elements, ATTRS(scatter_elements, 1, GRAPH_SCATTER_MIN), inpf(c, SH(3, 4)), inp(c, GRAPH_I64, SH(3, 6), -4, 3), inpf(c, SH(3, 6)));
    ND(c, reduce_max, ATTRS(reduce_max, TG_INTS(1), 0), s);
    ND(c, reduce_mean, ATTRS(reduce_mean, TG_INTS(0), 1), s);
    ND(c, reduce_sum, ATTRS(reduce_sum, TG_INTS(-1), 0), s);
}
CASE(scatter_elements_bool) { ND(c, scatter_elements, ATTRS(scatter_elements, 0, GRAPH_SCATTER_NONE), inp(c, GRAPH_BOOL, SH(4), 0, 1), inp(c, GRAPH_I64, SH(3), -4, 3), inp(c, GRAPH_BOOL, SH(3), 0, 1)); }

/* ---- optimizer-made ops ---- */

static void fused(tcase *c, const char *prog, const int32_t *in, int nin)
{
    graph_fused_attrs *a = calloc(1, sizeof *a);
    if (a)
        snprintf(a->prog.s, sizeof a->prog.s, "%s", prog);
    nd_n(c, GRAPH_OP_fused, in, nin, a, 1);
    free(a);
}

CASE(fused)
{
    fused(c, "r0=mul(i0,i1);r1=sigmoid(r0);r2=add(r1,0.5);r3=clip(r2,0.6,1.2);"
             "r4=leaky_relu(r3,0.1);r5=gelu(r4);r6=sub(r5,i0);r7=clip(r6,0)",
          IDS(inpf(c, SH(2, 3, 4)), inpf(c, SH(3, 4))));
}
CASE(fused_all_ops)
{
    fused(c, "r0=sub(1,i0);r1=rsqrt(r0);r2=silu(r1);r3=tanh(r2);r4=exp(r3);r5=log(r4);"
             "r6=pow(r5,2);r7=div(r6,i1);r8=maximum(r7,-1);r9=minimum(r8,i1);r10=abs(r9);"
             "r11=neg(r10);r12=erf(r11);r13=add(r12,2);r14=reciprocal(r13);r15=sqrt(r14);"
             "r16=relu(r15);r17=mul(r16,r0)",
          IDS(inp(c, GRAPH_F32, SH(3, 4), -3, 0.5), inp(c, GRAPH_F32, SH(4), 0.5, 2)));
}
/* sign and the rounding ops as statements; round on exact halves. */
CASE(fused_rounding)
{
    fused(c, "r0=mul(i0,4);r1=floor(r0);r2=mul(r1,0.5);r3=round(r2);r4=ceil(i0);r5=sign(i1);"
             "r6=mul(r4,r5);r7=add(r3,r6)",
          IDS(inp(c, GRAPH_F32, SH(3, 4), -3, 3), inpf(c, SH(4))));
}
/* The last statement reads only i1: its result is broadcast to the output. */
CASE(fused_bcast_out)
{
    fused(c, "r0=relu(i0);r1=add(i1,i1)", IDS(inpf(c, SH(2, 4)), inpf(c, SH(4))));
}

static void linear_ep(tcase *c, graph_ints x, graph_ints post, float alpha, int res)
{
    graph_ints rs = x;
    rs.v[rs.n - 1] = 6;
    graph_linear_ep_attrs a = {post, alpha};
    int32_t xi = inpf(c, x), wi = cst(c, GRAPH_F32, SH(6, x.v[x.n - 1]), -0.5, 0.5);
    int32_t bi = cst(c, GRAPH_F32, SH(6), -0.5, 0.5);
    if (res)
        ND(c, linear_ep, &a, xi, wi, bi, inpf(c, rs));
    else
        ND(c, linear_ep, &a, xi, wi, bi);
}

CASE(linear_ep_add_relu) { linear_ep(c, SH(3, 8), TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0, 1); }
CASE(linear_ep_gelu) { linear_ep(c, SH(2, 3, 8), TG_INTS(GRAPH_POST_GELU), 0, 0); }
CASE(linear_ep_leaky_sigmoid) { linear_ep(c, SH(3, 8), TG_INTS(GRAPH_POST_LEAKY_RELU, GRAPH_POST_SIGMOID), 0.1f, 0); }
CASE(linear_ep_silu_add_tanh) { linear_ep(c, SH(3, 8), TG_INTS(GRAPH_POST_SILU, GRAPH_POST_ADD, GRAPH_POST_TANH), 0, 1); }
CASE(linear_ep_none) { linear_ep(c, SH(3, 8), TG_NOINTS, 0, 0); }
CASE(linear_ep_hardswish_add) { linear_ep(c, SH(3, 8), TG_INTS(GRAPH_POST_HARDSWISH, GRAPH_POST_ADD), 0, 1); }

CASE(conv2d_ep_add_tanh)
{
    graph_conv2d_ep_attrs a = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1,
                               TG_INTS(GRAPH_POST_ADD, GRAPH_POST_TANH), 0};
    ND(c, conv2d_ep, &a, inpf(c, SH(1, 3, 6, 6)), cst(c, GRAPH_F32, SH(4, 3, 3, 3), -0.5, 0.5),
       cst(c, GRAPH_F32, SH(4), -0.5, 0.5), inpf(c, SH(1, 4, 6, 6)));
}
CASE(conv2d_ep_hardsigmoid)
{
    graph_conv2d_ep_attrs a = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1,
                               TG_INTS(GRAPH_POST_HARDSIGMOID), 0};
    ND(c, conv2d_ep, &a, inpf(c, SH(1, 3, 6, 6)), cst(c, GRAPH_F32, SH(4, 3, 3, 3), -2, 2),
       cst(c, GRAPH_F32, SH(4), -0.5, 0.5));
}
CASE(conv2d_ep_silu_stride)
{
    graph_conv2d_ep_attrs a = {TG_INTS(2), TG_INTS(0, 1, 1, 0), TG_NOINTS, 1,
                               TG_INTS(GRAPH_POST_SILU), 0};
    ND(c, conv2d_ep, &a, inpf(c, SH(2, 3, 7, 7)), cst(c, GRAPH_F32, SH(5, 3, 3, 3), -0.5, 0.5),
       cst(c, GRAPH_F32, SH(5), -0.5, 0.5));
}
CASE(to_blocked) { ND(c, to_blocked, ATTRS(to_blocked, 16), inpf(c, SH(2, 32, 3, 3))); }
CASE(from_blocked) { ND(c, from_blocked, NULL, inpf(c, SH(2, 2, 3, 3, 16))); }
/* padded blocks: 24 channels in 2 blocks (Pad / Slice on the channels) */
CASE(to_blocked_pad) { ND(c, to_blocked, ATTRS(to_blocked, 16), inpf(c, SH(2, 24, 3, 3))); }
CASE(from_blocked_pad) { ND(c, from_blocked, ATTRS(from_blocked, 24), inpf(c, SH(2, 2, 3, 3, 16))); }
CASE(conv2d_blk_stem) /* plain 3-channel x, 24 blocked channels out */
{
    graph_conv2d_blk_attrs a = {TG_INTS(2), TG_INTS(1), TG_NOINTS, 1, TG_INTS(GRAPH_POST_RELU), 0, 0,
                                -INFINITY, INFINITY, 16};
    ND(c, conv2d_blk, &a, inpf(c, SH(1, 3, 7, 7)), cst(c, GRAPH_F32, SH(24, 3, 3, 3), -0.3, 0.3),
       cst(c, GRAPH_F32, SH(24), -0.5, 0.5));
}
CASE(conv2d_blk_dw_pad) /* depthwise on 24 padded channels, sigmoid: zero lanes after */
{
    graph_conv2d_blk_attrs a = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 24, TG_INTS(GRAPH_POST_SIGMOID), 0, 0,
                                -INFINITY, INFINITY, 16};
    ND(c, conv2d_blk, &a, inpf(c, SH(1, 2, 5, 5, 16)), cst(c, GRAPH_F32, SH(24, 1, 3, 3), -0.5, 0.5),
       cst(c, GRAPH_F32, SH(24), -0.5, 0.5));
}
CASE(max_pool2d_blk)
{
    ND(c, max_pool2d_blk, ATTRS(max_pool2d_blk, TG_INTS(3), TG_INTS(2), TG_INTS(1)),
       inpf(c, SH(2, 2, 9, 9, 16)));
}
CASE(avg_pool2d_blk)
{
    ND(c, avg_pool2d_blk, ATTRS(avg_pool2d_blk, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1), 0),
       inpf(c, SH(1, 1, 6, 7, 16)));
}
CASE(conv2d_blk_add_relu)
{
    graph_conv2d_blk_attrs a = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 1,
                                TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0, 0, -INFINITY, INFINITY, 16};
    ND(c, conv2d_blk, &a, inpf(c, SH(1, 2, 5, 5, 16)), cst(c, GRAPH_F32, SH(16, 32, 3, 3), -0.2, 0.2),
       cst(c, GRAPH_F32, SH(16), -0.5, 0.5), inpf(c, SH(1, 1, 5, 5, 16)));
}
CASE(conv2d_blk_stride_gelu)
{
    graph_conv2d_blk_attrs a = {TG_INTS(2), TG_INTS(1), TG_NOINTS, 1, TG_INTS(GRAPH_POST_GELU), 0, 1,
                                -INFINITY, INFINITY, 16};
    ND(c, conv2d_blk, &a, inpf(c, SH(2, 1, 6, 6, 16)), cst(c, GRAPH_F32, SH(32, 16, 3, 3), -0.2, 0.2),
       cst(c, GRAPH_F32, SH(32), -0.5, 0.5));
}

/* 8-lane blocks (nChw8c): the same layout nodes with 8, padded 12 / 20
 * channels, a stem, depthwise, the residual, the pools */
CASE(to_blocked8) { ND(c, to_blocked, ATTRS(to_blocked, 8), inpf(c, SH(2, 16, 3, 3))); }
CASE(to_blocked8_pad) { ND(c, to_blocked, ATTRS(to_blocked, 8), inpf(c, SH(2, 12, 3, 3))); }
CASE(from_blocked8_pad) { ND(c, from_blocked, ATTRS(from_blocked, 20), inpf(c, SH(2, 3, 3, 3, 8))); }
CASE(conv2d_blk8_stem) /* plain 3-channel x, 20 channels out in 8-lane blocks */
{
    graph_conv2d_blk_attrs a = {TG_INTS(2), TG_INTS(1), TG_NOINTS, 1, TG_INTS(GRAPH_POST_RELU), 0, 0,
                                -INFINITY, INFINITY, 8};
    ND(c, conv2d_blk, &a, inpf(c, SH(1, 3, 7, 7)), cst(c, GRAPH_F32, SH(20, 3, 3, 3), -0.3, 0.3),
       cst(c, GRAPH_F32, SH(20), -0.5, 0.5));
}
CASE(conv2d_blk8_dw_add) /* depthwise on 12 padded channels, + residual, sigmoid */
{
    graph_conv2d_blk_attrs a = {TG_NOINTS, TG_INTS(1), TG_NOINTS, 12,
                                TG_INTS(GRAPH_POST_ADD, GRAPH_POST_SIGMOID), 0, 0,
                                -INFINITY, INFINITY, 8};
    ND(c, conv2d_blk, &a, inpf(c, SH(1, 2, 5, 5, 8)), cst(c, GRAPH_F32, SH(12, 1, 3, 3), -0.5, 0.5),
       cst(c, GRAPH_F32, SH(12), -0.5, 0.5), inpf(c, SH(1, 2, 5, 5, 8)));
}
CASE(conv2d_blk8_pad) /* 12 -> 20 channels, stride 2 */
{
    graph_conv2d_blk_attrs a = {TG_INTS(2), TG_INTS(1), TG_NOINTS, 1, TG_NOINTS, 0, 1,
                                -INFINITY, INFINITY, 8};
    ND(c, conv2d_blk, &a, inpf(c, SH(2, 2, 6, 6, 8)), cst(c, GRAPH_F32, SH(20, 12, 3, 3), -0.2, 0.2),
       cst(c, GRAPH_F32, SH(20), -0.5, 0.5));
}
CASE(max_pool2d_blk8)
{
    ND(c, max_pool2d_blk, ATTRS(max_pool2d_blk, TG_INTS(3), TG_INTS(2), TG_INTS(1)),
       inpf(c, SH(2, 3, 9, 9, 8)));
}
CASE(avg_pool2d_blk8)
{
    ND(c, avg_pool2d_blk, ATTRS(avg_pool2d_blk, TG_INTS(3, 2), TG_INTS(1, 2), TG_INTS(1, 0, 2, 1), 1),
       inpf(c, SH(1, 1, 6, 7, 8)));
}

/* ---- graph-level: outputs that are inputs or constants, names ---- */

CASE(passthrough)
{
    int32_t x = inpf(c, SH(2, 3)), k = cst(c, GRAPH_F32, SH(3), -1, 1);
    int32_t r = NDI(c, relu, NULL, x);
    graph_add_output(c->g, x, "x_again");
    graph_add_output(c->g, k, "a_constant");
    graph_add_output(c->g, r, "relu_once");
    graph_add_output(c->g, r, "relu_twice");
    graph_add_output(c->g, NDI(c, add, NULL, r, k), "sum");
    c->nout = 5;
}

/* A user's name "v1" on the input, "v2" on an inner value: the unnamed
 * values v1 and v2 (by id) must get other names. */
CASE(name_clash)
{
    int32_t x = inpf(c, SH(2, 3));
    c->g->values[x].name = graph_intern(c->g, "v1", -1);
    int32_t a = NDI(c, relu, NULL, x), b = NDI(c, neg, NULL, a);
    int32_t d = NDI(c, exp, NULL, b);
    c->g->values[d].name = graph_intern(c->g, "v2", -1);
    graph_add_output(c->g, NDI(c, add, NULL, d, a), "v3");
    c->nout = 1;
}

/* ---- the table ---- */

typedef struct case_def {
    const char *name;
    void (*build)(tcase *c);
} case_def;

#define C_(n) {#n, case_##n}
static const case_def op_cases[] = {
    C_(neg), C_(abs), C_(exp), C_(log), C_(sqrt), C_(rsqrt), C_(reciprocal), C_(relu),
    C_(leaky_relu), C_(sigmoid), C_(tanh), C_(gelu), C_(silu), C_(erf), C_(softplus), C_(clip),
    C_(clip_min_only), C_(clip_max_only), C_(neg_i64), C_(abs_i32), C_(sign), C_(sign_i64),
    C_(floor), C_(ceil), C_(round), C_(round_halves),
    C_(add_bcast), C_(sub_bcast), C_(mul_scalar), C_(div), C_(pow), C_(maximum), C_(minimum),
    C_(relu_grad),
    C_(add_i64), C_(sub_i32), C_(mul_i64), C_(div_i32), C_(div_i64_neg), C_(maximum_i32),
    C_(minimum_i64), C_(eq_f32), C_(lt_f32), C_(gt_i64), C_(lt_i32), C_(eq_bool), C_(eq_i64),
    C_(where_f32), C_(where_i64), C_(where_bool),
    C_(cast_f32_i32), C_(cast_f32_i64), C_(cast_f32_bool), C_(cast_bool_f32), C_(cast_i64_f32),
    C_(cast_i32_i64), C_(cast_i64_bool),
    C_(matmul), C_(matmul_ta), C_(matmul_tb), C_(matmul_ta_tb), C_(matmul_batch_bcast),
    C_(matmul_batch_tb), C_(matmul_1d_2d), C_(matmul_2d_1d), C_(matmul_1d_1d), C_(matmul_ta_1d),
    C_(linear_bias), C_(linear_nobias), C_(linear_1d),
    C_(conv2d), C_(conv2d_stride_pad4), C_(conv2d_dilation), C_(conv2d_groups),
    C_(conv2d_depthwise), C_(conv2d_1x1), C_(conv_transpose2d), C_(conv_transpose2d_asym),
    C_(conv_transpose2d_dil_groups), C_(conv_transpose2d_depthwise),
    C_(max_pool2d), C_(max_pool2d_default_stride), C_(max_pool2d_asym), C_(avg_pool2d_excl),
    C_(avg_pool2d_incl), C_(avg_pool2d_asym), C_(global_avg_pool), C_(global_avg_pool_1d),
    C_(batch_norm), C_(layer_norm), C_(layer_norm_no_weight), C_(layer_norm_weight_only),
    C_(softmax), C_(softmax_last), C_(log_softmax), C_(log_softmax_0),
    C_(reduce_sum), C_(reduce_sum_all), C_(reduce_sum_i64_keep), C_(reduce_sum_scalar),
    C_(reduce_mean_keep), C_(reduce_mean_all), C_(reduce_max), C_(reduce_max_all_keep),
    C_(reduce_max_i32), C_(argmax), C_(argmax_last_neg), C_(argmax_i32_row), C_(argmax_scalar),
    C_(argmin), C_(argmin_last_i64), C_(cumsum), C_(cumsum_excl_neg), C_(cumsum_rev_i64),
    C_(cumsum_excl_rev_i32), C_(cumsum_scalar),
    C_(reshape), C_(reshape_flat_bool), C_(flatten), C_(flatten_0_2), C_(flatten_scalar),
    C_(transpose), C_(transpose_reverse_i64), C_(concat), C_(concat_i32_neg), C_(split_rest),
    C_(split_last), C_(slice_reverse), C_(slice_neg_step2), C_(slice_multi), C_(slice_no_axes),
    C_(pad), C_(pad_negative), C_(pad_i64), C_(pad_bool), C_(squeeze_all), C_(squeeze_axis),
    C_(unsqueeze), C_(unsqueeze_neg), C_(expand), C_(expand_keep), C_(gather),
    C_(gather_axis1_i32), C_(gather_scalar), C_(gather_elements), C_(gather_elements_i32_neg),
    C_(gather_elements_bool), C_(scatter_elements), C_(scatter_elements_add_i32),
    C_(scatter_elements_mul), C_(scatter_elements_max), C_(scatter_elements_min_i64),
    C_(scatter_elements_bool), C_(scatter_max_reduce),
    C_(fused), C_(fused_all_ops), C_(fused_rounding), C_(fused_bcast_out),
    C_(linear_ep_add_relu), C_(linear_ep_gelu), C_(linear_ep_leaky_sigmoid),
    C_(linear_ep_silu_add_tanh), C_(linear_ep_none), C_(linear_ep_hardswish_add),
    C_(conv2d_ep_add_tanh), C_(conv2d_ep_silu_stride), C_(conv2d_ep_hardsigmoid), C_(to_blocked),
    C_(from_blocked), C_(conv2d_blk_add_relu),
    C_(conv2d_blk_stride_gelu),
    C_(topk),
    C_(topk_smallest),
    C_(to_blocked_pad),
    C_(from_blocked_pad),
    C_(conv2d_blk_stem),
    C_(conv2d_blk_dw_pad),
    C_(max_pool2d_blk),
    C_(avg_pool2d_blk),
    C_(to_blocked8), C_(to_blocked8_pad), C_(from_blocked8_pad), C_(conv2d_blk8_stem),
    C_(conv2d_blk8_dw_add), C_(conv2d_blk8_pad), C_(max_pool2d_blk8), C_(avg_pool2d_blk8),
    C_(passthrough), C_(name_clash),
};
#undef C_

#define N_OP_CASES ((int)(sizeof op_cases / sizeof op_cases[0]))

/* Builds op case i (a graph named after it); 0 on failure. */
static int case_build(int i, tcase *c)
{
    memset(c, 0, sizeof *c);
    c->seed = 0x1234 + (uint64_t)i * 7919;
    c->g = graph_new(op_cases[i].name);
    if (!c->g)
        return 0;
    op_cases[i].build(c);
    return c->g->noutputs > 0 && graph_verify(c->g, 0) == TG_OK;
}

static void case_free(tcase *c)
{
    for (int i = 0; i < c->nin; i++)
        eager_release(c->in[i]);
    graph_free(c->g);
    memset(c, 0, sizeof *c);
}

#endif
