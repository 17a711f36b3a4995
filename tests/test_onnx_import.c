/*
 * test_onnx_import.c - ONNX import (formats/onnx.h) on one-node models
 * built here in memory: every refusal with its exact message (a file that
 * is not a model, unknown ops, operands that must be constants, damaged
 * initializers, and what the composed converters refuse: Resize, Trilu,
 * DepthToSpace, ConvTranspose, pools past 2-D), dynamic dims and
 * provenance, and the ops whose ONNX node tests sit below the opsets the
 * importer reads (GlobalAveragePool, the activations, Hardmax's 2-D form)
 * against their formulas.  ONNX's own node tests: test_onnx_node.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "graph_query.h"
#include "onnx_test_util.h"

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
static void mb_tensor_type(mb *b, int i, int32_t dtype, int nd, const int64_t *dv)
{
    static const char *const params[] = {"B"};
    onnx_test_tensor_type(&b->type[i], dtype, nd, dv, params);
}

/* One node `op` with inputs in0 (, in1) from graph inputs x (, s). */
static void mb_init(mb *b, const char *op, const char *in0, const char *in1)
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
static graph *mb_load(mb *b, const format_onnx_load_opts *opts, tg_status *st,
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
static void expect_fail(mb *b, tg_status want_st, const char *want)
{
    char err[512] = "";
    tg_status st;
    graph *g = mb_load(b, NULL, &st, err, sizeof err);
    CHECK_MSG(!g && st == want_st && !strcmp(err, want),
              "got status %d \"%s\", want %d \"%s\"", (int)st, err, (int)want_st, want);
    graph_free(g);
}

static void bad_inputs(void)
{
    char err[512];
    tg_status st;
    /* not a protobuf: field 1 with wire type 7, which does not exist */
    graph *g = onnx_read_mem("\x0f\x01\x02", 3, "bad.onnx", NULL, &st, err, sizeof err);
    CHECK(!g && st == TG_ERR_FORMAT);
    CHECK(!strcmp(err, "bad.onnx: not an ONNX model (the protobuf does not parse)"));
    CHECK(format_onnx_load("/nonexistent/m.onnx", NULL, err, sizeof err) == NULL);
    CHECK(!strncmp(err, "/nonexistent/m.onnx: cannot open", 32));

    mb b;
    mb_init(&b, "FancyOp", "x", NULL);
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (FancyOp): op type 'FancyOp' is not supported");
    mb_init(&b, "Reshape", "x", "s");
    b.g.n_input = 2;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Reshape): input 1 (shape) must be a constant "
                "known at load time, but 's' is a graph input");
    mb_init(&b, "CumSum", "x", "s"); /* RoBERTa's is a Constant; this one is not */
    b.g.n_input = 2;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (CumSum): input 1 (axis) must be a constant "
                "known at load time, but 's' is a graph input");
    mb_init(&b, "Relu", "nope", NULL);
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Relu): input 0 ('nope') is not defined by a "
                "graph input, an initializer or an earlier node");
    mb_init(&b, "Relu", "x", NULL);
    b.opset.version = 99;
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: opset 99 is not supported (7 to 25)");

    /* an initializer whose raw_data is shorter than its dims need */
    mb_init(&b, "Add", "x", "w");
    Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT, *ws[1] = {&w};
    int64_t wd[2] = {2, 3};
    float wdata[5] = {0};
    w.name = "w";
    w.has_data_type = 1;
    w.data_type = 1;
    w.n_dims = 2;
    w.dims = wd;
    w.has_raw_data = 1;
    w.raw_data.len = sizeof wdata;
    w.raw_data.data = (uint8_t *)wdata;
    b.g.n_initializer = 1;
    b.g.initializer = ws;
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: initializer 'w': raw_data has 20 bytes, f32 [2,3] needs 24");
    /* the same with its 6 values: loads, as a param with opts->params */
    float wfull[6] = {1, 2, 3, 4, 5, 6};
    w.raw_data.len = sizeof wfull;
    w.raw_data.data = (uint8_t *)wfull;
    format_onnx_load_opts po = {1, 0};
    g = mb_load(&b, &po, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (g) {
        const graph_value *v = &g->values[g->nodes[0].in[1]];
        CHECK(v->kind == GRAPH_VALUE_PARAM && !strcmp(v->name, "w"));
        CHECK(!memcmp(v->data, wfull, sizeof wfull));
    }
    graph_free(g);
}

/* a as an INT attribute name = v. */
static void attr_int(Onnx__AttributeProto *a, const char *name, int64_t v)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

/* a as a FLOAT attribute name = v. */
static void attr_float(Onnx__AttributeProto *a, const char *name, float v)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    a->has_f = 1;
    a->f = v;
}

