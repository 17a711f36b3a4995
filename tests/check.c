#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eager/eager.h"
#include "replay/replay.h"

static int passed, failed;

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

void check_report(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL %s:%d: ", base(file), line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (eager_status() != TG_OK)
        fprintf(stderr, "     (eager error: %s)\n", eager_error());
}

static int near(double a, double b, double tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= tol * (1.0 + fabs(b));
}

void check_near(double a, double b, double tol, const char *file, int line,
                const char *what)
{
    check_report(near(a, b, tol), file, line, "%s = %.9g, want %.9g (tol %g)",
                 what, a, b, tol);
}

void check_floats(const float *got, const float *want, int64_t n, double tol,
                  const char *file, int line, const char *what)
{
    if (!got || !want) {
        check_report(0, file, line, "%s: NULL data", what);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        if (!near(got[i], want[i], tol)) {
            check_report(0, file, line, "%s[%lld] = %.9g, want %.9g (tol %g)",
                         what, (long long)i, got[i], want[i], tol);
            return;
        }
    }
    check_report(1, file, line, "%s", what);
}

void check_error(const char *substr, const char *file, int line)
{
    const char *msg = eager_error();
    check_report(eager_status() != TG_OK && strstr(msg, substr) != NULL, file,
                 line, "error \"%s\" should contain \"%s\"", msg, substr);
    eager_clear_error();
}

double check_abs_diff(double got, double want)
{
    if (isnan(got) || isnan(want))
        return isnan(got) && isnan(want) ? 0 : INFINITY;
    if (isinf(got) || isinf(want))
        return got == want ? 0 : INFINITY;
    return fabs(got - want);
}

double check_normalized_error(const float *got, const float *want, int64_t n)
{
    double scale = 1e-6, diff = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(want[i]))
            scale = fmax(scale, fabs(want[i]));
        diff = fmax(diff, check_abs_diff(got[i], want[i]));
    }
    return diff / scale;
}

void check_fail_at(const char *want, const char *file, int line, const char *func)
{
    char site[256];
    const char *base = strrchr(file, '/');
    snprintf(site, sizeof site, "%s:%d %s", base ? base + 1 : file, line,
             func);
    check_report(strstr(eager_error(), site) != NULL, file, line,
                 "error \"%s\" should name %s", eager_error(), site);
    check_error(want, file, line);
}

int check_opencl_device(struct replay_device_info *dev)
{
    char err[512] = "";
    replay_device_info first;
    int n = replay_backend_devices("opencl", &first, 1, err, sizeof err);
    if (n <= 0) {
        printf("SKIP: %s\n", n < 0 ? err : "no OpenCL device on any platform");
        return 0;
    }
    if (dev)
        *dev = first;
    return 1;
}

int check_done(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

void check_fill(float *p, int64_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = lo + (hi - lo) * (float)((s >> 40) * (1.0 / 16777216.0));
    }
}

eager_tensor *check_rand_tensor(graph_ints shape, uint64_t seed, float lo, float hi)
{
    int64_t n = 1;
    for (int i = 0; i < shape.n; i++)
        n *= shape.v[i];
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (!f)
        return NULL;
    check_fill(f, n, seed, lo, hi);
    eager_tensor *t = eager_from_data(GRAPH_F32, shape, f);
    free(f);
    return t;
}
