/*
 * runopts.c - the options run, bench and check share (-i, -o, --backend,
 * --threads, --seed, ...) and the setup they all do: load the graph, get
 * the inputs, compile a replay plan, open a session.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_opt run_opts[] = {
    {"-i", "--input", 1, RUN_OPT_INPUT},
    {"-o", "--output", 1, RUN_OPT_OUTPUT},
    {NULL, "--backend", 1, RUN_OPT_BACKEND},
    {NULL, "--threads", 1, RUN_OPT_THREADS},
    {NULL, "--seed", 1, RUN_OPT_SEED},
    {NULL, "--warmup", 1, RUN_OPT_WARMUP},
    {NULL, "--runs", 1, RUN_OPT_RUNS},
    {NULL, "--rtol", 1, RUN_OPT_RTOL},
    {NULL, "--atol", 1, RUN_OPT_ATOL},
    {NULL, "--device", 1, RUN_OPT_DEVICE},
    {NULL, "--max-memory", 1, RUN_OPT_MAX_MEMORY},
    {NULL, "--tune", 0, RUN_OPT_TUNE},
};

const cli_opt *cli_run_opt(int id) { return &run_opts[id - 1]; }

int cli_backend_check(const char *cmd, const char *opt, const char *name)
{
    size_t len = strcspn(name, ":");
    char list[256] = "";
    for (int i = 0; replay_backend_name(i); i++) {
        const char *b = replay_backend_name(i);
        if (strlen(b) == len && strncmp(b, name, len) == 0)
            return CLI_OK;
        size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", b);
    }
    return cli_usage_error(cmd, "%s takes a backend's name (%s; NAME:N or NAME:TEXT picks a "
                           "device: tracegraph devices), not '%s'", opt, list, name);
}

/* A byte count with an optional K, M or G (powers of 1024) into *out:
 * CLI_OK, or CLI_USAGE after a message. */
static int parse_size(const char *cmd, const char *opt, const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
    int shift = 0;
    if (s[0] >= '0' && s[0] <= '9' && !errno && end[0] && !end[1])
        shift = strchr("kK", end[0]) ? 10 : strchr("mM", end[0]) ? 20 : strchr("gG", end[0]) ? 30 : -1;
    if (!(s[0] >= '0' && s[0] <= '9') || errno || shift < 0 || (end[0] && end[1]) ||
        v > (SIZE_MAX >> shift))
        return cli_usage_error(cmd, "%s wants a size in bytes, with K, M or G for KiB, MiB or "
                               "GiB (0: no limit), not '%s'", opt, s);
    *out = (size_t)v << shift;
    return CLI_OK;
}

/* One option's value into o; CLI_OK or CLI_USAGE after a message. */
static int set_opt(cli_run_opts *o, int id, const char *arg)
{
    const char *name = run_opts[id - 1].lng;
    switch (id) {
    case RUN_OPT_INPUT:
    case RUN_OPT_OUTPUT: {
        /* room for one per argument (cli_parse_run) */
        int *n = id == RUN_OPT_INPUT ? &o->ninputs : &o->noutputs;
        (id == RUN_OPT_INPUT ? o->inputs : o->outputs)[(*n)++] = (char *)arg;
        return CLI_OK;
    }
    case RUN_OPT_BACKEND:
        if (cli_backend_check(o->cmd, name, arg) != CLI_OK)
            return CLI_USAGE;
        o->backend_arg = arg;
        return CLI_OK;
    case RUN_OPT_DEVICE:
        o->device_arg = arg;
        return CLI_OK;
    case RUN_OPT_RTOL:
    case RUN_OPT_ATOL:
        return cli_double(o->cmd, name, arg, id == RUN_OPT_RTOL ? &o->rtol : &o->atol)
                   ? CLI_USAGE : CLI_OK;
    case RUN_OPT_THREADS: {
        long v;
        if (cli_int(o->cmd, name, arg, 1, TG_MAX_THREADS, &v))
            return CLI_USAGE;
        o->replay.threads = (int)v;
        return CLI_OK;
    }
    case RUN_OPT_MAX_MEMORY:
        return parse_size(o->cmd, name, arg, &o->replay.max_memory);
    case RUN_OPT_TUNE:
        o->replay.tune = 1;
        return CLI_OK;
    case RUN_OPT_SEED:
        return cli_int(o->cmd, name, arg, 0, LONG_MAX, &o->seed) ? CLI_USAGE : CLI_OK;
    case RUN_OPT_WARMUP:
        return cli_int(o->cmd, name, arg, 0, 100000000, &o->warmup) ? CLI_USAGE : CLI_OK;
    default:
        return cli_int(o->cmd, name, arg, 1, 100000000, &o->runs) ? CLI_USAGE : CLI_OK;
    }
}

