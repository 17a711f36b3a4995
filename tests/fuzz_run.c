/*
 * fuzz_run.c - libFuzzer target for what runs after a successful load
 * (issue 16): bytes -> graph (text IR, .tgraph or ONNX) -> optimize ->
 * replay_compile -> replay_run on small inputs whose dims, dynamic ones
 * included, come from the fuzzer -> the reference interpreter on the same
 * inputs.
 *
 * Input layout:
 *   byte 0    bits 0-1: the graph's format (0, 3 text IR, 1 .tgraph,
 *             2 ONNX); bits 2-3: optimizer level (0..3); bit 4: ONNX
 *             initializers as params; bit 5: keep_params
 *   byte 1    n (0..15, low 4 bits): sizes for the dynamic symbols follow
 *   n bytes   symbol k's size: 0..239 as is, 240.. picks one of the sizes
 *             that probe the size cap (2^31, 2^40, 2^40 + 1, 2^62, ...)
 *   the rest  the graph file
 * Every input of the graph gets its signature type with each dynamic dim
 * replaced by its symbol's size (symbols without a byte keep their traced
 * size), and deterministic data: small integers (valid and invalid
 * indices alike) or floats in [-2, 2).
 *
 * Must never crash, leak, hang, write out of bounds or fail silently:
 * every refusal names the input, node or file; when replay and the
 * interpreter both succeed on an unoptimized graph, their outputs must be
 * the same bits (NaN matching NaN), since both run the same kernels.
 * Graphs whose values at these sizes would need more than FUZZ_MAX_BYTES
 * (worked out here by graph_infer, node by node) are not run: a huge
 * legitimate allocation is not a finding.  Not named test_*.c, so ctest
 * does not pick it up; scripts/fuzz.sh builds and runs it with seeds from
 * tests/corpus/run (hand-written: byte 0, the sizes, then text IR).
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
#include "replay/replay.h"

#define FUZZ_MAX_BYTES (64 << 20)
#define FUZZ_MAX_INPUT (1 << 20) /* elements of one input */

static const int64_t special[16] = {
    INT64_C(1) << 31, INT64_C(1) << 40, (INT64_C(1) << 40) + 1, INT64_C(1) << 62,
    INT64_C(1) << 20, (INT64_C(1) << 20) + 1, INT64_C(1) << 32, INT64_MAX,
    -1, -2, INT64_MIN, 1 << 16, 65537, 3, 1000003, INT64_C(1) << 41,
};

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "%s: %s\n", what, msg);
    abort();
}

/* An error has a message (FUZZ_RUN_VERBOSE=1 prints it: seeds are
 * checked that way). */
static void check_named(const char *what, const char *msg)
{
    if (!msg[0])
        die(what, "an error without a message");
    if (getenv("FUZZ_RUN_VERBOSE"))
        fprintf(stderr, "  %s: %s\n", what, msg);
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

static int same_bits(const graph_type *t, const void *a, const void *b)
{
    int64_t n = graph_type_numel(t);
    if (t->dtype != GRAPH_F32)
        return memcmp(a, b, graph_type_bytes(t)) == 0;
    for (int64_t i = 0; i < n; i++) {
        float x = ((const float *)a)[i], y = ((const float *)b)[i];
        if (!(isnan(x) && isnan(y)) && memcmp(&x, &y, 4) != 0)
            return 0;
    }
    return 1;
}

/* Replay, then the interpreter on the same inputs; outputs compared. */
static void run(const graph *g, replay_plan *p, const graph_type *types, int exact)
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
    tg_status st = replay_run(s, in, nin, out, nout);
    if (st != TG_OK)
        check_named("replay_run", replay_session_error(s));
    for (int i = 0; st == TG_OK && i < nin; i++)
        if (graph_type_check(&types[i], NULL, 0) != TG_OK)
            die("replay_run", "accepted an input past the size cap");
    if (st == TG_OK && getenv("FUZZ_RUN_VERBOSE"))
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
    if (st == TG_OK && rs == TG_OK && exact) {
        for (int k = 0; k < nout; k++) {
            const graph_type *rt = eager_type(ref[k]);
            int same = rt->dtype == out[k].type.dtype && rt->ndim == out[k].type.ndim;
            for (int d = 0; same && d < rt->ndim; d++)
                same = rt->dim[d] == out[k].type.dim[d];
            if (!same)
                die("replay vs interpreter", "an output's type differs");
            if (!same_bits(rt, out[k].data, eager_peek(ref[k]))) {
                fprintf(stderr, "output %d (%s)\n", k, g->outputs[k].name);
                die("replay vs interpreter", "an output differs");
            }
        }
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
    if (size < 2)
        return 0;
    int fmt = data[0] & 3, level = data[0] >> 2 & 3, nsz = data[1] & 15;
    if (size < 2 + (size_t)nsz)
        return 0;
    const uint8_t *sz = data + 2, *file = data + 2 + nsz;
    size_t flen = size - 2 - (size_t)nsz;
    char err[1024] = "";
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
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    if (!p) {
        check_named("replay_compile", err);
        graph_free(g);
        return 0;
    }
    /* input types at the fuzzer's sizes */
    graph_type *types = malloc(sizeof *types * ((size_t)g->ninputs + 1));
    int ok = types != NULL && replay_workspace_size(p) <= FUZZ_MAX_BYTES;
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
            run(g, p, types, level == 0);
    }
    free(types);
    replay_plan_free(p);
    graph_free(g);
    return 0;
}
