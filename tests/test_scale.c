/*
 * test_scale.c - what keeps big graphs linear (issue 16): the memory
 * planner's placement against a naive O(n^2) reference (the planner as it
 * was) on random lifetimes, with independent checks of every plan (no two
 * buffers alive together overlap; the arena holds the live-set lower
 * bound), a bound on the placement's work for 20k buffers alive at once;
 * provenance merged by CSE (deduplicated, in order, arena linear) and a
 * text IR node citing 20k provenance entries.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "graph/text.h"
#include "optimize/memplan.h"
#include "optimize/opt.h"

static uint64_t rs = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static size_t up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* The reference: every placed buffer is scanned, those alive with b are
 * sorted by offset and the gaps between them walked (0 bytes: offset 0). */
static size_t ref_place(const opt_memplan_buf *b, int32_t n, size_t align, int64_t *off)
{
    int32_t *ord = malloc(sizeof *ord * (size_t)n), *live = malloc(sizeof *live * (size_t)n);
    for (int32_t i = 0; i < n; i++)
        ord[i] = i;
    for (int32_t i = 1; i < n; i++) /* insertion sort: size down, index up */
        for (int32_t j = i; j > 0 && (b[ord[j - 1]].size < b[ord[j]].size ||
                                     (b[ord[j - 1]].size == b[ord[j]].size && ord[j - 1] > ord[j]));
             j--) {
            int32_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    size_t total = 0;
    for (int32_t k = 0; k < n; k++) {
        const opt_memplan_buf *x = &b[ord[k]];
        if (!x->size) {
            off[ord[k]] = 0;
            continue;
        }
        int32_t nl = 0;
        for (int32_t j = 0; j < k; j++) {
            const opt_memplan_buf *o = &b[ord[j]];
            if (o->size && o->first <= x->last && x->first <= o->last)
                live[nl++] = ord[j];
        }
        for (int32_t i = 1; i < nl; i++)
            for (int32_t j = i; j > 0 && off[live[j - 1]] > off[live[j]]; j--) {
                int32_t t = live[j];
                live[j] = live[j - 1];
                live[j - 1] = t;
            }
        int64_t best = -1, prev = 0;
        size_t best_gap = (size_t)-1;
        for (int32_t j = 0; j < nl; j++) {
            int64_t o = off[live[j]];
            if (o >= prev && (size_t)(o - prev) >= x->size && (size_t)(o - prev) < best_gap) {
                best_gap = (size_t)(o - prev);
                best = prev;
            }
            int64_t e = o + (int64_t)up(b[live[j]].size, align);
            if (e > prev)
                prev = e;
        }
        off[ord[k]] = best >= 0 ? best : prev;
        if ((size_t)off[ord[k]] + up(x->size, align) > total)
            total = (size_t)off[ord[k]] + up(x->size, align);
    }
    free(ord);
    free(live);
    return total;
}

/* Independent checks of a placement: alignment, no overlap between
 * buffers alive at one step, the arena holds every buffer and at least the
 * largest set of bytes alive at one step. */
static void check_plan(const opt_memplan_buf *b, int32_t n, size_t align, const int64_t *off,
                       size_t total, const char *what)
{
    int bad = 0;
    int32_t steps = 0;
    for (int32_t i = 0; i < n && !bad; i++) {
        bad |= off[i] < 0 || (size_t)off[i] % align || (size_t)off[i] + up(b[i].size, align) > total;
        steps = b[i].last + 1 > steps ? b[i].last + 1 : steps;
        for (int32_t j = 0; j < i && !bad; j++)
            bad |= b[i].first <= b[j].last && b[j].first <= b[i].last && b[i].size && b[j].size &&
                   off[i] < off[j] + (int64_t)up(b[j].size, align) &&
                   off[j] < off[i] + (int64_t)up(b[i].size, align);
    }
    CHECK_MSG(!bad, "%s: buffers alive together overlap, or one is outside the arena", what);
    size_t lower = 0;
    for (int32_t s = 0; s < steps; s++) {
        size_t sum = 0;
        for (int32_t i = 0; i < n; i++)
            if (b[i].first <= s && s <= b[i].last)
                sum += up(b[i].size, align);
        lower = sum > lower ? sum : lower;
    }
    CHECK_MSG(total >= lower, "%s: arena %zu below the live-set bound %zu", what, total, lower);
}

static void test_random_against_reference(void)
{
    static const size_t sizes[] = {0, 1, 64, 100, 128, 200, 640, 1000, 4096};
    int same = 1;
    for (int trial = 0; trial < 400 && same; trial++) {
        int32_t n = 1 + (int32_t)(rnd() % 120), steps = 1 + (int32_t)(rnd() % 40);
        size_t align = trial % 3 == 2 ? 128 : 64;
        opt_memplan_buf *b = malloc(sizeof *b * (size_t)n);
        int64_t *got = malloc(sizeof *got * (size_t)n), *want = malloc(sizeof *want * (size_t)n);
        for (int32_t i = 0; i < n; i++) {
            b[i].size = rnd() % 4 ? sizes[rnd() % 9] : (size_t)(rnd() % 5000);
            b[i].first = (int32_t)(rnd() % (uint64_t)steps);
            int32_t len = rnd() % 5 ? (int32_t)(rnd() % 4) : (int32_t)(rnd() % (uint64_t)steps);
            b[i].last = b[i].first + len;
        }
        uint64_t work = 0;
        size_t t1 = opt_memplan_place(b, n, align, got, &work);
        size_t t2 = ref_place(b, n, align, want);
        char what[64];
        snprintf(what, sizeof what, "trial %d (%d buffers)", trial, n);
        same = t1 == t2 && !memcmp(got, want, sizeof *got * (size_t)n);
        CHECK_MSG(same, "%s: arena %zu, the reference %zu (or other offsets)", what, t1, t2);
        check_plan(b, n, align, got, t1, what);
        free(b);
        free(got);
        free(want);
    }
}

/* 20k buffers alive together at the end (n outputs; a wide layer read at
 * the end), equal or random sizes, and a chain: placement examines O(n)
 * offset ranges, where the scan examined n^2/2 = 2e8. */
static void test_wide_work(void)
{
    enum { N = 20000 };
    opt_memplan_buf *b = malloc(sizeof *b * N);
    int64_t *off = malloc(sizeof *off * N);
    for (int shape = 0; shape < 3; shape++) {
        for (int32_t i = 0; i < N; i++) {
            b[i].size = shape == 1 ? 64 + rnd() % 100000 : 64;
            b[i].first = i;
            b[i].last = shape == 2 ? i + 1 : N;
        }
        uint64_t work = 0;
        size_t total = opt_memplan_place(b, N, 64, off, &work);
        CHECK_MSG(work <= 64ull * N, "shape %d: placement examined %llu ranges for %d buffers",
                  shape, (unsigned long long)work, N);
        size_t want = 0;
        for (int32_t i = 0; i < N; i++)
            want += up(b[i].size, 64);
        if (shape < 2) /* all alive at the last step: the arena is their sum */
            CHECK_MSG(total == want, "shape %d: arena %zu, want %zu", shape, total, want);
        else
            CHECK_MSG(total == 128, "chain: arena %zu, want 128", total);
        int ok = 1;
        for (int32_t i = 1; i < N && shape < 2; i++) /* alive together: disjoint */
            ok &= off[i] != off[i - 1];
        CHECK(ok);
    }
    free(b);
    free(off);
}

/* The same through opt_memplan_build: x -> N adds, every one an output. */
static void test_wide_graph(void)
{
    enum { N = 20000 };
    graph *g = graph_new("wide");
    graph_type t = {GRAPH_F32, 1, {16}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x");
    graph_add_input(g, x);
    for (int i = 0; i < N; i++) {
        int32_t in[2] = {x, x}, y;
        graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &y, 1);
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        graph_add_output(g, y, name);
    }
    opt_memplan mp;
    CHECK(opt_memplan_build(g, NULL, 1, &mp) == TG_OK);
    CHECK_MSG(mp.arena_bytes == (size_t)N * 64 && mp.lower_bound == mp.arena_bytes,
              "arena %zu, lower bound %zu", mp.arena_bytes, mp.lower_bound);
    CHECK_MSG(mp.place_work <= 64ull * N, "placement examined %llu ranges",
              (unsigned long long)mp.place_work);
    opt_memplan_free(&mp);
    /* the public summary of the same plan: N outputs of 64 bytes, all
     * alive at the end, none in place (x is an input, not reused) */
    opt_memory m;
    char err[256] = "";
    CHECK_MSG(opt_memory_plan(g, &m, err, sizeof err) == TG_OK, "%s", err);
    CHECK_MSG(m.naive_bytes == (size_t)N * 64 && m.arena_bytes == (size_t)N * 64 &&
              m.lower_bound == m.arena_bytes && m.inplace == 0,
              "naive %zu, arena %zu, bound %zu, in place %d", m.naive_bytes, m.arena_bytes,
              m.lower_bound, m.inplace);
    CHECK(opt_memory_plan(NULL, &m, err, sizeof err) == TG_ERR_NULL);
    CHECK_MSG(!strcmp(err, "opt_memory_plan: the graph is NULL"), "%s", err);
    graph_free(g);
}

/* N identical sigmoids of x, each from its own call site (the i-th cites
 * provenance i % distinct), summed in a chain: CSE keeps one sigmoid with
 * the distinct provenance ids in first-seen order; the arena grows O(N). */
static void cse_case(int n, int distinct)
{
    graph *g = graph_new("cse");
    graph_type t = {GRAPH_F32, 1, {16}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), acc = x;
    graph_add_input(g, x);
    for (int i = 0; i < distinct; i++)
        graph_add_prov(g, "model.c", 1000 + i, "f", NULL, 0);
    for (int i = 0; i < n; i++) {
        int32_t s, in[2];
        int32_t id = graph_add_node(g, GRAPH_OP_sigmoid, &x, 1, NULL, &s, 1);
        graph_node_add_prov(g, id, (int32_t)((uint64_t)i * 7 % (uint64_t)distinct));
        in[0] = acc;
        in[1] = s;
        graph_add_node(g, GRAPH_OP_add, in, 2, NULL, &acc, 1);
    }
    graph_add_output(g, acc, "y");
    size_t arena0 = graph_arena_bytes(g);
    opt_options o = opt_default_options();
    o.level = 1;
    opt_report rep;
    char err[512] = "";
    CHECK_MSG(opt_optimize(g, &o, &rep, err, sizeof err) == TG_OK, "%s", err);
    int found = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *nd = &g->nodes[i];
        if (nd->op != GRAPH_OP_sigmoid)
            continue;
        found++;
        /* First-seen order of i*7 % distinct: a naive stable unique. */
        int32_t *want = malloc(sizeof *want * (size_t)distinct), nw = 0;
        for (int k = 0; k < n; k++) {
            int32_t p = (int32_t)((uint64_t)k * 7 % (uint64_t)distinct), have = 0;
            for (int32_t j = 0; j < nw && !have; j++)
                have = want[j] == p;
            if (!have)
                want[nw++] = p;
        }
        CHECK_MSG(nd->nprov == nw && !memcmp(nd->prov, want, sizeof *want * (size_t)nw),
                  "n %d, distinct %d: the merged node cites %d provenance ids, want %d", n,
                  distinct, nd->nprov, nw);
        free(want);
    }
    CHECK_MSG(found == 1, "%d sigmoids left", found);
    size_t grew = graph_arena_bytes(g) - arena0;
    CHECK_MSG(grew <= (size_t)n * 64 + (1u << 20), "n %d: the arena grew by %zu bytes", n,
              grew);
    graph_free(g);
}

