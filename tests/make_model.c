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
 *   train.tgraph   a training step (tests/test_train_state.c's): an MLP
 *                  5-6-3, MSE loss, SGD on states fc1.weight, fc1.bias,
 *                  fc2.weight, fc2.bias and lr (f32[], 0.05), inputs x
 *                  f32[4,5] and y f32[4,3], output loss; traced after one
 *                  eager step (a step with a backward cannot have a dynamic
 *                  batch: trace_freeze refuses it).  The dataset: train_x.npy f32[10,5],
 *                  train_y.npy f32[10,3].  What `tracegraph train` must
 *                  reproduce, from eager steps on the same rows (step k:
 *                  rows [4k, 4k+4) mod 10): train_expect5.ckpt (the state
 *                  after 5 steps from the traced one) and train_loss5.txt
 *                  (its "step K/5  loss L" lines); train_lr_expect.ckpt
 *                  (train.tgraph, 3 steps at lr 0.2).  Bad datasets: train_xdim.npy
 *                  f32[10,4], train_xint.npy i32[10,5], train_y9.npy
 *                  f32[9,3], train_x3.npy f32[3,5] (fewer rows than a batch)
 *   train_sum.tgraph  a step from text IR: state w f32[1] += t * (the sum of
 *                  the rows of x fed), loss = w; inputs x f32[2,1], t f32[]
 *                  (0-d: fed whole); sum_x.npy = [[1],[2],[3]], sum_t.npy = 10
 *   train_noin.tgraph  no inputs: w f32[3] <- w * w, loss = sum(w) before
 *   train_empty.tgraph an input of 0 rows (x f32[0,3]): train refuses it
 *   train_x.idx, train_y.idx  a dataset for train.tgraph as IDX files: x u8
 *                  [10,5,1] (v / 255 fed, rows reshaped to [5]), y f32 [10,3];
 *                  train_idx_expect5.ckpt the state after 5 eager steps on them
 *   fmnist.tgraph  softmax regression on Fashion-MNIST (x f32[16,784], labels
 *                  i64[16], SGD at lr 0.1); fmnist_expect3.ckpt the state after 3
 *                  eager steps on the first 48 training images, written only
 *                  where /usr/share/datasets/fashion-mnist is installed
 * The eager outputs are what replay must reproduce bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eager/eager.h"
#include "formats/ckpt.h"
#include "formats/idx.h"
#include "formats/npy.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "models.h"
#include "tracer/trace.h"

static const char *outdir;
static char fmnist_graph_name[256];
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

/* ---- a training step (train*.tgraph) ---- */

enum { TRAIN_ROWS = 10, TRAIN_D = 5, TRAIN_H = 6, TRAIN_C = 3 };

typedef struct train_model {
    eager_tensor *p[4], *lr; /* fc1.weight, fc1.bias, fc2.weight, fc2.bias */
} train_model;

static const char *const train_names[5] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                           "lr"};

static train_model train_model_make(void)
{
    train_model m;
    m.p[0] = eager_rand_uniform(TG_SHAPE(TRAIN_H, TRAIN_D), 11, -0.6f, 0.6f);
    m.p[1] = eager_rand_uniform(TG_SHAPE(TRAIN_H), 12, -0.1f, 0.1f);
    m.p[2] = eager_rand_uniform(TG_SHAPE(TRAIN_C, TRAIN_H), 13, -0.6f, 0.6f);
    m.p[3] = eager_rand_uniform(TG_SHAPE(TRAIN_C), 14, -0.1f, 0.1f);
    m.lr = eager_scalar(0.05);
    for (int i = 0; i < 4; i++)
        eager_requires_grad(m.p[i], 1);
    return m;
}

static void train_model_free(train_model *m)
{
    for (int i = 0; i < 4; i++) {
        eager_zero_grad(m->p[i]);
        eager_release(m->p[i]);
    }
    eager_release(m->lr);
}

