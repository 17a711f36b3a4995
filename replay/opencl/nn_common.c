/*
 * nn_common.c - what the heavy op files (ops_nn.c, ops_gemm.c, ops_conv.c,
 * ops_dw.c) share, declared in ops_nn.h: their programs (the epilogue and
 * cl/nn_common.cl as the prefix), launches over a rounded-up range, the
 * product's node data and tile choice, the split of K, nn_gemm_post, the
 * fused tail a storing kernel runs, and a conv's attributes and geometry.
 * A helper file: it calls prep.c, fused.c and runtime.c, never an op file
 * (docs/ARCHITECTURE.md, "Leaves").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/fused_prog.h"
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

/* ---- the products: node data, tiles, the split of K, the tail ---- */

int ocl_nn_own_tile(const ocl_prep *c, int *cus) { return ocl_nn_own_tile_dev(c->device, cus); }

int ocl_nn_own_tile_dev(cl_device_id device, int *cus)
{
    const char *tile = getenv("TG_OPENCL_TILE");
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    cl_uint n = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof n, &n, NULL);
    *cus = n ? (int)n : 1;
    if (tile && *tile && strcmp(tile, "gpu") && strcmp(tile, "cpu"))
        return -1;
    return tile && *tile ? strcmp(tile, "gpu") == 0 : !(type & CL_DEVICE_TYPE_CPU);
}

int ocl_nn_splitk_mode(void)
{
    const char *v = getenv("TG_OPENCL_SPLITK");
    if (!v || !*v || !strcmp(v, "auto"))
        return 0;
    return !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 2 : !strcmp(v, "fixup") ? 3 : -1;
}

tg_status ocl_nn_attach(ocl_prep *c, int post, int blas)
{
    if (ocl_nn_splitk_mode() < 0)
        return ocl_prep_fail(c, TG_ERR_ARG, "TG_OPENCL_SPLITK=\"%s\": want auto, on, off or "
                             "fixup",
                             getenv("TG_OPENCL_SPLITK"));
    ocl_nn_node *b = tg_calloc(1, sizeof *b);
    if (!b)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    b->post = post;
    b->blas = blas;
    /* Our own tile by device type: the 64x128 float16 tile for CPU
     * devices (PoCL's best), the 16x16-item 64x64 tile with K split to
     * fill the compute units elsewhere; TG_OPENCL_TILE=cpu|gpu forces. */
    b->sk = ocl_nn_own_tile(c, &b->cus);
    if (b->sk < 0) {
        tg_free(b);
        return ocl_prep_fail(c, TG_ERR_ARG, "TG_OPENCL_TILE=\"%s\": want cpu or gpu",
                             getenv("TG_OPENCL_TILE"));
    }
    b->onepass = ocl_nn_splitk_mode() == 2;
    b->fixup = ocl_nn_splitk_mode() == 3;
    b->head_at = b->head_g = b->head_b = -1;
    c->data = b;
    c->data_free = tg_free;
    c->path = blas ? "CLBlast" : !b->sk ? "CPU tile" : b->onepass ? "GPU tile, K in one pass"
              : b->fixup ? "GPU tile, K split in one launch" : "GPU tile";
    return TG_OK;
}

tg_status ocl_nn_tail_args(ocl_launch *l, cl_kernel k, cl_uint at)
{
    const ocl_nn_node *b = l->data;
    if (!b || !b->tail)
        return TG_OK;
    if (l->nxout < 1 || l->nxin < b->tail - 1)
        return ocl_fail(l, TG_ERR_STATE, "the fused node after this one has no buffers");
    int64_t n = graph_type_numel(&l->xout_type[0]);
    tg_status st = ocl_set_arg(l, k, at++, sizeof(cl_mem), &l->xout[0]);
    for (int j = 0; j + 1 < b->tail && st == TG_OK; j++) {
        int64_t nj = graph_type_numel(&l->xin_type[j]);
        if (nj != n && nj != 1) /* ocl_tail_find's shapes hold at every run */
            return ocl_fail(l, TG_ERR_STATE, "the fused node's input %d has %lld elements, "
                            "not %lld or 1", j, (long long)nj, (long long)n);
        cl_int m = nj == n;
        st = ocl_set_arg(l, k, at++, sizeof(cl_mem), &l->xin[j]);
        if (st == TG_OK)
            st = ocl_set_arg(l, k, at++, sizeof m, &m);
    }
    return st;
}

