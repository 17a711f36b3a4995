/*
 * kernels_reduce.c - CPU kernels for reduce_sum, reduce_mean, reduce_max,
 * argmax and argmin (the last two at the end of the file).
 *
 * Layout.  Size-1 dims are dropped and neighbouring dims of the same kind
 * (reduced or kept) merged, so any reduction becomes one of two shapes:
 *  - rows: the last group is reduced: each output reduces contiguous rows
 *    (reduce over the hidden dim, reduce over everything);
 *  - cols: the last group is kept: each block of outputs accumulates
 *    contiguous slices of the input (reduce over the batch dim).
 * Other reduced groups are walked with an odometer.  Inner loops are
 * contiguous and written so the compiler vectorizes them.
 *
 * Numerics.  f32 sums and means accumulate in double.  Integer sums wrap
 * modulo 2^64 (i64) or 2^32 (i32), done in unsigned arithmetic so there
 * is no signed overflow; the width of the unsigned accumulator does not
 * change a wrapped result, so i32 uses 32-bit lanes.  reduce_max of f32
 * propagates NaN.  Empty reductions: sum 0, mean NaN (max is rejected by
 * infer).  With several threads, long reductions are split into chunks
 * combined in chunk order; f32 results may then differ in the last bit
 * from a one-thread run.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/infer_norm.h"
#include "kernel.h"

/* Independent accumulators in row loops: enough to fill AVX-512 lanes. */
#define LANES 16
/* Outputs per block; a block's accumulators live on the stack (16 KiB),
 * and a column block this wide reads each input row in one long run. */
#define BLOCK 2048

/* Accumulators for up to BLOCK outputs; each op uses the member of its
 * accumulator type, so every access is through the declared type. */
typedef union acc_block {
    double d[BLOCK];
    float f[BLOCK];
    uint64_t u64[BLOCK];
    uint32_t u32[BLOCK];
    int64_t i64[BLOCK];
    int32_t i32[BLOCK];
} acc_block;

/* The per-(op, dtype) inner loops. */
typedef struct red_fns {
    size_t esize; /* input and output element size */
    void (*init)(acc_block *acc, int64_t n);
    /* acc[i] op= reduce(x[0..n)) */
    void (*row)(acc_block *acc, int64_t i, const void *x, int64_t n);
    /* acc[j] op= x[k * stride + j] for k < rows, j < n <= BLOCK */
    void (*col)(acc_block *acc, const void *x, int64_t n, int64_t rows,
                int64_t stride);
    /* acc[j] op= other[j] for j < n */
    void (*merge)(acc_block *acc, const acc_block *other, int64_t n);
    /* out[j] = final(acc[j]); count is the number of reduced elements */
    void (*fin)(void *out, const acc_block *acc, int64_t n, int64_t count);
} red_fns;

/* Signed value of a wrapped unsigned sum, without implementation-defined
 * conversions. */
static int64_t wrap_i64(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u
                                    : (int64_t)(u - (uint64_t)INT64_MAX - 1) + INT64_MIN;
}

static int32_t wrap_i32(uint32_t u)
{
    return u <= (uint32_t)INT32_MAX ? (int32_t)u
                                    : (int32_t)(u - (uint32_t)INT32_MAX - 1) + INT32_MIN;
}

/*
 * acc[j] op= x[k * stride + j] (element T, accumulator A, identity ID,
 * STEP(acc, value) the op).  Short contiguous rows (a reduction over a
 * middle axis in front of a few channels) would leave the j loop too
 * short to vectorize, so they are folded as one flat run into
 * lcm(n, LANES) lanes, lane l belonging to column l % n.
 */
#define COL_FN(name, T, A, F, ID, STEP)                                     \
    static void name##_col(acc_block *restrict a, const void *xv,           \
                           int64_t n, int64_t rows, int64_t stride)         \
    {                                                                       \
        if (stride == n && n < LANES && rows * n >= 4 * LANES * LANES) {    \
            const T *restrict x = xv;                                       \
            A lane[LANES * LANES];                                          \
            int64_t w = n, tot = rows * n, i = 0;                           \
            while (w % LANES)                                               \
                w += n;                                                     \
            for (int64_t l = 0; l < w; l++)                                 \
                lane[l] = ID;                                               \
            for (; i + w <= tot; i += w)                                    \
                for (int64_t l = 0; l < w; l++)                             \
                    lane[l] = STEP(lane[l], (A)x[i + l]);                   \
            for (int64_t l = 0; l < w; l++)                                 \
                a->F[l % n] = STEP(a->F[l % n], lane[l]);                   \
            for (; i < tot; i++) /* i is a multiple of n here */            \
                a->F[i % n] = STEP(a->F[i % n], (A)x[i]);                   \
            return;                                                         \
        }                                                                   \
        for (int64_t k = 0; k < rows; k++) {                                \
            const T *restrict x = (const T *)xv + k * stride;               \
            for (int64_t j = 0; j < n; j++)                                 \
                a->F[j] = STEP(a->F[j], (A)x[j]);                           \
        }                                                                   \
    }