/* One eager SGD step on (x, y); the loss, or NAN on an error. */
static double train_step(train_model *m, eager_tensor *x, eager_tensor *y, eager_tensor **loss_out)
{
    eager_pool_push();
    eager_tensor *h = eager_relu(eager_linear(x, m->p[0], m->p[1]));
    eager_tensor *loss = eager_mse_loss(eager_linear(h, m->p[2], m->p[3]), y);
    int ok = eager_backward(loss) == TG_OK;
    eager_no_grad_begin();
    for (int i = 0; ok && i < 4; i++) {
        ok = eager_assign(m->p[i], eager_sub(m->p[i], eager_mul(m->lr, eager_grad(m->p[i])))) ==
             TG_OK;
        eager_zero_grad(m->p[i]);
    }
    eager_no_grad_end();
    double l = ok && eager_peek(loss) ? *(const float *)eager_peek(loss) : NAN;
    if (loss_out)
        *loss_out = eager_retain(loss);
    eager_pool_pop();
    if (!ok)
        fprintf(stderr, "make_model: a training step failed: %s\n", eager_error());
    return l;
}

/* Rows [k*B, (k+1)*B) of data (TRAIN_ROWS rows of cols), wrapping. */
static eager_tensor *train_rows(const float *data, int cols, int64_t k, int B)
{
    float buf[TRAIN_ROWS * TRAIN_D];
    for (int r = 0; r < B; r++)
        memcpy(buf + r * cols, data + ((k * B + r) % TRAIN_ROWS) * cols, sizeof(float) * (size_t)cols);
    return eager_from_data(GRAPH_F32, TG_SHAPE(B, cols), buf);
}

/* Traces one step of m on a batch of B rows (dynamic: dim 0 as "B"). */
static graph *train_trace(train_model *m, int B, int dynamic)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(B, TRAIN_D), 300, -1, 1);
    eager_tensor *y = eager_rand_uniform(TG_SHAPE(B, TRAIN_C), 301, -1, 1), *loss = NULL;
    trace_begin(NULL);
    trace_input(x, "x");
    trace_input(y, "y");
    if (dynamic) {
        trace_dynamic(x, 0, "B");
        trace_dynamic(y, 0, "B");
    }
    for (int i = 0; i < 4; i++)
        trace_state(m->p[i], train_names[i]);
    trace_state(m->lr, "lr");
    train_step(m, x, y, &loss);
    trace_output(loss, "loss");
    graph *g = trace_freeze();
    eager_release(loss);
    eager_pool_pop();
    return g;
}

/* m's state as a checkpoint (the entries replay_state_save writes). */
static int train_save_ckpt(const char *name, const char *graph_name, train_model *m)
{
    char path[1024], err[512];
    format_ckpt_entry e[5];
    for (int i = 0; i < 5; i++) {
        eager_tensor *t = i < 4 ? m->p[i] : m->lr;
        e[i] = (format_ckpt_entry){train_names[i], *eager_type(t), eager_peek(t)};
    }
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (format_ckpt_save(path, graph_name, e, 5, err, sizeof err) != TG_OK) {
        fprintf(stderr, "make_model: %s: %s\n", name, err);
        return -1;
    }
    return 0;
}

/* train_x.npy's and train_y.npy's data (make_train). */
static float train_xd[TRAIN_ROWS * TRAIN_D], train_yd[TRAIN_ROWS * TRAIN_C];

/* Traces a step of a fresh model (after one eager step on train_x/y.npy's
 * data), saves it as name, then runs `steps` eager steps of batch B on
 * xd, yd from the traced state, writing the state to expect (and the loss
 * lines to losses, if any). */
