/*
 * onnx_write_ops.c - ONNX export, one tracegraph node at a time: the
 * ONNX nodes (opset 17) of every op of graph/ops.def (the shape and
 * layout ops in onnx_write_shape.c).
 *
 * Most ops are one ONNX node of the same meaning; the rest are short
 * expansions whose temporaries are named "<op>_<node>_<what>":
 *   rsqrt        Reciprocal(Sqrt(x))
 *   relu_grad    Where(Greater(y, 0), dy, 0)
 *   silu         x * Sigmoid(x)
 *   gelu         x * 0.5 * (1 + Erf(x * 1/sqrt(2)))   (the erf form)
 *   where        on bools: Or(And(c, a), And(Not(c), b))
 *   matmul       Transpose of the last two dims for transpose_a/_b, MatMul
 *   linear       MatMul(x, Transpose(w)) (+ Add(b))
 *   layer_norm   LayerNormalization, with a ones Scale when no weight
 *   fused        one node per statement of its micro-program
 *   linear_ep, conv2d_ep
 *                the base op, then one node per epilogue step
 *   conv2d_blk   from_blocked (x, residual), Conv, epilogue, to_blocked
 *   argmax, argmin
 *                of a 0-d x: Reshape to [1], then ArgMax / ArgMin
 *   cumsum       CumSum with a 0-d int64 axis; a 0-d x is reshaped to [1]
 *                and back
 * Clip's bounds are f32 initializers (an infinite one left out), the
 * other lists opset 17 takes as inputs int64 initializers.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../graph/conv_attrs.h"
#include "../../graph/fused_prog.h"
#include "../../graph/graph_impl.h"
#include "onnx_write_impl.h"

/* ---- elementwise ---- */

/* ONNX op types of the ops that map one to one (NULL for the rest):
 * graph/ew_ops.def's onnx column, and the comparisons. */
static const char *simple_ew(graph_op op)
{
    static const char *const name[GRAPH_OP_COUNT] = {
#define EW(OP, N, COST, S, ONNX) [GRAPH_OP_##OP] = ONNX,
#include "../../graph/ew_ops.def"
#undef EW
        [GRAPH_OP_eq] = "Equal",
        [GRAPH_OP_lt] = "Less",
        [GRAPH_OP_gt] = "Greater",
    };
    return name[op];
}

static void gelu(onnx_w *w, const char *x, const char *y)
{
    const char *s = onnxw_tmp(w, "gelu_scaled"), *e = onnxw_tmp(w, "gelu_erf");
    const char *p = onnxw_tmp(w, "gelu_1p"), *h = onnxw_tmp(w, "gelu_xh");
    onnxw_node2(w, "Mul", x, onnxw_const_scalar(w, "inv_sqrt2", GRAPH_F32, M_SQRT1_2), s);
    onnxw_node1(w, "Erf", s, e);
    onnxw_node2(w, "Add", e, onnxw_const_scalar(w, "one", GRAPH_F32, 1.0), p);
    onnxw_node2(w, "Mul", x, onnxw_const_scalar(w, "half", GRAPH_F32, 0.5), h);
    onnxw_node2(w, "Mul", h, p, y);
}

/* Clip's bounds are optional inputs; an infinite one is left out. */
static void clip(onnx_w *w, const char *x, float lo, float hi, const char *y)
{
    const char *in[3] = {x, "", ""};
    int nin = 1;
    if (!(isinf(lo) && lo < 0)) {
        in[1] = onnxw_const_scalar(w, "min", GRAPH_F32, lo);
        nin = 2;
    }
    if (!(isinf(hi) && hi > 0)) {
        in[2] = onnxw_const_scalar(w, "max", GRAPH_F32, hi);
        nin = 3;
    }
    onnxw_node(w, "Clip", in, nin, &y, 1);
}

/*
 * y = op(a[, b]) for an elementwise op of a node or of a fused statement;
 * attr holds its f32 attributes (leaky_relu's alpha, clip's bounds).
 */
