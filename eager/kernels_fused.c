/*
 * kernels_fused.c - the CPU kernel of `fused`: an elementwise
 * micro-program (graph/fused_prog.h) compiled into tile instructions and
 * run by one of three paths (the plan they share is in fused_plan.h):
 *   - outputs of at most FUSED_SMALL_N (16) elements: the small register
 *     path (kernels_fused_reg.c: one AVX-512 vector per value);
 *   - larger outputs with only full-size and scalar inputs and ops that
 *     have an inline AVX-512 form: the streaming path, which runs the
 *     tile instructions 128 elements at a time with values forwarded in
 *     registers (kernels_fused_reg.c; ~12% faster than the tiles on the
 *     benchmark chain at 4M elements);
 *   - the rest (broadcast inputs; the ops without an AVX-512 form in
 *     eager/ew_cpu.def: log, erf, gelu, silu, softplus, pow; builds without
 *     AVX-512): tile by tile, below.  The loop of each op is its tile
 *     form in eager/ew_cpu.def.
 *
 * Compilation (once per replay step, kept in eager_kargs.state; per call
 * in eager) turns the program into two instruction lists:
 *   - uniform instructions, whose operands are all immediates, 1-element
 *     inputs or other uniform results: run once per call on scalars;
 *   - tile instructions, run over each tile of T output elements, each a
 *     plain vectorizable loop from operand buffers to a register slot.
 * Statements the output does not depend on are dropped.  Register slots
 * are reused as soon as a value dies (a statement may write over its own
 * operand: every loop reads element i before writing element i), so a
 * 7-statement chain needs 2 or 3 slots.
 *
 * Inputs are classified by numel: full (the output's numel) are read in
 * place at the tile's offset; 1 element is a scalar; anything else is a
 * general NumPy broadcast and is gathered into a tile buffer per tile
 * through its collapsed strides (runs copied or filled, an odometer over
 * the outer dims), so every broadcast shape infer accepts is correct.
 *
 * Tile size: the tile's buffers (slots + gathered inputs) are kept within
 * TILE_L1_FLOATS (16 KB: half an L1D, the rest is left to the input and
 * output streams), up to TILE_MAX elements: long enough that the
 * per-instruction loop overhead and the switch are amortized (at 64 the
 * loop overhead shows), short enough that intermediates never leave L1.
 * Measured on tanh(x sigmoid(x) + 0.5 x) 2 - 1 over 4M floats, one
 * thread (2 slots; by tiles, before the streaming path took such
 * chains): 256 and 512 were best and equal within noise, 1024
 * about 10% slower, 2048 and up 20-40% slower.
 *
 * In place: the output may be the buffer of a full-size input (the replay
 * planner does that for elementwise ops).  Only the last instruction
 * writes the output, at the tile's own offset, after every read of that
 * tile's inputs, and element by element; tiles are disjoint.  The
 * streaming path likewise writes each step's output after its last read.
 *
 * Numerics are those of the single-op kernels (eager/kernels_unary.c,
 * kernels_binary.c): the same vmath.h functions and expressions, so a
 * fused chain gives the same bits as the unfused one, except pow with a
 * general exponent, which uses libm's powf here (both are within 1 ulp).
 * exp, sigmoid and tanh, which dominate a chain's time, use vmath512.h's
 * explicit AVX-512 forms, which give vmath.h's bits with fewer
 * instructions (vscalefps).  When the data is not in cache,
 * prefetch_tile asks for the next tiles' lines ahead.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "../graph/alloc.h"
#include "../graph/fused_prog.h"
#include "fused_plan.h"
#include "kernel.h"
#include "vmath.h"
#include "vmath512.h"

enum {
    TILE_MAX = 512,
    TILE_MIN = 64,
    TILE_L1_FLOATS = 4096, /* also each thread's scratch: tile * buffers fits */
    TILE_PREFETCH = 2,     /* how many tiles ahead prefetch_tile asks for */
};

/* ---- the loops ---- */

/* pow: the exponents kernels_binary.c computes exactly, else powf. */
static void pow_loop(const float *a, const float *b, float *d, int64_t n, unsigned mode)
{
    if (!(mode & 2u) && (b[0] == 1.0f || b[0] == 2.0f || b[0] == -1.0f)) {
        const float y = b[0];
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            d[i] = y == 1.0f ? a[i] : y == 2.0f ? a[i] * a[i] : 1.0f / a[i];
        return;
    }
    int64_t sa = mode & 1u, sb = (mode >> 1) & 1u;
    for (int64_t i = 0; i < n; i++)
        d[i] = powf(a[i * sa], b[i * sb]);
}

