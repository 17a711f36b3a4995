/*
 * ocl_rt.h - the OpenCL backend's runtime, shared inside replay/opencl/
 * (plan.c and session.c see only its table, replay_backend_opencl):
 * devices (runtime.c), the per-plan prepared nodes and constant buffers
 * (backend.c) and the per-session run path (run.c).  Op implementations
 * use ocl.h only.
 */
#ifndef TG_REPLAY_OCL_RT_H
#define TG_REPLAY_OCL_RT_H

#include <pthread.h>

#include "../replay.h"
#include "ocl.h"

struct replay_plan;
struct replay_variant;

typedef struct ocl_device_info {
    int index;
    char platform[128];
    char name[128];
    char version[64];
    size_t global_mem;
    int compute_units;
    cl_device_id id; /* backend.c asks clblast.c for its GEMM/conv path */
} ocl_device_info;

struct ocl_dev {
    cl_device_id id;
    cl_context ctx;
    ocl_device_info info;
    size_t align; /* bytes: CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 64) */
    size_t max_alloc;
    int fp64;
    pthread_mutex_t mu; /* guards progs */
    struct prog_entry *progs;
    int plans; /* plans using the device (guarded by the device list's lock) */
    struct ocl_dev *next;
};

/* ---- objects.c: the book of cl objects (made, retained, released) ---- */

typedef enum ocl_obj_kind {
    OCL_OBJ_CONTEXT,
    OCL_OBJ_QUEUE,
    OCL_OBJ_PROGRAM,
    OCL_OBJ_KERNEL,
    OCL_OBJ_BUFFER,
    OCL_OBJ_SUBBUFFER
} ocl_obj_kind;
/* obj was made (one reference) from parent: a sub-buffer's buffer, a
 * kernel's program, else the context (NULL for a context). */
void ocl_obj_made(ocl_obj_kind kind, const void *obj, const void *parent);
/* One more reference (clRetain*). */
void ocl_obj_retain(const void *obj);
/* Drops one reference (clRelease*), after checking the order: see
 * objects.c.  NULL: nothing. */
void ocl_obj_release(ocl_obj_kind kind, const void *obj);
/* References held, over all objects. */
long ocl_live_objects(void);
/* Objects of a kind made since the start, and alive now. */
void ocl_obj_counts(ocl_obj_kind kind, long *made, long *alive);
/* Violations of the release order since the start (or the last reset);
 * the first one's description into msg. */
long ocl_obj_violations(char *msg, size_t len);
void ocl_obj_reset_violations(void);

/* ---- prep.c ---- */

/* Kernels ocl_run enqueued since the process started (tests). */
long ocl_kernels_run(void);
/* A switch of environment variable var: 1 when it says on, 0 off, -1
 * anything but on, off or auto (err names it); unset or auto: 1 on
 * devices other than CPUs. */
int ocl_device_switch(const char *var, const char *on, cl_device_id device, char *err,
                      size_t errlen);

/* ---- runtime.c ---- */

/* Programs built from source, and loaded from the disk cache, since the
 * process started. */
long ocl_builds(void);
long ocl_disk_hits(void);
/* Tests: replaces op's implementation (NULL: unsupported); returns the
 * old one.  Not thread-safe: no compile may run meanwhile. */
const ocl_op *ocl_ops_replace(graph_op op, const ocl_op *impl);
/* Every device; returns the count (may exceed max) or -1 with err. */
int ocl_list_devices(ocl_device_info *out, int max, char *err, size_t errlen);
/* The device want names (index or name substring; NULL: the first),
 * opened once per process, for one more plan (ocl_dev_close); NULL with
 * err. */
ocl_dev *ocl_dev_open(const char *want, char *err, size_t errlen);
void ocl_dev_close(ocl_dev *d);
/* A built program for src and options (cached per device); the caller
 * owns one reference. NULL with err (the build log) on failure. */
cl_program ocl_dev_program(ocl_dev *d, const char *src, const char *options, char *err,
                           size_t errlen);
/* Releases every device no plan uses (their contexts and programs), in
 * two steps around what the layers above cache per context (backend.c's
 * replay_opencl_shutdown: the probe's results, CLBlast's programs):
 * ocl_shutdown_begin holds the device list and returns whether a plan
 * still uses some device; ocl_shutdown_end frees the unused ones and lets
 * go of the list. */
int ocl_shutdown_begin(void);
void ocl_shutdown_end(void);

/* ---- diskcache.c: built programs on disk, when TG_OPENCL_CACHE is set ---- */

/* The program for src/options from the disk cache, built from its
 * binary; NULL when off, missing or unusable. */
cl_program ocl_disk_load(ocl_dev *d, const char *src, const char *options);
/* Saves prog's binary (best effort: errors only lose the cache entry). */
void ocl_disk_store(ocl_dev *d, cl_program prog, const char *src, const char *options);

/* ---- backend.c: the plan side (replay_backend_opencl; p->bplan) ---- */

typedef struct ocl_plan ocl_plan;

/* ---- run.c: the session side ---- */

struct replay_guard_warns; /* replay/internal.h */

ocl_session *ocl_session_new(struct replay_plan *p, char *err, size_t errlen);
void ocl_session_free(ocl_session *s);
/* The scratch buffer of ocl.h's ocl_scratch. */
cl_mem ocl_session_scratch(ocl_session *s, int slot, size_t bytes, char *err, size_t errlen);
/* The tile counters of ocl.h's ocl_counters. */
cl_mem ocl_session_counters(ocl_session *s, size_t n, char *err, size_t errlen);
/* clSetKernelArg on the session's kernel *kp (a slot of its kernels, as
 * ocl_launch.k), skipped when the cache says the argument holds these
 * bytes already (ocl.h's ocl_set_arg). */
