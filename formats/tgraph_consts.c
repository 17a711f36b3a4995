/*
 * tgraph_consts.c - the constants section: param/const data, written and
 * read as independent zstd frames of FORMAT_CONST_CHUNK raw bytes each, so
 * both directions run one frame per thread (OpenMP when built with it).
 *
 * Reading is where the time goes (weights are most of a file), so frames
 * that fall inside one value's data decompress straight into its final
 * buffer; frames that straddle values go through a per-thread scratch
 * buffer.  Large buffers are 2 MiB aligned and advised as huge pages:
 * first-touch page faults otherwise cost as much as decompression.
 *
 * Allocation safety: the values' buffers are allocated up front only when
 * their total is within FORMAT_TRUST_RATIO times the section's stored
 * bytes (plus a little); zstd rarely compresses real data that well.  A
 * section that claims more (a hostile file, or all-zero weights) is read
 * serially and each value's buffer grows as its bytes actually come out.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../graph/alloc.h"
#include "tgraph_decode.h"
#include "../graph/graph_impl.h"

#define FORMAT_TRUST_RATIO 256
#define FORMAT_TRUST_SLACK ((uint64_t)16 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)
/* Smallest zstd frame: magic, header byte, 1-byte size, empty block, checksum. */
#define MIN_FRAME 13

static int nthreads(size_t jobs)
{
#ifdef _OPENMP
    int n = omp_get_max_threads();
    return (size_t)n < jobs ? n : (int)(jobs ? jobs : 1);
#else
    (void)jobs;
    return 1;
#endif
}

static uint64_t round64(uint64_t n) { return (n + FORMAT_DATA_ALIGN - 1) & ~(uint64_t)63; }

/* ---- writing ---- */

/* First blob whose padded extent ends after a (blobs sorted by offset). */
static size_t first_blob(const format_blob *b, size_t n, uint64_t a)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].offset + round64(b[mid].nbytes) <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void format_gather_constants(const format_blob *blobs, size_t nblobs, uint64_t a,
                             uint64_t b, uint8_t *dst)
{
    memset(dst, 0, (size_t)(b - a));
    for (size_t i = first_blob(blobs, nblobs, a); i < nblobs && blobs[i].offset < b; i++) {
        uint64_t s = blobs[i].offset > a ? blobs[i].offset : a;
        uint64_t e = blobs[i].offset + blobs[i].nbytes;
        if (e > b)
            e = b;
        if (e > s)
            memcpy(dst + (s - a), (const uint8_t *)blobs[i].data + (s - blobs[i].offset),
                   (size_t)(e - s));
    }
}

int format_compress_constants(const format_blob *blobs, size_t nblobs, uint64_t raw,
                              int level, format_wbuf *out)
{
    size_t nch = raw ? (size_t)((raw + FORMAT_CONST_CHUNK - 1) / FORMAT_CONST_CHUNK) : 1;
    format_wbuf *part = tg_calloc(nch, sizeof *part);
    if (!part)
        return -1;
    int bad = 0;
#pragma omp parallel num_threads(nthreads(nch)) reduction(| : bad)
    {
        ZSTD_CCtx *cc = format_zstd_cctx();
        uint8_t *stage = tg_malloc((size_t)(raw < FORMAT_CONST_CHUNK ? raw + 1 : FORMAT_CONST_CHUNK));
#pragma omp for schedule(dynamic)
        for (size_t k = 0; k < nch; k++) {
            uint64_t a = k * FORMAT_CONST_CHUNK;
            uint64_t b = raw - a < FORMAT_CONST_CHUNK ? raw : a + FORMAT_CONST_CHUNK;
            if (!cc || !stage) {
                bad = 1;
                continue;
            }
            format_gather_constants(blobs, nblobs, a, b, stage);
            bad |= format_compress_frame(cc, level, stage, (size_t)(b - a), &part[k]) < 0;
        }
        tg_free(stage);
        ZSTD_freeCCtx(cc);
    }
    for (size_t k = 0; k < nch; k++) {
        if (!bad)
            format_put_bytes(out, part[k].p, part[k].len);
        format_wbuf_free(&part[k]);
    }
    tg_free(part);
    return bad || out->oom ? -1 : 0;
}

/* ---- reading ---- */

typedef struct frame {
    const uint8_t *src;
    size_t n;
    uint64_t a, b; /* raw bytes [a, b) */
} frame;

/* One data-bearing value, in offset order. */
typedef struct slot {
    int32_t value;
    uint64_t off, ext; /* padded extent in the section */
    size_t nbytes;
    uint8_t *dst;      /* final buffer, or (staged) a growing one */
    uint64_t cap;
} slot;

enum { FR_OK, FR_ZSTD, FR_GAP, FR_NOMEM };

typedef struct cjob {
    frame *fr;
    size_t nfr;
    slot *s;
    size_t ns;
    int staged;
    int *status;        /* per frame */
    const char **why;   /* per frame: zstd's error name */
} cjob;

