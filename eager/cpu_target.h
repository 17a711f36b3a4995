/*
 * cpu_target.h - the CPU as a target (graph/target.h): what the CPU
 * backend (replay/backend_cpu.c) compiles plans for, and what -O3 lays
 * out for when opt_options.target is NULL.  Internal to the library.
 */
#ifndef TG_EAGER_CPU_TARGET_H
#define TG_EAGER_CPU_TARGET_H

#include "../graph/target.h"

/*
 * Fills t with this process's CPU at `threads` threads (< 1: one):
 * named after the ISA oneDNN runs at ("cpu avx2", "cpu avx512_core"),
 * its block the one oneDNN's conv chooses given no layout (format_tag
 * any; asked once per process), its implementations asked of oneDNN
 * (eager_dnnl_impl_of).
 */
void eager_cpu_target(int threads, graph_target *t);
/* Its name alone ("cpu avx2"), without asking oneDNN for the block: cheap. */
void eager_cpu_target_name(char *name, size_t len);

#endif
