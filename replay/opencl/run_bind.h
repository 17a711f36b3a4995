/*
 * run_bind.h - a session's memory for one variant (run.c; replay/opencl/
 * only): which planned buffer each value lives in and which slot of the
 * session's pool each planned buffer takes (run_bind.c's ocl_bind), and
 * the cl_mem of each value once run.c's fill_slots has the pool.
 */
#ifndef TG_REPLAY_OCL_RUN_BIND_H
#define TG_REPLAY_OCL_RUN_BIND_H

#include "../internal.h"
#include "ocl_rt.h"

typedef struct obound {
    replay_variant *v;
    cl_mem *mem;      /* per value, this variant (inputs patched per run) */
    int32_t *vbuf;    /* per value: its planned buffer here (view_buffers) */
    int32_t *slot_of; /* per planned buffer: its slot of the pool, -1 if empty */
    size_t *need;     /* per slot: bytes this variant needs */
    int32_t nslots;
    struct obound *next;
} obound;

/*
 * The device memory of variant v: its planned buffers (the memory plan's,
 * views sharing their input's, extra inputs and outputs of their own)
 * shared out over slots by greedy-by-size on their lifetimes; b->mem is
 * left for fill_slots.  NULL with err on failure (a value past the kernels'
 * 32-bit indexing, out of memory).
 */
obound *ocl_bind(const replay_plan *p, const ocl_plan *op, replay_variant *v, char *err,
                 size_t errlen);
void ocl_bound_free(obound *b);

#endif
