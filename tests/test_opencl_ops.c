/*
 * test_opencl_ops.c - op conformance: every op of graph/ops.def runs on
 * the reference interpreter (eager's kernels), replay-CPU and
 * replay-OpenCL, compared by normalized error (<= 1e-5 elementwise,
 * <= 1e-4 for reductions, norms, matmul and conv); integer and bool
 * outputs must be equal.  The cases are text IR; the test fails for any
 * op of the registry that no case covers, so a new op needs a case here
 * (an op without an OpenCL kernel, as the training-mode ops, a case of
 * refused[]: replay_compile must refuse it, naming the op).
 * sign and the rounding ops are also compared bit for bit on the values
 * where they are easy to get wrong (exact_rounding).
 *
 * No OpenCL platform: prints "SKIP: ..." and exits 77 (ctest reports the
 * test as skipped, SKIP_RETURN_CODE).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/text.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"

#define EW 1e-5
#define RED 1e-4

typedef struct ocase {
    const char *ir;
    float lo, hi; /* f32 input range; ints: [lo, hi] too */
    double tol;
} ocase;

#define G1(in, out, body) "graph t(" in ") -> (y: " out ") {\n" body "\n  return y = %1\n}\n"

static const ocase cases[] = {
    /* unary */
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = neg(%x)"), -2, 2, EW},
    {G1("%x: i64[3,7]", "i64[3,7]", "  %1: i64[3,7] = neg(%x)"), -50, 50, EW},
    {G1("%x: i32[3,7]", "i32[3,7]", "  %1: i32[3,7] = abs(%x)"), -50, 50, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = abs(%x)"), -2, 2, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = sign(%x)"), -2, 2, EW},
    {G1("%x: i64[3,7]", "i64[3,7]", "  %1: i64[3,7] = sign(%x)"), -3, 3, EW},
    {G1("%x: i32[3,7]", "i32[3,7]", "  %1: i32[3,7] = sign(%x)"), -3, 3, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = floor(%x)"), -9, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = ceil(%x)"), -9, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = round(%x)"), -9, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = exp(%x)"), -4, 4, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = log(%x)"), 0.1f, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = sqrt(%x)"), 0, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = rsqrt(%x)"), 0.5f, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = reciprocal(%x)"), 0.5f, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = relu(%x)"), -2, 2, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = leaky_relu(%x) {alpha=0.2}"), -2, 2, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = sigmoid(%x)"), -9, 9, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = tanh(%x)"), -4, 4, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = gelu(%x)"), -6, 6, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = silu(%x)"), -6, 6, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = erf(%x)"), -3, 3, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = softplus(%x)"), -30, 30, EW},
    {G1("%x: f32[3,37]", "f32[3,37]", "  %1: f32[3,37] = clip(%x) {min=-0.5, max=1}"), -2, 2, EW},
    /* binary with broadcasting, comparisons, where */
    {G1("%x: f32[4,5,6], %z: f32[5,1]", "f32[4,5,6]", "  %1: f32[4,5,6] = add(%x, %z)"), -2, 2, EW},
    {G1("%x: f32[4,1,6], %z: f32[5,1]", "f32[4,5,6]", "  %1: f32[4,5,6] = sub(%x, %z)"), -2, 2, EW},
    {G1("%x: f32[4,5,6], %z: f32[]", "f32[4,5,6]", "  %1: f32[4,5,6] = mul(%x, %z)"), -2, 2, EW},
    /* rows of 20 and 300: the row launches */
    {G1("%x: f32[3,4,20], %z: f32[4,1]", "f32[3,4,20]", "  %1: f32[3,4,20] = div(%x, %z)"), 0.5f, 2, EW},
    {G1("%x: f32[2,1,300], %z: f32[3,1]", "f32[2,3,300]", "  %1: f32[2,3,300] = sub(%x, %z)"), -2, 2, EW},
    {G1("%x: i64[4,6], %z: i64[6]", "i64[4,6]", "  %1: i64[4,6] = add(%x, %z)"), -50, 50, EW},
    {G1("%x: f32[4,6], %z: f32[4,6]", "f32[4,6]", "  %1: f32[4,6] = div(%x, %z)"), 0.5f, 4, EW},
    {G1("%x: i32[4,6], %z: i32[6]", "i32[4,6]", "  %1: i32[4,6] = div(%x, %z)"), 1, 40, EW},
    {G1("%x: f32[4,6], %z: f32[6]", "f32[4,6]", "  %1: f32[4,6] = pow(%x, %z)"), 0.5f, 3, EW},
    {G1("%x: f32[4,6], %z: f32[4,1]", "f32[4,6]", "  %1: f32[4,6] = maximum(%x, %z)"), -2, 2, EW},
    {G1("%x: i64[4,6], %z: i64[4,1]", "i64[4,6]", "  %1: i64[4,6] = minimum(%x, %z)"), -9, 9, EW},
    {G1("%x: f32[4,6], %z: f32[4,1]", "f32[4,6]", "  %1: f32[4,6] = minimum(%x, %z)"), -2, 2, EW},
    {G1("%x: f32[4,6], %z: f32[6]", "f32[4,6]", "  %1: f32[4,6] = relu_grad(%x, %z)"), -2, 2, EW},
    {G1("%x: f32[3,4,37], %z: f32[3,4,37]", "f32[3,4,37]", "  %1: f32[3,4,37] = relu_grad(%x, %z)"), -2, 2, EW},
    {G1("%x: i32[4,6], %z: i32[6]", "bool[4,6]", "  %1: bool[4,6] = eq(%x, %z)"), -2, 2, EW},
    {G1("%x: bool[4,6], %z: bool[6]", "bool[4,6]", "  %1: bool[4,6] = eq(%x, %z)"), 0, 1, EW},
    {G1("%x: f32[4,6], %z: f32[6]", "bool[4,6]", "  %1: bool[4,6] = lt(%x, %z)"), -2, 2, EW},
    {G1("%x: i64[4,6], %z: i64[]", "bool[4,6]", "  %1: bool[4,6] = gt(%x, %z)"), -3, 3, EW},
    {G1("%c: bool[4,1], %x: f32[4,6], %z: f32[6]", "f32[4,6]",
        "  %1: f32[4,6] = where(%c, %x, %z)"), -2, 2, EW},
    {G1("%c: bool[4,6], %x: i64[4,6], %z: i64[]", "i64[4,6]",
        "  %1: i64[4,6] = where(%c, %x, %z)"), -9, 9, EW},
    /* linear algebra and layers */
    {G1("%x: f32[2,3,17], %w: f32[17,9]", "f32[2,3,9]", "  %1: f32[2,3,9] = matmul(%x, %w)"), -1, 1, RED},
    {G1("%x: f32[2,1,5,7], %w: f32[3,6,7]", "f32[2,3,5,6]",
        "  %1: f32[2,3,5,6] = matmul(%x, %w) {transpose_b=1}"), -1, 1, RED},
    {G1("%x: f32[7,5], %w: f32[7,4]", "f32[5,4]",
        "  %1: f32[5,4] = matmul(%x, %w) {transpose_a=1}"), -1, 1, RED},
    {G1("%x: f32[5,33], %w: f32[19,33], %b: f32[19]", "f32[5,19]",
        "  %1: f32[5,19] = linear(%x, %w, %b)"), -1, 1, RED},
    {G1("%x: f32[2,3,7,7], %w: f32[4,3,3,3], %b: f32[4]", "f32[2,4,7,7]",
        "  %1: f32[2,4,7,7] = conv2d(%x, %w, %b) {stride=[1,1], padding=[1,1], dilation=[1,1]}"),
     -1, 1, RED},
    {G1("%x: f32[1,4,9,8], %w: f32[6,2,3,2]", "f32[1,6,3,3]",
        "  %1: f32[1,6,3,3] = conv2d(%x, %w) {stride=[2,3], padding=[0,1], dilation=[2,1], groups=2}"),
     -1, 1, RED},
    {G1("%x: f32[1,32,14,14], %w: f32[32,32,3,3]", "f32[1,32,14,14]",
        "  %1: f32[1,32,14,14] = conv2d(%x, %w) {stride=[1,1], padding=[1,1], dilation=[1,1]}"),
     -1, 1, RED},
    /* conv_transpose2d: the U-Net upsampler; groups, asymmetric padding,
     * dilation; output_padding past the stride (rows no input reaches) */
    {G1("%x: f32[2,3,5,6], %w: f32[3,4,3,3], %b: f32[4]", "f32[2,4,10,12]",
        "  %1: f32[2,4,10,12] = conv_transpose2d(%x, %w, %b) {stride=[2], padding=[1], "
        "output_padding=[1]}"), -1, 1, RED},
    {G1("%x: f32[1,4,4,5], %w: f32[4,3,3,2]", "f32[1,6,11,11]",
        "  %1: f32[1,6,11,11] = conv_transpose2d(%x, %w) {stride=[3,2], padding=[1,0,2,1], "
        "output_padding=[2,1], dilation=[1,2], groups=2}"), -1, 1, RED},
    {G1("%x: f32[1,2,4,5], %w: f32[2,3,2,3], %b: f32[3]", "f32[1,3,7,13]",
        "  %1: f32[1,3,7,13] = conv_transpose2d(%x, %w, %b) {output_padding=[1,2], "
        "dilation=[2,3]}"), -1, 1, RED},
    {G1("%x: f32[2,3,7,7]", "f32[2,3,4,4]",
        "  %1: f32[2,3,4,4] = max_pool2d(%x) {kernel=[3,3], stride=[2,2], padding=[1,1]}"), -2, 2, EW},
    {G1("%x: f32[2,3,7,7]", "f32[2,3,4,4]",
        "  %1: f32[2,3,4,4] = avg_pool2d(%x) {kernel=[3,3], stride=[2,2], padding=[1,1]}"), -2, 2, RED},
    {G1("%x: f32[2,3,7,7]", "f32[2,3,4,4]",
        "  %1: f32[2,3,4,4] = avg_pool2d(%x) {kernel=[3,3], stride=[2,2], padding=[1,1], count_include_pad=1}"),
     -2, 2, RED},
    {G1("%x: f32[2,3,5,6]", "f32[2,3,1,1]", "  %1: f32[2,3,1,1] = global_avg_pool(%x)"), -2, 2, RED},
    {G1("%x: f32[2,3,4,5], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]", "f32[2,3,4,5]",
        "  %1: f32[2,3,4,5] = batch_norm(%x, %s, %b, %m, %v) {eps=0.001}"), 0.5f, 1.5f, RED},
    {G1("%x: f32[3,5,8], %w: f32[8], %b: f32[8]", "f32[3,5,8]",
        "  %1: f32[3,5,8] = layer_norm(%x, %w, %b)"), -2, 2, RED},
    {G1("%x: f32[3,9]", "f32[3,9]", "  %1: f32[3,9] = softmax(%x)"), -4, 4, RED},
    {G1("%x: f32[3,9,4]", "f32[3,9,4]", "  %1: f32[3,9,4] = softmax(%x) {axis=1}"), -4, 4, RED},
    {G1("%x: f32[3,9]", "f32[3,9]", "  %1: f32[3,9] = log_softmax(%x)"), -4, 4, RED},
    /* reductions */
    {G1("%x: f32[3,4,5]", "f32[3,5]", "  %1: f32[3,5] = reduce_sum(%x) {axes=[1]}"), -2, 2, RED},
    {G1("%x: i64[3,4,5]", "i64[]", "  %1: i64[] = reduce_sum(%x)"), -9, 9, RED},
    {G1("%x: f32[3,4,5]", "f32[3,1,1]",
        "  %1: f32[3,1,1] = reduce_mean(%x) {axes=[1,2], keepdim=1}"), -2, 2, RED},
    {G1("%x: f32[3,4,5]", "f32[4]", "  %1: f32[4] = reduce_max(%x) {axes=[0,2]}"), -2, 2, RED},
    /* argmax/argmin: integers in a small range tie often; inner > 1 and
     * short rows take one item per output, rows of 64+ a work-group */
    {G1("%x: f32[3,4,5]", "i64[3,1,5]", "  %1: i64[3,1,5] = argmax(%x) {axis=1}"), -2, 2, EW},
    {G1("%x: i32[4,70]", "i64[4]",
        "  %1: i64[4] = argmax(%x) {axis=-1, keepdim=0, select_last=1}"), -3, 3, EW},
    {G1("%x: i64[2,300]", "i64[2,1]", "  %1: i64[2,1] = argmin(%x) {axis=1}"), -3, 3, EW},
    {G1("%x: f32[9,6]", "i64[6]",
        "  %1: i64[6] = argmin(%x) {keepdim=0, select_last=1}"), -2, 2, EW},
    /* topk: largest along the last axis, smallest along a middle one (ties
     * from the rounded inputs: the lower index first) */
    {"graph t(%x: f32[3,70]) -> (y: f32[3,5], i: i64[3,5]) {\n"
     "  %1: f32[3,5], %2: i64[3,5] = topk(%x) {k=5}\n"
     "  return y = %1\n  return i = %2\n}\n", -2, 2, EW},
    {"graph t(%x: f32[2,9,4]) -> (y: f32[2,3,4], i: i64[2,3,4]) {\n"
     "  %1: f32[2,3,4], %2: i64[2,3,4] = topk(%x) {k=3, axis=1, largest=0}\n"
     "  return y = %1\n  return i = %2\n}\n", -2, 2, EW},
    /* cumsum: one item per line; inner > 1 (neighbouring lines), rows,
     * every combination of exclusive and reverse, each dtype */
    {G1("%x: f32[3,9,70]", "f32[3,9,70]", "  %1: f32[3,9,70] = cumsum(%x) {axis=1}"), -2, 2, RED},
    {G1("%x: f32[4,300]", "f32[4,300]",
        "  %1: f32[4,300] = cumsum(%x) {axis=-1, exclusive=1}"), -2, 2, RED},
    {G1("%x: i64[2,70,3]", "i64[2,70,3]",
        "  %1: i64[2,70,3] = cumsum(%x) {axis=-2, reverse=1}"), -9, 9, EW},
    {G1("%x: i32[5,6]", "i32[5,6]",
        "  %1: i32[5,6] = cumsum(%x) {exclusive=1, reverse=1}"), -9, 9, EW},
    /* shape and data movement */
    {G1("%x: f32[3,4,5]", "f32[12,5]", "  %1: f32[12,5] = reshape(%x) {shape=[12,5]}"), -2, 2, EW},
    {G1("%x: f32[3,4,5]", "f32[3,20]", "  %1: f32[3,20] = flatten(%x) {start=1}"), -2, 2, EW},
    {G1("%x: f32[3,4,5]", "f32[5,3,4]", "  %1: f32[5,3,4] = transpose(%x) {perm=[2,0,1]}"), -2, 2, EW},
    {G1("%x: f32[3,4,70]", "f32[4,3,70]", "  %1: f32[4,3,70] = transpose(%x) {perm=[1,0,2]}"), -2, 2, EW},
    {G1("%x: f32[2,70,3]", "f32[3,2,70]", "  %1: f32[3,2,70] = transpose(%x) {perm=[2,0,1]}"), -2, 2, EW},
    {G1("%x: f32[3,4], %z: f32[3,2], %w: f32[3,1]", "f32[3,7]",
        "  %1: f32[3,7] = concat(%x, %z, %w) {axis=1}"), -2, 2, EW},
    {"graph t(%x: f32[3,7]) -> (y: f32[3,4], z: f32[3,3]) {\n"
     "  %1: f32[3,4], %2: f32[3,3] = split(%x) {axis=1, sizes=[4,3]}\n"
     "  return y = %1\n  return z = %2\n}\n", -2, 2, EW},
    {G1("%x: f32[6,9]", "f32[2,4]",
        "  %1: f32[2,4] = slice(%x) {axes=[0,1], starts=[1,8], ends=[5,0], steps=[2,-2]}"), -2, 2, EW},
    {G1("%x: i64[3,4]", "i64[4,5]",
        "  %1: i64[4,5] = pad(%x) {pads=[1,-1,0,2], value=7}"), -9, 9, EW},
    {G1("%x: f32[3,1,4]", "f32[3,4]", "  %1: f32[3,4] = squeeze(%x) {axes=[1]}"), -2, 2, EW},
    {G1("%x: f32[3,4]", "f32[3,1,4]", "  %1: f32[3,1,4] = unsqueeze(%x) {axes=[1]}"), -2, 2, EW},
    {G1("%x: f32[3,1]", "f32[2,3,4]", "  %1: f32[2,3,4] = expand(%x) {shape=[2,3,4]}"), -2, 2, EW},
    {G1("%x: f32[3,7]", "i32[3,7]", "  %1: i32[3,7] = cast(%x) {to=i32}"), -90, 90, EW},
    {G1("%x: i64[3,7]", "f32[3,7]", "  %1: f32[3,7] = cast(%x) {to=f32}"), -90, 90, EW},
    {G1("%x: f32[3,7]", "bool[3,7]", "  %1: bool[3,7] = cast(%x) {to=bool}"), -1, 1, EW},
    {G1("%x: f32[5,3], %i: i64[2,2]", "f32[2,2,3]", "  %1: f32[2,2,3] = gather(%x, %i)"), -5, 4, EW},
    {G1("%x: i32[2,5], %i: i32[4]", "i32[2,4]", "  %1: i32[2,4] = gather(%x, %i) {axis=1}"), -5, 4, EW},
    /* gather_elements / scatter_elements: every axis indexed has size 5,
     * so indices (and data) in [-5, 4]; indices longer than the axis give
     * scatter duplicates, applied in order on both sides; a 1-D scatter
     * is one line of updates */
    {G1("%x: f32[5,6], %i: i64[7,4]", "f32[7,4]", "  %1: f32[7,4] = gather_elements(%x, %i)"),
     -5, 4, EW},
    {G1("%x: i32[3,4,5], %i: i32[2,4,8]", "i32[2,4,8]",
        "  %1: i32[2,4,8] = gather_elements(%x, %i) {axis=-1}"), -5, 4, EW},
    {G1("%x: bool[2,5], %i: i64[2,3]", "bool[2,3]",
        "  %1: bool[2,3] = gather_elements(%x, %i) {axis=1}"), -5, 4, EW},
    {G1("%x: f32[5,6], %i: i64[8,6], %u: f32[8,6]", "f32[5,6]",
        "  %1: f32[5,6] = scatter_elements(%x, %i, %u)"), -5, 4, EW},
    {G1("%x: i32[3,5], %i: i32[3,7], %u: i32[3,7]", "i32[3,5]",
        "  %1: i32[3,5] = scatter_elements(%x, %i, %u) {axis=1, reduction=1}"), -5, 4, EW},
    {G1("%x: f32[4,5,3], %i: i64[4,6,2], %u: f32[4,6,2]", "f32[4,5,3]",
        "  %1: f32[4,5,3] = scatter_elements(%x, %i, %u) {axis=1, reduction=2}"), -5, 4, EW},
    {G1("%x: i64[2,5], %i: i64[2,9], %u: i64[2,9]", "i64[2,5]",
        "  %1: i64[2,5] = scatter_elements(%x, %i, %u) {axis=-1, reduction=3}"), -5, 4, EW},
    {G1("%x: f32[5], %i: i32[9], %u: f32[9]", "f32[5]",
        "  %1: f32[5] = scatter_elements(%x, %i, %u) {reduction=4}"), -5, 4, EW},
    {G1("%x: bool[5,2], %i: i32[4,2], %u: bool[4,2]", "bool[5,2]",
        "  %1: bool[5,2] = scatter_elements(%x, %i, %u)"), -5, 4, EW},
    /* optimizer-made ops */
    {G1("%x: f32[4,6], %z: f32[6]", "f32[4,6]",
        "  %1: f32[4,6] = fused(%x, %z) {prog=\"r0=mul(i0,i1);r1=sigmoid(r0);r2=add(r1,0.5);"
        "r3=clip(r2,-1,1.25);r4=leaky_relu(r3,0.1)\"}"), -2, 2, EW},
    {G1("%x: f32[4,6], %z: f32[4,6]", "f32[4,6]",
        "  %1: f32[4,6] = fused(%x, %z) {prog=\"r0=sub(i0,i1);r1=mul(r0,r0);r2=gelu(r1);r3=maximum(r2,i0)\"}"),
     -2, 2, EW},
    /* every op a program may use, 35 elements (4 float8 items and a ragged end), a scalar */
    {G1("%x: f32[5,7], %z: f32[]", "f32[5,7]",
        "  %1: f32[5,7] = fused(%x, %z) {prog=\"r0=abs(i0);r1=add(r0,0.5);r2=log(r1);r3=sqrt(r1);"
        "r4=rsqrt(r1);r5=reciprocal(r1);r6=mul(r2,r3);r7=sub(r6,r4);r8=div(r7,r5);r9=pow(r1,i1);"
        "r10=neg(r9);r11=relu(r8);r12=leaky_relu(r10,0.3);r13=sigmoid(r12);r14=tanh(r11);"
        "r15=gelu(r14);r16=silu(r13);r17=erf(r16);r18=clip(r17,-0.2,0.6);r19=exp(r18);"
        "r20=maximum(r19,r15);r21=minimum(r20,i0);r22=add(r21,r13)\"}"), -2, 2, EW},
    /* the rounding ops and sign on exact halves (floor(4x) / 2), broadcast */
    {G1("%x: f32[5,7], %z: f32[7]", "f32[5,7]",
        "  %1: f32[5,7] = fused(%x, %z) {prog=\"r0=mul(i0,4);r1=floor(r0);r2=mul(r1,0.5);"
        "r3=round(r2);r4=ceil(r2);r5=sign(r2);r6=sub(r3,r4);r7=mul(r5,i1);r8=add(r6,r7)\"}"),
     -2, 2, EW},
    /* broadcasting on both inputs: the general kernel */
    {G1("%x: f32[3,1,5], %z: f32[4,1]", "f32[3,4,5]",
        "  %1: f32[3,4,5] = fused(%x, %z) {prog=\"r0=mul(i0,i1);r1=tanh(r0);r2=sub(r1,i1)\"}"),
     -2, 2, EW},
    {G1("%x: f32[5,33], %w: f32[19,33], %b: f32[19], %r: f32[5,19]", "f32[5,19]",
        "  %1: f32[5,19] = linear_ep(%x, %w, %b, %r) {post=[1,3]}"), -1, 1, RED},
    {G1("%x: f32[2,3,6,6], %w: f32[4,3,3,3], %b: f32[4]", "f32[2,4,6,6]",
        "  %1: f32[2,4,6,6] = conv2d_ep(%x, %w, %b) {stride=[1,1], padding=[1,1], "
        "dilation=[1,1], post=[7], alpha=0.1}"), -1, 1, RED},
    {G1("%x: f32[2,32,3,5]", "f32[2,2,3,5,16]", "  %1: f32[2,2,3,5,16] = to_blocked(%x)"), -2, 2, EW},
    {G1("%x: f32[2,2,3,5,16]", "f32[2,32,3,5]", "  %1: f32[2,32,3,5] = from_blocked(%x)"), -2, 2, EW},
    /* padded blocks: 24 channels */
    {G1("%x: f32[2,24,3,5]", "f32[2,2,3,5,16]", "  %1: f32[2,2,3,5,16] = to_blocked(%x)"), -2, 2, EW},
    {G1("%x: f32[2,2,3,5,16]", "f32[2,24,3,5]",
        "  %1: f32[2,24,3,5] = from_blocked(%x) {channels=24}"), -2, 2, EW},
    {G1("%x: f32[2,2,9,8,16]", "f32[2,2,5,4,16]",
        "  %1: f32[2,2,5,4,16] = max_pool2d_blk(%x) {kernel=[3,3], stride=[2,2], padding=[1,1]}"),
     -2, 2, EW},
    {G1("%x: f32[1,1,6,7,16]", "f32[1,1,7,4,16]",
        "  %1: f32[1,1,7,4,16] = avg_pool2d_blk(%x) {kernel=[3,2], stride=[1,2], "
        "padding=[1,0,2,1]}"), -2, 2, EW},
    {G1("%x: f32[1,2,5,5,16], %w: f32[16,32,3,3], %b: f32[16]", "f32[1,1,5,5,16]",
        "  %1: f32[1,1,5,5,16] = conv2d_blk(%x, %w, %b) {stride=[1,1], padding=[1,1], "
        "dilation=[1,1], post=[2]}"), -1, 1, RED},
};

