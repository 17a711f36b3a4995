/*
 * onnx_read_impl.h - what the ONNX importer's files share (private),
 * from the top down (a file calls only files below it: docs/ARCHITECTURE.md,
 * "Leaves"):
 *   onnx_read.c        the model: unpacking, versions, graph inputs,
 *                      initializers, outputs, the node loop (the top);
 *   onnx_read_ops.c    the op table and the converters of elementwise,
 *                      linear-algebra and network ops;
 *   the converter files, which the table names and which never call one
 *                      another: onnx_read_compose.c, _conv.c (Conv,
 *                      ConvTranspose), _pool.c, _pad.c, _resize.c, _rnn.c,
 *                      _einsum.c, _gridsample.c, _shape.c (shape and
 *                      data-movement ops);
 *   the helpers:       onnx_read_window.c (the window attributes of Conv,
 *                      ConvTranspose and the pools: onnx_read_window.h),
 *                      onnx_read_build.c (pieces of graph several
 *                      converters build), onnx_read_node.c (names,
 *                      operands, attributes, adding nodes, binding
 *                      outputs), onnx_read_base.c (onnx_fail, dtype codes,
 *                      tensors; the bottom);
 *   onnx_read_fold.c   load-time evaluation of ops on constants (shape
 *                      arithmetic: Shape -> Gather -> Concat -> Reshape);
 *                      onnx_read_fold_eval.c the ops evaluated at load
 *                      time only (ReduceProd, Mod, ScatterND), sharing
 *                      onnx_read_fold.h.
 *
 * Every ONNX name maps to an entry.  A value computed at run time is a
 * graph value.  A value known at load time (an initializer, a Constant
 * node, a folded Shape) is a constant entry that holds its data and
 * enters the graph only when a node uses it as a tensor operand, so
 * operands tracegraph keeps as attributes (Reshape's shape, Slice's
 * starts) never become graph values.
 *
 * A constant may depend on the traced size of a dynamic dim (Shape of a
 * value with a dim_param dim, and what is computed from it): its data
 * holds the traced values and sym marks each element: ONNX_SYM_CONST (a
 * known number), a symbol id (equal to that symbol's size), or
 * ONNX_SYM_DERIVED (follows the sizes some other way).  A node that uses
 * such an element's traced value is flagged GRAPH_NODE_SPECIALIZED.
 */
#ifndef TG_FORMATS_ONNX_READ_IMPL_H
#define TG_FORMATS_ONNX_READ_IMPL_H

#include "../../graph/tg_hash.h"
#include "onnx_impl.h"
#include "../../graph/graph_impl.h"

/* An int64 for printf's %lld. */
#define LL(x) ((long long)(x))

/* Largest constant the importer makes itself (ConstantOfShape, Shape):
 * a folded size comes from the file, not from bytes present in it. */
#define ONNX_MAX_FOLD_BYTES ((int64_t)1 << 26)
/* The constants the importer binds at load time, in all: at most this
 * many bytes, or twice the file's size if that is more. */
#define ONNX_MAX_MADE_BYTES ((int64_t)1 << 28)
/* Most elements an Einsum's contraction may make (1 GiB of f32), unless
 * one of its operands has more: a few small vectors must not become an
 * outer product of gigabytes at run time (onnx_read_einsum.c). */
#define ONNX_MAX_EINSUM_ELEMS ((int64_t)1 << 28)
/* Largest result (elements) of an op the importer evaluates at load time. */
#define ONNX_MAX_FOLD_ELEMS (1 << 18)

/* Marks of the elements of a constant (onnx_entry.sym). */
#define ONNX_SYM_CONST ((int8_t)-1)
#define ONNX_SYM_DERIVED ((int8_t)-2)
/* An element's source (onnx_entry.src): dim d of graph value v. */
#define ONNX_SRC(v, d) ((int32_t)((v) * GRAPH_MAX_DIMS + (d)))
#define ONNX_SRC_MAX_VALUE (INT32_MAX / GRAPH_MAX_DIMS)

typedef struct onnx_entry {
    const char *key; /* the ONNX name; points into the unpacked model */
    int32_t value;   /* graph value id; -1: a constant not in the graph yet */
    int is_const;    /* data known at load time */
    int param;       /* becomes a param, not a constant (an initializer) */
    graph_type type; /* is_const: its type */
    void *data;      /* is_const: owned, numel elements (never NULL) */
    int8_t *sym;     /* is_const: owned marks of numel elements, or NULL
                        when every element is ONNX_SYM_CONST */
    int32_t *src;    /* is_const: owned, numel elements, or NULL: a marked
                        element that is a copy of dim d of graph value v
                        (Shape, then data movement) holds ONNX_SRC(v, d),
                        the others -1; what makes a runtime tensor follow
                        the dim (ConstantOfShape, Expand) */
    int traced_shape; /* is_const: its dims depend on traced sizes */
    UT_hash_handle hh;
} onnx_entry;