static void ew(onnx_w *w, graph_op op, const char *a, const char *b,
               const float *attr, const char *y)
{
    const char *simple = simple_ew(op), *t;
    if (simple) {
        if (b)
            onnxw_node2(w, simple, a, b, y);
        else
            onnxw_node1(w, simple, a, y);
        return;
    }
    switch (op) {
    case GRAPH_OP_rsqrt:
        t = onnxw_tmp(w, "sqrt");
        onnxw_node1(w, "Sqrt", a, t);
        onnxw_node1(w, "Reciprocal", t, y);
        break;
    case GRAPH_OP_silu:
        t = onnxw_tmp(w, "sigmoid");
        onnxw_node1(w, "Sigmoid", a, t);
        onnxw_node2(w, "Mul", a, t, y);
        break;
    case GRAPH_OP_gelu:
        gelu(w, a, y);
        break;
    case GRAPH_OP_leaky_relu:
        onnxw_attr_f(w, onnxw_node1(w, "LeakyRelu", a, y), "alpha", attr[0]);
        break;
    case GRAPH_OP_clip:
        clip(w, a, attr[0], attr[1], y);
        break;
    case GRAPH_OP_relu_grad: { /* a is dy, b relu's output */
        const char *zero = onnxw_const_scalar(w, "zero", GRAPH_F32, 0);
        const char *in[3] = {onnxw_tmp(w, "pos"), a, zero};
        onnxw_node2(w, "Greater", b, zero, in[0]);
        onnxw_node(w, "Where", in, 3, &y, 1);
        break;
    }
    default:
        onnxw_unsupported(w, "no ONNX form of this elementwise op");
        break;
    }
}

/* The f32 attributes of an elementwise node, as ew() takes them (those
 * of graph/ew_ops.def's ops, in ops.def order). */
static void ew_attrs(const graph_node *n, float attr[2])
{
    attr[0] = attr[1] = 0;
    if (!fused_op_ok(n->op, NULL))
        return;
    const graph_op_info *info = &graph_ops[n->op];
    for (int k = 0; k < info->nattrs && k < 2; k++)
        memcpy(&attr[k], (const char *)tg_node_attrs(n) + info->attr_descs()[k].offset,
               sizeof(float));
}

static tg_status emit_ew(onnx_w *w)
{
    float attr[2];
    ew_attrs(w->cur, attr);
    ew(w, w->cur->op, onnxw_in(w, 0), w->cur->nin > 1 ? onnxw_in(w, 1) : NULL, attr,
       onnxw_out(w, 0));
    return w->st;
}

/* A broadcast shape, or -1 when the shapes do not broadcast. */
static int bcast(const graph_type *a, const graph_type *b, graph_type *o)
{
    return graph_broadcast(a, b, o) == TG_OK ? 0 : -1;
}

/*
 * fused: one node per statement.  The node's output is the broadcast of
 * all its inputs; when the last statement's operands broadcast to less,
 * an Expand brings it to the output's shape (1 where the dims agree, so
 * dynamic dims stay free).
 */
static tg_status emit_fused(onnx_w *w)
{
    const graph_fused_attrs *at = tg_node_attrs(w->cur);
    const graph_type *out = &w->g->values[w->cur->out[0]].type;
    fused_prog *p = onnxw_alloc(w, sizeof *p);
    const char **reg = onnxw_alloc(w, FUSED_MAX_STMTS * sizeof *reg);
    graph_type *shape = onnxw_alloc(w, FUSED_MAX_STMTS * sizeof *shape);
    char why[256];
    if (!p || !reg || !shape)
        return w->st;
    if (fused_prog_parse(at->prog.s, w->cur->nin, p, why, sizeof why) != TG_OK)
        return onnxw_unsupported(w, why);
    for (int k = 0; k < p->nstmts && w->st == TG_OK; k++) {
        const fused_stmt *s = &p->stmt[k];
        const char *arg[2] = {NULL, NULL};
        graph_type sh = {GRAPH_F32, 0, {0}};
        for (int j = 0; j < s->nargs; j++) {
            const fused_arg *x = &s->arg[j];
            graph_type xs = {GRAPH_F32, 0, {0}}, o;
            if (x->kind == FUSED_ARG_INPUT) {
                arg[j] = onnxw_in(w, x->index);
                xs = w->g->values[w->cur->in[x->index]].type;
            } else if (x->kind == FUSED_ARG_REG) {
                arg[j] = reg[x->index];
                xs = shape[x->index];
            } else {
                arg[j] = onnxw_const_scalar(w, "imm", GRAPH_F32, x->imm);
            }
            if (bcast(&sh, &xs, &o) < 0)
                return onnxw_unsupported(w, "operands of a statement do not broadcast");
            sh = o;
        }
        char rn[16];
        snprintf(rn, sizeof rn, "r%d", k);
        int last = k == p->nstmts - 1, same = sh.ndim == out->ndim;
        for (int d = 0; same && d < sh.ndim; d++)
            same = sh.dim[d] == out->dim[d];
        reg[k] = last && same ? onnxw_out(w, 0) : onnxw_tmp(w, rn);
        shape[k] = sh;
        ew(w, s->op, arg[0], s->nargs > 1 ? arg[1] : NULL, s->attr, reg[k]);
        if (last && !same) {
            int64_t e[GRAPH_MAX_DIMS];
            for (int d = 0; d < out->ndim; d++) {
                int ds = d - (out->ndim - sh.ndim);
                e[d] = ds >= 0 && sh.dim[ds] == out->dim[d] ? 1 : out->dim[d];
            }
            onnxw_node2(w, "Expand", reg[k], onnxw_const_i64s(w, "shape", e, out->ndim),
                        onnxw_out(w, 0));
        }
    }
    return w->st;
}

