/*
 * optim.c - the eager optimizers (SGD, AdamW) and gradient clipping of
 * eager/optim.h, written with registry ops through the dispatcher
 * (sgd_step, adamw_step, add, mul, reduce_sum, sqrt, div, clip) and
 * eager_assign, so that a tracer listening on the thread records a step
 * like any other code, and eager_declare_state, so that it knows what the
 * step keeps across runs.
 *
 * Every tensor an optimizer owns is made inside a pool level of its own
 * and retained through the pop: one reference, the optimizer's, whatever
 * pool the caller has open.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "internal.h"
#include "optim.h"

enum { OPTIM_SGD, OPTIM_ADAMW };

#define OPTIM_MAX_HYPER 5

/* Hyperparameter names, in each kind's order (the op's input order). */
static const char *const sgd_hyper[] = {"lr", "momentum", "weight_decay"};
static const char *const adamw_hyper[] = {"lr", "beta1", "beta2", "eps", "weight_decay"};

struct eager_optim {
    int kind;
    int n;        /* parameters */
    int nesterov; /* SGD */
    char *prefix;
    eager_tensor **params; /* one reference each */
    /* per parameter: SGD buf[0] the momentum buffer; AdamW buf[0] m,
     * buf[1] v, step the i64 step count */
    eager_tensor **buf[2];
    eager_tensor **step;
    int nhyper;
    const char *const *hyper_names;
    eager_tensor *hyper[OPTIM_MAX_HYPER];
    eager_tensor *one; /* i64 1: the step count's increment */
};

eager_sgd_opts eager_sgd_default_opts(void)
{
    eager_sgd_opts o;
    memset(&o, 0, sizeof o);
    o.lr = 1e-3;
    return o;
}

eager_adamw_opts eager_adamw_default_opts(void)
{
    eager_adamw_opts o;
    memset(&o, 0, sizeof o);
    o.lr = 1e-3;
    o.beta1 = 0.9;
    o.beta2 = 0.999;
    o.eps = 1e-8;
    o.weight_decay = 1e-2;
    return o;
}

/* ---- ops through the dispatcher ---- */

/* A 0-d tensor of dt holding v. */
static eager_tensor *scalar_of(graph_dtype dt, double v, const eager_site *s)
{
    return eager_full_at(s->file, s->line, s->func, dt, TG_NOINTS, v);
}

/* t made in the pool level the caller opened, kept past its pop: the
 * optimizer's reference (NULL stays NULL). */
static eager_tensor *own(eager_tensor *t, const eager_site *s)
{
    return t ? eager_retain_at(s->file, s->line, s->func, t) : NULL;
}

/* ---- settings ---- */

/*
 * Whether value suits hyperparameter name of an optimizer of kind (with
 * nesterov, momentum must stay > 0); else an error at site.
 */
static int hyper_ok(int kind, int nesterov, const char *name, double value,
                    const eager_site *site)
{
    const char *opt = kind == OPTIM_SGD ? "sgd" : "adamw";
    int beta = !strcmp(name, "beta1") || !strcmp(name, "beta2");
    if (beta ? !(value >= 0.0 && value < 1.0) : !(isfinite(value) && value >= 0.0)) {
        eager_set_error(TG_ERR_ARG, site, "%s: %s %g is out of range (%s)", opt, name, value,
                        beta ? "want 0 <= beta < 1" : "want a finite value >= 0");
        return 0;
    }
    if (kind == OPTIM_SGD && nesterov && !strcmp(name, "momentum") && value <= 0.0) {
        eager_set_error(TG_ERR_ARG, site,
                        "sgd: Nesterov momentum needs momentum > 0, got %g", value);
        return 0;
    }
    return 1;
}

/* Index of hyperparameter name, or -1 (no error). */
static int hyper_index(const eager_optim *o, const char *name)
{
    for (int h = 0; name && h < o->nhyper; h++)
        if (!strcmp(name, o->hyper_names[h]))
            return h;
    return -1;
}

