/* ckpt.c - state checkpoints (ckpt.h). */
#include <stdio.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "bytes.h"
#include "ckpt.h"
#include "file.h"
#include "tgraph_impl.h"

#define CKPT_MAGIC "\x89TGS\r\n\x1a\n"
#define CKPT_HEADER 28
#define CKPT_MAX_NAME 4096

static size_t pad8(size_t at) { return (8 - (at & 7)) & 7; }

tg_status format_ckpt_save_mem(const char *graph_name, const format_ckpt_entry *e, int32_t n,
                               void **buf, size_t *len, char *err, size_t errlen)
{
    if (!buf || !len || (n && !e)) {
        tg_errf(err, errlen, "format_ckpt_save: NULL argument");
        return TG_ERR_NULL;
    }
    *buf = NULL;
    *len = 0;
    if (n < 0 || n > FORMAT_CKPT_MAX_ENTRIES) {
        tg_errf(err, errlen, "format_ckpt_save: %d entries (0 to %d)", (int)n,
                FORMAT_CKPT_MAX_ENTRIES);
        return TG_ERR_ARG;
    }
    size_t gl = graph_name ? strlen(graph_name) : 0;
    if (gl > CKPT_MAX_NAME) {
        tg_errf(err, errlen, "format_ckpt_save: the graph name has %zu bytes (at most %d)", gl,
                CKPT_MAX_NAME);
        return TG_ERR_ARG;
    }
    format_wbuf b = {0};
    format_put_bytes(&b, CKPT_MAGIC, 8);
    format_put_u32(&b, FORMAT_CKPT_VERSION);
    format_put_u32(&b, (uint32_t)n);
    format_put_u64(&b, 0); /* the size, patched below */
    format_put_u32(&b, (uint32_t)gl);
    format_put_bytes(&b, graph_name, gl);
    for (int32_t i = 0; i < n; i++) {
        const format_ckpt_entry *x = &e[i];
        size_t nl = x->name ? strlen(x->name) : 0;
        int dt = format_dtype_code(x->type.dtype);
        if (nl == 0 || nl > CKPT_MAX_NAME || dt < 0 || x->type.ndim < 0 ||
            x->type.ndim > GRAPH_MAX_DIMS || (!x->data && graph_type_numel(&x->type))) {
            format_wbuf_free(&b);
            tg_errf(err, errlen, "format_ckpt_save: entry %d (%s): a name of 1 to %d bytes, "
                    "a known dtype, at most %d dims and data are needed", (int)i,
                    x->name ? x->name : "no name", CKPT_MAX_NAME, GRAPH_MAX_DIMS);
            return TG_ERR_ARG;
        }
        for (int32_t k = 0; k < i; k++)
            if (!strcmp(e[k].name, x->name)) {
                format_wbuf_free(&b);
                tg_errf(err, errlen, "format_ckpt_save: the name \"%s\" is used twice", x->name);
                return TG_ERR_ARG;
            }
        format_put_u32(&b, (uint32_t)nl);
        format_put_bytes(&b, x->name, nl);
        format_put_u8(&b, (uint8_t)dt);
        format_put_u8(&b, (uint8_t)x->type.ndim);
        format_put_u16(&b, 0);
        for (int d = 0; d < x->type.ndim; d++)
            format_put_i64(&b, x->type.dim[d]);
        uint64_t nb = graph_type_bytes(&x->type);
        format_put_u64(&b, nb);
        static const uint8_t zero[8];
        format_put_bytes(&b, zero, pad8(b.len));
        format_put_bytes(&b, x->data, (size_t)nb);
    }
    format_patch_le(&b, 16, b.len + 8, 8);
    format_put_u64(&b, format_xxh64(b.p, b.len, 0));
    if (b.oom) {
        format_wbuf_free(&b);
        tg_errf(err, errlen, "format_ckpt_save: out of memory");
        return TG_ERR_NOMEM;
    }
    *buf = b.p;
    *len = b.len;
    return TG_OK;
}

tg_status format_ckpt_save(const char *path, const char *graph_name, const format_ckpt_entry *e,
                           int32_t n, char *err, size_t errlen)
{
    if (!path) {
        tg_errf(err, errlen, "format_ckpt_save: NULL path");
        return TG_ERR_NULL;
    }
    void *buf;
    size_t len;
    tg_status st = format_ckpt_save_mem(graph_name, e, n, &buf, &len, err, errlen);
    if (st == TG_OK)
        st = format_write_bytes(path, buf, len, err, errlen);
    tg_free(buf);
    return st;
}

void format_ckpt_free(format_ckpt *c)
{
    if (!c)
        return;
    tg_free(c->e);
    tg_free(c->buf);
    tg_free(c->strs);
    memset(c, 0, sizeof *c);
}

#define FAIL_AT(at, ...)                                                                     \
    do {                                                                                     \
        char m_[400];                                                                        \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                \
        tg_errf(err, errlen, "%s: at byte %zu: %s", name, (size_t)(at), m_);                 \
        return TG_ERR_FORMAT;                                                                \
    } while (0)

