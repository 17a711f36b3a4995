/*
 * tune.c - replay_opts.tune: the GEMM of each matmul, linear and
 * linear_ep step, and the oneDNN implementation of each conv2d_blk step,
 * chosen by measurement at compile time, and the tuning cache that makes
 * the next compile of the same shapes instant.
 *
 * GEMM candidates: oneDNN's prepared primitive, as a session runs it (a
 * state slot, constant weights packed once), and cblas_sgemm of OpenBLAS
 * and of BLIS when they are installed (eager/blas.h).  Each is run once to
 * prepare and warm up, then in alternating rounds, at most TUNE_ROUNDS
 * each and while the node's TUNE_BUDGET_NS lasts; the lowest median wins
 * (a tie: oneDNN).
 * Inputs: the plan's own constants and params, and a fixed pattern for
 * activations, at the traced shapes.  The choice is p->gemm_impl[node],
 * which session.c binds into the step's eager_kargs.impl (every variant:
 * other dynamic sizes run the traced shapes' choice).
 *
 * Blocked convs (conv2d_blk, what -O3 lays out): the candidates are the
 * EAGER_CONV_* choices that give another oneDNN implementation here, asked
 * of oneDNN without running (eager_dnnl_impl_of_choice; reference loops
 * left out, duplicates dropped): its first direct kernel (jit_1x1 for a
 * 1x1 conv, jit otherwise), its generic "jit:" direct kernel where that is
 * another, and Winograd F(4x4,3x3) for a 3x3 stride-1 dense conv where
 * oneDNN has one (AVX-512).  Two or more are timed as GEMMs are (the
 * lower median wins); one is taken untimed.  Without tuning the static
 * rule (kernel.h: EAGER_CONV_DEFAULT) picks: Winograd where it exists for
 * the shape, else the first direct kernel.
 *
 * The cache: $TG_TUNE_CACHE, else $XDG_CACHE_HOME/tracegraph/tune.txt,
 * else ~/.cache/tracegraph/tune.txt.  Plain text, '#' lines ignored, one
 * line per key:
 *
 *   v1 TAB key TAB impl TAB onednn_us TAB blas_us TAB blis_us  (a GEMM;
 *                     a line without blis_us is read too)
 *   c1 TAB key TAB impl TAB winograd_us TAB direct_us TAB direct_jit_us
 *                                                          (a blocked conv)
 *
 * key: the machine and the node, e.g.
 *   cpu=AMD_EPYC_9R14;onednn=avx512_core;kernels=avx512;blas=Haswell;
 *   blis=haswell;threads=1;op=linear;m=64;k=784;n=512;batch=1;ta=0;tb=1;bias=1;
 *   post=-;fixed=6;a=64x784;b=512x784
 * or for a conv cpu=...;threads=1;op=conv2d_blk;x=1x4x56x56x16;
 *   w=64x64x3x3;stride=1.1;pad=1.1.1.1;dil=1.1;groups=1;algo=0;post=2;
 *   nin=3;fixed=6
 * (one word: printable ASCII without spaces); impl "onednn", "blas" or "blis",
 * for a conv "winograd", "direct" or "direct_jit";
 * the times in microseconds ("-" for a candidate not timed).  Read once
 * per process and path (at most TUNE_MAX_BYTES, lines of at most
 * TUNE_MAX_LINE bytes, TUNE_MAX_ENTRIES keys); a line that does not parse
 * is ignored, and an entry only ever chooses between the candidates this
 * process has (a "blas" entry where no BLAS is loaded is not used).  New
 * entries are added in memory and the whole file is rewritten from memory
 * (formats/file.c: a temporary renamed over it, so a reader never sees
 * half of it; a damaged file comes back clean).  Two processes tuning at
 * once may each drop the other's new lines: they are measured again.
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

#include "../eager/blas.h"
#include "../eager/cost_rates.h"
#include "../eager/dnnl_util.h"
#include "../eager/isa.h"
#include "../formats/file.h"
#include "../graph/alloc.h"
#include "internal.h"
#include "../graph/graph_impl.h"

#define TUNE_MAX_BYTES (1u << 20)
#define TUNE_MAX_LINE 512
#define TUNE_MAX_KEY 400
#define TUNE_MAX_ENTRIES 2048
#define TUNE_ROUNDS 5
#define TUNE_BUDGET_NS 40e6 /* both candidates of one node: ~20 ms each */

