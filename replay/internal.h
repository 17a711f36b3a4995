/* internal.h - the plan, variants and backend interface inside replay/. */
#ifndef TG_REPLAY_INTERNAL_H
#define TG_REPLAY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../eager/kernel.h"
#include "../optimize/memplan.h"
#include "replay.h"
#include "graph/graph_impl.h"

struct replay_guard_warns;

/*
 * A backend: a struct of function pointers (ggml-backend style), found by
 * its name in plan.c's table (replay_backend_find: "opencl:1" is backend
 * "opencl", the second device its devices entry lists; plan.c matches the
 * device and sets p->device_index and p->device_name before plan_new).
 * replay_compile calls plan_new
 * (the backend's per-plan state: a device opened, constants uploaded),
 * asks supports_op for every live node, builds the schedule, then calls
 * prepare_op for every live node (kernels built).  A session calls
 * session_new; replay_run checks and orders the inputs, then calls run.
 * An entry left NULL gets the generic code's default, the one the CPU
 * backend uses: no plan state, nothing prepared, a host arena with every
 * step bound once to kernel(op) (session.c), param_changed a no-op.  A
 * backend with its own run sets session_new, session_free and run
 * together.  A new backend is a folder with its table and one entry in
 * plan.c's table: no public enum, no change to the tool.
 */
typedef struct replay_backend {
    const char *name;
    /* Required. Nonzero if the backend runs live node n of p; else a
     * reason in why ("op X is not supported on <p->target>: why (node)"). */
    int (*supports_op)(const replay_plan *p, const graph_node *n, char *why, size_t len);
    /* Sets p->bplan (and may raise p->align, rename p->target) before
     * any node is asked; err on failure. */
    tg_status (*plan_new)(replay_plan *p, char *err, size_t errlen);
    /* Prepares live node i after the schedule; err names the node. */
    tg_status (*prepare_op)(replay_plan *p, int32_t i, char *err, size_t errlen);
    void (*plan_free)(void *bplan); /* p->bplan (a failed plan_new sets none) */
    /* Param value id's host data was replaced (replay_set_param; no run
     * is in progress on the plan's sessions). */
    tg_status (*param_changed)(replay_plan *p, const graph_value *v, int32_t id, char *err,
                               size_t errlen);
    /* The session state (workspace: the caller's, as replay_session_create);
     * NULL if refused or out of memory, with the reason in err. */
    void *(*session_new)(replay_plan *p, void *workspace, size_t size, char *err,
                         size_t errlen);
    void (*session_free)(void *bsession);
    /* A run with inputs in signature order (each checked by
     * graph_type_check, data or buffer present); outputs as replay_run;
     * warn-policy guards through replay_guard_warned(warns). */
    tg_status (*run)(void *bsession, const replay_tensor *const *in, int nin,
                     replay_tensor *outputs, int nout, struct replay_guard_warns *warns,
                     char *err, size_t errlen);
    /* The generic run's kernel for op (bound once per variant). */
    eager_kernel_fn (*kernel)(graph_op op);
    /* Nonzero: replay_tensor.buffer (a device buffer) is accepted. */
    int device_buffers;
    /* The target plans of these options are made for (graph/target.h):
     * replay_compile re-plans a graph laid out for another.  NULL: the
     * CPU's (eager_cpu_target at o->threads). */
    void (*target)(const replay_opts *o, graph_target *t);
    /* Lists the devices (replay_backend_devices: names "<name>:<index>"
     * filled in by plan.c), as many as fit in max; their count, or -1
     * and why in err.  NULL: one device, "<name>". */
    int (*devices)(replay_device_info *out, int max, char *err, size_t errlen);
    /* replay_plan_property's keys beyond "backend" and "device"; NULL:
     * none. */
    const char *(*property)(const replay_plan *p, const char *key);
    /* replay_plan_handle; NULL: none. */
    void *(*handle)(const replay_plan *p, const char *what);
    /* replay_buffer_new / _free (with device_buffers); NULL: none. */
    void *(*buffer_new)(const replay_plan *p, size_t bytes, const void *data, char *err,
                        size_t errlen);
    void (*buffer_free)(const replay_plan *p, void *buffer);
    /* replay_backend_shutdown; NULL: nothing kept. */
    void (*shutdown)(void);
} replay_backend;

