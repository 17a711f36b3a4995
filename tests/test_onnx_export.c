/*
 * test_onnx_export.c - ONNX export (formats/onnx.h).
 *
 * Without arguments: structural checks on the exported bytes, read back
 * with protobuf-c's own unpacker (op types, attributes, initializer names,
 * dims and bytes, call sites in doc_string, dim_param for dynamic dims,
 * unique names, every node input defined before use), for every graph of
 * tests/onnx_export_cases.h and the traced models; the refusals (guards,
 * elided constants) and file errors.
 *
 * With --ort-cases DIR: writes each case as DIR/<case>.onnx, its inputs
 * and the reference interpreter's outputs as raw little-endian files, and
 * DIR/manifest.txt, one line per case:
 *   <case> <model file> <nin> {<file> <dtype> <dims>} <nout> {<file> <dtype> <dims>}
 * dtype f32/i64/i32/bool, dims "2x3x4" or "-" for a 0-d tensor.
 * tests/test_onnx_ort.sh runs them in ONNX Runtime (tests/onnx_ort_check.js).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cpu_caps.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "formats/onnx/onnx_write_impl.h"
#include "onnx_export_cases.h"
#include "onnx_export_util.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

static char err[1024];

/* ---- structural checks ---- */

/* Exports op case `name`, checks it generically; the caller frees. */
static Onnx__ModelProto *case_model(const char *name)
{
    for (int i = 0; i < N_OP_CASES; i++) {
        if (strcmp(op_cases[i].name, name) != 0)
            continue;
        tcase c;
        Onnx__ModelProto *m = NULL;
        if (case_build(i, &c))
            m = export_unpack(c.g, NULL);
        check_generic(m, name);
        case_free(&c);
        return m;
    }
    CHECK_MSG(0, "no case %s", name);
    return NULL;
}

