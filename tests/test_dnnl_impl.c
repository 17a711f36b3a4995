/*
 * test_dnnl_impl.c - which oneDNN implementation the conv and matmul
 * kernels run (eager_dnnl_impl_of / eager_dnnl_node_impl), and that none
 * is a reference one (oneDNN's plain C loops: a DeepLabV3 ASPP conv took
 * 2.5 s at -O3 in the blocked layout against 33 ms plain):
 *   - eager_dnnl_impl_is_ref on known names;
 *   - every conv / matmul / linear node of the suite's workloads
 *     (workloads/workloads.c, default sizes) at -O0..-O3 names a JIT one;
 *   - plain kxk convs, grouped or of 16+ channels, with a residual in
 *     their epilogue or not (resblock's and the imported models'), run a
 *     direct or depthwise kernel, not im2col + GEMM (check_direct);
 *   - the probe agrees with oneDNN asked directly here (the test's own
 *     descriptors) for plain and blocked dilated 3x3 convs;
 *   - dilated 3x3 convs (dilation 24 and 36, 32 channels at 33x33, the
 *     ASPP's shape with fewer channels) at -O3: the layout pass makes
 *     them conv2d_blk exactly when oneDNN has a JIT blocked kernel for
 *     them, else leaves them plain and says so in --explain, and either
 *     way the replayed result matches a naive dilated conv.
 */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/workloads.h"
#ifndef TG_TEST_DATA
#define TG_TEST_DATA "tests/data"
#endif
#include "formats/onnx.h"
#include "check.h"
#include "cpu_caps.h"
#include "eager/dnnl_util.h"
#include "eager/eager.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

static void test_is_ref(void)
{
    CHECK(eager_dnnl_impl_is_ref("ref:any"));
    CHECK(eager_dnnl_impl_is_ref("ref_fused_convolution:any"));
    CHECK(eager_dnnl_impl_is_ref("gemm:ref"));
    CHECK(!eager_dnnl_impl_is_ref("jit:avx512_core"));
    CHECK(!eager_dnnl_impl_is_ref("brg:avx512_core"));
    CHECK(!eager_dnnl_impl_is_ref("x64:gemm:jit"));
    CHECK(!eager_dnnl_impl_is_ref("jit_wino_4x3:avx512_core"));
    CHECK(!eager_dnnl_impl_is_ref(""));
    CHECK(!eager_dnnl_impl_is_ref(NULL));
    char err[128];
    graph_type t[2] = {{GRAPH_F32, 1, {4}}, {GRAPH_F32, 1, {4}}};
    CHECK(eager_dnnl_impl_of(GRAPH_OP_add, NULL, t, 2, &t[0], 0, 1, NULL, 0, err, sizeof err) ==
          TG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err, "add with 2 inputs: not a oneDNN conv or matmul kernel"), "%s", err);
}

/* Checks every live oneDNN node of g; returns how many there were. */
static int check_nodes(const graph *g, const char *what, int *nblk)
{
    int n = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *nd = &g->nodes[i];
        if ((nd->flags & GRAPH_NODE_DEAD) || !eager_dnnl_op_has_impl(nd->op))
            continue;
        char impl[64], err[256];
        tg_status st = eager_dnnl_node_impl(g, i, impl, sizeof impl, err, sizeof err);
        CHECK_MSG(st == TG_OK && impl[0] && !eager_dnnl_impl_is_ref(impl),
                  "%s: node %d (%s): %s (%s)", what, (int)i, graph_ops[nd->op].name, impl,
                  st == TG_OK ? "" : err);
        n++;
        *nblk += nd->op == GRAPH_OP_conv2d_blk;
    }
    return n;
}

/*
 * Plain convs (conv2d, conv2d_ep: at -O0..-O2) with a kernel larger than
 * 1x1 that are grouped, or have 16 or more channels in and out, residual
 * epilogue or not, run oneDNN's direct or depthwise kernel on converted
 * tensors, never im2col + GEMM (kernels_conv.c, conv_prepare).  Returns
 * how many it checked.
 */
