/*
 * cost_rates.c - the CPU's rates for the layout pass's cost model
 * (cost_rates.h, graph_cost_rates in graph/target.h): measured here, once
 * per machine, and kept in a cache file.
 *
 * The micro-benchmark runs the kernels a plan runs (eager_kernels: the
 * plain conv2d and conv2d_blk through oneDNN, prepared in a state slot
 * with their weights fixed, and the to_blocked / from_blocked copies) at
 * the target's block and threads, each once to prepare, then up to
 * RATE_RUNS times within RATE_BUDGET_NS, taking the fastest run (the
 * machine's rate, not its neighbours' noise).  The shapes are those the
 * built-in rates were fitted on (layout_cost.c), and each rate is solved
 * from the cost model's own formula, so a measured rate replaces the
 * fitted one one for one:
 *   plain_call  a plain 1x1 conv of one block of channels on 4x4, less
 *               the same conv blocked (both are almost all call);
 *   gemm        a plain 1x1 conv 64 -> 64 on 28x28 (its call cost out,
 *               the model's few-positions factor undone);
 *   blk_1x1     the same conv blocked;
 *   blk_1x1_padded  a blocked 1x1 conv of 1.5 blocks in and out (per
 *               padded MAC);
 *   im2col      a plain 3x3 conv 64 -> 64 on 28x28 (since bench=2 that is
 *               oneDNN's direct kernel with the reorders the plain conv
 *               kernel makes around it, kernels_conv.c: conv_prepare);
 *   blk_kxk     the same conv blocked (oneDNN picks Winograd or direct,
 *               as algo 0 does in a plan);
 *   step        a to_blocked of one block of channels on 2x2;
 *   copy        to_blocked and from_blocked of 64 channels on 56x56
 *               (bytes read and written over their time less a step).
 * About 30-150 ms in all, most of it oneDNN making its primitives.  A rate
 * whose kernel fails stays built-in (r->from names it).
 *
 * The cache: $TG_RATES_CACHE, else $XDG_CACHE_HOME/tracegraph/rates.txt,
 * else ~/.cache/tracegraph/rates.txt (the tuning cache's folder).  Plain
 * text, '#' lines ignored, one line per key:
 *
 *   r1 TAB key TAB gemm=48.00;im2col=40.00;...;plaincall=500.00
 *
 * key: cpu=MODEL;onednn=ISA;kernels=SET;block=B;threads=T;bench=2 (bench:
 * the micro-benchmark's version: a changed benchmark measures again).
 * Every rate must be there and in range (eager_cost_rates_parse); a line
 * that is not so is refused, its number and reason given in r->from
 * ("cache line 3 refused: copy=nan: not a number"), and the file is
 * rewritten without it after the next measurement.  At most
 * RATE_MAX_BYTES read, RATE_MAX_ENTRIES keys; written whole (a temporary
 * renamed over it).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../graph/alloc.h"
#include "cost_rates.h"
#include "dnnl_util.h"
#include "isa.h"
#include "kernel.h"

#define RATE_MAX_BYTES (1u << 18)
#define RATE_MAX_LINE 512
#define RATE_MAX_KEY 300
#define RATE_MAX_ENTRIES 256
#define RATE_RUNS 7
#define RATE_BUDGET_NS 25e6 /* per kernel, beyond its first call */
#define RATE_BENCH 2        /* the benchmark's version, in the key */
#define GEMM_POS EAGER_COST_GEMM_POS
#define BLK_POS EAGER_COST_BLK_POS

/* The rates' names in the text forms, in graph_cost_rates order. */
static const struct {
    const char *name;
    size_t off;
    double lo, hi;
} fields[] = {
    {"gemm", offsetof(graph_cost_rates, gemm), 0.01, 1e5},
    {"im2col", offsetof(graph_cost_rates, im2col), 0.01, 1e5},
    {"blk1x1", offsetof(graph_cost_rates, blk_1x1), 0.01, 1e5},
    {"blk1x1pad", offsetof(graph_cost_rates, blk_1x1_padded), 0.01, 1e5},
    {"blkkxk", offsetof(graph_cost_rates, blk_kxk), 0.01, 1e5},
    {"copy", offsetof(graph_cost_rates, copy), 0.01, 1e5},
    {"step", offsetof(graph_cost_rates, step), 0.0, 1e7},
    {"plaincall", offsetof(graph_cost_rates, plain_call), 0.0, 1e7},
};
#define NFIELDS ((int)(sizeof fields / sizeof *fields))

