/*
 * test_graph_storage.c - a graph's records never move (graph/stable.h,
 * graph_impl.h): pointers to values, nodes, guards and provenance taken
 * early stay equal to the records' addresses, and the records unchanged,
 * across 100k additions of every kind; a growth the allocation hook fails
 * returns TG_ERR_NOMEM and leaves the graph as it was and usable; a graph
 * at its maximum refuses the next record with a message naming the limit;
 * the stable set module alone keeps its arrays in one reservation, their
 * bases fixed and limits honoured, faults past a committed prefix, and a
 * kept set comes back whole as it was (under ASan: poisoned while kept);
 * under ulimit -v a graph's reservation halves and the graph works within
 * it; the public accessors answer what was built.  The reference is a byte copy of each record taken when it was
 * added.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "graph/alloc.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "graph/stable.h"

#define ADDS 100000
#define SAMPLE 997 /* every SAMPLE-th record is held and checked */

typedef struct held_value {
    int32_t id;
    const graph_value *p;
    const graph_type *pub; /* graph_value_type's answer */
    graph_value copy;
} held_value;

typedef struct held_node {
    int32_t id;
    const graph_node *p;
    const int32_t *in; /* graph_node_inputs' answer */
    graph_node copy;
    int32_t in0;
} held_node;

static void test_pointers_stay(void)
{
    graph *g = graph_new("stable");
    graph_type t = {GRAPH_F32, 2, {4, 8}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x");
    CHECK(x == 0 && graph_add_input(g, x) == TG_OK);
    int32_t prov = graph_add_prov(g, "model.c", 1, "f", NULL, 0);
    graph_guard gd = {.value = x, .kind = GRAPH_GUARD_VALUE, .index = 0, .expect = 1,
                      .prov = prov};
    int32_t gi = graph_add_guard(g, &gd);
    CHECK(prov == 0 && gi == 0);
    const graph_prov *prov_p = &g->provs[prov];
    const graph_guard *guard_p = graph_guard_at(g, gi);
    graph_prov prov_copy = *prov_p;
    const graph_value *const values0 = g->values;
    const graph_node *const nodes0 = NULL;
    int32_t cap_values0 = g->cap_values;

    held_value *hv = calloc(ADDS / SAMPLE + 8, sizeof *hv);
    held_node *hn = calloc(ADDS / SAMPLE + 8, sizeof *hn);
    int nhv = 0, nhn = 0;
    hv[nhv++] = (held_value){x, &g->values[x], graph_value_type(g, x), g->values[x]};
    int32_t last = x, ok = 1;
    const graph_node *first_node = NULL;
    for (int k = 0; k < ADDS && ok; k++) {
        int32_t out = -1, node;
        switch (k % 4) {
        case 0: /* inferred */
            node = graph_add_node(g, GRAPH_OP_relu, &last, 1, NULL, &out, 1);
            break;
        case 1: { /* typed, output type given from a value of the graph itself */
            int32_t p = graph_add_prov(g, "model.c", k, "g", NULL, 0);
            node = graph_add_node_typed(g, GRAPH_OP_neg, &last, 1, NULL, &g->values[last].type,
                                        1, &out, 1, p);
            break;
        }
        case 2: { /* a param and an add */
            int32_t w = graph_add_value(g, GRAPH_VALUE_PARAM, &t, NULL);
            int32_t in[2] = {last, w};
            node = w < 0 ? -1 : graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &out, 1);
            break;
        }
        default: { /* a guard and an output along the way */
            gd.value = last;
            ok &= graph_add_guard(g, &gd) >= 0;
            char name[32];
            snprintf(name, sizeof name, "y%d", k);
            ok &= graph_add_output(g, last, name) == TG_OK;
            node = graph_add_node(g, GRAPH_OP_sigmoid, &last, 1, NULL, &out, 1);
        }
        }
        if (node < 0 || out < 0) {
            CHECK_MSG(0, "addition %d failed: %s", k, graph_error(g));
            ok = 0;
            break;
        }
        if (!first_node)
            first_node = &g->nodes[node];
        if (k % SAMPLE == 0) {
            hv[nhv++] = (held_value){out, &g->values[out], graph_value_type(g, out),
                                     g->values[out]};
            hn[nhn++] = (held_node){node, &g->nodes[node], graph_node_inputs(g, node, NULL),
                                    g->nodes[node], g->nodes[node].in[0]};
        }
        last = out;
    }
    (void)nodes0;
    CHECK(ok);
    CHECK_MSG(g->nnodes == ADDS && g->nvalues > ADDS, "%d nodes, %d values", g->nnodes,
              g->nvalues);
    /* not vacuous: the arrays grew many times over from where they began */
    CHECK_MSG(g->cap_values >= 64 * cap_values0, "values committed %d, at first %d",
              g->cap_values, cap_values0);
    CHECK(g->values == values0 && g->nodes == first_node);
    for (int i = 0; i < nhv; i++) {
        const held_value *h = &hv[i];
        CHECK_MSG(h->p == &g->values[h->id] && h->pub == &g->values[h->id].type,
                  "value %d moved", h->id);
        CHECK_MSG(memcmp(h->p, &h->copy, sizeof h->copy) == 0, "value %d changed", h->id);
        CHECK(graph_type_eq(h->pub, &t));
    }
    for (int i = 0; i < nhn; i++) {
        const held_node *h = &hn[i];
        CHECK_MSG(h->p == &g->nodes[h->id], "node %d moved", h->id);
        CHECK_MSG(memcmp(h->p, &h->copy, sizeof h->copy) == 0, "node %d changed", h->id);
        CHECK(h->in == h->p->in && h->in[0] == h->in0);
    }
    CHECK(prov_p == &g->provs[prov] && memcmp(prov_p, &prov_copy, sizeof prov_copy) == 0);
    CHECK(guard_p == &g->guards[gi] && guard_p->value == x && guard_p->expect == 1);
    CHECK_MSG(graph_verify(g, 1) == TG_OK, "%s", graph_error(g));

    /* a clone is stable storage too, and equal */
    graph *c = graph_clone(g);
    CHECK(c && c->nnodes == g->nnodes && c->nvalues == g->nvalues);
    if (c) {
        const graph_node *cn = &c->nodes[7];
        graph_node cn_copy = *cn;
        int32_t in = c->nvalues - 1, out = -1;
        for (int k = 0; k < 5000; k++)
            CHECK(graph_add_node(c, GRAPH_OP_relu, &in, 1, NULL, &out, 1) >= 0 && (in = out) >= 0);
        CHECK(cn == &c->nodes[7] && memcmp(cn, &cn_copy, sizeof cn_copy) == 0);
        CHECK_MSG(graph_verify(c, 1) == TG_OK, "%s", graph_error(c));
        graph_free(c);
    }
    free(hv);
    free(hn);
    graph_free(g);
}

