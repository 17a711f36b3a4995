/*
 * plan.c - replay_compile: copy and verify the graph, find the backend
 * and device by name (backends.c), ask it about every node, build the schedule
 * (nodes, each followed by the guard checks of the values it makes), let
 * the backend prepare every node and plan memory for the traced shapes.
 * Other dynamic sizes get their own variant on first use.
 */
#include <stdlib.h>
#include <string.h>

#include "../eager/cpu_target.h"
#include "../graph/alloc.h"
#include "../graph/invariants.h"
#include "../optimize/opt.h"
#include "internal.h"
#include "../graph/graph_impl.h"

const char *replay_node_str(const replay_plan *p, int32_t node, char *buf, size_t len)
{
    char site[300];
    const graph_node *n = &p->g->nodes[node];
    snprintf(buf, len, "node %d (%s at %s)", node, graph_ops[n->op].name,
             graph_prov_str(p->g, n->nprov ? n->prov[0] : -1, site, sizeof site));
    return buf;
}

static void variant_free(replay_variant *v)
{
    if (!v)
        return;
    tg_free(v->key);
    tg_free(v->types);
    opt_memplan_free(&v->mp);
    tg_free(v);
}

/*
 * For a reshape specialized on the traced sizes (infer_types): where its
 * target shape holds a dynamic symbol's traced size literally and these
 * inputs give the symbol another size, a hint to write -1 there instead
 * ("; its target shape [4,10] holds the traced size of \"batch\" (4) at
 * dim 0, now 7: write -1 there, TG_SHAPE(-1, 10), to follow the input");
 * "" otherwise.
 */
static void reshape_hint(const replay_plan *p, const graph_node *n,
                         const replay_tensor *const *in, char *buf, size_t len)
{
    const graph *g = p->g;
    if (n->op != GRAPH_OP_reshape)
        return;
    const graph_ints *shape = &((const graph_reshape_attrs *)tg_node_attrs(n))->shape;
    int has_minus1 = 0;
    for (int k = 0; k < shape->n; k++)
        has_minus1 |= shape->v[k] == -1;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const graph_value *v = &g->values[g->inputs[i]];
        for (int d = 0; d < v->type.ndim; d++) {
            int s = v->sym[d];
            if (!(v->dyn >> d & 1) || s < 0 || s >= g->nsyms ||
                in[i]->type.dim[d] == g->syms[s].traced)
                continue;
            for (int k = 0; k < shape->n; k++) {
                if (shape->v[k] != g->syms[s].traced)
                    continue;
                char was[200], fix[240];
                size_t at = (size_t)snprintf(fix, sizeof fix, "TG_SHAPE(");
                for (int j = 0; j < shape->n && at < sizeof fix; j++)
                    at += (size_t)snprintf(fix + at, sizeof fix - at, "%s%lld", j ? ", " : "",
                                           j == k ? -1LL : (long long)shape->v[j]);
                if (at < sizeof fix)
                    snprintf(fix + at, sizeof fix - at, ")");
                snprintf(buf, len, "; its target shape %s holds the traced size of \"%s\" (%lld) "
                         "at dim %d, now %lld: %s%s%s", graph_ints_str(shape, was, sizeof was),
                         g->syms[s].name, (long long)g->syms[s].traced, k,
                         (long long)in[i]->type.dim[d],
                         has_minus1 ? "compute that dim from the input's shape" : "write -1 there, ",
                         has_minus1 ? "" : fix, has_minus1 ? "" : ", to follow the input");
                return;
            }
        }
    }
}