/*
 * Where; on bools as (c and a) or (not c and b), since ONNX Runtime's CPU
 * Where has no bool kernel (ONNX allows it; a model ORT cannot load helps
 * no one).
 */
static tg_status emit_where(onnx_w *w)
{
    const char *in[3] = {onnxw_in(w, 0), onnxw_in(w, 1), onnxw_in(w, 2)};
    const char *y = onnxw_out(w, 0);
    if (w->g->values[w->cur->in[1]].type.dtype != GRAPH_BOOL) {
        onnxw_node(w, "Where", in, 3, &y, 1);
        return w->st;
    }
    const char *ca = onnxw_tmp(w, "c_and_a"), *nc = onnxw_tmp(w, "not_c");
    const char *ncb = onnxw_tmp(w, "not_c_and_b");
    onnxw_node2(w, "And", in[0], in[1], ca);
    onnxw_node1(w, "Not", in[0], nc);
    onnxw_node2(w, "And", nc, in[2], ncb);
    onnxw_node2(w, "Or", ca, ncb, y);
    return w->st;
}

static tg_status emit_cast(onnx_w *w)
{
    const graph_cast_attrs *a = tg_node_attrs(w->cur);
    onnxw_attr_i(w, onnxw_node1(w, "Cast", onnxw_in(w, 0), onnxw_out(w, 0)), "to",
                 onnx_dtype_code(a->to));
    return w->st;
}

/* ---- epilogues ---- */

/* One GRAPH_POST_* step: y = step(x) (ADD: x + res). */
static void post_step(onnx_w *w, int64_t code, graph_post_prm prm, const char *x,
                      const char *res, const char *y)
{
    float attr[2] = {prm.alpha, 0}, bounds[2] = {prm.clip_min, prm.clip_max};
    switch (code) {
    case GRAPH_POST_ADD: onnxw_node2(w, "Add", x, res, y); break;
    case GRAPH_POST_RELU: ew(w, GRAPH_OP_relu, x, NULL, attr, y); break;
    case GRAPH_POST_GELU: ew(w, GRAPH_OP_gelu, x, NULL, attr, y); break;
    case GRAPH_POST_SIGMOID: ew(w, GRAPH_OP_sigmoid, x, NULL, attr, y); break;
    case GRAPH_POST_TANH: ew(w, GRAPH_OP_tanh, x, NULL, attr, y); break;
    case GRAPH_POST_SILU: ew(w, GRAPH_OP_silu, x, NULL, attr, y); break;
    case GRAPH_POST_LEAKY_RELU: ew(w, GRAPH_OP_leaky_relu, x, NULL, attr, y); break;
    case GRAPH_POST_CLIP: ew(w, GRAPH_OP_clip, x, NULL, bounds, y); break;
    case GRAPH_POST_HARDSIGMOID: {
        Onnx__NodeProto *h = onnxw_node1(w, "HardSigmoid", x, y);
        onnxw_attr_f(w, h, "alpha", 1.0f / 6.0f);
        onnxw_attr_f(w, h, "beta", 0.5f);
        break;
    }
    case GRAPH_POST_HARDSWISH: onnxw_node1(w, "HardSwish", x, y); break;
    default: onnxw_unsupported(w, "unknown epilogue step"); break;
    }
}

/*
 * Where the base op of an epilogue op writes: y itself when there are no
 * steps, else a temporary that posts() carries on to y.
 */
static const char *base_out(onnx_w *w, const graph_ints *post, const char *y)
{
    return post->n ? onnxw_tmp(w, "base") : y;
}

static void posts(onnx_w *w, const graph_ints *post, graph_post_prm prm, const char *x,
                  const char *res, const char *y)
{
    for (int i = 0; i < post->n; i++) {
        char what[16];
        snprintf(what, sizeof what, "post%d", i);
        const char *dst = i == post->n - 1 ? y : onnxw_tmp(w, what);
        post_step(w, post->v[i], prm, x, res, dst);
        x = dst;
    }
}

