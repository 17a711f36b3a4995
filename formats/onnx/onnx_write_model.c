/*
 * onnx_write_model.c - ONNX export (formats/onnx.h): the top of the writer.
 * Checks the guards, names every value (the order is onnx_write.c's file
 * comment), writes the initializers and graph inputs, each live node
 * through onnx_write_ops.c, the graph outputs (an Identity where an
 * output's value cannot carry its name), then packs the model.  It calls
 * onnx_write.c's helpers and onnx_write_ops.c; nothing calls back into it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../file.h"
#include "onnx_write_impl.h"

/* ---- graph inputs and outputs ---- */

/* Symbol s has a size guard (a node was specialized on it): the model
 * runs at its traced size only. */
static int sym_fixed(const graph *g, int s)
{
    for (int32_t i = 0; i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        const graph_value *v = &g->values[gd->value];
        if (gd->kind == GRAPH_GUARD_SIZE && gd->policy != GRAPH_GUARD_OFF &&
            gd->index >= 0 && gd->index < v->type.ndim && (v->dyn >> gd->index & 1) &&
            v->sym[gd->index] == s)
            return 1;
    }
    return 0;
}

/* A ValueInfoProto: dtype and dims, dynamic dims as the symbol's name
 * (the traced size where a size guard fixes the symbol). */
static Onnx__ValueInfoProto *value_info(onnx_w *w, const char *name, int32_t id)
{
    const graph_value *v = &w->g->values[id];
    int nd = v->type.ndim;
    Onnx__ValueInfoProto *vi = onnxw_alloc(w, sizeof *vi);
    Onnx__TypeProto *tp = onnxw_alloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = onnxw_alloc(w, sizeof *tt);
    Onnx__TensorShapeProto *sp = onnxw_alloc(w, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = onnxw_alloc(w, (size_t)(nd ? nd : 1) * sizeof *dims);
    if (!vi || !tp || !tt || !sp || !dims)
        return NULL;
    for (int d = 0; d < nd; d++) {
        Onnx__TensorShapeProto__Dimension *dim = onnxw_alloc(w, sizeof *dim);
        if (!dim)
            return NULL;
        *dim = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        int s = v->sym[d];
        if ((v->dyn >> d & 1) && s >= 0 && s < w->g->nsyms && !sym_fixed(w->g, s)) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = (char *)w->g->syms[s].name;
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = v->type.dim[d];
        }
        dims[d] = dim;
    }
    *sp = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    sp->n_dim = (size_t)nd;
    sp->dim = dims;
    *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    tt->has_elem_type = 1;
    tt->elem_type = onnx_dtype_code(v->type.dtype);
    tt->shape = sp;
    *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* ---- whole graph ---- */

static tg_status check_guards(onnx_w *w, const format_onnx_save_opts *opts)
{
    const graph *g = w->g;
    if (opts && opts->drop_guards)
        return TG_OK;
    for (int32_t i = 0; i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        if (gd->policy == GRAPH_GUARD_OFF || gd->kind == GRAPH_GUARD_SIZE)
            continue; /* a size guard: the dim is exported fixed (value_info) */
        char site[256];
        const graph_value *v =
            gd->value >= 0 && gd->value < g->nvalues ? &g->values[gd->value] : NULL;
        onnxw_errf(w, "graph '%s': guard %d on value %s (a data read at %s) has no ONNX form: "
                "the export could take a branch the trace did not (set drop_guards to "
                "export anyway)", onnxw_gname(g), (int)i, v && v->name ? v->name : "(unnamed)",
             graph_prov_str(g, gd->prov, site, sizeof site));
        return w->st = TG_ERR_UNSUPPORTED;
    }
    return TG_OK;
}

/* Marks the values export needs: node inputs/outputs, graph inputs/outputs. */
static uint8_t *used_values(onnx_w *w)
{
    const graph *g = w->g;
    uint8_t *used = onnxw_alloc(w, (size_t)g->nvalues + 1);
    if (!used)
        return NULL;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            used[n->in[k]] = 1;
        for (int k = 0; k < n->nout; k++)
            used[n->out[k]] = 1;
    }
    for (int32_t i = 0; i < g->ninputs; i++)
        used[g->inputs[i]] = 1;
    for (int32_t i = 0; i < g->noutputs; i++)
        used[g->outputs[i].value] = 1;
    return used;
}

