/*
 * tgraph_decode.c - the .tgraph section decoders (see tgraph_decode.h and
 * the layout in tgraph.h).  Each read is bounds-checked; each count is
 * checked against the bytes left (times the smallest record it can have)
 * before its array is allocated; each index is checked against what it
 * names.  The graph's own verifier runs afterwards for the semantic rest.
 */
#include <stdio.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/target.h"
#include "tgraph_decode.h"
#include "../graph/graph_impl.h"

int format_load_fail(format_loader *L, size_t pos, const char *fmt, ...)
{
    tg_errpos at = {.file = L->name, .section = L->sec, .unit = "byte", .offset = pos,
                    .item = L->item, .index = L->index};
    va_list ap;
    va_start(ap, fmt);
    tg_vfail_at(TG_ERR_FORMAT, L->err, L->errlen, &at, fmt, ap);
    va_end(ap);
    return -1;
}

static int short_read(format_loader *L, const format_rd *r)
{
    return format_load_fail(L, r->pos, "the section ends early (%zu bytes left)",
                            format_rd_left(r));
}

static int oom(format_loader *L, const format_rd *r)
{
    return format_load_fail(L, r->pos, "out of memory");
}

/* Room for n entries of g's array a: stable storage, committed once here
 * (the limits were checked by get_count). */
static int grow(format_loader *L, const format_rd *r, graph_array a, uint32_t n)
{
    if (graph_grow_array(L->g, a, n) != TG_OK)
        return format_load_fail(L, r->pos, "%s", graph_error(L->g));
    return 0;
}

/* Every reader below returns through these on a short section. */
#define GET(fn, out)                                                          \
    do {                                                                      \
        if (fn(r, out) < 0)                                                   \
            return short_read(L, r);                                          \
    } while (0)

/* A count of records of at least min_rec bytes each, at most max. */
static int get_count(format_loader *L, format_rd *r, size_t min_rec,
                     uint32_t max, const char *what, uint32_t *n)
{
    size_t at = r->pos;
    GET(format_rd_u32, n);
    if (*n > max)
        return format_load_fail(L, at, "%u %s (at most %u)", *n, what, max);
    if ((uint64_t)*n * min_rec > format_rd_left(r))
        return format_load_fail(L, at, "%u %s need at least %llu bytes, %zu are left",
                                *n, what, (unsigned long long)*n * min_rec,
                                format_rd_left(r));
    return 0;
}

/* A zeroed array of n elements (at least one, so NULL means failure). */
static void *alloc_array(uint32_t n, size_t elem) { return tg_calloc(n ? n : 1, elem); }

/* A string reference: NULL for "none" unless required. */
static int get_str(format_loader *L, format_rd *r, int required,
                   const char *what, const char **s)
{
    size_t at = r->pos;
    uint32_t i;
    GET(format_rd_u32, &i);
    if (i == FORMAT_NO_STR && !required) {
        *s = NULL;
        return 0;
    }
    if (i >= L->nstrs)
        return format_load_fail(L, at, "%s names string %u, there are %u", what,
                                i, L->nstrs);
    *s = L->strs[i];
    return 0;
}

static int expect_end(format_loader *L, const format_rd *r)
{
    L->item = NULL;
    if (format_rd_left(r))
        return format_load_fail(L, r->pos, "%zu unexpected bytes at the end",
                                format_rd_left(r));
    return 0;
}

int format_dec_strings(format_loader *L, format_rd *r)
{
    uint32_t n;
    if (get_count(L, r, 4, INT32_MAX, "strings", &n) < 0)
        return -1;
    L->strs = alloc_array(n, sizeof *L->strs);
    L->opcache = alloc_array(n, sizeof *L->opcache);
    if (!L->strs || !L->opcache)
        return oom(L, r);
    L->item = "string";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        uint32_t len;
        const uint8_t *s;
        size_t at = r->pos;
        GET(format_rd_u32, &len);
        if (format_rd_span(r, len, &s) < 0)
            return format_load_fail(L, at, "length %u runs past the end", len);
        if (memchr(s, 0, len))
            return format_load_fail(L, at, "contains a NUL byte");
        L->strs[i] = graph_intern(L->g, (const char *)s, (long)len);
        if (!L->strs[i])
            return oom(L, r);
        L->opcache[i] = -2; /* not looked up yet */
        L->nstrs = i + 1;
    }
    return expect_end(L, r);
}

