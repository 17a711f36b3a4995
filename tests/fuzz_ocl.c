/*
 * fuzz_ocl.c - libFuzzer target for what the OpenCL backend does with a
 * graph (issue 20): bytes -> graph (text IR, .tgraph or ONNX) -> optimize
 * -> replay_compile on the OpenCL backend (replay/opencl: prep.c, the
 * attention matcher ocl_attn_find and the layout it absorbs by strides,
 * the generated source of fused nodes, the GEMM, conv and depthwise
 * prepare functions) -> one replay_run on small inputs (run.c: bind's
 * pool, fill_slots) -> the reference interpreter on the same inputs.
 *
 * Input layout: tests/fuzz_graph.h (shared with fuzz_run.c: loading,
 * optimizing, the input types and data, the run of both sides), with
 * three header bytes:
 *   byte 0    the graph's format, optimizer level, ONNX and keep_params
 *             bits (fuzz_graph.h)
 *   byte 1    n (0..15, low 4 bits): sizes for the dynamic symbols follow
 *   byte 2    the backend's switches, set before the compile (they are
 *             read there): bits 0-1 TG_OPENCL_ATTN (fused, off, auto,
 *             fused: auto does not fuse on PoCL's CPU device), bits 2-3
 *             TG_OPENCL_GEMM (own, clblast, auto, own with
 *             TG_OPENCL_SPLITK=fixup whatever bit 7 says), bit 4
 *             TG_OPENCL_TILE (cpu, gpu; with gpu TG_OPENCL_HEAD=on, the
 *             layer norm a linear runs), bit 5 TG_OPENCL_DW (tiled,
 *             rows; direct is their fallback), bit 6 TG_OPENCL_TAIL
 *             (on, off: the fused node after a product run in its
 *             kernels; auto is off on PoCL),
 *             bit 7 TG_OPENCL_SPLITK (auto, off)
 *   n bytes   symbol k's size (fuzz_graph.h)
 *   the rest  the graph file
 * Inputs get their signature type with each dynamic dim at its symbol's
 * size, and deterministic data (fuzz_graph.h).
 *
 * Must never crash, leak, hang, write out of bounds or fail silently:
 * every refusal (compile, run, interpreter; one side refusing alone is
 * fine) names what was wrong.  When both the OpenCL run and the
 * interpreter succeed, every f32 output must agree within 1e-3 relative
 * plus 1e-3 of the output's largest magnitude (NaN matching NaN, an
 * infinity only itself): the OpenCL kernels round differently.  Graphs
 * whose results a rounding difference can move by more than that are
 * not compared (ops with steps, such as floor, comparisons and argmax;
 * ops that amplify near a pole, such as div, log, rsqrt and the norms;
 * constants beyond +-8), only run.
 *
 * Each iteration stays cheap: graphs of more than FUZZ_MAX_NODES nodes or
 * whose values at these sizes need more than FUZZ_MAX_BYTES (graph_infer,
 * node by node) are compiled but not run.  PoCL builds a program per new
 * kernel source (hundreds of ms); the backend keeps them for the process
 * (runtime.c), so only new fused sources cost that.  scripts/fuzz.sh
 * points PoCL's and the backend's disk caches into its scratch directory.
 * FUZZ_RUN_VERBOSE=1 prints each refusal and, per node of a compiled
 * plan, how the backend runs it (the fused attention, absorbed nodes, the
 * GEMM or depthwise path): seeds are checked that way.  Not named
 * test_*.c, so ctest does not pick it up; scripts/fuzz.sh builds and runs
 * it with seeds from tests/corpus/ocl (hand-written: the three header
 * bytes, the sizes, then text IR; gather_empty_axis.ocl is what it found:
 * gather_k read row 0 of an empty table for an out-of-range index).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_graph.h"
#include "replay/internal.h"
#include "replay/opencl/ocl_rt.h"
#include "graph/graph_impl.h"

#define FUZZ_MAX_BYTES (8 << 20)
#define FUZZ_MAX_INPUT (1 << 18) /* elements of one input */
#define FUZZ_MAX_NODES 64
#define FUZZ_RTOL 1e-3
#define FUZZ_ATOL 1e-3 /* times the output's largest magnitude (at least 1) */
#define FUZZ_MAX_CONST 8.0f

