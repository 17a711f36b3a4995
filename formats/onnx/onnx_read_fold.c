/*
 * onnx_read_fold.c - the ONNX importer's load-time evaluator.  A node
 * whose inputs are all constants (initializers, Constant nodes, folded
 * Shapes and whatever was folded from them) and whose op is in the table
 * at the end is computed here into a constant entry when its result has
 * at most ONNX_MAX_FOLD_ELEMS elements; otherwise its converter adds a
 * graph node as usual.  This is what turns the shape arithmetic of
 * PyTorch exports with a dynamic batch (Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape) into Reshape's shape.
 *
 * Elements carry marks (onnx_read_impl.h): data movement keeps each
 * element's mark, a cast between integer types keeps it, x+0, x-0, x*1
 * and x/1 keep it, and anything else computed from a marked element is
 * derived; so is every element of a result whose other operands (axes,
 * starts, Gather's indices, a shape) came from traced values.
 *
 * The arithmetic is what the graph's kernels do: f32 ops in f32 (each
 * + - * / and sqrt computed in double and rounded once, which equals the
 * f32 result), integer ops in two's complement with C's truncating
 * division.  What a kernel leaves undefined (an integer divided by 0, a
 * float cast to an integer it does not fit) is not folded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_read_fold.h"

typedef enum {
    E_ADD, E_SUB, E_MUL, E_DIV, E_EQ, E_LT, E_GT, /* binary */
    E_NEG, E_ABS, E_SIGN,                         /* unary, every numeric dtype */
    E_SQRT, E_RECIP, E_FLOOR, E_CEIL, E_ROUND,    /* unary, f32 only */
    E_WHERE
} ekind;

/* ---- elementwise ---- */

/* x op y on integers; 0 when undefined. */
static int arith_l(ekind k, int64_t x, int64_t y, int64_t *out)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (k) {
    case E_ADD: *out = (int64_t)(ux + uy); return 1;
    case E_SUB: *out = (int64_t)(ux - uy); return 1;
    case E_MUL: *out = (int64_t)(ux * uy); return 1;
    default:
        if (y == 0 || (x == INT64_MIN && y == -1))
            return 0;
        *out = x / y;
        return 1;
    }
}

static double arith_d(ekind k, double x, double y)
{
    switch (k) {
    case E_ADD: return x + y;
    case E_SUB: return x - y;
    case E_MUL: return x * y;
    default: return x / y;
    }
}

/* The mark of x op y: an identity keeps the marked side's mark. */
static int8_t arith_mark(ekind k, int8_t mx, int8_t my, double x, double y)
{
    if (mx == ONNX_SYM_CONST && my == ONNX_SYM_CONST)
        return ONNX_SYM_CONST;
    if (my == ONNX_SYM_CONST &&
        (((k == E_ADD || k == E_SUB) && y == 0) || ((k == E_MUL || k == E_DIV) && y == 1)))
        return mx;
    if (mx == ONNX_SYM_CONST && ((k == E_ADD && x == 0) || (k == E_MUL && x == 1)))
        return my;
    return ONNX_SYM_DERIVED;
}

/* A comparison with a marked operand is known only for a size (>= 0)
 * against a negative number (PyTorch's "== -1" tests of shapes). */
static int8_t compare_mark(ekind k, int8_t mx, int8_t my, double x, double y)
{
    if (mx == ONNX_SYM_CONST && my == ONNX_SYM_CONST)
        return ONNX_SYM_CONST;
    if (k == E_EQ && ((mx >= 0 && my == ONNX_SYM_CONST && y < 0) ||
                      (my >= 0 && mx == ONNX_SYM_CONST && x < 0)))
        return ONNX_SYM_CONST;
    return ONNX_SYM_DERIVED;
}

