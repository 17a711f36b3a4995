/*
 * simplify_arith.c - arithmetic rules of the simplify pass: identities,
 * x*0, pow(x,2), constant reassociation, negations absorbed into add/sub,
 * common factors.  Which hold exactly under IEEE and which need
 * opt_options.finite_math is listed in simplify.c.
 */
#include <math.h>
#include <string.h>

#include "simplify.h"
#include "graph/graph_impl.h"

static int is_f32(const opt_o1_state *s, int32_t v)
{
    return s->g->values[v].type.dtype == GRAPH_F32;
}

static int fired(opt_o1_state *s, int removed, int rewritten)
{
    s->ctx->stats->removed += removed;
    s->ctx->stats->rewritten += rewritten;
    s->ctx->changed = 1;
    return 1;
}

/* Replaces node's output by the new node new_node's first output. */
static int replace_by_new(opt_o1_state *s, int32_t node, int32_t v)
{
    opt_o1_forward(s, s->g->nodes[node].out[0], v);
    opt_o1_kill(s, node);
    return fired(s, 0, 1);
}

/*
 * Whether "x op c -> x" holds for the splat constant c (value z) on the
 * given side, and whether it needs finite_math (*gated).
 */
static int identity_const(graph_op op, int side, double z, int f32, int *gated)
{
    *gated = 0;
    switch (op) {
    case GRAPH_OP_add: /* x + (-0) is exact; x + (+0) turns -0 into +0 */
        *gated = f32 && z == 0 && !signbit(z);
        return z == 0;
    case GRAPH_OP_sub: /* x - (+0) is exact; x - (-0) = x + (+0) */
        *gated = f32 && z == 0 && signbit(z);
        return side == 1 && z == 0;
    case GRAPH_OP_mul: return z == 1;
    case GRAPH_OP_div:
    case GRAPH_OP_pow: return side == 1 && z == 1;
    default: return 0;
    }
}

/* x+0, x-0, x*1, 1*x, x/1, pow(x,1) -> x. */
static int rule_identity(opt_o1_state *s, int32_t node)
{
    const graph_node *n = &s->g->nodes[node];
    if (n->nin != 2 || n->nout != 1)
        return 0;
    for (int side = 1; side >= 0; side--) {
        double z;
        int gated;
        int32_t c = n->in[side], x = n->in[1 - side];
        if (!opt_o1_const_splat(s, c, &z) ||
            !identity_const(n->op, side, z, is_f32(s, x), &gated))
            continue;
        if (!opt_o1_same_type(s, x, n->out[0]))
            continue;
        if (gated && !s->ctx->opts->finite_math) {
            opt_explain(s->ctx, s->g, node,
                        "%s with %g kept: changes the sign of a zero "
                        "result (allowed with finite_math)",
                        graph_ops[n->op].name, z);
            continue;
        }
        opt_o1_forward(s, n->out[0], x);
        opt_o1_kill(s, node);
        return fired(s, 1, 0);
    }
    return 0;
}

/*
 * x*0 -> 0 (integers always; f32 only with finite_math: NaN*0, inf*0 are
 * NaN).  The zero is a 0-d constant expanded to the result's shape, which
 * fold then materializes within its size limit; dynamic results keep the
 * mul (a constant has fixed dims).
 */
