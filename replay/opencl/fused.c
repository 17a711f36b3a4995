/*
 * fused.c - fused programs on OpenCL, a helper of the op files: a `fused`
 * node's micro-program (graph/fused_prog.h; the op is registered by
 * ops_ew.c) becomes one generated OpenCL C program at compile time, three
 * kernels over the same statement list:
 *
 *   fused_flat8  every input is the output's size or a scalar (the usual
 *                case): input j at i * m_j, m_j 1 or 0, 8 elements per
 *                item as float8;
 *   fused_rows   NumPy broadcasting over up to 8 collapsed dims as a row
 *                launch (cl/common.cl) when rows are long enough (in
 *                place: when a work-group width divides them);
 *   fused        the same, one item per element, otherwise.
 *
 * Registers become private floats the compiler keeps in registers, so a
 * chain reads its inputs once and writes its output once.  The source is
 * built through the device's program cache (keyed by its full text), so
 * a program is built once per device and process however many plans use
 * it.  Numerics follow the single-op kernels (cl/common.cl).
 *
 * Also here: an f32 elementwise op as a one-statement program (ops_ew.c),
 * and the fused node a GEMM or conv runs as it stores (the tail:
 * ocl_tail_find at plan_new, ocl_tail_source for nn_common.c).  Calls
 * prep.c only.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "../../graph/graph_impl.h"
#include "../../graph/fused_prog.h"
#include "ocl_rt.h"

typedef struct gen {
    char *buf;
    size_t len, at;
} gen;

static void put(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g->at < g->len) {
        int n = vsnprintf(g->buf + g->at, g->len - g->at, fmt, ap);
        g->at += n > 0 ? (size_t)n : 0;
    }
    va_end(ap);
}

/* An operand as an OpenCL C expression; vec: immediates as float8 (so
 * pow, tg_max and tg_min see matching types). */
static void operand(const fused_arg *a, char *buf, size_t len, int vec)
{
    if (vec && a->kind == FUSED_ARG_IMM) {
        char s[40];
        fused_arg scalar = *a;
        operand(&scalar, s, sizeof s, 0);
        snprintf(buf, len, "((float8)%s)", s);
    } else if (a->kind == FUSED_ARG_INPUT)
        snprintf(buf, len, "x%d", a->index);
    else if (a->kind == FUSED_ARG_REG)
        snprintf(buf, len, "r%d", a->index);
    else if (isnan(a->imm))
        snprintf(buf, len, "NAN");
    else if (isinf(a->imm))
        snprintf(buf, len, "(%sINFINITY)", a->imm < 0 ? "-" : "");
    else {
        char num[32];
        snprintf(num, sizeof num, "%.9g", (double)a->imm);
        /* "1" is an int literal: a float one needs a point or exponent */
        snprintf(buf, len, "(%s%sf)", num, strpbrk(num, ".e") ? "" : ".0");
    }
}

static void fnum(float v, char *buf, size_t len)
{
    fused_arg a = {FUSED_ARG_IMM, 0, v};
    operand(&a, buf, len, 0);
}

/* Each op's OpenCL C expression: every row of graph/ew_ops.def, its line
 * of ew_ocl.def (a row without one stops the build here). */
#include "ew_ocl.def"
static const char *const ocl_expr[GRAPH_OP_COUNT] = {
#define EW(OP, N, COST, S, ONNX) [GRAPH_OP_##OP] = EW_OCL_##OP,
#include "../../graph/ew_ops.def"
#undef EW
};

/* One statement: "float rK = <expr>;" (float8 when vec), or -1 for an op
 * without an expression (or with a `$` other than $a $b $0 $1 in it).
 * Attributes stay scalar. */
static int stmt(gen *g, int k, const fused_stmt *s, int vec)
{
    char a[64], b[64] = "", p0[48], p1[48];
    const char *e = (unsigned)s->op < GRAPH_OP_COUNT ? ocl_expr[s->op] : NULL;
    if (!e)
        return -1;
    operand(&s->arg[0], a, sizeof a, vec);
    if (s->nargs > 1)
        operand(&s->arg[1], b, sizeof b, vec);
    fnum(s->attr[0], p0, sizeof p0);
    fnum(s->attr[1], p1, sizeof p1);
    put(g, "    %s r%d = ", vec ? "float8" : "float", k);
    for (; *e; e++) {
        if (*e != '$') {
            put(g, "%c", *e);
            continue;
        }
        switch (*++e) {
        case 'a': put(g, "%s", a); break;
        case 'b': put(g, "%s", s->nargs > 1 ? b : a); break;
        case '0': put(g, "%s", p0); break;
        case '1': put(g, "%s", p1); break;
        default: return -1;
        }
    }
    put(g, ";\n");
    return 0;
}