int format_dec_symbols(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 12, 127, "symbols", &n) < 0)
        return -1;
    if (grow(L, r, GRAPH_ARRAY_SYMS, n) < 0)
        return -1;
    L->item = "symbol";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        graph_symbol *s = &g->syms[i];
        size_t at = r->pos;
        if (get_str(L, r, 1, "the name", &s->name) < 0)
            return -1;
        GET(format_rd_i64, &s->traced);
        if (s->traced < 0)
            return format_load_fail(L, at, "traced size %lld is negative",
                                    (long long)s->traced);
        for (uint32_t k = 0; k < i; k++)
            if (g->syms[k].name == s->name)
                return format_load_fail(L, at, "name '%s' is used twice", s->name);
        g->nsyms = (int32_t)i + 1;
    }
    return expect_end(L, r);
}

int format_dec_provenance(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 28, GRAPH_MAX_ITEMS, "frames", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_FRAMES, n) < 0)
        return -1;
    L->item = "frame";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        graph_frame *f = &g->frames[i];
        GET(format_rd_u64, &f->ip);
        if (get_str(L, r, 0, "the function", &f->func) < 0)
            return -1;
        GET(format_rd_u64, &f->offset);
        if (get_str(L, r, 0, "the file", &f->file) < 0)
            return -1;
        GET(format_rd_i32, &f->line);
        g->nframes = (int32_t)i + 1;
    }
    L->item = NULL;
    if (get_count(L, r, 20, GRAPH_MAX_ITEMS, "provenance entries", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_PROVS, n) < 0)
        return -1;
    L->item = "provenance";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        graph_prov *p = &g->provs[i];
        uint32_t f0, nf;
        if (get_str(L, r, 1, "the file", &p->file) < 0)
            return -1;
        GET(format_rd_i32, &p->line);
        if (get_str(L, r, 1, "the function", &p->func) < 0)
            return -1;
        size_t at = r->pos;
        GET(format_rd_u32, &f0);
        GET(format_rd_u32, &nf);
        if (f0 > (uint32_t)g->nframes || nf > (uint32_t)g->nframes - f0)
            return format_load_fail(L, at, "frames %u..%u of %d", f0, f0 + nf,
                                    g->nframes);
        p->frame0 = (int32_t)f0;
        p->nframes = (int32_t)nf;
        g->nprovs = (int32_t)i + 1;
    }
    return expect_end(L, r);
}

/* Dims, their product and the dynamic marks of one value. */
static int get_type(format_loader *L, format_rd *r, graph_value *v, size_t at)
{
    for (int d = 0; d < v->type.ndim; d++) {
        GET(format_rd_i64, &v->type.dim[d]);
        int64_t x = v->type.dim[d];
        if (x < 0)
            return format_load_fail(L, at, "dim %d is %lld", d, (long long)x);
    }
    char why[200];
    if (graph_type_check(&v->type, why, sizeof why) != TG_OK)
        return format_load_fail(L, at, "%s", why);
    for (int d = 0; d < v->type.ndim; d++) {
        uint8_t s;
        GET(format_rd_u8, &s);
        v->sym[d] = (int8_t)(s < 128 ? s : (int)s - 256);
        if ((v->dyn >> d & 1) && (v->sym[d] < 0 || v->sym[d] >= L->g->nsyms))
            return format_load_fail(L, at, "dim %d names symbol %d, there are %d",
                                    d, v->sym[d], L->g->nsyms);
    }
    return 0;
}