/* The names an optimizer of this kind knows, "lr, momentum, ...". */
static const char *hyper_list(const eager_optim *o, char *buf, size_t n)
{
    buf[0] = 0;
    for (int h = 0; h < o->nhyper; h++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", h ? ", " : "", o->hyper_names[h]);
    return buf;
}

/* ---- construction ---- */

void eager_optim_free(eager_optim *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->n; i++) {
        if (o->params)
            (eager_release)(o->params[i]);
        for (int k = 0; k < 2; k++)
            if (o->buf[k])
                (eager_release)(o->buf[k][i]);
        if (o->step)
            (eager_release)(o->step[i]);
    }
    for (int h = 0; h < o->nhyper; h++)
        (eager_release)(o->hyper[h]);
    (eager_release)(o->one);
    tg_free(o->params);
    tg_free(o->buf[0]);
    tg_free(o->buf[1]);
    tg_free(o->step);
    tg_free(o->prefix);
    tg_free(o);
}

/* Checks params[0..n): distinct live f32 tensors; else an error. */
static int params_ok(const char *opt, eager_tensor *const *params, int n, const eager_site *site)
{
    if (n < 1 || !params) {
        eager_set_error(TG_ERR_ARG, site, "%s: no parameters (%d given%s)", opt, n,
                        params ? "" : ", the list NULL");
        return 0;
    }
    char what[64];
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "%s: param %d", opt, i);
        if (params[i] == EAGER_NONE) {
            eager_set_error(TG_ERR_NULL, site, "%s is EAGER_NONE", what);
            return 0;
        }
        if (!params[i]) {
            eager_set_error(TG_ERR_NULL, site, "%s is NULL", what);
            return 0;
        }
        if (eager_check(params[i], what, site) < 0)
            return 0;
        if (params[i]->type.dtype != GRAPH_F32) {
            eager_set_error(TG_ERR_DTYPE, site, "%s is %s: an optimizer updates f32 tensors",
                            what, graph_dtype_name(params[i]->type.dtype));
            return 0;
        }
        for (int j = 0; j < i; j++)
            if (params[j] == params[i]) {
                eager_set_error(TG_ERR_ARG, site, "%s is param %d again: each parameter "
                                "once", what, j);
                return 0;
            }
    }
    return 1;
}

/* The optimizer's structure and tensors; NULL with an error. */
static eager_optim *optim_new(int kind, eager_tensor *const *params, int n, int nesterov,
                              const char *prefix, const double *hyper, const eager_site *site)
{
    const char *opt = kind == OPTIM_SGD ? "sgd" : "adamw";
    if (!params_ok(opt, params, n, site))
        return NULL;
    eager_optim *o = tg_calloc(1, sizeof *o);
    if (!o) {
        eager_set_error(TG_ERR_NOMEM, site, "%s: no memory", opt);
        return NULL;
    }
    o->kind = kind;
    o->nesterov = nesterov;
    o->hyper_names = kind == OPTIM_SGD ? sgd_hyper : adamw_hyper;
    o->nhyper = kind == OPTIM_SGD ? 3 : 5;
    for (int h = 0; h < o->nhyper; h++)
        if (!hyper_ok(kind, nesterov, o->hyper_names[h], hyper[h], site)) {
            tg_free(o);
            return NULL;
        }
    int nbuf = kind == OPTIM_SGD ? 1 : 2;
    o->prefix = tg_strdup(prefix ? prefix : opt);
    o->params = tg_calloc((size_t)n, sizeof *o->params);
    for (int k = 0; k < nbuf; k++)
        o->buf[k] = tg_calloc((size_t)n, sizeof *o->buf[k]);
    if (kind == OPTIM_ADAMW)
        o->step = tg_calloc((size_t)n, sizeof *o->step);
    if (!o->prefix || !o->params || !o->buf[0] || (nbuf > 1 && !o->buf[1]) ||
        (kind == OPTIM_ADAMW && !o->step)) {
        eager_optim_free(o);
        eager_set_error(TG_ERR_NOMEM, site, "%s: no memory", opt);
        return NULL;
    }
    if (eager_pool_push() != TG_OK) {
        eager_optim_free(o);
        return NULL;
    }
    int ok = 1;
    for (int h = 0; h < o->nhyper && ok; h++)
        ok = (o->hyper[h] = own(scalar_of(GRAPH_F32, hyper[h], site), site)) != NULL;
    if (ok && kind == OPTIM_ADAMW)
        ok = (o->one = own(scalar_of(GRAPH_I64, 1, site), site)) != NULL;
    for (int i = 0; i < n && ok; i++) {
        const graph_type *t = &params[i]->type;
        graph_ints shape = {t->ndim, {0}};
        memcpy(shape.v, t->dim, sizeof(int64_t) * (size_t)t->ndim);
        o->params[i] = own(params[i], site);
        o->n = i + 1;
        ok = o->params[i] != NULL;
        for (int k = 0; k < nbuf && ok; k++)
            ok = (o->buf[k][i] = own(eager_full_at(site->file, site->line, site->func,
                                                   GRAPH_F32, shape, 0.0), site)) != NULL;
        if (ok && kind == OPTIM_ADAMW)
            ok = (o->step[i] = own(scalar_of(GRAPH_I64, 0, site), site)) != NULL;
    }
    eager_pool_pop_at(site->file, site->line, site->func);
    if (!ok) {
        eager_optim_free(o);
        return NULL;
    }
    return o;
}

