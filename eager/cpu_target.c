/*
 * cpu_target.c - the CPU as a target (cpu_target.h, graph/target.h).
 *
 * The block of the blocked layout is asked, not assumed: a 3x3 conv of 64
 * channels on 28x28 is described to oneDNN with every layout left to it
 * (dnnl_format_tag_any), and the source layout of its most preferred
 * blocked implementation names the block: nChw16c on AVX-512, nChw8c on
 * AVX2 and SSE4.1.  None blocked (oneDNN has no blocked direct kernel at
 * this ISA) gives block 0, and -O3 keeps convs plain.  Asked once per
 * process: the answer depends on the CPU and ONEDNN_MAX_CPU_ISA only.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cost_rates.h"
#include "cpu_target.h"
#include "dnnl_util.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_block;
static char g_isa[24];
static char g_why[160];

/* oneDNN's ISA, by what matters to f32 kernels. */
static const char *isa_class(dnnl_cpu_isa_t isa)
{
    unsigned u = (unsigned)isa;
    if ((u & (unsigned)dnnl_cpu_isa_avx512_core) == (unsigned)dnnl_cpu_isa_avx512_core)
        return "avx512_core";
    if ((u & (unsigned)dnnl_cpu_isa_avx512_mic) == (unsigned)dnnl_cpu_isa_avx512_mic)
        return "avx512_mic";
    if ((u & (unsigned)dnnl_cpu_isa_avx2) == (unsigned)dnnl_cpu_isa_avx2)
        return "avx2";
    if ((u & (unsigned)dnnl_cpu_isa_avx) == (unsigned)dnnl_cpu_isa_avx)
        return "avx";
    if ((u & (unsigned)dnnl_cpu_isa_sse41) == (unsigned)dnnl_cpu_isa_sse41)
        return "sse41";
    return "x86-64";
}

/*
 * The blocked layout oneDNN's implementations of a 3x3 64 -> 64 conv on
 * 28x28 want, given any layout: its implementations in its order of
 * preference, the first whose source is nChw16c or nChw8c (on AVX-512 the
 * first of all, brgconv, takes nhwc: a channels-last layout this library
 * does not plan).  16, 8, or 0 when none is blocked.
 */
static int ask_block(char *why, size_t len)
{
    dnnl_engine_t eng;
    dnnl_memory_desc_t src, wei, dst, want;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_dims_t xd = {1, 64, 28, 28}, wd = {64, 64, 3, 3}, st = {1, 1}, pad = {1, 1};
    dnnl_status_t s = eager_dnnl_engine(&eng);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&src, 4, xd, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&dst, 4, xd, dnnl_f32, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                               dnnl_convolution_direct, &src, &wei, NULL, &dst,
                                               st, pad, pad);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_iterator_create(&it, &cd, NULL, eng, NULL);
    if (s != dnnl_success) {
        snprintf(why, len, "oneDNN has no direct 3x3 conv here (%s)", eager_dnnl_status_str(s));
        return 0;
    }
    static const struct {
        dnnl_format_tag_t tag;
        int block;
        const char *name;
    } tags[] = {{dnnl_nChw16c, 16, "nChw16c"}, {dnnl_nChw8c, 8, "nChw8c"}};
    char first[48] = "";
    int block = 0;
    for (int n = 0; n < 32 && !block; n++) {
        if (n > 0 && dnnl_primitive_desc_iterator_next(it) != dnnl_success)
            break;
        dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
        if (!pd)
            break;
        const dnnl_memory_desc_t *got = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        if (n == 0)
            snprintf(first, sizeof first, "%s", impl ? impl : "?");
        for (size_t k = 0; got && k < sizeof tags / sizeof *tags && !block; k++)
            if (dnnl_memory_desc_init_by_tag(&want, 4, xd, dnnl_f32, tags[k].tag) ==
                    dnnl_success &&
                dnnl_memory_desc_equal(got, &want)) {
                block = tags[k].block;
                if (n == 0)
                    snprintf(why, len, "oneDNN's first choice for a 3x3 conv: %s (%s)",
                             tags[k].name, impl ? impl : "?");
                else
                    snprintf(why, len,
                             "oneDNN's first blocked choice for a 3x3 conv: %s (%s; before "
                             "it, %s is not blocked)",
                             tags[k].name, impl ? impl : "?", first);
            }
        dnnl_primitive_desc_destroy(pd);
    }
    dnnl_primitive_desc_iterator_destroy(it);
    if (!block)
        snprintf(why, len, "none of oneDNN's 3x3 conv implementations is blocked (first: %s)",
                 first[0] ? first : "none");
    return block;
}

static void probe(void)
{
    snprintf(g_isa, sizeof g_isa, "%s", isa_class(dnnl_get_effective_cpu_isa()));
    g_block = ask_block(g_why, sizeof g_why);
}

void eager_cpu_target_name(char *name, size_t len)
{
    snprintf(name, len, "cpu %s", isa_class(dnnl_get_effective_cpu_isa()));
}

static tg_status cpu_impl_of(const graph_target *t, graph_op op, const void *attrs,
                             const graph_type *in, int nin, const graph_type *out,
                             uint32_t fixed_in, char *impl, size_t len, char *err, size_t errlen)
{
    return eager_dnnl_impl_of(op, attrs, in, nin, out, fixed_in, t ? t->threads : 1, impl, len,
                              err, errlen);
}

static tg_status cpu_rates(const graph_target *t, graph_cost_rates *r, char *err, size_t errlen)
{
    return eager_cpu_cost_rates(t->threads, t->block, r, err, errlen);
}

void eager_cpu_target(int threads, graph_target *t)
{
    pthread_once(&g_once, probe);
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "cpu %s", g_isa);
    t->block = g_block;
    t->threads = threads < 1 ? 1 : threads;
    snprintf(t->why, sizeof t->why, "%s", g_why);
    t->impl_of = cpu_impl_of;
    t->impl_is_ref = eager_dnnl_impl_is_ref;
    t->rates = cpu_rates;
}
