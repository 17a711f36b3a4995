/*
 * test_tune.c - the second GEMM (OpenBLAS's cblas_sgemm, eager/blas.h) and
 * replay_opts.tune with its cache (replay/tune.c).
 *
 * The BLAS path of the matmul, linear and linear_ep kernels (a step's
 * eager_kargs.impl = EAGER_GEMM_BLAS) against naive double loops written
 * here: transposes, broadcast batches, 1-D operands, bias, residual and
 * activations, at 1 and 2 threads; through the test's own naive sgemm
 * given as the BLAS (blas.h's test hook: this runs on every machine, and
 * counts its calls, so the path is proven taken) and through the
 * installed OpenBLAS (SKIP for that part where libopenblas.so.0 is not
 * installed).  Then tuning, with TG_TUNE_CACHE on a temporary file (never
 * the user's ~/.cache): a first tuned compile times every GEMM node and
 * writes the cache; a second reads it back and times none (the file
 * unchanged); a cache that says "blas" makes the steps run the BLAS; lines
 * for another CPU, thread count or shape are not used; a damaged or
 * hostile file (garbage, a huge line, an unknown implementation, binary
 * bytes, a "blas" line where no BLAS is there) is ignored without a crash
 * and rewritten clean; a cache path that cannot be written is reported,
 * not fatal.  Tuned plans give the untuned results within 1e-5.
 *
 * Blocked convs (three convs laid out by -O3: 3x3 with relu, 3x3 with a
 * residual, 1x1 stride 2): a tuned compile times those with two or more
 * candidates and caches every choice (c1 lines), the next reads them
 * back; a cache naming winograd, direct or direct_jit for every conv
 * reaches every step, and each gives naive double loops' result within
 * 1e-4 (normalized; Winograd is the least exact); hostile c1 lines (an
 * unknown or "static" choice, a negative or NaN time, a field missing)
 * are ignored and rewritten away.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "eager/blas.h"
#include "eager/eager.h"
#include "eager/kernel.h"
#include "optimize/opt.h"
#include "replay/internal.h"
#include "replay/replay.h"
#include "tracer/trace.h"

static char g_dir[] = "/tmp/tg_test_tune_XXXXXX";
static char g_cache[256];

/* ---- the test's own cblas_sgemm (row-major), counting its calls ---- */

static int g_naive_calls;

static void naive_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                        const float *a, int lda, const float *b, int ldb, float beta, float *c,
                        int ldc)
{
    g_naive_calls++;
    if (order != EAGER_CBLAS_ROW)
        return;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) {
                double x = ta == EAGER_CBLAS_T ? a[p * lda + i] : a[i * lda + p];
                double y = tb == EAGER_CBLAS_T ? b[j * ldb + p] : b[p * ldb + j];
                s += x * y;
            }
            c[i * ldc + j] = (float)(alpha * s + (beta != 0 ? beta * c[i * ldc + j] : 0));
        }
}

/* ---- references ---- */

static double act(int64_t code, double v)
{
    switch (code) {
    case GRAPH_POST_RELU: return v > 0 ? v : 0;
    case GRAPH_POST_GELU: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case GRAPH_POST_TANH: return tanh(v);
    case GRAPH_POST_SIGMOID: return 1 / (1 + exp(-v));
    default: return v;
    }
}

/* y[r,n] = post(x[r,:] . w[n,:] + b[n] (+ res)) */
static void ref_linear(const float *x, const float *w, const float *b, const float *res,
                       const graph_ints *post, int64_t rows, int64_t k, int64_t n, float *y)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double s = b ? b[j] : 0;
            for (int64_t p = 0; p < k; p++)
                s += (double)x[r * k + p] * w[j * k + p];
            for (int q = 0; post && q < post->n; q++)
                s = post->v[q] == GRAPH_POST_ADD ? s + res[r * n + j] : act(post->v[q], s);
            y[r * n + j] = (float)s;
        }
}

/*
 * Batched matmul: a [ba..., M, K] (or [ba..., K, M] with ta), b [bb...,
 * K, N] (or [bb..., N, K] with tb), batch dims (nbatch of them, already
 * right-aligned and padded with 1s by the caller) broadcast.
 */
static void ref_matmul(const float *a, const int64_t *ba, const float *b, const int64_t *bb,
                       int nbatch, int64_t m, int64_t k, int64_t n, int ta, int tb, float *y)
{
    int64_t bo[8], total = 1;
    for (int i = 0; i < nbatch; i++) {
        bo[i] = ba[i] > bb[i] ? ba[i] : bb[i];
        total *= bo[i];
    }
    for (int64_t t = 0; t < total; t++) {
        int64_t ia = 0, ib = 0, rest = t, sa = 1, sb = 1;
        for (int i = nbatch - 1; i >= 0; i--) {
            int64_t c = rest % bo[i];
            rest /= bo[i];
            ia += (ba[i] == 1 ? 0 : c) * sa;
            ib += (bb[i] == 1 ? 0 : c) * sb;
            sa *= ba[i], sb *= bb[i];
        }
        const float *am = a + ia * m * k, *bm = b + ib * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += (double)(ta ? am[p * m + i] : am[i * k + p]) *
                         (tb ? bm[j * k + p] : bm[p * n + j]);
                y[t * m * n + i * n + j] = (float)s;
            }
    }
}