/* The header's checks, on the first 24 bytes (avail of them present). */
static tg_status check_head(const uint8_t *p, size_t avail, const char *name, uint64_t *size,
                            char *err, size_t errlen)
{
    if (avail < 8 || memcmp(p, CKPT_MAGIC, 8) != 0) {
        tg_errf(err, errlen, "%s: not a state checkpoint (bad magic)", name);
        return TG_ERR_FORMAT;
    }
    if (avail < 24)
        FAIL_AT(avail, "%zu bytes, too short for a checkpoint's header (%d)", avail, CKPT_HEADER);
    uint32_t ver = (uint32_t)format_get_le(p + 8, 4);
    if (ver == 0 || ver > FORMAT_CKPT_VERSION) {
        tg_errf(err, errlen, "%s: at byte 8: checkpoint version %u (this build reads 1 to %d)",
                name, ver, FORMAT_CKPT_VERSION);
        return ver ? TG_ERR_UNSUPPORTED : TG_ERR_FORMAT;
    }
    *size = format_get_le(p + 16, 8);
    if (*size < CKPT_HEADER + 8)
        FAIL_AT(16, "the header gives a file size of %llu bytes (at least %d)",
                (unsigned long long)*size, CKPT_HEADER + 8);
    return TG_OK;
}

/* Parses the entries of a checksummed buffer into out (not owning buf). */
static tg_status parse(const uint8_t *p, size_t len, const char *name, format_ckpt *out,
                       char *err, size_t errlen)
{
    uint32_t n = (uint32_t)format_get_le(p + 12, 4);
    size_t end = len - 8; /* the checksum */
    if (n > FORMAT_CKPT_MAX_ENTRIES)
        FAIL_AT(12, "%u entries (at most %d)", n, FORMAT_CKPT_MAX_ENTRIES);
    /* each entry takes at least 16 bytes: never allocate beyond the file */
    if ((uint64_t)n * 16 > end)
        FAIL_AT(12, "%u entries cannot fit in %zu bytes", n, len);
    size_t at = 24;
    uint32_t gl = (uint32_t)format_get_le(p + at, 4);
    if (gl > CKPT_MAX_NAME || gl > end - CKPT_HEADER)
        FAIL_AT(at, "the graph name has %u bytes (at most %d, within the file)", gl,
                CKPT_MAX_NAME);
    at = CKPT_HEADER + gl;
    out->e = tg_calloc((size_t)n + 1, sizeof *out->e);
    /* names are NUL-terminated in a copy: room for each name and its NUL */
    char *names = tg_malloc(len + (size_t)n + 2);
    if (!out->e || !names) {
        tg_free(names);
        tg_errf(err, errlen, "%s: out of memory", name);
        return TG_ERR_NOMEM;
    }
    size_t nat = 0;
    memcpy(names, p + CKPT_HEADER, gl);
    names[gl] = '\0';
    out->graph_name = out->strs = names;
    nat = gl + 1;
    for (uint32_t i = 0; i < n; i++) {
        format_ckpt_entry *x = &out->e[i];
        size_t e0 = at;
        if (end - at < 4)
            FAIL_AT(at, "entry %u: the file ends inside it", i);
        uint32_t nl = (uint32_t)format_get_le(p + at, 4);
        if (nl == 0 || nl > CKPT_MAX_NAME || nl > end - at - 4)
            FAIL_AT(at, "entry %u: a name of %u bytes (1 to %d, within the file)", i, nl,
                    CKPT_MAX_NAME);
        memcpy(names + nat, p + at + 4, nl);
        names[nat + nl] = '\0';
        if (memchr(names + nat, '\0', nl))
            FAIL_AT(at + 4, "entry %u: the name holds a NUL byte", i);
        x->name = names + nat;
        nat += nl + 1;
        at += 4 + nl;
        if (end - at < 4)
            FAIL_AT(at, "entry %u (\"%s\"): the file ends inside it", i, x->name);
        uint8_t dt = p[at], nd = p[at + 1];
        uint16_t zero = (uint16_t)format_get_le(p + at + 2, 2);
        if (format_dtype_from_code(dt, &x->type.dtype) < 0)
            FAIL_AT(at, "entry %u (\"%s\"): dtype code %u is unknown", i, x->name, dt);
        if (nd > GRAPH_MAX_DIMS)
            FAIL_AT(at + 1, "entry %u (\"%s\"): %u dims (at most %d)", i, x->name, nd,
                    GRAPH_MAX_DIMS);
        if (zero)
            FAIL_AT(at + 2, "entry %u (\"%s\"): reserved bytes are not zero", i, x->name);
        x->type.ndim = nd;
        at += 4;
        if ((end - at) / 8 < (size_t)nd + 1)
            FAIL_AT(at, "entry %u (\"%s\"): the file ends inside its shape", i, x->name);
        uint64_t numel = 1;
        for (int d = 0; d < nd; d++, at += 8) {
            int64_t v = (int64_t)format_get_le(p + at, 8);
            if (v < 0)
                FAIL_AT(at, "entry %u (\"%s\"): dim %d is %lld", i, x->name, d, (long long)v);
            x->type.dim[d] = v;
            /* the product is bounded by the file's size before it can overflow */
            if (v && numel > (uint64_t)len / (uint64_t)v)
                numel = (uint64_t)len + 1;
            else
                numel *= (uint64_t)v;
        }
        uint64_t nb = format_get_le(p + at, 8);
        uint64_t want = numel > (uint64_t)len ? UINT64_MAX
                                              : numel * graph_dtype_size(x->type.dtype);
        if (nb != want)
            FAIL_AT(at, "entry %u (\"%s\"): %llu data bytes, its shape holds %s%llu", i,
                    x->name, (unsigned long long)nb, want == UINT64_MAX ? "more than " : "",
                    (unsigned long long)(want == UINT64_MAX ? len : want));
        at += 8;
        size_t pad = pad8(at);
        if (end - at < pad)
            FAIL_AT(at, "entry %u (\"%s\"): the file ends inside its padding", i, x->name);
        for (size_t k = 0; k < pad; k++)
            if (p[at + k])
                FAIL_AT(at + k, "entry %u (\"%s\"): padding is not zero", i, x->name);
        at += pad;
        if (nb > end - at)
            FAIL_AT(at, "entry %u (\"%s\"): %llu data bytes, %zu left before the checksum "
                    "(truncated?)", i, x->name, (unsigned long long)nb, end - at);
        x->data = p + at;
        at += (size_t)nb;
        for (uint32_t k = 0; k < i; k++)
            if (!strcmp(out->e[k].name, x->name))
                FAIL_AT(e0, "entry %u: the name \"%s\" is used twice", i, x->name);
        out->n = (int32_t)i + 1;
    }
    if (at != end)
        FAIL_AT(at, "%zu bytes follow the last entry (the checksum is at byte %zu)", end - at,
                end);
    return TG_OK;
}