/* Splits the stored bytes into the frames the spec asks for. */
static int walk_frames(format_loader *L, const uint8_t *src, size_t n, uint64_t raw,
                       cjob *j)
{
    j->nfr = raw ? (size_t)((raw + FORMAT_CONST_CHUNK - 1) / FORMAT_CONST_CHUNK) : 1;
    if (j->nfr > n / MIN_FRAME)
        return format_load_fail(L, 0, "%zu frames cannot fit in %zu stored bytes", j->nfr, n);
    if (!(j->fr = tg_calloc(j->nfr, sizeof *j->fr)))
        return format_load_fail(L, 0, "out of memory");
    size_t pos = 0;
    for (size_t k = 0; k < j->nfr; k++) {
        frame *f = &j->fr[k];
        f->a = k * FORMAT_CONST_CHUNK;
        f->b = raw - f->a < FORMAT_CONST_CHUNK ? raw : f->a + FORMAT_CONST_CHUNK;
        size_t fs = ZSTD_findFrameCompressedSize(src + pos, n - pos);
        if (ZSTD_isError(fs))
            return format_load_fail(L, f->a, "frame %zu: zstd: %s", k, ZSTD_getErrorName(fs));
        if (fs < MIN_FRAME || format_get_le(src + pos, 4) != 0xFD2FB528u ||
            !(src[pos + 4] & 4) || ZSTD_getFrameContentSize(src + pos, fs) != f->b - f->a)
            return format_load_fail(L, f->a, "frame %zu is not a zstd frame of %llu bytes "
                                    "with a checksum", k, (unsigned long long)(f->b - f->a));
        f->src = src + pos;
        f->n = fs;
        pos += fs;
    }
    if (pos != n)
        return format_load_fail(L, raw, "%zu stored bytes after the last frame", n - pos);
    return 0;
}

/* The values with data: aligned, in order, not overlapping, in bounds. */
static int collect_slots(format_loader *L, uint64_t raw, cjob *j)
{
    graph *g = L->g;
    if (!(j->s = tg_calloc((size_t)g->nvalues + 1, sizeof *j->s)))
        return format_load_fail(L, 0, "out of memory");
    uint64_t end = 0;
    L->item = "value";
    for (int32_t i = 0; i < g->nvalues; i++) {
        uint64_t off = L->data_off[i];
        if (off == UINT64_MAX)
            continue;
        L->index = i;
        size_t nb = graph_value_nbytes(&g->values[i]);
        uint64_t ext = round64(nb);
        if (off % FORMAT_DATA_ALIGN || off < end || off > raw || ext > raw - off)
            return format_load_fail(L, off < raw ? off : raw, "data of %zu bytes at offset "
                                    "%llu: misaligned, overlapping or past the end (%llu)",
                                    nb, (unsigned long long)off, (unsigned long long)raw);
        j->s[j->ns++] = (slot){i, off, ext, nb, NULL, 0};
        end = off + ext;
    }
    L->item = NULL;
    return 0;
}

