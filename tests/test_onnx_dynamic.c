/*
 * test_onnx_dynamic.c - ONNX import of shape arithmetic (formats/onnx.h,
 * onnx_read_fold.c): the patterns torch.onnx.export writes for a dynamic
 * batch, built here in memory with protobuf-c.
 *
 *   - Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [128])) then Relu,
 *     x [N,8,16]: the reshape gets -1 at dim 0 and runs at batch 3 (the
 *     loaded size) and 5;
 *   - Expand(x, Where(Equal(s, -1), ones, s)) with s = Concat(N, [4]),
 *     x [N,1]: follows the batch;
 *   - Reshape(x, Concat([-1], Range(2, 4, 1))): folded to [-1,2,3];
 *   - a shape computed by Round, Ceil, Floor and Sign of constants: folded;
 *   - Add(x, ConstantOfShape(Concat(N, [4]))), x [N,1] (torch.zeros(
 *     x.size(0), 4)): the zeros follow the batch (they were frozen at the
 *     loaded size);
 *   - two dynamic dims in one shape: the traced sizes, the node flagged
 *     specialized and reported by the import's warning (naming the node
 *     and both dims), a run at other sizes refused with a message saying
 *     so.  The other models import without a warning;
 *   - Reshape(x, [0, k]), x [N,3]: a shape that does not fit x is refused
 *     (the -1 its copied N became hid the count); over 0 elements, specialized
 *     (and Flatten of [N,0] too).
 *
 * Every result is checked against naive loops written here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "onnx_test_util.h"
#include "graph/graph_impl.h"

#define MAXN 16

/* A model under construction: one f32 input "x", one output "y". */
typedef struct model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node[MAXN], *nodes[MAXN];
    char *node_io[MAXN][4];
    Onnx__AttributeProto attr[MAXN], *attrs[MAXN];
    Onnx__TensorProto init[MAXN], *inits[MAXN], value[MAXN];
    int64_t init_data[MAXN][4], init_dims[MAXN][1], one[1];
    Onnx__ValueInfoProto in, out, *ins[1], *outs[1];
    onnx_test_tensor type;
} model;

/* x: f32 with nd dims; a dim < 0 is a dim_param, "N" (-1) or "M" (-2). */
static void model_init(model *b, int nd, const int64_t *dv)
{
    memset(b, 0, sizeof *b);
    onnx_test_header_init(&b->m, &b->g, &b->opset, b->opsets);
    b->g.node = b->nodes;
    b->g.initializer = b->inits;
    b->in = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    b->in.name = "x";
    static const char *const params[] = {"N", "M"};
    b->in.type = onnx_test_tensor_type(&b->type, 1, nd, dv, params);
    b->ins[0] = &b->in;
    b->g.n_input = 1;
    b->g.input = b->ins;
    onnx_test_output(&b->g, &b->out, b->outs, "y");
}

/* An int64 initializer of n values (n 0: a 0-d scalar v[0]). */
static void add_ints(model *b, const char *name, int n, const int64_t *v)
{
    size_t i = b->g.n_initializer++;
    Onnx__TensorProto *t = &b->init[i];
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = 7;
    memcpy(b->init_data[i], v, sizeof(int64_t) * (size_t)(n ? n : 1));
    b->init_dims[i][0] = n;
    t->n_dims = n ? 1 : 0;
    t->dims = b->init_dims[i];
    t->n_int64_data = (size_t)(n ? n : 1);
    t->int64_data = b->init_data[i];
    b->inits[i] = t;
}

/* Node `op` from up to three inputs (NULL ends them) to out. */
static Onnx__NodeProto *add_node(model *b, const char *op, const char *out,
                                 const char *in0, const char *in1, const char *in2)
{
    size_t i = b->g.n_node++;
    Onnx__NodeProto *n = &b->node[i];
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    n->op_type = (char *)op;
    const char *ins[3] = {in0, in1, in2};
    while (n->n_input < 3 && ins[n->n_input]) {
        b->node_io[i][n->n_input] = (char *)ins[n->n_input];
        n->n_input++;
    }
    n->input = b->node_io[i];
    b->node_io[i][3] = (char *)out;
    n->n_output = 1;
    n->output = &b->node_io[i][3];
    b->nodes[i] = n;
    return n;
}

