/* stack.h - call-stack capture (libunwind) and lazy symbolization. */
#ifndef TG_TRACER_STACK_H
#define TG_TRACER_STACK_H

#include "../graph/graph.h"
#include "../graph/graph_impl.h"

/* Most frames one stack may hold. */
#define TRACE_MAX_DEPTH 64

/*
 * Raw return addresses of the current thread's stack, innermost first,
 * starting skip frames above the caller.  Returns the count (0 if libunwind
 * fails).  Cheap: no symbol lookup.
 */
int trace_stack_capture(uint64_t *ips, int max, int skip);

/*
 * Like trace_stack_capture, and also the stack address where each return
 * address is stored, so a later call can check cheaply that it runs on the
 * same call path.  Used on cache misses.
 */
int trace_stack_capture_slots(uint64_t *ips, uint64_t *slots, int max);

/*
 * Nonzero if every slot (but the first: the capture call itself) still
 * holds its return address: the stack captured there is the stack now.  Only valid on the thread that
 * captured it, from a frame at the same address as at capture (the slots
 * then lie in live frames above it).
 */
int trace_stack_unchanged(const uint64_t *ips, const uint64_t *slots, int n);

/*
 * Fills func/offset of every frame in g->frames, looking each distinct
 * address up once (cached in a hash table for the call).  Frames of
 * unknown functions keep func NULL.
 */
tg_status trace_stack_symbolize(graph *g);
/* Drops the process-wide symbol cache, so the next symbolize looks every
 * address up again (tests walk its allocations with a cold cache). */
void trace_stack_forget(void);

#endif