/* One unary loop: d[i] = EXPR of x = a[i]. */
#define UN(EXPR)                                                           \
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                    \
    {                                                                      \
        float x = a[i];                                                    \
        d[i] = (EXPR);                                                     \
    }

/* Three loops: both operands advance, b repeats, a repeats. */
#define BI(EXPR)                                                           \
    if (mode == 3u) {                                                      \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                \
        {                                                                  \
            float x = a[i], y = b[i];                                      \
            d[i] = (EXPR);                                                 \
        }                                                                  \
    } else if (mode == 1u) {                                               \
        const float y = b[0];                                              \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                \
        {                                                                  \
            float x = a[i];                                                \
            d[i] = (EXPR);                                                 \
        }                                                                  \
    } else {                                                               \
        const float x = a[0];                                              \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                \
        {                                                                  \
            float y = b[i];                                                \
            d[i] = (EXPR);                                                 \
        }                                                                  \
    }

/* The tile forms of ew_cpu.def, each given (nargs, scalar, vec). */
#define TILE_SIMD(N, S, V) TILE_SIMD##N(S)
#define TILE_SIMD1(S) UN(S)
#define TILE_SIMD2(S) BI(S)
#define TILE_LOOP(STMT) STMT; TILE_IGNORE_
#define TILE_IGNORE_(N, S, V)
#if defined(VM512)
/* The AVX-512 form (vmath512.h: vmath.h's bits), with a masked tail
 * instead of a scalar epilogue. */
#define TILE_VEC(N, S, V)                                                  \
    {                                                                      \
        int64_t i = 0;                                                     \
        for (; i + 16 <= n; i += 16) {                                     \
            __m512 x = _mm512_loadu_ps(a + i);                             \
            _mm512_storeu_ps(d + i, V);                                    \
        }                                                                  \
        if (i < n) {                                                       \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);               \
            __m512 x = _mm512_maskz_loadu_ps(m, a + i);                    \
            _mm512_mask_storeu_ps(d + i, m, V);                            \
        }                                                                  \
    }
#else
#define TILE_VEC(N, S, V) TILE_SIMD(N, S, V)
#endif

/*
 * d[0..n) = op(a, b).  d may be a or b (not restrict: `omp simd` states
 * there is no loop-carried dependence, which holds for d == a).  Unary
 * operands always advance here; uniform instructions run with n = 1.
 * One case per row of graph/ew_ops.def, its tile form (ew_cpu.def).
 */
void fused_exec(const finst *I, const float *a, const float *b, float *d, int64_t n)
{
    const unsigned mode = I->mode;
    const float p0 = I->p0, p1 = I->p1;
    (void)p0;
    (void)p1;
    switch (I->op) {
#define EWC(OP, N, COST, S, TILE, INL, VEC, EAGER)                         \
    case GRAPH_OP_##OP:                                                    \
        TILE_##TILE(N, S, VEC) break;
#include "ew_cpu_rows.h"
#undef EWC
    default:
        break; /* fused_op_ok admits only the ops above */
    }
}

/* ---- compiling ---- */

/* Strides of input t over the output dims (0 where it broadcasts),
 * with size-1 output dims dropped and mergeable neighbours merged. */
void fused_make_bcast(const graph_type *t, const graph_type *out, fbcast *b)
{
    int64_t st[GRAPH_MAX_DIMS], s = 1;
    int off = out->ndim - t->ndim;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int di = d - off;
        st[d] = di >= 0 && t->dim[di] != 1 ? s : 0;
        if (di >= 0)
            s *= t->dim[di];
    }
    b->nd = 0;
    for (int d = 0; d < out->ndim; d++) {
        if (out->dim[d] == 1)
            continue;
        if (b->nd && b->stride[b->nd - 1] == st[d] * out->dim[d]) {
            b->dim[b->nd - 1] *= out->dim[d];
            b->stride[b->nd - 1] = st[d];
        } else {
            b->dim[b->nd] = out->dim[d];
            b->stride[b->nd++] = st[d];
        }
    }
    if (!b->nd) {
        b->dim[0] = 1;
        b->stride[0] = 0;
        b->nd = 1;
    }
}