/* An INT attribute on n (each node takes at most one here). */
static void set_int_attr(model *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    size_t i = (size_t)(n - b->node);
    Onnx__AttributeProto *a = &b->attr[i];
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
    b->attrs[i] = a;
    n->n_attribute = 1;
    n->attribute = &b->attrs[i];
}

/* ConstantOfShape's value: an int64 1. */
static void set_one_value(model *b, Onnx__NodeProto *n)
{
    size_t i = (size_t)(n - b->node);
    Onnx__TensorProto *t = &b->value[i];
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->has_data_type = 1;
    t->data_type = 7;
    b->one[0] = 1;
    b->init_dims[i][0] = 1;
    t->n_dims = 1;
    t->dims = b->init_dims[i];
    t->n_int64_data = 1;
    t->int64_data = b->one;
    Onnx__AttributeProto *a = &b->attr[i];
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = "value";
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = t;
    b->attrs[i] = a;
    n->n_attribute = 1;
    n->attribute = &b->attrs[i];
}

/* The import warnings of the last load (format_onnx_load_opts.warn). */
static char warned[2048];
static int nwarned;

static void on_warn(void *ctx, const char *msg)
{
    (void)ctx;
    snprintf(warned, sizeof warned, "%s", msg);
    nwarned++;
}

static graph *load(model *b, int64_t dim_default)
{
    char err[512] = "";
    tg_status st;
    size_t len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(len + 1);
    onnx__model_proto__pack(&b->m, buf);
    format_onnx_load_opts o = {0, dim_default, on_warn, NULL};
    warned[0] = 0;
    nwarned = 0;
    graph *g = onnx_read_mem(buf, len, "dyn.onnx", &o, &st, err, sizeof err);
    free(buf);
    CHECK_MSG(g != NULL, "import: %s", err);
    return g;
}

/* The only live node of op in g (NULL if none or several). */
static const graph_node *only_node(const graph *g, graph_op op)
{
    const graph_node *hit = NULL;
    int n = 0;
    for (int32_t i = 0; i < g->nnodes; i++)
        if (!(g->nodes[i].flags & GRAPH_NODE_DEAD) && g->nodes[i].op == op) {
            hit = &g->nodes[i];
            n++;
        }
    return n == 1 ? hit : NULL;
}

/* Runs g on x (f32, nd dims); returns the output (NULL on error). */
static eager_tensor *run(const graph *g, int nd, const int64_t *dims, const float *x)
{
    graph_ints shape = {nd, {0}};
    for (int d = 0; d < nd; d++)
        shape.v[d] = dims[d];
    eager_tensor *in = eager_from_data(GRAPH_F32, shape, x), *out = NULL;
    tg_status st = eager_interpret(g, &in, 1, &out, 1, NULL);
    eager_release(in);
    if (st != TG_OK) {
        eager_release(out);
        return NULL;
    }
    return out;
}

/* out has dims want (nd of them) and the floats ref. */
static void check_out(eager_tensor *out, int nd, const int64_t *want, const float *ref,
                      int64_t n, const char *what)
{
    CHECK_MSG(out != NULL, "%s: %s", what, eager_error());
    eager_clear_error();
    if (!out)
        return;
    int same = eager_ndim(out) == nd;
    for (int d = 0; same && d < nd; d++)
        same = eager_dim(out, d) == want[d];
    CHECK_MSG(same, "%s: wrong output shape", what);
    if (same)
        CHECK_FLOATS((const float *)eager_peek(out), ref, n, 0);
    eager_release(out);
}

