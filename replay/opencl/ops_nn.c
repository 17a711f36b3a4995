/*
 * ops_nn.c - the OpenCL backend's heavy ops: matmul, linear, linear_ep
 * (cl/nn_gemm.cl), conv2d, conv2d_ep, conv2d_blk (cl/nn_conv.cl),
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
 * On devices whose GEMM path is CLBlast (ocl_blas.h), matmul, linear,
 * linear_ep, conv2d, conv2d_ep and (ungrouped) conv2d_blk call it instead
 * (see "CLBlast path" below), with nn_gemm_post applying bias and
 * epilogue after; conv2d_blk converts to and from the blocked layout
 * around the call (nn_conv_unblock, nn_conv_blk_post).
 *
 * Shapes are read from the run's types at enqueue (dynamic dims), so every
 * kernel takes sizes as arguments and uses a fixed local size: PoCL
 * compiles a kernel once per local size, so a driver-chosen one would
 * recompile for new shapes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../graph/alloc.h"
#include "../../graph/infer_norm.h"
#include "ocl_blas.h"
#include "ocl_rt.h"

/* ---- programs ---- */

/*
 * Builds source name with the epilogue post/prm (NULL: none) and
 * nn_common.cl as the prefix, then names the kernels.
 */
static tg_status nn_program(ocl_prep *c, const char *name, const graph_ints *post,
                            graph_post_prm prm, const char *const *kernels, int nk)
{
    static const graph_ints none = {0};
    char epi[2048];
    if (ocl_epilogue_src(post ? post : &none, prm, epi, sizeof epi, c->err, c->errlen))
        return TG_ERR_ARG;
    const char *common = ocl_source("nn_common");
    if (!common)
        return ocl_prep_fail(c, TG_ERR_ARG, "no OpenCL source named \"nn_common\"");
    size_t n = strlen(epi) + strlen(common) + 2;
    char *prefix = tg_malloc(n);
    if (!prefix)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    snprintf(prefix, n, "%s\n%s", epi, common);
    tg_status st = ocl_prep_program(c, name, prefix,
                                    ocl_prep_has_fp64(c) ? "-DTG_FP64=1" : "-DTG_FP64=0");
    tg_free(prefix);
    for (int i = 0; i < nk && st == TG_OK; i++)
        st = ocl_prep_kernel(c, kernels[i]);
    return st;
}

static tg_status need_f32(ocl_prep *c)
{
    for (int i = 0; i < c->nin; i++)
        if (c->in_type[i].dtype != GRAPH_F32)
            return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "input %d has dtype %s, want f32", i,
                                 graph_dtype_name(c->in_type[i].dtype));
    return TG_OK;
}

/* Enqueues k over global (rounded up to local). */
static tg_status run_nd(ocl_launch *l, cl_kernel k, int dims, size_t *global,
                        const size_t *local)
{
    for (int d = 0; d < dims; d++)
        global[d] = ocl_round_up(global[d], local[d]);
    return ocl_run(l, k, dims, global, local);
}

/* ---- matmul, linear, linear_ep ---- */

/*
 * Tile sizes of nn_common.cl (TM x TN per 8x8 work-group).  Products with
 * fewer than 16 rows or columns run one item per output instead.
 */
#define NN_TM 64
#define NN_TN 128
#define NN_SMALL 16

/* A batch of M x K times K x N products: strides in elements. */
typedef struct gemm_args {
    int64_t m, n, k, ars, acs, brs, bcs;
    int32_t nbd, bdim[8], bsa[8], bsb[8];
    int64_t batch;
    cl_mem a, b, c, bias, res;
} gemm_args;

static const char *const gemm_kernels[] = {"nn_gemm_tiled", "nn_gemm_simple", "nn_gemm_post",
                                           "nn_gemm_sk", "nn_gemm_sk_sum"};
#define GEMM_NK 5
#define K_SK 3
#define K_SK_SUM 4

/* ---- the CLBlast path ---- */

/*
 * A node on the CLBlast path has a blas_node as its data (none: our
 * kernels).  The choice is made at prepare from the device's path and
 * what CLBlast can do with the node's attributes and traced shape (which
 * are also warmed up there); a run whose shapes CLBlast cannot take
 * (K 0, a batch broadcast no single stride expresses) uses our kernels,
 * which every gemm node builds anyway.  Bias and epilogue run after the
 * call as nn_gemm_post, in place on the output.
 */
