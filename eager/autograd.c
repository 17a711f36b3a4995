/*
 * autograd.c - eager autograd: a tape of the ops run on tensors that need
 * a gradient, and eager_backward, which runs each op's rule (graph/grad.def,
 * through the eager builder, eager_op_grad_typed) from the loss back to
 * the leaves.
 *
 * The tape is a graph of gnodes: each op whose inputs need a gradient
 * records one (its attributes, its input and output types, where each
 * input's gradient goes: the gnode that made the input or the leaf, and
 * what its rule saves).  A tensor holds a reference to the gnode that made
 * it; a gnode holds references to the gnodes of its inputs, to its leaves
 * and to its saved inputs, and copies of its saved outputs (a reference
 * to its own output would be a cycle).  A saved input's storage version
 * is recorded with it: a write since (eager_data_mut) fails the backward,
 * naming both call sites.  A backward frees the saved tensors of every
 * gnode it ran (a second backward through them fails, naming the first).
 *
 * The dispatcher's fast path pays one thread-local test
 * (eager_tl_grad_on), which stays 0 until a tensor of the thread asks for
 * a gradient.
 */
#include <stdio.h>
#include <string.h>

#include "../graph/alloc.h"
#include "grad_eager.h"
#include "internal.h"

_Thread_local int eager_tl_grad_on;
static _Thread_local int tl_grad_used;
static _Thread_local int tl_no_grad;

typedef struct gnext {
    struct eager_gnode *node; /* the op that made the input, or NULL */
    int32_t idx;              /* its output index there */
    eager_tensor *leaf;       /* or the leaf itself (one reference) */
} gnext;

typedef struct eager_gnode {
    int32_t refs;
    graph_op op;
    int nin, nout;
    int freed;          /* its saved tensors went with a backward */
    eager_site site;    /* the op's call site: where its inputs were saved */
    eager_site freed_at;
    void *attrs;        /* attr_size bytes, or NULL */
    graph_type *in_t, *out_t;
    gnext *next;            /* nin; node and leaf NULL: no gradient wanted */
    eager_tensor **saved;   /* nin + nout; NULL where not saved */
    uint32_t *saved_ver;    /* nin */
    /* backward scratch */
    eager_tensor **gacc;    /* nout */
    int32_t deps;
    int32_t mark;
} eager_gnode;

/* t's autograd state, made on first use (NULL: out of memory, recorded) */
static eager_ag *ag_of(eager_tensor *t, const eager_site *site)
{
    if (!t->ag) {
        t->ag = tg_calloc(1, sizeof *t->ag);
        if (!t->ag)
            eager_set_error(TG_ERR_NOMEM, site, "no memory for a tensor's gradient state");
    }
    return t->ag;
}

static eager_gnode *gnode_of(const eager_tensor *t) { return t->ag ? t->ag->gnode : NULL; }

static void update_on(void) { eager_tl_grad_on = tl_grad_used && tl_no_grad == 0; }

static int requires(const eager_tensor *t)
{
    return t != EAGER_NONE && (gnode_of(t) || (t->flags & EAGER_T_REQGRAD));
}

static eager_tensor *storage(eager_tensor *t) { return t->base ? t->base : t; }

static void release_saved(eager_gnode *n)
{
    for (int i = 0; i < n->nin + n->nout; i++)
        if (n->saved[i]) {
            eager_tensor *t = n->saved[i];
            n->saved[i] = NULL;
            eager_release(t);
        }
}

static void gnode_release(eager_gnode *n)
{
    /* iterative along the first input's chain, so a long tape does not
     * recurse once per op */
    while (n && --n->refs == 0) {
        eager_gnode *tail = NULL;
        release_saved(n);
        for (int i = 0; i < n->nin; i++) {
            if (n->next[i].leaf)
                eager_release(n->next[i].leaf);
            if (n->next[i].node) {
                if (!tail)
                    tail = n->next[i].node;
                else
                    gnode_release(n->next[i].node);
            }
        }
        for (int o = 0; o < n->nout; o++)
            if (n->gacc[o])
                eager_release(n->gacc[o]);
        tg_free(n->attrs);
        tg_free(n->in_t);
        tg_free(n->out_t);
        tg_free(n->next);
        tg_free(n->saved);
        tg_free(n->saved_ver);
        tg_free(n->gacc);
        tg_free(n);
        n = tail;
    }
}

