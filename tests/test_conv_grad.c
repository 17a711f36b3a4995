/*
 * test_conv_grad.c - conv2d_grad_weight and conv2d_grad_input (conv2d's
 * gradients through oneDNN's backward primitives) against naive loops
 * written here in double from the definition of the forward convolution:
 * every (output pixel, tap) pair whose input position lies inside x adds
 * dy * x to dw and dy * w to dx.  Strides 1 to 3, dilation 2, symmetric
 * and asymmetric padding, strides that skip x's last rows, groups 2 and
 * depthwise, 1x1 and non-square kernels, one and two threads.  Then: the
 * same call repeated gives the same bits (1 and 2 threads, the training
 * benchmark's CNN shapes), empty batches give zeros, bad shapes and
 * attributes fail with a message naming them, and conv2d's gradient
 * through eager_backward is these ops' result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv_ref_util.h"
#include "eager/eager.h"

typedef struct cg_case {
    int64_t n, c, h, w, o, kh, kw; /* x [n,c,h,w], w [o,c/groups,kh,kw] */
    graph_ints stride, padding, dilation;
    int64_t groups;
} cg_case;

/* The forward's output size of one dim (floor division, as conv2d). */
static int64_t out_size(int64_t in, int64_t lo, int64_t hi, int64_t k, int64_t s, int64_t d)
{
    return (in + lo + hi - d * (k - 1) - 1) / s + 1;
}

/*
 * Both references at once: for every output pixel (n, o, p, q) and tap
 * (c, i, j) of o's group whose input row p*s - pad_top + i*d and column
 * are inside x, dw[o,c,i,j] += dy * x and dx[n, g*cg + c, row, col] +=
 * dy * w.
 */
static void refs(const cg_case *k, const float *x, const float *w, const float *dy,
                 const int64_t s[2], const int64_t d[2], const int64_t p[4], int64_t oh,
                 int64_t ow, double *dw, double *dx)
{
    int64_t cg = k->c / k->groups, og = k->o / k->groups;
    memset(dw, 0, (size_t)(k->o * cg * k->kh * k->kw) * sizeof *dw);
    memset(dx, 0, (size_t)(k->n * k->c * k->h * k->w) * sizeof *dx);
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t py = 0; py < oh; py++)
                for (int64_t px = 0; px < ow; px++) {
                    double g = dy[((n * k->o + o) * oh + py) * ow + px];
                    int64_t grp = o / og;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t i = 0; i < k->kh; i++)
                            for (int64_t j = 0; j < k->kw; j++) {
                                int64_t yy = py * s[0] - p[0] + i * d[0];
                                int64_t xx = px * s[1] - p[1] + j * d[1];
                                if (yy < 0 || yy >= k->h || xx < 0 || xx >= k->w)
                                    continue;
                                int64_t xi = ((n * k->c + grp * cg + c) * k->h + yy) * k->w + xx;
                                int64_t wi = ((o * cg + c) * k->kh + i) * k->kw + j;
                                dw[wi] += g * x[xi];
                                dx[xi] += g * w[wi];
                            }
                }
}

