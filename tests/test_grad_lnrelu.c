/*
 * test_grad_lnrelu.c - the gradient op that layer_norm's rule emits,
 * layer_norm_grad, against a naive loop written here in double with
 * PyTorch's formulas (native_layer_norm_backward: dx = rstd * dy * w +
 * b * x + c with per-row coefficients b, c from the sums of dy * w and of
 * dy * w * x; dweight and dbias sums over rows), a different form from
 * the kernel's (xhat with the means of g and g * xhat).
 *
 * Random shapes and axes, odd sizes, no rows, one column, a 0-d x, with
 * and without a weight, a row far from 0 (mean 1000), NaN and infinities
 * in x and dy, -0; the same bits at one and two threads and in a replay;
 * layer_norm's rule gives exactly the op's outputs; bad shapes and
 * attributes fail naming them.
 *
 * relu_grad (relu's rule's op) against y > 0 ? dy : 0 written here, bit
 * for bit, on every pair of special values (NaN, infinities, zeros of
 * both signs, subnormals) and on broadcast shapes; the same bits as the
 * chain it replaced (where(gt(y, 0), dy, 0)), at one and two threads, in
 * a fused program and through relu's rule; relu's backward, optimized at
 * -O2, fuses it with the elementwise op before it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#define TU_SEED 0x9e3779b97f4a7c15ull
#include "rand_util.h"
#include "eager/eager.h"
#include "eager/grad_eager.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "optimize/opt.h"
#include "replay/replay.h"

/* ---- layer_norm_grad ---- */

/*
 * PyTorch's CPU backward (LayerNormBackwardKernelImplInternal), in
 * double: per row, ds = sum dy w x, db = sum dy w, a = rstd,
 * b = (db mean - ds) rstd^3 / n, c = -b mean - db rstd / n,
 * dx = a dy w + b x + c; dw += dy (x - mean) rstd, dbias += dy.  scale
 * gets each dx element's size bound (the terms before they cancel) for
 * the tolerance.
 */
static void ln_grad_ref(const float *x, const float *dy, const float *w, int64_t rows,
                        int64_t n, double eps, double *dx, double *dw, double *db,
                        double *scale)
{
    for (int64_t i = 0; i < n; i++)
        dw[i] = db[i] = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *gr = dy + r * n;
        double mean = 0, var = 0, ds = 0, dsum = 0;
        for (int64_t i = 0; i < n; i++)
            mean += xr[i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)n;
        double rstd = 1.0 / sqrt(var + eps);
        for (int64_t i = 0; i < n; i++) {
            double g = (double)gr[i] * (w ? w[i] : 1.0);
            ds += g * xr[i];
            dsum += g;
        }
        double b = (dsum * mean - ds) * rstd * rstd * rstd / (double)n;
        double c = -b * mean - dsum * rstd / (double)n;
        double big = 0;
        for (int64_t i = 0; i < n; i++) {
            double g = (double)gr[i] * (w ? w[i] : 1.0);
            double xh = (xr[i] - mean) * rstd;
            dx[r * n + i] = rstd * g + b * xr[i] + c;
            double t = fabs(rstd * g) + fabs(dsum * rstd / (double)n) +
                       fabs(xh * (ds - mean * dsum) * rstd * rstd / (double)n);
            big = t > big ? t : big;
            dw[i] += gr[i] * xh;
            db[i] += gr[i];
        }
        for (int64_t i = 0; i < n; i++)
            scale[r * n + i] = big;
    }
}

/* x and dy: uniform in [-2, 2], w in [0.5, 2]; special, by kind:
 * 1 a row of x around 1000, 2 NaN in x, 3 NaN in dy, 4 +-inf in dy,
 * 5 -0 in dy and x (a row of dy all -0). */
