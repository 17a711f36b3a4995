/*
 * test_conv.c - conv2d against naive double-precision loops: strides,
 * symmetric and asymmetric padding, dilation, groups, depthwise, 1x1,
 * bias or not, empty inputs, two threads, every error path (and a
 * oneDNN failure reported as TG_ERR_BACKEND), leaks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv_ref_util.h"
#include "eager/eager.h"
#include "eager/kernel.h"

typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw; /* x [n,c,h,w], w [o,c/g,kh,kw] */
    graph_ints stride, padding, dilation;
    int64_t groups;
    int bias;
} conv_case;

/* One output element of the reference convolution. */
static double conv_at(const conv_case *k, const float *x, const float *w,
                      const int64_t s[2], const int64_t d[2], const int64_t p[4],
                      int64_t n, int64_t o, int64_t oy, int64_t ox)
{
    int64_t cg = k->c / k->groups, og = k->o / k->groups, g = o / og;
    double acc = 0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t ky = 0; ky < k->kh; ky++)
            for (int64_t kx = 0; kx < k->kw; kx++) {
                int64_t iy = oy * s[0] - p[0] + ky * d[0];
                int64_t ix = ox * s[1] - p[1] + kx * d[1];
                if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w)
                    continue;
                int64_t c = g * cg + ci;
                acc += (double)x[((n * k->c + c) * k->h + iy) * k->w + ix] *
                       w[((o * cg + ci) * k->kh + ky) * k->kw + kx];
            }
    return acc;
}

static void check_conv(int line, conv_case k)
{
    int64_t s[2], d[2], p[4];
    conv_pair(&k.stride, 1, s);
    conv_pair(&k.dilation, 1, d);
    conv_pad4(&k.padding, p);
    int64_t oh = (k.h + p[0] + p[2] - d[0] * (k.kh - 1) - 1) / s[0] + 1;
    int64_t ow = (k.w + p[1] + p[3] - d[1] * (k.kw - 1) - 1) / s[1] + 1;
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(k.n, k.c, k.h, k.w), (uint64_t)line, -1.0f, 1.0f);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(k.o, k.c / k.groups, k.kh, k.kw),
                                         (uint64_t)line + 1, -1.0f, 1.0f);
    eager_tensor *b = k.bias ? eager_rand_uniform(TG_SHAPE(k.o), (uint64_t)line + 2, -1.0f, 1.0f)
                             : EAGER_NONE;
    eager_tensor *y = eager_conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups);
    int ok = y && eager_ndim(y) == 4 && eager_dim(y, 0) == k.n && eager_dim(y, 1) == k.o &&
             eager_dim(y, 2) == oh && eager_dim(y, 3) == ow;
    check_report(ok, __FILE__, line, "conv2d shape [%lld,%lld,%lld,%lld]", (long long)k.n,
                 (long long)k.o, (long long)oh, (long long)ow);
    int64_t total = k.n * k.o * oh * ow;
    float *want = malloc((size_t)(total + 1) * sizeof *want);
    const float *px = eager_peek(x), *pw = eager_peek(w);
    const float *pb = k.bias ? eager_peek(b) : NULL;
    for (int64_t n = 0, i = 0; n < k.n; n++)
        for (int64_t o = 0; o < k.o; o++)
            for (int64_t yy = 0; yy < oh; yy++)
                for (int64_t xx = 0; xx < ow; xx++, i++)
                    want[i] = (float)((pb ? pb[o] : 0.0) +
                                      conv_at(&k, px, pw, s, d, p, n, o, yy, xx));
    if (ok)
        check_floats(eager_peek(y), want, total, 1e-4, __FILE__, line, "conv2d");
    free(want);
    eager_pool_pop();
}

#define NO TG_NOINTS