static double *field(graph_cost_rates *r, int i)
{
    return (double *)((char *)r + fields[i].off);
}

int eager_cost_rates_parse(const char *s, int all, graph_cost_rates *r, char *err, size_t errlen)
{
    int seen[NFIELDS] = {0};
    graph_cost_rates got = *r;
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",;");
        const char *eq = memchr(p, '=', n);
        int f = -1;
        for (int i = 0; eq && i < NFIELDS; i++)
            if (strlen(fields[i].name) == (size_t)(eq - p) &&
                memcmp(fields[i].name, p, (size_t)(eq - p)) == 0)
                f = i;
        if (n == 0 || !eq || f < 0) {
            snprintf(err, errlen, "'%.*s': not name=value of a rate (gemm, im2col, blk1x1, "
                     "blk1x1pad, blkkxk, copy, step, plaincall)", (int)(n > 60 ? 60 : n), p);
            return 0;
        }
        if (seen[f]++) {
            snprintf(err, errlen, "%s given twice", fields[f].name);
            return 0;
        }
        char num[48];
        size_t vn = n - (size_t)(eq + 1 - p);
        char *end = NULL;
        double v = NAN;
        if (vn > 0 && vn < sizeof num) {
            memcpy(num, eq + 1, vn);
            num[vn] = '\0';
            errno = 0;
            v = strtod(num, &end);
            if (end == num || *end || errno)
                v = NAN;
        }
        if (!(v >= fields[f].lo && v <= fields[f].hi)) { /* NaN fails too */
            snprintf(err, errlen, "%.*s: not a number from %g to %g", (int)(n > 60 ? 60 : n), p,
                     fields[f].lo, fields[f].hi);
            return 0;
        }
        *field(&got, f) = v;
        p += n;
        if (*p)
            p++;
    }
    for (int i = 0; all && i < NFIELDS; i++)
        if (!seen[i]) {
            snprintf(err, errlen, "%s missing", fields[i].name);
            return 0;
        }
    memcpy(r, &got, offsetof(graph_cost_rates, from));
    return 1;
}

void eager_cost_rates_str(const graph_cost_rates *r, char *buf, size_t len)
{
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < NFIELDS && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s=%.2f", i ? ";" : "", fields[i].name,
                               *field((graph_cost_rates *)r, i));
}

/* ---- the machine and the cache folder ---- */

static char g_model[128];
static pthread_once_t g_model_once = PTHREAD_ONCE_INIT;

/* /proc/cpuinfo's model name, read once per process (replay_compile asks
 * for it on every compile through the CPU backend's device, and the read
 * took 10-27 us here). */
static char g_model_name[256];
static pthread_once_t g_model_name_once = PTHREAD_ONCE_INIT;

static void model_name_read(void)
{
    char text[8192];
    int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    char *m = strstr(text, "model name");
    char *colon = m ? strchr(m, ':') : NULL;
    if (!colon)
        return;
    colon += strspn(colon + 1, " \t") + 1;
    size_t k = strcspn(colon, "\n");
    while (k && (colon[k - 1] == ' ' || colon[k - 1] == '\t'))
        k--;
    snprintf(g_model_name, sizeof g_model_name, "%.*s", (int)k, colon);
}

int eager_cpu_model_name(char *buf, size_t len)
{
    pthread_once(&g_model_name_once, model_name_read);
    snprintf(buf, len, "%s", g_model_name);
    return g_model_name[0] != '\0';
}

