/*
 * infer.h - the infer functions named in ops.def and the helper they share.
 * Internal (not installed): callers outside the library run inference
 * through graph_infer (op.h), which checks the input count and dtypes
 * first, or through the graph_ops table's infer pointers.
 */
#ifndef TG_GRAPH_INFER_H
#define TG_GRAPH_INFER_H

#include "op.h"

/* Infer functions named in ops.def. */
#define OP(name, v, mi, ma, no, p, dt, inf) tg_status inf(graph_infer_ctx *c);
#define OPA(name, v, mi, ma, no, p, dt, inf, attrs)                         \
    tg_status inf(graph_infer_ctx *c);
#include "ops.def"
#undef OP
#undef OPA

/* Formats a reason into c->err; returns status. */
tg_status graph_infer_fail(graph_infer_ctx *c, tg_status status,
                           const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
