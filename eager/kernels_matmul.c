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
 *
 * Prepared state: given a slot (replay), the primitive and its memory
 * objects are made on the first call and reused (eager_dnnl_prim).  When
 * the weights are also fixed (eager_kargs.fixed_in: a constant or param)
 * they are given as format "any" and reordered once into oneDNN's packed
 * layout (brgemm's BA16a64b for linear): the eager path has the same
 * kernel copy them into those blocks on every call, so the arithmetic and
 * the bits are the same, minus the copy (64x784 -> 512: ~480 -> ~450 us
 * on one core).  linear_ep (kernels_ep.c) runs here too, its epilogue as
 * oneDNN post-ops.
 *
 * A step whose eager_kargs.impl is EAGER_GEMM_BLAS or EAGER_GEMM_BLIS (a
 * tuned replay plan, replay/tune.c) runs cblas_sgemm of OpenBLAS or BLIS
 * instead (blas.h): one call
 * per output batch matrix, the operands described by the same views (a
 * transposed operand is its transpose flag and leading dimension), the
 * bias copied into the output first (beta 1), the epilogue in C after.
 */
#include <string.h>

#include "blas.h"
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

/* The operands of dst = src x wei (+ bias) (+ epilogue), views built. */
typedef struct mm_args {
    mat_view src, wei, bias, dst;
    int has_bias;
    const graph_ints *post; /* NULL: none */
    graph_post_prm prm;
} mm_args;

/*
 * Packed weights that oneDNN wants plain (row-major [K, N], what its
 * gemm:jit reads: the AVX2 and SSE4.1 matmul, which have no brgemm in
 * oneDNN 2.6) with rows a multiple of 4 KB apart are given rows 64 bytes
 * longer instead.  The packed buffer sits on 2 MB huge pages
 * (dnnl_util.c's packed_alloc), so such rows are physically a multiple of
 * 4 KB apart too: the column panels gemm:jit copies out of them map onto
 * a few sets of the L2 and keep evicting each other.  With 4 KB pages the
 * frames scatter the rows and this happened by chance, which made
 * transformer_encoder's 128x512x2048 linear take 2.4 ms in some layers
 * and up to 4.8 ms in others, varying with the process.  dnnl_sgemm on
 * that shape at AVX2, 1 thread, weights on huge pages: 3.1-3.8 ms; 4 KB
 * pages: 2.45-2.6 ms; rows 64 bytes longer, either: 2.26 ms.  Returns 1
 * with *out set when desc (weights "any") resolves to such a layout.
 */
static int padded_weights(const dnnl_matmul_desc_t *desc, const_dnnl_primitive_attr_t attr,
                          dnnl_memory_desc_t *out)
{
    dnnl_engine_t eng;
    dnnl_primitive_desc_t pd;
    if (eager_dnnl_engine(&eng) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, desc, attr, eng, NULL) != dnnl_success)
        return 0;
    const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    int nd = w ? w->ndims : 0, pad = 0;
    if (w && w->format_kind == dnnl_blocked && w->format_desc.blocking.inner_nblks == 0 &&
        nd >= 2 && w->format_desc.blocking.strides[nd - 1] == 1 &&
        w->format_desc.blocking.strides[nd - 2] == w->dims[nd - 1] &&
        w->dims[nd - 2] > 1 && w->dims[nd - 1] % 1024 == 0) {
        *out = *w;
        dnnl_dims_t strides;
        int64_t row = w->dims[nd - 1] + 16; /* 64 bytes */
        strides[nd - 1] = 1;
        strides[nd - 2] = row;
        for (int i = nd - 3; i >= 0; i--)
            strides[i] = strides[i + 1] * w->dims[i + 1];
        pad = dnnl_memory_desc_init_by_strides(out, nd, w->dims, dnnl_f32, strides) ==
              dnnl_success;
    }
    dnnl_primitive_desc_destroy(pd);
    return pad;
}