/*
 * Names every used value and output (order in the file comment);
 * direct[k] is set when output k's value is written under the output's
 * name by its producer (else an Identity copies it).
 */
static tg_status assign_names(onnx_w *w, const uint8_t *used, const char **oname,
                              uint8_t *direct)
{
    const graph *g = w->g;
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t v = g->inputs[i];
        if (g->values[v].name && !w->vname[v])
            w->vname[v] = onnxw_take(w, g->values[v].name);
    }
    for (int32_t k = 0; k < g->noutputs; k++) {
        int32_t v = g->outputs[k].value;
        oname[k] = onnxw_take(w, g->outputs[k].name);
        if (g->values[v].kind == GRAPH_VALUE_INTER && !w->vname[v]) {
            w->vname[v] = oname[k];
            direct[k] = 1;
        }
    }
    for (int pass = 0; pass < 2; pass++)
        for (int32_t v = 0; v < g->nvalues; v++) {
            if (!used[v] || w->vname[v] || (pass == 0 && !g->values[v].name))
                continue;
            char gen[32];
            snprintf(gen, sizeof gen, "v%d", (int)v);
            w->vname[v] = onnxw_take(w, pass == 0 ? g->values[v].name : gen);
        }
    return w->st;
}

static tg_status write_nodes(onnx_w *w)
{
    const graph *g = w->g;
    char site[256];
    for (int32_t i = 0; i < g->nnodes && w->st == TG_OK; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        w->cur = n;
        w->cur_id = i;
        w->nsub = 0;
        w->doc = NULL;
        if (n->nprov > 0)
            w->doc = onnxw_strdup(w, graph_prov_str(g, n->prov[0], site, sizeof site));
        if (w->st == TG_OK)
            onnxw_emit_node(w);
    }
    w->cur = NULL;
    return w->st;
}

/* Graph inputs, initializers, nodes, outputs. */
static Onnx__GraphProto *build_graph(onnx_w *w)
{
    const graph *g = w->g;
    uint8_t *used = used_values(w), *direct = onnxw_alloc(w, (size_t)g->noutputs + 1);
    const char **oname = onnxw_alloc(w, ((size_t)g->noutputs + 1) * sizeof *oname);
    Onnx__GraphProto *gp = onnxw_alloc(w, sizeof *gp);
    Onnx__ValueInfoProto **in = onnxw_alloc(w, ((size_t)g->ninputs + 1) * sizeof *in);
    Onnx__ValueInfoProto **out = onnxw_alloc(w, ((size_t)g->noutputs + 1) * sizeof *out);
    w->vname = onnxw_alloc(w, ((size_t)g->nvalues + 1) * sizeof *w->vname);
    if (w->st != TG_OK || assign_names(w, used, oname, direct) != TG_OK)
        return NULL;
    for (int32_t v = 0; v < g->nvalues && w->st == TG_OK; v++)
        if (used[v] && (g->values[v].kind == GRAPH_VALUE_PARAM ||
                        g->values[v].kind == GRAPH_VALUE_CONST))
            onnxw_value_init(w, v);
    for (int32_t i = 0; i < g->ninputs; i++)
        in[i] = value_info(w, w->vname[g->inputs[i]], g->inputs[i]);
    if (write_nodes(w) != TG_OK)
        return NULL;
    w->doc = "graph output";
    for (int32_t k = 0; k < g->noutputs; k++) {
        int32_t v = g->outputs[k].value;
        if (!direct[k]) {
            w->cur_id = k;
            w->nsub = 0;
            onnxw_node1(w, "Identity", w->vname[v], oname[k]);
        }
        out[k] = value_info(w, oname[k], v);
    }
    if (w->st != TG_OK)
        return NULL;
    *gp = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    gp->name = (char *)(g->name ? g->name : "tracegraph");
    gp->n_node = w->nnodes;
    gp->node = w->nodes;
    gp->n_initializer = w->ninits;
    gp->initializer = w->inits;
    gp->n_input = (size_t)g->ninputs;
    gp->input = in;
    gp->n_output = (size_t)g->noutputs;
    gp->output = out;
    return gp;
}