static const char *const impl_names[] = {"static", "onednn", "blas", "blis"};
static const char *const conv_names[] = {"static", "winograd", "direct", "direct_jit"};

typedef struct tune_entry {
    char *key;
    int conv; /* a conv2d_blk's (c1 line), else a GEMM's (v1) */
    int impl;
    double us[4]; /* by EAGER_GEMM_* or EAGER_CONV_*; < 0: not timed */
} tune_entry;

/* The cache of one path, read once per process (g_mu guards all). */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_path[4096];
static int g_loaded;
static tune_entry *g_ent;
static int g_n;

static void cache_drop_locked(void)
{
    for (int i = 0; i < g_n; i++)
        tg_free(g_ent[i].key);
    tg_free(g_ent);
    g_ent = NULL;
    g_n = 0;
    g_loaded = 0;
    g_path[0] = '\0';
}

void replay_tune_forget(void)
{
    pthread_mutex_lock(&g_mu);
    cache_drop_locked();
    pthread_mutex_unlock(&g_mu);
}

static tune_entry *cache_find_locked(const char *key)
{
    for (int i = g_n - 1; i >= 0; i--)
        if (strcmp(g_ent[i].key, key) == 0)
            return &g_ent[i];
    return NULL;
}

/* Adds or replaces key's entry (when full, the older half goes); 0 when
 * out of memory (the entry is then just not kept). */
static int cache_put_locked(const char *key, int conv, int impl, const double *us)
{
    tune_entry *e = cache_find_locked(key);
    if (!e) {
        if (!g_ent && !(g_ent = tg_calloc(TUNE_MAX_ENTRIES, sizeof *g_ent)))
            return 0;
        char *k = tg_strdup(key);
        if (!k)
            return 0;
        if (g_n == TUNE_MAX_ENTRIES) { /* full: the older half goes */
            int drop = TUNE_MAX_ENTRIES / 2;
            for (int i = 0; i < drop; i++)
                tg_free(g_ent[i].key);
            memmove(g_ent, g_ent + drop, sizeof *g_ent * (size_t)(g_n - drop));
            g_n -= drop;
        }
        e = &g_ent[g_n++];
        e->key = k;
    }
    e->conv = conv;
    e->impl = impl;
    for (int i = 0; i < 4; i++)
        e->us[i] = us[i];
    return 1;
}

/* A key word: 1..TUNE_MAX_KEY printable characters, no space or tab. */
static int key_ok(const char *s, size_t n)
{
    if (n == 0 || n > TUNE_MAX_KEY)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 127)
            return 0;
    return 1;
}

/* A time field: "-" (-1) or a finite number >= 0 (microseconds). */
static int us_ok(const char *s, double *out)
{
    if (strcmp(s, "-") == 0) {
        *out = -1;
        return 1;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0 || v > 1e12)
        return 0;
    *out = v;
    return 1;
}

/* One line (its tab-separated fields) into the cache, or ignored. */
static void parse_line_locked(void *ctx, char **f, int nf, int no)
{
    (void)ctx;
    (void)no;
    if (nf > 6)
        return;
    if (nf == 6 && strcmp(f[0], "c1") == 0 && key_ok(f[1], strlen(f[1]))) {
        /* c1 TAB key TAB impl TAB winograd_us TAB direct_us TAB direct_jit_us */
        int impl = -1;
        for (int i = EAGER_CONV_WINOGRAD; i <= EAGER_CONV_DIRECT_JIT; i++)
            if (strcmp(f[2], conv_names[i]) == 0)
                impl = i;
        double us[4] = {-1, -1, -1, -1};
        if (impl > 0 && us_ok(f[3], &us[1]) && us_ok(f[4], &us[2]) && us_ok(f[5], &us[3]))
            cache_put_locked(f[1], 1, impl, us);
        return;
    }
    if ((nf != 5 && nf != 6) || strcmp(f[0], "v1") != 0 || !key_ok(f[1], strlen(f[1])))
        return;
    int impl = strcmp(f[2], "onednn") == 0 ? EAGER_GEMM_ONEDNN
               : strcmp(f[2], "blas") == 0 ? EAGER_GEMM_BLAS
               : strcmp(f[2], "blis") == 0 ? EAGER_GEMM_BLIS
                                           : -1;
    double us[4] = {-1, -1, -1, -1};
    if (impl < 0 || !us_ok(f[3], &us[EAGER_GEMM_ONEDNN]) || !us_ok(f[4], &us[EAGER_GEMM_BLAS]) ||
        (nf == 6 && !us_ok(f[5], &us[EAGER_GEMM_BLIS])))
        return;
    cache_put_locked(f[1], 0, impl, us);
}

