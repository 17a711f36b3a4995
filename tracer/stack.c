/*
 * stack.c - call stacks for provenance.
 *
 * Capture is unw_backtrace(): raw return addresses, no symbol lookup, a few
 * dozen ns per frame.  The tracer avoids even that for repeated calls: it
 * keeps, per (call site, frame address), the stack and the stack slots
 * that hold its return addresses (trace_stack_capture_slots), and reuses
 * it when every slot still holds the same address (trace_stack_unchanged:
 * a few loads instead of a walk).  Symbolization runs once per distinct address at
 * freeze: libunwind resolves a name from the ELF symbol table when a local
 * cursor's IP is set to the address (libunwind 1.6 has no lookup by bare
 * address); dladdr() is the fallback for objects libunwind cannot read.
 * A return address points after the call, so the lookup uses ip - 1.
 */
#define UNW_LOCAL_ONLY
#include "stack.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/tg_hash.h"

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

/*
 * The slots come from libunwind's stepping API: after a step, the caller's
 * SP is the callee's CFA, and the call pushed the return address just below
 * it.  Exact, and slow (~1 us a frame), which is why the tracer only does
 * this on a miss of its (site, frame address) cache.  Scanning the stack
 * for the addresses would be faster but finds stale copies (seen here:
 * libc's start-up frames), so it could reuse a wrong stack silently.
 */
int trace_stack_capture_slots(uint64_t *ips, uint64_t *slots, int max)
{
    unw_context_t uc;
    unw_cursor_t c;
    if (max > TRACE_MAX_DEPTH + 8)
        max = TRACE_MAX_DEPTH + 8;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
        return 0;
    int n = 0;
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

/* Reads other frames' stack slots on purpose: not an ASan finding. */
__attribute__((no_sanitize_address)) int
trace_stack_unchanged(const uint64_t *ips, const uint64_t *slots, int n)
{
    /* Frame 0 is the capturing function's own call, whose slot this very
     * call has overwritten; it is the same code on every path. */
    for (int i = 1; i < n; i++)
        if (*(const volatile uint64_t *)(uintptr_t)slots[i] != ips[i])
            return 0;
    return 1;
}

typedef struct sym_entry {
    uint64_t ip;
    const char *func; /* interned in the graph */
    uint64_t offset;
    UT_hash_handle hh;
} sym_entry;

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

tg_status trace_stack_symbolize(graph *g)
{
    sym_entry *cache = NULL, *e, *tmp;
    tg_status st = TG_OK;
    for (int32_t i = 0; i < g->nframes && st == TG_OK; i++) {
        graph_frame *f = &g->frames[i];
        HASH_FIND(hh, cache, &f->ip, sizeof f->ip, e);
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e) {
                st = graph_fail(g, TG_ERR_NOMEM, "out of memory symbolizing");
                break;
            }
            e->ip = f->ip;
            char name[512];
            uint64_t off = 0;
            if (lookup(f->ip, name, sizeof name, &off) == 0) {
                e->func = graph_intern(g, name, -1);
                e->offset = off;
            }
            tg_hash_oom = 0;
            HASH_ADD(hh, cache, ip, sizeof e->ip, e);
            if (tg_hash_oom) {
                free(e);
                st = graph_fail(g, TG_ERR_NOMEM, "out of memory symbolizing");
                break;
            }
        }
        f->func = e->func;
        f->offset = e->offset;
    }
    HASH_ITER(hh, cache, e, tmp) {
        HASH_DEL(cache, e);
        free(e);
    }
    return st;
}
