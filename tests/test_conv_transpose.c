/*
 * test_conv_transpose.c - conv_transpose2d against a naive reference
 * written here in the scatter form (every input element times every
 * kernel tap added where it lands, in double), which shares nothing with
 * the gather the kernels do: strides 1 to 3, symmetric and asymmetric
 * padding (padding larger than the kernel too), output_padding up to
 * the stride and, with dilation, past it (rows no input reaches), groups
 * 1, 2, 4 and depthwise, 1x1 kernels (with gaps between the taps), with
 * and without bias, batches, empty inputs and outputs, two threads.
 * Then every validation error with its exact message, a oneDNN refusal
 * reported as TG_ERR_BACKEND, and the op through the rest of the system:
 * a traced decoder block (conv_transpose2d -> batch_norm -> relu ->
 * conv2d -> grouped conv_transpose2d, dynamic batch) optimized at -O3,
 * printed and parsed as text IR, saved and loaded as .tgraph and as
 * ONNX, and replayed on the CPU at two batches, each against eager.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv_ref_util.h"
#include "cpu_caps.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "eager/kernel.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/text.h"
#include "graph_query.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

typedef struct dc_case {
    int64_t n, c, h, w, o, kh, kw; /* x [n,c,h,w], w [c,o/groups,kh,kw] */
    graph_ints stride, padding, output_padding, dilation;
    int64_t groups;
    int bias;
} dc_case;

/*
 * The reference: y starts as the bias; each input element (n, c, iy, ix)
 * adds x * w[c][j][ky][kx] to output channel (group of c) * O/groups + j
 * at row iy*s - pad_top + ky*d and column ix*s - pad_left + kx*d, when
 * that is inside y.
 */
static void deconv_ref(const dc_case *k, const float *x, const float *w, const float *b,
                       const int64_t s[2], const int64_t d[2], const int64_t p[4],
                       int64_t oh, int64_t ow, double *y)
{
    int64_t cg = k->c / k->groups, og = k->o / k->groups, plane = oh * ow;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t i = 0; i < plane; i++)
                y[(n * k->o + o) * plane + i] = b ? b[o] : 0.0;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t c = 0; c < k->c; c++)
            for (int64_t iy = 0; iy < k->h; iy++)
                for (int64_t ix = 0; ix < k->w; ix++) {
                    double xv = x[((n * k->c + c) * k->h + iy) * k->w + ix];
                    int64_t g = c / cg;
                    for (int64_t j = 0; j < og; j++)
                        for (int64_t ky = 0; ky < k->kh; ky++)
                            for (int64_t kx = 0; kx < k->kw; kx++) {
                                int64_t yy = iy * s[0] - p[0] + ky * d[0];
                                int64_t xx = ix * s[1] - p[1] + kx * d[1];
                                if (yy < 0 || yy >= oh || xx < 0 || xx >= ow)
                                    continue;
                                y[((n * k->o + g * og + j) * oh + yy) * ow + xx] +=
                                    xv * w[((c * og + j) * k->kh + ky) * k->kw + kx];
                            }
                }
}

static void check_deconv(int line, dc_case k)
{
    int64_t s[2], d[2], op[2], p[4];
    conv_pair(&k.stride, 1, s);
    conv_pair(&k.dilation, 1, d);
    conv_pair(&k.output_padding, 0, op);
    conv_pad4(&k.padding, p);
    int64_t oh = s[0] * (k.h - 1) + op[0] + d[0] * (k.kh - 1) + 1 - p[0] - p[2];
    int64_t ow = s[1] * (k.w - 1) + op[1] + d[1] * (k.kw - 1) + 1 - p[1] - p[3];
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(k.n, k.c, k.h, k.w), (uint64_t)line, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(k.c, k.o / k.groups, k.kh, k.kw),
                                         (uint64_t)line + 1, -1, 1);
    eager_tensor *b = k.bias ? eager_rand_uniform(TG_SHAPE(k.o), (uint64_t)line + 2, -1, 1)
                             : EAGER_NONE;
    eager_tensor *y = eager_conv_transpose2d(x, w, b, k.stride, k.padding, k.output_padding,
                                             k.dilation, k.groups);
    int ok = y && eager_ndim(y) == 4 && eager_dim(y, 0) == k.n && eager_dim(y, 1) == k.o &&
             eager_dim(y, 2) == oh && eager_dim(y, 3) == ow;
    check_report(ok, __FILE__, line, "conv_transpose2d shape [%lld,%lld,%lld,%lld]: %s",
                 (long long)k.n, (long long)k.o, (long long)oh, (long long)ow,
                 y ? "other shape" : eager_error());
    eager_clear_error();
    int64_t total = k.n * k.o * oh * ow;
    double *ref = malloc((size_t)(total + 1) * sizeof *ref);
    float *want = malloc((size_t)(total + 1) * sizeof *want);
    deconv_ref(&k, eager_peek(x), eager_peek(w), k.bias ? eager_peek(b) : NULL, s, d, p, oh,
               ow, ref);
    for (int64_t i = 0; i < total; i++)
        want[i] = (float)ref[i];
    if (ok)
        check_floats(eager_peek(y), want, total, 1e-4, __FILE__, line, "conv_transpose2d");
    free(ref);
    free(want);
    eager_pool_pop();
}

