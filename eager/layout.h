/*
 * layout.h - copy engines for the data-movement kernels (kernels_shape.c):
 * strided n-d copies, parallel byte copies and fills.  Element-size
 * generic (1, 4 or 8 bytes), so one engine serves every dtype.  Internal
 * to eager/ and the replay runtime's kernels; not part of the public API.
 */
#ifndef TG_EAGER_LAYOUT_H
#define TG_EAGER_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Copies an n-d block (n <= GRAPH_MAX_DIMS; n = 0 copies one element):
 * the element at index i goes from src + sum_k i[k]*sstr[k] to
 * dst + sum_k i[k]*dstr[k] (strides in elements).  Source strides may be
 * 0 (broadcast) or negative (reversed slice); destination strides must
 * address distinct elements.  es is 1, 4 or 8.  Uses up to nthreads
 * OpenMP threads for large blocks.
 *
 * Dims are simplified first (size-1 dims dropped, adjacent dims merged when
 * both layouts allow), so contiguous runs become one memcpy, and a
 * transposition (source unit stride on an outer dim) goes through
 * cache-blocked tiles.
 */
void eager_copy_strided(size_t es, int n, const int64_t *dims,
                        const void *src, const int64_t *sstr, void *dst,
                        const int64_t *dstr, int nthreads);

/* memcpy of nbytes, in parallel chunks when large; nothing if dst == src. */
void eager_copy_bytes(void *dst, const void *src, size_t nbytes,
                      int nthreads);

/* Sets n elements of size es (1, 4, 8) at dst to the element at val. */
void eager_fill_elems(void *dst, int64_t n, size_t es, const void *val);

#endif
