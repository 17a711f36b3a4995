/*
 * nn_scan.cl - cumsum.  Semantics as eager/kernels_scan.c: running sums
 * along one axis; exclusive leaves each element out of its own sum (the
 * first is 0), reverse runs from the last index down.  f32 adds in f32,
 * one element after the other in the order of the sums, so every line
 * gives the CPU kernel's bits; integers add as unsigned of their width
 * (two's complement wrap, no signed overflow).
 *
 * The axis (length len >= 1) sits between outer and inner dims: one item
 * per line, i = o * inner + j walks x[(o * len + k) * inner + j] over k
 * (host: replay/opencl/ops_nn.c).  Each item reads and writes only its
 * own line, so items need no ordering among themselves; neighbouring
 * items touch neighbouring addresses when inner > 1.
 */
#define SCAN_KERNEL(NAME, T, U, AS)                                                    \
    __kernel void NAME(__global const T *x, __global T *y, long nline, long len,       \
                       long inner, int excl, int rev)                                  \
    {                                                                                  \
        long i = get_global_id(0);                                                     \
        if (i >= nline)                                                                \
            return;                                                                    \
        long o = i / inner, j = i - o * inner;                                         \
        long step = rev ? -inner : inner;                                              \
        long at = o * len * inner + j + (rev ? (len - 1) * inner : 0);                 \
        /* acc starts at x, not 0 + x: a -0 stays -0, as on the CPU */               \
        U prev = (U)x[at], acc = excl ? (U)0 : prev;                                   \
        y[at] = AS(acc);                                                               \
        for (long k = 1; k < len; k++) {                                               \
            at += step;                                                                \
            U v = (U)x[at];                                                            \
            acc += excl ? prev : v;                                                    \
            prev = v;                                                                  \
            y[at] = AS(acc);                                                           \
        }                                                                              \
    }

#define SCAN_ID(v) (v)
SCAN_KERNEL(nn_cumsum_f32, float, float, SCAN_ID)
SCAN_KERNEL(nn_cumsum_i64, long, ulong, as_long)
SCAN_KERNEL(nn_cumsum_i32, int, uint, as_int)
