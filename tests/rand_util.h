/*
 * rand_util.h - the tests' seeded random numbers (SplitMix64) and bitwise
 * float comparison, for tests that share them (test_grad, test_grad_lnrelu,
 * test_train_fuse).  A test sets its sequence's start by defining TU_SEED
 * before including this (each keeps the data it was written against).
 */
#ifndef TG_TESTS_RAND_UTIL_H
#define TG_TESTS_RAND_UTIL_H

#include <stdint.h>
#include <string.h>

#ifndef TU_SEED
#define TU_SEED 0x9e3779b97f4a7c15ull
#endif

static uint64_t tu_state = TU_SEED;

/* The next 64 random bits. */
static inline uint64_t next_u64(void)
{
    uint64_t z = (tu_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static inline double urand(void) { return (double)(next_u64() >> 11) * 0x1p-53; }

/* Whether a[0..n) and b[0..n) have the same bits (+0 and -0 differ, NaN
 * payloads count); the first difference in *at. */
static inline int same_bits(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) {
            *at = i;
            return 0;
        }
    return 1;
}

#endif