enum { NCASES = sizeof cases / sizeof cases[0] };

/* Deterministic input data in [lo, hi] (ints rounded, bools 0/1). */
static eager_tensor *make_input(const graph_type *t, float lo, float hi, uint64_t seed)
{
    int64_t n = graph_type_numel(t);
    float *f = malloc(sizeof *f * (size_t)(n + 1));
    check_fill(f, n, seed, lo, hi);
    graph_ints shape = {t->ndim, {0}};
    for (int d = 0; d < t->ndim; d++)
        shape.v[d] = t->dim[d];
    eager_tensor *x = eager_empty(t->dtype, shape);
    void *d = eager_data_mut(x);
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == GRAPH_F32)
            ((float *)d)[i] = f[i];
        else if (t->dtype == GRAPH_I64)
            ((int64_t *)d)[i] = (int64_t)lrintf(f[i]);
        else if (t->dtype == GRAPH_I32)
            ((int32_t *)d)[i] = (int32_t)lrintf(f[i]);
        else
            ((uint8_t *)d)[i] = f[i] > 0.5f * (lo + hi);
    }
    free(f);
    return x;
}

/* Replays g on backend into outs (host copies the caller frees). */
static int replay_on(const graph *g, const char *backend, eager_tensor **in, int nin,
                     void **outs, const char *what)
{
    char err[4096] = "";
    replay_opts o = {.threads = 1, .device = backend};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    CHECK_MSG(p != NULL, "%s compiles on %s: %s", what, backend, err);
    if (!p)
        return -1;
    replay_session *s = replay_session_new(p, NULL, 0);
    replay_tensor ri[16], ro[8];
    for (int i = 0; i < nin; i++)
        ri[i] = (replay_tensor){.type = *eager_type(in[i]), .input = eager_peek(in[i])};
    int nout = replay_num_outputs(p);
    memset(ro, 0, sizeof ro);
    tg_status st = s ? replay_run(s, ri, nin, ro, nout) : TG_ERR_NOMEM;
    CHECK_MSG(st == TG_OK, "%s runs on %s: %s", what, backend,
              s ? replay_session_error(s) : "no session");
    for (int k = 0; st == TG_OK && k < nout; k++) {
        size_t bytes = (size_t)graph_type_numel(&ro[k].type) * graph_dtype_size(ro[k].type.dtype);
        outs[k] = malloc(bytes + 1);
        memcpy(outs[k], ro[k].data, bytes);
    }
    replay_session_free(s);
    replay_plan_free(p);
    return st == TG_OK ? 0 : -1;
}

