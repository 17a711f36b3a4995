/*
 * common.cl - prepended to every program of the OpenCL backend: the
 * activation functions with the CPU kernels' special-value rules
 * (eager/kernels_unary.c), and NumPy-broadcast index helpers.
 */

/* Overloadable: each has a float8 form below (clang wants every
 * declaration of an overloaded name marked). */
#define TG_F1 __attribute__((overloadable)) inline float

/* relu(NaN) = NaN, relu(-0) = +0 */
TG_F1 tg_relu(float x) { return x > 0.0f ? x : (x != x ? x : 0.0f); }
TG_F1 tg_leaky_relu(float x, float a) { return x < 0.0f ? a * x : x; }
/* 1 / (1 + e^-x) without cancellation in either tail. */
TG_F1 tg_sigmoid(float x)
{
    float e = exp(-fabs(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}
/* silu(-inf) = -0, the limit */
TG_F1 tg_silu(float x) { return x < -FLT_MAX ? NAN : x * tg_sigmoid(x); }

/*
 * Broadcast offsets: linear output index i over the output dims d[0..nd)
 * (row-major) gives input offsets through per-input element strides
 * (0 on broadcast dims).  Dims and strides come as int8 kernel arguments.
 */
inline void tg_coords(long i, int nd, int8 dims, int *c)
{
    /* int division: the host checks every size fits (ocl_bcast_plan), and
     * 32-bit division is several times faster than 64-bit on x86 */
    int d[8], r = (int)i;
    vstore8(dims, 0, d);
    for (int k = nd - 1; k > 0; k--) {
        int q = r / d[k];
        c[k] = r - q * d[k];
        r = q;
    }
    c[0] = r;
}

inline long tg_dot(int nd, const int *c, int8 strides)
{
    int s[8];
    vstore8(strides, 0, s);
    long o = 0;
    for (int k = 0; k < nd; k++)
        o += (long)c[k] * s[k];
    return o;
}

/*
 * Row launches: a [rows, L] view of the output as a 2-D range, item (c,
 * row), with dims and strides right-aligned in their int8 (.s7 is the
 * innermost dim L; unused outer dims are 1 with stride 0).  The offset of
 * a row is straight-line code over vector components (no private arrays,
 * no loops) that depends on row only, and the kernels have no branch
 * (items past L redo column L-1: clamped, not skipped), so PoCL hoists the
 * divisions out of its work-item loop and vectorizes the rest.  Measured
 * on a [1024,4,64] -> [4,1024,64] transpose: 0.5 ms vs 3.7 ms for the
 * one-item-per-element kernel with a loop over dims.
 */
#define TG_ROW_STEP(K)                                                       \
    q = r / d.s##K;                                                          \
    o += (long)(r - q * d.s##K) * s.s##K;                                    \
    r = q;
inline long tg_row_off(int r, int8 d, int8 s)
{
    long o = 0;
    int q;
    TG_ROW_STEP(6) TG_ROW_STEP(5) TG_ROW_STEP(4) TG_ROW_STEP(3) TG_ROW_STEP(2) TG_ROW_STEP(1)
    return o + (long)r * s.s0;
}

/* min(max(x, lo), hi); NaN passes; lo > hi gives hi */
TG_F1 tg_clip(float x, float lo, float hi)
{
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}
/* maximum/minimum propagate NaN from either side */
TG_F1 tg_max(float a, float b) { return (a > b || a != a) ? a : b; }
TG_F1 tg_min(float a, float b) { return (a < b || a != a) ? a : b; }
/* relu's gradient: b > 0 ? a : 0 (NaN b gives 0) */
TG_F1 tg_relu_grad(float a, float b) { return b > 0.0f ? a : 0.0f; }
/* sign(+-0) = +0, sign(NaN) = NaN (OpenCL's own sign gives -0 and 0) */
TG_F1 tg_sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : (x != x ? x : 0.0f); }

/*
 * float8 forms of the functions above, for the vectorized fused kernel
 * (fused.c): the same rules component-wise (select picks its second
 * operand where the condition is true).
 */
#define TG_V8 __attribute__((overloadable)) inline float8
TG_V8 tg_relu(float8 x) { return select(select((float8)(0.0f), x, isnan(x)), x, x > 0.0f); }
TG_V8 tg_leaky_relu(float8 x, float a) { return select(x, a * x, x < 0.0f); }
TG_V8 tg_sigmoid(float8 x)
{
    float8 e = exp(-fabs(x));
    return select(e, (float8)(1.0f), x >= 0.0f) / (1.0f + e);
}
TG_V8 tg_silu(float8 x) { return select(x * tg_sigmoid(x), (float8)(NAN), x < -FLT_MAX); }
TG_V8 tg_clip(float8 x, float lo, float hi)
{
    x = select(x, (float8)(lo), x < lo);
    return select(x, (float8)(hi), x > hi);
}
TG_V8 tg_max(float8 a, float8 b) { return select(b, a, (a > b) | isnan(a)); }
TG_V8 tg_min(float8 a, float8 b) { return select(b, a, (a < b) | isnan(a)); }
TG_V8 tg_relu_grad(float8 a, float8 b) { return select((float8)(0.0f), a, b > 0.0f); }
TG_V8 tg_sign(float8 x)
{
    float8 z = select((float8)(0.0f), x, isnan(x));
    return select(select(z, (float8)(-1.0f), x < 0.0f), (float8)(1.0f), x > 0.0f);
}

/*
 * erf and gelu as eager/vmath.h computes them (polynomials and one exp,
 * so they vectorize; PoCL's own erf is a slow scalar call: 3.2 ms for
 * 131k elements), for float and float8 alike:
 *   erf x   x P(x^2) below 0.875, else 1 - erfcx(|x|) e^(-x^2), the
 *           square split exactly (hi + lo) because e^(-a^2) is as
 *           sensitive to a^2 as a^2 is large;
 *   gelu x  x/2 (1 + erf(x/sqrt2)); for x < 0 through erfc directly (no
 *           cancellation); gelu(-inf) = NaN, the formula's value.
 */
#define TG_ERF_FUNCS(T)                                                      \
    __attribute__((overloadable)) inline T tg_erf_small_(T u)                \
    {                                                                        \
        T p = fma((T)(-6.214585362e-04f), u, (T)(5.034370663e-03f));            \
        p = fma(p, u, (T)(-2.679294778e-02f));                               \
        p = fma(p, u, (T)(1.128249660e-01f));                                \
        p = fma(p, u, (T)(-3.761255451e-01f));                               \
        return fma(p, u, (T)(1.128379158e+00f));                             \
    }                                                                        \
    __attribute__((overloadable)) inline T tg_erfcx_tail_(T a)               \
    {                                                                        \
        T t = 1.0f / a, v = t - 0.6f;                                        \
        T r = fma((T)(4.141773516e-02f), v, (T)(-1.422506462e-02f));            \
        r = fma(r, v, (T)(-6.430824631e-02f));                               \
        r = fma(r, v, (T)(7.363520171e-02f));                                \
        r = fma(r, v, (T)(-3.478131530e-02f));                               \
        r = fma(r, v, (T)(-7.361697211e-03f));                               \
        r = fma(r, v, (T)(5.089073354e-02f));                                \
        r = fma(r, v, (T)(-8.416997050e-02f));                               \
        r = fma(r, v, (T)(8.020971234e-02f));                                \
        r = fma(r, v, (T)(-7.005963910e-03f));                               \
        r = fma(r, v, (T)(-1.713806244e-01f));                               \
        r = fma(r, v, (T)(4.938124742e-01f));                                \
        return t * r;                                                        \
    }                                                                        \
    __attribute__((overloadable)) inline T tg_exp_negsq_(T hi, T lo)         \
    {                                                                        \
        T e = exp(-hi);                                                      \
        return fma(-lo, e, e);                                               \
    }                                                                        \
    __attribute__((overloadable)) inline T tg_erf(T x)                       \
    {                                                                        \
        T a = fmin(fabs(x), (T)(10.0f));                                     \
        T u = a * a;                                                         \
        T small = a * tg_erf_small_(u);                                      \
        T tail = tg_erfcx_tail_(a) * tg_exp_negsq_(u, fma(a, a, -u));        \
        return copysign(select(1.0f - tail, small, a < 0.875f), x);          \
    }                                                                        \
    __attribute__((overloadable)) inline T tg_gelu(T x)                      \
    {                                                                        \
        T xc = clamp(x, (T)(-20.0f), (T)(20.0f));                            \
        T z = xc * 7.07106781e-01f;                                          \
        T a = fabs(z);                                                       \
        T small = 0.5f * x * fma(z, tg_erf_small_(z * z), (T)(1.0f));        \
        T hx = xc * xc;                                                      \
        T e = tg_exp_negsq_(0.5f * hx, 0.5f * fma(xc, xc, -hx));             \
        T hxr = 0.5f * xc * tg_erfcx_tail_(a);                               \
        T big = select(hxr * e, fma(-hxr, e, x), xc > 0.0f);                 \
        T r = select(big, small, a < 0.875f);                                \
        r = select(r, (T)(-0.0f), x < -20.0f);                               \
        return select(r, (T)(NAN), x == (T)(-INFINITY));                     \
    }
TG_ERF_FUNCS(float)
TG_ERF_FUNCS(float8)
