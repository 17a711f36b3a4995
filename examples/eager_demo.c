/*
 * eager_demo.c - the eager API end to end: a small MLP on a seeded random
 * batch, run op by op, with a pool so the chain does not leak, and an error
 * that names this file's line.
 */
#include <stdio.h>
#include <time.h>

#include "tracegraph.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* x[64,784] -> linear 512 -> relu -> linear 10 -> log_softmax */
static eager_tensor *mlp(eager_tensor *x, eager_tensor *const *w)
{
    eager_tensor *h = eager_relu(eager_linear(x, w[0], w[1]));
    return eager_log_softmax(eager_linear(h, w[2], w[3]), -1);
}

int main(void)
{
    eager_tensor *w[4];
    w[0] = eager_rand_normal(TG_SHAPE(512, 784), 1, 0.0f, 0.05f);
    w[1] = eager_zeros(GRAPH_F32, TG_SHAPE(512));
    w[2] = eager_rand_normal(TG_SHAPE(10, 512), 2, 0.0f, 0.05f);
    w[3] = eager_zeros(GRAPH_F32, TG_SHAPE(10));
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(64, 784), 3, 0.0f, 1.0f);

    double best = 1e30;
    eager_tensor *kept = NULL;
    for (int rep = 0; rep < 20; rep++) {
        eager_pool_push();
        double t0 = now_ms();
        eager_tensor *y = mlp(x, w);
        double t = now_ms() - t0;
        best = t < best ? t : best;
        if (rep == 19)
            kept = eager_retain(y);
        eager_pool_pop();
    }
    if (!kept) {
        fprintf(stderr, "eager_demo: %s\n", eager_error());
        return 1;
    }
    /* Row 0: the log-probabilities, which must exponentiate to 1. */
    eager_pool_push();
    eager_tensor *row = eager_slice(kept, TG_INTS(0), TG_INTS(0), TG_INTS(1), TG_NOINTS);
    eager_tensor *total = eager_reduce_sum(eager_exp(row), TG_NOINTS, 0);
    printf("mlp [64,784] -> [%lld,%lld]: best of 20 eager runs %.3f ms\n",
           (long long)eager_dim(kept, 0), (long long)eager_dim(kept, 1), best);
    printf("row 0 log-probs:");
    for (int j = 0; j < 10; j++)
        printf(" %.3f", eager_get(kept, TG_INTS(0, j)));
    printf("\nsum of exp(row 0) = %.6f (should be 1)\n", eager_item(total));
    eager_pool_pop();

    /* A mistake, reported with this file and line. */
    eager_pool_push();
    eager_tensor *bad = eager_matmul(x, w[2], 0, 0);
    if (!bad)
        printf("expected error: %s\n", eager_error());
    eager_clear_error();
    eager_pool_pop();

    eager_release(kept);
    eager_release(x);
    for (int i = 0; i < 4; i++)
        eager_release(w[i]);
    return eager_live_tensors() == 0 ? 0 : 1;
}
