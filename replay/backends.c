/*
 * backends.c - the table of backends and how a name finds one: "cpu",
 * "opencl", "opencl:1", "opencl:NVIDIA" (replay.h, "Backends, by name").
 * The backend's part of a name is matched here against this table, the
 * device part against the list the backend's devices entry makes, so
 * every backend's devices are named and matched by one rule.  A new
 * backend is one line in the table.
 */
#include <stdlib.h>
#include <string.h>

#include "../graph/alloc.h"
#include "internal.h"

/* The backends, in the order replay_backend_name lists them. */
static const replay_backend *const backends[] = {
    &replay_backend_cpu,
    &replay_backend_opencl,
};
#define NBACKENDS ((int)(sizeof backends / sizeof *backends))

/* The most devices one backend lists (more are not named). */
#define MAX_DEVICES 64

const char *replay_backend_name(int i)
{
    return i >= 0 && i < NBACKENDS ? backends[i]->name : NULL;
}

/* The backend named by the first len bytes of name, or NULL. */
static const replay_backend *by_name(const char *name, size_t len)
{
    for (int i = 0; i < NBACKENDS; i++)
        if (strlen(backends[i]->name) == len && memcmp(backends[i]->name, name, len) == 0)
            return backends[i];
    return NULL;
}

/* "no backend named \"x\" (backends: cpu, opencl)" into err. */
static void no_backend(const char *name, size_t len, char *err, size_t errlen)
{
    char list[256] = "";
    for (int i = 0; i < NBACKENDS; i++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", backends[i]->name);
    }
    snprintf(err, errlen, "replay: no backend named \"%.*s\" (backends: %s)", (int)len, name,
             list);
}

/* be's devices into out (max), each named; their count or -1 (err). */
static int list_devices(const replay_backend *be, replay_device_info *out, int max, char *err,
                        size_t errlen)
{
    if (!be->devices) {
        if (out && max > 0) {
            memset(out, 0, sizeof *out);
            snprintf(out->name, sizeof out->name, "%s", be->name);
            snprintf(out->device, sizeof out->device, "%s", be->name);
        }
        return 1;
    }
    char msg[512] = "";
    int n = be->devices(out, max, msg, sizeof msg);
    if (n < 0) {
        snprintf(err, errlen, "replay: %s: %s", be->name, msg);
        return -1;
    }
    for (int k = 0; out && k < n && k < max; k++)
        if (!out[k].name[0])
            snprintf(out[k].name, sizeof out[k].name, "%s:%d", be->name, k);
    return n;
}

int replay_backend_devices(const char *backend, replay_device_info *out, int max, char *err,
                           size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!backend) {
        snprintf(err, errlen, "replay_backend_devices: no backend name (NULL)");
        return -1;
    }
    const replay_backend *be = by_name(backend, strlen(backend));
    if (!be) {
        no_backend(backend, strlen(backend), err, errlen);
        return -1;
    }
    return list_devices(be, out, max < 0 ? 0 : max, err, errlen);
}

/*
 * The backend o names, without looking at its devices; *spec: the device
 * part (NULL: the first device), *old: 1 when named by the deprecated
 * replay_opts.backend.  NULL with a message for an unknown name.
 */
static const replay_backend *backend_of(const replay_opts *o, const char **spec, int *old,
                                        char *err, size_t errlen)
{
    const char *want = o->device;
    *spec = NULL;
    *old = 0;
    /* The deprecated kind: 1 is OpenCL, device its device alone. */
    if ((int)o->backend == 1) {
        *spec = want;
        *old = 1;
        /* half moved to the names: "opencl" or "opencl:N" in device too */
        if (want && !strncmp(want, "opencl", 6) && (want[6] == '\0' || want[6] == ':')) {
            *spec = want[6] ? want + 7 : NULL;
            *old = 0;
        }
        return &replay_backend_opencl;
    }
    if ((int)o->backend != 0) {
        snprintf(err, errlen, "replay: unknown backend %d (replay_opts.backend is deprecated: "
                 "name the backend in replay_opts.device)", (int)o->backend);
        return NULL;
    }
    if (!want || !*want)
        return &replay_backend_cpu;
    const char *colon = strchr(want, ':');
    size_t len = colon ? (size_t)(colon - want) : strlen(want);
    const replay_backend *be = by_name(want, len);
    if (!be)
        no_backend(want, len, err, errlen);
    *spec = colon ? colon + 1 : NULL;
    return be;
}

