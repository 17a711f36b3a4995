/*
 * kernels_blocked.c - CPU kernels of the blocked-layout ops (see
 * graph/infer_blocked.c): max_pool2d_blk / avg_pool2d_blk (at the end),
 * to_blocked / from_blocked (one channel block at
 * a time, as BxB register transposes: the B source planes stream and
 * the destination is written B floats at a time) and conv2d_blk (oneDNN
 * convolution on nChw16c / nChw8c source / destination / residual).
 *
 * The block B is 16 or 8 (the blocked tensor's dim 4; conv2d_blk's
 * attribute block).  Each kernel is one body instantiated for both
 * (always_inline with a constant B): 16x16 transposes in AVX-512 and
 * 8x8 ones in AVX (the avx2 and avx512 kernel sets), plain loops
 * otherwise; a pool pixel of B lanes is one vector where the set has it
 * (16: one AVX-512 or two AVX registers, 8: one AVX register).
 *
 * conv2d_blk goes through the prepared-primitive glue of dnnl_util.h like
 * conv2d_ep (kernels_conv.c): the weights are always described as format
 * "any" and packed into the layout oneDNN prefers.  With a state slot and
 * fixed weights (eager_kargs.fixed_in bit 1) the packing happens once;
 * otherwise (eager, or weights that may change) a fresh prim is made and
 * the weights reordered on every call.
 *
 * Algorithm: algo 2 (winograd), and algo 0 (auto) with prepared state
 * (a state slot and fixed weights: replay), on a 3x3, stride 1, dilation
 * 1 conv try dnnl_convolution_winograd first; when oneDNN has no Winograd
 * for the case (or not with these post-ops) the direct algorithm is used,
 * so algo is a preference, never a failure.  Auto without prepared state
 * is direct: the Winograd weight transform is only worth it once
 * (wino_shape says what it costs per call).  Among oneDNN 2.6's
 * Winograd implementations F(4x4,3x3) ("jit_wino_4x3") is taken whenever
 * offered (eager_dnnl_spec.prefer), though oneDNN lists F(2x2,3x3)
 * ("jit_fp32_wino_2x3") first: 36 multiplies per 2x2 output tile vs 16
 * per 4x4 one, and it won on every shape measured, one or two threads
 * (1x64x56x56: 0.78 vs 1.07 ms; 1x512x7x7: 0.68 vs 1.19 ms).  Winograd
 * is less exact than direct (tests/test_opt_layout.c measures it: ~4e-6
 * normalized on the test shapes with F(4x4,3x3)).
 *
 * Epilogue: as oneDNN post-ops on the direct JIT implementation (fused,
 * measured free: 2.05 ms with add + relu vs 2.05 ms without, 64->64
 * 56x56).  oneDNN 2.6's Winograd takes eltwise and sum post-ops but no
 * binary one (no residual add): then it runs without post-ops and the
 * epilogue follows in vectorized C (eager_post_apply).  A sum post-op
 * would need the residual copied into the output first and measured no
 * faster.  The residual has the output's blocked layout; the epilogue is
 * elementwise, so the layout does not matter to it.
 *
 * Measured (bench/conv_layout.c, one shared Zen 4 core at ~117 GFLOP/s
 * peak, prepared, 64->64 56x56): NCHW conv2d 3.1 ms, blocked direct
 * 2.0 ms, blocked Winograd 0.72 ms (F(2x2,3x3): 1.02 ms), to_blocked +
 * from_blocked of the 64x56x56 tensor 0.04 ms together (0.075 ms with
 * the plain loops before the register transposes).
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "dnnl_util.h"
#include "wino.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)

/*
 * Transposes the 16x16 tile of floats at s (row i at s + i * ss) into d
 * (row j at d + j * ds) in registers: pairs interleaved as floats, then as
 * doubles, then 128-bit lanes exchanged twice (the usual 4-stage network;
 * after stage 2, u[4j + c] holds in lane L column 4L + c of rows 4j..4j+3).
 */
