/*
 * session.c - sessions and runs.  The checks common to every backend
 * (threads, inputs, output count) are here; a backend with its own run
 * (internal.h) gets the ordered inputs.  The generic run, the CPU
 * backend's: a session binds the plan's schedule to its arena once per
 * variant, every step a kernel pointer (the backend's kernel(op)) plus a
 * complete eager_kargs (types and data pointers), so a run patches the
 * input pointers and calls the steps in a flat loop.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../formats/ckpt.h"
#include "../graph/alloc.h"
#include "../graph/errors.h"
#include "internal.h"
#include "../optimize/memplan.h"
#include "../graph/graph_impl.h"

typedef struct guard_ctx {
    const graph *g;
    const graph_guard *gd;
    replay_guard_warns *warns;
} guard_ctx;

typedef struct bound_step {
    eager_kernel_fn fn;
    eager_kargs a;
    int32_t node; /* for messages; -1 for guards */
} bound_step;

typedef struct bound {
    replay_variant *v;
    bound_step *steps;
    int32_t nsteps;
    /* storage the steps' kargs point into */
    eager_kstate **states; /* per step, prepared by kernels that want it */
    graph_type *types;
    const void **ptrs;
    guard_ctx *gctx;
    /* input pointers to patch per run: slot and signature input index */
    const void ***patch;
    int32_t *patch_input;
    int32_t npatch;
    struct bound *next;
} bound;

struct replay_session {
    replay_plan *p;
    void *bsession; /* the backend's own (session_new), or NULL */
    char *arena;
    size_t arena_size;
    int own_arena;
    bound *bounds;
    bound *last;
    const replay_tensor **in; /* a run's inputs in signature order (ninputs) */
    replay_guard_warns warns;
    uint64_t param_gen; /* of the plan when the kernel states were made */
    tg_status status; /* of the last fail() */
    char kerr[1024];
    char err[1536];
    atomic_int busy; /* a thread is inside replay_run (see acquire) */
    /* State (a training step's graph): each state's current value, owned
     * by the session (the graph's initial data copied at creation), and
     * per value the state it is (-1: none). */
    void **stbuf;
    int32_t *state_of;
    /* State writes in place: per value, the state whose buffer a next
     * value is computed into (-1: its own place), and per state whether
     * its next value is (no copy after the run). */
    int32_t *next_in;
    unsigned char *in_place;
};

/*
 * A session belongs to one thread at a time (its arena, bound steps and
 * messages are unguarded).  replay_run takes the busy flag for the whole
 * run; a second thread that finds it taken is refused with TG_ERR_STATE.
 * Its message cannot go into s->err, which the running thread owns: it is
 * remembered per thread, and replay_session_error gives it to the thread
 * that was refused.
 */
#define BUSY_MSG "replay: session used by two threads at once (a session belongs to one " \
                 "thread at a time: give each thread its own, on the same plan)"
static _Thread_local const replay_session *tl_refused;

static int acquire(replay_session *s)
{
    int idle = 0;
    if (!atomic_compare_exchange_strong_explicit(&s->busy, &idle, 1, memory_order_acquire,
                                                 memory_order_relaxed)) {
        tl_refused = s;
        return 0;
    }
    if (tl_refused == s)
        tl_refused = NULL;
    return 1;
}

static void release(replay_session *s)
{
    atomic_store_explicit(&s->busy, 0, memory_order_release);
}

/* Runs one guard check: in[0] is the value, attrs the guard_ctx. */
static tg_status guard_step(const eager_kargs *a)
{
    const guard_ctx *c = a->attrs;
    int r = graph_guard_check(c->g, c->gd, &a->in_type[0], a->in[0], a->err, a->errlen);
    if (r == 1)
        replay_guard_warned(c->warns, (int32_t)(c->gd - c->g->guards), a->err);
    return r == 2 ? TG_ERR_GUARD : TG_OK;
}

