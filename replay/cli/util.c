/*
 * util.c - messages, the option parser and number parsing for the
 * `tracegraph` tool.  Our own small parser rather than getopt_long: it
 * prints errors in the tool's "tracegraph <cmd>: ..." form, knows each
 * command's options only, and never permutes argv behind our back.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tracegraph %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tracegraph %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nusage: %s\nTry 'tracegraph %s --help' for more.\n", cli_synopsis(cmd),
            cmd);
    va_end(ap);
    return CLI_USAGE;
}

int cli_exit_code(tg_status st)
{
    return st == TG_OK ? CLI_OK : st == TG_ERR_GUARD ? CLI_GUARD : CLI_ERROR;
}

/* The option whose spelling is name (len bytes); NULL if none. */
static const cli_opt *find_opt(const cli_opt *opts, const char *name, size_t len)
{
    for (const cli_opt *o = opts; o->shrt || o->lng; o++) {
        if (o->shrt && strlen(o->shrt) == len && memcmp(o->shrt, name, len) == 0)
            return o;
        if (o->lng && strlen(o->lng) == len && memcmp(o->lng, name, len) == 0)
            return o;
    }
    return NULL;
}

int cli_next(cli_args *a, const cli_opt *opts, const char **arg)
{
    *arg = NULL;
    if (a->i >= a->argc)
        return CLI_END;
    const char *s = a->argv[a->i++];
    if (a->only_pos || s[0] != '-' || s[1] == '\0') {
        *arg = s;
        return CLI_POS;
    }
    if (strcmp(s, "--") == 0) {
        a->only_pos = 1;
        return cli_next(a, opts, arg);
    }
    if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
        return CLI_HELP;
    /* "--name=value" carries its value; "-iVALUE" is not accepted (ambiguous) */
    const char *eq = s[1] == '-' ? strchr(s, '=') : NULL;
    size_t len = eq ? (size_t)(eq - s) : strlen(s);
    const cli_opt *o = find_opt(opts, s, len);
    if (!o) {
        cli_usage_error(a->cmd, "unknown option '%.*s'", (int)len, s);
        return CLI_BAD;
    }
    if (!o->has_arg) {
        if (eq) {
            cli_usage_error(a->cmd, "option '%.*s' takes no value", (int)len, s);
            return CLI_BAD;
        }
        return o->id;
    }
    if (eq) {
        *arg = eq + 1;
        return o->id;
    }
    if (a->i >= a->argc) {
        cli_usage_error(a->cmd, "option '%s' needs a value", s);
        return CLI_BAD;
    }
    *arg = a->argv[a->i++];
    return o->id;
}

int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_usage_error(cmd, "%s wants an integer from %ld to %ld, not '%s'", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_double(const char *cmd, const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0) {
        cli_usage_error(cmd, "%s wants a number >= 0, not '%s'", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
