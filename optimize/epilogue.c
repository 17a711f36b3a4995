/*
 * epilogue.c - fuses what follows a linear or conv2d into its kernel
 * (-O2): linear_ep / conv2d_ep run the steps as oneDNN post-ops on the
 * output while it is in cache, instead of one more pass over memory each.
 *
 * From a linear / conv2d (or a linear_ep / conv2d_ep, whose list grows)
 * the pass follows the chain of sole users, absorbing in order:
 *   - a bias-like add, first and only while nothing else was absorbed: an
 *     add of a [N] (linear; also [1,..,1,N] when constant) or [C,1,1] /
 *     [1,C,1,1] constant (conv), or of a one-element constant (a splat:
 *     every channel the same bias), that does not grow the output.  It becomes
 *     the bias: a linear without bias takes a [N] value of any kind as
 *     its bias input; otherwise both must be constants and are summed
 *     into a new one.
 *   - a residual add: an add whose other operand has exactly the output's
 *     type (dynamic dims tied to the same symbols): GRAPH_POST_ADD.  One
 *     residual slot, so at most one.
 *   - activations: relu, gelu, sigmoid, tanh, silu, leaky_relu (one slope
 *     per node: a second leaky_relu must have the same alpha), clip (one
 *     pair of bounds per node: a second clip must have the same ones).
 *     The kernels run an epilogue with a clip in C after oneDNN (whose
 *     clip sends NaN to the lower bound, where clip lets it pass), so the
 *     fused node gives the unfused values bit for bit, NaN included.
 *   - hardsigmoid and hardswish written as several ops (one step each,
 *     GRAPH_POST_HARDSIGMOID / _HARDSWISH): h = clip(x * (1/6) + 0.5, 0,
 *     1) as ONNX's HardSigmoid (alpha 1/6) and HardSwish import, also
 *     with x / 6; h = clip(x + 3, 0, 6) / 6 (or * (1/6): PyTorch's
 *     relu6(x + 3) / 6); hardswish is x * h (either order), x then
 *     having exactly the two users.  The x * (1/6) form gives the
 *     unfused bits (the step computes it in that order: HARDSIGMOID in C,
 *     HARDSWISH as oneDNN's hardswish within rounding), the others differ
 *     in rounding only; NaN and the infinities as the unfused ops.
 * Each value the chain passes through must have that one user and not be
 * pinned; the value the fused node replaces may be a graph output, not a
 * guarded value (see fuse_util.h).  At most 16 steps (the post list).
 * A chain of only a bias add gives linear / conv2d with that bias;
 * anything else gives the _ep op (bias zeros when there was none).
 * Provenance: the linear/conv's first, then every absorbed node's.
 *
 * Training graphs: a relu that alone reads a batch_norm_train's y (and y
 * is not pinned) becomes the batch norm's relu attribute, applied in the
 * pass that writes y (the same bits: eager/kernels_train.c); its output's
 * uses move to y.  Its backward reads y (relu_grad), not the batch norm's.
 * Then a max_pool2d of that y becomes the batch norm's output 5 (its
 * pool_kernel / pool_stride / pool_padding attributes): each plane is
 * pooled right after it is written, while it is in cache, instead of a
 * pass that reads y again; y stays an output (max_pool2d_grad reads it).
 * In the backward, a batch_norm_train_grad whose dy is a max_pool2d_grad
 * that nothing else reads becomes batch_norm_pool_grad: the pool's input
 * gradient made a block of channels at a time in cache, not a tensor
 * written and read back (the same bits).
 *
 * Declined candidates are explained: "conv output has 2 users",
 * "residual shape differs ([2,8] vs [8,1])", "activation abs not
 * supported", "second residual add: one residual slot", ...
 */
#include <math.h>
#include <stdlib.h>

#include "../graph/alloc.h"
#include "fuse_util.h"
#include "../graph/graph_impl.h"

#define CHAIN_MAX GRAPH_MAX_INTS
#define NODES_MAX (4 * CHAIN_MAX) /* a hardswish step absorbs 4 nodes */

