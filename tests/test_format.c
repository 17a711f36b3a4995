/*
 * test_format.c - the .tgraph format: traced MLP, conv and attention
 * graphs survive save -> load field by field and replay bit for bit;
 * dynamic dims and guards survive; a file written here by hand from the
 * spec in formats/tgraph.h loads (an independent check of the reader);
 * every truncation, every single-bit flip and random garbage are refused
 * without a crash or a leak; exact messages for a newer version and
 * unknown ops.  The checksum is checked against zstd's own XXH64.
 * The models are the shared ones of tests/models.h.
 *
 * With TG_FORMAT_CORPUS=dir set it also writes fuzzing seeds there.
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/tgraph.h"
#include "formats/tgraph_impl.h"
#include "models.h"
#include "tracer/trace.h"

static char err[1024];

/* A little-endian integer of k bytes (the test's own, per the spec). */
static uint64_t get_le(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ---- an independent graph comparison ---- */

static int str_eq(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int same_type(const graph_type *a, const graph_type *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dim[d] != b->dim[d])
            return 0;
    return 1;
}

static int same_value(const graph_value *a, const graph_value *b)
{
    if (!same_type(&a->type, &b->type) || a->kind != b->kind || a->dyn != b->dyn ||
        !str_eq(a->name, b->name) || a->node != b->node ||
        a->out_index != b->out_index || a->hash != b->hash || !a->data != !b->data)
        return 0;
    for (int d = 0; d < a->type.ndim; d++)
        if (a->sym[d] != b->sym[d])
            return 0;
    if (a->data) {
        size_t nb = (size_t)graph_type_numel(&a->type) * graph_dtype_size(a->type.dtype);
        if (memcmp(a->data, b->data, nb) != 0 || (uintptr_t)b->data % 64 != 0)
            return 0;
    }
    return 1;
}

/* Attributes compared field by field through the op's descriptors. */
static int same_attrs(const graph_node *a, const graph_node *b)
{
    const graph_op_info *info = &graph_ops[a->op];
    const char *x = graph_node_attrs(a), *y = graph_node_attrs(b);
    const graph_attr_desc *d = info->nattrs ? info->attr_descs() : NULL;
    for (int k = 0; k < info->nattrs; k++) {
        const char *fx = x + d[k].offset, *fy = y + d[k].offset;
        size_t size = d[k].kind == GRAPH_ATTR_I64 ? 8 : d[k].kind == GRAPH_ATTR_F32 ? 4
                      : d[k].kind == GRAPH_ATTR_DTYPE ? sizeof(graph_dtype) : 0;
        if (size && memcmp(fx, fy, size) != 0)
            return 0;
        if (d[k].kind == GRAPH_ATTR_INTS) {
            graph_ints ix, iy;
            memcpy(&ix, fx, sizeof ix);
            memcpy(&iy, fy, sizeof iy);
            if (ix.n != iy.n || memcmp(ix.v, iy.v, sizeof(int64_t) * (size_t)ix.n))
                return 0;
        }
    }
    return 1;
}

static int same_node(const graph_node *a, const graph_node *b)
{
    if (a->op != b->op || a->flags != b->flags || a->nin != b->nin ||
        a->nout != b->nout || a->nprov != b->nprov)
        return 0;
    for (int k = 0; k < a->nin; k++)
        if (a->in[k] != b->in[k])
            return 0;
    for (int k = 0; k < a->nout; k++)
        if (a->out[k] != b->out[k])
            return 0;
    for (int k = 0; k < a->nprov; k++)
        if (a->prov[k] != b->prov[k])
            return 0;
    return same_attrs(a, b);
}

static int same_rest(const graph *a, const graph *b)
{
    for (int32_t i = 0; i < a->ninputs; i++)
        if (a->inputs[i] != b->inputs[i])
            return 0;
    for (int32_t i = 0; i < a->noutputs; i++)
        if (a->outputs[i].value != b->outputs[i].value ||
            !str_eq(a->outputs[i].name, b->outputs[i].name))
            return 0;
    for (int32_t i = 0; i < a->nprovs; i++) {
        const graph_prov *p = &a->provs[i], *q = &b->provs[i];
        if (!str_eq(p->file, q->file) || p->line != q->line || !str_eq(p->func, q->func) ||
            p->frame0 != q->frame0 || p->nframes != q->nframes)
            return 0;
    }
    for (int32_t i = 0; i < a->nframes; i++) {
        const graph_frame *p = &a->frames[i], *q = &b->frames[i];
        if (p->ip != q->ip || !str_eq(p->func, q->func) || p->offset != q->offset ||
            !str_eq(p->file, q->file) || p->line != q->line)
            return 0;
    }
    for (int32_t i = 0; i < a->nguards; i++) {
        const graph_guard *p = &a->guards[i], *q = &b->guards[i];
        if (p->value != q->value || p->kind != q->kind || p->policy != q->policy ||
            p->index != q->index || memcmp(&p->expect, &q->expect, 8) || p->hash != q->hash ||
            p->prov != q->prov)
            return 0;
    }
    for (int32_t i = 0; i < a->nsyms; i++)
        if (!str_eq(a->syms[i].name, b->syms[i].name) || a->syms[i].traced != b->syms[i].traced)
            return 0;
    return 1;
}

/* Every field of a and b, reporting the first difference. */
static int check_same_graph(const graph *a, const graph *b, const char *what)
{
    int ok = a && b && str_eq(a->name, b->name) && a->nvalues == b->nvalues &&
             a->nnodes == b->nnodes && a->ninputs == b->ninputs &&
             a->noutputs == b->noutputs && a->nprovs == b->nprovs &&
             a->nframes == b->nframes && a->nguards == b->nguards && a->nsyms == b->nsyms;
    CHECK_MSG(ok, "%s: same counts", what);
    if (!ok)
        return 0;
    for (int32_t i = 0; i < a->nvalues; i++)
        if (!same_value(&a->values[i], &b->values[i])) {
            CHECK_MSG(0, "%s: value %d differs", what, i);
            return 0;
        }
    for (int32_t i = 0; i < a->nnodes; i++)
        if (!same_node(&a->nodes[i], &b->nodes[i])) {
            CHECK_MSG(0, "%s: node %d differs", what, i);
            return 0;
        }
    CHECK_MSG(same_rest(a, b), "%s: signature, provenance, guards, symbols equal", what);
    return 1;
}

/* ---- the shared models (tests/models.h) ---- */

static int same_bits(eager_tensor *a, eager_tensor *b)
{
    return a && b && eager_nbytes(a) == eager_nbytes(b) &&
           memcmp(eager_peek(a), eager_peek(b), eager_nbytes(a)) == 0;
}

/* The decompressed constants section of a file, found through the spec. */
static uint8_t *constants_of(const uint8_t *f, size_t *n)
{
    uint32_t ns = (uint32_t)get_le(f + 12, 4);
    for (uint32_t i = 0; i < ns; i++) {
        const uint8_t *e = f + 32 + 40 * i;
        if (get_le(e, 4) != 8)
            continue;
        size_t raw = (size_t)get_le(e + 24, 8);
        uint8_t *out = malloc(raw + 1);
        size_t got = ZSTD_decompress(out, raw + 1, f + get_le(e + 8, 8),
                                     (size_t)get_le(e + 16, 8));
        if (ZSTD_isError(got) || got != raw) {
            free(out);
            return NULL;
        }
        *n = raw;
        return out;
    }
    return NULL;
}

/* Each param's data sits at a 64-aligned offset; the section has no more. */
static void check_constants_layout(const graph *g, const uint8_t *f)
{
    size_t n = 0, want = 0;
    uint8_t *c = constants_of(f, &n);
    int ok = c != NULL;
    for (int32_t i = 0; ok && i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        if (!v->data)
            continue;
        size_t nb = (size_t)graph_type_numel(&v->type) * graph_dtype_size(v->type.dtype);
        int found = 0;
        for (size_t off = 0; !found && off + nb <= n; off += 64)
            found = memcmp(c + off, v->data, nb) == 0;
        ok = found;
        want += (nb + 63) / 64 * 64;
    }
    CHECK_MSG(ok && n == want, "constants: every data block 64-aligned, %zu bytes (want %zu)",
              n, want);
    free(c);
}

/* Save, load, compare, replay: the core round trip. */
static void roundtrip(const char *name, eager_tensor *x,
                      eager_tensor *(*f)(eager_tensor *, eager_tensor *const *),
                      eager_tensor *const *params, int nparams)
{
    eager_pool_push();
    trace_opts o = trace_default_opts();
    o.name = name;
    CHECK(trace_begin(&o) == TG_OK);
    trace_input(x, "x");
    for (int i = 0; i < nparams; i++)
        trace_param(params[i], "p");
    eager_tensor *want = f(x, params);
    trace_output(want, "y");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "%s traces: %s", name, eager_error());
    void *buf = NULL;
    size_t len = 0;
    CHECK(g && format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    graph *h = buf ? format_load_mem(buf, len, name, err, sizeof err) : NULL;
    CHECK_MSG(h != NULL, "%s loads: %s", name, err);
    if (g && h) {
        check_same_graph(g, h, name);
        check_constants_layout(g, buf);
        eager_tensor *out[2] = {NULL, NULL};
        CHECK(eager_interpret(g, &x, 1, &out[0], 1, NULL) == TG_OK);
        CHECK(eager_interpret(h, &x, 1, &out[1], 1, NULL) == TG_OK);
        CHECK_MSG(same_bits(out[0], out[1]) && same_bits(out[1], want),
                  "%s: loaded graph replays bit for bit", name);
        eager_release(out[0]);
        eager_release(out[1]);
        /* save -> load -> save is byte-identical; so is saving twice */
        void *buf2 = NULL, *buf3 = NULL;
        size_t len2 = 0, len3 = 0;
        format_save_mem(h, NULL, &buf2, &len2, err, sizeof err);
        format_save_mem(g, NULL, &buf3, &len3, err, sizeof err);
        CHECK(buf2 && len2 == len && memcmp(buf, buf2, len) == 0);
        CHECK(buf3 && len3 == len && memcmp(buf, buf3, len) == 0);
        free(buf2);
        free(buf3);
    }
    free(buf);
    graph_free(h);
    graph_free(g);
    eager_pool_pop();
}

static void test_models(void)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        model m = model_make(k);
        eager_tensor *x = model_input(&m, m.input_shape.v[0], 100 + (uint64_t)k);
        roundtrip(m.name, x, m.forward, m.params, m.nparams);
        eager_release(x);
        model_free(&m);
    }
}

