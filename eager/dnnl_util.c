/*
 * dnnl_util.c - oneDNN engine, per-thread streams, thread count, error
 * text, prepared primitives and epilogue post-ops for the matmul, linear,
 * conv2d and _ep kernels.  See dnnl_util.h.
 *
 * Lifetimes.  The engine lives until exit (it is shared by every thread
 * and by oneDNN's primitive cache).  Each thread's stream is destroyed by
 * a pthread key destructor when that thread exits; the main thread's stays
 * reachable until exit, as the engine does.
 */
#include "../graph/alloc.h"
#include "dnnl_util.h"
#include "eager.h"
#include "isa.h"
#include "../graph/graph_impl.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_key_t g_stream_key;
static int g_have_key;

/* The stream of this thread; the key holds it too, for the destructor. */
static _Thread_local dnnl_stream_t tl_stream;

/* Set by eager_dnnl_impl_of: prims are named there, not run. */
typedef struct impl_probe {
    char *impl;
    size_t len;
    int done;
} impl_probe;
static _Thread_local impl_probe *tl_probe;

const char *eager_dnnl_isa_name(void)
{
    static char unknown[16];
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    switch (isa) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
#if DNNL_VERSION_MAJOR < 3
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
#endif
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default:
        snprintf(unknown, sizeof unknown, "0x%x", (unsigned)isa);
        return unknown;
    }
}

const char *eager_onednn_isa(void) { return eager_dnnl_isa_name(); }

const char *eager_dnnl_status_str(dnnl_status_t s)
{
    switch (s) {
    case dnnl_success:
        return "success";
    case dnnl_out_of_memory:
        return "out of memory";
    case dnnl_invalid_arguments:
        return "invalid arguments (oneDNN rejected the shapes or layouts)";
    case dnnl_unimplemented:
        return "unimplemented (no oneDNN implementation for this case)";
    case dnnl_iterator_ends:
        return "no more implementations";
    case dnnl_runtime_error:
        return "runtime error inside oneDNN";
    case dnnl_not_required:
        return "queried object not required";
    }
    return "unknown oneDNN status";
}

static void stream_destroy(void *p)
{
    dnnl_stream_destroy((dnnl_stream_t)p);
}

static void engine_init(void)
{
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    if (g_engine_status != dnnl_success)
        g_engine = NULL;
    g_have_key = pthread_key_create(&g_stream_key, stream_destroy) == 0;
}

dnnl_status_t eager_dnnl_engine(dnnl_engine_t *engine)
{
    pthread_once(&g_once, engine_init);
    *engine = g_engine;
    return g_engine_status;
}

dnnl_status_t eager_dnnl_stream(dnnl_stream_t *stream)
{
    if (tl_stream) {
        *stream = tl_stream;
        return dnnl_success;
    }
    dnnl_engine_t eng;
    dnnl_status_t s = eager_dnnl_engine(&eng);
    if (s != dnnl_success)
        return s;
    s = dnnl_stream_create(&tl_stream, eng, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        tl_stream = NULL;
        return s;
    }
    if (g_have_key)
        pthread_setspecific(g_stream_key, tl_stream);
    *stream = tl_stream;
    return dnnl_success;
}

int eager_dnnl_set_threads(int n)
{
    int old = omp_get_max_threads();
    if (n < 1)
        n = 1;
    if (n != old)
        omp_set_num_threads(n);
    return old;
}

/* oneDNN's out of memory is ours; any other failure is the backend's. */
#define DNNL_ST(s) ((s) == dnnl_out_of_memory ? TG_ERR_NOMEM : TG_ERR_BACKEND)

tg_status eager_dnnl_fail(const eager_kargs *a, const char *what,
                          dnnl_status_t s)
{
    return eager_kernel_fail(a, DNNL_ST(s), "oneDNN %s failed: %s", what,
                             eager_dnnl_status_str(s));
}

/* ---- prepared primitives ---- */