#define NO TG_NOINTS

static void test_values(void)
{
    /* ONNX's first example: stride 1, no padding */
    check_deconv(__LINE__, (dc_case){1, 1, 3, 3, 2, 3, 3, NO, NO, NO, NO, 1, 0});
    /* the U-Net upsampler: stride 2, padding 1, output_padding 1 (end pad 0) */
    check_deconv(__LINE__, (dc_case){2, 4, 5, 6, 3, 3, 3, TG_INTS(2), TG_INTS(1), TG_INTS(1), NO, 1, 1});
    /* kernel 2 stride 2, and kernel 4 stride 2 padding 1 (GAN decoders) */
    check_deconv(__LINE__, (dc_case){3, 8, 4, 4, 4, 2, 2, TG_INTS(2), NO, NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){2, 6, 4, 5, 5, 4, 4, TG_INTS(2), TG_INTS(1), NO, NO, 1, 0});
    /* stride 3x2, asymmetric padding, output_padding (2, 1): end pads -1 and 0 */
    check_deconv(__LINE__, (dc_case){1, 3, 4, 5, 2, 3, 3, TG_INTS(3, 2), TG_INTS(1, 0, 1, 1),
                                     TG_INTS(2, 1), NO, 1, 1});
    check_deconv(__LINE__, (dc_case){2, 2, 3, 3, 2, 3, 2, TG_INTS(3), TG_INTS(0, 2, 1, 0), NO,
                                     NO, 1, 0});
    /* ONNX's pads example, and padding past the kernel */
    check_deconv(__LINE__, (dc_case){1, 1, 3, 3, 2, 3, 3, TG_INTS(3, 2), TG_INTS(1, 2), NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){1, 2, 8, 7, 3, 3, 3, NO, TG_INTS(3, 2, 3, 4), NO, NO, 1, 1});
    /* dilation 2, stride 2 */
    check_deconv(__LINE__, (dc_case){2, 3, 4, 4, 4, 3, 3, TG_INTS(2), TG_INTS(1), TG_INTS(1),
                                     TG_INTS(2), 1, 1});
    /* output_padding at or past the stride (allowed below the dilation):
     * end padding past what oneDNN takes, rows no input reaches */
    check_deconv(__LINE__, (dc_case){1, 2, 4, 5, 3, 2, 3, NO, NO, TG_INTS(1, 2), TG_INTS(2, 3), 1, 1});
    check_deconv(__LINE__, (dc_case){2, 2, 3, 3, 2, 2, 2, TG_INTS(2), TG_INTS(0, 0, 1, 0),
                                     TG_INTS(3, 2), TG_INTS(4), 1, 0});
    check_deconv(__LINE__, (dc_case){1, 2, 3, 4, 2, 3, 3, NO, TG_INTS(1, 1, 0, 0), TG_INTS(1),
                                     TG_INTS(2), 1, 1});
    /* every row out of reach: a 1x1 kernel, output_padding 3 < dilation 5 */
    check_deconv(__LINE__, (dc_case){1, 2, 1, 1, 2, 1, 1, NO, TG_INTS(1, 1, 0, 0), TG_INTS(3),
                                     TG_INTS(5), 1, 1});
    /* groups 2 and 4, depthwise, channel multiplier 3 */
    check_deconv(__LINE__, (dc_case){2, 4, 5, 5, 6, 3, 3, TG_INTS(2), TG_INTS(1), TG_INTS(1), NO, 2, 1});
    check_deconv(__LINE__, (dc_case){1, 8, 4, 6, 8, 3, 2, TG_INTS(1, 2), TG_INTS(0, 1), NO,
                                     TG_INTS(2, 1), 4, 0});
    check_deconv(__LINE__, (dc_case){2, 8, 5, 5, 8, 3, 3, TG_INTS(2), TG_INTS(1), TG_INTS(1), NO, 8, 1});
    check_deconv(__LINE__, (dc_case){1, 4, 5, 4, 12, 2, 2, TG_INTS(2), NO, NO, NO, 4, 1});
    /* 1x1 kernels: stride 1, and stride 2 with gaps holding only the bias */
    check_deconv(__LINE__, (dc_case){2, 16, 5, 5, 8, 1, 1, NO, NO, NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){2, 6, 4, 3, 4, 1, 1, TG_INTS(2), NO, TG_INTS(1), NO, 1, 1});
    check_deconv(__LINE__, (dc_case){1, 1, 1, 1, 1, 1, 1, NO, NO, NO, NO, 1, 1});
    /* bigger: 64 -> 32 channels, 14x14 -> 28x28 */
    check_deconv(__LINE__, (dc_case){2, 64, 14, 14, 32, 3, 3, TG_INTS(2), TG_INTS(1), TG_INTS(1),
                                     NO, 1, 1});
    /* empty: no batch, no output channels, no input channels, no input rows */
    check_deconv(__LINE__, (dc_case){0, 3, 4, 4, 2, 3, 3, TG_INTS(2), NO, NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){1, 3, 4, 4, 0, 3, 3, NO, NO, NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){2, 0, 4, 4, 3, 3, 3, NO, NO, NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){1, 2, 0, 3, 3, 3, 1, NO, NO, NO, NO, 1, 1});
    check_deconv(__LINE__, (dc_case){1, 2, 0, 3, 3, 3, 1, NO, NO, NO, NO, 1, 0});
}