/* ---- dynamic dims and guards ---- */

static int branch_line;

static eager_tensor *branchy(eager_tensor *x, eager_tensor *w)
{
    eager_tensor *h = eager_linear(x, w, EAGER_NONE);
    eager_tensor *s = eager_reduce_sum(x, TG_NOINTS, 0);
    branch_line = __LINE__ + 1;
    if (eager_bool(eager_gt(s, eager_scalar(0))))
        return eager_relu(h);
    return eager_neg(h);
}

/* A traced graph with a dynamic batch "B" and one guard. */
static graph *trace_branchy(eager_tensor *x, eager_tensor *w)
{
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    CHECK(trace_dynamic(x, 0, "B") == TG_OK);
    trace_param(w, "w");
    trace_output(branchy(x, w), "y");
    graph *g = trace_freeze();
    CHECK(g && g->nguards == 1 && g->nsyms == 1);
    return g;
}

static void test_dynamic_guards(void)
{
    eager_pool_push();
    eager_tensor *w = eager_rand_normal(TG_SHAPE(3, 4), 5, 0, 1);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 4), 6, 0.1f, 1);
    graph *g = trace_branchy(x, w);
    char path[] = "/tmp/tg_test_format_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(g && format_save(g, path, NULL, err, sizeof err) == TG_OK);
    graph *h = format_load(path, err, sizeof err);
    CHECK_MSG(h != NULL, "loads from a file: %s", err);
    format_info info;
    CHECK(format_info_file(path, &info, err, sizeof err) == TG_OK);
    CHECK(info.version == 1 && info.nsections == 8 && strcmp(info.sections[3].name, "nodes") == 0);
    remove(path);
    if (g && h) {
        check_same_graph(g, h, "dynamic");
        const graph_value *y = &h->values[h->outputs[0].value];
        CHECK(y->dyn == 1 && strcmp(h->syms[y->sym[0]].name, "B") == 0 && h->syms[0].traced == 2);
        for (int64_t b = 1; b <= 7; b += 6) {
            eager_tensor *xb = eager_rand_uniform(TG_SHAPE(b, 4), 40 + b, 0.1f, 1);
            eager_tensor *out = NULL;
            CHECK(eager_interpret(h, &xb, 1, &out, 1, NULL) == TG_OK);
            eager_tensor *ref = eager_relu(eager_linear(xb, w, EAGER_NONE));
            CHECK_MSG(same_bits(out, ref), "batch %lld replays after loading", (long long)b);
            eager_release(out);
        }
        eager_tensor *neg = eager_rand_uniform(TG_SHAPE(3, 4), 50, -1, -0.1f), *out = NULL;
        CHECK(eager_interpret(h, &neg, 1, &out, 1, NULL) == TG_ERR_GUARD);
        char site[64];
        snprintf(site, sizeof site, "test_format.c:%d branchy", branch_line);
        CHECK_MSG(strstr(eager_error(), site) != NULL, "guard error \"%s\" names %s",
                  eager_error(), site);
        CHECK_ERROR("guard failed: the decision at");
    }
    graph_free(h);
    graph_free(g);
    eager_pool_pop();
}