#define SUM_STEP_(acc, v) ((acc) + (v))

/* Sums: element T, accumulator A (acc_block member F). */
#define SUM_FNS(name, T, A, F)                                              \
    static void name##_init(acc_block *a, int64_t n)                        \
    {                                                                       \
        for (int64_t i = 0; i < n; i++)                                     \
            a->F[i] = 0;                                                    \
    }                                                                       \
    static void name##_row(acc_block *a, int64_t at, const void *xv,        \
                           int64_t n)                                       \
    {                                                                       \
        const T *restrict x = xv;                                           \
        A lane[LANES] = {0}, s = 0;                                         \
        int64_t i = 0;                                                      \
        for (; i + LANES <= n; i += LANES)                                  \
            for (int j = 0; j < LANES; j++)                                 \
                lane[j] += (A)x[i + j];                                     \
        for (; i < n; i++)                                                  \
            s += (A)x[i];                                                   \
        for (int j = 0; j < LANES; j++)                                     \
            s += lane[j];                                                   \
        a->F[at] += s;                                                      \
    }                                                                       \
    COL_FN(name, T, A, F, 0, SUM_STEP_)                                     \
    static void name##_merge(acc_block *restrict a,                         \
                             const acc_block *restrict o, int64_t n)        \
    {                                                                       \
        for (int64_t j = 0; j < n; j++)                                     \
            a->F[j] += o->F[j];                                             \
    }

SUM_FNS(sum_f32, float, double, d)
SUM_FNS(sum_i64, int64_t, uint64_t, u64)
SUM_FNS(sum_i32, int32_t, uint32_t, u32)

static void sum_f32_fin(void *out, const acc_block *a, int64_t n, int64_t count)
{
    for (int64_t j = 0; j < n; j++)
        ((float *)out)[j] = (float)a->d[j];
}

static void mean_f32_fin(void *out, const acc_block *a, int64_t n, int64_t count)
{
    double inv = count > 0 ? 1.0 / (double)count : NAN;
    for (int64_t j = 0; j < n; j++)
        ((float *)out)[j] = (float)(a->d[j] * inv);
}

static void sum_i64_fin(void *out, const acc_block *a, int64_t n, int64_t count)
{
    for (int64_t j = 0; j < n; j++)
        ((int64_t *)out)[j] = wrap_i64(a->u64[j]);
}

static void sum_i32_fin(void *out, const acc_block *a, int64_t n, int64_t count)
{
    for (int64_t j = 0; j < n; j++)
        ((int32_t *)out)[j] = wrap_i32(a->u32[j]);
}

/*
 * f32 max keeps a NaN once seen: v != v picks a NaN v, and a NaN
 * accumulator never loses a comparison it cannot win (v > NaN is false).
 * Row loops instead track NaN in a flag beside an OpenMP simd max
 * reduction, which the compiler vectorizes (a conditional select in lanes
 * it does not).
 */
#define FMAX_(m, v) (((v) > (m) || (v) != (v)) ? (v) : (m))
#define IMAX_(m, v) ((v) > (m) ? (v) : (m))
#define FNAN_(v) ((v) != (v))
#define INAN_(v) 0

/* Maxima: element T (acc_block member F), identity LO, step MAX, NaN test
 * NANCHK giving NANVAL. */
#define MAX_FNS(name, T, F, LO, MAX, NANCHK, NANVAL)                        \
    static void name##_init(acc_block *a, int64_t n)                        \
    {                                                                       \
        for (int64_t i = 0; i < n; i++)                                     \
            a->F[i] = LO;                                                   \
    }                                                                       \
    static void name##_row(acc_block *a, int64_t at, const void *xv,        \
                           int64_t n)                                       \
    {                                                                       \
        const T *restrict x = xv;                                           \
        T m = a->F[at];                                                      \
        int nan = NANCHK(m);                                                \
        _Pragma("omp simd reduction(max : m) reduction(| : nan)")           \
        for (int64_t i = 0; i < n; i++) {                                   \
            m = x[i] > m ? x[i] : m;                                        \
            nan |= NANCHK(x[i]);                                            \
        }                                                                   \
        a->F[at] = nan ? NANVAL : m;                                        \
    }                                                                       \
    COL_FN(name, T, T, F, LO, MAX)                                          \
    static void name##_merge(acc_block *restrict a,                         \
                             const acc_block *restrict o, int64_t n)        \
    {                                                                       \
        for (int64_t j = 0; j < n; j++)                                     \
            a->F[j] = MAX(a->F[j], o->F[j]);                                \
    }                                                                       \
    static void name##_fin(void *out, const acc_block *a, int64_t n,        \
                           int64_t count)                                   \
    {                                                                       \
        for (int64_t j = 0; j < n; j++)                                     \
            ((T *)out)[j] = a->F[j];                                        \
    }

