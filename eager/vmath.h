/*
 * vmath.h - single-precision math that vectorizes.
 *
 * libm's expf/logf/tanhf/erff are calls, and a loop that calls them runs
 * one element at a time.  These are static inline, branch-free (every
 * special case is a select), call nothing but builtins the compiler
 * inlines (fabsf, copysignf, fmaf when the target has FMA), and use
 * 32-bit integer tricks only, so a loop such as
 *
 *     #pragma omp simd
 *     for (int64_t i = 0; i < n; i++)
 *         y[i] = vm_expf(x[i] - m);
 *
 * compiles to AVX-512 (or AVX2) code.  Each function is the classic
 * construction: range reduction to a small interval, a polynomial whose
 * coefficients were fitted for this file (Chebyshev fits in mpmath at 50
 * digits, then rounded to float), then reconstruction.
 *
 * Accuracy, checked by tests/test_unary.c against double-precision libm
 * over a dense sweep: relative error <= 2e-6 (in practice a few ulp)
 * wherever the true result is a normal float; results in the subnormal
 * range are within a few 2^-149 absolute.
 *
 * Special values follow C99 Annex F: NaN in gives NaN out; exp(-inf) = 0,
 * exp(+inf) = inf, exp overflows to inf above ln(FLT_MAX) and underflows
 * (through the subnormals) to 0 below ln(2^-150); log(0) = -inf,
 * log(x < 0) = NaN, log(inf) = inf; tanh, erf -> +-1 and sigmoid -> 0/1
 * at +-inf; odd functions keep the sign of zero.
 *
 * API (all take and return float):
 *   vm_expf, vm_logf, vm_tanhf, vm_sigmoidf (1/(1+e^-x)), vm_erff,
 *   vm_geluf (x/2 (1 + erf(x/sqrt2)), accurate in the far negative tail,
 *   gelu(-inf) = NaN as the formula gives), vm_siluf (x sigmoid(x), silu(-inf) = NaN as the formula gives),
 *   vm_softplusf (log(1 + e^x), PyTorch's threshold 20), vm_signf; and loops over arrays: vm_sqrt_loop (sqrt, 1/sqrt) and
 *   vm_round_loop (floor, ceil, round half to even).
 * Without hardware FMA (a build without -march=native) the results are
 * still within the bound above but lose about one bit (gelu's tail keeps
 * the exact low part of x^2 through vm_sq_err).
 */
#ifndef TG_EAGER_VMATH_H
#define TG_EAGER_VMATH_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

/* Fused multiply-add where it is one instruction; a*b+c otherwise (a
 * libm fmaf call would stop vectorization and be slow). */
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
#define VM_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define VM_FMA(a, b, c) ((a) * (b) + (c))
#endif

