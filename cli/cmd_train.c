/*
 * cmd_train.c - `tracegraph train`: replays a training step saved as a
 * .tgraph (a graph with state: tracer/trace.h, trace_state) for N steps
 * over batches cut from data files, printing the loss as it goes, and
 * writes the state to a checkpoint (formats/ckpt.h) that a later run
 * resumes from.  Each replay_run is one step; the session owns the state.
 *
 * Batches: the data file of input NAME (.npy, or IDX: data_load) holds
 * the whole dataset, dim 0 its rows (examples); step k (counted from --start) feeds the input rows
 * [k*B, (k+1)*B) modulo the row count, B the input's traced batch (dim 0)
 * or --batch when that dim is dynamic.  Every batched input reads the same
 * rows, so their files must have as many rows each.  A 0-d input takes a
 * 0-d file, the same every step.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum {
    TRAIN_STEPS = 1,
    TRAIN_STATE,
    TRAIN_SAVE,
    TRAIN_DATA,
    TRAIN_BATCH,
    TRAIN_LR_STATE,
    TRAIN_LR,
    TRAIN_EVERY,
    TRAIN_START,
    TRAIN_THREADS,
    TRAIN_PRINT_STATE,
};

/* Most steps one command runs: a day of 10^7 steps/s, and i64 row maths
 * far from overflow. */
#define TRAIN_MAX_STEPS 1000000000000L

typedef struct train_opts {
    const char *file;
    long steps, start, every, batch; /* every 0: about ten lines; batch 0: traced */
    const char *state_in, *save, *lr_state;
    double lr;
    int has_lr, threads, print_state;
    char **data; /* --data NAME=FILE values, ndata of them (room for argc) */
    int ndata;
} train_opts;

/* One graph input and the data file it is fed from. */
typedef struct train_feed {
    const char *name;   /* the input's name (the graph's) */
    const char *path;   /* the data file */
    graph_type file;    /* the file's type */
    void *data;         /* the file's elements (free) */
    graph_type type;    /* what each step feeds: the batch's type */
    size_t row_bytes;   /* one row of the file (batched inputs) */
    void *batch;        /* the batch being fed (64-byte aligned); NULL: data whole */
} train_feed;

static void train_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("train"));
    printf("Trains with a training step saved as a .tgraph: a graph traced from one step\n"
           "(forward, loss, eager_backward, optimizer) with its parameters, moments and\n"
           "hyperparameters declared state (trace_state).  Runs the step N times on the\n"
           "CPU, each run one step that updates the state, with batches cut from data\n"
           "files, prints the loss as it goes and writes the state to a checkpoint that\n"
           "a later run resumes from.  Optimize the step first if you like: tracegraph\n"
           "opt -O2 step.tgraph step2.tgraph.\n\n"
           "options:\n"
           "  --steps N            steps to run (required)\n"
           "  --data NAME=FILE     the dataset of input NAME: dim 0 its rows (examples),\n"
           "                       the other dims the input's; every input needs one.\n"
           "                       Step k feeds rows [k*B, (k+1)*B), wrapping around at\n"
           "                       the end of the data (all files the same row count).\n"
           "                       A 0-d input takes a 0-d file, the same every step.\n"
           "                       FILE: a .npy array of the input's dtype, or an IDX\n"
           "                       file (MNIST, Fashion-MNIST: .idx, -ubyte or .gz)\n"
           "                       converted to it: u8 pixels to f32 as x/255, labels\n"
           "                       to i64, each row reshaped to the input's when it\n"
           "                       holds as many elements (28x28 images feed [B,784])\n"
           "  --batch B            rows per step (default: the input's traced dim 0; a\n"
           "                       different B needs a batch traced dynamic)\n"
           "  --start S            the first step's number (default 0): its batch is rows\n"
           "                       [S*B, ...); give the steps already run when resuming\n"
           "  --state CKPT         start from the state in checkpoint CKPT (default: the\n"
           "                       state the .tgraph holds, as traced)\n"
           "  --save CKPT          write the state to CKPT at the end (and when stopped\n"
           "                       by Ctrl-C, after the step in flight)\n"
           "  --lr X               set the f32 scalar state --lr-state to X first\n"
           "  --lr-state NAME      the learning rate's state (default: lr)\n"
           "  --every K            print the loss every K steps (default: about ten lines)\n"
           "  --threads T          threads per kernel (default 1)\n"
           "  --print-state        print every state at the end (shape, first values)\n\n"
           "The loss is the output named \"loss\", else the first f32 output of one\n"
           "element.  Lines \"step I/N  loss L  R steps/s\" go to stdout (I counts from\n"
           "--start); on a terminal a progress line on stderr is redrawn in between.\n\n"
           "exit codes: 0 ok, 1 error (a file, a shape, a failed step), 2 bad command\n"
           "line, 3 a guard failed, 130 stopped by Ctrl-C (the state saved with --save).\n\n"
           "example:\n"
           "  tracegraph train step.tgraph --steps 1000 --data x=train_x.npy \\\n"
           "      --data labels=train_y.npy --save run.ckpt\n"
           "  D=/usr/share/datasets/fashion-mnist\n"
           "  tracegraph train mlp_step.tgraph --steps 938 \\\n"
           "      --data x=$D/train-images-idx3-ubyte.gz \\\n"
           "      --data labels=$D/train-labels-idx1-ubyte.gz --save epoch1.ckpt\n"
           "  tracegraph train step.tgraph --steps 1000 --start 1000 --state run.ckpt \\\n"
           "      --data x=train_x.npy --data labels=train_y.npy --save run.ckpt --lr 0.01\n");
}

