/*
 * test_grad_pytorch.c - eager autograd against PyTorch's autograd: the
 * gradients of three small models (an MLP, with and without label
 * smoothing; a CNN with training-mode batch norm; a pre-LayerNorm
 * transformer encoder block with two heads) from the fixtures of
 * tests/data/pytorch_grad (made once by its make.py with Debian's
 * python3-torch 1.13, in float64 from the same float32 inputs and
 * parameters, stored as float32).
 *
 * Each model is built here from eager ops on the fixture's input and
 * parameters, its loss run through eager_backward, and the loss, the
 * input's gradient and every parameter's gradient (and the CNN's batch
 * norm running statistics after the step) compared with PyTorch's:
 * per tensor, rel = max |got - want| / max(max |want|, 1e-6)
 * (check_normalized_error), within 1e-5.  The largest per model is
 * printed.  The fixtures keep every ReLU input and max-pool window
 * away from its kink (make.py picks the seed), so float32 here and
 * float64 there take the same side.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "formats/npy.h"

#ifndef TG_TEST_DATA
#define TG_TEST_DATA "tests/data"
#endif

#define TOL 1e-5
#define MAXP 16

/* TG_TEST_DATA/pytorch_grad/MODEL_NAME.npy as a tensor of the caller's
 * own, also inside a pool (NULL and a failed check if it does not load). */
static eager_tensor *load(const char *model, const char *name)
{
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/pytorch_grad/%s_%s.npy", TG_TEST_DATA, model, name);
    graph_type t;
    void *data = NULL;
    tg_status st = format_npy_load(path, &t, &data, err, sizeof err);
    CHECK_MSG(st == TG_OK, "%s: %s", path, err);
    if (st != TG_OK)
        return NULL;
    graph_ints shape = {t.ndim, {0}};
    for (int d = 0; d < t.ndim; d++)
        shape.v[d] = t.dim[d];
    eager_tensor *e = eager_keep(eager_from_data(t.dtype, shape, data));
    free(data);
    return e;
}

/* A model's fixture: its input, target and parameters (leaves that
 * require a gradient), by name. */
typedef struct fixture {
    const char *model;
    eager_tensor *x, *target;
    const char *pname[MAXP];
    eager_tensor *p[MAXP];
    int np;
    double worst;          /* the largest rel so far */
    char worst_what[64];
} fixture;

static void fixture_open(fixture *f, const char *model, const char *const *names)
{
    memset(f, 0, sizeof *f);
    f->model = model;
    f->x = load(model, "x");
    f->target = load(model, "target");
    eager_requires_grad(f->x, 1);
    for (; names[f->np]; f->np++) {
        f->pname[f->np] = names[f->np];
        f->p[f->np] = load(model, names[f->np]);
        eager_requires_grad(f->p[f->np], 1);
    }
    CHECK_MSG(eager_status() == TG_OK, "%s: fixture: %s", model, eager_error());
}

static eager_tensor *P(const fixture *f, const char *name)
{
    for (int i = 0; i < f->np; i++)
        if (strcmp(f->pname[i], name) == 0)
            return f->p[i];
    CHECK_MSG(0, "%s: no parameter %s", f->model, name);
    return NULL;
}

/* got (f32) against want (same shape and dtype), within TOL. */
static void compare_to(fixture *f, const char *what, const eager_tensor *got,
                       const eager_tensor *want)
{
    const graph_type *gt = eager_type(got), *wt = eager_type(want);
    int same = gt->ndim == wt->ndim && gt->dtype == GRAPH_F32 && wt->dtype == GRAPH_F32;
    for (int d = 0; same && d < gt->ndim; d++)
        same = gt->dim[d] == wt->dim[d];
    CHECK_MSG(same, "%s: %s: shape or dtype differs from PyTorch's", f->model, what);
    if (!same)
        return;
    double rel = check_normalized_error(eager_peek(got), eager_peek(want), eager_numel(want));
    CHECK_MSG(rel <= TOL, "%s: %s: rel %.3g vs PyTorch (tolerance %g)", f->model, what, rel,
              TOL);
    if (!(rel <= f->worst)) {
        f->worst = rel;
        snprintf(f->worst_what, sizeof f->worst_what, "%s", what);
    }
}

