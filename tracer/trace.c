/*
 * trace.c - the tracer: a per-thread state behind the eager dispatcher's
 * hooks.  Each traced tensor carries (trace id << 32 | value id + 1) in its
 * tag word, so mapping a tensor to its graph value is one load, not a hash
 * lookup.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "../graph/tg_hash.h"
#include "stack.h"
#include "trace.h"
#include "../graph/graph_impl.h"

/* Frames captured beyond max_depth, trimmed at freeze (our own frames). */
#define INTERNAL_FRAMES 6

typedef struct prov_key {
    const char *file, *func;
    int64_t line;
    uint64_t stack_hash;
} prov_key;

typedef struct prov_entry {
    prov_key key;
    int32_t prov;
    UT_hash_handle hh;
} prov_entry;

#define STACK_WAYS 8

typedef struct stack_entry {
    uintptr_t frame;
    const char *file, *func;
    int line, n;
    int depth;         /* the max_depth it was captured with */
    uint32_t trace_id; /* the trace prov belongs to */
    int32_t prov;
    uint64_t ips[TRACE_MAX_DEPTH + INTERNAL_FRAMES];
    uint64_t slots[TRACE_MAX_DEPTH + INTERNAL_FRAMES];
} stack_entry;

/*
 * Stacks seen per (site, frame address), revalidated by their slots; 8 ways
 * per bucket, as one source line often holds several calls.  Kept per
 * thread across traces: a stack walk costs microseconds (far more when the
 * user's code has no frame pointers and libunwind steps through DWARF), so
 * a model traced again, or a loop traced afresh each time, walks no stack
 * it has walked before.  An entry's prov is valid only for trace_id; a hit
 * from another trace re-derives it from the cached addresses.
 */
typedef struct stack_cache {
    stack_entry *e[256][STACK_WAYS];
    uint8_t next_way[256];
} stack_cache;

static _Thread_local stack_cache *tl_stacks;
static pthread_key_t stacks_key;
static pthread_once_t stacks_once = PTHREAD_ONCE_INIT;
static int stacks_key_ok;

/* Thread exit: the cache goes with the thread. */
static void stacks_free(void *p)
{
    stack_cache *c = p;
    for (int i = 0; i < 256; i++)
        for (int w = 0; w < STACK_WAYS; w++) /* a way whose allocation failed stays
                                                 NULL while a later one is filled */
            tg_free(c->e[i][w]);
    tg_free(c);
}

static void stacks_key_make(void) { stacks_key_ok = pthread_key_create(&stacks_key, stacks_free) == 0; }

/* This thread's cache, made on first use; NULL if out of memory (then
 * every stack is walked: correct, only slower). */
static stack_cache *thread_stacks(void)
{
    if (!tl_stacks) {
        pthread_once(&stacks_once, stacks_key_make);
        if (!stacks_key_ok || !(tl_stacks = tg_calloc(1, sizeof *tl_stacks)))
            return NULL;
        if (pthread_setspecific(stacks_key, tl_stacks) != 0) {
            tg_free(tl_stacks);
            tl_stacks = NULL;
        }
    }
    return tl_stacks;
}

/* An output name, to refuse a repeat in O(1) (a scan made n outputs
 * O(n^2)). */
typedef struct out_name {
    const char *name; /* graph_intern'ed */
    UT_hash_handle hh;
} out_name;

/* A tensor declared state (trace_state, eager_declare_state): held until
 * the trace ends; value is its state value. */
typedef struct trace_stv {
    eager_tensor *t;
    int32_t value;
    eager_site site;
    eager_tensor *cur; /* the tensor holding the state at freeze when it is
                          not t (the random generator, replaced, never
                          written); NULL: t */
} trace_stv;

/* A tensor written by eager_assign during the trace: held until the trace
 * ends; orig is its value before the first write (-1: never traced). */
typedef struct trace_wr {
    eager_tensor *t;
    int32_t orig;
    eager_site site;
} trace_wr;

typedef struct trace_state {
    graph *g;
    trace_stv *stv;
    int32_t nstv, cap_stv;
    trace_wr *wr;
    int32_t nwr, cap_wr;
    eager_tensor *rng0; /* the thread's generator when the trace began */
    int made_rng;       /* ... made by trace_begin (the thread had none) */
    uint64_t backwards; /* eager_backward_count() when the trace began */
    trace_opts opts;
    uint32_t id;
    eager_hooks hooks;
    const eager_hooks *prev_hooks;
    prov_entry *provs;
    out_name *outs; /* the outputs' names (interned: keyed by pointer) */
    /* A direct-mapped front for provs: most ops repeat a recent site. */
    struct {
        prov_key key;
        int32_t prov;
    } recent[256];
    stack_cache *stacks; /* this thread's (NULL: walk every stack) */
    eager_site begin; /* trace_begin's call site, for "still open" messages */
    int32_t warn_at;  /* ops recorded past which it warns (TG_TRACE_WARN_OPS) */
    int warned_size;  /* the "ops recorded" warning was given */
    int broken; /* a recording error happened; freeze fails */
    tg_status first_status; /* and the first one, which freeze repeats */
    char first_err[1024];
} trace_state;

static _Thread_local trace_state *tl_trace;

/*
 * A trace left open (no trace_freeze / trace_abort) grows with every op and
 * would end silently: the thread's exit (a pthread key's destructor, which
 * frees it) and the process's (atexit, for the thread calling exit) warn on
 * stderr naming trace_begin's site, and so does the trace passing
 * TRACE_WARN_NODES recorded ops, once.
 */