MAX_FNS(max_f32, float, f, -INFINITY, FMAX_, FNAN_, NAN)
MAX_FNS(max_i64, int64_t, i64, INT64_MIN, IMAX_, INAN_, 0)
MAX_FNS(max_i32, int32_t, i32, INT32_MIN, IMAX_, INAN_, 0)

#define FNS(name, fin, size)                                                \
    {size, name##_init, name##_row, name##_col, name##_merge, fin}

static const red_fns k_sum_f32 = FNS(sum_f32, sum_f32_fin, 4);
static const red_fns k_mean_f32 = FNS(sum_f32, mean_f32_fin, 4);
static const red_fns k_sum_i64 = FNS(sum_i64, sum_i64_fin, 8);
static const red_fns k_sum_i32 = FNS(sum_i32, sum_i32_fin, 4);
static const red_fns k_max_f32 = FNS(max_f32, max_f32_fin, 4);
static const red_fns k_max_i64 = FNS(max_i64, max_i64_fin, 8);
static const red_fns k_max_i32 = FNS(max_i32, max_i32_fin, 4);

/*
 * The merged layout.  Output o (of nkeep, excluding the inner group for
 * cols) starts at kept_offset(o); the odometer walks rcount positions of
 * the other reduced groups; inner is the contiguous last group.
 */
typedef struct red_plan {
    int nk, nr;
    int64_t ksize[GRAPH_MAX_DIMS], kstride[GRAPH_MAX_DIMS];
    int64_t rsize[GRAPH_MAX_DIMS], rstride[GRAPH_MAX_DIMS];
    int64_t nkeep, rcount, inner;
    int inner_reduced;
} red_plan;

static void make_plan(const graph_type *t, const unsigned char *mask,
                      red_plan *p)
{
    int64_t size[GRAPH_MAX_DIMS], stride[GRAPH_MAX_DIMS], s = 1;
    int red[GRAPH_MAX_DIMS], ng = 0;
    /* Walk from the last dim so strides come out as we go. */
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->dim[d];
        if (n == 1)
            continue;
        if (ng > 0 && red[ng - 1] == mask[d]) {
            size[ng - 1] *= n;
        } else {
            size[ng] = n, stride[ng] = s, red[ng] = mask[d];
            ng++;
        }
        s *= n;
    }
    /* Groups are innermost-first here; group 0 is the contiguous one. */
    memset(p, 0, sizeof *p);
    p->inner = ng > 0 ? size[0] : 1;
    p->inner_reduced = ng > 0 ? red[0] : 1;
    p->nkeep = p->rcount = 1;
    for (int g = ng - 1; g >= 1; g--) {
        if (red[g]) {
            p->rsize[p->nr] = size[g], p->rstride[p->nr++] = stride[g];
            p->rcount *= size[g];
        } else {
            p->ksize[p->nk] = size[g], p->kstride[p->nk++] = stride[g];
            p->nkeep *= size[g];
        }
    }
}

static int64_t kept_offset(const red_plan *p, int64_t o)
{
    int64_t off = 0;
    for (int d = p->nk - 1; d >= 0; d--) {
        off += (o % p->ksize[d]) * p->kstride[d];
        o /= p->ksize[d];
    }
    return off;
}

/* Odometer over the reduced groups, starting at position r. */
typedef struct odometer {
    int64_t idx[GRAPH_MAX_DIMS];
    int64_t off;
} odometer;

static void odo_start(const red_plan *p, odometer *od, int64_t r)
{
    od->off = 0;
    for (int d = p->nr - 1; d >= 0; d--) {
        od->idx[d] = r % p->rsize[d];
        od->off += od->idx[d] * p->rstride[d];
        r /= p->rsize[d];
    }
}

/* Advances by k steps; k never carries past the innermost group twice
 * (callers step at most to the end of the innermost group). */
static void odo_step(const red_plan *p, odometer *od, int64_t k)
{
    int d = p->nr - 1;
    if (d < 0)
        return;
    od->idx[d] += k;
    od->off += k * p->rstride[d];
    while (d >= 0 && od->idx[d] >= p->rsize[d]) {
        od->off -= p->rsize[d] * p->rstride[d];
        od->idx[d] = 0;
        if (--d >= 0) {
            od->idx[d]++;
            od->off += p->rstride[d];
        }
    }
}

/* Accumulates positions [t0, t1) of one output's reduction into acc[at],
 * where position t is element t % inner of odometer step t / inner. */
