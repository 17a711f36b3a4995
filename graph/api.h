/*
 * api.h - TG_API, the mark of the public API.
 *
 * The shared library is built with -fvisibility=hidden: it exports exactly
 * the functions and variables whose declarations in the installed headers
 * carry TG_API (scripts/test_install.sh compares its dynamic symbols with
 * those declarations).  Internal headers (not installed) never use it, so
 * functions shared between the library's own files stay hidden.
 */
#ifndef TG_GRAPH_API_H
#define TG_GRAPH_API_H

#if defined(__GNUC__) || defined(__clang__)
#define TG_API __attribute__((visibility("default")))
#else
#define TG_API
#endif

#endif
