/*
 * test_text_ir.c - the text IR printer and parser, and DOT output.
 *
 * Graphs are built with the graph API and checked for: exact
 * print -> parse -> print round trips; the parsed graph equals the
 * original field by field (an independent walk in canonical order); known
 * text for a small graph, written by hand; every parse error with its
 * "line L, col C" place; every prefix of a valid text (error or success,
 * never a crash; the buffer is exactly the prefix so ASan sees overreads);
 * DOT labels and call sites.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "graph/text.h"
#include "graph/graph_impl.h"

/* ---- building graphs ---- */

static graph_type ty(graph_dtype dt, int nd, const int64_t *dims)
{
    graph_type t = {dt, nd, {0}};
    for (int i = 0; i < nd; i++)
        t.dim[i] = dims[i];
    return t;
}
#define TY(dt, ...) \
    ty(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})

/* Marks dim d of value v dynamic (symbol s). */
static void dyn(graph *g, int32_t v, int d, int s)
{
    g->values[v].dyn |= 1u << d;
    g->values[v].sym[d] = (int8_t)s;
}

static int32_t addv(graph *g, graph_value_kind k, graph_type t, const char *name)
{
    return graph_add_value(g, k, &t, name);
}

static int32_t node1(graph *g, graph_op op, const int32_t *in, int nin,
                     const void *attrs)
{
    int32_t out = -1;
    int32_t n = graph_add_node(g, op, in, nin, attrs, &out, 1);
    CHECK_MSG(n >= 0, "add %s: %s", graph_ops[op].name, graph_error(g));
    return out;
}

static int32_t param(graph *g, graph_value_kind k, graph_type t,
                     const char *name, uint64_t seed)
{
    int32_t v = graph_add_value(g, k, &t, name);
    int64_t n = graph_type_numel(&t);
    size_t nb = (size_t)n * graph_dtype_size(t.dtype);
    unsigned char *buf = malloc(nb + 1);
    for (size_t i = 0; i < nb; i++) /* any bytes, but valid for the dtype */
        buf[i] = (unsigned char)(seed * 31 + i * 7);
    if (t.dtype == GRAPH_F32)
        check_fill((float *)buf, n, seed, -2, 2);
    if (t.dtype == GRAPH_BOOL)
        for (size_t i = 0; i < nb; i++)
            buf[i] &= 1;
    CHECK(graph_set_data(g, v, buf, nb) == TG_OK);
    free(buf);
    return v;
}

/* Params and consts of every dtype: named, unnamed, duplicate and odd
 * names, inlined and elided, a NaN payload; ids of w0, b0, c0 in out. */
static void add_sources(graph *g, int32_t *out)
{
    int32_t w0 = param(g, GRAPH_VALUE_PARAM, TY(GRAPH_F32, 16, 8), "fc1.weight", 1);
    int32_t b0 = param(g, GRAPH_VALUE_PARAM, TY(GRAPH_F32, 16), "fc1 bias", 2);
    int32_t d1 = param(g, GRAPH_VALUE_PARAM, TY(GRAPH_F32, 2), "dup", 3);
    int32_t d2 = param(g, GRAPH_VALUE_PARAM, TY(GRAPH_F32, 2), "dup", 4);
    int32_t c0 = addv(g, GRAPH_VALUE_CONST, TY(GRAPH_F32, 7), NULL);
    uint32_t qnan = 0x7fc00001u; /* a NaN with a payload */
    float c0d[7] = {NAN, -0.0f, INFINITY, 1e-45f, 3.40282347e38f, -1.5f, 0};
    memcpy(&c0d[6], &qnan, 4);
    graph_set_data(g, c0, c0d, sizeof c0d);
    int32_t c1 = addv(g, GRAPH_VALUE_CONST, TY(GRAPH_I64, 2), "c1");
    graph_set_data(g, c1, (int64_t[]){INT64_MIN, INT64_MAX}, 16);
    param(g, GRAPH_VALUE_CONST, TY(GRAPH_I32, 3), "ints", 5);
    param(g, GRAPH_VALUE_CONST, TY(GRAPH_BOOL, 2, 2), NULL, 6);
    param(g, GRAPH_VALUE_CONST, TY(GRAPH_F32), "scalar", 7);
    param(g, GRAPH_VALUE_CONST, TY(GRAPH_I32, 0, 5), "q\"uote\\\n\xc3\xa9", 8);
    int32_t el = addv(g, GRAPH_VALUE_PARAM, TY(GRAPH_F32, 1000), "lazy");
    g->values[el].hash = 0x0123456789abcdefu; /* elided: no data */
    (void)d1, (void)d2;
    out[0] = w0;
    out[1] = b0;
    out[2] = c0;
}

/*
 * A graph with every feature: dynamic dims, params/consts of every dtype
 * (inlined and elided, unnamed, duplicate and odd names), matmul/add/relu,
 * attributes of every kind (f32 incl. -inf, i64, ints, dtype), split with
 * two outputs, variadic concat, a specialized fused node with two
 * provenance refs, guards of each kind, frames, outputs with odd names.
 */
