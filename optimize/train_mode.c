/*
 * train_mode.c - the train/eval switch of a graph (opt_set_training, opt.h).
 *
 * A graph is recorded in training form: dropout draws masks, rng_advance
 * moves the generator on, batch_norm_train normalizes with the batch's
 * statistics and updates the running ones.  Setting it to eval rewrites,
 * in place, without a new trace:
 *   - dropout(x, gen)              -> x;
 *   - rng_advance(gen)             -> gen (the generator is left as it was);
 *   - batch_norm_train(x, s, b, rm, rv) -> batch_norm(x, s, b, rm, rv) with
 *     the same eps (the running statistics, as nn.BatchNorm2d.eval()), and
 *     its new running statistics (outputs 1, 2) -> rm and rv, so the state
 *     they would have updated keeps its value; one with the relu
 *     attribute (the -O2 fusion) gets its relu back after the batch_norm,
 *     one with a fused pool (output 5) its max_pool2d of that.
 * Every use moves through opt_replace_uses (nodes, graph outputs and the
 * lists it keeps in step), then dead code goes (the DCE pass) and the
 * graph is sorted and compacted.  The batch statistics (outputs 3, 4)
 * have no eval form: a graph that reads them (a backward through the
 * batch norm) is refused, naming the node, and left unchanged.
 */
#include <stdio.h>
#include <string.h>

#include "../graph/errors.h"
#include "opt.h"
#include "../graph/graph_impl.h"

/* The first live node reading v (or -2: a graph output or guard), else -1. */
static int32_t first_reader(const graph *g, int32_t v)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == v)
                return i;
    }
    return opt_pinned(g, v) ? -2 : -1;
}

/* Nonzero if v is guarded (opt_replace_uses must not move a guarded value). */
static int guarded(const graph *g, int32_t v)
{
    for (int32_t i = 0; i < g->nguards; i++)
        if (g->guards[i].value == v)
            return 1;
    return 0;
}

/* Checks that every training node can be rewritten; TG_OK or the first
 * refusal in ctx. */
static tg_status check_all(graph *g, opt_ctx *ctx)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if (n->op == GRAPH_OP_batch_norm_train) {
            for (int k = 3; k < 5; k++) {
                int32_t r = first_reader(g, n->out[k]);
                if (r == -1)
                    continue;
                char who[200];
                if (r == -2)
                    snprintf(who, sizeof who, "a graph output or guard");
                else
                    snprintf(who, sizeof who, "node %d (%s)", (int)r, graph_ops[g->nodes[r].op].name);
                return opt_fail(ctx, g, i, TG_ERR_UNSUPPORTED,
                                "its batch %s (output %d) is read by %s: batch statistics "
                                "have no eval form (a graph with a backward through the "
                                "batch norm cannot be set to eval)",
                                k == 3 ? "mean" : "1/std", k, who);
            }
            for (int k = 0; k < 3; k++)
                if (guarded(g, n->out[k]))
                    return opt_fail(ctx, g, i, TG_ERR_UNSUPPORTED,
                                    "output %d is guarded: it cannot be replaced", k);
        } else if (n->op == GRAPH_OP_dropout || n->op == GRAPH_OP_rng_advance) {
            if (guarded(g, n->out[0]))
                return opt_fail(ctx, g, i, TG_ERR_UNSUPPORTED,
                                "its output is guarded: it cannot be replaced");
        }
    }
    return TG_OK;
}

/* Appends op(in[0..nin)) for node i's eval form (with i's provenance);
 * its output in *out; TG_OK or the failure in ctx. */
static tg_status add_eval(graph *g, opt_ctx *ctx, int32_t i, graph_op op, const int32_t *in,
                          int nin, const void *attrs, int32_t *out)
{
    int32_t v = -1, id = graph_add_node(g, op, in, nin, attrs, &v, 1);
    if (id < 0)
        return opt_fail(ctx, g, i,
                        graph_error_status(g) != TG_OK ? graph_error_status(g) : TG_ERR_NOMEM,
                        "adding its eval form: %s", graph_error(g));
    tg_status st = opt_merge_prov(g, id, i);
    if (st != TG_OK)
        return opt_fail(ctx, g, i, st, "out of memory");
    *out = v;
    return TG_OK;
}

tg_status opt_set_training(graph *g, int training, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!g) {
        if (err && errlen)
            snprintf(err, errlen, "opt_set_training: NULL graph");
        return TG_ERR_NULL;
    }
    if (training)
        return TG_OK; /* recorded in training form; nothing to undo */
    opt_pass_stats stats = {.name = "set_training"};
    opt_ctx ctx = {.stats = &stats, .err = err, .errlen = errlen};
    tg_status st = check_all(g, &ctx);
    if (st != TG_OK)
        return st;
    int32_t n0 = g->nnodes, changed = 0;
    for (int32_t i = 0; i < n0 && st == TG_OK; i++) {
        graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if (n->op == GRAPH_OP_dropout || n->op == GRAPH_OP_rng_advance) {
            opt_replace_uses(g, n->out[0], n->in[0]);
            n->flags |= GRAPH_NODE_DEAD;
            changed++;
        } else if (n->op == GRAPH_OP_batch_norm_train) {
            const graph_batch_norm_train_attrs *ta = tg_node_attrs(n);
            graph_batch_norm_attrs a;
            graph_attrs_default(GRAPH_OP_batch_norm, &a);
            a.eps = ta->eps;
            int relu = ta->relu != 0, pool = ta->pool_kernel.n > 0;
            graph_max_pool2d_attrs pa = {ta->pool_kernel, ta->pool_stride, ta->pool_padding};
            int32_t in[5], y = -1, pv = -1;
            memcpy(in, n->in, sizeof in);
            if ((st = add_eval(g, &ctx, i, GRAPH_OP_batch_norm, in, 5, &a, &y)) != TG_OK)
                break;
            /* the fused relu and pool (epilogue pass) come back as their ops */
            if (relu && (st = add_eval(g, &ctx, i, GRAPH_OP_relu, &y, 1, NULL, &y)) != TG_OK)
                break;
            if (pool &&
                (st = add_eval(g, &ctx, i, GRAPH_OP_max_pool2d, &y, 1, &pa, &pv)) != TG_OK)
                break;
            n = &g->nodes[i];
            if (pool)
                opt_replace_uses(g, n->out[5], pv);
            opt_replace_uses(g, n->out[0], y);
            opt_replace_uses(g, n->out[1], n->in[3]);
            opt_replace_uses(g, n->out[2], n->in[4]);
            n->flags |= GRAPH_NODE_DEAD;
            changed++;
        }
    }
    if (st == TG_OK && changed) {
        st = opt_pass_dce.run(g, &ctx);
        if (st == TG_OK && (st = graph_toposort(g)) == TG_OK)
            st = graph_compact(g);
        if (st != TG_OK && err && errlen && !err[0])
            snprintf(err, errlen, "opt_set_training: %s", graph_error(g));
    }
    return st;
}