static void test_cse_provenance(void)
{
    cse_case(20000, 20000); /* the old append: 20000^2 / 2 ids = 800 MB */
    cse_case(5000, 7);      /* short list: scanned */
    cse_case(5000, 100);    /* long list with repeats: dropped at compact */
    cse_case(3, 3);
}

/* graph_node_dedup_prov against a naive stable unique. */
static void test_dedup(void)
{
    graph *g = graph_new("d");
    graph_type t = {GRAPH_F32, 1, {4}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), y;
    graph_add_input(g, x);
    for (int i = 0; i < 300; i++)
        graph_add_prov(g, "m.c", i, "f", NULL, 0);
    int ok = 1;
    for (int trial = 0; trial < 200; trial++) {
        int32_t node = graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1);
        int32_t len = (int32_t)(rnd() % 60), range = 1 + (int32_t)(rnd() % 300), want[60], nw = 0;
        for (int32_t k = 0; k < len; k++) {
            int32_t p = (int32_t)(rnd() % (uint64_t)range), have = 0;
            graph_node_add_prov(g, node, p);
            for (int32_t j = 0; j < nw && !have; j++)
                have = want[j] == p;
            if (!have)
                want[nw++] = p;
        }
        CHECK(graph_node_dedup_prov(g, node) == TG_OK);
        const graph_node *nd = &g->nodes[node];
        ok &= nd->nprov == nw && !memcmp(nd->prov, want, sizeof *want * (size_t)nw);
    }
    CHECK_MSG(ok, "graph_node_dedup_prov differs from a stable unique");
    graph_free(g);
}