static graph *build_big(void)
{
    graph *g = graph_new("mlp");
    int sB = graph_add_symbol(g, "B", 4);
    int sT = graph_add_symbol(g, "time steps", 3);
    graph_frame fr[3] = {
        {0x4011a2, "mlp_forward", 0x22, "/work/src/model.c", 31},
        {0x401300, "main", 0x10, NULL, 0},
        {0x7f0000001234, NULL, 0x5, NULL, 12},
    };
    int32_t p0 = graph_add_prov(g, "/work/src/model.c", 31, "mlp_forward", fr, 3);
    int32_t p1 = graph_add_prov(g, "/work/src/model.c", 32, "mlp_forward", fr + 1, 1);
    int32_t p2 = graph_add_prov(g, "/work/src/odd \"dir\"/m\\x.c", 40, "f\ng", NULL, 0);
    int32_t x = addv(g, GRAPH_VALUE_INPUT, TY(GRAPH_F32, 4, 8), "x");
    int32_t t = addv(g, GRAPH_VALUE_INPUT, TY(GRAPH_I64, 3, 2), "tok ids");
    graph_add_input(g, x);
    graph_add_input(g, t);
    dyn(g, x, 0, sB);
    dyn(g, t, 0, sT);
    int32_t src[3];
    add_sources(g, src);
    int32_t w0 = src[0], b0 = src[1], c0 = src[2];

    graph_matmul_attrs mm = {0, 1};
    int32_t h = node1(g, GRAPH_OP_matmul, (int32_t[]){x, w0}, 2, &mm);
    graph_node_add_prov(g, g->nnodes - 1, p0);
    int32_t h2 = node1(g, GRAPH_OP_add, (int32_t[]){h, b0}, 2, NULL);
    graph_node_add_prov(g, g->nnodes - 1, p1);
    int32_t h3 = node1(g, GRAPH_OP_relu, &h2, 1, NULL);
    graph_leaky_relu_attrs lr = {0.2f};
    int32_t h4 = node1(g, GRAPH_OP_leaky_relu, &h3, 1, &lr);
    graph_clip_attrs cl = {0.0f, 6.0f};
    int32_t h5 = node1(g, GRAPH_OP_clip, &h4, 1, &cl);
    graph_split_attrs sp = {1, TG_INTS(10, 6)};
    int32_t s[2];
    graph_add_node(g, GRAPH_OP_split, &h5, 1, &sp, s, 2);
    graph_node_add_prov(g, g->nnodes - 1, p0);
    graph_concat_attrs ca = {1};
    int32_t cc = node1(g, GRAPH_OP_concat, (int32_t[]){s[1], s[1], s[1]}, 3, &ca);
    graph_pad_attrs pa = {TG_INTS(0, 1, 0, 1), -INFINITY};
    int32_t pd = node1(g, GRAPH_OP_pad, &cc, 1, &pa);
    graph_cast_attrs cs = {GRAPH_I64};
    int32_t ct = node1(g, GRAPH_OP_cast, &pd, 1, &cs);
    graph_softmax_attrs sm = {0};
    int32_t so = node1(g, GRAPH_OP_softmax, &s[0], 1, &sm);
    int32_t fu = node1(g, GRAPH_OP_add, (int32_t[]){so, so}, 2, NULL);
    graph_node_add_prov(g, g->nnodes - 1, p1);
    graph_node_add_prov(g, g->nnodes - 1, p2);
    g->nodes[g->nnodes - 1].flags |= GRAPH_NODE_SPECIALIZED;
    graph_concat_attrs c0a = {0};
    int32_t xx = node1(g, GRAPH_OP_concat, (int32_t[]){x, x}, 2, &c0a);
    int32_t cl2 = node1(g, GRAPH_OP_clip, &c0, 1, &(graph_clip_attrs){-INFINITY, INFINITY});
    int32_t dyns[] = {h, h2, h3, h4, h5, s[0], s[1], cc, pd, ct, so, fu, xx};
    for (size_t i = 0; i < sizeof dyns / sizeof *dyns; i++)
        dyn(g, dyns[i], 0, sB); /* xx's dim 0 is 8: written B:8 */
    g->values[xx].name = graph_intern(g, "x2", -1);

    graph_guard gd1 = {s[0], GRAPH_GUARD_DECISION, GRAPH_GUARD_STRICT, 0, 1.0, 0, p0};
    graph_guard gd2 = {c0, GRAPH_GUARD_VALUE, GRAPH_GUARD_WARN, 5, -1.5, 0, p2};
    graph_guard gd3 = {x, GRAPH_GUARD_BUFFER, GRAPH_GUARD_OFF, -1, 0, 0xfeedfacecafebeefu, -1};
    graph_guard gd4 = {h, GRAPH_GUARD_VALUE, GRAPH_GUARD_STRICT, 3, 0.1, 0, p1};
    graph_add_guard(g, &gd1);
    graph_add_guard(g, &gd2);
    graph_add_guard(g, &gd3);
    graph_add_guard(g, &gd4); /* after gd1 although h is defined first */
    graph_add_output(g, fu, "y");
    graph_add_output(g, ct, "aux out");
    graph_add_output(g, xx, "x2");
    graph_add_output(g, cl2, "c");
    CHECK_MSG(graph_verify(g, 1) == TG_OK, "big graph verifies: %s", graph_error(g));
    return g;
}

/* ---- comparing graphs ---- */

static int str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/*
 * Canonical position of each value of g (the order the text is written
 * in): signature inputs, other sources by id, live nodes' outputs.
 */
static int32_t *canonical(const graph *g, int32_t *count)
{
    int32_t *pos = malloc(sizeof *pos * ((size_t)g->nvalues + 1)), k = 0;
    for (int32_t v = 0; v < g->nvalues; v++)
        pos[v] = -1;
    for (int32_t i = 0; i < g->ninputs; i++)
        pos[g->inputs[i]] = k++;
    for (int32_t v = 0; v < g->nvalues; v++)
        if (g->values[v].kind != GRAPH_VALUE_INTER && pos[v] < 0)
            pos[v] = k++;
    for (int32_t i = 0; i < g->nnodes; i++)
        for (int j = 0; !(g->nodes[i].flags & GRAPH_NODE_DEAD) && j < g->nodes[i].nout; j++)
            pos[g->nodes[i].out[j]] = k++;
    *count = k;
    return pos;
}

static void cmp_values(const graph *a, const graph *b, const int32_t *map,
                       const int32_t *nmap, int inlined_max)
{
    for (int32_t v = 0; v < a->nvalues; v++) {
        if (map[v] < 0)
            continue;
        const graph_value *x = &a->values[v], *y = &b->values[map[v]];
        int same = x->type.dtype == y->type.dtype && x->type.ndim == y->type.ndim &&
                   x->kind == y->kind && x->dyn == y->dyn && str_eq(x->name, y->name);
        for (int d = 0; same && d < x->type.ndim; d++)
            same = x->type.dim[d] == y->type.dim[d] &&
                   (!(x->dyn >> d & 1) || x->sym[d] == y->sym[d]);
        CHECK_MSG(same, "value %d: type, kind, dyn and name survive", v);
        if (x->kind == GRAPH_VALUE_INTER)
            CHECK_MSG(y->node == nmap[x->node] && y->out_index == x->out_index,
                      "value %d: producer", v);
        if (x->kind != GRAPH_VALUE_PARAM && x->kind != GRAPH_VALUE_CONST)
            continue;
        if (x->data && graph_type_numel(&x->type) <= inlined_max)
            CHECK_MSG(y->data && !memcmp(x->data, y->data, graph_value_nbytes(x)),
                      "value %d: data survives", v);
        else
            CHECK_MSG(!y->data, "value %d: data stays elided", v);
        CHECK_MSG(x->hash == y->hash, "value %d: hash %llx vs %llx", v,
                  (unsigned long long)x->hash, (unsigned long long)y->hash);
    }
}

