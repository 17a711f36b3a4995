/*
 * fold.c - constant folding (-O1).
 *
 * A live node whose inputs are all constants with data is run once, now,
 * with the CPU kernels (called directly through eager_kernels[op]: no
 * dispatcher, so no tracer hooks and no eager tensors), and its outputs
 * become new constants.  Params are not constants here: they stay
 * swappable until fold-params (-O2) turns them into constants.
 *
 * Not folded:
 *   - a random op (GRAPH_PROP_RANDOM: dropout, rng_advance), even of
 *     constant operands: its draw must be made anew on every run;
 *   - a node producing a graph output or a guarded value (pinned: it stays
 *     computed exactly as traced);
 *   - a node whose result would be more than FOLD_BLOWUP times the bytes of
 *     its inputs and more than FOLD_BIG bytes: expand, pad, concat of a
 *     constant with itself, a broadcast add of a row and a column...  Such
 *     a constant would be stored in the graph and its saved file and read
 *     from memory on every run, while recomputing it is one streaming
 *     write from a small input; below FOLD_BIG the difference is noise, and
 *     folding small blow-ups lets the constants feed later folds;
 *   - a node whose kernel fails on the data (an integer division by zero,
 *     a gather index out of range): it is left to fail at run time, with
 *     the user's call site, as it would have without optimization;
 *   - a node whose result would take the call's folding budget past its
 *     bound (opt_options.fold_budget): the bound is on all the constants
 *     folding makes in one opt_optimize call, since a chain of nodes each
 *     under FOLD_BLOWUP times its input grows geometrically.
 *
 * Shape-only folding: a node whose outputs have no elements is replaced by
 * empty constants whatever its inputs (the result depends only on the
 * shapes), provided no output dim is dynamic or derived from a dynamic dim
 * (a constant has fixed dims), no input is computed from a dynamic input
 * (see fold_empty), and the node cannot fail on its operands' values
 * (opt_may_fail: a gather of a 0-size axis has an empty output and fails
 * on any index, at -O0).
 * The op set has no other op whose result depends only on its inputs'
 * shapes (there is no Shape, Size or ConstantOfShape op): expand, reshape
 * and the other shape ops of constants fold through the rule above.
 *
 * Stats: removed = nodes folded; bytes = constant bytes no longer used
 * minus the bytes of the new constants (negative when folding grew them).
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../eager/eager.h"
#include "../eager/kernel.h"
#include "simplify.h"
#include "../graph/graph_impl.h"

#define FOLD_BLOWUP 16
#define FOLD_BIG ((size_t)1 << 20)

int opt_fold_take(opt_ctx *ctx, size_t bytes)
{
    if (!ctx || !ctx->fold_left)
        return 1;
    if (bytes > (uint64_t)*ctx->fold_left)
        return 0;
    *ctx->fold_left -= (int64_t)bytes;
    return 1;
}

void opt_fold_give(opt_ctx *ctx, size_t bytes)
{
    if (ctx && ctx->fold_left)
        *ctx->fold_left += (int64_t)bytes;
}

tg_status opt_fold_eval(graph *g, graph_op op, const int32_t *in, int nin, const void *attrs,
                        int32_t *out, int max_out, int *nout, char *err, size_t errlen)
{
    graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO];
    const void *ip[GRAPH_MAX_NODE_IO];
    void *buf[GRAPH_MAX_NODE_IO] = {NULL};
    graph_attrs defaults;
    if (graph_ops[op].attr_size && !attrs) {
        graph_attrs_default(op, &defaults);
        attrs = &defaults;
    }
    for (int j = 0; j < nin; j++) {
        it[j] = g->values[in[j]].type;
        ip[j] = g->values[in[j]].data;
    }
    tg_status st = graph_infer(op, it, nin, attrs, ot, GRAPH_MAX_NODE_IO, nout, err, errlen);
    if (st != TG_OK)
        return st;
    if (*nout > max_out) {
        snprintf(err, errlen, "%s makes %d outputs, room for %d", graph_ops[op].name, *nout,
                 max_out);
        return TG_ERR_ARG;
    }
    for (int k = 0; k < *nout && st == TG_OK; k++) {
        size_t nb = (size_t)graph_type_numel(&ot[k]) * graph_dtype_size(ot[k].dtype);
        buf[k] = tg_aligned_alloc(64, (nb + 63) / 64 * 64 + 64);
        if (!buf[k])
            st = TG_ERR_NOMEM;
    }
    if (st == TG_OK) {
        eager_kargs ka = {it,  ip,     nin, attrs, ot, buf, *nout, eager_threads(),
                          err, errlen, NULL};
        if (errlen)
            err[0] = '\0';
        st = eager_kernels[op](&ka);
    }
    for (int k = 0; k < *nout && st == TG_OK; k++)
        if ((out[k] = opt_add_const(g, &ot[k], buf[k])) < 0)
            st = TG_ERR_NOMEM;
    if (st == TG_ERR_NOMEM && errlen)
        snprintf(err, errlen, "out of memory folding %s", graph_ops[op].name);
    for (int k = 0; k < *nout; k++)
        tg_free(buf[k]);
    return st;
}

/* Replaces node's outputs by the constants out[] and deletes it. */
static void replace_outputs(opt_o1_state *s, int32_t node, const int32_t *out)
{
    const graph_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->nout; k++)
        opt_o1_forward(s, n->out[k], out[k]);
    opt_o1_kill(s, node);
    s->ctx->stats->removed++;
    s->ctx->changed = 1;
}