/* The alloc hook fails the growth of the nodes array: TG_ERR_NOMEM, the
 * graph unchanged, and the next addition succeeds. */
static void test_growth_failure(void)
{
    graph *g = graph_new("oom");
    graph_type t = {GRAPH_F32, 1, {16}};
    int32_t last = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), out = -1;
    CHECK(graph_add_input(g, last) == TG_OK);
    /* fill the nodes committed so far */
    while (g->nnodes < g->cap_nodes || g->nnodes == 0) {
        if (graph_add_node(g, GRAPH_OP_relu, &last, 1, NULL, &out, 1) < 0)
            break;
        last = out;
    }
    CHECK(g->nnodes == g->cap_nodes);
    int32_t nn = g->nnodes, nv = g->nvalues, cap = g->cap_nodes;
    const graph_node *n0 = &g->nodes[0];
    tg_alloc_hook(1); /* the first allocation from here: the nodes' growth */
    int32_t id = graph_add_node(g, GRAPH_OP_relu, &last, 1, NULL, &out, 1);
    int fired = tg_alloc_hook_fired();
    tg_alloc_hook(-1);
    CHECK(fired);
    CHECK(id == -1 && graph_error_status(g) == TG_ERR_NOMEM);
    CHECK_MSG(strstr(graph_error(g), "out of memory growing graph 'oom'") &&
                  strstr(graph_error(g), "nodes"),
              "message: %s", graph_error(g));
    CHECK(g->nnodes == nn && g->nvalues == nv && g->cap_nodes == cap && &g->nodes[0] == n0);
    CHECK(graph_verify(g, 0) == TG_OK);
    /* usable: the same addition now succeeds, and a thousand more */
    for (int k = 0; k < 1000; k++) {
        id = graph_add_node(g, GRAPH_OP_relu, &last, 1, NULL, &out, 1);
        if (id < 0)
            break;
        last = out;
    }
    CHECK_MSG(id >= 0, "%s", graph_error(g));
    CHECK(g->nnodes == nn + 1000 && &g->nodes[0] == n0);
    CHECK(graph_add_output(g, last, "y") == TG_OK && graph_verify(g, 0) == TG_OK);

    /* a clone whose first growth fails: NULL, nothing leaked (ASan) */
    tg_alloc_hook(0);
    graph *c = graph_clone(g);
    uint64_t n = tg_alloc_hook_count();
    graph_free(c);
    CHECK(c != NULL && n > 2);
    int nulls = 0;
    for (uint64_t k = 1; k <= n; k++) {
        tg_alloc_hook((int64_t)k);
        c = graph_clone(g);
        tg_alloc_hook(-1);
        nulls += c == NULL;
        graph_free(c);
    }
    CHECK_MSG(nulls == (int)n, "%d of %d failed allocations made graph_clone fail", nulls,
              (int)n);
    graph_free(g);
}

