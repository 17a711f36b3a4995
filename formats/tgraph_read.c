/*
 * tgraph_read.c - the .tgraph reader: the container (header, section
 * table, checksums), decompression, and the load and info entry points.
 * The section contents are decoded by tgraph_decode.c.
 *
 * Nothing is sized by what the file merely declares: a metadata section
 * is decompressed into a buffer that starts near its compressed size and
 * doubles as bytes actually come out, up to the declared raw size (itself
 * capped); zstd's window is capped at FORMAT_WINDOW_LOG_MAX.  Constants
 * have their own rules (tgraph_consts.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "../graph/alloc.h"
#include "file.h"
#include "tgraph_decode.h"
#include "../graph/graph_impl.h"

typedef struct entry {
    uint32_t id, codec;
    uint64_t offset, stored, raw, sum;
} entry;

/* The order sections are decoded in: each names only earlier ones. */
static const uint32_t decode_order[FORMAT_NSEC] = {
    FORMAT_SEC_STRINGS, FORMAT_SEC_SYMBOLS, FORMAT_SEC_PROVENANCE, FORMAT_SEC_VALUES,
    FORMAT_SEC_NODES, FORMAT_SEC_GUARDS, FORMAT_SEC_SIGNATURE, FORMAT_SEC_CONSTANTS,
    FORMAT_SEC_TARGET, FORMAT_SEC_STATES};

/* Magic and version: the part of the header every version shares. */
static tg_status check_start(const uint8_t *b, size_t avail, const char *name,
                             char *err, size_t errlen)
{
    if (avail < 8 && memcmp(b, FORMAT_MAGIC, avail) == 0)
        TG_FAIL(TG_ERR_FORMAT, "%s: %zu bytes, too short for a .tgraph file", name, avail);
    if (avail < 8 || memcmp(b, FORMAT_MAGIC, 8) != 0)
        TG_FAIL(TG_ERR_FORMAT, "%s: not a .tgraph file (bad magic)", name);
    if (avail < 12)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte 8: the file ends inside the header", name);
    uint32_t version = (uint32_t)format_get_le(b + 8, 4);
    if (version > FORMAT_VERSION)
        TG_FAIL(TG_ERR_UNSUPPORTED, "%s: format version %u is newer than this build "
                "reads (%d)", name, version, FORMAT_VERSION);
    if (version == 0)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte 8: format version 0 is invalid", name);
    return TG_OK;
}

/* One table entry: tiled, in bounds, within the caps, no known id twice. */
static tg_status check_entry(const entry *e, int i, uint64_t expect_off, uint64_t flen,
                             unsigned *have, const char *name, char *err, size_t errlen)
{
    size_t at = FORMAT_HEADER_SIZE + (size_t)FORMAT_ENTRY_SIZE * (size_t)i;
    const char *sn = format_section_name(e->id);
    if (e->codec != FORMAT_CODEC_ZSTD)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: section '%s' has unknown codec %u",
                name, at + 4, sn, e->codec);
    if (e->offset != expect_off || e->stored > flen - e->offset)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: section '%s' spans bytes %llu+%llu; "
                "sections must follow each other from byte %llu to the end (%llu)",
                name, at + 8, sn, (unsigned long long)e->offset,
                (unsigned long long)e->stored, (unsigned long long)expect_off,
                (unsigned long long)flen);
    uint64_t cap = e->id == FORMAT_SEC_CONSTANTS ? FORMAT_MAX_CONST_RAW : FORMAT_MAX_META_RAW;
    if (e->raw > cap)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: section '%s' claims %llu raw bytes "
                "(at most %llu)", name, at + 24, sn, (unsigned long long)e->raw,
                (unsigned long long)cap);
    if (e->id >= 1 && e->id <= FORMAT_NSEC) {
        if (*have >> e->id & 1)
            TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: section '%s' appears twice",
                    name, at, sn);
        *have |= 1u << e->id;
    }
    return TG_OK;
}

