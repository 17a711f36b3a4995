/*
 * ops_dw.c - depthwise convolution on OpenCL: conv2d, conv2d_ep and
 * conv2d_blk nodes with one input channel per group (groups == C, weights
 * [O, 1, KH, KW], any multiplier O / C) run cl/nn_dw.cl's nn_dw_tiled, a
 * work-group per tile of outputs with its input staged in __local memory;
 * every other conv goes to the op ocl_register_nn put in the slot.
 *
 * TG_OPENCL_DW selects: "tiled" or "direct" (the ops_nn.c path:
 * nn_conv_direct, one item per output); another value fails the compile
 * naming it.  Unset: direct, which measured faster on both devices we
 * have: on PoCL (this machine's EPYC) 144-channel depthwise layers 56x56
 * .. 7x7, median 27 ms direct vs 30-34 ms tiled (noisy shared cores;
 * PoCL vectorizes the direct kernel across neighbouring outputs and its
 * caches do what the __local tile does); on an NVIDIA H200 the same stack
 * 0.073/0.072 ms direct vs 0.093/0.099 ms tiled (device-resident,
 * alternating runs), and MobileNetV2 even (0.86-0.96 vs 0.86-0.87 at -O2,
 * too noisy at -O3).  The tiled kernel stays, tested, for devices where
 * it wins.
 *
 * The program is nn_dw.cl with tg_epilogue, nn_common.cl and nn_conv.cl
 * as its prefix; nn_conv_direct from it runs the rare shapes whose staged
 * tile would not fit (large dilations or strides).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "ocl.h"

/* nn_dw.cl's work-group size, outputs per item and __local floats. */
#define DW_ITEMS 64
#define DW_RW 4
#define DW_LMEM 4096

/* The ops this file wraps, in the order conv2d, conv2d_ep, conv2d_blk. */
static const graph_op dw_ops[3] = {GRAPH_OP_conv2d, GRAPH_OP_conv2d_ep, GRAPH_OP_conv2d_blk};
static const ocl_op *dw_base[3];

/* l->data of a node on the tiled path (the base op's data is its own). */
static const char dw_mark = 1;

static int dw_slot(graph_op op)
{
    for (int i = 0; i < 3; i++)
        if (dw_ops[i] == op)
            return i;
    return 0; /* only registered for these */
}

/* One input channel per group, more than one group. */
static int is_depthwise(int64_t groups, const graph_type *w)
{
    return groups > 1 && w->ndim == 4 && w->dim[1] == 1;
}

static const char *const dw_kernels[] = {"nn_dw_tiled", "nn_conv_direct"};

static tg_status dw_prepare(ocl_prep *c)
{
    int slot = dw_slot(c->node->op);
    int64_t groups;
    const graph_ints *post;
    graph_post_prm prm;
    ocl_conv_describe(c->node->op, c->attrs, &groups, &post, &prm);
    const char *mode = getenv("TG_OPENCL_DW");
    if (mode && strcmp(mode, "tiled") != 0 && strcmp(mode, "direct") != 0)
        return ocl_prep_fail(c, TG_ERR_ARG, "TG_OPENCL_DW=\"%s\": want tiled or direct",
                             mode);
    int direct = !mode || strcmp(mode, "direct") == 0;
    /* a node with a tail (a fused node run as it stores: ocl_prep.tail)
     * takes ops_nn.c's kernels, whose program has the tail */
    if (direct || c->tail || c->nin < 2 ||
        !is_depthwise(groups, &c->in_type[1]))
        return dw_base[slot]->prepare(c);
    for (int i = 0; i < c->nin; i++)
        if (c->in_type[i].dtype != GRAPH_F32)
            return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "input %d has dtype %s, want f32", i,
                                 graph_dtype_name(c->in_type[i].dtype));
    static const graph_ints none = {0};
    char epi[2048];
    if (ocl_epilogue_src(post ? post : &none, prm, epi, sizeof epi, c->err, c->errlen))
        return TG_ERR_ARG;
    const char *common = ocl_source("nn_common"), *conv = ocl_source("nn_conv");
    if (!common || !conv)
        return ocl_prep_fail(c, TG_ERR_ARG, "no OpenCL source named \"%s\"",
                             common ? "nn_conv" : "nn_common");
    size_t n = strlen(epi) + strlen(common) + strlen(conv) + 3;
    char *prefix = tg_malloc(n);
    if (!prefix)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    snprintf(prefix, n, "%s\n%s\n%s", epi, common, conv);
    tg_status st = ocl_prep_program(c, "nn_dw", prefix,
                                    ocl_prep_has_fp64(c) ? "-DTG_FP64=1" : "-DTG_FP64=0");
    tg_free(prefix);
    for (int i = 0; i < 2 && st == TG_OK; i++)
        st = ocl_prep_kernel(c, dw_kernels[i]);
    if (st == TG_OK) {
        c->data = (void *)&dw_mark;
        c->path = "depthwise tile";
    }
    return st;
}