/* Parses the command line into o; CLI_OK, CLI_USAGE, CLI_ERROR, or -1 after
 * --help.  o->data is freed by the caller in every case. */
static int parse(int argc, char **argv, train_opts *o)
{
    static const cli_opt opts[] = {
        {NULL, "--steps", 1, TRAIN_STEPS},     {NULL, "--state", 1, TRAIN_STATE},
        {NULL, "--save", 1, TRAIN_SAVE},       {NULL, "--data", 1, TRAIN_DATA},
        {NULL, "--batch", 1, TRAIN_BATCH},     {NULL, "--lr-state", 1, TRAIN_LR_STATE},
        {NULL, "--lr", 1, TRAIN_LR},           {NULL, "--every", 1, TRAIN_EVERY},
        {NULL, "--start", 1, TRAIN_START},     {NULL, "--threads", 1, TRAIN_THREADS},
        {NULL, "--print-state", 0, TRAIN_PRINT_STATE}, {0}};
    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->data = cli_calloc((size_t)argc + 1, sizeof *o->data);
    if (!o->data) {
        cli_error("train", "out of memory for %d arguments", argc);
        return CLI_ERROR;
    }
    cli_args a = {argc, argv, 1, 0, "train"};
    const char *arg;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        long v;
        switch (id) {
        case CLI_HELP: train_help(); return -1;
        case CLI_BAD: return CLI_USAGE;
        case CLI_POS:
            if (o->file)
                return cli_usage_error("train", "one FILE.tgraph only ('%s' is extra; data "
                                       "files go with --data NAME=FILE)", arg);
            o->file = arg;
            break;
        case TRAIN_STEPS:
            if (cli_int("train", "--steps", arg, 1, TRAIN_MAX_STEPS, &o->steps))
                return CLI_USAGE;
            break;
        case TRAIN_START:
            if (cli_int("train", "--start", arg, 0, TRAIN_MAX_STEPS, &o->start))
                return CLI_USAGE;
            break;
        case TRAIN_EVERY:
            if (cli_int("train", "--every", arg, 1, TRAIN_MAX_STEPS, &o->every))
                return CLI_USAGE;
            break;
        case TRAIN_BATCH:
            if (cli_int("train", "--batch", arg, 1, GRAPH_MAX_NUMEL, &o->batch))
                return CLI_USAGE;
            break;
        case TRAIN_THREADS:
            if (cli_int("train", "--threads", arg, 1, TG_MAX_THREADS, &v))
                return CLI_USAGE;
            o->threads = (int)v;
            break;
        case TRAIN_LR:
            if (cli_double("train", "--lr", arg, &o->lr))
                return CLI_USAGE;
            o->has_lr = 1;
            break;
        case TRAIN_LR_STATE: o->lr_state = arg; break;
        case TRAIN_STATE: o->state_in = arg; break;
        case TRAIN_SAVE: o->save = arg; break;
        case TRAIN_PRINT_STATE: o->print_state = 1; break;
        case TRAIN_DATA: {
            const char *eq = strchr(arg, '=');
            if (!eq || eq == arg || !eq[1])
                return cli_usage_error("train", "--data wants NAME=FILE.npy (the graph input "
                                       "NAME and its dataset), not '%s'", arg);
            o->data[o->ndata++] = (char *)arg; /* room for one per argument */
            break;
        }
        default: return CLI_USAGE;
        }
    }
    if (!o->file)
        return cli_usage_error("train", "no FILE.tgraph given");
    if (!o->steps)
        return cli_usage_error("train", "--steps N is required (how many steps to run)");
    if (o->lr_state && !o->has_lr)
        return cli_usage_error("train", "--lr-state names the state that --lr sets: give "
                               "--lr X too");
    if (!o->lr_state)
        o->lr_state = "lr";
    return CLI_OK;
}

