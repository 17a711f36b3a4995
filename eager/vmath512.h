/*
 * vmath512.h - AVX-512 forms of vmath.h's exp, sigmoid and tanh (and of
 * its sign and rounding), for kernels that hold values in registers
 * (the `fused` kernel).
 *
 * Each function is the same algorithm as its vmath.h twin, step by step,
 * with the same polynomial and the same rounding at each step, so it
 * gives the same bits (tests/test_fused.c checks this over a sweep of
 * all floats): a fused chain matches the unfused ops exactly.  The one
 * difference is how exp scales by 2^n: vmath.h multiplies by 2^(n/2)
 * and 2^(n - n/2), the first product exact (normal) and the second
 * rounded once; vscalefps multiplies by 2^n with one rounding, including
 * into the subnormals and to inf: the same result in 1 instruction
 * instead of 9.
 *
 * Only with AVX-512F; VM512 is defined when these exist.
 */
#ifndef TG_EAGER_VMATH512_H
#define TG_EAGER_VMATH512_H

#if defined(__AVX512F__) && defined(__FMA__)
#define VM512 1

#include <immintrin.h>

#define VM512_C(v) _mm512_set1_ps(v)

/* |x|, and copysign(m, x) as one bit select (vpternlogd: sign bit
 * from x, the rest from m). */
static inline __m512 vm512_abs(__m512 x)
{
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

/* -|x|: the sign bit set. */
static inline __m512 vm512_negabs_(__m512 x)
{
    return _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
}

static inline __m512 vm512_copysign(__m512 m, __m512 x)
{
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(m), _mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u), 0xd8));
}

/* floor, ceil and round half to even, as vm_round_loop: exact, so the
 * same bits as floorf, ceilf and (in the default rounding mode)
 * nearbyintf.  _MM_FROUND_NO_EXC: no inexact flag. */