#define TRACE_WARN_NODES (1 << 20)
static pthread_key_t open_key;
static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static int open_key_ok;
static graph *end_trace(trace_state *st, int keep_graph);

static void warn_open(const trace_state *st, const char *when)
{
    fprintf(stderr, "tracegraph: warning: the trace begun at %s:%d (%s) was never ended %s "
            "(%d ops recorded); end it with trace_freeze() or trace_abort()\n",
            st->begin.file ? st->begin.file : "?", st->begin.line,
            st->begin.func ? st->begin.func : "?", when, st->g ? (int)st->g->nnodes : 0);
}

static void open_at_thread_exit(void *p)
{
    trace_state *st = p;
    if (st && st == tl_trace) {
        warn_open(st, "when its thread exited");
        end_trace(st, 0);
    }
}

static void open_at_exit(void)
{
    if (tl_trace)
        warn_open(tl_trace, "when the process exited");
}

static void open_key_make(void)
{
    open_key_ok = pthread_key_create(&open_key, open_at_thread_exit) == 0;
    atexit(open_at_exit);
}
/* Sizes of this thread's last trace: the next one reserves as much. */
static _Thread_local int32_t last_nvalues, last_nnodes;

/* ---- the ids of active traces, to spot tensors of other threads ---- */

#define MAX_ACTIVE 256
static pthread_mutex_t active_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t active_ids[MAX_ACTIVE];
static atomic_uint next_id = 1;

static int set_active(uint32_t id, int on)
{
    int ok = 0;
    pthread_mutex_lock(&active_mu);
    for (int i = 0; i < MAX_ACTIVE && !ok; i++) {
        if (on && active_ids[i] == 0) {
            active_ids[i] = id;
            ok = 1;
        } else if (!on && active_ids[i] == id) {
            active_ids[i] = 0;
            ok = 1;
        }
    }
    pthread_mutex_unlock(&active_mu);
    return ok;
}

static int is_active(uint32_t id)
{
    int found = 0;
    pthread_mutex_lock(&active_mu);
    for (int i = 0; i < MAX_ACTIVE && !found; i++)
        found = active_ids[i] == id;
    pthread_mutex_unlock(&active_mu);
    return found;
}

/* ---- helpers ---- */

static uint64_t make_tag(const trace_state *st, int32_t vid)
{
    return (uint64_t)st->id << 32 | (uint32_t)(vid + 1);
}

/* The value id of t in this trace, or -1 if t is not part of it. */
static int32_t traced_value(const trace_state *st, const eager_tensor *t)
{
    uint64_t tag = eager_tag(t);
    if ((uint32_t)(tag >> 32) != st->id || (uint32_t)tag == 0)
        return -1;
    return (int32_t)(uint32_t)tag - 1;
}

/* Marks the trace broken, keeping the first recording error's message
 * (freeze repeats it even when the caller cleared the eager error). */
static void broken(trace_state *st, tg_status code, const char *msg)
{
    if (!st || st->broken)
        return;
    st->broken = 1;
    st->first_status = code;
    snprintf(st->first_err, sizeof st->first_err, "%s", msg);
}

static tg_status fail(trace_state *st, tg_status code, const eager_site *site,
                      const char *fmt, const char *arg)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, arg);
    eager_set_error(code, site, "%s", msg);
    if (st && !st->broken) {
        /* the message as eager_set_error wrote it, with its site */
        const char *file = site && site->file ? strrchr(site->file, '/') : NULL;
        file = file ? file + 1 : site ? site->file : NULL;
        size_t n = strlen(msg);
        if (file && n < sizeof msg)
            snprintf(msg + n, sizeof msg - n, " (%s:%d %s)", file, site->line,
                     site->func ? site->func : "?");
        broken(st, code, msg);
    }
    return code;
}

/* Graph-level failure (out of memory...): the graph's message. */
static tg_status fail_graph(trace_state *st, const eager_site *site)
{
    tg_status code = graph_error_status(st->g);
    return fail(st, code != TG_OK ? code : TG_ERR_NOMEM, site, "trace: %s", graph_error(st->g));
}

static trace_state *need_trace(const char *what, const eager_site *site)
{
    if (!tl_trace)
        eager_set_error(TG_ERR_STATE, site, "%s: no trace is active on this thread", what);
    return tl_trace;
}

/* A word-wise hash of a stack (FNV over bytes cost ~180 cycles here). */
static uint64_t hash_ips(const uint64_t *ips, int n)
{
    uint64_t h = UINT64_C(0x9E3779B97F4A7C15);
    for (int i = 0; i < n; i++) {
        h ^= ips[i];
        h *= UINT64_C(0xBF58476D1CE4E5B9);
        h ^= h >> 31;
    }
    return h;
}