/* A line too long or holding a NUL byte: ignored, as a malformed one. */
static void ignore_line(void *ctx, int no, const char *why)
{
    (void)ctx;
    (void)no;
    (void)why;
}

/* Reads path into the cache unless it holds path already.  A file that is
 * missing, not a regular file or unreadable is an empty cache. */
static void cache_load_locked(const char *path)
{
    if (g_loaded && strcmp(g_path, path) == 0)
        return;
    cache_drop_locked();
    g_loaded = 1;
    snprintf(g_path, sizeof g_path, "%s", path);
    eager_cache_read_lines(path, TUNE_MAX_BYTES, TUNE_MAX_LINE, parse_line_locked,
                           ignore_line, NULL);
}

static void us_str(double us, char *buf, size_t len)
{
    if (us < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f", us);
}

/* Writes the whole cache to g_path (temporary + rename): TG_OK or a
 * message in err. */
static tg_status cache_write_locked(char *err, size_t errlen)
{
    static const char head[] = "# tracegraph tuning cache (replay_opts.tune): v1 TAB key TAB "
                               "impl TAB onednn_us TAB blas_us TAB blis_us (GEMMs), c1 TAB key TAB impl TAB "
                               "winograd_us TAB direct_us TAB direct_jit_us (blocked convs); "
                               "written by tracegraph, safe to delete\n";
    size_t cap = sizeof head + (size_t)g_n * (TUNE_MAX_KEY + 64) + 1, len = 0;
    char *buf = tg_malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return TG_ERR_NOMEM;
    }
    len += (size_t)snprintf(buf, cap, "%s", head);
    for (int i = 0; i < g_n; i++) {
        char a[32], b[32], c[32];
        int w;
        if (g_ent[i].conv) {
            us_str(g_ent[i].us[EAGER_CONV_WINOGRAD], a, sizeof a);
            us_str(g_ent[i].us[EAGER_CONV_DIRECT], b, sizeof b);
            us_str(g_ent[i].us[EAGER_CONV_DIRECT_JIT], c, sizeof c);
            w = snprintf(buf + len, cap - len, "c1\t%s\t%s\t%s\t%s\t%s\n", g_ent[i].key,
                         conv_names[g_ent[i].impl], a, b, c);
        } else {
            us_str(g_ent[i].us[EAGER_GEMM_ONEDNN], a, sizeof a);
            us_str(g_ent[i].us[EAGER_GEMM_BLAS], b, sizeof b);
            us_str(g_ent[i].us[EAGER_GEMM_BLIS], c, sizeof c);
            w = snprintf(buf + len, cap - len, "v1\t%s\t%s\t%s\t%s\t%s\n", g_ent[i].key,
                         impl_names[g_ent[i].impl], a, b, c);
        }
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
    }
    tg_status st = format_write_bytes(g_path, buf, len, err, errlen);
    tg_free(buf);
    return st;
}

static int cache_path(char *buf, size_t len)
{
    return eager_cache_path("TG_TUNE_CACHE", "tune.txt", buf, len);
}

static const char *cpu_model(void)
{
    return eager_cpu_model();
}

/* Appends "x"-joined dims of t to buf at *at. */
static void dims_str(const graph_type *t, char *buf, size_t len, size_t *at)
{
    if (t->ndim == 0 && *at < len)
        *at += (size_t)snprintf(buf + *at, len - *at, "scalar");
    for (int d = 0; d < t->ndim && *at < len; d++)
        *at += (size_t)snprintf(buf + *at, len - *at, "%s%lld", d ? "x" : "",
                                (long long)t->dim[d]);
}

