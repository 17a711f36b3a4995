/*
 * npy.c - NumPy .npy reading and writing (see npy.h for the format and
 * the rules).
 *
 * The header is a Python dict literal.  Rather than a general literal
 * evaluator, a small parser accepts exactly the shape of dict NumPy
 * writes: the keys 'descr' (a string), 'fortran_order' (True/False) and
 * 'shape' (a tuple of non-negative ints, Python 2's 'L' suffix allowed),
 * each once, in any order, with Python's optional trailing commas, and
 * nothing but whitespace after the closing brace.  Every read is bounded
 * by the header length, itself checked against the file size.
 */
#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "npy.h"
#include "file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* NumPy's GROWTH_AXIS_MAX_DIGITS: spare header room for appending rows. */
#define NPY_GROWTH_DIGITS 21
/* The longest header read (NumPy's own reader allows 10000 bytes): a
 * pipe's declared header length is read only up to this. */
#define NPY_HEADER_MAX 65536
/* Longest descr or key we keep for comparison and messages. */
#define NPY_TOKEN_MAX 40

const char *format_npy_descr(graph_dtype dt)
{
    switch (dt) {
    case GRAPH_F32: return "<f4";
    case GRAPH_I64: return "<i8";
    case GRAPH_I32: return "<i4";
    case GRAPH_BOOL: return "|b1";
    default: return "?";
    }
}

/* ---- the header parser ---- */

typedef struct parser {
    const uint8_t *p; /* the header's bytes */
    size_t n;
    size_t base; /* file offset of p[0] */
    size_t pos;
    int fortran;       /* fortran_order was True ... */
    size_t fortran_at; /* ... at this offset */
    const char *name;
    char *err;
    size_t errlen;
} parser;

