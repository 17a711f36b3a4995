/*
 * train.c - the training benchmark of issue 32: one training step
 * (forward + loss + backward + optimizer update) of three models at batch
 * 64 on one thread, eager against the step traced once and replayed at -O0
 * and -O2; and one epoch of Fashion-MNIST for the MLP.
 *
 *   train [--models mlp,cnn,encoder] [--steps N] [--warmup N] [--json FILE]
 *         [--export DIR] [--enc-seq T] [--save DIR] [--replay-only N] [--profile N]
 *         [--ops N]
 *   train --epoch DIR [--data DIR] [--json FILE]
 *
 * Models (the same in bench/peers/train_torch.py):
 *   mlp      x[64,784] -> Linear 512, ReLU, Linear 512, ReLU, Linear 10;
 *            cross-entropy on class indices
 *   cnn      x[64,1,28,28] -> conv 1->32 3x3 pad 1 (no bias), batch norm
 *            (training mode: batch statistics, running stats updated),
 *            ReLU, max-pool 2, conv 32->64 3x3 pad 1 (no bias), BN, ReLU,
 *            max-pool 2, dropout 0.25, Linear 3136->128, ReLU, Linear
 *            128->10; cross-entropy.
 *   encoder  x[64,T,256] (T = --enc-seq, default 16; bench's encoder
 *            workload's width, 4 heads, ffn 1024): pre-LN block, LayerNorm,
 *            MHA (qkv linear, softmax(q k^T / sqrt(64)) v, out linear),
 *            residual, LayerNorm, Linear 1024, GELU (erf), Linear 256,
 *            residual; MSE against a random target.
 * Optimizer: SGD, lr 0.01, momentum 0.9 (PyTorch's torch.optim.SGD: buf =
 * 0.9 buf + g; p -= lr buf), the op sgd_step per parameter, written back
 * with eager_assign.  The learning rate and momentum are state tensors.
 * Weights: PyTorch's default init bounds (uniform +-1/sqrt(fan_in)), BN
 * and LN weight 1 and bias 0, from fixed seeds; --export DIR writes them,
 * and each model's first batch, as DIR/<model>/<name>.npy for the PyTorch
 * side (same initial weights, same first loss).
 *
 * Per model: step 0 eager on batch 0 (its loss is "loss0", which PyTorch's
 * first step from the same weights and batch must equal), step 1 traced on
 * batch 1 (trace_state: parameters, momentum buffers, running statistics,
 * lr, momentum), the traced graph compiled at -O0 and, on a clone optimized
 * at -O2, at -O2; from the traced state the eager model and the two replay
 * sessions then run the same batches in rounds (one step of each per
 * round, the order rotating), --warmup rounds untimed and --steps timed.
 * Every round's losses are compared: the largest |replay - eager| /
 * |eager| of each level is printed, and after the rounds every state
 * tensor (max |replay - eager| / max |eager| per tensor); a gap above 1e-3
 * fails the run (a bug).  Memory: opt_memory_plan of the -O0 and the -O2
 * graphs (every intermediate in its own buffer, "naive", against the
 * planned arena) and replay_workspace_size of the -O2 plan.
 *
 * Output: a table on stderr and one JSON object per model on stdout (or
 * --json FILE, appended), times in ms (medians; min and max too):
 *   {"model", "desc", "batch", "threads": 1, "cpu_kernels", "onednn_isa",
 *    "loss0", "eager_ms", "replay_o0_ms", "replay_o2_ms" {"median", "min",
 *    "max", "runs"}, "loss_gap_o0", "loss_gap_o2", "state_gap_o0",
 *    "state_gap_o2", "nodes_o0", "nodes_o2",
 *    "naive_o0_bytes", "naive_o2_bytes", "arena_o0_bytes",
 *    "arena_o2_bytes", "workspace_o2_bytes", "lower_bound_o2_bytes",
 *    "states", "dropout": false}
 *
 * --save DIR writes the traced step at -O0 and -O2 as DIR/<model>-O<l>.tgraph
 * (for tracegraph dump/info/bench); --replay-only N, for a profiler
 * (perf record): after the trace, only N -O2 replay steps, nothing timed;
 * --profile N: N eager steps timed op by op (eager's on_op hook), by phase
 * (forward, backward, update): where a step's time goes; --ops N: the
 * CNN step's heavy nodes (convolutions and their gradients' convolutions,
 * max-pool and its gradient's chain) each traced alone and replayed at -O2
 * N times, the median of each.
 *
 * --epoch DIR: one epoch of Fashion-MNIST (--data, default
 * /usr/share/datasets/fashion-mnist) for the MLP: the initial weights and
 * a seeded permutation of the 60,000 images are written to DIR (init_*.npy,
 * perm.npy) for bench/peers/train_torch.py --epoch DIR; 937 batches of 64
 * in that order (the last 32 images dropped), step 0 eager, step 1 traced,
 * the rest replayed at -O2; then the test accuracy on the 10,000 test
 * images (eager forward on the replay session's final weights).  Pixels
 * are scaled to [0, 1].  Output: {"epoch": "mlp", "test_acc", "loss_first",
 * "loss_last", "steps", "seconds"}.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef TG_HAVE_ZLIB
#include <zlib.h>
#endif

#include "bench_util.h"
#include "formats/npy.h"
#include "formats/tgraph.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracegraph.h"
#include "tracer/trace.h"

enum { BATCH = 64, MAXP = 16, MAXS = 8, NBATCH = 4 };

typedef enum { M_MLP, M_CNN, M_ENCODER, M_COUNT } model_kind;
static const char *const kind_names[M_COUNT] = {"mlp", "cnn", "encoder"};

static int enc_seq = 16;
static const char *save_dir;
static int replay_only, profile_steps, ops_runs;
enum { ED = 256, EHEADS = 4, EFFN = 1024 };

typedef struct model {
    model_kind kind;
    int np, ns;
    eager_tensor *p[MAXP];   /* parameters (require grad) */
    const char *pname[MAXP];
    eager_tensor *buf[MAXP]; /* momentum buffers */
    char bname[MAXP][64];
    eager_tensor *s[MAXS];   /* running statistics (batch norm) */
    const char *sname[MAXS];
    eager_tensor *lr, *mom, *wd;
} model;

static void die(const char *what)
{
    fprintf(stderr, "train: %s: %s\n", what, eager_error());
    exit(1);
}

/* ---- the models ---- */

static uint64_t seed_base;