static void ln_fill(float *x, float *dy, float *w, int64_t rows, int64_t n, int kind)
{
    for (int64_t i = 0; i < rows * n; i++) {
        x[i] = (float)(4 * urand() - 2);
        dy[i] = (float)(4 * urand() - 2);
    }
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)(0.5 + 1.5 * urand());
    if (rows == 0 || n == 0)
        return;
    int64_t r = rows / 2, k = (int64_t)(next_u64() % (uint64_t)n);
    switch (kind) {
    case 1:
        for (int64_t i = 0; i < n; i++)
            x[r * n + i] = (float)(1000 + 2 * urand() - 1);
        break;
    case 2: x[r * n + k] = NAN; break;
    case 3: dy[r * n + k] = NAN; break;
    case 4:
        dy[r * n + k] = INFINITY;
        dy[(rows - 1) * n + (n - 1 - k)] = -INFINITY;
        break;
    case 5:
        for (int64_t i = 0; i < n; i++)
            dy[r * n + i] = -0.0f;
        x[k] = -0.0f;
        break;
    default: break;
    }
}

/* Whether row r of x or dy holds a non-finite element. */
static int row_bad(const float *x, const float *dy, int64_t r, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[r * n + i]) || !isfinite(dy[r * n + i]))
            return 1;
    return 0;
}

/* got vs the reference: finite rows within 2e-6 of each element's scale;
 * a row with a non-finite input gives non-finite values only; dw and db
 * within 2e-6 of the sum of the magnitudes (NaN and infinities as the
 * reference's). */
