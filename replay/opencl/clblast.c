/*
 * clblast.c - the CLBlast path of the OpenCL backend (see ocl_blas.h):
 * the per-device choice, the calls (sgemm, strided-batched sgemm,
 * convgemm) under one lock, their warm-up at prepare, and CLBlast's
 * status codes as messages.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "../../graph/alloc.h"
#include "ocl_blas.h"
#include "ocl_rt.h"

#include <clblast_c.h> /* after ocl.h: its CL_TARGET_OPENCL_VERSION */

static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int blas_used;
static atomic_long blas_calls;

long ocl_blas_calls(void) { return atomic_load(&blas_calls); }

ocl_gemm_path ocl_gemm_choose(cl_device_id device, const char **why)
{
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    int gpu = (type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
    ocl_gemm_path def = gpu ? OCL_GEMM_AUTO : OCL_GEMM_OWN;
    const char *want = getenv("TG_OPENCL_GEMM");
    if (want && *want) {
        for (int p = OCL_GEMM_OWN; p <= OCL_GEMM_AUTO; p++)
            if (!strcmp(want, ocl_gemm_name((ocl_gemm_path)p))) {
                if (why)
                    *why = "TG_OPENCL_GEMM";
                return (ocl_gemm_path)p;
            }
        static atomic_int warned;
        if (!atomic_exchange(&warned, 1))
            fprintf(stderr, "tracegraph: TG_OPENCL_GEMM=%s is not a GEMM path (auto, clblast, "
                            "own); using %s\n", want, ocl_gemm_name(def));
    }
    if (why)
        *why = gpu ? "GPU or accelerator device" : "CPU device";
    return def;
}

const char *ocl_gemm_name(ocl_gemm_path p)
{
    return p == OCL_GEMM_CLBLAST ? "clblast" : p == OCL_GEMM_AUTO ? "auto" : "own";
}

static const char *status_name(CLBlastStatusCode s)
{
    switch (s) {
#define S_(x) case CLBlast##x: return "CLBlast" #x;
        S_(OpenCLCompilerNotAvailable) S_(TempBufferAllocFailure) S_(OpenCLOutOfResources)
        S_(OpenCLOutOfHostMemory) S_(OpenCLBuildProgramFailure) S_(InvalidValue)
        S_(InvalidCommandQueue) S_(InvalidMemObject) S_(InvalidBinary) S_(InvalidBuildOptions)
        S_(InvalidProgram) S_(InvalidProgramExecutable) S_(InvalidKernelName)
        S_(InvalidKernelDefinition) S_(InvalidKernel) S_(InvalidArgIndex) S_(InvalidArgValue)
        S_(InvalidArgSize) S_(InvalidKernelArgs) S_(InvalidLocalNumDimensions)
        S_(InvalidLocalThreadsTotal) S_(InvalidLocalThreadsDim) S_(InvalidGlobalOffset)
        S_(InvalidEventWaitList) S_(InvalidEvent) S_(InvalidOperation) S_(InvalidBufferSize)
        S_(InvalidGlobalWorkSize) S_(NotImplemented) S_(InvalidMatrixA) S_(InvalidMatrixB)
        S_(InvalidMatrixC) S_(InvalidDimension) S_(InvalidLeadDimA) S_(InvalidLeadDimB)
        S_(InvalidLeadDimC) S_(InsufficientMemoryA) S_(InsufficientMemoryB)
        S_(InsufficientMemoryC) S_(InsufficientMemoryTemp) S_(InvalidBatchCount)
        S_(InvalidLocalMemUsage) S_(DatabaseError) S_(UnknownError) S_(UnexpectedError)
#undef S_
    default:
        return "CLBlast error";
    }
}

int ocl_blas_gemm_run(cl_command_queue q, const ocl_blas_gemm *g, cl_mem a, cl_mem b, cl_mem c,
                      char *err, size_t errlen)
{
    CLBlastTranspose ta = g->ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = g->tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    atomic_store(&blas_used, 1);
    atomic_fetch_add(&blas_calls, 1);
    pthread_mutex_lock(&blas_mu);
    CLBlastStatusCode s =
        g->batch == 1
            ? CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, g->m, g->n, g->k, 1.0f, a, 0, g->lda, b,
                           0, g->ldb, 0.0f, c, 0, g->ldc, &q, NULL)
            : CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, g->m, g->n, g->k, 1.0f,
                                         a, 0, g->lda, g->sa, b, 0, g->ldb, g->sb, 0.0f, c, 0,
                                         g->ldc, g->sc, g->batch, &q, NULL);
    pthread_mutex_unlock(&blas_mu);
    if (s == CLBlastSuccess)
        return 0;
    snprintf(err, errlen,
             "CLBlast sgemm%s (M %zu, N %zu, K %zu, batch %zu, transposes %d/%d): %s (%d)",
             g->batch == 1 ? "" : "StridedBatched", g->m, g->n, g->k, g->batch, g->ta, g->tb,
             status_name(s), (int)s);
    return -1;
}

