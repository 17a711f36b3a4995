/* workloads.c - the benchmark workloads of issue 6 (see workloads.h). */
#include "workloads.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tracer/trace.h"

static const char *const names[WL_COUNT] = {"mlp", "resblock", "encoder", "encoder_fused",
                                            "chain", "tiny"};

const char *workload_name(workload_kind k)
{
    return (unsigned)k < WL_COUNT ? names[k] : NULL;
}

int workload_find(const char *name)
{
    for (int k = 0; k < WL_COUNT; k++)
        if (name && strcmp(name, names[k]) == 0)
            return k;
    return -1;
}

workload_size workload_default_size(workload_kind k)
{
    switch (k) {
    case WL_MLP: return (workload_size){.batch = 64, .in = 784, .width = 512, .out = 10};
    case WL_RESBLOCK: return (workload_size){.batch = 1, .in = 56, .width = 64};
    case WL_ENCODER:
    case WL_ENCODER_FUSED:
        return (workload_size){.batch = 1, .in = 128, .width = 256, .out = 4, .ffn = 1024};
    case WL_CHAIN: return (workload_size){.in = 4194304};
    case WL_TINY: return (workload_size){.in = 16, .iters = 100};
    default: return (workload_size){0};
    }
}

void workload_describe(workload_kind k, const workload_size *s, char *buf, size_t len)
{
    long long b = s->batch, n = s->in, w = s->width, o = s->out, f = s->ffn;
    switch (k) {
    case WL_MLP:
        snprintf(buf, len, "x[%lld,%lld] -> linear %lld -> relu -> linear %lld -> relu -> "
                 "linear %lld", b, n, w, w, o);
        break;
    case WL_RESBLOCK:
        snprintf(buf, len, "x[%lld,%lld,%lld,%lld] -> conv3x3 -> bn -> relu -> conv3x3 -> bn "
                 "-> +x -> relu", b, w, n, n);
        break;
    case WL_ENCODER:
    case WL_ENCODER_FUSED:
        snprintf(buf, len, "x[%lld,%lld,%lld], pre-LN block, %lld heads, ffn %lld, "
                 "layer_norm+gelu as %s", b, n, w, o, f,
                 k == WL_ENCODER ? "primitive ops" : "fused ops");
        break;
    case WL_CHAIN:
        snprintf(buf, len, "x[%lld]: tanh(x*sigmoid(x) + 0.5*x)*2 - 1", n);
        break;
    case WL_TINY:
        snprintf(buf, len, "x[%lld]: %lld x (x = relu(x*1.01 + 0.01) - x*0.5 + sigmoid(x))",
                 n, (long long)s->iters);
        break;
    default:
        snprintf(buf, len, "?");
    }
}

double workload_flops(workload_kind k, const workload_size *s)
{
    double b = (double)s->batch, n = (double)s->in, w = (double)s->width;
    double o = (double)s->out, f = (double)s->ffn;
    switch (k) {
    case WL_MLP:
        return 2 * b * (n * w + w * w + w * o);
    case WL_RESBLOCK: /* two 3x3 convs, w -> w channels, n x n, padded */
        return 2 * (2 * b * w * w * 9 * n * n);
    case WL_ENCODER:
    case WL_ENCODER_FUSED: /* qkv, out, ffn up and down; q k^T and p v over all heads */
        return 2 * b * n * (w * 3 * w + w * w + 2 * w * f) + 2 * (2 * b * n * n * w);
    default:
        return 0;
    }
}

/* ---- construction ---- */

/* Seeds: one per tensor, distinct across workloads; both encoders share
 * theirs, so they compute the same function. */
static uint64_t seed_of(const workload *w, int i)
{
    workload_kind k = w->kind == WL_ENCODER_FUSED ? WL_ENCODER : w->kind;
    return 1000u * (uint64_t)(k + 1) + (uint64_t)i;
}

static void add_param(workload *w, const char *name, eager_tensor *t)
{
    w->param_name[w->nparams] = name;
    w->param[w->nparams++] = t;
}

/* A weight [rows, cols...] with std 1/sqrt(fan_in), fan_in = numel / rows. */
static eager_tensor *weight(workload *w, graph_ints shape)
{
    int64_t fan = 1;
    for (int i = 1; i < shape.n; i++)
        fan *= shape.v[i];
    return eager_rand_normal(shape, seed_of(w, w->nparams), 0.0f, (float)(1.0 / sqrt((double)fan)));
}

