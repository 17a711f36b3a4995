/*
 * fuzz_tgraph.c - libFuzzer target for the .tgraph loader (formats/tgraph.h).
 *
 * Two kinds of input, so the fuzzer reaches both layers:
 *   - anything not starting with 'S' is a file, fed to format_load_mem as
 *     is: magic, header, section table, checksums, zstd framing;
 *   - 'S' then up to eight (u32 little-endian length, bytes) records: the
 *     raw sections in id order (strings ... constants), packed into a
 *     valid container by format_pack (compressed, checksummed), so
 *     mutations land in the section decoders instead of the checksums.
 * Loading must never crash, leak, hang or read out of bounds; a refusal
 * must name the input ("fuzz: ...").  Whatever loads must save, load
 * back and save again to the very same bytes.  Not named test_*.c, so
 * ctest does not pick it up; scripts/fuzz.sh builds and runs it with seeds
 * from tests/corpus/tgraph (written by test_format_damage with
 * TG_FORMAT_CORPUS=dir).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tgraph.h"
#include "formats/tgraph_impl.h"

/* Splits an 'S' input into raw sections (pointing into data). */
static void split(const uint8_t *data, size_t size, format_raw_sections *s)
{
    size_t at = 1;
    memset(s, 0, sizeof *s);
    for (int i = 0; i < FORMAT_NSEC && size - at >= 4; i++) {
        size_t n = (size_t)format_get_le(data + at, 4);
        at += 4;
        if (n > size - at)
            n = size - at;
        s->p[i] = (uint8_t *)(uintptr_t)(data + at); /* only read */
        s->len[i] = n;
        at += n;
    }
}

/* save -> load -> save must reproduce the first save exactly. */
static void check_roundtrip(const graph *g)
{
    char err[512];
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (format_save_mem(g, NULL, &a, &na, err, sizeof err) != TG_OK) {
        fprintf(stderr, "a loaded graph does not save: %s\n", err);
        abort();
    }
    graph *h = format_load_mem(a, na, "resaved", err, sizeof err);
    if (!h) {
        fprintf(stderr, "a saved graph does not load: %s\n", err);
        abort();
    }
    if (format_save_mem(h, NULL, &b, &nb, err, sizeof err) != TG_OK || na != nb ||
        memcmp(a, b, na) != 0) {
        fprintf(stderr, "save -> load -> save differs\n");
        abort();
    }
    graph_free(h);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    graph *g;
    if (size && data[0] == 'S') {
        format_raw_sections s;
        void *buf = NULL;
        size_t len = 0;
        split(data, size, &s);
        if (format_pack(&s, 1, &buf, &len, err, sizeof err) != TG_OK)
            return 0; /* out of memory */
        g = format_load_mem(buf, len, "fuzz", err, sizeof err);
        free(buf);
    } else {
        g = format_load_mem(data, size, "fuzz", err, sizeof err);
    }
    if (!g) {
        if (strncmp(err, "fuzz: ", 6) != 0) {
            fprintf(stderr, "error without the file's name: %s\n", err);
            abort();
        }
        return 0;
    }
    check_roundtrip(g);
    graph_free(g);
    return 0;
}
