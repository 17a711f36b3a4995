/*
 * kernels_optim.c - CPU kernels of the optimizer updates sgd_step and
 * adamw_step (f32; types checked by graph/infer_optim.c).
 *
 * Numerics follow PyTorch's single-tensor paths (torch.optim.SGD with
 * dampening 0, torch.optim.AdamW with amsgrad off): the scalar factors
 * (1 - lr * weight_decay, the bias corrections 1 - beta^step, lr / bc1,
 * sqrt(bc2)) are computed in double from the f32 hyperparameters and
 * rounded to float once, as PyTorch rounds a Python scalar to the
 * tensor's type; each element's arithmetic is f32 in PyTorch's order.
 *
 * In place: no element reads another's, and an element's inputs are read
 * before its outputs over them are written, so each output buffer may be
 * its own input's (param' over param, buf' over buf, m' over m, v' over
 * v; sgd_step: any input's, adamw_step: see adamw_chunk): replay plans
 * these updates in place.  This is why the loops carry `omp simd` rather
 * than restrict pointers (which would promise no aliasing).
 *
 * Loops run over chunks of OPTIM_CHUNK elements, split over a->nthreads
 * threads when the tensor is large.
 */
#include <math.h>
#include <stdint.h>

#include "kernel.h"
#include "vmath.h"

/* Elements per task of the threaded loop. */
#define OPTIM_CHUNK 16384

/* The one element of a scalar f32 input. */
static inline float scalar_f32(const eager_kargs *a, int k)
{
    return ((const float *)a->in[k])[0];
}

/* ---- sgd_step ---- */

/*
 * d = g + wd * p (wd = 0: d = g, as PyTorch skips the term);
 * buf' = momentum * buf + d; d = nesterov ? d + momentum * buf' : buf';
 * p' = p + (-lr) * d.  PyTorch starts buf at d on the first step; with
 * dampening 0 and buf zeros this is the same value.
 */
static void sgd_chunk(const float *p, const float *g, const float *b, float *po, float *bo,
                      int64_t n, float nlr, float mom, float wd, int nesterov)
{
    if (nesterov) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float pi = p[i], gi = g[i], bi = b[i];
            float d = wd != 0.0f ? gi + wd * pi : gi;
            float nb = mom * bi + d;
            d = d + mom * nb;
            bo[i] = nb;
            po[i] = pi + nlr * d;
        }
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float pi = p[i], gi = g[i], bi = b[i];
            float d = wd != 0.0f ? gi + wd * pi : gi;
            float nb = mom * bi + d;
            bo[i] = nb;
            po[i] = pi + nlr * nb;
        }
    }
}

tg_status eager_kernel_sgd_step(const eager_kargs *a)
{
    const graph_sgd_step_attrs *at = a->attrs;
    const float *p = a->in[0], *g = a->in[1], *b = a->in[2];
    float *po = a->out[0], *bo = a->out[1];
    /* -lr as PyTorch's add_(d, alpha=-lr) rounds it */
    float nlr = -scalar_f32(a, 3), mom = scalar_f32(a, 4), wd = scalar_f32(a, 5);
    int nesterov = at->nesterov != 0;
    int64_t n = graph_type_numel(&a->in_type[0]);
    int64_t ntask = (n + OPTIM_CHUNK - 1) / OPTIM_CHUNK;
    int par = n >= EAGER_PAR_MIN && a->nthreads > 1;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t k = 0; k < ntask; k++) {
        int64_t i0 = k * OPTIM_CHUNK, len = n - i0 < OPTIM_CHUNK ? n - i0 : OPTIM_CHUNK;
        sgd_chunk(p + i0, g + i0, b + i0, po + i0, bo + i0, len, nlr, mom, wd, nesterov);
    }
    return TG_OK;
}

/* ---- adamw_step ---- */

/* The per-element factors of one AdamW update. */
typedef struct adamw_f {
    float decay;     /* 1 - lr * weight_decay */
    float b1, c1;    /* beta1, 1 - beta1 */
    float b2, c2;    /* beta2, 1 - beta2 */
    float bc2_sqrt;  /* sqrt(1 - beta2^step) */
    float eps;
    float nstep;     /* -lr / (1 - beta1^step) */
} adamw_f;