void replay_guard_warned(replay_guard_warns *w, int32_t guard, const char *msg)
{
    if (w->count++ == 0)
        snprintf(w->first, sizeof w->first, "%s", msg);
    if (w->fn) {
        w->fn(w->ctx, msg);
    } else if (w->told && !w->told[guard]) {
        w->told[guard] = 1;
        fprintf(stderr, "tracegraph: replay: %s (written once per session; replay_opts."
                "guard_warn takes these messages instead)\n", msg);
    }
}

static void bound_free(bound *b)
{
    if (!b)
        return;
    for (int32_t k = 0; b->states && k < b->nsteps; k++)
        eager_kstate_free(b->states[k]);
    tg_free(b->states);
    tg_free(b->steps);
    tg_free(b->types);
    tg_free(b->ptrs);
    tg_free(b->gctx);
    tg_free(b->patch);
    tg_free(b->patch_input);
    tg_free(b);
}

/* Where value v lives for this session and variant (NULL for inputs). */
/*
 * replay_tensor's anonymous union (data for outputs, input, const, for
 * inputs) replaced a single void *data: the size and every offset stay
 * those of the struct before it, so programs built against the older
 * header run unchanged (the ABI policy: docs/GUIDE.md, "Structs and the ABI").
 */
struct replay_tensor_before_input {
    const char *name;
    graph_type type;
    void *data;
    void *buffer;
    size_t size;
};
_Static_assert(sizeof(replay_tensor) == sizeof(struct replay_tensor_before_input) &&
                   offsetof(replay_tensor, data) ==
                       offsetof(struct replay_tensor_before_input, data) &&
                   offsetof(replay_tensor, input) ==
                       offsetof(struct replay_tensor_before_input, data) &&
                   offsetof(replay_tensor, buffer) ==
                       offsetof(struct replay_tensor_before_input, buffer) &&
                   offsetof(replay_tensor, size) ==
                       offsetof(struct replay_tensor_before_input, size),
               "replay_tensor's layout changed: bump the soname (docs/GUIDE.md)");

static const void *value_ptr(const replay_session *s, const replay_variant *v, int32_t id)
{
    const graph_value *val = &s->p->g->values[id];
    if (val->kind == GRAPH_VALUE_INTER) {
        if (s->next_in && s->next_in[id] >= 0)
            return s->stbuf[s->next_in[id]]; /* a state's update, in place */
        /* A step's buffer lies inside the arena (grown to the variant's plan). */
        TG_ASSERT(v->mp.offset[id] >= 0 &&
                  (size_t)v->mp.offset[id] + graph_type_bytes(&v->types[id]) <= s->arena_size);
        return s->arena + v->mp.offset[id];
    }
    if (val->kind == GRAPH_VALUE_INPUT)
        return NULL;
    if (val->kind == GRAPH_VALUE_STATE)
        return s->stbuf[s->state_of[id]];
    return val->data;
}

static int input_index(const graph *g, int32_t id)
{
    for (int32_t i = 0; i < g->ninputs; i++)
        if (g->inputs[i] == id)
            return i;
    return -1;
}

/* Points slot at value id, recording a patch if id is an input. */
static void bind_slot(replay_session *s, bound *b, replay_variant *v, const void **slot,
                      int32_t id)
{
    *slot = value_ptr(s, v, id);
    if (s->p->g->values[id].kind == GRAPH_VALUE_INPUT) {
        int i = input_index(s->p->g, id);
        TG_ASSERT(i >= 0); /* an input value is in the signature (verified) */
        b->patch[b->npatch] = slot;
        b->patch_input[b->npatch++] = i;
    }
}