eager_optim *eager_sgd_new_at(EAGER_SITE_PARAMS, eager_tensor *const *params, int n,
                              const eager_sgd_opts *opts)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_sgd_opts o = opts ? *opts : eager_sgd_default_opts();
    if (o.nesterov != 0 && o.nesterov != 1) {
        eager_set_error(TG_ERR_ARG, &site, "sgd: nesterov must be 0 or 1, got %d", o.nesterov);
        return NULL;
    }
    double hyper[3] = {o.lr, o.momentum, o.weight_decay};
    return optim_new(OPTIM_SGD, params, n, o.nesterov, o.prefix, hyper, &site);
}

eager_optim *eager_adamw_new_at(EAGER_SITE_PARAMS, eager_tensor *const *params, int n,
                                const eager_adamw_opts *opts)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_adamw_opts o = opts ? *opts : eager_adamw_default_opts();
    double hyper[5] = {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay};
    return optim_new(OPTIM_ADAMW, params, n, 0, o.prefix, hyper, &site);
}

/* ---- the step ---- */

/* Declares t state "<prefix>.<what>" (i >= 0: ".<i>" appended). */
static tg_status declare(const eager_optim *o, eager_tensor *t, const char *what, int i,
                         const eager_site *site)
{
    size_t n = strlen(o->prefix) + strlen(what) + 16;
    char *name = tg_malloc(n);
    if (!name) {
        eager_set_error(TG_ERR_NOMEM, site, "eager_optim_step: no memory");
        return TG_ERR_NOMEM;
    }
    if (i >= 0)
        snprintf(name, n, "%s.%s.%d", o->prefix, what, i);
    else
        snprintf(name, n, "%s.%s", o->prefix, what);
    tg_status st = eager_declare_state_at(site->file, site->line, site->func, t, name);
    tg_free(name);
    return st;
}

/* eager_assign each dst[k] from src[k], k < n. */
static tg_status assign_all(eager_tensor *const *dst, eager_tensor *const *src, int n,
                            const eager_site *site)
{
    tg_status st = TG_OK;
    for (int k = 0; k < n && st == TG_OK; k++)
        st = eager_assign_at(site->file, site->line, site->func, dst[k], src[k]);
    return st;
}

