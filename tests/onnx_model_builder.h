/*
 * onnx_model_builder.h - one-node ONNX models built in memory, for the
 * import tests (test_onnx_import.c, test_onnx_import_ops.c): the model
 * (mb) with up to two graph inputs, its attributes and initializers, its
 * import, an expected refusal with its exact message, and a run of the
 * imported graph against expected values.
 */
#ifndef TG_TESTS_ONNX_MODEL_BUILDER_H
#define TG_TESTS_ONNX_MODEL_BUILDER_H

#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "onnx_test_util.h"
#include "graph/graph_impl.h"

typedef struct mb { /* a one-node model under construction */
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node, *nodes[1];
    Onnx__ValueInfoProto in[2], out, *ins[2], *outs[1];
    onnx_test_tensor type[3];
    char *node_in[2], *node_out[1];
} mb;

/* Value info i: dtype with nd dims dv (a negative dim: the dim_param "B"). */
static inline void mb_tensor_type(mb *b, int i, int32_t dtype, int nd, const int64_t *dv)
{
    static const char *const params[] = {"B"};
    onnx_test_tensor_type(&b->type[i], dtype, nd, dv, params);
}

/* One node `op` with inputs in0 (, in1) from graph inputs x (, s). */
static inline void mb_init(mb *b, const char *op, const char *in0, const char *in1)
{
    memset(b, 0, sizeof *b);
    onnx_test_header_init(&b->m, &b->g, &b->opset, b->opsets);
    b->node = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    b->node.op_type = (char *)op;
    b->node.name = "n0";
    b->node_in[0] = (char *)in0;
    b->node_in[1] = (char *)in1;
    b->node.n_input = in1 ? 2 : 1;
    b->node.input = b->node_in;
    b->node_out[0] = "y";
    b->node.n_output = 1;
    b->node.output = b->node_out;
    b->nodes[0] = &b->node;
    b->g.n_node = 1;
    b->g.node = b->nodes;
    const char *in_names[2] = {"x", "s"};
    const int64_t x23[2] = {2, 3};
    for (int i = 0; i < 2; i++) {
        b->in[i] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
        b->in[i].name = (char *)in_names[i];
        mb_tensor_type(b, i, i == 0 ? 1 : 7, i == 0 ? 2 : 1, x23); /* x f32[2,3], s i64[2] */
        b->in[i].type = &b->type[i].type;
        b->ins[i] = &b->in[i];
    }
    b->g.n_input = 1;
    b->g.input = b->ins;
    onnx_test_output(&b->g, &b->out, b->outs, "y");
}

/* Packs and imports b; returns the graph, status and message. */
static inline graph *mb_load(mb *b, const format_onnx_load_opts *opts, tg_status *st,
                             char *err, size_t errlen)
{
    size_t len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(len + 1);
    onnx__model_proto__pack(&b->m, buf);
    graph *g = onnx_read_mem(buf, len, "mem.onnx", opts, st, err, errlen);
    free(buf);
    return g;
}

/* The import of b fails with status want_st and exactly message want. */
static inline void expect_fail(mb *b, tg_status want_st, const char *want)
{
    char err[512] = "";
    tg_status st;
    graph *g = mb_load(b, NULL, &st, err, sizeof err);
    CHECK_MSG(!g && st == want_st && !strcmp(err, want),
              "got status %d \"%s\", want %d \"%s\"", (int)st, err, (int)want_st, want);
    graph_free(g);
}


/* a as an INT attribute name = v. */
static inline void attr_int(Onnx__AttributeProto *a, const char *name, int64_t v)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

/* a as a FLOAT attribute name = v. */
static inline void attr_float(Onnx__AttributeProto *a, const char *name, float v)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    a->has_f = 1;
    a->f = v;
}

/* b's node with one STRING attribute name = v (in a, which b points to). */
static inline void mb_attr_str(mb *b, Onnx__AttributeProto *a, Onnx__AttributeProto **as,
                               const char *name, const char *v)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
    as[0] = a;
    b->node.n_attribute = 1;
    b->node.attribute = as;
}


/* Attribute i of b's node, as[i] = a: INTS name = v[0..n) (INTS, or a
 * STRING when n < 0 and v is NULL: then s). */
static inline void mb_attr_at(mb *b, Onnx__AttributeProto *a,
                              Onnx__AttributeProto **as, int i,
                              const char *name, int64_t *v, int n, const char *s)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    if (s) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->has_s = 1;
        a->s.data = (uint8_t *)s;
        a->s.len = strlen(s);
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->n_ints = (size_t)n;
        a->ints = v;
    }
    as[i] = a;
    b->node.n_attribute = (size_t)i + 1;
    b->node.attribute = as;
}


/* An i64 initializer name = v[0..n) (1-D) in t, the only one of b. */
static inline void mb_init_i64(mb *b, Onnx__TensorProto *t, Onnx__TensorProto **ts,
                               const char *name, int64_t *dims, int64_t *v, int n)
{
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = 7;
    t->n_dims = 1;
    dims[0] = n;
    t->dims = dims;
    t->n_int64_data = (size_t)n;
    t->int64_data = v;
    ts[0] = t;
    b->g.n_initializer = 1;
    b->g.initializer = ts;
}

/* An initializer: name, f32 (1) or int64 (7) data of nd dims. */
static inline void tensor_init(Onnx__TensorProto *t, const char *name, int32_t dtype,
                               int nd, const int64_t *dims, void *data, size_t n)
{
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)nd;
    t->dims = (int64_t *)dims;
    if (dtype == 7) {
        t->n_int64_data = n;
        t->int64_data = data;
    } else {
        t->n_float_data = n;
        t->float_data = data;
    }
}


/* Interprets g on x f32 of shape xs (n elements) and checks y against
 * want (wn elements) within tol. */
static inline void run_against(const char *what, graph *g, graph_ints xs,
                               const float *x, const float *want, int64_t wn, double tol)
{
    eager_tensor *in = eager_from_data(GRAPH_F32, xs, x), *out = NULL;
    CHECK_MSG(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK, "%s runs: %s", what,
              eager_error());
    if (out) {
        CHECK_MSG(graph_type_numel(eager_type(out)) == wn, "%s: %lld elements, want %lld",
                  what, (long long)graph_type_numel(eager_type(out)), (long long)wn);
        if (graph_type_numel(eager_type(out)) == wn && wn > 0)
            CHECK_FLOATS((const float *)eager_peek(out), want, wn, tol);
    }
    eager_release(in);
    eager_release(out);
    eager_clear_error();
}

#endif