/* Runs nn_gemm_post (kernel k) on y's n elements. */
tg_status ocl_nn_post(ocl_launch *l, cl_kernel k, cl_mem y, int64_t n, cl_mem bias,
                      int64_t inner, int64_t nb, cl_mem res)
{
    tg_status st = ocl_set_args(l, k, "mlmlim", y, n, bias, inner, (int)nb, res);
    if (st == TG_OK)
        st = ocl_nn_tail_args(l, k, 6);
    size_t global[1] = {(size_t)n};
    return st ? st : ocl_run(l, k, 1, global, NULL);
}

int64_t ocl_nn_sk_splits(int64_t tiles, int64_t k, int cus, int onepass, int64_t *kper_out)
{
    if (onepass) {
        *kper_out = ocl_round_up((size_t)(k > 0 ? k : 1), 16);
        return 1;
    }
    int64_t want = (2 * (int64_t)cus + tiles - 1) / (tiles > 0 ? tiles : 1), most = k / 128;
    int64_t splits = want < most ? want : most;
    splits = splits < 1 ? 1 : splits > 16 ? 16 : splits;
    int64_t kper = ocl_round_up((size_t)((k + splits - 1) / splits), 16);
    splits = kper ? (k + kper - 1) / kper : 1;
    *kper_out = kper;
    return splits < 1 ? 1 : splits;
}

tg_status ocl_nn_tail_prep(ocl_prep *c, char **src, int *tail)
{
    *src = NULL;
    *tail = 0;
    if (!c->tail)
        return TG_OK;
    const graph_node *f = c->tail;
    const graph_fused_attrs *at = tg_node_attrs(f);
    fused_prog fp;
    char msg[256];
    if (fused_prog_parse(at->prog.s, f->nin, &fp, msg, sizeof msg) != TG_OK)
        return ocl_prep_fail(c, TG_ERR_ARG, "the fused node after it: %s", msg);
    int32_t v = c->node->out[0];
    c->nxin = 0;
    for (int k = 0; k < f->nin; k++) {
        int seen = f->in[k] == v;
        for (int j = 0; j < c->nxin; j++)
            seen |= c->xin[j] == f->in[k];
        if (!seen) {
            if (c->nxin == OCL_MAX_XIN)
                return ocl_prep_fail(c, TG_ERR_STATE, "the fused node after it has more than "
                                     "%d other inputs", OCL_MAX_XIN);
            c->xin[c->nxin++] = f->in[k];
        }
    }
    c->xout[0] = f->out[0];
    c->nxout = 1;
    size_t len = ocl_tail_source_bound(&fp, f->nin);
    if (!(*src = tg_malloc(len)))
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    int r = ocl_tail_source(f, v, &fp, *src, len);
    if (r < 0) {
        tg_free(*src);
        *src = NULL;
        return r == -1 ? ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "an op of the fused node after "
                                       "it has no OpenCL form")
                       : ocl_prep_fail(c, TG_ERR_NOMEM, "generated source too long");
    }
    *tail = 1 + c->nxin;
    return TG_OK;
}

/* ---- convolutions ---- */

ocl_conv_attrs ocl_conv_attrs_of(graph_op op, const void *attrs)
{
    if (op == GRAPH_OP_conv2d) {
        const graph_conv2d_attrs *a = attrs;
        return (ocl_conv_attrs){&a->stride, &a->padding, &a->dilation, NULL, a->groups, {0}, 0};
    }
    if (op == GRAPH_OP_conv2d_ep) {
        const graph_conv2d_ep_attrs *a = attrs;
        return (ocl_conv_attrs){&a->stride, &a->padding, &a->dilation, &a->post, a->groups,
                            GRAPH_POST_PRM(a), 0};
    }
    const graph_conv2d_blk_attrs *a = attrs;
    return (ocl_conv_attrs){&a->stride, &a->padding, &a->dilation, &a->post, a->groups,
                        GRAPH_POST_PRM(a), 1};
}

void ocl_conv_describe(graph_op op, const void *attrs, int64_t *groups,
                       const graph_ints **post, graph_post_prm *prm)
{
    ocl_conv_attrs a = ocl_conv_attrs_of(op, attrs);
    *groups = a.groups;
    *post = a.post;
    *prm = a.prm;
}

void ocl_conv_geometry(graph_op op, const void *attrs, const graph_type *x,
                       const graph_type *w, const graph_type *y, int32_t g0[8], int32_t g1[8])
{
    ocl_conv_attrs a = ocl_conv_attrs_of(op, attrs);
    int64_t st[2], dil[2], pad[4];
    graph_ints_pair(a.stride, 1, st);
    graph_ints_pair(a.dilation, 1, dil);
    graph_ints_pad4(a.padding, pad);
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