static int get_value(format_loader *L, format_rd *r, graph_value *v, uint64_t *off)
{
    size_t at = r->pos;
    uint8_t kind, dt, ndim, flags;
    GET(format_rd_u8, &kind);
    GET(format_rd_u8, &dt);
    GET(format_rd_u8, &ndim);
    GET(format_rd_u8, &flags);
    GET(format_rd_u32, &v->dyn);
    if (kind >= FORMAT_NCODES(format_value_kinds))
        return format_load_fail(L, at, "kind code %u is unknown", kind);
    v->kind = (graph_value_kind)format_value_kinds[kind];
    if (format_dtype_from_code(dt, &v->type.dtype) < 0)
        return format_load_fail(L, at + 1, "dtype code %u is unknown", dt);
    if (ndim > GRAPH_MAX_DIMS)
        return format_load_fail(L, at + 2, "%u dims (at most %d)", ndim, GRAPH_MAX_DIMS);
    v->type.ndim = ndim;
    int source = graph_kind_has_data(v->kind);
    if (flags > 1 || (flags && !source))
        return format_load_fail(L, at + 3, "flags 0x%x are invalid for a %s", flags,
                                graph_value_kind_name(v->kind));
    if (v->dyn >> ndim)
        return format_load_fail(L, at + 4, "dynamic mask 0x%x has bits past %u dims",
                                v->dyn, ndim);
    if (get_str(L, r, 0, "the name", &v->name) < 0)
        return -1;
    GET(format_rd_i32, &v->node);
    GET(format_rd_i32, &v->out_index);
    GET(format_rd_u64, &v->hash);
    size_t at_off = r->pos;
    GET(format_rd_u64, off);
    if (v->kind == GRAPH_VALUE_INTER ? v->node < 0 : v->node != -1)
        return format_load_fail(L, at, "a %s with producer node %d",
                                graph_value_kind_name(v->kind), v->node);
    if (!flags && *off)
        return format_load_fail(L, at_off, "data offset %llu without data",
                                (unsigned long long)*off);
    if (!flags)
        *off = UINT64_MAX;
    return get_type(L, r, v, at);
}

int format_dec_values(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 36, GRAPH_MAX_VALUES, "values", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_VALUES, n) < 0)
        return -1;
    if (!(L->data_off = alloc_array(n, sizeof *L->data_off)))
        return oom(L, r);
    /* All zero first (committed pages may be reused ones): data NULL, so
     * graph_free is safe whichever value fails. */
    graph_zero_array(g, GRAPH_ARRAY_VALUES, (int32_t)n);
    g->nvalues = (int32_t)n;
    L->item = "value";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        if (get_value(L, r, &g->values[i], &L->data_off[i]) < 0)
            return -1;
    }
    return expect_end(L, r);
}

/* ---- nodes ---- */

static const char *attr_kind_name(graph_attr_kind k)
{
    return k == GRAPH_ATTR_I64 ? "i64" : k == GRAPH_ATTR_F32 ? "f32"
           : k == GRAPH_ATTR_INTS ? "ints" : k == GRAPH_ATTR_STR ? "str" : "dtype";
}

/* The payload of one attribute, into its field of the node's struct. */
static int get_attr_value(format_loader *L, format_rd *r, graph_attr_kind kind,
                          char *field, size_t at)
{
    switch (kind) {
    case GRAPH_ATTR_I64: {
        int64_t x;
        GET(format_rd_i64, &x);
        memcpy(field, &x, sizeof x);
        return 0;
    }
    case GRAPH_ATTR_F32: {
        float x;
        GET(format_rd_f32, &x);
        memcpy(field, &x, sizeof x);
        return 0;
    }
    case GRAPH_ATTR_DTYPE: {
        uint8_t c;
        graph_dtype dt;
        GET(format_rd_u8, &c);
        if (format_dtype_from_code(c, &dt) < 0)
            return format_load_fail(L, at, "dtype code %u is unknown", c);
        memcpy(field, &dt, sizeof dt);
        return 0;
    }
    case GRAPH_ATTR_INTS: {
        graph_ints x;
        uint32_t cnt;
        memset(&x, 0, sizeof x);
        GET(format_rd_u32, &cnt);
        if (cnt > GRAPH_MAX_INTS)
            return format_load_fail(L, at, "a list of %u entries (at most %d)", cnt,
                                    GRAPH_MAX_INTS);
        x.n = (int32_t)cnt;
        for (uint32_t j = 0; j < cnt; j++)
            GET(format_rd_i64, &x.v[j]);
        memcpy(field, &x, sizeof x);
        return 0;
    }
    case GRAPH_ATTR_STR: {
        uint32_t len;
        GET(format_rd_u32, &len);
        if (len >= GRAPH_MAX_STR || len > format_rd_left(r))
            return format_load_fail(L, at, "a string of %u bytes (at most %d, %zu left)",
                                    len, GRAPH_MAX_STR - 1, format_rd_left(r));
        if (memchr(r->p + r->pos, 0, len))
            return format_load_fail(L, at, "a string attribute holds a NUL byte");
        memset(field, 0, GRAPH_MAX_STR);
        memcpy(field, r->p + r->pos, len);
        r->pos += len;
        return 0;
    }
    }
    return format_load_fail(L, at, "attribute kind %d", (int)kind);
}