static graph_type f32(int nd, const int64_t *d)
{
    graph_type t = {.dtype = GRAPH_F32, .ndim = nd};
    for (int i = 0; i < nd; i++)
        t.dim[i] = d[i];
    return t;
}

/* Runs op's kernel as a replay step would (a state slot, the weights
 * fixed) with impl; TG_OK or the kernel's status. */
static tg_status run_kernel(graph_op op, const void *attrs, const graph_type *it,
                            const void *const *in, int nin, const graph_type *ot, float *out,
                            int impl, int threads)
{
    char err[256] = "";
    eager_kstate *slot = NULL;
    void *outs[1] = {out};
    eager_kargs a = {it, in, nin, attrs, ot, outs, 1, threads, err, sizeof err, &slot, 2u, impl};
    tg_status st = eager_kernels[op](&a);
    CHECK_MSG(st == TG_OK, "%s kernel: %s", graph_ops[op].name, err);
    eager_kstate_free(slot);
    return st;
}

static float *filled(int64_t n, uint64_t seed)
{
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    check_fill(p, n, seed, -1, 1);
    return p;
}

/* linear and linear_ep through impl against ref_linear. */
static void check_linear_case(int line, int64_t rows, int64_t k, int64_t n, graph_ints post,
                              int impl, int threads)
{
    float *x = filled(rows * k, 1), *w = filled(n * k, 2), *b = filled(n, 3),
          *res = filled(rows * n, 4), *got = filled(rows * n, 5), *want = filled(rows * n, 6);
    int64_t dx[] = {rows, k}, dw[] = {n, k}, db[] = {n}, dy[] = {rows, n};
    graph_type it[4] = {f32(2, dx), f32(2, dw), f32(1, db), f32(2, dy)}, ot = f32(2, dy);
    const void *in[4] = {x, w, b, res};
    int has_add = 0;
    for (int q = 0; q < post.n; q++)
        has_add |= post.v[q] == GRAPH_POST_ADD;
    tg_status st;
    if (post.n == 0) {
        st = run_kernel(GRAPH_OP_linear, NULL, it, in, 3, &ot, got, impl, threads);
    } else {
        graph_linear_ep_attrs at = {.post = post, .alpha = 0, .clip_min = -INFINITY,
                                    .clip_max = INFINITY};
        st = run_kernel(GRAPH_OP_linear_ep, &at, it, in, has_add ? 4 : 3, &ot, got, impl,
                        threads);
    }
    ref_linear(x, w, b, res, post.n ? &post : NULL, rows, k, n, want);
    double e = check_normalized_error(got, want, rows * n);
    check_report(st == TG_OK && e < 1e-5, __FILE__, line,
                 "linear %lldx%lldx%lld post %d impl %d threads %d: normalized error %g",
                 (long long)rows, (long long)k, (long long)n, post.n, impl, threads, e);
    free(x), free(w), free(b), free(res), free(got), free(want);
}

/* matmul through impl against ref_matmul: a's and b's dims as stored,
 * ot the op's output type; nbatch, ba, bb the padded batch dims. */
static void check_matmul_case(int line, int na, const int64_t *da, int nb, const int64_t *db,
                              int no, const int64_t *dout, int ta, int tb, int nbatch,
                              const int64_t *ba, const int64_t *bb, int64_t m, int64_t k,
                              int64_t n, int impl, int threads)
{
    graph_type it[2] = {f32(na, da), f32(nb, db)}, ot = f32(no, dout);
    int64_t ne = graph_type_numel(&ot);
    float *a = filled(graph_type_numel(&it[0]), 7), *b = filled(graph_type_numel(&it[1]), 8);
    float *got = filled(ne, 9), *want = filled(ne, 10);
    graph_matmul_attrs at = {.transpose_a = ta, .transpose_b = tb};
    const void *in[2] = {a, b};
    tg_status st = run_kernel(GRAPH_OP_matmul, &at, it, in, 2, &ot, got, impl, threads);
    ref_matmul(a, ba, b, bb, nbatch, m, k, n, ta, tb, want);
    double e = check_normalized_error(got, want, ne);
    check_report(st == TG_OK && e < 1e-5, __FILE__, line,
                 "matmul M %lld K %lld N %lld ta %d tb %d impl %d threads %d: error %g",
                 (long long)m, (long long)k, (long long)n, ta, tb, impl, threads, e);
    free(a), free(b), free(got), free(want);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})

