/*
 * onnx_read_compose.c - ONNX ops that tracegraph writes as a few of its
 * own: the reductions beyond sum/mean/max and the activations beyond its
 * unary ops, each by the formula the ONNX operator spec gives, so the
 * optimizer sees (and fuses) plain elementwise ops and reductions; Trilu
 * as a select by a constant mask; DepthToSpace and SpaceToDepth as the
 * reshape, transpose, reshape the spec defines them by; Hardmax through
 * argmax.
 */
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"

/* y = where(c, a, b). */
static tg_status select3(onnx_reader *r, int32_t c, int32_t a, int32_t b, int32_t *y)
{
    int32_t in[3] = {c, a, b};
    return onnx_add(r, GRAPH_OP_where, in, 3, NULL, y, 1);
}

/*
 * ReduceMin = -max(-x); ReduceSumSquare = sum(x * x); ReduceL1 =
 * sum(|x|); ReduceL2 = sqrt(sum(x * x)); ReduceLogSum = log(sum(x));
 * ReduceLogSumExp = log(sum(exp(x))) (the spec's formula, which
 * overflows where it does).
 */
tg_status onnx_cv_reduce_composite(onnx_reader *r, const onnx_op *op)
{
    const char *name = op->name + 6; /* past "Reduce" */
    int is_min = !strcmp(name, "Min");
    graph_ints axes;
    int64_t keep;
    int noop;
    int32_t x;
    tg_status st = onnx_reduce_args(r, 0, &axes, &keep, &noop);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    if (noop) /* "the output tensor would be equivalent to input tensor" */
        return onnx_bind(r, 0, x);
    if (is_min && (st = onnx_refuse_empty_extreme(r, x, &axes, 0)) != TG_OK)
        return st;
    /* before the reduction */
    if (is_min)
        st = onnx_op2(r, GRAPH_OP_neg, x, -1, NULL, &x);
    else if (!strcmp(name, "SumSquare") || !strcmp(name, "L2"))
        st = onnx_op2(r, GRAPH_OP_mul, x, x, NULL, &x);
    else if (!strcmp(name, "L1"))
        st = onnx_op2(r, GRAPH_OP_abs, x, -1, NULL, &x);
    else if (!strcmp(name, "LogSumExp"))
        st = onnx_op2(r, GRAPH_OP_exp, x, -1, NULL, &x);
    graph_reduce_sum_attrs a = {axes, keep != 0}; /* reduce_max's layout too */
    if (st == TG_OK)
        st = onnx_op2(r, is_min ? GRAPH_OP_reduce_max : GRAPH_OP_reduce_sum, x, -1, &a, &x);
    /* after it */
    if (st == TG_OK && is_min)
        st = onnx_op2(r, GRAPH_OP_neg, x, -1, NULL, &x);
    else if (st == TG_OK && !strcmp(name, "L2"))
        st = onnx_op2(r, GRAPH_OP_sqrt, x, -1, NULL, &x);
    else if (st == TG_OK && !strncmp(name, "LogSum", 6))
        st = onnx_op2(r, GRAPH_OP_log, x, -1, NULL, &x);
    return st == TG_OK ? onnx_bind(r, 0, x) : st;
}

/* alpha * (exp(x) - 1), the negative side of Elu and Selu. */
static tg_status expm1_scaled(onnx_reader *r, int32_t x, float alpha, int32_t *y)
{
    tg_status st = onnx_op2(r, GRAPH_OP_exp, x, -1, NULL, y);
    if (st == TG_OK)
        st = onnx_op_k(r, GRAPH_OP_sub, *y, 1.0, y);
    return st == TG_OK ? onnx_op_k(r, GRAPH_OP_mul, *y, alpha, y) : st;
}

/* clip(alpha * x + beta, 0, 1). */
static tg_status hard_sigmoid(onnx_reader *r, int32_t x, float alpha, float beta, int32_t *y)
{
    graph_clip_attrs c = {0.0f, 1.0f};
    tg_status st = onnx_op_k(r, GRAPH_OP_mul, x, alpha, y);
    if (st == TG_OK)
        st = onnx_op_k(r, GRAPH_OP_add, *y, beta, y);
    return st == TG_OK ? onnx_op2(r, GRAPH_OP_clip, *y, -1, &c, y) : st;
}

