/* create.c - tensor creation functions and the documented PRNG. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Allocates, registers with the hooks and the pool. */
static eager_tensor *finish(eager_tensor *t, const eager_site *site)
{
    if (!t)
        return NULL;
    if (eager_pool_reserve(1) < 0) {
        eager_release(t);
        return NULL;
    }
    if (eager_tl_hooks && eager_tl_hooks->on_create &&
        eager_tl_hooks->on_create(eager_tl_hooks->ud, t, site) != TG_OK) {
        eager_release(t);
        return NULL;
    }
    eager_pool_adopt(t); /* cannot fail: room reserved above */
    return t;
}

static eager_tensor *make(graph_dtype dt, const graph_ints *shape,
                          const char *what, const eager_site *site)
{
    graph_type ty;
    if (eager_make_type(dt, shape, &ty, what, site) < 0)
        return NULL;
    return eager_alloc(&ty, site);
}

eager_tensor *eager_empty_at(EAGER_SITE_PARAMS, graph_dtype dt,
                             graph_ints shape)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_tensor *t = make(dt, &shape, "empty", &site);
    if (t)
        memset(t->data, 0, eager_nbytes(t)); /* no uninitialized reads */
    return finish(t, &site);
}

/*
 * value as an integer of [lo, hi] the way the cast op converts a float
 * (kernels_cast.c): truncated toward zero, NaN -> 0, beyond the range
 * saturated (+-inf included).  lim is 2^31 or 2^63, exact as a double.
 */
static int64_t to_int(double value, double lim, int64_t lo, int64_t hi)
{
    if (value != value)
        return 0;
    if (value >= lim)
        return hi;
    if (value < -lim)
        return lo;
    return (int64_t)value;
}

/* Stores value into element i of data, converted to dt as cast does. */
static void store(void *data, graph_dtype dt, int64_t i, double value)
{
    switch (dt) {
    case GRAPH_F32: ((float *)data)[i] = (float)value; break;
    case GRAPH_I64:
        ((int64_t *)data)[i] = to_int(value, 0x1p63, INT64_MIN, INT64_MAX);
        break;
    case GRAPH_I32:
        ((int32_t *)data)[i] = (int32_t)to_int(value, 0x1p31, INT32_MIN, INT32_MAX);
        break;
    case GRAPH_BOOL: ((uint8_t *)data)[i] = value != 0.0; break;
    default: break;
    }
}

eager_tensor *eager_full_at(EAGER_SITE_PARAMS, graph_dtype dt,
                            graph_ints shape, double value)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_tensor *t = make(dt, &shape, "full", &site);
    if (t) {
        if (dt == GRAPH_F32) {
            float v = (float)value, *p = t->data;
            for (int64_t i = 0; i < t->numel; i++)
                p[i] = v;
        } else {
            for (int64_t i = 0; i < t->numel; i++)
                store(t->data, dt, i, value);
        }
    }
    return finish(t, &site);
}

eager_tensor *eager_from_data_at(EAGER_SITE_PARAMS, graph_dtype dt,
                                 graph_ints shape, const void *data)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!data) {
        eager_set_error(TG_ERR_NULL, &site, "from_data: data is NULL");
        return NULL;
    }
    eager_tensor *t = make(dt, &shape, "from_data", &site);
    if (t)
        memcpy(t->data, data, eager_nbytes(t));
    return finish(t, &site);
}

eager_tensor *eager_arange_at(EAGER_SITE_PARAMS, graph_dtype dt, double start,
                              double stop, double step)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (step == 0.0 || !isfinite(start) || !isfinite(stop) ||
        !isfinite(step)) {
        eager_set_error(TG_ERR_ARG, &site,
                        "arange: start %g, stop %g, step %g: step must be "
                        "nonzero and all finite", start, stop, step);
        return NULL;
    }
    double count = ceil((stop - start) / step);
    if (count < 0)
        count = 0;
    if (count > (double)(INT64_C(1) << 40)) {
        eager_set_error(TG_ERR_ARG, &site, "arange: %g elements is too many",
                        count);
        return NULL;
    }
    graph_ints shape = TG_INTS((int64_t)count);
    eager_tensor *t = make(dt, &shape, "arange", &site);
    if (t)
        for (int64_t i = 0; i < t->numel; i++)
            store(t->data, dt, i, start + (double)i * step);
    return finish(t, &site);
}

/* SplitMix64 (Steele, Lea, Flood 2014): a counter-based generator. */
static uint64_t splitmix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* Uniform in [0,1) from element i's 64 random bits (top 24 bits). */
static double unit(uint64_t seed, int64_t i)
{
    uint64_t bits = splitmix64(seed + (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15));
    return (double)(bits >> 40) * (1.0 / 16777216.0);
}

eager_tensor *eager_rand_uniform_at(EAGER_SITE_PARAMS, graph_ints shape,
                                    uint64_t seed, float lo, float hi)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_tensor *t = make(GRAPH_F32, &shape, "rand_uniform", &site);
    if (t) {
        float *p = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            p[i] = (float)(lo + (hi - lo) * unit(seed, i));
    }
    return finish(t, &site);
}

eager_tensor *eager_rand_normal_at(EAGER_SITE_PARAMS, graph_ints shape,
                                   uint64_t seed, float mean, float std)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_tensor *t = make(GRAPH_F32, &shape, "rand_normal", &site);
    if (t) {
        float *p = t->data;
        const double two_pi = 6.283185307179586;
        for (int64_t i = 0; i < t->numel; i += 2) {
            /* 1 - u keeps the log argument in (0,1]. */
            double r = sqrt(-2.0 * log(1.0 - unit(seed, i)));
            double th = two_pi * unit(seed, i + 1);
            p[i] = (float)(mean + std * r * cos(th));
            if (i + 1 < t->numel)
                p[i + 1] = (float)(mean + std * r * sin(th));
        }
    }
    return finish(t, &site);
}