static void cmp_attrs(const graph_node *x, const graph_node *y, int32_t i)
{
    const graph_op_info *info = &graph_ops[x->op];
    const graph_attr_desc *d = info->nattrs ? info->attr_descs() : NULL;
    for (int k = 0; k < info->nattrs; k++) {
        const char *p = (const char *)tg_node_attrs(x) + d[k].offset;
        const char *q = (const char *)tg_node_attrs(y) + d[k].offset;
        size_t n = d[k].kind == GRAPH_ATTR_I64 ? 8 : d[k].kind == GRAPH_ATTR_F32 ? 4
                   : d[k].kind == GRAPH_ATTR_DTYPE ? sizeof(graph_dtype)
                      : d[k].kind == GRAPH_ATTR_STR ? sizeof(graph_str) : 0;
        if (d[k].kind == GRAPH_ATTR_INTS) {
            const graph_ints *u = (const void *)p, *w = (const void *)q;
            CHECK_MSG(u->n == w->n && !memcmp(u->v, w->v, sizeof(int64_t) * (size_t)u->n),
                      "node %d attr %s", i, d[k].name);
        } else {
            CHECK_MSG(!memcmp(p, q, n), "node %d attr %s", i, d[k].name);
        }
    }
}

static void cmp_nodes(const graph *a, const graph *b, const int32_t *map,
                      const int32_t *nmap, int with_prov)
{
    for (int32_t i = 0; i < a->nnodes; i++) {
        if (nmap[i] < 0)
            continue;
        const graph_node *x = &a->nodes[i], *y = &b->nodes[nmap[i]];
        int same = x->op == y->op && x->flags == y->flags && x->nin == y->nin &&
                   x->nout == y->nout && (x->nprov == y->nprov || !with_prov) &&
                   (with_prov || y->nprov == 0);
        for (int k = 0; same && k < x->nin; k++)
            same = map[x->in[k]] == y->in[k];
        for (int k = 0; same && k < x->nout; k++)
            same = map[x->out[k]] == y->out[k];
        for (int k = 0; same && with_prov && k < x->nprov; k++)
            same = x->prov[k] == y->prov[k];
        CHECK_MSG(same, "node %d (%s) survives", i, graph_ops[x->op].name);
        if (same)
            cmp_attrs(x, y, i);
    }
}

static void cmp_provs(const graph *a, const graph *b)
{
    CHECK(a->nprovs == b->nprovs);
    for (int32_t i = 0; i < a->nprovs && i < b->nprovs; i++) {
        const graph_prov *x = &a->provs[i], *y = &b->provs[i];
        int same = str_eq(x->file, y->file) && str_eq(x->func, y->func) &&
                   x->line == y->line && x->nframes == y->nframes;
        for (int k = 0; same && k < x->nframes; k++) {
            const graph_frame *f = &a->frames[x->frame0 + k];
            const graph_frame *h = &b->frames[y->frame0 + k];
            same = f->ip == h->ip && f->offset == h->offset && f->line == h->line &&
                   str_eq(f->func, h->func) && str_eq(f->file, h->file);
        }
        CHECK_MSG(same, "provenance %d survives", i);
    }
}

/* b (parsed from a's text) equals a, up to canonical renumbering. */
static void cmp_graphs(const graph *a, const graph *b, int inlined_max, int with_prov)
{
    int32_t count, k = 0;
    int32_t *map = canonical(a, &count);
    int32_t *nmap = malloc(sizeof *nmap * ((size_t)a->nnodes + 1));
    for (int32_t i = 0; i < a->nnodes; i++)
        nmap[i] = a->nodes[i].flags & GRAPH_NODE_DEAD ? -1 : k++;
    CHECK(str_eq(a->name, b->name));
    CHECK_MSG(b->nvalues == count && b->nnodes == k, "counts %d/%d values, %d/%d nodes",
              b->nvalues, count, b->nnodes, k);
    if (b->nvalues == count && b->nnodes == k) {
        cmp_values(a, b, map, nmap, inlined_max);
        cmp_nodes(a, b, map, nmap, with_prov);
    }
    CHECK(a->ninputs == b->ninputs && a->noutputs == b->noutputs);
    for (int32_t i = 0; i < a->ninputs && i < b->ninputs; i++)
        CHECK(map[a->inputs[i]] == b->inputs[i]);
    for (int32_t i = 0; i < a->noutputs && i < b->noutputs; i++)
        CHECK(map[a->outputs[i].value] == b->outputs[i].value &&
              str_eq(a->outputs[i].name, b->outputs[i].name));
    if (with_prov)
        cmp_provs(a, b);
    else
        CHECK(b->nprovs == 0);
    CHECK(a->nguards == b->nguards);
    for (int32_t i = 0; i < a->nguards && i < b->nguards; i++) {
        const graph_guard *x = &a->guards[i], *y = &b->guards[i];
        CHECK_MSG(map[x->value] == y->value && x->kind == y->kind &&
                  x->policy == y->policy && x->index == y->index &&
                  (x->kind == GRAPH_GUARD_BUFFER ? x->hash == y->hash
                                                 : !memcmp(&x->expect, &y->expect, 8)) &&
                  (with_prov ? x->prov == y->prov : y->prov == -1),
                  "guard %d survives", i);
    }
    CHECK(a->nsyms == b->nsyms);
    for (int32_t i = 0; i < a->nsyms && i < b->nsyms; i++)
        CHECK(str_eq(a->syms[i].name, b->syms[i].name) &&
              a->syms[i].traced == b->syms[i].traced);
    free(map);
    free(nmap);
}

/* Parses text (exactly len bytes in their own buffer, for ASan). */
static graph *parse(const char *text, size_t len, char *err, size_t errlen)
{
    char *buf = malloc(len ? len : 1);
    memcpy(buf, text, len);
    graph *g = graph_parse(buf, len, err, errlen);
    free(buf);
    return g;
}