/* y = Relu(Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [128]))). */
static void batch_reshape(void)
{
    model b;
    model_init(&b, 3, (const int64_t[]){-1, 8, 16});
    add_ints(&b, "zero", 0, (const int64_t[]){0});
    add_ints(&b, "axes0", 1, (const int64_t[]){0});
    add_ints(&b, "c128", 1, (const int64_t[]){128});
    add_node(&b, "Shape", "s", "x", NULL, NULL);
    add_node(&b, "Gather", "n", "s", "zero", NULL);
    add_node(&b, "Unsqueeze", "n1", "n", "axes0", NULL);
    set_int_attr(&b, add_node(&b, "Concat", "shp", "n1", "c128", NULL), "axis", 0);
    add_node(&b, "Reshape", "r", "x", "shp", NULL);
    add_node(&b, "Relu", "y", "r", NULL, NULL);
    graph *g = load(&b, 3);
    if (!g)
        return;
    CHECK_MSG(nwarned == 0, "no warning, got \"%s\"", warned);
    const graph_node *rs = only_node(g, GRAPH_OP_reshape);
    CHECK_MSG(rs && g->nnodes == 2, "want one reshape and one relu, have %d nodes",
              (int)g->nnodes);
    if (rs) {
        const graph_reshape_attrs *a = tg_node_attrs(rs);
        CHECK(a->shape.n == 2 && a->shape.v[0] == -1 && a->shape.v[1] == 128);
        CHECK(!(rs->flags & GRAPH_NODE_SPECIALIZED));
        CHECK(g->values[rs->out[0]].dyn == 1); /* dim 0 follows N */
    }
    for (int batch = 3; batch <= 5; batch += 2) {
        int64_t n = batch * 128, xd[3] = {batch, 8, 16}, yd[2] = {batch, 128};
        float *x = malloc(sizeof(float) * (size_t)n), *ref = malloc(sizeof(float) * (size_t)n);
        check_fill(x, n, 11 + (uint64_t)batch, -1, 1);
        for (int64_t i = 0; i < n; i++)
            ref[i] = x[i] > 0 ? x[i] : 0;
        check_out(run(g, 3, xd, x), 2, yd, ref, n, batch == 3 ? "batch 3" : "batch 5");
        free(x);
        free(ref);
    }
    graph_free(g);
}

/* y = Expand(x, Where(Equal(s, -1), ones, s)), s = Concat(N, [4]), x [N,1]. */
static void batch_expand(void)
{
    model b;
    model_init(&b, 2, (const int64_t[]){-1, 1});
    add_ints(&b, "zero", 0, (const int64_t[]){0});
    add_ints(&b, "axes0", 1, (const int64_t[]){0});
    add_ints(&b, "c4", 1, (const int64_t[]){4});
    add_ints(&b, "minus1", 0, (const int64_t[]){-1});
    add_ints(&b, "two", 1, (const int64_t[]){2});
    add_node(&b, "Shape", "s", "x", NULL, NULL);
    add_node(&b, "Gather", "n", "s", "zero", NULL);
    add_node(&b, "Unsqueeze", "n1", "n", "axes0", NULL);
    set_int_attr(&b, add_node(&b, "Concat", "shp", "n1", "c4", NULL), "axis", 0);
    add_node(&b, "Equal", "eq", "shp", "minus1", NULL);
    set_one_value(&b, add_node(&b, "ConstantOfShape", "ones", "two", NULL, NULL));
    add_node(&b, "Where", "tgt", "eq", "ones", "shp");
    add_node(&b, "Expand", "y", "x", "tgt", NULL);
    graph *g = load(&b, 3);
    if (!g)
        return;
    CHECK_MSG(nwarned == 0, "no warning, got \"%s\"", warned);
    const graph_node *ex = only_node(g, GRAPH_OP_expand);
    CHECK_MSG(ex && g->nnodes == 1, "want one expand, have %d nodes", (int)g->nnodes);
    if (ex) {
        const graph_expand_attrs *a = tg_node_attrs(ex);
        CHECK(a->shape.n == 2 && a->shape.v[0] == 1 && a->shape.v[1] == 4);
        CHECK(!(ex->flags & GRAPH_NODE_SPECIALIZED));
    }
    for (int batch = 3; batch <= 5; batch += 2) {
        int64_t xd[2] = {batch, 1}, yd[2] = {batch, 4};
        float x[5], ref[20];
        check_fill(x, batch, 5, -1, 1);
        for (int i = 0; i < batch * 4; i++)
            ref[i] = x[i / 4];
        check_out(run(g, 2, xd, x), 2, yd, ref, batch * 4, "expand");
    }
    graph_free(g);
}