static void check_case(int line, cg_case k, int threads)
{
    int64_t s[2], d[2], p[4];
    conv_pair(&k.stride, 1, s);
    conv_pair(&k.dilation, 1, d);
    conv_pad4(&k.padding, p);
    int64_t oh = out_size(k.h, p[0], p[2], k.kh, s[0], d[0]);
    int64_t ow = out_size(k.w, p[1], p[3], k.kw, s[1], d[1]);
    int64_t cg = k.c / k.groups;
    eager_set_threads(threads);
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(k.n, k.c, k.h, k.w), (uint64_t)line, -1, 1);
    eager_tensor *w =
        eager_rand_uniform(TG_SHAPE(k.o, cg, k.kh, k.kw), (uint64_t)line + 1, -1, 1);
    eager_tensor *dy = eager_rand_uniform(TG_SHAPE(k.n, k.o, oh, ow), (uint64_t)line + 2, -1, 1);
    eager_tensor *gw = eager_conv2d_grad_weight(x, dy, k.stride, k.padding, k.dilation,
                                                k.groups, TG_INTS(k.kh, k.kw));
    eager_tensor *gx = eager_conv2d_grad_input(dy, w, k.stride, k.padding, k.dilation,
                                               k.groups, TG_INTS(k.h, k.w));
    int okw = gw && eager_ndim(gw) == 4 && eager_dim(gw, 0) == k.o && eager_dim(gw, 1) == cg &&
              eager_dim(gw, 2) == k.kh && eager_dim(gw, 3) == k.kw;
    int okx = gx && eager_ndim(gx) == 4 && eager_dim(gx, 0) == k.n && eager_dim(gx, 1) == k.c &&
              eager_dim(gx, 2) == k.h && eager_dim(gx, 3) == k.w;
    check_report(okw && okx, __FILE__, line, "shapes (%d threads): %s", threads,
                 gw && gx ? "other shape" : eager_error());
    eager_clear_error();
    int64_t nw = k.o * cg * k.kh * k.kw, nx = k.n * k.c * k.h * k.w;
    double *rw = malloc((size_t)(nw + 1) * sizeof *rw), *rx = malloc((size_t)(nx + 1) * sizeof *rx);
    float *fw = malloc((size_t)(nw + 1) * sizeof *fw), *fx = malloc((size_t)(nx + 1) * sizeof *fx);
    refs(&k, eager_peek(x), eager_peek(w), eager_peek(dy), s, d, p, oh, ow, rw, rx);
    for (int64_t i = 0; i < nw; i++)
        fw[i] = (float)rw[i];
    for (int64_t i = 0; i < nx; i++)
        fx[i] = (float)rx[i];
    if (okw)
        check_floats(eager_peek(gw), fw, nw, 1e-4, __FILE__, line, "conv2d_grad_weight");
    if (okx)
        check_floats(eager_peek(gx), fx, nx, 1e-4, __FILE__, line, "conv2d_grad_input");
    free(rw), free(rx), free(fw), free(fx);
    eager_pool_pop();
    eager_set_threads(1);
}

#define NO TG_NOINTS

static void test_values(void)
{
    for (int t = 1; t <= 2; t++) {
        /* plain 3x3, no padding; with padding 1 (the CNN's) */
        check_case(__LINE__, (cg_case){2, 3, 6, 5, 4, 3, 3, NO, NO, NO, 1}, t);
        check_case(__LINE__, (cg_case){3, 4, 8, 8, 5, 3, 3, NO, TG_INTS(1), NO, 1}, t);
        /* stride 2 (x's last row and column skipped: 8 + 2 - 3 is odd) */
        check_case(__LINE__, (cg_case){2, 3, 8, 8, 4, 3, 3, TG_INTS(2), TG_INTS(1), NO, 1}, t);
        /* stride (3, 2), asymmetric padding, dilation 2 */
        check_case(__LINE__,
                   (cg_case){2, 2, 11, 9, 3, 3, 2, TG_INTS(3, 2), TG_INTS(1, 0, 2, 1),
                             TG_INTS(2), 1}, t);
        /* dilation (2, 1) with a 5x3 kernel */
        check_case(__LINE__, (cg_case){1, 3, 12, 7, 2, 5, 3, NO, TG_INTS(2, 1), TG_INTS(2, 1), 1},
                   t);
        /* 1x1, stride 2 (a ResNet shortcut) */
        check_case(__LINE__, (cg_case){2, 8, 7, 7, 6, 1, 1, TG_INTS(2), NO, NO, 1}, t);
        /* groups 2, stride 2, padding; depthwise with dilation 2 */
        check_case(__LINE__, (cg_case){2, 4, 9, 7, 6, 3, 3, TG_INTS(2), TG_INTS(1), NO, 2}, t);
        check_case(__LINE__,
                   (cg_case){2, 6, 10, 9, 6, 3, 3, NO, TG_INTS(2), TG_INTS(2), 6}, t);
        /* a kernel as large as the padded input: a 1x1 output */
        check_case(__LINE__, (cg_case){4, 2, 5, 4, 3, 5, 4, NO, NO, NO, 1}, t);
        /* 16 channels and a wider batch (oneDNN's blocked paths) */
        check_case(__LINE__, (cg_case){8, 16, 10, 10, 32, 3, 3, NO, TG_INTS(1), NO, 1}, t);
    }
}

