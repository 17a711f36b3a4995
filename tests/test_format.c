/*
 * test_format.c - the .tgraph format, round trips: the traced MLP, conv
 * and attention graphs of tests/models.h survive save -> load field by
 * field and replay bit for bit; dynamic dims and guards survive (a guard
 * still fails naming its call site); large and all-zero weights (the
 * chunked, parallel and the staged paths of the constants); levels; the
 * info peek; file errors.  Damaged and hostile files: test_format_damage.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/tgraph.h"
#include "models.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

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
    const char *x = tg_node_attrs(a), *y = tg_node_attrs(b);
    const graph_attr_desc *d = info->nattrs ? info->attr_descs() : NULL;
    for (int k = 0; k < info->nattrs; k++) {
        const char *fx = x + d[k].offset, *fy = y + d[k].offset;
        size_t size = d[k].kind == GRAPH_ATTR_I64 ? 8 : d[k].kind == GRAPH_ATTR_F32 ? 4
                      : d[k].kind == GRAPH_ATTR_DTYPE ? sizeof(graph_dtype)
                      : d[k].kind == GRAPH_ATTR_STR ? sizeof(graph_str) : 0;
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
    CHECK(info.version == 1 && info.nsections == 10 && strcmp(info.sections[3].name, "nodes") == 0 &&
          strcmp(info.sections[8].name, "target") == 0 && strcmp(info.sections[9].name, "states") == 0);
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
static void test_options(void)
{
    graph *g = small_graph(), *h;
    void *buf = NULL;
    size_t len = 0;
    format_info info;
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    CHECK(format_info_mem(buf, len, "m", &info, err, sizeof err) == TG_OK);
    uint64_t sum = 32 + 40 * 10 + 8;
    for (int i = 0; i < info.nsections; i++) {
        CHECK(info.sections[i].offset == sum && info.sections[i].id == (uint32_t)i + 1);
        sum += info.sections[i].stored;
    }
    CHECK(sum == len && info.file_size == len && info.version == 1 &&
          strcmp(info.sections[7].name, "constants") == 0);
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
    graph_type t = {GRAPH_F32, 1, {3}};
    int32_t v = graph_add_value(g, GRAPH_VALUE_PARAM, &t, "w");
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_ERR_ARG);
    CHECK_MSG(strcmp(err, "cannot save graph 'small': param value %3 has no data (elided)") == 0,
              "got: %s", err);
    graph_set_data(g, v, (float[]){1, 2, 3}, 12);
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


/* A graph holding only params: each of n floats from fill(seed, i). */
static graph *params_graph(const int64_t *sizes, int n, float (*fill)(int64_t))
{
    graph *g = graph_new("big");
    graph_type tx = {GRAPH_F32, 1, {4}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x"), y;
    graph_add_input(g, x);
    for (int k = 0; k < n; k++) {
        graph_type t = {GRAPH_F32, 1, {sizes[k]}};
        float *d = malloc(sizeof(float) * (size_t)sizes[k]);
        for (int64_t i = 0; i < sizes[k]; i++)
            d[i] = fill(i * 7 + k);
        int32_t v = graph_add_value(g, GRAPH_VALUE_PARAM, &t, "p");
        graph_set_data(g, v, d, sizeof(float) * (size_t)sizes[k]);
        free(d);
    }
    graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1);
    graph_add_output(g, y, "y");
    return g;
}

static float noise(int64_t i) { return (float)((i * 2654435761u) % 1000003) * 1e-3f; }
static float zero(int64_t i)
{
    (void)i;
    return 0.0f;
}

static void test_big(void)
{
    /* values straddling the 4 MiB frames, small ones between: direct and
     * scratch frames, decoded in parallel */
    static const int64_t sizes[] = {3, 3000001, 17, 1, 1500000, 5};
    static const int64_t zeros[] = {5 << 20, 3};
    for (int z = 0; z < 2; z++) {
        graph *g = z ? params_graph(zeros, 2, zero) : params_graph(sizes, 6, noise);
        void *buf = NULL;
        size_t len = 0;
        CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
        graph *h = format_load_mem(buf, len, "big", err, sizeof err);
        CHECK_MSG(h != NULL, "big graph %d loads: %s", z, err);
        if (h)
            check_same_graph(g, h, z ? "20 MB of zeros (staged)" : "straddling values");
        CHECK(!z || len < 20000); /* zeros compress: the staged path was taken */
        graph_free(h);
        graph_free(g);
        free(buf);
    }
}

int main(void)
{
    long live = eager_live_tensors();
    test_models();
    test_dynamic_guards();
    test_options();
    test_big();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
