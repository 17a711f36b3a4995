/*
 * kernels_pool.c - CPU kernels of max_pool2d, avg_pool2d,
 * global_avg_pool and max_pool2d_grad (f32, NCHW), in plain C.  Shapes
 * and attributes were checked by graph/infer_linalg.c (padding < kernel,
 * output >= 1).
 *
 * The 2-D pools are separable, so each output row takes two passes over
 * one padded row buffer: first the window's in-bounds input rows are
 * combined element by element (contiguous, vectorized), then each output
 * takes the kernel-width window of that row (unit or small stride).  The
 * buffer's padding columns hold the identity (-inf for max, 0 for avg),
 * so neither pass tests bounds.  OpenMP splits the N*C planes.
 *
 * Values: max propagates NaN (as PyTorch).  avg divides by kh*kw with
 * count_include_pad, else by the number of in-bounds elements; a window
 * with none (only possible when H or W is 0) gives -inf for max and NaN
 * (0/0) for avg.  global_avg_pool sums in double; an empty plane gives
 * NaN, as NumPy's mean.
 *
 * The 2x2, stride 2, unpadded max pool and its gradient (the CNN's) have
 * their own paths (the forward at AVX2 and AVX-512: a row of outputs at a
 * time from its two input rows in registers; else, and the gradient,
 * passes that run the length of a plane, not of one row
 * (rows of 28 or 14 are shorter than a vector; one thread, x [64,32,28,28]:
 * forward 2.1 -> 0.30 ms, gradient 5.8 -> 0.64 ms)): see max_plane_2x2.
 *
 * max_pool2d_grad walks the windows of each plane once, in row-major
 * order, one output row at a time: for every window of the row it keeps
 * the best value so far and its place, taking an element only when it is
 * strictly greater (so the first maximum wins, row-major in the window;
 * padding is -inf, so it only wins as a window's first element, when
 * nothing beats -inf) or NaN (which no later element beats); then adds
 * each window's dy at its winner, skipping a NaN maximum and a padding
 * winner.  The additions run in the order of the windows, as
 * scatter_elements' would over the windows' elements.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "../graph/alloc.h"
#include "dnnl_util.h"

typedef struct pool_geom {
    int64_t h, w, oh, ow;
    int64_t kh, kw, sh, sw;
    int64_t pt, pl, pb, pr;
    int avg, include_pad;
} pool_geom;

/* NaN-propagating max: a NaN v wins, and a NaN acc stays. */
static inline float max_nan(float acc, float v)
{
    return (v > acc || v != v) ? v : acc;
}

/* row[pl .. pl+w) = combination of input rows [h0, h1) of the plane. */
static void combine_rows(const pool_geom *g, const float *restrict in,
                         int64_t h0, int64_t h1, float *restrict rc)
{
    int64_t w = g->w;
    if (h0 >= h1) {
        float ident = g->avg ? 0.0f : -INFINITY;
        for (int64_t i = 0; i < w; i++)
            rc[i] = ident;
        return;
    }
    memcpy(rc, in + h0 * w, (size_t)w * sizeof *rc);
    for (int64_t r = h0 + 1; r < h1; r++) {
        const float *restrict ip = in + r * w;
        if (g->avg)
            for (int64_t i = 0; i < w; i++)
                rc[i] += ip[i];
        else
            for (int64_t i = 0; i < w; i++)
                rc[i] = max_nan(rc[i], ip[i]);
    }
}

/*
 * Combines the kernel-width window of the padded row for each output.
 * Inlined with a constant sw for the common strides 1 and 2, so the
 * compiler vectorizes the strided loads.
 */
static inline __attribute__((always_inline)) void
window_combine(const pool_geom *g, const float *restrict row,
               float *restrict op, int64_t sw)
{
    int64_t ow = g->ow;
    for (int64_t o = 0; o < ow; o++)
        op[o] = row[o * sw];
    for (int64_t k = 1; k < g->kw; k++) {
        if (g->avg)
            for (int64_t o = 0; o < ow; o++)
                op[o] += row[o * sw + k];
        else
            for (int64_t o = 0; o < ow; o++)
                op[o] = max_nan(op[o], row[o * sw + k]);
    }
}

