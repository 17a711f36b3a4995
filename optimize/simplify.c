/*
 * simplify.c - algebraic simplification (-O1), in the style of ONNX
 * Runtime's graph rewrites and LLVM's instcombine: small local rules, each
 * a function that looks at one node and its producers and either leaves
 * them or replaces the node's value by a cheaper equal one.
 *
 * The rules (files):
 *   simplify.c        involutions (neg(neg x) -> x, reciprocal likewise),
 *                     idempotent ops (relu(relu x) -> relu x, abs, clip
 *                     with the same bounds, maximum(x, x) -> x), clip of a
 *                     clip -> one clip with the intersected bounds;
 *   simplify_arith.c  identities x+0, x-0, x*1, 1*x, x/1, pow(x,1) -> x;
 *                     pow(x,2) -> x*x; x*0 -> 0; (x+c1)+c2 -> x+(c1+c2)
 *                     and (x*c1)*c2 -> x*(c1*c2) with the constant folded;
 *                     a - neg(b) -> a + b, a + neg(b) -> a - b; common
 *                     factor a*c + b*c -> (a+b)*c (and a*c - b*c);
 *   simplify_shape.c  no-op reshape / flatten / squeeze / unsqueeze /
 *                     expand / slice / cast / identity transpose removed;
 *                     chains of views -> one reshape; transpose of a
 *                     transpose -> one transpose (or nothing); expand of
 *                     an expand -> one expand; a cast through a wider
 *                     type -> one cast;
 *   simplify_bcast.c  broadcast minimisation: an expand feeding a
 *                     broadcasting op is bypassed, and a constant operand
 *                     of a broadcasting op that repeats along some dims is
 *                     replaced by the smaller constant it repeats;
 *   simplify_grad.c   on gradient ops: relu_grad(max_pool2d_grad(g, y), y)
 *                     -> max_pool2d_grad(relu_grad(g, max_pool2d(y)), y),
 *                     the relu_grad on the pooled size (exact).
 *
 * Floating-point exactness.  Under plain IEEE rules only rewrites that give
 * the same bits for every input (NaN, inf, signed zeros included) fire:
 *   x + (-0) -> x, x - (+0) -> x, x * 1, x / 1, pow(x, 1) -> x (the pow
 *   kernel is exact for a scalar exponent 1 or 2, so pow(x, 2) -> x*x too),
 *   neg(neg x), relu/abs/clip idempotence, clip intersection, maximum(x,x),
 *   a -/+ neg(b) (IEEE defines a - b as a + (-b)), every shape rule.
 * opt_options.finite_math promises no inf or NaN and accepts what
 * -ffast-math accepts: signed zeros that do not matter and reassociation.
 * Only then, for f32:
 *   x + (+0) -> x   (x = -0 gives +0 before, -0 after),
 *   x - (-0) -> x   (the same),
 *   x * 0 -> 0      (NaN * 0 and inf * 0 are NaN; -x * 0 is -0),
 *   reciprocal(reciprocal x) -> x (1/(1/x) is off by an ulp for some x,
 *                   and 1/x overflows for |x| < 2^-128),
 *   (x+c1)+c2, (x*c1)*c2 reassociation and the common factor (rounding
 *                   changes; c1+c2 or (a+b) may overflow where the original
 *                   did not).
 * Integer arithmetic wraps (see eager/kernels_binary.c), so for i32/i64
 * all of these hold exactly and fire without finite_math.
 *
 * Every rule keeps types: a value is only replaced by one of the same
 * dtype, dims and dynamic dims (checked at the traced and a probe size,
 * see simplify.h); a node producing a graph output or a guarded value is
 * never rewritten.  Stats: removed = nodes dropped, rewritten = nodes
 * replaced by another form.
 */
#include <math.h>
#include <string.h>

#include "simplify.h"
#include "graph/graph_impl.h"

/* Forwards node's only output to v and deletes node (a removal). */
static int replace_by(opt_o1_state *s, int32_t node, int32_t v)
{
    opt_o1_forward(s, s->g->nodes[node].out[0], v);
    opt_o1_kill(s, node);
    s->ctx->stats->removed++;
    s->ctx->changed = 1;
    return 1;
}

/* The producer of node's input k if it runs op (and is live), else -1. */
static int32_t input_from(opt_o1_state *s, int32_t node, int k, graph_op op)
{
    int32_t p = opt_o1_producer(s, s->g->nodes[node].in[k]);
    return p >= 0 && s->g->nodes[p].op == op ? p : -1;
}

