/*
 * train_fashion.c - trains a classifier on Fashion-MNIST from C: a few
 * steps eagerly, then the next step captured whole (forward, loss,
 * backward, optimizer), optimized at -O2 and replayed for the rest; then
 * the test accuracy of the trained model.
 *
 *   example_train_fashion [--model mlp|cnn] [--epochs E] [--steps N]
 *       [--batch B] [--opt sgd|adamw] [--lr LR] [--momentum M] [--seed S]
 *       [--threads T] [--eager-steps K] [--test-limit N] [--log-every N]
 *       [--data DIR] [--save CKPT] [--save-graph FILE]
 *
 * The models (issue 32):
 *   mlp  784 -> 512 -> ReLU -> 512 -> ReLU -> 10
 *   cnn  conv 1->32 3x3 pad 1, batch norm, ReLU, max-pool 2,
 *        conv 32->64 3x3 pad 1, batch norm, ReLU, max-pool 2,
 *        dropout 0.25, linear 3136 -> 128, ReLU, linear 128 -> 10
 * initialized as PyTorch initializes nn.Linear and nn.Conv2d (uniform in
 * +-1/sqrt(fan_in)), trained with cross-entropy, SGD (momentum 0.9) or
 * AdamW, over a seeded permutation of the 60,000 training images each
 * epoch (an epoch's last batch takes the images left and the first of the
 * permutation, so every step has the traced batch size).
 *
 * Steps 1..K run eagerly (eager autograd, eager/optim.h), step K+1 runs
 * eagerly under trace_begin with every parameter and batch-norm statistic
 * declared state (the optimizer declares its own), trace_freeze gives the
 * step's graph, a copy is optimized at -O2 and compiled, and every later
 * step is one replay_run of it: the session owns the state.  At the end
 * the state is copied back into the eager tensors (replay_state_get) and
 * the 10,000 test images are classified eagerly, with batch norm on the
 * running statistics and no dropout.  --save writes the session's state
 * (replay_state_save) and --save-graph the traced step (format_save): a
 * session on that graph resumes from the state with replay_state_load.
 *
 * Printed: the loss (the mean over each --log-every steps, and a final
 * line), the median eager and replay step times, the test accuracy.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h"
#include "tracegraph.h"

enum { MAXP = 12, MAXS = 6, NCLASS = 10 };

typedef struct model {
    int cnn;
    int np, ns;
    eager_tensor *p[MAXP]; /* parameters (each eager_requires_grad) */
    const char *pname[MAXP];
    eager_tensor *st[MAXS]; /* batch-norm running statistics, for the cnn */
    const char *sname[MAXS];
} model;

typedef struct options {
    const char *model, *opt, *data, *save, *save_graph;
    int epochs, batch, threads, eager_steps, test_limit, log_every;
    long steps;
    double lr, momentum;
    uint64_t seed;
} options;

/* A parameter as PyTorch's nn.Linear / nn.Conv2d starts one: uniform in
 * +-1/sqrt(fan_in) (kaiming_uniform with a = sqrt(5)), for the bias too. */
static eager_tensor *param(model *m, const char *name, graph_ints shape, int64_t fan_in,
                           uint64_t seed)
{
    float bound = (float)(1.0 / sqrt((double)fan_in));
    eager_tensor *t = eager_rand_uniform(shape, seed * 1000 + (uint64_t)m->np, -bound, bound);
    m->pname[m->np] = name;
    return m->p[m->np++] = t;
}

static eager_tensor *constant_param(model *m, const char *name, int64_t n, double v)
{
    m->pname[m->np] = name;
    return m->p[m->np++] = eager_full(GRAPH_F32, TG_SHAPE(n), v);
}

static void batch_norm_stats(model *m, const char *prefix_mean, const char *prefix_var,
                             const char *prefix_count, int64_t c)
{
    m->sname[m->ns] = prefix_mean;
    m->st[m->ns++] = eager_zeros(GRAPH_F32, TG_SHAPE(c));
    m->sname[m->ns] = prefix_var;
    m->st[m->ns++] = eager_ones(GRAPH_F32, TG_SHAPE(c));
    m->sname[m->ns] = prefix_count;
    m->st[m->ns++] = eager_zeros(GRAPH_I64, TG_NOINTS);
}