/* y = Reshape(x, Concat([-1], Range(2, 4, 1))), x [N,6]: folded. */
static void folded_range(void)
{
    model b;
    model_init(&b, 2, (const int64_t[]){-1, 6});
    add_ints(&b, "m1", 1, (const int64_t[]){-1});
    add_ints(&b, "r0", 0, (const int64_t[]){2});
    add_ints(&b, "r1", 0, (const int64_t[]){4});
    add_ints(&b, "r2", 0, (const int64_t[]){1});
    add_node(&b, "Range", "rg", "r0", "r1", "r2");
    set_int_attr(&b, add_node(&b, "Concat", "shp", "m1", "rg", NULL), "axis", 0);
    add_node(&b, "Reshape", "y", "x", "shp", NULL);
    graph *g = load(&b, 2);
    if (!g)
        return;
    const graph_node *rs = only_node(g, GRAPH_OP_reshape);
    CHECK(rs && g->nnodes == 1);
    if (rs) {
        const graph_reshape_attrs *a = tg_node_attrs(rs);
        CHECK(a->shape.n == 3 && a->shape.v[0] == -1 && a->shape.v[1] == 2 &&
              a->shape.v[2] == 3);
    }
    int64_t xd[2] = {4, 6}, yd[3] = {4, 2, 3};
    float x[24];
    check_fill(x, 24, 3, -1, 1);
    check_out(run(g, 2, xd, x), 3, yd, x, 24, "range");
    graph_free(g);
}

/*
 * y = Reshape(x, shp), x [N,48], with shp worked out from constants by
 * Round, Ceil, Floor and Sign (all folded at load time): v = [5,3] / 2 =
 * [2.5, 1.5]; shp = [-1] ++ Round(v) ++ Ceil(v) ++ Floor(v) * Sign(v) ++
 * Sign([7]) = [-1, 2,2, 3,2, 2,1, 1].  Round ties to even (2.5 -> 2; half
 * away from zero would give 3 and a shape that does not fit).
 */
