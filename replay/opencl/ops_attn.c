/*
 * ops_attn.c - attention as one kernel (cl/nn_attn.cl).  The chain
 *
 *   s = matmul(q, k) {transpose_b}     q [..., M, D], k [..., N, D]
 *   t = div(s, c) | mul(s, c) | mul(c, s)   c a scalar f32 constant (optional)
 *   p = softmax(t) over the last axis
 *   o = matmul(p, v)                    v [..., N, DV]
 *
 * with the batch dims of q, k and v equal (each one static, or dynamic
 * with one symbol in all three: no broadcast at any run), all f32, and s,
 * t, p each used once (by the next node of the chain: no guard, not a
 * graph output), runs at o's node as one launch: ocl_attn_find marks the
 * chain at plan_new, backend.c gives the first three nodes no kernels
 * (ocl_node.absorbed: their steps launch nothing and their values get no
 * memory) and prepares o's node with ocl_attn_op, which reads q and k as
 * extra inputs (ocl_prep.xin; run.c keeps their memory alive to o's step).
 * On a GPU the chain was four launches of a few microseconds of launch
 * overhead each; the encoder workload runs two of them.
 *
 * The layout around the chain (find_layout), when q, k, v and o are
 * static: each of q, k, v walks back through split, slice, reshape,
 * flatten, squeeze, unsqueeze and transpose nodes whose outputs have one
 * use, while each step is a strided view of its input (reshape: NumPy's
 * no-copy rule; split and slice: an offset, slice steps >= 1; transpose:
 * permuted strides) and a split's outputs all feed this chain; o walks on
 * through the views and transposes that consume it once.  Those nodes are
 * absorbed as well: the kernel reads q, k, v from the sources (xin, three
 * of them) and writes the last view's value (ocl_prep.xout; run.c gives
 * it its own buffer alive from this step), through element strides with
 * the batch dims merged to at most two (else nothing of the layout is
 * absorbed).  The encoder's linear -> split -> reshape/transpose x3 ->
 * attention -> transpose -> reshape is then one launch after the linear.
 *
 * TG_OPENCL_ATTN=fused|off|auto chooses; auto (the default) fuses on
 * devices other than CPUs.  On PoCL (2 cores) the fused kernel was slower
 * than the four launches (the encoder -O2 10.9 vs 9.2 ms per run): there
 * a launch costs little and its exp-heavy serial parts vectorize worse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/dtype.h"
#include "../../graph/infer_shape.h"
#include "ocl_rt.h"
#include "../../graph/graph_impl.h"

/* Bytes of __local memory the kernel may take: NVIDIA's and most GPUs'
 * 48 KB less room for the compiler's own. */
#define ATTN_LOCAL_MAX (40 * 1024)
#define ATTN_WG 256
#define ATTN_NACC_MAX 64

typedef struct attn_chain {
    int32_t mm1, scale_node, softmax, mm2; /* node ids; scale_node -1 if none */
    int32_t q, k, v, s, t, p;              /* value ids (t == s without a scale) */
    int scale_op;                          /* 0 none, 1 divide, 2 multiply */
    float scale;
} attn_chain;

int ocl_attn_mode(cl_device_id device, char *err, size_t errlen)
{
    return ocl_device_switch("TG_OPENCL_ATTN", "fused", device, err, errlen);
}

static int is_f32(const graph *g, int32_t id) { return g->values[id].type.dtype == GRAPH_F32; }

/* The node producing intermediate id, or -1. */
static int32_t producer(const graph *g, int32_t id)
{
    const graph_value *v = &g->values[id];
    if (v->kind != GRAPH_VALUE_INTER || v->node < 0 || (g->nodes[v->node].flags & GRAPH_NODE_DEAD))
        return -1;
    return v->node;
}

