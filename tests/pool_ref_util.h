/*
 * pool_ref_util.h - max_pool2d_grad's reference for the tests
 * (test_grad, test_train_fuse): the rule's definition as naive loops.
 */
#ifndef TG_TESTS_POOL_REF_UTIL_H
#define TG_TESTS_POOL_REF_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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
