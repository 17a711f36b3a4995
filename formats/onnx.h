/*
 * onnx.h - ONNX import and export: a graph (graph/graph.h) written as an
 * ONNX model for the rest of the ecosystem (ONNX Runtime, TensorRT,
 * Triton), and ONNX models read into a graph to optimize and replay.
 *
 *   // example (given: graph *g)
 *   char err[512];
 *   if (format_onnx_save(g, "model.onnx", NULL, err, sizeof err) != TG_OK)
 *       fprintf(stderr, "%s\n", err);
 *   graph *h = format_onnx_load("model.onnx", NULL, err, sizeof err);  // NULL: see err
 *   graph_free(h);
 *
 * The protobuf code is generated at build time by protoc-c from Debian's
 * onnx.proto (libonnx-dev); nothing of it appears in this header.
 *
 * ---- export ----
 * One ModelProto, IR version 8 (ONNX_IR_VERSION), default domain at opset
 * FORMAT_ONNX_OPSET (18 when a scatter_elements reduces by max or min,
 * which ScatterElements has from opset 18 on; ReduceMean and ReduceMax
 * then take their axes as an input), producer_name "tracegraph".  Graph
 * inputs are the graph's inputs (ValueInfo: dtype and dims, a dynamic dim
 * as dim_param = its symbol's name, "B"); params and constants with data are
 * initializers (raw_data, little-endian; params keep their names);
 * outputs keep their names, and one that is an input, a constant or an
 * output already written is an Identity.  Dead nodes are skipped.
 * Every op of graph/ops.def is written, most as one ONNX node of the
 * same meaning, some as a few: linear as MatMul with the transposed
 * weight (+ Add), matmul's transpose_a/_b as Transposes of the last two
 * dims, gelu as its erf form, silu as x * Sigmoid(x), rsqrt as
 * Reciprocal(Sqrt), where on bools as And/Or/Not (ONNX Runtime has no
 * bool Where), layer_norm without weight with a ones Scale, flatten as
 * Reshape, a `fused` node as one node per statement of its program,
 * linear_ep / conv2d_ep / conv2d_blk as the base op then their
 * epilogue, to_blocked / from_blocked as Reshape + Transpose, argmax /
 * argmin of a 0-d tensor as ArgMax / ArgMin of it reshaped to [1],
 * conv_transpose2d as ConvTranspose with explicit pads and an
 * output_padding below the stride (ONNX Runtime wants that: what
 * reaches the stride is taken off the end pads first), gather_elements /
 * scatter_elements as GatherElements / ScatterElements (the reduction a
 * string, none left out; duplicate indices apply in row-major order, the
 * last one winning without a reduction: ONNX leaves that open, ONNX
 * Runtime does the same).  The
 * lists opset 17 takes as inputs (Reshape/Expand shapes, Split sizes, Slice,
 * Pad, Squeeze, Unsqueeze and ReduceSum lists, Clip bounds, Pad's value)
 * are initializers; a shape export makes up itself copies dynamic dims
 * from the running tensor (Reshape's 0 where the dim keeps its place,
 * else Shape + Gather), so a model traced with a dynamic batch runs at
 * any batch.  Each ONNX node's doc_string holds the
 * call site of the tracegraph node it came from ("model.c:42
 * mlp_forward"), its name "<op>_<node id>" ("_1", "_2", ... for the
 * further nodes of an expansion).  Tensor names are unique: inputs, then
 * output names, then other named values keep their names when free;
 * unnamed values become "v<id>", temporaries "<op>_<node id>_<what>",
 * each made unique with a "_<n>" suffix.
 * Refused (TG_ERR_UNSUPPORTED, the message naming the value or node): a
 * param or constant without data (elided); layer_norm, softmax and
 * log_softmax of a 0-d tensor (ONNX wants rank >= 1); a model over
 * protobuf's 2 GiB.  Guards have no ONNX form: a graph with a guard
 * whose policy is not off is refused (the message names the guard's call
 * site) unless opts->drop_guards is set, since a replay of the export
 * could silently take a branch the trace did not.
 *
 * ---- import ----
 * Reads IR versions 3..13 with default-domain opsets
 * FORMAT_ONNX_MIN_OPSET..FORMAT_ONNX_MAX_OPSET (a node of another domain
 * is unsupported).  Graph inputs that are not initializers are the
 * graph's inputs, in order, with their names.  Initializers and Constant
 * nodes are constants known at load time: they enter the graph where a
 * node uses them as a tensor (initializers as params with opts->params,
 * keeping their names), while the operands ONNX passes as tensors but
 * tracegraph keeps as attributes (Reshape's shape, Slice's starts, Clip's
 * bounds, Pad's pads, axes from opset 13, ...) are read from them and
 * must be such constants.
 * Load-time evaluation (onnx_read_fold.c): a node whose inputs are all
 * such constants (not params) is computed at load time when it is Identity,
 * Add, Sub, Mul, Div, Neg, Abs, Sign, Sqrt, Reciprocal, Floor, Ceil,
 * Round, Equal, Less, Greater, Where, Cast, Reshape, Squeeze, Unsqueeze,
 * Transpose, Slice, Expand, Gather, Concat, Range, ReduceProd, Mod or
 * ScatterND and its result has at
 * most 4096 elements
 * (ONNX_MAX_FOLD_ELEMS; a larger one is a graph node, and a larger Range
 * is refused).  Shape and Size always make constants, ConstantOfShape
 * too unless its shape follows dynamic dims (below).
 * Shape of a value with dynamic dims gives their traced sizes, each
 * remembered as following its symbol (or as derived from the symbols: a
 * dim such as B*heads after a reshape), and as a copy of that dim; what
 * is computed from them (the Shape -> Gather -> Unsqueeze -> Concat ->
 * Reshape of PyTorch's dynamic batch) stays marked as following the
 * sizes, and data movement keeps the copies.  Consumers of such values:
 * a Reshape shape with exactly one entry that follows a dynamic dim and
 * no -1 gets -1 there (also a copied dynamic dim, ONNX's 0), and with a
 * -1 as well (view(x.shape[0], -1)) the -1 becomes its traced value and
 * the entry the -1, when the input has that one dynamic dim; an Expand
 * shape entry that is the same dynamic dim as the input's becomes 1, and
 * one over an input dim of 1 follows the dim it copies or its symbol (a
 * where() broadcast against a slice of that value, or of the graph input
 * that defines the symbol); ConstantOfShape whose dynamic entries all
 * have such a carrier (zeros_like(x), torch.zeros(x.size(0), 4)) is a
 * constant with those entries 1 broadcast the same way; a Slice end
 * equal to the dynamic dim it slices becomes "to the end".  Everywhere
 * else (two dynamic entries in one shape, a ConstantOfShape entry
 * computed by arithmetic, Range, Slice starts, a graph output or tensor
 * operand made of such values) the traced sizes are used: the node that
 * uses them is flagged specialized (GRAPH_NODE_SPECIALIZED: it runs at
 * the traced sizes only, and a run at others fails naming it) rather
 * than refused, and reported at load time through opts->warn (below).
 * Ops: Identity, Dropout (inference; its mask is all true), Constant,
 * Neg, Abs, Sign (Sign(-0) = +0, Sign(NaN) = NaN, as ONNX Runtime), Floor,
 * Ceil, Round (half to even), Exp, Log, Sqrt, Reciprocal, Relu, LeakyRelu,
 * Sigmoid, Tanh, Erf, Softplus (and any unary op of graph/ew_ops.def
 * with an ONNX name), Clip, Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean,
 * Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor
 * (as eq, lt, gt and where on bools), Where, MatMul, Gemm, Conv,
 * ConvTranspose, MaxPool, AveragePool (2-D NCHW, and 1-D NCL as 2-D with
 * H = 1; auto_pad, ceil_mode as extra end padding; a 3-D NCDHW Conv as
 * one conv2d whose channels are D's taps (X gathered at each output
 * depth's taps into [N*D', kd*C, H, W]), a 3-D ConvTranspose likewise as
 * one conv_transpose2d, a 3-D pool as the 2-D pool of each depth then a
 * gather and reduction along D, no op of their own; ConvTranspose's
 * output_shape and SAME_UPPER / SAME_LOWER as the spec's pads, a
 * negative end pad as more output_padding, a negative start pad
 * refused), GlobalAveragePool,
 * BatchNormalization (inference), InstanceNormalization (layer_norm
 * over the dims from 2 on, then scale and B per channel: PyTorch's
 * GroupNorm export), TopK (f32; K a constant), NonZero (of a load-time
 * constant only: its result's shape depends on the data), GatherND (constant indices, checked at load time,
 * as one gather of flattened rows), RNN, GRU and LSTM (unrolled over a fixed sequence
 * length into linear and elementwise ops, onnx_read_rnn.c: forward,
 * reverse, bidirectional, layout 0 and 1, clip, peepholes, GRU's
 * linear_before_reset; not: a shorter sequence_lens, input_forget,
 * activation_alpha/beta, activations other than Sigmoid, Tanh, Relu),
 * LayerNormalization (with its Mean and
 * InvStdDev outputs), Softmax, LogSoftmax (before opset 13 only on the
 * last axis), ReduceSum, ReduceMean, ReduceMax, ArgMax, ArgMin (with
 * select_last_index; a NaN counts as the extreme, as in NumPy, where ONNX
 * leaves it open), and as a few of ours
 * (onnx_read_compose.c): ReduceMin, ReduceSumSquare, ReduceL1, ReduceL2,
 * ReduceLogSum, ReduceLogSumExp, PRelu, HardSigmoid, HardSwish, Softsign,
 * Elu, Selu, Celu, ThresholdedRelu, Trilu (a select by a
 * constant mask), DepthToSpace, SpaceToDepth (reshape, transpose,
 * reshape); Resize (opset 11 on; nearest, linear, cubic, every
 * coordinate transformation but tf_crop_and_resize) and Upsample
 * (nearest) as gathers and weighted sums fixed at load time
 * (onnx_read_resize.c); Reshape, Flatten,
 * Transpose, Concat, Split, Slice, Pad (constant mode; edge and reflect
 * as slices, expands and concats, pads >= 0, reflect's at most the dim
 * - 1), Tile (repeats >= 1, as reshape, expand, reshape), Squeeze,
 * Unsqueeze, Expand, Cast, Gather, GatherElements, ScatterElements
 * (reduction none, add and mul from opset 16, max and min from 18; its
 * indices, like GatherElements', run-time values) and Scatter (its name
 * at opsets 9 and 10), Shape, Size, ConstantOfShape, Range
 * (folded only), ReduceProd, Mod (fmod 0: the divisor's sign, 1: the
 * dividend's) and ScatterND (reduction none, add, mul from 16, max and
 * min from 18) (each evaluated at load time only, on constants that are
 * not params: refused otherwise); dtypes
 * f32, i64, i32, bool.  An attribute the converter does not know is
 * refused rather than ignored.  Each node's provenance is the file and
 * the node's place in it: "model.onnx:17 Conv_3 (Conv)" (line = 1 + the
 * node's index in the graph), or the call site in the doc_string of a
 * node tracegraph wrote ("model.c:42 mlp_forward").
 * A dim_param input dim becomes a dynamic dim with that symbol (an
 * unnamed unknown dim gets the symbol "<input>_dim<d>"), traced at the
 * size opts->dim_default gives it (see above for shapes computed from
 * it); a node that would fix such a dim at load time in its attributes
 * (SAME padding or ceil_mode with a stride over it, Dropout's mask) is
 * refused.
 * Graph outputs are bound by name; their declared dtype and static dims,
 * where the file gives them, must match what the graph computes.
 *
 * Bad input: a file that is not a ModelProto, an unsupported op, opset,
 * dtype or attribute value, a dangling name, an operand that must be
 * constant and is not, or a tensor whose data does not match its dims
 * gives NULL and a message naming the file and the node (its index, name
 * and op type) or the initializer:
 *   "model.onnx: node 17 'Pool_3' (MaxPool): storage_order 1 is not supported"
 * The loader never trusts a count or a size before checking it against
 * the bytes present (tests/fuzz_onnx.c).
 */
