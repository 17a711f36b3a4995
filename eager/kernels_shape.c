/*
 * kernels_shape.c - CPU kernels of the shape and data-movement ops.
 *
 * All are dtype-generic by element size (1, 4 or 8 bytes; the reductions
 * of scatter_elements by dtype) and built on the copy engines of
 * layout.h.  The view ops (reshape, flatten, squeeze, unsqueeze) keep the
 * elements in order, so their kernel is one copy: the eager dispatcher
 * shares storage instead of calling them, but the replay runtime, which
 * plans its own buffers, does call them.
 *
 * Attributes were validated by the infer functions (graph/infer_shape.c,
 * graph/infer_index.c); the kernels trust them, except the index values
 * of gather, gather_elements and scatter_elements, which are data.
 */
#include <string.h>

#include "../graph/infer_shape.h"
#include "kernel.h"
#include "layout.h"

#define LL(x) ((long long)(x))

static size_t esize(const graph_type *t) { return graph_dtype_size(t->dtype); }

static int64_t numel(const graph_type *t) { return graph_type_numel(t); }

/* ---- view ops: the same elements in the same order ---- */

static tg_status copy_all(const eager_kargs *a)
{
    size_t n = (size_t)numel(&a->in_type[0]) * esize(&a->in_type[0]);
    eager_copy_bytes(a->out[0], a->in[0], n, a->nthreads);
    return TG_OK;
}

tg_status eager_kernel_reshape(const eager_kargs *a) { return copy_all(a); }
tg_status eager_kernel_flatten(const eager_kargs *a) { return copy_all(a); }
tg_status eager_kernel_squeeze(const eager_kargs *a) { return copy_all(a); }
tg_status eager_kernel_unsqueeze(const eager_kargs *a) { return copy_all(a); }

/* ---- transpose, expand, slice: one strided copy each ---- */

tg_status eager_kernel_transpose(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0], *o = &a->out_type[0];
    const graph_transpose_attrs *at = a->attrs;
    int perm[GRAPH_MAX_DIMS];
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], ss[GRAPH_MAX_DIMS];
    tg_status st = graph_transpose_perm(x, &at->perm, perm, a->err,
                                        a->errlen);
    if (st != TG_OK || numel(o) == 0)
        return st;
    eager_strides(x, is);
    eager_strides(o, os);
    for (int i = 0; i < o->ndim; i++)
        ss[i] = is[perm[i]];
    eager_copy_strided(esize(x), o->ndim, o->dim, a->in[0], ss, a->out[0],
                       os, a->nthreads);
    return TG_OK;
}

/* Broadcast dims (absent or of size 1 in the input) read with stride 0. */
tg_status eager_kernel_expand(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0], *o = &a->out_type[0];
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], ss[GRAPH_MAX_DIMS];
    int lead = o->ndim - x->ndim;
    if (numel(o) == 0)
        return TG_OK;
    eager_strides(x, is);
    eager_strides(o, os);
    for (int i = 0; i < o->ndim; i++) {
        int j = i - lead;
        ss[i] = (j < 0 || x->dim[j] == 1) ? 0 : is[j];
    }
    eager_copy_strided(esize(x), o->ndim, o->dim, a->in[0], ss, a->out[0],
                       os, a->nthreads);
    return TG_OK;
}

tg_status eager_kernel_slice(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0], *o = &a->out_type[0];
    graph_slice_plan plan;
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], ss[GRAPH_MAX_DIMS];
    tg_status st = graph_slice_resolve(x, a->attrs, &plan, a->err, a->errlen);
    if (st != TG_OK || numel(o) == 0)
        return st;
    eager_strides(x, is);
    eager_strides(o, os);
    int64_t off = 0;
    for (int i = 0; i < x->ndim; i++) {
        off += plan.start[i] * is[i];
        ss[i] = plan.step[i] * is[i];
    }
    eager_copy_strided(esize(x), o->ndim, o->dim,
                       (const char *)a->in[0] + off * (int64_t)esize(x), ss,
                       a->out[0], os, a->nthreads);
    return TG_OK;
}

/* ---- concat, split: one strided copy per part ---- */