static void test_threads(void)
{
    eager_set_threads(2);
    check_deconv(__LINE__, (dc_case){2, 32, 12, 12, 16, 3, 3, TG_INTS(2), TG_INTS(1), TG_INTS(1),
                                     NO, 1, 1});
    check_deconv(__LINE__, (dc_case){2, 16, 8, 8, 16, 4, 4, TG_INTS(2), TG_INTS(1), NO, NO, 4, 0});
    check_deconv(__LINE__, (dc_case){1, 4, 6, 6, 4, 3, 3, NO, NO, TG_INTS(1), TG_INTS(2), 2, 1});
    eager_set_threads(1);
}

#define CT eager_conv_transpose2d

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(1, 4, 5, 5));
    eager_tensor *x3 = eager_zeros(GRAPH_F32, TG_SHAPE(4, 5, 5));
    eager_tensor *x0 = eager_zeros(GRAPH_F32, TG_SHAPE(1, 0, 5, 5));
    eager_tensor *w = eager_zeros(GRAPH_F32, TG_SHAPE(4, 3, 3, 3));
    eager_tensor *w6 = eager_zeros(GRAPH_F32, TG_SHAPE(6, 3, 3, 3));
    eager_tensor *w3 = eager_zeros(GRAPH_F32, TG_SHAPE(4, 3, 3));
    eager_tensor *w0 = eager_zeros(GRAPH_F32, TG_SHAPE(4, 3, 0, 3));
    eager_tensor *wc0 = eager_zeros(GRAPH_F32, TG_SHAPE(0, 3, 3, 3));
    eager_tensor *wi = eager_zeros(GRAPH_I32, TG_SHAPE(4, 3, 3, 3));
    eager_tensor *b = eager_zeros(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *b5 = eager_zeros(GRAPH_F32, TG_SHAPE(5));
    eager_tensor *bi = eager_zeros(GRAPH_I64, TG_SHAPE(3));
    long live = eager_live_tensors();
    CHECK_FAILS(CT(x3, w, b, NO, NO, NO, NO, 1),
                "conv_transpose2d: [4,5,5] x [4,3,3,3] x [3]: x must be 4-D [N,C,H,W], got 3-D");
    CHECK_FAILS(CT(x, w3, b, NO, NO, NO, NO, 1), "w must be 4-D [C,O/groups,kh,kw], got 3-D");
    CHECK_FAILS(CT(x, wi, b, NO, NO, NO, NO, 1), "w has dtype i32, want f32");
    CHECK_FAILS(CT(x, w, bi, NO, NO, NO, NO, 1), "b has dtype i64, want f32");
    CHECK_FAILS(CT(x, w, w, NO, NO, NO, NO, 1), "b must be 1-D [O], got 4-D");
    CHECK_FAILS(CT(x, w, b, NO, NO, NO, NO, 0), "groups must be >= 1, got 0");
    CHECK_FAILS(CT(x, w, b, NO, NO, NO, NO, -2), "groups must be >= 1, got -2");
    CHECK_FAILS(CT(x, w6, b, NO, NO, NO, NO, 1),
                "w has 6 input channels, want 4 (the channels of x)");
    CHECK_FAILS(CT(x, w, b, NO, NO, NO, NO, 3), "groups 3 must divide the input channels 4");
    CHECK_FAILS(CT(x, w0, b, NO, NO, NO, NO, 1), "kernel size 0x3 must be >= 1");
    CHECK_FAILS(CT(x, w, b5, NO, NO, NO, NO, 1),
                "b has 5 entries, want 3 (output channels: 3 per group x groups 1)");
    CHECK_FAILS(CT(x, w, b, NO, NO, NO, NO, 2),
                "b has 3 entries, want 6 (output channels: 3 per group x groups 2)");
    CHECK_FAILS(CT(x0, wc0, b, NO, NO, NO, NO, INT64_MAX / 2), "sizes overflow int64");
    CHECK_FAILS(CT(x, w, b, TG_INTS(1, 1, 1), NO, NO, NO, 1),
                "stride takes 0, 1 or 2 entries, got 3");
    CHECK_FAILS(CT(x, w, b, TG_INTS(1, 0), NO, NO, NO, 1), "stride must be >= 1, got [1,0]");
    CHECK_FAILS(CT(x, w, b, NO, NO, NO, TG_INTS(0), 1), "dilation must be >= 1, got [0]");
    CHECK_FAILS(CT(x, w, b, NO, TG_INTS(1, 1, 1), NO, NO, 1),
                "padding takes 0, 1, 2 or 4 entries, got 3");
    CHECK_FAILS(CT(x, w, b, NO, TG_INTS(1, -1), NO, NO, 1), "padding must be >= 0, got [1,-1]");
    CHECK_FAILS(CT(x, w, b, TG_INTS(2), NO, TG_INTS(1, 1, 1), NO, 1),
                "output_padding takes 0, 1 or 2 entries, got 3");
    CHECK_FAILS(CT(x, w, b, TG_INTS(2), NO, TG_INTS(-1), NO, 1),
                "output_padding must be >= 0, got [-1]");
    CHECK_FAILS(CT(x, w, b, TG_INTS(2), NO, TG_INTS(2, 1), NO, 1),
                "output_padding 2 (h) must be smaller than the stride 2 or the dilation 1");
    CHECK_FAILS(CT(x, w, b, TG_INTS(2, 1), NO, TG_INTS(1), TG_INTS(1, 1), 1),
                "output_padding 1 (w) must be smaller than the stride 1 or the dilation 1");
    CHECK_FAILS(CT(x, w, b, NO, NO, TG_INTS(1), NO, 1),
                "output_padding 1 (h) must be smaller than the stride 1 or the dilation 1");
    /* 5 rows spread over 7; padding 3+4 leaves none */
    CHECK_FAILS(CT(x, w, b, NO, TG_INTS(3, 0, 4, 0), NO, NO, 1),
                "output size 0x7 <= 0: 7x7 (stride*(in-1) + output_padding + effective kernel) "
                "less padding 3+4 x 0+0");
    CHECK_FAILS(CT(x, w, b, TG_INTS(2), TG_INTS(1, 9), TG_INTS(1), NO, 1),
                "output size 10x-6 <= 0: 12x12 (stride*(in-1) + output_padding + effective "
                "kernel) less padding 1+1 x 9+9");
    CHECK_FAILS(CT(x, w, b, TG_INTS(INT64_MAX / 2 + 1), NO, NO, NO, 1), "sizes overflow int64");
    CHECK_FAILS(CT(x, w, b, NO, NO, NO, TG_INTS(INT64_MAX / 2 + 1), 1), "sizes overflow int64");
    CHECK_FAILS(CT(x, EAGER_NONE, b, NO, NO, NO, NO, 1), "input 1 is EAGER_NONE");
    CHECK_FAILS(CT(x, w, NULL, NO, NO, NO, NO, 1), "conv_transpose2d: input 2 is NULL");
    CHECK_MSG(eager_live_tensors() == live, "errors leaked %ld tensors",
              eager_live_tensors() - live);
    eager_pool_pop();
}

