/*
 * kernels_norm.c - CPU kernels for batch_norm, layer_norm,
 * layer_norm_grad, softmax and log_softmax (f32).  Shapes and attributes
 * were checked by graph/infer_norm.c.
 *
 * Numerics.
 * - layer_norm: two passes per row (mean, then the mean squared deviation)
 *   accumulated in double, so a row such as 1e4 + small noise keeps its
 *   variance; population variance.  See ln_row for the subtraction.
 * - layer_norm_grad: each row's statistics recomputed as layer_norm's (the
 *   same mean and rstd bits), xhat and g = dy * weight in f32, their row
 *   means (of g and g * xhat) in double over 16 fixed lanes, dx in f32.
 *   dweight and dbias are sums over rows: each block of rows (a count
 *   fixed by the shape, not the threads) sums its rows in double, then the
 *   blocks are added in order, so the bits do not depend on the thread
 *   count.
 * - softmax: the row max is subtracted before exp, so large inputs do not
 *   overflow; exp is vm_expf (eager/vmath.h), which vectorizes.  -inf entries give 0 (log_softmax: -inf).  A row that is all
 *   -inf, or holds +inf or NaN, gives NaN throughout (as PyTorch): there
 *   is no meaningful distribution.
 * - batch_norm: per-channel factor scale / sqrt(var + eps) computed in
 *   double; y = (x - mean) * factor + bias.
 *
 * Loops run over contiguous rows and are written to vectorize; large
 * tensors are split over a->nthreads threads by independent rows.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../graph/alloc.h"
#include "../graph/infer_norm.h"
#include "kernel.h"
#include "vmath.h"

/* Independent accumulators for row sums (fills AVX-512 lanes). */
#define LANES 16
/* Most columns per task when softmax runs over a non-innermost axis: wide
 * enough that each row of the slab is read as one long contiguous run. */
#define BLOCK 1024

/* Sum of x[0..n) in double. */
static double sum_f64(const float *restrict x, int64_t n)
{
    double lane[LANES] = {0}, s = 0;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            lane[j] += x[i + j];
    for (; i < n; i++)
        s += x[i];
    for (int j = 0; j < LANES; j++)
        s += lane[j];
    return s;
}

/* Sum of (x[i] - mean)^2 in double. */
static double sqdev_f64(const float *restrict x, int64_t n, double mean)
{
    double lane[LANES] = {0}, s = 0;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            double d = x[i + j] - mean;
            lane[j] += d * d;
        }
    for (; i < n; i++)
        s += (x[i] - mean) * (x[i] - mean);
    for (int j = 0; j < LANES; j++)
        s += lane[j];
    return s;
}

/* Max of x[0..n), ignoring NaN (-inf if none); NaN still reaches the
 * output through exp.  The OpenMP simd reduction is what lets the
 * compiler vectorize a float max without -ffast-math. */
static float max_f32(const float *restrict x, int64_t n)
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* ---- batch_norm ---- */

tg_status eager_kernel_batch_norm(const eager_kargs *a)
{
    const graph_batch_norm_attrs *at = a->attrs;
    const graph_type *t = &a->in_type[0];
    const float *x = a->in[0], *scale = a->in[1], *bias = a->in[2];
    const float *mean = a->in[3], *var = a->in[4];
    float *y = a->out[0];
    int64_t n = t->dim[0], c = t->dim[1], s = 1;
    for (int d = 2; d < t->ndim; d++)
        s *= t->dim[d];
    int64_t rows = n * c, numel = rows * s;
    if (numel == 0)
        return TG_OK;
    /* Split rows into chunks when there are too few rows for the threads. */
    int par = numel >= EAGER_PAR_MIN && a->nthreads > 1;
    int64_t chunk = s;
    if (par && rows < 4 * a->nthreads) {
        chunk = (s * rows + 4 * a->nthreads - 1) / (4 * a->nthreads);
        chunk = chunk < 4096 ? 4096 : chunk;
    }
    int64_t nsplit = (s + chunk - 1) / chunk, ntask = rows * nsplit;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t k = 0; k < ntask; k++) {
        int64_t r = k / nsplit, ch = r % c, i0 = k % nsplit * chunk;
        int64_t len = s - i0 < chunk ? s - i0 : chunk;
        float f = (float)(scale[ch] / sqrt((double)var[ch] + at->eps));
        float m = mean[ch], b = bias[ch];
        const float *restrict xr = x + r * s + i0;
        float *restrict yr = y + r * s + i0;
        for (int64_t i = 0; i < len; i++)
            yr[i] = (xr[i] - m) * f + b;
    }
    return TG_OK;
}

