/*
 * op_table.c - the OpenCL backend's op table (ocl.h's ocl_op, one slot per
 * graph op; NULL: unsupported), built once from each op file's
 * registration: the top of the op layer, the one file that knows every op
 * file.  Op files fill their own slots and call only helpers (prep.c,
 * nn_common.c, fused.c, nn_probe.c, clblast.c, runtime.c), never each
 * other; where one op builds on another (the depthwise conv on the other
 * convs), it is handed the other's slot here (docs/ARCHITECTURE.md,
 * "Leaves").
 */
#include <pthread.h>

#include "ocl_rt.h"

static const ocl_op *table[GRAPH_OP_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    ocl_register_ew(table);
    ocl_register_shape(table);
    ocl_register_gemm(table);
    ocl_register_conv(table);
    ocl_register_nn(table);
    /* after the convs: it takes the depthwise shapes and hands the rest
     * to the slot it replaces */
    ocl_register_dw(table);
}

const ocl_op *const *ocl_ops(void)
{
    pthread_once(&table_once, table_init);
    return table;
}

const ocl_op *ocl_ops_replace(graph_op op, const ocl_op *impl)
{
    pthread_once(&table_once, table_init);
    const ocl_op *old = table[op];
    table[op] = impl;
    return old;
}