/*
 * Reads the data file of graph input v: its type in *t and its elements
 * in *data (64-byte aligned, free()).  0, or -1 after a message naming the
 * file.  The one place that knows data formats:
 *   .npy (formats/npy.h): as it is; fit_feed then checks it.
 *   IDX (formats/idx.h, cli_is_idx: MNIST's and Fashion-MNIST's files,
 *   plain or gzip): converted to the input's dtype (f32, i64 or i32), u8
 *   elements into f32 as x / 255 (pixels in [0,1], as torchvision's
 *   ToTensor), and each row reshaped to the input's row when it holds as
 *   many elements (28x28 images feed [B,784] or [B,1,28,28]).
 */
static int data_load(const graph *g, int32_t v, const char *path, graph_type *t, void **data)
{
    char err[1024];
    if (!cli_is_idx(path)) {
        if (format_npy_load(path, t, data, err, sizeof err) == TG_OK)
            return 0;
        cli_error("train", "%s", err);
        return -1;
    }
    const graph_type *it = graph_value_type(g, v);
    if (it->dtype != GRAPH_F32 && it->dtype != GRAPH_I64 && it->dtype != GRAPH_I32) {
        cli_error("train", "%s: an IDX file feeds f32, i64 or i32 inputs, and input '%s' is %s",
                  cli_escs(path), cli_escs(graph_value_name(g, v)), graph_dtype_name(it->dtype));
        return -1;
    }
    /* f32: u8 scaled; other element types (refused with the flag) as they are */
    tg_status st = format_idx_load(path, it->dtype, it->dtype == GRAPH_F32 ? FORMAT_IDX_SCALE : 0,
                                   t, data, err, sizeof err);
    if (st == TG_ERR_UNSUPPORTED && it->dtype == GRAPH_F32)
        st = format_idx_load(path, GRAPH_F32, 0, t, data, err, sizeof err);
    if (st != TG_OK) {
        cli_error("train", "%s", err);
        return -1;
    }
    /* the rows to the input's row shape, when every dim of it is known */
    int64_t row = 1, want = 1;
    int fixed = it->ndim >= 1 && t->ndim >= 1;
    for (int d = 1; fixed && d < t->ndim; d++)
        row *= t->dim[d];
    for (int d = 1; fixed && d < it->ndim; d++) {
        fixed &= graph_value_dim_symbol(g, v, d) < 0;
        want *= it->dim[d];
    }
    if (fixed && row == want && (t->ndim != it->ndim ||
                                 memcmp(t->dim + 1, it->dim + 1,
                                        sizeof(int64_t) * (size_t)(it->ndim - 1)) != 0)) {
        t->ndim = it->ndim;
        memcpy(t->dim + 1, it->dim + 1, sizeof(int64_t) * (size_t)(it->ndim - 1));
    }
    return 0;
}

/* "f32[4,5]" of t into one of a few rotating buffers (several per message). */
static const char *ty(const graph_type *t)
{
    static char bufs[4][200];
    static int next;
    char *b = bufs[next];
    next = (next + 1) % 4;
    return cli_type_str(t, b, sizeof bufs[0]);
}