/* The leaf's reference to its gradient, given up. */
static void grad_drop(eager_tensor *g)
{
    if (!g)
        return;
    g->flags = (uint16_t)(g->flags & ~EAGER_T_GRAD);
    eager_release(g);
}

/* g becomes the leaf's gradient (its reference, which eager_release
 * refuses to drop from outside). */
static eager_tensor *grad_keep(eager_tensor *g)
{
    if (g)
        g->flags |= EAGER_T_GRAD;
    return g;
}

void eager_grad_detach(eager_tensor *t)
{
    eager_ag *a = t->ag;
    t->ag = NULL;
    grad_drop(a->grad);
    if (a->gnode)
        gnode_release(a->gnode);
    tg_free(a);
}

/* A copy of t without autograd links (a saved output).  It holds t's value,
 * so it takes t's tag: a tracer reads it as the value t is (a copy made
 * here is no op it sees; without the tag, a traced backward would read the
 * traced step's data as a constant). */
static eager_tensor *copy_of(const eager_tensor *t, const eager_site *site)
{
    eager_tensor *c = eager_alloc(&t->type, site);
    if (c) {
        memcpy(c->data, t->data, (size_t)t->numel * graph_dtype_size(t->type.dtype));
        c->tag = t->tag;
    }
    return c;
}

int eager_grad_record(graph_op op, eager_tensor *const *in, int nin, const void *attrs,
                      eager_tensor *const *out, int nout, const eager_site *site)
{
    int any = 0;
    for (int i = 0; i < nin && !any; i++)
        any = requires(in[i]) && grad_input_flows(op, i, in[i]->type.dtype);
    if (!any)
        return 0;
    const grad_info *gi = &graph_grads[op];
    eager_gnode *n = tg_calloc(1, sizeof *n);
    size_t asz = graph_ops[op].attr_size;
    if (n) {
        n->in_t = tg_malloc((size_t)nin * sizeof *n->in_t);
        n->out_t = tg_malloc((size_t)nout * sizeof *n->out_t);
        n->next = tg_calloc((size_t)nin, sizeof *n->next);
        n->saved = tg_calloc((size_t)(nin + nout), sizeof *n->saved);
        n->saved_ver = tg_calloc((size_t)nin, sizeof *n->saved_ver);
        n->gacc = tg_calloc((size_t)nout, sizeof *n->gacc);
        n->attrs = asz ? tg_malloc(asz) : NULL;
    }
    if (!n || !n->in_t || !n->out_t || !n->next || !n->saved || !n->saved_ver || !n->gacc ||
        (asz && !n->attrs)) {
        if (n) {
            n->refs = 1;
            gnode_release(n);
        }
        eager_set_error(TG_ERR_NOMEM, site, "%s: no memory for the gradient tape",
                        graph_ops[op].name);
        return -1;
    }
    n->refs = 1; /* dropped below once the outputs hold theirs */
    n->op = op;
    n->nin = nin;
    n->nout = nout;
    n->site = *site;
    if (asz)
        memcpy(n->attrs, attrs, asz);
    for (int i = 0; i < nin; i++) {
        eager_tensor *x = in[i];
        n->in_t[i] = x->type;
        if (requires(x) && grad_input_flows(op, i, x->type.dtype)) {
            if (gnode_of(x)) {
                n->next[i].node = x->ag->gnode;
                n->next[i].idx = x->ag->gout;
                x->ag->gnode->refs++;
            } else {
                n->next[i].leaf = x;
                x->refs++;
            }
        }
        if ((gi->saves_in >> i) & 1u) {
            eager_ag *sa = ag_of(storage(x), site); /* its writes are counted from now */
            if (!sa) {
                gnode_release(n);
                return -1;
            }
            n->saved[i] = x;
            x->refs++;
            n->saved_ver[i] = sa->version;
        }
    }
    for (int o = 0; o < nout; o++) {
        n->out_t[o] = out[o]->type;
        if (o < 32 && (gi->saves_out >> o) & 1u) {
            n->saved[nin + o] = copy_of(out[o], site);
            if (!n->saved[nin + o]) {
                gnode_release(n);
                return -1;
            }
        }
    }
    for (int o = 0; o < nout; o++)
        if (out[o]->type.dtype == GRAPH_F32) {
            eager_ag *oa = ag_of(out[o], site);
            if (!oa) {
                gnode_release(n); /* the outputs made so far keep theirs */
                return -1;
            }
            oa->gnode = n;
            oa->gout = o;
            n->refs++;
        }
    gnode_release(n); /* the outputs' references remain */
    return 0;
}

