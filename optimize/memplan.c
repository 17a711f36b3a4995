/* memplan.c - lifetimes, in-place reuse and greedy-by-size placement. */
#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "memplan.h"
#include "opt.h"
#include "../graph/graph_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct buf {
    size_t size;
    int32_t first, last; /* steps */
    int64_t offset;
} buf;

/*
 * What replay relies on: two buffers alive at one step never share a
 * byte (TG_ASSERTS builds; pairs are checked below 4096 buffers, the
 * plans the tests make, since the check is quadratic).
 */
static void assert_disjoint(const buf *bs, int32_t n, size_t arena)
{
#ifdef TG_ASSERTS
    if (arena == (size_t)-1 || n > 4096)
        return;
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++)
            if (bs[i].first <= bs[j].last && bs[j].first <= bs[i].last)
                TG_ASSERT((size_t)bs[i].offset + bs[i].size <= (size_t)bs[j].offset ||
                          (size_t)bs[j].offset + bs[j].size <= (size_t)bs[i].offset);
#else
    (void)bs;
    (void)n;
    (void)arena;
#endif
}

/* The largest arena a plan may have: every value is within the size cap
 * (2^43 bytes), but a graph with many of them alive at once could add
 * offsets past int64 (the plan then fails as out of memory). */
#define PLAN_MAX_BYTES (UINT64_C(1) << 62)

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

/* Sort key: size descending, then (the other orders) tie, then buffer id
 * (deterministic). */
typedef struct size_key {
    size_t size;
    int64_t tie; /* 0 in the first order */
    int32_t id;
} size_key;

