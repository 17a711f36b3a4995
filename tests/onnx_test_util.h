/*
 * onnx_test_util.h - what the ONNX tests that build models in memory
 * (test_onnx_node.c, test_onnx_dynamic.c, onnx_model_builder.h,
 * test_onnx_conv3d.c) share: the model header, a tensor type and the
 * output.
 */
#ifndef TG_TESTS_ONNX_TEST_UTIL_H
#define TG_TESTS_ONNX_TEST_UTIL_H

#include "formats/onnx/onnx_impl.h"
#include "graph/graph_impl.h"

/*
 * The parts of a model above its nodes, in the caller's storage: IR 8,
 * the default domain at opset 17 (opsets[0] = opset), graph "g" with no
 * nodes or values yet.
 */
static inline void onnx_test_header_init(Onnx__ModelProto *m, Onnx__GraphProto *g,
                                         Onnx__OperatorSetIdProto *opset,
                                         Onnx__OperatorSetIdProto **opsets)
{
    *m = (Onnx__ModelProto)ONNX__MODEL_PROTO__INIT;
    m->has_ir_version = 1;
    m->ir_version = 8;
    *opset = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
    opset->domain = "";
    opset->has_version = 1;
    opset->version = 17;
    opsets[0] = opset;
    m->n_opset_import = 1;
    m->opset_import = opsets;
    *g = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    g->name = "g";
    m->graph = g;
}

/* The storage of one tensor type of up to 8 dims (onnx_test_tensor_type). */
typedef struct onnx_test_tensor {
    Onnx__TypeProto type;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto shape;
    Onnx__TensorShapeProto__Dimension dim[8], *dims[8];
} onnx_test_tensor;

/*
 * t as a tensor type of ONNX elem_type (1 f32, 7 i64) with nd (<= 8) dims
 * dv; a dim -j-1 is the dim_param params[j].  Returns &t->type.
 */
static inline Onnx__TypeProto *onnx_test_tensor_type(onnx_test_tensor *t, int32_t elem_type,
                                                     int nd, const int64_t *dv,
                                                     const char *const *params)
{
    t->tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    t->tt.has_elem_type = 1;
    t->tt.elem_type = elem_type;
    t->shape = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    for (int k = 0; k < nd; k++) {
        Onnx__TensorShapeProto__Dimension *dm = &t->dim[k];
        *dm = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (dv[k] < 0) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = (char *)params[-dv[k] - 1];
        } else {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = dv[k];
        }
        t->dims[k] = dm;
    }
    t->shape.n_dim = (size_t)nd;
    t->shape.dim = t->dims;
    t->tt.shape = &t->shape;
    t->type = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    t->type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->type.tensor_type = &t->tt;
    return &t->type;
}

/* Graph output `name` (no type given: the importer infers it), one only. */
static inline void onnx_test_output(Onnx__GraphProto *g, Onnx__ValueInfoProto *out,
                                    Onnx__ValueInfoProto **outs, const char *name)
{
    *out = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    out->name = (char *)name;
    outs[0] = out;
    g->n_output = 1;
    g->output = outs;
}

#endif