static void rows_range(const red_fns *f, const red_plan *p, const char *x,
                       int64_t base, int64_t t0, int64_t t1, acc_block *acc,
                       int64_t at)
{
    odometer od;
    int64_t j = t0 % p->inner;
    odo_start(p, &od, t0 / p->inner);
    while (t0 < t1) {
        int64_t n = p->inner - j < t1 - t0 ? p->inner - j : t1 - t0;
        f->row(acc, at, x + (base + od.off + j) * (int64_t)f->esize, n);
        t0 += n;
        j = 0;
        odo_step(p, &od, 1);
    }
}

/* The last group is reduced: one accumulator per output, in blocks. */
static tg_status reduce_rows(const red_fns *f, const red_plan *p,
                             const char *x, char *out, int64_t numel,
                             int nthreads)
{
    int64_t per = p->rcount * p->inner, es = (int64_t)f->esize;
    int par = numel >= EAGER_PAR_MIN && nthreads > 1;
    if (!par || p->nkeep >= 2 * nthreads) {
        int64_t bs = par ? p->nkeep / (4 * nthreads) : BLOCK;
        bs = bs < 1 ? 1 : bs > BLOCK ? BLOCK : bs;
        int64_t nblk = (p->nkeep + bs - 1) / bs;
#pragma omp parallel for num_threads(nthreads) if (par) schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            acc_block acc;
            int64_t o0 = b * bs, n = p->nkeep - o0 < bs ? p->nkeep - o0 : bs;
            f->init(&acc, n);
            for (int64_t i = 0; i < n; i++)
                rows_range(f, p, x, kept_offset(p, o0 + i), 0, per, &acc, i);
            f->fin(out + o0 * es, &acc, n, per);
        }
        return TG_OK;
    }
    /* Few outputs, long reductions: split each across the threads. */
    acc_block *part = tg_malloc((size_t)nthreads * sizeof *part);
    if (!part)
        return TG_ERR_NOMEM;
    for (int64_t o = 0; o < p->nkeep; o++) {
        int64_t base = kept_offset(p, o);
#pragma omp parallel for num_threads(nthreads) schedule(static)
        for (int k = 0; k < nthreads; k++) {
            f->init(&part[k], 1);
            rows_range(f, p, x, base, per * k / nthreads,
                       per * (k + 1) / nthreads, &part[k], 0);
        }
        for (int k = 1; k < nthreads; k++)
            f->merge(&part[0], &part[k], 1);
        f->fin(out + o * es, &part[0], 1, per);
    }
    tg_free(part);
    return TG_OK;
}

/* Accumulates odometer steps [r0, r1) of a column block into acc.  The
 * innermost reduced group is handed to col as one run of rows. */
static void cols_range(const red_fns *f, const red_plan *p, const char *x,
                       int64_t base, int64_t n, int64_t r0, int64_t r1,
                       acc_block *acc)
{
    int last = p->nr - 1;
    int64_t lsize = last >= 0 ? p->rsize[last] : 1;
    int64_t lstride = last >= 0 ? p->rstride[last] : 0;
    odometer od;
    odo_start(p, &od, r0);
    for (int64_t r = r0; r < r1;) {
        int64_t k = last >= 0 ? od.idx[last] : 0;
        int64_t rows = lsize - k < r1 - r ? lsize - k : r1 - r;
        f->col(acc, x + (base + od.off) * (int64_t)f->esize, n, rows, lstride);
        r += rows;
        odo_step(p, &od, rows);
    }
}

/* The last group is kept: blocks of up to BLOCK outputs. */
static tg_status reduce_cols(const red_fns *f, const red_plan *p,
                             const char *x, char *out, int64_t numel,
                             int nthreads)
{
    int par = numel >= EAGER_PAR_MIN && nthreads > 1;
    int64_t es = (int64_t)f->esize;
    int64_t nblk = (p->inner + BLOCK - 1) / BLOCK, ntask = p->nkeep * nblk;
    if (!par || ntask >= nthreads) {
#pragma omp parallel for num_threads(nthreads) if (par) schedule(static)
        for (int64_t t = 0; t < ntask; t++) {
            acc_block acc;
            int64_t o = t / nblk, j0 = t % nblk * BLOCK;
            int64_t n = p->inner - j0 < BLOCK ? p->inner - j0 : BLOCK;
            f->init(&acc, n);
            cols_range(f, p, x, kept_offset(p, o) + j0, n, 0, p->rcount, &acc);
            f->fin(out + (o * p->inner + j0) * es, &acc, n, p->rcount);
        }
        return TG_OK;
    }
    /* Few outputs, many steps: split the steps across the threads, so
     * each still reads whole rows in order. */
    acc_block *part = tg_malloc((size_t)nthreads * sizeof *part);
    if (!part)
        return TG_ERR_NOMEM;
    for (int64_t t = 0; t < ntask; t++) {
        int64_t o = t / nblk, j0 = t % nblk * BLOCK;
        int64_t n = p->inner - j0 < BLOCK ? p->inner - j0 : BLOCK;
        int64_t base = kept_offset(p, o) + j0;
#pragma omp parallel for num_threads(nthreads) schedule(static)
        for (int k = 0; k < nthreads; k++) {
            f->init(&part[k], n);
            cols_range(f, p, x, base, n, p->rcount * k / nthreads,
                       p->rcount * (k + 1) / nthreads, &part[k]);
        }
        for (int k = 1; k < nthreads; k++)
            f->merge(&part[0], &part[k], n);
        f->fin(out + (o * p->inner + j0) * es, &part[0], n, p->rcount);
    }
    tg_free(part);
    return TG_OK;
}

