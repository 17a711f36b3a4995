/* access.c - element reads, each reported to the hooks (tracer guards). */
#include <math.h>

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