static void folded_rounding(void)
{
    model b;
    model_init(&b, 2, (const int64_t[]){-1, 48});
    add_ints(&b, "m1", 1, (const int64_t[]){-1});
    add_ints(&b, "num", 2, (const int64_t[]){5, 3});
    add_ints(&b, "two", 1, (const int64_t[]){2});
    add_ints(&b, "seven", 1, (const int64_t[]){7});
    set_int_attr(&b, add_node(&b, "Cast", "numf", "num", NULL, NULL), "to", 1);
    set_int_attr(&b, add_node(&b, "Cast", "twof", "two", NULL, NULL), "to", 1);
    add_node(&b, "Div", "v", "numf", "twof", NULL);
    add_node(&b, "Round", "rv", "v", NULL, NULL);
    add_node(&b, "Ceil", "cv", "v", NULL, NULL);
    add_node(&b, "Floor", "fv", "v", NULL, NULL);
    add_node(&b, "Sign", "sv", "v", NULL, NULL);
    add_node(&b, "Mul", "fs", "fv", "sv", NULL);
    set_int_attr(&b, add_node(&b, "Cast", "ri", "rv", NULL, NULL), "to", 7);
    set_int_attr(&b, add_node(&b, "Cast", "ci", "cv", NULL, NULL), "to", 7);
    set_int_attr(&b, add_node(&b, "Cast", "fi", "fs", NULL, NULL), "to", 7);
    add_node(&b, "Sign", "s7", "seven", NULL, NULL);
    set_int_attr(&b, add_node(&b, "Concat", "c1", "m1", "ri", "ci"), "axis", 0);
    set_int_attr(&b, add_node(&b, "Concat", "shp", "c1", "fi", "s7"), "axis", 0);
    add_node(&b, "Reshape", "y", "x", "shp", NULL);
    graph *g = load(&b, 2);
    if (!g)
        return;
    const graph_node *rs = only_node(g, GRAPH_OP_reshape);
    CHECK_MSG(rs && g->nnodes == 1, "want one reshape, have %d nodes", (int)g->nnodes);
    static const int64_t want[8] = {-1, 2, 2, 3, 2, 2, 1, 1};
    if (rs) {
        const graph_reshape_attrs *a = tg_node_attrs(rs);
        CHECK_MSG(a->shape.n == 8 && !memcmp(a->shape.v, want, sizeof want),
                  "folded shape [%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld]",
                  (long long)a->shape.v[0], (long long)a->shape.v[1], (long long)a->shape.v[2],
                  (long long)a->shape.v[3], (long long)a->shape.v[4], (long long)a->shape.v[5],
                  (long long)a->shape.v[6], (long long)a->shape.v[7]);
    }
    int64_t xd[2] = {3, 48}, yd[8] = {3, 2, 2, 3, 2, 2, 1, 1};
    float x[3 * 48];
    check_fill(x, 3 * 48, 4, -1, 1);
    check_out(run(g, 2, xd, x), 8, yd, x, 3 * 48, "rounding");
    graph_free(g);
}

/* y = Add(x, ConstantOfShape(Concat(Unsqueeze(Gather(Shape(x), 0)), [4]))),
 * x [N,1] (f32 zeros): the zeros follow N, so y is [N,4]. */
static void batch_zeros(void)
{
    model b;
    model_init(&b, 2, (const int64_t[]){-1, 1});
    add_ints(&b, "zero", 0, (const int64_t[]){0});
    add_ints(&b, "axes0", 1, (const int64_t[]){0});
    add_ints(&b, "c4", 1, (const int64_t[]){4});
    add_node(&b, "Shape", "s", "x", NULL, NULL);
    add_node(&b, "Gather", "n", "s", "zero", NULL);
    add_node(&b, "Unsqueeze", "n1", "n", "axes0", NULL);
    set_int_attr(&b, add_node(&b, "Concat", "shp", "n1", "c4", NULL), "axis", 0);
    add_node(&b, "ConstantOfShape", "z", "shp", NULL, NULL);
    add_node(&b, "Add", "y", "x", "z", NULL);
    graph *g = load(&b, 3);
    if (!g)
        return;
    CHECK_MSG(nwarned == 0, "no warning, got \"%s\"", warned);
    for (int32_t i = 0; i < g->nnodes; i++)
        CHECK_MSG(!(g->nodes[i].flags & GRAPH_NODE_SPECIALIZED), "node %d (%s) specialized",
                  (int)i, graph_ops[g->nodes[i].op].name);
    for (int batch = 3; batch <= 5; batch += 2) {
        int64_t xd[2] = {batch, 1}, yd[2] = {batch, 4};
        float x[5], ref[20];
        check_fill(x, batch, 7, -1, 1);
        for (int i = 0; i < batch * 4; i++)
            ref[i] = x[i / 4] + 0.0f;
        check_out(run(g, 2, xd, x), 2, yd, ref, batch * 4, "zeros");
    }
    graph_free(g);
}

/* Reshape(x, Concat(N, M, [4])), x [N,M,4]: two dynamic entries cannot
 * both be -1, so the traced sizes are used and the node is specialized. */