static int check_direct(const graph *h, const char *what)
{
    int n = 0;
    for (int32_t i = 0; i < h->nnodes; i++) {
        const graph_node *nd = &h->nodes[i];
        if ((nd->flags & GRAPH_NODE_DEAD) ||
            (nd->op != GRAPH_OP_conv2d && nd->op != GRAPH_OP_conv2d_ep))
            continue;
        int64_t groups = nd->op == GRAPH_OP_conv2d
                             ? ((const graph_conv2d_attrs *)tg_node_attrs(nd))->groups
                             : ((const graph_conv2d_ep_attrs *)tg_node_attrs(nd))->groups;
        const graph_type *x = &h->values[nd->in[0]].type, *w = &h->values[nd->in[1]].type;
        if (w->dim[2] * w->dim[3] < 2 || (groups < 2 && (x->dim[1] < 16 || w->dim[0] < 16)))
            continue;
        char impl[128] = "", err[256] = "";
        CHECK(eager_dnnl_node_impl(h, i, impl, sizeof impl, err, sizeof err) == TG_OK);
        CHECK_MSG(impl[0] && !strstr(impl, "gemm") && !eager_dnnl_impl_is_ref(impl),
                  "%s: node %d (%s, %lld groups, %lld -> %lld channels) runs %s", what, (int)i,
                  graph_ops[nd->op].name, (long long)groups, (long long)x->dim[1],
                  (long long)w->dim[0], impl);
        n++;
    }
    return n;
}

static void test_workloads(void)
{
    for (int k = 0; k < WL_COUNT; k++) {
        workload w;
        if (workload_make(&w, (workload_kind)k, NULL) != TG_OK) {
            CHECK_MSG(0, "workload %d: %s", k, eager_error());
            continue;
        }
        graph *g = workload_trace(&w, 0);
        CHECK_MSG(g != NULL, "%s: trace: %s", w.name, eager_error());
        for (int level = 0; g && level <= 3; level++) {
            graph *h = graph_clone(g);
            opt_options o = opt_default_options();
            o.level = level;
            char err[512] = "", what[64];
            CHECK_MSG(h && opt_optimize(h, &o, NULL, err, sizeof err) == TG_OK, "%s -O%d: %s",
                      w.name, level, err);
            snprintf(what, sizeof what, "%s -O%d", w.name, level);
            int nblk = 0, n = h ? check_nodes(h, what, &nblk) : 0;
            /* the compute-bound ones have oneDNN nodes; -O3 blocks resblock */
            if (k == WL_MLP || k == WL_RESBLOCK || k == WL_ENCODER || k == WL_ENCODER_FUSED)
                CHECK_MSG(n > 0, "%s: no oneDNN node", what);
            if (k == WL_RESBLOCK)
                CHECK_MSG((level == 3 && test_blocked_convs()) == (nblk == 2),
                          "%s: %d conv2d_blk", what, nblk);
            /* its two 3x3 convs, the second with the residual add in its
             * epilogue from -O2 on */
            if (k == WL_RESBLOCK && h && level < 3)
                CHECK_MSG(check_direct(h, what) == 2, "%s: 2 direct convs", what);
            graph_free(h);
        }
        graph_free(g);
        workload_free(&w);
    }
}

/* The imported models of the suite (tests/data/real: width-reduced
 * torchvision mobilenet_v2, mobilenet_v3_small, regnet_y, with depthwise
 * and grouped convs) at -O0..-O3: no node on a reference kernel either. */
static void test_imported(void)
{
    static const char *const models[] = {"mobilenet_v2_w025", "mobilenet_v3_small_w025",
                                         "regnet_y_tiny"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        char path[512], err[512] = "";
        snprintf(path, sizeof path, "%s/real/%s.onnx", TG_TEST_DATA, models[m]);
        graph *g = format_onnx_load(path, NULL, err, sizeof err);
        CHECK_MSG(g != NULL, "%s", err);
        for (int level = 0; g && level <= 3; level++) {
            graph *h = graph_clone(g);
            opt_options o = opt_default_options();
            o.level = level;
            char what[96];
            CHECK_MSG(h && opt_optimize(h, &o, NULL, err, sizeof err) == TG_OK, "%s -O%d: %s",
                      models[m], level, err);
            snprintf(what, sizeof what, "%s -O%d", models[m], level);
            int nblk = 0;
            CHECK_MSG(h && check_nodes(h, what, &nblk) > 0, "%s: no oneDNN node", what);
            /* plain grouped and depthwise convs (kxk) run oneDNN's direct or
             * depthwise kernel on converted tensors, not a GEMM per group,
             * at every level of make test */
            if (h)
                check_direct(h, what);
            graph_free(h);
        }
        graph_free(g);
    }
}

