/* memplan.c - lifetimes, in-place reuse and greedy-by-size placement. */
#include "memplan.h"

#include <stdlib.h>
#include <string.h>

typedef struct buf {
    size_t size;
    int32_t first, last; /* steps */
    int64_t offset;
} buf;

/* align: a power of two >= OPT_ARENA_ALIGN (OpenCL sub-buffers need the
 * device's base-address alignment, e.g. 128 bytes on PoCL). */
static size_t align_up(size_t n, size_t align)
{
    return (n + align - 1) & ~(align - 1);
}

static size_t type_bytes(const graph_type *t)
{
    return (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
}

static int by_size_desc(const void *a, const void *b, void *ctx)
{
    const buf *bs = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (bs[x].size != bs[y].size)
        return bs[x].size < bs[y].size ? 1 : -1;
    return x - y; /* deterministic */
}

/* qsort_r is a GNU extension; a small insertion-merge sort keeps C11. */
static void sort_ids(int32_t *ids, int32_t n, const buf *bs)
{
    for (int32_t i = 1; i < n; i++) {
        int32_t v = ids[i], j = i - 1;
        while (j >= 0 && by_size_desc(&ids[j], &v, (void *)bs) > 0) {
            ids[j + 1] = ids[j];
            j--;
        }
        ids[j + 1] = v;
    }
}

static int by_offset(const void *a, const void *b)
{
    const buf *x = *(buf *const *)a, *y = *(buf *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Greedy by size: returns the arena size. */
static size_t place(buf *bs, int32_t n, size_t align)
{
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
    buf **live = malloc(sizeof(buf *) * (size_t)(n + 1));
    size_t total = 0;
    if (!ids || !live) {
        free(ids);
        free(live);
        return (size_t)-1;
    }
    for (int32_t i = 0; i < n; i++) {
        ids[i] = i;
        bs[i].offset = -1;
    }
    sort_ids(ids, n, bs);
    for (int32_t k = 0; k < n; k++) {
        buf *b = &bs[ids[k]];
        int32_t nl = 0;
        for (int32_t j = 0; j < k; j++) {
            buf *o = &bs[ids[j]];
            if (o->first <= b->last && b->first <= o->last)
                live[nl++] = o;
        }
        qsort(live, (size_t)nl, sizeof *live, by_offset);
        /* Best fit: the smallest gap between live buffers that holds b. */
        int64_t best = -1, prev_end = 0;
        size_t best_gap = (size_t)-1;
        for (int32_t j = 0; j < nl; j++) {
            if (live[j]->offset >= prev_end) {
                size_t gap = (size_t)(live[j]->offset - prev_end);
                if (gap >= b->size && gap < best_gap) {
                    best_gap = gap;
                    best = prev_end;
                }
            }
            int64_t end = live[j]->offset + (int64_t)align_up(live[j]->size, align);
            if (end > prev_end)
                prev_end = end;
        }
        b->offset = best >= 0 ? best : prev_end;
        size_t end = (size_t)b->offset + align_up(b->size, align);
        if (end > total)
            total = end;
    }
    free(ids);
    free(live);
    return total;
}

/* Largest sum of (aligned) bytes alive at one step. */
static size_t lower_bound(const buf *bs, int32_t n, int32_t nsteps, size_t align)
{
    size_t best = 0;
    int64_t *delta = calloc((size_t)nsteps + 2, sizeof *delta);
    if (!delta)
        return 0;
    for (int32_t i = 0; i < n; i++) {
        delta[bs[i].first] += (int64_t)align_up(bs[i].size, align);
        delta[bs[i].last + 1] -= (int64_t)align_up(bs[i].size, align);
    }
    int64_t cur = 0;
    for (int32_t s = 0; s <= nsteps; s++) {
        cur += delta[s];
        if ((size_t)cur > best)
            best = (size_t)cur;
    }
    free(delta);
    return best;
}

/* Value lifetimes: step of definition and of last use (by buffer). */
static tg_status lifetimes(const graph *g, const graph_type *types,
                           int allow_inplace, size_t align, opt_memplan *mp,
                           buf **out_bufs, int32_t *nsteps_out)
{
    int32_t nv = g->nvalues, nb = 0, step = 0;
    int32_t *last = malloc(sizeof(int32_t) * (size_t)(nv + 1));
    buf *bs = malloc(sizeof(buf) * (size_t)(nv + 1));
    if (!last || !bs) {
        free(last);
        free(bs);
        return TG_ERR_NOMEM;
    }
    for (int32_t v = 0; v < nv; v++)
        last[v] = -1;
    for (int32_t i = 0, s = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            last[n->in[k]] = s;
        s++;
        step = s;
    }
    for (int32_t k = 0; k < g->noutputs; k++)
        last[g->outputs[k].value] = step; /* outputs live past the last step */
    for (int32_t i = 0, s = 0; i < g->nnodes; i++, s++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD) {
            s--;
            continue;
        }
        for (int k = 0; k < n->nout; k++) {
            int32_t v = n->out[k];
            size_t bytes = type_bytes(types ? &types[v] : &g->values[v].type);
            int32_t reuse = -1;
            if (allow_inplace && k == 0 && (graph_ops[n->op].props & GRAPH_PROP_ELEMENTWISE)) {
                for (int j = 0; j < n->nin && reuse < 0; j++) {
                    int32_t u = n->in[j];
                    int32_t b = mp->buffer[u];
                    const graph_type *tu = types ? &types[u] : &g->values[u].type;
                    const graph_type *tv = types ? &types[v] : &g->values[v].type;
                    /* Same element size and count: the kernel reads
                     * element i before it writes element i. */
                    if (b >= 0 && last[u] == s && bs[b].last == s &&
                        graph_type_numel(tu) == graph_type_numel(tv) &&
                        graph_dtype_size(tu->dtype) == graph_dtype_size(tv->dtype))
                        reuse = b;
                }
            }
            if (reuse >= 0) {
                mp->buffer[v] = reuse;
                bs[reuse].last = last[v] > s ? last[v] : s;
                mp->inplace++;
            } else {
                bs[nb].size = bytes;
                bs[nb].first = s;
                bs[nb].last = last[v] > s ? last[v] : s;
                mp->buffer[v] = nb++;
            }
            mp->naive_bytes += align_up(bytes, align);
        }
    }
    free(last);
    mp->nbuffers = nb;
    *out_bufs = bs;
    *nsteps_out = step;
    return TG_OK;
}

tg_status opt_memplan_build(const graph *g, const graph_type *types,
                            int allow_inplace, opt_memplan *mp)
{
    return opt_memplan_build_aligned(g, types, allow_inplace, OPT_ARENA_ALIGN, mp);
}

tg_status opt_memplan_build_aligned(const graph *g, const graph_type *types,
                                    int allow_inplace, size_t align, opt_memplan *mp)
{
    if (align < OPT_ARENA_ALIGN || (align & (align - 1)))
        align = OPT_ARENA_ALIGN;
    memset(mp, 0, sizeof *mp);
    mp->nvalues = g->nvalues;
    mp->offset = malloc(sizeof(int64_t) * (size_t)(g->nvalues + 1));
    mp->buffer = malloc(sizeof(int32_t) * (size_t)(g->nvalues + 1));
    if (!mp->offset || !mp->buffer) {
        opt_memplan_free(mp);
        return TG_ERR_NOMEM;
    }
    for (int32_t v = 0; v < g->nvalues; v++) {
        mp->offset[v] = -1;
        mp->buffer[v] = -1;
    }
    buf *bs = NULL;
    int32_t nsteps = 0;
    tg_status st = lifetimes(g, types, allow_inplace, align, mp, &bs, &nsteps);
    if (st != TG_OK) {
        opt_memplan_free(mp);
        return st;
    }
    mp->arena_bytes = place(bs, mp->nbuffers, align);
    mp->lower_bound = lower_bound(bs, mp->nbuffers, nsteps, align);
    if (mp->arena_bytes == (size_t)-1) {
        free(bs);
        opt_memplan_free(mp);
        return TG_ERR_NOMEM;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        if (mp->buffer[v] >= 0)
            mp->offset[v] = bs[mp->buffer[v]].offset;
    free(bs);
    return TG_OK;
}

void opt_memplan_free(opt_memplan *mp)
{
    free(mp->offset);
    free(mp->buffer);
    mp->offset = NULL;
    mp->buffer = NULL;
}
