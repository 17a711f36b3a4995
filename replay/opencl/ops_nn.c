/*
 * ops_nn.c - the OpenCL backend's heavy ops (matmul, linear and linear_ep
 * are ops_gemm.c's, sharing ops_nn.h): conv2d, conv2d_ep, conv2d_blk
 * (cl/nn_conv.cl),
 * conv_transpose2d (cl/nn_deconv.cl), the pools (cl/nn_pool.cl),
 * batch_norm, layer_norm, softmax, log_softmax (cl/nn_norm.cl),
 * reduce_sum/mean/max (cl/nn_reduce.cl) and
 * argmax/argmin (cl/nn_arg.cl), through the interface of ocl.h.
 * Semantics are the CPU kernels' (eager/kernels_*.c); shapes and
 * attributes were checked by graph/infer_*.c, so prepare only refuses
 * what the kernels cannot do (dtypes).
 *
 * Programs: each is common.cl + a prefix + the op's source; the prefix is
 * the node's epilogue (tg_epilogue from ocl_epilogue_src: the identity for
 * ops without one) followed by cl/nn_common.cl, and the options say
 * whether the device has fp64 (sums in double, as on the CPU).  Nodes
 * with the same epilogue share one build per device (ocl.h's cache).
 * cl/nn_arg.cl (no sums) and cl/nn_deconv.cl (float sums, as the
 * direct conv kernel) need neither and have no epilogue: no prefix.
 *
 * Our conv kernels (cl/nn_conv.cl): nn_conv_tiled on the CPU tile,
 * nn_conv_sk (+ nn_conv_sk_sum where K is split) on the GPU tile (the
 * device's, as for matmul: ops_gemm.c's ocl_nn_own_tile), nn_conv_direct
 * for fewer than 16 output channels per group.  On devices whose GEMM
 * path is CLBlast, conv2d, conv2d_ep and (ungrouped, symmetric padding)
 * conv2d_blk call CLBlast's convgemm instead, with nn_gemm_post applying
 * bias and epilogue after; conv2d_blk converts to and from the blocked
 * layout around the call (nn_conv_unblock, nn_conv_blk_post).  On the
 * auto path conv_probe times the two (and the GPU tile split or in one
 * pass) on the node's traced shape and keeps the fastest.
 *
 * Shapes are read from the run's types at enqueue (dynamic dims), so every
 * kernel takes sizes as arguments and uses a fixed local size: PoCL
 * compiles a kernel once per local size, so a driver-chosen one would
 * recompile for new shapes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/infer_norm.h"
#include "ops_nn.h"

/* ---- programs ---- */

/* The program: tail (NULL: none), the epilogue, nn_common.cl and extra's
 * source (NULL: none) as the prefix of source name. */
static tg_status nn_program(ocl_prep *c, const char *name, const char *tail, const char *extra,
                            const graph_ints *post, graph_post_prm prm,
                            const char *const *kernels, int nk)
{
    static const graph_ints none = {0};
    char epi[2048];
    if (ocl_epilogue_src(post ? post : &none, prm, epi, sizeof epi, c->err, c->errlen))
        return TG_ERR_ARG;
    const char *common = ocl_source("nn_common"), *more = extra ? ocl_source(extra) : "";
    if (!common || !more)
        return ocl_prep_fail(c, TG_ERR_ARG, "no OpenCL source named \"%s\"",
                             common ? extra : "nn_common");
    if (!tail)
        tail = "";
    size_t n = strlen(tail) + strlen(epi) + strlen(common) + strlen(more) + 4;
    char *prefix = tg_malloc(n);
    if (!prefix)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    snprintf(prefix, n, "%s\n%s\n%s\n%s", tail, epi, common, more);
    tg_status st = ocl_prep_program(c, name, prefix,
                                    ocl_prep_has_fp64(c) ? "-DTG_FP64=1" : "-DTG_FP64=0");
    tg_free(prefix);
    for (int i = 0; i < nk && st == TG_OK; i++)
        st = ocl_prep_kernel(c, kernels[i]);
    return st;
}

tg_status ocl_nn_program(ocl_prep *c, const char *name, const graph_ints *post,
                         graph_post_prm prm, const char *const *kernels, int nk)
{
    return nn_program(c, name, NULL, NULL, post, prm, kernels, nk);
}

tg_status ocl_nn_program_tail(ocl_prep *c, const char *name, const graph_ints *post,
                              graph_post_prm prm, const char *tail, const char *const *kernels,
                              int nk)
{
    return nn_program(c, name, tail, NULL, post, prm, kernels, nk);
}

tg_status ocl_nn_program_x(ocl_prep *c, const char *name, const char *tail, const char *extra,
                           const graph_ints *post, graph_post_prm prm,
                           const char *const *kernels, int nk)
{
    return nn_program(c, name, tail, extra, post, prm, kernels, nk);
}

tg_status ocl_nn_need_f32(ocl_prep *c)
{
    for (int i = 0; i < c->nin; i++)
        if (c->in_type[i].dtype != GRAPH_F32)
            return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "input %d has dtype %s, want f32", i,
                                 graph_dtype_name(c->in_type[i].dtype));
    return TG_OK;
}

tg_status ocl_nn_run_nd(ocl_launch *l, cl_kernel k, int dims, size_t *global,
                       const size_t *local)
{
    for (int d = 0; d < dims; d++)
        global[d] = ocl_round_up(global[d], local[d]);
    return ocl_run(l, k, dims, global, local);
}

/* ---- conv2d, conv2d_ep, conv2d_blk ---- */

/* (h, w) from a 0-, 1- or 2-entry list (0 entries: def). */
static void ints_pair(const graph_ints *v, int64_t def, int64_t out[2])
{
    out[0] = v->n > 0 ? v->v[0] : def;
    out[1] = v->n > 1 ? v->v[1] : out[0];
}

/* Padding (top, left, bottom, right) from 0, 1, 2 or 4 entries. */
static void ints_pad4(const graph_ints *v, int64_t out[4])
{
    if (v->n == 4) {
        for (int i = 0; i < 4; i++)
            out[i] = v->v[i];
        return;
    }
    ints_pair(v, 0, out);
    out[2] = out[0], out[3] = out[1];
}