static void check_gemm_cases(int impl, int threads)
{
    check_linear_case(__LINE__, 5, 7, 3, TG_NOINTS, impl, threads);
    check_linear_case(__LINE__, 64, 100, 33, TG_NOINTS, impl, threads);
    check_linear_case(__LINE__, 9, 33, 17, TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), impl,
                      threads);
    check_linear_case(__LINE__, 12, 40, 24, TG_INTS(GRAPH_POST_GELU), impl, threads);
    check_linear_case(__LINE__, 1, 16, 8, TG_INTS(GRAPH_POST_TANH, GRAPH_POST_ADD), impl,
                      threads);
    /* [3,5,6] x [6,4] */
    check_matmul_case(__LINE__, 3, D(3, 5, 6), 2, D(6, 4), 3, D(3, 5, 4), 0, 0, 1, D(3),
                      D(1), 5, 6, 4, impl, threads);
    /* [2,1,5,6] x [3,4,6]^T: both batches broadcast */
    check_matmul_case(__LINE__, 4, D(2, 1, 5, 6), 3, D(3, 4, 6), 4, D(2, 3, 5, 4), 0, 1, 2,
                      D(2, 1), D(1, 3), 5, 6, 4, impl, threads);
    /* [2,6,5]^T x [2,6,4] */
    check_matmul_case(__LINE__, 3, D(2, 6, 5), 3, D(2, 6, 4), 3, D(2, 5, 4), 1, 0, 1, D(2),
                      D(2), 5, 6, 4, impl, threads);
    /* both transposed */
    check_matmul_case(__LINE__, 2, D(7, 3), 2, D(5, 7), 2, D(3, 5), 1, 1, 0, D(0), D(0), 3, 7,
                      5, impl, threads);
    /* 1-D a [6] x [2,6,4] -> [2,4]; [2,3,6] x 1-D b [6] -> [2,3] */
    check_matmul_case(__LINE__, 1, D(6), 3, D(2, 6, 4), 2, D(2, 4), 0, 0, 1, D(1), D(2), 1, 6,
                      4, impl, threads);
    check_matmul_case(__LINE__, 3, D(2, 3, 6), 1, D(6), 2, D(2, 3), 0, 0, 1, D(2), D(1), 3, 6,
                      1, impl, threads);
}

static void test_blas_path(void)
{
    /* the test's sgemm as the BLAS: the path runs, on every machine */
    eager_blas_test_hook(naive_sgemm, "naive");
    CHECK(eager_blas_available() && strcmp(eager_blas_core(), "naive") == 0);
    for (int t = 1; t <= 2; t++) {
        g_naive_calls = 0;
        check_gemm_cases(EAGER_GEMM_BLAS, t);
        CHECK_MSG(g_naive_calls >= 11, "the BLAS path ran %d sgemm calls", g_naive_calls);
        g_naive_calls = 0;
        check_gemm_cases(EAGER_GEMM_ONEDNN, t); /* the same cases through oneDNN */
        CHECK(g_naive_calls == 0);
    }
    /* hidden: a step tuned to BLAS runs oneDNN, with the same results */
    eager_blas_test_hook(NULL, "off");
    CHECK(!eager_blas_available() && strcmp(eager_blas_core(), "none") == 0);
    check_gemm_cases(EAGER_GEMM_BLAS, 1);
    /* the installed OpenBLAS */
    eager_blas_test_hook(NULL, NULL);
    if (!eager_blas_available()) {
        printf("SKIP: libopenblas.so.0 is not installed: the real OpenBLAS path is not "
               "tested (scripts/deps.sh libopenblas0-openmp)\n");
        return;
    }
    printf("BLAS: %s\n", eager_blas_name());
    for (int t = 1; t <= 2; t++)
        check_gemm_cases(EAGER_GEMM_BLAS, t);
}

/* ---- tuning ---- */

/* x [8,32] -> linear_ep (+r, relu) [8,24] -> linear [8,16] -> reshaped
 * [2,4,16] x itself^T [2,4,4]: three GEMM nodes. */
static graph *tuned_graph(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(8, 32), 11, -1, 1);
    eager_tensor *r = eager_rand_uniform(TG_SHAPE(8, 24), 12, -1, 1);
    eager_tensor *w1 = eager_rand_uniform(TG_SHAPE(24, 32), 13, -0.3f, 0.3f);
    eager_tensor *b1 = eager_rand_uniform(TG_SHAPE(24), 14, -0.3f, 0.3f);
    eager_tensor *w2 = eager_rand_uniform(TG_SHAPE(16, 24), 15, -0.3f, 0.3f);
    eager_tensor *b2 = eager_rand_uniform(TG_SHAPE(16), 16, -0.3f, 0.3f);
    trace_begin(NULL);
    trace_input(x, "x");
    trace_input(r, "r");
    eager_tensor *h = eager_linear_ep(x, w1, b1, r, TG_INTS(GRAPH_POST_ADD, GRAPH_POST_RELU), 0,
                                      -INFINITY, INFINITY);
    eager_tensor *y = eager_reshape(eager_linear(h, w2, b2), TG_SHAPE(2, 4, 16));
    trace_output(eager_matmul(y, y, 0, 1), "z");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    return g;
}

/* Compiles g (tune as given, 1 thread unless threads) and runs it on
 * fixed inputs into z[32]; the plan, or NULL. */
