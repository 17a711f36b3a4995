/*
 * kernels_bn.c - CPU kernels of batch_norm_train_grad (f32), the
 * gradients of batch_norm_train from y's, in plain C, and of
 * batch_norm_pool_grad, the same from a max pool's output gradient (see
 * bn_pool below).  Shapes were checked
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
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "../graph/alloc.h"
#include "kernel.h"

/* Columns per piece of a channel's sums (two double arrays on the stack). */
#define SCH 1024
/* Channels per block, at most. */
#define CBLK 64
/* Bytes of dy and x per block (S >= 2): its dx pass reads them from cache. */
#define BLK_BYTES (1 << 20)

/* A channel's sums: *sum = sum(dy), *dotp = sum(dy * (x - mu)), in
 * double.  Its rows (N of S values, dys and xs apart) are added column-wise in
 * pieces of at most SCH values: element t of the piece accumulates over
 * the rows in order, so the loop over t vectorizes without reordering a
 * sum; then the piece's columns are added in order. */
static void channel_sums(const float *dy, int64_t dys, const float *x, int64_t xs, int64_t n,
                         int64_t s, double mu, double *sum, double *dotp)
{
    double ad[SCH], ap[SCH], ts = 0, tp = 0;
    for (int64_t s0 = 0; s0 < s; s0 += SCH) {
        int64_t len = s - s0 < SCH ? s - s0 : SCH;
        for (int64_t t = 0; t < len; t++)
            ad[t] = 0, ap[t] = 0;
        for (int64_t b = 0; b < n; b++) {
            const float *restrict g = dy + b * dys + s0;
            const float *restrict xr = x + b * xs + s0;
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

/*
 * batch_norm_pool_grad: dy is max_pool2d_grad(dp, y), made here a channel
 * block at a time into the thread's scratch dys (nc * N planes of S,
 * channel j's rows S apart), by the max_pool2d_grad kernel's own plane code
 * (eager_maxpool_grad_plane: the same bits), instead of a tensor of x's
 * size written by one op and read back by the next.
 */
typedef struct bn_pool {
    eager_maxpool m;
    const float *dp, *y;
    int64_t pplane;        /* dp's plane, oh * ow */
    float *dys, *scratch;  /* per thread: the block's dy, the plane code's */
    int64_t dys_n, scr_n;  /* their floats per thread */
} bn_pool;

/* S >= 2: channels [c0, c0 + nc) (nc <= CBLK); channel ch's N rows of S
 * values lie C * S apart, the block's rows of one batch index are one run
 * of nc * S values.  With bp: dy made from the pool's gradient (t: the
 * thread, for its scratch). */
static void block_rows(const float *dy, const float *x, float *dx, int64_t n, int64_t c, int64_t s,
                       int64_t c0, int64_t nc, const float *weight, const float *mean,
                       const float *invstd, float *dweight, float *dbias, const bn_pool *bp,
                       int t)
{
    bn_coef k[CBLK];
    float *d = bp ? bp->dys + (int64_t)t * bp->dys_n : NULL;
    for (int64_t j = 0; j < nc; j++) {
        double sum, dotp;
        if (bp) {
            float *scr = bp->scratch + (int64_t)t * bp->scr_n;
            for (int64_t b = 0; b < n; b++)
                eager_maxpool_grad_plane(&bp->m, bp->y + (b * c + c0 + j) * s,
                                         bp->dp + (b * c + c0 + j) * bp->pplane,
                                         d + (j * n + b) * s, scr);
            channel_sums(d + j * n * s, s, x + (c0 + j) * s, c * s, n, s, mean[c0 + j], &sum,
                         &dotp);
        } else {
            channel_sums(dy + (c0 + j) * s, c * s, x + (c0 + j) * s, c * s, n, s, mean[c0 + j],
                         &sum, &dotp);
        }
        k[j] = channel_out(sum, dotp, (double)(n * s), weight[c0 + j], invstd[c0 + j],
                           &dweight[c0 + j], &dbias[c0 + j]);
    }
    for (int64_t b = 0; b < n; b++)
        for (int64_t j = 0; j < nc; j++) {
            int64_t o = (b * c + c0 + j) * s;
            const float *g = bp ? d + (j * n + b) * s : dy + o;
            row_dx(g, x + o, dx + o, s, mean[c0 + j], k[j].gm, k[j].ps, k[j].w);
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

/* Both ops: dy given, or (bp) made from the pool's gradient. */
static tg_status bn_grad(const eager_kargs *a, const float *dy, const graph_type *t,
                         const float *x, const float *weight, const float *mean,
                         const float *invstd, bn_pool *bp)
{
    float *dx = a->out[0], *dweight = a->out[1], *dbias = a->out[2];
    int64_t n = t->dim[0], c = t->dim[1], s = 1;
    for (int d = 2; d < t->ndim; d++)
        s *= t->dim[d];
    int par = n * c * s >= EAGER_PAR_MIN && a->nthreads > 1;
    if (s == 1 && !bp) { /* (a 1x1 plane under a pool takes the block path) */
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
    int nt = par ? a->nthreads : 1;
    if (bp) { /* each thread's block of dy and the plane code's scratch */
        bp->dys_n = cb * n * s;
        bp->scr_n = eager_maxpool_grad_size(&bp->m);
        bp->dys = tg_malloc(sizeof(float) * (size_t)(bp->dys_n * nt + 1));
        bp->scratch = tg_malloc(sizeof(float) * (size_t)(bp->scr_n * nt + 1));
        if (!bp->dys || !bp->scratch) {
            tg_free(bp->dys);
            tg_free(bp->scratch);
            return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for %d blocks of %lld floats",
                                     nt, (long long)bp->dys_n);
        }
        for (int k = 0; k < nt; k++)
            eager_maxpool_grad_scratch(&bp->m, bp->scratch + (int64_t)k * bp->scr_n);
    }
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int th = omp_get_thread_num();
#pragma omp for schedule(static)
        for (int64_t k = 0; k < nblk; k++) {
            int64_t c0 = k * cb, nc = c - c0 < cb ? c - c0 : cb;
            if (nc > 0)
                block_rows(dy, x, dx, n, c, s, c0, nc, weight, mean, invstd, dweight, dbias, bp,
                           th);
        }
    }
    if (bp) {
        tg_free(bp->dys);
        tg_free(bp->scratch);
    }
    return TG_OK;
}

tg_status eager_kernel_batch_norm_train_grad(const eager_kargs *a)
{
    return bn_grad(a, a->in[0], &a->in_type[1], a->in[1], a->in[2], a->in[3], a->in[4], NULL);
}

tg_status eager_kernel_batch_norm_pool_grad(const eager_kargs *a)
{
    const graph_batch_norm_pool_grad_attrs *at = a->attrs;
    const graph_type *dp = &a->in_type[0], *y = &a->in_type[1];
    bn_pool bp;
    memset(&bp, 0, sizeof bp);
    eager_maxpool_init(&bp.m, y->dim[2], y->dim[3], dp->dim[2], dp->dim[3], &at->kernel,
                       &at->stride, &at->padding);
    bp.dp = a->in[0];
    bp.y = a->in[1];
    bp.pplane = dp->dim[2] * dp->dim[3];
    return bn_grad(a, NULL, y, a->in[2], a->in[3], a->in[4], a->in[5], &bp);
}