/* A GEMM node of the CPU backend the tuner looks at: matmul, linear,
 * linear_ep on f32, non-empty, with a sum to do (K > 0). */
static int tunable(const graph *g, const graph_node *n, int64_t *mkn_batch)
{
    if (n->op != GRAPH_OP_matmul && n->op != GRAPH_OP_linear && n->op != GRAPH_OP_linear_ep)
        return 0;
    if (n->nout != 1 || n->nin < 2)
        return 0;
    const graph_type *a = &g->values[n->in[0]].type, *b = &g->values[n->in[1]].type;
    const graph_type *o = &g->values[n->out[0]].type;
    if (a->dtype != GRAPH_F32 || b->dtype != GRAPH_F32 || o->dtype != GRAPH_F32 ||
        graph_type_numel(a) == 0 || graph_type_numel(b) == 0 || graph_type_numel(o) == 0)
        return 0;
    int64_t m, k, nn;
    if (n->op == GRAPH_OP_matmul) {
        const graph_matmul_attrs *at = tg_node_attrs(n);
        int ta = a->ndim >= 2 && at->transpose_a, tb = b->ndim >= 2 && at->transpose_b;
        m = a->ndim == 1 ? 1 : a->dim[a->ndim - 2 + ta];
        k = a->ndim == 1 ? a->dim[0] : a->dim[a->ndim - 1 - ta];
        nn = b->ndim == 1 ? 1 : b->dim[b->ndim - 1 - tb];
    } else {
        nn = b->dim[0], k = b->dim[1];
        m = graph_type_numel(a) / k;
    }
    if (k == 0 || m * nn == 0)
        return 0;
    mkn_batch[0] = m, mkn_batch[1] = k, mkn_batch[2] = nn;
    mkn_batch[3] = graph_type_numel(o) / (m * nn);
    return 1;
}