static void ln_compare(const char *what, const float *x, const float *dy, int64_t rows,
                       int64_t n, const float *got_dx, const float *got_dw, const float *got_db,
                       const double *dx, const double *dw, const double *db,
                       const double *scale)
{
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 3; r++) {
        int nonfinite = row_bad(x, dy, r, n);
        for (int64_t i = 0; i < n && bad < 3; i++) {
            int64_t e = r * n + i;
            int ok = nonfinite ? !isfinite(got_dx[e])
                               : fabs(got_dx[e] - dx[e]) <= 2e-6 * scale[e] + 1e-30;
            if (!ok) {
                bad++;
                CHECK_MSG(0, "%s: dx[%lld] (row %lld) = %.9g, want %.9g (scale %.3g)", what,
                          (long long)e, (long long)r, got_dx[e], dx[e], scale[e]);
            }
        }
    }
    /* the magnitudes dw and db sum over, for their tolerance */
    for (int64_t i = 0; i < n && bad < 6; i++) {
        double sw = 0, sb = 0;
        for (int64_t r = 0; r < rows; r++)
            if (isfinite(dy[r * n + i])) {
                /* |xhat| <= sqrt(n): 40 covers n < 1600 */
                sw += fabs(dy[r * n + i]) * 40;
                sb += fabs(dy[r * n + i]);
            }
        double ew = check_abs_diff(got_dw[i], dw[i]), eb = check_abs_diff(got_db[i], db[i]);
        if (!(ew <= 2e-6 * sw + 1e-30) || !(eb <= 2e-6 * sb + 1e-30)) {
            bad++;
            CHECK_MSG(0, "%s: column %lld: dweight %.9g (want %.9g), dbias %.9g (want %.9g)",
                      what, (long long)i, got_dw[i], dw[i], got_db[i], db[i]);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d mismatches", what, bad);
}

/* Runs layer_norm_grad eagerly at the given thread count; outputs into
 * out[3] (released by the caller).  0 on failure. */
static int ln_grad_run(eager_tensor *dyt, eager_tensor *xt, eager_tensor *wt, int64_t axis,
                       float eps, int threads, eager_tensor *out[3])
{
    eager_set_threads(threads);
    int n = eager_layer_norm_grad(dyt, xt, wt ? wt : EAGER_NONE, axis, eps, out, 3);
    CHECK_MSG(n == 3, "layer_norm_grad: %d outputs: %s", n, eager_error());
    return n == 3;
}

/* A one-node graph of layer_norm_grad replayed at two threads; its three
 * outputs must be want's bits. */
static void ln_replay(const char *what, eager_tensor *dyt, eager_tensor *xt, eager_tensor *wt,
                      const graph_layer_norm_grad_attrs *at, eager_tensor *const want[3])
{
    graph *g = graph_new("ln_grad");
    int32_t in[3], out[3];
    const char *names[3] = {"dy", "x", "w"}, *onames[3] = {"dx", "dw", "db"};
    eager_tensor *ts[3] = {dyt, xt, wt};
    int nin = wt ? 3 : 2;
    for (int i = 0; i < nin; i++) {
        in[i] = graph_add_value(g, GRAPH_VALUE_INPUT, eager_type(ts[i]), names[i]);
        graph_add_input(g, in[i]);
    }
    CHECK(graph_add_node(g, GRAPH_OP_layer_norm_grad, in, nin, at, out, 3) >= 0);
    for (int k = 0; k < 3; k++)
        graph_add_output(g, out[k], onames[k]);
    char err[256] = "";
    replay_opts ro = {.threads = 2};
    replay_plan *rp = replay_compile(g, &ro, err, sizeof err);
    CHECK_MSG(rp != NULL, "%s: compile: %s", what, err);
    replay_session *rs = rp ? replay_session_new(rp, NULL, 0) : NULL;
    replay_tensor ins[3];
    for (int i = 0; i < nin; i++)
        ins[i] = (replay_tensor){.name = names[i], .type = *eager_type(ts[i]),
                                 .input = eager_peek(ts[i])};
    float *got[3];
    replay_tensor outs[3];
    for (int k = 0; k < 3; k++) {
        int64_t n = eager_numel(want[k]);
        got[k] = malloc((size_t)(n ? n : 1) * sizeof(float));
        memset(got[k], 0xff, (size_t)(n ? n : 1) * sizeof(float));
        outs[k] = (replay_tensor){.name = onames[k], .data = got[k],
                                  .size = (size_t)n * sizeof(float)};
    }
    CHECK_MSG(rs && replay_run(rs, ins, nin, outs, 3) == TG_OK, "%s: replay: %s", what,
              rs ? replay_session_error(rs) : err);
    for (int k = 0; k < 3; k++) {
        int64_t at_ = 0;
        CHECK_MSG(same_bits(got[k], eager_peek(want[k]), eager_numel(want[k]), &at_),
                  "%s: replayed output %d differs from eager at %lld", what, k, (long long)at_);
        free(got[k]);
    }
    replay_session_free(rs);
    replay_plan_free(rp);
    graph_free(g);
}

static void ln_case(const int64_t *dims, int ndim, int64_t axis, int has_w, int kind)
{
    int ax = (int)(axis < 0 ? axis + (ndim ? ndim : 1) : axis);
    int64_t rows = 1, n = 1;
    for (int d = 0; d < ndim; d++)
        *(d < ax ? &rows : &n) *= dims[d];
    char what[160];
    int len = snprintf(what, sizeof what, "layer_norm_grad [");
    for (int d = 0; d < ndim; d++)
        len += snprintf(what + len, sizeof what - (size_t)len, "%s%lld", d ? "," : "",
                        (long long)dims[d]);
    snprintf(what + len, sizeof what - (size_t)len, "] axis %lld%s kind %d", (long long)axis,
             has_w ? " weight" : "", kind);
    int64_t total = rows * n, nw = n;
    float *x = malloc((size_t)(total ? total : 1) * sizeof *x);
    float *dy = malloc((size_t)(total ? total : 1) * sizeof *dy);
    float *w = malloc((size_t)(nw ? nw : 1) * sizeof *w);
    double *rdx = malloc((size_t)(total ? total : 1) * sizeof *rdx);
    double *scale = malloc((size_t)(total ? total : 1) * sizeof *scale);
    double *rdw = malloc((size_t)(nw ? nw : 1) * sizeof *rdw);
    double *rdb = malloc((size_t)(nw ? nw : 1) * sizeof *rdb);
    ln_fill(x, dy, w, rows, n, kind);
    const float eps = 1e-5f;
    if (n > 0)
        ln_grad_ref(x, dy, has_w ? w : NULL, rows, n, eps, rdx, rdw, rdb, scale);
    graph_ints shape = {.n = ndim};
    for (int d = 0; d < ndim; d++)
        shape.v[d] = dims[d];
    graph_ints wshape = {.n = ndim - ax};
    for (int d = ax; d < ndim; d++)
        wshape.v[d - ax] = dims[d];
    eager_tensor *xt = eager_from_data(GRAPH_F32, shape, x);
    eager_tensor *dyt = eager_from_data(GRAPH_F32, shape, dy);
    eager_tensor *wt = has_w ? eager_from_data(GRAPH_F32, wshape, w) : NULL;
    eager_tensor *o1[3] = {0}, *o2[3] = {0};
    if (ln_grad_run(dyt, xt, wt, axis, eps, 1, o1) && ln_grad_run(dyt, xt, wt, axis, eps, 2, o2)) {
        if (n > 0)
            ln_compare(what, x, dy, rows, n, eager_peek(o1[0]), eager_peek(o1[1]),
                       eager_peek(o1[2]), rdx, rdw, rdb, scale);
        CHECK_MSG(eager_numel(o1[0]) == total && eager_numel(o1[1]) == nw &&
                      eager_numel(o1[2]) == nw,
                  "%s: output sizes", what);
        for (int k = 0; k < 3; k++) {
            int64_t at = 0;
            CHECK_MSG(same_bits(eager_peek(o1[k]), eager_peek(o2[k]), eager_numel(o1[k]), &at),
                      "%s: output %d differs between 1 and 2 threads at %lld", what, k,
                      (long long)at);
        }
        graph_layer_norm_grad_attrs at = {axis, eps};
        if (total > 0) /* (an empty output buffer would read as a 0-d one) */
            ln_replay(what, dyt, xt, wt, &at, o1);
        /* layer_norm's rule: the op's outputs, bit for bit */
        eager_tensor *fin[3] = {xt, wt, NULL};
        int nin = has_w ? 2 : 1;
        eager_tensor *y = eager_layer_norm(xt, has_w ? wt : EAGER_NONE, EAGER_NONE, axis, eps);
        unsigned char need[2] = {1, 1};
        eager_tensor *gin[2] = {NULL, NULL};
        graph_layer_norm_attrs la = {axis, eps};
        eager_site here = {EAGER_SITE};
        if (ndim > 0) {
            CHECK_MSG(eager_op_grad(GRAPH_OP_layer_norm, fin, nin, &la, &y, 1, &dyt, need, gin,
                                    &here) == TG_OK,
                      "%s: rule: %s", what, eager_error());
            for (int k = 0; k < nin; k++) {
                int64_t a = 0;
                CHECK_MSG(gin[k] && same_bits(eager_peek(gin[k]), eager_peek(o2[k]),
                                              eager_numel(o2[k]), &a),
                          "%s: the rule's gradient %d is not the op's output", what, k);
                eager_release(gin[k]);
            }
        }
        eager_release(y);
    }
    for (int k = 0; k < 3; k++) {
        eager_release(o1[k]);
        eager_release(o2[k]);
    }
    eager_release(wt);
    eager_release(dyt);
    eager_release(xt);
    free(rdb);
    free(rdw);
    free(scale);
    free(rdx);
    free(w);
    free(dy);
    free(x);
    eager_set_threads(1);
}

static void layer_norm_grad_checks(void)
{
    /* the encoder's shape, then odd ones */
    static const struct {
        int ndim;
        int64_t dims[4], axis;
    } fixed[] = {
        {3, {64, 16, 256}, -1}, {2, {7, 33}, -1}, {2, {5, 1}, -1}, {3, {3, 5, 17}, 1},
        {2, {0, 9}, -1},        {2, {4, 0}, -1},  {1, {13}, 0},    {3, {300, 1, 129}, -1},
        {4, {2, 3, 5, 7}, -3},  {0, {0}, -1},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (int kind = 0; kind < 6; kind++)
            ln_case(fixed[i].dims, fixed[i].ndim, fixed[i].axis, (kind + (int)i) & 1, kind);
    /* random shapes and axes */
    for (int t = 0; t < 40; t++) {
        int ndim = 1 + (int)(next_u64() % 4);
        int64_t dims[4];
        for (int d = 0; d < ndim; d++)
            dims[d] = 1 + (int64_t)(next_u64() % (d == ndim - 1 ? 70 : 9));
        int64_t axis = (int64_t)(next_u64() % (uint64_t)ndim);
        if (next_u64() & 1)
            axis -= ndim;
        ln_case(dims, ndim, axis, (int)(next_u64() & 1), (int)(next_u64() % 6));
    }
    /* errors name what is wrong */
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 3, 4), 1, -1, 1);
    eager_tensor *dy = eager_rand_uniform(TG_SHAPE(2, 3, 4), 2, -1, 1);
    eager_tensor *dy2 = eager_rand_uniform(TG_SHAPE(2, 4, 3), 3, -1, 1);
    eager_tensor *w3 = eager_rand_uniform(TG_SHAPE(3), 4, -1, 1);
    eager_tensor *xi = eager_full(GRAPH_I64, TG_SHAPE(2, 3, 4), 1);
    eager_tensor *o[3];
    CHECK_FAILS_N(eager_layer_norm_grad(dy2, x, EAGER_NONE, -1, 1e-5f, o, 3),
                  "layer_norm_grad: [2,4,3] x [2,3,4]: dy is f32 [2,4,3], x is f32 [2,3,4]: "
                  "they must match");
    CHECK_FAILS_N(eager_layer_norm_grad(dy, x, w3, -1, 1e-5f, o, 3),
                  "weight has shape [3], want [4]");
    CHECK_FAILS_N(eager_layer_norm_grad(dy, x, EAGER_NONE, 3, 1e-5f, o, 3),
                  "axis 3 out of range for 3 dims");
    CHECK_FAILS_N(eager_layer_norm_grad(dy, x, EAGER_NONE, -1, NAN, o, 3),
                  "eps must be finite and >= 0, got nan");
    CHECK_FAILS_N(eager_layer_norm_grad(dy, xi, EAGER_NONE, -1, 1e-5f, o, 3),
                  "x has dtype i64, want f32");
    eager_release(xi);
    eager_release(w3);
    eager_release(dy2);
    eager_release(dy);
    eager_release(x);
}