typedef struct blas_node {
    int post; /* a bias or an epilogue: nn_gemm_post runs after */
    int blas; /* CLBlast (else our kernels: a gemm node always has one) */
    int sk;   /* our kernels: the GPU tile, nn_gemm_sk (else nn_gemm_tiled) */
    int cus;  /* the device's compute units (the split of K aims to fill them) */
} blas_node;

/* The post kernel's index in l->k (the gemm program's third kernel, the
 * CLBlast conv's first: nn_gemm_post, or nn_conv_blk_post for
 * conv2d_blk, whose nn_conv_unblock is second). */
#define POST_GEMM 2
#define POST_CONV 0
#define UNBLOCK_CONV 1

static int blas_wanted(const ocl_prep *c) { return c->blas; }

/* 1: our GPU tile for this device, 0: the CPU tile, -1: a bad
 * TG_OPENCL_TILE; *cus the device's compute units. */
static int own_tile(const ocl_prep *c, int *cus)
{
    const char *tile = getenv("TG_OPENCL_TILE");
    cl_device_type type = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    cl_uint n = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof n, &n, NULL);
    *cus = n ? (int)n : 1;
    if (tile && *tile && strcmp(tile, "gpu") && strcmp(tile, "cpu"))
        return -1;
    return tile && *tile ? strcmp(tile, "gpu") == 0 : !(type & CL_DEVICE_TYPE_CPU);
}

static tg_status node_attach(ocl_prep *c, int post, int blas)
{
    blas_node *b = tg_calloc(1, sizeof *b);
    if (!b)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    b->post = post;
    b->blas = blas;
    /* Our own tile by device type: the 64x128 float16 tile for CPU
     * devices (PoCL's best), the 16x16-item 64x64 tile with K split to
     * fill the compute units elsewhere; TG_OPENCL_TILE=cpu|gpu forces. */
    b->sk = own_tile(c, &b->cus);
    if (b->sk < 0) {
        tg_free(b);
        return ocl_prep_fail(c, TG_ERR_ARG, "TG_OPENCL_TILE=\"%s\": want cpu or gpu",
                             getenv("TG_OPENCL_TILE"));
    }
    c->data = b;
    c->data_free = tg_free;
    c->path = blas ? "CLBlast" : b->sk ? "GPU tile" : "CPU tile";
    return TG_OK;
}

static tg_status blas_attach(ocl_prep *c, int post) { return node_attach(c, post, 1); }

/* Runs nn_gemm_post (kernel k) on y's n elements. */
static tg_status blas_post(ocl_launch *l, cl_kernel k, cl_mem y, int64_t n, cl_mem bias,
                           int64_t inner, int64_t nb, cl_mem res)
{
    tg_status st = ocl_set_args(l, k, "mlmlim", y, n, bias, inner, (int)nb, res);
    size_t global[1] = {(size_t)n};
    return st ? st : ocl_run(l, k, 1, global, NULL);
}

/* One operand (rows x cols, strides rs/cs) as CLBlast's transpose and
 * leading dimension; -1 if neither stride is 1 with room for a row. */
static int blas_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *t, size_t *ld)
{
    if (cs == 1 && rs >= (cols > 1 ? cols : 1)) {
        *t = 0, *ld = (size_t)rs;
        return 0;
    }
    if (rs == 1 && cs >= (rows > 1 ? rows : 1)) {
        *t = 1, *ld = (size_t)cs;
        return 0;
    }
    return -1;
}

/* The one batch stride of an operand with batch strides bs over g's batch
 * dims and matrices of msize elements: 0 (broadcast) or msize (dense);
 * -1 when one stride does not express it. */
static int64_t blas_batch_stride(const gemm_args *g, const int32_t *bs, int64_t msize)
{
    int zero = 1, dense = 1;
    int64_t step = msize;
    for (int i = g->nbd - 1; i >= 0; i--) {
        if (g->bdim[i] > 1) {
            zero &= bs[i] == 0;
            dense &= bs[i] == step;
        }
        step *= g->bdim[i];
    }
    return zero ? 0 : dense ? msize : -1;
}

/* g as a CLBlast call (ms_a, ms_b: the operands' matrix sizes); -1 when
 * it cannot be one. */
