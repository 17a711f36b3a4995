/*
 * cpu_caps.h - what oneDNN offers on this CPU, for the tests whose expected
 * graph structure depends on it.  -O3's layout pass blocks a conv only
 * where oneDNN has a JIT kernel for the blocked form (optimize/layout.c
 * asks it, through the CPU target): blocks of 16 channels at AVX-512, of
 * 8 at AVX2 and SSE4.1 (oneDNN's nChw16c / nChw8c kernels), so `make
 * test`'s three CPU levels all block; Winograd, and the bit-for-bit
 * agreement of a plan's packed GEMM with eager's, need AVX-512.
 */
#ifndef TG_TESTS_CPU_CAPS_H
#define TG_TESTS_CPU_CAPS_H

#include <oneapi/dnnl/dnnl.h>

static inline int test_isa_has(dnnl_cpu_isa_t want)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)want) == (unsigned)want;
}

/* 1 when oneDNN runs at least avx512_core: Winograd has JIT kernels. */
static inline int test_avx512(void) { return test_isa_has(dnnl_cpu_isa_avx512_core); }

/* 1 when oneDNN has blocked JIT convs (SSE4.1 and up): -O3 blocks convs. */
static inline int test_blocked_convs(void) { return test_isa_has(dnnl_cpu_isa_sse41); }

/* The channel block of this CPU's blocked convs: 16 at AVX-512, else 8. */
static inline int test_block(void) { return test_avx512() ? 16 : 8; }

#endif
