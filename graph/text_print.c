/*
 * text_print.c - prints a graph as text IR (format in text.h).
 *
 * The printer takes a const graph that may be malformed (it is also a
 * debugging aid), so every id is range-checked before use; a bad id prints
 * as something the parser rejects rather than crashing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "text.h"
#include "text_impl.h"
#include "graph_impl.h"

/* ---- quoting and small values ---- */

void graph_text_put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

int graph_text_utf8_len(const unsigned char *s)
{
    unsigned c = s[0], cp;
    int n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* also the terminating NUL */
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
        return 0;
    return n;
}

void graph_text_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = *p >= 0x80 ? graph_text_utf8_len(p) : 0;
        if (n) {
            p += n;
            continue;
        }
        if (*p < 0x20 || *p >= 0x7f)
            *p = '?';
        p++;
    }
}

void graph_text_put_name(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (graph_text_is_ident(s, strlen(s)))
        fputs(s, f);
    else
        graph_text_put_str(f, s);
}

/* Exact f32 (%.9g always round-trips); inf/nan get names the parser knows. */
static void put_f32(FILE *f, float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if (isnan(x)) {
        if (b == 0x7fc00000u || b == 0xffc00000u)
            fputs(b >> 31 ? "-nan" : "nan", f);
        else
            fprintf(f, "nan:0x%08x", (unsigned)b);
    } else if (isinf(x)) {
        fputs(x < 0 ? "-inf" : "inf", f);
    } else {
        /* The shortest of %.6g..%.9g that reads back to the same float:
         * 0.2f prints as 0.2, not 0.200000003. */
        char buf[32];
        for (int prec = 6; prec <= 9; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, (double)x);
            if (strtof(buf, NULL) == x)
                break;
        }
        fputs(buf, f);
    }
}

static void put_f64(FILE *f, double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    if (isnan(x)) {
        if ((b << 1) == (UINT64_C(0x7ff8000000000000) << 1))
            fputs(b >> 63 ? "-nan" : "nan", f);
        else
            fprintf(f, "nan:0x%016llx", (unsigned long long)b);
    } else if (isinf(x)) {
        fputs(x < 0 ? "-inf" : "inf", f);
    } else {
        char buf[40];
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, x);
            if (strtod(buf, NULL) == x)
                break;
        }
        fputs(buf, f);
    }
}

static int type_ok(const graph_type *t)
{
    if ((unsigned)t->dtype >= GRAPH_DTYPE_COUNT || t->ndim < 0 ||
        t->ndim > GRAPH_MAX_DIMS)
        return 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->dim[i] < 0)
            return 0;
    return 1;
}

void graph_text_put_type(FILE *f, const graph *g, const graph_value *v)
{
    int nd = v->type.ndim < 0 ? 0 : v->type.ndim > GRAPH_MAX_DIMS ? GRAPH_MAX_DIMS
                                                                   : v->type.ndim;
    fprintf(f, "%s[", graph_dtype_name(v->type.dtype));
    for (int d = 0; d < nd; d++) {
        int s = v->sym[d];
        if (d)
            fputc(',', f);
        if ((v->dyn >> d & 1) && s >= 0 && s < g->nsyms) {
            graph_text_put_name(f, g->syms[s].name);
            if (v->type.dim[d] != g->syms[s].traced)
                fprintf(f, ":%lld", (long long)v->type.dim[d]);
        } else {
            fprintf(f, "%lld", (long long)v->type.dim[d]);
        }
    }
    fputc(']', f);
}

/* ---- canonical naming ---- */