/* PyTorch's default init bound for a layer with fan_in inputs. */
static eager_tensor *uniform_param(graph_ints shape, double fan_in)
{
    double b = 1.0 / sqrt(fan_in);
    return eager_rand_uniform(shape, seed_base++, (float)-b, (float)b);
}

static void add_param(model *m, const char *name, eager_tensor *t)
{
    if (!t)
        die(name);
    m->pname[m->np] = name;
    m->p[m->np++] = t;
}

static void add_linear(model *m, const char *wname, const char *bname, int64_t out, int64_t in)
{
    add_param(m, wname, uniform_param(TG_SHAPE(out, in), (double)in));
    add_param(m, bname, uniform_param(TG_SHAPE(out), (double)in));
}

static void add_ones_zeros(model *m, const char *wname, const char *bname, int64_t n)
{
    add_param(m, wname, eager_full(GRAPH_F32, TG_SHAPE(n), 1.0));
    add_param(m, bname, eager_full(GRAPH_F32, TG_SHAPE(n), 0.0));
}

static void add_running(model *m, const char *mean, const char *var, int64_t n)
{
    m->sname[m->ns] = mean;
    m->s[m->ns++] = eager_full(GRAPH_F32, TG_SHAPE(n), 0.0);
    m->sname[m->ns] = var;
    m->s[m->ns++] = eager_full(GRAPH_F32, TG_SHAPE(n), 1.0);
}

static model make_model(model_kind k)
{
    model m;
    memset(&m, 0, sizeof m);
    m.kind = k;
    seed_base = 7000u + 100u * (uint64_t)k;
    switch (k) {
    case M_MLP:
        add_linear(&m, "fc1.weight", "fc1.bias", 512, 784);
        add_linear(&m, "fc2.weight", "fc2.bias", 512, 512);
        add_linear(&m, "fc3.weight", "fc3.bias", 10, 512);
        break;
    case M_CNN:
        add_param(&m, "conv1.weight", uniform_param(TG_SHAPE(32, 1, 3, 3), 9.0));
        add_ones_zeros(&m, "bn1.weight", "bn1.bias", 32);
        add_param(&m, "conv2.weight", uniform_param(TG_SHAPE(64, 32, 3, 3), 288.0));
        add_ones_zeros(&m, "bn2.weight", "bn2.bias", 64);
        add_linear(&m, "fc1.weight", "fc1.bias", 128, 3136);
        add_linear(&m, "fc2.weight", "fc2.bias", 10, 128);
        add_running(&m, "bn1.running_mean", "bn1.running_var", 32);
        add_running(&m, "bn2.running_mean", "bn2.running_var", 64);
        break;
    default:
        add_ones_zeros(&m, "ln1.weight", "ln1.bias", ED);
        add_linear(&m, "attn.qkv.weight", "attn.qkv.bias", 3 * ED, ED);
        add_linear(&m, "attn.out.weight", "attn.out.bias", ED, ED);
        add_ones_zeros(&m, "ln2.weight", "ln2.bias", ED);
        add_linear(&m, "ffn.fc1.weight", "ffn.fc1.bias", EFFN, ED);
        add_linear(&m, "ffn.fc2.weight", "ffn.fc2.bias", ED, EFFN);
        break;
    }
    for (int i = 0; i < m.np; i++) {
        if (eager_requires_grad(m.p[i], 1) != TG_OK)
            die("requires_grad");
        const graph_type *ty = eager_type(m.p[i]);
        graph_ints shape = TG_NOINTS;
        shape.n = ty->ndim;
        for (int d = 0; d < ty->ndim; d++)
            shape.v[d] = ty->dim[d];
        m.buf[i] = eager_full(GRAPH_F32, shape, 0.0);
        snprintf(m.bname[i], sizeof m.bname[i], "%s.momentum_buffer", m.pname[i]);
    }
    m.lr = eager_scalar(0.01);
    m.mom = eager_scalar(0.9);
    m.wd = eager_scalar(0.0);
    return m;
}

static void free_model(model *m)
{
    for (int i = 0; i < m->np; i++) {
        eager_zero_grad(m->p[i]);
        eager_release(m->p[i]);
        eager_release(m->buf[i]);
    }
    for (int i = 0; i < m->ns; i++)
        eager_release(m->s[i]);
    eager_release(m->lr);
    eager_release(m->mom);
    eager_release(m->wd);
}

/* Training-mode batch norm (the op batch_norm_train): momentum 0.1, eps
 * 1e-5, as nn.BatchNorm2d; the running statistics written in place. */
static eager_tensor *batch_norm_train(eager_tensor *x, eager_tensor *weight, eager_tensor *bias,
                                      eager_tensor *running_mean, eager_tensor *running_var)
{
    return eager_batch_norm_train(x, weight, bias, running_mean, running_var, EAGER_NONE, 1e-5,
                                  0.1);
}

/* [B,T,D] -> [B,H,T,D/H] */
static eager_tensor *heads(eager_tensor *z)
{
    return eager_transpose(eager_reshape(z, TG_SHAPE(BATCH, enc_seq, EHEADS, ED / EHEADS)),
                           TG_INTS(0, 2, 1, 3));
}

