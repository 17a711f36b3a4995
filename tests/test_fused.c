/*
 * test_fused.c - the `fused` op: its micro-program (parser, validator,
 * printer) and its CPU kernel, against naive double-precision evaluation
 * of the same expressions written by hand here (not through the parser).
 *
 * Covers every op a program may use (at sizes run by both kernel paths:
 * the register path up to 16 elements, the tile path beyond, checked to
 * give the same bits as each other and as the unfused ops on special
 * values), immediates on either side,
 * attributes with and without defaults, full / scalar / row / column /
 * general broadcast inputs (over many tiles and threads), 0-d and
 * zero-sized tensors, uniform outputs, dead statements, the 32-statement
 * and 16-input limits, the kernel run in place (output == input buffer)
 * and with a state slot, and every error with its message and call site.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/fused_plan.h"
#include "eager/kernel.h"
#include "graph/fused_prog.h"

static graph_str str_of(const char *s)
{
    graph_str g;
    memset(&g, 0, sizeof g);
    size_t n = strlen(s);
    memcpy(g.s, s, n < sizeof g.s - 1 ? n : sizeof g.s - 1); /* truncated if longer */
    return g;
}

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* ---- a naive evaluator: out[i] = ref(values of each input at i) ---- */

typedef double (*ref_fn)(const double *v);

/* Flat index into input t of output element i (NumPy broadcasting). */
static int64_t bcast_index(const graph_type *t, const graph_type *out, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t coord = i % out->dim[d];
        i /= out->dim[d];
        int di = d - (out->ndim - t->ndim);
        if (di < 0)
            continue;
        if (t->dim[di] != 1)
            idx += coord * stride;
        stride *= t->dim[di];
    }
    return idx;
}

/*
 * Runs prog on seeded inputs of the given shapes (values in [lo, hi)) and
 * compares with ref element by element: |got - want| <= tol (1 + |want|).
 */
static void check_prog(int line, const char *prog, int nin, const graph_ints *shapes,
                       float lo, float hi, ref_fn ref, double tol)
{
    eager_pool_push();
    eager_tensor *in[FUSED_MAX_INPUTS + 1];
    for (int k = 0; k < nin; k++)
        in[k] = eager_rand_uniform(shapes[k], 100 + (uint64_t)k, lo, hi);
    eager_tensor *y = eager_fused(nin, in, str_of(prog));
    CHECK_MSG(y != NULL, "line %d: %s: %s", line, prog, eager_error());
    if (y) {
        const float *got = eager_peek(y);
        int64_t n = eager_numel(y), bad = -1;
        double want = 0;
        for (int64_t i = 0; i < n && bad < 0; i++) {
            double v[FUSED_MAX_INPUTS];
            for (int k = 0; k < nin; k++)
                v[k] = ((const float *)eager_peek(in[k]))[bcast_index(
                    eager_type(in[k]), eager_type(y), i)];
            want = ref(v);
            double g = got[i];
            int ok = isnan(want) ? isnan(g) : fabs(g - want) <= tol * (1 + fabs(want));
            if (!ok)
                bad = i;
        }
        CHECK_MSG(bad < 0, "line %d: %s: element %lld = %.9g, want %.9g", line, prog,
                  (long long)bad, bad >= 0 ? got[bad] : 0.0, want);
    }
    eager_clear_error();
    eager_pool_pop();
}

#define CHECK_PROG(prog, nin, shapes, lo, hi, ref, tol)                    \
    check_prog(__LINE__, prog, nin, shapes, lo, hi, ref, tol)

/* ---- every op ---- */

static double r_neg(const double *v) { return -v[0]; }
static double r_abs(const double *v) { return fabs(v[0]); }
static double r_sign(const double *v) { return v[0] > 0 ? 1 : v[0] < 0 ? -1 : 0; }
static double r_floor(const double *v) { return floor(v[0]); }
static double r_ceil(const double *v) { return ceil(v[0]); }
static double r_round(const double *v) { return nearbyint(v[0]); }
/* round of floor(4x) / 2: exact halves, which tie to even */
static double r_round_halves(const double *v) { return nearbyint(floor(4 * v[0]) * 0.5); }
static double r_exp(const double *v) { return exp(v[0]); }
static double r_log(const double *v) { return log(v[0]); }
static double r_sqrt(const double *v) { return sqrt(v[0]); }
static double r_rsqrt(const double *v) { return 1 / sqrt(v[0]); }
static double r_recip(const double *v) { return 1 / v[0]; }
static double r_relu(const double *v) { return v[0] > 0 ? v[0] : 0; }
static double r_leaky(const double *v) { return v[0] < 0 ? 0.2 * v[0] : v[0]; }
static double r_leaky_def(const double *v) { return v[0] < 0 ? 0.01 * v[0] : v[0]; }
static double r_sigmoid(const double *v) { return sig(v[0]); }
static double r_tanh(const double *v) { return tanh(v[0]); }
static double r_gelu(const double *v) { return 0.5 * v[0] * (1 + erf(v[0] / sqrt(2.0))); }
static double r_silu(const double *v) { return v[0] * sig(v[0]); }
static double r_erf(const double *v) { return erf(v[0]); }
static double r_clip(const double *v) { return fmin(fmax(v[0], -0.5), 0.75); }
static double r_clip_lo(const double *v) { return fmax(v[0], 0.25); }
static double r_add(const double *v) { return v[0] + v[1]; }
static double r_sub(const double *v) { return v[0] - v[1]; }
static double r_mul(const double *v) { return v[0] * v[1]; }
static double r_div(const double *v) { return v[0] / v[1]; }
static double r_pow(const double *v) { return pow(v[0], v[1]); }
static double r_max(const double *v) { return fmax(v[0], v[1]); }
static double r_min(const double *v) { return fmin(v[0], v[1]); }
static double r_rsub_imm(const double *v) { return 1.5 - v[0]; }
static double r_div_imm(const double *v) { return v[0] / -3.0; }
static double r_sq(const double *v) { return v[0] * v[0]; }
static double r_pow_half(const double *v) { return pow(v[0], 0.5); }
static double r_pow2x(const double *v) { return pow(2.0, v[0]); }
static double r_inv(const double *v) { return 1.0 / v[0]; }

/* Every op at sizes of both kernel paths: 1, 7 and 16 elements run in
 * registers (one AVX-512 vector), 17, 513 and 1000 by tiles (masked and
 * scalar tails, a partial last tile). */
