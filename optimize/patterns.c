/* patterns.c - TEMPORARY: being written; does nothing yet. */
#include "opt.h"

static tg_status run(graph *g, opt_ctx *ctx)
{
    (void)g;
    (void)ctx;
    return TG_OK;
}

const opt_pass opt_pass_patterns = {"patterns", run};
