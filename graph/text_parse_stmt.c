/*
 * text_parse_stmt.c - body statements of the text IR (definitions of
 * params, consts and node outputs; guards) and the provenance section.
 * Format in text.h, parser state in text_parse.h.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "text.h"
#include "text_parse.h"
#include "graph_impl.h"

/* ---- inline data ---- */

static int parse_element(text_parser *p, graph_dtype dt, void *dst)
{
    int64_t x;
    size_t pos = p->tok.pos;
    if (dt == GRAPH_F32)
        return graph_text_get_f32(p, "a number", dst);
    if (graph_text_get_i64(p, "an integer", &x) < 0)
        return -1;
    if (dt == GRAPH_I64) {
        memcpy(dst, &x, sizeof x);
    } else if (dt == GRAPH_I32) {
        if (x < INT32_MIN || x > INT32_MAX)
            return graph_text_fail(p, pos, "%lld does not fit in i32", (long long)x);
        int32_t y = (int32_t)x;
        memcpy(dst, &y, sizeof y);
    } else {
        if (x != 0 && x != 1)
            return graph_text_fail(p, pos, "bool data must be 0 or 1");
        *(uint8_t *)dst = (uint8_t)x;
    }
    return 0;
}

/*
 * '[' e0, e1, ... ']' with exactly numel elements.  Each element takes at
 * least one byte of text, so the buffer is bounded by the text's length.
 */
static int parse_data(text_parser *p, int32_t id)
{
    const graph_value *v = &p->g->values[id];
    int64_t numel = graph_type_numel(&v->type);
    size_t esize = graph_dtype_size(v->type.dtype), open = p->tok.pos;
    if ((uint64_t)numel > p->len - p->tok.pos)
        return graph_text_fail(p, open, "%lld elements cannot fit in the rest of "
                               "the text", (long long)numel);
    char *buf = tg_malloc((size_t)numel * esize + 1);
    if (!buf)
        return graph_text_fail(p, open, "out of memory");
    graph_text_next(p);
    int64_t n = 0;
    int st = 0;
    while (st == 0 && !graph_text_is_punct(p, ']')) {
        if (n == numel) {
            st = graph_text_fail(p, p->tok.pos, "too many elements (want %lld)",
                                 (long long)numel);
            break;
        }
        if (n && graph_text_expect(p, ',', "between elements") < 0)
            st = -1;
        else
            st = parse_element(p, v->type.dtype, buf + (size_t)n++ * esize);
    }
    if (st == 0 && n < numel)
        st = graph_text_fail(p, p->tok.pos, "too few elements: %lld of %lld",
                             (long long)n, (long long)numel);
    if (st == 0) {
        graph_text_next(p);
        if (graph_set_data(p->g, id, buf, (size_t)numel * esize) != TG_OK)
            st = graph_text_fail(p, open, "%s", graph_error(p->g));
    }
    tg_free(buf);
    return st;
}

static int parse_source(text_parser *p, const text_def *defs, int ndefs,
                        graph_value_kind kind)
{
    if (ndefs != 1)
        return graph_text_fail(p, p->tok.pos, "a %s defines exactly one value",
                               graph_value_kind_name(kind));
    graph_text_next(p);
    int32_t id = graph_text_define(p, &defs[0], kind);
    if (id < 0)
        return -1;
    if (graph_text_is_kw(p, "elided")) {
        graph_text_next(p);
        return graph_text_get_u64(p, "the data's hash (0x...)", &p->g->values[id].hash);
    }
    if (graph_text_is_punct(p, '['))
        return parse_data(p, id);
    return 0;
}

/* ---- attributes ---- */

/* A list of ints; with post, an entry may be an epilogue step's name
 * (`post=[add,relu]`, as printed) as well as its code. */
