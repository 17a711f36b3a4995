/* guard.c - checking a guard against a value's data at replay. */
#include <math.h>
#include <string.h>

#include "graph.h"
#include "graph_impl.h"

static double element(const void *data, graph_dtype dt, int64_t i)
{
    switch (dt) {
    case GRAPH_F32: return ((const float *)data)[i];
    case GRAPH_I64: return (double)((const int64_t *)data)[i];
    case GRAPH_I32: return ((const int32_t *)data)[i];
    default: return ((const uint8_t *)data)[i];
    }
}

char *graph_guard_value_str(const graph *g, int32_t v, char *buf, size_t len)
{
    if (v < 0 || v >= g->nvalues) {
        snprintf(buf, len, "value %%%d (out of range)", v);
        return buf;
    }
    const graph_value *val = &g->values[v];
    if ((val->kind == GRAPH_VALUE_INPUT || val->kind == GRAPH_VALUE_PARAM) && val->name)
        snprintf(buf, len, "%s \"%s\"", graph_value_kind_name(val->kind), val->name);
    else if (val->kind == GRAPH_VALUE_INTER && val->node >= 0 && val->node < g->nnodes)
        snprintf(buf, len, "the %s result", graph_ops[g->nodes[val->node].op].name);
    else
        snprintf(buf, len, "a %s", graph_value_kind_name(val->kind));
    return buf;
}

/* "guard N" for gd when it is one of g's guards ("a guard" for a copy). */
static const char *guard_no(const graph *g, const graph_guard *gd, char *buf, size_t len)
{
    if (gd >= g->guards && gd < g->guards + g->nguards)
        snprintf(buf, len, "guard %d", (int)(gd - g->guards));
    else
        snprintf(buf, len, "a guard");
    return buf;
}

/* What to do instead, by what the trace recorded. */
#define PEEK_HINT "for a read that decides nothing (a debug print) use eager_peek, which records nothing"
#define POLICY_HINT "or trace with trace_opts.value_reads = GRAPH_GUARD_WARN (report only) or GRAPH_GUARD_OFF"
#define BOOL_HINT "eager_bool(eager_gt(t, eager_scalar(0)))"

/* A GRAPH_GUARD_SIZE guard: dim gd->index of the value's type now. */
static int size_check(const graph *g, const graph_guard *gd, const graph_type *type,
                      char *msg, size_t len)
{
    int64_t d = gd->index;
    int64_t now = d >= 0 && d < type->ndim ? type->dim[d] : -1;
    if ((double)now == gd->expect || gd->policy == GRAPH_GUARD_OFF)
        return 0;
    if (msg && len) {
        char site[300], what[160], sym[80] = "";
        graph_prov_str(g, gd->prov, site, sizeof site);
        graph_guard_value_str(g, gd->value, what, sizeof what);
        const graph_value *v = gd->value >= 0 && gd->value < g->nvalues ? &g->values[gd->value]
                                                                          : NULL;
        if (v && d >= 0 && d < v->type.ndim && (v->dyn >> d & 1) && v->sym[d] >= 0 &&
            v->sym[d] < g->nsyms)
            snprintf(sym, sizeof sym, " ('%s')", g->syms[v->sym[d]].name);
        snprintf(msg, len, "%s: %s was specialized on the traced sizes (a shape or constant "
                 "that does not follow the dim): dim %lld%s of %s was traced as %.0f and is "
                 "%lld in this run; a run at other sizes fails there",
                 gd->policy == GRAPH_GUARD_WARN ? "warn-policy guard changed" : "guard failed",
                 site, (long long)d, sym, what, gd->expect, (long long)now);
    }
    return gd->policy == GRAPH_GUARD_WARN ? 1 : 2;
}

int graph_guard_check(const graph *g, const graph_guard *gd,
                      const graph_type *type, const void *data, char *msg,
                      size_t len)
{
    if (g && gd && type && gd->kind == GRAPH_GUARD_SIZE)
        return size_check(g, gd, type, msg, len); /* the type alone */
    if (!g || !gd || !type || (!data && graph_type_numel(type) > 0)) {
        if (msg && len)
            snprintf(msg, len, "guard check: NULL %s", !g ? "graph" : !gd ? "guard"
                                                        : !type ? "type" : "data");
        return 2;
    }
    int64_t numel = graph_type_numel(type);
    int in_range = gd->index >= 0 && gd->index < numel;
    double v = 0;
    uint64_t hash = 0;
    int changed;
    if (gd->kind == GRAPH_GUARD_BUFFER) {
        size_t bytes = (size_t)numel * graph_dtype_size(type->dtype);
        hash = graph_hash_bytes(data, bytes);
        changed = hash != gd->hash;
    } else if (!in_range) {
        changed = 1;
    } else {
        v = element(data, type->dtype, gd->index);
        changed = gd->kind == GRAPH_GUARD_DECISION
                      ? (v != 0.0) != (gd->expect != 0.0)
                      : !(v == gd->expect || (isnan(v) && isnan(gd->expect)));
    }
    if (!changed || gd->policy == GRAPH_GUARD_OFF)
        return 0;
    if (!msg || !len)
        return gd->policy == GRAPH_GUARD_WARN ? 1 : 2;
    char site[300], what[160], now[96], no[32];
    graph_prov_str(g, gd->prov, site, sizeof site);
    graph_guard_value_str(g, gd->value, what, sizeof what);
    guard_no(g, gd, no, sizeof no);
    const char *head = gd->policy == GRAPH_GUARD_WARN
                           ? "warn-policy guard changed (the run went on; what the trace "
                             "derived from the read may be wrong)"
                           : "guard failed";
    if (gd->kind != GRAPH_GUARD_BUFFER && !in_range)
        snprintf(now, sizeof now, "replay's %s has %lld elements", gd->kind == GRAPH_GUARD_DECISION
                 ? "condition" : "tensor", (long long)numel);
    if (gd->kind == GRAPH_GUARD_DECISION) {
        if (in_range)
            snprintf(now, sizeof now, "replay's data makes it %s", v != 0.0 ? "true" : "false");
        snprintf(msg, len, "%s: the decision at %s (%s: eager_bool of %s) recorded the branch "
                 "taken, %s, and the trace followed that branch only; %s, a path the graph does "
                 "not hold: trace it with data that takes it, or compute both sides and pick "
                 "with eager_where",
                 head, site, no, what, gd->expect != 0.0 ? "true" : "false", now);
    } else if (gd->kind == GRAPH_GUARD_BUFFER) {
        snprintf(msg, len, "%s: the buffer read at %s (%s: eager_data of %s) recorded the hash "
                 "of all its data, %016llx, and replay's data differs (hash %016llx); " PEEK_HINT
                 "; if a branch depends on it, compute the condition as a tensor and read it "
                 "with eager_bool; " POLICY_HINT,
                 head, site, no, what, (unsigned long long)gd->hash, (unsigned long long)hash);
    } else {
        if (in_range)
            snprintf(now, sizeof now, "replay read %.9g", v);
        snprintf(msg, len, "%s: the value read at %s (%s: eager_item / eager_get) took element "
                 "%lld of %s and recorded its exact value %.9g; %s; if only the branch taken "
                 "on it matters, record the decision instead: eager_bool on a comparison ("
                 BOOL_HINT ") holds for all data that takes the same branch; " PEEK_HINT "; "
                 POLICY_HINT,
                 head, site, no, (long long)gd->index, what, gd->expect, now);
    }
    return gd->policy == GRAPH_GUARD_WARN ? 1 : 2;
}