static tg_status perr(parser *ps, tg_status st, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tg_status perr(parser *ps, tg_status st, size_t at, const char *fmt, ...)
{
    tg_errpos where = {.file = ps->name, .unit = "byte", .offset = ps->base + at};
    va_list ap;
    va_start(ap, fmt);
    st = tg_vfail_at(st, ps->err, ps->errlen, &where, fmt, ap);
    va_end(ap);
    return st;
}

/* Copies s into out with anything unprintable as '?' (file text in messages). */
static const char *clean(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    out[i] = '\0';
    return out;
}

static void skip_ws(parser *ps)
{
    while (ps->pos < ps->n && (ps->p[ps->pos] == ' ' || ps->p[ps->pos] == '\t' ||
                               ps->p[ps->pos] == '\n' || ps->p[ps->pos] == '\r'))
        ps->pos++;
}

/* The next non-blank byte, or -1 at the end of the header. */
static int peek(parser *ps)
{
    skip_ws(ps);
    return ps->pos < ps->n ? ps->p[ps->pos] : -1;
}

static tg_status expect(parser *ps, char c, const char *what)
{
    int got = peek(ps);
    if (got == c) {
        ps->pos++;
        return TG_OK;
    }
    if (got < 0)
        return perr(ps, TG_ERR_FORMAT, ps->pos, "the header ends where %s was expected", what);
    return perr(ps, TG_ERR_FORMAT, ps->pos, "expected %s, found '%c'", what,
                got >= 0x20 && got < 0x7f ? got : '?');
}

/*
 * A quoted string ('...' or "...", no escapes) into out; longer strings
 * are cut at NPY_TOKEN_MAX with "..." (they never match a known word).
 */
static tg_status parse_string(parser *ps, char out[NPY_TOKEN_MAX + 4], const char *what)
{
    int q = peek(ps);
    if (q != '\'' && q != '"') {
        if (q == '[' && strcmp(what, "the dtype") == 0)
            return perr(ps, TG_ERR_UNSUPPORTED, ps->pos,
                        "structured dtypes (a list of fields) are not supported");
        return q < 0 ? perr(ps, TG_ERR_FORMAT, ps->pos, "the header ends where %s was "
                            "expected", what)
                     : perr(ps, TG_ERR_FORMAT, ps->pos, "%s must be a quoted string", what);
    }
    size_t start = ++ps->pos, k = 0;
    /* A newline ends the line, and so an unterminated string (as in Python). */
    while (ps->pos < ps->n && ps->p[ps->pos] != q && ps->p[ps->pos] != '\n') {
        if (ps->p[ps->pos] == '\\')
            return perr(ps, TG_ERR_FORMAT, ps->pos, "escape sequences are not supported in "
                        "%s", what);
        /* NumPy writes printable ASCII; a NUL would end the C string early
         * ('<f4\0junk' read as '<f4'). */
        if (ps->p[ps->pos] < 0x20 || ps->p[ps->pos] == 0x7f)
            return perr(ps, TG_ERR_FORMAT, ps->pos, "byte 0x%02x inside %s (a header string "
                        "holds printable characters only)", ps->p[ps->pos], what);
        if (k < NPY_TOKEN_MAX)
            out[k++] = (char)ps->p[ps->pos];
        ps->pos++;
    }
    if (ps->pos >= ps->n || ps->p[ps->pos] != q)
        return perr(ps, TG_ERR_FORMAT, start - 1, "unterminated string");
    if (ps->pos - start > NPY_TOKEN_MAX)
        memcpy(out + k, "...", 3), k += 3;
    out[k] = '\0';
    ps->pos++;
    return TG_OK;
}

static tg_status parse_bool(parser *ps, int *v)
{
    peek(ps);
    size_t left = ps->n - ps->pos;
    if (left >= 4 && memcmp(ps->p + ps->pos, "True", 4) == 0) {
        *v = 1;
        ps->pos += 4;
    } else if (left >= 5 && memcmp(ps->p + ps->pos, "False", 5) == 0) {
        *v = 0;
        ps->pos += 5;
    } else {
        return perr(ps, TG_ERR_FORMAT, ps->pos, "'fortran_order' must be True or False");
    }
    return TG_OK;
}

/* One dim: decimal digits, an optional Python 2 'L'; fits in int64. */
static tg_status parse_dim(parser *ps, int64_t *v)
{
    size_t at = ps->pos;
    if (ps->pos >= ps->n || ps->p[ps->pos] < '0' || ps->p[ps->pos] > '9')
        return perr(ps, TG_ERR_FORMAT, at, "a shape entry must be a non-negative integer");
    int64_t x = 0;
    while (ps->pos < ps->n && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9') {
        int d = ps->p[ps->pos++] - '0';
        if (x > (INT64_MAX - d) / 10)
            return perr(ps, TG_ERR_FORMAT, at, "a shape entry is too large");
        x = x * 10 + d;
    }
    if (ps->pos < ps->n && ps->p[ps->pos] == 'L')
        ps->pos++;
    *v = x;
    return TG_OK;
}

/* A tuple: () or (a,) or (a, b[, ...][,]); a 1-tuple needs its comma. */
static tg_status parse_shape(parser *ps, graph_type *t)
{
    tg_status st = expect(ps, '(', "'(' opening the shape");
    t->ndim = 0;
    for (int commas = 0; st == TG_OK;) {
        if (peek(ps) == ')') {
            if (t->ndim == 1 && !commas)
                return perr(ps, TG_ERR_FORMAT, ps->pos, "a 1-element shape needs a "
                            "trailing comma: (%lld,)", (long long)t->dim[0]);
            ps->pos++;
            return TG_OK;
        }
        if (t->ndim > 0 && commas < t->ndim)
            return expect(ps, ',', "',' or ')' in the shape");
        if (t->ndim == GRAPH_MAX_DIMS)
            return perr(ps, TG_ERR_UNSUPPORTED, ps->pos, "the shape has more than %d dims",
                        GRAPH_MAX_DIMS);
        st = parse_dim(ps, &t->dim[t->ndim]);
        if (st != TG_OK)
            return st;
        t->ndim++;
        if (peek(ps) == ',') {
            ps->pos++;
            commas++;
        }
    }
    return st;
}

/* '<f4' -> f32 etc.; anything else is refused with a hint. */
static tg_status map_descr(parser *ps, const char *d, size_t at, graph_dtype *dt)
{
    for (int k = 0; k < GRAPH_DTYPE_COUNT; k++)
        if (strcmp(d, format_npy_descr((graph_dtype)k)) == 0) {
            *dt = (graph_dtype)k;
            return TG_OK;
        }
    static const struct { const char *d, *say; } known[] = {
        {"<f8", "float64"}, {"<f2", "float16"}, {"|u1", "uint8"}, {"|i1", "int8"},
        {"<i2", "int16"}, {"<u2", "uint16"}, {"<u4", "uint32"}, {"<u8", "uint64"},
        {"<c8", "complex64"}, {"<c16", "complex128"}, {"|O", "object"}};
    char c[NPY_TOKEN_MAX + 8];
    clean(d, c, sizeof c);
    const char *say = NULL;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        if (strcmp(d, known[k].d) == 0)
            say = known[k].say;
    if (!say && d[0] == '>')
        say = "big-endian";
    if (say)
        return perr(ps, TG_ERR_UNSUPPORTED, at, "dtype '%s' (%s) is not supported: tracegraph "
                    "reads '<f4' (f32), '<i8' (i64), '<i4' (i32) and '|b1' (bool); convert "
                    "with a.astype(...), e.g. np.float32", c, say);
    return perr(ps, TG_ERR_UNSUPPORTED, at, "unknown dtype '%s': tracegraph reads '<f4' "
                "(f32), '<i8' (i64), '<i4' (i32) and '|b1' (bool)", c);
}

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

/* One "'key': value" entry of the dict. */
static tg_status parse_entry(parser *ps, unsigned *seen, graph_type *t)
{
    char key[NPY_TOKEN_MAX + 4], c[NPY_TOKEN_MAX + 8];
    peek(ps);
    size_t at = ps->pos;
    tg_status st = parse_string(ps, key, "a key");
    if (st == TG_OK)
        st = expect(ps, ':', "':' after a key");
    if (st != TG_OK)
        return st;
    unsigned k = strcmp(key, "descr") == 0           ? KEY_DESCR
                 : strcmp(key, "fortran_order") == 0 ? KEY_FORTRAN
                 : strcmp(key, "shape") == 0         ? KEY_SHAPE
                                                     : 0;
    if (!k)
        return perr(ps, TG_ERR_FORMAT, at, "unknown key '%s' (a .npy header has 'descr', "
                    "'fortran_order' and 'shape')", clean(key, c, sizeof c));
    if (*seen & k)
        return perr(ps, TG_ERR_FORMAT, at, "key '%s' appears twice", key);
    *seen |= k;
    if (k == KEY_SHAPE)
        return parse_shape(ps, t);
    if (k == KEY_FORTRAN) {
        peek(ps);
        ps->fortran_at = ps->pos;
        return parse_bool(ps, &ps->fortran);
    }
    char d[NPY_TOKEN_MAX + 4];
    peek(ps);
    size_t vat = ps->pos;
    st = parse_string(ps, d, "the dtype");
    return st == TG_OK ? map_descr(ps, d, vat, &t->dtype) : st;
}

/* The whole header: the dict, then only blanks. */
static tg_status parse_dict(parser *ps, graph_type *t)
{
    unsigned seen = 0;
    tg_status st = expect(ps, '{', "'{' opening the header dict");
    while (st == TG_OK && peek(ps) != '}') {
        st = parse_entry(ps, &seen, t);
        if (st == TG_OK && peek(ps) != '}')
            st = expect(ps, ',', "',' or '}' after a header entry");
    }
    if (st != TG_OK)
        return st;
    ps->pos++;
    if (peek(ps) >= 0)
        return perr(ps, TG_ERR_FORMAT, ps->pos, "unexpected bytes after the header dict");
    static const char *names[] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; i++)
        if (!(seen >> i & 1))
            return perr(ps, TG_ERR_FORMAT, 0, "the header has no '%s'", names[i]);
    /* With at most one dim above 1, Fortran and C order are the same bytes. */
    int big = 0;
    for (int d = 0; d < t->ndim; d++)
        big += t->dim[d] > 1;
    if (ps->fortran && big > 1)
        return perr(ps, TG_ERR_UNSUPPORTED, ps->fortran_at, "fortran_order is True: only "
                    "C-order arrays are supported (save np.ascontiguousarray(a))");
    return TG_OK;
}

