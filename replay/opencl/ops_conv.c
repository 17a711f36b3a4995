/*
 * ops_conv.c - conv2d, conv2d_ep and conv2d_blk on OpenCL (cl/nn_conv.cl;
 * what it shares with ops_nn.c and ops_gemm.c: ops_nn.h).
 *
 * Our conv kernels: nn_conv_tiled on the CPU tile, nn_conv_sk (+
 * nn_conv_sk_sum where K is split) on the GPU tile (the device's, as for
 * matmul: nn_common.c's ocl_nn_own_tile), nn_conv_direct for fewer than 16
 * output channels per group.  On devices whose GEMM path is CLBlast,
 * conv2d, conv2d_ep and (ungrouped, symmetric padding) conv2d_blk call
 * CLBlast's convgemm instead, with nn_gemm_post applying bias and
 * epilogue after; conv2d_blk converts to and from the blocked layout
 * around the call (nn_conv_unblock, nn_conv_blk_post).  On the auto path
 * conv_probe times the two (and the GPU tile split or in one pass) on the
 * node's traced shape and keeps the fastest.  A fused node after a conv2d
 * or conv2d_ep may run in its storing kernels (the tail: ocl.h's
 * ocl_tail_source, nn_common.c's ocl_nn_tail_prep).  Depthwise convs go
 * through ops_dw.c first, which hands the others here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "ops_nn.h"


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
static int conv_blas_of(const ocl_conv_attrs *a, const graph_type *x, const graph_type *w,
                        ocl_blas_conv *v)
{
    int64_t st[2], dil[2], pad[4];
    graph_ints_pair(a->stride, 1, st);
    graph_ints_pair(a->dilation, 1, dil);
    graph_ints_pad4(a->padding, pad);
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
    ocl_conv_attrs a = ocl_conv_attrs_of(op, l->attrs);
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

/* The GPU tile's output tiles (64x64) of a conv of geometry g0/g1 over n
 * images. */
static int64_t conv_sk_tiles(const int32_t g0[8], const int32_t g1[8], int64_t n)
{
    int64_t groups = g1[6], mg = g0[3] / groups, p = (int64_t)g0[4] * g0[5];
    return (mg + NN_SK_TILE - 1) / NN_SK_TILE * ((p + NN_SK_TILE - 1) / NN_SK_TILE) * n * groups;
}

/* The GPU tile's split of K for a conv of geometry g0/g1 over n images
 * (one with onepass). */
static int64_t conv_sk_splits(const int32_t g0[8], const int32_t g1[8], int64_t n, int cus,
                              int onepass, int64_t *kper)
{
    int64_t k = (int64_t)(g0[0] / g1[6]) * g0[6] * g0[7];
    return ocl_nn_sk_splits(conv_sk_tiles(g0, g1, n), k, cus, onepass, kper);
}

/* nn_conv_sk, then nn_conv_sk_sum when K is split (bn: the node's tile
 * and split; with bn->fixup the last split sums instead); ws: the partial
 * outputs' buffer, cnt the tile counters (NULL: the session's scratch
 * slot 0 and counters). */
static tg_status conv_sk(ocl_launch *l, const int32_t g0[8], const int32_t g1[8], int64_t n,
                         cl_mem bias, cl_mem res, const ocl_nn_node *bn, cl_mem ws, cl_mem cnt)
{
    int64_t groups = g1[6], o = g0[3], mg = o / groups, p = (int64_t)g0[4] * g0[5];
    int64_t kper, splits = conv_sk_splits(g0, g1, n, bn->cus, bn->onepass, &kper);
    int fixup = splits > 1 && bn->fixup;
    if (splits > 1 && !ws &&
        !(ws = ocl_scratch(l, 0, (size_t)(splits * n * o * p) * sizeof(float))))
        return TG_ERR_NOMEM;
    if (fixup && !cnt && !(cnt = ocl_counters(l, (size_t)conv_sk_tiles(g0, g1, n))))
        return TG_ERR_NOMEM;
    cl_kernel k = l->k[K_SK];
    tg_status st = ocl_set_args(l, k, "mmmvvmmiimm", l->in[0], l->in[1], l->out[0], g0, g1, bias,
                                res, (int)splits, (int)kper, ws, fixup ? cnt : NULL);
    if (st == TG_OK)
        st = ocl_nn_tail_args(l, k, 11);
    if (st != TG_OK)
        return st;
    size_t global[3] = {(size_t)(p + NN_SK_TILE - 1) / NN_SK_TILE * 16,
                        (size_t)(mg + NN_SK_TILE - 1) / NN_SK_TILE * 16,
                        (size_t)(n * groups * splits)};
    const size_t local[3] = {16, 16, 1};
    st = ocl_run(l, k, 3, global, local);
    if (st != TG_OK || splits == 1 || fixup)
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
 * the device's tile (nn_conv_sk: the GPU one, ws and cnt as conv_sk's;
 * nn_conv_tiled: the CPU one). */
