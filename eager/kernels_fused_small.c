/*
 * kernels_fused_small.c - the register path of the `fused` kernel: an
 * output of at most 16 elements (FUSED_SMALL_N) is one AVX-512 vector,
 * so every value of the program is one vector.  Compiling (once per
 * replay step) resolves each operand to a row of a value file, drops
 * dead statements and orders the rest by critical path (schedule); a run
 * loads the inputs (masked unless 16), broadcasts the immediates, then
 * executes one switch case per statement with the operation inline, and
 * stores the last value.  The previous result and the last slow result
 * (exp, sigmoid, div, ...) stay in two registers, and the case says
 * which operand comes from which (fused_plan.h: fsinst.code), so the
 * dependence chain of a program such as `tiny` runs register to register
 * instead of through a store and a reload at every step.
 *
 * Lanes past the output's size hold zeros or copies and are computed and
 * thrown away; floating-point exceptions are masked, as everywhere in C.
 * Each case is the tile path's expression (kernels_fused.c), operand
 * order and NaN handling included, so both paths give the same bits.
 *
 * The small path exists for dispatch-bound graphs (the `tiny` benchmark:
 * 700 ops on 16 floats): there a run costs a few cycles per statement
 * plus the latency of its dependence chain.
 */
#include <string.h>

#include "fused_plan.h"

#if defined(VM512)

/* The inline operations (fsinst.code / 16). */
enum {
    FS_OP_add, FS_OP_sub, FS_OP_mul, FS_OP_div, FS_OP_maximum, FS_OP_minimum,
    FS_OP_neg, FS_OP_abs, FS_OP_relu, FS_OP_leaky_relu, FS_OP_clip,
    FS_OP_reciprocal, FS_OP_sqrt, FS_OP_rsqrt, FS_OP_exp, FS_OP_sigmoid, FS_OP_tanh,
    FS_OP_EXEC, /* no inline form: fused_exec on the rows */
};

static uint8_t op_code(graph_op op)
{
    switch (op) {
#define C(o) case GRAPH_OP_##o: return FS_OP_##o;
        C(add) C(sub) C(mul) C(div) C(maximum) C(minimum) C(neg) C(abs) C(relu)
        C(leaky_relu) C(clip) C(reciprocal) C(sqrt) C(rsqrt) C(exp) C(sigmoid) C(tanh)
#undef C
    default: return FS_OP_EXEC;
    }
}

/* mask ? b : a, lane by lane */
#define BLEND(m, a, b) _mm512_mask_blend_ps((m), (a), (b))
#define CMP(x, y, p) _mm512_cmp_ps_mask((x), (y), (p))
#define SIGN _mm512_set1_epi32((int)0x80000000u)
#define ONE _mm512_set1_ps(1.0f)
#define ZERO _mm512_setzero_ps()

/* Each case is the tile path's expression (fused_exec): NaN handling and
 * the sign of zero included.  Binary ops take x, y; unary ones x.  The
 * last column: the result is also kept in the second register (the ops
 * with a long latency, whose consumers are worth sparing a reload). */
#define BINARY_OPS(X)                                                      \
    X(add, _mm512_add_ps(x, y), 0)                                         \
    X(sub, _mm512_sub_ps(x, y), 0)                                         \
    X(mul, _mm512_mul_ps(x, y), 0)                                         \
    X(div, _mm512_div_ps(x, y), 1)                                         \
    /* (x > y || x != x) ? x : y, and the same with < */                   \
    X(maximum, BLEND(CMP(x, y, _CMP_GT_OQ) | CMP(x, x, _CMP_UNORD_Q), y, x), 0) \
    X(minimum, BLEND(CMP(x, y, _CMP_LT_OQ) | CMP(x, x, _CMP_UNORD_Q), y, x), 0)

