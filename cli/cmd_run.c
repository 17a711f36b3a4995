/*
 * cmd_run.c - the commands that run a graph: `run` (replay on .npy inputs,
 * outputs to .npy or summarized) and `check` (replay against the reference
 * interpreter on the same inputs, error per output).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- run ---- */

static void run_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("run"));
    printf("Runs the graph with the replay runtime and writes or summarizes its outputs.\n\n"
           "options:\n"
           "  -i, --input NAME=IN.npy   the input called NAME, from a .npy file\n"
           "  -i, --input IN.npy        inputs not named by any -i, in signature order\n"
           "  -o, --output NAME=OUT.npy write the output called NAME to a .npy file\n"
           "  -o, --output OUT.npy      outputs not named by any -o, in order; outputs\n"
           "                            without -o are summarized (shape, first values)\n"
           "  --backend NAME[:DEVICE]   where to run: a backend (cpu, opencl) and,\n"
           "                            after a colon, its device: an index or a\n"
           "                            text of its description (tracegraph devices;\n"
           "                            default cpu, a backend's first device)\n"
           "  --device DEVICE           the same as NAME:DEVICE (older spelling)\n"
           "  --threads N               threads per kernel (default 1)\n"
           "  --max-memory SIZE         fail when the session would need more: its\n"
           "                            arena plus params and constants (replay.h,\n"
           "                            max_memory), in bytes or with K, M, G\n"
           "  --tune                    choose each GEMM by measurement (as for bench)\n\n"
           "Inputs are .npy arrays of dtype <f4, <i8, <i4 or |b1 (f32, i64, i32, bool),\n"
           "C order.  Dims the trace marked dynamic may differ from the traced sizes.\n"
           "A wrong dtype or shape is reported as replay states it.\n\n"
           "exit codes: 0 ok, 1 error, 2 bad command line, 3 a strict guard failed\n"
           "(the message says what the trace recorded at which call site: a value,\n"
           "a decision or a buffer hash, and what the inputs gave instead).  A\n"
           "warn-policy guard that changed is written to stderr and the exit code\n"
           "stays 0.\n\n"
           "example:\n  tracegraph run mlp.tgraph -i x=batch.npy -o y=logits.npy\n");
}

/*
 * outs for the graph's outputs, by name, data NULL (replay_run fills them);
 * NULL after a message.
 */
replay_tensor *cli_outputs_new(const char *cmd, const graph *g)
{
    replay_tensor *outs = cli_calloc((size_t)graph_output_count(g) + 1, sizeof *outs);
    if (!outs) {
        cli_error(cmd, "out of memory for %d outputs", graph_output_count(g));
        return NULL;
    }
    for (int i = 0; i < graph_output_count(g); i++)
        graph_output_at(g, i, &outs[i].name);
    return outs;
}

/* Writes the -o outputs, summarizes the rest. */
static int deliver(const cli_run_opts *o, const graph *g, const replay_tensor *outs)
{
    int rc = CLI_ERROR, *slot = cli_calloc((size_t)o->noutputs + 1, sizeof *slot);
    int *written = cli_calloc((size_t)graph_output_count(g) + 1, sizeof *written);
    const char **path = cli_calloc((size_t)o->noutputs + 1, sizeof *path);
    if (!slot || !written || !path) {
        cli_error(o->cmd, "out of memory for %d outputs", graph_output_count(g));
        goto done;
    }
    if (cli_output_specs(o->cmd, g, o->outputs, o->noutputs, slot, path))
        goto done;
    for (int k = 0; k < o->noutputs; k++) {
        const replay_tensor *t = &outs[slot[k]];
        char err[1024], ty[200];
        if (format_npy_save(path[k], &t->type, t->data, err, sizeof err) != TG_OK) {
            cli_error(o->cmd, "%s", err);
            goto done;
        }
        written[slot[k]] = 1;
        printf("%s: %s -> %s\n", cli_escs(t->name), cli_type_str(&t->type, ty, sizeof ty),
               cli_escs(path[k]));
    }
    for (int i = 0; i < graph_output_count(g); i++)
        if (!written[i])
            cli_print_tensor(stdout, outs[i].name, &outs[i].type, outs[i].data);
    rc = CLI_OK;
done:
    cli_free(slot);
    cli_free(written);
    cli_free(path);
    return rc;
}