/* The forward to the loss; y NULL: the logits (the MLP, for the test set). */
static eager_tensor *forward(model *m, eager_tensor *x, eager_tensor *y)
{
    eager_tensor *const *p = m->p;
    switch (m->kind) {
    case M_MLP: {
        eager_tensor *h = eager_relu(eager_linear(x, p[0], p[1]));
        h = eager_relu(eager_linear(h, p[2], p[3]));
        eager_tensor *logits = eager_linear(h, p[4], p[5]);
        return y ? eager_cross_entropy(logits, y, 0.0) : logits;
    }
    case M_CNN: {
        graph_ints pad = TG_INTS(1), pool = TG_INTS(2, 2);
        eager_tensor *h = eager_conv2d(x, p[0], EAGER_NONE, TG_NOINTS, pad, TG_NOINTS, 1);
        h = batch_norm_train(h, p[1], p[2], m->s[0], m->s[1]);
        h = eager_max_pool2d(eager_relu(h), pool, TG_NOINTS, TG_NOINTS);
        h = eager_conv2d(h, p[3], EAGER_NONE, TG_NOINTS, pad, TG_NOINTS, 1);
        h = batch_norm_train(h, p[4], p[5], m->s[2], m->s[3]);
        h = eager_max_pool2d(eager_relu(h), pool, TG_NOINTS, TG_NOINTS);
        h = eager_dropout(eager_flatten(h, 1, -1), 0.25);
        h = eager_relu(eager_linear(h, p[6], p[7]));
        return eager_cross_entropy(eager_linear(h, p[8], p[9]), y, 0.0);
    }
    default: {
        eager_tensor *a = eager_layer_norm(x, p[0], p[1], -1, 1e-5f);
        eager_tensor *qkv[3] = {NULL, NULL, NULL};
        if (eager_split(eager_linear(a, p[2], p[3]), -1, TG_INTS(ED, ED, ED), qkv, 3) != 3)
            return NULL;
        eager_tensor *s = eager_matmul(heads(qkv[0]), heads(qkv[1]), 0, 1);
        s = eager_mul(s, eager_scalar(1.0 / sqrt((double)(ED / EHEADS))));
        eager_tensor *o = eager_matmul(eager_softmax(s, -1), heads(qkv[2]), 0, 0);
        o = eager_reshape(eager_transpose(o, TG_INTS(0, 2, 1, 3)), TG_SHAPE(BATCH, enc_seq, ED));
        eager_tensor *h = eager_add(x, eager_linear(o, p[4], p[5]));
        eager_tensor *f = eager_layer_norm(h, p[6], p[7], -1, 1e-5f);
        f = eager_linear(eager_gelu(eager_linear(f, p[8], p[9])), p[10], p[11]);
        return eager_mse_loss(eager_add(h, f), y);
    }
    }
}

/*
 * SGD with momentum (torch.optim.SGD, dampening 0, no Nesterov, no weight
 * decay): one sgd_step op per parameter, its results written back with
 * eager_assign (what eager/optim.h's optimizer does; the buffers stay the
 * model's here, so that their names match PyTorch's export).  Drops the
 * gradients.
 */
static int sgd_update(model *m)
{
    int ok = 1;
    eager_no_grad_begin();
    for (int i = 0; i < m->np && ok; i++) {
        eager_tensor *g = eager_grad(m->p[i]), *o[2] = {NULL, NULL};
        ok = g && eager_sgd_step(m->p[i], g, m->buf[i], m->lr, m->mom, m->wd, 0, o, 2) == 2 &&
             eager_assign(m->buf[i], o[1]) == TG_OK && eager_assign(m->p[i], o[0]) == TG_OK;
        eager_zero_grad(m->p[i]);
    }
    eager_no_grad_end();
    return ok;
}

/* --profile: the time from one op's end to the next one's, by phase
 * (forward, backward, update), op and output shape, through eager's on_op
 * hook. */
enum { PH_FWD, PH_BWD, PH_UPD, PH_COUNT, PROF_MAX = 1024 };
static int phase;
static double prof_last;
typedef struct prof_entry {
    int phase;
    graph_op op;
    graph_type type;
    double ms;
    long n;
} prof_entry;
static prof_entry prof[PROF_MAX];
static int nprof;

static tg_status prof_on_op(void *ud, graph_op op, eager_tensor *const *in, int nin,
                            const void *attrs, eager_tensor *const *out, int nout,
                            const eager_site *site)
{
    (void)ud, (void)in, (void)nin, (void)attrs, (void)site;
    double t = bench_now_ns() / 1e6;
    graph_type ty = {0};
    if (nout > 0 && out[0])
        ty = *eager_type(out[0]);
    int i = 0;
    while (i < nprof && !(prof[i].phase == phase && prof[i].op == op &&
                          !memcmp(&prof[i].type, &ty, sizeof ty)))
        i++;
    if (i == nprof && nprof < PROF_MAX)
        prof[nprof++] = (prof_entry){phase, op, ty, 0, 0};
    if (i < nprof) {
        prof[i].ms += t - prof_last;
        prof[i].n++;
    }
    prof_last = t;
    return TG_OK;
}

static void set_phase(int ph)
{
    phase = ph;
    prof_last = bench_now_ns() / 1e6;
}

/* One eager training step; returns the loss (NaN on error). */
static double step(model *m, eager_tensor *x, eager_tensor *y, eager_tensor **loss_out)
{
    eager_pool_push();
    set_phase(PH_FWD);
    eager_tensor *loss = forward(m, x, y);
    double l = NAN;
    if (loss && (set_phase(PH_BWD), eager_backward(loss) == TG_OK) &&
        (set_phase(PH_UPD), sgd_update(m))) {
        const float *v = eager_peek(loss);
        l = v ? *v : NAN;
        if (loss_out)
            *loss_out = eager_retain(loss);
    }
    eager_pool_pop();
    return l;
}

/* ---- data ---- */

typedef struct batch {
    eager_tensor *x, *y;
} batch;

static graph_ints x_shape(model_kind k)
{
    switch (k) {
    case M_MLP: return TG_SHAPE(BATCH, 784);
    case M_CNN: return TG_SHAPE(BATCH, 1, 28, 28);
    default: return TG_SHAPE(BATCH, enc_seq, ED);
    }
}

static batch random_batch(model_kind k, int i)
{
    batch b;
    uint64_t seed = 90000u + 100u * (uint64_t)k + (uint64_t)i;
    b.x = eager_rand_uniform(x_shape(k), seed, k == M_ENCODER ? -1.0f : 0.0f, 1.0f);
    if (k == M_ENCODER) {
        b.y = eager_rand_uniform(x_shape(k), seed + 50, -1.0f, 1.0f);
    } else {
        int64_t cls[BATCH];
        uint64_t s = seed * 2654435761u + 1;
        for (int j = 0; j < BATCH; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            cls[j] = (int64_t)((s >> 33) % 10);
        }
        b.y = eager_from_data(GRAPH_I64, TG_SHAPE(BATCH), cls);
    }
    if (!b.x || !b.y)
        die("batch");
    return b;
}

static int save_npy(const char *dir, const char *name, const eager_tensor *t)
{
    char path[4096], err[512];
    int n = snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    if (n < 0 || (size_t)n >= sizeof path) {
        fprintf(stderr, "train: path too long: %s/%s.npy\n", dir, name);
        return 0;
    }
    if (format_npy_save(path, eager_type(t), eager_peek(t), err, sizeof err) != TG_OK) {
        fprintf(stderr, "train: %s\n", err);
        return 0;
    }
    return 1;
}

static int export_model(const char *dir, const model *m, const char *prefix)
{
    mkdir(dir, 0777);
    int ok = 1;
    for (int i = 0; i < m->np && ok; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, m->pname[i]);
        ok = save_npy(dir, name, m->p[i]);
    }
    return ok;
}