typedef struct onnx_reader {
    graph *g;
    const char *file; /* for messages and provenance */
    int params;
    int64_t dim_default;
    void (*warn)(void *ctx, const char *msg); /* format_onnx_load_opts' */
    void *warn_ctx;
    int64_t opset; /* of the default domain */
    onnx_entry *names;
    /* The node being converted (NULL outside the node loop). */
    const Onnx__NodeProto *node;
    int32_t index;
    int32_t prov;
    uint64_t bound; /* outputs of this node bound so far (bit k) */
    int specialized; /* the node used a traced size: flag what it adds */
    /* The first pool whose ceil_mode window was dropped (it would start in
     * the end padding), NULL if none, and its index.  An output declared
     * with the older, larger size is then warned about, not refused. */
    const Onnx__NodeProto *ceil_node;
    int32_t ceil_index;
    /* Bytes of the constants bound at load time (Constant nodes, folded
     * results, ConstantOfShape, the tables of lowerings), and their bound:
     * a few bytes of a file must not make gigabytes (onnx_made). */
    int64_t made, made_limit;
    char *err;
    size_t errlen;
} onnx_reader;

struct onnx_op;
typedef tg_status (*onnx_convert_fn)(onnx_reader *r, const struct onnx_op *op);

/* One row of the op table. */
typedef struct onnx_op {
    const char *name;      /* ONNX op_type */
    onnx_convert_fn fn;
    graph_op op;           /* for converters shared by several ops */
    int min_in, max_in;    /* max_in -1: any number */
    int max_out;           /* outputs the node may name */
    const char *attrs;     /* the attributes it understands, comma-separated */
} onnx_op;

/*
 * format_onnx_load_mem with the status too (TG_ERR_UNSUPPORTED: a valid
 * model tracegraph cannot express; the node tests count those).
 */
graph *onnx_read_mem(const void *buf, size_t len, const char *name,
                     const format_onnx_load_opts *opts, tg_status *status,
                     char *err, size_t errlen);

/* "FLOAT", "DOUBLE", ... for a TensorProto.DataType code. */
const char *onnx_code_name(int32_t code);

/* The table row of an op_type; NULL if unsupported. */
const onnx_op *onnx_op_find(const char *op_type);

/*
 * Formats "file: node N 'name' (Op): reason" (or "file: reason" outside
 * the node loop) into r->err; returns st.
 */
