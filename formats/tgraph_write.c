/*
 * tgraph_write.c - the .tgraph writer (layout in tgraph.h).
 *
 * Metadata sections are encoded into byte buffers, then each is
 * compressed as one zstd frame; the constants are compressed in chunks
 * straight from the values' data (tgraph_consts.c).  The output is
 * deterministic: the same graph and level give the same bytes, whatever
 * the number of threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../graph/alloc.h"
#include "../graph/tg_hash.h"
#include "file.h"
#include "tgraph_impl.h"
#include "../graph/graph_impl.h"

typedef struct str_entry {
    const char *key;
    uint32_t index;
    UT_hash_handle hh;
} str_entry;

/* Encoder state: the raw metadata sections and the string table. */
typedef struct encoder {
    const graph *g;
    format_wbuf sec[FORMAT_NSEC]; /* raw sections; constants stays empty */
    format_wbuf strs;             /* the strings section's entries */
    uint32_t nstrs;
    str_entry *map; /* keyed by pointer: graph strings are interned */
    uint64_t *data_off; /* per value: offset in constants, or UINT64_MAX */
    format_blob *blobs; /* the data, in offset order */
    size_t nblobs;
    uint64_t const_size;
    char *err;
    size_t errlen;
} encoder;

#define SEC(e, id) (&(e)->sec[(id) - 1])

format_save_opts format_save_default_opts(void)
{
    format_save_opts o = {3};
    return o;
}

static tg_status fail(encoder *e, tg_status st, const char *what, long index)
{
    tg_errf(e->err, e->errlen, "cannot save graph '%s': %s %ld is malformed",
            e->g->name ? e->g->name : "?", what, index);
    return st;
}

/* The index of string s (none for NULL), adding it on first use. */
static uint32_t str_ref(encoder *e, const char *s)
{
    if (!s)
        return FORMAT_NO_STR;
    str_entry *x;
    HASH_FIND_PTR(e->map, &s, x);
    if (x)
        return x->index;
    x = tg_malloc(sizeof *x);
    if (!x) {
        e->strs.oom = 1;
        return 0;
    }
    x->key = s;
    x->index = e->nstrs++;
    tg_hash_oom = 0;
    HASH_ADD_PTR(e->map, key, x);
    if (tg_hash_oom) {
        tg_free(x);
        e->strs.oom = 1;
        return 0;
    }
    size_t n = strlen(s);
    format_put_u32(&e->strs, (uint32_t)n);
    format_put_bytes(&e->strs, s, n);
    return x->index;
}

static tg_status put_values(encoder *e)
{
    const graph *g = e->g;
    format_wbuf *b = SEC(e, FORMAT_SEC_VALUES);
    format_put_u32(b, (uint32_t)g->nvalues);
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        int dt = format_dtype_code(v->type.dtype);
        int kind = FORMAT_CODE(format_value_kinds, v->kind);
        if (dt < 0 || kind < 0 || v->type.ndim < 0 ||
            v->type.ndim > GRAPH_MAX_DIMS)
            return fail(e, TG_ERR_FORMAT, "value", i);
        int has = v->data && graph_kind_has_data(v->kind);
        format_put_u8(b, (uint8_t)kind);
        format_put_u8(b, (uint8_t)dt);
        format_put_u8(b, (uint8_t)v->type.ndim);
        format_put_u8(b, (uint8_t)has);
        format_put_u32(b, v->dyn);
        format_put_u32(b, str_ref(e, v->name));
        format_put_i32(b, v->node);
        format_put_i32(b, v->out_index);
        format_put_u64(b, v->hash);
        format_put_u64(b, has ? e->data_off[i] : 0);
        for (int d = 0; d < v->type.ndim; d++)
            format_put_i64(b, v->type.dim[d]);
        for (int d = 0; d < v->type.ndim; d++)
            format_put_u8(b, (uint8_t)v->sym[d]);
    }
    return TG_OK;
}