/* Elements per block of adamw_chunk (its square roots on the stack). */
#define ADAMW_BLOCK 256

/*
 * p1 = p * decay; m' = m * b1 + c1 * g; v' = v * b2 + c2 * g * g;
 * p' = p1 + nstep * m' / (sqrt(v') / bc2_sqrt + eps): PyTorch's mul_,
 * mul_/add_, mul_/addcmul_, sqrt / div / add_ and addcdiv_, in order.
 * Block by block: the moments first (m', v' written), their square roots
 * (vm_sqrt_loop: a sqrtf in the loop would keep it scalar, for errno),
 * then the parameter from the written m'.  So each output may be its own
 * input's buffer (param' over param, m' over m, v' over v) or the
 * gradient's: the block's grad, m and v are read before m' and v' are
 * written, and param before param'.  (m' or v' over param would not do:
 * param is read after them.)
 */
static void adamw_chunk(const float *p, const float *g, const float *m, const float *v,
                        float *po, float *mo, float *vo, int64_t n, adamw_f f)
{
    float den[ADAMW_BLOCK];
    for (int64_t i0 = 0; i0 < n; i0 += ADAMW_BLOCK) {
        int64_t len = n - i0 < ADAMW_BLOCK ? n - i0 : ADAMW_BLOCK;
#pragma omp simd
        for (int64_t i = i0; i < i0 + len; i++) {
            float gi = g[i];
            float mi = m[i] * f.b1 + f.c1 * gi;
            float vi = v[i] * f.b2 + f.c2 * gi * gi;
            mo[i] = mi;
            vo[i] = vi;
        }
        vm_sqrt_loop(vo + i0, den, len, 0);
#pragma omp simd
        for (int64_t i = 0; i < len; i++) {
            float pi = p[i0 + i] * f.decay;
            float d = den[i] / f.bc2_sqrt + f.eps;
            po[i0 + i] = pi + f.nstep * mo[i0 + i] / d;
        }
    }
}

tg_status eager_kernel_adamw_step(const eager_kargs *a)
{
    const float *p = a->in[0], *g = a->in[1], *m = a->in[2], *v = a->in[3];
    float *po = a->out[0], *mo = a->out[1], *vo = a->out[2];
    int64_t step = ((const int64_t *)a->in[4])[0];
    if (step < 1)
        return eager_kernel_fail(a, TG_ERR_ARG,
                                 "step is %lld: the step count must be >= 1 (the count after "
                                 "this step's increment: 1 on the first step)",
                                 (long long)step);
    double lr = scalar_f32(a, 5), b1 = scalar_f32(a, 6), b2 = scalar_f32(a, 7);
    double wd = scalar_f32(a, 9);
    double bc1 = 1.0 - pow(b1, (double)step), bc2 = 1.0 - pow(b2, (double)step);
    adamw_f f = {
        .decay = (float)(1.0 - lr * wd),
        .b1 = (float)b1,
        .c1 = (float)(1.0 - b1),
        .b2 = (float)b2,
        .c2 = (float)(1.0 - b2),
        .bc2_sqrt = (float)sqrt(bc2),
        .eps = scalar_f32(a, 8),
        .nstep = (float)(-(lr / bc1)),
    };
    int64_t n = graph_type_numel(&a->in_type[0]);
    int64_t ntask = (n + OPTIM_CHUNK - 1) / OPTIM_CHUNK;
    int par = n >= EAGER_PAR_MIN && a->nthreads > 1;
#pragma omp parallel for num_threads(a->nthreads) if (par) schedule(static)
    for (int64_t k = 0; k < ntask; k++) {
        int64_t i0 = k * OPTIM_CHUNK, len = n - i0 < OPTIM_CHUNK ? n - i0 : OPTIM_CHUNK;
        adamw_chunk(p + i0, g + i0, m + i0, v + i0, po + i0, mo + i0, vo + i0, len, f);
    }
    return TG_OK;
}