/* ---- a small graph built by hand with the graph API ---- */

static graph *small_graph(void)
{
    graph *g = graph_new("small");
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), r, l;
    graph_add_input(g, x);
    graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &r, 1);
    graph_leaky_relu_attrs a = {0.2f};
    graph_add_node(g, GRAPH_OP_leaky_relu, &r, 1, &a, &l, 1);
    graph_add_output(g, l, "y");
    return g;
}

/* Replaces every string entry equal to from (same length) in raw strings. */
static int patch_string(format_raw_sections *s, const char *from, const char *to)
{
    uint8_t *p = s->p[FORMAT_SEC_STRINGS - 1];
    size_t n = s->len[FORMAT_SEC_STRINGS - 1], at = 4, len = strlen(from);
    int hits = 0;
    while (at + 4 <= n) {
        size_t k = (size_t)get_le(p + at, 4);
        if (k == len && memcmp(p + at + 4, from, len) == 0) {
            memcpy(p + at + 4, to, len);
            hits++;
        }
        at += 4 + k;
    }
    return hits;
}

/* Encodes small_graph, lets patch change the raw sections, packs, loads. */
static graph *load_patched(void (*patch)(format_raw_sections *))
{
    graph *g = small_graph();
    format_raw_sections s;
    void *buf = NULL;
    size_t len = 0;
    CHECK(format_encode_raw(g, &s, err, sizeof err) == TG_OK);
    patch(&s);
    CHECK(format_pack(&s, 3, &buf, &len, err, sizeof err) == TG_OK);
    graph *h = format_load_mem(buf, len, "model.tgraph", err, sizeof err);
    format_raw_free(&s);
    free(buf);
    graph_free(g);
    return h;
}

