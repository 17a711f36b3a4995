/*
 * test_train_ops.c - the training-mode ops (rng_advance, dropout,
 * batch_norm_train), the thread's generator and the eager wrappers, the
 * passes' respect of random ops, and the train/eval switch.
 *
 * References, each independent of the code under test:
 * - Philox4x32-10 against the known-answer vectors published with
 *   Random123 (its tests/kat_vectors: counter and key all zero, all ones,
 *   and the digits of pi);
 * - dropout element by element from philox4x32_10 with the counter and
 *   word computed here from the documented mapping (draw i = word
 *   (offset + i) % 4 of block (offset + i) / 4, key = seed), then
 *   x * (u >= p ? 1/(1-p) : 0), bit for bit, at 1 and 4 threads;
 * - batch_norm_train against loops in double written here (PyTorch's
 *   definitions: biased variance to normalize, unbiased for the running
 *   variance), over several steps of the eager wrapper;
 * - the eval switch against the eager model in eval form (batch_norm on
 *   the running statistics, no dropout), bit for bit.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "eager/philox.h"
#include "formats/tgraph.h"
#include "graph/grad.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

/* ---- Philox4x32-10: Random123's known answers ---- */

static void test_philox_kat(void)
{
    static const struct {
        uint32_t ctr[4], key[2], want[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        philox4x32_10(kat[k].ctr, kat[k].key, out);
        CHECK_MSG(!memcmp(out, kat[k].want, sizeof out),
                  "kat %d: %08x %08x %08x %08x, want %08x %08x %08x %08x", k, out[0], out[1],
                  out[2], out[3], kat[k].want[0], kat[k].want[1], kat[k].want[2],
                  kat[k].want[3]);
    }
    /* the stream's block b is Philox at counter {b low, b high, 0, 0} */
    uint32_t a[4], b[4];
    philox_block(0x0123456789abcdefull, 0x00000001fffffffeull, a);
    philox4x32_10((uint32_t[4]){0xfffffffe, 1, 0, 0}, (uint32_t[2]){0x89abcdef, 0x01234567}, b);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(philox_uniform(0xffffffffu) == 1.0f - 0x1p-24f && philox_uniform(0xffu) == 0.0f);
    /* 64 words at once (the dropout kernel's) are 16 blocks of philox_block,
     * including across the wrap of the word numbers at 2^64 */
    static const uint64_t starts[] = {0, 4, 0x00000003fffffff8ull, 0xffffffffffffffe0ull,
                                      0xfffffffffffffffcull, 0x123456789abcdef0ull};
    for (int k = 0; k < 6; k++) {
        uint32_t words[64];
        uint64_t seed = 0xdeadbeefcafef00dull * (uint64_t)(k + 1);
        uint32_t words_c[64];
        philox_words64(seed, starts[k], words);
        philox_words64_c(seed, starts[k], words_c);
        int same = !memcmp(words, words_c, sizeof words);
        for (int l = 0; l < 16; l++) {
            uint32_t blk[4];
            philox_block(seed, (starts[k] + 4u * (uint64_t)l) >> 2, blk);
            same &= !memcmp(blk, words + 4 * l, sizeof blk);
        }
        CHECK_MSG(same, "philox_words64 from word %llu differs from philox_block",
                  (unsigned long long)starts[k]);
    }
}

/* ---- the reference dropout ---- */

static float ref_uniform(uint64_t seed, uint64_t word)
{
    uint64_t blk = word / 4;
    uint32_t out[4];
    philox4x32_10((uint32_t[4]){(uint32_t)blk, (uint32_t)(blk >> 32), 0, 0},
                  (uint32_t[2]){(uint32_t)seed, (uint32_t)(seed >> 32)}, out);
    return (float)(out[word % 4] >> 8) / 16777216.0f;
}

static eager_tensor *gen_of(uint64_t seed, uint64_t offset)
{
    int64_t v[2] = {(int64_t)seed, (int64_t)offset};
    return eager_from_data(GRAPH_I64, TG_SHAPE(2), v);
}

/* y must be dropout(x) with generator {seed, offset} and p, bit for bit;
 * returns the number kept. */
static int64_t check_dropout(const eager_tensor *x, const eager_tensor *y, uint64_t seed,
                             uint64_t offset, float p, const char *what)
{
    const float *xs = eager_peek(x), *ys = eager_peek(y);
    int64_t n = eager_numel(x), kept = 0, bad = -1;
    float scale = (float)(1.0 / (1.0 - (double)p));
    for (int64_t i = 0; i < n; i++) {
        int keep = p == 0.0f || ref_uniform(seed, offset + (uint64_t)i) >= p;
        float want = p == 0.0f ? xs[i] : xs[i] * (keep ? scale : 0.0f);
        kept += keep;
        if (memcmp(&want, &ys[i], sizeof want) && bad < 0)
            bad = i;
    }
    CHECK_MSG(bad < 0, "%s: element %lld: %g, want %g", what, (long long)bad,
              bad >= 0 ? (double)ys[bad] : 0.0, bad >= 0 ? (double)xs[bad] : 0.0);
    return kept;
}

static void test_dropout_op(void)
{
    eager_pool_push();
    /* the last two: a block counter crossing 2^32 (its high word carried
     * within one call of the kernel's 16 blocks), and the words' 2^64 wrap;
     * the kernel's Philox is this level's (AVX-512, AVX2 or portable: make
     * test runs each) */
    static const uint64_t offsets[] = {0, 1, 2, 3, 4, 0x00000003ffffffe0ull,
                                       0xfffffffffffffff0ull};
    for (int k = 0; k < 7; k++) {
        eager_tensor *x = eager_rand_uniform(TG_SHAPE(3, 37), 7 + (uint64_t)k, -2, 2);
        eager_tensor *g = gen_of(0x9e3779b97f4a7c15ull * (uint64_t)(k + 1), offsets[k]);
        eager_tensor *y = eager_dropout_op(x, g, 0.3f);
        char what[64];
        snprintf(what, sizeof what, "offset %llu", (unsigned long long)offsets[k]);
        CHECK(y != NULL);
        if (y)
            check_dropout(x, y, 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1), offsets[k], 0.3f,
                          what);
    }
    /* many elements: threads do not change a draw; the kept fraction */
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(200000), 3, -1, 1);
    eager_tensor *g = gen_of(12345, 8);
    eager_tensor *y1 = eager_dropout_op(x, g, 0.25f);
    eager_set_threads(4);
    eager_tensor *y4 = eager_dropout_op(x, g, 0.25f);
    eager_set_threads(1);
    CHECK(y1 && y4 && !memcmp(eager_peek(y1), eager_peek(y4), 200000 * sizeof(float)));
    int64_t kept = y1 ? check_dropout(x, y1, 12345, 8, 0.25f, "200000 elements") : 0;
    CHECK_MSG(fabs((double)kept / 200000.0 - 0.75) < 0.005, "kept %lld of 200000 at p 0.25",
              (long long)kept);
    /* p = 0 is a copy; NaN stays NaN where dropped (x * 0) */
    CHECK(!memcmp(eager_peek(eager_dropout_op(x, g, 0.0f)), eager_peek(x), 200000 * sizeof(float)));
    eager_tensor *xn = eager_full(GRAPH_F32, TG_SHAPE(64), NAN);
    const float *yn = eager_peek(eager_dropout_op(xn, g, 0.5f));
    int allnan = 1;
    for (int i = 0; yn && i < 64; i++)
        allnan &= isnan(yn[i]);
    CHECK(yn && allnan);
    /* bad input */
    CHECK_FAILS(eager_dropout_op(x, g, 1.0f), "dropout: [200000] x i64[2]: p must be in [0, 1), got 1");
    CHECK_FAILS(eager_dropout_op(x, g, -0.5f), "p must be in [0, 1), got -0.5");
    CHECK_FAILS(eager_dropout_op(x, g, NAN), "p must be in [0, 1), got nan");
    eager_tensor *g3 = eager_zeros(GRAPH_I64, TG_SHAPE(3));
    CHECK_FAILS(eager_dropout_op(x, g3, 0.5f),
                "the generator (input 1) must be i64 [2] {seed, offset}, got i64 [3]");
    eager_tensor *gf = eager_zeros(GRAPH_F32, TG_SHAPE(2));
    CHECK_FAILS(eager_dropout_op(x, gf, 0.5f), "must be i64 [2] {seed, offset}, got f32 [2]");
    eager_tensor *xi = eager_zeros(GRAPH_I64, TG_SHAPE(4));
    CHECK_FAILS(eager_dropout_op(xi, g, 0.5f), "dtype i64 not supported");
    eager_pool_pop();
}