tg_status eager_kernel_concat(const eager_kargs *a)
{
    const graph_type *o = &a->out_type[0];
    const graph_concat_attrs *at = a->attrs;
    int ax = graph_axis(at->axis, o->ndim);
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], off = 0;
    size_t es = esize(o);
    eager_strides(o, os);
    for (int i = 0; i < a->nin; i++) {
        const graph_type *x = &a->in_type[i];
        if (numel(x) > 0) {
            eager_strides(x, is);
            eager_copy_strided(es, x->ndim, x->dim, a->in[i], is,
                               (char *)a->out[0] + off * os[ax] * (int64_t)es,
                               os, a->nthreads);
        }
        off += x->dim[ax];
    }
    return TG_OK;
}

tg_status eager_kernel_split(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0];
    const graph_split_attrs *at = a->attrs;
    int ax = graph_axis(at->axis, x->ndim);
    int64_t is[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS], off = 0;
    size_t es = esize(x);
    eager_strides(x, is);
    for (int i = 0; i < a->nout; i++) {
        const graph_type *o = &a->out_type[i];
        if (numel(o) > 0) {
            eager_strides(o, os);
            eager_copy_strided(es, o->ndim, o->dim,
                               (const char *)a->in[0] +
                                   off * is[ax] * (int64_t)es,
                               is, a->out[i], os, a->nthreads);
        }
        off += o->dim[ax];
    }
    return TG_OK;
}

/* ---- pad ---- */

/* The pad value in the output dtype (infer checked it is representable). */
static void pad_value(graph_dtype dt, float v, void *out)
{
    if (dt == GRAPH_I64) {
        int64_t t = (int64_t)v;
        memcpy(out, &t, sizeof t);
    } else if (dt == GRAPH_I32) {
        int32_t t = (int32_t)v;
        memcpy(out, &t, sizeof t);
    } else if (dt == GRAPH_BOOL) {
        *(uint8_t *)out = v != 0.0f; /* NaN -> 1, as C's bool conversion */
    } else {
        memcpy(out, &v, sizeof v);
    }
}

typedef struct pad_job {
    const graph_type *x, *o;
    const int64_t *begin; /* pads.v[0..ndim): may be negative (crop) */
    int64_t is[GRAPH_MAX_DIMS];
    size_t es;
    const char *src;
    char *dst;
    const void *val;
} pad_job;

/*
 * Output rows r0..r1 (row = index over all dims but the last).  A row
 * whose outer index falls in padding is all value; otherwise it is value,
 * the source row's overlap, value.
 */
static void pad_rows(const pad_job *j, int64_t r0, int64_t r1)
{
    const graph_type *x = j->x, *o = j->o;
    int no = o->ndim - 1;
    int64_t idx[GRAPH_MAX_DIMS], r = r0;
    for (int k = no - 1; k >= 0; k--) {
        idx[k] = r % o->dim[k];
        r /= o->dim[k];
    }
    int64_t W = o->dim[no], b = j->begin[no], e1 = b + x->dim[no];
    int64_t c0 = b < 0 ? 0 : b > W ? W : b; /* output cols [c0, c1) copy */
    int64_t c1 = e1 < c0 ? c0 : e1 > W ? W : e1;
    size_t es = j->es;
    for (int64_t row = r0; row < r1; row++) {
        char *d = j->dst + row * W * (int64_t)es;
        int64_t soff = 0;
        int inside = c1 > c0;
        for (int k = 0; k < no && inside; k++) {
            int64_t s = idx[k] - j->begin[k];
            inside = s >= 0 && s < x->dim[k];
            soff += s * j->is[k];
        }
        if (!inside) {
            eager_fill_elems(d, W, es, j->val);
        } else {
            eager_fill_elems(d, c0, es, j->val);
            memcpy(d + c0 * (int64_t)es,
                   j->src + (soff + c0 - b) * (int64_t)es,
                   (size_t)(c1 - c0) * es);
            eager_fill_elems(d + c1 * (int64_t)es, W - c1, es, j->val);
        }
        for (int k = no - 1; k >= 0; k--) { /* odometer */
            if (++idx[k] < o->dim[k])
                break;
            idx[k] = 0;
        }
    }
}

tg_status eager_kernel_pad(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0], *o = &a->out_type[0];
    const graph_pad_attrs *at = a->attrs;
    uint64_t val = 0;
    int64_t n = numel(o);
    if (n == 0)
        return TG_OK;
    if (o->ndim == 0) {
        memcpy(a->out[0], a->in[0], esize(x));
        return TG_OK;
    }
    pad_value(x->dtype, at->value, &val);
    pad_job j = {x, o, at->pads.v, {0}, esize(x), a->in[0], a->out[0], &val};
    eager_strides(x, j.is);
    int64_t rows = n / o->dim[o->ndim - 1];
    int nt = n >= EAGER_PAR_MIN && rows >= 4 * (int64_t)a->nthreads
                 ? a->nthreads : 1;
    if (nt <= 1) {
        pad_rows(&j, 0, rows);
        return TG_OK;
    }
    int64_t nchunk = 4 * (int64_t)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t c = 0; c < nchunk; c++)
        pad_rows(&j, rows * c / nchunk, rows * (c + 1) / nchunk);
    return TG_OK;
}

