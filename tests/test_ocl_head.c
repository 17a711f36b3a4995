/*
 * test_ocl_head.c - the OpenCL backend runs a layer_norm in the kernels of
 * the linear/linear_ep after it (ops_gemm.c's ocl_head_find, nn_gemm.cl's
 * TG_HEAD): the linear reads the norm's input and normalizes each row as
 * it loads A, one launch fewer.  Each case is a small graph run on OpenCL
 * on the GPU tile (TG_OPENCL_TILE=gpu: the head is the GPU tile's) and
 * compared with naive loops here (the norm in double, then the product),
 * with K split and summed by a second kernel, in one pass, split in one
 * launch, and the auto path's choice (whose probe must then leave CLBlast
 * out), with the kernels counted against TG_OPENCL_HEAD=off: the norm must
 * launch nothing where it can be absorbed and run as itself where it
 * cannot (its output read twice, a graph output, the norm over another
 * axis).  Sizes: K split over several work-groups, K not a multiple of 16,
 * rows over several tiles, and M or N below 16 (nn_gemm_simple); gamma and
 * beta, gamma alone, neither; bias, ReLU and a residual; the norm's input
 * an intermediate whose buffer the memory plan gives to a later value
 * before the linear reads it; a fused node after the linear run as it
 * stores (the tail, whose input comes before the head's among the extra
 * inputs); each session run twice with new inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "replay/opencl/ocl_blas.h"
#include "replay/opencl/ocl_rt.h"
#include "replay/replay.h"

#define TOL 2e-4

enum {
    ABSORBED,   /* x -> layer_norm -> linear_ep: absorbed */
    LATE_REUSE, /* x = neg(in), norm, then z = neg(in2) before the linear: absorbed */
    WITH_TAIL,  /* and a fused node after the linear, run as it stores (the tail): absorbed */
    READ_TWICE, /* the norm's output also read by neg: not absorbed */
    NORM_OUT,   /* the norm's output a graph output too: not absorbed */
    OTHER_AXIS, /* the norm over axis 0 of [M, K] (all of it): not absorbed */
};

static const char *const kind_names[] = {"absorbed", "input's buffer reused",
                                         "with a tail", "read twice", "norm a graph output",
                                         "norm over axis 0"};

typedef struct hcase {
    int kind;
    int64_t m, k, n;
    int affine; /* 0 none, 1 gamma, 2 gamma and beta */
    int ep;     /* linear_ep: bias, ReLU and a residual; else linear without bias */
} hcase;

static graph_type f32(int64_t a, int64_t b)
{
    graph_type t = {GRAPH_F32, 2, {a, b}};
    return t;
}

static float *rnd(int64_t n, uint64_t seed)
{
    float *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    check_fill(p, n, seed, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; i++) /* rows with an offset: the mean matters */
        p[i] += 0.25f * (float)((i / 7) % 5);
    return p;
}

/* The norm of x [M, K] over each row (axis 1) or over all of it (axis
 * 0), in double. */
static void norm_ref(const float *x, int64_t M, int64_t K, int axis, const float *gm,
                     const float *bt, float eps, double *h)
{
    int64_t outer = axis ? M : 1, len = axis ? K : M * K;
    for (int64_t o = 0; o < outer; o++) {
        const float *xo = x + o * len;
        double s = 0, v = 0;
        for (int64_t i = 0; i < len; i++)
            s += xo[i];
        double mean = s / (double)len;
        for (int64_t i = 0; i < len; i++)
            v += (xo[i] - mean) * (xo[i] - mean);
        double rstd = 1 / sqrt(v / (double)len + eps);
        for (int64_t i = 0; i < len; i++) {
            int64_t k = i % K;
            h[o * len + i] = (xo[i] - mean) * rstd * (gm ? gm[k] : 1) + (bt ? bt[k] : 0);
        }
    }
}

/* Runs case c twice (new inputs each run); returns the kernels the second
 * run launched, -1 on a failed check; *blas its CLBlast calls. */
