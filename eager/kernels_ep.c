/* kernels_ep.c - TEMPORARY: being written. */
#include "kernel.h"

tg_status eager_kernel_linear_ep(const eager_kargs *a)
{
    return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "linear_ep is being written");
}

tg_status eager_kernel_conv2d_ep(const eager_kargs *a)
{
    return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "conv2d_ep is being written");
}