/* The provenance id for a site and stack, made if new. */
static int32_t prov_for(trace_state *st, const eager_site *site,
                        const uint64_t *ips, int n)
{
    prov_key key;
    memset(&key, 0, sizeof key);
    key.file = site->file;
    key.func = site->func;
    key.line = site->line;
    key.stack_hash = n ? hash_ips(ips, n) : 0;
    unsigned slot = (unsigned)(((uintptr_t)key.file >> 4) ^ (uint64_t)key.line * 0x9E37u ^
                               key.stack_hash) & 255u;
    if (memcmp(&st->recent[slot].key, &key, sizeof key) == 0)
        return st->recent[slot].prov;
    prov_entry *e;
    HASH_FIND(hh, st->provs, &key, sizeof key, e);
    if (e) {
        st->recent[slot].key = key;
        st->recent[slot].prov = e->prov;
        return e->prov;
    }
    graph_frame frames[TRACE_MAX_DEPTH + INTERNAL_FRAMES];
    memset(frames, 0, sizeof(graph_frame) * (size_t)n);
    for (int i = 0; i < n; i++)
        frames[i].ip = ips[i];
    int32_t prov = graph_add_prov(st->g, site->file, site->line, site->func,
                                  frames, n);
    e = prov >= 0 ? tg_calloc(1, sizeof *e) : NULL;
    if (!e)
        return -1;
    e->key = key;
    e->prov = prov;
    tg_hash_oom = 0;
    HASH_ADD(hh, st->provs, key, sizeof key, e);
    if (tg_hash_oom)
        tg_free(e); /* still correct, just not cached */
    st->recent[slot].key = key;
    st->recent[slot].prov = prov;
    return prov;
}

/*
 * The provenance of the current call.  With stacks on, a call from the same
 * site at the same frame address whose stack slots still hold the captured
 * return addresses is the same call path: its provenance is reused without
 * walking the stack (see stack.c).
 */
__attribute__((noinline)) static int32_t record_prov(trace_state *st,
                                                     const eager_site *site, unsigned salt)
{
    if (!st->opts.capture_stack)
        return prov_for(st, site, NULL, 0);
    /* salt (the op) spreads the calls of one source line over buckets: only
     * calls that agree on it can share a stack, so fewer ways are tried. */
    uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
    unsigned h = (unsigned)((frame >> 4) ^ ((uintptr_t)site->file >> 3) ^
                            (unsigned)site->line * 0x9E37u ^ salt * 0x45D9F3Bu) & 255u;
    stack_cache *sc = st->stacks;
    int depth = st->opts.max_depth;
    for (int w = 0; sc && w < STACK_WAYS; w++) {
        stack_entry *e = sc->e[h][w];
        if (e && e->frame == frame && e->file == site->file && e->line == site->line &&
            e->func == site->func && e->depth == depth &&
            trace_stack_unchanged(e->ips, e->slots, e->n)) {
            if (e->trace_id != st->id) { /* walked in an earlier trace */
                int32_t prov = prov_for(st, site, e->ips, e->n);
                if (prov < 0)
                    return -1;
                e->prov = prov;
                e->trace_id = st->id;
            }
            return e->prov;
        }
    }
    uint64_t ips[TRACE_MAX_DEPTH + INTERNAL_FRAMES], slots[TRACE_MAX_DEPTH + INTERNAL_FRAMES];
    int n = trace_stack_capture_slots(ips, slots, depth + INTERNAL_FRAMES);
    int32_t prov = prov_for(st, site, ips, n);
    if (prov < 0 || !sc)
        return prov;
    int w = sc->next_way[h]++ % STACK_WAYS;
    stack_entry *e = sc->e[h][w];
    if (!e && !(e = sc->e[h][w] = tg_malloc(sizeof *e)))
        return prov; /* correct, just not cached */
    e->frame = frame;
    e->file = site->file;
    e->func = site->func;
    e->line = site->line;
    e->n = n;
    e->depth = depth;
    e->trace_id = st->id;
    e->prov = prov;
    memcpy(e->ips, ips, sizeof(uint64_t) * (size_t)n);
    memcpy(e->slots, slots, sizeof(uint64_t) * (size_t)n);
    return prov;
}

/* Maps an op input to its value, capturing a constant if it is new. */
static int32_t input_value(trace_state *st, eager_tensor *t,
                           const eager_site *site)
{
    int32_t v = traced_value(st, t);
    if (v >= 0)
        return v;
    uint32_t other = (uint32_t)(eager_tag(t) >> 32);
    if (other && is_active(other)) {
        fail(st, TG_ERR_STATE, site, "trace: a tensor of another thread's active "
             "trace was used here%s", "");
        return -1;
    }
    if (eager_is_grad(t)) {
        /* a constant would add the same gradient at every replayed step */
        fail(st, TG_ERR_STATE, site, "trace: a gradient accumulated before the step is read "
             "here (eager_backward adds into it, or your code reads eager_grad); a replay "
             "would read this step's value as a constant every step: zero the gradients "
             "before the step (eager_optim_zero_grad, eager_zero_grad)%s", "");
        return -1;
    }
    v = graph_add_value(st->g, GRAPH_VALUE_CONST, eager_type(t), NULL);
    if (v < 0 || graph_set_data(st->g, v, eager_peek(t), eager_nbytes(t)) != TG_OK) {
        fail_graph(st, site);
        return -1;
    }
    eager_set_tag(t, make_tag(st, v));
    return v;
}

/* ---- hooks ---- */

