/*
 * idx.c - IDX reading, plain or gzip (see idx.h for the format and the
 * rules), and the images + labels dataset.
 *
 * One reader serves memory and files, plain and gzip: an idx_src hands
 * out the IDX bytes in order (raw_read), from the buffer, from the file
 * with read(2), or through zlib's inflate fed in chunks; the header is
 * parsed and checked from its first bytes, and the data is converted
 * chunk by chunk into a buffer that grows only as bytes arrive.  Every
 * message names the position: the IDX byte ("at byte N", "at decompressed
 * byte N" in a gzip stream) or, for the gzip stream itself, the file byte.
 */
#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "file.h"
#include "idx.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_ALIGN 64
/* Bytes converted per step, and compressed bytes handed to inflate per step. */
#define IDX_CHUNK 65536
/* deflate's largest ratio (zlib's FAQ: 1032:1), with room for headers. */
#define IDX_GZ_RATIO 1032
#define IDX_GZ_SLACK 4096
/* The most gzip bytes read before the IDX header is complete: a gzip
 * header (its optional name and comment included) and a few blocks. */
#define IDX_GZ_HEAD_BUDGET (1u << 20)
/* A size not known (a pipe's). */
#define IDX_UNKNOWN UINT64_MAX

/* The conversion of the elements. */
typedef enum idx_conv {
    IDX_TO_NONE,  /* read and check, keep nothing (inspect) */
    IDX_TO_BYTES, /* u8 kept as bytes (the dataset) */
    IDX_TO_F32,
    IDX_TO_F32_SCALED, /* u8 / 255.0f */
    IDX_TO_I64,
    IDX_TO_I32
} idx_conv;

/* The bytes of an IDX file, in order, from memory or a file, through
 * inflate for gzip. */
typedef struct idx_src {
    const char *name;
    const uint8_t *mem; /* from memory: mem[0..in_size) ... */
    format_src fs;      /* ... or from a file (fs.fd >= 0) */
    int file;
    size_t lead;      /* bytes of fs.buf (read while checking the magic) not handed out yet */
    uint64_t in_pos;  /* file bytes handed out */
    uint64_t in_size; /* the file's size, or IDX_UNKNOWN */
    int in_eof;
    /* gzip */
    int gz, z_live, member_done;
    z_stream z;
    uint8_t *zbuf; /* compressed bytes for a file's inflate */
    uint64_t in_budget;
    /* the IDX bytes handed out */
    uint64_t raw_pos;
    int raw_eof;
    char *err;
    size_t errlen;
} idx_src;