static replay_plan *compile_run(const graph *g, int tune, int threads, float *z)
{
    replay_opts o = REPLAY_OPTS_INIT;
    o.tune = tune;
    o.threads = threads;
    char err[512];
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    if (!p)
        return NULL;
    float x[8 * 32], r[8 * 24];
    check_fill(x, 8 * 32, 21, -1, 1);
    check_fill(r, 8 * 24, 22, -1, 1);
    replay_tensor in[2] = {{.name = "x", .type = {GRAPH_F32, 2, {8, 32}}, .input = x},
                           {.name = "r", .type = {GRAPH_F32, 2, {8, 24}}, .input = r}};
    replay_tensor out = {.name = "z", .type = {GRAPH_F32, 3, {2, 4, 4}}, .data = z};
    replay_session *s = replay_session_new(p, NULL, 0);
    CHECK(s && replay_run(s, in, 2, &out, 1) == TG_OK);
    if (s)
        CHECK_MSG(replay_run(s, in, 2, &out, 1) == TG_OK, "run: %s", replay_session_error(s));
    replay_session_free(s);
    return p;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(4 << 20);
    *len = fread(buf, 1, (4 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void write_all(const char *path, const char *s, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(s, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* Every line of the cache file is a comment or a well-formed v1 entry
 * naming onednn or blas; returns the number of entries. */
static int cache_entries_ok(int line)
{
    size_t len;
    char *s = read_all(g_cache, &len);
    check_report(s != NULL, __FILE__, line, "cache %s written", g_cache);
    if (!s)
        return -1;
    int n = 0, bad = strlen(s) != len; /* no NUL inside */
    for (char *l = s, *nl; *l; l = nl + 1) {
        if (!(nl = strchr(l, '\n'))) {
            bad++;
            break;
        }
        *nl = '\0';
        if (l[0] == '#')
            continue;
        int tabs = 0;
        for (char *c = l; *c; c++)
            tabs += *c == '\t';
        bad += strncmp(l, "v1\tcpu=", 7) != 0 || tabs != 5 || strlen(l) > 512 ||
               !(strstr(l, "\tonednn\t") || strstr(l, "\tblas\t") ||
                 strstr(l, "\tblis\t"));
        n++;
    }
    check_report(!bad, __FILE__, line, "cache: %d bad lines", bad);
    free(s);
    return n;
}

static void check_close(int line, const float *got, const float *want)
{
    double e = check_normalized_error(got, want, 32);
    check_report(e < 1e-5, __FILE__, line, "tuned vs untuned: normalized error %g", e);
}

static void test_tuning(void)
{
    eager_blis_test_hook(NULL, "off"); /* OpenBLAS against oneDNN here; BLIS below */
    graph *g = tuned_graph();
    if (!g)
        return;
    float want[32], z[32];
    replay_plan *p = compile_run(g, 0, 1, want);
    CHECK(p && strstr(replay_plan_tuning(p), "not tuned") && !p->gemm_impl);
    replay_plan_free(p);

    /* the test's sgemm as a second candidate */
    eager_blas_test_hook(naive_sgemm, "naive");
    unlink(g_cache);
    replay_tune_forget();
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 3 && p->tune_cached == 0 &&
                  p->tune_blas + p->tune_onednn == 3,
              "first tuned compile: %s", p ? replay_plan_tuning(p) : "-");
    CHECK(p && strstr(replay_plan_tuning(p), "3 GEMM nodes, 3 timed, 0 from the cache") &&
          strstr(replay_plan_tuning(p), g_cache));
    check_close(__LINE__, z, want);
    replay_plan_free(p);
    CHECK(cache_entries_ok(__LINE__) == 3);
    size_t len1, len2;
    char *first = read_all(g_cache, &len1);

    /* read back from the file (forgotten in memory): nothing timed, the
     * file unchanged */
    replay_tune_forget();
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 0 && p->tune_cached == 3,
              "second tuned compile: %s", p ? replay_plan_tuning(p) : "-");
    CHECK(p && strstr(replay_plan_tuning(p), "0 timed, 3 from the cache"));
    check_close(__LINE__, z, want);
    replay_plan_free(p);
    char *second = read_all(g_cache, &len2);
    CHECK(first && second && len1 == len2 && memcmp(first, second, len1) == 0);

    /* a cache that says blas: every step runs the BLAS (the hook counts) */
    char *s = strdup(first);
    for (char *q; (q = strstr(s, "\tonednn\t"));)
        memcpy(q, "\tblas\t\t\t", 8), memmove(q + 6, q + 8, strlen(q + 8) + 1);
    write_all(g_cache, s, strlen(s));
    replay_tune_forget();
    g_naive_calls = 0;
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 0 && p->tune_blas == 3, "all blas: %s",
              p ? replay_plan_tuning(p) : "-");
    CHECK_MSG(g_naive_calls == 2 * 4, "the blas steps ran %d sgemm calls (want 8)",
              g_naive_calls); /* two runs: linear_ep, linear, matmul's 2 batches */
    check_close(__LINE__, z, want);
    replay_plan_free(p);
    free(s);

    /* lines for another CPU, thread count, shape: not used */
    const char *swaps[][2] = {{"threads=1;", "threads=7;"}, {"cpu=", "cpu=Other_"},
                              {";m=8;", ";m=9;"}, {"blas=naive", "blas=Haswell"}};
    for (size_t w = 0; w < sizeof swaps / sizeof swaps[0]; w++) {
        size_t cap = len1 * 2 + 64, o = 0;
        char *t = malloc(cap);
        for (const char *q = first; *q;) {
            const char *hit = strstr(q, swaps[w][0]);
            size_t take = hit ? (size_t)(hit - q) : strlen(q);
            memcpy(t + o, q, take), o += take, q += take;
            if (!hit)
                break;
            o += (size_t)sprintf(t + o, "%s", swaps[w][1]);
            q += strlen(swaps[w][0]);
        }
        t[o] = '\0';
        write_all(g_cache, t, o);
        replay_tune_forget();
        p = compile_run(g, 1, 1, z);
        int want_timed = w == 2 ? 2 : 3; /* the matmul has m=4 */
        CHECK_MSG(p && p->tune_timed == want_timed, "swap %s: %s", swaps[w][1],
                  p ? replay_plan_tuning(p) : "-");
        replay_plan_free(p);
        free(t);
    }

    /* damaged and hostile files: ignored, no crash, rewritten clean */
    size_t hn = 3 << 20;
    char *h = malloc(hn + 1024);
    size_t o = 0;
    o += (size_t)sprintf(h + o, "garbage\n\n\t\t\t\t\nv1\n");
    /* first's entries with an unknown implementation, then a time that
     * is no number, then a key with a space */
    for (const char *q = first; (q = strstr(q, "v1\t"));) {
        const char *e = strchr(q, '\n');
        char line[600];
        snprintf(line, sizeof line, "%.*s", (int)(e - q), q);
        char *impl = strstr(line, "\tonednn\t");
        if (!impl)
            impl = strstr(line, "\tblas\t");
        char keypart[600];
        snprintf(keypart, sizeof keypart, "%.*s", (int)(impl - line), line);
        o += (size_t)sprintf(h + o, "%s\tfastest\t1\t2\n", keypart);
        o += (size_t)sprintf(h + o, "%s\tblas\tnan\t1\n", keypart);
        o += (size_t)sprintf(h + o, "%s\tblas\t-1\t1\n", keypart);
        o += (size_t)sprintf(h + o, "%s\tblas\t1\t1\textra\n", keypart);
        o += (size_t)sprintf(h + o, "v1\tcpu= x\tblas\t1\t1\n");
        q = e;
    }
    memset(h + o, 'A', 100000), o += 100000; /* a huge line */
    h[o++] = '\n';
    for (int i = 0; i < 256; i++)
        h[o++] = (char)(i ? i : 1); /* binary bytes, a NUL-free line break among them */
    h[o++] = '\0';
    h[o++] = '\n';
    while (o < hn) /* past the size bound */
        o += (size_t)sprintf(h + o, "v1\tcpu=filler%zu\tonednn\t1\t1\n", o);
    write_all(g_cache, h, o);
    free(h);
    replay_tune_forget();
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 3 && p->tune_cached == 0, "hostile cache: %s",
              p ? replay_plan_tuning(p) : "-");
    check_close(__LINE__, z, want);
    replay_plan_free(p);
    int n = cache_entries_ok(__LINE__);
    CHECK_MSG(n >= 3 && n <= 2048, "rewritten cache: %d entries", n);
    struct stat st;
    CHECK(stat(g_cache, &st) == 0 && st.st_size < (1 << 20));

    /* a blas line where no BLAS is there: one candidate, nothing timed */
    write_all(g_cache, s = strdup(second), len2);
    free(s);
    eager_blas_test_hook(NULL, "off");
    replay_tune_forget();
    g_naive_calls = 0;
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 0 && p->tune_onednn == 3 && p->tune_blas == 0 &&
                  strstr(replay_plan_tuning(p), "none timed (one candidate"),
              "no BLAS: %s", p ? replay_plan_tuning(p) : "-");
    CHECK(g_naive_calls == 0);
    check_close(__LINE__, z, want);
    replay_plan_free(p);

    /* a cache path that cannot be written: reported, the plan still made */
    eager_blas_test_hook(naive_sgemm, "naive");
    setenv("TG_TUNE_CACHE", g_dir, 1); /* a directory */
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 3 && strstr(replay_plan_tuning(p), "not saved"),
              "unwritable cache: %s", p ? replay_plan_tuning(p) : "-");
    replay_plan_free(p);
    setenv("TG_TUNE_CACHE", g_cache, 1);

    /* two threads: their own keys */
    replay_tune_forget();
    p = compile_run(g, 1, 2, z);
    CHECK_MSG(p && p->tune_timed == 3, "2 threads: %s", p ? replay_plan_tuning(p) : "-");
    check_close(__LINE__, z, want);
    replay_plan_free(p);

    /* the installed OpenBLAS, tuned for real */
    eager_blas_test_hook(NULL, NULL);
    if (eager_blas_available()) {
        replay_tune_forget();
        p = compile_run(g, 1, 1, z);
        CHECK_MSG(p && p->tune_timed == 3, "OpenBLAS: %s", p ? replay_plan_tuning(p) : "-");
        if (p)
            printf("OpenBLAS %s\n", replay_plan_tuning(p));
        check_close(__LINE__, z, want);
        replay_plan_free(p);
    }
    free(first);
    free(second);
    graph_free(g);
    eager_blis_test_hook(NULL, NULL);
}