/* "(2, 3)" as NumPy writes a shape. */
static char *shape_repr(const graph_type *t, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < t->ndim && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)t->dim[d]);
    if (k < len)
        snprintf(buf + k, len - k, t->ndim == 1 ? ",)" : ")");
    return buf;
}

/* ---- the container ---- */

/* The length of a stream, not known until its end. */
#define NPY_STREAM UINT64_MAX

typedef struct layout {
    size_t hstart, hlen; /* the header's bytes */
    size_t data_off, nbytes;
} layout;

/* Magic, version and header length from the first avail bytes of a flen-byte file. */
static tg_status parse_prefix(const uint8_t *b, size_t avail, uint64_t flen,
                              const char *name, layout *lay, char *err, size_t errlen)
{
    size_t m = avail < NPY_MAGIC_LEN ? avail : NPY_MAGIC_LEN;
    if (m && memcmp(b, NPY_MAGIC, m) != 0)
        TG_FAIL(TG_ERR_FORMAT, "%s: not a .npy file (bad magic)", name);
    if (avail < NPY_MAGIC_LEN)
        TG_FAIL(TG_ERR_FORMAT, "%s: %zu bytes, too short for a .npy file", name, avail);
    if (avail < 8)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte %zu: the file ends inside the version", name,
                avail);
    unsigned major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0)
        TG_FAIL(TG_ERR_UNSUPPORTED, "%s: at byte 6: .npy format version %u.%u is not "
                "supported (this build reads 1.0, 2.0 and 3.0)", name, major, minor);
    size_t lensz = major == 1 ? 2 : 4;
    if (avail < 8 + lensz)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte %zu: the file ends inside the header length",
                name, avail);
    uint64_t hlen = b[8] | (uint64_t)b[9] << 8;
    if (lensz == 4)
        hlen |= (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
    lay->hstart = 8 + lensz;
    if (hlen > flen - lay->hstart)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte 8: a header of %llu bytes runs past the end of "
                "the file (%llu bytes)", name, (unsigned long long)hlen,
                (unsigned long long)flen);
    if (hlen > NPY_HEADER_MAX)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte 8: a header of %llu bytes (at most %d are read)",
                name, (unsigned long long)hlen, NPY_HEADER_MAX);
    lay->hlen = (size_t)hlen;
    lay->data_off = lay->hstart + lay->hlen;
    return TG_OK;
}

