/*
 * ops_dw.c - depthwise convolution on OpenCL: conv2d, conv2d_ep and
 * conv2d_blk nodes with one input channel per group (groups == C, weights
 * [O, 1, KH, KW], any multiplier O / C) run one of three ways; every other
 * conv goes to the op ocl_register_conv put in the slot (op_table.c).
 *   direct: nn_conv_direct (nn_conv.cl), one item per output;
 *   rows:   cl/nn_dw.cl's nn_dw_rows, DW_RR neighbouring outputs of a row
 *           per item, the input columns they read loaded once into
 *           registers (no __local memory), built for the node's kernel
 *           width, column stride and dilation;
 *   tiled:  nn_dw_tiled, a work-group per tile of outputs with its input
 *           staged in __local memory.
 * TG_OPENCL_DW selects: "direct", "rows", "tiled", "auto" (the default)
 * or "probe"; another value fails the compile naming it.  auto: rows on
 * CPU devices; on others, on the auto GEMM path (ocl_prep.probe, a GPU's
 * default), the probe: the three ways timed on scratch buffers of the
 * node's traced shape (ocl_nn_probe, cached) and the fastest kept; off
 * that path direct.  probe: the probe on any device and path (the tests
 * force it on PoCL).  The profile names the way: "depthwise direct",
 * "depthwise rows", "depthwise tile".  A node whose traced shape the
 * chosen way cannot take (a row window over DW_SPAN_MAX columns, a staged
 * tile over DW_LMEM floats) runs direct; so does a run whose shape
 * changed past what the rows program was built for.
 *
 * Measured on PoCL (this machine's 2-core EPYC, device-resident medians,
 * three alternating rounds): a stack of seven 144-channel 3x3 depthwise
 * layers (+ ReLU6) 56x56 .. 7x7, strides 1 and 2: 12.2 ms direct, 4.3 ms
 * rows, 15.4-15.6 ms tiled; rows wins at every layer, 2.1x (7x7) to 3x
 * (56x56): PoCL gets the window in vector registers and a third of the
 * loads.  MobileNetV2 at -O2: 99-103 ms direct, 76-78 rows, 111-113
 * tiled; at -O3 (conv2d_blk, nChw16c) 100 / 76.6 / 110 ms.  Its cost: a
 * program per kernel width, stride and dilation (and epilogue), MobileNetV2
 * cold (empty PoCL cache) 12.1 s to compile instead of 8.2, cached 0.35 s
 * as before.  Earlier, direct vs tiled: on an NVIDIA H200 the 144-channel
 * stack 0.073/0.072 ms direct vs 0.093/0.099 ms tiled (device-resident,
 * alternating runs), MobileNetV2 even (0.86-0.96 vs 0.86-0.87 at -O2);
 * rows is not yet measured on a GPU (TG_OPENCL_DW=direct|rows|tiled there
 * compares them; auto times them per node).
 *
 * The program of rows and tiled is nn_dw.cl with tg_epilogue, nn_common.cl
 * and nn_conv.cl as its prefix (its nn_conv_direct the direct way); the
 * direct way alone (TG_OPENCL_DW=direct, or a shape rows cannot take) is
 * ops_conv.c's own node.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "ocl.h"
#include "ops_nn.h"

/* nn_dw.cl's work-group size, outputs per item and __local floats of the
 * tiled kernel; the rows kernel's outputs per item (at most) and the
 * widest window of input columns it keeps in registers. */
#define DW_ITEMS 64
#define DW_RW 4
#define DW_LMEM 4096
#define DW_RR 4
#define DW_SPAN_MAX 32

/* The ops this file wraps, in the order conv2d, conv2d_ep, conv2d_blk. */
static const graph_op dw_ops[3] = {GRAPH_OP_conv2d, GRAPH_OP_conv2d_ep, GRAPH_OP_conv2d_blk};
static const ocl_op *dw_base[3];