/*
 * One output row from the combined padded row (width w + pl + pr).  For
 * avg, cols[o] is the divisor's column factor (kw with
 * count_include_pad, else the in-bounds columns of window o) and nrows
 * the row factor.
 */
static void window_row(const pool_geom *g, const float *restrict row,
                       const float *restrict cols, float nrows,
                       float *restrict op)
{
    if (g->sw == 1)
        window_combine(g, row, op, 1);
    else if (g->sw == 2)
        window_combine(g, row, op, 2);
    else
        window_combine(g, row, op, g->sw);
    if (g->avg)
        for (int64_t o = 0; o < g->ow; o++)
            op[o] /= nrows * cols[o]; /* 0/0 = NaN for an empty window */
}

static void pool_plane(const pool_geom *g, const float *in, float *out,
                       float *row, const float *cols)
{
    for (int64_t oh = 0; oh < g->oh; oh++) {
        int64_t h0 = oh * g->sh - g->pt, h1 = h0 + g->kh;
        h0 = h0 < 0 ? 0 : h0;
        h1 = h1 > g->h ? g->h : h1;
        combine_rows(g, in, h0, h1, row + g->pl);
        float nrows = g->include_pad ? (float)g->kh
                                     : (float)(h1 > h0 ? h1 - h0 : 0);
        window_row(g, row, cols, nrows, out + oh * g->ow);
    }
}

/* The column factor of each output's divisor (see window_row). */
static void column_counts(const pool_geom *g, float *cols)
{
    for (int64_t o = 0; o < g->ow; o++) {
        int64_t c0 = o * g->sw - g->pl, c1 = c0 + g->kw;
        c0 = c0 < 0 ? 0 : c0;
        c1 = c1 > g->w ? g->w : c1;
        cols[o] = g->include_pad ? (float)g->kw
                                 : (float)(c1 > c0 ? c1 - c0 : 0);
    }
}

/*
 * The 2x2, stride 2, unpadded max pool (the common one), in two passes
 * over a plane that run the length of the plane rather than of one row
 * (a row of 28 or 14 is shorter than a vector): first the better of each
 * horizontal pair, flat over all pairs when the rows have no odd last
 * column; then the better of each vertical pair of those.  "Better" is
 * the second when it is greater or NaN, so the result is the sequential
 * scan's of the window in row-major order (the first maximum wins ties,
 * the last NaN wins): the same winner, and so the same bits (NaN payloads
 * included), as the general path and max_pool2d_grad's.
 */
static inline int pool_take(float a, float b)
{
    return b > a || b != b;
}

/* v[k] = the better of s[2k], s[2k + 1], k < n; which[k] = 1 where it is
 * the second, else 0 (when which is not NULL). */
static void best_pairs(const float *restrict s, int64_t n, float *restrict v,
                       float *restrict which)
{
    if (which)
        for (int64_t k = 0; k < n; k++) {
            float a = s[2 * k], b = s[2 * k + 1];
            int t = pool_take(a, b);
            v[k] = t ? b : a;
            which[k] = t ? 1.0f : 0.0f;
        }
    else
        for (int64_t k = 0; k < n; k++) {
            float a = s[2 * k], b = s[2 * k + 1];
            v[k] = pool_take(a, b) ? b : a;
        }
}

/* hp[r * ow + o] = the better of x[r][2o], x[r][2o + 1] for the plane's
 * first 2 * oh rows (hw: which one, when not NULL). */
