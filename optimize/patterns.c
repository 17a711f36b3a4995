/*
 * patterns.c - pattern fusion (-O2, before epilogue and ewchain):
 * layer_norm, softmax, GELU and SiLU written with primitive ops become the one
 * op that computes them (one pass over a row instead of six or eight
 * kernels and their intermediates, and the more careful kernels: the
 * layer_norm kernel accumulates in double, softmax subtracts the max).
 *
 *   layer_norm  mean = reduce_mean(x, A, keepdim); d = x - mean;
 *               var = reduce_mean(d*d or pow(d,2), A, keepdim);
 *               y = d / sqrt(var + eps)  or  d * rsqrt(var + eps)
 *               [* gamma [+ beta]]                -> layer_norm(x, gamma?, beta?)
 *               A = the trailing dims from some axis (layer_norm's
 *               axis); eps = 0 when there is no + eps.
 *   softmax     e = exp(x - reduce_max(x, [a], keepdim)) or e = exp(x);
 *               y = e / reduce_sum(e, [a], keepdim)
 *               or e * reciprocal(reduce_sum(...))  -> softmax(x, a)
 *               The form without the max is the same function but
 *               overflows for x > 88; replacing it by softmax (which
 *               subtracts the max) only removes that overflow (inf/inf =
 *               NaN became a finite result), so it is rewritten too.
 *   gelu        the product of 0.5, x and (1 + erf(x / sqrt 2)) in any
 *               association and order (x * 0.7071067811865476 or
 *               x / 1.4142135 inside erf; 0.5 * x or x / 2 or x * 0.5)
 *                                                 -> gelu(x)   (erf form)
 *               The tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x +
 *               0.044715 x^3))) differs from the erf form by up to about
 *               5e-4, so it is not gelu; it is left as is (and ewchain
 *               fuses it) and --explain says so.
 *   silu        x * sigmoid(x) (either order)       -> silu(x)
 *               (the same function everywhere: silu(-inf) is NaN, as
 *               -inf * sigmoid(-inf) = -inf * 0 is), when x comes from
 *               a linear or conv2d (or an add of one) whose epilogue
 *               takes the silu; elsewhere left to ewchain
 * keepdim: the reduction either keeps its dims or is followed by an
 * unsqueeze/reshape back to the kept shape.  Commutative operands match
 * in either order; constants are GRAPH_VALUE_CONST values whose elements
 * are all equal (scalars or broadcast constants), within 1e-6 relative of
 * the expected value where one is expected.
 *
 * A match fires only when every intermediate is used inside the pattern
 * alone and is not pinned, and the fused op infers exactly the type of
 * the pattern's result (so a broadcast constant that widens the output
 * blocks it).  The pattern's last node is rewritten in place into the
 * fused op (its value, maybe a graph output, keeps its id), the others
 * are marked dead and their provenance is merged into it.  Nodes are
 * tried from last to first so that the widest form (with gamma and beta)
 * wins over its core.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "graph/graph_impl.h"

enum { MAX_SET = 24 };

/* The nodes a match absorbs, its root first. */
typedef struct mset {
    int32_t node[MAX_SET];
    int n;
} mset;

typedef struct pctx {
    graph *g;
    const opt_uses *u;
    opt_ctx *ctx;
} pctx;

/* The live producer of v if its op is op (and it has one output); else -1. */
static int32_t made_by(const pctx *c, int32_t v, graph_op op)
{
    int32_t n = v >= 0 ? c->g->values[v].node : -1;
    if (n < 0)
        return -1;
    const graph_node *nd = &c->g->nodes[n];
    return !(nd->flags & GRAPH_NODE_DEAD) && nd->op == op && nd->nout == 1 ? n : -1;
}

static const graph_node *node(const pctx *c, int32_t n) { return &c->g->nodes[n]; }

static int add_to(mset *s, int32_t n)
{
    for (int k = 0; k < s->n; k++)
        if (s->node[k] == n)
            return 0;
    if (s->n == MAX_SET)
        return -1;
    s->node[s->n++] = n;
    return 0;
}

static int in_set(const mset *s, int32_t n)
{
    for (int k = 0; k < s->n; k++)
        if (s->node[k] == n)
            return 1;
    return 0;
}

