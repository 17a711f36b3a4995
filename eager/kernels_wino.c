/*
 * kernels_wino.c - Winograd F(4x4, 3x3) for conv2d_blk on 8-lane blocks
 * (nChw8c), where oneDNN has no Winograd: oneDNN 2.6 offers it at AVX-512
 * only, so at AVX2 (and SSE4.1) every 3x3 conv ran its direct kernel, and
 * the networks made of 3x3 convs were 1.8-2.9x slower there than at
 * AVX-512 (issue 30; docs/PERFORMANCE.md "AVX2").
 *
 * The algorithm (Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2015), interpolation points 0, +-1, +-2 and infinity: each
 * 4x4 output tile is Y = A^T [ (G g G^T) . (B^T d B) ] A, from the 6x6
 * input tile d around it and the 3x3 kernel g, with
 *
 *   B^T = | 4  0 -5  0  1  0 |   G = |  1/4    0     0   |   A^T = | 1  1  1  1  1  0 |
 *         | 0 -4 -4  1  1  0 |       | -1/6 -1/6  -1/6   |         | 0  1 -1  2 -2  0 |
 *         | 0  4 -4 -1  1  0 |       | -1/6  1/6  -1/6   |         | 0  1  1  4  4  0 |
 *         | 0 -2 -1  2  1  0 |       | 1/24  1/12  1/6   |         | 0  1 -1  8 -8  1 |
 *         | 0  2 -1 -2  1  0 |       | 1/24 -1/12  1/6   |
 *         | 0  4  0 -5  0  1 |       |   0    0     1    |
 *
 * 36 multiplies per output channel and input channel for 16 outputs,
 * where the direct conv does 144.  Over channels the product is 36
 * matrix products, one per point xi of the 6x6 transform:
 * M_xi[tile, k] = sum_c V_xi[tile, c] U_xi[c, k], with V = B^T d B the
 * transformed input and U = G g G^T the transformed weights (computed once
 * in double, in the prepared state).  They run through oneDNN's sgemm,
 * split over the threads by xi.  The input and output transforms work on
 * one 8-lane channel block at a time: a pixel of the block is one vector.
 * Tiles go in chunks so that V and M stay near the L2 size.
 *
 * Less exact than the direct conv: the transforms scale values by up to
 * 8 and 1/24 and add 36 products per channel.  test_wino measures it
 * against a double-precision reference: ~1e-6 of the output's magnitude
 * at 64 channels, as oneDNN's F(4x4,3x3) at AVX-512.  And a NaN or an
 * infinity in the input reaches every output of each 4x4 tile whose 6x6
 * window holds it (the transforms mix the window), where the direct conv
 * gives NaN only where the kernel reads it: as oneDNN's Winograd does.
 *
 * Used by kernels_blocked.c for a conv2d_blk that wants Winograd (3x3,
 * stride 1, dense, not grouped, blocked x and y of 8 lanes) where oneDNN
 * offers none; the epilogue (bias in the output transform, the rest by
 * eager_post_apply) stays the caller's.
 */
#include <omp.h>
#include <string.h>

/* the v8 helpers below are static: their ABI at baseline (two SSE halves)
 * concerns nobody outside this file */
#pragma GCC diagnostic ignored "-Wpsabi"

#include "../graph/alloc.h"
#include "dnnl_util.h"
#include "wino.h"

#define L 8 /* lanes of a channel block */
#ifndef CHUNK_BYTES
#define CHUNK_BYTES ((int64_t)1 << 20)
#endif

#if defined(__AVX__)
#include <immintrin.h>
typedef __m256 v8;
static inline v8 ld(const float *p) { return _mm256_loadu_ps(p); }
#define st(p, v) _mm256_storeu_ps((p), (v))
static inline v8 splat(float f) { return _mm256_set1_ps(f); }
/* relu as the epilogue's: x > 0 or NaN keeps x (not x <= 0, unordered) */
static inline void relu8(v8 *x)
{
    *x = _mm256_blendv_ps(_mm256_setzero_ps(), *x,
                          _mm256_cmp_ps(*x, _mm256_setzero_ps(), _CMP_NLE_UQ));
}
#else /* two SSE halves, by GCC's generic vectors */
typedef float v8 __attribute__((vector_size(L * sizeof(float)), aligned(16)));
static inline v8 ld(const float *p)
{
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}
/* a macro: a 32-byte vector passed by value to a function is what GCC
 * notes an ABI change for without AVX */
#define st(p, v)                                                           \
    do {                                                                   \
        v8 st_ = (v);                                                      \
        memcpy((p), &st_, sizeof st_);                                     \
    } while (0)
static inline v8 splat(float f) { return (v8){f, f, f, f, f, f, f, f}; }
static inline void relu8(v8 *x)
{
    float f[L];
    memcpy(f, x, sizeof f);
    for (int l = 0; l < L; l++)
        f[l] = f[l] > 0.0f || f[l] != f[l] ? f[l] : 0.0f;
    memcpy(x, f, sizeof f);
}
#endif

