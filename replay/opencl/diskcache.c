/*
 * diskcache.c - built OpenCL programs kept on disk between processes, off
 * unless TG_OPENCL_CACHE is set: "1" (or any value starting with a digit)
 * for $XDG_CACHE_HOME/tracegraph/opencl (~/.cache/... without it), or a
 * directory path.  The in-process cache (runtime.c) comes first; this one
 * saves the LLVM build on the next process for drivers that keep no cache
 * of their own.
 *
 * A file is <key>.bin, key = FNV-1a 64 of the device name, the driver
 * version, the options and the source; it holds a magic line, the key
 * again, the length of options + source and the device binary.  A file
 * that does not match (another key, truncated, a binary the driver
 * rejects) is ignored and rewritten.  Files are written to a temporary
 * name and renamed, so a reader never sees half a file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../graph/alloc.h"
#include "ocl_rt.h"

#define MAGIC "tracegraph-opencl-binary-1\n"

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The cache directory (made if missing), or 0 when the cache is off. */
static int cache_dir(char *buf, size_t len)
{
    const char *v = getenv("TG_OPENCL_CACHE");
    if (!v || !*v || !strcmp(v, "0")) /* "0" is off, as for the other switches */
        return 0;
    if (*v >= '0' && *v <= '9') {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            snprintf(buf, len, "%s/tracegraph", xdg);
        else if (home && *home)
            snprintf(buf, len, "%s/.cache/tracegraph", home);
        else
            return 0;
        mkdir(buf, 0755);
        strncat(buf, "/opencl", len - strlen(buf) - 1);
    } else {
        snprintf(buf, len, "%s", v);
    }
    mkdir(buf, 0755);
    return 1;
}

static uint64_t key_of(const ocl_dev *d, const char *src, const char *options)
{
    char ver[256] = "";
    clGetDeviceInfo(d->id, CL_DRIVER_VERSION, sizeof ver - 1, ver, NULL);
    uint64_t h = fnv(d->info.name, 0xcbf29ce484222325ull);
    h = fnv(ver, fnv("\n", h));
    h = fnv(options, fnv("\n", h));
    return fnv(src, fnv("\n", h));
}

static void path_of(char *buf, size_t len, const char *dir, uint64_t key)
{
    snprintf(buf, len, "%s/%016llx.bin", dir, (unsigned long long)key);
}

cl_program ocl_disk_load(ocl_dev *d, const char *src, const char *options)
{
    char dir[512], path[600];
    if (!cache_dir(dir, sizeof dir))
        return NULL;
    uint64_t key = key_of(d, src, options), k2 = 0, text = 0, n = 0;
    path_of(path, sizeof path, dir, key);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char magic[sizeof MAGIC] = "";
    unsigned char *bin = NULL;
    cl_program prog = NULL;
    if (fread(magic, 1, sizeof MAGIC - 1, f) == sizeof MAGIC - 1 && !strcmp(magic, MAGIC) &&
        fread(&k2, sizeof k2, 1, f) == 1 && k2 == key && fread(&text, sizeof text, 1, f) == 1 &&
        text == strlen(options) + strlen(src) && fread(&n, sizeof n, 1, f) == 1 && n > 0 &&
        n < (1u << 30) && (bin = tg_malloc(n)) && fread(bin, 1, n, f) == n) {
        size_t len = n;
        const unsigned char *bp = bin;
        cl_int e, st;
        prog = clCreateProgramWithBinary(d->ctx, 1, &d->id, &len, &bp, &st, &e);
        if (prog && (e != CL_SUCCESS || st != CL_SUCCESS ||
                     clBuildProgram(prog, 1, &d->id, options, NULL, NULL) != CL_SUCCESS)) {
            clReleaseProgram(prog);
            prog = NULL;
        }
    }
    tg_free(bin);
    fclose(f);
    if (prog)
        ocl_obj_made(OCL_OBJ_PROGRAM, prog, d->ctx);
    return prog;
}

void ocl_disk_store(ocl_dev *d, cl_program prog, const char *src, const char *options)
{
    char dir[512], path[600], tmp[640];
    if (!cache_dir(dir, sizeof dir))
        return;
    size_t n = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || !n)
        return;
    unsigned char *bin = tg_malloc(n);
    if (!bin)
        return;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) {
        uint64_t key = key_of(d, src, options), text = strlen(options) + strlen(src);
        uint64_t n64 = n;
        path_of(path, sizeof path, dir, key);
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        int ok = f && fwrite(MAGIC, 1, sizeof MAGIC - 1, f) == sizeof MAGIC - 1 &&
                 fwrite(&key, sizeof key, 1, f) == 1 && fwrite(&text, sizeof text, 1, f) == 1 &&
                 fwrite(&n64, sizeof n64, 1, f) == 1 && fwrite(bin, 1, n, f) == n;
        if (f && fclose(f) != 0)
            ok = 0;
        if (!ok || rename(tmp, path) != 0)
            remove(tmp);
    }
    tg_free(bin);
}