/*
 * CLBlast's programs take 10 to 80 s to build on PoCL (an empty cache, a
 * loaded machine): more than a short run's whole budget, and an input
 * that builds them passes libFuzzer's -timeout.  A run with less than
 * FUZZ_CLBLAST_SECONDS of budget leaves CLBlast out, warm-up and inputs
 * alike (byte 2's "clblast" runs "own"), so that make test's 25 s hold;
 * longer runs (make fuzz FUZZ_SECONDS=120 or more) build it first and
 * fuzz it.  A make test run fuzzed it for 69 s of its 25.
 */
#define FUZZ_CLBLAST_SECONDS 120
static int use_clblast = 1;

/* The backend's switches of byte 2, in the environment before the
 * compile. */
static void set_switches(uint8_t b)
{
    static const char *const attn[4] = {"fused", "off", "auto", "fused"};
    static const char *const gemm[4] = {"own", "clblast", "auto", "own"};
    int g = b >> 2 & 3;
    setenv("TG_OPENCL_ATTN", attn[b & 3], 1);
    setenv("TG_OPENCL_GEMM", gemm[g == 1 && !use_clblast ? 0 : g], 1);
    setenv("TG_OPENCL_TILE", b >> 4 & 1 ? "gpu" : "cpu", 1);
    setenv("TG_OPENCL_HEAD", b >> 4 & 1 ? "on" : "off", 1);
    setenv("TG_OPENCL_DW", b >> 5 & 1 ? "rows" : "tiled", 1);
    setenv("TG_OPENCL_TAIL", b >> 6 & 1 ? "off" : "on", 1);
    setenv("TG_OPENCL_SPLITK", (b >> 2 & 3) == 3 ? "fixup" : b >> 7 & 1 ? "off" : "auto", 1);
}

static void run(const graph *g, replay_plan *p, const graph_type *types, int cmp);

/* The programs most graphs need, built before the first input: CLBlast's
 * GEMM (direct and indirect), strided-batched GEMM and convgemm, our GEMM
 * tiles, conv, depthwise and attention kernels.  On an empty PoCL cache
 * CLBlast alone takes over 10 s to build, which would be charged to the
 * first input that uses it (libFuzzer's -timeout). */
static const char warm_ir[] =
    "graph warm(%a: f32[320,320], %q: f32[3,8,8], %x: f32[1,8,6,6], %w3: f32[8,8,3,3], "
    "%w1: f32[8,8,1,1], %wd: f32[8,1,3,3]) -> (y: f32[320,320], z: f32[3,8,8], "
    "u: f32[1,8,6,6], v: f32[1,8,6,6], w: f32[1,8,6,6]) {\n"
    "  %c: f32[] = const [2]\n"
    "  %y: f32[320,320] = matmul(%a, %a)\n"
    "  %s: f32[3,8,8] = matmul(%q, %q) {transpose_b=1}\n"
    "  %t: f32[3,8,8] = div(%s, %c)\n"
    "  %p: f32[3,8,8] = softmax(%t) {axis=-1}\n"
    "  %z: f32[3,8,8] = matmul(%p, %q)\n"
    "  %u: f32[1,8,6,6] = conv2d(%x, %w3) {padding=[1]}\n"
    "  %v: f32[1,8,6,6] = conv2d(%x, %w1)\n"
    "  %w: f32[1,8,6,6] = conv2d(%x, %wd) {padding=[1], groups=8}\n"
    "  return y = %y\n  return z = %z\n  return u = %u\n  return v = %v\n  return w = %w\n"
    "}\n";