static tg_status on_op(void *ud, graph_op op, eager_tensor *const *in, int nin,
                       const void *attrs, eager_tensor *const *out, int nout,
                       const eager_site *site)
{
    trace_state *st = ud;
    int32_t vin[GRAPH_MAX_NODE_IO], vout[GRAPH_MAX_NODE_IO];
    graph_type otype[GRAPH_MAX_NODE_IO];
    if (nin > GRAPH_MAX_NODE_IO || nout > GRAPH_MAX_NODE_IO)
        return fail(st, TG_ERR_UNSUPPORTED, site, "trace: %s has too many "
                    "inputs or outputs to record", graph_ops[op].name);
    for (int i = 0; i < nin; i++)
        if ((vin[i] = input_value(st, in[i], site)) < 0)
            return eager_status();
    /* One output (nearly every op): its type is read in place. */
    const graph_type *ot = nout == 1 ? eager_type(out[0]) : otype;
    for (int i = 0; nout > 1 && i < nout; i++)
        otype[i] = *eager_type(out[i]);
    int32_t prov = record_prov(st, site, (unsigned)op);
    if (prov < 0 || graph_add_node_typed(st->g, op, vin, nin, attrs, ot, nout, vout,
                                         GRAPH_MAX_NODE_IO, prov) < 0)
        return fail_graph(st, site);
    for (int i = 0; i < nout; i++)
        eager_set_tag(out[i], make_tag(st, vout[i]));
    if (st->g->nnodes >= st->warn_at && !st->warned_size) {
        st->warned_size = 1;
        fprintf(stderr, "tracegraph: warning: the trace begun at %s:%d (%s) has recorded %d "
                "ops and grows with every op: a trace_freeze() or trace_abort() missing?\n",
                st->begin.file ? st->begin.file : "?", st->begin.line,
                st->begin.func ? st->begin.func : "?", (int)st->g->nnodes);
    }
    return TG_OK;
}

/* "model.c:42 (fn)" */
static const char *site_str(const eager_site *s, char *buf, size_t n)
{
    const char *f = s && s->file ? strrchr(s->file, '/') : NULL;
    snprintf(buf, n, "%s:%d (%s)", f ? f + 1 : s && s->file ? s->file : "?", s ? s->line : 0,
             s && s->func ? s->func : "?");
    return buf;
}

static trace_stv *find_stv(trace_state *st, const eager_tensor *t)
{
    for (int32_t i = 0; i < st->nstv; i++)
        if (st->stv[i].t == t)
            return &st->stv[i];
    return NULL;
}

static trace_wr *find_wr(trace_state *st, const eager_tensor *t)
{
    for (int32_t i = 0; i < st->nwr; i++)
        if (st->wr[i].t == t)
            return &st->wr[i];
    return NULL;
}

