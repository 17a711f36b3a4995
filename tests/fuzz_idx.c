/*
 * fuzz_idx.c - libFuzzer target for the IDX reader (formats/idx.h),
 * plain and gzip.
 *
 * Feeds arbitrary bytes to format_idx_load_mem as f32, scaled f32 and i64,
 * and to format_idx_inspect_mem: none may crash, leak or allocate past
 * what the bytes hold (libFuzzer's -rss_limit_mb and ASan's allocation
 * limit catch a reader that believes a header), and each failure must name
 * the file.  They must agree: inspect succeeds exactly when the f32 load
 * does, with the same message otherwise; the i64 load succeeds exactly for
 * integer elements, with the same values as f32.  The same bytes through a
 * file and format_idx_load (read(2) in chunks rather than one buffer) give
 * the same status, message and values.  A file of u8 [n,rows,cols] is then
 * loaded as a dataset's images (labels 0..9 written beside it) and a batch
 * of its first and last images compared with the scaled load.  Not named
 * test_*.c, so ctest does not pick it up; run it with scripts/fuzz.sh
 * (seeds: tests/corpus/idx, dictionary tests/corpus/idx.dict).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/idx.h"

static char path[64], lpath[64];

static void fail(const char *what, const char *a, const char *b)
{
    fprintf(stderr, "fuzz_idx: %s\n  %s\n  %s\n", what, a, b);
    abort();
}

static int same_dims(const graph_type *a, const graph_type *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dim[d] != b->dim[d])
            return 0;
    return 1;
}

/* A failed load: no data, a message that starts with the name. */
static void check_error(tg_status st, const void *d, const char *err, const char *name)
{
    if (st != TG_OK && (d || strncmp(err, name, strlen(name)) != 0 || err[strlen(name)] != ':'))
        fail("an error without the file's name (or with data)", err, name);
}

static int write_file(const char *p, const uint8_t *data, size_t size)
{
    FILE *f = fopen(p, "wb");
    if (!f)
        return 0;
    size_t n = fwrite(data, 1, size, f);
    return fclose(f) == 0 && n == size;
}

/* The file written from the bytes loads as memory did. */
static void check_file(const uint8_t *data, size_t size, tg_status st, const char *err,
                       const graph_type *t, const void *d)
{
    graph_type t2;
    void *d2 = NULL;
    char err2[512] = "";
    tg_status st2 = format_idx_load(path, GRAPH_F32, 0, &t2, &d2, err2, sizeof err2);
    if (st2 != st || strcmp(err, err2) != 0)
        fail("file and memory loads differ", err, err2);
    if (st == TG_OK && (!same_dims(t, &t2) ||
                        memcmp(d, d2, (size_t)graph_type_numel(t) * sizeof(float)) != 0))
        fail("file and memory loads give different arrays", "", "");
    free(d2);
}

