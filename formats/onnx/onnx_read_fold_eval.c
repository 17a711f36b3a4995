/*
 * onnx_read_fold_eval.c - ONNX ops the importer evaluates at load time
 * only (their inputs must be constants): ReduceProd, Mod, ScatterND and NonZero,
 * with the arithmetic and marks of onnx_read_fold.c, and the refusal of
 * such a node whose inputs are not all constants.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_read_fold.h"

tg_status onnx_fold_reduce_prod(onnx_reader *r, int kind, int *done)
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
        tg_free(pd), tg_free(pl), res_free(&o);
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

tg_status onnx_fold_mod(onnx_reader *r, int kind, int *done)
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
        res_free(&o);
        return st;
    }
    return res_bind(r, &o, 0, done);
}

/* ScatterND: data with, for each index tuple (the last dim of indices,
 * k long, negative from the end), the slice data[tuple] (dims k.. of
 * data) replaced by (or, with a reduction, combined with) the matching
 * slice of updates, in the order of the tuples.  Indices out of range or
 * shapes that do not fit are not folded (the converter names them). */
tg_status onnx_fold_scatter_nd(onnx_reader *r, int kind, int *done)
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
            o.src[at] = -1; /* no longer a copy of a dim */
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
        res_free(&o);
        return TG_OK;
    }
    return res_bind(r, &o, derived, done);
}

/*
 * NonZero: the i64 [rank, nnz] coordinates of data's nonzero elements
 * (NaN included, as NumPy), in row-major order.  Its shape depends on the
 * data, so it exists only folded; positions that depend on traced values
 * are marked derived.  A 0-D input is not folded (the converter names it).
 */
tg_status onnx_fold_nonzero(onnx_reader *r, int kind, int *done)
{
    (void)kind;
    const onnx_entry *a = arg(r, 0);
    int nd = a->type.ndim, ok, derived = 0;
    if (nd < 1)
        return TG_OK;
    int64_t n = graph_type_numel(&a->type), nnz = 0;
    for (int64_t k = 0; k < n; k++) {
        nnz += get_d(a, k) != 0 || (a->type.dtype == GRAPH_F32 && isnan(get_d(a, k)));
        derived |= mark(a, k) != ONNX_SYM_CONST;
    }
    graph_type t = {GRAPH_I64, 2, {nd, nnz}};
    fres o;
    tg_status st = res_new(r, &o, &t, &ok);
    if (st != TG_OK || !ok)
        return st;
    for (int64_t k = 0, j = 0; k < n; k++) {
        double v = get_d(a, k);
        if (!(v != 0 || (a->type.dtype == GRAPH_F32 && isnan(v))))
            continue;
        for (int64_t d = nd - 1, rest = k; d >= 0; d--) {
            put_l(&o, d * nnz + j, rest % a->type.dim[d]);
            rest /= a->type.dim[d];
        }
        j++;
    }
    return res_bind(r, &o, derived, done);
}

/* ReduceProd, Mod, ScatterND and NonZero, which only exist folded. */
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
        : !strcmp(op->name, "NonZero")
        ? "an input of rank 1 or more (the result's shape depends on the data)"
        : !strcmp(op->name, "ScatterND")
        ? "i64/i32 indices in range whose last dim k is at most data's rank, "
          "updates of shape indices.shape[:-1] + data.shape[k:], and a reduction the "
          "opset has"
        : "valid axes and a non-bool input";
    return onnx_fail(r, TG_ERR_UNSUPPORTED, "%s is evaluated at load time only, on "
                     "constants: %s, with at most %d elements in the result", op->name,
                     what, ONNX_MAX_FOLD_ELEMS);
}