/* ---- timing ---- */

typedef struct stats {
    double median, min, max;
    int runs;
} stats;

static stats summarize(double *t, int n)
{
    stats s = {NAN, NAN, NAN, n};
    if (n <= 0)
        return s;
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    s.min = t[0];
    s.max = t[n - 1];
    return s;
}

static void json_stats(FILE *f, const char *key, stats s)
{
    fprintf(f, "\"%s\": {\"median\": ", key);
    bench_json_num(f, s.median);
    fputs(", \"min\": ", f);
    bench_json_num(f, s.min);
    fputs(", \"max\": ", f);
    bench_json_num(f, s.max);
    fprintf(f, ", \"runs\": %d}", s.runs);
}

/* Traces one step of m on b; returns the graph. */
static graph *trace_step(model *m, batch *b)
{
    eager_tensor *loss = NULL;
    if (trace_begin(NULL) != TG_OK || trace_input(b->x, "x") != TG_OK ||
        trace_input(b->y, "y") != TG_OK)
        die("trace_begin");
    for (int i = 0; i < m->np; i++)
        if (trace_state(m->p[i], m->pname[i]) != TG_OK ||
            trace_state(m->buf[i], m->bname[i]) != TG_OK)
            die("trace_state");
    for (int i = 0; i < m->ns; i++)
        if (trace_state(m->s[i], m->sname[i]) != TG_OK)
            die("trace_state");
    if (trace_state(m->lr, "lr") != TG_OK || trace_state(m->mom, "momentum") != TG_OK ||
        trace_state(m->wd, "weight_decay") != TG_OK)
        die("trace_state");
    if (isnan(step(m, b->x, b->y, &loss)) || trace_output(loss, "loss") != TG_OK)
        die("traced step");
    graph *g = trace_freeze();
    if (!g)
        die("trace_freeze");
    eager_release(loss);
    return g;
}

typedef struct level {
    graph *g;
    replay_plan *p;
    replay_session *s;
    opt_memory mem;
    int32_t nodes;
} level;

static void make_level(graph *traced, int opt_level, level *lv)
{
    char err[2048];
    memset(lv, 0, sizeof *lv);
    lv->g = graph_clone(traced);
    if (!lv->g) {
        fprintf(stderr, "train: graph_clone: out of memory\n");
        exit(1);
    }
    opt_options o = OPT_OPTIONS_INIT;
    o.level = opt_level;
    opt_report rep;
    if (opt_optimize(lv->g, &o, &rep, err, sizeof err) != TG_OK) {
        fprintf(stderr, "train: -O%d: %s\n", opt_level, err);
        exit(1);
    }
    lv->nodes = rep.nodes_after;
    if (opt_memory_plan(lv->g, &lv->mem, err, sizeof err) != TG_OK) {
        fprintf(stderr, "train: -O%d: memory plan: %s\n", opt_level, err);
        exit(1);
    }
    replay_opts ro = REPLAY_OPTS_INIT;
    ro.threads = 1;
    lv->p = replay_compile(lv->g, &ro, err, sizeof err);
    lv->s = lv->p ? replay_session_create(lv->p, NULL, 0, err, sizeof err) : NULL;
    if (!lv->s) {
        fprintf(stderr, "train: -O%d: %s\n", opt_level, err);
        exit(1);
    }
}

static void free_level(level *lv)
{
    replay_session_free(lv->s);
    replay_plan_free(lv->p);
    graph_free(lv->g);
}

static double replay_step(level *lv, batch *b)
{
    replay_tensor in[2] = {{.name = "x", .type = *eager_type(b->x), .input = eager_peek(b->x)},
                           {.name = "y", .type = *eager_type(b->y), .input = eager_peek(b->y)}};
    float l = NAN;
    replay_tensor out = {.name = "loss", .type = {GRAPH_F32, 0, {0}}, .data = &l,
                         .size = sizeof l};
    if (replay_run(lv->s, in, 2, &out, 1) != TG_OK) {
        fprintf(stderr, "train: replay_run: %s\n", replay_session_error(lv->s));
        return NAN;
    }
    return l;
}

static const char *desc_of(model_kind k, char *buf, size_t len)
{
    switch (k) {
    case M_MLP:
        snprintf(buf, len, "x[64,784] 784-512-512-10 MLP, ReLU, cross-entropy");
        break;
    case M_CNN:
        snprintf(buf, len, "x[64,1,28,28] conv32-BN-ReLU-pool, conv64-BN-ReLU-pool, "
                 "dropout 0.25, fc128-ReLU-fc10, cross-entropy, BN the op batch_norm_train");
        break;
    default:
        snprintf(buf, len, "x[64,%d,%d] pre-LN encoder block, %d heads, ffn %d, GELU, MSE",
                 enc_seq, ED, EHEADS, EFFN);
        break;
    }
    return buf;
}

/* --profile N: N eager steps of model k with the on_op hook; prints the
 * ops that took the most time per step. */
static int profile_model(model_kind k, int n)
{
    model m = make_model(k);
    batch b = random_batch(k, 0);
    for (int i = 0; i < 2; i++)
        step(&m, b.x, b.y, NULL);
    nprof = 0;
    eager_hooks h = {.on_op = prof_on_op};
    const eager_hooks *old = eager_set_hooks(&h);
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++)
        step(&m, b.x, b.y, NULL);
    double total = (bench_now_ns() - t0) / 1e6 / n;
    eager_set_hooks(old);
    static const char *const ph[PH_COUNT] = {"forward", "backward", "update"};
    double sum = 0;
    for (int i = 0; i < nprof; i++)
        sum += prof[i].ms / n;
    fprintf(stderr, "train: profile of %s's eager step: %.3f ms per step, %.3f ms of it in ops "
                    "(each op: from the previous op's end to its own; by output shape)\n",
            kind_names[k], total, sum);
    for (;;) {
        int best = -1;
        for (int i = 0; i < nprof; i++)
            if (prof[i].n && (best < 0 || prof[i].ms > prof[best].ms))
                best = i;
        if (best < 0 || prof[best].ms / n < 0.01 * total)
            break;
        char shape[128];
        int at = snprintf(shape, sizeof shape, "%s[", graph_dtype_name(prof[best].type.dtype));
        for (int d = 0; d < prof[best].type.ndim && at < (int)sizeof shape - 24; d++)
            at += snprintf(shape + at, sizeof shape - (size_t)at, d ? ",%lld" : "%lld",
                           (long long)prof[best].type.dim[d]);
        snprintf(shape + at, sizeof shape - (size_t)at, "]");
        fprintf(stderr, "  %-9s %-18s %-22s %3ld calls %8.3f ms %5.1f%%\n", ph[prof[best].phase],
                graph_op_get(prof[best].op)->name, shape, prof[best].n / n, prof[best].ms / n,
                100 * prof[best].ms / n / total);
        prof[best].n = 0;
    }
    eager_release(b.x);
    eager_release(b.y);
    free_model(&m);
    return 0;
}