static uint8_t *alloc_final(uint64_t ext)
{
    if (ext < 2 * HUGE_ALIGN)
        return tg_aligned_alloc(FORMAT_DATA_ALIGN, ext ? (size_t)ext : FORMAT_DATA_ALIGN);
    size_t sz = ((size_t)ext + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
    uint8_t *p = tg_aligned_alloc(HUGE_ALIGN, sz);
#ifdef MADV_HUGEPAGE
    if (p)
        madvise(p, sz, MADV_HUGEPAGE); /* advice only: failure is harmless */
#endif
    return p;
}

/* First slot whose extent ends after a. */
static size_t first_slot(const cjob *j, uint64_t a)
{
    size_t lo = 0, hi = j->ns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->s[mid].off + j->s[mid].ext <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* Room for `need` bytes of a staged slot, doubling as data arrives. */
static int grow(slot *s, uint64_t need)
{
    if (need <= s->cap)
        return 0;
    uint64_t cap = s->cap ? s->cap : 65536;
    while (cap < need)
        cap *= 2;
    if (cap > s->ext)
        cap = s->ext;
    uint8_t *p = tg_realloc(s->dst, (size_t)cap);
    if (!p)
        return -1;
    s->dst = p;
    s->cap = cap;
    return 0;
}

/* Copies decoded bytes [a, b) into the slots; bytes no slot owns must be 0. */
static int scatter(cjob *j, const uint8_t *buf, uint64_t a, uint64_t b)
{
    uint64_t pos = a;
    for (size_t i = first_slot(j, a); i < j->ns && j->s[i].off < b; i++) {
        slot *s = &j->s[i];
        uint64_t lo = s->off > a ? s->off : a, hi = s->off + s->ext < b ? s->off + s->ext : b;
        if (!all_zero(buf + (pos - a), (size_t)(lo - pos)))
            return FR_GAP;
        if (hi > lo && j->staged && grow(s, hi - s->off) < 0)
            return FR_NOMEM;
        if (hi > lo)
            memcpy(s->dst + (lo - s->off), buf + (lo - a), (size_t)(hi - lo));
        pos = hi;
    }
    return all_zero(buf + (pos - a), (size_t)(b - pos)) ? FR_OK : FR_GAP;
}

/* Decodes frame k: straight into one slot's buffer when it lies inside it. */
static int decode_frame(cjob *j, size_t k, ZSTD_DCtx *dc, uint8_t **scratch, const char **why)
{
    const frame *f = &j->fr[k];
    size_t len = (size_t)(f->b - f->a), i = first_slot(j, f->a);
    uint8_t *dst;
    int direct = !j->staged && i < j->ns && j->s[i].off <= f->a &&
                 f->b <= j->s[i].off + j->s[i].ext;
    if (direct) {
        dst = j->s[i].dst + (f->a - j->s[i].off);
    } else {
        if (!*scratch && !(*scratch = tg_malloc((size_t)FORMAT_CONST_CHUNK)))
            return FR_NOMEM;
        dst = *scratch;
    }
    size_t got = ZSTD_decompressDCtx(dc, dst, len, f->src, f->n);
    if (ZSTD_isError(got) || got != len) {
        *why = ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame";
        return FR_ZSTD;
    }
    return direct ? FR_OK : scatter(j, dst, f->a, f->b);
}

static void decode_frames(cjob *j)
{
    int nt = j->staged ? 1 : nthreads(j->nfr);
#pragma omp parallel num_threads(nt)
    {
        ZSTD_DCtx *dc = format_zstd_dctx();
        uint8_t *scratch = NULL;
#pragma omp for schedule(dynamic)
        for (size_t k = 0; k < j->nfr; k++)
            j->status[k] = dc ? decode_frame(j, k, dc, &scratch, &j->why[k]) : FR_NOMEM;
        tg_free(scratch);
        ZSTD_freeDCtx(dc);
    }
}

/* Moves each slot's bytes into the graph: padding checked, staged copied. */
static int finish(format_loader *L, cjob *j)
{
    for (size_t i = 0; i < j->ns; i++) {
        slot *s = &j->s[i];
        if (s->ext > s->nbytes && !all_zero(s->dst + s->nbytes, (size_t)(s->ext - s->nbytes)))
            return format_load_fail(L, s->off + s->nbytes, "padding after value %d is "
                                    "not zero", s->value);
        if (j->staged) {
            uint8_t *p = alloc_final(s->ext);
            if (!p)
                return format_load_fail(L, s->off, "out of memory");
            if (s->ext)
                memcpy(p, s->dst, (size_t)s->ext);
            tg_free(s->dst);
            s->dst = p;
        }
        /* bool data is 0 or 1, as the writer writes it and the text IR
         * prints and parses it (kernels may test a bool byte for == 1) */
        if (L->g->values[s->value].type.dtype == GRAPH_BOOL)
            for (uint64_t k = 0; k < s->nbytes; k++)
                if (s->dst[k] > 1)
                    return format_load_fail(L, s->off + k, "value %d is bool, its byte %llu "
                                            "is %u (want 0 or 1)", s->value,
                                            (unsigned long long)k, s->dst[k]);
        L->g->values[s->value].data = s->dst;
        s->dst = NULL;
    }
    return 0;
}

static int run(format_loader *L, cjob *j, size_t stored)
{
    uint64_t total = 0;
    for (size_t i = 0; i < j->ns; i++)
        total += j->s[i].ext;
    j->staged = total > FORMAT_TRUST_RATIO * (uint64_t)stored + FORMAT_TRUST_SLACK;
    for (size_t i = 0; !j->staged && i < j->ns; i++)
        if (!(j->s[i].dst = alloc_final(j->s[i].ext)))
            return format_load_fail(L, j->s[i].off, "out of memory for %llu bytes",
                                    (unsigned long long)j->s[i].ext);
    j->status = tg_calloc(j->nfr, sizeof *j->status);
    j->why = tg_calloc(j->nfr, sizeof *j->why);
    if (!j->status || !j->why)
        return format_load_fail(L, 0, "out of memory");
    decode_frames(j);
    for (size_t k = 0; k < j->nfr; k++) {
        static const char *const what[] = {"", "zstd", "bytes outside any value are nonzero",
                                           "out of memory"};
        if (j->status[k] != FR_OK)
            return format_load_fail(L, j->fr[k].a, "frame %zu: %s%s%s", k,
                                    what[j->status[k]], j->status[k] == FR_ZSTD ? ": " : "",
                                    j->status[k] == FR_ZSTD ? j->why[k] : "");
    }
    return finish(L, j);
}

int format_dec_constants(format_loader *L, const uint8_t *src, size_t n, uint64_t raw)
{
    cjob j = {0};
    L->sec = format_section_name(FORMAT_SEC_CONSTANTS);
    L->item = NULL;
    int rc = walk_frames(L, src, n, raw, &j);
    if (rc == 0)
        rc = collect_slots(L, raw, &j);
    if (rc == 0)
        rc = run(L, &j, n);
    for (size_t i = 0; i < j.ns; i++)
        tg_free(j.s[i].dst);
    tg_free(j.s);
    tg_free(j.fr);
    tg_free(j.status);
    tg_free(j.why);
    return rc;
}