/* How each statement's value is reached while compiling. */
typedef struct cval {
    uint8_t needed, uniform;
    fopnd where;   /* K_UV for uniform values, K_SLOT otherwise */
    int last_use;  /* index into the tile list, -1 if none */
} cval;

/* Where an operand is read from; *u = 1 if it is uniform. */
static fopnd resolve(fplan *P, const cval *cv, const uint8_t *in_kind,
                     const uint8_t *in_idx, const fused_arg *arg, int *u)
{
    switch (arg->kind) {
    case FUSED_ARG_REG:
        *u = cv[arg->index].uniform;
        return cv[arg->index].where;
    case FUSED_ARG_INPUT: {
        fopnd o = {in_kind[arg->index], in_idx[arg->index]};
        *u = o.kind == K_UV;
        return o;
    }
    default:
        P->uv[P->nuv] = arg->imm;
        *u = 1;
        return (fopnd){K_UV, (uint8_t)P->nuv++};
    }
}

/* Classifies the inputs: full, scalar (a uv slot) or broadcast. */
static void classify_inputs(fplan *P, const eager_kargs *a, int64_t n, uint8_t *in_kind,
                            uint8_t *in_idx)
{
    for (int k = 0; k < a->nin; k++) {
        int64_t m = graph_type_numel(&a->in_type[k]);
        if (m == 1) {
            in_kind[k] = K_UV;
            in_idx[k] = (uint8_t)P->nuv;
            P->scalar_in[P->nscalar] = (uint8_t)k;
            P->scalar_uv[P->nscalar++] = (uint8_t)P->nuv++;
        } else if (m == n) {
            in_kind[k] = K_IN;
            in_idx[k] = (uint8_t)k;
            P->full_in[P->nfull++] = (uint8_t)k;
        } else {
            in_kind[k] = K_BC;
            in_idx[k] = (uint8_t)P->nbc;
            P->bc_in[P->nbc] = (uint8_t)k;
            fused_make_bcast(&a->in_type[k], a->out_type, &P->bc[P->nbc++]);
        }
    }
}

/* Marks what the output depends on. */
static void mark_needed(const fused_prog *p, cval *cv)
{
    cv[p->nstmts - 1].needed = 1;
    for (int k = p->nstmts - 1; k >= 0; k--)
        for (int j = 0; cv[k].needed && j < p->stmt[k].nargs; j++)
            if (p->stmt[k].arg[j].kind == FUSED_ARG_REG)
                cv[p->stmt[k].arg[j].index].needed = 1;
}

/* Gives each tile instruction's result a slot, reusing dead ones. */
static void assign_slots(fplan *P, const fused_prog *p, cval *cv, const int *stmt_of)
{
    int free_at[FUSED_MAX_STMTS]; /* slot -> 1 if free */
    for (int s = 0; s < FUSED_MAX_STMTS; s++)
        free_at[s] = 1;
    for (int t = 0; t < P->ninst; t++) {
        finst *I = &P->inst[t];
        const fused_stmt *st = &p->stmt[stmt_of[t]];
        for (int j = 0; j < st->nargs; j++) {
            const fused_arg *arg = &st->arg[j];
            if (arg->kind == FUSED_ARG_REG && !cv[arg->index].uniform &&
                cv[arg->index].last_use == t)
                free_at[cv[arg->index].where.idx] = 1;
        }
        if (t == P->ninst - 1) {
            I->dst = -1;
            break;
        }
        int s = 0;
        while (!free_at[s])
            s++;
        free_at[s] = 0;
        I->dst = (int16_t)s;
        cv[stmt_of[t]].where = (fopnd){K_SLOT, (uint8_t)s};
        if (s + 1 > P->nslots)
            P->nslots = s + 1;
    }
}

/* Ops whose loops compute for a while per element (the rest are one or
 * two instructions per vector and wait on their loads and stores). */
static int heavy_op(graph_op op) { return fused_op_cost(op) == FUSED_COST_HEAVY; }

/*
 * The order statements are compiled in: a topological order of the
 * program that, among the statements whose operands are ready, takes a
 * heavy one (heavy_op) first, else the first in program order.  A tile
 * reads its input lines from L2 or memory the first time an instruction
 * touches them; when that instruction is a light loop (mul(i0, 0.5)),
 * its loads wait with little to overlap them, while a heavy loop hides
 * them under its arithmetic.  Measured on tanh(x sigmoid(x) + 0.5 x) 2 - 1
 * at 64K elements (L2), one thread: 0.98 -> 0.89 ns/element.  The ops
 * and their operands are unchanged, so the results are the same bits.
 * Statements the output does not need keep their place (compile skips
 * them).
 */