/* ---- layer_norm ---- */

/*
 * One row.  x - mean is formed as (x - mhi) - mlo with mean = mhi + mlo
 * split into two floats: x - mhi is exact when x is near the mean (the
 * case that matters), so a large mean does not swamp the deviation, and
 * the loop stays in f32 lanes.
 */
typedef struct ln_stats {
    float rstd, mhi, mlo; /* 1/sqrt(var + eps); the mean as mhi + mlo */
} ln_stats;

/* A row's statistics: layer_norm and layer_norm_grad share them. */
static ln_stats ln_row_stats(const float *restrict x, int64_t n, float eps)
{
    double mean = sum_f64(x, n) / (double)n;
    double var = sqdev_f64(x, n, mean) / (double)n;
    float mhi = (float)mean;
    return (ln_stats){(float)(1.0 / sqrt(var + eps)), mhi, (float)(mean - mhi)};
}

static void ln_row(const float *restrict x, float *restrict y,
                   const float *restrict w, const float *restrict b,
                   int64_t n, float eps)
{
    ln_stats st = ln_row_stats(x, n, eps);
    float rstd = st.rstd, mhi = st.mhi, mlo = st.mlo;
    if (w && b) {
        for (int64_t i = 0; i < n; i++)
            y[i] = ((x[i] - mhi) - mlo) * rstd * w[i] + b[i];
    } else if (w) {
        for (int64_t i = 0; i < n; i++)
            y[i] = ((x[i] - mhi) - mlo) * rstd * w[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            y[i] = ((x[i] - mhi) - mlo) * rstd;
    }
}

tg_status eager_kernel_layer_norm(const eager_kargs *a)
{
    const graph_layer_norm_attrs *at = a->attrs;
    const graph_type *t = &a->in_type[0];
    const float *x = a->in[0];
    const float *w = a->nin > 1 ? a->in[1] : NULL;
    const float *b = a->nin > 2 ? a->in[2] : NULL;
    float *y = a->out[0];
    int axis = graph_norm_axis(at->axis, t->ndim);
    int64_t rows = 1, d = 1;
    for (int i = 0; i < t->ndim; i++)
        *(i < axis ? &rows : &d) *= t->dim[i];
    if (rows * d == 0)
        return TG_OK;
    int par = rows * d >= EAGER_PAR_MIN && a->nthreads > 1;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        ln_row(x + r * d, y + r * d, w, b, d, at->eps);
    return TG_OK;
}

/* ---- layer_norm_grad ---- */

/* Blocks of rows for dweight and dbias: at least LNG_MIN_ROWS rows each
 * (so each block's two double sums and two scratch rows, 24 bytes a
 * column, take at most 3/8 of x's bytes), at most LNG_MAX_BLOCKS blocks
 * (the threads' share of the rows). */
#define LNG_MIN_ROWS 16
#define LNG_MAX_BLOCKS 32

/*
 * One element of a row: xhat and g kept for dx, dy * xhat and dy added
 * into the block's sums, g and g * xhat into the row's sums sum_g and
 * sum_gx (double).  HAS_W is a constant where it is inlined, so each loop
 * is straight-line code; one pass, where three (xhat, g, their sums) took
 * half as long again.
 */
#define LNG_ELEM(i, sum_g, sum_gx)                                         \
    do {                                                                   \
        float h_ = ((x[i] - mhi) - mlo) * rstd, d_ = dy[i];                \
        float g_ = HAS_W ? d_ * w[i] : d_;                                 \
        xh[i] = h_;                                                        \
        g[i] = g_;                                                         \
        pw[i] += d_ * h_;                                                  \
        pb[i] += d_;                                                       \
        sum_g += g_;                                                       \
        sum_gx += g_ * h_;                                                 \
    } while (0)

/*
 * One row: dx, and the row's dy * xhat and dy added into the block's sums
 * pw and pb.  xh and g are the row's scratch (n floats each).  The means
 * of g and g * xhat are summed in double over LANES fixed lanes (the same
 * order at every ISA level).
 */
static inline __attribute__((always_inline)) void
lng_row(const float *restrict x, const float *restrict dy, const float *restrict w,
        float *restrict dx, double *restrict pw, double *restrict pb, float *restrict xh,
        float *restrict g, int64_t n, float eps, const int HAS_W)
{
    ln_stats st = ln_row_stats(x, n, eps);
    float rstd = st.rstd, mhi = st.mhi, mlo = st.mlo;
    double lg[LANES] = {0}, lgx[LANES] = {0}, sg = 0, sgx = 0;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            LNG_ELEM(i + j, lg[j], lgx[j]);
    for (; i < n; i++)
        LNG_ELEM(i, sg, sgx);
    for (int j = 0; j < LANES; j++) {
        sg += lg[j];
        sgx += lgx[j];
    }
    float mg = (float)(sg / (double)n), mgx = (float)(sgx / (double)n);
    for (int64_t k = 0; k < n; k++)
        dx[k] = rstd * ((g[k] - mg) - xh[k] * mgx);
}

tg_status eager_kernel_layer_norm_grad(const eager_kargs *a)
{
    const graph_layer_norm_grad_attrs *at = a->attrs;
    const graph_type *t = &a->in_type[1];
    const float *dy = a->in[0], *x = a->in[1];
    const float *w = a->nin > 2 ? a->in[2] : NULL;
    float *dx = a->out[0], *dw = a->out[1], *db = a->out[2];
    int axis = graph_norm_axis(at->axis, t->ndim);
    int64_t rows = 1, d = 1;
    for (int i = 0; i < t->ndim; i++)
        *(i < axis ? &rows : &d) *= t->dim[i];
    if (d == 0)
        return TG_OK;
    int64_t nblk = (rows + LNG_MIN_ROWS - 1) / LNG_MIN_ROWS;
    nblk = nblk > LNG_MAX_BLOCKS ? LNG_MAX_BLOCKS : nblk;
    if (nblk == 0) { /* no rows: the sums are empty */
        for (int64_t i = 0; i < d; i++)
            dw[i] = db[i] = 0.0f;
        return TG_OK;
    }
    int64_t per = (rows + nblk - 1) / nblk;
    /* per block: its two sums (2d doubles) and two scratch rows (2d floats) */
    size_t each = 2 * sizeof(double) + 2 * sizeof(float);
    double *sums = NULL;
    float *scratch = NULL;
    if ((uint64_t)d <= SIZE_MAX / each / (uint64_t)nblk) {
        sums = tg_calloc((size_t)(2 * nblk * d), sizeof *sums);
        scratch = tg_malloc((size_t)(2 * nblk * d) * sizeof *scratch);
    }
    if (!sums || !scratch) {
        tg_free(sums);
        tg_free(scratch);
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for %lld blocks of %lld sums",
                                 (long long)nblk, (long long)d);
    }
    int par = rows * d >= EAGER_PAR_MIN && a->nthreads > 1;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t k = 0; k < nblk; k++) {
        double *pw = sums + 2 * k * d, *pb = pw + d;
        float *xh = scratch + 2 * k * d, *g = xh + d;
        int64_t r1 = (k + 1) * per < rows ? (k + 1) * per : rows;
        for (int64_t r = k * per; r < r1; r++) {
            if (w)
                lng_row(x + r * d, dy + r * d, w, dx + r * d, pw, pb, xh, g, d, at->eps, 1);
            else
                lng_row(x + r * d, dy + r * d, w, dx + r * d, pw, pb, xh, g, d, at->eps, 0);
        }
    }
    /* the blocks' sums, added in block order */
    for (int64_t k = 1; k < nblk; k++) {
        const double *pw = sums + 2 * k * d;
        for (int64_t i = 0; i < 2 * d; i++)
            sums[i] += pw[i];
    }
    for (int64_t i = 0; i < d; i++) {
        dw[i] = (float)sums[i];
        db[i] = (float)sums[d + i];
    }
    tg_free(scratch);
    tg_free(sums);
    return TG_OK;
}