/* v is a constant whose elements all equal want (within 1e-6 relative). */
static int const_is(const pctx *c, int32_t v, double want)
{
    double x;
    return c->g->values[v].type.dtype == GRAPH_F32 && opt_const_scalar(c->g, v, &x) &&
           fabs(x - want) <= 1e-6 * fabs(want);
}

/* ---- reductions with kept dims ---- */

static const graph_ints *reduce_axes(const graph_node *n, int64_t *keepdim)
{
    /* reduce_sum / _mean / _max share one attribute layout. */
    const graph_reduce_sum_attrs *a = tg_node_attrs(n);
    *keepdim = a->keepdim;
    return &a->axes;
}

/*
 * v is reduce(src, axes) with dims kept: the reduction itself with
 * keepdim=1, or keepdim=0 followed by unsqueeze/reshape to the kept shape.
 * Fills *src, the reduced-dims mask (over src's dims) and adds the nodes.
 */
static int kept_reduce(const pctx *c, int32_t v, graph_op op, int32_t *src,
                       unsigned *mask, mset *s)
{
    int32_t r = made_by(c, v, op), view = -1;
    if (r < 0) {
        view = made_by(c, v, GRAPH_OP_unsqueeze);
        if (view < 0)
            view = made_by(c, v, GRAPH_OP_reshape);
        if (view < 0 || (r = made_by(c, node(c, view)->in[0], op)) < 0)
            return 0;
    }
    int64_t keep;
    const graph_ints *axes = reduce_axes(node(c, r), &keep);
    if ((view >= 0) == (keep != 0))
        return 0;
    *src = node(c, r)->in[0];
    const graph_type *t = &c->g->values[*src].type, *vt = &c->g->values[v].type;
    *mask = 0;
    for (int i = 0; i < axes->n; i++) {
        int d = graph_axis(axes->v[i], t->ndim);
        if (d < 0)
            return 0;
        *mask |= 1u << d;
    }
    if (axes->n == 0)
        *mask = (1u << t->ndim) - 1;
    /* the kept shape: src's with the reduced dims set to 1 */
    if (vt->ndim != t->ndim)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (vt->dim[d] != ((*mask >> d) & 1 ? 1 : t->dim[d]))
            return 0;
    if (view >= 0 && add_to(s, view) < 0)
        return 0;
    return add_to(s, r) == 0;
}

/* ---- committing a match ---- */

/* Every member but the root has its value used only inside s, unpinned,
 * and none relied on a concrete dynamic dim (a reshape to the traced
 * shape): the fused op would hold at sizes where they did not. */
static int self_contained(const pctx *c, const mset *s)
{
    for (int k = 0; k < s->n; k++)
        if (node(c, s->node[k])->flags & GRAPH_NODE_SPECIALIZED)
            return 0;
    for (int k = 1; k < s->n; k++) {
        const graph_node *n = node(c, s->node[k]);
        for (int j = 0; j < n->nout; j++) {
            int32_t v = n->out[j];
            if (opt_pinned(c->g, v))
                return 0;
            for (int32_t q = c->u->first[v]; q < c->u->first[v + 1]; q++)
                if (!in_set(s, c->u->list[q]))
                    return 0;
        }
    }
    return 1;
}

/*
 * Rewrites the match's root into op(in; attrs) when the pattern is
 * self-contained and op infers the root's type; absorbs the rest.
 * Returns 1 if it fired, 0 if not (explained), -1 on out of memory.
 */