struct eager_dnnl_prim {
    eager_kstate base; /* first: the state's owner frees it through this */
    const char *what;
    int nthreads; /* the primitive was made for this many */
    dnnl_primitive_t prim;
    int nargs;
    int arg[EAGER_DNNL_MAX_ARGS];
    dnnl_memory_t mem[EAGER_DNNL_MAX_ARGS];
    const void *ptr[EAGER_DNNL_MAX_ARGS]; /* buffer attached to mem[i] */
    int packed;               /* argument kept reordered, or -1 */
    dnnl_memory_t user;       /* the caller's layout of that argument */
    dnnl_primitive_t reorder; /* user -> mem[packed] */
    const void *packed_from;  /* caller buffer mem[packed] holds, or NULL */
    void *packed_buf;         /* mem[packed]'s buffer (packed_alloc) */
    /* A kept state (a->state): prim and reorder own their scratchpads
     * (user_scratchpad), or NULL when they need none. */
    int own_scratch;
    dnnl_memory_t scratch, rscratch;
    void *scratch_buf, *rscratch_buf;
    int post_in_c;            /* run post in C after the primitive */
    /* The reference implementation this prim stands in for (its tensors
     * converted to a layout with a JIT kernel: eager_dnnl_prim_replaces),
     * or "": what a probe reports, so a layout decision still sees it. */
    char replaces[64];
    graph_ints post;
    graph_post_prm prm;
    int dst, res;             /* argument indices of dst and residual (-1) */
    int64_t dst_numel;
    /* Arguments converted at every run (eager_dnnl_spec.convert): mem[i]
     * sits in buf in the primitive's layout, user is the caller's layout,
     * reorder goes user -> mem[i] (an input) or back (out); NULL reorder:
     * not converted. */
    struct dnnl_cvt {
        dnnl_memory_t user, rscratch;
        dnnl_primitive_t reorder;
        void *buf, *rscratch_buf;
        int out;
    } cvt[EAGER_DNNL_MAX_ARGS];
};

void eager_dnnl_prim_free(eager_dnnl_prim *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nargs; i++)
        if (p->mem[i])
            dnnl_memory_destroy(p->mem[i]);
    if (p->user)
        dnnl_memory_destroy(p->user);
    if (p->reorder)
        dnnl_primitive_destroy(p->reorder);
    if (p->prim)
        dnnl_primitive_destroy(p->prim);
    if (p->scratch)
        dnnl_memory_destroy(p->scratch);
    if (p->rscratch)
        dnnl_memory_destroy(p->rscratch);
    tg_free(p->scratch_buf);
    tg_free(p->rscratch_buf);
    for (int i = 0; i < EAGER_DNNL_MAX_ARGS; i++) {
        struct dnnl_cvt *c = &p->cvt[i];
        if (c->user)
            dnnl_memory_destroy(c->user);
        if (c->rscratch)
            dnnl_memory_destroy(c->rscratch);
        if (c->reorder)
            dnnl_primitive_destroy(c->reorder);
        tg_free(c->buf);
        tg_free(c->rscratch_buf);
    }
    tg_free(p->packed_buf);
    tg_free(p);
}

static void prim_state_free(eager_kstate *s)
{
    eager_dnnl_prim_free((eager_dnnl_prim *)s);
}

/*
 * A buffer for packed weights.  Big ones are 2 MB aligned and asked to be
 * backed by transparent huge pages (madvise: "always" is not the common
 * default): a GEMM streaming megabytes of weights that other work has
 * pushed out of the caches otherwise also takes a TLB miss every 4 KB,
 * each a page walk that itself misses.  Measured on the MLP (2.6 MB of
 * weights), five plans run in turn as the benchmark suite does: median
 * 0.98-1.15 -> 0.93-0.96 ms, best 0.88 -> 0.83 ms (one plan alone:
 * 0.74 ms either way).  Below PACKED_HUGE_MIN the rounding up to 2 MB
 * would cost more memory than it is worth.
 */
#define PACKED_HUGE (2u << 20)
#define PACKED_HUGE_MIN (512u << 10)

static void *packed_alloc(size_t n)
{
    void *p;
    if (n >= PACKED_HUGE_MIN) {
        size_t len = (n + PACKED_HUGE - 1) / PACKED_HUGE * PACKED_HUGE;
        if (!(p = tg_aligned_alloc(PACKED_HUGE, len)))
            return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, len, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
        return p;
    }
    return tg_aligned_alloc(64, n ? n : 64);
}

