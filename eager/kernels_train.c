/*
 * kernels_train.c - CPU kernels of the training-mode ops: rng_advance,
 * dropout and batch_norm_train (f32).  Shapes and attributes were checked
 * by graph/infer_train.c.
 *
 * - rng_advance: {seed, offset} -> {seed, offset + n rounded up to a
 *   multiple of 4}, in unsigned 64-bit arithmetic (wraps, never traps).
 * - dropout: element i takes word (offset + i) of the generator's Philox
 *   stream (eager/philox.h): one block of 4 words per 4 elements when the
 *   offset is a multiple of 4, as rng_advance keeps it.  y = x * m with
 *   m = 1 / (1 - p) (rounded to f32) where the word's uniform is >= p, else
 *   m = 0 (so NaN and inf stay NaN, as PyTorch's x * mask * scale).  p = 0
 *   copies x.  The element-to-word mapping fixes each element's draw, so
 *   the result is the same for any thread count or split.
 * - batch_norm_train: per channel (dim 1) over the other dims, M values:
 *   the mean, then the mean squared deviation (biased variance), each
 *   summed in double in two passes (16 lanes, then in order: bn_sum);
 *   invstd = 1 / sqrt(var + eps).  y = (x - mean) * f + bias with
 *   f = scale * invstd (mean and invstd as the f32
 *   outputs hold them, f rounded once), as the inference kernel does;
 *   with the relu attribute, y <= 0 ? 0 : y as the relu kernel (NaN
 *   passes), in the same pass; with pool_kernel, a channel's planes of y
 *   are max-pooled into output 5 once the channel's y is written (still
 *   in cache), by the max_pool2d kernel's own plane code
 *   (eager_maxpool_plane: the same bits).
 *   Running statistics: (1 - momentum) old + momentum new, in double, the
 *   variance's new value unbiased: var * M / (M - 1) (M > 1 by inference).
 *
 * Large tensors are split over a->nthreads threads: dropout by chunks of
 * elements, batch norm by channels (each channel's y written right after
 * its statistics, while its rows are in cache).
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "../graph/alloc.h"
#include "kernel.h"
#include "philox.h"

/* Elements per dropout task (a multiple of 4: one Philox block each 4). */
#define DROP_CHUNK 8192

tg_status eager_kernel_rng_advance(const eager_kargs *a)
{
    const graph_rng_advance_attrs *at = a->attrs;
    const int64_t *g = a->in[0];
    int64_t *o = a->out[0];
    uint64_t n = ((uint64_t)at->n + 3u) & ~(uint64_t)3u;
    o[0] = g[0];
    o[1] = (int64_t)((uint64_t)g[1] + n);
    return TG_OK;
}

/* Elements [i0, i1) of dropout; w0 = offset + i0 (the stream word).  The
 * words come 64 at a time (philox_words64, from the multiple of 4 at or
 * below the element's word), the elements then in a vectorized loop. */
static void drop_range(const float *restrict x, float *restrict y, int64_t i0, int64_t i1,
                       uint64_t seed, uint64_t w0, float p, float scale)
{
    uint32_t words[64];
    uint64_t w = w0;
    for (int64_t i = i0; i < i1;) {
        uint64_t wb = w & ~(uint64_t)3;
        philox_words64(seed, wb, words);
        int64_t k0 = (int64_t)(w - wb), n = 64 - k0;
        if (n > i1 - i)
            n = i1 - i;
        const uint32_t *u = words + k0;
        const float *restrict xs = x + i;
        float *restrict ys = y + i;
        for (int64_t j = 0; j < n; j++)
            ys[j] = xs[j] * (philox_uniform(u[j]) >= p ? scale : 0.0f);
        i += n;
        w += (uint64_t)n;
    }
}

tg_status eager_kernel_dropout(const eager_kargs *a)
{
    const graph_dropout_attrs *at = a->attrs;
    const float *x = a->in[0];
    const int64_t *g = a->in[1];
    float *y = a->out[0];
    int64_t n = graph_type_numel(&a->in_type[0]);
    if (n == 0)
        return TG_OK;
    if (at->p == 0.0f) {
        memcpy(y, x, (size_t)n * sizeof *y);
        return TG_OK;
    }
    uint64_t seed = (uint64_t)g[0], off = (uint64_t)g[1];
    float p = at->p, scale = (float)(1.0 / (1.0 - (double)p));
    int64_t ntask = (n + DROP_CHUNK - 1) / DROP_CHUNK;
    int par = n >= EAGER_PAR_MIN && a->nthreads > 1;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t t = 0; t < ntask; t++) {
        int64_t i0 = t * DROP_CHUNK, i1 = i0 + DROP_CHUNK < n ? i0 + DROP_CHUNK : n;
        drop_range(x, y, i0, i1, seed, off + (uint64_t)i0, p, scale);
    }
    return TG_OK;
}

