/*
 * onnx_read.c - ONNX import (formats/onnx.h): the model as a whole.
 * Unpacks the ModelProto (protobuf-c checks the wire format), checks the
 * IR version and the opset, decodes tensors, makes the graph inputs,
 * keeps initializers as constant entries, converts the nodes in order
 * through the op table (onnx_read_ops.c, onnx_read_shape.c), binds the
 * graph outputs, and verifies the result: the top of the reader, which
 * calls the table and the fold pass; nothing calls back into it.  The
 * helpers the converters share are onnx_read_node.c's (names, operands,
 * attributes, adding nodes), onnx_read_build.c's (common subgraphs) and
 * onnx_read_base.c's (messages, tensors).
 *
 * Nothing is sized by what the file declares alone: a tensor's dims must
 * match the bytes or values present before anything is allocated, and
 * sizes the importer derives (folded constants) are capped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/errors.h"
#include "../file.h"
#include "onnx_read_impl.h"
#include "../../graph/graph_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; this reader copies it as is"
#endif


/* ---- graph inputs and initializers ---- */

/* One dim of a graph input: a number, or a dynamic dim with a symbol. */
static tg_status input_dim(onnx_reader *r, const char *name, int d,
                           const Onnx__TensorShapeProto__Dimension *dim,
                           graph_value *v)
{
    if (dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
        if (dim->dim_value < 0)
            return onnx_fail(r, TG_ERR_FORMAT, "graph input '%s': dim %d is %lld",
                             name, d, LL(dim->dim_value));
        v->type.dim[d] = dim->dim_value;
        return TG_OK;
    }
    char sym[256];
    if (dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
        dim->dim_param && dim->dim_param[0])
        snprintf(sym, sizeof sym, "%s", dim->dim_param);
    else /* an unnamed unknown dim gets a symbol of its own */
        snprintf(sym, sizeof sym, "%s_dim%d", name, d);
    int32_t s = graph_add_symbol(r->g, sym, r->dim_default);
    if (s < 0)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "graph input '%s': %s", name,
                         graph_error(r->g));
    v->type.dim[d] = r->dim_default;
    v->dyn |= 1u << d;
    v->sym[d] = (int8_t)s;
    return TG_OK;
}

/* The type of a graph input from its ValueInfoProto. */
static tg_status input_type(onnx_reader *r, const Onnx__ValueInfoProto *vi,
                            graph_value *v)
{
    const char *name = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "graph input '%s' is not a tensor",
                         name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!onnx_dtype_from_code(tt->elem_type, &v->type.dtype))
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "graph input '%s': dtype %s is not supported", name,
                         onnx_code_name(tt->elem_type));
    if (!tt->shape)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "graph input '%s' has unknown rank",
                         name);
    if (tt->shape->n_dim > GRAPH_MAX_DIMS)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "graph input '%s' has %zu dims "
                         "(at most %d)", name, tt->shape->n_dim, GRAPH_MAX_DIMS);
    v->type.ndim = (int32_t)tt->shape->n_dim;
    for (int d = 0; d < v->type.ndim; d++) {
        tg_status st = input_dim(r, name, d, tt->shape->dim[d], v);
        if (st != TG_OK)
            return st;
    }
    char why[200];
    if (graph_type_check(&v->type, why, sizeof why) != TG_OK)
        return onnx_fail(r, TG_ERR_FORMAT, "graph input '%s': %s", name, why);
    return TG_OK;
}

