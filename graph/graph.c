/* graph.c - building, copying and freeing graphs. */
#include "alloc.h"
#include "graph.h"
#include "graph_impl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tg_hash.h"

_Thread_local int tg_hash_oom;

typedef struct string_entry {
    UT_hash_handle hh;
    size_t len;
    char s[];
} string_entry;

struct graph_strings {
    string_entry *head;
};

struct graph_chunk {
    graph_chunk *next;
    size_t used, cap;
    int32_t ids[];
};

void *graph_alloc_bytes(graph *g, size_t n)
{
    if (!g)
        return NULL;
    graph_chunk *c = g->chunks;
    if (c && (c->used & 1)) /* keep 8-byte alignment: ids are 4 bytes */
        c->used++;
    if (c && c->used > c->cap)
        c->used = c->cap;
    return graph_alloc_ids(g, (int)((n + 3) / 4 + 1) & ~1);
}

int32_t *graph_alloc_ids(graph *g, int n)
{
    if (!g)
        return NULL;
    size_t need = n > 0 ? (size_t)n : 1;
    graph_chunk *c = g->chunks;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > 16384 ? need : 16384;
        c = tg_malloc(sizeof *c + cap * sizeof(int32_t));
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = g->chunks;
        g->chunks = c;
    }
    int32_t *p = c->ids + c->used;
    c->used += need;
    return p;
}

size_t graph_arena_bytes(const graph *g)
{
    size_t n = 0;
    for (const graph_chunk *c = g ? g->chunks : NULL; c; c = c->next)
        n += sizeof *c + c->cap * sizeof(int32_t);
    return n;
}

const char *graph_value_kind_name(graph_value_kind k)
{
    static const char *const names[] = {"input", "param", "const", "inter", "state"};
    return (unsigned)k < 5 ? names[k] : "?";
}

/* Where each stable array lives in struct graph and what it is called
 * (graph_impl.h); specs[]: its element size and limit, in the same order
 * (one table, so that a released graph's storage serves the next graph). */
static const struct {
    size_t base, cap;
    const char *what;
} arrays[GRAPH_ARRAY_COUNT] = {
#define A(field, what) {offsetof(graph, field), offsetof(graph, cap_##field), what}
    A(values, "values"),
    A(nodes, "nodes"),
    A(inputs, "inputs"),
    A(outputs, "outputs"),
    A(provs, "provenance entries"),
    A(frames, "stack frames"),
    A(guards, "guards"),
    A(syms, "dynamic dim symbols"),
#undef A
};
static const tg_stable_spec specs[GRAPH_ARRAY_COUNT] = {
#define S(field, max) {sizeof *((graph *)0)->field, max}
    S(values, GRAPH_MAX_VALUES),
    S(nodes, GRAPH_MAX_NODES),
    S(inputs, GRAPH_MAX_ITEMS),
    S(outputs, GRAPH_MAX_ITEMS),
    S(provs, GRAPH_MAX_ITEMS),
    S(frames, GRAPH_MAX_ITEMS),
    S(guards, GRAPH_MAX_ITEMS),
    S(syms, 127),
#undef S
};
_Static_assert((int)GRAPH_ARRAY_COUNT <= (int)TG_STABLE_MAX, "a graph's arrays fit one stable set");

tg_status graph_grow_array(graph *g, graph_array a, int64_t need)
{
    int32_t *cap = (int32_t *)(void *)((char *)g + arrays[a].cap);
    if (need <= *cap)
        return TG_OK;
    tg_stable_set *s = &g->mem;
    int rc = tg_stable_grow(s, specs, GRAPH_ARRAY_COUNT, (int)a, need, cap);
    *(void **)(void *)((char *)g + arrays[a].base) = s->a[a].base;
    if (rc == TG_STABLE_OK)
        return TG_OK;
    int32_t lim = tg_stable_limit(s, specs, (int)a);
    if (rc == TG_STABLE_FULL)
        return graph_fail(g, TG_ERR_NOMEM, "graph '%s' would hold %lld %s: at most %d%s",
                          g->name ? g->name : "?", (long long)need, arrays[a].what, lim,
                          lim < specs[a].max ? " (all the address space that could be "
                                               "reserved for them)" : "");
    return graph_fail(g, TG_ERR_NOMEM, "out of memory growing graph '%s' to %lld %s",
                      g->name ? g->name : "?", (long long)need, arrays[a].what);
}