/* The header dict, then the data size against the flen-byte file
 * (NPY_STREAM: a stream's length is not known yet; only lay->nbytes). */
static tg_status parse_body(const uint8_t *b, uint64_t flen, const char *name,
                            layout *lay, graph_type *t, char *err, size_t errlen)
{
    parser ps = {b + lay->hstart, lay->hlen, lay->hstart, 0, 0, 0, name, err, errlen};
    memset(t, 0, sizeof *t);
    tg_status st = parse_dict(&ps, t);
    if (st != TG_OK)
        return st;
    uint64_t have = flen - lay->data_off;
    char shp[GRAPH_MAX_DIMS * 22 + 8];
    const char *descr = format_npy_descr(t->dtype);
    shape_repr(t, shp, sizeof shp);
    /* The size cap every layer shares: each dim is bounded even next to a 0
     * (a (0, 2^31, 2^31) array would let a reduction over its empty axis
     * make 2^62 elements), so no size derived from it can wrap. */
    if (graph_type_check(t, NULL, 0) != TG_OK)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte %zu: shape %s of '%s' is too large (at most 2^40 "
                "elements, a 0 dim counted as 1)", name, lay->data_off, shp, descr);
    uint64_t nbytes = graph_type_bytes(t);
    lay->nbytes = (size_t)nbytes;
    if (flen == NPY_STREAM)
        return TG_OK;
    if (nbytes > have)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte %zu: the data is truncated: shape %s of '%s' "
                "needs %llu bytes, the file has %llu", name, lay->data_off, shp, descr,
                (unsigned long long)nbytes, (unsigned long long)have);
    if (nbytes < have)
        TG_FAIL(TG_ERR_FORMAT, "%s: at byte %llu: %llu unexpected bytes after the data "
                "(shape %s of '%s' is %llu bytes)", name,
                (unsigned long long)(lay->data_off + nbytes),
                (unsigned long long)(have - nbytes), shp, descr, (unsigned long long)nbytes);
    lay->nbytes = (size_t)nbytes;
    return TG_OK;
}

/* A 64-byte aligned buffer of n bytes (at least 64, so never NULL for 0). */
static void *alloc_data(size_t n)
{
    size_t r = n < NPY_ALIGN ? NPY_ALIGN : n;
    if (r > SIZE_MAX - NPY_ALIGN)
        return NULL;
    return tg_aligned_alloc(NPY_ALIGN, (r + NPY_ALIGN - 1) & ~(size_t)(NPY_ALIGN - 1));
}

