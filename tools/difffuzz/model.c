/*
 * model.c - a df_model written as an ONNX file (protobuf-c, the project's
 * generated onnx.pb-c.h) and its inputs as raw files (model.h).
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/onnx/onnx_impl.h"
#include "graph/graph_impl.h"

size_t df_dtype_size(int dtype)
{
    switch (dtype) {
    case DF_F32: case DF_I32: return 4;
    case DF_I64: return 8;
    case DF_BOOL: return 1;
    default: return 0;
    }
}

const char *df_dtype_name(int dtype)
{
    switch (dtype) {
    case DF_F32: return "f32";
    case DF_I32: return "i32";
    case DF_I64: return "i64";
    case DF_BOOL: return "bool";
    default: return "?";
    }
}

int64_t df_numel(const df_val *v)
{
    int64_t n = 1;
    for (int k = 0; k < v->nd; k++)
        n *= v->dims[k];
    return n;
}

void df_model_clear(df_model *m)
{
    for (int i = 0; i < m->nvals; i++) {
        free(m->val[i].data);
        free(m->val[i].alt);
    }
    memset(m, 0, sizeof *m);
}

/* The storage of one packed model: protobuf-c structs pointing into m. */
typedef struct packing {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node[DF_MAX_NODES], *nodes[DF_MAX_NODES];
    char *node_in[DF_MAX_NODES][DF_MAX_IO], *node_out[DF_MAX_NODES][DF_MAX_IO];
    Onnx__AttributeProto attr[DF_MAX_NODES][DF_MAX_ATTRS], *attrs[DF_MAX_NODES][DF_MAX_ATTRS];
    Onnx__ValueInfoProto in[DF_MAX_VALS], *ins[DF_MAX_VALS];
    Onnx__TypeProto type[DF_MAX_VALS];
    Onnx__TypeProto__Tensor tt[DF_MAX_VALS];
    Onnx__TensorShapeProto shape[DF_MAX_VALS];
    Onnx__TensorShapeProto__Dimension dim[DF_MAX_VALS][DF_MAX_DIMS],
        *dims[DF_MAX_VALS][DF_MAX_DIMS];
    Onnx__TensorProto init[DF_MAX_VALS], *inits[DF_MAX_VALS];
    Onnx__ValueInfoProto out[DF_MAX_IO * DF_MAX_NODES], *outs[DF_MAX_IO * DF_MAX_NODES];
} packing;

static void pack_attr(Onnx__AttributeProto *a, df_attr *d)
{
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = d->name;
    a->has_type = 1;
    switch (d->type) {
    case DF_A_INT:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = d->i;
        break;
    case DF_A_FLOAT:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->has_f = 1;
        a->f = d->f;
        break;
    case DF_A_INTS:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->n_ints = (size_t)d->n;
        a->ints = d->ints;
        break;
    case DF_A_FLOATS:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        a->n_floats = (size_t)d->n;
        a->floats = d->floats;
        break;
    default:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->has_s = 1;
        a->s.data = (uint8_t *)d->s;
        a->s.len = strlen(d->s);
        break;
    }
}

/* Value info of graph input v (i: its slot in p). */
static void pack_input(packing *p, int i, df_val *v)
{
    for (int k = 0; k < v->nd; k++) {
        Onnx__TensorShapeProto__Dimension *dm = &p->dim[i][k];
        *dm = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (k == 0 && v->dyn) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = "N";
        } else {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = v->dims[k];
        }
        p->dims[i][k] = dm;
    }
    p->shape[i] = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    p->shape[i].n_dim = (size_t)v->nd;
    p->shape[i].dim = p->dims[i];
    p->tt[i] = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    p->tt[i].has_elem_type = 1;
    p->tt[i].elem_type = v->dtype;
    p->tt[i].shape = &p->shape[i];
    p->type[i] = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    p->type[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    p->type[i].tensor_type = &p->tt[i];
    p->in[i] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    p->in[i].name = v->name;
    p->in[i].type = &p->type[i];
}