/* A scalar f32 constant's value, or 0 if id is not one. */
static int scalar_const(const graph *g, int32_t id, float *out)
{
    const graph_value *v = &g->values[id];
    if (v->kind != GRAPH_VALUE_CONST || v->type.dtype != GRAPH_F32 || !v->data ||
        graph_type_numel(&v->type) != 1)
        return 0;
    memcpy(out, v->data, sizeof *out);
    return 1;
}


/* Batch dim d of q, k and v: equal at every run (static in all three, or
 * one symbol in all three). */
static int batch_dim_tied(const graph *g, const attn_chain *c, int d)
{
    const graph_value *x[3] = {&g->values[c->q], &g->values[c->k], &g->values[c->v]};
    int dyn = 0;
    for (int i = 0; i < 3; i++) {
        if (x[i]->type.dim[d] != x[0]->type.dim[d] || ((x[i]->dder >> d) & 1))
            return 0;
        dyn += (x[i]->dyn >> d) & 1;
    }
    if (dyn == 0)
        return 1;
    return dyn == 3 && x[1]->sym[d] == x[0]->sym[d] && x[2]->sym[d] == x[0]->sym[d];
}

/* A head dim (D or DV, the last dim of value id): static and >= 1. */
static int head_dim_static(const graph *g, int32_t id)
{
    const graph_value *v = &g->values[id];
    int d = v->type.ndim - 1;
    return v->type.dim[d] >= 1 && !((v->dyn >> d) & 1) && !((v->dder >> d) & 1);
}

/*
 * The chain ending at node mm2 (structure, types and attributes; not the
 * uses of its intermediates): 1 and *c filled, or 0.
 */
static int chain_at(const graph *g, int32_t mm2, attn_chain *c)
{
    const graph_node *n2 = &g->nodes[mm2];
    if (n2->op != GRAPH_OP_matmul || n2->nin != 2 || n2->nout != 1)
        return 0;
    const graph_matmul_attrs *a2 = tg_node_attrs(n2);
    if (a2->transpose_a || a2->transpose_b)
        return 0;
    memset(c, 0, sizeof *c);
    c->mm2 = mm2;
    c->p = n2->in[0];
    c->v = n2->in[1];
    if ((c->softmax = producer(g, c->p)) < 0)
        return 0;
    const graph_node *sm = &g->nodes[c->softmax];
    if (sm->op != GRAPH_OP_softmax || sm->nin != 1)
        return 0;
    const graph_softmax_attrs *sa = tg_node_attrs(sm);
    c->t = sm->in[0];
    int rank = g->values[c->t].type.ndim;
    if (rank < 2 || (sa->axis != -1 && sa->axis != rank - 1))
        return 0;
    int32_t prod = producer(g, c->t);
    if (prod < 0)
        return 0;
    c->scale_node = -1;
    c->s = c->t;
    const graph_node *pn = &g->nodes[prod];
    if ((pn->op == GRAPH_OP_div || pn->op == GRAPH_OP_mul) && pn->nin == 2) {
        int at = pn->op == GRAPH_OP_mul && scalar_const(g, pn->in[0], &c->scale) ? 1 : 0;
        if (!scalar_const(g, pn->in[1 - at], &c->scale))
            return 0;
        c->scale_node = prod;
        c->scale_op = pn->op == GRAPH_OP_div ? 1 : 2;
        c->s = pn->in[at];
        if (!graph_type_eq(&g->values[c->s].type, &g->values[c->t].type) ||
            (prod = producer(g, c->s)) < 0)
            return 0;
        pn = &g->nodes[prod];
    }
    if (pn->op != GRAPH_OP_matmul || pn->nin != 2)
        return 0;
    const graph_matmul_attrs *a1 = tg_node_attrs(pn);
    if (a1->transpose_a || !a1->transpose_b)
        return 0;
    c->mm1 = prod;
    c->q = pn->in[0];
    c->k = pn->in[1];
    const graph_type *tq = &g->values[c->q].type, *tk = &g->values[c->k].type,
                     *tv = &g->values[c->v].type;
    if (!is_f32(g, c->q) || !is_f32(g, c->k) || !is_f32(g, c->v) || !is_f32(g, c->s) ||
        !is_f32(g, c->p) || tq->ndim != rank || tk->ndim != rank || tv->ndim != rank ||
        g->values[c->p].type.ndim != rank || !head_dim_static(g, c->q) ||
        !head_dim_static(g, c->v) || tk->dim[rank - 1] != tq->dim[rank - 1] ||
        tv->dim[rank - 2] != tk->dim[rank - 2])
        return 0;
    for (int d = 0; d < rank - 2; d++)
        if (!batch_dim_tied(g, c, d))
            return 0;
    return 1;
}