/* Attributes by name, walked through the op's descriptors. */
static tg_status put_attrs(encoder *e, format_wbuf *b, const graph_node *n, int32_t i)
{
    const graph_op_info *info = &graph_ops[n->op];
    const char *a = tg_node_attrs(n);
    const graph_attr_desc *d = info->nattrs ? info->attr_descs() : NULL;
    for (int k = 0; k < info->nattrs; k++) {
        const char *f = a + d[k].offset;
        format_put_u32(b, str_ref(e, d[k].name));
        int kind = FORMAT_CODE(format_attr_kinds, d[k].kind);
        if (kind < 0)
            return fail(e, TG_ERR_FORMAT, "node", i);
        format_put_u8(b, (uint8_t)kind);
        switch (d[k].kind) {
        case GRAPH_ATTR_I64: {
            int64_t x;
            memcpy(&x, f, sizeof x);
            format_put_i64(b, x);
            break;
        }
        case GRAPH_ATTR_F32: {
            float x;
            memcpy(&x, f, sizeof x);
            format_put_f32(b, x);
            break;
        }
        case GRAPH_ATTR_DTYPE: {
            graph_dtype x;
            memcpy(&x, f, sizeof x);
            int c = format_dtype_code(x);
            if (c < 0)
                return fail(e, TG_ERR_FORMAT, "node", i);
            format_put_u8(b, (uint8_t)c);
            break;
        }
        case GRAPH_ATTR_STR: {
            size_t n = strnlen(f, GRAPH_MAX_STR);
            if (n == GRAPH_MAX_STR)
                return fail(e, TG_ERR_FORMAT, "node", i);
            format_put_u32(b, (uint32_t)n);
            format_put_bytes(b, f, n);
            break;
        }
        case GRAPH_ATTR_INTS: {
            graph_ints x;
            memcpy(&x, f, sizeof x);
            if (x.n < 0 || x.n > GRAPH_MAX_INTS)
                return fail(e, TG_ERR_FORMAT, "node", i);
            format_put_u32(b, (uint32_t)x.n);
            for (int j = 0; j < x.n; j++)
                format_put_i64(b, x.v[j]);
            break;
        }
        }
    }
    return TG_OK;
}

static tg_status put_nodes(encoder *e)
{
    const graph *g = e->g;
    format_wbuf *b = SEC(e, FORMAT_SEC_NODES);
    format_put_u32(b, (uint32_t)g->nnodes);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if ((unsigned)n->op >= GRAPH_OP_COUNT || n->nin < 0 || n->nout < 0 ||
            n->nprov < 0 || (n->nin && !n->in) || (n->nout && !n->out) ||
            (n->nprov && !n->prov))
            return fail(e, TG_ERR_FORMAT, "node", i);
        const graph_op_info *info = &graph_ops[n->op];
        format_put_u32(b, str_ref(e, info->name));
        format_put_u32(b, (uint32_t)info->version);
        format_put_u32(b, n->flags);
        format_put_u32(b, (uint32_t)n->nin);
        format_put_u32(b, (uint32_t)n->nout);
        format_put_u32(b, (uint32_t)n->nprov);
        format_put_u32(b, (uint32_t)info->nattrs);
        for (int k = 0; k < n->nin; k++)
            format_put_i32(b, n->in[k]);
        for (int k = 0; k < n->nout; k++)
            format_put_i32(b, n->out[k]);
        for (int k = 0; k < n->nprov; k++)
            format_put_i32(b, n->prov[k]);
        tg_status st = put_attrs(e, b, n, i);
        if (st != TG_OK)
            return st;
    }
    return TG_OK;
}

static tg_status put_provenance(encoder *e)
{
    const graph *g = e->g;
    format_wbuf *b = SEC(e, FORMAT_SEC_PROVENANCE);
    format_put_u32(b, (uint32_t)g->nframes);
    for (int32_t i = 0; i < g->nframes; i++) {
        const graph_frame *f = &g->frames[i];
        format_put_u64(b, f->ip);
        format_put_u32(b, str_ref(e, f->func));
        format_put_u64(b, f->offset);
        format_put_u32(b, str_ref(e, f->file));
        format_put_i32(b, f->line);
    }
    format_put_u32(b, (uint32_t)g->nprovs);
    for (int32_t i = 0; i < g->nprovs; i++) {
        const graph_prov *p = &g->provs[i];
        if (!p->file || !p->func || p->frame0 < 0 || p->nframes < 0 ||
            p->frame0 > g->nframes - p->nframes)
            return fail(e, TG_ERR_FORMAT, "provenance", i);
        format_put_u32(b, str_ref(e, p->file));
        format_put_i32(b, p->line);
        format_put_u32(b, str_ref(e, p->func));
        format_put_u32(b, (uint32_t)p->frame0);
        format_put_u32(b, (uint32_t)p->nframes);
    }
    return TG_OK;
}