/* b's node with one STRING attribute name = v (in a, which b points to). */
static void mb_attr_str(mb *b, Onnx__AttributeProto *a, Onnx__AttributeProto **as,
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

/* The composed converters (Resize, Trilu, DepthToSpace, 1-D Conv) on
 * what they refuse: each message names the node and what is wrong. */
static void bad_composed(void)
{
    mb b;
    Onnx__AttributeProto a, *as[1];
    static const int64_t x4[4] = {1, 8, 2, 2}, x6[6] = {1, 1, 2, 2, 2, 2};
    /* Resize x f32[1,8,2,2] by sizes from graph input s: sizes must be known */
    mb_init(&b, "Resize", "x", "");
    mb_tensor_type(&b, 0, 1, 4, x4);
    char *rin[4] = {"x", "", "", "s"};
    b.node.input = rin;
    b.node.n_input = 4;
    b.g.n_input = 2;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Resize): input 3 (sizes) must be a constant "
                "known at load time, but 's' is a graph input");
    mb_attr_str(&b, &a, as, "coordinate_transformation_mode", "tf_crop_and_resize");
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Resize): coordinate_transformation_mode "
                "'tf_crop_and_resize' is not supported");
    mb_attr_str(&b, &a, as, "mode", "trilinear");
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Resize): mode 'trilinear' is not a known value");
    a.s.data = NULL; /* an empty string as protobuf-c unpacks it (the fuzzer's find) */
    a.s.len = 0;
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Resize): mode '' is not a known value");
    b.node.n_input = 1;
    b.node.n_attribute = 0;
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Resize): neither scales nor sizes is given");
    /* sizes from an initializer so large that the taps would not fit (the
     * fuzzer's find: seconds of copying before the bound) */
    Onnx__TensorProto sz = ONNX__TENSOR_PROTO__INIT, *szs[1] = {&sz};
    int64_t szd[1] = {4}, szv[4] = {1, 8, 2, 16777215};
    sz.name = "s";
    sz.has_data_type = 1;
    sz.data_type = 7;
    sz.n_dims = 1;
    sz.dims = szd;
    sz.n_int64_data = 4;
    sz.int64_data = szv;
    b.g.n_initializer = 1;
    b.g.initializer = szs;
    b.g.n_input = 1;
    b.node.n_input = 4;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Resize): resizing axis 3 to 16777215: its taps would "
                "take over 64 MiB");
    /* DepthToSpace: a mode that does not exist, a C that blocksize^2 does not divide */
    mb_init(&b, "DepthToSpace", "x", NULL);
    mb_tensor_type(&b, 0, 1, 4, x4);
    mb_attr_str(&b, &a, as, "mode", "RDC");
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (DepthToSpace): mode 'RDC' is neither DCR nor CRD");
    b.node.n_attribute = 0;
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (DepthToSpace): blocksize 0 is not in 1..65536");
    /* Trilu with k from a graph input; and on a vector */
    mb_init(&b, "Trilu", "x", "s");
    b.g.n_input = 2;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Trilu): input 1 (k) must be a constant known at "
                "load time, but 's' is a graph input");
    mb_init(&b, "Trilu", "s", NULL);
    b.in[0].name = "s";
    mb_tensor_type(&b, 0, 7, 1, x4);
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Trilu): input has 1 dims, want >= 2");
    /* a 4-D pool (6-D input; 3-D: test_onnx_conv3d.c) */
    mb_init(&b, "MaxPool", "x", NULL);
    mb_tensor_type(&b, 0, 1, 6, x6);
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (MaxPool): only 1-D (NCL), 2-D (NCHW) and 3-D (NCDHW) "
                "are supported, the input has 6 dims");
}

/* Attribute i of b's node, as[i] = a: INTS name = v[0..n) (INTS, or a
 * STRING when n < 0 and v is NULL: then s). */
static void mb_attr_at(mb *b, Onnx__AttributeProto *a, Onnx__AttributeProto **as, int i,
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

/*
 * ConvTranspose: what it refuses (output_shape that needs a negative pad
 * or an output padding that reaches the stride, or that follows a dynamic
 * dim; an unknown auto_pad; 4-D), and pads it works out where the node
 * tests do not look: SAME_LOWER over a dynamic H, 1-D with
 * output_padding.
 */
static void conv_transpose(void)
{
    mb b;
    Onnx__AttributeProto a[2], *as[2];
    int64_t os1[1] = {5}, os85[2] = {8, 5}, os65[2] = {6, 5}, s2[2] = {2, 2};
    static const int64_t x4[4] = {1, 1, 3, 3}, w4[4] = {1, 2, 3, 3}, xd[4] = {1, 1, -1, 3};
    static const int64_t x5d[5] = {1, 1, 2, 2, -1}, w5[5] = {1, 2, 2, 2, 2};
    static const int64_t x6[6] = {1, 1, 2, 2, 2, 2};
    int64_t os553[3] = {5, 5, 3};
    const char *pre = "mem.onnx: node 0 'n0' (ConvTranspose): ";
    char want[512];
#define CT_FAIL(st, msg) \
    (snprintf(want, sizeof want, "%s%s", pre, msg), expect_fail(&b, st, want))
    mb_init(&b, "ConvTranspose", "x", "s"); /* x [1,1,3,3], W [1,2,3,3]: out 5x5 */
    mb_tensor_type(&b, 0, 1, 4, x4);
    mb_tensor_type(&b, 1, 1, 4, w4);
    b.g.n_input = 2;
    mb_attr_at(&b, &a[0], as, 0, "output_shape", os1, 1, NULL);
    CT_FAIL(TG_ERR_FORMAT, "output_shape has 1 entries, want 2");
    mb_attr_at(&b, &a[0], as, 0, "output_shape", os85, 2, NULL); /* total -3: start -1 */
    CT_FAIL(TG_ERR_UNSUPPORTED, "an output size of 8 needs a start pad of -1: negative pads "
                                "are not supported");
    mb_attr_at(&b, &a[0], as, 0, "output_shape", os65, 2, NULL); /* end -1 at stride 1 */
    CT_FAIL(TG_ERR_UNSUPPORTED, "an output size of 6 needs an output padding of 1, which "
                                "must be smaller than the stride 1 or the dilation 1");
    mb_attr_at(&b, &a[1], as, 1, "auto_pad", NULL, -1, "SAME_MIDDLE");
    CT_FAIL(TG_ERR_UNSUPPORTED, "auto_pad 'SAME_MIDDLE' is not supported");
    mb_attr_at(&b, &a[0], as, 0, "auto_pad", NULL, -1, "SAME_MIDDLE");
    CT_FAIL(TG_ERR_UNSUPPORTED, "auto_pad 'SAME_MIDDLE' is not supported");
    mb_tensor_type(&b, 0, 1, 4, xd);
    mb_attr_at(&b, &a[0], as, 0, "output_shape", os65, 2, NULL);
    CT_FAIL(TG_ERR_UNSUPPORTED, "output_shape with a dynamic spatial dim is not supported");
    mb_tensor_type(&b, 0, 1, 5, x5d); /* 3-D: W is dim 4 */
    mb_tensor_type(&b, 1, 1, 5, w5);
    mb_attr_at(&b, &a[0], as, 0, "output_shape", os553, 3, NULL);
    b.node.n_attribute = 1;
    CT_FAIL(TG_ERR_UNSUPPORTED, "output_shape with a dynamic spatial dim is not supported");
    mb_tensor_type(&b, 0, 1, 6, x6);
    b.node.n_attribute = 0;
    CT_FAIL(TG_ERR_UNSUPPORTED, "only 1-D (NCL), 2-D (NCHW) and 3-D (NCDHW) are supported, "
                                "the input has 6 dims");
#undef CT_FAIL

    /* SAME_LOWER, stride 2 over a dynamic H: out = in * 2, total padding
     * 2*(in-1) + 3 - 2*in = 1 whatever in is, the 1 at the start */
    char err[512];
    tg_status st;
    mb_tensor_type(&b, 0, 1, 4, xd);
    mb_tensor_type(&b, 1, 1, 4, w4);
    mb_attr_at(&b, &a[0], as, 0, "auto_pad", NULL, -1, "SAME_LOWER");
    mb_attr_at(&b, &a[1], as, 1, "strides", s2, 2, NULL);
    format_onnx_load_opts o = {0, 4};
    graph *g = mb_load(&b, &o, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "ConvTranspose SAME_LOWER over a dynamic H: %s", err);
    int32_t i = g ? find_op(g, GRAPH_OP_conv_transpose2d) : -1;
    const graph_conv_transpose2d_attrs *at = i >= 0 ? graph_node_attrs(&g->nodes[i]) : NULL;
    CHECK(at && at->padding.n == 4 && at->padding.v[0] == 1 && at->padding.v[1] == 1 &&
          at->padding.v[2] == 0 && at->padding.v[3] == 0);
    CHECK(g && g->values[g->outputs[0].value].type.dim[2] == 8);
    if (g) { /* at H 5 the same pads give 10 = 5 * 2 */
        eager_tensor *in[2] = {eager_rand_uniform(TG_SHAPE(1, 1, 5, 3), 1, -1, 1),
                               eager_rand_uniform(TG_SHAPE(1, 2, 3, 3), 2, -1, 1)};
        eager_tensor *out = NULL;
        CHECK(eager_interpret(g, in, 2, &out, 1, NULL) == TG_OK);
        CHECK(out && eager_type(out)->dim[2] == 10 && eager_type(out)->dim[3] == 6);
        eager_release(out), eager_release(in[0]), eager_release(in[1]);
    }
    graph_free(g);

    /* 1-D: x [1,1,3], W [1,2,3], strides 2, output_padding 1: out 8, as
     * 2-D with H 1 and no output padding in H */
    static const int64_t x3[3] = {1, 1, 3}, w3[3] = {1, 2, 3};
    int64_t s1[1] = {2}, op1[1] = {1};
    mb_tensor_type(&b, 0, 1, 3, x3);
    mb_tensor_type(&b, 1, 1, 3, w3);
    mb_attr_at(&b, &a[0], as, 0, "strides", s1, 1, NULL);
    mb_attr_at(&b, &a[1], as, 1, "output_padding", op1, 1, NULL);
    g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "1-D ConvTranspose: %s", err);
    i = g ? find_op(g, GRAPH_OP_conv_transpose2d) : -1;
    at = i >= 0 ? graph_node_attrs(&g->nodes[i]) : NULL;
    CHECK(at && at->output_padding.n == 2 && at->output_padding.v[0] == 0 &&
          at->output_padding.v[1] == 1 && at->stride.v[0] == 1 && at->stride.v[1] == 2);
    if (g) {
        const graph_type *y = &g->values[g->outputs[0].value].type;
        CHECK(y->ndim == 3 && y->dim[1] == 2 && y->dim[2] == 8);
    }
    graph_free(g);
}

