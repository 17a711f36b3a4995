/*
 * workload_sizes.h - the reduced sizes at which the OpenCL tests run the
 * benchmark workloads (workloads/workloads.c; the suite runs the full
 * ones): every structure kept (conv chains with channels a multiple of 16
 * so -O3's blocked layout appears, the encoder's attention, fused chains).
 */
#ifndef TG_TESTS_WORKLOAD_SIZES_H
#define TG_TESTS_WORKLOAD_SIZES_H

#include "workloads/workloads.h"

static inline workload_size test_workload_size(workload_kind k)
{
    switch (k) {
    case WL_MLP: return (workload_size){.batch = 8, .in = 100, .width = 64, .out = 10};
    case WL_RESBLOCK: return (workload_size){.batch = 1, .in = 14, .width = 32};
    case WL_ENCODER:
    case WL_ENCODER_FUSED:
        return (workload_size){.batch = 1, .in = 16, .width = 32, .out = 4, .ffn = 64};
    case WL_CHAIN: return (workload_size){.in = 100000};
    default: return (workload_size){.in = 16, .iters = 100};
    }
}

#endif