static tg_status add_inputs(onnx_reader *r, const Onnx__GraphProto *gp)
{
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->name[0])
            return onnx_fail(r, TG_ERR_FORMAT, "graph input %zu has no name", i);
        onnx_entry *e = onnx_find(r, vi->name);
        if (e && e->is_const)
            continue; /* an initializer also listed as an input (IR < 4) */
        graph_value v;
        memset(&v, 0, sizeof v);
        tg_status st = input_type(r, vi, &v);
        if (st == TG_OK)
            st = onnx_add_entry(r, vi->name, &e);
        if (st != TG_OK)
            return st;
        e->value = graph_add_value(r->g, GRAPH_VALUE_INPUT, &v.type, vi->name);
        if (e->value < 0 || graph_add_input(r->g, e->value) != TG_OK)
            return onnx_fail(r, TG_ERR_NOMEM, "%s", graph_error(r->g));
        graph_value *gv = &r->g->values[e->value];
        gv->dyn = v.dyn;
        memcpy(gv->sym, v.sym, sizeof gv->sym);
    }
    return TG_OK;
}

static tg_status add_initializers(onnx_reader *r, const Onnx__GraphProto *gp)
{
    if (gp->n_sparse_initializer)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "sparse initializers are not supported");
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        char why[300];
        if (!t->name || !t->name[0])
            return onnx_fail(r, TG_ERR_FORMAT, "initializer %zu has no name", i);
        onnx_entry *e;
        tg_status st = onnx_add_entry(r, t->name, &e);
        if (st != TG_OK)
            return st;
        e->is_const = 1;
        e->param = r->params;
        st = onnx_tensor_decode(t, &e->type, &e->data, why, sizeof why);
        if (st != TG_OK)
            return onnx_fail(r, st, "initializer '%s': %s", t->name, why);
    }
    return TG_OK;
}

/* ---- nodes ---- */

/* name is one of the comma-separated names in list. */
static int in_list(const char *list, const char *name, int *index)
{
    size_t n = strlen(name);
    *index = 0;
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !memcmp(p, name, n))
            return 1;
        ++*index;
        p += len + (end != NULL);
    }
    return 0;
}

/* Each attribute known to the converter, named once, not a reference. */
static tg_status check_attrs(onnx_reader *r, const onnx_op *op)
{
    uint64_t seen = 0;
    for (size_t i = 0; i < r->node->n_attribute; i++) {
        const Onnx__AttributeProto *a = r->node->attribute[i];
        int at;
        if (!a->name || !a->name[0])
            return onnx_fail(r, TG_ERR_FORMAT, "attribute %zu has no name", i);
        if (a->ref_attr_name && a->ref_attr_name[0])
            return onnx_fail(r, TG_ERR_UNSUPPORTED,
                             "attribute '%s' refers to a function attribute", a->name);
        if (!in_list(op->attrs, a->name, &at) || at >= 64)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "attribute '%s' is not supported",
                             a->name);
        if (seen >> at & 1)
            return onnx_fail(r, TG_ERR_FORMAT, "attribute '%s' is given twice",
                             a->name);
        seen |= (uint64_t)1 << at;
    }
    return TG_OK;
}

/*
 * A doc_string that is a tracegraph call site, "file.c:42 func" (what
 * onnx_write.c writes): sets file, line and func; 0 if it is not one.
 */
static int parse_site(const char *s, char *file, size_t flen, int *line,
                      char *func, size_t fnlen)
{
    const char *sp = s ? strchr(s, ' ') : NULL;
    if (!sp || !sp[1] || strpbrk(sp + 1, " \t\r\n"))
        return 0;
    const char *colon = NULL;
    for (const char *p = s; p < sp; p++)
        if (*p == ':')
            colon = p;
    if (!colon || colon == s || sp - colon < 2 || sp - colon > 10 ||
        (size_t)(colon - s) >= flen || strlen(sp + 1) >= fnlen)
        return 0;
    long v = 0;
    for (const char *p = colon + 1; p < sp; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
    }
    if (v > INT32_MAX)
        return 0;
    memcpy(file, s, (size_t)(colon - s));
    file[colon - s] = 0;
    snprintf(func, fnlen, "%s", sp + 1);
    *line = (int)v;
    return 1;
}

/* The node's provenance: its call site if tracegraph wrote it, else its
 * place in the file. */
