/*
 * difffuzz.c - the differential fuzzer's C side (docs/TESTING.md,
 * "Differential fuzzing"): writes a batch of generated ONNX models, and
 * runs ours over a batch in one process.
 *
 *   difffuzz gen DIR SEED N [FIRST [OP]]
 *       models FIRST .. FIRST+N-1 of the run seeded SEED (gen.h) as
 *       DIR/m<i>.onnx with their inputs, listed in DIR/models.txt
 *       (model.h); OP: only that row of the op table (ops.c)
 *   difffuzz run DIR [FROM]
 *       each model of DIR/models.txt from index FROM on, imported
 *       (format_onnx_load, "N" traced at the inputs' size), optimized at
 *       -O0 and -O3 (opt_optimize), compiled (replay_compile) and run on
 *       its inputs, and again on the alt inputs when it has a dynamic dim
 *       (the same plan at another size); for each variant (O0, O3, O0alt,
 *       O3alt) a line in DIR/ours.txt:
 *         <idx> <variant> ok <nout> {<name> <dtype> <dims>}
 *         <idx> <variant> refuse <stage>: <message>
 *       with outputs in DIR/m<idx>.<variant>.out<k>.bin.  Before each
 *       model its index goes to DIR/current, so the script that runs this
 *       (tests/difffuzz.sh) names the model a crash, a sanitizer report or
 *       a hang (SIGALRM after DIFFFUZZ_MODEL_SECONDS, default 60) stopped,
 *       and starts again after it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eager/eager.h"
#include "formats/onnx.h"
#include "gen.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"

#define MAX_IN DF_MAX_VALS /* a model's graph inputs (model.h) */

/* One model of the manifest: its inputs as the run feeds them. */
typedef struct entry {
    int idx;
    int64_t alt_n;
    int nin;
    int dtype[MAX_IN], dyn[MAX_IN];
    graph_type type[MAX_IN];
    void *data[MAX_IN], *alt[MAX_IN];
} entry;

static graph_dtype dtype_of(const char *s)
{
    return !strcmp(s, "f32") ? GRAPH_F32 : !strcmp(s, "i32") ? GRAPH_I32
           : !strcmp(s, "i64") ? GRAPH_I64 : GRAPH_BOOL;
}

static void *read_file(const char *path, size_t want)
{
    FILE *f = fopen(path, "rb");
    void *p = malloc(want ? want : 1);
    if (!f || !p || (want && fread(p, 1, want, f) != want)) {
        fprintf(stderr, "difffuzz: cannot read %zu bytes of %s\n", want, path);
        exit(2);
    }
    fclose(f);
    return p;
}

/* Parses one manifest line (model.h) and reads its input files. */
static int parse_entry(char *line, const char *dir, entry *e)
{
    char *save, *tok = strtok_r(line, " \n", &save);
    memset(e, 0, sizeof *e);
    if (!tok)
        return -1;
    e->idx = atoi(tok);
    strtok_r(NULL, " \n", &save); /* label */
    e->alt_n = atoll(strtok_r(NULL, " \n", &save));
    e->nin = atoi(strtok_r(NULL, " \n", &save));
    if (e->nin < 0 || e->nin > MAX_IN) {
        fprintf(stderr, "difffuzz: model %d has %d inputs (at most %d)\n", e->idx, e->nin, MAX_IN);
        exit(2);
    }
    for (int k = 0; k < e->nin; k++) {
        graph_type *t = &e->type[k];
        t->dtype = dtype_of(strtok_r(NULL, " \n", &save));
        char *dims = strtok_r(NULL, " \n", &save);
        e->dyn[k] = atoi(strtok_r(NULL, " \n", &save));
        t->ndim = 0;
        if (strcmp(dims, "-"))
            for (char *d = strtok(dims, "x"); d; d = strtok(NULL, "x"))
                t->dim[t->ndim++] = atoll(d);
        char path[4096];
        size_t bytes = (size_t)graph_type_bytes(t);
        snprintf(path, sizeof path, "%s/m%d.in%d.bin", dir, e->idx, k);
        e->data[k] = read_file(path, bytes);
        if (e->dyn[k] && e->alt_n) {
            snprintf(path, sizeof path, "%s/m%d.alt%d.bin", dir, e->idx, k);
            e->alt[k] = read_file(path, bytes / (size_t)t->dim[0] * (size_t)e->alt_n);
        }
    }
    return 0;
}

static void free_entry(entry *e)
{
    for (int k = 0; k < MAX_IN; k++) {
        free(e->data[k]);
        free(e->alt[k]);
    }
}

static void write_dims(FILE *f, const graph_type *t)
{
    if (t->ndim == 0)
        fputc('-', f);
    for (int d = 0; d < t->ndim; d++)
        fprintf(f, d ? "x%lld" : "%lld", (long long)t->dim[d]);
}

static const char *dtype_name(graph_dtype dt)
{
    return dt == GRAPH_F32 ? "f32" : dt == GRAPH_I32 ? "i32" : dt == GRAPH_I64 ? "i64"
           : dt == GRAPH_BOOL ? "bool" : "?";
}

/* A refusal line; the message on one line. */
static void refuse(FILE *out, int idx, const char *variant, const char *stage, const char *msg)
{
    fprintf(out, "%d %s refuse %s: ", idx, variant, stage);
    for (const char *p = msg; *p; p++)
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, out);
    fputc('\n', out);
}