/*
 * The tile for outputs OW wide: TW x TH positions of CPG channels, with
 * TW / DW_RW * TH * CPG == DW_ITEMS; narrow outputs take several channels
 * so that the work-group stays busy.  Returns 0 if no tile's staged data
 * fits DW_LMEM floats; else t = nn_dw.cl's tile vector.
 */
static int dw_tile(const int32_t g0[8], const int32_t g1[8], int32_t t[8])
{
    static const int32_t cfg[][3] = {{32, 8, 1}, {16, 16, 1}, {8, 8, 4}, {4, 4, 16}};
    int OW = g0[5], KH = g0[6], KW = g0[7];
    int first = OW >= 24 ? 0 : OW >= 12 ? 1 : OW >= 6 ? 2 : 3;
    for (int i = first; i < 4; i++) {
        int64_t tw = cfg[i][0], th = cfg[i][1], cpg = cfg[i][2];
        int64_t iht = (th - 1) * g1[0] + (int64_t)(KH - 1) * g1[4] + 1;
        int64_t iwt = (tw - 1) * g1[1] + (int64_t)(KW - 1) * g1[5] + 1;
        if (cpg * (iht * iwt + (int64_t)KH * KW) > DW_LMEM)
            continue;
        int32_t v[8] = {(int32_t)tw, (int32_t)th, (int32_t)cpg, (int32_t)iht, (int32_t)iwt,
                        (int32_t)((OW + tw - 1) / tw), g0[3] / g0[0], 0};
        memcpy(t, v, sizeof v);
        return 1;
    }
    return 0;
}

static tg_status dw_enqueue(ocl_launch *l, graph_op op)
{
    if (l->data != &dw_mark)
        return dw_base[dw_slot(op)]->enqueue(l);
    const graph_type *x = &l->in_type[0], *w = &l->in_type[1], *y = &l->out_type[0];
    if (graph_type_numel(y) == 0)
        return TG_OK;
    if (w->dim[1] != 1)
        return ocl_fail(l, TG_ERR_SHAPE, "depthwise conv weights have %lld input channels "
                        "per group at run time, 1 when compiled", (long long)w->dim[1]);
    int32_t g0[8], g1[8], t[8];
    ocl_conv_geometry(op, l->attrs, x, w, y, g0, g1);
    cl_mem bias = l->nin > 2 ? l->in[2] : NULL, res = l->nin > 3 ? l->in[3] : NULL;
    int64_t n = x->dim[0], o = g0[3];
    tg_status zs = ocl_conv_zero_lanes(l, op, o);
    if (zs != TG_OK)
        return zs;
    if (!dw_tile(g0, g1, t)) {
        tg_status s = ocl_set_args(l, l->k[1], "mmmvvmm", l->in[0], l->in[1], l->out[0], g0,
                                   g1, bias, res);
        size_t global[3] = {(size_t)g0[4] * (size_t)g0[5], (size_t)o, (size_t)n};
        const size_t local[3] = {16, 4, 1};
        for (int d = 0; d < 3; d++)
            global[d] = ocl_round_up(global[d], local[d]);
        return s ? s : ocl_run(l, l->k[1], 3, global, local);
    }
    tg_status s = ocl_set_args(l, l->k[0], "mmmvvvmm", l->in[0], l->in[1], l->out[0], g0, g1,
                               t, bias, res);
    int64_t tiles = (int64_t)t[5] * ((g0[4] + t[1] - 1) / t[1]);
    size_t global[3] = {(size_t)(tiles * DW_ITEMS), (size_t)((o + t[2] - 1) / t[2]),
                        (size_t)n};
    const size_t local[3] = {DW_ITEMS, 1, 1};
    return s ? s : ocl_run(l, l->k[0], 3, global, local);
}

static tg_status dw_conv2d_enqueue(ocl_launch *l) { return dw_enqueue(l, GRAPH_OP_conv2d); }
static tg_status dw_conv2d_ep_enqueue(ocl_launch *l) { return dw_enqueue(l, GRAPH_OP_conv2d_ep); }
static tg_status dw_conv2d_blk_enqueue(ocl_launch *l)
{
    return dw_enqueue(l, GRAPH_OP_conv2d_blk);
}

static const ocl_op dw_impl[3] = {{dw_prepare, dw_conv2d_enqueue},
                                  {dw_prepare, dw_conv2d_ep_enqueue},
                                  {dw_prepare, dw_conv2d_blk_enqueue}};

void ocl_register_dw(const ocl_op **t)
{
    for (int i = 0; i < 3; i++) {
        dw_base[i] = t[dw_ops[i]];
        if (dw_base[i])
            t[dw_ops[i]] = &dw_impl[i];
    }
}
