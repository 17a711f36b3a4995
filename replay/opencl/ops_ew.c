/*
 * ops_ew.c - OpenCL elementwise ops: unary (cl/ew_unary.cl), binary and
 * comparisons with broadcasting and where (cl/ew_binary.cl), cast
 * (cl/cast.cl), and the `fused` op (fused.c's programs).  One program per
 * element type, shared by every node of that type on the device.
 */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

/* ---- unary ---- */

/* The integer kernels of cl/ew_unary.cl (f32 unary ops run as generated
 * fused kernels: every unary op of graph/ew_ops.def). */
static const char *unary_kernel(graph_op op)
{
    switch (op) {
    case GRAPH_OP_neg: return "unary_neg";
    case GRAPH_OP_abs: return "unary_abs";
    case GRAPH_OP_sign: return "unary_sign";
    default: return NULL;
    }
}

static const char *type_opts(graph_dtype dt)
{
    switch (dt) {
    case GRAPH_F32:
        return "-DT=float -DTF";
    case GRAPH_I64:
        return "-DT=long -DU=ulong -DTI";
    case GRAPH_I32:
        return "-DT=int -DU=uint -DTI";
    default:
        return "-DT=uchar -DTB";
    }
}

static tg_status unary_prepare(ocl_prep *c)
{
    graph_dtype dt = c->in_type[0].dtype;
    graph_op op = c->node->op;
    if (dt != GRAPH_F32 && !unary_kernel(op))
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "dtype %s", graph_dtype_name(dt));
    if (dt == GRAPH_BOOL)
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "dtype bool");
    if (dt == GRAPH_F32)
        return ocl_fused_single_prepare(c);
    tg_status st = ocl_prep_program(c, "ew_unary", NULL, type_opts(dt));
    return st ? st : ocl_prep_kernel(c, unary_kernel(op));
}

static tg_status unary_enqueue(ocl_launch *l)
{
    if (l->out_type[0].dtype == GRAPH_F32)
        return ocl_fused_enqueue(l);
    size_t n = (size_t)graph_type_numel(&l->out_type[0]);
    tg_status st = ocl_set_args(l, l->k[0], "mml", l->in[0], l->out[0], (int64_t)n);
    return st ? st : ocl_run(l, l->k[0], 1, &n, NULL);
}

static const ocl_op unary_op = {unary_prepare, unary_enqueue};

/* ---- binary, comparisons: kernel pairs name / name_flat ---- */

typedef struct bin_names {
    graph_op op;
    const char *k, *flat;
} bin_names;

static const bin_names bins[] = {
    {GRAPH_OP_add, "bin_add", "bin_add_flat"},
    {GRAPH_OP_sub, "bin_sub", "bin_sub_flat"},
    {GRAPH_OP_mul, "bin_mul", "bin_mul_flat"},
    {GRAPH_OP_div, "bin_div", "bin_div_flat"},
    {GRAPH_OP_pow, "bin_pow", "bin_pow_flat"},
    {GRAPH_OP_maximum, "bin_maximum", "bin_maximum_flat"},
    {GRAPH_OP_minimum, "bin_minimum", "bin_minimum_flat"},
    {GRAPH_OP_eq, "cmp_eq", "cmp_eq_flat"},
    {GRAPH_OP_lt, "cmp_lt", "cmp_lt_flat"},
    {GRAPH_OP_gt, "cmp_gt", "cmp_gt_flat"},
};

static tg_status binary_prepare(ocl_prep *c)
{
    graph_dtype dt = c->in_type[0].dtype;
    graph_op op = c->node->op;
    const bin_names *b = NULL;
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++)
        if (bins[i].op == op)
            b = &bins[i];
    /* the binary ops of graph/ew_ops.def (add sub mul div pow maximum
     * minimum ...) on f32 */
    if (dt == GRAPH_F32 && c->out_type[0].dtype == GRAPH_F32 && fused_op_ok(op, NULL))
        return ocl_fused_single_prepare(c);
    if (!b || (op == GRAPH_OP_pow && dt != GRAPH_F32) ||
        (dt == GRAPH_BOOL && op != GRAPH_OP_eq))
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "dtype %s", graph_dtype_name(dt));
    tg_status st = ocl_prep_program(c, "ew_binary", NULL, type_opts(dt));
    if (dt == GRAPH_BOOL)
        return st ? st : (st = ocl_prep_kernel(c, "cmp_eq_bool")) ? st
                                                                : ocl_prep_kernel(c, "cmp_eq_bool_flat");
    if (!st)
        st = ocl_prep_kernel(c, b->k);
    if (!st)
        st = ocl_prep_kernel(c, b->flat);
    if (op == GRAPH_OP_div && dt != GRAPH_F32)
        c->flag_msg = "integer division by zero";
    return st;
}

