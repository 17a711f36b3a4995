/*
 * runtime.c - OpenCL platforms and devices, the per-device context and
 * program cache, and the count of live cl objects.
 *
 * A device is opened once per process (first plan that asks for it) and
 * kept until replay_backend_shutdown(): PoCL builds programs with LLVM,
 * which takes tens to hundreds of milliseconds per program, so every
 * static source is built once per device and options and shared by all
 * plans on it.  Generated sources (fused nodes) are cached too, keyed by
 * their full text: two plans with the same fused program build it once.
 *
 * Every cl object the backend makes or releases goes through objects.c,
 * so tests can check that freeing every plan and session (and shutting
 * the runtime down) leaves none alive.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "../../graph/alloc.h"
#include "ocl_rt.h"

static atomic_long builds, disk_hits;

long ocl_builds(void) { return atomic_load(&builds); }
long ocl_disk_hits(void) { return atomic_load(&disk_hits); }

/* A built program, keyed by FNV-1a of options + source (and compared in
 * full: a hash collision must not hand back the wrong program). */
typedef struct prog_entry {
    uint64_t hash;
    char *key; /* options '\n' source */
    cl_program prog;
    struct prog_entry *next;
} prog_entry;

static pthread_mutex_t devs_mu = PTHREAD_MUTEX_INITIALIZER;
static ocl_dev *devs;

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

const char *ocl_errstr(cl_int e)
{
    switch (e) {
#define E_(x) case x: return #x;
        E_(CL_SUCCESS) E_(CL_DEVICE_NOT_FOUND) E_(CL_DEVICE_NOT_AVAILABLE)
        E_(CL_COMPILER_NOT_AVAILABLE) E_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        E_(CL_OUT_OF_RESOURCES) E_(CL_OUT_OF_HOST_MEMORY) E_(CL_BUILD_PROGRAM_FAILURE)
        E_(CL_MISALIGNED_SUB_BUFFER_OFFSET) E_(CL_INVALID_VALUE) E_(CL_INVALID_PLATFORM)
        E_(CL_INVALID_DEVICE) E_(CL_INVALID_CONTEXT) E_(CL_INVALID_COMMAND_QUEUE)
        E_(CL_INVALID_MEM_OBJECT) E_(CL_INVALID_BUILD_OPTIONS) E_(CL_INVALID_PROGRAM)
        E_(CL_INVALID_PROGRAM_EXECUTABLE) E_(CL_INVALID_KERNEL_NAME) E_(CL_INVALID_KERNEL)
        E_(CL_INVALID_ARG_INDEX) E_(CL_INVALID_ARG_VALUE) E_(CL_INVALID_ARG_SIZE)
        E_(CL_INVALID_KERNEL_ARGS) E_(CL_INVALID_WORK_DIMENSION)
        E_(CL_INVALID_WORK_GROUP_SIZE) E_(CL_INVALID_WORK_ITEM_SIZE)
        E_(CL_INVALID_GLOBAL_OFFSET) E_(CL_INVALID_BUFFER_SIZE) E_(CL_INVALID_OPERATION)
        E_(CL_INVALID_GLOBAL_WORK_SIZE)
#undef E_
    case -1001: /* CL_PLATFORM_NOT_FOUND_KHR, from the ICD loader */
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "CL error";
    }
}

/* All devices of all platforms, in platform order; *n set. NULL + err if
 * there is no platform. Caller frees. */
static cl_device_id *all_devices(cl_uint *n, char *err, size_t errlen)
{
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    *n = 0;
    if (e != CL_SUCCESS || np == 0) {
        snprintf(err, errlen, "no OpenCL platform (clGetPlatformIDs: %s, %u platforms; "
                 "install an ICD such as Debian's pocl-opencl-icd)", ocl_errstr(e), np);
        return NULL;
    }
    cl_platform_id plats[16];
    if (np > 16)
        np = 16;
    clGetPlatformIDs(np, plats, NULL);
    cl_device_id *ids = tg_malloc(sizeof *ids * 64);
    if (!ids) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (cl_uint p = 0; p < np && *n < 64; p++) {
        cl_uint nd = 0;
        /* nd is how many the platform has, which can be more than were written */
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64 - *n, ids + *n, &nd) == CL_SUCCESS)
            *n += nd < 64 - *n ? nd : 64 - *n;
    }
    if (*n == 0) {
        tg_free(ids);
        snprintf(err, errlen, "no OpenCL device on %u platform(s)", np);
        return NULL;
    }
    return ids;
}

