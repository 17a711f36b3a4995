/*
 * fused_plan.h - the compiled form of a `fused` micro-program, shared by
 * the kernel's three paths (private to eager/):
 *   - kernels_fused.c: compiling, and the tile path (any size: one loop
 *     per instruction over each tile of the output);
 *   - kernels_fused_reg.c: the register path for outputs of at most
 *     FUSED_SMALL_N elements (one AVX-512 vector per value, a switch per
 *     statement with the operation inline; the per-statement cost of
 *     the tile path, pointer setup and a loop per instruction, is what
 *     dominates a 16-element program), and the streaming path for larger
 *     outputs without broadcast inputs (the tile instructions run 64
 *     elements at a time with the same inline cases, values forwarded in
 *     registers instead of stored to a tile buffer and reloaded).
 * All give the same bits: the same operations in the same order, and
 * vmath512.h's functions equal vmath.h's.
 */
#ifndef TG_EAGER_FUSED_PLAN_H
#define TG_EAGER_FUSED_PLAN_H

#include "../graph/fused_prog.h"
#include "kernel.h"
#include "vmath512.h"

enum { FUSED_MAX_UV = FUSED_MAX_STMTS * 3 + FUSED_MAX_INPUTS };
_Static_assert(FUSED_MAX_UV <= UINT8_MAX, "uniform values are indexed by uint8_t (fopnd.idx)");

/* Where an operand lives during a tile. */
enum { K_SLOT, K_IN, K_BC, K_UV };

typedef struct fopnd {
    uint8_t kind, idx;
} fopnd;

typedef struct finst {
    graph_op op;
    uint8_t mode; /* bit 0: a advances along the tile, bit 1: b advances */
    int16_t dst;  /* slot (tile list) or uv index (uniform list); -1: output */
    fopnd a, b;
    float p0, p1; /* attributes */
} finst;

/* A broadcast input's collapsed dims and strides (0: repeated). */
typedef struct fbcast {
    int nd;
    int64_t dim[GRAPH_MAX_DIMS], stride[GRAPH_MAX_DIMS];
} fbcast;

/* ---- the register path ---- */

#if defined(VM512)
#define FUSED_SMALL_N 16
#else
#define FUSED_SMALL_N 0 /* no register path: the tile path runs all sizes */
#endif

/* How the register path loads an input. */
enum { FS_FULL, FS_SCALAR, FS_BCAST };

/*
 * One statement: value file rows a, b (b = a for unary ops) -> row d,
 * as byte offsets into the file.  The file holds the inputs (rows 0 ..
 * nin-1), the distinct immediates (broadcast), then one row per
 * statement.  code is the inline operation (FS_OP_*) times 16, plus 4 x
 * where operand a comes from, plus where b comes from: 0 its row, 1 the
 * previous statement's result, 2 the last long-latency result (exp,
 * sigmoid, div, ...), both kept in registers (the row is written
 * too): a chain of statements does not wait on a store and a reload at
 * each step, nor does the consumer of a slow value computed a few
 * statements earlier.  f is the statement as the tile path's fused_exec takes it,
 * for the ops without an inline form (FS_OP_EXEC: inl 0 in
 * eager/ew_cpu.def, such as log, erf, gelu, silu, pow); its mode says which operands are uniform, as in the tile path,
 * so pow picks the same exact-exponent loop.
 */
typedef struct fsinst {
    finst f;
    uint16_t a, b, d;
    uint16_t code;
} fsinst;

enum { FS_MAX_ROWS = FUSED_MAX_INPUTS + 2 * FUSED_MAX_STMTS + FUSED_MAX_STMTS };

typedef struct fsmall {
    int nin, nimm, ninst;
    uint8_t in_kind[FUSED_MAX_INPUTS], in_bc[FUSED_MAX_INPUTS]; /* FS_*, fbcast index */
    float imm[2 * FUSED_MAX_STMTS];
    fsinst inst[FUSED_MAX_STMTS]; /* in execution order (see fused_small_compile) */
} fsmall;

/* ---- the streaming register path ---- */

#define FUSED_STREAM_U 8 /* vectors per step (without VM512 there is no streaming path) */
enum { FUSED_STREAM_W = 16 * FUSED_STREAM_U }; /* elements per step */

/*
 * The tile instructions (fplan.inst, same order and operands) as the
 * streaming path runs them: FUSED_STREAM_W elements at a time, one
 * switch case per statement, values forwarded in registers.  code is
 * fsinst's, with operand source 3: a full input read in place (a or b
 * is then the input's index).  Rows are FUSED_STREAM_W floats: row t
 * holds instruction t's result when store[t] is set (a later statement
 * reads it from there), rows ninst .. ninst + nurow - 1 the uniform
 * values uv[urow_uv[j]], broadcast.
 */
typedef struct fstream {
    int ninst, nurow;
    uint8_t urow_uv[2 * FUSED_MAX_STMTS], store[FUSED_MAX_STMTS];
    fsinst inst[FUSED_MAX_STMTS];
} fstream;

typedef struct fplan {
    eager_kstate base;
    int64_t n;   /* output elements */
    int small;   /* run by the register path (s below), not the tiles */
    int nuni, ninst, nslots, nbc, nscalar, nuv;
    int out_uv; /* >= 0: the output is this uniform value */
    int64_t tile;
    finst uni[FUSED_MAX_STMTS], inst[FUSED_MAX_STMTS];
    float uv[FUSED_MAX_UV]; /* immediates; scalar inputs and uniform results per call */
    uint8_t scalar_in[FUSED_MAX_INPUTS], scalar_uv[FUSED_MAX_INPUTS];
    uint8_t bc_in[FUSED_MAX_INPUTS];
    uint8_t full_in[FUSED_MAX_INPUTS]; /* the inputs read in place, nfull of them */
    int nfull;
    fbcast bc[FUSED_MAX_INPUTS];
    fsmall s;
    int stream; /* the tile instructions are run by the streaming path (v) */
    fstream v;
} fplan;

/* d[0..n) = I's op of a, b (kernels_fused.c).  d may be a or b. */
void fused_exec(const finst *I, const float *a, const float *b, float *d, int64_t n);

/* Strides of input type t over the output type (0 where it broadcasts),
 * collapsed (kernels_fused.c). */
void fused_make_bcast(const graph_type *t, const graph_type *out, fbcast *b);

/* Copies or repeats a broadcast input's elements for output [t0, t0+len). */
void fused_gather(const float *src, const fbcast *b, int64_t t0, int64_t len, float *dst);

/* Builds P->s from the parsed program for a->out_type with at most
 * FUSED_SMALL_N elements, and the fbcasts of its broadcast inputs
 * (kernels_fused_reg.c). */
void fused_small_compile(fplan *P, const fused_prog *p, const eager_kargs *a);

/* Runs P->s on a's buffers (kernels_fused_reg.c). */
void fused_small_run(const fplan *P, const eager_kargs *a);

/* Builds P->v from P's tile instructions and sets P->stream, if P can
 * take the streaming path (kernels_fused_reg.c). */
void fused_stream_compile(fplan *P);

/* Output elements [s0, s1) * FUSED_STREAM_W (s1 * FUSED_STREAM_W
 * clipped to P->n) by the streaming path, uniform values in uv. */
void fused_stream_run(const fplan *P, const float *const *in, float *out, const float *uv,
                      int64_t s0, int64_t s1);

#endif
