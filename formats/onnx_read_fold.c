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

#include "../graph/alloc.h"
#include "../graph/infer_shape.h"
#include "onnx_read_impl.h"

/* A result under construction. */
typedef struct fres {
    graph_type t;
    char *data;
    int8_t *sym;
    int64_t n;
    size_t es;
} fres;

typedef enum {
    E_ADD, E_SUB, E_MUL, E_DIV, E_EQ, E_LT, E_GT, /* binary */
    E_NEG, E_ABS, E_SIGN,                         /* unary, every numeric dtype */
    E_SQRT, E_RECIP, E_FLOOR, E_CEIL, E_ROUND,    /* unary, f32 only */
    E_WHERE
} ekind;

/* Input i of the node (present and constant: onnx_fold checked). */
static const onnx_entry *arg(const onnx_reader *r, int i)
{
    return onnx_find(r, r->node->input[i]);
}

static int8_t mark(const onnx_entry *e, int64_t k)
{
    return e->sym ? e->sym[k] : ONNX_SYM_CONST;
}

static int64_t get_l(const onnx_entry *e, int64_t k)
{
    switch (e->type.dtype) {
    case GRAPH_I64: return ((const int64_t *)e->data)[k];
    case GRAPH_I32: return ((const int32_t *)e->data)[k];
    case GRAPH_F32: return 0; /* not read as an integer */
    default: return ((const uint8_t *)e->data)[k];
    }
}

static double get_d(const onnx_entry *e, int64_t k)
{
    return e->type.dtype == GRAPH_F32 ? ((const float *)e->data)[k]
                                      : (double)get_l(e, k);
}

/* Stores an integer (I32 wraps as the kernels' int32 arithmetic does). */
static void put_l(fres *o, int64_t k, int64_t v)
{
    switch (o->t.dtype) {
    case GRAPH_I64: ((int64_t *)o->data)[k] = v; break;
    case GRAPH_I32: ((int32_t *)o->data)[k] = (int32_t)(uint32_t)(uint64_t)v; break;
    case GRAPH_F32: ((float *)o->data)[k] = (float)v; break;
    default: ((uint8_t *)o->data)[k] = v != 0; break;
    }
}

/* A result of type t; *ok 0 (nothing allocated) past the fold limit. */
static tg_status res_new(onnx_reader *r, fres *o, const graph_type *t, int *ok)
{
    memset(o, 0, sizeof *o);
    o->t = *t;
    o->n = 1;
    *ok = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->dim[d] < 0 || __builtin_mul_overflow(o->n, t->dim[d], &o->n) ||
            o->n > ONNX_MAX_FOLD_ELEMS)
            return TG_OK;
    o->es = graph_dtype_size(t->dtype);
    o->data = tg_malloc(o->n ? (size_t)o->n * o->es : 1);
    o->sym = tg_malloc(o->n ? (size_t)o->n : 1);
    if (!o->data || !o->sym) {
        tg_free(o->data);
        tg_free(o->sym);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    memset(o->sym, (unsigned char)ONNX_SYM_CONST, (size_t)o->n);
    *ok = 1;
    return TG_OK;
}

/* Binds the result to output 0 (every element derived if `derived`). */
static tg_status res_bind(onnx_reader *r, fres *o, int derived, int *done)
{
    if (derived)
        memset(o->sym, (unsigned char)ONNX_SYM_DERIVED, (size_t)o->n);
    *done = 1;
    return onnx_bind_const_sym(r, 0, &o->t, o->data, o->sym);
}

/* Output element k is element src of e. */
static void copy_elem(fres *o, int64_t k, const onnx_entry *e, int64_t src)
{
    memcpy(o->data + k * (int64_t)o->es, (const char *)e->data + src * (int64_t)o->es,
           o->es);
    o->sym[k] = mark(e, src);
}

/* The one output type of op on in (0: the op refuses them; the
 * converter will then say why). */