/* A graph at its maximum refuses the next node and the next value. */
static void test_over_maximum(void)
{
    graph *g = graph_new("big");
    graph_type t = {GRAPH_F32, 1, {4}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), out = -1;
    CHECK(graph_add_input(g, x) == TG_OK);
    CHECK(graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &out, 1) >= 0);

    CHECK(graph_reserve(g, GRAPH_MAX_VALUES + 1, 0) == TG_ERR_NOMEM);
    CHECK_MSG(strstr(graph_error(g), "67108865 values: at most 67108864"), "message: %s",
              graph_error(g));
    CHECK(graph_reserve(g, 0, GRAPH_MAX_NODES + 1) == TG_ERR_NOMEM);
    CHECK_MSG(strstr(graph_error(g), "nodes: at most 67108864"), "message: %s", graph_error(g));

    /* Pretend the nodes are full (white box: the count is all an addition
     * checks before it grows); the addition is refused before any write. */
    int32_t nn = g->nnodes, nv = g->nvalues;
    g->nnodes = GRAPH_MAX_NODES;
    int32_t id = graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &out, 1);
    g->nnodes = nn;
    CHECK(id == -1 && graph_error_status(g) == TG_ERR_NOMEM);
    CHECK_MSG(strstr(graph_error(g), "graph 'big' would hold 67108865 nodes: at most 67108864"),
              "message: %s", graph_error(g));
    CHECK(g->nvalues == nv);
    g->nvalues = GRAPH_MAX_VALUES;
    CHECK(graph_add_value(g, GRAPH_VALUE_PARAM, &t, "w") == -1);
    g->nvalues = nv;
    CHECK_MSG(strstr(graph_error(g), "values: at most"), "message: %s", graph_error(g));
    /* still usable */
    CHECK(graph_add_node(g, GRAPH_OP_relu, &out, 1, NULL, &out, 1) >= 0);
    CHECK(graph_add_output(g, out, "y") == TG_OK && graph_verify(g, 0) == TG_OK);
    graph_free(g);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
#include <sanitizer/asan_interface.h>
#endif

#ifndef UNDER_ASAN
/* 1 if reading p kills a child process (SIGSEGV: PROT_NONE), 0 if the
 * read succeeds.  Not under ASan, whose SEGV handler reports instead. */
static int read_faults(const volatile char *p)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none); /* no core file for the expected fault */
        char c = *p;
        (void)c;
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}
#endif

/* The module alone: a set's arrays in one reservation, bases fixed,
 * limits kept, failure leaves it as it was, a released set comes back
 * whole. */
static const tg_stable_spec spec2[2] = {{48, 100000}, {8, 1000}};
static const tg_stable_spec spec2b[2] = {{48, 100000}, {8, 1000}};

