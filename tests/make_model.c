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
 *                  mlp_int.npy (i32[4,32]: a wrong dtype), mlp_x256.npy
 *                  (batch 256: a larger arena, for --max-memory)
 *   branchy.tgraph a data-dependent branch (relu if sum(x) > 0, else neg):
 *                  a decision guard; branchy_x.npy -> branchy_y.npy takes the
 *                  traced branch, branchy_other.npy the other one;
 *                  branchy_site.txt holds the guard's "make_model.c:LINE branchy"
 *   warnread.tgraph  relu(x) traced with value_reads = GRAPH_GUARD_WARN and a
 *                  "printed" eager_item of max(x) (2 when traced): a warn-policy
 *                  value guard; warnread_x.npy takes it as traced,
 *                  warnread_other.npy (max 5) changes it; warnread_site.txt
 *                  holds "make_model.c:LINE warnread"
 *   pair.tgraph    two inputs a, b (f32[2,3]) and two outputs sum = a + 2b,
 *                  prod = a * b: pair_a.npy, pair_b.npy -> pair_sum.npy,
 *                  pair_prod.npy; pair_nan_a.npy, pair_nan_b.npy hold NaN and
 *                  infinities (both runs of check then make NaN and inf)
 *   wide_I_O.tgraph  I inputs x0.. (f32[2]) and O outputs y0.. with
 *                  y_k = x_(k mod I) + x_((k+1) mod I), built from text IR:
 *                  wide_1_65, wide_2_200, wide_65_65, wide_65_1, wide_200_200;
 *                  wide_x<i>.npy holds x_i = [i, -i/2], and wide_I_O_y<k>.npy
 *                  the expected y_k (computed here by a plain loop)
 *   esc.tgraph     names full of terminal escape sequences and bytes that are
 *                  not UTF-8 (graph, input, output, sym, call site): the
 *                  commands must print them escaped; esc_x.npy an input
 * The eager outputs are what replay must reproduce bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eager/eager.h"
#include "formats/npy.h"
#include "formats/tgraph.h"
#include "graph/text.h"
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
    rc |= save_npy("mlp_x256.npy", eager_rand_uniform(TG_SHAPE(256, 32), 103, -1, 1));
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

/* A read that decides nothing, like printing a loss; under the warn policy. */
static eager_tensor *warnread(eager_tensor *x)
{
    read_line = __LINE__ + 1;
    double max = eager_item(eager_reduce_max(x, TG_NOINTS, 0));
    (void)max;
    return eager_relu(x);
}