static int infer1(graph_op op, const graph_type *in, int nin, const void *attrs,
                  graph_type *out)
{
    graph_type outs[GRAPH_MAX_NODE_IO];
    int nout = 0;
    if (graph_infer(op, in, nin, attrs, outs, GRAPH_MAX_NODE_IO, &nout, NULL, 0) !=
            TG_OK || nout != 1)
        return 0;
    *out = outs[0];
    return 1;
}

/* Row-major strides of t. */
static void strides_of(const graph_type *t, int64_t *s)
{
    int64_t acc = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        s[d] = acc;
        acc *= t->dim[d];
    }
}

/* The flat index into x (right-aligned against out) of out's element k. */
static int64_t bcast_at(const graph_type *out, const graph_type *x, int64_t k)
{
    int64_t idx = 0, stride = 1;
    int off = out->ndim - x->ndim;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t c = k % out->dim[d];
        k /= out->dim[d];
        if (d < off)
            continue;
        if (x->dim[d - off] != 1)
            idx += c * stride;
        stride *= x->dim[d - off];
    }
    return idx;
}

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
    if (mark(c, ic) != ONNX_SYM_CONST)
        o->sym[k] = ONNX_SYM_DERIVED;
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
        tg_free(o.data);
        tg_free(o.sym);
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
        tg_free(o.data);
        tg_free(o.sym);
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

/* The product of dims [from, to) of t (t exists: no overflow). */
static int64_t dims_prod(const graph_type *t, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= t->dim[d];
    return p;
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
    for (int64_t u = 0; u < dims_prod(&t, 0, ax); u++)
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

/* ---- ReduceProd, Mod, ScatterND (evaluated here only) ---- */

static tg_status fold_reduce_prod(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0);
    graph_ints axes;
    int64_t keep;
    int noop, ok;
    tg_status st = onnx_reduce_args(r, 0, &axes, &keep, &noop);
    if (st != TG_OK || a->type.dtype == GRAPH_BOOL)
        return st;
    if (noop) {
        *done = 1;
        return onnx_bind_copy(r, 0, a);
    }
    int nd = a->type.ndim;
    uint32_t red = axes.n ? 0 : (1u << nd) - 1;
    for (int i = 0; i < axes.n; i++) {
        int ax = graph_axis(axes.v[i], nd);
        if (ax < 0 || (red >> ax & 1))
            return TG_OK; /* the converter names it */
        red |= 1u << ax;
    }
    graph_type t = {a->type.dtype, 0, {0}}, full = a->type; /* full: kept as 1s */
    for (int d = 0; d < nd; d++) {
        if (red >> d & 1)
            full.dim[d] = 1;
        if (!(red >> d & 1) || keep)
            t.dim[t.ndim++] = full.dim[d];
    }
    fres o;
    st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    double *pd = tg_malloc((size_t)(o.n ? o.n : 1) * sizeof *pd);
    uint64_t *pl = tg_malloc((size_t)(o.n ? o.n : 1) * sizeof *pl);
    if (!pd || !pl) {
        tg_free(pd), tg_free(pl), tg_free(o.data), tg_free(o.sym);
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    }
    for (int64_t k = 0; k < o.n; k++)
        pd[k] = 1, pl[k] = 1;
    /* Each input element multiplies into the output it reduces to; the
     * f32 product accumulates in double, rounded once. */
    int8_t derived = 0;
    for (int64_t k = 0, n = graph_type_numel(&a->type); k < n; k++) {
        int64_t j = bcast_at(&a->type, &full, k);
        if (a->type.dtype == GRAPH_F32)
            pd[j] *= get_d(a, k);
        else
            pl[j] *= (uint64_t)get_l(a, k);
        derived |= mark(a, k) != ONNX_SYM_CONST;
    }
    for (int64_t k = 0; k < o.n; k++) {
        if (a->type.dtype == GRAPH_F32)
            ((float *)o.data)[k] = (float)pd[k];
        else
            put_l(&o, k, (int64_t)pl[k]);
    }
    tg_free(pd);
    tg_free(pl);
    return res_bind(r, &o, derived || onnx_entry_traced(a), done);
}

