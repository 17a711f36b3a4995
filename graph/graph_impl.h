/*
 * graph_impl.h - the layout of a graph (internal: not installed).
 *
 * The installed graph/graph.h declares `graph` as an opaque type that
 * users build and read through functions.  The library, its tests, the
 * benchmarks and the tools include this header instead and read the
 * arrays directly: g->values[v], g->nodes[i], ... are plain indexes into
 * contiguous arrays.
 *
 * Storage: the arrays of a graph are one stable set (graph/stable.h):
 * each grows in place inside its part of one reserved address range, so
 * an element, once added, keeps its address until graph_free.  A graph_value * or
 * graph_node * held across graph_add_node, graph_add_value or any other
 * addition stays valid and sees the same record.  What does change an
 * element's contents: graph_compact and graph_toposort renumber (the
 * record at an address may then be another node), and passes that edit a
 * node in place.  A graph holds at most GRAPH_MAX_VALUES values and
 * GRAPH_MAX_NODES nodes (graph.h), each other list at most GRAPH_MAX_ITEMS
 * entries; past that, an addition fails with TG_ERR_NOMEM and a message
 * naming the list and its limit, and the graph is unchanged.
 */
#ifndef TG_GRAPH_GRAPH_IMPL_H
#define TG_GRAPH_GRAPH_IMPL_H

#include "graph.h"
#include "stable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct graph_value {
    graph_type type;   /* dims as traced (concrete) */
    graph_value_kind kind;
    uint32_t dyn;      /* bit i: dim i is dynamic, named by sym[i] */
    uint32_t dder;     /* bit i: dim i changes with the dynamic dims but is
                          no one symbol (2*B, B*T): graph_propagate_dynamic
                          sets it on intermediates; not saved */
    int8_t sym[GRAPH_MAX_DIMS]; /* symbol index for dynamic dims */
    const char *name;  /* interned, or NULL */
    int32_t node;      /* producer of an intermediate; -1 otherwise */
    int32_t out_index; /* output slot of the producer */
    void *data;        /* params/consts: numel elements; NULL if elided */
    uint64_t hash;     /* params/consts: graph_hash_bytes of the data */
} graph_value;

typedef struct graph_node {
    graph_op op;
    uint32_t flags;
    int32_t nin, nout;
    int32_t *in;  /* value ids (graph_alloc_ids) */
    int32_t *out; /* value ids (graph_alloc_ids) */
    graph_attrs *attrs; /* attr_size bytes in the graph's arena; NULL if none */
    int32_t nprov;
    int32_t *prov; /* provenance ids, the first is the primary */
    int32_t cap_prov; /* slots at prov (0: exactly nprov); graph_node_add_prov
                         doubles it, so n appends cost O(n) */
} graph_node;

/*
 * A node's attribute struct (graph_<op>_attrs, graph_ops[op].attr_size
 * bytes), or NULL for ops without attributes.  Use these rather than the
 * field: the storage of attributes may move out of the node.
 */
static inline const void *tg_node_attrs(const graph_node *n)
{
    return graph_ops[n->op].attr_size ? (const void *)n->attrs : NULL;
}
static inline void *tg_node_attrs_mut(graph_node *n)
{
    return graph_ops[n->op].attr_size ? (void *)n->attrs : NULL;
}

/* Where a node or guard came from: the user's call site and its stack. */
typedef struct graph_prov {
    const char *file;
    int32_t line;
    const char *func;
    int32_t frame0, nframes; /* into graph->frames */
} graph_prov;

typedef struct graph_output {
    int32_t value;
    const char *name;
} graph_output;

/* A named dynamic dimension ("B") and the size it had when traced. */
typedef struct graph_symbol {
    const char *name;
    int64_t traced;
} graph_symbol;

/* Most entries of each other list (inputs, outputs, provenance, frames,
 * guards); symbols: at most 127. */
