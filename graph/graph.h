/*
 * graph.h - the graph IR: SSA values and nodes, with provenance and guards.
 *
 * A graph is a list of values and a list of nodes in execution order.
 *   - A value has a type (dtype + shape), a kind (input, param, constant,
 *     or intermediate), an optional name, and per-dim "dynamic" marks that
 *     tie a dim to a named symbol (batch "B").  Params and constants own
 *     their data (64-byte aligned).  An intermediate is produced by exactly
 *     one node (its producer) at one output index.
 *   - A node has an op from ops.def, its attribute struct, input and output
 *     value ids, and provenance: the call sites (file:line func + a
 *     symbolized call stack) of the user code it came from.  A node made by
 *     fusing others keeps all their provenance ids.
 *   - Guards record data reads made while tracing: which value, which
 *     element, the value seen, and where (a provenance id).
 * Value and node ids are indices; nodes flagged GRAPH_NODE_DEAD are skipped
 * by everything and dropped by graph_compact().
 *
 * The graph is opaque: it is built with the graph_add_* functions and read
 * with the accessors under "Reading a graph" below (counts, the i-th
 * node's op, inputs, outputs and attributes, the v-th value's type, kind,
 * name and data, the signature).  Nothing in a graph moves once added:
 * what an accessor returns (a type, an id array, data) stays valid and
 * unchanged across later additions, until graph_free; graph_compact and
 * graph_toposort renumber ids, and the optimizer's passes rewrite nodes.
 * A graph holds at most GRAPH_MAX_VALUES values and GRAPH_MAX_NODES
 * nodes; an addition past that fails with TG_ERR_NOMEM.
 *
 *   // example (given: const graph *g)
 *   for (int32_t i = 0; i < graph_node_count(g); i++) {
 *       if (graph_node_flags(g, i) & GRAPH_NODE_DEAD)
 *           continue;
 *       int nin = 0;
 *       const int32_t *in = graph_node_inputs(g, i, &nin);
 *       char site[128], shape[96] = "-";
 *       if (nin > 0)
 *           graph_shape_str(graph_value_type(g, in[0]), shape, sizeof shape);
 *       printf("node %d: %s of %s at %s\n", (int)i, graph_ops[graph_node_op(g, i)].name,
 *              shape, graph_node_site(g, i, site, sizeof site));
 *   }
 *
 * Ownership: the graph owns everything it points to; strings are interned
 * (graph_intern) and live as long as the graph.  Functions that can fail
 * return a tg_status or -1 and write a message into the graph's error
 * buffer (graph_error()).
 */
#ifndef TG_GRAPH_GRAPH_H
#define TG_GRAPH_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most inputs or outputs one node may have. */
#define GRAPH_MAX_NODE_IO 64
/* Most values and nodes one graph may hold (2^26: each is address space
 * reserved up front, docs/ARCHITECTURE.md "Graph storage"). */
#define GRAPH_MAX_VALUES (1 << 26)
#define GRAPH_MAX_NODES (1 << 26)

typedef struct graph graph;

typedef enum graph_value_kind {
    GRAPH_VALUE_INPUT,
    GRAPH_VALUE_PARAM,
    GRAPH_VALUE_CONST,
    GRAPH_VALUE_INTER,
    /* State of a training step: a value the graph reads at the start of a
     * run and replaces by its next value at the end (graph_add_state).
     * Its data is its value when the graph was made (the initial state);
     * no pass folds, merges or rewrites it, and replay keeps it in the
     * session. */
    GRAPH_VALUE_STATE,
} graph_value_kind;

/* Whether values of kind k carry data (param, const, state). */
static inline int graph_kind_has_data(graph_value_kind k)
{
    return k == GRAPH_VALUE_PARAM || k == GRAPH_VALUE_CONST || k == GRAPH_VALUE_STATE;
}

/* "input", "param", "const", "inter", "state". */
TG_API const char *graph_value_kind_name(graph_value_kind k);

/* A node's flags (graph_node_flags). */
enum {
    GRAPH_NODE_DEAD = 1u << 0,        /* removed: skipped by everything */
    GRAPH_NODE_SPECIALIZED = 1u << 1, /* relied on a concrete dynamic dim */
};

/* One frame of a captured call stack, symbolized at freeze. */
typedef struct graph_frame {
    uint64_t ip;
    const char *func; /* "mlp_forward", or NULL if unknown */
    uint64_t offset;  /* ip - function start */
    const char *file; /* source file, or NULL if no debug info */
    int32_t line;
} graph_frame;