int ocl_blas_conv_run(cl_command_queue q, const ocl_blas_conv *v, cl_mem x, cl_mem w, cl_mem y,
                      char *err, size_t errlen)
{
    atomic_store(&blas_used, 1);
    atomic_fetch_add(&blas_calls, 1);
    pthread_mutex_lock(&blas_mu);
    CLBlastStatusCode s = CLBlastSconvgemm(
        CLBlastKernelModeCrossCorrelation, v->c, v->h, v->w, v->kh, v->kw, v->pad_h, v->pad_w,
        v->st_h, v->st_w, v->dil_h, v->dil_w, v->o, v->batch, x, 0, w, 0, y, 0, &q, NULL);
    pthread_mutex_unlock(&blas_mu);
    if (s == CLBlastSuccess)
        return 0;
    snprintf(err, errlen,
             "CLBlast convgemm (N %zu, C %zu, %zux%zu, O %zu, kernel %zux%zu): %s (%d)",
             v->batch, v->c, v->h, v->w, v->o, v->kh, v->kw, status_name(s), (int)s);
    return -1;
}

/* ---- warm-up at prepare ---- */

/* Calls already warmed in a context (kind 'g' or 'c' and the struct's
 * bytes), so plans with many nodes of one shape run it once; cleared
 * with CLBlast's cache.  Guarded by blas_mu. */
typedef struct warmed {
    cl_context ctx;
    char kind;
    unsigned char key[sizeof(ocl_blas_conv) > sizeof(ocl_blas_gemm) ? sizeof(ocl_blas_conv)
                                                                     : sizeof(ocl_blas_gemm)];
    struct warmed *next;
} warmed;
static warmed *warm_list;

/* Nonzero if kind/key was warmed in ctx; else records it (best effort). */
static int warm_seen(cl_context ctx, char kind, const void *key, size_t len)
{
    warmed e = {ctx, kind, {0}, NULL};
    memcpy(e.key, key, len);
    pthread_mutex_lock(&blas_mu);
    int seen = 0;
    for (warmed *w = warm_list; w && !seen; w = w->next)
        seen = w->ctx == ctx && w->kind == kind && !memcmp(w->key, e.key, sizeof e.key);
    warmed *n = seen ? NULL : tg_malloc(sizeof *n);
    if (n) {
        *n = e;
        n->next = warm_list;
        warm_list = n;
    }
    pthread_mutex_unlock(&blas_mu);
    return seen;
}

/* Up to 3 scratch buffers of the given element counts and a queue in c's
 * context, released by warm_end. */
typedef struct warm {
    cl_command_queue q;
    cl_mem buf[3];
} warm;

static void warm_end(warm *w)
{
    for (int i = 0; i < 3; i++)
        ocl_obj_release(OCL_OBJ_BUFFER, w->buf[i]);
    ocl_obj_release(OCL_OBJ_QUEUE, w->q);
}