static tg_status src_fail(idx_src *r, tg_status st, const char *unit, uint64_t at,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static tg_status src_fail(idx_src *r, tg_status st, const char *unit, uint64_t at,
                          const char *fmt, ...)
{
    tg_errpos where = {.file = r->name, .unit = unit, .offset = at};
    va_list ap;
    va_start(ap, fmt);
    st = tg_vfail_at(st, r->err, r->errlen, &where, fmt, ap);
    va_end(ap);
    return st;
}

/* The unit of IDX positions: the file's bytes, or the decompressed ones. */
static const char *raw_unit(const idx_src *r)
{
    return r->gz ? "decompressed byte" : "byte";
}

/* An error at IDX byte at. */
#define RAW_FAIL(r, st, at, ...) return src_fail((r), (st), raw_unit(r), (at), __VA_ARGS__)

const char *format_idx_type_name(format_idx_type t)
{
    switch (t) {
    case FORMAT_IDX_U8: return "u8";
    case FORMAT_IDX_I8: return "i8";
    case FORMAT_IDX_I16: return "i16";
    case FORMAT_IDX_I32: return "i32";
    case FORMAT_IDX_F32: return "f32";
    case FORMAT_IDX_F64: return "f64";
    default: return "?";
    }
}

/* Bytes per element of an IDX type; 0 for an unknown code. */
static size_t type_size(int code)
{
    switch (code) {
    case FORMAT_IDX_U8:
    case FORMAT_IDX_I8: return 1;
    case FORMAT_IDX_I16: return 2;
    case FORMAT_IDX_I32:
    case FORMAT_IDX_F32: return 4;
    case FORMAT_IDX_F64: return 8;
    default: return 0;
    }
}

/* ---- the file's bytes ---- */

/* Up to n file bytes into dst (fewer only at the end). */
static tg_status in_read(idx_src *r, uint8_t *dst, size_t n, size_t *got)
{
    size_t k = 0;
    *got = 0;
    if (!r->file) {
        uint64_t left = r->in_size - r->in_pos;
        k = left < n ? (size_t)left : n;
        memcpy(dst, r->mem + r->in_pos, k);
    } else {
        if (r->lead) {
            k = r->lead < n ? r->lead : n;
            memcpy(dst, r->fs.buf + (r->fs.len - r->lead), k);
            r->lead -= k;
        }
        if (k < n) {
            size_t more = 0;
            tg_status st = format_src_read(&r->fs, dst + k, n - k, &more, r->err, r->errlen);
            if (st != TG_OK)
                return st;
            /* fs.buf's bytes are all handed out: fs.len counts the file's
             * bytes read from here on, for format_src_read's offsets. */
            r->fs.len += more;
            k += more;
        }
    }
    r->in_pos += k;
    r->in_eof = k < n;
    *got = k;
    return TG_OK;
}

/* zlib's allocations through the library's allocator. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    return (size_t)items > SIZE_MAX / (size ? size : 1) ? NULL
                                                         : tg_malloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) { tg_free(p); }

/* The next compressed bytes for inflate (only when it has none left). */
static tg_status gz_refill(idx_src *r)
{
    if (r->in_pos >= r->in_budget)
        return src_fail(r, TG_ERR_FORMAT, "file byte", r->in_pos, "more gzip data than an "
                        "IDX file of this header can take (%llu bytes read; stopped)",
                        (unsigned long long)r->in_pos);
    uint64_t room = r->in_budget - r->in_pos;
    if (!r->file) {
        uint64_t k = r->in_size - r->in_pos;
        k = k < room ? k : room;
        k = k < (1u << 30) ? k : (1u << 30);
        r->z.next_in = (Bytef *)(uintptr_t)(r->mem + r->in_pos);
        r->z.avail_in = (uInt)k;
        r->in_pos += k;
        r->in_eof = r->in_pos == r->in_size;
        return TG_OK;
    }
    size_t got;
    tg_status st = in_read(r, r->zbuf, room < IDX_CHUNK ? (size_t)room : IDX_CHUNK, &got);
    r->z.next_in = r->zbuf;
    r->z.avail_in = (uInt)got;
    return st;
}

/* The file byte inflate has reached. */
static uint64_t gz_at(const idx_src *r) { return r->in_pos - r->z.avail_in; }

/* Up to n bytes of the gzip stream's decompressed bytes (fewer only at
 * its end, after its last member's checksums were compared). */
static tg_status gz_read(idx_src *r, uint8_t *dst, size_t n, size_t *got)
{
    size_t k = 0;
    tg_status st = TG_OK;
    while (k < n && !r->raw_eof) {
        if (r->z.avail_in == 0 && !r->in_eof && (st = gz_refill(r)) != TG_OK)
            break;
        if (r->member_done) {
            if (r->z.avail_in == 0) { /* the file ends after a whole member */
                r->raw_eof = 1;
                break;
            }
            inflateReset(&r->z); /* another member follows, as gunzip reads it */
            r->member_done = 0;
        }
        size_t want = n - k < (1u << 30) ? n - k : (1u << 30);
        r->z.next_out = dst + k;
        r->z.avail_out = (uInt)want;
        int ret = inflate(&r->z, Z_NO_FLUSH);
        size_t made = want - r->z.avail_out;
        k += made;
        r->raw_pos += made;
        if (ret == Z_STREAM_END) {
            r->member_done = 1;
        } else if (ret == Z_OK || ret == Z_BUF_ERROR) {
            if (!made && r->z.avail_in == 0 && r->in_eof) {
                st = src_fail(r, TG_ERR_FORMAT, "file byte", gz_at(r), "the gzip stream is "
                              "truncated (it ends inside a member, after %llu decompressed "
                              "bytes)", (unsigned long long)r->raw_pos);
                break;
            }
            if (!made && r->z.avail_in > 0 && ret == Z_BUF_ERROR) { /* no progress */
                st = src_fail(r, TG_ERR_FORMAT, "file byte", gz_at(r), "gzip error: no "
                              "progress");
                break;
            }
        } else if (ret == Z_MEM_ERROR) {
            st = src_fail(r, TG_ERR_NOMEM, "file byte", gz_at(r), "out of memory in zlib");
            break;
        } else {
            st = src_fail(r, TG_ERR_FORMAT, "file byte", gz_at(r), "gzip error: %s",
                          ret == Z_NEED_DICT ? "the data needs a preset dictionary"
                          : r->z.msg         ? r->z.msg
                                             : "invalid data");
            break;
        }
    }
    *got = k;
    return st;
}

/* Up to n IDX bytes into dst (fewer only at the end of the file). */
static tg_status raw_read(idx_src *r, uint8_t *dst, size_t n, size_t *got)
{
    if (r->gz)
        return gz_read(r, dst, n, got);
    tg_status st = in_read(r, dst, n, got);
    r->raw_pos += *got;
    return st;
}

/* Opens r on memory (path NULL) or a file; sees whether it is gzip. */
static tg_status src_open(idx_src *r, const char *path, const void *buf, size_t len,
                          const char *name, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->fs.fd = -1;
    r->name = name;
    r->err = err;
    r->errlen = errlen;
    r->in_budget = IDX_UNKNOWN;
    const uint8_t *head;
    size_t have;
    if (path) {
        tg_status st = format_src_open(&r->fs, path, err, errlen);
        if (st != TG_OK)
            return st;
        r->file = 1;
        r->in_size = r->fs.regular ? r->fs.size : IDX_UNKNOWN;
        /* Two bytes: gzip's magic or IDX's zeros; a stream whose first
         * byte is neither is judged by it, without waiting for the second. */
        st = format_src_fill(&r->fs, 1, NULL, 0, err, errlen);
        if (st == TG_OK && r->fs.len == 1 && (r->fs.buf[0] == 0 || r->fs.buf[0] == 0x1f))
            st = format_src_fill(&r->fs, 2, NULL, 0, err, errlen);
        if (st != TG_OK)
            return st;
        head = r->fs.buf;
        have = r->fs.len;
        r->lead = have;
    } else {
        r->mem = buf;
        r->in_size = len;
        head = buf;
        have = len;
    }
    r->gz = have >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    if (!r->gz)
        return TG_OK;
    r->zbuf = r->file ? tg_malloc(IDX_CHUNK) : NULL;
    r->z.zalloc = z_alloc;
    r->z.zfree = z_free;
    int zr = r->file && !r->zbuf ? Z_MEM_ERROR : inflateInit2(&r->z, 16 + MAX_WBITS);
    if (zr != Z_OK)
        return src_fail(r, zr == Z_MEM_ERROR ? TG_ERR_NOMEM : TG_ERR_FORMAT, "file byte", 0,
                        "cannot start zlib's inflate (%s)",
                        zr == Z_MEM_ERROR ? "out of memory" : "zlib error");
    r->z_live = 1;
    r->in_budget = IDX_GZ_HEAD_BUDGET;
    return TG_OK;
}

static void src_close(idx_src *r)
{
    if (r->z_live)
        inflateEnd(&r->z);
    r->z_live = 0;
    tg_free(r->zbuf);
    r->zbuf = NULL;
    if (r->file)
        format_src_close(&r->fs);
}

/* ---- the header ---- */

/* "[60000,28,28]" */
static char *dims_str(const format_idx_info *h, char *buf, size_t len)
{
    graph_type t = {GRAPH_F32, h->ndim, {0}};
    memcpy(t.dim, h->dim, sizeof t.dim);
    return graph_shape_str(&t, buf, len);
}

/* The magic, type, ndim and dims, checked; *data_bytes gets the data's size. */
static tg_status read_header(idx_src *r, format_idx_info *h, uint64_t *data_bytes)
{
    uint8_t b[4 * GRAPH_MAX_DIMS];
    size_t got;
    tg_status st = raw_read(r, b, 4, &got);
    if (st != TG_OK)
        return st;
    if ((got >= 1 && b[0] != 0) || (got >= 2 && b[1] != 0)) {
        char hex[16] = "";
        for (size_t i = 0, k = 0; i < got; i++)
            k += (size_t)snprintf(hex + k, sizeof hex - k, "%s%02x", i ? " " : "", b[i]);
        RAW_FAIL(r, TG_ERR_FORMAT, 0, "not an IDX file (bad magic %s: an IDX file starts "
                 "with 00 00, its element type and ndim; a gzip file with 1f 8b)", hex);
    }
    if (got < 4)
        RAW_FAIL(r, TG_ERR_FORMAT, got, "%zu bytes, too short for an IDX file (a header "
                 "is at least 8)", got);
    if (!type_size(b[2]))
        RAW_FAIL(r, TG_ERR_FORMAT, 2, "unknown IDX element type 0x%02x (IDX has 0x08 u8, "
                 "0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)", b[2]);
    h->type = (format_idx_type)b[2];
    if (b[3] == 0)
        RAW_FAIL(r, TG_ERR_FORMAT, 3, "0 dims (an IDX array has at least 1)");
    if (b[3] > GRAPH_MAX_DIMS)
        RAW_FAIL(r, TG_ERR_UNSUPPORTED, 3, "%u dims, more than the %d tracegraph holds", b[3],
                 GRAPH_MAX_DIMS);
    h->ndim = b[3];
    size_t dlen = 4 * (size_t)h->ndim;
    st = raw_read(r, b, dlen, &got);
    if (st != TG_OK)
        return st;
    if (got < dlen)
        RAW_FAIL(r, TG_ERR_FORMAT, 4 + got, "the file ends inside the dims (%d dims take %zu "
                 "bytes)", h->ndim, dlen);
    graph_type t = {GRAPH_F32, h->ndim, {0}};
    for (int d = 0; d < h->ndim; d++)
        h->dim[d] = t.dim[d] = (int64_t)((uint32_t)b[4 * d] << 24 | (uint32_t)b[4 * d + 1] << 16 |
                                         (uint32_t)b[4 * d + 2] << 8 | b[4 * d + 3]);
    char ds[GRAPH_MAX_DIMS * 12 + 8];
    /* The size cap every layer shares (dtype.h); then no size below wraps. */
    if (graph_type_check(&t, NULL, 0) != TG_OK)
        RAW_FAIL(r, TG_ERR_FORMAT, 4, "dims %s are too large (more than 2^40 elements, a 0 "
                 "dim counted as 1)", dims_str(h, ds, sizeof ds));
    *data_bytes = (uint64_t)graph_type_numel(&t) * type_size(h->type);
    h->idx_bytes = 4 + dlen + *data_bytes;
    return TG_OK;
}

/* The data's size against what the file can hold, before anything is
 * allocated. */
static tg_status check_size(idx_src *r, const format_idx_info *h, uint64_t data_bytes)
{
    char ds[GRAPH_MAX_DIMS * 12 + 8];
    uint64_t hlen = 4 + 4 * (uint64_t)h->ndim;
    if (r->gz) {
        /* Pipes too: no more compressed bytes than any encoder needs for
         * this much data (stored blocks, incompressible literals). */
        r->in_budget = h->idx_bytes + h->idx_bytes / 4 + IDX_GZ_HEAD_BUDGET;
        if (r->in_size != IDX_UNKNOWN && r->in_size < UINT64_MAX / (2 * IDX_GZ_RATIO) &&
            h->idx_bytes > r->in_size * IDX_GZ_RATIO + IDX_GZ_SLACK)
            RAW_FAIL(r, TG_ERR_FORMAT, 4, "dims %s of %s need %llu bytes, more than %llu "
                     "bytes of gzip data can hold (deflate expands at most %d:1)",
                     dims_str(h, ds, sizeof ds), format_idx_type_name(h->type),
                     (unsigned long long)h->idx_bytes, (unsigned long long)r->in_size,
                     IDX_GZ_RATIO);
        return TG_OK;
    }
    if (r->in_size == IDX_UNKNOWN)
        return TG_OK;
    uint64_t have = r->in_size > hlen ? r->in_size - hlen : 0; /* (a file that shrank) */
    if (data_bytes > have)
        RAW_FAIL(r, TG_ERR_FORMAT, hlen, "the data is truncated: %s of %s needs %llu bytes, "
                 "the file has %llu", dims_str(h, ds, sizeof ds),
                 format_idx_type_name(h->type), (unsigned long long)data_bytes,
                 (unsigned long long)have);
    if (data_bytes < have)
        RAW_FAIL(r, TG_ERR_FORMAT, hlen + data_bytes, "%llu unexpected bytes after the data "
                 "(%s of %s is %llu bytes)", (unsigned long long)(have - data_bytes),
                 dims_str(h, ds, sizeof ds), format_idx_type_name(h->type),
                 (unsigned long long)data_bytes);
    return TG_OK;
}

/* ---- the data ---- */

static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Element i of in (big-endian) of an integer type as int64_t. */
static inline int64_t int_at(int code, const uint8_t *in, size_t i)
{
    switch (code) {
    case FORMAT_IDX_U8: return in[i];
    case FORMAT_IDX_I8: return (int8_t)in[i];
    case FORMAT_IDX_I16: return (int16_t)(uint16_t)(in[2 * i] << 8 | in[2 * i + 1]);
    default: return (int32_t)be32(in + 4 * i);
    }
}

/*
 * n elements of IDX type code from in (big-endian) into out as conv
 * (IDX_TO_F32, _I64 or _I32; check_conv let only integers reach the
 * integer dtypes).  The switch is outside the loops, each of which the
 * compiler vectorizes; f32 elements keep their bits (a NaN's payload too).
 */
static void convert(int code, idx_conv conv, const uint8_t *in, size_t n, void *out)
{
    float *f = out;
    int64_t *l = out;
    int32_t *w = out;
    if (code == FORMAT_IDX_F32) {
        uint32_t *u = out;
        for (size_t i = 0; i < n; i++)
            u[i] = be32(in + 4 * i);
    } else if (code == FORMAT_IDX_F64) {
        for (size_t i = 0; i < n; i++) {
            uint64_t u = (uint64_t)be32(in + 8 * i) << 32 | be32(in + 8 * i + 4);
            double x;
            memcpy(&x, &u, 8);
            f[i] = (float)x; /* rounded to nearest */
        }
    } else if (conv == IDX_TO_F32 && code == FORMAT_IDX_U8) {
        for (size_t i = 0; i < n; i++)
            f[i] = in[i];
    } else if (conv == IDX_TO_F32) {
        for (size_t i = 0; i < n; i++)
            f[i] = (float)int_at(code, in, i);
    } else if (conv == IDX_TO_I64) {
        for (size_t i = 0; i < n; i++)
            l[i] = int_at(code, in, i);
    } else {
        for (size_t i = 0; i < n; i++)
            w[i] = (int32_t)int_at(code, in, i);
    }
}

/* The bytes one element takes once converted. */
static size_t conv_size(idx_conv conv, int code)
{
    switch (conv) {
    case IDX_TO_NONE: return 0;
    case IDX_TO_BYTES: return 1;
    case IDX_TO_I64: return 8;
    default: return 4;
    }
}

/* Whether the file's type converts as asked. */
static tg_status check_conv(idx_src *r, const format_idx_info *h, idx_conv conv)
{
    int code = h->type;
    int isint = code != FORMAT_IDX_F32 && code != FORMAT_IDX_F64;
    if ((conv == IDX_TO_I64 || conv == IDX_TO_I32) && !isint)
        RAW_FAIL(r, TG_ERR_UNSUPPORTED, 2, "elements of type %s do not load as %s (an integer "
                 "dtype takes u8, i8, i16 or i32 elements; load floats as f32)",
                 format_idx_type_name(h->type), conv == IDX_TO_I64 ? "i64" : "i32");
    if ((conv == IDX_TO_F32_SCALED || conv == IDX_TO_BYTES) && code != FORMAT_IDX_U8)
        RAW_FAIL(r, TG_ERR_UNSUPPORTED, 2, "elements of type %s, where u8 is needed%s",
                 format_idx_type_name(h->type),
                 conv == IDX_TO_F32_SCALED ? " (FORMAT_IDX_SCALE maps bytes 0..255 to [0,1])"
                                           : "");
    return TG_OK;
}

/* A 64-byte aligned buffer of n bytes (at least 64: never NULL for 0). */
static void *alloc_out(size_t n)
{
    size_t r = n < IDX_ALIGN ? IDX_ALIGN : n;
    if (r > SIZE_MAX - IDX_ALIGN)
        return NULL;
    return tg_aligned_alloc(IDX_ALIGN, (r + IDX_ALIGN - 1) & ~(size_t)(IDX_ALIGN - 1));
}

/*
 * The whole file: header, size checks, data (converted into *out, a
 * 64-byte aligned buffer of the converted size, unless conv is
 * IDX_TO_NONE), then its end.  *h gets the header.
 */
static tg_status read_idx(idx_src *r, idx_conv conv, format_idx_info *h, void **out)
{
    uint64_t data_bytes = 0;
    char ds[GRAPH_MAX_DIMS * 12 + 8];
    memset(h, 0, sizeof *h);
    *out = NULL;
    tg_status st = read_header(r, h, &data_bytes);
    if (st == TG_OK)
        st = check_conv(r, h, conv);
    if (st == TG_OK)
        st = check_size(r, h, data_bytes);
    if (st != TG_OK)
        return st;
    h->gzip = r->gz;
    size_t es = type_size(h->type), os = conv_size(conv, h->type);
    uint64_t numel = data_bytes / es, hlen = h->idx_bytes - data_bytes;
    /* The output: at once where the file's plain bytes were counted,
     * otherwise grown as the bytes arrive (from 1 MiB or 8x the compressed
     * size, doubling) up to the header's size. */
    size_t total = (size_t)numel * os, cap = total;
    if (r->gz || r->in_size == IDX_UNKNOWN) {
        uint64_t guess = r->in_size != IDX_UNKNOWN && r->in_size < (1ull << 40)
                             ? 8 * r->in_size * os
                             : 0;
        guess = guess > (1u << 20) ? guess : (1u << 20);
        cap = guess < total ? (size_t)guess : total;
    }
    uint8_t *dst = NULL, *chunk = NULL;
    if (conv != IDX_TO_NONE && !(dst = alloc_out(cap)))
        return src_fail(r, TG_ERR_NOMEM, raw_unit(r), hlen, "out of memory for %zu bytes of "
                        "data", cap);
    /* Plain bytes kept as they are go straight into the output. */
    int direct = conv == IDX_TO_BYTES && es == 1;
    if (!direct && !(chunk = tg_malloc(IDX_CHUNK))) {
        tg_free(dst);
        return src_fail(r, TG_ERR_NOMEM, raw_unit(r), hlen, "out of memory");
    }
    uint64_t done = 0; /* elements read */
    while (st == TG_OK && done < numel) {
        uint64_t left = numel - done;
        size_t n = left < IDX_CHUNK / es ? (size_t)left : IDX_CHUNK / es;
        if (conv != IDX_TO_NONE && (done + n) * os > cap) {
            size_t ncap = cap <= total / 2 ? cap * 2 : total;
            uint8_t *nd = alloc_out(ncap);
            if (!nd) {
                st = src_fail(r, TG_ERR_NOMEM, raw_unit(r), r->raw_pos, "out of memory for "
                              "%zu bytes of data", ncap);
                break;
            }
            memcpy(nd, dst, (size_t)done * os);
            tg_free(dst);
            dst = nd;
            cap = ncap;
        }
        uint8_t *in = direct ? dst + done : chunk;
        size_t got;
        st = raw_read(r, in, n * es, &got);
        if (st == TG_OK && got < n * es)
            st = src_fail(r, TG_ERR_FORMAT, raw_unit(r), r->raw_pos, "the data is truncated: "
                          "%s of %s needs %llu bytes, the %s has %llu",
                          dims_str(h, ds, sizeof ds), format_idx_type_name(h->type),
                          (unsigned long long)data_bytes, r->gz ? "gzip stream" : "file",
                          (unsigned long long)(r->raw_pos - hlen));
        if (st != TG_OK)
            break;
        if (conv == IDX_TO_F32_SCALED) {
            float *f = (float *)dst + done;
            for (size_t i = 0; i < n; i++)
                f[i] = (float)in[i] / 255.0f; /* ToTensor's img.float().div(255) */
        } else if (conv != IDX_TO_NONE && !direct) {
            convert(h->type, conv, in, n, dst + (size_t)done * os);
        }
        done += n;
    }
    /* The end: nothing after the data (a gzip stream's checksums compared). */
    if (st == TG_OK) {
        uint8_t extra;
        size_t got;
        uint64_t at = r->raw_pos;
        st = raw_read(r, &extra, 1, &got);
        if (st == TG_OK && got)
            st = src_fail(r, TG_ERR_FORMAT, raw_unit(r), at, "unexpected bytes after the data "
                          "(%s of %s is %llu bytes)", dims_str(h, ds, sizeof ds),
                          format_idx_type_name(h->type), (unsigned long long)data_bytes);
    }
    tg_free(chunk);
    if (st != TG_OK) {
        tg_free(dst);
        return st;
    }
    h->file_bytes = r->in_pos;
    *out = dst;
    return TG_OK;
}

/* Opens and reads path (or buf, len), closing it whatever happens. */
static tg_status read_any(const char *path, const void *buf, size_t len, const char *name,
                          idx_conv conv, format_idx_info *h, void **out, char *err,
                          size_t errlen)
{
    idx_src r;
    tg_status st = src_open(&r, path, buf, len, name, err, errlen);
    if (st == TG_OK)
        st = read_idx(&r, conv, h, out);
    src_close(&r);
    return st;
}

/* The conversion for dt and flags; TG_ERR_ARG for others. */
static tg_status pick_conv(graph_dtype dt, unsigned flags, const char *name, idx_conv *conv,
                           char *err, size_t errlen)
{
    if (flags & ~FORMAT_IDX_SCALE)
        TG_FAIL(TG_ERR_ARG, "%s: unknown flags 0x%x (FORMAT_IDX_SCALE is the only one)", name,
                flags);
    if ((flags & FORMAT_IDX_SCALE) && dt != GRAPH_F32)
        TG_FAIL(TG_ERR_ARG, "%s: FORMAT_IDX_SCALE makes f32, not %s", name,
                graph_dtype_name(dt));
    if (dt == GRAPH_F32)
        *conv = flags & FORMAT_IDX_SCALE ? IDX_TO_F32_SCALED : IDX_TO_F32;
    else if (dt == GRAPH_I64)
        *conv = IDX_TO_I64;
    else if (dt == GRAPH_I32)
        *conv = IDX_TO_I32;
    else
        TG_FAIL(TG_ERR_ARG, "%s: an IDX file loads as f32, i64 or i32, not %s", name,
                graph_dtype_name(dt));
    return TG_OK;
}

static tg_status load(const char *path, const void *buf, size_t len, const char *name,
                      graph_dtype dt, unsigned flags, graph_type *type, void **data, char *err,
                      size_t errlen)
{
    if (!type || !data)
        TG_FAIL(TG_ERR_NULL, "%s: no place for the type or the data", name);
    *data = NULL;
    idx_conv conv;
    tg_status st = pick_conv(dt, flags, name, &conv, err, errlen);
    if (st != TG_OK)
        return st;
    format_idx_info h;
    st = read_any(path, buf, len, name, conv, &h, data, err, errlen);
    if (st != TG_OK)
        return st;
    memset(type, 0, sizeof *type);
    type->dtype = dt;
    type->ndim = h.ndim;
    memcpy(type->dim, h.dim, sizeof type->dim);
    return TG_OK;
}

tg_status format_idx_load(const char *path, graph_dtype dt, unsigned flags, graph_type *type,
                          void **data, char *err, size_t errlen)
{
    if (!path) {
        if (data)
            *data = NULL;
        TG_FAIL(TG_ERR_NULL, "no path given");
    }
    return load(path, NULL, 0, path, dt, flags, type, data, err, errlen);
}

tg_status format_idx_load_mem(const void *buf, size_t len, const char *name, graph_dtype dt,
                              unsigned flags, graph_type *type, void **data, char *err,
                              size_t errlen)
{
    name = name ? name : "<memory>";
    if (!buf && len) {
        if (data)
            *data = NULL;
        TG_FAIL(TG_ERR_NULL, "%s: no buffer", name);
    }
    static const uint8_t none[1];
    return load(NULL, buf ? buf : none, len, name, dt, flags, type, data, err, errlen);
}

tg_status format_idx_inspect(const char *path, format_idx_info *info, char *err,
                             size_t errlen)
{
    if (!path || !info)
        TG_FAIL(TG_ERR_NULL, "%s: no path or no place for the info", path ? path : "idx");
    void *none;
    return read_any(path, NULL, 0, path, IDX_TO_NONE, info, &none, err, errlen);
}

tg_status format_idx_inspect_mem(const void *buf, size_t len, const char *name,
                                 format_idx_info *info, char *err, size_t errlen)
{
    name = name ? name : "<memory>";
    if (!info || (!buf && len))
        TG_FAIL(TG_ERR_NULL, "%s: no buffer or no place for the info", name);
    static const uint8_t none[1];
    void *out;
    return read_any(NULL, buf ? buf : none, len, name, IDX_TO_NONE, info, &out, err, errlen);
}

/* ---- the dataset ---- */

struct format_idx_dataset {
    int64_t count, rows, cols;
    uint8_t *images; /* count * rows * cols */
    uint8_t *labels; /* count */
};

void format_idx_dataset_free(format_idx_dataset *ds)
{
    if (!ds)
        return;
    tg_free(ds->images);
    tg_free(ds->labels);
    tg_free(ds);
}

/* "byte" or "decompressed byte", as the file's own messages say. */
static const char *unit_of(const format_idx_info *h)
{
    return h->gzip ? "decompressed byte" : "byte";
}

tg_status format_idx_dataset_load(const char *images, const char *labels, int64_t classes,
                                  format_idx_dataset **ds, char *err, size_t errlen)
{
    if (!ds)
        TG_FAIL(TG_ERR_NULL, "idx dataset: no place for the dataset");
    *ds = NULL;
    if (!images || !labels)
        TG_FAIL(TG_ERR_NULL, "idx dataset: no %s file given", images ? "labels" : "images");
    if (classes < 0)
        TG_FAIL(TG_ERR_ARG, "idx dataset: classes is %lld (0 checks no label)",
                (long long)classes);
    format_idx_info hi, hl;
    void *img = NULL, *lab = NULL;
    tg_status st = read_any(images, NULL, 0, images, IDX_TO_BYTES, &hi, &img, err, errlen);
    char ds_[GRAPH_MAX_DIMS * 12 + 8];
    if (st == TG_OK && hi.ndim != 3)
        st = tg_fail(TG_ERR_FORMAT, err, errlen, "%s: at %s 3: images must have 3 dims "
                     "[count,rows,cols], this file has %d: %s", images, unit_of(&hi), hi.ndim,
                     dims_str(&hi, ds_, sizeof ds_));
    if (st == TG_OK)
        st = read_any(labels, NULL, 0, labels, IDX_TO_BYTES, &hl, &lab, err, errlen);
    if (st == TG_OK && hl.ndim != 1)
        st = tg_fail(TG_ERR_FORMAT, err, errlen, "%s: at %s 3: labels must have 1 dim "
                     "[count], this file has %d: %s", labels, unit_of(&hl), hl.ndim,
                     dims_str(&hl, ds_, sizeof ds_));
    if (st == TG_OK && hl.dim[0] != hi.dim[0])
        st = tg_fail(TG_ERR_FORMAT, err, errlen, "%s: at %s 4: %lld labels for the %lld images "
                     "of %s", labels, unit_of(&hl), (long long)hl.dim[0], (long long)hi.dim[0],
                     images);
    for (int64_t i = 0; st == TG_OK && classes > 0 && i < hl.dim[0]; i++)
        if (((uint8_t *)lab)[i] >= classes)
            st = tg_fail(TG_ERR_FORMAT, err, errlen, "%s: at %s %lld: label %lld is %u, "
                         "outside 0..%lld", labels, unit_of(&hl), (long long)(8 + i),
                         (long long)i, ((uint8_t *)lab)[i], (long long)(classes - 1));
    format_idx_dataset *d = NULL;
    if (st == TG_OK && !(d = tg_malloc(sizeof *d)))
        st = tg_fail(TG_ERR_NOMEM, err, errlen, "idx dataset: out of memory");
    if (st != TG_OK) {
        tg_free(img);
        tg_free(lab);
        return st;
    }
    d->count = hi.dim[0];
    d->rows = hi.dim[1];
    d->cols = hi.dim[2];
    d->images = img;
    d->labels = lab;
    *ds = d;
    return TG_OK;
}

/* DIR/SPLIT-KIND-idxN-ubyte, with ".gz" if that exists, else without;
 * 0 when neither exists (both names in *tried). */
static int find_file(const char *dir, const char *split, const char *kind, char *out,
                     size_t len, char *tried, size_t tlen)
{
    struct stat sb;
    snprintf(out, len, "%s/%s-%s.gz", dir, split, kind);
    if (stat(out, &sb) == 0)
        return 1;
    snprintf(tried, tlen, "%s nor ", out);
    snprintf(out, len, "%s/%s-%s", dir, split, kind);
    size_t k = strlen(tried);
    snprintf(tried + k, tlen - k, "%s", out);
    return stat(out, &sb) == 0;
}

tg_status format_idx_dataset_load_dir(const char *dir, const char *split, int64_t classes,
                                      format_idx_dataset **ds, char *err, size_t errlen)
{
    if (ds)
        *ds = NULL;
    if (!dir || !split)
        TG_FAIL(TG_ERR_NULL, "idx dataset: no %s given", dir ? "split" : "directory");
    size_t n = strlen(dir) + strlen(split) + 40;
    char *im = tg_malloc(n), *lb = tg_malloc(n), *tried = tg_malloc(2 * n + 8);
    tg_status st = TG_OK;
    if (!im || !lb || !tried)
        st = tg_fail(TG_ERR_NOMEM, err, errlen, "idx dataset: out of memory");
    const char *fix = strcmp(dir, FORMAT_IDX_FASHION_MNIST) == 0
                          ? " (Debian: apt-get install dataset-fashion-mnist)"
                          : "";
    if (st == TG_OK && !find_file(dir, split, "images-idx3-ubyte", im, n, tried, 2 * n + 8))
        st = tg_fail(TG_ERR_IO, err, errlen, "%s: no %s images: neither %s exists%s", dir,
                     split, tried, fix);
    if (st == TG_OK && !find_file(dir, split, "labels-idx1-ubyte", lb, n, tried, 2 * n + 8))
        st = tg_fail(TG_ERR_IO, err, errlen, "%s: no %s labels: neither %s exists%s", dir,
                     split, tried, fix);
    if (st == TG_OK)
        st = format_idx_dataset_load(im, lb, classes, ds, err, errlen);
    tg_free(im);
    tg_free(lb);
    tg_free(tried);
    return st;
}

int64_t format_idx_dataset_count(const format_idx_dataset *ds)
{
    return ds ? ds->count : 0;
}

void format_idx_dataset_shape(const format_idx_dataset *ds, int64_t *rows, int64_t *cols)
{
    if (rows)
        *rows = ds ? ds->rows : 0;
    if (cols)
        *cols = ds ? ds->cols : 0;
}

tg_status format_idx_dataset_batch(const format_idx_dataset *ds, const int64_t *indices,
                                   int64_t n, float *images, int64_t *labels, char *err,
                                   size_t errlen)
{
    if (!ds)
        TG_FAIL(TG_ERR_NULL, "idx batch: no dataset");
    if (n < 0)
        TG_FAIL(TG_ERR_ARG, "idx batch: %lld images asked for", (long long)n);
    if (n > 0 && !indices)
        TG_FAIL(TG_ERR_NULL, "idx batch: no indices");
    for (int64_t i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= ds->count)
            TG_FAIL(TG_ERR_ARG, "idx batch: index %lld of the batch is %lld, the dataset has "
                    "%lld images", (long long)i, (long long)indices[i], (long long)ds->count);
    size_t px = (size_t)(ds->rows * ds->cols);
    for (int64_t i = 0; i < n; i++) {
        if (images) {
            const uint8_t *src = ds->images + (size_t)indices[i] * px;
            float *dst = images + (size_t)i * px;
            for (size_t j = 0; j < px; j++)
                dst[j] = (float)src[j] / 255.0f;
        }
        if (labels)
            labels[i] = ds->labels[indices[i]];
    }
    return TG_OK;
}