/* Element k of a binary op (a, b broadcast to o); 0 if undefined. */
static int binary_at(ekind kind, fres *o, int64_t k, const onnx_entry *a,
                     const onnx_entry *b)
{
    int64_t i = bcast_at(&o->t, &a->type, k), j = bcast_at(&o->t, &b->type, k);
    double x = get_d(a, i), y = get_d(b, j);
    int8_t mx = mark(a, i), my = mark(b, j);
    int is_f = a->type.dtype == GRAPH_F32;
    if (kind >= E_EQ) {
        int v = kind == E_EQ ? (is_f ? x == y : get_l(a, i) == get_l(b, j))
              : kind == E_LT ? (is_f ? x < y : get_l(a, i) < get_l(b, j))
                             : (is_f ? x > y : get_l(a, i) > get_l(b, j));
        ((uint8_t *)o->data)[k] = (uint8_t)v;
        o->sym[k] = compare_mark(kind, mx, my, x, y);
        return 1;
    }
    o->sym[k] = arith_mark(kind, mx, my, x, y);
    if (is_f) {
        ((float *)o->data)[k] = (float)arith_d(kind, x, y);
        return 1;
    }
    int64_t v;
    if (!arith_l(kind, get_l(a, i), get_l(b, j), &v))
        return 0;
    put_l(o, k, v);
    return 1;
}

/* A unary op of f32 x, in double: exact for every op but sqrt and
 * 1/x, which round once to f32 afterwards as the kernels do.  sign and
 * round as eager/kernels_unary.c: sign(+-0) = +0, sign(NaN) = NaN;
 * round half to even (nearbyint in the default rounding mode). */
static double unary_d(ekind kind, double x)
{
    switch (kind) {
    case E_NEG: return -x;
    case E_ABS: return fabs(x);
    case E_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x != x ? x : 0.0;
    case E_SQRT: return sqrt(x);
    case E_FLOOR: return floor(x);
    case E_CEIL: return ceil(x);
    case E_ROUND: return nearbyint(x);
    default: return 1.0 / x;
    }
}

/* Element k of a unary op; 0 if undefined. */
static int unary_at(ekind kind, fres *o, int64_t k, const onnx_entry *a)
{
    o->sym[k] = mark(a, k) == ONNX_SYM_CONST ? ONNX_SYM_CONST : ONNX_SYM_DERIVED;
    if (a->type.dtype == GRAPH_F32) {
        ((float *)o->data)[k] = (float)unary_d(kind, get_d(a, k));
        return 1;
    }
    int64_t x = get_l(a, k);
    if (kind == E_SIGN) {
        put_l(o, k, (x > 0) - (x < 0));
        return 1;
    }
    if (x == INT64_MIN)
        return 0;
    put_l(o, k, kind == E_NEG ? -x : x < 0 ? -x : x);
    return 1;
}

/* Element k of Where(c, a, b). */
static void where_at(fres *o, int64_t k, const onnx_entry *c, const onnx_entry *a,
                     const onnx_entry *b)
{
    int64_t ic = bcast_at(&o->t, &c->type, k);
    const onnx_entry *src = get_l(c, ic) ? a : b;
    copy_elem(o, k, src, bcast_at(&o->t, &src->type, k));
    if (mark(c, ic) != ONNX_SYM_CONST) {
        o->sym[k] = ONNX_SYM_DERIVED;
        o->src[k] = -1;
    }
}

/* The output type of an elementwise op; 0 if it does not apply. */
static int elementwise_type(ekind kind, const onnx_entry *const *in, int nin,
                            graph_type *out)
{
    graph_dtype dt = in[nin - 1]->type.dtype;
    if (kind == E_WHERE ? in[0]->type.dtype != GRAPH_BOOL || in[1]->type.dtype != dt
        : kind < E_NEG ? in[0]->type.dtype != dt
                       : (dt == GRAPH_BOOL || (kind >= E_SQRT && dt != GRAPH_F32)))
        return 0;
    if (kind < E_EQ && dt == GRAPH_BOOL)
        return 0;
    *out = in[0]->type;
    for (int i = 1; i < nin; i++) {
        graph_type acc = *out; /* graph_broadcast's out may not alias a */
        if (graph_broadcast(&acc, &in[i]->type, out) != TG_OK)
            return 0;
    }
    out->dtype = kind >= E_EQ && kind <= E_GT ? GRAPH_BOOL : dt;
    return 1;
}

