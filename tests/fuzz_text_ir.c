/*
 * fuzz_text_ir.c - libFuzzer target for the text IR parser (graph/text.h).
 *
 * Feeds arbitrary bytes to graph_parse (which must never crash, leak or
 * read past the length); whatever parses must also print, parse back and
 * print again to the same bytes, and write DOT.  Not named test_*.c, so
 * ctest does not pick it up.  Build and run from /work/main (the graph
 * module has no other dependencies than uthash and libm):
 *
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
 *       -fno-sanitize-recover=undefined -I. graph/[a-z]*.c tests/fuzz_text_ir.c \
 *       -lm -o /tmp/fuzz_text_ir
 *   /tmp/fuzz_text_ir -max_total_time=120 -max_len=4096 \
 *       -dict=tests/corpus/text_ir.dict /tmp/fuzz_corpus tests/corpus/text_ir
 *
 * (Copy the seeds into a scratch corpus directory first if new inputs
 * should not land in the repository's tests/corpus/text_ir.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/text.h"

/* print -> parse -> print must give the same bytes. */
static void check_roundtrip(const graph *g, const graph_print_opts *o)
{
    size_t n1 = 0, n2 = 0;
    char err[512];
    char *t1 = graph_print_str(g, o, &n1);
    if (!t1)
        return; /* out of memory */
    graph *h = graph_parse(t1, n1, err, sizeof err);
    if (!h) {
        fprintf(stderr, "printed text does not parse: %s\n%s", err, t1);
        abort();
    }
    char *t2 = graph_print_str(h, o, &n2);
    if (!t2 || n1 != n2 || memcmp(t1, t2, n1)) {
        fprintf(stderr, "round trip differs:\n%s\n----\n%s", t1, t2 ? t2 : "");
        abort();
    }
    free(t2);
    graph_free(h);
    free(t1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    graph *g = graph_parse((const char *)data, size, err, sizeof err);
    if (!g) {
        if (strncmp(err, "line ", 5) != 0) {
            fprintf(stderr, "error without a place: %s\n", err);
            abort();
        }
        return 0;
    }
    graph_print_opts o = GRAPH_PRINT_DEFAULTS;
    check_roundtrip(g, &o);
    o.inline_all = 1;
    o.comments = 0;
    check_roundtrip(g, &o);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (f) {
        graph_write_dot(g, f);
        fclose(f);
        free(buf);
    }
    graph_free(g);
    return 0;
}