static void test_conv_pool_attrs(void)
{
    Onnx__ModelProto *m = case_model("conv2d_stride_pad4");
    const Onnx__NodeProto *n = node_of(m, "Conv", 0);
    CHECK(attr_ints_are(n, "kernel_shape", TG_INTS(3, 2)));
    CHECK(attr_ints_are(n, "strides", TG_INTS(2, 2)));
    /* tracegraph's (top, left, bottom, right) is ONNX's order too */
    CHECK(attr_ints_are(n, "pads", TG_INTS(1, 0, 2, 1)));
    CHECK(attr_ints_are(n, "dilations", TG_INTS(1, 1)));
    CHECK(attr_int_is(n, "group", 1));
    CHECK(n && n->n_input == 3 && init_of(m, n->input[1]) != NULL); /* w is a constant */
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("conv2d_dilation");
    n = node_of(m, "Conv", 0);
    CHECK(attr_ints_are(n, "strides", TG_INTS(1, 2)));
    CHECK(attr_ints_are(n, "pads", TG_INTS(2, 1, 2, 1)));
    CHECK(attr_ints_are(n, "dilations", TG_INTS(2, 2)));
    CHECK(n && n->n_input == 2);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("conv2d_groups");
    CHECK(attr_int_is(node_of(m, "Conv", 0), "group", 2));
    onnx__model_proto__free_unpacked(m, NULL);

    /* ConvTranspose: every attribute explicit, no auto_pad or output_shape */
    m = case_model("conv_transpose2d_asym");
    n = node_of(m, "ConvTranspose", 0);
    CHECK(attr_ints_are(n, "kernel_shape", TG_INTS(3, 2)) && attr_ints_are(n, "strides", TG_INTS(3, 2)));
    CHECK(attr_ints_are(n, "pads", TG_INTS(1, 0, 2, 1)));
    CHECK(attr_ints_are(n, "output_padding", TG_INTS(2, 1)));
    CHECK(attr_ints_are(n, "dilations", TG_INTS(1, 1)) && attr_int_is(n, "group", 1));
    CHECK(!attr_of(n, "auto_pad") && !attr_of(n, "output_shape"));
    CHECK(n && n->n_input == 2 && init_of(m, n->input[1]) != NULL);
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("conv_transpose2d_dil_groups");
    n = node_of(m, "ConvTranspose", 0);
    /* output_padding 1 at the stride 1 goes into the end pads 1 and 2 */
    CHECK(attr_ints_are(n, "output_padding", TG_INTS(0, 0)) && attr_ints_are(n, "pads", TG_INTS(0, 1, 0, 1)));
    CHECK(attr_ints_are(n, "dilations", TG_INTS(2, 2)));
    CHECK(attr_int_is(n, "group", 2) && n && n->n_input == 3);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("max_pool2d_default_stride"); /* tracegraph's default stride = kernel */
    n = node_of(m, "MaxPool", 0);
    CHECK(attr_ints_are(n, "kernel_shape", TG_INTS(2, 2)) && attr_ints_are(n, "strides", TG_INTS(2, 2)));
    CHECK(attr_ints_are(n, "pads", TG_INTS(0, 0, 0, 0)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("avg_pool2d_incl");
    n = node_of(m, "AveragePool", 0);
    CHECK(attr_int_is(n, "count_include_pad", 1) && attr_ints_are(n, "pads", TG_INTS(1, 1, 1, 1)));
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("avg_pool2d_excl");
    CHECK(attr_int_is(node_of(m, "AveragePool", 0), "count_include_pad", 0));
    onnx__model_proto__free_unpacked(m, NULL);
}

/* The lists opset 17 takes as inputs, and those it takes as attributes. */
static void test_list_operands(void)
{
    Onnx__ModelProto *m = case_model("reduce_sum");
    const Onnx__NodeProto *n = node_of(m, "ReduceSum", 0);
    CHECK(n && n->n_input == 2 && init_i64s_are(m, n->input[1], TG_INTS(1)));
    CHECK(attr_int_is(n, "keepdims", 0) && !attr_of(n, "axes"));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("reduce_mean_keep");
    n = node_of(m, "ReduceMean", 0);
    CHECK(n && n->n_input == 1 && attr_ints_are(n, "axes", TG_INTS(-1)) && attr_int_is(n, "keepdims", 1));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("reduce_max_all_keep");
    n = node_of(m, "ReduceMax", 0);
    CHECK(n && n->n_input == 1 && !attr_of(n, "axes") && attr_int_is(n, "keepdims", 1));
    onnx__model_proto__free_unpacked(m, NULL);

    /* ArgMax/ArgMin: one axis, keepdims and select_last_index as attributes */
    m = case_model("argmax_last_neg");
    n = node_of(m, "ArgMax", 0);
    CHECK(n && n->n_input == 1 && attr_int_is(n, "axis", -1) && attr_int_is(n, "keepdims", 0) &&
          attr_int_is(n, "select_last_index", 1));
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("argmin");
    n = node_of(m, "ArgMin", 0);
    CHECK(n && attr_int_is(n, "axis", 0) && attr_int_is(n, "keepdims", 0) &&
          !attr_of(n, "select_last_index"));
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("argmax_scalar"); /* ONNX wants rank >= 1: x reshaped to [1] */
    n = node_of(m, "Reshape", 0);
    CHECK(n && n->n_input == 2 && init_i64s_are(m, n->input[1], TG_INTS(1)));
    const Onnx__NodeProto *am = node_of(m, "ArgMax", 0);
    CHECK(n && am && strcmp(am->input[0], n->output[0]) == 0 && attr_int_is(am, "axis", 0) &&
          attr_int_is(am, "keepdims", 0));
    onnx__model_proto__free_unpacked(m, NULL);

    /* GatherElements / ScatterElements: the indices are the inputs; the
     * reduction a string, left out when none; max and min make opset 18
     * and, with it, ReduceMean's and ReduceMax's axes an input */
    m = case_model("gather_elements_i32_neg");
    n = node_of(m, "GatherElements", 0);
    CHECK(n && n->n_input == 2 && attr_int_is(n, "axis", -1) && m->opset_import[0]->version == 17);
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("scatter_elements");
    n = node_of(m, "ScatterElements", 0);
    CHECK(n && n->n_input == 3 && attr_int_is(n, "axis", 0) && !attr_of(n, "reduction"));
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("scatter_elements_max");
    n = node_of(m, "ScatterElements", 0);
    const Onnx__AttributeProto *ra = attr_of(n, "reduction");
    CHECK(ra && ra->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING && ra->s.len == 3 &&
          !memcmp(ra->s.data, "max", 3) && m->opset_import[0]->version == 18);
    onnx__model_proto__free_unpacked(m, NULL);
    m = case_model("scatter_max_reduce");
    for (int k = 0; k < 3; k++) {
        static const char *const types[3] = {"ReduceMax", "ReduceMean", "ReduceSum"};
        static const int64_t axes[3] = {1, 0, -1};
        n = node_of(m, types[k], 0);
        CHECK_MSG(n && n->n_input == 2 && !attr_of(n, "axes") &&
                  init_i64s_are(m, n->input[1], TG_INTS(axes[k])), "%s at opset 18", types[k]);
    }
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("split_rest"); /* the -1 is resolved */
    n = node_of(m, "Split", 0);
    CHECK(n && n->n_input == 2 && n->n_output == 3 && init_i64s_are(m, n->input[1], TG_INTS(2, 4, 1)));
    CHECK(attr_int_is(n, "axis", 1));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("slice_reverse");
    n = node_of(m, "Slice", 0);
    CHECK(n && n->n_input == 5 && init_i64s_are(m, n->input[1], TG_INTS(-1)) &&
          init_i64s_are(m, n->input[2], TG_INTS(-100)) && init_i64s_are(m, n->input[3], TG_INTS(1)) &&
          init_i64s_are(m, n->input[4], TG_INTS(-1)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("pad_i64"); /* the value in x's dtype */
    n = node_of(m, "Pad", 0);
    CHECK(n && n->n_input == 3 && init_i64s_are(m, n->input[1], TG_INTS(0, 1, 1, 0)));
    const Onnx__TensorProto *t = n ? init_of(m, n->input[2]) : NULL;
    CHECK(t && t->n_dims == 0 && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 &&
          t->raw_data.len == 8 && get_le(t->raw_data.data, 8) == 7);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("clip_min_only"); /* an infinite bound is left out */
    n = node_of(m, "Clip", 0);
    t = n && n->n_input == 2 ? init_of(m, n->input[1]) : NULL;
    CHECK(t && t->n_dims == 0 && t->raw_data.len == 4 && f32_le(t->raw_data.data) == 0.25f);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("unsqueeze");
    n = node_of(m, "Unsqueeze", 0);
    CHECK(n && n->n_input == 2 && init_i64s_are(m, n->input[1], TG_INTS(0, 3)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("squeeze_all"); /* empty axes: the size-1 dims, explicitly */
    n = node_of(m, "Squeeze", 0);
    CHECK(n && n->n_input == 2 && init_i64s_are(m, n->input[1], TG_INTS(0, 2)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("expand");
    n = node_of(m, "Expand", 0);
    CHECK(n && init_i64s_are(m, n->input[1], TG_INTS(2, 3, 4)));
    onnx__model_proto__free_unpacked(m, NULL);
}

static void test_other_attrs(void)
{
    Onnx__ModelProto *m = case_model("layer_norm_no_weight"); /* Scale: ones over [3,4] */
    const Onnx__NodeProto *n = node_of(m, "LayerNormalization", 0);
    const Onnx__TensorProto *t = n && n->n_input == 2 ? init_of(m, n->input[1]) : NULL;
    int ones = t && t->n_dims == 2 && t->dims[0] == 3 && t->dims[1] == 4 && t->raw_data.len == 48;
    for (int i = 0; ones && i < 12; i++)
        ones = f32_le(t->raw_data.data + 4 * i) == 1.0f;
    CHECK(ones);
    CHECK(attr_int_is(n, "axis", 1));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("cast_f32_i32");
    CHECK(attr_int_is(node_of(m, "Cast", 0), "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT32));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("gather_axis1_i32");
    CHECK(attr_int_is(node_of(m, "Gather", 0), "axis", 1));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("matmul_ta_tb"); /* transposes of the last two dims */
    CHECK(count_op(m, "Transpose") == 2 && count_op(m, "MatMul") == 1);
    CHECK(attr_ints_are(node_of(m, "Transpose", 0), "perm", TG_INTS(0, 2, 1)));
    CHECK(attr_ints_are(node_of(m, "Transpose", 1), "perm", TG_INTS(1, 0)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("matmul_ta_1d"); /* a vector's transpose is itself */
    CHECK(count_op(m, "Transpose") == 1);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("to_blocked");
    n = node_of(m, "Reshape", 0);
    CHECK(n && init_i64s_are(m, n->input[1], TG_INTS(2, 2, 16, 3, 3)));
    CHECK(attr_ints_are(node_of(m, "Transpose", 0), "perm", TG_INTS(0, 1, 3, 4, 2)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("to_blocked8_pad"); /* 12 channels padded to 16, in 2 blocks of 8 */
    n = node_of(m, "Pad", 0);
    CHECK(n && init_i64s_are(m, n->input[1], TG_INTS(0, 0, 0, 0, 0, 4, 0, 0)));
    n = node_of(m, "Reshape", 0);
    CHECK(n && init_i64s_are(m, n->input[1], TG_INTS(2, 2, 8, 3, 3)));
    CHECK(attr_ints_are(node_of(m, "Transpose", 0), "perm", TG_INTS(0, 1, 3, 4, 2)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("from_blocked8_pad"); /* 3 blocks of 8 back to 24 channels, sliced to 20 */
    n = node_of(m, "Reshape", 0);
    CHECK(n && init_i64s_are(m, n->input[1], TG_INTS(2, 24, 3, 3)));
    n = node_of(m, "Slice", 0);
    CHECK(n && init_i64s_are(m, n->input[2], TG_INTS(20)));
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("linear_ep_silu_add_tanh"); /* MatMul + bias, then silu, add, tanh */
    CHECK(count_op(m, "MatMul") == 1 && count_op(m, "Add") == 2 && count_op(m, "Sigmoid") == 1 &&
          count_op(m, "Tanh") == 1 && count_op(m, "Mul") == 1);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("fused"); /* one node per statement; gelu's erf form */
    CHECK(count_op(m, "Clip") == 2 && count_op(m, "LeakyRelu") == 1 && count_op(m, "Erf") == 1 &&
          count_op(m, "Sigmoid") == 1 && attr_of(node_of(m, "LeakyRelu", 0), "alpha") &&
          attr_of(node_of(m, "LeakyRelu", 0), "alpha")->f == 0.1f);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("fused_bcast_out");
    CHECK(count_op(m, "Expand") == 1);
    onnx__model_proto__free_unpacked(m, NULL);
}

/* Outputs that are an input, a constant, or one value twice; user names
 * that look generated. */
static void test_names_and_outputs(void)
{
    Onnx__ModelProto *m = case_model("passthrough");
    CHECK(m && m->graph->n_output == 5 && count_op(m, "Identity") == 3);
    const char *want[5] = {"x_again", "a_constant", "relu_once", "relu_twice", "sum"};
    for (int i = 0; m && i < 5 && i < (int)m->graph->n_output; i++)
        CHECK_MSG(strcmp(m->graph->output[i]->name, want[i]) == 0, "output %d is %s", i, want[i]);
    CHECK(strcmp(node_of(m, "Relu", 0)->output[0], "relu_once") == 0);
    onnx__model_proto__free_unpacked(m, NULL);

    m = case_model("name_clash"); /* check_generic proved the names unique */
    CHECK(m && strcmp(m->graph->input[0]->name, "v1") == 0 && strcmp(m->graph->output[0]->name, "v3") == 0);
    const Onnx__NodeProto *r = node_of(m, "Relu", 0), *e = node_of(m, "Exp", 0);
    CHECK(r && strcmp(r->input[0], "v1") == 0 && strcmp(r->output[0], "v1") != 0);
    CHECK(e && strcmp(e->output[0], "v2") == 0 && strcmp(node_of(m, "Neg", 0)->output[0], "v2") != 0);
    onnx__model_proto__free_unpacked(m, NULL);
}

/* Dead nodes are not written. */
static void test_dead_nodes(void)
{
    tcase c;
    CHECK(case_build(0, &c)); /* neg */
    int32_t x = c.g->inputs[0];
    int32_t id = graph_add_node(c.g, GRAPH_OP_exp, &x, 1, NULL, NULL, 0);
    CHECK(id >= 0);
    if (id >= 0)
        c.g->nodes[id].flags |= GRAPH_NODE_DEAD;
    Onnx__ModelProto *m = export_unpack(c.g, NULL);
    CHECK(m && count_op(m, "Exp") == 0 && count_op(m, "Neg") == 1 && m->graph->n_node == 1);
    check_generic(m, "dead");
    onnx__model_proto__free_unpacked(m, NULL);
    case_free(&c);
}

/* ---- traced graphs: call sites, params, dynamic dims ---- */

/* The line of tiny_forward's ops, 4 lines on. */
static const int tiny_line = __LINE__ + 4;

static eager_tensor *tiny_forward(eager_tensor *x, eager_tensor *const *p)
{
    return eager_relu(eager_linear(x, p[0], p[1]));
}

static int dim_is_param(const Onnx__ValueInfoProto *vi, int d, const char *sym)
{
    const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
    return (size_t)d < s->n_dim &&
           s->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
           strcmp(s->dim[d]->dim_param, sym) == 0;
}

static int dim_is(const Onnx__ValueInfoProto *vi, int d, int64_t v)
{
    const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
    return (size_t)d < s->n_dim &&
           s->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
           s->dim[d]->dim_value == v;
}

static void test_traced_tiny(void)
{
    model t = {"tiny", tiny_forward, 2,
               {eager_rand_normal(TG_SHAPE(6, 5), 1, 0, 0.3f), eager_rand_normal(TG_SHAPE(6), 2, 0, 0.1f)},
               TG_SHAPE(4, 5)};
    eager_tensor *x = model_input(&t, 4, 3);
    graph *g = model_trace(&t, x);
    Onnx__ModelProto *m = g ? export_unpack(g, NULL) : NULL;
    check_generic(m, "tiny");
    const Onnx__NodeProto *mm = node_of(m, "MatMul", 0), *relu = node_of(m, "Relu", 0);
    char site[128];
    snprintf(site, sizeof site, "test_onnx_export.c:%d tiny_forward", tiny_line);
    CHECK_MSG(mm && mm->doc_string && strstr(mm->doc_string, site), "MatMul doc_string '%s' has '%s'",
              mm && mm->doc_string ? mm->doc_string : "(none)", site);
    CHECK(relu && relu->doc_string && strstr(relu->doc_string, site));
    /* linear is Transpose, MatMul, Add: "linear_<id>", then suffixes */
    const Onnx__NodeProto *tr = node_of(m, "Transpose", 0);
    CHECK(tr && mm && strncmp(tr->name, "linear_", 7) == 0 && strlen(mm->name) == strlen(tr->name) + 2 &&
          strncmp(mm->name, tr->name, strlen(tr->name)) == 0 && strcmp(mm->name + strlen(tr->name), "_1") == 0);
    CHECK(relu && strncmp(relu->name, "relu_", 5) == 0);
    /* params are initializers under their names, with their bytes */
    for (int i = 0; m && i < 2; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        const Onnx__TensorProto *p = init_of(m, name);
        const eager_tensor *e = t.params[i];
        int ok = p && p->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
                 p->n_dims == (size_t)eager_ndim(e) && p->raw_data.len == eager_nbytes(e);
        for (int d = 0; ok && d < eager_ndim(e); d++)
            ok = p->dims[d] == eager_dim(e, d);
        const float *f = eager_peek(e);
        for (int64_t k = 0; ok && k < eager_numel(e); k++)
            ok = f32_le(p->raw_data.data + 4 * k) == f[k];
        CHECK_MSG(ok, "initializer %s: name, dtype, dims and bytes", name);
    }
    /* the dynamic batch is dim_param "B" on the input and the output */
    CHECK(m && m->graph->n_input == 1 && strcmp(m->graph->input[0]->name, "x") == 0 &&
          m->graph->input[0]->type->tensor_type->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
          dim_is_param(m->graph->input[0], 0, "B") && dim_is(m->graph->input[0], 1, 5));
    CHECK(m && m->graph->n_output == 1 && strcmp(m->graph->output[0]->name, "y") == 0 &&
          dim_is_param(m->graph->output[0], 0, "B") && dim_is(m->graph->output[0], 1, 6));
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    graph_free(g);
    eager_release(x);
    model_free(&t);
}

/* A guarded graph is refused, naming the read's call site. */
static void test_guards(void)
{
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 3), 5, -1, 1);
    eager_pool_push();
    trace_begin(NULL);
    trace_input(x, "x");
    trace_output(model_branchy(x), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK(g && g->nguards > 0);
    if (!g)
        return;
    void *buf = NULL;
    size_t len = 0;
    char site[96];
    snprintf(site, sizeof site, "models.c:%d model_branchy", model_branchy_line);
    CHECK(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err, site) && strstr(err, "guard"), "'%s' names '%s'", err, site);
    CHECK(buf == NULL && len == 0);
    format_onnx_save_opts o = {.drop_guards = 1};
    Onnx__ModelProto *m = export_unpack(g, &o);
    check_generic(m, "branchy, guards dropped");
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    for (int32_t i = 0; i < g->nguards; i++) /* guards that are off need no flag */
        g->guards[i].policy = GRAPH_GUARD_OFF;
    m = export_unpack(g, NULL);
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    graph_free(g);
    eager_release(x);
}

static void test_elided(void)
{
    graph *g = graph_new("elided");
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x");
    int32_t w = graph_add_value(g, GRAPH_VALUE_CONST, &t, "w_elided");
    graph_add_input(g, x);
    int32_t in[2] = {x, w}, y;
    CHECK(graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &y, 1) >= 0);
    graph_add_output(g, y, "y");
    void *buf = NULL;
    size_t len = 0;
    CHECK(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err, "'w_elided'") && strstr(err, "elided"), "message: %s", err);
    CHECK(buf == NULL);
    graph_free(g);
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void test_files(void)
{
    tcase c;
    CHECK(case_build(0, &c));
    char dir[] = "/tmp/tg_onnx_XXXXXX", path[256], sub[256], inner[300];
    CHECK(mkdtemp(dir) != NULL);
    /* the file holds exactly what save_mem gives */
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    void *buf = NULL;
    size_t len = 0;
    CHECK(format_onnx_save(c.g, path, NULL, err, sizeof err) == TG_OK);
    CHECK(format_onnx_save_mem(c.g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    FILE *f = fopen(path, "rb");
    char *back = malloc(len + 1);
    CHECK(f && back && fread(back, 1, len + 1, f) == len && memcmp(back, buf, len) == 0);
    if (f)
        fclose(f);
    free(back);
    free(buf);
    remove(path);
    /* a path that is a directory: the rename fails, the temp file goes */
    snprintf(sub, sizeof sub, "%s/d", dir);
    snprintf(inner, sizeof inner, "%s/f", sub);
    CHECK(mkdir(sub, 0700) == 0 && (f = fopen(inner, "w")) && fclose(f) == 0);
    CHECK(format_onnx_save(c.g, sub, NULL, err, sizeof err) == TG_ERR_IO);
    CHECK_MSG(strstr(err, sub) && strstr(err, "cannot write"), "message: %s", err);
    CHECK(dir_entries(dir) == 1 && dir_entries(sub) == 1);
    snprintf(path, sizeof path, "%s/no/such/dir.onnx", dir);
    CHECK(format_onnx_save(c.g, path, NULL, err, sizeof err) == TG_ERR_IO);
    CHECK(dir_entries(dir) == 1);
    CHECK(format_onnx_save(NULL, path, NULL, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_onnx_save_mem(c.g, NULL, NULL, &len, err, sizeof err) == TG_ERR_NULL);
    remove(inner);
    rmdir(sub);
    rmdir(dir);
    case_free(&c);
}

/* ---- the traced models ---- */

/* x [B,16,6,6]: a residual conv chain the -O3 layout pass blocks, then an
 * elementwise chain. */
static eager_tensor *conv_chain(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *y = eager_relu(eager_conv2d(x, p[0], p[1], TG_NOINTS, TG_INTS(1), TG_NOINTS, 1));
    y = eager_conv2d(y, p[2], p[3], TG_NOINTS, TG_INTS(1), TG_NOINTS, 1);
    y = eager_relu(eager_add(y, x));
    y = eager_conv2d(y, p[4], EAGER_NONE, TG_INTS(2), TG_NOINTS, TG_NOINTS, 1);
    y = eager_flatten(eager_global_avg_pool(eager_silu(y)), 1, -1);
    /* an elementwise chain for -O3's fused node */
    return eager_add(eager_mul(eager_tanh(y), eager_scalar(0.5)), eager_sigmoid(y));
}

static model chain_model(void)
{
    return (model){"conv_chain", conv_chain, 5,
                   {eager_rand_normal(TG_SHAPE(16, 16, 3, 3), 31, 0, 0.1f),
                    eager_rand_normal(TG_SHAPE(16), 32, 0, 0.1f),
                    eager_rand_normal(TG_SHAPE(16, 16, 3, 3), 33, 0, 0.1f),
                    eager_rand_normal(TG_SHAPE(16), 34, 0, 0.1f),
                    eager_rand_normal(TG_SHAPE(32, 16, 1, 1), 35, 0, 0.2f)},
                   TG_SHAPE(2, 16, 6, 6)};
}

#define N_MODELS (MODEL_COUNT + 1)

/* Model k (the shared ones, then conv_chain) traced, at -O0 or -O3. */
static graph *model_graph(int k, int level, model *m)
{
    *m = k < MODEL_COUNT ? model_make(k) : chain_model();
    eager_tensor *x = model_input(m, m->input_shape.v[0], 7);
    graph *g = model_trace(m, x);
    eager_release(x);
    if (g && level) {
        opt_options o = opt_default_options();
        o.level = level;
        tg_status st = opt_optimize(g, &o, NULL, err, sizeof err);
        CHECK_MSG(st == TG_OK, "%s -O%d: %s", m->name, level, err);
    }
    return g;
}

/* Ops of the graphs exported: every op of ops.def must be among them. */
static int op_seen[GRAPH_OP_COUNT];

/* Ops with no ONNX form are refused, naming the node and why; they count
 * as covered. */
static void test_no_onnx_form(void)
{
    static const char *const irs[] = {
        "graph t(%p: f32[2,3], %g: f32[2,3], %b: f32[2,3], %lr: f32[], %mo: f32[], "
        "%wd: f32[]) -> (y: f32[2,3]) {\n"
        "  %1: f32[2,3], %2: f32[2,3] = sgd_step(%p, %g, %b, %lr, %mo, %wd)\n"
        "  return y = %1\n}\n",
        "graph t(%p: f32[2,3], %g: f32[2,3], %m: f32[2,3], %v: f32[2,3], %t: i64[], "
        "%lr: f32[], %b1: f32[], %b2: f32[], %e: f32[], %wd: f32[]) -> (y: f32[2,3]) {\n"
        "  %1: f32[2,3], %2: f32[2,3], %3: f32[2,3] = adamw_step(%p, %g, %m, %v, %t, %lr, %b1, "
        "%b2, %e, %wd)\n"
        "  return y = %1\n}\n",
        "graph t(%dy: f32[1,2,3,3], %x: f32[1,2,5,6]) -> (y: f32[1,2,5,6]) {\n"
        "  %1: f32[1,2,5,6] = max_pool2d_grad(%dy, %x) {kernel=[3], stride=[2], padding=[1]}\n"
        "  return y = %1\n}\n",
    };
    static const graph_op ops[] = {GRAPH_OP_sgd_step, GRAPH_OP_adamw_step,
                                   GRAPH_OP_max_pool2d_grad};
    static const char *const whys[] = {
        "): an optimizer update has no ONNX form (the ai.onnx.preview.training domain is not "
        "written)",
        "): an optimizer update has no ONNX form (the ai.onnx.preview.training domain is not "
        "written)",
        "): a gradient op has no ONNX form (the ai.onnx.preview.training domain is not "
        "written): export the forward graph",
    };
    for (int k = 0; k < 3; k++) {
        graph *g = graph_parse(irs[k], strlen(irs[k]), err, sizeof err);
        CHECK_MSG(g != NULL, "parse: %s", err);
        void *buf = NULL;
        size_t len = 0;
        char want[96];
        snprintf(want, sizeof want, "node 0 (%s at ", graph_ops[ops[k]].name);
        CHECK(g && format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_ERR_UNSUPPORTED);
        CHECK_MSG(g && strstr(err, want) && strstr(err, whys[k]) && !buf && !len,
                  "message: %s", err);
        op_seen[ops[k]] = 1;
        graph_free(g);
    }
}

/* The gradient ops are refused, naming the node; they count as covered. */
static void test_grad_ops_refused(void)
{
    static const char *const irs[] = {
        "graph t(%x: f32[2,3,5,5], %dy: f32[2,4,3,3]) -> (y: f32[4,3,3,3]) {\n"
        "  %1: f32[4,3,3,3] = conv2d_grad_weight(%x, %dy) {ksize=[3,3]}\n"
        "  return y = %1\n}\n",
        "graph t(%dy: f32[2,4,3,3], %w: f32[4,3,3,3]) -> (y: f32[2,3,5,5]) {\n"
        "  %1: f32[2,3,5,5] = conv2d_grad_input(%dy, %w) {xsize=[5,5]}\n"
        "  return y = %1\n}\n",
        "graph t(%dy: f32[2,3,4,5], %x: f32[2,3,4,5], %w: f32[3], %m: f32[3], %r: f32[3]) -> "
        "(y: f32[2,3,4,5]) {\n"
        "  %1: f32[2,3,4,5], %2: f32[3], %3: f32[3] = batch_norm_train_grad(%dy, %x, %w, %m, %r)\n"
        "  return y = %1\n}\n",
        "graph t(%dp: f32[2,3,2,2], %y: f32[2,3,4,5], %x: f32[2,3,4,5], %w: f32[3], %m: f32[3], "
        "%r: f32[3]) -> (y: f32[2,3,4,5]) {\n"
        "  %1: f32[2,3,4,5], %2: f32[3], %3: f32[3] = batch_norm_pool_grad(%dp, %y, %x, %w, %m, "
        "%r) {kernel=[2,2]}\n"
        "  return y = %1\n}\n",
        "graph t(%dy: f32[2,3,4], %x: f32[2,3,4]) -> (y: f32[2,3,4]) {\n"
        "  %1: f32[2,3,4], %2: f32[4], %3: f32[4] = layer_norm_grad(%dy, %x)\n"
        "  return y = %1\n}\n",
    };
    for (int k = 0; k < (int)(sizeof irs / sizeof irs[0]); k++) {
        graph *g = graph_parse(irs[k], strlen(irs[k]), err, sizeof err);
        CHECK_MSG(g != NULL, "parse: %s", err);
        if (!g)
            return;
        void *buf = NULL;
        size_t len = 0;
        char want[96];
        snprintf(want, sizeof want, "node 0 (%s at ", graph_ops[g->nodes[0].op].name);
        CHECK(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(err, want) &&
                      strstr(err, "): a gradient op has no ONNX form (the "
                                  "ai.onnx.preview.training domain is not written): "
                                  "export the forward graph") && !buf && !len,
                  "message: %s", err);
        op_seen[g->nodes[0].op] = 1;
        graph_free(g);
    }
}

static void mark_ops(const graph *g)
{
    for (int32_t i = 0; g && i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            op_seen[g->nodes[i].op] = 1;
}

/* A training-mode op is refused, naming it and the way out (eval); a
 * graph set to eval exports. */
static void test_training_ops(void)
{
    static const char *const irs[] = {
        "graph t(%x: f32[2,3,4], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3])"
        " -> (y: f32[2,3,4]) {\n"
        "  %1: f32[2,3,4], %2: f32[3], %3: f32[3], %4: f32[3], %5: f32[3] ="
        " batch_norm_train(%x, %s, %b, %m, %v)\n"
        "  %6: f32[2,3,4] = relu(%1)\n  return y = %6\n}\n",
        "graph t(%x: f32[2,3,4], %g: i64[2]) -> (y: f32[2,3,4]) {\n"
        "  %1: f32[2,3,4] = dropout(%x, %g) {p=0.5}\n"
        "  %2: f32[2,3,4] = relu(%1)\n  return y = %2\n}\n",
        "graph t(%g: i64[2]) -> (y: i64[2]) {\n"
        "  %1: i64[2] = rng_advance(%g) {n=24}\n  return y = %1\n}\n",
    };
    for (int k = 0; k < 3; k++) {
        graph *g = graph_parse(irs[k], strlen(irs[k]), err, sizeof err);
        CHECK_MSG(g != NULL, "parses: %s", err);
        if (!g)
            return;
        const char *op = graph_ops[g->nodes[0].op].name;
        op_seen[g->nodes[0].op] = 1;
        void *buf = NULL;
        size_t len = 0;
        char want[64];
        snprintf(want, sizeof want, "node 0 (%s at ", op);
        CHECK(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(err, want) && strstr(err, "training-mode op has no ONNX export") &&
                      strstr(err, "opt_set_training"),
                  "%s: message: %s", op, err);
        CHECK(buf == NULL && len == 0);
        if (k < 2) { /* eval: batch_norm (whose export the cases check), relu */
            CHECK(opt_set_training(g, 0, err, sizeof err) == TG_OK);
            Onnx__ModelProto *m = export_unpack(g, NULL);
            CHECK_MSG(m != NULL, "%s: the eval graph exports", op);
            if (m)
                onnx__model_proto__free_unpacked(m, NULL);
        }
        graph_free(g);
    }
}

static void test_models(void)
{
    int model_ops[GRAPH_OP_COUNT] = {0};
    for (int k = 0; k < N_MODELS; k++)
        for (int level = 0; level <= 3; level += 3) {
            model m;
            graph *g = model_graph(k, level, &m);
            char what[64];
            snprintf(what, sizeof what, "%s -O%d", m.name, level);
            Onnx__ModelProto *p = g ? export_unpack(g, NULL) : NULL;
            check_generic(p, what);
            mark_ops(g);
            for (int32_t i = 0; g && level && i < g->nnodes; i++)
                model_ops[g->nodes[i].op] = 1;
            CHECK_MSG(p && p->graph->n_input == 1 && dim_is_param(p->graph->input[0], 0, "B"),
                      "%s: batch is dim_param B", what);
            if (k == MODEL_COUNT && level == 3 && test_blocked_convs()) /* the blocked conv chain */
                /* the batch keeps its place in the layout Reshapes: their
                 * shape's 0 copies it (test_onnx_ort runs at another batch) */
                CHECK_MSG(count_op(p, "Conv") == 3 && count_op(p, "Reshape") >= 2 &&
                              count_op(p, "Shape") == 0,
                          "%s: blocked convs, the batch kept by Reshape's 0", what);
            if (p)
                onnx__model_proto__free_unpacked(p, NULL);
            graph_free(g);
            model_free(&m);
        }
    /* the -O3 models export the optimizer's own ops, as traced (every conv
     * of them is blocked: conv2d_ep is exported by the op tests) */
    static const graph_op made[] = {GRAPH_OP_fused, GRAPH_OP_linear_ep, GRAPH_OP_conv2d_blk,
                                    GRAPH_OP_to_blocked, GRAPH_OP_from_blocked};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        CHECK_MSG(model_ops[made[i]] || (made[i] != GRAPH_OP_fused && made[i] != GRAPH_OP_linear_ep &&
                                         !test_blocked_convs()),
                  "an -O3 model has %s", graph_ops[made[i]].name);
}

/*
 * Exports g with the n-th allocation failing, n = 1, 2, ... until it goes
 * through; each failure must be TG_ERR_NOMEM with a message, nothing
 * returned and no file left (ASan: nothing leaked).  Returns the number
 * of failures, -1 if one was not handled so.
 */
static int oom_loop(const graph *g, const char *path, const char *dir)
{
    tg_status st = TG_ERR_NOMEM;
    int fails = 0, ok = 1;
    for (long n = 1; st == TG_ERR_NOMEM && n < 100000; n++) {
        void *buf = NULL;
        size_t len = 0;
        onnxw_fail_countdown = n;
        st = path ? format_onnx_save(g, path, NULL, err, sizeof err)
                  : format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err);
        if (st == TG_ERR_NOMEM) {
            fails++;
            ok &= buf == NULL && strstr(err, "out of memory") != NULL &&
                  (!dir || dir_entries(dir) == 0);
        }
        free(buf);
    }
    onnxw_fail_countdown = 0;
    if (path)
        remove(path);
    return st == TG_OK && ok ? fails : -1;
}

/* Out of memory at each allocation in turn (the library's test hook). */
static void test_out_of_memory(void)
{
    model m;
    graph *g = model_graph(MODEL_COUNT, 3, &m);
    char dir[] = "/tmp/tg_onnx_oom_XXXXXX", path[256];
    CHECK(g && mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    /* fewer without blocked convs (cpu_caps.h): no layout nodes to export */
    int least = test_blocked_convs() ? 100 : 50;
    int n = g ? oom_loop(g, NULL, NULL) : -1;
    CHECK_MSG(n >= least, "conv_chain -O3, in memory: %d allocation failures handled", n);
    n = g ? oom_loop(g, path, dir) : -1;
    CHECK_MSG(n >= least, "conv_chain -O3, to a file: %d allocation failures handled", n);
    rmdir(dir);
    graph_free(g);
    model_free(&m);
    for (int i = 0; i < N_OP_CASES; i++) {
        tcase c;
        n = case_build(i, &c) ? oom_loop(c.g, NULL, NULL) : -1;
        CHECK_MSG(n >= 1, "%s: %d allocation failures handled", op_cases[i].name, n);
        case_free(&c);
    }
}

/* Every op case exports and passes the generic checks. */
static void test_all_cases(void)
{
    for (int i = 0; i < N_OP_CASES; i++) {
        tcase c;
        int ok = case_build(i, &c);
        CHECK_MSG(ok, "case %s builds: %s", op_cases[i].name, c.g ? graph_error(c.g) : "");
        Onnx__ModelProto *m = ok ? export_unpack(c.g, NULL) : NULL;
        check_generic(m, op_cases[i].name);
        mark_ops(c.g);
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        case_free(&c);
    }
}

/* ---- --ort-cases: files for ONNX Runtime ---- */

static void dims_str(const graph_type *t, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    if (t->ndim == 0)
        snprintf(buf, len, "-");
    for (int d = 0; d < t->ndim && o < len; d++)
        o += (size_t)snprintf(buf + o, len - o, d ? "x%lld" : "%lld", (long long)t->dim[d]);
}

/* Writes t's data little-endian to dir/file; adds " file dtype dims" to mf. */
static int write_tensor(const char *dir, const char *file, const eager_tensor *t, FILE *mf)
{
    char path[512], dims[160];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    const unsigned char *p = eager_peek(t);
    size_t es = graph_dtype_size(eager_dtype(t)), n = eager_nbytes(t);
    const uint16_t one = 1;
    int le = *(const uint8_t *)&one == 1, ok = f != NULL;
    for (size_t i = 0; ok && i < n; i += es)
        for (size_t b = 0; ok && b < es; b++)
            ok = fputc(p[i + (le ? b : es - 1 - b)], f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    dims_str(eager_type(t), dims, sizeof dims);
    fprintf(mf, " %s %s %s", file, graph_dtype_name(eager_dtype(t)), dims);
    return ok;
}

/* One case: DIR/<name>.onnx, inputs, expected outputs, a manifest line. */
static void write_case(const char *dir, const char *name, const graph *g, eager_tensor *const *in,
                       int nin, FILE *mf)
{
    char path[512], file[160];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    tg_status st = format_onnx_save(g, path, NULL, err, sizeof err);
    CHECK_MSG(st == TG_OK, "%s: %s", name, err);
    eager_tensor **out = calloc((size_t)g->noutputs + 1, sizeof *out);
    st = out ? eager_interpret(g, in, nin, out, g->noutputs, NULL) : TG_ERR_NOMEM;
    CHECK_MSG(st == TG_OK, "%s: interpreter: %s", name, eager_error());
    if (st == TG_OK) {
        fprintf(mf, "%s %s.onnx %d", name, name, nin);
        int ok = 1;
        for (int k = 0; k < nin; k++) {
            snprintf(file, sizeof file, "%s.in%d.bin", name, k);
            ok &= write_tensor(dir, file, in[k], mf);
        }
        fprintf(mf, " %d", (int)g->noutputs);
        for (int k = 0; k < g->noutputs; k++) {
            snprintf(file, sizeof file, "%s.out%d.bin", name, k);
            ok &= write_tensor(dir, file, out[k], mf);
        }
        fprintf(mf, "\n");
        CHECK_MSG(ok, "%s: files written", name);
    }
    for (int k = 0; out && k < g->noutputs; k++)
        eager_release(out[k]);
    free(out);
    eager_clear_error();
}

static int ort_cases(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *mf = fopen(path, "w");
    CHECK_MSG(mf != NULL, "cannot write %s", path);
    if (!mf)
        return check_done();
    int n = 0;
    for (int i = 0; i < N_OP_CASES; i++, n++) {
        tcase c;
        if (case_build(i, &c))
            write_case(dir, op_cases[i].name, c.g, c.in, c.nin, mf);
        else
            CHECK_MSG(0, "case %s builds", op_cases[i].name);
        case_free(&c);
    }
    /* models at a batch of 3, not the traced one: dim_param at work */
    for (int k = 0; k < N_MODELS; k++)
        for (int level = 0; level <= 3; level += 3, n++) {
            model m;
            graph *g = model_graph(k, level, &m);
            eager_tensor *x = model_input(&m, 3, 11);
            char name[64];
            snprintf(name, sizeof name, "model_%s_O%d", m.name, level);
            if (g)
                write_case(dir, name, g, &x, 1, mf);
            eager_release(x);
            graph_free(g);
            model_free(&m);
        }
    CHECK(fclose(mf) == 0);
    printf("wrote %d cases to %s\n", n, dir);
    return check_done();
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--ort-cases") == 0)
        return ort_cases(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--ort-cases DIR]\n", argv[0]);
        return 2;
    }
    test_all_cases();
    test_conv_pool_attrs();
    test_list_operands();
    test_other_attrs();
    test_names_and_outputs();
    test_dead_nodes();
    test_traced_tiny();
    test_guards();
    test_training_ops();
    test_elided();
    test_no_onnx_form();
    test_grad_ops_refused();
    test_files();
    test_models();
    test_out_of_memory();
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        CHECK_MSG(op_seen[op], "op %s is exported (or refused on purpose) by some case",
                  graph_ops[op].name);
    return check_done();
}