/* Bool elements must be 0 or 1, as NumPy writes them (kernels rely on it). */
static tg_status check_bools(const uint8_t *p, size_t n, size_t off, const char *name,
                             char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] > 1)
            TG_FAIL(TG_ERR_FORMAT, "%s: at byte %zu: bool element %zu is %u (must be 0 or 1)",
                    name, off + i, i, p[i]);
    return TG_OK;
}

tg_status format_npy_load_mem(const void *buf, size_t len, const char *name,
                              graph_type *type, void **data, char *err, size_t errlen)
{
    const uint8_t *b = buf;
    name = name ? name : "<memory>";
    if (!type || !data)
        TG_FAIL(TG_ERR_NULL, "%s: no place for the type or the data", name);
    *data = NULL;
    if (!buf && len)
        TG_FAIL(TG_ERR_NULL, "%s: no buffer", name);
    layout lay = {0};
    graph_type t;
    tg_status st = parse_prefix(b, len, len, name, &lay, err, errlen);
    if (st == TG_OK)
        st = parse_body(b, len, name, &lay, &t, err, errlen);
    if (st == TG_OK && t.dtype == GRAPH_BOOL)
        st = check_bools(b + lay.data_off, lay.nbytes, lay.data_off, name, err, errlen);
    if (st != TG_OK)
        return st;
    void *d = alloc_data(lay.nbytes);
    if (!d)
        TG_FAIL(TG_ERR_NOMEM, "%s: out of memory for %zu bytes of data", name, lay.nbytes);
    if (lay.nbytes)
        memcpy(d, b + lay.data_off, lay.nbytes);
    *type = t;
    *data = d;
    return TG_OK;
}

/*
 * From a regular file: the prefix and header are read first and checked
 * against the file size, so the data buffer is allocated only once its
 * size is known to match the bytes on disk; the data is read straight
 * into it.
 */
static tg_status load_file(format_src *s, graph_type *type, void **data, char *err,
                           size_t errlen)
{
    layout lay = {0};
    graph_type t;
    const char *path = s->name;
    tg_status st = parse_prefix(s->buf, s->len, s->size, path, &lay, err, errlen);
    if (st == TG_OK)
        st = format_src_fill(s, lay.data_off, NULL, 0, err, errlen);
    if (st == TG_OK && s->len < lay.data_off)
        st = tg_fail(TG_ERR_IO, err, errlen, "%s: at byte %zu: the file ends inside the "
                     "header (did it change while being read?)", path, s->len);
    if (st == TG_OK)
        st = parse_body(s->buf, s->size, path, &lay, &t, err, errlen);
    if (st != TG_OK)
        return st;
    uint8_t *d = alloc_data(lay.nbytes);
    if (!d)
        TG_FAIL(TG_ERR_NOMEM, "%s: out of memory for %zu bytes of data", path, lay.nbytes);
    size_t n = 0;
    st = format_src_read(s, d, lay.nbytes, &n, err, errlen);
    if (st == TG_OK && n != lay.nbytes)
        st = tg_fail(TG_ERR_IO, err, errlen, "%s: at byte %zu: the file ends inside the data "
                     "(did it change while being read?)", path, lay.data_off + n);
    else if (st == TG_OK && t.dtype == GRAPH_BOOL)
        st = check_bools(d, n, lay.data_off, path, err, errlen);
    if (st != TG_OK) {
        tg_free(d);
        return st;
    }
    *type = t;
    *data = d;
    return TG_OK;
}

/*
 * From a pipe or device: as far as the header declares (the data and one
 * byte more, to see the end), then as memory.  A stream that never ends
 * costs its header's data size at most; one that sends less is refused
 * at its end as a truncated file.
 */
static tg_status load_stream(format_src *s, graph_type *type, void **data, char *err,
                             size_t errlen)
{
    layout lay = {0};
    graph_type t;
    size_t want = s->len;
    tg_status st = parse_prefix(s->buf, s->len, NPY_STREAM, s->name, &lay, err, errlen);
    if (st == TG_OK)
        st = format_src_fill(s, lay.data_off, NULL, 0, err, errlen);
    if (st == TG_OK && s->len == lay.data_off) {
        st = parse_body(s->buf, NPY_STREAM, s->name, &lay, &t, err, errlen);
        want = lay.data_off + lay.nbytes + 1; /* at most 2^43 + 2^16: no wrap */
    }
    if (st == TG_OK)
        st = format_src_fill(s, want, NULL, 0, err, errlen);
    /* The messages of a truncated or extended file, as from memory. */
    if (st == TG_OK)
        st = format_npy_load_mem(s->buf, s->len, s->name, type, data, err, errlen);
    return st;
}