static int train_case(const char *name, int B, int dynamic, int steps, float lr,
                      const float *xd, const float *yd, const char *expect, const char *losses)
{
    train_model m = train_model_make();
    eager_pool_push();
    eager_tensor *x = train_rows(train_xd, TRAIN_D, 7, B), *y = train_rows(train_yd, TRAIN_C, 7, B);
    train_step(&m, x, y, NULL);
    eager_pool_pop();
    graph *g = train_trace(&m, 4, dynamic);
    char gname[256];
    snprintf(gname, sizeof gname, "%s", g ? graph_name(g) : "");
    int rc = name ? save_graph(name, g) : g ? 0 : -1;
    if (!name)
        graph_free(g); /* the same step as another case's: only its expectation */
    FILE *f = NULL;
    if (losses) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", outdir, losses);
        if (!(f = fopen(path, "w")))
            rc = -1;
    }
    if (lr != 0) {
        float *p = eager_data_mut(m.lr);
        if (p)
            *p = lr;
    }
    for (int k = 0; rc == 0 && k < steps; k++) {
        eager_pool_push();
        double l = train_step(&m, train_rows(xd, TRAIN_D, k, B), train_rows(yd, TRAIN_C, k, B),
                              NULL);
        eager_pool_pop();
        if (isnan(l))
            rc = -1;
        if (f)
            fprintf(f, "step %d/%d  loss %.6g\n", k + 1, steps, l);
    }
    if (f && fclose(f) != 0)
        rc = -1;
    rc |= train_save_ckpt(expect, gname, &m);
    train_model_free(&m);
    return rc;
}

/* Text-IR steps: sums of the rows fed (which rows each step gets, and a
 * 0-d input fed whole), and steps with no input and with empty batches. */
static int make_train_text(void)
{
    static const char sum[] = "graph sum(%x: f32[2,1], %t: f32[]) -> (loss: f32[]) {\n"
                              "  %w: f32[1] = state [0]\n"
                              "  %s: f32[1] = reduce_sum(%x) {axes=[0]}\n"
                              "  %d: f32[1] = mul(%t, %s)\n"
                              "  %w2: f32[1] = add(%w, %d)\n"
                              "  %loss: f32[] = reduce_sum(%w2)\n"
                              "  return loss = %loss\n"
                              "  next %w = %w2\n"
                              "}\n";
    static const char noin[] = "graph noin() -> (loss: f32[]) {\n"
                               "  %w: f32[3] = state [0.5, -0.25, 1]\n"
                               "  %loss: f32[] = reduce_sum(%w)\n"
                               "  %w2: f32[3] = mul(%w, %w)\n"
                               "  return loss = %loss\n"
                               "  next %w = %w2\n"
                               "}\n";
    static const char empty[] = "graph empty(%x: f32[0,3]) -> (loss: f32[]) {\n"
                                "  %w: f32[3] = state [0.5, -0.25, 1]\n"
                                "  %g: f32[3] = reduce_sum(%x) {axes=[0]}\n"
                                "  %w2: f32[3] = sub(%w, %g)\n"
                                "  %loss: f32[] = reduce_sum(%w2)\n"
                                "  return loss = %loss\n"
                                "  next %w = %w2\n"
                                "}\n";
    float x[3] = {1, 2, 3}, t = 10;
    graph_type xt = {GRAPH_F32, 2, {3, 1}}, tt = {GRAPH_F32, 0, {0}};
    char path[1024], err[512];
    int rc = save_text("train_sum.tgraph", sum) | save_text("train_noin.tgraph", noin) |
             save_text("train_empty.tgraph", empty);
    snprintf(path, sizeof path, "%s/sum_x.npy", outdir);
    rc |= format_npy_save(path, &xt, x, err, sizeof err) != TG_OK;
    snprintf(path, sizeof path, "%s/sum_t.npy", outdir);
    rc |= format_npy_save(path, &tt, &t, err, sizeof err) != TG_OK;
    if (rc)
        fprintf(stderr, "make_model: the text-IR training steps: %s\n", err);
    return rc ? -1 : 0;
}

/* Writes an IDX file: type code, dims, then the elements as big-endian
 * bytes of size es each (src in host order). */