static int blas_gemm_of(const gemm_args *g, int64_t ms_a, int64_t ms_b, ocl_blas_gemm *o)
{
    memset(o, 0, sizeof *o);
    if (g->m <= 0 || g->n <= 0 || g->k <= 0 ||
        blas_operand(g->m, g->k, g->ars, g->acs, &o->ta, &o->lda) ||
        blas_operand(g->k, g->n, g->brs, g->bcs, &o->tb, &o->ldb))
        return -1;
    int64_t sa = blas_batch_stride(g, g->bsa, ms_a), sb = blas_batch_stride(g, g->bsb, ms_b);
    if (sa < 0 || sb < 0)
        return -1;
    o->m = (size_t)g->m, o->n = (size_t)g->n, o->k = (size_t)g->k;
    o->ldc = o->n, o->sc = o->m * o->n, o->sa = (size_t)sa, o->sb = (size_t)sb;
    o->batch = (size_t)g->batch;
    return 0;
}

/* Runs g through CLBlast (then nn_gemm_post with bias, residual and the
 * epilogue when the node has them), or returns 1 when it cannot. */
static int blas_gemm_try(ocl_launch *l, const gemm_args *g, int64_t ms_a, int64_t ms_b,
                         tg_status *st)
{
    const blas_node *b = l->data;
    ocl_blas_gemm o;
    if (!b || !b->blas || blas_gemm_of(g, ms_a, ms_b, &o))
        return 1;
    char msg[256];
    if (ocl_blas_gemm_run(l->q, &o, g->a, g->b, g->c, msg, sizeof msg)) {
        *st = ocl_fail(l, TG_ERR_BACKEND, "%s", msg);
        return 0;
    }
    *st = b->post ? blas_post(l, l->k[POST_GEMM], g->c, g->m * g->n * g->batch, g->bias, 1,
                              g->n, g->res)
                  : TG_OK;
    return 0;
}

/*
 * The GPU tile (nn_gemm_sk): 64x64 tiles, K split so that tiles x splits
 * reach twice the compute units (each split at least 128 of K, at most 16
 * splits), the partial tiles summed by nn_gemm_sk_sum.
 */
#define SK_TILE 64
static int64_t sk_splits(const gemm_args *g, int cus, int64_t *kper_out)
{
    int64_t tiles = (g->m + SK_TILE - 1) / SK_TILE * ((g->n + SK_TILE - 1) / SK_TILE) * g->batch;
    int64_t want = (2 * (int64_t)cus + tiles - 1) / tiles, most = g->k / 128;
    int64_t splits = want < most ? want : most;
    splits = splits < 1 ? 1 : splits > 16 ? 16 : splits;
    int64_t kper = ocl_round_up((size_t)((g->k + splits - 1) / splits), 16);
    splits = kper ? (g->k + kper - 1) / kper : 1;
    *kper_out = kper;
    return splits < 1 ? 1 : splits;
}

/* ws: the partial tiles' buffer (NULL: the session's scratch). */
static tg_status gemm_sk_enqueue(ocl_launch *l, const gemm_args *g, int cus, cl_mem ws)
{
    int64_t kper, splits = sk_splits(g, cus, &kper);
    if (splits > 1 && !ws &&
        !(ws = ocl_scratch(l, 0, (size_t)(splits * g->batch * g->m * g->n) * sizeof(float))))
        return TG_ERR_NOMEM;
    cl_kernel k = l->k[K_SK];
    tg_status st = ocl_set_args(l, k, "mllmllmiiiivvvmmiim", g->a, g->ars, g->acs, g->b, g->brs,
                                g->bcs, g->c, (int)g->m, (int)g->n, (int)g->k, (int)g->nbd,
                                g->bdim, g->bsa, g->bsb, g->bias, g->res, (int)splits,
                                (int)kper, ws);
    if (st != TG_OK)
        return st;
    size_t global[3] = {(size_t)(g->n + SK_TILE - 1) / SK_TILE * 16,
                        (size_t)(g->m + SK_TILE - 1) / SK_TILE * 16,
                        (size_t)(g->batch * splits)};
    const size_t local[3] = {16, 16, 1};
    st = ocl_run(l, k, 3, global, local);
    if (st != TG_OK || splits == 1)
        return st;
    k = l->k[K_SK_SUM];
    st = ocl_set_args(l, k, "milmiimm", ws, (int)splits, g->batch, g->c, (int)g->m, (int)g->n,
                      g->bias, g->res);
    if (st != TG_OK)
        return st;
    size_t g2[3] = {(size_t)g->n, (size_t)g->m, (size_t)g->batch};
    const size_t l2[3] = {16, 4, 1};
    return run_nd(l, k, 3, g2, l2);
}