static void test_values(void)
{
    check_conv(__LINE__, (conv_case){2, 3, 8, 8, 4, 3, 3, TG_INTS(1), TG_INTS(1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){2, 3, 9, 8, 5, 3, 3, TG_INTS(2), NO, NO, 1, 0});
    check_conv(__LINE__, (conv_case){1, 3, 7, 9, 4, 3, 3, TG_INTS(2, 1), TG_INTS(1, 0, 2, 1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){1, 2, 10, 11, 3, 3, 3, NO, TG_INTS(2), TG_INTS(2), 1, 1});
    check_conv(__LINE__, (conv_case){1, 2, 10, 11, 3, 3, 2, TG_INTS(1, 2), TG_INTS(1, 2), TG_INTS(2, 1), 1, 0});
    check_conv(__LINE__, (conv_case){1, 4, 7, 7, 6, 3, 3, NO, TG_INTS(1), NO, 2, 1});
    check_conv(__LINE__, (conv_case){2, 8, 9, 9, 8, 3, 3, TG_INTS(2), TG_INTS(1), NO, 8, 1});
    check_conv(__LINE__, (conv_case){1, 8, 9, 9, 16, 3, 3, NO, TG_INTS(1), NO, 8, 0}); /* multiplier 2 */
    check_conv(__LINE__, (conv_case){2, 16, 5, 5, 8, 1, 1, NO, NO, NO, 1, 1});
    check_conv(__LINE__, (conv_case){2, 16, 5, 5, 8, 1, 1, TG_INTS(2), NO, NO, 1, 0});
    check_conv(__LINE__, (conv_case){1, 1, 1, 1, 1, 1, 1, NO, NO, NO, 1, 1});
    check_conv(__LINE__, (conv_case){1, 3, 5, 5, 2, 5, 5, NO, NO, NO, 1, 1}); /* 1x1 out */
    check_conv(__LINE__, (conv_case){1, 3, 20, 24, 8, 7, 7, TG_INTS(2), TG_INTS(3), NO, 1, 1});
    check_conv(__LINE__, (conv_case){1, 64, 56, 56, 64, 3, 3, NO, TG_INTS(1), NO, 1, 1});
    /* empty: no batch, no output channels, no input channels / rows */
    check_conv(__LINE__, (conv_case){0, 3, 8, 8, 4, 3, 3, NO, TG_INTS(1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){1, 3, 8, 8, 0, 3, 3, NO, TG_INTS(1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){2, 0, 4, 4, 3, 3, 3, NO, TG_INTS(1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){1, 2, 0, 3, 3, 1, 1, NO, TG_INTS(1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){1, 2, 0, 3, 3, 1, 1, NO, TG_INTS(1), NO, 1, 0});
}

static void test_threads(void)
{
    eager_set_threads(2);
    check_conv(__LINE__, (conv_case){2, 16, 30, 30, 32, 3, 3, TG_INTS(1), TG_INTS(1), NO, 1, 1});
    check_conv(__LINE__, (conv_case){2, 32, 20, 20, 32, 3, 3, TG_INTS(2), TG_INTS(1), NO, 32, 1});
    check_conv(__LINE__, (conv_case){2, 8, 20, 20, 8, 3, 3, NO, TG_INTS(2), TG_INTS(2), 2, 0});
    eager_set_threads(1);
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(1, 4, 5, 5));
    eager_tensor *x3 = eager_zeros(GRAPH_F32, TG_SHAPE(4, 5, 5));
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(6, 4, 3, 3));
    eager_tensor *w2 = eager_zeros(GRAPH_F32, TG_SHAPE(6, 2, 3, 3));
    eager_tensor *w3 = eager_zeros(GRAPH_F32, TG_SHAPE(6, 4, 3));
    eager_tensor *w7 = eager_zeros(GRAPH_F32, TG_SHAPE(6, 4, 7, 3));
    eager_tensor *w0 = eager_zeros(GRAPH_F32, TG_SHAPE(6, 4, 0, 3));
    eager_tensor *wi = eager_zeros(GRAPH_I32, TG_SHAPE(6, 4, 3, 3));
    eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(6));
    eager_tensor *b5 = eager_zeros(GRAPH_F32, TG_SHAPE(5));
    long live = eager_live_tensors();
    CHECK_FAILS(eager_conv2d(x3, w, b, NO, NO, NO, 1),
                 "conv2d: [4,5,5] x [6,4,3,3] x [6]: x must be 4-D [N,C,H,W], got 3-D");
    CHECK_FAILS(eager_conv2d(x, w3, b, NO, NO, NO, 1), "w must be 4-D [O,C/groups,kh,kw], got 3-D");
    CHECK_FAILS(eager_conv2d(x, wi, b, NO, NO, NO, 1), "w has dtype i32, want f32");
    CHECK_FAILS(eager_conv2d(x, w, b5, NO, NO, NO, 1), "b has 5 entries, want 6 (output channels)");
    CHECK_FAILS(eager_conv2d(x, w, w, NO, NO, NO, 1), "b must be 1-D [O], got 4-D");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, NO, 0), "groups must be >= 1, got 0");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, NO, -2), "groups must be >= 1, got -2");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, NO, 3),
                 "groups 3 must divide the input channels 4 and the output channels 6");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, NO, 2),
                 "w has 4 input channels per group, want 2 (C 4 / groups 2)");
    CHECK_FAILS(eager_conv2d(x, w2, b, NO, NO, NO, 1),
                 "w has 2 input channels per group, want 4 (C 4 / groups 1)");
    CHECK_FAILS(eager_conv2d(x, w0, b, NO, NO, NO, 1), "kernel size 0x3 must be >= 1");
    CHECK_FAILS(eager_conv2d(x, w, b, TG_INTS(1, 1, 1), NO, NO, 1), "stride takes 0, 1 or 2 entries, got 3");
    CHECK_FAILS(eager_conv2d(x, w, b, TG_INTS(1, 0), NO, NO, 1), "stride must be >= 1, got [1,0]");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, TG_INTS(0), 1), "dilation must be >= 1, got [0]");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, TG_INTS(1, 1, 1), NO, 1),
                 "padding takes 0, 1, 2 or 4 entries, got 3");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, TG_INTS(1, -1), NO, 1), "padding must be >= 0, got [1,-1]");
    CHECK_FAILS(eager_conv2d(x, w7, b, NO, NO, NO, 1),
                 "output size -1x3 <= 0: padded input 5x5 is smaller than the effective kernel 7x3");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, TG_INTS(3), 1),
                 "output size -1x-1 <= 0: padded input 5x5 is smaller than the effective kernel 7x7");
    CHECK_FAILS(eager_conv2d(x, w, b, TG_INTS(2), TG_INTS(0, 0, 1, 0), TG_INTS(3), 1),
                 "output size 0x0 <= 0: padded input 6x5 is smaller than the effective kernel 7x7");
    CHECK_FAILS(eager_conv2d(x, w, b, NO, NO, TG_INTS(INT64_MAX / 2 + 1), 1), "sizes overflow int64");
    CHECK_FAILS(eager_conv2d(x, EAGER_NONE, b, NO, NO, NO, 1), "input 1 is EAGER_NONE");
    CHECK_FAILS(eager_conv2d(x, w, NULL, NO, NO, NO, 1), "conv2d: input 2 is NULL");
    CHECK_MSG(eager_live_tensors() == live, "errors leaked %ld tensors", eager_live_tensors() - live);
    eager_pool_pop();
}

