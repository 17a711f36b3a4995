/*
 * ew_bcast.c - the parallel split and the broadcast walk used by the
 * elementwise kernels (see ew_bcast.h).
 *
 * The walk first collapses the output dims: dims of size 1 are dropped
 * and neighbours are merged when every input steps through them as one
 * run (outer stride = inner stride * inner size; broadcast inputs have
 * stride 0 in both).  What is left is a few outer dims iterated with an
 * odometer and one inner dim handed to the op's run function, where each
 * input's stride is 1 (advances) or 0 (repeats).
 */
#include "ew_bcast.h"

#include <omp.h>
#include <string.h>

/* Below this many elements per thread, extra threads cost more than they
 * bring. */
#define EW_MIN_PER_THREAD 8192

void eager_ew_parallel(int64_t n, int nthreads,
                       void (*fn)(int64_t start, int64_t end, void *ctx),
                       void *ctx)
{
    if (n <= 0)
        return;
    if (n < EAGER_PAR_MIN || nthreads <= 1) {
        fn(0, n, ctx);
        return;
    }
    int64_t most = (n + EW_MIN_PER_THREAD - 1) / EW_MIN_PER_THREAD;
    int nt = nthreads < most ? nthreads : (int)most;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), tn = omp_get_num_threads();
        /* Multiples of 16 elements keep each thread's writes on its own
         * cache lines (for 4-byte elements). */
        int64_t chunk = ((n + tn - 1) / tn + 15) & ~(int64_t)15;
        int64_t start = (int64_t)t * chunk;
        int64_t end = start + chunk < n ? start + chunk : n;
        if (start < end)
            fn(start, end, ctx);
    }
}

/*
 * As eager_ew_parallel over units of per elements each: whole units per
 * thread, split only past EAGER_PAR_MIN elements in all.
 */
static void eager_ew_parallel_units(int64_t units, int64_t per, int nthreads,
                                    void (*fn)(int64_t start, int64_t end, void *ctx),
                                    void *ctx)
{
    if (units <= 0)
        return;
    if (units * per < EAGER_PAR_MIN || nthreads <= 1 || units == 1) {
        fn(0, units, ctx);
        return;
    }
    int nt = nthreads < units ? nthreads : (int)units;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), tn = omp_get_num_threads();
        int64_t chunk = (units + tn - 1) / tn, start = (int64_t)t * chunk;
        int64_t end = start + chunk < units ? start + chunk : units;
        if (start < end)
            fn(start, end, ctx);
    }
}

typedef struct ew_walk {
    ew_run_fn fn;
    int nin, nd;
    unsigned mode; /* inner-dim mode, or the whole mode when nd == 0 */
    const char *in[EW_MAX_IN];
    size_t esize[EW_MAX_IN];
    char *out;
    size_t osize;
    int64_t dim[GRAPH_MAX_DIMS];
    int64_t stride[EW_MAX_IN][GRAPH_MAX_DIMS]; /* elements; 0: broadcast */
} ew_walk;

/* Flat case: each input has the output's element count (advances) or one
 * element (repeats). */
static void flat_range(int64_t start, int64_t end, void *ctx)
{
    const ew_walk *w = ctx;
    const void *p[EW_MAX_IN];
    for (int i = 0; i < w->nin; i++)
        p[i] = w->in[i] + ((w->mode >> i & 1u) ? (size_t)start * w->esize[i] : 0);
    w->fn(p, w->out + (size_t)start * w->osize, end - start, w->mode);
}

/* General case: walks rows of the collapsed inner dim from start to end. */
static void walk_range(int64_t start, int64_t end, void *ctx)
{
    const ew_walk *w = ctx;
    int nd = w->nd, nin = w->nin;
    int64_t len_in = w->dim[nd - 1];
    int64_t row = start / len_in, col = start % len_in;
    int64_t idx[GRAPH_MAX_DIMS] = {0}, off[EW_MAX_IN] = {0};
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = row % w->dim[d];
        row /= w->dim[d];
        for (int i = 0; i < nin; i++)
            off[i] += idx[d] * w->stride[i][d];
    }
    for (int64_t pos = start; pos < end;) {
        int64_t len = len_in - col < end - pos ? len_in - col : end - pos;
        const void *p[EW_MAX_IN];
        for (int i = 0; i < nin; i++) {
            int64_t e = off[i] + ((w->mode >> i & 1u) ? col : 0);
            p[i] = w->in[i] + (size_t)e * w->esize[i];
        }
        w->fn(p, w->out + (size_t)pos * w->osize, len, w->mode);
        pos += len;
        col = 0;
        for (int d = nd - 2; d >= 0; d--) { /* odometer */
            for (int i = 0; i < nin; i++)
                off[i] += w->stride[i][d];
            if (++idx[d] < w->dim[d])
                break;
            for (int i = 0; i < nin; i++)
                off[i] -= idx[d] * w->stride[i][d];
            idx[d] = 0;
        }
    }
}

/*
 * Short rows repeated: the inner dim is at most TILE_ROW elements, and
 * along the next dim every input either continues contiguously or repeats
 * the same row, at least one repeating a row that advances (blocked
 * [N,CB,H,W,B] * [N,CB,1,1,B], B 16 or 8, a squeeze-and-excitation gate).
 * One call per row would run B elements at a time; instead a unit of R rows is
 * run as one stretch, each repeating input read from a tile holding R
 * copies of its row (measured on [1,6,56,56,16] * [1,6,1,1,16], one
 * thread: 0.104 ms row by row, the plain [1,96,56,56] * [1,96,1,1] took
 * 0.027).
 */
#define TILE_ROW 64
#define TILE_BYTES 4096