static int make_model(model *m, int cnn, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->cnn = cnn;
    if (!cnn) {
        param(m, "fc1.weight", TG_SHAPE(512, 784), 784, seed);
        param(m, "fc1.bias", TG_SHAPE(512), 784, seed);
        param(m, "fc2.weight", TG_SHAPE(512, 512), 512, seed);
        param(m, "fc2.bias", TG_SHAPE(512), 512, seed);
        param(m, "fc3.weight", TG_SHAPE(NCLASS, 512), 512, seed);
        param(m, "fc3.bias", TG_SHAPE(NCLASS), 512, seed);
    } else {
        /* the convolutions have no bias: batch norm's mean cancels one */
        param(m, "conv1.weight", TG_SHAPE(32, 1, 3, 3), 1 * 9, seed);
        constant_param(m, "bn1.weight", 32, 1.0);
        constant_param(m, "bn1.bias", 32, 0.0);
        param(m, "conv2.weight", TG_SHAPE(64, 32, 3, 3), 32 * 9, seed);
        constant_param(m, "bn2.weight", 64, 1.0);
        constant_param(m, "bn2.bias", 64, 0.0);
        param(m, "fc1.weight", TG_SHAPE(128, 3136), 3136, seed);
        param(m, "fc1.bias", TG_SHAPE(128), 3136, seed);
        param(m, "fc2.weight", TG_SHAPE(NCLASS, 128), 128, seed);
        param(m, "fc2.bias", TG_SHAPE(NCLASS), 128, seed);
        batch_norm_stats(m, "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked", 32);
        batch_norm_stats(m, "bn2.running_mean", "bn2.running_var", "bn2.num_batches_tracked", 64);
    }
    for (int i = 0; i < m->np; i++)
        if (!m->p[i] || eager_requires_grad(m->p[i], 1) != TG_OK)
            return -1;
    for (int i = 0; i < m->ns; i++)
        if (!m->st[i])
            return -1;
    return 0;
}

static void free_model(model *m)
{
    for (int i = 0; i < m->np; i++) {
        eager_zero_grad(m->p[i]);
        eager_release(m->p[i]);
    }
    for (int i = 0; i < m->ns; i++)
        eager_release(m->st[i]);
}

/* The logits of x ([B,784] for the mlp, [B,1,28,28] for the cnn); train:
 * batch statistics (updating the running ones) and dropout, else the
 * running statistics and no dropout.  NULL on error (eager_error). */
static eager_tensor *forward(model *m, eager_tensor *x, int train)
{
    eager_tensor *const *p = m->p;
    if (!m->cnn) {
        eager_tensor *h = eager_relu(eager_linear(x, p[0], p[1]));
        h = eager_relu(eager_linear(h, p[2], p[3]));
        return eager_linear(h, p[4], p[5]);
    }
    eager_tensor *h = x;
    for (int l = 0; l < 2; l++) {
        eager_tensor *w = p[3 * l], *gamma = p[3 * l + 1], *beta = p[3 * l + 2];
        eager_tensor *const *s = m->st + 3 * l; /* mean, var, count */
        h = eager_conv2d(h, w, EAGER_NONE, TG_NOINTS, TG_INTS(1), TG_NOINTS, 1);
        h = train ? eager_batch_norm_train(h, gamma, beta, s[0], s[1], s[2], 1e-5, 0.1)
                  : eager_batch_norm(h, gamma, beta, s[0], s[1], 1e-5f);
        h = eager_max_pool2d(eager_relu(h), TG_INTS(2), TG_NOINTS, TG_NOINTS);
    }
    h = eager_flatten(h, 1, -1);
    if (train)
        h = eager_dropout(h, 0.25);
    h = eager_relu(eager_linear(h, p[6], p[7]));
    return eager_linear(h, p[8], p[9]);
}

/* One eager training step; the loss (pool-owned) or NULL. */
static eager_tensor *train_step(model *m, eager_optim *opt, eager_tensor *x, eager_tensor *y)
{
    eager_tensor *loss = eager_cross_entropy(forward(m, x, 1), y, 0.0);
    if (!loss || eager_backward(loss) != TG_OK || eager_optim_step(opt) != TG_OK ||
        eager_optim_zero_grad(opt) != TG_OK)
        return NULL;
    return loss;
}

/* The share of n test images (from index 0) the model classifies right,
 * in batches of 500; -1 on error. */
