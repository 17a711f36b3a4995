/*
 * backend.c - the OpenCL plan: open the device, upload every constant and
 * param once, and prepare every live node through its op (ocl.h), so
 * that an unsupported op or a failed build stops replay_compile with the
 * node's call site, never a run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../internal.h"
#include "ocl_rt.h"

size_t ocl_plan_align(const ocl_plan *op) { return op->dev->align; }
cl_context ocl_plan_context(const ocl_plan *op) { return op->dev->ctx; }

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
    ocl_track(1);
    return TG_OK;
}

tg_status ocl_plan_param_changed(ocl_plan *op, const graph_value *v, int32_t id, char *err,
                                 size_t errlen)
{
    /* Sessions look fixed buffers up at every step, so a fresh buffer is
     * seen by the next run (replay_set_param excludes concurrent runs). */
    cl_mem fresh;
    tg_status st = upload(op, v, &fresh, err, errlen);
    if (st != TG_OK)
        return st;
    if (op->fixed[id]) {
        clReleaseMemObject(op->fixed[id]);
        ocl_track(-1);
    }
    op->fixed[id] = fresh;
    return TG_OK;
}

/* Prepares node i; on failure err names the node. */
static tg_status prepare_node(replay_plan *p, ocl_plan *op, int32_t i, char *err,
                              size_t errlen)
{
    const graph *g = p->g;
    const graph_node *n = &g->nodes[i];
    const ocl_op *impl = ocl_ops()[n->op];
    char what[400], why[4096] = "";
    if (!impl) {
        snprintf(err, errlen, "replay: op %s is not supported on device %s: no OpenCL kernel (%s)",
                 graph_ops[n->op].name, op->dev->info.name, replay_node_str(p, i, what, sizeof what));
        return TG_ERR_UNSUPPORTED;
    }
    graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO];
    const void *host[GRAPH_MAX_NODE_IO];
    for (int k = 0; k < n->nin; k++) {
        const graph_value *v = &g->values[n->in[k]];
        it[k] = v->type;
        host[k] = v->kind == GRAPH_VALUE_CONST ? v->data : NULL;
    }
    for (int k = 0; k < n->nout; k++)
        ot[k] = g->values[n->out[k]].type;
    /* The kernels index elements with 32-bit ints (run.c re-checks the
     * sizes of each dynamic-shape variant). */
    for (int k = 0; k < n->nin + n->nout; k++) {
        int64_t numel = graph_type_numel(k < n->nin ? &it[k] : &ot[k - n->nin]);
        if (numel > INT32_MAX) {
            snprintf(err, errlen, "replay: op %s is not supported on device %s: a tensor of "
                     "%lld elements exceeds the OpenCL kernels' 32-bit indexing (%s)",
                     graph_ops[n->op].name, op->dev->info.name, (long long)numel,
                     replay_node_str(p, i, what, sizeof what));
            return TG_ERR_UNSUPPORTED;
        }
    }
    ocl_prep c = {.dev = op->dev, .ctx = op->dev->ctx, .device = op->dev->id, .g = g,
                  .node = n, .attrs = graph_node_attrs(n), .in_type = it, .nin = n->nin,
                  .out_type = ot, .nout = n->nout, .in_host = host, .err = why,
                  .errlen = sizeof why};
    tg_status st = impl->prepare(&c);
    ocl_node *on = &op->nodes[i];
    *on = (ocl_node){impl, c.prog, {0}, c.nkernels, c.data, c.data_free, c.flag_msg};
    memcpy(on->kernel, c.kernel, sizeof c.kernel);
    if (st == TG_OK)
        return TG_OK;
    replay_node_str(p, i, what, sizeof what);
    if (st == TG_ERR_UNSUPPORTED)
        snprintf(err, errlen, "replay: op %s is not supported on device %s: %s (%s)",
                 graph_ops[n->op].name, op->dev->info.name, why, what);
    else
        snprintf(err, errlen, "replay: %s: OpenCL: %s", what, why);
    return st;
}

ocl_plan *ocl_plan_new(replay_plan *p, char *err, size_t errlen)
{
    const graph *g = p->g;
    char msg[512];
    ocl_plan *op = tg_calloc(1, sizeof *op);
    if (!op) {
        snprintf(err, errlen, "replay: out of memory");
        return NULL;
    }
    op->dev = ocl_dev_open(p->opts.device, msg, sizeof msg);
    if (!op->dev) {
        snprintf(err, errlen, "replay: OpenCL: %s", msg);
        tg_free(op);
        return NULL;
    }
    op->nvalues = g->nvalues;
    op->nnodes = g->nnodes;
    op->nodes = tg_calloc((size_t)g->nnodes + 1, sizeof *op->nodes);
    op->fixed = tg_calloc((size_t)g->nvalues + 1, sizeof *op->fixed);
    if (!op->nodes || !op->fixed) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    for (int32_t v = 0; v < g->nvalues; v++) {
        const graph_value *val = &g->values[v];
        if ((val->kind == GRAPH_VALUE_CONST || val->kind == GRAPH_VALUE_PARAM) &&
            upload(op, val, &op->fixed[v], err, errlen) != TG_OK)
            goto fail;
    }
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && prepare_node(p, op, i, err, errlen) != TG_OK)
            goto fail;
    return op;
fail:
    ocl_plan_free(op);
    return NULL;
}

void ocl_plan_free(ocl_plan *op)
{
    if (!op)
        return;
    for (int32_t i = 0; op->nodes && i < op->nnodes; i++) {
        ocl_node *n = &op->nodes[i];
        if (n->data_free)
            n->data_free(n->data);
        if (n->prog) {
            clReleaseProgram(n->prog);
            ocl_track(-1);
        }
    }
    for (int32_t v = 0; op->fixed && v < op->nvalues; v++)
        if (op->fixed[v]) {
            clReleaseMemObject(op->fixed[v]);
            ocl_track(-1);
        }
    tg_free(op->nodes);
    tg_free(op->fixed);
    if (op->dev)
        ocl_dev_close(op->dev);
    tg_free(op);
}