static void plane_pairs(const pool_geom *g, const float *restrict x, float *restrict hp,
                        float *restrict hw)
{
    int64_t rows = 2 * g->oh, ow = g->ow, w = g->w;
    if (w == 2 * ow) {
        best_pairs(x, rows * ow, hp, hw);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        best_pairs(x + r * w, ow, hp + r * ow, hw ? hw + r * ow : NULL);
}

static int pool_is_2x2(const pool_geom *g)
{
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && !g->pt && !g->pl &&
           !g->pb && !g->pr && 2 * g->oh <= g->h && 2 * g->ow <= g->w;
}

#if defined(__AVX512F__)
/* The better of each pair of 2 n (n <= 16) floats at s, in lane k. */
static inline __m512 pairs16(const float *s, int64_t n)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __mmask16 lo = n >= 8 ? 0xFFFF : (__mmask16)((1u << (2 * n)) - 1);
    __mmask16 hi = n > 8 ? (__mmask16)((1u << (2 * (n - 8))) - 1) : 0;
    __m512 a0 = _mm512_maskz_loadu_ps(lo, s), a1 = _mm512_maskz_loadu_ps(hi, s + 16);
    __m512 a = _mm512_permutex2var_ps(a0, ev, a1), b = _mm512_permutex2var_ps(a0, od, a1);
    __mmask16 t = _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(t, a, b);
}
#elif defined(__AVX2__)
/* The better of each pair of 2 n (n <= 8) floats at s, in lane k. */
static inline __m256 pairs8(const float *s, int64_t n)
{
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i lo = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(2 * n)), iota);
    __m256i hi = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(2 * n - 8)), iota);
    __m256 a0 = _mm256_maskload_ps(s, lo), a1 = _mm256_maskload_ps(s + 8, hi);
    __m256 e = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
    __m256 o = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
    __m256 a = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    __m256 b = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
    __m256 t = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return _mm256_blendv_ps(a, b, t);
}
#endif

static void max_plane_2x2(const pool_geom *g, const float *restrict x, float *restrict out,
                          float *restrict hp)
{
#if defined(__AVX512F__) || defined(__AVX2__)
    /* one output row at a time from its two input rows, in registers: the
     * flat passes below store the pairs and read them back at other
     * offsets; one thread, the CNN's [64,32,28,28] (bench/train --ops):
     * 0.34 -> 0.27 ms at AVX-512, 0.42 -> 0.37 ms at AVX2; the same
     * compares in the same order, so the same bits */
    (void)hp;
#if defined(__AVX512F__)
    enum { L = 16 };
#else
    enum { L = 8 };
#endif
    for (int64_t r = 0; r < g->oh; r++) {
        const float *r0 = x + 2 * r * g->w, *r1 = r0 + g->w;
        float *o = out + r * g->ow;
        for (int64_t j = 0; j < g->ow; j += L) {
            int64_t n = g->ow - j < L ? g->ow - j : L;
#if defined(__AVX512F__)
            __m512 h1 = pairs16(r0 + 2 * j, n), h2 = pairs16(r1 + 2 * j, n);
            __mmask16 t =
                _mm512_cmp_ps_mask(h1, h2, _CMP_LT_OQ) | _mm512_cmp_ps_mask(h2, h2, _CMP_UNORD_Q);
            _mm512_mask_storeu_ps(o + j, (__mmask16)((1u << n) - 1), _mm512_mask_blend_ps(t, h1, h2));
#else
            __m256 h1 = pairs8(r0 + 2 * j, n), h2 = pairs8(r1 + 2 * j, n);
            __m256 t = _mm256_or_ps(_mm256_cmp_ps(h1, h2, _CMP_LT_OQ),
                                    _mm256_cmp_ps(h2, h2, _CMP_UNORD_Q));
            __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            _mm256_maskstore_ps(o + j, m, _mm256_blendv_ps(h1, h2, t));
#endif
        }
    }
#else
    /* hp: the pairs of the plane's first 2 * oh rows, then as many floats
     * for vb.  Output row r's windows are pair rows 2r and 2r + 1, so the
     * better of hp[k] and hp[k + ow] for all k at once (the odd rows'
     * results unused) is one flat pass; each output row is then a copy. */
    int64_t ow = g->ow, n = (2 * g->oh - 1) * ow;
    float *restrict vb = hp + 2 * g->oh * ow;
    plane_pairs(g, x, hp, NULL);
    for (int64_t k = 0; k < n; k++)
        vb[k] = pool_take(hp[k], hp[k + ow]) ? hp[k + ow] : hp[k];
    for (int64_t r = 0; r < g->oh; r++)
        memcpy(out + r * ow, vb + 2 * r * ow, (size_t)ow * sizeof *out);
#endif
}

