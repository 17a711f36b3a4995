/*
 * test_idx.c - IDX reading, plain and gzip, and the images + labels
 * dataset (formats/idx.h).
 *
 * The references are written here: IDX files byte by byte from LeCun's
 * description (big-endian dims and elements), gzip files by a naive
 * writer of stored deflate blocks with a bitwise CRC-32 (RFC 1951/1952),
 * and by zlib's deflate for real compressed blocks; the expected values
 * are computed from the elements in the test.  Then every conversion,
 * memory, files and pipes alike, every damage with its message (header,
 * sizes, truncation, gzip checksums and blocks, a bomb that must be
 * refused before it is allocated), the dataset's checks and batches, and,
 * where Debian's dataset-fashion-mnist is installed, the real files:
 * counts, classes, and every byte against `gzip -dc`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "formats/idx.h"
#include "pipe_util.h"

static char tmpdir[64];

/* ---- the references: IDX and gzip written by hand ---- */

static size_t put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return 4;
}

/* An IDX file: 00 00 type ndim, the dims, then n data bytes (already
 * big-endian).  Returns its length. */
static size_t idx_file(uint8_t *out, int type, int ndim, const uint32_t *dims,
                       const void *data, size_t n)
{
    size_t k = 0;
    out[k++] = 0, out[k++] = 0, out[k++] = (uint8_t)type, out[k++] = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++)
        k += put_be32(out + k, dims[d]);
    if (n)
        memcpy(out + k, data, n);
    return k + n;
}

/* CRC-32 of gzip (reflected 0xEDB88320), bit by bit. */
static uint32_t crc32_naive(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

/* One gzip member of stored deflate blocks (at most blk bytes each)
 * holding in[0..n).  Returns its length. */
static size_t gz_stored(uint8_t *out, const uint8_t *in, size_t n, size_t blk)
{
    static const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
    size_t k = 0;
    memcpy(out, head, 10);
    k = 10;
    size_t i = 0;
    do {
        size_t m = n - i < blk ? n - i : blk;
        out[k++] = i + m == n; /* BFINAL, BTYPE 00 */
        out[k++] = (uint8_t)m, out[k++] = (uint8_t)(m >> 8);
        out[k++] = (uint8_t)~m, out[k++] = (uint8_t)(~m >> 8);
        memcpy(out + k, in + i, m);
        k += m;
        i += m;
    } while (i < n);
    uint32_t c = crc32_naive(in, n), len = (uint32_t)n;
    for (int b = 0; b < 4; b++)
        out[k++] = (uint8_t)(c >> (8 * b));
    for (int b = 0; b < 4; b++)
        out[k++] = (uint8_t)(len >> (8 * b));
    return k;
}

/* in[0..n) gzip-compressed by zlib's deflate at level 9 into out (cap
 * bytes); its length. */
static size_t gz_deflate(uint8_t *out, size_t cap, const uint8_t *in, size_t n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return r == Z_STREAM_END ? len : 0;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "writing %s", path);
}

/* ---- loading: expect values, or an error ---- */

/* Loads buf[0..len) from memory, from a file and from a pipe as dt with
 * flags; each must give type dims and the n bytes of want. */
static void expect_load(const uint8_t *buf, size_t len, graph_dtype dt, unsigned flags,
                        int ndim, const int64_t *dims, const void *want, size_t n, int line)
{
    char path[128];
    snprintf(path, sizeof path, "%s/t.idx", tmpdir);
    write_file(path, buf, len);
    for (int how = 0; how < 3; how++) {
        graph_type t;
        void *data = NULL;
        char err[512] = "";
        test_pipe p;
        tg_status st;
        if (how == 0) {
            st = format_idx_load_mem(buf, len, "t.idx", dt, flags, &t, &data, err, sizeof err);
        } else if (how == 1) {
            st = format_idx_load(path, dt, flags, &t, &data, err, sizeof err);
        } else {
            if (test_pipe_open(&p, buf, len, 0) != 0) {
                check_report(0, __FILE__, line, "no pipe");
                continue;
            }
            st = format_idx_load(p.path, dt, flags, &t, &data, err, sizeof err);
            test_pipe_close(&p);
        }
        static const char *hows[] = {"memory", "file", "pipe"};
        check_report(st == TG_OK, __FILE__, line, "loads from %s: %s", hows[how], err);
        if (st != TG_OK)
            continue;
        int same = t.dtype == dt && t.ndim == ndim;
        for (int d = 0; same && d < ndim; d++)
            same = t.dim[d] == dims[d];
        check_report(same, __FILE__, line, "%s: type", hows[how]);
        check_report(data && ((uintptr_t)data & 63) == 0, __FILE__, line, "aligned data");
        check_report(!n || memcmp(data, want, n) == 0, __FILE__, line, "%s: data", hows[how]);
        free(data);
    }
    format_idx_info info;
    char err[512] = "";
    tg_status st = format_idx_inspect(path, &info, err, sizeof err);
    check_report(st == TG_OK && info.ndim == ndim && info.file_bytes == len, __FILE__, line,
                 "inspect: %s", err);
    unlink(path);
}

/* Memory, file and pipe loads of buf fail with st and a message that
 * starts with the name and contains want (so does inspect, unless the
 * error is the conversion's). */