/* Hardmax before opset 13 takes its axis as the split of x into 2-D:
 * axis 0 of [2, 3] is one hardmax over all six; axis 1 one per row. */
static void hardmax_flat(void)
{
    static const float x[6] = {1, 7, 3, 9, 2, 9}; /* the max 9 twice: the first wins */
    static const float want[2][6] = {{0, 0, 0, 1, 0, 0}, {0, 1, 0, 1, 0, 0}};
    for (int axis = 0; axis < 2; axis++) {
        char err[512];
        tg_status st;
        mb b;
        mb_init(&b, "Hardmax", "x", NULL);
        b.opset.version = 11;
        Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, *as[1] = {&a};
        attr_int(&a, "axis", axis);
        b.node.n_attribute = 1;
        b.node.attribute = as;
        graph *g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(g != NULL, "Hardmax opset 11 axis %d imports: %s", axis, err);
        if (!g)
            continue;
        eager_tensor *in = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), x), *out = NULL;
        CHECK(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK);
        CHECK(out && eager_type(out)->ndim == 2 && eager_type(out)->dim[1] == 3);
        if (out)
            CHECK_MSG(!memcmp(eager_peek(out), want[axis], sizeof want[axis]),
                      "Hardmax opset 11 axis %d", axis);
        eager_release(out);
        eager_release(in);
        graph_free(g);
    }
}

/* Dynamic dims, provenance from the file and from a tracegraph doc_string. */
static void features(void)
{
    char err[512], site[256];
    tg_status st;
    mb b;
    mb_init(&b, "Relu", "x", NULL);
    mb_tensor_type(&b, 0, 1, 2, (const int64_t[]){-1, 3}); /* x: f32 [B, 3] */
    format_onnx_load_opts o = {0, 4};
    graph *g = mb_load(&b, &o, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (g) {
        const graph_value *x = &g->values[g->inputs[0]];
        CHECK(g->nsyms == 1 && !strcmp(g->syms[0].name, "B") && g->syms[0].traced == 4);
        CHECK(x->type.dim[0] == 4 && x->dyn == 1 && x->sym[0] == 0);
        CHECK(g->values[g->outputs[0].value].dyn == 1); /* propagated */
        graph_prov_str(g, g->nodes[0].prov[0], site, sizeof site);
        CHECK_MSG(!strcmp(site, "mem.onnx:1 n0 (Relu)"), "%s", site);
    }
    graph_free(g);
    b.node.doc_string = "model.c:42 mlp_forward";
    g = mb_load(&b, NULL, &st, err, sizeof err);
    if (g) {
        graph_prov_str(g, g->nodes[0].prov[0], site, sizeof site);
        CHECK_MSG(!strcmp(site, "model.c:42 mlp_forward"), "%s", site);
    }
    CHECK(g != NULL);
    graph_free(g);
    /* a graph output that is a graph input: no node at all */
    mb_init(&b, "Relu", "x", NULL);
    b.g.n_node = 0;
    b.out.name = "x";
    g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g && g->noutputs == 1 && g->outputs[0].value == g->inputs[0], "%s", err);
    graph_free(g);
    /* a declared output type that is not what the graph computes */
    mb_init(&b, "Relu", "x", NULL);
    mb_tensor_type(&b, 2, 1, 2, (const int64_t[]){3, 2});
    b.out.type = &b.type[2].type;
    expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: graph output 'y' is declared FLOAT[3,2], "
                "the graph computes f32[2,3]");
}