/*
 * The kernel called directly with an output size that inference would
 * reject: oneDNN refuses the descriptor and the kernel reports
 * TG_ERR_BACKEND with oneDNN's reason instead of crashing.
 */
static void test_backend_error(void)
{
    graph_type in[2] = {{GRAPH_F32, 4, {1, 4, 5, 5}}, {GRAPH_F32, 4, {4, 6, 3, 3}}};
    graph_type out = {GRAPH_F32, 4, {1, 6, 9, 9}};
    static float x[100], w[216], y[486];
    const void *ins[2] = {x, w};
    void *outs[1] = {y};
    graph_conv_transpose2d_attrs at;
    graph_attrs_default(GRAPH_OP_conv_transpose2d, &at);
    char err[256] = "";
    eager_kargs ka = {in, ins, 2, &at, &out, outs, 1, 1, err, sizeof err};
    CHECK(eager_kernels[GRAPH_OP_conv_transpose2d](&ka) == TG_ERR_BACKEND);
    CHECK_MSG(strstr(err, "oneDNN deconvolution descriptor failed: invalid arguments") != NULL,
              "err \"%s\"", err);
}

/* ---- the op in graphs ---- */

/* Parameters of the decoder block. */
typedef struct block {
    eager_tensor *w1, *b1, *scale, *shift, *mean, *var, *w2, *b2, *w3;
} block;

