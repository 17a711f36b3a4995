/*
 * view_sink.c - moves transposes and reshapes below the elementwise ops
 * that read them (-O2), so that the producer's kernel meets its epilogue
 * and inverse transposes meet and cancel.
 *
 *   op(transpose(a, p), transpose(b, p), ...) -> transpose(op(a, b, ...), p)
 *   op(reshape(a, s), reshape(b, s), ...)     -> reshape(op(a, b, ...), s)
 *
 * op is elementwise (GRAPH_PROP_ELEMENTWISE, not `fused`) and every
 * operand has op's output type (no broadcasting); every operand is made
 * by the same kind of view with the same attributes from values of one
 * type.  Exact: an elementwise op computes each element alone, so it
 * gives the same bits on the elements in either order.  A transpose
 * copies, so each operand transpose must be read by op only (the move
 * then replaces several copies by one); a reshape is free, so shared
 * ones are fine (the old view stays for its other readers).  op's output
 * and the views' must not be pinned (they disappear or change maker).
 * And a batch_norm whose channels the views keep (sink_bn below):
 *
 *   batch_norm(transpose(reshape(y, [A1, A2, C, ...]), p)) with y [A1*A2, C, ...]
 *     -> transpose(reshape(batch_norm(y), ...), p)
 *
 * Why: the ONNX import runs a 3-D Conv as a conv2d over [N*D', C*kd, H, W]
 * whose output is reshaped to [N, D', O, H', W'] and transposed to NCDHW
 * (formats/onnx/onnx_read_conv.c), and takes its input back to [N, D, C,
 * H, W] with the inverse transpose.  Moving the views below the relu and
 * the residual add of a video ResNet block puts those on the conv2d's
 * output, where the epilogue pass fuses them (and a BatchNorm3d that
 * the exporter kept on it, where conv-bn folds it), and makes the output's
 * transpose meet the next conv's, which the -O1 fixed point cancels.
 * Before each sweep a transpose of a transpose that undoes it is dropped
 * (its readers read the first one's input), so that a transpose also read
 * by its inverse counts as read by op only.  The pass sweeps until nothing
 * moves (each sweep moves each view at most one op down; a bound of 64
 * sweeps is a guard only).
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "fuse_util.h"
#include "simplify.h"
#include "../graph/graph_impl.h"

#define SINK_MAX_IN 3

/* Nonzero if node i is an op this pass moves views below. */
static int sinkable(const graph *g, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    if (!(graph_ops[n->op].props & GRAPH_PROP_ELEMENTWISE) || n->op == GRAPH_OP_fused ||
        n->nout != 1 || n->nin < 1 || n->nin > SINK_MAX_IN)
        return 0;
    for (int k = 0; k < n->nin; k++)
        if (!fu_same_type(g, n->in[k], n->out[0]))
            return 0;
    return 1;
}

/* Slots of node i that read v. */
static int slots_reading(const graph_node *n, int32_t v)
{
    int c = 0;
    for (int k = 0; k < n->nin; k++)
        c += n->in[k] == v;
    return c;
}

/*
 * The view kind every operand of node i comes from (transpose or reshape,
 * the same attributes, inputs of one type), its nodes in views[]; 0 when
 * none.  u counts the uses of the values that existed when the sweep
 * began; a newer operand waits for the next sweep.
 */
static int common_view(const graph *g, const opt_uses *u, int32_t i,
                       int32_t views[SINK_MAX_IN])
{
    const graph_node *n = &g->nodes[i];
    graph_op kind = GRAPH_OP_COUNT;
    for (int k = 0; k < n->nin; k++) {
        int32_t v = n->in[k], p = fu_producer(g, v);
        if (p < 0 || v >= u->nvalues || opt_pinned(g, v))
            return 0;
        const graph_node *pn = &g->nodes[p];
        if (pn->op != GRAPH_OP_transpose && pn->op != GRAPH_OP_reshape)
            return 0;
        if (k == 0)
            kind = pn->op;
        else if (pn->op != kind || !fu_same_type(g, pn->in[0], g->nodes[views[0]].in[0]) ||
                 !opt_o1_attrs_equal(kind, tg_node_attrs(pn),
                                     tg_node_attrs(&g->nodes[views[0]])))
            return 0;
        /* a transpose is a copy: only op may read it */
        if (kind == GRAPH_OP_transpose && opt_nuses(u, v) != slots_reading(n, v))
            return 0;
        views[k] = p;
    }
    return 1;
}

