/*
 * ops_gemm.c - matmul, linear and linear_ep on OpenCL (cl/nn_gemm.cl):
 * C = A x B (+ bias) (+ the epilogue) over a broadcast batch, with any
 * operand strides.  Three ways, chosen per node at prepare (ocl_blas.h):
 * CLBlast (sgemm, strided-batched sgemm; nn_gemm_post applies bias and
 * epilogue after), our CPU tile (nn_gemm_tiled, 64x128 float16, PoCL's
 * best) and our GPU tile (nn_gemm_sk, 64x64 tiles with K split over
 * work-groups to fill the device); M or N below 16 runs nn_gemm_simple.
 * On the auto path (GPUs' default) gemm_probe times CLBlast against our
 * tile for each node's traced shape (nn_probe.c).  What it shares with
 * ops_conv.c and ops_dw.c (its node data, tail, split of K) is nn_common.c's
 * (ops_nn.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/fused_prog.h"
#include "../../graph/infer_norm.h"
#include "ops_nn.h"
#include "../../graph/graph_impl.h"

/* ---- matmul, linear, linear_ep ---- */

/* Products with fewer than 16 rows or columns run one item per output
 * (NN_TM x NN_TN: ops_nn.h). */
#define NN_SMALL 16

/* A batch of M x K times K x N products: strides in elements. */
typedef struct gemm_args {
    int64_t m, n, k, ars, acs, brs, bcs;
    int32_t nbd, bdim[8], bsa[8], bsb[8];
    int64_t batch;
    cl_mem a, b, c, bias, res;
} gemm_args;

static const char *const gemm_kernels[] = {"nn_gemm_tiled", "nn_gemm_simple", "nn_gemm_post",
                                           "nn_gemm_sk", "nn_gemm_sk_sum", "nn_gemm_thin"};
#define GEMM_NK 6
#define K_SK 3
#define K_SK_SUM 4
#define K_THIN 5
/* nn_gemm_thin instead of nn_gemm_simple on the GPU tile from this K */
#define NN_THIN_K 64

/* ---- the CLBlast path ---- */

#define POST_GEMM 2 /* nn_gemm_post: the gemm program's third kernel */

/* A storing kernel's parameters after its own, from index at: the head's
 * (gamma, beta, eps) when the node has one, then the tail's. */
static tg_status gemm_more_args(ocl_launch *l, cl_kernel k, cl_uint at)
{
    const ocl_nn_node *b = l->data;
    if (b && b->head_at >= 0) {
        if (l->nxin <= b->head_at || l->nxin <= b->head_g || l->nxin <= b->head_b)
            return ocl_fail(l, TG_ERR_STATE, "the layer norm before this one has no buffers");
        cl_mem hg = b->head_g >= 0 ? l->xin[b->head_g] : NULL;
        cl_mem hb = b->head_b >= 0 ? l->xin[b->head_b] : NULL;
        cl_float eps = b->head_eps;
        tg_status st = ocl_set_arg(l, k, at++, sizeof hg, &hg);
        if (st == TG_OK)
            st = ocl_set_arg(l, k, at++, sizeof hb, &hb);
        if (st == TG_OK)
            st = ocl_set_arg(l, k, at++, sizeof eps, &eps);
        if (st != TG_OK)
            return st;
    }
    return ocl_nn_tail_args(l, k, at);
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
    const ocl_nn_node *b = l->data;
    ocl_blas_gemm o;
    if (!b || !b->blas || blas_gemm_of(g, ms_a, ms_b, &o))
        return 1;
    char msg[256];
    int64_t nc = g->m * g->n * g->batch;
    /* with a tail the product goes to scratch (the node's own output has
     * no buffer) and nn_gemm_post writes the tail's output */
    cl_mem c = b->tail ? ocl_scratch(l, 1, (size_t)nc * sizeof(float)) : g->c;
    if (!c) {
        *st = TG_ERR_NOMEM;
        return 0;
    }
    l->enq[OCL_ENQ_BLAS]++;
    if (ocl_blas_gemm_run(l->q, &o, g->a, g->b, c, msg, sizeof msg)) {
        *st = ocl_fail(l, TG_ERR_BACKEND, "%s", msg);
        return 0;
    }
    *st = b->post || b->tail ? ocl_nn_post(l, l->k[POST_GEMM], c, nc, g->bias, 1, g->n, g->res)
                             : TG_OK;
    return 0;
}