static inline void tr16(const float *restrict s, int64_t ss, float *restrict d, int64_t ds)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(s + i * ss);
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int j = 0; j < 4; j++) {
        __m512d a = _mm512_castps_pd(t[4 * j]), b = _mm512_castps_pd(t[4 * j + 1]);
        __m512d c = _mm512_castps_pd(t[4 * j + 2]), e = _mm512_castps_pd(t[4 * j + 3]);
        r[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
    }
    for (int c = 0; c < 4; c++) {
        __m512 v0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        __m512 v1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        __m512 w0 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        __m512 w1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        _mm512_storeu_ps(d + (0 + c) * ds, _mm512_shuffle_f32x4(v0, w0, 0x88));
        _mm512_storeu_ps(d + (4 + c) * ds, _mm512_shuffle_f32x4(v1, w1, 0x88));
        _mm512_storeu_ps(d + (8 + c) * ds, _mm512_shuffle_f32x4(v0, w0, 0xdd));
        _mm512_storeu_ps(d + (12 + c) * ds, _mm512_shuffle_f32x4(v1, w1, 0xdd));
    }
}
#else
/* The same tile transpose as plain loops (no AVX-512 at build time). */
static inline void tr16(const float *restrict s, int64_t ss, float *restrict d, int64_t ds)
{
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            d[j * ds + i] = s[i * ss + j];
}
#endif

#if defined(__AVX__)
/*
 * Transposes the 8x8 tile of floats at s (row i at s + i * ss) into d
 * (row j at d + j * ds) in AVX registers: pairs interleaved as floats,
 * then as pairs of floats (shuffles), then the 128-bit halves exchanged.
 */