/* ---- BLIS, the third candidate ---- */

/* Every v1 line of the cache with its choice set to impl. */
static void gemm_cache_force(const char *impl)
{
    size_t len = 0;
    char *f = read_all(g_cache, &len), *out = malloc(len * 2 + 64);
    size_t w = 0;
    CHECK(f != NULL);
    for (char *l = f; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *t1 = strchr(l, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL,
             *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
        if (strncmp(l, "v1\t", 3) == 0 && t3)
            w += (size_t)sprintf(out + w, "%.*s\t%s%s\n", (int)(t2 - l), l, impl, t3);
        else
            w += (size_t)sprintf(out + w, "%s\n", l);
        l = nl ? nl + 1 : l + strlen(l);
    }
    write_all(g_cache, out, w);
    free(f);
    free(out);
}

static void test_blis(void)
{
    /* the kernels' BLIS path through the test's sgemm, on every machine */
    eager_blas_test_hook(NULL, "off");
    eager_blis_test_hook(naive_sgemm, "naiveblis");
    CHECK(eager_blis_available() && strcmp(eager_blis_arch(), "naiveblis") == 0);
    for (int t = 1; t <= 2; t++) {
        g_naive_calls = 0;
        check_gemm_cases(EAGER_GEMM_BLIS, t);
        CHECK_MSG(g_naive_calls >= 11, "the BLIS path ran %d sgemm calls", g_naive_calls);
    }
    /* three candidates: oneDNN, OpenBLAS and BLIS (both the naive sgemm) */
    eager_blas_test_hook(naive_sgemm, "naive");
    graph *g = tuned_graph();
    float want[32], z[32];
    replay_plan *p = compile_run(g, 0, 1, want);
    replay_plan_free(p);
    unlink(g_cache);
    replay_tune_forget();
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 3 && p->tune_blas + p->tune_blis + p->tune_onednn == 3 &&
                  strstr(replay_plan_tuning(p), ", blis "),
              "three candidates: %s", p ? replay_plan_tuning(p) : "-");
    check_close(__LINE__, z, want);
    replay_plan_free(p);
    size_t len = 0;
    char *f = read_all(g_cache, &len);
    CHECK_MSG(f && strstr(f, ";blas=naive;blis=naiveblis;") && cache_entries_ok(__LINE__) == 3,
              "%s", f ? f : "-");
    free(f);
    /* a cache saying blis reaches the steps: the BLIS path runs */
    gemm_cache_force("blis");
    replay_tune_forget();
    eager_blas_test_hook(NULL, "off"); /* only BLIS's sgemm counts now */
    eager_blis_test_hook(naive_sgemm, "naiveblis");
    p = compile_run(g, 1, 1, z);
    replay_plan_free(p); /* the keys name blas=none now: timed again */
    gemm_cache_force("blis");
    replay_tune_forget();
    g_naive_calls = 0;
    p = compile_run(g, 1, 1, z);
    CHECK_MSG(p && p->tune_timed == 0 && p->tune_blis == 3 && g_naive_calls >= 3,
              "all blis: %s, %d calls", p ? replay_plan_tuning(p) : "-", g_naive_calls);
    check_close(__LINE__, z, want);
    replay_plan_free(p);
    /* the installed BLIS */
    eager_blis_test_hook(NULL, NULL);
    if (!eager_blis_available()) {
        printf("SKIP: libblis.so.4 is not installed: the real BLIS path is not tested "
               "(scripts/deps.sh libblis4-openmp)\n");
    } else {
        printf("BLIS: %s\n", eager_blis_name());
        for (int t = 1; t <= 2; t++)
            check_gemm_cases(EAGER_GEMM_BLIS, t);
        replay_tune_forget();
        p = compile_run(g, 1, 1, z);
        CHECK_MSG(p && p->tune_timed == 3, "BLIS: %s", p ? replay_plan_tuning(p) : "-");
        if (p)
            printf("BLIS %s\n", replay_plan_tuning(p));
        check_close(__LINE__, z, want);
        replay_plan_free(p);
        gemm_cache_force("blis");
        replay_tune_forget();
        p = compile_run(g, 1, 1, z);
        CHECK_MSG(p && p->tune_blis == 3, "BLIS forced: %s", p ? replay_plan_tuning(p) : "-");
        check_close(__LINE__, z, want);
        replay_plan_free(p);
    }
    eager_blas_test_hook(NULL, NULL);
    graph_free(g);
}


