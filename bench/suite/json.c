/*
 * json.c - bench/results/latest.json for the suite (schema in
 * bench/suite.c): the machine, the configuration and every record.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "eager/dnnl_util.h"
#include "eager/eager.h"
#include "bench/bench_util.h"
#include "suite.h"

static void json_stats(FILE *f, const char *key, const stats *s)
{
    fprintf(f, "\"%s\": {\"median\": ", key);
    bench_json_num(f, s->runs ? s->median : NAN);
    fputs(", \"min\": ", f);
    bench_json_num(f, s->runs ? s->min : NAN);
    fputs(", \"max\": ", f);
    bench_json_num(f, s->runs ? s->max : NAN);
    fprintf(f, ", \"runs\": %d}", s->runs);
}

/* "replay_ms": {...}, "speedup": eager's median over the replay's. */
static void json_replay(FILE *f, const stats *s, double eager_median)
{
    json_stats(f, "replay_ms", s);
    fputs(", \"speedup\": ", f);
    bench_json_num(f, s->runs ? eager_median / s->median : NAN);
}

static void json_level(FILE *f, const record *rec, const level_result *r)
{
    fprintf(f, "        {\"level\": %d, \"ok\": %s, \"error\": ", r->level, r->ok ? "true" : "false");
    bench_json_str(f, r->error);
    fputs(",\n         \"optimize_ms\": ", f);
    bench_json_num(f, r->optimize_ms);
    fprintf(f, ", \"nodes_before\": %d, \"nodes_after\": %d, \"tgraph_bytes\": %zu,\n",
            r->nodes_before, r->nodes_after, r->tgraph_bytes);
    fputs("         \"load_ms\": ", f);
    bench_json_num(f, r->load_ms);
    fputs(", \"compile_ms\": ", f);
    bench_json_num(f, r->compile_ms);
    fputs(",\n         ", f);
    json_replay(f, &r->replay, rec->eager.median);
    fprintf(f, ",\n         \"arena_bytes\": {\"naive\": %zu, \"lower_bound\": %zu, "
            "\"planned\": %zu},\n         \"max_abs_err\": ", r->naive, r->lower, r->planned);
    bench_json_num(f, r->replay.runs ? r->max_abs : NAN);
    fputs(", \"max_rel_err\": ", f);
    bench_json_num(f, r->replay.runs ? r->max_rel : NAN);
    fputs(",\n         \"opencl\": ", f);
    if (!r->ocl_ran) {
        fputs("null}", f);
        return;
    }
    fprintf(f, "{\"ok\": %s, \"error\": ", r->ocl_ok ? "true" : "false");
    bench_json_str(f, r->ocl_error);
    fputs(", \"compile_ms\": ", f);
    bench_json_num(f, r->ocl_compile_ms);
    fputs(", ", f);
    json_replay(f, &r->ocl, rec->eager.median);
    fputs(", \"max_rel_err\": ", f);
    bench_json_num(f, r->ocl.runs ? r->ocl_max_rel : NAN);
    fputs(", \"rel_err_vs_cpu\": ", f);
    bench_json_num(f, r->ocl.runs ? r->ocl_vs_cpu : NAN);
    fputs("}}", f);
}

static void json_record(FILE *f, const config *c, const record *rec)
{
    fputs("    {\"workload\": ", f);
    bench_json_str(f, rec->workload);
    fprintf(f, ", \"threads\": %d, \"ok\": %s, \"error\": ", rec->threads,
            rec->ok ? "true" : "false");
    bench_json_str(f, rec->error);
    fputs(",\n      \"cpu\": ", f);
    bench_json_str(f, c->isa.cpu);
    fputs(", \"cpu_kernels\": ", f);
    bench_json_str(f, c->isa.cpu_kernels);
    fputs(", \"onednn_isa\": ", f);
    bench_json_str(f, c->isa.onednn_isa);
    fputs(",\n      \"desc\": ", f);
    bench_json_str(f, rec->desc);
    fputs(", \"opencl_device\": ", f);
    if (rec->ocl_device[0])
        bench_json_str(f, rec->ocl_device);
    else
        fputs("null", f);
    fputs(", \"loadavg\": ", f);
    bench_json_num(f, rec->loadavg);
    fputs(",\n      ", f);
    json_stats(f, "eager_ms", &rec->eager);
    fputs(",\n      \"trace_ms\": ", f);
    bench_json_num(f, rec->trace_ms);
    fprintf(f, ", \"traced_nodes\": %d, \"gflop\": ", rec->traced_nodes);
    bench_json_num(f, rec->gflop);
    fputs(", \"fma_peak_gflops\": ", f);
    bench_json_num(f, rec->peak_gflops);
    fputs(", \"fma_peak_isa\": ", f);
    bench_json_str(f, c->peak_isa);

    fputs(",\n      \"levels\": [\n", f);
    for (int l = 0; l < NLEVELS; l++) {
        json_level(f, rec, &rec->lv[l]);
        fputs(l + 1 < NLEVELS ? ",\n" : "\n", f);
    }
    fputs("      ]}", f);
}

