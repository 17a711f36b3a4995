/*
 * fuzz_graph.h - what the two libFuzzer targets past loading share
 * (fuzz_run.c: the CPU replay; fuzz_ocl.c: the OpenCL backend): the input
 * layout, the graph it holds loaded and optimized, the input types at
 * the fuzzer's sizes and the bytes they need, and one replay_run and
 * eager_interpret on the same deterministic inputs.  What each target
 * compiles, which limits it keeps and how it compares outputs stay in
 * the target.
 *
 * Input layout (hdr header bytes: 2 for fuzz_run, 3 for fuzz_ocl):
 *   byte 0    bits 0-1: the graph's format (0, 3 text IR, 1 .tgraph,
 *             2 ONNX); bits 2-3: optimizer level (0..3); bit 4: ONNX
 *             initializers as params; bit 5: keep_params
 *   byte 1    n (0..15, low 4 bits): sizes for the dynamic symbols follow
 *   byte 2..  the target's own (fuzz_ocl: the backend's switches)
 *   n bytes   symbol k's size: 0..239 as is, 240.. picks one of the sizes
 *             that probe the size cap (2^31, 2^40, 2^40 + 1, 2^62, ...)
 *   the rest  the graph file
 * Every input of the graph gets its signature type with each dynamic dim
 * replaced by its symbol's size (symbols without a byte keep their traced
 * size), and deterministic data: small integers (valid and invalid
 * indices alike) or floats in [-2, 2).
 */
#ifndef TG_TESTS_FUZZ_GRAPH_H
#define TG_TESTS_FUZZ_GRAPH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eager/interp.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"

static const int64_t special[16] = {
    INT64_C(1) << 31, INT64_C(1) << 40, (INT64_C(1) << 40) + 1, INT64_C(1) << 62,
    INT64_C(1) << 20, (INT64_C(1) << 20) + 1, INT64_C(1) << 32, INT64_MAX,
    -1, -2, INT64_MIN, 1 << 16, 65537, 3, 1000003, INT64_C(1) << 41,
};

/*
 * The run's time budget (issue 29).  libFuzzer checks -max_total_time
 * only between its own mutations, not while it runs the corpus it starts
 * from, so a target whose inputs are slow ran far past its budget:
 * fuzz_ocl's "25 s" took 5 minutes on a fresh clone, each of its 155
 * seeds a PoCL build of new kernel sources under ASan.  fuzz_budget_init
 * (from LLVMFuzzerInitialize) reads the flag from the target's own
 * arguments; once the budget is spent, fuzz_over_budget makes each input
 * left a no-op, so the run ends within the budget plus the one input
 * then running (at most -timeout).  libFuzzer's own clock starts after
 * LLVMFuzzerInitialize, and reads its flags after it too: a target that
 * spends time there (fuzz_ocl's warm-up builds) gives libFuzzer only what
 * is left (fuzz_budget_rest).
 */
static double fuzz_deadline;

static double fuzz_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fuzz_budget_init(int argc, char **argv)
{
    /* -O3's layout from the built-in cost rates: a finding replays alike
     * on every machine, and the user's ~/.cache is not written */
    setenv("TG_COST_RATES", "builtin", 1);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-max_total_time=", 16) == 0 && atol(argv[i] + 16) > 0)
            fuzz_deadline = fuzz_now() + (double)atol(argv[i] + 16);
}

static int fuzz_over_budget(void)
{
    return fuzz_deadline > 0 && fuzz_now() > fuzz_deadline;
}

/* -max_total_time in argv set to the seconds left of the budget (at
 * least 1), for libFuzzer to read after LLVMFuzzerInitialize. */
static void fuzz_budget_rest(int argc, char **argv)
{
    static char flag[40];
    double left = fuzz_deadline - fuzz_now();
    for (int i = 1; i < argc && fuzz_deadline > 0; i++)
        if (strncmp(argv[i], "-max_total_time=", 16) == 0) {
            snprintf(flag, sizeof flag, "-max_total_time=%ld", left < 1 ? 1L : (long)left);
            argv[i] = flag;
        }
}

/* FUZZ_RUN_VERBOSE=1: each refusal printed (seeds are checked that way). */
static int fuzz_verbose(void)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("FUZZ_RUN_VERBOSE") != NULL;
    return verbose;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "%s: %s\n", what, msg);
    abort();
}

