/*
 * prep.c - the helpers of ocl.h: programs and kernels at prepare time,
 * arguments, launches and scratch at run time, epilogue code for the *_ep
 * ops.  A helper file: it calls runtime.c, objects.c and run.c's session
 * accessors, never an op file (the table is op_table.c's).
 */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "ocl_rt.h"

static atomic_long kernels_run;

long ocl_kernels_run(void) { return atomic_load(&kernels_run); }

int ocl_device_switch(const char *var, const char *on, cl_device_id device, char *err,
                      size_t errlen)
{
    const char *m = getenv(var);
    if (m && *m && strcmp(m, on) && strcmp(m, "off") && strcmp(m, "auto")) {
        snprintf(err, errlen, "%s=\"%s\": want %s, off or auto", var, m, on);
        return -1;
    }
    if (m && *m && strcmp(m, "auto"))
        return !strcmp(m, on);
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    return !(type & CL_DEVICE_TYPE_CPU);
}
tg_status ocl_prep_fail(ocl_prep *c, tg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return st;
}

int ocl_prep_has_fp64(const ocl_prep *c) { return c->dev->fp64; }

tg_status ocl_prep_program(ocl_prep *c, const char *name, const char *prefix,
                           const char *options)
{
    const char *common = ocl_source("common"), *body = ocl_source(name);
    if (!body)
        return ocl_prep_fail(c, TG_ERR_ARG, "no OpenCL source named \"%s\"", name);
    if (!prefix)
        prefix = "";
    size_t n = strlen(common) + strlen(prefix) + strlen(body) + 64;
    char *src = tg_malloc(n);
    if (!src)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    snprintf(src, n, "%s\n%s\n#line 1\n%s", common, prefix, body);
    cl_program p = ocl_dev_program(c->dev, src, options, c->err, c->errlen);
    tg_free(src);
    if (!p)
        return strstr(c->err, "out of memory") ? TG_ERR_NOMEM : TG_ERR_BACKEND;
    ocl_obj_release(OCL_OBJ_PROGRAM, c->prog);
    c->prog = p;
    c->nkernels = 0;
    return TG_OK;
}

tg_status ocl_prep_kernel(ocl_prep *c, const char *name)
{
    if (!c->prog)
        return ocl_prep_fail(c, TG_ERR_STATE, "ocl_prep_kernel(\"%s\") before a program", name);
    if (c->nkernels == OCL_MAX_KERNELS)
        return ocl_prep_fail(c, TG_ERR_ARG, "more than %d kernels", OCL_MAX_KERNELS);
    cl_int e;
    cl_kernel k = clCreateKernel(c->prog, name, &e);
    if (!k)
        return ocl_prep_fail(c, TG_ERR_BACKEND, "clCreateKernel(\"%s\"): %s", name,
                             ocl_errstr(e));
    clReleaseKernel(k);
    c->kernel[c->nkernels++] = name;
    return TG_OK;
}

tg_status ocl_prep_upload(ocl_prep *c, const void *host, size_t bytes, cl_mem *out)
{
    cl_int e;
    *out = clCreateBuffer(c->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes ? bytes : 4,
                          bytes ? (void *)host : NULL, &e);
    if (!bytes && *out == NULL) /* COPY_HOST_PTR with NULL: retry plain */
        *out = clCreateBuffer(c->ctx, CL_MEM_READ_ONLY, 4, NULL, &e);
    if (!*out)
        return ocl_prep_fail(c, e == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                                        e == CL_OUT_OF_RESOURCES || e == CL_OUT_OF_HOST_MEMORY
                                    ? TG_ERR_NOMEM : TG_ERR_BACKEND,
                             "device out of memory uploading %zu bytes to %s (%s)", bytes,
                             c->dev->info.name, ocl_errstr(e));
    ocl_obj_made(OCL_OBJ_BUFFER, *out, c->ctx);
    return TG_OK;
}

tg_status ocl_fail(ocl_launch *l, tg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->err, l->errlen, fmt, ap);
    va_end(ap);
    return st;
}

static tg_status cl_status(cl_int e)
{
    return e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
                   e == CL_OUT_OF_HOST_MEMORY
               ? TG_ERR_NOMEM : TG_ERR_BACKEND;
}

