/*
 * ew_unary.cl - the integer unary kernels neg, abs and sign,
 * y[i] = f(x[i]), built with -DT=long|int -DU=ulong|uint: they wrap like
 * the CPU's (unsigned arithmetic).  f32 unary ops run as generated
 * one-statement fused kernels (fused.c), with the float8 path.
 */
#define UNARY(name, expr)                                                   \
    __kernel void unary_##name(__global const T *xp, __global T *yp, long n) \
    {                                                                       \
        long i = get_global_id(0);                                          \
        if (i < n) {                                                        \
            T x = xp[i];                                                    \
            yp[i] = (expr);                                                 \
        }                                                                   \
    }

#ifndef TF
UNARY(neg, (T)(-(U)x))
UNARY(abs, x < 0 ? (T)(-(U)x) : x)
UNARY(sign, (T)((x > 0) - (x < 0)))
#endif