static void model_init(void)
{
    snprintf(g_model, sizeof g_model, "unknown");
    char name[256];
    if (!eager_cpu_model_name(name, sizeof name))
        return;
    size_t k = 0;
    for (const char *c = name; *c && k + 1 < sizeof g_model; c++) {
        char ch = *c;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '-';
        if (!ok && k && g_model[k - 1] == '_')
            continue;
        g_model[k++] = ok ? ch : '_';
    }
    while (k && g_model[k - 1] == '_')
        k--;
    g_model[k] = '\0';
    if (!k)
        snprintf(g_model, sizeof g_model, "unknown");
}

const char *eager_cpu_model(void)
{
    pthread_once(&g_model_once, model_init);
    return g_model;
}

int eager_cache_path(const char *env, const char *file, char *buf, size_t len)
{
    const char *e = env ? getenv(env) : NULL;
    if (e && e[0])
        return (size_t)snprintf(buf, len, "%s", e) < len;
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (x && x[0] == '/')
        n = snprintf(buf, len, "%s/tracegraph/%s", x, file);
    else if (h && h[0] == '/')
        n = snprintf(buf, len, "%s/.cache/tracegraph/%s", h, file);
    else
        return 0;
    if (n < 0 || (size_t)n >= len)
        return 0;
    /* the folders of the default path, made as needed (mkdir -p of the
     * last two: ~/.cache and tracegraph) */
    char *slash = strrchr(buf, '/'), *prev;
    *slash = '\0';
    prev = strrchr(buf, '/');
    if (prev && prev != buf) {
        *prev = '\0';
        mkdir(buf, 0755);
        *prev = '/';
    }
    mkdir(buf, 0755);
    *slash = '/';
    return 1;
}

/* ---- the micro-benchmark ---- */

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static graph_type f32(int ndim, const int64_t *d)
{
    graph_type t = {0};
    t.dtype = GRAPH_F32;
    t.ndim = (int8_t)ndim;
    for (int i = 0; i < ndim; i++)
        t.dim[i] = d[i];
    return t;
}

/*
 * The fastest of op's runs on inputs of types in[0..nin) (input j >= 1
 * fixed: the weights and bias, prepared once) in ns, or -1 when the
 * kernel fails (its reason in err).
 */
static double time_op(graph_op op, const void *attrs, const graph_type *in, int nin,
                      const graph_type *out, int threads, char *err, size_t errlen)
{
    const void *ip[3] = {NULL, NULL, NULL};
    float *own[4] = {NULL, NULL, NULL, NULL};
    double best = -1;
    tg_status st = TG_OK;
    for (int j = 0; j <= nin; j++) {
        const graph_type *t = j < nin ? &in[j] : out;
        size_t cnt = (size_t)graph_type_numel(t);
        if (!(own[j] = tg_aligned_alloc(64, (cnt * sizeof(float) + 63) & ~(size_t)63))) {
            snprintf(err, errlen, "out of memory");
            st = TG_ERR_NOMEM;
            break;
        }
        for (size_t i = 0; i < cnt; i++) /* small values: no denormals, no overflow */
            own[j][i] = (float)((int)(i % 17) - 8) * 0.0625f;
        if (j < nin)
            ip[j] = own[j];
    }
    eager_kstate *slot = NULL;
    void *outs[1] = {own[nin]};
    uint32_t fixed = nin > 1 ? ((1u << nin) - 1) & ~1u : 0;
    eager_kargs a = {in, ip, nin, attrs, out, outs, 1, threads, err, errlen, &slot, fixed, 0};
    if (st == TG_OK && eager_kernels[op](&a) == TG_OK) { /* prepares */
        double spent = 0;
        for (int r = 0; r < RATE_RUNS && spent < RATE_BUDGET_NS; r++) {
            double t0 = now_ns();
            if (eager_kernels[op](&a) != TG_OK) {
                best = -1;
                break;
            }
            double dt = now_ns() - t0;
            spent += dt;
            if (best < 0 || dt < best)
                best = dt;
        }
    }
    eager_kstate_free(slot);
    for (int j = 0; j <= nin; j++)
        tg_free(own[j]);
    return best > 0 ? best : -1;
}

/* A conv of c -> o channels with a k x k kernel (padding k/2) on h x h,
 * plain or blocked (bs lanes): its time in ns, or -1. */
