/*
 * conv_ref_util.h - what the convolution tests' reference loops share:
 * the attribute lists expanded as the ops document them, written here
 * (not the library's graph_ints_pair / graph_ints_pad4) so the references
 * stay independent of the code they check.
 */
#ifndef TG_TESTS_CONV_REF_UTIL_H
#define TG_TESTS_CONV_REF_UTIL_H

#include <stdint.h>
#include <string.h>

#include "graph/dtype.h"

/* A 1- or 2-entry list (stride, dilation, kernel) as 2 entries; none: def. */
static inline void conv_pair(const graph_ints *v, int64_t def, int64_t out[2])
{
    out[0] = v->n > 0 ? v->v[0] : def;
    out[1] = v->n > 1 ? v->v[1] : out[0];
}

/* A padding list of 0, 1, 2 or 4 entries as [top, left, bottom, right]. */
static inline void conv_pad4(const graph_ints *v, int64_t p[4])
{
    if (v->n == 4) {
        memcpy(p, v->v, 4 * sizeof *p);
        return;
    }
    p[0] = p[2] = v->n > 0 ? v->v[0] : 0;
    p[1] = p[3] = v->n > 1 ? v->v[1] : p[0];
}

#endif