/* The same call twice gives the same bits, at 1 and at 2 threads, on the
 * training benchmark's CNN shapes (conv1 1->32 on 28x28, conv2 32->64 on
 * 14x14, 3x3 padding 1, batch 64). */
static void test_deterministic(void)
{
    static const int64_t shapes[2][4] = {{64, 1, 28, 32}, {64, 32, 14, 64}};
    for (int t = 1; t <= 2; t++)
        for (int k = 0; k < 2; k++) {
            const int64_t *sh = shapes[k];
            int64_t n = sh[0], c = sh[1], hw = sh[2], o = sh[3];
            eager_set_threads(t);
            eager_pool_push();
            eager_tensor *x = eager_rand_uniform(TG_SHAPE(n, c, hw, hw), 7, -1, 1);
            eager_tensor *w = eager_rand_uniform(TG_SHAPE(o, c, 3, 3), 8, -1, 1);
            eager_tensor *dy = eager_rand_uniform(TG_SHAPE(n, o, hw, hw), 9, -1, 1);
            eager_tensor *gw[3], *gx[3];
            for (int r = 0; r < 3; r++) {
                gw[r] = eager_conv2d_grad_weight(x, dy, NO, TG_INTS(1), NO, 1, TG_INTS(3, 3));
                gx[r] = eager_conv2d_grad_input(dy, w, NO, TG_INTS(1), NO, 1, TG_INTS(hw, hw));
            }
            for (int r = 1; r < 3; r++) {
                CHECK_MSG(gw[0] && gw[r] &&
                              !memcmp(eager_peek(gw[0]), eager_peek(gw[r]),
                                      (size_t)(o * c * 9) * sizeof(float)),
                          "conv%d weight gradient, %d threads: call %d equals call 0", k + 1, t,
                          r);
                CHECK_MSG(gx[0] && gx[r] &&
                              !memcmp(eager_peek(gx[0]), eager_peek(gx[r]),
                                      (size_t)(n * c * hw * hw) * sizeof(float)),
                          "conv%d input gradient, %d threads: call %d equals call 0", k + 1, t,
                          r);
            }
            eager_pool_pop();
        }
    eager_set_threads(1);
}

/* An empty batch: dw is all zeros, dx empty; an empty channel count. */
static void test_empty(void)
{
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(0, 3, 6, 6));
    eager_tensor *dy = eager_zeros(GRAPH_F32, TG_SHAPE(0, 4, 4, 4));
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(4, 3, 3, 3), 3, -1, 1);
    eager_tensor *gw = eager_conv2d_grad_weight(x, dy, NO, NO, NO, 1, TG_INTS(3, 3));
    CHECK_MSG(gw && eager_numel(gw) == 4 * 3 * 9, "%s", eager_error());
    int zero = gw != NULL;
    for (int64_t i = 0; gw && i < eager_numel(gw); i++)
        zero &= ((const float *)eager_peek(gw))[i] == 0.0f;
    CHECK(zero);
    eager_tensor *gx = eager_conv2d_grad_input(dy, w, NO, NO, NO, 1, TG_INTS(6, 6));
    CHECK_MSG(gx && eager_numel(gx) == 0 && eager_dim(gx, 1) == 3, "%s", eager_error());
    eager_pool_pop();
}