static void expect_fail(const uint8_t *buf, size_t len, graph_dtype dt, unsigned flags,
                        tg_status want_st, const char *want, int line)
{
    char path[128];
    snprintf(path, sizeof path, "%s/bad.idx", tmpdir);
    write_file(path, buf, len);
    for (int how = 0; how < 3; how++) {
        graph_type t;
        void *data = (void *)1;
        char err[512] = "";
        const char *name = how == 0 ? "bad.idx" : path;
        test_pipe p;
        tg_status st;
        if (how == 0) {
            st = format_idx_load_mem(buf, len, name, dt, flags, &t, &data, err, sizeof err);
        } else if (how == 1) {
            st = format_idx_load(path, dt, flags, &t, &data, err, sizeof err);
        } else {
            if (test_pipe_open(&p, buf, len, 0) != 0)
                continue;
            name = p.path;
            st = format_idx_load(p.path, dt, flags, &t, &data, err, sizeof err);
            test_pipe_close(&p);
            /* A pipe's size is not known up front: the plain file's size
             * errors come at its end instead ("truncated" either way). */
            if (strstr(want, "the file has") || strstr(want, "unexpected bytes") ||
                strstr(want, "can hold"))
                continue;
        }
        check_report(st == want_st && data == NULL, __FILE__, line,
                     "how %d: status %d (want %d): %s", how, (int)st, (int)want_st, err);
        check_report(strncmp(err, name, strlen(name)) == 0 && err[strlen(name)] == ':' &&
                         strstr(err, want),
                     __FILE__, line, "how %d: \"%s\" contains \"%s\"", how, err, want);
        if (st == TG_OK)
            free(data);
    }
    unlink(path);
}

#define EXPECT_LOAD(buf, len, dt, flags, ndim, dims, want, n) \
    expect_load(buf, len, dt, flags, ndim, dims, want, n, __LINE__)
#define EXPECT_FAIL(buf, len, dt, flags, st, msg) \
    expect_fail(buf, len, dt, flags, st, msg, __LINE__)

/* ---- conversions ---- */

/* u8 [2,3] as f32, scaled f32, i64 and i32; plain, stored gzip, deflated gzip. */
static void test_u8(void)
{
    static const uint8_t px[6] = {0, 1, 127, 128, 254, 255};
    uint32_t dims[2] = {2, 3};
    int64_t want_dims[2] = {2, 3};
    uint8_t raw[64], gz[256], gzd[256];
    size_t n = idx_file(raw, 0x08, 2, dims, px, 6);
    CHECK(n == 4 + 8 + 6);
    size_t ng = gz_stored(gz, raw, n, 65535), nd = gz_deflate(gzd, sizeof gzd, raw, n);
    CHECK(nd > 0);
    float f[6], s[6];
    int64_t l[6];
    int32_t w[6];
    for (int i = 0; i < 6; i++) {
        f[i] = px[i];
        s[i] = (float)px[i] / 255.0f; /* what ToTensor gives */
        l[i] = px[i];
        w[i] = px[i];
    }
    CHECK(s[0] == 0.0f && s[5] == 1.0f);
    const uint8_t *bufs[3] = {raw, gz, gzd};
    size_t lens[3] = {n, ng, nd};
    for (int b = 0; b < 3; b++) {
        EXPECT_LOAD(bufs[b], lens[b], GRAPH_F32, 0, 2, want_dims, f, sizeof f);
        EXPECT_LOAD(bufs[b], lens[b], GRAPH_F32, FORMAT_IDX_SCALE, 2, want_dims, s, sizeof s);
        EXPECT_LOAD(bufs[b], lens[b], GRAPH_I64, 0, 2, want_dims, l, sizeof l);
        EXPECT_LOAD(bufs[b], lens[b], GRAPH_I32, 0, 2, want_dims, w, sizeof w);
    }
    /* inspect says what the file holds */
    format_idx_info info;
    char err[256] = "";
    CHECK(format_idx_inspect_mem(gzd, nd, "x.gz", &info, err, sizeof err) == TG_OK);
    CHECK(info.type == FORMAT_IDX_U8 && info.ndim == 2 && info.dim[0] == 2 &&
          info.dim[1] == 3 && info.gzip == 1 && info.file_bytes == nd &&
          info.idx_bytes == n);
    CHECK(format_idx_inspect_mem(raw, n, "x", &info, err, sizeof err) == TG_OK &&
          info.gzip == 0 && info.file_bytes == n && info.idx_bytes == n);
    CHECK(strcmp(format_idx_type_name(FORMAT_IDX_U8), "u8") == 0 &&
          strcmp(format_idx_type_name(FORMAT_IDX_F64), "f64") == 0 &&
          strcmp(format_idx_type_name((format_idx_type)7), "?") == 0);
}

