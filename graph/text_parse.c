/*
 * text_parse.c - the text IR parser (format in text.h): the driver, the
 * graph header, sym and return statements, and the token, type and label
 * helpers the statements in text_parse_stmt.c use.
 *
 * Hostile input is expected (the fuzz target feeds it bytes): the text is
 * not NUL-terminated, lists have fixed bounds, allocations are bounded by
 * the text's length, and nothing recurses.  The first error is kept and
 * everything else unwinds with -1.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "errors.h"
#include "text.h"
#include "text_parse.h"
#include "graph_impl.h"

/* ---- errors, arrays, tokens ---- */

int graph_text_fail(text_parser *p, size_t pos, const char *fmt, ...)
{
    if (p->failed)
        return -1;
    p->failed = 1;
    if (!p->err || !p->errlen)
        return -1;
    tg_errpos at = {0};
    graph_text_line_col(p->s, p->len, pos, &at.line, &at.col);
    va_list ap;
    va_start(ap, fmt);
    tg_verrf_at(p->err, p->errlen, &at, fmt, ap);
    va_end(ap);
    return -1;
}

int graph_text_fail_tok(text_parser *p, const char *fmt, ...)
{
    char msg[256], got[64];
    const text_tok *t = &p->tok;
    if (t->kind == TK_ERR)
        return graph_text_fail(p, t->pos, "%s", t->msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t->kind == TK_EOF) {
        snprintf(got, sizeof got, "end of input");
    } else {
        size_t n = t->len > 40 ? 40 : t->len;
        char *o = got;
        *o++ = '\'';
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)p->s[t->pos + i];
            *o++ = c < 0x20 || c >= 0x7f ? '?' : (char)c;
        }
        memcpy(o, t->len > n ? "...'" : "'", t->len > n ? 5 : 2);
    }
    return graph_text_fail(p, t->pos, "%s, got %s", msg, got);
}

int graph_text_grow(text_parser *p, void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 8;
    while (n < need)
        n *= 2;
    void *q = tg_realloc(*(void **)arr, n * elem);
    if (!q)
        return graph_text_fail(p, p->tok.pos, "out of memory");
    *(void **)arr = q;
    *cap = n;
    return 0;
}

void graph_text_next(text_parser *p) { graph_text_lex_next(&p->lx, &p->tok); }

int graph_text_is_punct(const text_parser *p, int c)
{
    return p->tok.kind == TK_PUNCT && p->tok.punct == c;
}

int graph_text_is_kw(const text_parser *p, const char *kw)
{
    size_t n = strlen(kw);
    return p->tok.kind == TK_IDENT && p->tok.len == n &&
           !memcmp(p->s + p->tok.pos, kw, n);
}

int graph_text_expect(text_parser *p, int c, const char *after)
{
    if (graph_text_is_punct(p, c)) {
        graph_text_next(p);
        return 0;
    }
    const char *name = c == TP_ARROW ? "->" : c == TP_EQEQ ? "==" : NULL;
    if (name)
        return graph_text_fail_tok(p, "expected '%s' %s", name, after);
    return graph_text_fail_tok(p, "expected '%c' %s", c, after);
}

/* ---- numbers ---- */

static int hexdig(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Parses s[0..n) as decimal or 0x hex; -1 if malformed or too large. */
static int scan_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (n - 2 > 16)
            return -1;
        for (size_t i = 2; i < n; i++) {
            int d = hexdig((unsigned char)s[i]);
            if (d < 0)
                return -1;
            v = v << 4 | (uint64_t)d;
        }
    } else {
        if (n == 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            unsigned d = (unsigned)((unsigned char)s[i] - '0');
            if (d > 9 || v > (UINT64_MAX - d) / 10)
                return -1;
            v = v * 10 + d;
        }
    }
    *out = v;
    return 0;
}