/* A device string, cut to fit buf (the query fails on a short buffer). */
static void dev_str(cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    char tmp[1024] = "";
    size_t n = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &n) == CL_SUCCESS && n <= sizeof tmp)
        clGetDeviceInfo(d, what, n, tmp, NULL);
    snprintf(buf, len, "%s", tmp);
}

static void fill_info(cl_device_id d, int index, ocl_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->index = index;
    cl_platform_id plat;
    dev_str(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    dev_str(d, CL_DEVICE_VERSION, info->version, sizeof info->version);
    char tmp[1024] = "";
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) == CL_SUCCESS &&
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, 0, NULL, &n) == CL_SUCCESS && n <= sizeof tmp)
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, n, tmp, NULL);
    snprintf(info->platform, sizeof info->platform, "%s", tmp);
    cl_ulong mem = 0;
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    info->global_mem = (size_t)mem;
    cl_uint cu = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    info->compute_units = (int)cu;
    info->id = d;
}

int ocl_list_devices(ocl_device_info *out, int max, char *err, size_t errlen)
{
    cl_uint n;
    cl_device_id *ids = all_devices(&n, err, errlen);
    if (!ids)
        return -1;
    for (cl_uint i = 0; i < n && (int)i < max; i++)
        fill_info(ids[i], (int)i, &out[i]);
    tg_free(ids);
    return (int)n;
}

/* Picks a device: NULL/"" the first, a number its index, else the first
 * whose "platform device" name contains the text (case-sensitive). */
static cl_device_id pick(const char *want, char *err, size_t errlen)
{
    cl_uint n;
    cl_device_id *ids = all_devices(&n, err, errlen);
    if (!ids)
        return NULL;
    cl_device_id d = NULL;
    char *end = NULL;
    long idx = want && *want ? strtol(want, &end, 10) : 0;
    if (!want || !*want || (end && *end == '\0')) {
        if (idx >= 0 && idx < (long)n)
            d = ids[idx];
        else
            snprintf(err, errlen, "no OpenCL device %ld (there are %u; see tracegraph devices)",
                     idx, n);
    } else {
        for (cl_uint i = 0; i < n && !d; i++) {
            ocl_device_info info;
            fill_info(ids[i], (int)i, &info);
            char both[300];
            snprintf(both, sizeof both, "%s %s", info.platform, info.name);
            if (strstr(both, want))
                d = ids[i];
        }
        if (!d)
            snprintf(err, errlen, "no OpenCL device matches \"%s\" (see tracegraph devices)", want);
    }
    tg_free(ids);
    return d;
}

static ocl_dev *dev_new(cl_device_id id, char *err, size_t errlen)
{
    ocl_dev *d = tg_calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->id = id;
    fill_info(id, 0, &d->info);
    cl_int e;
    d->ctx = clCreateContext(NULL, 1, &id, NULL, NULL, &e);
    if (!d->ctx) {
        snprintf(err, errlen, "clCreateContext on %s: %s", d->info.name, ocl_errstr(e));
        tg_free(d);
        return NULL;
    }
    ocl_obj_made(OCL_OBJ_CONTEXT, d->ctx, NULL);
    cl_uint bits = 0;
    clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    d->align = bits / 8 < 64 ? 64 : bits / 8;
    char ext[8192] = "";
    size_t n = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) == CL_SUCCESS && n <= sizeof ext)
        clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, ext, NULL);
    d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    cl_ulong mx = 0;
    clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof mx, &mx, NULL);
    d->max_alloc = (size_t)mx;
    pthread_mutex_init(&d->mu, NULL);
    return d;
}

ocl_dev *ocl_dev_open(const char *want, char *err, size_t errlen)
{
    pthread_mutex_lock(&devs_mu);
    cl_device_id id = pick(want, err, errlen);
    ocl_dev *d = NULL;
    if (id) {
        for (d = devs; d && d->id != id; d = d->next)
            ;
        if (!d && (d = dev_new(id, err, errlen))) {
            d->next = devs;
            devs = d;
        }
        if (d)
            d->plans++;
    }
    pthread_mutex_unlock(&devs_mu);
    return d;
}