/* The kernel's geometry for head dims D, DV: the block of query rows and
 * keys per tile (equal), the outputs per item; 0 if none fits. */
static int geometry(int64_t D, int64_t DV, int *bm, int *nacc)
{
    for (int b = 32; b >= 1; b /= 2) {
        int64_t floats = (int64_t)b * (D + 1) * 2 + (int64_t)b * DV + (int64_t)b * (b + 1) + 3 * b;
        int64_t na = ((int64_t)b * DV + ATTN_WG - 1) / ATTN_WG;
        if (floats * 4 <= ATTN_LOCAL_MAX && na <= ATTN_NACC_MAX) {
            *bm = b;
            *nacc = (int)na;
            return 1;
        }
    }
    return 0;
}

/* ---- the layout around the chain ---- */

/*
 * A strided view of a source value's buffer: element (i_0, ..., i_nd-1) at
 * off + sum i_d st[d].
 */
typedef struct sview {
    int nd;
    int64_t dim[GRAPH_MAX_DIMS], st[GRAPH_MAX_DIMS], off;
} sview;

/* The layout of one chain: q, k, v (0..2) and the output (3) as views of
 * src[0..2] and dst (-1 and o's own dense layout when nothing after o
 * was absorbed), the batch dims merged to nb <= 2 (bdim, per view bst). */
typedef struct attn_layout {
    int on;            /* anything absorbed around the chain */
    int32_t src[3], dst;
    sview x[4];
    int nb;
    int64_t bdim[2];
} attn_layout;

/* A layout op the chain may absorb, and how: views only (reshape and
 * friends, transpose), or also a part of its input (split, slice). */
static int view_op(graph_op op)
{
    return (graph_ops[op].props & GRAPH_PROP_VIEW) || op == GRAPH_OP_transpose;
}

static int part_op(graph_op op) { return op == GRAPH_OP_split || op == GRAPH_OP_slice; }

/* Value id static (no dynamic or data-dependent dim), f32, dims >= 1. */
static int static_f32(const graph *g, int32_t id)
{
    const graph_value *v = &g->values[id];
    if (v->type.dtype != GRAPH_F32 || v->dyn || v->dder)
        return 0;
    for (int d = 0; d < v->type.ndim; d++)
        if (v->type.dim[d] < 1)
            return 0;
    return 1;
}

static void dense(const graph_type *t, sview *v)
{
    v->nd = t->ndim;
    v->off = 0;
    int64_t st = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        v->dim[d] = t->dim[d];
        v->st[d] = st;
        st *= t->dim[d];
    }
}

/*
 * in reshaped to the dims of to (the same count, every dim >= 1) as a
 * strided view, as NumPy's no-copy reshape: each run of dims of to that
 * covers a run of in's dims must find those contiguous.  1 and *out, or 0.
 */