static void test_stable_module(void)
{
    tg_stable_set s = {0};
    int32_t cap = 0, cap1 = 0;
    enum { ELEM = 48, MAX = 100000 };
    CHECK(tg_stable_limit(&s, spec2, 0) == MAX && tg_stable_limit(&s, spec2, 1) == 1000);
    CHECK(tg_stable_grow(&s, spec2, 2, 0, 1, &cap) == TG_STABLE_OK && cap >= 1 && s.base);
    char *base = s.a[0].base;
    /* one reservation: both arrays inside it, each with its full room,
     * the second past the first's room and a guard page */
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    CHECK(base == s.base && s.a[1].base >= base + (size_t)MAX * ELEM + ps &&
          s.a[1].base + 1000 * 8 <= s.base + s.reserved && s.a[1].committed == 0);
    CHECK(tg_stable_limit(&s, spec2, 0) == MAX && tg_stable_limit(&s, spec2, 1) == 1000);
    CHECK(tg_stable_grow(&s, spec2, 2, 1, 3, &cap1) == TG_STABLE_OK && cap1 >= 3);
    char *base1 = s.a[1].base;
    memset(base1, 0x5a, (size_t)cap1 * 8);
    memset(base, 0xab, (size_t)cap * ELEM);
    int32_t prev = cap, grows = 0;
    for (int32_t need = 2; need <= MAX; need += 1 + need / 3) {
        CHECK(tg_stable_grow(&s, spec2, 2, 0, need, &cap) == TG_STABLE_OK);
        grows += cap > prev;
        CHECK(cap >= need && s.a[0].base == base);
        memset(base + (size_t)prev * ELEM, 0xab, (size_t)(cap - prev) * ELEM);
        prev = cap;
    }
    CHECK(tg_stable_grow(&s, spec2, 2, 0, MAX, &cap) == TG_STABLE_OK && cap == MAX);
    memset(base + (size_t)prev * ELEM, 0xab, (size_t)(cap - prev) * ELEM);
    CHECK_MSG(grows >= 5, "%d growths", grows);
    CHECK(tg_stable_grow(&s, spec2, 2, 0, MAX + 1, &cap) == TG_STABLE_FULL && cap == MAX);
    CHECK(tg_stable_grow(&s, spec2, 2, 1, 1001, &cap1) == TG_STABLE_FULL);
    CHECK(s.a[0].base == base && (unsigned char)base[(size_t)MAX * ELEM - 1] == 0xab &&
          (unsigned char)base[0] == 0xab && s.a[1].base == base1 &&
          (unsigned char)base1[0] == 0x5a);
#ifndef UNDER_ASAN
    /* past a committed prefix, and past a full array's room (the guard
     * page), a read faults */
    CHECK(read_faults(base1 + s.a[1].committed) == 1);
    CHECK(read_faults(base + s.a[0].reserved) == 1);
#endif
    tg_stable_release(&s);
    CHECK(s.base == NULL && s.a[0].base == NULL && s.a[0].committed == 0);

    /* released small, it is kept whole: the next set of the same spec
     * takes it back dirty, both arrays committed as they were (no system
     * call), and tg_stable_zero clears what it must */
    cap = cap1 = 0;
    CHECK(tg_stable_grow(&s, spec2, 2, 0, 10, &cap) == TG_STABLE_OK && s.a[0].dirty == 0);
    CHECK(tg_stable_grow(&s, spec2, 2, 1, 10, &cap1) == TG_STABLE_OK);
    char *small = s.a[0].base, *small1 = s.a[1].base;
    memset(small, 0xcd, (size_t)cap * ELEM);
    memset(small1, 0xef, (size_t)cap1 * 8);
    tg_stable_release(&s);
#ifdef UNDER_ASAN
    /* kept, its committed bytes are poisoned: a read through a freed
     * graph's pointer is reported */
    CHECK(__asan_address_is_poisoned(small) && __asan_address_is_poisoned(small1 + 8));
#endif
    tg_stable_set other = {0};
    int32_t capo = 0;
    CHECK(tg_stable_grow(&other, spec2b, 2, 0, 10, &capo) == TG_STABLE_OK);
    CHECK_MSG(other.base != small, "a set of another spec does not take it");
    int32_t cap2 = 0, cap21 = 0;
    tg_stable_set s2 = {0};
    CHECK(tg_stable_grow(&s2, spec2, 2, 0, 10, &cap2) == TG_STABLE_OK);
    CHECK_MSG(s2.a[0].base == small && s2.a[0].dirty >= (size_t)cap2 * ELEM &&
                  (unsigned char)s2.a[0].base[ELEM * 10] == 0xcd,
              "the kept set comes back as it was (%p, %p, dirty %zu)", (void *)s2.a[0].base,
              (void *)small, s2.a[0].dirty);
    CHECK(s2.a[1].base == small1 && s2.a[1].committed > 0 && s2.a[1].dirty == s2.a[1].committed);
    CHECK(tg_stable_grow(&s2, spec2, 2, 1, 4, &cap21) == TG_STABLE_OK && cap21 >= 10 &&
          (unsigned char)small1[9 * 8] == 0xef);
#ifdef UNDER_ASAN
    CHECK(!__asan_address_is_poisoned(small) && !__asan_address_is_poisoned(small1 + 8));
#endif
    tg_stable_zero(&s2, 0, ELEM * 10);
    CHECK(s2.a[0].base[0] == 0 && s2.a[0].base[ELEM * 10 - 1] == 0 &&
          (unsigned char)s2.a[0].base[ELEM * 10] == 0xcd);
    tg_stable_release(&s2);
    tg_stable_release(&other);

    /* a hooked failure on the first growth: nothing reserved, cap kept */
    cap = 0;
    tg_alloc_hook(1);
    int rc = tg_stable_grow(&s, spec2, 2, 0, 10, &cap);
    tg_alloc_hook(-1);
    CHECK(rc == TG_STABLE_NOMEM && cap == 0 && s.base == NULL);
    /* a caller's mistake (an array past the set) is refused */
    CHECK(tg_stable_grow(&s, spec2, 2, 2, 10, &cap) == TG_STABLE_NOMEM && s.base == NULL);
    tg_stable_release(&s);
}