static int write_idx(const char *name, int code, int ndim, const int64_t *dim, const void *src,
                     size_t es, int64_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    unsigned char h[4] = {0, 0, (unsigned char)code, (unsigned char)ndim};
    ok = ok && fwrite(h, 1, 4, f) == 4;
    for (int d = 0; ok && d < ndim; d++) {
        unsigned char b[4] = {(unsigned char)(dim[d] >> 24), (unsigned char)(dim[d] >> 16),
                              (unsigned char)(dim[d] >> 8), (unsigned char)dim[d]};
        ok = fwrite(b, 1, 4, f) == 4;
    }
    for (int64_t i = 0; ok && i < n; i++) {
        unsigned char b[8];
        for (size_t k = 0; k < es; k++) /* little-endian host (x86, arm64) to big */
            b[k] = ((const unsigned char *)src)[(size_t)i * es + es - 1 - k];
        ok = fwrite(b, 1, es, f) == es;
    }
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "make_model: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* train.tgraph's dataset as IDX files: x u8 [10,5,1] (a pixel v feeds v /
 * 255, each row reshaped to the input's [5]), y f32 [10,3]; and the state
 * after 5 eager steps on them. */
static int make_train_idx(void)
{
    unsigned char xb[TRAIN_ROWS * TRAIN_D];
    float xd[TRAIN_ROWS * TRAIN_D], yd[TRAIN_ROWS * TRAIN_C];
    for (int i = 0; i < TRAIN_ROWS * TRAIN_D; i++) {
        xb[i] = (unsigned char)((i * 73 + 11) % 256);
        xd[i] = (float)xb[i] / 255.0f;
    }
    for (int i = 0; i < TRAIN_ROWS * TRAIN_C; i++)
        yd[i] = (float)((i * 37) % 19) / 9.0f - 1.0f;
    int64_t xdim[3] = {TRAIN_ROWS, TRAIN_D, 1}, ydim[2] = {TRAIN_ROWS, TRAIN_C};
    int rc = write_idx("train_x.idx", 0x08, 3, xdim, xb, 1, TRAIN_ROWS * TRAIN_D) |
             write_idx("train_y.idx", 0x0D, 2, ydim, yd, 4, TRAIN_ROWS * TRAIN_C);
    return rc | train_case(NULL, 4, 0, 5, 0, xd, yd, "train_idx_expect5.ckpt", NULL);
}

/*
 * fmnist.tgraph: a softmax regression step on Fashion-MNIST (x f32[16,784],
 * labels i64[16], linear 784 -> 10, cross-entropy, SGD at lr 0.1), states
 * fc.weight, fc.bias, lr; and, when Debian's dataset-fashion-mnist is
 * installed, fmnist_expect3.ckpt: the state after 3 eager steps on the
 * training set's first 48 images.
 */
static int make_fmnist(void)
{
    enum { FB = 16, FIN = 784, FOUT = 10 };
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(FOUT, FIN), 21, -0.03f, 0.03f);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(FOUT), 22, -0.03f, 0.03f);
    eager_tensor *lr = eager_scalar(0.1);
    eager_requires_grad(w, 1);
    eager_requires_grad(b, 1);
    eager_tensor *p[2] = {w, b};
    int rc = 0;
    graph *g = NULL;
    float *images = NULL;
    int64_t *labels = NULL;
    for (int k = -1; k < 3 && rc == 0; k++) { /* -1: the traced step */
        eager_pool_push();
        eager_tensor *x, *y;
        if (k < 0) {
            x = eager_rand_uniform(TG_SHAPE(FB, FIN), 23, 0, 1);
            y = eager_full(GRAPH_I64, TG_SHAPE(FB), 3);
            trace_begin(NULL);
            trace_input(x, "x");
            trace_input(y, "labels");
            trace_state(w, "fc.weight");
            trace_state(b, "fc.bias");
            trace_state(lr, "lr");
        } else {
            x = eager_from_data(GRAPH_F32, TG_SHAPE(FB, FIN), images + (size_t)k * FB * FIN);
            y = eager_from_data(GRAPH_I64, TG_SHAPE(FB), labels + (size_t)k * FB);
        }
        eager_tensor *loss = eager_cross_entropy(eager_linear(x, w, b), y, 0.0);
        rc = eager_backward(loss) == TG_OK ? 0 : -1;
        eager_no_grad_begin();
        for (int i = 0; rc == 0 && i < 2; i++) {
            rc = eager_assign(p[i], eager_sub(p[i], eager_mul(lr, eager_grad(p[i])))) == TG_OK
                     ? 0 : -1;
            eager_zero_grad(p[i]);
        }
        eager_no_grad_end();
        if (k < 0) {
            trace_output(loss, "loss");
            g = trace_freeze();
        }
        eager_pool_pop();
        if (rc)
            fprintf(stderr, "make_model: fmnist step %d: %s\n", k, eager_error());
        if (k < 0) {
            char gname[256];
            snprintf(gname, sizeof gname, "%s", g ? graph_name(g) : "");
            rc = save_graph("fmnist.tgraph", g);
            /* the expectation only where the dataset is */
            char err[512], ipath[512], lpath[512];
            graph_type it, lt;
            snprintf(ipath, sizeof ipath, "%s/train-images-idx3-ubyte.gz", FORMAT_IDX_FASHION_MNIST);
            snprintf(lpath, sizeof lpath, "%s/train-labels-idx1-ubyte.gz", FORMAT_IDX_FASHION_MNIST);
            if (access(ipath, R_OK) != 0 || access(lpath, R_OK) != 0)
                break;
            if (format_idx_load(ipath, GRAPH_F32, FORMAT_IDX_SCALE, &it, (void **)&images, err,
                                sizeof err) != TG_OK ||
                format_idx_load(lpath, GRAPH_I64, 0, &lt, (void **)&labels, err,
                                sizeof err) != TG_OK) {
                fprintf(stderr, "make_model: %s\n", err);
                rc = -1;
            }
            snprintf(fmnist_graph_name, sizeof fmnist_graph_name, "%s", gname);
        }
    }
    if (rc == 0 && images) {
        char path[1024], err[512];
        format_ckpt_entry e[3] = {{"fc.weight", *eager_type(w), eager_peek(w)},
                                  {"fc.bias", *eager_type(b), eager_peek(b)},
                                  {"lr", *eager_type(lr), eager_peek(lr)}};
        snprintf(path, sizeof path, "%s/fmnist_expect3.ckpt", outdir);
        if (format_ckpt_save(path, fmnist_graph_name, e, 3, err, sizeof err) != TG_OK) {
            fprintf(stderr, "make_model: %s\n", err);
            rc = -1;
        }
    }
    free(images);
    free(labels);
    eager_zero_grad(w);
    eager_zero_grad(b);
    eager_release(w);
    eager_release(b);
    eager_release(lr);
    return rc;
}

