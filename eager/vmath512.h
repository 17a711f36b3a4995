/*
 * vmath512.h - AVX-512 forms of vmath.h's exp, sigmoid and tanh, for
 * kernels that hold values in registers (the `fused` kernel).
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

/* 1 / (1 + e^-|x|) or e^x / (1 + e^x), as vm_sigmoidf; NaN gives NaN
 * (x >= 0 is false, so the numerator is e = NaN).  -|x| is x with its
 * sign bit set, and being <= 0 it needs only vm_expf's lower clamp. */
static inline __m512 vm512_sigmoidf(__m512 x)
{
    __m512 e = vm512_exp_clamped_(_mm512_max_ps(VM512_C(-104.0f), vm512_negabs_(x)));
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    __m512 num = _mm512_mask_blend_ps(pos, e, VM512_C(1.0f));
    return _mm512_div_ps(num, _mm512_add_ps(VM512_C(1.0f), e));
}

/* tanh x, as vm_tanhf: -m / (2 + m) with m = expm1(-2|x|), the sign of
 * x (and of zero) put back last. */
static inline __m512 vm512_tanhf(__m512 x)
{
    __m512 na = vm512_negabs_(x);
    __m512 y = _mm512_max_ps(VM512_C(-20.0f), _mm512_add_ps(na, na));
    __m512 t = _mm512_fmadd_ps(y, VM512_C(1.44269502e+00f), VM512_C(12582912.0f));
    __m512 nf = _mm512_sub_ps(t, VM512_C(12582912.0f));
    __m512 pm = vm512_expm1_poly_(_mm512_fmadd_ps(nf, VM512_C(-6.93147182e-01f), y));
    __m512 s = _mm512_scalef_ps(VM512_C(1.0f), nf);
    __m512 m = _mm512_fmadd_ps(s, pm, _mm512_sub_ps(s, VM512_C(1.0f)));
    return vm512_copysign(_mm512_div_ps(m, _mm512_sub_ps(VM512_C(-2.0f), m)), x);
}

#endif
#endif