/* The inputs' names, escaped ("x, y"), for messages. */
static const char *input_list(const graph *g, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < graph_input_count(g) && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "",
                              cli_escs(graph_value_name(g, graph_input_at(g, i))));
    return graph_input_count(g) ? buf : "none";
}

/* The batch B: --batch, or the traced dim 0 of the first input with dims. */
static int64_t pick_batch(const graph *g, const train_opts *o)
{
    if (o->batch)
        return o->batch;
    for (int i = 0; i < graph_input_count(g); i++) {
        const graph_type *t = graph_value_type(g, graph_input_at(g, i));
        if (t->ndim > 0)
            return t->dim[0];
    }
    return 0;
}

/*
 * Fits feed f (file loaded) to graph input v with batch B: the file's
 * dtype must be the input's, its dims after the first the input's (a
 * dynamic one takes the file's), the input's dim 0 B (fixed at another
 * size: an error), and the file at least B rows.  0, or -1 after a message
 * naming the file and the input.
 */
static int fit_feed(const graph *g, int32_t v, train_feed *f, int64_t B, const train_opts *o)
{
    const graph_type *it = graph_value_type(g, v);
    const char *in = cli_escs(f->name), *path = cli_escs(f->path);
    char iv[200];
    cli_value_type(g, v, iv, sizeof iv);
    if (f->file.dtype != it->dtype) {
        cli_error("train", "%s holds %s but input '%s' is %s", path, ty(&f->file), in, iv);
        return -1;
    }
    f->type = f->file;
    if (it->ndim == 0) {
        if (f->file.ndim != 0) {
            cli_error("train", "%s is %s but input '%s' is %s: a 0-d input takes a 0-d file "
                      "(the same value every step)", path, ty(&f->file), in, iv);
            return -1;
        }
        return 0;
    }
    if (B < 1) {
        cli_error("train", "input '%s' is %s: a batch of no rows (its dim 0); train feeds "
                  "batches of one row or more", in, iv);
        return -1;
    }
    if (f->file.ndim != it->ndim) {
        cli_error("train", "%s is %s but input '%s' is %s: the file holds the dataset, dim 0 "
                  "its rows, each row one example of the input (%d dims)", path, ty(&f->file),
                  in, iv, it->ndim);
        return -1;
    }
    for (int d = 1; d < it->ndim; d++)
        if (graph_value_dim_symbol(g, v, d) < 0 && f->file.dim[d] != it->dim[d]) {
            cli_error("train", "%s is %s but input '%s' is %s: dim %d of its rows is %lld, "
                      "the input's %lld", path, ty(&f->file), in, iv, d,
                      (long long)f->file.dim[d], (long long)it->dim[d]);
            return -1;
        }
    if (graph_value_dim_symbol(g, v, 0) < 0 && it->dim[0] != B) {
        if (o->batch)
            cli_error("train", "input '%s' is %s: its batch (dim 0) is fixed at %lld, so "
                      "--batch %lld needs a step traced with that dim dynamic "
                      "(trace_dynamic)", in, iv, (long long)it->dim[0], (long long)B);
        else
            cli_error("train", "input '%s' is %s but another input's batch is %lld: every "
                      "batched input takes the same rows", in, iv, (long long)B);
        return -1;
    }
    if (f->file.dim[0] < B) {
        cli_error("train", "%s is %s: %lld rows, fewer than the batch of %lld that input "
                  "'%s' takes", path, ty(&f->file), (long long)f->file.dim[0], (long long)B,
                  in);
        return -1;
    }
    f->type.dim[0] = B;
    f->row_bytes = graph_type_bytes(&f->file) / (size_t)f->file.dim[0];
    /* B rows of the file: no more bytes than the file holds */
    f->batch = cli_aligned_alloc(64, ((size_t)B * f->row_bytes + 64) & ~(size_t)63);
    if (!f->batch) {
        cli_error("train", "out of memory for a batch of input '%s' (%s)", in, ty(&f->type));
        return -1;
    }
    return 0;
}

