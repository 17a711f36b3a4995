/*
 * kernels_layout.c - the copy engines behind the data-movement kernels
 * (see layout.h).  One strided n-d copy serves transpose, slice, expand,
 * concat and split:
 *
 *   1. simplify: drop size-1 dims and merge neighbours whose source and
 *      destination layouts are both contiguous across them, so a concat
 *      becomes [outer, run] and a plain copy one run;
 *   2. if the destination's innermost dim is contiguous but the source's
 *      unit stride sits on an outer dim (a transposition), copy in
 *      cache-blocked tiles of small fixed-size register blocks;
 *   3. otherwise walk the rows (all dims but the innermost) with an
 *      odometer and copy each row as a memcpy, a fill (broadcast source) or
 *      a strided loop.
 *
 * Offsets are kept as element counts and only turned into pointers at an
 * element that is read or written, so reversed (negative-stride) walks
 * never form out-of-range pointers.  Large copies are split into chunks
 * over OpenMP threads; each chunk starts its odometer with div/mod.
 */
#include "layout.h"

#include <string.h>

#include "kernel.h"

/* Transposition blocking: TILE-column strips (a 32 x 32 f32 block is
 * 4 KiB per side, inside L1) within L2BLK x L2BLK blocks, whose 128 source
 * rows and 128 destination rows also keep the TLB from thrashing on large
 * power-of-two strides (measured ~20% on 4096 x 4096). */
#define TILE 32
#define L2BLK 128

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;

typedef struct copy_plan {
    int n;
    int64_t dim[GRAPH_MAX_DIMS];
    int64_t ss[GRAPH_MAX_DIMS]; /* source strides, elements */
    int64_t ds[GRAPH_MAX_DIMS]; /* destination strides, elements */
} copy_plan;

/* Builds the simplified plan; returns 0 if the block has no elements. */
static int simplify(copy_plan *p, int n, const int64_t *dims,
                    const int64_t *sstr, const int64_t *dstr)
{
    p->n = 0;
    for (int i = 0; i < n; i++) {
        if (dims[i] == 0)
            return 0;
        if (dims[i] == 1)
            continue;
        int l = p->n - 1;
        if (l >= 0 && p->ss[l] == sstr[i] * dims[i] &&
            p->ds[l] == dstr[i] * dims[i]) {
            p->dim[l] *= dims[i];
            p->ss[l] = sstr[i];
            p->ds[l] = dstr[i];
        } else {
            p->dim[p->n] = dims[i];
            p->ss[p->n] = sstr[i];
            p->ds[p->n] = dstr[i];
            p->n++;
        }
    }
    return 1;
}

/* One run of n elements: memcpy, fill, or strided loop. */
#define RUN_FN(T)                                                          \
    static void run_##T(T *restrict d, const T *restrict s, int64_t n,     \
                        int64_t ss, int64_t ds)                            \
    {                                                                      \
        if (ds == 1 && ss == 1) {                                          \
            memcpy(d, s, (size_t)n * sizeof(T));                           \
        } else if (ds == 1 && ss == 0) {                                   \
            T v = s[0];                                                    \
            for (int64_t k = 0; k < n; k++)                                \
                d[k] = v;                                                  \
        } else if (ds == 1) {                                              \
            for (int64_t k = 0; k < n; k++)                                \
                d[k] = s[k * ss];                                          \
        } else {                                                           \
            for (int64_t k = 0; k < n; k++)                                \
                d[k * ds] = s[k * ss];                                     \
        }                                                                  \
    }
RUN_FN(u8)
RUN_FN(u32)
RUN_FN(u64)

static void run(size_t es, char *d, const char *s, int64_t n, int64_t ss,
                int64_t ds)
{
    if (es == 4)
        run_u32((u32 *)(void *)d, (const u32 *)(const void *)s, n, ss, ds);
    else if (es == 8)
        run_u64((u64 *)(void *)d, (const u64 *)(const void *)s, n, ss, ds);
    else
        run_u8((u8 *)d, (const u8 *)s, n, ss, ds);
}

/*
 * A block of the transposition: rows a0..a1 of the source's unit-stride
 * dim (destination stride dA), columns bs..be (source stride sB,
 * destination unit stride), in TILE-column strips.  Inside a strip the
 * work is done in fixed BLK x BLK blocks through a local array: with
 * constant trip counts the compiler turns them into vector loads,
 * shuffles and stores (measured 3-5x faster than a strided inner loop,
 * which also suffers from cache-set aliasing at power-of-two strides).
 * Ragged edges take the plain loop.
 */