static void test_rng_advance(void)
{
    eager_pool_push();
    static const struct {
        int64_t off, n, want;
    } c[] = {{0, 0, 0}, {0, 1, 4}, {0, 4, 4}, {8, 5, 16}, {3, 37, 43}, {-4, 8, 4}};
    for (int k = 0; k < 6; k++) {
        eager_tensor *g = gen_of(77, (uint64_t)c[k].off);
        const int64_t *o = eager_peek(eager_rng_advance(g, c[k].n));
        CHECK_MSG(o && o[0] == 77 && o[1] == c[k].want, "offset %lld + n %lld: %lld, want %lld",
                  (long long)c[k].off, (long long)c[k].n, o ? (long long)o[1] : -1LL,
                  (long long)c[k].want);
        CHECK(((const int64_t *)eager_peek(g))[1] == c[k].off); /* never written */
    }
    eager_tensor *g = gen_of(1, 0);
    CHECK_FAILS(eager_rng_advance(g, -1), "rng_advance: i64[2]: n must be >= 0, got -1");
    eager_tensor *gf = eager_zeros(GRAPH_I64, TG_SHAPE(2, 1));
    CHECK_FAILS(eager_rng_advance(gf, 4), "must be i64 [2] {seed, offset}, got i64 [2,1]");
    CHECK(graph_grads[GRAPH_OP_rng_advance].kind == GRAD_KIND_NODIFF);
    eager_pool_pop();
}

