/*
 * test_onnx_import.c - ONNX import (formats/onnx.h) on one-node models
 * built here in memory: every refusal with its exact message (a file that
 * is not a model, unknown ops, operands that must be constants, damaged
 * initializers, and what the composed converters refuse: Resize, Trilu,
 * DepthToSpace, ConvTranspose, pools past 2-D), dynamic dims and
 * provenance, and the ops whose ONNX node tests sit below the opsets the
 * importer reads (GlobalAveragePool, the activations, Hardmax's 2-D form)
 * against their formulas.  The ops and opsets newer than the installed
 * node tests, and the load-time budget: test_onnx_import_ops.c; older
 * opsets' type rules, empty axes, RNN, GatherND and Trilu bounds:
 * test_onnx_import_edges.c.  ONNX's own node tests: test_onnx_node.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "graph_query.h"
#include "onnx_model_builder.h"
#include "graph/graph_impl.h"

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
    /* scales whose floor is 0 (0.5 of 1) make an empty output, as ONNX
     * Runtime does, and sizes of 0 keep an empty axis empty; they were
     * refused.  The other axes are still resized in the output's shape:
     * [1, 0, 4, 3].  Sizes of 0 from 1 are a scale of 0, which ORT refuses */
    {
        static const int64_t x1[4] = {1, 1, 2, 2};
        mb_tensor_type(&b, 0, 1, 4, x1);
        szv[0] = 1, szv[1] = 0, szv[2] = 4, szv[3] = 3;
        expect_fail(&b, TG_ERR_FORMAT, "mem.onnx: node 0 'n0' (Resize): sizes[1] = 0 from 1: "
                    "a scale of 0 (an empty axis stays empty; scales whose floor is 0 empty "
                    "one)");
    }
    for (int by_scales = 0; by_scales < 2; by_scales++) {
        static const int64_t x1[4] = {1, 1, 2, 2}, xe[4] = {1, 0, 2, 2};
        float scv[4] = {1, 0.5f, 2, 1.5f};
        int64_t scd[1] = {4};
        Onnx__TensorProto sc = ONNX__TENSOR_PROTO__INIT, *ts[1] = {&sc};
        char *sin[4] = {"x", "", "s", ""};
        mb_tensor_type(&b, 0, 1, 4, by_scales ? x1 : xe);
        szv[0] = 1, szv[1] = 0, szv[2] = 4, szv[3] = 3;
        if (by_scales) {
            sc.name = "s";
            sc.has_data_type = 1;
            sc.data_type = 1;
            sc.n_dims = 1;
            sc.dims = scd;
            sc.n_float_data = 4;
            sc.float_data = scv;
            b.g.initializer = ts;
            b.node.input = sin;
            b.node.n_input = 3;
        }
        char err[512];
        tg_status st;
        graph *g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(g != NULL, "Resize to 0 by %s imports: %s", by_scales ? "scales" : "sizes",
                  err);
        if (g) {
            const graph_type *yt = &g->values[g->outputs[0].value].type;
            CHECK(yt->ndim == 4 && yt->dim[0] == 1 && yt->dim[1] == 0 && yt->dim[2] == 4 &&
                  yt->dim[3] == 3);
            static const float xv[4] = {1, 2, 3, 4};
            run_against("Resize to 0", g, by_scales ? TG_SHAPE(1, 1, 2, 2) : TG_SHAPE(1, 0, 2, 2),
                        xv, NULL, 0, 0);
            graph_free(g);
        }
        b.g.initializer = szs;
        b.node.input = rin;
        b.node.n_input = 4;
    }
    szv[1] = 8;
    /* an axis of size 0 resized to 4: the scale was infinite and the
     * coordinates NaN, cast to int64 */
    static const int64_t x0[4] = {1, 8, 0, 2};
    mb_tensor_type(&b, 0, 1, 4, x0);
    szv[2] = 4;
    szv[3] = 2;
    expect_fail(&b, TG_ERR_SHAPE,
                "mem.onnx: node 0 'n0' (Resize): axis 2 has size 0: there is no element to "
                "resize it to 4 from");
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
    const graph_conv_transpose2d_attrs *at = i >= 0 ? tg_node_attrs(&g->nodes[i]) : NULL;
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
    at = i >= 0 ? tg_node_attrs(&g->nodes[i]) : NULL;
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

/*
 * Hardmax of x f32[2,0] (opset 13, axis -1) is x [2,0]: nothing to choose
 * from, nothing to write.  It was refused ("argmax over an empty axis")
 * where ONNX Runtime runs it (tools/difffuzz).
 */