struct eager_wino {
    int64_t cp, kp; /* channels in and out, padded to blocks of L */
    float *u;       /* [36][cp][kp] */
};

void eager_wino_free(eager_wino *w)
{
    if (w) {
        tg_free(w->u);
        tg_free(w);
    }
}

eager_wino *eager_wino_prepare(const float *w, int64_t o, int64_t c, int64_t cp, int64_t kp)
{
    static const double G[6][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
    eager_wino *p = tg_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->cp = cp, p->kp = kp;
    if (!(p->u = tg_calloc((size_t)(36 * cp * kp), sizeof(float)))) {
        tg_free(p);
        return NULL;
    }
    for (int64_t ci = 0; ci < c; ci++) /* k innermost: u's rows written in order */
        for (int64_t k = 0; k < o; k++) {
            const float *g = w + (k * c + ci) * 9;
            double t[6][3]; /* G g */
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 3; j++)
                    t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) {
                    double v = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
                    p->u[((int64_t)(i * 6 + j) * cp + ci) * kp + k] = (float)v;
                }
        }
    return p;
}

/* B^T applied to six vectors (a column or row of the tile). */
static inline void bt6(const v8 d[6], v8 r[6])
{
    v8 f4 = splat(4.0f), f5 = splat(5.0f), f2 = splat(2.0f);
    v8 a = d[4] - d[2], b = d[3] - d[1];
    r[0] = f4 * d[0] - f5 * d[2] + d[4];
    r[1] = (d[3] + d[4]) - f4 * (d[1] + d[2]);
    r[2] = (d[4] - d[3]) + f4 * (d[1] - d[2]);
    r[3] = a + f2 * b;
    r[4] = a - f2 * b;
    r[5] = f4 * d[1] - f5 * d[3] + d[5];
}

/* A^T applied to six vectors: four. */
static inline void at6(const v8 m[6], v8 r[4])
{
    v8 f2 = splat(2.0f), f4 = splat(4.0f), f8 = splat(8.0f);
    v8 s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    r[0] = m[0] + s12 + s34;
    r[1] = d12 + f2 * d34;
    r[2] = s12 + f4 * s34;
    r[3] = d12 + f8 * d34 + m[5];
}

typedef struct wino_geom {
    int64_t n, cb, kb, h, w, oh, ow, pt, pl, th, tw, tiles;
} wino_geom;

/* The input transform of tiles [t0, t0 + nt) into v [36][nt][cp]. */
static void input_tf(const wino_geom *g, int64_t cp, const float *x, float *v, int64_t t0,
                     int64_t nt, int nthreads, int par)
{
    int64_t per = g->th * g->tw;
#pragma omp parallel for num_threads(nthreads) if (par) collapse(2) schedule(static)
    for (int64_t i = 0; i < nt; i++)
        for (int64_t cb = 0; cb < g->cb; cb++) {
            int64_t t = t0 + i, n = t / per, r = t % per;
            int64_t y0 = r / g->tw * 4 - g->pt, x0 = r % g->tw * 4 - g->pl;
            const float *xp = x + (n * g->cb + cb) * g->h * g->w * L;
            v8 tmp[6][6];
            int inside = y0 >= 0 && x0 >= 0 && y0 + 6 <= g->h && x0 + 6 <= g->w;
            for (int b = 0; b < 6; b++) { /* columns: B^T d */
                v8 col[6], r6[6];
                int64_t xx = x0 + b;
                if (inside) {
                    for (int a = 0; a < 6; a++)
                        col[a] = ld(xp + ((y0 + a) * g->w + xx) * L);
                } else {
                    for (int a = 0; a < 6; a++) {
                        int64_t yy = y0 + a;
                        col[a] = yy >= 0 && yy < g->h && xx >= 0 && xx < g->w
                                     ? ld(xp + (yy * g->w + xx) * L)
                                     : splat(0.0f);
                    }
                }
                bt6(col, r6);
                for (int a = 0; a < 6; a++)
                    tmp[a][b] = r6[a];
            }
            for (int a = 0; a < 6; a++) { /* rows: (B^T d) B */
                v8 r6[6];
                bt6(tmp[a], r6);
                for (int b = 0; b < 6; b++)
                    st(v + ((int64_t)(a * 6 + b) * nt + i) * cp + cb * L, r6[b]);
            }
        }
}

/* The output transform of tiles [t0, t0 + nt) from m [36][nt][kp], plus
 * the bias (kp floats, zeros past o), then a's epilogue steps, into y. */