tg_status replay_infer_types(const replay_plan *p, const replay_tensor *const *in,
                             graph_type *types, char *err, size_t errlen)
{
    const graph *g = p->g;
    for (int32_t v = 0; v < g->nvalues; v++)
        types[v] = g->values[v].type;
    for (int32_t i = 0; i < g->ninputs; i++)
        types[g->inputs[i]] = in[i]->type;
    graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO];
    char msg[400], what[400];
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int k = 0; k < n->nin; k++)
            it[k] = types[n->in[k]];
        int nout = 0;
        tg_status st = graph_infer(n->op, it, n->nin, tg_node_attrs(n), ot,
                                   GRAPH_MAX_NODE_IO, &nout, msg, sizeof msg);
        if (st != TG_OK || nout != n->nout) {
            char hint[400] = "", why[500] = "";
            if (n->flags & GRAPH_NODE_SPECIALIZED) {
                reshape_hint(p, n, in, hint, sizeof hint);
                snprintf(why, sizeof why, " (this node was specialized on the traced sizes%s)",
                         hint);
            }
            snprintf(err, errlen, "replay: %s: %s%s", replay_node_str(p, i, what, sizeof what),
                     st != TG_OK ? msg : "output count changed", why);
            return st != TG_OK ? st : TG_ERR_SHAPE;
        }
        for (int k = 0; k < nout; k++)
            types[n->out[k]] = ot[k];
    }
    return TG_OK;
}

/*
 * Nonzero (a message in err naming the sizes) if a session at variant v's
 * shapes would need more than opts.max_memory (replay.h says what is
 * counted).  which: "the traced shapes" or "these input shapes".
 */
static int over_budget(const replay_plan *p, const replay_variant *v, const char *which,
                       char *err, size_t errlen)
{
    size_t max = p->opts.max_memory, arena = v->mp.arena_bytes;
    size_t need = arena + p->fixed_bytes;
    if (!max || (need <= max && need >= arena))
        return 0;
    snprintf(err, errlen, "replay: %s need %zu bytes (arena %zu + params and constants %zu), "
             "more than replay_opts.max_memory (%zu)", which,
             need >= arena ? need : SIZE_MAX, arena, p->fixed_bytes, max);
    return 1;
}

static replay_variant *variant_new(replay_plan *p, const replay_tensor *const *in,
                                   tg_status *status, char *err, size_t errlen)
{
    const graph *g = p->g;
    *status = TG_ERR_NOMEM;
    replay_variant *v = tg_calloc(1, sizeof *v);
    if (!v)
        goto oom;
    v->nkey = p->nkey;
    v->key = tg_malloc(sizeof(int64_t) * (size_t)(p->nkey + 1));
    v->types = tg_malloc(sizeof(graph_type) * (size_t)(g->nvalues + 1));
    if (!v->key || !v->types)
        goto oom;
    for (int32_t i = 0, k = 0; i < g->ninputs; i++)
        for (int d = 0; d < in[i]->type.ndim; d++)
            v->key[k++] = in[i]->type.dim[d];
    tg_status st = replay_infer_types(p, in, v->types, err, errlen);
    if (st != TG_OK) {
        *status = st;
        variant_free(v);
        return NULL;
    }
    if (opt_memplan_build_aligned(g, v->types, !p->opts.no_inplace, p->align, &v->mp) != TG_OK)
        goto oom;
    if (over_budget(p, v, p->traced ? "these input shapes" : "the traced shapes", err,
                    errlen)) {
        variant_free(v);
        return NULL; /* *status: TG_ERR_NOMEM */
    }
    *status = TG_OK;
    return v;
oom:
    variant_free(v);
    snprintf(err, errlen, "replay: out of memory planning");
    return NULL;
}

/* "f32[B,32]": v's type with its dynamic dims by symbol name. */
static const char *symbolic_type_str(const graph *g, const graph_value *v, char *buf,
                                     size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s[", graph_dtype_name(v->type.dtype));
    for (int d = 0; d < v->type.ndim && n < len; d++) {
        const char *sep = d ? "," : "";
        int s = v->sym[d];
        if ((v->dyn >> d & 1) && s >= 0 && s < g->nsyms)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, g->syms[s].name);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%lld", sep, (long long)v->type.dim[d]);
    }
    if (n < len)
        snprintf(buf + n, len - n, "]");
    return buf;
}