/*
 * --ops N: the CNN step's heaviest nodes, each traced alone (its tensor
 * inputs state, so that nothing folds), optimized at -O2, replayed N times;
 * prints the median per node.  The convolutions' gradients are the nodes
 * grad_rule_conv2d makes (conv2d_grad_input, conv2d_grad_weight);
 * max_pool2d's backward is its rule's whole chain; batch norm's backward
 * the op its rule makes (batch_norm_train_grad, weight 1, mean 0, invstd
 * 1, constants).
 */
typedef struct op_case {
    const char *what;
    int kind; /* 0 conv2d, 1 conv2d_grad_input, 2 max_pool2d fwd, 3 max_pool2d fwd+bwd,
               * 4 conv2d_grad_weight, 5 batch_norm_train_grad */
    graph_ints a, b;
} op_case;

static eager_tensor *op_case_run(const op_case *c, eager_tensor *a, eager_tensor *b)
{
    graph_ints pad = TG_INTS(1), pool = TG_INTS(2, 2);
    switch (c->kind) {
    case 0: return eager_conv2d(a, b, EAGER_NONE, TG_NOINTS, pad, TG_NOINTS, 1);
    case 1: return eager_conv2d_grad_input(a, b, TG_NOINTS, pad, TG_NOINTS, 1,
                                           TG_INTS(eager_dim(a, 2), eager_dim(a, 3)));
    case 4: return eager_conv2d_grad_weight(a, b, TG_NOINTS, pad, TG_NOINTS, 1, TG_INTS(3, 3));
    case 2: return eager_max_pool2d(a, pool, TG_NOINTS, TG_NOINTS);
    case 5: {
        graph_ints ch = TG_SHAPE(eager_dim(a, 1));
        eager_tensor *one = eager_ones(GRAPH_F32, ch), *out[3];
        return eager_batch_norm_train_grad(b, a, one, eager_zeros(GRAPH_F32, ch), one, out, 3) == 3
                   ? out[0]
                   : NULL;
    }
    default: {
        eager_tensor *y = eager_max_pool2d(a, pool, TG_NOINTS, TG_NOINTS);
        eager_tensor *l = eager_reduce_sum(eager_mul(y, b), TG_NOINTS, 0);
        return l && eager_backward(l) == TG_OK ? eager_grad(a) : NULL;
    }
    }
}

static int profile_ops(int n)
{
    static const op_case cases[] = {
        {"conv1 forward", 0, {4, {64, 1, 28, 28}}, {4, {32, 1, 3, 3}}},
        {"conv2 forward", 0, {4, {64, 32, 14, 14}}, {4, {64, 32, 3, 3}}},
        {"conv2 input grad (conv2d_grad_input)", 1, {4, {64, 64, 14, 14}},
         {4, {64, 32, 3, 3}}},
        {"conv2 weight grad (conv2d_grad_weight)", 4, {4, {64, 32, 14, 14}},
         {4, {64, 64, 14, 14}}},
        {"conv1 weight grad (conv2d_grad_weight)", 4, {4, {64, 1, 28, 28}},
         {4, {64, 32, 28, 28}}},
        {"pool1 forward", 2, {4, {64, 32, 28, 28}}, {0, {0}}},
        {"pool1 forward + backward", 3, {4, {64, 32, 28, 28}}, {4, {64, 32, 14, 14}}},
        {"pool2 forward + backward", 3, {4, {64, 64, 14, 14}}, {4, {64, 64, 7, 7}}},
        {"bn1 backward (batch_norm_train_grad)", 5, {4, {64, 32, 28, 28}},
         {4, {64, 32, 28, 28}}},
        {"bn2 backward (batch_norm_train_grad)", 5, {4, {64, 64, 14, 14}},
         {4, {64, 64, 14, 14}}},
    };
    fprintf(stderr, "train: the CNN step's heavy nodes alone, replayed at -O2 (median of %d)\n", n);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const op_case *c = &cases[i];
        eager_tensor *a = eager_rand_uniform(c->a, 5 + i, -1, 1);
        eager_tensor *b = c->b.n ? eager_rand_uniform(c->b, 50 + i, -1, 1) : NULL;
        if (c->kind == 3)
            eager_requires_grad(a, 1);
        eager_pool_push();
        if (trace_begin(NULL) != TG_OK || trace_state(a, "a") != TG_OK ||
            (b && trace_state(b, "b") != TG_OK))
            die("trace_begin");
        eager_tensor *y = op_case_run(c, a, b ? b : EAGER_NONE);
        if (!y || trace_output(y, "y") != TG_OK)
            die(c->what);
        graph *g = trace_freeze();
        if (!g)
            die("trace_freeze");
        eager_pool_pop();
        level lv;
        make_level(g, 2, &lv);
        double *t = calloc((size_t)n, sizeof *t);
        for (int r = -2; r < n; r++) {
            double t0 = bench_now_ns();
            if (replay_run(lv.s, NULL, 0, NULL, 0) != TG_OK) {
                fprintf(stderr, "train: %s: %s\n", c->what, replay_session_error(lv.s));
                return 1;
            }
            if (r >= 0)
                t[r] = (bench_now_ns() - t0) / 1e6;
        }
        stats st = summarize(t, n);
        fprintf(stderr, "  %-48s %8.3f ms  (%d nodes at -O2)\n", c->what, st.median, lv.nodes);
        free(t);
        free_level(&lv);
        graph_free(g);
        eager_zero_grad(a);
        eager_release(a);
        eager_release(b);
    }
    return 0;
}

static int time_rounds(model_kind k, model *mp, batch *b, level *lv, double loss0, int nstates,
                       int steps, int warmup, FILE *out);