static void test_errors(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 4, 7, 7), 1, -1, 1);
    eager_tensor *dy = eager_rand_uniform(TG_SHAPE(2, 6, 5, 5), 2, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(6, 4, 3, 3), 3, -1, 1);
    CHECK_FAILS(eager_conv2d_grad_weight(x, dy, NO, NO, NO, 1, TG_INTS(3)),
                "ksize takes 2 entries >= 1, got [3]");
    CHECK_FAILS(eager_conv2d_grad_weight(x, dy, NO, TG_INTS(1), NO, 1, TG_INTS(3, 3)),
                "dy is [2,6,5,5], want the forward's output [2,6,7,7]");
    CHECK_FAILS(eager_conv2d_grad_weight(x, dy, NO, NO, NO, 3, TG_INTS(3, 3)),
                "groups 3 must divide the input channels 4 and the output channels 6");
    CHECK_FAILS(eager_conv2d_grad_weight(x, x, NO, NO, NO, 1, TG_INTS(3, 3)),
                "dy is [2,4,7,7], want the forward's output [2,4,5,5]");
    CHECK_FAILS(eager_conv2d_grad_input(dy, w, NO, NO, NO, 1, TG_INTS(7)),
                "xsize takes 2 entries >= 0, got [7]");
    CHECK_FAILS(eager_conv2d_grad_input(dy, w, TG_INTS(2), NO, NO, 1, TG_INTS(7, 7)),
                "dy is [2,6,5,5], want the forward's output [2,6,3,3]");
    CHECK_FAILS(eager_conv2d_grad_input(dy, x, NO, NO, NO, 1, TG_INTS(7, 7)),
                "dy is [2,6,5,5], want the forward's output [2,2,1,1]");
    CHECK_FAILS(eager_conv2d_grad_input(x, w, NO, NO, NO, 0, TG_INTS(7, 7)),
                "groups must be >= 1, got 0");
    eager_pool_pop();
}

/* conv2d's gradients through eager_backward are exactly these ops'. */
static void test_backward(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(2, 4, 9, 8), 11, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(6, 2, 3, 3), 12, -1, 1);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(6), 13, -1, 1);
    eager_requires_grad(x, 1);
    eager_requires_grad(w, 1);
    eager_requires_grad(b, 1);
    eager_tensor *y = eager_conv2d(x, w, b, TG_INTS(2), TG_INTS(1, 0, 0, 1), NO, 2);
    /* the loss sum(y * dy) sends dy back to y, exactly */
    eager_tensor *dy = eager_rand_uniform(TG_SHAPE(2, 6, 4, 4), 14, -1, 1);
    eager_tensor *loss = eager_reduce_sum(eager_mul(y, dy), NO, 0);
    CHECK_MSG(loss && eager_backward(loss) == TG_OK, "%s", eager_error());
    eager_tensor *gw = eager_conv2d_grad_weight(x, dy, TG_INTS(2), TG_INTS(1, 0, 0, 1), NO, 2,
                                                TG_INTS(3, 3));
    eager_tensor *gx = eager_conv2d_grad_input(dy, w, TG_INTS(2), TG_INTS(1, 0, 0, 1), NO, 2,
                                               TG_INTS(9, 8));
    eager_tensor *gb = eager_reduce_sum(dy, TG_INTS(0, 2, 3), 0);
    CHECK(gw && eager_grad(w) &&
          !memcmp(eager_peek(gw), eager_peek(eager_grad(w)), 6 * 2 * 9 * sizeof(float)));
    CHECK(gx && eager_grad(x) &&
          !memcmp(eager_peek(gx), eager_peek(eager_grad(x)), 2 * 4 * 9 * 8 * sizeof(float)));
    CHECK(gb && eager_grad(b) && !memcmp(eager_peek(gb), eager_peek(eager_grad(b)), 6 * sizeof(float)));
    eager_pool_pop();
}

int main(void)
{
    test_values();
    test_deterministic();
    test_empty();
    test_errors();
    test_backward();
    return check_done();
}
