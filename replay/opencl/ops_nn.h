/*
 * ops_nn.h - what the heavy ops' files share (replay/opencl/ only): the op
 * files ops_nn.c (deconv, pools, norms, reductions, arg), ops_conv.c
 * (conv2d, conv2d_ep, conv2d_blk), ops_gemm.c (matmul, linear, linear_ep:
 * CLBlast, our tiles) and ops_dw.c (depthwise convs) call the helpers
 * nn_common.c (programs, node data, tiles, tails, conv geometry) and
 * nn_probe.c (the auto path's probe), never each other.
 */
#ifndef TG_REPLAY_OCL_OPS_NN_H
#define TG_REPLAY_OCL_OPS_NN_H

#include "../../graph/conv_attrs.h"
#include "ocl_blas.h"
#include "ocl_rt.h"

/*
 * A matmul/linear or conv node has an ocl_nn_node as its data (ops_gemm.c,
 * ops_conv.c; a depthwise conv on ops_dw.c's tile has its own).  The choice
 * is made at prepare from the device's path and what CLBlast can do with the node's attributes and traced shape (which
 * are also warmed up there); a run whose shapes CLBlast cannot take
 * (K 0, a batch broadcast no single stride expresses) uses our kernels,
 * which every gemm node builds anyway.  Bias and epilogue run after the
 * call as nn_gemm_post, in place on the output.
 */
typedef struct ocl_nn_node {
    int post; /* a bias or an epilogue: nn_gemm_post runs after */
    int blas; /* CLBlast (else our kernels: a gemm node always has one) */
    int sk;   /* our kernels: the GPU tile, nn_gemm_sk / nn_conv_sk (else the
               * CPU tile, nn_gemm_tiled / nn_conv_tiled) */
    int onepass; /* the GPU tile walks K in one pass: no split, no *_sk_sum */
    int fixup;   /* the GPU tile's split K is summed by each tile's last split
                    (nn_common.cl's sk_last_split): one launch, no *_sk_sum */
    int tail;    /* a fused node runs in the storing kernels (ocl_prep.tail): 1 + its
                    other inputs (l->xin), the kernels' last parameters; else 0 */
    int cus;  /* the device's compute units (the split of K aims to fill them) */
    /* A layer_norm the linear's kernels run as they load A (ocl_prep.head):
     * l->xin indices of its input (head_at), gamma and beta (-1: none);
     * head_at -1 without one.  Its eps. */
    int head_at, head_g, head_b;
    float head_eps;
} ocl_nn_node;

/* The register tile of nn_common.cl: TM x TN per 8x8 work-group (the
 * CPU tile of matmul and the tiled conv). */
#define NN_TM 64
#define NN_TN 128
/* The GPU tile (nn_gemm_sk, nn_conv_sk): NN_SK_TILE squared per 16x16
 * work-group. */
#define NN_SK_TILE 64

/* A conv's kernels in l->k: ours (nn_conv_tiled, nn_conv_direct,
 * nn_conv_sk, nn_conv_sk_sum), then, where CLBlast may run it,
 * nn_gemm_post (nn_conv_blk_post for conv2d_blk) and conv2d_blk's
 * nn_conv_unblock (ops_conv.c). */
#define OCL_NN_POST_CONV 4
#define OCL_NN_UNBLOCK_CONV 5

static inline int ocl_nn_blas_wanted(const ocl_prep *c) { return c->blas; }


/* Builds source name with the epilogue post/prm (NULL: none) and
 * nn_common.cl as the prefix, then names the kernels. */
tg_status ocl_nn_program(ocl_prep *c, const char *name, const graph_ints *post,
                         graph_post_prm prm, const char *const *kernels, int nk);
/* ... with a tail's source (ocl_tail_source; NULL: none) first. */
tg_status ocl_nn_program_tail(ocl_prep *c, const char *name, const graph_ints *post,
                              graph_post_prm prm, const char *tail, const char *const *kernels,
                              int nk);
/* ... with a tail (NULL: none) and source extra (NULL: none) after
 * nn_common.cl in the prefix: one program with both files' kernels. */
tg_status ocl_nn_program_x(ocl_prep *c, const char *name, const char *tail, const char *extra,
                           const graph_ints *post, graph_post_prm prm,
                           const char *const *kernels, int nk);
/* The tail of c->tail (NULL: none; ocl_tail_find): its other inputs become
 * c->xin, its output c->xout, *src its source (ocl_tail_source; the
 * caller frees it) and *tail 1 + the other inputs' count; without one
 * *src NULL and *tail 0. */
tg_status ocl_nn_tail_prep(ocl_prep *c, char **src, int *tail);
/* Sets a storing kernel's tail parameters, from index at: the tail's
 * output (l->xout[0]), then each l->xin with its stride (1 full-size, 0
 * a scalar); nothing when the node has no tail. */