/* The key of node n (see the top); 0 when it does not fit. */
static int node_key(const replay_plan *p, const graph_node *n, const int64_t *mknb, char *buf,
                    size_t len)
{
    const graph *g = p->g;
    int ta = 0, tb = n->op != GRAPH_OP_matmul;
    char post[96] = "-";
    if (n->op == GRAPH_OP_matmul) {
        const graph_matmul_attrs *at = tg_node_attrs(n);
        ta = (int)at->transpose_a, tb = (int)at->transpose_b;
    } else if (n->op == GRAPH_OP_linear_ep) {
        const graph_linear_ep_attrs *at = tg_node_attrs(n);
        size_t w = 0;
        for (int i = 0; i < at->post.n && w + 24 < sizeof post; i++)
            w += (size_t)snprintf(post + w, sizeof post - w, "%s%lld", i ? "." : "",
                                  (long long)at->post.v[i]);
    }
    unsigned fixed = 0;
    for (int j = 0; j < n->nin && j < 32; j++) {
        graph_value_kind kind = g->values[n->in[j]].kind;
        if (kind == GRAPH_VALUE_CONST || kind == GRAPH_VALUE_PARAM)
            fixed |= 1u << j;
    }
    size_t at = (size_t)snprintf(
        buf, len,
        "cpu=%s;onednn=%s;kernels=%s;blas=%s;blis=%s;threads=%d;op=%s;m=%lld;k=%lld;n=%lld;"
        "batch=%lld;ta=%d;tb=%d;bias=%d;post=%s;fixed=%u;a=",
        cpu_model(), eager_dnnl_isa_name(), eager_isa_active->name, eager_blas_core(),
        eager_blis_arch(),
        p->opts.threads, graph_ops[n->op].name, (long long)mknb[0], (long long)mknb[1],
        (long long)mknb[2], (long long)mknb[3], ta, tb, n->op != GRAPH_OP_matmul && n->nin > 2,
        post, fixed);
    if (at < len)
        dims_str(&g->values[n->in[0]].type, buf, len, &at);
    if (at < len)
        at += (size_t)snprintf(buf + at, len - at, ";b=");
    if (at < len)
        dims_str(&g->values[n->in[1]].type, buf, len, &at);
    return at < len && key_ok(buf, at);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of n >= 1 times (sorted in place). */
static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/*
 * Times node n's kernel for each candidate impls[0..nc) at the traced
 * shapes: us[impl] in microseconds (-1 for one that failed).  TG_OK, or
 * TG_ERR_NOMEM.
 */
static tg_status time_node(const replay_plan *p, const graph_node *n, const int *impls, int nc,
                           double *us)
{
    const graph *g = p->g;
    graph_type in_type[8];
    const void *in[8] = {NULL};
    float *own[8] = {NULL};
    int nin = n->nin < 8 ? n->nin : 8;
    uint32_t fixed = 0;
    const graph_type *ot = &g->values[n->out[0]].type;
    float *out = tg_aligned_alloc(64, ((size_t)graph_type_numel(ot) * sizeof(float) + 63) & ~(size_t)63);
    tg_status st = out ? TG_OK : TG_ERR_NOMEM;
    for (int j = 0; j < nin && st == TG_OK; j++) {
        const graph_value *v = &g->values[n->in[j]];
        in_type[j] = v->type;
        if ((v->kind == GRAPH_VALUE_CONST || v->kind == GRAPH_VALUE_PARAM) && v->data) {
            in[j] = v->data;
            fixed |= 1u << j;
            continue;
        }
        size_t cnt = (size_t)graph_type_numel(&v->type);
        if (!(own[j] = tg_aligned_alloc(64, (cnt * sizeof(float) + 63) & ~(size_t)63))) {
            st = TG_ERR_NOMEM;
            break;
        }
        for (size_t i = 0; i < cnt; i++)
            own[j][i] = (float)((int)(i % 17) - 8) * 0.0625f;
        in[j] = own[j];
    }
    eager_kstate *slot[3] = {NULL, NULL, NULL};
    double t[3][TUNE_ROUNDS];
    int nt[3] = {0, 0, 0}, ok[3] = {0, 0, 0};
    nc = nc > 3 ? 3 : nc;
    char kerr[256];
    void *outs[1] = {out};
    eager_kernel_fn fn = eager_kernels[n->op];
    /* one call each first: prepares (oneDNN's primitive, packed weights) */
    for (int c = 0; c < nc && st == TG_OK; c++) {
        eager_kargs a = {in_type, in, nin, tg_node_attrs(n), ot, outs, 1, p->opts.threads,
                         kerr, sizeof kerr, &slot[c], fixed, impls[c]};
        ok[c] = fn(&a) == TG_OK;
    }
    double spent = 0;
    for (int r = 0; r < TUNE_ROUNDS && st == TG_OK && (r == 0 || spent < TUNE_BUDGET_NS); r++)
        for (int c = 0; c < nc; c++) {
            if (!ok[c])
                continue;
            eager_kargs a = {in_type, in, nin, tg_node_attrs(n), ot, outs, 1,
                             p->opts.threads, kerr, sizeof kerr, &slot[c], fixed, impls[c]};
            double t0 = now_ns();
            ok[c] = fn(&a) == TG_OK;
            double dt = now_ns() - t0;
            spent += dt;
            t[c][nt[c]++] = dt;
        }
    for (int c = 0; c < nc; c++) {
        us[impls[c]] = st == TG_OK && ok[c] && nt[c] ? median(t[c], nt[c]) / 1e3 : -1;
        eager_kstate_free(slot[c]);
    }
    for (int j = 0; j < nin; j++)
        tg_free(own[j]);
    tg_free(out);
    return st;
}

/* Appends "."-joined values of l to buf at *at ("-" when empty). */
static void ints_str(const graph_ints *l, char *buf, size_t len, size_t *at)
{
    if (l->n == 0 && *at < len)
        *at += (size_t)snprintf(buf + *at, len - *at, "-");
    for (int i = 0; i < l->n && *at < len; i++)
        *at += (size_t)snprintf(buf + *at, len - *at, "%s%lld", i ? "." : "",
                                (long long)l->v[i]);
}

/* A conv2d_blk node the tuner looks at: f32, non-empty in and out. */
static int conv_tunable(const graph *g, const graph_node *n)
{
    if (n->op != GRAPH_OP_conv2d_blk || n->nout != 1 || n->nin < 2)
        return 0;
    for (int j = 0; j < n->nin; j++)
        if (g->values[n->in[j]].type.dtype != GRAPH_F32 ||
            graph_type_numel(&g->values[n->in[j]].type) == 0)
            return 0;
    return graph_type_numel(&g->values[n->out[0]].type) > 0;
}

/* Bit j: input j of n is a constant or param (fixed for the plan's life). */
static uint32_t fixed_bits(const graph *g, const graph_node *n)
{
    uint32_t fixed = 0;
    for (int j = 0; j < n->nin && j < 32; j++) {
        graph_value_kind kind = g->values[n->in[j]].kind;
        if (kind == GRAPH_VALUE_CONST || kind == GRAPH_VALUE_PARAM)
            fixed |= 1u << j;
    }
    return fixed;
}

/* The key of conv2d_blk node n; 0 when it does not fit. */
static int conv_key(const replay_plan *p, const graph_node *n, char *buf, size_t len)
{
    const graph *g = p->g;
    const graph_conv2d_blk_attrs *at = tg_node_attrs(n);
    size_t w = (size_t)snprintf(buf, len,
                                "cpu=%s;onednn=%s;kernels=%s;threads=%d;op=conv2d_blk;x=",
                                cpu_model(), eager_dnnl_isa_name(), eager_isa_active->name,
                                p->opts.threads);
    if (w < len)
        dims_str(&g->values[n->in[0]].type, buf, len, &w);
    if (w < len)
        w += (size_t)snprintf(buf + w, len - w, ";w=");
    if (w < len)
        dims_str(&g->values[n->in[1]].type, buf, len, &w);
    if (w < len)
        w += (size_t)snprintf(buf + w, len - w, ";stride=");
    if (w < len)
        ints_str(&at->stride, buf, len, &w);
    if (w < len)
        w += (size_t)snprintf(buf + w, len - w, ";pad=");
    if (w < len)
        ints_str(&at->padding, buf, len, &w);
    if (w < len)
        w += (size_t)snprintf(buf + w, len - w, ";dil=");
    if (w < len)
        ints_str(&at->dilation, buf, len, &w);
    if (w < len)
        w += (size_t)snprintf(buf + w, len - w, ";groups=%lld;algo=%lld;post=",
                              (long long)at->groups, (long long)at->algo);
    if (w < len)
        ints_str(&at->post, buf, len, &w);
    if (w < len)
        w += (size_t)snprintf(buf + w, len - w, ";nin=%d;fixed=%u", n->nin, fixed_bits(g, n));
    return w < len && key_ok(buf, w);
}

/*
 * The EAGER_CONV_* of conv2d_blk node n that run different oneDNN
 * implementations here (asked of oneDNN, not run: Winograd where it has
 * one for the shape, its first direct kernel, its generic "jit:" direct
 * kernel where that is another), reference loops left out: how many, in
 * impls, their implementations' names in names.
 */
static int conv_candidates(const replay_plan *p, const graph_node *n, int *impls,
                           char names[][64])
{
    const graph *g = p->g;
    graph_type in[8];
    int nin = n->nin < 8 ? n->nin : 8, nc = 0;
    for (int j = 0; j < nin; j++)
        in[j] = g->values[n->in[j]].type;
    static const int order[3] = {EAGER_CONV_DIRECT, EAGER_CONV_DIRECT_JIT, EAGER_CONV_WINOGRAD};
    for (int oi = 0; oi < 3; oi++) { /* direct first: a shape without Winograd names it */
        int c = order[oi];
        char impl[64], why[256];
        if (eager_dnnl_impl_of_choice(n->op, tg_node_attrs(n), in, nin,
                                      &g->values[n->out[0]].type, fixed_bits(g, n),
                                      p->opts.threads, c, impl, sizeof impl, why,
                                      sizeof why) != TG_OK ||
            !impl[0] || eager_dnnl_impl_is_ref(impl))
            continue;
        int dup = 0;
        for (int k = 0; k < nc; k++)
            dup |= strcmp(names[k], impl) == 0;
        if (!dup) {
            impls[nc] = c;
            snprintf(names[nc++], 64, "%s", impl);
        }
    }
    return nc;
}

/*
 * Chooses node i's (a conv2d_blk) EAGER_CONV_*: from the cache, else by
 * timing its candidates (one candidate: that one, not timed); the choice
 * into p->gemm_impl[i] and p->tune_conv*.  *nnew counts new entries.
 * TG_OK or TG_ERR_NOMEM.
 */
static tg_status tune_conv(replay_plan *p, int32_t i, int have_path, int *nnew)
{
    const graph_node *n = &p->g->nodes[i];
    char key[TUNE_MAX_KEY + 64];
    int keyed = conv_key(p, n, key, sizeof key) && have_path, choice = 0;
    if (keyed) {
        pthread_mutex_lock(&g_mu);
        const tune_entry *e = cache_find_locked(key);
        if (e && e->conv && e->impl >= EAGER_CONV_WINOGRAD && e->impl <= EAGER_CONV_DIRECT_JIT)
            choice = e->impl;
        pthread_mutex_unlock(&g_mu);
        if (choice) {
            p->gemm_impl[i] = (int8_t)choice;
            p->tune_conv_cached++;
            p->tune_conv[choice]++;
            return TG_OK;
        }
    }
    int impls[3];
    char names[3][64];
    double us[4] = {-1, -1, -1, -1};
    int nc = conv_candidates(p, n, impls, names);
    if (nc == 0) { /* nothing but reference loops: the static rule */
        p->tune_conv_one++;
        p->tune_conv[0]++;
        return TG_OK;
    }
    if (nc == 1) {
        choice = impls[0];
        p->tune_conv_one++;
    } else {
        tg_status st = time_node(p, n, impls, nc, us);
        if (st != TG_OK)
            return st;
        choice = 0;
        for (int c = 0; c < nc; c++)
            if (us[impls[c]] >= 0 && (!choice || us[impls[c]] < us[choice]))
                choice = impls[c];
        if (!choice) /* none ran: the static rule */
            return TG_OK;
        p->tune_conv_timed++;
    }
    if (keyed) {
        pthread_mutex_lock(&g_mu);
        *nnew += cache_put_locked(key, 1, choice, us);
        pthread_mutex_unlock(&g_mu);
    }
    p->gemm_impl[i] = (int8_t)choice;
    p->tune_conv[choice]++;
    return TG_OK;
}

tg_status replay_tune(replay_plan *p, char *err, size_t errlen)
{
    const graph *g = p->g;
    if (p->backend != &replay_backend_cpu) {
        snprintf(p->tuning, sizeof p->tuning, "tune: not for backend %s (CPU plans only)",
                 p->backend->name);
        return TG_OK;
    }
    if (!(p->gemm_impl = tg_calloc((size_t)g->nnodes + 1, 1))) {
        snprintf(err, errlen, "replay: out of memory for the tuning of %d nodes", g->nnodes);
        return TG_ERR_NOMEM;
    }
    int blas = eager_blas_available(), blis = eager_blis_available();
    int impls[3] = {EAGER_GEMM_ONEDNN}, nc = 1;
    if (blas)
        impls[nc++] = EAGER_GEMM_BLAS;
    if (blis)
        impls[nc++] = EAGER_GEMM_BLIS;
    char path[4096], key[TUNE_MAX_KEY + 64], werr[512] = "";
    int have_path = cache_path(path, sizeof path), nnew = 0, count[4] = {0, 0, 0, 0};
    if (have_path) {
        pthread_mutex_lock(&g_mu);
        cache_load_locked(path);
        pthread_mutex_unlock(&g_mu);
    }
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        int64_t mknb[4];
        if (!(n->flags & GRAPH_NODE_DEAD) && conv_tunable(g, n)) {
            tg_status st = tune_conv(p, i, have_path, &nnew);
            if (st != TG_OK) {
                char what[400];
                snprintf(err, errlen, "replay: out of memory while tuning %s",
                         replay_node_str(p, i, what, sizeof what));
                return st;
            }
            continue;
        }
        if ((n->flags & GRAPH_NODE_DEAD) || !tunable(g, n, mknb))
            continue;
        int choice = EAGER_GEMM_ONEDNN, known = 0;
        int keyed = node_key(p, n, mknb, key, sizeof key);
        if (nc == 1) { /* one candidate: nothing to measure */
            p->gemm_impl[i] = (int8_t)choice;
            count[choice]++;
            continue;
        }
        if (keyed && have_path) {
            pthread_mutex_lock(&g_mu);
            const tune_entry *e = cache_find_locked(key);
            if (e && !e->conv &&
                (e->impl == EAGER_GEMM_ONEDNN || (e->impl == EAGER_GEMM_BLAS && blas) ||
                 (e->impl == EAGER_GEMM_BLIS && blis)))
                choice = e->impl, known = 1;
            pthread_mutex_unlock(&g_mu);
        }
        if (!known) {
            double us[4] = {-1, -1, -1, -1};
            tg_status st = time_node(p, n, impls, nc, us);
            if (st != TG_OK) {
                char what[400];
                snprintf(err, errlen, "replay: out of memory while tuning %s",
                         replay_node_str(p, i, what, sizeof what));
                return st;
            }
            /* the lowest median; a tie or none timed: oneDNN */
            choice = EAGER_GEMM_ONEDNN;
            for (int c = 1; c < nc; c++)
                if (us[impls[c]] >= 0 &&
                    (us[choice] < 0 || us[impls[c]] < us[choice]))
                    choice = impls[c];
            p->tune_timed++;
            if (keyed && have_path) {
                pthread_mutex_lock(&g_mu);
                nnew += cache_put_locked(key, 0, choice, us);
                pthread_mutex_unlock(&g_mu);
            }
        } else {
            p->tune_cached++;
        }
        p->gemm_impl[i] = (int8_t)choice;
        count[choice]++;
    }
    if (nnew) {
        pthread_mutex_lock(&g_mu);
        if (cache_write_locked(werr, sizeof werr) != TG_OK && !werr[0])
            snprintf(werr, sizeof werr, "cannot write");
        pthread_mutex_unlock(&g_mu);
    }
    p->tune_blas = count[EAGER_GEMM_BLAS];
    p->tune_blis = count[EAGER_GEMM_BLIS];
    p->tune_onednn = count[EAGER_GEMM_ONEDNN];
    int total = p->tune_blas + p->tune_blis + p->tune_onednn;
    size_t at;
    char blis_count[32] = "";
    if (blis)
        snprintf(blis_count, sizeof blis_count, "blis %d, ", p->tune_blis);
    if (nc == 1)
        snprintf(p->tuning, sizeof p->tuning,
                 "tune: %d GEMM node%s, none timed (one candidate: no BLAS, neither "
                 "libopenblas.so.0 nor libblis.so.4 installed): onednn %d", total,
                 total == 1 ? "" : "s", total);
    else
        snprintf(p->tuning, sizeof p->tuning,
                 "tune: %d GEMM node%s, %d timed, %d from the cache: blas %d, %sonednn %d "
                 "(cache %.600s%s%.200s)", total, total == 1 ? "" : "s", p->tune_timed,
                 p->tune_cached, p->tune_blas, blis_count, p->tune_onednn,
                 have_path ? path : "none",
                 werr[0] ? ", not saved: " : "", werr);
    int nconv = p->tune_conv[0] + p->tune_conv[1] + p->tune_conv[2] + p->tune_conv[3];
    at = strlen(p->tuning);
    if (nconv && at < sizeof p->tuning)
        snprintf(p->tuning + at, sizeof p->tuning - at,
                 "; %d blocked conv%s, %d timed, %d from the cache, %d with one candidate: "
                 "winograd %d, direct %d, direct_jit %d, static rule %d",
                 nconv, nconv == 1 ? "" : "s", p->tune_conv_timed, p->tune_conv_cached,
                 p->tune_conv_one, p->tune_conv[1], p->tune_conv[2], p->tune_conv[3],
                 p->tune_conv[0]);
    return TG_OK;
}

const char *replay_plan_tuning(const replay_plan *p)
{
    if (!p)
        return NULL;
    return p->tuning[0] ? p->tuning
                        : "not tuned (replay_opts.tune 0): oneDNN for every GEMM, the static "
                          "rule for convs";
}
