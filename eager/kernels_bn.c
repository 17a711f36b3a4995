/*
 * kernels_bn.c - CPU kernel of batch_norm_train_grad (f32), the
 * gradients of batch_norm_train from y's, in plain C.  Shapes were checked
 * by graph/infer_train.c: dy and x [N,C,...], weight, mean and invstd [C].
 *
 * Per channel over its M = N * S values (S: the product of the dims past
 * 1), as PyTorch's CPU batch_norm backward in training mode:
 *   sum  = sum(dy),  dotp = sum(dy * (x - mean))      (in double)
 *   dbias = sum,     dweight = dotp * invstd
 *   dx = (dy - sum / M - (x - mean) * (dotp * invstd^2 / M)) * (weight * invstd)
 * the three coefficients computed in double and rounded to f32 once, dx
 * in f32.  A channel's sums run in one thread in one fixed order (column
 * t of a piece of its rows accumulates over the batch, then the columns
 * are added in order): the same bits for any thread count, and loops GCC
 * vectorizes without reassociating a sum.  M = 0 gives dbias = 0 and
 * dweight = 0 * invstd; NaN and inf go through the formula (a NaN in a
 * channel's dy makes its dweight, dbias and every dx of it NaN; one in
 * its x, its dweight and every dx).
 *
 * Two passes, OpenMP over blocks of whole channels (about BLK_BYTES of dy
 * and x each, at least one block per thread): each channel's sums, then
 * the block's dx, batch row by batch row (one run of the block's
 * channels), while the block is still in cache.  S = 1 (x [N,C]) strides a
 * channel's values by C, so there a block's sums and dx run row by row
 * over its contiguous channels (vectorized over channels).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernel.h"

/* Columns per piece of a channel's sums (two double arrays on the stack). */
#define SCH 1024
/* Channels per block, at most. */
#define CBLK 64
/* Bytes of dy and x per block (S >= 2): its dx pass reads them from cache. */
#define BLK_BYTES (1 << 20)

/* Channel ch's sums: *sum = sum(dy), *dotp = sum(dy * (x - mu)), in
 * double.  Its rows (N of S values, C * S apart) are added column-wise in
 * pieces of at most SCH values: element t of the piece accumulates over
 * the rows in order, so the loop over t vectorizes without reordering a
 * sum; then the piece's columns are added in order. */
static void channel_sums(const float *dy, const float *x, int64_t n, int64_t c, int64_t s,
                         int64_t ch, double mu, double *sum, double *dotp)
{
    double ad[SCH], ap[SCH], ts = 0, tp = 0;
    for (int64_t s0 = 0; s0 < s; s0 += SCH) {
        int64_t len = s - s0 < SCH ? s - s0 : SCH;
        for (int64_t t = 0; t < len; t++)
            ad[t] = 0, ap[t] = 0;
        for (int64_t b = 0; b < n; b++) {
            const float *restrict g = dy + (b * c + ch) * s + s0;
            const float *restrict xr = x + (b * c + ch) * s + s0;
            double *restrict d = ad, *restrict p = ap;
            for (int64_t t = 0; t < len; t++) {
                double gt = g[t];
                d[t] += gt;
                p[t] += gt * ((double)xr[t] - mu);
            }
        }
        for (int64_t t = 0; t < len; t++)
            ts += ad[t], tp += ap[t];
    }
    *sum = ts;
    *dotp = tp;
}

/* dx of one row: (dy - gm - (x - mu) * ps) * w. */
static inline void row_dx(const float *restrict dy, const float *restrict x, float *restrict dx,
                          int64_t n, float mu, float gm, float ps, float w)
{
    for (int64_t i = 0; i < n; i++)
        dx[i] = (dy[i] - gm - (x[i] - mu) * ps) * w;
}

/* One channel's coefficients from its sums: dweight, dbias, and dx's gm,
 * ps, w.  m is M as a double. */
typedef struct bn_coef {
    float gm, ps, w;
} bn_coef;

static bn_coef channel_out(double sum, double dotp, double m, float weight, float invstd,
                           float *dweight, float *dbias)
{
    double r = invstd;
    *dbias = (float)sum;
    *dweight = (float)(dotp * r);
    bn_coef k = {(float)(sum / m), (float)(dotp * r * r / m), (float)((double)weight * r)};
    return k;
}

/* S >= 2: channels [c0, c0 + nc) (nc <= CBLK); channel ch's N rows of S
 * values lie C * S apart, the block's rows of one batch index are one run
 * of nc * S values. */