typedef struct chain {
    int32_t p;  /* the linear / conv node */
    int conv;   /* conv2d family */
    graph_ints post;
    graph_post_prm prm;
    int leaky;        /* post has a LEAKY_RELU step: prm.alpha is taken */
    int clip;         /* post has a CLIP step: the bounds are taken */
    int32_t bias_add; /* value added as bias, or -1 */
    int32_t res;      /* residual, or -1 */
    int32_t node[NODES_MAX + 1]; /* absorbed nodes, in order */
    int n;
    int32_t last; /* the value the fused node replaces */
} chain;

static int64_t post_code(graph_op op)
{
    switch (op) {
    case GRAPH_OP_relu: return GRAPH_POST_RELU;
    case GRAPH_OP_gelu: return GRAPH_POST_GELU;
    case GRAPH_OP_sigmoid: return GRAPH_POST_SIGMOID;
    case GRAPH_OP_tanh: return GRAPH_POST_TANH;
    case GRAPH_OP_silu: return GRAPH_POST_SILU;
    case GRAPH_OP_leaky_relu: return GRAPH_POST_LEAKY_RELU;
    case GRAPH_OP_clip: return GRAPH_POST_CLIP;
    default: return 0;
    }
}

static int has_post(const chain *c, int64_t code)
{
    for (int i = 0; i < c->post.n; i++)
        if (c->post.v[i] == code)
            return 1;
    return 0;
}

/* The chain's start: p's kind, and the steps an _ep node already has. */
static int chain_start(const graph *g, int32_t p, chain *c)
{
    const graph_node *n = &g->nodes[p];
    memset(c, 0, sizeof *c);
    c->p = p;
    c->bias_add = c->res = -1;
    c->last = n->out[0];
    c->prm = (graph_post_prm){0.0f, -INFINITY, INFINITY};
    switch (n->op) {
    case GRAPH_OP_linear: return 1;
    case GRAPH_OP_conv2d: c->conv = 1; return 1;
    case GRAPH_OP_linear_ep: {
        const graph_linear_ep_attrs *at = tg_node_attrs(n);
        c->post = at->post, c->prm = GRAPH_POST_PRM(at);
        break;
    }
    case GRAPH_OP_conv2d_ep: {
        const graph_conv2d_ep_attrs *at = tg_node_attrs(n);
        c->post = at->post, c->prm = GRAPH_POST_PRM(at), c->conv = 1;
        break;
    }
    default: return 0;
    }
    c->leaky = has_post(c, GRAPH_POST_LEAKY_RELU);
    c->clip = has_post(c, GRAPH_POST_CLIP);
    c->res = n->nin > 3 ? n->in[3] : -1;
    return 1;
}

/* Nonzero if a node of op could join a chain (worth explaining). */
static int fusable_op(graph_op op)
{
    return op == GRAPH_OP_add || post_code(op) != 0;
}

/* The channels of the chain's output: a bias has one value for each. */
static int64_t chain_channels(const graph *g, const chain *c)
{
    const graph_type *y = &g->values[c->last].type;
    return c->conv ? y->dim[1] : y->dim[y->ndim - 1];
}

/* Nonzero if value b, added to the chain's output, is a bias. */
static int bias_like(const graph *g, const chain *c, int32_t b)
{
    const graph_node *p = &g->nodes[c->p];
    const graph_type *t = &g->values[b].type, *y = &g->values[c->last].type;
    int64_t ch = chain_channels(g, c);
    int direct = !c->conv && p->nin < 3 && t->ndim == 1; /* becomes the bias input */
    if (g->values[b].dyn || t->ndim > y->ndim)
        return 0;
    /* One value for every channel: a constant that the importer or the
     * folder made a scalar (PyTorch's zero-initialized biases, exported
     * as an add of a [N] of zeros, fold to a splat), summed in below. */
    if (graph_type_numel(t) == 1 && ch != 1)
        return fu_const_f32(g, b) && (p->nin < 3 || fu_const_f32(g, p->in[2]));
    if (graph_type_numel(t) != ch)
        return 0;
    if (!direct && (!fu_const_f32(g, b) || (p->nin > 2 && !fu_const_f32(g, p->in[2]))))
        return 0;
    if (!c->conv) /* [N] or [1,..,1,N] */
        return t->ndim >= 1 && t->dim[t->ndim - 1] == ch;
    /* [C,1,1] or [1,C,1,1] */
    return (t->ndim == 3 || t->ndim == 4) && t->dim[t->ndim - 3] == ch;
}

