/*
 * test_npy.c - NumPy .npy reading and writing (formats/npy.h).
 *
 * The reference is the file format itself: the expected files are written
 * here byte by byte as NumPy's np.save writes them (the header literals
 * below, spare growth spaces and all, with the lengths NumPy gives them),
 * never produced by the code under test.  Then: round trips of every dtype
 * including 0-d and zero-sized arrays, versions 2.0 and 3.0 and the
 * header variants other writers produce, every truncation (in memory and
 * on disk), every bit flip of a header, each bad header with its exact
 * message, and pipes and devices (read only as far as the header says).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "formats/npy.h"
#include "pipe_util.h"

static char tmpdir[64];

/* A file as a writer following the NPY spec builds it: magic, version,
 * header length (u16 for 1.x, u32 after), the dict, at least one space and
 * then spaces up to a multiple of align ending in '\n', the data.  Returns
 * its length. */
static size_t npy_file(uint8_t *out, int major, const char *dict, int align,
                       const void *data, size_t n)
{
    size_t lensz = major == 1 ? 2 : 4, d = strlen(dict);
    size_t total = 8 + lensz + d + 1;
    size_t pad = (size_t)align - total % (size_t)align; /* never 0, as NumPy */
    size_t hlen = d + pad + 1;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    for (size_t i = 0; i < lensz; i++)
        out[8 + i] = (uint8_t)(hlen >> (8 * i));
    memcpy(out + 8 + lensz, dict, d);
    memset(out + 8 + lensz + d, ' ', pad);
    out[8 + lensz + d + pad] = '\n';
    memcpy(out + 8 + lensz + hlen, data, n);
    return 8 + lensz + hlen + n;
}

static int same_type(const graph_type *a, graph_dtype dt, int ndim, const int64_t *dims)
{
    if (a->dtype != dt || a->ndim != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (a->dim[i] != dims[i])
            return 0;
    return 1;
}

/* Loads buf and expects success with the given type and data. */
static void expect_load(const uint8_t *buf, size_t len, graph_dtype dt, int ndim,
                        const int64_t *dims, const void *want, size_t n, int line)
{
    graph_type t;
    void *data = NULL;
    char err[512] = "";
    tg_status st = format_npy_load_mem(buf, len, "t.npy", &t, &data, err, sizeof err);
    check_report(st == TG_OK, __FILE__, line, "loads: %s", err);
    if (st == TG_OK) {
        check_report(same_type(&t, dt, ndim, dims), __FILE__, line, "type");
        check_report(data && ((uintptr_t)data & 63) == 0, __FILE__, line, "aligned data");
        check_report(!n || memcmp(data, want, n) == 0, __FILE__, line, "data");
    }
    free(data);
}

/* Loads buf and expects failure st with a message containing want. */
static void expect_fail(const uint8_t *buf, size_t len, tg_status want_st, const char *want,
                        int line)
{
    graph_type t;
    void *data = (void *)1;
    char err[512] = "";
    tg_status st = format_npy_load_mem(buf, len, "bad.npy", &t, &data, err, sizeof err);
    check_report(st == want_st && data == NULL, __FILE__, line, "status %d (want %d): %s",
                 (int)st, (int)want_st, err);
    check_report(strncmp(err, "bad.npy: ", 9) == 0 && strstr(err, want), __FILE__, line,
                 "\"%s\" contains \"%s\"", err, want);
    free(st == TG_OK ? data : NULL);
}

#define EXPECT_LOAD(buf, len, dt, ndim, dims, want, n) \
    expect_load(buf, len, dt, ndim, dims, want, n, __LINE__)
#define EXPECT_FAIL(buf, len, st, msg) expect_fail(buf, len, st, msg, __LINE__)

/* The writer produces exactly np.save's bytes. */
static void test_exact_bytes(void)
{
    static const struct {
        graph_dtype dt;
        int ndim;
        int64_t dims[8];
        const char *dict; /* as NumPy writes it, growth spaces included */
        size_t header;    /* bytes before the data, from NumPy */
    } cases[] = {
        {GRAPH_F32, 2, {2, 3},
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
         "                    ", 128},
        {GRAPH_I64, 1, {3},
         "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }                    ", 128},
        {GRAPH_I32, 0, {0}, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", 128},
        {GRAPH_BOOL, 2, {2, 2},
         "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }"
         "                    ", 128},
        {GRAPH_F32, 2, {0, 4},
         "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }"
         "                    ", 128},
        {GRAPH_F32, 1, {12345},
         "{'descr': '<f4', 'fortran_order': False, 'shape': (12345,), }                "
         "    ", 128},
        /* the largest dims the size cap allows next to a 0 (2^40); the case
         * where 10 + dict + 1 is a multiple of 64 (NumPy then pads a full 64)
         * needs 28 digits of dims in 8 dims, beyond the cap, so no valid
         * array has it */
        {GRAPH_F32, 8, {0, 1099511627776, 1, 1, 1, 1, 1, 1},
         "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776, 1, 1, 1, 1, "
         "1, 1), }                    ", 128},
    };
    uint8_t data[12345 * 4], want[12345 * 4 + 256];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7 % 2);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        graph_type t = {cases[c].dt, cases[c].ndim, {0}};
        memcpy(t.dim, cases[c].dims, sizeof t.dim);
        size_t n = (size_t)graph_type_numel(&t) * graph_dtype_size(t.dtype);
        size_t wlen = npy_file(want, 1, cases[c].dict, 64, data, n);
        CHECK_MSG(wlen - n == cases[c].header, "case %zu: the reference header is %zu bytes",
                  c, wlen - n);
        void *buf = NULL;
        size_t len = 0;
        char err[256] = "";
        CHECK(format_npy_save_mem(&t, data, &buf, &len, err, sizeof err) == TG_OK);
        CHECK_MSG(len == wlen && buf && memcmp(buf, want, len) == 0,
                  "case %zu: %zu bytes, want %zu: %.*s", c, len, wlen,
                  (int)(len < 128 ? len : 128), buf ? (char *)buf : "");
        EXPECT_LOAD(want, wlen, t.dtype, t.ndim, t.dim, data, n);
        free(buf);
    }
    /* The example from the spec, spelled out: 0x76 = 118 header bytes. */
    float six[6] = {0, 1, 2, 3, 4, 5};
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    void *buf = NULL;
    size_t len = 0;
    CHECK(format_npy_save_mem(&t, six, &buf, &len, NULL, 0) == TG_OK);
    CHECK(len == 128 + 24 &&
          memcmp(buf, "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (2, 3), }", 69) == 0);
    CHECK(buf && ((char *)buf)[127] == '\n' && ((char *)buf)[126] == ' ' &&
          memcmp((char *)buf + 128, six, 24) == 0);
    free(buf);
}