/* Output count and reduced count from the input type and mask. */
static void counts(const graph_type *t, const unsigned char *mask,
                   int64_t *nout, int64_t *count)
{
    *nout = *count = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (mask[d])
            *count *= t->dim[d];
        else
            *nout *= t->dim[d];
    }
}

static tg_status run_reduce(const eager_kargs *a, const red_fns *f,
                            const graph_ints *axes)
{
    const graph_type *t = &a->in_type[0];
    unsigned char mask[GRAPH_MAX_DIMS];
    int64_t nout, count;
    tg_status st = graph_reduce_mask(t, axes, mask, a->err, a->errlen);
    if (st != TG_OK)
        return st;
    counts(t, mask, &nout, &count);
    if (nout == 0)
        return TG_OK;
    if (count == 0) { /* empty reductions: the identity, finalized */
        acc_block acc;
        for (int64_t o = 0; o < nout; o += BLOCK) {
            int64_t n = nout - o < BLOCK ? nout - o : BLOCK;
            f->init(&acc, n);
            f->fin((char *)a->out[0] + o * (int64_t)f->esize, &acc, n, 0);
        }
        return TG_OK;
    }
    red_plan p;
    make_plan(t, mask, &p);
    int64_t numel = nout * count;
    if (p.inner_reduced)
        st = reduce_rows(f, &p, a->in[0], a->out[0], numel, a->nthreads);
    else
        st = reduce_cols(f, &p, a->in[0], a->out[0], numel, a->nthreads);
    return st == TG_OK ? st : eager_kernel_fail(a, st, "no memory");
}

tg_status eager_kernel_reduce_sum(const eager_kargs *a)
{
    const graph_reduce_sum_attrs *at = a->attrs;
    graph_dtype dt = a->in_type[0].dtype;
    const red_fns *f = dt == GRAPH_F32 ? &k_sum_f32
                       : dt == GRAPH_I64 ? &k_sum_i64
                                         : &k_sum_i32;
    return run_reduce(a, f, &at->axes);
}

tg_status eager_kernel_reduce_mean(const eager_kargs *a)
{
    const graph_reduce_mean_attrs *at = a->attrs;
    return run_reduce(a, &k_mean_f32, &at->axes);
}

tg_status eager_kernel_reduce_max(const eager_kargs *a)
{
    const graph_reduce_max_attrs *at = a->attrs;
    graph_dtype dt = a->in_type[0].dtype;
    const red_fns *f = dt == GRAPH_F32 ? &k_max_f32
                       : dt == GRAPH_I64 ? &k_max_i64
                                         : &k_max_i32;
    return run_reduce(a, f, &at->axes);
}

/* ---- argmax, argmin ---- */

/*
 * One axis of length len between outer and inner dims: output (o, j) is
 * the index k of the extreme of x[(o * len + k) * inner + j].
 *
 * Order.  NaN is the extreme of both ops and NaNs tie with each other, so
 * the first NaN wins, as in NumPy's and PyTorch's argmax and argmin.  The
 * ONNX spec leaves NaN open, and ONNX Runtime (1.30, CPU) differs: its
 * running best starts at element 0 and no comparison with NaN moves it,
 * so a NaN wins only when it is first (ArgMax of [1, NaN, 3] is 2, of
 * [NaN, 1, 2] is 0); tests/onnx_export_cases.h keeps NaN out of what it
 * compares with ONNX Runtime.  Ties give the first index, the last with
 * select_last (ONNX); -0 and +0 tie.
 *
 * Rows (inner 1) take two vectorized passes: the extreme and whether a
 * NaN is present (an OpenMP simd reduction, as reduce_max's rows), then
 * the first or last index holding it, found ARG_SCAN elements at a time.
 * Columns keep running best values and indices for a block of outputs,
 * updated with selects over contiguous input rows.  On several threads a
 * long axis with few outputs is split into chunks, merged in index order:
 * a later chunk's candidate replaces an earlier one only if strictly
 * better (first) or at least as good (select_last).
 */

