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
#include "pytorch_ref.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"


static char err[1024];

/* The load's warnings: how many, and the last. */
static int nwarn;
static char lastwarn[1024];

static void on_warn(void *ctx, const char *msg)
{
    (void)ctx;
    nwarn++;
    snprintf(lastwarn, sizeof lastwarn, "%s", msg);
}

/* Live nodes of g running op. */
static int count_op(const graph *g, graph_op op)
{
    int c = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        c += !(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op;
    return c;
}

/*
 * video at -O3: each 3-D Conv is one conv2d between a transpose of its
 * input to depth-major and one of its output back (the import); the
 * view-sink pass moves the output's below the relus and residual adds,
 * where it meets the next conv's and both go, and the epilogue takes
 * the relus and adds into the conv2ds.  videobn, the same model with its
 * BatchNormalization nodes kept, comes to the same form: view-sink moves
 * each batch_norm below the conv's views too, and conv-bn folds it.  Left: the input's transpose, the
 * grouped conv's (its taps by group) and the one before the pool.
 */
static void check_video_o3(const graph *o, const char *name)
{
    int tr = count_op(o, GRAPH_OP_transpose), relu = count_op(o, GRAPH_OP_relu);
    int add = count_op(o, GRAPH_OP_add), fused = count_op(o, GRAPH_OP_fused);
    int bn = count_op(o, GRAPH_OP_batch_norm);
    CHECK_MSG(tr == 3 && relu == 0 && add == 0 && fused == 0 && bn == 0,
              "%s -O3: want 3 transposes, every batch_norm folded and every relu and add in "
              "a conv's epilogue, have %d transposes, %d batch_norm, %d relu, %d add, "
              "%d fused", name, tr, bn, relu, add, fused);
}

static void test_model(const char *name, int dynamic)
{
    char path[512], what[96];
    snprintf(path, sizeof path, "%s/pytorch/%s.onnx", TG_TEST_DATA, name);
    format_onnx_load_opts lo = {0};
    lo.warn = on_warn;
    nwarn = 0;
    lastwarn[0] = 0;
    graph *g = format_onnx_load(path, &lo, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports: %s", name, err);
    if (!strcmp(name, "ceilpool")) /* PyTorch 1.13 declares y [2,194] */
        CHECK_MSG(nwarn == 1 && strstr(lastwarn, "declared [2,194], the graph computes "
                                       "[2,144]: node 0 '/MaxPool' (MaxPool) has ceil_mode 1"),
                  "ceilpool: %d warnings, the last: %s", nwarn, lastwarn);
    graph *o = g ? graph_clone(g) : NULL;
    opt_options oo = opt_default_options();
    oo.level = 3;
    CHECK_MSG(o && opt_optimize(o, &oo, NULL, err, sizeof err) == TG_OK, "%s -O3: %s", name,
              err);
    if (o && !strncmp(name, "video", 5))
        check_video_o3(o, name);
    const pt_ref r = {"pytorch", 1e-5, 1};
    for (int k = 0; g && k <= dynamic; k++) {
        graph_type xt, yt;
        void *x = pt_load_npy(&r, name, k ? "x2" : "x", &xt);
        void *y = pt_load_npy(&r, name, k ? "y2" : "y", &yt);
        if (x && y) {
            snprintf(what, sizeof what, "%s (batch %lld) interpreted", name,
                     (long long)xt.dim[0]);
            pt_run_interp(&r, g, what, &xt, x, &yt, y);
            snprintf(what, sizeof what, "%s (batch %lld) -O3 replay", name,
                     (long long)xt.dim[0]);
            if (o)
                pt_run_replay(&r, o, what, &xt, x, &yt, y);
        }
        free(x);
        free(y);
    }
    graph_free(o);
    graph_free(g);
}

/*
 * RoBERTa-style embeddings and an encoder layer (make.py's Roberta): two
 * int64 inputs, ids and the attention mask am, whose running count
 * (CumSum at run time) gives the position ids.  Interpreted as imported
 * and replayed at -O3, against PyTorch.
 */
static void test_roberta(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pytorch/roberta.onnx", TG_TEST_DATA);
    graph *g = format_onnx_load(path, NULL, err, sizeof err);
    CHECK_MSG(g != NULL, "roberta imports: %s", err);
    graph *o = g ? graph_clone(g) : NULL;
    opt_options oo = opt_default_options();
    oo.level = 3;
    CHECK_MSG(o && opt_optimize(o, &oo, NULL, err, sizeof err) == TG_OK, "roberta -O3: %s", err);
    const pt_ref r = {"pytorch", 1e-5, 1};
    graph_type it, at, yt;
    void *ids = pt_load_npy(&r, "roberta", "ids", &it), *am = pt_load_npy(&r, "roberta", "am", &at);
    void *y = pt_load_npy(&r, "roberta", "y", &yt);
    if (g && o && ids && am && y) {
        eager_pool_push();
        graph_ints is = {it.ndim, {it.dim[0], it.dim[1]}}, as = {at.ndim, {at.dim[0], at.dim[1]}};
        eager_tensor *in[2] = {eager_from_data(GRAPH_I64, is, ids), eager_from_data(GRAPH_I64, as, am)};
        eager_tensor *out = NULL;
        tg_status st = eager_interpret(g, in, 2, &out, 1, NULL);
        CHECK_MSG(st == TG_OK && out, "roberta interpreted: %s", eager_error());
        if (st == TG_OK && out)
            pt_check_output(&r, "roberta interpreted", eager_type(out), eager_peek(out), &yt, y);
        eager_release(out);
        eager_pool_pop();
        eager_clear_error();
        replay_opts ro = {.threads = 1};
        replay_plan *p = replay_compile(o, &ro, err, sizeof err);
        CHECK_MSG(p != NULL, "roberta -O3 compile: %s", err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        if (s) {
            replay_tensor rin[2] = {{.name = "ids", .type = it, .input = ids},
                                    {.name = "am", .type = at, .input = am}};
            replay_tensor rout = {.name = "y"};
            st = replay_run(s, rin, 2, &rout, 1);
            CHECK_MSG(st == TG_OK, "roberta -O3 replay: %s", replay_session_error(s));
            if (st == TG_OK)
                pt_check_output(&r, "roberta -O3 replay", &rout.type, rout.data, &yt, y);
        }
        replay_session_free(s);
        replay_plan_free(p);
    }
    free(ids), free(am), free(y);
    graph_free(o), graph_free(g);
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
    test_model("recurrent", 1); /* nn.LSTM (2 layers, bidirectional, batch_first), nn.GRU,
                                 * nn.RNN (relu): LSTM, GRU, RNN unrolled at import */
    test_model("gatherscatter", 1); /* torch.gather, Tensor.scatter, scatter_add
                                       (GatherElements, ScatterElements none and add)
                                       with indices from ArgMax / ArgMin at run time */
    test_model("ceilpool", 0); /* ceil_mode pools whose last window would start in the end
                                  padding (dropped), or hangs over it (kept): max 1-D, 2-D,
                                  3-D, average without the padding counted */
    test_model("swinblock", 0); /* swin_t's shifted-window attention: its mask's ScatterND
                                   (4802 indices from Shapes) folded at load time; Dropout
                                   in training mode with ratio 0 */
    test_model("gridsample", 1); /* F.grid_sample: bilinear and nearest, zeros and border,
                                    align_corners both ways, a grid partly outside */
    test_model("video", 1);    /* a video ResNet: Conv3d (3x3x3, strided with a 1x1x1
                                  downsample, (1,3,3) then (3,1,1), grouped), BatchNorm3d,
                                  ReLU, residual adds, AdaptiveAvgPool3d; -O3's form */
    test_model("videobn", 1);  /* the same, its BatchNormalization nodes kept */
    test_roberta(); /* torch.cumsum of a run-time int64 mask (CumSum) as position ids,
                       src_key_padding_mask: two int64 inputs */
    return check_done();
}
