/*
 * gen_api.c - writes eager_ops.h and eager_ops.c from graph/ops.def: one
 * function eager_<op>_at() per op (TG_API: exported), plus the macro
 * eager_<op>() that passes the caller's site.  With a third path it also
 * writes docs/OPS.md.  The input names, the one-line comments on each
 * input and attribute and the PyTorch / ONNX counterparts come from
 * graph/ops_doc.def; an op missing there, out of ops.def's order, or whose
 * inputs or attributes differ from ops.def's fails the run (so the build).
 * Run at build time; its outputs are not edited.
 *
 *   gen_api OUT_HEADER OUT_SOURCE [OUT_OPS_MD]
 */
#include <stdio.h>
#include <string.h>

#include "../graph/dtype.h"

#define MAX_ATTRS 16
#define MAX_IN 12

typedef struct attr {
    const char *name, *ctype, *def;
} attr;

typedef struct opdesc {
    const char *name;
    int min_in, max_in, nout;
    unsigned dtypes;
    int has_attrs;
    attr attrs[MAX_ATTRS];
} opdesc;

#define A_I64(n, d) {#n, "int64_t", #d},
#define A_F32(n, d) {#n, "float", #d},
#define A_INTS(n) {#n, "graph_ints", "empty"},
#define A_DTYPE(n, d) {#n, "graph_dtype", #d},
#define A_STR(n) {#n, "graph_str", "empty"},
static const opdesc ops[] = {
#define OP(name, v, mi, ma, no, p, dt, inf) {#name, mi, ma, no, dt, 0, {{0}}},
#define OPA(name, v, mi, ma, no, p, dt, inf, attrs) {#name, mi, ma, no, dt, 1, {attrs}},
#include "../graph/ops.def"
#undef OP
#undef OPA
};
#undef A_I64
#undef A_F32
#undef A_INTS
#undef A_DTYPE
#undef A_STR

/* One input or attribute of ops_doc.def: its name and one-line role. */
typedef struct pdoc {
    const char *name, *doc;
    int opt; /* ATO: an attribute only the optimizer sets, not a parameter */
} pdoc;

typedef struct opdoc {
    const char *name, *summary;
    pdoc in[MAX_IN + 1], at[MAX_ATTRS + 1]; /* ended by a NULL name */
    const char *torch, *onnx;
} opdoc;

#define IN(n, d) {#n, d, 0},
#define AT(n, d) {#n, d, 0},
#define ATO(n, d) {#n, d, 1},
static const opdoc docs[] = {
#define DOC(name, sum, ins, ats, pt, ox) {#name, sum, {ins {0}}, {ats {0}}, pt, ox},
#define WRAPPER(name, call)
#include "../graph/ops_doc.def"
#undef DOC
#undef WRAPPER
};
#undef IN
#undef AT
#undef ATO

/* The ops with a hand-written eager_<op>() (ops_doc.def's WRAPPER lines). */
typedef struct wrapdoc {
    const char *name, *call;
} wrapdoc;

static const wrapdoc wrappers[] = {
#define DOC(...)
#define WRAPPER(name, call) {#name, call},
#include "../graph/ops_doc.def"
#undef DOC
#undef WRAPPER
    {NULL, NULL}};

/* The wrapper's text of op name, or NULL: its function is eager_<op>(). */
static const char *wrapper_of(const char *name)
{
    for (int i = 0; wrappers[i].name; i++)
        if (!strcmp(wrappers[i].name, name))
            return wrappers[i].call;
    return NULL;
}

/* The generated function's name: eager_<op>, or eager_<op>_op for an op
 * with a wrapper. */
static const char *fn_name(const opdesc *o)
{
    static char buf[96];
    snprintf(buf, sizeof buf, "eager_%s%s", o->name, wrapper_of(o->name) ? "_op" : "");
    return buf;
}

/* Outputs returned through an out array: a count the infer function
 * decides, or more than one. */
static int multi_out(const opdesc *o)
{
    return o->nout != 1;
}

#define NOPS (sizeof ops / sizeof ops[0])
#define NDOCS (sizeof docs / sizeof docs[0])

static int nattrs(const opdesc *o)
{
    int n = 0;
    while (n < MAX_ATTRS && o->attrs[n].name)
        n++;
    return n;
}