static inline uint32_t vm_asuint(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float vm_asfloat(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The rounding error of hx = x * x (x * x - hx exactly): one fma where the
 * target has it, else Dekker's split of x into 12-bit halves, whose
 * products are exact (gelu's far tail needs the low part of x^2). */
static inline float vm_sq_err(float x, float hx)
{
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
    return fmaf(x, x, -hx);
#else
    float hi = vm_asfloat(vm_asuint(x) & 0xfffff000u), lo = x - hi;
    return ((hi * hi - hx) + 2.0f * hi * lo) + lo * lo;
#endif
}

/*
 * c ? a : b as bit arithmetic.  Where a plain ?: picks a constant over a
 * computed value, GCC may sink the computation into a branch and then,
 * as it may trap (-ftrapping-math), refuse to vectorize the loop; masks
 * leave it no branch to make.
 */
static inline float vm_sel_(int c, float a, float b)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return vm_asfloat((vm_asuint(a) & m) | (vm_asuint(b) & ~m));
}

/* 2^k for k in [-126, 127], built from the exponent field. */
static inline float vm_pow2i_(int32_t k)
{
    return vm_asfloat((uint32_t)(k + 127) << 23);
}

/*
 * e^r - 1 = r + r^2 Q(r) for |r| <= ln2/2, Q evaluated in Estrin's
 * scheme (two independent halves joined by r^2): the same operations as
 * vmath512.h's, and a shorter dependence chain than Horner's, which is
 * what a 16-element program (one vector, one long chain) waits on.
 */
static inline float vm_expm1_poly_(float r)
{
    float r2 = r * r;
    float lo = VM_FMA(1.666657703e-01f, r, 5.000000000e-01f);
    float hi = VM_FMA(8.363173075e-03f, r, 4.166655466e-02f);
    hi = VM_FMA(1.392617612e-03f, r2, hi);
    return VM_FMA(VM_FMA(hi, r2, lo), r2, r);
}

/* y = n ln2 + r: r returned, n as a float in *nf and in the low bits of
 * the result of the fma (see vm_expf).  Cody-Waite: ln2_hi has 9
 * significant bits, so nf*ln2_hi is exact. */
static inline float vm_exp_reduce_(float y, float *nf, float *t)
{
    /* Adding 1.5*2^23 rounds y/ln2 to an integer held in the low
     * mantissa bits: no float->int conversion (UB for NaN) needed. */
    *t = VM_FMA(y, 1.44269502e+00f, 12582912.0f);
    *nf = *t - 12582912.0f;
    float r = VM_FMA(*nf, -6.93359375e-01f, y);
    return VM_FMA(*nf, 2.12194440e-04f, r);
}

/* n from the t of vm_exp_reduce_ (or of the same rounding of y/ln2). */
static inline int32_t vm_exp_n_(float t)
{
    return (int32_t)(vm_asuint(t) - 0x4b400000u);
}

/*
 * e^x.  x = n ln2 + r with |r| <= ln2/2; e^r = 1 + r + r^2 Q(r); then
 * scale by 2^n in two halves so that n in [-150, 128] never leaves the
 * normal range (results in the subnormal range are rounded only once,
 * overflow comes out as inf naturally).
 */
static inline float vm_expf(float x)
{
    float xc = x > 89.0f ? 89.0f : x; /* NaN passes both clamps */
    xc = xc < -104.0f ? -104.0f : xc;
    float nf, t;
    float r = vm_exp_reduce_(xc, &nf, &t);
    int32_t n = vm_exp_n_(t);
    float p = vm_expm1_poly_(r) + 1.0f;
    int32_t n1 = n / 2;
    return p * vm_pow2i_(n1) * vm_pow2i_(n - n1);
}

/*
 * ln x.  x = 2^k m with m in [sqrt(1/2), sqrt 2) (subnormals scaled by
 * 2^23 first); with f = m - 1 and s = f / (2 + f), ln m = 2 atanh s =
 * 2s + 2s^3 R(s^2), |s| <= 0.172.
 */
static inline float vm_logf(float x)
{
    int sub = x < FLT_MIN; /* subnormal, zero or negative */
    float xs = sub ? x * 8388608.0f : x;
    /* Subtracting bits(sqrt(1/2)) puts m's range on an exponent boundary;
     * the shift of a negative int32 is arithmetic in GCC and Clang. */
    uint32_t ix = vm_asuint(xs) - 0x3f3504f3u;
    float k = (float)(((int32_t)ix >> 23) - (-sub & 23));
    float m = vm_asfloat((ix & 0x007fffffu) + 0x3f3504f3u);
    float f = m - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float rz = VM_FMA(1.478997470e-01f, z, 1.999439028e-01f);
    rz = VM_FMA(rz, z, 3.333334252e-01f);
    float l1p = VM_FMA(2.0f * s * z, rz, 2.0f * s);
    float r = VM_FMA(k, 6.93359375e-01f, VM_FMA(k, -2.12194440e-04f, l1p));
    r = vm_sel_(x == 0.0f, -INFINITY, r);
    r = vm_sel_(x < 0.0f, NAN, r);
    r = vm_sel_(x == INFINITY, x, r);
    return vm_sel_(x != x, x, r);
}

/*
 * (e^(2r) - 1) / 2 for |r| <= ln2/4: vm_expm1_poly_(2r) / 2 with the
 * factors of 2 moved into the coefficients.  Every intermediate is the
 * one of vm_expm1_poly_(2r) times a power of 2, so the rounding is the
 * same; tanh saves the doubling of its argument and of its result.
 */
static inline float vm_expm1_poly_half2_(float r)
{
    float q = r * r; /* (2r)^2 / 4 */
    float lo = VM_FMA(4.0f * 1.666657703e-01f, r, 2.0f * 5.000000000e-01f);
    float hi = VM_FMA(16.0f * 8.363173075e-03f, r, 8.0f * 4.166655466e-02f);
    hi = VM_FMA(32.0f * 1.392617612e-03f, q, hi);
    return VM_FMA(VM_FMA(hi, q, lo), q, r);
}

/*
 * tanh x = -m / (2 + m) with m = e^(-2|x|) - 1, sign of x put back.
 * m is computed as an expm1, so there is no cancellation near 0: with
 * -2|x| = n ln2 + r and P = e^r - 1 = r + r^2 Q(r) (vm_expf's
 * polynomial), m = 2^n P + (2^n - 1) in one fma; n = 0 gives m = P
 * exactly, n <= -1 loses at most a bit to the sum (|m| >= 0.29 there),
 * and 2^n - 1 is exact.  -|x| is clamped at -10 (tanh = 1 in float from
 * |x| = 9.1), so 2^n is a normal float built from its exponent field,
 * and n >= -29 lets the reduction use ln2 rounded to float in one fma:
 * its error (1.9e-9) moves m by at most |n| 2^n 1.9e-9 < 2e-9, far
 * below m's own rounding.  The work is on halves, -|x| - n ln2/2 = r/2,
 * m/2 = 2^n P/2 + (2^n - 1)/2 and the quotient (m/2) / (-1 - m/2), each
 * exactly half of the value above (so rounded alike): no doubling of
 * -|x| and no extra step to undo it.
 */
static inline float vm_tanhf(float x)
{
    float na = -fabsf(x);
    na = na < -10.0f ? -10.0f : na; /* NaN passes */
    float t = VM_FMA(na, 2.0f * 1.44269502e+00f, 12582912.0f);
    float nf = t - 12582912.0f;
    float ph = vm_expm1_poly_half2_(VM_FMA(nf, 0.5f * -6.93147182e-01f, na));
    float s = vm_pow2i_(vm_exp_n_(t));
    float mh = VM_FMA(s, ph, VM_FMA(s, 0.5f, -0.5f));
    return copysignf(mh / (-1.0f - mh), x); /* also keeps -0 */
}

/*
 * 1 / (1 + e^-x) as 2^-n / (2^-n + p), where e^-x = p 2^n (vm_expf's
 * reduction and polynomial: p = e^r in [0.7, 1.42]).  One formula for
 * both signs: for x >= 0 it is 1 / (1 + e^-x) scaled by 2^-n, for x < 0
 * e^x / (e^x + 1) scaled by 2^-n, so neither tail loses precision to
 * cancellation or overflow, without a select between them.  x is clamped
 * to [-104, 88]: 2^-n then spans [2^-150, 2^127], built in two normal
 * halves so the subnormal powers are exact (2^-150 rounds to 0, as
 * sigmoid(-104) does); beyond 88 the result is 1 anyway.
 *
 * Written for latency (a chain of sigmoids, as in the `tiny` benchmark,
 * waits on each one): the denominator 2^-n + 1 + expm1(r) is summed as
 * (2^-n + 1) + (r + r^2 lo) + r^4 hi, with 2^-n + 1 and r^4 formed
 * beside the polynomial instead of after it (vm_expm1_poly_'s terms,
 * grouped by powers of r^2 and r^4).  A chain of dependent AVX-512
 * sigmoids took 12.6 ns per sigmoid this way against 14.8 ns for p + 1
 * then + 2^-n (about 45 cycles instead of 53).  The sum rounds 3 times
 * instead of twice (2^-n + 1 is at least 1, the other terms below
 * 0.42): the largest relative error against double over every 7th
 * vector of 16 floats of all 2^32 went from 1.47e-7 to 2.05e-7.
 */
static inline float vm_sigmoidf(float x)
{
    float xc = x > 88.0f ? 88.0f : x; /* NaN passes both clamps */
    xc = xc < -104.0f ? -104.0f : xc;
    float nf, t;
    float r = vm_exp_reduce_(-xc, &nf, &t);
    int32_t k = -vm_exp_n_(t);
    int32_t k1 = k / 2;
    float s = vm_pow2i_(k1) * vm_pow2i_(k - k1);
    float r2 = r * r, r4 = r2 * r2;
    float lo = VM_FMA(1.666657703e-01f, r, 5.000000000e-01f);
    float hi = VM_FMA(8.363173075e-03f, r, 4.166655466e-02f);
    hi = VM_FMA(1.392617612e-03f, r2, hi);
    float b = VM_FMA(r2, lo, r) + (s + 1.0f);
    return s / VM_FMA(r4, hi, b);
}

/*
 * x sigmoid(x).  Below -64, e^x nears the subnormals while x e^x is still
 * a normal float down to about -95, so there e^(x+16) e^-16 is used (x+16
 * is exact).  silu(-inf) = -0, the limit, rather than -inf * 0.
 */
static inline float vm_siluf(float x)
{
    int far = x < -64.0f;
    float e = vm_expf(-fabsf(x) + (far ? 16.0f : 0.0f));
    float num = x >= 0.0f ? x : x * e;
    num = far ? num * 1.12535175e-07f : num; /* e^-16 */
    float r = num / (1.0f + (far ? 0.0f : e));
    /* at -inf the formula's value, -inf * 0 = NaN, as PyTorch's silu (x *
     * sigmoid(x)) and oneDNN's swish epilogue give it */
    return x < -FLT_MAX ? NAN : r;
}

/*
 * log(1 + e^x), PyTorch's F.softplus (beta 1, threshold 20: x itself
 * above 20), as max(x, 0) + log1p(e^-|x|): no overflow for large x, and
 * e^x rather than 0 far below 0.  log1p(t), t in (0, 1], is
 * ln(u) t / (u - 1) with u = 1 + t rounded (the quotient corrects u's
 * rounding), or t where u rounds to 1.  Above 20, e^-x is below half
 * an ulp of x, so the threshold changes nothing but is kept as PyTorch
 * states it; softplus(-inf) = 0, softplus(inf) = inf.
 */
static inline float vm_softplusf(float x)
{
    float t = vm_expf(-fabsf(x));
    float u = 1.0f + t, d = u - 1.0f;
    float l = vm_sel_(d == 0.0f, t, vm_logf(u) * (t / vm_sel_(d == 0.0f, 1.0f, d)));
    float r = (x > 0.0f ? x : 0.0f) + l;
    return vm_sel_(x > 20.0f, x, r);
}

/* erf(a)/a = P(a^2) for |a| < 0.875. */
static inline float vm_erf_small_(float u)
{
    float p = VM_FMA(-6.214585362e-04f, u, 5.034370663e-03f);
    p = VM_FMA(p, u, -2.679294778e-02f);
    p = VM_FMA(p, u, 1.128249660e-01f);
    p = VM_FMA(p, u, -3.761255451e-01f);
    return VM_FMA(p, u, 1.128379158e+00f);
}

/*
 * erfc(a) e^(a^2) for a >= 0.875: t R(t) with t = 1/a.  R is smooth on t
 * in [0.1, 1.143] and is fitted in t - 0.6 to keep the Horner sums well
 * conditioned.
 */
static inline float vm_erfcx_tail_(float a)
{
    float t = 1.0f / a;
    float v = t - 0.6f;
    float r = VM_FMA(4.141773516e-02f, v, -1.422506462e-02f);
    r = VM_FMA(r, v, -6.430824631e-02f);
    r = VM_FMA(r, v, 7.363520171e-02f);
    r = VM_FMA(r, v, -3.478131530e-02f);
    r = VM_FMA(r, v, -7.361697211e-03f);
    r = VM_FMA(r, v, 5.089073354e-02f);
    r = VM_FMA(r, v, -8.416997050e-02f);
    r = VM_FMA(r, v, 8.020971234e-02f);
    r = VM_FMA(r, v, -7.005963910e-03f);
    r = VM_FMA(r, v, -1.713806244e-01f);
    r = VM_FMA(r, v, 4.938124742e-01f);
    return t * r;
}

/*
 * The bits of |x| clamped to the float whose bits are c (NaN becomes c:
 * the caller returns x's NaN itself).  In the integers: a float select
 * there lets GCC copy the operations that follow into both of its arms,
 * one blend for each (gelu: 88 instructions per AVX2 vector with a float
 * clamp, 62 with this one).
 */
static inline uint32_t vm_abs_clamp_bits_(float x, uint32_t c)
{
    uint32_t ib = vm_asuint(x) & 0x7fffffffu;
    return ib < c ? ib : c;
}

/*
 * erf x: x P(x^2) below 0.875, 1 - erfc beyond.  erf(4) rounds to 1, so
 * |x| is clamped to 4, and e^(-a^2) stays normal: one power of two, no
 * clamps in the exponential.
 */
static inline float vm_erff(float x)
{
    float a = vm_asfloat(vm_abs_clamp_bits_(x, 0x40800000u /* 4.0f */));
    float u = a * a;
    float small = a * vm_erf_small_(u);
    /* e^-(u + lo) = 2^n e^r (1 - lo), n in [-24, 0] */
    float nf, tt;
    float r = vm_exp_reduce_(-u, &nf, &tt);
    float e = (vm_expm1_poly_(r) + 1.0f) * vm_pow2i_(vm_exp_n_(tt));
    float tail = vm_erfcx_tail_(a) * VM_FMA(-vm_sq_err(a, u), e, e);
    float res = copysignf(a < 0.875f ? small : 1.0f - tail, x);
    return x != x ? x : res;
}

/*
 * x/2 (1 + erf(x/sqrt2)) = x Phi(x): for x < 0, x Phi(-|x|) (no
 * cancellation); for x >= 0, x (1 - Phi(-|x|)).
 *
 * Phi(-|x|) = erfc(a)/2, a = |x|/sqrt2, is t e^(-a^2 + P(t)) / 2 with
 * t = 1/(1 + 0.4 a): one formula over the whole range, no branch between
 * a small-argument and a tail form (the form of Numerical Recipes' erfcc,
 * with a fit of our own).  P, degree 8 in t - 0.6, is a minimax fit of
 * ln(erfc(a) e^(a^2) / t) over a in [0, 10.7] made by tools/fit_gelu.py:
 * 1.2e-7 absolute in P with the coefficients rounded to float, so 1.2e-7
 * relative in erfc.  P sees a only through t, whose rounding moves the
 * result by about an ulp.  a^2 = x^2/2 is taken from x itself, exactly
 * (hi + lo), and the exponent's reduction keeps hi, lo and P apart
 * (Cody-Waite on hi alone): e^(-a^2) is as sensitive to a^2 as a^2 is
 * large.  The result is scaled by 2^64 until x has been multiplied in, so
 * a result in the subnormal range is rounded once.
 *
 * |x| is clamped to 15 (vm_abs_clamp_bits_): beyond it x Phi(-|x|) is
 * below 2^-149 and 1 - Phi(-|x|) is 1.
 */
static inline float vm_geluf(float x)
{
    uint32_t ib = vm_abs_clamp_bits_(x, 0x41700000u /* 15.0f */);
    float ax = vm_asfloat(ib);
    float xs = vm_asfloat(ib | (vm_asuint(x) & 0x80000000u)); /* x clamped to [-15, 15] */
    float t = 1.0f / VM_FMA(0.4f * 7.07106781e-01f, ax, 1.0f);
    float v = t - 0.6f;
    float p = VM_FMA(-2.080878019e-01f, v, -7.119337469e-02f);
    p = VM_FMA(p, v, 3.061052561e-01f);
    p = VM_FMA(p, v, 1.299699247e-01f);
    p = VM_FMA(p, v, -3.624821305e-01f);
    p = VM_FMA(p, v, -2.958090007e-01f);
    p = VM_FMA(p, v, 4.908494353e-01f);
    p = VM_FMA(p, v, 1.632357597e+00f);
    p = VM_FMA(p, v, -7.055994272e-01f);
    float sq = ax * ax;
    float hi = 0.5f * sq, pl = p - 0.5f * vm_sq_err(ax, sq); /* a^2 = hi + lo */
    /* e^(pl - hi) = 2^n e^r: n from the rounded sum, r from the parts */
    float tt = VM_FMA(pl - hi, 1.44269504e+00f, 12582912.0f);
    float nf = tt - 12582912.0f;
    float r = VM_FMA(nf, -6.93359375e-01f, -hi) + VM_FMA(nf, 2.12194440e-04f, pl);
    /* 2^(n + 64), normal: n >= -165 */
    float s = vm_pow2i_(vm_exp_n_(tt) + 64);
    float q = 0.5f * t * (vm_expm1_poly_(r) + 1.0f) * s; /* Phi(-|x|) 2^64 */
    float res = x < 0.0f ? xs * q * 0x1p-64f : x * VM_FMA(-q, 0x1p-64f, 1.0f);
    /* the formula's value at -inf: -inf/2 (1 + -1) = NaN, as PyTorch's
     * gelu, ONNX's Gelu and oneDNN's gelu_erf compute it (so the -O2
     * rewrites of x/2 (1 + erf(x/sqrt2)) into gelu, and of gelu into a
     * oneDNN epilogue, change no result) */
    return x == -INFINITY ? NAN : res;
}

/*
 * y = sqrt(x), or 1/sqrt(x) when recip, over n floats.  sqrtf may set
 * errno, so GCC guards each call with a branch to libm and will not
 * vectorize it (the no-math-errno function attribute does not help in
 * GCC 12); the instruction itself is used where available.  Both give the
 * correctly rounded IEEE result.  Shared by the unary and fused kernels.
 */
static inline void vm_sqrt_loop(const float *x, float *y, int64_t n, int recip)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    const __m512 one = _mm512_set1_ps(1.0f);
    for (; i + 16 <= n; i += 16) {
        __m512 s = _mm512_sqrt_ps(_mm512_loadu_ps(x + i));
        _mm512_storeu_ps(y + i, recip ? _mm512_div_ps(one, s) : s);
    }
#elif defined(__AVX__)
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 s = _mm256_sqrt_ps(_mm256_loadu_ps(x + i));
        _mm256_storeu_ps(y + i, recip ? _mm256_div_ps(one, s) : s);
    }
#endif
    for (; i < n; i++) {
        float s = sqrtf(x[i]);
        y[i] = recip ? 1.0f / s : s;
    }
}

