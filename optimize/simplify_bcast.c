/*
 * simplify_bcast.c - broadcast minimisation in the simplify pass.
 *
 * A broadcasting op (GRAPH_PROP_BROADCAST: add, mul, where, ...) repeats
 * its operands itself, so an explicit broadcast in front of it is waste:
 *   - an operand made by expand is replaced by the expand's input when the
 *     op's result keeps its type (the expand goes once nothing else reads
 *     it);
 *   - a constant operand that repeats along some dims (a bias stored as
 *     [64,128] with equal rows) is replaced by the smaller constant it
 *     repeats ([128]); a dim is only shrunk where another operand gives
 *     the result its size, and leading dims are only dropped while another
 *     operand keeps the result's rank.
 * Both edit the node in place; its result is bit-identical.
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "simplify.h"
#include "../graph/graph_impl.h"

static int fired(opt_o1_state *s)
{
    s->ctx->stats->rewritten++;
    s->ctx->changed = 1;
    return 1;
}

/* Operands made by expand are bypassed. */
static int rule_expand_operand(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    for (int k = 0; k < g->nodes[node].nin; k++) {
        int32_t p = opt_o1_producer(s, g->nodes[node].in[k]);
        if (p < 0 || g->nodes[p].op != GRAPH_OP_expand)
            continue;
        int32_t x = opt_o1_find(s, g->nodes[p].in[0]);
        if (!opt_o1_rewire_ok(s, node, k, x))
            continue;
        opt_o1_set_input(s, node, k, x);
        return fired(s);
    }
    return 0;
}

/* Nonzero if the elements of c (type t) do not change along dim d. */
static int repeats_along(const graph_type *t, const unsigned char *c, int d)
{
    size_t es = graph_dtype_size(t->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; i++)
        outer *= t->dim[i];
    for (int i = d + 1; i < t->ndim; i++)
        inner *= t->dim[i];
    size_t block = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++) {
        const unsigned char *first = c + (size_t)(o * t->dim[d]) * block;
        for (int64_t i = 1; i < t->dim[d]; i++)
            if (memcmp(first, first + (size_t)i * block, block) != 0)
                return 0;
    }
    return 1;
}

/*
 * The type the constant operand k of node can shrink to: dims it repeats
 * along become 1 where another operand has the result's size there, then
 * leading 1s go while another operand has at least that rank.
 */
static graph_type shrunk_type(opt_o1_state *s, int32_t node, int k)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    const graph_value *c = &g->values[n->in[k]];
    const graph_type *ot = &g->values[n->out[0]].type;
    graph_type t = c->type;
    int other_rank = 0;
    for (int j = 0; j < n->nin; j++)
        if (j != k && g->values[n->in[j]].type.ndim > other_rank)
            other_rank = g->values[n->in[j]].type.ndim;
    for (int d = 0; d < t.ndim; d++) {
        int od = ot->ndim - t.ndim + d, given = 0;
        for (int j = 0; j < n->nin && !given; j++) {
            const graph_type *it = &g->values[n->in[j]].type;
            int jd = it->ndim - ot->ndim + od;
            given = j != k && jd >= 0 && it->dim[jd] == ot->dim[od];
        }
        if (t.dim[d] > 1 && given && repeats_along(&c->type, c->data, d))
            t.dim[d] = 1;
    }
    int lead = 0; /* another operand keeps the rank: leading 1s may go */
    while (other_rank >= ot->ndim && lead < t.ndim && t.dim[lead] == 1)
        lead++;
    memmove(t.dim, t.dim + lead, sizeof(int64_t) * (size_t)(t.ndim - lead));
    t.ndim -= lead;
    return t;
}

/* Copies the elements of c (type from) at index 0 of the shrunk dims. */
static void gather_shrunk(const graph_type *from, const unsigned char *c, const graph_type *to,
                          unsigned char *dst)
{
    size_t es = graph_dtype_size(from->dtype);
    int lead = from->ndim - to->ndim;
    int64_t stride[GRAPH_MAX_DIMS], idx[GRAPH_MAX_DIMS] = {0}, st = 1;
    for (int d = from->ndim - 1; d >= 0; d--) {
        stride[d] = st;
        st *= from->dim[d];
    }
    int64_t n = graph_type_numel(to);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < to->ndim; d++)
            off += idx[d] * stride[lead + d];
        memcpy(dst + (size_t)i * es, c + (size_t)off * es, es);
        for (int d = to->ndim - 1; d >= 0 && ++idx[d] == to->dim[d]; d--)
            idx[d] = 0;
    }
}

/* Constant operands that repeat are replaced by what they repeat. */
static int rule_shrink_const(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    for (int k = 0; k < g->nodes[node].nin; k++) {
        int32_t cv = g->nodes[node].in[k];
        if (!opt_o1_is_const(s, cv) || graph_type_numel(&g->values[cv].type) < 2)
            continue;
        graph_type t = shrunk_type(s, node, k);
        if (graph_type_numel(&t) == graph_type_numel(&g->values[cv].type) ||
            !opt_o1_rewire_type_ok(s, node, k, &t, &t))
            continue;
        unsigned char *data = tg_malloc(graph_type_numel(&t) * graph_dtype_size(t.dtype) + 1);
        if (!data) {
            s->st = opt_fail(s->ctx, g, node, TG_ERR_NOMEM, "out of memory");
            return -1;
        }
        gather_shrunk(&g->values[cv].type, g->values[cv].data, &t, data);
        int32_t small = opt_o1_add_const(s, &t, data);
        tg_free(data);
        if (small < 0)
            return -1;
        opt_o1_set_input(s, node, k, small);
        return fired(s);
    }
    return 0;
}

int opt_o1_simplify_bcast(opt_o1_state *s, int32_t node)
{
    if (!(graph_ops[s->g->nodes[node].op].props & GRAPH_PROP_BROADCAST) ||
        s->g->nodes[node].nout != 1)
        return 0;
    int r = rule_expand_operand(s, node);
    if (r == 0)
        r = rule_shrink_const(s, node);
    return r;
}
