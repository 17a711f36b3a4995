/*
 * test_target.c - the target a plan is made for (graph/target.h, issue
 * 30): the CPU's channel block follows the ISA oneDNN runs at (its blocked
 * conv formats are nChw16c on AVX-512 and nChw8c on AVX2 and SSE4.1), the
 * -O3 layout follows the target it is given, the .tgraph keeps the target,
 * and replay_compile re-plans a graph laid out for another target, with
 * the model's output still PyTorch's.  Runs at every CPU level of `make
 * test` (TG_CPU / ONEDNN_MAX_CPU_ISA), so the re-plan is checked in both
 * directions.
 */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "formats/tgraph_impl.h"
#include "eager/eager.h"
#include "eager/dnnl_util.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/internal.h"
#include "graph/graph_impl.h"

static char err[1024];

/* The block oneDNN documents for its f32 blocked convs at the ISA it runs. */
static int expected_block(const char **isa)
{
    unsigned u = (unsigned)dnnl_get_effective_cpu_isa();
    if ((u & (unsigned)dnnl_cpu_isa_avx512_core) == (unsigned)dnnl_cpu_isa_avx512_core)
        return *isa = "avx512_core", 16;
    if ((u & (unsigned)dnnl_cpu_isa_avx2) == (unsigned)dnnl_cpu_isa_avx2)
        return *isa = "avx2", 8;
    if ((u & (unsigned)dnnl_cpu_isa_avx) == (unsigned)dnnl_cpu_isa_avx)
        return *isa = "avx", 8;
    return *isa = "sse41", 8;
}

static void test_targets(void)
{
    const char *isa;
    int block = expected_block(&isa);
    char name[64];
    snprintf(name, sizeof name, "cpu %s", isa);
    graph_target t;
    CHECK(replay_target(NULL, &t, err, sizeof err) == TG_OK);
    CHECK_MSG(strcmp(t.name, name) == 0 && t.block == block && t.threads == 1 && t.impl_of &&
                  t.why[0],
              "cpu target: %s, block %d (%s); expected %s, %d", t.name, t.block, t.why, name,
              block);
    replay_opts o = REPLAY_OPTS_INIT;
    o.threads = 2;
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_OK && t.threads == 2);
    o.device = "opencl"; /* the backend's target: no device asked, none needed */
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_OK);
    CHECK_MSG(strcmp(t.name, "opencl") == 0 && t.block == 16 && !t.impl_of, "%s %d", t.name,
              t.block);
    o.threads = -1;
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_ERR_ARG &&
          strstr(err, "replay_opts.threads is -1"));
    CHECK(replay_target(NULL, NULL, err, sizeof err) == TG_ERR_NULL);
}

/* Text IR (the test fails on a parse error: NULL). */
static graph *parse(const char *text)
{
    char perr[512];
    graph *g = graph_parse(text, strlen(text), perr, sizeof perr);
    CHECK_MSG(g != NULL, "parse: %s", perr);
    return g;
}

/* Parses head, w's elements, mid, b's elements, tail as one text (the
 * test fails on a parse error: NULL). */
static graph *parse_wb(const char *head, const float *w, int nw, const char *mid, const float *b,
                       int nb, const char *tail)
{
    size_t cap = strlen(head) + strlen(mid) + strlen(tail) + 24 * (size_t)(nw + nb) + 1, at = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    at += (size_t)snprintf(text + at, cap - at, "%s", head);
    for (int i = 0; i < nw; i++)
        at += (size_t)snprintf(text + at, cap - at, "%s%g", i ? ", " : "", (double)w[i]);
    at += (size_t)snprintf(text + at, cap - at, "%s", mid);
    for (int i = 0; i < nb; i++)
        at += (size_t)snprintf(text + at, cap - at, "%s%g", i ? ", " : "", (double)b[i]);
    snprintf(text + at, cap - at, "%s", tail);
    graph *g = parse(text);
    free(text);
    return g;
}

/* A 3x3, padding 1 conv of C channels in groups of cg, in double: y[C][H][H]. */
static void conv3x3_ref(const float *x, const float *w, const float *b, int C, int cg, int H,
                        double *y)
{
    for (int o = 0; o < C; o++)
        for (int r = 0; r < H; r++)
            for (int c = 0; c < H; c++) {
                double acc = b[o];
                for (int ci = 0; ci < cg; ci++)
                    for (int u = 0; u < 3; u++)
                        for (int v = 0; v < 3; v++) {
                            int rr = r + u - 1, cc = c + v - 1;
                            if (rr >= 0 && rr < H && cc >= 0 && cc < H)
                                acc += (double)w[((o * cg + ci) * 3 + u) * 3 + v] *
                                       x[((o / cg * cg + ci) * H + rr) * H + cc];
                        }
                y[(o * H + r) * H + c] = acc;
            }
}

/* The width-reduced torchvision model of the suite, its input and PyTorch's output. */
typedef struct model {
    graph *g;
    graph_type xt, yt;
    void *x, *y;
} model;

static int model_load(model *m, const char *name)
{
    char path[512];
    memset(m, 0, sizeof *m);
    snprintf(path, sizeof path, "%s/real/%s.onnx", TG_TEST_DATA, name);
    m->g = format_onnx_load(path, NULL, err, sizeof err);
    CHECK_MSG(m->g != NULL, "%s", err);
    snprintf(path, sizeof path, "%s/real/%s_x.npy", TG_TEST_DATA, name);
    CHECK(format_npy_load(path, &m->xt, &m->x, err, sizeof err) == TG_OK);
    snprintf(path, sizeof path, "%s/real/%s_y.npy", TG_TEST_DATA, name);
    CHECK(format_npy_load(path, &m->yt, &m->y, err, sizeof err) == TG_OK);
    return m->g && m->x && m->y;
}

static void model_free(model *m)
{
    graph_free(m->g);
    free(m->x);
    free(m->y);
}