/* Rewrites node i as view(op(sources)); 1 if it did, 0 if the type did
 * not come out equal (the new nodes are left dead), -1 on failure. */
static int sink(graph *g, opt_ctx *ctx, int32_t i, const int32_t views[SINK_MAX_IN])
{
    const graph_node *n = &g->nodes[i];
    graph_op op = n->op, kind = g->nodes[views[0]].op;
    int nin = n->nin;
    int32_t src[SINK_MAX_IN], prov[1 + SINK_MAX_IN], old = n->out[0];
    unsigned char oattr[256], vattr[256];
    size_t osz = graph_ops[op].attr_size, vsz = graph_ops[kind].attr_size;
    if (osz > sizeof oattr || vsz > sizeof vattr)
        return 0;
    /* copies: adding nodes may move the nodes' attributes */
    if (osz)
        memcpy(oattr, tg_node_attrs(n), osz);
    memcpy(vattr, tg_node_attrs(&g->nodes[views[0]]), vsz);
    prov[0] = i;
    for (int k = 0; k < nin; k++) {
        src[k] = g->nodes[views[k]].in[0];
        prov[1 + k] = views[k];
    }
    int32_t mid = -1, out = -1;
    int32_t a = fu_add_node(g, ctx, op, src, nin, osz ? oattr : NULL, &mid, 1, prov, 1);
    if (a < 0)
        return -1;
    int32_t b = fu_add_node(g, ctx, kind, &mid, 1, vattr, &out, 1, prov, 1 + nin);
    if (b < 0)
        return -1;
    /* new values carry no dynamic marks until the manager re-marks them
     * (and checks that no output's changed): compare the traced types */
    if (!graph_type_eq(&g->values[out].type, &g->values[old].type)) {
        g->nodes[a].flags |= GRAPH_NODE_DEAD;
        g->nodes[b].flags |= GRAPH_NODE_DEAD;
        return 0;
    }
    opt_replace_uses(g, old, out);
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    ctx->stats->rewritten++;
    for (int k = 0; k < nin; k++) /* drop the views nothing reads now */
        if (kind == GRAPH_OP_transpose && !(g->nodes[views[k]].flags & GRAPH_NODE_DEAD)) {
            g->nodes[views[k]].flags |= GRAPH_NODE_DEAD;
            ctx->stats->removed++;
        }
    ctx->changed = 1;
    return 1;
}

/*
 * batch_norm(transpose(reshape(y, [A1, A2, C, ...]), p)) with y [A1*A2,
 * C, ...] (the same trailing elements) and p[1] = 2: the batch_norm's
 * channels are y's, and every element keeps its channel through the
 * views, so it moves below both (the form a 3-D Conv's output has, see
 * above; conv-bn then folds it into the conv2d).  The transpose must be
 * read by the batch_norm only.  1 if it moved, 0 if not, -1 on failure.
 */
static int sink_bn(graph *g, opt_ctx *ctx, const opt_uses *u, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    int32_t v = n->in[0], t = fu_producer(g, v);
    if (t < 0 || g->nodes[t].op != GRAPH_OP_transpose || v >= u->nvalues ||
        opt_pinned(g, v) || opt_nuses(u, v) != 1)
        return 0;
    int32_t rv = g->nodes[t].in[0], r = fu_producer(g, rv);
    if (r < 0 || g->nodes[r].op != GRAPH_OP_reshape)
        return 0;
    int32_t y = g->nodes[r].in[0];
    const graph_type *yt = &g->values[y].type, *rt = &g->values[rv].type;
    const graph_ints *perm = &((const graph_transpose_attrs *)tg_node_attrs(&g->nodes[t]))->perm;
    if (yt->ndim < 2 || rt->ndim < 3 || perm->v[1] != 2 || rt->dim[0] * rt->dim[1] != yt->dim[0] ||
        rt->dim[2] != yt->dim[1])
        return 0;
    int64_t ry = 1, rr = 1;
    for (int d = 2; d < yt->ndim; d++)
        ry *= yt->dim[d];
    for (int d = 3; d < rt->ndim; d++)
        rr *= rt->dim[d];
    if (ry != rr)
        return 0;
    graph_batch_norm_attrs ba = *(const graph_batch_norm_attrs *)tg_node_attrs(n);
    graph_reshape_attrs ra = *(const graph_reshape_attrs *)tg_node_attrs(&g->nodes[r]);
    graph_transpose_attrs ta = *(const graph_transpose_attrs *)tg_node_attrs(&g->nodes[t]);
    int32_t in[5], old = n->out[0], prov[3] = {i, t, r}, b0, b1, b2;
    memcpy(in, n->in, sizeof in);
    in[0] = y;
    if (fu_add_node(g, ctx, GRAPH_OP_batch_norm, in, 5, &ba, &b0, 1, prov, 1) < 0 ||
        fu_add_node(g, ctx, GRAPH_OP_reshape, &b0, 1, &ra, &b1, 1, prov, 3) < 0 ||
        fu_add_node(g, ctx, GRAPH_OP_transpose, &b1, 1, &ta, &b2, 1, prov, 3) < 0)
        return -1;
    if (!graph_type_eq(&g->values[b2].type, &g->values[old].type)) {
        for (int k = 0; k < 3; k++)
            g->nodes[g->nnodes - 1 - k].flags |= GRAPH_NODE_DEAD;
        return 0;
    }
    opt_replace_uses(g, old, b2);
    g->nodes[i].flags |= GRAPH_NODE_DEAD;
    g->nodes[t].flags |= GRAPH_NODE_DEAD;
    ctx->stats->rewritten++;
    ctx->stats->removed++;
    ctx->changed = 1;
    return 1;
}