/* Grows a list of n entries of size sz at *p (capacity *cap) by one slot. */
static int grow_list(void **p, int32_t n, int32_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    int32_t c = *cap ? 2 * *cap : 16;
    void *q = tg_realloc(*p, sz * (size_t)c);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/*
 * Declares t state under name (trace_state, eager_declare_state).  A tensor
 * declared twice keeps its first name; a name is one tensor's.  The state
 * value's data is taken at freeze (the tensor's contents then: the state
 * after the traced step, where a replay continues).
 */
static tg_status declare_state(trace_state *st, eager_tensor *t, const char *name,
                               const char *what, const eager_site *site)
{
    char msg[700], a[300];
    if (find_stv(st, t))
        return TG_OK;
    for (int32_t i = 0; i < st->nstv; i++)
        if (!strcmp(st->g->values[st->stv[i].value].name, name)) {
            snprintf(msg, sizeof msg, "%s: the name \"%s\" already names the state of another "
                     "tensor (declared at %s)", what, name, site_str(&st->stv[i].site, a, sizeof a));
            return fail(NULL, TG_ERR_ARG, site, "%s", msg);
        }
    trace_wr *w = find_wr(st, t);
    if (w) {
        snprintf(msg, sizeof msg, "%s: \"%s\" was written at %s before this declaration: "
                 "declare state before the step writes it (before the forward pass)", what,
                 name, site_str(&w->site, a, sizeof a));
        return fail(NULL, TG_ERR_STATE, site, "%s", msg);
    }
    int32_t v = traced_value(st, t);
    if (v >= 0) {
        graph_value *val = &st->g->values[v];
        if (val->kind == GRAPH_VALUE_INPUT || val->kind == GRAPH_VALUE_INTER) {
            snprintf(msg, sizeof msg, "%s: \"%s\" is %s of the step; state is a tensor made "
                     "before the step that the step reads and writes", what, name,
                     val->kind == GRAPH_VALUE_INPUT ? "an input (trace_input)"
                                                    : "a value computed inside");
            return fail(NULL, TG_ERR_STATE, site, "%s", msg);
        }
        /* a param or a constant captured by an earlier read: the same
         * tensor, from here on state */
        const char *n = graph_intern(st->g, name, -1);
        if (!n)
            return fail_graph(st, site);
        val->kind = GRAPH_VALUE_STATE;
        val->name = n;
    } else {
        v = graph_add_value(st->g, GRAPH_VALUE_STATE, eager_type(t), name);
        if (v < 0)
            return fail_graph(st, site);
        eager_set_tag(t, make_tag(st, v));
    }
    if (grow_list((void **)&st->stv, st->nstv, &st->cap_stv, sizeof *st->stv) < 0)
        return fail(st, TG_ERR_NOMEM, site, "%s", "trace: out of memory");
    st->stv[st->nstv++] = (trace_stv){eager_retain(t), v, *site, NULL};
    return TG_OK;
}

static tg_status on_state(void *ud, eager_tensor *t, const char *name, const eager_site *site)
{
    return declare_state(ud, t, name, "eager_declare_state", site);
}

/* eager_assign(dst, src): dst holds src's value from here on. */
static tg_status on_write(void *ud, eager_tensor *dst, eager_tensor *src, const eager_site *site)
{
    trace_state *st = ud;
    int32_t vs = input_value(st, src, site);
    if (vs < 0)
        return eager_status();
    if (!find_wr(st, dst)) {
        if (grow_list((void **)&st->wr, st->nwr, &st->cap_wr, sizeof *st->wr) < 0)
            return fail(st, TG_ERR_NOMEM, site, "%s", "trace: out of memory");
        st->wr[st->nwr++] = (trace_wr){eager_retain(dst), traced_value(st, dst), *site};
    }
    eager_set_tag(dst, make_tag(st, vs));
    return TG_OK;
}

/* The element as a double (for guards). */
static double element(const eager_tensor *t, int64_t i)
{
    const void *p = eager_peek(t);
    switch (eager_dtype(t)) {
    case GRAPH_F32: return ((const float *)p)[i];
    case GRAPH_I64: return (double)((const int64_t *)p)[i];
    case GRAPH_I32: return ((const int32_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static tg_status on_read(void *ud, const eager_tensor *t, eager_read_kind kind,
                         int64_t index, const eager_site *site)
{
    trace_state *st = ud;
    int32_t v = traced_value(st, t);
    if (v < 0)
        return TG_OK; /* not traced: does not depend on the inputs */
    graph_value_kind vk = st->g->values[v].kind;
    if (kind == EAGER_WRITE_BUFFER) {
        if (vk == GRAPH_VALUE_CONST) {
            eager_set_tag((eager_tensor *)t, 0); /* next use captures anew */
            return TG_OK;
        }
        return fail(st, TG_ERR_UNSUPPORTED, site, "trace: writing into a traced "
                    "%s tensor is not supported while tracing",
                    graph_value_kind_name(vk));
    }
    if (vk == GRAPH_VALUE_CONST)
        return TG_OK; /* constants cannot change at replay */
    if (vk == GRAPH_VALUE_STATE) {
        char msg[400];
        snprintf(msg, sizeof msg, "trace: reading state \"%s\" on the host (%s) would bake "
                 "its value into the step, and state changes from step to step: keep it a "
                 "tensor (compute with ops), or read it outside the trace",
                 st->g->values[v].name ? st->g->values[v].name : "?",
                 kind == EAGER_READ_DECISION ? "eager_bool"
                 : kind == EAGER_READ_BUFFER ? "eager_data" : "eager_item/eager_get");
        return fail(st, TG_ERR_UNSUPPORTED, site, "%s", msg);
    }
    graph_guard gd = {v, GRAPH_GUARD_VALUE, st->opts.value_reads, index, 0, 0, -1};
    if (kind == EAGER_READ_DECISION) {
        gd.kind = GRAPH_GUARD_DECISION;
        gd.policy = GRAPH_GUARD_STRICT;
    }
    if (kind == EAGER_READ_BUFFER) {
        gd.kind = GRAPH_GUARD_BUFFER;
        gd.index = -1;
        gd.hash = graph_hash_bytes(eager_peek(t), eager_nbytes(t));
    } else {
        gd.expect = element(t, index);
    }
    gd.prov = record_prov(st, site, GRAPH_OP_COUNT + (unsigned)kind);
    if (gd.prov < 0 || graph_add_guard(st->g, &gd) < 0)
        return fail_graph(st, site);
    return TG_OK;
}

/* ---- the API ---- */

trace_opts trace_default_opts(void)
{
    trace_opts o = TRACE_OPTS_INIT;
    return o;
}

/* Detaches the hooks and frees the state; returns the graph (or NULL). */
static graph *end_trace(trace_state *st, int keep_graph)
{
    graph *g = keep_graph ? st->g : NULL;
    if (st->g) {
        last_nvalues = st->g->nvalues;
        last_nnodes = st->g->nnodes;
    }
    if (!keep_graph)
        graph_free(st->g);
    eager_set_hooks(st->prev_hooks);
    set_active(st->id, 0);
    prov_entry *e, *tmp;
    HASH_ITER(hh, st->provs, e, tmp) {
        HASH_DEL(st->provs, e);
        tg_free(e);
    }
    out_name *o, *otmp;
    HASH_ITER(hh, st->outs, o, otmp) {
        HASH_DEL(st->outs, o);
        tg_free(o);
    }
    for (int32_t i = 0; i < st->nstv; i++) {
        eager_release(st->stv[i].t);
        if (st->stv[i].cur)
            eager_release(st->stv[i].cur);
    }
    if (st->rng0) {
        /* a generator made only for the trace and never drawn from goes:
         * the thread is left as it was */
        if (st->made_rng && eager_rng_peek() == st->rng0)
            eager_rng_set(EAGER_NONE);
        eager_release(st->rng0);
    }
    for (int32_t i = 0; i < st->nwr; i++)
        eager_release(st->wr[i].t);
    tg_free(st->stv);
    tg_free(st->wr);
    tg_free(st);
    tl_trace = NULL;
    if (open_key_ok)
        pthread_setspecific(open_key, NULL);
    return g;
}

tg_status trace_begin_at(EAGER_SITE_PARAMS, const trace_opts *opts)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (tl_trace) {
        const eager_site *b = &tl_trace->begin;
        eager_set_error(TG_ERR_STATE, &site, "trace_begin: a trace is already active on this "
                        "thread, begun at %s:%d (%s); end it first with trace_freeze() (keeps "
                        "its graph) or trace_abort() (drops it): nested traces are not "
                        "supported", b->file ? b->file : "?", b->line, b->func ? b->func : "?");
        return TG_ERR_STATE;
    }
    trace_opts o = opts ? *opts : trace_default_opts();
    if (o.max_depth <= 0 || o.max_depth > TRACE_MAX_DEPTH)
        o.max_depth = o.max_depth <= 0 ? 16 : TRACE_MAX_DEPTH;
    trace_state *st = tg_calloc(1, sizeof *st);
    if (st) {
        st->opts = o;
        st->stacks = o.capture_stack ? thread_stacks() : NULL;
        st->g = graph_new(o.name);
        /* Room for as many ops as this thread's last trace had, so a
         * model traced again (warm-up, then the real trace) records
         * without regrowing and copying its arrays. */
        int32_t nv = last_nvalues > 1024 ? (last_nvalues < 65536 ? last_nvalues : 65536) : 1024;
        int32_t nn = last_nnodes > 512 ? (last_nnodes < 65536 ? last_nnodes : 65536) : 512;
        if (st->g && graph_reserve(st->g, nv, nn) != TG_OK) {
            graph_free(st->g);
            st->g = NULL;
        }
    }
    if (!st || !st->g) {
        if (st)
            graph_free(st->g);
        tg_free(st);
        eager_set_error(TG_ERR_NOMEM, &site, "trace_begin: out of memory");
        return TG_ERR_NOMEM;
    }
    st->id = atomic_fetch_add(&next_id, 1);
    if (st->id == 0)
        st->id = atomic_fetch_add(&next_id, 1);
    if (!set_active(st->id, 1)) {
        graph_free(st->g);
        tg_free(st);
        eager_set_error(TG_ERR_STATE, &site, "trace_begin: more than %d traces "
                        "are active at once", MAX_ACTIVE);
        return TG_ERR_STATE;
    }
    st->begin = site;
    /* the generator the step starts from (freeze: "rng" state if replaced) */
    st->made_rng = eager_rng_peek() == NULL;
    st->backwards = eager_backward_count();
    eager_tensor *g0 = eager_rng_get_at(site.file, site.line, site.func);
    st->rng0 = g0 ? eager_retain(g0) : NULL;
    const char *e = getenv("TG_TRACE_WARN_OPS");
    long n = e ? strtol(e, NULL, 10) : 0;
    st->warn_at = n > 0 && n < INT32_MAX ? (int32_t)n : TRACE_WARN_NODES;
    st->hooks = (eager_hooks){on_op, NULL, on_read, st, on_write, on_state};
    st->prev_hooks = eager_set_hooks(&st->hooks);
    tl_trace = st;
    pthread_once(&open_once, open_key_make);
    if (open_key_ok)
        pthread_setspecific(open_key, st);
    return TG_OK;
}

/*
 * An input's name: given, non-empty and not another input's (replay matches
 * inputs by name; graph_verify refuses such graphs from elsewhere).  0, or
 * -1 and an error.
 */
static int input_name_ok(const trace_state *st, const char *name, const eager_site *site)
{
    if (!name || !*name) {
        eager_set_error(TG_ERR_ARG, site, "trace_input: %s name (every input needs "
                        "one; replay matches inputs by name)", name ? "an empty" : "a NULL");
        return -1;
    }
    for (int32_t i = 0; i < st->g->ninputs; i++) {
        const char *n = st->g->values[st->g->inputs[i]].name;
        if (n && strcmp(n, name) == 0) {
            eager_set_error(TG_ERR_ARG, site, "trace_input: the name \"%s\" is "
                            "already input %d", name, (int)i);
            return -1;
        }
    }
    return 0;
}

/*
 * A param's name: given and non-empty (replay_set_param finds params by
 * name).  0, or -1 and an error.
 */
static int param_name_ok(const char *name, const eager_site *site)
{
    if (name && *name)
        return 0;
    eager_set_error(TG_ERR_ARG, site, "trace_param: %s name (every param needs one; "
                    "replay_set_param finds params by name)", name ? "an empty" : "a NULL");
    return -1;
}

/* Common checks of trace_input/param: an untraced tensor. */
static trace_state *fresh_tensor(const char *what, eager_tensor *t,
                                 const eager_site *site)
{
    trace_state *st = need_trace(what, site);
    if (!st)
        return NULL;
    if (!t || t == EAGER_NONE) {
        if (eager_status() == TG_OK)
            eager_set_error(TG_ERR_NULL, site, "%s: no tensor", what);
        return NULL;
    }
    if (eager_check_at(site->file, site->line, site->func, t, what) != TG_OK)
        return NULL;
    int32_t v = traced_value(st, t);
    if (v >= 0) {
        eager_set_error(TG_ERR_STATE, site, "%s: the tensor is already part of the "
                        "trace (as %s %%%d); declare inputs and params before using them",
                        what, graph_value_kind_name(st->g->values[v].kind), v);
        return NULL;
    }
    return st;
}

tg_status trace_input_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    trace_state *st = fresh_tensor("trace_input", t, &site);
    if (!st || input_name_ok(st, name, &site) < 0)
        return eager_status();
    int32_t v = graph_add_value(st->g, GRAPH_VALUE_INPUT, eager_type(t), name);
    if (v < 0 || graph_add_input(st->g, v) != TG_OK)
        return fail_graph(st, &site);
    eager_set_tag(t, make_tag(st, v));
    return TG_OK;
}

tg_status trace_param_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    trace_state *st = fresh_tensor("trace_param", t, &site);
    if (!st || param_name_ok(name, &site) < 0)
        return eager_status();
    int32_t v = graph_add_value(st->g, GRAPH_VALUE_PARAM, eager_type(t), name);
    if (v < 0 || graph_set_data(st->g, v, eager_peek(t), eager_nbytes(t)) != TG_OK)
        return fail_graph(st, &site);
    eager_set_tag(t, make_tag(st, v));
    return TG_OK;
}

tg_status trace_state_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    trace_state *st = need_trace("trace_state", &site);
    if (!st)
        return eager_status();
    if (!t || t == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "trace_state: no tensor");
        return TG_ERR_NULL;
    }
    if (eager_check_at(site.file, site.line, site.func, t, "trace_state") != TG_OK)
        return eager_status();
    if (!name || !*name) {
        eager_set_error(TG_ERR_ARG, &site, "trace_state: %s name (every state needs one: "
                        "replay and checkpoints find states by name)", name ? "an empty" : "a NULL");
        return TG_ERR_ARG;
    }
    return declare_state(st, t, name, "trace_state", &site);
}