static tg_status node_prov(onnx_reader *r)
{
    const Onnx__NodeProto *n = r->node;
    char file[256], func[256];
    int line;
    if (!parse_site(n->doc_string, file, sizeof file, &line, func, sizeof func)) {
        snprintf(file, sizeof file, "%s", r->file);
        line = 1 + r->index;
        if (n->name && n->name[0])
            snprintf(func, sizeof func, "%s (%s)", n->name, n->op_type);
        else
            snprintf(func, sizeof func, "%s", n->op_type);
    }
    r->prov = graph_add_prov(r->g, file, line, func, NULL, 0);
    return r->prov < 0 ? onnx_fail(r, TG_ERR_NOMEM, "out of memory") : TG_OK;
}

/* The node's domain is the default one, its op in the table, and its
 * input, output and attribute lists fit. */
static tg_status check_node(onnx_reader *r, const onnx_op **op)
{
    const Onnx__NodeProto *n = r->node;
    if (!n->op_type || !n->op_type[0])
        return onnx_fail(r, TG_ERR_FORMAT, "no op_type");
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "domain '%s' is not supported",
                         n->domain);
    if (r->opset < 0)
        return onnx_fail(r, TG_ERR_FORMAT, "no opset for the default domain");
    *op = onnx_op_find(n->op_type);
    if (!*op)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "op type '%s' is not supported",
                         n->op_type);
    if (n->n_output == 0 || n->n_output > 64)
        return onnx_fail(r, TG_ERR_FORMAT, "%zu outputs", n->n_output);
    for (size_t i = 0; i < n->n_input; i++)
        if (!n->input[i])
            return onnx_fail(r, TG_ERR_FORMAT, "input %zu has no name", i);
    if (n->n_input < (size_t)(*op)->min_in ||
        ((*op)->max_in >= 0 && n->n_input > (size_t)(*op)->max_in))
        return onnx_fail(r, TG_ERR_FORMAT, "%zu inputs (takes %d to %d)", n->n_input,
                         (*op)->min_in, (*op)->max_in);
    return check_attrs(r, *op);
}

/*
 * A converter that took a traced size but added no node (a Resize whose
 * sizes map a dynamic dim to itself at the traced size binds its input)
 * has no node for graph_guard_specialized to flag: the symbols of its
 * inputs' dynamic dims are guarded here (every symbol when the traced
 * size came in a constant, as graph_node_fixed_syms does), or a run at
 * another size would follow the input where the node fixes the size.
 */
static tg_status guard_no_node(onnx_reader *r, const Onnx__NodeProto *n)
{
    uint64_t syms = 0;
    if (r->g->nsyms == 0)
        return TG_OK;
    for (size_t k = 0; k < n->n_input; k++) {
        const onnx_entry *e = n->input[k] && n->input[k][0] ? onnx_find(r, n->input[k]) : NULL;
        if (!e || e->value < 0)
            continue;
        const graph_value *v = &r->g->values[e->value];
        for (int d = 0; d < v->type.ndim; d++)
            if (v->dyn >> d & 1 && v->sym[d] >= 0 && v->sym[d] < 64)
                syms |= 1ull << v->sym[d];
    }
    if (!syms) /* the traced size came in a constant (Shape(x) padded): every symbol */
        syms = ~0ull;
    if (graph_guard_syms(r->g, syms, r->prov) != TG_OK)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for its size guards");
    if (r->warn) { /* as warn_specialized says of a node */
        char site[300], msg[600];
        graph_prov_str(r->g, r->prov, site, sizeof site);
        snprintf(msg, sizeof msg, "%s: %s maps its dynamic dims to themselves at their traced "
                 "values only (a size that does not follow the dim): a run at other sizes "
                 "fails there", site, n->op_type);
        r->warn(r->warn_ctx, msg);
    }
    return TG_OK;
}