static tg_status put_rest(encoder *e)
{
    const graph *g = e->g;
    format_wbuf *b = SEC(e, FORMAT_SEC_SYMBOLS);
    format_put_u32(b, (uint32_t)g->nsyms);
    for (int32_t i = 0; i < g->nsyms; i++) {
        format_put_u32(b, str_ref(e, g->syms[i].name));
        format_put_i64(b, g->syms[i].traced);
    }
    b = SEC(e, FORMAT_SEC_GUARDS);
    format_put_u32(b, (uint32_t)g->nguards);
    for (int32_t i = 0; i < g->nguards; i++) {
        const graph_guard *gd = &g->guards[i];
        int kind = FORMAT_CODE(format_guard_kinds, gd->kind);
        int policy = FORMAT_CODE(format_guard_policies, gd->policy);
        if (kind < 0 || policy < 0)
            return fail(e, TG_ERR_FORMAT, "guard", i);
        format_put_i32(b, gd->value);
        format_put_u8(b, (uint8_t)kind);
        format_put_u8(b, (uint8_t)policy);
        format_put_u16(b, 0);
        format_put_i64(b, gd->index);
        format_put_f64(b, gd->expect);
        format_put_u64(b, gd->hash);
        format_put_i32(b, gd->prov);
    }
    b = SEC(e, FORMAT_SEC_SIGNATURE);
    format_put_u32(b, str_ref(e, g->name));
    format_put_u32(b, (uint32_t)g->ninputs);
    for (int32_t i = 0; i < g->ninputs; i++)
        format_put_i32(b, g->inputs[i]);
    format_put_u32(b, (uint32_t)g->noutputs);
    for (int32_t i = 0; i < g->noutputs; i++) {
        format_put_i32(b, g->outputs[i].value);
        format_put_u32(b, str_ref(e, g->outputs[i].name));
    }
    b = SEC(e, FORMAT_SEC_TARGET);
    format_put_u32(b, g->target ? str_ref(e, g->target) : FORMAT_NO_STR);
    b = SEC(e, FORMAT_SEC_STATES);
    format_put_u32(b, (uint32_t)g->nstates);
    for (int32_t i = 0; i < g->nstates; i++) {
        format_put_i32(b, g->states[i].value);
        format_put_i32(b, g->states[i].next);
    }
    return TG_OK;
}

/* Places each value's data: in value order, 64-byte aligned. */
static tg_status layout_constants(encoder *e)
{
    const graph *g = e->g;
    e->data_off = tg_malloc(sizeof(uint64_t) * ((size_t)g->nvalues + 1));
    e->blobs = tg_malloc(sizeof(format_blob) * ((size_t)g->nvalues + 1));
    if (!e->data_off || !e->blobs)
        return TG_ERR_NOMEM;
    uint64_t off = 0;
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        e->data_off[i] = UINT64_MAX;
        if (!graph_kind_has_data(v->kind))
            continue;
        if (!v->data) { /* the loader verifies with data required */
            tg_errf(e->err, e->errlen, "cannot save graph '%s': %s value %%%d has no "
                    "data (elided)", g->name ? g->name : "?",
                    graph_value_kind_name(v->kind), i);
            return TG_ERR_ARG;
        }
        if (v->type.ndim < 0 || v->type.ndim > GRAPH_MAX_DIMS)
            return fail(e, TG_ERR_FORMAT, "value", i);
        size_t nb = graph_value_nbytes(v);
        e->data_off[i] = off;
        e->blobs[e->nblobs++] = (format_blob){v->data, off, nb};
        off += (nb + FORMAT_DATA_ALIGN - 1) & ~(uint64_t)(FORMAT_DATA_ALIGN - 1);
    }
    e->const_size = off;
    return TG_OK;
}

static void encoder_free(encoder *e)
{
    for (int i = 0; i < FORMAT_NSEC; i++)
        format_wbuf_free(&e->sec[i]);
    format_wbuf_free(&e->strs);
    str_entry *x, *tmp;
    HASH_ITER(hh, e->map, x, tmp) {
        HASH_DEL(e->map, x);
        tg_free(x);
    }
    tg_free(e->data_off);
    tg_free(e->blobs);
}

/* Fills every raw section but constants (laid out in e->data_off). */
static tg_status encode(encoder *e)
{
    tg_status st = layout_constants(e);
    if (st == TG_OK)
        st = put_values(e);
    if (st == TG_OK)
        st = put_nodes(e);
    if (st == TG_OK)
        st = put_provenance(e);
    if (st == TG_OK)
        st = put_rest(e);
    format_wbuf *s = SEC(e, FORMAT_SEC_STRINGS);
    format_put_u32(s, e->nstrs);
    format_put_bytes(s, e->strs.p, e->strs.len);
    int oom = e->strs.oom;
    for (int i = 0; i < FORMAT_NSEC; i++)
        oom |= e->sec[i].oom;
    if (st == TG_ERR_NOMEM || (st == TG_OK && oom)) {
        tg_errf(e->err, e->errlen, "cannot save graph '%s': out of memory",
                e->g->name ? e->g->name : "?");
        return TG_ERR_NOMEM;
    }
    return st;
}

