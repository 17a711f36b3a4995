/*
 * test_onnx_node.c - ONNX import (formats/onnx.h) against the ONNX backend
 * node tests, the reference ONNX itself ships: for every directory
 * <test>/ with model.onnx and test_data_set_0/{input,output}_N.pb
 * (Debian's libonnx-testdata; another copy with TG_ONNX_TESTDATA=dir),
 * import the model, run it with the reference interpreter and compare
 * every output with output_N.pb (dtype and shape exactly; floats within
 * the backend tests' rtol 1e-3, atol 1e-7).  A model that imports with
 * TG_ERR_UNSUPPORTED is counted, not failed; one that imports and gives a
 * wrong answer fails, and so does any other import error of these valid
 * models.  A list of tests (at least one per supported op) must import
 * and pass.
 *
 * The node tests feed operands ONNX passes as tensors but tracegraph
 * keeps as attributes (Reshape's shape, Slice's starts) as graph inputs.
 * When the importer asks for such an input to be constant, the test
 * rebuilds the model with that input's test data as an initializer (the
 * way a deployed model holds it) and imports again.
 *
 * The TensorProto files are decoded here, independently of the importer.
 * TG_ONNX_VERBOSE=1 prints why each unsupported test is.  The importer's
 * refusals and features on models built in memory: test_onnx_import.c.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "onnx_test_util.h"
#include "graph/graph_impl.h"

#define MAX_IO 16

/* Tests that must import and pass: at least one per supported op. */
static const char *const must_pass[] = {
    "test_identity", "test_dropout_default", "test_dropout_default_mask",
    "test_top_k", "test_top_k_negative_axis", "test_top_k_smallest", "test_nonzero_example",
    "test_gathernd_example_float32", "test_gathernd_example_int32",
    "test_gathernd_example_int32_batch_dim1",
    "test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_with_peepholes",
    "test_lstm_batchwise", "test_gru_defaults", "test_gru_with_initial_bias",
    "test_gru_seq_length", "test_gru_batchwise", "test_simple_rnn_defaults",
    "test_simple_rnn_with_initial_bias", "test_simple_rnn_batchwise", "test_rnn_seq_length",
    "test_constant", "test_neg", "test_abs", "test_sign", "test_floor", "test_floor_example",
    "test_ceil", "test_ceil_example", "test_round", "test_exp", "test_log",
    "test_sqrt", "test_reciprocal", "test_relu", "test_sigmoid", "test_tanh",
    "test_erf", "test_leakyrelu", "test_leakyrelu_default", "test_clip",
    "test_clip_default_min", "test_add_bcast", "test_sub", "test_mul_bcast",
    "test_div", "test_pow", "test_pow_types_float32_int64",
    "test_max_two_inputs", "test_min_float32", "test_sum_two_inputs",
    "test_mean_two_inputs", "test_equal", "test_less_bcast", "test_greater",
    "test_where_example", "test_matmul_2d", "test_matmul_4d",
    "test_gemm_default_matrix_bias", "test_gemm_all_attributes",
    "test_gemm_transposeB", "test_gemm_default_vector_bias",
    "test_conv_with_strides_padding", "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding", "test_basic_conv_without_padding",
    "test_convtranspose", "test_convtranspose_1d", "test_convtranspose_3d", "test_convtranspose_autopad_same",
    "test_convtranspose_dilations", "test_convtranspose_kernel_shape",
    "test_convtranspose_output_shape", "test_convtranspose_pad", "test_convtranspose_pads",
    "test_convtranspose_with_kernel",
    "test_maxpool_2d_pads", "test_maxpool_2d_same_upper", "test_maxpool_2d_same_lower",
    "test_maxpool_2d_ceil", "test_maxpool_3d_default", "test_averagepool_3d_default",
    "test_averagepool_2d_pads",
    "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_strides",
    "test_batchnorm_example", "test_batchnorm_epsilon",
    "test_layer_normalization_4d_axis1", "test_layer_normalization_default_axis",
    "test_softmax_axis_1", "test_softmax_default_axis", "test_logsoftmax_axis_1",
    "test_reduce_sum_keepdims_example", "test_reduce_sum_empty_axes_input_noop_example",
    "test_reduce_mean_keepdims_example", "test_reduce_max_do_not_keepdims_example",
    "test_argmax_default_axis_example", "test_argmax_no_keepdims_random_select_last_index",
    "test_argmax_negative_axis_keepdims_example_select_last_index",
    "test_argmin_keepdims_random", "test_argmin_no_keepdims_example_select_last_index",
    "test_argmin_negative_axis_keepdims_random_select_last_index",
    "test_reshape_negative_dim", "test_reshape_zero_dim", "test_reshape_allowzero_reordered",
    "test_flatten_axis1", "test_flatten_negative_axis2", "test_transpose_default",
    "test_transpose_all_permutations_3", "test_concat_2d_axis_1",
    "test_split_equal_parts_1d", "test_split_variable_parts_2d",
    "test_slice", "test_slice_neg_steps", "test_slice_negative_axes",
    "test_constant_pad", "test_squeeze", "test_unsqueeze_axis_0",
    "test_unsqueeze_unsorted_axes", "test_expand_dim_changed", "test_gather_0",
    "test_gather_negative_indices", "test_shape", "test_shape_start_1_end_negative_1",
    "test_constantofshape_int_zeros", "test_constantofshape_float_ones",
    "test_softmax_axis_1_expanded", "test_layer_normalization_3d_axis1_epsilon",
    "test_size", "test_range_float_type_positive_delta",
    "test_range_int32_type_negative_delta", "test_layer_normalization_4d_axis1_expanded",
    "test_layer_normalization_default_axis_expanded",
    "test_and_bcast4v3d", "test_or_bcast3v1d", "test_xor4d", "test_less_equal_bcast",
    "test_greater_equal", "test_greater_equal_expanded", "test_celu", "test_hardswish",
    "test_prelu_broadcast", "test_thresholdedrelu", "test_reduce_min_keepdims_random",
    "test_reduce_sum_square_do_not_keepdims_random", "test_reduce_l1_negative_axes_keep_dims_example",
    "test_reduce_l2_keep_dims_example", "test_reduce_log_sum_default",
    "test_maxpool_1d_default", "test_averagepool_1d_default", "test_tril", "test_triu_neg",
    "test_tril_zero", "test_triu_out_neg_out", "test_depthtospace_dcr_mode",
    "test_depthtospace_crd_mode", "test_spacetodepth", "test_resize_upsample_scales_nearest",
    "test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn",
    "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
    "test_resize_upsample_sizes_nearest_floor_align_corners",
    "test_resize_upsample_sizes_nearest_ceil_half_pixel", "test_resize_upsample_scales_linear",
    "test_resize_downsample_scales_linear_align_corners",
    "test_resize_downsample_sizes_linear_pytorch_half_pixel", "test_resize_upsample_sizes_cubic",
    "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
    "test_resize_upsample_scales_cubic_asymmetric", "test_upsample_nearest",
    "test_hardmax_example", "test_hardmax_axis_0", "test_hardmax_one_hot",
    "test_gather_elements_0", "test_gather_elements_1", "test_gather_elements_negative_indices",
    "test_scatter_elements_with_axis", "test_scatter_elements_without_axis",
    "test_scatter_elements_with_negative_indices", "test_scatter_elements_with_duplicate_indices",
    "test_scatter_with_axis", "test_scatter_without_axis",
    "test_nllloss_NCd1_mean_weight_negative_ii_expanded",
    "test_nllloss_NCd1d2d3d4d5_none_no_weight_expanded",
    "test_tile",
    "test_tile_precomputed", "test_edge_pad", "test_reflect_pad",
    /* evaluated at load time: the test data baked as initializers */
    "test_reduce_prod_default_axes_keepdims_example",
    "test_reduce_prod_default_axes_keepdims_random", "test_reduce_prod_do_not_keepdims_example",
    "test_reduce_prod_do_not_keepdims_random", "test_reduce_prod_keepdims_example",
    "test_reduce_prod_keepdims_random", "test_reduce_prod_negative_axes_keepdims_example",
    "test_reduce_prod_negative_axes_keepdims_random", "test_mod_broadcast",
    "test_mod_int64_fmod", "test_mod_mixed_sign_float32", "test_mod_mixed_sign_int32",
    "test_mod_mixed_sign_int64", "test_scatternd", "test_scatternd_add",
    "test_scatternd_multiply",
};
/*
 * Tests whose data is double (tracegraph has no f64), run again apart with
 * every double made f32: the model's graph inputs and outputs and the test
 * data (rounded; the values are small integers).  CumSum's node tests are
 * all double.  Each must import and pass; they are counted apart from the
 * figure above.
 */