static int tiled(const ew_walk *w)
{
    int nd = w->nd, rep = 0;
    if (nd < 2 || w->dim[nd - 1] > TILE_ROW)
        return 0;
    for (int i = 0; i < w->nin; i++) {
        int64_t s = w->stride[i][nd - 2];
        if (s == 0)
            rep |= (w->mode >> i & 1u) != 0;
        else if (!(w->mode >> i & 1u) || s != w->dim[nd - 1])
            return 0;
    }
    return rep;
}

typedef struct ew_tiles {
    const ew_walk *w;
    int64_t rows_per_unit, units_per_group; /* group: one index of dims < nd-2 */
} ew_tiles;

/* Units [start, end): R rows of one group each. */
static void tile_range(int64_t start, int64_t end, void *ctx)
{
    const ew_tiles *t = ctx;
    const ew_walk *w = t->w;
    int nd = w->nd, nin = w->nin;
    int64_t len = w->dim[nd - 1], rows = w->dim[nd - 2];
    _Alignas(64) char tile[EW_MAX_IN][TILE_BYTES];
    int64_t filled = -1; /* the group the tiles hold (same rows for all its units) */
    for (int64_t u = start; u < end; u++) {
        int64_t grp = u / t->units_per_group, r0 = u % t->units_per_group * t->rows_per_unit;
        int64_t nr = rows - r0 < t->rows_per_unit ? rows - r0 : t->rows_per_unit;
        int64_t off[EW_MAX_IN] = {0}, g = grp;
        for (int d = nd - 3; d >= 0; d--) {
            int64_t idx = g % w->dim[d];
            g /= w->dim[d];
            for (int i = 0; i < nin; i++)
                off[i] += idx * w->stride[i][d];
        }
        const void *p[EW_MAX_IN];
        for (int i = 0; i < nin; i++) {
            const char *src = w->in[i] + (size_t)(off[i] + r0 * w->stride[i][nd - 2]) * w->esize[i];
            if (w->stride[i][nd - 2] == 0 && (w->mode >> i & 1u)) {
                size_t rb = (size_t)len * w->esize[i];
                if (filled != grp) /* every unit's R rows fit: fill all R */
                    for (int64_t r = 0; r < t->rows_per_unit; r++)
                        memcpy(tile[i] + r * rb, src, rb);
                src = tile[i];
            }
            p[i] = src;
        }
        filled = grp;
        w->fn(p, w->out + (size_t)((grp * rows + r0) * len) * w->osize, nr * len, w->mode);
    }
}

/* Fills w->dim/stride with the collapsed iteration space of a. */
static void collapse(ew_walk *w, const eager_kargs *a)
{
    const graph_type *ot = a->out_type;
    int64_t st[EW_MAX_IN][GRAPH_MAX_DIMS];
    for (int i = 0; i < w->nin; i++) {
        const graph_type *t = &a->in_type[i];
        int shift = ot->ndim - t->ndim;
        int64_t s = 1;
        for (int d = ot->ndim - 1; d >= 0; d--) {
            int64_t size = d >= shift ? t->dim[d - shift] : 1;
            st[i][d] = size == 1 ? 0 : s;
            s *= size;
        }
    }
    int nd = 0;
    for (int d = 0; d < ot->ndim; d++) {
        int64_t size = ot->dim[d];
        if (size == 1)
            continue;
        int merge = nd > 0;
        for (int i = 0; i < w->nin && merge; i++)
            merge = w->stride[i][nd - 1] == st[i][d] * size;
        if (merge) {
            w->dim[nd - 1] *= size;
        } else {
            w->dim[nd] = size;
            nd++;
        }
        for (int i = 0; i < w->nin; i++)
            w->stride[i][nd - 1] = st[i][d];
    }
    w->nd = nd;
    w->mode = 0;
    for (int i = 0; i < w->nin; i++) /* the inner stride is 0 or 1 */
        w->mode |= (nd > 0 && w->stride[i][nd - 1] != 0) ? 1u << i : 0u;
}

void eager_ew_broadcast(const eager_kargs *a, ew_run_fn fn)
{
    int64_t n = graph_type_numel(a->out_type);
    if (n <= 0)
        return;
    ew_walk w;
    w.fn = fn;
    w.nin = a->nin < EW_MAX_IN ? a->nin : EW_MAX_IN;
    w.out = a->out[0];
    w.osize = graph_dtype_size(a->out_type->dtype);
    w.mode = 0;
    int flat = 1;
    for (int i = 0; i < w.nin; i++) {
        int64_t ni = graph_type_numel(&a->in_type[i]);
        w.in[i] = a->in[i];
        w.esize[i] = graph_dtype_size(a->in_type[i].dtype);
        if (ni == n)
            w.mode |= 1u << i;
        else if (ni != 1)
            flat = 0;
    }
    if (flat) {
        eager_ew_parallel(n, a->nthreads, flat_range, &w);
        return;
    }
    collapse(&w, a);
    if (tiled(&w)) {
        size_t most = 1;
        for (int i = 0; i < w.nin; i++)
            most = w.esize[i] > most ? w.esize[i] : most;
        int64_t len = w.dim[w.nd - 1], rows = w.dim[w.nd - 2];
        int64_t r = (int64_t)(TILE_BYTES / ((size_t)len * most));
        ew_tiles t = {&w, r < rows ? r : rows, 0};
        t.units_per_group = (rows + t.rows_per_unit - 1) / t.rows_per_unit;
        int64_t units = n / (rows * len) * t.units_per_group;
        /* about as many elements per unit as eager_ew_parallel's chunks */
        eager_ew_parallel_units(units, t.rows_per_unit * len, a->nthreads, tile_range, &t);
        return;
    }
    eager_ew_parallel(n, a->nthreads, walk_range, &w);
}
