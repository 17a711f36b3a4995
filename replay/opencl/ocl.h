/*
 * ocl.h - the OpenCL backend's internal interface for op implementations.
 *
 * An op is two functions in an ocl_op, registered in a table indexed by
 * graph_op:
 *
 *   prepare  at replay_compile, once per node: check the node is supported
 *            (else TG_ERR_UNSUPPORTED and a reason: compile fails with
 *            "op X is not supported on device Y: reason (node N (X at
 *            file.c:L fn))"), get a built program (ocl_prep_program: a
 *            named source from replay/opencl/cl/, an optional generated
 *            prefix, build options; built once per device and process and
 *            shared by every plan) and name the kernels it will launch
 *            (ocl_prep_kernel).  A build failure fails the compile with
 *            the build log and the node's call site.  Types are the traced
 *            ones: dynamic dims may differ at run time (same dtype and
 *            rank), so shapes must be kernel arguments, not build options.
 *   enqueue  at replay_run, once per step: set the kernel arguments and
 *            enqueue (ocl_set_args or ocl_set_arg, ocl_run) on the session's in-order
 *            queue.  The kernels in l->k are this session's own objects,
 *            made from the names given at prepare (cl_kernel is not
 *            thread-safe; sessions run concurrently), so an op never makes
 *            or releases kernels itself.  Must not fail except on device
 *            errors (out of memory, lost device): everything that can be
 *            refused is refused at prepare.
 *
 * Memory: every input/output is a cl_mem whose first byte is the tensor's
 * first element (a buffer of the session's pool, a constant's own
 * buffer, a graph input's buffer or a caller's cl_mem), dense row-major.
 * It is NULL when the tensor has no elements (ocl_run skips empty
 * launches).  An elementwise op may get the same cl_mem as an input and
 * its output (in-place planning): read element i before writing element
 * i and it is safe.  Temporary device memory: ocl_scratch.
 *
 * Every program gets replay/opencl/cl/common.cl first (the
 * tg_* activation functions matching the CPU's numerics, index helpers),
 * then the prefix, then the named source.
 *
 * Example, integer neg (ops_ew.c does this for i64 and i32; cl/ew_unary.cl
 * has  __kernel void unary_neg(__global const T *x, __global T *y, long n)):
 *
 *   static tg_status neg_prepare(ocl_prep *c)
 *   {
 *       if (c->in_type[0].dtype != GRAPH_I64)
 *           return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "i64 only");
 *       tg_status st = ocl_prep_program(c, "ew_unary", NULL, "-DT=long -DU=ulong");
 *       return st ? st : ocl_prep_kernel(c, "unary_neg");
 *   }
 *   static tg_status neg_enqueue(ocl_launch *l)
 *   {
 *       size_t n = (size_t)graph_type_numel(&l->out_type[0]);
 *       tg_status st = ocl_set_args(l, l->k[0], "mml", l->in[0], l->out[0], (int64_t)n);
 *       return st ? st : ocl_run(l, l->k[0], 1, &n, NULL);
 *   }
 *   static const ocl_op neg_op = {neg_prepare, neg_enqueue};
 *
 *   void ocl_register_ew(const ocl_op **t) { t[GRAPH_OP_neg] = &neg_op; }
 *
 * Registration: ocl_ops() (op_table.c) builds the table once by calling
 * ocl_register_ew (ops_ew.c: the elementwise ops and fused), ocl_register_shape
 * (ops_shape.c), ocl_register_gemm (ops_gemm.c), ocl_register_conv
 * (ops_conv.c), ocl_register_nn (ops_nn.c), then ocl_register_dw
 * (ops_dw.c), which wraps the conv slots filled before it; each fills its
 * own slots.  A NULL slot is an unsupported op.  An op file calls the
 * helpers (this header, ops_nn.h) and never another op file.
 *
 * Data errors found by a kernel (bad gather indices, integer division
 * by zero): see ocl_launch.flag; the run fails after it completes.
 *
 * Plan-level data: an op may keep data in c->data (with c->data_free),
 * e.g. weights rearranged from a constant input (c->in_host[j] is the
 * host copy of input j when it is a constant, else NULL; params are not
 * offered since replay_set_param may change them) uploaded once with
 * ocl_prep_upload.  It is shared by all sessions: read-only at run time.
 */
#ifndef TG_REPLAY_OCL_H
#define TG_REPLAY_OCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#include "../../graph/fused_prog.h"
#include "../../graph/graph.h"
#include "../../graph/graph_impl.h"

#define OCL_MAX_KERNELS 6
#define OCL_MAX_XIN 7
#define OCL_MAX_XOUT 1
#define OCL_MAX_SCRATCH 4
#define OCL_LOCAL_DEFAULT 256

typedef struct ocl_dev ocl_dev;         /* a device, its context, program cache */
typedef struct ocl_session ocl_session; /* a session's queue, kernels, scratch */