static long run_case(const hcase *c, long *blas)
{
    int64_t M = c->m, K = c->k, N = c->n;
    graph *g = graph_new("head");
    graph_type tx = f32(M, K), tw = f32(N, K), ty = f32(M, N);
    graph_type tv = {GRAPH_F32, 1, {K}}, tb = {GRAPH_F32, 1, {N}};
    float *w = rnd(N * K, 21), *gm = rnd(K, 22), *bt = rnd(K, 23), *bias = rnd(N, 24);
    float eps = 1e-3f;
    int32_t vx = graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x");
    int32_t vr = graph_add_value(g, GRAPH_VALUE_INPUT, &ty, "r");
    int32_t vw = graph_add_value(g, GRAPH_VALUE_CONST, &tw, "w");
    int32_t vg = graph_add_value(g, GRAPH_VALUE_CONST, &tv, "gamma");
    int32_t vbt = graph_add_value(g, GRAPH_VALUE_CONST, &tv, "beta");
    int32_t vb = graph_add_value(g, GRAPH_VALUE_CONST, &tb, "b");
    graph_set_data(g, vw, w, (size_t)(N * K) * sizeof(float));
    graph_set_data(g, vg, gm, (size_t)K * sizeof(float));
    graph_set_data(g, vbt, bt, (size_t)K * sizeof(float));
    graph_set_data(g, vb, bias, (size_t)N * sizeof(float));
    graph_add_input(g, vx);
    graph_add_input(g, vr);
    int32_t src = vx, h = -1, y = -1, z = -1, h2 = -1;
    if (c->kind == LATE_REUSE) /* x dies at the norm: z may take its buffer */
        graph_add_node(g, GRAPH_OP_neg, &vx, 1, NULL, &src, 1);
    int32_t lin[3] = {src, vg, vbt};
    graph_layer_norm_attrs la = {.axis = c->kind == OTHER_AXIS ? 0 : -1, .eps = eps};
    graph_add_node(g, GRAPH_OP_layer_norm, lin, 1 + c->affine, &la, &h, 1);
    if (c->kind == LATE_REUSE)
        graph_add_node(g, GRAPH_OP_neg, &vx, 1, NULL, &z, 1);
    if (c->ep)
        graph_add_node(g, GRAPH_OP_linear_ep, (int32_t[]){h, vw, vb, vr}, 4,
                       &(graph_linear_ep_attrs){.post = {2, {GRAPH_POST_ADD, GRAPH_POST_RELU}}},
                       &y, 1);
    else
        graph_add_node(g, GRAPH_OP_linear, (int32_t[]){h, vw}, 2, NULL, &y, 1);
    if (c->kind == WITH_TAIL) { /* y' = tanh(y * r): the tail's input r after the head's */
        graph_fused_attrs fa;
        memset(&fa, 0, sizeof fa);
        snprintf(fa.prog.s, sizeof fa.prog.s, "r0=mul(i0,i1);r1=tanh(r0)");
        int32_t t = -1;
        graph_add_node(g, GRAPH_OP_fused, (int32_t[]){y, vr}, 2, &fa, &t, 1);
        y = t;
    }
    graph_add_output(g, y, "y");
    if (c->kind == READ_TWICE) {
        graph_add_node(g, GRAPH_OP_neg, &h, 1, NULL, &h2, 1);
        graph_add_output(g, h2, "h2");
    }
    if (c->kind == NORM_OUT)
        graph_add_output(g, h, "h");
    if (c->kind == LATE_REUSE)
        graph_add_output(g, z, "z");

    char err[2048], what[160];
    snprintf(what, sizeof what, "%s %lldx%lldx%lld affine %d%s", kind_names[c->kind],
             (long long)M, (long long)K, (long long)N, c->affine, c->ep ? " ep" : "");
    replay_opts o = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "%s: compile: %s", what, err);
    replay_session *ss = p ? replay_session_new(p, NULL, 0) : NULL;
    long ran = -1;
    for (int run = 0; ss && run < 2; run++) {
        float *x = rnd(M * K, 31 + (uint64_t)run), *r = rnd(M * N, 41 + (uint64_t)run);
        double *hr = malloc((size_t)(M * K) * sizeof *hr);
        float *xs = malloc((size_t)(M * K) * sizeof *xs);
        for (int64_t i = 0; i < M * K; i++)
            xs[i] = c->kind == LATE_REUSE ? -x[i] : x[i];
        norm_ref(xs, M, K, c->kind == OTHER_AXIS ? 0 : 1, c->affine > 0 ? gm : NULL,
                 c->affine > 1 ? bt : NULL, eps, hr);
        float *got[2] = {malloc((size_t)(M * N) * sizeof(float)),
                         malloc((size_t)(M * K) * sizeof(float))};
        replay_tensor in[2] = {{.name = "x", .type = tx, .input = x},
                               {.name = "r", .type = ty, .input = r}};
        const char *second = c->kind == READ_TWICE ? "h2" : c->kind == NORM_OUT ? "h" : "z";
        replay_tensor out[2] = {{.name = "y", .type = ty, .data = got[0]},
                                {.name = second, .type = tx, .data = got[1]}};
        int nout = c->kind == ABSORBED || c->kind == WITH_TAIL || c->kind == OTHER_AXIS ? 1 : 2;
        long k0 = ocl_kernels_run(), b0 = ocl_blas_calls();
        tg_status st = replay_run(ss, in, 2, out, nout);
        ran = ocl_kernels_run() - k0;
        *blas = ocl_blas_calls() - b0;
        CHECK_MSG(st == TG_OK, "%s: run %d: %s", what, run, replay_session_error(ss));
        int64_t bad = 0, first = -1;
        double fw = 0;
        for (int64_t m = 0; st == TG_OK && m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = c->ep ? bias[n] : 0;
                for (int64_t k = 0; k < K; k++)
                    acc += hr[m * K + k] * w[n * K + k];
                if (c->ep) {
                    acc += r[m * N + n];
                    acc = acc > 0 ? acc : 0;
                }
                if (c->kind == WITH_TAIL)
                    acc = tanh(acc * r[m * N + n]);
                if (fabs(got[0][m * N + n] - acc) > TOL * (1 + fabs(acc)) && bad++ == 0)
                    first = m * N + n, fw = acc;
            }
        for (int64_t i = 0; st == TG_OK && nout == 2 && i < M * K; i++) {
            double want = c->kind == READ_TWICE ? -hr[i] : c->kind == NORM_OUT ? hr[i] : -x[i];
            if (fabs(got[1][i] - want) > TOL * (1 + fabs(want)) && bad++ == 0)
                first = -1 - i, fw = want;
        }
        CHECK_MSG(bad == 0, "%s: run %d: %lld wrong, first %s %lld: %.7g, want %.7g", what,
                  run, (long long)bad, first >= 0 ? "y" : second,
                  (long long)(first >= 0 ? first : -1 - first),
                  first >= 0 ? got[0][first] : got[1][-1 - first], fw);
        if (st != TG_OK || bad)
            ran = -1;
        free(x), free(r), free(hr), free(xs), free(got[0]), free(got[1]);
    }
    replay_session_free(ss);
    replay_plan_free(p);
    graph_free(g);
    free(w), free(gm), free(bt), free(bias);
    return ran;
}

