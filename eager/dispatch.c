/*
 * dispatch.c - the dispatcher: check -> infer -> allocate -> kernel ->
 * hook.  Kept short and branch-light: it is the per-op overhead.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "internal.h"
#include "kernel.h"

#define MAX_OUT 64
#define MAX_FIXED_IN 8

_Thread_local const eager_hooks *eager_tl_hooks;

static atomic_int g_threads = 1;

void eager_set_threads(int n)
{
    if (n > TG_MAX_THREADS) {
        eager_set_error(TG_ERR_ARG, NULL, "eager_set_threads: %d threads (at most %d); the "
                        "setting stays %d", n, TG_MAX_THREADS, eager_threads());
        return;
    }
    atomic_store(&g_threads, n < 1 ? 1 : n);
}

int eager_threads(void) { return atomic_load_explicit(&g_threads, memory_order_relaxed); }

const eager_hooks *eager_set_hooks(const eager_hooks *h)
{
    const eager_hooks *old = eager_tl_hooks;
    eager_tl_hooks = h;
    return old;
}

tg_status eager_kernel_fail(const eager_kargs *a, tg_status st,
                            const char *fmt, ...)
{
    if (a->err && a->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->err, a->errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

void eager_strides(const graph_type *t, int64_t *strides)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dim[i];
    }
}

/* Drops trailing EAGER_NONE inputs; -1 if one sits before a real input. */
static int trim_inputs(graph_op op, eager_tensor *const *in, int nin,
                       const eager_site *site)
{
    while (nin > 0 && in[nin - 1] == EAGER_NONE)
        nin--;
    for (int i = 0; i < nin; i++) {
        if (in[i] == EAGER_NONE) {
            eager_set_error(TG_ERR_ARG, site,
                            "%s: input %d is EAGER_NONE but a later input "
                            "is given (only trailing inputs are optional)",
                            graph_ops[op].name, i);
            return -1;
        }
    }
    return nin;
}

static void release_all(eager_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        eager_release(t[i]);
}

int eager_dispatch(graph_op op, eager_tensor *const *in, int nin,
                   const void *attrs, eager_tensor **out, int max_out,
                   const eager_site *site)
{
    if ((unsigned)op >= GRAPH_OP_COUNT) {
        eager_set_error(TG_ERR_ARG, site, "eager_dispatch: invalid op %d",
                        (int)op);
        return -1;
    }
    const graph_op_info *info = &graph_ops[op];
    if (nin < 0 || (nin > 0 && !in) || max_out < 0 || (max_out > 0 && !out)) {
        eager_set_error(TG_ERR_NULL, site, "eager_dispatch: %s: %s", info->name,
                        nin < 0 || max_out < 0 ? "negative count"
                        : nin > 0 && !in       ? "inputs array is NULL"
                                               : "outputs array is NULL");
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        if (!in[i]) {
            if (eager_status() == TG_OK)
                eager_set_error(TG_ERR_NULL, site, "%s: input %d is NULL",
                                info->name, i);
            return -1;
        }
        if (in[i]->magic != EAGER_LIVE) {
            char what[96];
            snprintf(what, sizeof what, "%s: input %d", info->name, i);
            eager_check_live(in[i], what, site);
            return -1;
        }
    }
    nin = trim_inputs(op, in, nin, site);
    if (nin < 0)
        return -1;
    if ((info->props & GRAPH_PROP_VIEW) && nin > 0) {
        char what[96];
        snprintf(what, sizeof what, "%s: input 0 (a view takes a reference on it)", info->name);
        if (eager_foreign(in[0], what, site))
            return -1;
    }

    graph_type in_type_buf[MAX_FIXED_IN], *in_type = in_type_buf;
    const void *in_data_buf[MAX_FIXED_IN], **in_data = in_data_buf;
    graph_attrs defaults;
    graph_type out_type[MAX_OUT];
    void *out_data[MAX_OUT];
    char err[768];
    int nout = 0, ret = -1;

    if (nin > MAX_FIXED_IN) {
        in_type = tg_malloc((size_t)nin * sizeof *in_type);
        in_data = tg_malloc((size_t)nin * sizeof *in_data);
        if (!in_type || !in_data) {
            eager_set_error(TG_ERR_NOMEM, site, "%s: no memory", info->name);
            goto done;
        }
    }
    for (int i = 0; i < nin; i++) {
        in_type[i] = in[i]->type;
        in_data[i] = in[i]->data;
    }
    if (info->attr_size && !attrs) {
        graph_attrs_default(op, &defaults);
        attrs = &defaults;
    }
    tg_status st = graph_infer(op, in_type, nin, attrs, out_type, MAX_OUT,
                               &nout, err, sizeof err);
    if (st != TG_OK) {
        eager_set_error(st, site, "%s", err);
        goto done;
    }
    if (nout > max_out) {
        eager_set_error(TG_ERR_ARG, site, "%s: makes %d outputs, room for %d",
                        info->name, nout, max_out);
        goto done;
    }
    for (int i = 0; i < nout; i++) {
        /* A view op on its own contiguous input shares the storage. */
        out[i] = (info->props & GRAPH_PROP_VIEW)
                     ? eager_alloc_view(in[0], &out_type[i], site)
                     : eager_alloc(&out_type[i], site);
        if (!out[i]) {
            release_all(out, i);
            goto done;
        }
        out_data[i] = out[i]->data;
    }
    if (!(info->props & GRAPH_PROP_VIEW)) {
        eager_kargs ka = {in_type, in_data, nin, attrs, out_type,
                          out_data, nout, eager_threads(), err, sizeof err};
        err[0] = '\0';
        st = eager_kernels[op](&ka);
        if (st != TG_OK) {
            eager_set_error(st, site, "%s: %s", info->name,
                            err[0] ? err : tg_status_str(st));
            release_all(out, nout);
            goto done;
        }
    }
    if (eager_pool_reserve(nout) < 0) {
        release_all(out, nout);
        goto done;
    }
    if (eager_tl_hooks && eager_tl_hooks->on_op) {
        st = eager_tl_hooks->on_op(eager_tl_hooks->ud, op, in, nin, attrs,
                                   out, nout, site);
        if (st != TG_OK) {
            release_all(out, nout);
            goto done;
        }
    }
    /* after the hook: a saved output's copy takes the output's tag (a
     * tracer's value), so a traced backward reads the traced value */
    if (eager_tl_grad_on && eager_grad_record(op, in, nin, attrs, out, nout, site) < 0) {
        release_all(out, nout);
        goto done;
    }
    for (int i = 0; i < nout; i++)
        eager_pool_adopt(out[i]); /* cannot fail: room reserved above */
    ret = nout;
done:
    if (in_type != in_type_buf) {
        tg_free(in_type);
        tg_free(in_data);
    }
    return ret;
}
