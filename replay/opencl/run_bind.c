/*
 * run_bind.c - a session's memory for one variant (run_bind.h): each
 * value's planned buffer for this backend (view_buffers), each planned
 * buffer's steps (buffer_steps) and their sharing of the pool's slots by
 * lifetime (ocl_bind).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../graph/alloc.h"
#include "run_bind.h"
#include "../../graph/graph_impl.h"

void ocl_bound_free(obound *b)
{
    tg_free(b->slot_of);
    tg_free(b->vbuf);
    tg_free(b->need);
    tg_free(b->mem);
    tg_free(b);
}

/* Planned buffers of this backend beyond the memory plan's: one per
 * extra input or output (ocl_node.xin, xout) of any node (view_buffers). */
static int32_t extra_buffers(const ocl_plan *op)
{
    int32_t n = 0;
    for (int32_t i = 0; i < op->nnodes; i++)
        n += op->nodes[i].nxin + op->nodes[i].nxout;
    return n;
}

/* Each planned buffer's steps: [first[k], last[k]] over p->items (a
 * graph output lives to the end), with values in buffers vbuf (nb of
 * them).  An absorbed node's step touches nothing; a node's extra inputs
 * and outputs (ocl_node.xin, xout) are read and written at its step. */
static void buffer_steps(const replay_plan *p, const ocl_plan *op, int32_t nb,
                         const int32_t *vbuf, int32_t *first, int32_t *last)
{
    const graph *g = p->g;
    for (int32_t k = 0; k < nb; k++)
        first[k] = INT32_MAX, last[k] = -1;
#define TOUCH(id, t)                                                                        \
    do {                                                                                    \
        int32_t k_ = vbuf[(id)];                                                            \
        if (k_ >= 0) {                                                                      \
            first[k_] = (t) < first[k_] ? (t) : first[k_];                                  \
            last[k_] = (t) > last[k_] ? (t) : last[k_];                                     \
        }                                                                                   \
    } while (0)
    for (int32_t t = 0; t < p->nitems; t++) {
        if (p->items[t].node < 0) {
            TOUCH(g->guards[p->items[t].guard].value, t);
            continue;
        }
        const graph_node *n = &g->nodes[p->items[t].node];
        const ocl_node *on = &op->nodes[p->items[t].node];
        if (on->absorbed)
            continue;
        for (int j = 0; j < n->nin; j++)
            TOUCH(n->in[j], t);
        for (int j = 0; j < n->nout; j++)
            TOUCH(n->out[j], t);
        for (int j = 0; j < on->nxin; j++)
            TOUCH(on->xin[j], t);
        for (int j = 0; j < on->nxout; j++)
            TOUCH(on->xout[j], t);
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        TOUCH(g->outputs[i].value, p->nitems);
#undef TOUCH
}

/*
 * Each value's planned buffer for this backend (vbuf): the memory plan's,
 * except that the output of a view (reshape, flatten, squeeze, unsqueeze)
 * shares its input's buffer when no value of that buffer is written after
 * the view (its lifetime then stretches over the view's uses), so the view
 * copies nothing (the op sees the same cl_mem in and out).  On the H200 the
 * encoder's four reshape copies took a fifth of its device time.
 *
 * Before that, the nodes that another node's kernel runs (ocl_node.absorbed),
 * and a node with extra outputs (ocl_node.xout): their outputs are never
 * written and get no buffer; each extra input (ocl_node.xin) of an
 * intermediate value moves to a buffer of its own (nb0, nb0 + 1, ...,
 * nb0 = the memory plan's count): the plan shares a buffer between values
 * alive at different steps of the CPU's order, and an extra input is read
 * later than the plan knows, at its reader's step (buffer_steps stretches
 * the buffer's lifetime to there); and each extra output, written earlier
 * than the plan knows (at its writer's step, not its absorbed producer's),
 * gets a buffer of its own likewise, after the first pass took its absorbed
 * producer's outputs away.
 */
static void view_buffers(const replay_plan *p, const ocl_plan *op, const replay_variant *v,
                         int32_t nb, int32_t *vbuf, int32_t *wlast)
{
    const graph *g = p->g;
    for (int32_t i = 0; i < g->nvalues; i++)
        vbuf[i] = v->mp.buffer[i];
    int32_t fresh = v->mp.nbuffers;
    for (int32_t i = 0; i < op->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        const ocl_node *on = &op->nodes[i];
        for (int j = 0; (on->absorbed || on->nxout) && j < n->nout; j++)
            vbuf[n->out[j]] = -1;
    }
    for (int32_t i = 0; i < op->nnodes; i++) {
        const ocl_node *on = &op->nodes[i];
        for (int j = 0; j < on->nxout; j++)
            vbuf[on->xout[j]] = fresh++;
        for (int j = 0; j < on->nxin; j++) {
            int32_t id = on->xin[j];
            if (vbuf[id] >= 0 && vbuf[id] < v->mp.nbuffers)
                vbuf[id] = fresh;
            fresh++; /* used or not: extra_buffers counts every one */
        }
    }
    for (int32_t k = 0; k < nb; k++)
        wlast[k] = -1;
    for (int32_t t = 0; t < p->nitems; t++) {
        if (p->items[t].node < 0)
            continue;
        const graph_node *n = &g->nodes[p->items[t].node];
        const ocl_node *on = &op->nodes[p->items[t].node];
        for (int j = 0; j < n->nout; j++)
            if (vbuf[n->out[j]] >= 0)
                wlast[vbuf[n->out[j]]] = t;
        for (int j = 0; j < on->nxout; j++)
            wlast[vbuf[on->xout[j]]] = t;
    }
    for (int32_t t = 0; t < p->nitems; t++) {
        if (p->items[t].node < 0)
            continue;
        const graph_node *n = &g->nodes[p->items[t].node];
        if (!(graph_ops[n->op].props & GRAPH_PROP_VIEW))
            continue;
        int32_t kin = vbuf[n->in[0]], kout = vbuf[n->out[0]];
        if (kin >= 0 && kout >= 0 && kin != kout && wlast[kin] <= t)
            vbuf[n->out[0]] = kin;
    }
}

/* A planned buffer to place: its bytes and index. */
typedef struct sized {
    size_t size;
    int32_t k;
} sized;

/* Largest first; equal sizes in index order. */
static int by_size(const void *a, const void *b)
{
    const sized *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/*
 * The device memory of variant v: its planned buffers shared out over
 * slots, each slot one cl_mem of the session's pool, by greedy-by-size
 * (largest buffer first, into the smallest slot none of whose buffers is
 * alive at the same steps, else a new slot).  No sub-buffers: NVIDIA's
 * driver (H100, driver 580) crashed releasing sub-buffers of one arena
 * buffer (the mlp workload), with standalone buffers it does not; the
 * arena's offsets are still the CPU's plan.
 */
obound *ocl_bind(const replay_plan *p, const ocl_plan *op, replay_variant *v, char *err,
                 size_t errlen)
{
    const graph *g = p->g;
    for (int32_t i = 0; i < g->nvalues; i++) { /* the kernels' 32-bit indexing */
        if (graph_type_numel(&v->types[i]) > INT32_MAX) {
            char what[400] = "";
            int32_t node = g->values[i].node;
            if (node >= 0)
                replay_node_str(p, node, what, sizeof what);
            snprintf(err, errlen, "OpenCL: at these input shapes value %d has %lld elements, "
                     "more than the OpenCL kernels' 32-bit indexing allows%s%s%s", i,
                     (long long)graph_type_numel(&v->types[i]), what[0] ? " (" : "", what,
                     what[0] ? ")" : "");
            return NULL;
        }
    }
    int32_t nb = v->mp.nbuffers + extra_buffers(op);
    obound *b = tg_calloc(1, sizeof *b);
    size_t *size = tg_calloc((size_t)nb + 1, sizeof *size);
    int32_t *first = tg_calloc((size_t)nb + 1, sizeof *first);
    int32_t *last = tg_calloc((size_t)nb + 1, sizeof *last);
    sized *order = tg_calloc((size_t)nb + 1, sizeof *order);
    int32_t *next = tg_calloc((size_t)nb + 1, sizeof *next); /* a slot's buffers, listed */
    int32_t *head = tg_calloc((size_t)nb + 1, sizeof *head); /* per slot: first buffer */
    int32_t *vbuf = tg_calloc((size_t)g->nvalues + 1, sizeof *vbuf);
    if (b) {
        b->v = v;
        b->mem = tg_calloc((size_t)g->nvalues + 1, sizeof *b->mem);
        b->slot_of = tg_calloc((size_t)nb + 1, sizeof *b->slot_of);
        b->need = tg_calloc((size_t)nb + 1, sizeof *b->need);
    }
    if (!b || !b->mem || !b->slot_of || !b->need || !size || !first || !last || !order ||
        !next || !head || !vbuf) {
        tg_free(size), tg_free(first), tg_free(last), tg_free(order), tg_free(next);
        tg_free(head), tg_free(vbuf);
        if (b)
            ocl_bound_free(b);
        snprintf(err, errlen, "replay: out of memory binding the plan");
        return NULL;
    }
    view_buffers(p, op, v, nb, vbuf, first); /* first: scratch here */
    for (int32_t i = 0; i < g->nvalues; i++) {
        int32_t k = vbuf[i];
        if (k < 0)
            continue;
        size_t bytes = (size_t)graph_type_numel(&v->types[i]) * graph_dtype_size(v->types[i].dtype);
        size[k] = bytes > size[k] ? bytes : size[k];
    }
    buffer_steps(p, op, nb, vbuf, first, last);
    int32_t n = 0;
    for (int32_t k = 0; k < nb; k++) {
        b->slot_of[k] = -1;
        if (size[k])
            order[n++] = (sized){size[k], k};
    }
    qsort(order, (size_t)n, sizeof *order, by_size);
    for (int32_t r = 0; r < n; r++) {
        int32_t k = order[r].k, best = -1;
        for (int32_t j = 0; j < b->nslots; j++) {
            if (best >= 0 && b->need[j] >= b->need[best])
                continue;
            int clash = 0;
            for (int32_t m = head[j]; m >= 0 && !clash; m = next[m])
                clash = first[m] <= last[k] && first[k] <= last[m];
            if (!clash)
                best = j;
        }
        if (best < 0) {
            best = b->nslots++;
            head[best] = -1;
            b->need[best] = size[k];
        }
        next[k] = head[best];
        head[best] = k;
        b->slot_of[k] = best;
    }
    tg_free(size), tg_free(first), tg_free(last), tg_free(order), tg_free(next), tg_free(head);
    b->vbuf = vbuf;
    return b;
}