/* The statements, after the x<j> loads; the result is r<nstmts-1>. */
static int body(gen *g, const fused_prog *fp, int vec)
{
    for (int k = 0; k < fp->nstmts; k++)
        if (stmt(g, k, &fp->stmt[k], vec) < 0)
            return -1;
    return 0;
}

static void params(gen *g, int nin, const char *name, const char *tail)
{
    put(g, "__kernel void %s(", name);
    for (int j = 0; j < nin; j++)
        put(g, "__global const float *p%d, ", j);
    put(g, "__global float *y, long n%s)\n{\n    long i = get_global_id(0);\n", tail);
}

/*
 * fused_flat8: item i computes elements 8i .. 8i+7 as float8 (PoCL runs
 * explicit vectors much faster than its implicit work-item vectorizer:
 * 14.9 vs 26.7 ms on the 4M-element chain workload); the last item
 * finishes a ragged end one element at a time.
 */
static int flat8(gen *g, const fused_prog *fp, int nin)
{
    char tail[16 * FUSED_MAX_INPUTS] = "";
    for (int j = 0, at = 0; j < nin && at < (int)sizeof tail; j++)
        at += snprintf(tail + at, sizeof tail - (size_t)at, ", int m%d", j);
    params(g, nin, "fused_flat8", tail);
    put(g, "    if (i * 8 + 8 <= n) {\n");
    for (int j = 0; j < nin; j++)
        put(g, "    float8 x%d = m%d ? vload8(i, p%d) : (float8)(p%d[0]);\n", j, j, j, j);
    if (body(g, fp, 1) < 0)
        return -1;
    put(g, "    vstore8(r%d, i, y);\n    return;\n    }\n", fp->nstmts - 1);
    put(g, "    for (long e = i * 8; e < n; e++) {\n");
    for (int j = 0; j < nin; j++)
        put(g, "    float x%d = p%d[e * m%d];\n", j, j, j);
    if (body(g, fp, 0) < 0)
        return -1;
    put(g, "    y[e] = r%d;\n    }\n}\n\n", fp->nstmts - 1);
    return 0;
}

/* Writes the program for fp with nin inputs into g; -1 on an unknown op. */
static int generate(gen *g, const fused_prog *fp, int nin)
{
    if (flat8(g, fp, nin) < 0)
        return -1;
    char tail[16 * FUSED_MAX_INPUTS + 32] = ", int nd, int8 dims";
    for (int j = 0, at = (int)strlen(tail); j < nin && at < (int)sizeof tail; j++)
        at += snprintf(tail + at, sizeof tail - (size_t)at, ", int8 s%d", j);
    params(g, nin, "fused", tail);
    put(g, "    if (i >= n)\n        return;\n    int c[8];\n    tg_coords(i, nd, dims, c);\n");
    for (int j = 0; j < nin; j++)
        put(g, "    float x%d = p%d[tg_dot(nd, c, s%d)];\n", j, j, j);
    if (body(g, fp, 0) < 0)
        return -1;
    put(g, "    y[i] = r%d;\n}\n\n", fp->nstmts - 1);
    /* fused_rows: a row launch (cl/common.cl), dims right-aligned; items
     * past the row's end redo its last column (same inputs, same value),
     * so in place it runs only with a width dividing the row */
    char rtail[16 * FUSED_MAX_INPUTS + 32] = ", int8 dims";
    for (int j = 0, at = (int)strlen(rtail); j < nin && at < (int)sizeof rtail; j++)
        at += snprintf(rtail + at, sizeof rtail - (size_t)at, ", int8 s%d", j);
    params(g, nin, "fused_rows", rtail);
    put(g, "    int c = min((int)i, dims.s7 - 1), row = get_global_id(1);\n");
    for (int j = 0; j < nin; j++)
        put(g, "    float x%d = p%d[tg_row_off(row, dims, s%d) + (long)c * s%d.s7];\n", j, j, j,
            j);
    if (body(g, fp, 0) < 0)
        return -1;
    put(g, "    y[(long)row * dims.s7 + c] = r%d;\n}\n", fp->nstmts - 1);
    return 0;
}

