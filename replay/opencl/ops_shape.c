/*
 * ops_shape.c - OpenCL shape and data-movement ops, by element size
 * (cl/shape.cl).  The view ops are one buffer copy; transpose, expand,
 * slice, concat, split and the blocked-layout conversions are strided
 * copies (one launch per part); pad and gather have their own kernels,
 * gather_elements and scatter_elements theirs in cl/index.cl.
 * Attributes were validated by shape inference; the run-time shapes come
 * from the variant, so every geometry is computed at enqueue.
 */
#include <stdio.h>
#include <string.h>

#include "../../graph/infer_shape.h"
#include "ocl.h"

static const char *size_opts(graph_dtype dt)
{
    size_t s = graph_dtype_size(dt);
    return s == 8 ? "-DT=ulong" : s == 4 ? "-DT=uint" : "-DT=uchar";
}

static size_t esize(const graph_type *t) { return graph_dtype_size(t->dtype); }

static void strides(const graph_type *t, int64_t *s)
{
    int64_t v = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        s[i] = v;
        v *= t->dim[i];
    }
}

/* ---- view ops: one copy ---- */

static tg_status view_prepare(ocl_prep *c) { return TG_OK; }

static tg_status view_enqueue(ocl_launch *l)
{
    size_t n = (size_t)graph_type_numel(&l->in_type[0]) * esize(&l->in_type[0]);
    if (!n || l->in[0] == l->out[0])
        return TG_OK;
    cl_int e = clEnqueueCopyBuffer(l->q, l->in[0], l->out[0], 0, 0, n, 0, NULL, NULL);
    l->enq[OCL_ENQ_COPY]++;
    return e == CL_SUCCESS ? TG_OK : ocl_fail(l, TG_ERR_BACKEND, "clEnqueueCopyBuffer: %s",
                                              ocl_errstr(e));
}

static const ocl_op view_op = {view_prepare, view_enqueue};

/* ---- strided copies ---- */

/* The kernels of up to launches copies a run makes: a pair (copy_strided,
 * copy_rows) per copy, at most OCL_MAX_KERNELS / 2 pairs (later copies
 * share the last): a kernel launched once per run keeps its arguments
 * from run to run, and ocl_set_arg skips setting them again. */
static tg_status strided_prepare_n(ocl_prep *c, int launches)
{
    tg_status st = ocl_prep_program(c, "shape", NULL, size_opts(c->in_type[0].dtype));
    for (int i = 0; !st && (i == 0 || (i < launches && i < OCL_MAX_KERNELS / 2)); i++) {
        st = ocl_prep_kernel(c, "copy_strided");
        if (!st)
            st = ocl_prep_kernel(c, "copy_rows");
    }
    return st;
}

static tg_status strided_prepare(ocl_prep *c) { return strided_prepare_n(c, 1); }
static tg_status concat_prepare(ocl_prep *c) { return strided_prepare_n(c, c->nin); }
static tg_status split_prepare(ocl_prep *c) { return strided_prepare_n(c, c->nout); }
static tg_status blocked_prepare(ocl_prep *c) { return strided_prepare_n(c, 2); }

/*
 * Copy number i of the run (its kernel pair: strided_prepare_n): for
 * every coordinate of dims (nd of them), y[yb + c.ys] = x[xb + c.xs].
 * Size-1 dims are dropped; int ranges are checked.
 */