static void patch_op(format_raw_sections *s) { CHECK(patch_string(s, "relu", "frob") == 1); }
static void patch_attr(format_raw_sections *s) { CHECK(patch_string(s, "alpha", "gamma") == 1); }
static void patch_version(format_raw_sections *s)
{
    /* nodes: u32 count, then node 0: str op, u32 version at byte 8 */
    s->p[FORMAT_SEC_NODES - 1][8] = 2;
}
static void patch_kind(format_raw_sections *s)
{
    /* node 0 (relu): 28-byte head + in + out; node 1's attribute kind code
     * follows its head, in, out and the attribute's name */
    uint8_t *p = s->p[FORMAT_SEC_NODES - 1] + 4 + (28 + 8) + 28 + 8 + 4;
    *p = 0; /* f32 -> i64 */
}
static void patch_none(format_raw_sections *s) { (void)s; }

static void test_messages(void)
{
    graph *h = load_patched(patch_none);
    CHECK_MSG(h != NULL, "unpatched pack loads: %s", err);
    graph_free(h);
    CHECK(load_patched(patch_op) == NULL);
    CHECK_MSG(strcmp(err, "model.tgraph: section 'nodes' at byte 4: node 0 names unknown "
                     "op 'frob'") == 0, "got: %s", err);
    CHECK(load_patched(patch_version) == NULL);
    CHECK_MSG(strcmp(err, "model.tgraph: section 'nodes' at byte 8: node 0: op 'relu' "
                     "version 2 is newer than this build's (1)") == 0, "got: %s", err);
    CHECK(load_patched(patch_attr) == NULL);
    CHECK_MSG(strstr(err, "node 1: op 'leaky_relu' has no attribute 'gamma'") != NULL,
              "got: %s", err);
    CHECK(load_patched(patch_kind) == NULL);
    CHECK_MSG(strstr(err, "node 1: attribute 'alpha' is i64, op 'leaky_relu' has it as f32"),
              "got: %s", err);

    /* a newer format version */
    graph *g = small_graph();
    void *buf = NULL;
    size_t len = 0;
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    uint8_t *b = buf;
    b[8] = 7;
    CHECK(format_load_mem(b, len, "model.tgraph", err, sizeof err) == NULL);
    CHECK_MSG(strcmp(err, "model.tgraph: format version 7 is newer than this build reads (1)") == 0,
              "got: %s", err);
    format_info info;
    CHECK(format_info_mem(b, len, "model.tgraph", &info, err, sizeof err) == TG_ERR_UNSUPPORTED);
    b[8] = 1;
    CHECK(format_info_mem(b, len, "m", &info, err, sizeof err) == TG_OK);
    uint64_t sum = 32 + 40 * 8 + 8;
    for (int i = 0; i < info.nsections; i++) {
        CHECK(info.sections[i].offset == sum && info.sections[i].id == (uint32_t)i + 1);
        sum += info.sections[i].stored;
    }
    CHECK(sum == len && info.file_size == len && strcmp(info.sections[7].name, "constants") == 0);
    free(buf);

    /* levels, including one whose window is capped */
    int levels[] = {1, 19, 22, -5};
    for (int i = 0; i < 4; i++) {
        format_save_opts o = format_save_default_opts();
        o.level = levels[i];
        CHECK(format_save_mem(g, &o, &buf, &len, err, sizeof err) == TG_OK);
        h = format_load_mem(buf, len, "lvl", err, sizeof err);
        CHECK_MSG(h && check_same_graph(g, h, "level"), "level %d loads: %s", levels[i], err);
        graph_free(h);
        free(buf);
    }
    format_save_opts o = {99};
    CHECK(format_save_mem(g, &o, &buf, &len, err, sizeof err) == TG_ERR_ARG && !buf);
    CHECK(strstr(err, "zstd level 99 is out of range") != NULL);

    /* files */
    CHECK(format_load("/nonexistent/m.tgraph", err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "/nonexistent/m.tgraph: cannot open: No such file"), "got: %s", err);
    CHECK(format_save(g, "/nonexistent/m.tgraph", NULL, err, sizeof err) == TG_ERR_IO);
    CHECK_MSG(strstr(err, "/nonexistent/m.tgraph: cannot write"), "got: %s", err);
    graph_free(g);
}