/* What prepare sees and fills (compile time, one node). */
typedef struct ocl_prep {
    /* in */
    ocl_dev *dev;
    cl_context ctx;
    cl_device_id device;
    const graph *g;
    const graph_node *node;
    const void *attrs; /* graph_<op>_attrs, NULL for ops without */
    const graph_type *in_type; /* traced types */
    int nin;
    const graph_type *out_type;
    int nout;
    const void *const *in_host; /* per input: constant data or NULL */
    int blas;  /* the plan's GEMM/conv path is CLBlast (ocl_blas.h) */
    int probe; /* ... or auto: matmul/linear/conv time the ways at prepare */
    /* A fused node this (matmul/linear) node's kernels run as they store
     * (ocl_tail_find), or NULL: its other inputs become xin, its output
     * xout (ocl_tail_source). */
    const graph_node *tail;
    /* A layer_norm node whose output is this linear's A and read by
     * nothing else (ops_gemm.c's ocl_head_find), or NULL: the linear
     * reads its input and normalizes it as it loads (its input, gamma and
     * beta become xin). */
    const graph_node *head;
    /* out (through the helpers below) */
    cl_program prog; /* retained; released with the plan */
    const char *kernel[OCL_MAX_KERNELS]; /* static strings */
    int nkernels;
    void *data;                  /* the op's plan-level data */
    void (*data_free)(void *data);
    /* For ops whose kernels detect bad data (an index out of range, an
     * integer division by zero): the message the run fails with when a
     * kernel raised l->flag (see ocl_launch).  A static string. */
    const char *flag_msg;
    /* How the node runs when its op has more than one way ("CLBlast",
     * "GPU tile", "fused attention"; a static string, or NULL), named by
     * TG_OPENCL_PROFILE's list of the costliest nodes. */
    const char *path;
    /* Values (ids) besides the node's inputs that the enqueue reads, as
     * l->xin: an op that runs nodes it absorbed reads their inputs (the
     * attention chain of ops_attn.c reads q and k at its last matmul).
     * run.c gives each its own buffer, kept alive to this node's step. */
    int32_t xin[OCL_MAX_XIN];
    int nxin;
    /* Values (ids) the enqueue writes instead of the node's outputs, as
     * l->xout: the attention chain writes the value after the transposes
     * and reshapes it absorbed.  The node's own outputs then get no memory;
     * run.c gives each of these its own buffer, alive from this node's
     * step to its last use. */
    int32_t xout[OCL_MAX_XOUT];
    int nxout;
    char *err; /* the reason, on failure */
    size_t errlen;
} ocl_prep;

/* What enqueue sees (run time, one step). */
typedef struct ocl_launch {
    ocl_session *sess;
    cl_command_queue q;
    cl_device_id device;
    const void *attrs;
    const graph_type *in_type; /* this run's types */
    const cl_mem *in;
    int nin;
    const graph_type *out_type;
    const cl_mem *out;
    int nout;
    cl_kernel *k;     /* the kernels named at prepare, in that order */
    void *data;       /* ocl_prep.data */
    /*
     * Data errors: a kernel that finds bad data does
     *   atomic_cmpxchg(flag, 0, code);
     * (flag a __global int *, code this int) and carries on safely
     * (clamped index, 0 result); after the run the session fails with
     * "node N (op at site): <flag_msg>".  Pass both as arguments.
     */
    cl_mem flag;
    int code;
    char *err;
    size_t errlen;
    /* the values of ocl_prep.xin: their memory and this run's types */
    const cl_mem *xin;
    const graph_type *xin_type;
    int nxin;
    /* the values of ocl_prep.xout, likewise */
    const cl_mem *xout;
    const graph_type *xout_type;
    int nxout;
    /* What this enqueue put on the queue (OCL_ENQ_*), for the profile's
     * count per run: ocl_run counts the kernels, the op the rest. */
    long enq[3];
} ocl_launch;

/* ocl_launch.enq's counts: our kernels, CLBlast calls (one or more
 * kernels each, CLBlast's own), buffer copies and fills. */
enum { OCL_ENQ_KERNEL, OCL_ENQ_BLAS, OCL_ENQ_COPY };

typedef struct ocl_op {
    tg_status (*prepare)(ocl_prep *c);
    tg_status (*enqueue)(ocl_launch *l);
} ocl_op;

/* ---- registration ---- */

/* The table, built once (thread-safe; op_table.c). */
const ocl_op *const *ocl_ops(void);
void ocl_register_ew(const ocl_op **t);
void ocl_register_shape(const ocl_op **t);
/* matmul, linear, linear_ep (ops_gemm.c) */
void ocl_register_gemm(const ocl_op **t);
/* conv2d, conv2d_ep, conv2d_blk (ops_conv.c) */
void ocl_register_conv(const ocl_op **t);
void ocl_register_nn(const ocl_op **t);
/* Registered after ocl_register_conv: the depthwise conv (ops_dw.c) takes
 * the shapes it handles and passes the rest to the op it replaces. */