static const char *const double_as_f32[] = {
    "test_cumsum_1d", "test_cumsum_1d_exclusive", "test_cumsum_1d_reverse",
    "test_cumsum_1d_reverse_exclusive", "test_cumsum_2d_axis_0", "test_cumsum_2d_axis_1",
    "test_cumsum_2d_negative_axis",
};
/* Set while those run: decode reads doubles as f32, run_test rewrites the
 * model's double inputs and outputs as float. */
static int as_f32;

/* test_globalaveragepool is at opset 1, below what import reads:
 * GlobalAveragePool is checked in features() instead. */

typedef enum { R_PASS, R_UNSUPPORTED, R_FAIL } result;

/* ---- files and tensors (decoded here, not by the importer) ---- */

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *b = malloc(cap);
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb)
                free(b);
            b = nb;
        }
    }
    fclose(f);
    *len = n;
    return b;
}

/* A test tensor: its type and data (malloc'd). 0 if its dtype is not ours. */
typedef struct ttensor {
    Onnx__TensorProto *proto; /* unpacked from the .pb file */
    graph_type type;
    void *data;
} ttensor;

static int decode(Onnx__TensorProto *p, ttensor *t)
{
    memset(t, 0, sizeof *t);
    t->proto = p;
    switch (p->data_type) {
    case 1: t->type.dtype = GRAPH_F32; break;
    case 7: t->type.dtype = GRAPH_I64; break;
    case 6: t->type.dtype = GRAPH_I32; break;
    case 9: t->type.dtype = GRAPH_BOOL; break;
    case 11: /* double: only as f32, rounded */
        if (!as_f32)
            return 0;
        t->type.dtype = GRAPH_F32;
        break;
    default: return 0;
    }
    if (p->n_dims > GRAPH_MAX_DIMS)
        return 0;
    t->type.ndim = (int)p->n_dims;
    int64_t n = 1;
    for (size_t d = 0; d < p->n_dims; d++)
        if (p->dims[d] < 0 || __builtin_mul_overflow(n, t->type.dim[d] = p->dims[d], &n))
            return 0;
    size_t es = graph_dtype_size(t->type.dtype);
    if (p->data_type == 11) {
        size_t have = p->has_raw_data ? (p->raw_data.len % 8 ? (size_t)-1 : p->raw_data.len / 8)
                                      : p->n_double_data;
        if (have != (size_t)n)
            return 0;
        t->data = calloc((size_t)n + 1, es);
        for (int64_t i = 0; i < n; i++) {
            double v = 0;
            if (p->has_raw_data)
                memcpy(&v, p->raw_data.data + 8 * i, 8);
            else
                v = p->double_data[i];
            ((float *)t->data)[i] = (float)v;
        }
        return 1;
    }
    /* The data must be there before anything is allocated for it (the
     * files of sequence inputs also unpack as a TensorProto, of garbage). */
    size_t have = !p->has_raw_data               ? (t->type.dtype == GRAPH_F32   ? p->n_float_data
                                                   : t->type.dtype == GRAPH_I64 ? p->n_int64_data
                                                                                : p->n_int32_data)
                  : p->raw_data.len % es == 0 ? p->raw_data.len / es
                                              : (size_t)-1;
    if (have != (size_t)n)
        return 0;
    t->data = calloc((size_t)n + 1, es);
    if (p->has_raw_data) {
        if (p->raw_data.len)
            memcpy(t->data, p->raw_data.data, p->raw_data.len);
    } else {
        for (int64_t i = 0; i < n; i++) {
            if (t->type.dtype == GRAPH_F32)
                ((float *)t->data)[i] = p->float_data[i];
            else if (t->type.dtype == GRAPH_I64)
                ((int64_t *)t->data)[i] = p->int64_data[i];
            else if (t->type.dtype == GRAPH_I32)
                ((int32_t *)t->data)[i] = p->int32_data[i];
            else
                ((uint8_t *)t->data)[i] = p->int32_data[i] != 0;
        }
    }
    return 1;
}