static tg_status convert_node(onnx_reader *r, const Onnx__NodeProto *n,
                              int32_t index)
{
    const onnx_op *op = NULL;
    r->node = n;
    r->index = index;
    r->bound = 0;
    r->specialized = 0;
    int done = 0;
    tg_status st = check_node(r, &op);
    if (st == TG_OK)
        st = node_prov(r);
    if (st == TG_OK)
        st = onnx_fold(r, op, &done);
    r->specialized = 0;
    int32_t nodes = r->g->nnodes;
    if (st == TG_OK && !done)
        st = op->fn(r, op);
    if (st == TG_OK && !done && r->specialized && r->g->nnodes == nodes)
        st = guard_no_node(r, n);
    for (size_t k = 0; st == TG_OK && k < n->n_output; k++)
        if (n->output[k] && n->output[k][0] && !(r->bound >> k & 1))
            st = onnx_fail(r, TG_ERR_UNSUPPORTED, "output %zu ('%s') is not supported",
                           k, n->output[k]);
    return st;
}

/* ---- graph outputs ---- */

/* A declared output type, where the file states it, equals the computed one. */
static tg_status check_output_type(onnx_reader *r, const Onnx__ValueInfoProto *vi,
                                   const graph_type *t)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return TG_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    graph_dtype dt;
    int ok = !tt->elem_type || (onnx_dtype_from_code(tt->elem_type, &dt) && dt == t->dtype);
    if (ok && tt->shape) {
        ok = tt->shape->n_dim == (size_t)t->ndim;
        for (int d = 0; ok && d < t->ndim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
            ok = dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
                 dim->dim_value == t->dim[d];
        }
    }
    if (ok)
        return TG_OK;
    /* PyTorch 1.13 declares a ceil_mode pool's output with the window that
     * would start in the end padding, which it does not compute (nor does
     * ONNX Runtime, nor the ONNX spec since 1.16): the graph's size holds. */
    int sizes_only = tt->shape && tt->shape->n_dim == (size_t)t->ndim &&
                     (!tt->elem_type || (onnx_dtype_from_code(tt->elem_type, &dt) &&
                                         dt == t->dtype));
    char have[160], want[200] = "";
    size_t at = 0;
    for (size_t d = 0; tt->shape && d < tt->shape->n_dim && at < 150; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        at += (size_t)snprintf(want + at, sizeof want - at, "%s", d ? "," : "[");
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            at += (size_t)snprintf(want + at, sizeof want - at, "%lld", LL(dim->dim_value));
        else
            at += (size_t)snprintf(want + at, sizeof want - at, "?");
    }
    snprintf(want + at, sizeof want - at, "%s", !tt->shape ? "" : at ? "]" : "[]");
    if (sizes_only && r->ceil_node) {
        if (!r->warn)
            return TG_OK;
        const Onnx__NodeProto *pool = r->ceil_node;
        char msg[700];
        snprintf(msg, sizeof msg, "%s: graph output '%s' is declared %s, the graph computes "
                 "%s: node %d '%s' (%s) has ceil_mode 1 and drops the window that would "
                 "start in the end padding, as PyTorch, ONNX Runtime and the ONNX spec (1.16 "
                 "on) do; the declared size is ignored", r->file, vi->name, want,
                 graph_shape_str(t, have, sizeof have), (int)r->ceil_index,
                 pool->name ? pool->name : "", pool->op_type ? pool->op_type : "");
        r->warn(r->warn_ctx, msg);
        return TG_OK;
    }
    return onnx_fail(r, TG_ERR_FORMAT, "graph output '%s' is declared %s%s, the graph "
                     "computes %s%s", vi->name, onnx_code_name(tt->elem_type), want,
                     graph_dtype_name(t->dtype), graph_shape_str(t, have, sizeof have));
}

/*
 * A graph output that is a constant computed from traced sizes (Shape of
 * an input with a dynamic dim, and what follows from it) holds the traced
 * numbers, with no node to flag: its symbols get size guards
 * (graph_guard_syms), named by the output.
 */