void ocl_register_dw(const ocl_op **t);

/*
 * conv2d, conv2d_ep, conv2d_blk (nn_common.c): groups and epilogue of the
 * node's attributes, and the int8 geometry of cl/nn_conv.cl (g0 = C, H, W,
 * O, OH, OW, KH, KW; g1 = strides, pads top/left, dilations, groups,
 * blocked bits) from this run's types.  post is NULL for plain conv2d.
 */
void ocl_conv_describe(graph_op op, const void *attrs, int64_t *groups,
                       const graph_ints **post, graph_post_prm *prm);
void ocl_conv_geometry(graph_op op, const void *attrs, const graph_type *x,
                       const graph_type *w, const graph_type *y, int32_t g0[8], int32_t g1[8]);
/* A conv2d_blk whose O (output channels) is not a multiple of 16: zeroes
 * its output first, as the lanes past O must be and our conv kernels do
 * not write them (nothing for other nodes). */
tg_status ocl_conv_zero_lanes(ocl_launch *l, graph_op op, int64_t O);

/* ---- prepare helpers (each returns TG_OK or an error with c->err set) ---- */

/*
 * Builds (or finds in the device's cache) common.cl + prefix + the
 * named source (a file replay/opencl/cl/<name>.cl, embedded at build time)
 * with options, and makes it c->prog.  One program per node: a second
 * call replaces the first.  prefix/options may be NULL.  Errors:
 * TG_ERR_ARG for an unknown name, TG_ERR_BACKEND with the build log.
 */
tg_status ocl_prep_program(ocl_prep *c, const char *name, const char *prefix,
                           const char *options);
/* Names a kernel of c->prog to launch (checked now); it becomes l->k[i] in
 * the order of the calls.  name must outlive the plan (a literal). */