/* The other element types, big-endian, with signs and extremes. */
static void test_types(void)
{
    uint8_t raw[256], data[64];
    int64_t d4[1] = {4}, d2[1] = {2};
    uint32_t u4[1] = {4}, u2[1] = {2};
    /* i8 */
    static const uint8_t i8[4] = {0x80, 0xff, 0x00, 0x7f};
    float fi8[4] = {-128, -1, 0, 127};
    int64_t li8[4] = {-128, -1, 0, 127};
    size_t n = idx_file(raw, 0x09, 1, u4, i8, 4);
    EXPECT_LOAD(raw, n, GRAPH_F32, 0, 1, d4, fi8, sizeof fi8);
    EXPECT_LOAD(raw, n, GRAPH_I64, 0, 1, d4, li8, sizeof li8);
    /* i16 */
    static const uint8_t i16[8] = {0x80, 0x00, 0xff, 0xfe, 0x01, 0x02, 0x7f, 0xff};
    int32_t wi16[4] = {-32768, -2, 258, 32767};
    n = idx_file(raw, 0x0B, 1, u4, i16, 8);
    EXPECT_LOAD(raw, n, GRAPH_I32, 0, 1, d4, wi16, sizeof wi16);
    /* i32: the extremes, and 2^24 + 1, which f32 rounds */
    int32_t vi32[4] = {INT32_MIN, -7, 16777217, INT32_MAX};
    for (int i = 0; i < 4; i++)
        put_be32(data + 4 * i, (uint32_t)vi32[i]);
    int64_t li32[4] = {INT32_MIN, -7, 16777217, INT32_MAX};
    float fi32[4] = {(float)INT32_MIN, -7.0f, 16777216.0f, 2147483648.0f};
    n = idx_file(raw, 0x0C, 1, u4, data, 16);
    EXPECT_LOAD(raw, n, GRAPH_I64, 0, 1, d4, li32, sizeof li32);
    EXPECT_LOAD(raw, n, GRAPH_I32, 0, 1, d4, vi32, sizeof vi32);
    EXPECT_LOAD(raw, n, GRAPH_F32, 0, 1, d4, fi32, sizeof fi32);
    /* f32: bits as they are (a NaN's payload, -0, the smallest subnormal) */
    uint32_t bits[4] = {0x3fc00000u /* 1.5 */, 0x80000000u, 0x00000001u,
                        0x7f800123u /* a signaling NaN, not quieted */};
    for (int i = 0; i < 4; i++)
        put_be32(data + 4 * i, bits[i]);
    n = idx_file(raw, 0x0D, 1, u4, data, 16);
    EXPECT_LOAD(raw, n, GRAPH_F32, 0, 1, d4, bits, sizeof bits);
    /* f64, rounded to nearest f32: 0.1 and 1e300 (inf) */
    double dv[2] = {0.1, -1e300};
    for (int i = 0; i < 2; i++) {
        uint64_t u;
        memcpy(&u, &dv[i], 8);
        put_be32(data + 8 * i, (uint32_t)(u >> 32));
        put_be32(data + 8 * i + 4, (uint32_t)u);
    }
    volatile double big = -1e300;
    float fd[2] = {0.1f, (float)big}; /* -inf: round to nearest overflows */
    n = idx_file(raw, 0x0E, 1, u2, data, 16);
    EXPECT_LOAD(raw, n, GRAPH_F32, 0, 1, d2, fd, sizeof fd);
    /* zero elements, 8 dims, a 0 dim next to the largest */
    uint32_t z[3] = {0, 5, 0xffffffffu};
    int64_t zd[3] = {0, 5, 0xffffffffll};
    n = idx_file(raw, 0x08, 3, z, NULL, 0);
    EXPECT_LOAD(raw, n, GRAPH_F32, 0, 3, zd, NULL, 0);
    uint32_t e8[8] = {1, 1, 1, 1, 1, 1, 2, 2};
    int64_t e8d[8] = {1, 1, 1, 1, 1, 1, 2, 2};
    static const uint8_t four[4] = {1, 2, 3, 4};
    int64_t l4[4] = {1, 2, 3, 4};
    n = idx_file(raw, 0x08, 8, e8, four, 4);
    EXPECT_LOAD(raw, n, GRAPH_I64, 0, 8, e8d, l4, sizeof l4);
}

/* A larger array over many chunks and gzip blocks: each element's value
 * from its index; gzip members concatenated (the header in the first). */
static void test_large(void)
{
    enum { R = 300, C = 1000 }; /* 1.2 MB of i32: past the first growth of the output */
    size_t nb = (size_t)R * C * 4;
    uint8_t *data = malloc(nb), *raw = malloc(nb + 64), *gz = malloc(nb + nb / 8 + 4096);
    int32_t *want = malloc((size_t)R * C * 4);
    if (!data || !raw || !gz || !want) {
        CHECK(!"out of memory");
        goto out;
    }
    for (size_t i = 0; i < (size_t)R * C; i++) {
        want[i] = (int32_t)((i % 977) * 4099u) - 2000000; /* signs; deflate shrinks it */
        put_be32(data + 4 * i, (uint32_t)want[i]);
    }
    uint32_t dims[2] = {R, C};
    int64_t wd[2] = {R, C};
    size_t n = idx_file(raw, 0x0C, 2, dims, data, nb);
    size_t ng = gz_stored(gz, raw, 12, 65535); /* member 1: the header */
    ng += gz_stored(gz + ng, raw + 12, 5, 65535);
    ng += gz_stored(gz + ng, raw + 17, 0, 65535); /* an empty member */
    ng += gz_stored(gz + ng, raw + 17, n - 17, 4000);
    EXPECT_LOAD(raw, n, GRAPH_I32, 0, 2, wd, want, nb);
    EXPECT_LOAD(gz, ng, GRAPH_I32, 0, 2, wd, want, nb);
    size_t nd = gz_deflate(gz, nb + nb / 8 + 4096, raw, n);
    CHECK(nd > 0 && nd < n);
    EXPECT_LOAD(gz, nd, GRAPH_I32, 0, 2, wd, want, nb);
out:
    free(data);
    free(raw);
    free(gz);
    free(want);
}

/* ---- damage ---- */