/* ---- blocked convs: Winograd / direct / generic jit by measurement ---- */

/* y[n][o][i][j] = b[o] + sum over c, kh, kw of x * w (NCHW, OIHW, square
 * k x k kernel, stride st, padding pd), in double. */
static void ref_conv(const float *x, int64_t n, int64_t c, int64_t h, const float *w, int64_t o,
                     int64_t k, int64_t st, int64_t pd, const float *b, float *y, int64_t oh)
{
    for (int64_t in = 0; in < n; in++)
        for (int64_t oc = 0; oc < o; oc++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < oh; j++) {
                    double acc = b[oc];
                    for (int64_t ic = 0; ic < c; ic++)
                        for (int64_t u = 0; u < k; u++)
                            for (int64_t v = 0; v < k; v++) {
                                int64_t r = i * st - pd + u, q = j * st - pd + v;
                                if (r >= 0 && r < h && q >= 0 && q < h)
                                    acc += (double)x[((in * c + ic) * h + r) * h + q] *
                                           w[((oc * c + ic) * k + u) * k + v];
                            }
                    y[((in * o + oc) * oh + i) * oh + j] = (float)acc;
                }
}

enum { CN = 2, CC = 16, CO = 32, CH = 12, CY = 6 }; /* y: [2,16,6,6] */