/*
 * attr (NULL: the defaults) with the scratchpad left to the user.  In its
 * default (library) mode oneDNN hands a primitive the scratchpad of the
 * thread that created it, a thread_local freed when that thread exits: a
 * replay session created and run on one thread, then run on another after
 * the first exited, crashed inside oneDNN (issue 29).  A prim kept in a
 * kernel state (a replay session's, which may move between threads) owns
 * its scratchpad instead (make_scratchpad), passed at every execute; an
 * eager call's prim, made and run at once on one thread, keeps the
 * library's (own 0: attr is cloned only to stay owned by the caller).
 */
static dnnl_status_t user_scratchpad(dnnl_primitive_attr_t *out, const_dnnl_primitive_attr_t attr,
                                     int own)
{
    dnnl_status_t s = attr ? dnnl_primitive_attr_clone(out, attr) : dnnl_primitive_attr_create(out);
    if (s == dnnl_success && !own)
        return s;
    if (s != dnnl_success) {
        *out = NULL;
        return s;
    }
    if ((s = dnnl_primitive_attr_set_scratchpad_mode(*out, dnnl_scratchpad_mode_user)) !=
        dnnl_success) {
        dnnl_primitive_attr_destroy(*out);
        *out = NULL;
    }
    return s;
}

/* The scratchpad pd asks for (none if it asks for 0 bytes) in *mem, its
 * buffer in *buf. */
static dnnl_status_t make_scratchpad(const_dnnl_primitive_desc_t pd, dnnl_engine_t eng,
                                     dnnl_memory_t *mem, void **buf)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t n = md ? dnnl_memory_desc_get_size(md) : 0;
    if (n == 0)
        return dnnl_success;
    if (!(*buf = tg_aligned_alloc(64, (n + 63) & ~(size_t)63)))
        return dnnl_out_of_memory;
    return dnnl_memory_create(mem, md, eng, *buf);
}

/*
 * Argument i in the layout the primitive chose (want), which differs from
 * the caller's (md): an owned buffer plus the reorder that fills it.
 */
static dnnl_status_t make_packed(eager_dnnl_prim *p, int i, const dnnl_memory_desc_t *md,
                                 const dnnl_memory_desc_t *want, dnnl_engine_t eng)
{
    dnnl_primitive_desc_t rpd;
    p->packed_buf = packed_alloc(dnnl_memory_desc_get_size(want));
    if (!p->packed_buf)
        return dnnl_out_of_memory;
    dnnl_status_t s = dnnl_memory_create(&p->mem[i], want, eng, p->packed_buf);
    if (s == dnnl_success)
        s = dnnl_memory_create(&p->user, md, eng, DNNL_MEMORY_NONE);
    dnnl_primitive_attr_t attr = NULL;
    if (s == dnnl_success)
        s = user_scratchpad(&attr, NULL, p->own_scratch);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(&rpd, md, eng, want, eng, attr);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) {
        s = dnnl_primitive_create(&p->reorder, rpd);
        if (s == dnnl_success && p->own_scratch)
            s = make_scratchpad(rpd, eng, &p->rscratch, &p->rscratch_buf);
        dnnl_primitive_desc_destroy(rpd);
    }
    if (s == dnnl_success)
        p->packed = i;
    return s;
}

/* Nonzero for an argument the primitive writes. */
static int out_arg(int arg)
{
    return arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC || arg == DNNL_ARG_DIFF_WEIGHTS ||
           arg == DNNL_ARG_DIFF_BIAS;
}

/*
 * Argument i converted at every run (eager_dnnl_spec.convert): mem[i] in
 * the primitive's layout want, in a buffer of its own, and the reorder
 * between it and the caller's layout md.
 */
static dnnl_status_t make_converted(eager_dnnl_prim *p, int i, const dnnl_memory_desc_t *md,
                                    const dnnl_memory_desc_t *want, dnnl_engine_t eng)
{
    struct dnnl_cvt *c = &p->cvt[i];
    dnnl_primitive_desc_t rpd;
    size_t n = dnnl_memory_desc_get_size(want);
    c->out = out_arg(p->arg[i]);
    if (!(c->buf = tg_aligned_alloc(64, (n + 63) & ~(size_t)63)))
        return dnnl_out_of_memory;
    dnnl_status_t s = dnnl_memory_create(&p->mem[i], want, eng, c->buf);
    if (s == dnnl_success)
        s = dnnl_memory_create(&c->user, md, eng, DNNL_MEMORY_NONE);
    dnnl_primitive_attr_t attr = NULL;
    if (s == dnnl_success)
        s = user_scratchpad(&attr, NULL, p->own_scratch);
    if (s == dnnl_success)
        s = c->out ? dnnl_reorder_primitive_desc_create(&rpd, want, eng, md, eng, attr)
                   : dnnl_reorder_primitive_desc_create(&rpd, md, eng, want, eng, attr);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) {
        s = dnnl_primitive_create(&c->reorder, rpd);
        if (s != dnnl_success)
            c->reorder = NULL;
        if (s == dnnl_success && p->own_scratch)
            s = make_scratchpad(rpd, eng, &c->rscratch, &c->rscratch_buf);
        dnnl_primitive_desc_destroy(rpd);
    }
    return s;
}