static inline void tr8(const float *restrict s, int64_t ss, float *restrict d, int64_t ds)
{
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(s + i * ss);
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* t[0] = a0 b0 a1 b1 | a4 b4 a5 b5, t[2] = c0 d0 c1 d1 | ... */
    for (int j = 0; j < 2; j++) {
        __m256 a = t[4 * j], b = t[4 * j + 1], c = t[4 * j + 2], e = t[4 * j + 3];
        r[4 * j] = _mm256_shuffle_ps(a, c, 0x44);     /* a0 b0 c0 d0 | a4 .. */
        r[4 * j + 1] = _mm256_shuffle_ps(a, c, 0xee); /* a1 b1 c1 d1 | a5 .. */
        r[4 * j + 2] = _mm256_shuffle_ps(b, e, 0x44); /* a2 .. | a6 .. */
        r[4 * j + 3] = _mm256_shuffle_ps(b, e, 0xee); /* a3 .. | a7 .. */
    }
    for (int c = 0; c < 4; c++) {
        _mm256_storeu_ps(d + c * ds, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
        _mm256_storeu_ps(d + (4 + c) * ds, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
    }
}
#else
/* The same tile transpose as plain loops (no AVX at build time). */
static inline void tr8(const float *restrict s, int64_t ss, float *restrict d, int64_t ds)
{
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            d[j * ds + i] = s[i * ss + j];
}
#endif

/* The BxB tile transpose, B 16 or 8 (a constant where inlined). */
static inline __attribute__((always_inline)) void
tr_tile(int B, const float *restrict s, int64_t ss, float *restrict d, int64_t ds)
{
    if (B == 16)
        tr16(s, ss, d, ds);
    else
        tr8(s, ss, d, ds);
}

/*
 * One B-channel block: plain s (B planes of hw) <-> blocked d (hw rows
 * of B), a BxB tile transpose per B positions (measured on the
 * 64x56x56 tensor, B 16: ~2x faster than the plain loops it replaced),
 * the tail position by position.
 */
static inline __attribute__((always_inline)) void
block_one(int B, const float *restrict s, float *restrict d, int64_t hw)
{
    int64_t p0 = 0;
    for (; p0 + B <= hw; p0 += B)
        tr_tile(B, s + p0, hw, d + p0 * B, B);
    for (int64_t p = p0; p < hw; p++)
        for (int k = 0; k < B; k++)
            d[p * B + k] = s[k * hw + p];
}

static inline __attribute__((always_inline)) void
unblock_one(int B, const float *restrict s, float *restrict d, int64_t hw)
{
    int64_t p0 = 0;
    /* four tiles a step: 4B contiguous floats to each of the B planes
     * (measured ~20% faster than one tile a step, B 16) */
    for (; p0 + 4 * B <= hw; p0 += 4 * B)
        for (int q = 0; q < 4; q++)
            tr_tile(B, s + (p0 + q * B) * B, B, d + p0 + q * B, hw);
    for (; p0 + B <= hw; p0 += B)
        tr_tile(B, s + p0 * B, B, d + p0, hw);
    for (int64_t p = p0; p < hw; p++)
        for (int k = 0; k < B; k++)
            d[k * hw + p] = s[p * B + k];
}

/*
 * The last block of a padded tensor: the rem real channels, and zeros in
 * the lanes past them (to), or only the real channels back (from).
 */
static void block_part(int B, const float *restrict s, float *restrict d, int64_t hw,
                       int64_t rem)
{
    for (int64_t p = 0; p < hw; p++)
        for (int k = 0; k < B; k++)
            d[p * B + k] = k < rem ? s[k * hw + p] : 0.0f;
}

static void unblock_part(int B, const float *restrict s, float *restrict d, int64_t hw,
                         int64_t rem)
{
    for (int64_t k = 0; k < rem; k++)
        for (int64_t p = 0; p < hw; p++)
            d[k * hw + p] = s[p * B + k];
}

/*
 * Runs block_one / unblock_one over every (n, channel block) of the plain
 * [N,C,H,W] type, B lanes a block; a last block past C takes the _part
 * forms.
 */
static inline __attribute__((always_inline)) void
convert_b(const eager_kargs *a, const graph_type *plain, int to, int B)
{
    int64_t c = plain->dim[1], cb = (c + B - 1) / B, nb = plain->dim[0] * cb;
    int64_t hw = plain->dim[2] * plain->dim[3];
    const float *in = a->in[0];
    float *out = a->out[0];
#pragma omp parallel for num_threads(a->nthreads) if (nb * hw * B >= EAGER_PAR_MIN)
    for (int64_t i = 0; i < nb; i++) {
        int64_t n = i / cb, b = i % cb, rem = c - b * B;
        const float *s = in + (to ? (n * c + b * B) * hw : i * B * hw);
        float *d = out + (to ? i * B * hw : (n * c + b * B) * hw);
        if (rem < B)
            (to ? block_part : unblock_part)(B, s, d, hw, rem);
        else if (to)
            block_one(B, s, d, hw);
        else
            unblock_one(B, s, d, hw);
    }
}

/* blocked: the blocked side's type, whose dim 4 is B (infer: 8 or 16). */
static tg_status convert(const eager_kargs *a, const graph_type *plain,
                         const graph_type *blocked, int to)
{
    if (blocked->dim[4] == 16)
        convert_b(a, plain, to, 16);
    else
        convert_b(a, plain, to, 8);
    return TG_OK;
}

tg_status eager_kernel_to_blocked(const eager_kargs *a)
{
    return convert(a, &a->in_type[0], a->out_type, 1);
}

tg_status eager_kernel_from_blocked(const eager_kargs *a)
{
    return convert(a, a->out_type, &a->in_type[0], 0);
}

/* Output channels O of a conv2d_blk (its weights' dim 0). */
static int64_t blk_out_channels(const eager_kargs *a)
{
    return a->in_type[1].dim[0];
}

/* Zeros into the lanes past O of the blocked output's last block. */
static void zero_pad_lanes(const eager_kargs *a)
{
    const graph_type *y = a->out_type;
    int64_t o = blk_out_channels(a), cb = y->dim[1], hw = y->dim[2] * y->dim[3];
    int64_t B = y->dim[4];
    if (o % B == 0 || cb == 0)
        return;
    float *out = a->out[0];
    for (int64_t n = 0; n < y->dim[0]; n++) {
        float *d = out + (n * cb + cb - 1) * hw * B;
        for (int64_t p = 0; p < hw; p++)
            for (int64_t k = o % B; k < B; k++)
                d[p * B + k] = 0.0f;
    }
}

/* Every output element its channel's bias (empty input: no taps). */
static void fill_bias_blocked(const eager_kargs *a)
{
    const graph_type *y = a->out_type;
    int64_t nb = y->dim[0] * y->dim[1], hw = y->dim[2] * y->dim[3], o = blk_out_channels(a);
    int64_t B = y->dim[4];
    const float *b = a->nin > 2 ? a->in[2] : NULL;
    float *out = a->out[0];
    for (int64_t i = 0; i < nb; i++)
        for (int64_t p = 0; p < hw; p++)
            for (int64_t k = 0; k < B; k++) {
                int64_t ch = (i % y->dim[1]) * B + k;
                out[(i * hw + p) * B + k] = b && ch < o ? b[ch] : 0.0f;
            }
}

/* oneDNN's tag for a blocked tensor of block B (8 or 16). */
static dnnl_format_tag_t blk_tag(int64_t B)
{
    return B == 8 ? dnnl_nChw8c : dnnl_nChw16c;
}

/*
 * x, w, b, y memory descriptors: x / y nChw16c or nChw8c (the output's
 * block, y's dim 4) over the plain dims (x nchw when it is plain: a
 * stem), w plain OIHW (goihw when grouped).
 */
static dnnl_status_t blk_mds(const eager_kargs *a, dnnl_memory_desc_t md[4])
{
    const graph_type *x = &a->in_type[0], *w = &a->in_type[1], *y = a->out_type;
    int64_t g = ((const graph_conv2d_blk_attrs *)a->attrs)->groups;
    /* C and O from the weights (the blocks may be padded) */
    dnnl_dims_t dx = {x->dim[0], w->dim[1] * g, x->dim[2], x->dim[3]};
    dnnl_dims_t dy = {y->dim[0], w->dim[0], y->dim[2], y->dim[3]};
    dnnl_dims_t dw = {w->dim[0], w->dim[1], w->dim[2], w->dim[3]}, db = {dy[1]};
    dnnl_dims_t dgw = {g, w->dim[0] / g, w->dim[1], w->dim[2], w->dim[3]};
    dnnl_format_tag_t tag = blk_tag(y->dim[4]);
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md[0], 4, dx, dnnl_f32,
                                                   x->ndim == 4 ? dnnl_nchw : tag);
    if (s == dnnl_success)
        s = g > 1 ? dnnl_memory_desc_init_by_tag(&md[1], 5, dgw, dnnl_f32, dnnl_goihw)
                  : dnnl_memory_desc_init_by_tag(&md[1], 4, dw, dnnl_f32, dnnl_oihw);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[2], 1, db, dnnl_f32, dnnl_a);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&md[3], 4, dy, dnnl_f32, tag);
    return s;
}