/*
 * transpose(transpose(x, p), q) with q after p the identity -> x, as the
 * -O1 simplify does, so that a transpose that also feeds its inverse
 * (the input of the next 3-D Conv) counts as read by op only.  1 if any.
 */
static int cancel_pairs(graph *g, opt_ctx *ctx)
{
    int any = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        graph_node *n = &g->nodes[i];
        if ((n->flags & GRAPH_NODE_DEAD) || n->op != GRAPH_OP_transpose ||
            opt_pinned(g, n->out[0]))
            continue;
        int32_t p = fu_producer(g, n->in[0]);
        if (p < 0 || g->nodes[p].op != GRAPH_OP_transpose)
            continue;
        const graph_ints *q = &((const graph_transpose_attrs *)tg_node_attrs(n))->perm;
        const graph_ints *pp =
            &((const graph_transpose_attrs *)tg_node_attrs(&g->nodes[p]))->perm;
        int id = q->n == pp->n;
        for (int d = 0; id && d < q->n; d++)
            id = pp->v[q->v[d]] == d;
        int32_t x = g->nodes[p].in[0];
        if (!id || !fu_same_type(g, x, n->out[0]))
            continue;
        opt_replace_uses(g, n->out[0], x);
        n->flags |= GRAPH_NODE_DEAD;
        ctx->stats->removed++;
        ctx->changed = 1;
        any = 1;
    }
    return any;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    for (int sweep = 0; sweep < 64; sweep++) {
        cancel_pairs(g, ctx);
        opt_uses u;
        if (opt_uses_build(g, &u) != TG_OK)
            return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "view-sink: out of memory");
        int moved = 0;
        for (int32_t i = 0, end = g->nnodes; i < end; i++) {
            int32_t views[SINK_MAX_IN];
            if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == GRAPH_OP_batch_norm &&
                !opt_pinned(g, g->nodes[i].out[0])) {
                int r = sink_bn(g, ctx, &u, i);
                if (r < 0) {
                    opt_uses_free(&u);
                    return TG_ERR_STATE;
                }
                moved += r;
                continue;
            }
            if ((g->nodes[i].flags & GRAPH_NODE_DEAD) || !sinkable(g, i) ||
                opt_pinned(g, g->nodes[i].out[0]) || !common_view(g, &u, i, views))
                continue;
            int r = sink(g, ctx, i, views);
            if (r < 0) {
                opt_uses_free(&u);
                return TG_ERR_STATE;
            }
            moved += r;
        }
        opt_uses_free(&u);
        if (!moved)
            break;
        /* as the manager does after a pass: the next sweep compares the
         * dynamic dims of the values this one made */
        tg_status st = graph_toposort(g);
        if (st == TG_OK)
            st = graph_compact(g);
        if (st == TG_OK)
            st = graph_propagate_dynamic(g);
        if (st != TG_OK)
            return opt_fail(ctx, g, -1, st, "view-sink: %s", graph_error(g));
    }
    return TG_OK;
}

const opt_pass opt_pass_view_sink = {"view-sink", run};