static eager_tensor *small(workload *w, int64_t n)
{
    return eager_rand_normal(TG_SHAPE(n), seed_of(w, w->nparams), 0.0f, 0.1f);
}

static eager_tensor *around_one(workload *w, int64_t n)
{
    return eager_rand_uniform(TG_SHAPE(n), seed_of(w, w->nparams), 0.5f, 1.5f);
}

static void make_mlp(workload *w)
{
    const workload_size *s = &w->size;
    add_param(w, "fc1.weight", weight(w, TG_SHAPE(s->width, s->in)));
    add_param(w, "fc1.bias", small(w, s->width));
    add_param(w, "fc2.weight", weight(w, TG_SHAPE(s->width, s->width)));
    add_param(w, "fc2.bias", small(w, s->width));
    add_param(w, "fc3.weight", weight(w, TG_SHAPE(s->out, s->width)));
    add_param(w, "fc3.bias", small(w, s->out));
    w->x = eager_rand_uniform(TG_SHAPE(s->batch, s->in), seed_of(w, 99), 0.0f, 1.0f);
}

static void make_resblock(workload *w)
{
    const workload_size *s = &w->size;
    int64_t c = s->width;
    static const char *const bn[2][4] = {
        {"bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"},
        {"bn2.weight", "bn2.bias", "bn2.running_mean", "bn2.running_var"}};
    for (int l = 0; l < 2; l++) {
        add_param(w, l ? "conv2.weight" : "conv1.weight", weight(w, TG_SHAPE(c, c, 3, 3)));
        add_param(w, bn[l][0], around_one(w, c));
        add_param(w, bn[l][1], small(w, c));
        add_param(w, bn[l][2], small(w, c));
        add_param(w, bn[l][3], around_one(w, c));
    }
    w->x = eager_rand_uniform(TG_SHAPE(s->batch, c, s->in, s->in), seed_of(w, 99), -1.0f, 1.0f);
}

static void make_encoder(workload *w)
{
    const workload_size *s = &w->size;
    int64_t d = s->width, f = s->ffn;
    add_param(w, "ln1.weight", around_one(w, d));
    add_param(w, "ln1.bias", small(w, d));
    add_param(w, "attn.qkv.weight", weight(w, TG_SHAPE(3 * d, d)));
    add_param(w, "attn.qkv.bias", small(w, 3 * d));
    add_param(w, "attn.out.weight", weight(w, TG_SHAPE(d, d)));
    add_param(w, "attn.out.bias", small(w, d));
    add_param(w, "ln2.weight", around_one(w, d));
    add_param(w, "ln2.bias", small(w, d));
    add_param(w, "ffn.fc1.weight", weight(w, TG_SHAPE(f, d)));
    add_param(w, "ffn.fc1.bias", small(w, f));
    add_param(w, "ffn.fc2.weight", weight(w, TG_SHAPE(d, f)));
    add_param(w, "ffn.fc2.bias", small(w, d));
    w->x = eager_rand_uniform(TG_SHAPE(s->batch, s->in, d), seed_of(w, 99), -1.0f, 1.0f);
    /* eps, sqrt(2), 1, 0.5 (primitive layer_norm / gelu), sqrt(head dim) */
    w->cst[w->nconsts++] = eager_scalar(1e-5);
    w->cst[w->nconsts++] = eager_scalar(sqrt(2.0));
    w->cst[w->nconsts++] = eager_scalar(1.0);
    w->cst[w->nconsts++] = eager_scalar(0.5);
    w->cst[w->nconsts++] = eager_scalar(sqrt((double)(d / s->out)));
}

static int sizes_ok(workload_kind k, const workload_size *s)
{
    switch (k) {
    case WL_MLP: return s->batch > 0 && s->in > 0 && s->width > 0 && s->out > 0;
    case WL_RESBLOCK: return s->batch > 0 && s->in > 0 && s->width > 0;
    case WL_ENCODER:
    case WL_ENCODER_FUSED:
        return s->batch > 0 && s->in > 0 && s->width > 0 && s->out > 0 && s->ffn > 0 &&
               s->width % s->out == 0;
    case WL_CHAIN: return s->in > 0;
    case WL_TINY: return s->in > 0 && s->iters > 0;
    default: return 0;
    }
}