/* g at -O3 for target t (NULL: the default), through a .tgraph in memory. */
static graph *optimized_for(const graph *g, const graph_target *t)
{
    graph *h = graph_clone(g);
    opt_options o = OPT_OPTIONS_INIT;
    o.level = 3;
    o.target = t;
    CHECK_MSG(h && opt_optimize(h, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    void *buf = NULL;
    size_t len = 0;
    CHECK(h && format_save_mem(h, NULL, &buf, &len, err, sizeof err) == TG_OK);
    graph_free(h);
    graph *l = buf ? format_load_mem(buf, len, "m.tgraph", err, sizeof err) : NULL;
    CHECK_MSG(l != NULL, "load: %s", err);
    free(buf);
    return l;
}

/* Blocked values of g: how many, and whether all have `block` lanes. */
static int blocked_values(const graph *g, int block, int *others)
{
    int n = 0;
    *others = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *nd = &g->nodes[i];
        if (nd->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < nd->nout; k++) {
            const graph_type *t = &g->values[nd->out[k]].type;
            if (t->ndim == 5 && (nd->op == GRAPH_OP_conv2d_blk || nd->op == GRAPH_OP_to_blocked))
                t->dim[4] == block ? n++ : (*others)++;
        }
    }
    return n;
}

/* Compiles g with o, checks the plan's layout note, runs it on m's input. */
static void run_plan(const model *m, const graph *g, const replay_opts *o, const char *note,
                     int block, const char *what)
{
    replay_plan *p = replay_compile(g, o, err, sizeof err);
    CHECK_MSG(p != NULL, "%s: compile: %s", what, err);
    if (!p)
        return;
    const char *lay = replay_plan_layout(p);
    CHECK_MSG(lay && strstr(lay, note), "%s: layout \"%s\", expected \"%s\"", what, lay, note);
    int others, n = blocked_values(p->g, block, &others);
    CHECK_MSG(others == 0 && (block == 0) == (n == 0), "%s: %d blocked values of %d lanes, %d of others",
              what, n, block, others);
    /* on the CPU, every conv runs a blocked JIT kernel (direct, 1x1,
     * depthwise or Winograd), never oneDNN's im2col + GEMM or its loops */
    graph_target t;
    CHECK(replay_target(o, &t, err, sizeof err) == TG_OK);
    for (int32_t i = 0; t.impl_of && block && i < p->g->nnodes; i++) {
        const graph_node *nd = &p->g->nodes[i];
        if ((nd->flags & GRAPH_NODE_DEAD) ||
            (nd->op != GRAPH_OP_conv2d && nd->op != GRAPH_OP_conv2d_ep &&
             nd->op != GRAPH_OP_conv2d_blk))
            continue;
        graph_type in[4];
        for (int k = 0; k < nd->nin && k < 4; k++)
            in[k] = p->g->values[nd->in[k]].type;
        char impl[64] = "", why[256] = "";
        tg_status st = t.impl_of(&t, nd->op, tg_node_attrs(nd), in, nd->nin,
                                 &p->g->values[nd->out[0]].type, 6u, impl, sizeof impl, why,
                                 sizeof why);
        CHECK_MSG(st == TG_OK && nd->op == GRAPH_OP_conv2d_blk && strstr(impl, "jit") &&
                      !strstr(impl, "gemm") && !t.impl_is_ref(impl),
                  "%s: node %d (%s) runs %s %s", what, (int)i, graph_ops[nd->op].name, impl, why);
    }
    replay_session *s = replay_session_new(p, NULL, 0);
    int64_t ny = graph_type_numel(&m->yt);
    float *y = calloc((size_t)ny, sizeof *y);
    replay_tensor in = {.type = m->xt, .data = m->x};
    replay_tensor out = {.type = m->yt, .data = y};
    CHECK_MSG(s && replay_run(s, &in, 1, &out, 1) == TG_OK, "%s: run: %s", what,
              s ? replay_session_error(s) : "no session");
    double e = check_normalized_error(y, m->y, ny);
    CHECK_MSG(e < 1e-3, "%s: normalized error %g against PyTorch", what, e);
    free(y);
    replay_session_free(s);
    replay_plan_free(p);
}

/*
 * mobilenet_v2 (depthwise convs, padded channel counts: 8, 24, 40...)
 * laid out for other targets, 16 and 8 channels to a block, re-planned by
 * replay_compile for this CPU; laid out for this CPU, kept.
 */
static void test_replan(const char *name)
{
    model m;
    if (!model_load(&m, name)) {
        model_free(&m);
        return;
    }
    graph_target cpu, t16, t8;
    CHECK(replay_target(NULL, &cpu, err, sizeof err) == TG_OK);
    t16 = cpu, t8 = cpu;
    /* made elsewhere: no implementation to ask here (every conv taken as
     * runnable blocked), whatever this CPU has for 16 or 8 lanes */
    t16.impl_of = t8.impl_of = NULL;
    snprintf(t16.name, sizeof t16.name, "elsewhere16");
    t16.block = 16;
    snprintf(t8.name, sizeof t8.name, "elsewhere8");
    t8.block = 8;
    char note[160];
    snprintf(note, sizeof note, "re-planned for %s (the graph was laid out for ", cpu.name);
    const graph_target *ts[2] = {&t16, &t8};
    for (int k = 0; k < 2; k++) {
        graph *g = optimized_for(m.g, ts[k]);
        if (!g)
            continue;
        int others, n = blocked_values(g, ts[k]->block, &others);
        CHECK_MSG(n > 0 && others == 0 && g->target && strcmp(g->target, ts[k]->name) == 0,
                  "-O3 for %s: %d blocked values of %d lanes, %d others, target %s",
                  ts[k]->name, n, ts[k]->block, others, g->target ? g->target : "(none)");
        run_plan(&m, g, NULL, note, cpu.block, ts[k]->name);
        graph_free(g);
    }
    graph *g = optimized_for(m.g, NULL); /* this CPU: no re-plan */
    char kept[96];
    snprintf(kept, sizeof kept, "laid out for %s", cpu.name);
    if (g) {
        CHECK(g->target && strcmp(g->target, cpu.name) == 0);
        run_plan(&m, g, NULL, kept, cpu.block, "this cpu");
        /* OpenCL, where a device is: re-planned for its 16-channel blocks */
        replay_device_info dev;
        if (replay_backend_find("opencl", &dev, err, sizeof err) == TG_OK) {
            replay_opts o = REPLAY_OPTS_INIT;
            o.device = "opencl";
            run_plan(&m, g, &o, "re-planned for opencl", 16, "opencl");
        }
        graph_free(g);
    }
    /* -O2: nothing to plan */
    graph *h = graph_clone(m.g);
    opt_options o = OPT_OPTIONS_INIT;
    CHECK(h && opt_optimize(h, &o, NULL, err, sizeof err) == TG_OK && !h->target);
    if (h)
        run_plan(&m, h, NULL, "no layout planned", 0, "-O2");
    graph_free(h);
    model_free(&m);
}

/*
 * A grouped conv with 8 channels per group, laid out for this CPU at -O3:
 * at 16 lanes the layout packs its groups two to a block (regroup_k: 24
 * channels in 3 groups -> 2 packed groups of 16, the last one half
 * padding), so its input has fewer channels than the packed weights say.
 * Loaded as laid out elsewhere, the plan re-plans: the unlayout unpacks the
 * groups (unpack_groups), and the outputs are the conv's (loops here).
 * At 8 lanes nothing is packed, and the same checks hold.
 */
static void test_replan_packed_groups(void)
{
    enum { C = 24, G = 3, CG = 8, H = 6 };
    static float w[C * CG * 9], b[C], x[C * H * H], y[C * H * H], want[C * H * H];
    for (int i = 0; i < C * CG * 9; i++)
        w[i] = (float)((i * 29) % 13 - 6) * 0.0625f;
    for (int i = 0; i < C; i++)
        b[i] = (float)(i % 7) * 0.125f - 0.375f;
    graph *g0 = parse_wb("graph t(%x: f32[1,24,6,6]) -> (y: f32[1,24,6,6]) {\n"
                         "  %w: f32[24,8,3,3] = const [", w, C * CG * 9,
                         "]\n  %b: f32[24] = const [", b, C,
                         "]\n"
                         "  %c: f32[1,24,6,6] = conv2d(%x, %w, %b) {padding=[1], groups=3}\n"
                         "  %y: f32[1,24,6,6] = relu(%c)\n"
                         "  return y = %y\n}\n");
    if (!g0)
        return;
    for (int i = 0; i < C * H * H; i++)
        x[i] = (float)((i * 17) % 11 - 5) * 0.25f;
    static double ref[C * H * H];
    conv3x3_ref(x, w, b, C, CG, H, ref);
    for (int i = 0; i < C * H * H; i++)
        want[i] = ref[i] > 0 ? (float)ref[i] : 0.0f;
    graph *g = optimized_for(g0, NULL);
    graph_free(g0);
    if (!g)
        return;
    graph_target cpu;
    CHECK(replay_target(NULL, &cpu, err, sizeof err) == TG_OK);
    int packed = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == GRAPH_OP_conv2d_blk)
            packed |= g->values[g->nodes[i].in[1]].type.dim[0] > C;
    CHECK_MSG(packed == (cpu.block == 16), "%s: groups packed %d", cpu.name, packed);
    g->target = graph_intern(g, "elsewhere", -1);
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    const char *lay = p ? replay_plan_layout(p) : NULL;
    CHECK_MSG(lay && strstr(lay, "re-planned for ") && !strstr(lay, "not re-planned"),
              "layout: %s", lay ? lay : "(null)");
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    replay_tensor in = {.type = {GRAPH_F32, 4, {1, C, H, H}}, .data = x};
    replay_tensor out = {.type = {GRAPH_F32, 4, {1, C, H, H}}, .data = y};
    CHECK(s && replay_run(s, &in, 1, &out, 1) == TG_OK);
    CHECK_FLOATS(y, want, C * H * H, 1e-4);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * A blocked value read by a node the unlayout does not know (a reduction
 * over the blocked tensor): the plan keeps the file's layout, says why,
 * and still computes what the graph says.
 */
static void test_replan_refused(void)
{
    const char *text =
        "graph t(%x: f32[1,16,4,4]) -> (y: f32[]) {\n"
        "  %b: f32[1,1,4,4,16] = to_blocked(%x) {block=16}\n"
        "  %y: f32[] = reduce_sum(%b) {axes=[0, 1, 2, 3, 4]}\n"
        "  return y = %y\n}\n";
    graph *g = parse(text);
    if (!g)
        return;
    g->target = graph_intern(g, "elsewhere16", -1);
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    const char *lay = p ? replay_plan_layout(p) : NULL;
    CHECK_MSG(lay && strstr(lay, "laid out for elsewhere16, not re-planned for cpu ") &&
                  strstr(lay, "cannot undo the blocked layout"),
              "layout: %s", lay ? lay : "(null)");
    float x[256], y = 0, want = 0;
    for (int i = 0; i < 256; i++)
        want += x[i] = (float)(i % 7) - 3.0f;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    replay_tensor in = {.type = {GRAPH_F32, 4, {1, 16, 4, 4}}, .data = x};
    replay_tensor out = {.type = {GRAPH_F32, 0, {0}}, .data = &y};
    CHECK(s && replay_run(s, &in, 1, &out, 1) == TG_OK && y == want);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * A plan that keeps 16-lane blocks (its layout cannot be undone: a
 * reduction reads the blocked value) on a CPU whose oneDNN has only a
 * reference kernel for them (the AVX2 and SSE4.1 levels of make test):
 * conv2d_blk runs oneDNN's direct kernel on the layout it picks instead,
 * x and y converted at each run (kernels_blocked.c, blk_choose), never
 * the reference loop; and still computes the conv (against loops here).
 */
static void test_foreign_blocks_fast(void)
{
    enum { C = 16, H = 5 };
    static float w[C * C * 9], b[C], x[C * H * H];
    for (int i = 0; i < C * C * 9; i++)
        w[i] = (float)((i * 37) % 11 - 5) * 0.0625f;
    for (int i = 0; i < C; i++)
        b[i] = (float)(i % 5) * 0.25f - 0.5f;
    graph *g = parse_wb("graph t(%x: f32[1,16,5,5]) -> (y: f32[]) {\n"
                        "  %w: f32[16,16,3,3] = const [", w, C * C * 9,
                        "]\n  %b: f32[16] = const [", b, C,
                        "]\n"
                        "  %xb: f32[1,1,5,5,16] = to_blocked(%x) {block=16}\n"
                        "  %c: f32[1,1,5,5,16] = conv2d_blk(%xb, %w, %b) {padding=[1], block=16}\n"
                        "  %y: f32[] = reduce_sum(%c) {axes=[0, 1, 2, 3, 4]}\n"
                        "  return y = %y\n}\n");
    if (!g)
        return;
    g->target = graph_intern(g, "elsewhere16", -1);
    int32_t conv = -1;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == GRAPH_OP_conv2d_blk)
            conv = i;
    char impl[64] = "";
    CHECK(conv >= 0 && eager_dnnl_node_impl(g, conv, impl, sizeof impl, err, sizeof err) == TG_OK);
    /* native, or a reference kernel's stand-in (a probe says so, for the
     * layout pass) that is not itself a reference kernel */
    const char *to = strstr(impl, ", converted at each run to ");
    CHECK_MSG(impl[0] && (to ? !eager_dnnl_impl_is_ref(to + strlen(", converted at each run to "))
                             : !eager_dnnl_impl_is_ref(impl)),
              "a 16-lane conv2d_blk on this CPU runs %s (a reference kernel)", impl);
    double want = 0;
    for (int i = 0; i < C * H * H; i++)
        x[i] = (float)((i * 13) % 9 - 4) * 0.125f;
    static double ref[C * H * H];
    conv3x3_ref(x, w, b, C, C, H, ref);
    for (int i = 0; i < C * H * H; i++)
        want += ref[i];
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    float y = 0;
    replay_tensor in = {.type = {GRAPH_F32, 4, {1, C, H, H}}, .data = x};
    replay_tensor out = {.type = {GRAPH_F32, 0, {0}}, .data = &y};
    CHECK(s && replay_run(s, &in, 1, &out, 1) == TG_OK);
    CHECK_MSG(fabs(y - want) <= 1e-4 * (1 + fabs(want)), "y %g, want %g", (double)y, want);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

/*
 * A graph in 8-lane blocks written by hand, without a target (as an older
 * file): re-planned for this CPU, its outputs those of the interpreter on
 * the graph as written; the same with a blocked value as a graph output
 * cannot be undone: kept, and it still runs.
 */
static void test_replan_text(void)
{
    static const char *text =
        "graph b(%x: f32[N,12,6,6]) -> (y: f32[N,20,6,6], z: f32[N,20,3,3]) {\n"
        "  sym N = 2\n"
        "  %w1: f32[20,12,3,3] = const [-0.176, -0.349, 0.151, -0.428, 0.0359, -0.134, -0.442, 0.00744, -0.463, -0.0664, -0.43, -0.409, -0.0755, 0.327, -0.376, -0.277, 0.127, 0.448, 0.0771, -0.103, 0.476, -0.453, 0.358, -0.21, -0.356, -0.382, -0.192, 0.316, -0.319, 0.0816, 0.139, -0.128, 0.0477, -0.437, -0.44, -0.294, 0.18, -0.0724, -0.186, 0.0856, -0.0468, -0.2, 0.294, 0.199, -0.256, 0.0744, 0.0252, 0.375, 0.229, -0.212, 0.48, -0.382, -0.0819, 0.257, -0.348, -0.011, -0.461, 0.168, 0.265, 0.073, 0.375, -0.186, 0.195, 0.0944, 0.0799, -0.0438, 0.34, 0.445, -0.0259, 0.164, -0.439, 0.201, 0.147, 0.493, 0.322, -0.215, -0.114, 0.169, -0.477, -0.0383, -0.332, -0.383, -0.441, 0.268, -0.371, -0.252, -0.109, 0.371, -0.419, -0.0508, 0.0494, 0.383, 0.319, 0.364, -0.222, -0.0847, -0.141, 0.384, 0.458, -0.349, -0.324, -0.268, -0.267, -0.015, 0.0891, -0.237, -0.496, -0.0811, -0.131, 0.0663, 0.453, 0.19, 0.0155, 0.118, 0.176, -0.446, 0.4, 0.28, 0.375, 0.298, -0.108, -0.101, -0.396, 0.134, -0.438, -0.433, -0.291, -0.338, -0.16, -0.447, -0.5, -0.349, -0.399, -0.136, -0.474, 0.374, 0.114, -0.351, -0.248, -0.153, -0.136, -0.377, 0.349, 0.493, -0.034, -0.0162, -0.414, -0.398, -0.157, -0.235, 0.329, -0.339, -0.477, 0.451, 0.0283, -0.353, 0.0432, -0.473, 0.0281, 0.479, 0.363, 0.196, -0.239, -0.133, -0.333, 0.272, 0.0326, 0.279, -0.17, -0.277, 0.312, 0.485, 0.353, 0.306, 0.318, 0.24, -0.273, 0.0176, -0.144, -0.471, -0.472, -0.221, -0.241, 0.193, 0.457, -0.0528, 0.437, 0.488, 0.455, -0.135, -0.28, -0.273, -0.303, -0.296, 0.124, 0.4, 0.34, -0.0205, 0.153, 0.3, -0.415, 0.161, 0.41, 0.282, 0.25, -0.022, -0.321, 0.289, -0.167, 0.301, 0.472, -0.104, -0.0986, 0.447, 0.225, -0.33, -0.373, -0.349, 0.405, 0.307, -0.354, 0.327, 0.48, 0.157, -0.15, 0.0487, -0.369, -0.486, 0.471, 0.15, 0.0266, 0.434, -0.0662, 0.372, 0.326, -0.289, -0.248, -0.207, -0.259, 0.0864, -0.241, -0.081, -0.369, 0.41, -0.146, -0.0418, 0.0833, 0.404, -0.0794, 0.418, 0.00165, 0.0318, 0.0235, -0.481, -0.0599, -0.317, -0.496, 0.299, -0.328, -0.0265, 0.225, 0.0565, -0.174, 0.0183, 0.0554, 0.284, -0.394, 0.0603, -0.252, -0.223, 0.272, 0.00771, 0.0617, 0.26, 0.412, -0.0568, 0.113, 0.00555, 0.0122, 0.193, -0.0477, 0.0333, -0.022, 0.442, 0.199, 0.377, 0.442, -0.24, 0.0595, 0.443, 0.34, -0.363, -0.378, -0.0579, -0.427, -0.259, -0.427, 0.169, 0.284, 0.397, -0.346, 0.216, 0.16, -0.357, 0.383, 0.468, -0.28, 0.453, -0.102, -0.0127, 0.49, 0.332, -0.339, -0.0685, 0.0156, -0.161, -0.304, -0.181, 0.222, -0.481, 0.0541, -0.0595, -0.482, -0.169, 0.124, 0.0123, -0.436, 0.485, 0.288, 0.472, -0.395, -0.234, -0.46, 0.279, -0.23, -0.37, -0.0777, 0.411, 0.319, -0.241, -0.351, 0.419, 0.0706, 0.2, -0.411, -0.442, 0.188, -0.0747, -0.428, 0.438, 0.134, 0.302, -0.416, 0.356, -0.433, 0.363, -0.0462, -0.161, 0.0531, 0.427, -0.232, -0.371, 0.0269, -0.262, -0.391, -0.339, -0.45, -0.298, -0.188, -0.195, 0.259, -0.21, 8.86e-05, -0.322, -0.153, -0.482, -0.25, -0.485, 0.233, 0.051, -0.311, -0.0252, 0.435, -0.394, 0.319, -0.0678, -0.005, 0.335, -0.107, 0.00669, 0.188, 0.482, -0.157, 0.332, 0.207, 0.136, -0.0953, -0.152, -0.446, -0.37, -0.429, 0.241, -0.244, -0.337, -0.416, 0.341, 0.371, 0.171, -0.218, -0.258, -0.207, -0.0405, -0.342, -0.0542, -0.237, 0.462, 0.473, 0.0471, -0.256, 0.466, -0.19, -0.143, -0.499, -0.118, -0.0254, 0.00276, -0.299, 0.00474, -0.495, -0.236, -0.41, -0.1, -0.458, -0.478, -0.196, -0.267, 0.0856, 0.0292, 0.251, 0.158, 0.216, 0.379, -0.11, -0.174, 0.485, -0.351, 0.224, 0.143, -0.456, 0.335, 0.392, 0.127, 0.234, 0.312, -0.361, 0.0238, 0.00437, 0.335, 0.305, 0.326, 0.0841, 0.393, 0.183, 0.193, -0.27, -0.469, -0.367, -0.139, -0.395, 0.336, 0.0585, 0.128, 0.126, 0.181, -0.0107, -0.497, 0.298, 0.248, 0.00297, 0.0352, 0.159, -0.434, 0.237, -0.248, -0.426, -0.234, 0.229, -0.295, 0.24, 0.476, -0.00605, -0.117, -0.021, 0.184, 0.267, 0.117, 0.143, -0.423, -0.353, -0.246, 0.243, -0.196, 0.0678, -0.488, -0.439, -0.231, 0.172, 0.192, 0.176, -0.209, 0.0165, -0.0353, -0.0337, -0.381, 0.394, -0.301, 0.478, 0.436, -0.482, -0.041, 0.32, 0.468, -0.0505, -0.231, -0.29, 0.446, -0.289, 0.0815, -0.358, 0.0241, 0.453, -0.367, 0.32, 0.00874, 0.387, 0.203, -0.269, 0.398, -0.0139, -0.475, -0.496, -0.0083, -0.0492, -0.198, -0.359, -0.156, -0.184, 0.34, -0.498, 0.251, 0.339, -0.38, 0.426, 0.213, 0.402, -0.21, -0.128, -0.107, 0.499, 0.0892, -0.139, -0.0719, -0.225, -0.452, -0.398, 0.335, -0.214, 0.436, -0.251, -0.234, 0.011, -0.31, -0.127, 0.456, 0.384, 0.312, 0.131, 0.413, 0.441, 0.0492, 0.22, -0.451, 0.232, -0.0491, 0.253, 0.144, -0.214, -0.451, 0.427, -0.373, -0.0278, -0.156, -0.202, 0.239, 0.476, -0.24, 0.156, -0.199, 0.0573, -0.106, -0.333, -0.338, -0.292, 0.406, -0.00292, -0.28, 0.406, 0.496, -0.05, -0.36, -0.308, -0.409, -0.158, -0.409, -0.261, -0.242, 0.0696, 0.387, 0.25, -0.0872, -0.0861, 0.0242, -0.123, -0.162, -0.438, -0.222, 0.468, -0.374, 0.0034, 0.13, 0.363, -0.284, -0.229, -0.252, -0.1, -0.0541, 0.454, 0.349, 0.373, -0.478, -0.468, 0.21, 0.396, -0.0267, 0.0872, -0.5, -0.108, 0.427, 0.326, 0.355, 0.472, -0.252, -0.391, -0.346, 0.0224, 0.182, 0.441, 0.222, 0.147, 0.265, -0.0427, 0.0515, -0.46, 0.282, -0.267, 0.42, 0.146, -0.196, -0.372, -0.248, 0.136, 0.199, -0.388, -0.43, 0.0244, 0.0829, -0.112, -0.276, 0.101, -0.49, -0.198, -0.0393, 0.459, 0.145, 0.384, -0.0247, -0.265, -0.253, 0.461, 0.205, -0.193, -0.478, -0.00169, 0.174, -0.08, -0.243, 0.167, 0.425, -0.273, -0.466, -0.162, -0.0794, 0.183, -0.302, 0.297, 0.239, 0.00488, -0.295, 0.47, -0.188, 0.32, -0.269, -0.279, 0.26, -0.205, 0.452, -0.00424, -0.313, -0.277, -0.083, 0.165, 0.449, -0.354, -0.107, -0.287, 0.474, -0.358, -0.448, -0.44, -0.107, 0.398, 0.384, 0.233, 0.498, 0.432, -0.171, -0.314, 0.436, 0.246, -0.468, 0.164, -0.121, -0.126, -0.168, -0.331, -0.497, -0.22, -0.149, 0.456, -0.376, 0.464, -0.293, -0.143, 0.322, 0.322, -0.0676, -0.451, -0.0265, -0.127, 0.42, -0.307, -0.136, 0.397, -0.47, -0.0892, 0.312, 0.267, -0.459, -0.465, -0.437, 0.42, -0.243, 0.247, 0.399, -0.161, -0.228, 0.458, 0.117, -0.238, 0.217, -0.184, -0.224, -0.496, 0.256, 0.416, 0.134, 0.443, -0.476, -0.266, -0.0248, 0.457, 0.454, -0.113, -0.249, -0.0701, -0.00653, 0.428, -0.317, 0.303, 0.238, 0.323, 0.273, 0.107, -0.172, -0.18, -0.138, 0.282, -0.421, -0.303, 0.253, -0.253, -0.435, -0.466, 0.0526, -0.174, 0.48, 0.383, 0.488, -0.235, -0.416, -0.404, -0.00152, 0.21, -0.053, -0.266, -0.0832, 0.12, 0.174, 0.248, 0.347, 0.164, -0.379, 0.341, -0.206, 0.0669, -0.127, 0.238, -0.301, -0.253, -0.255, -0.347, 0.384, 0.0783, -0.174, -0.104, 0.492, 0.00732, -0.269, 0.308, 0.153, 0.491, -0.398, -0.0252, 0.319, 0.341, 0.414, -0.46, -0.206, -0.381, -0.31, 0.473, 0.0832, 0.43, -0.128, 0.366, -0.0509, -0.24, 0.278, 0.446, -0.394, 0.0961, 0.12, -0.282, -0.131, -0.359, -0.296, -0.245, 0.0994, 0.152, -0.297, -0.489, -0.173, 0.178, -0.315, -0.188, -0.297, 0.295, 0.048, -0.437, -0.399, -0.105, 0.0501, 0.139, -0.409, -0.336, 0.195, -0.0902, -0.217, -0.192, 0.453, -0.188, 0.0665, -0.143, -0.0836, 0.364, 0.497, -0.136, -0.303, 0.228, -0.296, -0.494, 0.402, -0.0762, 0.32, -0.0938, 0.383, -0.0391, -0.337, -0.485, 0.0515, 0.141, 0.41, -0.411, 0.122, -0.129, 0.00446, -0.354, -0.217, 0.0212, 0.425, -0.391, -0.00949, 0.305, 0.467, -0.303, -0.373, 0.443, 0.476, -0.0173, -0.447, 0.426, -0.112, 0.404, 0.12, 0.325, -0.34, 0.286, -0.278, -0.0955, 0.346, 0.329, -0.317, -0.282, -0.1, 0.0179, -0.116, -0.377, -0.253, 0.225, 0.397, -0.459, 0.0623, 0.257, -0.462, 0.338, -0.382, 0.0995, 0.0501, 0.127, -0.194, -0.0799, 0.0826, -0.0743, 0.159, -0.0532, -0.0616, -0.477, 0.119, -0.0105, -0.265, 0.264, 0.28, -0.0417, -0.32, -0.0268, -0.393, -0.372, -0.0694, -0.408, -0.058, 0.0102, -0.459, 0.136, -0.418, 0.233, 0.278, 0.0115, -0.446, 0.00392, -0.122, 0.451, -0.364, 0.357, 0.496, 0.232, 0.315, -0.306, 0.482, -0.00813, 0.457, 0.416, -0.335, 0.288, 0.431, -0.434, -0.149, 0.256, -0.341, 0.397, -0.225, 0.316, -0.356, 0.00222, 0.42, -0.292, -0.237, 0.00601, -0.181, -0.463, -0.318, -0.339, 0.436, 0.18, 0.395, -0.331, 0.285, -0.385, 0.0307, 0.136, -0.14, 0.373, 0.0552, 0.08, 0.383, -0.395, 0.493, 0.13, -0.106, 0.298, -0.235, 0.49, 0.0774, -0.14, 0.265, -0.0577, -0.323, 0.244, -0.452, 0.32, -0.246, 0.139, 0.484, 0.0859, 0.164, -0.187, -0.498, -0.466, -0.351, 0.116, -0.0678, 0.0127, 0.396, -0.368, -0.273, 0.153, -0.478, -0.497, -0.145, -0.394, -0.143, -0.276, 0.0836, 0.0891, -0.296, 0.124, -0.0251, -0.365, 0.437, -0.256, -0.351, -0.404, 0.138, 0.371, 0.282, -0.098, -0.236, -0.489, 0.145, 0.0623, -0.15, 0.146, -0.0562, 0.437, 0.234, -0.252, 0.404, -0.456, 0.0315, -0.094, -0.262, -0.442, 0.279, -0.488, 0.0509, 0.441, -0.358, -0.3, 0.108, 0.00695, 0.142, 0.313, -0.325, -0.191, -0.2, -0.452, 0.389, 0.283, 0.215, -0.494, 0.344, 0.245, -0.0347, 0.242, -0.0475, -0.274, -0.395, -0.268, -0.461, -0.164, 0.25, 0.195, 0.345, 0.212, -0.234, 0.0538, -0.0639, 0.288, 0.0232, -0.235, 0.142, 0.465, -0.283, 0.38, -0.485, -0.24, -0.264, 0.244, 0.445, 0.246, -0.173, 0.38, -0.171, -0.261, 0.408, 0.131, 0.193, 0.165, 0.479, -0.0305, 0.34, 0.198, 0.358, -0.0628, 0.225, 0.0703, -0.192, -0.288, 0.123, -0.422, 0.411, -0.355, -0.473, -0.393, 0.429, -0.155, -0.358, -0.471, -0.458, 0.193, 0.134, 0.197, 0.237, -0.434, 0.0905, -0.137, 0.318, 0.32, 0.391, -0.434, 0.368, 0.414, 0.444, -0.393, -0.294, -0.388, -0.466, 0.348, 0.312, 0.134, 0.325, 0.132, -0.213, -0.4, -0.402, 0.257, -0.295, -0.181, -0.0762, -0.479, -0.243, -0.217, 0.216, -0.132, -0.179, 0.464, 0.00374, 0.351, 0.118, -0.469, -0.0871, -0.0636, 0.273, -0.153, 0.205, 0.0379, -0.283, 0.362, -0.409, 0.32, -0.33, -0.499, -0.298, 0.262, 0.478, -0.496, -0.00918, -0.00852, 0.297, -0.315, -0.00542, -0.153, 0.332, -0.239, 0.444, -0.216, -0.285, 0.199, -0.00168, -0.39, 0.137, -0.419, 0.288, 0.197, 0.287, 0.128, -0.144, -0.0987, -0.105, 0.39, -0.414, 0.388, -0.475, -0.294, -0.237, 0.401, 0.00119, -0.121, 0.384, -0.266, -0.0391, 0.0315, 0.254, 0.253, 0.146, -0.152, -0.173, -0.345, 0.343, 0.162, 0.242, -0.33, -0.0612, 0.273, 0.0792, -0.374, -0.038, 0.385, -0.262, -0.308, -0.198, 0.203, 0.344, -0.345, -0.344, -0.252, -0.173, 0.0222, -0.339, -0.172, -0.311, 0.475, 0.229, -0.398, 0.462, -0.398, -0.116, 0.484, 0.295, 0.233, -0.0651, -0.304, 0.138, -0.393, -0.294, -0.112, -0.466, -0.101, 0.291, 0.193, 0.000487, 0.132, -0.0367, -0.358, 0.104, -0.0953, 0.241, 0.408, -0.07, 0.074, 0.249, -0.0788, -0.271, 0.222, 0.38, 0.274, 0.2, 0.352, 0.18, 0.142, -0.0461, -0.187, 0.128, -0.402, -0.0804, 0.282, 0.213, 0.13, -0.25, -0.0764, -0.0448, 0.122, -0.0907, 0.175, 0.43, -0.317, 0.154, 0.278, -0.111, -0.0102, 0.475, -0.462, 0.0434, -0.339, 0.282, 0.441, 0.0192, -0.399, 0.0746, 0.041, 0.217, 0.0122, 0.139, 0.329, 0.0217, -0.0897, 0.448, -0.29, 0.184, -0.108, 0.263, -0.378, 0.484, -0.145, -0.443, -0.226, -0.1, -0.487, -0.0814, -0.0795, 0.198, -0.148, -0.235, -0.276, 0.241, 0.44, 0.0271, -0.281, 0.301, -0.108, -0.288, -0.371, 0.277, 0.31, 0.134, -0.0308, 0.0621, -0.274, 0.464, -0.147, 0.139, 0.319, 0.316, -0.0319, -0.206, 0.0483, -0.375, 0.334, -0.145, 0.351, -0.233, -0.124, -0.246, -0.0739, -0.314, -0.497, 0.222, -0.219, -0.255, -0.198, -0.0204, -0.0715, 0.137, 0.159, -0.138, 0.429, 0.354, -0.443, 0.328, 0.406, 0.284, -0.36, 0.331, 0.133, -0.485, -0.489, 0.452, 0.156, -0.25, -0.398, -0.357, -0.266, 0.276, -0.154, -0.347, 0.404, 0.292, -0.332, 0.391, 0.108, 0.281, 0.168, 0.394, 0.288, 0.339, -0.303, 0.193, 0.0308, 0.242, -0.0614, 0.383, 0.0551, -0.236, -0.266, -0.361, -0.00692, -0.442, -0.0329, -0.356, -0.00863, -0.00182, 0.0395, 0.363, -0.493, 0.341, -0.032, 0.0626, 0.165, 0.341, -0.125, -0.0812, 0.461, -0.425, 0.137, 0.136, -0.471, 0.11, 0.183, 0.431, -0.17, 0.482, 0.0106, -0.0153, 0.398, -0.466, 0.218, 0.125, -0.161, 0.362, -0.134, -0.0255, 0.0255, 0.271, -0.289, -0.0648, -0.0776, 0.054, 0.327, -0.207, 0.328, -0.0963, 0.00375, -0.228, 0.00642, 0.475, 0.155, 0.292, -0.169, -0.183, -0.201, 0.0865, 0.135, 0.284, -0.46, 0.223, 0.386, 0.0454, -0.45, -0.2, -0.494, -0.31, 0.421, 0.109, 0.158, 0.289, 0.41, 0.112, 0.117, 0.127, 0.196, 0.0963, 0.181, -0.287, 0.167, -0.0421, 0.263, -0.399, -0.319, -0.463, 0.275, 0.414, 0.156, -0.131, 0.323, 0.287, 0.0621, -0.242, -0.198, -0.0782, -0.182, -0.0693, 0.142, 0.434, -0.445, 0.0675, -0.461, -0.381, 0.31, 0.0753, 0.419, -0.0535, -0.486, -0.113, 0.092, 0.438, 0.481, -0.0246, -0.0876, -0.398, 0.145, -0.288, -0.348, -0.484, -0.495, 0.184, -0.378, 0.466, -0.412, 0.37, -0.371, -0.482, 0.219, -0.258, 0.234, -0.313, -0.45, 0.274, 0.214, 0.355, 0.23, -0.416, 0.129, 0.209, -0.0394, 0.432, -0.246, 0.464, 0.217, -0.489, -0.485, 0.151, 0.317, -0.42, -0.189, 0.229, -0.334, 0.361, -0.0137, -0.44, -0.132, 0.075, -0.0613, 0.177, -0.355, 0.297, -0.137, 0.145, 0.13, -0.082, -0.114, 0.286, 0.445, 0.285, 0.0668, -0.208, -0.439, 0.474, 0.203, 0.327, -0.168, 0.106, 0.477, 0.331, 0.101, -0.191, -0.0714, 0.388, -0.123, 0.185, 0.102, 0.396, 0.307, -0.217, -0.498, -0.237, -0.0775, 0.0866, 0.316, 0.387, -0.458, 0.333, 0.312, 0.367, 0.0719, -0.226, 0.351, 0.307, 0.185, 0.414, -0.153, -0.415, 0.0537, 0.297, -0.3, 0.25, 0.432, -0.266, 0.107, 0.178, -0.0347, -0.293, -0.245, 0.251, 0.292, -0.0403, -0.412, 0.307, 0.272, -0.267, 0.0796, 0.397, 0.385, 0.0219, -0.0234, 0.0893, -0.311, -0.308, -0.319, 0.201, -0.137, 0.0644, -0.0975, 0.0172, -0.351, -0.455, 0.497, -0.126, -0.394, 0.133, 0.287, -0.344, 0.0972, -0.155, 0.0195, -0.479, -0.466, 0.49, 0.366, -0.0137, 0.0672, -0.238, 0.279, -0.0741, 0.446, 0.267, 0.319, 0.463, -0.246, -0.462, -0.299, -0.319, -0.416, -0.449, 0.0574, 0.371, -0.0417, 0.447, 0.41, -0.436, 0.0981, -0.103, -0.38, 0.459, -0.243, 0.0645, 0.141, 0.456, 0.17, -0.107, -0.0517, -0.34, 0.466, 0.492, -0.278, -0.461, -0.244, -0.148, 0.403, 0.405, 0.337, -0.453, 0.286, 0.21, 0.147, 0.485, -0.444, -0.355, 0.255, 0.439, 0.177, -0.201, 0.0915, 0.258, -0.395, -0.176, -0.243, -0.376, -0.0187, -0.331, -0.262, -0.357, 0.178, -0.487, 0.217, -0.305, -0.464, 0.428, -0.279, 0.434, 0.367, 0.389, -0.36, -0.0528, -0.403, 0.429, 0.342, 0.128, -0.0477, -0.16, 0.323, -0.0225, 0.128, -0.357, -0.278, -0.443, 0.214, 0.0534, -0.355, 0.371, -0.234, -0.0882, -0.344, -0.229, 0.34, -0.165, -0.332, -0.00899, -0.182, 0.403, -0.386, 0.479, -0.443, 0.395, 0.168, -0.289, -0.0225, -0.214, -0.242, -0.298, -0.136, 0.491, 0.498, 0.425, -0.402, -0.211, 0.396, -0.443, 0.226, -0.206, 0.479, -0.484, 0.307, -0.159, -0.36, -0.498, 0.332, 0.0266, -0.314, -0.0648, 0.412, -0.282, 0.0713, -0.362, -0.32, 0.27, 0.212, -0.303, -0.421, -0.413, 0.109, -0.00452, -0.226, -0.294, 0.112, 0.208, 0.312, 0.0829, -0.298, -0.434, 0.233, -0.0919, 0.222, -0.445, 0.311, -0.165, 0.342, 0.365, -0.00698, -0.485, 0.41, -0.0234, 0.372, -0.234, -0.314, 0.332, -0.133, -0.337, -0.129, 0.0949, -0.495, 0.0198, -0.0542, 0.0156, -0.379, 0.215, 0.317, 0.365, -0.179, 0.211, -0.119, 0.251, -0.439, 0.373, 0.454, -0.0052, 0.0133, 0.0305, 0.0373, -0.479, 0.467, -0.276, -0.318, -0.397, -0.25, 0.317, -0.47, -0.404, 0.199, -0.305, -0.482, 0.0994, 0.0765, 0.0229, 0.203, -0.397, 0.37, 0.217, -0.455, -0.377, -0.00641, 0.000756, -0.22, -0.378, -0.0943, -0.363, 0.0918, 0.361, -0.353, 0.0728, 0.247, -0.336, 0.326, 0.438, -0.111, -0.0795, 0.34, 0.0256, -0.104, 0.441, 0.277, -0.161, -0.26, -0.165, -0.0644, 0.481, 0.304, 0.413, 0.315, 0.348, -0.446, 0.0174, 0.458, 0.434, -0.251, -0.0779, 0.133, -0.136, 0.0308, -0.431, -0.067, 0.00477, -0.479, -0.361, 0.47, 0.277, 0.437, 0.133, 0.309, 0.384, 0.385, -0.466, 0.142, -0.234, 0.178, -0.227, 0.0423, 0.424, 0.121, -0.249, 0.0203, -0.0663, 0.451, -0.212, -0.195, 0.148, -0.38, 0.0943, 0.456, 0.0138, -0.232, -0.0336, 0.0338, -0.352, -0.376, -0.369, -0.206, -0.0935, -0.212, -0.257, -0.412, 0.0463, 0.34, 0.11, 0.0702, 0.15, -0.299, 0.21, -0.0391, 0.048, 0.113, -0.031, -0.189, -0.258, -0.278, 0.0124, -0.117, 0.0857, -0.488, -0.147, 0.362, -0.261, 0.0567, -0.00859, -0.215, 0.488, -0.204, 0.272, -0.341, -0.433, 0.371, -0.06, -0.438, -0.112, -0.0601, 0.235, -0.391, -0.275, 0.459, 0.239, -0.345, -0.163, -0.148, 0.175, 0.116, 0.35, 0.321, 0.0178, 0.239, 0.243, 0.26, -0.0248, 0.285, 0.209, 0.415, -0.373, 0.371, -0.496, 0.266, 0.0858, -0.00212, 0.463, 0.072, -0.0821, 0.284, 0.373, 0.107, -0.12, -0.0477, -0.0421, 0.223, -0.207, -0.109, 0.0554, -0.115, -0.178, 0.287, 0.35, -0.00045, -0.056, -0.316, -0.196, -0.355, 0.0754, 0.0816, -0.412, 0.42, -0.176, 0.343, 0.338, 0.459, -0.296, -0.0736, 0.411, -0.489, -0.453, 0.0649, -0.00266, 0.42, 0.273, 0.0385, 0.498, 0.0174, 0.0173, 0.185, -0.11, -0.142, 0.0947, -0.149, 0.448, 0.176, 0.0252, -0.401, -0.126, -0.0991, 0.0613, 0.0741, 0.38, 0.464, -0.0133, -0.0598, 0.125, 0.496, -0.157, 0.0301, 0.316, -0.329, -0.182, 0.478, 0.326, 0.0126, -0.389]\n"
        "  %b1: f32[20] = const [0.395, 0.19, 0.321, 0.49, 0.388, -0.0791, -0.344, -0.21, 0.0116, 0.00489, -0.312, -0.318, 0.13, 0.103, -0.147, 0.494, 0.137, -0.458, -0.0886, 0.288]\n"
        "  %g: f32[1,3,1,1,8] = const [-0.193, 0.191, -0.496, -0.196, 0.342, 0.0862, 0.168, -0.303, -0.00214, 0.0532, -0.234, 0.147, 0.0315, 0.497, 0.0745, -0.0889, -0.378, -0.343, 0.259, -0.393, -0.4, -0.329, 0.0225, 0.323]\n"
        "  %xb: f32[N,2,6,6,8] = to_blocked(%x) {block=8}\n"
        "  %c: f32[N,3,6,6,8] = conv2d_blk(%xb, %w1, %b1) {padding=[1], block=8}\n"
        "  %r: f32[N,3,6,6,8] = relu(%c)\n"
        "  %m: f32[N,3,6,6,8] = mul(%r, %g)\n"
        "  %p: f32[N,3,3,3,8] = max_pool2d_blk(%m) {kernel=[2]}\n"
        "  %y: f32[N,20,6,6] = from_blocked(%m) {channels=20}\n"
        "  %z: f32[N,20,3,3] = from_blocked(%p) {channels=20}\n"
        "  return y = %y\n"
        "  return z = %z\n"
        "}\n";
    graph *g = parse(text);
    if (!g)
        return;
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    const char *lay = p ? replay_plan_layout(p) : err;
    CHECK_MSG(p && strstr(lay, "re-planned for cpu ") && strstr(lay, "an unrecorded target"),
              "%s", lay);
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 12, 6, 6), 3, -1, 1), *ref[2] = {0};
    CHECK(eager_interpret(g, &x, 1, ref, 2, NULL) == TG_OK);
    float y[2 * 20 * 36], z[2 * 20 * 9];
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    replay_tensor in = {.type = *eager_type(x), .input = eager_peek(x)};
    replay_tensor out[2] = {{.name = "y", .type = {GRAPH_F32, 4, {2, 20, 6, 6}}, .data = y},
                            {.name = "z", .type = {GRAPH_F32, 4, {2, 20, 3, 3}}, .data = z}};
    CHECK_MSG(s && replay_run(s, &in, 1, out, 2) == TG_OK, "run: %s",
              s ? replay_session_error(s) : "no session");
    if (ref[0] && ref[1]) {
        CHECK(check_normalized_error(y, eager_peek(ref[0]), 2 * 20 * 36) < 1e-5);
        CHECK(check_normalized_error(z, eager_peek(ref[1]), 2 * 20 * 9) < 1e-5);
    }
    replay_session_free(s);
    replay_plan_free(p);
    eager_pool_pop();
    graph_free(g);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The target in the file: kept, absent in older files, checked when hostile. */
static void test_file(void)
{
    const char *text = "graph t(%x: f32[2]) -> (y: f32[2]) {\n"
                       "  %y: f32[2] = relu(%x)\n  return y = %y\n}\n";
    graph *g = parse(text);
    if (!g)
        return;
    void *buf = NULL;
    size_t len = 0;
    g->target = graph_intern(g, "cpu avx2", -1);
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    graph *h = format_load_mem(buf, len, "a.tgraph", err, sizeof err);
    CHECK_MSG(h && h->target && strcmp(h->target, "cpu avx2") == 0, "target kept: %s", err);
    graph_free(h);
    /* an older file: the same without its last sections, the target (9)
     * and the states (10), which came after it */
    uint8_t *b = buf;
    uint32_t n = (uint32_t)format_get_le(b + 12, 4), keep = 8, drop = n - keep;
    CHECK(n == 10 && format_get_le(b + 32 + 40 * 8, 4) == 9 &&
          format_get_le(b + 32 + 40 * 9, 4) == 10);
    /* sections follow each other: the kept ones end where section 9 starts */
    uint64_t off = format_get_le(b + 32 + 40 * keep + 8, 8);
    size_t hdr = 32 + 40 * (size_t)keep, body = (size_t)off - (32 + 40 * (size_t)n + 8);
    uint8_t *old = malloc(hdr + 8 + body);
    memcpy(old, b, hdr);
    for (uint32_t i = 0; i < keep; i++) /* the offsets move back by the dropped entries */
        put_le(old + 32 + 40 * i + 8, format_get_le(b + 32 + 40 * i + 8, 8) - 40 * drop, 8);
    put_le(old + 12, keep, 4);
    put_le(old + 16, hdr + 8 + body, 8);
    put_le(old + hdr, format_xxh64(old, hdr, 0), 8);
    memcpy(old + hdr + 8, b + 32 + 40 * n + 8, body);
    h = format_load_mem(old, hdr + 8 + body, "old.tgraph", err, sizeof err);
    CHECK_MSG(h && !h->target, "an older file loads without a target: %s", err);
    graph_free(h);
    free(old);
    free(buf);
    /* a target name longer than any target's */
    buf = NULL;
    g->target = graph_intern(g, "a target name of more than forty-seven bytes, surely", -1);
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    h = format_load_mem(buf, len, "long.tgraph", err, sizeof err);
    CHECK_MSG(!h && strstr(err, "section 'target'") && strstr(err, "the target name has 52 bytes"),
              "%s", err);
    graph_free(h);
    free(buf);
    graph_free(g);
}

int main(void)
{
    test_targets();
    test_file();
    test_replan_refused();
    test_foreign_blocks_fast();
    test_replan_text();
    test_replan("mobilenet_v2_w025");
    test_replan_packed_groups();
    return check_done();
}