/* Charged to the run's budget (fuzz_graph.h): on an empty cache the
 * builds alone can take longer than a short run's whole budget, so our
 * own kernels come first and each mode starts only while time is left. */
static void warm_up(void)
{
    static const uint8_t modes[] = {0x00, 0x10, 0x04};
    char err[4096] = "";
    graph *g = graph_parse(warm_ir, sizeof warm_ir - 1, err, sizeof err);
    if (!g) {
        fprintf(stderr, "fuzz_ocl: the warm-up graph: %s\n", err);
        abort();
    }
    for (size_t m = 0; m < sizeof modes && !fuzz_over_budget(); m++) {
        if ((modes[m] >> 2 & 3) == 1 && !use_clblast)
            continue;
        set_switches(modes[m]);
        replay_opts ro = {.device = "opencl"};
        replay_plan *p = replay_compile(g, &ro, err, sizeof err);
        if (!p) {
            fprintf(stderr, "fuzz_ocl: the warm-up graph: %s\n", err);
            continue;
        }
        graph_type t[8];
        for (int32_t i = 0; i < g->ninputs && i < 8; i++)
            t[i] = g->values[g->inputs[i]].type;
        run(g, p, t, 1);
        replay_plan_free(p);
    }
    graph_free(g);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_budget_init(*argc, *argv);
    use_clblast = fuzz_deadline == 0 || fuzz_deadline - fuzz_now() >= FUZZ_CLBLAST_SECONDS;
    char err[512] = "";
    int n = replay_backend_devices("opencl", NULL, 0, err, sizeof err);
    if (n <= 0)
        fprintf(stderr, "fuzz_ocl: %s: every compile will be refused\n",
                n < 0 ? err : "no OpenCL device");
    else
        warm_up();
    fuzz_budget_rest(*argc, *argv);
    return 0;
}

/* 1 when rounding differences stay within the tolerance through every
 * node of g (the graph as loaded, before optimizing): no op with steps
 * or a pole, no large or non-finite constant. */
static int comparable(const graph *g)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        switch (g->nodes[i].op) {
        case GRAPH_OP_sign: case GRAPH_OP_floor: case GRAPH_OP_ceil: case GRAPH_OP_round:
        case GRAPH_OP_eq: case GRAPH_OP_lt: case GRAPH_OP_gt: case GRAPH_OP_argmax:
        case GRAPH_OP_argmin: case GRAPH_OP_topk: case GRAPH_OP_cast: case GRAPH_OP_div:
        case GRAPH_OP_pow: case GRAPH_OP_log: case GRAPH_OP_sqrt: case GRAPH_OP_rsqrt:
        case GRAPH_OP_reciprocal: case GRAPH_OP_batch_norm: case GRAPH_OP_layer_norm:
        case GRAPH_OP_fused: /* a program of any ops, as loaded */
            return 0;
        default:
            break;
        }
    }
    for (int32_t v = 0; v < g->nvalues; v++) {
        const graph_value *x = &g->values[v];
        if ((x->kind != GRAPH_VALUE_CONST && x->kind != GRAPH_VALUE_PARAM) ||
            x->type.dtype != GRAPH_F32 || !x->data)
            continue;
        int64_t n = graph_type_numel(&x->type);
        for (int64_t i = 0; i < n; i++) {
            float f = ((const float *)x->data)[i];
            if (!(fabsf(f) <= FUZZ_MAX_CONST))
                return 0;
        }
    }
    return 1;
}

/* The first element of got outside the tolerance of want, or -1. */
static int64_t mismatch(const float *got, const float *want, int64_t n)
{
    double big = 1;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(want[i]) && fabs(want[i]) > big)
            big = fabs(want[i]);
    for (int64_t i = 0; i < n; i++) {
        double a = got[i], b = want[i];
        if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
            if (!(isnan(a) && isnan(b)) && a != b)
                return i;
            continue;
        }
        if (fabs(a - b) > FUZZ_RTOL * fmax(fabs(a), fabs(b)) + FUZZ_ATOL * big)
            return i;
    }
    return -1;
}

