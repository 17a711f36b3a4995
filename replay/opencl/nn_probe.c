/*
 * nn_probe.c - the auto GEMM path's probe (ops_nn.h's ocl_nn_probe): a
 * matmul/linear (ops_gemm.c), conv (ops_conv.c) or depthwise conv
 * (ops_dw.c) node's ways timed on scratch buffers of its traced shape at
 * replay_compile, the fastest kept per context and key; the split summed
 * by the last split checked against the sum kernel's bits first; which
 * ways a node times (ocl_nn_probe_timed).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "../../graph/alloc.h"
#include "ops_nn.h"

/* A probe's result, per context and key (the op's own bytes, kind first),
 * the tile and the ways timed (TG_OPENCL_TILE and TG_OPENCL_SPLITK may
 * change between compiles). */
#define PROBE_KEY 192
typedef struct probed {
    cl_context ctx;
    unsigned char key[PROBE_KEY];
    size_t keylen;
    int sk, timed[OCL_NN_WAYS];
    int way; /* OCL_NN_WAY_* */
    struct probed *next;
} probed;

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static probed *probe_list;
static atomic_long probe_failed, fixup_checked[2];

long ocl_probe_failures(void) { return atomic_load(&probe_failed); }

void ocl_fixup_checks(long n[2])
{
    n[0] = atomic_load(&fixup_checked[0]);
    n[1] = atomic_load(&fixup_checked[1]);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static cl_mem probe_buffer(ocl_prep *c, size_t elems)
{
    cl_int e;
    cl_mem m = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, (elems ? elems : 1) * sizeof(float), NULL,
                              &e);
    if (m)
        ocl_obj_made(OCL_OBJ_BUFFER, m, c->ctx);
    return m;
}

/* Runs the split summed by the sum kernel, then by the last split, each
 * after filling buf[ws] and buf[out] with NaN: 1 if both give the same
 * bits (ocl_nn_probe). */
static int fixup_agrees(ocl_launch *l, cl_mem *buf, const size_t *elems, int ws, int out,
                        ocl_nn_node *bn, ocl_nn_probe_way run, const void *arg)
{
    size_t n = elems[out] ? elems[out] : 1;
    float *got[2] = {tg_malloc(n * sizeof(float)), tg_malloc(n * sizeof(float))};
    int ok = got[0] && got[1];
    for (int v = 0; v < 2 && ok; v++) {
        const float nan = NAN;
        ok &= clEnqueueFillBuffer(l->q, buf[ws], &nan, sizeof nan, 0,
                                  (elems[ws] ? elems[ws] : 1) * sizeof nan, 0, NULL,
                                  NULL) == CL_SUCCESS;
        ok &= clEnqueueFillBuffer(l->q, buf[out], &nan, sizeof nan, 0, n * sizeof nan, 0, NULL,
                                  NULL) == CL_SUCCESS;
        bn->onepass = 0;
        bn->fixup = v;
        ok &= run(l, buf, arg, v ? OCL_NN_WAY_FIXUP : OCL_NN_WAY_SPLIT) == TG_OK;
        ok &= clEnqueueReadBuffer(l->q, buf[out], CL_TRUE, 0, n * sizeof(float), got[v], 0, NULL,
                                  NULL) == CL_SUCCESS;
    }
    ok = ok && memcmp(got[0], got[1], n * sizeof(float)) == 0;
    tg_free(got[0]);
    tg_free(got[1]);
    return ok;
}