/*
 * At freeze: each state gets its data (its tensor's contents now) and its
 * next value (what its tensor holds now); a tensor from before the step
 * that the step wrote must be state.
 */
static tg_status finish_states(trace_state *st, const eager_site *site)
{
    char msg[700], a[300];
    /* The random generator: a step that drew numbers replaced the thread's
     * generator tensor (eager_dropout: rng_advance); the one it began with
     * is state "rng", and the one it ends with its next value. */
    eager_tensor *g1 = st->rng0 ? eager_rng_get_at(site->file, site->line, site->func) : NULL;
    if (g1 && g1 != st->rng0 && !find_stv(st, st->rng0)) {
        tg_status rs = declare_state(st, st->rng0, "rng", "trace_freeze (the random generator)",
                                     site);
        if (rs != TG_OK)
            return rs;
        trace_stv *s = find_stv(st, st->rng0);
        s->cur = eager_retain(g1);
        if (traced_value(st, g1) < 0 && input_value(st, g1, site) < 0)
            return eager_status();
    }
    for (int32_t i = 0; i < st->nwr; i++) {
        const trace_wr *w = &st->wr[i];
        if (find_stv(st, w->t))
            continue;
        if (w->orig >= 0 && st->g->values[w->orig].kind == GRAPH_VALUE_INTER)
            continue; /* made inside the step: a new value, nothing persists */
        snprintf(msg, sizeof msg, "trace_freeze: the step writes a tensor from before the step "
                 "that is not state (eager_assign at %s): its new value would be lost at "
                 "replay; declare it with trace_state(t, name) before the step",
                 site_str(&w->site, a, sizeof a));
        eager_set_error(TG_ERR_STATE, site, "%s", msg);
        return TG_ERR_STATE;
    }
    for (int32_t i = 0; i < st->nstv; i++) {
        const trace_stv *s = &st->stv[i];
        eager_tensor *cur = s->cur ? s->cur : s->t;
        int32_t next = traced_value(st, cur);
        if (next < 0)
            next = s->value;
        if (graph_set_data(st->g, s->value, eager_peek(cur), eager_nbytes(cur)) != TG_OK ||
            graph_add_state(st->g, s->value, next) != TG_OK) {
            eager_set_error(graph_error_status(st->g), site, "trace_freeze: %s",
                            graph_error(st->g));
            return graph_error_status(st->g);
        }
    }
    return TG_OK;
}

