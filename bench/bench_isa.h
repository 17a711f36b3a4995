/*
 * bench_isa.h - where a benchmark ran (issue 30): the CPU's model name and
 * the instruction sets in use, for every row a benchmark writes.
 *
 *   cpu_kernels  tracegraph's CPU kernel set (eager_cpu_level(): avx512,
 *                avx2, baseline or native; TG_CPU names a lower one)
 *   onednn_isa   oneDNN's (eager_dnnl_isa_name(): avx2, avx512_core, ...;
 *                ONEDNN_MAX_CPU_ISA caps it)
 *
 * `TG_CPU=avx2 ONEDNN_MAX_CPU_ISA=AVX2` runs the whole AVX2 path on an
 * AVX-512 machine; both names then say avx2.
 */
#ifndef TG_BENCH_ISA_H
#define TG_BENCH_ISA_H

#include <stdio.h>
#include <string.h>

#include "eager/dnnl_util.h"
#include "eager/eager.h"

typedef struct bench_isa {
    char cpu[256];           /* /proc/cpuinfo's model name, "?" if unknown */
    const char *cpu_kernels; /* eager_cpu_level() */
    const char *onednn_isa;  /* eager_dnnl_isa_name() */
} bench_isa;

static inline void bench_isa_get(bench_isa *b)
{
    char line[4096];
    snprintf(b->cpu, sizeof b->cpu, "?");
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && strncmp(line, "model name", 10) == 0) {
            snprintf(b->cpu, sizeof b->cpu, "%s", colon + 1 + (colon[1] == ' '));
            b->cpu[strcspn(b->cpu, "\n")] = 0;
            break;
        }
    }
    if (f)
        fclose(f);
    b->cpu_kernels = eager_cpu_level();
    b->onednn_isa = eager_dnnl_isa_name();
}

#endif
