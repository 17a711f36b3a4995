/*
 * dynamic.c - which dims follow a dynamic input dim, found by re-running
 * shape inference with every symbol set to a different size.
 *
 * A dim that changes exactly like symbol S (traced size T_S -> probe P_S)
 * is S.  A dim that changes some other way (2*B after a concat, B*H after
 * the reshape that splits attention heads) cannot be named by one symbol:
 * it is marked derived (dder) and its probe size flows on, so what is
 * computed from it still follows the symbols (the reshape that merges the
 * heads back gives B again) and a node that fixes it at its traced size
 * fails at the probe sizes.  A node whose inference fails (or changes
 * rank) at the probe sizes (a reshape to a hard-coded batch) only works
 * at the traced size: it is flagged GRAPH_NODE_SPECIALIZED, which the
 * trace summary lists and the interpreter names when a run's sizes differ.
 * graph_guard_specialized turns the flags into size guards on the
 * inputs (the ONNX importer's converters flag the nodes that take a
 * traced size, and those may infer at every size and compute wrong
 * values).
 * The tracer runs it at freeze; the optimizer after passes that make new
 * nodes (whose outputs start with no dynamic marks).
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "graph.h"
#include "graph_impl.h"

/* A probe size per symbol: distinct from each other and from small sizes. */
static int64_t probe(const graph *g, int s)
{
    return g->syms[s].traced + 1009 + 101 * (int64_t)s;
}

/* Sets out[k]'s marks from its probe type. */
static void classify_output(graph *g, const graph_node *n, int k,
                            const graph_type *probed, graph_type *ptype)
{
    graph_value *v = &g->values[n->out[k]];
    v->dyn = 0;
    v->dder = 0;
    ptype[n->out[k]] = v->type;
    for (int d = 0; d < v->type.ndim; d++) {
        if (probed->dim[d] == v->type.dim[d])
            continue;
        ptype[n->out[k]].dim[d] = probed->dim[d];
        int s = 0;
        while (s < g->nsyms && !(g->syms[s].traced == v->type.dim[d] &&
                                 probe(g, s) == probed->dim[d]))
            s++;
        if (s == g->nsyms) {
            v->dder |= 1u << d;
            continue;
        }
        v->dyn |= 1u << d;
        v->sym[d] = (int8_t)s;
    }
}

tg_status graph_propagate_dynamic(graph *g)
{
    if (!g)
        return TG_ERR_NULL;
    if (g->nsyms == 0)
        return TG_OK;
    graph_type *ptype = tg_malloc(sizeof *ptype * (size_t)(g->nvalues + 1));
    if (!ptype)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory propagating dynamic dims");
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        ptype[i] = v->type;
        for (int d = 0; d < v->type.ndim; d++)
            if (v->kind == GRAPH_VALUE_INPUT && (v->dyn >> d & 1))
                ptype[i].dim[d] = probe(g, v->sym[d]);
    }
    graph_type in[GRAPH_MAX_NODE_IO], out[GRAPH_MAX_NODE_IO];
    for (int32_t i = 0; i < g->nnodes; i++) {
        graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            in[k] = ptype[n->in[k]];
        int nout = 0;
        tg_status st = graph_infer(n->op, in, n->nin,
                                   tg_node_attrs(n),
                                   out, GRAPH_MAX_NODE_IO, &nout, NULL, 0);
        int same_rank = st == TG_OK && nout == n->nout;
        for (int k = 0; same_rank && k < nout; k++)
            same_rank = out[k].ndim == g->values[n->out[k]].type.ndim &&
                        out[k].dtype == g->values[n->out[k]].type.dtype;
        if (!same_rank) {
            n->flags |= GRAPH_NODE_SPECIALIZED;
            for (int k = 0; k < n->nout; k++) {
                g->values[n->out[k]].dyn = 0;
                g->values[n->out[k]].dder = 0;
                ptype[n->out[k]] = g->values[n->out[k]].type;
            }
            continue;
        }
        for (int k = 0; k < nout; k++)
            classify_output(g, n, k, &out[k], ptype);
    }
    tg_free(ptype);
    return TG_OK;
}

uint64_t graph_node_fixed_syms(const graph *g, int32_t i)
{
    if (!g || i < 0 || i >= g->nnodes)
        return 0;
    const graph_node *n = &g->nodes[i];
    if (!(n->flags & GRAPH_NODE_SPECIALIZED) || (n->flags & GRAPH_NODE_DEAD))
        return 0;
    uint64_t syms = 0;
    int all = 0;
    for (int k = 0; k < n->nin; k++) {
        const graph_value *v = &g->values[n->in[k]];
        all |= v->dder != 0;
        for (int d = 0; d < v->type.ndim; d++)
            if (v->dyn >> d & 1 && v->sym[d] >= 0 && v->sym[d] < 64)
                syms |= 1ull << v->sym[d];
    }
    return all || !syms ? ~0ull : syms;
}

/* The symbols some size guard of g holds already (bit s). */
static uint64_t guarded_syms(const graph *g)
{
    uint64_t done = 0;
    for (int32_t k = 0; k < g->nguards; k++) {
        const graph_guard *gd = &g->guards[k];
        const graph_value *v = &g->values[gd->value];
        if (gd->kind == GRAPH_GUARD_SIZE && gd->index >= 0 && gd->index < v->type.ndim &&
            (v->dyn >> gd->index & 1) && v->sym[gd->index] >= 0)
            done |= 1ull << (v->sym[gd->index] & 63);
    }
    return done;
}

tg_status graph_guard_syms(graph *g, uint64_t syms, int32_t prov)
{
    if (!g)
        return TG_ERR_NULL;
    syms &= ~guarded_syms(g);
    /* the first input dim that names each symbol */
    for (int32_t j = 0; syms && j < g->ninputs; j++) {
        const graph_value *v = &g->values[g->inputs[j]];
        for (int d = 0; d < v->type.ndim; d++) {
            int s = v->sym[d];
            if (!(v->dyn >> d & 1) || s < 0 || s >= 64 || !(syms >> s & 1))
                continue;
            graph_guard gd = {g->inputs[j], GRAPH_GUARD_SIZE, GRAPH_GUARD_STRICT, d,
                              (double)g->syms[s].traced, 0, prov};
            if (graph_add_guard(g, &gd) < 0)
                return graph_error_status(g);
            syms &= ~(1ull << s);
        }
    }
    return TG_OK;
}

tg_status graph_guard_specialized(graph *g)
{
    if (!g)
        return TG_ERR_NULL;
    for (int32_t i = 0; i < g->nnodes; i++) {
        uint64_t syms = graph_node_fixed_syms(g, i);
        const graph_node *n = &g->nodes[i];
        tg_status st = syms ? graph_guard_syms(g, syms, n->nprov ? n->prov[0] : -1) : TG_OK;
        if (st != TG_OK)
            return st;
    }
    return TG_OK;
}