/* ws: as gemm_sk_enqueue's. */
static tg_status gemm_enqueue_ws(ocl_launch *l, const gemm_args *g, cl_mem ws)
{
    int simple = g->m < NN_SMALL || g->n < NN_SMALL;
    const blas_node *bn = l->data;
    if (!simple && bn && bn->sk)
        return gemm_sk_enqueue(l, g, bn->cus, ws);
    cl_kernel k = l->k[simple];
    tg_status st = ocl_set_args(l, k, "mllmllmiiiivvvmm", g->a, g->ars, g->acs, g->b, g->brs,
                                g->bcs, g->c, (int)g->m, (int)g->n, (int)g->k, (int)g->nbd,
                                g->bdim, g->bsa, g->bsb, g->bias, g->res);
    if (st != TG_OK)
        return st;
    if (simple) {
        size_t global[3] = {(size_t)g->n, (size_t)g->m, (size_t)g->batch};
        const size_t local[3] = {16, 4, 1};
        return run_nd(l, k, 3, global, local);
    }
    size_t global[3] = {(size_t)(g->n + NN_TN - 1) / NN_TN * 8,
                        (size_t)(g->m + NN_TM - 1) / NN_TM * 8, (size_t)g->batch};
    const size_t local[3] = {8, 8, 1};
    return ocl_run(l, k, 3, global, local);
}

/*
 * One operand as rows x cols matrices with strides (kernels_matmul.c's
 * view_operand): a 1-D operand is one row (as_row) or one column; with
 * transpose the stored last two dims swap.  Returns the matrix size.
 */
static int64_t operand(const graph_type *t, int as_row, int transpose, int64_t *rows,
                       int64_t *cols, int64_t *rs, int64_t *cs)
{
    if (t->ndim == 1) {
        int64_t k = t->dim[0];
        *rows = as_row ? 1 : k, *cols = as_row ? k : 1;
        *rs = as_row ? k : 1, *cs = 1;
        return k;
    }
    int64_t s0 = t->dim[t->ndim - 2], s1 = t->dim[t->ndim - 1];
    *rows = transpose ? s1 : s0, *cols = transpose ? s0 : s1;
    *rs = transpose ? 1 : s1, *cs = transpose ? s1 : 1;
    return s0 * s1;
}

/* Batch strides of t's own batch dims, aligned right to nb output dims;
 * 0 where t has size 1 (broadcast) or no dim. */
static void batch_strides(const graph_type *t, int nb, int64_t msize, int32_t *out)
{
    int tb = t->ndim >= 2 ? t->ndim - 2 : 0;
    int64_t step = msize;
    for (int i = nb - 1; i >= 0; i--) {
        int j = i - (nb - tb);
        int64_t d = j >= 0 ? t->dim[j] : 1;
        out[i] = d == 1 ? 0 : (int32_t)step;
        step *= d;
    }
}

/* A matmul of types ta x tb -> to as g (without buffers); the
 * operands' matrix sizes in ms. */
static void matmul_args(const graph_matmul_attrs *at, const graph_type *ta,
                        const graph_type *tb, const graph_type *to, gemm_args *g, int64_t ms[2])
{
    int64_t kb;
    *g = (gemm_args){.batch = 1};
    ms[0] = operand(ta, 1, ta->ndim >= 2 && at->transpose_a, &g->m, &g->k, &g->ars, &g->acs);
    ms[1] = operand(tb, 0, tb->ndim >= 2 && at->transpose_b, &kb, &g->n, &g->brs, &g->bcs);
    int nb = to->ndim - (ta->ndim >= 2) - (tb->ndim >= 2);
    g->nbd = nb;
    for (int i = 0; i < nb; i++) {
        g->bdim[i] = (int32_t)to->dim[i];
        g->batch *= to->dim[i];
    }
    batch_strides(ta, nb, ms[0], g->bsa);
    batch_strides(tb, nb, ms[1], g->bsb);
}

static tg_status gemm_enqueue(ocl_launch *l, const gemm_args *g)
{
    return gemm_enqueue_ws(l, g, NULL);
}

/* ---- the auto path: CLBlast or our tile, timed per shape ---- */