/* ---- softmax, log_softmax ---- */

/*
 * exp(d) for d = x - max <= 0, written as 0 where it is below FLT_MIN
 * (d < ln FLT_MIN), and computed on 0 there instead of d: vm_expf's last
 * multiply would make the subnormal, and on Intel cores every operation
 * that makes or reads one takes a microcode assist.  Masked attention
 * feeds such rows (Swin's shifted windows add -100): softmax on
 * [192,49,49] with a third of the scores masked took 3.0 ms instead of
 * 0.70 at AVX-512, 3.6 at AVX2.  The result does not change: such a term
 * adds below 1.2e-38 to a sum of at least 1 (the max's own term), and
 * its probability is below FLT_MIN, which flush_tiny writes as 0 anyway
 * (log_softmax reads only the sum).  NaN fails the test and stays NaN;
 * exp(-inf) = 0 as before.
 */
static inline float exp_shifted(float d)
{
    int tiny = d < -87.3365448f; /* ln FLT_MIN */
    float e = vm_expf(tiny ? 0.0f : d);
    return tiny ? 0.0f : e;
}

/* y[i] = exp(x[i] - m); returns the sum of y in double.  vm_expf gives
 * exp(-inf) = 0 and NaN for NaN, and vectorizes (libm's expf does not). */