static void ttensor_free(ttensor *t)
{
    free(t->data);
    onnx__tensor_proto__free_unpacked(t->proto, NULL);
}

/* input_0.pb ... or output_0.pb ... of a test; returns the count. */
static int read_tensors(const char *dir, const char *kind, ttensor *out, int *ok)
{
    int n = 0;
    *ok = 1;
    for (; n < MAX_IO; n++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir, kind, n);
        uint8_t *b = read_all(path, &len);
        if (!b)
            break;
        Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, b);
        free(b);
        if (!p) {
            *ok = 0;
            break;
        }
        if (!decode(p, &out[n]))
            *ok = 0;
    }
    return n;
}

/* ---- running one test ---- */

/* A copy of model (packed) with graph input `name` moved to the
 * initializers, holding data t. */
static uint8_t *bake_input(const uint8_t *model, size_t len, const char *name,
                           const Onnx__TensorProto *t, size_t *outlen)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, model);
    if (!m)
        return NULL;
    Onnx__GraphProto g = *m->graph;
    Onnx__TensorProto init = *t;
    init.name = (char *)name;
    Onnx__ValueInfoProto **in = malloc(sizeof *in * (g.n_input + 1));
    Onnx__TensorProto **inits = malloc(sizeof *inits * (g.n_initializer + 1));
    g.n_input = 0;
    for (size_t i = 0; i < m->graph->n_input; i++)
        if (strcmp(m->graph->input[i]->name, name))
            in[g.n_input++] = m->graph->input[i];
    if (g.n_initializer)
        memcpy(inits, g.initializer, sizeof *inits * g.n_initializer);
    inits[g.n_initializer++] = &init;
    g.input = in;
    g.initializer = inits;
    Onnx__ModelProto m2 = *m;
    m2.graph = &g;
    *outlen = onnx__model_proto__get_packed_size(&m2);
    uint8_t *buf = malloc(*outlen);
    onnx__model_proto__pack(&m2, buf);
    free(in);
    free(inits);
    onnx__model_proto__free_unpacked(m, NULL);
    return buf;
}

