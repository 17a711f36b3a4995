/*
 * stack.c - call stacks for provenance.
 *
 * Capture is unw_backtrace(): raw return addresses, no symbol lookup, a few
 * dozen ns per frame.  The tracer avoids even that for repeated calls: it
 * keeps, per (call site, frame address), the stack and the stack slots
 * that hold its return addresses (trace_stack_capture_slots), and reuses
 * it when every slot still holds the same address (trace_stack_unchanged:
 * a few loads instead of a walk).  Symbolization runs at freeze, once per
 * distinct address for the whole process (sym_cache): libunwind resolves a
 * name from the ELF symbol table when a local cursor's IP is set to the
 * address (libunwind 1.6 has no lookup by bare address); dladdr() is the
 * fallback for objects libunwind cannot read.
 * A return address points after the call, so the lookup uses ip - 1.
 */
#define UNW_LOCAL_ONLY
#include "../graph/alloc.h"
#include "stack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <libunwind.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/tg_hash.h"
#include "../graph/graph_impl.h"

int trace_stack_capture(uint64_t *ips, int max, int skip)
{
    void *buf[TRACE_MAX_DEPTH + 8];
    if (max > TRACE_MAX_DEPTH)
        max = TRACE_MAX_DEPTH;
    if (skip < 0)
        skip = 0;
    if (skip > 8)
        skip = 8;
    int n = unw_backtrace(buf, max + skip + 1); /* +1: this function */
    int out = 0;
    for (int i = skip + 1; i < n && out < max; i++)
        ips[out++] = (uint64_t)(uintptr_t)buf[i];
    return out;
}

/* The top (highest address) of this thread's stack, looked up once. */
static uintptr_t stack_top(void)
{
    static _Thread_local uintptr_t top;
    if (!top) {
        pthread_attr_t attr;
        void *addr;
        size_t size;
        if (pthread_getattr_np(pthread_self(), &attr) != 0)
            return 0;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0)
            top = (uintptr_t)addr + size;
        pthread_attr_destroy(&attr);
    }
    return top;
}

/* The C library's loaded segments, found once: thread start-up frames
 * live there (dladdr per address was ~2 us). */
#define LIBC_MAX_SEGS 8
static uintptr_t libc_lo[LIBC_MAX_SEGS], libc_hi[LIBC_MAX_SEGS];
static int libc_nsegs;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum && libc_nsegs < LIBC_MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            libc_lo[libc_nsegs] = info->dlpi_addr + ph->p_vaddr;
            libc_hi[libc_nsegs++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
    return 1;
}

static void libc_init(void) { dl_iterate_phdr(find_libc, NULL); }

static int in_libc(uint64_t ip)
{
    pthread_once(&libc_once, libc_init);
    for (int i = 0; i < libc_nsegs; i++)
        if (ip - 1 >= libc_lo[i] && ip - 1 < libc_hi[i])
            return 1;
    return 0;
}

/*
 * Fast path: when frames keep a frame pointer (this project builds with
 * -fno-omit-frame-pointer; many distributions now do too), the chain of
 * saved frame pointers leads to each return-address slot directly.  The
 * chain is trusted only while it yields exactly the addresses libunwind's
 * walk found, frame by frame, inside this thread's stack.  It may stop
 * early only in the thread's start-up frames (the C library's, plus the
 * outermost one, _start): they stay the same for the thread's whole life,
 * so their slots (0 here) need no checking.  Else 0: take the slow path.
 */
__attribute__((no_sanitize_address)) static int
slots_by_frame_pointers(const uint64_t *raw, int n, uint64_t *ips, uint64_t *slots,
                        const uint64_t *fp)
{
    uintptr_t top = stack_top();
    int i = 1;
    for (; i < n; i++) {
        if (!top || ((uintptr_t)fp & 7) || (uintptr_t)fp + 16 > top || fp[1] != raw[i])
            break;
        ips[i - 1] = raw[i];
        slots[i - 1] = (uint64_t)(uintptr_t)&fp[1];
        const uint64_t *next = (const uint64_t *)(uintptr_t)fp[0];
        if (next <= fp)
            break;
        fp = next;
    }
    for (int k = i; k < n; k++) {
        if (k + 1 < n && !in_libc(raw[k]) && !(k == i && k > 1 && in_libc(raw[k - 1])))
            return 0;
        ips[k - 1] = raw[k];
        slots[k - 1] = 0;
    }
    return n - 1;
}

/*
 * Slow path: libunwind's stepping API.  After a step, the caller's SP is
 * the callee's CFA, and the call pushed the return address just below it.
 * Exact whatever the compiler did, and slow (~1 us a frame), which is why
 * the tracer only comes here on a miss of its (site, frame address) cache.
 * (Scanning the stack for the addresses would be faster but finds stale
 * copies, seen here in libc's start-up frames, and could reuse a wrong
 * stack silently.)
 */
__attribute__((noinline)) static int slots_by_stepping(uint64_t *ips, uint64_t *slots,
                                                      int max)
{
    unw_context_t uc;
    unw_cursor_t c;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
        return 0;
    int n = 0;
    unw_step(&c); /* out of this helper, into trace_stack_capture_slots */
    while (n < max && unw_step(&c) > 0) {
        unw_word_t ip, sp;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || unw_get_reg(&c, UNW_REG_SP, &sp) != 0)
            break;
        ips[n] = ip;
        slots[n] = sp - sizeof(uint64_t); /* where the call pushed ip */
        n++;
    }
    return n;
}