static void test_ops(void)
{
    static const int64_t sizes[] = {1000, 16, 7, 1, 17, 513};
    static const struct {
        const char *prog;
        int nin;
        float lo, hi;
        ref_fn ref;
    } cases[] = {
        {"r0=neg(i0)", 1, -2, 2, r_neg},
        {"r0=abs(i0)", 1, -2, 2, r_abs},
        {"r0=sign(i0)", 1, -2, 2, r_sign},
        {"r0=floor(i0)", 1, -9, 9, r_floor},
        {"r0=ceil(i0)", 1, -9, 9, r_ceil},
        {"r0=round(i0)", 1, -9, 9, r_round},
        {"r0=mul(i0,4);r1=floor(r0);r2=mul(r1,0.5);r3=round(r2)", 1, -9, 9, r_round_halves},
        {"r0=exp(i0)", 1, -5, 5, r_exp},
        {"r0=log(i0)", 1, 0.01f, 10, r_log},
        {"r0=sqrt(i0)", 1, 0, 10, r_sqrt},
        {"r0=rsqrt(i0)", 1, 0.01f, 10, r_rsqrt},
        {"r0=reciprocal(i0)", 1, 0.1f, 3, r_recip},
        {"r0=relu(i0)", 1, -2, 2, r_relu},
        {"r0=leaky_relu(i0,0.2)", 1, -2, 2, r_leaky},
        {"r0=leaky_relu(i0)", 1, -2, 2, r_leaky_def},
        {"r0=sigmoid(i0)", 1, -8, 8, r_sigmoid},
        {"r0=tanh(i0)", 1, -4, 4, r_tanh},
        {"r0=gelu(i0)", 1, -4, 4, r_gelu},
        {"r0=silu(i0)", 1, -6, 6, r_silu},
        {"r0=erf(i0)", 1, -3, 3, r_erf},
        {"r0=clip(i0,-0.5,0.75)", 1, -2, 2, r_clip},
        {"r0=clip(i0,0.25)", 1, -2, 2, r_clip_lo},
        {"r0=add(i0,i1)", 2, -2, 2, r_add},
        {"r0=sub(i0,i1)", 2, -2, 2, r_sub},
        {"r0=mul(i0,i1)", 2, -2, 2, r_mul},
        {"r0=div(i0,i1)", 2, 0.5f, 2, r_div},
        {"r0=pow(i0,i1)", 2, 0.5f, 2, r_pow},
        {"r0=maximum(i0,i1)", 2, -2, 2, r_max},
        {"r0=minimum(i0,i1)", 2, -2, 2, r_min},
        {"r0=sub(1.5,i0)", 1, -2, 2, r_rsub_imm},
        {"r0=div(i0,-3)", 1, -2, 2, r_div_imm},
        {"r0=pow(i0,2)", 1, -2, 2, r_sq},
        {"r0=pow(i0,-1)", 1, 0.5f, 2, r_inv},
        {"r0=pow(i0,0.5)", 1, 0, 4, r_pow_half},
        {"r0=pow(2,i0)", 1, -3, 3, r_pow2x},
    };
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        graph_ints one[2] = {TG_SHAPE(sizes[z]), TG_SHAPE(sizes[z])};
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            check_prog(__LINE__, cases[k].prog, cases[k].nin, one, cases[k].lo, cases[k].hi,
                       cases[k].ref, 1e-5);
    }
}

/* NaN and signed zeros go through as in the single-op kernels. */
static void test_special_values(void)
{
    float x[6] = {NAN, -0.0f, 0.0f, -1.0f, 2.0f, INFINITY};
    float yv[6] = {1.0f, NAN, -1.0f, NAN, 3.0f, -INFINITY};
    eager_pool_push();
    eager_tensor *in[2] = {eager_from_data(GRAPH_F32, TG_SHAPE(6), x),
                           eager_from_data(GRAPH_F32, TG_SHAPE(6), yv)};
    const float *r = eager_peek(eager_fused(2, in, TG_STR("r0=maximum(i0,i1)")));
    CHECK(r && isnan(r[0]) && isnan(r[1]) && r[2] == 0.0f && isnan(r[3]) && r[4] == 3.0f &&
          r[5] == INFINITY);
    r = eager_peek(eager_fused(1, in, TG_STR("r0=relu(i0);r1=clip(r0,-1,1)")));
    CHECK(r && isnan(r[0]) && r[1] == 0.0f && !signbit(r[1]) && r[4] == 1.0f && r[5] == 1.0f);
    r = eager_peek(eager_fused(1, in, TG_STR("r0=neg(i0)")));
    CHECK(r && r[1] == 0.0f && !signbit(r[1]) && signbit(r[2]));
    r = eager_peek(eager_fused(1, in, TG_STR("r0=mul(i0,inf);r1=add(r0,-inf)")));
    CHECK(r && isnan(r[0]) && isnan(r[1]) && r[3] == -INFINITY && isnan(r[4]));
    r = eager_peek(eager_fused(1, in, TG_STR("r0=rsqrt(i0)")));
    CHECK(r && r[1] == -INFINITY && r[2] == INFINITY && isnan(r[3]) && r[5] == 0.0f);
    eager_pool_pop();
}

/* The benchmark chain: tanh(x sigmoid(x) + 0.5 x) * 2 - 1. */
#define CHAIN "r0=sigmoid(i0);r1=mul(i0,r0);r2=mul(0.5,i0);r3=add(r1,r2);r4=tanh(r3);" \
              "r5=mul(r4,2);r6=sub(r5,1)"

/* ---- the register path (<= 16 elements) and the tile path agree ---- */

/* 16 values that exercise every special case: NaN, signed zeros,
 * infinities, subnormals, overflow and underflow of exp, the switch
 * points of the approximations. */
static const float special16[16] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1e-40f, -1e-40f,
                                    FLT_MAX, -FLT_MAX, 0.3f, -0.3f, 2.5f, -7.0f, 90.0f,
                                    -105.0f, 0.55f};

static int same_bits(float a, float b)
{
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    return ua == ub || (isnan(a) && isnan(b));
}

/* prog over 16 lanes (x = special16 or its reverse for input 1) in one
 * vector (the register path), over 67 copies of them as full inputs (the
 * streaming path, or tiles for ops without an inline form) and, with 2
 * inputs, with input 1 a [16] row broadcast over the copies (tiles):
 * every copy gives the same bits.  With single != NULL, also the bits of
 * that unfused op. */