static block block_make(void)
{
    block k;
    k.w1 = eager_rand_uniform(TG_SHAPE(16, 16, 3, 3), 11, -0.3f, 0.3f);
    k.b1 = eager_rand_uniform(TG_SHAPE(16), 12, -0.5f, 0.5f);
    k.scale = eager_rand_uniform(TG_SHAPE(16), 13, 0.5f, 1.5f);
    k.shift = eager_rand_uniform(TG_SHAPE(16), 14, -0.5f, 0.5f);
    k.mean = eager_rand_uniform(TG_SHAPE(16), 15, -0.2f, 0.2f);
    k.var = eager_rand_uniform(TG_SHAPE(16), 16, 0.5f, 2.0f);
    k.w2 = eager_rand_uniform(TG_SHAPE(16, 16, 3, 3), 17, -0.2f, 0.2f);
    k.b2 = eager_rand_uniform(TG_SHAPE(16), 18, -0.5f, 0.5f);
    k.w3 = eager_rand_uniform(TG_SHAPE(16, 2, 2, 2), 19, -0.5f, 0.5f);
    return k;
}

/*
 * x [B,16,5,5] -> conv_transpose2d 3x3 stride 2 padding 1 output_padding 1
 * -> batch_norm -> relu -> conv2d 3x3 -> conv_transpose2d 2x2 stride 2
 * groups 4 (16 -> 8 channels) -> [B,8,20,20].  At -O3 the batch_norm
 * after the transposed convolution folds into its weights and bias (as
 * into a conv2d's); the relu is not fused into it as an epilogue.
 */
static eager_tensor *block_run(const block *k, eager_tensor *x)
{
    eager_tensor *y = eager_conv_transpose2d(x, k->w1, k->b1, TG_INTS(2), TG_INTS(1),
                                             TG_INTS(1), NO, 1);
    y = eager_relu(eager_batch_norm(y, k->scale, k->shift, k->mean, k->var, 1e-5f));
    y = eager_conv2d(y, k->w2, k->b2, NO, TG_INTS(1), NO, 1);
    return eager_conv_transpose2d(y, k->w3, EAGER_NONE, TG_INTS(2), NO, NO, NO, 4);
}