/* A copy of model (packed) with its double graph inputs and outputs float
 * (for double_as_f32). */
static uint8_t *model_as_f32(const uint8_t *model, size_t len, size_t *outlen)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, model);
    if (!m || !m->graph) {
        onnx__model_proto__free_unpacked(m, NULL);
        return NULL;
    }
    Onnx__ValueInfoProto **lists[2] = {m->graph->input, m->graph->output};
    size_t counts[2] = {m->graph->n_input, m->graph->n_output};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            Onnx__TypeProto *t = lists[l][i]->type;
            if (t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                t->tensor_type->elem_type == 11)
                t->tensor_type->elem_type = 1;
        }
    *outlen = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(*outlen);
    if (buf)
        onnx__model_proto__pack(m, buf);
    onnx__model_proto__free_unpacked(m, NULL);
    return buf;
}

/* Names of the model's graph inputs that are not initializers, in order
 * (input_N.pb is the N-th). */
static int input_names(const uint8_t *model, size_t len, char names[][256])
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, model);
    int n = 0;
    if (!m || !m->graph)
        return 0;
    for (size_t i = 0; i < m->graph->n_input && n < MAX_IO; i++) {
        int init = 0;
        for (size_t k = 0; k < m->graph->n_initializer; k++)
            init |= !strcmp(m->graph->initializer[k]->name, m->graph->input[i]->name);
        if (!init)
            snprintf(names[n++], 256, "%s", m->graph->input[i]->name);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return n;
}

/*
 * Imports the model, baking graph inputs the importer wants constant.
 * Returns the graph, or NULL with *st and err set.
 */