static bound *bind(replay_session *s, replay_variant *v)
{
    const replay_plan *p = s->p;
    const graph *g = p->g;
    size_t nslots = 0;
    for (int32_t k = 0; k < p->nitems; k++) {
        const replay_item *it = &p->items[k];
        nslots += it->node < 0 ? 1 : (size_t)(g->nodes[it->node].nin + g->nodes[it->node].nout);
    }
    bound *b = tg_calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->v = v;
    b->steps = tg_calloc((size_t)p->nitems + 1, sizeof *b->steps);
    b->states = tg_calloc((size_t)p->nitems + 1, sizeof *b->states);
    b->types = tg_malloc(sizeof(graph_type) * (nslots + 1));
    b->ptrs = tg_malloc(sizeof(void *) * (nslots + 1));
    b->gctx = tg_malloc(sizeof(guard_ctx) * ((size_t)g->nguards + 1));
    b->patch = tg_malloc(sizeof(void *) * (nslots + 1));
    b->patch_input = tg_malloc(sizeof(int32_t) * (nslots + 1));
    if (!b->steps || !b->states || !b->types || !b->ptrs || !b->gctx || !b->patch || !b->patch_input) {
        bound_free(b);
        return NULL;
    }
    size_t used = 0;
    for (int32_t k = 0; k < p->nitems; k++) {
        const replay_item *it = &p->items[k];
        bound_step *st = &b->steps[k];
        eager_kargs *a = &st->a;
        a->nthreads = p->opts.threads;
        a->err = s->kerr;
        a->errlen = sizeof s->kerr;
        a->state = &b->states[k];
        st->node = it->node;
        if (it->node < 0) {
            const graph_guard *gd = &g->guards[it->guard];
            guard_ctx *c = &b->gctx[it->guard];
            *c = (guard_ctx){g, gd, &s->warns};
            b->types[used] = v->types[gd->value];
            bind_slot(s, b, v, &b->ptrs[used], gd->value);
            a->in_type = &b->types[used];
            a->in = &b->ptrs[used];
            a->nin = 1;
            a->attrs = c;
            st->fn = guard_step;
            used++;
            continue;
        }
        const graph_node *n = &g->nodes[it->node];
        st->fn = p->backend->kernel(n->op);
        a->impl = p->gemm_impl ? p->gemm_impl[it->node] : 0; /* tune.c's choice */
        a->in_type = &b->types[used];
        a->in = &b->ptrs[used];
        a->nin = n->nin;
        for (int j = 0; j < n->nin; j++, used++) {
            b->types[used] = v->types[n->in[j]];
            bind_slot(s, b, v, &b->ptrs[used], n->in[j]);
            graph_value_kind kind = g->values[n->in[j]].kind;
            if (j < 32 && (kind == GRAPH_VALUE_CONST || kind == GRAPH_VALUE_PARAM))
                a->fixed_in |= 1u << j; /* params: see drop_states */
        }
        a->out_type = &b->types[used];
        a->out = (void *const *)&b->ptrs[used];
        a->nout = n->nout;
        for (int j = 0; j < n->nout; j++, used++) {
            b->types[used] = v->types[n->out[j]];
            b->ptrs[used] = value_ptr(s, v, n->out[j]);
        }
        a->attrs = tg_node_attrs(n);
    }
    TG_ASSERT(used == nslots && (size_t)b->npatch <= nslots);
    b->nsteps = p->nitems;
    return b;
}

static void states_free(replay_session *s)
{
    tg_free(s->next_in);
    tg_free(s->in_place);
    s->next_in = NULL;
    s->in_place = NULL;
    for (int32_t i = 0; s->stbuf && i < s->p->g->nstates; i++)
        tg_free(s->stbuf[i]);
    tg_free(s->stbuf);
    tg_free(s->state_of);
    s->stbuf = NULL;
    s->state_of = NULL;
}

/* Which next values are computed into their state's buffer
 * (opt_state_in_place, the memory planner's same decision). */
static tg_status plan_in_place(replay_session *s)
{
    const graph *g = s->p->g;
    s->in_place = tg_calloc((size_t)g->nstates + 1, 1);
    s->next_in = opt_state_in_place(g);
    if (!s->in_place || !s->next_in)
        return TG_ERR_NOMEM;
    for (int32_t v = 0; v < g->nvalues; v++)
        if (s->next_in[v] >= 0)
            s->in_place[s->next_in[v]] = 1;
    return TG_OK;
}