/*
 * Outputs with no elements and no dynamic dims (named by a symbol or
 * derived from one: a slice to N-4 is empty only at N = 4) become empty
 * constants, unless the node reads a value computed from a dynamic input
 * (sized): the marks come from one probe size (graph/dynamic.c), which
 * misses a dim that is 0 at the traced and probe sizes only (x[-1:1:2] of
 * x [N] is empty at N = 2 and N = 1013, not at N = 1).  An empty tensor
 * costs nothing to compute, so little is lost.
 */
static int fold_empty(opt_o1_state *s, int32_t node, int sized)
{
    graph *g = s->g;
    int32_t nout = g->nodes[node].nout, out[GRAPH_MAX_NODE_IO];
    if (nout == 0 || !(graph_ops[g->nodes[node].op].props & GRAPH_PROP_PURE) ||
        (graph_ops[g->nodes[node].op].props & GRAPH_PROP_RANDOM) || sized)
        return 0;
    if (opt_may_fail(g, node)) { /* its error at -O0 must stay an error */
        opt_explain(s->ctx, g, node,
                    "not folded as empty: it may fail on its operands' values; "
                    "left to run");
        return 0;
    }
    for (int k = 0; k < nout; k++) {
        const graph_value *v = &g->values[g->nodes[node].out[k]];
        if (v->dyn || v->dder || graph_type_numel(&v->type) != 0)
            return 0;
    }
    for (int k = 0; k < nout; k++) {
        graph_type t = g->values[g->nodes[node].out[k]].type;
        if ((out[k] = opt_o1_add_const(s, &t, "")) < 0)
            return -1;
    }
    replace_outputs(s, node, out);
    return 1;
}

/* Bytes of node's inputs and outputs. */
static void io_bytes(const graph *g, const graph_node *n, size_t *in, size_t *out)
{
    *in = *out = 0;
    for (int j = 0; j < n->nin; j++)
        *in += graph_value_nbytes(&g->values[n->in[j]]);
    for (int k = 0; k < n->nout; k++)
        *out += graph_value_nbytes(&g->values[n->out[k]]);
}