/* Describes the matmul (with its epilogue) and prepares the primitive. */
static tg_status mm_prepare(const eager_kargs *a, const mm_args *m, eager_dnnl_prim **out)
{
    eager_dnnl_spec sp = {"matmul", NULL, NULL, 3, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                          {{0}}, -1};
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    int res_index = -1;
    dnnl_status_t s = md_of(&sp.md[0], &m->src);
    if (s == dnnl_success)
        s = md_of(&sp.md[1], &m->wei);
    if (s == dnnl_success)
        s = md_of(&sp.md[2], &m->dst);
    if (s == dnnl_success && m->has_bias) {
        sp.arg[sp.nargs] = DNNL_ARG_BIAS;
        s = md_of(&sp.md[sp.nargs++], &m->bias);
    }
    /* Fixed weights with a state slot: oneDNN picks their layout (packed
     * once instead of copied into its blocks on every call). */
    dnnl_memory_desc_t wmd = sp.md[1];
    if (s == dnnl_success && a->state && (a->fixed_in & 2u)) {
        s = dnnl_memory_desc_init_by_tag(&wmd, wmd.ndims, wmd.dims, dnnl_f32,
                                         dnnl_format_tag_any);
        sp.packed = 1;
    }
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&desc, &sp.md[0], &wmd, m->has_bias ? &sp.md[3] : NULL,
                                  &sp.md[2]);
    /* The residual (if any) has the output's shape: dst's layout. */
    if (s == dnnl_success)
        s = eager_dnnl_post_attr(m->post, m->prm, &sp.md[2], &attr, &res_index);
    dnnl_memory_desc_t padded;
    if (s == dnnl_success && sp.packed == 1 && padded_weights(&desc, attr, &padded)) {
        wmd = padded;
        s = dnnl_matmul_desc_init(&desc, &sp.md[0], &wmd, m->has_bias ? &sp.md[3] : NULL,
                                  &sp.md[2]);
    }
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "matmul descriptor", s);
    if (res_index >= 0) {
        sp.arg[sp.nargs] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(res_index) | DNNL_ARG_SRC_1;
        sp.md[sp.nargs++] = sp.md[2];
    }
    sp.desc = &desc;
    sp.attr = attr;
    sp.post = m->post;
    sp.prm = m->prm;
    tg_status st = eager_dnnl_prim_new(a, &sp, out);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/*
 * One matrix operand of a view for cblas_sgemm: *trans and *ld, or 0 when
 * its strides are neither row-major nor transposed (never, for the views
 * above) or exceed BLAS's int.
 */
static int blas_operand(const mat_view *v, int *trans, int64_t *ld)
{
    int nb = v->nd - 2;
    int64_t r = v->dims[nb], c = v->dims[nb + 1], rs = v->strides[nb], cs = v->strides[nb + 1];
    if (cs == 1 && (r == 1 || rs >= c))
        *trans = 0, *ld = r > 1 ? rs : (c > 1 ? c : 1);
    else if (rs == 1 && (c == 1 || cs >= r))
        *trans = 1, *ld = c > 1 ? cs : (r > 1 ? r : 1);
    else
        return 0;
    return *ld <= EAGER_BLAS_MAX_DIM && r <= EAGER_BLAS_MAX_DIM && c <= EAGER_BLAS_MAX_DIM;
}

/*
 * The matmul through cblas_sgemm (see the top): TG_OK, or
 * TG_ERR_UNSUPPORTED (nothing written) when no BLAS is loaded or the
 * shapes do not fit its int, for the caller to run oneDNN instead.
 */
static tg_status mm_blas(const eager_kargs *a, int lib, const mm_args *m, const float *src,
                         const float *wei, float *dst, const float *bias, const float *res)
{
    int nb = m->dst.nd - 2, ta, tb;
    int64_t lda, ldb;
    int64_t rows = m->dst.dims[nb], n = m->dst.dims[nb + 1], k = m->src.dims[nb + 1];
    if (!(lib == EAGER_GEMM_BLIS ? eager_blis_available() : eager_blas_available()) ||
        !blas_operand(&m->src, &ta, &lda) ||
        !blas_operand(&m->wei, &tb, &ldb) || n > EAGER_BLAS_MAX_DIM || k > EAGER_BLAS_MAX_DIM)
        return TG_ERR_UNSUPPORTED;
    int64_t nbatch = 1;
    for (int i = 0; i < nb; i++)
        nbatch *= m->dst.dims[i];
    for (int64_t bi = 0; bi < nbatch; bi++) {
        /* this output matrix's batch index, broadcast into each operand */
        int64_t so = 0, wo = 0, rest = bi;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t c = rest % m->dst.dims[i];
            rest /= m->dst.dims[i];
            so += m->src.dims[i] == 1 ? 0 : c * m->src.strides[i];
            wo += m->wei.dims[i] == 1 ? 0 : c * m->wei.strides[i];
        }
        float *c = dst + bi * rows * n;
        if (m->has_bias)
            for (int64_t r = 0; r < rows; r++)
                memcpy(c + r * n, bias, (size_t)n * sizeof *c);
        eager_blas_sgemm_lib(lib, ta, tb, rows, n, k, src + so, lda, wei + wo, ldb,
                             m->has_bias ? 1.0f : 0.0f, c, n, a->nthreads);
    }
    if (m->post && m->post->n)
        eager_post_apply(dst, nbatch * rows * n, m->post, m->prm, res, a->nthreads);
    return TG_OK;
}