/* ---- compression ---- */

int format_compress_frame(ZSTD_CCtx *cc, int level, const void *src, size_t n,
                          format_wbuf *out)
{
    ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1)))
        return -1;
    /* Levels above 19 default to windows readers refuse (tgraph.h). */
    if (level > 19 && ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog,
                                                          FORMAT_WINDOW_LOG_MAX)))
        return -1;
    size_t bound = ZSTD_compressBound(n);
    if (format_wbuf_reserve(out, bound) < 0)
        return -1;
    size_t z = ZSTD_compress2(cc, out->p + out->len, bound, n ? src : "", n);
    if (ZSTD_isError(z))
        return -1;
    out->len += z;
    return 0;
}

/* ---- the container ---- */

/* Compressed sections plus the header that lists them. */
typedef struct packed {
    format_wbuf head;
    format_wbuf comp[FORMAT_NSEC];
    uint64_t raw[FORMAT_NSEC];
} packed;

static void packed_free(packed *k)
{
    format_wbuf_free(&k->head);
    for (int i = 0; i < FORMAT_NSEC; i++)
        format_wbuf_free(&k->comp[i]);
}

static int make_header(packed *k)
{
    format_wbuf *h = &k->head;
    uint64_t off = FORMAT_HEADER_SIZE + FORMAT_ENTRY_SIZE * FORMAT_NSEC + 8, total = off;
    for (int i = 0; i < FORMAT_NSEC; i++)
        total += k->comp[i].len;
    format_put_bytes(h, FORMAT_MAGIC, 8);
    format_put_u32(h, FORMAT_VERSION);
    format_put_u32(h, FORMAT_NSEC);
    format_put_u64(h, total);
    format_put_u64(h, 0);
    for (int i = 0; i < FORMAT_NSEC; i++) {
        format_put_u32(h, (uint32_t)(i + 1));
        format_put_u32(h, FORMAT_CODEC_ZSTD);
        format_put_u64(h, off);
        format_put_u64(h, k->comp[i].len);
        format_put_u64(h, k->raw[i]);
        format_put_u64(h, format_xxh64(k->comp[i].p, k->comp[i].len, 0));
        off += k->comp[i].len;
    }
    if (h->oom)
        return -1;
    format_put_u64(h, format_xxh64(h->p, h->len, 0));
    return h->oom ? -1 : 0;
}

static tg_status check_level(int level, char *err, size_t errlen)
{
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
        tg_errf(err, errlen, "zstd level %d is out of range (%d..%d)",
                level, ZSTD_minCLevel(), ZSTD_maxCLevel());
        return TG_ERR_ARG;
    }
    return TG_OK;
}

/* Encodes and compresses g into k. */
static tg_status pack_graph(const graph *g, int level, packed *k, char *err, size_t errlen)
{
    encoder e = {.g = g, .err = err, .errlen = errlen};
    tg_status st = encode(&e);
    ZSTD_CCtx *cc = format_zstd_cctx();
    if (st == TG_OK && !cc)
        st = TG_ERR_NOMEM;
    for (int i = 0; st == TG_OK && i < FORMAT_NSEC; i++) {
        int rc;
        if (i + 1 == FORMAT_SEC_CONSTANTS) {
            k->raw[i] = e.const_size;
            rc = format_compress_constants(e.blobs, e.nblobs, e.const_size, level,
                                           &k->comp[i]);
        } else {
            k->raw[i] = e.sec[i].len;
            rc = format_compress_frame(cc, level, e.sec[i].p, e.sec[i].len, &k->comp[i]);
            format_wbuf_free(&e.sec[i]);
        }
        if (rc < 0)
            st = TG_ERR_NOMEM;
    }
    if (st == TG_OK && make_header(k) < 0)
        st = TG_ERR_NOMEM;
    if (st == TG_ERR_NOMEM)
        tg_errf(err, errlen, "cannot save graph '%s': out of memory compressing",
                g->name ? g->name : "?");
    ZSTD_freeCCtx(cc);
    encoder_free(&e);
    return st;
}