static tg_status guard_const_output(onnx_reader *r, const onnx_entry *e, const char *name)
{
    uint64_t syms = e->traced_shape ? ~0ull : 0;
    for (int64_t k = 0, n = graph_type_numel(&e->type); e->sym && k < n; k++)
        syms |= e->sym[k] >= 0 ? 1ull << (e->sym[k] & 63)
                : e->sym[k] == ONNX_SYM_DERIVED ? ~0ull : 0;
    char func[300];
    snprintf(func, sizeof func, "graph output '%.200s' (a constant)", name);
    int32_t prov = graph_add_prov(r->g, r->file, 0, func, NULL, 0);
    if (prov < 0 || graph_guard_syms(r->g, syms, prov) != TG_OK)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    return TG_OK;
}

static tg_status add_outputs(onnx_reader *r, const Onnx__GraphProto *gp)
{
    if (gp->n_output == 0)
        return onnx_fail(r, TG_ERR_FORMAT, "the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !vi->name[0])
            return onnx_fail(r, TG_ERR_FORMAT, "graph output %zu has no name", i);
        onnx_entry *e = onnx_find(r, vi->name);
        if (!e)
            return onnx_fail(r, TG_ERR_FORMAT, "graph output '%s' is not defined by a "
                             "graph input, an initializer or a node", vi->name);
        tg_status st = e->value < 0 ? onnx_materialize(r, e) : TG_OK;
        if (st == TG_OK)
            st = check_output_type(r, vi, onnx_vtype(r, e->value));
        if (st == TG_OK && e->is_const && onnx_entry_traced(e))
            st = guard_const_output(r, e, vi->name);
        if (st != TG_OK)
            return st;
        if (graph_add_output(r->g, e->value, vi->name) != TG_OK)
            return onnx_fail(r, TG_ERR_NOMEM, "%s", graph_error(r->g));
    }
    return TG_OK;
}

/* ---- the model ---- */

/* IR version and the default domain's opset. */
static tg_status check_versions(onnx_reader *r, const Onnx__ModelProto *m)
{
    if (!m->has_ir_version || !m->graph)
        return onnx_fail(r, TG_ERR_FORMAT, "not an ONNX model (no %s)",
                         m->has_ir_version ? "graph" : "ir_version");
    if (m->ir_version < ONNX_MIN_IR || m->ir_version > ONNX_MAX_IR)
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "IR version %lld is not supported (%d to %d)",
                         LL(m->ir_version), ONNX_MIN_IR, ONNX_MAX_IR);
    r->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
            r->opset = o->has_version ? o->version : 0;
    }
    if (r->opset < 0)
        return TG_OK; /* only an error if a node uses the default domain */
    if (r->opset < FORMAT_ONNX_MIN_OPSET || r->opset > FORMAT_ONNX_MAX_OPSET)
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "opset %lld is not supported (%d to %d)", LL(r->opset),
                         FORMAT_ONNX_MIN_OPSET, FORMAT_ONNX_MAX_OPSET);
    return TG_OK;
}

/*
 * The import-time check of dynamic dims: every node left flagged
 * specialized (a converter took a traced size: a shape, a constant, an
 * attribute computed from a dynamic dim; or its shapes stop following
 * the dims at other sizes, as propagation found) is reported through
 * r->warn, once per ONNX node, naming the dims its inputs carry (every
 * dim when they carry none, or a derived one).  A warning, not an
 * error: the graph is right at the traced sizes, which is all many
 * users run; the message says where a run at other sizes fails, and
 * read_graph's size guards (graph_guard_specialized) make it fail there.
 */