static int parse_ints(text_parser *p, const char *what, int post, graph_ints *v)
{
    memset(v, 0, sizeof *v);
    if (!graph_text_is_punct(p, '['))
        return graph_text_fail_tok(p, "expected a list such as [1,2] for %s", what);
    graph_text_next(p);
    while (!graph_text_is_punct(p, ']')) {
        if (v->n && graph_text_expect(p, ',', "between list entries") < 0)
            return -1;
        if (v->n == GRAPH_MAX_INTS)
            return graph_text_fail(p, p->tok.pos, "%s has more than %d entries",
                                   what, GRAPH_MAX_INTS);
        if (post && p->tok.kind == TK_IDENT) {
            int c = graph_text_post_code(p->s + p->tok.pos, p->tok.len);
            if (c < 0)
                return graph_text_fail_tok(p, "expected an epilogue step (add, relu, gelu, "
                                           "sigmoid, tanh, silu, leaky_relu, clip, hardsigmoid, "
                                           "hardswish) or its code for %s", what);
            v->v[v->n] = c;
            graph_text_next(p);
        } else if (graph_text_get_i64(p, "an integer", &v->v[v->n]) < 0) {
            return -1;
        }
        v->n++;
    }
    graph_text_next(p);
    return 0;
}

static int parse_attr_value(text_parser *p, const graph_attr_desc *d,
                            char *field)
{
    char what[80];
    snprintf(what, sizeof what, "attribute '%s'", d->name);
    switch (d->kind) {
    case GRAPH_ATTR_I64: {
        int64_t x;
        if (graph_text_get_i64(p, "an integer", &x) < 0)
            return -1;
        memcpy(field, &x, sizeof x);
        return 0;
    }
    case GRAPH_ATTR_F32: {
        float x;
        if (graph_text_get_f32(p, "a number", &x) < 0)
            return -1;
        memcpy(field, &x, sizeof x);
        return 0;
    }
    case GRAPH_ATTR_INTS: {
        graph_ints x;
        if (parse_ints(p, what, !strcmp(d->name, "post"), &x) < 0)
            return -1;
        memcpy(field, &x, sizeof x);
        return 0;
    }
    case GRAPH_ATTR_STR: {
        const char *s;
        size_t at = p->tok.pos;
        if (graph_text_get_string(p, "a quoted string", &s) < 0)
            return -1;
        size_t n = strlen(s);
        if (n >= GRAPH_MAX_STR)
            return graph_text_fail(p, at, "%s is %zu bytes long (at most %d)", what, n,
                                   GRAPH_MAX_STR - 1);
        memset(field, 0, GRAPH_MAX_STR);
        memcpy(field, s, n);
        return 0;
    }
    case GRAPH_ATTR_DTYPE: {
        graph_dtype x;
        if (p->tok.kind != TK_IDENT ||
            graph_dtype_parse(p->s + p->tok.pos, p->tok.len, &x) < 0)
            return graph_text_fail_tok(p, "expected a dtype (f32, i64, i32 or bool) "
                                       "for %s", what);
        memcpy(field, &x, sizeof x);
        graph_text_next(p);
        return 0;
    }
    }
    return graph_text_fail(p, p->tok.pos, "bad attribute kind");
}

/* '{' name=value, ... '}': any order, each at most once. */
static int parse_attrs(text_parser *p, graph_op op, graph_attrs *a)
{
    const graph_op_info *info = &graph_ops[op];
    const graph_attr_desc *d = info->nattrs ? info->attr_descs() : NULL;
    uint64_t seen = 0;
    graph_text_next(p);
    while (!graph_text_is_punct(p, '}')) {
        if (seen && graph_text_expect(p, ',', "between attributes") < 0)
            return -1;
        if (p->tok.kind != TK_IDENT)
            return graph_text_fail_tok(p, "expected an attribute name");
        int k = 0;
        while (k < info->nattrs && (strlen(d[k].name) != p->tok.len ||
                                    memcmp(d[k].name, p->s + p->tok.pos, p->tok.len)))
            k++;
        if (k == info->nattrs)
            return graph_text_fail(p, p->tok.pos, "%s has no attribute '%.*s'",
                                   info->name, (int)(p->tok.len > 40 ? 40 : p->tok.len),
                                   p->s + p->tok.pos);
        if (seen >> k & 1)
            return graph_text_fail(p, p->tok.pos, "attribute '%s' is given twice",
                                   d[k].name);
        seen |= UINT64_C(1) << k;
        graph_text_next(p);
        if (graph_text_expect(p, '=', "after the attribute name") < 0 ||
            parse_attr_value(p, &d[k], (char *)a + d[k].offset) < 0)
            return -1;
    }
    graph_text_next(p);
    return 0;
}