/* An error has a message. */
static void check_named(const char *what, const char *msg)
{
    if (!msg[0])
        die(what, "an error without a message");
    if (fuzz_verbose())
        fprintf(stderr, "  %s: %s\n", what, msg);
}

/* One input split by the layout above. */
typedef struct fuzz_input {
    uint8_t flags;       /* byte 0 */
    int level;           /* the optimizer's, from byte 0 */
    int nsz;             /* sizes given */
    const uint8_t *sz;   /* nsz of them */
    const uint8_t *file; /* the graph file, flen bytes */
    size_t flen;
} fuzz_input;

/* 0 when data is too short for hdr header bytes and its sizes. */
static int fuzz_split(const uint8_t *data, size_t size, size_t hdr, fuzz_input *in)
{
    if (size < hdr)
        return 0;
    in->flags = data[0];
    in->level = data[0] >> 2 & 3;
    in->nsz = data[1] & 15;
    if (size < hdr + (size_t)in->nsz)
        return 0;
    in->sz = data + hdr;
    in->file = data + hdr + in->nsz;
    in->flen = size - hdr - (size_t)in->nsz;
    return 1;
}

/* The graph in in's file, in the format byte 0 names; NULL when the
 * loader refuses it (named). */
static graph *fuzz_load(const fuzz_input *in, char *err, size_t errlen)
{
    int fmt = in->flags & 3;
    graph *g;
    if (fmt == 1) {
        g = format_load_mem(in->file, in->flen, "fuzz", err, errlen);
    } else if (fmt == 2) {
        format_onnx_load_opts o = {.params = in->flags >> 4 & 1, .dim_default = 3};
        g = format_onnx_load_mem(in->file, in->flen, "fuzz", &o, err, errlen);
    } else {
        g = graph_parse((const char *)in->file, in->flen, err, errlen);
    }
    if (!g)
        check_named("load", err);
    return g;
}

/* g optimized at in's level (as it is at 0); 0 when the optimizer
 * refuses it (named). */
static int fuzz_optimize(graph *g, const fuzz_input *in, char *err, size_t errlen)
{
    if (!in->level)
        return 1;
    opt_options o = opt_default_options();
    o.level = in->level;
    o.keep_params = in->flags >> 5 & 1;
    if (opt_optimize(g, &o, NULL, err, errlen) != TG_OK) {
        check_named("opt_optimize", err);
        return 0;
    }
    return 1;
}

/* The input types of g at in's sizes into types (g->ninputs of them); 0
 * when the ones within the size cap have more than max_input elements
 * together. */
static int fuzz_types(const graph *g, const fuzz_input *in, graph_type *types, int64_t max_input)
{
    int ok = 1;
    int64_t elems = 0;
    for (int32_t i = 0; ok && i < g->ninputs; i++) {
        const graph_value *v = &g->values[g->inputs[i]];
        types[i] = v->type;
        for (int d = 0; d < v->type.ndim; d++)
            if ((v->dyn >> d & 1) && v->sym[d] < in->nsz) {
                uint8_t b = in->sz[v->sym[d]];
                types[i].dim[d] = b < 240 ? b : special[b & 15];
            }
        if (graph_type_check(&types[i], NULL, 0) == TG_OK) {
            elems += graph_type_numel(&types[i]);
            ok = elems <= max_input;
        }
    }
    return ok;
}

/* Bytes of every value at these input types, by inference node by node
 * (counting stops past max_bytes); -1 when inference refuses (replay must
 * refuse too). */
static int64_t planned_bytes(const graph *g, const graph_type *in, int64_t max_bytes)
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
        if (graph_infer(n->op, it, n->nin, tg_node_attrs(n), ot, GRAPH_MAX_NODE_IO, &nout,
                        NULL, 0) != TG_OK || nout != n->nout) {
            total = -1;
            break;
        }
        for (int k = 0; k < nout; k++) {
            t[n->out[k]] = ot[k];
            total += (int64_t)graph_type_bytes(&ot[k]);
            if (total > max_bytes)
                break;
        }
    }
    free(t);
    return total;
}