static void absorb(chain *c, const graph *g, int32_t node)
{
    c->node[c->n++] = node;
    c->last = g->nodes[node].out[0];
}

/* An add after the chain: bias, residual, or a reason to stop. */
static int take_add(const graph *g, opt_ctx *ctx, chain *c, int32_t node)
{
    const graph_node *n = &g->nodes[node];
    const char *kind = c->conv ? "conv" : "linear";
    int32_t other = n->in[0] == c->last ? n->in[1] : n->in[0];
    char a[160], b[160];
    if (other == c->last)
        return 0; /* add(y, y): y has two uses, cannot happen here */
    if (!fu_same_type(g, n->out[0], c->last)) {
        opt_explain(ctx, g, node, "add broadcasts the %s output to %s", kind,
                    graph_shape_str(&g->values[n->out[0]].type, a, sizeof a));
        return 0;
    }
    if (c->post.n == 0 && c->res < 0 && c->bias_add < 0 && bias_like(g, c, other)) {
        c->bias_add = other;
        absorb(c, g, node);
        return 1;
    }
    if (fu_same_type(g, other, c->last)) {
        if (c->res >= 0) {
            opt_explain(ctx, g, node, "second residual add: one residual slot");
            return 0;
        }
        c->post.v[c->post.n++] = GRAPH_POST_ADD;
        c->res = other;
        absorb(c, g, node);
        return 1;
    }
    if (g->values[other].type.ndim == g->values[c->last].type.ndim &&
        !memcmp(g->values[other].type.dim, g->values[c->last].type.dim,
                sizeof(int64_t) * (size_t)g->values[other].type.ndim)) {
        opt_explain(ctx, g, node, "residual dims are not dynamic like the %s output's", kind);
        return 0;
    }
    opt_explain(ctx, g, node, "residual shape differs (%s vs %s)",
                graph_shape_str(&g->values[other].type, a, sizeof a),
                graph_shape_str(&g->values[c->last].type, b, sizeof b));
    return 0;
}

/* Explains why the chain stops at c->last with several users. */
static void explain_users(const graph *g, opt_ctx *ctx, const opt_uses *u, const chain *c)
{
    int32_t v = c->last, nu = opt_nuses(u, v);
    for (int32_t k = u->first[v]; k < u->first[v + 1]; k++)
        if (fusable_op(g->nodes[u->list[k]].op)) {
            opt_explain(ctx, g, c->n ? c->node[c->n - 1] : c->p, "%s output has %d users",
                        c->n ? graph_ops[g->nodes[c->node[c->n - 1]].op].name
                             : (c->conv ? "conv" : "linear"),
                        (int)nu);
            return;
        }
}

/* Nonzero if v is a scalar constant equal to want (as a float). */
static int is_k(const graph *g, int32_t v, float want)
{
    double d;
    return opt_const_scalar(g, v, &d) && (float)d == want;
}

/* Nonzero if node k is op(v, K) (or op(K, v) for a commutative op) with K
 * a constant of equal elements, each want, and the output v's type. */
static int k_op(const graph *g, int32_t k, graph_op op, int32_t v, float want)
{
    if (k < 0)
        return 0;
    const graph_node *n = &g->nodes[k];
    if ((n->flags & GRAPH_NODE_DEAD) || n->op != op || n->nin != 2 ||
        !fu_same_type(g, n->out[0], v))
        return 0;
    if (n->in[0] == v && is_k(g, n->in[1], want))
        return 1;
    return (graph_ops[op].props & GRAPH_PROP_COMMUTATIVE) && n->in[1] == v &&
           is_k(g, n->in[0], want);
}

/* Nonzero if node k is clip(v, lo, hi), lo and hi not -0 (a -0 bound
 * gives -0 where the step gives +0). */
static int clip_of(const graph *g, int32_t k, int32_t v, float lo, float hi)
{
    if (k < 0)
        return 0;
    const graph_node *n = &g->nodes[k];
    if ((n->flags & GRAPH_NODE_DEAD) || n->op != GRAPH_OP_clip || n->in[0] != v)
        return 0;
    const graph_clip_attrs *a = tg_node_attrs(n);
    return a->min == lo && a->max == hi && !signbit(a->min) && !signbit(a->max);
}