static void warn_specialized(onnx_reader *r)
{
    const graph *g = r->g;
    int32_t last = -2;
    for (int32_t i = 0; r->warn && i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        int32_t prov = n->nprov ? n->prov[0] : -1;
        if (!(n->flags & GRAPH_NODE_SPECIALIZED) || (n->flags & GRAPH_NODE_DEAD) ||
            prov == last)
            continue; /* the nodes of one ONNX node are adjacent */
        last = prov;
        uint64_t syms = graph_node_fixed_syms(g, i);
        char names[400] = "", site[300], msg[900];
        size_t at = 0;
        int count = 0;
        for (int s = 0; s < g->nsyms && s < 64 && at < sizeof names - 80; s++)
            if (syms >> s & 1)
                at += (size_t)snprintf(names + at, sizeof names - at, "%s'%s' (traced as %lld)",
                                       count++ ? ", " : "", g->syms[s].name,
                                       LL(g->syms[s].traced));
        graph_prov_str(g, prov, site, sizeof site);
        snprintf(msg, sizeof msg, "%s: %s fixes a size computed from dynamic dim%s %s at its "
                 "traced value (a shape or constant that does not follow the dim): a run at "
                 "other sizes fails there", site, graph_ops[n->op].name, count > 1 ? "s" : "",
                 names);
        r->warn(r->warn_ctx, msg);
    }
}

static tg_status read_graph(onnx_reader *r, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *gp = m->graph;
    tg_status st = add_initializers(r, gp);
    if (st == TG_OK)
        st = add_inputs(r, gp);
    for (size_t i = 0; st == TG_OK && i < gp->n_node; i++)
        st = convert_node(r, gp->node[i], (int32_t)i);
    r->node = NULL;
    if (st == TG_OK)
        st = add_outputs(r, gp);
    if (st == TG_OK && r->g->nsyms > 0 && graph_propagate_dynamic(r->g) != TG_OK)
        st = onnx_fail(r, TG_ERR_FORMAT, "%s", graph_error(r->g));
    /* a run at a size the specialized nodes did not see fails, not
     * returns what they computed for the traced one */
    if (st == TG_OK && r->g->nsyms > 0 && graph_guard_specialized(r->g) != TG_OK)
        st = onnx_fail(r, TG_ERR_NOMEM, "%s", graph_error(r->g));
    if (st == TG_OK && graph_verify(r->g, 0) != TG_OK)
        st = onnx_fail(r, TG_ERR_FORMAT, "%s", graph_error(r->g));
    if (st == TG_OK)
        warn_specialized(r);
    return st;
}

/* protobuf-c allocates the unpacked message through tg_malloc; a failure
   marks *data so that it is reported as out of memory, not as a bad file. */
static void *pb_alloc(void *data, size_t n)
{
    void *p = tg_malloc(n);
    if (!p)
        *(int *)data = 1;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    tg_free(p);
}

graph *onnx_read_mem(const void *buf, size_t len, const char *name,
                     const format_onnx_load_opts *opts, tg_status *status,
                     char *err, size_t errlen)
{
    onnx_reader r;
    memset(&r, 0, sizeof r);
    r.file = name ? name : "onnx";
    r.err = err;
    r.errlen = errlen;
    r.params = opts && opts->params;
    r.dim_default = opts && opts->dim_default >= 1 ? opts->dim_default : 1;
    r.warn = opts ? opts->warn : NULL;
    r.warn_ctx = opts ? opts->warn_ctx : NULL;
    r.made_limit = len / 2 < (size_t)ONNX_MAX_MADE_BYTES / 2 ? ONNX_MAX_MADE_BYTES
                                                              : (int64_t)len * 2;
    if (err && errlen)
        err[0] = 0;
    if (!buf && len) {
        *status = onnx_fail(&r, TG_ERR_NULL, "NULL buffer");
        return NULL;
    }
    int pb_oom = 0;
    ProtobufCAllocator pb = {pb_alloc, pb_free, &pb_oom};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pb, len, buf);
    if (!m) {
        *status = pb_oom ? onnx_fail(&r, TG_ERR_NOMEM, "out of memory unpacking the protobuf")
                         : onnx_fail(&r, TG_ERR_FORMAT,
                                     "not an ONNX model (the protobuf does not parse)");
        return NULL;
    }
    tg_status st = check_versions(&r, m);
    if (st == TG_OK) {
        const char *gname = m->graph->name && m->graph->name[0] ? m->graph->name : "onnx";
        r.g = graph_new(gname);
        st = r.g ? read_graph(&r, m) : onnx_fail(&r, TG_ERR_NOMEM, "out of memory");
    }
    onnx_free_entries(&r);
    onnx__model_proto__free_unpacked(m, &pb);
    *status = st;
    if (st != TG_OK) {
        graph_free(r.g);
        return NULL;
    }
    return r.g;
}