static int fold_node(opt_o1_state *s, int32_t node)
{
    graph *g = s->g;
    const graph_node *n = &g->nodes[node];
    if (!(graph_ops[n->op].props & GRAPH_PROP_PURE) || n->nout == 0)
        return 0;
    if (graph_ops[n->op].props & GRAPH_PROP_RANDOM) {
        /* a random draw (or a generator's move) baked into a constant
         * would repeat the same numbers on every run */
        opt_explain(s->ctx, g, node, "not folded: a random op (GRAPH_PROP_RANDOM)");
        return 0;
    }
    for (int j = 0; j < n->nin; j++)
        if (!opt_o1_is_const(s, n->in[j]))
            return 0;
    if (opt_o1_node_pinned(s, node)) {
        opt_explain(s->ctx, g, node,
                    "not folded: its result is a graph output or "
                    "guarded (kept computed as traced)");
        return 0;
    }
    size_t ib, ob;
    io_bytes(g, n, &ib, &ob);
    if (ob > FOLD_BLOWUP * ib && ob > FOLD_BIG) {
        opt_explain(s->ctx, g, node,
                    "not folded: the result (%zu bytes) would be "
                    "over %dx its inputs (%zu bytes) and over %zu bytes",
                    ob, FOLD_BLOWUP, ib, FOLD_BIG);
        return 0;
    }
    if (!opt_fold_take(s->ctx, ob)) {
        opt_explain(s->ctx, g, node,
                    "not folded: the result (%zu bytes) would pass the folding budget "
                    "(%lld bytes left of opt_options.fold_budget); left to run at replay",
                    ob, (long long)*s->ctx->fold_left);
        return 0;
    }
    int32_t out[GRAPH_MAX_NODE_IO], in[GRAPH_MAX_NODE_IO];
    int nout = 0;
    char err[512];
    graph_op op = n->op;
    graph_attrs attrs;
    const void *a = tg_node_attrs(n);
    if (a)
        memcpy(&attrs, a, graph_ops[op].attr_size);
    memcpy(in, n->in, sizeof *in * (size_t)n->nin);
    tg_status st = opt_fold_eval(g, op, in, n->nin, a ? &attrs : NULL, out, GRAPH_MAX_NODE_IO,
                                 &nout, err, sizeof err);
    n = &g->nodes[node];
    if (st != TG_OK)
        opt_fold_give(s->ctx, ob);
    if (st == TG_ERR_NOMEM) {
        s->st = opt_fail(s->ctx, g, node, st, "%s", err);
        return -1;
    }
    if (st != TG_OK || nout != n->nout) {
        opt_explain(s->ctx, g, node,
                    "not folded: the kernel failed on the constants "
                    "(%s); left to fail at run time",
                    err);
        return 0;
    }
    if (opt_o1_grow(s) != 0)
        return -1;
    replace_outputs(s, node, out);
    return 1;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_o1_state s;
    if (opt_o1_init(&s, g, ctx) != TG_OK)
        return opt_o1_finish(&s);
    /* sized[v]: v is computed from an input with a dynamic dim (nodes are
     * in order; the constants folding adds are not) */
    int32_t nsized = g->nvalues;
    uint8_t *sized = tg_calloc((size_t)nsized + 1, 1);
    if (!sized) {
        s.st = opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
        return opt_o1_finish(&s);
    }
    for (int32_t v = 0; v < nsized; v++)
        sized[v] = g->values[v].kind == GRAPH_VALUE_INPUT && g->values[v].dyn;
    for (int32_t i = 0; i < g->nnodes && s.st == TG_OK; i++) {
        if (g->nodes[i].flags & GRAPH_NODE_DEAD)
            continue;
        opt_o1_resolve_inputs(&s, i);
        int dep = 0;
        for (int k = 0; k < g->nodes[i].nin; k++)
            dep |= g->nodes[i].in[k] < nsized && sized[g->nodes[i].in[k]];
        for (int k = 0; k < g->nodes[i].nout; k++)
            if (g->nodes[i].out[k] < nsized)
                sized[g->nodes[i].out[k]] = (uint8_t)dep;
        if (!opt_o1_node_pinned(&s, i) && fold_empty(&s, i, dep) != 0)
            continue;
        fold_node(&s, i);
    }
    tg_free(sized);
    return opt_o1_finish(&s);
}

const opt_pass opt_pass_fold = {"fold", run};