typedef enum graph_guard_kind {
    GRAPH_GUARD_VALUE,    /* eager_item / eager_get */
    GRAPH_GUARD_DECISION, /* eager_bool */
    GRAPH_GUARD_BUFFER,   /* eager_data: the whole buffer */
    GRAPH_GUARD_SIZE,     /* dim `index` of the value is `expect`: a node was
                             specialized on it (graph_guard_specialized) */
} graph_guard_kind;

typedef enum graph_guard_policy {
    GRAPH_GUARD_STRICT, /* replay fails when the value differs */
    GRAPH_GUARD_WARN,   /* replay succeeds and reports the change */
    GRAPH_GUARD_OFF,    /* not checked */
} graph_guard_policy;

typedef struct graph_guard {
    int32_t value; /* the value read */
    graph_guard_kind kind;
    graph_guard_policy policy;
    int64_t index;  /* element read; -1 for a whole buffer */
    double expect;  /* the element's value when traced (VALUE, DECISION) */
    uint64_t hash;  /* BUFFER: graph_hash_bytes of the data when traced */
    int32_t prov;
} graph_guard;

/*
 * NULL arguments: every function below given a NULL graph changes nothing
 * and returns TG_ERR_NULL, -1, NULL or 0 (graph_fail returns its status);
 * a NULL type, name, guard or id array that a call needs is an error of
 * the graph (TG_ERR_NULL or TG_ERR_ARG, graph_error says which).
 */

