/*
 * gemm_peak.c - the GEMM roofline of issue 30 (item 3): how close the
 * matrix products of the MLP and encoder workloads come to this core's
 * fp32 FMA peak, at the instruction set in use.
 *
 *   gemm_peak [--threads 1,2] [--shapes mlp,encoder] [--runs N]
 *             [--budget-ms MS] [--no-blas] [--blas LIB] [--json FILE] [--md FILE]
 *
 * Peak: bench/suite/peak.c's loop, 12 independent chains of vector FMAs
 * per thread (plain pthreads), at suite_peak_isa(): AVX-512 when oneDNN
 * runs AVX-512 and tracegraph's kernel set is not capped at avx2, AVX2 + FMA
 * when either says avx2 (`TG_CPU=avx2 ONEDNN_MAX_CPU_ISA=AVX2` runs the
 * AVX2 path on an AVX-512 machine); each loop is compiled with its own
 * target attribute, so the file builds at the x86-64 baseline.  Best of 5
 * runs of about 10 ms, measured before each thread count's rows and after
 * each row (the highest counts: load from elsewhere only ever lowers it;
 * a rate above it still means the peak never ran alone, and a note says so).
 *
 * Shapes (workloads/workloads.c at its default sizes; M x K x N, 2*M*K*N
 * flops, bias not counted):
 *   mlp      fc1 64x784x512, fc2 64x512x512, fc3 64x512x10 (linear)
 *   encoder  qkv 128x256x768, out 128x256x256, ffn1 128x256x1024,
 *            ffn2 128x1024x256 (linear), and per head (4 heads) the
 *            scores q k^T 128x64x128 and the context p v 128x128x64
 *            (a batched matmul, both operands activations)
 * each timed three ways, in interleaved rounds (one call of each per
 * round: load from elsewhere falls on all alike), median of the rounds:
 *   eager    eager_linear / eager_matmul on tensors (oneDNN; dispatch,
 *            allocation and oneDNN's primitive-cache lookup included),
 *            eager_set_threads(threads)
 *   replay   the one op traced and replayed (replay_compile at threads:
 *            the prepared oneDNN primitive, weights packed once: what a
 *            plan runs)
 *   blas     cblas_sgemm of OpenBLAS (or BLIS), loaded with dlopen when
 *            installed (`scripts/deps.sh libopenblas0-openmp`; the build
 *            never depends on it), openblas_set_num_threads(threads); its
 *            kernel is its own pick for the CPU, named in the output
 *            (OPENBLAS_CORETYPE=Haswell forces the AVX2 one);
 *            "-" when absent or --no-blas; --blas LIB loads that library
 *            only (libblis.so.4: Debian's BLIS, bli_thread_set_num_threads)
 * At least --runs rounds (default 21) and until --budget-ms (default 200)
 * per path is spent.  Prints a Markdown table (and --md FILE) with GFLOP/s
 * and % of the peak at that thread count, the machine and the ISA above
 * it; --json FILE: every figure, with the machine and ISA in each row.
 * The machine may be shared: compare the columns of one run, and the
 * peak of the same run.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_isa.h"
#include "bench_util.h"
#include "replay/replay.h"
#include "suite/suite.h"
#include "tracegraph.h"
#include "tracer/trace.h"

#define MAX_ROUNDS 5000

typedef struct shape {
    const char *workload, *name;
    int64_t batch, m, k, n;
    int linear; /* 1: x[M,K] w[N,K]^T + b; 0: batched a[B,M,K] b[B,N,K]^T or b[B,K,N] */
    int trans_b;
} shape;