size_t ocl_fused_source_bound(const fused_prog *fp, int nin)
{
    return 4096 + (size_t)fp->nstmts * 320 + (size_t)nin * 160;
}

int ocl_fused_source(const fused_prog *fp, int nin, char *buf, size_t len)
{
    gen g = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    if (generate(&g, fp, nin) < 0)
        return -1;
    return g.at < g.len ? 0 : -2;
}

/* Generates, builds and names the kernels of fp (c->nin inputs). */
static tg_status prepare_prog(ocl_prep *c, const fused_prog *fp)
{
    size_t len = ocl_fused_source_bound(fp, c->nin);
    char *buf = tg_malloc(len);
    if (!buf)
        return ocl_prep_fail(c, TG_ERR_NOMEM, "out of memory");
    tg_status st = TG_OK;
    int r = ocl_fused_source(fp, c->nin, buf, len);
    if (r == -1)
        st = ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "an op of the fused program has no "
                           "OpenCL form");
    else if (r < 0)
        st = ocl_prep_fail(c, TG_ERR_NOMEM, "generated source too long");
    if (st == TG_OK)
        st = ocl_prep_program(c, "fused", buf, NULL);
    tg_free(buf);
    if (st == TG_OK)
        st = ocl_prep_kernel(c, "fused");
    if (st == TG_OK)
        st = ocl_prep_kernel(c, "fused_flat8");
    return st ? st : ocl_prep_kernel(c, "fused_rows");
}

tg_status ocl_fused_prepare(ocl_prep *c)
{
    const graph_fused_attrs *at = c->attrs;
    fused_prog fp;
    char msg[256];
    if (fused_prog_parse(at->prog.s, c->nin, &fp, msg, sizeof msg) != TG_OK)
        return ocl_prep_fail(c, TG_ERR_ARG, "fused program: %s", msg);
    if (c->nin > GRAPH_MAX_NODE_IO - 1)
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "%d inputs", c->nin);
    return prepare_prog(c, &fp);
}

/*
 * An f32 unary or binary op as the one-statement program r0=op(i0[,i1])
 * with its attributes: the same generated kernels as fused nodes, so the
 * single ops get the float8 path too (ops_ew.c routes f32 here).
 */
tg_status ocl_fused_single_prepare(ocl_prep *c)
{
    graph_op op = c->node->op;
    int nargs = 0;
    if (!fused_op_ok(op, &nargs) || nargs != c->nin)
        return ocl_prep_fail(c, TG_ERR_UNSUPPORTED, "no fused form");
    fused_prog fp = {1, c->nin, {{0}}};
    fused_stmt *s = &fp.stmt[0];
    s->op = op;
    s->nargs = (uint8_t)nargs;
    for (int j = 0; j < nargs; j++)
        s->arg[j] = (fused_arg){FUSED_ARG_INPUT, (uint8_t)j, 0};
    /* the op's f32 attributes (fused_op_ok: at most FUSED_MAX_ATTRS) */
    const graph_op_info *info = &graph_ops[op];
    for (int k = 0; k < info->nattrs; k++)
        memcpy(&s->attr[k], (const char *)c->attrs + info->attr_descs()[k].offset,
               sizeof(float));
    return prepare_prog(c, &fp);
}

/* Sets the inputs, the output and n, then the rest: in-order argument
 * setting shared by the three kernels. */
static tg_status set_io(ocl_launch *l, cl_kernel k, cl_uint *a, cl_long n)
{
    tg_status st = TG_OK;
    for (int j = 0; j < l->nin && st == TG_OK; j++)
        st = ocl_set_arg(l, k, (*a)++, sizeof(cl_mem), &l->in[j]);
    if (st == TG_OK)
        st = ocl_set_arg(l, k, (*a)++, sizeof(cl_mem), &l->out[0]);
    if (st == TG_OK)
        st = ocl_set_arg(l, k, (*a)++, sizeof n, &n);
    return st;
}

/* A row launch of fused_rows (l->k[2]). */
static tg_status run_rows(ocl_launch *l, const ocl_bcast *b, size_t n, size_t w)
{
    cl_kernel k = l->k[2];
    cl_uint a = 0;
    int32_t v[8];
    tg_status st = set_io(l, k, &a, (cl_long)n);
    ocl_row_align(b->nd, b->dims, 1, v);
    if (st == TG_OK)
        st = ocl_set_arg(l, k, a++, sizeof(cl_int8), v);
    for (int j = 0; j < l->nin && st == TG_OK; j++) {
        ocl_row_align(b->nd, b->st[j], 0, v);
        st = ocl_set_arg(l, k, a++, sizeof(cl_int8), v);
    }
    if (st != TG_OK)
        return st;
    size_t L = (size_t)b->dims[b->nd - 1], g[2] = {ocl_round_up(L, w), n / L}, lo[2] = {w, 1};
    return ocl_run(l, k, 2, g, lo);
}

