/* internal.h - the plan, variants and backend interface inside replay/. */
#ifndef TG_REPLAY_INTERNAL_H
#define TG_REPLAY_INTERNAL_H

#include <pthread.h>

#include "../eager/kernel.h"
#include "../optimize/memplan.h"
#include "replay.h"

/*
 * A backend: a struct of function pointers, asked up front at compile
 * (ggml-backend style).  The CPU backend binds eager's kernels; the OpenCL
 * backend (its own issue) will add memory and queue entries here.
 */
typedef struct replay_backend {
    const char *name;
    /* Nonzero if the backend runs node n; else a reason in why. */
    int (*supports_op)(const graph *g, const graph_node *n, char *why, size_t len);
    /* The kernel for op (CPU-style backends). */
    eager_kernel_fn (*kernel)(graph_op op);
} replay_backend;

extern const replay_backend replay_backend_cpu;

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
    struct ocl_plan *ocl; /* REPLAY_OPENCL: prepared nodes, device constants */
    size_t align;         /* arena offset alignment (the device's for OpenCL) */
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

/* "node 12 (matmul at model.c:42 fn)" */
const char *replay_node_str(const replay_plan *p, int32_t node, char *buf, size_t len);

#endif