/* ---- relu_grad ---- */

static const float specials[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f,
    1e-30f, -1e-30f, 3.5f, -2.25f, 1e30f, -1e30f,
};
#define NSPEC ((int64_t)(sizeof specials / sizeof specials[0]))

static float relu_grad_ref(float dy, float y) { return y > 0.0f ? dy : 0.0f; }

/* relu_grad(dy, y) against the loop here, bit for bit; dy and y have the
 * given shapes (broadcast), values drawn from specials and uniform ones. */
static void relu_grad_case(graph_ints sd, graph_ints sy, int threads, const char *what)
{
    int64_t nd = 1, ny = 1;
    for (int i = 0; i < sd.n; i++)
        nd *= sd.v[i];
    for (int i = 0; i < sy.n; i++)
        ny *= sy.v[i];
    float *dy = malloc((size_t)(nd ? nd : 1) * sizeof *dy);
    float *y = malloc((size_t)(ny ? ny : 1) * sizeof *y);
    for (int64_t i = 0; i < nd; i++)
        dy[i] = (next_u64() & 1) ? specials[next_u64() % NSPEC] : (float)(4 * urand() - 2);
    for (int64_t i = 0; i < ny; i++)
        y[i] = (next_u64() & 1) ? specials[next_u64() % NSPEC] : (float)(4 * urand() - 2);
    eager_set_threads(threads);
    eager_pool_push(); /* the temporaries die at the pop */
    eager_tensor *dt = eager_from_data(GRAPH_F32, sd, dy), *yt = eager_from_data(GRAPH_F32, sy, y);
    eager_tensor *r = eager_relu_grad(dt, yt);
    CHECK_MSG(r != NULL, "%s: %s", what, eager_error());
    if (r) {
        /* the output's shape: NumPy broadcasting of the two */
        const graph_type *t = eager_type(r);
        int64_t n = eager_numel(r), idx[GRAPH_MAX_DIMS] = {0};
        const float *got = eager_peek(r);
        int bad = 0;
        for (int64_t k = 0; k < n && bad < 3; k++) {
            /* the element of dy and y under output index idx */
            int64_t od = 0, oy = 0;
            for (int d = 0; d < t->ndim; d++) {
                int dd = d - (t->ndim - sd.n), dyy = d - (t->ndim - sy.n);
                if (dd >= 0)
                    od = od * sd.v[dd] + (sd.v[dd] == 1 ? 0 : idx[d]);
                if (dyy >= 0)
                    oy = oy * sy.v[dyy] + (sy.v[dyy] == 1 ? 0 : idx[d]);
            }
            float want = relu_grad_ref(dy[od], y[oy]);
            if (memcmp(&got[k], &want, sizeof want) != 0) {
                bad++;
                CHECK_MSG(0, "%s: element %lld: relu_grad(%g, %g) = %g, want %g", what,
                          (long long)k, dy[od], y[oy], got[k], want);
            }
            for (int d = t->ndim - 1; d >= 0; d--) {
                if (++idx[d] < t->dim[d])
                    break;
                idx[d] = 0;
            }
        }
        /* the chain relu's rule was before: where(gt(y, 0), dy, 0) */
        eager_tensor *zero = eager_scalar(0.0f);
        eager_tensor *old = eager_where(eager_gt(yt, zero), dt, zero);
        int64_t at = 0;
        CHECK_MSG(old && eager_numel(old) == n && same_bits(eager_peek(old), got, n, &at),
                  "%s: relu_grad differs from where(gt(y, 0), dy, 0) at %lld", what,
                  (long long)at);
        /* the fused kernel: the op alone and after a mul (register,
         * streaming and tile paths by size) */
        eager_tensor *in[2] = {dt, yt};
        eager_tensor *f1 = eager_fused(2, in, TG_STR("r0=relu_grad(i0,i1)"));
        CHECK_MSG(f1 && same_bits(eager_peek(f1), got, n, &at),
                  "%s: fused relu_grad differs at %lld", what, (long long)at);
        eager_tensor *f2 = eager_fused(2, in, TG_STR("r0=mul(i0,2);r1=relu_grad(r0,i1)"));
        eager_tensor *m2 = eager_relu_grad(eager_mul(dt, eager_scalar(2.0f)), yt);
        CHECK_MSG(f2 && m2 && same_bits(eager_peek(f2), eager_peek(m2), n, &at),
                  "%s: fused mul, relu_grad differs from the ops at %lld", what, (long long)at);
    }
    eager_pool_pop();
    free(y);
    free(dy);
    eager_set_threads(1);
}