static tg_status fold_elementwise(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *in[3];
    int nin = kind == E_WHERE ? 3 : kind >= E_NEG ? 1 : 2, ok = 1;
    for (int i = 0; i < nin; i++)
        in[i] = arg(r, i);
    graph_type t;
    fres o;
    if (!elementwise_type((ekind)kind, in, nin, &t))
        return TG_OK;
    tg_status st = res_new(r, &o, &t, &ok);
    for (int64_t k = 0; st == TG_OK && ok && k < o.n; k++) {
        if (kind == E_WHERE)
            where_at(&o, k, in[0], in[1], in[2]);
        else if (nin == 2)
            ok = binary_at((ekind)kind, &o, k, in[0], in[1]);
        else
            ok = unary_at((ekind)kind, &o, k, in[0]);
    }
    if (st != TG_OK || !ok) {
        res_free(&o);
        return st;
    }
    return res_bind(r, &o, 0, done);
}

/* ---- Cast ---- */

/* Element k of a cast of a; 0 when a float does not fit the integer type. */
static int cast_at(fres *o, int64_t k, const onnx_entry *a)
{
    graph_dtype from = a->type.dtype, to = o->t.dtype;
    int8_t m = mark(a, k);
    int ints = from != GRAPH_F32 && from != GRAPH_BOOL && to != GRAPH_F32 &&
               to != GRAPH_BOOL;
    o->sym[k] = m == ONNX_SYM_CONST || ints ? m : ONNX_SYM_DERIVED;
    if (from != GRAPH_F32) {
        put_l(o, k, get_l(a, k)); /* to f32: one rounding, as (float)v */
        return 1;
    }
    double x = get_d(a, k);
    if (to == GRAPH_F32 || to == GRAPH_BOOL) {
        put_l(o, k, 0);
        if (to == GRAPH_F32)
            ((float *)o->data)[k] = (float)x;
        else
            ((uint8_t *)o->data)[k] = x != 0;
        return 1;
    }
    double lim = to == GRAPH_I32 ? 2147483648.0 : 9223372036854775808.0;
    if (!(x > -lim - 1 && x < lim))
        return 0;
    put_l(o, k, (int64_t)x);
    return 1;
}

static tg_status fold_cast(onnx_reader *r, int kind, int *done)
{
    graph_dtype to;
    fres o;
    int ok;
    const onnx_entry *a = arg(r, 0);
    tg_status st = onnx_cast_to(r, &to);
    if (st != TG_OK)
        return st;
    graph_type t = a->type;
    t.dtype = to;
    st = res_new(r, &o, &t, &ok);
    for (int64_t k = 0; st == TG_OK && ok && k < o.n; k++)
        ok = cast_at(&o, k, a);
    if (st != TG_OK || !ok) {
        res_free(&o);
        return st;
    }
    return res_bind(r, &o, 0, done);
}

/* ---- data movement ---- */

/* A result that is input 0's elements in order, in type t. */
static tg_status same_order(onnx_reader *r, const graph_type *t, int derived,
                            int *done)
{
    const onnx_entry *a = arg(r, 0);
    fres o;
    int ok;
    tg_status st = res_new(r, &o, t, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t k = 0; k < o.n; k++)
        copy_elem(&o, k, a, k);
    return res_bind(r, &o, derived, done);
}

static tg_status fold_reshape(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0);
    graph_reshape_attrs at;
    int64_t allowzero;
    graph_type t;
    tg_status st = onnx_attr_int(r, "allowzero", 0, &allowzero);
    if (st == TG_OK)
        st = onnx_const_ints(r, 1, "shape", &at.shape, GRAPH_MAX_DIMS);
    if (st != TG_OK)
        return st;
    for (int i = 0; !allowzero && i < at.shape.n; i++)
        if (at.shape.v[i] == 0) {
            if (i >= a->type.ndim)
                return TG_OK;
            at.shape.v[i] = a->type.dim[i];
        }
    if (!infer1(GRAPH_OP_reshape, &a->type, 1, &at, &t))
        return TG_OK;
    return same_order(r, &t, r->specialized, done);
}