/*
 * Builds the prim for one algorithm (weights packed from plain OIHW);
 * with_post: the epilogue as oneDNN post-ops, else none (run in C);
 * convert: x and y described as format any, the prim reordering them from
 * and to their blocks at each run (eager_dnnl_spec.convert), for a block
 * this CPU's oneDNN has only a reference kernel for (16 lanes at AVX2: a
 * plan laid out on another machine that could not be re-planned).
 */
static tg_status blk_prepare(const eager_kargs *a, dnnl_alg_kind_t alg, int with_post,
                             int convert, eager_dnnl_prim **out)
{
    const graph_conv2d_blk_attrs *at = a->attrs;
    eager_dnnl_spec sp = {"convolution", NULL, NULL, 3,
                          {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, {{0}}, 1};
    dnnl_memory_desc_t md[4], wany, xd, yd;
    dnnl_convolution_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    int64_t stride[2], dil[2], pad[4];
    int res_index = -1;
    graph_ints_pair(&at->stride, 1, stride);
    graph_ints_pair(&at->dilation, 1, dil);
    graph_ints_pad4(&at->padding, pad);
    /* oneDNN counts dilation from 0 (0 = dense kernel). */
    dnnl_dims_t ds = {stride[0], stride[1]}, dd = {dil[0] - 1, dil[1] - 1};
    dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2], pad[3]};
    dnnl_status_t s = blk_mds(a, md);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&wany, md[1].ndims, md[1].dims, dnnl_f32,
                                         dnnl_format_tag_any);
    xd = md[0], yd = md[3];
    if (s == dnnl_success && convert)
        s = dnnl_memory_desc_init_by_tag(&xd, 4, md[0].dims, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success && convert)
        s = dnnl_memory_desc_init_by_tag(&yd, 4, md[3].dims, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, alg,
                                                       &xd, &wany, &md[2], &yd, ds, dd,
                                                       pl, pr);
    if (s == dnnl_success && with_post)
        s = eager_dnnl_post_attr(&at->post, GRAPH_POST_PRM(at), &md[3], &attr, &res_index);
    if (s != dnnl_success)
        return eager_dnnl_fail(a, "convolution descriptor", s);
    sp.md[0] = md[0], sp.md[1] = md[1], sp.md[2] = md[3];
    sp.arg[3] = DNNL_ARG_BIAS;
    sp.md[3] = md[2];
    sp.nargs = 4;
    if (res_index >= 0) {
        sp.arg[sp.nargs] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(res_index) | DNNL_ARG_SRC_1;
        sp.md[sp.nargs++] = md[3];
    }
    sp.convert = convert ? 5u : 0u;
    sp.desc = &desc;
    sp.attr = attr;
    sp.post = with_post ? &at->post : NULL;
    sp.prm = GRAPH_POST_PRM(at);
    sp.prefer = alg == dnnl_convolution_winograd      ? "wino_4x3"
                : a->impl == EAGER_CONV_DIRECT_JIT ? "jit:"
                                                   : NULL;
    tg_status st = eager_dnnl_prim_new(a, &sp, out);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/*
 * Nonzero when Winograd is worth trying: 3x3, stride 1, dense, and asked
 * for (algo 2), or algo auto with a state slot to keep the transformed
 * weights in.  Without one (an eager call, or weights that may change)
 * auto takes direct: oneDNN 2.6's Winograd weight transform
 * ("wino_reorder", plain C) would run on every call: 146 ms for 512->512
 * on a 7x7 map, where direct takes 2.8 ms in all (0.9 ms of it the
 * weights' reorder); at 64->64 56x56 the transform (1.4-1.7 ms) and the
 * Winograd conv (1.0 ms) still lose to direct (2.1 ms).  ONEDNN_VERBOSE=2
 * timings, one thread, shared 2-core AMD EPYC.
 */
