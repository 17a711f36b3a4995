/*
 * ocl_blas.h - CLBlast (the tuned OpenCL BLAS) for the OpenCL backend's
 * matmul, linear, linear_ep, conv2d, conv2d_ep and conv2d_blk (clblast.c;
 * used by ops_gemm.c and ops_conv.c).
 *
 * The path is chosen per device when a plan is compiled: auto on GPUs and
 * accelerators (each matmul/linear and each conv CLBlast can take through
 * CLBlast or our GPU tile, whichever is faster for its shape, timed at
 * compile: on an H200 our tile won every product of the benchmark
 * workloads, which are small, and CLBlast's convgemm beat our first,
 * CPU-shaped conv tile 5x), the backend's own
 * kernels (cl/nn_gemm.cl, cl/nn_conv.cl) on CPU devices such as PoCL, where
 * CLBlast measured slower.  TG_OPENCL_GEMM=auto|clblast|own overrides it
 * (read at each replay_compile; another value: a warning line naming what
 * is used).
 *
 * CLBlast builds its kernels on first use per device and context (tens of
 * seconds on PoCL the first time; PoCL's own kernel cache keeps them for
 * later processes), so prepare runs each node's call once on scratch
 * buffers of its traced shape (ocl_blas_warm_*): replay_run finds them
 * built.  Every CLBlast call holds one process-wide lock: CLBlast 1.5.3
 * predates the fix of its cache's race between threads (CLBlast issue
 * 486, fixed in 1.6.1), and the calls only enqueue, so sessions on their
 * own queues lose little by it.
 */
#ifndef TG_REPLAY_OCL_BLAS_H
#define TG_REPLAY_OCL_BLAS_H

#include "ocl.h"

/* auto: each matmul/linear node and each conv CLBlast can take on CLBlast
 * or our GPU tile, whichever ran its traced shape faster at replay_compile
 * (ops_gemm.c's gemm_probe, ops_conv.c's conv_probe). */
typedef enum ocl_gemm_path { OCL_GEMM_OWN, OCL_GEMM_CLBLAST, OCL_GEMM_AUTO } ocl_gemm_path;

/* The path for device (the default by its type, or TG_OPENCL_GEMM) and,
 * in why (may be NULL), a static reason ("GPU device", "TG_OPENCL_GEMM"). */
ocl_gemm_path ocl_gemm_choose(cl_device_id device, const char **why);
/* "clblast" or "own" */
const char *ocl_gemm_name(ocl_gemm_path p);

/*
 * A row-major batched GEMM for CLBlast: C[z] = op(A[z]) op(B[z]) for z <
 * batch, op the transpose where ta/tb, leading dimensions lda/ldb/ldc and
 * batch strides sa/sb/sc in elements (0: the operand broadcasts).
 */
typedef struct ocl_blas_gemm {
    size_t m, n, k, lda, ldb, ldc, sa, sb, sc, batch;
    int ta, tb;
} ocl_blas_gemm;

/* NCHW x [O, C, KH, KW] -> NCHW, groups 1, symmetric padding. */
typedef struct ocl_blas_conv {
    size_t batch, c, h, w, o, kh, kw, pad_h, pad_w, st_h, st_w, dil_h, dil_w;
} ocl_blas_conv;

/* Enqueues on q; 0, or a message in err naming the CLBlast status. */
int ocl_blas_gemm_run(cl_command_queue q, const ocl_blas_gemm *g, cl_mem a, cl_mem b, cl_mem c,
                      char *err, size_t errlen);
int ocl_blas_conv_run(cl_command_queue q, const ocl_blas_conv *v, cl_mem x, cl_mem w, cl_mem y,
                      char *err, size_t errlen);

/* Prepare: runs g (v) once on scratch buffers of its size in c's context,
 * so CLBlast builds its kernels now; TG_OK or an error in c->err. */
tg_status ocl_blas_warm_gemm(ocl_prep *c, const ocl_blas_gemm *g);
tg_status ocl_blas_warm_conv(ocl_prep *c, const ocl_blas_conv *v);

/* CLBlast calls made so far in this process (warm-ups included): tests
 * check which path a node took. */
long ocl_blas_calls(void);

/* The auto path's probes that failed (each then chose CLBlast, as when
 * not probed) so far in this process: tests check there were none. */
long ocl_probe_failures(void);
/* The probes that timed the split summed by the last split, checked
 * against the sum kernel's bits (ocl_nn_probe): n[0] agreed, n[1]
 * disagreed (the way then not taken). */
void ocl_fixup_checks(long n[2]);

/* Depthwise conv nodes prepared so far in this process (ops_dw.c), by the
 * way each runs: n[0] direct, n[1] rows, n[2] tiled; tests check which. */
void ocl_dw_ways(long n[3]);

/* Forgets the auto path's timings (nn_probe.c's ocl_nn_probe), with the
 * contexts. */
void ocl_gemm_probe_forget(void);

/* Frees CLBlast's caches (programs hold the devices' contexts): called by
 * replay_opencl_shutdown when no plan uses a device. */
void ocl_blas_shutdown(void);

#endif
