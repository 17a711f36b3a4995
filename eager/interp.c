/* interp.c - the reference interpreter (see interp.h). */
#include "../graph/alloc.h"
#include "interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../graph/graph_impl.h"

/* Checks one guard against the value's tensor now. */
static tg_status check_guard(const graph *g, const graph_guard *gd,
                             const eager_tensor *t, eager_interp_report *rep)
{
    char msg[1024];
    int r = graph_guard_check(g, gd, &t->type, t->data, msg, sizeof msg);
    if (r == 1 && rep && rep->guard_warnings++ == 0)
        snprintf(rep->first_warning, sizeof rep->first_warning, "%s", msg);
    if (r == 2) {
        eager_set_error(TG_ERR_GUARD, NULL, "%s", msg);
        return TG_ERR_GUARD;
    }
    return TG_OK;
}

/* Checks the guards on value v (just computed or bound). */
static tg_status check_guards_of(const graph *g, int32_t v, eager_tensor *t,
                                 eager_interp_report *rep)
{
    for (int32_t i = 0; i < g->nguards; i++)
        if (g->guards[i].value == v) {
            tg_status st = check_guard(g, &g->guards[i], t, rep);
            if (st != TG_OK)
                return st;
        }
    return TG_OK;
}

/* Binds the signature inputs; checks dtype, rank, static dims, symbols. */
static tg_status bind_inputs(const graph *g, eager_tensor *const *inputs,
                             eager_tensor **vals)
{
    int64_t symsize[128];
    for (int s = 0; s < 128; s++)
        symsize[s] = -1;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const graph_value *v = &g->values[g->inputs[i]];
        const eager_tensor *t = inputs[i];
        char got[160], want[160];
        if (!t || t == EAGER_NONE) {
            eager_set_error(TG_ERR_NULL, NULL, "interpret: input %d (\"%s\") is NULL",
                            i, v->name ? v->name : "?");
            return TG_ERR_NULL;
        }
        if (t->magic != EAGER_LIVE) {
            char what[160];
            snprintf(what, sizeof what, "interpret: input %d (\"%s\")", i,
                     v->name ? v->name : "?");
            eager_check_live(t, what, NULL);
            return TG_ERR_STATE;
        }
        int ok = t->type.dtype == v->type.dtype && t->type.ndim == v->type.ndim;
        for (int d = 0; ok && d < v->type.ndim; d++) {
            if (v->dyn >> d & 1) {
                int s = v->sym[d];
                if (symsize[s] < 0)
                    symsize[s] = t->type.dim[d];
                ok = symsize[s] == t->type.dim[d];
            } else {
                ok = t->type.dim[d] == v->type.dim[d];
            }
        }
        if (!ok) {
            eager_set_error(TG_ERR_SHAPE, NULL, "interpret: input \"%s\" is %s%s, the "
                            "graph was traced with %s%s (dynamic dims may differ, "
                            "consistently)", v->name ? v->name : "?",
                            graph_dtype_name(t->type.dtype),
                            graph_shape_str(&t->type, got, sizeof got),
                            graph_dtype_name(v->type.dtype),
                            graph_shape_str(&v->type, want, sizeof want));
            return TG_ERR_SHAPE;
        }
        vals[g->inputs[i]] = (eager_tensor *)t;
    }
    return TG_OK;
}

/* Makes tensors for params and constants. */
static tg_status bind_sources(const graph *g, eager_tensor **vals)
{
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        if (!graph_kind_has_data(v->kind))
            continue;
        if (!v->data) {
            eager_set_error(TG_ERR_STATE, NULL, "interpret: %s %%%d has no data "
                            "(elided)", graph_value_kind_name(v->kind), i);
            return TG_ERR_STATE;
        }
        eager_tensor *t = eager_alloc(&v->type, NULL);
        if (!t)
            return eager_status();
        memcpy(t->data, v->data, graph_value_nbytes(v));
        if (eager_pool_adopt(t) < 0) {
            eager_release(t);
            return TG_ERR_NOMEM;
        }
        vals[i] = t;
    }
    return TG_OK;
}

static tg_status run_node(const graph *g, int32_t i, eager_tensor **vals)
{
    const graph_node *n = &g->nodes[i];
    eager_tensor *in[GRAPH_MAX_NODE_IO], *out[GRAPH_MAX_NODE_IO];
    for (int k = 0; k < n->nin; k++)
        in[k] = vals[n->in[k]];
    const graph_prov *p = n->nprov ? &g->provs[n->prov[0]] : NULL;
    eager_site site = {p ? p->file : "?", p ? p->line : 0, p ? p->func : "?"};
    const void *attrs = tg_node_attrs(n);
    int got = eager_dispatch(n->op, in, n->nin, attrs, out, GRAPH_MAX_NODE_IO, &site);
    if (got != n->nout) {
        if (got >= 0 || eager_status() == TG_OK)
            eager_set_error(TG_ERR_STATE, &site, "interpret: node %d (%s) made %d "
                            "outputs, the graph says %d", i, graph_ops[n->op].name,
                            got, n->nout);
        if (n->flags & GRAPH_NODE_SPECIALIZED) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s; node %d was specialized on the traced "
                     "sizes", eager_error(), i);
            tg_status st = eager_status();
            eager_clear_error();
            eager_set_error(st, NULL, "%s", msg);
        }
        return eager_status();
    }
    for (int k = 0; k < n->nout; k++)
        vals[n->out[k]] = out[k];
    return TG_OK;
}

tg_status eager_interpret(const graph *g, eager_tensor *const *inputs, int nin,
                          eager_tensor **outputs, int nout,
                          eager_interp_report *report)
{
    if (!g || nin != g->ninputs || nout < g->noutputs || (nin && !inputs) ||
        (g->noutputs && !outputs)) {
        eager_set_error(TG_ERR_ARG, NULL, "interpret: the graph takes %d inputs and "
                        "makes %d outputs; called with %d and room for %d",
                        g ? g->ninputs : 0, g ? g->noutputs : 0, nin, nout);
        return TG_ERR_ARG;
    }
    if (report)
        memset(report, 0, sizeof *report);
    eager_tensor **vals = tg_calloc((size_t)g->nvalues + 1, sizeof *vals);
    if (!vals) {
        eager_set_error(TG_ERR_NOMEM, NULL, "interpret: out of memory");
        return TG_ERR_NOMEM;
    }
    const eager_hooks *hooks = eager_set_hooks(NULL);
    tg_status st = eager_pool_push();
    if (st == TG_OK)
        st = bind_inputs(g, inputs, vals);
    if (st == TG_OK)
        st = bind_sources(g, vals);
    for (int32_t i = 0; st == TG_OK && i < g->ninputs; i++)
        st = check_guards_of(g, g->inputs[i], vals[g->inputs[i]], report);
    for (int32_t i = 0; st == TG_OK && i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        st = run_node(g, i, vals);
        for (int k = 0; st == TG_OK && k < n->nout; k++)
            st = check_guards_of(g, n->out[k], vals[n->out[k]], report);
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        outputs[i] = st == TG_OK ? eager_retain(vals[g->outputs[i].value]) : NULL;
    eager_pool_pop();
    eager_set_hooks(hooks);
    tg_free(vals);
    return st;
}