/* Elu, Selu, Celu, ThresholdedRelu: y = where(x cmp t, pos, neg). */
static tg_status piecewise(onnx_reader *r, const char *name, int32_t x, int32_t *y)
{
    float alpha, gamma = 1.0f;
    int selu = !strcmp(name, "Selu"), thr = !strcmp(name, "ThresholdedRelu");
    tg_status st = onnx_attr_float(r, "alpha", selu ? 1.67326319217681884765625f : 1.0f, &alpha);
    if (st == TG_OK && selu)
        st = onnx_attr_float(r, "gamma", 1.05070102214813232421875f, &gamma);
    int32_t c, neg, pos = x;
    if (st != TG_OK)
        return st;
    if (thr) { /* x > alpha ? x : 0 */
        st = onnx_op_k(r, GRAPH_OP_gt, x, alpha, &c);
        if (st == TG_OK)
            st = onnx_scalar(r, GRAPH_F32, 0.0, &neg);
        return st == TG_OK ? select3(r, c, x, neg, y) : st;
    }
    if (!strcmp(name, "Celu")) { /* max(0, x) + min(0, alpha (exp(x / alpha) - 1)) */
        int32_t t;
        st = onnx_op_k(r, GRAPH_OP_div, x, alpha, &t);
        if (st == TG_OK)
            st = expm1_scaled(r, t, alpha, &t);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_minimum, t, 0.0, &t);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_maximum, x, 0.0, &pos);
        return st == TG_OK ? onnx_op2(r, GRAPH_OP_add, pos, t, NULL, y) : st;
    }
    /* Elu: x < 0 ? alpha (e^x - 1) : x;  Selu: gamma (x <= 0 ? alpha (e^x - 1) : x) */
    st = onnx_op_k(r, selu ? GRAPH_OP_gt : GRAPH_OP_lt, x, 0.0, &c);
    if (st == TG_OK)
        st = expm1_scaled(r, x, alpha, &neg);
    if (st == TG_OK)
        st = selu ? select3(r, c, x, neg, y) : select3(r, c, neg, x, y);
    if (st == TG_OK && selu)
        st = onnx_op_k(r, GRAPH_OP_mul, *y, gamma, y);
    return st;
}

/*
 * PRelu = where(x < 0, x * slope, x); HardSigmoid; HardSwish =
 * x * HardSigmoid(x) with alpha 1/6, beta 1/2; Gelu; Swish; Softsign =
 * x / (1 + |x|);
 * and the piecewise ones above.  (Softplus is the op softplus: the unary
 * ops of graph/ew_ops.def are read as themselves, onnx_read_ops.c.)
 */