#define GRAPH_MAX_ITEMS GRAPH_MAX_NODES

/* The graph's stable arrays, in the order of struct graph's mem[]. */
typedef enum graph_array {
    GRAPH_ARRAY_VALUES,
    GRAPH_ARRAY_NODES,
    GRAPH_ARRAY_INPUTS,
    GRAPH_ARRAY_OUTPUTS,
    GRAPH_ARRAY_PROVS,
    GRAPH_ARRAY_FRAMES,
    GRAPH_ARRAY_GUARDS,
    GRAPH_ARRAY_SYMS,
    GRAPH_ARRAY_COUNT
} graph_array;

/* A state of a training step: its value at the start of a run (kind
 * GRAPH_VALUE_STATE) and at the end. */
typedef struct graph_state {
    int32_t value;
    int32_t next;
} graph_state;

typedef struct graph_strings graph_strings;
typedef struct graph_chunk graph_chunk;

struct graph {
    const char *name;
    /* Each array below is the base of mem.a[its graph_array]: it is NULL
     * until the first addition and never changes after that; cap_ is
     * what is committed (graph_grow_array).  All of them live in the one
     * reservation of mem (graph/stable.h). */
    graph_value *values;
    int32_t nvalues, cap_values;
    graph_node *nodes;
    int32_t nnodes, cap_nodes;
    int32_t *inputs; /* value ids, in signature order */
    int32_t ninputs, cap_inputs;
    graph_output *outputs;
    int32_t noutputs, cap_outputs;
    graph_prov *provs;
    int32_t nprovs, cap_provs;
    graph_frame *frames;
    int32_t nframes, cap_frames;
    graph_guard *guards;
    int32_t nguards, cap_guards;
    graph_symbol *syms;
    int32_t nsyms, cap_syms;
    tg_stable_set mem;
    /* States (graph_add_state): a plain array, few entries. */
    graph_state *states;
    int32_t nstates, cap_states;
    graph_strings *strings;
    graph_chunk *chunks; /* arena for node id arrays */
    char err[512];
    tg_status err_status; /* of err (graph_error_status) */
    /* The target (graph/target.h) the -O3 layout pass laid the graph out
     * for ("cpu avx2"; interned), or NULL when it has not run: the
     * .tgraph keeps it, and replay_compile re-plans the layout for its
     * backend's target when they differ. */
    const char *target;
};

/*
 * Makes room for at least need entries in array a of g (committing more
 * of its reservation; nothing moves).  TG_OK, or TG_ERR_NOMEM with a
 * message naming the list (out of memory, or need past its limit); g is
 * unchanged and usable either way.
 */
tg_status graph_grow_array(graph *g, graph_array a, int64_t need);
/* Zeroes the first n entries of array a (committed by graph_grow_array):
 * for a reader that fills a fresh graph's array in place and must find
 * unfilled entries zero.  Costs nothing where the pages are fresh. */
void graph_zero_array(graph *g, graph_array a, int32_t n);
/* The most entries array a of g can hold: its GRAPH_MAX_*, or less where
 * the address space was short when g reserved it. */
int32_t graph_array_limit(const graph *g, graph_array a);

/*
 * n value/provenance ids from the graph's arena (freed with the graph).
 * Node in/out/prov arrays live there: to change a node's arity, point it
 * at a new array from here.  NULL on out of memory.
 */
int32_t *graph_alloc_ids(graph *g, int n);
/* n bytes, 8-byte aligned, from the same arena (attribute structs). */
void *graph_alloc_bytes(graph *g, size_t n);
/* Bytes the arena holds (every chunk, used or not): it never shrinks
 * before graph_free, so what fills it must grow it at most linearly. */
size_t graph_arena_bytes(const graph *g);

/* Bytes of a value's data (numel * dtype size). */
size_t graph_value_nbytes(const graph_value *v);

#ifdef __cplusplus
}
#endif

#endif