static double time_conv(int blocked, int64_t c, int64_t o, int64_t k, int64_t h, int bs,
                        int threads, char *err, size_t errlen)
{
    int64_t pad = k / 2;
    int64_t xd[5] = {1, c, h, h, 0}, wd[4] = {o, c, k, k}, bd[1] = {o}, yd[5] = {1, o, h, h, 0};
    graph_type in[3];
    graph_type out;
    in[1] = f32(4, wd);
    in[2] = f32(1, bd);
    if (!blocked) {
        graph_conv2d_attrs at = {{2, {1, 1}}, {2, {pad, pad}}, {2, {1, 1}}, 1};
        in[0] = f32(4, xd);
        out = f32(4, yd);
        return time_op(GRAPH_OP_conv2d, &at, in, 3, &out, threads, err, errlen);
    }
    graph_conv2d_blk_attrs at = {.stride = {2, {1, 1}}, .padding = {2, {pad, pad}},
                                 .dilation = {2, {1, 1}}, .groups = 1, .block = bs,
                                 .clip_min = -INFINITY, .clip_max = INFINITY};
    xd[1] = (c + bs - 1) / bs, xd[4] = bs;
    yd[1] = (o + bs - 1) / bs, yd[4] = bs;
    in[0] = f32(5, xd);
    out = f32(5, yd);
    return time_op(GRAPH_OP_conv2d_blk, &at, in, 3, &out, threads, err, errlen);
}

/* to_blocked (or from_blocked) of c channels on h x h: ns, or -1. */
static double time_convert(int to, int64_t c, int64_t h, int bs, int threads, char *err,
                           size_t errlen)
{
    int64_t pd[4] = {1, c, h, h}, bd[5] = {1, (c + bs - 1) / bs, h, h, bs};
    graph_type p = f32(4, pd), b = f32(5, bd);
    if (to) {
        graph_to_blocked_attrs at = {bs};
        return time_op(GRAPH_OP_to_blocked, &at, &p, 1, &b, threads, err, errlen);
    }
    graph_from_blocked_attrs at = {c};
    return time_op(GRAPH_OP_from_blocked, &at, &b, 1, &p, threads, err, errlen);
}

static int64_t padded(int64_t c, int bs)
{
    return (c + bs - 1) / bs * bs;
}

/*
 * Measures r's rates at block bs and `threads` (those whose kernel fails
 * stay as they are: their names appended to failed).
 */
