/*
 * test_onnx_dynbatch.c - attention models exported by PyTorch with a
 * dynamic batch (tests/data/dynbatch, made by make.py there with PyTorch's
 * own outputs at batch 1, 2, 3 and 5) import at one batch and run at all
 * four, against PyTorch: through the reference interpreter and replayed
 * as imported and at -O3.
 *
 *   - padmask: nn.TransformerEncoder given a src_key_padding_mask, whose
 *     float mask PyTorch makes as zeros_like of the [B*heads, 1, T] bool
 *     mask (ConstantOfShape of a Shape): was frozen at the import batch;
 *   - mha: a sequence-first nn.TransformerEncoder, heads split by
 *     reshapes to [T, B*heads, head_dim]: the B*heads dim was lost, and
 *     the second layer's reshape baked [T, 6, 8] in without a flag;
 *   - vit: torchvision's VisionTransformer, width-reduced: the class
 *     token expanded to the batch, then the same attention.
 *
 * No node may be flagged specialized: every size follows the batch.
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
#include "graph/graph_impl.h"

#ifndef TG_TEST_DATA
#define TG_TEST_DATA "tests/data"
#endif

static const int batches[] = {1, 2, 3, 5};

typedef struct io {
    int nin;
    const char *names[2];
    graph_type t[2];
    void *data[2];
    graph_type yt;
    void *y;
} io;

static void *load_npy(const char *model, const char *what, int b, graph_type *t)
{
    char path[512], err[1024] = "";
    void *data = NULL;
    snprintf(path, sizeof path, "%s/dynbatch/%s_%s_b%d.npy", TG_TEST_DATA, model, what, b);
    tg_status st = format_npy_load(path, t, &data, err, sizeof err);
    CHECK_MSG(st == TG_OK, "%s: %s", path, err);
    return data;
}

static int io_load(io *o, const char *model, int nin, int b)
{
    static const char *const names[2] = {"x", "m"};
    memset(o, 0, sizeof *o);
    o->nin = nin;
    int ok = 1;
    for (int i = 0; i < nin; i++) {
        o->names[i] = names[i];
        o->data[i] = load_npy(model, names[i], b, &o->t[i]);
        ok &= o->data[i] != NULL;
    }
    o->y = load_npy(model, "y", b, &o->yt);
    return ok && o->y;
}

static void io_free(io *o)
{
    for (int i = 0; i < o->nin; i++)
        free(o->data[i]);
    free(o->y);
}

static void check_out(const char *what, const graph_type *t, const void *got, const io *o)
{
    int same = t->ndim == o->yt.ndim && t->dtype == o->yt.dtype;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->dim[d] == o->yt.dim[d];
    CHECK_MSG(same, "%s: output shape as PyTorch's", what);
    if (!same)
        return;
    double e = check_normalized_error(got, o->y, graph_type_numel(t));
    CHECK_MSG(e <= 1e-5, "%s: normalized error %.3g vs PyTorch", what, e);
}

static void run_interp(const graph *g, const char *what, const io *o)
{
    eager_pool_push();
    eager_tensor *in[2] = {NULL, NULL}, *out = NULL;
    for (int i = 0; i < o->nin; i++) {
        graph_ints shape = {o->t[i].ndim, {0}};
        for (int d = 0; d < o->t[i].ndim; d++)
            shape.v[d] = o->t[i].dim[d];
        in[i] = eager_from_data(o->t[i].dtype, shape, o->data[i]);
    }
    tg_status st = eager_interpret(g, in, o->nin, &out, 1, NULL);
    CHECK_MSG(st == TG_OK && out, "%s: interpreter: %s", what, eager_error());
    if (st == TG_OK && out)
        check_out(what, eager_type(out), eager_peek(out), o);
    eager_release(out);
    eager_pool_pop();
    eager_clear_error();
}

static void run_replay(replay_session *s, const char *what, const io *o)
{
    replay_tensor in[2], out = {.name = "y"};
    for (int i = 0; i < o->nin; i++)
        in[i] = (replay_tensor){.name = o->names[i], .type = o->t[i], .input = o->data[i]};
    tg_status st = replay_run(s, in, o->nin, &out, 1);
    CHECK_MSG(st == TG_OK, "%s: replay: %s", what, replay_session_error(s));
    if (st == TG_OK)
        check_out(what, &out.type, out.data, o);
}

static void test_model(const char *name, int nin, int64_t dim)
{
    char path[512], err[1024] = "", what[128];
    snprintf(path, sizeof path, "%s/dynbatch/%s.onnx", TG_TEST_DATA, name);
    format_onnx_load_opts lo = {0, dim};
    graph *g = format_onnx_load(path, &lo, err, sizeof err);
    CHECK_MSG(g != NULL, "%s imports at batch %lld: %s", name, (long long)dim, err);
    if (!g)
        return;
    for (int32_t i = 0; i < g->nnodes; i++)
        CHECK_MSG(!(g->nodes[i].flags & GRAPH_NODE_SPECIALIZED),
                  "%s (imported at batch %lld): node %d (%s) is specialized", name,
                  (long long)dim, (int)i, graph_ops[g->nodes[i].op].name);
    graph *o3 = graph_clone(g);
    opt_options oo = opt_default_options();
    oo.level = 3;
    CHECK_MSG(o3 && opt_optimize(o3, &oo, NULL, err, sizeof err) == TG_OK, "%s -O3: %s",
              name, err);
    replay_opts ro = {.threads = 1};
    const graph *graphs[2] = {g, o3};
    for (int k = 0; k < 2; k++) {
        replay_plan *p = replay_compile(graphs[k], &ro, err, sizeof err);
        CHECK_MSG(p != NULL, "%s %s: compile: %s", name, k ? "-O3" : "as imported", err);
        replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
        /* one session runs every batch, in an order that leaves the
         * import batch and comes back */
        for (size_t b = 0; s && b < sizeof batches / sizeof batches[0]; b++) {
            io o;
            if (io_load(&o, name, nin, batches[b])) {
                snprintf(what, sizeof what, "%s (imported at batch %lld) at batch %d, %s",
                         name, (long long)dim, batches[b], k ? "-O3 replay" : "replay");
                run_replay(s, what, &o);
                if (k == 0) {
                    snprintf(what, sizeof what, "%s (imported at batch %lld) at batch %d, "
                             "interpreted", name, (long long)dim, batches[b]);
                    run_interp(g, what, &o);
                }
            }
            io_free(&o);
        }
        replay_session_free(s);
        replay_plan_free(p);
    }
    graph_free(o3);
    graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    for (int64_t dim = 1; dim <= 3; dim += 2) { /* the default size, and --dim 3 */
        test_model("padmask", 2, dim);
        test_model("mha", 1, dim);
        test_model("vit", 1, dim);
    }
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