/* The session's own copy of each state, from the graph's initial data. */
static tg_status states_new(replay_session *s)
{
    const graph *g = s->p->g;
    s->stbuf = tg_calloc((size_t)g->nstates, sizeof *s->stbuf);
    s->state_of = tg_malloc(sizeof(int32_t) * (size_t)g->nvalues);
    if (!s->stbuf || !s->state_of) {
        states_free(s);
        return TG_ERR_NOMEM;
    }
    for (int32_t v = 0; v < g->nvalues; v++)
        s->state_of[v] = -1;
    for (int32_t i = 0; i < g->nstates; i++) {
        const graph_value *val = &g->values[g->states[i].value];
        size_t nb = graph_value_nbytes(val);
        s->state_of[g->states[i].value] = i;
        s->stbuf[i] = tg_aligned_alloc(64, nb ? (nb + 63) & ~(size_t)63 : 64);
        if (!s->stbuf[i]) {
            states_free(s);
            return TG_ERR_NOMEM;
        }
        if (nb)
            memcpy(s->stbuf[i], val->data, nb); /* verified: a state has data */
    }
    if (!s->p->backend->run && plan_in_place(s) != TG_OK) {
        states_free(s);
        return TG_ERR_NOMEM;
    }
    return TG_OK;
}

replay_session *replay_session_create(replay_plan *p, void *workspace, size_t size, char *err,
                                      size_t errlen)
{
    tg_errf(err, errlen, "%s", "");
    if (!p) {
        tg_errf(err, errlen, "replay_session_create: the plan is NULL");
        return NULL;
    }
    if (atomic_load(&p->given_up)) {
        tg_errf(err, errlen, "replay_session_create: the plan was given up (replay_plan_free) "
                             "before this call");
        return NULL;
    }
    if (workspace && ((uintptr_t)workspace & 63)) {
        tg_errf(err, errlen, "replay_session_create: the workspace at %p is not 64-byte aligned",
                workspace);
        return NULL;
    }
    if (workspace && size < replay_workspace_size(p)) {
        tg_errf(err, errlen, "replay_session_create: the workspace holds %zu bytes, the plan "
                             "needs replay_workspace_size = %zu", size, replay_workspace_size(p));
        return NULL;
    }
    replay_session *s = tg_calloc(1, sizeof *s);
    if (!s) {
        tg_errf(err, errlen, "replay_session_create: out of memory");
        return NULL;
    }
    s->p = p;
    s->param_gen = p->param_gen;
    s->in = tg_malloc(sizeof *s->in * ((size_t)p->g->ninputs + 1));
    s->warns.told = tg_calloc((size_t)p->g->nguards + 1, 1);
    s->warns.fn = p->opts.guard_warn;
    s->warns.ctx = p->opts.guard_warn_ctx;
    if (!s->in || !s->warns.told) {
        tg_free(s->in);
        tg_free(s->warns.told);
        tg_free(s);
        tg_errf(err, errlen, "replay_session_create: out of memory");
        return NULL;
    }
    if (p->g->nstates && states_new(s) != TG_OK) {
        tg_free(s->in);
        tg_free(s->warns.told);
        tg_free(s);
        tg_errf(err, errlen, "replay_session_create: out of memory (the state)");
        return NULL;
    }
    if (p->backend->session_new) {
        s->bsession = p->backend->session_new(p, workspace, size, err, errlen);
        if (!s->bsession) {
            states_free(s);
            tg_free(s->in);
            tg_free(s->warns.told);
            tg_free(s);
            return NULL;
        }
        atomic_fetch_add(&p->refs, 1); /* the plan lives while s does */
        return s;
    }
    if (workspace) {
        s->arena = workspace;
        s->arena_size = size;
    } else {
        s->arena_size = replay_workspace_size(p);
        s->arena = tg_aligned_alloc(64, s->arena_size ? (s->arena_size + 63) & ~(size_t)63 : 64);
        s->own_arena = 1;
        if (!s->arena) {
            states_free(s);
            tg_free(s->in);
            tg_free(s->warns.told);
            tg_free(s);
            tg_errf(err, errlen, "replay_session_create: out of memory (an arena of %zu bytes)",
                    replay_workspace_size(p));
            return NULL;
        }
    }
    atomic_fetch_add(&p->refs, 1); /* the plan lives while s does */
    return s;
}