#define TILE_FN(T, BLK)                                                    \
    static void edge_##T(T *restrict d, const T *restrict s, int64_t a0,   \
                         int64_t a1, int64_t b0, int64_t b1, int64_t sB,   \
                         int64_t dA)                                       \
    {                                                                      \
        for (int64_t a = a0; a < a1; a++)                                  \
            for (int64_t b = b0; b < b1; b++)                              \
                d[a * dA + b] = s[a + b * sB];                             \
    }                                                                      \
    static inline void block_##T(T *restrict d, const T *restrict s,       \
                                 int64_t sB, int64_t dA)                   \
    {                                                                      \
        T t[BLK][BLK];                                                     \
        for (int b = 0; b < BLK; b++)                                      \
            for (int a = 0; a < BLK; a++)                                  \
                t[b][a] = s[a + b * sB];                                   \
        for (int a = 0; a < BLK; a++)                                      \
            for (int b = 0; b < BLK; b++)                                  \
                d[a * dA + b] = t[b][a];                                   \
    }                                                                      \
    static void tile_##T(T *restrict d, const T *restrict s, int64_t a0,   \
                         int64_t a1, int64_t bs, int64_t be, int64_t sB,   \
                         int64_t dA)                                       \
    {                                                                      \
        int64_t af = a0 + (a1 - a0) / BLK * BLK; /* full blocks end */     \
        for (int64_t b0 = bs; b0 < be; b0 += TILE) {                       \
            int64_t b1 = be - b0 < TILE ? be : b0 + TILE;                  \
            int64_t bf = b0 + (b1 - b0) / BLK * BLK;                       \
            for (int64_t a = a0; a < af; a += BLK) {                       \
                for (int64_t b = b0; b < bf; b += BLK)                     \
                    block_##T(d + a * dA + b, s + a + b * sB, sB, dA);     \
                edge_##T(d, s, a, a + BLK, bf, b1, sB, dA);                \
            }                                                              \
            edge_##T(d, s, af, a1, b0, b1, sB, dA);                        \
        }                                                                  \
    }
TILE_FN(u8, 16)
TILE_FN(u32, 8)
TILE_FN(u64, 8)

static void tile(size_t es, char *d, const char *s, int64_t a0, int64_t a1,
                 int64_t bs, int64_t be, int64_t sB, int64_t dA)
{
    if (es == 4)
        tile_u32((u32 *)(void *)d, (const u32 *)(const void *)s, a0, a1, bs,
                 be, sB, dA);
    else if (es == 8)
        tile_u64((u64 *)(void *)d, (const u64 *)(const void *)s, a0, a1, bs,
                 be, sB, dA);
    else
        tile_u8((u8 *)d, (const u8 *)s, a0, a1, bs, be, sB, dA);
}

/* Source and destination offsets of index r over dims[0..n) (row-major). */
static void unravel(const copy_plan *p, const int *axes, int n, int64_t r,
                    int64_t *idx, int64_t *so, int64_t *dof)
{
    *so = *dof = 0;
    for (int k = n - 1; k >= 0; k--) {
        int ax = axes[k];
        idx[k] = r % p->dim[ax];
        r /= p->dim[ax];
        *so += idx[k] * p->ss[ax];
        *dof += idx[k] * p->ds[ax];
    }
}

/*
 * Rows r0..r1 (row = index over dims 0..n-2), each row's run restricted to
 * elements k0..k1 of the innermost dim.
 */
static void rows_range(const copy_plan *p, size_t es, const char *src,
                       char *dst, int64_t r0, int64_t r1, int64_t k0,
                       int64_t k1)
{
    int no = p->n - 1, axes[GRAPH_MAX_DIMS];
    int64_t idx[GRAPH_MAX_DIMS], so, dof;
    for (int k = 0; k < no; k++)
        axes[k] = k;
    unravel(p, axes, no, r0, idx, &so, &dof);
    int64_t rs = p->ss[no], rd = p->ds[no];
    for (int64_t r = r0; r < r1; r++) {
        run(es, dst + (dof + k0 * rd) * (int64_t)es,
            src + (so + k0 * rs) * (int64_t)es, k1 - k0, rs, rd);
        for (int k = no - 1; k >= 0; k--) { /* odometer */
            so += p->ss[k];
            dof += p->ds[k];
            if (++idx[k] < p->dim[k])
                break;
            so -= p->ss[k] * p->dim[k];
            dof -= p->ds[k] * p->dim[k];
            idx[k] = 0;
        }
    }
}