static tg_status copy(ocl_launch *l, int i, cl_mem x, cl_mem y, int nd, const int64_t *dims,
                      const int64_t *xs, const int64_t *ys, int64_t xb, int64_t yb)
{
    int pair = i < OCL_MAX_KERNELS / 2 ? i : OCL_MAX_KERNELS / 2 - 1;
    while (pair > 0 && !l->k[2 * pair])
        pair--;
    cl_kernel ks = l->k[2 * pair], kr = l->k[2 * pair + 1];
    int32_t d[8] = {0}, a[8] = {0}, b[8] = {0};
    int m = 0;
    int64_t n = 1;
    for (int k = 0; k < nd; k++) {
        n *= dims[k];
        if (dims[k] == 1)
            continue;
        if (dims[k] > INT32_MAX || xs[k] > INT32_MAX || ys[k] > INT32_MAX ||
            xs[k] < INT32_MIN || ys[k] < INT32_MIN)
            return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
        d[m] = (int32_t)dims[k];
        a[m] = (int32_t)xs[k];
        b[m++] = (int32_t)ys[k];
    }
    if (n == 0)
        return TG_OK;
    if (n > INT32_MAX)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    if (m == 0) {
        d[0] = 1;
        m = 1;
    }
    size_t w = ocl_row_width(d[m - 1]);
    if (w) { /* a row launch */
        int32_t rd[8], ra[8], rb[8];
        ocl_row_align(m, d, 1, rd);
        ocl_row_align(m, a, 0, ra);
        ocl_row_align(m, b, 0, rb);
        size_t g[2] = {ocl_round_up((size_t)rd[7], w), (size_t)(n / rd[7])}, lo[2] = {w, 1};
        tg_status st = ocl_set_args(l, kr, "mmvvvll", x, y, rd, ra, rb, xb, yb);
        return st ? st : ocl_run(l, kr, 2, g, lo);
    }
    size_t g = (size_t)n;
    tg_status st = ocl_set_args(l, ks, "mmlivvvll", x, y, (int64_t)n, m, d, a, b, xb, yb);
    return st ? st : ocl_run(l, ks, 1, &g, NULL);
}

static tg_status transpose_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0], *o = &l->out_type[0];
    const graph_transpose_attrs *at = l->attrs;
    int perm[GRAPH_MAX_DIMS];
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], ss[GRAPH_MAX_DIMS];
    tg_status st = graph_transpose_perm(x, &at->perm, perm, l->err, l->errlen);
    if (st != TG_OK)
        return st;
    strides(x, is);
    strides(o, os);
    for (int i = 0; i < o->ndim; i++)
        ss[i] = is[perm[i]];
    return copy(l, 0, l->in[0], l->out[0], o->ndim, o->dim, ss, os, 0, 0);
}

static tg_status expand_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0], *o = &l->out_type[0];
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], ss[GRAPH_MAX_DIMS];
    int lead = o->ndim - x->ndim;
    strides(x, is);
    strides(o, os);
    for (int i = 0; i < o->ndim; i++) {
        int j = i - lead;
        ss[i] = (j < 0 || x->dim[j] == 1) ? 0 : is[j];
    }
    return copy(l, 0, l->in[0], l->out[0], o->ndim, o->dim, ss, os, 0, 0);
}

static tg_status slice_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0], *o = &l->out_type[0];
    graph_slice_plan plan;
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], ss[GRAPH_MAX_DIMS], off = 0;
    tg_status st = graph_slice_resolve(x, l->attrs, &plan, l->err, l->errlen);
    if (st != TG_OK)
        return st;
    strides(x, is);
    strides(o, os);
    for (int i = 0; i < x->ndim; i++) {
        off += plan.start[i] * is[i];
        ss[i] = plan.step[i] * is[i];
    }
    return copy(l, 0, l->in[0], l->out[0], o->ndim, o->dim, ss, os, off, 0);
}

static tg_status concat_enqueue(ocl_launch *l)
{
    const graph_type *o = &l->out_type[0];
    const graph_concat_attrs *at = l->attrs;
    int ax = graph_axis(at->axis, o->ndim);
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], off = 0;
    strides(o, os);
    for (int i = 0; i < l->nin; i++) {
        const graph_type *x = &l->in_type[i];
        strides(x, is);
        tg_status st = copy(l, i, l->in[i], l->out[0], x->ndim, x->dim, is, os, 0,
                            off * os[ax]);
        if (st != TG_OK)
            return st;
        off += x->dim[ax];
    }
    return TG_OK;
}

static tg_status split_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0];
    const graph_split_attrs *at = l->attrs;
    int ax = graph_axis(at->axis, x->ndim);
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], off = 0;
    strides(x, is);
    for (int i = 0; i < l->nout; i++) {
        const graph_type *o = &l->out_type[i];
        strides(o, os);
        tg_status st = copy(l, i, l->in[0], l->out[i], o->ndim, o->dim, is, os, off * is[ax], 0);
        if (st != TG_OK)
            return st;
        off += o->dim[ax];
    }
    return TG_OK;
}

