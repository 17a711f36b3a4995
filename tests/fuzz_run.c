/*
 * fuzz_run.c - libFuzzer target for what runs after a successful load
 * (issue 16): bytes -> graph (text IR, .tgraph or ONNX) -> optimize ->
 * replay_compile -> replay_run on small inputs whose dims, dynamic ones
 * included, come from the fuzzer -> the reference interpreter on the same
 * inputs.
 *
 * Input layout (two header bytes: format and optimizer level, then the
 * number of dynamic sizes), loading, input types and data, and the run of
 * both sides: tests/fuzz_graph.h, shared with fuzz_ocl.c.
 *
 * Must never crash, leak, hang, write out of bounds or fail silently:
 * every refusal names the input, node or file; when replay and the
 * interpreter both succeed on an unoptimized graph, their outputs must be
 * the same bits (NaN matching NaN), since both run the same kernels
 * (unless replay_compile re-planned a graph in another target's blocked
 * layout: other kernels).
 * Graphs whose values at these sizes would need more than FUZZ_MAX_BYTES
 * (worked out here by graph_infer, node by node) are not run: a huge
 * legitimate allocation is not a finding.  An ONNX input (format 2) is
 * mutated mostly by its structure (fuzz_onnx_mutate.h), behind the same
 * header; the header and other formats by bytes.  Not named test_*.c, so ctest
 * does not pick it up; scripts/fuzz.sh builds and runs it with seeds from
 * tests/corpus/run (hand-written: byte 0, the sizes, then text IR).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_graph.h"
#include "fuzz_onnx_mutate.h"
#include "graph/graph_impl.h"

#define FUZZ_MAX_BYTES (64 << 20)
#define FUZZ_MAX_INPUT (1 << 20) /* elements of one input */

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
    fuzz_pair r;
    if (fuzz_pair_run(&r, g, p, types) && exact) {
        for (int k = 0; k < r.nout; k++) {
            fuzz_same_type("replay vs interpreter", &r, k);
            if (!same_bits(eager_type(r.ref[k]), r.out[k].data, eager_peek(r.ref[k]))) {
                fprintf(stderr, "output %d (%s)\n", k, g->outputs[k].name);
                die("replay vs interpreter", "an output differs");
            }
        }
    }
    fuzz_pair_free(&r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_budget_init(*argc, *argv); /* fuzz_graph.h */
    return 0;
}

/* The model behind the header mutated as ONNX (seven times in eight for
 * format 2: the header is kept); the whole input as bytes otherwise. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    fuzz_input fi;
    if ((seed & 7) && fuzz_split(data, size, 2, &fi) && (fi.flags & 3) == 2) {
        size_t pre = size - fi.flen;
        return pre + fuzz_onnx_mutate(data + pre, fi.flen, max_size - pre, seed >> 3);
    }
    return LLVMFuzzerMutate(data, size, max_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input fi;
    if (fuzz_over_budget() || !fuzz_split(data, size, 2, &fi))
        return 0;
    char err[1024] = "";
    graph *g = fuzz_load(&fi, err, sizeof err);
    if (!g)
        return 0;
    if (!fuzz_optimize(g, &fi, err, sizeof err)) {
        graph_free(g);
        return 0;
    }
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    if (!p) {
        check_named("replay_compile", err);
        graph_free(g);
        return 0;
    }
    /* input types at the fuzzer's sizes */
    graph_type *types = malloc(sizeof *types * ((size_t)g->ninputs + 1));
    if (types != NULL && replay_workspace_size(p) <= FUZZ_MAX_BYTES &&
        fuzz_types(g, &fi, types, FUZZ_MAX_INPUT) &&
        fuzz_bytes(g, types, FUZZ_MAX_BYTES) <= FUZZ_MAX_BYTES)
        /* bit for bit only where the plan runs the graph as given: a
         * graph in another target's blocked layout is re-planned */
        run(g, p, types, fi.level == 0 && strncmp(replay_plan_layout(p), "re-planned", 10) != 0);
    free(types);
    replay_plan_free(p);
    graph_free(g);
    return 0;
}