tg_status format_npy_load(const char *path, graph_type *type, void **data, char *err,
                          size_t errlen)
{
    if (!type || !data)
        TG_FAIL(TG_ERR_NULL, "%s: no place for the type or the data", path ? path : "npy");
    *data = NULL;
    if (!path)
        TG_FAIL(TG_ERR_NULL, "no path given");
    format_src s;
    tg_status st = format_src_open(&s, path, err, errlen);
    if (st != TG_OK)
        return st;
    /* The magic first: a stream of other bytes stops here. */
    st = format_src_fill(&s, 12, NPY_MAGIC, NPY_MAGIC_LEN, err, errlen);
    if (st == TG_OK)
        st = s.regular ? load_file(&s, type, data, err, errlen)
                       : load_stream(&s, type, data, err, errlen);
    format_src_close(&s);
    return st;
}

/* ---- writing ---- */

tg_status format_npy_save_mem(const graph_type *type, const void *data, void **buf,
                              size_t *len, char *err, size_t errlen)
{
    if (!buf || !len)
        TG_FAIL(TG_ERR_NULL, "npy: no place for the buffer or its length");
    *buf = NULL;
    *len = 0;
    if (!type || (int)type->dtype < 0 || (int)type->dtype >= GRAPH_DTYPE_COUNT ||
        type->ndim < 0 || type->ndim > GRAPH_MAX_DIMS)
        TG_FAIL(TG_ERR_ARG, "npy: invalid type");
    for (int d = 0; d < type->ndim; d++)
        if (type->dim[d] < 0)
            TG_FAIL(TG_ERR_ARG, "npy: negative dim %lld", (long long)type->dim[d]);
    char why[200];
    if (graph_type_check(type, why, sizeof why) != TG_OK)
        TG_FAIL(TG_ERR_ARG, "npy: %s", why);
    size_t nbytes = graph_type_bytes(type);
    if (nbytes && !data)
        TG_FAIL(TG_ERR_NULL, "npy: no data");
    char shp[GRAPH_MAX_DIMS * 22 + 8], dict[512];
    int k = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     format_npy_descr(type->dtype), shape_repr(type, shp, sizeof shp));
    if (type->ndim > 0) {
        char d0[24];
        int w = snprintf(d0, sizeof d0, "%lld", (long long)type->dim[0]);
        k += snprintf(dict + k, sizeof dict - (size_t)k, "%*s", NPY_GROWTH_DIGITS - w, "");
    }
    /* As NumPy: the padding is never empty, an aligned header gets 64 more. */
    size_t hlen = (size_t)k + 1;
    size_t pad = NPY_ALIGN - (10 + hlen) % NPY_ALIGN;
    if (nbytes > SIZE_MAX - (10 + hlen + pad))
        TG_FAIL(TG_ERR_ARG, "npy: the array is too large");
    size_t total = 10 + hlen + pad + nbytes;
    uint8_t *p = tg_malloc(total ? total : 1);
    if (!p)
        TG_FAIL(TG_ERR_NOMEM, "npy: out of memory for %zu bytes", total);
    memcpy(p, NPY_MAGIC "\x01\x00", 8);
    p[8] = (uint8_t)((hlen + pad) & 0xff);
    p[9] = (uint8_t)((hlen + pad) >> 8);
    memcpy(p + 10, dict, (size_t)k);
    memset(p + 10 + k, ' ', pad);
    p[10 + (size_t)k + pad] = '\n';
    if (nbytes)
        memcpy(p + 10 + hlen + pad, data, nbytes);
    *buf = p;
    *len = total;
    return TG_OK;
}

tg_status format_npy_save(const char *path, const graph_type *type, const void *data,
                          char *err, size_t errlen)
{
    if (!path)
        TG_FAIL(TG_ERR_NULL, "no path given");
    void *buf;
    size_t len;
    tg_status st = format_npy_save_mem(type, data, &buf, &len, err, errlen);
    if (st != TG_OK)
        return st;
    st = format_write_bytes(path, buf, len, err, errlen);
    tg_free(buf);
    return st;
}