/* A text IR node citing N provenance entries parses in O(N) arena. */
static void test_text_many_refs(void)
{
    enum { N = 20000 };
    graph *g = graph_new("refs");
    graph_type t = {GRAPH_F32, 1, {4}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), y;
    graph_add_input(g, x);
    int32_t node = graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &y, 1);
    for (int i = 0; i < N; i++)
        graph_node_add_prov(g, node, graph_add_prov(g, "m.c", i + 1, "f", NULL, 0));
    graph_add_output(g, y, "y");
    CHECK_MSG(graph_arena_bytes(g) <= (size_t)N * 16 + (1u << 20), "building: arena %zu",
              graph_arena_bytes(g));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(graph_print(g, f, NULL) == TG_OK);
    fclose(f);
    char err[512] = "";
    graph *h = graph_parse(text, len, err, sizeof err);
    CHECK_MSG(h, "%s", err);
    if (h) {
        CHECK_MSG(h->nnodes == 1 && h->nodes[0].nprov == N, "parsed %d provenance ids",
                  h->nnodes ? h->nodes[0].nprov : -1);
        int ok = 1;
        for (int i = 0; i < N && ok && h->nnodes; i++) {
            char a[300], b[300];
            ok = !strcmp(graph_prov_str(h, h->nodes[0].prov[i], a, sizeof a),
                         graph_prov_str(g, g->nodes[0].prov[i], b, sizeof b));
        }
        CHECK_MSG(ok, "the parsed provenance differs");
        CHECK_MSG(graph_arena_bytes(h) <= (size_t)N * 16 + (1u << 20), "parsing: arena %zu",
                  graph_arena_bytes(h));
    }
    graph_free(h);
    free(text);
    graph_free(g);
}