tg_status trace_dynamic_at(EAGER_SITE_PARAMS, eager_tensor *t, int dim,
                           const char *sym)
{
    eager_site site = {site_file_, site_line_, site_func_};
    trace_state *st = need_trace("trace_dynamic", &site);
    if (!st)
        return eager_status();
    if (t && eager_check_at(site_file_, site_line_, site_func_, t, "trace_dynamic") != TG_OK)
        return eager_status();
    int32_t v = t ? traced_value(st, t) : -1;
    if (v < 0 || st->g->values[v].kind != GRAPH_VALUE_INPUT)
        return fail(NULL, TG_ERR_ARG, &site, "trace_dynamic: the tensor is not an "
                    "input of this trace (call trace_input first)%s", "");
    graph_value *val = &st->g->values[v];
    int d = graph_axis(dim, val->type.ndim);
    if (d < 0 || !sym || !*sym) {
        eager_set_error(TG_ERR_AXIS, &site, "trace_dynamic: dim %d of a %d-d input "
                        "(or an empty symbol name)", dim, (int)val->type.ndim);
        return TG_ERR_AXIS;
    }
    int32_t s = graph_add_symbol(st->g, sym, val->type.dim[d]);
    if (s < 0)
        return fail(NULL, graph_error_status(st->g), &site, "trace_dynamic: %s",
                    graph_error(st->g));
    val = &st->g->values[v];
    val->dyn |= 1u << d;
    val->sym[d] = (int8_t)s;
    return TG_OK;
}

