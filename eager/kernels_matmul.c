/*
 * kernels_matmul.c - CPU kernels of matmul and linear, through oneDNN's
 * matmul primitive (f32).  Shapes and attributes were checked by
 * graph/infer_linalg.c, which also states the NumPy semantics.
 *
 * Layouts are described to oneDNN, never copied: a transposed operand is
 * its row-major buffer with the last two strides swapped, linear's w [N,K]
 * is the weights matrix [K,N] with strides (1, K), and 1-D operands are
 * 1-row / 1-column matrices.  Batch dims are padded with leading 1s to the
 * output's batch rank and broadcast by oneDNN itself (its matmul accepts a
 * size-1 batch dim in either operand).
 *
 * Empty results return at once; K = 0 (an empty sum) gives zeros, or the
 * bias for linear, without calling oneDNN.
 */
#include <string.h>

#include "dnnl_util.h"

/* A row-major operand seen as a batch of [rows, cols] matrices. */
typedef struct mat_view {
    int nd;             /* batch dims + 2 */
    dnnl_dims_t dims;   /* [batch..., rows, cols] */
    dnnl_dims_t strides;
} mat_view;

/*
 * Describes operand t as nb batch dims (padded with leading 1s) and a
 * matrix.  A 1-D t is one row (as_row, matmul's a) or one column.  With
 * transpose, the stored last two dims are swapped by strides.
 */
static void view_operand(const graph_type *t, int nb, int as_row,
                         int transpose, mat_view *v)
{
    int64_t r, c, rs, cs;
    int tb = t->ndim >= 2 ? t->ndim - 2 : 0;
    if (t->ndim == 1) {
        int64_t k = t->dim[0];
        r = as_row ? 1 : k, c = as_row ? k : 1;
        rs = as_row ? k : 1, cs = 1;
    } else {
        int64_t s0 = t->dim[t->ndim - 2], s1 = t->dim[t->ndim - 1];
        r = transpose ? s1 : s0, c = transpose ? s0 : s1;
        rs = transpose ? 1 : s1, cs = transpose ? s1 : 1;
    }
    v->nd = nb + 2;
    v->dims[nb] = r, v->dims[nb + 1] = c;
    v->strides[nb] = rs, v->strides[nb + 1] = cs;
    int64_t step = r * c;
    for (int i = nb - 1; i >= 0; i--) {
        int j = i - (nb - tb); /* t's own batch dim, or < 0 when padded */
        v->dims[i] = j >= 0 ? t->dim[j] : 1;
        v->strides[i] = step;
        step *= v->dims[i];
    }
}

/* A plain row-major view of dims [batch..., rows, cols]. */
static void view_plain(int nb, const int64_t *batch, int64_t rows,
                       int64_t cols, mat_view *v)
{
    v->nd = nb + 2;
    for (int i = 0; i < nb; i++)
        v->dims[i] = batch[i];
    v->dims[nb] = rows, v->dims[nb + 1] = cols;
    int64_t step = 1;
    for (int i = v->nd - 1; i >= 0; i--) {
        v->strides[i] = step;
        step *= v->dims[i];
    }
}

static dnnl_status_t md_of(dnnl_memory_desc_t *md, const mat_view *v)
{
    return dnnl_memory_desc_init_by_strides(md, v->nd, v->dims, dnnl_f32,
                                            v->strides);
}

/* dst = src x wei (+ bias broadcast over rows), views already built. */
static tg_status run_matmul(const eager_kargs *a, const mat_view *src,
                            const void *src_p, const mat_view *wei,
                            const void *wei_p, const mat_view *bias,
                            const void *bias_p, const mat_view *dst,
                            void *dst_p)
{
    dnnl_memory_desc_t sm, wm, bm, dm;
    dnnl_matmul_desc_t desc;
    dnnl_status_t s = md_of(&sm, src);
    if (s == dnnl_success)
        s = md_of(&wm, wei);
    if (s == dnnl_success && bias)
        s = md_of(&bm, bias);
    if (s == dnnl_success)
        s = md_of(&dm, dst);
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&desc, &sm, &wm, bias ? &bm : NULL, &dm);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "matmul descriptor", s);
    eager_dnnl_arg args[4] = {
        {DNNL_ARG_SRC, &sm, src_p},
        {DNNL_ARG_WEIGHTS, &wm, wei_p},
        {DNNL_ARG_DST, &dm, dst_p},
        {DNNL_ARG_BIAS, &bm, bias_p},
    };
    return eager_dnnl_run(a, "matmul", &desc, args, bias ? 4 : 3);
}

tg_status eager_kernel_matmul(const eager_kargs *a)
{
    const graph_matmul_attrs *at = a->attrs;
    const graph_type *ta = &a->in_type[0], *tb = &a->in_type[1];
    const graph_type *to = a->out_type;
    if (graph_type_numel(to) == 0)
        return TG_OK;
    int nb = to->ndim - (ta->ndim >= 2) - (tb->ndim >= 2);
    mat_view va, vb, vo;
    view_operand(ta, nb, 1, (int)at->transpose_a, &va);
    view_operand(tb, nb, 0, (int)at->transpose_b, &vb);
    view_plain(nb, to->dim, va.dims[nb], vb.dims[nb + 1], &vo);
    if (va.dims[nb + 1] == 0) { /* K = 0: every sum is empty */
        memset(a->out[0], 0, (size_t)graph_type_numel(to) * sizeof(float));
        return TG_OK;
    }
    return run_matmul(a, &va, a->in[0], &vb, a->in[1], NULL, NULL, &vo,
                      a->out[0]);
}

/* Fills rows x n of out with the bias (or zeros): linear with K = 0. */
static void fill_rows(float *out, int64_t rows, int64_t n, const float *b)
{
    for (int64_t r = 0; r < rows; r++) {
        if (b)
            memcpy(out + r * n, b, (size_t)n * sizeof *out);
        else
            memset(out + r * n, 0, (size_t)n * sizeof *out);
    }
}

tg_status eager_kernel_linear(const eager_kargs *a)
{
    const graph_type *tx = &a->in_type[0], *tw = &a->in_type[1];
    int64_t n = tw->dim[0], k = tw->dim[1];
    int64_t rows = 1;
    for (int i = 0; i < tx->ndim - 1; i++)
        rows *= tx->dim[i];
    const float *bias = a->nin > 2 ? a->in[2] : NULL;
    if (rows == 0 || n == 0)
        return TG_OK;
    if (k == 0) {
        fill_rows(a->out[0], rows, n, bias);
        return TG_OK;
    }
    /* x as [rows, K]; w [N,K] read as its transpose [K,N]; b as [1,N]. */
    mat_view vx = {2, {rows, k}, {k, 1}};
    mat_view vw = {2, {k, n}, {1, k}};
    mat_view vb = {2, {1, n}, {n, 1}};
    mat_view vo = {2, {rows, n}, {n, 1}};
    return run_matmul(a, &vx, a->in[0], &vw, a->in[1], bias ? &vb : NULL,
                      bias, &vo, a->out[0]);
}