/*
 * [N,C,H,W] <-> [N,ceil(C/B),H,W,B] (to: plain p into blocked b; else
 * back), as strided copies: the full blocks, then the last block's lanes
 * below C when C is not a multiple of B.  Plain element (n, c, h, w) sits
 * at n CHW + c HW + h W + w, blocked at ((n CB + c/B) HW + h W + w) B +
 * c%B.  to_blocked zero-fills the padded lanes first.
 */
static tg_status blocked_copy(ocl_launch *l, const graph_type *b, int64_t C, int to)
{
    int64_t N = b->dim[0], CB = b->dim[1], H = b->dim[2], W = b->dim[3], B = b->dim[4];
    int64_t full = C / B, rem = C % B, bs[5];
    int64_t ps[5] = {C * H * W, B * H * W, W, 1, H * W};
    strides(b, bs);
    if (to && rem && N * H * W > 0) {
        float zero = 0.0f;
        cl_int e = clEnqueueFillBuffer(l->q, l->out[0], &zero, sizeof zero, 0,
                                       (size_t)(N * CB * H * W * B) * sizeof zero, 0, NULL,
                                       NULL);
        l->enq[OCL_ENQ_COPY]++;
        if (e != CL_SUCCESS)
            return ocl_fail(l, TG_ERR_BACKEND, "clEnqueueFillBuffer: %s", ocl_errstr(e));
    }
    const int64_t *xs = to ? ps : bs, *ys = to ? bs : ps;
    int64_t dims[5] = {N, full, H, W, B};
    tg_status st = full ? copy(l, 0, l->in[0], l->out[0], 5, dims, xs, ys, 0, 0) : TG_OK;
    if (st != TG_OK || !rem)
        return st;
    int64_t tail[5] = {N, 1, H, W, rem}, pb = full * B * H * W, bb = full * H * W * B;
    return copy(l, 1, l->in[0], l->out[0], 5, tail, xs, ys, to ? pb : bb, to ? bb : pb);
}

static tg_status to_blocked_enqueue(ocl_launch *l)
{
    return blocked_copy(l, &l->out_type[0], l->in_type[0].dim[1], 1);
}

static tg_status from_blocked_enqueue(ocl_launch *l)
{
    return blocked_copy(l, &l->in_type[0], l->out_type[0].dim[1], 0);
}

static const ocl_op transpose_op = {strided_prepare, transpose_enqueue};
static const ocl_op expand_op = {strided_prepare, expand_enqueue};
static const ocl_op slice_op = {strided_prepare, slice_enqueue};
static const ocl_op concat_op = {concat_prepare, concat_enqueue};
static const ocl_op split_op = {split_prepare, split_enqueue};
static const ocl_op to_blocked_op = {blocked_prepare, to_blocked_enqueue};
static const ocl_op from_blocked_op = {blocked_prepare, from_blocked_enqueue};

/* ---- pad ---- */

static tg_status pad_prepare(ocl_prep *c)
{
    tg_status st = ocl_prep_program(c, "shape", NULL, size_opts(c->in_type[0].dtype));
    return st ? st : ocl_prep_kernel(c, "pad_k");
}

static tg_status pad_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0], *o = &l->out_type[0];
    const graph_pad_attrs *at = l->attrs;
    int64_t n = graph_type_numel(o), xs[GRAPH_MAX_DIMS];
    int32_t d[8] = {0}, xd[8] = {0}, s[8] = {0}, b[8] = {0};
    if (n > INT32_MAX || graph_type_numel(x) > INT32_MAX)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    strides(x, xs);
    for (int k = 0; k < o->ndim; k++) {
        d[k] = (int32_t)o->dim[k];
        xd[k] = (int32_t)x->dim[k];
        s[k] = (int32_t)xs[k];
        b[k] = (int32_t)at->pads.v[k];
    }
    int nd = o->ndim ? o->ndim : 1;
    if (!o->ndim)
        d[0] = xd[0] = 1;
    /* the pad value as the element's bits, like the CPU's pad_value */
    union { float f; int32_t i; int64_t l; uint8_t b; } v = {0};
    switch (o->dtype) {
    case GRAPH_F32: v.f = at->value; break;
    case GRAPH_I32: v.i = (int32_t)at->value; break;
    case GRAPH_I64: v.l = (int64_t)at->value; break;
    default: v.b = at->value != 0.0f; break;
    }
    tg_status st = ocl_set_args(l, l->k[0], "mmlivvvv", l->in[0], l->out[0], n, nd, d, xd, s, b);
    if (st != TG_OK)
        return st;
    st = ocl_set_arg(l, l->k[0], 8, esize(o), &v);
    if (st != TG_OK)
        return st;
    size_t g = (size_t)n;
    return ocl_run(l, l->k[0], 1, &g, NULL);
}