int32_t graph_array_limit(const graph *g, graph_array a)
{
    return tg_stable_limit(&g->mem, specs, (int)a);
}

void graph_zero_array(graph *g, graph_array a, int32_t n)
{
    if (n > 0)
        tg_stable_zero(&g->mem, (int)a, (size_t)n * specs[a].elem);
}

/* Room for need entries of g->field (a stable array): 0 or -1 (the message
 * is in g). */
#define GROW(g, field, ARR, need)                                             \
    ((need) <= (g)->cap_##field                                               \
         ? 0                                                                  \
         : (graph_grow_array((g), GRAPH_ARRAY_##ARR, (need)) == TG_OK ? 0 : -1))

graph *graph_new(const char *name)
{
    graph *g = tg_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->strings = tg_calloc(1, sizeof *g->strings);
    if (!g->strings) {
        tg_free(g);
        return NULL;
    }
    g->name = graph_intern(g, name ? name : "main", -1);
    if (!g->name) {
        graph_free(g);
        return NULL;
    }
    return g;
}

void graph_free(graph *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->nvalues; i++)
        tg_free(g->values[i].data);
    for (graph_chunk *c = g->chunks, *next; c; c = next) {
        next = c->next;
        tg_free(c);
    }
    if (g->strings) {
        string_entry *e, *tmp;
        HASH_ITER(hh, g->strings->head, e, tmp) {
            HASH_DEL(g->strings->head, e);
            tg_free(e);
        }
        tg_free(g->strings);
    }
    tg_stable_release(&g->mem);
    tg_free(g->states);
    tg_free(g);
}

const char *graph_error(const graph *g) { return g ? g->err : "no graph"; }

tg_status graph_fail(graph *g, tg_status st, const char *fmt, ...)
{
    if (!g)
        return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
    g->err_status = st;
    return st;
}

tg_status graph_error_status(const graph *g) { return g ? g->err_status : TG_ERR_NULL; }

const char *graph_intern(graph *g, const char *s, long len)
{
    if (!g || !s)
        return NULL;
    size_t n = len < 0 ? strlen(s) : (size_t)len;
    string_entry *e;
    HASH_FIND(hh, g->strings->head, s, n, e);
    if (e)
        return e->s;
    e = tg_malloc(sizeof *e + n + 1);
    if (!e)
        return NULL;
    e->len = n;
    memcpy(e->s, s, n);
    e->s[n] = '\0';
    tg_hash_oom = 0;
    HASH_ADD_KEYPTR(hh, g->strings->head, e->s, n, e);
    if (tg_hash_oom) {
        tg_free(e);
        return NULL;
    }
    return e->s;
}

static int32_t new_value(graph *g, graph_value_kind kind, const graph_type *t,
                         const char *name)
{
    if (GROW(g, values, VALUES, g->nvalues + 1) < 0)
        return -1;
    const char *iname = name ? graph_intern(g, name, -1) : NULL;
    if (name && !iname) {
        graph_fail(g, TG_ERR_NOMEM, "out of memory adding a value");
        return -1;
    }
    /* One initializing store of the record (the tracer's hot path). */
    g->values[g->nvalues] = (graph_value){.type = *t, .kind = kind, .node = -1,
                                          .name = iname};
    return g->nvalues++;
}

int32_t graph_add_value(graph *g, graph_value_kind kind, const graph_type *t,
                        const char *name)
{
    if (!g)
        return -1;
    if (!t) {
        graph_fail(g, TG_ERR_NULL, "graph_add_value: no type");
        return -1;
    }
    if (kind == GRAPH_VALUE_INTER || (unsigned)kind > GRAPH_VALUE_STATE) {
        graph_fail(g, TG_ERR_ARG, "graph_add_value: kind %d is not a source",
                   (int)kind);
        return -1;
    }
    return new_value(g, kind, t, name);
}

size_t graph_value_nbytes(const graph_value *v)
{
    if (!v)
        return 0;
    return (size_t)graph_type_numel(&v->type) * graph_dtype_size(v->type.dtype);
}

uint64_t graph_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

tg_status graph_set_data(graph *g, int32_t vid, const void *data,
                         size_t nbytes)
{
    if (!g)
        return TG_ERR_NULL;
    if (!data && nbytes)
        return graph_fail(g, TG_ERR_NULL, "graph_set_data: no data for %zu bytes", nbytes);
    if (vid < 0 || vid >= g->nvalues)
        return graph_fail(g, TG_ERR_ARG, "graph_set_data: no value %d", vid);
    graph_value *v = &g->values[vid];
    if (!graph_kind_has_data(v->kind))
        return graph_fail(g, TG_ERR_ARG, "value %d is %s, not param/const/state",
                          vid, graph_value_kind_name(v->kind));
    if (nbytes != graph_value_nbytes(v))
        return graph_fail(g, TG_ERR_SHAPE, "value %d: %zu bytes, want %zu",
                          vid, nbytes, graph_value_nbytes(v));
    void *p = tg_aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
    if (!p)
        return graph_fail(g, TG_ERR_NOMEM, "cannot allocate %zu bytes", nbytes);
    if (nbytes)
        memcpy(p, data, nbytes);
    tg_free(v->data);
    v->data = p;
    v->hash = graph_hash_bytes(p, nbytes);
    return TG_OK;
}

tg_status graph_reserve(graph *g, int32_t nvalues, int32_t nnodes)
{
    if (!g)
        return TG_ERR_NULL;
    if (GROW(g, values, VALUES, nvalues) < 0 || GROW(g, nodes, NODES, nnodes) < 0)
        return g->err_status;
    return TG_OK;
}

tg_status graph_add_input(graph *g, int32_t v)
{
    if (!g)
        return TG_ERR_NULL;
    if (v < 0 || v >= g->nvalues || g->values[v].kind != GRAPH_VALUE_INPUT)
        return graph_fail(g, TG_ERR_ARG, "graph_add_input: value %d is not an input", v);
    if (GROW(g, inputs, INPUTS, g->ninputs + 1) < 0)
        return g->err_status;
    g->inputs[g->ninputs++] = v;
    return TG_OK;
}

tg_status graph_add_output(graph *g, int32_t v, const char *name)
{
    if (!g)
        return TG_ERR_NULL;
    if (v < 0 || v >= g->nvalues)
        return graph_fail(g, TG_ERR_ARG, "graph_add_output: no value %d", v);
    if (GROW(g, outputs, OUTPUTS, g->noutputs + 1) < 0)
        return g->err_status;
    const char *n = graph_intern(g, name ? name : "out", -1);
    if (!n)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory adding an output");
    /* Duplicate names are caught by graph_verify, in O(n log n): a check
     * here would make adding n outputs quadratic. */
    g->outputs[g->noutputs].value = v;
    g->outputs[g->noutputs].name = n;
    g->noutputs++;
    return TG_OK;
}

tg_status graph_add_state(graph *g, int32_t v, int32_t next)
{
    if (!g)
        return TG_ERR_NULL;
    if (v < 0 || v >= g->nvalues || g->values[v].kind != GRAPH_VALUE_STATE)
        return graph_fail(g, TG_ERR_ARG, "graph_add_state: value %d is not a state value", v);
    if (!g->values[v].name)
        return graph_fail(g, TG_ERR_ARG, "graph_add_state: state value %d has no name", v);
    if (next < 0 || next >= g->nvalues)
        return graph_fail(g, TG_ERR_ARG, "graph_add_state: state \"%s\": no value %d",
                          g->values[v].name, next);
    if (!graph_type_eq(&g->values[v].type, &g->values[next].type))
        return graph_fail(g, TG_ERR_SHAPE, "graph_add_state: state \"%s\": its next value "
                          "has another type", g->values[v].name);
    if (g->nstates == g->cap_states) {
        int32_t cap = g->cap_states ? 2 * g->cap_states : 8;
        if (cap > GRAPH_MAX_ITEMS)
            return graph_fail(g, TG_ERR_NOMEM, "graph_add_state: more than %d states",
                              GRAPH_MAX_ITEMS);
        graph_state *ns = tg_realloc(g->states, sizeof *ns * (size_t)cap);
        if (!ns)
            return graph_fail(g, TG_ERR_NOMEM, "out of memory adding a state");
        g->states = ns;
        g->cap_states = cap;
    }
    g->states[g->nstates++] = (graph_state){v, next};
    return TG_OK;
}

int32_t graph_num_states(const graph *g) { return g ? g->nstates : 0; }
int32_t graph_state_value(const graph *g, int32_t i)
{
    return g && i >= 0 && i < g->nstates ? g->states[i].value : -1;
}
int32_t graph_state_next(const graph *g, int32_t i)
{
    return g && i >= 0 && i < g->nstates ? g->states[i].next : -1;
}

int32_t graph_add_symbol(graph *g, const char *name, int64_t traced)
{
    if (!g)
        return -1;
    if (!name) {
        graph_fail(g, TG_ERR_NULL, "graph_add_symbol: no name");
        return -1;
    }
    const char *n = graph_intern(g, name, -1);
    if (!n) {
        graph_fail(g, TG_ERR_NOMEM, "out of memory adding a symbol");
        return -1;
    }
    for (int32_t i = 0; i < g->nsyms; i++) {
        if (g->syms[i].name == n) {
            if (g->syms[i].traced != traced) {
                graph_fail(g, TG_ERR_SHAPE,
                           "dynamic dim %s is %lld here but %lld elsewhere", n,
                           (long long)traced, (long long)g->syms[i].traced);
                return -1;
            }
            return i;
        }
    }
    if (g->nsyms >= 127) {
        graph_fail(g, TG_ERR_SHAPE, "too many dynamic dim symbols (at most 127)");
        return -1;
    }
    if (GROW(g, syms, SYMS, g->nsyms + 1) < 0)
        return -1;
    g->syms[g->nsyms].name = n;
    g->syms[g->nsyms].traced = traced;
    return g->nsyms++;
}

/*
 * Appends a node whose output types are known; the shared tail of both
 * adders.  a: attr_size bytes of attributes (unused for ops without).
 * Every op a trace records passes through here, so records are written
 * once each (no memset-then-fill) and both arrays grow before any write.
 */
static int32_t append_node(graph *g, graph_op op, const int32_t *in, int nin,
                           const void *a, const graph_type *otype,
                           int nout, int32_t *out_ids, int max_out, int32_t prov)
{
    const graph_op_info *info = &graph_ops[op];
    /* Both arrays grow before any write (otype may be a value's type: it
     * stays where it is, storage never moves). */
    if (GROW(g, nodes, NODES, g->nnodes + 1) < 0 ||
        GROW(g, values, VALUES, (int64_t)g->nvalues + nout) < 0)
        return -1;
    graph_attrs *attrs = NULL;
    if (info->attr_size) {
        attrs = graph_alloc_bytes(g, info->attr_size);
        if (!attrs)
            goto oom;
        memcpy(attrs, a, info->attr_size);
    }
    /* One block: inputs, outputs, and room for the usual one origin. */
    int32_t *ids = graph_alloc_ids(g, nin + nout + 1);
    if (!ids)
        goto oom;
    int32_t id = g->nnodes++;
    g->nodes[id] = (graph_node){.op = op, .nin = nin, .nout = nout, .in = ids,
                                .out = ids + nin, .attrs = attrs,
                                .nprov = prov >= 0, .prov = ids + nin + nout,
                                .cap_prov = 1};
    ids[nin + nout] = prov;
    if (nin)
        memcpy(ids, in, sizeof(int32_t) * (size_t)nin);
    for (int i = 0; i < nout; i++) {
        int32_t v = g->nvalues++;
        g->values[v] = (graph_value){.type = otype[i], .kind = GRAPH_VALUE_INTER,
                                     .node = id, .out_index = i};
        ids[nin + i] = v;
        if (out_ids && i < max_out)
            out_ids[i] = v;
    }
    return id;
oom:
    graph_fail(g, TG_ERR_NOMEM, "out of memory adding a %s node", info->name);
    return -1;
}

/* Checks op and input ids; copies the input types. 0 or -1. */
static int check_inputs(graph *g, graph_op op, const int32_t *in, int nin,
                        graph_type *itype)
{
    const graph_op_info *info = graph_op_get(op);
    if (!info || nin < 0 || (nin > 0 && !in)) {
        graph_fail(g, TG_ERR_ARG, "graph_add_node: bad op or inputs");
        return -1;
    }
    if (nin > GRAPH_MAX_NODE_IO) {
        graph_fail(g, TG_ERR_ARG, "%s: %d inputs (at most %d)", info->name, nin,
                   GRAPH_MAX_NODE_IO);
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        if (in[i] < 0 || in[i] >= g->nvalues) {
            graph_fail(g, TG_ERR_ARG, "%s: input %d is value %d, which does not exist",
                       info->name, i, in[i]);
            return -1;
        }
        if (itype)
            itype[i] = g->values[in[i]].type;
    }
    return 0;
}

int32_t graph_add_node(graph *g, graph_op op, const int32_t *in, int nin,
                       const void *attrs, int32_t *out_ids, int max_out)
{
    if (!g)
        return -1;
    if (!out_ids && max_out > 0) {
        graph_fail(g, TG_ERR_NULL, "graph_add_node: out_ids is NULL");
        return -1;
    }
    graph_type itype[GRAPH_MAX_NODE_IO], otype[GRAPH_MAX_NODE_IO];
    if (check_inputs(g, op, in, nin, itype) < 0)
        return -1;
    const graph_op_info *info = &graph_ops[op];
    graph_attrs a;
    if (info->attr_size) {
        graph_attrs_default(op, &a);
        if (attrs)
            memcpy(&a, attrs, info->attr_size);
    }
    int nout = 0;
    char msg[400];
    tg_status st = graph_infer(op, itype, nin, info->attr_size ? &a : NULL,
                               otype, GRAPH_MAX_NODE_IO, &nout, msg, sizeof msg);
    if (st != TG_OK) {
        graph_fail(g, st, "%s", msg);
        return -1;
    }
    return append_node(g, op, in, nin, &a, otype, nout, out_ids, max_out, -1);
}

int32_t graph_add_node_typed(graph *g, graph_op op, const int32_t *in, int nin,
                             const void *attrs, const graph_type *out_types,
                             int nout, int32_t *out_ids, int max_out, int32_t prov)
{
    if (!g)
        return -1;
    if ((!out_types && nout > 0) || (!out_ids && max_out > 0)) {
        graph_fail(g, TG_ERR_NULL, "graph_add_node_typed: out_types or out_ids is NULL");
        return -1;
    }
    if (check_inputs(g, op, in, nin, NULL) < 0)
        return -1;
    if (nout < 0 || nout > GRAPH_MAX_NODE_IO) {
        graph_fail(g, TG_ERR_ARG, "%s: %d outputs", graph_ops[op].name, nout);
        return -1;
    }
    if (prov >= g->nprovs) {
        graph_fail(g, TG_ERR_ARG, "%s: provenance %d does not exist", graph_ops[op].name, prov);
        return -1;
    }
    graph_attrs a;
    if (graph_ops[op].attr_size && !attrs) {
        graph_attrs_default(op, &a);
        attrs = &a;
    }
    return append_node(g, op, in, nin, attrs, out_types, nout, out_ids, max_out, prov);
}

int32_t graph_add_prov(graph *g, const char *file, int line, const char *func,
                       const graph_frame *frames, int nframes)
{
    if (!g)
        return -1;
    if (nframes < 0 || (nframes > 0 && !frames)) {
        graph_fail(g, TG_ERR_ARG, "graph_add_prov: %d frames at %p", nframes, (const void *)frames);
        return -1;
    }
    if (GROW(g, provs, PROVS, g->nprovs + 1) < 0 ||
        GROW(g, frames, FRAMES, (int64_t)g->nframes + nframes) < 0)
        return -1;
    graph_prov *p = &g->provs[g->nprovs];
    p->file = graph_intern(g, file ? file : "?", -1);
    p->func = graph_intern(g, func ? func : "?", -1);
    p->line = line;
    p->frame0 = g->nframes;
    p->nframes = nframes;
    for (int i = 0; i < nframes; i++) {
        graph_frame f = frames[i];
        f.func = f.func ? graph_intern(g, f.func, -1) : NULL;
        f.file = f.file ? graph_intern(g, f.file, -1) : NULL;
        g->frames[g->nframes++] = f;
    }
    if (!p->file || !p->func) {
        graph_fail(g, TG_ERR_NOMEM, "out of memory adding provenance");
        return -1;
    }
    return g->nprovs++;
}

tg_status graph_node_reserve_prov(graph *g, int32_t node, int32_t need)
{
    if (!g)
        return TG_ERR_NULL;
    if (node < 0 || node >= g->nnodes || need < 0)
        return graph_fail(g, TG_ERR_ARG, "graph_node_reserve_prov: bad node %d or count %d",
                          node, need);
    graph_node *n = &g->nodes[node];
    if (need <= n->nprov || need <= n->cap_prov)
        return TG_OK;
    /* Doubling: a list that grows one id at a time is copied O(log n)
     * times, and the old copies (in the arena until graph_free) add up to
     * less than the final list. */
    int32_t cap = n->cap_prov > 4 ? n->cap_prov : 4;
    while (cap < need) {
        if (cap > INT32_MAX / 2)
            return graph_fail(g, TG_ERR_ARG, "node %d: too many provenance ids (%d)", node,
                              need);
        cap *= 2;
    }
    int32_t *p = graph_alloc_ids(g, cap);
    if (!p)
        return graph_fail(g, TG_ERR_NOMEM, "out of memory adding provenance");
    if (n->nprov)
        memcpy(p, n->prov, sizeof(int32_t) * (size_t)n->nprov);
    n->prov = p;
    n->cap_prov = cap;
    return TG_OK;
}

tg_status graph_node_add_prov(graph *g, int32_t node, int32_t prov)
{
    if (!g)
        return TG_ERR_NULL;
    if (node < 0 || node >= g->nnodes || prov < 0 || prov >= g->nprovs)
        return graph_fail(g, TG_ERR_ARG, "graph_node_add_prov: bad ids %d, %d",
                          node, prov);
    graph_node *n = &g->nodes[node];
    if (n->nprov >= n->cap_prov) {
        if (n->nprov == INT32_MAX)
            return graph_fail(g, TG_ERR_ARG, "node %d: too many provenance ids", node);
        tg_status st = graph_node_reserve_prov(g, node, n->nprov + 1);
        if (st != TG_OK)
            return st;
    }
    n->prov[n->nprov++] = prov;
    return TG_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

tg_status graph_node_dedup_prov(graph *g, int32_t node)
{
    if (!g)
        return TG_ERR_NULL;
    if (node < 0 || node >= g->nnodes)
        return graph_fail(g, TG_ERR_ARG, "graph_node_dedup_prov: bad node %d", node);
    graph_node *n = &g->nodes[node];
    int32_t k = n->nprov, m = 0;
    if (k < 2)
        return TG_OK;
    if (k <= 16) { /* short lists: a scan */
        for (int32_t i = 0; i < k; i++) {
            int have = 0;
            for (int32_t j = 0; j < m && !have; j++)
                have = n->prov[j] == n->prov[i];
            if (!have)
                n->prov[m++] = n->prov[i];
        }
        n->nprov = m;
        return TG_OK;
    }
    /* (id, position) sorted: the first of each run of equal ids is the one
     * kept, at its position. */
    uint64_t *key = tg_malloc(sizeof *key * (size_t)k);
    unsigned char *keep = tg_calloc((size_t)k, 1);
    if (!key || !keep) {
        tg_free(key);
        tg_free(keep);
        return graph_fail(g, TG_ERR_NOMEM, "out of memory removing repeated provenance");
    }
    for (int32_t i = 0; i < k; i++)
        key[i] = (uint64_t)(uint32_t)n->prov[i] << 32 | (uint32_t)i;
    qsort(key, (size_t)k, sizeof *key, cmp_u64);
    for (int32_t i = 0; i < k; i++)
        if (i == 0 || key[i] >> 32 != key[i - 1] >> 32)
            keep[(uint32_t)key[i]] = 1;
    for (int32_t i = 0; i < k; i++)
        if (keep[i])
            n->prov[m++] = n->prov[i];
    n->nprov = m;
    tg_free(key);
    tg_free(keep);
    return TG_OK;
}

int32_t graph_add_guard(graph *g, const graph_guard *guard)
{
    if (!g)
        return -1;
    if (!guard) {
        graph_fail(g, TG_ERR_NULL, "graph_add_guard: no guard");
        return -1;
    }
    if (GROW(g, guards, GUARDS, g->nguards + 1) < 0)
        return -1;
    g->guards[g->nguards] = *guard;
    return g->nguards++;
}

const char *graph_prov_str(const graph *g, int32_t prov, char *buf,
                           size_t len)
{
    if (!g || prov < 0 || prov >= g->nprovs) {
        snprintf(buf, len, "unknown site");
        return buf;
    }
    const graph_prov *p = &g->provs[prov];
    const char *slash = strrchr(p->file, '/');
    snprintf(buf, len, "%s:%d %s", slash ? slash + 1 : p->file, p->line,
             p->func);
    return buf;
}

int32_t graph_live_nodes(const graph *g)
{
    if (!g)
        return 0;
    int32_t n = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        n += !(g->nodes[i].flags & GRAPH_NODE_DEAD);
    return n;
}