replay_session *replay_session_new(replay_plan *p, void *workspace, size_t size)
{
    return replay_session_create(p, workspace, size, NULL, 0);
}

static void drop_bounds(replay_session *s)
{
    for (bound *b = s->bounds, *next; b; b = next) {
        next = b->next;
        bound_free(b);
    }
    s->bounds = s->last = NULL;
}

/*
 * Frees every kernel state (they are rebuilt on the next run): called when
 * a param changed, since a state may hold data derived from its old
 * contents (kernels cache such data only for fixed_in inputs).
 */
static void drop_states(replay_session *s)
{
    for (bound *b = s->bounds; b; b = b->next)
        for (int32_t k = 0; k < b->nsteps; k++) {
            eager_kstate_free(b->states[k]);
            b->states[k] = NULL;
        }
}

void replay_session_free(replay_session *s)
{
    if (!s || !acquire(s)) /* running on another thread: freeing it is refused */
        return;
    drop_bounds(s);
    if (s->bsession)
        s->p->backend->session_free(s->bsession);
    if (s->own_arena)
        tg_free(s->arena);
    states_free(s);
    tg_free(s->in);
    tg_free(s->warns.told);
    replay_plan *p = s->p;
    tg_free(s);
    replay_plan_unref(p); /* frees p if the caller gave it up already */
}

const char *replay_session_error(const replay_session *s)
{
    if (s && tl_refused == s)
        return BUSY_MSG;
    return s ? s->err : "no session";
}
int replay_session_guard_warnings(const replay_session *s) { return s ? s->warns.count : 0; }
const char *replay_session_guard_warning(const replay_session *s) { return s ? s->warns.first : ""; }