static graph *block_trace(const block *k)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 16, 5, 5), 1, -1, 1);
    CHECK(trace_begin(NULL) == TG_OK);
    CHECK(trace_input(x, "x") == TG_OK);
    CHECK(trace_dynamic(x, 0, "B") == TG_OK);
    eager_tensor *const params[] = {k->w1, k->b1, k->scale, k->shift, k->mean,
                                    k->var, k->w2,  k->b2,    k->w3};
    static const char *const names[] = {"w1", "b1", "scale", "shift", "mean",
                                        "var", "w2", "b2",   "w3"};
    for (int i = 0; i < 9; i++)
        CHECK(trace_param(params[i], names[i]) == TG_OK);
    CHECK(trace_output(block_run(k, x), "y") == TG_OK);
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    eager_clear_error();
    eager_pool_pop();
    return g;
}

static int same_type(const graph_type *a, const graph_type *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dim[i] != b->dim[i])
            return 0;
    return 1;
}

/* g's output on x (interpreter) against want, by normalized error. */
static void check_interp(const graph *g, eager_tensor *x, const eager_tensor *want,
                         const char *what)
{
    eager_tensor *y = NULL;
    tg_status st = eager_interpret(g, &x, 1, &y, 1, NULL);
    CHECK_MSG(st == TG_OK, "%s runs: %s", what, eager_error());
    eager_clear_error();
    if (st == TG_OK)
        CHECK_MSG(same_type(eager_type(y), eager_type(want)) &&
                      check_normalized_error(eager_peek(y), eager_peek(want),
                                             eager_numel(want)) <= 1e-4,
                  "%s matches eager", what);
    eager_release(y);
}

/* Text IR, .tgraph and ONNX round trips of the traced graph. */
static void test_round_trips(const block *k, const graph *g, eager_tensor *x,
                             const eager_tensor *want)
{
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    po.provenance = 0, po.comments = 0, po.inline_all = 1; /* the params' data too */
    char *text = graph_print_str(g, &po, NULL);
    CHECK(text && strstr(text, "conv_transpose2d(%x, %w1, %b1) {stride=[2], padding=[1], "
                               "output_padding=[1]}") &&
          strstr(text, "stride=[2], groups=4}"));
    char err[512] = "";
    graph *h = text ? graph_parse(text, strlen(text), err, sizeof err) : NULL;
    CHECK_MSG(h != NULL, "IR parses: %s", err);
    if (h)
        check_interp(h, x, want, "text IR");
    void *buf = NULL;
    size_t len = 0;
    CHECK_MSG(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK, "save: %s", err);
    graph *f = buf ? format_load_mem(buf, len, "block.tgraph", err, sizeof err) : NULL;
    CHECK_MSG(f != NULL, "load: %s", err);
    if (f)
        check_interp(f, x, want, ".tgraph");
    free(buf);
    buf = NULL;
    CHECK_MSG(format_onnx_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK,
              "ONNX export: %s", err);
    graph *on = buf ? format_onnx_load_mem(buf, len, "block.onnx", NULL, err, sizeof err) : NULL;
    CHECK_MSG(on != NULL, "ONNX import: %s", err);
    int32_t i = on ? find_op(on, GRAPH_OP_conv_transpose2d) : -1;
    const graph_conv_transpose2d_attrs *a = i >= 0 ? tg_node_attrs(&on->nodes[i]) : NULL;
    CHECK(a && a->stride.n == 2 && a->stride.v[0] == 2 && a->padding.n == 4 &&
          a->padding.v[3] == 1 && a->output_padding.n == 2 && a->output_padding.v[1] == 1 &&
          a->groups == 1);
    if (on)
        check_interp(on, x, want, "ONNX");
    (void)k;
    free(buf);
    free(text);
    graph_free(h), graph_free(f), graph_free(on);
}