static int wino_shape(const eager_kargs *a)
{
    const graph_conv2d_blk_attrs *at = a->attrs;
    const graph_type *w = &a->in_type[1];
    int64_t stride[2], dil[2];
    graph_ints_pair(&at->stride, 1, stride);
    graph_ints_pair(&at->dilation, 1, dil);
    int want = a->impl == EAGER_CONV_WINOGRAD || (a->impl == EAGER_CONV_DEFAULT &&
                                                  (at->algo == 2 || (at->algo == 0 && a->state)));
    return want && w->dim[2] == 3 && w->dim[3] == 3 && stride[0] == 1 && stride[1] == 1 &&
           dil[0] == 1 && dil[1] == 1;
}

/*
 * The prepared state: the prim (in its own slot, so dnnl_util.c manages
 * it) and whether the epilogue runs in C after it: Winograd in oneDNN 2.6
 * takes no binary (residual) post-op and few eltwise ones, and Winograd
 * plus the epilogue in C still beats direct with fused post-ops (measured
 * in bench/conv_layout.c).
 */
typedef struct blk_state {
    eager_kstate base;
    eager_kstate *prim;
    int post_in_c;
    eager_wino *wino; /* our Winograd's weights, instead of prim */
} blk_state;

static void blk_state_free(eager_kstate *s)
{
    eager_kstate_free(((blk_state *)s)->prim);
    eager_wino_free(((blk_state *)s)->wino);
    tg_free(s);
}

/*
 * Nonzero when our Winograd (kernels_wino.c) can take a conv that wants
 * Winograd (wino_shape) and that oneDNN has none for: 8-lane blocks in
 * and out, not grouped.  The name the probes report.
 */
static int wino_ours_ok(const eager_kargs *a)
{
    const graph_conv2d_blk_attrs *at = a->attrs;
    return at->groups == 1 && a->in_type[0].ndim == 5 && a->in_type[0].dim[4] == 8 &&
           a->out_type->dim[4] == 8;
}

#if defined(TG_ISA_NAME)
#define WINO_NAME "tg_wino_4x3:" TG_ISA_NAME
#elif defined(TG_ISA_MULTI)
#define WINO_NAME "tg_wino_4x3:baseline"
#else
#define WINO_NAME "tg_wino_4x3:native"
#endif

/* y = our Winograd conv of x + bias, then the epilogue in C. */
static tg_status wino_run(const eager_kargs *a, const eager_wino *w)
{
    const graph_conv2d_blk_attrs *at = a->attrs;
    const graph_type *x = &a->in_type[0], *y = a->out_type;
    int64_t pad[4];
    graph_ints_pad4(&at->padding, pad);
    eager_wino_args wa = {a->in[0], a->nin > 2 ? a->in[2] : NULL, a->out[0],
                          x->dim[0], x->dim[1] * 8, y->dim[1] * 8, blk_out_channels(a),
                          x->dim[2], x->dim[3], y->dim[2], y->dim[3], pad[0], pad[1],
                          a->nthreads, a->nin > 3 ? a->in[3] : NULL, 0, {0, 0}};
    /* relu and the residual add run in the output transform (one pass
     * fewer over y); any other epilogue in C after it */
    int inline_post = at->post.n <= 2;
    for (int i = 0; i < at->post.n && inline_post; i++) {
        if (at->post.v[i] == GRAPH_POST_ADD && wa.res)
            wa.post[i] = EAGER_WINO_ADD;
        else if (at->post.v[i] == GRAPH_POST_RELU)
            wa.post[i] = EAGER_WINO_RELU;
        else
            inline_post = 0;
    }
    wa.npost = inline_post ? (int)at->post.n : 0;
    tg_status st = eager_wino_run(w, &wa);
    if (st != TG_OK)
        return eager_kernel_fail(a, st, "conv2d_blk: Winograd F(4x4,3x3) failed (%s)",
                                 st == TG_ERR_NOMEM ? "out of memory" : "sgemm");
    if (at->post.n > 0 && !inline_post)
        eager_post_apply(a->out[0], graph_type_numel(y), &at->post, GRAPH_POST_PRM(at),
                         a->nin > 3 ? a->in[3] : NULL, a->nthreads);
    zero_pad_lanes(a);
    return TG_OK;
}

