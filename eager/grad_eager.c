/*
 * grad_eager.c - the eager builder of the gradient rules, and
 * eager_op_grad (grad_eager.h).
 */
#include <string.h>

#include "grad_eager.h"
#include "internal.h"

#define MAX_IO 64

static int eb_opn(grad_builder *b, graph_op op, const grad_v *in, int nin, const void *attrs,
                  grad_v *outv, int max_out)
{
    eager_tensor *out[MAX_IO];
    for (int i = 0; i < nin; i++)
        if (!in[i])
            return -1;
    int n = eager_dispatch(op, (eager_tensor *const *)in, nin, attrs, out, MAX_IO, b->ud);
    if (n <= 0)
        return -1;
    for (int i = 0; i < n && i < max_out; i++)
        outv[i] = (grad_v)out[i];
    return n < max_out ? n : max_out;
}

static grad_v eb_op(grad_builder *b, graph_op op, const grad_v *in, int nin, const void *attrs)
{
    grad_v out[1];
    return eb_opn(b, op, in, nin, attrs, out, 1) > 0 ? out[0] : NULL;
}

static grad_v eb_constant(grad_builder *b, graph_dtype dt, const graph_ints *shape,
                          const void *data)
{
    return (grad_v)eager_from_data_at(((const eager_site *)b->ud)->file,
                                      ((const eager_site *)b->ud)->line,
                                      ((const eager_site *)b->ud)->func, dt, *shape, data);
}

static const graph_type *eb_type(grad_builder *b, grad_v v)
{
    (void)b;
    return &((const eager_tensor *)v)->type;
}

static tg_status eb_fail(grad_builder *b, tg_status st, const char *msg)
{
    eager_set_error(st, b->ud, "%s", msg);
    return st;
}

void eager_grad_builder(grad_builder *b, const eager_site *site)
{
    b->op = eb_op;
    b->opn = eb_opn;
    b->constant = eb_constant;
    b->type = eb_type;
    b->fail = eb_fail;
    b->ud = (void *)site;
}

tg_status eager_op_grad_typed(graph_op op, const graph_type *in_t, eager_tensor *const *in,
                              int nin, const void *attrs, const graph_type *out_t,
                              eager_tensor *const *out, int nout, eager_tensor *const *gout,
                              const unsigned char *need, eager_tensor **gin,
                              const eager_site *site)
{
    if ((unsigned)op >= GRAPH_OP_COUNT || nin < 0 || nin > MAX_IO || nout < 1 || nout > MAX_IO ||
        !in_t || !in || !out_t || !out || !gout || !need || !gin) {
        eager_set_error(TG_ERR_ARG, site, "eager_op_grad: bad arguments");
        return TG_ERR_ARG;
    }
    for (int i = 0; i < nin; i++)
        gin[i] = NULL;
    graph_attrs defaults;
    if (graph_ops[op].attr_size && !attrs) {
        graph_attrs_default(op, &defaults);
        attrs = &defaults;
    }
    grad_builder b;
    eager_grad_builder(&b, site);
    grad_v gv[MAX_IO];
    grad_ctx c = {op, attrs, nin, nout, in_t, out_t, (const grad_v *)in, (const grad_v *)out,
                  (const grad_v *)gout, need, gv};
    if (eager_pool_push() != TG_OK)
        return eager_status();
    tg_status st = grad_apply(&b, &c);
    for (int i = 0; i < nin; i++)
        gin[i] = st == TG_OK && gv[i] ? eager_retain_at(site->file, site->line, site->func,
                                                        (eager_tensor *)gv[i])
                                      : NULL;
    eager_pool_pop_at(site->file, site->line, site->func);
    return st;
}

tg_status eager_op_grad(graph_op op, eager_tensor *const *in, int nin, const void *attrs,
                        eager_tensor *const *out, int nout, eager_tensor *const *gout,
                        const unsigned char *need, eager_tensor **gin, const eager_site *site)
{
    if ((unsigned)op >= GRAPH_OP_COUNT || nin < 0 || nin > MAX_IO || nout < 1 || nout > MAX_IO ||
        !in || !out || !gout || !need || !gin) {
        eager_set_error(TG_ERR_ARG, site, "eager_op_grad: bad arguments");
        return TG_ERR_ARG;
    }
    graph_type in_t[MAX_IO], out_t[MAX_IO];
    for (int i = 0; i < nin; i++) {
        gin[i] = NULL;
        if (!in[i] || in[i] == EAGER_NONE) {
            eager_set_error(TG_ERR_ARG, site, "eager_op_grad: %s: input %d missing",
                            graph_ops[op].name, i);
            return TG_ERR_ARG;
        }
        in_t[i] = in[i]->type;
    }
    for (int o = 0; o < nout; o++) {
        if (!out[o]) {
            eager_set_error(TG_ERR_ARG, site, "eager_op_grad: %s: output %d missing",
                            graph_ops[op].name, o);
            return TG_ERR_ARG;
        }
        out_t[o] = out[o]->type;
    }
    return eager_op_grad_typed(op, in_t, in, nin, attrs, out_t, out, nout, gout, need, gin,
                               site);
}