static graph *import(const char *test, uint8_t **model, size_t *len,
                     char names[][256], int nnames, const ttensor *ins,
                     tg_status *st, char *err, size_t errlen)
{
    for (int tries = 0; tries <= MAX_IO; tries++) {
        graph *g = onnx_read_mem(*model, *len, test, NULL, st, err, errlen);
        const char *at = g ? NULL : strstr(err, "' is a graph input");
        if (g || *st != TG_ERR_UNSUPPORTED || !at)
            return g;
        const char *q = at;
        while (q > err && q[-1] != '\'')
            q--;
        int k = 0;
        while (k < nnames && (strlen(names[k]) != (size_t)(at - q) ||
                              strncmp(names[k], q, (size_t)(at - q))))
            k++;
        if (k == nnames)
            return NULL;
        size_t nl;
        uint8_t *baked = bake_input(*model, *len, names[k], ins[k].proto, &nl);
        if (!baked)
            return NULL;
        free(*model);
        *model = baked;
        *len = nl;
    }
    return NULL;
}

/* |got - want| <= atol + rtol * |want| for floats, exact otherwise. */
static int compare(const char *test, int k, const eager_tensor *got, const ttensor *want)
{
    const graph_type *gt = eager_type(got);
    char gs[160], ws[160];
    int same = gt->dtype == want->type.dtype && gt->ndim == want->type.ndim;
    for (int d = 0; same && d < gt->ndim; d++)
        same = gt->dim[d] == want->type.dim[d];
    if (!same) {
        CHECK_MSG(0, "%s: output %d is %s%s, want %s%s", test, k,
                  graph_dtype_name(gt->dtype), graph_shape_str(gt, gs, sizeof gs),
                  graph_dtype_name(want->type.dtype),
                  graph_shape_str(&want->type, ws, sizeof ws));
        return 0;
    }
    int64_t n = graph_type_numel(gt);
    const void *p = eager_peek(got);
    if (gt->dtype != GRAPH_F32) {
        size_t bytes = (size_t)n * graph_dtype_size(gt->dtype);
        CHECK_MSG(memcmp(p, want->data, bytes) == 0, "%s: output %d differs", test, k);
        return memcmp(p, want->data, bytes) == 0;
    }
    const float *a = p, *b = want->data;
    for (int64_t i = 0; i < n; i++) {
        int ok = (isnan(a[i]) && isnan(b[i])) || a[i] == b[i] ||
                 fabs((double)a[i] - b[i]) <= 1e-7 + 1e-3 * fabs((double)b[i]);
        if (!ok) {
            CHECK_MSG(0, "%s: output %d element %lld is %.9g, want %.9g", test, k,
                      (long long)i, a[i], b[i]);
            return 0;
        }
    }
    return 1;
}

/* Runs g on the test's inputs and compares its outputs. */
static int run_and_compare(const char *test, const graph *g, char names[][256],
                           int nnames, const ttensor *ins, const ttensor *outs, int nout)
{
    eager_tensor *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    int ok = g->ninputs <= MAX_IO && g->noutputs == nout;
    CHECK_MSG(ok, "%s: %d inputs and %d outputs, the test has %d outputs", test,
              g->ninputs, g->noutputs, nout);
    for (int i = 0; ok && i < g->ninputs; i++) {
        const char *name = g->values[g->inputs[i]].name;
        int k = 0;
        while (k < nnames && strcmp(names[k], name))
            k++;
        ok = k < nnames;
        CHECK_MSG(ok, "%s: graph input '%s' has no test data", test, name);
        graph_ints shape = {ins[k].type.ndim, {0}};
        for (int d = 0; ok && d < shape.n; d++)
            shape.v[d] = ins[k].type.dim[d];
        if (ok)
            in[i] = eager_from_data(ins[k].type.dtype, shape, ins[k].data);
    }
    if (ok) {
        tg_status st = eager_interpret(g, in, g->ninputs, out, g->noutputs, NULL);
        ok = st == TG_OK;
        CHECK_MSG(ok, "%s: interpret: %s", test, eager_error());
        eager_clear_error();
    }
    for (int k = 0; ok && k < nout; k++)
        ok = compare(test, k, out[k], &outs[k]);
    for (int i = 0; i < MAX_IO; i++) {
        eager_release(in[i]);
        eager_release(out[i]);
    }
    return ok;
}