static tg_status fail(replay_session *s, tg_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tg_status fail(replay_session *s, tg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return s->status = st;
}

static int same_shapes(const replay_variant *v, const replay_tensor *const *in, int nin)
{
    int32_t k = 0;
    for (int i = 0; i < nin; i++) {
        for (int d = 0; d < in[i]->type.ndim; d++)
            if (k >= v->nkey || v->key[k++] != in[i]->type.dim[d])
                return 0;
    }
    return k == v->nkey;
}

/* The bound steps for these inputs: the last ones, or found, or made. */
static bound *bound_for(replay_session *s, const replay_tensor *const *in, int nin)
{
    if (s->last && same_shapes(s->last->v, in, nin) &&
        s->last->v == s->p->traced) /* traced shapes: dtype/rank checked below */
        return s->last;
    (void)nin;
    char err[1024];
    tg_status st;
    replay_variant *v = replay_variant_get(s->p, in, &st, err, sizeof err);
    if (!v) {
        fail(s, st, "%s", err);
        return NULL;
    }
    for (bound *b = s->bounds; b; b = b->next)
        if (b->v == v)
            return s->last = b;
    if (v->mp.arena_bytes > s->arena_size) {
        if (!s->own_arena) {
            fail(s, TG_ERR_NOMEM, "replay: these input shapes need a %zu-byte workspace, "
                 "the session was given %zu", v->mp.arena_bytes, s->arena_size);
            return NULL;
        }
        char *a = tg_aligned_alloc(64, (v->mp.arena_bytes + 63) & ~(size_t)63);
        if (!a) {
            fail(s, TG_ERR_NOMEM, "replay: cannot grow the arena to %zu bytes", v->mp.arena_bytes);
            return NULL;
        }
        drop_bounds(s); /* they point into the old arena */
        tg_free(s->arena);
        s->arena = a;
        s->arena_size = v->mp.arena_bytes;
    }
    bound *b = bind(s, v);
    if (!b) {
        fail(s, TG_ERR_NOMEM, "replay: out of memory binding the plan");
        return NULL;
    }
    b->next = s->bounds;
    s->bounds = b;
    return s->last = b;
}

/* Copies or hands out the outputs. */
static tg_status deliver(replay_session *s, const bound *b, const replay_tensor *const *in,
                         replay_tensor *outputs, int nout)
{
    const graph *g = s->p->g;
    for (int k = 0; k < nout; k++) {
        int i = replay_output_lookup(s->p, &outputs[k], k, s->err, sizeof s->err);
        if (i < 0)
            return s->status = TG_ERR_ARG;
        if (outputs[k].buffer)
            return fail(s, TG_ERR_ARG, "replay: output \"%s\" is a device buffer, but the "
                        "plan runs on the CPU (buffer is for OpenCL plans)", g->outputs[i].name);
        int32_t id = g->outputs[i].value;
        const graph_type *t = &b->v->types[id];
        const void *src = g->values[id].kind == GRAPH_VALUE_INPUT
                              ? in[input_index(g, id)]->input
                              : value_ptr(s, b->v, id);
        if (!outputs[k].data) {
            outputs[k].type = *t;
            outputs[k].data = (void *)src;
            continue;
        }
        tg_status st = replay_output_accept(s->p, i, t, &outputs[k], s->err, sizeof s->err);
        if (st != TG_OK)
            return s->status = st;
        memcpy(outputs[k].data, src, graph_type_bytes(t));
    }
    return TG_OK;
}

static tg_status run(replay_session *s, const replay_tensor *inputs, int nin,
                     replay_tensor *outputs, int nout)
{
    s->err[0] = '\0';
    s->warns.count = 0;
    s->warns.first[0] = '\0';
    const replay_tensor **in = s->in;
    if (nout < 0 || nout > s->p->g->noutputs)
        return fail(s, TG_ERR_ARG, "replay: the plan makes %d outputs, asked for %d",
                    s->p->g->noutputs, nout);
    if (nout && !outputs)
        return fail(s, TG_ERR_NULL, "replay: %d outputs asked for, outputs is NULL", nout);
    tg_status st = replay_order_inputs(s->p, inputs, nin, in, 1, s->err, sizeof s->err);
    if (st != TG_OK)
        return s->status = st;
    if (s->p->backend->run) {
        st = s->p->backend->run(s->bsession, in, nin, outputs, nout, &s->warns, s->err,
                                sizeof s->err);
        return s->status = st;
    }
    /* dtype and rank are part of the check even on the fast path */
    for (int i = 0; i < nin; i++) {
        const graph_type *want = &s->p->g->values[s->p->g->inputs[i]].type;
        if (in[i]->type.dtype != want->dtype || in[i]->type.ndim != want->ndim) {
            s->last = NULL; /* take the slow path: it writes the message */
            break;
        }
    }
    bound *b = bound_for(s, in, nin);
    if (!b)
        return s->status;
    if (__builtin_expect(s->param_gen != s->p->param_gen, 0)) {
        drop_states(s);
        s->param_gen = s->p->param_gen;
    }
    for (int32_t j = 0; j < b->npatch; j++)
        *b->patch[j] = in[b->patch_input[j]]->input;
    const bound_step *steps = b->steps;
    for (int32_t k = 0, n = b->nsteps; k < n; k++) {
        tg_status ks = steps[k].fn(&steps[k].a);
        if (__builtin_expect(ks != TG_OK, 0)) {
            if (steps[k].node < 0)
                return fail(s, TG_ERR_GUARD, "replay: %s", s->kerr);
            char what[400];
            return fail(s, ks == TG_ERR_NOMEM ? TG_ERR_NOMEM : TG_ERR_BACKEND, "replay: %s: %s",
                        replay_node_str(s->p, steps[k].node, what, sizeof what), s->kerr);
        }
    }
    tg_status ds = deliver(s, b, in, outputs, nout);
    /* the step's end: each state takes its next value (after the outputs,
     * which may point at a state's old value, were delivered or copied) */
    const graph *g = s->p->g;
    for (int32_t i = 0; i < g->nstates; i++) {
        int32_t nx = g->states[i].next;
        if (nx == g->states[i].value || s->in_place[i])
            continue;
        const void *src = g->values[nx].kind == GRAPH_VALUE_INPUT
                              ? in[input_index(g, nx)]->input
                              : value_ptr(s, b->v, nx);
        memcpy(s->stbuf[i], src, graph_value_nbytes(&g->values[nx]));
    }
    return ds;
}

tg_status replay_run(replay_session *s, const replay_tensor *inputs, int nin,
                     replay_tensor *outputs, int nout)
{
    if (!s)
        return TG_ERR_NULL;
    if (!acquire(s))
        return TG_ERR_STATE;
    tg_status st = run(s, inputs, nin, outputs, nout);
    release(s);
    return st;
}

/* ---- state ---- */

int32_t replay_num_states(const replay_plan *p) { return p ? p->g->nstates : 0; }

const char *replay_state_name(const replay_plan *p, int32_t i)
{
    return p && i >= 0 && i < p->g->nstates ? p->g->values[p->g->states[i].value].name : NULL;
}

const graph_type *replay_state_type(const replay_plan *p, int32_t i)
{
    return p && i >= 0 && i < p->g->nstates ? &p->g->values[p->g->states[i].value].type : NULL;
}

int32_t replay_state_find(const replay_plan *p, const char *name)
{
    for (int32_t i = 0; p && name && i < p->g->nstates; i++)
        if (!strcmp(p->g->values[p->g->states[i].value].name, name))
            return i;
    return -1;
}

/* State i of s by name, or -1 with s's error naming the states there are. */
static int32_t state_lookup(replay_session *s, const char *what, const char *name)
{
    int32_t i = replay_state_find(s->p, name);
    if (i >= 0)
        return i;
    char names[400];
    size_t at = 0;
    names[0] = '\0';
    const graph *g = s->p->g;
    for (int32_t k = 0; k < g->nstates && at < sizeof names; k++) {
        const char *n = g->values[g->states[k].value].name;
        if (at + strlen(n) + 8 >= sizeof names) {
            snprintf(names + at, sizeof names - at, ", ...");
            break;
        }
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "", n);
    }
    fail(s, TG_ERR_ARG, "%s: the plan has no state named \"%s\" (states: %s)", what,
         name ? name : "(null)", at ? names : "none: not a training step");
    return -1;
}