/* ---- gather ---- */

static int64_t index_at(const graph_type *it, const void *p, int64_t k)
{
    return it->dtype == GRAPH_I64 ? ((const int64_t *)p)[k]
                                  : ((const int32_t *)p)[k];
}

/* Fails with the first index outside [-n, n), naming value and position. */
static tg_status check_indices(const eager_kargs *a, int ax, int64_t n)
{
    const graph_type *it = &a->in_type[1];
    int64_t count = numel(it);
    for (int64_t k = 0; k < count; k++) {
        int64_t v = index_at(it, a->in[1], k);
        if (v >= -n && v < n)
            continue;
        char pos[160];
        graph_type at = {GRAPH_I64, it->ndim, {0}};
        int64_t rem = k;
        for (int d = it->ndim - 1; d >= 0; d--) {
            at.dim[d] = rem % it->dim[d];
            rem /= it->dim[d];
        }
        graph_shape_str(&at, pos, sizeof pos);
        return eager_kernel_fail(a, TG_ERR_ARG,
                                 "index %lld out of range for axis %d of "
                                 "size %lld (indices position %s)",
                                 LL(v), ax, LL(n), pos);
    }
    return TG_OK;
}

/* Gathers single elements (axis is the last dim): out[o, k] = t[o, idx[k]]. */
#define GATHER_ELEMS_FN(T)                                                 \
    static void gather_elems_##T(T *restrict out, const T *restrict tab,  \
                                 const graph_type *it, const void *idx,    \
                                 int64_t outer, int64_t n, int nt)         \
    {                                                                      \
        int64_t K = graph_type_numel(it);                                  \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1)")            \
        for (int64_t o = 0; o < outer; o++)                                \
            for (int64_t k = 0; k < K; k++) {                              \
                int64_t v = index_at(it, idx, k);                          \
                out[o * K + k] = tab[o * n + (v < 0 ? v + n : v)];         \
            }                                                              \
    }
GATHER_ELEMS_FN(uint8_t)
GATHER_ELEMS_FN(uint32_t)
GATHER_ELEMS_FN(uint64_t)

/*
 * ONNX Gather.  Indices are checked first, so a bad one fails the op
 * before anything is read.  Rows of the dims after the axis are copied
 * with memcpy: the embedding case (table [V,D], axis 0) is one memcpy of
 * D elements per index.
 */
tg_status eager_kernel_gather(const eager_kargs *a)
{
    const graph_type *t = &a->in_type[0], *it = &a->in_type[1];
    const graph_gather_attrs *at = a->attrs;
    int ax = graph_axis(at->axis, t->ndim);
    int64_t n = t->dim[ax], outer = 1, inner = 1, K = numel(it);
    for (int i = 0; i < ax; i++)
        outer *= t->dim[i];
    for (int i = ax + 1; i < t->ndim; i++)
        inner *= t->dim[i];
    tg_status st = check_indices(a, ax, n);
    if (st != TG_OK || outer * K * inner == 0)
        return st;
    size_t es = esize(t);
    int nt = outer * K * inner >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (inner == 1) {
        if (es == 4)
            gather_elems_uint32_t(a->out[0], a->in[0], it, a->in[1], outer,
                                  n, nt);
        else if (es == 8)
            gather_elems_uint64_t(a->out[0], a->in[0], it, a->in[1], outer,
                                  n, nt);
        else
            gather_elems_uint8_t(a->out[0], a->in[0], it, a->in[1], outer,
                                 n, nt);
        return TG_OK;
    }
    const char *tab = a->in[0];
    char *out = a->out[0];
    size_t rb = (size_t)inner * es;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t r = 0; r < outer * K; r++) {
        int64_t o = r / K, v = index_at(it, a->in[1], r % K);
        v += v < 0 ? n : 0;
        memcpy(out + (size_t)r * rb, tab + (size_t)(o * n + v) * rb, rb);
    }
    return TG_OK;
}

/* ---- gather_elements, scatter_elements ---- */

