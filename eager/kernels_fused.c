/* kernels_fused.c - TEMPORARY: being written. */
#include "kernel.h"

tg_status eager_kernel_fused(const eager_kargs *a)
{
    return eager_kernel_fail(a, TG_ERR_UNSUPPORTED, "fused is being written");
}
