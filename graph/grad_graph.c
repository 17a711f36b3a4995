/*
 * grad_graph.c - the graph builder of the gradient rules (each op becomes
 * a node of the graph, each constant a const value), and graph_backward,
 * which walks a forward graph backwards and appends its gradient graph.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "graph_impl.h"
#include "alloc.h"
#include "grad.h"
#include "graph.h"

typedef grad_graph_state gb_state;

int32_t grad_graph_id(grad_v v) { return v ? (int32_t)((intptr_t)v - 1) : -1; }
grad_v grad_graph_v(int32_t id) { return id < 0 ? NULL : (grad_v)(intptr_t)(id + 1); }

static int gb_opn(grad_builder *b, graph_op op, const grad_v *in, int nin, const void *attrs,
                  grad_v *outv, int max_out)
{
    gb_state *s = b->ud;
    int32_t ids[GRAPH_MAX_NODE_IO], out[GRAPH_MAX_NODE_IO];
    if (nin > GRAPH_MAX_NODE_IO) {
        graph_fail(s->g, TG_ERR_ARG, "gradient: %s with %d inputs", graph_ops[op].name, nin);
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        if (!in[i])
            return -1;
        ids[i] = grad_graph_id(in[i]);
    }
    int32_t n = graph_add_node(s->g, op, ids, nin, attrs, out, GRAPH_MAX_NODE_IO);
    if (n < 0)
        return -1;
    if (s->prov >= 0 && graph_node_add_prov(s->g, n, s->prov) != TG_OK)
        return -1;
    int nout = s->g->nodes[n].nout;
    for (int i = 0; i < nout && i < max_out; i++)
        outv[i] = grad_graph_v(out[i]);
    return nout < max_out ? nout : max_out;
}

static grad_v gb_op(grad_builder *b, graph_op op, const grad_v *in, int nin, const void *attrs)
{
    grad_v out[1];
    return gb_opn(b, op, in, nin, attrs, out, 1) > 0 ? out[0] : NULL;
}

static grad_v gb_constant(grad_builder *b, graph_dtype dt, const graph_ints *shape,
                          const void *data)
{
    gb_state *s = b->ud;
    graph_type t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = shape->n;
    for (int i = 0; i < shape->n; i++)
        t.dim[i] = shape->v[i];
    int32_t v = graph_add_value(s->g, GRAPH_VALUE_CONST, &t, NULL);
    if (v < 0)
        return NULL;
    if (graph_set_data(s->g, v, data, graph_value_nbytes(&s->g->values[v])) != TG_OK)
        return NULL;
    return grad_graph_v(v);
}

static const graph_type *gb_type(grad_builder *b, grad_v v)
{
    gb_state *s = b->ud;
    return &s->g->values[grad_graph_id(v)].type;
}

static tg_status gb_fail(grad_builder *b, tg_status st, const char *msg)
{
    gb_state *s = b->ud;
    return graph_fail(s->g, st, "%s", msg);
}

void grad_graph_builder(grad_builder *b, grad_graph_state *s, graph *g, int32_t prov)
{
    s->g = g;
    s->prov = prov;
    b->op = gb_op;
    b->opn = gb_opn;
    b->constant = gb_constant;
    b->type = gb_type;
    b->fail = gb_fail;
    b->ud = s;
}

/* ---- graph_backward ---- */