/*
 * Walks positions of the indices in row-major order, keeping the offset
 * into x of their coordinates on every dim but the axis (xs: x's strides
 * with the axis's set to 0), so the element an index v names is
 * off + v * (x's stride on the axis).  The indices may be smaller than x
 * on any dim, so the two do not advance in step.
 */
typedef struct elem_walk {
    int nd;
    const int64_t *dim; /* the indices' dims */
    const int64_t *xs;
    int64_t c[GRAPH_MAX_DIMS];
    int64_t off;
} elem_walk;

static void walk_start(elem_walk *w, int64_t flat)
{
    w->off = 0;
    for (int d = w->nd - 1; d >= 0; d--) {
        w->c[d] = flat % w->dim[d];
        flat /= w->dim[d];
        w->off += w->c[d] * w->xs[d];
    }
}

/* One step; past the last position it wraps around to the first. */
static inline void walk_next(elem_walk *w)
{
    for (int d = w->nd - 1; d >= 0; d--) {
        w->off += w->xs[d];
        if (++w->c[d] < w->dim[d])
            return;
        w->off -= w->c[d] * w->xs[d];
        w->c[d] = 0;
    }
}

/* out[f] for positions [f0, f1) of the indices (= of out). */
#define GATHER_EL_FN(T)                                                         \
    static void gather_el_##T(T *restrict out, const T *restrict x,            \
                              const graph_type *it, const void *idx,           \
                              const int64_t *xs, int64_t sa, int64_t n,        \
                              int64_t f0, int64_t f1)                          \
    {                                                                          \
        elem_walk w = {it->ndim, it->dim, xs, {0}, 0};                         \
        walk_start(&w, f0);                                                    \
        for (int64_t f = f0; f < f1; f++, walk_next(&w)) {                     \
            int64_t v = index_at(it, idx, f);                                  \
            out[f] = x[w.off + (v < 0 ? v + n : v) * sa];                      \
        }                                                                      \
    }
GATHER_EL_FN(uint8_t)
GATHER_EL_FN(uint32_t)
GATHER_EL_FN(uint64_t)

/* ONNX GatherElements.  Indices are checked first, as gather's. */
tg_status eager_kernel_gather_elements(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0], *it = &a->in_type[1];
    const graph_gather_elements_attrs *at = a->attrs;
    int ax = graph_axis(at->axis, x->ndim);
    int64_t xs[GRAPH_MAX_DIMS], n = x->dim[ax], count = numel(it);
    tg_status st = check_indices(a, ax, n);
    if (st != TG_OK || count == 0)
        return st;
    eager_strides(x, xs);
    int64_t sa = xs[ax];
    xs[ax] = 0;
    size_t es = esize(x);
    int nt = count >= EAGER_PAR_MIN ? a->nthreads : 1;
    int64_t nchunk = nt > 1 ? 4 * (int64_t)nt : 1;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t c = 0; c < nchunk; c++) {
        int64_t f0 = count * c / nchunk, f1 = count * (c + 1) / nchunk;
        if (es == 4)
            gather_el_uint32_t(a->out[0], a->in[0], it, a->in[1], xs, sa, n, f0, f1);
        else if (es == 8)
            gather_el_uint64_t(a->out[0], a->in[0], it, a->in[1], xs, sa, n, f0, f1);
        else
            gather_el_uint8_t(a->out[0], a->in[0], it, a->in[1], xs, sa, n, f0, f1);
    }
    return TG_OK;
}

/* How an update combines with the element it lands on (GRAPH_SCATTER_*):
 * as add, mul, maximum and minimum do (integers wrap, NaN wins). */
static inline float comb_f32(float d, float u, int64_t red)
{
    switch (red) {
    case GRAPH_SCATTER_ADD: return d + u;
    case GRAPH_SCATTER_MUL: return d * u;
    case GRAPH_SCATTER_MAX: return (d > u || d != d) ? d : u;
    case GRAPH_SCATTER_MIN: return (d < u || d != d) ? d : u;
    default: return u;
    }
}

#define COMB_INT_FN(T, U)                                                      \
    static inline T comb_##T(T d, T u, int64_t red)                            \
    {                                                                          \
        switch (red) {                                                         \
        case GRAPH_SCATTER_ADD: return (T)((U)d + (U)u);                       \
        case GRAPH_SCATTER_MUL: return (T)((U)d * (U)u);                       \
        case GRAPH_SCATTER_MAX: return d > u ? d : u;                          \
        case GRAPH_SCATTER_MIN: return d < u ? d : u;                          \
        default: return u;                                                     \
        }                                                                      \
    }
