/*
 * isa.h - the CPU kernels, one set per instruction-set level.
 *
 * The kernel sources (eager/kernels_*.c, ew_bcast.c and isa_table.c,
 * listed in CMakeLists.txt as TG_KERNEL_SOURCES) are compiled once per
 * level of the portable build: at the baseline (x86-64, SSE2: what the
 * rest of the library is built for), for x86-64-v3 (AVX2, FMA) and for
 * x86-64-v4 (AVX-512 F/BW/CD/DQ/VL).  Each copy is one object whose only
 * global symbol is its eager_isa table (the build localizes the rest), so
 * the copies never clash.  eager/isa.c picks the highest level the CPU
 * and the OS support when the library loads, unless TG_CPU asks for a
 * lower one, and every caller reaches the kernels through that table:
 * eager_kernels[op] and eager_isa_active->post_apply.
 *
 * A native build (TG_NATIVE=ON: -march=native everywhere) has one set,
 * "native".  So does a build without TG_ISA_MULTI (the fuzz build).
 */
#ifndef TG_EAGER_ISA_H
#define TG_EAGER_ISA_H

#include "dnnl_util.h"
#include "kernel.h"

typedef struct eager_isa {
    const char *name; /* "baseline", "avx2", "avx512" or "native" */
    eager_kernel_fn kernels[GRAPH_OP_COUNT];
    void (*post_apply)(float *y, int64_t n, const graph_ints *post, graph_post_prm prm,
                       const float *res, int nthreads);
} eager_isa;

/* The set in use: chosen before main() runs (a constructor in isa.c). */
extern const eager_isa *eager_isa_active;

/* The set built with the library's own flags (isa_table.c in tg_obj). */
extern const eager_isa eager_isa_base;
#ifdef TG_ISA_MULTI
extern const eager_isa eager_isa_avx2;   /* tg_kern_avx2.o */
extern const eager_isa eager_isa_avx512; /* tg_kern_avx512.o */
#endif

#endif