static double test_accuracy(model *m, const format_idx_dataset *test, int64_t n)
{
    enum { TB = 500 };
    float *x = malloc((size_t)TB * 784 * sizeof *x);
    int64_t idx[TB], lab[TB], right = 0;
    char err[512];
    if (!x)
        return -1;
    eager_no_grad_begin();
    for (int64_t start = 0; start < n; start += TB) {
        int64_t b = n - start < TB ? n - start : TB;
        for (int64_t i = 0; i < b; i++)
            idx[i] = start + i;
        if (format_idx_dataset_batch(test, idx, b, x, lab, err, sizeof err) != TG_OK) {
            fprintf(stderr, "train_fashion: test batch: %s\n", err);
            right = -1;
            break;
        }
        eager_pool_push();
        eager_tensor *xt = eager_from_data(GRAPH_F32, m->cnn ? TG_SHAPE(b, 1, 28, 28)
                                                              : TG_SHAPE(b, 784), x);
        eager_tensor *pred = eager_argmax(forward(m, xt, 0), 1, 0, 0);
        const int64_t *pd = eager_peek(pred);
        if (!pd) {
            fprintf(stderr, "train_fashion: evaluation: %s\n", eager_error());
            right = -1;
        }
        for (int64_t i = 0; pd && i < b; i++)
            right += pd[i] == lab[i];
        eager_pool_pop();
        if (right < 0)
            break;
    }
    eager_no_grad_end();
    free(x);
    return right < 0 ? -1 : (double)right / (double)n;
}

/* A seeded permutation of 0..n-1 (Fisher-Yates over SplitMix64). */
static void shuffle(int64_t *v, int64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        uint64_t z = (s += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        int64_t j = (int64_t)(z % (uint64_t)(i + 1));
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: example_train_fashion [--model mlp|cnn] [--epochs E] [--steps N]\n"
            "         [--batch B] [--opt sgd|adamw] [--lr LR] [--momentum M] [--seed S]\n"
            "         [--threads T] [--eager-steps K] [--test-limit N] [--log-every N]\n"
            "         [--data DIR] [--save CKPT] [--save-graph FILE]\n"
            "  defaults: mlp, 1 epoch, batch 64, sgd lr 0.1 momentum 0.9 (adamw lr 1e-3),\n"
            "  seed 1, 1 thread, 5 eager steps, all 10000 test images, log every 100 steps,\n"
            "  data in %s\n",
            FORMAT_IDX_FASHION_MNIST);
}