/*
 * The ways, as ocl_nn_probe's indices: direct in the slot of the probe's
 * fallback (OCL_NN_WAY_BLAS), so that a probe that fails keeps direct;
 * DW_BASE: the node is the base op's (not depthwise, or direct alone).
 */
enum { DW_ROWS = OCL_NN_WAY_SPLIT, DW_DIRECT = OCL_NN_WAY_BLAS, DW_TILED = OCL_NN_WAY_ONEPASS,
       DW_BASE = OCL_NN_WAYS };
_Static_assert(OCL_NN_WAYS > 3, "the depthwise ways are three of ocl_nn_probe's, the others "
                                 "never timed");

/* TG_OPENCL_DW's values. */
enum { DW_MODE_AUTO, DW_MODE_DIRECT, DW_MODE_ROWS, DW_MODE_TILED, DW_MODE_PROBE };

/* l->data of every conv node: the way, the rows program's width of
 * outputs per item, kernel width, column stride and dilation; the base
 * op's data and its free for DW_BASE. */
typedef struct dw_node {
    int way;
    int rr, kw, sw, dil;
    void *base;
    void (*base_free)(void *);
} dw_node;

static atomic_long dw_count[3]; /* ocl_dw_ways: direct, rows, tiled */

void ocl_dw_ways(long n[3])
{
    for (int i = 0; i < 3; i++)
        n[i] = atomic_load(&dw_count[i]);
}

static void dw_node_free(void *p)
{
    dw_node *d = p;
    if (d && d->base_free)
        d->base_free(d->base);
    tg_free(d);
}

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

