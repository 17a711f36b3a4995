/*
 * onnx_test_util.h - what the ONNX tests that build models in memory
 * (test_onnx_node.c, test_onnx_dynamic.c) share: the model header and
 * its output.
 */
#ifndef TG_TESTS_ONNX_TEST_UTIL_H
#define TG_TESTS_ONNX_TEST_UTIL_H

#include "formats/onnx/onnx_impl.h"

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