static void check_paths(int line, const char *prog, int nin, eager_tensor *single)
{
    enum { COPIES = 67 };
    float big[2][16 * COPIES], rev[16];
    for (int i = 0; i < 16; i++)
        rev[i] = special16[15 - i];
    for (int c = 0; c < COPIES; c++)
        for (int i = 0; i < 16; i++) {
            big[0][16 * c + i] = special16[i];
            big[1][16 * c + i] = rev[i];
        }
    eager_tensor *small_in[2] = {eager_from_data(GRAPH_F32, TG_SHAPE(16), special16),
                                 eager_from_data(GRAPH_F32, TG_SHAPE(16), rev)};
    eager_tensor *big_in[2] = {eager_from_data(GRAPH_F32, TG_SHAPE(16 * COPIES), big[0]),
                               eager_from_data(GRAPH_F32, TG_SHAPE(16 * COPIES), big[1])};
    eager_tensor *row_in[2] = {eager_from_data(GRAPH_F32, TG_SHAPE(COPIES, 16), big[0]),
                               small_in[1]};
    const float *s = eager_peek(eager_fused(nin, small_in, str_of(prog)));
    const float *b = eager_peek(eager_fused(nin, big_in, str_of(prog)));
    const float *t = nin == 2 ? eager_peek(eager_fused(nin, row_in, str_of(prog))) : s;
    const float *u = single ? eager_peek(single) : NULL;
    CHECK_MSG(s && b && t, "line %d: %s ran: %s", line, prog, eager_error());
    long diff = 0, difft = 0, diff1 = 0;
    for (int i = 0; s && b && t && i < 16 * COPIES; i++) {
        diff += !same_bits(s[i % 16], b[i]);
        difft += nin == 2 && !same_bits(s[i % 16], t[i]);
    }
    for (int i = 0; s && u && i < 16; i++)
        diff1 += !same_bits(s[i], u[i]);
    CHECK_MSG(diff == 0, "line %d: %s: register path and full inputs differ at %ld elements",
              line, prog, diff);
    CHECK_MSG(difft == 0, "line %d: %s: register path and tiles differ at %ld elements", line,
              prog, difft);
    CHECK_MSG(diff1 == 0, "line %d: %s: differs from the unfused op at %ld elements", line,
              prog, diff1);
    eager_clear_error();
}

static void test_paths(void)
{
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(16), special16);
    float rv[16];
    for (int i = 0; i < 16; i++)
        rv[i] = special16[15 - i];
    eager_tensor *y = eager_from_data(GRAPH_F32, TG_SHAPE(16), rv);
    static const char *const unary[] = {"neg", "abs", "sign", "floor", "ceil", "round",
                                        "exp", "log", "sqrt", "rsqrt", "reciprocal", "relu",
                                        "sigmoid", "tanh", "gelu", "silu", "erf"};
    eager_tensor *const single_u[] = {eager_neg(x), eager_abs(x), eager_sign(x),
                                      eager_floor(x), eager_ceil(x), eager_round(x),
                                      eager_exp(x), eager_log(x), eager_sqrt(x),
                                      eager_rsqrt(x), eager_reciprocal(x), eager_relu(x),
                                      eager_sigmoid(x), eager_tanh(x), eager_gelu(x),
                                      eager_silu(x), eager_erf(x)};
    char prog[64];
    for (size_t k = 0; k < sizeof unary / sizeof unary[0]; k++) {
        snprintf(prog, sizeof prog, "r0=%s(i0)", unary[k]);
        check_paths(__LINE__, prog, 1, single_u[k]);
        snprintf(prog, sizeof prog, "r0=%s(i0);r1=mul(r0,i1)", unary[k]); /* tiles too */
        check_paths(__LINE__, prog, 2, NULL);
    }
    static const char *const binary[] = {"add", "sub", "mul", "div", "maximum", "minimum",
                                         "pow"};
    eager_tensor *const single_b[] = {eager_add(x, y), eager_sub(x, y), eager_mul(x, y),
                                      eager_div(x, y), eager_maximum(x, y),
                                      eager_minimum(x, y), NULL};
    for (size_t k = 0; k < sizeof binary / sizeof binary[0]; k++) {
        snprintf(prog, sizeof prog, "r0=%s(i0,i1)", binary[k]);
        check_paths(__LINE__, prog, 2, single_b[k]);
        snprintf(prog, sizeof prog, "r0=%s(i1,i0)", binary[k]);
        check_paths(__LINE__, prog, 2, NULL);
    }
    check_paths(__LINE__, "r0=leaky_relu(i0,0.2)", 1, eager_leaky_relu(x, 0.2f));
    check_paths(__LINE__, "r0=clip(i0,-0.5,0.75)", 1, eager_clip(x, -0.5f, 0.75f));
    check_paths(__LINE__, "r0=clip(i0,0)", 1, NULL);
    /* pow with a uniform exponent takes the exact x*x / 1/x loops in both
     * paths; with a uniform base and exponent it is powf */
    check_paths(__LINE__, "r0=pow(i0,2)", 1, eager_mul(x, x));
    check_paths(__LINE__, "r0=pow(i0,-1)", 1, eager_reciprocal(x));
    check_paths(__LINE__, "r0=pow(i0,0.5)", 1, NULL);
    check_paths(__LINE__, "r0=pow(3,2);r1=pow(r0,0.5);r2=add(i0,r1)", 1, NULL);
    /* x * 2 runs as x + x (kernels_fused.c's strength_reduce): the bits
     * of a plain C multiply, overflow, NaN, signed zeros and subnormals
     * included, with the immediate on either side */
    float twice[16];
    for (int i = 0; i < 16; i++)
        twice[i] = special16[i] * 2.0f;
    eager_tensor *x2 = eager_from_data(GRAPH_F32, TG_SHAPE(16), twice);
    check_paths(__LINE__, "r0=mul(i0,2)", 1, x2);
    check_paths(__LINE__, "r0=mul(2,i0)", 1, x2);
    check_paths(__LINE__, "r0=mul(i0,2.5)", 1, eager_mul(x, eager_scalar(2.5)));
    check_paths(__LINE__, "r0=mul(2,2);r1=mul(r0,i0)", 1, eager_mul(x, eager_scalar(4)));
    /* the chain gives the bits of its ops run one by one */
    eager_tensor *sx = eager_add(eager_mul(x, eager_sigmoid(x)), eager_mul(eager_scalar(0.5), x));
    check_paths(__LINE__, CHAIN, 1,
                eager_sub(eager_mul(eager_tanh(sx), eager_scalar(2)), eager_scalar(1)));
    /* statements reordered by the register path's scheduler, an operand
     * read twice from the previous statement, dead statements */
    check_paths(__LINE__, "r0=mul(i0,1.01);r1=add(r0,0.01);r2=relu(r1);r3=sigmoid(i0);"
                          "r4=mul(i0,0.5);r5=sub(r2,r4);r6=add(r5,r3);r7=mul(r6,r6);"
                          "r8=exp(i1);r9=tanh(r7)", 2, NULL);
    eager_pool_pop();
}