int cli_parse_run(int argc, char **argv, const int *ids, void (*help)(void), cli_run_opts *o)
{
    cli_opt opts[sizeof run_opts / sizeof run_opts[0] + 1];
    int n = 0;
    for (; ids[n]; n++)
        opts[n] = run_opts[ids[n] - 1];
    opts[n] = (cli_opt){0};
    memset(o, 0, sizeof *o);
    o->cmd = argv[0];
    /* each -i/-o takes an argument: argc bounds how many there can be */
    o->inputs = cli_calloc((size_t)argc + 1, sizeof *o->inputs);
    o->outputs = cli_calloc((size_t)argc + 1, sizeof *o->outputs);
    if (!o->inputs || !o->outputs) {
        cli_error(o->cmd, "out of memory for %d arguments", argc);
        return CLI_ERROR;
    }
    o->replay = (replay_opts)REPLAY_OPTS_INIT;
    o->replay.threads = 1;
    o->seed = 1;
    o->warmup = 10;
    o->runs = 100;
    o->rtol = 1e-5;
    o->atol = -1; /* not given: rtol x the output's largest |ref| (check) */
    cli_args a = {argc, argv, 1, 0, argv[0]};
    const char *arg;
    for (int id; (id = cli_next(&a, opts, &arg)) != CLI_END;) {
        if (id == CLI_HELP) {
            help();
            return -1;
        }
        if (id == CLI_BAD)
            return CLI_USAGE;
        if (id == CLI_POS) {
            if (o->file)
                return cli_usage_error(o->cmd, "one FILE.tgraph only ('%s' is extra; inputs "
                                       "go with -i)", arg);
            o->file = arg;
        } else if (set_opt(o, id, arg) != CLI_OK) {
            return CLI_USAGE;
        }
    }
    if (!o->file)
        return cli_usage_error(o->cmd, "no FILE.tgraph given");
    /* --device D (the older spelling) joins the backend: NAME:D */
    const char *be = o->backend_arg ? o->backend_arg : "cpu";
    if (o->device_arg && !o->backend_arg)
        return cli_usage_error(o->cmd, "--device picks a device of a backend: add --backend "
                               "NAME (or give --backend NAME:DEVICE)");
    if (o->device_arg && strchr(be, ':'))
        return cli_usage_error(o->cmd, "--backend '%s' names a device already; drop --device", be);
    int k = snprintf(o->backend, sizeof o->backend, "%s%s%s", be, o->device_arg ? ":" : "",
                     o->device_arg ? o->device_arg : "");
    if (k < 0 || (size_t)k >= sizeof o->backend)
        return cli_usage_error(o->cmd, "--backend: a name of at most %zu bytes, not '%s'",
                               sizeof o->backend - 1, be);
    o->replay.device = o->backend;
    return CLI_OK;
}

void cli_run_opts_free(cli_run_opts *o)
{
    cli_free(o->inputs);
    cli_free(o->outputs);
    o->inputs = o->outputs = NULL;
    o->ninputs = o->noutputs = 0;
}

int cli_setup_run(const cli_run_opts *o, int random_ok, cli_setup *s)
{
    memset(s, 0, sizeof *s);
    s->g = cli_load_graph(o->cmd, o->file);
    if (!s->g)
        return CLI_ERROR;
    int rc;
    if (random_ok && o->ninputs == 0) {
        s->random_inputs = 1;
        rc = cli_random_inputs(o->cmd, s->g, (uint64_t)o->seed, &s->in);
    } else {
        rc = cli_load_inputs(o->cmd, s->g, o->inputs, o->ninputs, &s->in);
    }
    if (rc)
        return CLI_ERROR;
    char err[1024];
    s->plan = replay_compile(s->g, &o->replay, err, sizeof err);
    if (!s->plan) {
        cli_error(o->cmd, "%s", err);
        return CLI_ERROR;
    }
    s->session = replay_session_new(s->plan, NULL, 0);
    if (!s->session) {
        cli_error(o->cmd, "out of memory for a replay session");
        return CLI_ERROR;
    }
    return CLI_OK;
}

void cli_teardown(cli_setup *s)
{
    replay_session_free(s->session);
    replay_plan_free(s->plan);
    cli_inputs_free(&s->in);
    graph_free(s->g);
    memset(s, 0, sizeof *s);
}