tg_status ocl_nn_tail_args(ocl_launch *l, cl_kernel k, cl_uint at);
/* Refuses a node with an input that is not f32. */
tg_status ocl_nn_need_f32(ocl_prep *c);
/* Enqueues k over global (rounded up to local). */
tg_status ocl_nn_run_nd(ocl_launch *l, cl_kernel k, int dims, size_t *global,
                        const size_t *local);

/* 1: our GPU tile (nn_gemm_sk, nn_conv_sk) for c's device, 0: the CPU
 * tile, -1: a bad TG_OPENCL_TILE; *cus the device's compute units. */
int ocl_nn_own_tile(const ocl_prep *c, int *cus);
/* The same for a device. */
int ocl_nn_own_tile_dev(cl_device_id device, int *cus);
/* TG_OPENCL_SPLITK: 0 auto (the auto path's probe times the GPU tile
 * with K split and summed by a second kernel, split and summed by the last
 * split, and in one pass; elsewhere split and summed by a second kernel),
 * 1 on (split, summed by a second kernel, when the tile would split),
 * 2 off (one pass), 3 fixup (split, summed by the last split), -1
 * anything else. */
int ocl_nn_splitk_mode(void);
/* The GPU tile's split of K (k long, tiles output tiles): splits so that
 * tiles x splits reach twice the compute units, each at least 128 of K,
 * at most 16; one with onepass; *kper the K per split, a multiple of 16. */
int64_t ocl_nn_sk_splits(int64_t tiles, int64_t k, int cus, int onepass, int64_t *kper);

/*
 * The auto path's probe (nn_probe.c): runs a node's ways on nbuf scratch
 * buffers of elems[i] floats (zeroed; at most OCL_NN_PROBE_BUFS), each
 * way with timed[way] once to build and warm, then 5 times timed on the
 * host around one wait, and returns the fastest (OCL_NN_WAY_*; CLBlast,
 * which prepare warmed, if the probe itself fails).  run enqueues one way
 * on l: a queue of its own, the node's kernels (c->kernel), traced types
 * and attributes, bn as l->data (its onepass and fixup set for the way).
 * The split summed by the last split (OCL_NN_WAY_FIXUP), when timed, must
 * also give the same bits as the split summed by the sum kernel, with
 * buffers ws_buf (its partials) and out_buf (the output) filled with NaN
 * before each: a device on which the last split reads partials not yet
 * visible fails that (ocl_fixup_checks counts it) and the way is not
 * taken.  Cached
 * per context, key (keylen bytes, fully defined: no padding left unset;
 * beginning with the op's kind so that ops' keys differ), bn's tile and
 * the ways timed.  ops_dw.c's depthwise probe uses the three indices for
 * its own ways (direct in CLBlast's, the fallback).
 */
enum { OCL_NN_WAY_SPLIT, OCL_NN_WAY_BLAS, OCL_NN_WAY_ONEPASS, OCL_NN_WAY_FIXUP, OCL_NN_WAYS };
#define OCL_NN_PROBE_BUFS 10
typedef tg_status (*ocl_nn_probe_way)(ocl_launch *l, cl_mem *buf, const void *arg, int way);
int ocl_nn_probe(ocl_prep *c, const void *key, size_t keylen, const size_t *elems, int nbuf,
                 ocl_nn_node *bn, const int timed[OCL_NN_WAYS], ocl_nn_probe_way run,
                 const void *arg, int ws_buf, int out_buf);
/* The ways to time for a node of bn's tile whose K the GPU tile splits
 * splits ways: CLBlast; the CPU tile as the split way; on the GPU tile,
 * the two splits only where it splits K and TG_OPENCL_SPLITK allows, one
 * pass unless it wants a split. */
void ocl_nn_probe_timed(const ocl_nn_node *bn, int64_t splits, int timed[OCL_NN_WAYS]);

/* Gives the node its ocl_nn_node (post: a bias or epilogue follows a
 * CLBlast call; blas: the node runs CLBlast), and c->path. */
tg_status ocl_nn_attach(ocl_prep *c, int post, int blas);
/* Runs nn_gemm_post (kernel k) on y's n elements: bias[(i / inner) % nb],
 * then the node's epilogue (res its residual), in place. */
tg_status ocl_nn_post(ocl_launch *l, cl_kernel k, cl_mem y, int64_t n, cl_mem bias,
                      int64_t inner, int64_t nb, cl_mem res);
/* The convolution attributes every conv op (conv2d, conv2d_ep,
 * conv2d_blk) has, and its epilogue (post NULL for conv2d). */
typedef struct ocl_conv_attrs {
    const graph_ints *stride, *padding, *dilation, *post;
    int64_t groups;
    graph_post_prm prm;
    int blocked;
} ocl_conv_attrs;
ocl_conv_attrs ocl_conv_attrs_of(graph_op op, const void *attrs);

#endif