int graph_text_get_u64(text_parser *p, const char *what, uint64_t *out)
{
    if (p->tok.kind != TK_NUM ||
        scan_u64(p->s + p->tok.pos, p->tok.len, out) < 0)
        return graph_text_fail_tok(p, "expected %s", what);
    graph_text_next(p);
    return 0;
}

int graph_text_get_i64(text_parser *p, const char *what, int64_t *out)
{
    const char *s = p->s + p->tok.pos;
    size_t n = p->tok.len;
    int neg = p->tok.kind == TK_NUM && n > 0 && s[0] == '-';
    uint64_t m;
    if (p->tok.kind != TK_NUM || (n > (size_t)neg + 1 && s[neg + 1] == 'x') ||
        scan_u64(s + neg, n - (size_t)neg, &m) < 0)
        return graph_text_fail_tok(p, "expected %s", what);
    if (m > (uint64_t)INT64_MAX + (uint64_t)neg)
        return graph_text_fail_tok(p, "integer out of range");
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    graph_text_next(p);
    return 0;
}

/*
 * A float: inf, -inf, nan, -nan, nan:0xBITS (the raw bits of a NaN of
 * the given width), or a decimal that strtof/strtod reads in full.
 */
static int get_float(text_parser *p, const char *what, int is32, double *d,
                     float *f)
{
    char buf[64];
    const text_tok t = p->tok;
    size_t n = t.len;
    const char *s = p->s + t.pos;
    if ((t.kind != TK_NUM && t.kind != TK_IDENT) || n >= sizeof buf)
        return graph_text_fail_tok(p, "expected %s", what);
    memcpy(buf, s, n);
    buf[n] = '\0';
    int neg = buf[0] == '-';
    if (!strcmp(buf + neg, "inf")) {
        *d = neg ? -HUGE_VAL : HUGE_VAL;
        *f = neg ? -HUGE_VALF : HUGE_VALF;
    } else if (!strcmp(buf + neg, "nan")) {
        uint64_t bits = is32 ? 0x7fc00000u : UINT64_C(0x7ff8000000000000);
        graph_text_next(p);
        if (graph_text_is_punct(p, ':')) {
            graph_text_next(p);
            if (graph_text_get_u64(p, "NaN bits after 'nan:'", &bits) < 0)
                return -1;
            uint64_t exp = is32 ? 0x7f800000u : UINT64_C(0x7ff0000000000000);
            uint64_t man = is32 ? 0x007fffffu : UINT64_C(0x000fffffffffffff);
            if (neg || (is32 && bits > UINT32_MAX) || (bits & exp) != exp ||
                !(bits & man))
                return graph_text_fail(p, t.pos, "nan:0x%llx is not a NaN",
                                       (unsigned long long)bits);
        } else if (neg) {
            bits |= is32 ? UINT64_C(0x80000000) : UINT64_C(1) << 63;
        }
        uint32_t b32 = (uint32_t)bits;
        memcpy(f, &b32, sizeof b32);
        memcpy(d, &bits, sizeof bits);
        return 0;
    } else {
        char *end;
        if (t.kind != TK_NUM)
            return graph_text_fail_tok(p, "expected %s", what);
        if (is32)
            *f = strtof(buf, &end);
        else
            *d = strtod(buf, &end);
        if (end != buf + n)
            return graph_text_fail_tok(p, "expected %s", what);
    }
    graph_text_next(p);
    return 0;
}

int graph_text_get_f32(text_parser *p, const char *what, float *out)
{
    double d;
    return get_float(p, what, 1, &d, out);
}

int graph_text_get_f64(text_parser *p, const char *what, double *out)
{
    float f;
    return get_float(p, what, 0, out, &f);
}

/* ---- strings and names ---- */

int graph_text_get_string(text_parser *p, const char *what, const char **out)
{
    if (p->tok.kind != TK_STR)
        return graph_text_fail_tok(p, "expected %s", what);
    if (graph_text_grow(p, &p->scratch, &p->capscratch, p->tok.len + 1, 1) < 0)
        return -1;
    size_t n = graph_text_unescape(p->s, &p->tok, p->scratch);
    *out = graph_intern(p->g, p->scratch, (long)n);
    if (!*out)
        return graph_text_fail(p, p->tok.pos, "out of memory");
    graph_text_next(p);
    return 0;
}

