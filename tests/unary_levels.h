/* unary_levels.h - test_unary's checks compiled for a CPU level of their
 * own (unary_avx2.c, unary_avx512.c). */
#ifndef TG_TESTS_UNARY_LEVELS_H
#define TG_TESTS_UNARY_LEVELS_H

#include <stdint.h>

typedef float (*unary_scalar_fn)(float);

/* vmath.h's scalar function of an op (by name) as the avx2 / avx512
 * kernel sets compute it. */
unary_scalar_fn unary_avx2_scalar(const char *name);
unary_scalar_fn unary_avx512_scalar(const char *name);
/* vmath512.h against vmath.h, bit for bit, over v[0..n). */
void unary_avx512_same_bits(const float *v, int64_t n);

#endif
