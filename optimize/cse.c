/*
 * cse.c - common subexpression elimination (-O1).
 *
 * Nodes are visited in order with a hash table keyed by (op, input value
 * ids, attribute bytes): a node whose key is already there computes the
 * same values as the earlier node, so its outputs are forwarded to the
 * earlier node's and it goes; its provenance joins the survivor's.  Inputs
 * are resolved through earlier merges first, so whole duplicated chains
 * collapse in one run.  For commutative ops the two input ids are sorted
 * in the key (add(a,b) == add(b,a)).  Attributes are keyed field by field
 * (opt_o1_attrs_key), not as raw struct bytes, so list entries past a list's
 * length cannot keep equal nodes apart.  Only GRAPH_PROP_PURE ops merge,
 * and never a random one (GRAPH_PROP_RANDOM): each keeps its own draw.
 *
 * Constants of the same dtype, dims and bytes merge too (hash first, then
 * the bytes).  Params do not: each stays a separately swappable input.
 *
 * A node whose result is a graph output or guarded is kept; when it
 * duplicates an earlier unpinned node, the earlier one goes instead (the
 * later node's inputs are the same, so it can move up; the manager
 * re-sorts the graph after the pass).
 *
 * Stats: removed = nodes merged away; bytes = constant bytes merged away.
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/tg_hash.h"
#include "simplify.h"
#include "../graph/graph_impl.h"

typedef struct cse_entry {
    UT_hash_handle hh;
    int32_t id; /* node, or constant value */
    unsigned len;
    unsigned char key[];
} cse_entry;

#define KEY_MAX 4096

typedef struct cse_state {
    opt_o1_state o1;
    cse_entry *table;
} cse_state;

static void table_free(cse_state *c)
{
    cse_entry *e, *tmp;
    HASH_ITER(hh, c->table, e, tmp)
    {
        HASH_DEL(c->table, e);
        tg_free(e);
    }
}

/* Finds key; if absent adds it for id and returns NULL.  *err on OOM. */
static cse_entry *find_or_add(cse_state *c, const unsigned char *key, unsigned len, int32_t id,
                              int *err)
{
    cse_entry *e;
    HASH_FIND(hh, c->table, key, len, e);
    if (e)
        return e;
    e = tg_malloc(sizeof *e + len);
    if (!e) {
        *err = 1;
        return NULL;
    }
    e->id = id;
    e->len = len;
    memcpy(e->key, key, len);
    tg_hash_oom = 0;
    HASH_ADD_KEYPTR(hh, c->table, e->key, len, e);
    if (tg_hash_oom) {
        tg_free(e);
        *err = 1;
    }
    return NULL;
}

static int put(unsigned char *buf, unsigned *len, const void *p, size_t n)
{
    if (*len + n > KEY_MAX)
        return -1;
    memcpy(buf + *len, p, n);
    *len += (unsigned)n;
    return 0;
}

/* The key of a constant: 'C', dtype, dims, data hash. */
static unsigned const_key(const graph_value *v, unsigned char *buf)
{
    unsigned len = 0;
    put(buf, &len, "C", 1);
    put(buf, &len, &v->type.dtype, sizeof v->type.dtype);
    put(buf, &len, &v->type.ndim, sizeof v->type.ndim);
    put(buf, &len, v->type.dim, sizeof(int64_t) * (size_t)v->type.ndim);
    put(buf, &len, &v->hash, sizeof v->hash);
    return len;
}