/* GlobalAveragePool (whose node test is at opset 1) against a naive mean. */
static void global_pool(void)
{
    char err[512];
    tg_status st;
    mb b;
    mb_init(&b, "GlobalAveragePool", "x", NULL);
    mb_tensor_type(&b, 0, 1, 4, (const int64_t[]){1, 2, 3, 2});
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (!g)
        return;
    float x[12], want[2] = {0, 0};
    check_fill(x, 12, 7, -1, 1);
    for (int i = 0; i < 12; i++)
        want[i / 6] += x[i] / 6;
    eager_tensor *in = eager_from_data(GRAPH_F32, TG_SHAPE(1, 2, 3, 2), x), *out = NULL;
    CHECK(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK);
    if (out) {
        CHECK(eager_ndim(out) == 4 && eager_dim(out, 1) == 2 && eager_dim(out, 2) == 1);
        CHECK_FLOATS((const float *)eager_peek(out), want, 2, 1e-6);
    }
    eager_release(in);
    eager_release(out);
    graph_free(g);
}

/* One unary activation of x f32[2,3] (attribute a, if named, = av)
 * against the ONNX spec's formula f in double. */
static void activation(const char *op, const char *a, float av, double (*f)(double))
{
    char err[512];
    tg_status st;
    mb b;
    mb_init(&b, op, "x", NULL);
    Onnx__AttributeProto at = ONNX__ATTRIBUTE_PROTO__INIT, *ats[1] = {&at};
    if (a) {
        attr_float(&at, a, av);
        b.node.n_attribute = 1;
        b.node.attribute = ats;
    }
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", op, err);
    if (!g)
        return;
    float x[6] = {-3.0f, -0.7f, -0.0f, 0.25f, 1.5f, 4.0f}, want[6];
    for (int i = 0; i < 6; i++)
        want[i] = (float)f(x[i]);
    eager_tensor *in = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), x), *out = NULL;
    CHECK_MSG(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK, "%s runs", op);
    if (out)
        CHECK_FLOATS((const float *)eager_peek(out), want, 6, 1e-6);
    eager_release(in);
    eager_release(out);
    graph_free(g);
}

static double softsign(double x) { return x / (1 + fabs(x)); }
static double softplus(double x) { return log(exp(x) + 1); }
static double elu_half(double x) { return x < 0 ? 0.5 * (exp(x) - 1) : x; }
static double selu(double x)
{
    return 1.05070102214813232421875 * (x > 0 ? x : 1.67326319217681884765625 * (exp(x) - 1));
}
static double hard_sigmoid(double x) { return fmin(1, fmax(0, 0.3 * x + 0.5)); }

/* The activations whose node tests are all below opset 7 (not read). */
static void activations(void)
{
    activation("Softsign", NULL, 0, softsign);
    activation("Softplus", NULL, 0, softplus);
    activation("Elu", "alpha", 0.5f, elu_half);
    activation("Selu", NULL, 0, selu);
    activation("HardSigmoid", "alpha", 0.3f, hard_sigmoid); /* beta: its default, 0.5 */
}

/* An i64 initializer name = v[0..n) (1-D) in t, the only one of b. */
static void mb_init_i64(mb *b, Onnx__TensorProto *t, Onnx__TensorProto **ts, const char *name,
                        int64_t *dims, int64_t *v, int n)
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
static void tensor_init(Onnx__TensorProto *t, const char *name, int32_t dtype, int nd,
                        const int64_t *dims, void *data, size_t n)
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

/* Tile, Pad's edge and reflect modes, and the ops evaluated at load time
 * only (ReduceProd, Mod, ScatterND) on what they refuse. */
static void coverage_refusals(void)
{
    mb b;
    Onnx__AttributeProto a, *as[1];
    Onnx__TensorProto t, *ts[1];
    int64_t td[1];
    mb_init(&b, "Tile", "x", "s");
    b.g.n_input = 2;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Tile): input 1 (repeats) must be a constant known "
                "at load time, but 's' is a graph input");
    int64_t rep[3] = {2, 1, 1};
    mb_init(&b, "Tile", "x", "r");
    mb_init_i64(&b, &t, ts, "r", td, rep, 3);
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Tile): repeats has 3 entries, want one per dim of "
                "the input (2)");
    rep[1] = -1;
    mb_init_i64(&b, &t, ts, "r", td, rep, 2);
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Tile): repeats[1] = -1 is negative");
    /* x f32[2,3]: reflect pads at most 2 on dim 1, edge any amount */
    int64_t pads[4] = {0, 3, 0, 0};
    mb_init(&b, "Pad", "x", "p");
    mb_init_i64(&b, &t, ts, "p", td, pads, 4);
    mb_attr_str(&b, &a, as, "mode", "reflect");
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Pad): mode 'reflect' pads dim 1 of size 3 by 3; at "
                "most 2 is supported");
    mb_attr_str(&b, &a, as, "mode", "edge");
    pads[3] = -1;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Pad): a negative pad (-1) in mode 'edge' is not "
                "supported");
    mb_attr_str(&b, &a, as, "mode", "wrap");
    expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (Pad): mode 'wrap' needs opset 19");
    mb_attr_str(&b, &a, as, "mode", "circular");
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'n0' (Pad): mode 'circular' is not "
                "supported");
    /* Mod and ReduceProd of a run-time value */
    mb_init(&b, "Mod", "x", "x");
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Mod): input 0 (A) must be a constant known at load "
                "time, but 'x' is a graph input");
    mb_init(&b, "ReduceProd", "x", NULL);
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (ReduceProd): input 0 (data) must be a constant known "
                "at load time, but 'x' is a graph input");
    /* Mod of constants with an integer divisor 0: not evaluated, refused */
    int64_t mv[2] = {7, 0};
    mb_init(&b, "Mod", "r", "r");
    b.g.n_input = 0;
    mb_init_i64(&b, &t, ts, "r", td, mv, 2);
    b.out.type = NULL;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (Mod): Mod is evaluated at load time only, on "
                "constants: two f32, i64 or i32 operands of one dtype that broadcast, fmod 0 "
                "or 1, no integer divisor 0, with at most 262144 elements in the result");
    /* ScatterND with an index out of range: refused, naming what it needs */
    int64_t sv[2] = {5, 9};
    char *sin[3] = {"r", "i", "u"};
    mb_init(&b, "ScatterND", "r", "r");
    b.node.input = sin;
    b.node.n_input = 3;
    b.g.n_input = 0;
    b.out.type = NULL;
    Onnx__TensorProto ti[2], *tis[3];
    int64_t tid[2][2] = {{1, 1}, {1, 0}}, iv[1] = {2}, uv[1] = {4};
    mb_init_i64(&b, &t, ts, "r", td, sv, 2);
    for (int i = 0; i < 2; i++) {
        ti[i] = t;
        ti[i].name = i ? "u" : "i";
        ti[i].n_dims = 2 - (size_t)i; /* i: [1, 1]; u: [1] */
        ti[i].dims = tid[i];
        ti[i].n_int64_data = 1;
        ti[i].int64_data = i ? uv : iv;
    }
    tis[0] = &t, tis[1] = &ti[0], tis[2] = &ti[1];
    b.g.n_initializer = 3;
    b.g.initializer = tis;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (ScatterND): ScatterND is evaluated at load time "
                "only, on constants: i64/i32 indices in range whose last dim k is at most "
                "data's rank, updates of shape indices.shape[:-1] + data.shape[k:], and a "
                "reduction the opset has, with at most 262144 elements in the result");
    /* in range (index -1: the last), it is evaluated: [5, 4] */
    iv[0] = -1;
    char err[512];
    tg_status st;
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    if (g) {
        const graph_value *v = &g->values[g->outputs[0].value];
        CHECK(v->data && ((const int64_t *)v->data)[0] == 5 &&
              ((const int64_t *)v->data)[1] == 4);
    }
    graph_free(g);
}