static void compare(const graph_type *t, const void *got, const void *want, double tol,
                    const char *what, const char *who)
{
    int64_t n = graph_type_numel(t);
    if (t->dtype == GRAPH_F32) {
        double e = check_normalized_error(got, want, n);
        CHECK_MSG(e <= tol, "%s: %s normalized error %.3g > %.0e", what, who, e, tol);
    } else {
        CHECK_MSG(!memcmp(got, want, (size_t)n * graph_dtype_size(t->dtype)),
                  "%s: %s differs from the interpreter", what, who);
    }
}

static void run_case(const ocase *c, int idx, int *covered)
{
    char err[512] = "", what[64];
    graph *g = graph_parse(c->ir, strlen(c->ir), err, sizeof err);
    CHECK_MSG(g != NULL, "case %d parses: %s", idx, err);
    if (!g)
        return;
    const graph_node *n = &g->nodes[g->nnodes - 1];
    covered[n->op]++;
    snprintf(what, sizeof what, "case %d (%s)", idx, graph_ops[n->op].name);
    eager_pool_push();
    eager_tensor *in[8], *ref[8] = {NULL};
    for (int i = 0; i < g->ninputs; i++)
        in[i] = make_input(&g->values[g->inputs[i]].type, c->lo, c->hi, 1000 + (uint64_t)idx * 8 + (uint64_t)i);
    CHECK_MSG(eager_interpret(g, in, g->ninputs, ref, g->noutputs, NULL) == TG_OK,
              "%s: interpreter: %s", what, eager_error());
    void *cpu[8] = {NULL}, *ocl[8] = {NULL};
    int okc = replay_on(g, "cpu", in, g->ninputs, cpu, what) == 0;
    int oko = replay_on(g, "opencl", in, g->ninputs, ocl, what) == 0;
    for (int k = 0; k < g->noutputs && ref[0]; k++) {
        const graph_type *t = eager_type(ref[k]);
        if (okc)
            compare(t, cpu[k], eager_peek(ref[k]), c->tol, what, "replay-cpu");
        if (oko)
            compare(t, ocl[k], eager_peek(ref[k]), c->tol, what, "replay-opencl");
    }
    for (int k = 0; k < 8; k++) {
        free(cpu[k]);
        free(ocl[k]);
        eager_release(ref[k]);
    }
    eager_pool_pop();
    graph_free(g);
}