/* Offsets that would pass int64 (many huge buffers alive at once, as a
 * hostile file could ask for) fail the placement instead of wrapping. */
/*
 * The buffers of the CNN training step at -O2 (bench/train.c, batch 64:
 * sizes in bytes, first and last step): greedy by size with ties by index
 * leaves 0.9 MB above the lower bound; opt_memplan_place_best reaches it
 * (equal sizes latest-born first), its buffers alive together disjoint.
 */
static void test_place_best(void)
{
    static const opt_memplan_buf b[] = {
        {6422528, 0, 31}, {6422528, 1, 31}, {128, 1, 31}, {128, 1, 31}, {1605632, 1, 30},
        {3211264, 2, 27}, {3211264, 3, 27}, {256, 3, 27}, {256, 3, 27}, {802816, 3, 26},
        {802816, 5, 22}, {16, 6, 43}, {32768, 7, 20}, {2560, 8, 9}, {2560, 9, 19},
        {512, 10, 14}, {256, 11, 12}, {4, 12, 43}, {2560, 14, 16}, {256, 15, 16},
        {32768, 17, 23}, {5120, 18, 41}, {40, 19, 42}, {802816, 21, 24}, {1605632, 22, 39},
        {512, 23, 40}, {802816, 24, 27}, {3211264, 27, 29}, {256, 27, 37}, {256, 27, 38},
        {1605632, 28, 31}, {73728, 29, 36}, {6422528, 31, 32}, {128, 31, 34}, {128, 31, 35},
        {1152, 32, 33}};
    enum { NB = sizeof b / sizeof b[0] };
    /* the lower bound, counted here: the most aligned bytes alive at one step */
    size_t lb = 0;
    for (int32_t step = 0; step < 44; step++) {
        size_t at = 0;
        for (int i = 0; i < NB; i++)
            if (b[i].first <= step && step <= b[i].last)
                at += (b[i].size + 63) / 64 * 64;
        lb = at > lb ? at : lb;
    }
    int64_t off[NB];
    size_t first = opt_memplan_place(b, NB, 64, off, NULL);
    size_t best = opt_memplan_place_best(b, NB, 64, lb, off, NULL);
    CHECK_MSG(first > lb && best == lb, "lower bound %zu: by size %zu, best %zu", lb, first,
              best);
    int ok = 1;
    for (int i = 0; i < NB; i++) {
        ok &= off[i] >= 0 && (size_t)off[i] + b[i].size <= best;
        for (int j = i + 1; j < NB; j++)
            if (b[i].first <= b[j].last && b[j].first <= b[i].last && b[i].size && b[j].size)
                ok &= (size_t)off[i] + b[i].size <= (size_t)off[j] ||
                      (size_t)off[j] + b[j].size <= (size_t)off[i];
    }
    CHECK_MSG(ok, "buffers alive together overlap, or one lies past the arena");
}

static void test_huge_offsets(void)
{
    opt_memplan_buf b[5];
    int64_t off[5];
    for (int i = 0; i < 5; i++)
        b[i] = (opt_memplan_buf){(size_t)1 << 61, 0, 1};
    CHECK(opt_memplan_place(b, 2, 64, off, NULL) == (size_t)1 << 62);
    CHECK(off[0] >= 0 && off[1] >= 0 && off[0] != off[1]);
    CHECK(opt_memplan_place(b, 3, 64, off, NULL) == (size_t)-1);
    CHECK(opt_memplan_place(b, 5, 64, off, NULL) == (size_t)-1);
    /* the same buffers one after another reuse one place */
    for (int i = 0; i < 5; i++)
        b[i].first = b[i].last = i;
    CHECK(opt_memplan_place(b, 5, 64, off, NULL) == (size_t)1 << 61);
}

int main(void)
{
    test_place_best();
    test_huge_offsets();
    test_random_against_reference();
    test_wide_work();
    test_wide_graph();
    test_cse_provenance();
    test_dedup();
    test_text_many_refs();
    return check_done();
}