static result run_test(const char *root, const char *test)
{
    char dir[1024], path[1100], err[512] = "";
    char names[MAX_IO][256];
    ttensor ins[MAX_IO], outs[MAX_IO];
    size_t len;
    snprintf(dir, sizeof dir, "%s/%s", root, test);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    uint8_t *model = read_all(path, &len);
    if (!model)
        return R_UNSUPPORTED; /* not a node test directory */
    if (as_f32) {
        size_t nl;
        uint8_t *m2 = model_as_f32(model, len, &nl);
        free(model);
        if (!m2)
            return R_FAIL;
        model = m2, len = nl;
    }
    int ok_in, ok_out;
    int nin = read_tensors(dir, "input", ins, &ok_in);
    int nout = read_tensors(dir, "output", outs, &ok_out);
    int nnames = input_names(model, len, names);
    if (nnames > nin)
        nnames = nin;
    tg_status st;
    graph *g = import(test, &model, &len, names, nnames, ins, &st, err, sizeof err);
    result res = R_UNSUPPORTED;
    if (g && (!ok_in || !ok_out)) {
        CHECK_MSG(0, "%s: imports, but its test data has a dtype tracegraph lacks", test);
        res = R_FAIL;
    } else if (g) {
        res = run_and_compare(test, g, names, nnames, ins, outs, nout) ? R_PASS : R_FAIL;
    } else if (st != TG_ERR_UNSUPPORTED) {
        CHECK_MSG(0, "%s: import failed: %s", test, err);
        res = R_FAIL;
    } else if (getenv("TG_ONNX_VERBOSE")) {
        printf("unsupported: %s\n", err);
    }
    graph_free(g);
    for (int i = 0; i < nin; i++)
        ttensor_free(&ins[i]);
    for (int i = 0; i < nout; i++)
        ttensor_free(&outs[i]);
    free(model);
    return res;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void node_tests(void)
{
    const char *root = getenv("TG_ONNX_TESTDATA");
    if (!root)
        root = "/usr/share/libonnx-testdata/data/node";
    DIR *d = opendir(root);
    CHECK_MSG(d != NULL, "ONNX node tests not found at %s: install libonnx-testdata "
              "(scripts/deps.sh) or set TG_ONNX_TESTDATA", root);
    if (!d)
        return;
    char **tests = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "test_", 5)) {
            tests = realloc(tests, sizeof *tests * (n + 1));
            tests[n++] = strdup(de->d_name);
        }
    closedir(d);
    qsort(tests, n, sizeof *tests, by_name);
    int passed = 0, unsupported = 0;
    result *res = calloc(n + 1, sizeof *res);
    for (size_t i = 0; i < n; i++) {
        res[i] = run_test(root, tests[i]);
        passed += res[i] == R_PASS;
        unsupported += res[i] == R_UNSUPPORTED;
    }
    for (size_t m = 0; m < sizeof must_pass / sizeof must_pass[0]; m++) {
        char **hit = bsearch(&must_pass[m], tests, n, sizeof *tests, by_name);
        CHECK_MSG(hit != NULL, "%s: missing from the node tests", must_pass[m]);
        if (hit)
            CHECK_MSG(res[hit - tests] == R_PASS, "%s must import and pass", must_pass[m]);
    }
    printf("node tests: %d passed, %d unsupported (of %zu)\n", passed, unsupported, n);
    int f32_passed = 0, nf32 = (int)(sizeof double_as_f32 / sizeof double_as_f32[0]);
    as_f32 = 1;
    for (int m = 0; m < nf32; m++) {
        int ok = run_test(root, double_as_f32[m]) == R_PASS;
        CHECK_MSG(ok, "%s with its doubles as f32 must import and pass", double_as_f32[m]);
        f32_passed += ok;
    }
    as_f32 = 0;
    printf("node tests with double data, run as f32: %d of %d passed\n", f32_passed, nf32);
    for (size_t i = 0; i < n; i++)
        free(tests[i]);
    free(tests);
    free(res);
}

int main(void)
{
    long live = eager_live_tensors();
    node_tests();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