/* ---- a file written by hand from the spec in tgraph.h ---- */

typedef struct hbuf {
    uint8_t b[4096];
    size_t n;
} hbuf;

static void le(hbuf *h, uint64_t v, int k)
{
    for (int i = 0; i < k; i++)
        h->b[h->n++] = (uint8_t)(v >> (8 * i));
}

static void hstr(hbuf *h, const char *s)
{
    size_t n = strlen(s);
    le(h, n, 4);
    memcpy(h->b + h->n, s, n);
    h->n += n;
}

/* A value record of a 1-d f32 value. */
static void hvalue(hbuf *h, int kind, int flags, uint32_t name, int32_t node,
                   uint64_t hash, int64_t dim)
{
    le(h, (uint64_t)kind, 1);
    le(h, 0, 1); /* f32 */
    le(h, 1, 1); /* ndim */
    le(h, (uint64_t)flags, 1);
    le(h, 0, 4); /* dyn */
    le(h, name, 4);
    le(h, (uint32_t)node, 4);
    le(h, 0, 4); /* out_index */
    le(h, hash, 8);
    le(h, 0, 8); /* data offset */
    le(h, (uint64_t)dim, 8);
    le(h, 0, 1); /* sym */
}

enum { HAND_OK, HAND_EXTRA_SECTION, HAND_OVERLAP, HAND_HUGE_COUNT, HAND_BAD_TYPE, HAND_HUGE_FRAME };

static const float hand_w[2] = {1.5f, -2.0f};