/* The sole user of node k's output when that output may disappear into a
 * fused step (one user, not pinned), else -1. */
static int32_t next_of(const graph *g, const opt_uses *u, int32_t k)
{
    int32_t v = g->nodes[k].out[0];
    return opt_pinned(g, v) ? -1 : fu_sole_user(u, v);
}

/*
 * The hardsigmoid of x starting at node a (a reads x): its three nodes in
 * nodes[] and its output value, or -1.  The output may be pinned only as
 * the chain's value is (checked by the caller), the others not at all.
 */
static int32_t match_hsig(const graph *g, const opt_uses *u, int32_t x, int32_t a,
                          int32_t nodes[3])
{
    const float sixth = 1.0f / 6.0f;
    int32_t b, d;
    nodes[0] = a;
    if (k_op(g, a, GRAPH_OP_mul, x, sixth) || k_op(g, a, GRAPH_OP_div, x, 6.0f)) {
        /* clip(x * (1/6) + 0.5, 0, 1) */
        if ((b = next_of(g, u, a)) < 0 || !k_op(g, b, GRAPH_OP_add, g->nodes[a].out[0], 0.5f))
            return -1;
        if ((d = next_of(g, u, b)) < 0 || !clip_of(g, d, g->nodes[b].out[0], 0.0f, 1.0f))
            return -1;
    } else if (k_op(g, a, GRAPH_OP_add, x, 3.0f)) {
        /* clip(x + 3, 0, 6) / 6 */
        if ((b = next_of(g, u, a)) < 0 || !clip_of(g, b, g->nodes[a].out[0], 0.0f, 6.0f))
            return -1;
        int32_t r = g->nodes[b].out[0];
        if ((d = next_of(g, u, b)) < 0 ||
            !(k_op(g, d, GRAPH_OP_div, r, 6.0f) || k_op(g, d, GRAPH_OP_mul, r, sixth)))
            return -1;
    } else {
        return -1;
    }
    nodes[1] = b, nodes[2] = d;
    return fu_guarded(g, g->nodes[d].out[0]) ? -1 : g->nodes[d].out[0];
}

/* A hardsigmoid or hardswish of c->last as one step; 0 if there is none
 * (or no room for it). */
static int take_hard(const graph *g, opt_ctx *ctx, const opt_uses *u, chain *c)
{
    int32_t x = c->last, nodes[4], h;
    int nu = opt_nuses(u, x);
    if (c->post.n == CHAIN_MAX || c->n + 4 > NODES_MAX || opt_pinned(g, x) || nu < 1 || nu > 2)
        return 0;
    for (int32_t k = u->first[x]; k < u->first[x + 1]; k++) {
        int32_t a = u->list[k], m;
        if ((h = match_hsig(g, u, x, a, nodes)) < 0)
            continue;
        if (nu == 1) {
            c->post.v[c->post.n++] = GRAPH_POST_HARDSIGMOID;
        } else {
            /* x * h: the other user of x, h's only one */
            m = u->list[k == u->first[x] ? k + 1 : u->first[x]];
            const graph_node *n = &g->nodes[m];
            if (opt_pinned(g, h) || fu_sole_user(u, h) != m) {
                if (opt_pinned(g, h) || opt_nuses(u, h) > 1)
                    opt_explain(ctx, g, nodes[2],
                                "hardswish not fused: its hardsigmoid is also read elsewhere");
                return 0;
            }
            if (n->op != GRAPH_OP_mul || fu_guarded(g, n->out[0]) ||
                !((n->in[0] == x && n->in[1] == h) || (n->in[0] == h && n->in[1] == x)))
                return 0;
            nodes[3] = m;
            c->post.v[c->post.n++] = GRAPH_POST_HARDSWISH;
        }
        for (int i = 0; i < (nu == 1 ? 3 : 4); i++)
            absorb(c, g, nodes[i]);
        return 1;
    }
    return 0;
}

