/*
 * cost_rates.h - the CPU's rates for the -O3 layout pass's cost model
 * (graph_cost_rates in graph/target.h), measured on this machine once and
 * cached, and the machine identity and cache folder the tuning cache
 * (replay/tune.c) shares.  Internal to the library.
 */
#ifndef TG_EAGER_COST_RATES_H
#define TG_EAGER_COST_RATES_H

#include <stddef.h>

#include "../graph/target.h"

/*
 * The cost model's few-positions factors (optimize/layout_cost.c): a conv
 * on pos output positions (N*H*W) runs at rate * pos / (pos + POS), POS
 * GEMM_POS plain as one GEMM, BLK_POS blocked.  Fitted, not measured; the
 * micro-benchmark undoes them when solving for the rates.
 */
#define EAGER_COST_GEMM_POS 35.0
#define EAGER_COST_BLK_POS 10.0

/*
 * The rates for the CPU at `threads` threads and `block`-channel blocks
 * into r, by $TG_COST_RATES: "builtin" (GRAPH_COST_RATES_BUILTIN), a list
 * "name=value,..." (pinned: the names of eager_cost_rates_parse, the
 * others built-in), or unset, empty or "measure": the cache's entry for
 * this machine (eager_cost_rates_key), else measured now (well under a
 * second) and added to the cache.  Once per process and key; thread-safe.
 * TG_OK, or TG_ERR_ARG and the reason in err (a TG_COST_RATES that does
 * not parse).  A cache that cannot be read or written, or a line of it
 * that does not parse, is no error: r->from says so.
 */
tg_status eager_cpu_cost_rates(int threads, int block, graph_cost_rates *r, char *err,
                               size_t errlen);
/*
 * Parses "gemm=48,im2col=40,blk1x1=54,blk1x1pad=48,blkkxk=90,copy=50,
 * step=350,plaincall=500" (',' or ';' between; any subset unless `all`)
 * over r's values: 1, or 0 and the reason in err.  MAC and byte rates
 * must be in [0.01, 1e5], the ns ones in [0, 1e7]; a name twice, or one
 * not listed, is refused.
 */
int eager_cost_rates_parse(const char *s, int all, graph_cost_rates *r, char *err,
                           size_t errlen);
/* r's values in eager_cost_rates_parse's form ("gemm=48.00;..."). */
void eager_cost_rates_str(const graph_cost_rates *r, char *buf, size_t len);
/* Forgets the rates and the cache file read by this process (tests). */
void eager_cost_rates_forget(void);

/* The CPU's model name as /proc/cpuinfo gives it ("AMD EPYC 9R14 96-Core
 * Processor", trailing blanks dropped; read once per process) into buf:
 * 1, or 0 with buf "" when there is none. */
int eager_cpu_model_name(char *buf, size_t len);
/* The CPU's model name from /proc/cpuinfo as one word ("AMD_EPYC_9R14";
 * "unknown"). */
const char *eager_cpu_model(void);
/*
 * The path of cache file `file` ("tune.txt") into buf: $env when set and
 * not empty, else $XDG_CACHE_HOME/tracegraph/FILE, else
 * ~/.cache/tracegraph/FILE (the folders made when missing).  0 when there
 * is none (no HOME) or it does not fit.
 */
int eager_cache_path(const char *env, const char *file, char *buf, size_t len);
/*
 * Reads a cache file of text lines (the rates cache, the tuning cache):
 * at most max_bytes (what follows is dropped, as is a last line without
 * its newline).  line gets each line that is not empty and not a comment
 * ('#'), NUL-terminated, with its number from 1, split at tabs into at
 * most 8 fields (f[0..nf)).  A line longer than max_line or holding a NUL
 * byte goes to bad(ctx, number, why) instead, as does a path that is not
 * a regular file (number 0).  A missing or unreadable file reads as empty.
 * -1 when out of memory, else 0.
 */
int eager_cache_read_lines(const char *path, size_t max_bytes, size_t max_line,
                           void (*line)(void *ctx, char **f, int nf, int no),
                           void (*bad)(void *ctx, int no, const char *why), void *ctx);

#endif
