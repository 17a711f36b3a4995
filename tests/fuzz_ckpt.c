/*
 * fuzz_ckpt.c - libFuzzer target for the state checkpoint reader
 * (formats/ckpt.h).  Arbitrary bytes go to format_ckpt_load_mem, which
 * must never crash, leak or read past the length, and must fail with a
 * message naming the file; the same bytes through a file and
 * format_ckpt_load must give the same status.  Whatever loads must save
 * and load back to the same entries.  Run by scripts/fuzz.sh (seeds:
 * tests/corpus/ckpt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/ckpt.h"

static void fail(const char *what, const char *a)
{
    fprintf(stderr, "fuzz_ckpt: %s: %s\n", what, a);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024], err2[1024], path[64];
    format_ckpt c, d;
    tg_status st = format_ckpt_load_mem(data, size, "f.tgstate", &c, err, sizeof err);
    if (st != TG_OK && strncmp(err, "f.tgstate", 9) != 0)
        fail("an error that does not name the file", err);
    snprintf(path, sizeof path, "/tmp/fuzz_ckpt_%d.tgstate", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
        tg_status st2 = format_ckpt_load(path, &d, err2, sizeof err2);
        if ((st2 == TG_OK) != (st == TG_OK))
            fail("memory and file disagree", st == TG_OK ? err2 : err);
        if (st2 == TG_OK)
            format_ckpt_free(&d);
        unlink(path);
    }
    if (st != TG_OK)
        return 0;
    void *buf;
    size_t len;
    if (format_ckpt_save_mem(c.graph_name, c.e, c.n, &buf, &len, err, sizeof err) != TG_OK)
        fail("a loaded checkpoint does not save", err);
    if (format_ckpt_load_mem(buf, len, "g", &d, err, sizeof err) != TG_OK)
        fail("a saved checkpoint does not load", err);
    if (d.n != c.n || strcmp(d.graph_name, c.graph_name) != 0)
        fail("the round trip changed the entries", c.graph_name);
    for (int32_t i = 0; i < c.n; i++) {
        size_t nb = (size_t)graph_type_bytes(&c.e[i].type);
        if (strcmp(c.e[i].name, d.e[i].name) || c.e[i].type.dtype != d.e[i].type.dtype ||
            c.e[i].type.ndim != d.e[i].type.ndim || (nb && memcmp(c.e[i].data, d.e[i].data, nb)))
            fail("the round trip changed an entry", c.e[i].name);
    }
    free(buf);
    format_ckpt_free(&c);
    format_ckpt_free(&d);
    return 0;
}
