/*
 * fused_prog.h - the micro-program of the `fused` op: its grammar, a
 * parser that validates it against the op registry, and a printer.
 * Shared by the op's shape inference (graph/infer_fused.c), its CPU
 * kernel (eager/kernels_fused.c) and the passes that build fused nodes
 * (optimize/ewchain.c).
 *
 * Grammar (spaces between tokens are allowed; nothing else is):
 *
 *   prog    := stmt {';' stmt} [';']
 *   stmt    := REG '=' OP '(' arg {',' arg} ')'
 *   arg     := 'i' DIGITS          input N of the node
 *            | REG                 a register written by an earlier stmt
 *            | NUMBER              an immediate f32
 *   REG     := 'r' DIGITS          r0 .. r31
 *   OP      := [a-z_][a-z0-9_]*    an op of graph/ops.def, by name
 *   NUMBER  := ['-'|'+'] (DIGITS ['.' DIGITS*] | '.' DIGITS) [('e'|'E') ['-'|'+'] DIGITS]
 *            | ['-'|'+'] ('inf' | 'nan')
 *
 * Meaning: each statement computes OP elementwise (NumPy broadcasting)
 * over its operands and writes a fresh register; the last statement's
 * register is the node's output.  An OP takes exactly its tensor operands
 * (1 for unary ops, 2 for binary ones; any of them may be an immediate),
 * followed by up to as many numbers as it has attributes, in ops.def
 * order; missing trailing attributes take their defaults:
 * leaky_relu(r0,0.2), clip(r0,-1,1), clip(r0,0) (= max(x, 0)).
 *
 * Rules (each broken rule is an error naming the byte offset in prog):
 *   - OP is an op of graph/ew_ops.def (the f32 elementwise ops of the
 *     registry with unary or binary NumPy inference and only f32
 *     attributes: neg abs exp add mul pow ...; comparisons, where, cast
 *     and fused itself are not); its attributes pass the op's own checks;
 *   - every register is written once and read only after it is written;
 *   - at most FUSED_MAX_STMTS statements and FUSED_MAX_INPUTS inputs;
 *     every input i0 .. i(nin-1) of the node is read at least once.
 */
#ifndef TG_GRAPH_FUSED_PROG_H
#define TG_GRAPH_FUSED_PROG_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"

#define FUSED_MAX_STMTS 64
#define FUSED_MAX_INPUTS 16
#define FUSED_MAX_ATTRS 2

typedef enum fused_arg_kind {
    FUSED_ARG_INPUT, /* index: input number */
    FUSED_ARG_REG,   /* index: the statement that wrote it */
    FUSED_ARG_IMM,   /* imm */
} fused_arg_kind;

typedef struct fused_arg {
    uint8_t kind;  /* fused_arg_kind */
    uint8_t index; /* input number, or statement number for a register */
    float imm;
} fused_arg;

typedef struct fused_stmt {
    graph_op op;
    uint8_t nargs;                /* tensor operands: 1 or 2 */
    fused_arg arg[2];
    float attr[FUSED_MAX_ATTRS]; /* the op's attributes, defaults filled */
    int32_t pos;                  /* byte offset of the statement in prog */
} fused_stmt;

/*
 * A parsed program.  Registers are renumbered to the statement that
 * writes them (arg.index of a FUSED_ARG_REG operand); the output is
 * statement nstmts - 1.
 */
typedef struct fused_prog {
    int nstmts;
    int ninputs; /* 1 + the highest input read */
    fused_stmt stmt[FUSED_MAX_STMTS];
} fused_prog;

/*
 * Parses and validates prog (NUL-terminated, at most GRAPH_MAX_STR - 1
 * bytes are read) for a node with nin inputs (nin < 0: any count, inputs
 * need not all be read).  Returns TG_OK, or TG_ERR_ARG with
 * "prog byte N: <reason>" in err.
 */
tg_status fused_prog_parse(const char *prog, int nin, fused_prog *p, char *err,
                           size_t errlen);

/*
 * Nonzero if op may appear in a program (see the rules above); its
 * tensor operand count in *nargs when not NULL.
 */
int fused_op_ok(graph_op op, int *nargs);

/* How long an op's statement computes (ew_ops.def's cost column). */
typedef enum fused_cost {
    FUSED_COST_LIGHT, /* one or two instructions per vector */
    FUSED_COST_SLOW,  /* a divide or a square root */
    FUSED_COST_HEAVY, /* a polynomial or a libm call */
} fused_cost;

/* op's cost class; FUSED_COST_HEAVY for an op fused_op_ok refuses. */
fused_cost fused_op_cost(graph_op op);

/*
 * Writes p as canonical text (registers r0.. in statement order, floats
 * in the shortest form that reads back exactly, attributes equal to
 * their defaults left out when trailing) into buf.  Returns the length,
 * or -1 if it does not fit in len bytes with its NUL.
 */
int fused_prog_print(const fused_prog *p, char *buf, size_t len);

/*
 * An upper bound of the length fused_prog_print writes for p (without
 * its NUL), without printing: each float counted at its longest (15
 * bytes, "-1.17549435e-38").  For deciding cheaply that a program fits.
 */
size_t fused_prog_text_bound(const fused_prog *p);

#endif