#ifndef TG_FORMATS_ONNX_H
#define TG_FORMATS_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "../graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The opset export writes (18 for some ScatterElements: see above), and
 * the range import reads. */
#define FORMAT_ONNX_OPSET 17
#define FORMAT_ONNX_MIN_OPSET 7
#define FORMAT_ONNX_MAX_OPSET 25

typedef struct format_onnx_save_opts {
    int drop_guards; /* export a graph with guards, dropping them */
} format_onnx_save_opts;

/*
 * The defaults of format_onnx_save_opts and format_onnx_load_opts (every
 * field zero), as initializers: format_onnx_load_opts o =
 * FORMAT_ONNX_LOAD_OPTS_INIT; o.params = 1;  C++17, which has no
 * designated initializers, gets value-initialized structs.  Both may grow
 * at the end.
 */
#ifdef __cplusplus
#define FORMAT_ONNX_SAVE_OPTS_INIT format_onnx_save_opts{}
#define FORMAT_ONNX_LOAD_OPTS_INIT format_onnx_load_opts{}
#else
#define FORMAT_ONNX_SAVE_OPTS_INIT {.drop_guards = 0}
#define FORMAT_ONNX_LOAD_OPTS_INIT {.params = 0}
#endif

typedef struct format_onnx_load_opts {
    int params;          /* initializers become params, not constants */
    int64_t dim_default; /* size of a dim_param dim (values < 1: 1) */
    /* Called at load time with a message naming the node: once per ONNX
     * node that a size of a dynamic dim fixes at its traced value (the
     * nodes flagged specialized), naming the dims; and for a graph output
     * declared larger than a ceil_mode pool computes it (a window that
     * would start in the end padding is dropped; the computed size holds).
     * NULL: not called. */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
} format_onnx_load_opts;

