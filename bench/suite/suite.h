/*
 * suite.h - what bench/suite.c measures and bench/suite/json.c writes:
 * the configuration and one record per workload x thread count.
 */
#ifndef TG_BENCH_SUITE_H
#define TG_BENCH_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "../../workloads/workloads.h"
#include "../bench_isa.h"

#define NLEVELS 4
#define MAX_RUNS 5000
#define REL_TOL 1e-3
#define OCL_CPU_TOL 1e-4 /* OpenCL vs replay-CPU at the same level (issue 7) */
#define RECORD_TIMEOUT_S 300
#define SUITE_MAX_THREADS 256 /* per --threads value */

typedef struct config {
    const char *out;
    int min_runs;
    double budget_ms;
    int threads[4], nthreads;
    int use[WL_COUNT];
    int no_fork;    /* run records in this process (for a debugger) */
    int no_opencl;  /* skip the OpenCL column */
    double loadavg; /* at the start */
    const char *commit; /* --commit: the code measured, or NULL */
    bench_isa isa;      /* where it runs (bench/bench_isa.h): in every record */
    const char *peak_isa; /* suite_peak_isa() */
} config;

typedef struct stats {
    double median, min, max;
    int runs;
} stats;

typedef struct level_result {
    int level, ok;
    char error[512];
    double optimize_ms, load_ms, compile_ms;
    int32_t nodes_before, nodes_after;
    size_t tgraph_bytes;
    stats replay;
    size_t naive, lower, planned;
    double max_abs, max_rel;
    /* The same plan on OpenCL (issue 7): ocl_ran 0 when not measured
     * (--no-opencl, or no platform: ocl_error says so). */
    int ocl_ran, ocl_ok;
    char ocl_error[512];
    double ocl_compile_ms, ocl_max_rel, ocl_vs_cpu;
    stats ocl;
} level_result;

typedef struct record {
    const char *workload;
    char desc[256];
    int threads, ok;
    char error[512];
    char stage[64]; /* what run_record is doing (reported if it crashes) */
    double loadavg;
    char ocl_device[300]; /* "" when OpenCL was not measured */
    stats eager;
    double trace_ms;
    int32_t traced_nodes;
    double gflop;       /* workload_flops / 1e9 (0: not compute-bound) */
    double peak_gflops; /* suite_fma_peak_gflops(threads), when the record started */
    level_result lv[NLEVELS];
} record;

/* fp32 multiply-add GFLOP/s of this machine on that many threads, measured
 * (bench/suite/peak.c) at the instruction set in use (suite_peak_isa). */
double suite_fma_peak_gflops(int threads);

/* The same at isa: "avx512", "avx2" or "scalar" (0 when this CPU lacks it). */
double suite_fma_peak_gflops_at(const char *isa, int threads);

/* The vector instruction set the matrix products run at here: oneDNN's
 * (ONEDNN_MAX_CPU_ISA caps it), capped at avx2 when tracegraph's kernel
 * set is avx2 (TG_CPU): "avx512", "avx2" or "scalar". */
const char *suite_peak_isa(void);

/* Writes c->out (schema in bench/suite.c); 0 if it cannot be written. */
int suite_write_json(const config *c, const record *recs, int n, int ok, double secs);

#endif
