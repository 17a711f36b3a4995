/*
 * grad.h - gradient rules, one per op of ops.def, next to the registry.
 *
 * graph/grad.def holds one line per op of ops.def, in its order:
 *
 *   GRAD(name, diff, saves_in, saves_out)  a rule, grad_rule_<name>
 *                                          (graph/grad_rules*.c)
 *   NODIFF(name, why)                      not differentiable
 *   NORULE(name, why)                      differentiable, no rule yet
 *
 * diff     GRAD_IN(i) bits: the inputs a gradient flows to (an index, a
 *          mask or a condition input is left out); GRAD_IN_ALL for every
 *          input of a variadic op.  Integer and bool values never carry a
 *          gradient, whatever the mask says.
 * saves_in, saves_out
 *          GRAD_IN(i) / GRAD_OUT(i) bits: the forward values the rule reads.
 *          A caller keeps exactly these from the forward; the rule sees
 *          NULL for the others (their types are always there).
 *
 * A rule is written with ordinary registry ops through a grad_builder:
 * the eager builder (eager/grad_eager.c) runs each op at once on eager
 * tensors, the graph builder (graph/grad_graph.c) appends nodes to a
 * graph, so the backward of a traced graph is itself a graph of registry
 * ops.  A line missing or out of ops.def's order stops the build
 * (graph/grad_table.c); tests/test_grad.c checks every rule against
 * central finite differences.
 */
#ifndef TG_GRAPH_GRAD_H
#define TG_GRAPH_GRAD_H

#include <stdint.h>

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A value as the builder knows it (an eager tensor, a graph value id);
 * NULL: an earlier error (or, as a gradient, zero). */
typedef struct grad_value *grad_v;

typedef struct grad_builder grad_builder;
struct grad_builder {
    /* Applies op to in[0..nin) (attrs NULL: defaults); its first output,
     * or NULL (error recorded; a NULL input gives NULL, no new error). */
    grad_v (*op)(grad_builder *b, graph_op op, const grad_v *in, int nin,
                 const void *attrs);
    /* The same for an op of several outputs: its outputs into
     * out[0..max_out); returns how many, or -1 (error recorded; a NULL
     * input gives -1, no new error). */
    int (*opn)(grad_builder *b, graph_op op, const grad_v *in, int nin, const void *attrs,
               grad_v *out, int max_out);
    /* A constant of dtype dt and shape (numel elements of data, in dt). */
    grad_v (*constant)(grad_builder *b, graph_dtype dt, const graph_ints *shape,
                       const void *data);
    /* The type of v (never NULL for a live v). */
    const graph_type *(*type)(grad_builder *b, grad_v v);
    /* Records an error (the rule's reason); returns st. */
    tg_status (*fail)(grad_builder *b, tg_status st, const char *msg);
    void *ud;
};

/* What a rule gets. */
typedef struct grad_ctx {
    graph_op op;
    const void *attrs; /* never NULL for an op with attributes */
    int nin, nout;
    const graph_type *in_type;  /* nin */
    const graph_type *out_type; /* nout */
    const grad_v *in;  /* the saved inputs; NULL where not saved */
    const grad_v *out; /* the saved outputs; NULL where not saved */
    const grad_v *gout; /* each output's gradient; NULL: zero (at least one is given) */
    const unsigned char *need; /* need[i]: input i's gradient is wanted */
    grad_v *gin; /* the rule sets gin[i] for each needed i */
} grad_ctx;

typedef tg_status (*grad_rule_fn)(grad_builder *b, const grad_ctx *c);

typedef enum grad_kind {
    GRAD_KIND_RULE,   /* has a rule */
    GRAD_KIND_NODIFF, /* not differentiable: no gradient flows through it */
    GRAD_KIND_NORULE, /* differentiable, but no rule yet: a backward through it fails */
} grad_kind;

#define GRAD_IN(i) (1u << (i))
#define GRAD_OUT(i) (1u << (i))
#define GRAD_IN_ALL 0xffffffffu

typedef struct grad_info {
    grad_kind kind;
    uint32_t diff;      /* differentiable inputs (GRAD_IN bits) */
    uint32_t saves_in;  /* inputs the rule reads */
    uint32_t saves_out; /* outputs the rule reads */
    grad_rule_fn rule;  /* NULL unless GRAD_KIND_RULE */
    const char *why;    /* NODIFF / NORULE: the reason */
} grad_info;

/* One entry per op, in ops.def order (graph/grad_table.c). */
extern const grad_info graph_grads[GRAPH_OP_COUNT];

/* "rule", "not differentiable" or "no rule yet". */
const char *grad_kind_name(grad_kind k);

/* Whether input i of op carries a gradient (by the table, given its dtype). */
int grad_input_diff(graph_op op, int i, graph_dtype dt);
/* Whether a backward must ask op for input i's gradient: grad_input_diff,
 * or any f32 input of a NORULE op (so that grad_apply fails, naming it). */
int grad_input_flows(graph_op op, int i, graph_dtype dt);

/*
 * Runs op's rule: c->gin[i] for each needed input.  Checks the kind first:
 * NODIFF or NORULE op (or a needed input the table marks as not
 * differentiable) fails through b->fail with the op's name and the reason.
 * Sets every c->gin[i] to NULL first.
 */
tg_status grad_apply(grad_builder *b, const grad_ctx *c);

/* The graph builder: appends nodes to g, each with provenance prov (-1:
 * none; a caller may change s->prov between rules).  s holds its state and
 * lives as long as b.  Values are ids; grad_graph_id / grad_graph_v
 * convert.  Errors go to graph_error(g). */
typedef struct grad_graph_state {
    struct graph *g;
    int32_t prov;
} grad_graph_state;
void grad_graph_builder(grad_builder *b, grad_graph_state *s, struct graph *g,
                        int32_t prov);
int32_t grad_graph_id(grad_v v);
grad_v grad_graph_v(int32_t id);

/*
 * Appends the backward of g's nodes to g: the gradient of the scalar loss
 * value with respect to each wrt[i] written to grads[i] (a value id, or -1
 * where no path leads from wrt[i] to loss).  The seed is a constant 1.
 * Walks the nodes present when called in reverse order (they are in
 * topological order, as the tracer and graph_toposort leave them), saving
 * nothing: every value stays in the graph.  Errors go to graph_error.
 */
tg_status graph_backward(struct graph *g, int32_t loss, const int32_t *wrt,
                         int nwrt, int32_t *grads);

#ifdef __cplusplus
}
#endif

#endif