static void schedule(const fused_prog *p, const cval *cv, int *order)
{
    uint8_t done[FUSED_MAX_STMTS] = {0};
    for (int n = 0; n < p->nstmts; n++) {
        int pick = -1;
        for (int k = 0; k < p->nstmts; k++) {
            if (done[k] || !cv[k].needed)
                continue;
            int ready = 1;
            for (int j = 0; j < p->stmt[k].nargs; j++)
                if (p->stmt[k].arg[j].kind == FUSED_ARG_REG && !done[p->stmt[k].arg[j].index])
                    ready = 0;
            if (ready && (pick < 0 || (heavy_op(p->stmt[k].op) && !heavy_op(p->stmt[pick].op))))
                pick = k;
        }
        if (pick < 0) /* only unneeded statements left: program order */
            for (int k = 0; k < p->nstmts && pick < 0; k++)
                if (!done[k])
                    pick = k;
        if (pick < 0)
            break; /* not reached: n < nstmts statements are done */
        order[n] = pick;
        done[pick] = 1;
    }
}

/*
 * x * 2 -> x + x, exactly (both round 2x alike, overflow, NaN and signed
 * zeros included): a vector add runs on the FP adders, beside the FMA
 * units that the rest of a transcendental-heavy program keeps busy (the
 * `chain` benchmark's tanh(...) * 2 - 1).
 */
static void strength_reduce(fused_prog *p)
{
    for (int k = 0; k < p->nstmts; k++) {
        fused_stmt *st = &p->stmt[k];
        if (st->op != GRAPH_OP_mul || st->nargs != 2)
            continue;
        for (int j = 0; j < 2; j++)
            if (st->arg[j].kind == FUSED_ARG_IMM && st->arg[j].imm == 2.0f &&
                st->arg[1 - j].kind != FUSED_ARG_IMM) {
                st->op = GRAPH_OP_add;
                st->arg[j] = st->arg[1 - j];
                break;
            }
    }
}

/* Builds P for the kernel's types; TG_OK or an error in a->err. */
static tg_status compile(const eager_kargs *a, fplan *P)
{
    fused_prog p;
    char msg[256];
    memset(P, 0, sizeof *P);
    P->out_uv = -1;
    if (fused_prog_parse(((const graph_fused_attrs *)a->attrs)->prog.s, a->nin, &p, msg,
                         sizeof msg) != TG_OK)
        return eager_kernel_fail(a, TG_ERR_ARG, "%s", msg);
    strength_reduce(&p);
    int64_t n = graph_type_numel(a->out_type);
    P->n = n;
    if (n <= FUSED_SMALL_N) {
        fused_small_compile(P, &p, a);
        return TG_OK;
    }
    uint8_t in_kind[FUSED_MAX_INPUTS], in_idx[FUSED_MAX_INPUTS];
    classify_inputs(P, a, n, in_kind, in_idx);
    cval cv[FUSED_MAX_STMTS];
    memset(cv, 0, sizeof cv);
    mark_needed(&p, cv);
    int stmt_of[FUSED_MAX_STMTS], order[FUSED_MAX_STMTS];
    schedule(&p, cv, order);
    for (int o = 0; o < p.nstmts; o++) {
        const int k = order[o];
        const fused_stmt *st = &p.stmt[k];
        cv[k].last_use = -1;
        if (!cv[k].needed)
            continue;
        finst I = {st->op, 0, 0, {K_UV, 0}, {K_UV, 0}, st->attr[0], st->attr[1]};
        int ua = 1, ub = 1;
        I.a = resolve(P, cv, in_kind, in_idx, &st->arg[0], &ua);
        if (st->nargs > 1)
            I.b = resolve(P, cv, in_kind, in_idx, &st->arg[1], &ub);
        cv[k].uniform = (uint8_t)(ua && ub);
        if (cv[k].uniform) {
            I.mode = 3; /* n = 1 over uv slots */
            I.dst = (int16_t)P->nuv;
            cv[k].where = (fopnd){K_UV, (uint8_t)P->nuv++};
            P->uni[P->nuni++] = I;
            continue;
        }
        I.mode = (uint8_t)((ua ? 0u : 1u) | (st->nargs > 1 && !ub ? 2u : 0u));
        for (int j = 0; j < st->nargs; j++)
            if (st->arg[j].kind == FUSED_ARG_REG && !cv[st->arg[j].index].uniform)
                cv[st->arg[j].index].last_use = P->ninst;
        stmt_of[P->ninst] = k;
        P->inst[P->ninst++] = I;
    }
    if (cv[p.nstmts - 1].uniform)
        P->out_uv = cv[p.nstmts - 1].where.idx;
    /* Slots are decided after last uses are known; the operands naming
     * earlier results are patched from cv as slots are assigned. */
    assign_slots(P, &p, cv, stmt_of);
    for (int t = 0; t < P->ninst; t++) {
        const fused_stmt *st = &p.stmt[stmt_of[t]];
        for (int j = 0; j < st->nargs; j++)
            if (st->arg[j].kind == FUSED_ARG_REG && !cv[st->arg[j].index].uniform)
                *(j ? &P->inst[t].b : &P->inst[t].a) = cv[st->arg[j].index].where;
    }
    int nbuf = P->nslots + P->nbc;
    int64_t tile = nbuf ? TILE_L1_FLOATS / nbuf : TILE_MAX;
    tile = tile > TILE_MAX ? TILE_MAX : tile < TILE_MIN ? TILE_MIN : tile & ~(int64_t)15;
    if (tile > n)
        tile = (n + 15) & ~(int64_t)15;
    P->tile = tile;
    fused_stream_compile(P);
    return TG_OK;
}

