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
 * TG_OPENCL_ATTN=fused|off|auto chooses; auto (the default) fuses on
 * devices other than CPUs.  On PoCL (2 cores) the fused kernel was slower
 * than the four launches (the encoder -O2 10.9 vs 9.2 ms per run): there
 * a launch costs little and its exp-heavy serial parts vectorize worse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "ocl_rt.h"

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
    const char *m = getenv("TG_OPENCL_ATTN");
    if (m && *m && strcmp(m, "fused") && strcmp(m, "off") && strcmp(m, "auto")) {
        snprintf(err, errlen, "TG_OPENCL_ATTN=\"%s\": want fused, off or auto", m);
        return -1;
    }
    if (m && *m && strcmp(m, "auto"))
        return !strcmp(m, "fused");
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    return !(type & CL_DEVICE_TYPE_CPU);
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

static int same_type(const graph_type *a, const graph_type *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dim[d] != b->dim[d])
            return 0;
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
    const graph_matmul_attrs *a2 = graph_node_attrs(n2);
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
    const graph_softmax_attrs *sa = graph_node_attrs(sm);
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
        if (!same_type(&g->values[c->s].type, &g->values[c->t].type) ||
            (prod = producer(g, c->s)) < 0)
            return 0;
        pn = &g->nodes[prod];
    }
    if (pn->op != GRAPH_OP_matmul || pn->nin != 2)
        return 0;
    const graph_matmul_attrs *a1 = graph_node_attrs(pn);
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

tg_status ocl_attn_find(const graph *g, int8_t *role)
{
    int32_t *uses = tg_calloc((size_t)g->nvalues + 1, sizeof *uses);
    if (!uses)
        return TG_ERR_NOMEM;
    for (int32_t i = 0; i < g->nnodes; i++) {
        role[i] = OCL_ATTN_NONE;
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int j = 0; j < n->nin; j++)
            uses[n->in[j]]++;
    }
    /* a guard or an output counts as a second use: the value must exist */
    for (int32_t i = 0; i < g->nguards; i++)
        uses[g->guards[i].value] += 2;
    for (int32_t i = 0; i < g->noutputs; i++)
        uses[g->outputs[i].value] += 2;
    for (int32_t i = 0; i < g->nnodes; i++) {
        attn_chain c;
        int bm, nacc;
        if ((g->nodes[i].flags & GRAPH_NODE_DEAD) || !chain_at(g, i, &c) || uses[c.s] != 1 ||
            uses[c.t] != 1 || uses[c.p] != 1 ||
            !geometry(g->values[c.q].type.dim[g->values[c.q].type.ndim - 1],
                      g->values[c.v].type.dim[g->values[c.v].type.ndim - 1], &bm, &nacc))
            continue;
        role[c.mm1] = role[c.softmax] = OCL_ATTN_ABSORBED;
        if (c.scale_node >= 0)
            role[c.scale_node] = OCL_ATTN_ABSORBED;
        role[i] = OCL_ATTN_FUSED;
    }
    tg_free(uses);
    return TG_OK;
}

typedef struct attn_node {
    int scale_op;
    float scale;
    int bm;
} attn_node;

static tg_status attn_prepare(ocl_prep *c)
{
    attn_chain ch;
    int bm, nacc;
    if (!chain_at(c->g, (int32_t)(c->node - c->g->nodes), &ch))
        return ocl_prep_fail(c, TG_ERR_STATE, "the attention chain changed after plan_new");
    int64_t D = c->g->values[ch.q].type.dim[c->g->values[ch.q].type.ndim - 1];
    int64_t DV = c->out_type[0].dim[c->out_type[0].ndim - 1];
    if (!geometry(D, DV, &bm, &nacc))
        return ocl_prep_fail(c, TG_ERR_STATE, "no attention geometry for D %lld, DV %lld",
                             (long long)D, (long long)DV);
    attn_node *a = tg_calloc(1, sizeof *a);
    if (!a)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    *a = (attn_node){ch.scale_op, ch.scale, bm};
    c->data = a;
    c->data_free = tg_free;
    c->xin[0] = ch.q;
    c->xin[1] = ch.k;
    c->nxin = 2;
    char opts[200];
    snprintf(opts, sizeof opts, "-DD=%lld -DDV=%lld -DBM=%d -DBN=%d -DWG=%d -DNACC=%d -DSCALE_OP=%d",
             (long long)D, (long long)DV, bm, bm, ATTN_WG, nacc, ch.scale_op);
    tg_status st = ocl_prep_program(c, "nn_attn", NULL, opts);
    return st ? st : ocl_prep_kernel(c, "nn_attn");
}

static tg_status attn_enqueue(ocl_launch *l)
{
    const attn_node *a = l->data;
    const graph_type *tq = &l->xin_type[0], *tk = &l->xin_type[1];
    int r = tq->ndim;
    int64_t M = tq->dim[r - 2], N = tk->dim[r - 2], bh = 1;
    for (int d = 0; d < r - 2; d++)
        bh *= tq->dim[d];
    /* an empty output launches nothing (ocl_run skips a zero size) */
    if (graph_type_numel(&l->out_type[0]) == 0)
        return TG_OK;
    tg_status st = ocl_set_args(l, l->k[0], "mmmmiif", l->xin[0], l->xin[1], l->in[1], l->out[0],
                                (int)M, (int)N, (double)a->scale);
    size_t global[2] = {(size_t)((M + a->bm - 1) / a->bm) * ATTN_WG, (size_t)bh};
    size_t local[2] = {ATTN_WG, 1};
    return st ? st : ocl_run(l, l->k[0], 2, global, local);
}

const ocl_op ocl_attn_op = {attn_prepare, attn_enqueue};
