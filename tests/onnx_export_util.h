/*
 * onnx_export_util.h - test_onnx_export.c's reading of an exported model
 * back (protobuf-c's own unpacker: nodes, attributes, initializers) and
 * the checks every export must pass (unique names, every node input
 * defined before use, call sites in doc_string).  Included by
 * test_onnx_export.c only.
 */
#ifndef TG_TESTS_ONNX_EXPORT_UTIL_H
#define TG_TESTS_ONNX_EXPORT_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/onnx/onnx_write_impl.h"
#include "graph/graph_impl.h"

/* ---- reading an exported model back ---- */

static Onnx__ModelProto *export_unpack(const graph *g, const format_onnx_save_opts *o)
{
    void *buf = NULL;
    size_t len = 0;
    char e[1024];
    tg_status st = format_onnx_save_mem(g, o, &buf, &len, e, sizeof e);
    CHECK_MSG(st == TG_OK, "export %s: %s", g->name, e);
    if (st != TG_OK)
        return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    CHECK_MSG(m != NULL, "%s: the exported bytes unpack", g->name);
    free(buf);
    return m;
}

static const Onnx__NodeProto *node_of(const Onnx__ModelProto *m, const char *type, int k)
{
    for (size_t i = 0; m && i < m->graph->n_node; i++)
        if (strcmp(m->graph->node[i]->op_type, type) == 0 && k-- == 0)
            return m->graph->node[i];
    return NULL;
}

static int count_op(const Onnx__ModelProto *m, const char *type)
{
    int n = 0;
    while (node_of(m, type, n))
        n++;
    return n;
}

static const Onnx__AttributeProto *attr_of(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; n && i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

static int attr_ints_are(const Onnx__NodeProto *n, const char *name, graph_ints want)
{
    const Onnx__AttributeProto *a = attr_of(n, name);
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ||
        a->n_ints != (size_t)want.n)
        return 0;
    for (int i = 0; i < want.n; i++)
        if (a->ints[i] != want.v[i])
            return 0;
    return 1;
}

static int attr_int_is(const Onnx__NodeProto *n, const char *name, int64_t want)
{
    const Onnx__AttributeProto *a = attr_of(n, name);
    return a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && a->i == want;
}

static const Onnx__TensorProto *init_of(const Onnx__ModelProto *m, const char *name)
{
    for (size_t i = 0; m && name && i < m->graph->n_initializer; i++)
        if (strcmp(m->graph->initializer[i]->name, name) == 0)
            return m->graph->initializer[i];
    return NULL;
}

/* Little-endian integer of k bytes (read per the spec, not by memcpy). */
static int64_t get_le(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return k == 8 ? (int64_t)v : (int64_t)(int32_t)v;
}

/* An int64 initializer (by name) holds exactly want. */
static int init_i64s_are(const Onnx__ModelProto *m, const char *name, graph_ints want)
{
    const Onnx__TensorProto *t = init_of(m, name);
    if (!t || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || !t->has_raw_data ||
        t->raw_data.len != 8 * (size_t)want.n)
        return 0;
    for (int i = 0; i < want.n; i++)
        if (get_le(t->raw_data.data + 8 * i, 8) != want.v[i])
            return 0;
    return 1;
}

static float f32_le(const uint8_t *p)
{
    uint32_t u = (uint32_t)get_le(p, 4);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- checks every export must pass ---- */

typedef struct nameset {
    const char **v;
    size_t n;
} nameset;

static int ns_has(const nameset *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return 1;
    return 0;
}

/* Adds x; 0 if it was there already. */
static int ns_add(nameset *s, const char *x)
{
    if (ns_has(s, x))
        return 0;
    s->v[s->n++] = x;
    return 1;
}

/*
 * Model header; tensor names unique (graph inputs, initializers, node
 * outputs); every node input "" or defined before; every output defined;
 * node names unique and set.
 */
static void check_generic(const Onnx__ModelProto *m, const char *what)
{
    if (!m)
        return;
    const Onnx__GraphProto *g = m->graph;
    int64_t opset = FORMAT_ONNX_OPSET; /* 18 for ScatterElements max / min */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__AttributeProto *r = strcmp(g->node[i]->op_type, "ScatterElements")
                                            ? NULL : attr_of(g->node[i], "reduction");
        if (r && r->s.len == 3 && (!memcmp(r->s.data, "max", 3) || !memcmp(r->s.data, "min", 3)))
            opset = 18;
    }
    CHECK_MSG(m->has_ir_version && m->ir_version == ONNX_IR_VERSION, "%s: ir_version", what);
    CHECK_MSG(m->n_opset_import == 1 && strcmp(m->opset_import[0]->domain, "") == 0 &&
                  m->opset_import[0]->version == opset,
              "%s: opset_import", what);
    CHECK_MSG(m->producer_name && strcmp(m->producer_name, "tracegraph") == 0, "%s: producer", what);
    size_t cap = g->n_input + g->n_initializer + 1;
    for (size_t i = 0; i < g->n_node; i++)
        cap += g->node[i]->n_output + 1;
    nameset t = {calloc(cap, sizeof(char *)), 0}, nn = {calloc(cap, sizeof(char *)), 0};
    int ok = t.v && nn.v;
    for (size_t i = 0; ok && i < g->n_input; i++)
        ok = ns_add(&t, g->input[i]->name);
    for (size_t i = 0; ok && i < g->n_initializer; i++)
        ok = ns_add(&t, g->initializer[i]->name);
    CHECK_MSG(ok, "%s: input and initializer names unique", what);
    for (size_t i = 0; ok && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; ok && k < n->n_input; k++) {
            ok = n->input[k][0] == '\0' || ns_has(&t, n->input[k]);
            CHECK_MSG(ok, "%s: node %s input '%s' defined before use", what, n->name, n->input[k]);
        }
        for (size_t k = 0; ok && k < n->n_output; k++) {
            ok = ns_add(&t, n->output[k]);
            CHECK_MSG(ok, "%s: node %s output '%s' unique", what, n->name, n->output[k]);
        }
        ok = ok && n->name && n->name[0] && ns_add(&nn, n->name);
        CHECK_MSG(ok, "%s: node %zu has a unique name", what, i);
    }
    for (size_t i = 0; ok && i < g->n_output; i++) {
        ok = ns_has(&t, g->output[i]->name);
        CHECK_MSG(ok, "%s: output '%s' is defined", what, g->output[i]->name);
    }
    free(t.v);
    free(nn.v);
}

#endif