/* print -> parse -> compare -> print again, byte for byte. */
static void roundtrip(const graph *g, const graph_print_opts *o, int inlined_max)
{
    size_t n1 = 0, n2 = 0;
    char err[512];
    char *t1 = graph_print_str(g, o, &n1);
    CHECK(t1 != NULL);
    if (!t1)
        return;
    graph *h = parse(t1, n1, err, sizeof err);
    CHECK_MSG(h != NULL, "parse of printed text: %s\n%s", err, t1);
    if (h) {
        cmp_graphs(g, h, inlined_max, !o || o->provenance);
        char *t2 = graph_print_str(h, o, &n2);
        CHECK_MSG(t2 && n1 == n2 && !memcmp(t1, t2, n1), "print(parse(print(g))) == "
                  "print(g):\n%s\n----\n%s", t1, t2 ? t2 : "(null)");
        free(t2);
        graph_free(h);
    }
    free(t1);
}

static void test_roundtrip(void)
{
    graph *g = build_big();
    graph_print_opts o = GRAPH_PRINT_DEFAULTS;
    roundtrip(g, NULL, 16);
    o.inline_all = 1;
    roundtrip(g, &o, 1 << 30);
    o.inline_all = 0;
    o.inline_max = 0;
    o.provenance = 0;
    o.comments = 0;
    roundtrip(g, &o, 0);
    /* A clone, with a dead node and values added out of canonical order. */
    graph *c = graph_clone(g);
    int32_t extra = addv(c, GRAPH_VALUE_CONST, TY(GRAPH_F32, 2), "late");
    graph_set_data(c, extra, (float[]){1, 2}, 8);
    node1(c, GRAPH_OP_relu, &extra, 1, NULL);
    c->nodes[3].flags |= GRAPH_NODE_DEAD; /* relu: its output is unused */
    int32_t r = node1(c, GRAPH_OP_neg, &c->nodes[3].in[0], 1, NULL);
    c->nodes[4].in[0] = r; /* leaky_relu now reads neg */
    CHECK_MSG(graph_verify(c, 1) != TG_OK, "SSA order broken on purpose");
    c->nodes[4].in[0] = c->nodes[3].in[0];
    CHECK_MSG(graph_verify(c, 1) == TG_OK, "clone verifies: %s", graph_error(c));
    roundtrip(c, NULL, 16);
    graph_free(c);
    graph_free(g);
}

/* ---- known text ---- */

static const char small_text[] =
    "graph small(%x: f32[2,3]) -> (y: f32[2,3]) {\n"
    "  %w: f32[3] = const [1, 2.5, -3]\n"
    "  %2: f32[2,3] = add(%x, %w) !p0  # small.c:7 f\n"
    "  %3: f32[2,3] = relu(%2) !p0 !p1  # small.c:7 f\n"
    "  guard decision %3[1] == 0 strict !p1  # small.c:8 f\n"
    "  return y = %3\n"
    "}\n"
    "provenance {\n"
    "  p0 = \"/src/small.c\":7 \"f\"\n"
    "  p1 = \"/src/small.c\":8 \"f\" [0x10 \"f\"+0x4 \"/src/small.c\":8, 0x20 ?+0x0]\n"
    "}\n";

static void test_known_text(void)
{
    graph *g = graph_new("small");
    int32_t x = addv(g, GRAPH_VALUE_INPUT, TY(GRAPH_F32, 2, 3), "x");
    graph_add_input(g, x);
    int32_t w = addv(g, GRAPH_VALUE_CONST, TY(GRAPH_F32, 3), "w");
    graph_set_data(g, w, (float[]){1, 2.5f, -3}, 12);
    graph_frame fr[2] = {{0x10, "f", 4, "/src/small.c", 8}, {0x20, NULL, 0, NULL, 0}};
    int32_t p0 = graph_add_prov(g, "/src/small.c", 7, "f", NULL, 0);
    int32_t p1 = graph_add_prov(g, "/src/small.c", 8, "f", fr, 2);
    int32_t a = node1(g, GRAPH_OP_add, (int32_t[]){x, w}, 2, NULL);
    graph_node_add_prov(g, 0, p0);
    int32_t r = node1(g, GRAPH_OP_relu, &a, 1, NULL);
    graph_node_add_prov(g, 1, p0);
    graph_node_add_prov(g, 1, p1);
    graph_add_guard(g, &(graph_guard){r, GRAPH_GUARD_DECISION, GRAPH_GUARD_STRICT, 1, 0, 0, p1});
    graph_add_output(g, r, "y");
    char *t = graph_print_str(g, NULL, NULL);
    CHECK_MSG(t && !strcmp(t, small_text), "small graph prints as written by hand:\n%s", t ? t : "(null)");
    free(t);
    graph_free(g);

    char err[256];
    graph *h = parse(small_text, strlen(small_text), err, sizeof err);
    CHECK_MSG(h != NULL, "small text parses: %s", err);
    if (h) {
        CHECK(h->nvalues == 4 && h->nnodes == 2 && h->ninputs == 1 && h->noutputs == 1);
        CHECK(h->nodes[0].op == GRAPH_OP_add && h->nodes[0].in[0] == 0 && h->nodes[0].in[1] == 1);
        CHECK(h->nodes[1].op == GRAPH_OP_relu && h->nodes[1].nprov == 2 &&
              h->nodes[1].prov[0] == 0 && h->nodes[1].prov[1] == 1);
        const float *d = h->values[1].data;
        CHECK(d && d[0] == 1 && d[1] == 2.5f && d[2] == -3);
        CHECK(h->provs[1].nframes == 2 && h->frames[h->provs[1].frame0].ip == 0x10 &&
              h->frames[h->provs[1].frame0 + 1].func == NULL);
        CHECK(h->nguards == 1 && h->guards[0].value == 3 && h->guards[0].index == 1 &&
              h->guards[0].prov == 1);
    }
    graph_free(h);
}

