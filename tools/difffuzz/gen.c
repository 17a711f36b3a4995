/*
 * gen.c - the model generator's draws and builders, and the model loop
 * (gen.h): which ops, at which opset, chained how.
 */
#include "gen.h"
#include "graph/graph_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t df_rand(df_gen *g)
{
    /* splitmix64: every (seed, idx) gives its own independent stream */
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int df_rnd(df_gen *g, int n)
{
    return n <= 1 ? 0 : (int)(df_rand(g) % (uint64_t)n);
}

int df_range(df_gen *g, int lo, int hi)
{
    return hi <= lo ? lo : lo + df_rnd(g, hi - lo + 1);
}

int df_chance(df_gen *g, int percent)
{
    return df_rnd(g, 100) < percent;
}

float df_unif(df_gen *g, float lo, float hi)
{
    return lo + (hi - lo) * (float)((df_rand(g) >> 40) * (1.0 / 16777216.0));
}

int64_t df_dim(df_gen *g, int hi, int zero_ok)
{
    if (g->edge && df_chance(g, 25))
        return zero_ok && df_chance(g, 40) ? 0 : 1;
    return df_range(g, 1, hi);
}

void df_name(df_gen *g, const char *prefix, char *out)
{
    snprintf(out, DF_NAME, "%s%d", prefix, g->names++);
}

/* Random data of dtype, n elements. */
static void *rand_data(df_gen *g, int dtype, int64_t n)
{
    size_t es = df_dtype_size(dtype);
    void *p = malloc((size_t)(n > 0 ? n : 1) * es);
    if (!p) {
        fprintf(stderr, "difffuzz: out of memory\n");
        exit(2);
    }
    for (int64_t i = 0; i < n; i++) {
        switch (dtype) {
        case DF_F32: ((float *)p)[i] = df_unif(g, -3.0f, 3.0f); break;
        case DF_I32: ((int32_t *)p)[i] = df_range(g, -4, 4); break;
        case DF_I64: ((int64_t *)p)[i] = df_range(g, -4, 4); break;
        default: ((uint8_t *)p)[i] = (uint8_t)df_rnd(g, 2); break;
        }
    }
    return p;
}

static df_val *new_val(df_gen *g)
{
    if (g->m->nvals >= DF_MAX_VALS) {
        fprintf(stderr, "difffuzz: model needs more than %d values\n", DF_MAX_VALS);
        exit(2);
    }
    df_val *v = &g->m->val[g->m->nvals++];
    memset(v, 0, sizeof *v);
    return v;
}

void df_input(df_gen *g, df_cur *x, int dtype, int nd, const int64_t *dims, int dyn)
{
    df_val *v = new_val(g);
    df_name(g, "x", v->name);
    v->dtype = dtype;
    v->nd = nd;
    v->input = 1;
    if (nd > 0) /* dims may be NULL for 0-d */
        memcpy(v->dims, dims, sizeof *dims * (size_t)nd);
    if (dyn && nd > 0 && g->dyn_ok && dims[0] > 0 && (!g->n || g->n == dims[0])) {
        if (!g->n) {
            g->n = dims[0];
            g->m->alt_n = g->n == 1 ? df_range(g, 2, 4) : df_chance(g, 50) ? g->n + 1 : 1;
        }
        v->dyn = 1;
    }
    v->data = rand_data(g, dtype, df_numel(v));
    if (v->dyn)
        v->alt = rand_data(g, dtype, df_numel(v) / v->dims[0] * g->m->alt_n);
    memset(x, 0, sizeof *x);
    memcpy(x->name, v->name, DF_NAME);
    x->dtype = dtype;
    x->nd = nd;
    if (nd > 0) /* dims may be NULL for 0-d */
        memcpy(x->dims, dims, sizeof *dims * (size_t)nd);
    x->dyn = v->dyn;
}

void df_input_rand(df_gen *g, df_cur *x, int dtype, int nd, int hi)
{
    int64_t d[DF_MAX_DIMS];
    for (int k = 0; k < nd; k++)
        d[k] = df_dim(g, hi, 1);
    int dyn = nd > 0 && df_chance(g, 60);
    if (dyn && g->n)
        d[0] = g->n;
    df_input(g, x, dtype, nd, d, dyn);
}

void df_init(df_gen *g, char *out, int dtype, int nd, const int64_t *dims, const void *data)
{
    df_val *v = new_val(g);
    df_name(g, "c", v->name);
    v->dtype = dtype;
    v->nd = nd;
    if (nd > 0) /* dims may be NULL for 0-d */
        memcpy(v->dims, dims, sizeof *dims * (size_t)nd);
    v->data = rand_data(g, dtype, df_numel(v));
    if (data)
        memcpy(v->data, data, (size_t)df_numel(v) * df_dtype_size(dtype));
    memcpy(out, v->name, DF_NAME);
}

void df_init_i64(df_gen *g, char *out, int n, const int64_t *v)
{
    int64_t d = n;
    df_init(g, out, DF_I64, n < 0 ? 0 : 1, &d, v);
}

void df_init_f32(df_gen *g, char *out, float v)
{
    df_init(g, out, DF_F32, 0, NULL, &v);
}

df_node *df_node_new(df_gen *g, const char *op, int nin, const char *const *in, int nout)
{
    df_model *m = g->m;
    if (m->nnodes >= DF_MAX_NODES) {
        fprintf(stderr, "difffuzz: model needs more than %d nodes\n", DF_MAX_NODES);
        exit(2);
    }
    df_node *n = &m->node[m->nnodes++];
    memset(n, 0, sizeof *n);
    snprintf(n->op, sizeof n->op, "%s", op);
    n->nin = nin;
    n->nout = nout;
    for (int k = 0; k < nin; k++)
        snprintf(n->in[k], DF_NAME, "%s", in[k]);
    for (int k = 0; k < nout; k++)
        df_name(g, "y", n->out[k]);
    return n;
}

static df_attr *attr_new(df_node *n, const char *name, int type)
{
    df_attr *a = &n->attr[n->nattr++];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->type = type;
    return a;
}

void df_attr_i(df_node *n, const char *name, int64_t v)
{
    attr_new(n, name, DF_A_INT)->i = v;
}

void df_attr_f(df_node *n, const char *name, float v)
{
    attr_new(n, name, DF_A_FLOAT)->f = v;
}

void df_attr_ints(df_node *n, const char *name, int cnt, const int64_t *v)
{
    df_attr *a = attr_new(n, name, DF_A_INTS);
    a->n = cnt;
    memcpy(a->ints, v, sizeof *v * (size_t)cnt);
}

void df_attr_floats(df_node *n, const char *name, int cnt, const float *v)
{
    df_attr *a = attr_new(n, name, DF_A_FLOATS);
    a->n = cnt;
    memcpy(a->floats, v, sizeof *v * (size_t)cnt);
}

void df_attr_s(df_node *n, const char *name, const char *v)
{
    snprintf(attr_new(n, name, DF_A_STRING)->s, 64, "%s", v);
}

void df_set(df_cur *x, const df_node *n, int k, int dtype, int nd, const int64_t *dims, int dyn)
{
    int64_t d[DF_MAX_DIMS];
    if (nd > 0) /* dims may be NULL for 0-d */
        memcpy(d, dims, sizeof *dims * (size_t)nd);
    memcpy(x->name, n->out[k], DF_NAME);
    x->dtype = dtype;
    x->nd = nd;
    memcpy(x->dims, d, sizeof *d * (size_t)nd);
    x->dyn = dyn && nd > 0;
}

void df_need(df_gen *g, df_cur *x, int dtype, int lo, int hi)
{
    if (x->name[0] && x->dtype == dtype && x->nd >= lo && x->nd <= hi)
        return;
    df_input_rand(g, x, dtype, df_range(g, lo, hi), 4);
}

int64_t df_numel_cur(const df_cur *x)
{
    int64_t n = 1;
    for (int k = 0; k < x->nd; k++)
        n *= x->dims[k];
    return n;
}

int64_t df_axis(df_gen *g, int nd, int neg_from)
{
    int a = df_rnd(g, nd > 0 ? nd : 1);
    if (g->m->opset >= neg_from && df_chance(g, 30))
        return a - nd;
    return a;
}

/* An op of the table by weight (the one named op_only when given). */
static const df_op *pick_op(df_gen *g, const char *op_only)
{
    if (op_only) {
        for (int i = 0; i < df_nops; i++)
            if (!strcmp(df_ops[i].name, op_only))
                return &df_ops[i];
        fprintf(stderr, "difffuzz: no op %s in the table\n", op_only);
        exit(2);
    }
    int total = 0;
    for (int i = 0; i < df_nops; i++)
        total += df_ops[i].weight;
    int r = df_rnd(g, total);
    for (int i = 0; i < df_nops; i++)
        if ((r -= df_ops[i].weight) < 0)
            return &df_ops[i];
    return &df_ops[0];
}

/* Graph outputs: every node output no later node reads. */
static void set_outputs(df_model *m)
{
    for (int i = 0; i < m->nnodes; i++)
        for (int k = 0; k < m->node[i].nout; k++) {
            const char *o = m->node[i].out[k];
            int used = 0;
            for (int j = i + 1; j < m->nnodes && !used; j++)
                for (int l = 0; l < m->node[j].nin; l++)
                    used |= !strcmp(m->node[j].in[l], o);
            if (!used)
                memcpy(m->out[m->nout++], o, DF_NAME);
        }
}

void df_generate(df_model *m, uint64_t seed, int idx, const char *op_only)
{
    df_model_clear(m);
    df_gen g = {.m = m, .rng = seed * 0x2545f4914f6cdd1dull + (uint64_t)idx * 0x9e3779b97f4a7c15ull};
    df_rand(&g);
    for (;;) {
        int nops = op_only ? 1 : df_chance(&g, 50) ? 1 : df_chance(&g, 60) ? 2 : 3;
        const df_op *ops[3];
        int lo = DF_MIN_OPSET, hi = DF_MAX_OPSET;
        for (int i = 0; i < nops; i++) {
            ops[i] = pick_op(&g, op_only);
            if (ops[i]->since > lo)
                lo = ops[i]->since;
            if (ops[i]->until && ops[i]->until < hi)
                hi = ops[i]->until;
        }
        if (lo > hi)
            continue;
        /* newer opsets more often: most models in the wild are 13+ */
        m->opset = df_chance(&g, 60) ? df_range(&g, lo > 13 ? lo : (hi < 13 ? lo : 13), hi)
                                     : df_range(&g, lo, hi);
        g.edge = df_chance(&g, 15);
        g.dyn_ok = df_chance(&g, 35);
        df_cur x = {{0}};
        char *p = m->label;
        for (int i = 0; i < nops; i++) {
            g.invalid = df_chance(&g, 4);
            int nn = m->nnodes;
            int rc = ops[i]->gen(&g, &x, ops[i]->arg);
            for (int k = nn; k < m->nnodes; k++)
                p += snprintf(p, (size_t)(m->label + sizeof m->label - p), "%s%s",
                              p == m->label ? "" : "+", m->node[k].op);
            if (rc || m->invalid)
                break;
        }
        if (m->nnodes == 0) { /* every op declined: draw again */
            df_model_clear(m);
            g.n = 0;
            continue;
        }
        if (m->invalid) /* refused at the traced size: no other size to compare */
            m->alt_n = 0;
        set_outputs(m);
        return;
    }
}