/* Mod: fmod 1 the remainder of truncating division (C's % and fmod),
 * its sign the dividend's; fmod 0 the remainder of flooring division
 * (Python's %), its sign the divisor's.  An integer divided by 0 is not
 * folded. */
static int mod_at(fres *o, int64_t k, const onnx_entry *a, const onnx_entry *b, int fmod_)
{
    int64_t i = bcast_at(&o->t, &a->type, k), j = bcast_at(&o->t, &b->type, k);
    o->sym[k] = mark(a, i) == ONNX_SYM_CONST && mark(b, j) == ONNX_SYM_CONST
                    ? ONNX_SYM_CONST : ONNX_SYM_DERIVED;
    if (o->t.dtype == GRAPH_F32) {
        double x = get_d(a, i), y = get_d(b, j), m = fmod(x, y);
        if (!fmod_ && m != 0 && (m < 0) != (y < 0))
            m += y;
        ((float *)o->data)[k] = (float)m;
        return 1;
    }
    int64_t x = get_l(a, i), y = get_l(b, j);
    if (y == 0)
        return 0;
    int64_t m = y == -1 ? 0 : x % y;
    if (!fmod_ && m != 0 && (m < 0) != (y < 0))
        m += y;
    put_l(o, k, m);
    return 1;
}

static tg_status fold_mod(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0), *b = arg(r, 1);
    int64_t fmod_;
    int ok = 1;
    graph_type t;
    fres o;
    tg_status st = onnx_attr_int(r, "fmod", 0, &fmod_);
    if (st != TG_OK || (fmod_ != 0 && fmod_ != 1) || a->type.dtype != b->type.dtype ||
        a->type.dtype == GRAPH_BOOL || graph_broadcast(&a->type, &b->type, &t) != TG_OK)
        return st;
    t.dtype = a->type.dtype;
    st = res_new(r, &o, &t, &ok);
    for (int64_t k = 0; st == TG_OK && ok && k < o.n; k++)
        ok = mod_at(&o, k, a, b, (int)fmod_);
    if (st != TG_OK || !ok) {
        tg_free(o.data);
        tg_free(o.sym);
        return st;
    }
    return res_bind(r, &o, 0, done);
}

/* ScatterND: data with, for each index tuple (the last dim of indices,
 * k long, negative from the end), the slice data[tuple] (dims k.. of
 * data) replaced by (or, with a reduction, combined with) the matching
 * slice of updates, in the order of the tuples.  Indices out of range or
 * shapes that do not fit are not folded (the converter names them). */