/* Parameter i's update (it has gradient g), inside the step's pool. */
static tg_status update(eager_optim *o, int i, eager_tensor *g, const eager_site *site)
{
    eager_tensor *p = o->params[i];
    tg_status st = declare(o, p, "param", i, site);
    if (o->kind == OPTIM_SGD) {
        if (st == TG_OK)
            st = declare(o, o->buf[0][i], "momentum_buffer", i, site);
        if (st != TG_OK)
            return st;
        eager_tensor *in[6] = {p, g, o->buf[0][i], o->hyper[0], o->hyper[1], o->hyper[2]};
        eager_tensor *out[2] = {NULL, NULL}, *dst[2] = {p, o->buf[0][i]};
        graph_sgd_step_attrs at = {o->nesterov};
        if (eager_dispatch(GRAPH_OP_sgd_step, in, 6, &at, out, 2, site) != 2)
            return eager_status();
        return assign_all(dst, out, 2, site);
    }
    if (st == TG_OK)
        st = declare(o, o->buf[0][i], "m", i, site);
    if (st == TG_OK)
        st = declare(o, o->buf[1][i], "v", i, site);
    if (st == TG_OK)
        st = declare(o, o->step[i], "step", i, site);
    if (st != TG_OK)
        return st;
    eager_tensor *t = eager_op2(GRAPH_OP_add, o->step[i], o->one, NULL, site);
    if (!t)
        return eager_status();
    st = eager_assign_at(site->file, site->line, site->func, o->step[i], t);
    if (st != TG_OK)
        return st;
    eager_tensor *in[10] = {p, g, o->buf[0][i], o->buf[1][i], t, o->hyper[0], o->hyper[1],
                            o->hyper[2], o->hyper[3], o->hyper[4]};
    eager_tensor *out[3] = {NULL, NULL, NULL}, *dst[3] = {p, o->buf[0][i], o->buf[1][i]};
    if (eager_dispatch(GRAPH_OP_adamw_step, in, 10, NULL, out, 3, site) != 3)
        return eager_status();
    return assign_all(dst, out, 3, site);
}

tg_status eager_optim_step_at(EAGER_SITE_PARAMS, eager_optim *o)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!o) {
        eager_set_error(TG_ERR_NULL, &site, "eager_optim_step: no optimizer (NULL)");
        return TG_ERR_NULL;
    }
    /* every gradient checked before anything is written (the parameters
     * are live: the optimizer holds a reference to each) */
    int any = 0;
    for (int i = 0; i < o->n; i++) {
        eager_tensor *g = eager_grad_at(site.file, site.line, site.func, o->params[i]);
        if (!g)
            continue;
        if (!graph_type_eq(&g->type, &o->params[i]->type)) {
            char a[160], b[160];
            eager_set_error(TG_ERR_SHAPE, &site,
                            "eager_optim_step: param %d is %s %s, its gradient %s %s", i,
                            graph_dtype_name(o->params[i]->type.dtype),
                            graph_shape_str(&o->params[i]->type, a, sizeof a),
                            graph_dtype_name(g->type.dtype), graph_shape_str(&g->type, b, sizeof b));
            return TG_ERR_SHAPE;
        }
        any = 1;
    }
    if (!any)
        return TG_OK;
    if (eager_pool_push() != TG_OK)
        return eager_status();
    eager_no_grad_begin();
    tg_status st = TG_OK;
    for (int h = 0; h < o->nhyper && st == TG_OK; h++)
        st = declare(o, o->hyper[h], o->hyper_names[h], -1, &site);
    for (int i = 0; i < o->n && st == TG_OK; i++) {
        eager_tensor *g = eager_grad_at(site.file, site.line, site.func, o->params[i]);
        if (g)
            st = update(o, i, g, &site);
    }
    eager_no_grad_end();
    eager_pool_pop_at(site.file, site.line, site.func);
    return st;
}

tg_status eager_optim_zero_grad_at(EAGER_SITE_PARAMS, eager_optim *o)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!o) {
        eager_set_error(TG_ERR_NULL, &site, "eager_optim_zero_grad: no optimizer (NULL)");
        return TG_ERR_NULL;
    }
    /* the parameters are live (the optimizer holds them): nothing fails */
    for (int i = 0; i < o->n; i++)
        eager_zero_grad_at(site.file, site.line, site.func, o->params[i]);
    return TG_OK;
}

/* ---- hyperparameters and tensors ---- */