/* InstanceNormalization of x f32[2,3,2,2] (scale and B initializers,
 * epsilon 0.01) against a naive loop in double; a scale of the wrong
 * length is refused. */
static void instance_norm(void)
{
    char err[512];
    tg_status st;
    mb b;
    static const int64_t x4[4] = {2, 3, 2, 2};
    mb_init(&b, "InstanceNormalization", "x", NULL);
    mb_tensor_type(&b, 0, 1, 4, x4);
    char *nin[3] = {"x", "sc", "bi"};
    b.node.input = nin;
    b.node.n_input = 3;
    float sc[3] = {1.5f, -0.5f, 2.0f}, bi[3] = {0.25f, 1.0f, -3.0f};
    Onnx__TensorProto t[2], *ts[2] = {&t[0], &t[1]};
    int64_t td[1] = {3};
    for (int i = 0; i < 2; i++)
        tensor_init(&t[i], nin[1 + i], 1, 1, td, i ? bi : sc, 3);
    b.g.n_initializer = 2;
    b.g.initializer = ts;
    Onnx__AttributeProto at = ONNX__ATTRIBUTE_PROTO__INIT, *ats[1] = {&at};
    attr_float(&at, "epsilon", 0.01f);
    b.node.n_attribute = 1;
    b.node.attribute = ats;
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "InstanceNormalization imports: %s", err);
    if (g) {
        float x[24], want[24];
        for (int i = 0; i < 24; i++)
            x[i] = (float)((i * 7 % 11) - 5) * 0.3f + (float)(i / 4);
        for (int nc = 0; nc < 6; nc++) {
            double mean = 0, var = 0;
            for (int k = 0; k < 4; k++)
                mean += x[nc * 4 + k] / 4.0;
            for (int k = 0; k < 4; k++)
                var += (x[nc * 4 + k] - mean) * (x[nc * 4 + k] - mean) / 4.0;
            for (int k = 0; k < 4; k++)
                want[nc * 4 + k] = (float)((x[nc * 4 + k] - mean) / sqrt(var + 0.01) *
                                               sc[nc % 3] + bi[nc % 3]);
        }
        eager_tensor *in = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3, 2, 2), x), *out = NULL;
        CHECK(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK);
        if (out)
            CHECK_FLOATS((const float *)eager_peek(out), want, 24, 1e-5);
        eager_release(in);
        eager_release(out);
    }
    graph_free(g);
    td[0] = 2; /* scale and B of 2 for 3 channels */
    t[0].n_float_data = t[1].n_float_data = 2;
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (InstanceNormalization): scale has 1 dims (first 2), "
                "want [C] = [3]");
}

/* LSTM refusals: a sequence too long to unroll (a crafted X of 5000
 * steps must not make the importer build 150000 nodes), input_forget. */
static void rnn_refusals(void)
{
    mb b;
    static const int64_t xs[3] = {5000, 1, 2}, ws[3] = {1, 4, 2}, rs[3] = {1, 4, 1};
    mb_init(&b, "LSTM", "x", NULL);
    mb_tensor_type(&b, 0, 1, 3, xs);
    char *nin[3] = {"x", "W", "R"};
    b.node.input = nin;
    b.node.n_input = 3;
    float wd[8] = {0.5f, -1, 0.25f, 2, 1, 0, -0.5f, 1}, rd[4] = {1, -1, 0.5f, 0.25f};
    Onnx__TensorProto t[2], *ts[2] = {&t[0], &t[1]};
    for (int i = 0; i < 2; i++)
        tensor_init(&t[i], nin[1 + i], 1, 3, i ? rs : ws, i ? (void *)rd : wd, i ? 4 : 8);
    b.g.n_initializer = 2;
    b.g.initializer = ts;
    Onnx__AttributeProto at[2] = {ONNX__ATTRIBUTE_PROTO__INIT, ONNX__ATTRIBUTE_PROTO__INIT};
    Onnx__AttributeProto *ats[2] = {&at[0], &at[1]};
    at[0].name = "hidden_size";
    at[1].name = "input_forget";
    for (int i = 0; i < 2; i++) {
        at[i].has_type = 1;
        at[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        at[i].has_i = 1;
        at[i].i = 1;
    }
    b.node.n_attribute = 1;
    b.node.attribute = ats;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (LSTM): a sequence of 5000 steps (unrolled at load "
                "time: 1 to 4096)");
    b.node.n_attribute = 2;
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (LSTM): input_forget is not supported");
}

/* GatherND: a coordinate out of range is an error at load time, naming
 * it; a negative one counts from the end (x[1][-1] = x[1][2]). */
static void gather_nd(void)
{
    mb b;
    char err[512];
    tg_status st;
    mb_init(&b, "GatherND", "x", "idx");
    int64_t id[2] = {1, -1}, dims[2] = {1, 2};
    Onnx__TensorProto t, *ts[1] = {&t};
    tensor_init(&t, "idx", 7, 2, dims, id, 2);
    b.g.n_initializer = 1;
    b.g.initializer = ts;
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "GatherND imports: %s", err);
    if (g) {
        float x[6] = {1, 2, 3, 4, 5, 6};
        eager_tensor *in = eager_from_data(GRAPH_F32, TG_SHAPE(2, 3), x), *out = NULL;
        CHECK(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK);
        CHECK(out && eager_numel(out) == 1 && ((const float *)eager_peek(out))[0] == 6.0f);
        eager_release(in);
        eager_release(out);
    }
    graph_free(g);
    id[1] = 5;
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (GatherND): indices element 1 is 5, out of range for "
                "data dim 1 (3)");
}