/* A freed graph's arrays: unmapped, or kept and (under ASan) poisoned. */
static void test_freed_graph(void)
{
#ifdef UNDER_ASAN
    graph *g = graph_new("freed");
    graph_type t = {GRAPH_F32, 1, {4}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), y = -1;
    CHECK(graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1) >= 0);
    const void *v = &g->values[y], *n = &g->nodes[0];
    graph_free(g);
    CHECK_MSG(__asan_address_is_poisoned(v) && __asan_address_is_poisoned(n),
              "a freed graph's values and nodes read as freed under ASan");
#endif
}

/* The public accessors (graph.h, "Reading a graph") against what was built,
 * and their answers to a NULL graph and ids out of range. */
static void test_accessors(void)
{
    graph *g = graph_new("acc");
    int32_t b = graph_add_symbol(g, "B", 2);
    graph_type tx = {GRAPH_F32, 2, {2, 3}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &tx, "x");
    g->values[x].dyn = 1, g->values[x].sym[0] = (int8_t)b; /* dim 0 follows B */
    graph_type tw = {GRAPH_F32, 1, {3}};
    int32_t w = graph_add_value(g, GRAPH_VALUE_PARAM, &tw, "w");
    static const float wd[3] = {1, 2, 3};
    CHECK(graph_set_data(g, w, wd, sizeof wd) == TG_OK && graph_add_input(g, x) == TG_OK);
    int32_t prov = graph_add_prov(g, "dir/model.c", 42, "forward", NULL, 0);
    int32_t in[2] = {x, w}, sum = -1, y = -1;
    graph_type ty = tx;
    int32_t n0 = graph_add_node_typed(g, GRAPH_OP_add, in, 2, NULL, &ty, 1, &sum, 1, prov);
    graph_leaky_relu_attrs la = {.alpha = 0.25f};
    int32_t n1 = graph_add_node(g, GRAPH_OP_leaky_relu, &sum, 1, &la, &y, 1);
    CHECK(n0 == 0 && n1 == 1 && graph_add_output(g, y, "y") == TG_OK);
    graph_guard gd = {.value = x, .kind = GRAPH_GUARD_VALUE, .index = 1, .expect = 4,
                      .prov = prov};
    CHECK(graph_add_guard(g, &gd) == 0);
    g->nodes[n1].flags |= GRAPH_NODE_SPECIALIZED;

    CHECK(!strcmp(graph_name(g), "acc"));
    CHECK(graph_value_count(g) == 4 && graph_node_count(g) == 2 && graph_input_count(g) == 1 &&
          graph_output_count(g) == 1 && graph_symbol_count(g) == 1 && graph_guard_count(g) == 1);
    CHECK(graph_node_op(g, n0) == GRAPH_OP_add && graph_node_op(g, n1) == GRAPH_OP_leaky_relu);
    CHECK(graph_node_flags(g, n0) == 0 && graph_node_flags(g, n1) == GRAPH_NODE_SPECIALIZED);
    int nin = -1, nout = -1;
    const int32_t *ins = graph_node_inputs(g, n0, &nin), *outs = graph_node_outputs(g, n0, &nout);
    CHECK(nin == 2 && ins[0] == x && ins[1] == w && nout == 1 && outs[0] == sum);
    CHECK(graph_node_attrs(g, n0) == NULL);
    const graph_leaky_relu_attrs *a = graph_node_attrs(g, n1);
    CHECK(a && a->alpha == 0.25f);
    char site[64];
    CHECK(!strcmp(graph_node_site(g, n0, site, sizeof site), "model.c:42 forward"));
    CHECK(!strcmp(graph_node_site(g, n1, site, sizeof site), "unknown site"));
    CHECK(graph_type_eq(graph_value_type(g, w), &tw) && graph_type_eq(graph_value_type(g, y), &tx));
    CHECK(graph_value_kind_of(g, x) == GRAPH_VALUE_INPUT &&
          graph_value_kind_of(g, w) == GRAPH_VALUE_PARAM &&
          graph_value_kind_of(g, y) == GRAPH_VALUE_INTER);
    CHECK(!strcmp(graph_value_name(g, x), "x") && graph_value_name(g, sum) == NULL);
    const float *d = graph_value_data(g, w);
    CHECK(d && d != wd && d[0] == 1 && d[2] == 3 && graph_value_data(g, x) == NULL);
    int slot = -2;
    CHECK(graph_value_producer(g, y, &slot) == n1 && slot == 0);
    CHECK(graph_value_producer(g, w, &slot) == -1 && slot == -1);
    CHECK(graph_value_dim_symbol(g, x, 0) == b && graph_value_dim_symbol(g, x, 1) == -1 &&
          graph_value_dim_symbol(g, x, 2) == -1 && graph_value_dim_symbol(g, x, -1) == -1);
    const char *oname = NULL;
    int64_t traced = 0;
    CHECK(graph_input_at(g, 0) == x && graph_output_at(g, 0, &oname) == y && !strcmp(oname, "y"));
    CHECK(!strcmp(graph_symbol_at(g, b, &traced), "B") && traced == 2);
    const graph_guard *gp = graph_guard_at(g, 0);
    CHECK(gp && gp->value == x && gp->index == 1 && gp->expect == 4);

    /* out of range and NULL: 0, -1, NULL; no error recorded */
    graph_fail(g, TG_OK, "%s", "");
    CHECK(graph_node_op(g, 2) == -1 && graph_node_op(g, -1) == -1 && graph_node_flags(g, 9) == 0);
    nin = 5;
    CHECK(graph_node_inputs(g, 2, &nin) == NULL && nin == 0);
    CHECK(graph_node_outputs(g, -3, NULL) == NULL && graph_node_attrs(g, 7) == NULL);
    CHECK(!strcmp(graph_node_site(g, 5, site, sizeof site), "unknown site"));
    CHECK(graph_value_type(g, 4) == NULL && graph_value_kind_of(g, -1) == -1 &&
          graph_value_name(g, 99) == NULL && graph_value_data(g, 4) == NULL);
    CHECK(graph_value_producer(g, 4, NULL) == -1 && graph_value_dim_symbol(g, 4, 0) == -1);
    CHECK(graph_input_at(g, 1) == -1 && graph_output_at(g, 1, &oname) == -1 && oname == NULL);
    CHECK(graph_symbol_at(g, 1, &traced) == NULL && traced == -1 && graph_guard_at(g, 1) == NULL);
    CHECK(graph_error(g)[0] == '\0');
    CHECK(graph_name(NULL) == NULL && graph_value_count(NULL) == 0 && graph_node_count(NULL) == 0 &&
          graph_input_count(NULL) == 0 && graph_output_count(NULL) == 0 &&
          graph_symbol_count(NULL) == 0 && graph_guard_count(NULL) == 0);
    CHECK(graph_node_op(NULL, 0) == -1 && graph_value_type(NULL, 0) == NULL &&
          graph_input_at(NULL, 0) == -1 && graph_guard_at(NULL, 0) == NULL);
    graph_free(g);
}

