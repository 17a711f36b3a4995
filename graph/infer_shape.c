/*
 * infer_shape.c - shape and dtype inference for the shape and
 * data-movement ops: reshape, flatten, squeeze, unsqueeze, transpose,
 * concat, split, slice, pad, expand, gather.
 *
 * Every attribute is validated here (list lengths, axes, sizes, values),
 * so the kernels in eager/kernels_shape.c trust their types and attributes.
 * Output types are built from zeroed structs so unused dims are 0.
 */
#include "infer.h"
#include "infer_shape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* Formats a reason into a plain buffer (for the shared resolvers). */
static tg_status fail_buf(char *err, size_t errlen, tg_status st,
                          const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static tg_status fail_buf(char *err, size_t errlen, tg_status st,
                          const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* A list attribute must hold 0..maxn entries (a bad n would read past v). */
static tg_status list_ok(graph_infer_ctx *c, const char *what,
                         const graph_ints *v, int maxn)
{
    if (v->n < 0 || v->n > maxn)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "%s has %d entries (at most %d)", what,
                                (int)v->n, maxn);
    return TG_OK;
}

static graph_type new_type(graph_dtype dt, int ndim)
{
    graph_type t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    return t;
}

/* a * b into *r; 0 on int64 overflow. */
static int mul_ok(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* ---- reshape, flatten, squeeze, unsqueeze (views) ---- */

/* Returns the shape of reshape with its -1 resolved, or an error. */
tg_status graph_infer_reshape(graph_infer_ctx *c)
{
    const graph_reshape_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    char want[256], have[160];
    tg_status st = list_ok(c, "shape", &a->shape, GRAPH_MAX_DIMS);
    if (st != TG_OK)
        return st;
    graph_ints_str(&a->shape, want, sizeof want);
    graph_shape_str(x, have, sizeof have);
    int64_t numel = graph_type_numel(x), known = 1;
    int infer_at = -1;
    graph_type o = new_type(x->dtype, a->shape.n);
    for (int i = 0; i < a->shape.n; i++) {
        int64_t d = a->shape.v[i];
        if (d == -1) {
            if (infer_at >= 0)
                return graph_infer_fail(c, TG_ERR_ARG,
                                        "more than one -1 in shape %s", want);
            infer_at = i;
            continue;
        }
        if (d < 0)
            return graph_infer_fail(c, TG_ERR_ARG,
                                    "bad dim %lld in shape %s (only -1 may "
                                    "be negative)", LL(d), want);
        if (!mul_ok(known, d, &known))
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "shape %s has too many elements", want);
        o.dim[i] = d;
    }
    if (infer_at >= 0) {
        if (known == 0)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "cannot reshape %s (%lld elements) to %s "
                                    "(-1 is ambiguous when the other dims "
                                    "multiply to 0)", have, LL(numel), want);
        if (numel % known != 0)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "cannot reshape %s (%lld elements) to %s",
                                    have, LL(numel), want);
        o.dim[infer_at] = numel / known;
    } else if (known != numel) {
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "cannot reshape %s (%lld elements) to %s "
                                "(%lld elements)", have, LL(numel), want,
                                LL(known));
    }
    c->out[0] = o;
    return TG_OK;
}