static int by_size_desc(const void *a, const void *b)
{
    const size_key *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    if (x->tie != y->tie)
        return x->tie < y->tie ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/*
 * Placement needs, for each buffer b, the offsets taken by the buffers
 * already placed whose lifetimes meet b's: a scan of every placed buffer
 * (and a sort of those alive with b) made that O(n^2 log n) for n buffers
 * alive at once.  Instead, a segment tree over the steps keeps *runs*
 * (maximal [start, end) offset ranges, merged as they touch) of the
 * placed buffers: cover[v] holds the buffers whose step range has node v
 * in its canonical decomposition, sub[v] those of node v's subtree (added
 * to every node on the paths from the range's ends to the root).  The
 * buffers that meet steps [f, l] are those of sub[c] for the canonical
 * nodes c of [f, l] and of cover[u] for the nodes u above them, all on the
 * paths from leaves f and l to the root: O(log steps) lists, whose runs
 * give the same gaps as the buffers themselves.  Buffers placed side by
 * side (the common case) make one run, so a query costs O(log^2 n) rather
 * than O(buffers alive).
 */
typedef struct runs {
    int64_t *r; /* start, end pairs: the first `sorted` sorted, disjoint,
                   not touching; then new ones in any order */
    int32_t n, cap, sorted;
} runs;

/* Totals of the buffers given to a tree node's cover (the stab totals). */
typedef struct stab {
    uint64_t bytes; /* aligned, saturating */
    int64_t lo, hi; /* lowest offset, highest end */
    int32_t count;
} stab;

typedef struct seg {
    int32_t leaves;      /* a power of two >= steps */
    int32_t *cover, *sub; /* per tree node: index into lists, 0 = none */
    runs *lists;
    int32_t nlists, cap_lists;
    stab *st;         /* per tree node, over its cover */
    int32_t *firsts;  /* Fenwick tree: placed buffers by first step */
} seg;

static int seg_init(seg *t, int32_t steps)
{
    memset(t, 0, sizeof *t);
    t->leaves = 1;
    while (t->leaves < steps)
        t->leaves *= 2;
    t->cover = tg_calloc((size_t)t->leaves * 2, sizeof(int32_t));
    t->sub = tg_calloc((size_t)t->leaves * 2, sizeof(int32_t));
    t->cap_lists = 64;
    t->nlists = 1; /* 0 means none */
    t->lists = tg_calloc((size_t)t->cap_lists, sizeof(runs));
    t->st = tg_calloc((size_t)t->leaves * 2, sizeof(stab));
    t->firsts = tg_calloc((size_t)t->leaves + 1, sizeof(int32_t));
    return t->cover && t->sub && t->lists && t->st && t->firsts ? 0 : -1;
}

static void seg_free(seg *t)
{
    for (int32_t i = 1; i < t->nlists; i++)
        tg_free(t->lists[i].r);
    tg_free(t->lists);
    tg_free(t->cover);
    tg_free(t->sub);
    tg_free(t->st);
    tg_free(t->firsts);
}

static void stab_add(stab *s, int64_t a, int64_t e)
{
    uint64_t n = (uint64_t)(e - a);
    s->bytes = s->bytes > UINT64_MAX - n ? UINT64_MAX : s->bytes + n;
    if (!s->count || a < s->lo)
        s->lo = a;
    if (!s->count || e > s->hi)
        s->hi = e;
    s->count++;
}

/* The placed buffers alive at step t: count, bytes, lowest offset, highest end. */
static stab stab_at(const seg *t, int32_t step)
{
    stab r = {0, 0, 0, 0};
    for (int32_t v = step + t->leaves; v; v >>= 1) {
        const stab *s = &t->st[v];
        if (!s->count)
            continue;
        r.bytes = r.bytes > UINT64_MAX - s->bytes ? UINT64_MAX : r.bytes + s->bytes;
        if (!r.count || s->lo < r.lo)
            r.lo = s->lo;
        if (!r.count || s->hi > r.hi)
            r.hi = s->hi;
        r.count += s->count;
    }
    return r;
}

/* Placed buffers whose first step is below step. */
static int32_t firsts_below(const seg *t, int32_t step)
{
    int32_t n = 0;
    for (int32_t i = step; i > 0; i -= i & -i)
        n += t->firsts[i];
    return n;
}

static int by_start(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Sorts a list's tail of new runs and merges it with its sorted head:
 * runs that overlap or touch become one. */
static int runs_normalize(runs *l)
{
    if (l->sorted == l->n)
        return 0;
    qsort(l->r + 2 * l->sorted, (size_t)(l->n - l->sorted), sizeof(int64_t) * 2, by_start);
    int64_t *m = tg_malloc(sizeof(int64_t) * 2 * (size_t)l->n);
    if (!m)
        return -1;
    int32_t i = 0, j = l->sorted, k = 0;
    while (i < l->sorted || j < l->n) {
        int32_t p = j >= l->n || (i < l->sorted && l->r[2 * i] <= l->r[2 * j]) ? i++ : j++;
        if (k && l->r[2 * p] <= m[2 * k - 1]) {
            if (l->r[2 * p + 1] > m[2 * k - 1])
                m[2 * k - 1] = l->r[2 * p + 1];
        } else {
            m[2 * k] = l->r[2 * p];
            m[2 * k + 1] = l->r[2 * p + 1];
            k++;
        }
    }
    memcpy(l->r, m, sizeof(int64_t) * 2 * (size_t)k);
    tg_free(m);
    l->n = l->sorted = k;
    return 0;
}

/* Adds [a, e) to the list *slot (made on first use).  New runs are
 * appended, and merged in when the tail outgrows the head (or the list is
 * read): O(log) amortized, where a sorted insert moved the whole list. */
static int runs_add(seg *t, int32_t *slot, int64_t a, int64_t e)
{
    if (!*slot) {
        if (t->nlists == t->cap_lists) {
            runs *l = tg_realloc(t->lists, sizeof(runs) * (size_t)t->cap_lists * 2);
            if (!l)
                return -1;
            memset(l + t->cap_lists, 0, sizeof(runs) * (size_t)t->cap_lists);
            t->lists = l;
            t->cap_lists *= 2;
        }
        *slot = t->nlists++;
    }
    runs *l = &t->lists[*slot];
    if (l->n && l->r[2 * l->n - 1] == a && l->sorted == l->n) {
        l->r[2 * l->n - 1] = e; /* side by side with the last run */
        return 0;
    }
    if (l->n == l->cap) {
        if (l->n - l->sorted > l->sorted / 2 + 8) {
            if (runs_normalize(l) < 0)
                return -1;
        }
        if (l->n == l->cap) {
            int32_t cap = l->cap ? l->cap * 2 : 2;
            int64_t *r = tg_realloc(l->r, sizeof(int64_t) * 2 * (size_t)cap);
            if (!r)
                return -1;
            l->r = r;
            l->cap = cap;
        }
    }
    l->r[2 * l->n] = a;
    l->r[2 * l->n + 1] = e;
    l->n++;
    return 0;
}

/* Records a buffer alive over steps [f, l] at offsets [a, e). */
static int seg_insert(seg *t, int32_t f, int32_t l, int64_t a, int64_t e)
{
    for (int32_t i = f + 1; i <= t->leaves; i += i & -i)
        t->firsts[i]++;
    for (int32_t lo = f + t->leaves, hi = l + t->leaves + 1; lo < hi; lo >>= 1, hi >>= 1) {
        if (lo & 1)
            stab_add(&t->st[lo++], a, e);
        if (hi & 1)
            stab_add(&t->st[hi - 1], a, e);
    }
    for (int32_t lo = f + t->leaves, hi = l + t->leaves + 1; lo < hi; lo >>= 1, hi >>= 1) {
        if (lo & 1) {
            if (runs_add(t, &t->cover[lo], a, e) < 0 || runs_add(t, &t->sub[lo], a, e) < 0)
                return -1;
            lo++;
        }
        if (hi & 1) {
            hi--;
            if (runs_add(t, &t->cover[hi], a, e) < 0 || runs_add(t, &t->sub[hi], a, e) < 0)
                return -1;
        }
    }
    for (int32_t v = (f + t->leaves) >> 1; v; v >>= 1)
        if (runs_add(t, &t->sub[v], a, e) < 0)
            return -1;
    for (int32_t v = (l + t->leaves) >> 1; v; v >>= 1)
        if (runs_add(t, &t->sub[v], a, e) < 0)
            return -1;
    return 0;
}

/* Appends list slot's runs to *q (grown as needed). */
static int gather(seg *t, int32_t slot, int64_t **q, size_t *nq, size_t *cap)
{
    if (!slot)
        return 0;
    runs *l = &t->lists[slot];
    if (runs_normalize(l) < 0)
        return -1;
    if (*nq + (size_t)l->n > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < *nq + (size_t)l->n)
            c *= 2;
        int64_t *p = tg_realloc(*q, sizeof(int64_t) * 2 * c);
        if (!p)
            return -1;
        *q = p;
        *cap = c;
    }
    memcpy(*q + 2 * *nq, l->r, sizeof(int64_t) * 2 * (size_t)l->n);
    *nq += (size_t)l->n;
    return 0;
}

static size_t place_order(const opt_memplan_buf *bs, int32_t n, size_t align, int64_t *offset,
                          uint64_t *work, int order);

size_t opt_memplan_place(const opt_memplan_buf *bs, int32_t n, size_t align,
                         int64_t *offset, uint64_t *work)
{
    return place_order(bs, n, align, offset, work, 0);
}

/* order: equal sizes placed by id (0), longest-lived first (1), or
 * latest-born first (2). */
static size_t place_order(const opt_memplan_buf *bs, int32_t n, size_t align, int64_t *offset,
                          uint64_t *work, int order)
{
    if (align < OPT_ARENA_ALIGN || (align & (align - 1)))
        align = OPT_ARENA_ALIGN;
    int32_t steps = 1;
    for (int32_t i = 0; i < n; i++)
        if (bs[i].last + 1 > steps)
            steps = bs[i].last + 1;
    size_key *ids = tg_malloc(sizeof *ids * (size_t)(n + 1));
    int64_t *q = NULL;
    size_t total = 0, nq = 0, capq = 0;
    uint64_t examined = 0;
    seg t;
    if (seg_init(&t, steps) < 0 || !ids)
        goto oom;
    for (int32_t i = 0; i < n; i++)
        ids[i] = (size_key){bs[i].size,
                            order == 1   ? (int64_t)bs[i].last - bs[i].first
                            : order == 2 ? (int64_t)bs[i].first
                                         : 0,
                            i};
    qsort(ids, (size_t)n, sizeof *ids, by_size_desc);
    for (int32_t k = 0; k < n; k++) {
        const opt_memplan_buf *b = &bs[ids[k].id];
        int32_t f = b->first, l = b->last;
        TG_ASSERT(0 <= f && f <= l && l < steps); /* the segment tree's leaves */
        if (!b->size) { /* no bytes: anywhere will do */
            offset[ids[k].id] = 0;
            continue;
        }
        /* Every placed buffer that meets [f, l] alive at step f (or l):
         * they are alive together, so they cannot overlap, and when their
         * bytes fill their span it is one run, found without the lists
         * (n outputs, or a wide layer read by one node at the end). */
        int32_t meet = firsts_below(&t, l + 1) - firsts_below(&t, f + 1);
        stab sf = stab_at(&t, f), sl = stab_at(&t, l), *one = NULL;
        meet += sf.count; /* alive at f, or first in (f, l] */
        if (sl.count == meet)
            one = &sl;
        else if (sf.count == meet)
            one = &sf;
        if (one && (!one->count || one->bytes == (uint64_t)(one->hi - one->lo))) {
            int64_t at = !one->count ? 0
                         : (uint64_t)one->lo >= b->size ? 0 : one->hi;
            if ((uint64_t)at > PLAN_MAX_BYTES - align_up(b->size, align))
                goto oom; /* no arena that large (a file with many huge values) */
            size_t end = (size_t)at + align_up(b->size, align);
            TG_ASSERT(at % (int64_t)align == 0);
            offset[ids[k].id] = at;
            examined++;
            if (seg_insert(&t, f, l, at, (int64_t)end) < 0)
                goto oom;
            if (end > total)
                total = end;
            continue;
        }
        /* The runs of every placed buffer alive at some step of [f, l]. */
        nq = 0;
        for (int32_t lo = f + t.leaves, hi = l + t.leaves + 1; lo < hi; lo >>= 1, hi >>= 1) {
            if (lo & 1 && gather(&t, t.sub[lo++], &q, &nq, &capq) < 0)
                goto oom;
            if (hi & 1 && gather(&t, t.sub[--hi], &q, &nq, &capq) < 0)
                goto oom;
        }
        for (int32_t v = f + t.leaves; v; v >>= 1)
            if (gather(&t, t.cover[v], &q, &nq, &capq) < 0)
                goto oom;
        for (int32_t v = l + t.leaves; v; v >>= 1)
            if (gather(&t, t.cover[v], &q, &nq, &capq) < 0)
                goto oom;
        qsort(q, nq, sizeof(int64_t) * 2, by_start);
        examined += nq;
        /* Best fit: the smallest gap between them that holds b (the
         * lowest of equal ones), else above them all. */
        int64_t best = -1, prev_end = 0;
        size_t best_gap = (size_t)-1;
        for (size_t j = 0; j < nq; j++) {
            if (q[2 * j] >= prev_end) {
                size_t gap = (size_t)(q[2 * j] - prev_end);
                if (gap >= b->size && gap < best_gap) {
                    best_gap = gap;
                    best = prev_end;
                }
            }
            if (q[2 * j + 1] > prev_end)
                prev_end = q[2 * j + 1];
        }
        int64_t at = best >= 0 ? best : prev_end;
        if ((uint64_t)at > PLAN_MAX_BYTES - align_up(b->size, align))
            goto oom; /* no arena that large (a file with many huge values) */
        size_t end = (size_t)at + align_up(b->size, align);
        TG_ASSERT(at % (int64_t)align == 0);
        offset[ids[k].id] = at;
        if (seg_insert(&t, f, l, at, (int64_t)end) < 0)
            goto oom;
        if (end > total)
            total = end;
    }
    tg_free(ids);
    tg_free(q);
    seg_free(&t);
    if (work)
        *work = examined;
    return total;
oom:
    tg_free(ids);
    tg_free(q);
    seg_free(&t);
    return (size_t)-1;
}

size_t opt_memplan_place_best(const opt_memplan_buf *bs, int32_t n, size_t align, size_t lb,
                              int64_t *offset, uint64_t *work)
{
    size_t total = place_order(bs, n, align, offset, work, 0);
    if (total == (size_t)-1 || total <= lb)
        return total;
    int64_t *off2 = tg_malloc(sizeof *off2 * (size_t)(n + 1));
    if (!off2)
        return total; /* the first placement stands */
    for (int order = 1; order <= 2 && total > lb; order++) {
        uint64_t w2 = 0;
        size_t t2 = place_order(bs, n, align, off2, &w2, order);
        if (work)
            *work += w2;
        if (t2 < total) {
            total = t2;
            memcpy(offset, off2, sizeof *offset * (size_t)n);
        }
    }
    tg_free(off2);
    return total;
}

/* The buffers' offsets and the arena size (opt_memplan_place_best; the
 * CNN's -O2 training step: 27.4 MB by the first order, 26.5 MB, its
 * lower bound, by the third). */
static size_t place(buf *bs, int32_t n, size_t align, size_t lb, uint64_t *work)
{
    opt_memplan_buf *pb = tg_malloc(sizeof *pb * (size_t)(n + 1));
    int64_t *off = tg_malloc(sizeof *off * (size_t)(n + 1));
    size_t total = (size_t)-1;
    if (pb && off) {
        for (int32_t i = 0; i < n; i++)
            pb[i] = (opt_memplan_buf){bs[i].size, bs[i].first, bs[i].last};
        total = opt_memplan_place_best(pb, n, align, lb, off, work);
        for (int32_t i = 0; i < n && total != (size_t)-1; i++)
            bs[i].offset = off[i];
    }
    tg_free(pb);
    tg_free(off);
    return total;
}

/* Largest sum of (aligned) bytes alive at one step. */
static size_t lower_bound(const buf *bs, int32_t n, int32_t nsteps, size_t align)
{
    size_t best = 0;
    /* unsigned: the sums wrap instead of overflowing when a hostile graph
     * has many huge values (the placement refuses those) */
    uint64_t *delta = tg_calloc((size_t)nsteps + 2, sizeof *delta);
    if (!delta)
        return 0;
    for (int32_t i = 0; i < n; i++) {
        delta[bs[i].first] += align_up(bs[i].size, align);
        delta[bs[i].last + 1] -= align_up(bs[i].size, align);
    }
    uint64_t cur = 0;
    for (int32_t s = 0; s <= nsteps; s++) {
        cur += delta[s];
        if ((size_t)cur > best)
            best = (size_t)cur;
    }
    tg_free(delta);
    return best;
}

/* Whether node n may write its output k over its input j in place. */
static int writes_over(const graph *g, const graph_node *n, int k, int j)
{
    if (n->op == GRAPH_OP_sgd_step)
        return (k == 0 && j == 0) || (k == 1 && j == 2);
    if (n->op == GRAPH_OP_adamw_step)
        return (k == 0 && j == 0) || (k == 1 && j == 2) || (k == 2 && j == 3);
    if (n->op == GRAPH_OP_batch_norm_train) /* the running statistics, per channel */
        return (k == 1 && j == 3) || (k == 2 && j == 4);
    return k == 0 && (graph_ops[n->op].props & GRAPH_PROP_ELEMENTWISE) &&
           graph_type_numel(&g->values[n->in[j]].type) ==
               graph_type_numel(&g->values[n->out[k]].type) &&
           graph_dtype_size(g->values[n->in[j]].type.dtype) ==
               graph_dtype_size(g->values[n->out[k]].type.dtype);
}

int32_t *opt_state_in_place(const graph *g)
{
    int32_t *at = tg_malloc(sizeof(int32_t) * ((size_t)g->nvalues + 1));
    int32_t *pos = tg_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1));
    if (!at || !pos) {
        tg_free(at);
        tg_free(pos);
        return NULL;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        at[v] = -1;
    for (int32_t i = 0, k = 0; i < g->nnodes; i++)
        pos[i] = g->nodes[i].flags & GRAPH_NODE_DEAD ? -1 : k++;
    for (int32_t i = 0; i < g->nstates; i++) {
        int32_t v = g->states[i].value, nx = g->states[i].next;
        const graph_value *nv = &g->values[nx];
        if (nx == v || nv->kind != GRAPH_VALUE_INTER || nv->node < 0 || pos[nv->node] < 0 ||
            at[nx] >= 0)
            continue;
        int ok = 1;
        for (int32_t o = 0; ok && o < g->noutputs; o++)
            ok = g->outputs[o].value != nx && g->outputs[o].value != v;
        for (int32_t o = 0; ok && o < g->nstates; o++)
            ok = o == i || g->states[o].next != nx;
        for (int32_t q = 0; ok && q < g->nguards; q++)
            ok = g->guards[q].value != v && g->guards[q].value != nx;
        const graph_node *P = &g->nodes[nv->node];
        for (int32_t n = 0; ok && n < g->nnodes; n++) {
            const graph_node *r = &g->nodes[n];
            if (pos[n] < 0)
                continue;
            for (int j = 0; ok && j < r->nin; j++)
                if (r->in[j] == v)
                    ok = n == nv->node ? writes_over(g, P, nv->out_index, j)
                                       : pos[n] < pos[nv->node];
        }
        if (ok)
            at[nx] = i;
    }
    tg_free(pos);
    return at;
}