typedef struct train_data {
    int n;           /* feeds, one per graph input, in signature order */
    train_feed *f;
    replay_tensor *in;
    int64_t rows;    /* rows of every batched file; 0: no batched input */
    int64_t batch;
} train_data;

static void data_free(train_data *d)
{
    for (int i = 0; d->f && i < d->n; i++) {
        cli_free(d->f[i].data);
        cli_free(d->f[i].batch);
    }
    cli_free(d->f);
    cli_free(d->in);
    memset(d, 0, sizeof *d);
}

/* Loads the --data files for every input of g.  0, or -1 after a message. */
static int data_open(const graph *g, const train_opts *o, train_data *d)
{
    char list[512];
    memset(d, 0, sizeof *d);
    d->n = graph_input_count(g);
    d->f = cli_calloc((size_t)d->n + 1, sizeof *d->f);
    d->in = cli_calloc((size_t)d->n + 1, sizeof *d->in);
    if (!d->f || !d->in) {
        cli_error("train", "out of memory for %d inputs", d->n);
        return -1;
    }
    for (int i = 0; i < d->n; i++)
        d->f[i].name = graph_value_name(g, graph_input_at(g, i));
    for (int k = 0; k < o->ndata; k++) {
        const char *s = o->data[k], *eq = strchr(s, '=');
        int slot = -1;
        for (int i = 0; i < d->n && slot < 0; i++)
            if (d->f[i].name && strlen(d->f[i].name) == (size_t)(eq - s) &&
                memcmp(d->f[i].name, s, (size_t)(eq - s)) == 0)
                slot = i;
        if (slot < 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - s), s);
            cli_error("train", "--data %s: the graph has no input named '%s' (its inputs: %s)",
                      cli_escs(s), cli_escs(name), input_list(g, list, sizeof list));
            return -1;
        }
        if (d->f[slot].path) {
            cli_error("train", "input '%s' is given --data twice", cli_escs(d->f[slot].name));
            return -1;
        }
        d->f[slot].path = eq + 1;
    }
    for (int i = 0; i < d->n; i++)
        if (!d->f[i].path) {
            char iv[200];
            const char *name = cli_escs(d->f[i].name);
            cli_error("train", "input '%s' (%s) has no data: give its dataset with --data "
                      "%s=FILE.npy", name, cli_value_type(g, graph_input_at(g, i), iv, sizeof iv),
                      name);
            return -1;
        }
    d->batch = pick_batch(g, o);
    const train_feed *first = NULL; /* the first batched feed, for the row count */
    for (int i = 0; i < d->n; i++) {
        train_feed *f = &d->f[i];
        if (data_load(g, graph_input_at(g, i), f->path, &f->file, &f->data) ||
            fit_feed(g, graph_input_at(g, i), f, d->batch, o))
            return -1;
        if (f->batch && !first) {
            first = f;
            d->rows = f->file.dim[0];
        } else if (f->batch && f->file.dim[0] != d->rows) {
            cli_error("train", "%s has %lld rows but %s has %lld: the inputs' datasets must "
                      "have one row per example each", cli_escs(f->path),
                      (long long)f->file.dim[0], cli_escs(first->path), (long long)d->rows);
            return -1;
        }
        d->in[i] = (replay_tensor){.name = f->name, .type = f->type,
                                   .input = f->batch ? f->batch : f->data};
    }
    return 0;
}

/* (a * b) mod m without overflow, for a, b < m <= 2^62. */
static int64_t mulmod(int64_t a, int64_t b, int64_t m)
{
    int64_t r = 0;
    for (a %= m, b %= m; b; b >>= 1) {
        if (b & 1)
            r = (r + a) % m;
        a = (a + a) % m;
    }
    return r;
}

/* Copies rows [pos, pos + B) of each batched file, modulo its rows, into
 * its batch (B <= rows: at most two pieces). */
static void fill_batches(train_data *d, int64_t pos)
{
    for (int i = 0; i < d->n; i++) {
        train_feed *f = &d->f[i];
        if (!f->batch)
            continue;
        int64_t first = d->rows - pos < d->batch ? d->rows - pos : d->batch;
        memcpy(f->batch, (const char *)f->data + (size_t)pos * f->row_bytes,
               (size_t)first * f->row_bytes);
        memcpy((char *)f->batch + (size_t)first * f->row_bytes, f->data,
               (size_t)(d->batch - first) * f->row_bytes);
    }
}