static tg_status state_io(replay_session *s, const char *what, const char *name, void *get,
                          const void *set, size_t nbytes)
{
    if (!s)
        return TG_ERR_NULL;
    if (!name || (!get && !set))
        return fail(s, TG_ERR_NULL, "%s: NULL argument", what);
    if (!acquire(s))
        return TG_ERR_STATE;
    tg_status st = TG_OK;
    int32_t i = state_lookup(s, what, name);
    if (i < 0) {
        st = s->status;
    } else {
        const graph_value *v = &s->p->g->values[s->p->g->states[i].value];
        size_t nb = graph_value_nbytes(v);
        if (nbytes != nb) {
            char sh[160];
            st = fail(s, TG_ERR_SHAPE, "%s: state \"%s\" is %s%s (%zu bytes), got %zu bytes",
                      what, name, graph_dtype_name(v->type.dtype),
                      graph_shape_str(&v->type, sh, sizeof sh), nb, nbytes);
        } else if (get) {
            memcpy(get, s->stbuf[i], nb);
        } else {
            memcpy(s->stbuf[i], set, nb);
        }
    }
    release(s);
    return st;
}

tg_status replay_state_get(replay_session *s, const char *name, void *data, size_t nbytes)
{
    return state_io(s, "replay_state_get", name, data, NULL, nbytes);
}

tg_status replay_state_set(replay_session *s, const char *name, const void *data, size_t nbytes)
{
    return state_io(s, "replay_state_set", name, NULL, data, nbytes);
}

const void *replay_state_data(const replay_session *s, int32_t i)
{
    return s && s->stbuf && i >= 0 && i < s->p->g->nstates ? s->stbuf[i] : NULL;
}

void *replay_state_data_mut(replay_session *s, int32_t i)
{
    return s && s->stbuf && i >= 0 && i < s->p->g->nstates ? s->stbuf[i] : NULL;
}

