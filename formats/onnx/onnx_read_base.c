/*
 * onnx_read_base.c - the bottom of the ONNX importer: its positioned
 * messages (onnx_fail), ONNX's element type codes and their names, and
 * TensorProtos decoded into a type and data (initializers, Constant
 * nodes).  Every other file of the reader calls it; it calls none of them
 * (docs/ARCHITECTURE.md, "Leaves").
 *
 * Nothing is sized by what the file declares alone: a tensor's dims must
 * match the bytes or values present before anything is allocated.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/errors.h"
#include "onnx_read_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; this reader copies it as is"
#endif

/* ---- messages ---- */

tg_status onnx_fail(onnx_reader *r, tg_status st, const char *fmt, ...)
{
    tg_errpos at = {.file = r->file};
    if (r->node) {
        at.item = "node";
        at.index = r->index;
        at.name = r->node->name ? r->node->name : "";
        at.op = r->node->op_type;
    }
    va_list ap;
    va_start(ap, fmt);
    st = tg_vfail_at(st, r->err, r->errlen, &at, fmt, ap);
    va_end(ap);
    return st;
}

const char *onnx_code_name(int32_t code)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
        "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    if (code >= 0 && code < (int32_t)(sizeof names / sizeof names[0]))
        return names[code];
    return "an unknown dtype";
}

/* ---- tensors ---- */

/* The dtype and dims of t, with the element count checked for overflow. */
static tg_status tensor_type(const Onnx__TensorProto *t, graph_type *type,
                             int64_t *nbytes, char *why, size_t len)
{
    memset(type, 0, sizeof *type);
    if (t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL ||
        t->n_external_data)
        return tg_fail(TG_ERR_UNSUPPORTED, why, len,
                       "external data is not supported");
    if (t->segment)
        return tg_fail(TG_ERR_UNSUPPORTED, why, len,
                       "segmented tensors are not supported");
    if (!onnx_dtype_from_code(t->data_type, &type->dtype))
        return tg_fail(TG_ERR_UNSUPPORTED, why, len,
                       "dtype %s is not supported", onnx_code_name(t->data_type));
    if (t->n_dims > GRAPH_MAX_DIMS)
        return tg_fail(TG_ERR_UNSUPPORTED, why, len,
                       "%zu dims (at most %d)", t->n_dims, GRAPH_MAX_DIMS);
    type->ndim = (int32_t)t->n_dims;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0)
            return tg_fail(TG_ERR_FORMAT, why, len, "dim %zu is negative (%lld)",
                           d, LL(t->dims[d]));
        type->dim[d] = t->dims[d];
    }
    char cap[200];
    if (graph_type_check(type, cap, sizeof cap) != TG_OK)
        return tg_fail(TG_ERR_FORMAT, why, len, "%s", cap);
    *nbytes = (int64_t)graph_type_bytes(type);
    return TG_OK;
}

/* Copies n typed values (the field dtype dt reads) into data. */
static void copy_typed(const Onnx__TensorProto *t, graph_dtype dt, void *data,
                       size_t n)
{
    if (n == 0) /* the arrays are NULL then */
        return;
    if (dt == GRAPH_F32) {
        memcpy(data, t->float_data, n * sizeof(float));
    } else if (dt == GRAPH_I64) {
        memcpy(data, t->int64_data, n * sizeof(int64_t));
    } else if (dt == GRAPH_I32) {
        memcpy(data, t->int32_data, n * sizeof(int32_t));
    } else {
        uint8_t *b = data;
        for (size_t i = 0; i < n; i++)
            b[i] = t->int32_data[i] != 0;
    }
}

tg_status onnx_tensor_decode(const Onnx__TensorProto *t, graph_type *type,
                             void **data, char *why, size_t len)
{
    int64_t nbytes = 0;
    *data = NULL;
    tg_status st = tensor_type(t, type, &nbytes, why, len);
    if (st != TG_OK)
        return st;
    char shape[160];
    graph_shape_str(type, shape, sizeof shape);
    int64_t numel = graph_type_numel(type);
    const char *dn = graph_dtype_name(type->dtype);
    size_t have;
    const char *field;
    if (type->dtype == GRAPH_F32)
        have = t->n_float_data, field = "float_data";
    else if (type->dtype == GRAPH_I64)
        have = t->n_int64_data, field = "int64_data";
    else
        have = t->n_int32_data, field = "int32_data";
    if (t->has_raw_data && have)
        return tg_fail(TG_ERR_FORMAT, why, len, "has both raw_data and %s", field);
    if (t->has_raw_data && (uint64_t)nbytes != t->raw_data.len)
        return tg_fail(TG_ERR_FORMAT, why, len,
                       "raw_data has %zu bytes, %s %s needs %lld", t->raw_data.len,
                       dn, shape, LL(nbytes));
    if (!t->has_raw_data && (uint64_t)numel != have)
        return tg_fail(TG_ERR_FORMAT, why, len, "%s has %zu values, %s %s needs %lld",
                       field, have, dn, shape, LL(numel));
    /* nbytes is now bounded by what the message holds. */
    *data = tg_malloc(nbytes ? (size_t)nbytes : 1);
    if (!*data)
        return tg_fail(TG_ERR_NOMEM, why, len, "out of memory (%lld bytes)",
                       LL(nbytes));
    if (t->has_raw_data) {
        if (nbytes)
            memcpy(*data, t->raw_data.data, (size_t)nbytes);
        if (type->dtype == GRAPH_BOOL)
            for (int64_t i = 0; i < numel; i++)
                ((uint8_t *)*data)[i] = ((uint8_t *)*data)[i] != 0;
    } else {
        copy_typed(t, type->dtype, *data, (size_t)numel);
    }
    return TG_OK;
}
