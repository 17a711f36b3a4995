/*
 * kernels_fused_reg.c - the register paths of the `fused` kernel, which
 * keep a program's values in AVX-512 registers instead of the tile
 * path's buffers (kernels_fused.c; the plan all paths share is in
 * fused_plan.h).  Both execute one case per statement with the
 * operation inline (the small path as threaded code, the streaming
 * path through a switch).  The previous result and the last slow result (exp,
 * sigmoid, div, ...) stay in two registers, and the case says which
 * operand comes from which (fused_plan.h: fsinst.code), so a chain of
 * statements runs register to register instead of through a store and
 * a reload at every step.
 *
 * The small path: an output of at most 16 elements (FUSED_SMALL_N) is
 * one vector, so every value of the program is one vector.  Compiling
 * (once per replay step) resolves each operand to a row of a value file,
 * drops dead statements and orders the rest by critical path (schedule);
 * a run loads the inputs (masked unless 16), broadcasts the immediates,
 * runs the cases and stores the last value.  It exists for
 * dispatch-bound graphs (the `tiny` benchmark: 700 ops on 16 floats):
 * there a run costs a few cycles per statement plus the latency of its
 * dependence chain.
 *
 * The streaming path: a larger output whose inputs are all full-size or
 * scalar and whose statements all have an inline form runs the tile
 * path's compiled instructions (same order, operands and uniform part)
 * FUSED_STREAM_W = 128 elements at a time, each case on 8 independent
 * vectors: full inputs are read in place, scalars and uniform results
 * from rows broadcast once per call, and a result is stored to its row
 * only if a later statement reads it from there (neither register holds
 * it by then).  The last n % 128 elements run as one zero-padded step.
 * The tiles' per-statement loop loads and stores every value; here the
 * benchmark chain tanh(x sigmoid(x) + 0.5 x) 2 - 1 loads x and stores
 * 0.5 x and the output.  Measured on it (4M floats, one thread, thread
 * CPU time, medians, tiles and streaming alternated in one process):
 * tiles 0.78-0.79 ns/element, streaming 0.68-0.69; the same chain
 * written by hand with all values in registers, one vector per
 * iteration, 0.72 (one vector leaves the latency chains of sigmoid and
 * tanh exposed; several fill the pipes).  Steps of 1, 2, 4, 8 vectors
 * then: 1.03, 0.81, 0.68, 0.80 ns/element (1 and 2 pay the dispatch per
 * statement; 8 spent 16 of the 32 registers on acc and acc2 and
 * spilled).  Measured again once x * 2 ran as an add and sigmoid had
 * its shorter denominator, 8 came out ahead: the kernel alone on the
 * chain, 4M floats, min / median of 80 runs, 4 and 8 alternated, 34.8 /
 * 35.8 against 33.0 / 34.1 cycles per 16 elements (the suite's replay
 * 2.62 against 2.52 ms); row offsets count 64-byte vectors so that 8
 * still fit 16 bits.  Tried on 8 and not kept: threaded dispatch (as
 * the small path's), acc2 in memory, the cases' loops not unrolled
 * (47 cycles); in a hand-written loop, sigmoid and tanh stepped across
 * the 8 vectors in lock step spilled and lost (37 against 33).  Software prefetch (256 to 4096 elements ahead)
 * did not help: the steps read the inputs as one stream the hardware
 * prefetcher follows.  Kept on the tiles: broadcast inputs (gathered per tile) and
 * the ops without an inline form (inl 0 in eager/ew_cpu.def: log, erf,
 * gelu, silu, softplus, pow; fused_exec
 * per 64 elements was 1.22x slower than the tiles on erf + log at 64K).
 *
 * Lanes past the output's size hold zeros or copies and are computed and
 * thrown away; floating-point exceptions are masked, as everywhere in C.
 * Each case is the tile path's expression (kernels_fused.c), operand
 * order and NaN handling included, so all paths give the same bits: the
 * vec column of eager/ew_cpu.def, which the cases expand.
 */
#include <string.h>

#include "fused_plan.h"

#if defined(VM512)

/* Keeps an X-macro item when its flag (ew_cpu.def's inl column) is 1. */
#define IF_1(...) __VA_ARGS__
#define IF_0(...)

/* 1: the result is also kept in the second register (the ops with a
 * long latency, whose consumers are worth sparing a reload). */
#define KEEP_LIGHT 0
#define KEEP_SLOW 1
#define KEEP_HEAVY 1