/* One attribute, matched to the op's descriptors by name. */
static int get_attr(format_loader *L, format_rd *r, graph_node *n, uint64_t *seen)
{
    const graph_op_info *info = &graph_ops[n->op];
    size_t at = r->pos;
    const char *name;
    uint8_t code;
    if (get_str(L, r, 1, "an attribute", &name) < 0)
        return -1;
    GET(format_rd_u8, &code);
    if (code >= FORMAT_NCODES(format_attr_kinds))
        return format_load_fail(L, at, "attribute '%s' has unknown kind code %u",
                                name, code);
    graph_attr_kind kind = (graph_attr_kind)format_attr_kinds[code];
    const graph_attr_desc *d = info->nattrs ? info->attr_descs() : NULL;
    int k = 0;
    while (k < info->nattrs && strcmp(d[k].name, name) != 0)
        k++;
    if (k == info->nattrs || k >= 64)
        return format_load_fail(L, at, "op '%s' has no attribute '%s'", info->name, name);
    if (*seen >> k & 1)
        return format_load_fail(L, at, "attribute '%s' is given twice", name);
    *seen |= UINT64_C(1) << k;
    if (kind != d[k].kind)
        return format_load_fail(L, at, "attribute '%s' is %s, op '%s' has it as %s",
                                name, attr_kind_name(kind), info->name,
                                attr_kind_name(d[k].kind));
    return get_attr_value(L, r, kind, (char *)tg_node_attrs_mut(n) + d[k].offset, at);
}

/* The op of a node, by name (cached per string) and version. */
static int get_op(format_loader *L, format_rd *r, graph_node *n, uint32_t i)
{
    size_t at = r->pos;
    uint32_t si, ver;
    GET(format_rd_u32, &si);
    if (si >= L->nstrs)
        return format_load_fail(L, at, "the op names string %u, there are %u", si,
                                L->nstrs);
    if (L->opcache[si] == -2) {
        graph_op op = graph_op_find(L->strs[si], strlen(L->strs[si]));
        L->opcache[si] = op == GRAPH_OP_COUNT ? -1 : (int16_t)op;
    }
    if (L->opcache[si] < 0) {
        L->item = NULL;
        return format_load_fail(L, at, "node %u names unknown op '%s'", i, L->strs[si]);
    }
    n->op = (graph_op)L->opcache[si];
    const graph_op_info *info = &graph_ops[n->op];
    GET(format_rd_u32, &ver);
    if (ver == 0)
        return format_load_fail(L, at + 4, "op '%s' has version 0", info->name);
    if (ver > (uint32_t)info->version)
        return format_load_fail(L, at + 4, "op '%s' version %u is newer than this "
                                "build's (%d)", info->name, ver, info->version);
    return 0;
}

/* n value or provenance ids, each below limit. */
static int get_ids(format_loader *L, format_rd *r, int32_t *ids, uint32_t n,
                   int32_t limit, const char *what)
{
    for (uint32_t k = 0; k < n; k++) {
        size_t at = r->pos;
        GET(format_rd_i32, &ids[k]);
        if (ids[k] < 0 || ids[k] >= limit)
            return format_load_fail(L, at, "%s %u is %d, there are %d", what, k,
                                    ids[k], limit);
    }
    return 0;
}