/* The example at the top of graph/text.h, as the printer writes it. */
static const char doc_text[] =
    "graph mlp(%x: f32[B,784]) -> (y: f32[B,10], \"aux out\": f32[B,5]) {\n"
    "  sym B = 4\n"
    "  %fc1.weight: f32[512,784] = param elided 0x3f2a0c11d2e3b7a9\n"
    "  %2 \"fc1 bias\": f32[512] = param elided 0x0d5e2f1a77c3b001\n"
    "  %fc2.weight: f32[20,512] = param elided 0x9c1b44d0a5e6f102\n"
    "  %c: f32[3] = const [1, 2.5, -inf]\n"
    "  %5: f32[B,512] = matmul(%x, %fc1.weight) {transpose_b=1} !p0  # model.c:31 mlp_forward\n"
    "  %6: f32[B,512] = add(%5, %2) !p0  # model.c:31 mlp_forward\n"
    "  %7: f32[B,512] = clip(%6) {min=0, max=6} !p1  # model.c:32 mlp_forward\n"
    "  %8: f32[B,20] = matmul(%7, %fc2.weight) {transpose_b=1} !p2  # model.c:33 mlp_forward\n"
    "  %9: f32[B,10], %10: f32[B,10] = split(%8) {axis=1, sizes=[10,10]} !p2  # model.c:33 mlp_forward\n"
    "  guard decision %9[0] == 1 strict !p3  # model.c:40 mlp_forward\n"
    "  %11: f32[B,10] = leaky_relu(%10) {alpha=0.2} !p1 !p2  # model.c:32 mlp_forward\n"
    "  %12: f32[B,5], %13: f32[B,5] = split(%11) {axis=1, sizes=[5,5]} !p2  # model.c:33 mlp_forward\n"
    "  return y = %9\n"
    "  return \"aux out\" = %12\n"
    "}\n"
    "provenance {\n"
    "  p0 = \"/home/me/model.c\":31 \"mlp_forward\" [0x4011a2 \"mlp_forward\"+0x22 \"/home/me/model.c\":31, 0x401300 \"main\"+0x10 \"/home/me/main.c\":9]\n"
    "  p1 = \"/home/me/model.c\":32 \"mlp_forward\"\n"
    "  p2 = \"/home/me/model.c\":33 \"mlp_forward\"\n"
    "  p3 = \"/home/me/model.c\":40 \"mlp_forward\" [0x401288 \"mlp_forward\"+0xa8 \"/home/me/model.c\":40, 0x7f3a0012c0 ?+0x0]\n"
    "}\n";

static void test_doc_example(void)
{
    char err[256];
    graph *h = parse(doc_text, strlen(doc_text), err, sizeof err);
    CHECK_MSG(h != NULL, "the text.h example parses: %s", err);
    char *t = h ? graph_print_str(h, NULL, NULL) : NULL;
    CHECK_MSG(t && !strcmp(t, doc_text), "the text.h example prints back:\n%s", t ? t : "(null)");
    if (h)
        CHECK(h->nnodes == 7 && h->nodes[5].nprov == 2 && h->nsyms == 1 &&
              !strcmp(h->values[2].name, "fc1 bias") && !h->values[2].data &&
              h->values[2].hash == 0x0d5e2f1a77c3b001u);
    free(t);
    graph_free(h);
}

/* Hand-written text: any label names, attributes in any order, comments. */
static const char free_text[] =
    "# a comment\n"
    "graph \"t t\"(%in \"the input\": f32[N, 4], %k: i64[]) ->\n"
    "      (out: f32[N,4], \"second\": f32[N,2], third: f32[N:6,2]) {\n"
    "  sym N = 3   # batch\n"
    "  %bias: f32[4] = param [0.5, -1, 2e0, nan]\n"
    "  %big: f32[100] = param elided 0xABC\n"
    "  %nodata: f32[2] = const\n"
    "  %a: f32[N,4] = add(%in, %bias) !site\n"
    "  %b: f32[N,4] = clip(%a) {max=6, min=-inf} specialized !site !other\n"
    "  %s1: f32[N,2], %s2: f32[N,2] = split(%b) {sizes=[2,2], axis=1}\n"
    "  guard value %b[0] == 2.5 warn\n"
    "  guard size %in[0] == 3 strict !site\n"
    "  %j: f32[N:6,2] = concat(%s1, %s2) {}\n"
    "  return out = %b\n"
    "  return \"second\" = %s2\n"
    "  return third = %j\n"
    "}\n"
    "provenance {\n"
    "  site = \"a.c\":1 \"main\"\n"
    "  other = \"b.c\":2 \"g\" []\n"
    "}";

static void test_free_text(void)
{
    char err[256];
    graph *h = parse(free_text, strlen(free_text), err, sizeof err);
    CHECK_MSG(h != NULL, "free text parses: %s", err);
    if (!h)
        return;
    CHECK(!strcmp(h->name, "t t") && h->nsyms == 1 && h->syms[0].traced == 3);
    const graph_value *in = &h->values[0];
    CHECK(!strcmp(in->name, "the input") && in->type.dim[0] == 3 && in->dyn == 1 &&
          in->sym[0] == 0 && in->type.dim[1] == 4);
    CHECK(h->values[1].type.ndim == 0 && h->values[1].type.dtype == GRAPH_I64 &&
          !strcmp(h->values[1].name, "k"));
    const float *bias = h->values[2].data;
    CHECK(bias && bias[0] == 0.5f && bias[1] == -1 && bias[2] == 2 && isnan(bias[3]));
    CHECK(!h->values[3].data && h->values[3].hash == 0xabc);
    CHECK(!h->values[4].data && h->values[4].hash == 0);
    const graph_node *clip = &h->nodes[1];
    CHECK(clip->op == GRAPH_OP_clip && clip->attrs->clip.max == 6 &&
          isinf(clip->attrs->clip.min) && clip->attrs->clip.min < 0 &&
          clip->flags == GRAPH_NODE_SPECIALIZED && clip->nprov == 2 &&
          clip->prov[0] == 0 && clip->prov[1] == 1);
    const graph_node *sp = &h->nodes[2];
    CHECK(sp->op == GRAPH_OP_split && sp->nout == 2 && sp->attrs->split.axis == 1 &&
          sp->attrs->split.sizes.n == 2 && sp->attrs->split.sizes.v[1] == 2);
    CHECK(h->nodes[3].op == GRAPH_OP_concat && h->nodes[3].nin == 2 &&
          h->values[h->nodes[3].out[0]].type.dim[0] == 6 &&
          h->values[h->nodes[3].out[0]].dyn == 1);
    CHECK(h->nguards == 2 && h->guards[0].kind == GRAPH_GUARD_VALUE &&
          h->guards[0].expect == 2.5 && h->guards[0].policy == GRAPH_GUARD_WARN &&
          h->guards[0].prov == -1);
    CHECK(h->guards[1].kind == GRAPH_GUARD_SIZE && h->guards[1].value == 0 &&
          h->guards[1].index == 0 && h->guards[1].expect == 3 && h->guards[1].prov == 0);
    CHECK(h->noutputs == 3 && !strcmp(h->outputs[1].name, "second"));
    CHECK(h->nprovs == 2 && !strcmp(h->provs[1].func, "g") && h->provs[1].nframes == 0);
    roundtrip(h, NULL, 16);
    graph_free(h);
}