/* g's output tiles on the GPU tile (nn_gemm_sk: 64x64), over the batch. */
static int64_t sk_tiles(const gemm_args *g)
{
    return (g->m + NN_SK_TILE - 1) / NN_SK_TILE * ((g->n + NN_SK_TILE - 1) / NN_SK_TILE) *
           g->batch;
}

/* The GPU tile (nn_gemm_sk): g's 64x64 tiles, K split as ocl_nn_sk_splits
 * says, the partial tiles summed by nn_gemm_sk_sum or the last split. */
static int64_t sk_splits(const gemm_args *g, int cus, int onepass, int64_t *kper_out)
{
    return ocl_nn_sk_splits(sk_tiles(g), g->k, cus, onepass, kper_out);
}

/* ws: the partial tiles' buffer, cnt the tile counters (NULL: the
 * session's scratch and counters). */
static tg_status gemm_sk_enqueue(ocl_launch *l, const gemm_args *g, const ocl_nn_node *bn,
                                 cl_mem ws, cl_mem cnt)
{
    int64_t kper, splits = sk_splits(g, bn->cus, bn->onepass, &kper);
    int fixup = splits > 1 && bn->fixup;
    if (splits > 1 && !ws &&
        !(ws = ocl_scratch(l, 0, (size_t)(splits * g->batch * g->m * g->n) * sizeof(float))))
        return TG_ERR_NOMEM;
    if (fixup && !cnt && !(cnt = ocl_counters(l, (size_t)sk_tiles(g))))
        return TG_ERR_NOMEM;
    cl_kernel k = l->k[K_SK];
    tg_status st = ocl_set_args(l, k, "mllmllmiiiivvvmmiimm", g->a, g->ars, g->acs, g->b,
                                g->brs, g->bcs, g->c, (int)g->m, (int)g->n, (int)g->k,
                                (int)g->nbd, g->bdim, g->bsa, g->bsb, g->bias, g->res,
                                (int)splits, (int)kper, ws, fixup ? cnt : NULL);
    if (st == TG_OK)
        st = gemm_more_args(l, k, 20);
    if (st != TG_OK)
        return st;
    size_t global[3] = {(size_t)(g->n + NN_SK_TILE - 1) / NN_SK_TILE * 16,
                        (size_t)(g->m + NN_SK_TILE - 1) / NN_SK_TILE * 16,
                        (size_t)(g->batch * splits)};
    const size_t local[3] = {16, 16, 1};
    st = ocl_run(l, k, 3, global, local);
    if (st != TG_OK || splits == 1 || fixup)
        return st;
    k = l->k[K_SK_SUM];
    st = ocl_set_args(l, k, "milmiimm", ws, (int)splits, g->batch, g->c, (int)g->m, (int)g->n,
                      g->bias, g->res);
    if (st == TG_OK)
        st = ocl_nn_tail_args(l, k, 8);
    if (st != TG_OK)
        return st;
    size_t g2[3] = {(size_t)g->n, (size_t)g->m, (size_t)g->batch};
    const size_t l2[3] = {16, 4, 1};
    return ocl_nn_run_nd(l, k, 3, g2, l2);
}