/* ---- the thread's generator and eager_dropout ---- */

static void test_eager_rng(void)
{
    eager_pool_push();
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK); /* from scratch */
    const int64_t *g0 = eager_peek(eager_rng_get());
    CHECK(g0 && g0[0] == 0 && g0[1] == 0);
    CHECK(eager_manual_seed(42) == TG_OK);
    eager_tensor *gen = eager_retain(eager_rng_get());
    const int64_t *gv = eager_peek(gen);
    CHECK(gv && gv[0] == 42 && gv[1] == 0);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(5, 7), 11, -1, 1);
    eager_tensor *y = eager_dropout(x, 0.5);
    CHECK(y != NULL);
    if (y)
        check_dropout(x, y, 42, 0, 0.5f, "eager_dropout, first");
    /* the thread moved on to a new tensor; the old one is as it was */
    const int64_t *g1 = eager_peek(eager_rng_get());
    CHECK(eager_rng_get() != gen && g1 && g1[0] == 42 && g1[1] == 36);
    CHECK(gv[0] == 42 && gv[1] == 0);
    eager_tensor *y2 = eager_dropout(x, 0.5);
    if (y2)
        check_dropout(x, y2, 42, 36, 0.5f, "eager_dropout, second");
    CHECK(y2 && memcmp(eager_peek(y), eager_peek(y2), 35 * sizeof(float)));
    /* the same seed draws the same masks again */
    CHECK(eager_manual_seed(42) == TG_OK);
    eager_tensor *y3 = eager_dropout(x, 0.5);
    CHECK(y3 && !memcmp(eager_peek(y), eager_peek(y3), 35 * sizeof(float)));
    /* a saved generator set back */
    CHECK(eager_rng_set(gen) == TG_OK && eager_rng_get() == gen);
    eager_tensor *y4 = eager_dropout(x, 0.5);
    CHECK(y4 && !memcmp(eager_peek(y), eager_peek(y4), 35 * sizeof(float)));
    /* p = 0 still moves the generator on */
    eager_tensor *before = eager_rng_get();
    CHECK(eager_dropout(x, 0.0) != NULL && eager_rng_get() != before);
    /* errors */
    CHECK(eager_rng_set(eager_zeros(GRAPH_F32, TG_SHAPE(2))) == TG_ERR_SHAPE);
    CHECK_ERROR("eager_rng_set: a generator is an i64 [2] tensor {seed, offset}, got f32 [2]");
    CHECK_FAILS(eager_dropout(x, 1.5), "dropout: [5,7] x i64[2]: p must be in [0, 1), got 1.5");
    CHECK_FAILS(eager_dropout(EAGER_NONE, 0.5), "eager_dropout: no tensor (EAGER_NONE) as x");
    CHECK(eager_dropout(NULL, 0.5) == NULL && eager_status() == TG_OK);
    eager_release(gen);
    eager_pool_pop();
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK);
}

/* A thread's generator is its own, and goes when the thread exits. */
static void *rng_thread(void *arg)
{
    eager_tensor *x = arg;
    int ok = eager_manual_seed(5) == TG_OK;
    const int64_t *g = eager_peek(eager_rng_get());
    ok = ok && g && g[0] == 5 && g[1] == 0;
    eager_tensor *y = eager_dropout(x, 0.5); /* x is the main thread's: reading it is allowed */
    ok = ok && y && ((const int64_t *)eager_peek(eager_rng_get()))[1] == 36;
    eager_release(y);
    return (void *)(intptr_t)ok;
}

static void test_rng_threads(void)
{
    CHECK(eager_manual_seed(9) == TG_OK);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(5, 7), 11, -1, 1);
    long live = eager_live_tensors();
    pthread_t th;
    void *ok = NULL;
    CHECK(pthread_create(&th, NULL, rng_thread, x) == 0 && pthread_join(th, &ok) == 0 && ok);
    CHECK_MSG(eager_live_tensors() == live, "%ld tensors left by the thread",
              eager_live_tensors() - live);
    const int64_t *g = eager_peek(eager_rng_get()); /* this thread's: untouched */
    CHECK(g && g[0] == 9 && g[1] == 0);
    eager_release(x);
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK);
}