tg_status trace_output_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    trace_state *st = need_trace("trace_output", &site);
    if (!st)
        return eager_status();
    if (!t || t == EAGER_NONE) {
        if (eager_status() == TG_OK)
            eager_set_error(TG_ERR_NULL, &site, "trace_output: no tensor");
        return fail(st, eager_status(), NULL, "%s", eager_error());
    }
    if (eager_check_at(site_file_, site_line_, site_func_, t, "trace_output") != TG_OK)
        return fail(st, eager_status(), NULL, "%s", eager_error());
    if (!name || !*name)
        return fail(st, TG_ERR_ARG, &site, "trace_output: %s name (every output needs one; "
                    "replay returns outputs by name)", name ? "an empty" : "a NULL");
    int32_t v = traced_value(st, t);
    if (v < 0 || st->g->values[v].kind != GRAPH_VALUE_INTER)
        return fail(st, TG_ERR_ARG, &site, "trace_output: \"%s\" does not depend on "
                    "any recorded op (it is not computed inside the trace)", name);
    const char *iname = graph_intern(st->g, name, -1);
    out_name *o = NULL;
    if (!iname)
        return fail(st, TG_ERR_NOMEM, &site, "%s", "trace_output: out of memory");
    HASH_FIND_PTR(st->outs, &iname, o);
    if (o)
        return fail(st, TG_ERR_ARG, &site, "trace_output: the name \"%s\" is already "
                    "an output", name);
    tg_status ast = graph_add_output(st->g, v, name);
    if (ast != TG_OK)
        return fail(st, ast, &site, "trace_output: %s", graph_error(st->g));
    tg_hash_oom = 0;
    if ((o = tg_malloc(sizeof *o)) != NULL) {
        o->name = iname;
        HASH_ADD_PTR(st->outs, name, o);
    }
    if (!o || tg_hash_oom) {
        tg_free(tg_hash_oom ? o : NULL);
        return fail(st, TG_ERR_NOMEM, &site, "%s", "trace_output: out of memory");
    }
    return TG_OK;
}

/*
 * Frames of the dispatcher and tracer themselves, above the user's code.
 * GCC may name clones "on_op.part.0" or "report.isra.0": the name is
 * compared up to its first '.'.
 */
static int internal_frame(const char *f)
{
    static const char *const names[] = {"record_prov", "on_op", "on_read", "report",
                                        "eager_dispatch", "trace_stack_capture_slots"};
    if (!f)
        return 0;
    size_t n = strcspn(f, ".");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncmp(f, names[i], n) == 0)
            return 1;
    return strncmp(f, "eager_", 6) == 0 && n > 3 && strncmp(f + n - 3, "_at", 3) == 0;
}

/*
 * Drops the tracer's and dispatcher's frames before the user's code: up to
 * the frame of the site's own function if it is near, else past every
 * known internal frame (the user's function may be inlined into its
 * caller).  Then keeps at most max_depth frames.
 */
static void trim_frames(graph *g, int max_depth)
{
    for (int32_t i = 0; i < g->nprovs; i++) {
        graph_prov *p = &g->provs[i];
        int skip = -1;
        for (int k = 0; k < p->nframes && k <= INTERNAL_FRAMES; k++) {
            const char *f = g->frames[p->frame0 + k].func;
            size_t n = p->func ? strlen(p->func) : 0;
            /* "mlp" or a GCC clone of it, "mlp.constprop.0" */
            if (f && n && strncmp(f, p->func, n) == 0 && (f[n] == '\0' || f[n] == '.')) {
                skip = k;
                break;
            }
        }
        if (skip < 0)
            for (skip = 0; skip < p->nframes && skip < INTERNAL_FRAMES &&
                           internal_frame(g->frames[p->frame0 + skip].func);)
                skip++;
        p->frame0 += skip;
        p->nframes -= skip;
        if (p->nframes > max_depth)
            p->nframes = max_depth;
    }
}

graph *trace_freeze_at(EAGER_SITE_PARAMS)
{
    eager_site site = {site_file_, site_line_, site_func_};
    trace_state *st = need_trace("trace_freeze", &site);
    if (!st)
        return NULL;
    graph *g = st->g;
    if (st->broken) {
        char first[sizeof st->first_err];
        tg_status code = st->first_status;
        memcpy(first, st->first_err, sizeof first);
        end_trace(st, 0);
        eager_set_error(code, &site, "trace_freeze: the trace is dropped: recording "
                        "failed earlier: %s", first);
        return NULL;
    }
    if (g->noutputs == 0) {
        end_trace(st, 0);
        eager_set_error(TG_ERR_STATE, &site, "trace_freeze: no outputs (call "
                        "trace_output before freezing)");
        return NULL;
    }
    tg_status s = finish_states(st, &site);
    if (s == TG_OK && g->nsyms > 0 && eager_backward_count() != st->backwards) {
        /* the gradient rules build tensors of the traced sizes (a mean's
         * 1/N, zeros to scatter into): at another size they would fail, or
         * silently scale a gradient by the traced size */
        eager_set_error(TG_ERR_UNSUPPORTED, &site, "trace_freeze: the step runs eager_backward "
                        "and has a dynamic dim (\"%s\", trace_dynamic): a traced backward "
                        "holds tensors of the traced sizes (a mean's 1/N, ...), so it replays "
                        "only at them; trace the step without trace_dynamic (and pad or drop a "
                        "last partial batch)", g->syms[0].name);
        s = TG_ERR_UNSUPPORTED;
    }
    if (s != TG_OK) {
        end_trace(st, 0);
        return NULL;
    }
    if (st->opts.capture_stack && (s = trace_stack_symbolize(g)) == TG_OK)
        trim_frames(g, st->opts.max_depth);
    if (s == TG_OK)
        s = graph_propagate_dynamic(g);
    if (s == TG_OK)
        s = graph_verify(g, 0);
    if (s != TG_OK) {
        eager_set_error(s, &site, "trace_freeze: %s", graph_error(g));
        end_trace(st, 0);
        return NULL;
    }
    return end_trace(st, 1);
}

void trace_abort(void)
{
    if (tl_trace)
        end_trace(tl_trace, 0);
}

int trace_active(void) { return tl_trace != NULL; }