/* PyTorch flatten: dims start..end (inclusive) become one; 0-d -> [1]. */
tg_status graph_infer_flatten(graph_infer_ctx *c)
{
    const graph_flatten_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    int nd = x->ndim;
    /* A 0-d input behaves as [1] with start and end naming its one dim. */
    int vnd = nd ? nd : 1;
    int s = graph_axis(a->start, vnd), e = graph_axis(a->end, vnd);
    if (s < 0)
        return graph_infer_fail(c, TG_ERR_AXIS,
                                "start %lld out of range for %d dims",
                                LL(a->start), nd);
    if (e < 0)
        return graph_infer_fail(c, TG_ERR_AXIS,
                                "end %lld out of range for %d dims",
                                LL(a->end), nd);
    if (s > e)
        return graph_infer_fail(c, TG_ERR_AXIS,
                                "start %lld (dim %d) is after end %lld (dim "
                                "%d)", LL(a->start), s, LL(a->end), e);
    if (nd == 0) {
        graph_type o = new_type(x->dtype, 1);
        o.dim[0] = 1;
        c->out[0] = o;
        return TG_OK;
    }
    graph_type o = new_type(x->dtype, nd - (e - s));
    int j = 0;
    for (int i = 0; i < s; i++)
        o.dim[j++] = x->dim[i];
    int64_t m = 1;
    for (int i = s; i <= e; i++)
        m *= x->dim[i]; /* cannot overflow: the input exists */
    o.dim[j++] = m;
    for (int i = e + 1; i < nd; i++)
        o.dim[j++] = x->dim[i];
    c->out[0] = o;
    return TG_OK;
}

/* Empty axes: drop every size-1 dim; listed axes must have size 1. */
tg_status graph_infer_squeeze(graph_infer_ctx *c)
{
    const graph_squeeze_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    int nd = x->ndim;
    unsigned drop = 0;
    tg_status st = list_ok(c, "axes", &a->axes, GRAPH_MAX_DIMS);
    if (st != TG_OK)
        return st;
    for (int i = 0; i < a->axes.n; i++) {
        int ax = graph_axis(a->axes.v[i], nd);
        if (ax < 0)
            return graph_infer_fail(c, TG_ERR_AXIS,
                                    "axis %lld out of range for %d dims",
                                    LL(a->axes.v[i]), nd);
        if (drop & (1u << ax))
            return graph_infer_fail(c, TG_ERR_ARG, "axis %lld listed twice",
                                    LL(a->axes.v[i]));
        if (x->dim[ax] != 1)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "cannot squeeze axis %lld of size %lld "
                                    "(must be 1)", LL(a->axes.v[i]),
                                    LL(x->dim[ax]));
        drop |= 1u << ax;
    }
    if (a->axes.n == 0)
        for (int i = 0; i < nd; i++)
            if (x->dim[i] == 1)
                drop |= 1u << i;
    graph_type o = new_type(x->dtype, 0);
    for (int i = 0; i < nd; i++)
        if (!(drop & (1u << i)))
            o.dim[o.ndim++] = x->dim[i];
    c->out[0] = o;
    return TG_OK;
}

/* ONNX Unsqueeze: axes name positions in the output (rank + n). */
tg_status graph_infer_unsqueeze(graph_infer_ctx *c)
{
    const graph_unsqueeze_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    unsigned add = 0;
    tg_status st = list_ok(c, "axes", &a->axes, GRAPH_MAX_DIMS);
    if (st != TG_OK)
        return st;
    if (a->axes.n == 0)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "axes is empty (name at least one new dim)");
    int ond = x->ndim + a->axes.n;
    if (ond > GRAPH_MAX_DIMS)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "result would have %d dims (at most %d)", ond,
                                GRAPH_MAX_DIMS);
    for (int i = 0; i < a->axes.n; i++) {
        int ax = graph_axis(a->axes.v[i], ond);
        if (ax < 0)
            return graph_infer_fail(c, TG_ERR_AXIS,
                                    "axis %lld out of range for %d output "
                                    "dims", LL(a->axes.v[i]), ond);
        if (add & (1u << ax))
            return graph_infer_fail(c, TG_ERR_ARG, "axis %lld listed twice",
                                    LL(a->axes.v[i]));
        add |= 1u << ax;
    }
    graph_type o = new_type(x->dtype, ond);
    for (int i = 0, j = 0; i < ond; i++)
        o.dim[i] = (add & (1u << i)) ? 1 : x->dim[j++];
    c->out[0] = o;
    return TG_OK;
}

/* ---- transpose ---- */

