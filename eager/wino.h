/*
 * wino.h - Winograd F(4x4, 3x3) on 8-lane blocked tensors (nChw8c), for
 * conv2d_blk where oneDNN has no Winograd (kernels_wino.c says how and
 * why).  Internal to the kernel sets: each set compiles its own copy.
 */
#ifndef TG_EAGER_WINO_H
#define TG_EAGER_WINO_H

#include <stdint.h>

#include "kernel.h"

/* The transformed weights of one conv (prepared once). */
typedef struct eager_wino eager_wino;

/* One run: x [n][cp/8][h][w][8] -> y [n][kp/8][oh][ow][8] (stride 1,
 * padding pt on top and pl on the left; the other sides follow from oh,
 * ow), y = conv + bias (o channels of it; the lanes past o get 0 + what
 * the zero weights give, i.e. 0), then the steps in post. */
typedef struct eager_wino_args {
    const float *x, *bias;
    float *y;
    int64_t n, cp, kp, o, h, w, oh, ow, pt, pl;
    int nthreads;
    /* epilogue steps run in the output transform, in order (npost <= 2):
     * EAGER_WINO_ADD adds res (y's layout), EAGER_WINO_RELU keeps x > 0
     * and NaN (as eager_post_apply's relu, the same bits) */
    const float *res;
    int npost;
    int post[2];
} eager_wino_args;

enum { EAGER_WINO_ADD = 1, EAGER_WINO_RELU = 2 };

/*
 * Transforms plain OIHW 3x3 weights w ([o][c][3][3]) for blocks of cp
 * input and kp output channels (c <= cp, o <= kp, both multiples of 8);
 * NULL when out of memory.
 */
eager_wino *eager_wino_prepare(const float *w, int64_t o, int64_t c, int64_t cp, int64_t kp);
void eager_wino_free(eager_wino *w);

/* TG_OK, TG_ERR_NOMEM, or TG_ERR_BACKEND when oneDNN's sgemm fails. */
tg_status eager_wino_run(const eager_wino *w, const eager_wino_args *a);

#endif