__attribute__((noinline)) int trace_stack_capture_slots(uint64_t *ips, uint64_t *slots,
                                                        int max)
{
    uint64_t raw[TRACE_MAX_DEPTH + 9];
    if (max > TRACE_MAX_DEPTH + 8)
        max = TRACE_MAX_DEPTH + 8;
    /* raw[0] is our own frame; the list starts at our caller, raw[1]. */
    int n = trace_stack_capture(raw, max + 1, 0);
    int got = n > 1 ? slots_by_frame_pointers(raw, n, ips, slots,
                                              (const uint64_t *)__builtin_frame_address(0))
                    : 0;
    return got > 0 ? got : slots_by_stepping(ips, slots, max);
}

/* Reads other frames' stack slots on purpose: not an ASan finding. */
__attribute__((no_sanitize_address)) int
trace_stack_unchanged(const uint64_t *ips, const uint64_t *slots, int n)
{
    /* Frame 0 is the capturing function's own call, whose slot this very
     * call has overwritten; it is the same code on every path. */
    for (int i = 1; i < n; i++)
        if (slots[i] && *(const volatile uint64_t *)(uintptr_t)slots[i] != ips[i])
            return 0;
    return 1;
}

/*
 * Symbol names per address, kept for the process: a lookup costs ~85 us
 * (libunwind re-reads /proc/self/maps), and a program that traces many
 * times (or traces a model again) asks for the same addresses.  An address
 * can change meaning only if a shared object is unloaded; the C library
 * counts unloads (dlpi_subs), and the cache is emptied when it moves.
 */
typedef struct sym_entry {
    uint64_t ip;
    char *func; /* malloc'd; NULL when unknown */
    uint64_t offset;
    UT_hash_handle hh;
} sym_entry;

static pthread_mutex_t sym_mu = PTHREAD_MUTEX_INITIALIZER;
static sym_entry *sym_cache;
static unsigned long long sym_subs;

static int read_subs(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *(unsigned long long *)arg = info->dlpi_subs;
    return 1; /* the counters are the same in every entry */
}

static void sym_flush(void)
{
    sym_entry *e, *tmp;
    HASH_ITER(hh, sym_cache, e, tmp) {
        HASH_DEL(sym_cache, e);
        tg_free(e->func);
        tg_free(e);
    }
}

void trace_stack_forget(void)
{
    pthread_mutex_lock(&sym_mu);
    sym_flush();
    pthread_mutex_unlock(&sym_mu);
}

/* Looks ip up; writes name and offset; 0 on success. */
static int lookup(uint64_t ip, char *name, size_t len, uint64_t *off)
{
    unw_context_t uc;
    unw_cursor_t c;
    unw_word_t o = 0;
    if (unw_getcontext(&uc) == 0 && unw_init_local(&c, &uc) == 0 &&
        unw_set_reg(&c, UNW_REG_IP, (unw_word_t)(ip - 1)) == 0 &&
        unw_get_proc_name(&c, name, len, &o) == 0) {
        *off = o + 1;
        return 0;
    }
    Dl_info info;
    if (dladdr((void *)(uintptr_t)(ip - 1), &info) && info.dli_sname) {
        snprintf(name, len, "%s", info.dli_sname);
        *off = ip - (uint64_t)(uintptr_t)info.dli_saddr;
        return 0;
    }
    return -1;
}

/* The cached entry for ip, looked up if new; NULL on out of memory. */
static const sym_entry *sym_get(uint64_t ip)
{
    sym_entry *e;
    HASH_FIND(hh, sym_cache, &ip, sizeof ip, e);
    if (e)
        return e;
    e = tg_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->ip = ip;
    char name[512];
    uint64_t off = 0;
    if (lookup(ip, name, sizeof name, &off) == 0) {
        if (!(e->func = tg_strdup(name))) {
            tg_free(e);
            return NULL;
        }
        e->offset = off;
    }
    tg_hash_oom = 0;
    HASH_ADD(hh, sym_cache, ip, sizeof e->ip, e);
    if (tg_hash_oom) {
        tg_free(e->func);
        tg_free(e);
        return NULL;
    }
    return e;
}

tg_status trace_stack_symbolize(graph *g)
{
    tg_status st = TG_OK;
    unsigned long long subs = 0;
    dl_iterate_phdr(read_subs, &subs);
    pthread_mutex_lock(&sym_mu);
    if (subs != sym_subs) {
        sym_flush();
        sym_subs = subs;
    }
    for (int32_t i = 0; i < g->nframes; i++) {
        graph_frame *f = &g->frames[i];
        const sym_entry *e = sym_get(f->ip);
        f->func = e && e->func ? graph_intern(g, e->func, -1) : NULL;
        if (!e || (e->func && !f->func)) {
            st = graph_fail(g, TG_ERR_NOMEM, "out of memory symbolizing");
            break;
        }
        f->offset = e->offset;
    }
    pthread_mutex_unlock(&sym_mu);
    return st;
}
