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
    eager_ew_parallel(n, a->nthreads, walk_range, &w);
}
