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
#include "pytorch_ref.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "optimize/opt.h"
#include "replay/replay.h"


/* Float sums in other orders through 20-50 layers, at the output's scale. */
#define TOL 1e-4

static char err[1024];

static void test_model(const char *name)
{
    char path[512], what[128];
    snprintf(path, sizeof path, "%s/real/%s.onnx", TG_TEST_DATA, name);
    graph *g = format_onnx_load(path, NULL, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", name, err);
    graph_type xt, yt;
    const pt_ref r = {"real", TOL, 1};
    void *x = pt_load_npy(&r, name, "x", &xt);
    void *y = pt_load_npy(&r, name, "y", &yt);
    if (g && x && y) {
        snprintf(what, sizeof what, "%s interpreted", name);
        pt_run_interp(&r, g, what, &xt, x, &yt, y);
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
                const pt_ref rt = {"real", TOL, threads};
                pt_run_replay(&rt, o, what, &xt, x, &yt, y);
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