/*
 * Ops the OpenCL backend refuses on purpose (the training-mode ops and the
 * optimizer updates: a training step replays on the CPU): each runs on the
 * interpreter and replay-CPU alike, and replay_compile on OpenCL fails
 * naming the op.
 */
static const ocase refused[] = {
    {"graph t(%x: f32[3,37], %g: i64[2]) -> (y: f32[3,37]) {\n"
     "  %1: f32[3,37] = dropout(%x, %g) {p=0.25}\n  return y = %1\n}\n", 0.5f, 2, 0},
    {"graph t(%g: i64[2]) -> (y: i64[2]) {\n"
     "  %1: i64[2] = rng_advance(%g) {n=37}\n  return y = %1\n}\n", 0.5f, 2, 0},
    {"graph t(%x: f32[2,3,5], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3])"
     " -> (y: f32[2,3,5], m: f32[3], v: f32[3]) {\n"
     "  %1: f32[2,3,5], %2: f32[3], %3: f32[3], %4: f32[3], %5: f32[3] ="
     " batch_norm_train(%x, %s, %b, %m, %v) {momentum=0.25}\n"
     "  return y = %1\n  return m = %2\n  return v = %3\n}\n", 0.5f, 2, 0},
    {"graph t(%p: f32[3,37], %g: f32[3,37], %b: f32[3,37], %lr: f32[], %mo: f32[], "
     "%wd: f32[]) -> (y: f32[3,37], z: f32[3,37]) {\n"
     "  %1: f32[3,37], %2: f32[3,37] = sgd_step(%p, %g, %b, %lr, %mo, %wd) {nesterov=1}\n"
     "  return y = %1\n  return z = %2\n}\n", 0, 1, EW},
    {"graph t(%p: f32[3,37], %g: f32[3,37], %m: f32[3,37], %v: f32[3,37], %t: i64[], "
     "%lr: f32[], %b1: f32[], %b2: f32[], %e: f32[], %wd: f32[]) -> (y: f32[3,37]) {\n"
     "  %1: f32[3,37], %2: f32[3,37], %3: f32[3,37] = adamw_step(%p, %g, %m, %v, %t, %lr, "
     "%b1, %b2, %e, %wd)\n"
     "  return y = %1\n}\n", 1, 3, EW},
    /* conv2d's gradient ops */
    {"graph t(%x: f32[2,4,7,6], %dy: f32[2,6,4,3]) -> (y: f32[6,2,3,3]) {\n"
     "  %1: f32[6,2,3,3] = conv2d_grad_weight(%x, %dy) {stride=[2], padding=[1], groups=2, "
     "ksize=[3,3]}\n  return y = %1\n}\n", -1, 1, 1e-4},
    {"graph t(%dy: f32[2,6,4,3], %w: f32[6,2,3,3]) -> (y: f32[2,4,7,6]) {\n"
     "  %1: f32[2,4,7,6] = conv2d_grad_input(%dy, %w) {stride=[2], padding=[1], groups=2, "
     "xsize=[7,6]}\n  return y = %1\n}\n", -1, 1, 1e-4},
    {"graph t(%dy: f32[2,3,3,4], %x: f32[2,3,5,7]) -> (y: f32[2,3,5,7]) {\n"
     "  %1: f32[2,3,5,7] = max_pool2d_grad(%dy, %x) {kernel=[3], stride=[2], padding=[1]}\n"
     "  return y = %1\n}\n", -2, 2, 0},
    {"graph t(%dy: f32[2,3,4,5], %x: f32[2,3,4,5], %w: f32[3], %m: f32[3], %r: f32[3]) -> "
     "(dx: f32[2,3,4,5], dw: f32[3], db: f32[3]) {\n"
     "  %1: f32[2,3,4,5], %2: f32[3], %3: f32[3] = batch_norm_train_grad(%dy, %x, %w, %m, %r)\n"
     "  return dx = %1\n  return dw = %2\n  return db = %3\n}\n", -2, 2, 0},
    {"graph t(%dp: f32[2,3,2,2], %y: f32[2,3,4,5], %x: f32[2,3,4,5], %w: f32[3], %m: f32[3], "
     "%r: f32[3]) -> (dx: f32[2,3,4,5], dw: f32[3], db: f32[3]) {\n"
     "  %1: f32[2,3,4,5], %2: f32[3], %3: f32[3] = batch_norm_pool_grad(%dp, %y, %x, %w, %m, "
     "%r) {kernel=[2,2]}\n"
     "  return dx = %1\n  return dw = %2\n  return db = %3\n}\n", -2, 2, 0},
    {"graph t(%dy: f32[3,5,37], %x: f32[3,5,37], %w: f32[5,37]) -> (y: f32[3,5,37], "
     "dw: f32[5,37], db: f32[5,37]) {\n"
     "  %1: f32[3,5,37], %2: f32[5,37], %3: f32[5,37] = layer_norm_grad(%dy, %x, %w) "
     "{axis=1}\n  return y = %1\n  return dw = %2\n  return db = %3\n}\n", -2, 2, 0},
};