/* Merges constants with equal bytes; one of each stays. */
static void merge_consts(cse_state *c)
{
    opt_o1_state *s = &c->o1;
    graph *g = s->g;
    unsigned char key[KEY_MAX];
    for (int32_t v = 0; v < g->nvalues && s->st == TG_OK; v++) {
        const graph_value *val = &g->values[v];
        if (!opt_o1_is_const(s, v) || (opt_o1_uses(s, v) == 0 && !opt_o1_pinned(s, v)))
            continue;
        int err = 0;
        cse_entry *e = find_or_add(c, key, const_key(val, key), v, &err);
        if (err)
            s->st = opt_fail(s->ctx, g, -1, TG_ERR_NOMEM, "out of memory");
        if (!e || memcmp(g->values[e->id].data, val->data, graph_value_nbytes(val)) != 0)
            continue; /* new, or a hash collision: keep both */
        if (!opt_o1_pinned(s, v)) {
            opt_o1_forward(s, v, e->id);
        } else if (!opt_o1_pinned(s, e->id)) {
            opt_o1_forward(s, e->id, v);
            e->id = v;
        } else {
            continue;
        }
        s->ctx->changed = 1;
    }
}

/* The key of a node: 'N', op, input ids (sorted if commutative), attrs. */
static int node_key(opt_o1_state *s, int32_t node, unsigned char *buf, unsigned *len)
{
    const graph_node *n = &s->g->nodes[node];
    int32_t op = n->op, in[GRAPH_MAX_NODE_IO];
    memcpy(in, n->in, sizeof *in * (size_t)n->nin);
    if ((graph_ops[n->op].props & GRAPH_PROP_COMMUTATIVE) && n->nin == 2 && in[0] > in[1]) {
        in[0] = n->in[1];
        in[1] = n->in[0];
    }
    *len = 0;
    if (put(buf, len, "N", 1) || put(buf, len, &op, sizeof op) ||
        put(buf, len, &n->nin, sizeof n->nin) || put(buf, len, in, sizeof *in * (size_t)n->nin))
        return -1;
    int alen = opt_o1_attrs_key(n->op, tg_node_attrs(n), buf + *len, KEY_MAX - *len);
    if (alen < 0)
        return -1;
    *len += (unsigned)alen;
    return 0;
}

/* Replaces the outputs of node gone by those of node kept. */
static int merge_into(cse_state *c, int32_t gone, int32_t kept)
{
    opt_o1_state *s = &c->o1;
    graph *g = s->g;
    for (int k = 0; k < g->nodes[gone].nout; k++)
        opt_o1_forward(s, g->nodes[gone].out[k], g->nodes[kept].out[k]);
    opt_o1_kill(s, gone);
    if (opt_merge_prov(g, kept, gone) != TG_OK) {
        s->st = opt_fail(s->ctx, g, kept, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    s->ctx->stats->removed++;
    s->ctx->changed = 1;
    return 0;
}

static void cse_node(cse_state *c, int32_t node)
{
    opt_o1_state *s = &c->o1;
    graph *g = s->g;
    unsigned char key[KEY_MAX];
    unsigned len;
    const graph_node *n = &g->nodes[node];
    if (!(graph_ops[n->op].props & GRAPH_PROP_PURE) ||
        (graph_ops[n->op].props & GRAPH_PROP_RANDOM) || n->nout == 0 ||
        node_key(s, node, key, &len) != 0)
        return;
    int err = 0;
    cse_entry *e = find_or_add(c, key, len, node, &err);
    if (err) {
        s->st = opt_fail(s->ctx, g, node, TG_ERR_NOMEM, "out of memory");
        return;
    }
    if (!e)
        return;
    if (!opt_o1_node_pinned(s, node)) {
        merge_into(c, node, e->id);
    } else if (!opt_o1_node_pinned(s, e->id)) {
        if (merge_into(c, e->id, node) == 0)
            e->id = node;
    } else {
        opt_explain(s->ctx, g, node,
                    "duplicate of node %d kept: both results are "
                    "graph outputs or guarded",
                    e->id);
    }
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    cse_state c = {.table = NULL};
    if (opt_o1_init(&c.o1, g, ctx) != TG_OK)
        return opt_o1_finish(&c.o1);
    merge_consts(&c);
    table_free(&c);
    for (int32_t i = 0; i < g->nnodes && c.o1.st == TG_OK; i++) {
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        opt_o1_resolve_inputs(&c.o1, i);
        cse_node(&c, i);
    }
    table_free(&c);
    return opt_o1_finish(&c.o1);
}

const opt_pass opt_pass_cse = {"cse", run};
