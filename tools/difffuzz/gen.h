/*
 * gen.h - the differential fuzzer's model generator (gen.c) and its op
 * table (ops.c, ops_shape.c): a seeded chain of 1-3 ONNX nodes with random
 * shapes, attributes and opset drawn from the ONNX operator spec.
 *
 * Each op of the table has a generator that takes the value the chain
 * carries (x; x->name "" before the first node) and appends its node(s),
 * making the graph inputs and initializers it needs, and leaves its
 * output in x.  Attributes are drawn from the ranges the spec allows;
 * with g->edge, from its edges (size-1 and size-0 dims, negative axes,
 * large pads); with g->invalid, one of them just outside (what ONNX
 * Runtime must refuse, and ours with it).
 */
#ifndef TG_DIFFFUZZ_GEN_H
#define TG_DIFFFUZZ_GEN_H

#include "model.h"

#define DF_MIN_OPSET 7
#define DF_MAX_OPSET 21 /* ORT 1.30 runs every op of the table up to here */

/* The value the chain carries from one node to the next. */
typedef struct df_cur {
    char name[DF_NAME];
    int dtype;
    int nd;
    int64_t dims[DF_MAX_DIMS];
    int dyn; /* dims[0] is "N" */
    int ties; /* values equal in exact arithmetic may differ by rounding
                 (a linear or cubic Resize's interpolated copies, an
                 InstanceNormalization over one element, all its bias): an op
                 that picks an index (ArgMax/ArgMin, Hardmax, TopK) is not
                 drawn after it, its answer follows each side's rounding
                 (seeds 12001/2237, 12005/3287, 6002/644, 8001/1943) */
} df_cur;

typedef struct df_gen {
    df_model *m;
    uint64_t rng;
    int edge;     /* draw from the spec's edges */
    int invalid;  /* make this op invalid (gen sets m->invalid when it did) */
    int dyn_ok;   /* a fresh input may get the dynamic dim */
    int64_t n;    /* traced size of "N" (0: none yet) */
    int names;    /* values named so far */
} df_gen;

typedef int (*df_gen_fn)(df_gen *g, df_cur *x, int arg);

typedef struct df_op {
    const char *name;
    int since, until; /* opsets it is drawn at */
    df_gen_fn gen;
    int arg;
    int weight;       /* relative frequency */
} df_op;

extern const df_op df_ops[];
extern const int df_nops;

/* ---- random draws (gen.c) ---- */
uint64_t df_rand(df_gen *g);
int df_rnd(df_gen *g, int n);               /* [0, n) */
int df_range(df_gen *g, int lo, int hi);    /* [lo, hi] */
int df_chance(df_gen *g, int percent);
float df_unif(df_gen *g, float lo, float hi);
/* A random dim size: mostly 1..hi, with g->edge sometimes 1 or 0 (zero_ok). */
int64_t df_dim(df_gen *g, int hi, int zero_ok);

/* ---- building (gen.c) ---- */
/* A fresh name "<prefix><k>" in out. */
void df_name(df_gen *g, const char *prefix, char *out);
/* A graph input of dtype and shape with random data into x; dyn: dims[0]
 * becomes "N" (if g->dyn_ok and the model's N allows it: its size is then
 * dims[0] = g->n). */
void df_input(df_gen *g, df_cur *x, int dtype, int nd, const int64_t *dims, int dyn);
/* A fresh graph input like df_input with random dims (rank nd, each
 * 1..hi), dynamic sometimes. */
void df_input_rand(df_gen *g, df_cur *x, int dtype, int nd, int hi);
/* An initializer; data copied (NULL: random).  Name in out. */
void df_init(df_gen *g, char *out, int dtype, int nd, const int64_t *dims, const void *data);
/* A 1-D i64 initializer of n values (n < 0: a 0-d scalar). */
void df_init_i64(df_gen *g, char *out, int n, const int64_t *v);
/* A 0-d f32 initializer. */
void df_init_f32(df_gen *g, char *out, float v);
/* A new node op with nin inputs (copied from in[], "" omitted) and nout
 * outputs (named fresh). */
df_node *df_node_new(df_gen *g, const char *op, int nin, const char *const *in, int nout);
void df_attr_i(df_node *n, const char *name, int64_t v);
void df_attr_f(df_node *n, const char *name, float v);
void df_attr_ints(df_node *n, const char *name, int cnt, const int64_t *v);
void df_attr_floats(df_node *n, const char *name, int cnt, const float *v);
void df_attr_s(df_node *n, const char *name, const char *v);
/* x becomes node output k with dtype, nd and dims (dyn: dims[0] is N). */
void df_set(df_cur *x, const df_node *n, int k, int dtype, int nd, const int64_t *dims, int dyn);
/* x as f32 of rank lo..hi: x itself when it fits, else a fresh input. */
void df_need(df_gen *g, df_cur *x, int dtype, int lo, int hi);
/* Elements of x. */
int64_t df_numel_cur(const df_cur *x);
/* An axis of rank nd, negative sometimes (opset >= neg_from). */
int64_t df_axis(df_gen *g, int nd, int neg_from);

/*
 * Generates model idx of the run seeded seed into m (cleared first):
 * 1-3 ops of the table (or op_only's, when not NULL), an opset, shapes
 * and inputs.  Deterministic in (seed, idx).
 */
void df_generate(df_model *m, uint64_t seed, int idx, const char *op_only);

#endif