/*
 * Runs the matmul on src, wei, dst (then bias and residual when present):
 * through BLAS when the step was tuned to it, else oneDNN's primitive,
 * prepared first unless a's state slot already holds it.
 */
static tg_status mm_run(const eager_kargs *a, const mm_args *m, const void *src,
                        const void *wei, void *dst, const void *bias, const void *res)
{
    if ((a->impl == EAGER_GEMM_BLAS || a->impl == EAGER_GEMM_BLIS) &&
        mm_blas(a, a->impl, m, src, wei, dst, bias, res) == TG_OK)
        return TG_OK;
    eager_dnnl_prim *p = eager_dnnl_prim_get(a);
    if (!p) {
        tg_status st = mm_prepare(a, m, &p);
        if (st != TG_OK)
            return st;
    }
    const void *data[5] = {src, wei, dst, m->has_bias ? bias : res, res};
    return eager_dnnl_prim_finish(a, p, data);
}

tg_status eager_kernel_matmul(const eager_kargs *a)
{
    const graph_matmul_attrs *at = a->attrs;
    const graph_type *ta = &a->in_type[0], *tb = &a->in_type[1];
    const graph_type *to = a->out_type;
    if (graph_type_numel(to) == 0)
        return TG_OK;
    int nb = to->ndim - (ta->ndim >= 2) - (tb->ndim >= 2);
    mm_args m = {.post = NULL};
    view_operand(ta, nb, 1, (int)at->transpose_a, &m.src);
    view_operand(tb, nb, 0, (int)at->transpose_b, &m.wei);
    view_plain(nb, to->dim, m.src.dims[nb], m.wei.dims[nb + 1], &m.dst);
    if (m.src.dims[nb + 1] == 0) { /* K = 0: every sum is empty */
        memset(a->out[0], 0, (size_t)graph_type_numel(to) * sizeof(float));
        return TG_OK;
    }
    return mm_run(a, &m, a->in[0], a->in[1], a->out[0], NULL, NULL);
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

tg_status eager_linear_run(const eager_kargs *a, const graph_ints *post,
                           graph_post_prm prm)
{
    const graph_type *tx = &a->in_type[0], *tw = &a->in_type[1];
    int64_t n = tw->dim[0], k = tw->dim[1];
    int64_t rows = 1;
    for (int i = 0; i < tx->ndim - 1; i++)
        rows *= tx->dim[i];
    const float *bias = a->nin > 2 ? a->in[2] : NULL;
    const float *res = a->nin > 3 ? a->in[3] : NULL;
    if (rows == 0 || n == 0)
        return TG_OK;
    if (k == 0) {
        fill_rows(a->out[0], rows, n, bias);
        if (post)
            eager_post_apply(a->out[0], rows * n, post, prm, res, a->nthreads);
        return TG_OK;
    }
    /* x as [rows, K]; w [N,K] read as its transpose [K,N]; b as [1,N]. */
    mm_args m = {{2, {rows, k}, {k, 1}}, {2, {k, n}, {1, k}}, {2, {1, n}, {n, 1}},
                 {2, {rows, n}, {n, 1}}, bias != NULL, post, prm};
    return mm_run(a, &m, a->in[0], a->in[1], a->out[0], bias, res);
}

tg_status eager_kernel_linear(const eager_kargs *a)
{
    return eager_linear_run(a, NULL, (graph_post_prm){0});
}
