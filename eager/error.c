/* error.c - the per-thread first error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local tg_status tl_status;
static _Thread_local char tl_msg[1024];

tg_status eager_status(void) { return tl_status; }

const char *eager_error(void) { return tl_msg; }

void eager_clear_error(void)
{
    tl_status = TG_OK;
    tl_msg[0] = '\0';
}

/* Messages name the file without its directories: "model.c:42". */
static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : (path ? path : "?");
}

void eager_set_error(tg_status st, const eager_site *site, const char *fmt,
                     ...)
{
    if (tl_status != TG_OK)
        return; /* keep the first */
    va_list ap;
    va_start(ap, fmt);
    int n = fmt ? vsnprintf(tl_msg, sizeof tl_msg, fmt, ap)
                : snprintf(tl_msg, sizeof tl_msg, "%s", tg_status_str(st));
    va_end(ap);
    if (n < 0)
        n = 0;
    if (site && site->file && (size_t)n < sizeof tl_msg)
        snprintf(tl_msg + n, sizeof tl_msg - (size_t)n, " (%s:%d %s)",
                 base_name(site->file), site->line,
                 site->func ? site->func : "?");
    tl_status = st == TG_OK ? TG_ERR_ARG : st;
}