static int npdocs(const pdoc *p)
{
    int n = 0;
    while (p[n].name)
        n++;
    return n;
}

/* Inputs the prototype names: max_in, or the one list of a variadic op. */
static int ninputs(const opdesc *o)
{
    return o->max_in < 0 ? 1 : o->max_in;
}

/* Text that would end the comment it is written into, or break a line. */
static int bad_text(const char *s)
{
    return strstr(s, "*/") || strchr(s, '\n');
}

/*
 * Checks ops_doc.def against ops.def: one entry per op in the same
 * order, the inputs counted as the prototype takes them, the attributes
 * by name in order, no empty or comment-breaking text.  Returns 0 or
 * prints every problem (naming the op) and returns 1.
 */
static int check_docs(void)
{
    int bad = 0;
    for (int i = 0; wrappers[i].name; i++) {
        size_t k = 0;
        while (k < NOPS && strcmp(ops[k].name, wrappers[i].name))
            k++;
        if (k == NOPS || bad_text(wrappers[i].call)) {
            fprintf(stderr, "gen_api: graph/ops_doc.def: WRAPPER(%s): %s\n", wrappers[i].name,
                    k == NOPS ? "no such op" : "empty text, a newline or \"*/\"");
            bad = 1;
        }
    }
    if (NDOCS != NOPS) {
        fprintf(stderr, "gen_api: graph/ops_doc.def has %zu entries, graph/ops.def %zu ops\n",
                (size_t)NDOCS, (size_t)NOPS);
        bad = 1;
    }
    for (size_t i = 0; i < NOPS && i < NDOCS; i++) {
        const opdesc *o = &ops[i];
        const opdoc *d = &docs[i];
        if (strcmp(o->name, d->name)) {
            fprintf(stderr, "gen_api: graph/ops_doc.def entry %zu is %s, graph/ops.def's op %zu is %s"
                            " (one entry per op, in ops.def's order)\n", i, d->name, i, o->name);
            return 1;
        }
        if (npdocs(d->in) != ninputs(o)) {
            fprintf(stderr, "gen_api: %s: graph/ops_doc.def names %d inputs, ops.def's max_in gives %d\n",
                    o->name, npdocs(d->in), ninputs(o));
            bad = 1;
        }
        if (npdocs(d->at) != nattrs(o)) {
            fprintf(stderr, "gen_api: %s: graph/ops_doc.def documents %d attributes, ops.def has %d\n",
                    o->name, npdocs(d->at), nattrs(o));
            bad = 1;
        }
        for (int k = 0; k < nattrs(o) && d->at[k].name; k++)
            if (strcmp(o->attrs[k].name, d->at[k].name)) {
                fprintf(stderr, "gen_api: %s: attribute %d is %s in ops.def, %s in graph/ops_doc.def\n",
                        o->name, k, o->attrs[k].name, d->at[k].name);
                bad = 1;
            }
        const char *text[] = {d->summary, d->torch, d->onnx};
        for (int k = 0; k < 3; k++)
            if (!text[k][0] || bad_text(text[k])) {
                fprintf(stderr, "gen_api: %s: empty text, a newline or \"*/\" in graph/ops_doc.def\n",
                        o->name);
                bad = 1;
            }
        for (int k = 0; k < npdocs(d->in) + npdocs(d->at); k++) {
            const pdoc *p = k < npdocs(d->in) ? &d->in[k] : &d->at[k - npdocs(d->in)];
            if (!p->doc[0] || bad_text(p->doc)) {
                fprintf(stderr, "gen_api: %s: %s: empty text, a newline or \"*/\" in graph/ops_doc.def\n",
                        o->name, p->name);
                bad = 1;
            }
        }
    }
    return bad;
}

/* Writes the parameter list after the site parameters. */
static void params(FILE *f, const opdesc *o, const opdoc *d)
{
    if (o->max_in < 0)
        fprintf(f, ", int n, eager_tensor *const *%s", d->in[0].name);
    else
        for (int i = 0; i < o->max_in; i++)
            fprintf(f, ", eager_tensor *%s", d->in[i].name);
    for (int i = 0; i < nattrs(o); i++)
        if (!d->at[i].opt)
            fprintf(f, ", %s %s", o->attrs[i].ctype, o->attrs[i].name);
    if (multi_out(o))
        fprintf(f, ", eager_tensor **out, int max_out");
}