/*
 * A kernel called directly with types that infer would reject (the output
 * size is wrong): oneDNN refuses the descriptor, and the kernel reports
 * TG_ERR_BACKEND with oneDNN's reason instead of crashing.
 */
static void test_backend_error(void)
{
    graph_type in[2] = {{GRAPH_F32, 4, {1, 4, 5, 5}}, {GRAPH_F32, 4, {6, 4, 3, 3}}};
    graph_type out = {GRAPH_F32, 4, {1, 6, 9, 9}};
    static float x[100], w[216], y[486];
    const void *ins[2] = {x, w};
    void *outs[1] = {y};
    graph_conv2d_attrs at;
    graph_attrs_default(GRAPH_OP_conv2d, &at);
    char err[256] = "";
    eager_kargs ka = {in, ins, 2, &at, &out, outs, 1, 1, err, sizeof err};
    CHECK(eager_kernels[GRAPH_OP_conv2d](&ka) == TG_ERR_BACKEND);
    CHECK_MSG(strstr(err, "oneDNN convolution descriptor failed: invalid arguments") != NULL,
              "err \"%s\"", err);
}

int main(void)
{
    long live = eager_live_tensors();
    test_values();
    test_threads();
    test_errors();
    test_backend_error();
    CHECK(eager_status() == TG_OK);
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