/* Squeeze / Unsqueeze (kind: the graph op). */
static tg_status fold_squeeze(onnx_reader *r, int kind, int *done)
{
    graph_squeeze_attrs at; /* unsqueeze's attrs have the same layout */
    int present;
    graph_type t;
    tg_status st = onnx_ints_operand(r, 1, 13, "axes", &at.axes, &present);
    if (st != TG_OK || (kind == GRAPH_OP_unsqueeze && !present) ||
        !infer1((graph_op)kind, &arg(r, 0)->type, 1, &at, &t))
        return st;
    return same_order(r, &t, r->specialized, done);
}

static tg_status fold_identity(onnx_reader *r, int kind, int *done)
{
    *done = 1;
    return onnx_bind_copy(r, 0, arg(r, 0));
}

static tg_status fold_transpose(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0);
    graph_ints p;
    int perm[GRAPH_MAX_DIMS], ok;
    int64_t s[GRAPH_MAX_DIMS];
    fres o;
    char why[200];
    tg_status st = onnx_attr_ints(r, "perm", &p, GRAPH_MAX_DIMS, NULL);
    if (st != TG_OK || graph_transpose_perm(&a->type, &p, perm, why, sizeof why) != TG_OK)
        return st;
    graph_type t = a->type;
    for (int d = 0; d < t.ndim; d++)
        t.dim[d] = a->type.dim[perm[d]];
    strides_of(&a->type, s);
    st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t k = 0; k < o.n; k++) {
        int64_t rest = k, src = 0;
        for (int d = t.ndim - 1; d >= 0; d--) {
            src += rest % t.dim[d] * s[perm[d]];
            rest /= t.dim[d];
        }
        copy_elem(&o, k, a, src);
    }
    return res_bind(r, &o, 0, done);
}

static tg_status fold_slice(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0);
    graph_slice_attrs at;
    graph_slice_plan plan;
    int64_t s[GRAPH_MAX_DIMS];
    fres o;
    int ok;
    char why[200];
    tg_status st = onnx_slice_attrs(r, &at);
    if (st != TG_OK || graph_slice_resolve(&a->type, &at, &plan, why, sizeof why) != TG_OK)
        return st;
    graph_type t = a->type;
    for (int d = 0; d < t.ndim; d++)
        t.dim[d] = plan.len[d];
    strides_of(&a->type, s);
    st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t k = 0; k < o.n; k++) {
        int64_t rest = k, src = 0;
        for (int d = t.ndim - 1; d >= 0; d--) {
            src += (plan.start[d] + rest % t.dim[d] * plan.step[d]) * s[d];
            rest /= t.dim[d];
        }
        copy_elem(&o, k, a, src);
    }
    return res_bind(r, &o, r->specialized, done);
}

static tg_status fold_expand(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0);
    graph_expand_attrs at;
    graph_type t;
    fres o;
    int ok;
    tg_status st = onnx_const_ints(r, 1, "shape", &at.shape, GRAPH_MAX_DIMS);
    /* A shape from traced sizes: the converter makes the result follow
     * them where it can. */
    if (st != TG_OK || r->specialized || !infer1(GRAPH_OP_expand, &a->type, 1, &at, &t))
        return st;
    st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t k = 0; k < o.n; k++)
        copy_elem(&o, k, a, bcast_at(&t, &a->type, k));
    return res_bind(r, &o, 0, done);
}

static tg_status fold_gather(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0), *idx = arg(r, 1);
    graph_gather_attrs at;
    graph_type in[2] = {a->type, idx->type}, t;
    fres o;
    int ok;
    tg_status st = onnx_attr_int(r, "axis", 0, &at.axis);
    if (st != TG_OK || !infer1(GRAPH_OP_gather, in, 2, &at, &t))
        return st;
    int ax = graph_axis(at.axis, a->type.ndim);
    int64_t len = a->type.dim[ax], ni = graph_type_numel(&idx->type);
    int64_t inner = dims_prod(&a->type, ax + 1, a->type.ndim);
    for (int64_t j = 0; j < ni; j++)
        if (get_l(idx, j) < -len || get_l(idx, j) >= len)
            return TG_OK; /* the kernel reports it at run time */
    st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t k = 0; k < o.n; k++) {
        int64_t i = k % inner, j = k / inner % ni, u = k / inner / ni;
        int64_t at_ax = get_l(idx, j) < 0 ? get_l(idx, j) + len : get_l(idx, j);
        copy_elem(&o, k, a, (u * len + at_ax) * inner + i);
    }
    return res_bind(r, &o, onnx_entry_traced(idx), done);
}