typedef struct named {
    const char *name;
    int32_t id;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* by_name[v] = 1 for printed values whose name is an IDENT used once. */
static tg_status mark_unique_names(text_names *n, const graph *g)
{
    named *list = tg_malloc(sizeof *list * ((size_t)g->nvalues + 1));
    if (!list)
        return TG_ERR_NOMEM;
    size_t cnt = 0;
    for (int32_t v = 0; v < g->nvalues; v++) {
        const char *s = g->values[v].name;
        if (n->pos[v] >= 0 && s && graph_text_is_ident(s, strlen(s)))
            list[cnt++] = (named){s, v};
    }
    qsort(list, cnt, sizeof *list, cmp_named);
    for (size_t i = 0; i < cnt; i++) {
        int dup = (i > 0 && !strcmp(list[i].name, list[i - 1].name)) ||
                  (i + 1 < cnt && !strcmp(list[i].name, list[i + 1].name));
        n->by_name[list[i].id] = !dup;
    }
    tg_free(list);
    return TG_OK;
}

static void number(text_names *n, const graph *g, int32_t v)
{
    if (v >= 0 && v < g->nvalues && n->pos[v] < 0)
        n->pos[v] = n->count++;
}

tg_status graph_text_names_init(text_names *n, const graph *g)
{
    size_t nv = (size_t)(g->nvalues > 0 ? g->nvalues : 0) + 1;
    n->count = 0;
    n->pos = tg_malloc(sizeof *n->pos * nv);
    n->by_name = tg_calloc(nv, 1);
    if (!n->pos || !n->by_name) {
        graph_text_names_free(n);
        return TG_ERR_NOMEM;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        n->pos[v] = -1;
    for (int32_t i = 0; i < g->ninputs; i++)
        number(n, g, g->inputs[i]);
    n->nsig = n->count;
    for (int32_t v = 0; v < g->nvalues; v++)
        if (g->values[v].kind != GRAPH_VALUE_INTER)
            number(n, g, v);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *nd = &g->nodes[i];
        if (nd->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < nd->nout; k++)
            number(n, g, nd->out[k]);
    }
    tg_status st = mark_unique_names(n, g);
    if (st != TG_OK)
        graph_text_names_free(n);
    return st;
}

void graph_text_names_free(text_names *n)
{
    tg_free(n->pos);
    tg_free(n->by_name);
    n->pos = NULL;
    n->by_name = NULL;
}

void graph_text_put_value(FILE *f, const graph *g, const text_names *n, int32_t v)
{
    if (v < 0 || v >= g->nvalues)
        fprintf(f, "%%bad.%d", (int)v);
    else if (n->pos[v] < 0)
        fprintf(f, "%%dead.%d", (int)v);
    else if (n->by_name[v])
        fprintf(f, "%%%s", g->values[v].name);
    else
        fprintf(f, "%%%d", (int)n->pos[v]);
}

/* ---- statements ---- */

typedef struct printer {
    const graph *g;
    FILE *f;
    const graph_print_opts *o;
    text_names names;
} printer;

/* "%v: type" or "%5 "odd name": type", as at every definition. */
static void put_def(printer *p, int32_t v)
{
    graph_text_put_value(p->f, p->g, &p->names, v);
    if (v < 0 || v >= p->g->nvalues)
        return;
    const graph_value *val = &p->g->values[v];
    if (val->name && !p->names.by_name[v]) {
        fputc(' ', p->f);
        graph_text_put_str(p->f, val->name);
    }
    fputs(": ", p->f);
    graph_text_put_type(p->f, p->g, val);
}

/* "  # model.c:31 mlp_forward", control characters made harmless. */
static void put_comment(printer *p, int32_t prov)
{
    char buf[256];
    if (!p->o->comments || prov < 0)
        return;
    graph_prov_str(p->g, prov, buf, sizeof buf);
    graph_text_sanitize(buf);
    fprintf(p->f, "  # %s", buf);
}

static const char *const post_names[] = {
    [GRAPH_POST_ADD] = "add",          [GRAPH_POST_RELU] = "relu",
    [GRAPH_POST_GELU] = "gelu",        [GRAPH_POST_SIGMOID] = "sigmoid",
    [GRAPH_POST_TANH] = "tanh",        [GRAPH_POST_SILU] = "silu",
    [GRAPH_POST_LEAKY_RELU] = "leaky_relu", [GRAPH_POST_CLIP] = "clip",
    [GRAPH_POST_HARDSIGMOID] = "hardsigmoid", [GRAPH_POST_HARDSWISH] = "hardswish",
};
#define NPOST ((int64_t)(sizeof post_names / sizeof post_names[0]))

const char *graph_text_post_name(int64_t c)
{
    return c > 0 && c < NPOST ? post_names[c] : NULL;
}

int graph_text_post_code(const char *s, size_t n)
{
    for (int c = 1; c < NPOST; c++)
        if (post_names[c] && strlen(post_names[c]) == n && !memcmp(post_names[c], s, n))
            return c;
    return -1;
}

static void put_attrs(printer *p, const graph_node *n)
{
    const graph_op_info *info = &graph_ops[n->op];
    if (!info->nattrs)
        return;
    const graph_attr_desc *d = info->attr_descs();
    graph_attrs def;
    graph_attrs_default(n->op, &def);
    int first = 1;
    for (int k = 0; k < info->nattrs; k++) {
        const char *a = (const char *)tg_node_attrs(n) + d[k].offset;
        const char *b = (const char *)&def + d[k].offset;
        graph_ints ints;
        if (d[k].kind == GRAPH_ATTR_INTS) {
            memcpy(&ints, a, sizeof ints);
            if (ints.n <= 0)
                continue;
        } else if (d[k].kind == GRAPH_ATTR_STR) {
            if (!a[0])
                continue; /* the default: empty */
        } else if (!memcmp(a, b, d[k].kind == GRAPH_ATTR_I64 ? 8
                                 : d[k].kind == GRAPH_ATTR_F32 ? 4
                                 : sizeof(graph_dtype))) {
            continue;
        }
        fprintf(p->f, "%s%s=", first ? " {" : ", ", d[k].name);
        first = 0;
        if (d[k].kind == GRAPH_ATTR_I64) {
            int64_t x;
            memcpy(&x, a, sizeof x);
            fprintf(p->f, "%lld", (long long)x);
        } else if (d[k].kind == GRAPH_ATTR_F32) {
            float x;
            memcpy(&x, a, sizeof x);
            put_f32(p->f, x);
        } else if (d[k].kind == GRAPH_ATTR_DTYPE) {
            graph_dtype x;
            memcpy(&x, a, sizeof x);
            fputs(graph_dtype_name(x), p->f);
        } else if (d[k].kind == GRAPH_ATTR_STR) {
            char s[GRAPH_MAX_STR];
            memcpy(s, a, sizeof s);
            s[GRAPH_MAX_STR - 1] = '\0';
            graph_text_put_str(p->f, s);
        } else {
            int cnt = ints.n > GRAPH_MAX_INTS ? GRAPH_MAX_INTS : ints.n;
            int post = !strcmp(d[k].name, "post"); /* epilogue steps by name */
            fputc('[', p->f);
            for (int i = 0; i < cnt; i++) {
                const char *name = post ? graph_text_post_name(ints.v[i]) : NULL;
                if (i)
                    fputc(',', p->f);
                if (name)
                    fputs(name, p->f);
                else
                    fprintf(p->f, "%lld", (long long)ints.v[i]);
            }
            fputc(']', p->f);
        }
    }
    if (!first)
        fputc('}', p->f);
}

static void put_node(printer *p, int32_t i)
{
    const graph_node *n = &p->g->nodes[i];
    fputs("  ", p->f);
    if (n->nout == 0)
        fputs("()", p->f);
    for (int k = 0; k < n->nout; k++) {
        if (k)
            fputs(", ", p->f);
        put_def(p, n->out[k]);
    }
    fprintf(p->f, " = %s(", (unsigned)n->op < GRAPH_OP_COUNT ? graph_ops[n->op].name
                                                             : "bad_op");
    for (int k = 0; k < n->nin; k++) {
        if (k)
            fputs(", ", p->f);
        graph_text_put_value(p->f, p->g, &p->names, n->in[k]);
    }
    fputc(')', p->f);
    if ((unsigned)n->op < GRAPH_OP_COUNT)
        put_attrs(p, n);
    if (n->flags & GRAPH_NODE_SPECIALIZED)
        fputs(" specialized", p->f);
    for (int k = 0; p->o->provenance && k < n->nprov; k++)
        fprintf(p->f, " !p%d", (int)n->prov[k]);
    put_comment(p, n->nprov ? n->prov[0] : -1);
    fputc('\n', p->f);
}

static void put_data(printer *p, const graph_value *v)
{
    int64_t n = type_ok(&v->type) ? 1 : -1;
    for (int d = 0; n >= 0 && d < v->type.ndim; d++)
        if (v->type.dim[d] && n > INT64_MAX / v->type.dim[d])
            n = -1;
        else
            n *= v->type.dim[d];
    if (!v->data || n < 0 || (!p->o->inline_all && n > p->o->inline_max)) {
        fprintf(p->f, " elided 0x%016llx", (unsigned long long)v->hash);
        return;
    }
    size_t esize = graph_dtype_size(v->type.dtype);
    fputs(" [", p->f);
    for (int64_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", p->f);
        const void *e = (const char *)v->data + (size_t)i * esize;
        if (v->type.dtype == GRAPH_F32)
            put_f32(p->f, *(const float *)e);
        else if (v->type.dtype == GRAPH_I64)
            fprintf(p->f, "%lld", (long long)*(const int64_t *)e);
        else if (v->type.dtype == GRAPH_I32)
            fprintf(p->f, "%d", (int)*(const int32_t *)e);
        else
            fprintf(p->f, "%u", (unsigned)*(const uint8_t *)e);
    }
    fputc(']', p->f);
}

static void put_source(printer *p, int32_t v)
{
    const graph_value *val = &p->g->values[v];
    fputs("  ", p->f);
    put_def(p, v);
    fprintf(p->f, " = %s", graph_value_kind_name(val->kind));
    if (graph_kind_has_data(val->kind))
        put_data(p, val);
    fputc('\n', p->f);
}

static void put_guard(printer *p, const graph_guard *gd)
{
    static const char *const kinds[] = {"value", "decision", "buffer", "size"};
    static const char *const pols[] = {"strict", "warn", "off"};
    fprintf(p->f, "  guard %s ", (unsigned)gd->kind < 4 ? kinds[gd->kind] : "bad");
    graph_text_put_value(p->f, p->g, &p->names, gd->value);
    if (gd->index != -1)
        fprintf(p->f, "[%lld]", (long long)gd->index);
    fputs(" == ", p->f);
    if (gd->kind == GRAPH_GUARD_BUFFER)
        fprintf(p->f, "0x%016llx", (unsigned long long)gd->hash);
    else
        put_f64(p->f, gd->expect);
    fprintf(p->f, " %s", (unsigned)gd->policy < 3 ? pols[gd->policy] : "bad");
    if (p->o->provenance && gd->prov >= 0)
        fprintf(p->f, " !p%d", (int)gd->prov);
    put_comment(p, gd->prov);
    fputc('\n', p->f);
}

/* Emits guards, in order, while the next one's value is defined by t. */
static void put_guards_upto(printer *p, const int32_t *defpt, int32_t *next,
                            int32_t t)
{
    const graph *g = p->g;
    while (*next < g->nguards) {
        int32_t v = g->guards[*next].value;
        int32_t d = v >= 0 && v < g->nvalues ? defpt[v] : INT32_MAX;
        if (d > t)
            break;
        put_guard(p, &g->guards[(*next)++]);
    }
}

static void put_header(printer *p)
{
    const graph *g = p->g;
    fputs("graph ", p->f);
    graph_text_put_name(p->f, g->name);
    fputc('(', p->f);
    for (int32_t i = 0; i < g->ninputs; i++) {
        if (i)
            fputs(", ", p->f);
        put_def(p, g->inputs[i]);
    }
    fputs(") -> (", p->f);
    for (int32_t i = 0; i < g->noutputs; i++) {
        int32_t v = g->outputs[i].value;
        if (i)
            fputs(", ", p->f);
        graph_text_put_name(p->f, g->outputs[i].name);
        fputs(": ", p->f);
        if (v >= 0 && v < g->nvalues)
            graph_text_put_type(p->f, g, &g->values[v]);
        else
            fputs("bad[]", p->f);
    }
    fputs(") {\n", p->f);
    for (int32_t i = 0; i < g->nsyms; i++) {
        fputs("  sym ", p->f);
        graph_text_put_name(p->f, g->syms[i].name);
        fprintf(p->f, " = %lld\n", (long long)g->syms[i].traced);
    }
}

/* Sources and nodes in canonical order, guards interleaved, returns. */
static tg_status put_body(printer *p)
{
    const graph *g = p->g;
    int32_t *defpt = tg_malloc(sizeof *defpt * ((size_t)g->nvalues + 1));
    if (!defpt)
        return TG_ERR_NOMEM;
    for (int32_t v = 0; v < g->nvalues; v++) {
        int src = g->values[v].kind != GRAPH_VALUE_INTER && p->names.pos[v] >= 0;
        defpt[v] = src ? 0 : INT32_MAX;
        if (src && p->names.pos[v] >= p->names.nsig)
            put_source(p, v);
    }
    int32_t next = 0, t = 0;
    put_guards_upto(p, defpt, &next, t);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        put_node(p, i);
        t++;
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0 && n->out[k] < g->nvalues &&
                defpt[n->out[k]] == INT32_MAX)
                defpt[n->out[k]] = t;
        put_guards_upto(p, defpt, &next, t);
    }
    put_guards_upto(p, defpt, &next, INT32_MAX);
    tg_free(defpt);
    for (int32_t i = 0; i < g->noutputs; i++) {
        fputs("  return ", p->f);
        graph_text_put_name(p->f, g->outputs[i].name);
        fputs(" = ", p->f);
        graph_text_put_value(p->f, g, &p->names, g->outputs[i].value);
        fputc('\n', p->f);
    }
    for (int32_t i = 0; i < g->nstates; i++) {
        fputs("  next ", p->f);
        graph_text_put_value(p->f, g, &p->names, g->states[i].value);
        fputs(" = ", p->f);
        graph_text_put_value(p->f, g, &p->names, g->states[i].next);
        fputc('\n', p->f);
    }
    fputs("}\n", p->f);
    return TG_OK;
}