tg_status replay_check_inputs(const replay_plan *p, const replay_tensor *const *in,
                              char *err, size_t errlen)
{
    const graph *g = p->g;
    int64_t sym[128];
    for (int s = 0; s < 128; s++)
        sym[s] = -1;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const graph_value *v = &g->values[g->inputs[i]];
        const graph_type *t = &in[i]->type;
        char want[400], label[300];
        if (v->name)
            snprintf(label, sizeof label, "\"%s\"", v->name);
        else
            snprintf(label, sizeof label, "%d", i);
        if (t->dtype != v->type.dtype) {
            char got[160];
            snprintf(err, errlen, "replay: input %s is %s%s, the plan takes %s", label,
                     graph_dtype_name(t->dtype), graph_shape_str(t, got, sizeof got),
                     symbolic_type_str(g, v, want, sizeof want));
            return TG_ERR_DTYPE;
        }
        int ok = t->ndim == v->type.ndim;
        for (int d = 0; ok && d < v->type.ndim; d++) {
            if (v->dyn >> d & 1) {
                int64_t *s = &sym[v->sym[d]];
                ok = *s < 0 || *s == t->dim[d];
                *s = t->dim[d];
            } else {
                ok = t->dim[d] == v->type.dim[d];
            }
        }
        if (!ok) {
            char got[160];
            snprintf(err, errlen, "replay: input %s is %s%s, the plan takes %s "
                     "(only dims marked dynamic, by name, may change, consistently)", label,
                     graph_dtype_name(t->dtype),
                     graph_shape_str(t, got, sizeof got),
                     symbolic_type_str(g, v, want, sizeof want));
            return TG_ERR_SHAPE;
        }
    }
    return TG_OK;
}