/* ---- running ---- */

/* Copies or repeats a broadcast input's elements for output [t0, t0+len). */
void fused_gather(const float *src, const fbcast *b, int64_t t0, int64_t len, float *dst)
{
    const int nd = b->nd;
    int64_t idx[GRAPH_MAX_DIMS], rem = t0, off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % b->dim[d];
        rem /= b->dim[d];
        off += idx[d] * b->stride[d];
    }
    /* After collapsing, the inner stride is 1 (the input's own inner dim)
     * or 0 (the inner dims broadcast). */
    const int64_t inner = b->dim[nd - 1], s = b->stride[nd - 1];
    while (len > 0) {
        int64_t run = inner - idx[nd - 1];
        run = run < len ? run : len;
        if (s) {
            memcpy(dst, src + off, (size_t)run * sizeof *dst);
        } else {
            const float v = src[off];
            for (int64_t k = 0; k < run; k++)
                dst[k] = v;
        }
        dst += run;
        len -= run;
        idx[nd - 1] += run;
        off += run * s;
        for (int d = nd - 1; d > 0 && idx[d] == b->dim[d]; d--) {
            off += b->stride[d - 1] - b->dim[d] * b->stride[d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

static const float *operand_ptr(fopnd o, const float *const *in, const float *uv,
                                float *scratch, int64_t tile, int nslots, int64_t t0)
{
    switch (o.kind) {
    case K_SLOT: return scratch + o.idx * tile;
    case K_IN: return in[o.idx] + t0;
    case K_BC: return scratch + (nslots + o.idx) * tile;
    default: return uv + o.idx;
    }
}

/*
 * Asks for the lines of output elements [p0, p0 + T) of every full input
 * (to read) and of the output (to write), TILE_PREFETCH tiles ahead.  A
 * tile reads its inputs in one burst and then computes for a while; the
 * hardware prefetcher does not run far enough ahead to cover that, so a
 * chain whose data is not in the caches otherwise waits on memory at the
 * start of every tile.
 */
static void prefetch_tile(const fplan *P, const float *const *in, const float *out,
                          int64_t n, int64_t p0, int64_t T)
{
#if defined(__GNUC__)
    int64_t p1 = p0 + T < n ? p0 + T : n;
    for (int j = 0; j < P->nfull; j++)
        for (int64_t i = p0; i < p1; i += 16)
            __builtin_prefetch(in[P->full_in[j]] + i, 0, 3);
    for (int64_t i = p0; i < p1; i += 16)
        __builtin_prefetch(out + i, 1, 3);
#else
    (void)P, (void)in, (void)out, (void)n, (void)p0, (void)T;
#endif
}

/* Tiles [first, last) of the output, with this thread's own scratch. */
static void run_tiles(const fplan *P, const float *const *in, float *out, const float *uv,
                      int64_t n, int64_t first, int64_t last)
{
    _Alignas(64) float scratch[TILE_L1_FLOATS];
    const int64_t T = P->tile;
    for (int64_t t = first; t < last; t++) {
        int64_t t0 = t * T, len = n - t0 < T ? n - t0 : T;
        prefetch_tile(P, in, out, n, t0 + TILE_PREFETCH * T, T);
        for (int j = 0; j < P->nbc; j++)
            fused_gather(in[P->bc_in[j]], &P->bc[j], t0, len, scratch + (P->nslots + j) * T);
        for (int k = 0; k < P->ninst; k++) {
            const finst *I = &P->inst[k];
            const float *a = operand_ptr(I->a, in, uv, scratch, T, P->nslots, t0);
            const float *b = operand_ptr(I->b, in, uv, scratch, T, P->nslots, t0);
            float *d = I->dst < 0 ? out + t0 : scratch + I->dst * T;
            fused_exec(I, a, b, d, len);
        }
    }
}

/* Output chunks [first, last): steps of FUSED_STREAM_W elements on the
 * streaming path, else tiles. */
static void run_chunks(const fplan *P, const float *const *in, float *out, const float *uv,
                       int64_t n, int64_t first, int64_t last)
{
    if (P->stream)
        fused_stream_run(P, in, out, uv, first, last);
    else
        run_tiles(P, in, out, uv, n, first, last);
}

/* The whole output, its chunks split evenly among up to nt threads. */
static void run_split(const fplan *P, const float *const *in, float *out, const float *uv,
                      int64_t n, int nt)
{
    const int64_t w = P->stream ? FUSED_STREAM_W : P->tile;
    const int64_t nchunks = (n + w - 1) / w;
    if (nt <= 1 || nchunks < 2) {
        run_chunks(P, in, out, uv, n, 0, nchunks);
        return;
    }
    nt = nchunks < nt ? (int)nchunks : nt;
#pragma omp parallel num_threads(nt)
    {
        int64_t t = omp_get_thread_num(), tn = omp_get_num_threads();
        int64_t per = (nchunks + tn - 1) / tn, first = t * per;
        int64_t last = first + per < nchunks ? first + per : nchunks;
        if (first < last)
            run_chunks(P, in, out, uv, n, first, last);
    }
}

/* Runs a compiled plan: uniform part once, then the streaming path or
 * the tiles (threaded when large). */
static void run_plan(const fplan *P, const eager_kargs *a)
{
    const int64_t n = graph_type_numel(a->out_type);
    const float *const *in = (const float *const *)a->in;
    float *out = a->out[0];
    float uv[FUSED_MAX_UV];
    memcpy(uv, P->uv, sizeof(float) * (size_t)P->nuv);
    for (int j = 0; j < P->nscalar; j++)
        uv[P->scalar_uv[j]] = in[P->scalar_in[j]][0];
    for (int k = 0; k < P->nuni; k++) {
        const finst *I = &P->uni[k];
        fused_exec(I, uv + I->a.idx, uv + I->b.idx, uv + I->dst, 1);
    }
    int nt = n >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (P->out_uv >= 0) {
        const float v = uv[P->out_uv];
#pragma omp parallel for simd num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++)
            out[i] = v;
        return;
    }
    run_split(P, in, out, uv, n, nt);
}

static void plan_free(eager_kstate *s)
{
    tg_free(s);
}

tg_status eager_kernel_fused(const eager_kargs *a)
{
    if (graph_type_numel(a->out_type) == 0)
        return TG_OK;
    if (a->state && *a->state) {
        const fplan *P = (const fplan *)*a->state;
        if (P->small)
            fused_small_run(P, a);
        else
            run_plan(P, a);
        return TG_OK;
    }
    fplan local, *P = &local;
    if (a->state) { /* a slot to keep it in: compile once */
        P = tg_malloc(sizeof *P);
        if (!P)
            return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for the compiled program");
    }
    tg_status st = compile(a, P);
    if (st != TG_OK) {
        if (P != &local)
            tg_free(P);
        return st;
    }
    if (P != &local) {
        P->base.free = plan_free;
        *a->state = &P->base;
    }
    if (P->small)
        fused_small_run(P, a);
    else
        run_plan(P, a);
    return TG_OK;
}