static int fire(pctx *c, const mset *s, graph_op op, const int32_t *in, int nin,
                const void *attrs, const char *what)
{
    graph *g = c->g;
    int32_t root = s->node[0];
    if (!self_contained(c, s)) {
        opt_explain(c->ctx, g, root, "%s pattern not fused: an intermediate is used outside "
                    "it, is a graph output or guarded, or relies on a traced size", what);
        return 0;
    }
    graph_type it[3], out;
    for (int k = 0; k < nin; k++)
        it[k] = g->values[in[k]].type;
    int nout = 0;
    char err[600];
    if (graph_infer(op, it, nin, attrs, &out, 1, &nout, err, sizeof err) != TG_OK ||
        !graph_type_eq(&out, &g->values[node(c, root)->out[0]].type)) {
        opt_explain(c->ctx, g, root, "%s pattern not fused: %s", what,
                    nout ? "the fused op would change the result's shape" : err);
        return 0;
    }
    int32_t *ids = graph_alloc_ids(g, nin);
    size_t asz = graph_ops[op].attr_size;
    void *a = asz ? graph_alloc_bytes(g, asz) : NULL;
    if (!ids || (asz && !a))
        return -1;
    memcpy(ids, in, sizeof(int32_t) * (size_t)nin);
    if (a && attrs)
        memcpy(a, attrs, asz);
    graph_node *r = &g->nodes[root];
    r->op = op;
    r->in = ids;
    r->nin = nin;
    r->attrs = a;
    for (int k = 1; k < s->n; k++) {
        if (opt_merge_prov(g, root, s->node[k]) != TG_OK)
            return -1;
        g->nodes[s->node[k]].flags |= GRAPH_NODE_DEAD;
    }
    c->ctx->stats->rewritten++;
    c->ctx->stats->fused += s->n;
    c->ctx->changed = 1;
    return 1;
}

/* ---- layer_norm ---- */

typedef struct ln_core {
    int32_t x;
    int axis; /* first normalized dim */
    float eps;
} ln_core;

/* var + eps with eps a constant (either order), or var alone (eps 0). */
static int32_t split_eps(const pctx *c, int32_t v, mset *s, float *eps)
{
    int32_t a = made_by(c, v, GRAPH_OP_add);
    double x;
    *eps = 0.0f;
    for (int k = 0; a >= 0 && k < 2; k++) {
        int32_t e = node(c, a)->in[k];
        if (c->g->values[e].type.dtype == GRAPH_F32 && opt_const_scalar(c->g, e, &x)) {
            *eps = (float)x;
            return add_to(s, a) < 0 ? -1 : node(c, a)->in[1 - k];
        }
    }
    return v;
}

/* d*d or pow(d, 2): d's value, or -1. */
static int32_t square_of(const pctx *c, int32_t v, mset *s)
{
    int32_t m = made_by(c, v, GRAPH_OP_mul);
    if (m >= 0 && node(c, m)->in[0] == node(c, m)->in[1])
        return add_to(s, m) < 0 ? -1 : node(c, m)->in[0];
    int32_t p = made_by(c, v, GRAPH_OP_pow);
    if (p >= 0 && const_is(c, node(c, p)->in[1], 2.0))
        return add_to(s, p) < 0 ? -1 : node(c, p)->in[0];
    return -1;
}

/* d / sqrt(u) or d * rsqrt(u) (either order): sets *d and returns u. */
static int32_t split_norm(const pctx *c, int32_t v, mset *s, int32_t *d)
{
    int32_t n = made_by(c, v, GRAPH_OP_div), q;
    if (n >= 0 && (q = made_by(c, node(c, n)->in[1], GRAPH_OP_sqrt)) >= 0) {
        *d = node(c, n)->in[0];
        return add_to(s, n) < 0 || add_to(s, q) < 0 ? -1 : node(c, q)->in[0];
    }
    n = made_by(c, v, GRAPH_OP_mul);
    for (int k = 0; n >= 0 && k < 2; k++)
        if ((q = made_by(c, node(c, n)->in[k], GRAPH_OP_rsqrt)) >= 0) {
            *d = node(c, n)->in[1 - k];
            return add_to(s, n) < 0 || add_to(s, q) < 0 ? -1 : node(c, q)->in[0];
        }
    return -1;
}