tg_status graph_backward(graph *g, int32_t loss, const int32_t *wrt, int nwrt, int32_t *grads)
{
    if (!g || (nwrt > 0 && (!wrt || !grads)))
        return g ? graph_fail(g, TG_ERR_NULL, "graph_backward: NULL wrt or grads")
                 : TG_ERR_NULL;
    if (loss < 0 || loss >= g->nvalues)
        return graph_fail(g, TG_ERR_ARG, "graph_backward: loss %d is no value", (int)loss);
    const graph_type *lt = &g->values[loss].type;
    if (lt->dtype != GRAPH_F32 || graph_type_numel(lt) != 1)
        return graph_fail(g, TG_ERR_SHAPE,
                          "graph_backward: the loss must be one f32 element (it has %lld, %s)",
                          (long long)graph_type_numel(lt), graph_dtype_name(lt->dtype));
    for (int i = 0; i < nwrt; i++)
        if (wrt[i] < 0 || wrt[i] >= g->nvalues)
            return graph_fail(g, TG_ERR_ARG, "graph_backward: wrt[%d] = %d is no value", i,
                              (int)wrt[i]);
    int32_t nv = g->nvalues, nn = g->nnodes;
    int32_t *gv = tg_malloc((size_t)(nv ? nv : 1) * sizeof *gv);
    unsigned char *reach = tg_calloc((size_t)(nv ? nv : 1), 1);
    tg_status st = TG_OK;
    if (!gv || !reach) {
        st = graph_fail(g, TG_ERR_NOMEM, "graph_backward: no memory");
        goto done;
    }
    for (int32_t v = 0; v < nv; v++)
        gv[v] = -1;
    for (int i = 0; i < nwrt; i++)
        if (g->values[wrt[i]].type.dtype == GRAPH_F32)
            reach[wrt[i]] = 1;
    /* which values depend on a wrt value through gradient-carrying inputs */
    for (int32_t n = 0; n < nn; n++) {
        const graph_node *nd = &g->nodes[n];
        if (nd->flags & GRAPH_NODE_DEAD)
            continue;
        int any = 0;
        for (int i = 0; i < nd->nin && !any; i++)
            any = nd->in[i] >= 0 && reach[nd->in[i]] &&
                  grad_input_flows(nd->op, i, g->values[nd->in[i]].type.dtype);
        if (any)
            for (int o = 0; o < nd->nout; o++)
                if (g->values[nd->out[o]].type.dtype == GRAPH_F32)
                    reach[nd->out[o]] = 1;
    }
    grad_builder b;
    grad_graph_state bs;
    float one = 1.0f;
    graph_ints ls;
    memset(&ls, 0, sizeof ls);
    ls.n = lt->ndim;
    for (int d = 0; d < lt->ndim; d++)
        ls.v[d] = 1;
    grad_graph_builder(&b, &bs, g, -1);
    if (!reach[loss])
        goto outputs;
    grad_v seed = b.constant(&b, GRAPH_F32, &ls, &one);
    if (!seed) {
        st = graph_error_status(g);
        goto done;
    }
    gv[loss] = grad_graph_id(seed);
    for (int32_t n = nn - 1; n >= 0; n--) {
        graph_node nd = g->nodes[n]; /* a copy: adding nodes moves the array */
        if (nd.flags & GRAPH_NODE_DEAD)
            continue;
        int has = 0;
        for (int o = 0; o < nd.nout; o++)
            has |= gv[nd.out[o]] >= 0;
        if (!has)
            continue;
        grad_v in[GRAPH_MAX_NODE_IO], out[GRAPH_MAX_NODE_IO], gout[GRAPH_MAX_NODE_IO],
            gin[GRAPH_MAX_NODE_IO];
        graph_type in_t[GRAPH_MAX_NODE_IO], out_t[GRAPH_MAX_NODE_IO];
        unsigned char need[GRAPH_MAX_NODE_IO];
        int any = 0;
        for (int i = 0; i < nd.nin; i++) {
            in[i] = grad_graph_v(nd.in[i]);
            in_t[i] = g->values[nd.in[i]].type;
            need[i] = reach[nd.in[i]] && grad_input_flows(nd.op, i, in_t[i].dtype);
            any |= need[i];
        }
        if (!any)
            continue;
        for (int o = 0; o < nd.nout; o++) {
            out[o] = grad_graph_v(nd.out[o]);
            out_t[o] = g->values[nd.out[o]].type;
            gout[o] = grad_graph_v(gv[nd.out[o]]);
        }
        bs.prov = nd.nprov > 0 ? nd.prov[0] : -1; /* the forward node's site */
        grad_ctx c = {nd.op, tg_node_attrs(&nd), nd.nin, nd.nout, in_t, out_t,
                      in, out, gout, need, gin};
        graph_attrs defaults;
        if (graph_ops[nd.op].attr_size && !c.attrs) {
            graph_attrs_default(nd.op, &defaults);
            c.attrs = &defaults;
        }
        st = grad_apply(&b, &c);
        if (st != TG_OK) {
            char site[256] = "", why[512];
            if (nd.nprov > 0)
                graph_prov_str(g, nd.prov[0], site, sizeof site);
            snprintf(why, sizeof why, "%s", graph_error(g));
            st = graph_fail(g, st, "graph_backward: node %d: %s%s%s%s", (int)n, why,
                            site[0] ? " (" : "", site, site[0] ? ")" : "");
            goto done;
        }
        for (int i = 0; i < nd.nin; i++) {
            if (!need[i] || !gin[i])
                continue;
            int32_t v = nd.in[i], id = grad_graph_id(gin[i]);
            if (gv[v] < 0) {
                gv[v] = id;
            } else {
                grad_v sum = b.op(&b, GRAPH_OP_add, (grad_v[2]){grad_graph_v(gv[v]), gin[i]}, 2,
                                  NULL);
                if (!sum) {
                    st = graph_error_status(g);
                    goto done;
                }
                gv[v] = grad_graph_id(sum);
            }
        }
    }
outputs:
    for (int i = 0; i < nwrt; i++)
        grads[i] = gv[wrt[i]];
done:
    tg_free(gv);
    tg_free(reach);
    return st;
}