tg_status onnx_cv_activation(onnx_reader *r, const onnx_op *op)
{
    const char *name = op->name;
    int32_t x, y, t, c;
    tg_status st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    if (!strcmp(name, "PRelu")) {
        int32_t slope;
        st = onnx_input(r, 1, &slope);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_mul, x, slope, NULL, &t);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_lt, x, 0.0, &c);
        if (st == TG_OK)
            st = select3(r, c, t, x, &y);
    } else if (!strcmp(name, "HardSigmoid") || !strcmp(name, "HardSwish")) {
        int swish = name[4] == 'S' && name[5] == 'w';
        float alpha = 1.0f / 6.0f, beta = 0.5f;
        if (!swish)
            st = onnx_attr_float(r, "alpha", 0.2f, &alpha);
        if (st == TG_OK && !swish)
            st = onnx_attr_float(r, "beta", 0.5f, &beta);
        if (st == TG_OK)
            st = hard_sigmoid(r, x, alpha, beta, &y);
        if (st == TG_OK && swish)
            st = onnx_op2(r, GRAPH_OP_mul, x, y, NULL, &y);
    } else if (!strcmp(name, "Gelu") || !strcmp(name, "Swish")) {
        /* Gelu (opset 20): approximate 'none' is the op gelu, 'tanh'
         * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); Swish (opset
         * 24): x sigmoid(alpha x), the op silu at alpha 1. */
        int gelu = name[0] == 'G';
        char approx[16] = "none";
        float alpha = 1.0f;
        if (r->opset < (gelu ? 20 : 24))
            return onnx_fail(r, TG_ERR_FORMAT, "%s needs opset %d (the model has %lld)", name,
                             gelu ? 20 : 24, LL(r->opset));
        st = gelu ? onnx_attr_str(r, "approximate", "none", approx, sizeof approx)
                  : onnx_attr_float(r, "alpha", 1.0f, &alpha);
        if (st == TG_OK && gelu && strcmp(approx, "none") && strcmp(approx, "tanh"))
            st = onnx_fail(r, TG_ERR_FORMAT, "approximate '%s' (none or tanh)", approx);
        if (st == TG_OK && gelu && !strcmp(approx, "none")) {
            st = onnx_op2(r, GRAPH_OP_gelu, x, -1, NULL, &y);
        } else if (st == TG_OK && gelu) {
            st = onnx_op2(r, GRAPH_OP_mul, x, x, NULL, &t);
            if (st == TG_OK)
                st = onnx_op2(r, GRAPH_OP_mul, t, x, NULL, &t);
            if (st == TG_OK)
                st = onnx_op_k(r, GRAPH_OP_mul, t, 0.044715, &t);
            if (st == TG_OK)
                st = onnx_op2(r, GRAPH_OP_add, x, t, NULL, &t);
            if (st == TG_OK)
                st = onnx_op_k(r, GRAPH_OP_mul, t, 0.7978845608028654, &t); /* sqrt(2/pi) */
            if (st == TG_OK)
                st = onnx_op2(r, GRAPH_OP_tanh, t, -1, NULL, &t);
            if (st == TG_OK)
                st = onnx_op_k(r, GRAPH_OP_add, t, 1.0, &t);
            if (st == TG_OK)
                st = onnx_op_k(r, GRAPH_OP_mul, x, 0.5, &c);
            if (st == TG_OK)
                st = onnx_op2(r, GRAPH_OP_mul, c, t, NULL, &y);
        } else if (st == TG_OK && alpha == 1.0f) {
            st = onnx_op2(r, GRAPH_OP_silu, x, -1, NULL, &y);
        } else if (st == TG_OK) {
            st = onnx_op_k(r, GRAPH_OP_mul, x, alpha, &t);
            if (st == TG_OK)
                st = onnx_op2(r, GRAPH_OP_sigmoid, t, -1, NULL, &t);
            if (st == TG_OK)
                st = onnx_op2(r, GRAPH_OP_mul, x, t, NULL, &y);
        }
    } else if (!strcmp(name, "Softsign")) {
        st = onnx_op2(r, GRAPH_OP_abs, x, -1, NULL, &t);
        if (st == TG_OK)
            st = onnx_op_k(r, GRAPH_OP_add, t, 1.0, &t);
        if (st == TG_OK)
            st = onnx_op2(r, GRAPH_OP_div, x, t, NULL, &y);
    } else {
        st = piecewise(r, name, x, &y);
    }
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * Trilu: x where the element (i, j) of each matrix of the last two dims
 * is kept (upper: j - i >= k; lower: j - i <= k), else 0: where(mask,
 * x, 0) with mask a bool constant of the matrix's shape, broadcast over
 * the leading dims.  k must be known at load time; a dynamic matrix dim
 * is fixed at its traced size (the node is flagged specialized).
 */