graph *format_onnx_load_mem(const void *buf, size_t len, const char *name,
                            const format_onnx_load_opts *opts, char *err,
                            size_t errlen)
{
    tg_status st;
    return onnx_read_mem(buf, len, name, opts, &st, err, errlen);
}

/*
 * Whether b can start a ModelProto: a protobuf field tag of a wire type
 * ONNX uses (varint, 64-bit, bytes, 32-bit), field number not 0.  A
 * stream of zeros (/dev/zero) fails here, on its first byte.
 */
static int onnx_first_byte_ok(uint8_t b)
{
    unsigned wire = b & 7;
    return (wire == 0 || wire == 1 || wire == 2 || wire == 5) && (b >= 0x80 || b >> 3);
}

/*
 * The bytes of the model at path: the first byte checked as soon as it
 * arrives, then at most FORMAT_ONNX_MAX_BYTES (protobuf's own limit for a
 * message), from a regular file checked against its size before reading.
 */
static tg_status onnx_read_file(const char *path, uint8_t **buf, size_t *len, char *err,
                                size_t errlen)
{
    *buf = NULL;
    *len = 0;
    format_src s;
    tg_status st = format_src_open(&s, path, err, errlen);
    if (st != TG_OK)
        return st;
    if (s.regular && s.size > FORMAT_ONNX_MAX_BYTES)
        st = tg_fail(TG_ERR_UNSUPPORTED, err, errlen, "%s: %llu bytes: larger than an ONNX "
                     "model may be (%llu bytes, protobuf's limit)", path,
                     (unsigned long long)s.size, (unsigned long long)FORMAT_ONNX_MAX_BYTES);
    if (st == TG_OK)
        st = format_src_fill(&s, 1, NULL, 0, err, errlen);
    if (st == TG_OK && s.len && !onnx_first_byte_ok(s.buf[0]))
        st = tg_fail(TG_ERR_FORMAT, err, errlen, "%s: at byte 0: not an ONNX model (0x%02x "
                     "does not start a protobuf field)", path, s.buf[0]);
    if (st == TG_OK)
        st = format_src_fill(&s, (size_t)FORMAT_ONNX_MAX_BYTES + 1, NULL, 0, err, errlen);
    if (st == TG_OK && s.len > FORMAT_ONNX_MAX_BYTES)
        st = tg_fail(TG_ERR_UNSUPPORTED, err, errlen, "%s: more than %llu bytes: larger than "
                     "an ONNX model may be (protobuf's limit)", path,
                     (unsigned long long)FORMAT_ONNX_MAX_BYTES);
    if (st == TG_OK && !s.buf && !(s.buf = tg_malloc(1)))
        st = tg_fail(TG_ERR_NOMEM, err, errlen, "%s: out of memory reading the file", path);
    if (st == TG_OK) {
        *buf = s.buf;
        *len = s.len;
        s.buf = NULL;
    }
    format_src_close(&s);
    return st;
}

graph *format_onnx_load(const char *path, const format_onnx_load_opts *opts,
                        char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    if (!path) {
        tg_errf(err, errlen, "format_onnx_load: NULL path");
        return NULL;
    }
    if (onnx_read_file(path, &buf, &len, err, errlen) != TG_OK)
        return NULL;
    graph *g = format_onnx_load_mem(buf, len, path, opts, err, errlen);
    tg_free(buf);
    return g;
}
