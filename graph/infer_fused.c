/* infer_fused.c - TEMPORARY: being written. */
#include "op.h"

tg_status graph_infer_fused(graph_infer_ctx *c)
{
    return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "fused is being written");
}
