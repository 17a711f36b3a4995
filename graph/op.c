/* op.c - the registry table built from ops.def, and the generic checks. */
#include "op.h"
#include "infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Attribute descriptors.  offsetof needs the struct type inside the
 * A_* macros, which do not know the op, so each op gets a function with a
 * block-scope typedef ATTR_T_ and a static descriptor array.
 */
#define A_I64(n, d) {#n, GRAPH_ATTR_I64, offsetof(ATTR_T_, n), (double)(d)},
#define A_F32(n, d) {#n, GRAPH_ATTR_F32, offsetof(ATTR_T_, n), (double)(d)},
#define A_INTS(n) {#n, GRAPH_ATTR_INTS, offsetof(ATTR_T_, n), 0.0},
#define A_DTYPE(n, d) {#n, GRAPH_ATTR_DTYPE, offsetof(ATTR_T_, n), (double)(d)},
#define A_STR(n) {#n, GRAPH_ATTR_STR, offsetof(ATTR_T_, n), 0.0},
#define OP(...)
#define OPA(name, v, mi, ma, no, p, dt, inf, attrs)                         \
    static const graph_attr_desc *name##_attr_descs(void)                   \
    {                                                                       \
        typedef graph_##name##_attrs ATTR_T_;                               \
        static const graph_attr_desc d[] = {attrs};                         \
        return d;                                                           \
    }
#include "ops.def"
#undef OP
#undef OPA
#undef A_I64
#undef A_F32
#undef A_INTS
#undef A_DTYPE
#undef A_STR