static void measure(graph_cost_rates *r, int bs, int threads, char *failed, size_t flen)
{
    char err[256] = "";
    size_t fat = 0;
    failed[0] = '\0';
#define FAIL(name)                                                                              \
    do {                                                                                        \
        if (fat < flen)                                                                         \
            fat += (size_t)snprintf(failed + fat, flen - fat, "%s%s", fat ? ", " : "", name);   \
    } while (0)
    const double pos = 28.0 * 28.0, macs1 = pos * 64 * 64, macs3 = macs1 * 9;
    double ps = time_conv(0, bs, bs, 1, 4, bs, threads, err, sizeof err);
    double bsm = time_conv(1, bs, bs, 1, 4, bs, threads, err, sizeof err);
    if (ps > 0 && bsm > 0)
        r->plain_call = fmax(0.0, ps - bsm);
    else
        FAIL("plaincall");
    double t = time_conv(0, 64, 64, 1, 28, bs, threads, err, sizeof err);
    if (t > 0) /* its call cost out, but never below half the time */
        r->gemm = macs1 * (pos + GEMM_POS) / pos / fmax(t - r->plain_call, 0.5 * t);
    else
        FAIL("gemm");
    if ((t = time_conv(1, 64, 64, 1, 28, bs, threads, err, sizeof err)) > 0)
        r->blk_1x1 = (double)padded(64, bs) * (double)padded(64, bs) * pos * (pos + BLK_POS) /
                     pos / t;
    else
        FAIL("blk1x1");
    int64_t cp = bs + bs / 2; /* 1.5 blocks: the last padded */
    if ((t = time_conv(1, cp, cp, 1, 28, bs, threads, err, sizeof err)) > 0)
        r->blk_1x1_padded = (double)(2 * bs) * (2 * bs) * pos * (pos + BLK_POS) / pos / t;
    else
        FAIL("blk1x1pad");
    if ((t = time_conv(0, 64, 64, 3, 28, bs, threads, err, sizeof err)) > 0)
        r->im2col = macs3 / fmax(t - r->plain_call, 0.5 * t);
    else
        FAIL("im2col");
    if ((t = time_conv(1, 64, 64, 3, 28, bs, threads, err, sizeof err)) > 0)
        r->blk_kxk = (double)padded(64, bs) * (double)padded(64, bs) * 9 * pos / t;
    else
        FAIL("blkkxk");
    double step = time_convert(1, bs, 2, bs, threads, err, sizeof err);
    if (step > 0)
        r->step = step;
    else
        FAIL("step");
    double to = time_convert(1, 64, 56, bs, threads, err, sizeof err);
    double from = time_convert(0, 64, 56, bs, threads, err, sizeof err);
    if (to > 0 && from > 0) {
        double bytes = 4.0 * 2 * (64.0 * 56 * 56) * 2; /* both, read and written */
        double ns = to + from - 2 * r->step;
        r->copy = bytes / fmax(ns, 0.5 * (to + from));
    } else {
        FAIL("copy");
    }
#undef FAIL
    /* a rate out of parse's range (a clock gone wrong) is not kept */
    graph_cost_rates built = GRAPH_COST_RATES_BUILTIN;
    for (int i = 0; i < NFIELDS; i++) {
        double v = *field(r, i);
        if (!(v >= fields[i].lo && v <= fields[i].hi)) {
            *field(r, i) = *field(&built, i);
            if (fat < flen)
                fat += (size_t)snprintf(failed + fat, flen - fat, "%s%s", fat ? ", " : "",
                                        fields[i].name);
        }
    }
}

/* ---- the cache ---- */

typedef struct rate_entry {
    char *key;
    graph_cost_rates r; /* r.from unused */
} rate_entry;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_path[4096];
static int g_loaded;
static rate_entry g_ent[RATE_MAX_ENTRIES];
static int g_n;
static char g_refused[200]; /* the first refused line of the file read */

/* What this process decided, by key (measured, cached or pinned). */
typedef struct rate_known {
    char key[RATE_MAX_KEY + 1];
    char env[64];
    graph_cost_rates r;
} rate_known;
static rate_known g_known[16];
static int g_nknown;

static void drop_locked(void)
{
    for (int i = 0; i < g_n; i++)
        tg_free(g_ent[i].key);
    g_n = 0;
    g_loaded = 0;
    g_path[0] = '\0';
    g_refused[0] = '\0';
}

void eager_cost_rates_forget(void)
{
    pthread_mutex_lock(&g_mu);
    drop_locked();
    g_nknown = 0;
    pthread_mutex_unlock(&g_mu);
}

static rate_entry *find_locked(const char *key)
{
    for (int i = 0; i < g_n; i++)
        if (strcmp(g_ent[i].key, key) == 0)
            return &g_ent[i];
    return NULL;
}

static void put_locked(const char *key, const graph_cost_rates *r)
{
    rate_entry *e = find_locked(key);
    if (!e) {
        char *k = tg_strdup(key);
        if (!k)
            return;
        if (g_n == RATE_MAX_ENTRIES) { /* full: the oldest goes */
            tg_free(g_ent[0].key);
            memmove(g_ent, g_ent + 1, sizeof *g_ent * (size_t)(g_n - 1));
            g_n--;
        }
        e = &g_ent[g_n++];
        e->key = k;
    }
    e->r = *r;
}

/* A key: 1..RATE_MAX_KEY printable characters, no space. */
static int key_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RATE_MAX_KEY)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 127)
            return 0;
    return 1;
}

/* Line `no` of the file (its tab-separated fields) into the cache;
 * refused: the first refusal's reason kept in g_refused. */
