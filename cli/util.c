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

/*
 * Escapes s into buf (len > 0): bytes that are not printable text become
 * \xNN; keep_lines leaves '\n' and '\t' as they are (messages), and
 * escape_bs escapes the backslash too (so an escaped name cannot be taken
 * for another).  Cut with "..." when buf is too small.
 */
static const char *escape(const char *s, char *buf, size_t len, int keep_lines, int escape_bs)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
    size_t k = 0;
    while (*p) {
        char piece[8];
        size_t n;
        int u = *p >= 0x80 ? graph_text_utf8_len(p) : 0;
        if (u) {
            memcpy(piece, p, (size_t)u);
            n = (size_t)u;
        } else if ((*p < 0x20 && !(keep_lines && (*p == '\n' || *p == '\t'))) ||
                   *p >= 0x7f || (escape_bs && *p == '\\')) {
            n = (size_t)snprintf(piece, sizeof piece, "\\x%02x", *p);
            u = 1;
        } else {
            piece[0] = (char)*p;
            n = 1;
            u = 1;
        }
        if (p[u] ? k + n + 4 > len : k + n + 1 > len) { /* "..." must fit after it */
            snprintf(buf + k, len - k, "%s", len - k > 3 ? "..." : "");
            return buf;
        }
        memcpy(buf + k, piece, n);
        k += n;
        p += u;
    }
    buf[k] = '\0';
    return buf;
}

const char *cli_esc(const char *s, char *buf, size_t len)
{
    return escape(s, buf, len, 0, 1);
}

const char *cli_escs(const char *s)
{
    static char bufs[8][CLI_ESC_LEN];
    static int next;
    char *b = bufs[next];
    next = (next + 1) % 8;
    return escape(s, b, CLI_ESC_LEN, 0, 1);
}

/* The message to stderr with its control bytes escaped: library messages
 * can quote names from the file. */
static void put_message(const char *cmd, const char *fmt, va_list ap)
{
    char msg[4096], safe[4 * sizeof msg + 8];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "tracegraph %s: %s", cmd, escape(msg, safe, sizeof safe, 1, 0));
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_message(cmd, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_message(cmd, fmt, ap);
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
