/*
 * fuzz_ocl.c - libFuzzer target for what the OpenCL backend does with a
 * graph (issue 20): bytes -> graph (text IR, .tgraph or ONNX) -> optimize
 * -> replay_compile on the OpenCL backend (replay/opencl: prep.c, the
 * attention matcher ocl_attn_find and the layout it absorbs by strides,
 * the generated source of fused nodes, the GEMM, conv and depthwise
 * prepare functions) -> one replay_run on small inputs (run.c: bind's
 * pool, fill_slots) -> the reference interpreter on the same inputs.
 *
 * Input layout (fuzz_run.c's, with one byte more):
 *   byte 0    bits 0-1: the graph's format (0, 3 text IR, 1 .tgraph,
 *             2 ONNX); bits 2-3: optimizer level (0..3); bit 4: ONNX
 *             initializers as params; bit 5: keep_params
 *   byte 1    n (0..15, low 4 bits): sizes for the dynamic symbols follow
 *   byte 2    the backend's switches, set before the compile (they are
 *             read there): bits 0-1 TG_OPENCL_ATTN (fused, off, auto,
 *             fused: auto does not fuse on PoCL's CPU device), bits 2-3
 *             TG_OPENCL_GEMM (own, clblast, auto, own), bit 4
 *             TG_OPENCL_TILE (cpu, gpu), bit 5 TG_OPENCL_DW (tiled,
 *             direct), bit 6 TG_OPENCL_TAIL (on, off: the fused node
 *             after a product run in its kernels; auto is off on PoCL),
 *             bit 7 TG_OPENCL_SPLITK (auto, off)
 *   n bytes   symbol k's size: 0..239 as is, 240.. picks one of the sizes
 *             that probe the size cap (2^31, 2^40, 2^40 + 1, 2^62, ...)
 *   the rest  the graph file
 * Inputs get their signature type with each dynamic dim at its symbol's
 * size, and deterministic data as in fuzz_run.c.
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

#include "eager/interp.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/internal.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"

#define FUZZ_MAX_BYTES (8 << 20)
#define FUZZ_MAX_INPUT (1 << 18) /* elements of one input */
#define FUZZ_MAX_NODES 64
#define FUZZ_RTOL 1e-3
#define FUZZ_ATOL 1e-3 /* times the output's largest magnitude (at least 1) */
#define FUZZ_MAX_CONST 8.0f

static const int64_t special[16] = {
    INT64_C(1) << 31, INT64_C(1) << 40, (INT64_C(1) << 40) + 1, INT64_C(1) << 62,
    INT64_C(1) << 20, (INT64_C(1) << 20) + 1, INT64_C(1) << 32, INT64_MAX,
    -1, -2, INT64_MIN, 1 << 16, 65537, 3, 1000003, INT64_C(1) << 41,
};

static int verbose;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "%s: %s\n", what, msg);
    abort();
}

static void check_named(const char *what, const char *msg)
{
    if (!msg[0])
        die(what, "an error without a message");
    if (verbose)
        fprintf(stderr, "  %s: %s\n", what, msg);
}

/* The backend's switches of byte 2, in the environment before the
 * compile. */
