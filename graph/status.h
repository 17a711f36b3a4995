/*
 * status.h - the status codes every tracegraph module returns.
 *
 * One X-macro list, expanded into the enum and the string table (as libuv
 * does), so a code and its text cannot drift apart.
 *
 * Where a failing call leaves its message, one rule for every call
 * (docs/GUIDE.md, "Where an error message is"): in the caller's
 * (err, errlen) buffer when the call takes one; else on the object it
 * was called on (graph_error, replay_session_error); else, for eager_*
 * and trace_* calls, in the thread's eager_error().
 */
#ifndef TG_GRAPH_STATUS_H
#define TG_GRAPH_STATUS_H

#include "api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_STATUS_LIST(X)                                                  \
    X(OK, "ok")                                                            \
    X(ERR_NULL, "null argument")                                           \
    X(ERR_ARG, "invalid argument")                                         \
    X(ERR_SHAPE, "shape mismatch")                                         \
    X(ERR_DTYPE, "dtype mismatch")                                         \
    X(ERR_AXIS, "axis out of range")                                       \
    X(ERR_NOMEM, "out of memory")                                          \
    X(ERR_UNSUPPORTED, "unsupported")                                      \
    X(ERR_BACKEND, "backend failure")                                      \
    X(ERR_IO, "input/output error")                                        \
    X(ERR_FORMAT, "malformed data")                                        \
    X(ERR_STATE, "invalid state")                                          \
    X(ERR_GUARD, "guard failed")

/* tg_status: 0 is success, every other value is an error. */
typedef enum tg_status {
#define TG_STATUS_ENUM_(name, text) TG_##name,
    TG_STATUS_LIST(TG_STATUS_ENUM_)
#undef TG_STATUS_ENUM_
    TG_STATUS_COUNT
} tg_status;

/* Short fixed text for a status code; never NULL, even for unknown codes. */
TG_API const char *tg_status_str(tg_status s);

#ifdef __cplusplus
}
#endif

#endif