COMB_INT_FN(int64_t, uint64_t)
COMB_INT_FN(int32_t, uint32_t)

#define COMB_PUT(d, u, red) (u)

/*
 * A scatter's work: the indices as [outer, K, inner] around the axis (K
 * along it).  Updates that can land on the same element differ only in
 * k, so a unit (one outer index, inner positions [i0, i1)) applies its
 * updates k by k, in row-major order, and units never touch the same
 * element: threads take units, and the result is the same on any number
 * of them (with reduction none the last duplicate wins).
 */
typedef struct scatter_job {
    const graph_type *it;
    const void *idx, *upd;
    void *out;
    const int64_t *xs; /* x's strides, 0 on the axis */
    int64_t sa, n;     /* x's stride and size on the axis */
    int64_t K, inner, parts;
    int64_t red;
} scatter_job;

#define SCATTER_FN(name, T, COMBINE)                                           \
    static void name(const scatter_job *j, int64_t unit)                       \
    {                                                                          \
        int64_t o = unit / j->parts, p = unit % j->parts;                      \
        int64_t i0 = j->inner * p / j->parts;                                  \
        int64_t i1 = j->inner * (p + 1) / j->parts;                            \
        int whole = j->parts == 1; /* then one walk covers every k */          \
        int64_t len = whole ? j->K * j->inner : i1 - i0;                       \
        T *out = j->out;                                                       \
        const T *upd = j->upd;                                                 \
        elem_walk w = {j->it->ndim, j->it->dim, j->xs, {0}, 0};                \
        for (int64_t k = 0; k < (whole ? 1 : j->K) && len > 0; k++) {          \
            int64_t f = (o * j->K + k) * j->inner + i0;                        \
            walk_start(&w, f);                                                 \
            for (int64_t e = 0; e < len; e++, f++, walk_next(&w)) {            \
                int64_t v = index_at(j->it, j->idx, f);                        \
                T *d = out + w.off + (v < 0 ? v + j->n : v) * j->sa;           \
                *d = COMBINE(*d, upd[f], j->red);                              \
            }                                                                  \
        }                                                                      \
    }
SCATTER_FN(scatter_u8, uint8_t, COMB_PUT)
SCATTER_FN(scatter_u32, uint32_t, COMB_PUT)
SCATTER_FN(scatter_u64, uint64_t, COMB_PUT)
SCATTER_FN(scatter_f32, float, comb_f32)
SCATTER_FN(scatter_i64, int64_t, comb_int64_t)
SCATTER_FN(scatter_i32, int32_t, comb_int32_t)

/*
 * ONNX ScatterElements: out = x, then every update in row-major order of
 * the indices.  Indices are checked before anything is written.
 */
tg_status eager_kernel_scatter_elements(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0], *it = &a->in_type[1];
    const graph_scatter_elements_attrs *at = a->attrs;
    int ax = graph_axis(at->axis, x->ndim);
    int64_t xs[GRAPH_MAX_DIMS], count = numel(it);
    tg_status st = check_indices(a, ax, x->dim[ax]);
    if (st != TG_OK)
        return st;
    eager_copy_bytes(a->out[0], a->in[0], (size_t)numel(x) * esize(x), a->nthreads);
    if (count == 0)
        return TG_OK;
    eager_strides(x, xs);
    scatter_job j = {it, a->in[1], a->in[2], a->out[0], xs, xs[ax], x->dim[ax],
                     it->dim[ax], 1, 1, at->reduction};
    for (int d = ax + 1; d < it->ndim; d++)
        j.inner *= it->dim[d];
    xs[ax] = 0;
    int64_t outer = count / (j.K * j.inner);
    int nt = count >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (nt > 1 && outer < 4 * (int64_t)nt) { /* too few units: split the inner positions */
        int64_t want = (4 * (int64_t)nt + outer - 1) / outer;
        j.parts = want < j.inner ? want : j.inner;
    }
    void (*fn)(const scatter_job *, int64_t) =
        esize(x) == 8 ? scatter_u64 : esize(x) == 4 ? scatter_u32 : scatter_u8;
    if (j.red != GRAPH_SCATTER_NONE) /* infer refused bool */
        fn = x->dtype == GRAPH_F32 ? scatter_f32
             : x->dtype == GRAPH_I64 ? scatter_i64 : scatter_i32;
    int64_t units = outer * j.parts;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t u = 0; u < units; u++)
        fn(&j, u);
    return TG_OK;
}