/*
 * Checks the header and table in b (avail bytes of a flen-byte file) and
 * fills info and ents.
 */
static tg_status parse_header(const uint8_t *b, size_t avail, uint64_t flen,
                              const char *name, format_info *info, entry *ents,
                              char *err, size_t errlen)
{
    tg_status st = check_start(b, avail, name, err, errlen);
    if (st != TG_OK)
        return st;
    if (avail < FORMAT_HEADER_SIZE)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: the file ends inside the header",
                name, avail);
    uint32_t n = (uint32_t)format_get_le(b + 12, 4);
    if (n < 1 || n > FORMAT_MAX_SECTIONS)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte 12: %u sections (1..%d)", name, n,
                FORMAT_MAX_SECTIONS);
    size_t hdr = FORMAT_HEADER_SIZE + (size_t)FORMAT_ENTRY_SIZE * n;
    if (avail < hdr + 8)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: the file ends inside the section "
                "table", name, avail);
    if (format_xxh64(b, hdr, 0) != format_get_le(b + hdr, 8))
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte %zu: header checksum mismatch (damaged "
                "file)", name, hdr);
    uint64_t declared = format_get_le(b + 16, 8);
    if (declared != flen)
        TG_FAIL(TG_ERR_FORMAT, "%s: the header says %llu bytes, the file has %llu "
                "(truncated or extended)", name, (unsigned long long)declared,
                (unsigned long long)flen);
    if (format_get_le(b + 24, 8) != 0)
        TG_FAIL(TG_ERR_FORMAT, "%s: at file byte 24: unknown header flags", name);
    memset(info, 0, sizeof *info);
    info->version = (uint32_t)format_get_le(b + 8, 4);
    info->file_size = flen;
    info->nsections = (int)n;
    uint64_t off = hdr + 8;
    unsigned have = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *t = b + FORMAT_HEADER_SIZE + (size_t)FORMAT_ENTRY_SIZE * i;
        entry *e = &ents[i];
        e->id = (uint32_t)format_get_le(t, 4);
        e->codec = (uint32_t)format_get_le(t + 4, 4);
        e->offset = format_get_le(t + 8, 8);
        e->stored = format_get_le(t + 16, 8);
        e->raw = format_get_le(t + 24, 8);
        e->sum = format_get_le(t + 32, 8);
        st = check_entry(e, (int)i, off, flen, &have, name, err, errlen);
        if (st != TG_OK)
            return st;
        off += e->stored;
        info->sections[i] = (format_section_info){format_section_name(e->id), e->id,
                                                  e->offset, e->stored, e->raw};
    }
    if (off != flen)
        TG_FAIL(TG_ERR_FORMAT, "%s: sections end at byte %llu, the file has %llu bytes",
                name, (unsigned long long)off, (unsigned long long)flen);
    for (uint32_t id = 1; id <= FORMAT_NSEC_REQUIRED; id++)
        if (!(have >> id & 1))
            TG_FAIL(TG_ERR_FORMAT, "%s: section '%s' is missing", name,
                    format_section_name(id));
    return TG_OK;
}

tg_status format_info_mem(const void *buf, size_t len, const char *name,
                          format_info *info, char *err, size_t errlen)
{
    entry ents[FORMAT_MAX_SECTIONS];
    if (!name)
        name = "<memory>";
    if (!buf || !info)
        TG_FAIL(TG_ERR_NULL, "%s: NULL argument", name);
    return parse_header(buf, len, len, name, info, ents, err, errlen);
}

/* ---- decompression ---- */

