/*
 * philox.h - the Philox4x32-10 counter-based generator (Salmon, Moraes,
 * Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011),
 * and how tracegraph's random ops read it.  Header-only (static inline):
 * the kernels of every CPU level (eager/kernels_train.c) and the tests use
 * the same code.
 *
 * One block: a 128-bit counter (4 words) and a 64-bit key (2 words) give
 * 4 words through 10 rounds; each round multiplies words 0 and 2 by
 * PHILOX_M0 / PHILOX_M1 (64-bit products split in high and low halves)
 * and mixes the halves with words 1 and 3 and the key, and the key is
 * bumped by the Weyl constants PHILOX_W0 / PHILOX_W1 between rounds.
 * tests/test_train_ops.c checks it against Random123's known answers.
 *
 * The stream of a generator {seed, offset}: key = seed (low word first),
 * word w of the stream = word w % 4 of the block at counter w / 4 (the
 * counter's low 64 bits, low word first; its high 64 bits 0).  Draw i of
 * a random op is word offset + i; a uniform float in [0, 1) is its top 24
 * bits times 2^-24 (every such float is exact).
 */
#ifndef TG_EAGER_PHILOX_H
#define TG_EAGER_PHILOX_H

#include <stdint.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* out = Philox4x32-10(ctr, key). */
static inline void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The block of a generator's stream at counter block (words 4 block ..
 * 4 block + 3). */
static inline void philox_block(uint64_t seed, uint64_t block, uint32_t out[4])
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0};
    philox4x32_10(ctr, key, out);
}

/* Word w of the stream as a uniform float in [0, 1): top 24 bits. */
static inline float philox_uniform(uint32_t word)
{
    return (float)(word >> 8) * 0x1p-24f;
}

/*
 * Words wb .. wb + 63 of the stream (wb a multiple of 4; word w is word
 * w & 3 of block w >> 2, the word numbers wrapping modulo 2^64 as a
 * scalar walk does) into out[64]: 16 blocks at once, each round a loop
 * over the 16 lanes that the compiler vectorizes (32x32 -> 64-bit
 * products), so the same bits as philox_block 16 times.
 */
static inline void philox_words64(uint64_t seed, uint64_t wb, uint32_t out[64])
{
    uint32_t c0[16], c1[16], c2[16], c3[16];
    for (int l = 0; l < 16; l++) {
        uint64_t blk = (wb + 4u * (uint64_t)l) >> 2;
        c0[l] = (uint32_t)blk;
        c1[l] = (uint32_t)(blk >> 32);
        c2[l] = 0;
        c3[l] = 0;
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
#pragma omp simd
        for (int l = 0; l < 16; l++) {
            uint64_t p0 = (uint64_t)PHILOX_M0 * c0[l], p1 = (uint64_t)PHILOX_M1 * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1;
            c3[l] = (uint32_t)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
    }
    for (int l = 0; l < 16; l++) {
        out[4 * l] = c0[l];
        out[4 * l + 1] = c1[l];
        out[4 * l + 2] = c2[l];
        out[4 * l + 3] = c3[l];
    }
}

#endif