static tg_status binary_enqueue(ocl_launch *l)
{
    if (l->in_type[0].dtype == GRAPH_F32 && l->out_type[0].dtype == GRAPH_F32)
        return ocl_fused_enqueue(l);
    ocl_bcast b;
    size_t n = (size_t)graph_type_numel(&l->out_type[0]);
    if (ocl_bcast_plan(&l->out_type[0], l->in_type, 2, &b) < 0)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    tg_status st;
    cl_kernel k;
    if (b.nd == 1) {
        k = l->k[1];
        st = ocl_set_args(l, k, "mmmliimi", l->in[0], l->in[1], l->out[0], (int64_t)n,
                          (int)b.st[0][0], (int)b.st[1][0], l->flag, l->code);
    } else {
        k = l->k[0];
        st = ocl_set_args(l, k, "mmmlivvvmi", l->in[0], l->in[1], l->out[0], (int64_t)n,
                          b.nd, b.dims, b.st[0], b.st[1], l->flag, l->code);
    }
    return st ? st : ocl_run(l, k, 1, &n, NULL);
}

static const ocl_op binary_op = {binary_prepare, binary_enqueue};

/* ---- where: by element size ---- */

static const char *size_opts(graph_dtype dt)
{
    size_t s = graph_dtype_size(dt);
    return s == 8 ? "-DT=ulong" : s == 4 ? "-DT=uint" : "-DT=uchar";
}

static tg_status where_prepare(ocl_prep *c)
{
    tg_status st = ocl_prep_program(c, "ew_binary", NULL, size_opts(c->in_type[1].dtype));
    return st ? st : ocl_prep_kernel(c, "where_k");
}

static tg_status where_enqueue(ocl_launch *l)
{
    ocl_bcast b;
    size_t n = (size_t)graph_type_numel(&l->out_type[0]);
    if (ocl_bcast_plan(&l->out_type[0], l->in_type, 3, &b) < 0)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    tg_status st = ocl_set_args(l, l->k[0], "mmmmlivvvv", l->in[0], l->in[1], l->in[2],
                                l->out[0], (int64_t)n, b.nd, b.dims, b.st[0], b.st[1], b.st[2]);
    return st ? st : ocl_run(l, l->k[0], 1, &n, NULL);
}

static const ocl_op where_op = {where_prepare, where_enqueue};

/* ---- cast ---- */

/* The conversion expression, as the CPU does it (eager/kernels_cast.c). */
static const char *cast_expr(graph_dtype from, graph_dtype to)
{
    if (to == GRAPH_BOOL)
        return "(uchar)(x!=0)";
    if (from == GRAPH_BOOL)
        return to == GRAPH_F32 ? "(x!=0?1.0f:0.0f)" : "(TO)(x!=0)";
    if (from == GRAPH_F32 && to == GRAPH_I32)
        return "convert_int_sat_rtz(x)";
    if (from == GRAPH_F32 && to == GRAPH_I64)
        return "convert_long_sat_rtz(x)";
    if (from == GRAPH_I64 && to == GRAPH_I32)
        return "convert_int_sat(x)";
    if (to == GRAPH_F32)
        return "convert_float_rte(x)";
    return "(TO)(x)";
}

static tg_status cast_prepare(ocl_prep *c)
{
    graph_dtype from = c->in_type[0].dtype, to = c->out_type[0].dtype;
    char opts[200];
    snprintf(opts, sizeof opts, "-DTI=%s -DTO=%s -D\"CAST(x)=%s\"", ocl_ctype(from),
             ocl_ctype(to), cast_expr(from, to));
    tg_status st = ocl_prep_program(c, "cast", NULL, opts);
    return st ? st : ocl_prep_kernel(c, "cast_k");
}

static tg_status cast_enqueue(ocl_launch *l)
{
    size_t n = (size_t)graph_type_numel(&l->out_type[0]);
    tg_status st = ocl_set_args(l, l->k[0], "mml", l->in[0], l->out[0], (int64_t)n);
    return st ? st : ocl_run(l, l->k[0], 1, &n, NULL);
}

static const ocl_op cast_op = {cast_prepare, cast_enqueue};

/* ---- fused: its program generated, built and run by fused.c ---- */

static const ocl_op fused_op = {ocl_fused_prepare, ocl_fused_enqueue};

void ocl_register_ew(const ocl_op **t)
{
    int nargs;
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        if (fused_op_ok((graph_op)op, &nargs))
            t[op] = nargs == 1 ? &unary_op : &binary_op;
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++)
        t[bins[i].op] = &binary_op;
    t[GRAPH_OP_where] = &where_op;
    t[GRAPH_OP_cast] = &cast_op;
    t[GRAPH_OP_fused] = &fused_op;
}