static const ocl_op pad_op = {pad_prepare, pad_enqueue};

/* ---- gather ---- */

/* The OpenCL type of an index tensor (i64 or i32), for -DIT=. */
static const char *index_type(graph_dtype dt) { return dt == GRAPH_I64 ? "long" : "int"; }

static tg_status gather_prepare(ocl_prep *c)
{
    char opts[64];
    snprintf(opts, sizeof opts, "%s -DIT=%s", size_opts(c->in_type[0].dtype),
             index_type(c->in_type[1].dtype));
    tg_status st = ocl_prep_program(c, "shape", NULL, opts);
    c->flag_msg = "gather: an index is out of range for the gathered axis";
    return st ? st : ocl_prep_kernel(c, "gather_k");
}

static tg_status gather_enqueue(ocl_launch *l)
{
    const graph_type *t = &l->in_type[0], *it = &l->in_type[1];
    const graph_gather_attrs *at = l->attrs;
    int ax = graph_axis(at->axis, t->ndim);
    int64_t len = t->dim[ax], outer = 1, inner = 1, K = graph_type_numel(it);
    for (int i = 0; i < ax; i++)
        outer *= t->dim[i];
    for (int i = ax + 1; i < t->ndim; i++)
        inner *= t->dim[i];
    int64_t n = outer * K * inner;
    if (n > INT32_MAX || graph_type_numel(t) > INT32_MAX)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    tg_status st = ocl_set_args(l, l->k[0], "mmmliiimi", l->in[0], l->in[1], l->out[0], n,
                                (int)K, (int)inner, (int)len, l->flag, l->code);
    size_t g = (size_t)n;
    return st ? st : ocl_run(l, l->k[0], 1, &g, NULL);
}

static const ocl_op gather_op = {gather_prepare, gather_enqueue};

/* ---- gather_elements, scatter_elements (cl/index.cl) ---- */

static tg_status gather_el_prepare(ocl_prep *c)
{
    char opts[64];
    snprintf(opts, sizeof opts, "%s -DIT=%s", size_opts(c->in_type[0].dtype),
             index_type(c->in_type[1].dtype));
    tg_status st = ocl_prep_program(c, "index", NULL, opts);
    c->flag_msg = "gather_elements: an index is out of range for the axis";
    return st ? st : ocl_prep_kernel(c, "gather_elements_k");
}

static tg_status gather_el_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0], *it = &l->in_type[1];
    const graph_gather_elements_attrs *at = l->attrs;
    int ax = graph_axis(at->axis, x->ndim);
    int64_t n = graph_type_numel(it), xs[GRAPH_MAX_DIMS];
    if (n > INT32_MAX || graph_type_numel(x) > INT32_MAX)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    strides(x, xs);
    int32_t d[8] = {0}, s[8] = {0};
    for (int k = 0; k < it->ndim; k++) {
        d[k] = (int32_t)it->dim[k];
        s[k] = k == ax ? 0 : (int32_t)xs[k];
    }
    tg_status st = ocl_set_args(l, l->k[0], "mmmlivviimi", l->in[0], l->in[1], l->out[0], n,
                                (int)it->ndim, d, s, (int)xs[ax], (int)x->dim[ax], l->flag,
                                l->code);
    size_t g = (size_t)n;
    return st ? st : ocl_run(l, l->k[0], 1, &g, NULL);
}