static int view_reshape(const sview *in, const graph_type *to, sview *out)
{
    int64_t od[GRAPH_MAX_DIMS], os[GRAPH_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < in->nd; d++) /* size-1 dims: any stride */
        if (in->dim[d] != 1)
            od[on] = in->dim[d], os[on++] = in->st[d];
    int nn = to->ndim;
    out->nd = nn;
    out->off = in->off;
    for (int d = 0; d < nn; d++)
        out->dim[d] = to->dim[d], out->st[d] = 0;
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nn && oi < on) {
        int64_t np = to->dim[ni], op = od[oi];
        while (np != op) {
            if (np < op) {
                if (nj >= nn)
                    return 0;
                np *= to->dim[nj++];
            } else {
                if (oj >= on)
                    return 0;
                op *= od[oj++];
            }
        }
        for (int k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1])
                return 0;
        out->st[nj - 1] = os[oj - 1];
        for (int k = nj - 1; k > ni; k--)
            out->st[k - 1] = out->st[k] * to->dim[k];
        ni = nj++;
        oi = oj++;
    }
    for (; ni < nn; ni++) /* trailing size-1 dims */
        if (to->dim[ni] != 1)
            return 0;
    return oi >= on;
}

/* Output `which` of layout node n as a view of its input's view x (in
 * place).  1, or 0 when not expressible. */
static int view_step(const graph *g, const graph_node *n, int which, sview *x)
{
    const graph_type *ti = &g->values[n->in[0]].type, *to = &g->values[n->out[which]].type;
    char why[200];
    if (n->op == GRAPH_OP_transpose) {
        int perm[GRAPH_MAX_DIMS];
        const graph_transpose_attrs *a = tg_node_attrs(n);
        if (graph_transpose_perm(ti, &a->perm, perm, why, sizeof why) != TG_OK)
            return 0;
        sview y = *x;
        for (int d = 0; d < x->nd; d++)
            y.dim[d] = x->dim[perm[d]], y.st[d] = x->st[perm[d]];
        *x = y;
        return 1;
    }
    if (n->op == GRAPH_OP_split) {
        const graph_split_attrs *a = tg_node_attrs(n);
        int ax = graph_axis(a->axis, ti->ndim);
        if (ax < 0)
            return 0;
        int64_t start = 0;
        for (int j = 0; j < which; j++)
            start += g->values[n->out[j]].type.dim[ax];
        x->off += start * x->st[ax];
        x->dim[ax] = to->dim[ax];
        return 1;
    }
    if (n->op == GRAPH_OP_slice) {
        graph_slice_plan sp;
        if (graph_slice_resolve(ti, tg_node_attrs(n), &sp, why, sizeof why) != TG_OK)
            return 0;
        for (int d = 0; d < x->nd; d++) {
            if (sp.step[d] < 1 || sp.len[d] != to->dim[d])
                return 0;
            x->off += sp.start[d] * x->st[d];
            x->st[d] *= sp.step[d];
            x->dim[d] = sp.len[d];
        }
        return 1;
    }
    sview y;
    if (!view_reshape(x, to, &y))
        return 0;
    *x = y;
    return 1;
}

/* The view that inverts view node n: n's input as a view of x, a view of
 * n's output (in place).  1, or 0. */
static int unview_step(const graph *g, const graph_node *n, sview *x)
{
    const graph_type *ti = &g->values[n->in[0]].type;
    if (n->op == GRAPH_OP_transpose) {
        int perm[GRAPH_MAX_DIMS];
        char why[200];
        const graph_transpose_attrs *a = tg_node_attrs(n);
        if (graph_transpose_perm(ti, &a->perm, perm, why, sizeof why) != TG_OK)
            return 0;
        sview y = *x;
        for (int d = 0; d < x->nd; d++)
            y.dim[perm[d]] = x->dim[d], y.st[perm[d]] = x->st[d];
        *x = y;
        return 1;
    }
    sview y;
    if (!view_reshape(x, ti, &y))
        return 0;
    *x = y;
    return 1;
}

/* Each element's index, offset and strides >= 0 and in an int (the
 * kernel's within-batch arithmetic). */
static int view_fits(const sview *x)
{
    int64_t last = x->off;
    if (x->off < 0 || x->off > INT32_MAX)
        return 0;
    for (int d = 0; d < x->nd; d++) {
        if (x->st[d] < 0 || x->st[d] > INT32_MAX)
            return 0;
        last += (x->dim[d] - 1) * x->st[d];
    }
    return last <= INT32_MAX;
}