/* What a run at types needs: -1 when a type is past the size cap (the
 * graph is run: replay_run must refuse it, not run it) or inference
 * refuses; else planned_bytes.  The graph is run when this is at most
 * max_bytes. */
static int64_t fuzz_bytes(const graph *g, const graph_type *types, int64_t max_bytes)
{
    for (int32_t i = 0; i < g->ninputs; i++)
        if (graph_type_check(&types[i], NULL, 0) != TG_OK)
            return -1;
    return planned_bytes(g, types, max_bytes);
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

/* One replay_run and eager_interpret on the same inputs: out[k] and
 * ref[k] are output k of each, to compare before fuzz_pair_free. */
typedef struct fuzz_pair {
    int nin, nout;
    replay_tensor *in, *out;
    eager_tensor **ein, **ref;
    replay_session *s;
    int pushed; /* an eager pool to pop */
} fuzz_pair;

/* Runs p on inputs of types (deterministic data; a type past the cap
 * gets a few bytes: replay must refuse it unread), then the interpreter
 * on g with the same inputs; every refusal named.  1 when both
 * succeeded. */
static int fuzz_pair_run(fuzz_pair *r, const graph *g, replay_plan *p, const graph_type *types)
{
    int nin = g->ninputs, nout = g->noutputs;
    *r = (fuzz_pair){.nin = nin, .nout = nout};
    r->in = calloc((size_t)nin + 1, sizeof *r->in);
    r->out = calloc((size_t)nout + 1, sizeof *r->out);
    r->ein = calloc((size_t)nin + 1, sizeof *r->ein);
    r->ref = calloc((size_t)nout + 1, sizeof *r->ref);
    r->s = replay_session_new(p, NULL, 0);
    if (!r->in || !r->out || !r->ein || !r->ref || !r->s)
        return 0;
    for (int i = 0; i < nin; i++) {
        r->in[i].type = types[i];
        int valid = graph_type_check(&types[i], NULL, 0) == TG_OK;
        r->in[i].data = malloc(valid ? graph_type_bytes(&types[i]) + 1 : 16);
        if (!r->in[i].data)
            return 0;
        if (valid)
            fill(&types[i], r->in[i].data, (uint64_t)i * 1000003u);
    }
    tg_status st = replay_run(r->s, r->in, nin, r->out, nout);
    if (st != TG_OK)
        check_named("replay_run", replay_session_error(r->s));
    for (int i = 0; st == TG_OK && i < nin; i++)
        if (graph_type_check(&types[i], NULL, 0) != TG_OK)
            die("replay_run", "accepted an input past the size cap");
    if (st == TG_OK && fuzz_verbose())
        fprintf(stderr, "  replay_run: ok\n");
    eager_pool_push();
    r->pushed = 1;
    for (int i = 0; i < nin; i++) {
        graph_ints shape = {types[i].ndim, {0}};
        memcpy(shape.v, types[i].dim, sizeof(int64_t) * (size_t)shape.n);
        r->ein[i] = eager_from_data(types[i].dtype, shape, r->in[i].data);
    }
    tg_status rs = eager_interpret(g, r->ein, nin, r->ref, nout, NULL);
    if (rs != TG_OK)
        check_named("eager_interpret", eager_error());
    return st == TG_OK && rs == TG_OK;
}

/* Output k's type the same on both sides (else what: dies). */
static void fuzz_same_type(const char *what, const fuzz_pair *r, int k)
{
    const graph_type *rt = eager_type(r->ref[k]);
    const graph_type *ot = &r->out[k].type;
    int same = rt->dtype == ot->dtype && rt->ndim == ot->ndim;
    for (int d = 0; same && d < rt->ndim; d++)
        same = rt->dim[d] == ot->dim[d];
    if (!same)
        die(what, "an output's type differs");
}

static void fuzz_pair_free(fuzz_pair *r)
{
    if (r->pushed) {
        for (int k = 0; k < r->nout; k++)
            eager_release(r->ref[k]);
        eager_pool_pop();
        eager_clear_error();
    }
    replay_session_free(r->s);
    for (int i = 0; r->in && i < r->nin; i++)
        free(r->in[i].data);
    free(r->in);
    free(r->out);
    free(r->ein);
    free(r->ref);
}

#endif