tg_status onnx_cv_trilu(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    int64_t upper;
    double kd = 0.0;
    int32_t x, y, zero;
    tg_status st = onnx_attr_int(r, "upper", 1, &upper);
    if (st == TG_OK && onnx_has_input(r, 1))
        st = onnx_const_scalar(r, 1, "k", &kd);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    const graph_type xt = *onnx_vtype(r, x); /* a copy: adding nodes moves the values */
    if (xt.ndim < 2)
        return onnx_fail(r, TG_ERR_FORMAT, "input has %d dims, want >= 2", xt.ndim);
    if (kd != kd) /* a float k: NaN would reach the cast below */
        return onnx_fail(r, TG_ERR_FORMAT, "k is NaN, want an integer");
    int64_t rows = xt.dim[xt.ndim - 2], cols = xt.dim[xt.ndim - 1];
    uint32_t mdyn = onnx_dynamic_dims(r, x) >> (xt.ndim - 2); /* bit 0 rows, 1 cols */
    /* nothing to mask: x is y, at every size when the 0 is static ([2^40, 0]
     * walked 2^40 rows of the mask's loop for no mask) */
    if ((rows == 0 && !(mdyn & 1)) || (cols == 0 && !(mdyn & 2)))
        return onnx_bind(r, 0, x);
    if (mdyn)
        r->specialized = 1;
    /* |k| past both sizes keeps all or nothing; clamping keeps j - i exact */
    int64_t lim = rows + cols, k = kd < (double)-lim ? -lim : kd > (double)lim ? lim : (int64_t)kd;
    graph_type mt = {GRAPH_BOOL, 2, {rows, cols}};
    int64_t count = rows * cols; /* at most x's element count: no overflow */
    if (count == 0) /* a dynamic 0: the size guard holds it */
        return onnx_bind(r, 0, x);
    if (count > ONNX_MAX_FOLD_BYTES)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "a %lldx%lld mask would take over %lld MiB",
                         LL(rows), LL(cols), LL(ONNX_MAX_FOLD_BYTES >> 20));
    uint8_t *mask = tg_malloc((size_t)count);
    if (!mask)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for a %lldx%lld mask", LL(rows),
                         LL(cols));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            mask[i * cols + j] = upper ? j - i >= k : j - i <= k;
    int32_t m;
    st = onnx_const_value(r, &mt, mask, &m);
    tg_free(mask);
    if (st == TG_OK)
        st = onnx_scalar(r, xt.dtype, 0.0, &zero);
    if (st == TG_OK)
        st = select3(r, m, x, zero, &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * DepthToSpace (blocksize b; mode DCR: depth, column, row; CRD: column,
 * row, depth) and SpaceToDepth, on [N, C, H, W], as the spec writes them:
 *   DCR  [N, b, b, C/b², H, W]  perm 0 3 4 1 5 2  -> [N, C/b², H b, W b]
 *   CRD  [N, C/b², b, b, H, W]  perm 0 1 4 2 5 3  -> [N, C/b², H b, W b]
 *   S2D  [N, C, H/b, b, W/b, b] perm 0 3 5 1 2 4  -> [N, C b², H/b, W/b]
 * A dynamic batch follows; a dynamic C, H or W is fixed at its traced
 * size (the node is flagged specialized).
 */
tg_status onnx_cv_depth_space(onnx_reader *r, const onnx_op *op)
{
    int to_space = !strcmp(op->name, "DepthToSpace"), crd = 0;
    int64_t b;
    char mode[8];
    int32_t x, y;
    tg_status st = onnx_attr_int(r, "blocksize", 0, &b);
    if (st == TG_OK && to_space)
        st = onnx_attr_str(r, "mode", "DCR", mode, sizeof mode);
    if (st == TG_OK && to_space) {
        crd = !strcmp(mode, "CRD");
        if (!crd && strcmp(mode, "DCR"))
            st = onnx_fail(r, TG_ERR_FORMAT, "mode '%s' is neither DCR nor CRD", mode);
    }
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    const graph_type *xt = onnx_vtype(r, x);
    if (xt->ndim != 4)
        return onnx_fail(r, TG_ERR_FORMAT, "input has %d dims, want 4 (NCHW)", xt->ndim);
    int64_t n = xt->dim[0], c = xt->dim[1], h = xt->dim[2], w = xt->dim[3];
    if (b < 1 || b > 65536)
        return onnx_fail(r, TG_ERR_FORMAT, "blocksize %lld is not in 1..65536", LL(b));
    if (to_space ? c % (b * b) : h % b || w % b)
        return onnx_fail(r, TG_ERR_FORMAT, "%s %lld is not a multiple of %s %lld",
                         to_space ? "C" : "H or W", LL(to_space ? c : h % b ? h : w),
                         to_space ? "blocksize^2" : "blocksize", LL(to_space ? b * b : b));
    uint32_t dyn = onnx_dynamic_dims(r, x);
    if (dyn & 0xE)
        r->specialized = 1;
    int64_t mid[6], out[4];
    graph_transpose_attrs p;
    memset(&p, 0, sizeof p);
    p.perm.n = 6;
    static const int64_t dcr[6] = {0, 3, 4, 1, 5, 2}, crdp[6] = {0, 1, 4, 2, 5, 3},
                         s2d[6] = {0, 3, 5, 1, 2, 4};
    const int64_t *perm = !to_space ? s2d : crd ? crdp : dcr;
    if (!to_space) {
        int64_t m[6] = {n, c, h / b, b, w / b, b}, o[4] = {n, c * b * b, h / b, w / b};
        memcpy(mid, m, sizeof m);
        memcpy(out, o, sizeof o);
    } else {
        int64_t cb = c / (b * b);
        int64_t m1[6] = {n, b, b, cb, h, w}, m2[6] = {n, cb, b, b, h, w};
        int64_t o[4] = {n, cb, h * b, w * b};
        memcpy(mid, crd ? m2 : m1, sizeof m1);
        memcpy(out, o, sizeof o);
    }
    memcpy(p.perm.v, perm, sizeof dcr);
    st = onnx_reshape_to(r, x, dyn & 1, mid, 6, &y);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_transpose, &y, 1, &p, &y, 1);
    if (st == TG_OK)
        st = onnx_reshape_to(r, y, dyn & 1, out, 4, &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * Hardmax: 1 at the first maximum along axis, 0 elsewhere, as
 * cast(argmax(x, axis, keepdim) == iota, f32) with iota the constant
 * 0 .. n-1 laid along the axis.  Before opset 13 the axis splits x into
 * the 2-D [dims before, dims from] it is taken over (as Softmax then):
 * x is reshaped to that, and back (a dynamic batch stays -1).
 */
tg_status onnx_cv_hardmax(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    int flat = r->opset < 13;
    int64_t axis;
    int32_t x, y;
    tg_status st = onnx_attr_int(r, "axis", flat ? 1 : -1, &axis);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    graph_type xt = *onnx_vtype(r, x);
    int nd = xt.ndim;
    if (axis < -nd || axis >= (nd ? nd : 1))
        return onnx_fail(r, TG_ERR_FORMAT, "axis %lld is out of range for %d dims", LL(axis),
                         nd);
    if (xt.dtype != GRAPH_F32)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "Hardmax of %s is not supported",
                         graph_dtype_name(xt.dtype));
    if (graph_type_numel(&xt) == 0) /* nothing to choose from: x, of 0 elements, is y */
        return onnx_bind(r, 0, x);
    axis = axis < 0 ? axis + nd : axis;
    uint32_t dyn = onnx_dynamic_dims(r, x);
    int reshape = flat && axis != nd - 1;
    /* the iota's length is the axis' traced size (flat: the dims' from it) */
    if (reshape ? dyn >> axis : dyn >> axis & 1)
        r->specialized = 1;
    if (reshape) { /* [dims before axis, dims from axis] */
        int64_t two[2] = {1, 1};
        for (int d = 0; d < nd; d++)
            two[d >= axis] *= xt.dim[d];
        if (dyn & ~(uint32_t)1)
            r->specialized = 1;
        st = onnx_reshape_to(r, x, dyn & 1 && axis > 0, two, 2, &x);
        if (st != TG_OK)
            return st;
        axis = 1;
    }
    const graph_type *t = onnx_vtype(r, x);
    int tnd = t->ndim;
    int64_t n = t->dim[axis];
    if (n > ONNX_MAX_FOLD_BYTES / (int64_t)sizeof(int64_t))
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "Hardmax over %lld elements is not supported",
                         LL(n));
    graph_type it = {GRAPH_I64, (uint8_t)(tnd - axis), {n}};
    for (int d = 1; d < tnd - axis; d++)
        it.dim[d] = 1;
    int64_t *iota = tg_malloc(sizeof *iota * (size_t)(n + 1));
    if (!iota)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory for %lld indices", LL(n));
    for (int64_t i = 0; i < n; i++)
        iota[i] = i;
    int32_t iv, am;
    st = onnx_const_value(r, &it, iota, &iv);
    tg_free(iota);
    graph_argmax_attrs aa = {axis, 1, 0};
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_argmax, &x, 1, &aa, &am, 1);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_eq, am, iv, NULL, &y);
    graph_cast_attrs ca = {GRAPH_F32};
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_cast, y, -1, &ca, &y);
    if (st == TG_OK && reshape)
        st = onnx_reshape_to(r, y, dyn & 1, xt.dim, nd, &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * InstanceNormalization on [N, C, D1, ...]: each (n, c) normalized over
 * its spatial dims, as layer_norm over the dims from 2 on (without
 * weight), then * scale + B per channel (each reshaped to [C, 1, ...]).
 * PyTorch's GroupNorm export (Reshape -> InstanceNormalization with
 * ones and zeros -> Reshape -> Mul -> Add) comes through here.
 */