/* The gradient of dropout is exact: the same mask and scale. */
static void test_dropout_grad(void)
{
    eager_pool_push();
    CHECK(eager_manual_seed(7) == TG_OK);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(4, 9), 5, -1, 1);
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(4, 9), 6, -1, 1);
    CHECK(eager_requires_grad(x, 1) == TG_OK);
    eager_tensor *y = eager_dropout(x, 0.4);
    eager_tensor *loss = eager_reduce_sum(eager_mul(y, w), TG_NOINTS, 0);
    CHECK(eager_backward(loss) == TG_OK);
    eager_tensor *gx = eager_grad(x);
    CHECK(gx != NULL);
    if (gx)
        check_dropout(w, gx, 7, 0, 0.4f, "gradient of dropout");
    eager_zero_grad(x);
    eager_pool_pop();
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK);
}

/* ---- batch_norm_train against loops in double ---- */

typedef struct bn_ref {
    double mean[8], var[8], rmean[8], rvar[8];
} bn_ref;

/* One step of PyTorch's training batch norm on x [n, c, s] (c <= 8). */
static void bn_ref_step(const float *x, int64_t n, int64_t c, int64_t s, double eps,
                        double mom, const float *scale, const float *bias, bn_ref *r,
                        double *y)
{
    for (int64_t ch = 0; ch < c; ch++) {
        double sum = 0, sq = 0, m = (double)(n * s);
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++)
                sum += x[(b * c + ch) * s + i];
        double mean = sum / m;
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++) {
                double d = x[(b * c + ch) * s + i] - mean;
                sq += d * d;
            }
        r->mean[ch] = mean;
        r->var[ch] = sq / m;
        r->rmean[ch] = (1 - mom) * r->rmean[ch] + mom * mean;
        r->rvar[ch] = (1 - mom) * r->rvar[ch] + mom * sq / (m - 1);
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < s; i++) {
                int64_t k = (b * c + ch) * s + i;
                y[k] = (x[k] - mean) / sqrt(r->var[ch] + eps) * scale[ch] + bias[ch];
            }
    }
}

static double max_rel(const float *got, const double *want, int64_t n)
{
    double worst = 0, scale = 1e-3;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)got[i] - want[i]) / scale);
    return worst;
}

