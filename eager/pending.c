/* pending.c - TEMPORARY weak placeholders while ops are being written in parallel; removed before the foundation issue closes. */
#include "graph/op.h"
#include "eager/kernel.h"

__attribute__((weak)) tg_status graph_infer_batch_norm(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_binary(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_cast(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_compare(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_concat(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_conv2d(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_expand(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_flatten(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_gather(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_global_pool(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_layer_norm(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_linear(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_matmul(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_pad(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_pool2d(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_reduce(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_reshape(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_slice(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_softmax(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_split(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_squeeze(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_transpose(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_unary(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_unsqueeze(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status graph_infer_where(graph_infer_ctx *c) { return graph_infer_fail(c, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_neg(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_abs(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_exp(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_log(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_sqrt(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_rsqrt(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_reciprocal(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_relu(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_leaky_relu(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_sigmoid(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_tanh(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_gelu(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_silu(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_erf(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_clip(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_add(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_sub(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_mul(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_div(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_pow(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_maximum(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_minimum(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_eq(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_lt(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_gt(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_where(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_matmul(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_linear(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_conv2d(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_max_pool2d(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_avg_pool2d(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_global_avg_pool(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_batch_norm(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_layer_norm(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_softmax(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_log_softmax(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_reduce_sum(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_reduce_mean(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_reduce_max(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_reshape(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_flatten(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_transpose(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_concat(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_split(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_slice(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_pad(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_squeeze(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_unsqueeze(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_expand(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_cast(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
__attribute__((weak)) tg_status eager_kernel_gather(const eager_kargs *a) { return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "not implemented yet"); }