static const ocl_op gather_el_op = {gather_el_prepare, gather_el_enqueue};

/* Reduction none moves elements by size; the others combine them by
 * dtype (integers with their unsigned type, so they wrap). */
static tg_status scatter_el_prepare(ocl_prep *c)
{
    const graph_scatter_elements_attrs *at = c->attrs;
    graph_dtype dt = c->in_type[0].dtype;
    char opts[96];
    const char *t = at->reduction == GRAPH_SCATTER_NONE ? size_opts(dt)
                    : dt == GRAPH_F32                   ? "-DT=float"
                    : dt == GRAPH_I64                   ? "-DT=long -DU=ulong"
                                                        : "-DT=int -DU=uint";
    snprintf(opts, sizeof opts, "%s -DIT=%s -DRED=%d", t, index_type(c->in_type[1].dtype),
             (int)at->reduction);
    tg_status st = ocl_prep_program(c, "index", NULL, opts);
    c->flag_msg = "scatter_elements: an index is out of range for the axis";
    return st ? st : ocl_prep_kernel(c, "scatter_elements_k");
}

/* The copy of x, then one item per line of the indices (cl/index.cl). */
static tg_status scatter_el_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0], *it = &l->in_type[1];
    const graph_scatter_elements_attrs *at = l->attrs;
    int ax = graph_axis(at->axis, x->ndim);
    int64_t count = graph_type_numel(it), xs[GRAPH_MAX_DIMS], is[GRAPH_MAX_DIMS];
    if (count > INT32_MAX || graph_type_numel(x) > INT32_MAX)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    size_t bytes = (size_t)graph_type_numel(x) * esize(x);
    if (bytes && l->in[0] != l->out[0]) {
        cl_int e = clEnqueueCopyBuffer(l->q, l->in[0], l->out[0], 0, 0, bytes, 0, NULL, NULL);
        l->enq[OCL_ENQ_COPY]++;
        if (e != CL_SUCCESS)
            return ocl_fail(l, TG_ERR_BACKEND, "clEnqueueCopyBuffer: %s", ocl_errstr(e));
    }
    if (count == 0)
        return TG_OK;
    strides(x, xs);
    strides(it, is);
    int32_t ld[8] = {0}, ls[8] = {0}, ys[8] = {0};
    int m = 0;
    for (int k = 0; k < it->ndim; k++) {
        if (k == ax)
            continue;
        ld[m] = (int32_t)it->dim[k];
        ls[m] = (int32_t)is[k];
        ys[m++] = (int32_t)xs[k];
    }
    int64_t nlines = count / it->dim[ax];
    tg_status st = ocl_set_args(l, l->k[0], "mmmlivvviiiimi", l->in[1], l->in[2], l->out[0],
                                nlines, m, ld, ls, ys, (int)it->dim[ax], (int)is[ax],
                                (int)xs[ax], (int)x->dim[ax], l->flag, l->code);
    size_t g = (size_t)nlines;
    return st ? st : ocl_run(l, l->k[0], 1, &g, NULL);
}

static const ocl_op scatter_el_op = {scatter_el_prepare, scatter_el_enqueue};

void ocl_register_shape(const ocl_op **t)
{
    t[GRAPH_OP_reshape] = &view_op;
    t[GRAPH_OP_flatten] = &view_op;
    t[GRAPH_OP_squeeze] = &view_op;
    t[GRAPH_OP_unsqueeze] = &view_op;
    t[GRAPH_OP_transpose] = &transpose_op;
    t[GRAPH_OP_expand] = &expand_op;
    t[GRAPH_OP_slice] = &slice_op;
    t[GRAPH_OP_concat] = &concat_op;
    t[GRAPH_OP_split] = &split_op;
    t[GRAPH_OP_to_blocked] = &to_blocked_op;
    t[GRAPH_OP_from_blocked] = &from_blocked_op;
    t[GRAPH_OP_pad] = &pad_op;
    t[GRAPH_OP_gather] = &gather_op;
    t[GRAPH_OP_gather_elements] = &gather_el_op;
    t[GRAPH_OP_scatter_elements] = &scatter_el_op;
}