/* got against the fixture's tensor want_name (same shape), within TOL. */
static void compare(fixture *f, const char *what, const eager_tensor *got, const char *want_name)
{
    eager_tensor *want = load(f->model, want_name);
    CHECK_MSG(got != NULL, "%s: %s: no value (%s)", f->model, what, eager_error());
    if (got && want)
        compare_to(f, what, got, want);
    eager_release(want);
}

/* The loss, the input's gradient, every parameter's gradient; prints the
 * largest difference. */
static void compare_all(fixture *f, eager_tensor *loss)
{
    CHECK_MSG(loss != NULL, "%s: forward: %s", f->model, eager_error());
    if (!loss)
        return;
    tg_status st = eager_backward(loss);
    CHECK_MSG(st == TG_OK, "%s: backward: %s", f->model, eager_error());
    compare(f, "loss", loss, "loss");
    compare(f, "x.grad", eager_grad(f->x), "x_grad");
    for (int i = 0; i < f->np; i++) {
        char what[64], name[64];
        snprintf(what, sizeof what, "%s.grad", f->pname[i]);
        snprintf(name, sizeof name, "%s_grad", f->pname[i]);
        compare(f, what, eager_grad(f->p[i]), name);
    }
}

static void fixture_close(fixture *f)
{
    printf("%-8s largest rel %.3g (%s), %d parameters + input + loss\n", f->model, f->worst,
           f->worst_what, f->np);
    eager_release(f->x);
    eager_release(f->target);
    for (int i = 0; i < f->np; i++)
        eager_release(f->p[i]);
    eager_clear_error();
}

/* ---- MLP: Linear(20,16)-ReLU-Linear(16,16)-ReLU-Linear(16,10), cross-entropy ---- */

static void test_mlp(const char *model, double smoothing)
{
    static const char *const names[] = {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                        "fc3_weight", "fc3_bias", NULL};
    fixture f;
    fixture_open(&f, model, names);
    eager_pool_push();
    eager_tensor *h = eager_relu(eager_linear(f.x, P(&f, "fc1_weight"), P(&f, "fc1_bias")));
    h = eager_relu(eager_linear(h, P(&f, "fc2_weight"), P(&f, "fc2_bias")));
    eager_tensor *logits = eager_linear(h, P(&f, "fc3_weight"), P(&f, "fc3_bias"));
    compare_all(&f, eager_cross_entropy(logits, f.target, smoothing));
    eager_pool_pop();
    fixture_close(&f);
}

/* ---- CNN with training-mode batch norm ---- */

static void test_cnn(void)
{
    /* the convs have no bias (batch norm follows: its gradient would be
     * zero but for round-off, nothing a relative check can compare) */
    static const char *const names[] = {"conv1_weight", "bn1_weight", "bn1_bias",
                                        "conv2_weight", "bn2_weight", "bn2_bias",
                                        "fc1_weight",   "fc1_bias",   "fc2_weight",
                                        "fc2_bias",     NULL};
    fixture f;
    fixture_open(&f, "cnn", names);
    eager_tensor *rm1 = load("cnn", "bn1_running_mean_in"), *rv1 = load("cnn", "bn1_running_var_in");
    eager_tensor *rm2 = load("cnn", "bn2_running_mean_in"), *rv2 = load("cnn", "bn2_running_var_in");
    eager_pool_push();
    graph_ints pool = TG_INTS(2, 2);
    eager_tensor *h = eager_conv2d(f.x, P(&f, "conv1_weight"), EAGER_NONE, TG_NOINTS,
                                   TG_INTS(1), TG_NOINTS, 1);
    h = eager_batch_norm_train(h, P(&f, "bn1_weight"), P(&f, "bn1_bias"), rm1, rv1, EAGER_NONE, 1e-5, 0.1);
    h = eager_max_pool2d(eager_relu(h), pool, TG_NOINTS, TG_NOINTS);
    h = eager_conv2d(h, P(&f, "conv2_weight"), EAGER_NONE, TG_NOINTS, TG_NOINTS,
                     TG_NOINTS, 1);
    h = eager_batch_norm_train(h, P(&f, "bn2_weight"), P(&f, "bn2_bias"), rm2, rv2, EAGER_NONE, 1e-5, 0.1);
    h = eager_max_pool2d(eager_relu(h), pool, TG_NOINTS, TG_NOINTS);
    h = eager_relu(eager_linear(eager_flatten(h, 1, -1), P(&f, "fc1_weight"), P(&f, "fc1_bias")));
    eager_tensor *logits = eager_linear(h, P(&f, "fc2_weight"), P(&f, "fc2_bias"));
    compare_all(&f, eager_cross_entropy(logits, f.target, 0.0));
    compare(&f, "bn1.running_mean", rm1, "bn1_running_mean");
    compare(&f, "bn1.running_var", rv1, "bn1_running_var");
    compare(&f, "bn2.running_mean", rm2, "bn2_running_mean");
    compare(&f, "bn2.running_var", rv2, "bn2_running_var");
    eager_pool_pop();
    eager_release(rm1);
    eager_release(rv1);
    eager_release(rm2);
    eager_release(rv2);
    fixture_close(&f);
}