tg_status ocl_fused_enqueue(ocl_launch *l)
{
    ocl_bcast b;
    size_t n = (size_t)graph_type_numel(&l->out_type[0]);
    if (ocl_bcast_plan(&l->out_type[0], l->in_type, l->nin, &b) < 0)
        return ocl_fail(l, TG_ERR_UNSUPPORTED, "tensor too large for int indexing");
    int flat = b.nd == 1, inplace = 0;
    for (int j = 0; j < l->nin; j++)
        inplace |= l->in[j] == l->out[0];
    /* in place, an item past a row's end would read a column its owner
     * may have written already: then only widths that divide the row */
    size_t w = flat ? 0 : inplace ? ocl_row_width_exact(b.dims[b.nd - 1])
                                  : ocl_row_width(b.dims[b.nd - 1]);
    if (w)
        return run_rows(l, &b, n, w);
    cl_kernel k = l->k[flat ? 1 : 0];
    size_t items = flat ? (n + 7) / 8 : n;
    cl_uint a = 0;
    tg_status st = set_io(l, k, &a, (cl_long)n);
    if (!flat) {
        cl_int nd = b.nd;
        if (st == TG_OK)
            st = ocl_set_arg(l, k, a++, sizeof nd, &nd);
        if (st == TG_OK)
            st = ocl_set_arg(l, k, a++, sizeof(cl_int8), b.dims);
    }
    for (int j = 0; j < l->nin && st == TG_OK; j++) {
        cl_int m = b.st[j][0];
        st = flat ? ocl_set_arg(l, k, a++, sizeof m, &m)
                  : ocl_set_arg(l, k, a++, sizeof(cl_int8), b.st[j]);
    }
    return st != TG_OK ? st : ocl_run(l, k, 1, &items, NULL);
}

/* ---- a fused node run by the GEMM before it (the tail) ---- */

int ocl_tail_mode(cl_device_id device, char *err, size_t errlen)
{
    /* auto: not on CPU devices, where the tile's scalar stores run the
     * program slower than the fused node's float8 kernel (PoCL,
     * convnext_tiny: the 18 linears with GELU after them 904 ms against
     * 775 + 16) */
    return ocl_device_switch("TG_OPENCL_TAIL", "on", device, err, errlen);
}

/* 1 when values a and b have the same shape at every run: the same traced
 * dims, each static in both or the same dynamic symbol in both (a dim
 * derived from symbols, 2*B, is not compared: 0). */
static int same_shape(const graph_value *a, const graph_value *b)
{
    if (!graph_type_eq(&a->type, &b->type) || a->dder || b->dder)
        return 0;
    for (int d = 0; d < a->type.ndim; d++) {
        int da = (a->dyn >> d) & 1, db = (b->dyn >> d) & 1;
        if (da != db || (da && a->sym[d] != b->sym[d]))
            return 0;
    }
    return 1;
}

/* 1 when value v is an f32 scalar at every run (static dims, one element). */
static int static_scalar(const graph_value *v)
{
    return v->type.dtype == GRAPH_F32 && !v->dyn && !v->dder && graph_type_numel(&v->type) == 1;
}

int32_t *ocl_value_uses(const graph *g, int32_t *reader)
{
    int32_t *uses = tg_calloc((size_t)g->nvalues + 1, sizeof *uses);
    if (!uses)
        return NULL;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        for (int j = 0; j < n->nin; j++) {
            uses[n->in[j]]++;
            if (reader)
                reader[n->in[j]] = i;
        }
    }
    for (int32_t i = 0; i < g->nguards; i++)
        uses[g->guards[i].value] = -1;
    for (int32_t i = 0; i < g->noutputs; i++)
        uses[g->outputs[i].value] = -1;
    return uses;
}