extern const replay_backend replay_backend_cpu;
extern const replay_backend replay_backend_opencl; /* opencl/backend.c */

/* backends.c: the backend replay_opts o names (device, or the
 * deprecated backend kind), its devices not looked at (replay_target);
 * NULL and a message listing the backends in err. */
const replay_backend *replay_backend_named(const replay_opts *o, char *err, size_t errlen);
/*
 * The backend and device o names, the device matched against the
 * backend's list: the backend, the device's index in *index and its
 * entry in *dev; NULL, the status in *st (TG_ERR_ARG for a name that
 * names none, TG_ERR_BACKEND when the backend cannot list its devices)
 * and a message in err that lists the names there are.
 */
const replay_backend *replay_backend_resolve(const replay_opts *o, replay_device_info *dev,
                                             int *index, tg_status *st, char *err,
                                             size_t errlen);

/* One set of input shapes, planned: value types and arena layout. */
typedef struct replay_variant {
    int64_t *key; /* dims of every input, concatenated */
    int32_t nkey;
    graph_type *types; /* per value */
    opt_memplan mp;
    struct replay_variant *next;
} replay_variant;

/* A step of the schedule: a node, or a guard check after its value. */
typedef struct replay_item {
    int32_t node;  /* node id, or -1 for a guard */
    int32_t guard; /* guard index when node == -1 */
} replay_item;

struct replay_plan {
    graph *g; /* the plan's own copy: params, constants, names, sites */
    replay_opts opts;
    /* One for the caller (until replay_plan_free) and one per session:
     * the plan is freed at 0, with the last of them. */
    atomic_int refs;
    atomic_int given_up; /* replay_plan_free was called */
    size_t fixed_bytes;  /* params and constants held (replay_opts.max_memory) */
    const replay_backend *backend;
    replay_item *items;
    int32_t nitems;
    replay_variant *traced; /* variant of the traced shapes, never freed early */
    pthread_mutex_t mu;     /* guards the variant list */
    int32_t nkey;
    /* Bumped by replay_set_param: a session whose kernels prepared state
     * from the old param data (reordered weights) drops it before its
     * next run (replay_run compares it with its own copy). */
    uint64_t param_gen;
    void *bplan;     /* the backend's (plan_new), or NULL */
    size_t align;    /* arena offset alignment (OPT_ARENA_ALIGN, or the backend's) */
    char target[192]; /* what refusals name: "backend cpu", "device X" */
    int device_index;      /* in the backend's device list (replay_backend_resolve) */
    char device_name[64];  /* "cpu", "opencl:0" (replay_plan_property "device") */
    char layout[640]; /* replay_plan_layout: the layout's target, re-planned or not */
    /* replay_opts.tune (tune.c): per node, the choice its steps run
     * (eager_kargs.impl: EAGER_GEMM_* for a GEMM, EAGER_CONV_* for a
     * conv2d_blk; NULL: not tuned, all 0), and what tuning did. */
    int8_t *gemm_impl;
    int tune_timed, tune_cached, tune_blas, tune_blis, tune_onednn;
    /* conv2d_blk nodes: timed, from the cache, with one candidate; by EAGER_CONV_* */
    int tune_conv_timed, tune_conv_cached, tune_conv_one, tune_conv[4];
    char tuning[1024]; /* replay_plan_tuning ("" when not tuned) */
};

/* The variant for these inputs (in signature order, each type already
 * checked by graph_type_check; made and cached if new), or NULL with the
 * status in *status and a message in err that names the input or node at
 * fault. */