/* The convolution attributes every conv op has, and its epilogue. */
typedef struct conv_attrs {
    const graph_ints *stride, *padding, *dilation, *post;
    int64_t groups;
    graph_post_prm prm;
    int blocked;
} conv_attrs;

static conv_attrs conv_attrs_of(graph_op op, const void *attrs)
{
    if (op == GRAPH_OP_conv2d) {
        const graph_conv2d_attrs *a = attrs;
        return (conv_attrs){&a->stride, &a->padding, &a->dilation, NULL, a->groups, {0}, 0};
    }
    if (op == GRAPH_OP_conv2d_ep) {
        const graph_conv2d_ep_attrs *a = attrs;
        return (conv_attrs){&a->stride, &a->padding, &a->dilation, &a->post, a->groups,
                            GRAPH_POST_PRM(a), 0};
    }
    const graph_conv2d_blk_attrs *a = attrs;
    return (conv_attrs){&a->stride, &a->padding, &a->dilation, &a->post, a->groups,
                        GRAPH_POST_PRM(a), 1};
}

/* Our kernels (OCL_NN_POST_CONV: ops_nn.h), then, where CLBlast may run
 * the node, its post kernels. */
static const char *const conv_kernels[] = {"nn_conv_tiled", "nn_conv_direct", "nn_conv_sk",
                                           "nn_conv_sk_sum", "nn_gemm_post"};
static const char *const conv_blk_kernels[] = {"nn_conv_tiled",  "nn_conv_direct",
                                               "nn_conv_sk",     "nn_conv_sk_sum",
                                               "nn_conv_blk_post", "nn_conv_unblock"};
#define CONV_NK 4 /* our kernels */
#define K_TILED 0
#define K_DIRECT 1
#define K_SK 2
#define K_SK_SUM 3

/*
 * A conv (types x, w, y) as CLBlast's convgemm (NCHW x [O, C, KH, KW]
 * -> NCHW, which is ours; a conv2d_blk's blocked x is made plain first,
 * and its C is the weights'): -1 for what it cannot do (groups, padding
 * that differs between the sides).
 */
static int conv_blas_of(const conv_attrs *a, const graph_type *x, const graph_type *w,
                        ocl_blas_conv *v)
{
    int64_t st[2], dil[2], pad[4];
    ints_pair(a->stride, 1, st);
    ints_pair(a->dilation, 1, dil);
    ints_pad4(a->padding, pad);
    if (a->groups != 1 || x->ndim != (a->blocked && x->ndim == 5 ? 5 : 4) || w->ndim != 4 ||
        pad[0] != pad[2] || pad[1] != pad[3] || graph_type_numel(x) == 0 ||
        graph_type_numel(w) == 0)
        return -1;
    *v = (ocl_blas_conv){(size_t)x->dim[0], (size_t)w->dim[1], (size_t)x->dim[2],
                         (size_t)x->dim[3], (size_t)w->dim[0], (size_t)w->dim[2],
                         (size_t)w->dim[3], (size_t)pad[0], (size_t)pad[1], (size_t)st[0],
                         (size_t)st[1], (size_t)dil[0], (size_t)dil[1]};
    return 0;
}

/* Output channels per group at or above which the tiled kernels run. */
#define NN_CONV_TILED_MIN 16

void ocl_conv_describe(graph_op op, const void *attrs, int64_t *groups,
                       const graph_ints **post, graph_post_prm *prm)
{
    conv_attrs a = conv_attrs_of(op, attrs);
    *groups = a.groups;
    *post = a.post;
    *prm = a.prm;
}

void ocl_conv_geometry(graph_op op, const void *attrs, const graph_type *x,
                       const graph_type *w, const graph_type *y, int32_t g0[8], int32_t g1[8])
{
    conv_attrs a = conv_attrs_of(op, attrs);
    int64_t st[2], dil[2], pad[4];
    ints_pair(a.stride, 1, st);
    ints_pair(a.dilation, 1, dil);
    ints_pad4(a.padding, pad);
    /* C and O from the weights: blocked values may have padded blocks;
     * a blocked conv's x may be plain (a stem) */
    int blk = a.blocked ? (x->ndim == 5) | 2 : 0;
    const int32_t v0[8] = {(int32_t)(w->dim[1] * a.groups), (int32_t)x->dim[2],
                           (int32_t)x->dim[3], (int32_t)w->dim[0], (int32_t)y->dim[2],
                           (int32_t)y->dim[3], (int32_t)w->dim[2], (int32_t)w->dim[3]};
    const int32_t v1[8] = {(int32_t)st[0], (int32_t)st[1], (int32_t)pad[0], (int32_t)pad[1],
                           (int32_t)dil[0], (int32_t)dil[1], (int32_t)a.groups, blk};
    memcpy(g0, v0, sizeof v0);
    memcpy(g1, v1, sizeof v1);
}

tg_status ocl_conv_zero_lanes(ocl_launch *l, graph_op op, int64_t O)
{
    if (op != GRAPH_OP_conv2d_blk || O % 16 == 0)
        return TG_OK;
    float zero = 0.0f;
    cl_int e = clEnqueueFillBuffer(l->q, l->out[0], &zero, sizeof zero, 0,
                                   (size_t)graph_type_numel(&l->out_type[0]) * sizeof zero, 0,
                                   NULL, NULL);
    l->enq[OCL_ENQ_COPY]++;
    return e == CL_SUCCESS
               ? TG_OK
               : ocl_fail(l, TG_ERR_BACKEND, "clEnqueueFillBuffer: %s", ocl_errstr(e));
}

/*
 * The CLBlast path: convgemm, then nn_gemm_post with bias, residual and
 * the epilogue when the node has them.  conv2d_blk: a blocked x made
 * plain by nn_conv_unblock in xp (NULL: scratch slot 0; a plain stem x is
 * read as it is), convgemm into yp (NULL: slot 1; plain [N, O, OH, OW]),
 * then nn_conv_blk_post writes y blocked with bias and epilogue (the
 * residual blocked as y) and the lanes past O 0.
 */
