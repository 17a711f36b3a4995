/*
 * infer_fused.c - shape and dtype inference of `fused`: the program
 * attribute is parsed and validated.  Its grammar, rules and limits
 * (32 statements, 16 inputs, 511 bytes) are in graph/fused_prog.h.
 * Every input is f32, and the output is the NumPy broadcast of all
 * inputs (what the chain of elementwise ops it replaces would give).
 */
#include "fused_prog.h"
#include "infer.h"

tg_status graph_infer_fused(graph_infer_ctx *c)
{
    const graph_fused_attrs *at = c->attrs;
    if (c->nin > FUSED_MAX_INPUTS)
        return graph_infer_fail(c, TG_ERR_ARG, "%d inputs, at most %d", c->nin,
                                FUSED_MAX_INPUTS);
    for (int i = 0; i < c->nin; i++)
        if (c->in[i].dtype != GRAPH_F32)
            return graph_infer_fail(c, TG_ERR_DTYPE, "input %d has dtype %s, want f32", i,
                                    graph_dtype_name(c->in[i].dtype));
    fused_prog p;
    tg_status st = fused_prog_parse(at->prog.s, c->nin, &p, c->err, c->errlen);
    if (st != TG_OK)
        return st;
    graph_type out = c->in[0];
    for (int i = 1; i < c->nin; i++) {
        graph_type next;
        if (graph_broadcast(&out, &c->in[i], &next) != TG_OK) {
            char a[128], b[128];
            return graph_infer_fail(c, TG_ERR_SHAPE, "input %d %s does not broadcast with "
                                    "%s (inputs 0..%d)", i,
                                    graph_shape_str(&c->in[i], a, sizeof a),
                                    graph_shape_str(&out, b, sizeof b), i - 1);
        }
        next.dtype = GRAPH_F32; /* graph_broadcast sets the dims only */
        out = next;
    }
    c->out[0] = out;
    return TG_OK;
}