static int get_node(format_loader *L, format_rd *r, uint32_t i)
{
    graph *g = L->g;
    graph_node *n = &g->nodes[i];
    uint32_t flags, nin, nout, nprov, nattrs;
    if (get_op(L, r, n, i) < 0)
        return -1;
    size_t at = r->pos;
    GET(format_rd_u32, &flags);
    GET(format_rd_u32, &nin);
    GET(format_rd_u32, &nout);
    GET(format_rd_u32, &nprov);
    GET(format_rd_u32, &nattrs);
    if (flags & ~(uint32_t)(GRAPH_NODE_DEAD | GRAPH_NODE_SPECIALIZED))
        return format_load_fail(L, at, "flags 0x%x are unknown", flags);
    if (nin > GRAPH_MAX_NODE_IO || nout > GRAPH_MAX_NODE_IO)
        return format_load_fail(L, at + 4, "%u inputs, %u outputs (at most %d)", nin,
                                nout, GRAPH_MAX_NODE_IO);
    if ((uint64_t)nprov * 4 > format_rd_left(r) || (uint64_t)nattrs * 5 > format_rd_left(r))
        return format_load_fail(L, at + 12, "%u provenance ids and %u attributes do not "
                                "fit in %zu bytes", nprov, nattrs, format_rd_left(r));
    n->flags = flags;
    n->in = graph_alloc_ids(g, (int)nin);
    n->out = graph_alloc_ids(g, (int)nout);
    n->prov = graph_alloc_ids(g, (int)nprov);
    if (!n->in || !n->out || !n->prov)
        return oom(L, r);
    if (get_ids(L, r, n->in, nin, g->nvalues, "input") < 0 ||
        get_ids(L, r, n->out, nout, g->nvalues, "output") < 0 ||
        get_ids(L, r, n->prov, nprov, g->nprovs, "provenance id") < 0)
        return -1;
    n->nin = (int32_t)nin;
    n->nout = (int32_t)nout;
    n->nprov = (int32_t)nprov;
    if (graph_ops[n->op].attr_size) {
        /* Attribute storage lives in the graph's arena, as graph.c makes it. */
        n->attrs = graph_alloc_bytes(g, graph_ops[n->op].attr_size);
        if (!n->attrs)
            return oom(L, r);
        graph_attrs_default(n->op, tg_node_attrs_mut(n));
    }
    uint64_t seen = 0;
    for (uint32_t k = 0; k < nattrs; k++)
        if (get_attr(L, r, n, &seen) < 0)
            return -1;
    return 0;
}

int format_dec_nodes(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 28, GRAPH_MAX_NODES, "nodes", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_NODES, n) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        L->item = "node";
        L->index = i;
        if (get_node(L, r, i) < 0)
            return -1;
        g->nnodes = (int32_t)i + 1;
    }
    /* Producers named by values exist and have that output slot. */
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        if (v->kind == GRAPH_VALUE_INTER &&
            (v->node >= g->nnodes || v->out_index < 0 ||
             v->out_index >= g->nodes[v->node].nout)) {
            L->item = NULL;
            return format_load_fail(L, r->pos, "value %d names output %d of node %d, "
                                    "which does not exist", i, v->out_index, v->node);
        }
    }
    return expect_end(L, r);
}

/* ---- guards, signature ---- */

static int get_guard(format_loader *L, format_rd *r, graph_guard *gd)
{
    const graph *g = L->g;
    size_t at = r->pos;
    uint8_t kind, policy;
    uint16_t pad;
    GET(format_rd_i32, &gd->value);
    GET(format_rd_u8, &kind);
    GET(format_rd_u8, &policy);
    GET(format_rd_u16, &pad);
    GET(format_rd_i64, &gd->index);
    GET(format_rd_f64, &gd->expect);
    GET(format_rd_u64, &gd->hash);
    GET(format_rd_i32, &gd->prov);
    if (gd->value < 0 || gd->value >= g->nvalues)
        return format_load_fail(L, at, "reads value %d, there are %d", gd->value,
                                g->nvalues);
    if (kind >= FORMAT_NCODES(format_guard_kinds) ||
        policy >= FORMAT_NCODES(format_guard_policies) || pad)
        return format_load_fail(L, at + 4, "kind %u, policy %u, padding %u are invalid",
                                kind, policy, pad);
    gd->kind = (graph_guard_kind)format_guard_kinds[kind];
    gd->policy = (graph_guard_policy)format_guard_policies[policy];
    if (gd->index < -1 || gd->prov < -1 || gd->prov >= g->nprovs)
        return format_load_fail(L, at + 8, "index %lld or provenance %d is out of range",
                                (long long)gd->index, gd->prov);
    return 0;
}

int format_dec_guards(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 36, GRAPH_MAX_ITEMS, "guards", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_GUARDS, n) < 0)
        return -1;
    L->item = "guard";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        if (get_guard(L, r, &g->guards[i]) < 0)
            return -1;
        g->nguards = (int32_t)i + 1;
    }
    return expect_end(L, r);
}

static int cmp_ptr(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return x < y ? -1 : x > y;
}