/*
 * The batch dims (all but the last two) of the four views, size 1 dropped
 * and neighbours merged where every view allows; 1 if at most two remain
 * (L->nb, bdim, and each view's nb batch strides in st[0..nb-1], its row
 * and column strides in st[nb], st[nb + 1]).
 */
static int merge_batch(attn_layout *L)
{
    int r = L->x[0].nd, nb = 0;
    int64_t dim[GRAPH_MAX_DIMS], st[4][GRAPH_MAX_DIMS];
    for (int d = 0; d < r - 2; d++) {
        if (L->x[0].dim[d] == 1)
            continue;
        int merge = nb > 0;
        for (int i = 0; merge && i < 4; i++)
            merge = st[i][nb - 1] == L->x[i].dim[d] * L->x[i].st[d];
        if (merge) {
            dim[nb - 1] *= L->x[0].dim[d];
            for (int i = 0; i < 4; i++)
                st[i][nb - 1] = L->x[i].st[d];
            continue;
        }
        dim[nb] = L->x[0].dim[d];
        for (int i = 0; i < 4; i++)
            st[i][nb] = L->x[i].st[d];
        nb++;
    }
    if (nb > 2)
        return 0;
    L->nb = nb;
    for (int b = 0; b < nb; b++)
        L->bdim[b] = dim[b];
    for (int i = 0; i < 4; i++) {
        sview *x = &L->x[i];
        int64_t row = x->st[r - 2], col = x->st[r - 1], rows = x->dim[r - 2],
                cols = x->dim[r - 1];
        for (int b = 0; b < nb; b++)
            x->st[b] = st[i][b], x->dim[b] = dim[b];
        x->st[nb] = row, x->st[nb + 1] = col;
        x->dim[nb] = rows, x->dim[nb + 1] = cols;
        x->nd = nb + 2;
    }
    return 1;
}

#define CHAIN_MAX 16

/* One operand's layout chain, operand first: nodes[i] made vals[i]
 * (output which[i] of it) from vals[i + 1] = its input; n nodes. */
typedef struct op_chain {
    int n;
    int32_t nodes[CHAIN_MAX], which[CHAIN_MAX], vals[CHAIN_MAX + 1];
} op_chain;

/* Output index of value id at node n, or -1. */
static int out_index(const graph_node *n, int32_t id)
{
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] == id)
            return j;
    return -1;
}

/* The longest run of unclaimed layout nodes, each output used once (by
 * the next one or the chain), that made operand x. */
static void walk_back(const graph *g, const int32_t *uses, const int8_t *role, int32_t x,
                      op_chain *c)
{
    c->n = 0;
    c->vals[0] = x;
    while (c->n < CHAIN_MAX) {
        int32_t id = c->vals[c->n], pn = producer(g, id);
        if (pn < 0 || uses[id] != 1 || !static_f32(g, id) || role[pn] != OCL_ATTN_NONE)
            return;
        const graph_node *n = &g->nodes[pn];
        if ((!view_op(n->op) && !part_op(n->op)) || n->nin != 1 || !static_f32(g, n->in[0]))
            return;
        c->nodes[c->n] = pn;
        c->which[c->n] = out_index(n, id);
        c->vals[++c->n] = n->in[0];
    }
}

/* Whether chains ch[0..2] name output which[b] of node nodes[b] of
 * ch[a] before (an earlier chain or position): the nodes above a split
 * are in all its outputs' chains. */
static int seen_before(const op_chain *ch, int a, int b)
{
    for (int i = 0; i <= a; i++)
        for (int j = 0; j < (i < a ? ch[i].n : b); j++)
            if (ch[i].nodes[j] == ch[a].nodes[b] && ch[i].which[j] == ch[a].which[b])
                return 1;
    return 0;
}

/* Operand 0..2's view of its chain's source (vals[n]); 0 if a step of
 * it is no strided view. */