static void put_frame(FILE *f, const graph_frame *fr)
{
    fprintf(f, "0x%llx ", (unsigned long long)fr->ip);
    if (fr->func)
        graph_text_put_str(f, fr->func);
    else
        fputc('?', f);
    fprintf(f, "+0x%llx", (unsigned long long)fr->offset);
    if (fr->file || fr->line) {
        fputc(' ', f);
        if (fr->file)
            graph_text_put_str(f, fr->file);
        else
            fputc('?', f);
        fprintf(f, ":%d", (int)fr->line);
    }
}

static void put_provenance(printer *p)
{
    const graph *g = p->g;
    if (!p->o->provenance || g->nprovs == 0)
        return;
    fputs("provenance {\n", p->f);
    for (int32_t i = 0; i < g->nprovs; i++) {
        const graph_prov *pr = &g->provs[i];
        fprintf(p->f, "  p%d = ", (int)i);
        graph_text_put_str(p->f, pr->file ? pr->file : "?");
        fprintf(p->f, ":%d ", (int)pr->line);
        graph_text_put_str(p->f, pr->func ? pr->func : "?");
        int ok = pr->frame0 >= 0 && pr->nframes > 0 &&
                 pr->frame0 <= g->nframes - pr->nframes;
        for (int32_t k = 0; ok && k < pr->nframes; k++) {
            fputs(k ? ", " : " [", p->f);
            put_frame(p->f, &g->frames[pr->frame0 + k]);
        }
        fputs(ok ? "]\n" : "\n", p->f);
    }
    fputs("}\n", p->f);
}

tg_status graph_print(const graph *g, FILE *f, const graph_print_opts *opts)
{
    graph_print_opts def = GRAPH_PRINT_DEFAULTS;
    printer p = {g, f, opts ? opts : &def, {0}};
    if (!g || !f)
        return TG_ERR_NULL;
    tg_status st = graph_text_names_init(&p.names, g);
    if (st != TG_OK)
        return st;
    put_header(&p);
    st = put_body(&p);
    if (st == TG_OK)
        put_provenance(&p);
    graph_text_names_free(&p.names);
    if (st == TG_OK && (fflush(f) != 0 || ferror(f)))
        st = TG_ERR_IO;
    return st;
}

char *graph_print_str(const graph *g, const graph_print_opts *opts,
                      size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    tg_status st = graph_print(g, f, opts);
    if (fclose(f) != 0 || st != TG_OK) {
        tg_free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}