/* ---- the public calls ---- */

tg_status eager_requires_grad_at(EAGER_SITE_PARAMS, eager_tensor *t, int on)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (t == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "eager_requires_grad: no tensor (EAGER_NONE)");
        return TG_ERR_NULL;
    }
    if (eager_check(t, "eager_requires_grad", &site) < 0)
        return t ? TG_ERR_STATE : TG_ERR_NULL;
    if (gnode_of(t)) {
        eager_set_error(TG_ERR_ARG, &site,
                        "eager_requires_grad: the tensor was made by %s from tensors that "
                        "require gradients (only a leaf's flag can be set)",
                        graph_ops[t->ag->gnode->op].name);
        return TG_ERR_ARG;
    }
    if (on && t->type.dtype != GRAPH_F32) {
        eager_set_error(TG_ERR_DTYPE, &site,
                        "eager_requires_grad: a %s tensor cannot have a gradient (only f32)",
                        graph_dtype_name(t->type.dtype));
        return TG_ERR_DTYPE;
    }
    if (on) {
        t->flags |= EAGER_T_REQGRAD;
        tl_grad_used = 1;
        update_on();
    } else {
        t->flags &= (uint16_t)~EAGER_T_REQGRAD;
    }
    return TG_OK;
}

int eager_is_grad(const eager_tensor *t)
{
    return t && t != EAGER_NONE && t->magic == EAGER_LIVE && (t->flags & EAGER_T_GRAD);
}

int eager_is_requires_grad(const eager_tensor *t)
{
    return t && t != EAGER_NONE && t->magic == EAGER_LIVE && requires(t);
}

eager_tensor *eager_grad_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (eager_check(t, "eager_grad", &site) < 0)
        return NULL;
    return t->ag ? t->ag->grad : NULL;
}

void eager_zero_grad_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (eager_check(t, "eager_zero_grad", &site) < 0 || !t->ag || !t->ag->grad)
        return;
    eager_tensor *g = t->ag->grad;
    t->ag->grad = NULL;
    grad_drop(g);
}

void eager_no_grad_begin(void)
{
    tl_no_grad++;
    update_on();
}

void eager_no_grad_end(void)
{
    if (tl_no_grad > 0)
        tl_no_grad--;
    else
        eager_set_error(TG_ERR_STATE, NULL, "eager_no_grad_end: no eager_no_grad_begin is open "
                                            "on this thread");
    update_on();
}

/* ---- backward ---- */

typedef struct nodelist {
    eager_gnode **v;
    int n, cap;
} nodelist;

static int push(nodelist *l, eager_gnode *x)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        eager_gnode **v = tg_realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

/* sum <- sum + g (a new tensor; both references consumed); NULL on error */
static eager_tensor *accumulate(eager_tensor *sum, eager_tensor *g, const eager_site *site)
{
    if (!sum)
        return g;
    eager_tensor *in[2] = {sum, g}, *out = NULL;
    int k = eager_dispatch(GRAPH_OP_add, in, 2, NULL, &out, 1, site);
    grad_drop(sum);
    eager_release(g);
    if (k != 1)
        return NULL;
    return eager_keep(out);
}

/* "model.c:42 forward", as the errors name a call site */
static const char *site_str(const eager_site *s, char *buf, size_t n)
{
    const char *slash = s->file ? strrchr(s->file, '/') : NULL;
    snprintf(buf, n, "%s:%d %s", slash ? slash + 1 : s->file ? s->file : "?", s->line,
             s->func ? s->func : "?");
    return buf;
}