static tg_status pool2d(const eager_kargs *a, const graph_ints *kl,
                        const graph_ints *sl, const graph_ints *pl, int avg,
                        int include_pad)
{
    const graph_type *x = &a->in_type[0], *y = a->out_type;
    int64_t k[2], s[2], p[4];
    eager_pool_window(kl, sl, pl, k, s, p);
    pool_geom g = {x->dim[2], x->dim[3], y->dim[2], y->dim[3],
                   k[0], k[1], s[0], s[1],
                   p[0], p[1], p[2], p[3], avg, include_pad};
    int64_t planes = y->dim[0] * y->dim[1];
    if (graph_type_numel(y) == 0)
        return TG_OK;
    int64_t pw = g.w + g.pl + g.pr;
    int two = !avg && pool_is_2x2(&g);
    if (two)
        pw = 4 * g.oh * g.ow; /* the pairs of one plane, their vertical pass */
    int64_t work = graph_type_numel(x) > graph_type_numel(y)
                       ? graph_type_numel(x) : graph_type_numel(y);
    int nt = work >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (nt > planes)
        nt = (int)planes;
    /* nt padded rows, then the column factors (sizes fit int64: infer) */
    float *buf = NULL;
    if ((uint64_t)pw <= (SIZE_MAX / sizeof *buf - (uint64_t)g.ow) / (uint64_t)nt)
        buf = tg_malloc(((size_t)nt * (size_t)pw + (size_t)g.ow) * sizeof *buf);
    if (!buf)
        return eager_kernel_fail(a, TG_ERR_NOMEM,
                                 "no memory for %d rows of %lld floats", nt,
                                 (long long)pw);
    /* Padding columns keep the identity; only [pl, pl+w) is rewritten. */
    float ident = avg ? 0.0f : -INFINITY;
    for (int64_t i = 0; i < (int64_t)nt * pw; i++)
        buf[i] = ident;
    float *cols = buf + (int64_t)nt * pw;
    column_counts(&g, cols);
    const float *in = a->in[0];
    float *out = a->out[0];
    int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *row = buf + (int64_t)omp_get_thread_num() * pw;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < planes; i++)
            if (two)
                max_plane_2x2(&g, in + i * in_plane, out + i * out_plane, row);
            else
                pool_plane(&g, in + i * in_plane, out + i * out_plane, row, cols);
    }
    tg_free(buf);
    return TG_OK;
}

/* ---- one plane, for fused kernels (kernel.h) ---- */

static pool_geom maxpool_geom(const eager_maxpool *m)
{
    pool_geom g = {m->h, m->w, m->oh, m->ow, m->k[0], m->k[1], m->s[0], m->s[1],
                   m->p[0], m->p[1], m->p[2], m->p[3], 0, 0};
    return g;
}

int64_t eager_maxpool_init(eager_maxpool *m, int64_t h, int64_t w, int64_t oh, int64_t ow,
                           const graph_ints *kl, const graph_ints *sl, const graph_ints *pl)
{
    m->h = h, m->w = w, m->oh = oh, m->ow = ow;
    eager_pool_window(kl, sl, pl, m->k, m->s, m->p);
    pool_geom g = maxpool_geom(m);
    /* as pool2d: the 2x2 path's pairs, or a padded row and the columns */
    return pool_is_2x2(&g) ? 4 * oh * ow : w + g.pl + g.pr + ow;
}

