/*
 * test_opt_levels.c - every optimization level on every traced test model
 * (MLP, conv block, attention block, an elementwise chain) against the
 * reference interpreter on the unoptimized graph, through replay too, at
 * the traced batch and another; a second run of the pipeline changes
 * nothing; outputs keep their dynamic dims.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "models.h"
#include "tracegraph.h"
#include "graph/graph_impl.h"

/* tanh(x*sigmoid(x) + 0.5*x)*2 - 1, the benchmark chain in small */
static eager_tensor *chain(eager_tensor *x, eager_tensor *const *p)
{
    (void)p;
    eager_tensor *a = eager_add(eager_mul(x, eager_sigmoid(x)), eager_mul(x, eager_scalar(0.5)));
    return eager_sub(eager_mul(eager_tanh(a), eager_scalar(2)), eager_scalar(1));
}

static void check_level(const char *name, const graph *g0, int level, eager_tensor *const *xs,
                        int nx)
{
    graph *g = graph_clone(g0);
    opt_options o = opt_default_options();
    o.level = level;
    opt_report rep;
    char err[512] = "";
    CHECK_MSG(g && opt_optimize(g, &o, &rep, err, sizeof err) == TG_OK, "%s -O%d: %s", name,
              level, err);
    if (!g)
        return;
    CHECK_MSG(g->values[g->outputs[0].value].dyn == g0->values[g0->outputs[0].value].dyn,
              "%s -O%d keeps the output's dynamic batch", name, level);
    /* idempotence: the same pipeline again changes nothing */
    int32_t nodes = graph_live_nodes(g);
    opt_report again;
    CHECK(opt_optimize(g, &o, &again, err, sizeof err) == TG_OK);
    int edits = 0;
    for (int i = 0; i < again.npasses; i++)
        edits += again.pass[i].removed + again.pass[i].fused + again.pass[i].rewritten;
    CHECK_MSG(graph_live_nodes(g) == nodes && edits == 0,
              "%s -O%d is idempotent (%d edits the second time)", name, level, edits);
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    CHECK_MSG(s != NULL, "%s -O%d compiles: %s", name, level, err);
    for (int k = 0; s && k < nx; k++) {
        eager_tensor *ref[1] = {NULL}, *got[1] = {NULL};
        CHECK(eager_interpret(g0, &xs[k], 1, ref, 1, NULL) == TG_OK);
        CHECK(eager_interpret(g, &xs[k], 1, got, 1, NULL) == TG_OK);
        replay_tensor in = {.name = "x", .type = *eager_type(xs[k]), .input = eager_peek(xs[k])},
                      out = {NULL};
        CHECK_MSG(replay_run(s, &in, 1, &out, 1) == TG_OK, "%s -O%d replays: %s", name, level,
                  replay_session_error(s));
        if (ref[0] && got[0] && out.data) {
            int64_t n = eager_numel(ref[0]);
            double e1 = check_normalized_error(eager_peek(got[0]), eager_peek(ref[0]), n);
            double e2 = check_normalized_error(out.data, eager_peek(ref[0]), n);
            CHECK_MSG(e1 <= 1e-4 && e2 <= 1e-4,
                      "%s -O%d batch %lld: interpreter error %g, replay error %g (<= 1e-4)",
                      name, level, (long long)eager_dim(xs[k], 0), e1, e2);
        }
        eager_release(ref[0]);
        eager_release(got[0]);
    }
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    for (int k = 0; k <= MODEL_COUNT; k++) {
        model m = k < MODEL_COUNT ? model_make(k) : (model){"chain", chain, 0, {0}, TG_SHAPE(4, 1000)};
        eager_tensor *xs[2] = {model_input(&m, m.input_shape.v[0], 10 + (uint64_t)k),
                               model_input(&m, 3, 20 + (uint64_t)k)};
        graph *g = model_trace(&m, xs[0]);
        for (int level = 0; g && level <= 3; level++)
            check_level(m.name, g, level, xs, 2);
        graph_free(g);
        eager_release(xs[0]);
        eager_release(xs[1]);
        model_free(&m);
    }
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