/* ---- nodes ---- */

static int add_prov_ref(text_parser *p, int32_t target, int is_guard)
{
    if (graph_text_grow(p, &p->refs, &p->caprefs, p->nrefs + 1, sizeof *p->refs) < 0)
        return -1;
    p->refs[p->nrefs++] = (text_prov_ref){target, is_guard, p->tok.pos + 1,
                                          p->tok.len - 1};
    graph_text_next(p);
    return 0;
}

static int parse_inputs(text_parser *p, int32_t *in, int *nin)
{
    *nin = 0;
    if (graph_text_expect(p, '(', "after the op name") < 0)
        return -1;
    while (!graph_text_is_punct(p, ')')) {
        if (*nin && graph_text_expect(p, ',', "between inputs") < 0)
            return -1;
        if (*nin == TEXT_MAX_NODE_IO)
            return graph_text_fail(p, p->tok.pos, "more than %d inputs",
                                   TEXT_MAX_NODE_IO);
        if ((in[(*nin)++] = graph_text_get_value(p)) < 0)
            return -1;
    }
    graph_text_next(p);
    return 0;
}

/* Checks the written output types against inference, then binds them. */
static int bind_outputs(text_parser *p, int32_t node, const text_def *defs,
                        int ndefs, size_t oppos)
{
    const graph_node *n = &p->g->nodes[node];
    const char *op = graph_ops[n->op].name;
    if (n->nout != ndefs)
        return graph_text_fail(p, oppos, "%s makes %d output%s but %d %s written",
                               op, (int)n->nout, n->nout == 1 ? "" : "s", ndefs,
                               ndefs == 1 ? "is" : "are");
    for (int k = 0; k < ndefs; k++) {
        text_full_type ft;
        int32_t v = n->out[k];
        if (graph_text_resolve_type(p, &defs[k].type, &ft) < 0)
            return -1;
        const graph_type *t = &p->g->values[v].type;
        int same = t->dtype == ft.t.dtype && t->ndim == ft.t.ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = t->dim[d] == ft.t.dim[d];
        if (!same) {
            char a[200], b[200];
            text_full_type it = {*t, 0, {0}};
            graph_text_type_str(p->g, &ft, a, sizeof a);
            graph_text_type_str(p->g, &it, b, sizeof b);
            return graph_text_fail(p, defs[k].type.pos, "type mismatch: %.*s is "
                                   "written %s but %s makes %s",
                                   (int)(defs[k].label.len > 40 ? 40 : defs[k].label.len),
                                   p->s + defs[k].label.pos, a, op, b);
        }
        if (graph_text_bind(p, v, &defs[k], &ft) < 0)
            return -1;
    }
    return 0;
}

static int parse_node(text_parser *p, const text_def *defs, int ndefs)
{
    size_t oppos = p->tok.pos;
    graph_op op = graph_op_find(p->s + p->tok.pos, p->tok.len);
    if (op == GRAPH_OP_COUNT)
        return graph_text_fail(p, oppos, "unknown op '%.*s'",
                               (int)(p->tok.len > 40 ? 40 : p->tok.len), p->s + oppos);
    int32_t in[TEXT_MAX_NODE_IO];
    int nin, specialized = 0;
    graph_attrs a;
    graph_text_next(p);
    if (parse_inputs(p, in, &nin) < 0)
        return -1;
    graph_attrs_default(op, &a);
    if (graph_text_is_punct(p, '{') && parse_attrs(p, op, &a) < 0)
        return -1;
    if (graph_text_is_kw(p, "specialized")) {
        specialized = 1;
        graph_text_next(p);
    }
    int32_t node = p->g->nnodes;
    while (p->tok.kind == TK_PROV)
        if (add_prov_ref(p, node, 0) < 0)
            return -1;
    if (graph_add_node(p->g, op, in, nin, graph_ops[op].attr_size ? &a : NULL,
                       NULL, 0) != node)
        return graph_text_fail(p, oppos, "%s", graph_error(p->g));
    if (specialized)
        p->g->nodes[node].flags |= GRAPH_NODE_SPECIALIZED;
    return bind_outputs(p, node, defs, ndefs, oppos);
}

