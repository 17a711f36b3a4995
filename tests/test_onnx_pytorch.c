/*
 * test_onnx_pytorch.c - ONNX models as a real exporter writes them: the
 * models of tests/data/pytorch (exported by PyTorch 1.13's
 * torch.onnx.export at opset 17 by make.py there, with PyTorch's own
 * outputs saved beside them) import, run in the reference interpreter and,
 * optimized at -O3, in a replay, and match PyTorch.  The dynamic-batch
 * ones run at a second batch too.  Each model says below what it is
 * there for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "optimize/opt.h"
#include "replay/replay.h"

#ifndef TG_TEST_DATA
#define TG_TEST_DATA "tests/data"
#endif

static char err[1024];

/* A .npy array of the model's (NULL and a failed check if it does not load). */
static void *load_npy(const char *name, const char *suffix, graph_type *t)
{
    char path[512];
    void *data = NULL;
    snprintf(path, sizeof path, "%s/pytorch/%s_%s.npy", TG_TEST_DATA, name, suffix);
    tg_status st = format_npy_load(path, t, &data, err, sizeof err);
    CHECK_MSG(st == TG_OK, "%s: %s", path, err);
    return data;
}

/* PyTorch's output within 1e-5 normalized error (float sums in another
 * order); an int64 output (ArgMax's) exactly. */
static void check_output(const char *what, const graph_type *got_t, const void *got,
                         const graph_type *want_t, const void *want)
{
    int same_shape = got_t->ndim == want_t->ndim && got_t->dtype == want_t->dtype;
    for (int d = 0; same_shape && d < got_t->ndim; d++)
        same_shape = got_t->dim[d] == want_t->dim[d];
    CHECK_MSG(same_shape, "%s: output shape and dtype as PyTorch's", what);
    if (!same_shape)
        return;
    if (want_t->dtype == GRAPH_I64) {
        int64_t n = graph_type_numel(want_t), bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += ((const int64_t *)got)[i] != ((const int64_t *)want)[i];
        CHECK_MSG(bad == 0, "%s: %lld of %lld indices differ from PyTorch's", what,
                  (long long)bad, (long long)n);
        return;
    }
    double e = check_normalized_error(got, want, graph_type_numel(want_t));
    CHECK_MSG(e <= 1e-5, "%s: normalized error %.3g vs PyTorch", what, e);
}

static void run_interp(const graph *g, const char *what, const graph_type *xt, void *x,
                       const graph_type *yt, const void *y)
{
    graph_ints shape = {xt->ndim, {0}};
    for (int d = 0; d < xt->ndim; d++)
        shape.v[d] = xt->dim[d];
    eager_pool_push();
    eager_tensor *xin = eager_from_data(xt->dtype, shape, x);
    eager_tensor *out = NULL;
    tg_status st = eager_interpret(g, &xin, 1, &out, 1, NULL);
    CHECK_MSG(st == TG_OK && out, "%s: interpreter: %s", what, eager_error());
    if (st == TG_OK && out)
        check_output(what, eager_type(out), eager_peek(out), yt, y);
    eager_release(out);
    eager_pool_pop();
    eager_clear_error();
}

static void run_replay(const graph *g, const char *what, const graph_type *xt, void *x,
                       const graph_type *yt, const void *y)
{
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s: compile: %s", what, err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (s) {
        replay_tensor in = {"x", *xt, x, NULL}, out = {"y", {0}, NULL, NULL};
        tg_status st = replay_run(s, &in, 1, &out, 1);
        CHECK_MSG(st == TG_OK, "%s: replay: %s", what, replay_session_error(s));
        if (st == TG_OK)
            check_output(what, &out.type, out.data, yt, y);
    }
    replay_session_free(s);
    replay_plan_free(p);
}

static void test_model(const char *name, int dynamic)
{
    char path[512], what[96];
    snprintf(path, sizeof path, "%s/pytorch/%s.onnx", TG_TEST_DATA, name);
    graph *g = format_onnx_load(path, NULL, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", name, err);
    graph *o = g ? graph_clone(g) : NULL;
    opt_options oo = opt_default_options();
    oo.level = 3;
    CHECK_MSG(o && opt_optimize(o, &oo, NULL, err, sizeof err) == TG_OK, "%s -O3: %s", name,
              err);
    for (int k = 0; g && k <= dynamic; k++) {
        graph_type xt, yt;
        void *x = load_npy(name, k ? "x2" : "x", &xt);
        void *y = load_npy(name, k ? "y2" : "y", &yt);
        if (x && y) {
            snprintf(what, sizeof what, "%s (batch %lld) interpreted", name,
                     (long long)xt.dim[0]);
            run_interp(g, what, &xt, x, &yt, y);
            snprintf(what, sizeof what, "%s (batch %lld) -O3 replay", name,
                     (long long)xt.dim[0]);
            if (o)
                run_replay(o, what, &xt, x, &yt, y);
        }
        free(x);
        free(y);
    }
    graph_free(o);
    graph_free(g);
}

int main(void)
{
    test_model("mlp", 1);      /* Gemm, dynamic batch */
    test_model("convnet", 0);  /* Conv (groups, stride), BatchNormalization, pools, Flatten */
    test_model("resblock", 1); /* residual conv block, dynamic batch */
    test_model("encoder", 1);  /* LayerNormalization, attention, Erf GELU; the batch dynamic:
                                  PyTorch computes its reshapes from Shape */
    test_model("chain", 0);
    test_model("tiny", 0);
    test_model("conv1d", 1);   /* Conv1d (stride, dilation, groups), 1-D pools */
    test_model("pixel", 1);    /* PixelShuffle as DepthToSpace CRD; PixelUnshuffle as
                                  Shape-computed Reshape + Transpose */
    test_model("masked", 1);   /* torch.tril / torch.triu as Trilu, k 0, -1, 2 */
    test_model("upsample", 1); /* F.interpolate nearest, bilinear, bicubic (align_corners)
                                  as Resize */
    test_model("classify", 1); /* torch.argmax (ArgMax): int64 output, compared exactly */
    test_model("upconv", 1);   /* ConvTranspose2d (stride 2, padding 1, output_padding 1;
                                  grouped), dilated ConvTranspose1d */
    test_model("gatherscatter", 1); /* torch.gather, Tensor.scatter, scatter_add
                                       (GatherElements, ScatterElements none and add)
                                       with indices from ArgMax / ArgMin at run time */
    return check_done();
}