/* The ops of graph/ew_ops.def with an inline form (ew_cpu.def): X(OP, N,
 * EXPR, KEEP) for each, written as
 *   #define EWC(...) INLINE_OP(X, ...)  #include "ew_cpu_rows.h"  #undef EWC */
#define INLINE_OP(X, OP, N, COST, S, TILE, INL, VEC, EAGER)                \
    IF_##INL(X(OP, N, VEC, KEEP_##COST))

/* The inline operations (fsinst.code / 16). */
enum {
#define CODE(OP, N, EXPR, KEEP) FS_OP_##OP,
#define EWC(...) INLINE_OP(CODE, __VA_ARGS__)
#include "ew_cpu_rows.h"
#undef EWC
#undef CODE
    FS_OP_EXEC, /* no inline form: fused_exec on the rows */
};

static uint8_t op_code(graph_op op)
{
    switch (op) {
#define C(OP, N, EXPR, KEEP) case GRAPH_OP_##OP: return FS_OP_##OP;
#define EWC(...) INLINE_OP(C, __VA_ARGS__)
#include "ew_cpu_rows.h"
#undef EWC
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

/* (v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v): NaN passes */
static inline __m512 vm512_clip(__m512 x, float lo, float hi)
{
    __m512 w = BLEND(CMP(x, _mm512_set1_ps(lo), _CMP_LT_OQ), x, _mm512_set1_ps(lo));
    return BLEND(CMP(w, _mm512_set1_ps(hi), _CMP_GT_OQ), w, _mm512_set1_ps(hi));
}

/* 1 if op code c keeps its result in the second register. */
static int op_keeps(uint8_t c)
{
    switch (c) {
#define K(OP, N, EXPR, KEEP) case FS_OP_##OP: return KEEP;
#define EWC(...) INLINE_OP(K, __VA_ARGS__)
#include "ew_cpu_rows.h"
#undef EWC
#undef K
    default: return 1; /* FS_OP_EXEC */
    }
}

/* Rough latency in cycles of one statement of op, for scheduling only. */
static int op_latency(graph_op op)
{
    switch (fused_op_cost(op)) {
    case FUSED_COST_LIGHT: return 4;
    case FUSED_COST_SLOW: return 14;
    default: return 40;
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
        prio[k] += op_latency(p->stmt[k].op);
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

/*
 * Dispatch is threaded code (GNU C's labels as values, as GCC and Clang
 * have): every case ends in an indirect jump to the next statement's
 * case, where a switch shares one jump among all statements and adds a
 * branch back to it.  GCC's cross-jumping merges the cases' identical
 * tails, so 7 distinct jumps remain of 89 (-fno-crossjumping keeps all
 * 89 but was not measurably faster).  Measured on the `tiny` benchmark
 * (suite, one thread, 8 runs of each alternated): replay 0.0024-0.0025
 * ms threaded against 0.0026-0.0028 ms with the switch while the shared
 * machine was busy (eager 0.060 ms), the same within noise while it was
 * quiet (0.0018 against 0.0017-0.0021 ms, eager 0.038 ms).
 */
#define TAB_ENTRY(OP, SA, SB) [FS_OP_##OP * 16 + SA * 4 + SB] = &&L_##OP##_##SA##SB,
#define TAB(OP, N, EXPR, KEEP) TAB_##N(OP)
#define TAB_2(OP)                                                          \
    TAB_ENTRY(OP, 0, 0) TAB_ENTRY(OP, 0, 1) TAB_ENTRY(OP, 0, 2)            \
    TAB_ENTRY(OP, 1, 0) TAB_ENTRY(OP, 1, 1) TAB_ENTRY(OP, 1, 2)            \
    TAB_ENTRY(OP, 2, 0) TAB_ENTRY(OP, 2, 1) TAB_ENTRY(OP, 2, 2)
#define TAB_1(OP) TAB_ENTRY(OP, 0, 0) TAB_ENTRY(OP, 1, 1) TAB_ENTRY(OP, 2, 2)

/* Runs one statement, stores its row and jumps to the next one's case. */
#define CASE(OP, EXPR, KEEP, SA, SB)                                       \
    L_##OP##_##SA##SB: {                                                   \
        __m512 x = SRC##SA(a), y = SRC##SB(b);                             \
        const float p0 = I->f.p0, p1 = I->f.p1;                            \
        (void)y, (void)p0, (void)p1;                                       \
        acc = (EXPR);                                                      \
        if (KEEP)                                                          \
            acc2 = acc;                                                    \
        _mm512_store_ps((float *)(file + I->d), acc);                      \
        if (++I == end)                                                    \
            goto done;                                                     \
        goto *tab[I->code];                                                \
    }
#define CASES(OP, N, EXPR, KEEP) CASES_##N(OP, EXPR, KEEP)
#define CASES_2(OP, EXPR, KEEP)                                            \
    CASE(OP, EXPR, KEEP, 0, 0) CASE(OP, EXPR, KEEP, 0, 1) CASE(OP, EXPR, KEEP, 0, 2) \
    CASE(OP, EXPR, KEEP, 1, 0) CASE(OP, EXPR, KEEP, 1, 1) CASE(OP, EXPR, KEEP, 1, 2) \
    CASE(OP, EXPR, KEEP, 2, 0) CASE(OP, EXPR, KEEP, 2, 1) CASE(OP, EXPR, KEEP, 2, 2)
#define CASES_1(OP, EXPR, KEEP)                                            \
    CASE(OP, EXPR, KEEP, 0, 0) CASE(OP, EXPR, KEEP, 1, 1) CASE(OP, EXPR, KEEP, 2, 2)

void fused_small_run(const fplan *P, const eager_kargs *a)
{
    /* fused_small_compile makes no other codes; fused_exec reads the
     * rows, always written, so its source combinations share a case */
    static const void *const tab[FS_OP_EXEC * 16 + 16] = {
#define EWC(...) INLINE_OP(TAB, __VA_ARGS__)
#include "ew_cpu_rows.h"
#undef EWC
        [FS_OP_EXEC * 16 + 0] = &&L_exec, [FS_OP_EXEC * 16 + 1] = &&L_exec,
        [FS_OP_EXEC * 16 + 2] = &&L_exec, [FS_OP_EXEC * 16 + 4] = &&L_exec,
        [FS_OP_EXEC * 16 + 5] = &&L_exec, [FS_OP_EXEC * 16 + 6] = &&L_exec,
        [FS_OP_EXEC * 16 + 8] = &&L_exec, [FS_OP_EXEC * 16 + 9] = &&L_exec,
        [FS_OP_EXEC * 16 + 10] = &&L_exec,
    };
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
    /* at least one statement: a program is never empty and its last
     * statement is always needed */
    const fsinst *I = S->inst, *const end = S->inst + S->ninst;
    goto *tab[I->code];
#define EWC(...) INLINE_OP(CASES, __VA_ARGS__)
#include "ew_cpu_rows.h"
#undef EWC
L_exec:
    fused_exec(&I->f, (const float *)(file + I->a), (const float *)(file + I->b),
               (float *)(file + I->d), 16);
    acc = acc2 = LD(I->d);
    if (++I == end)
        goto done;
    goto *tab[I->code];
done:
    if (P->n == 16)
        _mm512_storeu_ps(a->out[0], acc);
    else
        _mm512_mask_storeu_ps(a->out[0], m, acc);
}

/* ---- the streaming path ---- */

#define SROW_BYTES (FUSED_STREAM_W * (int)sizeof(float))
#define SROW_UNITS (SROW_BYTES / 64)
_Static_assert(3 * FUSED_MAX_STMTS * SROW_UNITS <= UINT16_MAX + 1,
               "row offsets (fsinst.a, b, d) are 16 bits");

/* Where tile instruction t reads operand o from (fsinst.code's source),
 * and the row offset or input index that goes with it. */
static int stream_operand(fplan *P, fopnd o, int t, const int *slot_val, int keep,
                          int *urow, uint16_t *field)
{
    fstream *V = &P->v;
    switch (o.kind) {
    case K_IN:
        *field = o.idx;
        return 3;
    case K_UV:
        if (urow[o.idx] < 0) {
            urow[o.idx] = V->nurow;
            V->urow_uv[V->nurow++] = o.idx;
        }
        *field = (uint16_t)((P->ninst + urow[o.idx]) * SROW_UNITS);
        return 0;
    default: { /* K_SLOT: the value of the last instruction that wrote it */
        const int v = slot_val[o.idx];
        *field = (uint16_t)(v * SROW_UNITS);
        return v == t - 1 ? 1 : v == keep ? 2 : 0;
    }
    }
}

void fused_stream_compile(fplan *P)
{
    fstream *V = &P->v;
    if (P->nbc || P->out_uv >= 0 || P->ninst == 0)
        return; /* broadcast inputs are gathered by the tiles */
    int slot_val[FUSED_MAX_STMTS], urow[FUSED_MAX_UV], keep = -1;
    for (int j = 0; j < FUSED_MAX_UV; j++)
        urow[j] = -1;
    V->ninst = P->ninst;
    V->nurow = 0;
    for (int t = 0; t < P->ninst; t++) {
        const finst *F = &P->inst[t];
        fsinst *I = &V->inst[t];
        memset(I, 0, sizeof *I);
        I->f = *F;
        V->store[t] = 0;
        int nargs = 1;
        fused_op_ok(F->op, &nargs);
        const uint8_t code = op_code(F->op);
        if (code == FS_OP_EXEC)
            return; /* see the file's top comment */
        const fopnd o[2] = {F->a, nargs > 1 ? F->b : F->a};
        int src[2];
        uint16_t field[2];
        for (int j = 0; j < 2; j++) {
            src[j] = stream_operand(P, o[j], t, slot_val, keep, urow, &field[j]);
            if (o[j].kind == K_SLOT && src[j] == 0) /* read from its row */
                V->store[slot_val[o[j].idx]] = 1;
        }
        I->a = field[0];
        I->b = field[1];
        I->d = (uint16_t)(t * SROW_UNITS);
        I->code = (uint16_t)(code * 16 + src[0] * 4 + src[1]);
        if (op_keeps(code))
            keep = t;
        if (F->dst >= 0)
            slot_val[F->dst] = t;
    }
    P->stream = 1;
}

#define U FUSED_STREAM_U
#define PRAGMA(x) _Pragma(#x)
#define UNROLL(n) PRAGMA(GCC unroll n)
#define SLD(off, u) _mm512_load_ps((const float *)(file + 64 * (size_t)(off)) + 16 * (u))
#define SSRC0(r, u) SLD(I->r, u)
#define SSRC1(r, u) acc[u]
#define SSRC2(r, u) acc2[u]
#define SSRC3(r, u) _mm512_loadu_ps(in[I->r] + i + 16 * (u))

#define SCASE(OP, EXPR, KEEP, SA, SB)                                      \
    case FS_OP_##OP * 16 + SA * 4 + SB:                                    \
        UNROLL(FUSED_STREAM_U) for (int u = 0; u < U; u++)                 \
        {                                                                  \
            __m512 x = SSRC##SA(a, u), y = SSRC##SB(b, u);                 \
            const float p0 = I->f.p0, p1 = I->f.p1;                        \
            (void)y, (void)p0, (void)p1;                                   \
            acc[u] = (EXPR);                                               \
            if (KEEP)                                                      \
                acc2[u] = acc[u];                                          \
        }                                                                  \
        break;
#define SCASES(OP, N, EXPR, KEEP) SCASES_##N(OP, EXPR, KEEP)
#define SCASES_2(OP, EXPR, KEEP)                                           \
    SCASE(OP, EXPR, KEEP, 0, 0) SCASE(OP, EXPR, KEEP, 0, 1) SCASE(OP, EXPR, KEEP, 0, 2) \
    SCASE(OP, EXPR, KEEP, 0, 3) SCASE(OP, EXPR, KEEP, 1, 0) SCASE(OP, EXPR, KEEP, 1, 1) \
    SCASE(OP, EXPR, KEEP, 1, 2) SCASE(OP, EXPR, KEEP, 1, 3) SCASE(OP, EXPR, KEEP, 2, 0) \
    SCASE(OP, EXPR, KEEP, 2, 1) SCASE(OP, EXPR, KEEP, 2, 2) SCASE(OP, EXPR, KEEP, 2, 3) \
    SCASE(OP, EXPR, KEEP, 3, 0) SCASE(OP, EXPR, KEEP, 3, 1) SCASE(OP, EXPR, KEEP, 3, 2) \
    SCASE(OP, EXPR, KEEP, 3, 3)
#define SCASES_1(OP, EXPR, KEEP)                                           \
    SCASE(OP, EXPR, KEEP, 0, 0) SCASE(OP, EXPR, KEEP, 1, 1) SCASE(OP, EXPR, KEEP, 2, 2) \
    SCASE(OP, EXPR, KEEP, 3, 3)

/* Output elements [i, end), a multiple of FUSED_STREAM_W. */
static void stream_steps(const fstream *V, const float *const *in, float *out, char *file,
                         int64_t i, int64_t end)
{
    __m512 acc[U], acc2[U];
    for (int u = 0; u < U; u++)
        acc[u] = acc2[u] = ZERO;
    for (; i < end; i += FUSED_STREAM_W) {
        for (int t = 0; t < V->ninst; t++) {
            const fsinst *I = &V->inst[t];
            switch (I->code) {
#define EWC(...) INLINE_OP(SCASES, __VA_ARGS__)
#include "ew_cpu_rows.h"
#undef EWC
            default:
                __builtin_unreachable(); /* fused_stream_compile makes no other code */
            }
            if (V->store[t])
                for (int u = 0; u < U; u++)
                    _mm512_store_ps((float *)(file + 64 * (size_t)I->d) + 16 * u, acc[u]);
        }
        for (int u = 0; u < U; u++)
            _mm512_storeu_ps(out + i + 16 * u, acc[u]);
    }
}

/* The last n % FUSED_STREAM_W elements from i0: the full inputs copied
 * into zero-padded steps, the output copied out (also right in place). */
static void stream_tail(const fplan *P, const float *const *in, float *out, char *file,
                        int64_t i0)
{
    _Alignas(64) float tin[FUSED_MAX_INPUTS][FUSED_STREAM_W], tout[FUSED_STREAM_W];
    const float *tp[FUSED_MAX_INPUTS] = {0}; /* only full inputs are read in place */
    const size_t len = (size_t)(P->n - i0);
    for (int j = 0; j < P->nfull; j++) {
        const int k = P->full_in[j];
        memset(tin[j], 0, sizeof tin[j]);
        memcpy(tin[j], in[k] + i0, len * sizeof(float));
        tp[k] = tin[j];
    }
    stream_steps(&P->v, tp, tout, file, 0, FUSED_STREAM_W);
    memcpy(out + i0, tout, len * sizeof(float));
}

/* fused_stream_run with the plan's rows in file. */
static void stream_run_in(const fplan *P, const float *const *in, float *out, const float *uv,
                          int64_t s0, int64_t s1, float (*file)[FUSED_STREAM_W])
{
    const fstream *V = &P->v;
    for (int j = 0; j < V->nurow; j++)
        for (int u = 0; u < U; u++)
            _mm512_store_ps(file[V->ninst + j] + 16 * u, _mm512_set1_ps(uv[V->urow_uv[j]]));
    const int64_t whole = P->n / FUSED_STREAM_W, e = s1 < whole ? s1 : whole;
    if (s0 < e)
        stream_steps(V, in, out, (char *)file, s0 * FUSED_STREAM_W, e * FUSED_STREAM_W);
    if (s1 > whole && P->n > whole * FUSED_STREAM_W)
        stream_tail(P, in, out, (char *)file, whole * FUSED_STREAM_W);
}

/*
 * The rows live on the stack, sized by tier: 8 KiB for a program of up
 * to 16 rows (instructions plus uniform values, as most are), 24 KiB up
 * to 48, and the 96 KiB that the largest program can need only when it
 * does, so a caller's thread with a small stack pays for long programs
 * alone.
 */
#define STREAM_TIER(name, rows)                                                           \
    static __attribute__((noinline)) void name(const fplan *P, const float *const *in,  \
                                               float *out, const float *uv, int64_t s0,  \
                                               int64_t s1)                               \
    {                                                                                     \
        _Alignas(64) float file[rows][FUSED_STREAM_W];                                    \
        stream_run_in(P, in, out, uv, s0, s1, file);                                      \
    }
STREAM_TIER(stream_run_16, 16)
STREAM_TIER(stream_run_48, 48)
STREAM_TIER(stream_run_all, 3 * FUSED_MAX_STMTS)

void fused_stream_run(const fplan *P, const float *const *in, float *out, const float *uv,
                      int64_t s0, int64_t s1)
{
    const int rows = P->v.ninst + P->v.nurow;
    (rows <= 16 ? stream_run_16 : rows <= 48 ? stream_run_48 : stream_run_all)(P, in, out, uv,
                                                                                s0, s1);
}

#else

/* Never called: FUSED_SMALL_N is 0 and fplan.stream never set without
 * AVX-512. */
void fused_small_compile(fplan *P, const fused_prog *p, const eager_kargs *a)
{
    (void)P, (void)p, (void)a;
}

void fused_small_run(const fplan *P, const eager_kargs *a)
{
    (void)P, (void)a;
}

void fused_stream_compile(fplan *P)
{
    (void)P;
}

void fused_stream_run(const fplan *P, const float *const *in, float *out, const float *uv,
                      int64_t s0, int64_t s1)
{
    (void)P, (void)in, (void)out, (void)uv, (void)s0, (void)s1;
}

#endif