static tg_status fold_concat(onnx_reader *r, int kind, int *done)
{
    int n = (int)r->node->n_input, ok;
    graph_concat_attrs at;
    graph_type in[GRAPH_MAX_NODE_IO], t;
    fres o;
    if (!onnx_attr(r, "axis") || n > GRAPH_MAX_NODE_IO)
        return TG_OK;
    tg_status st = onnx_attr_int(r, "axis", 0, &at.axis);
    for (int i = 0; i < n; i++)
        in[i] = arg(r, i)->type;
    if (st != TG_OK || !infer1(GRAPH_OP_concat, in, n, &at, &t))
        return st;
    st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    int ax = graph_axis(at.axis, t.ndim);
    int64_t inner = dims_prod(&t, ax + 1, t.ndim), k = 0;
    /* none when the result is empty: the dims before the axis alone may
     * hold 2^40 positions of nothing */
    for (int64_t u = 0, outer = o.n ? dims_prod(&t, 0, ax) : 0; u < outer; u++)
        for (int i = 0; i < n; i++) {
            int64_t span = in[i].dim[ax] * inner;
            for (int64_t j = 0; j < span; j++)
                copy_elem(&o, k++, arg(r, i), u * span + j);
        }
    return res_bind(r, &o, 0, done);
}

/* ---- Range ---- */

/* The element count of Range(start, limit, delta) on integers; -1 if it
 * is undefined (delta 0) or past the fold limit. */
static int64_t range_count_l(int64_t start, int64_t limit, int64_t delta)
{
    int64_t span;
    if (delta == 0 || __builtin_sub_overflow(limit, start, &span) ||
        (delta == -1 && span == INT64_MIN))
        return -1;
    if ((span > 0) != (delta > 0) || span == 0)
        return 0;
    int64_t n = span / delta + (span % delta != 0);
    return n > ONNX_MAX_FOLD_ELEMS ? -1 : n;
}

static tg_status fold_range(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *in[3];
    int traced = 0, ok;
    for (int i = 0; i < 3; i++) {
        in[i] = arg(r, i);
        traced |= onnx_entry_traced(in[i]);
        if (graph_type_numel(&in[i]->type) != 1 || in[i]->type.dtype != in[0]->type.dtype ||
            in[i]->type.dtype == GRAPH_BOOL)
            return TG_OK;
    }
    graph_type t = {in[0]->type.dtype, 1, {0}};
    if (t.dtype == GRAPH_F32) {
        double s = get_d(in[0], 0), l = get_d(in[1], 0), d = get_d(in[2], 0);
        double n = ceil((l - s) / d);
        if (!(n <= ONNX_MAX_FOLD_ELEMS)) /* also NaN, a delta of 0 */
            return TG_OK;
        t.dim[0] = n > 0 ? (int64_t)n : 0;
    } else {
        t.dim[0] = range_count_l(get_l(in[0], 0), get_l(in[1], 0), get_l(in[2], 0));
        if (t.dim[0] < 0)
            return TG_OK;
    }
    fres o;
    tg_status st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    r->specialized |= traced; /* its length follows the traced values */
    for (int64_t k = 0; k < o.n; k++) {
        if (t.dtype == GRAPH_F32)
            ((float *)o.data)[k] = (float)(get_d(in[0], 0) + (double)k * get_d(in[2], 0));
        else
            put_l(&o, k, (int64_t)((uint64_t)get_l(in[0], 0) +
                                   (uint64_t)k * (uint64_t)get_l(in[2], 0)));
    }
    return res_bind(r, &o, traced, done);
}

