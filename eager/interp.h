/*
 * interp.h - the reference interpreter: runs a graph node by node through
 * the eager dispatcher and kernels.  Slow and simple on purpose; it is the
 * oracle every later stage (optimizer, formats, replay) is checked against.
 */
#ifndef TG_EAGER_INTERP_H
#define TG_EAGER_INTERP_H

#include "../graph/graph.h"
#include "eager.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eager_interp_report {
    int guard_warnings;       /* warn-policy guards whose value changed */
    char first_warning[1024]; /* the first one's message */
} eager_interp_report;

/*
 * Runs g on inputs[0..nin) (signature order; dynamic dims may differ from
 * the traced sizes, static ones may not) and writes g->noutputs new
 * references to outputs (the caller releases them).  Guards are checked as
 * their values are computed: a strict guard that fails stops the run with
 * TG_ERR_GUARD and a message naming the read's call site.  report may be
 * NULL.  Errors go to the eager error; node errors name the node's site.
 * Hooks are off while it runs (an interpreted graph is not re-traced).
 */
TG_API tg_status eager_interpret(const graph *g, eager_tensor *const *inputs, int nin,
                                 eager_tensor **outputs, int nout,
                                 eager_interp_report *report);

#ifdef __cplusplus
}
#endif

#endif