tg_status ocl_set_arg(ocl_launch *l, cl_kernel k, cl_uint index, size_t size, const void *value)
{
    /* a session's kernel (l->k[j]): through its cache of what is set */
    int j = -1;
    for (int i = 0; l->sess && i < OCL_MAX_KERNELS && j < 0; i++)
        if (l->k[i] == k)
            j = i;
    cl_int e = j >= 0 ? ocl_session_set_arg(l->sess, &l->k[j], index, size, value)
                      : clSetKernelArg(k, index, size, value);
    if (e != CL_SUCCESS)
        return ocl_fail(l, cl_status(e), "clSetKernelArg %u: %s", index, ocl_errstr(e));
    return TG_OK;
}

tg_status ocl_set_args(ocl_launch *l, cl_kernel k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg_status st = TG_OK;
    for (cl_uint i = 0; fmt[i] && st == TG_OK; i++) {
        switch (fmt[i]) {
        case 'm': {
            cl_mem m = va_arg(ap, cl_mem);
            st = ocl_set_arg(l, k, i, sizeof m, &m);
            break;
        }
        case 'i': {
            cl_int v = va_arg(ap, int);
            st = ocl_set_arg(l, k, i, sizeof v, &v);
            break;
        }
        case 'l': {
            cl_long v = va_arg(ap, int64_t);
            st = ocl_set_arg(l, k, i, sizeof v, &v);
            break;
        }
        case 'f': {
            cl_float v = (cl_float)va_arg(ap, double);
            st = ocl_set_arg(l, k, i, sizeof v, &v);
            break;
        }
        case 'L':
            st = ocl_set_arg(l, k, i, va_arg(ap, size_t), NULL);
            break;
        case 'v': {
            const int32_t *p = va_arg(ap, const int32_t *);
            cl_int8 v;
            memcpy(&v, p, sizeof v);
            st = ocl_set_arg(l, k, i, sizeof v, &v);
            break;
        }
        default:
            st = ocl_fail(l, TG_ERR_ARG, "ocl_set_args: bad format char '%c'", fmt[i]);
        }
    }
    va_end(ap);
    return st;
}