tg_status format_ckpt_load_mem(const void *buf, size_t len, const char *name, format_ckpt *out,
                               char *err, size_t errlen)
{
    if (!name)
        name = "<memory>";
    if (!out || (!buf && len)) {
        tg_errf(err, errlen, "%s: NULL argument", name);
        return TG_ERR_NULL;
    }
    memset(out, 0, sizeof *out);
    const uint8_t *p = buf;
    uint64_t size;
    tg_status st = check_head(p ? p : (const uint8_t *)"", len, name, &size, err, errlen);
    if (st != TG_OK)
        return st;
    if (size != len)
        FAIL_AT(16, "the header gives a file size of %llu bytes, there are %zu%s",
                (unsigned long long)size, len, size > len ? " (truncated)" : "");
    if (format_xxh64(p, len - 8, 0) != format_get_le(p + len - 8, 8))
        FAIL_AT(len - 8, "the checksum does not match bytes [0, %zu) (damaged file)", len - 8);
    /* one copy: the entries point into it, names into the block after */
    uint8_t *own = tg_malloc(len ? len : 1);
    if (!own) {
        tg_errf(err, errlen, "%s: out of memory", name);
        return TG_ERR_NOMEM;
    }
    memcpy(own, p, len);
    out->buf = own;
    st = parse(own, len, name, out, err, errlen);
    if (st != TG_OK)
        format_ckpt_free(out);
    return st;
}

tg_status format_ckpt_load(const char *path, format_ckpt *out, char *err, size_t errlen)
{
    if (!path || !out) {
        tg_errf(err, errlen, "format_ckpt_load: NULL argument");
        return TG_ERR_NULL;
    }
    memset(out, 0, sizeof *out);
    format_src s;
    tg_status st = format_src_open(&s, path, err, errlen);
    if (st != TG_OK)
        return st;
    st = format_src_fill(&s, 24, CKPT_MAGIC, 8, err, errlen);
    uint64_t size = 0;
    if (st == TG_OK)
        st = check_head(s.buf, s.len, path, &size, err, errlen);
    if (st == TG_OK && s.regular && size != s.size) {
        tg_errf(err, errlen, "%s: at byte 16: the header gives a file size of %llu bytes, the "
                "file has %llu%s", path, (unsigned long long)size, (unsigned long long)s.size,
                size > s.size ? " (truncated)" : "");
        st = TG_ERR_FORMAT;
    }
    if (st == TG_OK && size > SIZE_MAX / 2) {
        tg_errf(err, errlen, "%s: at byte 16: a file size of %llu bytes", path,
                (unsigned long long)size);
        st = TG_ERR_FORMAT;
    }
    if (st == TG_OK)
        st = format_src_fill(&s, (size_t)size, NULL, 0, err, errlen);
    if (st == TG_OK && s.len != size) {
        tg_errf(err, errlen, "%s: at byte %zu: the file ends; its header gives %llu bytes "
                "(truncated)", path, s.len, (unsigned long long)size);
        st = TG_ERR_FORMAT;
    }
    if (st == TG_OK)
        st = format_ckpt_load_mem(s.buf, s.len, path, out, err, errlen);
    format_src_close(&s);
    return st;
}