/* oneDNN's own first choice for a 3x3 conv C->C at HxH, dilation d, in tag. */
static void direct_impl(int64_t C, int64_t H, int64_t d, dnnl_format_tag_t tag, char *out,
                        size_t len)
{
    dnnl_engine_t e;
    dnnl_memory_desc_t x, w, b, y;
    dnnl_dims_t dx = {1, C, H, H}, dw = {C, C, 3, 3}, db = {C};
    dnnl_convolution_desc_t cd;
    dnnl_dims_t s = {1, 1}, dd = {d - 1, d - 1}, p = {d, d};
    dnnl_primitive_desc_t pd = NULL;
    const char *impl = NULL;
    out[0] = '\0';
    CHECK(eager_dnnl_engine(&e) == dnnl_success);
    dnnl_memory_desc_init_by_tag(&x, 4, dx, dnnl_f32, tag);
    dnnl_memory_desc_init_by_tag(&w, 4, dw, dnnl_f32,
                                 tag == dnnl_nchw ? dnnl_oihw : dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&b, 1, db, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&y, 4, dx, dnnl_f32, tag);
    CHECK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                     dnnl_convolution_direct, &x, &w, &b, &y, s,
                                                     dd, p, p) == dnnl_success);
    int old = eager_dnnl_set_threads(1);
    if (dnnl_primitive_desc_create(&pd, &cd, NULL, e, NULL) == dnnl_success &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success)
        snprintf(out, len, "%s", impl);
    eager_dnnl_set_threads(old);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    CHECK_MSG(out[0], "oneDNN has no conv C%lld H%lld d%lld", (long long)C, (long long)H,
              (long long)d);
}

/* A naive dilated 3x3 conv, padding d, stride 1, in double. */
static void naive(const float *x, const float *w, const float *b, int64_t C, int64_t H,
                  int64_t d, double *y)
{
    for (int64_t o = 0; o < C; o++)
        for (int64_t i = 0; i < H; i++)
            for (int64_t j = 0; j < H; j++) {
                double s = b[o];
                for (int64_t c = 0; c < C; c++)
                    for (int u = 0; u < 3; u++)
                        for (int v = 0; v < 3; v++) {
                            int64_t hi = i - d + u * d, wi = j - d + v * d;
                            if (hi >= 0 && hi < H && wi >= 0 && wi < H)
                                s += (double)x[(c * H + hi) * H + wi] * w[((o * C + c) * 3 + u) * 3 + v];
                        }
                y[(o * H + i) * H + j] = s;
            }
}