/* Interprets g on x f32 of shape xs (n elements) and checks y against
 * want (wn elements) within tol. */
static void run_against(const char *what, graph *g, graph_ints xs, const float *x,
                        const float *want, int64_t wn, double tol)
{
    eager_tensor *in = eager_from_data(GRAPH_F32, xs, x), *out = NULL;
    CHECK_MSG(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK, "%s runs: %s", what,
              eager_error());
    if (out) {
        CHECK_MSG(graph_type_numel(eager_type(out)) == wn, "%s: %lld elements, want %lld",
                  what, (long long)graph_type_numel(eager_type(out)), (long long)wn);
        if (graph_type_numel(eager_type(out)) == wn)
            CHECK_FLOATS((const float *)eager_peek(out), want, wn, tol);
    }
    eager_release(in);
    eager_release(out);
    eager_clear_error();
}

/*
 * Trilu kept above or below a diagonal k, against the mask written out
 * here.  It adds its mask constant before reading x's dtype: the ASan
 * build (TG_GROW_MOVES: every addition moves the graph's values) saw the
 * type read through a stale pointer.
 */
static void trilu(void)
{
    static const float x[6] = {1, 2, 3, 4, 5, 6};
    for (int upper = 0; upper < 2; upper++)
        for (int64_t k = -1; k <= 1; k++) {
            char err[512], what[64];
            tg_status st;
            mb b;
            Onnx__TensorProto t, *ts[1] = {&t};
            int64_t kv = k;
            mb_init(&b, "Trilu", "x", "k");
            tensor_init(&t, "k", 7, 0, NULL, &kv, 1);
            b.g.n_initializer = 1;
            b.g.initializer = ts;
            Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, *as[1] = {&a};
            attr_int(&a, "upper", upper);
            b.node.n_attribute = 1;
            b.node.attribute = as;
            snprintf(what, sizeof what, "Trilu upper %d k %lld", upper, (long long)k);
            graph *g = mb_load(&b, NULL, &st, err, sizeof err);
            CHECK_MSG(g != NULL, "%s imports: %s", what, err);
            if (!g)
                continue;
            float want[6];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    want[i * 3 + j] = (upper ? j - i >= k : j - i <= k) ? x[i * 3 + j] : 0;
            run_against(what, g, TG_SHAPE(2, 3), x, want, 6, 0);
            graph_free(g);
        }
}

