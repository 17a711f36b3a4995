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
 * over the 16 lanes, so the same bits as philox_block 16 times.  The
 * portable form; philox_words64 below is the same with AVX-512 or AVX2
 * intrinsics where the kernels' level has them (GCC vectorizes this loop
 * with 64x64-bit multiplies and lane inserts: 1.7 ns a word, against
 * 0.3 with the intrinsics).
 */
static inline void philox_words64_c(uint64_t seed, uint64_t wb, uint32_t out[64])
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


#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
/* lo = a * m mod 2^32 and *hi = (a * m) >> 32 in each of 16 lanes: the
 * even lanes' 64-bit products, then the odd lanes' (shifted down), put
 * back together (m: the multiplier in every 32-bit lane). */
static inline __m512i philox_mulhilo16(__m512i a, __m512i m, __m512i *hi)
{
    __m512i pe = _mm512_mul_epu32(a, m), po = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
    return _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

static inline void philox_words64(uint64_t seed, uint64_t wb, uint32_t out[64])
{
    uint64_t base = wb >> 2; /* block of lane l: (base + l) mod 2^62 */
    __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i blo = _mm512_set1_epi32((int)(uint32_t)base);
    __m512i c0 = _mm512_add_epi32(blo, iota);
    __mmask16 carry = _mm512_cmplt_epu32_mask(c0, blo);
    __m512i bhi = _mm512_set1_epi32((int)(uint32_t)(base >> 32));
    __m512i c1 = _mm512_and_si512(_mm512_mask_add_epi32(bhi, carry, bhi, _mm512_set1_epi32(1)),
                                  _mm512_set1_epi32(0x3fffffff));
    __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
    __m512i m0 = _mm512_set1_epi32((int)PHILOX_M0), m1 = _mm512_set1_epi32((int)PHILOX_M1);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        __m512i hi0, hi1;
        __m512i lo0 = philox_mulhilo16(c0, m0, &hi0), lo1 = philox_mulhilo16(c2, m1, &hi1);
        c0 = _mm512_ternarylogic_epi32(hi1, c1, _mm512_set1_epi32((int)k0), 0x96);
        c2 = _mm512_ternarylogic_epi32(hi0, c3, _mm512_set1_epi32((int)k1), 0x96);
        c1 = lo1;
        c3 = lo0;
    }
    /* lanes to blocks: u_j holds block 4q + j in its 128-bit lane q */
    __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    __m512i v0 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
    __m512i v1 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
    __m512i v2 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
    __m512i v3 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_si512(out, _mm512_shuffle_i32x4(v0, v1, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(v0, v1, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(v2, v3, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(v2, v3, _MM_SHUFFLE(3, 1, 3, 1)));
}
#elif defined(__AVX2__)
static inline __m256i philox_mulhilo8(__m256i a, __m256i m, __m256i *hi)
{
    __m256i pe = _mm256_mul_epu32(a, m), po = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
    return _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}

/* Blocks base .. base + 7 (mod 2^62) into out[32]. */
static inline void philox_words32_avx2(uint64_t seed, uint64_t base, uint32_t *out)
{
    __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    __m256i blo = _mm256_set1_epi32((int)(uint32_t)base);
    __m256i c0 = _mm256_add_epi32(blo, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    /* carry where c0 < blo, unsigned: compared with the sign bits flipped */
    __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(blo, sign), _mm256_xor_si256(c0, sign));
    __m256i c1 = _mm256_and_si256(
        _mm256_sub_epi32(_mm256_set1_epi32((int)(uint32_t)(base >> 32)), carry),
        _mm256_set1_epi32(0x3fffffff));
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    __m256i m0 = _mm256_set1_epi32((int)PHILOX_M0), m1 = _mm256_set1_epi32((int)PHILOX_M1);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        __m256i hi0, hi1;
        __m256i lo0 = philox_mulhilo8(c0, m0, &hi0), lo1 = philox_mulhilo8(c2, m1, &hi1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
    }
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(out + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}

static inline void philox_words64(uint64_t seed, uint64_t wb, uint32_t out[64])
{
    philox_words32_avx2(seed, wb >> 2, out);
    philox_words32_avx2(seed, (wb >> 2) + 8, out + 32);
}
#else
static inline void philox_words64(uint64_t seed, uint64_t wb, uint32_t out[64])
{
    philox_words64_c(seed, wb, out);
}
#endif

#endif
