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

/*
 * TG_DEPRECATED("use X") marks a public function or enumerator that is
 * kept one release for programs written against it: gcc and clang warn
 * at each use (-Wdeprecated-declarations, on by default), naming what
 * replaces it.  Code that tests the old entry point on purpose silences
 * the warning around it (#pragma GCC diagnostic ignored
 * "-Wdeprecated-declarations").
 */
#if defined(__GNUC__) || defined(__clang__)
#define TG_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define TG_DEPRECATED(msg)
#endif

/*
 * The most threads a call may be given: replay_opts.threads,
 * eager_set_threads and the tool's --threads.  OpenMP allocates per
 * thread, and libgomp answers a failed allocation by exiting the process
 * (2^30 threads did), so a larger count is refused with an error.
 */
#define TG_MAX_THREADS 1024

#endif