int graph_text_get_name(text_parser *p, const char *what, const char **out)
{
    if (p->tok.kind == TK_STR)
        return graph_text_get_string(p, what, out);
    if (p->tok.kind != TK_IDENT)
        return graph_text_fail_tok(p, "expected %s", what);
    *out = graph_intern(p->g, p->s + p->tok.pos, (long)p->tok.len);
    if (!*out)
        return graph_text_fail(p, p->tok.pos, "out of memory");
    graph_text_next(p);
    return 0;
}

/* ---- types ---- */

static int parse_dim(text_parser *p, text_dim *d)
{
    memset(d, 0, sizeof *d);
    if (p->tok.kind == TK_IDENT || p->tok.kind == TK_STR) {
        d->symkind = (int8_t)p->tok.kind;
        d->sympos = p->tok.pos;
        d->symlen = p->tok.len;
        graph_text_next(p);
        if (!graph_text_is_punct(p, ':'))
            return 0;
        graph_text_next(p);
        d->has_size = 1;
    }
    size_t pos = p->tok.pos;
    if (graph_text_get_i64(p, "a dim (a size or a symbol)", &d->size) < 0)
        return -1;
    if (d->size < 0 || d->size > TEXT_MAX_DIM)
        return graph_text_fail(p, pos, "dim %lld is out of range (0 to 2^40)",
                               (long long)d->size);
    return 0;
}

int graph_text_parse_type(text_parser *p, text_type *t)
{
    memset(t, 0, sizeof *t);
    t->pos = p->tok.pos;
    if (p->tok.kind != TK_IDENT)
        return graph_text_fail_tok(p, "expected a type such as f32[2,3]");
    if (graph_dtype_parse(p->s + p->tok.pos, p->tok.len, &t->dtype) < 0)
        return graph_text_fail_tok(p, "unknown dtype (f32, i64, i32 or bool)");
    graph_text_next(p);
    if (graph_text_expect(p, '[', "after the dtype") < 0)
        return -1;
    if (graph_text_is_punct(p, ']')) {
        graph_text_next(p);
        return 0;
    }
    for (;;) {
        if (t->ndim == GRAPH_MAX_DIMS)
            return graph_text_fail(p, p->tok.pos, "more than %d dims", GRAPH_MAX_DIMS);
        if (parse_dim(p, &t->dim[t->ndim++]) < 0)
            return -1;
        if (!graph_text_is_punct(p, ','))
            break;
        graph_text_next(p);
    }
    return graph_text_expect(p, ']', "after the dims");
}

/* The symbol index of a dim's name, or -1 (reported). */
static int find_symbol(text_parser *p, const text_dim *d)
{
    const char *name = p->s + d->sympos;
    size_t n = d->symlen;
    if (d->symkind == TK_STR) {
        text_tok t = {TK_STR, 0, d->sympos, d->symlen, NULL};
        if (graph_text_grow(p, &p->scratch, &p->capscratch, d->symlen + 1, 1) < 0)
            return -1;
        n = graph_text_unescape(p->s, &t, p->scratch);
        name = p->scratch;
    }
    for (int32_t i = 0; i < p->g->nsyms; i++) {
        const char *s = p->g->syms[i].name;
        if (strlen(s) == n && !memcmp(s, name, n))
            return i;
    }
    return graph_text_fail(p, d->sympos, "unknown symbol '%.*s' (declare it with "
                           "'sym NAME = SIZE')", (int)(n > 40 ? 40 : n), name);
}