static int bench_model(model_kind k, int steps, int warmup, const char *export_dir, FILE *out)
{
    model m = make_model(k);
    batch b[NBATCH];
    for (int i = 0; i < NBATCH; i++)
        b[i] = random_batch(k, i);
    if (export_dir) {
        char dir[4096];
        mkdir(export_dir, 0777);
        snprintf(dir, sizeof dir, "%s/%s", export_dir, kind_names[k]);
        if (!export_model(dir, &m, "") || !save_npy(dir, "x", b[0].x) ||
            !save_npy(dir, "y", b[0].y)) {
            for (int i = 0; i < NBATCH; i++) {
                eager_release(b[i].x);
                eager_release(b[i].y);
            }
            free_model(&m);
            return 1;
        }
    }
    double loss0 = step(&m, b[0].x, b[0].y, NULL);
    if (isnan(loss0))
        die("eager step 0");
    graph *g = trace_step(&m, &b[1]);
    level lv[2];
    make_level(g, 0, &lv[0]);
    make_level(g, 2, &lv[1]);
    int nstates = graph_num_states(g);
    if (save_dir) {
        mkdir(save_dir, 0777);
        for (int i = 0; i < 2; i++) {
            char path[4096], err[1024];
            snprintf(path, sizeof path, "%s/%s-O%d.tgraph", save_dir, kind_names[k], 2 * i);
            if (format_save(lv[i].g, path, NULL, err, sizeof err) != TG_OK)
                fprintf(stderr, "train: %s\n", err);
        }
    }
    int bad = 0;
    if (replay_only > 0) {
        double t0 = bench_now_ns();
        for (int i = 0; i < replay_only && !bad; i++)
            bad = isnan(replay_step(&lv[1], &b[i % NBATCH]));
        fprintf(stderr, "train: %s: %d -O2 replay steps, %.3f ms each\n", kind_names[k],
                replay_only, (bench_now_ns() - t0) / 1e6 / replay_only);
    } else {
        bad = time_rounds(k, &m, b, lv, loss0, nstates, steps, warmup, out);
    }
    for (int i = 0; i < 2; i++)
        free_level(&lv[i]);
    graph_free(g);
    for (int i = 0; i < NBATCH; i++) {
        eager_release(b[i].x);
        eager_release(b[i].y);
    }
    free_model(&m);
    return bad;
}

/* The rounds: eager, -O0, -O2 from the same state on the same batches;
 * the checks and the report. */
static int time_rounds(model_kind k, model *mp, batch *b, level *lv, double loss0, int nstates,
                       int steps, int warmup, FILE *out)
{
    model m = *mp;
    int total = warmup + steps;
    double *t[3];
    for (int r = 0; r < 3; r++)
        if (!(t[r] = calloc((size_t)total + 1, sizeof(double)))) {
            fprintf(stderr, "train: out of memory\n");
            exit(1);
        }
    double gap[2] = {0, 0};
    int bad = 0;
    for (int i = 0; i < total; i++) {
        batch *bb = &b[(2 + i) % NBATCH];
        double l[3];
        for (int j = 0; j < 3; j++) {
            int r = (i + j) % 3;
            double t0 = bench_now_ns();
            l[r] = r == 0 ? step(&m, bb->x, bb->y, NULL) : replay_step(&lv[r - 1], bb);
            t[r][i] = (bench_now_ns() - t0) / 1e6;
        }
        for (int r = 1; r < 3; r++) {
            double d = fabs(l[r] - l[0]) / fmax(fabs(l[0]), 1e-12);
            if (!(d <= gap[r - 1]))
                gap[r - 1] = isnan(d) ? INFINITY : d;
        }
        if (isnan(l[0]))
            bad = 1;
    }
    /* and the parameters, momentum buffers and running statistics after
     * the rounds: max |replay - eager| / max |eager| over each tensor */
    double sgap[2] = {0, 0};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 2 * m.np + m.ns; i++) {
            eager_tensor *e = i < m.np ? m.p[i] : i < 2 * m.np ? m.buf[i - m.np]
                                                                : m.s[i - 2 * m.np];
            const char *name = i < m.np ? m.pname[i] : i < 2 * m.np ? m.bname[i - m.np]
                                                                     : m.sname[i - 2 * m.np];
            int64_t ne = eager_numel(e);
            float *got = malloc((size_t)ne * sizeof *got);
            const float *want = eager_peek(e);
            if (!got || replay_state_get(lv[l].s, name, got, (size_t)ne * sizeof *got) != TG_OK) {
                fprintf(stderr, "train: %s: state %s: %s\n", kind_names[k], name,
                        replay_session_error(lv[l].s));
                bad = 1;
                free(got);
                continue;
            }
            double dmax = 0, emax = 0;
            for (int64_t j = 0; j < ne; j++) {
                dmax = fmax(dmax, fabs((double)got[j] - want[j]));
                emax = fmax(emax, fabs((double)want[j]));
                if (isnan(got[j]) != isnan(want[j]))
                    dmax = INFINITY;
            }
            sgap[l] = fmax(sgap[l], dmax / fmax(emax, 1e-30));
            free(got);
        }
    stats st[3];
    for (int r = 0; r < 3; r++)
        st[r] = summarize(t[r] + warmup, steps);
    if (gap[0] > 1e-3 || gap[1] > 1e-3 || sgap[0] > 1e-3 || sgap[1] > 1e-3 || bad) {
        fprintf(stderr, "train: FAIL %s: replay differs from eager: loss -O0 %.3g, -O2 %.3g; "
                        "state -O0 %.3g, -O2 %.3g\n",
                kind_names[k], gap[0], gap[1], sgap[0], sgap[1]);
        bad = 1;
    }

    char desc[256];
    fprintf(stderr,
            "train: %-8s eager %9.3f ms | -O0 %9.3f ms | -O2 %9.3f ms (%.2fx eager) | "
            "loss gap -O0 %.2g -O2 %.2g, state %.2g %.2g | arena -O2 %.1f MB of naive %.1f MB "
            "(%.3f; -O0 naive %.1f MB)\n",
            kind_names[k], st[0].median, st[1].median, st[2].median,
            st[0].median / st[2].median, gap[0], gap[1], sgap[0], sgap[1],
            lv[1].mem.arena_bytes / 1e6,
            lv[1].mem.naive_bytes / 1e6,
            (double)lv[1].mem.arena_bytes / (double)lv[1].mem.naive_bytes,
            lv[0].mem.naive_bytes / 1e6);
    fprintf(out, "{\"model\": \"%s\", \"desc\": ", kind_names[k]);
    bench_json_str(out, desc_of(k, desc, sizeof desc));
    fprintf(out, ", \"batch\": %d, \"threads\": 1, \"cpu_kernels\": \"%s\", "
                 "\"onednn_isa\": \"%s\", \"dropout\": %s, \"loss0\": %.9g, ",
            BATCH, eager_cpu_level(), eager_onednn_isa(), k == M_CNN ? "true" : "false", loss0);
    json_stats(out, "eager_ms", st[0]);
    fputs(", ", out);
    json_stats(out, "replay_o0_ms", st[1]);
    fputs(", ", out);
    json_stats(out, "replay_o2_ms", st[2]);
    fprintf(out, ", \"loss_gap_o0\": ");
    bench_json_num(out, gap[0]);
    fprintf(out, ", \"loss_gap_o2\": ");
    bench_json_num(out, gap[1]);
    fprintf(out, ", \"state_gap_o0\": ");
    bench_json_num(out, sgap[0]);
    fprintf(out, ", \"state_gap_o2\": ");
    bench_json_num(out, sgap[1]);
    fprintf(out, ", \"nodes_o0\": %d, \"nodes_o2\": %d, \"states\": %d, "
                 "\"naive_o0_bytes\": %zu, \"arena_o0_bytes\": %zu, \"naive_o2_bytes\": %zu, "
                 "\"arena_o2_bytes\": %zu, \"lower_bound_o2_bytes\": %zu, "
                 "\"workspace_o2_bytes\": %zu}\n",
            lv[0].nodes, lv[1].nodes, nstates, lv[0].mem.naive_bytes, lv[0].mem.arena_bytes,
            lv[1].mem.naive_bytes, lv[1].mem.arena_bytes, lv[1].mem.lower_bound,
            replay_workspace_size(lv[1].p));
    fflush(out);

    for (int r = 0; r < 3; r++)
        free(t[r]);
    return bad;
}