/* Initializer v as raw_data. */
static void pack_init(Onnx__TensorProto *t, df_val *v)
{
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = v->name;
    t->has_data_type = 1;
    t->data_type = v->dtype;
    t->n_dims = (size_t)v->nd;
    t->dims = v->dims;
    t->has_raw_data = 1;
    t->raw_data.len = (size_t)df_numel(v) * df_dtype_size(v->dtype);
    t->raw_data.data = v->data;
}

/* The IR version ONNX pairs with the opset (ONNX's versioning table). */
static int64_t ir_for_opset(int opset)
{
    return opset <= 18 ? 8 : opset <= 20 ? 9 : 10;
}

static void *pack_model(const df_model *cm, size_t *len)
{
    df_model *m = (df_model *)cm; /* protobuf-c wants non-const pointers */
    packing *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->m = (Onnx__ModelProto)ONNX__MODEL_PROTO__INIT;
    p->m.has_ir_version = 1;
    p->m.ir_version = ir_for_opset(m->opset);
    p->m.producer_name = "difffuzz";
    p->opset = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
    p->opset.domain = "";
    p->opset.has_version = 1;
    p->opset.version = m->opset;
    p->opsets[0] = &p->opset;
    p->m.n_opset_import = 1;
    p->m.opset_import = p->opsets;
    p->g = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    p->g.name = "g";
    p->m.graph = &p->g;
    for (int i = 0; i < m->nnodes; i++) {
        df_node *d = &m->node[i];
        Onnx__NodeProto *n = &p->node[i];
        *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
        n->op_type = d->op;
        n->name = d->out[0];
        for (int k = 0; k < d->nin; k++)
            p->node_in[i][k] = d->in[k];
        for (int k = 0; k < d->nout; k++)
            p->node_out[i][k] = d->out[k];
        n->n_input = (size_t)d->nin;
        n->input = p->node_in[i];
        n->n_output = (size_t)d->nout;
        n->output = p->node_out[i];
        for (int k = 0; k < d->nattr; k++) {
            pack_attr(&p->attr[i][k], &d->attr[k]);
            p->attrs[i][k] = &p->attr[i][k];
        }
        n->n_attribute = (size_t)d->nattr;
        n->attribute = p->attrs[i];
        p->nodes[i] = n;
    }
    p->g.n_node = (size_t)m->nnodes;
    p->g.node = p->nodes;
    for (int i = 0; i < m->nvals; i++) {
        df_val *v = &m->val[i];
        if (v->input) {
            pack_input(p, i, v);
            p->ins[p->g.n_input++] = &p->in[i];
        } else {
            pack_init(&p->init[i], v);
            p->inits[p->g.n_initializer++] = &p->init[i];
        }
    }
    p->g.input = p->ins;
    p->g.initializer = p->inits;
    for (int i = 0; i < m->nout; i++) {
        p->out[i] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
        p->out[i].name = m->out[i];
        p->outs[i] = &p->out[i];
    }
    p->g.n_output = (size_t)m->nout;
    p->g.output = p->outs;
    *len = onnx__model_proto__get_packed_size(&p->m);
    uint8_t *buf = malloc(*len + 1);
    if (buf)
        onnx__model_proto__pack(&p->m, buf);
    free(p);
    return buf;
}

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) {
        fprintf(stderr, "difffuzz: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

int df_model_write(const df_model *m, const char *dir, int idx, FILE *f)
{
    char path[4096];
    size_t len;
    void *buf = pack_model(m, &len);
    if (!buf) {
        fprintf(stderr, "difffuzz: out of memory packing model %d\n", idx);
        return -1;
    }
    snprintf(path, sizeof path, "%s/m%d.onnx", dir, idx);
    int rc = write_file(path, buf, len);
    free(buf);
    int nin = 0;
    for (int i = 0; i < m->nvals; i++)
        nin += m->val[i].input;
    fprintf(f, "%d %s %lld %d", idx, m->label, (long long)m->alt_n, nin);
    for (int i = 0, k = 0; i < m->nvals && !rc; i++) {
        const df_val *v = &m->val[i];
        if (!v->input)
            continue;
        fprintf(f, " %s ", df_dtype_name(v->dtype));
        if (v->nd == 0)
            fputc('-', f);
        for (int d = 0; d < v->nd; d++)
            fprintf(f, d ? "x%lld" : "%lld", (long long)v->dims[d]);
        fprintf(f, " %d", v->dyn);
        size_t es = df_dtype_size(v->dtype);
        snprintf(path, sizeof path, "%s/m%d.in%d.bin", dir, idx, k);
        rc = write_file(path, v->data, (size_t)df_numel(v) * es);
        if (!rc && v->dyn && m->alt_n) {
            snprintf(path, sizeof path, "%s/m%d.alt%d.bin", dir, idx, k);
            rc = write_file(path, v->alt, (size_t)(df_numel(v) / v->dims[0] * m->alt_n) * es);
        }
        k++;
    }
    fputc('\n', f);
    snprintf(path, sizeof path, "%s/m%d.txt", dir, idx);
    FILE *t = rc ? NULL : fopen(path, "w");
    if (t) {
        df_model_dump(m, t);
        rc = fclose(t) ? -1 : 0;
    }
    return rc;
}

/* One value's line of the dump: name, dtype, dims, and small data. */
static void dump_val(FILE *f, const df_val *v)
{
    fprintf(f, "%s %s %s[", v->input ? "input" : "init ", v->name, df_dtype_name(v->dtype));
    for (int d = 0; d < v->nd; d++)
        fprintf(f, d ? ",%lld" : "%lld", (long long)v->dims[d]);
    fprintf(f, "]%s", v->dyn ? " (dims[0] is N)" : "");
    int64_t n = df_numel(v);
    if (!v->input && n <= 16) {
        fputs(" =", f);
        for (int64_t i = 0; i < n; i++) {
            if (v->dtype == DF_F32)
                fprintf(f, " %g", (double)((float *)v->data)[i]);
            else if (v->dtype == DF_I64)
                fprintf(f, " %lld", (long long)((int64_t *)v->data)[i]);
            else if (v->dtype == DF_I32)
                fprintf(f, " %d", ((int32_t *)v->data)[i]);
            else
                fprintf(f, " %d", ((uint8_t *)v->data)[i]);
        }
    }
    fputc('\n', f);
}

void df_model_dump(const df_model *m, FILE *f)
{
    fprintf(f, "opset %d%s", m->opset, m->invalid ? " (invalid on purpose)" : "");
    if (m->alt_n)
        fprintf(f, ", N also run at %lld", (long long)m->alt_n);
    fputc('\n', f);
    for (int i = 0; i < m->nvals; i++)
        dump_val(f, &m->val[i]);
    for (int i = 0; i < m->nnodes; i++) {
        const df_node *n = &m->node[i];
        fprintf(f, "%s(", n->op);
        for (int k = 0; k < n->nin; k++)
            fprintf(f, k ? ", %s" : "%s", n->in[k][0] ? n->in[k] : "<none>");
        fputs(") ->", f);
        for (int k = 0; k < n->nout; k++)
            fprintf(f, " %s", n->out[k]);
        for (int k = 0; k < n->nattr; k++) {
            const df_attr *a = &n->attr[k];
            fprintf(f, "%s %s=", k ? "," : " |", a->name);
            if (a->type == DF_A_INT)
                fprintf(f, "%lld", (long long)a->i);
            else if (a->type == DF_A_FLOAT)
                fprintf(f, "%g", (double)a->f);
            else if (a->type == DF_A_STRING)
                fprintf(f, "'%s'", a->s);
            else
                for (int j = 0; j < a->n; j++)
                    if (a->type == DF_A_INTS)
                        fprintf(f, j ? ",%lld" : "[%lld", (long long)a->ints[j]);
                    else
                        fprintf(f, j ? ",%g" : "[%g", (double)a->floats[j]);
            if (a->type == DF_A_INTS || a->type == DF_A_FLOATS)
                fputs(a->n ? "]" : "[]", f);
        }
        fputc('\n', f);
    }
    fputs("outputs", f);
    for (int i = 0; i < m->nout; i++)
        fprintf(f, " %s", m->out[i]);
    fputc('\n', f);
}