tg_status ocl_run(ocl_launch *l, cl_kernel k, int dims, const size_t *global,
                  const size_t *local)
{
    for (int d = 0; d < dims; d++)
        if (global[d] == 0)
            return TG_OK;
    size_t g2[3], l2[3] = {OCL_LOCAL_DEFAULT, 1, 1};
    if (!local && dims >= 1 && dims <= 3) {
        for (int d = 0; d < dims; d++)
            g2[d] = ocl_round_up(global[d], l2[d]);
        global = g2;
        local = l2;
    }
    cl_int e = clEnqueueNDRangeKernel(l->q, k, (cl_uint)dims, NULL, global, local, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return ocl_fail(l, cl_status(e), "clEnqueueNDRangeKernel: %s%s", ocl_errstr(e),
                        cl_status(e) == TG_ERR_NOMEM ? " (device out of memory)" : "");
    l->enq[OCL_ENQ_KERNEL]++;
    atomic_fetch_add(&kernels_run, 1);
    return TG_OK;
}

cl_mem ocl_scratch(ocl_launch *l, int slot, size_t bytes)
{
    if (slot < 0 || slot >= OCL_MAX_SCRATCH) {
        ocl_fail(l, TG_ERR_ARG, "scratch slot %d (0..%d)", slot, OCL_MAX_SCRATCH - 1);
        return NULL;
    }
    return ocl_session_scratch(l->sess, slot, bytes, l->err, l->errlen);
}

cl_mem ocl_counters(ocl_launch *l, size_t n)
{
    return ocl_session_counters(l->sess, n ? n : 1, l->err, l->errlen);
}

const char *ocl_ctype(graph_dtype dt)
{
    switch (dt) {
    case GRAPH_F32:
        return "float";
    case GRAPH_I64:
        return "long";
    case GRAPH_I32:
        return "int";
    default:
        return "uchar";
    }
}

/* v as an OpenCL C float literal ("1" alone is an int one). */
static void cl_fliteral(float v, char *buf, size_t len)
{
    if (isinf(v)) {
        snprintf(buf, len, "(%sINFINITY)", v < 0 ? "-" : "");
        return;
    }
    char num[32];
    snprintf(num, sizeof num, "%.9g", (double)v);
    snprintf(buf, len, "(%s%sf)", num, strpbrk(num, ".e") ? "" : ".0");
}

int ocl_epilogue_src(const graph_ints *post, graph_post_prm prm, char *buf, size_t len,
                     char *err, size_t errlen)
{
    size_t at = (size_t)snprintf(buf, len, "float tg_epilogue(float v, __global const float *res, "
                                           "long i)\n{\n");
    for (int k = 0; k < post->n && at < len; k++) {
        const char *s;
        char tmp[160], a[40], b[40];
        switch (post->v[k]) {
        case GRAPH_POST_ADD: s = "    v += res[i];\n"; break;
        case GRAPH_POST_RELU: s = "    v = tg_relu(v);\n"; break; /* NaN passes */
        case GRAPH_POST_GELU: s = "    v = tg_gelu(v);\n"; break;
        case GRAPH_POST_SIGMOID: s = "    v = tg_sigmoid(v);\n"; break;
        case GRAPH_POST_TANH: s = "    v = tanh(v);\n"; break;
        case GRAPH_POST_SILU: s = "    v = tg_silu(v);\n"; break;
        case GRAPH_POST_LEAKY_RELU:
            cl_fliteral(prm.alpha, a, sizeof a);
            snprintf(tmp, sizeof tmp, "    v = tg_leaky_relu(v, %s);\n", a);
            s = tmp;
            break;
        case GRAPH_POST_HARDSIGMOID: /* as eager/kernels_ep.c */
            s = "    v = tg_clip(v * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);\n";
            break;
        case GRAPH_POST_HARDSWISH:
            s = "    v = v * tg_clip(v * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);\n";
            break;
        case GRAPH_POST_CLIP:
            cl_fliteral(prm.clip_min, a, sizeof a);
            cl_fliteral(prm.clip_max, b, sizeof b);
            snprintf(tmp, sizeof tmp, "    v = tg_clip(v, %s, %s);\n", a, b);
            s = tmp;
            break;
        default:
            snprintf(err, errlen, "unknown epilogue code %lld", (long long)post->v[k]);
            return -1;
        }
        at += (size_t)snprintf(buf + at, len - at, "%s", s);
    }
    if (at < len)
        at += (size_t)snprintf(buf + at, len - at, "    return v;\n}\n");
    if (at >= len) {
        snprintf(err, errlen, "epilogue code too long");
        return -1;
    }
    return 0;
}

int ocl_bcast_plan(const graph_type *out, const graph_type *in, int nin, ocl_bcast *b)
{
    int64_t st[GRAPH_MAX_NODE_IO][GRAPH_MAX_DIMS], dims[GRAPH_MAX_DIMS];
    int nd = 0;
    if (graph_type_numel(out) > INT32_MAX)
        return -1;
    for (int j = 0; j < nin; j++) {
        int64_t s = 1;
        for (int k = out->ndim - 1; k >= 0; k--) {
            int kk = k - (out->ndim - in[j].ndim);
            int64_t d = kk >= 0 ? in[j].dim[kk] : 1;
            st[j][k] = d == 1 ? 0 : s;
            s *= d;
        }
    }
    /* From the innermost dim out: drop size-1 dims, merge a dim into the
     * group inside it when every input continues contiguously. */
    int64_t gst[GRAPH_MAX_NODE_IO][GRAPH_MAX_DIMS];
    for (int k = out->ndim - 1; k >= 0; k--) {
        if (out->dim[k] == 1)
            continue;
        int merge = nd > 0;
        for (int j = 0; merge && j < nin; j++)
            merge = st[j][k] == gst[j][nd - 1] * dims[nd - 1];
        if (merge) {
            dims[nd - 1] *= out->dim[k];
            continue;
        }
        dims[nd] = out->dim[k];
        for (int j = 0; j < nin; j++)
            gst[j][nd] = st[j][k];
        nd++;
    }
    if (nd == 0) {
        dims[0] = 1;
        for (int j = 0; j < nin; j++)
            gst[j][0] = 0;
        nd = 1;
    }
    memset(b, 0, sizeof *b);
    b->nd = nd;
    for (int k = 0; k < nd; k++) { /* reverse: outermost first */
        b->dims[k] = (int32_t)dims[nd - 1 - k];
        for (int j = 0; j < nin; j++) {
            if (gst[j][nd - 1 - k] > INT32_MAX)
                return -1;
            b->st[j][k] = (int32_t)gst[j][nd - 1 - k];
        }
    }
    return 0;
}