static void prototype(FILE *f, const opdesc *o, const opdoc *d)
{
    fprintf(f, "%s%s_at(EAGER_SITE_PARAMS", multi_out(o) ? "int " : "eager_tensor *",
            fn_name(o));
    params(f, o, d);
    fprintf(f, ")");
}

/* The generated body's locals end in '_' so no input or attribute name
 * (a, b, x, ...) can shadow them. */
static void body(FILE *f, const opdesc *o, const opdoc *d)
{
    fprintf(f, "{\n    eager_site site_ = {site_file_, site_line_, site_func_};\n");
    if (o->max_in >= 0) {
        fprintf(f, "    eager_tensor *in_[%d] = {", o->max_in);
        for (int i = 0; i < o->max_in; i++)
            fprintf(f, "%s%s", i ? ", " : "", d->in[i].name);
        fprintf(f, "};\n");
    }
    const char *in = o->max_in < 0 ? d->in[0].name : "in_";
    char nin[32];
    snprintf(nin, sizeof nin, o->max_in < 0 ? "n" : "%d", o->max_in);
    if (o->max_in < 0)
        fprintf(f, "    if (n < 0 || (n > 0 && !%s)) {\n"
                   "        eager_set_error(TG_ERR_ARG, &site_, \"%s: bad input list\");\n"
                   "        return %s;\n    }\n",
                in, o->name, multi_out(o) ? "-1" : "NULL");
    const char *attrs = "NULL";
    if (o->has_attrs) {
        fprintf(f, "    graph_%s_attrs at_;\n    memset(&at_, 0, sizeof at_);\n", o->name);
        for (int i = 0; i < nattrs(o); i++)
            if (!d->at[i].opt)
                fprintf(f, "    at_.%s = %s;\n", o->attrs[i].name, o->attrs[i].name);
            else if (strcmp(o->attrs[i].def, "empty")) /* an optimizer's: its default */
                fprintf(f, "    at_.%s = %s;\n", o->attrs[i].name, o->attrs[i].def);
        attrs = "&at_";
    }
    if (multi_out(o)) {
        fprintf(f, "    return eager_dispatch(GRAPH_OP_%s, %s, %s, %s, out, max_out, &site_);\n}\n\n",
                o->name, in, nin, attrs);
    } else {
        fprintf(f, "    eager_tensor *out_[%d];\n", o->nout);
        fprintf(f, "    return eager_dispatch(GRAPH_OP_%s, %s, %s, %s, out_, %d, &site_) < 0 ? NULL : out_[0];\n}\n\n",
                o->name, in, nin, attrs, o->nout);
    }
}

/* The dtypes of an ops.def mask, "f32, i64, i32" ("any" for all). */
static const char *dtype_names(unsigned mask)
{
    static char buf[64];
    static const char *const names[] = {
#define DT_NAME_(up, low, ctype, size) #low,
        GRAPH_DTYPE_LIST(DT_NAME_)
#undef DT_NAME_
    };
    if (mask == GRAPH_DT_ALL)
        return "any (f32, i64, i32, bool)";
    buf[0] = 0;
    for (int i = 0; i < GRAPH_DTYPE_COUNT; i++)
        if (mask & GRAPH_DT_BIT(i))
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     names[i]);
    return buf;
}

/* An attribute's default as ops.def writes it, "1e-5f" as "1e-5". */
static const char *def_text(const attr *a)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%s", a->def);
    size_t n = strlen(buf);
    if (!strcmp(a->ctype, "float") && n > 1 && buf[n - 1] == 'f' && buf[n - 2] >= '0' &&
        buf[n - 2] <= '9')
        buf[n - 1] = 0;
    return buf;
}

/* Is input i optional (past min_in; callers pass EAGER_NONE)? */
static int optional_in(const opdesc *o, int i)
{
    return o->max_in >= 0 && i >= o->min_in;
}

/* The comment above an op's prototype: summary, a line per input and
 * attribute, dtypes and counterparts. */