/*
 * With the address space limited (ulimit -v) below a full reservation,
 * the values' reservation halves until it fits: the graph works, holds at
 * most what it got, and says so past it.  In a child process (the limit
 * stays there); not under ASan, whose shadow memory needs the address
 * space.  The child's exit code is the number of failed checks.
 */
static void test_short_address_space(void)
{
#ifdef UNDER_ASAN
    printf("short address space: skipped under ASan\n");
#else
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1)
            _exit(100);
        fclose(f);
        size_t vm = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
        struct rlimit rl = {vm + ((size_t)512 << 20), vm + ((size_t)512 << 20)};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(101);
        int bad = 0;
        /* Reservations kept for reuse (inherited from the tests before)
         * need no address space: hold graphs until one must map anew. */
        graph *held[80], *g = NULL;
        int nheld = 0;
        graph_type t = {GRAPH_F32, 1, {4}};
        int32_t x = -1, y = -1, lim = GRAPH_MAX_VALUES;
        while (nheld < 80) {
            g = graph_new("short");
            x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x");
            lim = graph_array_limit(g, GRAPH_ARRAY_VALUES);
            if (x != 0 || lim < GRAPH_MAX_VALUES)
                break;
            held[nheld++] = g;
        }
        bad += x != 0 || graph_add_input(g, x) != TG_OK;
        bad += !(lim > 1000 && lim < GRAPH_MAX_VALUES); /* halved, not failed */
        for (int k = 0; k < 1000 && x >= 0; k++)
            bad += graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1) < 0 || (x = y) < 0;
        bad += graph_reserve(g, lim, 0) != TG_OK;
        bad += graph_reserve(g, lim + 1, 0) != TG_ERR_NOMEM;
        bad += strstr(graph_error(g), "all the address space that could be reserved") == NULL;
        bad += graph_add_output(g, x, "y") != TG_OK || graph_verify(g, 0) != TG_OK;
        if (bad)
            fprintf(stderr, "short address space: limit %d, %s\n", (int)lim, graph_error(g));
        graph_free(g);
        while (nheld > 0)
            graph_free(held[--nheld]);
        _exit(bad);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "under ulimit -v the graph works within a halved reservation (child: %d)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