/* A new empty graph; NULL on out of memory. */
TG_API graph *graph_new(const char *name);
/* Frees g and everything it owns. NULL is a no-op. */
TG_API void graph_free(graph *g);
/* A deep copy; NULL on out of memory. */
TG_API graph *graph_clone(const graph *g);
/* The last error message of g. */
TG_API const char *graph_error(const graph *g);
/* The status of that error (TG_OK if none was recorded; NULL: TG_ERR_NULL). */
TG_API tg_status graph_error_status(const graph *g);
/* Formats an error into g->err; returns st. */
TG_API tg_status graph_fail(graph *g, tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Interns a string (len bytes, or NUL-terminated when len < 0). NULL on OOM. */
TG_API const char *graph_intern(graph *g, const char *s, long len);

/* Adds a value of kind (not INTER); returns its id or -1. */
TG_API int32_t graph_add_value(graph *g, graph_value_kind kind, const graph_type *t,
                               const char *name);
/* Copies nbytes of data into a param/const value (must match its type). */
TG_API tg_status graph_set_data(graph *g, int32_t v, const void *data, size_t nbytes);
/*
 * Pairs state value v (kind GRAPH_VALUE_STATE, its name the state's) with
 * next, the value it holds at the end of a run (next == v: the run does
 * not change it).  Both have the same type.  TG_OK, or an error naming
 * what was wrong.
 */
TG_API tg_status graph_add_state(graph *g, int32_t v, int32_t next);
/* The states, in the order added: count, state value, next value (-1 when
 * out of range). */
TG_API int32_t graph_num_states(const graph *g);
TG_API int32_t graph_state_value(const graph *g, int32_t i);
TG_API int32_t graph_state_next(const graph *g, int32_t i);
/* Adds v to the signature's inputs. */
TG_API tg_status graph_add_input(graph *g, int32_t v);
/* Adds an output (v under name; graph_verify rejects duplicate names). */
TG_API tg_status graph_add_output(graph *g, int32_t v, const char *name);
/* Adds (or finds) a dynamic dim symbol; returns its index or -1. */
TG_API int32_t graph_add_symbol(graph *g, const char *name, int64_t traced);

/*
 * Appends a node: runs shape inference on the inputs' types and creates
 * its output values (ids written to out_ids if not NULL).  attrs may be
 * NULL for defaults.  Returns the node id or -1 (message in graph_error,
 * naming the op, the input shapes and the reason).
 */
TG_API int32_t graph_add_node(graph *g, graph_op op, const int32_t *in, int nin,
                              const void *attrs, int32_t *out_ids, int max_out);
/*
 * Appends a node whose output types the caller already knows (the tracer,
 * which has just run the op); skips inference (graph_verify checks them).
 * prov: its first provenance id, or -1.
 */
TG_API int32_t graph_add_node_typed(graph *g, graph_op op, const int32_t *in, int nin,
                                    const void *attrs, const graph_type *out_types,
                                    int nout, int32_t *out_ids, int max_out, int32_t prov);
/* Makes room for at least nvalues values and nnodes nodes (commits memory
 * in place; nothing moves).  Past GRAPH_MAX_VALUES or GRAPH_MAX_NODES, or
 * out of memory: TG_ERR_NOMEM, the graph unchanged. */
TG_API tg_status graph_reserve(graph *g, int32_t nvalues, int32_t nnodes);
/* Adds provenance; returns its id or -1. frames may be NULL (n = 0). */
TG_API int32_t graph_add_prov(graph *g, const char *file, int line, const char *func,
                              const graph_frame *frames, int nframes);
/* Appends a provenance id to a node (amortized O(1): the list doubles). */
TG_API tg_status graph_node_add_prov(graph *g, int32_t node, int32_t prov);
/* Makes room for at least need provenance ids at node's list. */
TG_API tg_status graph_node_reserve_prov(graph *g, int32_t node, int32_t need);
/*
 * Drops repeated ids from node's provenance list, keeping the first of
 * each in order (O(k log k) for k ids).
 */
TG_API tg_status graph_node_dedup_prov(graph *g, int32_t node);
/* Adds a guard; returns its index or -1. */
TG_API int32_t graph_add_guard(graph *g, const graph_guard *guard);

/*
 * Checks guard gd against the guarded value's data now (type: its type
 * now).  Returns 0 if it holds (or its policy is off), 1 if a warn-policy
 * guard changed, 2 if a strict guard failed; for 1 and 2 msg names the
 * read's call site and both values.  NULL g, gd, type (or data of a
 * non-empty type): 2.
 */
TG_API int graph_guard_check(const graph *g, const graph_guard *gd,
                             const graph_type *type, const void *data, char *msg,
                             size_t len);

/* FNV-1a 64 of bytes (stable across machines). */
TG_API uint64_t graph_hash_bytes(const void *p, size_t n);
/* "model.c:42 mlp_forward" for a provenance id (buf always terminated). */
TG_API const char *graph_prov_str(const graph *g, int32_t prov, char *buf,
                                  size_t len);
/* Number of live (not dead) nodes. */
TG_API int32_t graph_live_nodes(const graph *g);

/*
 * Reading a graph.  Values are 0 .. graph_value_count(g) - 1, nodes
 * 0 .. graph_node_count(g) - 1 (dead ones included: check
 * graph_node_flags), and so on for the signature's lists.  Given a NULL
 * g or an id out of range, counts are 0, ids and codes -1, pointers NULL;
 * nothing is recorded in graph_error.  Pointers returned point into the
 * graph (read-only) and stay valid until graph_free.
 */
TG_API const char *graph_name(const graph *g);
TG_API int32_t graph_value_count(const graph *g);
TG_API int32_t graph_node_count(const graph *g);
TG_API int32_t graph_input_count(const graph *g);
TG_API int32_t graph_output_count(const graph *g);
TG_API int32_t graph_symbol_count(const graph *g);
TG_API int32_t graph_guard_count(const graph *g);

/* Node i: its op (a graph_op, -1 for no node) and flags (GRAPH_NODE_*). */
TG_API int graph_node_op(const graph *g, int32_t i);
TG_API uint32_t graph_node_flags(const graph *g, int32_t i);
/* Its input and output value ids; *n (if not NULL) gets how many. */
TG_API const int32_t *graph_node_inputs(const graph *g, int32_t i, int *n);
TG_API const int32_t *graph_node_outputs(const graph *g, int32_t i, int *n);
/* Its attribute struct (graph_<op>_attrs, op.h); NULL for an op without. */
TG_API const void *graph_node_attrs(const graph *g, int32_t i);
/* Its first call site, "model.c:42 mlp_forward" (graph_prov_str), or
 * "unknown site"; buf always terminated. */
TG_API const char *graph_node_site(const graph *g, int32_t i, char *buf, size_t len);

/* Value v: its type (dims as traced), kind (a graph_value_kind, -1 for no
 * value), name (NULL if none), data (params and constants; NULL if none
 * or elided: the data of numel elements of its dtype). */
TG_API const graph_type *graph_value_type(const graph *g, int32_t v);
TG_API int graph_value_kind_of(const graph *g, int32_t v);
TG_API const char *graph_value_name(const graph *g, int32_t v);
TG_API const void *graph_value_data(const graph *g, int32_t v);
/* The node producing v (an intermediate) and its output slot there
 * (*out_index, if not NULL); -1 for other values. */
TG_API int32_t graph_value_producer(const graph *g, int32_t v, int *out_index);
/* The symbol (graph_symbol_at) naming dim d of v when it is dynamic, or -1. */
TG_API int graph_value_dim_symbol(const graph *g, int32_t v, int d);

/* The signature: the k-th input's value id; the k-th output's value id
 * and name (*name, if not NULL); the s-th dynamic-dim symbol's name and
 * traced size (*traced, if not NULL); the k-th guard. */
TG_API int32_t graph_input_at(const graph *g, int32_t k);
TG_API int32_t graph_output_at(const graph *g, int32_t k, const char **name);
TG_API const char *graph_symbol_at(const graph *g, int32_t s, int64_t *traced);
TG_API const graph_guard *graph_guard_at(const graph *g, int32_t k);
/* The target the -O3 layout pass laid g out for ("cpu avx2"), or NULL
 * when it has not run (graph/target.h). */
TG_API const char *graph_layout_target(const graph *g);

/*
 * Rewrites every string the graph holds (its name, value, output and
 * symbol names, provenance and frame files and functions) through fn,
 * which writes the replacement into buf (len bytes, 4 * strlen(s) + 8)
 * and returns 1, or returns 0 to keep s (s is never NULL).  A
 * replacement is interned in g.  For a tool that must print a file's
 * strings safely (`tracegraph info` escapes control bytes).  TG_OK, or
 * TG_ERR_NULL / TG_ERR_NOMEM with the message in graph_error.
 */
TG_API tg_status graph_map_strings(graph *g,
                                   int (*fn)(void *ctx, const char *s, char *buf, size_t len),
                                   void *ctx);

/*
 * Drops dead nodes and values no live node, input or output uses, and
 * renumbers ids.  Provenance, frames and guards stay; a live node's
 * provenance list loses repeated ids (graph_node_dedup_prov).
 */
TG_API tg_status graph_compact(graph *g);

/*
 * Marks which dims of intermediates follow the dynamic-dim symbols of the
 * inputs (by re-running inference with each symbol at a probe size): a
 * dim equal to one symbol gets dyn and sym, a dim that changes some other
 * way (2*B after a concat, B*H after a reshape) dder, and its probe size
 * keeps flowing to the nodes that read it (a reshape of [B*H, T, 8] back
 * to [-1, H*T*8] follows B again).  Flags nodes that only work at the
 * traced sizes (their inference fails or changes rank at the probe sizes)
 * GRAPH_NODE_SPECIALIZED.  Resets the marks of every intermediate first.
 * g NULL: TG_ERR_NULL.
 */
TG_API tg_status graph_propagate_dynamic(graph *g);

/*
 * The symbols (bit s) that live node i, flagged GRAPH_NODE_SPECIALIZED,
 * fixed at their traced sizes: those of its inputs' dynamic dims, or
 * every symbol when an input has a derived dim or none is dynamic (a
 * constant computed from a traced size).  0 for a node not flagged.
 */
TG_API uint64_t graph_node_fixed_syms(const graph *g, int32_t i);

/*
 * Makes the specialized nodes' limit enforced: for each symbol some live
 * specialized node fixed, a strict GRAPH_GUARD_SIZE guard on the first
 * input dim named by it, expecting the traced size, with the provenance
 * of the first such node.  A run that gives the symbol another size then
 * fails, naming that node, where it returned wrong values (a gather with
 * indices computed at the traced size infers at every size).  Guards are
 * graph data: they outlive the optimizer's rewrites and a .tgraph save.
 * Symbols guarded already are skipped.  g NULL: TG_ERR_NULL.
 */
TG_API tg_status graph_guard_specialized(graph *g);

/*
 * The same for the symbols syms (bit s) with provenance prov: what
 * graph_guard_specialized adds per node, for a caller that knows a value
 * fixed at traced sizes without a node (an ONNX graph output that is a
 * constant computed from Shape).  g NULL: TG_ERR_NULL.
 */
TG_API tg_status graph_guard_syms(graph *g, uint64_t syms, int32_t prov);

/*
 * Reorders live nodes so that each comes after the producers of its
 * inputs, keeping the existing order where it already holds (passes append
 * new nodes at the end and call this).  Fails if there is a cycle.
 */
TG_API tg_status graph_toposort(graph *g);

/*
 * Checks the graph: ids in range, SSA (each input defined before use, one
 * producer per intermediate), every node's output types equal a fresh
 * inference, input/output lists valid, data present and sized where
 * required (elided constants allowed when allow_elided), guards valid.
 * Returns TG_OK or an error whose message names the node, its op and its
 * call site; g NULL: TG_ERR_NULL.  Input names must be present and
 * unique too (replay matches inputs by name).
 */
TG_API tg_status graph_verify(graph *g, int allow_elided);

/*
 * A readable summary of a frozen graph: node count by op, inputs, params,
 * states (a training step's: whether the step updates each), outputs,
 * dynamic dims, and every guard (kind, value, call site): the
 * data-dependent control flow the trace baked in.  Writes to f (nothing
 * when g or f is NULL).
 */
TG_API void trace_summary(const graph *g, FILE *f);

#ifdef __cplusplus
}
#endif

#endif
