/*
 * ew_bcast.h - how the elementwise kernels walk their tensors: a
 * parallel split of [0, n) and NumPy-broadcast iteration for ops with up
 * to three inputs (binary arithmetic, comparisons, where).
 *
 * An op supplies a run function that handles one contiguous stretch of
 * the output; the walker hands it pointers for each input and a mode
 * saying which inputs advance along the stretch and which repeat one
 * element.  With the dims collapsed, the common cases are one call per
 * thread: same shapes (every input advances), a scalar on either side,
 * and [N,C] + [C] (one call per row).
 */
#ifndef TG_EAGER_EW_BCAST_H
#define TG_EAGER_EW_BCAST_H

#include <stdint.h>

#include "kernel.h"

/* Most inputs an elementwise op has (where). */
#define EW_MAX_IN 3

/*
 * Computes out[0..n) for one stretch.  Bit i of mode is set when input i
 * advances with the output (in[i][k] pairs with out[k]) and clear when
 * in[i][0] is used for every k.  Inputs and output are contiguous.
 */
typedef void (*ew_run_fn)(const void *const *in, void *out, int64_t n,
                          unsigned mode);

/* Runs fn(start, end, ctx) over [0, n) split into one chunk per thread
 * (whole cache lines of 4-byte elements); a plain call below
 * EAGER_PAR_MIN or with one thread. */
void eager_ew_parallel(int64_t n, int nthreads,
                       void (*fn)(int64_t start, int64_t end, void *ctx),
                       void *ctx);

/* Runs an elementwise op over a->in[0..nin) broadcast to a->out_type,
 * writing a->out[0].  Inputs must broadcast to the output (infer checked
 * it); never fails. */
void eager_ew_broadcast(const eager_kargs *a, ew_run_fn fn);

#endif