/* ---- Fashion-MNIST ---- */

/* Reads a gzipped IDX file: magic 0x0000080N (N dims, u8 data), the dims
 * big-endian, then the bytes.  Returns the data (malloc'd) and the count
 * of items (dim 0) and bytes per item, or NULL with a message. */
static uint8_t *read_idx_gz(const char *path, int want_dims, int64_t *items, int64_t *item_bytes)
{
#ifndef TG_HAVE_ZLIB
    (void)want_dims;
    (void)items;
    (void)item_bytes;
    fprintf(stderr, "train: cannot read %s: built without zlib (install zlib1g-dev and "
                    "reconfigure)\n", path);
    return NULL;
#else
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "train: cannot open %s\n", path);
        return NULL;
    }
    uint8_t hdr[4 + 4 * 3];
    int hlen = 4 + 4 * want_dims;
    if (gzread(f, hdr, (unsigned)hlen) != hlen || hdr[0] || hdr[1] || hdr[2] != 8 ||
        hdr[3] != want_dims) {
        fprintf(stderr, "train: %s: at byte 0: not an IDX file of u8 with %d dims\n", path,
                want_dims);
        gzclose(f);
        return NULL;
    }
    int64_t d[3] = {1, 1, 1};
    for (int i = 0; i < want_dims; i++) {
        const uint8_t *q = hdr + 4 + 4 * i;
        d[i] = ((int64_t)q[0] << 24) | (q[1] << 16) | (q[2] << 8) | q[3];
    }
    int64_t n = d[0] * d[1] * d[2];
    if (d[0] <= 0 || d[0] > 1000000 || n > 100000000) {
        fprintf(stderr, "train: %s: at byte 4: implausible dims\n", path);
        gzclose(f);
        return NULL;
    }
    uint8_t *data = malloc((size_t)n);
    if (!data || gzread(f, data, (unsigned)n) != (int)n) {
        fprintf(stderr, "train: %s: at byte %d: truncated (want %lld bytes of data)\n", path,
                hlen, (long long)n);
        free(data);
        gzclose(f);
        return NULL;
    }
    gzclose(f);
    *items = d[0];
    *item_bytes = d[1] * d[2];
    return data;
#endif
}

typedef struct dataset {
    float *x; /* [n, 784] in [0, 1] */
    int64_t *y;
    int64_t n;
} dataset;

static int load_set(const char *dir, const char *prefix, dataset *ds)
{
    char ip[4096], lp[4096];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    int64_t n, sz, nl, one;
    uint8_t *img = read_idx_gz(ip, 3, &n, &sz), *lab = img ? read_idx_gz(lp, 1, &nl, &one) : NULL;
    if (!lab || sz != 784 || nl != n) {
        if (lab)
            fprintf(stderr, "train: %s: %lld images of %lld bytes, %lld labels\n", dir,
                    (long long)n, (long long)sz, (long long)nl);
        free(img);
        free(lab);
        return 0;
    }
    ds->n = n;
    ds->x = malloc((size_t)n * 784 * sizeof(float));
    ds->y = malloc((size_t)n * sizeof(int64_t));
    for (int64_t i = 0; i < n * 784; i++)
        ds->x[i] = img[i] / 255.0f;
    for (int64_t i = 0; i < n; i++)
        ds->y[i] = lab[i];
    free(img);
    free(lab);
    return 1;
}

/* Batch j of the permutation: x [64,784], y [64]. */
static batch epoch_batch(const dataset *ds, const int64_t *perm, int j)
{
    static float xb[BATCH * 784];
    static int64_t yb[BATCH];
    for (int i = 0; i < BATCH; i++) {
        int64_t k = perm[(int64_t)j * BATCH + i];
        memcpy(xb + i * 784, ds->x + k * 784, 784 * sizeof(float));
        yb[i] = ds->y[k];
    }
    batch b = {eager_from_data(GRAPH_F32, TG_SHAPE(BATCH, 784), xb),
               eager_from_data(GRAPH_I64, TG_SHAPE(BATCH), yb)};
    if (!b.x || !b.y)
        die("batch");
    return b;
}