int cli_run(int argc, char **argv)
{
    static const int ids[] = {RUN_OPT_INPUT, RUN_OPT_OUTPUT, RUN_OPT_BACKEND, RUN_OPT_DEVICE, RUN_OPT_THREADS,
                              RUN_OPT_MAX_MEMORY, RUN_OPT_TUNE, 0};
    cli_run_opts o;
    int rc = cli_parse_run(argc, argv, ids, run_help, &o);
    if (rc) {
        cli_run_opts_free(&o);
        return rc < 0 ? CLI_OK : rc;
    }
    cli_setup s;
    rc = cli_setup_run(&o, 0, &s);
    replay_tensor *outs = NULL;
    if (rc == CLI_OK && !(outs = cli_outputs_new(o.cmd, s.g)))
        rc = CLI_ERROR;
    if (rc == CLI_OK) {
        tg_status st = replay_run(s.session, s.in.t, s.in.n, outs, graph_output_count(s.g));
        if (st != TG_OK) {
            cli_error(o.cmd, "%s", replay_session_error(s.session));
            rc = cli_exit_code(st);
        } else {
            rc = deliver(&o, s.g, outs); /* a changed warn-policy guard is on stderr */
        }
    }
    cli_free(outs);
    cli_teardown(&s);
    cli_run_opts_free(&o);
    return rc;
}

/* ---- check ---- */

static void check_help(void)
{
    printf("usage: %s\n\n", cli_synopsis("check"));
    printf("Runs the graph twice on the same inputs, with the replay runtime and with\n"
           "the reference interpreter (node by node through the eager kernels), and\n"
           "prints the largest absolute and relative error of each output.  An output\n"
           "passes when every element has |replay - ref| <= atol + rtol * |ref| (NaN\n"
           "matches only NaN).  Without --atol, atol is rtol times the output's largest\n"
           "|ref|: elements near zero are judged at the output's scale, since backends\n"
           "and fused kernels sum in different orders.\n\n"
           "options:\n"
           "  -i, --input ...   inputs as for `run`; without any, seeded random inputs\n"
           "                    at the traced shapes (f32 in [-1,1), ints in [0,4),\n"
           "                    bools 0/1)\n"
           "  --seed N          seed of the random inputs (default 1)\n"
           "  --rtol X          relative tolerance (default 1e-05)\n"
           "  --atol X          absolute tolerance (default: rtol x max |ref| per output)\n"
           "  --threads N       threads per kernel, both runs (default 1)\n"
           "  --backend NAME    replay backend and device (cpu, opencl, opencl:1:\n"
           "                    tracegraph devices; default cpu)\n"
           "  --device D        the same as --backend NAME:D (older spelling)\n\n"
           "exit codes: 0 all outputs within tolerance, 1 error, 2 bad command line,\n"
           "3 a guard failed, 4 some output differs beyond the tolerance.\n\n"
           "example:\n  tracegraph check model.tgraph --rtol 1e-4\n");
}

typedef struct errors {
    double abs, rel;
    int64_t bad; /* elements beyond the tolerance */
} errors;

/* Largest errors of a against the reference b, and the count beyond tolerance. */
static errors compare(const graph_type *t, const void *a, const void *b, double rtol,
                      double atol)
{
    errors e = {0, 0, 0};
    for (int64_t i = 0, n = graph_type_numel(t); i < n; i++) {
        double x = cli_element(t, a, i), y = cli_element(t, b, i), d;
        if (isnan(x) || isnan(y))
            d = isnan(x) && isnan(y) ? 0 : INFINITY;
        else if (x == y) /* also equal infinities */
            d = 0;
        else
            d = fabs(x - y);
        double r = d == 0 ? 0 : y == 0 ? INFINITY : d / fabs(y);
        e.abs = fmax(e.abs, d);
        e.rel = fmax(e.rel, r);
        /* d == 0 first: the bound is NaN when y is (NaN matching NaN) or
         * an infinity and rtol 0; an infinite d (a NaN against a number, a
         * number against an infinity) is beyond any bound */
        e.bad += d != 0 && !(isfinite(d) && d <= atol + rtol * fabs(y));
    }
    return e;
}

/* Prints one line per output; returns how many differ beyond tolerance. */
static int report(const cli_run_opts *o, const graph *g, const replay_tensor *outs,
                  eager_tensor *const *ref)
{
    int bad = 0;
    for (int i = 0; i < graph_output_count(g); i++) {
        char ty[200], ty2[200];
        const graph_type *rt = eager_type(ref[i]);
        printf("  %s: %s", cli_escs(outs[i].name), cli_type_str(&outs[i].type, ty, sizeof ty));
        if (!graph_type_eq(&outs[i].type, rt)) {
            printf("  type differs: reference %s  FAIL\n", cli_type_str(rt, ty2, sizeof ty2));
            bad++;
            continue;
        }
        double atol = o->atol;
        if (atol < 0) { /* the output's scale */
            atol = 0;
            for (int64_t k = 0, nk = graph_type_numel(rt); k < nk; k++) {
                double y = fabs(cli_element(rt, eager_peek(ref[i]), k));
                if (isfinite(y))
                    atol = fmax(atol, y);
            }
            atol *= o->rtol;
        }
        errors e = compare(rt, outs[i].data, eager_peek(ref[i]), o->rtol, atol);
        printf("  max abs err %.3g  max rel err %.3g  (atol %.3g)  %s", e.abs, e.rel, atol,
               e.bad ? "FAIL" : "ok");
        if (e.bad)
            printf(" (%lld of %lld elements beyond tolerance)", (long long)e.bad,
                   (long long)graph_type_numel(rt));
        printf("\n");
        bad += e.bad > 0;
    }
    return bad;
}