void eager_maxpool_scratch(const eager_maxpool *m, float *scratch)
{
    pool_geom g = maxpool_geom(m);
    if (pool_is_2x2(&g))
        return;
    int64_t pw = g.w + g.pl + g.pr;
    for (int64_t i = 0; i < pw; i++)
        scratch[i] = -INFINITY; /* the padding columns' identity */
    column_counts(&g, scratch + pw);
}

void eager_maxpool_plane(const eager_maxpool *m, const float *in, float *out, float *scratch)
{
    pool_geom g = maxpool_geom(m);
    if (pool_is_2x2(&g))
        max_plane_2x2(&g, in, out, scratch);
    else
        pool_plane(&g, in, out, scratch, scratch + g.w + g.pl + g.pr);
}

tg_status eager_kernel_max_pool2d(const eager_kargs *a)
{
    const graph_max_pool2d_attrs *at = a->attrs;
    return pool2d(a, &at->kernel, &at->stride, &at->padding, 0, 0);
}

tg_status eager_kernel_avg_pool2d(const eager_kargs *a)
{
    const graph_avg_pool2d_attrs *at = a->attrs;
    return pool2d(a, &at->kernel, &at->stride, &at->padding, 1,
                  (int)at->count_include_pad);
}

tg_status eager_kernel_global_avg_pool(const eager_kargs *a)
{
    const graph_type *x = &a->in_type[0];
    int64_t planes = x->dim[0] * x->dim[1];
    int64_t plane = 1;
    for (int i = 2; i < x->ndim; i++)
        plane *= x->dim[i];
    const float *in = a->in[0];
    float *out = a->out[0];
    int nt = planes * plane >= EAGER_PAR_MIN ? a->nthreads : 1;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t i = 0; i < planes; i++) {
        const float *restrict p = in + i * plane;
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < plane; j++)
            sum += p[j];
        out[i] = (float)(sum / (double)plane); /* 0/0 = NaN when empty */
    }
    return TG_OK;
}

/* ---- max_pool2d_grad ---- */

/*
 * Folds element v of each window of one in-bounds input row into the
 * windows' best values: row holds the row's columns from -pl (padded with
 * -inf when there is column padding), base is the element's plane index
 * for window 0 (the index for window o is base + o * sw).  Inlined with a
 * constant sw for the common strides.
 */
static inline __attribute__((always_inline)) void
window_argmax(const float *restrict row, int64_t ow, int64_t sw, int64_t v, int64_t base,
              float *restrict best, int64_t *restrict at)
{
    for (int64_t o = 0; o < ow; o++) {
        float e = row[o * sw + v];
        int take = e > best[o] || e != e;
        best[o] = take ? e : best[o];
        at[o] = take ? base + o * sw : at[o];
    }
}

static void grad_plane(const pool_geom *g, const float *restrict x, const float *restrict dy,
                       float *restrict dx, float *restrict rowbuf, float *restrict best,
                       int64_t *restrict at)
{
    int64_t h = g->h, w = g->w, ow = g->ow, sw = g->sw;
    int padded = g->pl || g->pr;
    memset(dx, 0, (size_t)(h * w) * sizeof *dx);
    for (int64_t oh = 0; oh < g->oh; oh++) {
        int64_t r0 = oh * g->sh - g->pt;
        /* each window's first element: it wins unless something beats it */
        for (int64_t o = 0; o < ow; o++) {
            int64_t c = o * sw - g->pl;
            int in = r0 >= 0 && r0 < h && c >= 0 && c < w;
            best[o] = in ? x[r0 * w + c] : -INFINITY;
            at[o] = in ? r0 * w + c : -1;
        }
        for (int64_t u = 0; u < g->kh; u++) {
            int64_t r = r0 + u;
            if (r < 0 || r >= h)
                continue; /* padding rows: -inf beats nothing */
            const float *row = x + r * w;
            if (padded) {
                memcpy(rowbuf + g->pl, row, (size_t)w * sizeof *row);
                row = rowbuf;
            }
            for (int64_t v = 0; v < g->kw; v++) {
                int64_t base = r * w + v - g->pl;
                if (sw == 1)
                    window_argmax(row, ow, 1, v, base, best, at);
                else if (sw == 2)
                    window_argmax(row, ow, 2, v, base, best, at);
                else
                    window_argmax(row, ow, sw, v, base, best, at);
            }
        }
        const float *d = dy + oh * ow;
        for (int64_t o = 0; o < ow; o++)
            if (at[o] >= 0 && best[o] == best[o])
                dx[at[o]] += d[o];
    }
}