/* TG_OPENCL_DW as DW_MODE_*, -1 for anything else. */
static int dw_mode(void)
{
    const char *v = getenv("TG_OPENCL_DW");
    static const char *const names[] = {"auto", "direct", "rows", "tiled", "probe"};
    if (!v || !*v)
        return DW_MODE_AUTO;
    for (int i = 0; i < 5; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

/* In the program's kernel order. */
static const char *const dw_kernels[] = {"nn_dw_rows", "nn_dw_tiled", "nn_conv_direct"};
enum { K_ROWS, K_TILED, K_DIRECT };

/* The rows program for geometry g0, g1: outputs per item (DW_RR, fewer
 * for narrower outputs), kernel width, column stride and dilation into
 * d; 0 if its window of input columns would be wider than DW_SPAN_MAX. */
static int dw_rows_fit(const int32_t g0[8], const int32_t g1[8], dw_node *d)
{
    int ow = g0[5];
    d->rr = ow >= DW_RR ? DW_RR : ow >= 1 ? ow : 1;
    d->kw = g0[7], d->sw = g1[1], d->dil = g1[5];
    int64_t span = (int64_t)(d->rr - 1) * d->sw + (int64_t)(d->kw - 1) * d->dil + 1;
    return d->kw >= 1 && d->sw >= 1 && d->dil >= 1 && span <= DW_SPAN_MAX;
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

/* Runs node l (l->in, l->out set) the way d says: rows or tiled where
 * this run's shape lets them, else direct. */
static tg_status dw_run(ocl_launch *l, graph_op op, const dw_node *d)
{
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
    tg_status s = ocl_conv_zero_lanes(l, op, o);
    if (s != TG_OK)
        return s;
    int way = d->way;
    if (way == DW_ROWS) { /* as built: the program's kernel width, stride, dilation */
        int64_t items = o * g0[4] * (((int64_t)g0[5] + d->rr - 1) / d->rr);
        if (g0[7] != d->kw || g1[1] != d->sw || g1[5] != d->dil || items > INT_MAX - 64)
            way = DW_DIRECT;
        else {
            s = ocl_set_args(l, l->k[K_ROWS], "mmmvvmm", l->in[0], l->in[1], l->out[0], g0, g1,
                             bias, res);
            size_t global[2] = {(size_t)items, (size_t)n};
            const size_t local[2] = {64, 1};
            return s ? s : ocl_nn_run_nd(l, l->k[K_ROWS], 2, global, local);
        }
    }
    if (way == DW_TILED && dw_tile(g0, g1, t)) {
        s = ocl_set_args(l, l->k[K_TILED], "mmmvvvmm", l->in[0], l->in[1], l->out[0], g0, g1,
                         t, bias, res);
        int64_t tiles = (int64_t)t[5] * ((g0[4] + t[1] - 1) / t[1]);
        size_t global[3] = {(size_t)(tiles * DW_ITEMS), (size_t)((o + t[2] - 1) / t[2]),
                            (size_t)n};
        const size_t local[3] = {DW_ITEMS, 1, 1};
        return s ? s : ocl_run(l, l->k[K_TILED], 3, global, local);
    }
    s = ocl_set_args(l, l->k[K_DIRECT], "mmmvvmm", l->in[0], l->in[1], l->out[0], g0, g1, bias,
                     res);
    size_t global[3] = {(size_t)g0[4] * (size_t)g0[5], (size_t)o, (size_t)n};
    const size_t local[3] = {16, 4, 1};
    return s ? s : ocl_nn_run_nd(l, l->k[K_DIRECT], 3, global, local);
}

/* What dw_probe times: x, w, bias, the residual, y. */
enum { DP_X, DP_W, DP_BIAS, DP_RES, DP_Y, DP_NBUF };

typedef struct dw_probe_arg {
    graph_op op;
    dw_node d;
} dw_probe_arg;

static tg_status dw_probe_way(ocl_launch *l, cl_mem *buf, const void *arg, int way)
{
    const dw_probe_arg *pa = arg;
    dw_node d = pa->d;
    d.way = way;
    l->in = buf;
    l->out = &buf[DP_Y];
    return dw_run(l, pa->op, &d);
}

/* The fastest of the ways timed (DW_*) for the node's traced shape
 * (ocl_nn_probe: cached per context, geometry, batch, inputs and
 * epilogue flag; direct if the probe fails). */
static int dw_probe(ocl_prep *c, const dw_node *d, int rows, int tiled, int post)
{
    struct {
        int kind, op; /* 'd' */
        int32_t g0[8], g1[8];
        int64_t n;
        int nin, post, rr;
    } key;
    memset(&key, 0, sizeof key);
    const graph_type *x = &c->in_type[0], *y = &c->out_type[0];
    key.kind = 'd', key.op = (int)c->node->op;
    ocl_conv_geometry(c->node->op, c->attrs, x, &c->in_type[1], y, key.g0, key.g1);
    key.n = x->dim[0], key.nin = c->nin, key.post = post, key.rr = d->rr;
    int timed[OCL_NN_WAYS] = {0};
    timed[DW_DIRECT] = 1, timed[DW_ROWS] = rows, timed[DW_TILED] = tiled;
    size_t ny = (size_t)graph_type_numel(y);
    size_t elems[DP_NBUF] = {(size_t)graph_type_numel(x), (size_t)graph_type_numel(&c->in_type[1]),
                             (size_t)key.g0[3], ny, ny};
    ocl_nn_node bn = {0};
    dw_probe_arg pa = {c->node->op, *d};
    return ocl_nn_probe(c, &key, sizeof key, elems, DP_NBUF, &bn, timed, dw_probe_way, &pa, -1,
                        -1);
}

static int dw_on_cpu(const ocl_prep *c)
{
    cl_device_type type = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    return (type & CL_DEVICE_TYPE_CPU) != 0;
}

/* The base op's prepare, its data kept in d (DW_BASE); a depthwise node
 * on it is the direct way. */
static tg_status dw_prepare_base(ocl_prep *c, dw_node *d, int depthwise)
{
    tg_status st = dw_base[dw_slot(c->node->op)]->prepare(c);
    d->way = DW_BASE;
    d->base = c->data, d->base_free = c->data_free;
    c->data = d, c->data_free = dw_node_free;
    if (st == TG_OK && depthwise) {
        c->path = c->tail ? "depthwise direct + the fused node after" : "depthwise direct";
        atomic_fetch_add(&dw_count[0], 1);
    }
    return st;
}

static tg_status dw_prepare(ocl_prep *c)
{
    int64_t groups;
    const graph_ints *post;
    graph_post_prm prm;
    ocl_conv_describe(c->node->op, c->attrs, &groups, &post, &prm);
    int mode = dw_mode();
    if (mode < 0)
        return ocl_prep_fail(c, TG_ERR_ARG,
                             "TG_OPENCL_DW=\"%s\": want auto, direct, rows, tiled or probe",
                             getenv("TG_OPENCL_DW"));
    dw_node *d = tg_calloc(1, sizeof *d);
    if (!d)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    int depthwise = c->nin >= 2 && is_depthwise(groups, &c->in_type[1]);
    /* a node with a tail (a fused node run as it stores: ocl_prep.tail)
     * takes ops_conv.c's kernels, whose program has the tail */
    if (!depthwise || c->tail)
        return dw_prepare_base(c, d, depthwise);
    int32_t g0[8], g1[8], t[8];
    ocl_conv_geometry(c->node->op, c->attrs, &c->in_type[0], &c->in_type[1], &c->out_type[0],
                      g0, g1);
    int rows_fit = dw_rows_fit(g0, g1, d);
    /* auto: rows on CPU devices (it measured faster than direct on PoCL at
     * every layer we have: see the top), the probe on others on the auto
     * path, else direct */
    if (mode == DW_MODE_AUTO)
        mode = dw_on_cpu(c) ? DW_MODE_ROWS : c->probe ? DW_MODE_PROBE : DW_MODE_DIRECT;
    if (mode == DW_MODE_DIRECT || (mode == DW_MODE_ROWS && !rows_fit))
        return dw_prepare_base(c, d, 1);
    c->data = d, c->data_free = dw_node_free;
    for (int i = 0; i < c->nin; i++)
        if (c->in_type[i].dtype != GRAPH_F32)
            return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "input %d has dtype %s, want f32", i,
                                 graph_dtype_name(c->in_type[i].dtype));
    int rows = rows_fit && mode != DW_MODE_TILED;
    int tiled = dw_tile(g0, g1, t) && mode != DW_MODE_ROWS;
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
    /* the rows kernel built for this node only where it may run: the
     * other ways' program is one for every shape */
    char opts[160];
    int fp64 = ocl_prep_has_fp64(c);
    if (rows)
        snprintf(opts, sizeof opts, "-DTG_FP64=%d -DDW_RR=%d -DDW_KW=%d -DDW_SW=%d -DDW_DIL=%d",
                 fp64, d->rr, d->kw, d->sw, d->dil);
    else
        snprintf(opts, sizeof opts, "-DTG_FP64=%d", fp64);
    tg_status st = ocl_prep_program(c, "nn_dw", prefix, opts);
    tg_free(prefix);
    for (int i = 0; i < 3 && st == TG_OK; i++)
        st = ocl_prep_kernel(c, dw_kernels[i]);
    if (st != TG_OK)
        return st;
    int post_any = (post && post->n > 0) || c->nin > 2;
    d->way = mode == DW_MODE_ROWS ? DW_ROWS
             : mode == DW_MODE_TILED ? (tiled ? DW_TILED : DW_DIRECT)
                                     : dw_probe(c, d, rows, tiled, post_any);
    c->path = d->way == DW_ROWS    ? "depthwise rows"
              : d->way == DW_TILED ? "depthwise tile"
                                   : "depthwise direct";
    atomic_fetch_add(&dw_count[d->way == DW_ROWS ? 1 : d->way == DW_TILED ? 2 : 0], 1);
    return TG_OK;
}

static tg_status dw_enqueue(ocl_launch *l, graph_op op)
{
    dw_node *d = l->data;
    if (d->way != DW_BASE)
        return dw_run(l, op, d);
    l->data = d->base;
    tg_status st = dw_base[dw_slot(op)]->enqueue(l);
    l->data = d;
    return st;
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
