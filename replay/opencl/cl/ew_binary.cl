/*
 * ew_binary.cl - integer binary ops, comparisons (every type) and where,
 * with NumPy broadcasting, built with -DT=<element type> (-DTI for
 * integers, -DTB for bool).  f32 arithmetic runs as generated fused
 * kernels (fused.c).  Each kernel comes in two forms: *_flat when both inputs are
 * the output's shape or scalars (ma, mb: 1 full, 0 scalar), and the
 * general one over up to 8 collapsed dims with per-input strides.
 * Semantics follow eager/kernels_binary.c and kernels_compare.c.
 */
#define BIN2(name, TO, expr)                                                \
    __kernel void name##_flat(__global const T *ap, __global const T *bp,    \
                              __global TO *yp, long n, int ma, int mb,       \
                              __global int *flag, int code)                 \
    {                                                                       \
        long i = get_global_id(0);                                          \
        if (i < n) {                                                        \
            T a = ap[i * ma], b = bp[i * mb];                               \
            yp[i] = (expr);                                                 \
        }                                                                   \
    }                                                                       \
    __kernel void name(__global const T *ap, __global const T *bp,          \
                       __global TO *yp, long n, int nd, int8 dims, int8 sa,  \
                       int8 sb, __global int *flag, int code)               \
    {                                                                       \
        long i = get_global_id(0);                                          \
        if (i < n) {                                                        \
            int c[8];                                                       \
            tg_coords(i, nd, dims, c);                                      \
            T a = ap[tg_dot(nd, c, sa)], b = bp[tg_dot(nd, c, sb)];         \
            yp[i] = (expr);                                                 \
        }                                                                   \
    }

BIN2(bin_add, T, a + b)
BIN2(bin_sub, T, a - b)
BIN2(bin_mul, T, a * b)
BIN2(cmp_eq, uchar, a == b)
#ifdef TB
BIN2(cmp_eq_bool, uchar, (a != 0) == (b != 0))
#else
BIN2(cmp_lt, uchar, a < b)
BIN2(cmp_gt, uchar, a > b)
#endif

#ifdef TI
/* Truncating division; a zero divisor raises the flag and gives 0;
 * x / -1 wraps (unsigned negation) instead of overflowing. */
inline T tg_idiv(T a, T b, __global int *flag, int code)
{
    if (b == 0) {
        atomic_cmpxchg(flag, 0, code);
        return 0;
    }
    return b == -1 ? (T)(-(U)a) : a / b;
}
BIN2(bin_div, T, tg_idiv(a, b, flag, code))
BIN2(bin_maximum, T, a > b ? a : b)
BIN2(bin_minimum, T, a < b ? a : b)
#endif

/* where(cond, a, b) over any element type, broadcast over all three. */
__kernel void where_k(__global const uchar *cp, __global const T *ap, __global const T *bp,
                      __global T *yp, long n, int nd, int8 dims, int8 sc, int8 sa, int8 sb)
{
    long i = get_global_id(0);
    if (i < n) {
        int c[8];
        tg_coords(i, nd, dims, c);
        yp[i] = cp[tg_dot(nd, c, sc)] ? ap[tg_dot(nd, c, sa)] : bp[tg_dot(nd, c, sb)];
    }
}