tg_status graph_transpose_perm(const graph_type *in, const graph_ints *p,
                               int *perm, char *err, size_t errlen)
{
    int nd = in->ndim;
    char ps[256];
    if (p->n == 0) {
        for (int i = 0; i < nd; i++)
            perm[i] = nd - 1 - i;
        return TG_OK;
    }
    if (p->n < 0 || p->n > GRAPH_MAX_INTS)
        return fail_buf(err, errlen, TG_ERR_ARG,
                        "perm has %d entries (at most %d)", (int)p->n,
                        GRAPH_MAX_INTS);
    graph_ints_str(p, ps, sizeof ps);
    if (p->n != nd)
        return fail_buf(err, errlen, TG_ERR_ARG,
                        "perm %s has %d entries, input has %d dims", ps,
                        (int)p->n, nd);
    unsigned seen = 0;
    for (int i = 0; i < nd; i++) {
        int ax = graph_axis(p->v[i], nd);
        if (ax < 0)
            return fail_buf(err, errlen, TG_ERR_AXIS,
                            "perm %s: entry %lld out of range for %d dims",
                            ps, LL(p->v[i]), nd);
        if (seen & (1u << ax))
            return fail_buf(err, errlen, TG_ERR_ARG,
                            "perm %s is not a permutation (dim %d repeats)",
                            ps, ax);
        seen |= 1u << ax;
        perm[i] = ax;
    }
    return TG_OK;
}

tg_status graph_infer_transpose(graph_infer_ctx *c)
{
    const graph_transpose_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    int perm[GRAPH_MAX_DIMS];
    tg_status st = graph_transpose_perm(x, &a->perm, perm, c->err, c->errlen);
    if (st != TG_OK)
        return st;
    graph_type o = new_type(x->dtype, x->ndim);
    for (int i = 0; i < x->ndim; i++)
        o.dim[i] = x->dim[perm[i]];
    c->out[0] = o;
    return TG_OK;
}

/* ---- concat, split ---- */

tg_status graph_infer_concat(graph_infer_ctx *c)
{
    const graph_concat_attrs *a = c->attrs;
    const graph_type *x0 = &c->in[0];
    int nd = x0->ndim;
    int ax = graph_axis(a->axis, nd);
    if (ax < 0)
        return graph_infer_fail(c, TG_ERR_AXIS,
                                "axis %lld out of range for %d dims",
                                LL(a->axis), nd);
    graph_type o = *x0;
    o.dim[ax] = 0;
    for (int i = 0; i < c->nin; i++) {
        const graph_type *x = &c->in[i];
        if (x->dtype != x0->dtype)
            return graph_infer_fail(c, TG_ERR_DTYPE,
                                    "input %d has dtype %s, input 0 has %s",
                                    i, graph_dtype_name(x->dtype),
                                    graph_dtype_name(x0->dtype));
        if (x->ndim != nd)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "input %d has %d dims, input 0 has %d",
                                    i, (int)x->ndim, nd);
        for (int d = 0; d < nd; d++)
            if (d != ax && x->dim[d] != x0->dim[d])
                return graph_infer_fail(c, TG_ERR_SHAPE,
                                        "input %d differs from input 0 in "
                                        "dim %d (%lld vs %lld)", i, d,
                                        LL(x->dim[d]), LL(x0->dim[d]));
        if (__builtin_add_overflow(o.dim[ax], x->dim[ax], &o.dim[ax]))
            return graph_infer_fail(c, TG_ERR_SHAPE, "result is too large");
    }
    c->out[0] = o;
    return TG_OK;
}

/*
 * Split into sizes.n outputs along axis.  Sizes are >= 0 and add up to
 * the axis size; one entry may be -1, meaning "the rest".
 */