/* "model name (family F model M, AVX-512)" from /proc/cpuinfo ("?" if unknown). */
static void cpu_model(char *buf, size_t len)
{
    char name[256] = "?", line[4096];
    int family = -1, model = -1, avx512 = 0, avx2 = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        if (strncmp(line, "model name", 10) == 0 && name[0] == '?') {
            snprintf(name, sizeof name, "%s", colon + 2);
            name[strcspn(name, "\n")] = 0;
        } else if (strncmp(line, "cpu family", 10) == 0 && family < 0) {
            family = atoi(colon + 1);
        } else if (strncmp(line, "model\t", 6) == 0 && model < 0) {
            model = atoi(colon + 1);
        } else if (strncmp(line, "flags", 5) == 0) {
            avx512 |= strstr(line, " avx512f") != NULL;
            avx2 |= strstr(line, " avx2") != NULL;
        }
    }
    if (f)
        fclose(f);
    snprintf(buf, len, "%s (family %d model %d, %s)", name, family, model,
             avx512 ? "AVX-512" : avx2 ? "AVX2" : "no AVX2");
}

static void json_machine(FILE *f, double load, const char *commit)
{
    char cpu[256], date[64];
    cpu_model(cpu, sizeof cpu);
    struct utsname u;
    char os[400] = "?";
    if (uname(&u) == 0)
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fputs("  \"machine\": {\"cpu\": ", f);
    bench_json_str(f, cpu);
    fprintf(f, ", \"cores\": %ld, \"compiler\": ", sysconf(_SC_NPROCESSORS_ONLN));
#if defined(__clang__)
    bench_json_str(f, "clang " __clang_version__);
#elif defined(__GNUC__)
    bench_json_str(f, "GCC " __VERSION__);
#else
    bench_json_str(f, "?");
#endif
    fputs(", \"cpu_kernels\": ", f);
    bench_json_str(f, eager_cpu_level());
    fputs(", \"onednn_isa\": ", f);
    bench_json_str(f, eager_dnnl_isa_name());
    fputs(", \"os\": ", f);
    bench_json_str(f, os);
    fputs(", \"date\": ", f);
    bench_json_str(f, date);
    fputs(", \"loadavg\": ", f);
    bench_json_num(f, load);
    if (commit) {
        fputs(", \"commit\": ", f);
        bench_json_str(f, commit);
    }
    fputs("},\n", f);
}

int suite_write_json(const config *c, const record *recs, int n, int ok, double secs)
{
    FILE *f = fopen(c->out, "w");
    if (!f) {
        fprintf(stderr, "suite: cannot write %s\n", c->out);
        return 0;
    }
    fputs("{\"schema\": \"tracegraph-bench-1\",\n", f);
    json_machine(f, c->loadavg, c->commit);
    fprintf(f, "  \"config\": {\"min_runs\": %d, \"budget_ms\": %g, \"rel_tolerance\": %g},\n",
            c->min_runs, c->budget_ms, REL_TOL);
    fprintf(f, "  \"ok\": %s, \"total_s\": %.1f,\n  \"records\": [\n", ok ? "true" : "false",
            secs);
    for (int i = 0; i < n; i++) {
        json_record(f, c, &recs[i]);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ]}\n", f);
    return fclose(f) == 0;
}