static tg_status conv_blas(ocl_launch *l, graph_op op, cl_mem xp, cl_mem yp)
{
    conv_attrs a = conv_attrs_of(op, l->attrs);
    const graph_type *x = &l->in_type[0], *y = &l->out_type[0];
    cl_mem bias = l->nin > 2 ? l->in[2] : NULL, res = l->nin > 3 ? l->in[3] : NULL;
    const ocl_nn_node *bn = l->data;
    ocl_blas_conv v;
    char msg[256];
    if (conv_blas_of(&a, x, &l->in_type[1], &v))
        return ocl_fail(l, TG_ERR_BACKEND, "%s: CLBlast cannot run this shape",
                        graph_ops[op].name);
    int64_t plane = y->dim[2] * y->dim[3], ny = graph_type_numel(y);
    if (!a.blocked) {
        /* with a tail the conv goes to scratch (the node's own output has
         * no buffer) and nn_gemm_post writes the tail's output */
        cl_mem out = !bn->tail ? l->out[0]
                     : yp      ? yp
                               : ocl_scratch(l, 1, (size_t)ny * sizeof(float));
        if (!out)
            return TG_ERR_NOMEM;
        l->enq[OCL_ENQ_BLAS]++;
        if (ocl_blas_conv_run(l->q, &v, l->in[0], l->in[1], out, msg, sizeof msg))
            return ocl_fail(l, TG_ERR_BACKEND, "%s", msg);
        return bn->post || bn->tail ? ocl_nn_post(l, l->k[OCL_NN_POST_CONV], out, ny, bias,
                                                  plane, y->dim[1], res)
                                    : TG_OK;
    }
    tg_status st;
    if (x->ndim == 5) {
        int64_t n = (int64_t)(v.batch * v.c * v.h * v.w);
        if (!xp && !(xp = ocl_scratch(l, 0, (size_t)n * sizeof(float))))
            return TG_ERR_NOMEM;
        st = ocl_set_args(l, l->k[OCL_NN_UNBLOCK_CONV], "mmlil", l->in[0], xp, n, (int)v.c,
                          (int64_t)(v.h * v.w));
        size_t global[1] = {(size_t)n};
        const size_t local[1] = {64};
        if (st != TG_OK ||
            (st = ocl_nn_run_nd(l, l->k[OCL_NN_UNBLOCK_CONV], 1, global, local)) != TG_OK)
            return st;
    } else {
        xp = l->in[0];
    }
    if (!yp && !(yp = ocl_scratch(l, 1, (size_t)(v.batch * v.o) * (size_t)plane * sizeof(float))))
        return TG_ERR_NOMEM;
    l->enq[OCL_ENQ_BLAS]++;
    if (ocl_blas_conv_run(l->q, &v, xp, l->in[1], yp, msg, sizeof msg))
        return ocl_fail(l, TG_ERR_BACKEND, "%s", msg);
    st = ocl_set_args(l, l->k[OCL_NN_POST_CONV], "mmlilmm", yp, l->out[0], ny, (int)v.o, plane,
                      bias, res);
    size_t global[1] = {(size_t)ny};
    const size_t local[1] = {64};
    return st ? st : ocl_nn_run_nd(l, l->k[OCL_NN_POST_CONV], 1, global, local);
}

/* The GPU tile's split of K for a conv of geometry g0/g1 over n images
 * (one with onepass). */
static int64_t conv_sk_splits(const int32_t g0[8], const int32_t g1[8], int64_t n, int cus,
                              int onepass, int64_t *kper)
{
    int64_t groups = g1[6], mg = g0[3] / groups, p = (int64_t)g0[4] * g0[5];
    int64_t k = (int64_t)(g0[0] / groups) * g0[6] * g0[7];
    int64_t tiles = (mg + NN_SK_TILE - 1) / NN_SK_TILE * ((p + NN_SK_TILE - 1) / NN_SK_TILE) *
                    n * groups;
    return ocl_nn_sk_splits(tiles, k, cus, onepass, kper);
}

/* nn_conv_sk, then nn_conv_sk_sum when K is split (bn: the node's tile
 * and split); ws: the partial outputs' buffer (NULL: the session's
 * scratch slot 0). */
static tg_status conv_sk(ocl_launch *l, const int32_t g0[8], const int32_t g1[8], int64_t n,
                         cl_mem bias, cl_mem res, const ocl_nn_node *bn, cl_mem ws)
{
    int64_t groups = g1[6], o = g0[3], mg = o / groups, p = (int64_t)g0[4] * g0[5];
    int64_t kper, splits = conv_sk_splits(g0, g1, n, bn->cus, bn->onepass, &kper);
    if (splits > 1 && !ws &&
        !(ws = ocl_scratch(l, 0, (size_t)(splits * n * o * p) * sizeof(float))))
        return TG_ERR_NOMEM;
    cl_kernel k = l->k[K_SK];
    tg_status st = ocl_set_args(l, k, "mmmvvmmiim", l->in[0], l->in[1], l->out[0], g0, g1, bias,
                                res, (int)splits, (int)kper, ws);
    if (st == TG_OK)
        st = ocl_nn_tail_args(l, k, 10);
    if (st != TG_OK)
        return st;
    size_t global[3] = {(size_t)(p + NN_SK_TILE - 1) / NN_SK_TILE * 16,
                        (size_t)(mg + NN_SK_TILE - 1) / NN_SK_TILE * 16,
                        (size_t)(n * groups * splits)};
    const size_t local[3] = {16, 16, 1};
    st = ocl_run(l, k, 3, global, local);
    if (st != TG_OK || splits == 1)
        return st;
    k = l->k[K_SK_SUM];
    st = ocl_set_args(l, k, "mimvvmm", ws, (int)splits, l->out[0], g0, g1, bias, res);
    if (st == TG_OK)
        st = ocl_nn_tail_args(l, k, 7);
    size_t g2[3] = {(size_t)p, (size_t)o, (size_t)n};
    const size_t l2[3] = {16, 4, 1};
    return st ? st : ocl_nn_run_nd(l, k, 3, g2, l2);
}

/* Our kernels: nn_conv_direct for few output channels per group, else
 * the device's tile (nn_conv_sk: the GPU one, ws as conv_sk's;
 * nn_conv_tiled: the CPU one). */