/* Every pair of special values, at both operands. */
static void relu_grad_specials(void)
{
    eager_tensor *dt = eager_from_data(GRAPH_F32, TG_SHAPE(NSPEC, 1), specials);
    eager_tensor *yt = eager_from_data(GRAPH_F32, TG_SHAPE(1, NSPEC), specials);
    eager_tensor *r = eager_relu_grad(dt, yt);
    CHECK_MSG(r && eager_numel(r) == NSPEC * NSPEC, "relu_grad of the specials: %s", eager_error());
    if (r) {
        const float *got = eager_peek(r);
        for (int64_t i = 0; i < NSPEC; i++)
            for (int64_t j = 0; j < NSPEC; j++) {
                float want = relu_grad_ref(specials[i], specials[j]);
                CHECK_MSG(!memcmp(&got[i * NSPEC + j], &want, sizeof want),
                          "relu_grad(%g, %g) = %g, want %g", specials[i], specials[j],
                          got[i * NSPEC + j], want);
            }
    }
    /* NaN y gives +0, -0 dy passes where y > 0 */
    float z = 0.0f, nz = -0.0f;
    if (r) {
        const float *got = eager_peek(r);
        CHECK(!memcmp(&got[0 * NSPEC + 0], &z, sizeof z));         /* (NaN, NaN) */
        CHECK(!memcmp(&got[5 * NSPEC + 6], &nz, sizeof nz));       /* (-0, 1) */
        CHECK(!memcmp(&got[2 * NSPEC + 5], &z, sizeof z));         /* (inf, -0) */
    }
    eager_release(r);
    eager_release(yt);
    eager_release(dt);
}