/* Round trips through files and memory, every dtype, 0-d, zero-sized. */
static void test_round_trip(void)
{
    float f[6] = {1.5f, -2, 0, 3.25f, -0.0f, 1e30f};
    int64_t l[5] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    int32_t i[4] = {INT32_MIN, -7, 7, INT32_MAX};
    uint8_t b[3] = {1, 0, 1};
    const struct {
        graph_type t;
        const void *data;
    } cases[] = {
        {{GRAPH_F32, 2, {2, 3}}, f},   {{GRAPH_I64, 1, {5}}, l},
        {{GRAPH_I32, 2, {2, 2}}, i},   {{GRAPH_BOOL, 1, {3}}, b},
        {{GRAPH_F32, 0, {0}}, f},      {{GRAPH_I64, 0, {0}}, l},
        {{GRAPH_I32, 0, {0}}, i},      {{GRAPH_BOOL, 0, {0}}, b},
        {{GRAPH_F32, 3, {2, 0, 3}}, NULL}, {{GRAPH_BOOL, 1, {0}}, NULL},
        {{GRAPH_F32, 8, {1, 1, 1, 1, 1, 1, 2, 3}}, f},
    };
    char path[128];
    snprintf(path, sizeof path, "%s/rt.npy", tmpdir);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const graph_type *t = &cases[c].t;
        size_t n = (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
        char err[512] = "";
        CHECK_MSG(format_npy_save(path, t, cases[c].data, err, sizeof err) == TG_OK, "%s", err);
        struct stat sb;
        CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);
        graph_type got;
        void *data = NULL;
        tg_status st = format_npy_load(path, &got, &data, err, sizeof err);
        CHECK_MSG(st == TG_OK, "case %zu loads: %s", c, err);
        CHECK_MSG(st == TG_OK && same_type(&got, t->dtype, t->ndim, t->dim) && data &&
                      (!n || memcmp(data, cases[c].data, n) == 0),
                  "case %zu round trips", c);
        free(data);
        void *buf = NULL;
        size_t len = 0;
        CHECK(format_npy_save_mem(t, cases[c].data, &buf, &len, NULL, 0) == TG_OK);
        CHECK(buf && (size_t)sb.st_size == len); /* the file is save_mem's bytes */
        EXPECT_LOAD(buf, len, t->dtype, t->ndim, t->dim, cases[c].data, n);
        free(buf);
    }
    /* a special file is written in place */
    graph_type t = {GRAPH_F32, 1, {2}};
    CHECK(format_npy_save("/dev/null", &t, f, NULL, 0) == TG_OK);
    /* writer errors */
    char err[256] = "";
    graph_type bad = {GRAPH_F32, 1, {-1}};
    CHECK(format_npy_save(path, &bad, f, err, sizeof err) == TG_ERR_ARG &&
          strstr(err, "negative dim -1"));
    CHECK(format_npy_save(path, &t, NULL, err, sizeof err) == TG_ERR_NULL);
    char nodir[160];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir.npy", tmpdir);
    CHECK(format_npy_save(nodir, &t, f, err, sizeof err) == TG_ERR_IO &&
          strstr(err, "cannot write") && strstr(err, nodir));
    unlink(path);
}