/*
 * The opset to write: FORMAT_ONNX_OPSET, or 18 when a scatter_elements
 * reduces by max or min, which ScatterElements has from 18 on (and which
 * no op of opset 17 computes).  Only ReduceMean and ReduceMax, whose axes
 * became an input at 18, are then written differently.
 */
static int64_t model_opset(const graph *g)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD || n->op != GRAPH_OP_scatter_elements)
            continue;
        const graph_scatter_elements_attrs *a = tg_node_attrs(n);
        if (a->reduction == GRAPH_SCATTER_MAX || a->reduction == GRAPH_SCATTER_MIN)
            return 18;
    }
    return FORMAT_ONNX_OPSET;
}

/* Builds and packs the model into a malloc'd buffer. */
static tg_status export_mem(const graph *g, const format_onnx_save_opts *opts,
                            void **buf, size_t *len, char *err, size_t errlen)
{
    onnx_w w = {.g = g, .opset = model_opset(g), .err = err, .errlen = errlen};
    if (check_guards(&w, opts) != TG_OK)
        return w.st;
    Onnx__GraphProto *gp = build_graph(&w);
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = w.opset;
    m.has_ir_version = 1;
    m.ir_version = ONNX_IR_VERSION;
    m.n_opset_import = 1;
    m.opset_import = opsets;
    m.producer_name = "tracegraph";
    m.graph = gp;
    tg_status st = w.st;
    if (st == TG_OK) {
        size_t n = onnx__model_proto__get_packed_size(&m);
        /* protobuf's parsers (ONNX Runtime's too) stop at 2 GiB. */
        if (n > (size_t)INT32_MAX) {
            onnxw_errf(&w, "graph '%s': the ONNX model would take %zu bytes, more than "
                     "protobuf's 2 GiB", onnxw_gname(g), n);
            st = TG_ERR_UNSUPPORTED;
        } else if (!(*buf = onnxw_malloc(n ? n : 1))) {
            onnxw_nomem(&w);
            st = w.st;
        } else {
            *len = onnx__model_proto__pack(&m, *buf);
        }
    }
    onnxw_free(&w);
    return st;
}

tg_status format_onnx_save_mem(const graph *g, const format_onnx_save_opts *opts,
                               void **buf, size_t *len, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!g || !buf || !len) {
        if (err && errlen)
            snprintf(err, errlen, "format_onnx_save_mem: NULL argument");
        return TG_ERR_NULL;
    }
    *buf = NULL;
    *len = 0;
    if (graph_num_states(g) > 0) {
        if (err && errlen)
            snprintf(err, errlen, "ONNX export: graph '%s' is a training step with %d states "
                     "(%s, ...): ONNX holds inference graphs; export the forward graph, traced "
                     "without the backward and the optimizer step", graph_name(g) ? graph_name(g) : "?",
                     (int)graph_num_states(g), graph_value_name(g, graph_state_value(g, 0)));
        return TG_ERR_UNSUPPORTED;
    }
    return export_mem(g, opts, buf, len, err, errlen);
}

tg_status format_onnx_save(const graph *g, const char *path,
                           const format_onnx_save_opts *opts, char *err, size_t errlen)
{
    if (!path) {
        if (err && errlen)
            snprintf(err, errlen, "format_onnx_save: NULL argument");
        return TG_ERR_NULL;
    }
    void *buf;
    size_t len;
    tg_status st = format_onnx_save_mem(g, opts, &buf, &len, err, errlen);
    if (st != TG_OK)
        return st;
    st = format_write_bytes(path, buf, len, err, errlen);
    tg_free(buf);
    return st;
}