int graph_text_resolve_type(text_parser *p, const text_type *t, text_full_type *ft)
{
    memset(ft, 0, sizeof *ft);
    ft->t.dtype = t->dtype;
    ft->t.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        const text_dim *dm = &t->dim[d];
        int64_t size = dm->size;
        if (dm->symkind) {
            int s = find_symbol(p, dm);
            if (s < 0)
                return -1;
            ft->dyn |= 1u << d;
            ft->sym[d] = (int8_t)s;
            if (!dm->has_size)
                size = p->g->syms[s].traced;
        }
        ft->t.dim[d] = size;
    }
    char why[200];
    if (graph_type_check(&ft->t, why, sizeof why) != TG_OK)
        return graph_text_fail(p, t->pos, "%s", why);
    return 0;
}

void graph_text_type_str(const graph *g, const text_full_type *ft, char *buf,
                         size_t len)
{
    size_t u = (size_t)snprintf(buf, len, "%s[", graph_dtype_name(ft->t.dtype));
    for (int d = 0; d < ft->t.ndim && u < len; d++) {
        const char *sep = d ? "," : "";
        if (ft->dyn >> d & 1)
            u += (size_t)snprintf(buf + u, len - u, "%s%s:%lld", sep,
                                  g->syms[ft->sym[d]].name,
                                  (long long)ft->t.dim[d]);
        else
            u += (size_t)snprintf(buf + u, len - u, "%s%lld", sep,
                                  (long long)ft->t.dim[d]);
    }
    if (u < len)
        snprintf(buf + u, len - u, "]");
}

/* ---- labels and definitions ---- */

text_label *graph_text_find_label(text_label *head, const char *key, size_t n)
{
    text_label *l;
    HASH_FIND(hh, head, key, n, l);
    return l;
}

int graph_text_add_label(text_parser *p, text_label **head, const char *key,
                         size_t n, int32_t id, size_t pos)
{
    text_label *l = tg_malloc(sizeof *l + n + 1);
    if (!l)
        return graph_text_fail(p, pos, "out of memory");
    l->id = id;
    l->pos = pos;
    memcpy(l->key, key, n);
    l->key[n] = '\0';
    tg_hash_oom = 0;
    HASH_ADD_KEYPTR(hh, *head, l->key, n, l);
    if (tg_hash_oom) {
        tg_free(l);
        return graph_text_fail(p, pos, "out of memory");
    }
    return 0;
}

/* Fails if label tok (a TK_VALUE) is malformed or already defined. */
static int check_new_label(text_parser *p, const text_tok *t)
{
    const char *key = p->s + t->pos + 1;
    size_t n = t->len - 1, digits = 0;
    while (digits < n && key[digits] >= '0' && key[digits] <= '9')
        digits++;
    if (digits != n && !graph_text_is_ident(key, n))
        return graph_text_fail(p, t->pos, "bad value name '%.*s' (use %%name or "
                               "%%number)", (int)(t->len > 40 ? 40 : t->len),
                         p->s + t->pos);
    text_label *l = graph_text_find_label(p->vals, key, n);
    if (l) {
        int line, col;
        graph_text_line_col(p->s, p->len, l->pos, &line, &col);
        return graph_text_fail(p, t->pos, "redefinition of %%%.*s (first defined "
                               "at line %d, col %d)", (int)(n > 40 ? 40 : n), key,
                         line, col);
    }
    return 0;
}

int graph_text_parse_def(text_parser *p, text_def *d)
{
    memset(d, 0, sizeof *d);
    if (p->tok.kind != TK_VALUE)
        return graph_text_fail_tok(p, "expected a value such as %%x");
    d->label = p->tok;
    if (check_new_label(p, &d->label) < 0)
        return -1;
    graph_text_next(p);
    const char *key = p->s + d->label.pos + 1;
    size_t n = d->label.len - 1;
    if (p->tok.kind == TK_STR) {
        if (graph_text_get_string(p, "a name", &d->name) < 0)
            return -1;
    } else if (graph_text_is_ident(key, n)) {
        d->name = graph_intern(p->g, key, (long)n);
        if (!d->name)
            return graph_text_fail(p, d->label.pos, "out of memory");
    }
    if (graph_text_expect(p, ':', "after the value name") < 0)
        return -1;
    return graph_text_parse_type(p, &d->type);
}