/*
 * The 2x2, stride 2, unpadded pool: the windows tile the plane but for a
 * last odd row or column, so each element of dx is written once, without
 * the zeroing pass and the scatter: 0 + dy at the window's winner, as
 * grad_plane picks it (the sum scatter_elements would make: -0 becomes
 * +0), +0 elsewhere and where the maximum is NaN.  Three flat passes over
 * the pairs of the plane (as max_plane_2x2; n = 2 oh ow of them): the
 * better of each horizontal pair and which one (hp, hw); for each pair,
 * whether its window's better pair is it (its partner is the pair ow
 * later in a window's top row, ow earlier in its bottom row: bot) and so
 * its value in pv, dy (rows repeated in dy2) or 0; then dx from pv and
 * hw.  Compares and selects, no branches (the winner of random data is
 * not predictable).  buf: ow floats, hp, ow floats (read only in lanes
 * whose result is not taken), hw, pv and dy2; bot is shared.
 */
static void grad_plane_2x2(const pool_geom *g, const float *restrict x,
                           const float *restrict dy, float *restrict dx, float *restrict buf,
                           const float *restrict bot)
{
    int64_t w = g->w, ow = g->ow, rows = 2 * g->oh, n = rows * ow;
    float *restrict hp = buf + ow, *restrict hw = hp + n + ow;
    float *restrict pv = hw + n, *restrict dy2 = pv + n;
    plane_pairs(g, x, hp, hw);
    for (int64_t r = 0; r < rows; r++)
        memcpy(dy2 + r * ow, dy + (r / 2) * ow, (size_t)ow * sizeof *dy2);
    for (int64_t k = 0; k < n; k++) {
        int isb = bot[k] != 0.0f;
        float q = isb ? hp[k - ow] : hp[k + ow];
        float top = isb ? q : hp[k], low = isb ? hp[k] : q;
        int t = pool_take(top, low);
        float m = t ? low : top;
        float v = m == m ? 0.0f + dy2[k] : 0.0f;
        pv[k] = t == isb ? v : 0.0f;
    }
    if (w == 2 * ow) {
        for (int64_t k = 0; k < n; k++) {
            dx[2 * k] = hw[k] == 0.0f ? pv[k] : 0.0f;
            dx[2 * k + 1] = hw[k] == 0.0f ? 0.0f : pv[k];
        }
    } else {
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict q = pv + r * ow, *restrict s = hw + r * ow;
            float *restrict o = dx + r * w;
            for (int64_t k = 0; k < ow; k++) {
                o[2 * k] = s[k] == 0.0f ? q[k] : 0.0f;
                o[2 * k + 1] = s[k] == 0.0f ? 0.0f : q[k];
            }
            for (int64_t c = 2 * ow; c < w; c++) /* columns in no window */
                o[c] = 0.0f;
        }
    }
    if (g->h > rows) /* rows in no window */
        memset(dx + rows * w, 0, (size_t)((g->h - rows) * w) * sizeof *dx);
}

/* ---- one plane's gradient, for fused kernels (kernel.h) ---- */

/* Scratch: the 2x2 path's buf (4 npair + 2 ow floats) then bot (npair);
 * else the winners' places (ow int64, first for their alignment), a
 * padded row (pw) and the best values (ow).  An even count, so that
 * consecutive scratches keep the int64 aligned. */