/* relu's rule emits relu_grad; in a graph's backward at -O2 it fuses with
 * the mul before it, and neither gt nor where is left. */
static void relu_grad_rule(void)
{
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(6, 37), 11, -1, 1);
    eager_tensor *g = eager_rand_uniform(TG_SHAPE(6, 37), 12, -1, 1);
    eager_tensor *y = eager_relu(x);
    unsigned char need = 1;
    eager_tensor *gin = NULL;
    eager_site here = {EAGER_SITE};
    CHECK(eager_op_grad(GRAPH_OP_relu, &x, 1, NULL, &y, 1, &g, &need, &gin, &here) == TG_OK);
    eager_tensor *want = eager_relu_grad(g, y);
    int64_t at = 0;
    CHECK_MSG(gin && want && same_bits(eager_peek(gin), eager_peek(want), 6 * 37, &at),
              "relu's rule vs relu_grad at %lld", (long long)at);
    eager_release(want);
    eager_release(gin);
    eager_release(y);
    eager_release(g);
    eager_release(x);

    /* loss = sum((relu(x) * c)^2): the backward's mul by c feeds relu_grad */
    graph *gr = graph_new("relu_bwd");
    graph_type t = {GRAPH_F32, 2, {6, 37}}, tc = {GRAPH_F32, 1, {37}};
    int32_t xv = graph_add_value(gr, GRAPH_VALUE_INPUT, &t, "x");
    int32_t cv = graph_add_value(gr, GRAPH_VALUE_INPUT, &tc, "c");
    graph_add_input(gr, xv);
    graph_add_input(gr, cv);
    int32_t a, m, sq, l, dx;
    graph_add_node(gr, GRAPH_OP_relu, &xv, 1, NULL, &a, 1);
    graph_add_node(gr, GRAPH_OP_mul, (int32_t[]){a, cv}, 2, NULL, &m, 1);
    graph_add_node(gr, GRAPH_OP_mul, (int32_t[]){m, m}, 2, NULL, &sq, 1);
    graph_add_node(gr, GRAPH_OP_reduce_sum, &sq, 1, NULL, &l, 1);
    CHECK_MSG(graph_backward(gr, l, &xv, 1, &dx) == TG_OK, "backward: %s", graph_error(gr));
    CHECK(graph_add_output(gr, dx, "dx") == TG_OK);
    opt_options o = opt_default_options();
    o.level = 2;
    opt_report rep;
    char err[512] = "";
    CHECK_MSG(opt_optimize(gr, &o, &rep, err, sizeof err) == TG_OK, "-O2: %s", err);
    int fused_with = 0, alone = 0, masks = 0;
    for (int32_t i = 0; i < gr->nnodes; i++) {
        const graph_node *n = &gr->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        if (n->op == GRAPH_OP_relu_grad)
            alone++;
        if (n->op == GRAPH_OP_gt || n->op == GRAPH_OP_where)
            masks++;
        if (n->op == GRAPH_OP_fused) {
            const graph_fused_attrs *fa = tg_node_attrs(n);
            fused_with += strstr(fa->prog.s, "relu_grad(") && strstr(fa->prog.s, "mul(");
        }
    }
    CHECK_MSG(fused_with == 1 && alone == 0 && masks == 0,
              "-O2: relu_grad fused with a mul in %d fused nodes, %d alone, %d gt/where",
              fused_with, alone, masks);
    graph_free(gr);
}