int graph_text_bind(text_parser *p, int32_t id, const text_def *d,
                    const text_full_type *ft)
{
    if (check_new_label(p, &d->label) < 0)
        return -1;
    graph_value *v = &p->g->values[id];
    v->name = d->name;
    v->dyn = ft->dyn;
    memcpy(v->sym, ft->sym, sizeof v->sym);
    return graph_text_add_label(p, &p->vals, p->s + d->label.pos + 1,
                                d->label.len - 1, id, d->label.pos);
}

int32_t graph_text_define(text_parser *p, const text_def *d, graph_value_kind kind)
{
    text_full_type ft;
    if (check_new_label(p, &d->label) < 0 ||
        graph_text_resolve_type(p, &d->type, &ft) < 0)
        return -1;
    int32_t id = graph_add_value(p->g, kind, &ft.t, NULL);
    if (id < 0)
        return graph_text_fail(p, d->label.pos, "%s", graph_error(p->g));
    return graph_text_bind(p, id, d, &ft) < 0 ? -1 : id;
}

int32_t graph_text_get_value(text_parser *p)
{
    if (p->tok.kind != TK_VALUE)
        return graph_text_fail_tok(p, "expected a value such as %%x");
    text_label *l = graph_text_find_label(p->vals, p->s + p->tok.pos + 1,
                                          p->tok.len - 1);
    if (!l)
        return graph_text_fail(p, p->tok.pos, "unknown value %.*s",
                               (int)(p->tok.len > 40 ? 40 : p->tok.len),
                               p->s + p->tok.pos);
    graph_text_next(p);
    return l->id;
}

/* ---- the graph header, sym and return ---- */

static int parse_outputs(text_parser *p)
{
    if (graph_text_expect(p, TP_ARROW, "after inputs") < 0 ||
        graph_text_expect(p, '(', "before outputs") < 0)
        return -1;
    while (!graph_text_is_punct(p, ')')) {
        if (p->nouts && graph_text_expect(p, ',', "between outputs") < 0)
            return -1;
        if (graph_text_grow(p, &p->outs, &p->capouts, p->nouts + 1, sizeof *p->outs) < 0)
            return -1;
        text_out *o = &p->outs[p->nouts];
        o->pos = p->tok.pos;
        if (graph_text_get_name(p, "an output name", &o->name) < 0)
            return -1;
        /* Names are interned: the pointer is the key (no quadratic scan). */
        const char *key = (const char *)&o->name;
        if (graph_text_find_label(p->outnames, key, sizeof o->name))
            return graph_text_fail(p, o->pos, "output '%s' is listed twice", o->name);
        if (graph_text_add_label(p, &p->outnames, key, sizeof o->name, 0, o->pos) < 0)
            return -1;
        if (graph_text_expect(p, ':', "after the output name") < 0 ||
            graph_text_parse_type(p, &o->type) < 0)
            return -1;
        p->nouts++;
    }
    graph_text_next(p);
    return graph_text_expect(p, '{', "to open the graph body");
}

static int parse_header(text_parser *p)
{
    if (!graph_text_is_kw(p, "graph"))
        return graph_text_fail_tok(p, "expected 'graph'");
    graph_text_next(p);
    if (graph_text_get_name(p, "the graph's name", &p->g->name) < 0 ||
        graph_text_expect(p, '(', "after the graph name") < 0)
        return -1;
    if (!graph_text_is_punct(p, ')')) {
        for (;;) {
            if (graph_text_grow(p, &p->sig, &p->capsig, p->nsig + 1,
                                sizeof *p->sig) < 0 ||
                graph_text_parse_def(p, &p->sig[p->nsig++]) < 0)
                return -1;
            if (!graph_text_is_punct(p, ','))
                break;
            graph_text_next(p);
        }
    }
    if (graph_text_expect(p, ')', "after inputs") < 0)
        return -1;
    return parse_outputs(p);
}

