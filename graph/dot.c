/*
 * dot.c - writes a graph as a Graphviz digraph, for looking at it.
 *
 * Labels are composed in a memory stream with the text printer's helpers
 * (so values carry the same %names as the text IR) and then written as a
 * DOT string with quotes, backslashes and newlines escaped: user strings
 * (file names, value names) cannot break out of the label.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "text.h"
#include "text_impl.h"
#include "graph_impl.h"

typedef struct dot {
    const graph *g;
    FILE *f;
    text_names names;
    char *buf; /* the label being composed */
    size_t len;
    FILE *lab;
    int oom;
} dot;

static FILE *label_begin(dot *d)
{
    d->buf = NULL;
    d->len = 0;
    d->lab = open_memstream(&d->buf, &d->len);
    if (!d->lab)
        d->oom = 1;
    return d->lab;
}

/* Writes s as a DOT string: quotes, backslashes, newlines escaped; other
 * control bytes as spaces, bytes that are not printable UTF-8 as '?'. */
static void put_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        int n = *c >= 0x80 ? graph_text_utf8_len(c) : 0;
        if (n) { /* printable UTF-8 as it is */
            fwrite(c, 1, (size_t)n, f);
            c += n - 1;
        } else if (*c == '"' || *c == '\\') {
            fprintf(f, "\\%c", *c);
        } else if (*c == '\n') {
            fputs("\\n", f);
        } else {
            fputc(*c < 0x20 ? ' ' : *c >= 0x7f ? '?' : *c, f);
        }
    }
    fputc('"', f);
}

/* Closes the label and writes it as label="...". */
static void label_end(dot *d)
{
    if (!d->lab)
        return;
    int bad = fclose(d->lab) != 0;
    d->lab = NULL;
    if (bad) {
        d->oom = 1;
    } else {
        fputs("label=", d->f);
        put_escaped(d->f, d->buf);
    }
    tg_free(d->buf);
}

static void put_site(dot *d, FILE *l, int32_t prov)
{
    char site[256];
    if (prov < 0)
        return;
    graph_prov_str(d->g, prov, site, sizeof site);
    graph_text_sanitize(site);
    fprintf(l, "\n%s", site);
}

/* The DOT node a value comes from: its source node, or its producer. */
static void put_from(dot *d, int32_t v)
{
    const graph *g = d->g;
    if (v < 0 || v >= g->nvalues || d->names.pos[v] < 0)
        fprintf(d->f, "missing%d", (int)v);
    else if (g->values[v].kind == GRAPH_VALUE_INTER)
        fprintf(d->f, "n%d", (int)g->values[v].node);
    else
        fprintf(d->f, "v%d", (int)v);
}

static void put_sources(dot *d)
{
    static const char *const shapes[] = {"ellipse", "cylinder", "note", "box", "box3d"};
    const graph *g = d->g;
    for (int32_t v = 0; v < g->nvalues; v++) {
        const graph_value *val = &g->values[v];
        if (val->kind == GRAPH_VALUE_INTER || d->names.pos[v] < 0)
            continue;
        fprintf(d->f, "  v%d [shape=%s, ", (int)v,
                shapes[(unsigned)val->kind < 5 ? val->kind : 3]);
        FILE *l = label_begin(d);
        if (l) {
            graph_text_put_value(l, g, &d->names, v);
            if (val->name && !d->names.by_name[v])
                fprintf(l, "\n%s", val->name);
            fprintf(l, "\n%s ", graph_value_kind_name(val->kind));
            graph_text_put_type(l, g, val);
        }
        label_end(d);
        fputs("];\n", d->f);
    }
}

