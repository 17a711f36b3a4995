/* graph_edit.c - deep copy and compaction of graphs. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "errors.h"
#include "graph.h"
#include "graph_impl.h"

/* Re-interns a string of src into dst (NULL stays NULL). */
static int reintern(graph *dst, const char **s)
{
    if (!*s)
        return 0;
    *s = graph_intern(dst, *s, -1);
    return *s ? 0 : -1;
}

/* c's array ARR gets a copy of g's count entries (stable storage, so the
 * copies do not move either). */
#define DUP(field, ARR, count)                                                \
    do {                                                                      \
        if (graph_grow_array(c, GRAPH_ARRAY_##ARR, g->count) != TG_OK)        \
            goto oom;                                                         \
        if (g->count)                                                         \
            memcpy(c->field, g->field, sizeof *g->field * (size_t)g->count);  \
        c->count = g->count;                                                  \
    } while (0)

graph *graph_clone(const graph *g)
{
    if (!g)
        return NULL;
    graph *c = graph_new(g->name);
    if (!c)
        return NULL;
    DUP(values, VALUES, nvalues);
    for (int32_t i = 0; i < c->nvalues; i++)
        c->values[i].data = NULL; /* in case we bail out below */
    DUP(nodes, NODES, nnodes);
    for (int32_t i = 0; i < c->nnodes; i++)
        c->nodes[i].in = c->nodes[i].out = c->nodes[i].prov = NULL, c->nodes[i].attrs = NULL,
        c->nodes[i].cap_prov = 0;
    DUP(inputs, INPUTS, ninputs);
    DUP(outputs, OUTPUTS, noutputs);
    DUP(provs, PROVS, nprovs);
    DUP(frames, FRAMES, nframes);
    DUP(guards, GUARDS, nguards);
    DUP(syms, SYMS, nsyms);
    for (int32_t i = 0; i < c->nvalues; i++) {
        graph_value *v = &c->values[i];
        const graph_value *s = &g->values[i];
        if (reintern(c, &v->name) < 0)
            goto oom;
        if (s->data) {
            size_t nb = graph_value_nbytes(s);
            v->data = tg_aligned_alloc(64, (nb + 63) & ~(size_t)63);
            if (!v->data)
                goto oom;
            memcpy(v->data, s->data, nb);
        }
    }
    for (int32_t i = 0; i < c->nnodes; i++) {
        graph_node *n = &c->nodes[i];
        const graph_node *s = &g->nodes[i];
        if (s->attrs) {
            n->attrs = graph_alloc_bytes(c, graph_ops[s->op].attr_size);
            if (!n->attrs)
                goto oom;
            memcpy(n->attrs, s->attrs, graph_ops[s->op].attr_size);
        }
        n->in = graph_alloc_ids(c, s->nin);
        n->out = graph_alloc_ids(c, s->nout);
        n->prov = graph_alloc_ids(c, s->nprov);
        if (!n->in || !n->out || !n->prov)
            goto oom;
        memcpy(n->in, s->in, sizeof(int32_t) * (size_t)s->nin);
        memcpy(n->out, s->out, sizeof(int32_t) * (size_t)s->nout);
        if (s->nprov)
            memcpy(n->prov, s->prov, sizeof(int32_t) * (size_t)s->nprov);
    }
    for (int32_t i = 0; i < c->noutputs; i++)
        if (reintern(c, &c->outputs[i].name) < 0)
            goto oom;
    for (int32_t i = 0; i < c->nprovs; i++)
        if (reintern(c, &c->provs[i].file) < 0 || reintern(c, &c->provs[i].func) < 0)
            goto oom;
    for (int32_t i = 0; i < c->nframes; i++)
        if (reintern(c, &c->frames[i].func) < 0 || reintern(c, &c->frames[i].file) < 0)
            goto oom;
    for (int32_t i = 0; i < c->nsyms; i++)
        if (reintern(c, &c->syms[i].name) < 0)
            goto oom;
    c->target = g->target;
    if (reintern(c, &c->target) < 0)
        goto oom;
    if (g->nstates) {
        c->states = tg_malloc(sizeof *c->states * (size_t)g->nstates);
        if (!c->states)
            goto oom;
        memcpy(c->states, g->states, sizeof *c->states * (size_t)g->nstates);
        c->nstates = c->cap_states = g->nstates;
    }
    return c;
oom:
    graph_free(c);
    return NULL;
}

tg_status graph_compact(graph *g)
{
    if (!g)
        return TG_ERR_NULL;
    int32_t *vmap = tg_malloc(sizeof(int32_t) * (size_t)(g->nvalues + 1));
    int32_t *nmap = tg_malloc(sizeof(int32_t) * (size_t)(g->nnodes + 1));
    if (!vmap || !nmap) {
        tg_free(vmap);
        tg_free(nmap);
        return graph_fail(g, TG_ERR_NOMEM, "out of memory compacting");
    }
    /* Passes merging long provenance lists leave repeats to be dropped here
     * (opt_merge_prov); first, so that a failure leaves the graph as it was. */
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].nprov > 1 &&
            graph_node_dedup_prov(g, i) != TG_OK) {
            tg_free(vmap);
            tg_free(nmap);
            return TG_ERR_NOMEM;
        }
    /* Mark used values: signature, outputs, guards, live nodes' operands. */
    for (int32_t i = 0; i < g->nvalues; i++)
        vmap[i] = -1;
    for (int32_t i = 0; i < g->ninputs; i++)
        vmap[g->inputs[i]] = 0;
    for (int32_t i = 0; i < g->noutputs; i++)
        vmap[g->outputs[i].value] = 0;
    for (int32_t i = 0; i < g->nguards; i++)
        vmap[g->guards[i].value] = 0;
    for (int32_t i = 0; i < g->nstates; i++)
        vmap[g->states[i].value] = vmap[g->states[i].next] = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++) {
            TG_ASSERT(n->in[k] >= 0 && n->in[k] < g->nvalues);
            vmap[n->in[k]] = 0;
        }
        for (int k = 0; k < n->nout; k++) {
            TG_ASSERT(n->out[k] >= 0 && n->out[k] < g->nvalues);
            vmap[n->out[k]] = 0;
        }
    }
    int32_t nv = 0;
    for (int32_t i = 0; i < g->nvalues; i++) {
        if (vmap[i] < 0) {
            tg_free(g->values[i].data);
            continue;
        }
        vmap[i] = nv;
        g->values[nv++] = g->values[i];
    }
    g->nvalues = nv;
    int32_t nn = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD) {
            nmap[i] = -1; /* its id arrays stay in the arena until graph_free */
            continue;
        }
        for (int k = 0; k < n->nin; k++)
            n->in[k] = vmap[n->in[k]];
        for (int k = 0; k < n->nout; k++)
            n->out[k] = vmap[n->out[k]];
        nmap[i] = nn;
        g->nodes[nn++] = *n;
    }
    g->nnodes = nn;
    for (int32_t i = 0; i < g->nvalues; i++)
        if (g->values[i].node >= 0)
            g->values[i].node = nmap[g->values[i].node];
    for (int32_t i = 0; i < g->ninputs; i++)
        g->inputs[i] = vmap[g->inputs[i]];
    for (int32_t i = 0; i < g->noutputs; i++)
        g->outputs[i].value = vmap[g->outputs[i].value];
    for (int32_t i = 0; i < g->nguards; i++)
        g->guards[i].value = vmap[g->guards[i].value];
    for (int32_t i = 0; i < g->nstates; i++) {
        g->states[i].value = vmap[g->states[i].value];
        g->states[i].next = vmap[g->states[i].next];
    }
    tg_free(vmap);
    tg_free(nmap);
    return TG_OK;
}