/* Creates the signature's inputs, once the leading syms are known. */
static int define_signature(text_parser *p)
{
    p->sig_done = 1;
    for (size_t i = 0; i < p->nsig; i++) {
        int32_t id = graph_text_define(p, &p->sig[i], GRAPH_VALUE_INPUT);
        if (id < 0)
            return -1;
        if (graph_add_input(p->g, id) != TG_OK)
            return graph_text_fail(p, p->sig[i].label.pos, "%s", graph_error(p->g));
    }
    return 0;
}

static int parse_sym(text_parser *p)
{
    const char *name;
    int64_t traced;
    graph_text_next(p);
    size_t pos = p->tok.pos;
    if (graph_text_get_name(p, "a symbol name", &name) < 0)
        return -1;
    for (int32_t i = 0; i < p->g->nsyms; i++)
        if (p->g->syms[i].name == name)
            return graph_text_fail(p, pos, "symbol '%s' is declared twice", name);
    if (graph_text_expect(p, '=', "after the symbol name") < 0)
        return -1;
    size_t vpos = p->tok.pos;
    if (graph_text_get_i64(p, "the symbol's traced size", &traced) < 0)
        return -1;
    if (traced < 0 || traced > TEXT_MAX_DIM)
        return graph_text_fail(p, vpos, "size %lld is out of range (0 to 2^40)",
                               (long long)traced);
    if (graph_add_symbol(p->g, name, traced) < 0)
        return graph_text_fail(p, pos, "%s", graph_error(p->g));
    return 0;
}

static int same_full_type(const text_full_type *a, const graph_value *v)
{
    uint32_t mask = v->type.ndim >= 32 ? ~0u : (1u << v->type.ndim) - 1;
    if (a->t.dtype != v->type.dtype || a->t.ndim != v->type.ndim ||
        a->dyn != (v->dyn & mask))
        return 0;
    for (int d = 0; d < a->t.ndim; d++)
        if (a->t.dim[d] != v->type.dim[d] ||
            ((a->dyn >> d & 1) && a->sym[d] != v->sym[d]))
            return 0;
    return 1;
}

static int parse_return(text_parser *p)
{
    const char *name;
    text_full_type ft;
    char want[200], got[200];
    size_t pos = p->tok.pos;
    graph_text_next(p);
    if (graph_text_get_name(p, "an output name", &name) < 0)
        return -1;
    if (p->nret >= p->nouts)
        return graph_text_fail(p, pos, "return of '%s', which the signature does "
                               "not list", name);
    const text_out *o = &p->outs[p->nret];
    if (o->name != name)
        return graph_text_fail(p, pos, "return of '%s' where the signature lists "
                               "'%s' next", name, o->name);
    if (graph_text_expect(p, '=', "after the output name") < 0)
        return -1;
    size_t vpos = p->tok.pos;
    int32_t v = graph_text_get_value(p);
    if (v < 0 || graph_text_resolve_type(p, &o->type, &ft) < 0)
        return -1;
    const graph_value *val = &p->g->values[v];
    if (!same_full_type(&ft, val)) {
        text_full_type vt = {val->type, val->dyn, {0}};
        memcpy(vt.sym, val->sym, sizeof vt.sym);
        graph_text_type_str(p->g, &ft, want, sizeof want);
        graph_text_type_str(p->g, &vt, got, sizeof got);
        return graph_text_fail(p, vpos, "output '%s' is declared %s but the value "
                               "is %s", name, want, got);
    }
    if (graph_add_output(p->g, v, name) != TG_OK)
        return graph_text_fail(p, pos, "%s", graph_error(p->g));
    p->nret++;
    return 0;
}