static const shape shapes[] = {
    {"mlp", "fc1", 1, 64, 784, 512, 1, 1},
    {"mlp", "fc2", 1, 64, 512, 512, 1, 1},
    {"mlp", "fc3", 1, 64, 512, 10, 1, 1},
    {"encoder", "qkv", 1, 128, 256, 768, 1, 1},
    {"encoder", "out", 1, 128, 256, 256, 1, 1},
    {"encoder", "ffn1", 1, 128, 256, 1024, 1, 1},
    {"encoder", "ffn2", 1, 128, 1024, 256, 1, 1},
    {"encoder", "scores", 4, 128, 64, 128, 0, 1},
    {"encoder", "context", 4, 128, 128, 64, 0, 0},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* ---- OpenBLAS / BLIS through dlopen ---- */

enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta,
                         float *c, int ldc);
static sgemm_fn blas_sgemm;
static void (*blas_set_threads)(int);
static void (*blis_set_threads)(long);
static char blas_name[256] = "";

static void blas_open(const char *only)
{
    static const char *const all[] = {"libopenblas.so.0", "libopenblas.so", "libblis.so.4",
                                      "libblis.so"};
    const char *const *libs = only ? &only : all;
    size_t nlibs = only ? 1 : sizeof all / sizeof all[0];
    for (size_t i = 0; i < nlibs && !blas_sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        blas_sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
        if (!blas_sgemm) {
            dlclose(h);
            continue;
        }
        blas_set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        blis_set_threads = (void (*)(long))dlsym(h, "bli_thread_set_num_threads"); /* dim_t */
        char *(*config)(void) = (char *(*)(void))dlsym(h, "openblas_get_config");
        char *(*core)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
        const char *(*bver)(void) = (const char *(*)(void))dlsym(h, "bli_info_get_version_str");
        int (*barch)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
        const char *(*bname)(int) = (const char *(*)(int))dlsym(h, "bli_arch_string");
        if (bver && barch && bname)
            snprintf(blas_name, sizeof blas_name, "%s: BLIS %s, arch %s", libs[i], bver(),
                     bname(barch()));
        else
            snprintf(blas_name, sizeof blas_name, "%s%s%s%s%s", libs[i], config ? ": " : "",
                     config ? config() : "", core ? ", core " : "", core ? core() : "");
    }
}

/* ---- one shape at one thread count ---- */

typedef struct job {
    const shape *s;
    int threads;
    eager_tensor *a, *b, *bias; /* a: x or the left operand; b: w or the right */
    float *c;                   /* blas output */
    replay_plan *plan;
    replay_session *sess;
    replay_tensor in[2];
    int nin;
} job;

static eager_tensor *op(const job *j, eager_tensor *a, eager_tensor *b)
{
    return j->s->linear ? eager_linear(a, b, j->bias) : eager_matmul(a, b, 0, j->s->trans_b);
}

static int run_eager(void *p)
{
    job *j = p;
    eager_pool_push();
    int bad = op(j, j->a, j->b) == NULL;
    eager_pool_pop();
    return bad;
}

static int run_replay(void *p)
{
    job *j = p;
    replay_tensor out = {.name = NULL};
    return replay_run(j->sess, j->in, j->nin, &out, 1) != TG_OK;
}

static int run_blas(void *p)
{
    job *j = p;
    const shape *s = j->s;
    const float *a = eager_peek(j->a), *b = eager_peek(j->b);
    int m = (int)s->m, n = (int)s->n, k = (int)s->k;
    for (int64_t i = 0; i < s->batch; i++)
        blas_sgemm(CblasRowMajor, CblasNoTrans, s->trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                   1.0f, a + i * m * k, k, b + i * k * n, s->trans_b ? k : n, 0.0f,
                   j->c + i * m * n, n);
    return 0;
}

/* The op traced on j's operands (the weight a param of a linear, both
 * operands inputs of a matmul) and compiled at j->threads. */
