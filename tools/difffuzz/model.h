/*
 * model.h - the differential fuzzer's models (tools/difffuzz): a small
 * ONNX graph described in plain structs (graph inputs with their data,
 * initializers, up to DF_MAX_NODES nodes, outputs), written out as an
 * ONNX file with protobuf-c and the inputs as raw little-endian files.
 *
 * The generator (gen.c, ops.c) fills a df_model from a seed; the driver
 * (difffuzz.c) writes it (df_model_write) and later runs the written
 * files through our importer.  Dtypes are ONNX's codes: 1 f32, 6 i32,
 * 7 i64, 9 bool.
 */
#ifndef TG_DIFFFUZZ_MODEL_H
#define TG_DIFFFUZZ_MODEL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#define DF_MAX_DIMS 6
#define DF_MAX_NODES 4 /* a chain of 3, plus an op that expands into two */
#define DF_MAX_VALS 32
#define DF_MAX_ATTRS 8
#define DF_MAX_IO 6
#define DF_NAME 40

enum { DF_F32 = 1, DF_I32 = 6, DF_I64 = 7, DF_BOOL = 9 };

/* A value: a graph input (data: its traced values, alt: at the other size
 * of its dynamic first dim) or an initializer (data only). */
typedef struct df_val {
    char name[DF_NAME];
    int dtype;
    int nd;
    int64_t dims[DF_MAX_DIMS];
    int dyn;         /* dims[0] is the dim_param "N" (graph inputs only) */
    int input;       /* a graph input (else an initializer) */
    void *data;      /* numel elements of dtype (malloc'd) */
    void *alt;       /* inputs with dyn: the data at the alt size */
} df_val;

enum { DF_A_INT, DF_A_FLOAT, DF_A_INTS, DF_A_FLOATS, DF_A_STRING };

typedef struct df_attr {
    char name[DF_NAME];
    int type;
    int64_t i;
    float f;
    int n;
    int64_t ints[8];
    float floats[8];
    char s[64];
} df_attr;

typedef struct df_node {
    char op[DF_NAME];
    int nin, nout, nattr;
    char in[DF_MAX_IO][DF_NAME]; /* "" is an omitted optional input */
    char out[DF_MAX_IO][DF_NAME];
    df_attr attr[DF_MAX_ATTRS];
} df_node;

typedef struct df_model {
    int opset;
    int nvals;
    df_val val[DF_MAX_VALS];
    int nnodes;
    df_node node[DF_MAX_NODES];
    int nout;
    char out[DF_MAX_IO * DF_MAX_NODES][DF_NAME];
    int64_t alt_n;    /* the other size of "N" (0: no dynamic dim) */
    int invalid;      /* made invalid on purpose (what ORT must refuse) */
    char label[128];  /* the ops, for the report: "Conv+Relu" */
} df_model;

/* Element size of an ONNX dtype code (0 if not one of ours). */
size_t df_dtype_size(int dtype);
/* Its manifest name: f32, i32, i64, bool. */
const char *df_dtype_name(int dtype);
/* Elements of v (at its traced size). */
int64_t df_numel(const df_val *v);

/* Frees what the model's values hold; the model may be reused after. */
void df_model_clear(df_model *m);

/*
 * Writes the model as dir/m<idx>.onnx and each graph input's data as
 * dir/m<idx>.in<k>.bin (and .alt<k>.bin), and appends its manifest line
 * to f: "<idx> <label> <alt_n> <nin> {<dtype> <dims> <dyn>}" with dims
 * the traced ones ("2x3", "-" for 0-d) and dyn 1 where dims[0] is "N"
 * (alt_n in the alt files).  Returns 0, or -1 with a message on
 * stderr.
 */
int df_model_write(const df_model *m, const char *dir, int idx, FILE *f);

/* The model as text (opset, values, nodes with attributes, outputs), for
 * a finding's reader: difffuzz gen writes it as m<idx>.txt. */
void df_model_dump(const df_model *m, FILE *f);

#endif
