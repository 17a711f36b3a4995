/*
 * objects.c - the OpenCL backend's book of cl objects.
 *
 * Every context, queue, program, kernel, buffer and sub-buffer the backend
 * makes is entered here with what it was made from (a sub-buffer's parent
 * buffer, a kernel's program, everything else's context), and every
 * reference the backend takes or drops goes through ocl_obj_retain /
 * ocl_obj_release, which make the clRetain / clRelease call themselves.
 * The book checks the order the OpenCL specification leaves to the
 * implementation: releasing an object the backend does not hold (a second
 * release), or dropping
 * the last reference to an object while objects made from it are still
 * alive (a buffer before its sub-buffers, a program before its kernels, a
 * context before anything).  Such a release is counted as a violation,
 * with the first one's description kept for tests; a release of an object
 * not in the book is not passed to OpenCL, so a bookkeeping bug costs a
 * leak rather than a crash.  The tests assert that every workload at
 * every level, compiled, run and freed, leaves no object alive and no
 * violation (test_opencl_workloads).
 *
 * The book is a hash table under a mutex: objects are made at compile and
 * session set-up, never per run.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uthash.h>

#include "../../graph/alloc.h"
#include "ocl_rt.h"

#undef uthash_malloc
#undef uthash_free
#define uthash_malloc(sz) tg_malloc(sz)
#define uthash_free(ptr, sz) tg_free(ptr)

typedef struct entry {
    const void *obj;
    const void *parent;
    ocl_obj_kind kind;
    long refs;
    long children; /* live objects made from this one */
    UT_hash_handle hh;
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *book;
static long live, violations, made[OCL_OBJ_SUBBUFFER + 1], alive[OCL_OBJ_SUBBUFFER + 1];
static char first[512];

static const char *kind_name(ocl_obj_kind k)
{
    static const char *const names[] = {"context", "command queue", "program", "kernel",
                                        "buffer", "sub-buffer"};
    return k >= 0 && k < (int)(sizeof names / sizeof names[0]) ? names[k] : "object";
}

static void violation(const char *fmt, const entry *e, ocl_obj_kind kind, const void *obj)
{
    violations++;
    if (violations == 1)
        snprintf(first, sizeof first, fmt, e ? kind_name(e->kind) : kind_name(kind), obj,
                 e ? e->children : 0L);
}

static entry *find(const void *obj)
{
    entry *e = NULL;
    HASH_FIND_PTR(book, &obj, e);
    return e;
}

void ocl_obj_made(ocl_obj_kind kind, const void *obj, const void *parent)
{
    if (!obj)
        return;
    pthread_mutex_lock(&mu);
    entry *e = find(obj);
    if (e) { /* a handle reused while we still hold it: the book was wrong */
        violation("a new %s %p has the handle of one still held", e, kind, obj);
        e->refs++;
        live++;
        pthread_mutex_unlock(&mu);
        return;
    }
    made[kind]++;
    alive[kind]++;
    e = tg_calloc(1, sizeof *e);
    if (e) {
        *e = (entry){obj, parent, kind, 1, 0, {0}};
        HASH_ADD_PTR(book, obj, e);
        entry *p = parent ? find(parent) : NULL;
        if (p)
            p->children++;
        else if (parent)
            violation("a %s %p was made from an object the backend does not hold", NULL, kind,
                      obj);
    }
    live++;
    pthread_mutex_unlock(&mu);
}

void ocl_obj_retain(const void *obj)
{
    pthread_mutex_lock(&mu);
    entry *e = find(obj);
    if (e) {
        e->refs++;
        live++;
    } else {
        violation("a %s %p not held by the backend was retained", NULL, OCL_OBJ_BUFFER, obj);
    }
    pthread_mutex_unlock(&mu);
    if (e) {
        switch (e->kind) {
        case OCL_OBJ_CONTEXT: clRetainContext((cl_context)obj); break;
        case OCL_OBJ_QUEUE: clRetainCommandQueue((cl_command_queue)obj); break;
        case OCL_OBJ_PROGRAM: clRetainProgram((cl_program)obj); break;
        case OCL_OBJ_KERNEL: clRetainKernel((cl_kernel)obj); break;
        case OCL_OBJ_BUFFER:
        case OCL_OBJ_SUBBUFFER: clRetainMemObject((cl_mem)obj); break;
        }
    }
}

void ocl_obj_release(ocl_obj_kind kind, const void *obj)
{
    if (!obj)
        return;
    pthread_mutex_lock(&mu);
    entry *e = find(obj);
    if (!e) {
        violation("a %s %p released that the backend does not hold (released twice?)", NULL,
                  kind, obj);
        pthread_mutex_unlock(&mu);
        return; /* not passed on: a leak, not a crash in the driver */
    }
    if (e->refs == 1) {
        if (e->children > 0)
            violation("the last reference to a %s %p dropped while %ld objects made from it "
                      "are alive", e, kind, obj);
        entry *p = e->parent ? find(e->parent) : NULL;
        if (p)
            p->children--;
        alive[e->kind]--;
        HASH_DEL(book, e);
        tg_free(e);
    } else {
        e->refs--;
    }
    live--;
    pthread_mutex_unlock(&mu);
    switch (kind) {
    case OCL_OBJ_CONTEXT: clReleaseContext((cl_context)obj); break;
    case OCL_OBJ_QUEUE: clReleaseCommandQueue((cl_command_queue)obj); break;
    case OCL_OBJ_PROGRAM: clReleaseProgram((cl_program)obj); break;
    case OCL_OBJ_KERNEL: clReleaseKernel((cl_kernel)obj); break;
    case OCL_OBJ_BUFFER:
    case OCL_OBJ_SUBBUFFER: clReleaseMemObject((cl_mem)obj); break;
    }
}

long ocl_live_objects(void)
{
    pthread_mutex_lock(&mu);
    long n = live;
    pthread_mutex_unlock(&mu);
    return n;
}

void ocl_obj_counts(ocl_obj_kind kind, long *n_made, long *n_alive)
{
    pthread_mutex_lock(&mu);
    if (n_made)
        *n_made = made[kind];
    if (n_alive)
        *n_alive = alive[kind];
    pthread_mutex_unlock(&mu);
}

long ocl_obj_violations(char *msg, size_t len)
{
    pthread_mutex_lock(&mu);
    long n = violations;
    if (msg && len)
        snprintf(msg, len, "%s", n ? first : "");
    pthread_mutex_unlock(&mu);
    return n;
}

void ocl_obj_reset_violations(void)
{
    pthread_mutex_lock(&mu);
    violations = 0;
    first[0] = '\0';
    pthread_mutex_unlock(&mu);
}