static double exp_shift(const float *restrict x, float *restrict y,
                        float m, int64_t n)
{
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++) {
        y[i] = exp_shifted(x[i] - m);
        s += y[i];
    }
    return s;
}

/*
 * A probability below FLT_MIN (1.18e-38) is written as 0.  Such values
 * come from masked attention (Swin's shifted windows add -100 to the
 * scores: exp(-100) = 3.7e-44): a denormal costs a microcode assist in every
 * multiply that reads it on Intel cores, and the matrix product of the
 * probabilities with V ran 80-100x slower (swin_t: 3 of its products took
 * 6.3 ms instead of 0.08 at AVX2, 3.4 instead of 0.03 at AVX-512).  The
 * change to the result is below 1.2e-38 absolute, the same for eager, replay
 * and every ISA.  p >= FLT_MIN is false for NaN, so NaN stays NaN through
 * the select's other arm.
 */
static inline float flush_tiny(float p)
{
    return p >= FLT_MIN || p != p ? p : 0.0f;
}

/* A contiguous row.  log_softmax uses (x - m) - log(sum) rather than
 * x - (m + log(sum)), which would round at the scale of m. */
static void softmax_row(const float *restrict x, float *restrict y,
                        int64_t n, int log_sm)
{
    float m = max_f32(x, n);
    double s = exp_shift(x, y, m, n);
    if (!log_sm) {
        float inv = (float)(1.0 / s);
        for (int64_t i = 0; i < n; i++)
            y[i] = flush_tiny(y[i] * inv);
    } else {
        float ls = (float)log(s);
        for (int64_t i = 0; i < n; i++)
            y[i] = (x[i] - m) - ls;
    }
}

