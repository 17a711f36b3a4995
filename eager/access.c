/* access.c - element reads, each reported to the hooks (tracer guards). */
#include <math.h>
#include <string.h>

#include "internal.h"

static double load(const eager_tensor *t, int64_t i)
{
    switch (t->type.dtype) {
    case GRAPH_F32: return ((const float *)t->data)[i];
    case GRAPH_I64: return (double)((const int64_t *)t->data)[i];
    case GRAPH_I32: return ((const int32_t *)t->data)[i];
    case GRAPH_BOOL: return ((const uint8_t *)t->data)[i];
    default: return NAN;
    }
}

/* Reports a read to the hooks; nonzero if a hook refused it. */
static int report(const eager_tensor *t, eager_read_kind kind, int64_t index,
                  const eager_site *site)
{
    return eager_tl_hooks && eager_tl_hooks->on_read &&
           eager_tl_hooks->on_read(eager_tl_hooks->ud, t, kind, index,
                                   site) != TG_OK;
}

static int check_scalar(const eager_tensor *t, const char *what,
                        const eager_site *site)
{
    if (eager_check(t, what, site) < 0)
        return -1;
    if (t->numel != 1) {
        char s[160];
        eager_set_error(TG_ERR_SHAPE, site,
                        "%s: %s: needs exactly one element, has %lld", what,
                        graph_shape_str(&t->type, s, sizeof s),
                        (long long)t->numel);
        return -1;
    }
    return 0;
}

double eager_item_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (check_scalar(t, "item", &site) < 0 ||
        report(t, EAGER_READ_VALUE, 0, &site))
        return NAN;
    return load(t, 0);
}

int eager_bool_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (check_scalar(t, "bool", &site) < 0 ||
        report(t, EAGER_READ_DECISION, 0, &site))
        return 0;
    return load(t, 0) != 0.0;
}

double eager_get_at(EAGER_SITE_PARAMS, const eager_tensor *t,
                    graph_ints index)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (eager_check(t, "get", &site) < 0)
        return NAN;
    char s[160], ix[160];
    if (index.n != t->type.ndim) {
        eager_set_error(TG_ERR_ARG, &site,
                        "get: %s: index %s has %d entries, tensor has %d dims",
                        graph_shape_str(&t->type, s, sizeof s),
                        graph_ints_str(&index, ix, sizeof ix), (int)index.n,
                        (int)t->type.ndim);
        return NAN;
    }
    int64_t flat = 0;
    for (int i = 0; i < index.n; i++) {
        int64_t k = index.v[i] < 0 ? index.v[i] + t->type.dim[i] : index.v[i];
        if (k < 0 || k >= t->type.dim[i]) {
            eager_set_error(TG_ERR_ARG, &site,
                            "get: %s: index %s out of range in dim %d",
                            graph_shape_str(&t->type, s, sizeof s),
                            graph_ints_str(&index, ix, sizeof ix), i);
            return NAN;
        }
        flat = flat * t->type.dim[i] + k;
    }
    if (report(t, EAGER_READ_VALUE, flat, &site))
        return NAN;
    return load(t, flat);
}

const void *eager_data_at(EAGER_SITE_PARAMS, const eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (eager_check(t, "data", &site) < 0)
        return NULL;
    if (report(t, EAGER_READ_BUFFER, -1, &site))
        return NULL;
    return t->data;
}

void *eager_data_mut_at(EAGER_SITE_PARAMS, eager_tensor *t)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (t == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "data_mut: no tensor (EAGER_NONE)");
        return NULL;
    }
    if (eager_check(t, "data_mut", &site) < 0)
        return NULL;
    if (report(t, EAGER_WRITE_BUFFER, -1, &site))
        return NULL;
    eager_tensor *owner = t->base ? t->base : t; /* a view writes its base's storage */
    if (owner->ag) { /* a recorded op may have saved it */
        owner->ag->version++;
        owner->ag->wsite = site;
    }
    return t->data;
}

/* ---- in-place writes and state ---- */

tg_status eager_assign_at(EAGER_SITE_PARAMS, eager_tensor *dst, eager_tensor *src)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (dst == EAGER_NONE || src == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "eager_assign: no tensor (EAGER_NONE) as the %s",
                        dst == EAGER_NONE ? "destination" : "source");
        return TG_ERR_NULL;
    }
    if (eager_check(dst, "eager_assign", &site) < 0 || eager_check(src, "eager_assign", &site) < 0)
        return dst && src ? TG_ERR_STATE : TG_ERR_NULL;
    if (!graph_type_eq(&dst->type, &src->type)) {
        char a[160], b[160];
        eager_set_error(TG_ERR_SHAPE, &site,
                        "eager_assign: the destination is %s %s, the source %s %s: an "
                        "in-place write keeps the destination's dtype and shape",
                        graph_dtype_name(dst->type.dtype), graph_shape_str(&dst->type, a, sizeof a),
                        graph_dtype_name(src->type.dtype), graph_shape_str(&src->type, b, sizeof b));
        return TG_ERR_SHAPE;
    }
    if (eager_tl_grad_on &&
        ((dst->flags & EAGER_T_REQGRAD) || (dst->ag && dst->ag->gnode))) {
        eager_set_error(TG_ERR_STATE, &site,
                        "eager_assign: the destination %s; an in-place write to it would "
                        "not be differentiable: write under eager_no_grad_begin()/"
                        "eager_no_grad_end(), as an optimizer step does",
                        (dst->flags & EAGER_T_REQGRAD)
                            ? "requires a gradient"
                            : "was computed from tensors that require gradients");
        return TG_ERR_STATE;
    }
    if (eager_tl_hooks && eager_tl_hooks->on_write) {
        tg_status st = eager_tl_hooks->on_write(eager_tl_hooks->ud, dst, src, &site);
        if (st != TG_OK)
            return st;
    }
    if (dst->data != src->data)
        memmove(dst->data, src->data, eager_nbytes(dst));
    eager_tensor *owner = dst->base ? dst->base : dst;
    if (owner->ag) { /* a recorded op may have saved it */
        owner->ag->version++;
        owner->ag->wsite = site;
    }
    return TG_OK;
}

tg_status eager_declare_state_at(EAGER_SITE_PARAMS, eager_tensor *t, const char *name)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (t == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "eager_declare_state: no tensor (EAGER_NONE)");
        return TG_ERR_NULL;
    }
    if (eager_check(t, "eager_declare_state", &site) < 0)
        return t ? TG_ERR_STATE : TG_ERR_NULL;
    if (!name || !*name) {
        eager_set_error(TG_ERR_ARG, &site, "eager_declare_state: a state needs a name");
        return TG_ERR_ARG;
    }
    if (eager_tl_hooks && eager_tl_hooks->on_state)
        return eager_tl_hooks->on_state(eager_tl_hooks->ud, t, name, &site);
    return TG_OK;
}