static tg_status run_node(eager_gnode *n, const eager_site *site)
{
    int has = 0;
    for (int o = 0; o < n->nout; o++)
        has |= n->gacc[o] != NULL;
    if (!has)
        return TG_OK;
    char a[256], b[256];
    for (int i = 0; i < n->nin; i++) {
        eager_tensor *s = n->saved[i];
        if (s && storage(s)->ag->version != n->saved_ver[i]) {
            eager_set_error(TG_ERR_STATE, site,
                            "eager_backward: %s's input %d, saved for the gradient at %s, was "
                            "written at %s after it was saved (version %u then, %u now)",
                            graph_ops[n->op].name, i, site_str(&n->site, a, sizeof a),
                            site_str(&storage(s)->ag->wsite, b, sizeof b), n->saved_ver[i],
                            storage(s)->ag->version);
            return TG_ERR_STATE;
        }
    }
    unsigned char *need = tg_malloc((size_t)n->nin);
    eager_tensor **gin = tg_calloc((size_t)n->nin, sizeof *gin);
    if (!need || !gin) {
        tg_free(need);
        tg_free(gin);
        eager_set_error(TG_ERR_NOMEM, site, "eager_backward: no memory");
        return TG_ERR_NOMEM;
    }
    for (int i = 0; i < n->nin; i++)
        need[i] = n->next[i].node || n->next[i].leaf;
    tg_status st = eager_op_grad_typed(n->op, n->in_t, n->saved, n->nin, n->attrs, n->out_t,
                                       n->saved + n->nin, n->nout, n->gacc, need, gin, &n->site);
    if (st != TG_OK) {
        /* the rule's message ends with the op's site: labelled here, so the
         * two sites read apart (the op's, then this backward's) */
        char why[700], suffix[300];
        snprintf(why, sizeof why, "%s", eager_error());
        eager_clear_error();
        snprintf(suffix, sizeof suffix, " (%s)", site_str(&n->site, a, sizeof a));
        size_t lw = strlen(why), ls = strlen(suffix);
        if (lw >= ls && !strcmp(why + lw - ls, suffix))
            why[lw - ls] = '\0';
        eager_set_error(st, site, "eager_backward: %s (the op recorded at %s)", why, a);
    }
    for (int i = 0; st == TG_OK && i < n->nin; i++) {
        eager_tensor *g = gin[i];
        gin[i] = NULL;
        if (!g)
            continue;
        if (n->next[i].node) {
            eager_gnode *p = n->next[i].node;
            p->gacc[n->next[i].idx] = accumulate(p->gacc[n->next[i].idx], g, site);
            if (!p->gacc[n->next[i].idx])
                st = eager_status();
        } else {
            /* a leaf's gradient is its own tensor (the user may write it) */
            eager_ag *la = ag_of(n->next[i].leaf, site);
            if (!la) {
                eager_release(g);
                st = eager_status();
                continue;
            }
            if (!la->grad && (g->refs > 1 || g->base)) {
                eager_tensor *c = copy_of(g, site);
                eager_release(g);
                g = c;
                if (!g) {
                    st = eager_status();
                    continue;
                }
            }
            la->grad = grad_keep(accumulate(la->grad, g, site));
            if (!la->grad)
                st = eager_status();
        }
    }
    for (int i = 0; i < n->nin; i++)
        if (gin[i])
            eager_release(gin[i]);
    tg_free(need);
    tg_free(gin);
    return st;
}

static _Thread_local uint64_t tl_backwards;

uint64_t eager_backward_count(void) { return tl_backwards; }

