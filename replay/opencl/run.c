/*
 * run.c - OpenCL sessions and runs.  A session owns an in-order queue,
 * its own cl_kernel objects (one set per node: cl_kernel is not
 * thread-safe and sessions run concurrently), a pool of buffers that the
 * planned buffers of each variant share out by lifetime (run_bind.c), staging buffers
 * for host inputs/outputs, scratch and the data-error flag.
 *
 * A run: write host inputs (or take the caller's cl_mem), clear the flag,
 * enqueue every step (guards read their value back and check it on the
 * host), copy or read the outputs, wait once, then check the flag (the
 * flag only when some node's kernels can raise it: gather and the like;
 * on a GPU its clear and read-back are a sizeable part of a small run).
 * TG_OPENCL_SYNC=1 in the environment waits after every node instead, so
 * that a kernel failing on the device (an illegal address: the driver
 * reports it only at the next wait) is named with its node and call site.
 *
 * Kernel arguments: a kernel keeps what was set until it is set again, and
 * in a steady replay nearly every argument is what it was last run, so
 * ocl_session_set_arg skips clSetKernelArg when the session's record of a
 * kernel's argument (kargs) holds the same bytes.  A cl_mem is compared as
 * a handle value, which the allocator may reuse once released (and a
 * driver may have resolved the old one to an address when it was set): so
 * every release or allocation of a buffer the session owns, and a change
 * of the plan's params (whose buffers are replaced), starts a new
 * generation (gen) in which no record holds; a caller's cl_mem input or
 * output written in place (replay_tensor.buffer, direct_outputs), whose
 * life the session does not see, is set every time it is an argument.  An argument is recorded only after its
 * clSetKernelArg succeeded (it is forgotten before the call).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../graph/alloc.h"
#include "../internal.h"
#include "ocl_rt.h"
#include "run_bind.h"
#include "../../graph/graph_impl.h"

static atomic_long args_set, args_kept;
static atomic_llong enqueue_ns;

long ocl_args_set(void) { return atomic_load(&args_set); }
long ocl_args_kept(void) { return atomic_load(&args_kept); }
long long ocl_enqueue_ns(void) { return atomic_load(&enqueue_ns); }

/* One kernel's arguments as last set (ocl_session_set_arg), made when it
 * is first set: per argument index its state and size, and the value's
 * bytes (values of at most KARG_MAX bytes; larger ones are always set). */
enum { KARG_UNKNOWN, KARG_VALUE, KARG_LOCAL };
#define KARG_MAX 64
#define KARG_MAX_ARGS 255
_Static_assert(KARG_MAX <= UINT8_MAX, "karg.room holds a value's size");
typedef struct karg {
    uint32_t size; /* the value's bytes, or the __local size */
    uint16_t off;  /* its bytes at kargs.bytes + off, room of them */
    uint8_t room;
    uint8_t state; /* KARG_* */
} karg;
typedef struct kargs {
    cl_kernel k;  /* the kernel recorded (another: nothing holds) */
    uint64_t gen; /* the session's generation then (another: nothing holds) */
    uint16_t n, nbytes;
    karg *a;              /* n */
    unsigned char *bytes; /* nbytes */
} kargs;

struct ocl_session {
    replay_plan *p;
    ocl_plan *op;
    cl_command_queue q;
    cl_kernel *k; /* nnodes x OCL_MAX_KERNELS */
    /* Per kernel of k, its arguments as set (NULL until set); gen: the
     * generation of the session's buffers (see the top), param_gen the
     * plan's when last seen; argcache: TG_OPENCL_ARGCACHE not 0/off. */
    kargs **args;
    uint64_t gen, param_gen;
    int argcache;
    /* this run's caller cl_mem inputs and directly written outputs (never
     * recorded), ncaller of them */
    cl_mem *caller;
    int32_t ncaller;
    cl_mem *slot; /* the pool: intermediate values, shared by the variants */
    size_t *slot_size;
    int32_t nslots;
    obound *bounds;
    /* per graph input and output (as many as the graph has, no fixed cap) */
    int32_t nin, nout;
    cl_mem *in;
    size_t *in_size;
    void **host_out;
    size_t *host_out_size;
    cl_mem *direct; /* per graph output: its value's own memory while this run writes
                       it into the caller's cl_mem (direct_outputs), else NULL */
    void *host_tmp;
    size_t host_tmp_size;
    cl_mem scratch[OCL_MAX_SCRATCH];
    size_t scratch_size[OCL_MAX_SCRATCH];
    cl_mem cnt; /* ocl_counters: ints every kernel leaves zero */
    size_t cnt_n;
    cl_mem flag;
    int flags; /* some node's kernels may raise the flag (else it is neither cleared nor read) */
    int sync; /* TG_OPENCL_SYNC: wait after every node, to name the one that fails */
    /* TG_OPENCL_PROFILE: a marker after every node; per node, the device
     * time since the previous marker, summed over runs (printed at free) */
    int prof;
    cl_event *ev;      /* nitems + 1 markers of the current run */
    cl_ulong *prof_ns; /* per node */
    long prof_runs;
    long enq[3], enq_runs; /* ocl_launch.enq summed over nodes and runs */
    long nset, nkept;      /* kernel arguments set and skipped, over runs */
    long long enq_ns;      /* host time in steps(), over runs */
    char kerr[4096];
};