static tg_status conv_own(ocl_launch *l, graph_op op, cl_mem ws, cl_mem cnt)
{
    ocl_conv_attrs a = ocl_conv_attrs_of(op, l->attrs);
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
        return conv_sk(l, g0, g1, n, bias, res, bn, ws, cnt);
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
 * (l->in), y, the split-K partial outputs, the CLBlast path's plain x and
 * y of conv2d_blk (y also the product before a tail), the tile counters. */
enum { CP_X, CP_W, CP_BIAS, CP_RES, CP_Y, CP_WS, CP_XP, CP_YP, CP_CNT, CP_NBUF };

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
                                  : conv_own(l, op, buf[CP_WS], buf[CP_CNT]);
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
                             key.op == GRAPH_OP_conv2d_blk || tail ? plain_y : 1,
                             (size_t)conv_sk_tiles(g0, g1, x->dim[0])};
    conv_probe_arg pa = {.op = op, .tail = tail, .te = {GRAPH_F32, 1, {(int64_t)ny}}};
    for (int j = 0; j < OCL_MAX_XIN; j++)
        pa.tt[j] = pa.te;
    return ocl_nn_probe(c, &key, sizeof key, elems, CP_NBUF, &bn, timed, conv_probe_way, &pa,
                        CP_WS, CP_Y);
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
    ocl_conv_attrs a = ocl_conv_attrs_of(c->node->op, c->attrs);
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
    if (blas_ok && c->probe && !b->blas) {
        b->onepass = way == OCL_NN_WAY_ONEPASS;
        b->fixup = way == OCL_NN_WAY_FIXUP;
    }
    b->tail = tail;
    int direct = c->in_type[1].ndim == 4 &&
                 c->in_type[1].dim[0] / (a.groups > 0 ? a.groups : 1) < NN_CONV_TILED_MIN;
    /* how it runs, for the profile: [way][tail] */
    static const char *const paths[6][2] = {
        {"CLBlast", "CLBlast + the fused node after"},
        {"direct", "direct + the fused node after"},
        {"CPU tile", "CPU tile + the fused node after"},
        {"GPU tile, K in one pass", "GPU tile, K in one pass + the fused node after"},
        {"GPU tile", "GPU tile + the fused node after"},
        {"GPU tile, K split in one launch", "GPU tile, K split in one launch + the fused node after"},
    };
    c->path = paths[b->blas ? 0 : direct ? 1 : !b->sk ? 2 : b->onepass ? 3 : b->fixup ? 5 : 4]
                   [tail > 0];
    return TG_OK;
}

static tg_status conv_enqueue(ocl_launch *l, graph_op op)
{
    if (graph_type_numel(&l->out_type[0]) == 0)
        return TG_OK;
    const ocl_nn_node *bn = l->data;
    return bn && bn->blas ? conv_blas(l, op, NULL, NULL) : conv_own(l, op, NULL, NULL);
}

static tg_status conv2d_enqueue(ocl_launch *l) { return conv_enqueue(l, GRAPH_OP_conv2d); }
static tg_status conv2d_ep_enqueue(ocl_launch *l) { return conv_enqueue(l, GRAPH_OP_conv2d_ep); }
static tg_status conv2d_blk_enqueue(ocl_launch *l) { return conv_enqueue(l, GRAPH_OP_conv2d_blk); }

static const ocl_op conv2d_op = {conv_prepare, conv2d_enqueue};
static const ocl_op conv2d_ep_op = {conv_prepare, conv2d_ep_enqueue};
static const ocl_op conv2d_blk_op = {conv_prepare, conv2d_blk_enqueue};

void ocl_register_conv(const ocl_op **t)
{
    t[GRAPH_OP_conv2d] = &conv2d_op;
    t[GRAPH_OP_conv2d_ep] = &conv2d_ep_op;
    t[GRAPH_OP_conv2d_blk] = &conv2d_blk_op;
}