/* u8 [n,rows,cols]: the dataset's batch of images 0 and n-1 is the scaled load. */
static void check_dataset(const graph_type *t, const float *scaled)
{
    int64_t n = t->dim[0], px = t->dim[1] * t->dim[2];
    if (n < 1 || n > 4096 || px > 4096)
        return;
    uint8_t lab[8 + 4096] = {0, 0, 8, 1};
    for (int b = 0; b < 4; b++)
        lab[4 + b] = (uint8_t)(n >> (24 - 8 * b));
    for (int64_t i = 0; i < n; i++)
        lab[8 + i] = (uint8_t)(i % 10);
    if (!write_file(lpath, lab, 8 + (size_t)n))
        return;
    format_idx_dataset *ds = NULL;
    char err[512] = "";
    if (format_idx_dataset_load(path, lpath, 10, &ds, err, sizeof err) != TG_OK)
        fail("a u8 [n,rows,cols] file does not load as a dataset", err, "");
    int64_t idx[2] = {n - 1, 0}, y[2];
    float *x = malloc(2 * (size_t)(px ? px : 1) * sizeof *x);
    if (x) {
        if (format_idx_dataset_batch(ds, idx, 2, x, y, err, sizeof err) != TG_OK)
            fail("a batch of valid indices fails", err, "");
        if (y[0] != (n - 1) % 10 || y[1] != 0 ||
            memcmp(x, scaled + (size_t)(n - 1) * px, (size_t)px * sizeof *x) != 0 ||
            memcmp(x + px, scaled, (size_t)px * sizeof *x) != 0)
            fail("the batch differs from the scaled load", "", "");
        free(x);
    }
    format_idx_dataset_free(ds);
    unlink(lpath);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/fuzz_idx.%ld.idx", (long)getpid());
        snprintf(lpath, sizeof lpath, "/tmp/fuzz_idx.%ld.labels", (long)getpid());
    }
    const uint8_t *buf = size ? data : NULL;
    graph_type t;
    void *d = NULL;
    char err[512] = "";
    tg_status st = format_idx_load_mem(buf, size, path, GRAPH_F32, 0, &t, &d, err, sizeof err);
    check_error(st, d, err, path);

    format_idx_info info;
    char ierr[512] = "";
    tg_status ist = format_idx_inspect_mem(buf, size, path, &info, ierr, sizeof ierr);
    if (ist != st || strcmp(err, ierr) != 0)
        fail("inspect and load differ", err, ierr);
    if (st == TG_OK) {
        if (!d || ((uintptr_t)d & 63) || info.ndim != t.ndim || info.file_bytes != size)
            fail("a bad array from a successful load", err, "");
        for (int k = 0; k < t.ndim; k++)
            if (info.dim[k] != t.dim[k])
                fail("inspect's dims differ from the load's", "", "");
        /* never more than the bytes can hold */
        if (info.idx_bytes > (info.gzip ? (uint64_t)size * 1032 + 4096 : (uint64_t)size))
            fail("a load larger than its file can hold", "", "");
    }

    /* i64: integer elements only, the same values */
    graph_type tl;
    void *dl = NULL;
    char lerr[512] = "";
    tg_status lst = format_idx_load_mem(buf, size, path, GRAPH_I64, 0, &tl, &dl, lerr,
                                        sizeof lerr);
    check_error(lst, dl, lerr, path);
    int isint = st == TG_OK && info.type != FORMAT_IDX_F32 && info.type != FORMAT_IDX_F64;
    /* (a float file fails the conversion before its size is checked) */
    if ((lst == TG_OK) != isint ||
        (st != TG_OK && strcmp(err, lerr) != 0 && !strstr(lerr, "do not load as i64")))
        fail("i64 and f32 loads disagree", err, lerr);
    if (lst == TG_OK) {
        int64_t n = graph_type_numel(&tl);
        for (int64_t i = 0; i < n; i++)
            if ((float)((int64_t *)dl)[i] != ((float *)d)[i])
                fail("i64 and f32 values differ", "", "");
    }
    free(dl);

    /* scaled: u8 only, x / 255 */
    graph_type ts;
    void *ds = NULL;
    char serr[512] = "";
    tg_status sst = format_idx_load_mem(buf, size, path, GRAPH_F32, FORMAT_IDX_SCALE, &ts, &ds,
                                        serr, sizeof serr);
    check_error(sst, ds, serr, path);
    if ((sst == TG_OK) != (st == TG_OK && info.type == FORMAT_IDX_U8))
        fail("scaled and plain f32 loads disagree", err, serr);
    if (sst == TG_OK) {
        int64_t n = graph_type_numel(&ts);
        for (int64_t i = 0; i < n; i++)
            if (((float *)ds)[i] != ((float *)d)[i] / 255.0f)
                fail("a scaled value is not x / 255", "", "");
    }

    if (write_file(path, data, size)) {
        check_file(data, size, st, err, &t, d);
        if (sst == TG_OK && ts.ndim == 3)
            check_dataset(&ts, ds);
    }
    unlink(path); /* libFuzzer may end with _Exit: leave nothing behind */
    free(ds);
    free(d);
    return 0;
}