static void release_mem(ocl_session *s, cl_mem *m)
{
    if (*m)
        s->gen++; /* its handle may come back for another buffer */
    ocl_obj_release(OCL_OBJ_BUFFER, *m);
    *m = NULL;
}

cl_int ocl_session_set_arg(ocl_session *s, const cl_kernel *kp, cl_uint index, size_t size,
                           const void *value)
{
    size_t ki = (size_t)(kp - s->k);
    kargs *c = s->args && s->argcache ? s->args[ki] : NULL;
    if (!c && s->args && s->argcache && (c = tg_calloc(1, sizeof *c)))
        s->args[ki] = c;
    int keep = c && index < KARG_MAX_ARGS && (value ? size <= KARG_MAX : size > 0);
    for (int32_t j = 0; keep && value && size == sizeof(cl_mem) && j < s->ncaller; j++)
        keep = memcmp(value, &s->caller[j], sizeof(cl_mem)) != 0;
    karg *a = NULL;
    if (c) {
        if (c->k != *kp || c->gen != s->gen) {
            for (uint16_t i = 0; i < c->n; i++)
                c->a[i].state = KARG_UNKNOWN;
            c->k = *kp;
            c->gen = s->gen;
        }
        a = index < c->n ? &c->a[index] : NULL;
        if (a && keep && a->size == size &&
            (value ? a->state == KARG_VALUE && !memcmp(c->bytes + a->off, value, size)
                   : a->state == KARG_LOCAL)) {
            s->nkept++;
            atomic_fetch_add(&args_kept, 1);
            return CL_SUCCESS;
        }
        if (a)
            a->state = KARG_UNKNOWN; /* whatever the call below leaves */
    }
    cl_int e = clSetKernelArg(*kp, index, size, value);
    s->nset++;
    atomic_fetch_add(&args_set, 1);
    if (e != CL_SUCCESS || !keep)
        return e;
    if (!a) { /* a new index: its entry (and the ones before it) */
        karg *na = tg_realloc(c->a, sizeof *na * (index + 1));
        if (!na)
            return e;
        for (cl_uint i = c->n; i <= index; i++)
            na[i] = (karg){0, 0, 0, KARG_UNKNOWN};
        c->a = na;
        c->n = (uint16_t)(index + 1);
        a = &c->a[index];
    }
    if (value && a->room < size) { /* room for its bytes at the end */
        if ((size_t)c->nbytes + size > UINT16_MAX)
            return e;
        unsigned char *nb = tg_realloc(c->bytes, (size_t)c->nbytes + size);
        if (!nb)
            return e;
        c->bytes = nb;
        a->off = c->nbytes;
        a->room = (uint8_t)size;
        c->nbytes = (uint16_t)(c->nbytes + size);
    }
    if (value)
        memcpy(c->bytes + a->off, value, size);
    a->size = (uint32_t)size;
    a->state = value ? KARG_VALUE : KARG_LOCAL;
    return e;
}

static tg_status cl_st(cl_int e)
{
    return e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
                   e == CL_OUT_OF_HOST_MEMORY || e == CL_INVALID_BUFFER_SIZE
               ? TG_ERR_NOMEM : TG_ERR_BACKEND;
}

/* A device buffer of bytes, or NULL with a message naming what for. */
static cl_mem new_buffer(ocl_session *s, size_t bytes, const char *what, char *err,
                         size_t errlen)
{
    cl_int e;
    cl_mem m = clCreateBuffer(s->op->dev->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
    if (!m) {
        snprintf(err, errlen, "replay: OpenCL device %s out of memory: cannot allocate %zu "
                 "bytes for %s (%s)", s->op->dev->info.name, bytes, what, ocl_errstr(e));
        return NULL;
    }
    ocl_obj_made(OCL_OBJ_BUFFER, m, s->op->dev->ctx);
    s->gen++;
    return m;
}

cl_mem ocl_session_scratch(ocl_session *s, int slot, size_t bytes, char *err, size_t errlen)
{
    if (s->scratch[slot] && s->scratch_size[slot] >= bytes)
        return s->scratch[slot];
    release_mem(s, &s->scratch[slot]);
    s->scratch[slot] = new_buffer(s, bytes, "scratch", err, errlen);
    s->scratch_size[slot] = s->scratch[slot] ? bytes : 0;
    return s->scratch[slot];
}

cl_mem ocl_session_counters(ocl_session *s, size_t n, char *err, size_t errlen)
{
    if (s->cnt && s->cnt_n >= n)
        return s->cnt;
    release_mem(s, &s->cnt);
    s->cnt_n = 0;
    if (!(s->cnt = new_buffer(s, n * sizeof(cl_int), "tile counters", err, errlen)))
        return NULL;
    cl_int zero = 0;
    cl_int e = clEnqueueFillBuffer(s->q, s->cnt, &zero, sizeof zero, 0, n * sizeof zero, 0, NULL,
                                   NULL);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "replay: zeroing the tile counters: %s", ocl_errstr(e));
        release_mem(s, &s->cnt);
        return NULL;
    }
    s->cnt_n = n;
    return s->cnt;
}