typedef struct probed {
    cl_context ctx;
    ocl_blas_gemm o;
    int post, bias, res, blas;
    struct probed *next;
} probed;

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static probed *probe_list;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static cl_mem probe_buffer(ocl_prep *c, size_t elems)
{
    cl_int e;
    cl_mem m = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, (elems ? elems : 1) * sizeof(float), NULL,
                              &e);
    if (m)
        ocl_obj_made(OCL_OBJ_BUFFER, m, c->ctx);
    return m;
}

/*
 * Runs node g (its traced shape; bias, residual and epilogue as the node
 * has them) both ways on scratch buffers: our kernels (the GPU tile) and
 * CLBlast (+ nn_gemm_post), once each to build and warm, then 5 times
 * each timed on the host around one wait.  1 if CLBlast took less time,
 * 0 if ours did; CLBlast (the call is warmed) if the probe itself fails.
 * Cached per context, shape and epilogue.
 */
static int gemm_probe(ocl_prep *c, const gemm_args *g0, const ocl_blas_gemm *o, int post,
                      int bias, int res)
{
    pthread_mutex_lock(&probe_mu);
    for (probed *p = probe_list; p; p = p->next)
        if (p->ctx == c->ctx && !memcmp(&p->o, o, sizeof *o) && p->post == post &&
            p->bias == bias && p->res == res) {
            int blas = p->blas;
            pthread_mutex_unlock(&probe_mu);
            return blas;
        }
    pthread_mutex_unlock(&probe_mu);
    blas_node bn = {post, 0, 0, 1};
    bn.sk = own_tile(c, &bn.cus) == 1;
    gemm_args g = *g0;
    int64_t kper, splits = sk_splits(&g, bn.cus, &kper);
    size_t ea = (o->batch - 1) * o->sa + (o->ta ? o->k : o->m) * o->lda;
    size_t eb = (o->batch - 1) * o->sb + (o->tb ? o->n : o->k) * o->ldb;
    size_t ec = o->m * o->n * o->batch;
    cl_mem buf[6] = {probe_buffer(c, ea), probe_buffer(c, eb), probe_buffer(c, ec),
                     probe_buffer(c, o->n), probe_buffer(c, ec),
                     probe_buffer(c, (size_t)splits * ec)};
    cl_kernel k[OCL_MAX_KERNELS] = {0};
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(c->ctx, c->device, 0, &e);
    if (q)
        ocl_obj_made(OCL_OBJ_QUEUE, q, c->ctx);
    int ok = q != NULL;
    for (int i = 0; i < 6; i++)
        ok &= buf[i] != NULL;
    for (int i = 0; i < GEMM_NK && ok; i++) {
        k[i] = clCreateKernel(c->prog, gemm_kernels[i], &e);
        if (k[i])
            ocl_obj_made(OCL_OBJ_KERNEL, k[i], c->prog);
        ok &= k[i] != NULL;
    }
    int blas = 1;
    if (ok) {
        for (int i = 0; i < 6; i++) { /* defined data: NaNs would time differently */
            float zero = 0;
            clEnqueueFillBuffer(q, buf[i], &zero, sizeof zero, 0,
                                (i == 0 ? ea : i == 1 ? eb : i == 3 ? o->n : i == 5 ?
                                 (size_t)splits * ec : ec) * sizeof(float), 0, NULL, NULL);
        }
        char msg[256];
        ocl_launch l = {.q = q, .device = c->device, .attrs = c->attrs, .k = k, .data = &bn,
                        .err = msg, .errlen = sizeof msg};
        g.a = buf[0], g.b = buf[1], g.c = buf[2];
        g.bias = bias ? buf[3] : NULL;
        g.res = res ? buf[4] : NULL;
        double t[2] = {0, 0};
        for (int way = 0; way < 2 && ok; way++)
            for (int rep = 0; rep < 6 && ok; rep++) {
                if (rep == 1) {
                    ok &= clFinish(q) == CL_SUCCESS;
                    t[way] = now_ms();
                }
                if (way == 0)
                    ok &= gemm_enqueue_ws(&l, &g, buf[5]) == TG_OK;
                else
                    ok &= !ocl_blas_gemm_run(q, o, g.a, g.b, g.c, msg, sizeof msg) &&
                          (!post || blas_post(&l, k[POST_GEMM], g.c, (int64_t)ec, g.bias, 1,
                                              g.n, g.res) == TG_OK);
                if (rep == 5) {
                    ok &= clFinish(q) == CL_SUCCESS;
                    t[way] = now_ms() - t[way];
                }
            }
        if (ok)
            blas = t[1] < t[0];
    }
    for (int i = 0; i < OCL_MAX_KERNELS; i++)
        ocl_obj_release(OCL_OBJ_KERNEL, k[i]);
    for (int i = 0; i < 6; i++)
        ocl_obj_release(OCL_OBJ_BUFFER, buf[i]);
    ocl_obj_release(OCL_OBJ_QUEUE, q);
    probed *n = tg_malloc(sizeof *n);
    if (n && ok) {
        pthread_mutex_lock(&probe_mu);
        *n = (probed){c->ctx, *o, post, bias, res, blas, probe_list};
        probe_list = n;
        pthread_mutex_unlock(&probe_mu);
    } else {
        tg_free(n);
    }
    return blas;
}

