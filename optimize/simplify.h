/*
 * simplify.h - internal to the -O1 passes (fold.c, simplify*.c, cse.c):
 * the rewrite state they share, and constant evaluation.
 *
 * A pass walks the nodes in order and, instead of rewiring every use of a
 * replaced value at once (a scan of the whole graph per rewrite), records
 * "value V is now W" in a forwarding map.  Each node resolves its inputs
 * through the map when it is visited, and opt_o1_finish() resolves the rest, so
 * a pass is linear in the graph plus its rewrites.  Use counts follow the
 * map (forwarding V to W moves V's uses to W), so "p has one use" stays
 * exact enough for rules that delete p: counts may be too high (a node
 * left for DCE still counts as a user), never too low.
 *
 * Dynamic dims.  Values created during a pass get their dynamic marks here
 * and not from graph_propagate_dynamic (which the manager runs only after
 * the pass): opt_o1_add_node infers the new node's types at the traced sizes
 * and again with every symbol at a probe size, and names each dim that
 * moves with a symbol.  A replacement is accepted only if it has the
 * replaced value's type at both sizes: a rewrite that holds only at the
 * traced sizes does not fire.
 */
#ifndef TG_OPTIMIZE_SIMPLIFY_H
#define TG_OPTIMIZE_SIMPLIFY_H

#include "opt.h"

typedef struct opt_o1_state {
    graph *g;
    opt_ctx *ctx;
    int32_t *repl;   /* value -> its replacement (itself if none) */
    int32_t *nuses;  /* input slots of live nodes reading each value */
    uint8_t *pinned; /* graph outputs and guarded values */
    int32_t cap;     /* room in the three arrays */
    int64_t bytes0;  /* constant bytes in use when the pass began */
    tg_status st;    /* first error (out of memory), or TG_OK */
} opt_o1_state;

/* Starts a pass over g; TG_ERR_NOMEM on failure (message in ctx->err). */
tg_status opt_o1_init(opt_o1_state *s, graph *g, opt_ctx *ctx);
/*
 * Ends it: resolves every live node's inputs through the map, adds the
 * constant bytes no longer used to ctx->stats->bytes, frees the state.
 * Returns s->st.
 */
tg_status opt_o1_finish(opt_o1_state *s);

/* Makes room in the state for values added to the graph directly (not
 * through opt_o1_add_node / opt_o1_add_const); -1 on out of memory (s->st). */
int opt_o1_grow(opt_o1_state *s);
/* The value v now stands for (follows the forwarding map). */
int32_t opt_o1_find(opt_o1_state *s, int32_t v);
/* Points node's inputs at what they now stand for. */
void opt_o1_resolve_inputs(opt_o1_state *s, int32_t node);
/* Records "from is now to" (from must not be pinned); moves its uses. */
void opt_o1_forward(opt_o1_state *s, int32_t from, int32_t to);
/* Marks node dead and drops its uses of its inputs. */
void opt_o1_kill(opt_o1_state *s, int32_t node);
/* Replaces node's input k by v (in place), keeping the use counts. */
void opt_o1_set_input(opt_o1_state *s, int32_t node, int k, int32_t v);
/* Nonzero if v is a graph output or guarded. */
int opt_o1_pinned(const opt_o1_state *s, int32_t v);
/* Nonzero if any output of node is pinned. */
int opt_o1_node_pinned(const opt_o1_state *s, int32_t node);
/* Uses of v by live nodes. */
int32_t opt_o1_uses(const opt_o1_state *s, int32_t v);
/* The live producer of v, or -1 for inputs, params and constants. */
int32_t opt_o1_producer(const opt_o1_state *s, int32_t v);

/* Same type and the same dynamic dims (named by the same symbols). */
int opt_o1_same_type(const opt_o1_state *s, int32_t a, int32_t b);
/* v's type with each dynamic dim at its symbol's probe size. */
void opt_o1_probe_type(const opt_o1_state *s, int32_t v, graph_type *t);
/*
 * Nonzero if node, with its input k reading v instead, would still make
 * exactly its output types at the traced and the probe sizes.
 */
