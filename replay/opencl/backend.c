/*
 * backend.c - the OpenCL backend's table (replay_backend_opencl) and its
 * plan side: open the device and upload every constant and param once
 * (plan_new), refuse what no kernel runs (supports_op) and prepare every
 * live node through its op (ocl.h), so that an unsupported op or a failed
 * build stops replay_compile with the node's call site, never a run.
 * Sessions and runs are run.c's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/errors.h"
#include "../internal.h"
#include "ocl_blas.h"
#include "ocl_rt.h"
#include "../../graph/graph_impl.h"

static tg_status upload(ocl_plan *op, const graph_value *v, cl_mem *out, char *err,
                        size_t errlen)
{
    size_t bytes = graph_value_nbytes(v);
    *out = NULL;
    if (bytes == 0)
        return TG_OK;
    if (!v->data) {
        snprintf(err, errlen, "replay: %s \"%s\" has no data",
                 v->kind == GRAPH_VALUE_PARAM ? "param" : "constant", v->name ? v->name : "?");
        return TG_ERR_ARG;
    }
    cl_int e;
    *out = clCreateBuffer(op->dev->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, v->data,
                          &e);
    if (!*out) {
        snprintf(err, errlen, "replay: OpenCL device %s out of memory: cannot hold %s \"%s\" "
                 "(%zu bytes): %s", op->dev->info.name,
                 v->kind == GRAPH_VALUE_PARAM ? "param" : "constant", v->name ? v->name : "?",
                 bytes, ocl_errstr(e));
        return TG_ERR_NOMEM;
    }
    ocl_obj_made(OCL_OBJ_BUFFER, *out, op->dev->ctx);
    return TG_OK;
}

/* Replaces value id's device copy with v's (new) host data. */
static tg_status param_changed(replay_plan *p, const graph_value *v, int32_t id, char *err,
                               size_t errlen)
{
    ocl_plan *op = p->bplan;
    /* Sessions look fixed buffers up at every step, so a fresh buffer is
     * seen by the next run (replay_set_param excludes concurrent runs). */
    cl_mem fresh;
    tg_status st = upload(op, v, &fresh, err, errlen);
    if (st != TG_OK)
        return st;
    ocl_obj_release(OCL_OBJ_BUFFER, op->fixed[id]);
    op->fixed[id] = fresh;
    return TG_OK;
}

/*
 * Nonzero when node n of g is a blocked conv or pool (conv2d_blk,
 * max_pool2d_blk, avg_pool2d_blk) on blocks other than 16 lanes: the
 * OpenCL kernels (nn_conv.cl, the pools, ops_dw.c) index nChw16c only.
 * to_blocked / from_blocked are strided copies of any block, and
 * elementwise ops do not see the layout.
 */
static int blocked_not_16(const graph *g, const graph_node *n)
{
    if (n->op == GRAPH_OP_conv2d_blk)
        return g->values[n->out[0]].type.dim[4] != 16;
    if (n->op == GRAPH_OP_max_pool2d_blk || n->op == GRAPH_OP_avg_pool2d_blk)
        return g->values[n->in[0]].type.dim[4] != 16;
    return 0;
}

/* An op with a kernel whose tensors the kernels' 32-bit indices reach. */
static int supports_op(const replay_plan *p, const graph_node *n, char *why, size_t len)
{
    if (!ocl_ops()[n->op]) {
        snprintf(why, len, "no OpenCL kernel");
        return 0;
    }
    if (blocked_not_16(p->g, n)) {
        const graph_value *v = &p->g->values[n->op == GRAPH_OP_conv2d_blk ? n->out[0] : n->in[0]];
        snprintf(why, len, "blocked values of %lld lanes: the OpenCL kernels take 16",
                 (long long)v->type.dim[4]);
        return 0;
    }
    /* The kernels index elements with 32-bit ints (run.c re-checks the
     * sizes of each dynamic-shape variant). */
    for (int k = 0; k < n->nin + n->nout; k++) {
        const graph_value *v = &p->g->values[k < n->nin ? n->in[k] : n->out[k - n->nin]];
        int64_t numel = graph_type_numel(&v->type);
        if (numel > INT32_MAX) {
            snprintf(why, len, "a tensor of %lld elements exceeds the OpenCL kernels' 32-bit "
                     "indexing", (long long)numel);
            return 0;
        }
    }
    return 1;
}

