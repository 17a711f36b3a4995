/*
 * test_ocl_pool_reduce.c - the OpenCL backend's row and window ops
 * (replay/opencl/ops_nn.c; cl/nn_pool.cl, nn_norm.cl, nn_reduce.cl,
 * nn_arg.cl) on replay-OpenCL against naive references written here: the
 * pools (max, average with and without padding counted, global, blocked),
 * batch_norm, layer_norm, softmax, log_softmax, the reductions (f32 / i32
 * / i64, axes, keepdim, empty, NaN) and argmax / argmin (ties,
 * select_last, NaN; the i64 indices exactly).  Shapes are odd on purpose,
 * so work-groups are partial.  One node per case (tests/ocl_nn_case.h);
 * normalized error <= 1e-4, NaN only where NaN is expected.  These ops
 * have one way on every GEMM path, so unlike test_ocl_nn ctest runs this
 * once.  Without an OpenCL platform: "SKIP: no OpenCL platform", exit 77.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "ocl_nn_case.h"
#include "replay/replay.h"

/* ---- pools ---- */

/* kind 0 max, 1 avg (include_pad as given). */
static void pool_case(int kind, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
                      int64_t kw, int64_t sh, int64_t sw, const int64_t pad[4], int incl,
                      int nan_at)
{
    int64_t oh = conv_out(h, pad[0], pad[2], kh, 1, sh), ow = conv_out(w, pad[1], pad[3], kw, 1, sw);
    graph_type tx = F32(n, c, h, w);
    graph_ints kl = {2, {kh, kw}}, sl = {2, {sh, sw}}, pl = {4, {pad[0], pad[1], pad[2], pad[3]}};
    graph_max_pool2d_attrs am = {kl, sl, pl};
    graph_avg_pool2d_attrs aa = {kl, sl, pl, incl};
    ncase cs = {kind ? GRAPH_OP_avg_pool2d : GRAPH_OP_max_pool2d, kind ? (void *)&aa : &am, 1,
                {tx}, {rnd(&tx, 11)}, 0};
    float *x = cs.d[0];
    if (nan_at >= 0)
        x[nan_at] = NAN;
    int64_t ny = n * c * oh * ow;
    float *want = malloc((size_t)ny * sizeof *want);
    for (int64_t p = 0; p < n * c; p++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = kind ? 0 : -INFINITY;
                int cnt = 0, nan = 0;
                for (int64_t u = 0; u < kh; u++)
                    for (int64_t v = 0; v < kw; v++) {
                        int64_t ih = i * sh - pad[0] + u, iw = j * sw - pad[1] + v;
                        if (ih < 0 || ih >= h || iw < 0 || iw >= w)
                            continue;
                        float e = x[(p * h + ih) * w + iw];
                        nan |= isnan(e);
                        acc = kind ? acc + e : fmax(acc, e);
                        cnt++;
                    }
                if (kind)
                    acc /= incl ? (double)(kh * kw) : cnt;
                want[(p * oh + i) * ow + j] = nan ? NAN : (float)acc;
            }
    char what[120];
    snprintf(what, sizeof what, "%s %lldx%lld k%lldx%lld s%lld,%lld incl=%d",
             graph_ops[cs.op].name, (long long)h, (long long)w, (long long)kh, (long long)kw,
             (long long)sh, (long long)sw, incl);
    expect(what, &cs, want, ny);
    free(want);
    free_case(&cs);
}

static void global_pool_case(graph_type tx)
{
    ncase c = {GRAPH_OP_global_avg_pool, NULL, 1, {tx}, {rnd(&tx, 12)}, 0};
    int64_t planes = tx.dim[0] * tx.dim[1], plane = graph_type_numel(&tx) / planes;
    float *want = malloc((size_t)planes * sizeof *want);
    const float *x = c.d[0];
    for (int64_t p = 0; p < planes; p++) {
        double s = 0;
        for (int64_t i = 0; i < plane; i++)
            s += x[p * plane + i];
        want[p] = (float)(s / plane);
    }
    expect("global_avg_pool", &c, want, planes);
    free(want);
    free_case(&c);
}

