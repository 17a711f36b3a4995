/*
 * dnnl_util.c - oneDNN engine, per-thread streams, thread count, error
 * text and the run-one-primitive helper used by the matmul, linear and
 * conv2d kernels.  See dnnl_util.h.
 *
 * Lifetimes.  The engine lives until exit (it is shared by every thread
 * and by oneDNN's primitive cache).  Each thread's stream is destroyed by
 * a pthread key destructor when that thread exits; the main thread's stays
 * reachable until exit, as the engine does.
 */
#include "dnnl_util.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_key_t g_stream_key;
static int g_have_key;

/* The stream of this thread; the key holds it too, for the destructor. */
static _Thread_local dnnl_stream_t tl_stream;

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

tg_status eager_dnnl_fail(const eager_kargs *a, const char *what,
                          dnnl_status_t s)
{
    return eager_kernel_fail(a, TG_ERR_BACKEND, "oneDNN %s failed: %s", what,
                             eager_dnnl_status_str(s));
}

/* The primitive, its memories and the step that failed, for cleanup. */
typedef struct run_state {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[EAGER_DNNL_MAX_ARGS];
    const char *step;
} run_state;

static dnnl_status_t run_steps(run_state *r, const_dnnl_op_desc_t op_desc,
                               const eager_dnnl_arg *args, int nargs)
{
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_exec_arg_t ex[EAGER_DNNL_MAX_ARGS];
    dnnl_status_t s;

    r->step = "engine";
    if ((s = eager_dnnl_engine(&eng)) != dnnl_success)
        return s;
    r->step = "stream";
    if ((s = eager_dnnl_stream(&stream)) != dnnl_success)
        return s;
    r->step = "primitive descriptor";
    if ((s = dnnl_primitive_desc_create(&r->pd, op_desc, NULL, eng, NULL)) !=
        dnnl_success) {
        r->pd = NULL;
        return s;
    }
    r->step = "primitive";
    if ((s = dnnl_primitive_create(&r->prim, r->pd)) != dnnl_success) {
        r->prim = NULL;
        return s;
    }
    r->step = "memory";
    for (int i = 0; i < nargs; i++) {
        /* oneDNN takes void *; inputs are never written. */
        s = dnnl_memory_create(&r->mem[i], args[i].md, eng,
                               (void *)args[i].data);
        if (s != dnnl_success) {
            r->mem[i] = NULL;
            return s;
        }
        ex[i].arg = args[i].arg;
        ex[i].memory = r->mem[i];
    }
    r->step = "execute";
    if ((s = dnnl_primitive_execute(r->prim, stream, nargs, ex)) !=
        dnnl_success)
        return s;
    return dnnl_stream_wait(stream);
}

tg_status eager_dnnl_run(const eager_kargs *a, const char *what,
                         const_dnnl_op_desc_t op_desc,
                         const eager_dnnl_arg *args, int nargs)
{
    run_state r = {0};
    if (nargs > EAGER_DNNL_MAX_ARGS)
        return eager_kernel_fail(a, TG_ERR_BACKEND,
                                 "oneDNN %s: %d arguments, room for %d", what,
                                 nargs, EAGER_DNNL_MAX_ARGS);
    /* Before the descriptor: oneDNN sizes its work split at creation. */
    int old = eager_dnnl_set_threads(a->nthreads);
    dnnl_status_t s = run_steps(&r, op_desc, args, nargs);
    eager_dnnl_set_threads(old);
    for (int i = 0; i < nargs; i++)
        if (r.mem[i])
            dnnl_memory_destroy(r.mem[i]);
    if (r.prim)
        dnnl_primitive_destroy(r.prim);
    if (r.pd)
        dnnl_primitive_desc_destroy(r.pd);
    if (s != dnnl_success)
        return eager_kernel_fail(a, TG_ERR_BACKEND, "oneDNN %s %s failed: %s",
                                 what, r.step, eager_dnnl_status_str(s));
    return TG_OK;
}
