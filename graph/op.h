/*
 * op.h - the op registry, generated from ops.def: the op enum, one
 * attribute struct per op that has attributes, attribute descriptors
 * (so printers, parsers and serializers walk attributes by name), and the
 * graph_op_info table.
 */
#ifndef TG_GRAPH_OP_H
#define TG_GRAPH_OP_H

#include <math.h>
#include <stddef.h>

#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Op properties the optimizer relies on. */
enum {
    GRAPH_PROP_ELEMENTWISE = 1u << 0, /* out[i] depends on in[i] only */
    GRAPH_PROP_COMMUTATIVE = 1u << 1, /* op(a, b) == op(b, a) */
    GRAPH_PROP_INVOLUTION = 1u << 2,  /* op(op(x)) == x */
    GRAPH_PROP_IDEMPOTENT = 1u << 3,  /* op(op(x)) == op(x) */
    GRAPH_PROP_PURE = 1u << 4,        /* no side effects */
    GRAPH_PROP_BROADCAST = 1u << 5,   /* inputs broadcast (NumPy rules) */
    GRAPH_PROP_VIEW = 1u << 6,        /* output may alias input 0 */
    /* Draws random numbers (or moves a generator): its outputs are a
     * function of its inputs, generator included, but no pass folds it or
     * merges two of them (CSE), so each random op keeps its own draw. */
    GRAPH_PROP_RANDOM = 1u << 7,
};

/*
 * Epilogue steps of linear_ep / conv2d_ep (the post attribute).  The
 * numbers are stored in files: never renumber, only add.
 */
enum {
    GRAPH_POST_ADD = 1,        /* + the next extra input (a residual) */
    GRAPH_POST_RELU = 2,
    GRAPH_POST_GELU = 3,       /* erf form */
    GRAPH_POST_SIGMOID = 4,
    GRAPH_POST_TANH = 5,
    GRAPH_POST_SILU = 6,
    GRAPH_POST_LEAKY_RELU = 7, /* slope: the alpha attribute */
    GRAPH_POST_CLIP = 8,       /* clip(x, clip_min, clip_max): NaN passes */
    /* PyTorch's hardsigmoid and hardswish, computed as ONNX's HardSigmoid
     * (alpha 1/6, beta 1/2) imports: h = clip(x * (float)(1/6) + 0.5, 0, 1)
     * (a multiply, then an add), and x * h; NaN passes, hardswish(-inf)
     * = -inf * 0 = NaN */
    GRAPH_POST_HARDSIGMOID = 9,
    GRAPH_POST_HARDSWISH = 10,
};

/*
 * The parameters of an epilogue's steps (the attributes of linear_ep,
 * conv2d_ep and conv2d_blk of the same names): what the kernels take
 * beside the post list.  GRAPH_POST_PRM(at) reads them from any of the
 * three attribute structs.
 */
typedef struct graph_post_prm {
    float alpha;              /* LEAKY_RELU slope */
    float clip_min, clip_max; /* CLIP bounds */
} graph_post_prm;
#define GRAPH_POST_PRM(at) ((graph_post_prm){(at)->alpha, (at)->clip_min, (at)->clip_max})

/*
 * scatter_elements' reduction attribute: how an update combines with the
 * element it lands on.  Stored in files: never renumber, only add.
 */
enum {
    GRAPH_SCATTER_NONE = 0, /* replaced (duplicates: the last one wins) */
    GRAPH_SCATTER_ADD = 1,  /* integers wrap around, as add */
    GRAPH_SCATTER_MUL = 2,  /* integers wrap around, as mul */
    GRAPH_SCATTER_MAX = 3,  /* NaN on either side wins, as maximum */
    GRAPH_SCATTER_MIN = 4,  /* NaN on either side wins, as minimum */
};
/* A reduction's name as ONNX spells it ("none", "add", ...); NULL for a
 * code that is none of the above (graph/infer_index.c). */
TG_API const char *graph_scatter_reduction_name(int64_t reduction);

typedef enum graph_op {
#define OP(name, ...) GRAPH_OP_##name,
#define OPA(name, ...) GRAPH_OP_##name,
#include "ops.def"
#undef OP
#undef OPA
    GRAPH_OP_COUNT
} graph_op;