tg_status eager_optim_set_at(EAGER_SITE_PARAMS, eager_optim *o, const char *name, double value)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!o) {
        eager_set_error(TG_ERR_NULL, &site, "eager_optim_set: no optimizer (NULL)");
        return TG_ERR_NULL;
    }
    int h = hyper_index(o, name);
    if (h < 0) {
        char list[96];
        eager_set_error(TG_ERR_ARG, &site, "eager_optim_set: %s has no hyperparameter \"%s\" "
                        "(it has %s)", o->kind == OPTIM_SGD ? "sgd" : "adamw",
                        name ? name : "(NULL)", hyper_list(o, list, sizeof list));
        return TG_ERR_ARG;
    }
    if (!hyper_ok(o->kind, o->nesterov, name, value, &site))
        return TG_ERR_ARG;
    if (eager_pool_push() != TG_OK)
        return eager_status();
    eager_tensor *v = scalar_of(GRAPH_F32, value, &site);
    tg_status st = v ? eager_assign_at(site.file, site.line, site.func, o->hyper[h], v)
                     : eager_status();
    eager_pool_pop_at(site.file, site.line, site.func);
    return st;
}

double eager_optim_get_at(EAGER_SITE_PARAMS, const eager_optim *o, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!o) {
        eager_set_error(TG_ERR_NULL, &site, "eager_optim_get: no optimizer (NULL)");
        return NAN;
    }
    int h = hyper_index(o, name);
    if (h < 0) {
        char list[96];
        eager_set_error(TG_ERR_ARG, &site, "eager_optim_get: %s has no hyperparameter \"%s\" "
                        "(it has %s)", o->kind == OPTIM_SGD ? "sgd" : "adamw",
                        name ? name : "(NULL)", hyper_list(o, list, sizeof list));
        return NAN;
    }
    return *(const float *)o->hyper[h]->data;
}

eager_tensor *eager_optim_tensor_at(EAGER_SITE_PARAMS, const eager_optim *o, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!o) {
        eager_set_error(TG_ERR_NULL, &site, "eager_optim_tensor: no optimizer (NULL)");
        return NULL;
    }
    int h = hyper_index(o, name);
    if (h >= 0)
        return o->hyper[h];
    static const char *const per[2][4] = {{"param", "momentum_buffer", NULL, NULL},
                                          {"param", "m", "v", "step"}};
    const char *dot = name ? strrchr(name, '.') : NULL;
    if (dot && dot[1] >= '0' && dot[1] <= '9') {
        char *end;
        long i = strtol(dot + 1, &end, 10);
        for (int k = 0; k < 4 && !*end && i < o->n; k++) {
            const char *w = per[o->kind][k];
            if (!w || strlen(w) != (size_t)(dot - name) || strncmp(w, name, strlen(w)))
                continue;
            return k == 0 ? o->params[i] : k == 3 ? o->step[i] : o->buf[k - 1][i];
        }
    }
    eager_set_error(TG_ERR_ARG, &site,
                    "eager_optim_tensor: %s has no tensor \"%s\" (it has its hyperparameters "
                    "and, for each of its %d parameters i, %s)",
                    o->kind == OPTIM_SGD ? "sgd" : "adamw", name ? name : "(NULL)", o->n,
                    o->kind == OPTIM_SGD ? "param.i, momentum_buffer.i"
                                         : "param.i, m.i, v.i, step.i");
    return NULL;
}

/* ---- gradient clipping ---- */