tg_status graph_infer_split(graph_infer_ctx *c)
{
    const graph_split_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    int ax = graph_axis(a->axis, x->ndim);
    char ss[256];
    if (ax < 0)
        return graph_infer_fail(c, TG_ERR_AXIS,
                                "axis %lld out of range for %d dims",
                                LL(a->axis), (int)x->ndim);
    tg_status st = list_ok(c, "sizes", &a->sizes, GRAPH_MAX_INTS);
    if (st != TG_OK)
        return st;
    int n = a->sizes.n;
    if (n == 0)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "sizes is empty (give one size per output)");
    if (n > c->max_out)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "makes %d outputs, room for %d", n,
                                c->max_out);
    graph_ints_str(&a->sizes, ss, sizeof ss);
    int64_t len = x->dim[ax], sum = 0;
    int rest_at = -1;
    for (int i = 0; i < n; i++) {
        int64_t s = a->sizes.v[i];
        if (s == -1 && rest_at < 0) {
            rest_at = i;
            continue;
        }
        if (s < 0)
            return graph_infer_fail(c, TG_ERR_ARG,
                                    s == -1 ? "more than one -1 in sizes %s"
                                            : "negative size in sizes %s",
                                    ss);
        if (s > len - sum)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "sizes %s add up to more than dim %d "
                                    "(%lld)", ss, ax, LL(len));
        sum += s;
    }
    if (rest_at < 0 && sum != len)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "sizes %s add up to %lld, dim %d has %lld",
                                ss, LL(sum), ax, LL(len));
    for (int i = 0; i < n; i++) {
        c->out[i] = *x;
        c->out[i].dim[ax] = i == rest_at ? len - sum : a->sizes.v[i];
    }
    c->nout = n;
    return TG_OK;
}

/* ---- slice ---- */

/* Elements in [from, to) stepping by step > 0, without overflow. */
static int64_t count_up(int64_t from, int64_t to, int64_t step)
{
    return to <= from ? 0 : (to - from - 1) / step + 1;
}

/*
 * ONNX clamping, as the spec text (and onnxruntime) states it: negative
 * start/end count from the end; step > 0 clamps both to [0, dim]; step < 0
 * clamps start to [0, dim-1] and end to [-1, dim-1].
 */
static void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step,
                       int64_t *s_out, int64_t *len_out)
{
    int64_t s = start < 0 ? start + dim : start;
    int64_t e = end < 0 ? end + dim : end;
    int64_t len;
    if (dim == 0) {
        s = 0;
        len = 0;
    } else if (step > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        len = count_up(s, e, step);
    } else {
        s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
        e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        /* -INT64_MIN would overflow; any |step| >= dim gives the same len. */
        len = count_up(e, s, step == INT64_MIN ? INT64_MAX : -step);
    }
    *s_out = s;
    *len_out = len;
}

static tg_status slice_lists_ok(const graph_type *in,
                                const graph_slice_attrs *a, char *err,
                                size_t errlen)
{
    const graph_ints *l[4] = {&a->axes, &a->starts, &a->ends, &a->steps};
    const char *names[4] = {"axes", "starts", "ends", "steps"};
    for (int i = 0; i < 4; i++)
        if (l[i]->n < 0 || l[i]->n > GRAPH_MAX_DIMS)
            return fail_buf(err, errlen, TG_ERR_ARG,
                            "%s has %d entries (at most %d)", names[i],
                            (int)l[i]->n, GRAPH_MAX_DIMS);
    int n = a->starts.n;
    if (a->ends.n != n)
        return fail_buf(err, errlen, TG_ERR_ARG,
                        "starts has %d entries, ends %d", n, (int)a->ends.n);
    if (a->axes.n != 0 && a->axes.n != n)
        return fail_buf(err, errlen, TG_ERR_ARG,
                        "axes has %d entries, starts %d", (int)a->axes.n, n);
    if (a->steps.n != 0 && a->steps.n != n)
        return fail_buf(err, errlen, TG_ERR_ARG,
                        "steps has %d entries, starts %d", (int)a->steps.n,
                        n);
    if (a->axes.n == 0 && n > in->ndim)
        return fail_buf(err, errlen, TG_ERR_AXIS,
                        "starts has %d entries, input has %d dims", n,
                        (int)in->ndim);
    return TG_OK;
}