#define UNARY_OPS(X)                                                       \
    X(neg, _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), SIGN)), 0) \
    X(abs, vm512_abs(x), 0)                                                \
    /* v <= 0 ? 0 : v: NaN passes, -0 becomes +0 */                        \
    X(relu, BLEND(CMP(x, ZERO, _CMP_LE_OQ), x, ZERO), 0)                   \
    X(leaky_relu, BLEND(CMP(x, ZERO, _CMP_LT_OQ), x, _mm512_mul_ps(_mm512_set1_ps(I->f.p0), x)), 0) \
    X(clip, clip(x, I->f.p0, I->f.p1), 0)                                  \
    X(reciprocal, _mm512_div_ps(ONE, x), 1)                                \
    X(sqrt, _mm512_sqrt_ps(x), 1)                                          \
    X(rsqrt, _mm512_div_ps(ONE, _mm512_sqrt_ps(x)), 1)                     \
    X(exp, vm512_expf(x), 1)                                               \
    X(sigmoid, vm512_sigmoidf(x), 1)                                       \
    X(tanh, vm512_tanhf(x), 1)

/* (v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v): NaN passes */
static inline __m512 clip(__m512 x, float lo, float hi)
{
    __m512 w = BLEND(CMP(x, _mm512_set1_ps(lo), _CMP_LT_OQ), x, _mm512_set1_ps(lo));
    return BLEND(CMP(w, _mm512_set1_ps(hi), _CMP_GT_OQ), w, _mm512_set1_ps(hi));
}

/* 1 if op code c keeps its result in the second register. */
static int op_keeps(uint8_t c)
{
    switch (c) {
#define K(OP, EXPR, KEEP) case FS_OP_##OP: return KEEP;
        BINARY_OPS(K)
        UNARY_OPS(K)
#undef K
    default: return 1; /* FS_OP_EXEC */
    }
}

/* Rough latency in cycles of one statement, for scheduling only. */
static int op_latency(uint8_t code)
{
    switch (code) {
    case FS_OP_exp: case FS_OP_sigmoid: case FS_OP_tanh: case FS_OP_EXEC: return 40;
    case FS_OP_div: case FS_OP_reciprocal: case FS_OP_sqrt: case FS_OP_rsqrt: return 14;
    default: return 4;
    }
}

/* Row of immediate v, added once (bitwise equal values share a row). */
static int imm_row(fsmall *S, float v)
{
    for (int j = 0; j < S->nimm; j++)
        if (memcmp(&S->imm[j], &v, sizeof v) == 0)
            return S->nin + j;
    S->imm[S->nimm] = v;
    return S->nin + S->nimm++;
}

/*
 * Execution order: list scheduling by critical path (the longest latency
 * from a statement to the output), so that the statement a long chain
 * waits for tends to run right before its consumer and hand its result
 * over in a register.  Any topological order gives the same values.
 */
static int schedule(const fused_prog *p, const uint8_t *needed, int *order)
{
    int prio[FUSED_MAX_STMTS] = {0}, done[FUSED_MAX_STMTS] = {0}, n = 0;
    for (int k = p->nstmts - 1; k >= 0; k--) {
        if (!needed[k])
            continue;
        prio[k] += op_latency(op_code(p->stmt[k].op));
        for (int j = 0; j < p->stmt[k].nargs; j++) {
            const fused_arg *g = &p->stmt[k].arg[j];
            if (g->kind == FUSED_ARG_REG && prio[g->index] < prio[k])
                prio[g->index] = prio[k]; /* before its own latency is added */
        }
    }
    for (;;) {
        int best = -1;
        for (int k = 0; k < p->nstmts; k++) {
            int ready = needed[k] && !done[k];
            for (int j = 0; ready && j < p->stmt[k].nargs; j++)
                if (p->stmt[k].arg[j].kind == FUSED_ARG_REG && !done[p->stmt[k].arg[j].index])
                    ready = 0;
            if (ready && (best < 0 || prio[k] > prio[best]))
                best = k;
        }
        if (best < 0)
            return n;
        done[best] = 1;
        order[n++] = best;
    }
}

/* Classifies the inputs: full, scalar or broadcast (with its fbcast). */
static void classify(fplan *P, const eager_kargs *a, int64_t n, uint8_t *in_uniform)
{
    fsmall *S = &P->s;
    S->nin = a->nin;
    for (int k = 0; k < a->nin; k++) {
        int64_t m = graph_type_numel(&a->in_type[k]);
        in_uniform[k] = m == 1;
        S->in_kind[k] = m == 1 ? FS_SCALAR : m == n ? FS_FULL : FS_BCAST;
        if (S->in_kind[k] == FS_BCAST) {
            S->in_bc[k] = (uint8_t)P->nbc;
            fused_make_bcast(&a->in_type[k], a->out_type, &P->bc[P->nbc++]);
        }
    }
}