static int chain_view(const graph *g, const op_chain *c, sview *x)
{
    dense(&g->values[c->vals[c->n]].type, x);
    for (int i = c->n - 1; i >= 0; i--)
        if (!view_step(g, &g->nodes[c->nodes[i]], c->which[i], x))
            return 0;
    return view_fits(x);
}

/*
 * The layout the chain c at its last matmul absorbs (L->on 0: none), as
 * the nodes role marks OCL_ATTN_ABSORBED; uses and cons (the consumer of
 * a value used once) of the graph.  The operands' chains walk back from
 * q, k, v through layout nodes; a split absorbed only when all its
 * outputs are these chains' (else the chain stops below it); the output
 * walks on through views used once.  Nothing when a view does not fit
 * or the batch dims do not merge to two.
 */
static void find_layout(const graph *g, const attn_chain *c, const int32_t *uses,
                        const int32_t *cons, int8_t *role, attn_layout *L)
{
    memset(L, 0, sizeof *L);
    int32_t xs[3] = {c->q, c->k, c->v}, o = g->nodes[c->mm2].out[0];
    for (int i = 0; i < 3; i++)
        if (!static_f32(g, xs[i]))
            return;
    if (!static_f32(g, o))
        return;
    op_chain ch[3];
    for (int i = 0; i < 3; i++)
        walk_back(g, uses, role, xs[i], &ch[i]);
    /* shorten until every split in them is theirs alone and each view fits */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < ch[i].n; j++) {
                const graph_node *n = &g->nodes[ch[i].nodes[j]];
                int mine = 0;
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < ch[a].n; b++)
                            mine += ch[a].nodes[b] == ch[i].nodes[j] && !seen_before(ch, a, b);
                if (mine != n->nout) {
                    ch[i].n = j;
                    changed = 1;
                    break;
                }
            }
        for (int i = 0; i < 3; i++) {
            sview x;
            while (ch[i].n > 0 && !chain_view(g, &ch[i], &x)) {
                ch[i].n--;
                changed = 1;
            }
        }
    }
    /* the output: views used once, the last one's output written */
    int32_t onodes[CHAIN_MAX], ovals[CHAIN_MAX + 1];
    int on = 0;
    ovals[0] = o;
    while (on < CHAIN_MAX && uses[ovals[on]] == 1) {
        int32_t cn = cons[ovals[on]];
        const graph_node *n = &g->nodes[cn];
        if (!view_op(n->op) || n->nin != 1 || n->nout != 1 || role[cn] != OCL_ATTN_NONE ||
            !static_f32(g, n->out[0]))
            break;
        onodes[on] = cn;
        ovals[++on] = n->out[0];
    }
    for (; on > 0; on--) {
        sview x;
        dense(&g->values[ovals[on]].type, &x);
        int ok = 1;
        for (int i = on - 1; ok && i >= 0; i--)
            ok = unview_step(g, &g->nodes[onodes[i]], &x);
        if (ok && view_fits(&x)) {
            L->x[3] = x;
            break;
        }
    }
    if (ch[0].n + ch[1].n + ch[2].n + on == 0)
        return;
    for (int i = 0; i < 3; i++) {
        if (!chain_view(g, &ch[i], &L->x[i]))
            dense(&g->values[xs[i]].type, &L->x[i]); /* n 0: no failure */
        L->src[i] = ch[i].vals[ch[i].n];
    }
    if (on == 0)
        dense(&g->values[o].type, &L->x[3]);
    L->dst = on ? ovals[on] : -1;
    if (!merge_batch(L)) {
        memset(L, 0, sizeof *L);
        return;
    }
    L->on = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < ch[i].n; j++)
            role[ch[i].nodes[j]] = OCL_ATTN_ABSORBED;
    for (int i = 0; i < on; i++)
        role[onodes[i]] = OCL_ATTN_ABSORBED;
}

/*
 * The chains of g: role per node; lay (per node, or NULL) the layout of
 * the chain at each fused node.  In node order, each chain's layout
 * claimed before the next chain looks.
 */
