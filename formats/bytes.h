/*
 * bytes.h - explicit little-endian encoding for the .tgraph format: a
 * growable output buffer (format_wbuf) and a bounds-checked input cursor
 * (format_rd).
 *
 * Values are assembled byte by byte, never by copying structs, so a file
 * is the same on every machine whatever its byte order or struct padding.
 *
 * format_wbuf has a sticky out-of-memory flag: writers append freely and
 * check ->oom once at the end.  format_rd is the opposite: every read
 * returns 0 or -1 and the caller must stop at the first -1, because what
 * the reader hands back indexes memory.  A failed read leaves ->pos at
 * the offending offset for the error message.
 */
#ifndef TG_FORMATS_BYTES_H
#define TG_FORMATS_BYTES_H

#include <stdint.h>
#include <stdlib.h>
#include "../graph/alloc.h"
#include <string.h>

/* ---- writing ---- */

typedef struct format_wbuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} format_wbuf;

/* Room for n more bytes; 0, or -1 (and ->oom set). */
static inline int format_wbuf_reserve(format_wbuf *b, size_t n)
{
    if (b->oom)
        return -1;
    if (b->cap - b->len >= n)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    uint8_t *p = tg_realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline void format_put_bytes(format_wbuf *b, const void *s, size_t n)
{
    if (n && format_wbuf_reserve(b, n) == 0) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

static inline void format_put_le(format_wbuf *b, uint64_t v, int nbytes)
{
    uint8_t t[8];
    for (int i = 0; i < nbytes; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    format_put_bytes(b, t, (size_t)nbytes);
}

static inline void format_put_u8(format_wbuf *b, uint8_t v) { format_put_le(b, v, 1); }
static inline void format_put_u16(format_wbuf *b, uint16_t v) { format_put_le(b, v, 2); }
static inline void format_put_u32(format_wbuf *b, uint32_t v) { format_put_le(b, v, 4); }
static inline void format_put_u64(format_wbuf *b, uint64_t v) { format_put_le(b, v, 8); }
static inline void format_put_i32(format_wbuf *b, int32_t v) { format_put_le(b, (uint32_t)v, 4); }
static inline void format_put_i64(format_wbuf *b, int64_t v) { format_put_le(b, (uint64_t)v, 8); }
static inline void format_put_f32(format_wbuf *b, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    format_put_u32(b, u);
}
static inline void format_put_f64(format_wbuf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    format_put_u64(b, u);
}

/* Writes v at byte offset at (already written) of b. */
static inline void format_patch_le(format_wbuf *b, size_t at, uint64_t v, int nbytes)
{
    if (b->oom || at > b->len || b->len - at < (size_t)nbytes)
        return;
    for (int i = 0; i < nbytes; i++)
        b->p[at + i] = (uint8_t)(v >> (8 * i));
}

static inline void format_wbuf_free(format_wbuf *b)
{
    tg_free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- reading ---- */

typedef struct format_rd {
    const uint8_t *p;
    size_t len, pos;
} format_rd;

static inline uint64_t format_get_le(const uint8_t *p, int nbytes)
{
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline size_t format_rd_left(const format_rd *r) { return r->len - r->pos; }

/* Reads an nbytes little-endian integer; -1 if fewer bytes remain. */
static inline int format_rd_le(format_rd *r, int nbytes, uint64_t *v)
{
    if (r->len - r->pos < (size_t)nbytes)
        return -1;
    *v = format_get_le(r->p + r->pos, nbytes);
    r->pos += (size_t)nbytes;
    return 0;
}

static inline int format_rd_u8(format_rd *r, uint8_t *v)
{
    uint64_t t;
    if (format_rd_le(r, 1, &t) < 0)
        return -1;
    *v = (uint8_t)t;
    return 0;
}
static inline int format_rd_u16(format_rd *r, uint16_t *v)
{
    uint64_t t;
    if (format_rd_le(r, 2, &t) < 0)
        return -1;
    *v = (uint16_t)t;
    return 0;
}
static inline int format_rd_u32(format_rd *r, uint32_t *v)
{
    uint64_t t;
    if (format_rd_le(r, 4, &t) < 0)
        return -1;
    *v = (uint32_t)t;
    return 0;
}
static inline int format_rd_u64(format_rd *r, uint64_t *v) { return format_rd_le(r, 8, v); }
static inline int format_rd_i32(format_rd *r, int32_t *v)
{
    uint32_t t;
    if (format_rd_u32(r, &t) < 0)
        return -1;
    *v = t <= INT32_MAX ? (int32_t)t : -(int32_t)(~t) - 1; /* no impl-defined cast */
    return 0;
}
static inline int format_rd_i64(format_rd *r, int64_t *v)
{
    uint64_t t;
    if (format_rd_u64(r, &t) < 0)
        return -1;
    *v = t <= INT64_MAX ? (int64_t)t : -(int64_t)(~t) - 1;
    return 0;
}
static inline int format_rd_f32(format_rd *r, float *v)
{
    uint32_t t;
    if (format_rd_u32(r, &t) < 0)
        return -1;
    memcpy(v, &t, 4);
    return 0;
}
static inline int format_rd_f64(format_rd *r, double *v)
{
    uint64_t t;
    if (format_rd_u64(r, &t) < 0)
        return -1;
    memcpy(v, &t, 8);
    return 0;
}
/* Points *s at the next n bytes and skips them; -1 if fewer remain. */
static inline int format_rd_span(format_rd *r, size_t n, const uint8_t **s)
{
    if (r->len - r->pos < n)
        return -1;
    *s = r->p + r->pos;
    r->pos += n;
    return 0;
}

#endif