tg_status onnx_cv_instance_norm(onnx_reader *r, const onnx_op *op)
{
    graph_layer_norm_attrs a;
    graph_attrs_default(GRAPH_OP_layer_norm, &a);
    a.axis = 2;
    int32_t in[3], y;
    tg_status st = onnx_attr_float(r, "epsilon", 1e-5f, &a.eps);
    for (int i = 0; st == TG_OK && i < 3; i++)
        st = onnx_input(r, i, &in[i]);
    if (st != TG_OK)
        return st;
    const graph_type *xt = onnx_vtype(r, in[0]);
    if (xt->ndim < 3)
        return onnx_fail(r, TG_ERR_FORMAT, "input has %d dims, want at least 3 "
                         "(N, C, D1, ...)", xt->ndim);
    int64_t c = xt->dim[1], shape[GRAPH_MAX_DIMS];
    for (int i = 1; i < 3; i++) {
        const graph_type *p = onnx_vtype(r, in[i]);
        if (p->ndim != 1 || p->dim[0] != c)
            return onnx_fail(r, TG_ERR_FORMAT, "%s has %d dims (first %lld), want [C] = "
                             "[%lld]", i == 1 ? "scale" : "B", p->ndim,
                             LL(p->ndim ? p->dim[0] : 0), LL(c));
    }
    if (onnx_dynamic_dims(r, in[0]) & 2)
        r->specialized = 1; /* the channel reshape fixes C */
    shape[0] = c;
    for (int d = 1; d < xt->ndim - 1; d++)
        shape[d] = 1;
    int n = xt->ndim - 1;
    st = onnx_add(r, GRAPH_OP_layer_norm, in, 1, &a, &y, 1);
    for (int i = 1; st == TG_OK && i < 3; i++) {
        int32_t p;
        st = onnx_reshape_to(r, in[i], 0, shape, n, &p);
        if (st == TG_OK)
            st = onnx_op2(r, i == 1 ? GRAPH_OP_mul : GRAPH_OP_add, y, p, NULL, &y);
    }
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * GroupNormalization (opset 18: scale and bias per group; 21: per channel)
 * on [N, C, D1, ...]: x as [N, G, C/G * D1 * ...], layer_norm over its
 * last dim (without weight), back to x's shape, then * scale + bias as
 * [C, 1, ...] (opset 18's [G] repeated C/G times each).  A dynamic batch
 * follows; a dynamic C or Di is taken at its traced size (specialized).
 */
tg_status onnx_cv_group_norm(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    graph_layer_norm_attrs a;
    graph_attrs_default(GRAPH_OP_layer_norm, &a);
    a.axis = 2;
    int64_t groups;
    int32_t in[3], y;
    if (r->opset < 18)
        return onnx_fail(r, TG_ERR_FORMAT, "GroupNormalization needs opset 18 (the model has "
                         "%lld)", LL(r->opset));
    tg_status st = onnx_attr_float(r, "epsilon", 1e-5f, &a.eps);
    if (st == TG_OK)
        st = onnx_attr_int(r, "num_groups", 0, &groups);
    if (st == TG_OK && !onnx_attr(r, "num_groups"))
        st = onnx_fail(r, TG_ERR_FORMAT, "num_groups is missing");
    for (int i = 0; st == TG_OK && i < 3; i++)
        st = onnx_input(r, i, &in[i]);
    if (st != TG_OK)
        return st;
    const graph_type xt = *onnx_vtype(r, in[0]);
    if (xt.ndim < 3)
        return onnx_fail(r, TG_ERR_FORMAT, "input has %d dims, want at least 3 (N, C, D1, ...)",
                         xt.ndim);
    int64_t c = xt.dim[1], per = r->opset >= 21 ? c : groups;
    if (groups < 1 || c % groups)
        return onnx_fail(r, TG_ERR_FORMAT, "num_groups %lld does not divide the %lld channels",
                         LL(groups), LL(c));
    for (int i = 1; i < 3; i++) {
        const graph_type *p = onnx_vtype(r, in[i]);
        if (p->ndim != 1 || p->dim[0] != per)
            return onnx_fail(r, TG_ERR_FORMAT, "%s has %d dims (first %lld), want [%s] = "
                             "[%lld] at opset %lld", i == 1 ? "scale" : "bias", p->ndim,
                             LL(p->ndim ? p->dim[0] : 0), r->opset >= 21 ? "C" : "num_groups",
                             LL(per), LL(r->opset));
    }
    uint32_t dyn = onnx_dynamic_dims(r, in[0]);
    if (dyn & ~1u)
        r->specialized = 1;
    int64_t rest = 1, g3[3], shape[GRAPH_MAX_DIMS];
    for (int d = 2; d < xt.ndim; d++)
        rest *= xt.dim[d];
    g3[0] = xt.dim[0];
    g3[1] = groups;
    g3[2] = c / groups * rest;
    st = onnx_reshape_to(r, in[0], dyn & 1, g3, 3, &y);
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_layer_norm, &y, 1, &a, &y, 1);
    if (st == TG_OK)
        st = onnx_reshape_to(r, y, dyn & 1, xt.dim, xt.ndim, &y);
    for (int i = 1; st == TG_OK && i < 3; i++) {
        int32_t p = in[i];
        if (per != c) { /* [G] -> [G, 1] -> [G, C/G] -> [C] */
            int64_t s2[2] = {groups, 1}, s1[1] = {c};
            st = onnx_reshape_to(r, p, 0, s2, 2, &p);
            if (st == TG_OK)
                st = onnx_expand_axis(r, p, 1, c / groups, &p);
            if (st == TG_OK)
                st = onnx_reshape_to(r, p, 0, s1, 1, &p);
        }
        shape[0] = c;
        for (int d = 1; d < xt.ndim - 1; d++)
            shape[d] = 1;
        if (st == TG_OK)
            st = onnx_reshape_to(r, p, 0, shape, xt.ndim - 1, &p);
        if (st == TG_OK)
            st = onnx_op2(r, i == 1 ? GRAPH_OP_mul : GRAPH_OP_add, y, p, NULL, &y);
    }
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * RMSNormalization (opset 23): x / sqrt(mean(x^2 over the dims from axis
 * on) + epsilon) * scale, as mul, reduce_mean (kept dims), add, rsqrt and
 * two muls.
 */
tg_status onnx_cv_rms_norm(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    int64_t axis;
    float eps;
    int32_t x, scale, y, t;
    if (r->opset < 23)
        return onnx_fail(r, TG_ERR_FORMAT, "RMSNormalization needs opset 23 (the model has "
                         "%lld)", LL(r->opset));
    tg_status st = onnx_attr_int(r, "axis", -1, &axis);
    if (st == TG_OK)
        st = onnx_attr_float(r, "epsilon", 1e-5f, &eps);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_input(r, 1, &scale);
    if (st != TG_OK)
        return st;
    int nd = onnx_vtype(r, x)->ndim;
    if (axis < -nd || axis >= nd)
        return onnx_fail(r, TG_ERR_FORMAT, "axis %lld is out of range for %d dims", LL(axis),
                         nd);
    graph_reduce_mean_attrs ra;
    memset(&ra, 0, sizeof ra);
    for (int d = (int)(axis < 0 ? axis + nd : axis); d < nd; d++)
        ra.axes.v[ra.axes.n++] = d;
    ra.keepdim = 1;
    st = onnx_op2(r, GRAPH_OP_mul, x, x, NULL, &t);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_reduce_mean, t, -1, &ra, &t);
    if (st == TG_OK)
        st = onnx_op_k(r, GRAPH_OP_add, t, eps, &t);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_rsqrt, t, -1, NULL, &t);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_mul, x, t, NULL, &y);
    if (st == TG_OK)
        st = onnx_op2(r, GRAPH_OP_mul, y, scale, NULL, &y);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}