static tg_status conv_own(ocl_launch *l, graph_op op, cl_mem ws)
{
    conv_attrs a = conv_attrs_of(op, l->attrs);
    const graph_type *x = &l->in_type[0], *y = &l->out_type[0];
    int32_t g0[8], g1[8];
    ocl_conv_geometry(op, l->attrs, x, &l->in_type[1], y, g0, g1);
    cl_mem bias = l->nin > 2 ? l->in[2] : NULL, res = l->nin > 3 ? l->in[3] : NULL;
    const ocl_nn_node *bn = l->data;
    int64_t n = x->dim[0], o = g0[3], mg = o / a.groups, p = (int64_t)g0[4] * g0[5];
    int tiled = mg >= NN_CONV_TILED_MIN;
    tg_status s = ocl_conv_zero_lanes(l, op, o);
    if (s != TG_OK)
        return s;
    if (tiled && bn && bn->sk)
        return conv_sk(l, g0, g1, n, bias, res, bn, ws);
    cl_kernel k = l->k[tiled ? K_TILED : K_DIRECT];
    s = ocl_set_args(l, k, "mmmvvmm", l->in[0], l->in[1], l->out[0], g0, g1, bias, res);
    if (s == TG_OK)
        s = ocl_nn_tail_args(l, k, 7);
    if (s != TG_OK)
        return s;
    if (tiled) {
        size_t global[3] = {(size_t)(p + NN_TN - 1) / NN_TN * 8,
                            (size_t)(mg + NN_TM - 1) / NN_TM * 8, (size_t)(n * a.groups)};
        const size_t local[3] = {8, 8, 1};
        return ocl_run(l, k, 3, global, local);
    }
    size_t global[3] = {(size_t)p, (size_t)o, (size_t)n};
    const size_t local[3] = {16, 4, 1};
    return ocl_nn_run_nd(l, k, 3, global, local);
}

/* The auto path's probe of a conv: the buffers x, w, bias, the residual
 * (l->in), y, the split-K partial outputs, and the CLBlast path's plain
 * x and y of conv2d_blk (y also the product before a tail). */
enum { CP_X, CP_W, CP_BIAS, CP_RES, CP_Y, CP_WS, CP_XP, CP_YP, CP_NBUF };

/* OCL_NN_WAY_BLAS: CLBlast (+ its post kernels), else our kernels (the
 * GPU tile split or in one pass as l->data says). */
typedef struct conv_probe_arg {
    graph_op op;
    int tail;
    graph_type te, tt[OCL_MAX_XIN];
} conv_probe_arg;

static tg_status conv_probe_way(ocl_launch *l, cl_mem *buf, const void *arg, int way)
{
    const conv_probe_arg *pa = arg;
    graph_op op = pa->op;
    l->in = buf;
    l->out = &buf[CP_Y];
    /* a tail reads full-size inputs (the residual's buffer) and writes y
     * (l->xin is read only while this enqueues) */
    cl_mem tin[OCL_MAX_XIN];
    for (int j = 0; j < OCL_MAX_XIN; j++)
        tin[j] = buf[CP_RES];
    l->xin = tin, l->xin_type = pa->tt, l->nxin = pa->tail ? pa->tail - 1 : 0;
    l->xout = &buf[CP_Y], l->xout_type = &pa->te, l->nxout = pa->tail ? 1 : 0;
    return way == OCL_NN_WAY_BLAS ? conv_blas(l, op, buf[CP_XP], buf[CP_YP])
                                  : conv_own(l, op, buf[CP_WS]);
}

/* The fastest way (OCL_NN_WAY_*) for the node's traced shape: CLBlast,
 * our tile with K split, in one pass (ocl_nn_probe, ocl_nn_probe_timed). */
static int conv_probe(ocl_prep *c, const ocl_blas_conv *v, int post, int tail)
{
    ocl_nn_node bn = {.post = post, .tail = tail, .cus = 1};
    bn.sk = ocl_nn_own_tile(c, &bn.cus) == 1;
    struct {
        int kind, op; /* 'c' */
        ocl_blas_conv v;
        int xblocked, post, nin, tail;
    } key;
    memset(&key, 0, sizeof key);
    graph_op op = c->node->op;
    const graph_type *x = &c->in_type[0], *y = &c->out_type[0];
    key.kind = 'c', key.op = (int)op, key.v = *v, key.xblocked = x->ndim == 5;
    key.post = post, key.nin = c->nin, key.tail = tail;
    int32_t g0[8], g1[8];
    ocl_conv_geometry(op, c->attrs, x, &c->in_type[1], y, g0, g1);
    int64_t kper, splits = conv_sk_splits(g0, g1, x->dim[0], bn.cus, 0, &kper);
    if (!bn.sk || (int64_t)(g0[3] / g1[6]) < NN_CONV_TILED_MIN)
        splits = 1; /* the CPU tile, nn_conv_direct: no split */
    int timed[OCL_NN_WAYS];
    ocl_nn_probe_timed(&bn, splits, timed);
    size_t ny = (size_t)graph_type_numel(y), plain_y = v->batch * v->o * (size_t)g0[4] * (size_t)g0[5];
    size_t elems[CP_NBUF] = {(size_t)graph_type_numel(x), (size_t)graph_type_numel(&c->in_type[1]),
                             v->o, ny, ny, (size_t)splits * plain_y,
                             key.xblocked ? v->batch * v->c * v->h * v->w : 1,
                             key.op == GRAPH_OP_conv2d_blk || tail ? plain_y : 1};
    conv_probe_arg pa = {.op = op, .tail = tail, .te = {GRAPH_F32, 1, {(int64_t)ny}}};
    for (int j = 0; j < OCL_MAX_XIN; j++)
        pa.tt[j] = pa.te;
    return ocl_nn_probe(c, &key, sizeof key, elems, CP_NBUF, &bn, timed, conv_probe_way, &pa);
}

/*
 * Our kernels (ocl_nn_program: nn_conv.cl), and, where the device's path
 * may use CLBlast for the node (not groups, not asymmetric padding), one
 * program of nn_conv.cl and nn_gemm.cl (CLBlast's post kernels) warmed
 * up; on the auto path conv_probe then picks the faster.  The profile
 * names the way: CLBlast, GPU tile (nn_conv_sk), CPU tile
 * (nn_conv_tiled), direct (nn_conv_direct, few output channels).
 */