static void check_dilated(int64_t C, int64_t H, int64_t d)
{
    int64_t live = eager_live_tensors();
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_INTS(1, C, H, H), (uint64_t)d, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_INTS(C, C, 3, 3), (uint64_t)d + 1, -0.2f, 0.2f);
    eager_tensor *b = eager_rand_uniform(TG_INTS(C), (uint64_t)d + 2, -1, 1);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_param(w, "w");
    trace_param(b, "b");
    trace_output(eager_relu(eager_conv2d(x, w, b, TG_INTS(), TG_INTS(d), TG_INTS(d), 1)), "y");
    graph *g0 = trace_freeze();
    CHECK_MSG(g0 != NULL, "dilated conv traces: %s", eager_error());
    char plain[64], blocked[64];
    direct_impl(C, H, d, dnnl_nchw, plain, sizeof plain);
    direct_impl(C, H, d, dnnl_nChw16c, blocked, sizeof blocked);
    /* a plain conv2d node of 16 channels or more with a 3x3 kernel runs
     * oneDNN's choice for format any, its tensors reordered at each run,
     * unless that is a reference loop or GEMM (kernels_conv.c,
     * conv_prepare) */
    char anyfmt[64], runs[64];
    direct_impl(C, H, d, dnnl_format_tag_any, anyfmt, sizeof anyfmt);
    snprintf(runs, sizeof runs, "%s",
             eager_dnnl_impl_is_ref(anyfmt) || strstr(anyfmt, "gemm") ? plain : anyfmt);
    int blk_ref = eager_dnnl_impl_is_ref(blocked);
    printf("dilated conv C%lld %lldx%lld d%lld: oneDNN plain %s, blocked %s\n", (long long)C,
           (long long)H, (long long)H, (long long)d, plain, blocked);
    CHECK_MSG(!eager_dnnl_impl_is_ref(plain), "plain dilated conv d%lld: %s", (long long)d, plain);
    double *want = malloc((size_t)(C * H * H) * sizeof *want);
    CHECK(want != NULL);
    if (!want) {
        graph_free(g0);
        eager_pool_pop();
        return;
    }
    naive(eager_peek(x), eager_peek(w), eager_peek(b), C, H, d, want);
    for (int64_t i = 0; i < C * H * H; i++)
        want[i] = want[i] > 0 ? want[i] : 0;
    for (int level = 0; g0 && level <= 3; level += 3) {
        graph *g = graph_clone(g0);
        char *ex = NULL, err[512] = "", what[64];
        size_t exlen = 0;
        opt_options o = opt_default_options();
        o.level = level;
        o.explain = open_memstream(&ex, &exlen);
        tg_status st = g ? opt_optimize(g, &o, NULL, err, sizeof err) : TG_ERR_NOMEM;
        fclose(o.explain);
        CHECK_MSG(st == TG_OK, "-O%d: %s", level, err);
        snprintf(what, sizeof what, "dilation %lld -O%d", (long long)d, level);
        int nblk = 0, n = st == TG_OK ? check_nodes(g, what, &nblk) : 0;
        /* -O2 and up split a conv whose taps mostly read padding into 1x1
         * convs (conv-taps): then those run, and only the answer is
         * checked below */
        int split = ex && strstr(ex, "dilated 3x3 conv split into 9 1x1 convs") != NULL;
        /* live share of taps x positions: per axis, the centre tap reads
         * all H rows, each other one H - d of them */
        double axis = (double)(H + 2 * (H > d ? H - d : 0)) / (double)(3 * H);
        CHECK_MSG(split == (level == 3 && axis * axis < 0.5), "%s: split %d: %s", what, split,
                  ex ? ex : "");
        CHECK_MSG(n == (split ? 9 : 1), "%s: %d oneDNN nodes", what, n);
        /* --explain names the implementation of each node */
        CHECK_MSG(ex && strstr(ex, "oneDNN: node ") && !strstr(ex, "reference kernel: slow"),
                  "%s: explain: %s", what, ex ? ex : "");
        if (level == 3 && !split) {
            CHECK_MSG(nblk == !blk_ref, "%s: %d conv2d_blk, oneDNN blocked %s", what, nblk,
                      blocked);
            CHECK_MSG(!blk_ref || (ex && strstr(ex, "layout: node ") &&
                                   strstr(ex, "left plain: cpu ") &&
                                   strstr(ex, " has only a reference kernel "
                                              "for it in the blocked layout (ref")),
                      "%s: explain: %s", what, ex);
            /* the probe names what oneDNN names for the same blocked conv */
            for (int32_t i = 0; g && i < g->nnodes; i++)
                if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) &&
                    g->nodes[i].op == GRAPH_OP_conv2d_blk) {
                    char impl[64];
                    CHECK(eager_dnnl_node_impl(g, i, impl, sizeof impl, NULL, 0) == TG_OK);
                    CHECK_MSG(!strcmp(impl, blocked), "%s: probe %s, oneDNN %s", what, impl,
                              blocked);
                }
        } else if (!split) {
            for (int32_t i = 0; g && i < g->nnodes; i++)
                if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) &&
                    eager_dnnl_op_has_impl(g->nodes[i].op)) {
                    char impl[64];
                    CHECK(eager_dnnl_node_impl(g, i, impl, sizeof impl, NULL, 0) == TG_OK);
                    CHECK_MSG(!strcmp(impl, runs), "%s: probe %s, oneDNN %s", what, impl,
                              runs);
                }
        }
        free(ex);
        /* replayed: the naive dilated conv's answer */
        replay_plan *p = st == TG_OK ? replay_compile(g, NULL, err, sizeof err) : NULL;
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        CHECK_MSG(s != NULL, "%s compiles: %s", what, err);
        replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)},
                      out = {NULL};
        if (s && replay_run(s, &in, 1, &out, 1) == TG_OK) {
            double e = 0, m = 0;
            const float *y = out.data;
            for (int64_t i = 0; i < C * H * H; i++) {
                e = fmax(e, check_abs_diff(y[i], want[i]));
                m = fmax(m, fabs(want[i]));
            }
            CHECK_MSG(e <= 1e-4 * fmax(m, 1), "%s: error %g of %g", what, e, m);
        } else {
            CHECK_MSG(0, "%s runs: %s", what, s ? replay_session_error(s) : err);
        }
        replay_session_free(s);
        replay_plan_free(p);
        graph_free(g);
    }
    free(want);
    graph_free(g0);
    eager_pool_pop();
    CHECK(eager_live_tensors() == live);
}

int main(void)
{
    test_is_ref();
    test_workloads();
    test_imported();
    check_dilated(32, 33, 12); /* 57% of taps x positions live: one conv */
    check_dilated(32, 33, 24); /* 26%: split into 1x1 convs at -O3 */
    check_dilated(32, 40, 36); /* at 33x33 only the centre tap is live: conv-taps */
    return check_done();
}
