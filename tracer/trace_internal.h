/* trace_internal.h - shared between the tracer's files. */
#ifndef TG_TRACER_INTERNAL_H
#define TG_TRACER_INTERNAL_H

#include "trace.h"

/*
 * Works out which dims of which values follow the dynamic-dim symbols of
 * the inputs, by re-running shape inference with every symbol perturbed;
 * flags nodes that only work at the traced sizes GRAPH_NODE_SPECIALIZED.
 */
tg_status trace_propagate_dynamic(graph *g);

#endif