static tg_status conv_prepare(ocl_prep *c)
{
    tg_status st = ocl_nn_need_f32(c);
    if (st != TG_OK)
        return st;
    conv_attrs a = conv_attrs_of(c->node->op, c->attrs);
    ocl_blas_conv v;
    int blas_ok = ocl_nn_blas_wanted(c) && !conv_blas_of(&a, &c->in_type[0], &c->in_type[1], &v) &&
                  graph_type_numel(&c->out_type[0]) > 0;
    /* conv2d_blk always runs its post kernel on CLBlast: it writes y */
    int post = a.blocked || c->nin > 2 || (a.post && a.post->n > 0);
    int way = OCL_NN_WAY_SPLIT, tail = 0;
    char *src = NULL; /* the fused node after it (ocl_tail_find: never conv2d_blk) */
    st = ocl_nn_tail_prep(c, &src, &tail);
    if (st == TG_OK && !blas_ok)
        st = ocl_nn_program_x(c, "nn_conv", src, NULL, a.post, a.prm, conv_kernels, CONV_NK);
    else if (st == TG_OK && a.blocked)
        st = ocl_nn_program_x(c, "nn_conv", src, "nn_gemm", a.post, a.prm, conv_blk_kernels, 6);
    else if (st == TG_OK)
        st = ocl_nn_program_x(c, "nn_conv", src, "nn_gemm", a.post, a.prm, conv_kernels, 5);
    tg_free(src);
    if (st == TG_OK && blas_ok) {
        st = ocl_blas_warm_conv(c, &v);
        if (st == TG_OK)
            way = c->probe ? conv_probe(c, &v, post, tail) : OCL_NN_WAY_BLAS;
    }
    if (st == TG_OK)
        st = ocl_nn_attach(c, post, way == OCL_NN_WAY_BLAS);
    if (st != TG_OK)
        return st;
    ocl_nn_node *b = c->data;
    if (blas_ok && c->probe && !b->blas)
        b->onepass = way == OCL_NN_WAY_ONEPASS;
    b->tail = tail;
    int direct = c->in_type[1].ndim == 4 &&
                 c->in_type[1].dim[0] / (a.groups > 0 ? a.groups : 1) < NN_CONV_TILED_MIN;
    /* how it runs, for the profile: [way][tail] */
    static const char *const paths[5][2] = {
        {"CLBlast", "CLBlast + the fused node after"},
        {"direct", "direct + the fused node after"},
        {"CPU tile", "CPU tile + the fused node after"},
        {"GPU tile, K in one pass", "GPU tile, K in one pass + the fused node after"},
        {"GPU tile", "GPU tile + the fused node after"},
    };
    c->path = paths[b->blas ? 0 : direct ? 1 : !b->sk ? 2 : b->onepass ? 3 : 4][tail > 0];
    return TG_OK;
}

static tg_status conv_enqueue(ocl_launch *l, graph_op op)
{
    if (graph_type_numel(&l->out_type[0]) == 0)
        return TG_OK;
    const ocl_nn_node *bn = l->data;
    return bn && bn->blas ? conv_blas(l, op, NULL, NULL) : conv_own(l, op, NULL);
}

static tg_status conv2d_enqueue(ocl_launch *l) { return conv_enqueue(l, GRAPH_OP_conv2d); }
static tg_status conv2d_ep_enqueue(ocl_launch *l) { return conv_enqueue(l, GRAPH_OP_conv2d_ep); }
static tg_status conv2d_blk_enqueue(ocl_launch *l) { return conv_enqueue(l, GRAPH_OP_conv2d_blk); }

static const ocl_op conv2d_op = {conv_prepare, conv2d_enqueue};
static const ocl_op conv2d_ep_op = {conv_prepare, conv2d_ep_enqueue};
static const ocl_op conv2d_blk_op = {conv_prepare, conv2d_blk_enqueue};

/* ---- conv_transpose2d ---- */

static const char *const deconv_kernels[] = {"nn_deconv"};

static tg_status deconv_prepare(ocl_prep *c)
{
    tg_status st = ocl_nn_need_f32(c);
    if (st == TG_OK)
        st = ocl_prep_program(c, "nn_deconv", NULL, NULL);
    return st == TG_OK ? ocl_prep_kernel(c, deconv_kernels[0]) : st;
}

static tg_status deconv_enqueue(ocl_launch *l)
{
    const graph_conv_transpose2d_attrs *a = l->attrs;
    const graph_type *x = &l->in_type[0], *w = &l->in_type[1], *y = &l->out_type[0];
    if (graph_type_numel(y) == 0)
        return TG_OK;
    int64_t st[2], dil[2], pad[4];
    ints_pair(&a->stride, 1, st);
    ints_pair(&a->dilation, 1, dil);
    ints_pad4(&a->padding, pad); /* output_padding only sizes y */
    int32_t g0[8] = {(int32_t)x->dim[1], (int32_t)x->dim[2], (int32_t)x->dim[3],
                     (int32_t)y->dim[1], (int32_t)y->dim[2], (int32_t)y->dim[3],
                     (int32_t)w->dim[2], (int32_t)w->dim[3]};
    int32_t g1[8] = {(int32_t)st[0], (int32_t)st[1], (int32_t)pad[0], (int32_t)pad[1],
                     (int32_t)dil[0], (int32_t)dil[1], (int32_t)a->groups, 0};
    cl_mem bias = l->nin > 2 ? l->in[2] : NULL;
    tg_status s = ocl_set_args(l, l->k[0], "mmmvvm", l->in[0], l->in[1], l->out[0], g0, g1,
                               bias);
    size_t global[3] = {(size_t)(y->dim[2] * y->dim[3]), (size_t)y->dim[1], (size_t)y->dim[0]};
    const size_t local[3] = {16, 4, 1};
    return s ? s : ocl_nn_run_nd(l, l->k[0], 3, global, local);
}

static const ocl_op deconv_op = {deconv_prepare, deconv_enqueue};

/* ---- pools ---- */

static const char *const pool_kernels[] = {"nn_max_pool", "nn_avg_pool", "nn_global_avg_pool"};

static tg_status pool_prepare(ocl_prep *c)
{
    tg_status st = ocl_nn_need_f32(c);
    return st ? st : ocl_nn_program(c, "nn_pool", NULL, (graph_post_prm){0}, pool_kernels, 3);
}