/*
 * Random programs (seeded): every op, operands from the inputs, earlier
 * registers (mostly recent ones, so that results are consumed both right
 * away and a few statements later, as the register path's two registers
 * expect) and immediates.  Both paths must give the same bits.
 */
static uint64_t next_rand(uint64_t *s) /* SplitMix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static void test_random_paths(void)
{
    static const char *const ops[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt",
                                      "reciprocal", "relu", "sigmoid", "tanh", "gelu", "silu",
                                      "erf", "leaky_relu", "clip", "sign", "floor", "ceil",
                                      "round", "add", "sub", "mul", "div", "maximum",
                                      "minimum", "pow"};
    enum { NOPS = sizeof ops / sizeof ops[0], FIRST_BINARY = 19 };
    uint64_t st = 12345;
    eager_pool_push();
    /* the last 150 programs only use ops with an inline form (no log,
     * gelu, silu, erf, pow), which the streaming path runs */
    for (int trial = 0; trial < 300; trial++) {
        char prog[GRAPH_MAX_STR];
        int len = 0, nst = 4 + (int)(next_rand(&st) % 16);
        for (int k = 0; k < nst && len < (int)sizeof prog - 48; k++) {
            int op = (int)(next_rand(&st) % NOPS);
            while (trial >= 150 && (op == 3 || (op >= 10 && op <= 12) || op == NOPS - 1))
                op = (int)(next_rand(&st) % NOPS);
            char arg[2][24];
            for (int j = 0; j < 2; j++) {
                uint64_t r = next_rand(&st) % 10;
                if (k < 2 && j == 0)
                    snprintf(arg[j], sizeof arg[j], "i%d", k); /* both inputs read */
                else if (r < 2 || k == 0)
                    snprintf(arg[j], sizeof arg[j], "i%d", (int)(r % 2));
                else if (r < 4)
                    snprintf(arg[j], sizeof arg[j], "%.3g", (double)(next_rand(&st) % 7) - 2.5);
                else
                    snprintf(arg[j], sizeof arg[j], "r%d", k - 1 - (int)(r % 3 % k));
            }
            len += snprintf(prog + len, sizeof prog - (size_t)len, "%sr%d=%s(%s%s%s)",
                            k ? ";" : "", k, ops[op], arg[0], op >= FIRST_BINARY ? "," : "",
                            op >= FIRST_BINARY ? arg[1] : "");
        }
        check_paths(__LINE__, prog, 2, NULL);
    }
    eager_pool_pop();
}

/* ---- chains, broadcasting, shapes ---- */

/* tanh(x sigmoid(x) + 0.5 x) * 2 - 1: the benchmark chain. */
static double r_chain(const double *v)
{
    double x = v[0];
    return tanh(x * sig(x) + 0.5 * x) * 2 - 1;
}

/* ((a * b) + c - d) * e with everything broadcast. */
static double r_bcast(const double *v) { return (v[0] * v[1] + v[2] - v[3]) * v[4]; }
#define BCAST "r0=mul(i0,i1);r1=add(r0,i2);r2=sub(r1,i3);r3=mul(r2,i4)"

/* exp(2 s) + x: a uniform subexpression of a 0-d input. */
static double r_uniform_sub(const double *v) { return exp(v[1] * 2) + v[0]; }
static double r_uniform_out(const double *v) { return v[1] + 1; }
static double r_sum16(const double *v)
{
    double s = 0;
    for (int k = 0; k < 16; k++)
        s += v[k] * (k + 1);
    return s;
}

/* fused_prog_text_bound is at least the printed length: random programs
 * with floats of every length (random bit patterns), up to 64 statements
 * and the highest register and input numbers. */
static void text_bound_holds(void)
{
    uint32_t seed = 12345;
    int held = 0, tried = 0;
    for (int trial = 0; trial < 300; trial++) {
        char text[GRAPH_MAX_STR], cur[8] = "i0", out[8192];
        int n = 0;
        for (int k = 0; k < FUSED_MAX_STMTS; k++) {
            float f[2];
            for (int j = 0; j < 2; j++) {
                do {
                    seed = seed * 1664525u + 1013904223u;
                    memcpy(&f[j], &seed, sizeof f[j]);
                } while (!isfinite(f[j]));
            }
            char st[128];
            switch ((seed >> 8) % 3) {
            case 0: snprintf(st, sizeof st, "r%d=add(%s,%.9g)", k, cur, (double)f[0]); break;
            case 1:
                snprintf(st, sizeof st, "r%d=clip(%s,%.9g,%.9g)", k, cur,
                         (double)fminf(f[0], f[1]), (double)fmaxf(f[0], f[1]));
                break;
            default: snprintf(st, sizeof st, "r%d=mul(i15,%s)", k, cur); break;
            }
            if (n + (int)strlen(st) + 2 >= GRAPH_MAX_STR)
                break;
            n += snprintf(text + n, sizeof text - (size_t)n, "%s%s", k ? ";" : "", st);
            snprintf(cur, sizeof cur, "r%d", k);
        }
        fused_prog p;
        if (fused_prog_parse(text, -1, &p, NULL, 0) != TG_OK)
            continue;
        tried++;
        int len = fused_prog_print(&p, out, sizeof out);
        held += len > 0 && fused_prog_text_bound(&p) >= (size_t)len;
    }
    CHECK_MSG(tried >= 250 && held == tried, "bound held for %d of %d programs", held, tried);
}

/* FUSED_MAX_STMTS = 64 statements, 12 rounds of
 * (a, b) -> (a b + 0.25, tanh(a b + 0.25 - b/2)) then -(-(a b + 0)):
 * slots are reused all along. */