static double gelu_erf(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

/*
 * What opsets 19 to 25 add to the ops the importer reads: Pad's wrap
 * mode (19), Resize's half_pixel_symmetric (19, ONNX's own known
 * answers), Gelu (20, both forms) and Swish (24), against their formulas;
 * each refused below the opset that has it.
 */
static void newer_opsets(void)
{
    char err[512];
    tg_status st;
    mb b;
    Onnx__AttributeProto a, *as[1];
    Onnx__TensorProto t, *ts[1];
    int64_t td[1];
    const float x6[6] = {-3.0f, -0.7f, -0.0f, 0.25f, 1.5f, 4.0f};
    /* Pad wrap, x [2,3]: dim 1 by 2 before, 1 after: [b c | a b c | a] */
    int64_t pads[4] = {0, 2, 0, 1};
    mb_init(&b, "Pad", "x", "p");
    mb_init_i64(&b, &t, ts, "p", td, pads, 4);
    mb_attr_str(&b, &a, as, "mode", "wrap");
    b.opset.version = 19;
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "Pad wrap imports: %s", err);
    if (g) {
        const float want[12] = {-0.7f, -0.0f, -3.0f, -0.7f, -0.0f, -3.0f,
                                1.5f,  4.0f,  0.25f, 1.5f,  4.0f,  0.25f};
        run_against("Pad wrap", g, TG_SHAPE(2, 3), x6, want, 12, 0);
    }
    graph_free(g);
    pads[3] = 4;
    mb_init_i64(&b, &t, ts, "p", td, pads, 4);
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'n0' (Pad): mode 'wrap' pads dim 1 "
                "of size 3 by 4; at most 3 is supported");
    /* Gelu, Swish */
    static const struct {
        const char *op, *attr, *s;
        float f;
        int opset;
        double (*ref)(double);
    } acts[] = {{"Gelu", NULL, NULL, 0, 20, gelu_erf},
                {"Gelu", "approximate", "none", 0, 22, gelu_erf},
                {"Gelu", "approximate", "tanh", 0, 25, gelu_tanh},
                {"Swish", NULL, NULL, 0, 24, NULL},
                {"Swish", "alpha", NULL, 0.5f, 25, NULL}};
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
        mb_init(&b, acts[k].op, "x", NULL);
        b.opset.version = acts[k].opset;
        if (acts[k].s) {
            mb_attr_str(&b, &a, as, acts[k].attr, acts[k].s);
        } else if (acts[k].attr) {
            attr_float(&a, acts[k].attr, acts[k].f);
            as[0] = &a;
            b.node.n_attribute = 1;
            b.node.attribute = as;
        }
        g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(g != NULL, "%s imports: %s", acts[k].op, err);
        float want[6];
        for (int i = 0; i < 6; i++) {
            double al = acts[k].attr ? acts[k].f : 1.0;
            want[i] = (float)(acts[k].ref ? acts[k].ref(x6[i])
                                          : x6[i] / (1 + exp(-al * x6[i])));
        }
        if (g)
            run_against(acts[k].op, g, TG_SHAPE(2, 3), x6, want, 6, 1e-6);
        graph_free(g);
    }
    mb_init(&b, "Gelu", "x", NULL);
    b.opset.version = 19;
    expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (Gelu): Gelu needs opset 20 (the "
                "model has 19)");
    mb_init(&b, "Swish", "x", NULL);
    b.opset.version = 23;
    expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (Swish): Swish needs opset 24 (the "
                "model has 23)");
    /* GridSample (its results: test_onnx_pytorch's gridsample) refuses */
    mb_init(&b, "GridSample", "x", "s");
    b.g.n_input = 2;
    b.opset.version = 16;
    mb_attr_str(&b, &a, as, "padding_mode", "reflection");
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'n0' (GridSample): padding_mode "
                "'reflection' is not supported (zeros or border)");
    b.opset.version = 20;
    mb_attr_str(&b, &a, as, "mode", "cubic");
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'n0' (GridSample): mode 'cubic' is "
                "not supported (linear or nearest)");
    b.node.n_attribute = 0;
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'n0' (GridSample): X of 2 dims and "
                "grid of 1 dims: only a 2-D sample (X [N, C, H, W], grid [N, Ho, Wo, 2]) is "
                "supported");
    b.opset.version = 15;
    expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (GridSample): GridSample needs "
                "opset 16 (the model has 15)");
    /* Resize linear, half_pixel_symmetric: ONNX's test cases and answers */
    static const struct {
        int64_t xs[4];
        float x[4], scales[4], want[20];
        int nwant;
    } rs[] = {{{1, 1, 1, 4}, {1, 2, 3, 4}, {1, 1, 1, 0.6f}, {1.6666667f, 3.3333333f}, 2},
              {{1, 1, 2, 2},
               {1, 2, 3, 4},
               {1, 1, 2.3f, 2.94f},
               {1.f, 1.15986395f, 1.5f, 1.84013605f, 2.f, 1.56521738f, 1.72508133f,
                2.06521738f, 2.40535343f, 2.56521738f, 2.43478262f, 2.59464657f, 2.93478262f,
                3.27491867f, 3.43478262f, 3.f, 3.15986395f, 3.5f, 3.84013605f, 4.f},
               20}};
    for (int k = 0; k < 2; k++) {
        mb_init(&b, "Resize", "x", NULL);
        b.opset.version = 19;
        mb_tensor_type(&b, 0, 1, 4, rs[k].xs);
        char *rin[3] = {"x", "", "sc"};
        b.node.input = rin;
        b.node.n_input = 3;
        int64_t sd[1] = {4};
        tensor_init(&t, "sc", 1, 1, sd, (void *)rs[k].scales, 4);
        ts[0] = &t;
        b.g.n_initializer = 1;
        b.g.initializer = ts;
        Onnx__AttributeProto ra[2], *ras[2] = {&ra[0], &ra[1]};
        mb_attr_str(&b, &ra[0], as, "mode", "linear");
        mb_attr_str(&b, &ra[1], as, "coordinate_transformation_mode", "half_pixel_symmetric");
        b.node.n_attribute = 2;
        b.node.attribute = ras;
        g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(g != NULL, "Resize half_pixel_symmetric imports: %s", err);
        graph_ints xs = {4, {rs[k].xs[0], rs[k].xs[1], rs[k].xs[2], rs[k].xs[3]}};
        if (g)
            run_against("Resize half_pixel_symmetric", g, xs, rs[k].x, rs[k].want,
                        rs[k].nwant, 1e-6);
        graph_free(g);
        if (k == 0) {
            b.opset.version = 18;
            expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (Resize): "
                        "coordinate_transformation_mode 'half_pixel_symmetric' is not a known "
                        "value");
        }
    }
}

/*
 * GroupNormalization (opset 21: scale and bias per channel; 18: per
 * group) and RMSNormalization (23) against naive loops, with scale and
 * bias as initializers.
 */
