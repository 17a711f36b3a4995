/*
 * errors.c - the error messages and the assert handler (errors.h).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "errors.h"

/* ---- errors ---- */

/* Appends to err at *n (kept at most errlen - 1, where the text stops). */
static void put(char *err, size_t errlen, size_t *n, const char *fmt, ...) TG_PRINTF_(4, 5);
static void vput(char *err, size_t errlen, size_t *n, const char *fmt, va_list ap)
{
    if (*n + 1 >= errlen)
        return;
    int k = vsnprintf(err + *n, errlen - *n, fmt, ap);
    if (k < 0)
        return;
    *n = *n + (size_t)k < errlen - 1 ? *n + (size_t)k : errlen - 1;
}

static void put(char *err, size_t errlen, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput(err, errlen, n, fmt, ap);
    va_end(ap);
}

void tg_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg_verrf_at(err, errlen, NULL, fmt, ap);
    va_end(ap);
}

void tg_verrf_at(char *err, size_t errlen, const tg_errpos *at, const char *fmt, va_list ap)
{
    if (!err || !errlen)
        return;
    size_t n = 0;
    err[0] = '\0';
    if (at) {
        if (at->file)
            put(err, errlen, &n, "%s: ", at->file);
        if (at->line > 0)
            put(err, errlen, &n, "line %d, col %d: ", at->line, at->col);
        if (at->section)
            put(err, errlen, &n, "section '%s'%s", at->section, at->unit ? " " : "");
        if (at->unit)
            put(err, errlen, &n, "at %s %llu", at->unit, (unsigned long long)at->offset);
        if (at->section || at->unit)
            put(err, errlen, &n, ": ");
        if (at->item) {
            put(err, errlen, &n, "%s %ld", at->item, at->index);
            if (at->name)
                put(err, errlen, &n, " '%s' (%s)", at->name, at->op ? at->op : "");
            put(err, errlen, &n, ": ");
        }
    }
    vput(err, errlen, &n, fmt, ap);
}

tg_status tg_fail(tg_status st, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg_verrf_at(err, errlen, NULL, fmt, ap);
    va_end(ap);
    return st;
}

tg_status tg_vfail_at(tg_status st, char *err, size_t errlen, const tg_errpos *at,
                      const char *fmt, va_list ap)
{
    tg_verrf_at(err, errlen, at, fmt, ap);
    return st;
}

tg_status tg_fail_at(tg_status st, char *err, size_t errlen, const tg_errpos *at,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg_verrf_at(err, errlen, at, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- asserts ---- */

static void default_handler(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "tracegraph: internal error: %s at %s:%d (%s)\n", expr, file, line, func);
    fflush(stderr);
}

static _Atomic(tg_assert_handler) handler; /* NULL: the default */

tg_assert_handler tg_set_assert_handler(tg_assert_handler h)
{
    return atomic_exchange(&handler, h);
}

void tg_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    tg_assert_handler h = atomic_load(&handler);
    (h ? h : default_handler)(expr, file, line, func);
    abort();
}

int tg_asserts_enabled(void)
{
#if defined(TG_ASSERTS)
    return 1;
#else
    return 0;
#endif
}