/*
 * Tile (repeats a constant, one per dim, >= 0): per dim d repeated k > 1
 * times, x reshaped with a 1 inserted before d, expanded to k there and
 * reshaped back with dim d * k, so the copies follow one another.
 * Dims that are dynamic are fixed at their traced sizes (specialized).
 */
tg_status onnx_cv_tile(onnx_reader *r, const onnx_op *op)
{
    graph_ints rep;
    int32_t x;
    tg_status st = onnx_const_ints(r, 1, "repeats", &rep, GRAPH_MAX_DIMS);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st != TG_OK)
        return st;
    graph_type t = *onnx_vtype(r, x);
    if (rep.n != t.ndim)
        return onnx_fail(r, TG_ERR_FORMAT, "repeats has %d entries, want one per dim "
                         "of the input (%d)", rep.n, t.ndim);
    for (int d = 0; d < t.ndim; d++) {
        if (rep.v[d] < 0)
            return onnx_fail(r, TG_ERR_FORMAT, "repeats[%d] = %lld is negative", d,
                             LL(rep.v[d]));
        if (rep.v[d] == 0)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "repeats[%d] = 0 (an empty result) "
                             "is not supported", d);
        int64_t prod;
        if (__builtin_mul_overflow(t.dim[d], rep.v[d], &prod) || prod > INT32_MAX)
            return onnx_fail(r, TG_ERR_FORMAT, "repeats[%d] = %lld times dim %lld is "
                             "too large", d, LL(rep.v[d]), LL(t.dim[d]));
    }
    if (t.ndim >= GRAPH_MAX_DIMS)
        for (int d = 0; d < t.ndim; d++)
            if (rep.v[d] > 1)
                return onnx_fail(r, TG_ERR_UNSUPPORTED, "Tile of a %d-dim tensor is not "
                                 "supported (at most %d)", t.ndim, GRAPH_MAX_DIMS - 1);
    if (onnx_dynamic_dims(r, x))
        r->specialized = 1;
    for (int d = 0; st == TG_OK && d < t.ndim; d++) {
        if (rep.v[d] == 1)
            continue;
        int64_t shape[GRAPH_MAX_DIMS];
        for (int i = 0, j = 0; i < t.ndim; i++) {
            if (i == d)
                shape[j++] = 1;
            shape[j++] = t.dim[i];
        }
        st = onnx_reshape_to(r, x, 0, shape, t.ndim + 1, &x);
        if (st == TG_OK)
            st = onnx_expand_axis(r, x, d, rep.v[d], &x);
        t.dim[d] *= rep.v[d];
        if (st == TG_OK)
            st = onnx_reshape_to(r, x, 0, t.dim, t.ndim, &x);
    }
    return st == TG_OK ? onnx_bind(r, 0, x) : st;
}