static void output_tf(const wino_geom *g, const eager_wino_args *ea, const float *m,
                      const float *bias, int64_t t0, int64_t nt, int nthreads, int par)
{
    int64_t kp = ea->kp;
    float *y = ea->y;
    int64_t per = g->th * g->tw;
#pragma omp parallel for num_threads(nthreads) if (par) collapse(2) schedule(static)
    for (int64_t i = 0; i < nt; i++)
        for (int64_t kb = 0; kb < g->kb; kb++) {
            int64_t t = t0 + i, n = t / per, r = t % per;
            int64_t y0 = r / g->tw * 4, x0 = r % g->tw * 4;
            float *yp = y + (n * g->kb + kb) * g->oh * g->ow * L;
            v8 bv = ld(bias + kb * L), tmp[4][6];
            for (int b = 0; b < 6; b++) { /* columns: A^T m */
                v8 col[6], r4[4];
                for (int a = 0; a < 6; a++)
                    col[a] = ld(m + ((int64_t)(a * 6 + b) * nt + i) * kp + kb * L);
                at6(col, r4);
                for (int a = 0; a < 4; a++)
                    tmp[a][b] = r4[a];
            }
            const float *rp = ea->res ? ea->res + (yp - y) : NULL;
            for (int a = 0; a < 4 && y0 + a < g->oh; a++) { /* rows: (A^T m) A */
                v8 r4[4];
                at6(tmp[a], r4);
                for (int b = 0; b < 4 && x0 + b < g->ow; b++) {
                    int64_t at = ((y0 + a) * g->ow + x0 + b) * L;
                    v8 val = r4[b] + bv;
                    for (int p = 0; p < ea->npost; p++) {
                        if (ea->post[p] == EAGER_WINO_ADD)
                            val = val + ld(rp + at);
                        else
                            relu8(&val);
                    }
                    st(yp + at, val);
                }
            }
        }
}

tg_status eager_wino_run(const eager_wino *wp, const eager_wino_args *a)
{
    wino_geom g = {a->n, a->cp / L, a->kp / L, a->h, a->w, a->oh, a->ow, a->pt, a->pl,
                   (a->oh + 3) / 4, (a->ow + 3) / 4, 0};
    g.tiles = g.n * g.th * g.tw;
    if (g.tiles == 0 || wp->cp != a->cp || wp->kp != a->kp)
        return g.tiles == 0 ? TG_OK : TG_ERR_ARG;
    /* tiles per chunk: V and M of a chunk near CHUNK_BYTES (in L2 while the
     * 36 products read them), at least 32 tiles (a product of fewer rows
     * runs far below the GEMM's peak), the chunks of equal size */
    int64_t per_tile = 36 * (a->cp + a->kp) * (int64_t)sizeof(float);
    int64_t chunk = CHUNK_BYTES / per_tile;
    chunk = chunk < 32 ? 32 : chunk;
    chunk = chunk > g.tiles ? g.tiles : chunk;
    int64_t nchunks = (g.tiles + chunk - 1) / chunk;
    chunk = (g.tiles + nchunks - 1) / nchunks;
    float *v = tg_malloc((size_t)(36 * chunk * a->cp) * sizeof(float));
    float *m = tg_malloc((size_t)(36 * chunk * a->kp) * sizeof(float));
    float *bias = tg_calloc((size_t)a->kp, sizeof(float)); /* the lanes past o: 0 */
    if (!v || !m || !bias) {
        tg_free(v);
        tg_free(m);
        tg_free(bias);
        return TG_ERR_NOMEM;
    }
    if (a->bias)
        memcpy(bias, a->bias, (size_t)a->o * sizeof(float));
    int nth = a->nthreads > 0 ? a->nthreads : 1;
    int par = nth > 1;
    /* one thread per sgemm: nested in the region below, or alone */
    int old = eager_dnnl_set_threads(1);
    int bad = 0;
    for (int64_t t0 = 0; t0 < g.tiles && !bad; t0 += chunk) {
        int64_t nt = g.tiles - t0 < chunk ? g.tiles - t0 : chunk;
        input_tf(&g, a->cp, a->x, v, t0, nt, nth, par);
        /* 36 products, one thread each (oneDNN's sgemm runs on one thread
         * inside a parallel region) */
#pragma omp parallel for num_threads(nth) if (par) schedule(static) reduction(| : bad)
        for (int xi = 0; xi < 36; xi++)
            bad |= dnnl_sgemm('N', 'N', nt, a->kp, a->cp, 1.0f, v + (int64_t)xi * nt * a->cp,
                              a->cp, wp->u + (int64_t)xi * a->cp * a->kp, a->kp, 0.0f,
                              m + (int64_t)xi * nt * a->kp, a->kp) != dnnl_success;
        if (!bad)
            output_tf(&g, a, m, bias, t0, nt, nth, par);
    }
    eager_dnnl_set_threads(old);
    tg_free(v);
    tg_free(m);
    tg_free(bias);
    return bad ? TG_ERR_BACKEND : TG_OK;
}