/* sign: +-1, sign(+-0) = +0 (as ONNX Runtime), sign(NaN) = NaN.  Plain
 * comparisons and selects: a loop of it vectorizes as it is. */
static inline float vm_signf(float x)
{
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x != x ? x : 0.0f;
}

/* vm_round_loop's modes: the rounding-control bits of vrndscaleps and
 * vroundps (_MM_FROUND_TO_NEAREST_INT, _TO_NEG_INF, _TO_POS_INF). */
enum { VM_RINT = 0, VM_FLOOR = 1, VM_CEIL = 2 };

static inline float vm_roundf_(float x, int mode)
{
    return mode == VM_FLOOR ? floorf(x) : mode == VM_CEIL ? ceilf(x) : nearbyintf(x);
}

#if defined(__AVX512F__)
/* 16 at a time, the tail masked.  _MM_FROUND_NO_EXC: no inexact flag. */
#define VM_ROUND_VEC_(MODE)                                                \
    for (; i + 16 <= n; i += 16)                                           \
        _mm512_storeu_ps(y + i, _mm512_roundscale_ps(_mm512_loadu_ps(x + i), \
                                                     (MODE) | _MM_FROUND_NO_EXC)); \
    if (i < n) {                                                           \
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);                   \
        _mm512_mask_storeu_ps(y + i, m,                                    \
                              _mm512_roundscale_ps(_mm512_maskz_loadu_ps(m, x + i), \
                                                   (MODE) | _MM_FROUND_NO_EXC)); \
        i = n;                                                             \
    }
