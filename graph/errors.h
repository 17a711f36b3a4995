/*
 * errors.h - the library's error plumbing (internal: not installed, never
 * included by a public header).
 *
 * Two kinds of failure, two tools:
 *
 * - Bad input (a malformed file, a wrong argument, a graph that does not
 *   verify, memory running out) is an error of the call: it returns a
 *   tg_status with a message in the caller's (err, errlen) buffer naming
 *   what was wrong and where.  TG_FAIL / TG_FAIL_IF do that in a function
 *   that has parameters (or locals) named err and errlen; TG_FAIL_AT and
 *   tg_fail_at put the position first ("file: section 'S' at byte N:
 *   node 7: ..."), so a loader's message always says where.  The loaders'
 *   own fail functions (format_load_fail, onnx_fail, npy's perr, the text
 *   IR's graph_text_fail) fill a tg_errpos from their context and call
 *   tg_vfail_at.
 *
 * - A broken internal invariant (an index out of its array that earlier
 *   code guaranteed in range, a buffer outside its arena) is a bug of the
 *   library, never of the input: TG_ASSERT(cond).  It is checked where
 *   TG_ASSERTS is defined (CMake defines it for CMAKE_BUILD_TYPE Debug and
 *   TG_SANITIZE builds) and compiles to nothing otherwise (the condition is
 *   not evaluated).  A failed TG_ASSERT calls the handler set with
 *   tg_set_assert_handler; the default prints "tracegraph: internal error:
 *   <expr> at <file>:<line> (<function>)" to stderr and aborts.  A handler
 *   that returns is followed by abort() too: the code after a broken
 *   invariant would corrupt memory.  (tests/test_assert.c longjmps out.)
 *   Nothing a file or an argument contains may reach a TG_ASSERT: the
 *   loaders are fuzzed, and bad input must come back as an error.
 */
#ifndef TG_GRAPH_ERRORS_H
#define TG_GRAPH_ERRORS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#if defined(__GNUC__) || defined(__clang__)
#define TG_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#define TG_NORETURN_ __attribute__((noreturn))
#else
#define TG_PRINTF_(f, a)
#define TG_NORETURN_
#endif

/* ---- errors: bad input ---- */

/*
 * Where an error is, as a loader knows it.  Each part set is written, in
 * this order, before the message:
 *   "file: "                 file
 *   "line L, col C: "        line > 0 (text)
 *   "section 'S' "           section ...
 *   "at UNIT OFFSET"         unit ("byte", "file byte") and offset
 *   ": "                     after section and/or unit
 *   "ITEM INDEX"             item ("node", "value", ...) and index
 *   " 'NAME' (OP)"           name (op NULL reads "")
 *   ": "                     after the item
 * A zeroed tg_errpos adds nothing.
 */
typedef struct tg_errpos {
    const char *file;
    int line, col;
    const char *section;
    const char *unit;
    uint64_t offset;
    const char *item;
    long index;
    const char *name, *op;
} tg_errpos;

/* printf into err[0..errlen) (truncated); nothing where err is NULL or errlen 0. */
void tg_errf(char *err, size_t errlen, const char *fmt, ...) TG_PRINTF_(3, 4);
/* The same with the position at first (see tg_errpos). */
void tg_verrf_at(char *err, size_t errlen, const tg_errpos *at, const char *fmt, va_list ap);
/* tg_errf / tg_verrf_at, returning st. */
tg_status tg_fail(tg_status st, char *err, size_t errlen, const char *fmt, ...)
    TG_PRINTF_(4, 5);
tg_status tg_fail_at(tg_status st, char *err, size_t errlen, const tg_errpos *at,
                     const char *fmt, ...) TG_PRINTF_(5, 6);
tg_status tg_vfail_at(tg_status st, char *err, size_t errlen, const tg_errpos *at,
                      const char *fmt, va_list ap);

/* In a function with err and errlen in scope: return st with the message. */
#define TG_FAIL(st, ...) return tg_fail((st), err, errlen, __VA_ARGS__)
#define TG_FAIL_IF(cond, st, ...)                                            \
    do {                                                                     \
        if (cond)                                                            \
            TG_FAIL((st), __VA_ARGS__);                                      \
    } while (0)
/* The same with a position (const tg_errpos *at). */
#define TG_FAIL_AT(st, at, ...) return tg_fail_at((st), err, errlen, (at), __VA_ARGS__)
#define TG_FAIL_AT_IF(cond, st, at, ...)                                     \
    do {                                                                     \
        if (cond)                                                            \
            TG_FAIL_AT((st), (at), __VA_ARGS__);                             \
    } while (0)

/* ---- asserts: internal invariants ---- */

typedef void (*tg_assert_handler)(const char *expr, const char *file, int line,
                                  const char *func);

/* Sets the handler of failed TG_ASSERTs (NULL: the default); returns the previous one. */
tg_assert_handler tg_set_assert_handler(tg_assert_handler h);
/* Calls the handler, then aborts (TG_ASSERT's slow path). */
TG_NORETURN_ void tg_assert_fail(const char *expr, const char *file, int line,
                                 const char *func);
/* 1 where the library was compiled with TG_ASSERTS. */
int tg_asserts_enabled(void);

#if defined(TG_ASSERTS)
#define TG_ASSERT(cond)                                                      \
    ((cond) ? (void)0 : tg_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
/* Not evaluated; sizeof keeps the variables it names used. */
#define TG_ASSERT(cond) ((void)sizeof((cond) ? 1 : 0))
#endif

#endif