static void run_refused(const ocase *c, int idx, int *covered)
{
    char err[512] = "", what[64], want[128];
    graph *g = graph_parse(c->ir, strlen(c->ir), err, sizeof err);
    CHECK_MSG(g != NULL, "refused case %d parses: %s", idx, err);
    if (!g)
        return;
    graph_op op = g->nodes[g->nnodes - 1].op;
    covered[op]++;
    snprintf(what, sizeof what, "refused case %d (%s)", idx, graph_ops[op].name);
    eager_pool_push();
    eager_tensor *in[10], *ref[8] = {NULL};
    for (int i = 0; i < g->ninputs; i++)
        in[i] = make_input(&g->values[g->inputs[i]].type, c->lo, c->hi, 5000 + (uint64_t)idx * 16 + (uint64_t)i);
    CHECK_MSG(eager_interpret(g, in, g->ninputs, ref, g->noutputs, NULL) == TG_OK,
              "%s: interpreter: %s", what, eager_error());
    void *cpu[8] = {NULL};
    if (replay_on(g, "cpu", in, g->ninputs, cpu, what) == 0 && ref[0])
        for (int k = 0; k < g->noutputs; k++)
            compare(eager_type(ref[k]), cpu[k], eager_peek(ref[k]), c->tol, what, "replay-cpu");
    replay_opts o = {.threads = 1, .device = "opencl"};
    replay_plan *p = replay_compile(g, &o, err, sizeof err);
    snprintf(want, sizeof want, "op %s is not supported on device ", graph_ops[op].name);
    CHECK_MSG(!p && strstr(err, want) && strstr(err, ": no OpenCL kernel (node 0 ("),
              "%s: OpenCL refuses it: %s", what, err);
    replay_plan_free(p);
    for (int k = 0; k < 8; k++) {
        free(cpu[k]);
        eager_release(ref[k]);
    }
    eager_pool_pop();
    graph_free(g);
}