static void two_dynamic(void)
{
    model b;
    model_init(&b, 3, (const int64_t[]){-1, -2, 4});
    add_ints(&b, "zero", 0, (const int64_t[]){0});
    add_ints(&b, "one", 0, (const int64_t[]){1});
    add_ints(&b, "axes0", 1, (const int64_t[]){0});
    add_ints(&b, "c4", 1, (const int64_t[]){4});
    add_node(&b, "Shape", "s", "x", NULL, NULL);
    add_node(&b, "Gather", "n", "s", "zero", NULL);
    add_node(&b, "Gather", "m", "s", "one", NULL);
    add_node(&b, "Unsqueeze", "n1", "n", "axes0", NULL);
    add_node(&b, "Unsqueeze", "m1", "m", "axes0", NULL);
    set_int_attr(&b, add_node(&b, "Concat", "shp", "n1", "m1", "c4"), "axis", 0);
    add_node(&b, "Reshape", "y", "x", "shp", NULL);
    graph *g = load(&b, 2);
    if (!g)
        return;
    const graph_node *rs = only_node(g, GRAPH_OP_reshape);
    CHECK(rs && (rs->flags & GRAPH_NODE_SPECIALIZED));
    CHECK_MSG(nwarned == 1 && !strcmp(warned, "dyn.onnx:7 Reshape: reshape fixes a size "
                                      "computed from dynamic dims 'N' (traced as 2), 'M' "
                                      "(traced as 2) at its traced value (a shape or "
                                      "constant that does not follow the dim): a run at "
                                      "other sizes fails there"),
              "one warning naming the node and the dims, got %d: \"%s\"", nwarned, warned);
    if (rs) {
        const graph_reshape_attrs *a = tg_node_attrs(rs);
        CHECK(a->shape.n == 3 && a->shape.v[0] == 2 && a->shape.v[1] == 2);
    }
    int64_t xd[3] = {2, 2, 4};
    float x[48];
    check_fill(x, 48, 9, -1, 1);
    check_out(run(g, 3, xd, x), 3, xd, x, 16, "traced size");
    int64_t other[3] = {3, 4, 4};
    CHECK(run(g, 3, other, x) == NULL);
    CHECK_ERROR("specialized on the traced sizes");
    eager_clear_error();
    graph_free(g);
}

/*
 * Reshape(x, [0, k]) with x [N,3] loaded at N = 5: the 0 copies N and
 * becomes the shape's -1 only when the shape as written fits x.  k = 5
 * (25 elements for 15) is refused: the -1 made the count come out ([3,5])
 * and ran what ONNX Runtime refuses (tools/difffuzz found it).  k = 3
 * follows N.  x [N,0] with [0, 0]: a -1 over 0 elements is ambiguous, so
 * the traced sizes hold and the node is specialized.
 */
