/*
 * simplify_grad.c - algebraic rules on the ops that gradient rules emit
 * (part of the simplify pass, -O1; see simplify.c for the exactness rules
 * every rule there keeps).
 *
 * relu_grad past max_pool2d_grad.  A relu followed by a max pool, as in
 * conv - BN - relu - pool, has the backward
 *     d = relu_grad(max_pool2d_grad(g, y), y),   y = relu(..), p = max_pool2d(y)
 * whose relu_grad runs over y's whole size.  max_pool2d_grad sends each
 * window's g to the window's first maximum m and leaves every other element
 * 0, and at m, y[m] is the window's p.  So the same d is
 *     max_pool2d_grad(relu_grad(g, p), y)
 * with relu_grad over p, kernel*kernel times smaller (a 2x2 pool: a
 * quarter), when the forward's p is in the graph anyway.  Exact, bit for
 * bit, for every input:
 *   - an element that is no window's maximum gets 0 both ways (relu_grad of
 *     0 is 0 whatever y is);
 *   - an element that is the maximum of windows w1..wk gets
 *     sum(g[wi]) if y > 0, else 0, before; sum(p[wi] > 0 ? g[wi] : 0)
 *     after, with every p[wi] = y: the same sum in the same order, or a
 *     sum of +0s, which is +0 as relu_grad's 0;
 *   - a window whose maximum is NaN, or whose first maximum is padding
 *     (-inf), passes nothing before; after, relu_grad gives it 0 (NaN > 0
 *     and -inf > 0 are false) and max_pool2d_grad still passes nothing.
 * The rule needs the max_pool2d_grad's result to have this one user, the
 * same x for both ops, and a live max_pool2d of x with the same kernel,
 * stride and padding (the forward's; a training step has it).
 */
#include <string.h>

#include "simplify.h"
#include "graph/graph_impl.h"

/* A live max_pool2d of x with gq's kernel, stride and padding (or a
 * batch_norm_train whose y is x with such a fused pool): the pooled value,
 * or -1. */
static int32_t find_pool(opt_o1_state *s, int32_t x, const graph_max_pool2d_grad_attrs *gq)
{
    graph *g = s->g;
    const graph_max_pool2d_attrs want = {gq->kernel, gq->stride, gq->padding};
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if (n->op == GRAPH_OP_max_pool2d && opt_o1_find(s, n->in[0]) == x &&
            opt_o1_attrs_equal(GRAPH_OP_max_pool2d, tg_node_attrs(n), &want))
            return n->out[0];
        if (n->op == GRAPH_OP_batch_norm_train && n->nout == 6 && n->out[0] == x) {
            const graph_batch_norm_train_attrs *a = tg_node_attrs(n);
            graph_max_pool2d_attrs p = {a->pool_kernel, a->pool_stride, a->pool_padding};
            if (opt_o1_attrs_equal(GRAPH_OP_max_pool2d, &p, &want))
                return n->out[5];
        }
    }
    return -1;
}

static int rule_relu_grad_pool(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    if (n->op != GRAPH_OP_relu_grad || n->nin != 2)
        return 0;
    int32_t a = opt_o1_find(s, n->in[0]), y = opt_o1_find(s, n->in[1]);
    int32_t q = opt_o1_producer(s, a);
    if (q < 0 || g->nodes[q].op != GRAPH_OP_max_pool2d_grad || opt_o1_uses(s, a) != 1 ||
        opt_o1_pinned(s, a) || opt_o1_find(s, g->nodes[q].in[1]) != y ||
        !opt_o1_same_type(s, a, n->out[0]))
        return 0;
    const graph_max_pool2d_grad_attrs *qa = tg_node_attrs(&g->nodes[q]);
    int32_t pv = find_pool(s, y, qa);
    if (pv < 0)
        return 0;
    int32_t gv = opt_o1_find(s, g->nodes[q].in[0]);
    if (!opt_o1_same_type(s, gv, pv))
        return 0;
    graph_max_pool2d_grad_attrs attrs = *qa; /* g->nodes may move below */
    int32_t prov[2] = {node, q};
    int32_t rin[2] = {gv, pv}, r;
    if (opt_o1_add_node(s, GRAPH_OP_relu_grad, rin, 2, NULL, gv, prov, 2, &r) < 0)
        return s->st == TG_OK ? 0 : -1;
    int32_t min[2] = {r, y}, d;
    int32_t out = g->nodes[node].out[0];
    if (opt_o1_add_node(s, GRAPH_OP_max_pool2d_grad, min, 2, &attrs, out, prov, 2, &d) < 0)
        return s->st == TG_OK ? 0 : -1;
    opt_o1_forward(s, out, d);
    opt_o1_kill(s, node);
    s->ctx->stats->rewritten++;
    s->ctx->changed = 1;
    return 1;
}

int opt_o1_simplify_grad(opt_o1_state *s, int32_t node)
{
    return rule_relu_grad_pool(s, node);
}