void ocl_dev_close(ocl_dev *d)
{
    pthread_mutex_lock(&devs_mu);
    d->plans--;
    pthread_mutex_unlock(&devs_mu);
}

static void dev_free(ocl_dev *d)
{
    for (prog_entry *e = d->progs, *next; e; e = next) {
        next = e->next;
        ocl_obj_release(OCL_OBJ_PROGRAM, e->prog);
        tg_free(e->key);
        tg_free(e);
    }
    ocl_obj_release(OCL_OBJ_CONTEXT, d->ctx);
    pthread_mutex_destroy(&d->mu);
    tg_free(d);
}

int ocl_shutdown_begin(void)
{
    pthread_mutex_lock(&devs_mu);
    int kept = 0;
    for (ocl_dev *d = devs; d; d = d->next)
        kept |= d->plans > 0;
    return kept;
}

void ocl_shutdown_end(void)
{
    ocl_dev **link = &devs;
    while (*link) {
        ocl_dev *d = *link;
        if (d->plans > 0) { /* still in use: kept */
            link = &d->next;
            continue;
        }
        *link = d->next;
        dev_free(d);
    }
    pthread_mutex_unlock(&devs_mu);
}

/* The build log, trimmed to fit. */
static void build_log(cl_program prog, cl_device_id id, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || !n)
        return;
    char *log = tg_malloc(n + 1);
    if (!log)
        return;
    if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = '\0';
        snprintf(buf, len, "%s", log);
    }
    tg_free(log);
}

static cl_program build(ocl_dev *d, const char *src, const char *options, char *err,
                        size_t errlen)
{
    cl_int e;
    cl_program prog = ocl_disk_load(d, src, options); /* NULL when the cache is off */
    if (prog) {
        atomic_fetch_add(&disk_hits, 1);
        return prog;
    }
    prog = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &e);
    if (!prog) {
        snprintf(err, errlen, "clCreateProgramWithSource: %s", ocl_errstr(e));
        return NULL;
    }
    ocl_obj_made(OCL_OBJ_PROGRAM, prog, d->ctx);
    atomic_fetch_add(&builds, 1);
    e = clBuildProgram(prog, 1, &d->id, options, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[3000];
        build_log(prog, d->id, log, sizeof log);
        snprintf(err, errlen, "OpenCL build failed on %s (%s, options \"%s\"); build log:\n%s",
                 d->info.name, ocl_errstr(e), options ? options : "", log);
        ocl_obj_release(OCL_OBJ_PROGRAM, prog);
        return NULL;
    }
    ocl_disk_store(d, prog, src, options);
    return prog;
}

cl_program ocl_dev_program(ocl_dev *d, const char *src, const char *options, char *err,
                           size_t errlen)
{
    if (!options)
        options = "";
    uint64_t h = fnv1a(src, fnv1a("\n", fnv1a(options, 0xcbf29ce484222325ull)));
    size_t ol = strlen(options), sl = strlen(src);
    /* Held across the build: two plans compiling the same source on two
     * threads wait for one build rather than making two. */
    pthread_mutex_lock(&d->mu);
    for (prog_entry *e = d->progs; e; e = e->next)
        if (e->hash == h && strncmp(e->key, options, ol) == 0 && e->key[ol] == '\n' &&
            strcmp(e->key + ol + 1, src) == 0) {
            ocl_obj_retain(e->prog);
            pthread_mutex_unlock(&d->mu);
            return e->prog;
        }
    cl_program prog = NULL;
    prog_entry *e = tg_calloc(1, sizeof *e);
    char *key = tg_malloc(ol + sl + 2);
    if (!e || !key) {
        snprintf(err, errlen, "out of memory");
    } else if ((prog = build(d, src, options, err, errlen))) {
        memcpy(key, options, ol);
        key[ol] = '\n';
        memcpy(key + ol + 1, src, sl + 1);
        *e = (prog_entry){h, key, prog, d->progs};
        d->progs = e;
        ocl_obj_retain(prog); /* one for the cache, one for the caller */
        e = NULL;
        key = NULL;
    }
    pthread_mutex_unlock(&d->mu);
    tg_free(e);
    tg_free(key);
    return prog;
}