/* Absorbs the user of c->last if it can; 0 when the chain ends. */
static int step(const graph *g, opt_ctx *ctx, const opt_uses *u, chain *c)
{
    if (take_hard(g, ctx, u, c))
        return 1;
    int32_t user = fu_sole_user(u, c->last);
    if (user >= 0 && (g->nodes[user].flags & GRAPH_NODE_DEAD))
        return 0; /* absorbed by an earlier chain of this run */
    if (user < 0) {
        explain_users(g, ctx, u, c);
        return 0;
    }
    const graph_node *n = &g->nodes[user];
    int fusable = fusable_op(n->op);
    if (c->post.n == CHAIN_MAX || opt_pinned(g, c->last) || fu_guarded(g, n->out[0])) {
        if (fusable)
            opt_explain(ctx, g, user, "%s", c->post.n == CHAIN_MAX ? "epilogue is full"
                                            : opt_pinned(g, c->last)
                                                ? "its input is a graph output or guarded"
                                                : "output is guarded: computed as traced");
        return 0;
    }
    if (n->op == GRAPH_OP_add)
        return take_add(g, ctx, c, user);
    int64_t code = post_code(n->op);
    if (code == GRAPH_POST_LEAKY_RELU) {
        float a = ((const graph_leaky_relu_attrs *)tg_node_attrs(n))->alpha;
        if (c->leaky && a != c->prm.alpha) {
            opt_explain(ctx, g, user, "leaky_relu slope %g differs from the earlier %g", a,
                        c->prm.alpha);
            return 0;
        }
        c->leaky = 1, c->prm.alpha = a;
    }
    if (code == GRAPH_POST_CLIP) {
        const graph_clip_attrs *a = tg_node_attrs(n);
        /* same bits: +0 and -0 bounds differ in what clip gives */
        if (c->clip && (memcmp(&a->min, &c->prm.clip_min, sizeof a->min) ||
                        memcmp(&a->max, &c->prm.clip_max, sizeof a->max))) {
            opt_explain(ctx, g, user, "clip bounds [%g, %g] differ from the earlier [%g, %g]",
                        (double)a->min, (double)a->max, (double)c->prm.clip_min,
                        (double)c->prm.clip_max);
            return 0;
        }
        c->clip = 1, c->prm.clip_min = a->min, c->prm.clip_max = a->max;
    }
    if (code) {
        c->post.v[c->post.n++] = code;
        absorb(c, g, user);
        return 1;
    }
    if ((graph_ops[n->op].props & GRAPH_PROP_ELEMENTWISE) && n->nin == 1)
        opt_explain(ctx, g, user, "activation %s not supported", graph_ops[n->op].name);
    return 0;
}

/*
 * The fused node's bias: p's own, the absorbed add's operand, their sum,
 * or zeros when the op needs one (-1: none).  -2 on out of memory.
 */
static int32_t make_bias(graph *g, const chain *c, int need)
{
    const graph_node *p = &g->nodes[c->p];
    int32_t own = p->nin > 2 ? p->in[2] : -1, add = c->bias_add;
    int64_t ch = chain_channels(g, c);
    /* a one-element add (bias_like's splat): every channel gets its value */
    int splat = add >= 0 && graph_type_numel(&g->values[add].type) == 1 && ch != 1;
    if (add >= 0 && own < 0 && g->values[add].type.ndim == 1 && !c->conv && !splat)
        return add;
    if (add < 0 && (own >= 0 || !need))
        return own;
    float *sum = tg_calloc((size_t)ch + 1, sizeof *sum);
    if (!sum)
        return -2;
    const float *a = add >= 0 ? fu_const_f32(g, add) : NULL;
    const float *b = own >= 0 ? fu_const_f32(g, own) : NULL;
    for (int64_t i = 0; i < ch; i++)
        sum[i] = (a ? a[splat ? 0 : i] : 0.0f) + (b ? b[i] : 0.0f);
    graph_type t = {GRAPH_F32, 1, {ch}};
    int32_t id = opt_add_const(g, &t, sum);
    tg_free(sum);
    return id < 0 ? -2 : id;
}

