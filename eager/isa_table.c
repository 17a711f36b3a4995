/*
 * isa_table.c - the table of one kernel set (isa.h).  Compiled with each
 * kernel set: TG_ISA_SYM names the table and TG_ISA_NAME the level
 * (CMakeLists.txt); without them it is the library's own set.
 */
#include "isa.h"

#ifndef TG_ISA_SYM
#define TG_ISA_SYM eager_isa_base
#endif
#ifndef TG_ISA_NAME
#ifdef TG_ISA_MULTI
#define TG_ISA_NAME "baseline"
#else
#define TG_ISA_NAME "native"
#endif
#endif

/* Not static: the one global symbol of a kernel-set object. */
extern const eager_isa TG_ISA_SYM;
const eager_isa TG_ISA_SYM = {
    TG_ISA_NAME,
    {
#define OP(name, ...) [GRAPH_OP_##name] = eager_kernel_##name,
#define OPA(name, ...) [GRAPH_OP_##name] = eager_kernel_##name,
#include "../graph/ops.def"
#undef OP
#undef OPA
    },
    eager_post_apply,
};
