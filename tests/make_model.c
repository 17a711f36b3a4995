/*
 * make_model.c - writes the models and arrays tests/test_cli.sh works on.
 *
 *   make_model OUTDIR
 *
 * Traces and saves (format_save), with eager inputs and outputs as .npy:
 *   mlp.tgraph     tests/models.c's MLP, batch dynamic ("B", traced at 4),
 *                  weights as params fc1.weight, fc1.bias, fc2.weight, fc2.bias
 *                  mlp_x.npy -> mlp_y.npy (batch 4), mlp_x3.npy -> mlp_y3.npy
 *                  (batch 3), mlp_bad.npy (f32[4,31]: a wrong shape),
 *                  mlp_int.npy (i32[4,32]: a wrong dtype)
 *   branchy.tgraph a data-dependent branch (relu if sum(x) > 0, else neg):
 *                  a decision guard; branchy_x.npy -> branchy_y.npy takes the
 *                  traced branch, branchy_other.npy the other one;
 *                  branchy_site.txt holds the guard's "make_model.c:LINE branchy"
 *   pair.tgraph    two inputs a, b (f32[2,3]) and two outputs sum = a + 2b,
 *                  prod = a * b: pair_a.npy, pair_b.npy -> pair_sum.npy,
 *                  pair_prod.npy
 * The eager outputs are what replay must reproduce bit for bit.
 */
#include <stdio.h>
#include <string.h>

#include "eager/eager.h"
#include "formats/npy.h"
#include "formats/tgraph.h"
#include "models.h"
#include "tracer/trace.h"

static const char *outdir;
static int read_line;

static int save_npy(const char *name, const eager_tensor *t)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (!t || format_npy_save(path, eager_type(t), eager_peek(t), err, sizeof err) != TG_OK) {
        fprintf(stderr, "make_model: %s: %s\n", name, t ? err : eager_error());
        return -1;
    }
    return 0;
}

static int save_graph(const char *name, graph *g)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (!g || format_save(g, path, NULL, err, sizeof err) != TG_OK) {
        fprintf(stderr, "make_model: %s: %s\n", name, g ? err : eager_error());
        graph_free(g);
        return -1;
    }
    graph_free(g);
    return 0;
}

static int make_mlp(void)
{
    static const char *names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    model m = model_make(MODEL_MLP);
    eager_pool_push();
    eager_tensor *x = model_input(&m, 4, 100), *x3 = model_input(&m, 3, 101);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "B");
    for (int i = 0; i < m.nparams; i++)
        trace_param(m.params[i], names[i]);
    trace_output(m.forward(x, m.params), "y");
    int rc = save_graph("mlp.tgraph", trace_freeze());
    rc |= save_npy("mlp_x.npy", x) | save_npy("mlp_y.npy", m.forward(x, m.params));
    rc |= save_npy("mlp_x3.npy", x3) | save_npy("mlp_y3.npy", m.forward(x3, m.params));
    rc |= save_npy("mlp_bad.npy", eager_rand_uniform(TG_SHAPE(4, 31), 102, -1, 1));
    rc |= save_npy("mlp_int.npy", eager_full(GRAPH_I32, TG_SHAPE(4, 32), 1));
    eager_pool_pop();
    model_free(&m);
    return rc;
}

/* relu(x) if sum(x) > 0 else -x: the branch is a guard in the trace. */
static eager_tensor *branchy(eager_tensor *x)
{
    eager_tensor *pos = eager_gt(eager_reduce_sum(x, TG_NOINTS, 0), eager_scalar(0));
    read_line = __LINE__ + 1;
    return eager_bool(pos) ? eager_relu(x) : eager_neg(x);
}

static int make_branchy(void)
{
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){1, 2, -0.5f}));
    eager_tensor *other = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){-1, -2, 0.5f}));
    trace_begin(NULL);
    trace_input(x, "x");
    trace_output(branchy(x), "y");
    int rc = save_graph("branchy.tgraph", trace_freeze());
    rc |= save_npy("branchy_x.npy", x) | save_npy("branchy_y.npy", branchy(x));
    rc |= save_npy("branchy_other.npy", other);
    eager_pool_pop();
    char path[1024];
    snprintf(path, sizeof path, "%s/branchy_site.txt", outdir);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "make_model.c:%d branchy\n", read_line) < 0 || fclose(f) != 0) {
        fprintf(stderr, "make_model: cannot write %s\n", path);
        return -1;
    }
    return rc;
}

static eager_tensor *pair_sum(eager_tensor *a, eager_tensor *b)
{
    return eager_add(a, eager_mul(b, eager_scalar(2)));
}

static int make_pair(void)
{
    eager_pool_push();
    eager_tensor *a = eager_rand_uniform(TG_SHAPE(2, 3), 7, -1, 1);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(2, 3), 8, -1, 1);
    trace_begin(NULL);
    trace_input(a, "a");
    trace_input(b, "b");
    trace_output(pair_sum(a, b), "sum");
    trace_output(eager_mul(a, b), "prod");
    int rc = save_graph("pair.tgraph", trace_freeze());
    rc |= save_npy("pair_a.npy", a) | save_npy("pair_b.npy", b);
    rc |= save_npy("pair_sum.npy", pair_sum(a, b)) | save_npy("pair_prod.npy", eager_mul(a, b));
    eager_pool_pop();
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_model OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    int rc = make_mlp() | make_branchy() | make_pair();
    return rc ? 1 : 0;
}