/* How the backend runs each node (FUZZ_RUN_VERBOSE). */
static void print_plan(const graph *g, const replay_plan *p)
{
    const ocl_plan *op = p->bplan;
    fprintf(stderr, "  replay_compile: ok (gemm %s)\n", replay_plan_property(p, "gemm"));
    for (int32_t i = 0; i < op->nnodes; i++) {
        const ocl_node *n = &op->nodes[i];
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        fprintf(stderr, "    node %d %s%s%s%s%s\n", i, graph_ops[g->nodes[i].op].name,
                n->op == &ocl_attn_op ? " [fused attention]" : "",
                n->absorbed ? " [absorbed]" : "", n->path ? " " : "", n->path ? n->path : "");
    }
}

/* The OpenCL run, then the interpreter on the same inputs; f32 outputs
 * compared when cmp. */
static void run(const graph *g, replay_plan *p, const graph_type *types, int cmp)
{
    int nin = g->ninputs;
    if (fuzz_verbose()) {
        fprintf(stderr, "  inputs:");
        for (int i = 0; i < nin; i++) {
            fprintf(stderr, " %s[", graph_dtype_name(types[i].dtype));
            for (int d = 0; d < types[i].ndim; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)types[i].dim[d]);
            fprintf(stderr, "]");
        }
        fprintf(stderr, "\n");
    }
    fuzz_pair r;
    if (fuzz_pair_run(&r, g, p, types)) {
        for (int k = 0; k < r.nout; k++) {
            fuzz_same_type("opencl vs interpreter", &r, k);
            const graph_type *rt = eager_type(r.ref[k]);
            if (!cmp || rt->dtype != GRAPH_F32)
                continue;
            const float *got = r.out[k].data, *want = eager_peek(r.ref[k]);
            int64_t at = mismatch(got, want, graph_type_numel(rt));
            if (at >= 0) {
                fprintf(stderr, "output %d (%s) element %lld: opencl %.9g, interpreter %.9g\n",
                        k, g->outputs[k].name, (long long)at, (double)got[at], (double)want[at]);
                die("opencl vs interpreter", "an output differs");
            }
        }
        if (fuzz_verbose())
            fprintf(stderr, "  outputs %s\n", cmp ? "compared: same" : "not compared");
    }
    fuzz_pair_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input fi;
    if (fuzz_over_budget() || !fuzz_split(data, size, 3, &fi))
        return 0;
    char err[4096] = "";
    graph *g = fuzz_load(&fi, err, sizeof err);
    if (!g)
        return 0;
    int cmp = comparable(g);
    if (!fuzz_optimize(g, &fi, err, sizeof err)) {
        graph_free(g);
        return 0;
    }
    set_switches(data[2]);
    replay_opts ro = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    if (!p) {
        check_named("replay_compile", err);
        graph_free(g);
        return 0;
    }
    if (fuzz_verbose())
        print_plan(g, p);
    int32_t live = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        live += !(g->nodes[i].flags & GRAPH_NODE_DEAD);
    /* input types at the fuzzer's sizes */
    graph_type *types = malloc(sizeof *types * ((size_t)g->ninputs + 1));
    if (types != NULL && live <= FUZZ_MAX_NODES && fuzz_types(g, &fi, types, FUZZ_MAX_INPUT)) {
        int64_t bytes = fuzz_bytes(g, types, FUZZ_MAX_BYTES);
        if (bytes <= FUZZ_MAX_BYTES)
            run(g, p, types, cmp);
        else if (fuzz_verbose())
            fprintf(stderr, "  not run: %lld bytes of values\n", (long long)bytes);
    } else if (fuzz_verbose()) {
        fprintf(stderr, "  not run: %d nodes or inputs of more than %d elements\n", live,
                FUZZ_MAX_INPUT);
    }
    free(types);
    replay_plan_free(p);
    graph_free(g);
    return 0;
}