static void test_batch_norm_train(void)
{
    eager_pool_push();
    enum { N = 4, C = 3, S = 10 };
    const double eps = 1e-5, mom = 0.1;
    eager_tensor *scale = eager_rand_uniform(TG_SHAPE(C), 1, 0.5, 2);
    eager_tensor *bias = eager_rand_uniform(TG_SHAPE(C), 2, -1, 1);
    eager_tensor *rmean = eager_zeros(GRAPH_F32, TG_SHAPE(C));
    eager_tensor *rvar = eager_ones(GRAPH_F32, TG_SHAPE(C));
    eager_tensor *nbt = eager_zeros(GRAPH_I64, TG_NOINTS);
    bn_ref r = {{0}, {0}, {0}, {0}};
    for (int ch = 0; ch < C; ch++)
        r.rvar[ch] = 1;
    double y_ref[N * C * S];
    for (int step = 0; step < 4; step++) {
        /* shifted and scaled so the statistics are far from 0 and 1 */
        eager_tensor *x = eager_rand_normal(TG_SHAPE(N, C, 2, 5), 100 + (uint64_t)step, 3, 2);
        bn_ref_step(eager_peek(x), N, C, S, eps, mom, eager_peek(scale), eager_peek(bias), &r,
                    y_ref);
        eager_tensor *y = eager_batch_norm_train(x, scale, bias, rmean, rvar, nbt, eps, mom);
        CHECK_MSG(y != NULL, "step %d: %s", step, eager_error());
        if (!y)
            break;
        double e = max_rel(eager_peek(y), y_ref, N * C * S);
        CHECK_MSG(e < 2e-6, "step %d: y vs reference: %g", step, e);
        const float *rm = eager_peek(rmean), *rv = eager_peek(rvar);
        for (int ch = 0; ch < C; ch++) {
            CHECK_MSG(fabs(rm[ch] - r.rmean[ch]) < 1e-6 * fmax(1, fabs(r.rmean[ch])),
                      "step %d: running mean[%d] %g, want %g", step, ch, (double)rm[ch],
                      r.rmean[ch]);
            CHECK_MSG(fabs(rv[ch] - r.rvar[ch]) < 1e-6 * fmax(1, fabs(r.rvar[ch])),
                      "step %d: running var[%d] %g, want %g", step, ch, (double)rv[ch],
                      r.rvar[ch]);
        }
        CHECK(*(const int64_t *)eager_peek(nbt) == step + 1);
    }
    /* the op's own outputs: batch mean and 1/std */
    eager_tensor *x = eager_rand_normal(TG_SHAPE(N, C, S), 9, -1, 3);
    eager_tensor *in[5] = {x, scale, bias, rmean, rvar}, *out[5] = {0};
    CHECK(eager_batch_norm_train_op(x, scale, bias, rmean, rvar, 1e-3f, 0.5f, out, 5) == 5);
    bn_ref r2 = r;
    bn_ref_step(eager_peek(x), N, C, S, 1e-3, 0.5, eager_peek(scale), eager_peek(bias), &r2,
                y_ref);
    for (int ch = 0; out[4] && ch < C; ch++) {
        CHECK_NEAR(((const float *)eager_peek(out[3]))[ch], r2.mean[ch], 1e-6);
        CHECK_NEAR(((const float *)eager_peek(out[4]))[ch], 1 / sqrt(r2.var[ch] + 1e-3),
                   1e-6 / sqrt(r2.var[ch] + 1e-3));
        CHECK_NEAR(((const float *)eager_peek(out[1]))[ch], r2.rmean[ch], 1e-6);
        CHECK_NEAR(((const float *)eager_peek(out[2]))[ch], r2.rvar[ch], 1e-5);
    }
    (void)in;
    /* momentum 0 keeps, 1 replaces */
    CHECK(eager_batch_norm_train_op(x, scale, bias, rmean, rvar, 1e-5f, 0.0f, out, 5) == 5);
    CHECK(out[1] && !memcmp(eager_peek(out[1]), eager_peek(rmean), C * sizeof(float)));
    /* errors: one value per channel, attributes, the count, shapes */
    eager_tensor *x1 = eager_ones(GRAPH_F32, TG_SHAPE(1, C, 1, 1));
    CHECK_FAILS(eager_batch_norm_train(x1, scale, bias, rmean, rvar, nbt, 1e-5, 0.1),
                "batch_norm_train: [1,3,1,1] x [3] x [3] x [3] x [3]: expected more than 1 value "
                "per channel when training, got 1 (input [1,3,1,1])");
    CHECK(*(const int64_t *)eager_peek(nbt) == 4); /* nothing written */
    CHECK_FAILS(eager_batch_norm_train(x, scale, bias, rmean, rvar, nbt, 1e-5, 1.5),
                "momentum must be in [0, 1], got 1.5");
    CHECK_FAILS(eager_batch_norm_train(x, scale, bias, rmean, rvar, nbt, -1, 0.1),
                "eps must be finite and >= 0, got -1");
    eager_tensor *bad_nbt = eager_zeros(GRAPH_F32, TG_NOINTS);
    CHECK_FAILS(eager_batch_norm_train(x, scale, bias, rmean, rvar, bad_nbt, 1e-5, 0.1),
                "eager_batch_norm_train: num_batches_tracked must be one i64 element (or "
                "EAGER_NONE), got f32 []");
    eager_tensor *rm4 = eager_zeros(GRAPH_F32, TG_SHAPE(4));
    CHECK_FAILS(eager_batch_norm_train(x, scale, bias, rm4, rvar, EAGER_NONE, 1e-5, 0.1),
                "running_mean has shape [4], want [3]");
    eager_pool_pop();
}

/* Under autograd: y's gradient flows to x, scale and bias; the running
 * statistics are written under no-grad (the wrapper), not recorded. */