/* Our Winograd's weights for a (NULL: out of memory, reported). */
static eager_wino *wino_prepare(const eager_kargs *a)
{
    const graph_type *w = &a->in_type[1];
    eager_wino *p = eager_wino_prepare(a->in[1], w->dim[0], w->dim[1], a->in_type[0].dim[1] * 8,
                                       a->out_type->dim[1] * 8);
    if (!p)
        eager_kernel_fail(a, TG_ERR_NOMEM, "out of memory preparing conv2d_blk's Winograd");
    return p;
}

/*
 * Tries Winograd (fused post-ops, then without), then direct.  When
 * oneDNN has only a reference kernel for direct on these blocks (a plan
 * laid out for 16 lanes run at AVX2: ~1000x slower), its direct kernel on
 * the layout it picks, x and y converted at each run, the epilogue in C
 * on the blocked output (where the residual has the same layout).
 */
static tg_status blk_choose(const eager_kargs *a, eager_dnnl_prim **p, int *post_in_c,
                            int *ours)
{
    const graph_conv2d_blk_attrs *at = a->attrs;
    tg_status st = TG_ERR_BACKEND;
    *post_in_c = 0;
    *ours = 0;
    if (wino_shape(a)) {
        st = blk_prepare(a, dnnl_convolution_winograd, 1, 0, p);
        if (st != TG_OK && at->post.n > 0 &&
            (st = blk_prepare(a, dnnl_convolution_winograd, 0, 0, p)) == TG_OK)
            *post_in_c = 1;
        if (st != TG_OK && a->err && a->errlen)
            a->err[0] = '\0'; /* no Winograd here: ours, else direct */
        if (st != TG_OK && wino_ours_ok(a)) {
            *ours = 1;
            return TG_OK;
        }
    }
    if (st != TG_OK)
        st = blk_prepare(a, dnnl_convolution_direct, 1, 0, p);
    if (st == TG_OK && !*post_in_c && eager_dnnl_impl_is_ref(eager_dnnl_prim_impl(*p))) {
        eager_dnnl_prim *q = NULL;
        if (blk_prepare(a, dnnl_convolution_direct, 0, 1, &q) == TG_OK) {
            if (!eager_dnnl_impl_is_ref(eager_dnnl_prim_impl(q))) {
                eager_dnnl_prim_replaces(q, eager_dnnl_prim_impl(*p));
                eager_dnnl_prim_free(*p);
                *p = q;
                *post_in_c = at->post.n > 0;
            } else {
                eager_dnnl_prim_free(q);
            }
        } else if (a->err && a->errlen) {
            a->err[0] = '\0'; /* keep the reference kernel */
        }
    }
    return st;
}

static tg_status blk_run(const eager_kargs *a)
{
    const graph_conv2d_blk_attrs *at = a->attrs;
    if (graph_type_numel(a->out_type) == 0)
        return TG_OK;
    const void *res = a->nin > 3 ? a->in[3] : NULL;
    if (graph_type_numel(&a->in_type[0]) == 0) {
        fill_bias_blocked(a);
        eager_post_apply(a->out[0], graph_type_numel(a->out_type), &at->post,
                         GRAPH_POST_PRM(at), res, a->nthreads);
        zero_pad_lanes(a);
        return TG_OK;
    }
    blk_state *bs = a->state ? (blk_state *)*a->state : NULL;
    if (a->state && !bs) {
        if (!(bs = tg_calloc(1, sizeof *bs)))
            return eager_kernel_fail(a, TG_ERR_NOMEM, "out of memory preparing conv2d_blk");
        bs->base.free = blk_state_free;
        *a->state = &bs->base;
    }
    if (bs && bs->wino)
        return wino_run(a, bs->wino);
    eager_kargs b = *a;
    b.state = bs ? &bs->prim : NULL;
    int post_in_c = bs ? bs->post_in_c : 0, ours = 0;
    eager_dnnl_prim *p = eager_dnnl_prim_get(&b);
    tg_status st;
    if (!p && (st = blk_choose(&b, &p, &post_in_c, &ours)) != TG_OK)
        return st;
    if (ours) {
        if (eager_dnnl_probe_report(WINO_NAME))
            return TG_ERR_STATE; /* a probe: no data to run on */
        eager_wino *w = wino_prepare(a);
        if (!w)
            return TG_ERR_NOMEM;
        if (bs) {
            bs->wino = w;
            return wino_run(a, w);
        }
        st = wino_run(a, w); /* eager, algo 2: the weights transformed per call */
        eager_wino_free(w);
        return st;
    }
    if (bs)
        bs->post_in_c = post_in_c;
    const void *data[5] = {a->in[0], a->in[1], a->out[0], a->in[2], res};
    if ((st = eager_dnnl_prim_finish(&b, p, data)) == TG_OK && post_in_c)
        eager_post_apply(a->out[0], graph_type_numel(a->out_type), &at->post,
                         GRAPH_POST_PRM(at), res, a->nthreads);
    /* The epilogue in C may leave the lanes past O nonzero, and the next
     * conv reads them (times zero weights: a NaN or inf there spreads) */
    if (st == TG_OK)
        zero_pad_lanes(a);
    return st;
}