static int make_plan(job *j, char *err, size_t len)
{
    eager_pool_push();
    trace_begin(NULL);
    trace_input(j->a, "x");
    if (j->s->linear) {
        trace_param(j->b, "w");
        trace_param(j->bias, "b");
    } else {
        trace_input(j->b, "y");
    }
    trace_output(op(j, j->a, j->b), "out");
    graph *g = trace_freeze();
    eager_pool_pop();
    if (!g) {
        snprintf(err, len, "trace: %s", eager_error());
        return 0;
    }
    replay_opts ro = {.threads = j->threads};
    j->plan = replay_compile(g, &ro, err, len);
    graph_free(g);
    if (!j->plan)
        return 0;
    j->sess = replay_session_new(j->plan, NULL, 0);
    j->in[0] = (replay_tensor){.name = "x", .type = *eager_type(j->a), .input = eager_peek(j->a)};
    j->in[1] = (replay_tensor){.name = "y", .type = *eager_type(j->b), .input = eager_peek(j->b)};
    j->nin = j->s->linear ? 1 : 2;
    if (!j->sess)
        snprintf(err, len, "replay_session_new: out of memory");
    return j->sess != NULL;
}

enum { P_EAGER, P_REPLAY, P_BLAS, NPATHS };
static const char *const path_names[NPATHS] = {"eager", "replay", "blas"};

typedef struct result {
    const shape *s;
    int threads;
    double peak;             /* GFLOP/s at this thread count */
    double ms[NPATHS];       /* median; NAN: not measured */
    double min_ms[NPATHS];
    int runs;
    char error[256];
} result;

static double flops(const shape *s)
{
    return 2.0 * (double)s->batch * (double)s->m * (double)s->k * (double)s->n;
}

static void measure(const shape *s, int threads, int runs, double budget_ms, result *r)
{
    static double times[NPATHS][MAX_ROUNDS];
    job j = {s, threads, NULL, NULL, NULL, NULL, NULL, NULL, {{0}}, 0};
    memset(r, 0, sizeof *r);
    r->s = s;
    r->threads = threads;
    for (int p = 0; p < NPATHS; p++)
        r->ms[p] = r->min_ms[p] = NAN;
    if (s->linear) {
        j.a = eager_rand_uniform(TG_SHAPE(s->m, s->k), 1, -1, 1);
        j.b = eager_rand_uniform(TG_SHAPE(s->n, s->k), 2, -0.05f, 0.05f);
        j.bias = eager_rand_uniform(TG_SHAPE(s->n), 3, -0.05f, 0.05f);
    } else {
        j.a = eager_rand_uniform(TG_SHAPE(1, s->batch, s->m, s->k), 1, -1, 1);
        j.b = s->trans_b ? eager_rand_uniform(TG_SHAPE(1, s->batch, s->n, s->k), 2, -1, 1)
                         : eager_rand_uniform(TG_SHAPE(1, s->batch, s->k, s->n), 2, -1, 1);
    }
    j.c = malloc(sizeof(float) * (size_t)(s->batch * s->m * s->n));
    eager_set_threads(threads);
    if (blas_set_threads)
        blas_set_threads(threads);
    else if (blis_set_threads)
        blis_set_threads(threads);
    bench_runner br[NPATHS];
    int which[NPATHS], n = 0;
    if (!j.a || !j.b || !j.c) {
        snprintf(r->error, sizeof r->error, "inputs: %s", eager_error());
        goto done;
    }
    br[n] = (bench_runner){run_eager, &j, times[P_EAGER], 0};
    which[n++] = P_EAGER;
    if (make_plan(&j, r->error, sizeof r->error)) {
        br[n] = (bench_runner){run_replay, &j, times[P_REPLAY], 0};
        which[n++] = P_REPLAY;
    }
    if (blas_sgemm) {
        br[n] = (bench_runner){run_blas, &j, times[P_BLAS], 0};
        which[n++] = P_BLAS;
    }
    r->runs = bench_rounds(br, n, runs, budget_ms, MAX_ROUNDS);
    for (int i = 0; i < n; i++) {
        if (br[i].failed) {
            snprintf(r->error, sizeof r->error, "%s failed: %s", path_names[which[i]],
                     which[i] == P_REPLAY ? replay_session_error(j.sess) : eager_error());
            continue;
        }
        r->ms[which[i]] = bench_median(times[which[i]], r->runs);
        r->min_ms[which[i]] = times[which[i]][0];
    }
done:
    eager_clear_error();
    replay_session_free(j.sess);
    replay_plan_free(j.plan);
    free(j.c);
    eager_release(j.a);
    eager_release(j.b);
    if (j.bias)
        eager_release(j.bias);
    eager_set_threads(1);
}