tg_status ocl_prep_kernel(ocl_prep *c, const char *name);
/* A read-only device buffer holding bytes of host data, for c->data. */
tg_status ocl_prep_upload(ocl_prep *c, const void *host, size_t bytes, cl_mem *out);
/* Writes the reason (printf-style) into c->err; returns st. */
tg_status ocl_prep_fail(ocl_prep *c, tg_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Nonzero if the device has cl_khr_fp64. */
int ocl_prep_has_fp64(const ocl_prep *c);

/* ---- enqueue helpers ---- */

/*
 * Sets arguments 0.. of k from fmt, one char per argument:
 *   'm' cl_mem (may be NULL)      'i' int (int)        'l' long (int64_t)
 *   'f' float (double, promoted)  'L' __local bytes (size_t)
 *   'v' int8 vector from an int32_t[8] (pointer)
 */
tg_status ocl_set_args(ocl_launch *l, cl_kernel k, const char *fmt, ...);
/*
 * Sets argument index of k to size bytes at value (NULL: a __local
 * argument of size bytes); what ocl_set_args does per argument.  Every
 * argument an enqueue sets goes through here (never clSetKernelArg): for
 * the session's kernels (l->k) it skips the call when the argument
 * already holds these bytes, as in a steady replay nearly all do (on a
 * GPU driver each call costs host time).  TG_OPENCL_ARGCACHE=0 sets
 * every argument every time.
 */
tg_status ocl_set_arg(ocl_launch *l, cl_kernel k, cl_uint index, size_t size, const void *value);
/*
 * Enqueues k over dims global sizes with the given local sizes (the
 * caller rounds each global size up to a multiple of its local size).
 * local NULL: OCL_LOCAL_DEFAULT x 1 x 1, global sizes rounded up here, so
 * the kernel must ignore items past its size (if (i < n)).  A fixed local
 * size matters on PoCL, which compiles a kernel once per local size: a
 * driver-chosen one would rebuild for new shapes (measured: the 4M-element
 * chain workload 25 ms with a NULL local size, 14 ms with 256).  A zero
 * global size is a no-op.
 */
tg_status ocl_run(ocl_launch *l, cl_kernel k, int dims, const size_t *global,
                  const size_t *local);
/* The session's scratch buffer slot (0 .. OCL_MAX_SCRATCH-1) of at least
 * bytes, valid during this enqueue (the queue is in order); NULL with
 * l->err set on failure. */
cl_mem ocl_scratch(ocl_launch *l, int slot, size_t bytes);
/* The session's n (at least) tile counters (ints, zeroed when made), NULL
 * with l->err set on failure.  Shared by every node: a kernel using them
 * must leave them zero when it completes (nn_common.cl's sk_last_split). */
cl_mem ocl_counters(ocl_launch *l, size_t n);
tg_status ocl_fail(ocl_launch *l, tg_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- small helpers ---- */

/* "float", "long", "int", "uchar" */
const char *ocl_ctype(graph_dtype dt);
/* "CL_OUT_OF_RESOURCES" etc. */
const char *ocl_errstr(cl_int e);
static inline size_t ocl_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/*
 * Row launches (cl/common.cl): a [rows, L] view as a 2-D range {round_up(
 * L, w), rows} with local {w, 1}.  ocl_row_width: w for rows of L
 * elements (few distinct values: PoCL compiles a kernel once per local
 * size), 0 when rows are too short to pay.  ocl_row_align: dims and
 * strides (nd of them, outermost first) right-aligned into int8 form,
 * outer padding 1 / stride 0.
 */
static inline size_t ocl_row_width(int64_t L) { return L >= 48 ? 64 : L >= 12 ? 16 : L >= 6 ? 8 : 0; }
/* A width that divides L (no item past a row's end), or 0. */
static inline size_t ocl_row_width_exact(int64_t L)
{
    return L % 64 == 0 ? 64 : L % 16 == 0 ? 16 : L % 8 == 0 ? 8 : 0;
}
static inline void ocl_row_align(int nd, const int32_t *v, int32_t pad, int32_t out[8])
{
    for (int k = 0; k < 8; k++)
        out[k] = k < 8 - nd ? pad : v[k - (8 - nd)];
}
/*
 * Epilogue code for linear_ep/conv2d_ep/conv2d_blk: writes into buf an
 * OpenCL C definition of
 *   float tg_epilogue(float v, __global const float *res, long i)
 * applying post (GRAPH_POST_* codes, in order; GRAPH_POST_ADD adds
 * res[i]) with their parameters prm, to pass as ocl_prep_program's
 * prefix.  Returns 0, or -1 if an unknown code (message in err).
 */
int ocl_epilogue_src(const graph_ints *post, graph_post_prm prm, char *buf, size_t len,
                     char *err, size_t errlen);

/*
 * NumPy broadcasting made small: the output's dims with size-1 dims
 * dropped and adjacent dims merged where every input allows, and each
 * input's element strides over them (0 where it broadcasts), ready for
 * the int8 arguments of common.cl's tg_coords/tg_dot ('v' in
 * ocl_set_args).  nd >= 1.  Returns 0, or -1 when a size does not fit
 * in an int (the kernels index with int dims and strides).
 */
typedef struct ocl_bcast {
    int nd;
    int32_t dims[8];
    int32_t st[GRAPH_MAX_NODE_IO][8];
} ocl_bcast;
int ocl_bcast_plan(const graph_type *out, const graph_type *in, int nin, ocl_bcast *b);

/*
 * An f32 unary or binary op (one a fused program may use) as a generated
 * one-statement fused kernel (fused.c): float8 when the inputs are
 * full-size or scalars.  ops_ew.c routes f32 through these.
 */
tg_status ocl_fused_single_prepare(ocl_prep *c);

/*
 * The OpenCL C source of fused program fp with nin inputs (its kernels
 * fused_flat8, fused and fused_rows; cl/common.cl's helpers come first at
 * build) into buf, without a device: 0, -1 for an op without an OpenCL
 * expression (ew_ocl.def), -2 if len bytes do not hold it.
 * ocl_fused_source_bound(fp, nin) bytes always do.
 */
int ocl_fused_source(const fused_prog *fp, int nin, char *buf, size_t len);
size_t ocl_fused_source_bound(const fused_prog *fp, int nin);
/* A `fused` node (c->attrs its program), and the launch of either kind. */
tg_status ocl_fused_prepare(ocl_prep *c);
tg_status ocl_fused_enqueue(ocl_launch *l);

/*
 * The tail: fused node f, reading GEMM output v (ocl_tail_find), run in
 * the GEMM's kernels as they store.  The source defines TG_TAIL,
 * TG_TAIL_PARAMS / TG_TAIL_ARGS (the output tg_ty, then each other input
 * of f once: tg_t<j> and its stride tg_m<j>, 1 full-size or 0 a scalar),
 * tg_tail(v, i, ...) (f's program with v for its reads of the GEMM's
 * output) and TG_STORE(c, i, v), which stores tg_tail of v at tg_ty[i]
 * instead of v at c[i]; nn_common.cl defines the plain ones otherwise.
 * Returns as ocl_fused_source; ocl_tail_source_bound(fp, nin) bytes do.
 */
int ocl_tail_source(const graph_node *f, int32_t v, const fused_prog *fp, char *buf, size_t len);
size_t ocl_tail_source_bound(const fused_prog *fp, int nin);

/* Embedded sources (generated from cl/NAME.cl): the text of name, or NULL. */
const char *ocl_source(const char *name);

#endif