static tg_status fold_scatter_nd(onnx_reader *r, int kind, int *done)
{
    const onnx_entry *a = arg(r, 0), *idx = arg(r, 1), *upd = arg(r, 2);
    char red[8];
    int ok;
    tg_status st = onnx_attr_str(r, "reduction", "none", red, sizeof red);
    if (st != TG_OK)
        return st;
    int rk = !strcmp(red, "none") ? 0 : !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2
           : !strcmp(red, "max") ? 3 : !strcmp(red, "min") ? 4 : -1;
    const graph_type *dt = &a->type, *it = &idx->type, *ut = &upd->type;
    if (rk < 0 || (rk && r->opset < 16) || (rk > 2 && r->opset < 18) ||
        (it->dtype != GRAPH_I64 && it->dtype != GRAPH_I32) || ut->dtype != dt->dtype ||
        dt->dtype == GRAPH_BOOL || it->ndim < 1)
        return TG_OK;
    int q = it->ndim;
    if (it->dim[q - 1] < 1 || it->dim[q - 1] > dt->ndim)
        return TG_OK;
    int k = (int)it->dim[q - 1];
    /* updates: indices.shape[:-1] + data.shape[k:] */
    if (ut->ndim != q - 1 + dt->ndim - k)
        return TG_OK;
    for (int d = 0; d < ut->ndim; d++)
        if (ut->dim[d] != (d < q - 1 ? it->dim[d] : dt->dim[k + d - (q - 1)]))
            return TG_OK;
    fres o;
    st = res_new(r, &o, dt, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t e = 0; e < o.n; e++)
        copy_elem(&o, e, a, e);
    int64_t s[GRAPH_MAX_DIMS], slice = dims_prod(dt, k, dt->ndim);
    int64_t tuples = dims_prod(it, 0, q - 1);
    strides_of(dt, s);
    int derived = onnx_entry_traced(idx);
    for (int64_t u = 0; u < tuples && ok; u++) {
        int64_t base = 0;
        for (int j = 0; j < k && ok; j++) {
            int64_t v = get_l(idx, u * k + j), n = dt->dim[j];
            if (v < 0)
                v += n;
            ok = v >= 0 && v < n;
            base += v * s[j];
        }
        for (int64_t e = 0; e < slice && ok; e++) {
            int64_t at = base + e, from = u * slice + e;
            if (rk == 0) {
                copy_elem(&o, at, upd, from);
                continue;
            }
            if (mark(upd, from) != ONNX_SYM_CONST)
                o.sym[at] = ONNX_SYM_DERIVED;
            if (dt->dtype == GRAPH_F32) {
                float *p = (float *)o.data + at, x = ((const float *)upd->data)[from];
                *p = rk == 1 ? *p + x : rk == 2 ? *p * x : rk == 3 ? (x > *p ? x : *p)
                                                                   : (x < *p ? x : *p);
            } else {
                int64_t cur = dt->dtype == GRAPH_I64 ? ((int64_t *)o.data)[at]
                                                     : ((int32_t *)o.data)[at];
                int64_t x = get_l(upd, from);
                uint64_t uc = (uint64_t)cur, ux = (uint64_t)x;
                put_l(&o, at, rk == 1 ? (int64_t)(uc + ux) : rk == 2 ? (int64_t)(uc * ux)
                              : rk == 3 ? (x > cur ? x : cur) : (x < cur ? x : cur));
            }
        }
    }
    if (!ok) {
        tg_free(o.data);
        tg_free(o.sym);
        return TG_OK;
    }
    return res_bind(r, &o, derived, done);
}

/* ReduceProd, Mod and ScatterND, which only exist folded. */
tg_status onnx_cv_folded_only(onnx_reader *r, const onnx_op *op)
{
    const onnx_entry *e;
    int nreq = op->min_in;
    for (int i = 0; i < nreq; i++) {
        static const char *const names[3] = {"data", "indices", "updates"};
        tg_status st = onnx_const_input(r, i, nreq == 2 ? (i ? "B" : "A") : names[i], &e);
        if (st != TG_OK)
            return st;
        if (e->param)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "%s is evaluated at load time only, "
                             "and input %d '%s' is a param (replaceable at run time)",
                             op->name, i, e->key);
    }
    const char *what = !strcmp(op->name, "Mod")
        ? "two f32, i64 or i32 operands of one dtype that broadcast, fmod 0 or 1, "
          "no integer divisor 0"
        : !strcmp(op->name, "ScatterND")
        ? "i64/i32 indices in range whose last dim k is at most data's rank, "
          "updates of shape indices.shape[:-1] + data.shape[k:], and a reduction the "
          "opset has"
        : "valid axes and a non-bool input";
    return onnx_fail(r, TG_ERR_UNSUPPORTED, "%s is evaluated at load time only, on "
                     "constants: %s, with at most %d elements in the result", op->name,
                     what, ONNX_MAX_FOLD_ELEMS);
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
    {"ReduceProd", fold_reduce_prod, 0},
    {"Mod", fold_mod, 0},
    {"ScatterND", fold_scatter_nd, 0},
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