/* relu(conv3x3(x)) -> relu(conv3x3(.) + .) -> conv1x1 stride 2, 16 out. */
static graph *conv_graph(float *want)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(CN, CC, CH, CH), 31, -1, 1);
    eager_tensor *w1 = eager_rand_uniform(TG_SHAPE(CO, CC, 3, 3), 32, -0.2f, 0.2f);
    eager_tensor *w2 = eager_rand_uniform(TG_SHAPE(CO, CO, 3, 3), 33, -0.2f, 0.2f);
    eager_tensor *w3 = eager_rand_uniform(TG_SHAPE(CC, CO, 1, 1), 34, -0.2f, 0.2f);
    eager_tensor *b1 = eager_rand_uniform(TG_SHAPE(CO), 35, -0.2f, 0.2f);
    eager_tensor *b2 = eager_rand_uniform(TG_SHAPE(CO), 36, -0.2f, 0.2f);
    eager_tensor *b3 = eager_rand_uniform(TG_SHAPE(CC), 37, -0.2f, 0.2f);
    trace_begin(NULL);
    trace_input(x, "x");
    eager_tensor *h1 = eager_relu(eager_conv2d(x, w1, b1, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1));
    eager_tensor *h2 = eager_relu(
        eager_add(eager_conv2d(h1, w2, b2, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1), h1));
    trace_output(eager_conv2d(h2, w3, b3, TG_INTS(2), TG_NOINTS, TG_NOINTS, 1), "y");
    graph *g = trace_freeze();
    /* the reference: the same arithmetic in naive loops */
    static float a1[CN * CO * CH * CH], a2[CN * CO * CH * CH];
    const float *xp = eager_peek(x);
    ref_conv(xp, CN, CC, CH, eager_peek(w1), CO, 3, 1, 1, eager_peek(b1), a1, CH);
    for (int i = 0; i < CN * CO * CH * CH; i++)
        a1[i] = a1[i] > 0 ? a1[i] : 0;
    ref_conv(a1, CN, CO, CH, eager_peek(w2), CO, 3, 1, 1, eager_peek(b2), a2, CH);
    for (int i = 0; i < CN * CO * CH * CH; i++)
        a2[i] = a2[i] + a1[i] > 0 ? a2[i] + a1[i] : 0;
    ref_conv(a2, CN, CO, CH, eager_peek(w3), CC, 1, 2, 0, eager_peek(b3), want, CY);
    eager_pool_pop();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    if (!g)
        return NULL;
    opt_options o = OPT_OPTIONS_INIT;
    o.level = 3;
    char err[512];
    CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
    return g;
}

/* Compiles g (tuned or not) and runs it into y; the plan, or NULL. */
static replay_plan *conv_run(const graph *g, int tune, float *y)
{
    replay_opts o = REPLAY_OPTS_INIT;
    o.tune = tune;
    char err[512];
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "compile: %s", err);
    if (!p)
        return NULL;
    static float x[CN * CC * CH * CH];
    eager_pool_push();
    eager_tensor *xt = eager_rand_uniform(TG_SHAPE(CN, CC, CH, CH), 31, -1, 1);
    memcpy(x, eager_peek(xt), sizeof x);
    eager_pool_pop();
    replay_tensor in = {.name = "x", .type = {GRAPH_F32, 4, {CN, CC, CH, CH}}, .input = x};
    replay_tensor out = {.name = "y", .type = {GRAPH_F32, 4, {CN, CC, CY, CY}}, .data = y};
    replay_session *s = replay_session_new(p, NULL, 0);
    CHECK_MSG(s && replay_run(s, &in, 1, &out, 1) == TG_OK, "run: %s",
              s ? replay_session_error(s) : "no session");
    replay_session_free(s);
    return p;
}