static void parse_line_locked(void *ctx, char **f, int nf, int no)
{
    (void)ctx;
    char why[160];
    graph_cost_rates r = GRAPH_COST_RATES_BUILTIN;
    if (nf != 3 || strcmp(f[0], "r1") != 0)
        snprintf(why, sizeof why, "not 'r1 TAB key TAB rates'");
    else if (!key_ok(f[1]))
        snprintf(why, sizeof why, "the key is not one word of printable ASCII (at most %d)",
                 RATE_MAX_KEY);
    else if (eager_cost_rates_parse(f[2], 1, &r, why, sizeof why)) {
        put_locked(f[1], &r);
        return;
    }
    if (!g_refused[0])
        snprintf(g_refused, sizeof g_refused, "cache line %d refused: %s", no, why);
}

int eager_cache_read_lines(const char *path, size_t max_bytes, size_t max_line,
                           void (*line)(void *ctx, char **f, int nf, int no),
                           void (*bad)(void *ctx, int no, const char *why), void *ctx)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        bad(ctx, 0, "the cache is not a regular file");
        return 0;
    }
    if (!(buf = tg_malloc(max_bytes + 1))) {
        close(fd);
        return -1;
    }
    while (len < max_bytes) {
        ssize_t n = read(fd, buf + len, max_bytes - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    int no = 0;
    for (size_t at = 0; at < len;) { /* a last line without its newline is cut: dropped */
        char *nl = memchr(buf + at, '\n', len - at);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (buf + at));
        *nl = '\0';
        no++;
        if (n > max_line || strlen(buf + at) != n) {
            bad(ctx, no, n > max_line ? "too long" : "a NUL byte in it");
        } else if (n && buf[at] != '#') {
            char *f[8];
            int nf = 0;
            for (char *s = buf + at; nf < 8;) {
                f[nf++] = s;
                char *t = strchr(s, '\t');
                if (!t)
                    break;
                *t = '\0';
                s = t + 1;
            }
            line(ctx, f, nf, no);
        }
        at += n + 1;
    }
    tg_free(buf);
    return rc;
}

static void refuse_line(void *ctx, int no, const char *why)
{
    (void)ctx;
    if (g_refused[0])
        return;
    if (no)
        snprintf(g_refused, sizeof g_refused, "cache line %d refused: %s", no,
                 strcmp(why, "too long") ? why : "longer than 512 bytes");
    else
        snprintf(g_refused, sizeof g_refused, "%s", why);
}

static void load_locked(const char *path)
{
    if (g_loaded && strcmp(g_path, path) == 0)
        return;
    drop_locked();
    g_loaded = 1;
    snprintf(g_path, sizeof g_path, "%s", path);
    eager_cache_read_lines(path, RATE_MAX_BYTES, RATE_MAX_LINE, parse_line_locked, refuse_line,
                           NULL);
}

/* The whole cache to g_path (a temporary renamed over it): 1, or 0 and
 * why in err. */
static int write_locked(char *err, size_t errlen)
{
    static const char head[] = "# tracegraph cost-model rates (-O3 layout): r1 TAB key TAB "
                               "rates; measured by tracegraph, safe to delete\n";
    size_t cap = sizeof head + (size_t)g_n * (RATE_MAX_KEY + 256), len = 0;
    char *buf = tg_malloc(cap), tmp[4200];
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    len += (size_t)snprintf(buf, cap, "%s", head);
    for (int i = 0; i < g_n; i++) {
        char rs[256];
        eager_cost_rates_str(&g_ent[i].r, rs, sizeof rs);
        int w = snprintf(buf + len, cap - len, "r1\t%s\t%s\n", g_ent[i].key, rs);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
    }
    int ok = 0;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_path, (long)getpid()) >= sizeof tmp) {
        snprintf(err, errlen, "path too long");
    } else {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "%s", strerror(errno));
        } else {
            size_t at = 0;
            while (at < len) {
                ssize_t w = write(fd, buf + at, len - at);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    break;
                at += (size_t)w;
            }
            int e = at < len ? (errno ? errno : EIO) : 0;
            if (close(fd) != 0 && !e)
                e = errno;
            if (!e && rename(tmp, g_path) != 0)
                e = errno;
            if (e) {
                snprintf(err, errlen, "%s", strerror(e));
                unlink(tmp);
            } else {
                ok = 1;
            }
        }
    }
    tg_free(buf);
    return ok;
}