void ocl_gemm_probe_forget(void)
{
    pthread_mutex_lock(&probe_mu);
    for (probed *p = probe_list, *next; p; p = next) {
        next = p->next;
        tg_free(p);
    }
    probe_list = NULL;
    pthread_mutex_unlock(&probe_mu);
}

static tg_status matmul_prepare(ocl_prep *c)
{
    tg_status st = need_f32(c);
    if (st == TG_OK)
        st = nn_program(c, "nn_gemm", NULL, (graph_post_prm){0}, gemm_kernels, GEMM_NK);
    if (st != TG_OK)
        return st;
    if (!blas_wanted(c) || graph_type_numel(&c->out_type[0]) == 0)
        return node_attach(c, 0, 0);
    gemm_args g;
    int64_t ms[2];
    ocl_blas_gemm o;
    matmul_args(c->attrs, &c->in_type[0], &c->in_type[1], &c->out_type[0], &g, ms);
    if (blas_gemm_of(&g, ms[0], ms[1], &o))
        return node_attach(c, 0, 0); /* our kernels for this node */
    st = ocl_blas_warm_gemm(c, &o);
    if (st == TG_OK && c->probe)
        return node_attach(c, 0, gemm_probe(c, &g, &o, 0, 0, 0));
    return st ? st : blas_attach(c, 0);
}

static tg_status matmul_enqueue(ocl_launch *l)
{
    const graph_type *to = &l->out_type[0];
    if (graph_type_numel(to) == 0)
        return TG_OK;
    gemm_args g;
    int64_t ms[2];
    matmul_args(l->attrs, &l->in_type[0], &l->in_type[1], to, &g, ms);
    g.a = l->in[0], g.b = l->in[1], g.c = l->out[0];
    tg_status st;
    if (!blas_gemm_try(l, &g, ms[0], ms[1], &st))
        return st;
    return gemm_enqueue(l, &g);
}

/* x [..., K] times w [N, K] transposed, as g (without buffers). */
static void linear_args(const graph_type *tx, const graph_type *tw, gemm_args *g)
{
    *g = (gemm_args){.n = tw->dim[0], .k = tw->dim[1], .m = 1, .batch = 1};
    for (int i = 0; i < tx->ndim - 1; i++)
        g->m *= tx->dim[i];
    g->ars = g->k, g->acs = 1, g->brs = 1, g->bcs = g->k;
}

static tg_status linear_prepare(ocl_prep *c)
{
    tg_status st = need_f32(c);
    const graph_ints *post = NULL;
    graph_post_prm prm = {0};
    if (c->node->op == GRAPH_OP_linear_ep) {
        const graph_linear_ep_attrs *at = c->attrs;
        post = &at->post, prm = GRAPH_POST_PRM(at);
    }
    if (st == TG_OK)
        st = nn_program(c, "nn_gemm", post, prm, gemm_kernels, GEMM_NK);
    if (st != TG_OK)
        return st;
    if (!blas_wanted(c))
        return node_attach(c, 0, 0);
    gemm_args g;
    ocl_blas_gemm o;
    linear_args(&c->in_type[0], &c->in_type[1], &g);
    int blas_ok = g.m > 0 && g.n > 0 && blas_gemm_of(&g, 0, 0, &o) == 0;
    if (blas_ok && (st = ocl_blas_warm_gemm(c, &o)) != TG_OK)
        return st;
    int has_post = c->nin > 2 || (post && post->n > 0);
    if (blas_ok && c->probe)
        return node_attach(c, has_post, gemm_probe(c, &g, &o, has_post, c->nin > 2,
                                                   c->nin > 3));
    return blas_attach(c, has_post);
}