/* Outputs per column block (best values and indices on the stack). */
#define ARG_BLOCK 1024
/* Elements per test of the index search in rows: one branch per block. */
#define ARG_SCAN 256

#define PRAGMA_(x) _Pragma(#x)

/* v (at a later index) replaces b: strictly for the first index, on a tie
 * too for the last; a NaN beats any number, and a later NaN beats a NaN
 * only for the last.  Bitwise, so column loops stay branch-free. */
#define FGT_(v, b) (((v) > (b)) | (((v) != (v)) & ((b) == (b))))
#define FGE_(v, b) (((v) >= (b)) | ((v) != (v)))
#define FLT_(v, b) (((v) < (b)) | (((v) != (v)) & ((b) == (b))))
#define FLE_(v, b) (((v) <= (b)) | ((v) != (v)))
#define IGT_(v, b) ((v) > (b))
#define IGE_(v, b) ((v) >= (b))
#define ILT_(v, b) ((v) < (b))
#define ILE_(v, b) ((v) <= (b))

typedef struct arg_fns {
    /* Index in [0, n) of the extreme of the contiguous x[0..n), n >= 1. */
    int64_t (*row)(const void *x, int64_t n, int last);
    /* at[j] = index k in [k0, k1) of the extreme of x[k * stride + j],
     * for j < n <= ARG_BLOCK; k0 < k1. */
    void (*col)(const void *x, int64_t stride, int64_t n, int64_t k0, int64_t k1, int last,
                int64_t *at);
    /* Element i of x (at a later index than j) replaces element j. */
    int (*better)(const void *x, int64_t i, int64_t j, int last);
    size_t esize;
} arg_fns;

/* x[i] holds the extreme m: a NaN when there is one (integers: nan 0). */
#define ARG_HIT_(x, i, m, nan, NANCHK) ((nan) ? NANCHK(x[i]) : (x[i]) == (m))

/*
 * name: element T, RED the OpenMP reduction (max / min) with identity ID,
 * CMP its comparison, WIN / TIE the first / last index rules above, NANCHK
 * the NaN test (0 for integers).
 */
#define ARG_FNS(name, T, RED, ID, CMP, WIN, TIE, NANCHK)                    \
    static int64_t name##_row(const void *xv, int64_t n, int last)          \
    {                                                                       \
        const T *restrict x = xv;                                           \
        T m = ID;                                                           \
        int nan = 0;                                                        \
        PRAGMA_(omp simd reduction(RED : m) reduction(| : nan))             \
        for (int64_t i = 0; i < n; i++) {                                   \
            m = x[i] CMP m ? x[i] : m;                                      \
            nan |= NANCHK(x[i]);                                            \
        }                                                                   \
        /* n >= 1, so some element hits; blocks of ARG_SCAN are tested     \
         * with an OR that vectorizes, then scanned */                      \
        int64_t i = 0;                                                      \
        int hit = 0;                                                        \
        if (!last) {                                                        \
            for (; i + ARG_SCAN <= n; i += ARG_SCAN) {                      \
                for (int j = 0; j < ARG_SCAN; j++)                          \
                    hit |= ARG_HIT_(x, i + j, m, nan, NANCHK);              \
                if (hit)                                                    \
                    break;                                                  \
            }                                                               \
            while (i < n - 1 && !ARG_HIT_(x, i, m, nan, NANCHK))            \
                i++;                                                        \
            return i;                                                       \
        }                                                                   \
        for (i = n; i >= ARG_SCAN; i -= ARG_SCAN) {                         \
            for (int j = 1; j <= ARG_SCAN; j++)                             \
                hit |= ARG_HIT_(x, i - j, m, nan, NANCHK);                  \
            if (hit)                                                        \
                break;                                                      \
        }                                                                   \
        while (i > 1 && !ARG_HIT_(x, i - 1, m, nan, NANCHK))                \
            i--;                                                            \
        return i - 1;                                                       \
    }                                                                       \
    static void name##_col(const void *xv, int64_t stride, int64_t n,       \
                           int64_t k0, int64_t k1, int last, int64_t *at)   \
    {                                                                       \
        const T *restrict x = xv;                                           \
        T best[ARG_BLOCK];                                                  \
        for (int64_t j = 0; j < n; j++)                                     \
            best[j] = x[k0 * stride + j], at[j] = k0;                       \
        for (int64_t k = k0 + 1; k < k1; k++) {                             \
            const T *restrict r = x + k * stride;                           \
            if (last)                                                       \
                for (int64_t j = 0; j < n; j++) {                           \
                    int b = TIE(r[j], best[j]);                             \
                    best[j] = b ? r[j] : best[j];                           \
                    at[j] = b ? k : at[j];                                  \
                }                                                           \
            else                                                            \
                for (int64_t j = 0; j < n; j++) {                           \
                    int b = WIN(r[j], best[j]);                             \
                    best[j] = b ? r[j] : best[j];                           \
                    at[j] = b ? k : at[j];                                  \
                }                                                           \
        }                                                                   \
    }                                                                       \
    static int name##_better(const void *xv, int64_t i, int64_t j, int last) \
    {                                                                       \
        const T *x = xv;                                                    \
        return last ? TIE(x[i], x[j]) : WIN(x[i], x[j]);                    \
    }                                                                       \
    static const arg_fns k_##name = {name##_row, name##_col, name##_better, sizeof(T)};