/* Prepares node i (supported: supports_op); on failure err names the node. */
static tg_status prepare_op(replay_plan *p, int32_t i, char *err, size_t errlen)
{
    ocl_plan *op = p->bplan;
    const graph *g = p->g;
    const graph_node *n = &g->nodes[i];
    const ocl_op *impl = ocl_ops()[n->op];
    if (op->attn[i] == OCL_ATTN_ABSORBED) { /* run by the chain's last node */
        op->nodes[i] = (ocl_node){.op = impl, .absorbed = 1};
        return TG_OK;
    }
    if (op->attn[i] == OCL_ATTN_FUSED)
        impl = &ocl_attn_op;
    char what[400], why[4096] = "";
    graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO];
    const void *host[GRAPH_MAX_NODE_IO];
    for (int k = 0; k < n->nin; k++) {
        const graph_value *v = &g->values[n->in[k]];
        it[k] = v->type;
        host[k] = v->kind == GRAPH_VALUE_CONST ? v->data : NULL;
    }
    for (int k = 0; k < n->nout; k++)
        ot[k] = g->values[n->out[k]].type;
    ocl_prep c = {.dev = op->dev, .ctx = op->dev->ctx, .device = op->dev->id, .g = g,
                  .blas = op->gemm != OCL_GEMM_OWN, .probe = op->gemm == OCL_GEMM_AUTO,
                  .tail = op->tail[i] >= 0 ? &g->nodes[op->tail[i]] : NULL,
                  .head = op->head[i] >= 0 ? &g->nodes[op->head[i]] : NULL,
                  .node = n, .attrs = tg_node_attrs(n),
                  .in_type = it, .nin = n->nin, .out_type = ot, .nout = n->nout,
                  .in_host = host, .err = why, .errlen = sizeof why};
    tg_status st = impl->prepare(&c);
    ocl_node *on = &op->nodes[i];
    *on = (ocl_node){impl, c.prog, {0}, c.nkernels, c.data, c.data_free, c.flag_msg, c.path, 0,
                     {0}, c.nxin, {0}, c.nxout};
    memcpy(on->kernel, c.kernel, sizeof c.kernel);
    memcpy(on->xin, c.xin, sizeof c.xin);
    memcpy(on->xout, c.xout, sizeof c.xout);
    if (st == TG_OK)
        return TG_OK;
    replay_node_str(p, i, what, sizeof what);
    if (st == TG_ERR_UNSUPPORTED)
        snprintf(err, errlen, "replay: op %s is not supported on %s: %s (%s)",
                 graph_ops[n->op].name, p->target, why, what);
    else
        snprintf(err, errlen, "replay: %s: OpenCL: %s", what, why);
    return st;
}

static void plan_free(void *bplan);

/* Opens device p->device_index (replay_backend_resolve matched the name
 * against ocl_list_devices' order), uploads constants and params. */