tg_status eager_backward_at(EAGER_SITE_PARAMS, eager_tensor *loss)
{
    eager_site site = {site_file_, site_line_, site_func_};
    tl_backwards++;
    if (loss == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "eager_backward: no tensor (EAGER_NONE)");
        return TG_ERR_NULL;
    }
    if (eager_check(loss, "eager_backward", &site) < 0)
        return loss ? TG_ERR_STATE : TG_ERR_NULL;
    /* the tape's tensors are the thread's that recorded it: a backward
     * elsewhere would release them from the wrong thread */
    if (eager_foreign(loss, "eager_backward", &site))
        return TG_ERR_STATE;
    if (loss->numel != 1 || loss->type.dtype != GRAPH_F32) {
        eager_set_error(TG_ERR_SHAPE, &site,
                        "eager_backward: the loss has %lld elements of %s; it must be one "
                        "f32 element (reduce it first, e.g. with eager_reduce_mean)",
                        (long long)loss->numel, graph_dtype_name(loss->type.dtype));
        return TG_ERR_SHAPE;
    }
    if (!requires(loss)) {
        eager_set_error(TG_ERR_ARG, &site,
                        "eager_backward: the loss does not depend on a tensor that requires a "
                        "gradient (eager_requires_grad), or was made under eager_no_grad_begin");
        return TG_ERR_ARG;
    }
    float one = 1.0f;
    tg_status st = TG_OK;
    if (eager_pool_push() != TG_OK)
        return eager_status();
    int saved_no_grad = tl_no_grad;
    tl_no_grad = 1; /* the backward's own ops record nothing */
    update_on();
    eager_tensor *seed = eager_from_data_at(site.file, site.line, site.func, GRAPH_F32,
                                            (graph_ints){loss->type.ndim, {1, 1, 1, 1, 1, 1, 1, 1}},
                                            &one);
    nodelist all = {0}, ready = {0};
    if (!seed) {
        st = eager_status();
        goto out;
    }
    seed = eager_keep(seed);
    if (!gnode_of(loss)) { /* the loss is a leaf */
        eager_ag *la = ag_of(loss, &site);
        if (!la) {
            st = eager_status();
            goto out;
        }
        la->grad = grad_keep(accumulate(la->grad, seed, &site));
        seed = NULL;
        st = la->grad ? TG_OK : eager_status();
        goto out;
    }
    /* the gnodes the loss depends on, and how many consumers each has */
    eager_gnode *root = loss->ag->gnode;
    root->mark = 1;
    root->deps = 0;
    if (push(&all, root) < 0)
        goto nomem;
    for (int k = 0; k < all.n; k++) {
        eager_gnode *n = all.v[k];
        if (n->freed) {
            char a[256], b[256];
            eager_set_error(TG_ERR_STATE, &site,
                            "eager_backward: the tape through %s (recorded at %s) was freed by "
                            "the eager_backward at %s: run the forward again for another "
                            "backward", graph_ops[n->op].name, site_str(&n->site, a, sizeof a),
                            site_str(&n->freed_at, b, sizeof b));
            st = TG_ERR_STATE;
            goto out;
        }
        for (int i = 0; i < n->nin; i++) {
            eager_gnode *p = n->next[i].node;
            if (!p)
                continue;
            if (!p->mark) {
                p->mark = 1;
                p->deps = 0;
                if (push(&all, p) < 0)
                    goto nomem;
            }
            p->deps++;
        }
    }
    root->gacc[loss->ag->gout] = seed;
    seed = NULL;
    if (push(&ready, root) < 0)
        goto nomem;
    while (ready.n > 0) {
        eager_gnode *n = ready.v[--ready.n];
        st = run_node(n, &site);
        for (int o = 0; o < n->nout; o++)
            if (n->gacc[o]) {
                eager_release(n->gacc[o]);
                n->gacc[o] = NULL;
            }
        if (st != TG_OK)
            goto out;
        for (int i = 0; i < n->nin; i++) {
            eager_gnode *p = n->next[i].node;
            if (p && --p->deps == 0 && push(&ready, p) < 0)
                goto nomem;
        }
    }
    /* the tape is spent: its saved tensors go */
    for (int k = 0; k < all.n; k++) {
        release_saved(all.v[k]);
        all.v[k]->freed = 1;
        all.v[k]->freed_at = site;
    }
    goto out;
nomem:
    eager_set_error(TG_ERR_NOMEM, &site, "eager_backward: no memory");
    st = TG_ERR_NOMEM;
out:
    for (int k = 0; k < all.n; k++) {
        eager_gnode *n = all.v[k];
        n->mark = 0;
        for (int o = 0; o < n->nout; o++)
            if (n->gacc[o]) {
                eager_release(n->gacc[o]);
                n->gacc[o] = NULL;
            }
    }
    if (seed)
        eager_release(seed);
    tg_free(all.v);
    tg_free(ready.v);
    tl_no_grad = saved_no_grad;
    update_on();
    eager_pool_pop_at(site.file, site.line, site.func);
    return st;
}

/*
 * A loss computed inside its own pool level: kept through the pop, then
 * adopted by the caller's pool (if any), as an op's result; NULL stays
 * NULL.
 */
static eager_tensor *loss_out(eager_tensor *loss, const eager_site *site)
{
    if (loss)
        eager_retain(loss);
    eager_pool_pop_at(site->file, site->line, site->func);
    if (!loss)
        return NULL;
    if (eager_pool_reserve(1) < 0 || eager_pool_adopt(loss) < 0) {
        eager_release(loss);
        return NULL;
    }
    return loss;
}

/* ---- losses, made of ops (so they are recorded like any other) ---- */


static eager_tensor *scalar(double v, const eager_site *s)
{
    float f = (float)v;
    return eager_from_data_at(s->file, s->line, s->func, GRAPH_F32, (graph_ints){0, {0}}, &f);
}

