/*
 * trace_overhead.c - what tracing adds to eager execution.
 *
 * The dispatch-bound workload: 100 iterations of
 *   x = relu(x*1.01 + 0.01) - x*0.5 + sigmoid(x)
 * on 16 elements (700 ops).  Timed plain eager, eager while tracing with
 * stack capture, and without; each traced run is begin .. ops .. output,
 * with freeze (symbolization, dynamic dims, verification) timed apart.
 * Medians over repetitions; the machine is shared, so read ratios from one
 * run.  Target: tracing with stack capture <= 2x eager.
 *
 * A stack is walked (unw_backtrace with frame pointers, or libunwind's
 * stepping API, ~1 us a frame) only the first time a thread sees a (call
 * site, frame address); later calls, in this trace or a later one,
 * re-check the captured return-address slots in a few loads.  Symbol names
 * are looked up at freeze, once per address for the process.  The last
 * line traces the loop 10 times over (7000 ops) in one trace.
 *
 *   trace_overhead [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "tracegraph.h"
#include "tracer/trace.h"

static double now_us(void) { return bench_now_ns() / 1e3; }

static eager_tensor *c101, *c001, *c05;

static int loops = 1;

static eager_tensor *tiny(eager_tensor *x)
{
    for (int i = 0; i < 100 * loops; i++) {
        eager_tensor *a = eager_relu(eager_add(eager_mul(x, c101), c001));
        x = eager_add(eager_sub(a, eager_mul(x, c05)), eager_sigmoid(x));
    }
    return x;
}

/* One run; mode 0 eager, 1 traced with stacks, 2 traced without. */
static int run(int mode, eager_tensor *x, double *t_run, double *t_freeze)
{
    eager_pool_push();
    double t0 = now_us();
    if (mode) {
        trace_opts o = trace_default_opts();
        o.capture_stack = mode == 1;
        trace_begin(&o);
        trace_input(x, "x");
    }
    eager_tensor *y = tiny(x);
    if (mode)
        trace_output(y, "y");
    double t1 = now_us();
    graph *g = mode ? trace_freeze() : NULL;
    double t2 = now_us();
    int ok = y && (!mode || g);
    graph_free(g);
    eager_pool_pop();
    *t_run = t1 - t0;
    *t_freeze = t2 - t1;
    return ok;
}

int main(int argc, char **argv)
{
    int reps = 51;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: trace_overhead [--reps R]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 100000) {
        fprintf(stderr, "trace_overhead: --reps must be 1..100000\n");
        return 2;
    }
    c101 = eager_scalar(1.01);
    c001 = eager_scalar(0.01);
    c05 = eager_scalar(0.5);
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(16), 1, -1, 1);
    double *t[3], *f[3];
    for (int m = 0; m < 3; m++) {
        t[m] = malloc(sizeof(double) * (size_t)reps);
        f[m] = malloc(sizeof(double) * (size_t)reps);
    }
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < 3; m++) /* interleaved: noise hits all alike */
            if (!run(m, x, &t[m][r], &f[m][r])) {
                fprintf(stderr, "trace_overhead: %s\n", eager_error());
                return 1;
            }
    const char *names[3] = {"eager", "traced, stacks", "traced, no stacks"};
    printf("trace_overhead: 100 x (relu(x*1.01+0.01) - x*0.5 + sigmoid(x)) on f32[16], "
           "700 ops, %d reps (medians)\n", reps);
    qsort(t[0], (size_t)reps, sizeof(double), bench_cmp_double);
    double eager = t[0][reps / 2];
    for (int m = 0; m < 3; m++) {
        if (m)
            qsort(t[m], (size_t)reps, sizeof(double), bench_cmp_double);
        qsort(f[m], (size_t)reps, sizeof(double), bench_cmp_double);
        printf("  %-18s %8.1f us  (%5.1f ns/op, %.2fx eager)", names[m], t[m][reps / 2],
               t[m][reps / 2] * 1e3 / 700, t[m][reps / 2] / eager);
        if (m)
            printf("   freeze %8.1f us", f[m][reps / 2]);
        printf("\n");
    }
    /* Steady state: the loop 10 times over in one trace. */
    loops = 10;
    int lreps = reps / 4 > 3 ? reps / 4 : 3;
    for (int r = 0; r < lreps; r++)
        for (int m = 0; m < 2; m++)
            if (!run(m, x, &t[m][r], &f[m][r])) {
                fprintf(stderr, "trace_overhead: %s\n", eager_error());
                return 1;
            }
    qsort(t[0], (size_t)lreps, sizeof(double), bench_cmp_double);
    qsort(t[1], (size_t)lreps, sizeof(double), bench_cmp_double);
    printf("  7000 ops in one trace: eager %.1f ns/op, traced with stacks %.1f ns/op (%.2fx eager)\n",
           t[0][lreps / 2] * 1e3 / 7000, t[1][lreps / 2] * 1e3 / 7000, t[1][lreps / 2] / t[0][lreps / 2]);
    printf("  target: traced with stacks <= 2x eager\n");
    for (int m = 0; m < 3; m++) {
        free(t[m]);
        free(f[m]);
    }
    eager_release(x);
    eager_release(c101);
    eager_release(c001);
    eager_release(c05);
    return 0;
}