static void norms(void)
{
    char err[512];
    tg_status st;
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)((i * 7 % 11) - 5) * 0.3f + (float)(i / 6);
    /* GroupNormalization: x [2, 4, 3], 2 groups of 2 channels */
    for (int opset = 18; opset <= 21; opset += 3) {
        mb b;
        static const int64_t x3[3] = {2, 4, 3};
        mb_init(&b, "GroupNormalization", "x", NULL);
        b.opset.version = opset;
        mb_tensor_type(&b, 0, 1, 3, x3);
        char *nin[3] = {"x", "sc", "bi"};
        b.node.input = nin;
        b.node.n_input = 3;
        float sc[4] = {1.5f, -0.5f, 2.0f, 0.75f}, bi[4] = {0.25f, 1.0f, -3.0f, 0.5f};
        int per = opset >= 21 ? 4 : 2;
        Onnx__TensorProto t[2], *ts[2] = {&t[0], &t[1]};
        int64_t td[1] = {per};
        for (int i = 0; i < 2; i++)
            tensor_init(&t[i], nin[1 + i], 1, 1, td, i ? bi : sc, (size_t)per);
        b.g.n_initializer = 2;
        b.g.initializer = ts;
        Onnx__AttributeProto at[2], *ats[2] = {&at[0], &at[1]};
        attr_int(&at[0], "num_groups", 2);
        attr_float(&at[1], "epsilon", 0.01f);
        b.node.n_attribute = 2;
        b.node.attribute = ats;
        graph *g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(g != NULL, "GroupNormalization at %d imports: %s", opset, err);
        float want[24];
        for (int n = 0; n < 2; n++)
            for (int gi = 0; gi < 2; gi++) {
                const float *v = x + n * 12 + gi * 6;
                double mean = 0, var = 0;
                for (int k = 0; k < 6; k++)
                    mean += v[k] / 6.0;
                for (int k = 0; k < 6; k++)
                    var += (v[k] - mean) * (v[k] - mean) / 6.0;
                for (int k = 0; k < 6; k++) {
                    int ch = gi * 2 + k / 3, p = per == 4 ? ch : gi;
                    want[n * 12 + gi * 6 + k] =
                        (float)((v[k] - mean) / sqrt(var + 0.01) * sc[p] + bi[p]);
                }
            }
        if (g)
            run_against("GroupNormalization", g, TG_SHAPE(2, 4, 3), x, want, 24, 1e-5);
        graph_free(g);
        if (opset == 21) {
            at[0].i = 3;
            expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (GroupNormalization): "
                        "num_groups 3 does not divide the 4 channels");
            at[0].i = 2;
            b.opset.version = 18; /* [C] scale where 18 wants [G] */
            expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (GroupNormalization): scale "
                        "has 1 dims (first 4), want [num_groups] = [2] at opset 18");
        }
    }
    /* RMSNormalization: x [2, 3, 4] over the last dim, then over the last two */
    for (int axis = -1; axis >= -2; axis--) {
        mb b;
        static const int64_t x3[3] = {2, 3, 4};
        mb_init(&b, "RMSNormalization", "x", "sc");
        b.opset.version = 23;
        mb_tensor_type(&b, 0, 1, 3, x3);
        float sc[12];
        for (int i = 0; i < 12; i++)
            sc[i] = 0.5f + 0.125f * (float)i;
        int ns = axis == -1 ? 4 : 12;
        Onnx__TensorProto t, *ts[1] = {&t};
        int64_t td[2] = {axis == -1 ? 4 : 3, 4};
        tensor_init(&t, "sc", 1, axis == -1 ? 1 : 2, axis == -1 ? td + 1 : td, sc, (size_t)ns);
        b.g.n_initializer = 1;
        b.g.initializer = ts;
        Onnx__AttributeProto at = ONNX__ATTRIBUTE_PROTO__INIT, *ats[1] = {&at};
        attr_int(&at, "axis", axis);
        b.node.n_attribute = 1;
        b.node.attribute = ats;
        graph *g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(g != NULL, "RMSNormalization imports: %s", err);
        float want[24];
        for (int row = 0; row < 24 / ns; row++) {
            double ms = 0;
            for (int k = 0; k < ns; k++)
                ms += (double)x[row * ns + k] * x[row * ns + k] / ns;
            for (int k = 0; k < ns; k++)
                want[row * ns + k] = (float)(x[row * ns + k] / sqrt(ms + 1e-5) * sc[k]);
        }
        if (g)
            run_against("RMSNormalization", g, TG_SHAPE(2, 3, 4), x, want, 24, 1e-5);
        graph_free(g);
        if (axis == -2) {
            b.opset.version = 22;
            expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (RMSNormalization): "
                        "RMSNormalization needs opset 23 (the model has 22)");
        }
    }
}

/* Clip on int64 (opset 12 on): minimum(maximum(x, min), max), exactly,
 * with bounds past 2^53 (a double would round them). */
static void clip_int(void)
{
    char err[512];
    tg_status st;
    mb b;
    static const int64_t x6[1] = {6};
    mb_init(&b, "Clip", "x", NULL);
    mb_tensor_type(&b, 0, 7, 1, x6);
    char *nin[3] = {"x", "lo", "hi"};
    b.node.input = nin;
    b.node.n_input = 3;
    int64_t lo = -((int64_t)1 << 53) - 1, hi = ((int64_t)1 << 53) + 1;
    Onnx__TensorProto t[2], *ts[2] = {&t[0], &t[1]};
    tensor_init(&t[0], "lo", 7, 0, NULL, &lo, 1);
    tensor_init(&t[1], "hi", 7, 0, NULL, &hi, 1);
    b.g.n_initializer = 2;
    b.g.initializer = ts;
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "Clip on int64 imports: %s", err);
    if (g) {
        int64_t x[6] = {INT64_MIN, lo - 1, lo, 0, hi + 1, INT64_MAX};
        const int64_t want[6] = {lo, lo, lo, 0, hi, hi};
        eager_tensor *in = eager_from_data(GRAPH_I64, TG_SHAPE(6), x), *out = NULL;
        CHECK(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK);
        if (out)
            CHECK(eager_type(out)->dtype == GRAPH_I64 &&
                  !memcmp(eager_peek(out), want, sizeof want));
        eager_release(in);
        eager_release(out);
    }
    graph_free(g);
}

/*
 * The constants the importer makes at load time are bounded in all: five
 * ConstantOfShape nodes of 64 MiB each (a file of a few hundred bytes)
 * pass the 256 MiB a file that small may make, and the fifth is refused;
 * four are made (unused: y is x).  Two hundred of them took 12 GiB.
 */
static void made_budget(void)
{
    enum { N = 5 };
    mb b;
    mb_init(&b, "Identity", "x", NULL);
    Onnx__NodeProto nodes[N + 1], *np[N + 1];
    char *cin[1] = {"shape"}, names[N][8], *couts[N][1];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        couts[i][0] = names[i];
        nodes[i] = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
        nodes[i].op_type = "ConstantOfShape";
        nodes[i].name = names[i];
        nodes[i].n_input = 1;
        nodes[i].input = cin;
        nodes[i].n_output = 1;
        nodes[i].output = couts[i];
        np[i + 1] = &nodes[i];
    }
    nodes[N] = b.node;
    np[0] = &nodes[N];
    b.g.node = np;
    Onnx__TensorProto t, *ts[1];
    int64_t dims[1], side[2] = {4096, 4096};
    mb_init_i64(&b, &t, ts, "shape", dims, side, 2);
    b.g.n_node = N + 1;
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 5 'c4' (ConstantOfShape): the "
                "constants made at load time would take 320 MiB in all (this one 67108864 "
                "bytes), past the 256 MiB a file of its size may make");
    b.g.n_node = N;
    tg_status st;
    char err[512] = "";
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g && st == TG_OK, "four of them: %s", err);
    graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    bad_inputs();
    bad_composed();
    rnn_refusals();
    gather_nd();
    {   /* NonZero of a run-time value: its shape would depend on the data */
        mb b;
        mb_init(&b, "NonZero", "x", NULL);
        expect_fail(&b, TG_ERR_UNSUPPORTED,
                    "mem.onnx: node 0 'n0' (NonZero): input 0 (data) must be a constant known "
                    "at load time, but 'x' is a graph input");
    }
    hardmax_flat();
    trilu();
    conv_transpose();
    features();
    global_pool();
    activations();
    coverage_refusals();
    instance_norm();
    made_budget();
    newer_opsets();
    norms();
    clip_int();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
