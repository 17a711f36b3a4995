#include "dtype.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[] = {
#define DTYPE_INFO_(up, low, ctype, size) {#low, size},
    GRAPH_DTYPE_LIST(DTYPE_INFO_)
#undef DTYPE_INFO_
};

const char *graph_dtype_name(graph_dtype dt)
{
    return (unsigned)dt < GRAPH_DTYPE_COUNT ? dtype_info[dt].name : "?";
}


int graph_dtype_parse(const char *name, size_t len, graph_dtype *out)
{
    if (!name || !out)
        return -1;
    for (int i = 0; i < GRAPH_DTYPE_COUNT; i++) {
        if (strlen(dtype_info[i].name) == len &&
            memcmp(dtype_info[i].name, name, len) == 0) {
            *out = (graph_dtype)i;
            return 0;
        }
    }
    return -1;
}


static char *ints_str(const int64_t *v, int n, char *buf, size_t len)
{
    size_t used = 0;
    if (!buf || len == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? ",%lld" : "%lld",
                                 (long long)v[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

char *graph_shape_str(const graph_type *t, char *buf, size_t len)
{
    if (!t || t->ndim < 0 || t->ndim > GRAPH_MAX_DIMS) {
        /* never read past dim[]: a caller's bad ndim is printed, not used */
        if (buf && len)
            snprintf(buf, len, t ? "[? %d dims]" : "[?]", t ? (int)t->ndim : 0);
        return buf;
    }
    return ints_str(t->dim, t->ndim, buf, len);
}

char *graph_ints_str(const graph_ints *v, char *buf, size_t len)
{
    if (!v || v->n < 0 || v->n > GRAPH_MAX_INTS) {
        if (buf && len)
            snprintf(buf, len, v ? "[? %d entries]" : "[?]", v ? (int)v->n : 0);
        return buf;
    }
    return ints_str(v->v, v->n, buf, len);
}

tg_status graph_type_check(const graph_type *t, char *err, size_t errlen)
{
    char shape[GRAPH_MAX_DIMS * 22 + 4];
    if (!t) {
        if (err && errlen)
            snprintf(err, errlen, "no type (NULL)");
        return TG_ERR_NULL;
    }
    if ((unsigned)t->dtype >= GRAPH_DTYPE_COUNT) {
        if (err && errlen)
            snprintf(err, errlen, "invalid dtype %d", (int)t->dtype);
        return TG_ERR_DTYPE;
    }
    if (t->ndim < 0 || t->ndim > GRAPH_MAX_DIMS) {
        if (err && errlen)
            snprintf(err, errlen, "%d dims (at most %d)", (int)t->ndim, GRAPH_MAX_DIMS);
        return TG_ERR_SHAPE;
    }
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->dim[i] < 0) {
            if (err && errlen)
                snprintf(err, errlen, "dim %d of %s is negative", i,
                         graph_shape_str(t, shape, sizeof shape));
            return TG_ERR_SHAPE;
        }
        /* n <= 2^40 so far: the product overflows int64 or passes the cap
         * exactly when the dim is too large (no division on this path,
         * which every eager op takes for its inputs and outputs) */
        if (t->dim[i] > 1 &&
            (__builtin_mul_overflow(n, t->dim[i], &n) || n > GRAPH_MAX_NUMEL)) {
            if (err && errlen)
                snprintf(err, errlen, "shape %s is too large (at most 2^40 elements, a 0 dim "
                         "counted as 1)", graph_shape_str(t, shape, sizeof shape));
            return TG_ERR_SHAPE;
        }
    }
    return TG_OK;
}