int ocl_nn_probe(ocl_prep *c, const void *key, size_t keylen, const size_t *elems, int nbuf,
                 ocl_nn_node *bn, const int timed[OCL_NN_WAYS], ocl_nn_probe_way run,
                 const void *arg, int ws_buf, int out_buf)
{
    if (keylen > PROBE_KEY || nbuf > OCL_NN_PROBE_BUFS)
        return OCL_NN_WAY_BLAS;
    pthread_mutex_lock(&probe_mu);
    for (probed *p = probe_list; p; p = p->next)
        if (p->ctx == c->ctx && p->keylen == keylen && !memcmp(p->key, key, keylen) &&
            p->sk == bn->sk && !memcmp(p->timed, timed, sizeof p->timed)) {
            int way = p->way;
            pthread_mutex_unlock(&probe_mu);
            return way;
        }
    pthread_mutex_unlock(&probe_mu);
    cl_mem buf[OCL_NN_PROBE_BUFS] = {0};
    for (int i = 0; i < nbuf; i++)
        buf[i] = probe_buffer(c, elems[i]);
    cl_kernel k[OCL_MAX_KERNELS] = {0};
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(c->ctx, c->device, 0, &e);
    if (q)
        ocl_obj_made(OCL_OBJ_QUEUE, q, c->ctx);
    int ok = q != NULL;
    for (int i = 0; i < nbuf; i++)
        ok &= buf[i] != NULL;
    for (int i = 0; i < c->nkernels && ok; i++) {
        k[i] = clCreateKernel(c->prog, c->kernel[i], &e);
        if (k[i])
            ocl_obj_made(OCL_OBJ_KERNEL, k[i], c->prog);
        ok &= k[i] != NULL;
    }
    int way = OCL_NN_WAY_BLAS;
    if (ok) {
        for (int i = 0; i < nbuf; i++) { /* defined data: NaNs would time differently */
            float zero = 0;
            clEnqueueFillBuffer(q, buf[i], &zero, sizeof zero, 0,
                                (elems[i] ? elems[i] : 1) * sizeof(float), 0, NULL, NULL);
        }
        char msg[256];
        ocl_launch l = {.q = q, .device = c->device, .attrs = c->attrs, .k = k, .data = bn,
                        .in_type = c->in_type, .nin = c->nin, .out_type = c->out_type,
                        .nout = c->nout, .err = msg, .errlen = sizeof msg};
        double t[OCL_NN_WAYS] = {0};
        for (int w = 0; w < OCL_NN_WAYS && ok; w++)
            for (int rep = 0; rep < 6 && ok && timed[w]; rep++) {
                if (rep == 1) {
                    ok &= clFinish(q) == CL_SUCCESS;
                    t[w] = now_ms();
                }
                bn->onepass = w == OCL_NN_WAY_ONEPASS;
                bn->fixup = w == OCL_NN_WAY_FIXUP;
                ok &= run(&l, buf, arg, w) == TG_OK;
                if (rep == 5) {
                    ok &= clFinish(q) == CL_SUCCESS;
                    t[w] = now_ms() - t[w];
                }
            }
        if (ok && timed[OCL_NN_WAY_FIXUP]) {
            int agrees = ws_buf >= 0 &&
                         fixup_agrees(&l, buf, elems, ws_buf, out_buf, bn, run, arg);
            atomic_fetch_add(&fixup_checked[!agrees], 1);
            if (!agrees)
                t[OCL_NN_WAY_FIXUP] = INFINITY;
        }
        int best = -1;
        for (int w = 0; w < OCL_NN_WAYS && ok; w++)
            if (timed[w] && (best < 0 || t[w] < t[best]))
                best = w;
        way = best < 0 ? OCL_NN_WAY_BLAS : best;
    }
    for (int i = 0; i < OCL_MAX_KERNELS; i++)
        ocl_obj_release(OCL_OBJ_KERNEL, k[i]);
    for (int i = 0; i < nbuf; i++)
        ocl_obj_release(OCL_OBJ_BUFFER, buf[i]);
    ocl_obj_release(OCL_OBJ_QUEUE, q);
    probed *n = tg_malloc(sizeof *n);
    if (n && ok) {
        pthread_mutex_lock(&probe_mu);
        *n = (probed){.ctx = c->ctx, .keylen = keylen, .sk = bn->sk, .way = way,
                      .next = probe_list};
        memcpy(n->key, key, keylen);
        memcpy(n->timed, timed, sizeof n->timed);
        probe_list = n;
        pthread_mutex_unlock(&probe_mu);
    } else {
        tg_free(n);
        way = OCL_NN_WAY_BLAS;
        if (!ok)
            atomic_fetch_add(&probe_failed, 1);
    }
    return way;
}

void ocl_nn_probe_timed(const ocl_nn_node *bn, int64_t splits, int timed[OCL_NN_WAYS])
{
    int mode = ocl_nn_splitk_mode();
    timed[OCL_NN_WAY_SPLIT] = 1;
    timed[OCL_NN_WAY_BLAS] = 1;
    timed[OCL_NN_WAY_ONEPASS] = 0;
    timed[OCL_NN_WAY_FIXUP] = 0;
    if (bn->sk) {
        timed[OCL_NN_WAY_SPLIT] = splits > 1 && (mode == 0 || mode == 1);
        timed[OCL_NN_WAY_FIXUP] = splits > 1 && (mode == 0 || mode == 3);
        timed[OCL_NN_WAY_ONEPASS] = mode == 0 || mode == 2 || splits == 1;
    }
}

void ocl_gemm_probe_forget(void)
{
    pthread_mutex_lock(&probe_mu);
    for (probed *p = probe_list, *next; p; p = next) {
        next = p->next;
        tg_free(p);
    }
    probe_list = NULL;
    pthread_mutex_unlock(&probe_mu);
}