/* One struct per op with attributes: graph_<op>_attrs. */
#define A_I64(n, d) int64_t n;
#define A_F32(n, d) float n;
#define A_INTS(n) graph_ints n;
#define A_DTYPE(n, d) graph_dtype n;
#define A_STR(n) graph_str n;
#define OP(...)
#define OPA(name, v, mi, ma, no, p, dt, inf, attrs)                         \
    typedef struct graph_##name##_attrs { attrs } graph_##name##_attrs;
#include "ops.def"
#undef OP
#undef OPA
#undef A_I64
#undef A_F32
#undef A_INTS
#undef A_DTYPE
#undef A_STR

/* Largest attribute struct, so callers can hold any op's attributes. */
typedef union graph_attrs {
#define OP(...)
#define OPA(name, ...) graph_##name##_attrs name;
#include "ops.def"
#undef OP
#undef OPA
    char none;
} graph_attrs;

typedef enum graph_attr_kind {
    GRAPH_ATTR_I64,
    GRAPH_ATTR_F32,
    GRAPH_ATTR_INTS,
    GRAPH_ATTR_DTYPE,
    GRAPH_ATTR_STR,
} graph_attr_kind;

/* Describes one attribute field of an op's attribute struct. */
typedef struct graph_attr_desc {
    const char *name;
    graph_attr_kind kind;
    size_t offset;     /* within graph_<op>_attrs */
    double def_value;  /* default for I64, F32 and DTYPE fields */
} graph_attr_desc;

struct graph_op_info;

/* What an infer function gets and fills in. */
typedef struct graph_infer_ctx {
    const struct graph_op_info *op;
    const graph_type *in; /* nin present inputs */
    int nin;
    const void *attrs; /* graph_<op>_attrs, or NULL for ops without */
    graph_type *out;   /* room for max_out outputs */
    int max_out;
    int nout; /* set by infer */
    char *err; /* on error: a message without the op name or shapes */
    size_t errlen;
} graph_infer_ctx;

/*
 * Shape-and-dtype inference.  Returns TG_OK and sets out[0..nout), or an
 * error status with a reason in err ("inner dims differ (784 vs 512)").
 */
typedef tg_status (*graph_infer_fn)(graph_infer_ctx *c);

typedef struct graph_op_info {
    const char *name;
    int version;
    int min_in, max_in; /* max_in -1: variadic */
    int nout;           /* -1: decided by infer */
    unsigned props;
    unsigned dtypes; /* accepted dtypes of input 0 */
    graph_infer_fn infer;
    size_t attr_size; /* 0 for ops without attributes */
    int nattrs;
    /* Returns the nattrs attribute descriptors (NULL when none). */
    const graph_attr_desc *(*attr_descs)(void);
} graph_op_info;

extern TG_API const graph_op_info graph_ops[GRAPH_OP_COUNT];

/* The info of an op; NULL when op is out of range. */
TG_API const graph_op_info *graph_op_get(graph_op op);
/* Finds an op by name (len bytes); returns GRAPH_OP_COUNT if unknown or
 * name is NULL. */
TG_API graph_op graph_op_find(const char *name, size_t len);
/* Fills attrs (attr_size bytes) with the op's defaults; zeroes padding.
 * attrs NULL: nothing. */
TG_API void graph_attrs_default(graph_op op, void *attrs);

/*
 * Runs the op's checks and infer function: input count, input-0 dtype,
 * then infer.  On error, err holds "<op>: <shapes>: <reason>".  NULL in
 * (with nin > 0), out (with max_out > 0) or nout: TG_ERR_NULL.
 */
TG_API tg_status graph_infer(graph_op op, const graph_type *in, int nin,
                             const void *attrs, graph_type *out, int max_out,
                             int *nout, char *err, size_t errlen);

/* The infer functions named in ops.def are internal (graph/infer.h); a
 * caller reaches them through graph_infer or graph_ops[op].infer. */

/* Normalizes axis against ndim (negative counts from the end); -1 if bad. */
TG_API int graph_axis(int64_t axis, int ndim);
/* NumPy broadcast of a and b into out; TG_ERR_SHAPE if incompatible,
 * TG_ERR_NULL if any is NULL. */
TG_API tg_status graph_broadcast(const graph_type *a, const graph_type *b,
                                 graph_type *out);

#ifdef __cplusplus
}
#endif

#endif