/* ---- errors ---- */

#define H "graph g(%x: f32[2]) -> (y: f32[2]) {\n"
#define R "  return y = %x\n}\n"

static const struct {
    const char *text, *want;
} bad[] = {
    {"", "line 1, col 1: expected 'graph', got end of input"},
    {"graf g() -> () {}", "line 1, col 1: expected 'graph', got 'graf'"},
    {"graph g(%x: f32[2] -> () {}", "line 1, col 20: expected ')' after inputs, got '->'"},
    {"graph g(%x: f32[2]) () {}", "line 1, col 21: expected '->' after inputs, got '('"},
    {"graph g() -> (y f32[2]) {}", "line 1, col 17: expected ':' after the output name"},
    {"graph g() -> (y: f32[2], y: f32[2]) {}", "line 1, col 26: output 'y' is listed twice"},
    {"graph g() -> () }", "line 1, col 17: expected '{' to open the graph body, got '}'"},
    {H "  %1: f32[2] = frob(%x)\n" R, "line 2, col 16: unknown op 'frob'"},
    {H "  %1: f32[2] = relu(%z)\n" R, "line 2, col 21: unknown value %z"},
    {H "  %x: f32[2] = relu(%x)\n" R,
     "line 2, col 3: redefinition of %x (first defined at line 1, col 9)"},
    {H "  %1: f32[1], %1: f32[1] = split(%x) {sizes=[1,1]}\n" R,
     "line 2, col 15: redefinition of %1 (first defined at line 2, col 3)"},
    {H "  %1: f32[3] = relu(%x)\n" R,
     "line 2, col 7: type mismatch: %1 is written f32[3] but relu makes f32[2]"},
    {H "  %1: i64[2] = relu(%x)\n" R,
     "line 2, col 7: type mismatch: %1 is written i64[2] but relu makes f32[2]"},
    {H "  %1: f32[2] = matmul(%x, %x) {transpose_a=2}\n" R,
     "line 2, col 16: matmul: [2] x [2]: transpose_a and transpose_b must be 0 or 1"},
    {H "  %1: f32[2] = add(%x)\n" R, "line 2, col 16: add: [2]: takes 2 inputs, got 1"},
    {H "  %1: f32[2], %2: f32[2] = relu(%x)\n" R,
     "line 2, col 28: relu makes 1 output but 2 are written"},
    {H "  %1: f32[2] = relu(%x) {alpha=1}\n" R, "line 2, col 26: relu has no attribute 'alpha'"},
    {H "  %1: f32[2] = linear_ep(%x, %x) {post=[relu,frob]}\n" R,
     "line 2, col 46: expected an epilogue step (add, relu, gelu, sigmoid, tanh, silu, "
     "leaky_relu, clip, hardsigmoid, hardswish) or its code for attribute 'post', got 'frob'"},
    {H "  %1: f32[2] = leaky_relu(%x) {beta=1}\n" R,
     "line 2, col 32: leaky_relu has no attribute 'beta'"},
    {H "  %1: f32[2] = leaky_relu(%x) {alpha=[1]}\n" R,
     "line 2, col 38: expected a number, got '['"},
    {H "  %1: f32[2] = leaky_relu(%x) {alpha=1, alpha=2}\n" R,
     "line 2, col 41: attribute 'alpha' is given twice"},
    {H "  %1: f32[2] = leaky_relu(%x) {alpha 1}\n" R,
     "line 2, col 38: expected '=' after the attribute name, got '1'"},
    {H "  %1: f32[2] = leaky_relu(%x) {alpha=1 x}\n" R,
     "line 2, col 40: expected ',' between attributes, got 'x'"},
    {H "  %1: f32[2] = cast(%x) {to=f16}\n" R,
     "line 2, col 29: expected a dtype (f32, i64, i32 or bool) for attribute 'to', got 'f16'"},
    {H "  %1: f32[4] = concat(%x, %x) {axis=0.5}\n" R,
     "line 2, col 37: expected an integer, got '0.5'"},
    {H "  %1: f32[4] = concat(%x, %x) {axis=99999999999999999999}\n" R,
     "line 2, col 37: expected an integer, got '99999999999999999999'"},
    {H "  %1: f32[4] = concat(%x, %x) {axis=-9223372036854775809}\n" R,
     "line 2, col 37: integer out of range, got '-9223372036854775809'"},
    {H "  %1: f32[2] = leaky_relu(%x) {alpha=nan:0x1}\n" R,
     "line 2, col 38: nan:0x1 is not a NaN"},
    {H "  %1: f32[2] = leaky_relu(%x) {alpha=nan}\n" R,
     "line 2, col 16: leaky_relu: [2]: alpha must be finite, got nan"},
    {H "  %1: f32[2] = concat(%x) {axis=[0]}\n" R, "line 2, col 33: expected an integer, got '['"},
    {H "  %1: f32[2] = split(%x) {sizes=2}\n" R,
     "line 2, col 33: expected a list such as [1,2] for attribute 'sizes', got '2'"},
    {H "  %1: f32[2] = split(%x) {sizes=[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}\n" R,
     "line 2, col 66: attribute 'sizes' has more than 16 entries"},
    {"graph g(%x: f32[B]) -> () {\n}", "line 1, col 17: unknown symbol 'B'"},
    {"graph g() -> () {\n  sym B = 2\n  sym B = 3\n}", "line 3, col 7: symbol 'B' is declared twice"},
    {"graph g() -> () {\n  sym B = -2\n}", "line 2, col 11: size -2 is out of range"},
    {"graph g(%x: f32[1,1,1,1,1,1,1,1,1]) -> () {}", "line 1, col 33: more than 8 dims"},
    {"graph g(%x: f32[-1]) -> () {}", "line 1, col 17: dim -1 is out of range"},
    {"graph g(%x: f64[1]) -> () {}", "line 1, col 13: unknown dtype (f32, i64, i32 or bool), got 'f64'"},
    {"graph g(%x: f32[65536,65536,65536,65536]) -> () {}",
     "line 1, col 13: shape [65536,65536,65536,65536] is too large (at most 2^40 elements"},
    /* a 0 dim does not lift the cap: every dim and partial product stays bounded */
    {"graph g(%x: f32[0,2147483648,2147483648]) -> () {}",
     "line 1, col 13: shape [0,2147483648,2147483648] is too large"},
    {"graph g(%x: f32[2199023255553]) -> () {}", "line 1, col 17: dim 2199023255553 is out of range (0 to 2^40)"},
    {"graph g(%x: f32[2], %x: f32[2]) -> () {}",
     "line 1, col 21: redefinition of %x (first defined at line 1, col 9)"},
    {"graph g(%1x: f32[2]) -> () {}", "line 1, col 9: bad value name '%1x'"},
    {H "  %c: f32[3] = const [1, 2]\n" R, "line 2, col 27: too few elements: 2 of 3"},
    {H "  %c: f32[3] = const [1, 2, 3, 4]\n" R, "line 2, col 30: too many elements (want 3)"},
    {H "  %c: f32[3] = const [1, 2 3]\n" R, "line 2, col 28: expected ',' between elements, got '3'"},
    {H "  %c: bool[2] = const [1, 2]\n" R, "line 2, col 27: bool data must be 0 or 1"},
    {H "  %c: i32[1] = const [2147483648]\n" R, "line 2, col 23: 2147483648 does not fit in i32"},
    {H "  %c: f32[1] = const [x]\n" R, "line 2, col 23: expected a number, got 'x'"},
    {H "  %c: f32[1000000000] = const [1]\n" R,
     "line 2, col 31: 1000000000 elements cannot fit in the rest of the text"},
    {H "  %c: f32[1] = param elided abc\n" R,
     "line 2, col 29: expected the data's hash (0x...), got 'abc'"},
    {H "  %c: f32[1], %d: f32[1] = param\n" R,
     "line 2, col 28: a param defines exactly one value"},
    {H "  %c: f32[1] = input\n" R, "line 2, col 16: inputs belong in the graph's signature"},
    {H "  guard maybe %x[0] == 1 strict\n" R,
     "line 2, col 9: expected a guard kind (value, decision, buffer or size), got 'maybe'"},
    {H "  guard value %x[2] == 1 strict\n" R,
     "line 2, col 18: index 2 is out of range for %x (2 elements)"},
    {H "  guard value %x[0] == 1 always\n" R,
     "line 2, col 26: expected a guard policy (strict, warn or off), got 'always'"},
    {H "  guard value %x[0] = 1 strict\n" R,
     "line 2, col 21: expected '==' after the guarded value, got '='"},
    {H "  guard size %x[1] == 2 strict\n" R,
     "line 2, col 17: index 1 is out of range for %x (1 dims)"},
    {H "  guard size %x == 2 strict\n" R, "line 2, col 14: a size guard names its dim: %x[d]"},
    {H "  guard buffer %x == 1.5 off\n" R,
     "line 2, col 22: expected the buffer's hash (0x...), got '1.5'"},
    {H "  guard value %x[0] == 1 off !p0 !p1\n" R, "line 2, col 34: a guard has one provenance"},
    {H "}\n", "line 2, col 1: missing return for output 'y'"},
    {H "  return z = %x\n}\n", "line 2, col 3: return of 'z' where the signature lists 'y' next"},
    {H R "  return y = %x\n}\n", "line 4, col 3: expected end of input after the graph, got 'return'"},
    {"graph g(%x: f32[2]) -> () {\n  return y = %x\n}",
     "line 2, col 3: return of 'y', which the signature does not list"},
    {"graph g(%x: f32[2]) -> (y: f32[3]) {\n  return y = %x\n}",
     "line 2, col 14: output 'y' is declared f32[3] but the value is f32[2]"},
    {H "  %1: f32[2] = relu(%x) !p9\n" R "provenance {\n  p0 = \"a.c\":1 \"f\"\n}",
     "line 2, col 25: unknown provenance !p9"},
    {H R "provenance {\n  p0 = \"a.c\":1 \"f\"\n  p0 = \"a.c\":2 \"f\"\n}",
     "line 6, col 3: provenance p0 is defined twice"},
    {H R "provenance {\n  p0 = \"a.c\":1 \"f\" [0x1 \"f\"+0x2 \"g\"]\n}",
     "line 5, col 36: expected ':' after the file name, got ']'"},
    {H R "provenance {\n  p0 = \"a.c\":1 \"f\" [0x1 f+0x2]\n}",
     "line 5, col 25: expected a function name or '?', got 'f'"},
    {H R "provenance {\n  p0 = \"a.c\":99999999999 \"f\"\n}", "line 5, col 14: line number out of range"},
    {H R "provenance {\n  p0 = \"a.c:1 \"f\"\n}", "line 5, col 16: expected ':' after the file name, got 'f'"},
    {H R "provenance {\n  p0 = \"a.c\n}", "line 5, col 8: unterminated string"},
    {"graph \"a\\qb\"() -> () {}", "line 1, col 7: bad escape in string"},
    {"graph \"a\\x00b\"() -> () {}", "line 1, col 7: NUL (\\x00) in string"},
    {"graph g() -> () { $ }", "line 1, col 19: unexpected character"},
    {"graph g(% ) -> () {}", "line 1, col 9: expected a value name after '%'"},
    {H "  %1: f32[2] = relu(%x) !\n" R, "line 2, col 25: expected a provenance label after '!'"},
    {H "  %1: f32[2] relu(%x)\n" R, "line 2, col 14: expected '=' after the defined values, got 'relu'"},
    {H "  foo\n" R,
     "line 2, col 3: expected a statement (%value, sym, guard, return, next or '}'), got 'foo'"},
    {H "  %1: f32[2] = relu(%x %x)\n" R, "line 2, col 24: expected ',' between inputs, got '%x'"},
};