int opt_o1_rewire_ok(opt_o1_state *s, int32_t node, int k, int32_t v);
/* The same for an operand of type t (pt at the probe sizes). */
int opt_o1_rewire_type_ok(opt_o1_state *s, int32_t node, int k, const graph_type *t,
                          const graph_type *pt);

/*
 * Appends a node (op on in[0..nin), attrs NULL for defaults) if its types
 * can be named: at the probe sizes every output dim either keeps its
 * traced size or follows one symbol.  With expect >= 0 the node must have
 * one output of exactly expect's type and dynamic dims.  Provenance is
 * copied from the nodes prov_from[0..nprov).  Returns the node id, or -1
 * when the node is refused or on error (s->st set).  Output ids in out.
 */
int32_t opt_o1_add_node(opt_o1_state *s, graph_op op, const int32_t *in, int nin,
                        const void *attrs, int32_t expect, const int32_t *prov_from, int nprov,
                        int32_t *out);
/*
 * Whether opt_o1_add_node would accept op on inputs of types it[0..nin) (pt:
 * the same at the probe sizes), without adding anything.
 */
int opt_o1_node_ok(opt_o1_state *s, graph_op op, const graph_type *it, const graph_type *pt,
                   int nin, const void *attrs, int32_t expect);
/* Adds a constant; -1 on error (s->st set). */
int32_t opt_o1_add_const(opt_o1_state *s, const graph_type *t, const void *data);

/*
 * The meaningful bytes of an op's attributes, field by field (a list's
 * entries past its length and struct padding are left out), into buf;
 * returns the length, or -1 if cap is too small.  Equal keys mean equal
 * attributes.
 */
int opt_o1_attrs_key(graph_op op, const void *attrs, unsigned char *buf, size_t cap);
/* Nonzero if two attribute structs of op are equal (by opt_o1_attrs_key). */
int opt_o1_attrs_equal(graph_op op, const void *a, const void *b);

/* Constant with data (not elided). */
int opt_o1_is_const(const opt_o1_state *s, int32_t v);
/*
 * If v is a constant with at least one element, all of them the same
 * bytes (so +0 and -0 differ), 1 and *x = that value (as double).
 */
int opt_o1_const_splat(const opt_o1_state *s, int32_t v, double *x);

/*
 * Evaluates op on constant inputs in[0..nin) with the CPU kernels (hooks
 * off) and adds its results as new constants (ids in out[0..*nout)).
 * Returns TG_OK, or the kernel's error status (reason in err) with nothing
 * added, or TG_ERR_NOMEM.
 */
tg_status opt_fold_eval(graph *g, graph_op op, const int32_t *in, int nin, const void *attrs,
                        int32_t *out, int max_out, int *nout, char *err, size_t errlen);

/*
 * Takes bytes from the call's folding budget (ctx->fold_left, see
 * opt_options.fold_budget) for a constant about to be folded: 1 if they
 * fit (and are taken), 0 if not (nothing taken: do not fold).  No budget
 * (ctx or fold_left NULL): 1.  opt_fold_give gives bytes back (a fold
 * that then failed).
 */
int opt_fold_take(opt_ctx *ctx, size_t bytes);
void opt_fold_give(opt_ctx *ctx, size_t bytes);

/* The rule groups of the simplify pass: 1 if a rule fired, 0 if none,
 * -1 on error (s->st). */
int opt_o1_simplify_arith(opt_o1_state *s, int32_t node);
int opt_o1_simplify_shape(opt_o1_state *s, int32_t node);
int opt_o1_simplify_unary(opt_o1_state *s, int32_t node);
int opt_o1_simplify_bcast(opt_o1_state *s, int32_t node);
int opt_o1_simplify_grad(opt_o1_state *s, int32_t node);

#endif