/* Replays g on the CPU at x's batch, twice (prepared state kept). */
static void check_replay(const graph *g, eager_tensor *x, const eager_tensor *want)
{
    char err[512] = "";
    replay_opts ro = {.threads = 1};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    CHECK_MSG(p != NULL, "replay compiles: %s", err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    for (int run = 0; s && run < 2; run++) {
        replay_tensor in = {.name = "x", .type = *eager_type(x), .input = eager_peek(x)}, out;
        memset(&out, 0, sizeof out);
        tg_status st = replay_run(s, &in, 1, &out, 1);
        CHECK_MSG(st == TG_OK, "replay runs: %s", replay_session_error(s));
        if (st == TG_OK)
            CHECK_MSG(same_type(&out.type, eager_type(want)) &&
                          check_normalized_error(out.data, eager_peek(want),
                                                 eager_numel(want)) <= 1e-4,
                      "replay run %d at batch %lld matches eager", run,
                      (long long)eager_dim(x, 0));
    }
    replay_session_free(s);
    replay_plan_free(p);
}

static void test_graphs(void)
{
    eager_pool_push();
    block k = block_make();
    graph *g = block_trace(&k);
    eager_tensor *x2 = eager_rand_uniform(TG_SHAPE(2, 16, 5, 5), 2, -1, 1);
    eager_tensor *x3 = eager_rand_uniform(TG_SHAPE(3, 16, 5, 5), 3, -1, 1);
    eager_tensor *want2 = block_run(&k, x2), *want3 = block_run(&k, x3);
    CHECK(want2 && eager_dim(want2, 1) == 8 && eager_dim(want2, 2) == 20);
    if (g && want2 && want3) {
        CHECK(count_op(g, GRAPH_OP_conv_transpose2d) == 2);
        check_interp(g, x3, want3, "traced graph at batch 3");
        test_round_trips(&k, g, x2, want2);
        /* -O3: the batch_norm folds into the first transposed conv, the
         * conv2d goes blocked; both transposed convs stay */
        opt_options o = opt_default_options();
        o.level = 3;
        char err[512] = "";
        CHECK_MSG(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O3: %s", err);
        CHECK(count_op(g, GRAPH_OP_conv_transpose2d) == 2);
        CHECK(count_op(g, GRAPH_OP_batch_norm) == 0);
        CHECK(count_op(g, GRAPH_OP_conv2d_blk) == (test_blocked_convs() ? 1 : 0));
        check_interp(g, x2, want2, "-O3");
        check_interp(g, x3, want3, "-O3 at batch 3");
        check_replay(g, x2, want2);
        check_replay(g, x3, want3);
    }
    graph_free(g);
    eager_pool_pop();
}

/*
 * batch_norm folded into a grouped conv_transpose2d (-O2): output channel
 * c = g O/groups + j scales w[i, j] for the input channels i of group g.
 * Each channel gets its own factor, so a wrong slice shows.  Without a
 * bias and with one.
 */
static void test_bn_fold(void)
{
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        eager_pool_push();
        /* x [1,6,3,4], w [6, 4/2... ]: C_in 6, groups 3, O/groups 2 -> O = 6 */
        eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 6, 3, 4), 40, -1, 1);
        eager_tensor *w = eager_rand_uniform(TG_SHAPE(6, 2, 3, 2), 41, -0.5f, 0.5f);
        eager_tensor *b = with_bias ? eager_rand_uniform(TG_SHAPE(6), 42, -0.5f, 0.5f)
                                    : EAGER_NONE;
        eager_tensor *scale = eager_rand_uniform(TG_SHAPE(6), 43, 0.5f, 2.0f);
        eager_tensor *shift = eager_rand_uniform(TG_SHAPE(6), 44, -1, 1);
        eager_tensor *mean = eager_rand_uniform(TG_SHAPE(6), 45, -0.5f, 0.5f);
        eager_tensor *var = eager_rand_uniform(TG_SHAPE(6), 46, 0.25f, 2.0f);
        CHECK(trace_begin(NULL) == TG_OK);
        CHECK(trace_input(x, "x") == TG_OK);
        eager_tensor *y = eager_conv_transpose2d(x, w, b, TG_INTS(2, 1), TG_INTS(1, 0, 0, 1),
                                                 TG_INTS(1, 0), NO, 3);
        y = eager_batch_norm(y, scale, shift, mean, var, 1e-5f);
        CHECK(trace_output(y, "y") == TG_OK);
        graph *g = trace_freeze();
        CHECK(g != NULL);
        opt_options o = opt_default_options();
        o.level = 2;
        char err[512] = "";
        CHECK_MSG(g && opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK, "-O2: %s", err);
        if (g) {
            CHECK_MSG(count_op(g, GRAPH_OP_batch_norm) == 0, "batch_norm folded (bias %d)",
                      with_bias);
            CHECK(count_op(g, GRAPH_OP_conv_transpose2d) == 1);
            check_interp(g, x, y, with_bias ? "folded, with bias" : "folded, no bias");
        }
        graph_free(g);
        eager_pool_pop();
    }
}

int main(void)
{
    long live = eager_live_tensors();
    test_values();
    test_threads();
    test_errors();
    test_backend_error();
    test_graphs();
    test_bn_fold();
    CHECK(eager_status() == TG_OK);
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