static void test_pool(void)
{
    int64_t p0[4] = {0, 0, 0, 0}, p1[4] = {1, 1, 1, 1}, pa[4] = {1, 0, 1, 2};
    pool_case(0, 2, 3, 9, 11, 3, 3, 2, 2, p1, 0, -1);
    pool_case(0, 1, 2, 8, 7, 2, 3, 2, 1, pa, 0, 5);   /* NaN propagates */
    pool_case(0, 1, 4, 6, 6, 2, 2, 2, 2, p0, 0, -1);
    pool_case(1, 2, 3, 9, 11, 3, 3, 2, 2, p1, 0, -1); /* count_include_pad 0 */
    pool_case(1, 2, 3, 9, 11, 3, 3, 2, 2, p1, 1, -1);
    pool_case(1, 1, 2, 8, 7, 2, 3, 2, 1, pa, 0, -1);
    pool_case(1, 1, 2, 8, 7, 3, 3, 3, 2, pa, 1, -1);
    global_pool_case(F32(2, 5, 7, 9));
    global_pool_case(F32(3, 4, 300));
    global_pool_case(F32(1, 2, 3, 4, 5));
}

/* ---- batch_norm, layer_norm, softmax, log_softmax ---- */

static void batch_norm_case(graph_type tx)
{
    int64_t c = tx.dim[1], s = graph_type_numel(&tx) / (tx.dim[0] * c);
    graph_type tc = F32(c);
    graph_batch_norm_attrs at = {1e-3f};
    ncase k = {GRAPH_OP_batch_norm, &at, 5, {tx, tc, tc, tc, tc},
               {rnd(&tx, 13), rnd(&tc, 14), rnd(&tc, 15), rnd(&tc, 16), rnd(&tc, 17)}, 6};
    float *var = k.d[4];
    for (int64_t i = 0; i < c; i++)
        var[i] = fabsf(var[i]) + 0.1f;
    const float *x = k.d[0], *sc = k.d[1], *b = k.d[2], *m = k.d[3];
    int64_t n = graph_type_numel(&tx);
    float *want = malloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = i / s % c;
        want[i] = (float)((x[i] - m[ch]) * (sc[ch] / sqrt(var[ch] + 1e-3)) + b[ch]);
    }
    expect("batch_norm", &k, want, n);
    free(want);
    free_case(&k);
}

/* weight/bias: 0 none, 1 weight, 2 both.  Rows get a large offset, so
 * the mean must not swamp the deviation. */
static void layer_norm_case(graph_type tx, int64_t axis, int wb)
{
    int ax = axis < 0 ? tx.ndim + (int)axis : (int)axis;
    graph_type tp = {GRAPH_F32, 0, {0}};
    for (int i = ax; i < tx.ndim; i++)
        tp.dim[tp.ndim++] = tx.dim[i];
    graph_layer_norm_attrs at = {axis, 1e-5f};
    ncase c = {GRAPH_OP_layer_norm, &at, 1 + wb, {tx, tp, tp},
               {rnd(&tx, 18), rnd(&tp, 19), rnd(&tp, 20)}, 0};
    int64_t d = graph_type_numel(&tp), rows = graph_type_numel(&tx) / d;
    float *x = c.d[0];
    const float *w = c.d[1], *b = c.d[2];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < d; i++)
            x[r * d + i] += 100.0f * (float)r;
    float *want = malloc((size_t)(rows * d) * sizeof *want);
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < d; i++)
            mean += x[r * d + i];
        mean /= d;
        for (int64_t i = 0; i < d; i++)
            var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
        var /= d;
        for (int64_t i = 0; i < d; i++) {
            double v = (x[r * d + i] - mean) / sqrt(var + 1e-5);
            v = wb > 0 ? v * w[i] : v;
            want[r * d + i] = (float)(wb > 1 ? v + b[i] : v);
        }
    }
    expect("layer_norm", &c, want, rows * d);
    free(want);
    free_case(&c);
}

/* Softmax (log_sm: log_softmax) over axis; the first row gets -inf
 * entries, the second is all -inf (NaN out). */