/* op(op(x)) -> x for involutions; reciprocal only under finite_math. */
static int rule_involution(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    graph_op op = g->nodes[node].op;
    if (!(graph_ops[op].props & GRAPH_PROP_INVOLUTION) || g->nodes[node].nin != 1)
        return 0;
    int32_t p = input_from(s, node, 0, op);
    if (p < 0 || !opt_o1_attrs_equal(op, tg_node_attrs(&g->nodes[p]),
                                     tg_node_attrs(&g->nodes[node])))
        return 0;
    int32_t x = opt_o1_find(s, g->nodes[p].in[0]);
    if (op != GRAPH_OP_neg && !s->ctx->opts->finite_math) {
        opt_explain(s->ctx, g, node,
                    "%s(%s(x)) kept: not exact in IEEE arithmetic "
                    "(allowed with finite_math)",
                    graph_ops[op].name, graph_ops[op].name);
        return 0;
    }
    if (!opt_o1_same_type(s, x, g->nodes[node].out[0]))
        return 0;
    return replace_by(s, node, x);
}

/* op(op(x)) -> op(x) for idempotent unary ops; maximum(x, x) -> x. */
static int rule_idempotent(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    if (!(graph_ops[n->op].props & GRAPH_PROP_IDEMPOTENT))
        return 0;
    if (n->nin == 2) {
        int32_t x = n->in[0];
        if (x != n->in[1] || !opt_o1_same_type(s, x, n->out[0]))
            return 0;
        return replace_by(s, node, x);
    }
    int32_t p = input_from(s, node, 0, n->op);
    if (p < 0 ||
        !opt_o1_attrs_equal(n->op, tg_node_attrs(&g->nodes[p]), tg_node_attrs(n)) ||
        !opt_o1_same_type(s, g->nodes[p].out[0], n->out[0]))
        return 0;
    return replace_by(s, node, g->nodes[p].out[0]);
}

/* Bitwise equality of floats, so that +0 and -0 differ. */
static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/*
 * clip(clip(x, a, b), c, d) -> clip(x, max(a,c), min(b,d)) when both
 * intervals are ordered and overlap: for x below, inside or above the
 * first interval both sides give the same value, and NaN passes both.
 * Bounds that are equal but of different zero signs are left alone.
 */
static int rule_clip_merge(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    if (g->nodes[node].op != GRAPH_OP_clip)
        return 0;
    int32_t p = input_from(s, node, 0, GRAPH_OP_clip);
    if (p < 0)
        return 0;
    const graph_clip_attrs *in = tg_node_attrs(&g->nodes[p]);
    const graph_clip_attrs *out = tg_node_attrs(&g->nodes[node]);
    float a = in->min, b = in->max, c = out->min, d = out->max;
    if (!(a <= b && c <= d) || (a == c && !same_bits(a, c)) || (b == d && !same_bits(b, d)))
        return 0;
    graph_clip_attrs m;
    memset(&m, 0, sizeof m);
    m.min = a > c ? a : c;
    m.max = b < d ? b : d;
    if (!(m.min <= m.max))
        return 0;
    int32_t x = opt_o1_find(s, g->nodes[p].in[0]), v;
    int32_t prov[2] = {node, p};
    if (opt_o1_add_node(s, GRAPH_OP_clip, &x, 1, &m, g->nodes[node].out[0], prov, 2, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    opt_o1_forward(s, g->nodes[node].out[0], v);
    opt_o1_kill(s, node);
    s->ctx->stats->rewritten++;
    s->ctx->changed = 1;
    return 1;
}

int opt_o1_simplify_unary(opt_o1_state *s, int32_t node)
{
    int r = rule_involution(s, node);
    if (r == 0)
        r = rule_idempotent(s, node);
    if (r == 0)
        r = rule_clip_merge(s, node);
    return r;
}

/* Rules may make nodes that other rules simplify again; this bounds the
 * new nodes of one run (each rule shrinks the graph or a chain, so it is
 * only a guard against a rule cycle). */
#define NEW_NODE_BUDGET(n0) (4 * (int64_t)(n0) + 1024)

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_o1_state s;
    if (opt_o1_init(&s, g, ctx) != TG_OK)
        return opt_o1_finish(&s);
    int32_t n0 = g->nnodes;
    for (int32_t i = 0; i < g->nnodes && s.st == TG_OK; i++) {
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        opt_o1_resolve_inputs(&s, i);
        /* a node that may fail at run time (opt_may_fail: one specialized
         * on the traced sizes) stays as it is, to fail as at -O0 */
        if (opt_o1_node_pinned(&s, i) || opt_may_fail(g, i) ||
            g->nnodes - n0 > NEW_NODE_BUDGET(n0))
            continue;
        int r = opt_o1_simplify_unary(&s, i);
        if (r == 0)
            r = opt_o1_simplify_arith(&s, i);
        if (r == 0)
            r = opt_o1_simplify_shape(&s, i);
        if (r == 0)
            r = opt_o1_simplify_bcast(&s, i);
        if (r == 0)
            r = opt_o1_simplify_grad(&s, i);
    }
    return opt_o1_finish(&s);
}

const opt_pass opt_pass_simplify = {"simplify", run};
