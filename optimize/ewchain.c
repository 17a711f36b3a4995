/*
 * ewchain.c - elementwise-chain fusion (-O2): connected groups of f32
 * elementwise nodes become one `fused` node (graph/fused_prog.h), so a
 * chain such as tanh(x sigmoid(x) + 0.5 x) 2 - 1 reads x once and writes
 * its result once instead of making six intermediates.
 *
 * Groups.  Nodes are visited from last to first; an unassigned candidate
 * (an op fused_op_ok admits, or a fused node, with f32 inputs and
 * output) roots a group, which then grows backwards: the producer of a
 * group member's input joins when it is a candidate, its value is not
 * pinned and every use of that value is inside the group.  The closest
 * producer (highest node index) is tried first and the growth repeats
 * until nothing more joins, so a value read twice inside the group (x in
 * x sigmoid(x)) joins once both readers are in.  Only the root's value
 * leaves the group, so groups are convex and the fused graph stays
 * acyclic.  A group must fit one program: FUSED_MAX_STMTS statements,
 * FUSED_MAX_INPUTS inputs and GRAPH_MAX_STR - 1 bytes of text; a long
 * chain (the `tiny` loop: 700 ops) is cut into several fused nodes, each
 * as long as the limits allow (9 iterations of 7 ops: 12 nodes).
 *
 * The root node is rewritten in place into the fused node, so its value
 * (possibly a graph output) keeps its id, name and type; the other
 * members are marked dead and their provenance is merged into the root.
 * External inputs become the node's inputs in order of first use;
 * constants whose elements are all equal become immediates when that
 * does not change the broadcast shape of the remaining inputs (else
 * only 1-element ones, else none).  Inputs of any broadcast shapes are
 * fine: the kernel handles general broadcasting.
 *
 * Not fused, and said so with --explain: a producer whose value is a
 * graph output or guarded, or has uses outside the group; a producer
 * that would break a program limit; a root whose value is guarded (a
 * guard's value is computed exactly as traced); a group of one node.
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/fused_prog.h"
#include "opt.h"
#include "../graph/graph_impl.h"

/* The limits in the messages below, as text. */
#define STR_(x) #x
#define STR(x) STR_(x)

typedef struct group {
    int32_t node[FUSED_MAX_STMTS];
    int n;
} group;

/* A program built for a group, with its external inputs. */
typedef struct built {
    fused_prog p;
    int32_t ext[FUSED_MAX_INPUTS];
    int next;
    graph_fused_attrs attrs;
    const char *why; /* when building failed */
} built;

/* How constants may become immediates (tried in this order). */
enum { IMM_ALL_EQUAL, IMM_ONE_ELEMENT, IMM_NONE };

static int is_f32(const graph *g, int32_t v)
{
    return g->values[v].type.dtype == GRAPH_F32;
}

static int candidate(const graph *g, int32_t i)
{
    const graph_node *n = &g->nodes[i];
    if ((n->flags & GRAPH_NODE_DEAD) || n->nout != 1 || !is_f32(g, n->out[0]))
        return 0;
    if (n->op != GRAPH_OP_fused && !fused_op_ok(n->op, NULL))
        return 0;
    for (int k = 0; k < n->nin; k++)
        if (!is_f32(g, n->in[k]))
            return 0;
    return 1;
}