static int rule_mul_zero(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    double z;
    if (n->op != GRAPH_OP_mul)
        return 0;
    int side = opt_o1_const_splat(s, n->in[1], &z) && z == 0   ? 1
               : opt_o1_const_splat(s, n->in[0], &z) && z == 0 ? 0
                                                               : -1;
    if (side < 0)
        return 0;
    int32_t out = n->out[0], c = n->in[side];
    if (g->values[out].dyn)
        return 0;
    if (is_f32(s, out) && !s->ctx->opts->finite_math) {
        opt_explain(s->ctx, g, node,
                    "x*0 kept: NaN or inf times 0 is NaN (allowed "
                    "with finite_math)");
        return 0;
    }
    if (opt_o1_same_type(s, c, out)) {
        opt_o1_forward(s, out, c);
        opt_o1_kill(s, node);
        return fired(s, 1, 0);
    }
    graph_type t = {g->values[out].type.dtype, 0, {0}};
    int64_t zero[1] = {0}; /* all-zero bytes are 0 in every dtype */
    int32_t k = opt_o1_add_const(s, &t, zero), v;
    if (k < 0)
        return -1;
    graph_expand_attrs ea;
    memset(&ea, 0, sizeof ea);
    ea.shape.n = g->values[out].type.ndim;
    memcpy(ea.shape.v, g->values[out].type.dim, sizeof(int64_t) * (size_t)ea.shape.n);
    if (opt_o1_add_node(s, GRAPH_OP_expand, &k, 1, &ea, out, &node, 1, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    return replace_by_new(s, node, v);
}

/* pow(x, 2) -> x*x (the kernel's pow is exact there too). */
static int rule_pow2(opt_o1_state *s, int32_t node)
{
    const graph_node *n = &s->g->nodes[node];
    double z;
    if (n->op != GRAPH_OP_pow || !opt_o1_const_splat(s, n->in[1], &z) || z != 2)
        return 0;
    int32_t in[2] = {n->in[0], n->in[0]}, v;
    if (opt_o1_add_node(s, GRAPH_OP_mul, in, 2, NULL, n->out[0], &node, 1, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    return replace_by_new(s, node, v);
}

/* The producer of v if it runs op, is live, and v is used only once. */
static int32_t sole_producer(opt_o1_state *s, int32_t v, graph_op op)
{
    int32_t p = opt_o1_producer(s, v);
    if (p < 0 || s->g->nodes[p].op != op || opt_o1_uses(s, v) != 1 || opt_o1_pinned(s, v))
        return -1;
    return p;
}

/* The constant operand of a binary node (side in *side), or -1. */
static int32_t const_side(opt_o1_state *s, int32_t node, int *side)
{
    const graph_node *n = &s->g->nodes[node];
    for (*side = 1; *side >= 0; (*side)--)
        if (opt_o1_is_const(s, n->in[*side]) && !opt_o1_is_const(s, n->in[1 - *side]))
            return n->in[*side];
    return -1;
}

/* (x+c1)+c2 -> x+(c1+c2), (x*c1)*c2 -> x*(c1*c2), with c1 op c2 folded. */
static int rule_reassoc(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    graph_op op = g->nodes[node].op;
    int side, pside;
    if (op != GRAPH_OP_add && op != GRAPH_OP_mul)
        return 0;
    int32_t c2 = const_side(s, node, &side);
    int32_t p = c2 < 0 ? -1 : sole_producer(s, g->nodes[node].in[1 - side], op);
    int32_t c1 = p < 0 ? -1 : const_side(s, p, &pside);
    if (c1 < 0)
        return 0;
    if (is_f32(s, c1) && !s->ctx->opts->finite_math) {
        opt_explain(s->ctx, g, node,
                    "constants not reassociated: rounding would "
                    "change (allowed with finite_math)");
        return 0;
    }
    int64_t n1 = graph_type_numel(&g->values[c1].type);
    int64_t n2 = graph_type_numel(&g->values[c2].type);
    int32_t x = opt_o1_find(s, g->nodes[p].in[1 - pside]);
    graph_type it[2] = {g->values[x].type, {0}}, pt[2];
    if (graph_broadcast(&g->values[c1].type, &g->values[c2].type, &it[1]) != TG_OK ||
        graph_type_numel(&it[1]) > (n1 > n2 ? n1 : n2))
        return 0; /* the combined constant would be bigger than both */
    it[1].dtype = g->values[c1].type.dtype; /* graph_broadcast sets only dims */
    opt_o1_probe_type(s, x, &pt[0]);
    pt[1] = it[1];
    if (!opt_o1_node_ok(s, op, it, pt, 2, NULL, g->nodes[node].out[0]))
        return 0; /* checked first: the folded constant is not made in vain */
    int32_t cin[2] = {c1, c2}, c12, nout;
    char err[256];
    size_t nb = (size_t)graph_type_numel(&it[1]) * graph_dtype_size(it[1].dtype);
    if (!opt_fold_take(s->ctx, nb))
        return 0; /* past the call's folding budget: left as it is */
    tg_status st = opt_fold_eval(g, op, cin, 2, NULL, &c12, 1, &nout, err, sizeof err);
    if (st != TG_OK)
        opt_fold_give(s->ctx, nb);
    if (st == TG_ERR_NOMEM || opt_o1_grow(s) != 0) {
        s->st = opt_fail(s->ctx, g, node, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    if (st != TG_OK)
        return 0;
    int32_t in[2] = {x, c12}, prov[2] = {node, p}, v;
    if (opt_o1_add_node(s, op, in, 2, NULL, g->nodes[node].out[0], prov, 2, &v) < 0)
        return s->st == TG_OK ? 0 : -1;
    opt_o1_forward(s, g->nodes[node].out[0], v);
    opt_o1_kill(s, node);
    opt_o1_kill(s, p);
    return fired(s, 1, 1);
}

/*
 * a + neg(b) -> a - b, neg(a) + b -> b - a, a - neg(b) -> a + b, in place
 * (IEEE defines a - b as a + (-b): exact, signed zeros and NaN included;
 * integers wrap).  The neg's provenance joins the node.
 */
static int rule_neg_absorb(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    graph_node *n = &g->nodes[node];
    if (n->op != GRAPH_OP_add && n->op != GRAPH_OP_sub)
        return 0;
    for (int k = 1; k >= 0; k--) {
        int32_t q = opt_o1_producer(s, n->in[k]);
        if (q < 0 || g->nodes[q].op != GRAPH_OP_neg || (k == 0 && n->op == GRAPH_OP_sub))
            continue;
        int32_t b = opt_o1_find(s, g->nodes[q].in[0]);
        if (!graph_type_eq(&g->values[b].type, &g->values[n->in[k]].type))
            continue;
        if (opt_merge_prov(g, node, q) != TG_OK) {
            s->st = opt_fail(s->ctx, g, node, TG_ERR_NOMEM, "out of memory");
            return -1;
        }
        n = &g->nodes[node];
        if (k == 0) { /* neg(a) + b -> b - a */
            opt_o1_set_input(s, node, 0, n->in[1]);
            opt_o1_set_input(s, node, 1, b);
            g->nodes[node].op = GRAPH_OP_sub;
        } else {
            opt_o1_set_input(s, node, 1, b);
            g->nodes[node].op = n->op == GRAPH_OP_add ? GRAPH_OP_sub : GRAPH_OP_add;
        }
        return fired(s, 0, 1);
    }
    return 0;
}

/*
 * a*c + b*c -> (a+b)*c and a*c - b*c -> (a-b)*c, when both products are
 * used only there (so a node goes).  f32 only with finite_math (rounding,
 * and a+b may overflow where a*c + b*c did not).
 */
static int rule_factor(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    graph_op op = g->nodes[node].op;
    if ((op != GRAPH_OP_add && op != GRAPH_OP_sub) ||
        g->nodes[node].in[0] == g->nodes[node].in[1])
        return 0;
    int32_t m1 = sole_producer(s, g->nodes[node].in[0], GRAPH_OP_mul);
    int32_t m2 = m1 < 0 ? -1 : sole_producer(s, g->nodes[node].in[1], GRAPH_OP_mul);
    if (m2 < 0)
        return 0;
    int32_t x[2] = {opt_o1_find(s, g->nodes[m1].in[0]), opt_o1_find(s, g->nodes[m1].in[1])};
    int32_t y[2] = {opt_o1_find(s, g->nodes[m2].in[0]), opt_o1_find(s, g->nodes[m2].in[1])};
    int i = 0, j = 0;
    while (i < 2 && x[i] != y[j]) { /* find a common operand x[i] == y[j] */
        j ^= 1;
        i += j == 0;
    }
    if (i == 2)
        return 0;
    if (is_f32(s, x[0]) && !s->ctx->opts->finite_math) {
        opt_explain(s->ctx, g, node,
                    "common factor not extracted: rounding would "
                    "change (allowed with finite_math)");
        return 0;
    }
    int32_t ab[2] = {x[1 - i], y[1 - j]}, prov[3] = {node, m1, m2}, t, v;
    int32_t tn = opt_o1_add_node(s, op, ab, 2, NULL, -1, prov, 3, &t);
    if (tn < 0)
        return s->st == TG_OK ? 0 : -1;
    int32_t tc[2] = {t, x[i]};
    if (opt_o1_add_node(s, GRAPH_OP_mul, tc, 2, NULL, g->nodes[node].out[0], prov, 3, &v) < 0) {
        opt_o1_kill(s, tn);
        return s->st == TG_OK ? 0 : -1;
    }
    opt_o1_forward(s, g->nodes[node].out[0], v);
    opt_o1_kill(s, node);
    opt_o1_kill(s, m1);
    opt_o1_kill(s, m2);
    return fired(s, 1, 1);
}

int opt_o1_simplify_arith(opt_o1_state *s, int32_t node)
{
    static int (*const rules[])(opt_o1_state *, int32_t) = {
        rule_identity, rule_mul_zero, rule_pow2, rule_reassoc, rule_neg_absorb, rule_factor,
    };
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        int got = rules[r](s, node);
        if (got != 0)
            return got;
    }
    return 0;
}