static void rate_key(int threads, int block, char *buf, size_t len)
{
    snprintf(buf, len, "cpu=%s;onednn=%s;kernels=%s;block=%d;threads=%d;bench=%d",
             eager_cpu_model(), eager_dnnl_isa_name(), eager_isa_active->name, block, threads,
             RATE_BENCH);
}

tg_status eager_cpu_cost_rates(int threads, int block, graph_cost_rates *r, char *err,
                               size_t errlen)
{
    char key[RATE_MAX_KEY + 64], path[4096], tmp[1];
    const char *env = getenv("TG_COST_RATES");
    graph_cost_rates built = GRAPH_COST_RATES_BUILTIN;
    if (!err || !errlen)
        err = tmp, errlen = sizeof tmp;
    if (!env)
        env = "";
    threads = threads < 1 ? 1 : threads;
    *r = built;
    if (strcmp(env, "builtin") == 0) {
        snprintf(r->from, sizeof r->from,
                 "built-in (TG_COST_RATES=builtin; fitted on one Zen 5 machine)");
        return TG_OK;
    }
    if (env[0] && strcmp(env, "measure") != 0) {
        char why[200];
        if (!eager_cost_rates_parse(env, 0, r, why, sizeof why)) {
            snprintf(err, errlen, "TG_COST_RATES: %s (give builtin, measure, or name=value,... "
                     "of gemm, im2col, blk1x1, blk1x1pad, blkkxk, copy, step, plaincall)", why);
            *r = built;
            return TG_ERR_ARG;
        }
        snprintf(r->from, sizeof r->from, "pinned by TG_COST_RATES (the rates not named built-in)");
        return TG_OK;
    }
    rate_key(threads, block, key, sizeof key);
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nknown; i++)
        if (strcmp(g_known[i].key, key) == 0) {
            *r = g_known[i].r;
            pthread_mutex_unlock(&g_mu);
            return TG_OK;
        }
    int have_path = eager_cache_path("TG_RATES_CACHE", "rates.txt", path, sizeof path);
    if (have_path)
        load_locked(path);
    const rate_entry *e = have_path && key_ok(key) ? find_locked(key) : NULL;
    if (e) {
        *r = e->r;
        snprintf(r->from, sizeof r->from, "cached (%.120s%s%s)", path, g_refused[0] ? "; " : "",
                 g_refused);
    } else {
        char failed[128], werr[128] = "", note[240];
        double t0 = now_ns();
        measure(r, block, threads, failed, sizeof failed);
        double ms = (now_ns() - t0) / 1e6;
        int saved = 0;
        if (have_path && key_ok(key)) {
            put_locked(key, r);
            saved = write_locked(werr, sizeof werr);
        }
        size_t at = 0;
        if (saved)
            at = (size_t)snprintf(note, sizeof note, "saved to %.100s", path);
        else if (have_path)
            at = (size_t)snprintf(note, sizeof note, "not saved to %.80s: %.60s", path, werr);
        else
            at = (size_t)snprintf(note, sizeof note, "not saved: no cache folder (no HOME)");
        if (failed[0] && at < sizeof note)
            at += (size_t)snprintf(note + at, sizeof note - at, "; built-in: %s", failed);
        if (g_refused[0] && at < sizeof note)
            snprintf(note + at, sizeof note - at, "; %s%s", g_refused,
                     saved ? " (rewritten without it)" : "");
        snprintf(r->from, sizeof r->from, "measured here in %.0f ms (%s)", ms, note);
    }
    if (g_nknown < (int)(sizeof g_known / sizeof *g_known)) {
        snprintf(g_known[g_nknown].key, sizeof g_known[g_nknown].key, "%s", key);
        g_known[g_nknown++].r = *r;
    }
    pthread_mutex_unlock(&g_mu);
    return TG_OK;
}