static void header_comment(FILE *h, const opdesc *o, const opdoc *d)
{
    fprintf(h, "\n/*\n * %s: %s.\n", o->name, d->summary);
    for (int i = 0; d->in[i].name; i++)
        fprintf(h, " *   %-12s %s%s\n", d->in[i].name, o->max_in < 0 ? "(n of them) " : "",
                d->in[i].doc);
    for (int i = 0; i < nattrs(o); i++)
        fprintf(h, " *   %-12s %s%s; default %s\n", o->attrs[i].name,
                d->at[i].opt ? "(set by the optimizer, not a parameter) " : "", d->at[i].doc,
                def_text(&o->attrs[i]));
    if (multi_out(o))
        fprintf(h, " *   %-12s room for max_out outputs; returns how many were made, -1 on error\n",
                "out");
    if (wrapper_of(o->name))
        fprintf(h, " * The bare op; most callers want its wrapper: %s.\n", wrapper_of(o->name));
    fprintf(h, " * dtypes of %s: %s.\n * PyTorch: %s.\n * ONNX: %s.\n */\n", d->in[0].name,
            dtype_names(o->dtypes), d->torch, d->onnx);
}

/* A Markdown table cell: '|' escaped. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void write_ops_md(FILE *m)
{
    fprintf(m,
            "<!-- Generated from graph/ops.def and graph/ops_doc.def by tools/gen_api.c; do not edit.\n"
            "     After changing either: make build && cp build/gen/OPS.md docs/OPS.md\n"
            "     (the test test_ops_doc fails while this file is stale). -->\n"
            "# Ops\n\n"
            "Every op of tracegraph, as `eager_<op>()` (declared in `<tracegraph/eager/eager_ops.h>`,\n"
            "reached from `<tracegraph.h>`) takes it, as the graph, `.tgraph` files and the text IR name\n"
            "it, and as ONNX import and export map it.\n\n"
            "## Conventions\n\n"
            "- A call is `eager_<op>(inputs..., attributes...)`: the inputs in the order listed, then\n"
            "  every attribute, in the order listed (C has no defaults: pass each; the default shown is\n"
            "  what a file or an ONNX node that leaves it out gets). Ops return a new tensor, or NULL\n"
            "  with the error in `eager_error()` (a NULL input gives NULL and no new error).\n"
            "- An optional input (marked so) is passed as `EAGER_NONE`; only trailing inputs may be left out.\n"
            "- A list attribute (`graph_ints`) is `TG_INTS(1, 2)`, or `TG_NOINTS` for an empty list;\n"
            "  what an empty list means is said per attribute. A string is `TG_STR(\"...\")`.\n"
            "- Images are NCHW: `[N, C, H, W]`. Weights: `linear` `[N, K]` (out, in, as\n"
            "  `nn.Linear`), `conv2d` `[O, C/groups, kh, kw]`, `conv_transpose2d` `[C, O/groups, kh, kw]`.\n"
            "- `stride`, `dilation`, `kernel`: 1 entry (both dims) or 2 (h, w). `padding`: 0, 1 (all\n"
            "  sides), 2 (h, w, each on both sides) or 4 entries (top, left, bottom, right).\n"
            "- Binary ops broadcast as NumPy; both inputs have one dtype (no implicit promotion: `cast`).\n"
            "- An axis may be negative, counting from the end.\n"
            "- \"dtypes\" lists what the first input may be; the other inputs are as stated.\n\n"
            "## Summary\n\n"
            "| op | inputs | attributes | dtypes | PyTorch | ONNX |\n"
            "|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < NOPS; i++) {
        const opdesc *o = &ops[i];
        const opdoc *d = &docs[i];
        fprintf(m, "| [`%s`](#%s) | ", o->name, o->name);
        for (int k = 0; d->in[k].name; k++)
            fprintf(m, "%s%s%s%s", k ? ", " : "", d->in[k].name, o->max_in < 0 ? "..." : "",
                    optional_in(o, k) ? "?" : "");
        fprintf(m, " | ");
        for (int k = 0, first = 1; k < nattrs(o); k++)
            if (!d->at[k].opt) {
                fprintf(m, "%s%s", first ? "" : ", ", o->attrs[k].name);
                first = 0;
            }
        fprintf(m, " | %s | ", dtype_names(o->dtypes));
        md_cell(m, d->torch);
        fprintf(m, " | ");
        md_cell(m, d->onnx);
        fprintf(m, " |\n");
    }
    fprintf(m, "\n`?`: optional input (`EAGER_NONE`); `...`: a list of inputs.\n");
    for (size_t i = 0; i < NOPS; i++) {
        const opdesc *o = &ops[i];
        const opdoc *d = &docs[i];
        fprintf(m, "\n## %s\n\n%s.\n\n```c\n", o->name, d->summary);
        prototype(m, o, d);
        fprintf(m, ";\n```\n\n| | name | type | meaning |\n|---|---|---|---|\n");
        for (int k = 0; d->in[k].name; k++) {
            fprintf(m, "| input | `%s` | %s | %s", d->in[k].name,
                    o->max_in < 0 ? "`eager_tensor *const *` (n)" : "`eager_tensor *`",
                    optional_in(o, k) ? "optional: " : "");
            md_cell(m, d->in[k].doc);
            fprintf(m, " |\n");
        }
        for (int k = 0; k < nattrs(o); k++) {
            fprintf(m, "| attribute%s | `%s` | `%s`, default `%s` | ",
                    d->at[k].opt ? " (set by the optimizer, not a parameter)" : "",
                    o->attrs[k].name, o->attrs[k].ctype, def_text(&o->attrs[k]));
            md_cell(m, d->at[k].doc);
            fprintf(m, " |\n");
        }
        if (multi_out(o))
            fprintf(m, "| output | `out` | `eager_tensor **` (max_out) | room for the outputs; "
                       "returns how many were made, -1 on error |\n");
        fprintf(m, "\ndtypes of `%s`: %s. PyTorch: ", d->in[0].name, dtype_names(o->dtypes));
        fprintf(m, "%s. ONNX: %s.\n", d->torch, d->onnx);
        if (wrapper_of(o->name))
            fprintf(m, "\nThe bare op is `%s()`; most callers want its wrapper: %s.\n", fn_name(o),
                    wrapper_of(o->name));
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: gen_api OUT_HEADER OUT_SOURCE [OUT_OPS_MD]\n");
        return 2;
    }
    if (check_docs())
        return 1;
    FILE *h = fopen(argv[1], "w"), *c = fopen(argv[2], "w");
    FILE *m = argc == 4 ? fopen(argv[3], "w") : NULL;
    if (!h || !c || (argc == 4 && !m)) {
        perror("gen_api");
        return 1;
    }
    /* eager.h includes this header at its end; included first, it
     * includes eager.h itself (which then skips it) so it compiles alone.
     * In the tree it lives in the build's gen/, installed beside eager.h. */
    fprintf(h, "/* eager_ops.h - generated from graph/ops.def and graph/ops_doc.def by\n"
               " * tools/gen_api.c; do not edit.  Every op of tracegraph as a function:\n"
               " * eager_<op>(inputs..., attributes...).  Each comment names the inputs in\n"
               " * order with their roles and layouts, then each attribute with its\n"
               " * meaning and its default (what a file or an ONNX node that leaves it out\n"
               " * gets: the C call takes every argument).  Optional inputs take\n"
               " * EAGER_NONE; lists are TG_INTS(...) or TG_NOINTS (empty); strings\n"
               " * TG_STR(\"...\").  The same as a table: docs/OPS.md. */\n"
               "#ifndef TG_EAGER_OPS_H\n#define TG_EAGER_OPS_H\n\n"
               "#if defined(TG_IN_TREE)\n#include \"eager/eager.h\"\n#else\n#include \"eager.h\"\n#endif\n\n"
               "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    fprintf(c, "/* eager_ops.c - generated from graph/ops.def by tools/gen_api.c; do not edit. */\n"
               "#include <string.h>\n\n#include \"eager/eager.h\"\n\n");
    for (size_t i = 0; i < NOPS; i++) {
        header_comment(h, &ops[i], &docs[i]);
        fprintf(h, "TG_API ");
        prototype(h, &ops[i], &docs[i]);
        char fn[96];
        snprintf(fn, sizeof fn, "%s", fn_name(&ops[i]));
        fprintf(h, ";\n#define %s(...) %s_at(EAGER_SITE, __VA_ARGS__)\n", fn, fn);
        prototype(c, &ops[i], &docs[i]);
        fprintf(c, "\n");
        body(c, &ops[i], &docs[i]);
    }
    fprintf(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    if (m)
        write_ops_md(m);
    if (fclose(h) || fclose(c) || (m && fclose(m))) {
        perror("gen_api");
        return 1;
    }
    return 0;
}