#elif defined(__AVX__)
#define VM_ROUND_VEC_(MODE)                                                \
    for (; i + 8 <= n; i += 8)                                             \
        _mm256_storeu_ps(y + i, _mm256_round_ps(_mm256_loadu_ps(x + i),   \
                                                (MODE) | _MM_FROUND_NO_EXC));
#else
#define VM_ROUND_VEC_(MODE)
#endif

/*
 * y[0..n) = floor, ceil or round half to even (mode VM_FLOOR, VM_CEIL,
 * VM_RINT) of x[0..n); y may be x.  One instruction per vector: GCC
 * vectorizes nearbyintf, but under the default -ftrapping-math not
 * floorf or ceilf (they become one scalar vrndscaless per element).
 * Every form is exact, so all give libm's bits: NaN stays NaN,
 * infinities and signed zeros pass, ceil(-0.5) = round(-0.5) = -0,
 * floor(-1e-40) = -1, and |x| >= 2^23 is integral already.  The vector
 * forms round half to even whatever the rounding mode; the scalar one
 * is nearbyintf, the same in the default mode (which this file assumes
 * throughout, see vm_exp_reduce_).
 */
static inline void vm_round_loop(const float *x, float *y, int64_t n, int mode)
{
    int64_t i = 0;
    switch (mode) {
    case VM_FLOOR: VM_ROUND_VEC_(VM_FLOOR) break;
    case VM_CEIL: VM_ROUND_VEC_(VM_CEIL) break;
    default: VM_ROUND_VEC_(VM_RINT) break;
    }
    for (; i < n; i++)
        y[i] = vm_roundf_(x[i], mode);
}

#endif