static int in_group(const group *gr, int32_t node)
{
    for (int k = 0; k < gr->n; k++)
        if (gr->node[k] == node)
            return 1;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The operand that reads value v inside the group's program. */
static int operand_of(const graph *g, const group *gr, const int32_t *stmt_of_node,
                      int32_t v, int imm, built *b, fused_arg *a)
{
    int32_t prod = g->values[v].node;
    memset(a, 0, sizeof *a);
    for (int k = 0; prod >= 0 && k < gr->n; k++)
        if (gr->node[k] == prod) {
            a->kind = FUSED_ARG_REG;
            a->index = (uint8_t)stmt_of_node[k];
            return 0;
        }
    double x;
    const graph_value *val = &g->values[v];
    if (imm != IMM_NONE && opt_const_scalar(g, v, &x) &&
        (imm == IMM_ALL_EQUAL || graph_type_numel(&val->type) == 1)) {
        a->kind = FUSED_ARG_IMM;
        a->imm = (float)x;
        return 0;
    }
    int k = 0;
    while (k < b->next && b->ext[k] != v)
        k++;
    if (k == b->next) {
        if (b->next == FUSED_MAX_INPUTS) {
            b->why = "more than 16 inputs";
            return -1;
        }
        b->ext[b->next++] = v;
    }
    a->kind = FUSED_ARG_INPUT;
    a->index = (uint8_t)k;
    return 0;
}

/* Appends node m's statements (one, or a fused node's whole program). */
static int add_node_stmts(const graph *g, const group *gr, int32_t *stmt_of_node, int k,
                          int imm, built *b)
{
    const graph_node *m = &g->nodes[gr->node[k]];
    fused_prog *p = &b->p;
    if (m->op != GRAPH_OP_fused) {
        const graph_op_info *info = &graph_ops[m->op];
        if (p->nstmts == FUSED_MAX_STMTS) {
            b->why = "more than " STR(FUSED_MAX_STMTS) " statements";
            return -1;
        }
        fused_stmt *st = &p->stmt[p->nstmts];
        memset(st, 0, sizeof *st);
        st->op = m->op;
        st->nargs = (uint8_t)m->nin;
        for (int j = 0; j < m->nin; j++)
            if (operand_of(g, gr, stmt_of_node, m->in[j], imm, b, &st->arg[j]) < 0)
                return -1;
        for (int j = 0; j < info->nattrs; j++)
            memcpy(&st->attr[j], (const char *)tg_node_attrs(m) + info->attr_descs()[j].offset,
                   sizeof(float));
        stmt_of_node[k] = p->nstmts++;
        return 0;
    }
    fused_prog sub;
    fused_arg map[FUSED_MAX_INPUTS];
    const graph_fused_attrs *fa = tg_node_attrs(m);
    if (fused_prog_parse(fa->prog.s, m->nin, &sub, NULL, 0) != TG_OK) {
        b->why = "an invalid fused program";
        return -1;
    }
    if (p->nstmts + sub.nstmts > FUSED_MAX_STMTS) {
        b->why = "more than " STR(FUSED_MAX_STMTS) " statements";
        return -1;
    }
    for (int j = 0; j < m->nin; j++)
        if (operand_of(g, gr, stmt_of_node, m->in[j], imm, b, &map[j]) < 0)
            return -1;
    int base = p->nstmts;
    for (int s = 0; s < sub.nstmts; s++) {
        fused_stmt st = sub.stmt[s];
        for (int j = 0; j < st.nargs; j++) {
            if (st.arg[j].kind == FUSED_ARG_INPUT)
                st.arg[j] = map[st.arg[j].index];
            else if (st.arg[j].kind == FUSED_ARG_REG)
                st.arg[j].index = (uint8_t)(st.arg[j].index + base);
        }
        p->stmt[p->nstmts++] = st;
    }
    stmt_of_node[k] = p->nstmts - 1;
    return 0;
}

/* Nonzero if the inputs broadcast to exactly the root's type. */
static int shape_kept(const graph *g, const built *b, int32_t root_value)
{
    if (b->next == 0)
        return 0;
    graph_type t = g->values[b->ext[0]].type;
    for (int k = 1; k < b->next; k++) {
        graph_type next;
        if (graph_broadcast(&t, &g->values[b->ext[k]].type, &next) != TG_OK)
            return 0;
        next.dtype = t.dtype;
        t = next;
    }
    const graph_type *r = &g->values[root_value].type;
    if (t.ndim != r->ndim)
        return 0;
    for (int d = 0; d < t.ndim; d++)
        if (t.dim[d] != r->dim[d])
            return 0;
    return 1;
}

/* Builds the group's program (members sorted by node index, i.e. in a
 * topological order); 0, or -1 with b->why.  The text goes into
 * b->attrs with print, else it is only checked to fit (printing every
 * float at each step of a group's growth was most of this pass's time). */
static int build(const graph *g, group *gr, built *b, int print)
{
    int32_t root = gr->node[0];
    int32_t sorted[FUSED_MAX_STMTS];
    memcpy(sorted, gr->node, sizeof(int32_t) * (size_t)gr->n);
    qsort(sorted, (size_t)gr->n, sizeof *sorted, cmp_i32);
    group order = *gr;
    memcpy(order.node, sorted, sizeof(int32_t) * (size_t)gr->n);
    int32_t root_value = g->nodes[root].out[0];
    for (int imm = IMM_ALL_EQUAL; imm <= IMM_NONE; imm++) {
        int32_t stmt_of_node[FUSED_MAX_STMTS];
        memset(b, 0, sizeof *b);
        int ok = 1;
        for (int k = 0; k < order.n && ok; k++)
            ok = add_node_stmts(g, &order, stmt_of_node, k, imm, b) == 0;
        if (!ok)
            return -1;
        if (!shape_kept(g, b, root_value))
            continue;
        if ((print || fused_prog_text_bound(&b->p) >= sizeof b->attrs.prog.s) &&
            fused_prog_print(&b->p, b->attrs.prog.s, sizeof b->attrs.prog.s) < 0) {
            b->why = "a program of " STR(GRAPH_MAX_STR) " bytes or more";
            return -1;
        }
        return 0;
    }
    b->why = "inputs that do not give the output's shape";
    return -1;
}

/* Why producer p of value v cannot join the group now; NULL if it can. */
static const char *blocker(const graph *g, const opt_uses *u, const group *gr, int32_t v)
{
    if (opt_pinned(g, v))
        return "its value is a graph output or guarded, so it stays computed on its own";
    for (int32_t k = u->first[v]; k < u->first[v + 1]; k++)
        if (!in_group(gr, u->list[k]))
            return "its value is also used outside the chain";
    return NULL;
}

/*
 * The width of the cut after the first len members: how many distinct
 * values they read that unassigned candidates make.  Each such producer
 * roots a chain of its own; where several of them read one value
 * (relu(x*1.01+0.01), x*0.5 and sigmoid(x) all read x) none can absorb
 * it, and they are left as short chains or single nodes.
 */
static int cut_width(const graph *g, const group *gr, int len, const uint8_t *assigned)
{
    group pre = *gr;
    pre.n = len;
    int32_t seen[FUSED_MAX_STMTS * FUSED_MAX_INPUTS];
    int width = 0;
    for (int k = 0; k < len; k++) {
        const graph_node *m = &g->nodes[gr->node[k]];
        for (int j = 0; j < m->nin; j++) {
            int32_t v = m->in[j], p = g->values[v].node;
            if (p < 0 || in_group(&pre, p) || assigned[p] || !candidate(g, p))
                continue;
            int q = 0;
            while (q < width && seen[q] != v)
                q++;
            if (q == width)
                seen[width++] = v;
        }
    }
    return width;
}

/*
 * A group that hit a program limit is cut back to the longest of its
 * growth prefixes (each one a valid group) with the narrowest cut,
 * keeping at least half of it: a chain of repeated blocks (the tiny
 * loop) is then cut between blocks, where one value crosses, instead of
 * inside one, which would leave single nodes behind.
 */
static void choose_cut(const graph *g, group *gr, const uint8_t *assigned)
{
    int best = gr->n, narrowest = cut_width(g, gr, gr->n, assigned);
    for (int len = gr->n - 1; narrowest > 1 && len >= 2 && 2 * len >= gr->n; len--) {
        int w = cut_width(g, gr, len, assigned);
        if (w < narrowest) {
            narrowest = w;
            best = len;
        }
    }
    gr->n = best;
}

/* The producer to add next: the highest node index that may join (not
 * refused before); -1 if none. */
static int32_t next_member(const graph *g, const opt_uses *u, const group *gr,
                           const uint8_t *assigned, const int32_t *refused, int nref)
{
    int32_t best = -1;
    for (int k = 0; k < gr->n; k++) {
        const graph_node *m = &g->nodes[gr->node[k]];
        for (int j = 0; j < m->nin; j++) {
            int32_t p = g->values[m->in[j]].node;
            if (p <= best || assigned[p] || in_group(gr, p) || !candidate(g, p) ||
                blocker(g, u, gr, m->in[j]))
                continue;
            int r = 0;
            while (r < nref && refused[r] != p)
                r++;
            if (r == nref)
                best = p;
        }
    }
    return best;
}

/* Grows gr backwards from its root (see the file comment); explains the
 * producers left out.  assigned marks nodes already in some group. */
static void grow(const graph *g, const opt_uses *u, opt_ctx *ctx, group *gr,
                 const uint8_t *assigned)
{
    int32_t refused[FUSED_MAX_STMTS * FUSED_MAX_INPUTS];
    int nref = 0;
    int32_t p;
    /* refused holds distinct producers of members' inputs: at most
     * FUSED_MAX_STMTS members x FUSED_MAX_INPUTS inputs, so it never
     * fills up */
    while ((p = next_member(g, u, gr, assigned, refused, nref)) >= 0) {
        built b;
        b.why = "more than " STR(FUSED_MAX_STMTS) " statements";
        if (gr->n < FUSED_MAX_STMTS) {
            gr->node[gr->n++] = p;
            if (build(g, gr, &b, 0) == 0)
                continue;
            gr->n--;
        }
        refused[nref++] = p;
        opt_explain(ctx, g, p, "not fused into the chain ending at node %d: it would need %s",
                    gr->node[0], b.why);
    }
    if (nref)
        choose_cut(g, gr, assigned);
    /* The chain's boundary: candidates that stayed out, and why (once
     * each; refused ones were explained above). */
    for (int k = 0; k < gr->n; k++) {
        const graph_node *m = &g->nodes[gr->node[k]];
        for (int j = 0; j < m->nin; j++) {
            int32_t q = g->values[m->in[j]].node;
            const char *why;
            int r = 0;
            while (r < nref && refused[r] != q)
                r++;
            if (q < 0 || r < nref || assigned[q] || in_group(gr, q) || !candidate(g, q) ||
                !(why = blocker(g, u, gr, m->in[j])))
                continue;
            opt_explain(ctx, g, q, "ends the chain ending at node %d: %s", gr->node[0], why);
            refused[nref++] = q;
        }
    }
}

/* Rewrites the root into the fused node; absorbs the other members. */
static tg_status commit(graph *g, opt_ctx *ctx, const group *gr, const built *b)
{
    int32_t root = gr->node[0];
    graph_type it[FUSED_MAX_INPUTS], out;
    for (int k = 0; k < b->next; k++)
        it[k] = g->values[b->ext[k]].type;
    int nout = 0;
    char err[600];
    tg_status st = graph_infer(GRAPH_OP_fused, it, b->next, &b->attrs, &out, 1, &nout, err,
                               sizeof err);
    const graph_type *rt = &g->values[g->nodes[root].out[0]].type;
    int same = st == TG_OK && out.dtype == rt->dtype && out.ndim == rt->ndim;
    for (int d = 0; same && d < out.ndim; d++)
        same = out.dim[d] == rt->dim[d];
    if (!same) /* build() checked the shape: this is a bug */
        return opt_fail(ctx, g, root, st != TG_OK ? st : TG_ERR_STATE,
                        "ewchain built an invalid node: %s", st != TG_OK ? err : "type changed");
    int32_t *in = graph_alloc_ids(g, b->next);
    graph_fused_attrs *attrs = graph_alloc_bytes(g, sizeof *attrs);
    if (!in || !attrs)
        return opt_fail(ctx, g, root, TG_ERR_NOMEM, "out of memory");
    memcpy(in, b->ext, sizeof(int32_t) * (size_t)b->next);
    *attrs = b->attrs;
    graph_node *n = &g->nodes[root];
    n->op = GRAPH_OP_fused;
    n->in = in;
    n->nin = b->next;
    n->attrs = (graph_attrs *)attrs;
    for (int k = 1; k < gr->n; k++) {
        if (opt_merge_prov(g, root, gr->node[k]) != TG_OK)
            return opt_fail(ctx, g, root, TG_ERR_NOMEM, "out of memory");
        g->nodes[gr->node[k]].flags |= GRAPH_NODE_DEAD;
    }
    ctx->stats->fused += gr->n;
    ctx->changed = 1;
    return TG_OK;
}

static int guarded(const graph *g, int32_t v)
{
    for (int32_t k = 0; k < g->nguards; k++)
        if (g->guards[k].value == v)
            return 1;
    return 0;
}

static tg_status run(graph *g, opt_ctx *ctx)
{
    opt_uses u;
    if (opt_uses_build(g, &u) != TG_OK)
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    uint8_t *assigned = tg_calloc((size_t)g->nnodes + 1, 1);
    if (!assigned) {
        opt_uses_free(&u);
        return opt_fail(ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    }
    tg_status st = TG_OK;
    for (int32_t i = g->nnodes - 1; i >= 0 && st == TG_OK; i--) {
        if (assigned[i] || !candidate(g, i))
            continue;
        assigned[i] = 1;
        if (guarded(g, g->nodes[i].out[0])) {
            opt_explain(ctx, g, i, "not fused: its value is guarded, so it is computed "
                        "exactly as traced");
            continue;
        }
        group gr = {{i}, 1};
        grow(g, &u, ctx, &gr, assigned);
        if (gr.n == 1) {
            if (g->nodes[i].op != GRAPH_OP_fused)
                opt_explain(ctx, g, i, "not fused: no neighbouring elementwise node can join it");
            continue;
        }
        built b;
        if (build(g, &gr, &b, 1) < 0) { /* grow() only keeps groups that build */
            st = opt_fail(ctx, g, i, TG_ERR_STATE, "ewchain: %s", b.why);
            break;
        }
        for (int k = 1; k < gr.n; k++)
            assigned[gr.node[k]] = 1;
        st = commit(g, ctx, &gr, &b);
    }
    tg_free(assigned);
    opt_uses_free(&u);
    return st;
}

const opt_pass opt_pass_ewchain = {"ewchain", run};