ARG_FNS(argmax_f32, float, max, -INFINITY, >, FGT_, FGE_, FNAN_)
ARG_FNS(argmax_i64, int64_t, max, INT64_MIN, >, IGT_, IGE_, INAN_)
ARG_FNS(argmax_i32, int32_t, max, INT32_MIN, >, IGT_, IGE_, INAN_)
ARG_FNS(argmin_f32, float, min, INFINITY, <, FLT_, FLE_, FNAN_)
ARG_FNS(argmin_i64, int64_t, min, INT64_MAX, <, ILT_, ILE_, INAN_)
ARG_FNS(argmin_i32, int32_t, min, INT32_MAX, <, ILT_, ILE_, INAN_)

/* Rows (inner 1): one output per row; few long rows on several threads
 * are split into chunks. */
static tg_status arg_rows(const eager_kargs *a, const arg_fns *f, int64_t outer, int64_t len,
                          int last)
{
    const char *x = a->in[0];
    int64_t *y = a->out[0], es = (int64_t)f->esize;
    int nth = a->nthreads;
    int par = outer * len >= EAGER_PAR_MIN && nth > 1;
    if (!par || outer >= 2 * nth) {
#pragma omp parallel for num_threads(nth) if (par) schedule(static)
        for (int64_t o = 0; o < outer; o++)
            y[o] = f->row(x + o * len * es, len, last);
        return TG_OK;
    }
    int64_t *part = tg_malloc((size_t)nth * sizeof *part);
    if (!part)
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory");
    for (int64_t o = 0; o < outer; o++) {
        const char *row = x + o * len * es;
#pragma omp parallel for num_threads(nth) schedule(static)
        for (int k = 0; k < nth; k++) {
            int64_t k0 = len * k / nth, k1 = len * (k + 1) / nth;
            part[k] = k0 < k1 ? k0 + f->row(row + k0 * es, k1 - k0, last) : -1;
        }
        int64_t best = -1;
        for (int k = 0; k < nth; k++)
            if (part[k] >= 0 && (best < 0 || f->better(row, part[k], best, last)))
                best = part[k];
        y[o] = best;
    }
    tg_free(part);
    return TG_OK;
}

/* Columns (inner > 1): blocks of up to ARG_BLOCK outputs; with fewer
 * blocks than threads, the axis is split into chunks. */
static tg_status arg_cols(const eager_kargs *a, const arg_fns *f, int64_t outer, int64_t len,
                          int64_t inner, int last)
{
    const char *x = a->in[0];
    int64_t *y = a->out[0], es = (int64_t)f->esize;
    int nth = a->nthreads;
    int par = outer * len * inner >= EAGER_PAR_MIN && nth > 1;
    int64_t nblk = (inner + ARG_BLOCK - 1) / ARG_BLOCK, ntask = outer * nblk;
    if (!par || ntask >= nth) {
#pragma omp parallel for num_threads(nth) if (par) schedule(static)
        for (int64_t t = 0; t < ntask; t++) {
            int64_t o = t / nblk, j0 = t % nblk * ARG_BLOCK;
            int64_t n = inner - j0 < ARG_BLOCK ? inner - j0 : ARG_BLOCK;
            f->col(x + (o * len * inner + j0) * es, inner, n, 0, len, last, y + o * inner + j0);
        }
        return TG_OK;
    }
    int64_t *part = tg_malloc((size_t)nth * ARG_BLOCK * sizeof *part);
    if (!part)
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory");
    for (int64_t t = 0; t < ntask; t++) {
        int64_t o = t / nblk, j0 = t % nblk * ARG_BLOCK;
        int64_t n = inner - j0 < ARG_BLOCK ? inner - j0 : ARG_BLOCK;
        const char *base = x + (o * len * inner + j0) * es;
#pragma omp parallel for num_threads(nth) schedule(static)
        for (int k = 0; k < nth; k++) {
            int64_t k0 = len * k / nth, k1 = len * (k + 1) / nth;
            if (k0 < k1)
                f->col(base, inner, n, k0, k1, last, part + k * ARG_BLOCK);
        }
        for (int64_t j = 0; j < n; j++) {
            int64_t best = -1;
            for (int k = 0; k < nth; k++) {
                int64_t c = part[k * ARG_BLOCK + j];
                if (len * k / nth < len * (k + 1) / nth &&
                    (best < 0 || f->better(base, c * inner + j, best * inner + j, last)))
                    best = c;
            }
            y[o * inner + j0 + j] = best;
        }
    }
    tg_free(part);
    return TG_OK;
}