tg_status onnx_cv_range(onnx_reader *r, const onnx_op *op)
{
    static const char *const what[3] = {"start", "limit", "delta"};
    const onnx_entry *e;
    for (int i = 0; i < 3; i++) {
        tg_status st = onnx_const_input(r, i, what[i], &e);
        if (st != TG_OK)
            return st;
    }
    /* Constant, yet not folded: too long, or not a Range tracegraph makes. */
    return onnx_fail(r, TG_ERR_UNSUPPORTED, "Range is evaluated at load time only, "
                     "with three one-element f32/i64/i32 operands of one dtype, a "
                     "delta not 0 and at most %d elements", ONNX_MAX_FOLD_ELEMS);
}

/* ---- the table ---- */

typedef tg_status (*fold_fn)(onnx_reader *r, int kind, int *done);

static const struct {
    const char *name;
    fold_fn fn;
    int kind;
} folds[] = {
    {"Identity", fold_identity, 0},
    {"Add", fold_elementwise, E_ADD}, {"Sub", fold_elementwise, E_SUB},
    {"Mul", fold_elementwise, E_MUL}, {"Div", fold_elementwise, E_DIV},
    {"Equal", fold_elementwise, E_EQ}, {"Less", fold_elementwise, E_LT},
    {"Greater", fold_elementwise, E_GT}, {"Neg", fold_elementwise, E_NEG},
    {"Abs", fold_elementwise, E_ABS}, {"Sign", fold_elementwise, E_SIGN},
    {"Sqrt", fold_elementwise, E_SQRT}, {"Reciprocal", fold_elementwise, E_RECIP},
    {"Floor", fold_elementwise, E_FLOOR}, {"Ceil", fold_elementwise, E_CEIL},
    {"Round", fold_elementwise, E_ROUND}, {"Where", fold_elementwise, E_WHERE},
    {"Cast", fold_cast, 0},
    {"Reshape", fold_reshape, 0},
    {"Squeeze", fold_squeeze, GRAPH_OP_squeeze},
    {"Unsqueeze", fold_squeeze, GRAPH_OP_unsqueeze},
    {"Transpose", fold_transpose, 0},
    {"Slice", fold_slice, 0},
    {"Expand", fold_expand, 0},
    {"Gather", fold_gather, 0},
    {"Concat", fold_concat, 0},
    {"Range", fold_range, 0},
    {"ReduceProd", onnx_fold_reduce_prod, 0},
    {"Mod", onnx_fold_mod, 0},
    {"ScatterND", onnx_fold_scatter_nd, 0},
    {"NonZero", onnx_fold_nonzero, 0},
};

tg_status onnx_fold(onnx_reader *r, const onnx_op *op, int *done)
{
    size_t i = 0, nf = sizeof folds / sizeof folds[0];
    *done = 0;
    while (i < nf && strcmp(folds[i].name, op->name))
        i++;
    if (i == nf)
        return TG_OK;
    /* Every input present is a constant, not a param (a weight the user
     * may replace stays a param); the fold functions read the required
     * inputs (all of a variadic op's) directly. */
    for (size_t k = 0; k < r->node->n_input; k++) {
        int required = (int)k < op->min_in || op->max_in < 0;
        const onnx_entry *e = onnx_has_input(r, (int)k) ? arg(r, (int)k) : NULL;
        if (!onnx_has_input(r, (int)k) ? required : !e || !e->is_const || e->param)
            return TG_OK;
    }
    tg_status st = folds[i].fn(r, folds[i].kind, done);
    if (st != TG_OK || !*done)
        return st;
    /* The result's dims are traced when an operand read as a list (axes,
     * a shape, starts) was, or an input's dims were. */
    int traced = r->specialized;
    for (size_t k = 0; k < r->node->n_input; k++)
        if (onnx_has_input(r, (int)k))
            traced |= arg(r, (int)k)->traced_shape;
    onnx_entry *e = onnx_find(r, r->node->output[0]);
    if (e)
        e->traced_shape = traced;
    return TG_OK;
}