static void copied_dim_count(void)
{
    for (int k = 3; k <= 5; k += 2) {
        model b;
        model_init(&b, 2, (const int64_t[]){-1, 3});
        add_ints(&b, "shp", 2, (const int64_t[]){0, k});
        add_node(&b, "Reshape", "y", "x", "shp", NULL);
        char err[512] = "";
        tg_status st;
        size_t len = onnx__model_proto__get_packed_size(&b.m);
        uint8_t *buf = malloc(len + 1);
        onnx__model_proto__pack(&b.m, buf);
        format_onnx_load_opts o = {0, 5, NULL, NULL};
        graph *g = onnx_read_mem(buf, len, "dyn.onnx", &o, &st, err, sizeof err);
        free(buf);
        if (k == 5) {
            CHECK_MSG(!g && !strcmp(err, "dyn.onnx: node 0 '' (Reshape): reshape: [5,3]: cannot "
                                         "reshape [5,3] (15 elements) to [5,5] (25 elements)"),
                      "[0, 5] refused, got \"%s\"", err);
        } else {
            const graph_node *rs = g ? only_node(g, GRAPH_OP_reshape) : NULL;
            CHECK_MSG(rs, "[0, 3] imports: %s", err);
            if (rs)
                CHECK(((const graph_reshape_attrs *)tg_node_attrs(rs))->shape.v[0] == -1);
        }
        graph_free(g);
    }
    model b;
    model_init(&b, 2, (const int64_t[]){-1, 0});
    add_ints(&b, "shp", 2, (const int64_t[]){0, 0});
    add_node(&b, "Reshape", "y", "x", "shp", NULL);
    graph *g = load(&b, 2);
    const graph_node *rs = g ? only_node(g, GRAPH_OP_reshape) : NULL;
    CHECK_MSG(rs && (rs->flags & GRAPH_NODE_SPECIALIZED) && nwarned == 1,
              "[N,0] to [0,0]: specialized, warned once (%d)", nwarned);
    if (rs) {
        const graph_reshape_attrs *a = tg_node_attrs(rs);
        CHECK(a->shape.n == 2 && a->shape.v[0] == 2 && a->shape.v[1] == 0);
    }
    graph_free(g);
    /* Flatten(axis 1) of x [N,0]: the same (it was refused, the -1 ambiguous) */
    model_init(&b, 2, (const int64_t[]){-1, 0});
    set_int_attr(&b, add_node(&b, "Flatten", "y", "x", NULL, NULL), "axis", 1);
    g = load(&b, 2);
    rs = g ? only_node(g, GRAPH_OP_reshape) : NULL;
    CHECK_MSG(rs && (rs->flags & GRAPH_NODE_SPECIALIZED) && nwarned == 1,
              "Flatten of [N,0]: specialized, warned once (%d)", nwarned);
    if (rs) {
        const graph_reshape_attrs *a = tg_node_attrs(rs);
        CHECK(a->shape.n == 2 && a->shape.v[0] == 2 && a->shape.v[1] == 0);
    }
    graph_free(g);
}

/*
 * y = Pad(Pad(Shape(x), [0, 0], reflect), [2, 0], edge) over x [N]: the
 * first Pad, of zero pads, binds its input, the traced Shape constant
 * entering the graph there; no node carried the specialized flag and the
 * second Pad's nodes read a graph value, so nothing guarded N and a run at
 * N = 5 returned [4, 4, 4] (difffuzz seed 5001 model 35).  Now a size guard
 * stops it, and the import warns.
 */
static void shape_through_unpadded(void)
{
    model b;
    Onnx__AttributeProto mode[2], *modes[2] = {&mode[0], &mode[1]};
    static const char *const names[2] = {"reflect", "edge"};
    model_init(&b, 1, (const int64_t[]){-1});
    add_ints(&b, "p0", 2, (const int64_t[]){0, 0});
    add_ints(&b, "p2", 2, (const int64_t[]){2, 0});
    add_node(&b, "Shape", "s", "x", NULL, NULL);
    Onnx__NodeProto *pads[2] = {add_node(&b, "Pad", "p", "s", "p0", NULL),
                                add_node(&b, "Pad", "y", "p", "p2", NULL)};
    for (int i = 0; i < 2; i++) {
        mode[i] = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
        mode[i].name = "mode";
        mode[i].has_type = 1;
        mode[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        mode[i].has_s = 1;
        mode[i].s.data = (uint8_t *)names[i];
        mode[i].s.len = strlen(names[i]);
        pads[i]->n_attribute = 1;
        pads[i]->attribute = &modes[i];
    }
    graph *g = load(&b, 4);
    CHECK_MSG(g && g->nguards > 0 && nwarned > 0, "Shape through Pad: guarded (%d guards), "
              "warned (%d)", g ? (int)g->nguards : -1, nwarned);
    if (g) {
        const float x[5] = {0};
        eager_tensor *y = run(g, 1, (const int64_t[]){5}, x);
        CHECK_MSG(!y && strstr(eager_error(), "guard failed"), "N = 5 stops at the guard: %s",
                  y ? "ran" : eager_error());
        eager_release(y);
        eager_clear_error();
    }
    graph_free(g);
}

int main(void)
{
    long live = eager_live_tensors();
    batch_reshape();
    batch_expand();
    folded_range();
    folded_rounding();
    batch_zeros();
    two_dynamic();
    copied_dim_count();
    shape_through_unpadded();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