/*
 * Writes g to path as an ONNX model (through a temporary file renamed
 * into place; on error no file is left).  g is not changed.  opts may be
 * NULL.  Returns TG_OK, or TG_ERR_NULL / TG_ERR_IO / TG_ERR_NOMEM /
 * TG_ERR_UNSUPPORTED (a guard, an elided constant: see "export" above)
 * with a message in err (errlen bytes, always terminated; err may be
 * NULL).
 */
TG_API tg_status format_onnx_save(const graph *g, const char *path,
                                  const format_onnx_save_opts *opts, char *err,
                                  size_t errlen);

/*
 * Like format_onnx_save, into memory: *buf (free() it) holds *len bytes;
 * on error *buf is NULL and *len 0.
 */
TG_API tg_status format_onnx_save_mem(const graph *g, const format_onnx_save_opts *opts,
                                      void **buf, size_t *len, char *err,
                                      size_t errlen);

/* The largest ONNX model read (2 GiB - 1: protobuf's limit for a message). */
#define FORMAT_ONNX_MAX_BYTES 0x7fffffffull

/*
 * Loads an ONNX model from path; the caller frees the graph with
 * graph_free.  opts may be NULL.  NULL on error, with a message in err
 * (errlen bytes, always terminated; err may be NULL).  A pipe or device
 * is read as a file is, up to FORMAT_ONNX_MAX_BYTES; its first byte must
 * start a protobuf field, which a stream of other bytes fails at once.
 * A directory is refused.
 */
TG_API graph *format_onnx_load(const char *path, const format_onnx_load_opts *opts,
                               char *err, size_t errlen);

/* Loads from len bytes at buf (not kept); name is used in messages. */
TG_API graph *format_onnx_load_mem(const void *buf, size_t len, const char *name,
                                   const format_onnx_load_opts *opts, char *err,
                                   size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