static void test_errors(void)
{
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        graph *g = parse(bad[i].text, strlen(bad[i].text), err, sizeof err);
        CHECK_MSG(!g && strstr(err, bad[i].want) == err,
                  "error %zu: got \"%s\", want \"%s\"", i, g ? "(success)" : err,
                  bad[i].want);
        graph_free(g);
    }
    /* A NULL error buffer, NULL text, and a tiny buffer are fine. */
    CHECK(graph_parse("graph", 5, NULL, 0) == NULL);
    CHECK(graph_parse(NULL, 10, err, sizeof err) == NULL);
    CHECK(graph_parse("x", 1, err, 8) == NULL && strlen(err) == 7);
    /* The text is not NUL-terminated: a valid text followed by garbage. */
    const char ok[] = "graph g() -> () {}XXXX";
    graph *g = graph_parse(ok, strlen(ok) - 4, err, sizeof err);
    CHECK_MSG(g != NULL, "parse stops at len: %s", err);
    graph_free(g);
}

/* Epilogue steps print by name (`post=[add,relu]`, not raw codes), and
 * both forms parse to the same codes (issue 33, item 8). */
static void test_post_names(void)
{
    const char *text = "graph t(%x: f32[2,3], %r: f32[2,4]) -> (y: f32[2,4]) {\n"
                       "  %w: f32[4,3] = const [1,2,3,4,5,6,7,8,9,10,11,12]\n"
                       "  %b: f32[4] = const [1,2,3,4]\n"
                       "  %y: f32[2,4] = linear_ep(%x, %w, %b, %r) {post=[1,2,8], clip_max=6}\n"
                       "  return y = %y\n}\n";
    char err[512] = "";
    graph *g = parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(g != NULL, "codes parse: %s", err);
    char *t = g ? graph_print_str(g, NULL, NULL) : NULL;
    CHECK_MSG(t && strstr(t, "{post=[add,relu,clip], clip_max=6}"), "printed by name: %s",
              t ? t : "");
    graph *h = t ? parse(t, strlen(t), err, sizeof err) : NULL;
    CHECK_MSG(h != NULL, "names parse back: %s", err);
    const graph_linear_ep_attrs *a = h ? tg_node_attrs(&h->nodes[0]) : NULL;
    CHECK(a && a->post.n == 3 && a->post.v[0] == GRAPH_POST_ADD &&
          a->post.v[1] == GRAPH_POST_RELU && a->post.v[2] == GRAPH_POST_CLIP);
    free(t);
    graph_free(h);
    graph_free(g);
}