tg_status onnx_fail(onnx_reader *r, tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/*
 * Decodes a TensorProto: its type and its data (malloc'd, numel elements,
 * at least one byte; the caller frees it).  Every size is checked against
 * the bytes present.  On error returns the status and a reason in why.
 */
tg_status onnx_tensor_decode(const Onnx__TensorProto *t, graph_type *type,
                             void **data, char *why, size_t whylen);

/* A new entry for name; FORMAT if the name is defined already. */
tg_status onnx_add_entry(onnx_reader *r, const char *name, onnx_entry **out);
/* Frees the name table and the constants' data. */
void onnx_free_entries(onnx_reader *r);
/* Puts a constant entry into the graph (params keep their names). */
tg_status onnx_materialize(onnx_reader *r, onnx_entry *e);

/* The node's input i is present (not past the end, not ""). */
int onnx_has_input(const onnx_reader *r, int i);
/* The entry of name, or NULL. */
onnx_entry *onnx_find(const onnx_reader *r, const char *name);
/* The graph value of input i (a constant enters the graph here). */
tg_status onnx_input(onnx_reader *r, int i, int32_t *v);
/* The type of input i (present), constant or not. */
tg_status onnx_input_type(onnx_reader *r, int i, const graph_type **t);
/* Refuses input i unless its dtype is f32 (floats only: bool too when
 * no_bool_only) while the opset is below since, naming the op's version
 * whose type constraint forbids it: "input 0 is i64: Pad-2 takes floats
 * only (ints from Pad-11)".  The older versions' T is narrower than ours,
 * and ONNX Runtime refuses such a model. */
tg_status onnx_older_types(onnx_reader *r, int i, int64_t since, int no_bool_only);
/* ArgMax, ArgMin, ReduceMax, ReduceMin of x over an axis of size 0 (axes
 * given, every axis when empty; else the one axis): refused, naming it.
 * There is no element to pick; ONNX Runtime answers with a tensor of the
 * wrong shape (the input's for ReduceMax, [0] for ArgMax of [0]), and the
 * spec's -inf for ReduceMax (opset 18) has no ArgMax counterpart. */
tg_status onnx_refuse_empty_extreme(onnx_reader *r, int32_t x, const graph_ints *axes,
                                    int64_t axis);
/* Input i, which must be a constant known at load time (what names it). */
tg_status onnx_const_input(onnx_reader *r, int i, const char *what,
                           const onnx_entry **e);
/*
 * Input i as a constant int list (i64 or i32, rank <= 1, <= maxn).  The
 * onnx_const_* readers take traced values as they are (the node becomes
 * specialized); onnx_shape_ints also gives each entry's mark (sym, <= maxn
 * entries) for the caller to decide.
 */
tg_status onnx_const_ints(onnx_reader *r, int i, const char *what,
                          graph_ints *out, int maxn);
tg_status onnx_shape_ints(onnx_reader *r, int i, const char *what,
                          graph_ints *out, int8_t *sym, int maxn);
/* An entry has traced dims or an element that is not ONNX_SYM_CONST. */
int onnx_entry_traced(const onnx_entry *e);
/* Input i as a constant one-element number. */
tg_status onnx_const_scalar(onnx_reader *r, int i, const char *what,
                            double *out);

/* The type of a graph value. */
static inline const graph_type *onnx_vtype(const onnx_reader *r, int32_t v)
{
    return &r->g->values[v].type;
}
/* The dims of value v that change with the dynamic dims (bit d): one
 * symbol's (graph_value.dyn) or derived from them (.dder). */
uint32_t onnx_dynamic_dims(onnx_reader *r, int32_t v);
/* The mark of dim d of value v, given dyn = onnx_dynamic_dims(r, v): its
 * symbol, ONNX_SYM_DERIVED, or ONNX_SYM_CONST (a dim that never changes). */
int8_t onnx_dim_mark(const onnx_reader *r, int32_t v, uint32_t dyn, int d);

/*
 * Adds a graph node for the ONNX node (with its provenance).  Messages
 * name the ONNX node; an op that lacks the dtype is TG_ERR_UNSUPPORTED.
 */
tg_status onnx_add(onnx_reader *r, graph_op op, const int32_t *in, int nin,
                   const void *attrs, int32_t *out, int max_out);
/* Binds the node's output k (if named) to value v. */
tg_status onnx_bind(onnx_reader *r, int k, int32_t v);
/* Binds output k to a constant; takes ownership of data (also on error). */
tg_status onnx_bind_const(onnx_reader *r, int k, const graph_type *t,
                          void *data);
/* The same with element marks (ownership of sym too; NULL: all known). */
tg_status onnx_bind_const_sym(onnx_reader *r, int k, const graph_type *t,
                              void *data, int8_t *sym);
/* The same with element sources too (ownership of src; NULL: none). */
tg_status onnx_bind_const_src(onnx_reader *r, int k, const graph_type *t,
                              void *data, int8_t *sym, int32_t *src);
/* Binds output k to a copy of constant e (data and marks). */
tg_status onnx_bind_copy(onnx_reader *r, int k, const onnx_entry *e);
/* A constant of type t holding a copy of data, in the graph. */
tg_status onnx_const_value(onnx_reader *r, const graph_type *t, const void *data, int32_t *v);
/* y = op(a, b) (b < 0: unary; attrs NULL: defaults), a node of the
 * ONNX node's. */
tg_status onnx_op2(onnx_reader *r, graph_op op, int32_t a, int32_t b, const void *attrs,
                   int32_t *y);
/* y = op(a, a scalar constant v of a's dtype). */
tg_status onnx_op_k(onnx_reader *r, graph_op op, int32_t a, double v, int32_t *y);
/* A 0-d constant of dtype dt holding x, in the graph. */
tg_status onnx_scalar(onnx_reader *r, graph_dtype dt, double x, int32_t *v);

/* The node's attribute called name, or NULL. */
const Onnx__AttributeProto *onnx_attr(const onnx_reader *r, const char *name);
/* INT attribute (def if absent). */
tg_status onnx_attr_int(onnx_reader *r, const char *name, int64_t def,
                        int64_t *out);
/* FLOAT attribute (def if absent). */
tg_status onnx_attr_float(onnx_reader *r, const char *name, float def,
                          float *out);
/* INTS attribute, at most maxn entries; *present says whether it was given. */
tg_status onnx_attr_ints(onnx_reader *r, const char *name, graph_ints *out,
                         int maxn, int *present);
/* STRING attribute into buf (def if absent). */
tg_status onnx_attr_str(onnx_reader *r, const char *name, const char *def,
                        char *buf, size_t len);

/* onnx_read_build.c: an operand that is an input from opset `since`, an
 * attribute before. */
tg_status onnx_ints_operand(onnx_reader *r, int input, int64_t since,
                            const char *name, graph_ints *out, int *present);
/* Slice's starts, ends, axes and steps (inputs or attributes by opset). */
tg_status onnx_slice_attrs(onnx_reader *r, graph_slice_attrs *a);
/* Cast's `to`. */
tg_status onnx_cast_to(onnx_reader *r, graph_dtype *to);

/*
 * onnx_read_fold.c: evaluates the node at load time when every input is a
 * constant, the op is one it knows and the result has at most
 * ONNX_MAX_FOLD_ELEMS elements; *done says whether it did (else the
 * converter runs).
 */
tg_status onnx_fold(onnx_reader *r, const onnx_op *op, int *done);
/* Range, which only exists folded. */
tg_status onnx_cv_range(onnx_reader *r, const onnx_op *op);
/* ReduceProd, Mod and ScatterND: refused when not folded, saying why. */
tg_status onnx_cv_folded_only(onnx_reader *r, const onnx_op *op);

/*
 * onnx_read_build.c: a reduction's axes (input or attribute by opset; sum: ReduceSum, whose
 * axes became an input at 13, the others at 18), keepdims, and whether it
 * is the identity (empty axes with noop_with_empty_axes).
 */
tg_status onnx_reduce_args(onnx_reader *r, int sum, graph_ints *axes, int64_t *keep,
                           int *noop);
/* onnx_read_compose.c: ONNX ops written as several of ours. */
tg_status onnx_cv_reduce_composite(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_activation(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_trilu(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_depth_space(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_hardmax(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_instance_norm(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_group_norm(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_rms_norm(onnx_reader *r, const onnx_op *op);
/* y = reshape(x, shape of n dims); dim 0 is -1 where dyn_batch (it follows
 * x's dynamic batch; onnx_read_build.c, as are the two after Pad's). */
tg_status onnx_reshape_to(onnx_reader *r, int32_t x, int dyn_batch, const int64_t *shape,
                          int n, int32_t *y);
/* y = x[start:end:step] along axis ax (onnx_read_build.c). */
tg_status onnx_slice_axis(onnx_reader *r, int32_t x, int ax, int64_t start, int64_t end,
                          int64_t step, int32_t *y);
/* GatherND with constant indices, as one gather (onnx_read_compose.c). */
tg_status onnx_cv_gather_nd(onnx_reader *r, const onnx_op *op);
/* GridSample on a 2-D input as elementwise ops and gathers (onnx_read_gridsample.c). */
tg_status onnx_cv_grid_sample(onnx_reader *r, const onnx_op *op);
/* Einsum as transposes, reshapes, reduce_sums and matmuls (onnx_read_einsum.c). */
tg_status onnx_cv_einsum(onnx_reader *r, const onnx_op *op);
/* RNN, GRU, LSTM, unrolled (onnx_read_rnn.c). */
tg_status onnx_cv_rnn(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_tile(onnx_reader *r, const onnx_op *op);
/* Pad's modes edge, reflect and wrap with these pads (begins, ends). */
typedef enum { PAD_EDGE, PAD_REFLECT, PAD_WRAP } onnx_pad_mode;
tg_status onnx_pad_border(onnx_reader *r, onnx_pad_mode pm, const graph_ints *pads);
/* y = x broadcast to n along axis ax (x's dim there is 1). */
tg_status onnx_expand_axis(onnx_reader *r, int32_t x, int ax, int64_t n, int32_t *y);
/* y = concat(parts, axis ax), the parts with a negative id left out (n <= 3). */
tg_status onnx_concat_axis(onnx_reader *r, const int32_t *parts, int n, int ax, int32_t *y);
/* onnx_read_resize.c */
tg_status onnx_cv_resize(onnx_reader *r, const onnx_op *op);
/* onnx_read_conv.c: Conv, ConvTranspose; onnx_read_pool.c: MaxPool and AveragePool. */
tg_status onnx_cv_conv(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_conv_transpose(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_pool(onnx_reader *r, const onnx_op *op);

/* Converters of onnx_read_shape.c, named in the op table. */
tg_status onnx_cv_reshape(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_flatten(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_transpose(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_concat(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_split(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_slice(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_pad(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_squeeze(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_expand(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_cast(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_gather(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_elements(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_shape(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_constant_of_shape(onnx_reader *r, const onnx_op *op);
tg_status onnx_cv_constant(onnx_reader *r, const onnx_op *op);

#endif
