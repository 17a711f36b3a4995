/*
 * grad_util.h - helpers the gradient rules share (graph/grad_util.c):
 * short forms of builder calls, and the gradient-shaped ops every layer
 * needs (sum back to an input's shape, reshape and expand to a type).
 * Every helper passes NULL through (an earlier error), as builder ops do.
 */
#ifndef TG_GRAPH_GRAD_UTIL_H
#define TG_GRAPH_GRAD_UTIL_H

#include "grad.h"

/* op(x) / op(x, y) with attrs (NULL: defaults). */
grad_v gu_op1(grad_builder *b, graph_op op, grad_v x, const void *attrs);
grad_v gu_op2(grad_builder *b, graph_op op, grad_v x, grad_v y);
grad_v gu_op3(grad_builder *b, graph_op op, grad_v x, grad_v y, grad_v z);
/* An f32 scalar constant. */
grad_v gu_scalar(grad_builder *b, double v);
/* x op scalar. */
grad_v gu_mul_s(grad_builder *b, grad_v x, double s);
grad_v gu_add_s(grad_builder *b, grad_v x, double s);
/* where(cond, a, 0) and where(cond, 0, a). */
grad_v gu_keep(grad_builder *b, grad_v cond, grad_v a);
grad_v gu_drop(grad_builder *b, grad_v cond, grad_v a);
/* Casts a bool to f32 (1 or 0). */
grad_v gu_f32(grad_builder *b, grad_v x);

/* x reshaped to dims[0..n). */
grad_v gu_reshape(grad_builder *b, grad_v x, const int64_t *dims, int n);
/* x reshaped to t's dims. */
grad_v gu_reshape_to(grad_builder *b, grad_v x, const graph_type *t);
/* x broadcast to t's dims. */
grad_v gu_expand_to(grad_builder *b, grad_v x, const graph_type *t);
/* Zeros of type t (f32). */
grad_v gu_zeros(grad_builder *b, const graph_type *t);
/* g (a broadcast result) summed back to t's shape: the dims t lacks or
 * has as 1 are summed.  g itself when the shapes are equal. */
grad_v gu_sum_to(grad_builder *b, grad_v g, const graph_type *t);
/* reduce_sum / reduce_mean over axes[0..n) (n 0 is refused: the op would
 * read it as every dim). */
grad_v gu_sum(grad_builder *b, grad_v x, const int64_t *axes, int n, int keepdim);
grad_v gu_mean(grad_builder *b, grad_v x, const int64_t *axes, int n, int keepdim);
/* slice of x on one axis [start, end). */
grad_v gu_slice1(grad_builder *b, grad_v x, int axis, int64_t start, int64_t end);
/* An i64 constant of shape dims[0..n). */
grad_v gu_i64(grad_builder *b, const int64_t *data, const int64_t *dims, int n);
/* Fails through the builder with "op: msg" (the op's name first). */
tg_status gu_fail(grad_builder *b, const grad_ctx *c, tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* TG_OK when every needed gradient was made, else the pending error's
 * status (TG_ERR_STATE: the builder recorded it). */
tg_status gu_done(const grad_ctx *c);

#endif