static void long_prog(char *buf, size_t len)
{
    char an[8] = "i0", bn[8] = "i1";
    int n = 0;
    for (int k = 0; k < 12; k++) {
        n += snprintf(buf + n, len - (size_t)n, "%sr%d=mul(%s,%s);r%d=add(r%d,0.25);"
                      "r%d=mul(%s,0.5);r%d=sub(r%d,r%d);r%d=tanh(r%d)",
                      k ? ";" : "", 5 * k, an, bn, 5 * k + 1, 5 * k, 5 * k + 2, bn,
                      5 * k + 3, 5 * k + 1, 5 * k + 2, 5 * k + 4, 5 * k + 3);
        snprintf(an, sizeof an, "r%d", 5 * k + 1);
        snprintf(bn, sizeof bn, "r%d", 5 * k + 4);
    }
    snprintf(buf + n, len - (size_t)n, ";r60=mul(%s,%s);r61=add(r60,0);r62=neg(r61);r63=neg(r62)",
             an, bn);
}

static double r_long(const double *v)
{
    double a = v[0], b = v[1];
    for (int k = 0; k < 12; k++) {
        double c = a * b;
        double a2 = c + 0.25;
        b = tanh(a2 - b * 0.5);
        a = a2;
    }
    return a * b;
}

/* 4 rounds of x = relu(1.01 x + 0.01) - 0.5 x + sigmoid(x): the `tiny`
 * benchmark's loop, which the register path reorders. */
#define TINY4                                                              \
    "r0=mul(i0,1.01);r1=add(r0,0.01);r2=relu(r1);r3=sigmoid(i0);r4=mul(i0,0.5);"        \
    "r5=sub(r2,r4);r6=add(r5,r3);r7=mul(r6,1.01);r8=add(r7,0.01);r9=relu(r8);"          \
    "r10=sigmoid(r6);r11=mul(r6,0.5);r12=sub(r9,r11);r13=add(r12,r10);r14=mul(r13,1.01);" \
    "r15=add(r14,0.01);r16=relu(r15);r17=sigmoid(r13);r18=mul(r13,0.5);r19=sub(r16,r18);" \
    "r20=add(r19,r17);r21=mul(r20,1.01);r22=add(r21,0.01);r23=relu(r22);r24=sigmoid(r20);" \
    "r25=mul(r20,0.5);r26=sub(r23,r25);r27=add(r26,r24)"

static double r_tiny4(const double *v)
{
    double x = v[0];
    for (int k = 0; k < 4; k++) {
        double a = 1.01 * x + 0.01;
        x = (a > 0 ? a : 0) - 0.5 * x + sig(x);
    }
    return x;
}

/* Light statements first, heavy ones later that only need inputs, a dead
 * statement in the middle and values alive across the heavy ones: the
 * tile path compiles the heavy ones first (kernels_fused.c: schedule). */
#define DAG "r0=mul(i0,2);r1=add(r0,i1);r2=exp(i1);r3=mul(r1,r2);r4=sub(i0,i1);" \
            "r5=tanh(r0);r6=sigmoid(r3);r7=add(r6,r5);r8=mul(r7,r1)"

static double r_dag(const double *v)
{
    double r0 = v[0] * 2, r1 = r0 + v[1];
    return (sig(r1 * exp(v[1])) + tanh(r0)) * r1;
}

/* tanh(x s - t) s + x with s, t scalars (uniform rows in the streaming
 * path), x full; and the same with t a column over x [n, 3] (tiles). */
#define SCAL "r0=mul(i0,i1);r1=sub(r0,i2);r2=tanh(r1);r3=mul(r2,i1);r4=add(r3,i0)"

static double r_scal(const double *v) { return tanh(v[0] * v[1] - v[2]) * v[1] + v[0]; }

/* Sizes around the register path's limit, the streaming path's steps of
 * 64 (a tail of 1..63 copied) and the tile boundaries (2 slots: tiles
 * of 512). */
static void test_sizes(void)
{
    static const int64_t sizes[] = {1,  2,   15,  16,  17,  31,  32,  33,  63,   64,  65,
                                    127, 128, 129, 511, 512, 513, 1023, 1025};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        graph_ints s1[1] = {TG_SHAPE(sizes[k])};
        CHECK_PROG(CHAIN, 1, s1, -4, 4, r_chain, 1e-5);
        CHECK_PROG(TINY4, 1, s1, -3, 3, r_tiny4, 1e-5);
        graph_ints s3[3] = {TG_SHAPE(sizes[k]), TG_NOINTS, TG_SHAPE(1)};
        CHECK_PROG(SCAL, 3, s3, -2, 2, r_scal, 1e-5);
        graph_ints r3[3] = {TG_SHAPE(sizes[k], 3), TG_SHAPE(1), TG_SHAPE(sizes[k], 1)};
        CHECK_PROG(SCAL, 3, r3, -2, 2, r_scal, 1e-5);
    }
    graph_ints d2[2] = {TG_SHAPE(1000), TG_SHAPE(1000)};
    CHECK_PROG(DAG, 2, d2, -2, 2, r_dag, 1e-5);
    graph_ints d5[2] = {TG_SHAPE(5), TG_SHAPE(5)};
    CHECK_PROG(DAG, 2, d5, -2, 2, r_dag, 1e-5);
    graph_ints s0[1] = {TG_NOINTS};
    CHECK_PROG(TINY4, 1, s0, -3, 3, r_tiny4, 1e-5);
    /* broadcasting into 16 and 15 elements (the register path gathers) */
    graph_ints b16[5] = {TG_SHAPE(2, 1, 4), TG_SHAPE(2, 1), TG_SHAPE(4), TG_NOINTS,
                         TG_SHAPE(1, 1, 1)};
    CHECK_PROG(BCAST, 5, b16, -2, 2, r_bcast, 1e-5);
    graph_ints b15[5] = {TG_SHAPE(3, 1), TG_SHAPE(5), TG_SHAPE(3, 5), TG_SHAPE(1), TG_NOINTS};
    CHECK_PROG(BCAST, 5, b15, -2, 2, r_bcast, 1e-5);
    graph_ints us[2] = {TG_SHAPE(10), TG_NOINTS};
    CHECK_PROG("r0=mul(i1,2);r1=exp(r0);r2=add(r1,i0)", 2, us, -1, 1, r_uniform_sub, 1e-5);
    CHECK_PROG("r0=exp(i0);r1=add(i1,1)", 2, us, -1, 1, r_uniform_out, 1e-6);
    /* +0 and -0 immediates are different values: -1 * 0 + -0 = -0, and
     * 0 + 0 = +0 */
    eager_pool_push();
    float m1[3] = {-1.0f, 2.0f, -0.0f};
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), m1);
    const float *r = eager_peek(eager_fused(1, &x, TG_STR("r0=mul(i0,0);r1=add(r0,-0)")));
    CHECK(r && r[0] == 0.0f && signbit(r[0]) && !signbit(r[1]) && signbit(r[2]));
    r = eager_peek(eager_fused(1, &x, TG_STR("r0=mul(i0,-0);r1=add(r0,0)")));
    CHECK(r && !signbit(r[0]) && !signbit(r[1]) && !signbit(r[2]));
    eager_pool_pop();
}

