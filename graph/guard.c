/* guard.c - checking a guard against a value's data at replay. */
#include <math.h>
#include <string.h>

#include "graph.h"

static double element(const void *data, graph_dtype dt, int64_t i)
{
    switch (dt) {
    case GRAPH_F32: return ((const float *)data)[i];
    case GRAPH_I64: return (double)((const int64_t *)data)[i];
    case GRAPH_I32: return ((const int32_t *)data)[i];
    default: return ((const uint8_t *)data)[i];
    }
}

static const char *guard_what(graph_guard_kind k)
{
    return k == GRAPH_GUARD_DECISION ? "decision" : k == GRAPH_GUARD_BUFFER
                                                        ? "buffer read"
                                                        : "value read";
}

int graph_guard_check(const graph *g, const graph_guard *gd,
                      const graph_type *type, const void *data, char *msg,
                      size_t len)
{
    char site[300], now[64], then[64];
    if (!g || !gd || !type || (!data && graph_type_numel(type) > 0)) {
        if (msg && len)
            snprintf(msg, len, "guard check: NULL %s", !g ? "graph" : !gd ? "guard"
                                                        : !type ? "type" : "data");
        return 2;
    }
    int64_t numel = graph_type_numel(type);
    int changed;
    if (gd->kind == GRAPH_GUARD_BUFFER) {
        size_t bytes = (size_t)numel * graph_dtype_size(type->dtype);
        changed = graph_hash_bytes(data, bytes) != gd->hash;
        snprintf(then, sizeof then, "hash %016llx", (unsigned long long)gd->hash);
        snprintf(now, sizeof now, "different data");
    } else if (gd->index < 0 || gd->index >= numel) {
        changed = 1;
        snprintf(then, sizeof then, "%.9g", gd->expect);
        snprintf(now, sizeof now, "out of range (%lld elements)", (long long)numel);
    } else {
        double v = element(data, type->dtype, gd->index);
        changed = gd->kind == GRAPH_GUARD_DECISION
                      ? (v != 0.0) != (gd->expect != 0.0)
                      : !(v == gd->expect || (isnan(v) && isnan(gd->expect)));
        snprintf(then, sizeof then, "%.9g", gd->expect);
        snprintf(now, sizeof now, "%.9g", v);
    }
    if (!changed || gd->policy == GRAPH_GUARD_OFF)
        return 0;
    graph_prov_str(g, gd->prov, site, sizeof site);
    if (gd->policy == GRAPH_GUARD_WARN) {
        snprintf(msg, len, "%s at %s was %s when traced, now %s",
                 guard_what(gd->kind), site, then, now);
        return 1;
    }
    snprintf(msg, len, "guard failed: the %s at %s was %s when traced and is %s "
             "now; the trace followed a branch that depends on it",
             guard_what(gd->kind), site, then, now);
    return 2;
}
