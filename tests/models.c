/* models.c - the shared test models (see models.h). */
#include "models.h"

#include <math.h>
#include <stdio.h>

#include "check.h"
#include "tracer/trace.h"

/* x [B,32] -> linear 16 -> relu -> linear 10 -> log_softmax */
eager_tensor *model_mlp(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *h = eager_relu(eager_linear(x, p[0], p[1]));
    return eager_log_softmax(eager_linear(h, p[2], p[3]), -1);
}

/* x [B,3,8,8] -> conv3x3 -> batch_norm -> relu -> maxpool -> conv1x1 -> gap -> flatten */
eager_tensor *model_conv_block(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *y = eager_conv2d(x, p[0], EAGER_NONE, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1);
    y = eager_batch_norm(y, p[1], p[2], p[3], p[4], 1e-5f);
    y = eager_relu(y);
    y = eager_max_pool2d(y, TG_INTS(2), TG_NOINTS, TG_NOINTS);
    y = eager_conv2d(y, p[5], p[6], TG_NOINTS, TG_NOINTS, TG_NOINTS, 1);
    return eager_flatten(eager_global_avg_pool(y), 1, -1);
}

/* x [B,5,16], 2 heads of 8; reshapes use -1 for the batch */
eager_tensor *model_attention(eager_tensor *x, eager_tensor *const *p)
{
    eager_tensor *h = eager_layer_norm(x, p[0], p[1], -1, 1e-5f);
    eager_tensor *qkv = eager_linear(h, p[2], p[3]);
    eager_tensor *part[3];
    if (eager_split(qkv, -1, TG_INTS(16, 16, 16), part, 3) != 3)
        return NULL;
    eager_tensor *heads[3];
    for (int i = 0; i < 3; i++)
        heads[i] = eager_transpose(eager_reshape(part[i], TG_INTS(-1, 5, 2, 8)),
                                   TG_INTS(0, 2, 1, 3));
    eager_tensor *s = eager_mul(eager_matmul(heads[0], heads[1], 0, 1),
                                eager_scalar(1.0 / sqrt(8.0)));
    eager_tensor *a = eager_matmul(eager_softmax(s, -1), heads[2], 0, 0);
    a = eager_reshape(eager_transpose(a, TG_INTS(0, 2, 1, 3)), TG_INTS(-1, 5, 16));
    return eager_add(eager_linear(a, p[4], p[5]), x);
}

model model_make(int kind)
{
    model m = {0};
    switch (kind) {
    case MODEL_MLP:
        m = (model){"mlp", model_mlp, 4, {
            eager_rand_normal(TG_SHAPE(16, 32), 1, 0, 0.2f),
            eager_rand_normal(TG_SHAPE(16), 2, 0, 0.1f),
            eager_rand_normal(TG_SHAPE(10, 16), 3, 0, 0.2f),
            eager_rand_normal(TG_SHAPE(10), 4, 0, 0.1f)}, TG_SHAPE(4, 32)};
        break;
    case MODEL_CONV:
        m = (model){"conv_block", model_conv_block, 7, {
            eager_rand_normal(TG_SHAPE(8, 3, 3, 3), 11, 0, 0.3f),
            eager_rand_uniform(TG_SHAPE(8), 12, 0.5f, 1.5f),
            eager_rand_normal(TG_SHAPE(8), 13, 0, 0.1f),
            eager_rand_normal(TG_SHAPE(8), 14, 0, 0.1f),
            eager_rand_uniform(TG_SHAPE(8), 15, 0.5f, 1.5f),
            eager_rand_normal(TG_SHAPE(4, 8, 1, 1), 16, 0, 0.3f),
            eager_rand_normal(TG_SHAPE(4), 17, 0, 0.1f)}, TG_SHAPE(2, 3, 8, 8)};
        break;
    default:
        m = (model){"attention", model_attention, 6, {
            eager_rand_uniform(TG_SHAPE(16), 21, 0.5f, 1.5f),
            eager_rand_normal(TG_SHAPE(16), 22, 0, 0.1f),
            eager_rand_normal(TG_SHAPE(48, 16), 23, 0, 0.25f),
            eager_rand_normal(TG_SHAPE(48), 24, 0, 0.1f),
            eager_rand_normal(TG_SHAPE(16, 16), 25, 0, 0.25f),
            eager_rand_normal(TG_SHAPE(16), 26, 0, 0.1f)}, TG_SHAPE(2, 5, 16)};
        break;
    }
    return m;
}

void model_free(model *m)
{
    for (int i = 0; i < m->nparams; i++)
        eager_release(m->params[i]);
    m->nparams = 0;
}

eager_tensor *model_input(const model *m, int64_t batch, uint64_t seed)
{
    graph_ints shape = m->input_shape;
    shape.v[0] = batch;
    return eager_rand_uniform(shape, seed, -1, 1);
}

graph *model_trace(const model *m, eager_tensor *x)
{
    eager_pool_push();
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    for (int i = 0; i < m->nparams; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        trace_param(m->params[i], name);
    }
    trace_output(m->forward(x, m->params), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK_MSG(g != NULL, "%s traces: %s", m->name, eager_error());
    return g;
}

/* The line of model_branchy's eager_bool, 5 lines on. */
const int model_branchy_line = __LINE__ + 5;

eager_tensor *model_branchy(eager_tensor *x)
{
    eager_tensor *pos = eager_gt(eager_reduce_sum(x, TG_NOINTS, 0), eager_scalar(0));
    return eager_bool(pos) ? eager_relu(x) : eager_neg(x);
}