/* The normalization (x - mean) / sqrt(var + eps) ending at v. */
static int ln_core_match(const pctx *c, int32_t v, mset *s, ln_core *o)
{
    int32_t d, x, x2, sqv;
    unsigned m1, m2;
    int32_t u = split_norm(c, v, s, &d);
    if (u < 0 || (u = split_eps(c, u, s, &o->eps)) < 0)
        return 0;
    if (!kept_reduce(c, u, GRAPH_OP_reduce_mean, &sqv, &m2, s) || square_of(c, sqv, s) != d)
        return 0;
    int32_t ds = made_by(c, d, GRAPH_OP_sub);
    if (ds < 0 || add_to(s, ds) < 0)
        return 0;
    x = node(c, ds)->in[0];
    if (!kept_reduce(c, node(c, ds)->in[1], GRAPH_OP_reduce_mean, &x2, &m1, s) || x2 != x ||
        m1 != m2 || c->g->values[x].type.dtype != GRAPH_F32)
        return 0;
    /* the reduced dims are the trailing ones from some axis */
    int nd = c->g->values[x].type.ndim, axis = 0;
    while (axis < nd && !((m1 >> axis) & 1))
        axis++;
    unsigned want = ((1u << nd) - 1) & ~((1u << axis) - 1);
    if (nd == 0 || m1 != want)
        return 0;
    o->x = x;
    o->axis = axis;
    return 1;
}

/*
 * The affine forms at node i: form 2 core * gamma + beta, form 1
 * core * gamma, form 0 the core alone (any operand order).  Fills the
 * set (root first), the core and the weights (-1: absent).
 */
static int ln_form(const pctx *c, int32_t i, int form, mset *s, ln_core *o, int32_t *gamma,
                   int32_t *beta)
{
    const graph_node *n = node(c, i);
    *gamma = *beta = -1;
    if (form == 0) {
        s->n = 0;
        return ln_core_match(c, n->out[0], s, o);
    }
    if (n->op != (form == 2 ? GRAPH_OP_add : GRAPH_OP_mul))
        return 0;
    for (int k = 0; k < 2; k++) {
        int32_t m = form == 2 ? made_by(c, n->in[k], GRAPH_OP_mul) : i;
        for (int j = 0; m >= 0 && j < 2; j++) {
            mset t = {{i}, 1};
            if (add_to(&t, m) == 0 && ln_core_match(c, node(c, m)->in[j], &t, o)) {
                *s = t;
                *gamma = node(c, m)->in[1 - j];
                *beta = form == 2 ? n->in[1 - k] : -1;
                return 1;
            }
        }
        if (form == 1)
            break;
    }
    return 0;
}

/* Tries the widest layer_norm form ending at node i first. */
static int try_layer_norm(pctx *c, int32_t i)
{
    for (int form = 2; form >= 0; form--) {
        mset s;
        ln_core o;
        int32_t gamma, beta;
        if (!ln_form(c, i, form, &s, &o, &gamma, &beta))
            continue;
        /* gamma/beta are sized for the traced normalized dims only */
        const graph_value *xv = &c->g->values[o.x];
        if (gamma >= 0 && (xv->dyn >> o.axis)) {
            opt_explain(c->ctx, c->g, i, "layer_norm pattern with weights not fused: a "
                        "normalized dim is dynamic");
            continue;
        }
        graph_layer_norm_attrs at;
        graph_attrs_default(GRAPH_OP_layer_norm, &at);
        at.axis = o.axis - xv->type.ndim;
        at.eps = o.eps;
        int32_t in[3] = {o.x, gamma, beta};
        int r = fire(c, &s, GRAPH_OP_layer_norm, in, 1 + (gamma >= 0) + (beta >= 0), &at,
                     "layer_norm");
        if (r)
            return r;
    }
    return 0;
}

/* ---- softmax ---- */

/* e / z or e * reciprocal(z) at node i (adds the reciprocal); e or -1. */
static int32_t split_ratio(const pctx *c, int32_t i, mset *s, int32_t *z)
{
    const graph_node *n = node(c, i);
    if (n->op == GRAPH_OP_div) {
        *z = n->in[1];
        return n->in[0];
    }
    for (int k = 0; n->op == GRAPH_OP_mul && k < 2; k++) {
        int32_t r = made_by(c, n->in[k], GRAPH_OP_reciprocal);
        if (r >= 0 && add_to(s, r) == 0) {
            *z = node(c, r)->in[0];
            return n->in[1 - k];
        }
    }
    return -1;
}

