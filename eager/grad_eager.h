/*
 * grad_eager.h - the eager builder of the gradient rules (graph/grad.h):
 * each op a rule asks for runs at once through the dispatcher, on eager
 * tensors.
 */
#ifndef TG_EAGER_GRAD_EAGER_H
#define TG_EAGER_GRAD_EAGER_H

#include "../graph/grad.h"
#include "eager.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A builder whose values are eager tensors (grad_v is an eager_tensor *);
 * errors go to the thread's eager error at site.  Tensors it makes join
 * the innermost pool, as any op's do. */
void eager_grad_builder(grad_builder *b, const eager_site *site);

/*
 * Runs op's gradient rule on eager tensors: in[0..nin) and out[0..nout)
 * the forward's inputs and outputs (each given: their types are read; the
 * data only of those graph_grads[op] saves), gout[o] the gradient of output o (NULL:
 * zero; at least one given), need[i] whether input i's gradient is wanted.
 * Writes gin[i] (a new reference the caller releases) for each needed
 * input and NULL elsewhere; the rule's intermediates are freed before it
 * returns.  attrs NULL: the defaults.  Errors (a NODIFF or NORULE op, a
 * rule's refusal) go to the eager error at site.
 */
tg_status eager_op_grad(graph_op op, eager_tensor *const *in, int nin, const void *attrs,
                        eager_tensor *const *out, int nout, eager_tensor *const *gout,
                        const unsigned char *need, eager_tensor **gin,
                        const eager_site *site);

/* The same with the forward's types given apart: in[i] and out[o] may be
 * NULL where the op's rule does not save them (the tape keeps no more). */
tg_status eager_op_grad_typed(graph_op op, const graph_type *in_t,
                              eager_tensor *const *in, int nin, const void *attrs,
                              const graph_type *out_t, eager_tensor *const *out,
                              int nout, eager_tensor *const *gout,
                              const unsigned char *need, eager_tensor **gin,
                              const eager_site *site);

#ifdef __cplusplus
}
#endif

#endif