/* The raw sections of: y = leaky_relu(x + w), alpha left to its default. */
static void hand_sections(int variant, hbuf *sec)
{
    static const char *const strs[] = {"hand", "x", "w", "add", "leaky_relu", "y",
                                       "hand.c", "f"};
    le(&sec[0], 8, 4);
    for (int i = 0; i < 8; i++)
        hstr(&sec[0], strs[i]);
    le(&sec[1], 0, 4); /* no symbols */
    hbuf *v = &sec[2];
    le(v, variant == HAND_HUGE_COUNT ? 0x7FFFFFFFu : variant == HAND_OVERLAP ? 5 : 4, 4);
    hvalue(v, 0, 0, 1, -1, 0, 2);
    hvalue(v, 1, 1, 2, -1, graph_hash_bytes(hand_w, 8), 2);
    hvalue(v, 3, 0, FORMAT_NO_STR, 0, 0, 2);
    hvalue(v, 3, 0, FORMAT_NO_STR, 1, 0, variant == HAND_BAD_TYPE ? 3 : 2);
    if (variant == HAND_OVERLAP)
        hvalue(v, 2, 1, FORMAT_NO_STR, -1, 0, 1); /* a const also at offset 0 */
    static const uint32_t nodes[] = {2,
        3, 1, 0, 2, 1, 1, 0, /* add: op, version, flags, nin, nout, nprov, nattrs */
        0, 1, 2, 0,          /* in %0 %1, out %2, prov 0 */
        4, 1, 0, 1, 1, 0, 0, /* leaky_relu, no attributes */
        2, 3};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++)
        le(&sec[3], nodes[i], 4);
    static const uint32_t prov[] = {0, 1, 6, 42, 7, 0, 0}; /* hand.c:42 f */
    for (size_t i = 0; i < 7; i++)
        le(&sec[4], prov[i], 4);
    le(&sec[5], 0, 4); /* no guards */
    static const uint32_t sig[] = {0, 1, 0, 1, 3, 5}; /* "hand" (%0) -> (y = %3) */
    for (size_t i = 0; i < 6; i++)
        le(&sec[6], sig[i], 4);
    for (int i = 0; i < 2; i++) {
        uint32_t bits;
        memcpy(&bits, &hand_w[i], 4);
        le(&sec[7], bits, 4);
    }
    sec[7].n = 64; /* zero padding to the alignment */
    hstr(&sec[8], "a section from the future");
}

/* Compresses the sections and writes the container; returns its length. */
static size_t hand_file(int variant, uint8_t *out)
{
    static hbuf sec[9];
    memset(sec, 0, sizeof sec);
    hand_sections(variant, sec);
    int nsec = variant == HAND_EXTRA_SECTION ? 9 : 8;
    uint8_t comp[9][4096];
    size_t clen[9];
    uint64_t raw[9];
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    for (int i = 0; i < nsec; i++) {
        clen[i] = ZSTD_compress2(cc, comp[i], sizeof comp[i], sec[i].b, sec[i].n);
        raw[i] = sec[i].n;
    }
    ZSTD_freeCCtx(cc);
    if (variant == HAND_HUGE_FRAME) {
        /* a frame that claims 2^39 bytes and holds one RLE block of 1 */
        static const uint8_t f[] = {0x28, 0xB5, 0x2F, 0xFD, 0xC4, 0x00, 0, 0, 0, 0, 0x80,
                                    0, 0, 0, 0x0B, 0x00, 0x00, 0x00, 0, 0, 0, 0};
        memcpy(comp[7], f, sizeof f);
        clen[7] = sizeof f;
        raw[7] = (uint64_t)1 << 39;
    }
    hbuf *h = malloc(sizeof *h);
    h->n = 0;
    size_t off = 32 + 40 * (size_t)nsec + 8, total = off;
    for (int i = 0; i < nsec; i++)
        total += clen[i];
    memcpy(h->b, "\x89TGR\r\n\x1a\n", 8);
    h->n = 8;
    le(h, 1, 4);
    le(h, (uint64_t)nsec, 4);
    le(h, total, 8);
    le(h, 0, 8);
    for (int i = 0; i < nsec; i++) {
        le(h, i == 8 ? 99 : (uint64_t)i + 1, 4);
        le(h, 1, 4);
        le(h, off, 8);
        le(h, clen[i], 8);
        le(h, raw[i], 8);
        le(h, format_xxh64(comp[i], clen[i], 0), 8);
        off += clen[i];
    }
    le(h, format_xxh64(h->b, h->n, 0), 8);
    size_t n = h->n;
    memcpy(out, h->b, n);
    for (int i = 0; i < nsec; i++) {
        memcpy(out + n, comp[i], clen[i]);
        n += clen[i];
    }
    free(h);
    return n;
}