/* Headers other writers (and other NumPy versions) produce. */
static void test_variants(void)
{
    uint8_t buf[512];
    float f[6] = {1, 2, 3, 4, 5, 6};
    int64_t d23[2] = {2, 3}, d5[1] = {5}, d0[1] = {0};
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    EXPECT_LOAD(buf, npy_file(buf, 2, dict, 64, f, 24), GRAPH_F32, 2, d23, f, 24);
    EXPECT_LOAD(buf, npy_file(buf, 3, dict, 64, f, 24), GRAPH_F32, 2, d23, f, 24);
    EXPECT_LOAD(buf, npy_file(buf, 1, dict, 16, f, 24), GRAPH_F32, 2, d23, f, 24); /* old */
    EXPECT_LOAD(buf, npy_file(buf, 1, dict, 1, f, 24), GRAPH_F32, 2, d23, f, 24);
    const char *odd[] = {
        "{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<f4\"}",
        "{'descr':'<f4','fortran_order':False,'shape':(2,3)}",
        "{ 'descr' : '<f4' ,\n 'fortran_order' : False ,\t'shape' : ( 2 , 3 , ) , }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", /* Python 2 */
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        EXPECT_LOAD(buf, npy_file(buf, 1, odd[i], 64, f, 24), GRAPH_F32, 2, d23, f, 24);
    EXPECT_LOAD(buf, npy_file(buf, 1, "{'descr': '<i8', 'fortran_order': False, "
                                      "'shape': (5,), }", 64, (int64_t[]){1, 2, 3, 4, 5}, 40),
                GRAPH_I64, 1, d5, ((int64_t[]){1, 2, 3, 4, 5}), 40);
    EXPECT_LOAD(buf, npy_file(buf, 1, "{'descr': '<f4', 'fortran_order': True, "
                                      "'shape': (5,), }", 64, f, 20),
                GRAPH_F32, 1, d5, f, 20); /* 1-d: the same bytes in either order */
    EXPECT_LOAD(buf, npy_file(buf, 1, "{'descr': '|b1', 'fortran_order': False, "
                                      "'shape': (0,), }", 64, f, 0),
                GRAPH_BOOL, 1, d0, f, 0);
}

/* Every prefix of a valid file fails cleanly, in memory and on disk. */
static void test_truncation(void)
{
    uint8_t full[256];
    float f[6] = {1, 2, 3, 4, 5, 6};
    size_t n = npy_file(full, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                        64, f, 24);
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/cut.npy", tmpdir);
    for (size_t len = 0; len < n; len++) {
        const char *want = len < 6    ? "too short for a .npy file"
                           : len < 8  ? "the file ends inside the version"
                           : len < 10 ? "the file ends inside the header length"
                           : len < 128 ? "at byte 8: a header of 118 bytes runs past"
                                       : "at byte 128: the data is truncated: shape "
                                         "(2, 3) of '<f4' needs 24 bytes, the file has";
        EXPECT_FAIL(len ? full : NULL, len, TG_ERR_FORMAT, want);
        FILE *fp = fopen(path, "wb");
        CHECK(fp && fwrite(full, 1, len, fp) == len && fclose(fp) == 0);
        graph_type t;
        void *data = (void *)1;
        tg_status st = format_npy_load(path, &t, &data, err, sizeof err);
        CHECK_MSG(st == TG_ERR_FORMAT && !data && strncmp(err, path, strlen(path)) == 0 &&
                      strstr(err, want),
                  "file cut at %zu: \"%s\" contains \"%s\"", len, err, want);
    }
    /* and one byte too many */
    full[n] = 0;
    EXPECT_FAIL(full, n + 1, TG_ERR_FORMAT,
                "at byte 152: 1 unexpected bytes after the data (shape (2, 3) of '<f4' is 24 "
                "bytes)");
    unlink(path);
}

/* Every single-bit flip of a bool file: a clean error or a valid array. */
static void test_bit_flips(void)
{
    uint8_t full[256], bad[256];
    uint8_t bools[4] = {1, 0, 0, 1};
    size_t n = npy_file(full, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }",
                        64, bools, 4);
    int loaded = 0, refused = 0;
    for (size_t bit = 0; bit < n * 8; bit++) {
        memcpy(bad, full, n);
        bad[bit / 8] ^= (uint8_t)(1u << bit % 8);
        graph_type t;
        void *data = NULL;
        char err[512] = "";
        tg_status st = format_npy_load_mem(bad, n, "flip.npy", &t, &data, err, sizeof err);
        if (st == TG_OK) {
            loaded++;
            CHECK_MSG(graph_type_numel(&t) * (int64_t)graph_dtype_size(t.dtype) <=
                          (int64_t)n && data, "bit %zu", bit);
        } else {
            refused++;
            CHECK_MSG(!data && strncmp(err, "flip.npy: ", 10) == 0 &&
                          (strstr(err, "at byte ") || strstr(err, "bad magic")),
                      "bit %zu: %s", bit, err);
        }
        free(data);
    }
    CHECK_MSG(refused > (int)(n * 8) / 2 && loaded > 0, "%d refused, %d loaded", refused,
              loaded);
    memcpy(bad, full, n);
    bad[n - 2] = 2;
    EXPECT_FAIL(bad, n, TG_ERR_FORMAT, "at byte 130: bool element 2 is 2 (must be 0 or 1)");
}