tg_status eager_kernel_conv2d_blk(const eager_kargs *a)
{
    if (a->state && !(a->fixed_in & 2u)) {
        /* The packed weights may go stale: no prepared state. */
        eager_kargs b = *a;
        b.state = NULL;
        b.fixed_in = 0;
        return blk_run(&b);
    }
    return blk_run(a);
}

/*
 * max_pool2d_blk / avg_pool2d_blk: the plain pools' windows and values
 * (eager/kernels_pool.c: max propagates NaN; avg divides by kh*kw with
 * count_include_pad, else by the in-bounds count) on [N,CB,H,W,B], and
 * their separable scheme: per output row, the window's input rows are
 * combined into one padded row of B-lane pixels (padding columns hold
 * the identity), then each output pixel combines kw pixels of it; the B
 * lanes are the vector (pool_sweep).  Zero lanes pool to zeros.  (A first version that
 * walked each window pixel by pixel made googlenet's -O3 48 ms instead of
 * 28 ms.)
 */
static inline float pool_max(float acc, float v)
{
    return (v > acc || v != v) ? v : acc;
}

/* pool_max (or the sum) on 8 or 16 lanes at once. */
#if defined(__AVX__)
static inline __m256 pool_comb8(__m256 a, __m256 v, int avg)
{
    if (avg)
        return _mm256_add_ps(a, v);
    __m256 m = _mm256_or_ps(_mm256_cmp_ps(v, a, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_ps(a, v, m);
}
#endif
#if defined(__AVX512F__)
static inline __m512 pool_comb16(__m512 a, __m512 v, int avg)
{
    if (avg)
        return _mm512_add_ps(a, v);
    __mmask16 m = _mm512_cmp_ps_mask(v, a, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(a, m, v);
}
#endif

/*
 * d[0..n) = the combination (max propagating NaN, or sum), in order, of
 * count arrays of n floats, the c-th at s + c*stride: the window's rows
 * (stride a row, n a row's floats) or one output pixel's kw pixels
 * (stride B, n = B).  n is a multiple of B, and B (16 or 8) of the
 * vector: each vector is combined in a register and stored once.  (The
 * first version combined into memory: a copy, then a load, combine and
 * store per input, and each output pixel's accumulator went through the
 * stack.  The store-to-load stalls made squeezenet1_1's three 3x3 pools
 * 0.71 ms of its 6.0 at AVX2.)  As vectors where the kernel set has them
 * (GCC left the plain loop scalar here: 5.8 ms for a 3x3 stride-1 pool
 * of 192x56x56, 0.2 ms vectorized with AVX-512; the plain NCHW pool
 * takes 0.6 ms).
 */
static inline __attribute__((always_inline)) void
pool_sweep(int B, float *restrict d, const float *restrict s, int64_t stride, int64_t count,
           int64_t n, int avg)
{
    int64_t j = 0;
#if defined(__AVX512F__)
    if (B == 16) {
        for (; j < n; j += 16) {
            __m512 a = _mm512_loadu_ps(s + j);
            for (int64_t c = 1; c < count; c++)
                a = pool_comb16(a, _mm512_loadu_ps(s + c * stride + j), avg);
            _mm512_storeu_ps(d + j, a);
        }
        return;
    }
#endif
#if defined(__AVX__)
    for (; j < n; j += 8) {
        __m256 a = _mm256_loadu_ps(s + j);
        for (int64_t c = 1; c < count; c++)
            a = pool_comb8(a, _mm256_loadu_ps(s + c * stride + j), avg);
        _mm256_storeu_ps(d + j, a);
    }
#else
    (void)B;
    for (; j < n; j++) {
        float a = s[j];
        for (int64_t c = 1; c < count; c++)
            a = avg ? a + s[c * stride + j] : pool_max(a, s[c * stride + j]);
        d[j] = a;
    }
#endif
}

typedef struct pool_blk_geom {
    int64_t h, w, oh, ow, kh, kw, sh, sw, pt, pl, pr;
    int include_pad;
} pool_blk_geom;

/* One output row (oh) of one block plane x; row: (pl + w + pr) * B. */
static inline __attribute__((always_inline)) void
pool_blk_row(const pool_blk_geom *g, const float *restrict x, int64_t oh, float *restrict row,
             float *restrict y, int avg, int B)
{
    const float ident = avg ? 0.0f : -INFINITY;
    int64_t h0 = oh * g->sh - g->pt, h1 = h0 + g->kh;
    h0 = h0 < 0 ? 0 : h0;
    h1 = h1 > g->h ? g->h : h1;
    int64_t pw = (g->pl + g->w + g->pr) * B, in0 = g->pl * B, n = g->w * B;
    for (int64_t i = 0; i < in0; i++)
        row[i] = ident;
    for (int64_t i = in0 + n; i < pw; i++)
        row[i] = ident;
    float *restrict rc = row + in0;
    if (h0 >= h1) {
        for (int64_t i = 0; i < n; i++)
            rc[i] = ident;
    } else {
        pool_sweep(B, rc, x + h0 * n, n, h1 - h0, n, avg);
    }
    float nrows = g->include_pad ? (float)g->kh : (float)(h1 > h0 ? h1 - h0 : 0);
    for (int64_t o = 0; o < g->ow; o++) {
        float *restrict yo = y + o * B;
        pool_sweep(B, yo, row + o * g->sw * B, B, g->kw, B, avg);
        if (avg) {
            int64_t w0 = o * g->sw - g->pl, w1 = w0 + g->kw;
            w0 = w0 < 0 ? 0 : w0;
            w1 = w1 > g->w ? g->w : w1;
            float cnt = nrows * (g->include_pad ? (float)g->kw : (float)(w1 > w0 ? w1 - w0 : 0));
            for (int l = 0; l < B; l++)
                yo[l] /= cnt; /* 0/0 = NaN: an empty window */
        }
    }
}

static tg_status pool_blk(const eager_kargs *a, const graph_ints *kl, const graph_ints *sl,
                          const graph_ints *pl, int avg, int include_pad)
{
    const graph_type *x = &a->in_type[0], *y = a->out_type;
    int64_t k[2], s[2], p[4], B = x->dim[4]; /* infer: 8 or 16, y's too */
    eager_pool_window(kl, sl, pl, k, s, p);
    pool_blk_geom g = {x->dim[2], x->dim[3], y->dim[2], y->dim[3], k[0], k[1], s[0],
                       s[1],      p[0],      p[1],      p[3],      include_pad};
    int64_t planes = y->dim[0] * y->dim[1], rows = planes * g.oh;
    if (graph_type_numel(y) == 0)
        return TG_OK;
    int nt = graph_type_numel(x) >= EAGER_PAR_MIN ? a->nthreads : 1;
    if (nt > rows)
        nt = (int)rows;
    /* one padded row per thread (sizes fit: infer bounds every dim) */
    int64_t pw = (g.pl + g.w + g.pr) * B;
    float *buf = tg_malloc((size_t)nt * (size_t)pw * sizeof *buf + 1);
    if (!buf)
        return eager_kernel_fail(a, TG_ERR_NOMEM, "no memory for %d rows of %lld floats", nt,
                                 (long long)pw);
    const float *in = a->in[0];
    float *out = a->out[0];
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float *row = buf + (int64_t)omp_get_thread_num() * pw;
        const float *xp = in + r / g.oh * g.h * g.w * B;
        float *yr = out + r * g.ow * B;
        /* one instance per (avg, B): constant lanes, unrolled vectors */
        if (B == 16) {
            if (avg)
                pool_blk_row(&g, xp, r % g.oh, row, yr, 1, 16);
            else
                pool_blk_row(&g, xp, r % g.oh, row, yr, 0, 16);
        } else {
            if (avg)
                pool_blk_row(&g, xp, r % g.oh, row, yr, 1, 8);
            else
                pool_blk_row(&g, xp, r % g.oh, row, yr, 0, 8);
        }
    }
    tg_free(buf);
    return TG_OK;
}

tg_status eager_kernel_max_pool2d_blk(const eager_kargs *a)
{
    const graph_max_pool2d_blk_attrs *at = a->attrs;
    return pool_blk(a, &at->kernel, &at->stride, &at->padding, 0, 0);
}

tg_status eager_kernel_avg_pool2d_blk(const eager_kargs *a)
{
    const graph_avg_pool2d_blk_attrs *at = a->attrs;
    return pool_blk(a, &at->kernel, &at->stride, &at->padding, 1, (int)at->count_include_pad);
}