static int run_epoch(const char *dir, const char *data, FILE *out)
{
    dataset tr = {0}, te = {0};
    int64_t *perm = NULL;
    graph *g = NULL;
    level lv = {0};
    model m;
    int bad = 1, have_model = 0;
    if (!load_set(data, "train", &tr) || !load_set(data, "t10k", &te))
        goto done;
    mkdir(dir, 0777);
    /* the batch order: Fisher-Yates from a fixed seed, written for PyTorch */
    perm = malloc((size_t)tr.n * sizeof *perm);
    if (!perm)
        goto done;
    for (int64_t i = 0; i < tr.n; i++)
        perm[i] = i;
    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (int64_t i = tr.n - 1; i > 0; i--) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        int64_t j = (int64_t)(s % (uint64_t)(i + 1)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/perm.npy", dir);
    graph_type pt = {GRAPH_I64, 1, {tr.n}};
    if (format_npy_save(path, &pt, perm, err, sizeof err) != TG_OK) {
        fprintf(stderr, "train: %s\n", err);
        goto done;
    }
    m = make_model(M_MLP);
    have_model = 1;
    if (!export_model(dir, &m, "init_"))
        goto done;
    int nsteps = (int)(tr.n / BATCH);
    double t0 = bench_now_ns();
    batch b = epoch_batch(&tr, perm, 0);
    double first = step(&m, b.x, b.y, NULL), last = first;
    eager_release(b.x);
    eager_release(b.y);
    b = epoch_batch(&tr, perm, 1);
    g = trace_step(&m, &b);
    eager_release(b.x);
    eager_release(b.y);
    make_level(g, 2, &lv);
    double sum = 0;
    int cnt = 0;
    for (int j = 2; j < nsteps; j++) {
        b = epoch_batch(&tr, perm, j);
        last = replay_step(&lv, &b);
        eager_release(b.x);
        eager_release(b.y);
        if (isnan(last)) {
            fprintf(stderr, "train: epoch: step %d: loss NaN\n", j);
            goto done;
        }
        sum += last;
        cnt++;
        if ((j + 1) % 100 == 0 || j == nsteps - 1) {
            fprintf(stderr, "train: epoch: step %4d/%d  loss (mean of the last %d) %.4f\n",
                    j + 1, nsteps, cnt, sum / cnt);
            sum = 0;
            cnt = 0;
        }
    }
    double secs = (bench_now_ns() - t0) / 1e9;
    /* the session's weights into the eager model, then the test set */
    for (int i = 0; i < m.np; i++) {
        eager_requires_grad(m.p[i], 0);
        if (replay_state_get(lv.s, m.pname[i], eager_data_mut(m.p[i]), eager_nbytes(m.p[i])) !=
            TG_OK) {
            fprintf(stderr, "train: %s\n", replay_session_error(lv.s));
            goto done;
        }
    }
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < te.n; i0 += 1000) {
        int64_t n = te.n - i0 < 1000 ? te.n - i0 : 1000;
        eager_pool_push();
        eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(n, 784), te.x + i0 * 784);
        eager_tensor *pred = eager_argmax(forward(&m, x, NULL), 1, 0, 0);
        if (!pred)
            die("test forward");
        const int64_t *pv = eager_peek(pred);
        for (int64_t k = 0; k < n; k++)
            correct += pv[k] == te.y[i0 + k];
        eager_pool_pop();
    }
    double acc = (double)correct / (double)te.n;
    fprintf(stderr, "train: epoch: %d steps (1 eager, 1 traced, %d replayed at -O2) in %.1f s, "
                    "test accuracy %.4f\n", nsteps, nsteps - 2, secs, acc);
    fprintf(out, "{\"epoch\": \"mlp\", \"test_acc\": %.6f, \"loss_first\": %.6f, "
                 "\"loss_last\": %.6f, \"steps\": %d, \"seconds\": %.3f}\n",
            acc, first, last, nsteps, secs);
    bad = 0;
done:
    if (lv.s || lv.p || lv.g)
        free_level(&lv);
    graph_free(g);
    if (have_model)
        free_model(&m);
    free(perm);
    free(tr.x);
    free(tr.y);
    free(te.x);
    free(te.y);
    return bad;
}

static void usage(void)
{
    fprintf(stderr, "usage: train [--models mlp,cnn,encoder] [--steps N] [--warmup N] "
                    "[--json FILE] [--export DIR] [--enc-seq T]\n"
                    "             [--save DIR] [--replay-only N] [--profile N] [--ops N]\n"
                    "       train --epoch DIR [--data DIR] [--json FILE]\n");
}

int main(int argc, char **argv)
{
    const char *models = "mlp,cnn,encoder", *json = NULL, *export_dir = NULL, *epoch = NULL;
    const char *data = "/usr/share/datasets/fashion-mnist";
    int steps = 10, warmup = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--models") && v)
            models = argv[++i];
        else if (!strcmp(a, "--steps") && v)
            steps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && v)
            warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--json") && v)
            json = argv[++i];
        else if (!strcmp(a, "--export") && v)
            export_dir = argv[++i];
        else if (!strcmp(a, "--enc-seq") && v)
            enc_seq = atoi(argv[++i]);
        else if (!strcmp(a, "--epoch") && v)
            epoch = argv[++i];
        else if (!strcmp(a, "--save") && v)
            save_dir = argv[++i];
        else if (!strcmp(a, "--profile") && v)
            profile_steps = atoi(argv[++i]);
        else if (!strcmp(a, "--ops") && v)
            ops_runs = atoi(argv[++i]);
        else if (!strcmp(a, "--replay-only") && v)
            replay_only = atoi(argv[++i]);
        else if (!strcmp(a, "--data") && v)
            data = argv[++i];
        else {
            fprintf(stderr, "train: unknown or incomplete argument '%s'\n", a);
            usage();
            return 2;
        }
    }
    if (steps < 1 || warmup < 0 || enc_seq < 1) {
        fprintf(stderr, "train: --steps must be >= 1, --warmup >= 0, --enc-seq >= 1\n");
        return 2;
    }
    eager_set_threads(1);
    FILE *out = stdout;
    if (json && !(out = fopen(json, "a"))) {
        fprintf(stderr, "train: cannot open %s\n", json);
        return 2;
    }
    int bad = 0;
    if (ops_runs > 0) {
        bad = profile_ops(ops_runs);
    } else if (epoch) {
        bad = run_epoch(epoch, data, out);
    } else {
        char list[256];
        snprintf(list, sizeof list, "%s", models);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            int k = 0;
            while (k < M_COUNT && strcmp(kind_names[k], tok))
                k++;
            if (k == M_COUNT) {
                fprintf(stderr, "train: unknown model '%s' (mlp, cnn, encoder)\n", tok);
                bad = 2;
                continue;
            }
            bad |= profile_steps > 0 ? profile_model((model_kind)k, profile_steps)
                                     : bench_model((model_kind)k, steps, warmup, export_dir, out);
        }
    }
    if (out != stdout)
        fclose(out);
    return bad;
}