#define A_I64(n, d) +1
#define A_F32(n, d) +1
#define A_INTS(n) +1
#define A_DTYPE(n, d) +1
#define A_STR(n) +1
const graph_op_info graph_ops[GRAPH_OP_COUNT] = {
#define OP(name, ver, mi, ma, no, pr, dt, inf)                              \
    [GRAPH_OP_##name] = {#name, ver, mi, ma, no, pr, dt, inf, 0, 0, NULL},
#define OPA(name, ver, mi, ma, no, pr, dt, inf, attrs)                      \
    [GRAPH_OP_##name] = {#name, ver, mi, ma, no, pr, dt, inf,              \
                         sizeof(graph_##name##_attrs), 0 attrs,             \
                         name##_attr_descs},
#include "ops.def"
#undef OP
#undef OPA
};
#undef A_I64
#undef A_F32
#undef A_INTS
#undef A_DTYPE
#undef A_STR

const graph_op_info *graph_op_get(graph_op op)
{
    return (unsigned)op < GRAPH_OP_COUNT ? &graph_ops[op] : NULL;
}

graph_op graph_op_find(const char *name, size_t len)
{
    if (!name)
        return GRAPH_OP_COUNT;
    for (int i = 0; i < GRAPH_OP_COUNT; i++) {
        const char *n = graph_ops[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return (graph_op)i;
    }
    return GRAPH_OP_COUNT;
}

void graph_attrs_default(graph_op op, void *attrs)
{
    const graph_op_info *info = graph_op_get(op);
    if (!info || !info->attr_size || !attrs)
        return;
    memset(attrs, 0, info->attr_size);
    const graph_attr_desc *d = info->attr_descs();
    for (int i = 0; i < info->nattrs; i++) {
        char *field = (char *)attrs + d[i].offset;
        switch (d[i].kind) {
        case GRAPH_ATTR_I64:
            *(int64_t *)field = (int64_t)d[i].def_value;
            break;
        case GRAPH_ATTR_F32:
            *(float *)field = (float)d[i].def_value;
            break;
        case GRAPH_ATTR_DTYPE:
            *(graph_dtype *)field = (graph_dtype)(int)d[i].def_value;
            break;
        case GRAPH_ATTR_INTS:
        case GRAPH_ATTR_STR:
            break; /* zeroed above: empty list, empty string */
        }
    }
}

tg_status graph_infer_fail(graph_infer_ctx *c, tg_status status,
                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c->err && c->errlen)
        vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return status;
}

int graph_axis(int64_t axis, int ndim)
{
    if (axis < 0)
        axis += ndim;
    return (axis < 0 || axis >= ndim) ? -1 : (int)axis;
}

tg_status graph_broadcast(const graph_type *a, const graph_type *b,
                          graph_type *out)
{
    if (!a || !b || !out)
        return TG_ERR_NULL;
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = nd;
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
        int64_t da = ia >= 0 ? a->dim[ia] : 1;
        int64_t db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return TG_ERR_SHAPE;
        out->dim[i] = da == 1 ? db : da;
    }
    return TG_OK;
}

/* "[2,3] x [3,4]" for the inputs, for error messages. */
static void inputs_str(const graph_type *in, int nin, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < nin && used + 1 < len; i++) {
        char s[160];
        graph_shape_str(&in[i], s, sizeof s);
        used += (size_t)snprintf(buf + used, len - used, "%s%s%s",
                                 i ? " x " : "",
                                 in[i].dtype == GRAPH_F32
                                     ? ""
                                     : graph_dtype_name(in[i].dtype),
                                 s);
    }
}

/* Input types that did not come through graph_infer (a loaded file, a
 * caller's tensor) are held to the same cap before any infer function
 * does arithmetic on their dims. */
static tg_status check_inputs(graph_infer_ctx *c)
{
    for (int i = 0; i < c->nin; i++) {
        char why[200];
        tg_status st = graph_type_check(&c->in[i], why, sizeof why);
        if (st != TG_OK)
            return graph_infer_fail(c, st, "input %d: %s", i, why);
    }
    return TG_OK;
}

tg_status graph_infer(graph_op op, const graph_type *in, int nin,
                      const void *attrs, graph_type *out, int max_out,
                      int *nout, char *err, size_t errlen)
{
    const graph_op_info *info = graph_op_get(op);
    char reason[256] = "";
    char shapes[512];
    graph_infer_ctx c = {info, in, nin, attrs, out, max_out, 0, reason,
                         sizeof reason};
    tg_status st;

    if (!info) {
        if (err && errlen)
            snprintf(err, errlen, "graph_infer: invalid op %d", (int)op);
        return TG_ERR_ARG;
    }
    if ((nin > 0 && !in) || (max_out > 0 && !out) || !nout) {
        if (err && errlen)
            snprintf(err, errlen, "%s: graph_infer given NULL %s", info->name,
                     !nout ? "nout" : nin > 0 && !in ? "inputs" : "outputs");
        return TG_ERR_NULL;
    }
    if (nin < info->min_in || (info->max_in >= 0 && nin > info->max_in))
        st = graph_infer_fail(&c, TG_ERR_ARG, "takes %d%s inputs, got %d",
                              info->min_in,
                              info->max_in < 0 ? " or more"
                              : info->max_in > info->min_in ? "+" : "",
                              nin);
    else if (nin > 0 && !(info->dtypes & GRAPH_DT_BIT(in[0].dtype)))
        st = graph_infer_fail(&c, TG_ERR_DTYPE, "dtype %s not supported",
                              graph_dtype_name(in[0].dtype));
    else if ((st = check_inputs(&c)) != TG_OK)
        ;
    else if (info->nout > max_out)
        st = graph_infer_fail(&c, TG_ERR_ARG, "needs room for %d outputs",
                              info->nout);
    else {
        c.nout = info->nout;
        st = info->infer(&c);
        /* The one place every op's output shapes pass: no layer after this
         * (allocator, memory planner, kernels) sees a type whose size wraps. */
        for (int i = 0; st == TG_OK && i < c.nout; i++) {
            char why[200];
            if (graph_type_check(&out[i], why, sizeof why) != TG_OK)
                st = graph_infer_fail(&c, TG_ERR_SHAPE, "output %d: %s", i, why);
        }
    }
    if (st != TG_OK) {
        if (err && errlen) {
            inputs_str(in, nin, shapes, sizeof shapes);
            snprintf(err, errlen, "%s: %s: %s", info->name, shapes, reason);
        }
        return st;
    }
    *nout = c.nout;
    return TG_OK;
}