static void relu_grad_checks(void)
{
    relu_grad_specials();
    relu_grad_case(TG_SHAPE(5, 7), TG_SHAPE(5, 7), 1, "relu_grad [5,7]");
    relu_grad_case(TG_SHAPE(3, 4, 33), TG_SHAPE(4, 1), 1, "relu_grad [3,4,33] by [4,1]");
    relu_grad_case(TG_SHAPE(33), TG_SHAPE(2, 3, 33), 2, "relu_grad [33] by [2,3,33]");
    relu_grad_case(TG_SHAPE(1), TG_SHAPE(9, 1), 1, "relu_grad [1] by [9,1]");
    relu_grad_case(TG_SHAPE(0, 5), TG_SHAPE(5), 1, "relu_grad [0,5] by [5]");
    /* threaded sizes, odd */
    relu_grad_case(TG_SHAPE(257, 301), TG_SHAPE(257, 301), 2, "relu_grad [257,301] 2 threads");
    relu_grad_case(TG_SHAPE(257, 301), TG_SHAPE(257, 301), 1, "relu_grad [257,301] 1 thread");
    relu_grad_case(TG_SHAPE(64, 3, 401), TG_SHAPE(3, 1), 2, "relu_grad [64,3,401] by [3,1]");
    for (int t = 0; t < 20; t++) {
        graph_ints a = {.n = 1 + (int)(next_u64() % 4)}, b = {.n = 0};
        for (int d = 0; d < a.n; d++)
            a.v[d] = 1 + (int64_t)(next_u64() % 9);
        /* b: a suffix of a, each dim kept or 1 */
        b.n = 1 + (int)(next_u64() % (uint64_t)a.n);
        for (int d = 0; d < b.n; d++)
            b.v[d] = (next_u64() & 1) ? a.v[a.n - b.n + d] : 1;
        char what[64];
        snprintf(what, sizeof what, "relu_grad random %d", t);
        if (t & 1)
            relu_grad_case(a, b, 1 + (t & 2) / 2, what);
        else
            relu_grad_case(b, a, 1 + (t & 2) / 2, what);
    }
    relu_grad_rule();
    /* errors */
    eager_tensor *f = eager_rand_uniform(TG_SHAPE(2, 3), 7, -1, 1);
    eager_tensor *f4 = eager_rand_uniform(TG_SHAPE(4), 8, -1, 1);
    eager_tensor *i = eager_full(GRAPH_I64, TG_SHAPE(2, 3), 1);
    CHECK_FAILS(eager_relu_grad(i, i), "dtype i64 not supported");
    CHECK_FAILS(eager_relu_grad(f, i), "relu_grad: [2,3] x i64[2,3]: dtype mismatch (f32 vs i64)");
    CHECK_FAILS(eager_relu_grad(f, f4), "relu_grad: [2,3] x [4]: cannot broadcast dim -1: 3 vs 4");
    eager_release(i);
    eager_release(f4);
    eager_release(f);
}

int main(void)
{
    layer_norm_grad_checks();
    relu_grad_checks();
    CHECK_MSG(eager_live_tensors() == 0, "%ld tensors leaked", eager_live_tensors());
    return check_done();
}