static inline __m512 vm512_floor(__m512 x)
{
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

static inline __m512 vm512_ceil(__m512 x)
{
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}

static inline __m512 vm512_rint(__m512 x)
{
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* vm_signf: NaN lanes keep x, zeros become +0, the rest +-1 by their
 * sign bit. */
static inline __m512 vm512_sign(__m512 x)
{
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __mmask16 nonzero = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    return _mm512_mask_mov_ps(_mm512_maskz_mov_ps(nan, x), nonzero,
                              vm512_copysign(VM512_C(1.0f), x));
}

/* vm_expm1_poly_ and vm_exp_reduce_ of vmath.h, operation for operation. */
static inline __m512 vm512_expm1_poly_(__m512 r)
{
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 lo = _mm512_fmadd_ps(VM512_C(1.666657703e-01f), r, VM512_C(5.000000000e-01f));
    __m512 hi = _mm512_fmadd_ps(VM512_C(8.363173075e-03f), r, VM512_C(4.166655466e-02f));
    hi = _mm512_fmadd_ps(VM512_C(1.392617612e-03f), r2, hi);
    return _mm512_fmadd_ps(_mm512_fmadd_ps(hi, r2, lo), r2, r);
}

static inline __m512 vm512_exp_reduce_(__m512 y, __m512 *nf)
{
    __m512 t = _mm512_fmadd_ps(y, VM512_C(1.44269502e+00f), VM512_C(12582912.0f));
    *nf = _mm512_sub_ps(t, VM512_C(12582912.0f));
    __m512 r = _mm512_fmadd_ps(*nf, VM512_C(-6.93359375e-01f), y);
    return _mm512_fmadd_ps(*nf, VM512_C(2.12194440e-04f), r);
}

/* e^y for y already clamped to [-104, 89] (or NaN). */
static inline __m512 vm512_exp_clamped_(__m512 y)
{
    __m512 nf;
    __m512 p = _mm512_add_ps(vm512_expm1_poly_(vm512_exp_reduce_(y, &nf)), VM512_C(1.0f));
    return _mm512_scalef_ps(p, nf);
}

/* e^x, as vm_expf.  min/max return their second operand when either is
 * NaN, so NaN passes both clamps as in the scalar code. */
static inline __m512 vm512_expf(__m512 x)
{
    __m512 xc = _mm512_min_ps(VM512_C(89.0f), x);
    return vm512_exp_clamped_(_mm512_max_ps(VM512_C(-104.0f), xc));
}

/* 2^-n / (2^-n + p) with e^-x = p 2^n, as vm_sigmoidf (the denominator
 * summed in the same order).  The reduction of -x is vm512_exp_reduce_'s
 * with the negation folded into the constants (t = -x log2e + 1.5 2^23,
 * then -n = 1.5 2^23 - t and r = -n ln2_hi - x + n ln2_lo): the same
 * values, rounded the same way.  min/max return their second operand
 * when either is NaN, so NaN passes both clamps and gives NaN. */
static inline __m512 vm512_sigmoidf(__m512 x)
{
    __m512 xc = _mm512_max_ps(VM512_C(-104.0f), _mm512_min_ps(VM512_C(88.0f), x));
    __m512 t = _mm512_fmadd_ps(xc, VM512_C(-1.44269502e+00f), VM512_C(12582912.0f));
    __m512 nn = _mm512_sub_ps(VM512_C(12582912.0f), t);
    __m512 r = _mm512_fmsub_ps(nn, VM512_C(6.93359375e-01f), xc);
    r = _mm512_fnmadd_ps(nn, VM512_C(2.12194440e-04f), r);
    __m512 s = _mm512_scalef_ps(VM512_C(1.0f), nn);
    __m512 r2 = _mm512_mul_ps(r, r), r4 = _mm512_mul_ps(r2, r2);
    __m512 lo = _mm512_fmadd_ps(VM512_C(1.666657703e-01f), r, VM512_C(5.000000000e-01f));
    __m512 hi = _mm512_fmadd_ps(VM512_C(8.363173075e-03f), r, VM512_C(4.166655466e-02f));
    hi = _mm512_fmadd_ps(VM512_C(1.392617612e-03f), r2, hi);
    __m512 b = _mm512_add_ps(_mm512_fmadd_ps(r2, lo, r), _mm512_add_ps(s, VM512_C(1.0f)));
    return _mm512_div_ps(s, _mm512_fmadd_ps(r4, hi, b));
}

/* vm_expm1_poly_half2_ of vmath.h, operation for operation. */
static inline __m512 vm512_expm1_poly_half2_(__m512 r)
{
    __m512 q = _mm512_mul_ps(r, r);
    __m512 lo = _mm512_fmadd_ps(VM512_C(4.0f * 1.666657703e-01f), r, VM512_C(2.0f * 5.000000000e-01f));
    __m512 hi = _mm512_fmadd_ps(VM512_C(16.0f * 8.363173075e-03f), r, VM512_C(8.0f * 4.166655466e-02f));
    hi = _mm512_fmadd_ps(VM512_C(32.0f * 1.392617612e-03f), q, hi);
    return _mm512_fmadd_ps(_mm512_fmadd_ps(hi, q, lo), q, r);
}

/* tanh x, as vm_tanhf: (m/2) / (-1 - m/2) with m = expm1(-2|x|) worked
 * out on halves, the sign of x (and of zero) put back last. */
static inline __m512 vm512_tanhf(__m512 x)
{
    __m512 na = _mm512_max_ps(VM512_C(-10.0f), vm512_negabs_(x));
    __m512 t = _mm512_fmadd_ps(na, VM512_C(2.0f * 1.44269502e+00f), VM512_C(12582912.0f));
    __m512 nf = _mm512_sub_ps(t, VM512_C(12582912.0f));
    __m512 ph = vm512_expm1_poly_half2_(_mm512_fmadd_ps(nf, VM512_C(0.5f * -6.93147182e-01f), na));
    __m512 s = _mm512_scalef_ps(VM512_C(1.0f), nf);
    __m512 mh = _mm512_fmadd_ps(s, ph, _mm512_fmadd_ps(s, VM512_C(0.5f), VM512_C(-0.5f)));
    return vm512_copysign(_mm512_div_ps(mh, _mm512_sub_ps(VM512_C(-1.0f), mh)), x);
}

#endif
#endif
