/*
 * pool_ref_util.h - max_pool2d_grad's reference for the tests
 * (test_grad, test_train_fuse): the rule's definition as naive loops.
 */
#ifndef TG_TESTS_POOL_REF_UTIL_H
#define TG_TESTS_POOL_REF_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "conv_ref_util.h"
#include "graph/dtype.h"

/* The pool shapes both tests walk: x [n, c, h, w] and the attributes. */
typedef struct pool_case {
    int64_t n, c, h, w;
    graph_ints k, s, p;
} pool_case;

static const pool_case pool_cases[] = {
    {2, 3, 8, 10, TG_INTS(2), TG_NOINTS, TG_NOINTS},                  /* the CNN's pool */
    {1, 3, 7, 9, TG_INTS(2), TG_NOINTS, TG_NOINTS},                   /* its odd row, column */
    {1, 2, 7, 9, TG_INTS(2), TG_INTS(2), TG_INTS(1)},                 /* padding, no overlap */
    {1, 3, 7, 8, TG_INTS(2), TG_INTS(3), TG_NOINTS},                  /* gaps between windows */
    {2, 3, 9, 7, TG_INTS(3), TG_INTS(2), TG_INTS(1)},                 /* overlap and padding */
    {1, 2, 6, 5, TG_INTS(3), TG_INTS(1), TG_INTS(1)},                 /* stride 1 */
    {2, 2, 7, 11, TG_INTS(3, 2), TG_INTS(1, 3), TG_INTS(1, 0, 2, 1)}, /* uneven */
    {3, 4, 40, 40, TG_INTS(2), TG_NOINTS, TG_NOINTS},                 /* threaded */
    {3, 4, 41, 39, TG_INTS(3), TG_INTS(2), TG_INTS(1)},               /* threaded, overlap */
};
#define POOL_NCASES ((int)(sizeof pool_cases / sizeof pool_cases[0]))

/* A case's kernel, stride (none: the kernel's), padding (top, left,
 * bottom, right) and output size (conv_ref_util.h's expansion, not the
 * library's). */
static void pool_case_geom(const pool_case *pc, int64_t k[2], int64_t st[2], int64_t p[4],
                           int64_t *oh, int64_t *ow)
{
    conv_pair(&pc->k, 1, k);
    conv_pair(&pc->s, 0, st);
    if (pc->s.n == 0)
        st[0] = k[0], st[1] = k[1];
    conv_pad4(&pc->p, p);
    *oh = (pc->h + p[0] + p[2] - k[0]) / st[0] + 1;
    *ow = (pc->w + p[1] + p[3] - k[1]) / st[1] + 1;
}

/*
 * The reference, written as the rule's definition: each window of x padded
 * with -inf has the maximum m (NaN if any element is); the first element
 * (row-major in the window) equal to m takes the window's dy, added in the
 * order of the windows; nothing when m is NaN or that element is padding.
 */
static void pool_grad_ref(const float *x, const float *dy, float *dx, int64_t nc, int64_t h,
                          int64_t w, int64_t oh, int64_t ow, const int64_t k[2],
                          const int64_t s[2], const int64_t p[4])
{
    memset(dx, 0, (size_t)(nc * h * w) * sizeof *dx);
    for (int64_t pl = 0; pl < nc; pl++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                float m = -INFINITY;
                int nan = 0;
                for (int64_t u = 0; u < k[0]; u++)
                    for (int64_t v = 0; v < k[1]; v++) {
                        int64_t r = i * s[0] - p[0] + u, c = j * s[1] - p[1] + v;
                        if (r >= 0 && r < h && c >= 0 && c < w) {
                            float e = x[(pl * h + r) * w + c];
                            nan |= isnan(e);
                            m = e > m ? e : m;
                        }
                    }
                if (nan)
                    continue;
                for (int64_t u = 0, done = 0; u < k[0] && !done; u++)
                    for (int64_t v = 0; v < k[1] && !done; v++) {
                        int64_t r = i * s[0] - p[0] + u, c = j * s[1] - p[1] + v;
                        int in = r >= 0 && r < h && c >= 0 && c < w;
                        float e = in ? x[(pl * h + r) * w + c] : -INFINITY;
                        if (e == m) {
                            if (in)
                                dx[(pl * h + r) * w + c] += dy[(pl * oh + i) * ow + j];
                            done = 1;
                        }
                    }
            }
}

#endif