#define ROW_BYTES (16 * (int)sizeof(float))

void fused_small_compile(fplan *P, const fused_prog *p, const eager_kargs *a)
{
    fsmall *S = &P->s;
    uint8_t needed[FUSED_MAX_STMTS] = {0}, uniform[FUSED_MAX_STMTS] = {0};
    uint8_t in_uniform[FUSED_MAX_INPUTS];
    classify(P, a, graph_type_numel(a->out_type), in_uniform);
    needed[p->nstmts - 1] = 1;
    for (int k = p->nstmts - 1; k >= 0; k--)
        for (int j = 0; needed[k] && j < p->stmt[k].nargs; j++)
            if (p->stmt[k].arg[j].kind == FUSED_ARG_REG)
                needed[p->stmt[k].arg[j].index] = 1;
    /* Immediates first, so that statement rows start after them. */
    for (int k = 0; k < p->nstmts; k++)
        for (int j = 0; needed[k] && j < p->stmt[k].nargs; j++)
            if (p->stmt[k].arg[j].kind == FUSED_ARG_IMM)
                imm_row(S, p->stmt[k].arg[j].imm);
    const int base = S->nin + S->nimm;
    /* The run starts with input 0 in the first register and nothing in
     * the second (see fused_small_run). */
    int order[FUSED_MAX_STMTS], acc_row = 0, keep_row = -1;
    S->ninst = schedule(p, needed, order);
    for (int t = 0; t < S->ninst; t++) {
        const int k = order[t];
        const fused_stmt *st = &p->stmt[k];
        int row[2] = {0, 0}, src[2] = {0, 0};
        uint8_t uni[2] = {1, 1};
        for (int j = 0; j < st->nargs; j++) {
            const fused_arg *g = &st->arg[j];
            if (g->kind == FUSED_ARG_INPUT) {
                row[j] = g->index;
                uni[j] = in_uniform[g->index];
            } else if (g->kind == FUSED_ARG_REG) {
                row[j] = base + g->index;
                uni[j] = uniform[g->index];
            } else {
                row[j] = imm_row(S, g->imm);
            }
            src[j] = row[j] == acc_row ? 1 : row[j] == keep_row ? 2 : 0;
        }
        if (st->nargs == 1) {
            row[1] = row[0];
            src[1] = src[0];
        }
        uniform[k] = uni[0] && uni[1];
        fsinst *I = &S->inst[t];
        memset(I, 0, sizeof *I);
        I->f.op = st->op;
        I->f.p0 = st->attr[0];
        I->f.p1 = st->attr[1];
        /* fused_exec's unary loops always advance a; binary ones take
         * the tile path's mode, a uniform-uniform pair as "both advance"
         * (the row holds 16 equal values, as the tile path's uniform
         * list runs it with n = 1). */
        I->f.mode = (uint8_t)(uniform[k] ? 3u : (uni[0] ? 0u : 1u) | (uni[1] ? 0u : 2u));
        I->a = (uint16_t)(row[0] * ROW_BYTES);
        I->b = (uint16_t)(row[1] * ROW_BYTES);
        I->d = (uint16_t)((base + k) * ROW_BYTES);
        I->code = (uint16_t)(op_code(st->op) * 16 + src[0] * 4 + src[1]);
        acc_row = base + k;
        if (op_keeps(op_code(st->op)))
            keep_row = base + k;
    }
    P->small = 1;
}

/* Loads input k into its row; lanes past n are zero.  A full vector is
 * loaded without a mask: a masked load does not take its data from a
 * pending store (the previous node's output, just written), it waits
 * for the store to complete. */