static void test_shapes(void)
{
    graph_ints s1[1] = {TG_SHAPE(5000)};
    CHECK_PROG(CHAIN, 1, s1, -4, 4, r_chain, 1e-5);
    eager_set_threads(2); /* several threads, many tiles, a partial last tile */
    graph_ints big[1] = {TG_SHAPE(100003)};
    CHECK_PROG(CHAIN, 1, big, -4, 4, r_chain, 1e-5);
    graph_ints b5[5] = {TG_SHAPE(3, 1, 5), TG_SHAPE(4, 1), TG_SHAPE(5), TG_NOINTS,
                        TG_SHAPE(1, 1, 1)};
    CHECK_PROG(BCAST, 5, b5, -2, 2, r_bcast, 1e-5);
    /* general broadcast over many tiles and threads: [300,1] x [1,257] */
    graph_ints g5[5] = {TG_SHAPE(300, 1), TG_SHAPE(1, 257), TG_SHAPE(257), TG_SHAPE(300, 257),
                        TG_SHAPE(2, 1, 1)};
    CHECK_PROG(BCAST, 5, g5, -2, 2, r_bcast, 1e-5);
    /* row [N,C] + [C] and column [N,1], C not a multiple of anything */
    graph_ints rc[5] = {TG_SHAPE(1000, 7), TG_SHAPE(7), TG_SHAPE(1000, 1), TG_SHAPE(1),
                        TG_SHAPE(1000, 7)};
    CHECK_PROG(BCAST, 5, rc, -2, 2, r_bcast, 1e-5);
    eager_set_threads(1);
    /* 0-d everything; 1 element; zero-sized */
    graph_ints z5[5] = {TG_NOINTS, TG_NOINTS, TG_NOINTS, TG_NOINTS, TG_NOINTS};
    CHECK_PROG(BCAST, 5, z5, -2, 2, r_bcast, 1e-5);
    graph_ints o5[5] = {TG_SHAPE(1), TG_NOINTS, TG_SHAPE(1, 1), TG_NOINTS, TG_NOINTS};
    CHECK_PROG(BCAST, 5, o5, -2, 2, r_bcast, 1e-5);
    graph_ints e5[5] = {TG_SHAPE(0, 3), TG_SHAPE(3), TG_NOINTS, TG_SHAPE(1, 3), TG_NOINTS};
    CHECK_PROG(BCAST, 5, e5, -2, 2, r_bcast, 1e-5);
    eager_pool_push();
    eager_tensor *ez[2] = {eager_zeros(GRAPH_F32, TG_SHAPE(0, 3)), eager_scalar(1)};
    eager_tensor *ey = eager_fused(2, ez, TG_STR("r0=add(i0,i1)"));
    CHECK(ey && eager_ndim(ey) == 2 && eager_dim(ey, 0) == 0 && eager_dim(ey, 1) == 3);
    eager_pool_pop();
    /* uniform parts: a scalar subexpression, an output that is all uniform
     * (the full-size input only feeds a dead statement) */
    graph_ints us[2] = {TG_SHAPE(300), TG_NOINTS};
    CHECK_PROG("r0=mul(i1,2);r1=exp(r0);r2=add(r1,i0)", 2, us, -1, 1, r_uniform_sub, 1e-5);
    CHECK_PROG("r0=exp(i0);r1=add(i1,1)", 2, us, -1, 1, r_uniform_out, 1e-6);
    /* 16 inputs; 32 statements */
    graph_ints s16[16];
    char prog[GRAPH_MAX_STR];
    int n = snprintf(prog, sizeof prog, "r0=mul(i0,1)");
    for (int k = 0; k < 16; k++) {
        s16[k] = k % 3 ? TG_SHAPE(40) : TG_SHAPE(1);
        if (k)
            n += snprintf(prog + n, sizeof prog - (size_t)n, ";r%d=mul(i%d,%d);r%d=add(r%d,r%d)",
                          2 * k - 1, k, k + 1, 2 * k, 2 * k - 2, 2 * k - 1);
    }
    CHECK_PROG(prog, 16, s16, -1, 1, r_sum16, 1e-5);
    for (int k = 0; k < 16; k++)
        s16[k] = k % 3 ? TG_SHAPE(2, 6) : k % 2 ? TG_SHAPE(6) : TG_SHAPE(1); /* 12 lanes */
    CHECK_PROG(prog, 16, s16, -1, 1, r_sum16, 1e-5);
    long_prog(prog, sizeof prog);
    fused_prog p;
    char err[256];
    CHECK(fused_prog_parse(prog, 2, &p, err, sizeof err) == TG_OK &&
          p.nstmts == FUSED_MAX_STMTS);
    graph_ints s2[2] = {TG_SHAPE(2000), TG_SHAPE(2000)}; /* the streaming path */
    CHECK_PROG(prog, 2, s2, -1, 1, r_long, 1e-5);
    graph_ints s2b[2] = {TG_SHAPE(100, 20), TG_SHAPE(20)}; /* the tiles */
    CHECK_PROG(prog, 2, s2b, -1, 1, r_long, 1e-5);
    graph_ints s2s[2] = {TG_SHAPE(4, 4), TG_SHAPE(4)}; /* the small path */
    CHECK_PROG(prog, 2, s2s, -1, 1, r_long, 1e-5);
}

/* ---- the program text ---- */

