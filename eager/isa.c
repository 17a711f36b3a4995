/*
 * isa.c - picks the kernel set (isa.h) when the library loads: the highest
 * level this CPU and OS support, or the lower one TG_CPU names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eager.h"
#include "isa.h"

/* Until the constructor runs (and in a native build, for good): the
 * library's own set, which every x86-64 the build targets can run. */
const eager_isa *eager_isa_active = &eager_isa_base;
const eager_kernel_fn *eager_kernels = eager_isa_base.kernels;

#ifdef TG_ISA_MULTI
static int cpu_level(void)
{
    __builtin_cpu_init();
#if defined(__clang__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd"))
        return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
        return 1;
#else
    /* GCC checks the OS saves the wider registers (XGETBV) too. */
    if (__builtin_cpu_supports("x86-64-v4"))
        return 2;
    if (__builtin_cpu_supports("x86-64-v3"))
        return 1;
#endif
    return 0;
}
#endif

__attribute__((constructor)) static void isa_pick(void)
{
    const char *want = getenv("TG_CPU");
    if (want && !*want)
        want = NULL;
#ifdef TG_ISA_MULTI
    static const eager_isa *const sets[] = {&eager_isa_base, &eager_isa_avx2, &eager_isa_avx512};
    int have = cpu_level(), level = have;
    if (want) {
        int w = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(want, sets[i]->name) == 0)
                w = i;
        if (w < 0)
            fprintf(stderr, "tracegraph: TG_CPU=%s is not a kernel level (baseline, avx2, "
                            "avx512); using %s\n", want, sets[have]->name);
        else if (w > have)
            fprintf(stderr, "tracegraph: TG_CPU=%s: this CPU supports up to %s; using %s\n",
                    want, sets[have]->name, sets[have]->name);
        else
            level = w;
    }
    eager_isa_active = sets[level];
    eager_kernels = sets[level]->kernels;
#else
    if (want && strcmp(want, eager_isa_base.name) != 0)
        fprintf(stderr, "tracegraph: TG_CPU=%s ignored: this library was built with one kernel "
                        "set (%s, TG_NATIVE)\n", want, eager_isa_base.name);
#endif
}

const char *eager_cpu_level(void) { return eager_isa_active->name; }