int graph_text_parse_defs_stmt(text_parser *p)
{
    text_def defs[TEXT_MAX_NODE_IO];
    int ndefs = 0;
    if (graph_text_is_punct(p, '(')) {
        graph_text_next(p);
        if (graph_text_expect(p, ')', "for a node without outputs") < 0)
            return -1;
    } else {
        for (;;) {
            if (ndefs == TEXT_MAX_NODE_IO)
                return graph_text_fail(p, p->tok.pos, "more than %d outputs",
                                       TEXT_MAX_NODE_IO);
            if (graph_text_parse_def(p, &defs[ndefs++]) < 0)
                return -1;
            if (!graph_text_is_punct(p, ','))
                break;
            graph_text_next(p);
        }
    }
    if (graph_text_expect(p, '=', "after the defined values") < 0)
        return -1;
    if (graph_text_is_kw(p, "param"))
        return parse_source(p, defs, ndefs, GRAPH_VALUE_PARAM);
    if (graph_text_is_kw(p, "const"))
        return parse_source(p, defs, ndefs, GRAPH_VALUE_CONST);
    if (graph_text_is_kw(p, "state"))
        return parse_source(p, defs, ndefs, GRAPH_VALUE_STATE);
    if (graph_text_is_kw(p, "input"))
        return graph_text_fail(p, p->tok.pos, "inputs belong in the graph's signature");
    if (p->tok.kind != TK_IDENT)
        return graph_text_fail_tok(p, "expected an op name, param or const");
    return parse_node(p, defs, ndefs);
}

/* ---- guards ---- */

/* Index of the current IDENT in names[0..n), or -1. */
static int pick_kw(const text_parser *p, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (graph_text_is_kw(p, names[i]))
            return i;
    return -1;
}

int graph_text_parse_guard(text_parser *p)
{
    static const char *const kinds[] = {"value", "decision", "buffer", "size"};
    static const char *const pols[] = {"strict", "warn", "off"};
    graph_guard gd = {.index = -1, .prov = -1};
    graph_text_next(p);
    int k = pick_kw(p, kinds, 4);
    if (k < 0)
        return graph_text_fail_tok(p, "expected a guard kind (value, decision, "
                                   "buffer or size)");
    gd.kind = (graph_guard_kind)k;
    graph_text_next(p);
    const text_tok vt = p->tok;
    if ((gd.value = graph_text_get_value(p)) < 0)
        return -1;
    if (graph_text_is_punct(p, '[')) {
        graph_text_next(p);
        size_t ipos = p->tok.pos;
        if (graph_text_get_i64(p, "an element index", &gd.index) < 0)
            return -1;
        const graph_type *vt_type = &p->g->values[gd.value].type;
        int64_t numel = gd.kind == GRAPH_GUARD_SIZE ? vt_type->ndim : graph_type_numel(vt_type);
        if (gd.index < 0 || gd.index >= numel)
            return graph_text_fail(p, ipos, "index %lld is out of range for %.*s "
                                   "(%lld %s)", (long long)gd.index,
                                   (int)(vt.len > 40 ? 40 : vt.len), p->s + vt.pos,
                                   (long long)numel,
                                   gd.kind == GRAPH_GUARD_SIZE ? "dims" : "elements");
        if (graph_text_expect(p, ']', "after the index") < 0)
            return -1;
    } else if (gd.kind == GRAPH_GUARD_SIZE) {
        return graph_text_fail(p, vt.pos, "a size guard names its dim: %.*s[d]",
                               (int)(vt.len > 40 ? 40 : vt.len), p->s + vt.pos);
    }
    if (graph_text_expect(p, TP_EQEQ, "after the guarded value") < 0)
        return -1;
    if (gd.kind == GRAPH_GUARD_BUFFER) {
        if (graph_text_get_u64(p, "the buffer's hash (0x...)", &gd.hash) < 0)
            return -1;
    } else if (graph_text_get_f64(p, "the value seen when tracing", &gd.expect) < 0) {
        return -1;
    }
    int pol = pick_kw(p, pols, 3);
    if (pol < 0)
        return graph_text_fail_tok(p, "expected a guard policy (strict, warn or off)");
    gd.policy = (graph_guard_policy)pol;
    graph_text_next(p);
    int32_t idx = p->g->nguards;
    if (p->tok.kind == TK_PROV && add_prov_ref(p, idx, 1) < 0)
        return -1;
    if (p->tok.kind == TK_PROV)
        return graph_text_fail(p, p->tok.pos, "a guard has one provenance");
    if (graph_add_guard(p->g, &gd) != idx)
        return graph_text_fail(p, vt.pos, "%s", graph_error(p->g));
    return 0;
}