static int make_warnread(void)
{
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){1, 2, -0.5f}));
    eager_tensor *other = eager_from_data(GRAPH_F32, TG_SHAPE(3), ((float[]){5, 2, -0.5f}));
    trace_opts o = trace_default_opts();
    o.value_reads = GRAPH_GUARD_WARN;
    trace_begin(&o);
    trace_input(x, "x");
    trace_output(warnread(x), "y");
    int rc = save_graph("warnread.tgraph", trace_freeze());
    rc |= save_npy("warnread_x.npy", x) | save_npy("warnread_other.npy", other);
    eager_pool_pop();
    char path[1024];
    snprintf(path, sizeof path, "%s/warnread_site.txt", outdir);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "make_model.c:%d warnread\n", read_line) < 0 || fclose(f) != 0) {
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

/* Parses text IR and saves it as name. */
static int save_text(const char *name, const char *text)
{
    char err[512];
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    if (!g) {
        fprintf(stderr, "make_model: %s: %s\n", name, err);
        return -1;
    }
    return save_graph(name, g);
}

static int save_f32(const char *name, const float *data, int64_t n)
{
    char path[1024], err[512];
    graph_type t = {GRAPH_F32, 1, {n}};
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (format_npy_save(path, &t, data, err, sizeof err) != TG_OK) {
        fprintf(stderr, "make_model: %s: %s\n", name, err);
        return -1;
    }
    return 0;
}

static int make_pair_nan(void)
{
    float a[6] = {NAN, INFINITY, -INFINITY, 1, NAN, 2};
    float b[6] = {NAN, 1, -2, INFINITY, 3, -INFINITY};
    char path[1024], err[512];
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    int rc = 0;
    snprintf(path, sizeof path, "%s/pair_nan_a.npy", outdir);
    rc |= format_npy_save(path, &t, a, err, sizeof err) != TG_OK;
    snprintf(path, sizeof path, "%s/pair_nan_b.npy", outdir);
    rc |= format_npy_save(path, &t, b, err, sizeof err) != TG_OK;
    if (rc)
        fprintf(stderr, "make_model: pair_nan: %s\n", err);
    return rc ? -1 : 0;
}

/* wide_<nin>_<nout>.tgraph and its expected outputs (see the top). */
static int make_wide(int nin, int nout)
{
    size_t cap = 64 * (size_t)(nin + nout) + 256, k = 0;
    char *t = malloc(cap), name[64];
    if (!t)
        return -1;
    k += (size_t)snprintf(t + k, cap - k, "graph wide(");
    for (int i = 0; i < nin; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s%%x%d: f32[2]", i ? ", " : "", i);
    k += (size_t)snprintf(t + k, cap - k, ") -> (");
    for (int j = 0; j < nout; j++)
        k += (size_t)snprintf(t + k, cap - k, "%sy%d: f32[2]", j ? ", " : "", j);
    k += (size_t)snprintf(t + k, cap - k, ") {\n");
    for (int j = 0; j < nout; j++)
        k += (size_t)snprintf(t + k, cap - k, "  %%%d: f32[2] = add(%%x%d, %%x%d)\n",
                              nin + j, j % nin, (j + 1) % nin);
    for (int j = 0; j < nout; j++)
        k += (size_t)snprintf(t + k, cap - k, "  return y%d = %%%d\n", j, nin + j);
    snprintf(t + k, cap - k, "}\n");
    snprintf(name, sizeof name, "wide_%d_%d.tgraph", nin, nout);
    int rc = save_text(name, t);
    free(t);
    for (int j = 0; rc == 0 && j < nout; j++) {
        int a = j % nin, b = (j + 1) % nin;
        float y[2] = {(float)a + (float)b, -(float)a / 2 + -(float)b / 2};
        snprintf(name, sizeof name, "wide_%d_%d_y%d.npy", nin, nout, j);
        rc = save_f32(name, y, 2);
    }
    return rc;
}

static int make_wide_inputs(int n)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        float x[2] = {(float)i, -(float)i / 2};
        snprintf(name, sizeof name, "wide_x%d.npy", i);
        if (save_f32(name, x, 2))
            return -1;
    }
    return 0;
}

/* Escape sequences (ESC [ ... m, OSC ... BEL, clear screen), a C1 CSI
 * (0xc2 0x9b), a stray byte 0xff, an overlong '/' (0xc0 0xaf), a surrogate
 * (0xed 0xa0 0x80) and a backslash, in every kind of name; and an 'é'
 * (0xc3 0xa9), valid UTF-8 that must stay as it is. */
static int make_esc(void)
{
    static const char text[] =
        "graph \"g\\xc3\\xa9\\xc0\\xaf\\xed\\xa0\\x80\\x1b[2J\"(%0 \"x\\x1b[31mred\\xff\": f32[\"B\\x1b[1m\",3]) ->\n"
        "    (\"y\\x1b]0;pwned\\x07\\\\\": f32[\"B\\x1b[1m\",3]) {\n"
        "  sym \"B\\x1b[1m\" = 2\n"
        "  %1: f32[\"B\\x1b[1m\",3] = add(%0, %0) !p0\n"
        "  return \"y\\x1b]0;pwned\\x07\\\\\" = %1\n"
        "}\n"
        "provenance {\n"
        "  p0 = \"evil\\x1b[5m.c\":7 \"f\\xc2\\x9bn\"\n"
        "}\n";
    float x[6] = {1, 2, 3, 4, 5, 6};
    char path[1024], err[512];
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    snprintf(path, sizeof path, "%s/esc_x.npy", outdir);
    if (format_npy_save(path, &t, x, err, sizeof err) != TG_OK) {
        fprintf(stderr, "make_model: esc_x.npy: %s\n", err);
        return -1;
    }
    return save_text("esc.tgraph", text);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_model OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    int rc = make_mlp() | make_branchy() | make_warnread() | make_pair() | make_pair_nan() | make_esc();
    rc |= make_wide_inputs(200) | make_wide(1, 65) | make_wide(2, 200) | make_wide(65, 65) |
          make_wide(65, 1) | make_wide(200, 200);
    return rc ? 1 : 0;
}