static void set_switches(uint8_t b)
{
    static const char *const attn[4] = {"fused", "off", "auto", "fused"};
    static const char *const gemm[4] = {"own", "clblast", "auto", "own"};
    setenv("TG_OPENCL_ATTN", attn[b & 3], 1);
    setenv("TG_OPENCL_GEMM", gemm[b >> 2 & 3], 1);
    setenv("TG_OPENCL_TILE", b >> 4 & 1 ? "gpu" : "cpu", 1);
    setenv("TG_OPENCL_DW", b >> 5 & 1 ? "direct" : "tiled", 1);
    setenv("TG_OPENCL_TAIL", b >> 6 & 1 ? "off" : "on", 1);
    setenv("TG_OPENCL_SPLITK", b >> 7 & 1 ? "off" : "auto", 1);
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

static void warm_up(void)
{
    static const uint8_t modes[] = {0x04, 0x00, 0x10};
    char err[4096] = "";
    graph *g = graph_parse(warm_ir, sizeof warm_ir - 1, err, sizeof err);
    if (!g) {
        fprintf(stderr, "fuzz_ocl: the warm-up graph: %s\n", err);
        abort();
    }
    for (size_t m = 0; m < sizeof modes; m++) {
        set_switches(modes[m]);
        replay_opts ro = {.backend = REPLAY_OPENCL};
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
    (void)argc, (void)argv;
    verbose = getenv("FUZZ_RUN_VERBOSE") != NULL;
    char err[512] = "";
    int n = replay_opencl_devices(NULL, 0, err, sizeof err);
    if (n <= 0)
        fprintf(stderr, "fuzz_ocl: %s: every compile will be refused\n",
                n < 0 ? err : "no OpenCL device");
    else
        warm_up();
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

/* Bytes of every value at these input types, by inference node by node;
 * -1 when inference refuses (replay must refuse too). */
static int64_t planned_bytes(const graph *g, const graph_type *in)
{
    graph_type *t = malloc(sizeof *t * ((size_t)g->nvalues + 1));
    if (!t)
        return -1;
    for (int32_t v = 0; v < g->nvalues; v++)
        t[v] = g->values[v].type;
    for (int32_t i = 0; i < g->ninputs; i++)
        t[g->inputs[i]] = in[i];
    int64_t total = 0;
    for (int32_t v = 0; v < g->nvalues; v++)
        if (g->values[v].kind != GRAPH_VALUE_INTER)
            total += (int64_t)graph_type_bytes(&t[v]);
    for (int32_t i = 0; i < g->nnodes && total >= 0; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO];
        for (int k = 0; k < n->nin; k++)
            it[k] = t[n->in[k]];
        int nout = 0;
        if (graph_infer(n->op, it, n->nin, graph_node_attrs(n), ot, GRAPH_MAX_NODE_IO, &nout,
                        NULL, 0) != TG_OK || nout != n->nout) {
            total = -1;
            break;
        }
        for (int k = 0; k < nout; k++) {
            t[n->out[k]] = ot[k];
            total += (int64_t)graph_type_bytes(&ot[k]);
            if (total > FUZZ_MAX_BYTES)
                break;
        }
    }
    free(t);
    return total;
}

static void fill(const graph_type *t, void *data, uint64_t seed)
{
    int64_t n = graph_type_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (seed + (uint64_t)i) * 0x9E3779B97F4A7C15ull;
        z ^= z >> 29;
        switch (t->dtype) {
        case GRAPH_F32: ((float *)data)[i] = (float)(z % 4096) / 1024.0f - 2.0f; break;
        case GRAPH_I64: ((int64_t *)data)[i] = (int64_t)(z % 9) - 3; break;
        case GRAPH_I32: ((int32_t *)data)[i] = (int32_t)(z % 9) - 3; break;
        default: ((uint8_t *)data)[i] = (uint8_t)(z & 1); break;
        }
    }
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
    fprintf(stderr, "  replay_compile: ok (gemm %s)\n", replay_opencl_gemm(p));
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
    int nin = g->ninputs, nout = g->noutputs;
    replay_tensor *in = calloc((size_t)nin + 1, sizeof *in);
    replay_tensor *out = calloc((size_t)nout + 1, sizeof *out);
    eager_tensor **ein = calloc((size_t)nin + 1, sizeof *ein);
    eager_tensor **ref = calloc((size_t)nout + 1, sizeof *ref);
    replay_session *s = replay_session_new(p, NULL, 0);
    if (!in || !out || !ein || !ref || !s)
        goto done;
    for (int i = 0; i < nin; i++) {
        in[i].type = types[i];
        int valid = graph_type_check(&types[i], NULL, 0) == TG_OK;
        /* a type past the cap gets a few bytes: replay must refuse it unread */
        in[i].data = malloc(valid ? graph_type_bytes(&types[i]) + 1 : 16);
        if (!in[i].data)
            goto done;
        if (valid)
            fill(&types[i], in[i].data, (uint64_t)i * 1000003u);
    }
    if (verbose) {
        fprintf(stderr, "  inputs:");
        for (int i = 0; i < nin; i++) {
            fprintf(stderr, " %s[", graph_dtype_name(types[i].dtype));
            for (int d = 0; d < types[i].ndim; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)types[i].dim[d]);
            fprintf(stderr, "]");
        }
        fprintf(stderr, "\n");
    }
    tg_status st = replay_run(s, in, nin, out, nout);
    if (st != TG_OK)
        check_named("replay_run", replay_session_error(s));
    for (int i = 0; st == TG_OK && i < nin; i++)
        if (graph_type_check(&types[i], NULL, 0) != TG_OK)
            die("replay_run", "accepted an input past the size cap");
    if (st == TG_OK && verbose)
        fprintf(stderr, "  replay_run: ok\n");
    eager_pool_push();
    for (int i = 0; i < nin; i++) {
        graph_ints shape = {types[i].ndim, {0}};
        memcpy(shape.v, types[i].dim, sizeof(int64_t) * (size_t)shape.n);
        ein[i] = eager_from_data(types[i].dtype, shape, in[i].data);
    }
    tg_status rs = eager_interpret(g, ein, nin, ref, nout, NULL);
    if (rs != TG_OK)
        check_named("eager_interpret", eager_error());
    if (st == TG_OK && rs == TG_OK) {
        for (int k = 0; k < nout; k++) {
            const graph_type *rt = eager_type(ref[k]);
            int same = rt->dtype == out[k].type.dtype && rt->ndim == out[k].type.ndim;
            for (int d = 0; same && d < rt->ndim; d++)
                same = rt->dim[d] == out[k].type.dim[d];
            if (!same)
                die("opencl vs interpreter", "an output's type differs");
            if (!cmp || rt->dtype != GRAPH_F32)
                continue;
            int64_t at = mismatch(out[k].data, eager_peek(ref[k]), graph_type_numel(rt));
            if (at >= 0) {
                fprintf(stderr, "output %d (%s) element %lld: opencl %.9g, interpreter %.9g\n",
                        k, g->outputs[k].name, (long long)at,
                        (double)((const float *)out[k].data)[at],
                        (double)((const float *)eager_peek(ref[k]))[at]);
                die("opencl vs interpreter", "an output differs");
            }
        }
        if (verbose)
            fprintf(stderr, "  outputs %s\n", cmp ? "compared: same" : "not compared");
    }
    for (int k = 0; k < nout; k++)
        eager_release(ref[k]);
    eager_pool_pop();
    eager_clear_error();
done:
    replay_session_free(s);
    for (int i = 0; in && i < nin; i++)
        free(in[i].data);
    free(in);
    free(out);
    free(ein);
    free(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int fmt = data[0] & 3, level = data[0] >> 2 & 3, nsz = data[1] & 15;
    if (size < 3 + (size_t)nsz)
        return 0;
    const uint8_t *sz = data + 3, *file = data + 3 + nsz;
    size_t flen = size - 3 - (size_t)nsz;
    char err[4096] = "";
    graph *g;
    if (fmt == 1) {
        g = format_load_mem(file, flen, "fuzz", err, sizeof err);
    } else if (fmt == 2) {
        format_onnx_load_opts o = {data[0] >> 4 & 1, 3};
        g = format_onnx_load_mem(file, flen, "fuzz", &o, err, sizeof err);
    } else {
        g = graph_parse((const char *)file, flen, err, sizeof err);
    }
    if (!g) {
        check_named("load", err);
        return 0;
    }
    int cmp = comparable(g);
    if (level) {
        opt_options o = opt_default_options();
        o.level = level;
        o.keep_params = data[0] >> 5 & 1;
        if (opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK) {
            check_named("opt_optimize", err);
            graph_free(g);
            return 0;
        }
    }
    set_switches(data[2]);
    replay_opts ro = {.backend = REPLAY_OPENCL};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    if (!p) {
        check_named("replay_compile", err);
        graph_free(g);
        return 0;
    }
    if (verbose)
        print_plan(g, p);
    int32_t live = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        live += !(g->nodes[i].flags & GRAPH_NODE_DEAD);
    /* input types at the fuzzer's sizes */
    graph_type *types = malloc(sizeof *types * ((size_t)g->ninputs + 1));
    int ok = types != NULL && live <= FUZZ_MAX_NODES;
    int64_t elems = 0;
    for (int32_t i = 0; ok && i < g->ninputs; i++) {
        const graph_value *v = &g->values[g->inputs[i]];
        types[i] = v->type;
        for (int d = 0; d < v->type.ndim; d++)
            if ((v->dyn >> d & 1) && v->sym[d] < nsz)
                types[i].dim[d] = sz[v->sym[d]] < 240 ? sz[v->sym[d]] : special[sz[v->sym[d]] & 15];
        if (graph_type_check(&types[i], NULL, 0) == TG_OK) {
            elems += graph_type_numel(&types[i]);
            ok = elems <= FUZZ_MAX_INPUT;
        }
    }
    if (ok) {
        /* a type past the cap must be refused by replay_run, not run */
        int refused = 0;
        for (int32_t i = 0; i < g->ninputs; i++)
            refused |= graph_type_check(&types[i], NULL, 0) != TG_OK;
        int64_t bytes = refused ? -1 : planned_bytes(g, types);
        if (refused || bytes <= FUZZ_MAX_BYTES)
            run(g, p, types, cmp);
        else if (verbose)
            fprintf(stderr, "  not run: %lld bytes of values\n", (long long)bytes);
    } else if (verbose) {
        fprintf(stderr, "  not run: %d nodes or inputs of more than %d elements\n", live,
                FUZZ_MAX_INPUT);
    }
    free(types);
    replay_plan_free(p);
    graph_free(g);
    return 0;
}
