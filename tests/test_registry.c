/*
 * test_registry.c - the op registry and the dispatcher's generic behaviour:
 * table consistency, attribute defaults, NULL propagation, EAGER_NONE,
 * hooks with the caller's site, tags, threads setting.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/kernel.h"

static void test_table(void)
{
    for (int i = 0; i < GRAPH_OP_COUNT; i++) {
        const graph_op_info *op = graph_op_get((graph_op)i);
        CHECK_MSG(op && op->name && op->infer, "op %d has name and infer", i);
        if (!op || !op->name)
            continue;
        CHECK_MSG(graph_op_find(op->name, strlen(op->name)) == (graph_op)i,
                  "find(%s)", op->name);
        CHECK_MSG(eager_kernels[i] != NULL, "kernel for %s", op->name);
        CHECK_MSG(op->version >= 1, "%s has a version", op->name);
        CHECK_MSG(op->min_in >= 1 && (op->max_in < 0 || op->max_in >= op->min_in),
                  "%s input counts", op->name);
        CHECK_MSG((op->attr_size == 0) == (op->nattrs == 0), "%s attrs", op->name);
        const graph_attr_desc *d = op->nattrs ? op->attr_descs() : NULL;
        for (int k = 0; d && k < op->nattrs; k++)
            CHECK_MSG(d[k].name && d[k].offset < op->attr_size, "%s.%s in struct",
                      op->name, d[k].name ? d[k].name : "?");
    }
    CHECK(graph_op_find("no_such_op", 10) == GRAPH_OP_COUNT);
    CHECK(graph_op_find("add", 2) == GRAPH_OP_COUNT); /* "ad" */
    CHECK(graph_op_get(GRAPH_OP_COUNT) == NULL);
    CHECK(graph_ops[GRAPH_OP_add].props & GRAPH_PROP_COMMUTATIVE);
    CHECK(!(graph_ops[GRAPH_OP_sub].props & GRAPH_PROP_COMMUTATIVE));
    CHECK(graph_ops[GRAPH_OP_neg].props & GRAPH_PROP_INVOLUTION);
    CHECK(graph_ops[GRAPH_OP_relu].props & GRAPH_PROP_IDEMPOTENT);
    CHECK(graph_ops[GRAPH_OP_concat].max_in == -1);
    CHECK(graph_ops[GRAPH_OP_split].nout == -1);
}

static void test_defaults(void)
{
    graph_attrs a;
    memset(&a, 0x5a, sizeof a);
    graph_attrs_default(GRAPH_OP_leaky_relu, &a);
    CHECK(a.leaky_relu.alpha == 0.01f);
    graph_attrs_default(GRAPH_OP_clip, &a);
    CHECK(isinf(a.clip.min) && a.clip.min < 0 && isinf(a.clip.max) && a.clip.max > 0);
    graph_attrs_default(GRAPH_OP_conv2d, &a);
    CHECK(a.conv2d.groups == 1 && a.conv2d.stride.n == 0 && a.conv2d.padding.v[3] == 0);
    graph_attrs_default(GRAPH_OP_layer_norm, &a);
    CHECK(a.layer_norm.axis == -1 && a.layer_norm.eps == 1e-5f);
    graph_attrs_default(GRAPH_OP_cast, &a);
    CHECK(a.cast.to == GRAPH_F32);
}

typedef struct seen {
    int ops, creates, reads;
    graph_op last_op;
    int last_line;
    const char *last_file;
    eager_read_kind last_kind;
} seen;

static tg_status on_op(void *ud, graph_op op, eager_tensor *const *in, int nin,
                       const void *attrs, eager_tensor *const *out, int nout,
                       const eager_site *site)
{
    seen *s = ud;
    s->ops++;
    s->last_op = op;
    s->last_line = site->line;
    s->last_file = site->file;
    eager_set_tag(out[0], 1000 + (uint64_t)s->ops);
    return TG_OK;
}

static tg_status on_create(void *ud, eager_tensor *t, const eager_site *site)
{
    ((seen *)ud)->creates++;
    return TG_OK;
}

static tg_status on_read(void *ud, const eager_tensor *t, eager_read_kind kind,
                         int64_t index, const eager_site *site)
{
    seen *s = ud;
    s->reads++;
    s->last_kind = kind;
    s->last_line = site->line;
    return kind == EAGER_READ_BUFFER ? TG_ERR_GUARD : TG_OK;
}

static void test_hooks(void)
{
    seen s = {0};
    eager_hooks h = {on_op, on_create, on_read, &s};
    eager_pool_push();
    CHECK(eager_set_hooks(&h) == NULL);
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(3));
    eager_tensor *y = eager_add(x, x);
    int line = __LINE__ - 1;
    CHECK(s.creates == 1 && s.ops == 1 && s.last_op == GRAPH_OP_add);
    CHECK(s.last_line == line && strstr(s.last_file, "test_registry.c"));
    CHECK(eager_tag(y) == 1001 && eager_tag(x) == 0);
    eager_tensor *one = eager_reduce_sum(y, TG_NOINTS, 0);
    CHECK(eager_item(one) == 6.0);
    line = __LINE__ - 1;
    CHECK(s.reads == 1 && s.last_kind == EAGER_READ_VALUE && s.last_line == line);
    CHECK(eager_bool(one) == 1 && s.last_kind == EAGER_READ_DECISION);
    CHECK(eager_data(one) == NULL); /* the hook refused the read */
    CHECK(eager_peek(one) != NULL && s.reads == 3); /* peek is not reported */
    CHECK(eager_set_hooks(NULL) == &h);
    eager_add(x, x);
    CHECK(s.ops == 2); /* reduce_sum was the second; none after removal */
    eager_clear_error();
    eager_pool_pop();
}

static void test_null_and_none(void)
{
    eager_pool_push();
    eager_tensor *x = eager_ones(GRAPH_F32, TG_SHAPE(2, 3));
    CHECK(eager_add(x, NULL) == NULL);
    CHECK_ERROR("add: input 1 is NULL");
    /* a chain after a failure: NULL flows through, the first error stays */
    eager_tensor *bad = eager_add(x, eager_ones(GRAPH_F32, TG_SHAPE(4)));
    int line = __LINE__ - 1;
    eager_tensor *more = eager_relu(eager_mul(bad, x));
    CHECK(bad == NULL && more == NULL);
    char want[64];
    snprintf(want, sizeof want, "test_registry.c:%d test_null_and_none", line);
    CHECK_MSG(strstr(eager_error(), want) != NULL, "\"%s\" names %s", eager_error(), want);
    CHECK_ERROR("add: [2,3] x [4]");
    /* EAGER_NONE is only for trailing optional inputs */
    eager_tensor *w = eager_ones(GRAPH_F32, TG_SHAPE(5, 3));
    eager_tensor *y = eager_linear(x, w, EAGER_NONE);
    CHECK(y && eager_dim(y, 1) == 5);
    CHECK(eager_add(x, EAGER_NONE) == NULL);
    CHECK_ERROR("add: [2,3]: takes 2 inputs, got 1");
    CHECK(eager_where(EAGER_NONE, x, x) == NULL);
    CHECK_ERROR("only trailing inputs are optional");
    eager_pool_pop();
}

static void test_threads(void)
{
    CHECK(eager_threads() == 1);
    eager_set_threads(2);
    CHECK(eager_threads() == 2);
    eager_set_threads(0);
    CHECK(eager_threads() == 1);
}

int main(void)
{
    long live = eager_live_tensors();
    test_table();
    test_defaults();
    test_hooks();
    test_null_and_none();
    test_threads();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