/* ---- output ---- */

static double gflops(const result *r, int p)
{
    return isnan(r->ms[p]) ? NAN : flops(r->s) / (r->ms[p] * 1e6);
}

/* "55.2 (63%)", or "-" when not measured. */
static const char *rate(const result *r, int p, char *buf, size_t len)
{
    double g = gflops(r, p);
    if (isnan(g))
        snprintf(buf, len, "-");
    else if (r->peak > 0)
        snprintf(buf, len, "%.1f (%.0f%%)", g, 100 * g / r->peak);
    else
        snprintf(buf, len, "%.1f", g);
    return buf;
}

static void markdown(FILE *f, const bench_isa *isa, const char *peak_isa, const int *threads,
                     int nthreads, const double *peak, const result *res, int nres, double load)
{
    fprintf(f, "GEMM roofline (`bench/gemm_peak`, issue 30) on %s (%ld cores), load average "
            "%.2f at the start: tracegraph CPU kernels **%s**, oneDNN ISA **%s**; FMA peak "
            "measured at **%s** (12 chains of vector FMAs per thread):",
            isa->cpu, sysconf(_SC_NPROCESSORS_ONLN), load, isa->cpu_kernels, isa->onednn_isa,
            peak_isa);
    for (int t = 0; t < nthreads; t++)
        fprintf(f, "%s %d thread%s %.1f GFLOP/s (%.1f per thread)", t ? ";" : "", threads[t],
                threads[t] > 1 ? "s" : "", peak[t], peak[t] / threads[t]);
    fprintf(f, ". GFLOP/s = 2·M·K·N / median time (bias not counted), with the share of "
            "the peak at that thread count. eager: `eager_linear`/`eager_matmul` (oneDNN); "
            "replay: the op traced and replayed (prepared primitive, packed weights); "
            "blas: `cblas_sgemm` of %s.\n\n",
            blas_name[0] ? blas_name : "OpenBLAS (not installed: `scripts/deps.sh "
                                       "libopenblas0-openmp`)");
    fprintf(f, "| workload | GEMM | M×K×N | threads | eager GFLOP/s (%% peak) | replay GFLOP/s "
               "(%% peak) | blas GFLOP/s (%% peak) | peak GFLOP/s | ISA: kernels / oneDNN / "
               "peak |\n|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        char dims[64], e[32], p[32], b[32];
        if (r->s->batch > 1)
            snprintf(dims, sizeof dims, "%lld×(%lld×%lld×%lld)", (long long)r->s->batch,
                     (long long)r->s->m, (long long)r->s->k, (long long)r->s->n);
        else
            snprintf(dims, sizeof dims, "%lld×%lld×%lld", (long long)r->s->m,
                     (long long)r->s->k, (long long)r->s->n);
        fprintf(f, "| %s | %s | %s | %d | %s | %s | %s | %.1f | %s / %s / %s |%s%s\n",
                r->s->workload, r->s->name, dims, r->threads, rate(r, P_EAGER, e, sizeof e),
                rate(r, P_REPLAY, p, sizeof p), rate(r, P_BLAS, b, sizeof b), r->peak,
                isa->cpu_kernels, isa->onednn_isa, peak_isa, r->error[0] ? " " : "",
                r->error);
    }
}