static int make_train(void)
{
    float *xd = train_xd, *yd = train_yd;
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(TRAIN_ROWS, TRAIN_D), 310, -1, 1);
    eager_tensor *y = eager_rand_uniform(TG_SHAPE(TRAIN_ROWS, TRAIN_C), 311, -1, 1);
    int rc = save_npy("train_x.npy", x) | save_npy("train_y.npy", y);
    if (rc == 0) {
        memcpy(xd, eager_peek(x), sizeof train_xd);
        memcpy(yd, eager_peek(y), sizeof train_yd);
    }
    rc |= save_npy("train_xdim.npy", eager_rand_uniform(TG_SHAPE(TRAIN_ROWS, 4), 312, -1, 1));
    rc |= save_npy("train_xint.npy", eager_full(GRAPH_I32, TG_SHAPE(TRAIN_ROWS, TRAIN_D), 1));
    rc |= save_npy("train_y9.npy", eager_rand_uniform(TG_SHAPE(9, TRAIN_C), 313, -1, 1));
    rc |= save_npy("train_x3.npy", eager_rand_uniform(TG_SHAPE(3, TRAIN_D), 314, -1, 1));
    eager_pool_pop();
    if (rc)
        return -1;
    rc |= train_case("train.tgraph", 4, 0, 5, 0, xd, yd, "train_expect5.ckpt", "train_loss5.txt");
    rc |= train_case(NULL, 4, 0, 3, 0.2f, xd, yd, "train_lr_expect.ckpt", NULL); /* train.tgraph */
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_model OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    int rc = make_mlp() | make_branchy() | make_warnread() | make_pair() | make_pair_nan() | make_esc();
    rc |= make_train(); /* first: make_train_idx's warm step reads its data */
    rc |= make_train_idx();
    rc |= make_train_text() | make_fmnist();
    rc |= make_wide_inputs(200) | make_wide(1, 65) | make_wide(2, 200) | make_wide(65, 65) |
          make_wide(65, 1) | make_wide(200, 200);
    return rc ? 1 : 0;
}