replay_variant *replay_variant_get(replay_plan *p, const replay_tensor *const *in,
                                   tg_status *status, char *err, size_t errlen);

/*
 * Warn-policy guards that changed (replay.h): a session's record of its
 * last run, and which guards it has already written to stderr.
 */
typedef struct replay_guard_warns {
    int count;           /* changed warn-policy guards in the last run */
    char first[1024];    /* the first one's message ("" if none) */
    unsigned char *told; /* per guard: written to stderr by this session */
    void (*fn)(void *ctx, const char *msg); /* replay_opts.guard_warn */
    void *ctx;
} replay_guard_warns;

/* Records that warn-policy guard `guard` changed, with its message (from
 * graph_guard_check): counts it, keeps the run's first message, hands it
 * to the plan's guard_warn or (none given) writes it to stderr the first
 * time this session sees that guard change. */
void replay_guard_warned(replay_guard_warns *w, int32_t guard, const char *msg);

/*
 * Checks the caller's input types, already within the size cap
 * (replay_order_inputs checked each with graph_type_check), against the
 * signature: dtype (TG_ERR_DTYPE), rank, static dims and one size per
 * dynamic symbol (TG_ERR_SHAPE).  Every message names the input.
 */
tg_status replay_check_inputs(const replay_plan *p, const replay_tensor *const *in,
                              char *err, size_t errlen);
/* The type of every value (types: g->nvalues) for these checked inputs, by
 * inference in order; an error names the node, and for a node specialized
 * on the traced sizes says so (with a reshape's remedy: reshape_hint). */
tg_status replay_infer_types(const replay_plan *p, const replay_tensor *const *in,
                             graph_type *types, char *err, size_t errlen);

/* signature.c: the checks of the caller's tensors every backend shares. */

/*
 * Orders the caller's inputs (by name, or by position) into signature
 * order, each type checked by graph_type_check; need_data: also each
 * input's data (or device buffer, where the backend takes them) and its
 * .size.  A name the plan lacks is TG_ERR_ARG listing the inputs there
 * are: "replay: the plan has no input named \"z\" (inputs: x)".
 */
tg_status replay_order_inputs(const replay_plan *p, const replay_tensor *inputs, int nin,
                              const replay_tensor **ordered, int need_data, char *err,
                              size_t errlen);
/* The signature index of output o (the k-th given: by name, or by
 * position when its name is NULL), or -1 with a message in err listing
 * the outputs ("(outputs: y)"). */
int replay_output_lookup(const replay_plan *p, const replay_tensor *o, int k, char *err,
                         size_t errlen);
/*
 * Accepts the caller's buffer o for output i, which this run made of type
 * t: o->size nonzero takes any type of at most that many bytes and sets
 * o->type to t; else o->type must be t.  A message names the output.
 */
tg_status replay_output_accept(const replay_plan *p, int i, const graph_type *t,
                               replay_tensor *o, char *err, size_t errlen);

/*
 * replay_opts.tune (tune.c): times the GEMM candidates of every live
 * matmul, linear and linear_ep node of a CPU plan at its traced shapes, or
 * takes the choice from the tuning cache, into p->gemm_impl, p->tune_*
 * and p->tuning; writes new entries to the cache.  TG_ERR_NOMEM with a
 * message naming the node; a cache that cannot be read or written is no
 * error (p->tuning says it was not saved).
 */
tg_status replay_tune(replay_plan *p, char *err, size_t errlen);
/* Test hook: forgets the cache read in this process, so the next tuned
 * compile reads its file again. */
void replay_tune_forget(void);

/* Drops one reference to p (internal.h, refs); frees it at 0. */
void replay_plan_unref(replay_plan *p);

/* "node 12 (matmul at model.c:42 fn)" */
const char *replay_node_str(const replay_plan *p, int32_t node, char *buf, size_t len);

#endif