static void json(FILE *f, const bench_isa *isa, const char *peak_isa, const int *threads,
                 int nthreads, const double *peak, const result *res, int nres, double load)
{
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fputs("{\"schema\": \"tracegraph-gemm-1\",\n  \"machine\": {\"cpu\": ", f);
    bench_json_str(f, isa->cpu);
    fprintf(f, ", \"cores\": %ld, \"cpu_kernels\": ", sysconf(_SC_NPROCESSORS_ONLN));
    bench_json_str(f, isa->cpu_kernels);
    fputs(", \"onednn_isa\": ", f);
    bench_json_str(f, isa->onednn_isa);
    fputs(", \"fma_peak_isa\": ", f);
    bench_json_str(f, peak_isa);
    fputs(", \"blas\": ", f);
    bench_json_str(f, blas_name);
    fputs(", \"date\": ", f);
    bench_json_str(f, date);
    fputs(", \"loadavg\": ", f);
    bench_json_num(f, load);
    fputs("},\n  \"peak\": [", f);
    for (int t = 0; t < nthreads; t++) {
        fprintf(f, "%s{\"threads\": %d, \"gflops\": ", t ? ", " : "", threads[t]);
        bench_json_num(f, peak[t]);
        fputs("}", f);
    }
    fputs("],\n  \"records\": [\n", f);
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        fputs("    {\"workload\": ", f);
        bench_json_str(f, r->s->workload);
        fputs(", \"gemm\": ", f);
        bench_json_str(f, r->s->name);
        fprintf(f, ", \"batch\": %lld, \"m\": %lld, \"k\": %lld, \"n\": %lld, \"threads\": %d, "
                "\"runs\": %d, \"error\": ", (long long)r->s->batch, (long long)r->s->m,
                (long long)r->s->k, (long long)r->s->n, r->threads, r->runs);
        bench_json_str(f, r->error);
        fputs(",\n     \"cpu\": ", f);
        bench_json_str(f, isa->cpu);
        fputs(", \"cpu_kernels\": ", f);
        bench_json_str(f, isa->cpu_kernels);
        fputs(", \"onednn_isa\": ", f);
        bench_json_str(f, isa->onednn_isa);
        fputs(", \"fma_peak_isa\": ", f);
        bench_json_str(f, peak_isa);
        fputs(", \"fma_peak_gflops\": ", f);
        bench_json_num(f, r->peak);
        for (int p = 0; p < NPATHS; p++) {
            fprintf(f, ",\n     \"%s_ms\": {\"median\": ", path_names[p]);
            bench_json_num(f, r->ms[p]);
            fputs(", \"min\": ", f);
            bench_json_num(f, r->min_ms[p]);
            fprintf(f, "}, \"%s_gflops\": ", path_names[p]);
            bench_json_num(f, gflops(r, p));
            fprintf(f, ", \"%s_pct_peak\": ", path_names[p]);
            bench_json_num(f, r->peak > 0 ? 100 * gflops(r, p) / r->peak : NAN);
        }
        fputs(i + 1 < nres ? "},\n" : "}\n", f);
    }
    fputs("  ]}\n", f);
}

/* ---- command line ---- */