replay_variant *replay_variant_get(replay_plan *p, const replay_tensor *const *in,
                                   tg_status *status, char *err, size_t errlen)
{
    tg_status st = replay_check_inputs(p, in, err, errlen);
    if (st != TG_OK) {
        *status = st;
        return NULL;
    }
    /* the inputs' ranks are the signature's now: the key has p->nkey dims */
    int64_t small[64], *key = p->nkey <= 64 ? small : tg_malloc(sizeof(int64_t) * (size_t)p->nkey);
    if (!key) {
        snprintf(err, errlen, "replay: out of memory");
        *status = TG_ERR_NOMEM;
        return NULL;
    }
    int32_t k = 0;
    for (int32_t i = 0; i < p->g->ninputs; i++)
        for (int d = 0; d < in[i]->type.ndim; d++)
            key[k++] = in[i]->type.dim[d];
    pthread_mutex_lock(&p->mu);
    replay_variant *v = p->traced;
    while (v && memcmp(v->key, key, sizeof(int64_t) * (size_t)k) != 0)
        v = v->next;
    if (!v) {
        v = variant_new(p, in, &st, err, errlen);
        if (v) {
            v->next = p->traced->next;
            p->traced->next = v;
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (key != small)
        tg_free(key);
    *status = st;
    return v;
}

/* The schedule: live nodes, each followed by checks of its guarded outputs;
 * guards on inputs first. */
static tg_status schedule(replay_plan *p)
{
    const graph *g = p->g;
    p->items = tg_malloc(sizeof(replay_item) * (size_t)(g->nnodes + g->nguards + 1));
    if (!p->items)
        return TG_ERR_NOMEM;
    /* the guards of each node's values, in guard order: a counting sort
     * (one pass per node over every guard was quadratic) */
    int32_t *first = tg_calloc((size_t)g->nnodes + 2, sizeof *first);
    int32_t *order = tg_malloc(sizeof *order * ((size_t)g->nguards + 1));
    if (!first || !order) {
        tg_free(first);
        tg_free(order);
        return TG_ERR_NOMEM;
    }
    for (int32_t k = 0; k < g->nguards; k++) {
        int32_t at = g->values[g->guards[k].value].node;
        if (g->values[g->guards[k].value].kind == GRAPH_VALUE_INTER && at >= 0 && at < g->nnodes)
            first[at + 2]++;
    }
    for (int32_t i = 0; i < g->nnodes; i++)
        first[i + 2] += first[i + 1];
    for (int32_t k = 0; k < g->nguards; k++) {
        int32_t at = g->values[g->guards[k].value].node;
        if (g->values[g->guards[k].value].kind == GRAPH_VALUE_INTER && at >= 0 && at < g->nnodes)
            order[first[at + 1]++] = k;
    }
    /* now node i's guards are order[first[i] .. first[i + 1]) */
    int32_t n = 0;
    for (int32_t k = 0; k < g->nguards; k++)
        if (g->values[g->guards[k].value].kind != GRAPH_VALUE_INTER)
            p->items[n++] = (replay_item){-1, k};
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *nd = &g->nodes[i];
        if (nd->flags & GRAPH_NODE_DEAD)
            continue;
        p->items[n++] = (replay_item){i, -1};
        for (int32_t j = first[i]; j < first[i + 1]; j++)
            p->items[n++] = (replay_item){-1, order[j]};
    }
    p->nitems = n;
    tg_free(first);
    tg_free(order);
    return TG_OK;
}

/* The target of backend be for options o (threads already defaulted). */
static void backend_target(const replay_backend *be, const replay_opts *o, graph_target *t)
{
    if (be->target)
        be->target(o, t);
    else
        eager_cpu_target(o->threads, t);
}

/* *o: opts (NULL: the defaults) with threads defaulted, and its backend
 * (its device not looked at); NULL with a message for options
 * replay_compile refuses (threads, a backend name). */
static const replay_backend *resolve_opts(const replay_opts *opts, replay_opts *o, char *err,
                                          size_t errlen)
{
    *o = (replay_opts)REPLAY_OPTS_INIT;
    if (opts)
        *o = *opts;
    if (o->threads < 0 || o->threads > TG_MAX_THREADS) {
        snprintf(err, errlen, "replay: replay_opts.threads is %d (1 to %d; 0 for the default 1)",
                 o->threads, TG_MAX_THREADS);
        return NULL;
    }
    if (o->threads == 0)
        o->threads = 1;
    return replay_backend_named(o, err, errlen);
}

tg_status replay_target(const replay_opts *opts, graph_target *t, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    replay_opts o;
    if (!t) {
        snprintf(err, errlen, "replay_target: no target to fill (NULL)");
        return TG_ERR_NULL;
    }
    const replay_backend *be = resolve_opts(opts, &o, err, errlen);
    if (!be)
        return TG_ERR_ARG;
    backend_target(be, &o, t);
    return TG_OK;
}

const char *replay_plan_layout(const replay_plan *p) { return p ? p->layout : NULL; }

/*
 * A graph laid out for another target than the backend's is re-planned
 * for it (opt_relayout): p->g replaced.  When the layout cannot be undone,
 * the graph runs as it is (the CPU takes either block; a backend that
 * cannot refuses its nodes next, by supports_op).  p->layout says which.
 */
static tg_status relayout(replay_plan *p, char *err, size_t errlen)
{
    graph_target t;
    graph *re = NULL;
    char why[400];
    if (!p->g->target && !opt_has_blocked(p->g)) { /* the common case: nothing asked */
        snprintf(p->layout, sizeof p->layout, "no layout planned (optimized below -O3)");
        return TG_OK;
    }
    if (p->g->target && !p->backend->target) { /* the CPU's name costs nothing to ask */
        eager_cpu_target_name(t.name, sizeof t.name);
        if (strcmp(t.name, p->g->target) == 0) {
            snprintf(p->layout, sizeof p->layout, "laid out for %s", p->g->target);
            return TG_OK;
        }
    }
    backend_target(p->backend, &p->opts, &t);
    tg_status st = opt_relayout(p->g, &t, NULL, &re, why, sizeof why);
    const char *was = p->g->target ? p->g->target : "an unrecorded target (an older file)";
    if (re) {
        graph_cost_rates r;
        char rwhy[8];
        int rated = t.rates && t.block && opt_has_blocked(re) &&
                    t.rates(&t, &r, rwhy, sizeof rwhy) == TG_OK; /* asked already: no cost */
        snprintf(p->layout, sizeof p->layout,
                 "re-planned for %s (the graph was laid out for %s)%s%.300s", t.name, was,
                 rated ? "; cost rates " : "", rated ? r.from : "");
        graph_free(p->g);
        p->g = re;
    } else if (st == TG_ERR_NOMEM) {
        snprintf(err, errlen, "replay: %s", why);
        return st;
    } else if (st != TG_OK) {
        snprintf(p->layout, sizeof p->layout, "laid out for %s, not re-planned for %s: %s", was,
                 t.name, why);
    } else if (p->g->target) {
        snprintf(p->layout, sizeof p->layout, "laid out for %s", p->g->target);
    } else {
        snprintf(p->layout, sizeof p->layout, "no layout planned (optimized below -O3)");
    }
    return TG_OK;
}

replay_plan *replay_compile(const graph *g, const replay_opts *opts, char *err,
                            size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    replay_opts o;
    if (!resolve_opts(opts, &o, err, errlen))
        return NULL;
    if (!g) {
        snprintf(err, errlen, "replay: no graph");
        return NULL;
    }
    replay_device_info dev;
    int dev_index;
    tg_status found;
    const replay_backend *be = replay_backend_resolve(&o, &dev, &dev_index, &found, err, errlen);
    if (!be)
        return NULL;
    replay_plan *p = tg_calloc(1, sizeof *p);
    if (!p || !(p->g = graph_clone(g))) {
        tg_free(p);
        snprintf(err, errlen, "replay: out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    atomic_init(&p->refs, 1);
    atomic_init(&p->given_up, 0);
    p->opts = o;
    p->opts.device = NULL; /* the caller's string, read only here */
    p->backend = be;
    p->device_index = dev_index;
    snprintf(p->device_name, sizeof p->device_name, "%s", dev.name);
    if (graph_verify(p->g, 0) != TG_OK) {
        snprintf(err, errlen, "replay: invalid graph: %s", graph_error(p->g));
        goto fail;
    }
    graph_assert_links(p->g); /* verified; what the plan builders index by */
    if (relayout(p, err, errlen) != TG_OK)
        goto fail;
    p->align = OPT_ARENA_ALIGN;
    snprintf(p->target, sizeof p->target, "backend %s", be->name);
    if (p->g->nstates && be->run) {
        snprintf(err, errlen, "replay: the graph has state (%d states: a training step); "
                 "only the cpu backend runs such graphs, not %s", (int)p->g->nstates, be->name);
        goto fail;
    }
    if (be->plan_new && be->plan_new(p, err, errlen) != TG_OK)
        goto fail;
    for (int32_t i = 0; i < p->g->nnodes; i++) {
        const graph_node *n = &p->g->nodes[i];
        char why[400], what[400];
        if (!(n->flags & GRAPH_NODE_DEAD) && !be->supports_op(p, n, why, sizeof why)) {
            snprintf(err, errlen, "replay: op %s is not supported on %s: %s (%s)",
                     graph_ops[n->op].name, p->target, why,
                     replay_node_str(p, i, what, sizeof what));
            goto fail;
        }
    }
    for (int32_t i = 0; i < p->g->ninputs; i++)
        p->nkey += p->g->values[p->g->inputs[i]].type.ndim;
    for (int32_t i = 0; i < p->g->nvalues; i++) {
        const graph_value *v = &p->g->values[i];
        if ((v->kind == GRAPH_VALUE_CONST || v->kind == GRAPH_VALUE_PARAM) && v->data)
            p->fixed_bytes += graph_type_bytes(&v->type);
    }
    if (schedule(p) != TG_OK) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    /* every node prepared (kernels built) now, not at the first run */
    for (int32_t i = 0; be->prepare_op && i < p->g->nnodes; i++)
        if (!(p->g->nodes[i].flags & GRAPH_NODE_DEAD) && be->prepare_op(p, i, err, errlen) != TG_OK)
            goto fail;
    /* the traced variant: the signature's own types as inputs */
    size_t nin = (size_t)p->g->ninputs;
    replay_tensor *sig = tg_calloc(nin + 1, sizeof *sig);
    const replay_tensor **in = tg_malloc(sizeof *in * (nin + 1));
    tg_status st = TG_ERR_NOMEM;
    if (sig && in) {
        for (size_t i = 0; i < nin; i++) {
            sig[i].type = p->g->values[p->g->inputs[i]].type;
            in[i] = &sig[i];
        }
        p->traced = variant_new(p, in, &st, err, errlen);
    } else {
        snprintf(err, errlen, "replay: out of memory");
    }
    tg_free(sig);
    tg_free(in);
    if (!p->traced)
        goto fail;
    if (o.tune && replay_tune(p, err, errlen) != TG_OK)
        goto fail;
    return p;
fail:
    replay_plan_free(p);
    return NULL;
}

static void plan_destroy(replay_plan *p)
{
    for (replay_variant *v = p->traced, *next; v; v = next) {
        next = v->next;
        variant_free(v);
    }
    pthread_mutex_destroy(&p->mu);
    if (p->bplan && p->backend->plan_free)
        p->backend->plan_free(p->bplan);
    tg_free(p->items);
    tg_free(p->gemm_impl);
    graph_free(p->g);
    tg_free(p);
}

void replay_plan_unref(replay_plan *p)
{
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        plan_destroy(p);
}

void replay_plan_free(replay_plan *p)
{
    /* the caller's reference, once: a second call while sessions keep the
     * plan drops nothing more */
    if (p && !atomic_exchange(&p->given_up, 1))
        replay_plan_unref(p);
}

size_t replay_workspace_size(const replay_plan *p)
{
    return p ? p->traced->mp.arena_bytes : 0;
}

tg_status replay_set_param(replay_plan *p, const char *name, const void *data,
                           size_t nbytes, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!p || !name || !data) {
        snprintf(err, errlen, "replay_set_param: NULL argument");
        return TG_ERR_NULL;
    }
    for (int32_t i = 0; i < p->g->nvalues; i++) {
        graph_value *v = &p->g->values[i];
        if (v->kind != GRAPH_VALUE_PARAM || !v->name || strcmp(v->name, name) != 0)
            continue;
        if (nbytes != graph_value_nbytes(v)) {
            char s[160];
            snprintf(err, errlen, "replay_set_param: \"%s\" is %s%s (%zu bytes), got %zu bytes",
                     name, graph_dtype_name(v->type.dtype), graph_shape_str(&v->type, s, sizeof s),
                     graph_value_nbytes(v), nbytes);
            return TG_ERR_SHAPE;
        }
        memcpy(v->data, data, nbytes); /* sessions point at this buffer */
        v->hash = graph_hash_bytes(v->data, nbytes);
        p->param_gen++; /* kernel states built from the old data are stale */
        if (p->backend->param_changed)
            return p->backend->param_changed(p, v, i, err, errlen);
        return TG_OK;
    }
    char names[300];
    size_t at = 0;
    names[0] = '\0';
    for (int32_t i = 0; i < p->g->nvalues && at < sizeof names; i++) {
        const graph_value *v = &p->g->values[i];
        if (v->kind != GRAPH_VALUE_PARAM || !v->name)
            continue;
        if (at + strlen(v->name) + 8 >= sizeof names) {
            snprintf(names + at, sizeof names - at, ", ...");
            break;
        }
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "", v->name);
    }
    snprintf(err, errlen, "replay_set_param: no param named \"%s\" (params: %s; params folded "
             "into constants by the optimizer cannot be swapped: -O2 and above fold them "
             "unless opt_options.keep_params is set, tracegraph opt --keep-params)", name,
             at ? names : "none");
    return TG_ERR_ARG;
}