static void softmax_case(graph_type tx, int64_t axis, int log_sm)
{
    graph_softmax_attrs at = {axis};
    ncase c = {log_sm ? GRAPH_OP_log_softmax : GRAPH_OP_softmax, &at, 1, {tx},
               {rnd(&tx, 21)}, 0};
    int ax = axis < 0 ? tx.ndim + (int)axis : (int)axis;
    int64_t len = tx.dim[ax], inner = 1, n = graph_type_numel(&tx);
    for (int i = ax + 1; i < tx.ndim; i++)
        inner *= tx.dim[i];
    int64_t outer = n / (len * inner);
    float *x = c.d[0];
    for (int64_t l = 0; l < len; l++) {
        x[l * inner] = l % 3 == 1 ? -INFINITY : 4.0f * x[l * inner];
        if (outer * inner > 1)
            x[l * inner + 1] = -INFINITY;
    }
    float *want = malloc((size_t)n * sizeof *want);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xc = x + o * len * inner + j;
            double m = -INFINITY, s = 0;
            for (int64_t l = 0; l < len; l++)
                m = xc[l * inner] > m ? xc[l * inner] : m;
            for (int64_t l = 0; l < len; l++)
                s += exp(xc[l * inner] - m);
            for (int64_t l = 0; l < len; l++) {
                double v = xc[l * inner] - m;
                want[o * len * inner + j + l * inner] = (float)(log_sm ? v - log(s) : exp(v) / s);
            }
        }
    expect(log_sm ? "log_softmax" : "softmax", &c, want, n);
    free(want);
    free_case(&c);
}

static void test_norm(void)
{
    batch_norm_case(F32(2, 5, 7, 9));
    batch_norm_case(F32(6, 3));
    layer_norm_case(F32(4, 7, 37), -1, 2);
    layer_norm_case(F32(3, 5, 300), -1, 1);
    layer_norm_case(F32(3, 4, 6), 1, 0);
    softmax_case(F32(5, 37), -1, 0);
    softmax_case(F32(3, 200), 1, 1);
    softmax_case(F32(2, 9, 13), 1, 0); /* columns */
    softmax_case(F32(4, 6, 5), 0, 1);
}

/* ---- reductions ---- */

typedef enum { RSUM, RMEAN, RMAX } rkind;

/* Reference over x (type tx) with mask of reduced dims; f32 only here. */
static void reduce_ref(rkind k, const float *x, const graph_type *tx, const unsigned char *mask,
                       float *want, int64_t nout)
{
    double *acc = malloc((size_t)(nout ? nout : 1) * sizeof *acc);
    int64_t *cnt = calloc((size_t)(nout ? nout : 1), sizeof *cnt);
    for (int64_t o = 0; o < nout; o++)
        acc[o] = k == RMAX ? -INFINITY : 0;
    int64_t n = graph_type_numel(tx);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, o = 0, step = 1;
        for (int d = tx->ndim - 1; d >= 0; d--) {
            int64_t c = rem % tx->dim[d];
            rem /= tx->dim[d];
            if (!mask[d]) {
                o += c * step;
                step *= tx->dim[d];
            }
        }
        double v = x[i];
        acc[o] = k == RMAX ? (isnan(v) || isnan(acc[o]) ? NAN : fmax(acc[o], v)) : acc[o] + v;
        cnt[o]++;
    }
    for (int64_t o = 0; o < nout; o++)
        want[o] = (float)(k == RMEAN ? (cnt[o] ? acc[o] / cnt[o] : NAN) : acc[o]);
    free(acc);
    free(cnt);
}

static void reduce_case(rkind k, graph_type tx, graph_ints axes, int keepdim, int nan_at)
{
    static const graph_op ops[] = {GRAPH_OP_reduce_sum, GRAPH_OP_reduce_mean,
                                   GRAPH_OP_reduce_max};
    graph_reduce_sum_attrs at = {axes, keepdim}; /* the three attr structs are alike */
    ncase c = {ops[k], &at, 1, {tx}, {rnd(&tx, 22)}, 0};
    float *x = c.d[0];
    if (nan_at >= 0)
        x[nan_at] = NAN;
    unsigned char mask[GRAPH_MAX_DIMS];
    for (int d = 0; d < GRAPH_MAX_DIMS; d++)
        mask[d] = axes.n == 0 && d < tx.ndim;
    for (int i = 0; i < axes.n; i++)
        mask[axes.v[i] < 0 ? axes.v[i] + tx.ndim : axes.v[i]] = 1;
    int64_t nout = 1;
    for (int d = 0; d < tx.ndim; d++)
        nout *= mask[d] ? 1 : tx.dim[d];
    float *want = malloc((size_t)(nout ? nout : 1) * sizeof *want);
    reduce_ref(k, x, &tx, mask, want, nout);
    char what[160], sh[64], ax[64];
    snprintf(what, sizeof what, "%s %s axes %s keepdim %d", graph_ops[c.op].name,
             graph_shape_str(&tx, sh, sizeof sh), graph_ints_str(&axes, ax, sizeof ax), keepdim);
    expect(what, &c, want, nout);
    free(want);
    free_case(&c);
}