/*
 * Depth-first: each node is placed after its inputs' producers, visiting
 * nodes in their current order so an already valid order is kept.  An
 * explicit stack (not recursion): graphs may be 100k nodes deep.
 */
tg_status graph_toposort(graph *g)
{
    if (!g)
        return TG_ERR_NULL;
    int32_t n = g->nnodes;
    int8_t *mark = tg_calloc((size_t)n + 1, 1); /* 0 new, 1 on stack, 2 placed */
    int32_t *cursor = tg_calloc((size_t)n + 1, sizeof *cursor);
    int32_t *stack = tg_malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *order = tg_malloc(sizeof(int32_t) * ((size_t)n + 1));
    graph_node *nodes = tg_malloc(sizeof(graph_node) * ((size_t)n + 1));
    tg_status st = TG_OK;
    if (!mark || !cursor || !stack || !order || !nodes) {
        st = graph_fail(g, TG_ERR_NOMEM, "out of memory sorting nodes");
        goto done;
    }
    int32_t placed = 0;
    for (int32_t root = 0; root < n && st == TG_OK; root++) {
        if (mark[root])
            continue;
        int32_t sp = 0;
        stack[sp++] = root;
        mark[root] = 1;
        while (sp > 0 && st == TG_OK) {
            int32_t t = stack[sp - 1];
            const graph_node *nd = &g->nodes[t];
            int32_t next = -1;
            while (cursor[t] < nd->nin && next < 0) {
                int32_t p = g->values[nd->in[cursor[t]++]].node;
                if (p < 0 || g->values[nd->in[cursor[t] - 1]].kind != GRAPH_VALUE_INTER ||
                    mark[p] == 2)
                    continue;
                if (mark[p] == 1)
                    st = graph_fail(g, TG_ERR_FORMAT, "the graph has a cycle through node %d", p);
                next = p;
            }
            if (st != TG_OK)
                break;
            if (next >= 0) {
                mark[next] = 1;
                stack[sp++] = next;
            } else {
                mark[t] = 2;
                order[placed++] = t;
                sp--;
            }
        }
    }
    if (st == TG_OK) {
        TG_ASSERT(placed == n); /* else order[] has holes */
        /* order[k] is the old id of the node that goes to slot k */
        int32_t *newid = cursor; /* reuse: cursors are no longer needed */
        for (int32_t k = 0; k < n; k++) {
            nodes[k] = g->nodes[order[k]];
            newid[order[k]] = k;
        }
        memcpy(g->nodes, nodes, sizeof(graph_node) * (size_t)n);
        for (int32_t v = 0; v < g->nvalues; v++)
            if (g->values[v].kind == GRAPH_VALUE_INTER && g->values[v].node >= 0 &&
                g->values[v].node < n)
                g->values[v].node = newid[g->values[v].node];
    }
done:
    tg_free(mark);
    tg_free(cursor);
    tg_free(stack);
    tg_free(order);
    tg_free(nodes);
    return st;
}