/* ---- transformer encoder block (pre-LayerNorm, 2 heads), MSE ---- */

enum { EB = 2, ET = 5, ED = 8, EH = 2, EDH = ED / EH };

/* [B,T,D] -> [B,H,T,Dh] */
static eager_tensor *heads(eager_tensor *z)
{
    return eager_transpose(eager_reshape(z, TG_SHAPE(EB, ET, EH, EDH)), TG_INTS(0, 2, 1, 3));
}

static void test_encoder(void)
{
    static const char *const names[] = {"ln1_weight", "ln1_bias",   "qkv_weight", "qkv_bias",
                                        "proj_weight", "proj_bias", "ln2_weight", "ln2_bias",
                                        "fc1_weight", "fc1_bias",   "fc2_weight", "fc2_bias",
                                        NULL};
    fixture f;
    fixture_open(&f, "encoder", names);
    eager_pool_push();
    eager_tensor *a = eager_layer_norm(f.x, P(&f, "ln1_weight"), P(&f, "ln1_bias"), -1, 1e-5f);
    eager_tensor *qkv[3] = {NULL, NULL, NULL};
    int n = eager_split(eager_linear(a, P(&f, "qkv_weight"), P(&f, "qkv_bias")), -1,
                        TG_INTS(ED, ED, ED), qkv, 3);
    CHECK_MSG(n == 3, "encoder: split: %s", eager_error());
    eager_tensor *s = eager_matmul(heads(qkv[0]), heads(qkv[1]), 0, 1);
    s = eager_mul(s, eager_scalar(1.0 / sqrt((double)EDH)));
    eager_tensor *o = eager_matmul(eager_softmax(s, -1), heads(qkv[2]), 0, 0);
    o = eager_reshape(eager_transpose(o, TG_INTS(0, 2, 1, 3)), TG_SHAPE(EB, ET, ED));
    eager_tensor *h = eager_add(f.x, eager_linear(o, P(&f, "proj_weight"), P(&f, "proj_bias")));
    eager_tensor *m = eager_layer_norm(h, P(&f, "ln2_weight"), P(&f, "ln2_bias"), -1, 1e-5f);
    m = eager_linear(eager_gelu(eager_linear(m, P(&f, "fc1_weight"), P(&f, "fc1_bias"))),
                     P(&f, "fc2_weight"), P(&f, "fc2_bias"));
    compare_all(&f, eager_mse_loss(eager_add(h, m), f.target));
    eager_pool_pop();
    fixture_close(&f);
}

int main(void)
{
    test_mlp("mlp", 0.0);
    test_mlp("mlp_ls", 0.1);
    test_cnn();
    test_encoder();
    CHECK_MSG(eager_live_tensors() == 0, "%ld tensors leaked", eager_live_tensors());
    return check_done();
}