static void drop_bounds(ocl_session *s)
{
    for (obound *b = s->bounds, *next; b; b = next) {
        next = b->next;
        ocl_bound_free(b);
    }
    s->bounds = NULL;
}

/* The profile of TG_OPENCL_PROFILE, per op and the costliest nodes, to
 * stderr. */
static void print_profile(const ocl_session *s)
{
    const graph *g = s->p->g;
    double per_op[GRAPH_OP_COUNT] = {0}, total = 0;
    int count[GRAPH_OP_COUNT] = {0};
    for (int32_t i = 0; i < g->nnodes; i++) {
        double ms = (double)s->prof_ns[i] / 1e6 / (double)s->prof_runs;
        per_op[g->nodes[i].op] += ms;
        count[g->nodes[i].op] += s->prof_ns[i] > 0;
        total += ms;
    }
    fprintf(stderr, "opencl profile (%s, %ld runs): %.4f ms of device time per run\n",
            s->op->dev->info.name, s->prof_runs, total);
    /* what the host enqueued for the nodes (each costs host time: on a
     * GPU, per-launch overhead is a floor under small graphs) */
    double runs = (double)(s->enq_runs > 0 ? s->enq_runs : 1);
    fprintf(stderr, "  enqueued per run: %.4g kernels, %.4g CLBlast calls, %.4g copies/fills\n",
            (double)s->enq[OCL_ENQ_KERNEL] / runs, (double)s->enq[OCL_ENQ_BLAS] / runs,
            (double)s->enq[OCL_ENQ_COPY] / runs);
    fprintf(stderr, "  kernel arguments per run: %.4g set (clSetKernelArg), %.4g unchanged "
            "(skipped)\n", (double)s->nset / runs, (double)s->nkept / runs);
    fprintf(stderr, "  host time enqueueing: %.1f us per run\n", (double)s->enq_ns / 1e3 / runs);
    for (;;) { /* ops, costliest first */
        int best = -1;
        for (int o = 0; o < GRAPH_OP_COUNT; o++)
            if (per_op[o] > 0 && (best < 0 || per_op[o] > per_op[best]))
                best = o;
        if (best < 0)
            break;
        fprintf(stderr, "  %-18s %4d nodes %9.4f ms %5.1f%%\n", graph_ops[best].name,
                count[best], per_op[best], 100 * per_op[best] / (total > 0 ? total : 1));
        per_op[best] = 0;
    }
    cl_ulong *ns = tg_malloc(sizeof *ns * ((size_t)g->nnodes + 1));
    if (!ns)
        return;
    memcpy(ns, s->prof_ns, sizeof *ns * (size_t)g->nnodes);
    fprintf(stderr, "  costliest nodes:\n");
    for (int r = 0; r < 8; r++) {
        int32_t best = -1;
        for (int32_t i = 0; i < g->nnodes; i++)
            if (ns[i] > 0 && (best < 0 || ns[i] > ns[best]))
                best = i;
        if (best < 0)
            break;
        char what[400];
        const char *path = s->op->nodes[best].path;
        fprintf(stderr, "  %9.4f ms  %s%s%s%s\n", (double)ns[best] / 1e6 / (double)s->prof_runs,
                replay_node_str(s->p, best, what, sizeof what), path ? " [" : "",
                path ? path : "", path ? "]" : "");
        ns[best] = 0;
    }
    tg_free(ns);
}

