/*
 * load_replay.c - step 2 of the demo, in a fresh process: load the saved
 * graph, compile a replay plan, run it on a seeded batch (timed), check it
 * against the reference interpreter, and compare with step 1's eager time.
 *
 *   example_load_replay [model.tgraph]
 */
#include <stdio.h>
#include <string.h>

#include "eager/interp.h"
#include "example_util.h"
#include "formats/tgraph.h"
#include "replay/replay.h"
#include "tracegraph.h"

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "model.tgraph";
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: example_load_replay [model.tgraph]\n");
        return 2;
    }
    char err[1024];
    double t0 = example_now_ms();
    graph *g = format_load(path, err, sizeof err);
    double load_ms = example_now_ms() - t0;
    if (!g) {
        fprintf(stderr, "load_replay: %s\n", err);
        return 1;
    }
    replay_plan *p = replay_compile(g, NULL, err, sizeof err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (!s) {
        fprintf(stderr, "load_replay: %s\n", p ? "out of memory" : err);
        return 1;
    }
    printf("loaded %s in %.2f ms: %d inputs, %d outputs, %d steps, arena %zu bytes\n", path,
           load_ms, replay_num_inputs(p), replay_num_outputs(p), replay_num_steps(p),
           replay_workspace_size(p));

    eager_tensor *x = eager_rand_uniform(TG_SHAPE(64, 784), 1, 0.0f, 1.0f);
    replay_tensor in = {"x", *eager_type(x), (void *)eager_peek(x)}, out = {NULL};
    double t[100];
    for (int r = 0; r < 100; r++) {
        t0 = example_now_ms();
        if (replay_run(s, &in, 1, &out, 1) != TG_OK) {
            fprintf(stderr, "load_replay: %s\n", replay_session_error(s));
            return 1;
        }
        t[r] = example_now_ms() - t0;
    }
    double replay_ms = example_median(t, 100);

    /* The same batch through the reference interpreter: must agree. */
    eager_tensor *ref[1] = {NULL};
    double maxdiff = -1;
    if (eager_interpret(g, &x, 1, ref, 1, NULL) == TG_OK) {
        const float *a = out.data, *b = eager_peek(ref[0]);
        maxdiff = 0;
        for (int64_t i = 0; i < eager_numel(ref[0]); i++) {
            double d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
            maxdiff = d > maxdiff ? d : maxdiff;
        }
    }
    /* A batch of 8: the dynamic dim at work, planned on first use. */
    eager_tensor *x8 = eager_rand_uniform(TG_SHAPE(8, 784), 2, 0.0f, 1.0f);
    replay_tensor in8 = {"x", *eager_type(x8), (void *)eager_peek(x8)}, out8 = {NULL};
    int ok8 = replay_run(s, &in8, 1, &out8, 1) == TG_OK;

    printf("replay: median of 100 runs %.3f ms (batch 64, 1 thread)\n", replay_ms);
    printf("replay vs reference interpreter: max abs difference %g\n", maxdiff);
    printf("batch 8 on the same plan: %s, logits [%lld,%lld]\n", ok8 ? "ok" : replay_session_error(s),
           (long long)out8.type.dim[0], (long long)out8.type.dim[1]);
    char side[1024];
    snprintf(side, sizeof side, "%s.eager_ms", path);
    FILE *f = fopen(side, "r");
    double eager_ms;
    if (f && fscanf(f, "%lf", &eager_ms) == 1)
        printf("eager %.3f ms vs replay %.3f ms: %.2fx\n", eager_ms, replay_ms, eager_ms / replay_ms);
    if (f)
        fclose(f);
    eager_release(ref[0]);
    eager_release(x);
    eager_release(x8);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    return maxdiff == 0 && ok8 ? 0 : 1;
}