/* Windows: kernel, stride (default: the kernel) and padding lists. */
static tg_status pool2d_enqueue(ocl_launch *l, int avg, const graph_ints *kl,
                                const graph_ints *sl, const graph_ints *pl, int include_pad)
{
    /* blocked [N,CB,H,W,16]: each of the N*CB*16 lanes is a plane */
    int blk = l->in_type[0].ndim == 5;
    const graph_type *x = &l->in_type[0], *y = &l->out_type[0];
    int64_t k[2], s[2], p[4];
    ints_pair(kl, 1, k);
    ints_pair(sl, 0, s);
    if (sl->n == 0)
        s[0] = k[0], s[1] = k[1];
    ints_pad4(pl, p);
    int32_t g0[8] = {(int32_t)x->dim[2], (int32_t)x->dim[3], (int32_t)y->dim[2],
                     (int32_t)y->dim[3], (int32_t)k[0], (int32_t)k[1], (int32_t)s[0],
                     (int32_t)s[1]};
    int32_t g1[8] = {(int32_t)p[0], (int32_t)p[1], include_pad, blk, 0, 0, 0, 0};
    cl_kernel kn = l->k[avg];
    tg_status st = ocl_set_args(l, kn, "mmvv", l->in[0], l->out[0], g0, g1);
    size_t global[3] = {(size_t)y->dim[3], (size_t)y->dim[2],
                        (size_t)(y->dim[0] * y->dim[1] * (blk ? 16 : 1))};
    const size_t local[3] = {16, 4, 1};
    return st ? st : ocl_nn_run_nd(l, kn, 3, global, local);
}

static tg_status max_pool_enqueue(ocl_launch *l)
{
    const graph_max_pool2d_attrs *a = l->attrs;
    return pool2d_enqueue(l, 0, &a->kernel, &a->stride, &a->padding, 0);
}

static tg_status avg_pool_enqueue(ocl_launch *l)
{
    const graph_avg_pool2d_attrs *a = l->attrs;
    return pool2d_enqueue(l, 1, &a->kernel, &a->stride, &a->padding,
                          (int)a->count_include_pad);
}

/* One 64-item work-group per [N, C] plane of the spatial dims. */
static tg_status global_pool_enqueue(ocl_launch *l)
{
    const graph_type *x = &l->in_type[0];
    int64_t plane = 1;
    for (int i = 2; i < x->ndim; i++)
        plane *= x->dim[i];
    tg_status st = ocl_set_args(l, l->k[2], "mml", l->in[0], l->out[0], plane);
    size_t global[2] = {64, (size_t)(x->dim[0] * x->dim[1])};
    const size_t local[2] = {64, 1};
    return st ? st : ocl_run(l, l->k[2], 2, global, local);
}

static tg_status max_pool_blk_enqueue(ocl_launch *l)
{
    const graph_max_pool2d_blk_attrs *a = l->attrs;
    return pool2d_enqueue(l, 0, &a->kernel, &a->stride, &a->padding, 0);
}

static tg_status avg_pool_blk_enqueue(ocl_launch *l)
{
    const graph_avg_pool2d_blk_attrs *a = l->attrs;
    return pool2d_enqueue(l, 1, &a->kernel, &a->stride, &a->padding,
                          (int)a->count_include_pad);
}

static const ocl_op max_pool_op = {pool_prepare, max_pool_enqueue};
static const ocl_op max_pool_blk_op = {pool_prepare, max_pool_blk_enqueue};
static const ocl_op avg_pool_blk_op = {pool_prepare, avg_pool_blk_enqueue};
static const ocl_op avg_pool_op = {pool_prepare, avg_pool_enqueue};
static const ocl_op global_pool_op = {pool_prepare, global_pool_enqueue};

/* ---- batch_norm, layer_norm, softmax, log_softmax ---- */

static const char *const norm_kernels[] = {"nn_batch_norm", "nn_layer_norm", "nn_softmax_rows",
                                           "nn_softmax_cols"};

static tg_status norm_prepare(ocl_prep *c)
{
    tg_status st = ocl_nn_need_f32(c);
    return st ? st : ocl_nn_program(c, "nn_norm", NULL, (graph_post_prm){0}, norm_kernels, 4);
}

/* Product of dims [from, to) of t. */
static int64_t dims_prod(const graph_type *t, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= t->dim[i];
    return n;
}

static tg_status batch_norm_enqueue(ocl_launch *l)
{
    const graph_batch_norm_attrs *a = l->attrs;
    const graph_type *x = &l->in_type[0];
    int64_t s = dims_prod(x, 2, x->ndim);
    tg_status st = ocl_set_args(l, l->k[0], "mmmmmmlif", l->in[0], l->in[1], l->in[2],
                                l->in[3], l->in[4], l->out[0], s, (int)x->dim[1],
                                (double)a->eps);
    size_t global[2] = {(size_t)s, (size_t)(x->dim[0] * x->dim[1])};
    const size_t local[2] = {64, 1};
    return st ? st : ocl_nn_run_nd(l, l->k[0], 2, global, local);
}

static tg_status layer_norm_enqueue(ocl_launch *l)
{
    const graph_layer_norm_attrs *a = l->attrs;
    const graph_type *x = &l->in_type[0];
    int axis = graph_norm_axis(a->axis, x->ndim);
    int64_t rows = dims_prod(x, 0, axis), d = dims_prod(x, axis, x->ndim);
    if (rows * d == 0)
        return TG_OK;
    tg_status st = ocl_set_args(l, l->k[1], "mmmmlf", l->in[0], l->nin > 1 ? l->in[1] : NULL,
                                l->nin > 2 ? l->in[2] : NULL, l->out[0], d, (double)a->eps);
    size_t global[2] = {64, (size_t)rows};
    const size_t local[2] = {64, 1};
    return st ? st : ocl_run(l, l->k[1], 2, global, local);
}