/* ws, cnt: as gemm_sk_enqueue's. */
static tg_status gemm_enqueue_ws(ocl_launch *l, const gemm_args *g, cl_mem ws, cl_mem cnt)
{
    int simple = g->m < NN_SMALL || g->n < NN_SMALL;
    const ocl_nn_node *bn = l->data;
    if (!simple && bn && bn->sk)
        return gemm_sk_enqueue(l, g, bn, ws, cnt);
    if (!simple && bn && bn->head_at >= 0) /* ocl_head_find: the GPU tile's only */
        return ocl_fail(l, TG_ERR_STATE, "a layer norm before the CPU tile");
    int thin = simple && bn && bn->sk && g->k >= NN_THIN_K;
    cl_kernel k = l->k[thin ? K_THIN : simple];
    tg_status st = ocl_set_args(l, k, "mllmllmiiiivvvmm", g->a, g->ars, g->acs, g->b, g->brs,
                                g->bcs, g->c, (int)g->m, (int)g->n, (int)g->k, (int)g->nbd,
                                g->bdim, g->bsa, g->bsb, g->bias, g->res);
    if (st == TG_OK)
        st = simple ? gemm_more_args(l, k, 16) : ocl_nn_tail_args(l, k, 16);
    if (st != TG_OK)
        return st;
    if (thin) {
        size_t global[3] = {(size_t)g->n * 64, (size_t)g->m, (size_t)g->batch};
        const size_t local[3] = {64, 1, 1};
        return ocl_run(l, k, 3, global, local);
    }
    if (simple) {
        size_t global[3] = {(size_t)g->n, (size_t)g->m, (size_t)g->batch};
        const size_t local[3] = {16, 4, 1};
        return ocl_nn_run_nd(l, k, 3, global, local);
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
    return gemm_enqueue_ws(l, g, NULL, NULL);
}

/* ---- the auto path: CLBlast or our tile, timed per shape (nn_probe.c) ---- */

/* What gemm_probe times: the node's product on the probe's buffers (a, b,
 * c, bias, the residual, the split-K partial tiles, the tile counters)
 * and its CLBlast call;
 * a tail reads full-size inputs (the residual's buffer) and writes the
 * product's. */
typedef struct gemm_probe_arg {
    gemm_args g;
    const ocl_blas_gemm *o;
    int post, bias, res, tail;
    int head; /* a head's gamma and beta: l->xin from this index, else 0 */
    graph_type te, tt[OCL_MAX_XIN];
} gemm_probe_arg;

static tg_status gemm_probe_way(ocl_launch *l, cl_mem *buf, const void *arg, int way)
{
    const gemm_probe_arg *pa = arg;
    cl_mem tin[OCL_MAX_XIN];
    for (int j = 0; j < OCL_MAX_XIN; j++) /* a head's gamma and beta: K floats */
        tin[j] = pa->head && j >= pa->head ? buf[7] : buf[4];
    l->xin = tin, l->xin_type = pa->tt, l->nxin = OCL_MAX_XIN;
    l->xout = &buf[2], l->xout_type = &pa->te, l->nxout = pa->tail ? 1 : 0;
    gemm_args g = pa->g;
    g.a = buf[0], g.b = buf[1], g.c = buf[2];
    g.bias = pa->bias ? buf[3] : NULL;
    g.res = pa->res ? buf[4] : NULL;
    tg_status st;
    if (way != OCL_NN_WAY_BLAS)
        st = gemm_enqueue_ws(l, &g, buf[5], buf[6]);
    else if (ocl_blas_gemm_run(l->q, pa->o, g.a, g.b, g.c, l->err, l->errlen))
        st = TG_ERR_BACKEND;
    else
        st = pa->post || pa->tail ? ocl_nn_post(l, l->k[POST_GEMM], g.c, g.m * g.n * g.batch,
                                                g.bias, 1, g.n, g.res)
                                  : TG_OK;
    l->xin = NULL, l->xout = NULL; /* tin is this call's */
    return st;
}

/*
 * Runs node g (its traced shape; bias, residual and epilogue as the node
 * has them) each way on scratch buffers (ocl_nn_probe): CLBlast (+
 * nn_gemm_post), our GPU tile with K split (+ nn_gemm_sk_sum, or summed
 * by the last split: one launch) and in one pass (one launch, less
 * parallel: on a GPU whose launches cost more than the split saves, the
 * faster); the split ways only where the tile splits K, and
 * TG_OPENCL_SPLITK=on|off|fixup keeps one (ocl_nn_probe_timed).
 * Returns the fastest (OCL_NN_WAY_*); CLBlast (the call is warmed) if the
 * probe itself fails.  Cached per context, shape and epilogue.
 */
static int gemm_probe(ocl_prep *c, const gemm_args *g0, const ocl_blas_gemm *o, int post,
                      int bias, int res, int tail, const ocl_nn_node *head)
{
    struct {
        int kind; /* 'g' */
        ocl_blas_gemm o;
        int post, bias, res, tail, head_g, head_b;
    } key;
    memset(&key, 0, sizeof key);
    key.kind = 'g', key.o = *o, key.post = post, key.bias = bias, key.res = res;
    key.tail = tail;
    key.head_g = head ? head->head_g : -2, key.head_b = head ? head->head_b : -2;
    ocl_nn_node bn = {.post = post, .tail = tail, .cus = 1, .head_at = -1, .head_g = -1,
                      .head_b = -1};
    if (head) /* the stand-ins: x is a, gamma and beta buffer 7 (gemm_probe_way) */
        bn.head_at = head->head_at, bn.head_g = head->head_g, bn.head_b = head->head_b,
        bn.head_eps = head->head_eps;
    bn.sk = ocl_nn_own_tile(c, &bn.cus) == 1;
    size_t ec = o->m * o->n * o->batch;
    gemm_probe_arg pa = {.g = *g0, .o = o, .post = post, .bias = bias, .res = res, .tail = tail,
                         .head = head ? head->head_at + 1 : 0,
                         .te = {GRAPH_F32, 1, {(int64_t)ec}}};
    for (int j = 0; j < OCL_MAX_XIN; j++)
        pa.tt[j] = pa.te;
    int64_t kper, splits = sk_splits(&pa.g, bn.cus, 0, &kper);
    int timed[OCL_NN_WAYS];
    ocl_nn_probe_timed(&bn, splits, timed);
    timed[OCL_NN_WAY_BLAS] &= !head; /* CLBlast cannot normalize A */
    size_t ea = (o->batch - 1) * o->sa + (o->ta ? o->k : o->m) * o->lda;
    size_t eb = (o->batch - 1) * o->sb + (o->tb ? o->n : o->k) * o->ldb;
    /* a, b, c, bias, the residual, the split-K partial tiles, the tile
     * counters, a head's gamma and beta */
    const size_t elems[8] = {ea, eb, ec, o->n, ec, (size_t)splits * ec, (size_t)sk_tiles(&pa.g),
                             o->k};
    return ocl_nn_probe(c, &key, sizeof key, elems, 8, &bn, timed, gemm_probe_way, &pa, 5, 2);
}

/* How a node ran, for the profile: [way][tail]. */
static const char *const path_names[5][2] = {
    {"CLBlast", "CLBlast + the fused node after"},
    {"CPU tile", "CPU tile + the fused node after"},
    {"GPU tile", "GPU tile + the fused node after"},
    {"GPU tile, K in one pass", "GPU tile, K in one pass + the fused node after"},
    {"GPU tile, K split in one launch", "GPU tile, K split in one launch + the fused node after"},
};

/* Gives the node its ocl_nn_node (blas, or our tile; way: OCL_NN_WAY_*, or -1
 * when nothing was probed) with the tail c->tail's program has. */
static tg_status gemm_attach(ocl_prep *c, int post, int blas, int way, int tail)
{
    tg_status st = ocl_nn_attach(c, post, blas);
    if (st != TG_OK)
        return st;
    ocl_nn_node *b = c->data;
    if (way >= 0 && !blas) {
        b->onepass = way == OCL_NN_WAY_ONEPASS;
        b->fixup = way == OCL_NN_WAY_FIXUP;
    }
    b->tail = tail;
    c->path = path_names[blas ? 0 : !b->sk ? 1 : b->onepass ? 3 : b->fixup ? 4 : 2][tail > 0];
    return TG_OK;
}

/* The gemm program (post, prm: the epilogue) with the fused node
 * c->tail (if any) run as the kernels store (ocl_nn_tail_prep). */
static tg_status gemm_program(ocl_prep *c, const graph_ints *post, graph_post_prm prm, int *tail)
{
    char *src;
    tg_status st = ocl_nn_tail_prep(c, &src, tail);
    if (st == TG_OK && c->head) { /* the head's switch first (nn_common.cl) */
        static const char def[] = "#define TG_HEAD 1\n";
        size_t n = src ? strlen(src) : 0;
        char *both = tg_malloc(sizeof def + n);
        if (both) {
            memcpy(both, def, sizeof def - 1);
            memcpy(both + sizeof def - 1, src ? src : "", n + 1);
        } else
            st = ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
        tg_free(src);
        src = both;
    }
    if (st == TG_OK)
        st = ocl_nn_program_tail(c, "nn_gemm", post, prm, src, gemm_kernels, GEMM_NK);
    tg_free(src);
    return st;
}

/* The head c->head (ocl_head_find): its input, gamma and beta become the
 * next of c->xin (after the tail's), as hd says. */
static tg_status head_prep(ocl_prep *c, ocl_nn_node *hd)
{
    hd->head_at = hd->head_g = hd->head_b = -1;
    const graph_node *ln = c->head;
    if (!ln)
        return TG_OK;
    if (c->nxin + ln->nin > OCL_MAX_XIN)
        return ocl_prep_fail(c, TG_ERR_STATE, "the layer norm before it and the fused node "
                             "after it read more than %d values", OCL_MAX_XIN);
    const graph_layer_norm_attrs *at = tg_node_attrs(ln);
    hd->head_eps = at->eps;
    int *slot[3] = {&hd->head_at, &hd->head_g, &hd->head_b};
    for (int j = 0; j < ln->nin && j < 3; j++) {
        *slot[j] = c->nxin;
        c->xin[c->nxin++] = ln->in[j];
    }
    return TG_OK;
}

static tg_status matmul_prepare(ocl_prep *c)
{
    int tail = 0;
    tg_status st = ocl_nn_need_f32(c);
    if (st == TG_OK)
        st = gemm_program(c, NULL, (graph_post_prm){0}, &tail);
    if (st != TG_OK)
        return st;
    if (!ocl_nn_blas_wanted(c) || graph_type_numel(&c->out_type[0]) == 0)
        return gemm_attach(c, 0, 0, -1, tail);
    gemm_args g;
    int64_t ms[2];
    ocl_blas_gemm o;
    matmul_args(c->attrs, &c->in_type[0], &c->in_type[1], &c->out_type[0], &g, ms);
    if (blas_gemm_of(&g, ms[0], ms[1], &o))
        return gemm_attach(c, 0, 0, -1, tail); /* our kernels for this node */
    st = ocl_blas_warm_gemm(c, &o);
    if (st == TG_OK && c->probe) {
        int way = gemm_probe(c, &g, &o, 0, 0, 0, tail, NULL);
        return gemm_attach(c, 0, way == OCL_NN_WAY_BLAS, way, tail);
    }
    return st ? st : gemm_attach(c, 0, 1, -1, tail);
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

/* A linear with a head (hd): our GPU tile only (CLBlast cannot normalize
 * A), split or not as the probe or TG_OPENCL_SPLITK says. */
static tg_status linear_head_attach(ocl_prep *c, const graph_ints *post, graph_post_prm prm,
                                    int tail, const ocl_nn_node *hd)
{
    (void)prm;
    int has_post = c->nin > 2 || (post && post->n > 0), way = -1;
    gemm_args g;
    ocl_blas_gemm o;
    linear_args(&c->in_type[0], &c->in_type[1], &g);
    if (c->probe && g.m > 0 && g.n > 0 && blas_gemm_of(&g, 0, 0, &o) == 0) {
        way = gemm_probe(c, &g, &o, has_post, c->nin > 2, c->nin > 3, tail, hd);
        if (way == OCL_NN_WAY_BLAS) /* the probe failed */
            way = -1;
    }
    tg_status st = gemm_attach(c, has_post, 0, way, tail);
    if (st != TG_OK)
        return st;
    ocl_nn_node *b = c->data;
    if (!b->sk)
        return ocl_prep_fail(c, TG_ERR_STATE, "the layer norm before it needs the GPU tile");
    b->head_at = hd->head_at, b->head_g = hd->head_g, b->head_b = hd->head_b;
    b->head_eps = hd->head_eps;
    return TG_OK;
}

static tg_status linear_prepare(ocl_prep *c)
{
    tg_status st = ocl_nn_need_f32(c);
    const graph_ints *post = NULL;
    graph_post_prm prm = {0};
    if (c->node->op == GRAPH_OP_linear_ep) {
        const graph_linear_ep_attrs *at = c->attrs;
        post = &at->post, prm = GRAPH_POST_PRM(at);
    }
    int tail = 0;
    ocl_nn_node hd;
    if (st == TG_OK)
        st = gemm_program(c, post, prm, &tail);
    if (st == TG_OK)
        st = head_prep(c, &hd);
    if (st != TG_OK)
        return st;
    if (c->head)
        return linear_head_attach(c, post, prm, tail, &hd);
    if (!ocl_nn_blas_wanted(c))
        return gemm_attach(c, 0, 0, -1, tail);
    gemm_args g;
    ocl_blas_gemm o;
    linear_args(&c->in_type[0], &c->in_type[1], &g);
    int blas_ok = g.m > 0 && g.n > 0 && blas_gemm_of(&g, 0, 0, &o) == 0;
    if (blas_ok && (st = ocl_blas_warm_gemm(c, &o)) != TG_OK)
        return st;
    int has_post = c->nin > 2 || (post && post->n > 0);
    if (blas_ok && c->probe) {
        int way = gemm_probe(c, &g, &o, has_post, c->nin > 2, c->nin > 3, tail, NULL);
        return gemm_attach(c, has_post, way == OCL_NN_WAY_BLAS, way, tail);
    }
    return gemm_attach(c, has_post, 1, -1, tail);
}

/* x [..., K] times w [N, K] transposed (+ b) (+ residual). */
static tg_status linear_enqueue(ocl_launch *l)
{
    gemm_args g;
    linear_args(&l->in_type[0], &l->in_type[1], &g);
    if (g.m == 0 || g.n == 0)
        return TG_OK;
    const ocl_nn_node *b = l->data;
    /* with a head, A is the layer norm's input (its output has no memory) */
    g.a = b && b->head_at >= 0 && b->head_at < l->nxin ? l->xin[b->head_at] : l->in[0];
    g.b = l->in[1], g.c = l->out[0];
    g.bias = l->nin > 2 ? l->in[2] : NULL;
    g.res = l->nin > 3 ? l->in[3] : NULL;
    tg_status st;
    if (!blas_gemm_try(l, &g, 0, 0, &st))
        return st;
    return gemm_enqueue(l, &g);
}

/* ---- a layer_norm run by the linear after it (the head) ---- */

int ocl_head_mode(cl_device_id device, char *err, size_t errlen)
{
    /* auto: not on CPU devices, whose CPU tile does not take it */
    return ocl_device_switch("TG_OPENCL_HEAD", "on", device, err, errlen);
}

tg_status ocl_head_find(const graph *g, cl_device_id device, int gemm_path, int8_t *role,
                        int32_t *head)
{
    int cus;
    for (int32_t i = 0; i < g->nnodes; i++)
        head[i] = -1;
    if (gemm_path == OCL_GEMM_CLBLAST || ocl_nn_own_tile_dev(device, &cus) != 1)
        return TG_OK;
    int32_t *uses = ocl_value_uses(g, NULL);
    if (!uses)
        return TG_ERR_NOMEM;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if ((n->flags & GRAPH_NODE_DEAD) || role[i] != OCL_ATTN_NONE || n->nin < 2 ||
            (n->op != GRAPH_OP_linear && n->op != GRAPH_OP_linear_ep))
            continue;
        int32_t v = n->in[0], ln = g->values[v].node;
        if (uses[v] != 1 || ln < 0 || ln >= i || role[ln] != OCL_ATTN_NONE)
            continue;
        const graph_node *L = &g->nodes[ln];
        const graph_value *x = L->nin > 0 ? &g->values[L->in[0]] : NULL;
        if (L->op != GRAPH_OP_layer_norm || (L->flags & GRAPH_NODE_DEAD) || L->nout != 1 ||
            !x || x->type.dtype != GRAPH_F32 || x->type.ndim < 1 ||
            g->values[v].type.dtype != GRAPH_F32)
            continue;
        const graph_layer_norm_attrs *at = tg_node_attrs(L);
        if (graph_norm_axis(at->axis, x->type.ndim) != x->type.ndim - 1)
            continue; /* over the rows of A only */
        head[i] = ln;
        role[ln] = OCL_ATTN_ABSORBED;
    }
    tg_free(uses);
    return TG_OK;
}

static const ocl_op matmul_op = {matmul_prepare, matmul_enqueue};
static const ocl_op linear_op = {linear_prepare, linear_enqueue};

void ocl_register_gemm(const ocl_op **t)
{
    t[GRAPH_OP_matmul] = &matmul_op;
    t[GRAPH_OP_linear] = &linear_op;
    t[GRAPH_OP_linear_ep] = &linear_op;
}
