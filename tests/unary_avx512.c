/*
 * unary_avx512.c - test_unary's checks of the AVX-512 kernel set, compiled
 * for x86-64-v4 (CMakeLists.txt) so vmath.h's scalar functions here are
 * the ones the avx512 kernels inline, and vmath512.h exists.  Called only
 * when the CPU has AVX-512 (test_unary.c checks first).
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "eager/vmath.h"
#include "eager/vmath512.h"
#include "unary_levels.h"

#if !defined(VM512)
#error "unary_avx512.c must be compiled with AVX-512 (CMakeLists.txt)"
#endif

#define UNARY_SCALAR_FN unary_avx512_scalar
#include "unary_scalar.inc"

/* vmath512.h's exp, sigmoid and tanh give vmath.h's bits (NaN for NaN)
 * over the sweep, 16 lanes at a time, with every lane position used. */
void unary_avx512_same_bits(const float *v, int64_t n)
{
    static const struct {
        const char *name;
        float (*scalar)(float);
        __m512 (*vec)(__m512);
    } fns[] = {{"exp", vm_expf, vm512_expf},
               {"sigmoid", vm_sigmoidf, vm512_sigmoidf},
               {"tanh", vm_tanhf, vm512_tanhf}};
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
        long diff = 0;
        float first = 0;
        for (int64_t i = 0; i + 16 <= n; i += 13) { /* overlapping, shifting lanes */
            _Alignas(64) float out[16];
            _mm512_store_ps(out, fns[k].vec(_mm512_loadu_ps(v + i)));
            for (int j = 0; j < 16; j++) {
                float want = fns[k].scalar(v[i + j]);
                if (vm_asuint(want) != vm_asuint(out[j]) && !(isnan(want) && isnan(out[j])) &&
                    diff++ == 0)
                    first = v[i + j];
            }
        }
        CHECK_MSG(diff == 0, "vm512 %s differs from vm_%s at %ld points, first %a",
                  fns[k].name, fns[k].name, diff, first);
    }
}