/* Every prefix of a valid text: an error or a graph, never a crash. */
static void test_prefixes(void)
{
    graph *g = build_big();
    graph_print_opts o = GRAPH_PRINT_DEFAULTS;
    o.inline_all = 1;
    size_t n = 0;
    char *t = graph_print_str(g, &o, &n);
    char err[512];
    int ok = 0, failed = 0, bad_msg = 0;
    for (size_t len = 0; t && len <= n; len++) {
        graph *h = parse(t, len, err, sizeof err);
        if (h)
            ok++;
        else
            failed++;
        if (!h && strncmp(err, "line ", 5))
            bad_msg++;
        graph_free(h);
    }
    CHECK_MSG(ok >= 1 && failed >= 1 && bad_msg == 0, "prefixes: %d parsed, %d failed, "
              "%d without a place", ok, failed, bad_msg);
    free(t);
    graph_free(g);
}

/* ---- DOT ---- */

static void test_dot(void)
{
    graph *g = build_big();
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK(graph_write_dot(g, f) == TG_OK);
    fclose(f);
    static const char *const want[] = {
        "digraph \"mlp\" {",
        "label=\"matmul\\n%13: f32[B,16]\\nmodel.c:31 mlp_forward\"",
        "label=\"split\\n%18: f32[B,10]\\n%19: f32[B,6]\\nmodel.c:31 mlp_forward\"",
        "label=\"add\\n%24: f32[B,10]\\nmodel.c:32 mlp_forward\\nm\\\\x.c:40 f?g\"",
        "style=\"rounded,dashed\"",
        "[shape=ellipse, label=\"%x\\ninput f32[B,8]\"]",
        "[shape=cylinder, label=\"%fc1.weight\\nparam f32[16,8]\"]",
        "[shape=cylinder, label=\"%3\\nfc1 bias\\nparam f32[16]\"]",
        "[shape=note, label=\"%6\\nconst f32[7]\"]",
        "label=\"guard decision %18[0] == 1\\nstrict\\nmodel.c:31 mlp_forward\"",
        "label=\"return aux out\"",
        "v0 -> n0;",
        "n0 -> n1;",
        "n5 -> g0 [style=dashed];",
        "n10 -> o0;",
    };
    for (size_t i = 0; buf && i < sizeof want / sizeof *want; i++)
        CHECK_MSG(strstr(buf, want[i]) != NULL, "DOT has %s", want[i]);
    if (getenv("TG_TEXT_IR_DUMP")) { /* for people: the text and DOT of build_big */
        graph_print(g, stdout, NULL);
        fputs(buf, stdout);
    }
    free(buf);
    graph_free(g);
}

/* graph_text_utf8_len (public): what prints as text, by known answers. */
static void test_utf8_len(void)
{
    static const struct {
        const char *s;
        int len;
    } cases[] = {
        {"\xc3\xa9", 2},         /* U+00E9 */
        {"\xe2\x82\xac", 3},     /* U+20AC */
        {"\xf0\x9f\x98\x80", 4}, /* U+1F600 */
        {"\xc2\x85", 0},         /* U+0085, a C1 control */
        {"\xe2\x80\xae", 0},     /* U+202E, a bidi override */
        {"\xc0\xaf", 0},         /* an overlong '/' */
        {"\xed\xa0\x80", 0},     /* a surrogate */
        {"\xf4\x90\x80\x80", 0}, /* past U+10FFFF */
        {"\xa9", 0},             /* a stray continuation byte */
        {"\xc3", 0},             /* cut short */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECK_MSG(graph_text_utf8_len((const unsigned char *)cases[i].s) == cases[i].len,
                  "case %zu: %d, want %d", i,
                  graph_text_utf8_len((const unsigned char *)cases[i].s), cases[i].len);
}

int main(void)
{
    test_utf8_len();
    test_roundtrip();
    test_known_text();
    test_doc_example();
    test_free_text();
    test_errors();
    test_post_names();
    test_prefixes();
    test_dot();
    return check_done();
}