/* The reference run: eager tensors of the inputs through eager_interpret. */
static int check_against_ref(const cli_run_opts *o, cli_setup *s, const replay_tensor *outs)
{
    int rc = CLI_OK, n = graph_output_count(s->g);
    eager_set_threads(o->replay.threads);
    eager_pool_push();
    eager_tensor **ins = cli_calloc((size_t)s->in.n + 1, sizeof *ins);
    eager_tensor **ref = cli_calloc((size_t)n + 1, sizeof *ref);
    tg_status st = TG_OK;
    for (int i = 0; ins && ref && i < s->in.n && st == TG_OK; i++) {
        graph_ints shape = {s->in.t[i].type.ndim, {0}};
        memcpy(shape.v, s->in.t[i].type.dim, sizeof(int64_t) * (size_t)shape.n);
        ins[i] = eager_from_data(s->in.t[i].type.dtype, shape, s->in.t[i].data);
        if (!ins[i])
            st = eager_status() != TG_OK ? eager_status() : TG_ERR_NOMEM;
    }
    eager_interp_report rep;
    if (!ins || !ref) {
        cli_error(o->cmd, "out of memory for %d inputs and %d outputs", s->in.n, n);
        rc = CLI_ERROR;
    } else if (st != TG_OK || (st = eager_interpret(s->g, ins, s->in.n, ref, n, &rep)) != TG_OK) {
        cli_error(o->cmd, "reference interpreter: %s", eager_error());
        rc = cli_exit_code(st);
    } else {
        int bad = report(o, s->g, outs, ref);
        char at[64];
        if (o->atol < 0)
            snprintf(at, sizeof at, "rtol x max |ref|");
        else
            snprintf(at, sizeof at, "%g", o->atol);
        if (bad)
            printf("check: %d of %d outputs differ beyond rtol %g, atol %s\n", bad, n, o->rtol,
                   at);
        else
            printf("check: all %d outputs within rtol %g, atol %s\n", n, o->rtol, at);
        rc = bad ? CLI_MISMATCH : CLI_OK;
    }
    for (int i = 0; ref && i < n; i++)
        eager_release(ref[i]);
    cli_free(ins);
    cli_free(ref);
    eager_pool_pop();
    eager_clear_error();
    return rc;
}

int cli_check(int argc, char **argv)
{
    static const int ids[] = {RUN_OPT_INPUT, RUN_OPT_BACKEND, RUN_OPT_DEVICE, RUN_OPT_THREADS, RUN_OPT_SEED,
                              RUN_OPT_RTOL, RUN_OPT_ATOL, 0};
    cli_run_opts o;
    int rc = cli_parse_run(argc, argv, ids, check_help, &o);
    if (rc) {
        cli_run_opts_free(&o);
        return rc < 0 ? CLI_OK : rc;
    }
    cli_setup s;
    rc = cli_setup_run(&o, 1, &s);
    replay_tensor *outs = NULL;
    if (rc == CLI_OK && !(outs = cli_outputs_new(o.cmd, s.g)))
        rc = CLI_ERROR;
    if (rc == CLI_OK) {
        const char *gemm = replay_plan_property(s.plan, "gemm");
        printf("check %s: replay (%s%s%s, %d thread%s) against the reference interpreter, ",
               o.file, replay_plan_property(s.plan, "backend"), gemm ? ", GEMM " : "",
               gemm ? gemm : "", o.replay.threads, o.replay.threads > 1 ? "s" : "");
        if (s.random_inputs)
            printf("random inputs (seed %ld)\n", o.seed);
        else
            printf("inputs from .npy\n");
        tg_status st = replay_run(s.session, s.in.t, s.in.n, outs, graph_output_count(s.g));
        if (st != TG_OK) {
            cli_error(o.cmd, "%s", replay_session_error(s.session));
            if (st == TG_ERR_GUARD && s.random_inputs)
                cli_error(o.cmd, "the inputs were random: give inputs that take the traced "
                          "path with -i");
            rc = cli_exit_code(st);
        } else {
            rc = check_against_ref(&o, &s, outs);
        }
    }
    cli_free(outs);
    cli_teardown(&s);
    cli_run_opts_free(&o);
    return rc;
}