/* One malformed or unsupported header and the exact message. */
static void bad_header(const char *dict, size_t ndata, tg_status st, const char *want,
                       int line)
{
    uint8_t buf[1024], zeros[64] = {0};
    size_t n = npy_file(buf, 1, dict, 64, zeros, ndata);
    expect_fail(buf, n, st, want, line);
}
#define BAD_HEADER(dict, ndata, st, want) bad_header(dict, ndata, st, want, __LINE__)

/* bad_header with the first '#' of dict made a NUL byte (4 bytes of data). */
static void bad_nul(const char *dict, tg_status st, const char *want, int line)
{
    uint8_t buf[1024], zeros[4] = {0};
    size_t n = npy_file(buf, 1, dict, 64, zeros, 4);
    uint8_t *hash = memchr(buf, '#', n);
    *hash = 0;
    expect_fail(buf, n, st, want, line);
}

static void test_bad_headers(void)
{
    const tg_status F = TG_ERR_FORMAT, U = TG_ERR_UNSUPPORTED;
    BAD_HEADER("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, U,
               "at byte 44: fortran_order is True: only C-order arrays are supported (save "
               "np.ascontiguousarray(a))");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24, U,
               "at byte 20: dtype '<f8' (float64) is not supported: tracegraph reads '<f4' "
               "(f32), '<i8' (i64), '<i4' (i32) and '|b1' (bool)");
    BAD_HEADER("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 3, U,
               "dtype '|u1' (uint8) is not supported");
    BAD_HEADER("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12, U,
               "dtype '>f4' (big-endian) is not supported");
    BAD_HEADER("{'descr': 'zz\x80', 'fortran_order': False, 'shape': (3,), }", 12, U,
               "at byte 20: unknown dtype 'zz?'");
    BAD_HEADER("{'descr': 'zz\x01', 'fortran_order': False, 'shape': (3,), }", 12, F,
               "at byte 23: byte 0x01 inside the dtype (a header string holds printable "
               "characters only)");
    BAD_HEADER("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12, U,
               "at byte 20: structured dtypes (a list of fields) are not supported");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", 24, F,
               "at byte 128: the data is truncated: shape (2, 4) of '<f4' needs 32 bytes, "
               "the file has 24");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 24, F,
               "at byte 144: 8 unexpected bytes after the data");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296,"
               " 4294967296), }", 24, F, "at byte 128: shape (4294967296, 4294967296, "
               "4294967296) of '<f4' is too large (at most 2^40 elements, a 0 dim counted "
               "as 1)");
    /* numel 0, but each dim is bounded anyway (issue 16: a reduction over the
     * empty axis would make 2^62 elements) */
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2147483648, "
               "2147483648), }", 0, F, "at byte 128: shape (0, 2147483648, 2147483648) of "
               "'<f4' is too large");
    BAD_HEADER("{'descr': '|b1', 'fortran_order': False, 'shape': (1099511627777,), }",
               0, F, "is too large (at most 2^40 elements");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
               0, F, "at byte 61: a shape entry is too large");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24, F,
               "at byte 64: a shape entry must be a non-negative integer");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
               U, "at byte 77: the shape has more than 8 dims");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 12, F,
               "at byte 62: a 1-element shape needs a trailing comma: (3,)");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': 3, }", 12, F,
               "at byte 60: expected '(' opening the shape, found '3'");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, }", 4, F,
               "at byte 10: the header has no 'shape'");
    BAD_HEADER("{'descr': '<f4', 'shape': (1,), }", 4, F,
               "at byte 10: the header has no 'fortran_order'");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr': '<f4'}", 4, F,
               "at byte 66: key 'descr' appears twice");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, F,
               "at byte 66: unknown key 'x' (a .npy header has 'descr', 'fortran_order' and "
               "'shape')");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", 4, F,
               "at byte 44: 'fortran_order' must be True or False");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", 4, F,
               "at byte 68: unexpected bytes after the header dict");
    BAD_HEADER("{'descr': '<f4' 'fortran_order': False, 'shape': (1,), }", 4, F,
               "at byte 26: expected ',' or '}' after a header entry, found '''");
    BAD_HEADER("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,), }", 4, F,
               "at byte 23: escape sequences are not supported in the dtype");
    BAD_HEADER("{'descr': '<f4", 0, F, "at byte 20: unterminated string");
    /* a NUL ends a C string: '<f4\0junk' is not '<f4' (issue 29), nor 'shape\0' 'shape' */
    bad_nul("{'descr': '<f4#junk', 'fortran_order': False, 'shape': (1,), }", F,
            "at byte 24: byte 0x00 inside the dtype", __LINE__);
    bad_nul("{'descr': '<f4#', 'fortran_order': False, 'shape': (1,), }", F,
            "at byte 24: byte 0x00 inside the dtype", __LINE__);
    bad_nul("{'descr': '<f4', 'fortran_order': False, 'shape#': (1,), }", F,
            "at byte 57: byte 0x00 inside a key", __LINE__);
    bad_nul("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }#", F,
            "at byte 67: unexpected bytes after the header dict", __LINE__);
    bad_nul("{'descr': '<f4', 'fortran_order': False#, 'shape': (1,), }", F,
            "at byte 49: expected ',' or '}' after a header entry, found '?'", __LINE__);
    bad_nul("{'descr': '<f4', 'fortran_order': False, 'shape': (1#,), }", F,
            "at byte 62: expected ',' or ')' in the shape, found '?'", __LINE__);
    BAD_HEADER("{'descr': '<f4', ", 0, F,
               "at byte 64: the header ends where a key was expected");
    BAD_HEADER("['descr', '<f4']", 0, F,
               "at byte 10: expected '{' opening the header dict, found '['");
    BAD_HEADER("", 0, F, "at byte 64: the header ends where '{' opening the header dict was");
    /* version, magic, header length */
    uint8_t buf[256], z[4] = {0};
    size_t n = npy_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                        64, z, 4);
    buf[6] = 4;
    EXPECT_FAIL(buf, n, U, "at byte 6: .npy format version 4.0 is not supported (this build "
                           "reads 1.0, 2.0 and 3.0)");
    buf[6] = 1;
    buf[7] = 1;
    EXPECT_FAIL(buf, n, U, "version 1.1 is not supported");
    buf[7] = 0;
    buf[0] = 'X';
    EXPECT_FAIL(buf, n, F, "not a .npy file (bad magic)");
    buf[0] = 0x93;
    buf[9] = 0xff;
    EXPECT_FAIL(buf, n, F, "at byte 8: a header of 65398 bytes runs past the end of the file "
                           "(132 bytes)");
    n = npy_file(buf, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 64, z, 4);
    buf[11] = 0xff;
    EXPECT_FAIL(buf, n, F, "a header of 4278190196 bytes runs past the end of the file");
    EXPECT_FAIL((const uint8_t *)"PK\x03\x04", 4, F, "not a .npy file (bad magic)");
}