/* Decompresses one section's single zstd frame; *out is malloc'd. */
static tg_status inflate(ZSTD_DCtx *dc, const uint8_t *src, const entry *e,
                         uint8_t **out, const char *name, char *err, size_t errlen)
{
    const char *sn = format_section_name(e->id);
    size_t n = (size_t)e->stored;
    *out = NULL;
    if (n < 6 || format_get_le(src, 4) != 0xFD2FB528u || !(src[4] & 4))
        TG_FAIL(TG_ERR_FORMAT, "%s: section '%s' at file byte %llu: not a zstd frame with "
                "a content checksum", name, sn, (unsigned long long)e->offset);
    unsigned long long cs = ZSTD_getFrameContentSize(src, n);
    if (cs != e->raw)
        TG_FAIL(TG_ERR_FORMAT, "%s: section '%s' at file byte %llu: the zstd frame holds "
                "%lld bytes, the table says %llu", name, sn, (unsigned long long)e->offset,
                cs >= ZSTD_CONTENTSIZE_ERROR ? -1LL : (long long)cs,
                (unsigned long long)e->raw);
    size_t raw = (size_t)e->raw;
    /* Start near the compressed size; grow only as output arrives. */
    size_t cap = raw < (size_t)4 * n + 65536 ? raw : (size_t)4 * n + 65536;
    uint8_t *buf = tg_malloc(cap ? cap : 1);
    if (!buf)
        TG_FAIL(TG_ERR_NOMEM, "%s: section '%s': out of memory", name, sn);
    ZSTD_DCtx_reset(dc, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {src, n, 0};
    ZSTD_outBuffer o = {buf, cap, 0};
    const char *why = NULL;
    for (;;) {
        if (o.pos == o.size && o.size < raw) {
            size_t ncap = o.size < raw / 2 ? o.size * 2 : raw;
            uint8_t *p = tg_realloc(buf, ncap);
            if (!p) {
                why = "out of memory";
                break;
            }
            buf = p;
            o.dst = p;
            o.size = ncap;
        }
        size_t ipos = in.pos, opos = o.pos;
        size_t ret = ZSTD_decompressStream(dc, &o, &in);
        if (ZSTD_isError(ret)) {
            why = ZSTD_getErrorName(ret);
            break;
        }
        if (ret == 0)
            break;
        if (in.pos == ipos && o.pos == opos) {
            why = o.pos == o.size ? "more data than declared" : "the frame is truncated";
            break;
        }
    }
    if (!why && (in.pos != in.size || o.pos != raw))
        why = in.pos != in.size ? "bytes after the frame" : "less data than declared";
    if (why) {
        tg_free(buf);
        TG_FAIL(TG_ERR_FORMAT, "%s: section '%s' at file byte %llu: zstd: %s", name, sn,
                (unsigned long long)(e->offset + in.pos), why);
    }
    *out = buf;
    return TG_OK;
}

/* ---- loading ---- */

static int decode(format_loader *L, uint32_t id, const uint8_t *p, size_t n)
{
    format_rd r = {p, n, 0};
    L->sec = format_section_name(id);
    L->item = NULL;
    switch (id) {
    case FORMAT_SEC_STRINGS: return format_dec_strings(L, &r);
    case FORMAT_SEC_SYMBOLS: return format_dec_symbols(L, &r);
    case FORMAT_SEC_PROVENANCE: return format_dec_provenance(L, &r);
    case FORMAT_SEC_VALUES: return format_dec_values(L, &r);
    case FORMAT_SEC_NODES: return format_dec_nodes(L, &r);
    case FORMAT_SEC_GUARDS: return format_dec_guards(L, &r);
    case FORMAT_SEC_SIGNATURE: return format_dec_signature(L, &r);
    case FORMAT_SEC_TARGET: return format_dec_target(L, &r);
    case FORMAT_SEC_STATES: return format_dec_states(L, &r);
    default: return -1;
    }
}

/* Checksums every section, then decompresses and decodes them in order. */
static tg_status load_sections(format_loader *L, const uint8_t *b, const entry *ents,
                               int n)
{
    char *err = L->err;
    size_t errlen = L->errlen;
    for (int i = 0; i < n; i++)
        if (format_xxh64(b + ents[i].offset, (size_t)ents[i].stored, 0) != ents[i].sum)
            TG_FAIL(TG_ERR_FORMAT, "%s: section '%s' at file byte %llu: checksum mismatch "
                    "(damaged file)", L->name, format_section_name(ents[i].id),
                    (unsigned long long)ents[i].offset);
    ZSTD_DCtx *dc = format_zstd_dctx();
    if (!dc || ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_windowLogMax,
                                                   FORMAT_WINDOW_LOG_MAX))) {
        ZSTD_freeDCtx(dc);
        TG_FAIL(TG_ERR_NOMEM, "%s: out of memory", L->name);
    }
    tg_status st = TG_OK;
    for (int k = 0; st == TG_OK && k < FORMAT_NSEC; k++) {
        int i = 0;
        while (i < n && ents[i].id != decode_order[k])
            i++; /* parse_header made sure the required ones are there */
        if (i == n) {
            TG_ASSERT(decode_order[k] > FORMAT_NSEC_REQUIRED);
            continue;
        }
        const uint8_t *src = b + ents[i].offset;
        if (ents[i].id == FORMAT_SEC_CONSTANTS) {
            if (format_dec_constants(L, src, (size_t)ents[i].stored, ents[i].raw) < 0)
                st = TG_ERR_FORMAT;
            continue;
        }
        uint8_t *raw;
        st = inflate(dc, src, &ents[i], &raw, L->name, err, errlen);
        if (st == TG_OK && decode(L, ents[i].id, raw, (size_t)ents[i].raw) < 0)
            st = TG_ERR_FORMAT;
        tg_free(raw);
    }
    ZSTD_freeDCtx(dc);
    return st;
}