/* x [..., K] times w [N, K] transposed (+ b) (+ residual). */
static tg_status linear_enqueue(ocl_launch *l)
{
    gemm_args g;
    linear_args(&l->in_type[0], &l->in_type[1], &g);
    if (g.m == 0 || g.n == 0)
        return TG_OK;
    g.a = l->in[0], g.b = l->in[1], g.c = l->out[0];
    g.bias = l->nin > 2 ? l->in[2] : NULL;
    g.res = l->nin > 3 ? l->in[3] : NULL;
    tg_status st;
    if (!blas_gemm_try(l, &g, 0, 0, &st))
        return st;
    return gemm_enqueue(l, &g);
}

static const ocl_op matmul_op = {matmul_prepare, matmul_enqueue};
static const ocl_op linear_op = {linear_prepare, linear_enqueue};

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

static const char *const conv_kernels[] = {"nn_conv_tiled", "nn_conv_direct"};
static const char *const conv_blas_kernels[] = {"nn_gemm_post"};
static const char *const conv_blk_blas_kernels[] = {"nn_conv_blk_post", "nn_conv_unblock"};

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

static tg_status conv_prepare(ocl_prep *c)
{
    tg_status st = need_f32(c);
    if (st != TG_OK)
        return st;
    conv_attrs a = conv_attrs_of(c->node->op, c->attrs);
    ocl_blas_conv v;
    if (!blas_wanted(c) || conv_blas_of(&a, &c->in_type[0], &c->in_type[1], &v) ||
        graph_type_numel(&c->out_type[0]) == 0)
        return nn_program(c, "nn_conv", a.post, a.prm, conv_kernels, 2);
    /* CLBlast: the gemm program for its nn_gemm_post (nn_conv_blk_post and
     * nn_conv_unblock), with this epilogue */
    st = a.blocked ? nn_program(c, "nn_gemm", a.post, a.prm, conv_blk_blas_kernels, 2)
                   : nn_program(c, "nn_gemm", a.post, a.prm, conv_blas_kernels, 1);
    if (st == TG_OK)
        st = ocl_blas_warm_conv(c, &v);
    /* conv2d_blk always runs its post kernel: it writes the output */
    return st ? st : blas_attach(c, a.blocked || c->nin > 2 || (a.post && a.post->n > 0));
}

/* Output channels per group at or above which the tiled kernel runs. */
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
    return e == CL_SUCCESS
               ? TG_OK
               : ocl_fail(l, TG_ERR_BACKEND, "clEnqueueFillBuffer: %s", ocl_errstr(e));
}

/*
 * conv2d_blk through CLBlast: a blocked x made plain in scratch slot 0 by
 * nn_conv_unblock (a plain stem x is read as it is), convgemm into slot 1
 * (plain [N, O, OH, OW]), then nn_conv_blk_post writes y blocked with
 * bias and epilogue (the residual blocked as y) and the lanes past O 0.
 */
static tg_status conv_blk_blas(ocl_launch *l, const conv_attrs *a, cl_mem bias, cl_mem res)
{
    const graph_type *x = &l->in_type[0], *y = &l->out_type[0];
    ocl_blas_conv v;
    char msg[256];
    if (conv_blas_of(a, x, &l->in_type[1], &v))
        return ocl_fail(l, TG_ERR_BACKEND, "conv2d_blk: CLBlast cannot run this shape");
    int64_t plane = y->dim[2] * y->dim[3], ny = graph_type_numel(y);
    cl_mem xp = l->in[0];
    tg_status st;
    if (x->ndim == 5) {
        int64_t n = (int64_t)(v.batch * v.c * v.h * v.w);
        if (!(xp = ocl_scratch(l, 0, (size_t)n * sizeof(float))))
            return TG_ERR_NOMEM;
        st = ocl_set_args(l, l->k[UNBLOCK_CONV], "mmlil", l->in[0], xp, n, (int)v.c,
                          (int64_t)(v.h * v.w));
        size_t global[1] = {(size_t)n};
        const size_t local[1] = {64};
        if (st != TG_OK || (st = run_nd(l, l->k[UNBLOCK_CONV], 1, global, local)) != TG_OK)
            return st;
    }
    cl_mem yp = ocl_scratch(l, 1, (size_t)(v.batch * v.o) * (size_t)plane * sizeof(float));
    if (!yp)
        return TG_ERR_NOMEM;
    if (ocl_blas_conv_run(l->q, &v, xp, l->in[1], yp, msg, sizeof msg))
        return ocl_fail(l, TG_ERR_BACKEND, "%s", msg);
    st = ocl_set_args(l, l->k[POST_CONV], "mmlilmm", yp, l->out[0], ny, (int)v.o, plane, bias,
                      res);
    size_t global[1] = {(size_t)ny};
    const size_t local[1] = {64};
    return st ? st : run_nd(l, l->k[POST_CONV], 1, global, local);
}