tg_status ocl_tail_find(const graph *g, int8_t *role, int32_t *tail)
{
    int32_t *reader = tg_calloc((size_t)g->nvalues + 1, sizeof *reader);
    int32_t *uses = reader ? ocl_value_uses(g, reader) : NULL;
    if (!uses || !reader) {
        tg_free(uses), tg_free(reader);
        return TG_ERR_NOMEM;
    }
    for (int32_t i = 0; i < g->nnodes; i++)
        tail[i] = -1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        /* not conv2d_blk: its output's padded lanes are zeroed, not stored */
        if ((n->flags & GRAPH_NODE_DEAD) || role[i] != OCL_ATTN_NONE || n->nout != 1 ||
            (n->op != GRAPH_OP_matmul && n->op != GRAPH_OP_linear &&
             n->op != GRAPH_OP_linear_ep && n->op != GRAPH_OP_conv2d &&
             n->op != GRAPH_OP_conv2d_ep))
            continue;
        int32_t v = n->out[0];
        const graph_value *gv = &g->values[v];
        if (gv->type.dtype != GRAPH_F32 || uses[v] < 1)
            continue;
        /* its one reader: a fused node after it, reading it as often as
         * it is used (checked below), with the same shape out */
        int32_t f = reader[v];
        if (f <= i || role[f] != OCL_ATTN_NONE || g->nodes[f].op != GRAPH_OP_fused ||
            g->nodes[f].nout != 1 || !same_shape(&g->values[g->nodes[f].out[0]], gv))
            continue;
        const graph_node *fn = &g->nodes[f];
        int reads = 0, extra = 0, ok = 1;
        for (int k = 0; k < fn->nin && ok; k++) {
            int32_t x = fn->in[k];
            if (x == v) {
                reads++;
                continue;
            }
            const graph_value *xv = &g->values[x];
            int dup = 0;
            for (int q = 0; q < k; q++)
                dup |= fn->in[q] == x;
            extra += !dup;
            /* ready at the GEMM's step: no intermediate written after it */
            ok = xv->type.dtype == GRAPH_F32 && (same_shape(xv, gv) || static_scalar(xv)) &&
                 (xv->kind != GRAPH_VALUE_INTER || (xv->node >= 0 && xv->node < i));
        }
        if (!ok || reads != uses[v] || extra > OCL_MAX_XIN - 3) /* 3: a head's (ops_gemm.c) */
            continue;
        tail[i] = f;
        role[f] = OCL_ATTN_ABSORBED;
    }
    tg_free(uses);
    tg_free(reader);
    return TG_OK;
}

size_t ocl_tail_source_bound(const fused_prog *fp, int nin)
{
    return ocl_fused_source_bound(fp, nin);
}

int ocl_tail_source(const graph_node *f, int32_t v, const fused_prog *fp, char *buf, size_t len)
{
    gen g = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    /* parameters: the output, then each other input once, with its
     * stride (1 full-size, 0 a scalar) */
    char prm[64 * FUSED_MAX_INPUTS] = ", __global float *tg_ty", arg[32 * FUSED_MAX_INPUTS] =
        ", tg_ty";
    size_t ap = strlen(prm), aa = strlen(arg);
    int slot[GRAPH_MAX_NODE_IO];
    for (int k = 0, nx = 0; k < f->nin; k++) {
        slot[k] = -1;
        if (f->in[k] == v)
            continue;
        for (int q = 0; q < k; q++)
            if (f->in[q] == f->in[k])
                slot[k] = slot[q];
        if (slot[k] >= 0)
            continue;
        slot[k] = nx++;
        ap += (size_t)snprintf(prm + ap, sizeof prm - ap,
                               ", __global const float *tg_t%d, int tg_m%d", slot[k], slot[k]);
        aa += (size_t)snprintf(arg + aa, sizeof arg - aa, ", tg_t%d, tg_m%d", slot[k], slot[k]);
    }
    put(&g, "#define TG_TAIL 1\n#define TG_TAIL_PARAMS %s\n#define TG_TAIL_ARGS %s\n", prm, arg);
    put(&g, "inline float tg_tail(float v, long i TG_TAIL_PARAMS)\n{\n");
    for (int k = 0; k < f->nin; k++) {
        if (slot[k] < 0)
            put(&g, "    float x%d = v;\n", k);
        else
            put(&g, "    float x%d = tg_t%d[i * tg_m%d];\n", k, slot[k], slot[k]);
    }
    if (body(&g, fp, 0) < 0)
        return -1;
    put(&g, "    return r%d;\n}\n", fp->nstmts - 1);
    put(&g, "#define TG_STORE(c, i, v) (tg_ty[(i)] = tg_tail((v), (i) TG_TAIL_ARGS))\n");
    return g.at < g.len ? 0 : -2;
}