/* Rows (the axis is innermost) or columns of [outer, len, inner] slabs. */
static tg_status softmax_enqueue(ocl_launch *l, int64_t axis_attr, int log_sm)
{
    const graph_type *x = &l->in_type[0];
    int axis = graph_norm_axis(axis_attr, x->ndim);
    int64_t outer = dims_prod(x, 0, axis), len = x->ndim ? x->dim[axis] : 1;
    int64_t inner = x->ndim ? dims_prod(x, axis + 1, x->ndim) : 1;
    if (outer * len * inner == 0)
        return TG_OK;
    const size_t local[2] = {64, 1};
    if (inner == 1) {
        tg_status st = ocl_set_args(l, l->k[2], "mmli", l->in[0], l->out[0], len, log_sm);
        size_t global[2] = {64, (size_t)outer};
        return st ? st : ocl_run(l, l->k[2], 2, global, local);
    }
    tg_status st = ocl_set_args(l, l->k[3], "mmlli", l->in[0], l->out[0], len, inner, log_sm);
    size_t global[2] = {(size_t)inner, (size_t)outer};
    return st ? st : ocl_nn_run_nd(l, l->k[3], 2, global, local);
}

static tg_status softmax_op_enqueue(ocl_launch *l)
{
    return softmax_enqueue(l, ((const graph_softmax_attrs *)l->attrs)->axis, 0);
}

static tg_status log_softmax_op_enqueue(ocl_launch *l)
{
    return softmax_enqueue(l, ((const graph_log_softmax_attrs *)l->attrs)->axis, 1);
}

static const ocl_op batch_norm_op = {norm_prepare, batch_norm_enqueue};
static const ocl_op layer_norm_op = {norm_prepare, layer_norm_enqueue};
static const ocl_op softmax_op = {norm_prepare, softmax_op_enqueue};
static const ocl_op log_softmax_op = {norm_prepare, log_softmax_op_enqueue};

/* ---- reductions ---- */

/* Kernel pairs (_items, _groups) of cl/nn_reduce.cl by op and dtype. */
static const char *const reduce_kernels[][2] = {
    {"nn_sum_f32_items", "nn_sum_f32_groups"}, {"nn_sum_i64_items", "nn_sum_i64_groups"},
    {"nn_sum_i32_items", "nn_sum_i32_groups"}, {"nn_mean_f32_items", "nn_mean_f32_groups"},
    {"nn_max_f32_items", "nn_max_f32_groups"}, {"nn_max_i64_items", "nn_max_i64_groups"},
    {"nn_max_i32_items", "nn_max_i32_groups"},
};

static tg_status reduce_prepare(ocl_prep *c)
{
    graph_dtype dt = c->in_type[0].dtype;
    int row = dt == GRAPH_F32 ? 0 : dt == GRAPH_I64 ? 1 : dt == GRAPH_I32 ? 2 : -1;
    if (row < 0 || (c->node->op == GRAPH_OP_reduce_mean && row != 0))
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "dtype %s", graph_dtype_name(dt));
    row += c->node->op == GRAPH_OP_reduce_mean ? 3 : c->node->op == GRAPH_OP_reduce_max ? 4 : 0;
    return ocl_nn_program(c, "nn_reduce", NULL, (graph_post_prm){0}, reduce_kernels[row], 2);
}

/* Kept and reduced groups of merged dims (see cl/nn_reduce.cl). */
typedef struct reduce_plan {
    int32_t nk, nr, kd[8], ks[8], rd[8], rs[8];
    int last_reduced; /* the innermost group is reduced */
} reduce_plan;

/* Drops size-1 dims and merges neighbours of the same kind (reduced or
 * kept), outermost first; a merged group's stride is its innermost's. */
static void reduce_make_plan(const graph_type *t, const unsigned char *mask, reduce_plan *p)
{
    int64_t stride[GRAPH_MAX_DIMS], s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        stride[d] = s;
        s *= t->dim[d];
    }
    memset(p, 0, sizeof *p);
    int prev = -1; /* kind of the last group: 0 kept, 1 reduced */
    for (int d = 0; d < t->ndim; d++) {
        if (t->dim[d] == 1)
            continue;
        int r = mask[d] != 0;
        int32_t *dim = r ? p->rd : p->kd, *str = r ? p->rs : p->ks, *n = r ? &p->nr : &p->nk;
        if (r == prev) {
            dim[*n - 1] *= (int32_t)t->dim[d];
            str[*n - 1] = (int32_t)stride[d];
        } else {
            dim[*n] = (int32_t)t->dim[d];
            str[(*n)++] = (int32_t)stride[d];
        }
        prev = r;
        p->last_reduced = r;
    }
}

static tg_status reduce_enqueue(ocl_launch *l, const graph_ints *axes)
{
    const graph_type *x = &l->in_type[0];
    unsigned char mask[GRAPH_MAX_DIMS];
    char err[160];
    /* inference accepted these axes already; this cannot fail */
    if (graph_reduce_mask(x, axes, mask, err, sizeof err) != TG_OK)
        return ocl_fail(l, TG_ERR_AXIS, "%s", err);
    int64_t nout = graph_type_numel(&l->out_type[0]);
    if (nout == 0)
        return TG_OK;
    reduce_plan p;
    reduce_make_plan(x, mask, &p);
    int groups = p.nr > 0 && p.last_reduced;
    cl_kernel k = l->k[groups];
    tg_status st = ocl_set_args(l, k, "mmlivvivv", l->in[0], l->out[0], nout, (int)p.nk, p.kd,
                                p.ks, (int)p.nr, p.rd, p.rs);
    if (st != TG_OK)
        return st;
    if (groups) {
        size_t global[2] = {64, (size_t)nout};
        const size_t local[2] = {64, 1};
        return ocl_run(l, k, 2, global, local);
    }
    size_t global[1] = {(size_t)nout};
    const size_t local[1] = {64};
    return ocl_nn_run_nd(l, k, 1, global, local);
}

static tg_status reduce_sum_enqueue(ocl_launch *l)
{
    return reduce_enqueue(l, &((const graph_reduce_sum_attrs *)l->attrs)->axes);
}

static tg_status reduce_mean_enqueue(ocl_launch *l)
{
    return reduce_enqueue(l, &((const graph_reduce_mean_attrs *)l->attrs)->axes);
}

static tg_status reduce_max_enqueue(ocl_launch *l)
{
    return reduce_enqueue(l, &((const graph_reduce_max_attrs *)l->attrs)->axes);
}