/* The output that is the loss, an f32 output of one element: the one
 * named "loss", else the first; -1 if none. */
static int find_loss(const graph *g)
{
    int first = -1;
    for (int i = 0; i < graph_output_count(g); i++) {
        const char *name;
        const graph_type *t = graph_value_type(g, graph_output_at(g, i, &name));
        if (t->dtype != GRAPH_F32 || graph_type_numel(t) != 1)
            continue;
        if (name && strcmp(name, "loss") == 0)
            return i;
        if (first < 0)
            first = i;
    }
    return first;
}

/* Set by SIGINT: stop after the step in flight. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Sets the --lr state; CLI_OK or CLI_ERROR after a message. */
static int set_lr(replay_plan *p, replay_session *s, const train_opts *o)
{
    int32_t k = replay_state_find(p, o->lr_state);
    if (k < 0) {
        char list[512];
        size_t n = 0;
        list[0] = '\0';
        for (int32_t i = 0; i < replay_num_states(p) && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                  cli_escs(replay_state_name(p, i)));
        if (n >= sizeof list)
            memcpy(list + sizeof list - 4, "...", 4);
        cli_error("train", "--lr: the step has no state named '%s' (its states: %s); name the "
                  "learning rate's state with --lr-state", cli_escs(o->lr_state), list);
        return CLI_ERROR;
    }
    const graph_type *t = replay_state_type(p, k);
    if (t->dtype != GRAPH_F32 || graph_type_numel(t) != 1) {
        cli_error("train", "--lr: state '%s' is %s, not an f32 scalar (a learning rate)",
                  cli_escs(o->lr_state), ty(t));
        return CLI_ERROR;
    }
    float lr = (float)o->lr;
    if (replay_state_set(s, o->lr_state, &lr, sizeof lr) != TG_OK) {
        cli_error("train", "--lr: %s", replay_session_error(s));
        return CLI_ERROR;
    }
    return CLI_OK;
}

/* "step I/N  loss L  R steps/s" to stdout. */
static void print_step(long step, long total, int has_loss, float loss, double rate)
{
    printf("step %ld/%ld", step, total);
    if (has_loss)
        printf("  loss %.6g", (double)loss);
    printf("  %.1f steps/s\n", rate);
    fflush(stdout);
}

