/*
 * ops_nn.c - the OpenCL backend's heavy ops besides the products and
 * convolutions (matmul, linear and linear_ep are ops_gemm.c's; conv2d,
 * conv2d_ep and conv2d_blk ops_conv.c's; all three share ops_nn.h):
 * conv_transpose2d (cl/nn_deconv.cl), the pools (cl/nn_pool.cl),
 * batch_norm, layer_norm, softmax, log_softmax (cl/nn_norm.cl),
 * reduce_sum/mean/max (cl/nn_reduce.cl),
 * argmax/argmin (cl/nn_arg.cl) and cumsum (cl/nn_scan.cl), through the
 * interface of ocl.h; the programs they build are nn_common.c's.
 * Semantics are the CPU kernels' (eager/kernels_*.c); shapes and
 * attributes were checked by graph/infer_*.c, so prepare only refuses
 * what the kernels cannot do (dtypes).
 *
 * Programs: each is common.cl + a prefix + the op's source; the prefix is
 * the node's epilogue (tg_epilogue from ocl_epilogue_src: the identity for
 * ops without one) followed by cl/nn_common.cl, and the options say
 * whether the device has fp64 (sums in double, as on the CPU).  Nodes
 * with the same epilogue share one build per device (ocl.h's cache).
 * cl/nn_arg.cl (no sums), cl/nn_scan.cl (float sums in order, as the
 * CPU's) and cl/nn_deconv.cl (float sums, as the direct conv kernel)
 * need neither and have no epilogue: no prefix.
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
    graph_ints_pair(&a->stride, 1, st);
    graph_ints_pair(&a->dilation, 1, dil);
    graph_ints_pad4(&a->padding, pad); /* output_padding only sizes y */
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
    graph_ints_pair(kl, 1, k);
    graph_ints_pair(sl, 0, s);
    if (sl->n == 0)
        s[0] = k[0], s[1] = k[1];
    graph_ints_pad4(pl, p);
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
/* ---- cumsum ---- */

static tg_status cumsum_prepare(ocl_prep *c)
{
    static const char *const names[] = {"nn_cumsum_f32", "nn_cumsum_i64", "nn_cumsum_i32"};
    graph_dtype dt = c->in_type[0].dtype;
    int row = dt == GRAPH_F32 ? 0 : dt == GRAPH_I64 ? 1 : dt == GRAPH_I32 ? 2 : -1;
    if (row < 0)
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "dtype %s", graph_dtype_name(dt));
    tg_status st = ocl_prep_program(c, "nn_scan", NULL, NULL);
    return st == TG_OK ? ocl_prep_kernel(c, names[row]) : st;
}

/* One item per line along the axis (cl/nn_scan.cl). */
static tg_status cumsum_enqueue(ocl_launch *l)
{
    const graph_cumsum_attrs *a = l->attrs;
    const graph_type *x = &l->in_type[0];
    int axis = graph_norm_axis(a->axis, x->ndim); /* checked by inference */
    int64_t outer = x->ndim ? dims_prod(x, 0, axis) : 1, len = x->ndim ? x->dim[axis] : 1;
    int64_t inner = x->ndim ? dims_prod(x, axis + 1, x->ndim) : 1;
    int64_t nline = outer * inner;
    if (nline * len == 0)
        return TG_OK;
    tg_status st = ocl_set_args(l, l->k[0], "mmlllii", l->in[0], l->out[0], nline, len, inner,
                                (int)(a->exclusive != 0), (int)(a->reverse != 0));
    size_t global[1] = {(size_t)nline};
    const size_t local[1] = {64};
    return st ? st : ocl_nn_run_nd(l, l->k[0], 1, global, local);
}

static const ocl_op cumsum_op = {cumsum_prepare, cumsum_enqueue};

static const ocl_op argmax_op = {arg_prepare, argmax_enqueue};
static const ocl_op argmin_op = {arg_prepare, argmin_enqueue};

void ocl_register_nn(const ocl_op **t)
{
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
    t[GRAPH_OP_cumsum] = &cumsum_op;
}