static tg_status find_all(const graph *g, int8_t *role, attn_layout *lay)
{
    int32_t *uses = tg_calloc((size_t)g->nvalues + 1, sizeof *uses);
    int32_t *cons = tg_calloc((size_t)g->nvalues + 1, sizeof *cons);
    if (!uses || !cons) {
        tg_free(uses), tg_free(cons);
        return TG_ERR_NOMEM;
    }
    for (int32_t i = 0; i < g->nnodes; i++) {
        role[i] = OCL_ATTN_NONE;
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int j = 0; j < n->nin; j++) {
            uses[n->in[j]]++;
            cons[n->in[j]] = i;
        }
    }
    /* a guard or an output counts as a second use: the value must exist */
    for (int32_t i = 0; i < g->nguards; i++)
        uses[g->guards[i].value] += 2;
    for (int32_t i = 0; i < g->noutputs; i++)
        uses[g->outputs[i].value] += 2;
    for (int32_t i = 0; i < g->nnodes; i++) {
        attn_chain c;
        int bm, nacc;
        if ((g->nodes[i].flags & GRAPH_NODE_DEAD) || role[i] != OCL_ATTN_NONE ||
            !chain_at(g, i, &c) || uses[c.s] != 1 || uses[c.t] != 1 || uses[c.p] != 1 ||
            role[c.mm1] != OCL_ATTN_NONE || role[c.softmax] != OCL_ATTN_NONE ||
            !geometry(g->values[c.q].type.dim[g->values[c.q].type.ndim - 1],
                      g->values[c.v].type.dim[g->values[c.v].type.ndim - 1], &bm, &nacc))
            continue;
        role[c.mm1] = role[c.softmax] = OCL_ATTN_ABSORBED;
        if (c.scale_node >= 0)
            role[c.scale_node] = OCL_ATTN_ABSORBED;
        role[i] = OCL_ATTN_FUSED;
        attn_layout L;
        find_layout(g, &c, uses, cons, role, &L);
        if (lay)
            lay[i] = L;
    }
    tg_free(uses);
    tg_free(cons);
    return TG_OK;
}

tg_status ocl_attn_find(const graph *g, int8_t *role) { return find_all(g, role, NULL); }

typedef struct attn_node {
    int scale_op;
    float scale;
    int bm;
    attn_layout lay; /* lay.on 0: dense q, k, v (the run's shapes) */
} attn_node;

static tg_status attn_prepare(ocl_prep *c)
{
    attn_chain ch;
    int bm, nacc;
    int32_t self = (int32_t)(c->node - c->g->nodes);
    if (!chain_at(c->g, self, &ch))
        return ocl_prep_fail(c, TG_ERR_STATE, "the attention chain changed after plan_new");
    int64_t D = c->g->values[ch.q].type.dim[c->g->values[ch.q].type.ndim - 1];
    int64_t DV = c->out_type[0].dim[c->out_type[0].ndim - 1];
    if (!geometry(D, DV, &bm, &nacc))
        return ocl_prep_fail(c, TG_ERR_STATE, "no attention geometry for D %lld, DV %lld",
                             (long long)D, (long long)DV);
    attn_node *a = tg_calloc(1, sizeof *a);
    int8_t *role = tg_calloc((size_t)c->g->nnodes + 1, sizeof *role);
    attn_layout *lay = tg_calloc((size_t)c->g->nnodes + 1, sizeof *lay);
    tg_status st = a && role && lay ? find_all(c->g, role, lay) : TG_ERR_NOMEM;
    if (st == TG_OK && role[self] != OCL_ATTN_FUSED)
        st = TG_ERR_STATE;
    if (st == TG_OK)
        *a = (attn_node){ch.scale_op, ch.scale, bm, lay[self]};
    tg_free(role);
    tg_free(lay);
    if (st != TG_OK) {
        tg_free(a);
        return st == TG_ERR_NOMEM ? ocl_prep_fail(c, st, "out of memory")
                                  : ocl_prep_fail(c, st, "the attention chain changed after "
                                                  "plan_new");
    }
    c->data = a;
    c->data_free = tg_free;
    c->xin[0] = ch.q;
    c->xin[1] = ch.k;
    c->nxin = 2;
    if (a->lay.on) {
        /* q, k, v read from their layouts' sources, the output written
         * to the value after the absorbed views */
        for (int i = 0; i < 3; i++)
            c->xin[i] = a->lay.src[i];
        c->nxin = 3;
        if (a->lay.dst >= 0)
            c->xout[c->nxout++] = a->lay.dst;
    }
    char opts[200];
    snprintf(opts, sizeof opts, "-DD=%lld -DDV=%lld -DBM=%d -DBN=%d -DWG=%d -DNACC=%d -DSCALE_OP=%d",
             (long long)D, (long long)DV, bm, bm, ATTN_WG, nacc, ch.scale_op);
    st = ocl_prep_program(c, "nn_attn", NULL, opts);
    c->path = "fused attention";
    return st ? st : ocl_prep_kernel(c, "nn_attn");
}