tg_status replay_state_save(replay_session *s, const char *path, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!s || !path) {
        snprintf(err, errlen, "replay_state_save: NULL argument");
        return TG_ERR_NULL;
    }
    const graph *g = s->p->g;
    if (!g->nstates) {
        snprintf(err, errlen, "replay_state_save: the plan has no state (not a training step)");
        return TG_ERR_ARG;
    }
    if (!acquire(s)) {
        snprintf(err, errlen, "%s", BUSY_MSG);
        return TG_ERR_STATE;
    }
    format_ckpt_entry *e = tg_malloc(sizeof *e * (size_t)g->nstates);
    tg_status st = TG_ERR_NOMEM;
    if (e) {
        for (int32_t i = 0; i < g->nstates; i++) {
            const graph_value *v = &g->values[g->states[i].value];
            e[i] = (format_ckpt_entry){v->name, v->type, s->stbuf[i]};
        }
        st = format_ckpt_save(path, g->name, e, g->nstates, err, errlen);
    } else {
        snprintf(err, errlen, "replay_state_save: out of memory");
    }
    tg_free(e);
    release(s);
    return st;
}

/* c matches s's plan: the same names and types, each once.  TG_OK, or an
 * error naming the first difference. */
static tg_status ckpt_matches(const replay_session *s, const format_ckpt *c, const char *path,
                              int32_t *which, char *err, size_t errlen)
{
    const graph *g = s->p->g;
    for (int32_t i = 0; i < g->nstates; i++) {
        const graph_value *v = &g->values[g->states[i].value];
        int32_t k = 0;
        while (k < c->n && strcmp(c->e[k].name, v->name) != 0)
            k++;
        if (k == c->n) {
            snprintf(err, errlen, "replay_state_load: %s holds no state \"%s\" (saved from graph "
                     "\"%s\" with %d states, this plan's graph \"%s\" has %d): a checkpoint of "
                     "another graph?", path, v->name, c->graph_name, (int)c->n, g->name,
                     (int)g->nstates);
            return TG_ERR_ARG;
        }
        if (!graph_type_eq(&c->e[k].type, &v->type)) {
            char a[160], b[160];
            snprintf(err, errlen, "replay_state_load: %s: state \"%s\" is %s %s there, %s %s in "
                     "the plan", path, v->name, graph_dtype_name(c->e[k].type.dtype),
                     graph_shape_str(&c->e[k].type, a, sizeof a), graph_dtype_name(v->type.dtype),
                     graph_shape_str(&v->type, b, sizeof b));
            return TG_ERR_SHAPE;
        }
        which[i] = k;
    }
    if (c->n != g->nstates) {
        for (int32_t k = 0; k < c->n; k++)
            if (replay_state_find(s->p, c->e[k].name) < 0) {
                snprintf(err, errlen, "replay_state_load: %s holds state \"%s\", which the plan "
                         "does not have (a checkpoint of another graph?)", path, c->e[k].name);
                return TG_ERR_ARG;
            }
    }
    return TG_OK;
}

tg_status replay_state_load(replay_session *s, const char *path, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!s || !path) {
        snprintf(err, errlen, "replay_state_load: NULL argument");
        return TG_ERR_NULL;
    }
    const graph *g = s->p->g;
    if (!g->nstates) {
        snprintf(err, errlen, "replay_state_load: the plan has no state (not a training step)");
        return TG_ERR_ARG;
    }
    format_ckpt c;
    tg_status st = format_ckpt_load(path, &c, err, errlen);
    if (st != TG_OK)
        return st;
    int32_t *which = tg_malloc(sizeof *which * (size_t)g->nstates);
    if (!which) {
        format_ckpt_free(&c);
        snprintf(err, errlen, "replay_state_load: out of memory");
        return TG_ERR_NOMEM;
    }
    st = ckpt_matches(s, &c, path, which, err, errlen);
    if (st == TG_OK && !acquire(s)) {
        snprintf(err, errlen, "%s", BUSY_MSG);
        st = TG_ERR_STATE;
    } else if (st == TG_OK) {
        /* everything checked: all states change, or none */
        for (int32_t i = 0; i < g->nstates; i++)
            memcpy(s->stbuf[i], c.e[which[i]].data, graph_value_nbytes(&g->values[g->states[i].value]));
        release(s);
    }
    tg_free(which);
    format_ckpt_free(&c);
    return st;
}