static void copy_rows(const copy_plan *p, size_t es, const char *src,
                      char *dst, int nthreads)
{
    int64_t len = p->dim[p->n - 1], rows = 1;
    for (int k = 0; k < p->n - 1; k++)
        rows *= p->dim[k];
    int nt = rows * len >= EAGER_PAR_MIN ? nthreads : 1;
    if (nt <= 1) {
        rows_range(p, es, src, dst, 0, rows, 0, len);
    } else if (rows >= 4 * (int64_t)nt) {
        int64_t nchunk = 4 * (int64_t)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t c = 0; c < nchunk; c++)
            rows_range(p, es, src, dst, rows * c / nchunk,
                       rows * (c + 1) / nchunk, 0, len);
    } else {
        /* Few long rows: split each row's run into nt pieces. */
        int64_t items = rows * nt;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t it = 0; it < items; it++) {
            int64_t r = it / nt, piece = it % nt;
            rows_range(p, es, src, dst, r, r + 1, len * piece / nt,
                       len * (piece + 1) / nt);
        }
    }
}

/* Transposition: dim j has source stride 1, the innermost dim destination
 * stride 1.  Work items are (index over the other dims, L2BLK rows of j). */
static void copy_tiles(const copy_plan *p, int j, size_t es, const char *src,
                       char *dst, int nthreads)
{
    int last = p->n - 1, no = 0, axes[GRAPH_MAX_DIMS];
    int64_t outer = 1;
    for (int k = 0; k < last; k++) {
        if (k != j) {
            axes[no++] = k;
            outer *= p->dim[k];
        }
    }
    int64_t A = p->dim[j], B = p->dim[last], nblk = (A + L2BLK - 1) / L2BLK;
    int64_t items = outer * nblk;
    int nt = outer * A * B >= EAGER_PAR_MIN ? nthreads : 1;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t it = 0; it < items; it++) {
        int64_t idx[GRAPH_MAX_DIMS], so, dof;
        int64_t a0 = (it % nblk) * L2BLK;
        int64_t a1 = a0 + L2BLK < A ? a0 + L2BLK : A;
        unravel(p, axes, no, it / nblk, idx, &so, &dof);
        /* Element (a, b) sits at so + a + b*sB and dof + a*dA + b. */
        for (int64_t bs = 0; bs < B; bs += L2BLK)
            tile(es, dst + dof * (int64_t)es, src + so * (int64_t)es, a0, a1,
                 bs, bs + L2BLK < B ? bs + L2BLK : B, p->ss[last], p->ds[j]);
    }
}

void eager_copy_strided(size_t es, int n, const int64_t *dims,
                        const void *src, const int64_t *sstr, void *dst,
                        const int64_t *dstr, int nthreads)
{
    copy_plan p;
    if (!simplify(&p, n, dims, sstr, dstr))
        return;
    if (p.n == 0) {
        memcpy(dst, src, es);
        return;
    }
    int last = p.n - 1;
    if (p.ds[last] == 1 && p.ss[last] != 1 && p.ss[last] != 0) {
        for (int j = 0; j < last; j++) {
            if (p.ss[j] == 1) {
                copy_tiles(&p, j, es, src, dst, nthreads);
                return;
            }
        }
    }
    copy_rows(&p, es, src, dst, nthreads);
}

void eager_copy_bytes(void *dst, const void *src, size_t nbytes,
                      int nthreads)
{
    if (dst == src || nbytes == 0)
        return;
    int nt = nbytes >= (size_t)EAGER_PAR_MIN * 16 ? nthreads : 1;
    if (nt <= 1) {
        memcpy(dst, src, nbytes);
        return;
    }
    /* Chunks of whole cache lines so threads never share one. */
    size_t chunk = ((nbytes + (size_t)nt - 1) / (size_t)nt + 63) & ~(size_t)63;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int c = 0; c < nt; c++) {
        size_t lo = (size_t)c * chunk;
        if (lo < nbytes) {
            size_t hi = lo + chunk < nbytes ? lo + chunk : nbytes;
            memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
        }
    }
}

void eager_fill_elems(void *dst, int64_t n, size_t es, const void *val)
{
    if (n <= 0)
        return;
    if (es == 4) {
        u32 v, *d = dst;
        memcpy(&v, val, 4);
        for (int64_t k = 0; k < n; k++)
            d[k] = v;
    } else if (es == 8) {
        u64 v, *d = dst;
        memcpy(&v, val, 8);
        for (int64_t k = 0; k < n; k++)
            d[k] = v;
    } else {
        memset(dst, *(const u8 *)val, (size_t)n);
    }
}