/* `next %state = %value`: the state's value at the end of a run. */
static int parse_next(text_parser *p)
{
    size_t pos = p->tok.pos;
    graph_text_next(p);
    int32_t v = graph_text_get_value(p);
    if (v < 0)
        return -1;
    if (graph_text_expect(p, '=', "after the state") < 0)
        return -1;
    int32_t nx = graph_text_get_value(p);
    if (nx < 0)
        return -1;
    if (graph_add_state(p->g, v, nx) != TG_OK)
        return graph_text_fail(p, pos, "%s", graph_error(p->g));
    return 0;
}

static int parse_body(text_parser *p)
{
    for (;;) {
        int st;
        if (graph_text_is_kw(p, "sym")) {
            if (parse_sym(p) < 0)
                return -1;
            continue;
        }
        if (!p->sig_done && define_signature(p) < 0)
            return -1;
        if (graph_text_is_punct(p, '}')) {
            if (p->nret < p->nouts)
                return graph_text_fail(p, p->tok.pos, "missing return for output "
                                       "'%s'", p->outs[p->nret].name);
            graph_text_next(p);
            return 0;
        }
        if (p->tok.kind == TK_VALUE || graph_text_is_punct(p, '('))
            st = graph_text_parse_defs_stmt(p);
        else if (graph_text_is_kw(p, "guard"))
            st = graph_text_parse_guard(p);
        else if (graph_text_is_kw(p, "return"))
            st = parse_return(p);
        else if (graph_text_is_kw(p, "next"))
            st = parse_next(p);
        else
            st = graph_text_fail_tok(p, "expected a statement (%%value, sym, guard, "
                                     "return, next or '}')");
        if (st < 0)
            return -1;
    }
}

/* ---- driver ---- */

static int resolve_prov_refs(text_parser *p)
{
    for (size_t i = 0; i < p->nrefs; i++) {
        const text_prov_ref *r = &p->refs[i];
        text_label *l = graph_text_find_label(p->provs, p->s + r->pos, r->len);
        if (!l)
            return graph_text_fail(p, r->pos - 1, "unknown provenance !%.*s",
                                   (int)(r->len > 40 ? 40 : r->len), p->s + r->pos);
        if (r->is_guard)
            p->g->guards[r->target].prov = l->id;
        else if (graph_node_add_prov(p->g, r->target, l->id) != TG_OK)
            return graph_text_fail(p, r->pos, "%s", graph_error(p->g));
    }
    return 0;
}

static void free_labels(text_label **head)
{
    text_label *l, *tmp;
    HASH_ITER(hh, *head, l, tmp) {
        HASH_DEL(*head, l);
        tg_free(l);
    }
}

static int parse_all(text_parser *p)
{
    graph_text_next(p);
    if (parse_header(p) < 0 || parse_body(p) < 0)
        return -1;
    size_t end = p->tok.pos;
    if (graph_text_is_kw(p, "provenance") && graph_text_parse_provenance(p) < 0)
        return -1;
    if (p->tok.kind != TK_EOF)
        return graph_text_fail_tok(p, "expected end of input after the graph");
    if (resolve_prov_refs(p) < 0)
        return -1;
    if (graph_verify(p->g, 1) != TG_OK)
        return graph_text_fail(p, end, "invalid graph: %s", graph_error(p->g));
    return 0;
}

graph *graph_parse(const char *text, size_t len, char *err, size_t errlen)
{
    text_parser p;
    memset(&p, 0, sizeof p);
    p.s = text ? text : "";
    p.len = text ? len : 0;
    p.lx.s = p.s;
    p.lx.len = p.len;
    p.err = err;
    p.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    p.g = graph_new("main");
    int st = p.g ? parse_all(&p) : graph_text_fail(&p, 0, "out of memory");
    free_labels(&p.vals);
    free_labels(&p.provs);
    free_labels(&p.outnames);
    tg_free(p.refs);
    tg_free(p.sig);
    tg_free(p.outs);
    tg_free(p.frames);
    tg_free(p.scratch);
    if (st < 0) {
        graph_free(p.g);
        return NULL;
    }
    return p.g;
}
