/*
 * stack.c - call stacks for provenance.
 *
 * Capture is unw_backtrace(): raw return addresses, no symbol lookup, a few
 * dozen ns per frame.  Symbolization runs once per distinct address at
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
