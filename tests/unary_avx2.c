/*
 * unary_avx2.c - vmath.h's scalar functions as the avx2 kernel set inlines
 * them: compiled for x86-64-v3 (CMakeLists.txt), called only when the CPU
 * has it (test_unary.c checks first).
 */
#include <string.h>

#include "eager/vmath.h"
#include "unary_levels.h"

#define UNARY_SCALAR_FN unary_avx2_scalar
#include "unary_scalar.inc"