static const ocl_op reduce_sum_op = {reduce_prepare, reduce_sum_enqueue};
static const ocl_op reduce_mean_op = {reduce_prepare, reduce_mean_enqueue};
static const ocl_op reduce_max_op = {reduce_prepare, reduce_max_enqueue};

/* ---- argmax, argmin ---- */

/* Kernel pairs (_items, _groups) of cl/nn_arg.cl by op and dtype. */
static const char *const arg_kernels[][2] = {
    {"nn_argmax_f32_items", "nn_argmax_f32_groups"},
    {"nn_argmax_i64_items", "nn_argmax_i64_groups"},
    {"nn_argmax_i32_items", "nn_argmax_i32_groups"},
    {"nn_argmin_f32_items", "nn_argmin_f32_groups"},
    {"nn_argmin_i64_items", "nn_argmin_i64_groups"},
    {"nn_argmin_i32_items", "nn_argmin_i32_groups"},
};

static tg_status arg_prepare(ocl_prep *c)
{
    graph_dtype dt = c->in_type[0].dtype;
    int row = dt == GRAPH_F32 ? 0 : dt == GRAPH_I64 ? 1 : dt == GRAPH_I32 ? 2 : -1;
    if (row < 0)
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "dtype %s", graph_dtype_name(dt));
    row += c->node->op == GRAPH_OP_argmin ? 3 : 0;
    tg_status st = ocl_prep_program(c, "nn_arg", NULL, NULL);
    for (int i = 0; i < 2 && st == TG_OK; i++)
        st = ocl_prep_kernel(c, arg_kernels[row][i]);
    return st;
}

/* Rows of at least this many elements (inner 1) take a work-group each. */
#define ARG_GROUP_MIN 64

static tg_status arg_enqueue(ocl_launch *l, int64_t axis_attr, int64_t select_last)
{
    const graph_type *x = &l->in_type[0];
    int axis = graph_norm_axis(axis_attr, x->ndim); /* checked by inference */
    int64_t outer = x->ndim ? dims_prod(x, 0, axis) : 1, len = x->ndim ? x->dim[axis] : 1;
    int64_t inner = x->ndim ? dims_prod(x, axis + 1, x->ndim) : 1;
    int last = select_last != 0;
    if (outer * inner == 0) /* inference refused an empty axis with outputs */
        return TG_OK;
    if (inner == 1 && len >= ARG_GROUP_MIN) {
        tg_status st = ocl_set_args(l, l->k[1], "mmli", l->in[0], l->out[0], len, last);
        size_t global[2] = {64, (size_t)outer};
        const size_t local[2] = {64, 1};
        return st ? st : ocl_run(l, l->k[1], 2, global, local);
    }
    int64_t nout = outer * inner;
    tg_status st = ocl_set_args(l, l->k[0], "mmllli", l->in[0], l->out[0], nout, len, inner,
                                last);
    size_t global[1] = {(size_t)nout};
    const size_t local[1] = {64};
    return st ? st : ocl_nn_run_nd(l, l->k[0], 1, global, local);
}

static tg_status argmax_enqueue(ocl_launch *l)
{
    const graph_argmax_attrs *a = l->attrs;
    return arg_enqueue(l, a->axis, a->select_last);
}

static tg_status argmin_enqueue(ocl_launch *l)
{
    const graph_argmin_attrs *a = l->attrs;
    return arg_enqueue(l, a->axis, a->select_last);
}

/* topk (f32): nn_topk_f32, one item per element (cl/nn_arg.cl). */
static tg_status topk_prepare(ocl_prep *c)
{
    tg_status st = ocl_nn_need_f32(c);
    if (st == TG_OK)
        st = ocl_prep_program(c, "nn_arg", NULL, NULL);
    return st == TG_OK ? ocl_prep_kernel(c, "nn_topk_f32") : st;
}

static tg_status topk_enqueue(ocl_launch *l)
{
    const graph_topk_attrs *a = l->attrs;
    const graph_type *x = &l->in_type[0];
    int axis = graph_norm_axis(a->axis, x->ndim); /* checked by inference */
    int64_t len = x->dim[axis], inner = dims_prod(x, axis + 1, x->ndim);
    int64_t n = graph_type_numel(x);
    if (n == 0 || a->k == 0)
        return TG_OK;
    tg_status st = ocl_set_args(l, l->k[0], "mmmlllli", l->in[0], l->out[0], l->out[1], n, len,
                                inner, (int64_t)a->k, (int)a->largest);
    size_t global[1] = {(size_t)n};
    const size_t local[1] = {64};
    return st ? st : ocl_nn_run_nd(l, l->k[0], 1, global, local);
}

static const ocl_op topk_op = {topk_prepare, topk_enqueue};
static const ocl_op argmax_op = {arg_prepare, argmax_enqueue};
static const ocl_op argmin_op = {arg_prepare, argmin_enqueue};

void ocl_register_nn(const ocl_op **t)
{
    ocl_register_gemm(t);
    t[GRAPH_OP_conv2d] = &conv2d_op;
    t[GRAPH_OP_conv2d_ep] = &conv2d_ep_op;
    t[GRAPH_OP_conv2d_blk] = &conv2d_blk_op;
    t[GRAPH_OP_conv_transpose2d] = &deconv_op;
    t[GRAPH_OP_max_pool2d] = &max_pool_op;
    t[GRAPH_OP_avg_pool2d] = &avg_pool_op;
    t[GRAPH_OP_max_pool2d_blk] = &max_pool_blk_op;
    t[GRAPH_OP_avg_pool2d_blk] = &avg_pool_blk_op;
    t[GRAPH_OP_global_avg_pool] = &global_pool_op;
    t[GRAPH_OP_batch_norm] = &batch_norm_op;
    t[GRAPH_OP_layer_norm] = &layer_norm_op;
    t[GRAPH_OP_softmax] = &softmax_op;
    t[GRAPH_OP_log_softmax] = &log_softmax_op;
    t[GRAPH_OP_reduce_sum] = &reduce_sum_op;
    t[GRAPH_OP_reduce_mean] = &reduce_mean_op;
    t[GRAPH_OP_reduce_max] = &reduce_max_op;
    t[GRAPH_OP_argmax] = &argmax_op;
    t[GRAPH_OP_argmin] = &argmin_op;
    t[GRAPH_OP_topk] = &topk_op;
}
