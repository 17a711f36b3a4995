/*
 * gen_api.c - writes eager_ops.h and eager_ops.c from graph/ops.def: one
 * function eager_<op>_at() per op (TG_API: exported), plus the macro
 * eager_<op>() that passes the caller's site.  Run at build time; its
 * outputs are not edited.
 *
 *   gen_api OUT_HEADER OUT_SOURCE
 */
#include <stdio.h>
#include <string.h>

typedef struct attr {
    const char *name, *ctype;
} attr;

typedef struct opdesc {
    const char *name;
    int min_in, max_in, nout;
    int has_attrs;
    attr attrs[16];
} opdesc;

#define A_I64(n, d) {#n, "int64_t"},
#define A_F32(n, d) {#n, "float"},
#define A_INTS(n) {#n, "graph_ints"},
#define A_DTYPE(n, d) {#n, "graph_dtype"},
#define A_STR(n) {#n, "graph_str"},
static const opdesc ops[] = {
#define OP(name, v, mi, ma, no, p, dt, inf) {#name, mi, ma, no, 0, {{0}}},
#define OPA(name, v, mi, ma, no, p, dt, inf, attrs) {#name, mi, ma, no, 1, {attrs}},
#include "../graph/ops.def"
#undef OP
#undef OPA
};

static int nattrs(const opdesc *o)
{
    int n = 0;
    while (n < 16 && o->attrs[n].name)
        n++;
    return n;
}

/* Writes the parameter list after the site parameters. */
static void params(FILE *f, const opdesc *o)
{
    if (o->max_in < 0)
        fprintf(f, ", int n, eager_tensor *const *xs");
    else
        for (int i = 0; i < o->max_in; i++)
            fprintf(f, ", eager_tensor *x%d", i);
    for (int i = 0; i < nattrs(o); i++)
        fprintf(f, ", %s %s", o->attrs[i].ctype, o->attrs[i].name);
    if (o->nout < 0)
        fprintf(f, ", eager_tensor **out, int max_out");
}

static void prototype(FILE *f, const opdesc *o)
{
    fprintf(f, "%s eager_%s_at(EAGER_SITE_PARAMS", o->nout < 0 ? "int" : "eager_tensor *",
            o->name);
    params(f, o);
    fprintf(f, ")");
}

static void body(FILE *f, const opdesc *o)
{
    fprintf(f, "{\n    eager_site site = {site_file_, site_line_, site_func_};\n");
    if (o->max_in >= 0) {
        fprintf(f, "    eager_tensor *in[%d] = {", o->max_in);
        for (int i = 0; i < o->max_in; i++)
            fprintf(f, "%sx%d", i ? ", " : "", i);
        fprintf(f, "};\n");
    }
    const char *in = o->max_in < 0 ? "xs" : "in";
    char nin[32];
    snprintf(nin, sizeof nin, o->max_in < 0 ? "n" : "%d", o->max_in);
    if (o->max_in < 0)
        fprintf(f, "    if (n < 0 || (n > 0 && !xs)) {\n"
                   "        eager_set_error(TG_ERR_ARG, &site, \"%s: bad input list\");\n"
                   "        return %s;\n    }\n",
                o->name, o->nout < 0 ? "-1" : "NULL");
    const char *attrs = "NULL";
    if (o->has_attrs) {
        fprintf(f, "    graph_%s_attrs a;\n    memset(&a, 0, sizeof a);\n", o->name);
        for (int i = 0; i < nattrs(o); i++)
            fprintf(f, "    a.%s = %s;\n", o->attrs[i].name, o->attrs[i].name);
        attrs = "&a";
    }
    if (o->nout < 0) {
        fprintf(f, "    return eager_dispatch(GRAPH_OP_%s, %s, %s, %s, out, max_out, &site);\n}\n\n",
                o->name, in, nin, attrs);
    } else {
        fprintf(f, "    eager_tensor *out[%d];\n", o->nout);
        fprintf(f, "    return eager_dispatch(GRAPH_OP_%s, %s, %s, %s, out, %d, &site) < 0 ? NULL : out[0];\n}\n\n",
                o->name, in, nin, attrs, o->nout);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gen_api OUT_HEADER OUT_SOURCE\n");
        return 2;
    }
    FILE *h = fopen(argv[1], "w"), *c = fopen(argv[2], "w");
    if (!h || !c) {
        perror("gen_api");
        return 1;
    }
    size_t nops = sizeof ops / sizeof ops[0];
    /* eager.h includes this header at its end; included first, it
     * includes eager.h itself (which then skips it) so it compiles alone.
     * In the tree it lives in the build's gen/, installed beside eager.h. */
    fprintf(h, "/* eager_ops.h - generated from graph/ops.def by tools/gen_api.c; do not edit. */\n"
               "#ifndef TG_EAGER_OPS_H\n#define TG_EAGER_OPS_H\n\n"
               "#if defined(TG_IN_TREE)\n#include \"eager/eager.h\"\n#else\n#include \"eager.h\"\n#endif\n\n"
               "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    fprintf(c, "/* eager_ops.c - generated from graph/ops.def by tools/gen_api.c; do not edit. */\n"
               "#include <string.h>\n\n#include \"eager/eager.h\"\n\n");
    for (size_t i = 0; i < nops; i++) {
        fprintf(h, "TG_API ");
        prototype(h, &ops[i]);
        fprintf(h, ";\n#define eager_%s(...) eager_%s_at(EAGER_SITE, __VA_ARGS__)\n",
                ops[i].name, ops[i].name);
        prototype(c, &ops[i]);
        fprintf(c, "\n");
        body(c, &ops[i]);
    }
    fprintf(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    if (fclose(h) || fclose(c)) {
        perror("gen_api");
        return 1;
    }
    return 0;
}