static tg_status plan_new(replay_plan *p, char *err, size_t errlen)
{
    const graph *g = p->g;
    char msg[512];
    ocl_plan *op = tg_calloc(1, sizeof *op);
    if (!op) {
        snprintf(err, errlen, "replay: out of memory");
        return TG_ERR_NOMEM;
    }
    char index[16];
    snprintf(index, sizeof index, "%d", p->device_index);
    op->dev = ocl_dev_open(index, msg, sizeof msg);
    if (!op->dev) {
        snprintf(err, errlen, "replay: OpenCL: %s", msg);
        tg_free(op);
        return TG_ERR_BACKEND;
    }
    op->gemm = ocl_gemm_choose(op->dev->id, NULL);
    op->nvalues = g->nvalues;
    op->nnodes = g->nnodes;
    op->nodes = tg_calloc((size_t)g->nnodes + 1, sizeof *op->nodes);
    op->fixed = tg_calloc((size_t)g->nvalues + 1, sizeof *op->fixed);
    op->attn = tg_calloc((size_t)g->nnodes + 1, sizeof *op->attn);
    op->tail = tg_malloc(((size_t)g->nnodes + 1) * sizeof *op->tail);
    op->head = tg_malloc(((size_t)g->nnodes + 1) * sizeof *op->head);
    tg_status st = TG_ERR_NOMEM;
    if (!op->nodes || !op->fixed || !op->attn || !op->tail || !op->head) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    /* The attention chains that run as one kernel (ops_attn.c). */
    int attn = ocl_attn_mode(op->dev->id, msg, sizeof msg);
    if (attn < 0) {
        snprintf(err, errlen, "replay: OpenCL: %s", msg);
        st = TG_ERR_ARG;
        goto fail;
    }
    if (attn && ocl_attn_find(g, op->attn) != TG_OK) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    /* The fused nodes a GEMM before them runs (fused.c). */
    int tail = ocl_tail_mode(op->dev->id, msg, sizeof msg);
    if (tail < 0) {
        snprintf(err, errlen, "replay: OpenCL: %s", msg);
        st = TG_ERR_ARG;
        goto fail;
    }
    for (int32_t i = 0; i < g->nnodes; i++)
        op->tail[i] = -1;
    if (tail && ocl_tail_find(g, op->attn, op->tail) != TG_OK) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    /* The layer norms a linear after them runs (ops_gemm.c). */
    int head = ocl_head_mode(op->dev->id, msg, sizeof msg);
    if (head < 0) {
        snprintf(err, errlen, "replay: OpenCL: %s", msg);
        st = TG_ERR_ARG;
        goto fail;
    }
    for (int32_t i = 0; i < g->nnodes; i++)
        op->head[i] = -1;
    if (head && ocl_head_find(g, op->dev->id, op->gemm, op->attn, op->head) != TG_OK) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    for (int32_t v = 0; v < g->nvalues; v++) {
        const graph_value *val = &g->values[v];
        if ((val->kind == GRAPH_VALUE_CONST || val->kind == GRAPH_VALUE_PARAM) &&
            (st = upload(op, val, &op->fixed[v], err, errlen)) != TG_OK)
            goto fail;
    }
    p->bplan = op;
    snprintf(p->target, sizeof p->target, "device %s", op->dev->info.name);
    return TG_OK;
fail:
    plan_free(op);
    return st;
}

static void plan_free(void *bplan)
{
    ocl_plan *op = bplan;
    if (!op)
        return;
    for (int32_t i = 0; op->nodes && i < op->nnodes; i++) {
        ocl_node *n = &op->nodes[i];
        if (n->data_free)
            n->data_free(n->data);
        ocl_obj_release(OCL_OBJ_PROGRAM, n->prog);
    }
    for (int32_t v = 0; op->fixed && v < op->nvalues; v++)
        ocl_obj_release(OCL_OBJ_BUFFER, op->fixed[v]);
    tg_free(op->nodes);
    tg_free(op->fixed);
    tg_free(op->attn);
    tg_free(op->tail);
    tg_free(op->head);
    if (op->dev)
        ocl_dev_close(op->dev);
    tg_free(op);
}

/* A caller's host workspace cannot hold a device arena: refused. */
static void *session_new(replay_plan *p, void *workspace, size_t size, char *err,
                         size_t errlen)
{
    (void)size;
    if (workspace) {
        tg_errf(err, errlen, "replay_session_create: an OpenCL plan's arena is device memory, "
                             "which the session allocates: the workspace must be NULL");
        return NULL;
    }
    return ocl_session_new(p, err, errlen);
}

static void session_free(void *bsession) { ocl_session_free(bsession); }

static tg_status run(void *bsession, const replay_tensor *const *in, int nin,
                     replay_tensor *outputs, int nout, replay_guard_warns *warns, char *err,
                     size_t errlen)
{
    return ocl_session_run(bsession, in, nin, outputs, nout, warns, err, errlen);
}

/*
 * OpenCL's target: blocks of 16 channels (the kernels of cl/nn_conv.cl
 * and the blocked ops take 16 lanes), every conv taken as runnable
 * blocked (no implementation to ask: impl_of NULL).
 */
static void ocl_target(const replay_opts *o, graph_target *t)
{
    (void)o;
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "opencl");
    t->block = 16;
    t->threads = 1;
    snprintf(t->why, sizeof t->why, "the OpenCL blocked kernels take 16 channels");
}

/* replay_backend_shutdown: the devices no plan holds, with the GEMM
 * probe's cache and CLBlast's programs. */
static void ocl_shutdown(void)
{
    int kept = ocl_shutdown_begin(); /* the device list held to the end */
    ocl_gemm_probe_forget(); /* keyed by context: a freed one's address may come back */
    /* CLBlast's cached programs hold contexts: dropped first, when no
     * device stays */
    if (!kept)
        ocl_blas_shutdown();
    ocl_shutdown_end();
}