/* The sum over rows b < n (stride apart, s elements each) of x, or of
 * (x - mean)^2 when sq, in double: 16 lanes (a vector loop), then the
 * rows' tails, then the lanes in order. */
static double bn_sum(const float *x, int64_t n, int64_t stride, int64_t s, double mean, int sq)
{
    double acc[16] = {0}, tail = 0;
    for (int64_t b = 0; b < n; b++) {
        const float *restrict xr = x + b * stride;
        int64_t i = 0;
        for (; i + 16 <= s; i += 16) {
            if (sq) {
#pragma omp simd
                for (int l = 0; l < 16; l++) {
                    double d = (double)xr[i + l] - mean;
                    acc[l] += d * d;
                }
            } else {
#pragma omp simd
                for (int l = 0; l < 16; l++)
                    acc[l] += (double)xr[i + l];
            }
        }
        for (; i < s; i++) {
            double d = sq ? (double)xr[i] - mean : (double)xr[i];
            tail += sq ? d * d : d;
        }
    }
    for (int l = 0; l < 16; l++)
        tail += acc[l];
    return tail;
}

/* In place: the new running statistics (outputs 1, 2) may lie over the old
 * ones (inputs 3, 4): channel ch reads its old value before it writes its
 * new one, and no other channel's (replay plans them in place:
 * optimize/memplan.c, opt_state_in_place). */
tg_status eager_kernel_batch_norm_train(const eager_kargs *a)
{
    const graph_batch_norm_train_attrs *at = a->attrs;
    const graph_type *t = &a->in_type[0];
    const float *x = a->in[0], *scale = a->in[1], *bias = a->in[2];
    const float *rmean = a->in[3], *rvar = a->in[4];
    float *y = a->out[0], *nmean = a->out[1], *nvar = a->out[2];
    float *bmean = a->out[3], *binvstd = a->out[4];
    int64_t n = t->dim[0], c = t->dim[1], s = 1;
    for (int d = 2; d < t->ndim; d++)
        s *= t->dim[d];
    int64_t numel = n * c * s, m = n * s; /* m > 1 (inference) */
    double mom = at->momentum;
    int relu = at->relu != 0;
    int par = numel >= EAGER_PAR_MIN && a->nthreads > 1;
    int nt = par ? a->nthreads : 1;
    /* the fused max pool (output 5): each thread's scratch */
    eager_maxpool mp;
    float *pool = NULL, *scratch = NULL;
    int64_t per = 0, pplane = 0;
    if (at->pool_kernel.n) {
        const graph_type *pt = &a->out_type[5];
        per = eager_maxpool_init(&mp, t->dim[2], t->dim[3], pt->dim[2], pt->dim[3],
                                 &at->pool_kernel, &at->pool_stride, &at->pool_padding);
        pool = a->out[5];
        pplane = pt->dim[2] * pt->dim[3];
        scratch = tg_malloc(sizeof *scratch * (size_t)(per * nt + 1));
        if (!scratch)
            return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for the fused pool's %d rows",
                                     nt);
        for (int k = 0; k < nt; k++)
            eager_maxpool_scratch(&mp, scratch + k * per);
    }
    /* a channel's y right after its statistics, its N rows still in cache
     * from the second pass (one read of x from memory, not two), then the
     * pool of its planes */
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) {
        double sum = bn_sum(x + ch * s, n, c * s, s, 0.0, 0);
        double mean = sum / (double)m;
        double sq = bn_sum(x + ch * s, n, c * s, s, mean, 1);
        double var = sq / (double)m;
        bmean[ch] = (float)mean;
        binvstd[ch] = (float)(1.0 / sqrt(var + (double)at->eps));
        nmean[ch] = (float)((1.0 - mom) * rmean[ch] + mom * mean);
        nvar[ch] = (float)((1.0 - mom) * rvar[ch] + mom * (sq / (double)(m - 1)));
        float f = (float)((double)scale[ch] * (double)binvstd[ch]);
        float mu = bmean[ch], b = bias[ch];
        for (int64_t bi = 0; bi < n; bi++) {
            const float *restrict xr = x + (bi * c + ch) * s;
            float *restrict yr = y + (bi * c + ch) * s;
            if (relu) {
#pragma omp simd
                for (int64_t i = 0; i < s; i++) {
                    float v = (xr[i] - mu) * f + b;
                    yr[i] = v <= 0.0f ? 0.0f : v;
                }
            } else {
#pragma omp simd
                for (int64_t i = 0; i < s; i++)
                    yr[i] = (xr[i] - mu) * f + b;
            }
        }
        /* the channel's planes pooled once all are written (still in
         * cache): a plane read right after its stores waits for them
         * (loads across stores in flight do not forward) */
        for (int64_t bi = 0; pool && bi < n; bi++)
            eager_maxpool_plane(&mp, y + (bi * c + ch) * s, pool + (bi * c + ch) * pplane,
                                scratch + (int64_t)omp_get_thread_num() * per);
    }
    tg_free(scratch);
    return TG_OK;
}