void ocl_session_free(ocl_session *s)
{
    if (!s)
        return;
    if (s->prof && s->prof_runs > 0)
        print_profile(s);
    tg_free(s->ev);
    tg_free(s->prof_ns);
    /* Kernels first (their arguments name the buffers), then the
     * buffers, the queue last. */
    for (int32_t i = 0; s->k && i < s->op->nnodes * OCL_MAX_KERNELS; i++)
        ocl_obj_release(OCL_OBJ_KERNEL, s->k[i]);
    for (int32_t i = 0; s->args && i < s->op->nnodes * OCL_MAX_KERNELS; i++) {
        if (s->args[i]) {
            tg_free(s->args[i]->a);
            tg_free(s->args[i]->bytes);
            tg_free(s->args[i]);
        }
    }
    tg_free(s->args);
    tg_free(s->caller);
    drop_bounds(s);
    for (int32_t i = 0; s->in && i < s->nin; i++)
        release_mem(s, &s->in[i]);
    for (int32_t i = 0; s->host_out && i < s->nout; i++)
        tg_free(s->host_out[i]);
    tg_free(s->in);
    tg_free(s->in_size);
    tg_free(s->host_out);
    tg_free(s->host_out_size);
    tg_free(s->direct);
    for (int i = 0; i < OCL_MAX_SCRATCH; i++)
        release_mem(s, &s->scratch[i]);
    release_mem(s, &s->cnt);
    release_mem(s, &s->flag);
    for (int32_t j = 0; j < s->nslots; j++)
        release_mem(s, &s->slot[j]);
    tg_free(s->slot);
    tg_free(s->slot_size);
    ocl_obj_release(OCL_OBJ_QUEUE, s->q);
    tg_free(s->k);
    tg_free(s->host_tmp);
    tg_free(s);
}