tg_status workload_make(workload *w, workload_kind k, const workload_size *s)
{
    memset(w, 0, sizeof *w);
    w->kind = k;
    w->name = workload_name(k);
    w->size = s ? *s : workload_default_size(k);
    if (!sizes_ok(k, &w->size)) {
        eager_site site = {__FILE__, __LINE__, __func__};
        eager_set_error(TG_ERR_ARG, &site, "workload %s: bad sizes", w->name ? w->name : "?");
        return TG_ERR_ARG;
    }
    switch (k) {
    case WL_MLP: make_mlp(w); break;
    case WL_RESBLOCK: make_resblock(w); break;
    case WL_ENCODER:
    case WL_ENCODER_FUSED: make_encoder(w); break;
    case WL_CHAIN:
        w->x = eager_rand_uniform(TG_SHAPE(w->size.in), seed_of(w, 99), -3.0f, 3.0f);
        w->cst[w->nconsts++] = eager_scalar(0.5);
        w->cst[w->nconsts++] = eager_scalar(2.0);
        w->cst[w->nconsts++] = eager_scalar(1.0);
        break;
    default: /* WL_TINY */
        w->x = eager_rand_uniform(TG_SHAPE(w->size.in), seed_of(w, 99), -1.0f, 1.0f);
        w->cst[w->nconsts++] = eager_scalar(1.01);
        w->cst[w->nconsts++] = eager_scalar(0.01);
        w->cst[w->nconsts++] = eager_scalar(0.5);
        break;
    }
    int ok = w->x != NULL;
    for (int i = 0; i < w->nparams; i++)
        ok = ok && w->param[i];
    for (int i = 0; i < w->nconsts; i++)
        ok = ok && w->cst[i];
    if (!ok) {
        tg_status st = eager_status();
        workload_free(w);
        return st != TG_OK ? st : TG_ERR_NOMEM;
    }
    return TG_OK;
}

void workload_free(workload *w)
{
    eager_release(w->x);
    for (int i = 0; i < w->nparams; i++)
        eager_release(w->param[i]);
    for (int i = 0; i < w->nconsts; i++)
        eager_release(w->cst[i]);
    memset(w, 0, sizeof *w);
}

/* ---- forward passes ---- */

static eager_tensor *mlp(const workload *w, eager_tensor *x)
{
    eager_tensor *const *p = w->param;
    eager_tensor *h = eager_relu(eager_linear(x, p[0], p[1]));
    h = eager_relu(eager_linear(h, p[2], p[3]));
    return eager_linear(h, p[4], p[5]);
}

static eager_tensor *resblock(const workload *w, eager_tensor *x)
{
    eager_tensor *const *p = w->param, *nobias = EAGER_NONE;
    eager_tensor *y = eager_conv2d(x, p[0], nobias, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1);
    y = eager_relu(eager_batch_norm(y, p[1], p[2], p[3], p[4], 1e-5f));
    y = eager_conv2d(y, p[5], nobias, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1);
    y = eager_batch_norm(y, p[6], p[7], p[8], p[9], 1e-5f);
    return eager_relu(eager_add(y, x));
}

/* layer_norm over the last axis, as primitive ops (see workloads.h). */
static eager_tensor *layer_norm_prim(eager_tensor *x, eager_tensor *gamma, eager_tensor *beta,
                                     eager_tensor *eps)
{
    eager_tensor *mean = eager_reduce_mean(x, TG_INTS(-1), 1);
    eager_tensor *d = eager_sub(x, mean);
    eager_tensor *var = eager_reduce_mean(eager_mul(d, d), TG_INTS(-1), 1);
    eager_tensor *y = eager_div(d, eager_sqrt(eager_add(var, eps)));
    return eager_add(eager_mul(y, gamma), beta);
}

/* The exact (erf) GELU as primitive ops: x * (erf(x / sqrt2) + 1) * 0.5. */
static eager_tensor *gelu_prim(eager_tensor *x, eager_tensor *sqrt2, eager_tensor *one,
                               eager_tensor *half)
{
    eager_tensor *e = eager_erf(eager_div(x, sqrt2));
    return eager_mul(eager_mul(x, eager_add(e, one)), half);
}