int main(void)
{
    replay_device_info dev;
    if (!check_opencl_device(&dev))
        return CHECK_SKIP;
    setenv("TG_OPENCL_TILE", "gpu", 1);
    setenv("TG_OPENCL_TAIL", "off", 1);
    static const hcase cases[] = {
        {ABSORBED, 33, 777, 47, 2, 1},  {ABSORBED, 130, 100, 70, 1, 0},
        {ABSORBED, 5, 64, 40, 0, 1},    {ABSORBED, 70, 20, 8, 2, 0},
        {ABSORBED, 64, 256, 96, 2, 0},  {LATE_REUSE, 40, 300, 50, 2, 1},
        {WITH_TAIL, 33, 777, 47, 2, 1}, {WITH_TAIL, 6, 100, 9, 1, 0},
        {READ_TWICE, 33, 200, 47, 2, 1}, {NORM_OUT, 33, 200, 47, 2, 0},
        {OTHER_AXIS, 33, 200, 47, 0, 1},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    static const char *const ways[][2] = {
        /* TG_OPENCL_GEMM, TG_OPENCL_SPLITK */
        {"own", "on"}, {"own", "off"}, {"own", "fixup"}, {"auto", "auto"},
    };
    long fx0[2], fx1[2];
    ocl_fixup_checks(fx0);
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        setenv("TG_OPENCL_GEMM", ways[w][0], 1);
        setenv("TG_OPENCL_SPLITK", ways[w][1], 1);
        for (int i = 0; i < ncases; i++) {
            long boff, bon;
            setenv("TG_OPENCL_TAIL", cases[i].kind == WITH_TAIL ? "on" : "off", 1);
            setenv("TG_OPENCL_HEAD", "off", 1);
            long off = run_case(&cases[i], &boff);
            setenv("TG_OPENCL_HEAD", "on", 1);
            long on = run_case(&cases[i], &bon);
            int absorbed = cases[i].kind <= WITH_TAIL;
            char what[160];
            snprintf(what, sizeof what, "GEMM %s SPLITK %s, %s %lldx%lldx%lld", ways[w][0],
                     ways[w][1], kind_names[cases[i].kind], (long long)cases[i].m,
                     (long long)cases[i].k, (long long)cases[i].n);
            if (!strcmp(ways[w][0], "own")) { /* the same way both times */
                long want = absorbed ? off - 1 : off;
                CHECK_MSG(on >= 0 && off >= 0 && on == want, "%s: %ld kernels with the head, "
                          "%ld without (want %ld)", what, on, off, want);
            } else { /* the probe's choice: never CLBlast for a linear with a head */
                CHECK_MSG(on >= 0 && off >= 0 && (!absorbed || bon == 0),
                          "%s: %ld CLBlast calls with the head", what, bon);
            }
        }
    }
    ocl_fixup_checks(fx1);
    CHECK_MSG(fx1[1] == fx0[1], "the probe's fixup check disagreed %ld times", fx1[1] - fx0[1]);
    CHECK_MSG(ocl_probe_failures() == 0, "%ld probes failed", (long)ocl_probe_failures());
    /* TG_OPENCL_HEAD's values */
    setenv("TG_OPENCL_HEAD", "sometimes", 1);
    graph *g = graph_new("bad");
    graph_type t = f32(2, 2);
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), y = -1;
    graph_add_input(g, x);
    graph_add_node(g, GRAPH_OP_neg, &x, 1, NULL, &y, 1);
    graph_add_output(g, y, "y");
    char err[512];
    replay_opts o = {.device = "opencl"};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p == NULL && strstr(err, "TG_OPENCL_HEAD=\"sometimes\""),
              "TG_OPENCL_HEAD=sometimes: %s", p ? "compiled" : err);
    replay_plan_free(p);
    graph_free(g);
    replay_backend_shutdown();
    return check_done();
}