static tg_status conv_enqueue(ocl_launch *l, graph_op op)
{
    conv_attrs a = conv_attrs_of(op, l->attrs);
    const graph_type *x = &l->in_type[0], *y = &l->out_type[0];
    if (graph_type_numel(y) == 0)
        return TG_OK;
    int32_t g0[8], g1[8];
    ocl_conv_geometry(op, l->attrs, x, &l->in_type[1], y, g0, g1);
    cl_mem bias = l->nin > 2 ? l->in[2] : NULL, res = l->nin > 3 ? l->in[3] : NULL;
    const blas_node *bn = l->data;
    if (bn && a.blocked) /* the CLBlast path (prepare checked the attributes) */
        return conv_blk_blas(l, &a, bias, res);
    if (bn) {
        ocl_blas_conv v;
        char msg[256];
        if (conv_blas_of(&a, x, &l->in_type[1], &v))
            return ocl_fail(l, TG_ERR_BACKEND, "conv: CLBlast cannot run this shape");
        if (ocl_blas_conv_run(l->q, &v, l->in[0], l->in[1], l->out[0], msg, sizeof msg))
            return ocl_fail(l, TG_ERR_BACKEND, "%s", msg);
        int64_t plane = y->dim[2] * y->dim[3];
        return bn->post ? blas_post(l, l->k[POST_CONV], l->out[0], graph_type_numel(y), bias,
                                    plane, y->dim[1], res)
                        : TG_OK;
    }
    int64_t n = x->dim[0], o = g0[3], mg = o / a.groups, p = (int64_t)g0[4] * g0[5];
    int tiled = mg >= NN_CONV_TILED_MIN;
    cl_kernel k = l->k[tiled ? 0 : 1];
    tg_status s = ocl_set_args(l, k, "mmmvvmm", l->in[0], l->in[1], l->out[0], g0, g1, bias,
                               res);
    if (s == TG_OK)
        s = ocl_conv_zero_lanes(l, op, o);
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
    return run_nd(l, k, 3, global, local);
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
    tg_status st = need_f32(c);
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
    return s ? s : run_nd(l, l->k[0], 3, global, local);
}

static const ocl_op deconv_op = {deconv_prepare, deconv_enqueue};

/* ---- pools ---- */

static const char *const pool_kernels[] = {"nn_max_pool", "nn_avg_pool", "nn_global_avg_pool"};

static tg_status pool_prepare(ocl_prep *c)
{
    tg_status st = need_f32(c);
    return st ? st : nn_program(c, "nn_pool", NULL, (graph_post_prm){0}, pool_kernels, 3);
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
    return st ? st : run_nd(l, kn, 3, global, local);
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
    tg_status st = need_f32(c);
    return st ? st : nn_program(c, "nn_norm", NULL, (graph_post_prm){0}, norm_kernels, 4);
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
    return st ? st : run_nd(l, l->k[0], 2, global, local);
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
    return st ? st : run_nd(l, l->k[3], 2, global, local);
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
    return nn_program(c, "nn_reduce", NULL, (graph_post_prm){0}, reduce_kernels[row], 2);
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
    return run_nd(l, k, 1, global, local);
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
    return st ? st : run_nd(l, l->k[0], 1, global, local);
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
    tg_status st = need_f32(c);
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
    return st ? st : run_nd(l, l->k[0], 1, global, local);
}

static const ocl_op topk_op = {topk_prepare, topk_enqueue};
static const ocl_op argmax_op = {arg_prepare, argmax_enqueue};
static const ocl_op argmin_op = {arg_prepare, argmin_enqueue};

void ocl_register_nn(const ocl_op **t)
{
    t[GRAPH_OP_matmul] = &matmul_op;
    t[GRAPH_OP_linear] = &linear_op;
    t[GRAPH_OP_linear_ep] = &linear_op;
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