static eager_tensor *norm(const workload *w, eager_tensor *x, int first)
{
    eager_tensor *gamma = w->param[first ? 0 : 6], *beta = w->param[first ? 1 : 7];
    if (w->kind == WL_ENCODER)
        return layer_norm_prim(x, gamma, beta, w->cst[0]);
    return eager_layer_norm(x, gamma, beta, -1, 1e-5f);
}

/* Multi-head self-attention of h; returns [B,S,D] before the output projection. */
static eager_tensor *attention(const workload *w, eager_tensor *h)
{
    const workload_size *s = &w->size;
    int64_t b = s->batch, n = s->in, d = s->width, nh = s->out, hd = d / nh;
    eager_tensor *qkv = eager_linear(h, w->param[2], w->param[3]), *part[3], *head[3];
    if (eager_split(qkv, -1, TG_INTS(d, d, d), part, 3) != 3)
        return NULL;
    for (int i = 0; i < 3; i++) /* [B,S,D] -> [B,H,S,hd] */
        head[i] = eager_transpose(eager_reshape(part[i], TG_INTS(b, n, nh, hd)),
                                  TG_INTS(0, 2, 1, 3));
    eager_tensor *score = eager_div(eager_matmul(head[0], head[1], 0, 1), w->cst[4]);
    eager_tensor *a = eager_matmul(eager_softmax(score, -1), head[2], 0, 0);
    return eager_reshape(eager_transpose(a, TG_INTS(0, 2, 1, 3)), TG_INTS(b, n, d));
}

static eager_tensor *encoder(const workload *w, eager_tensor *x)
{
    eager_tensor *const *p = w->param;
    eager_tensor *a = attention(w, norm(w, x, 1));
    eager_tensor *r = eager_add(eager_linear(a, p[4], p[5]), x);
    eager_tensor *f = eager_linear(norm(w, r, 0), p[8], p[9]);
    f = w->kind == WL_ENCODER ? gelu_prim(f, w->cst[1], w->cst[2], w->cst[3]) : eager_gelu(f);
    return eager_add(eager_linear(f, p[10], p[11]), r);
}

static eager_tensor *chain(const workload *w, eager_tensor *x)
{
    eager_tensor *a = eager_add(eager_mul(x, eager_sigmoid(x)), eager_mul(x, w->cst[0]));
    return eager_sub(eager_mul(eager_tanh(a), w->cst[1]), w->cst[2]);
}

static eager_tensor *tiny(const workload *w, eager_tensor *x)
{
    eager_tensor *c101 = w->cst[0], *c001 = w->cst[1], *c05 = w->cst[2];
    for (int64_t i = 0; i < w->size.iters; i++) {
        eager_tensor *a = eager_relu(eager_add(eager_mul(x, c101), c001));
        x = eager_add(eager_sub(a, eager_mul(x, c05)), eager_sigmoid(x));
    }
    return x;
}

eager_tensor *workload_forward(const workload *w, eager_tensor *x)
{
    switch (w->kind) {
    case WL_MLP: return mlp(w, x);
    case WL_RESBLOCK: return resblock(w, x);
    case WL_ENCODER:
    case WL_ENCODER_FUSED: return encoder(w, x);
    case WL_CHAIN: return chain(w, x);
    case WL_TINY: return tiny(w, x);
    default: return NULL;
    }
}

graph *workload_trace(const workload *w, int capture_stack)
{
    eager_pool_push();
    trace_opts o = trace_default_opts();
    o.name = w->name;
    o.capture_stack = capture_stack;
    graph *g = NULL;
    if (trace_begin(&o) == TG_OK) {
        tg_status st = trace_input(w->x, "x");
        for (int i = 0; st == TG_OK && i < w->nparams; i++)
            st = trace_param(w->param[i], w->param_name[i]);
        eager_tensor *y = st == TG_OK ? workload_forward(w, w->x) : NULL;
        if (y && trace_output(y, "y") == TG_OK)
            g = trace_freeze();
        else
            trace_abort();
    }
    eager_pool_pop();
    return g;
}