static __m512 load_input(const fplan *P, const eager_kargs *a, int k, __mmask16 m,
                         float *row)
{
    const fsmall *S = &P->s;
    const float *x = a->in[k];
    switch (S->in_kind[k]) {
    case FS_FULL:
        _mm512_store_ps(row, P->n == 16 ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(m, x));
        break;
    case FS_SCALAR:
        _mm512_store_ps(row, _mm512_set1_ps(x[0]));
        break;
    default:
        _mm512_store_ps(row, _mm512_setzero_ps());
        fused_gather(x, &P->bc[S->in_bc[k]], 0, P->n, row);
        break;
    }
    return _mm512_load_ps(row);
}

#define LD(off) _mm512_load_ps((const float *)(file + (off)))

/* An operand: 0 its row, 1 the previous result, 2 the kept result. */
#define SRC0(r) LD(I->r)
#define SRC1(r) acc
#define SRC2(r) acc2

#define CASE(OP, EXPR, KEEP, SA, SB)                                       \
    case FS_OP_##OP * 16 + SA * 4 + SB: {                                  \
        __m512 x = SRC##SA(a), y = SRC##SB(b);                             \
        (void)y;                                                           \
        acc = (EXPR);                                                      \
        if (KEEP)                                                          \
            acc2 = acc;                                                    \
        break;                                                             \
    }
#define BINARY_CASES(OP, EXPR, KEEP)                                       \
    CASE(OP, EXPR, KEEP, 0, 0) CASE(OP, EXPR, KEEP, 0, 1) CASE(OP, EXPR, KEEP, 0, 2) \
    CASE(OP, EXPR, KEEP, 1, 0) CASE(OP, EXPR, KEEP, 1, 1) CASE(OP, EXPR, KEEP, 1, 2) \
    CASE(OP, EXPR, KEEP, 2, 0) CASE(OP, EXPR, KEEP, 2, 1) CASE(OP, EXPR, KEEP, 2, 2)
#define UNARY_CASES(OP, EXPR, KEEP)                                        \
    CASE(OP, EXPR, KEEP, 0, 0) CASE(OP, EXPR, KEEP, 1, 1) CASE(OP, EXPR, KEEP, 2, 2)

void fused_small_run(const fplan *P, const eager_kargs *a)
{
    const fsmall *S = &P->s;
    _Alignas(64) float vf[FS_MAX_ROWS][16];
    char *const file = (char *)vf;
    const __mmask16 m = (__mmask16)((1u << P->n) - 1u);
    __m512 acc = load_input(P, a, 0, m, vf[0]); /* fused_small_compile counts on it */
    for (int k = 1; k < S->nin; k++)
        load_input(P, a, k, m, vf[k]);
    for (int j = 0; j < S->nimm; j++)
        _mm512_store_ps(vf[S->nin + j], _mm512_set1_ps(S->imm[j]));
    __m512 acc2 = ZERO;
    for (const fsinst *I = S->inst, *end = S->inst + S->ninst; I < end; I++) {
        switch (I->code) {
            BINARY_OPS(BINARY_CASES)
            UNARY_OPS(UNARY_CASES)
        case FS_OP_EXEC * 16 + 0: /* fused_exec reads the rows, always written */
        case FS_OP_EXEC * 16 + 1: case FS_OP_EXEC * 16 + 2: case FS_OP_EXEC * 16 + 4:
        case FS_OP_EXEC * 16 + 5: case FS_OP_EXEC * 16 + 6: case FS_OP_EXEC * 16 + 8:
        case FS_OP_EXEC * 16 + 9: case FS_OP_EXEC * 16 + 10:
            fused_exec(&I->f, (const float *)(file + I->a), (const float *)(file + I->b),
                       (float *)(file + I->d), 16);
            acc = acc2 = LD(I->d);
            continue;
        default:
            __builtin_unreachable(); /* fused_small_compile makes no other code */
        }
        _mm512_store_ps((float *)(file + I->d), acc);
    }
    if (P->n == 16)
        _mm512_storeu_ps(a->out[0], acc);
    else
        _mm512_mask_storeu_ps(a->out[0], m, acc);
}

#else

/* Never called: FUSED_SMALL_N is 0 without AVX-512. */
void fused_small_compile(fplan *P, const fused_prog *p, const eager_kargs *a)
{
    (void)P, (void)p, (void)a;
}

void fused_small_run(const fplan *P, const eager_kargs *a)
{
    (void)P, (void)a;
}

#endif