/*
 * Columns j0..j0+nc of one [len, inner] slab: each column is a softmax
 * row with stride inner.  Walking the slab row by row keeps the accesses
 * contiguous and the column loops vectorizable.
 */
static void softmax_cols(const float *restrict x, float *restrict y,
                         int64_t len, int64_t inner, int64_t nc, int log_sm)
{
    float m[BLOCK], f[BLOCK];
    double s[BLOCK];
    for (int64_t j = 0; j < nc; j++)
        m[j] = -INFINITY, s[j] = 0;
    for (int64_t l = 0; l < len; l++) {
        const float *restrict xr = x + l * inner;
        for (int64_t j = 0; j < nc; j++)
            m[j] = xr[j] > m[j] ? xr[j] : m[j];
    }
    for (int64_t l = 0; l < len; l++) {
        const float *restrict xr = x + l * inner;
        float *restrict yr = y + l * inner;
#pragma omp simd
        for (int64_t j = 0; j < nc; j++)
            yr[j] = exp_shifted(xr[j] - m[j]);
        for (int64_t j = 0; j < nc; j++)
            s[j] += yr[j];
    }
    for (int64_t j = 0; j < nc; j++)
        f[j] = log_sm ? (float)log(s[j]) : (float)(1.0 / s[j]);
    for (int64_t l = 0; l < len; l++) {
        const float *restrict xr = x + l * inner;
        float *restrict yr = y + l * inner;
        if (log_sm)
            for (int64_t j = 0; j < nc; j++)
                yr[j] = (xr[j] - m[j]) - f[j];
        else
            for (int64_t j = 0; j < nc; j++)
                yr[j] = flush_tiny(yr[j] * f[j]);
    }
}

static tg_status run_softmax(const eager_kargs *a, int64_t axis_attr,
                             int log_sm)
{
    const graph_type *t = &a->in_type[0];
    const float *x = a->in[0];
    float *y = a->out[0];
    int axis = graph_norm_axis(axis_attr, t->ndim);
    int64_t outer, len, inner;
    eager_axis_split(t, axis, &outer, &len, &inner);
    int64_t numel = outer * len * inner;
    if (numel == 0)
        return TG_OK;
    int par = numel >= EAGER_PAR_MIN && a->nthreads > 1;
    if (inner == 1) {
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
        for (int64_t r = 0; r < outer; r++)
            softmax_row(x + r * len, y + r * len, len, log_sm);
        return TG_OK;
    }
    /* Column blocks: as wide as possible (contiguous runs), narrower only
     * when there are too few slabs to keep the threads busy. */
    int64_t nc = inner < BLOCK ? inner : BLOCK;
    if (par && outer * ((inner + nc - 1) / nc) < a->nthreads) {
        int64_t want = (a->nthreads + outer - 1) / outer;
        nc = ((inner + want - 1) / want + 15) / 16 * 16;
        nc = nc < 64 ? 64 : nc > inner ? inner : nc;
    }
    int64_t nblk = (inner + nc - 1) / nc, ntask = outer * nblk;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t k = 0; k < ntask; k++) {
        int64_t o = k / nblk, j0 = k % nblk * nc;
        int64_t n = inner - j0 < nc ? inner - j0 : nc;
        int64_t off = o * len * inner + j0;
        softmax_cols(x + off, y + off, len, inner, n, log_sm);
    }
    return TG_OK;
}

tg_status eager_kernel_softmax(const eager_kargs *a)
{
    return run_softmax(a, ((const graph_softmax_attrs *)a->attrs)->axis, 0);
}

tg_status eager_kernel_log_softmax(const eager_kargs *a)
{
    return run_softmax(a, ((const graph_log_softmax_attrs *)a->attrs)->axis, 1);
}