/* The kernel's int8 for view x (nb batch dims): offset, outer and inner
 * batch strides, row and column strides. */
static void view_arg(const sview *x, int nb, int32_t out[8])
{
    memset(out, 0, 8 * sizeof *out);
    out[0] = (int32_t)x->off;
    if (nb == 1)
        out[1] = (int32_t)x->st[0];
    if (nb == 2)
        out[1] = (int32_t)x->st[0], out[2] = (int32_t)x->st[1];
    out[3] = (int32_t)x->st[nb];
    out[4] = (int32_t)x->st[nb + 1];
}

static tg_status attn_enqueue(ocl_launch *l)
{
    const attn_node *a = l->data;
    const graph_type *tq = &l->xin_type[0], *tk = &l->xin_type[1];
    /* an empty output launches nothing (ocl_run skips a zero size) */
    if (graph_type_numel(&l->out_type[0]) == 0)
        return TG_OK;
    int32_t s[4][8];
    size_t bo = 1, bi = 1;
    int64_t M, N;
    cl_mem v = l->in[1], out = l->out[0];
    if (a->lay.on) {
        const attn_layout *L = &a->lay;
        M = L->x[0].dim[L->nb];
        N = L->x[1].dim[L->nb];
        for (int i = 0; i < 4; i++)
            view_arg(&L->x[i], L->nb, s[i]);
        bo = L->nb >= 1 ? (size_t)L->bdim[0] : 1;
        bi = L->nb == 2 ? (size_t)L->bdim[1] : 1;
        v = l->xin[2];
        if (L->dst >= 0)
            out = l->xout[0];
    } else {
        /* dense [BH, rows, cols], this run's shapes */
        int r = tq->ndim;
        M = tq->dim[r - 2], N = tk->dim[r - 2];
        for (int d = 0; d < r - 2; d++)
            bo *= (size_t)tq->dim[d];
        int64_t rows[4] = {M, N, N, M}, cols[4] = {tq->dim[r - 1], tk->dim[r - 1],
                                                   l->in_type[1].dim[r - 1],
                                                   l->out_type[0].dim[r - 1]};
        for (int i = 0; i < 4; i++) {
            memset(s[i], 0, sizeof s[i]);
            s[i][1] = (int32_t)(rows[i] * cols[i]);
            s[i][3] = (int32_t)cols[i];
            s[i][4] = 1;
        }
    }
    tg_status st = ocl_set_args(l, l->k[0], "mmmmiifvvvv", l->xin[0], l->xin[1], v, out, (int)M,
                                (int)N, (double)a->scale, s[0], s[1], s[2], s[3]);
    size_t global[3] = {(size_t)((M + a->bm - 1) / a->bm) * ATTN_WG, bo, bi};
    size_t local[3] = {ATTN_WG, 1, 1};
    return st ? st : ocl_run(l, l->k[0], 3, global, local);
}

const ocl_op ocl_attn_op = {attn_prepare, attn_enqueue};
