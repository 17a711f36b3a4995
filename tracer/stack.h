/* stack.h - call-stack capture (libunwind) and lazy symbolization. */
#ifndef TG_TRACER_STACK_H
#define TG_TRACER_STACK_H

#include "../graph/graph.h"

/* Most frames one stack may hold. */
#define TRACE_MAX_DEPTH 64

/*
 * Raw return addresses of the current thread's stack, innermost first,
 * starting skip frames above the caller.  Returns the count (0 if libunwind
 * fails).  Cheap: no symbol lookup.
 */
int trace_stack_capture(uint64_t *ips, int max, int skip);

/*
 * Fills func/offset of every frame in g->frames, looking each distinct
 * address up once (cached in a hash table for the call).  Frames of
 * unknown functions keep func NULL.
 */
tg_status trace_stack_symbolize(graph *g);

#endif
