/*
 * kernel.h - the CPU kernel interface.  Kernels see types and raw
 * pointers, not tensors, so the replay runtime calls the same kernels on
 * its arena.  One kernel per op, named eager_kernel_<op>, found through
 * eager_kernels[op].
 */
#ifndef TG_EAGER_KERNEL_H
#define TG_EAGER_KERNEL_H

#include <stddef.h>

#include "../graph/conv_attrs.h"
#include "../graph/op.h"

/*
 * Prepared state of a kernel.  A kernel that builds something expensive
 * (a oneDNN primitive with reordered weights, a compiled micro-program)
 * may keep it in *state when the caller gives a slot: the replay runtime
 * gives one per step, whose types and attributes never change; eager
 * passes NULL and the kernel works without.  The state's first member is
 * an eager_kstate, so its owner can free it.
 */
typedef struct eager_kstate {
    void (*free)(struct eager_kstate *s);
} eager_kstate;

/* Frees a state (NULL is a no-op). */
static inline void eager_kstate_free(eager_kstate *s)
{
    if (s)
        s->free(s);
}

/* t's elements as [outer, len, inner] around axis (in range): the dims
 * before it, its own (1 for a 0-d t), and the dims after it. */
static inline void eager_axis_split(const graph_type *t, int axis, int64_t *outer,
                                    int64_t *len, int64_t *inner)
{
    *outer = *inner = 1;
    *len = t->ndim ? t->dim[axis] : 1;
    for (int d = 0; d < t->ndim; d++) {
        if (d < axis)
            *outer *= t->dim[d];
        else if (d > axis)
            *inner *= t->dim[d];
    }
}

typedef struct eager_kargs {
    const graph_type *in_type; /* nin present inputs */
    const void *const *in;
    int nin;
    const void *attrs; /* graph_<op>_attrs; never NULL for ops with attrs */
    const graph_type *out_type;
    void *const *out;
    int nout;
    int nthreads; /* >= 1 */
    char *err;    /* on failure: a reason (e.g. from oneDNN) */
    size_t errlen;
    eager_kstate **state; /* NULL, or a slot for prepared state (see above) */
    /*
     * Bit j set: input j (j < 32) is the same buffer with the same contents
     * for as long as *state lives: a constant or param of a replay plan
     * (the plan's owner frees the states when a param is replaced).  A
     * kernel may then keep data derived from that input in *state, e.g.
     * weights reordered once into the layout oneDNN prefers.  0 without
     * a state slot.
     */
    uint32_t fixed_in;
    /*
     * Which implementation a step runs: 0, the static rule, unless a
     * tuned replay plan chose another for this step (replay/tune.c).  For
     * matmul, linear and linear_ep EAGER_GEMM_* (blas.h), for conv2d_blk
     * EAGER_CONV_* (below).  A choice whose implementation is not there,
     * or cannot take the shapes, runs the static rule.  Other kernels
     * ignore it.
     */
    int impl;
} eager_kargs;

/*
 * The convolution a conv2d_blk step runs (eager_kargs.impl).  The static
 * rule (0) is the node's algo: auto takes Winograd F(4x4,3x3) for a 3x3,
 * stride 1, dense conv with prepared state where oneDNN has it (AVX-512;
 * not at AVX2), else oneDNN's first direct implementation (jit_1x1 for a
 * 1x1 conv, jit otherwise).  Tuning times the ones that differ here.
 */
enum {
    EAGER_CONV_DEFAULT = 0,
    EAGER_CONV_WINOGRAD = 1,  /* Winograd first (direct where there is none) */
    EAGER_CONV_DIRECT = 2,    /* oneDNN's first direct implementation */
    EAGER_CONV_DIRECT_JIT = 3, /* its generic direct "jit:" kernel, where it lists one */
};

/* Computes out from in. Inputs and outputs never overlap unless the
 * caller (the replay planner) knows the op is elementwise. */
typedef tg_status (*eager_kernel_fn)(const eager_kargs *a);

/* The kernel set in use (isa.h): eager_isa_active->kernels. */
extern const eager_kernel_fn *eager_kernels;

#define OP(name, ...) tg_status eager_kernel_##name(const eager_kargs *a);
#define OPA(name, ...) tg_status eager_kernel_##name(const eager_kargs *a);
#include "../graph/ops.def"
#undef OP
#undef OPA

/* Elements below this run on one thread whatever nthreads says. */
#define EAGER_PAR_MIN 32768

/* Records a kernel failure reason; returns st. */
tg_status eager_kernel_fail(const eager_kargs *a, tg_status st,
                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Row-major strides (in elements) of a type. */
void eager_strides(const graph_type *t, int64_t *strides);

/*
 * The same epilogue in C over n contiguous floats (res: the residual, or
 * NULL), vectorized (eager/vmath.h), block by block so each block stays
 * in L1 through all the steps, on up to nthreads threads: for the cases
 * that never reach oneDNN (K = 0, an empty conv input) and for
 * implementations whose post-ops are slow (eager_dnnl_spec.post).
 * Defined in kernels_ep.c.
 */
void eager_post_apply(float *y, int64_t n, const graph_ints *post, graph_post_prm prm,
                      const float *res, int nthreads);

/*
 * One plane's max_pool2d for a kernel that makes the plane itself (the
 * fused batch_norm_train's pooled output): the max_pool2d kernel's own
 * paths, so the same bits.  eager_maxpool_init fills the geometry from a
 * plane h x w and the attributes and returns the floats of scratch one
 * thread needs; eager_maxpool_scratch readies such a buffer (once);
 * eager_maxpool_plane pools in (h x w) into out (oh x ow).  Defined in
 * kernels_pool.c.
 */
typedef struct eager_maxpool {
    int64_t h, w, oh, ow, k[2], s[2], p[4];
} eager_maxpool;
int64_t eager_maxpool_init(eager_maxpool *m, int64_t h, int64_t w, int64_t oh, int64_t ow,
                           const graph_ints *kl, const graph_ints *sl, const graph_ints *pl);
void eager_maxpool_scratch(const eager_maxpool *m, float *scratch);
void eager_maxpool_plane(const eager_maxpool *m, const float *in, float *out, float *scratch);
/* The same for max_pool2d_grad's plane (x h x w, dy oh x ow, dx h x w):
 * eager_maxpool_grad_size gives the floats of scratch one thread needs,
 * eager_maxpool_grad_scratch readies it (once). */
int64_t eager_maxpool_grad_size(const eager_maxpool *m);
void eager_maxpool_grad_scratch(const eager_maxpool *m, float *scratch);
void eager_maxpool_grad_plane(const eager_maxpool *m, const float *x, const float *dy, float *dx,
                              float *scratch);

/* A pool's window: kernel (h, w), stride (h, w; none: the kernel's) and
 * padding (top, left, bottom, right). */
static inline void eager_pool_window(const graph_ints *kl, const graph_ints *sl,
                                     const graph_ints *pl, int64_t k[2], int64_t s[2],
                                     int64_t p[4])
{
    graph_ints_pair(kl, 1, k);
    graph_ints_pair(sl, 0, s);
    if (sl->n == 0)
        s[0] = k[0], s[1] = k[1];
    graph_ints_pad4(pl, p);
}

#endif
