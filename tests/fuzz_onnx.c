/*
 * fuzz_onnx.c - libFuzzer target for ONNX import (formats/onnx.h).
 *
 * The input is fed to format_onnx_load_mem as a model file: protobuf-c
 * checks the wire format, the importer everything else (versions, names,
 * tensor sizes against the bytes present, attributes, shapes).  Loading
 * must never crash, leak, hang, read out of bounds or allocate by a size
 * the file merely declares; a refusal must name the input ("fuzz: ...");
 * whatever loads has passed graph_verify and must verify again.  Odd-length
 * inputs load with initializers as params and dim_param dims at size 3, so
 * both paths are reached.  Mutations are mostly structural
 * (fuzz_onnx_mutate.h: attributes, dims, opsets, op types of the decoded
 * model), so most mutants parse and reach the converters.  Not named
 * test_*.c, so ctest does not pick it up; scripts/fuzz.sh builds and runs
 * it with seeds copied from the ONNX node tests (libonnx-testdata).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/onnx.h"
#include "fuzz_onnx_mutate.h"

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    return fuzz_onnx_mutate(data, size, max_size, seed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    format_onnx_load_opts opts = {(int)(size & 1), size & 1 ? 3 : 0};
    graph *g = format_onnx_load_mem(data, size, "fuzz", &opts, err, sizeof err);
    if (!g) {
        if (strncmp(err, "fuzz: ", 6) != 0) {
            fprintf(stderr, "error without the file's name: %s\n", err);
            abort();
        }
        return 0;
    }
    if (graph_verify(g, 0) != TG_OK) {
        fprintf(stderr, "a loaded graph does not verify: %s\n", graph_error(g));
        abort();
    }
    graph_free(g);
    return 0;
}