static tg_status run_arg(const eager_kargs *a, const arg_fns *f, int64_t axis_attr, int last)
{
    const graph_type *t = &a->in_type[0];
    int axis = graph_norm_axis(axis_attr, t->ndim); /* checked by infer */
    int64_t outer, len, inner;
    eager_axis_split(t, axis, &outer, &len, &inner);
    /* infer refused an empty axis unless the output is empty too */
    if (outer * inner == 0)
        return TG_OK;
    if (inner == 1)
        return arg_rows(a, f, outer, len, last);
    return arg_cols(a, f, outer, len, inner, last);
}

static const arg_fns *arg_pick(graph_dtype dt, const arg_fns *f32, const arg_fns *i64,
                               const arg_fns *i32)
{
    return dt == GRAPH_F32 ? f32 : dt == GRAPH_I64 ? i64 : i32;
}

tg_status eager_kernel_argmax(const eager_kargs *a)
{
    const graph_argmax_attrs *at = a->attrs;
    const arg_fns *f = arg_pick(a->in_type[0].dtype, &k_argmax_f32, &k_argmax_i64,
                                &k_argmax_i32);
    return run_arg(a, f, at->axis, at->select_last != 0);
}

tg_status eager_kernel_argmin(const eager_kargs *a)
{
    const graph_argmin_attrs *at = a->attrs;
    const arg_fns *f = arg_pick(a->in_type[0].dtype, &k_argmin_f32, &k_argmin_i64,
                                &k_argmin_i32);
    return run_arg(a, f, at->axis, at->select_last != 0);
}

/* ---- topk ---- */

/*
 * topk: per line along the axis, the (value, index) pairs sorted by the
 * op's order (largest: a greater value first, NaN greatest; smallest:
 * a smaller value first, NaN last; equal values, NaNs among them, by
 * index) and the first k kept.  qsort on each line's pairs: O(n log n).
 */
typedef struct topk_pair {
    float v;
    int64_t i;
} topk_pair;

/* a above b (NaN above every number). */
static int topk_gt(float a, float b)
{
    return a > b || (a != a && b == b);
}

static int topk_cmp_largest(const void *pa, const void *pb)
{
    const topk_pair *a = pa, *b = pb;
    if (topk_gt(a->v, b->v))
        return -1;
    if (topk_gt(b->v, a->v))
        return 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int topk_cmp_smallest(const void *pa, const void *pb)
{
    const topk_pair *a = pa, *b = pb;
    if (topk_gt(b->v, a->v))
        return -1;
    if (topk_gt(a->v, b->v))
        return 1;
    return (a->i > b->i) - (a->i < b->i);
}

tg_status eager_kernel_topk(const eager_kargs *a)
{
    const graph_topk_attrs *at = a->attrs;
    const graph_type *x = &a->in_type[0];
    int axis = graph_norm_axis(at->axis, x->ndim); /* checked by inference */
    int64_t len = x->dim[axis], k = at->k, outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dim[d];
    for (int d = axis + 1; d < x->ndim; d++)
        inner *= x->dim[d];
    int64_t lines = outer * inner;
    if (lines == 0 || k == 0)
        return TG_OK;
    int nt = lines * len >= EAGER_PAR_MIN ? a->nthreads : 1;
    topk_pair *buf = tg_malloc((size_t)nt * (size_t)len * sizeof *buf + 1);
    if (!buf)
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for %d lines of %lld", nt,
                                 (long long)len);
    const float *in = a->in[0];
    float *vals = a->out[0];
    int64_t *idx = a->out[1];
    int (*cmp)(const void *, const void *) = at->largest ? topk_cmp_largest : topk_cmp_smallest;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t l = 0; l < lines; l++) {
        topk_pair *p = buf + (int64_t)omp_get_thread_num() * len;
        int64_t o = l / inner, j = l % inner;
        for (int64_t e = 0; e < len; e++)
            p[e] = (topk_pair){in[(o * len + e) * inner + j], e};
        qsort(p, (size_t)len, sizeof *p, cmp);
        for (int64_t r = 0; r < k; r++) {
            vals[(o * k + r) * inner + j] = p[r].v;
            idx[(o * k + r) * inner + j] = p[r].i;
        }
    }
    tg_free(buf);
    return TG_OK;
}
