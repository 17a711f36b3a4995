/*
 * tgraph_common.c - pieces the .tgraph writer and reader share: section
 * names, the dtype code table, error formatting and the XXH64 checksum.
 */
#include <stdio.h>
#include <string.h>

#include "tgraph_impl.h"

const char *format_section_name(uint32_t id)
{
    static const char *const names[FORMAT_NSEC] = {
        "strings", "symbols", "values", "nodes",
        "provenance", "guards", "signature", "constants", "target", "states"};
    return id >= 1 && id <= FORMAT_NSEC ? names[id - 1] : "?";
}

/* File dtype codes are fixed by the spec; the enum may be reordered. */
int format_dtype_code(graph_dtype dt)
{
    switch (dt) {
    case GRAPH_F32: return 0;
    case GRAPH_I64: return 1;
    case GRAPH_I32: return 2;
    case GRAPH_BOOL: return 3;
    default: return -1;
    }
}

int format_dtype_from_code(unsigned code, graph_dtype *dt)
{
    static const graph_dtype from[] = {GRAPH_F32, GRAPH_I64, GRAPH_I32, GRAPH_BOOL};
    if (code >= sizeof from / sizeof from[0])
        return -1;
    *dt = from[code];
    return 0;
}

/*
 * XXH64 (Yann Collet's published algorithm): four independent lanes over
 * 32-byte stripes, so it runs at several GB/s where a byte-at-a-time hash
 * (FNV) manages about one; the checksum must not slow loading down.
 */
#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define P3 UINT64_C(0x165667B19E3779F9)
#define P4 UINT64_C(0x85EBCA77C2B2AE63)
#define P5 UINT64_C(0x27D4EB2F165667C5)

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v; /* compilers fold this into one load on little-endian CPUs */
}

static inline uint64_t rd32(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24;
}

static inline uint64_t lane_round(uint64_t acc, uint64_t in)
{
    acc += in * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t merge_round(uint64_t h, uint64_t v)
{
    h ^= lane_round(0, v);
    return h * P1 + P4;
}

uint64_t format_xxh64(const void *data, size_t n, uint64_t seed)
{
    const uint8_t *p = data, *end = p + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const uint8_t *limit = end - 32;
        do {
            v1 = lane_round(v1, rd64(p));
            v2 = lane_round(v2, rd64(p + 8));
            v3 = lane_round(v3, rd64(p + 16));
            v4 = lane_round(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = merge_round(h, v1);
        h = merge_round(h, v2);
        h = merge_round(h, v3);
        h = merge_round(h, v4);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)n;
    while (end - p >= 8) {
        h ^= lane_round(0, rd64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
    }
    if (end - p >= 4) {
        h ^= rd32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= *p++ * P5;
        h = rotl64(h, 11) * P1;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}