const replay_backend *replay_backend_named(const replay_opts *o, char *err, size_t errlen)
{
    const char *spec;
    int old;
    return backend_of(o, &spec, &old, err, errlen);
}

/* Nonzero when s is a decimal number (digits only). */
static int is_index(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

const replay_backend *replay_backend_resolve(const replay_opts *o, replay_device_info *dev,
                                             int *index, tg_status *st, char *err,
                                             size_t errlen)
{
    const char *spec;
    int old;
    *st = TG_ERR_ARG;
    const replay_backend *be = backend_of(o, &spec, &old, err, errlen);
    if (!be)
        return NULL;
    replay_device_info *d = tg_malloc(MAX_DEVICES * sizeof *d);
    if (!d) {
        snprintf(err, errlen, "replay: out of memory listing the %s devices", be->name);
        *st = TG_ERR_NOMEM;
        return NULL;
    }
    int n = list_devices(be, d, MAX_DEVICES, err, errlen);
    if (n > MAX_DEVICES)
        n = MAX_DEVICES;
    int k = -1;
    if (n == 0)
        snprintf(err, errlen, "replay: backend %s has no device here", be->name);
    else if (!spec || !*spec)
        k = 0;
    else if (is_index(spec))
        k = strlen(spec) < 6 && atoi(spec) < n ? atoi(spec) : -1;
    else
        for (int i = 0; i < n && k < 0; i++)
            if (strstr(d[i].device, spec))
                k = i;
    if (n > 0 && k < 0) { /* a message that lists the names there are */
        size_t at = (size_t)snprintf(err, errlen, "replay: no device \"%s%s\" (devices:",
                                     old ? "opencl:" : o->device, old ? spec : "");
        for (int i = 0; i < n && at < errlen; i++)
            at += (size_t)snprintf(err + at, errlen - at, "%s %s = %s", i ? ";" : "", d[i].name,
                                   d[i].device);
        if (at < errlen)
            snprintf(err + at, errlen - at, "; tracegraph devices lists them)");
    }
    if (n < 0)
        *st = TG_ERR_BACKEND;
    if (k >= 0) {
        *index = k;
        if (dev)
            *dev = d[k];
        *st = TG_OK;
    }
    tg_free(d);
    return k >= 0 ? be : NULL;
}

tg_status replay_backend_find(const char *name, replay_device_info *dev, char *err,
                              size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    replay_opts o = REPLAY_OPTS_INIT;
    o.device = name;
    replay_device_info d;
    int index;
    tg_status st;
    if (!replay_backend_resolve(&o, &d, &index, &st, err, errlen))
        return st;
    if (dev)
        *dev = d;
    return TG_OK;
}

const char *replay_plan_property(const replay_plan *p, const char *key)
{
    if (!p || !key)
        return NULL;
    if (!strcmp(key, "backend"))
        return p->backend->name;
    if (!strcmp(key, "device"))
        return p->device_name;
    if (!strcmp(key, "device_buffers"))
        return p->backend->device_buffers ? "yes" : NULL;
    return p->backend->property ? p->backend->property(p, key) : NULL;
}

void *replay_plan_handle(const replay_plan *p, const char *what)
{
    if (!p || !what || !p->backend->handle)
        return NULL;
    return p->backend->handle(p, what);
}

void *replay_buffer_new(const replay_plan *p, size_t bytes, const void *data, char *err,
                        size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!p) {
        snprintf(err, errlen, "replay_buffer_new: no plan (NULL)");
        return NULL;
    }
    if (!p->backend->buffer_new) {
        snprintf(err, errlen, "replay: backend %s has no device buffers: pass .data",
                 p->backend->name);
        return NULL;
    }
    return p->backend->buffer_new(p, bytes, data, err, errlen);
}

void replay_buffer_free(const replay_plan *p, void *buffer)
{
    if (p && buffer && p->backend->buffer_free)
        p->backend->buffer_free(p, buffer);
}

void replay_backend_shutdown(void)
{
    for (int i = 0; i < NBACKENDS; i++)
        if (backends[i]->shutdown)
            backends[i]->shutdown();
}