static tg_status warm_begin(ocl_prep *c, warm *w, const size_t *elems)
{
    memset(w, 0, sizeof *w);
    cl_int e;
    w->q = clCreateCommandQueue(c->ctx, c->device, 0, &e);
    if (!w->q)
        return ocl_prep_fail(c, TG_ERR_BACKEND, "clCreateCommandQueue: %s", ocl_errstr(e));
    ocl_obj_made(OCL_OBJ_QUEUE, w->q, c->ctx);
    for (int i = 0; i < 3; i++) {
        w->buf[i] = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, (elems[i] ? elems[i] : 1) * 4, NULL,
                                   &e);
        if (!w->buf[i]) {
            warm_end(w);
            return ocl_prep_fail(c, e == CL_INVALID_BUFFER_SIZE ? TG_ERR_NOMEM : TG_ERR_BACKEND,
                                 "CLBlast warm-up: clCreateBuffer of %zu bytes: %s",
                                 elems[i] * 4, ocl_errstr(e));
        }
        ocl_obj_made(OCL_OBJ_BUFFER, w->buf[i], c->ctx);
    }
    return TG_OK;
}

static tg_status warm_finish(ocl_prep *c, warm *w, int failed, const char *msg)
{
    cl_int e = failed ? CL_SUCCESS : clFinish(w->q);
    warm_end(w);
    if (failed)
        return ocl_prep_fail(c, TG_ERR_BACKEND, "%s", msg);
    if (e != CL_SUCCESS)
        return ocl_prep_fail(c, TG_ERR_BACKEND, "CLBlast warm-up: clFinish: %s", ocl_errstr(e));
    return TG_OK;
}

/* Elements a batched operand spans: its last matrix's end. */
static size_t span(size_t stride, size_t batch, size_t rows, size_t ld)
{
    return stride * (batch - 1) + rows * ld;
}

tg_status ocl_blas_warm_gemm(ocl_prep *c, const ocl_blas_gemm *g)
{
    if (warm_seen(c->ctx, 'g', g, sizeof *g))
        return TG_OK;
    size_t elems[3] = {span(g->sa, g->batch, g->ta ? g->k : g->m, g->lda),
                       span(g->sb, g->batch, g->tb ? g->n : g->k, g->ldb),
                       span(g->sc, g->batch, g->m, g->ldc)};
    warm w;
    tg_status st = warm_begin(c, &w, elems);
    if (st != TG_OK)
        return st;
    char msg[256];
    int bad = ocl_blas_gemm_run(w.q, g, w.buf[0], w.buf[1], w.buf[2], msg, sizeof msg);
    return warm_finish(c, &w, bad, msg);
}

tg_status ocl_blas_warm_conv(ocl_prep *c, const ocl_blas_conv *v)
{
    if (warm_seen(c->ctx, 'c', v, sizeof *v))
        return TG_OK;
    size_t oh = (v->h + 2 * v->pad_h - (v->dil_h * (v->kh - 1) + 1)) / v->st_h + 1;
    size_t ow = (v->w + 2 * v->pad_w - (v->dil_w * (v->kw - 1) + 1)) / v->st_w + 1;
    size_t elems[3] = {v->batch * v->c * v->h * v->w, v->o * v->c * v->kh * v->kw,
                       v->batch * v->o * oh * ow};
    warm w;
    tg_status st = warm_begin(c, &w, elems);
    if (st != TG_OK)
        return st;
    char msg[256];
    int bad = ocl_blas_conv_run(w.q, v, w.buf[0], w.buf[1], w.buf[2], msg, sizeof msg);
    return warm_finish(c, &w, bad, msg);
}

void ocl_blas_shutdown(void)
{
    pthread_mutex_lock(&blas_mu);
    for (warmed *w = warm_list, *next; w; w = next) {
        next = w->next;
        tg_free(w);
    }
    warm_list = NULL;
    if (atomic_exchange(&blas_used, 0))
        CLBlastClearCache();
    pthread_mutex_unlock(&blas_mu);
}
