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
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "formats/tgraph_impl.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/internal.h"

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
    o.backend = REPLAY_OPENCL;
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_OK);
    CHECK_MSG(strcmp(t.name, "opencl") == 0 && t.block == 16 && !t.impl_of, "%s %d", t.name,
              t.block);
    o.threads = -1;
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_ERR_ARG &&
          strstr(err, "replay_opts.threads is -1"));
    CHECK(replay_target(NULL, NULL, err, sizeof err) == TG_ERR_NULL);
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
        tg_status st = t.impl_of(&t, nd->op, graph_node_attrs(nd), in, nd->nin,
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
static void test_replan(void)
{
    model m;
    if (!model_load(&m, "mobilenet_v2_w025")) {
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
        replay_device dev;
        if (replay_opencl_devices(&dev, 1, err, sizeof err) > 0) {
            replay_opts o = REPLAY_OPTS_INIT;
            o.backend = REPLAY_OPENCL;
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
    char perr[512];
    graph *g = graph_parse(text, strlen(text), perr, sizeof perr);
    CHECK_MSG(g != NULL, "parse: %s", perr);
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
    char perr[512];
    graph *g = graph_parse(text, strlen(text), perr, sizeof perr);
    CHECK_MSG(g != NULL, "parse: %s", perr);
    if (!g)
        return;
    void *buf = NULL;
    size_t len = 0;
    g->target = graph_intern(g, "cpu avx2", -1);
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    graph *h = format_load_mem(buf, len, "a.tgraph", err, sizeof err);
    CHECK_MSG(h && h->target && strcmp(h->target, "cpu avx2") == 0, "target kept: %s", err);
    graph_free(h);
    /* an older file: the same without its last section, the target */
    uint8_t *b = buf;
    uint32_t n = (uint32_t)format_get_le(b + 12, 4);
    const uint8_t *last = b + 32 + 40 * (n - 1);
    CHECK(n == 9 && format_get_le(last, 4) == 9);
    uint64_t off = format_get_le(last + 8, 8);
    size_t hdr = 32 + 40 * (size_t)(n - 1), body = (size_t)off - (32 + 40 * (size_t)n + 8);
    uint8_t *old = malloc(hdr + 8 + body);
    memcpy(old, b, hdr);
    for (uint32_t i = 0; i + 1 < n; i++) /* the offsets move back by one entry */
        put_le(old + 32 + 40 * i + 8, format_get_le(b + 32 + 40 * i + 8, 8) - 40, 8);
    put_le(old + 12, n - 1, 4);
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
    test_replan();
    return check_done();
}