/* The cache file with every c1 line's choice set to impl. */
static void conv_cache_force(const char *path, const char *impl)
{
    size_t len = 0;
    char *f = read_all(path, &len), *out = malloc(len * 2 + 64);
    size_t w = 0;
    CHECK(f != NULL);
    for (char *l = f; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *t1 = strchr(l, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL,
             *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
        if (strncmp(l, "c1\t", 3) == 0 && t3)
            w += (size_t)sprintf(out + w, "%.*s\t%s%s\n", (int)(t2 - l), l, impl, t3);
        else
            w += (size_t)sprintf(out + w, "%s\n", l);
        l = nl ? nl + 1 : l + strlen(l);
    }
    write_all(path, out, w);
    free(f);
    free(out);
}

static void test_conv_tuning(void)
{
    static float want[CN * CC * CY * CY], y[CN * CC * CY * CY], untuned[CN * CC * CY * CY];
    graph *g = conv_graph(want);
    if (!g)
        return;
    int nblk = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        nblk += !(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == GRAPH_OP_conv2d_blk;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/conv_tune.txt", g_dir);
    setenv("TG_TUNE_CACHE", cache, 1);
    unlink(cache);
    replay_tune_forget();
    replay_plan *p = conv_run(g, 0, untuned);
    CHECK(check_normalized_error(untuned, want, CN * CC * CY * CY) < 1e-4);
    replay_plan_free(p);
    if (nblk == 0) { /* no blocked layout at this ISA: nothing to tune */
        printf("no blocked convs at this CPU level: conv tuning not checked\n");
        setenv("TG_TUNE_CACHE", g_cache, 1);
        graph_free(g);
        return;
    }
    CHECK_MSG(nblk == 3, "%d blocked convs", nblk);
    /* first tuned compile: each conv timed, or one candidate; cached */
    p = conv_run(g, 1, y);
    /* (at SSE4.1 oneDNN has one kernel for each of these: none timed) */
    CHECK_MSG(p && p->tune_conv_timed + p->tune_conv_one == 3 && p->tune_conv_cached == 0 &&
                  p->tune_conv[1] + p->tune_conv[2] + p->tune_conv[3] == 3 &&
                  strstr(replay_plan_tuning(p), "3 blocked convs"),
              "first: %s", p ? replay_plan_tuning(p) : "-");
    CHECK(check_normalized_error(y, want, CN * CC * CY * CY) < 1e-4);
    CHECK(check_normalized_error(y, untuned, CN * CC * CY * CY) < 1e-4);
    if (p)
        printf("convs %s\n", replay_plan_tuning(p));
    replay_plan_free(p);
    size_t len = 0;
    char *f = read_all(cache, &len);
    int lines = 0;
    for (char *l = f; l && (l = strstr(l, "c1\t")); l++)
        lines++;
    CHECK_MSG(lines == 3 && strstr(f, "op=conv2d_blk;x=2x") && strstr(f, ";w=32x16x3x3;"),
              "%s", f ? f : "(no cache)");
    free(f);
    /* read back: nothing timed */
    replay_tune_forget();
    p = conv_run(g, 1, y);
    CHECK_MSG(p && p->tune_conv_cached == 3 && p->tune_conv_timed == 0 && p->tune_conv_one == 0,
              "second: %s", p ? replay_plan_tuning(p) : "-");
    replay_plan_free(p);
    /* every choice the cache can name reaches the steps and computes the
     * same convs */
    static const char *const impls[] = {"winograd", "direct", "direct_jit"};
    for (int c = 0; c < 3; c++) {
        conv_cache_force(cache, impls[c]);
        replay_tune_forget();
        p = conv_run(g, 1, y);
        int got = 0;
        for (int32_t i = 0; p && i < p->g->nnodes; i++)
            got += p->g->nodes[i].op == GRAPH_OP_conv2d_blk && p->gemm_impl &&
                   p->gemm_impl[i] == c + 1;
        CHECK_MSG(p && got == 3 && p->tune_conv[c + 1] == 3 && p->tune_conv_cached == 3,
                  "%s: %d steps (%s)", impls[c], got, p ? replay_plan_tuning(p) : "-");
        CHECK_MSG(check_normalized_error(y, want, CN * CC * CY * CY) < 1e-4, "%s", impls[c]);
        replay_plan_free(p);
    }
    /* hostile c1 lines: ignored (timed again), rewritten clean */
    f = read_all(cache, &len);
    char *bad = malloc(len * 4 + 256);
    size_t w = 0;
    CHECK(f != NULL);
    for (char *l = f; l && *l;) {
        char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (strncmp(l, "c1\t", 3) == 0) {
            char *t2 = strchr(strchr(l, '\t') + 1, '\t');
            /* the same key with: an unknown impl, "static", a negative and a NaN time */
            w += (size_t)sprintf(bad + w, "%.*s\tbogus\t1\t2\t3\n", (int)(t2 - l), l);
            w += (size_t)sprintf(bad + w, "%.*s\tstatic\t1\t2\t3\n", (int)(t2 - l), l);
            w += (size_t)sprintf(bad + w, "%.*s\tdirect\t-1\t2\t3\n", (int)(t2 - l), l);
            w += (size_t)sprintf(bad + w, "%.*s\tdirect\tnan\t2\t3\n", (int)(t2 - l), l);
            w += (size_t)sprintf(bad + w, "%.*s\tdirect\t1\t2\n", (int)(t2 - l), l);
        }
        l += n + (nl ? 1 : 0);
    }
    write_all(cache, bad, w);
    free(bad);
    free(f);
    replay_tune_forget();
    p = conv_run(g, 1, y);
    CHECK_MSG(p && p->tune_conv_cached == 0 && p->tune_conv_timed + p->tune_conv_one == 3,
              "hostile: %s", p ? replay_plan_tuning(p) : "-");
    CHECK(check_normalized_error(y, want, CN * CC * CY * CY) < 1e-4);
    replay_plan_free(p);
    f = read_all(cache, &len);
    CHECK_MSG(f && !strstr(f, "bogus") && !strstr(f, "nan") && !strstr(f, "\tstatic\t"),
              "%s", f ? f : "-");
    free(f);
    unlink(cache);
    setenv("TG_TUNE_CACHE", g_cache, 1);
    replay_tune_forget();
    graph_free(g);
}

int main(void)
{
    /* never the user's ~/.cache */
    CHECK(mkdtemp(g_dir) != NULL);
    snprintf(g_cache, sizeof g_cache, "%s/tune.txt", g_dir);
    setenv("TG_TUNE_CACHE", g_cache, 1);
    setenv("TG_COST_RATES", "builtin", 0); /* -O3 here: no timing (ctest sets it too) */
    test_blas_path();
    test_tuning();
    eager_blas_test_hook(NULL, NULL);
    test_blis();
    test_conv_tuning();
    unlink(g_cache);
    rmdir(g_dir);
    return check_done();
}