/* ---- provenance ---- */

/* A STRING or '?' (NULL). */
static int get_opt_string(text_parser *p, const char *what, const char **out)
{
    if (graph_text_is_punct(p, '?')) {
        *out = NULL;
        graph_text_next(p);
        return 0;
    }
    return graph_text_get_string(p, what, out);
}

static int get_line(text_parser *p, int32_t *line)
{
    int64_t x;
    size_t pos = p->tok.pos;
    if (graph_text_get_i64(p, "a line number", &x) < 0)
        return -1;
    if (x < INT32_MIN || x > INT32_MAX)
        return graph_text_fail(p, pos, "line number out of range");
    *line = (int32_t)x;
    return 0;
}

/* 0xIP ("func"|?)+0xOFF [("file"|?):LINE] */
static int parse_frame(text_parser *p, graph_frame *f)
{
    memset(f, 0, sizeof *f);
    if (graph_text_get_u64(p, "a frame address (0x...)", &f->ip) < 0 ||
        get_opt_string(p, "a function name or '?'", &f->func) < 0 ||
        graph_text_expect(p, '+', "after the function name") < 0 ||
        graph_text_get_u64(p, "a function offset (0x...)", &f->offset) < 0)
        return -1;
    if (p->tok.kind != TK_STR && !graph_text_is_punct(p, '?'))
        return 0;
    if (get_opt_string(p, "a file name or '?'", &f->file) < 0 ||
        graph_text_expect(p, ':', "after the file name") < 0)
        return -1;
    return get_line(p, &f->line);
}

static int parse_prov_entry(text_parser *p)
{
    const char *file, *func;
    int32_t line = 0;
    size_t pos = p->tok.pos;
    if (p->tok.kind != TK_IDENT)
        return graph_text_fail_tok(p, "expected a provenance label such as p0");
    if (graph_text_find_label(p->provs, p->s + pos, p->tok.len))
        return graph_text_fail(p, pos, "provenance %.*s is defined twice",
                               (int)(p->tok.len > 40 ? 40 : p->tok.len), p->s + pos);
    if (graph_text_add_label(p, &p->provs, p->s + pos, p->tok.len, p->g->nprovs, pos) < 0)
        return -1;
    graph_text_next(p);
    if (graph_text_expect(p, '=', "after the provenance label") < 0 ||
        graph_text_get_string(p, "a file name", &file) < 0 ||
        graph_text_expect(p, ':', "after the file name") < 0 || get_line(p, &line) < 0 ||
        graph_text_get_string(p, "a function name", &func) < 0)
        return -1;
    p->nframes = 0;
    if (graph_text_is_punct(p, '[')) {
        graph_text_next(p);
        while (!graph_text_is_punct(p, ']')) {
            if (p->nframes && graph_text_expect(p, ',', "between frames") < 0)
                return -1;
            if (p->nframes >= INT32_MAX / 2)
                return graph_text_fail(p, p->tok.pos, "too many frames");
            if (graph_text_grow(p, &p->frames, &p->capframes, p->nframes + 1,
                                sizeof *p->frames) < 0 ||
                parse_frame(p, &p->frames[p->nframes]) < 0)
                return -1;
            p->nframes++;
        }
        graph_text_next(p);
    }
    if (graph_add_prov(p->g, file, line, func, p->frames, (int)p->nframes) < 0)
        return graph_text_fail(p, pos, "%s", graph_error(p->g));
    return 0;
}

int graph_text_parse_provenance(text_parser *p)
{
    graph_text_next(p);
    if (graph_text_expect(p, '{', "after 'provenance'") < 0)
        return -1;
    while (!graph_text_is_punct(p, '}'))
        if (parse_prov_entry(p) < 0)
            return -1;
    graph_text_next(p);
    return 0;
}