/* Integer sums wrap; integer max. */
static void reduce_int_case(graph_dtype dt, int is_max)
{
    graph_type tx = ty(dt, 2, (int64_t[]){3, 70});
    int64_t n = 210;
    size_t es = graph_dtype_size(dt);
    unsigned char *d = malloc((size_t)n * es);
    int64_t want[3];
    uint64_t seed = 99;
    for (int r = 0; r < 3; r++) {
        uint64_t s = 0;
        int64_t m = INT64_MIN;
        for (int i = 0; i < 70; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int64_t v = dt == GRAPH_I64 ? (int64_t)(seed >> 1) - (INT64_MAX / 2)
                                        : (int32_t)(uint32_t)(seed >> 32);
            if (dt == GRAPH_I64)
                ((int64_t *)d)[r * 70 + i] = v;
            else
                ((int32_t *)d)[r * 70 + i] = (int32_t)v;
            s += (uint64_t)v;
            m = v > m ? v : m;
        }
        want[r] = is_max ? m : dt == GRAPH_I64 ? (int64_t)s : (int32_t)(uint32_t)s;
    }
    graph_reduce_sum_attrs at = {{1, {-1}}, 0};
    ncase c = {is_max ? GRAPH_OP_reduce_max : GRAPH_OP_reduce_sum, &at, 1, {tx}, {d}, 0};
    graph_type ot;
    void *got = run_ocl(&c, &ot);
    for (int r = 0; got && r < 3; r++) {
        int64_t g = dt == GRAPH_I64 ? ((int64_t *)got)[r] : ((int32_t *)got)[r];
        CHECK_MSG(g == want[r], "%s %s row %d: %lld, want %lld", graph_ops[c.op].name,
                  graph_dtype_name(dt), r, (long long)g, (long long)want[r]);
    }
    free(got);
    free_case(&c);
}

static void test_reduce(void)
{
    graph_ints all = {0}, last = {1, {-1}}, first = {1, {0}}, mid = {1, {1}};
    graph_ints ends = {2, {0, 2}}, odd = {3, {0, 2, 4}};
    for (rkind k = RSUM; k <= RMAX; k++) {
        reduce_case(k, F32(7, 300), last, 0, -1);   /* rows: work-groups */
        reduce_case(k, F32(7, 5, 3), last, 1, -1);  /* short rows */
        reduce_case(k, F32(300, 7), first, 0, -1);  /* columns: one item per output */
        reduce_case(k, F32(4, 9, 6), mid, 1, -1);
        reduce_case(k, F32(4, 9, 6), ends, 0, -1);
        reduce_case(k, F32(3, 1, 4, 5, 6), odd, 0, -1);
        reduce_case(k, F32(2, 1, 3), all, 0, -1);   /* everything, size-1 dim */
        reduce_case(k, F32(6, 1, 70), mid, 0, -1);  /* a size-1 axis: a copy */
    }
    reduce_case(RMAX, F32(7, 300), last, 0, 650);   /* NaN propagates (row 2) */
    reduce_case(RMAX, F32(300, 7), first, 0, 14);
    reduce_case(RSUM, F32(3, 0), last, 0, -1);      /* empty: 0 */
    reduce_case(RMEAN, F32(3, 0), last, 0, -1);     /* empty: NaN */
    reduce_int_case(GRAPH_I32, 0);
    reduce_int_case(GRAPH_I64, 0);
    reduce_int_case(GRAPH_I32, 1);
    reduce_int_case(GRAPH_I64, 1);
}

/* ---- argmax, argmin ---- */

/*
 * Reference: per output, a loop over the axis keeping the most extreme
 * element (NaN beats numbers, NaNs tie; > for argmax, < for argmin); a tie
 * moves the pick only with select_last.  x holds whole numbers in a small
 * range (ties everywhere) and, for f32, NaNs at nan_every-th elements.
 */