int64_t eager_maxpool_grad_size(const eager_maxpool *m)
{
    pool_geom g = maxpool_geom(m);
    int64_t npair = 2 * g.oh * g.ow, n;
    if (pool_is_2x2(&g))
        n = 4 * npair + 2 * g.ow + npair;
    else
        n = 2 * g.ow + (g.w + g.pl + g.pr) + g.ow;
    return n + (n & 1);
}

void eager_maxpool_grad_scratch(const eager_maxpool *m, float *scratch)
{
    pool_geom g = maxpool_geom(m);
    int64_t npair = 2 * g.oh * g.ow;
    if (pool_is_2x2(&g)) {
        float *bot = scratch + 4 * npair + 2 * g.ow;
        for (int64_t i = 0; i < 4 * npair + 2 * g.ow; i++)
            scratch[i] = -INFINITY; /* as max_pool2d_grad's */
        for (int64_t k = 0; k < npair; k++)
            bot[k] = (float)((k / g.ow) & 1);
        return;
    }
    float *row = scratch + 2 * g.ow;
    for (int64_t i = 0; i < g.w + g.pl + g.pr; i++)
        row[i] = -INFINITY; /* the padding columns stay -inf */
}

/* One plane's gradient on that scratch; two: pool_is_2x2(g). */
static inline __attribute__((always_inline)) void
grad_plane_any(const pool_geom *g, int two, const float *x, const float *dy,
                           float *dx, float *scratch)
{
    if (two) {
        grad_plane_2x2(g, x, dy, dx, scratch, scratch + 4 * (2 * g->oh * g->ow) + 2 * g->ow);
        return;
    }
    float *row = scratch + 2 * g->ow;
    grad_plane(g, x, dy, dx, row, row + g->w + g->pl + g->pr, (int64_t *)(void *)scratch);
}

void eager_maxpool_grad_plane(const eager_maxpool *m, const float *x, const float *dy, float *dx,
                              float *scratch)
{
    pool_geom g = maxpool_geom(m);
    grad_plane_any(&g, pool_is_2x2(&g), x, dy, dx, scratch);
}

tg_status eager_kernel_max_pool2d_grad(const eager_kargs *a)
{
    const graph_max_pool2d_grad_attrs *at = a->attrs;
    const graph_type *yt = &a->in_type[0], *xt = &a->in_type[1];
    if (graph_type_numel(xt) == 0)
        return TG_OK;
    eager_maxpool m;
    eager_maxpool_init(&m, xt->dim[2], xt->dim[3], yt->dim[2], yt->dim[3], &at->kernel,
                       &at->stride, &at->padding);
    int64_t planes = xt->dim[0] * xt->dim[1];
    int nt = graph_type_numel(xt) >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (nt > planes)
        nt = (int)planes;
    /* per thread: the plane code's scratch (eager_maxpool_grad_size) */
    int64_t per = eager_maxpool_grad_size(&m);
    float *buf = NULL;
    if ((uint64_t)per <= SIZE_MAX / sizeof *buf / (uint64_t)nt)
        buf = tg_malloc((size_t)nt * (size_t)per * sizeof *buf);
    if (!buf)
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for %d rows of %lld floats", nt,
                                 (long long)per);
    for (int t = 0; t < nt; t++)
        eager_maxpool_grad_scratch(&m, buf + (int64_t)t * per);
    const float *x = a->in[1], *dy = a->in[0];
    float *dx = a->out[0];
    int64_t in_plane = m.h * m.w, out_plane = m.oh * m.ow;
    pool_geom g = maxpool_geom(&m); /* once, not per plane */
    int two = pool_is_2x2(&g);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *scratch = buf + (int64_t)omp_get_thread_num() * per;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < planes; i++)
            grad_plane_any(&g, two, x + i * in_plane, dy + i * out_plane, dx + i * in_plane,
                           scratch);
    }
    tg_free(buf);
    return TG_OK;
}