/* The values where sign and the rounding ops are easy to get wrong:
 * NaN, zeros of both signs, infinities, halves (ties to even), the
 * largest float below 0.5 (floor(x + 0.5) rounds it to 1), 2^23 and its
 * neighbours (integral from there on), subnormals. */
static const float round_values[] = {
    NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f,
    0.49999997f, -0.49999997f, 0.3f, -0.3f, 8388607.5f, -8388607.5f, 8388608.0f, 8388609.0f,
    -8388609.0f, 16777215.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, 1e-40f, -1e-40f, FLT_MIN,
    -FLT_MIN, 0x1p-149f, -0x1p-149f, 1.0f, -1.0f, 7.0f, -7.25f,
};

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/*
 * sign, floor, ceil and round bit for bit on round_values (35 of them:
 * four float8 items and a ragged end), replay-OpenCL against the
 * interpreter (whose kernels test_round.c checks against libm).  The
 * cases above compare by normalized error on random data, which has no
 * exact halves, signed zeros or NaN.
 */
static void exact_rounding(void)
{
    static const char ir[] =
        "graph t(%x: f32[35]) -> (a: f32[35], b: f32[35], c: f32[35], d: f32[35]) {\n"
        "  %1: f32[35] = floor(%x)\n  %2: f32[35] = ceil(%x)\n"
        "  %3: f32[35] = round(%x)\n  %4: f32[35] = sign(%x)\n"
        "  return a = %1\n  return b = %2\n  return c = %3\n  return d = %4\n}\n";
    enum { N = sizeof round_values / sizeof round_values[0] };
    _Static_assert(N == 35, "the IR above has 35 elements");
    char err[512] = "";
    graph *g = graph_parse(ir, strlen(ir), err, sizeof err);
    CHECK_MSG(g != NULL, "exact_rounding parses: %s", err);
    if (!g)
        return;
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_SHAPE(N), round_values), *ref[4] = {NULL};
    void *ocl[4] = {NULL};
    CHECK(eager_interpret(g, &x, 1, ref, 4, NULL) == TG_OK);
    if (ref[3] && replay_on(g, "opencl", &x, 1, ocl, "exact_rounding") == 0) {
        static const char *const name[4] = {"floor", "ceil", "round", "sign"};
        for (int k = 0; k < 4; k++) {
            const float *w = eager_peek(ref[k]), *o = ocl[k];
            for (int i = 0; i < N; i++)
                CHECK_MSG(same_bits(o[i], w[i]), "opencl %s(%a) = %a, the interpreter %a",
                          name[k], (double)round_values[i], (double)o[i], (double)w[i]);
        }
    }
    for (int k = 0; k < 4; k++) {
        free(ocl[k]);
        eager_release(ref[k]);
    }
    eager_pool_pop();
    graph_free(g);
}

