/*
 * test_onnx_real.c - width-reduced versions of the real models of the
 * issue-17 benchmark (make bench-real): tests/data/real holds them as
 * torchvision's own constructors build them, exported by PyTorch 1.13 at
 * opset 17 by make.py there, with PyTorch's outputs saved beside them.
 * Each imports, runs in the reference interpreter and, optimized at -O0
 * and at -O3, in a replay (the -O3 one on 1 and on 2 threads), and matches
 * PyTorch: the optimizer's rewrites (BatchNorm folding, conv epilogue
 * fusion, layouts) on the graphs real exporters write, checked without
 * PyTorch.
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

/* Float sums in other orders through 20-50 layers, at the output's scale. */
#define TOL 1e-4

static char err[1024];

/* A .npy array of the model's (NULL and a failed check if it does not load). */
static void *load_npy(const char *name, const char *suffix, graph_type *t)
{
    char path[512];
    void *data = NULL;
    snprintf(path, sizeof path, "%s/real/%s_%s.npy", TG_TEST_DATA, name, suffix);
    tg_status st = format_npy_load(path, t, &data, err, sizeof err);
    CHECK_MSG(st == TG_OK, "%s: %s", path, err);
    return data;
}

static void check_output(const char *what, const graph_type *got_t, const void *got,
                         const graph_type *want_t, const void *want)
{
    int same_shape = got_t->ndim == want_t->ndim && got_t->dtype == want_t->dtype;
    for (int d = 0; same_shape && d < got_t->ndim; d++)
        same_shape = got_t->dim[d] == want_t->dim[d];
    CHECK_MSG(same_shape, "%s: output shape and dtype as PyTorch's", what);
    if (!same_shape)
        return;
    double e = check_normalized_error(got, want, graph_type_numel(want_t));
    CHECK_MSG(e <= TOL, "%s: normalized error %.3g vs PyTorch", what, e);
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

static void run_replay(const graph *g, int threads, const char *what, const graph_type *xt,
                       void *x, const graph_type *yt, const void *y)
{
    replay_opts ro = {REPLAY_CPU, threads, 0, NULL};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
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

static void test_model(const char *name)
{
    char path[512], what[128];
    snprintf(path, sizeof path, "%s/real/%s.onnx", TG_TEST_DATA, name);
    graph *g = format_onnx_load(path, NULL, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", name, err);
    graph_type xt, yt;
    void *x = load_npy(name, "x", &xt);
    void *y = load_npy(name, "y", &yt);
    if (g && x && y) {
        snprintf(what, sizeof what, "%s interpreted", name);
        run_interp(g, what, &xt, x, &yt, y);
        static const int levels[] = {0, 3};
        for (int k = 0; k < 2; k++) {
            graph *o = graph_clone(g);
            opt_options oo = opt_default_options();
            oo.level = levels[k];
            tg_status st = o ? opt_optimize(o, &oo, NULL, err, sizeof err) : TG_ERR_NOMEM;
            CHECK_MSG(st == TG_OK, "%s -O%d: %s", name, levels[k], o ? err : "out of memory");
            for (int threads = 1; st == TG_OK && threads <= (levels[k] == 3 ? 2 : 1);
                 threads++) {
                snprintf(what, sizeof what, "%s -O%d replay, %d thread%s", name, levels[k],
                         threads, threads > 1 ? "s" : "");
                run_replay(o, threads, what, &xt, x, &yt, y);
            }
            graph_free(o);
        }
    }
    free(x);
    free(y);
    graph_free(g);
}

int main(void)
{
    test_model("mobilenet_v2_w025");       /* inverted residuals, depthwise, ReLU6 (Clip) */
    test_model("mobilenet_v3_small_w025"); /* squeeze-excitation, HardSigmoid, HardSwish,
                                              5x5 depthwise */
    test_model("regnet_y_tiny");           /* grouped 3x3, SE, residual stages */
    return check_done();
}