tg_status eager_clip_grad_norm_at(EAGER_SITE_PARAMS, eager_tensor *const *params, int n,
                                  eager_tensor *max_norm, eager_tensor **total_norm)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (total_norm)
        *total_norm = NULL;
    if (n < 0 || (n > 0 && !params)) {
        eager_set_error(TG_ERR_ARG, &site, "eager_clip_grad_norm: bad parameter list (%d, %s)",
                        n, params ? "given" : "NULL");
        return TG_ERR_ARG;
    }
    char what[64];
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "eager_clip_grad_norm: param %d", i);
        if (params[i] == EAGER_NONE || !params[i]) {
            eager_set_error(TG_ERR_NULL, &site, "%s is %s", what,
                            params[i] ? "EAGER_NONE" : "NULL");
            return TG_ERR_NULL;
        }
        if (eager_check(params[i], what, &site) < 0)
            return eager_status();
    }
    if (max_norm == EAGER_NONE || !max_norm) {
        eager_set_error(TG_ERR_NULL, &site, "eager_clip_grad_norm: max_norm is %s (want a "
                        "one-element f32 tensor, e.g. eager_scalar(1.0))",
                        max_norm ? "EAGER_NONE" : "NULL");
        return TG_ERR_NULL;
    }
    if (eager_check(max_norm, "eager_clip_grad_norm: max_norm", &site) < 0)
        return eager_status();
    if (max_norm->type.dtype != GRAPH_F32 || max_norm->numel != 1) {
        char a[160];
        eager_set_error(TG_ERR_SHAPE, &site, "eager_clip_grad_norm: max_norm is %s %s; want "
                        "one f32 element", graph_dtype_name(max_norm->type.dtype),
                        graph_shape_str(&max_norm->type, a, sizeof a));
        return TG_ERR_SHAPE;
    }
    eager_tensor **grads = tg_calloc((size_t)(n ? n : 1), 2 * sizeof *grads);
    if (!grads) {
        eager_set_error(TG_ERR_NOMEM, &site, "eager_clip_grad_norm: no memory");
        return TG_ERR_NOMEM;
    }
    eager_tensor **scaled = grads + (n ? n : 1);
    if (eager_pool_push() != TG_OK) {
        tg_free(grads);
        return eager_status();
    }
    eager_no_grad_begin();
    /* total = sqrt(sum_i norm_i^2), norm_i = sqrt(sum g_i^2): PyTorch's
     * norm of the per-gradient norms */
    graph_reduce_sum_attrs rs;
    graph_attrs_default(GRAPH_OP_reduce_sum, &rs);
    eager_tensor *acc = NULL, *total = NULL;
    int ng = 0, bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        eager_tensor *g = eager_grad_at(site.file, site.line, site.func, params[i]);
        if (!g) /* checked live above: no gradient */
            continue;
        grads[ng++] = g;
        eager_tensor *s = eager_op1(GRAPH_OP_reduce_sum, eager_op2(GRAPH_OP_mul, g, g, NULL, &site), &rs,
                              &site);
        eager_tensor *nrm = eager_op1(GRAPH_OP_sqrt, s, NULL, &site);
        eager_tensor *sq = eager_op2(GRAPH_OP_mul, nrm, nrm, NULL, &site);
        acc = acc ? eager_op2(GRAPH_OP_add, acc, sq, NULL, &site) : sq;
        bad = acc == NULL;
    }
    tg_status st = TG_OK;
    if (bad) {
        st = eager_status();
    } else if (!ng) {
        total = scalar_of(GRAPH_F32, 0.0, &site);
    } else {
        graph_clip_attrs ca = {-INFINITY, 1.0f};
        total = eager_op1(GRAPH_OP_sqrt, acc, NULL, &site);
        eager_tensor *den = eager_op2(GRAPH_OP_add, total, scalar_of(GRAPH_F32, 1e-6, &site), NULL,
                                &site);
        eager_tensor *coef = eager_op1(GRAPH_OP_clip, eager_op2(GRAPH_OP_div, max_norm, den, NULL, &site),
                                 &ca, &site);
        for (int k = 0; k < ng && coef; k++)
            if (!(scaled[k] = eager_op2(GRAPH_OP_mul, grads[k], coef, NULL, &site)))
                coef = NULL;
        st = coef ? TG_OK : eager_status();
        /* every product made before the first write */
        for (int k = 0; k < ng && st == TG_OK; k++)
            st = eager_assign_at(site.file, site.line, site.func, grads[k], scaled[k]);
    }
    if (st == TG_OK && !total)
        st = eager_status();
    if (st == TG_OK && total_norm)
        eager_retain_at(site.file, site.line, site.func, total);
    eager_no_grad_end();
    eager_pool_pop_at(site.file, site.line, site.func);
    tg_free(grads);
    if (st != TG_OK || !total_norm)
        return st;
    /* adopted by the caller's pool (if any), as an op's result */
    if (eager_pool_reserve(1) < 0 || eager_pool_adopt(total) < 0) {
        (eager_release)(total);
        return eager_status();
    }
    *total_norm = total;
    return TG_OK;
}