static tg_status concat(packed *k, void **buf, size_t *len, char *err, size_t errlen)
{
    size_t total = k->head.len;
    for (int i = 0; i < FORMAT_NSEC; i++)
        total += k->comp[i].len;
    uint8_t *p = tg_malloc(total);
    if (!p) {
        tg_errf(err, errlen, "cannot allocate %zu bytes for the file", total);
        return TG_ERR_NOMEM;
    }
    memcpy(p, k->head.p, k->head.len);
    size_t at = k->head.len;
    for (int i = 0; i < FORMAT_NSEC; i++) {
        if (k->comp[i].len)
            memcpy(p + at, k->comp[i].p, k->comp[i].len);
        at += k->comp[i].len;
    }
    *buf = p;
    *len = total;
    return TG_OK;
}

tg_status format_save_mem(const graph *g, const format_save_opts *opts,
                          void **buf, size_t *len, char *err, size_t errlen)
{
    if (buf)
        *buf = NULL;
    if (len)
        *len = 0;
    if (!g || !buf || !len) {
        tg_errf(err, errlen, "format_save_mem: NULL argument");
        return TG_ERR_NULL;
    }
    int level = opts ? opts->level : 3;
    tg_status st = check_level(level, err, errlen);
    if (st != TG_OK)
        return st;
    packed k = {0};
    st = pack_graph(g, level, &k, err, errlen);
    if (st == TG_OK)
        st = concat(&k, buf, len, err, errlen);
    packed_free(&k);
    return st;
}

tg_status format_save(const graph *g, const char *path,
                      const format_save_opts *opts, char *err, size_t errlen)
{
    if (!g || !path) {
        tg_errf(err, errlen, "format_save: NULL argument");
        return TG_ERR_NULL;
    }
    int level = opts ? opts->level : 3;
    tg_status st = check_level(level, err, errlen);
    if (st != TG_OK)
        return st;
    packed k = {0};
    st = pack_graph(g, level, &k, err, errlen);
    if (st != TG_OK) {
        packed_free(&k);
        return st;
    }
    format_wbuf parts[1 + FORMAT_NSEC];
    parts[0] = k.head;
    for (int i = 0; i < FORMAT_NSEC; i++)
        parts[1 + i] = k.comp[i];
    st = format_write_file(path, parts, 1 + FORMAT_NSEC, err, errlen);
    packed_free(&k);
    return st;
}

/* ---- raw sections (tests and fuzzing) ---- */

void format_raw_free(format_raw_sections *s)
{
    for (int i = 0; i < FORMAT_NSEC; i++) {
        tg_free(s->p[i]);
        s->p[i] = NULL;
        s->len[i] = 0;
    }
}

tg_status format_encode_raw(const graph *g, format_raw_sections *out,
                            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    encoder e = {.g = g, .err = err, .errlen = errlen};
    tg_status st = encode(&e);
    uint8_t *c = st == TG_OK ? tg_malloc((size_t)e.const_size + 1) : NULL;
    if (st == TG_OK && !c) {
        tg_errf(err, errlen, "out of memory");
        st = TG_ERR_NOMEM;
    }
    if (st == TG_OK)
        format_gather_constants(e.blobs, e.nblobs, 0, e.const_size, c);
    if (st == TG_OK) {
        for (int i = 0; i < FORMAT_NSEC; i++) {
            out->p[i] = e.sec[i].p;
            out->len[i] = e.sec[i].len;
            e.sec[i] = (format_wbuf){0};
        }
        out->p[FORMAT_SEC_CONSTANTS - 1] = c;
        out->len[FORMAT_SEC_CONSTANTS - 1] = (size_t)e.const_size;
    }
    encoder_free(&e);
    return st;
}

tg_status format_pack(const format_raw_sections *s, int level, void **buf,
                      size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    tg_status st = check_level(level, err, errlen);
    packed k = {0};
    ZSTD_CCtx *cc = format_zstd_cctx();
    if (st == TG_OK && !cc)
        st = TG_ERR_NOMEM;
    for (int i = 0; st == TG_OK && i < FORMAT_NSEC; i++) {
        k.raw[i] = s->len[i];
        format_blob all = {s->p[i], 0, s->len[i]};
        int rc = i + 1 == FORMAT_SEC_CONSTANTS
                     ? format_compress_constants(&all, 1, s->len[i], level, &k.comp[i])
                     : format_compress_frame(cc, level, s->p[i], s->len[i], &k.comp[i]);
        if (rc < 0)
            st = TG_ERR_NOMEM;
    }
    if (st == TG_OK && make_header(&k) < 0)
        st = TG_ERR_NOMEM;
    if (st == TG_OK)
        st = concat(&k, buf, len, err, errlen);
    else if (st == TG_ERR_NOMEM)
        tg_errf(err, errlen, "out of memory packing sections");
    ZSTD_freeCCtx(cc);
    packed_free(&k);
    return st;
}
