/*
 * cpu_caps.h - what oneDNN offers on this CPU, for the tests whose expected
 * graph structure depends on it.  -O3's layout pass blocks a conv only
 * where oneDNN has a JIT kernel for the blocked form (optimize/layout.c
 * asks it), and those (and Winograd) need AVX-512: on a CPU without it
 * (ONEDNN_MAX_CPU_ISA=AVX2 emulates one) the pass rightly keeps convs
 * plain, and the tests check that instead.
 */
#ifndef TG_TESTS_CPU_CAPS_H
#define TG_TESTS_CPU_CAPS_H

#include <oneapi/dnnl/dnnl.h>

/* 1 when oneDNN runs at least avx512_core: blocked 16-channel convs and
 * Winograd have JIT kernels. */
static inline int test_blocked_convs(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core) ==
           (unsigned)dnnl_cpu_isa_avx512_core;
}

#endif