eager_tensor *eager_cross_entropy_at(EAGER_SITE_PARAMS, eager_tensor *logits,
                                     eager_tensor *target, double label_smoothing)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!logits || !target)
        return NULL;
    if (eager_check(logits, "eager_cross_entropy: logits", &site) < 0 ||
        eager_check(target, "eager_cross_entropy: target", &site) < 0)
        return NULL;
    const graph_type *lt = &logits->type, *tt = &target->type;
    if (lt->ndim != 2 || lt->dtype != GRAPH_F32 || tt->ndim != 1 ||
        (tt->dtype != GRAPH_I64 && tt->dtype != GRAPH_I32) || tt->dim[0] != lt->dim[0]) {
        char a[160], b[160];
        graph_shape_str(lt, a, sizeof a);
        graph_shape_str(tt, b, sizeof b);
        eager_set_error(TG_ERR_SHAPE, &site,
                        "eager_cross_entropy: logits %s %s and target %s %s: want f32 "
                        "[N,C] logits and i64 or i32 [N] class indices",
                        graph_dtype_name(lt->dtype), a, graph_dtype_name(tt->dtype), b);
        return NULL;
    }
    if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
        eager_set_error(TG_ERR_ARG, &site,
                        "eager_cross_entropy: label_smoothing %g is outside [0, 1]",
                        label_smoothing);
        return NULL;
    }
    /* loss = mean_n -( (1-e) lsm[n, t_n] + e/C sum_c lsm[n, c] ) */
    if (eager_pool_push() != TG_OK)
        return NULL;
    graph_log_softmax_attrs la = {-1};
    graph_reshape_attrs ra = {{2, {-1, 1}}}; /* -1: follows a dynamic batch */
    graph_gather_elements_attrs ga = {1};
    graph_reduce_mean_attrs ma;
    graph_attrs_default(GRAPH_OP_reduce_mean, &ma);
    eager_tensor *lsm = eager_op1(GRAPH_OP_log_softmax, logits, &la, &site);
    eager_tensor *idx = eager_op1(GRAPH_OP_reshape, target, &ra, &site);
    eager_tensor *pick = lsm && idx ? eager_op2(GRAPH_OP_gather_elements, lsm, idx, &ga, &site) : NULL;
    eager_tensor *nll = pick ? eager_op1(GRAPH_OP_reduce_mean, pick, &ma, &site) : NULL;
    if (nll && label_smoothing > 0) {
        eager_tensor *avg = eager_op1(GRAPH_OP_reduce_mean, lsm, &ma, &site); /* mean over N and C */
        eager_tensor *a = eager_op2(GRAPH_OP_mul, nll, scalar(1.0 - label_smoothing, &site), NULL,
                              &site);
        eager_tensor *b = avg ? eager_op2(GRAPH_OP_mul, avg, scalar(label_smoothing, &site), NULL,
                                    &site) : NULL;
        nll = a && b ? eager_op2(GRAPH_OP_add, a, b, NULL, &site) : NULL;
    }
    eager_tensor *loss = nll ? eager_op1(GRAPH_OP_neg, nll, NULL, &site) : NULL;
    return loss_out(loss, &site);
}

eager_tensor *eager_mse_loss_at(EAGER_SITE_PARAMS, eager_tensor *a, eager_tensor *b)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!a || !b)
        return NULL;
    if (eager_check(a, "eager_mse_loss: a", &site) < 0 ||
        eager_check(b, "eager_mse_loss: b", &site) < 0)
        return NULL;
    graph_type both;
    if (graph_broadcast(&a->type, &b->type, &both) != TG_OK) {
        char sa[160], sb[160];
        eager_set_error(TG_ERR_SHAPE, &site,
                        "eager_mse_loss: a is %s%s, b is %s%s: they must have one shape (or "
                        "broadcast to one)", graph_dtype_name(a->type.dtype),
                        graph_shape_str(&a->type, sa, sizeof sa), graph_dtype_name(b->type.dtype),
                        graph_shape_str(&b->type, sb, sizeof sb));
        return NULL;
    }
    if (eager_pool_push() != TG_OK)
        return NULL;
    graph_reduce_mean_attrs ma;
    graph_attrs_default(GRAPH_OP_reduce_mean, &ma);
    eager_tensor *d = eager_op2(GRAPH_OP_sub, a, b, NULL, &site);
    eager_tensor *sq = d ? eager_op2(GRAPH_OP_mul, d, d, NULL, &site) : NULL;
    eager_tensor *loss = sq ? eager_op1(GRAPH_OP_reduce_mean, sq, &ma, &site) : NULL;
    return loss_out(loss, &site);
}