static void test_file_errors(void)
{
    graph_type t;
    void *data = (void *)1;
    char err[512], path[160];
    snprintf(path, sizeof path, "%s/missing.npy", tmpdir);
    CHECK(format_npy_load(path, &t, &data, err, sizeof err) == TG_ERR_IO && !data);
    CHECK_MSG(strstr(err, "missing.npy: cannot open: No such file or directory"), "%s", err);
    CHECK(format_npy_load(tmpdir, &t, &data, err, sizeof err) == TG_ERR_IO &&
          strstr(err, "is a directory"));
    CHECK(format_npy_load(NULL, &t, &data, NULL, 0) == TG_ERR_NULL);
    CHECK(strcmp(format_npy_descr(GRAPH_I32), "<i4") == 0);
}

/* format_npy_load of a pipe sending buf[0..n) (pipe_util.h). */
static tg_status load_pipe(const uint8_t *buf, size_t n, unsigned hold, graph_type *t,
                           void **data, char *err, size_t errlen)
{
    test_pipe p;
    if (test_pipe_open(&p, buf, n, hold) != 0)
        return TG_ERR_IO;
    tg_status st = format_npy_load(p.path, t, data, err, errlen);
    test_pipe_close(&p);
    return st;
}

/* Pipes and devices: read as far as the header declares, judged by their first bytes. */
static void test_streams(void)
{
    uint8_t full[256];
    float f[6] = {1, 2, 3, 4, 5, 6};
    size_t n = npy_file(full, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                        64, f, 24);
    graph_type t;
    void *data = NULL;
    char err[512] = "";
    /* a whole file through a pipe */
    tg_status st = load_pipe(full, n, 0, &t, &data, err, sizeof err);
    CHECK_MSG(st == TG_OK && data && t.ndim == 2 && t.dim[1] == 3 &&
                  memcmp(data, f, sizeof f) == 0, "%s", err);
    free(data);
    data = NULL;
    /* 8 bytes that are not the magic, then a stall: refused at once (was: a hang) */
    time_t t0 = time(NULL);
    st = load_pipe((const uint8_t *)"PK\x03\x04\x14\x00\x00\x00", 8, 30, &t, &data, err,
                   sizeof err);
    CHECK_MSG(st == TG_ERR_FORMAT && !data && strstr(err, "/dev/fd/") &&
                  strstr(err, ": not a .npy file (bad magic)") && time(NULL) - t0 < 10,
              "%s", err);
    /* a valid header, then fewer bytes than it declares */
    st = load_pipe(full, n - 10, 0, &t, &data, err, sizeof err);
    CHECK_MSG(st == TG_ERR_FORMAT && !data && strstr(err, "at byte 128: the data is truncated: "
              "shape (2, 3) of '<f4' needs 24 bytes, the file has 14"), "%s", err);
    /* and more */
    full[n] = 7;
    st = load_pipe(full, n + 1, 0, &t, &data, err, sizeof err);
    CHECK_MSG(st == TG_ERR_FORMAT && !data && strstr(err, "at byte 152: 1 unexpected bytes "
              "after the data"), "%s", err);
    /* a header length past what is read: refused before reading it */
    static uint8_t big[70100];
    memset(big, ' ', sizeof big);
    memcpy(big, "\x93NUMPY\x02\x00", 8);
    big[8] = 70000 & 0xff, big[9] = 70000 >> 8 & 0xff, big[10] = 70000 >> 16, big[11] = 0;
    st = load_pipe(big, 12, 30, &t, &data, err, sizeof err);
    CHECK_MSG(st == TG_ERR_FORMAT && !data && strstr(err, "at byte 8: a header of 70000 bytes "
              "(at most 65536 are read)"), "%s", err);
    EXPECT_FAIL(big, sizeof big, TG_ERR_FORMAT, "at byte 8: a header of 70000 bytes (at most "
                "65536 are read)");
    /* /dev/zero: the first byte decides (was: read until memory ran out) */
    st = format_npy_load("/dev/zero", &t, &data, err, sizeof err);
    CHECK_MSG(st == TG_ERR_FORMAT && !data &&
                  strcmp(err, "/dev/zero: not a .npy file (bad magic)") == 0, "%s", err);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_npy.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    test_exact_bytes();
    test_round_trip();
    test_variants();
    test_truncation();
    test_bit_flips();
    test_bad_headers();
    test_file_errors();
    test_streams();
    rmdir(tmpdir);
    return check_done();
}