static void hardmax_empty(void)
{
    char err[512] = "";
    tg_status st;
    mb b;
    mb_init(&b, "Hardmax", "x", NULL);
    mb_tensor_type(&b, 0, 1, 2, (const int64_t[]){2, 0});
    graph *g = mb_load(&b, NULL, &st, err, sizeof err);
    CHECK_MSG(g != NULL, "Hardmax of [2,0] imports: %s", err);
    if (g) {
        static const float none[1];
        eager_tensor *in = eager_from_data(GRAPH_F32, TG_SHAPE(2, 0), none), *out = NULL;
        CHECK(eager_interpret(g, &in, 1, &out, 1, NULL) == TG_OK);
        CHECK(out && eager_type(out)->ndim == 2 && eager_type(out)->dim[0] == 2 &&
              eager_type(out)->dim[1] == 0);
        eager_release(out);
        eager_release(in);
        eager_clear_error();
    }
    graph_free(g);
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

/*
 * format_onnx_op lists what the loader reads: each op listed is found by
 * the loader (a node with one input too many is refused for its count,
 * naming the listed range, not as an unknown op; one with an unknown
 * attribute for that attribute), names are unique, the ops the old
 * hand-kept list of onnx.h left out are there, and an op not listed is
 * refused as unsupported.
 */
static void op_list(void)
{
    format_onnx_op_info o;
    int n = 0;
    while (format_onnx_op(n, &o))
        n++;
    CHECK_MSG(n >= 100, "%d ops listed", n);
    CHECK(!format_onnx_op(-1, &o) && !format_onnx_op(n, &o) && !format_onnx_op(0, NULL));
    static const char *const once_missing[] = {"CumSum", "GridSample", "Einsum",
                                               "GroupNormalization", "RMSNormalization",
                                               "Hardmax", "Conv", "Relu"};
    for (size_t k = 0; k < sizeof once_missing / sizeof once_missing[0]; k++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found += format_onnx_op(i, &o) && !strcmp(o.name, once_missing[k]);
        CHECK_MSG(found == 1, "%s listed %d times", once_missing[k], found);
    }
    char *ins[66];
    for (int k = 0; k < 66; k++)
        ins[k] = "x";
    for (int i = 0; i < n; i++) {
        format_onnx_op(i, &o);
        for (int j = i + 1; j < n; j++) {
            format_onnx_op_info p;
            format_onnx_op(j, &p);
            CHECK_MSG(strcmp(o.name, p.name), "%s listed twice", o.name);
        }
        CHECK_MSG(o.min_inputs >= 0 && (o.max_inputs < 0 || o.max_inputs >= o.min_inputs) &&
                      o.max_outputs >= 1 && o.attributes,
                  "%s: inputs %d..%d outputs %d", o.name, o.min_inputs, o.max_inputs,
                  o.max_outputs);
        mb b;
        mb_init(&b, o.name, "x", NULL);
        char want[256];
        if (o.max_inputs >= 0 && o.max_inputs < 64) {
            b.node.n_input = (size_t)o.max_inputs + 1;
            b.node.input = ins;
            snprintf(want, sizeof want, "mem.onnx: node 0 'n0' (%s): %d inputs (takes %d to %d)",
                     o.name, o.max_inputs + 1, o.min_inputs, o.max_inputs);
            expect_fail(&b, TG_ERR_FORMAT, want);
        }
        mb_init(&b, o.name, "x", NULL);
        b.node.n_input = (size_t)o.min_inputs;
        b.node.input = ins;
        Onnx__AttributeProto a, *as[1] = {&a};
        attr_int(&a, "no_such_attribute", 1);
        b.node.n_attribute = 1;
        b.node.attribute = as;
        snprintf(want, sizeof want,
                 "mem.onnx: node 0 'n0' (%s): attribute 'no_such_attribute' is not supported",
                 o.name);
        char err[512] = "";
        tg_status st;
        graph *g = mb_load(&b, NULL, &st, err, sizeof err);
        CHECK_MSG(!g && !strncmp(err, want, strlen(want)), "%s: %s", o.name, err);
        graph_free(g);
    }
    mb b;
    mb_init(&b, "Loop", "x", NULL);
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'n0' (Loop): op type 'Loop' is not "
                                        "supported");
}

int main(void)
{
    long live = eager_live_tensors();
    bad_inputs();
    bad_composed();
    {   /* NonZero of a run-time value: its shape would depend on the data */
        mb b;
        mb_init(&b, "NonZero", "x", NULL);
        expect_fail(&b, TG_ERR_UNSUPPORTED,
                    "mem.onnx: node 0 'n0' (NonZero): input 0 (data) must be a constant known "
                    "at load time, but 'x' is a graph input");
    }
    hardmax_flat();
    hardmax_empty();
    conv_transpose();
    features();
    global_pool();
    activations();
    coverage_refusals();
    op_list();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