/*
 * NaN through the max/min-like ops, with known answers, on the
 * interpreter, replay-CPU and replay-OpenCL bit for bit: max pooling (an
 * all-NaN window, one NaN in a window), reduce_max, topk (NaN counts as
 * the largest, NaNs by index), argmax and argmin (the first NaN), minimum
 * and relu all keep NaN, as NumPy and PyTorch (docs/GUIDE.md, "NaN").
 * The random cases above hold no NaN.
 */
static void nan_extremes(void)
{
    static const char ir[] =
        "graph t(%x: f32[1,1,2,6], %y: f32[2,4], %z: f32[4]) -> (a: f32[1,1,1,3], "
        "b: f32[1,1,6], c: f32[1,1,2,6], d: i64[1,1,2,6], e: i64[2], f: i64[2], "
        "g: f32[2,4], h: f32[2,4]) {\n"
        "  %1: f32[1,1,1,3] = max_pool2d(%x) {kernel=[2,2], stride=[2,2]}\n"
        "  %2: f32[1,1,6] = reduce_max(%x) {axes=[2]}\n"
        "  %3: f32[1,1,2,6], %4: i64[1,1,2,6] = topk(%x) {k=6}\n"
        "  %5: i64[2] = argmax(%y) {axis=1, keepdim=0}\n"
        "  %6: i64[2] = argmin(%y) {axis=1, keepdim=0}\n"
        "  %7: f32[2,4] = minimum(%y, %z)\n  %8: f32[2,4] = relu(%y)\n"
        "  return a = %1\n  return b = %2\n  return c = %3\n  return d = %4\n"
        "  return e = %5\n  return f = %6\n  return g = %7\n  return h = %8\n}\n";
    const float N = NAN;
    const float x[12] = {N, N, 1, 4, 5, N, N, N, 3, 2, 0, 1};
    const float y[8] = {1, N, 3, N, 5, 2, 7, 1}, z[4] = {2, 2, N, 0};
    const float want_a[3] = {N, 4, N}, want_b[6] = {N, N, 3, 4, 5, N};
    const float want_c[12] = {N, N, N, 5, 4, 1, N, N, 3, 2, 1, 0};
    const int64_t want_d[12] = {0, 1, 5, 4, 3, 2, 0, 1, 2, 3, 5, 4};
    const int64_t want_e[2] = {1, 2}, want_f[2] = {1, 3};
    const float want_g[8] = {1, N, N, N, 2, 2, N, 0}, want_h[8] = {1, N, 3, N, 5, 2, 7, 1};
    const void *want[8] = {want_a, want_b, want_c, want_d, want_e, want_f, want_g, want_h};
    char err[512] = "";
    graph *g = graph_parse(ir, strlen(ir), err, sizeof err);
    CHECK_MSG(g != NULL, "nan_extremes parses: %s", err);
    if (!g)
        return;
    eager_pool_push();
    eager_tensor *in[3] = {eager_from_data(GRAPH_F32, TG_SHAPE(1, 1, 2, 6), x),
                           eager_from_data(GRAPH_F32, TG_SHAPE(2, 4), y),
                           eager_from_data(GRAPH_F32, TG_SHAPE(4), z)};
    eager_tensor *ref[8] = {NULL};
    void *cpu[8] = {NULL}, *ocl[8] = {NULL};
    CHECK(eager_interpret(g, in, 3, ref, 8, NULL) == TG_OK);
    int okc = ref[7] && replay_on(g, "cpu", in, 3, cpu, "nan_extremes") == 0;
    int oko = ref[7] && replay_on(g, "opencl", in, 3, ocl, "nan_extremes") == 0;
    for (int k = 0; ref[7] && k < 8; k++) {
        const graph_type *t = eager_type(ref[k]);
        int64_t n = graph_type_numel(t);
        const void *who[3] = {eager_peek(ref[k]), okc ? cpu[k] : NULL, oko ? ocl[k] : NULL};
        static const char *const name[3] = {"interpreter", "replay-cpu", "replay-opencl"};
        for (int w = 0; w < 3; w++)
            for (int64_t i = 0; who[w] && i < n; i++) {
                if (t->dtype == GRAPH_F32) {
                    float o = ((const float *)who[w])[i], e = ((const float *)want[k])[i];
                    CHECK_MSG(same_bits(o, e), "nan_extremes output %c[%lld]: %s %g, want %g",
                              'a' + k, (long long)i, name[w], (double)o, (double)e);
                } else {
                    int64_t o = ((const int64_t *)who[w])[i], e = ((const int64_t *)want[k])[i];
                    CHECK_MSG(o == e, "nan_extremes output %c[%lld]: %s %lld, want %lld",
                              'a' + k, (long long)i, name[w], (long long)o, (long long)e);
                }
            }
    }
    for (int k = 0; k < 8; k++) {
        free(cpu[k]);
        free(ocl[k]);
        eager_release(ref[k]);
    }
    eager_pool_pop();
    graph_free(g);
}

int main(void)
{
    replay_device_info dev;
    if (!check_opencl_device(&dev))
        return CHECK_SKIP;
    printf("OpenCL device: %s\n", dev.device);
    int covered[GRAPH_OP_COUNT] = {0};
    for (int i = 0; i < NCASES; i++)
        run_case(&cases[i], i, covered);
    for (int i = 0; i < (int)(sizeof refused / sizeof refused[0]); i++)
        run_refused(&refused[i], i, covered);
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        CHECK_MSG(covered[op] > 0, "op %s has no conformance case", graph_ops[op].name);
    exact_rounding();
    nan_extremes();
    replay_backend_shutdown();
    return check_done();
}
