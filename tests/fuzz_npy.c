/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (formats/npy.h).
 *
 * Feeds arbitrary bytes to format_npy_load_mem, which must never crash,
 * leak or read past the length, and must fail with a message that names
 * the file.  The same bytes go through a file and format_npy_load (a
 * different code path: header first, then data), which must give the same
 * status and message.  Whatever loads must save and load back to the same
 * type and bytes.  Not named test_*.c, so ctest does not pick it up; run
 * it with scripts/fuzz.sh (seeds: tests/corpus/npy, dictionary
 * tests/corpus/npy.dict), or by hand from /work/main:
 *
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
 *       -fno-sanitize-recover=undefined -I. formats/npy.c \
 *       tests/fuzz_npy.c -o /tmp/fuzz_npy
 *   /tmp/fuzz_npy -max_total_time=120 -dict=tests/corpus/npy.dict \
 *       /tmp/npy_corpus tests/corpus/npy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/npy.h"

static char path[64];

static void fail(const char *what, const char *a, const char *b)
{
    fprintf(stderr, "fuzz_npy: %s\n  %s\n  %s\n", what, a, b);
    abort();
}

static int same_type(const graph_type *a, const graph_type *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dim[d] != b->dim[d])
            return 0;
    return 1;
}

/* Loads through a real file; same status and message as from memory. */
static void check_file(const uint8_t *data, size_t size, tg_status st, const char *err,
                       const graph_type *t, const void *d)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    size_t n = fwrite(data, 1, size, f);
    if (fclose(f) != 0 || n != size)
        return;
    graph_type t2;
    void *d2 = NULL;
    char err2[512] = "";
    tg_status st2 = format_npy_load(path, &t2, &d2, err2, sizeof err2);
    unlink(path); /* libFuzzer may end with _Exit: leave nothing behind */
    if (st2 != st || strcmp(err, err2) != 0)
        fail("file and memory loads differ", err, err2);
    if (st == TG_OK) {
        size_t nb = (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
        if (!same_type(t, &t2) || memcmp(d, d2, nb) != 0)
            fail("file and memory loads give different arrays", "", "");
    }
    free(d2);
}

/* A loaded array saves and loads back unchanged. */
static void check_round_trip(const graph_type *t, const void *d)
{
    void *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    if (format_npy_save_mem(t, d, &buf, &len, err, sizeof err) != TG_OK)
        fail("a loaded array does not save", err, "");
    graph_type t2;
    void *d2 = NULL;
    if (format_npy_load_mem(buf, len, "again.npy", &t2, &d2, err, sizeof err) != TG_OK)
        fail("a saved array does not load", err, "");
    size_t nb = (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
    if (!same_type(t, &t2) || memcmp(d, d2, nb) != 0)
        fail("round trip changed the array", "", "");
    free(d2);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_npy.%ld.npy", (long)getpid());
    graph_type t;
    void *d = NULL;
    char err[512] = "";
    tg_status st = format_npy_load_mem(size ? data : NULL, size, path, &t, &d, err,
                                       sizeof err);
    if (st != TG_OK) {
        if (d || strncmp(err, path, strlen(path)) != 0 || err[strlen(path)] != ':')
            fail("an error without the file's name (or with data)", err, "");
    } else {
        size_t nb = (size_t)graph_type_numel(&t) * graph_dtype_size(t.dtype);
        if (!d || ((uintptr_t)d & 63) || nb > size)
            fail("a bad array from a successful load", err, "");
        check_round_trip(&t, d);
    }
    check_file(data, size, st, err, &t, d);
    free(d);
    return 0;
}