static void block_rows(const float *dy, const float *x, float *dx, int64_t n, int64_t c, int64_t s,
                       int64_t c0, int64_t nc, const float *weight, const float *mean,
                       const float *invstd, float *dweight, float *dbias)
{
    bn_coef k[CBLK];
    for (int64_t j = 0; j < nc; j++) {
        double sum, dotp;
        channel_sums(dy, x, n, c, s, c0 + j, mean[c0 + j], &sum, &dotp);
        k[j] = channel_out(sum, dotp, (double)(n * s), weight[c0 + j], invstd[c0 + j],
                           &dweight[c0 + j], &dbias[c0 + j]);
    }
    for (int64_t b = 0; b < n; b++)
        for (int64_t j = 0; j < nc; j++) {
            int64_t o = (b * c + c0 + j) * s;
            row_dx(dy + o, x + o, dx + o, s, mean[c0 + j], k[j].gm, k[j].ps, k[j].w);
        }
}

/* S = 1: channels [c0, c0 + nc) of x [N, C], nc <= CBLK, row by row. */
static void channel_block(const float *dy, const float *x, float *dx, int64_t n, int64_t c,
                          int64_t c0, int64_t nc, const float *weight, const float *mean,
                          const float *invstd, float *dweight, float *dbias)
{
    double sd[CBLK] = {0}, sp[CBLK] = {0}, mu[CBLK];
    float fmu[CBLK], gm[CBLK], ps[CBLK], w[CBLK];
    for (int64_t j = 0; j < nc; j++)
        mu[j] = mean[c0 + j];
    for (int64_t b = 0; b < n; b++) {
        const float *restrict g = dy + b * c + c0, *restrict xr = x + b * c + c0;
        for (int64_t j = 0; j < nc; j++) {
            double gj = g[j];
            sd[j] += gj;
            sp[j] += gj * ((double)xr[j] - mu[j]);
        }
    }
    for (int64_t j = 0; j < nc; j++) {
        bn_coef k = channel_out(sd[j], sp[j], (double)n, weight[c0 + j], invstd[c0 + j],
                                &dweight[c0 + j], &dbias[c0 + j]);
        fmu[j] = mean[c0 + j], gm[j] = k.gm, ps[j] = k.ps, w[j] = k.w;
    }
    for (int64_t b = 0; b < n; b++) {
        const float *restrict g = dy + b * c + c0, *restrict xr = x + b * c + c0;
        float *restrict d = dx + b * c + c0;
        for (int64_t j = 0; j < nc; j++)
            d[j] = (g[j] - gm[j] - (xr[j] - fmu[j]) * ps[j]) * w[j];
    }
}

tg_status eager_kernel_batch_norm_train_grad(const eager_kargs *a)
{
    const graph_type *t = &a->in_type[1];
    const float *dy = a->in[0], *x = a->in[1], *weight = a->in[2];
    const float *mean = a->in[3], *invstd = a->in[4];
    float *dx = a->out[0], *dweight = a->out[1], *dbias = a->out[2];
    int64_t n = t->dim[0], c = t->dim[1], s = 1;
    for (int d = 2; d < t->ndim; d++)
        s *= t->dim[d];
    int par = n * c * s >= EAGER_PAR_MIN && a->nthreads > 1;
    if (s == 1) {
        int64_t nblk = (c + CBLK - 1) / CBLK;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
        for (int64_t k = 0; k < nblk; k++) {
            int64_t c0 = k * CBLK, nc = c - c0 < CBLK ? c - c0 : CBLK;
            channel_block(dy, x, dx, n, c, c0, nc, weight, mean, invstd, dweight, dbias);
        }
        return TG_OK;
    }
    /* blocks of about BLK_BYTES of dy and x (whole channels, at most
     * CBLK), at least one per thread */
    int64_t per = 2 * (int64_t)sizeof(float) * n * s;
    int64_t cb = per > 0 && per < BLK_BYTES ? BLK_BYTES / per : 1;
    cb = cb < CBLK ? cb : CBLK;
    int64_t nblk = (c + cb - 1) / cb;
    if (par && nblk < a->nthreads)
        nblk = c < a->nthreads ? c : a->nthreads;
    if (nblk > 0)
        cb = (c + nblk - 1) / nblk;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t k = 0; k < nblk; k++) {
        int64_t c0 = k * cb, nc = c - c0 < cb ? c - c0 : cb;
        if (nc > 0)
            block_rows(dy, x, dx, n, c, s, c0, nc, weight, mean, invstd, dweight, dbias);
    }
    return TG_OK;
}