graph *format_load_mem(const void *buf, size_t len, const char *name,
                       char *err, size_t errlen)
{
    entry ents[FORMAT_MAX_SECTIONS];
    format_info info;
    if (!name)
        name = "<memory>";
    if (!buf && len) {
        tg_errf(err, errlen, "%s: NULL buffer", name);
        return NULL;
    }
    if (parse_header(buf ? buf : "", len, len, name, &info, ents, err, errlen) != TG_OK)
        return NULL;
    format_loader L = {.name = name, .err = err, .errlen = errlen};
    L.g = graph_new(NULL);
    if (!L.g) {
        tg_errf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    tg_status st = load_sections(&L, buf, ents, info.nsections);
    if (st == TG_OK && graph_verify(L.g, 0) != TG_OK) {
        tg_errf(err, errlen, "%s: the graph does not verify: %s", name,
                graph_error(L.g));
        st = TG_ERR_FORMAT;
    }
    tg_free(L.strs);
    tg_free(L.opcache);
    tg_free(L.data_off);
    tg_free(L.state_seen);
    if (st != TG_OK) {
        graph_free(L.g);
        return NULL;
    }
    L.g->err[0] = '\0';
    return L.g;
}

/*
 * The magic, header and section table of the file open in s, each read
 * only once the bytes before it are right, checked against the file's
 * size (a regular file) or the size the header declares (a stream);
 * *flen gets that size.  A file whose start is wrong stops early and is
 * judged from the bytes read (check_start's messages); so is one that
 * ends early.
 */
static tg_status read_head(format_src *s, format_info *info, entry *ents, uint64_t *flen,
                           char *err, size_t errlen)
{
    const char *name = s->name;
    tg_status st = format_src_fill(s, FORMAT_HEADER_SIZE, FORMAT_MAGIC, 8, err, errlen);
    if (st == TG_OK && s->len == FORMAT_HEADER_SIZE &&
        memcmp(s->buf, FORMAT_MAGIC, 8) == 0) {
        uint32_t n = (uint32_t)format_get_le(s->buf + 12, 4);
        if (n >= 1 && n <= FORMAT_MAX_SECTIONS)
            st = format_src_fill(s, FORMAT_HEADER_SIZE + (size_t)FORMAT_ENTRY_SIZE * n + 8,
                                 NULL, 0, err, errlen);
    }
    if (st != TG_OK)
        return st;
    *flen = s->regular ? s->size : s->len >= 24 ? format_get_le(s->buf + 16, 8) : s->len;
    return parse_header(s->buf ? s->buf : (const uint8_t *)"", s->len, *flen, name, info,
                        ents, err, errlen);
}

/*
 * After read_head: the rest of the file in s, up to the flen bytes the
 * header or the OS gives, and one byte more (to see the end: a stream
 * longer than it declares is refused by the checks from memory).  The
 * sections' sizes are capped and tile the file up to flen, so this is
 * the bound.  *buf gets s's buffer (tg_free it).
 */
static tg_status read_rest(format_src *s, uint64_t flen, uint8_t **buf, size_t *len,
                           char *err, size_t errlen)
{
    if (flen >= SIZE_MAX)
        TG_FAIL(TG_ERR_FORMAT, "%s: the header says %llu bytes, more than this machine can "
                "address", s->name, (unsigned long long)flen);
    tg_status st = format_src_fill(s, (size_t)flen + 1, NULL, 0, err, errlen);
    if (st != TG_OK)
        return st;
    *buf = s->buf;
    *len = s->len;
    s->buf = NULL;
    return TG_OK;
}

tg_status format_read_tgraph(const char *path, uint8_t **buf, size_t *len, char *err,
                             size_t errlen)
{
    *buf = NULL;
    *len = 0;
    format_src s;
    tg_status st = format_src_open(&s, path, err, errlen);
    if (st != TG_OK)
        return st;
    format_info info;
    entry ents[FORMAT_MAX_SECTIONS];
    uint64_t flen = 0;
    st = read_head(&s, &info, ents, &flen, err, errlen);
    if (st == TG_OK)
        st = read_rest(&s, flen, buf, len, err, errlen);
    format_src_close(&s);
    return st;
}

tg_status format_read_file(const char *path, void **buf, size_t *len, char *err, size_t errlen)
{
    uint8_t *b = NULL;
    tg_status st = format_read_tgraph(path, &b, len, err, errlen);
    *buf = b;
    return st;
}

/*
 * Maps a regular file read-only (prefaulted from the page cache: no copy,
 * no zeroing) once its header and table are right; reads other files
 * (pipes, devices) as far as their header declares.  A file truncated by
 * another process while mapped would fault, as with any mmap-based
 * loader.
 */
graph *format_load(const char *path, char *err, size_t errlen)
{
    if (!path) {
        tg_errf(err, errlen, "format_load: NULL path");
        return NULL;
    }
    format_src s;
    if (format_src_open(&s, path, err, errlen) != TG_OK)
        return NULL;
    format_info info;
    entry ents[FORMAT_MAX_SECTIONS];
    uint64_t flen = 0;
    tg_status st = read_head(&s, &info, ents, &flen, err, errlen);
    graph *g = NULL;
    if (st == TG_OK && s.regular && flen <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)flen, PROT_READ, MAP_PRIVATE | MAP_POPULATE, s.fd, 0);
        if (m != MAP_FAILED) {
            g = format_load_mem(m, (size_t)flen, path, err, errlen);
            munmap(m, (size_t)flen);
            format_src_close(&s);
            return g;
        }
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (st == TG_OK)
        st = read_rest(&s, flen, &buf, &len, err, errlen);
    format_src_close(&s);
    if (st == TG_OK)
        g = format_load_mem(buf, len, path, err, errlen);
    tg_free(buf);
    return g;
}

tg_status format_info_file(const char *path, format_info *info, char *err,
                           size_t errlen)
{
    entry ents[FORMAT_MAX_SECTIONS];
    if (!path || !info)
        TG_FAIL(TG_ERR_NULL, "format_info_file: NULL argument");
    format_src s;
    tg_status st = format_src_open(&s, path, err, errlen);
    uint64_t flen;
    if (st == TG_OK)
        st = read_head(&s, info, ents, &flen, err, errlen);
    format_src_close(&s);
    return st;
}