static void test_damage(void)
{
    uint8_t raw[4096], gz[8192], bad[8192];
    uint8_t px[1000];
    for (int i = 0; i < 1000; i++)
        px[i] = (uint8_t)(i * 7);
    uint32_t d10[1] = {10}, d1000[1] = {1000};
    size_t n = idx_file(raw, 0x08, 1, d10, px, 10);

    /* header */
    EXPECT_FAIL(raw, 0, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 0: 0 bytes, too short for an "
                "IDX file");
    EXPECT_FAIL(raw, 3, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 3: 3 bytes, too short");
    memcpy(bad, raw, n);
    bad[0] = 1;
    EXPECT_FAIL(bad, n, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 0: not an IDX file (bad magic "
                "01 00");
    EXPECT_FAIL((const uint8_t *)"\x93NUMPY", 6, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 0: not "
                "an IDX file (bad magic 93 4e");
    memcpy(bad, raw, n);
    bad[2] = 0x0A;
    EXPECT_FAIL(bad, n, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 2: unknown IDX element type "
                "0x0a");
    bad[2] = 0x08, bad[3] = 0;
    EXPECT_FAIL(bad, n, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 3: 0 dims (an IDX array has "
                "at least 1)");
    bad[3] = 9;
    EXPECT_FAIL(bad, n, GRAPH_F32, 0, TG_ERR_UNSUPPORTED, "at byte 3: 9 dims, more than the 8 "
                "tracegraph holds");
    bad[3] = 255;
    EXPECT_FAIL(bad, n, GRAPH_F32, 0, TG_ERR_UNSUPPORTED, "at byte 3: 255 dims");
    EXPECT_FAIL(raw, 6, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 6: the file ends inside the "
                "dims (1 dims take 4 bytes)");
    uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 2};
    size_t nh = idx_file(bad, 0x08, 3, huge, NULL, 0);
    EXPECT_FAIL(bad, nh, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 4: dims [4294967295,4294967295,"
                "2] are too large (more than 2^40 elements");
    /* sizes: short data, trailing bytes (plain files know their size) */
    size_t nt = idx_file(bad, 0x08, 1, d1000, px, 10);
    EXPECT_FAIL(bad, nt, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 8: the data is truncated: "
                "[1000] of u8 needs 1000 bytes, the file has 10");
    memcpy(bad, raw, n);
    bad[n] = 1, bad[n + 1] = 2;
    EXPECT_FAIL(bad, n + 2, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 18: 2 unexpected bytes after "
                "the data ([10] of u8 is 10 bytes)");
    /* the same from a pipe, found at the end */
    test_pipe p;
    for (int trail = 0; trail < 2; trail++) {
        if (test_pipe_open(&p, trail ? bad : raw, trail ? n + 2 : n - 3, 0) != 0)
            continue;
        graph_type t;
        void *data = (void *)1;
        char err[512] = "";
        tg_status st = format_idx_load(p.path, GRAPH_F32, 0, &t, &data, err, sizeof err);
        test_pipe_close(&p);
        CHECK_MSG(st == TG_ERR_FORMAT && !data &&
                      strstr(err, trail ? ": at byte 18: unexpected bytes after the data "
                                          "([10] of u8 is 10 bytes)"
                                        : ": at byte 15: the data is truncated: [10] of u8 "
                                          "needs 10 bytes, the file has 7"),
                  "pipe: %s", err);
    }
    /* conversions refused */
    uint32_t d2[1] = {2};
    static const uint8_t f2[8] = {0x3f, 0x80, 0, 0, 0x40, 0, 0, 0};
    size_t nf = idx_file(bad, 0x0D, 1, d2, f2, 8);
    EXPECT_FAIL(bad, nf, GRAPH_I64, 0, TG_ERR_UNSUPPORTED, "at byte 2: elements of type f32 do "
                "not load as i64");
    EXPECT_FAIL(bad, nf, GRAPH_F32, FORMAT_IDX_SCALE, TG_ERR_UNSUPPORTED, "at byte 2: elements "
                "of type f32, where u8 is needed (FORMAT_IDX_SCALE");
    EXPECT_FAIL(raw, n, GRAPH_I64, FORMAT_IDX_SCALE, TG_ERR_ARG, "FORMAT_IDX_SCALE makes f32, "
                "not i64");
    EXPECT_FAIL(raw, n, GRAPH_BOOL, 0, TG_ERR_ARG, "an IDX file loads as f32, i64 or i32, "
                "not bool");
    EXPECT_FAIL(raw, n, GRAPH_F32, 4, TG_ERR_ARG, "unknown flags 0x4");

    /* gzip: the stream's own damage, at its file byte */
    size_t ng = gz_stored(gz, raw, n, 65535); /* 10 + 5 + 18 + 8 */
    CHECK(ng == 41);
    EXPECT_FAIL(gz, ng - 1, GRAPH_F32, 0, TG_ERR_FORMAT, "at file byte 40: the gzip stream is "
                "truncated (it ends inside a member, after 18 decompressed bytes)");
    EXPECT_FAIL(gz, 20, GRAPH_F32, 0, TG_ERR_FORMAT, "at file byte 20: the gzip stream is "
                "truncated (it ends inside a member, after 5 decompressed bytes)");
    memcpy(bad, gz, ng);
    bad[ng - 8] ^= 1; /* CRC-32 */
    EXPECT_FAIL(bad, ng, GRAPH_F32, 0, TG_ERR_FORMAT, "at file byte 37: gzip error: incorrect "
                "data check");
    memcpy(bad, gz, ng);
    bad[ng - 4] ^= 1; /* ISIZE */
    EXPECT_FAIL(bad, ng, GRAPH_F32, 0, TG_ERR_FORMAT, "at file byte 41: gzip error: incorrect "
                "length check");
    memcpy(bad, gz, ng);
    bad[10] = 0x07; /* BFINAL, BTYPE 11 */
    EXPECT_FAIL(bad, ng, GRAPH_F32, 0, TG_ERR_FORMAT, "at file byte 11: gzip error: invalid "
                "block type");
    memcpy(bad, gz, ng);
    bad[13] ^= 0xff; /* NLEN no longer ~LEN */
    EXPECT_FAIL(bad, ng, GRAPH_F32, 0, TG_ERR_FORMAT, "gzip error: invalid stored block "
                "lengths");
    memcpy(bad, gz, ng);
    bad[2] = 7; /* compression method */
    EXPECT_FAIL(bad, ng, GRAPH_F32, 0, TG_ERR_FORMAT, "gzip error: unknown compression method");
    memcpy(bad, gz, ng);
    memcpy(bad + ng, "junk", 4); /* after the member: not another member */
    EXPECT_FAIL(bad, ng + 4, GRAPH_F32, 0, TG_ERR_FORMAT, "gzip error: incorrect header check");
    EXPECT_FAIL(gz, 1, GRAPH_F32, 0, TG_ERR_FORMAT, "at byte 0: not an IDX file (bad magic "
                "1f: ");
    /* gzip: the IDX inside it damaged, at its decompressed byte */
    size_t nbad = gz_stored(bad, raw, n - 3, 65535);
    EXPECT_FAIL(bad, nbad, GRAPH_F32, 0, TG_ERR_FORMAT, "at decompressed byte 15: the data is "
                "truncated: [10] of u8 needs 10 bytes, the gzip stream has 7");
    uint8_t more[32];
    memcpy(more, raw, n);
    more[n] = 9;
    nbad = gz_stored(bad, more, n + 1, 65535);
    EXPECT_FAIL(bad, nbad, GRAPH_F32, 0, TG_ERR_FORMAT, "at decompressed byte 18: unexpected "
                "bytes after the data");
    memcpy(more, raw, n);
    more[2] = 0x01;
    nbad = gz_stored(bad, more, n, 65535);
    EXPECT_FAIL(bad, nbad, GRAPH_F32, 0, TG_ERR_FORMAT, "at decompressed byte 2: unknown IDX "
                "element type 0x01");
    /* a second member whose data is damaged */
    nbad = gz_stored(bad, raw, 8, 65535);
    size_t m2 = gz_stored(bad + nbad, raw + 8, n - 8, 65535);
    bad[nbad + m2 - 5] ^= 0x10;
    EXPECT_FAIL(bad, nbad + m2, GRAPH_F32, 0, TG_ERR_FORMAT, "gzip error: incorrect data "
                "check");
}

/*
 * Bombs: a small gzip file whose header declares more than it can hold
 * is refused before anything is allocated; from a pipe (size unknown) the
 * output grows only as bytes arrive, so a 2^40-element claim with a
 * short stream ends as "truncated", not as an allocation of 8 TiB (which
 * fails as TG_ERR_NOMEM here and stops the test under ASan).
 */
static void test_bombs(void)
{
    uint8_t raw[2048], gz[4096];
    uint32_t dims[2] = {1u << 20, 1u << 20};
    memset(raw, 0, sizeof raw);
    size_t n = idx_file(raw, 0x08, 2, dims, NULL, 0) + 1000;
    size_t ng = gz_deflate(gz, sizeof gz, raw, n);
    CHECK(ng > 0 && ng < 100);
    char msg[200];
    snprintf(msg, sizeof msg, "at decompressed byte 4: dims [1048576,1048576] of u8 need "
             "1099511627788 bytes, more than %zu bytes of gzip data can hold (deflate expands "
             "at most 1032:1)", ng);
    EXPECT_FAIL(gz, ng, GRAPH_I64, 0, TG_ERR_FORMAT, msg);
    test_pipe p;
    if (test_pipe_open(&p, gz, ng, 0) == 0) {
        graph_type t;
        void *data = (void *)1;
        char err[512] = "";
        tg_status st = format_idx_load(p.path, GRAPH_I64, 0, &t, &data, err, sizeof err);
        test_pipe_close(&p);
        CHECK_MSG(st == TG_ERR_FORMAT && !data &&
                      strstr(err, "at decompressed byte 1012: the data is truncated: "
                                  "[1048576,1048576] of u8 needs 1099511627776 bytes, the gzip "
                                  "stream has 1000"),
                  "%s", err);
    }
    /* gzip of a real 1032:1 ratio (zeros) passes the check */
    enum { Z = 1 << 20 };
    uint8_t *zeros = calloc(Z + 16, 1), *zgz = malloc(Z / 100);
    if (zeros && zgz) {
        uint32_t zd[1] = {Z};
        int64_t zw[1] = {Z};
        size_t zn = idx_file(zeros, 0x08, 1, zd, NULL, 0) + Z; /* the data: calloc's zeros */
        size_t zg = gz_deflate(zgz, Z / 100, zeros, zn);
        CHECK_MSG(zg > 0 && zg * 900 < zn, "%zu bytes of gzip for %zu", zg, zn);
        EXPECT_LOAD(zgz, zg, GRAPH_F32, FORMAT_IDX_SCALE, 1, zw, NULL, 0);
    }
    free(zeros);
    free(zgz);
    /* a gzip stream from a pipe that sends no header: stopped after 1 MiB */
    size_t big = (1u << 20) + 70000;
    uint8_t *junk = malloc(big), *jgz = malloc(big + 1024);
    if (junk && jgz) {
        /* stored blocks of zero length only: no output at all */
        static const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
        memcpy(jgz, head, 10);
        size_t k = 10;
        while (k + 5 <= big) {
            memcpy(jgz + k, "\x00\x00\x00\xff\xff", 5);
            k += 5;
        }
        if (test_pipe_open(&p, jgz, k, 0) == 0) {
            graph_type t;
            void *data = (void *)1;
            char err[512] = "";
            tg_status st = format_idx_load(p.path, GRAPH_F32, 0, &t, &data, err, sizeof err);
            test_pipe_close(&p);
            CHECK_MSG(st == TG_ERR_FORMAT && !data &&
                          strstr(err, "at file byte 1048576: more gzip data than an IDX file "
                                      "of this header can take"),
                      "%s", err);
        }
    }
    free(junk);
    free(jgz);
}

/* Files: missing, a directory, NULL arguments. */
static void test_files(void)
{
    graph_type t;
    void *data = (void *)1;
    char err[512] = "", path[128];
    snprintf(path, sizeof path, "%s/missing.idx", tmpdir);
    CHECK(format_idx_load(path, GRAPH_F32, 0, &t, &data, err, sizeof err) == TG_ERR_IO &&
          !data && strstr(err, "missing.idx: cannot open: No such file"));
    CHECK(format_idx_load(tmpdir, GRAPH_F32, 0, &t, &data, err, sizeof err) == TG_ERR_IO &&
          strstr(err, "is a directory"));
    CHECK(format_idx_load(NULL, GRAPH_F32, 0, &t, &data, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_idx_load(path, GRAPH_F32, 0, NULL, &data, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_idx_load_mem(NULL, 5, "x", GRAPH_F32, 0, &t, &data, err, sizeof err) ==
          TG_ERR_NULL);
    format_idx_info info;
    CHECK(format_idx_inspect(path, &info, err, sizeof err) == TG_ERR_IO);
    CHECK(format_idx_inspect(NULL, &info, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_idx_load_mem(NULL, 0, NULL, GRAPH_F32, 0, &t, &data, err, 8) ==
              TG_ERR_FORMAT && strlen(err) == 7); /* a short err is cut and terminated */
}

/* ---- the dataset ---- */

/* Writes images [n,r,c] (pixel i*13+j) and labels (i % 10, or lab) as
 * plain or gzip files under tmpdir; returns 0 when written. */
static void write_set(const char *prefix, int gz, uint32_t n, uint32_t r, uint32_t c,
                      const uint8_t *lab, uint32_t nlab, char *ip, char *lp)
{
    size_t px = (size_t)n * r * c;
    uint8_t *img = malloc(px + 16), *file = malloc(px + 64), *z = malloc(px + px / 8 + 1024);
    uint8_t labels[256], lfile[512], lz[1024];
    if (!img || !file || !z) {
        CHECK(!"out of memory");
        free(img), free(file), free(z);
        return;
    }
    for (size_t i = 0; i < px; i++)
        img[i] = (uint8_t)(i * 13 + i / 7);
    for (uint32_t i = 0; i < nlab && i < 256; i++)
        labels[i] = lab ? lab[i] : (uint8_t)(i % 10);
    uint32_t d3[3] = {n, r, c}, d1[1] = {nlab};
    size_t ni = idx_file(file, 0x08, 3, d3, img, px);
    size_t nl = idx_file(lfile, 0x08, 1, d1, labels, nlab);
    sprintf(ip, "%s/%s-images-idx3-ubyte%s", tmpdir, prefix, gz ? ".gz" : "");
    sprintf(lp, "%s/%s-labels-idx1-ubyte%s", tmpdir, prefix, gz ? ".gz" : "");
    if (gz) {
        write_file(ip, z, gz_deflate(z, px + px / 8 + 1024, file, ni));
        write_file(lp, lz, gz_deflate(lz, sizeof lz, lfile, nl));
    } else {
        write_file(ip, file, ni);
        write_file(lp, lfile, nl);
    }
    free(img);
    free(file);
    free(z);
}

static void test_dataset(void)
{
    char ip[256], lp[256], err[512] = "";
    format_idx_dataset *ds = (format_idx_dataset *)1;
    for (int gz = 0; gz < 2; gz++) {
        write_set("train", gz, 20, 4, 3, NULL, 20, ip, lp);
        CHECK_MSG(format_idx_dataset_load(ip, lp, 10, &ds, err, sizeof err) == TG_OK, "%s",
                  err);
        int64_t r = 0, c = 0;
        format_idx_dataset_shape(ds, &r, &c);
        CHECK(format_idx_dataset_count(ds) == 20 && r == 4 && c == 3);
        int64_t idx[3] = {19, 0, 7}, y[3] = {-1, -1, -1};
        float x[3 * 12];
        CHECK(format_idx_dataset_batch(ds, idx, 3, x, y, err, sizeof err) == TG_OK);
        CHECK(y[0] == 9 && y[1] == 0 && y[2] == 7);
        int bad = 0;
        for (int b = 0; b < 3; b++)
            for (size_t j = 0; j < 12; j++) {
                size_t i = (size_t)idx[b] * 12 + j;
                bad += x[b * 12 + j] != (float)(uint8_t)(i * 13 + i / 7) / 255.0f;
            }
        CHECK_MSG(!bad, "%d pixels differ", bad);
        /* either part alone; an empty batch */
        CHECK(format_idx_dataset_batch(ds, idx, 3, NULL, y, err, sizeof err) == TG_OK);
        CHECK(format_idx_dataset_batch(ds, idx, 3, x, NULL, err, sizeof err) == TG_OK);
        CHECK(format_idx_dataset_batch(ds, NULL, 0, x, y, err, sizeof err) == TG_OK);
        /* bad indices: nothing written */
        int64_t out[2] = {3, 20};
        y[0] = -5;
        CHECK(format_idx_dataset_batch(ds, out, 2, x, y, err, sizeof err) == TG_ERR_ARG &&
              strstr(err, "idx batch: index 1 of the batch is 20, the dataset has 20 images") &&
              y[0] == -5);
        out[1] = -1;
        CHECK(format_idx_dataset_batch(ds, out, 2, x, y, err, sizeof err) == TG_ERR_ARG &&
              strstr(err, "index 1 of the batch is -1"));
        CHECK(format_idx_dataset_batch(ds, NULL, 2, x, y, err, sizeof err) == TG_ERR_NULL);
        CHECK(format_idx_dataset_batch(ds, idx, -1, x, y, err, sizeof err) == TG_ERR_ARG);
        CHECK(format_idx_dataset_batch(NULL, idx, 1, x, y, err, sizeof err) == TG_ERR_NULL);
        format_idx_dataset_free(ds);
        /* by directory and split */
        CHECK_MSG(format_idx_dataset_load_dir(tmpdir, "train", 10, &ds, err, sizeof err) ==
                      TG_OK && format_idx_dataset_count(ds) == 20,
                  "%s", err);
        format_idx_dataset_free(ds);
        unlink(ip);
        unlink(lp);
    }
    CHECK(format_idx_dataset_count(NULL) == 0);
    format_idx_dataset_free(NULL);

    /* a label outside 0..9, at its byte; fine without the check */
    uint8_t lab[20];
    for (int i = 0; i < 20; i++)
        lab[i] = (uint8_t)(i % 10);
    lab[13] = 10;
    for (int gz = 0; gz < 2; gz++) {
        write_set("l", gz, 20, 2, 2, lab, 20, ip, lp);
        char want[600];
        snprintf(want, sizeof want, "%s: at %s 21: label 13 is 10, outside 0..9", lp,
                 gz ? "decompressed byte" : "byte");
        CHECK_MSG(format_idx_dataset_load(ip, lp, 10, &ds, err, sizeof err) == TG_ERR_FORMAT &&
                      !ds && strcmp(err, want) == 0,
                  "%s", err);
        CHECK(format_idx_dataset_load(ip, lp, 0, &ds, err, sizeof err) == TG_OK);
        int64_t i13 = 13, y = 0;
        CHECK(format_idx_dataset_batch(ds, &i13, 1, NULL, &y, err, sizeof err) == TG_OK &&
              y == 10);
        format_idx_dataset_free(ds);
        CHECK(format_idx_dataset_load(ip, lp, 11, &ds, err, sizeof err) == TG_OK);
        format_idx_dataset_free(ds);
        CHECK(format_idx_dataset_load(ip, lp, -1, &ds, err, sizeof err) == TG_ERR_ARG);
        unlink(ip);
        unlink(lp);
    }
    /* counts that differ */
    write_set("c", 0, 20, 2, 2, NULL, 19, ip, lp);
    CHECK_MSG(format_idx_dataset_load(ip, lp, 10, &ds, err, sizeof err) == TG_ERR_FORMAT &&
                  strstr(err, "-labels-idx1-ubyte: at byte 4: 19 labels for the 20 images of ") &&
                  !ds,
              "%s", err);
    /* images and labels swapped: dims refused */
    CHECK_MSG(format_idx_dataset_load(lp, ip, 10, &ds, err, sizeof err) == TG_ERR_FORMAT &&
                  strstr(err, "at byte 3: images must have 3 dims [count,rows,cols], this file "
                              "has 1: [19]"),
              "%s", err);
    CHECK_MSG(format_idx_dataset_load(ip, ip, 10, &ds, err, sizeof err) == TG_ERR_FORMAT &&
                  strstr(err, "at byte 3: labels must have 1 dim [count], this file has 3: "
                              "[20,2,2]"),
              "%s", err);
    /* labels of another element type */
    uint32_t d1[1] = {20};
    uint8_t i32s[80] = {0}, lf[128];
    size_t nlf = idx_file(lf, 0x0C, 1, d1, i32s, 80);
    write_file(lp, lf, nlf);
    CHECK_MSG(format_idx_dataset_load(ip, lp, 10, &ds, err, sizeof err) == TG_ERR_UNSUPPORTED &&
                  strstr(err, "at byte 2: elements of type i32, where u8 is needed"),
              "%s", err);
    unlink(ip);
    unlink(lp);
    /* a directory without the files */
    CHECK_MSG(format_idx_dataset_load_dir(tmpdir, "t10k", 10, &ds, err, sizeof err) ==
                      TG_ERR_IO && !ds && strstr(err, ": no t10k images: neither ") &&
                  strstr(err, "/t10k-images-idx3-ubyte.gz nor ") &&
                  strstr(err, "/t10k-images-idx3-ubyte exists"),
              "%s", err);
    CHECK(format_idx_dataset_load(NULL, lp, 10, &ds, err, sizeof err) == TG_ERR_NULL);
    CHECK(format_idx_dataset_load_dir(NULL, "x", 10, &ds, err, sizeof err) == TG_ERR_NULL);
}

/* ---- the real files ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The decompressed bytes of a .gz by gzip(1), into *out; 0 when gzip
 * is not there.  The independent reference of the real files. */
static size_t gunzip(const char *path, uint8_t **out)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    size_t n = 0, cap = 1 << 20;
    uint8_t *b = malloc(cap);
    while (f && b) {
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb)
                break;
            b = nb;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        if (!k)
            break;
        n += k;
    }
    if (!f || pclose(f) != 0) {
        free(b);
        *out = NULL;
        return 0;
    }
    *out = b;
    return n;
}

static void check_split(const char *split, int64_t count, const int64_t first[10])
{
    char err[512] = "", path[300];
    format_idx_dataset *ds = NULL;
    double t0 = now_s();
    tg_status st = format_idx_dataset_load_dir(FORMAT_IDX_FASHION_MNIST, split, 10, &ds, err,
                                               sizeof err);
    double t1 = now_s();
    CHECK_MSG(st == TG_OK, "%s", err);
    if (st != TG_OK)
        return;
    int64_t r, c;
    format_idx_dataset_shape(ds, &r, &c);
    CHECK_MSG(format_idx_dataset_count(ds) == count && r == 28 && c == 28,
              "%s: %lld images of %lldx%lld", split, (long long)format_idx_dataset_count(ds),
              (long long)r, (long long)c);
    printf("fashion-mnist %s: %lld images %lldx%lld, loaded in %.0f ms\n", split,
           (long long)count, (long long)r, (long long)c, (t1 - t0) * 1e3);
    /* every image and label through batches, against gzip -dc's bytes */
    int64_t *idx = malloc((size_t)count * sizeof *idx), *y = malloc((size_t)count * sizeof *y);
    float *x = malloc((size_t)count * 784 * sizeof *x);
    uint8_t *img = NULL, *lab = NULL;
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", FORMAT_IDX_FASHION_MNIST, split);
    size_t ni = gunzip(path, &img);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", FORMAT_IDX_FASHION_MNIST, split);
    size_t nl = gunzip(path, &lab);
    if (idx && y && x) {
        for (int64_t i = 0; i < count; i++)
            idx[i] = count - 1 - i; /* backwards: the indices are followed */
        t0 = now_s();
        CHECK(format_idx_dataset_batch(ds, idx, count, x, y, err, sizeof err) == TG_OK);
        t1 = now_s();
        printf("fashion-mnist %s: the whole set as one f32 batch in %.0f ms\n", split,
               (t1 - t0) * 1e3);
        int64_t per[10] = {0};
        for (int64_t i = 0; i < count; i++)
            if (y[i] >= 0 && y[i] < 10)
                per[y[i]]++;
        for (int k = 0; k < 10; k++)
            CHECK_MSG(per[k] == count / 10, "%s: class %d has %lld images", split, k,
                      (long long)per[k]);
        for (int k = 0; k < 10; k++)
            CHECK_MSG(y[count - 1 - k] == first[k], "%s: label %d is %lld", split, k,
                      (long long)y[count - 1 - k]);
        if (!img || !lab) {
            printf("fashion-mnist %s: no gzip(1) here: pixels not compared\n", split);
        } else {
            CHECK(ni == 16 + (size_t)count * 784 && nl == 8 + (size_t)count);
            int64_t bad = 0;
            for (int64_t i = 0; ni == 16 + (size_t)count * 784 && i < count; i++) {
                const uint8_t *p = img + 16 + (size_t)(count - 1 - i) * 784;
                for (int j = 0; j < 784; j++)
                    bad += x[i * 784 + j] != (float)p[j] / 255.0f;
                bad += nl == 8 + (size_t)count && y[i] != lab[8 + count - 1 - i];
            }
            CHECK_MSG(bad == 0, "%s: %lld pixels or labels differ from gzip -dc's", split,
                      (long long)bad);
        }
    }
    /* the labels alone as i64, and inspect */
    graph_type t;
    void *data = NULL;
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", FORMAT_IDX_FASHION_MNIST, split);
    CHECK(format_idx_load(path, GRAPH_I64, 0, &t, &data, err, sizeof err) == TG_OK &&
          t.ndim == 1 && t.dim[0] == count && ((int64_t *)data)[0] == first[0]);
    free(data);
    format_idx_info info;
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", FORMAT_IDX_FASHION_MNIST, split);
    CHECK(format_idx_inspect(path, &info, err, sizeof err) == TG_OK && info.gzip &&
          info.type == FORMAT_IDX_U8 && info.ndim == 3 && info.dim[0] == count &&
          info.idx_bytes == 16 + (uint64_t)count * 784);
    free(idx);
    free(y);
    free(x);
    free(img);
    free(lab);
    format_idx_dataset_free(ds);
}

static void test_fashion_mnist(void)
{
    struct stat sb;
    if (stat(FORMAT_IDX_FASHION_MNIST, &sb) != 0) {
        printf("SKIP the real-data part: no %s (Debian: apt-get install "
               "dataset-fashion-mnist; scripts/deps.sh installs it for make demo and make "
               "bench)\n", FORMAT_IDX_FASHION_MNIST);
        return;
    }
    static const int64_t train[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    static const int64_t test[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    check_split("train", 60000, train);
    check_split("t10k", 10000, test);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_idx.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_u8();
    test_types();
    test_large();
    test_damage();
    test_bombs();
    test_files();
    test_dataset();
    test_fashion_mnist();
    rmdir(tmpdir);
    return check_done();
}