/*
 * GatherND (batch_dims b, index tuples of k coordinates) with constant
 * indices, as one gather: data reshaped to [d_0 * ... * d_(b+k-1),
 * d_(b+k), ...] and each tuple, with its batch position, turned into one
 * row index at load time, every coordinate checked there (a negative one
 * counts from the end; one out of range is an error naming it).  Indices
 * computed at run time are refused: their coordinates could not be
 * checked one by one, and one flat index in range could hide a coordinate
 * that is not.  A dynamic dim among the indexed ones is fixed at its
 * traced size (the node is flagged specialized).
 */
tg_status onnx_cv_gather_nd(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    int64_t b;
    int32_t x, y, xi;
    const onnx_entry *ie;
    tg_status st = onnx_attr_int(r, "batch_dims", 0, &b);
    if (st == TG_OK)
        st = onnx_input(r, 0, &x);
    if (st == TG_OK)
        st = onnx_const_input(r, 1, "indices", &ie);
    if (st != TG_OK)
        return st;
    const graph_type *xt = onnx_vtype(r, x), *it = &ie->type;
    if (it->dtype != GRAPH_I64 && it->dtype != GRAPH_I32)
        return onnx_fail(r, TG_ERR_FORMAT, "indices have dtype %s, want int64",
                         graph_dtype_name(it->dtype));
    int q = it->ndim, rk = xt->ndim;
    int64_t k = q ? it->dim[q - 1] : 0;
    if (q < 1 || b < 0 || b >= q || b >= rk || k < 1 || k > rk - b)
        return onnx_fail(r, TG_ERR_FORMAT,
                         "indices of %d dims (tuples of %lld) and batch_dims %lld do not fit "
                         "data of %d dims", q, LL(k), LL(b), rk);
    for (int d = 0; d < b; d++)
        if (it->dim[d] != xt->dim[d])
            return onnx_fail(r, TG_ERR_FORMAT, "batch dim %d: indices have %lld, data %lld", d,
                             LL(it->dim[d]), LL(xt->dim[d]));
    if (onnx_dynamic_dims(r, x) & ((1u << (b + k)) - 1))
        r->specialized = 1; /* the row indices use the traced sizes */
    int64_t rows = 1, per = 1, ntup = graph_type_numel(it) / k, inner = 1;
    for (int d = 0; d < b + k; d++)
        rows *= xt->dim[d];
    for (int d = (int)b; d < b + k; d++)
        per *= xt->dim[d];
    for (int d = (int)b; d < q - 1; d++)
        inner *= it->dim[d]; /* tuples per batch position */
    int64_t *flat = tg_malloc((size_t)(ntup + 1) * sizeof *flat);
    if (!flat)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    for (int64_t t = 0; st == TG_OK && t < ntup; t++) {
        int64_t off = 0, stride = 1;
        for (int64_t j = k - 1; j >= 0; j--) {
            int64_t e = t * k + j, dim = xt->dim[b + j];
            int64_t c = it->dtype == GRAPH_I64 ? ((const int64_t *)ie->data)[e]
                                               : ((const int32_t *)ie->data)[e];
            if (c < -dim || c >= dim) { /* before the offset uses it */
                st = onnx_fail(r, TG_ERR_FORMAT,
                               "indices element %lld is %lld, out of range for data dim %lld "
                               "(%lld)", LL(e), LL(c), LL(b + j), LL(dim));
                break;
            }
            off += (c < 0 ? c + dim : c) * stride;
            stride *= dim;
        }
        flat[t] = t / inner * per + off;
    }
    graph_type ft = {GRAPH_I64, q - 1, {0}}, rt = {xt->dtype, 0, {0}};
    for (int d = 0; d < q - 1; d++)
        ft.dim[d] = it->dim[d];
    rt.dim[rt.ndim++] = rows;
    for (int d = (int)(b + k); d < rk; d++)
        rt.dim[rt.ndim++] = xt->dim[d];
    if (st == TG_OK)
        st = onnx_const_value(r, &ft, flat, &xi);
    tg_free(flat);
    if (st == TG_OK)
        st = onnx_reshape_to(r, x, 0, rt.dim, rt.ndim, &x);
    int32_t in[2] = {x, xi};
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_gather, in, 2, NULL, &y, 1);
    return st == TG_OK ? onnx_bind(r, 0, y) : st;
}