cl_int ocl_session_set_arg(ocl_session *s, const cl_kernel *kp, cl_uint index, size_t size,
                           const void *value);
/* Since the process started, over every session: the clSetKernelArg
 * calls made for their kernels, those the cache skipped, and the host
 * time (ns) spent enqueueing the steps of runs (tests, gpu_bench). */
long ocl_args_set(void);
long ocl_args_kept(void);
long long ocl_enqueue_ns(void);
/* A run with inputs in signature order; outputs as replay_run. */
tg_status ocl_session_run(ocl_session *s, const replay_tensor *const *in, int nin,
                          replay_tensor *outputs, int nout, struct replay_guard_warns *warns, char *err,
                          size_t errlen);

/* ---- prepared nodes, shared by backend.c and run.c ---- */

/* ---- ops_attn.c: the attention chain as one kernel ---- */

enum { OCL_ATTN_NONE, OCL_ATTN_ABSORBED, OCL_ATTN_FUSED };
/* TG_OPENCL_ATTN on device: 1 fused, 0 off, -1 a bad value (err);
 * unset or auto: fused on devices other than CPUs. */
int ocl_attn_mode(cl_device_id device, char *err, size_t errlen);
/* Per node of g (role[nnodes]): OCL_ATTN_FUSED for the last matmul of an
 * attention chain, OCL_ATTN_ABSORBED for the chain's other nodes, else
 * OCL_ATTN_NONE.  TG_ERR_NOMEM or TG_OK. */
tg_status ocl_attn_find(const graph *g, int8_t *role);
/* The op that runs a chain at its last matmul's node. */
extern const ocl_op ocl_attn_op;

/* ---- fused.c: a fused node run by the GEMM before it ---- */

/* TG_OPENCL_TAIL on device: 1 on, 0 off, -1 a bad value (err); unset or
 * auto: on for devices other than CPUs. */
int ocl_tail_mode(cl_device_id device, char *err, size_t errlen);
/*
 * Per node of g (tail[nnodes]): for a matmul/linear/linear_ep whose f32
 * output's one reader is a fused node of the same output shape whose
 * other inputs (at most OCL_MAX_XIN) are full-size or scalars ready
 * before the GEMM runs (no graph output, guard or other reader of the
 * GEMM's output), that node's index, marked OCL_ATTN_ABSORBED in role
 * (nodes role already claims are skipped); else -1.  The GEMM's kernels
 * then compute the fused node's program as they store, and write its
 * output (ocl_prep.tail).  TG_ERR_NOMEM or TG_OK.
 */
tg_status ocl_tail_find(const graph *g, int8_t *role, int32_t *tail);
/* Per value of g (allocated; the caller frees it, NULL when out of
 * memory): its reads by live nodes, -1 where a guard or a graph output
 * needs the value itself; reader (if not NULL, nvalues of them) gets the
 * last live node reading each. */
int32_t *ocl_value_uses(const graph *g, int32_t *reader);

/* ---- ops_gemm.c: a layer_norm run by the linear after it ---- */

/* TG_OPENCL_HEAD on device: 1 on, 0 off, -1 a bad value (err); unset or
 * auto: on for devices other than CPUs. */
int ocl_head_mode(cl_device_id device, char *err, size_t errlen);
/*
 * Per node of g (head[nnodes]): for a linear/linear_ep whose input x is
 * the f32 output of a layer_norm over its last dim that nothing else reads
 * (no other node, graph output or guard; role still OCL_ATTN_NONE for
 * both), that layer_norm's index, marked OCL_ATTN_ABSORBED in role; else
 * -1.  Only where the linear runs our GPU tile (ocl_nn_own_tile; not the
 * CPU tile, not gemm_path clblast).  The linear's kernels then read the
 * norm's input and normalize it as they load (ocl_prep.head).
 */
tg_status ocl_head_find(const graph *g, cl_device_id device, int gemm_path, int8_t *role,
                        int32_t *head);

typedef struct ocl_node {
    const ocl_op *op;
    cl_program prog;
    const char *kernel[OCL_MAX_KERNELS];
    int nkernels;
    void *data;
    void (*data_free)(void *data);
    const char *flag_msg;
    const char *path; /* ocl_prep.path */
    /* Run by another node's kernel (ops_attn.c): the step launches
     * nothing, the outputs get no memory and count as no use. */
    int absorbed;
    int32_t xin[OCL_MAX_XIN]; /* ocl_prep.xin */
    int nxin;
    int32_t xout[OCL_MAX_XOUT]; /* ocl_prep.xout */
    int nxout;
} ocl_node;

struct ocl_plan {
    ocl_dev *dev;
    int gemm;        /* ocl_gemm_path, chosen at plan_new (ocl_blas.h) */
    ocl_node *nodes; /* per graph node */
    int8_t *attn;    /* per graph node: OCL_ATTN_* (ocl_attn_find, ocl_tail_find) */
    int32_t *tail;   /* per graph node: the fused node its kernels run, or -1 */
    int32_t *head;   /* per graph node: the layer_norm node its kernels run, or -1 */
    cl_mem *fixed;   /* per value: device copy of consts/params, else NULL */
    int32_t nvalues, nnodes;
};

#endif