static void test_parse_print(void)
{
    fused_prog p, q;
    char err[256], buf[GRAPH_MAX_STR], buf2[GRAPH_MAX_STR];
    CHECK(fused_prog_parse(" r5 = add( i0 , 1e0 ) ; r2=neg(r5);r0=clip(r2,-inf,2.5);"
                           "r1=leaky_relu(r0,0.01);r3=mul(r1,+.5);", 1, &p, err,
                           sizeof err) == TG_OK);
    CHECK(p.nstmts == 5 && p.ninputs == 1);
    CHECK(p.stmt[1].op == GRAPH_OP_neg && p.stmt[1].arg[0].kind == FUSED_ARG_REG &&
          p.stmt[1].arg[0].index == 0);
    CHECK(p.stmt[2].attr[0] == -INFINITY && p.stmt[2].attr[1] == 2.5f);
    CHECK(p.stmt[4].arg[1].kind == FUSED_ARG_IMM && p.stmt[4].arg[1].imm == 0.5f);
    CHECK(fused_prog_print(&p, buf, sizeof buf) > 0);
    CHECK_MSG(strcmp(buf, "r0=add(i0,1);r1=neg(r0);r2=clip(r1,-inf,2.5);r3=leaky_relu(r2);"
                          "r4=mul(r3,0.5)") == 0, "printed %s", buf);
    CHECK(fused_prog_parse(buf, 1, &q, err, sizeof err) == TG_OK);
    CHECK(fused_prog_print(&q, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);
    /* floats print exactly, in the shortest form */
    CHECK(fused_prog_parse("r0=mul(i0,1.00999999);r1=add(r0,0.1);r2=mul(r1,-0);"
                           "r3=sub(r2,1.17549435e-38);r4=add(r3,nan)", 1, &p, err,
                           sizeof err) == TG_OK);
    CHECK(fused_prog_print(&p, buf, sizeof buf) > 0);
    CHECK_MSG(strcmp(buf, "r0=mul(i0,1.01);r1=add(r0,0.1);r2=mul(r1,-0);"
                          "r3=sub(r2,1.1754944e-38);r4=add(r3,nan)") == 0, "printed %s", buf);
    CHECK(fused_prog_parse(buf, 1, &q, err, sizeof err) == TG_OK &&
          q.stmt[0].arg[1].imm == 1.01f && signbit(q.stmt[2].arg[1].imm));
    /* too long to print into a small buffer */
    CHECK(fused_prog_print(&p, buf, 20) == -1);
    text_bound_holds();
    /* nin < 0: inputs need not all be read */
    CHECK(fused_prog_parse("r0=exp(i3)", -1, &p, err, sizeof err) == TG_OK && p.ninputs == 4);
    CHECK(fused_op_ok(GRAPH_OP_gelu, NULL) && !fused_op_ok(GRAPH_OP_eq, NULL) &&
          !fused_op_ok(GRAPH_OP_fused, NULL) && !fused_op_ok(GRAPH_OP_cast, NULL) &&
          !fused_op_ok(GRAPH_OP_softmax, NULL) && !fused_op_ok(GRAPH_OP_COUNT, NULL));
}

/* The op fails with a message naming this file and line; keep the call
 * on the line of the macro. */
#define EXPECT_FAIL(call, msg) expect_fail((call), __LINE__, (msg))

static void expect_fail(eager_tensor *r, int line, const char *msg)
{
    char where[64];
    snprintf(where, sizeof where, "test_fused.c:%d ", line);
    CHECK_MSG(r == NULL, "line %d: should have failed", line);
    CHECK_MSG(strstr(eager_error(), where) != NULL, "line %d: error \"%s\" should name %s",
              line, eager_error(), where);
    check_error(msg, __FILE__, line);
    eager_release(r);
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x[17];
    for (int k = 0; k < 17; k++)
        x[k] = eager_zeros(GRAPH_F32, TG_SHAPE(4));
    eager_tensor *xi[2] = {x[0], eager_zeros(GRAPH_I32, TG_SHAPE(4))};
    eager_tensor *xb[2] = {x[0], eager_zeros(GRAPH_F32, TG_SHAPE(3))};
    EXPECT_FAIL(eager_fused(1, x, TG_STR("")), "prog byte 0: empty program");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("   ")), "prog byte 3: empty program");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=foo(i0)")), "prog byte 3: unknown op 'foo'");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=eq(i0,i0)")),
                "prog byte 3: op 'eq' cannot be fused (not an f32 elementwise op");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=matmul(i0,i0)")), "op 'matmul' cannot be fused");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=fused(i0)")), "op 'fused' cannot be fused");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i0);r1=add(r0)")),
                "prog byte 14: add takes 2 operands, got 1");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i0,1)")),
                "prog byte 10: exp takes 1 operand and 0 attributes");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=clip(i0,1,2,3)")),
                "prog byte 15: clip takes 1 operand and 2 attributes");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=clip(i0,nan)")),
                "prog byte 3: clip: clip bounds must not be NaN");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=leaky_relu(i0,inf)")),
                "prog byte 3: leaky_relu: alpha must be finite");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=clip(i0,r0)")), "prog byte 11: expected an operand");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(r0)")),
                "prog byte 7: register r0 is read before it is written");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i0);r1=add(r0,r2)")),
                "prog byte 21: register r2 is read before it is written");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i0);r0=neg(r0)")),
                "prog byte 11: register r0 written twice (first at byte 0)");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r64=exp(i0)")),
                "prog byte 0: register r64 out of range (r0..r63)");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i1)")),
                "prog byte 7: input i1 out of range (the node has 1 inputs)");
    EXPECT_FAIL(eager_fused(2, x, TG_STR("r0=exp(i1)")), "prog byte 0: input i0 is never used");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i0) r1")),
                "prog byte 11: expected ';' or the end, found 'r'");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=exp(i0")), "prog byte 9: expected ')', found the end");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("x0=exp(i0)")),
                "prog byte 0: expected a register rN to write");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0 exp(i0)")), "prog byte 3: expected '=', found 'e'");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=(i0)")), "prog byte 3: expected an op name");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=mul(i0,1e)")), "prog byte 12: expected an exponent");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=mul(i0,-)")), "prog byte 10: expected an operand");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=mul(i0,r)")), "prog byte 10: expected an operand");
    EXPECT_FAIL(eager_fused(1, x, TG_STR("r0=mul(i0,i1234)")), "prog byte 11: index too large");
    char many[1200];
    int n = snprintf(many, sizeof many, "r0=exp(i0)");
    for (int k = 1; k <= 64; k++)
        n += snprintf(many + n, sizeof many - (size_t)n, ";r%d=neg(r%d)", k % 64, k - 1);
    EXPECT_FAIL(eager_fused(1, x, str_of(many)), "more than 64 statements");
    EXPECT_FAIL(eager_fused(17, x, TG_STR("r0=exp(i0)")), "17 inputs, at most 16");
    EXPECT_FAIL(eager_fused(2, xi, TG_STR("r0=add(i0,i1)")), "input 1 has dtype i32, want f32");
    EXPECT_FAIL(eager_fused(2, xb, TG_STR("r0=add(i0,i1)")),
                "input 1 [3] does not broadcast with [4] (inputs 0..0)");
    EXPECT_FAIL(eager_fused(1, xi + 1, TG_STR("r0=neg(i0)")), "fused: i32[4]: dtype i32 not supported");
    eager_pool_pop();
}