ocl_session *ocl_session_new(replay_plan *p, char *err, size_t errlen)
{
    ocl_session *s = tg_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->op = p->bplan;
    cl_int e;
    const char *prof = getenv("TG_OPENCL_PROFILE");
    s->prof = prof && *prof && strcmp(prof, "0") != 0;
    s->q = clCreateCommandQueue(s->op->dev->ctx, s->op->dev->id,
                                s->prof ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
    if (!s->q) {
        snprintf(err, errlen, "replay: clCreateCommandQueue: %s", ocl_errstr(e));
        tg_free(s);
        return NULL;
    }
    ocl_obj_made(OCL_OBJ_QUEUE, s->q, s->op->dev->ctx);
    const char *sync = getenv("TG_OPENCL_SYNC");
    s->sync = sync && *sync && strcmp(sync, "0") != 0;
    s->k = tg_calloc((size_t)s->op->nnodes * OCL_MAX_KERNELS + 1, sizeof *s->k);
    s->args = tg_calloc((size_t)s->op->nnodes * OCL_MAX_KERNELS + 1, sizeof *s->args);
    const char *ac = getenv("TG_OPENCL_ARGCACHE");
    s->argcache = !ac || !*ac || (strcmp(ac, "0") != 0 && strcmp(ac, "off") != 0);
    s->param_gen = p->param_gen;
    s->nin = p->g->ninputs;
    s->nout = p->g->noutputs;
    s->in = tg_calloc((size_t)s->nin + 1, sizeof *s->in);
    s->in_size = tg_calloc((size_t)s->nin + 1, sizeof *s->in_size);
    s->host_out = tg_calloc((size_t)s->nout + 1, sizeof *s->host_out);
    s->host_out_size = tg_calloc((size_t)s->nout + 1, sizeof *s->host_out_size);
    s->direct = tg_calloc((size_t)s->nout + 1, sizeof *s->direct);
    if (s->prof) {
        s->ev = tg_calloc((size_t)p->nitems + 1, sizeof *s->ev);
        s->prof_ns = tg_calloc((size_t)s->op->nnodes + 1, sizeof *s->prof_ns);
    }
    s->caller = tg_calloc((size_t)s->nin + (size_t)s->nout + 1, sizeof *s->caller);
    if (!s->k || !s->args || !s->caller || !s->in || !s->in_size || !s->host_out ||
        !s->host_out_size || !s->direct ||
        (s->prof && (!s->ev || !s->prof_ns))) {
        snprintf(err, errlen, "replay: out of memory");
        goto fail;
    }
    for (int32_t i = 0; i < s->op->nnodes; i++)
        s->flags |= s->op->nodes[i].flag_msg != NULL;
    s->flag = new_buffer(s, sizeof(cl_int), "the error flag", err, errlen);
    if (!s->flag)
        goto fail;
    for (int32_t i = 0; i < s->op->nnodes; i++) {
        const ocl_node *n = &s->op->nodes[i];
        for (int j = 0; j < n->nkernels; j++) {
            cl_kernel k = clCreateKernel(n->prog, n->kernel[j], &e);
            if (!k) {
                snprintf(err, errlen, "replay: clCreateKernel(%s): %s", n->kernel[j],
                         ocl_errstr(e));
                goto fail;
            }
            ocl_obj_made(OCL_OBJ_KERNEL, k, n->prog);
            s->k[(size_t)i * OCL_MAX_KERNELS + (size_t)j] = k;
        }
    }
    return s;
fail:
    ocl_session_free(s);
    return NULL;
}

/* Grows the session's pool to hold bound b's slots (dropping the other
 * bounds when a buffer they use is replaced), then points b's values at
 * them.  Returns 0, or -1 with err. */
static int fill_slots(ocl_session *s, obound *b, char *err, size_t errlen)
{
    /* Refused before allocating: drivers may allocate lazily and fail (or
     * swap) only when a kernel touches the memory. */
    const ocl_dev *d = s->op->dev;
    size_t total = 0, big = 0;
    for (int32_t j = 0; j < b->nslots; j++) {
        total += b->need[j];
        big = b->need[j] > big ? b->need[j] : big;
    }
    if ((d->max_alloc && big > d->max_alloc) || (d->info.global_mem && total > d->info.global_mem)) {
        snprintf(err, errlen, "replay: OpenCL device %s out of memory: the intermediate values "
                 "need %zu bytes (the largest buffer %zu), the device has %zu (at most %zu in "
                 "one buffer)", d->info.name, total, big, d->info.global_mem, d->max_alloc);
        return -1;
    }
    if (b->nslots > s->nslots) {
        cl_mem *m = tg_realloc(s->slot, sizeof *m * (size_t)b->nslots);
        size_t *z = m ? tg_realloc(s->slot_size, sizeof *z * (size_t)b->nslots) : NULL;
        if (m)
            s->slot = m;
        if (z)
            s->slot_size = z;
        if (!m || !z) {
            snprintf(err, errlen, "replay: out of memory binding the plan");
            return -1;
        }
        for (int32_t j = s->nslots; j < b->nslots; j++)
            s->slot[j] = NULL, s->slot_size[j] = 0;
        s->nslots = b->nslots;
    }
    for (int32_t j = 0; j < b->nslots; j++) {
        if (s->slot[j] && s->slot_size[j] >= b->need[j])
            continue;
        drop_bounds(s); /* they point at the buffer being replaced */
        release_mem(s, &s->slot[j]);
        s->slot_size[j] = 0;
        if (!(s->slot[j] = new_buffer(s, b->need[j], "intermediate values", err, errlen)))
            return -1;
        s->slot_size[j] = b->need[j];
    }
    const graph *g = s->p->g;
    for (int32_t i = 0; i < g->nvalues; i++) {
        int32_t k = b->vbuf[i];
        b->mem[i] = k >= 0 && b->slot_of[k] >= 0 ? s->slot[b->slot_of[k]] : NULL;
    }
    return 0;
}

/* The bound state for these inputs; NULL with *st and err on failure. */
static obound *bound_for(ocl_session *s, const replay_tensor *const *in, tg_status *st,
                         char *err, size_t errlen)
{
    replay_variant *v = replay_variant_get(s->p, in, st, err, errlen);
    if (!v)
        return NULL;
    *st = TG_ERR_NOMEM; /* what the failures below are, unless a CL error says otherwise */
    for (obound *b = s->bounds; b; b = b->next)
        if (b->v == v)
            return b;
    obound *b = ocl_bind(s->p, s->op, v, err, errlen);
    if (b && fill_slots(s, b, err, errlen) != 0) {
        ocl_bound_free(b);
        b = NULL;
    }
    if (b) {
        b->next = s->bounds;
        s->bounds = b;
    }
    return b;
}

static cl_mem mem_of(const ocl_session *s, const obound *b, int32_t id)
{
    graph_value_kind k = s->p->g->values[id].kind;
    return k == GRAPH_VALUE_CONST || k == GRAPH_VALUE_PARAM ? s->op->fixed[id] : b->mem[id];
}

static size_t type_bytes(const graph_type *t)
{
    return (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
}

/* Host inputs are written (not waited for: the run waits once at the
 * end, and the caller's data outlives the run); cl_mem inputs are used
 * as they are. */
static tg_status put_inputs(ocl_session *s, obound *b, const replay_tensor *const *in, int nin,
                            char *err, size_t errlen)
{
    const graph *g = s->p->g;
    s->ncaller = 0;
    for (int i = 0; i < nin; i++) {
        int32_t id = g->inputs[i];
        size_t bytes = type_bytes(&in[i]->type);
        if (in[i]->buffer) {
            b->mem[id] = (cl_mem)in[i]->buffer;
            s->caller[s->ncaller++] = b->mem[id];
            continue;
        }
        b->mem[id] = NULL;
        if (!bytes)
            continue;
        if (!s->in[i] || s->in_size[i] < bytes) {
            release_mem(s, &s->in[i]);
            s->in_size[i] = 0;
            if (!(s->in[i] = new_buffer(s, bytes, "an input", err, errlen)))
                return TG_ERR_NOMEM;
            s->in_size[i] = bytes;
        }
        cl_int e = clEnqueueWriteBuffer(s->q, s->in[i], CL_FALSE, 0, bytes, in[i]->input, 0,
                                        NULL, NULL);
        if (e != CL_SUCCESS) {
            snprintf(err, errlen, "replay: writing input %d: %s", i, ocl_errstr(e));
            return cl_st(e);
        }
        b->mem[id] = s->in[i];
    }
    return TG_OK;
}

/* A guard: its value read back (waiting for the steps before it). */
static tg_status guard_step(ocl_session *s, obound *b, int32_t gi, replay_guard_warns *warnings,
                            char *err, size_t errlen)
{
    const graph *g = s->p->g;
    const graph_guard *gd = &g->guards[gi];
    const graph_type *t = &b->v->types[gd->value];
    size_t bytes = gd->kind == GRAPH_GUARD_SIZE ? 0 : type_bytes(t); /* the type alone */
    if (bytes > s->host_tmp_size) {
        void *h = tg_realloc(s->host_tmp, bytes);
        if (!h) {
            snprintf(err, errlen, "replay: out of memory");
            return TG_ERR_NOMEM;
        }
        s->host_tmp = h;
        s->host_tmp_size = bytes;
    }
    cl_mem m = mem_of(s, b, gd->value);
    if (bytes) {
        cl_int e = clEnqueueReadBuffer(s->q, m, CL_TRUE, 0, bytes, s->host_tmp, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            snprintf(err, errlen, "replay: reading a guarded value: %s", ocl_errstr(e));
            return cl_st(e);
        }
    }
    int r = graph_guard_check(g, gd, t, s->host_tmp, s->kerr, sizeof s->kerr);
    if (r == 1)
        replay_guard_warned(warnings, gi, s->kerr);
    if (r == 2) {
        snprintf(err, errlen, "replay: %s", s->kerr);
        return TG_ERR_GUARD;
    }
    return TG_OK;
}

static tg_status node_step(ocl_session *s, obound *b, int32_t item, char *err, size_t errlen)
{
    const graph *g = s->p->g;
    int32_t ni = s->p->items[item].node;
    const graph_node *n = &g->nodes[ni];
    const ocl_node *on = &s->op->nodes[ni];
    if (on->absorbed) /* another node's kernel runs it */
        return TG_OK;
    graph_type it[GRAPH_MAX_NODE_IO], ot[GRAPH_MAX_NODE_IO], xt[OCL_MAX_XIN], yt[OCL_MAX_XOUT];
    cl_mem im[GRAPH_MAX_NODE_IO], om[GRAPH_MAX_NODE_IO], xm[OCL_MAX_XIN], ym[OCL_MAX_XOUT];
    for (int k = 0; k < on->nxin; k++) {
        xt[k] = b->v->types[on->xin[k]];
        xm[k] = mem_of(s, b, on->xin[k]);
    }
    for (int k = 0; k < on->nxout; k++) {
        yt[k] = b->v->types[on->xout[k]];
        ym[k] = b->mem[on->xout[k]];
    }
    for (int k = 0; k < n->nin; k++) {
        it[k] = b->v->types[n->in[k]];
        im[k] = mem_of(s, b, n->in[k]);
    }
    for (int k = 0; k < n->nout; k++) {
        ot[k] = b->v->types[n->out[k]];
        om[k] = b->mem[n->out[k]];
    }
    s->kerr[0] = '\0';
    ocl_launch l = {s, s->q, s->op->dev->id, tg_node_attrs(n), it, im, n->nin, ot, om,
                    n->nout, &s->k[(size_t)ni * OCL_MAX_KERNELS], on->data, s->flag,
                    item + 1, s->kerr, sizeof s->kerr, xm, xt, on->nxin, ym, yt,
                    on->nxout};
    tg_status st = on->op->enqueue(&l);
    for (int k = 0; k < 3; k++)
        s->enq[k] += l.enq[k];
    if (st == TG_OK && s->sync) {
        cl_int e = clFinish(s->q);
        if (e != CL_SUCCESS) {
            snprintf(s->kerr, sizeof s->kerr, "the kernel failed (TG_OPENCL_SYNC): %s",
                     ocl_errstr(e));
            st = cl_st(e);
        }
    }
    if (st != TG_OK) {
        char what[400];
        snprintf(err, errlen, "replay: %s: OpenCL: %s", replay_node_str(s->p, ni, what,
                 sizeof what), s->kerr[0] ? s->kerr : tg_status_str(st));
    }
    return st;
}

/* Output o's (the k-th given) index in the signature, -1 if none. */
static int output_index_of(const graph *g, const replay_tensor *o, int k)
{
    for (int j = 0; o->name && j < g->noutputs; j++)
        if (strcmp(g->outputs[j].name, o->name) == 0)
            return j;
    return !o->name && k < g->noutputs ? k : -1;
}

/* The buffer m is a sub-buffer, or cannot be asked: it may overlap
 * another. */
static int maybe_overlaps(cl_mem m)
{
    cl_mem parent = NULL;
    return clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) !=
               CL_SUCCESS ||
           parent != NULL;
}

/*
 * Outputs given a cl_mem (replay_tensor.buffer) are written there by the
 * nodes that make them, instead of into the pool and copied at the end (a
 * copy is one more enqueue per output, microseconds of host time on
 * NVIDIA's OpenCL): the value's memory is the caller's buffer for this run
 * (s->direct keeps its own; restore_outputs puts it back).  Every node
 * reads and writes a value through its own b->mem entry, so the values
 * sharing its pool buffer at other steps keep theirs, a node planned in
 * place over an input now writes elsewhere, and a view sharing the buffer
 * copies (a view copies when its input and output differ).  Only where
 * nothing else can see the difference: the value is made by a node, of the
 * caller's type, asked for once, and the caller's buffer is no input's (a
 * later node may read the input) or other output's, and neither it nor any
 * cl_mem input is a sub-buffer (which could overlap).  Others are copied
 * as before (get_outputs).
 */
static void direct_outputs(ocl_session *s, obound *b, const replay_tensor *const *in, int nin,
                           const replay_tensor *outputs, int nout)
{
    const graph *g = s->p->g;
    int sub_in = -1; /* lazily: is any cl_mem input a sub-buffer */
    for (int k = 0; k < nout; k++) {
        const replay_tensor *o = &outputs[k];
        int i = o->buffer ? output_index_of(g, o, k) : -1;
        for (int j = 0; i >= 0 && j < nout; j++) /* the output asked for twice */
            if (j != k && output_index_of(g, &outputs[j], j) == i)
                i = -1;
        if (i < 0)
            continue;
        int32_t id = g->outputs[i].value;
        const graph_type *t = &b->v->types[id];
        int ok = g->values[id].node >= 0 && b->mem[id] && type_bytes(t) > 0 &&
                 (!o->size || o->size >= type_bytes(t)) && /* else get_outputs refuses it */
                 o->type.dtype == t->dtype && o->type.ndim == t->ndim;
        for (int d = 0; ok && d < t->ndim; d++)
            ok = o->type.dim[d] == t->dim[d];
        for (int j = 0; ok && j < g->noutputs; j++) /* the value given twice */
            ok = j == i || g->outputs[j].value != id;
        for (int j = 0; ok && j < nout; j++)
            ok = j == k || outputs[j].buffer != o->buffer;
        for (int j = 0; ok && j < nin; j++)
            ok = in[j]->buffer != o->buffer;
        if (ok && sub_in < 0) {
            sub_in = 0;
            for (int j = 0; j < nin; j++)
                sub_in |= in[j]->buffer && maybe_overlaps((cl_mem)in[j]->buffer);
        }
        if (!ok || sub_in || maybe_overlaps((cl_mem)o->buffer))
            continue;
        s->direct[i] = b->mem[id];
        b->mem[id] = (cl_mem)o->buffer;
        s->caller[s->ncaller++] = b->mem[id]; /* set every run, as a cl_mem input */
    }
}

static void restore_outputs(ocl_session *s, obound *b)
{
    const graph *g = s->p->g;
    for (int i = 0; i < g->noutputs; i++)
        if (s->direct[i]) {
            b->mem[g->outputs[i].value] = s->direct[i];
            s->direct[i] = NULL;
        }
}

static tg_status get_outputs(ocl_session *s, obound *b, replay_tensor *outputs, int nout,
                             char *err, size_t errlen)
{
    const graph *g = s->p->g;
    for (int k = 0; k < nout; k++) {
        int i = replay_output_lookup(s->p, &outputs[k], k, err, errlen);
        if (i < 0)
            return TG_ERR_ARG;
        int32_t id = g->outputs[i].value;
        const graph_type *t = &b->v->types[id];
        size_t bytes = type_bytes(t);
        cl_mem src = mem_of(s, b, id);
        replay_tensor *o = &outputs[k];
        if (!o->data && !o->buffer) {
            if (bytes > s->host_out_size[i]) {
                tg_free(s->host_out[i]);
                s->host_out_size[i] = 0;
                if (!(s->host_out[i] = tg_malloc(bytes))) {
                    snprintf(err, errlen, "replay: out of memory");
                    return TG_ERR_NOMEM;
                }
                s->host_out_size[i] = bytes;
            }
            o->type = *t;
            o->data = s->host_out[i];
        } else {
            tg_status st = replay_output_accept(s->p, i, t, o, err, errlen);
            if (st != TG_OK)
                return st;
        }
        if (!bytes || (o->buffer && s->direct[i]))
            continue; /* direct_outputs: written there */
        cl_int e = o->buffer ? clEnqueueCopyBuffer(s->q, src, (cl_mem)o->buffer, 0, 0, bytes, 0,
                                                   NULL, NULL)
                             : clEnqueueReadBuffer(s->q, src, CL_FALSE, 0, bytes, o->data, 0,
                                                   NULL, NULL);
        if (e != CL_SUCCESS) {
            snprintf(err, errlen, "replay: output \"%s\": %s", g->outputs[i].name,
                     ocl_errstr(e));
            return cl_st(e);
        }
    }
    return TG_OK;
}

static tg_status steps(ocl_session *s, obound *b, replay_guard_warns *warnings, char *err,
                       size_t errlen)
{
    const replay_plan *p = s->p;
    if (s->prof)
        clEnqueueMarkerWithWaitList(s->q, 0, NULL, &s->ev[0]);
    for (int32_t k = 0; k < p->nitems; k++) {
        tg_status st = p->items[k].node < 0
                           ? guard_step(s, b, p->items[k].guard, warnings, err, errlen)
                           : node_step(s, b, k, err, errlen);
        if (st != TG_OK)
            return st;
        if (s->prof)
            clEnqueueMarkerWithWaitList(s->q, 0, NULL, &s->ev[k + 1]);
    }
    return TG_OK;
}

/* After the wait: each node's time between its markers, then the markers
 * released. */
static void collect_profile(ocl_session *s, int complete)
{
    const replay_plan *p = s->p;
    cl_ulong prev = 0;
    for (int32_t k = 0; k <= p->nitems; k++) {
        cl_ulong end = 0;
        if (s->ev[k] && clGetEventProfilingInfo(s->ev[k], CL_PROFILING_COMMAND_END, sizeof end,
                                                &end, NULL) == CL_SUCCESS) {
            if (complete && k > 0 && prev && end >= prev && p->items[k - 1].node >= 0)
                s->prof_ns[p->items[k - 1].node] += end - prev;
            prev = end;
        }
        if (s->ev[k])
            clReleaseEvent(s->ev[k]);
        s->ev[k] = NULL;
    }
    s->prof_runs += complete;
}

tg_status ocl_session_run(ocl_session *s, const replay_tensor *const *in, int nin,
                          replay_tensor *outputs, int nout, replay_guard_warns *warnings,
                          char *err, size_t errlen)
{
    tg_status st;
    if (s->param_gen != s->p->param_gen) { /* the params' buffers were replaced */
        s->param_gen = s->p->param_gen;
        s->gen++;
    }
    obound *b = bound_for(s, in, &st, err, errlen);
    if (!b)
        return st;
    cl_int zero = 0, flag = 0;
    st = put_inputs(s, b, in, nin, err, errlen);
    cl_int e = CL_SUCCESS;
    if (st == TG_OK && s->flags) {
        e = clEnqueueFillBuffer(s->q, s->flag, &zero, sizeof zero, 0, sizeof zero, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            snprintf(err, errlen, "replay: clEnqueueFillBuffer: %s", ocl_errstr(e));
            st = cl_st(e);
        }
    }
    if (st == TG_OK)
        direct_outputs(s, b, in, nin, outputs, nout);
    if (st == TG_OK) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = steps(s, b, warnings, err, errlen);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
                       (t1.tv_nsec - t0.tv_nsec);
        s->enq_ns += ns;
        atomic_fetch_add(&enqueue_ns, ns);
    }
    s->enq_runs++;
    if (st == TG_OK)
        st = get_outputs(s, b, outputs, nout, err, errlen);
    restore_outputs(s, b);
    if (st == TG_OK && s->flags) {
        e = clEnqueueReadBuffer(s->q, s->flag, CL_FALSE, 0, sizeof flag, &flag, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            snprintf(err, errlen, "replay: reading the error flag: %s", ocl_errstr(e));
            st = cl_st(e);
        }
    }
    /* Always wait: enqueued writes still read the caller's input data. */
    e = clFinish(s->q);
    if (e != CL_SUCCESS) /* a kernel may have stopped with tile counters not back at zero */
        s->cnt_n = 0;     /* (ocl_counters): made again, zeroed, at the next use */
    if (s->prof)
        collect_profile(s, st == TG_OK && e == CL_SUCCESS);
    if (st == TG_OK && e != CL_SUCCESS) {
        snprintf(err, errlen, "replay: OpenCL: clFinish: %s%s", ocl_errstr(e),
                 cl_st(e) == TG_ERR_NOMEM ? " (device out of memory)" : "");
        st = cl_st(e);
    }
    if (st == TG_OK && flag > 0 && flag <= s->p->nitems) {
        int32_t ni = s->p->items[flag - 1].node;
        char what[400];
        snprintf(err, errlen, "replay: %s: %s", replay_node_str(s->p, ni, what, sizeof what),
                 s->op->nodes[ni].flag_msg ? s->op->nodes[ni].flag_msg : "bad data");
        st = TG_ERR_ARG;
    }
    return st;
}