/* Inputs: each an input value, listed once; every input value listed. */
static int get_inputs(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 4, GRAPH_MAX_ITEMS, "inputs", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_INPUTS, n) < 0)
        return -1;
    char *seen = tg_calloc((size_t)g->nvalues + 1, 1);
    if (!seen)
        return oom(L, r);
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        size_t at = r->pos;
        int32_t v;
        if (format_rd_i32(r, &v) < 0)
            rc = short_read(L, r);
        else if (v < 0 || v >= g->nvalues || g->values[v].kind != GRAPH_VALUE_INPUT || seen[v])
            rc = format_load_fail(L, at, "input %u is value %d: not an input, or "
                                  "listed twice", i, v);
        else {
            seen[v] = 1;
            g->inputs[g->ninputs++] = v;
        }
    }
    for (int32_t v = 0; rc == 0 && v < g->nvalues; v++)
        if (g->values[v].kind == GRAPH_VALUE_INPUT && !seen[v])
            rc = format_load_fail(L, r->pos, "input value %d is not listed", v);
    tg_free(seen);
    return rc;
}

static int get_outputs(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    if (get_count(L, r, 8, GRAPH_MAX_ITEMS, "outputs", &n) < 0 ||
        grow(L, r, GRAPH_ARRAY_OUTPUTS, n) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        graph_output *o = &g->outputs[i];
        size_t at = r->pos;
        GET(format_rd_i32, &o->value);
        if (get_str(L, r, 1, "an output name", &o->name) < 0)
            return -1;
        if (o->value < 0 || o->value >= g->nvalues)
            return format_load_fail(L, at, "output %u is value %d, there are %d", i,
                                    o->value, g->nvalues);
        g->noutputs = (int32_t)i + 1;
    }
    const char **names = alloc_array(n, sizeof *names);
    if (!names)
        return oom(L, r);
    for (uint32_t i = 0; i < n; i++)
        names[i] = g->outputs[i].name;
    qsort(names, n, sizeof *names, cmp_ptr); /* interned: equal names, equal pointers */
    int rc = 0;
    for (uint32_t i = 1; rc == 0 && i < n; i++)
        if (names[i] == names[i - 1])
            rc = format_load_fail(L, r->pos, "output name '%s' is used twice", names[i]);
    tg_free(names);
    return rc;
}

/* The target the layout was planned for: a string of at most 47 bytes, or none. */
int format_dec_target(format_loader *L, format_rd *r)
{
    L->item = NULL;
    const char *t;
    if (get_str(L, r, 0, "the target", &t) < 0)
        return -1;
    if (t && (strlen(t) == 0 || strlen(t) >= sizeof ((graph_target *)0)->name))
        return format_load_fail(L, 0, "the target name has %zu bytes (1 to %zu)", strlen(t),
                                sizeof ((graph_target *)0)->name - 1);
    L->g->target = t;
    return expect_end(L, r);
}

/* States: each a state value (listed once) and a next value of its type. */
int format_dec_states(format_loader *L, format_rd *r)
{
    graph *g = L->g;
    uint32_t n;
    L->item = NULL;
    if (get_count(L, r, 8, GRAPH_MAX_ITEMS, "states", &n) < 0)
        return -1;
    if (n && !(g->states = tg_malloc(sizeof *g->states * n)))
        return oom(L, r);
    g->cap_states = (int32_t)n;
    tg_free(L->state_seen);
    if (!(L->state_seen = tg_calloc((size_t)g->nvalues + 1, 1)))
        return oom(L, r);
    L->item = "state";
    for (uint32_t i = 0; i < n; i++) {
        L->index = i;
        size_t at = r->pos;
        int32_t v, nx;
        GET(format_rd_i32, &v);
        GET(format_rd_i32, &nx);
        if (v < 0 || v >= g->nvalues || g->values[v].kind != GRAPH_VALUE_STATE)
            return format_load_fail(L, at, "is value %d: not a state value", v);
        if (L->state_seen[v]++)
            return format_load_fail(L, at, "value %d is listed twice", v);
        if (nx < 0 || nx >= g->nvalues ||
            !graph_type_eq(&g->values[v].type, &g->values[nx].type))
            return format_load_fail(L, at + 4, "its next value %d is out of range or of "
                                    "another type", nx);
        g->states[g->nstates++] = (graph_state){v, nx};
    }
    return expect_end(L, r);
}

int format_dec_signature(format_loader *L, format_rd *r)
{
    L->item = NULL;
    if (get_str(L, r, 1, "the graph name", &L->g->name) < 0 || get_inputs(L, r) < 0 ||
        get_outputs(L, r) < 0)
        return -1;
    return expect_end(L, r);
}