/* The fused op and its attributes (in *attrs). */
static graph_op fused_op(const graph *g, const chain *c, graph_attrs *attrs)
{
    const graph_node *p = &g->nodes[c->p];
    memset(attrs, 0, sizeof *attrs);
    if (!c->conv) {
        attrs->linear_ep = (graph_linear_ep_attrs){c->post, c->prm.alpha, c->prm.clip_min,
                                                   c->prm.clip_max};
        return c->post.n ? GRAPH_OP_linear_ep : p->op;
    }
    if (p->op == GRAPH_OP_conv2d_ep) {
        attrs->conv2d_ep = *(const graph_conv2d_ep_attrs *)tg_node_attrs(p);
    } else {
        const graph_conv2d_attrs *a = tg_node_attrs(p);
        attrs->conv2d_ep = (graph_conv2d_ep_attrs){a->stride, a->padding, a->dilation,
                                                   a->groups, {0, {0}}, 0.0f};
    }
    attrs->conv2d_ep.post = c->post;
    attrs->conv2d_ep.alpha = c->prm.alpha;
    attrs->conv2d_ep.clip_min = c->prm.clip_min;
    attrs->conv2d_ep.clip_max = c->prm.clip_max;
    if (c->post.n || p->op == GRAPH_OP_conv2d_ep)
        return GRAPH_OP_conv2d_ep;
    attrs->conv2d = *(const graph_conv2d_attrs *)tg_node_attrs(p);
    return GRAPH_OP_conv2d;
}

static tg_status fuse(graph *g, opt_ctx *ctx, const chain *c)
{
    graph_attrs attrs;
    graph_op op = fused_op(g, c, &attrs);
    int ep = op == GRAPH_OP_linear_ep || op == GRAPH_OP_conv2d_ep;
    int32_t bias = make_bias(g, c, ep);
    if (bias == -2)
        return opt_fail(ctx, g, c->p, TG_ERR_NOMEM, "cannot add the fused bias");
    const graph_node *p = &g->nodes[c->p];
    int32_t in[4] = {p->in[0], p->in[1], bias, c->res}, out = -1, src[NODES_MAX + 2];
    int nin = bias < 0 ? 2 : c->res < 0 ? 3 : 4;
    src[0] = c->p;
    memcpy(src + 1, c->node, sizeof *src * (size_t)c->n);
    if (fu_add_node(g, ctx, op, in, nin, graph_ops[op].attr_size ? &attrs : NULL, &out, 1, src,
                    c->n + 1) < 0)
        return TG_ERR_STATE;
    opt_replace_uses(g, c->last, out);
    g->nodes[c->p].flags |= GRAPH_NODE_DEAD;
    for (int i = 0; i < c->n; i++)
        g->nodes[c->node[i]].flags |= GRAPH_NODE_DEAD;
    ctx->stats->fused += c->n;
    ctx->changed = 1;
    return TG_OK;
}

/* batch_norm_train(..) -> relu: the relu into the batch norm's y pass. */
static void bn_relu(graph *g, opt_ctx *ctx, const opt_uses *u, int32_t i)
{
    graph_node *n = &g->nodes[i];
    graph_batch_norm_train_attrs *at = tg_node_attrs_mut(n);
    int32_t y = n->out[0], r = fu_sole_user(u, y);
    if (at->relu || r < 0 || g->nodes[r].op != GRAPH_OP_relu || opt_pinned(g, y) ||
        fu_guarded(g, g->nodes[r].out[0]) || !fu_same_type(g, y, g->nodes[r].out[0]))
        return;
    if (opt_merge_prov(g, i, r) != TG_OK)
        return; /* out of memory: left unfused */
    at->relu = 1;
    opt_replace_uses(g, g->nodes[r].out[0], y);
    g->nodes[r].flags |= GRAPH_NODE_DEAD;
    ctx->stats->fused++;
    ctx->changed = 1;
}

/* batch_norm_train(..) -> max_pool2d of y: one batch_norm_train with the
 * pool as its output 5 (y stays an output: the pool's gradient reads it). */