static void test_hand(void)
{
    static uint8_t f[40000];
    size_t n = hand_file(HAND_OK, f);
    graph *g = format_load_mem(f, n, "hand.tgraph", err, sizeof err);
    CHECK_MSG(g != NULL, "the hand-written file loads: %s", err);
    if (g) {
        CHECK(strcmp(g->name, "hand") == 0 && g->nvalues == 4 && g->nnodes == 2);
        const graph_value *w = &g->values[1];
        CHECK(w->kind == GRAPH_VALUE_PARAM && strcmp(w->name, "w") == 0 && w->data &&
              (uintptr_t)w->data % 64 == 0 && memcmp(w->data, hand_w, 8) == 0 &&
              w->hash == graph_hash_bytes(hand_w, 8));
        const graph_leaky_relu_attrs *a = graph_node_attrs(&g->nodes[1]);
        CHECK(g->nodes[1].op == GRAPH_OP_leaky_relu && a->alpha == 0.01f);
        char site[64];
        CHECK(strcmp(graph_prov_str(g, g->nodes[0].prov[0], site, sizeof site), "hand.c:42 f") == 0);
        eager_pool_push();
        eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(2), ((float[]){1, -3}));
        eager_tensor *y = NULL;
        CHECK(eager_interpret(g, &x, 1, &y, 1, NULL) == TG_OK);
        float want[2] = {1 + 1.5f, (-3 - 2.0f) * 0.01f};
        CHECK_FLOATS(y ? (const float *)eager_peek(y) : NULL, want, 2, 1e-7);
        eager_release(y);
        eager_pool_pop();
    }
    graph_free(g);
    n = hand_file(HAND_EXTRA_SECTION, f);
    g = format_load_mem(f, n, "hand.tgraph", err, sizeof err);
    CHECK_MSG(g != NULL, "a section of unknown id is skipped: %s", err);
    graph_free(g);
    static const struct {
        int variant;
        const char *msg;
    } bad[] = {
        {HAND_OVERLAP, "hand.tgraph: section 'constants' at byte 0: value 4: data of 4 bytes "
                       "at offset 0: misaligned, overlapping or past the end (64)"},
        {HAND_HUGE_COUNT, "hand.tgraph: section 'values' at byte 0: 2147483647 values need "
                          "at least 77309411292 bytes"},
        {HAND_BAD_TYPE, "hand.tgraph: the graph does not verify: node 1 (leaky_relu at "
                        "unknown site): output %3 is f32[3] but the op makes f32[2]"},
        {HAND_HUGE_FRAME, "hand.tgraph: section 'constants' at byte 0: 131072 frames cannot "
                          "fit in 22 stored bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        n = hand_file(bad[i].variant, f);
        CHECK(format_load_mem(f, n, "hand.tgraph", err, sizeof err) == NULL);
        CHECK_MSG(strncmp(err, bad[i].msg, strlen(bad[i].msg)) == 0, "got: %s\nwant: %s",
                  err, bad[i].msg);
    }
}

/* ---- damaged files ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t heap_used(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks;
}

/* Loads buf; 1 if refused with a message that names the file. */
static int refused(const uint8_t *buf, size_t len)
{
    err[0] = '\0';
    graph *h = format_load_mem(buf, len, "tiny.tgraph", err, sizeof err);
    graph_free(h);
    return !h && strncmp(err, "tiny.tgraph: ", 13) == 0;
}

