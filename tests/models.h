/*
 * models.h - small models written with the eager API, shared by the tracer,
 * format and replay tests: an MLP, a conv block and an attention block,
 * with seeded weights.
 */
#ifndef TG_TESTS_MODELS_H
#define TG_TESTS_MODELS_H

#include "eager/eager.h"
#include "graph/graph.h"

enum { MODEL_MLP, MODEL_CONV, MODEL_ATTENTION, MODEL_COUNT };

typedef struct model {
    const char *name;
    eager_tensor *(*forward)(eager_tensor *x, eager_tensor *const *params);
    int nparams;
    eager_tensor *params[8];
    graph_ints input_shape; /* traced input shape; dim 0 is the batch */
} model;

/* Builds model kind with seeded weights (release with model_free). */
model model_make(int kind);
void model_free(model *m);
/* A seeded input for m with the given batch. */
eager_tensor *model_input(const model *m, int64_t batch, uint64_t seed);

/*
 * Traces m on x with dim 0 dynamic ("B"), its params kept as params named
 * p0, p1, ..., its output named "y".  NULL (and a failed CHECK naming the
 * model) if tracing fails.
 */
graph *model_trace(const model *m, eager_tensor *x);

eager_tensor *model_mlp(eager_tensor *x, eager_tensor *const *p);
eager_tensor *model_conv_block(eager_tensor *x, eager_tensor *const *p);
eager_tensor *model_attention(eager_tensor *x, eager_tensor *const *p);

/*
 * relu(x) when sum(x) > 0, else -x: a data-dependent branch, so tracing it
 * records a guard.  model_branchy_line is the line of its data read
 * (tests expect "models.c:LINE model_branchy" in a guard failure).
 */
eager_tensor *model_branchy(eager_tensor *x);
extern const int model_branchy_line;

#endif