/* Value lifetimes: step of definition and of last use (by buffer). */
static tg_status lifetimes(const graph *g, const graph_type *types,
                           int allow_inplace, size_t align, opt_memplan *mp,
                           buf **out_bufs, int32_t *nsteps_out)
{
    int32_t nv = g->nvalues, nb = 0, step = 0;
    int32_t *last = tg_malloc(sizeof(int32_t) * (size_t)(nv + 1));
    buf *bs = tg_malloc(sizeof(buf) * (size_t)(nv + 1));
    if (!last || !bs) {
        tg_free(last);
        tg_free(bs);
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
    for (int32_t k = 0; k < g->nstates; k++)
        last[g->states[k].next] = step; /* copied into the state after the last step */
    /* next values computed into their state's buffer take no arena */
    int32_t *outside = g->nstates ? opt_state_in_place(g) : NULL;
    if (g->nstates && !outside) {
        tg_free(last);
        tg_free(bs);
        return TG_ERR_NOMEM;
    }
    for (int32_t i = 0, s = 0; i < g->nnodes; i++, s++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD) {
            s--;
            continue;
        }
        /* Nodes run in order: an intermediate a node reads was placed at
         * its producer's earlier step (and its lifetime reaches this one). */
        for (int k = 0; k < n->nin; k++)
            TG_ASSERT(g->values[n->in[k]].kind != GRAPH_VALUE_INTER ||
                      (outside && outside[n->in[k]] >= 0) ||
                      (mp->buffer[n->in[k]] >= 0 && bs[mp->buffer[n->in[k]]].first < s &&
                       bs[mp->buffer[n->in[k]]].last >= s));
        for (int k = 0; k < n->nout; k++) {
            int32_t v = n->out[k];
            size_t bytes = type_bytes(types ? &types[v] : &g->values[v].type);
            if (outside && outside[v] >= 0) {
                mp->naive_bytes += align_up(bytes, align); /* counted, not placed */
                continue;
            }
            int32_t reuse = -1;
            /* A view (reshape, flatten, squeeze, unsqueeze: the same bytes
             * in the same order) shares its input's buffer for as long as
             * either lives; its kernel's copy is then to itself, skipped. */
            if (allow_inplace && k == 0 && (graph_ops[n->op].props & GRAPH_PROP_VIEW) &&
                n->nin >= 1 && mp->buffer[n->in[0]] >= 0 &&
                bs[mp->buffer[n->in[0]]].size == bytes) {
                int32_t b = mp->buffer[n->in[0]];
                mp->buffer[v] = b;
                if (last[v] > bs[b].last)
                    bs[b].last = last[v];
                if (s > bs[b].last)
                    bs[b].last = s;
                mp->inplace++;
                mp->naive_bytes += align_up(bytes, align);
                continue;
            }
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
                TG_ASSERT(reuse < nb && bs[reuse].size == bytes); /* v fits where u was */
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
    tg_free(last);
    tg_free(outside);
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
    mp->offset = tg_malloc(sizeof(int64_t) * (size_t)(g->nvalues + 1));
    mp->buffer = tg_malloc(sizeof(int32_t) * (size_t)(g->nvalues + 1));
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
    mp->lower_bound = lower_bound(bs, mp->nbuffers, nsteps, align);
    mp->arena_bytes = place(bs, mp->nbuffers, align, mp->lower_bound, &mp->place_work);
    assert_disjoint(bs, mp->nbuffers, mp->arena_bytes);
    if (mp->arena_bytes == (size_t)-1) {
        tg_free(bs);
        opt_memplan_free(mp);
        return TG_ERR_NOMEM;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        if (mp->buffer[v] >= 0) {
            const buf *b = &bs[mp->buffer[v]];
            /* Replay binds each value at its offset: the buffer lies in the arena. */
            TG_ASSERT(b->offset >= 0 && (size_t)b->offset + b->size <= mp->arena_bytes);
            mp->offset[v] = b->offset;
        }
    tg_free(bs);
    return TG_OK;
}

void opt_memplan_free(opt_memplan *mp)
{
    tg_free(mp->offset);
    tg_free(mp->buffer);
    mp->offset = NULL;
    mp->buffer = NULL;
}

tg_status opt_memory_plan(const graph *g, opt_memory *out, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!g || !out) {
        snprintf(err, errlen, "opt_memory_plan: %s is NULL", g ? "out" : "the graph");
        return TG_ERR_NULL;
    }
    opt_memplan mp;
    if (opt_memplan_build(g, NULL, 1, &mp) != TG_OK) {
        snprintf(err, errlen, "opt_memory_plan: out of memory");
        return TG_ERR_NOMEM;
    }
    *out = (opt_memory){mp.naive_bytes, mp.lower_bound, mp.arena_bytes, mp.inplace};
    opt_memplan_free(&mp);
    return TG_OK;
}
