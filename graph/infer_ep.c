/* infer_ep.c - TEMPORARY: being written. */
#include "op.h"

tg_status graph_infer_linear_ep(graph_infer_ctx *c)
{
    return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "linear_ep is being written");
}

tg_status graph_infer_conv2d_ep(graph_infer_ctx *c)
{
    return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "conv2d_ep is being written");
}