static void arg_case(int is_min, graph_dtype dt, graph_type tx, int axis, int keepdim,
                     int last, int nan_every)
{
    tx.dtype = dt;
    int nd = tx.ndim, ax = axis < 0 ? axis + nd : axis;
    int64_t outer = 1, inner = 1, len = tx.dim[ax], n = graph_type_numel(&tx);
    for (int d = 0; d < nd; d++) {
        outer *= d < ax ? tx.dim[d] : 1;
        inner *= d > ax ? tx.dim[d] : 1;
    }
    double *v = malloc((size_t)n * sizeof *v);
    void *d = malloc((size_t)n * graph_dtype_size(dt));
    uint64_t seed = 7 + (uint64_t)n;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)((int)((seed >> 33) % 7) - 3);
        if (dt == GRAPH_F32 && nan_every && i % nan_every == nan_every - 1)
            v[i] = NAN;
        if (dt == GRAPH_F32)
            ((float *)d)[i] = (float)v[i];
        else if (dt == GRAPH_I64)
            ((int64_t *)d)[i] = (int64_t)v[i];
        else
            ((int32_t *)d)[i] = (int32_t)v[i];
    }
    graph_argmax_attrs at = {axis, keepdim, last}; /* argmin's layout too */
    ncase c = {is_min ? GRAPH_OP_argmin : GRAPH_OP_argmax, &at, 1, {tx}, {d}, 0};
    char what[160], sh[64];
    snprintf(what, sizeof what, "%s %s%s axis %d keepdim %d select_last %d", graph_ops[c.op].name,
             graph_dtype_name(dt), graph_shape_str(&tx, sh, sizeof sh), axis, keepdim, last);
    graph_type ot;
    int64_t *got = run_ocl(&c, &ot);
    if (got)
        CHECK_MSG(ot.dtype == GRAPH_I64 && graph_type_numel(&ot) == outer * inner &&
                      ot.ndim == (keepdim ? nd : nd - 1), "%s: output type", what);
    for (int64_t o = 0; got && o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const double *p = v + o * len * inner + j;
            int64_t best = 0;
            for (int64_t k = 1; k < len; k++) {
                double a = p[k * inner], b = p[best * inner];
                int c2 = isnan(a) && isnan(b) ? 0 : isnan(a) ? 1 : isnan(b) ? -1
                         : is_min ? (a < b) - (a > b) : (a > b) - (a < b);
                if (c2 > 0 || (c2 == 0 && last))
                    best = k;
            }
            if (got[o * inner + j] != best) {
                CHECK_MSG(0, "%s: output %lld is %lld, want %lld", what,
                          (long long)(o * inner + j), (long long)got[o * inner + j],
                          (long long)best);
                o = outer;
                break;
            }
        }
    free(got);
    free(v);
    free_case(&c);
}

static void test_arg(void)
{
    for (int is_min = 0; is_min < 2; is_min++)
        for (int last = 0; last < 2; last++) {
            arg_case(is_min, GRAPH_F32, F32(7, 300), -1, 0, last, 0);  /* rows: work-groups */
            arg_case(is_min, GRAPH_F32, F32(7, 300), 1, 1, last, 29);  /* with NaNs */
            arg_case(is_min, GRAPH_F32, F32(5, 1000), 1, 0, last, 997); /* one NaN per row or so */
            arg_case(is_min, GRAPH_F32, F32(9, 20), 1, 0, last, 7);    /* short rows: items */
            arg_case(is_min, GRAPH_F32, F32(300, 7), 0, 0, last, 13);  /* columns */
            arg_case(is_min, GRAPH_F32, F32(4, 9, 6), 1, 1, last, 5);
            arg_case(is_min, GRAPH_F32, F32(3, 1, 4, 5), -3, 0, last, 0); /* size-1 axis */
            arg_case(is_min, GRAPH_I64, F32(6, 130), 1, 0, last, 0);
            arg_case(is_min, GRAPH_I64, F32(130, 6), -2, 1, last, 0);
            arg_case(is_min, GRAPH_I32, F32(3, 65, 2), 1, 0, last, 0);
            arg_case(is_min, GRAPH_I32, F32(4, 200), 1, 1, last, 0);
        }
}

int main(void)
{
    replay_device_info dev;
    if (!check_opencl_device(&dev))
        return CHECK_SKIP;
    ocl_nn_case_setup(&dev);
    test_pool();
    test_norm();
    test_reduce();
    test_arg();
    replay_backend_shutdown();
    return check_done();
}