/* Parses a number option's value: 0, or -1 after a message. */
static int number(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "train_fashion: %s takes a number in [%g, %g], not '%s'\n", opt, lo, hi,
                s ? s : "(nothing)");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.model = "mlp", .opt = "sgd", .data = FORMAT_IDX_FASHION_MNIST, .epochs = 1,
                   .batch = 64, .threads = 1, .eager_steps = 5, .test_limit = 10000,
                   .log_every = 100, .steps = -1, .lr = -1, .momentum = 0.9, .seed = 1};
    for (int i = 1; i < argc; i += 2) { /* each option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d = 0;
        int r = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--model") && v) {
            o->model = v;
        } else if (!strcmp(a, "--opt") && v) {
            o->opt = v;
        } else if (!strcmp(a, "--data") && v) {
            o->data = v;
        } else if (!strcmp(a, "--save") && v) {
            o->save = v;
        } else if (!strcmp(a, "--save-graph") && v) {
            o->save_graph = v;
        } else if (!strcmp(a, "--epochs")) {
            r = number(a, v, 1, 1000, &d), o->epochs = (int)d;
        } else if (!strcmp(a, "--steps")) {
            r = number(a, v, 1, 1e9, &d), o->steps = (long)d;
        } else if (!strcmp(a, "--batch")) {
            r = number(a, v, 2, 60000, &d), o->batch = (int)d;
        } else if (!strcmp(a, "--threads")) {
            r = number(a, v, 1, 256, &d), o->threads = (int)d;
        } else if (!strcmp(a, "--eager-steps")) {
            r = number(a, v, 0, 1e9, &d), o->eager_steps = (int)d;
        } else if (!strcmp(a, "--test-limit")) {
            r = number(a, v, 0, 1e9, &d), o->test_limit = (int)d;
        } else if (!strcmp(a, "--log-every")) {
            r = number(a, v, 1, 1e9, &d), o->log_every = (int)d;
        } else if (!strcmp(a, "--lr")) {
            r = number(a, v, 0, 100, &d), o->lr = d;
        } else if (!strcmp(a, "--momentum")) {
            r = number(a, v, 0, 0.999999, &d), o->momentum = d;
        } else if (!strcmp(a, "--seed")) {
            r = number(a, v, 0, 4294967295.0, &d), o->seed = (uint64_t)d;
        } else {
            fprintf(stderr, "train_fashion: %s '%s'\n",
                    a[0] == '-' && !v ? "no value after" : "unknown argument", a);
            usage(stderr);
            return -1;
        }
        if (r)
            return -1;
    }
    if (strcmp(o->model, "mlp") && strcmp(o->model, "cnn")) {
        fprintf(stderr, "train_fashion: --model is mlp or cnn, not '%s'\n", o->model);
        return -1;
    }
    if (strcmp(o->opt, "sgd") && strcmp(o->opt, "adamw")) {
        fprintf(stderr, "train_fashion: --opt is sgd or adamw, not '%s'\n", o->opt);
        return -1;
    }
    if (o->lr < 0)
        o->lr = strcmp(o->opt, "sgd") ? 1e-3 : 0.1;
    return 0;
}

/* Loads a split; prints what to install when it is not there. */
static format_idx_dataset *load(const char *dir, const char *split)
{
    format_idx_dataset *ds = NULL;
    char err[1024];
    tg_status st = format_idx_dataset_load_dir(dir, split, NCLASS, &ds, err, sizeof err);
    if (st == TG_OK)
        return ds;
    fprintf(stderr, "train_fashion: cannot load Fashion-MNIST's %s split: %s\n", split, err);
    if (st == TG_ERR_IO)
        fprintf(stderr, "train_fashion: install the dataset (apt-get install "
                        "dataset-fashion-mnist, or scripts/deps.sh dataset-fashion-mnist), or "
                        "name its directory with --data DIR\n");
    return NULL;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o))
        return 2;
    int cnn = !strcmp(o.model, "cnn");
    format_idx_dataset *train = load(o.data, "train"), *test = train ? load(o.data, "t10k") : NULL;
    if (!test) {
        format_idx_dataset_free(train);
        return 1;
    }
    int64_t ntrain = format_idx_dataset_count(train), ntest = format_idx_dataset_count(test);
    int64_t rows = 0, cols = 0;
    format_idx_dataset_shape(train, &rows, &cols);
    if (rows != 28 || cols != 28 || ntrain < o.batch) {
        fprintf(stderr, "train_fashion: %s holds %lld images of %lldx%lld; the models take "
                "28x28 images, at least one batch (%d) of them\n", o.data, (long long)ntrain,
                (long long)rows, (long long)cols, o.batch);
        format_idx_dataset_free(train);
        format_idx_dataset_free(test);
        return 1;
    }
    if (o.test_limit > ntest)
        o.test_limit = (int)ntest;
    long per_epoch = (long)((ntrain + o.batch - 1) / o.batch);
    long total = per_epoch * o.epochs;
    if (o.steps > 0 && o.steps < total)
        total = o.steps;
    if ((o.save || o.save_graph) && total <= o.eager_steps) {
        fprintf(stderr, "train_fashion: --save and --save-graph need a traced step: --steps (%ld) "
                "above --eager-steps (%d)\n", total, o.eager_steps);
        format_idx_dataset_free(train);
        format_idx_dataset_free(test);
        return 2;
    }

    eager_set_threads(o.threads);
    eager_manual_seed(o.seed);
    model m;
    eager_optim *opt = NULL;
    if (make_model(&m, cnn, o.seed) == 0) {
        if (!strcmp(o.opt, "sgd")) {
            eager_sgd_opts so = EAGER_SGD_OPTS_INIT;
            so.lr = o.lr;
            so.momentum = o.momentum;
            opt = eager_sgd_new(m.p, m.np, &so);
        } else {
            eager_adamw_opts ao = EAGER_ADAMW_OPTS_INIT;
            ao.lr = o.lr;
            opt = eager_adamw_new(m.p, m.np, &ao);
        }
    }
    int64_t *order = malloc((size_t)ntrain * sizeof *order);
    int64_t *labels = malloc((size_t)o.batch * sizeof *labels);
    int64_t *pick = malloc((size_t)o.batch * sizeof *pick);
    float *images = malloc((size_t)o.batch * 784 * sizeof *images);
    double *eager_ms = malloc(((size_t)(total < o.eager_steps ? total : o.eager_steps) + 1) *
                              sizeof *eager_ms);
    double *replay_ms = malloc((size_t)total * sizeof *replay_ms);
    if (!opt || !order || !labels || !pick || !images || !eager_ms || !replay_ms) {
        fprintf(stderr, "train_fashion: setting up: %s\n", opt ? "out of memory" : eager_error());
        return 1;
    }
    int64_t params = 0;
    for (int i = 0; i < m.np; i++)
        params += eager_numel(m.p[i]);
    char plan_text[128];
    if (total <= o.eager_steps)
        snprintf(plan_text, sizeof plan_text, "every step eager");
    else if (o.eager_steps == 0)
        snprintf(plan_text, sizeof plan_text, "step 1 traced, then replayed at -O2");
    else
        snprintf(plan_text, sizeof plan_text, "steps 1-%d eager, step %d traced, then replayed "
                 "at -O2", o.eager_steps, o.eager_steps + 1);
    printf("train_fashion: %s (%lld parameters), %s lr %g, batch %d, %ld steps (%ld per epoch), "
           "%d thread%s, kernels %s; %s\n", o.model, (long long)params, o.opt, o.lr, o.batch,
           total, per_epoch, o.threads, o.threads == 1 ? "" : "s", eager_cpu_level(), plan_text);

    char err[2048];
    graph *g = NULL, *h = NULL;
    replay_plan *plan = NULL;
    replay_session *s = NULL;
    int n_eager = 0, n_replay = 0, failed = 0;
    double trace_ms = 0, compile_ms = 0, loss_sum = 0, t_start = example_now_ms();
    long loss_n = 0;
    for (long step = 0; step < total && !failed; step++) {
        long in_epoch = step % per_epoch;
        if (in_epoch == 0)
            shuffle(order, ntrain, o.seed * 7919 + (uint64_t)(step / per_epoch));
        /* the last batch of an epoch wraps around to the permutation's start */
        for (int j = 0; j < o.batch; j++)
            pick[j] = order[(in_epoch * o.batch + j) % ntrain];
        if (format_idx_dataset_batch(train, pick, o.batch, images, labels, err, sizeof err) !=
            TG_OK) {
            fprintf(stderr, "train_fashion: batch of step %ld: %s\n", step + 1, err);
            failed = 1;
            break;
        }
        int64_t b = o.batch;
        graph_ints xshape = cnn ? TG_SHAPE(b, 1, 28, 28) : TG_SHAPE(b, 784);
        float loss = NAN;
        if (step <= o.eager_steps) {
            /* eager (timed), or the traced step */
            int tracing = step == o.eager_steps;
            double t0 = example_now_ms();
            eager_pool_push();
            eager_tensor *x = eager_from_data(GRAPH_F32, xshape, images);
            eager_tensor *y = eager_from_data(GRAPH_I64, TG_SHAPE(b), labels);
            if (tracing) {
                trace_begin(NULL);
                trace_input(x, "x");
                trace_input(y, "y");
                for (int i = 0; i < m.np; i++)
                    trace_state(m.p[i], m.pname[i]);
                for (int i = 0; i < m.ns; i++)
                    trace_state(m.st[i], m.sname[i]);
            }
            eager_tensor *l = train_step(&m, opt, x, y);
            if (l)
                loss = *(const float *)eager_peek(l);
            if (tracing) {
                trace_output(l, "loss");
                g = trace_freeze();
            }
            if (!l || (tracing && !g)) {
                fprintf(stderr, "train_fashion: step %ld: %s\n", step + 1, eager_error());
                failed = 1;
            }
            eager_pool_pop();
            double t1 = example_now_ms();
            if (!tracing) {
                eager_ms[n_eager++] = t1 - t0;
            } else if (!failed) {
                trace_ms = t1 - t0;
                /* optimize a copy (g stays as traced), compile, open a session */
                h = graph_clone(g);
                opt_options oo = OPT_OPTIONS_INIT; /* -O2 */
                replay_opts ro = REPLAY_OPTS_INIT;
                ro.threads = o.threads;
                if (!h || opt_optimize(h, &oo, NULL, err, sizeof err) != TG_OK ||
                    !(plan = replay_compile(h, &ro, err, sizeof err)) ||
                    !(s = replay_session_create(plan, NULL, 0, err, sizeof err))) {
                    fprintf(stderr, "train_fashion: compiling the traced step: %s\n",
                            h ? err : "out of memory");
                    failed = 1;
                }
                compile_ms = example_now_ms() - t1;
                if (!failed)
                    printf("step %ld traced (%.1f ms, running it included): %d states; "
                           "optimized at -O2 and compiled in %.1f ms\n",
                           step + 1, trace_ms, graph_num_states(g), compile_ms);
            }
        } else {
            graph_type xt = {GRAPH_F32, 2, {b, 784}}, yt = {GRAPH_I64, 1, {b}};
            if (cnn)
                xt = (graph_type){GRAPH_F32, 4, {b, 1, 28, 28}};
            replay_tensor in[2] = {{.name = "x", .type = xt, .input = images},
                                   {.name = "y", .type = yt, .input = labels}};
            replay_tensor out = {.name = "loss", .data = &loss, .size = sizeof loss};
            double t0 = example_now_ms();
            if (replay_run(s, in, 2, &out, 1) != TG_OK) {
                fprintf(stderr, "train_fashion: replaying step %ld: %s\n", step + 1,
                        replay_session_error(s));
                failed = 1;
            }
            replay_ms[n_replay++] = example_now_ms() - t0;
        }
        if (failed)
            break;
        if (!isfinite(loss)) {
            fprintf(stderr, "train_fashion: step %ld: the loss is %g (diverged: a lower --lr?)\n",
                    step + 1, (double)loss);
            failed = 1;
            break;
        }
        loss_sum += loss;
        loss_n++;
        if ((step + 1) % o.log_every == 0 || step + 1 == total) {
            printf("step %5ld/%ld  epoch %ld  loss %.4f (mean of the last %ld steps)  %.1f s\n",
                   step + 1, total, step / per_epoch + 1, loss_sum / (double)loss_n, loss_n,
                   (example_now_ms() - t_start) / 1e3);
            fflush(stdout);
            loss_sum = 0;
            loss_n = 0;
        }
    }

    /* The trained state back into the eager tensors, for the evaluation. */
    for (int i = 0; s && !failed && i < m.np + m.ns; i++) {
        eager_tensor *t = i < m.np ? m.p[i] : m.st[i - m.np];
        const char *name = i < m.np ? m.pname[i] : m.sname[i - m.np];
        size_t nb = graph_type_bytes(eager_type(t));
        if (replay_state_get(s, name, eager_data_mut(t), nb) != TG_OK) {
            fprintf(stderr, "train_fashion: reading state %s: %s\n", name,
                    replay_session_error(s));
            failed = 1;
        }
    }
    if (!failed && o.save) {
        if (replay_state_save(s, o.save, err, sizeof err) != TG_OK) {
            fprintf(stderr, "train_fashion: --save: %s\n", err);
            failed = 1;
        } else {
            printf("state after step %ld saved to %s\n", total, o.save);
        }
    }
    if (!failed && o.save_graph) {
        if (format_save(g, o.save_graph, NULL, err, sizeof err) != TG_OK) {
            fprintf(stderr, "train_fashion: --save-graph: %s\n", err);
            failed = 1;
        } else {
            printf("the traced step saved to %s\n", o.save_graph);
        }
    }
    if (!failed) {
        /* the first step of each (warm-up: oneDNN's primitives, first touches) is left
         * out where there are others */
        int e0 = n_eager > 1, r0 = n_replay > 1;
        double em = n_eager ? example_median(eager_ms + e0, n_eager - e0) : NAN;
        double rm = n_replay ? example_median(replay_ms + r0, n_replay - r0) : NAN;
        long r_first = o.eager_steps + 2 + r0;
        if (n_eager > 1)
            printf("eager step:  median %8.3f ms (steps 2-%d; step 1, a warm-up, left out)\n",
                   em, n_eager);
        else if (n_eager)
            printf("eager step:  median %8.3f ms (step 1)\n", em);
        if (n_replay)
            printf("replay step: median %8.3f ms (steps %ld-%ld, -O2%s)\n", rm, r_first, total,
                   r0 ? "; the first replay left out" : "");
        if (n_replay && n_eager)
            printf("replay is %.2fx as fast as eager per training step\n", em / rm);
        double t0 = example_now_ms();
        double acc = o.test_limit > 0 ? test_accuracy(&m, test, o.test_limit) : 0;
        if (o.test_limit == 0)
            printf("test accuracy: not measured (--test-limit 0)\n");
        else if (acc < 0)
            failed = 1;
        else
            printf("test accuracy: %.4f on %d test images (evaluated eagerly in %.1f s)\n", acc,
                   o.test_limit, (example_now_ms() - t0) / 1e3);
    }

    replay_session_free(s);
    replay_plan_free(plan);
    graph_free(h);
    graph_free(g);
    eager_optim_free(opt);
    free_model(&m);
    eager_rng_set(EAGER_NONE);
    format_idx_dataset_free(train);
    format_idx_dataset_free(test);
    free(order);
    free(labels);
    free(pick);
    free(images);
    free(eager_ms);
    free(replay_ms);
    return failed;
}