/* Nonzero for the argument of a post-op (the residual). */
static int post_arg(int arg)
{
    return arg >= DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE;
}

static dnnl_status_t make_memories(eager_dnnl_prim *p, const eager_dnnl_spec *sp,
                                   const_dnnl_primitive_desc_t pd, dnnl_engine_t eng)
{
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < sp->nargs && s == dnnl_success; i++) {
        p->arg[i] = sp->arg[i];
        if (sp->arg[i] == DNNL_ARG_DST) {
            p->dst = i;
            p->dst_numel = (int64_t)(dnnl_memory_desc_get_size(&sp->md[i]) / sizeof(float));
        }
        if (post_arg(sp->arg[i])) {
            p->res = i;
            if (p->post_in_c)
                continue; /* read by the C epilogue, not by oneDNN */
        }
        if (sp->convert & (1u << i)) {
            const dnnl_memory_desc_t *want =
                dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, sp->arg[i]);
            if (!want)
                return dnnl_runtime_error;
            if (!dnnl_memory_desc_equal(want, &sp->md[i])) {
                s = make_converted(p, i, &sp->md[i], want, eng);
                continue;
            }
        }
        if (i == sp->packed) {
            const dnnl_memory_desc_t *want =
                dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, sp->arg[i]);
            if (!want)
                return dnnl_runtime_error;
            if (!dnnl_memory_desc_equal(want, &sp->md[i])) {
                s = make_packed(p, i, &sp->md[i], want, eng);
                continue;
            }
        }
        s = dnnl_memory_create(&p->mem[i], &sp->md[i], eng, DNNL_MEMORY_NONE);
    }
    return s;
}

/*
 * The primitive descriptor of sp's operation with attr: the first
 * implementation whose name contains sp->prefer when there is one,
 * oneDNN's first choice otherwise.
 */