tg_status graph_slice_resolve(const graph_type *in,
                              const graph_slice_attrs *a,
                              graph_slice_plan *plan, char *err,
                              size_t errlen)
{
    int nd = in->ndim;
    unsigned seen = 0;
    tg_status st = slice_lists_ok(in, a, err, errlen);
    if (st != TG_OK)
        return st;
    for (int i = 0; i < nd; i++) {
        plan->start[i] = 0;
        plan->step[i] = 1;
        plan->len[i] = in->dim[i];
    }
    for (int k = 0; k < a->starts.n; k++) {
        int64_t raw = a->axes.n ? a->axes.v[k] : k;
        int ax = graph_axis(raw, nd);
        if (ax < 0)
            return fail_buf(err, errlen, TG_ERR_AXIS,
                            "axis %lld out of range for %d dims", LL(raw), nd);
        if (seen & (1u << ax))
            return fail_buf(err, errlen, TG_ERR_ARG, "axis %lld listed twice",
                            LL(raw));
        seen |= 1u << ax;
        int64_t step = a->steps.n ? a->steps.v[k] : 1;
        if (step == 0)
            return fail_buf(err, errlen, TG_ERR_ARG, "step 0 on axis %lld",
                            LL(raw));
        slice_axis(in->dim[ax], a->starts.v[k], a->ends.v[k], step,
                   &plan->start[ax], &plan->len[ax]);
        /* With len >= 2, |step| < dim, so step * stride cannot overflow in
         * the kernel; with fewer elements the step is never used. */
        plan->step[ax] = plan->len[ax] >= 2 ? step : 1;
    }
    return TG_OK;
}

tg_status graph_infer_slice(graph_infer_ctx *c)
{
    const graph_type *x = &c->in[0];
    graph_slice_plan plan;
    tg_status st = graph_slice_resolve(x, c->attrs, &plan, c->err, c->errlen);
    if (st != TG_OK)
        return st;
    graph_type o = new_type(x->dtype, x->ndim);
    for (int i = 0; i < x->ndim; i++)
        o.dim[i] = plan.len[i];
    c->out[0] = o;
    return TG_OK;
}

/* ---- pad ---- */

/*
 * The pad value must survive the cast to an integer dtype (C leaves the
 * cast of NaN or an out-of-range float undefined).  Truncation toward zero
 * fits exactly when v is in [-2^k, 2^k); NaN fails both comparisons.
 */
static tg_status pad_value_ok(graph_infer_ctx *c, graph_dtype dt, float v)
{
    double lim;
    if (dt == GRAPH_I64)
        lim = 0x1p63;
    else if (dt == GRAPH_I32)
        lim = 0x1p31;
    else
        return TG_OK; /* f32 as is; bool: nonzero (and NaN) -> 1 */
    if (!((double)v >= -lim && (double)v < lim))
        return graph_infer_fail(c, TG_ERR_ARG,
                                "value %g is not representable as %s",
                                (double)v, graph_dtype_name(dt));
    if (v != truncf(v))
        return graph_infer_fail(c, TG_ERR_ARG,
                                "value %g is not an integer (the input is %s)",
                                (double)v, graph_dtype_name(dt));
    return TG_OK;
}

/*
 * Constant pad, pads = [begin_0..begin_{n-1}, end_0..end_{n-1}] (ONNX
 * order).  Negative pads crop, as in ONNX; a dim may not go below 0.
 * The value must be exact in an integer dtype (a fraction, NaN or out of
 * range is an error); bool takes nonzero -> 1.
 */