/* ---- the kernel called directly: in place, with a state slot ---- */

static void run_direct(const char *prog, const float *const *in, const graph_type *types,
                       int nin, float *out, const graph_type *ot, int nthreads,
                       eager_kstate **state)
{
    graph_fused_attrs at = {str_of(prog)};
    char err[256] = "";
    void *outs[1] = {out};
    eager_kargs a = {types, (const void *const *)in, nin, &at, ot, outs, 1, nthreads, err,
                     sizeof err, state};
    CHECK_MSG(eager_kernel_fused(&a) == TG_OK, "%s: %s", prog, err);
}

static void test_in_place(void)
{
    enum { N = 70001 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    float *want = malloc(sizeof(float) * N), *col = malloc(sizeof(float) * 3);
    check_fill(y, N, 7, -2, 2);
    check_fill(col, 3, 8, -1, 1);
    graph_type t = {GRAPH_F32, 1, {N}}, tc = {GRAPH_F32, 0, {0}};
    /* x = tanh(x*sigmoid(x) + 0.5x)*2 - 1 over x itself, threads 1 and 2 */
    for (int threads = 1; threads <= 2; threads++) {
        check_fill(x, N, 6, -4, 4);
        for (int i = 0; i < N; i++) {
            double v = x[i];
            want[i] = (float)(tanh(v * sig(v) + 0.5 * v) * 2 - 1);
        }
        const float *in[1] = {x};
        run_direct(CHAIN, in, &t, 1, x, &t, threads, NULL);
        CHECK_FLOATS(x, want, N, 1e-5);
    }
    /* out == input 1 of 3 (a full one), beside a full and a scalar input,
     * compiled once into a state slot and run twice */
    eager_kstate *st = NULL;
    for (int rep = 0; rep < 2; rep++) {
        check_fill(x, N, 10 + (uint64_t)rep, -2, 2);
        check_fill(y, N, 20 + (uint64_t)rep, -2, 2);
        col[0] = 0.5f + (float)rep;
        for (int i = 0; i < N; i++)
            want[i] = (float)(((double)x[i] - y[i]) * col[0] + y[i] * y[i]);
        const float *in[3] = {x, y, col};
        graph_type ts[3] = {t, t, tc};
        run_direct("r0=sub(i0,i1);r1=mul(r0,i2);r2=mul(i1,i1);r3=add(r1,r2)", in, ts, 3, y,
                   &t, 2, &st);
        CHECK(st != NULL);
        CHECK_FLOATS(y, want, N, 1e-5);
    }
    eager_kstate_free(st);
    /* the same with 13 elements (the register path), in place over input 0 */
    st = NULL;
    graph_type t13 = {GRAPH_F32, 1, {13}};
    graph_type ts13[3] = {t13, t13, tc};
    for (int rep = 0; rep < 2; rep++) {
        check_fill(x, 13, 30 + (uint64_t)rep, -2, 2);
        check_fill(y, 13, 40 + (uint64_t)rep, -2, 2);
        col[0] = -1.5f + (float)rep;
        for (int i = 0; i < 13; i++)
            want[i] = (float)(((double)x[i] - y[i]) * col[0] + y[i] * y[i]);
        const float *in[3] = {x, y, col};
        run_direct("r0=sub(i0,i1);r1=mul(r0,i2);r2=mul(i1,i1);r3=add(r1,r2)", in, ts13, 3, x,
                   &t13, 1, &st);
        CHECK(st != NULL);
        CHECK_FLOATS(x, want, 13, 1e-5);
    }
    eager_kstate_free(st);
    free(x);
    free(y);
    free(want);
    free(col);
}

/* Which path a compiled plan takes (white box: eager/fused_plan.h), so
 * that the tests above are known to cover each. */
static void check_plan(int line, const char *prog, int nin, const graph_type *ts,
                       const graph_type *ot, int want_small, int want_stream)
{
    float *buf[2] = {NULL, NULL}, *out = calloc((size_t)graph_type_numel(ot), sizeof(float));
    for (int k = 0; k < nin; k++)
        buf[k] = calloc((size_t)graph_type_numel(&ts[k]), sizeof(float));
    const float *in[2] = {buf[0], buf[1]};
    eager_kstate *st = NULL;
    run_direct(prog, in, ts, nin, out, ot, 1, &st);
    const fplan *P = (const fplan *)st;
    CHECK_MSG(P && P->small == want_small && P->stream == want_stream,
              "line %d: %s: small %d stream %d, want %d %d", line, prog, P ? P->small : -1,
              P ? P->stream : -1, want_small, want_stream);
    eager_kstate_free(st);
    free(buf[0]);
    free(buf[1]);
    free(out);
}

static void test_plan_paths(void)
{
    const graph_type v16 = {GRAPH_F32, 1, {16}}, v17 = {GRAPH_F32, 1, {17}};
    const graph_type v1000 = {GRAPH_F32, 1, {1000}}, m = {GRAPH_F32, 2, {100, 10}};
    const graph_type s = {GRAPH_F32, 0, {0}}, row = {GRAPH_F32, 1, {10}};
    const graph_type full_s[2] = {v1000, s}, m_row[2] = {m, row};
    check_plan(__LINE__, CHAIN, 1, &v16, &v16, FUSED_SMALL_N > 0, 0);
    check_plan(__LINE__, CHAIN, 1, &v17, &v17, 0, FUSED_SMALL_N > 0);
    check_plan(__LINE__, "r0=mul(i0,i1);r1=exp(r0)", 2, full_s, &v1000, 0, FUSED_SMALL_N > 0);
    check_plan(__LINE__, "r0=mul(i0,i1);r1=exp(r0)", 2, m_row, &m, 0, 0); /* broadcast */
    check_plan(__LINE__, "r0=erf(i0);r1=mul(r0,2)", 1, &v1000, &v1000, 0, 0); /* no inline */
    check_plan(__LINE__, "r0=exp(i0);r1=add(i1,1)", 2, full_s, &v1000, 0, 0); /* uniform */
}

int main(void)
{
    long live = eager_live_tensors();
    test_ops();
    test_special_values();
    test_paths();
    test_random_paths();
    test_sizes();
    test_shapes();
    test_parse_print();
    test_errors();
    test_in_place();
    test_plan_paths();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
