/*
 * ops_nn.h - what the heavy ops' two files share (replay/opencl/ only):
 * ops_nn.c (conv, deconv, pools, norms, reductions, arg) and ops_gemm.c
 * (matmul, linear, linear_ep: CLBlast, our tiles, the auto path's probe).
 */
#ifndef TG_REPLAY_OCL_OPS_NN_H
#define TG_REPLAY_OCL_OPS_NN_H

#include "ocl_blas.h"
#include "ocl_rt.h"

/*
 * A matmul/linear node has an ocl_nn_node as its data (ops_gemm.c), and so
 * does a conv on the CLBlast path (none: our kernels).  The choice is made at prepare from the device's path and
 * what CLBlast can do with the node's attributes and traced shape (which
 * are also warmed up there); a run whose shapes CLBlast cannot take
 * (K 0, a batch broadcast no single stride expresses) uses our kernels,
 * which every gemm node builds anyway.  Bias and epilogue run after the
 * call as nn_gemm_post, in place on the output.
 */
typedef struct ocl_nn_node {
    int post; /* a bias or an epilogue: nn_gemm_post runs after */
    int blas; /* CLBlast (else our kernels: a gemm node always has one) */
    int sk;   /* our kernels: the GPU tile, nn_gemm_sk (else nn_gemm_tiled) */
    int onepass; /* the GPU tile walks K in one pass: no split, no nn_gemm_sk_sum */
    int tail;    /* a fused node runs in the storing kernels (ocl_prep.tail): 1 + its
                    other inputs (l->xin), the kernels' last parameters; else 0 */
    int cus;  /* the device's compute units (the split of K aims to fill them) */
} ocl_nn_node;

/* The register tile of nn_common.cl: TM x TN per 8x8 work-group (the
 * CPU tile of matmul and the tiled conv). */
#define NN_TM 64
#define NN_TN 128

/* The CLBlast conv's kernels in l->k: nn_gemm_post (nn_conv_blk_post
 * for conv2d_blk), then conv2d_blk's nn_conv_unblock. */
#define OCL_NN_POST_CONV 0
#define OCL_NN_UNBLOCK_CONV 1

static inline int ocl_nn_blas_wanted(const ocl_prep *c) { return c->blas; }


/* Builds source name with the epilogue post/prm (NULL: none) and
 * nn_common.cl as the prefix, then names the kernels (ops_nn.c). */
tg_status ocl_nn_program(ocl_prep *c, const char *name, const graph_ints *post,
                         graph_post_prm prm, const char *const *kernels, int nk);
/* ... with a tail's source (ocl_tail_source; NULL: none) first. */
tg_status ocl_nn_program_tail(ocl_prep *c, const char *name, const graph_ints *post,
                              graph_post_prm prm, const char *tail, const char *const *kernels,
                              int nk);
/* Sets a storing kernel's tail parameters, from index at: the tail's
 * output (l->xout[0]), then each l->xin with its stride (1 full-size, 0
 * a scalar); nothing when the node has no tail (ops_gemm.c). */
tg_status ocl_nn_tail_args(ocl_launch *l, cl_kernel k, cl_uint at);
/* Refuses a node with an input that is not f32. */
tg_status ocl_nn_need_f32(ocl_prep *c);
/* Enqueues k over global (rounded up to local). */
tg_status ocl_nn_run_nd(ocl_launch *l, cl_kernel k, int dims, size_t *global,
                        const size_t *local);

/* Gives the node its ocl_nn_node (post: a bias or epilogue follows a
 * CLBlast call; blas: the node runs CLBlast), and c->path (ops_gemm.c). */
tg_status ocl_nn_attach(ocl_prep *c, int post, int blas);
/* Runs nn_gemm_post (kernel k) on y's n elements: bias[(i / inner) % nb],
 * then the node's epilogue (res its residual), in place. */
tg_status ocl_nn_post(ocl_launch *l, cl_kernel k, cl_mem y, int64_t n, cl_mem bias,
                      int64_t inner, int64_t nb, cl_mem res);
/* Fills the matmul, linear and linear_ep slots (ops_gemm.c; called by
 * ocl_register_nn). */
void ocl_register_gemm(const ocl_op **t);

#endif