#endif
}

/* "x" -> "<x>" for names starting with 'f'; others kept. */
static int bracket_f(void *ctx, const char *s, char *buf, size_t len)
{
    ++*(int *)ctx;
    if (s[0] != 'f')
        return 0;
    snprintf(buf, len, "<%s>", s);
    return 1;
}

/* graph_map_strings: each string through the function, replacements
 * interned; the layout target read back; NULL arguments refused. */
static void test_map_strings(void)
{
    graph *g = graph_new("g");
    graph_type t = {GRAPH_F32, 1, {2}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "fx");
    int32_t w = graph_add_value(g, GRAPH_VALUE_PARAM, &t, "w");
    float d[2] = {1, 2};
    int32_t y = -1;
    CHECK(graph_set_data(g, w, d, sizeof d) == TG_OK && graph_add_input(g, x) == TG_OK);
    int32_t in[2] = {x, w};
    CHECK(graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &y, 1) >= 0);
    CHECK(graph_add_output(g, y, "fy") == TG_OK);
    int calls = 0;
    CHECK(graph_map_strings(g, bracket_f, &calls) == TG_OK);
    const char *oname = NULL;
    graph_output_at(g, 0, &oname);
    CHECK_MSG(!strcmp(graph_value_name(g, x), "<fx>") && !strcmp(graph_value_name(g, w), "w") &&
                  oname && !strcmp(oname, "<fy>") && !strcmp(graph_name(g), "g"),
              "%s %s %s", graph_value_name(g, x), graph_value_name(g, w), oname);
    CHECK_MSG(calls >= 4, "%d calls", calls); /* g, fx, w, fy at least */
    CHECK(graph_verify(g, 0) == TG_OK);
    CHECK(graph_layout_target(g) == NULL && graph_layout_target(NULL) == NULL);
    CHECK(graph_map_strings(NULL, bracket_f, &calls) == TG_ERR_NULL);
    CHECK(graph_map_strings(g, NULL, NULL) == TG_ERR_NULL &&
          strstr(graph_error(g), "graph_map_strings: no function"));
    graph_free(g);
}

int main(void)
{
    test_accessors();
    test_map_strings();
    test_stable_module();
    test_freed_graph();
    test_pointers_stay();
    test_growth_failure();
    test_over_maximum();
    test_short_address_space();
    return check_done();
}