static int try_softmax(pctx *c, int32_t i)
{
    mset s = {{i}, 1};
    int32_t z, e2, ex, x;
    unsigned mask, m2;
    int32_t e = split_ratio(c, i, &s, &z);
    if (e < 0 || !kept_reduce(c, z, GRAPH_OP_reduce_sum, &e2, &mask, &s) || e2 != e ||
        (ex = made_by(c, e, GRAPH_OP_exp)) < 0 || add_to(&s, ex) < 0)
        return 0;
    x = node(c, ex)->in[0];
    /* x - reduce_max(x) over the same axis: the stable form */
    int32_t sb = made_by(c, x, GRAPH_OP_sub);
    if (sb >= 0) {
        mset t = s;
        if (add_to(&t, sb) == 0 &&
            kept_reduce(c, node(c, sb)->in[1], GRAPH_OP_reduce_max, &e2, &m2, &t) &&
            e2 == node(c, sb)->in[0] && m2 == mask) {
            s = t;
            x = e2;
        }
    }
    if (!mask || (mask & (mask - 1)))
        return 0; /* softmax is over one axis */
    int axis = 0;
    while (!((mask >> axis) & 1))
        axis++;
    graph_softmax_attrs at;
    graph_attrs_default(GRAPH_OP_softmax, &at);
    at.axis = axis - c->g->values[x].type.ndim;
    return fire(c, &s, GRAPH_OP_softmax, &x, 1, &at, "softmax");
}

/* ---- gelu ---- */

typedef struct factors {
    int32_t v[4];
    int n;
    double k; /* product of the constant factors */
} factors;

/*
 * Flattens a product into factors: mul nodes (and division by a
 * constant) whose value is used once are opened, constants multiply
 * into k, anything else is a factor.  The root is opened always.
 */
static int flatten(const pctx *c, int32_t v, int depth, mset *s, factors *f)
{
    double x;
    int open = depth == 0 || (opt_nuses(c->u, v) == 1 && depth < 4);
    int32_t m = open ? made_by(c, v, GRAPH_OP_mul) : -1;
    int32_t d = open ? made_by(c, v, GRAPH_OP_div) : -1;
    if (depth > 0 && c->g->values[v].type.dtype == GRAPH_F32 && opt_const_scalar(c->g, v, &x)) {
        f->k *= x;
        return 1;
    }
    if (m >= 0)
        return add_to(s, m) == 0 && flatten(c, node(c, m)->in[0], depth + 1, s, f) &&
               flatten(c, node(c, m)->in[1], depth + 1, s, f);
    if (d >= 0 && opt_const_scalar(c->g, node(c, d)->in[1], &x) && x != 0) {
        f->k /= x;
        return add_to(s, d) == 0 && flatten(c, node(c, d)->in[0], depth + 1, s, f);
    }
    if (depth == 0 || f->n == 4)
        return 0;
    f->v[f->n++] = v;
    return 1;
}

/* t = 1 + g(u) (either order) with g erf (want_erf) or tanh: u, or -1. */
static int32_t one_plus(const pctx *c, int32_t t, graph_op g, mset *s)
{
    int32_t a = made_by(c, t, GRAPH_OP_add), e;
    for (int k = 0; a >= 0 && k < 2; k++)
        if (const_is(c, node(c, a)->in[k], 1.0) &&
            (e = made_by(c, node(c, a)->in[1 - k], g)) >= 0)
            return add_to(s, a) < 0 || add_to(s, e) < 0 ? -1 : node(c, e)->in[0];
    return -1;
}

/* u = x / sqrt 2 or x * (1 / sqrt 2) (either order): x, or -1. */
static int32_t over_sqrt2(const pctx *c, int32_t u, mset *s)
{
    int32_t d = made_by(c, u, GRAPH_OP_div), m = made_by(c, u, GRAPH_OP_mul);
    if (d >= 0 && const_is(c, node(c, d)->in[1], sqrt(2.0)))
        return add_to(s, d) < 0 ? -1 : node(c, d)->in[0];
    for (int k = 0; m >= 0 && k < 2; k++)
        if (const_is(c, node(c, m)->in[k], sqrt(0.5)))
            return add_to(s, m) < 0 ? -1 : node(c, m)->in[1 - k];
    return -1;
}