/* Runs the steps; CLI_OK, or an exit code after a message. */
static int train_loop(const train_opts *o, const graph *g, replay_plan *p, replay_session *s,
                      train_data *d)
{
    int lo = find_loss(g), tty = isatty(2), shown = 0;
    const char *loss_name = NULL;
    if (lo >= 0)
        graph_output_at(g, lo, &loss_name);
    long every = o->every ? o->every : (o->steps + 9) / 10, total = o->start + o->steps;
    int64_t pos = d->rows ? mulmod(o->start, d->batch, d->rows) : 0;
    char batch[80] = "no batched inputs";
    if (d->rows)
        snprintf(batch, sizeof batch, "batch %lld of %lld rows", (long long)d->batch,
                 (long long)d->rows);
    printf("train %s: %ld step%s (%ld to %ld), %s, %d state%s, loss: %s, %d thread%s\n",
           cli_escs(o->file), o->steps, o->steps == 1 ? "" : "s", o->start + 1, total, batch, replay_num_states(p),
           replay_num_states(p) == 1 ? "" : "s", loss_name ? cli_escs(loss_name) : "none (no f32 output of one element)", o->threads,
           o->threads > 1 ? "s" : "");
    fflush(stdout);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old);
    double t0 = cli_now(), last = t0;
    float loss = 0;
    long i = 0;
    int rc = CLI_OK;
    for (; i < o->steps && !interrupted; i++) {
        if (d->rows) {
            fill_batches(d, pos);
            pos = (pos + d->batch) % d->rows;
        }
        replay_tensor out = {.name = loss_name, .data = &loss, .size = sizeof loss};
        tg_status st = replay_run(s, d->in, d->n, &out, loss_name ? 1 : 0);
        if (st != TG_OK) {
            if (shown)
                fprintf(stderr, "\r\033[K");
            cli_error("train", "step %ld: %s", o->start + i + 1, replay_session_error(s));
            rc = cli_exit_code(st);
            break;
        }
        double now = cli_now(), rate = now > t0 ? (double)(i + 1) / (now - t0) : 0;
        long step = o->start + i + 1;
        if (step % every == 0 || i + 1 == o->steps) {
            if (shown)
                fprintf(stderr, "\r\033[K");
            shown = 0;
            print_step(step, total, loss_name != NULL, loss, rate);
        } else if (tty && now - last >= 0.1) {
            last = now;
            shown = 1;
            fprintf(stderr, "\rstep %ld/%ld", step, total);
            if (loss_name)
                fprintf(stderr, "  loss %.6g", (double)loss);
            fprintf(stderr, "  %.1f steps/s", rate);
            fflush(stderr);
        }
    }
    sigaction(SIGINT, &old, NULL);
    if (shown)
        fprintf(stderr, "\r\033[K");
    double secs = cli_now() - t0;
    if (rc == CLI_OK) {
        printf("trained %ld step%s in %.3f s (%.1f steps/s)", i, i == 1 ? "" : "s", secs,
               secs > 0 ? (double)i / secs : 0.0);
        if (loss_name && i)
            printf(", last loss %.6g", (double)loss);
        printf("\n");
    }
    if (o->save && (rc == CLI_OK || i > 0)) {
        char err[1024];
        if (replay_state_save(s, o->save, err, sizeof err) != TG_OK) {
            cli_error("train", "--save: %s", err);
            return rc == CLI_OK ? CLI_ERROR : rc;
        }
        printf("state after step %ld saved to %s (resume with --state %s --start %ld)\n",
               o->start + i, cli_escs(o->save), cli_escs(o->save), o->start + i);
    }
    if (rc == CLI_OK && i < o->steps) {
        cli_error("train", "interrupted after step %ld of %ld%s", o->start + i, total,
                  o->save ? "" : " (no --save: the state is lost)");
        rc = 130;
    }
    return rc;
}

/* Prints every state of the session (--print-state). */
static void print_states(replay_plan *p, replay_session *s)
{
    printf("state:\n");
    for (int32_t i = 0; i < replay_num_states(p); i++) {
        printf("  ");
        cli_print_tensor(stdout, replay_state_name(p, i), replay_state_type(p, i),
                         replay_state_data(s, i));
    }
}

int cli_train(int argc, char **argv)
{
    train_opts o;
    int rc = parse(argc, argv, &o);
    if (rc) {
        cli_free(o.data);
        return rc < 0 ? CLI_OK : rc;
    }
    graph *g = cli_load_graph("train", o.file);
    train_data d = {0};
    replay_plan *p = NULL;
    replay_session *s = NULL;
    char err[1024];
    rc = CLI_ERROR;
    if (!g)
        goto done;
    if (graph_num_states(g) == 0) {
        cli_error("train", "%s: not a training step: no state; train runs graphs traced with "
                  "trace_state (tracegraph run runs the others)", cli_escs(o.file));
        goto done;
    }
    if (data_open(g, &o, &d))
        goto done;
    replay_opts ro = REPLAY_OPTS_INIT;
    ro.threads = o.threads;
    if (!(p = replay_compile(g, &ro, err, sizeof err))) {
        cli_error("train", "%s", err);
        goto done;
    }
    if (!(s = replay_session_create(p, NULL, 0, err, sizeof err))) {
        cli_error("train", "%s", err);
        goto done;
    }
    if (o.state_in && replay_state_load(s, o.state_in, err, sizeof err) != TG_OK) {
        cli_error("train", "--state: %s", err);
        goto done;
    }
    if (o.has_lr && set_lr(p, s, &o) != CLI_OK)
        goto done;
    rc = train_loop(&o, g, p, s, &d);
    if (rc == CLI_OK && o.print_state)
        print_states(p, s);
done:
    replay_session_free(s);
    replay_plan_free(p);
    data_free(&d);
    graph_free(g);
    cli_free(o.data);
    return rc;
}