static void put_node(dot *d, int32_t i)
{
    const graph *g = d->g;
    const graph_node *n = &g->nodes[i];
    fprintf(d->f, "  n%d [shape=box, style=%s, ", (int)i,
            n->flags & GRAPH_NODE_SPECIALIZED ? "\"rounded,dashed\"" : "rounded");
    FILE *l = label_begin(d);
    if (l) {
        fputs((unsigned)n->op < GRAPH_OP_COUNT ? graph_ops[n->op].name : "?", l);
        for (int k = 0; k < n->nout; k++) {
            int32_t v = n->out[k];
            fputc('\n', l);
            if (v >= 0 && v < g->nvalues) {
                graph_text_put_value(l, g, &d->names, v);
                fputs(": ", l);
                graph_text_put_type(l, g, &g->values[v]);
            }
        }
        for (int k = 0; k < n->nprov; k++)
            put_site(d, l, n->prov[k]);
    }
    label_end(d);
    fputs("];\n", d->f);
    for (int k = 0; k < n->nin; k++) {
        fputs("  ", d->f);
        put_from(d, n->in[k]);
        fprintf(d->f, " -> n%d;\n", (int)i);
    }
}

static void put_guard(dot *d, int32_t i)
{
    static const char *const kinds[] = {"value", "decision", "buffer", "size"};
    static const char *const pols[] = {"strict", "warn", "off"};
    const graph_guard *gd = &d->g->guards[i];
    fprintf(d->f, "  g%d [shape=octagon, ", (int)i);
    FILE *l = label_begin(d);
    if (l) {
        fprintf(l, "guard %s ", (unsigned)gd->kind < 4 ? kinds[gd->kind] : "?");
        graph_text_put_value(l, d->g, &d->names, gd->value);
        if (gd->index >= 0)
            fprintf(l, "[%lld]", (long long)gd->index);
        if (gd->kind == GRAPH_GUARD_BUFFER)
            fprintf(l, " == 0x%016llx", (unsigned long long)gd->hash);
        else
            fprintf(l, " == %.17g", gd->expect);
        fprintf(l, "\n%s", (unsigned)gd->policy < 3 ? pols[gd->policy] : "?");
        put_site(d, l, gd->prov);
    }
    label_end(d);
    fputs("];\n  ", d->f);
    put_from(d, gd->value);
    fprintf(d->f, " -> g%d [style=dashed];\n", (int)i);
}

/* A state's next value, back to the state it replaces after the run. */
static void put_next(dot *d, int32_t i)
{
    const graph_state *st = &d->g->states[i];
    if (st->next == st->value)
        return;
    fputs("  ", d->f);
    put_from(d, st->next);
    fputs(" -> ", d->f);
    put_from(d, st->value);
    fputs(" [style=dashed, constraint=false, label=\"next\"];\n", d->f);
}

static void put_output(dot *d, int32_t i)
{
    const graph_output *o = &d->g->outputs[i];
    fprintf(d->f, "  o%d [shape=box, peripheries=2, ", (int)i);
    FILE *l = label_begin(d);
    if (l)
        fprintf(l, "return %s", o->name ? o->name : "?");
    label_end(d);
    fputs("];\n  ", d->f);
    put_from(d, o->value);
    fprintf(d->f, " -> o%d;\n", (int)i);
}

tg_status graph_write_dot(const graph *g, FILE *f)
{
    if (!g || !f)
        return TG_ERR_NULL;
    dot d = {g, f, {0}, NULL, 0, NULL, 0};
    tg_status st = graph_text_names_init(&d.names, g);
    if (st != TG_OK)
        return st;
    fputs("digraph ", f);
    put_escaped(f, g->name ? g->name : "graph");
    fputs(" {\n  node [fontname=\"Helvetica\", fontsize=10];\n", f);
    put_sources(&d);
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            put_node(&d, i);
    for (int32_t i = 0; i < g->nguards; i++)
        put_guard(&d, i);
    for (int32_t i = 0; i < g->noutputs; i++)
        put_output(&d, i);
    for (int32_t i = 0; i < g->nstates; i++)
        put_next(&d, i);
    fputs("}\n", f);
    graph_text_names_free(&d.names);
    if (d.oom)
        return TG_ERR_NOMEM;
    return fflush(f) != 0 || ferror(f) ? TG_ERR_IO : TG_OK;
}
