/*
 * onnx_write_impl.h - what the files of ONNX export share: the exporter's
 * state (onnx_write_model.c, the top, builds the model around it) and the
 * helpers (onnx_write.c) the per-op translation (onnx_write_ops.c, with
 * onnx_write_shape.c) writes nodes with.
 *
 * Errors are sticky, as in the eager API: a helper that cannot allocate
 * sets w->st (and the message) once and returns NULL; every helper given
 * a NULL name or node returns NULL without doing anything.  An op's
 * translation therefore calls helpers in a straight line and returns
 * w->st at the end; nothing it made is lost, since every byte comes from
 * the exporter's arena, freed in one go.
 */
#ifndef TG_FORMATS_ONNX_WRITE_IMPL_H
#define TG_FORMATS_ONNX_WRITE_IMPL_H

#include "onnx_impl.h"
#include "graph/graph_impl.h"

typedef struct onnxw_chunk onnxw_chunk;
typedef struct onnxw_name onnxw_name;

typedef struct onnx_w {
    const graph *g;
    int64_t opset; /* the default domain's: FORMAT_ONNX_OPSET, or 18 (onnx.h) */
    onnxw_chunk *arena;
    onnxw_name *names;    /* every tensor name taken (uthash) */
    const char **vname; /* per value id: its tensor name, or NULL if unused */
    Onnx__NodeProto **nodes;
    size_t nnodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t ninits, cap_inits;
    /* The tracegraph node being translated. */
    const graph_node *cur;
    int32_t cur_id;
    int nsub;          /* ONNX nodes written for it so far */
    const char *doc;   /* its call site, or NULL */
    tg_status st;
    char *err;
    size_t errlen;
} onnx_w;

/*
 * Test hook (tests/test_onnx_export.c): when set to n > 0, the n-th
 * allocation export makes on this thread fails, as out of memory would.
 */
extern _Thread_local long onnxw_fail_countdown;

/* n zeroed bytes from the arena; NULL (and w->st) on out of memory. */
void *onnxw_alloc(onnx_w *w, size_t n);
/* A copy of s in the arena. */
char *onnxw_strdup(onnx_w *w, const char *s);
/*
 * A fresh tensor name for a temporary of the current node:
 * "<op>_<node id>_<what>", made unique.
 */
const char *onnxw_tmp(onnx_w *w, const char *what);

/*
 * Appends an ONNX node of op_type reading in[0..nin) (NULL entries are
 * errors; "" is an omitted optional input) and writing out[0..nout).
 * Its name is "<op>_<node id>" (then "_1", "_2", ... for the further
 * nodes of one tracegraph node), its doc_string the node's call site.
 */
Onnx__NodeProto *onnxw_node(onnx_w *w, const char *op_type, const char *const *in,
                         int nin, const char *const *out, int nout);
/* One-input, one-output node; two-input node. */
Onnx__NodeProto *onnxw_node1(onnx_w *w, const char *op_type, const char *x,
                          const char *y);
Onnx__NodeProto *onnxw_node2(onnx_w *w, const char *op_type, const char *a,
                          const char *b, const char *y);

/* Attributes of a node (a NULL node is ignored). */
void onnxw_attr_i(onnx_w *w, Onnx__NodeProto *n, const char *name, int64_t v);
void onnxw_attr_f(onnx_w *w, Onnx__NodeProto *n, const char *name, float v);
void onnxw_attr_s(onnx_w *w, Onnx__NodeProto *n, const char *name, const char *v);
void onnxw_attr_ints(onnx_w *w, Onnx__NodeProto *n, const char *name,
                  const int64_t *v, int count);

/*
 * An initializer of dtype dt and shape dims[0..nd) holding data (copied),
 * named onnxw_tmp(what); returns its name.
 */
const char *onnxw_const(onnx_w *w, const char *what, graph_dtype dt,
                     const int64_t *dims, int nd, const void *data);
/* A 1-D int64 initializer of n entries. */
const char *onnxw_const_i64s(onnx_w *w, const char *what, const int64_t *v, int n);
/* A 0-d initializer of dtype dt holding v (cast as the pad op casts). */
const char *onnxw_const_scalar(onnx_w *w, const char *what, graph_dtype dt,
                            double v);

/* The tensor names of the current node's input / output k. */
const char *onnxw_in(onnx_w *w, int k);
const char *onnxw_out(onnx_w *w, int k);

/* Fails the export with TG_ERR_UNSUPPORTED naming the current node. */
tg_status onnxw_unsupported(onnx_w *w, const char *why);

/* Writes the ONNX nodes of the current node w->cur (onnx_write_ops.c). */
tg_status onnxw_emit_node(onnx_w *w);

/* ---- for onnx_write_model.c, the top (onnx_write.c's) ---- */

/* The message of the export's failure, printf-style, into w->err. */
void onnxw_errf(onnx_w *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The graph's name for messages ("?" without one). */
const char *onnxw_gname(const graph *g);
/* Sets TG_ERR_NOMEM with its message (once); returns NULL. */
void *onnxw_nomem(onnx_w *w);
/* Every allocation of export outside the arena (the fail countdown's). */
void *onnxw_malloc(size_t n);
/* base if free, else base_1, base_2, ...; the name is then taken (NULL
 * after a failure). */
const char *onnxw_take(onnx_w *w, const char *base);
/* The initializer of param or constant value id; elided data is refused. */
tg_status onnxw_value_init(onnx_w *w, int32_t id);
/* Frees the arena, the name table and the lists. */
void onnxw_free(onnx_w *w);
/* The same for the shape and layout ops (onnx_write_shape.c); any other
 * op is TG_ERR_UNSUPPORTED. */
tg_status onnxw_emit_shape_op(onnx_w *w);

/*
 * Plain [N,C,H,W] x (type t) to blocked [N,ceil(C/B),H,W,B], B = block
 * (8 or 16; zero lanes past C) and back (blocked type t, B its dim 4,
 * channels C or 0 for every lane); dyn: the dynamic-dim bits of x (N, H,
 * W are dims 0, 2, 3 in both layouts and are copied from x at run time
 * when dynamic).
 */
void onnxw_to_blocked(onnx_w *w, const char *x, const graph_type *t, uint32_t dyn,
                   int64_t block, const char *y);
void onnxw_from_blocked(onnx_w *w, const char *x, const graph_type *t, uint32_t dyn,
                     int64_t channels, const char *y);

#endif