/* Runs session s on e's inputs (alt: at alt_n) and writes the result. */
static void run_variant(FILE *out, const char *dir, const entry *e, replay_session *s,
                        const graph *g, const char *variant, int alt)
{
    replay_tensor in[MAX_IN], outs[DF_MAX_IO * DF_MAX_NODES];
    int nout = g->noutputs < DF_MAX_IO * DF_MAX_NODES ? g->noutputs : DF_MAX_IO * DF_MAX_NODES;
    for (int k = 0; k < e->nin; k++) {
        in[k] = (replay_tensor){.name = NULL, .type = e->type[k], .data = e->data[k]};
        if (alt && e->dyn[k]) {
            in[k].type.dim[0] = e->alt_n;
            in[k].data = e->alt[k];
        }
    }
    for (int k = 0; k < nout; k++)
        outs[k] = (replay_tensor){.name = g->outputs[k].name};
    if (replay_run(s, in, e->nin, outs, nout) != TG_OK) {
        refuse(out, e->idx, variant, "run", replay_session_error(s));
        return;
    }
    fprintf(out, "%d %s ok %d", e->idx, variant, nout);
    for (int k = 0; k < nout; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/m%d.%s.out%d.bin", dir, e->idx, variant, k);
        FILE *f = fopen(path, "wb");
        size_t bytes = graph_type_bytes(&outs[k].type);
        if (!f || (bytes && fwrite(outs[k].data, 1, bytes, f) != bytes) || fclose(f)) {
            fprintf(stderr, "difffuzz: cannot write %s\n", path);
            exit(2);
        }
        fprintf(out, " %s %s ", outs[k].name ? outs[k].name : "?",
                dtype_name(outs[k].type.dtype));
        write_dims(out, &outs[k].type);
    }
    fputc('\n', out);
}

/* Import warnings (specialized nodes) are expected: kept quiet. */
static void quiet(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

/* One model at one optimization level: traced size, then alt. */
static void run_level(FILE *out, const char *dir, const entry *e, int level)
{
    char path[4096], err[1024] = "", variant[16], altv[16];
    snprintf(path, sizeof path, "%s/m%d.onnx", dir, e->idx);
    snprintf(variant, sizeof variant, "O%d", level);
    snprintf(altv, sizeof altv, "O%dalt", level);
    format_onnx_load_opts lo = {.warn = quiet};
    for (int k = 0; k < e->nin; k++)
        if (e->dyn[k])
            lo.dim_default = e->type[k].dim[0];
    graph *g = format_onnx_load(path, &lo, err, sizeof err);
    replay_plan *plan = NULL;
    replay_session *s = NULL;
    const char *stage = "load";
    if (g && level) {
        opt_options o = opt_default_options();
        o.level = level;
        stage = "opt";
        if (opt_optimize(g, &o, NULL, err, sizeof err) != TG_OK)
            goto refused;
    }
    if (g) {
        stage = "compile";
        plan = replay_compile(g, NULL, err, sizeof err);
        if (plan)
            s = replay_session_new(plan, NULL, 0);
        if (plan && !s)
            snprintf(err, sizeof err, "replay_session_new failed");
    }
    if (!s)
        goto refused;
    run_variant(out, dir, e, s, g, variant, 0);
    if (e->alt_n)
        run_variant(out, dir, e, s, g, altv, 1);
    replay_session_free(s);
    replay_plan_free(plan);
    graph_free(g);
    return;
refused:
    refuse(out, e->idx, variant, stage, err);
    if (e->alt_n)
        refuse(out, e->idx, altv, stage, err);
    replay_plan_free(plan);
    graph_free(g);
}

static int cmd_run(const char *dir, int from)
{
    char path[4096], cur[4096];
    snprintf(path, sizeof path, "%s/models.txt", dir);
    FILE *man = fopen(path, "r");
    snprintf(path, sizeof path, "%s/ours.txt", dir);
    FILE *out = fopen(path, "a");
    if (!man || !out) {
        fprintf(stderr, "difffuzz: cannot open %s/models.txt or ours.txt: %s\n", dir,
                strerror(errno));
        return 2;
    }
    snprintf(cur, sizeof cur, "%s/current", dir);
    const char *ts = getenv("DIFFFUZZ_MODEL_SECONDS");
    unsigned secs = ts ? (unsigned)atoi(ts) : 60;
    char line[8192];
    while (fgets(line, sizeof line, man)) {
        entry e;
        if (atoi(line) < from || parse_entry(line, dir, &e))
            continue;
        FILE *c = fopen(cur, "w");
        if (c) {
            fprintf(c, "%d\n", e.idx);
            fclose(c);
        }
        alarm(secs); /* a hang ends the process: the script reports the model */
        run_level(out, dir, &e, 0);
        run_level(out, dir, &e, 3);
        alarm(0);
        fflush(out);
        free_entry(&e);
    }
    fclose(man);
    fclose(out);
    remove(cur);
    return 0;
}

static int cmd_gen(const char *dir, uint64_t seed, int n, int first, const char *op)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/models.txt", dir);
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "difffuzz: cannot write %s: %s\n", path, strerror(errno));
        return 2;
    }
    df_model *m = calloc(1, sizeof *m);
    int rc = 0;
    for (int i = first; i < first + n && !rc && m; i++) {
        df_generate(m, seed, i, op);
        rc = df_model_write(m, dir, i, f);
    }
    if (m)
        df_model_clear(m);
    free(m);
    return fclose(f) || rc || !m ? 2 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "gen"))
        return cmd_gen(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]),
                       argc > 5 ? atoi(argv[5]) : 0, argc > 6 ? argv[6] : NULL);
    if (argc >= 3 && !strcmp(argv[1], "run"))
        return cmd_run(argv[2], argc > 3 ? atoi(argv[3]) : 0);
    fprintf(stderr, "usage: difffuzz gen DIR SEED N [FIRST [OP]] | difffuzz run DIR [FROM]\n");
    return 2;
}