/* The devices of every platform (replay_backend_devices), in
 * ocl_list_devices' order, which ocl_dev_open's index follows. */
static int ocl_devices(replay_device_info *out, int max, char *err, size_t errlen)
{
    ocl_device_info info[64];
    int n = ocl_list_devices(info, 64, err, errlen);
    for (int i = 0; out && i < n && i < max && i < 64; i++) {
        replay_device_info *d = &out[i];
        memset(d, 0, sizeof *d);
        snprintf(d->device, sizeof d->device, "%s %s", info[i].platform, info[i].name);
        const char *why;
        ocl_gemm_path gp = ocl_gemm_choose(info[i].id, &why);
        snprintf(d->details, sizeof d->details, "%s, %d compute units, %.1f GiB, GEMM %s (%s)",
                 info[i].version, info[i].compute_units,
                 (double)info[i].global_mem / (1024.0 * 1024.0 * 1024.0), ocl_gemm_name(gp),
                 why);
    }
    return n;
}

/* replay_plan_property: "gemm", the GEMM/conv path of the plan. */
static const char *ocl_property(const replay_plan *p, const char *key)
{
    if (!p->bplan || strcmp(key, "gemm"))
        return NULL;
    return ocl_gemm_name(((const ocl_plan *)p->bplan)->gemm);
}

/* replay_plan_handle: "cl_context". */
static void *ocl_handle(const replay_plan *p, const char *what)
{
    if (!p->bplan || strcmp(what, "cl_context"))
        return NULL;
    return (void *)((const ocl_plan *)p->bplan)->dev->ctx;
}

/* replay_buffer_new: a cl_mem in the plan's context, holding data. */
static void *ocl_buffer_new(const replay_plan *p, size_t bytes, const void *data, char *err,
                            size_t errlen)
{
    const ocl_plan *op = p->bplan;
    cl_int e;
    cl_mem m = clCreateBuffer(op->dev->ctx, CL_MEM_READ_WRITE | (data && bytes ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes ? bytes : 4, data && bytes ? (void *)data : NULL, &e);
    if (!m)
        snprintf(err, errlen, "replay: OpenCL device %s: cannot make a buffer of %zu bytes: %s",
                 op->dev->info.name, bytes, ocl_errstr(e));
    return m;
}

static void ocl_buffer_free(const replay_plan *p, void *buffer)
{
    (void)p;
    clReleaseMemObject((cl_mem)buffer);
}

const replay_backend replay_backend_opencl = {
    .target = ocl_target,
    .name = "opencl",
    .supports_op = supports_op,
    .plan_new = plan_new,
    .prepare_op = prepare_op,
    .plan_free = plan_free,
    .param_changed = param_changed,
    .session_new = session_new,
    .session_free = session_free,
    .run = run,
    .device_buffers = 1,
    .devices = ocl_devices,
    .property = ocl_property,
    .handle = ocl_handle,
    .buffer_new = ocl_buffer_new,
    .buffer_free = ocl_buffer_free,
    .shutdown = ocl_shutdown,
};

/* ---- the deprecated entry points (replay.h), kept one release ---- */

int replay_opencl_devices(replay_device *out, int max, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    ocl_device_info info[64];
    int n = ocl_list_devices(info, 64, err, errlen);
    for (int i = 0; out && i < n && i < max && i < 64; i++) {
        replay_device *d = &out[i];
        *d = (replay_device){info[i].index, "", "", "", info[i].global_mem, info[i].compute_units, ""};
        snprintf(d->platform, sizeof d->platform, "%s", info[i].platform);
        snprintf(d->name, sizeof d->name, "%s", info[i].name);
        snprintf(d->version, sizeof d->version, "%s", info[i].version);
        const char *why;
        ocl_gemm_path gp = ocl_gemm_choose(info[i].id, &why);
        snprintf(d->gemm, sizeof d->gemm, "%s (%s)", ocl_gemm_name(gp), why);
    }
    return n;
}

void *replay_opencl_context(const replay_plan *p)
{
    if (!p || p->backend != &replay_backend_opencl)
        return NULL;
    return replay_plan_handle(p, "cl_context");
}

const char *replay_opencl_gemm(const replay_plan *p)
{
    if (!p || p->backend != &replay_backend_opencl)
        return NULL;
    return replay_plan_property(p, "gemm");
}

void replay_opencl_shutdown(void) { ocl_shutdown(); }