static tg_status bn_pool(graph *g, opt_ctx *ctx, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    const graph_batch_norm_train_attrs *at = tg_node_attrs(n);
    if (at->pool_kernel.n || n->nout != 5)
        return TG_OK;
    int32_t y = n->out[0], pn = -1;
    for (int32_t k = 0; k < g->nnodes && pn < 0; k++) { /* y's readers moved (bn_relu) */
        const graph_node *r = &g->nodes[k];
        if (!(r->flags & GRAPH_NODE_DEAD) && r->op == GRAPH_OP_max_pool2d && r->in[0] == y &&
            !fu_guarded(g, r->out[0]))
            pn = k;
    }
    if (pn < 0)
        return TG_OK;
    for (int k = 0; k < 5; k++)
        if (fu_guarded(g, n->out[k]))
            return TG_OK;
    graph_batch_norm_train_attrs a = *at;
    const graph_max_pool2d_attrs *pa = tg_node_attrs(&g->nodes[pn]);
    a.pool_kernel = pa->kernel, a.pool_stride = pa->stride, a.pool_padding = pa->padding;
    int32_t in[5], out[6], src[2] = {i, pn};
    memcpy(in, n->in, sizeof in);
    if (fu_add_node(g, ctx, GRAPH_OP_batch_norm_train, in, 5, &a, out, 6, src, 2) < 0)
        return TG_ERR_STATE;
    n = &g->nodes[i];
    for (int k = 0; k < 5; k++)
        opt_replace_uses(g, n->out[k], out[k]);
    opt_replace_uses(g, g->nodes[pn].out[0], out[5]);
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    g->nodes[pn].flags |= GRAPH_NODE_DEAD;
    ctx->stats->fused++;
    ctx->changed = 1;
    return TG_OK;
}

/* Input slots of live nodes that read v (the pass's use lists go stale
 * as it moves uses). */
static int32_t readers(const graph *g, int32_t v)
{
    int32_t n = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD))
            for (int j = 0; j < g->nodes[i].nin; j++)
                n += g->nodes[i].in[j] == v;
    return n;
}

/* batch_norm_train_grad(max_pool2d_grad(dp, y), x, w, mean, invstd), the
 * pool's gradient read by nothing else -> batch_norm_pool_grad(dp, y, x,
 * w, mean, invstd). */
static tg_status bn_pool_grad(graph *g, opt_ctx *ctx, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    int32_t d = n->in[0], q = fu_producer(g, d);
    if (q < 0 || g->nodes[q].op != GRAPH_OP_max_pool2d_grad || opt_pinned(g, d) ||
        readers(g, d) != 1)
        return TG_OK;
    for (int k = 0; k < 3; k++)
        if (fu_guarded(g, n->out[k]))
            return TG_OK;
    const graph_max_pool2d_grad_attrs *qa = tg_node_attrs(&g->nodes[q]);
    graph_batch_norm_pool_grad_attrs a = {qa->kernel, qa->stride, qa->padding};
    int32_t in[6] = {g->nodes[q].in[0], g->nodes[q].in[1], n->in[1], n->in[2], n->in[3],
                     n->in[4]};
    int32_t out[3], src[2] = {i, q};
    if (fu_add_node(g, ctx, GRAPH_OP_batch_norm_pool_grad, in, 6, &a, out, 3, src, 2) < 0)
        return TG_ERR_STATE;
    for (int k = 0; k < 3; k++)
        opt_replace_uses(g, g->nodes[i].out[k], out[k]);
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    g->nodes[q].flags |= GRAPH_NODE_DEAD;
    ctx->stats->fused++;
    ctx->changed = 1;
    return TG_OK;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_uses u;
    if (opt_uses_build(g, &u) != TG_OK)
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "epilogue: out of memory");
    tg_status st = TG_OK;
    for (int32_t i = 0, end = g->nnodes; i < end && st == TG_OK; i++) {
        chain c;
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == GRAPH_OP_batch_norm_train) {
            bn_relu(g, ctx, &u, i);
            if ((st = bn_pool(g, ctx, i)) != TG_OK)
                break;
            continue;
        }
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) &&
            g->nodes[i].op == GRAPH_OP_batch_norm_train_grad) {
            if ((st = bn_pool_grad(g, ctx, i)) != TG_OK)
                break;
            continue;
        }
        if ((g->nodes[i].flags & GRAPH_NODE_DEAD) || !chain_start(g, i, &c))
            continue;
        if (fu_guarded(g, c.last))
            continue; /* computed as traced */
        while (step(g, ctx, &u, &c))
            ;
        if (c.n)
            st = fuse(g, ctx, &c);
    }
    opt_uses_free(&u);
    return st;
}

const opt_pass opt_pass_epilogue = {"epilogue", run};
