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
            pool_plane(&g, in + i * in_plane, out + i * out_plane, row, cols);
    }
    tg_free(buf);
    return TG_OK;
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
 * The 2x2, stride 2, unpadded pool (the common one): the windows tile the
 * plane but for a last odd row or column, so each element of dx is
 * written once, without the zeroing pass and the scatter: 0 + dy at the
 * window's winner, as grad_plane picks it (the sum scatter_elements would
 * make: -0 becomes +0), +0 elsewhere and where the maximum is NaN.
 * Compares and selects, no branches (the winner of random data is not
 * predictable).  Replay -O2 on this machine, one thread: 4.4 ms for x
 * [64,32,28,28], 2.3 for [64,64,14,14] (grad_plane: 3.9 and 3.6).
 */
static void grad_plane_2x2(const pool_geom *g, const float *restrict x,
                           const float *restrict dy, float *restrict dx)
{
    int64_t w = g->w, ow = g->ow;
    for (int64_t oh = 0; oh < g->oh; oh++) {
        const float *r0 = x + 2 * oh * w, *r1 = r0 + w;
        float *d0 = dx + 2 * oh * w, *d1 = d0 + w;
        const float *d = dy + oh * ow;
        for (int64_t o = 0; o < ow; o++) {
            float a = r0[2 * o], b = r0[2 * o + 1], c = r1[2 * o], e = r1[2 * o + 1];
            float m = a;
            int k = 0, t = b > m || b != b;
            m = t ? b : m, k = t ? 1 : k;
            t = c > m || c != c;
            m = t ? c : m, k = t ? 2 : k;
            t = e > m || e != e;
            m = t ? e : m, k = t ? 3 : k;
            float v = m == m ? 0.0f + d[o] : 0.0f;
            d0[2 * o] = k == 0 ? v : 0.0f;
            d0[2 * o + 1] = k == 1 ? v : 0.0f;
            d1[2 * o] = k == 2 ? v : 0.0f;
            d1[2 * o + 1] = k == 3 ? v : 0.0f;
        }
        if (w > 2 * ow) { /* the last column, in no window */
            d0[w - 1] = 0.0f;
            d1[w - 1] = 0.0f;
        }
    }
    if (g->h > 2 * g->oh) /* the last row */
        memset(dx + (g->h - 1) * w, 0, (size_t)w * sizeof *dx);
}

tg_status eager_kernel_max_pool2d_grad(const eager_kargs *a)
{
    const graph_max_pool2d_grad_attrs *at = a->attrs;
    const graph_type *yt = &a->in_type[0], *xt = &a->in_type[1];
    int64_t k[2], s[2], p[4];
    eager_pool_window(&at->kernel, &at->stride, &at->padding, k, s, p);
    pool_geom g = {xt->dim[2], xt->dim[3], yt->dim[2], yt->dim[3],
                   k[0], k[1], s[0], s[1],
                   p[0], p[1], p[2], p[3], 0, 0};
    if (graph_type_numel(xt) == 0)
        return TG_OK;
    int64_t planes = xt->dim[0] * xt->dim[1];
    int64_t pw = g.w + g.pl + g.pr;
    int nt = graph_type_numel(xt) >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (nt > planes)
        nt = (int)planes;
    /* per thread: a padded row and the best values (pw + ow floats), the
     * winners' places (ow int64) */
    int64_t per = pw + g.ow;
    float *buf = NULL;
    int64_t *wins = NULL;
    if ((uint64_t)per <= SIZE_MAX / sizeof *buf / (uint64_t)nt) {
        buf = tg_malloc((size_t)nt * (size_t)per * sizeof *buf);
        wins = tg_malloc((size_t)nt * (size_t)g.ow * sizeof *wins);
    }
    if (!buf || !wins) {
        tg_free(buf);
        tg_free(wins);
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for %d rows of %lld floats", nt,
                                 (long long)per);
    }
    for (int64_t i = 0; i < (int64_t)nt * per; i++)
        buf[i] = -INFINITY; /* the padding columns stay -inf */
    const float *x = a->in[1], *dy = a->in[0];
    float *dx = a->out[0];
    int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
    int two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && !g.pt && !g.pl && !g.pb && !g.pr;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *row = buf + (int64_t)t * per;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < planes; i++) {
            if (two)
                grad_plane_2x2(&g, x + i * in_plane, dy + i * out_plane, dx + i * in_plane);
            else
                grad_plane(&g, x + i * in_plane, dy + i * out_plane, dx + i * in_plane, row,
                           row + pw, wins + (int64_t)t * g.ow);
        }
    }
    tg_free(wins);
    tg_free(buf);
    return TG_OK;
}