static void test_batch_norm_train_grad(void)
{
    eager_pool_push();
    enum { N = 3, C = 2, S = 4 };
    eager_tensor *x = eager_rand_normal(TG_SHAPE(N, C, S), 21, 1, 2);
    eager_tensor *scale = eager_rand_uniform(TG_SHAPE(C), 22, 0.5, 2);
    eager_tensor *bias = eager_rand_uniform(TG_SHAPE(C), 23, -1, 1);
    eager_tensor *rmean = eager_zeros(GRAPH_F32, TG_SHAPE(C));
    eager_tensor *rvar = eager_ones(GRAPH_F32, TG_SHAPE(C));
    eager_tensor *w = eager_rand_uniform(TG_SHAPE(N, C, S), 24, -1, 1);
    CHECK(eager_requires_grad(x, 1) == TG_OK && eager_requires_grad(scale, 1) == TG_OK &&
          eager_requires_grad(bias, 1) == TG_OK);
    eager_tensor *y = eager_batch_norm_train(x, scale, bias, rmean, rvar, EAGER_NONE, 1e-5, 0.1);
    CHECK_MSG(y != NULL, "%s", eager_error());
    CHECK(!eager_is_requires_grad(rmean) && !eager_is_requires_grad(rvar));
    eager_tensor *loss = eager_reduce_sum(eager_mul(y, w), TG_NOINTS, 0);
    CHECK_MSG(eager_backward(loss) == TG_OK, "%s", eager_error());
    /* scale's gradient sum(w xhat) and bias's sum(w), in double here */
    const float *xs = eager_peek(x), *ws = eager_peek(w);
    const float *gs = eager_peek(eager_grad(scale)), *gb = eager_peek(eager_grad(bias));
    const float *gx = eager_peek(eager_grad(x)), *sc = eager_peek(scale);
    for (int ch = 0; gs && gb && gx && ch < C; ch++) {
        double sum = 0, sq = 0, m = N * S, dg = 0, db = 0, dxh[N * S];
        for (int b = 0; b < N; b++)
            for (int i = 0; i < S; i++)
                sum += xs[(b * C + ch) * S + i];
        double mean = sum / m;
        for (int b = 0; b < N; b++)
            for (int i = 0; i < S; i++)
                sq += pow(xs[(b * C + ch) * S + i] - mean, 2);
        double r = 1 / sqrt(sq / m + 1e-5), mg = 0, mgx = 0;
        for (int b = 0; b < N; b++)
            for (int i = 0; i < S; i++) {
                int k = (b * C + ch) * S + i;
                double xh = (xs[k] - mean) * r;
                dg += ws[k] * xh;
                db += ws[k];
                mg += ws[k] * sc[ch] / m;
                mgx += ws[k] * sc[ch] * xh / m;
            }
        for (int b = 0; b < N; b++)
            for (int i = 0; i < S; i++) {
                int k = (b * C + ch) * S + i;
                double xh = (xs[k] - mean) * r;
                dxh[b * S + i] = r * (ws[k] * sc[ch] - mg - xh * mgx);
                CHECK_NEAR(gx[k], dxh[b * S + i], 1e-5);
            }
        CHECK_NEAR(gs[ch], dg, 1e-5);
        CHECK_NEAR(gb[ch], db, 1e-5);
    }
    /* a gradient asked of the running statistics is refused */
    eager_tensor *out[5] = {0};
    CHECK(eager_batch_norm_train_op(x, scale, bias, rmean, rvar, 1e-5f, 0.1f, out, 5) == 5);
    eager_tensor *l2 = eager_reduce_sum(out[1], TG_NOINTS, 0);
    CHECK(eager_backward(l2) != TG_OK);
    CHECK_ERROR("batch_norm_train: the running statistics (outputs 1 and 2) carry no gradient");
    eager_zero_grad(x);
    eager_zero_grad(scale);
    eager_zero_grad(bias);
    eager_pool_pop();
}

/* ---- the graph: text IR, .tgraph, the passes ---- */

static const char train_ir[] =
    "graph t(%x: f32[2,3,4], %g: i64[2], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3])"
    " -> (y: f32[2,3,4], z: f32[2,3,4], g2: i64[2], m2: f32[3], v2: f32[3]) {\n"
    "  %1: f32[2,3,4], %2: f32[3], %3: f32[3], %4: f32[3], %5: f32[3] ="
    " batch_norm_train(%x, %s, %b, %m, %v) {eps=0.001, momentum=0.25}\n"
    "  %6: f32[2,3,4] = dropout(%1, %g) {p=0.375}\n"
    "  %7: f32[2,3,4] = dropout(%1, %g) {p=0.375}\n"
    "  %8: i64[2] = rng_advance(%g) {n=24}\n"
    "  return y = %6\n  return z = %7\n  return g2 = %8\n  return m2 = %2\n  return v2 = %3\n"
    "}\n";