static int usage(void)
{
    fprintf(stderr, "usage: gemm_peak [--threads 1,2] [--shapes mlp,encoder] [--runs N]\n"
                    "                 [--budget-ms MS] [--no-blas] [--blas LIB] [--json FILE]\n"
                    "                 [--md FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int threads[8] = {1, 2}, nthreads = 2, runs = 21, no_blas = 0, use_mlp = 1, use_enc = 1;
    double budget_ms = 200;
    const char *json_out = NULL, *md_out = NULL, *blas_lib = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-blas")) {
            no_blas = 1;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (!strcmp(a, "--threads")) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            nthreads = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int t = atoi(tok);
                if (t < 1 || t > SUITE_MAX_THREADS || nthreads == 8)
                    return usage();
                threads[nthreads++] = t;
            }
            if (!nthreads)
                return usage();
        } else if (!strcmp(a, "--shapes")) {
            use_mlp = strstr(v, "mlp") != NULL;
            use_enc = strstr(v, "encoder") != NULL;
            if (!use_mlp && !use_enc)
                return usage();
        } else if (!strcmp(a, "--runs")) {
            runs = atoi(v);
            if (runs < 1 || runs > MAX_ROUNDS)
                return usage();
        } else if (!strcmp(a, "--budget-ms")) {
            budget_ms = atof(v);
            if (!(budget_ms >= 0))
                return usage();
        } else if (!strcmp(a, "--blas")) {
            blas_lib = v;
        } else if (!strcmp(a, "--json")) {
            json_out = v;
        } else if (!strcmp(a, "--md")) {
            md_out = v;
        } else {
            return usage();
        }
    }
    if (!no_blas)
        blas_open(blas_lib);
    bench_isa isa;
    bench_isa_get(&isa);
    const char *peak_isa = suite_peak_isa();
    double load = NAN;
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf", &load) != 1)
            load = NAN;
        fclose(lf);
    }
    fprintf(stderr, "gemm_peak: on %s; CPU kernels %s, oneDNN ISA %s, FMA peak at %s; blas: %s\n",
            isa.cpu, isa.cpu_kernels, isa.onednn_isa, peak_isa,
            blas_name[0] ? blas_name : no_blas ? "off (--no-blas)" : "none found");

    result res[8 * NSHAPES];
    double peak[8];
    int nres = 0;
    for (int t = 0; t < nthreads; t++) {
        peak[t] = suite_fma_peak_gflops_at(peak_isa, threads[t]);
        int first = nres;
        for (int i = 0; i < NSHAPES; i++) {
            const shape *s = &shapes[i];
            if (!(strcmp(s->workload, "mlp") ? use_enc : use_mlp))
                continue;
            measure(s, threads[t], runs, budget_ms, &res[nres]);
            double again = suite_fma_peak_gflops_at(peak_isa, threads[t]);
            peak[t] = again > peak[t] ? again : peak[t];
            fprintf(stderr, "gemm_peak: %-7s %-7s t=%d eager %.4f ms replay %.4f ms blas %.4f ms%s%s\n",
                    s->workload, s->name, threads[t], res[nres].ms[P_EAGER],
                    res[nres].ms[P_REPLAY], res[nres].ms[P_BLAS], res[nres].error[0] ? ": " : "",
                    res[nres].error);
            nres++;
        }
        for (int i = first; i < nres; i++)
            res[i].peak = peak[t];
    }
    markdown(stdout, &isa, peak_isa, threads, nthreads, peak, res, nres, load);
    for (int i = 0; i < nres; i++)
        for (int p = 0; p < NPATHS; p++)
            if (res[i].peak > 0 && gflops(&res[i], p) > 1.02 * res[i].peak) {
                fprintf(stderr, "gemm_peak: note: %s %s at %d thread(s) ran above the measured "
                        "peak: other work shared the cores while the peak was measured (a "
                        "busy or hyperthread sibling core); rerun on a quieter machine\n",
                        res[i].s->workload, res[i].s->name, res[i].threads);
                i = nres;
                break;
            }
    int ok = 1;
    if (md_out) {
        FILE *f = fopen(md_out, "w");
        if (f)
            markdown(f, &isa, peak_isa, threads, nthreads, peak, res, nres, load);
        ok &= f && fclose(f) == 0;
    }
    if (json_out) {
        FILE *f = fopen(json_out, "w");
        if (f)
            json(f, &isa, peak_isa, threads, nthreads, peak, res, nres, load);
        ok &= f && fclose(f) == 0;
    }
    if (!ok)
        fprintf(stderr, "gemm_peak: cannot write %s\n", md_out && json_out ? "the output files"
                                                        : md_out ? md_out : json_out);
    for (int i = 0; i < nres; i++)
        if (res[i].error[0])
            ok = 0;
    return ok ? 0 : 1;
}