tg_status graph_infer_pad(graph_infer_ctx *c)
{
    const graph_pad_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    int nd = x->ndim;
    tg_status st = list_ok(c, "pads", &a->pads, GRAPH_MAX_INTS);
    if (st != TG_OK)
        return st;
    if (a->pads.n != 2 * nd)
        return graph_infer_fail(c, TG_ERR_ARG,
                                "pads has %d entries, need %d (a begin and "
                                "an end per dim)", (int)a->pads.n, 2 * nd);
    st = pad_value_ok(c, x->dtype, a->value);
    if (st != TG_OK)
        return st;
    graph_type o = new_type(x->dtype, nd);
    for (int i = 0; i < nd; i++) {
        int64_t b = a->pads.v[i], e = a->pads.v[nd + i], d;
        if (__builtin_add_overflow(x->dim[i], b, &d) ||
            __builtin_add_overflow(d, e, &d))
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "pads %lld,%lld on dim %d overflow",
                                    LL(b), LL(e), i);
        if (d < 0)
            return graph_infer_fail(c, TG_ERR_SHAPE,
                                    "pads %lld,%lld crop dim %d of size %lld "
                                    "below 0", LL(b), LL(e), i,
                                    LL(x->dim[i]));
        o.dim[i] = d;
    }
    c->out[0] = o;
    return TG_OK;
}

/* ---- expand ---- */

/* ONNX Expand: out = broadcast(input, shape); shape may add leading dims,
 * and a 1 in shape keeps the input's dim. */
tg_status graph_infer_expand(graph_infer_ctx *c)
{
    const graph_expand_attrs *a = c->attrs;
    const graph_type *x = &c->in[0];
    char want[256], have[160];
    tg_status st = list_ok(c, "shape", &a->shape, GRAPH_MAX_DIMS);
    if (st != TG_OK)
        return st;
    graph_ints_str(&a->shape, want, sizeof want);
    graph_type s = new_type(x->dtype, a->shape.n);
    for (int i = 0; i < a->shape.n; i++) {
        if (a->shape.v[i] < 0)
            return graph_infer_fail(c, TG_ERR_ARG, "bad dim %lld in shape %s",
                                    LL(a->shape.v[i]), want);
        s.dim[i] = a->shape.v[i];
    }
    graph_type o = new_type(x->dtype, 0);
    if (graph_broadcast(x, &s, &o) != TG_OK) {
        graph_shape_str(x, have, sizeof have);
        return graph_infer_fail(c, TG_ERR_SHAPE, "cannot expand %s to %s",
                                have, want);
    }
    c->out[0] = o;
    return TG_OK;
}

/* ---- gather ---- */

/* ONNX Gather: out = table[:axis] + idx + table[axis+1:]. Index values are
 * checked by the kernel (they are data). */
tg_status graph_infer_gather(graph_infer_ctx *c)
{
    const graph_gather_attrs *a = c->attrs;
    const graph_type *t = &c->in[0], *idx = &c->in[1];
    if (idx->dtype != GRAPH_I64 && idx->dtype != GRAPH_I32)
        return graph_infer_fail(c, TG_ERR_DTYPE,
                                "indices must be i64 or i32, got %s",
                                graph_dtype_name(idx->dtype));
    int ax = graph_axis(a->axis, t->ndim);
    if (ax < 0)
        return graph_infer_fail(c, TG_ERR_AXIS,
                                "axis %lld out of range for %d dims",
                                LL(a->axis), (int)t->ndim);
    int ond = t->ndim - 1 + idx->ndim;
    if (ond > GRAPH_MAX_DIMS)
        return graph_infer_fail(c, TG_ERR_SHAPE,
                                "result would have %d dims (at most %d)", ond,
                                GRAPH_MAX_DIMS);
    graph_type o = new_type(t->dtype, 0);
    for (int i = 0; i < ax; i++)
        o.dim[o.ndim++] = t->dim[i];
    for (int i = 0; i < idx->ndim; i++)
        o.dim[o.ndim++] = idx->dim[i];
    for (int i = ax + 1; i < t->ndim; i++)
        o.dim[o.ndim++] = t->dim[i];
    c->out[0] = o;
    return TG_OK;
}