static int count_op(const graph *g, graph_op op)
{
    int k = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        k += !(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op;
    return k;
}

static void test_graph_forms(void)
{
    char err[512] = "";
    graph *g = graph_parse(train_ir, strlen(train_ir), err, sizeof err);
    CHECK_MSG(g != NULL, "parses: %s", err);
    if (!g)
        return;
    /* text IR: print, parse, print again */
    graph_print_opts po = GRAPH_PRINT_DEFAULTS;
    po.provenance = 0;
    char *t1 = graph_print_str(g, &po, NULL);
    graph *g2 = t1 ? graph_parse(t1, strlen(t1), err, sizeof err) : NULL;
    char *t2 = g2 ? graph_print_str(g2, &po, NULL) : NULL;
    CHECK_MSG(t1 && t2 && !strcmp(t1, t2), "text round trip:\n%s\n---\n%s", t1 ? t1 : "?",
              t2 ? t2 : "?");
    CHECK(t1 && strstr(t1, "dropout(") && strstr(t1, "p=0.375") && strstr(t1, "n=24") &&
          strstr(t1, "momentum=0.25"));
    free(t1);
    free(t2);
    graph_free(g2);
    /* .tgraph: the attributes come back */
    void *buf = NULL;
    size_t len = 0;
    CHECK(format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK);
    graph *g3 = buf ? format_load_mem(buf, len, "train.tgraph", err, sizeof err) : NULL;
    free(buf);
    CHECK_MSG(g3 != NULL, "load: %s", err);
    for (int32_t i = 0; g3 && i < g3->nnodes; i++) {
        const graph_node *n = &g3->nodes[i];
        if (n->op == GRAPH_OP_batch_norm_train) {
            const graph_batch_norm_train_attrs *a = tg_node_attrs(n);
            CHECK(a->eps == 0.001f && a->momentum == 0.25f && n->nout == 5);
        } else if (n->op == GRAPH_OP_dropout) {
            CHECK(((const graph_dropout_attrs *)tg_node_attrs(n))->p == 0.375f);
        } else if (n->op == GRAPH_OP_rng_advance) {
            CHECK(((const graph_rng_advance_attrs *)tg_node_attrs(n))->n == 24);
        }
    }
    graph_free(g3);
    /* -O3 computes the same values (the random ops untouched) */
    eager_pool_push();
    eager_tensor *in[6] = {eager_rand_normal(TG_SHAPE(2, 3, 4), 41, 1, 2), gen_of(3, 4),
                           eager_rand_uniform(TG_SHAPE(3), 42, 0.5, 2),
                           eager_rand_uniform(TG_SHAPE(3), 43, -1, 1),
                           eager_rand_uniform(TG_SHAPE(3), 44, -1, 1),
                           eager_rand_uniform(TG_SHAPE(3), 45, 0.5, 2)};
    eager_tensor *want[5] = {0}, *got[5] = {0};
    graph *g4 = graph_clone(g);
    opt_options o3 = opt_default_options();
    o3.level = 3;
    CHECK(g4 && opt_optimize(g4, &o3, NULL, err, sizeof err) == TG_OK);
    CHECK(eager_interpret(g, in, 6, want, 5, NULL) == TG_OK);
    CHECK(g4 && eager_interpret(g4, in, 6, got, 5, NULL) == TG_OK);
    for (int k = 0; k < 5; k++) {
        CHECK_MSG(want[k] && got[k] &&
                      !memcmp(eager_peek(want[k]), eager_peek(got[k]), eager_nbytes(want[k])),
                  "-O3 output %d", k);
        eager_release(want[k]);
        eager_release(got[k]);
    }
    graph_free(g4);
    eager_pool_pop();
    /* -O1: the two equal dropouts are not merged (RANDOM), nor is a
     * dropout of constants folded */
    opt_options o = opt_default_options();
    o.level = 1;
    CHECK(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK);
    CHECK_MSG(count_op(g, GRAPH_OP_dropout) == 2, "-O1 keeps both dropouts: %d",
              count_op(g, GRAPH_OP_dropout));
    CHECK(count_op(g, GRAPH_OP_rng_advance) == 1 && count_op(g, GRAPH_OP_batch_norm_train) == 1);
    graph_free(g);
    static const char const_ir[] =
        "graph t(%x: f32[4]) -> (y: f32[4]) {\n"
        "  %g: i64[2] = const [5, 0]\n  %c: f32[4] = const [1, 2, 3, 4]\n"
        "  %1: f32[4] = dropout(%c, %g) {p=0.5}\n  %2: i64[2] = rng_advance(%g) {n=4}\n"
        "  %3: f32[4] = add(%x, %1)\n  return y = %3\n}\n";
    g = graph_parse(const_ir, strlen(const_ir), err, sizeof err);
    CHECK_MSG(g != NULL, "parses: %s", err);
    if (g) {
        CHECK(opt_optimize(g, &o, NULL, err, sizeof err) == TG_OK);
        CHECK_MSG(count_op(g, GRAPH_OP_dropout) == 1, "a dropout of constants is not folded");
        graph_free(g);
    }
    CHECK((graph_ops[GRAPH_OP_dropout].props & GRAPH_PROP_RANDOM) &&
          (graph_ops[GRAPH_OP_rng_advance].props & GRAPH_PROP_RANDOM) &&
          !(graph_ops[GRAPH_OP_batch_norm_train].props & GRAPH_PROP_RANDOM));
}

/* ---- the train/eval switch ---- */

static void test_set_eval(void)
{
    char err[512] = "";
    eager_pool_push();
    enum { C = 4 };
    eager_tensor *x = eager_rand_normal(TG_SHAPE(3, C, 5, 5), 31, 0.5, 2);
    eager_tensor *gen = gen_of(99, 0);
    eager_tensor *scale = eager_rand_uniform(TG_SHAPE(C), 32, 0.5, 2);
    eager_tensor *bias = eager_rand_uniform(TG_SHAPE(C), 33, -1, 1);
    eager_tensor *rmean = eager_rand_uniform(TG_SHAPE(C), 34, -0.5, 0.5);
    eager_tensor *rvar = eager_rand_uniform(TG_SHAPE(C), 35, 0.5, 2);
    /* the training forward: BN (batch statistics), relu, dropout; the
     * generator's next value and the new running mean as outputs too */
    CHECK(trace_begin(NULL) == TG_OK);
    trace_input(x, "x");
    trace_input(gen, "gen");
    trace_param(scale, "bn.weight");
    trace_param(bias, "bn.bias");
    trace_param(rmean, "bn.running_mean");
    trace_param(rvar, "bn.running_var");
    eager_tensor *bo[5] = {0};
    CHECK(eager_batch_norm_train_op(x, scale, bias, rmean, rvar, 1e-5f, 0.1f, bo, 5) == 5);
    eager_tensor *h = eager_dropout_op(eager_relu(bo[0]), gen, 0.5f);
    eager_tensor *y = eager_linear(eager_flatten(h, 1, -1), eager_rand_uniform(TG_SHAPE(2, C * 25), 36, -0.1, 0.1), EAGER_NONE);
    trace_output(y, "y");
    trace_output(eager_rng_advance(gen, eager_numel(h)), "gen_next");
    trace_output(bo[1], "running_mean_next");
    graph *g = trace_freeze();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    if (!g) {
        eager_pool_pop();
        return;
    }
    /* a graph with the backward reads the batch statistics: refused */
    graph *gb = graph_clone(g);
    int32_t loss_in = g->outputs[0].value, l, wrt = g->inputs[0], gx = -1;
    graph_reduce_sum_attrs rs;
    graph_attrs_default(GRAPH_OP_reduce_sum, &rs);
    CHECK(gb && graph_add_node(gb, GRAPH_OP_reduce_sum, &loss_in, 1, &rs, &l, 1) >= 0);
    CHECK(gb && graph_backward(gb, l, &wrt, 1, &gx) == TG_OK);
    int32_t nn = gb ? gb->nnodes : 0;
    CHECK(gb && opt_set_training(gb, 0, err, sizeof err) == TG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err, "(batch_norm_train at ") && strstr(err, "test_train_ops.c:") &&
                  strstr(err, "its batch mean (output 3) is read by node") &&
                  strstr(err, "batch statistics have no eval form"),
              "message: %s", err);
    CHECK(gb && gb->nnodes == nn && count_op(gb, GRAPH_OP_batch_norm_train) == 1);
    graph_free(gb);
    /* eval: no training op left, one batch_norm */
    CHECK(opt_set_training(g, 1, err, sizeof err) == TG_OK &&
          count_op(g, GRAPH_OP_batch_norm_train) == 1);
    CHECK_MSG(opt_set_training(g, 0, err, sizeof err) == TG_OK, "eval: %s", err);
    CHECK_MSG(graph_verify(g, 0) == TG_OK, "verify: %s", graph_error(g));
    CHECK(count_op(g, GRAPH_OP_dropout) == 0 && count_op(g, GRAPH_OP_rng_advance) == 0 &&
          count_op(g, GRAPH_OP_batch_norm_train) == 0 && count_op(g, GRAPH_OP_batch_norm) == 1);
    CHECK(opt_set_training(NULL, 0, err, sizeof err) == TG_ERR_NULL);
    /* equals the eager model in eval form, bit for bit */
    eager_tensor *in[2] = {x, gen}, *out[3] = {0};
    CHECK_MSG(eager_interpret(g, in, 2, out, 3, NULL) == TG_OK, "%s", eager_error());
    eager_tensor *want = eager_linear(
        eager_flatten(eager_relu(eager_batch_norm(x, scale, bias, rmean, rvar, 1e-5f)), 1, -1),
        eager_rand_uniform(TG_SHAPE(2, C * 25), 36, -0.1, 0.1), EAGER_NONE);
    CHECK(out[0] && want && !memcmp(eager_peek(out[0]), eager_peek(want), 2 * 3 * sizeof(float)));
    CHECK(out[1] && !memcmp(eager_peek(out[1]), eager_peek(gen), 2 * sizeof(int64_t)));
    CHECK(out[2] && !memcmp(eager_peek(out[2]), eager_peek(rmean), C * sizeof(float)));
    for (int k = 0; k < 3; k++)
        eager_release(out[k]);
    graph_free(g);
    eager_pool_pop();
}

int main(void)
{
    test_philox_kat();
    test_dropout_op();
    test_rng_advance();
    test_eager_rng();
    test_rng_threads();
    test_dropout_grad();
    test_batch_norm_train();
    test_batch_norm_train_grad();
    test_graph_forms();
    test_set_eval();
    CHECK(eager_rng_set(EAGER_NONE) == TG_OK);
    CHECK_MSG(eager_status() == TG_OK, "an error left pending: %s", eager_error());
    CHECK_MSG(eager_live_tensors() == 0, "%ld tensors live at the end", eager_live_tensors());
    return check_done();
}
