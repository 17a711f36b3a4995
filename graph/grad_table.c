/*
 * grad_table.c - the gradient table, expanded from grad.def, and the one
 * entry point that runs a rule (grad_apply).
 *
 * Each line of grad.def must name the op at the same position in ops.def:
 * a line missing, extra or out of order stops the build here, so a new op
 * cannot be left without a rule or a mark.
 */
#include <stdio.h>

#include "grad.h"

/* The rules (graph/grad_rules*.c). */
#define GRAD(name, ...) tg_status grad_rule_##name(grad_builder *b, const grad_ctx *c);
#define NODIFF(name, why)
#define NORULE(name, why)
#include "grad.def"
#undef GRAD
#undef NODIFF
#undef NORULE

enum grad_seq {
#define GRAD(name, ...) GRAD_SEQ_##name,
#define NODIFF(name, why) GRAD_SEQ_##name,
#define NORULE(name, why) GRAD_SEQ_##name,
#include "grad.def"
#undef GRAD
#undef NODIFF
#undef NORULE
    GRAD_SEQ_COUNT
};

_Static_assert((int)GRAD_SEQ_COUNT == (int)GRAPH_OP_COUNT,
               "graph/grad.def: every op of graph/ops.def needs a line (GRAD with a rule, "
               "NODIFF or NORULE)");
#define GRAD(name, ...)                                                          \
    _Static_assert((int)GRAD_SEQ_##name == (int)GRAPH_OP_##name,                         \
                   "graph/grad.def: " #name " is not at its place in ops.def's order");
#define NODIFF(name, why) GRAD(name)
#define NORULE(name, why) GRAD(name)
#include "grad.def"
#undef GRAD
#undef NODIFF
#undef NORULE

const grad_info graph_grads[GRAPH_OP_COUNT] = {
#define GRAD(name, diff, sin, sout) \
    [GRAPH_OP_##name] = {GRAD_KIND_RULE, (diff), (sin), (sout), grad_rule_##name, NULL},
#define NODIFF(name, why) [GRAPH_OP_##name] = {GRAD_KIND_NODIFF, 0, 0, 0, NULL, why},
#define NORULE(name, why) [GRAPH_OP_##name] = {GRAD_KIND_NORULE, 0, 0, 0, NULL, why},
#include "grad.def"
#undef GRAD
#undef NODIFF
#undef NORULE
};

const char *grad_kind_name(grad_kind k)
{
    switch (k) {
    case GRAD_KIND_RULE: return "rule";
    case GRAD_KIND_NODIFF: return "not differentiable";
    case GRAD_KIND_NORULE: return "no rule yet";
    }
    return "?";
}

int grad_input_diff(graph_op op, int i, graph_dtype dt)
{
    if ((unsigned)op >= GRAPH_OP_COUNT || i < 0 || dt != GRAPH_F32)
        return 0;
    const grad_info *g = &graph_grads[op];
    if (g->kind != GRAD_KIND_RULE)
        return 0;
    return g->diff == GRAD_IN_ALL || (i < 32 && (g->diff >> i) & 1u);
}

int grad_input_flows(graph_op op, int i, graph_dtype dt)
{
    if ((unsigned)op < GRAPH_OP_COUNT && graph_grads[op].kind == GRAD_KIND_NORULE)
        return dt == GRAPH_F32;
    return grad_input_diff(op, i, dt);
}

tg_status grad_apply(grad_builder *b, const grad_ctx *c)
{
    char msg[256];
    for (int i = 0; i < c->nin; i++)
        c->gin[i] = NULL;
    if ((unsigned)c->op >= GRAPH_OP_COUNT)
        return b->fail(b, TG_ERR_ARG, "gradient: invalid op");
    const grad_info *g = &graph_grads[c->op];
    const char *name = graph_ops[c->op].name;
    if (g->kind != GRAD_KIND_RULE) {
        snprintf(msg, sizeof msg, "%s: %s: %s", name,
                 g->kind == GRAD_KIND_NORULE ? "no gradient rule" : "not differentiable", g->why);
        return b->fail(b, g->kind == GRAD_KIND_NORULE ? TG_ERR_UNSUPPORTED : TG_ERR_ARG, msg);
    }
    int any = 0;
    for (int i = 0; i < c->nin; i++) {
        if (!c->need[i])
            continue;
        if (!grad_input_diff(c->op, i, c->in_type[i].dtype)) {
            snprintf(msg, sizeof msg, "%s: input %d (%s) carries no gradient", name, i,
                     graph_dtype_name(c->in_type[i].dtype));
            return b->fail(b, TG_ERR_ARG, msg);
        }
        any = 1;
    }
    for (int i = 0; i < c->nin; i++)
        if ((g->saves_in >> i) & 1u && !c->in[i]) {
            snprintf(msg, sizeof msg, "%s: input %d was not saved for the gradient", name, i);
            return b->fail(b, TG_ERR_STATE, msg);
        }
    for (int i = 0; i < c->nout && i < 32; i++)
        if ((g->saves_out >> i) & 1u && !c->out[i]) {
            snprintf(msg, sizeof msg, "%s: output %d was not saved for the gradient", name, i);
            return b->fail(b, TG_ERR_STATE, msg);
        }
    if (!any)
        return TG_OK;
    tg_status st = g->rule(b, c);
    if (st != TG_OK) {
        for (int i = 0; i < c->nin; i++)
            c->gin[i] = NULL;
        return st;
    }
    for (int i = 0; i < c->nin; i++)
        if (c->need[i] && !c->gin[i])
            return b->fail(b, TG_ERR_STATE, "gradient rule made no value (an earlier error)");
    return TG_OK;
}
