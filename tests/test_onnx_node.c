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
 * Then bad input: each refusal with its exact message, on models built
 * here in memory.  TG_ONNX_VERBOSE=1 prints why each unsupported test is.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx_read_impl.h"
#include "graph_query.h"
#include "onnx_test_util.h"

#define MAX_IO 16

/* Tests that must import and pass: at least one per supported op. */
static const char *const must_pass[] = {
    "test_identity", "test_dropout_default", "test_dropout_default_mask",
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
    "test_convtranspose", "test_convtranspose_1d", "test_convtranspose_autopad_same",
    "test_convtranspose_dilations", "test_convtranspose_kernel_shape",
    "test_convtranspose_output_shape", "test_convtranspose_pad", "test_convtranspose_pads",
    "test_convtranspose_with_kernel",
    "test_maxpool_2d_pads", "test_maxpool_2d_same_upper", "test_maxpool_2d_same_lower",
    "test_maxpool_2d_ceil", "test_averagepool_2d_pads",
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
};
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
    for (size_t i = 0; i < n; i++)
        free(tests[i]);
    free(tests);
    free(res);
}

/* ---- models built here ---- */

typedef struct mb { /* a one-node model under construction */
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node, *nodes[1];
    Onnx__ValueInfoProto in[2], out, *ins[2], *outs[1];
    Onnx__TypeProto type[3];
    Onnx__TypeProto__Tensor tt[3];
    Onnx__TensorShapeProto shape[3];
    Onnx__TensorShapeProto__Dimension dim[3][6], *dims[3][6];
    char *node_in[2], *node_out[1];
} mb;

/* Value info i: dtype with nd dims dv (a negative dim: the dim_param "B"). */
static void mb_tensor_type(mb *b, int i, int32_t dtype, int nd, const int64_t *dv)
{
    b->tt[i] = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    b->tt[i].has_elem_type = 1;
    b->tt[i].elem_type = dtype;
    b->shape[i] = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    for (int k = 0; k < nd; k++) {
        Onnx__TensorShapeProto__Dimension *dm = &b->dim[i][k];
        *dm = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (dv[k] < 0) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = "B";
        } else {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = dv[k];
        }
        b->dims[i][k] = dm;
    }
    b->shape[i].n_dim = (size_t)nd;
    b->shape[i].dim = b->dims[i];
    b->tt[i].shape = &b->shape[i];
    b->type[i] = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    b->type[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->type[i].tensor_type = &b->tt[i];
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
        b->in[i].type = &b->type[i];
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
    mb_init(&b, "Relu", "nope", NULL);
    expect_fail(&b, TG_ERR_FORMAT,
                "mem.onnx: node 0 'n0' (Relu): input 0 ('nope') is not defined by a "
                "graph input, an initializer or an earlier node");
    mb_init(&b, "Relu", "x", NULL);
    b.opset.version = 99;
    expect_fail(&b, TG_ERR_UNSUPPORTED, "mem.onnx: opset 99 is not supported (7 to 18)");

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
    static const int64_t x4[4] = {1, 8, 2, 2}, x5[5] = {1, 1, 2, 2, 2};
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
    /* a 3-D pool (5-D input) */
    mb_init(&b, "MaxPool", "x", NULL);
    mb_tensor_type(&b, 0, 1, 5, x5);
    expect_fail(&b, TG_ERR_UNSUPPORTED,
                "mem.onnx: node 0 'n0' (MaxPool): only 1-D (NCL) and 2-D (NCHW) are "
                "supported, the input has 5 dims");
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
 * dim; an unknown auto_pad; 3-D), and pads it works out where the node
 * tests do not look: SAME_LOWER over a dynamic H, 1-D with
 * output_padding.
 */
static void conv_transpose(void)
{
    mb b;
    Onnx__AttributeProto a[2], *as[2];
    int64_t os1[1] = {5}, os85[2] = {8, 5}, os65[2] = {6, 5}, s2[2] = {2, 2};
    static const int64_t x4[4] = {1, 1, 3, 3}, w4[4] = {1, 2, 3, 3}, xd[4] = {1, 1, -1, 3};
    static const int64_t x5[5] = {1, 1, 2, 2, 2}, w5[5] = {1, 2, 2, 2, 2};
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
    mb_tensor_type(&b, 0, 1, 5, x5);
    mb_tensor_type(&b, 1, 1, 5, w5);
    b.node.n_attribute = 0;
    CT_FAIL(TG_ERR_UNSUPPORTED, "only 1-D (NCL) and 2-D (NCHW) are supported, the input has "
                                "5 dims");
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
        a.name = "axis";
        a.has_type = 1;
        a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a.has_i = 1;
        a.i = axis;
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
    b.out.type = &b.type[2];
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
        at.name = (char *)a;
        at.has_type = 1;
        at.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        at.has_f = 1;
        at.f = av;
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

int main(void)
{
    long live = eager_live_tensors();
    bad_inputs();
    bad_composed();
    hardmax_flat();
    conv_transpose();
    features();
    global_pool();
    activations();
    node_tests();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