static dnnl_status_t pd_create(dnnl_primitive_desc_t *pd, const eager_dnnl_spec *sp,
                               const_dnnl_primitive_attr_t user_attr, int own_scratch,
                               dnnl_engine_t eng)
{
    dnnl_primitive_attr_t attr;
    dnnl_status_t s = user_scratchpad(&attr, user_attr, own_scratch);
    if (s != dnnl_success)
        return s;
    if (!sp->prefer) {
        s = dnnl_primitive_desc_create(pd, sp->desc, attr, eng, sp->hint);
        dnnl_primitive_attr_destroy(attr);
        return s;
    }
    dnnl_primitive_desc_iterator_t it;
    s = dnnl_primitive_desc_iterator_create(&it, sp->desc, attr, eng, sp->hint);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return s;
    *pd = NULL;
    do {
        dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl = NULL;
        if (!cand)
            break;
        if (dnnl_primitive_desc_query(cand, dnnl_query_impl_info_str, 0, &impl) ==
                dnnl_success && impl && strstr(impl, sp->prefer)) {
            if (*pd)
                dnnl_primitive_desc_destroy(*pd);
            *pd = cand;
            break;
        }
        if (*pd)
            dnnl_primitive_desc_destroy(cand); /* keep the first as fallback */
        else
            *pd = cand;
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    return *pd ? dnnl_success : dnnl_unimplemented;
}

/* Nonzero if post has a step oneDNN computes differently from our kernels:
 * its clip sends NaN to the lower bound, its relu (a max with 0) sends NaN
 * to 0, where clip and relu pass NaN (kernels_unary.c); oneDNN 2.6 has no
 * hardsigmoid (nor bounds that clip could take it from).  Such an epilogue
 * runs in C after the primitive (one more pass over the output, in cache
 * for the rows just written), so fusing never changes a result. */
static int needs_c_post(const graph_ints *post)
{
    for (int i = 0; post && i < post->n; i++)
        if (post->v[i] == GRAPH_POST_CLIP || post->v[i] == GRAPH_POST_RELU ||
            post->v[i] == GRAPH_POST_HARDSIGMOID)
            return 1;
    return 0;
}

static int has_residual(const graph_ints *post)
{
    for (int i = 0; post && i < post->n; i++)
        if (post->v[i] == GRAPH_POST_ADD)
            return 1;
    return 0;
}

static dnnl_status_t prim_build(eager_dnnl_prim *p, const eager_dnnl_spec *sp,
                                const char **step)
{
    dnnl_engine_t eng;
    dnnl_primitive_desc_t pd;
    dnnl_status_t s;
    *step = "engine";
    if ((s = eager_dnnl_engine(&eng)) != dnnl_success)
        return s;
    *step = "primitive descriptor";
    /* converted at each run: the residual is in the caller's (plain)
     * layout, the primitive's destination in its own, so the add runs in C
     * on the converted output */
    int in_c = sp->attr && (needs_c_post(sp->post) || (sp->convert && has_residual(sp->post)));
    if ((s = pd_create(&pd, sp, in_c ? NULL : sp->attr, p->own_scratch, eng)) != dnnl_success)
        return s;
    const char *impl = NULL;
    if (!in_c && sp->attr && sp->post && sp->post->n &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl && (strstr(impl, "gemm") || strstr(impl, "ref"))) {
        /* post-ops there are a scalar loop: same primitive without them */
        dnnl_primitive_desc_destroy(pd);
        if ((s = pd_create(&pd, sp, NULL, p->own_scratch, eng)) != dnnl_success)
            return s;
        in_c = 1;
    }
    if (in_c) {
        p->post_in_c = 1;
        p->post = *sp->post;
        p->prm = sp->prm;
    }
    *step = "primitive";
    s = dnnl_primitive_create(&p->prim, pd);
    if (s != dnnl_success)
        p->prim = NULL;
    *step = "memory";
    if (s == dnnl_success)
        s = make_memories(p, sp, pd, eng);
    *step = "scratchpad";
    if (s == dnnl_success && p->own_scratch)
        s = make_scratchpad(pd, eng, &p->scratch, &p->scratch_buf);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

tg_status eager_dnnl_prim_new(const eager_kargs *a, const eager_dnnl_spec *sp,
                              eager_dnnl_prim **out)
{
    *out = NULL;
    if (sp->nargs > EAGER_DNNL_MAX_ARGS)
        return eager_kernel_fail(a, TG_ERR_BACKEND, "oneDNN %s: %d arguments, room for %d",
                                 sp->what, sp->nargs, EAGER_DNNL_MAX_ARGS);
    eager_dnnl_prim *p = tg_calloc(1, sizeof *p);
    if (!p)
        return eager_kernel_fail(a, TG_ERR_NOMEM, "out of memory preparing oneDNN %s",
                                 sp->what);
    p->base.free = prim_state_free;
    p->what = sp->what;
    p->nthreads = a->nthreads;
    p->own_scratch = a->state != NULL;
    p->nargs = sp->nargs;
    p->packed = -1;
    p->dst = p->res = -1;
    /* Before the descriptor: oneDNN sizes its work split at creation. */
    int old = eager_dnnl_set_threads(a->nthreads);
    const char *step;
    dnnl_status_t s = prim_build(p, sp, &step);
    eager_dnnl_set_threads(old);
    if (s != dnnl_success) {
        eager_dnnl_prim_free(p);
        return eager_kernel_fail(a, DNNL_ST(s), "oneDNN %s %s failed: %s", sp->what,
                                 step, eager_dnnl_status_str(s));
    }
    *out = p;
    return TG_OK;
}

const char *eager_dnnl_prim_impl(const eager_dnnl_prim *p)
{
    const_dnnl_primitive_desc_t pd = NULL;
    const char *impl = NULL;
    if (p && p->prim && dnnl_primitive_get_primitive_desc(p->prim, &pd) == dnnl_success &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl)
        return impl;
    return "";
}

void eager_dnnl_prim_replaces(eager_dnnl_prim *p, const char *ref_impl)
{
    snprintf(p->replaces, sizeof p->replaces, "%s", ref_impl ? ref_impl : "");
}

eager_dnnl_prim *eager_dnnl_prim_get(const eager_kargs *a)
{
    /* A slot only ever holds the state of its own step's kernel. */
    return a->state ? (eager_dnnl_prim *)*a->state : NULL;
}

int eager_dnnl_impl_is_ref(const char *impl)
{
    return impl && (strncmp(impl, "ref", 3) == 0 || strstr(impl, "ref:") || strstr(impl, ":ref"));
}

int eager_dnnl_op_has_impl(graph_op op)
{
    return op == GRAPH_OP_conv2d || op == GRAPH_OP_conv2d_ep || op == GRAPH_OP_conv2d_blk ||
           op == GRAPH_OP_matmul || op == GRAPH_OP_linear || op == GRAPH_OP_linear_ep;
}

tg_status eager_dnnl_impl_of(graph_op op, const void *attrs, const graph_type *in_type, int nin,
                             const graph_type *out_type, uint32_t fixed_in, int nthreads,
                             char *impl, size_t len, char *err, size_t errlen)
{
    return eager_dnnl_impl_of_choice(op, attrs, in_type, nin, out_type, fixed_in, nthreads, 0,
                                     impl, len, err, errlen);
}

tg_status eager_dnnl_impl_of_choice(graph_op op, const void *attrs, const graph_type *in_type,
                                    int nin, const graph_type *out_type, uint32_t fixed_in,
                                    int nthreads, int choice, char *impl, size_t len, char *err,
                                    size_t errlen)
{
    char tmp[8];
    if (!impl || !len)
        impl = tmp, len = sizeof tmp;
    impl[0] = '\0';
    if (err && errlen)
        err[0] = '\0';
    if (!eager_dnnl_op_has_impl(op) || nin < 2 || nin > EAGER_DNNL_MAX_ARGS) {
        if (err && errlen)
            snprintf(err, errlen, "%s with %d inputs: not a oneDNN conv or matmul kernel",
                     (unsigned)op < GRAPH_OP_COUNT ? graph_ops[op].name : "?", nin);
        return TG_ERR_UNSUPPORTED;
    }
    /* Empty operands never reach oneDNN (and the kernel would write). */
    if (graph_type_numel(&in_type[0]) == 0 || graph_type_numel(&in_type[1]) == 0 ||
        graph_type_numel(out_type) == 0)
        return TG_OK;
    const void *in[EAGER_DNNL_MAX_ARGS] = {NULL};
    void *out[1] = {NULL};
    eager_kstate *slot = NULL;
    eager_kargs a = {in_type, in, nin, attrs, out_type, out, 1, nthreads < 1 ? 1 : nthreads,
                     err, err ? errlen : 0, &slot, fixed_in, choice};
    impl_probe pr = {impl, len, 0};
    tl_probe = &pr;
    tg_status st = eager_kernels[op](&a);
    tl_probe = NULL;
    eager_kstate_free(slot);
    if (pr.done) {
        if (err && errlen)
            err[0] = '\0';
        return TG_OK;
    }
    return st; /* TG_OK: the kernel did not call oneDNN */
}

tg_status eager_dnnl_node_impl(const graph *g, int32_t node, char *impl, size_t len, char *err,
                               size_t errlen)
{
    if (impl && len)
        impl[0] = '\0';
    if (!g || node < 0 || node >= g->nnodes) {
        if (err && errlen)
            snprintf(err, errlen, "node %d: no such node", (int)node);
        return TG_ERR_ARG;
    }
    const graph_node *n = &g->nodes[node];
    graph_type in[EAGER_DNNL_MAX_ARGS];
    uint32_t fixed = 0;
    for (int j = 0; j < n->nin && j < EAGER_DNNL_MAX_ARGS; j++) {
        const graph_value *v = &g->values[n->in[j]];
        in[j] = v->type;
        if (v->kind == GRAPH_VALUE_CONST || v->kind == GRAPH_VALUE_PARAM)
            fixed |= 1u << j;
    }
    if (n->nout != 1) {
        if (err && errlen)
            snprintf(err, errlen, "node %d (%s): %d outputs, not a oneDNN conv or matmul",
                     (int)node, graph_ops[n->op].name, (int)n->nout);
        return TG_ERR_UNSUPPORTED;
    }
    return eager_dnnl_impl_of(n->op, tg_node_attrs(n), in, n->nin,
                              &g->values[n->out[0]].type, fixed, 1, impl, len, err, errlen);
}

/* Fills the packed argument from the caller's buffer src. */
static dnnl_status_t repack(eager_dnnl_prim *p, dnnl_stream_t stream, const void *src)
{
    dnnl_status_t s = dnnl_memory_set_data_handle(p->user, (void *)src);
    dnnl_exec_arg_t ex[3] = {{DNNL_ARG_FROM, p->user}, {DNNL_ARG_TO, p->mem[p->packed]},
                             {DNNL_ARG_SCRATCHPAD, p->rscratch}};
    if (s == dnnl_success)
        s = dnnl_primitive_execute(p->reorder, stream, p->rscratch ? 3 : 2, ex);
    if (s == dnnl_success)
        s = dnnl_stream_wait(stream);
    p->packed_from = s == dnnl_success ? src : NULL;
    return s;
}

/* Runs c's reorder between the caller's buffer and mem (out: mem to it). */
static dnnl_status_t convert(struct dnnl_cvt *c, dnnl_memory_t mem, dnnl_stream_t stream,
                             const void *user)
{
    dnnl_status_t s = dnnl_memory_set_data_handle(c->user, (void *)user);
    dnnl_exec_arg_t ex[3] = {{DNNL_ARG_FROM, c->out ? mem : c->user},
                             {DNNL_ARG_TO, c->out ? c->user : mem},
                             {DNNL_ARG_SCRATCHPAD, c->rscratch}};
    if (s == dnnl_success)
        s = dnnl_primitive_execute(c->reorder, stream, c->rscratch ? 3 : 2, ex);
    return s;
}

static dnnl_status_t prim_exec(eager_dnnl_prim *p, const void *const *data, const char **step)
{
    dnnl_stream_t stream;
    dnnl_exec_arg_t ex[EAGER_DNNL_MAX_ARGS + 1];
    dnnl_status_t s;
    *step = "stream";
    if ((s = eager_dnnl_stream(&stream)) != dnnl_success)
        return s;
    *step = "weights reorder";
    if (p->packed >= 0 && p->packed_from != data[p->packed] &&
        (s = repack(p, stream, data[p->packed])) != dnnl_success)
        return s;
    *step = "input reorder";
    for (int i = 0; i < p->nargs; i++)
        if (p->cvt[i].reorder && !p->cvt[i].out &&
            (s = convert(&p->cvt[i], p->mem[i], stream, data[i])) != dnnl_success)
            return s;
    *step = "memory";
    int nex = 0;
    for (int i = 0; i < p->nargs; i++) {
        if (!p->mem[i])
            continue; /* the residual of a C epilogue */
        /* oneDNN takes void *; inputs are never written. */
        if (i != p->packed && !p->cvt[i].reorder && p->ptr[i] != data[i]) {
            if ((s = dnnl_memory_set_data_handle(p->mem[i], (void *)data[i])) != dnnl_success)
                return s;
            p->ptr[i] = data[i];
        }
        ex[nex].arg = p->arg[i];
        ex[nex++].memory = p->mem[i];
    }
    if (p->scratch) {
        ex[nex].arg = DNNL_ARG_SCRATCHPAD;
        ex[nex++].memory = p->scratch;
    }
    *step = "execute";
    if ((s = dnnl_primitive_execute(p->prim, stream, nex, ex)) != dnnl_success)
        return s;
    *step = "output reorder";
    for (int i = 0; i < p->nargs; i++)
        if (p->cvt[i].reorder && p->cvt[i].out &&
            (s = convert(&p->cvt[i], p->mem[i], stream, data[i])) != dnnl_success)
            return s;
    *step = "execute";
    if ((s = dnnl_stream_wait(stream)) == dnnl_success && p->post_in_c && p->dst >= 0)
        eager_isa_active->post_apply((float *)data[p->dst], p->dst_numel, &p->post, p->prm,
                         p->res >= 0 ? data[p->res] : NULL, p->nthreads);
    return s;
}

int eager_dnnl_probe_report(const char *impl)
{
    if (!tl_probe)
        return 0;
    snprintf(tl_probe->impl, tl_probe->len, "%s", impl);
    tl_probe->done = 1;
    return 1;
}

tg_status eager_dnnl_prim_finish(const eager_kargs *a, eager_dnnl_prim *p,
                                 const void *const *data)
{
    if (tl_probe) {
        /* eager_dnnl_impl_of: name it; the kernel stops on the error */
        if (p->replaces[0])
            snprintf(tl_probe->impl, tl_probe->len, "%s, converted at each run to %s",
                     p->replaces, eager_dnnl_prim_impl(p));
        else
            snprintf(tl_probe->impl, tl_probe->len, "%s", eager_dnnl_prim_impl(p));
        tl_probe->done = 1;
        if (a->state && !*a->state)
            *a->state = &p->base;
        else
            eager_dnnl_prim_free(p);
        return TG_ERR_STATE;
    }
    int old = eager_dnnl_set_threads(p->nthreads);
    const char *step;
    dnnl_status_t s = prim_exec(p, data, &step);
    eager_dnnl_set_threads(old);
    const char *what = p->what;
    if (a->state && !*a->state)
        *a->state = &p->base;
    else if (!a->state)
        eager_dnnl_prim_free(p);
    if (s != dnnl_success)
        return eager_kernel_fail(a, DNNL_ST(s), "oneDNN %s %s failed: %s", what, step,
                                 eager_dnnl_status_str(s));
    return TG_OK;
}

/* ---- epilogues ---- */

/* The oneDNN eltwise algorithm of an activation code, alpha/beta. */
static int post_eltwise(int64_t code, float slope, dnnl_alg_kind_t *alg, float *alpha)
{
    *alpha = 0.0f;
    switch (code) {
    case GRAPH_POST_RELU: *alg = dnnl_eltwise_relu; return 1;
    case GRAPH_POST_GELU: *alg = dnnl_eltwise_gelu_erf; return 1;
    case GRAPH_POST_SIGMOID: *alg = dnnl_eltwise_logistic; return 1;
    case GRAPH_POST_TANH: *alg = dnnl_eltwise_tanh; return 1;
    case GRAPH_POST_SILU: *alg = dnnl_eltwise_swish, *alpha = 1.0f; return 1;
    case GRAPH_POST_LEAKY_RELU: *alg = dnnl_eltwise_relu, *alpha = slope; return 1;
    case GRAPH_POST_HARDSWISH: *alg = dnnl_eltwise_hardswish; return 1;
    case GRAPH_POST_HARDSIGMOID: /* a placeholder, as CLIP's: runs in C */
    case GRAPH_POST_CLIP:
        /* a placeholder keeping the post-op indices: an epilogue with a
         * CLIP runs in C (prim_build), oneDNN's clip is not clip at NaN
         * and rejects min > max */
        *alg = dnnl_eltwise_linear, *alpha = 1.0f;
        return 1;
    }
    return 0;
}

static dnnl_status_t append_posts(dnnl_post_ops_t ops, const graph_ints *post,
                                  graph_post_prm prm, const dnnl_memory_desc_t *res,
                                  int *res_index)
{
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < post->n && s == dnnl_success; i++) {
        dnnl_alg_kind_t alg;
        float alpha;
        if (post->v[i] == GRAPH_POST_ADD) {
            s = dnnl_post_ops_append_binary(ops, dnnl_binary_add, res);
            *res_index = i;
        } else if (post_eltwise(post->v[i], prm.alpha, &alg, &alpha)) {
            s = dnnl_post_ops_append_eltwise(ops, 1.0f, alg, alpha, 0.0f);
        } else {
            s = dnnl_invalid_arguments; /* infer rejects unknown codes */
        }
    }
    return s;
}

dnnl_status_t eager_dnnl_post_attr(const graph_ints *post, graph_post_prm prm,
                                   const dnnl_memory_desc_t *res,
                                   dnnl_primitive_attr_t *attr, int *res_index)
{
    *attr = NULL;
    *res_index = -1;
    if (!post || post->n == 0)
        return dnnl_success;
    dnnl_post_ops_t ops;
    dnnl_status_t s = dnnl_post_ops_create(&ops);
    if (s != dnnl_success)
        return s;
    s = append_posts(ops, post, prm, res, res_index);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(attr);
    if (s == dnnl_success && (s = dnnl_primitive_attr_set_post_ops(*attr, ops)) != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    dnnl_post_ops_destroy(ops);
    return s;
}