static int try_gelu(pctx *c, int32_t i)
{
    mset s = {{i}, 1};
    factors f = {{0}, 0, 1.0};
    if (node(c, i)->op != GRAPH_OP_mul || !flatten(c, node(c, i)->out[0], 0, &s, &f) ||
        f.n != 2 || fabs(f.k - 0.5) > 5e-7)
        return 0;
    for (int k = 0; k < 2; k++) {
        int32_t x = f.v[1 - k];
        mset t = s;
        int32_t u = one_plus(c, f.v[k], GRAPH_OP_erf, &t);
        if (u >= 0 && over_sqrt2(c, u, &t) == x)
            return fire(c, &t, GRAPH_OP_gelu, &x, 1, NULL, "gelu");
        t = s;
        if (one_plus(c, f.v[k], GRAPH_OP_tanh, &t) >= 0) {
            opt_explain(c->ctx, c->g, i, "tanh-approximate GELU left as is: gelu is the erf "
                        "form, which differs by up to about 5e-4");
            return 0;
        }
    }
    return 0;
}

/* ---- silu ---- */

/* v is made by a linear or conv2d, or by an add of one (a bias or a
 * residual): what the epilogue pass can fuse an activation into. */
static int epilogue_source(const pctx *c, int32_t v)
{
    if (made_by(c, v, GRAPH_OP_linear) >= 0 || made_by(c, v, GRAPH_OP_conv2d) >= 0)
        return 1;
    int32_t a = made_by(c, v, GRAPH_OP_add);
    for (int k = 0; a >= 0 && k < 2; k++)
        if (made_by(c, node(c, a)->in[k], GRAPH_OP_linear) >= 0 ||
            made_by(c, node(c, a)->in[k], GRAPH_OP_conv2d) >= 0)
            return 1;
    return 0;
}

/*
 * x * sigmoid(x), either order -> silu(x): the same function at every
 * input, NaN and the infinities included (silu(-inf) = -inf * 0 = NaN).
 * Only where x comes from a linear or conv2d, whose epilogue then takes
 * the silu as a step (efficientnet): elsewhere ewchain fuses x * sigmoid(x)
 * into a fused kernel that has both ops inline, where silu would leave
 * the fast path (the chain workload ran 2x slower with it).
 */
static int try_silu(pctx *c, int32_t i)
{
    const graph_node *m = node(c, i);
    for (int k = 0; k < 2 && m->nin == 2; k++) {
        int32_t sg = made_by(c, m->in[k], GRAPH_OP_sigmoid);
        if (sg < 0 || node(c, sg)->in[0] != m->in[1 - k])
            continue;
        int32_t x = m->in[1 - k];
        if (!epilogue_source(c, x)) {
            opt_explain(c->ctx, c->g, i, "x * sigmoid(x) left as is: x comes from no linear or "
                        "conv2d whose epilogue would take a silu, and the fused elementwise "
                        "kernel runs x * sigmoid(x) inline, silu not");
            return 0;
        }
        mset t = {{i}, 1};
        if (add_to(&t, sg) < 0)
            return -1;
        return fire(c, &t, GRAPH_OP_silu, &x, 1, NULL, "silu");
    }
    return 0;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_uses u;
    if (opt_uses_build(g, &u) != TG_OK)
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    pctx c = {g, &u, ctx};
    int r = 0;
    for (int32_t i = g->nnodes - 1; i >= 0 && r >= 0; i--) {
        const graph_node *n = &g->nodes[i];
        if ((n->flags & GRAPH_NODE_DEAD) || n->nout != 1 ||
            g->values[n->out[0]].type.dtype != GRAPH_F32)
            continue;
        if (n->op == GRAPH_OP_mul && (r = try_gelu(&c, i)) != 0)
            continue;
        if (n->op == GRAPH_OP_mul && (r = try_silu(&c, i)) != 0)
            continue;
        if ((n->op == GRAPH_OP_div || n->op == GRAPH_OP_mul) && (r = try_softmax(&c, i)) != 0)
            continue;
        if (n->op == GRAPH_OP_div || n->op == GRAPH_OP_mul || n->op == GRAPH_OP_add)
            r = try_layer_norm(&c, i);
    }
    opt_uses_free(&u);
    return r < 0 ? opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory") : TG_OK;
}

const opt_pass opt_pass_patterns = {"patterns", run};