static void test_damage(void)
{
    eager_pool_push();
    eager_tensor *w = eager_rand_normal(TG_SHAPE(3, 4), 7, 0, 1);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 4), 8, 0.1f, 1);
    graph *g = trace_branchy(x, w);
    void *buf = NULL;
    size_t len = 0;
    CHECK(g && format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    graph_free(g);
    eager_pool_pop();
    if (!buf)
        return;
    uint8_t *b = buf, *copy = malloc(len + 1), *junk = malloc(8192);
    size_t before = heap_used(), bad = 0;
    for (size_t i = 0; i < len; i++)
        bad += !refused(b, i);
    CHECK_MSG(bad == 0, "%zu of %zu truncations loaded or gave no message", bad, len);
    memcpy(copy, b, len);
    copy[len] = 0;
    CHECK(refused(copy, len + 1)); /* one byte too many */
    for (size_t i = 0; i < len; i++) {
        copy[i] ^= (uint8_t)(1u << (i % 8));
        if (!refused(copy, len)) {
            bad++;
            CHECK_MSG(0, "flipping bit %zu of byte %zu went unnoticed (%s)", i % 8, i, err);
        }
        copy[i] = b[i];
    }
    CHECK_MSG(bad == 0, "every single-bit flip of %zu bytes is refused", len);
    size_t head = 32 + 40 * 8 + 8;
    for (int k = 0; k < 1000; k++) {
        size_t n = (size_t)(rng() % 8192);
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)rng();
        if (k % 3 == 1 && n >= 12)
            memcpy(junk, "\x89TGR\r\n\x1a\n\x01\0\0\0", 12); /* magic, version 1 */
        if (k % 3 == 2) { /* a valid header and table, garbage after it */
            n = len;
            memcpy(junk, b, head);
        }
        bad += !refused(junk, n);
    }
    CHECK_MSG(bad == 0, "%zu of 1000 garbage buffers loaded", bad);
    CHECK_MSG(heap_used() == before, "failed loads leak nothing (%zu -> %zu bytes in use)",
              before, heap_used());
    free(junk);
    free(copy);
    free(buf);
}

static void test_checksum(void)
{
    CHECK(format_xxh64("", 0, 0) == UINT64_C(0xEF46DB3751D8E999));
    static uint8_t data[3000], frame[4000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)rng();
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    static const size_t lens[] = {0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 100, 1000, 2999};
    int ok = 1;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        /* zstd's frame checksum: the low 32 bits of XXH64(content, 0) */
        size_t z = ZSTD_compress2(cc, frame, sizeof frame, data, lens[i]);
        ok &= !ZSTD_isError(z) &&
              get_le(frame + z - 4, 4) == (uint32_t)format_xxh64(data, lens[i], 0);
    }
    CHECK_MSG(ok, "format_xxh64 agrees with zstd's checksums");
    ZSTD_freeCCtx(cc);
}

/* ---- fuzzing seeds (TG_FORMAT_CORPUS=dir) ---- */

static void write_seed(const char *dir, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f && fwrite(p, 1, n, f) == n, "writes %s", path);
    if (f)
        fclose(f);
}

/* A file, and its raw sections in the fuzz target's "S" form. */
static void write_seeds(const char *dir, const char *name, const graph *g)
{
    void *buf = NULL;
    size_t len = 0;
    char fn[128];
    format_save_mem(g, NULL, &buf, &len, err, sizeof err);
    snprintf(fn, sizeof fn, "%s.tgraph", name);
    write_seed(dir, fn, buf, len);
    free(buf);
    format_raw_sections s;
    if (format_encode_raw(g, &s, err, sizeof err) != TG_OK)
        return;
    hbuf *h = malloc(sizeof *h);
    h->n = 0;
    le(h, 'S', 1);
    for (int i = 0; i < FORMAT_NSEC && h->n + 4 + s.len[i] <= sizeof h->b; i++) {
        le(h, s.len[i], 4);
        memcpy(h->b + h->n, s.p[i], s.len[i]);
        h->n += s.len[i];
    }
    snprintf(fn, sizeof fn, "%s.sec", name);
    write_seed(dir, fn, h->b, h->n);
    free(h);
    format_raw_free(&s);
}

static void write_corpus(void)
{
    const char *dir = getenv("TG_FORMAT_CORPUS");
    if (!dir)
        return;
    graph *g = small_graph();
    write_seeds(dir, "small", g);
    graph_free(g);
    eager_pool_push();
    trace_opts o = trace_default_opts();
    o.capture_stack = 0;
    eager_tensor *w = eager_rand_normal(TG_SHAPE(3, 4), 5, 0, 1);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 4), 6, 0.1f, 1);
    trace_begin(&o);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    trace_param(w, "w");
    trace_output(branchy(x, w), "y");
    g = trace_freeze();
    if (g)
        write_seeds(dir, "branchy", g);
    graph_free(g);
    eager_pool_pop();
    static uint8_t f[40000];
    write_seed(dir, "hand.tgraph", f, hand_file(HAND_OK, f));
}

int main(void)
{
    long live = eager_live_tensors();
    test_checksum();
    test_models();
    test_dynamic_guards();
    test_messages();
    test_hand();
    test_damage();
    write_corpus();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