/* ---- matmul, linear ---- */

/* x with its last two dims swapped. */
static const char *swap_last2(onnx_w *w, const char *x, int nd, const char *what)
{
    int64_t perm[GRAPH_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    perm[nd - 2] = nd - 1;
    perm[nd - 1] = nd - 2;
    const char *t = onnxw_tmp(w, what);
    onnxw_attr_ints(w, onnxw_node1(w, "Transpose", x, t), "perm", perm, nd);
    return t;
}

static tg_status emit_matmul(onnx_w *w)
{
    const graph_matmul_attrs *a = tg_node_attrs(w->cur);
    const graph_type *ta = &w->g->values[w->cur->in[0]].type;
    const graph_type *tb = &w->g->values[w->cur->in[1]].type;
    const char *x = onnxw_in(w, 0), *y = onnxw_in(w, 1);
    /* On a 1-D operand the transposes change nothing (graph/infer_linalg.c). */
    if (a->transpose_a && ta->ndim >= 2)
        x = swap_last2(w, x, ta->ndim, "aT");
    if (a->transpose_b && tb->ndim >= 2)
        y = swap_last2(w, y, tb->ndim, "bT");
    onnxw_node2(w, "MatMul", x, y, onnxw_out(w, 0));
    return w->st;
}

/* y = x @ wt^T (+ b); b may be NULL. */
static void linear(onnx_w *w, const char *x, const char *wt, const char *b,
                   const char *y)
{
    const char *t = swap_last2(w, wt, 2, "wT");
    const char *mm = b ? onnxw_tmp(w, "mm") : y;
    onnxw_node2(w, "MatMul", x, t, mm);
    if (b)
        onnxw_node2(w, "Add", mm, b, y);
}

static tg_status emit_linear(onnx_w *w)
{
    const graph_node *n = w->cur;
    if (n->op == GRAPH_OP_linear) {
        linear(w, onnxw_in(w, 0), onnxw_in(w, 1), n->nin > 2 ? onnxw_in(w, 2) : NULL,
               onnxw_out(w, 0));
        return w->st;
    }
    const graph_linear_ep_attrs *a = tg_node_attrs(n);
    const char *base = base_out(w, &a->post, onnxw_out(w, 0));
    linear(w, onnxw_in(w, 0), onnxw_in(w, 1), onnxw_in(w, 2), base);
    posts(w, &a->post, GRAPH_POST_PRM(a), base, n->nin > 3 ? onnxw_in(w, 3) : NULL,
          onnxw_out(w, 0));
    return w->st;
}

/* ---- conv and pools ---- */

typedef struct conv_geom {
    const graph_ints *stride, *padding, *dilation;
    int64_t groups;
} conv_geom;

static void conv(onnx_w *w, const char *x, const char *wt, const char *b,
                 const graph_type *wtype, const conv_geom *c, const char *y)
{
    const char *in[3] = {x, wt, b};
    int64_t k[2] = {wtype->dim[2], wtype->dim[3]}, s[2], d[2], p[4];
    graph_ints_pair(c->stride, 1, s);
    graph_ints_pair(c->dilation, 1, d);
    /* ONNX pads [x1_begin, x2_begin, x1_end, x2_end] = [top, left, bottom,
     * right]: the order graph_ints_pad4 gives */
    graph_ints_pad4(c->padding, p);
    Onnx__NodeProto *n = onnxw_node(w, "Conv", in, b ? 3 : 2, &y, 1);
    onnxw_attr_ints(w, n, "kernel_shape", k, 2);
    onnxw_attr_ints(w, n, "strides", s, 2);
    onnxw_attr_ints(w, n, "pads", p, 4);
    onnxw_attr_ints(w, n, "dilations", d, 2);
    onnxw_attr_i(w, n, "group", c->groups);
}

static tg_status emit_conv(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_type *wt = &w->g->values[n->in[1]].type;
    if (n->op == GRAPH_OP_conv2d) {
        const graph_conv2d_attrs *a = tg_node_attrs(n);
        conv_geom c = {&a->stride, &a->padding, &a->dilation, a->groups};
        conv(w, onnxw_in(w, 0), onnxw_in(w, 1), n->nin > 2 ? onnxw_in(w, 2) : NULL, wt, &c,
             onnxw_out(w, 0));
        return w->st;
    }
    const graph_conv2d_ep_attrs *a = tg_node_attrs(n);
    conv_geom c = {&a->stride, &a->padding, &a->dilation, a->groups};
    const char *base = base_out(w, &a->post, onnxw_out(w, 0));
    conv(w, onnxw_in(w, 0), onnxw_in(w, 1), onnxw_in(w, 2), wt, &c, base);
    posts(w, &a->post, GRAPH_POST_PRM(a), base, n->nin > 3 ? onnxw_in(w, 3) : NULL,
          onnxw_out(w, 0));
    return w->st;
}

/*
 * conv_transpose2d: ConvTranspose with every attribute explicit (w is
 * already ONNX's [C, M/group, kH, kW]); no auto_pad or output_shape.
 * ONNX Runtime refuses an output_padding that reaches the stride (it
 * checks the sizes of the convolution this one inverts); only the end
 * padding minus output_padding matters, so such an output_padding gives
 * what it can to the end padding first.
 */
static tg_status emit_conv_transpose(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_conv_transpose2d_attrs *a = tg_node_attrs(n);
    const graph_type *wt = &w->g->values[n->in[1]].type;
    const char *in[3] = {onnxw_in(w, 0), onnxw_in(w, 1), n->nin > 2 ? onnxw_in(w, 2) : NULL};
    const char *y = onnxw_out(w, 0);
    int64_t k[2] = {wt->dim[2], wt->dim[3]}, s[2], d[2], op[2], p[4];
    graph_ints_pair(&a->stride, 1, s);
    graph_ints_pair(&a->dilation, 1, d);
    graph_ints_pair(&a->output_padding, 0, op);
    graph_ints_pad4(&a->padding, p);
    for (int i = 0; i < 2; i++)
        if (op[i] >= s[i]) {
            int64_t m = op[i] < p[2 + i] ? op[i] : p[2 + i];
            op[i] -= m;
            p[2 + i] -= m;
        }
    Onnx__NodeProto *o = onnxw_node(w, "ConvTranspose", in, n->nin > 2 ? 3 : 2, &y, 1);
    onnxw_attr_ints(w, o, "kernel_shape", k, 2);
    onnxw_attr_ints(w, o, "strides", s, 2);
    onnxw_attr_ints(w, o, "pads", p, 4);
    onnxw_attr_ints(w, o, "output_padding", op, 2);
    onnxw_attr_ints(w, o, "dilations", d, 2);
    onnxw_attr_i(w, o, "group", a->groups);
    return w->st;
}

/* max_pool2d, avg_pool2d; their _blk forms unblock x, pool, block. */
static tg_status emit_pool(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_ints *kl, *sl, *pl;
    int avg = n->op == GRAPH_OP_avg_pool2d || n->op == GRAPH_OP_avg_pool2d_blk;
    int blk = n->op == GRAPH_OP_max_pool2d_blk || n->op == GRAPH_OP_avg_pool2d_blk;
    int64_t cip = 0;
    if (avg) { /* the _blk attrs have the same layout */
        const graph_avg_pool2d_attrs *a = tg_node_attrs(n);
        kl = &a->kernel, sl = &a->stride, pl = &a->padding, cip = a->count_include_pad;
    } else {
        const graph_max_pool2d_attrs *a = tg_node_attrs(n);
        kl = &a->kernel, sl = &a->stride, pl = &a->padding;
    }
    const graph_value *x = &w->g->values[n->in[0]], *y = &w->g->values[n->out[0]];
    const char *xp = onnxw_in(w, 0), *yp = onnxw_out(w, 0);
    if (blk) {
        xp = onnxw_tmp(w, "x_plain");
        yp = onnxw_tmp(w, "y_plain");
        onnxw_from_blocked(w, onnxw_in(w, 0), &x->type, x->dyn, 0, xp);
    }
    int64_t k[2], s[2], p[4];
    graph_ints_pair(kl, 1, k);
    graph_ints_pair(sl, 0, s);
    if (sl->n == 0) /* tracegraph's default stride is the kernel, ONNX's 1 */
        s[0] = k[0], s[1] = k[1];
    graph_ints_pad4(pl, p);
    Onnx__NodeProto *o = onnxw_node1(w, avg ? "AveragePool" : "MaxPool", xp, yp);
    onnxw_attr_ints(w, o, "kernel_shape", k, 2);
    onnxw_attr_ints(w, o, "strides", s, 2);
    onnxw_attr_ints(w, o, "pads", p, 4);
    if (avg)
        onnxw_attr_i(w, o, "count_include_pad", cip);
    if (blk) {
        graph_type plain = y->type;
        plain.ndim = 4;
        plain.dim[1] = y->type.dim[1] * y->type.dim[4];
        onnxw_to_blocked(w, yp, &plain, y->dyn, y->type.dim[4], onnxw_out(w, 0));
    }
    return w->st;
}

/* ---- normalization, softmax, reductions ---- */

static tg_status emit_batch_norm(onnx_w *w)
{
    const graph_batch_norm_attrs *a = tg_node_attrs(w->cur);
    const char *in[5], *y = onnxw_out(w, 0);
    for (int k = 0; k < 5; k++)
        in[k] = onnxw_in(w, k);
    onnxw_attr_f(w, onnxw_node(w, "BatchNormalization", in, 5, &y, 1), "epsilon", a->eps);
    return w->st;
}

static tg_status emit_layer_norm(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_layer_norm_attrs *a = tg_node_attrs(n);
    const graph_type *x = &w->g->values[n->in[0]].type;
    if (x->ndim == 0)
        return onnxw_unsupported(w, "ONNX LayerNormalization needs rank >= 1, x is 0-d");
    int axis = a->axis < 0 ? (int)a->axis + x->ndim : (int)a->axis;
    const char *in[3] = {onnxw_in(w, 0), NULL, n->nin > 2 ? onnxw_in(w, 2) : ""};
    const char *y = onnxw_out(w, 0);
    if (n->nin > 1) {
        in[1] = onnxw_in(w, 1);
    } else { /* ONNX's Scale is required: ones over x.shape[axis:] */
        int64_t count = 1;
        for (int d = axis; d < x->ndim; d++)
            count *= x->dim[d];
        float *ones = onnxw_alloc(w, (size_t)count * sizeof *ones + 1);
        for (int64_t i = 0; ones && i < count; i++)
            ones[i] = 1.0f;
        in[1] = ones ? onnxw_const(w, "ones", GRAPH_F32, x->dim + axis, x->ndim - axis, ones)
                     : NULL;
    }
    Onnx__NodeProto *o = onnxw_node(w, "LayerNormalization", in, n->nin > 2 ? 3 : 2, &y, 1);
    onnxw_attr_i(w, o, "axis", a->axis);
    onnxw_attr_f(w, o, "epsilon", a->eps);
    return w->st;
}

static tg_status emit_softmax(onnx_w *w)
{
    const graph_node *n = w->cur;
    int log = n->op == GRAPH_OP_log_softmax;
    int64_t axis = log ? ((const graph_log_softmax_attrs *)tg_node_attrs(n))->axis
                       : ((const graph_softmax_attrs *)tg_node_attrs(n))->axis;
    if (w->g->values[n->in[0]].type.ndim == 0)
        return onnxw_unsupported(w, "ONNX Softmax needs rank >= 1, x is 0-d");
    onnxw_attr_i(w, onnxw_node1(w, log ? "LogSoftmax" : "Softmax", onnxw_in(w, 0), onnxw_out(w, 0)),
                 "axis", axis);
    return w->st;
}

/* ReduceSum takes axes as an input in opset 13+, ReduceMean/Max as an
 * attribute until opset 18 (written when a scatter_elements needs it:
 * onnx_write.c); no axes reduces every dim, as tracegraph. */
static tg_status emit_reduce(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_ints *axes;
    int64_t keep;
    const char *type;
    if (n->op == GRAPH_OP_reduce_sum) {
        const graph_reduce_sum_attrs *a = tg_node_attrs(n);
        axes = &a->axes, keep = a->keepdim, type = "ReduceSum";
    } else if (n->op == GRAPH_OP_reduce_mean) {
        const graph_reduce_mean_attrs *a = tg_node_attrs(n);
        axes = &a->axes, keep = a->keepdim, type = "ReduceMean";
    } else {
        const graph_reduce_max_attrs *a = tg_node_attrs(n);
        axes = &a->axes, keep = a->keepdim, type = "ReduceMax";
    }
    if (w->g->values[n->in[0]].type.ndim == 0) { /* reducing a scalar copies it */
        onnxw_node1(w, "Identity", onnxw_in(w, 0), onnxw_out(w, 0));
        return w->st;
    }
    Onnx__NodeProto *o;
    int input = n->op == GRAPH_OP_reduce_sum || w->opset >= 18;
    if (input && axes->n)
        o = onnxw_node2(w, type, onnxw_in(w, 0), onnxw_const_i64s(w, "axes", axes->v, axes->n),
                        onnxw_out(w, 0));
    else
        o = onnxw_node1(w, type, onnxw_in(w, 0), onnxw_out(w, 0));
    if (!input && axes->n)
        onnxw_attr_ints(w, o, "axes", axes->v, axes->n);
    onnxw_attr_i(w, o, "keepdims", keep);
    return w->st;
}

/* ArgMax/ArgMin want rank >= 1: a 0-d x (whose index is 0) is reshaped
 * to [1] first.  Our NaN rule (NaN is the extreme) is NumPy's; ONNX
 * leaves it open (kernels_reduce.c). */
static tg_status emit_arg(onnx_w *w)
{
    const graph_node *n = w->cur;
    graph_argmax_attrs a;
    if (n->op == GRAPH_OP_argmin) {
        const graph_argmin_attrs *m = tg_node_attrs(n);
        a = (graph_argmax_attrs){m->axis, m->keepdim, m->select_last};
    } else {
        a = *(const graph_argmax_attrs *)tg_node_attrs(n);
    }
    const char *x = onnxw_in(w, 0);
    if (w->g->values[n->in[0]].type.ndim == 0) {
        const int64_t one = 1;
        const char *x1 = onnxw_tmp(w, "x1");
        onnxw_node2(w, "Reshape", x, onnxw_const_i64s(w, "shape", &one, 1), x1);
        x = x1;
        a.axis = 0, a.keepdim = 0;
    }
    Onnx__NodeProto *o = onnxw_node1(w, n->op == GRAPH_OP_argmin ? "ArgMin" : "ArgMax", x,
                                     onnxw_out(w, 0));
    onnxw_attr_i(w, o, "axis", a.axis);
    onnxw_attr_i(w, o, "keepdims", a.keepdim);
    if (a.select_last)
        onnxw_attr_i(w, o, "select_last_index", a.select_last);
    return w->st;
}

/* topk: TopK with K as an initializer; Values and Indices. */
static tg_status emit_topk(onnx_w *w)
{
    const graph_topk_attrs *a = tg_node_attrs(w->cur);
    const char *in[2] = {onnxw_in(w, 0), onnxw_const_i64s(w, "k", &a->k, 1)};
    const char *out[2] = {onnxw_out(w, 0), onnxw_out(w, 1)};
    Onnx__NodeProto *o = onnxw_node(w, "TopK", in, 2, out, 2);
    onnxw_attr_i(w, o, "axis", a->axis);
    onnxw_attr_i(w, o, "largest", a->largest);
    onnxw_attr_i(w, o, "sorted", a->sorted);
    return w->st;
}

/* cumsum: CumSum, axis a 0-d int64 initializer.  ONNX Runtime wants an
 * axis in [-rank, rank): a 0-d x goes through [1] and back.  Both add f32
 * in order along the axis (eager/kernels_scan.c). */
static tg_status emit_cumsum(onnx_w *w)
{
    const graph_cumsum_attrs *a = tg_node_attrs(w->cur);
    const char *x = onnxw_in(w, 0), *y = onnxw_out(w, 0);
    int64_t axis = a->axis;
    int scalar = w->g->values[w->cur->in[0]].type.ndim == 0;
    if (scalar) {
        const int64_t one = 1;
        const char *x1 = onnxw_tmp(w, "x1");
        onnxw_node2(w, "Reshape", x, onnxw_const_i64s(w, "shape", &one, 1), x1);
        x = x1, y = onnxw_tmp(w, "y1"), axis = 0;
    }
    const char *in[2] = {x, onnxw_const_scalar(w, "axis", GRAPH_I64, (double)axis)};
    Onnx__NodeProto *o = onnxw_node(w, "CumSum", in, 2, &y, 1);
    if (a->exclusive)
        onnxw_attr_i(w, o, "exclusive", a->exclusive);
    if (a->reverse)
        onnxw_attr_i(w, o, "reverse", a->reverse);
    if (scalar) {
        const int64_t none = 0; /* a valid pointer for the empty list */
        onnxw_node2(w, "Reshape", y, onnxw_const_i64s(w, "shape0", &none, 0), onnxw_out(w, 0));
    }
    return w->st;
}

/* conv2d_blk: unblock x (and the residual), conv + epilogue, block. */
static tg_status emit_conv2d_blk(onnx_w *w)
{
    const graph_node *n = w->cur;
    const graph_conv2d_blk_attrs *a = tg_node_attrs(n);
    const graph_value *x = &w->g->values[n->in[0]], *y = &w->g->values[n->out[0]];
    const graph_type *wt = &w->g->values[n->in[1]].type;
    const char *xp = onnxw_in(w, 0), *res = NULL, *yp = onnxw_tmp(w, "y_plain");
    if (x->type.ndim == 5) { /* else plain already (a stem) */
        xp = onnxw_tmp(w, "x_plain");
        onnxw_from_blocked(w, onnxw_in(w, 0), &x->type, x->dyn, wt->dim[1] * a->groups, xp);
    }
    if (n->nin > 3) {
        const graph_value *r = &w->g->values[n->in[3]];
        res = onnxw_tmp(w, "residual_plain");
        onnxw_from_blocked(w, onnxw_in(w, 3), &r->type, r->dyn, wt->dim[0], res);
    }
    conv_geom c = {&a->stride, &a->padding, &a->dilation, a->groups};
    const char *base = base_out(w, &a->post, yp);
    conv(w, xp, onnxw_in(w, 1), onnxw_in(w, 2), &w->g->values[n->in[1]].type, &c, base);
    posts(w, &a->post, GRAPH_POST_PRM(a), base, res, yp);
    graph_type plain = y->type;
    plain.ndim = 4;
    plain.dim[1] = wt->dim[0];
    onnxw_to_blocked(w, yp, &plain, y->dyn, a->block, onnxw_out(w, 0));
    return w->st;
}

/* ---- dispatch ---- */

tg_status onnxw_emit_node(onnx_w *w)
{
    graph_op op = w->cur->op;
    if (simple_ew(op) || graph_ops[op].props & GRAPH_PROP_ELEMENTWISE) {
        if (op == GRAPH_OP_fused)
            return emit_fused(w);
        if (op == GRAPH_OP_where)
            return emit_where(w);
        if (op == GRAPH_OP_cast)
            return emit_cast(w);
        return emit_ew(w);
    }
    switch (op) {
    case GRAPH_OP_matmul: return emit_matmul(w);
    case GRAPH_OP_linear:
    case GRAPH_OP_linear_ep: return emit_linear(w);
    case GRAPH_OP_conv2d:
    case GRAPH_OP_conv2d_ep: return emit_conv(w);
    case GRAPH_OP_conv2d_blk: return emit_conv2d_blk(w);
    case GRAPH_OP_conv_transpose2d: return emit_conv_transpose(w);
    case GRAPH_OP_max_pool2d:
    case GRAPH_OP_avg_pool2d:
    case GRAPH_OP_max_pool2d_blk:
    case GRAPH_OP_avg_pool2d_blk: return emit_pool(w);
    case GRAPH_OP_global_avg_pool:
        onnxw_node1(w, "GlobalAveragePool", onnxw_in(w, 0), onnxw_out(w, 0));
        return w->st;
    case GRAPH_OP_batch_norm: return emit_batch_norm(w);
    case GRAPH_OP_layer_norm: return emit_layer_norm(w);
    case GRAPH_OP_softmax:
    case GRAPH_OP_log_softmax: return emit_softmax(w);
    case GRAPH_OP_reduce_sum:
    case GRAPH_OP_reduce_mean:
    case GRAPH_OP_reduce_max: return emit_reduce(w);
    case GRAPH_OP_argmax:
    case GRAPH_OP_argmin: return emit_arg(w);
    case GRAPH_OP_topk: return emit_topk(w);
    case GRAPH_OP_cumsum: return emit_cumsum(w);
    case GRAPH_OP_dropout:
    case GRAPH_OP_rng_advance:
    case GRAPH_OP_batch_norm_train:
        /* ONNX's Dropout draws other numbers and its training
         * BatchNormalization updates the running variance with the biased
         * one: an export would not compute what this graph does */
        return onnxw_unsupported(w, "a training-mode op has no ONNX export; set the graph to "
                                    "eval first (opt_set_training(g, 0))");
    case GRAPH_OP_sgd_step:
    case GRAPH_OP_adamw_step:
        return onnxw_unsupported(w, "an optimizer update has no ONNX form (the "
                                    "ai.onnx.preview.training domain is not written): "
                                    "export the graph without its training step");
    case GRAPH_OP_conv2d_grad_weight:
    case GRAPH_OP_conv2d_grad_input:
    case GRAPH_OP_max_pool2d_grad:
    case GRAPH_OP_batch_norm_train_grad:
    case GRAPH_OP_batch_norm_pool_grad:
    case GRAPH_OP_layer_norm_grad:
        return onnxw_unsupported(w, "a gradient op has no ONNX form (the "
                                    "ai.onnx.preview.training domain is not written): "
                                    "export the forward graph");
    default: return onnxw_emit_shape_op(w);
    }
}
