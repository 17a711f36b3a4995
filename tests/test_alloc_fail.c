/*
 * test_alloc_fail.c - out of memory, one allocation at a time (issue 16
 * family 9).  Every allocation of the library goes through graph/alloc.h,
 * whose test hook fails the n-th one.  The scenario
 *   trace (a param, a dynamic batch, a guard, call stacks) -> opt -O2 ->
 *   format_save_mem -> format_load_mem -> replay_compile -> replay_run
 * runs once cleanly (the reference: outputs, nodes, provenance with call
 * stacks, the number N of allocations), then once per n = 1..N with the
 * n-th allocation failing.  Each run must either succeed completely
 * (outputs bit-equal, same nodes, every provenance entry and call stack
 * as in the reference, no eager error pending) or fail at a stage with a
 * non-OK status (TG_ERR_NOMEM) and a message; never crash, never leak
 * (eager_live_tensors back to its baseline; LSan at exit in the ASan
 * build).  The same walk covers the .tgraph and ONNX loaders alone, and
 * the tool's run, check and train (cli_main, in process).
 *
 * Each run is on a new thread with the symbol cache dropped, so the
 * per-thread caches (eager blocks and pools, the tracer's stacks) and the
 * symbolizer start cold and their first-use allocations are walked too.
 * Every n is walked in both builds (the scenario is small enough for the
 * ASan build's time budget).  Also: no raw malloc/calloc/realloc/
 * aligned_alloc/strdup/free/posix_memalign call is left in the library
 * sources, so no allocation escapes the hook.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eager/eager.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "graph/alloc.h"
#include "graph/op.h"
#include "graph/text.h"
#include "optimize/opt.h"
#include "cli/cli.h"
#include "replay/replay.h"
#include "tracer/stack.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

/* ---- a growing string (test code: plain malloc) ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = (b->n + (size_t)k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return;
        b->p = q;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

/*
 * What must survive every stage: each live node's op and its provenance
 * (file:line func and every frame of its call stack), in order.
 */
static char *graph_sig(const graph *g)
{
    sbuf b = {0};
    sb_printf(&b, "%d nodes\n", (int)g->nnodes);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->flags & GRAPH_NODE_DEAD)
            continue;
        sb_printf(&b, "%s:", graph_ops[n->op].name);
        for (int32_t k = 0; k < n->nprov; k++) {
            const graph_prov *p = &g->provs[n->prov[k]];
            sb_printf(&b, " [%s:%d %s", p->file ? p->file : "?", (int)p->line,
                      p->func ? p->func : "?");
            for (int32_t f = 0; f < p->nframes; f++) {
                const graph_frame *fr = &g->frames[p->frame0 + f];
                sb_printf(&b, " <%s+%llu %s:%d>", fr->func ? fr->func : "?",
                          (unsigned long long)fr->offset, fr->file ? fr->file : "?",
                          (int)fr->line);
                if (fr->func && !strcmp(fr->func, "scenario"))
                    break; /* the frames above differ with scenario's caller */
            }
            sb_printf(&b, "]");
        }
        sb_printf(&b, "\n");
    }
    for (int32_t k = 0; k < g->nguards; k++) {
        int32_t pr = g->guards[k].prov;
        sb_printf(&b, "guard %d: prov %s:%d\n", (int)k,
                  pr >= 0 ? g->provs[pr].file : "-", pr >= 0 ? (int)g->provs[pr].line : 0);
    }
    return b.p;
}

/* ---- the model: a param, a dynamic batch, a guard ---- */

static eager_tensor *forward(eager_tensor *x, eager_tensor *w, eager_tensor *bias)
{
    eager_tensor *h = eager_linear(x, w, bias);
    eager_tensor *pos = eager_gt(eager_reduce_sum(h, TG_NOINTS, 0), eager_scalar(-1e9));
    h = eager_bool(pos) ? eager_relu(h) : eager_neg(h);
    return eager_add(eager_mul(h, eager_scalar(2)), eager_scalar(1));
}

typedef struct world {
    eager_tensor *x, *w, *b; /* made once, outside the walk */
    eager_tensor *xr;        /* the replay input: another batch */
} world;

enum { ST_TRACE, ST_OPT, ST_SAVE, ST_LOAD, ST_COMPILE, ST_SESSION, ST_RUN, ST_DONE };
static const char *stage_names[] = {"trace", "optimize", "save", "load", "compile",
                                    "session", "run", "done"};

typedef struct result {
    int stage;            /* the stage that failed, or ST_DONE */
    tg_status st;         /* its status (TG_ERR_FORMAT for a NULL load...) */
    char msg[512];
    char *sig_trace, *sig_opt, *sig_load; /* malloc'd */
    float y[3 * 4];
    int eager_pending;    /* an eager error left after a success */
} result;

static void result_free(result *r)
{
    free(r->sig_trace);
    free(r->sig_opt);
    free(r->sig_load);
}

/* 1 if msg says out of memory. */
static int says_oom(const char *msg)
{
    return strstr(msg, "out of memory") || strstr(msg, "no memory") ||
           strstr(msg, "cannot allocate") ||
           strstr(msg, "Allocation") || strstr(msg, "allocation");
}

static void scenario(const world *wd, result *r)
{
    memset(r, 0, sizeof *r);
    r->stage = ST_TRACE;
    eager_clear_error();
    graph *g = NULL, *h = NULL;
    void *buf = NULL;
    size_t len = 0;
    replay_plan *p = NULL;
    replay_session *s = NULL;

    eager_pool_push();
    tg_status st = trace_begin(NULL);
    if (st == TG_OK)
        st = trace_input(wd->x, "x");
    if (st == TG_OK)
        st = trace_dynamic(wd->x, 0, "B");
    if (st == TG_OK)
        st = trace_param(wd->w, "w");
    if (st == TG_OK)
        st = trace_param(wd->b, "b");
    if (st == TG_OK)
        st = trace_output(forward(wd->x, wd->w, wd->b), "y");
    /* A failure above leaves the trace on: freeze ends it and repeats the error. */
    g = trace_freeze();
    eager_pool_pop();
    if (!g) {
        r->st = eager_status();
        snprintf(r->msg, sizeof r->msg, "%s", eager_error() ? eager_error() : "");
        goto out;
    }
    if (eager_status() != TG_OK) {
        /* froze although an op reported an error: report it as the stage's */
        r->st = eager_status();
        snprintf(r->msg, sizeof r->msg, "frozen with an error pending: %s", eager_error());
        goto out;
    }
    r->sig_trace = graph_sig(g);

    r->stage = ST_OPT;
    opt_options o = opt_default_options();
    o.level = 2;
    if ((r->st = opt_optimize(g, &o, NULL, r->msg, sizeof r->msg)) != TG_OK)
        goto out;
    r->sig_opt = graph_sig(g);

    r->stage = ST_SAVE;
    if ((r->st = format_save_mem(g, NULL, &buf, &len, r->msg, sizeof r->msg)) != TG_OK)
        goto out;

    r->stage = ST_LOAD;
    if (!(h = format_load_mem(buf, len, "alloc.tgraph", r->msg, sizeof r->msg))) {
        r->st = says_oom(r->msg) ? TG_ERR_NOMEM : TG_ERR_FORMAT;
        goto out;
    }
    r->sig_load = graph_sig(h);

    r->stage = ST_COMPILE;
    if (!(p = replay_compile(h, NULL, r->msg, sizeof r->msg))) {
        r->st = says_oom(r->msg) ? TG_ERR_NOMEM : TG_ERR_STATE;
        goto out;
    }
    r->stage = ST_SESSION;
    if (!(s = replay_session_new(p, NULL, 0))) {
        r->st = TG_ERR_NOMEM;
        snprintf(r->msg, sizeof r->msg, "replay_session_new: NULL");
        goto out;
    }
    r->stage = ST_RUN;
    replay_tensor in = {.name = "x", .type = *eager_type(wd->xr), .input = eager_peek(wd->xr)};
    replay_tensor outt = {.name = "y", .data = r->y};
    outt.type.dtype = GRAPH_F32;
    outt.type.ndim = 2;
    outt.type.dim[0] = 3;
    outt.type.dim[1] = 4;
    if ((r->st = replay_run(s, &in, 1, &outt, 1)) != TG_OK) {
        snprintf(r->msg, sizeof r->msg, "%s", replay_session_error(s));
        goto out;
    }
    r->stage = ST_DONE;
    r->eager_pending = eager_status() != TG_OK;
    if (r->eager_pending)
        snprintf(r->msg, sizeof r->msg, "%s", eager_error());
out:
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(h);
    free(buf);
    graph_free(g);
    eager_clear_error();
    eager_trim_cache();
}

/*
 * The scenario in a new thread: the per-thread state (eager block cache
 * and pools, the tracer's stack cache) starts cold each time, so their
 * first-use allocations are walked too, and is freed at the thread's exit.
 */
typedef struct job {
    const world *wd;
    result *r;
} job;

static void *scenario_main(void *arg)
{
    job *j = arg;
    trace_stack_forget(); /* the symbol cache cold too */
    scenario(j->wd, j->r);
    return NULL;
}

static void scenario_cold(const world *wd, result *r)
{
    job j = {wd, r};
    pthread_t th;
    if (pthread_create(&th, NULL, scenario_main, &j) != 0) {
        CHECK_MSG(0, "pthread_create");
        memset(r, 0, sizeof *r);
        return;
    }
    pthread_join(th, NULL);
}

static int same_str(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static void walk_scenario(const world *wd)
{
    result ref;
    long live0 = eager_live_tensors();
    scenario_cold(wd, &ref); /* warms process-wide state (dnnl, libunwind, caches) */
    result_free(&ref);
    tg_alloc_hook(0);
    scenario_cold(wd, &ref);
    uint64_t total = tg_alloc_hook_count();
    tg_alloc_hook(-1);
    CHECK_MSG(ref.stage == ST_DONE && !ref.eager_pending, "clean run: %s: %s",
              stage_names[ref.stage], ref.msg);
    CHECK(total > 100);
    CHECK(ref.sig_trace && strstr(ref.sig_trace, "test_alloc_fail.c"));
    /* the stacks were captured and symbolized: the caller of forward */
    CHECK(ref.sig_trace && strstr(ref.sig_trace, "<scenario+"));
    CHECK(ref.sig_trace && strstr(ref.sig_trace, "guard 0"));
    /* an independent reference: y = 2 * relu(x w^T + b) + 1 (the guard holds) */
    const float *x = eager_peek(wd->xr), *w = eager_peek(wd->w), *bb = eager_peek(wd->b);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            float acc = bb[j];
            for (int k = 0; k < 6; k++)
                acc += x[i * 6 + k] * w[j * 6 + k];
            float want = 2.0f * (acc > 0 ? acc : 0) + 1.0f;
            CHECK_NEAR(ref.y[i * 4 + j], want, 1e-5);
        }

    int failed = 0, complete = 0, bad = 0, unfired = 0, nomem = 0;
    int by_stage[ST_DONE + 1] = {0};
    for (uint64_t n = 1; n <= total; n++) {
        result r;
        tg_alloc_hook((int64_t)n);
        scenario_cold(wd, &r);
        int fired = tg_alloc_hook_fired();
        tg_alloc_hook(-1);
        long live = eager_live_tensors();
        int ok = 1;
        if (!fired)
            unfired++;
        if (r.stage == ST_DONE) {
            ok = !r.eager_pending && memcmp(r.y, ref.y, sizeof r.y) == 0 &&
                 same_str(r.sig_trace, ref.sig_trace) && same_str(r.sig_opt, ref.sig_opt) &&
                 same_str(r.sig_load, ref.sig_load);
            complete += ok;
            CHECK_MSG(ok, "allocation %llu failed: success with something missing "
                      "(outputs %s, trace %s, opt %s, load %s%s%s)", (unsigned long long)n,
                      memcmp(r.y, ref.y, sizeof r.y) ? "differ" : "equal",
                      same_str(r.sig_trace, ref.sig_trace) ? "same" : "DIFFERS",
                      same_str(r.sig_opt, ref.sig_opt) ? "same" : "DIFFERS",
                      same_str(r.sig_load, ref.sig_load) ? "same" : "DIFFERS",
                      r.eager_pending ? ", eager error pending: " : "",
                      r.eager_pending ? r.msg : "");
            if (!ok && getenv("TG_ALLOC_VERBOSE")) {
                if (!same_str(r.sig_trace, ref.sig_trace))
                    fprintf(stderr, "--- trace ref\n%s--- got\n%s", ref.sig_trace,
                            r.sig_trace ? r.sig_trace : "(none)\n");
                if (!same_str(r.sig_opt, ref.sig_opt))
                    fprintf(stderr, "--- opt ref\n%s--- got\n%s", ref.sig_opt,
                            r.sig_opt ? r.sig_opt : "(none)\n");
            }
        } else {
            ok = r.st != TG_OK && r.msg[0] && fired;
            failed += ok;
            nomem += r.st == TG_ERR_NOMEM;
            by_stage[r.stage]++;
            CHECK_MSG(ok, "allocation %llu: %s failed with status %d, message \"%s\"%s",
                      (unsigned long long)n, stage_names[r.stage], (int)r.st, r.msg,
                      fired ? "" : " (the hook did not fire)");
            CHECK_MSG(r.st == TG_ERR_NOMEM, "allocation %llu: %s failed with %s, not "
                      "TG_ERR_NOMEM: %s", (unsigned long long)n, stage_names[r.stage],
                      tg_status_str(r.st), r.msg);
        }
        CHECK_MSG(live == live0, "allocation %llu: %ld tensors live, %ld before",
                  (unsigned long long)n, live, live0);
        bad += !ok;
        result_free(&r);
    }
    printf("fault test: %llu allocation points, %d failed cleanly, %d succeeded complete"
           " (%d bad; %d points past the end of a shorter run)\n",
           (unsigned long long)total, failed, complete, bad, unfired);
    printf("  failed at: trace %d, optimize %d, save %d, load %d, compile %d, session %d,"
           " run %d (%d as TG_ERR_NOMEM)\n", by_stage[ST_TRACE], by_stage[ST_OPT],
           by_stage[ST_SAVE], by_stage[ST_LOAD], by_stage[ST_COMPILE], by_stage[ST_SESSION],
           by_stage[ST_RUN], nomem);
    CHECK(failed > 0);
    /* After the walk, the clean run is the same again. */
    result again;
    tg_alloc_hook(0);
    scenario_cold(wd, &again);
    CHECK_MSG(tg_alloc_hook_count() == total, "allocations: %llu, then %llu",
              (unsigned long long)total, (unsigned long long)tg_alloc_hook_count());
    tg_alloc_hook(-1);
    CHECK(again.stage == ST_DONE && memcmp(again.y, ref.y, sizeof ref.y) == 0 &&
          same_str(again.sig_load, ref.sig_load));
    result_free(&again);
    result_free(&ref);
}

/* ---- the loaders alone ---- */

typedef graph *(*loader_fn)(const void *buf, size_t len, char *err, size_t errlen);

static graph *load_tgraph(const void *buf, size_t len, char *err, size_t errlen)
{
    return format_load_mem(buf, len, "model.tgraph", err, errlen);
}

static graph *load_onnx(const void *buf, size_t len, char *err, size_t errlen)
{
    return format_onnx_load_mem(buf, len, "model.onnx", NULL, err, errlen);
}

static void walk_loader(const char *what, loader_fn load, const void *buf, size_t len)
{
    char err[512] = "";
    graph *g = load(buf, len, err, sizeof err);
    CHECK_MSG(g != NULL, "%s loads: %s", what, err);
    if (!g)
        return;
    char *ref = graph_sig(g);
    graph_free(g);
    tg_alloc_hook(0);
    g = load(buf, len, err, sizeof err);
    uint64_t total = tg_alloc_hook_count();
    tg_alloc_hook(-1);
    graph_free(g);
    int failed = 0, complete = 0;
    for (uint64_t n = 1; n <= total; n++) {
        err[0] = 0;
        tg_alloc_hook((int64_t)n);
        g = load(buf, len, err, sizeof err);
        tg_alloc_hook(-1);
        if (g) {
            char *sig = graph_sig(g);
            int ok = same_str(sig, ref);
            complete += ok;
            CHECK_MSG(ok, "%s, allocation %llu failed: loaded something else", what,
                      (unsigned long long)n);
            free(sig);
            graph_free(g);
        } else {
            int ok = err[0] && says_oom(err);
            failed += ok;
            CHECK_MSG(ok, "%s, allocation %llu failed: \"%s\" (want out of memory)", what,
                      (unsigned long long)n, err);
        }
    }
    printf("fault test, %s loader: %llu allocation points, %d failed cleanly, "
           "%d succeeded complete\n", what, (unsigned long long)total, failed, complete);
    CHECK(failed > 0);
    free(ref);
}

/* ---- no allocation escapes the hook ---- */

/* The file at path, NUL-terminated (free() it); NULL if it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    sbuf b = {0};
    char chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_printf(&b, "%.*s", (int)k, chunk);
    fclose(f);
    *len = b.n;
    return b.p ? b.p : calloc(1, 1);
}

/* Calls of libc's allocator in one source file, comments and strings skipped. */
static int raw_calls(const char *path, int report)
{
    static const char *names[] = {"malloc", "calloc", "realloc", "aligned_alloc", "strdup",
                                  "strndup", "free", "posix_memalign"};
    size_t n = 0;
    char *p = slurp(path, &n);
    if (!p)
        return -1;
    int found = 0, line = 1;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\n')
            line++;
        else if (c == '/' && p[i + 1] == '*') {
            for (i += 2; i + 1 < n && !(p[i] == '*' && p[i + 1] == '/'); i++)
                line += p[i] == '\n';
            i++;
        } else if (c == '/' && p[i + 1] == '/') {
            while (i + 1 < n && p[i + 1] != '\n')
                i++;
        } else if (c == '"' || c == '\'') {
            for (i++; i < n && p[i] != c; i++)
                if (p[i] == '\\')
                    i++;
        } else if ((c >= 'a' && c <= 'z') || c == '_') {
            size_t j = i;
            while (j < n && ((p[j] >= 'a' && p[j] <= 'z') || (p[j] >= 'A' && p[j] <= 'Z') ||
                               (p[j] >= '0' && p[j] <= '9') || p[j] == '_'))
                j++;
            char prev = i ? p[i - 1] : ' ';
            size_t q = j;
            while (q < n && (p[q] == ' ' || p[q] == '\t'))
                q++;
            int member = prev == '.' || prev == '>' || (prev >= '0' && prev <= '9') ||
                         (prev >= 'A' && prev <= 'Z');
            for (size_t t = 0; !member && q < n && p[q] == '(' &&
                               t < sizeof names / sizeof *names; t++)
                if (strlen(names[t]) == j - i && memcmp(p + i, names[t], j - i) == 0) {
                    if (report)
                        CHECK_MSG(0, "%s:%d calls %s directly (use graph/alloc.h)", path,
                                  line, names[t]);
                    found++;
                }
            i = j - 1;
        }
    }
    free(p);
    return found;
}

static void test_no_raw_allocation(void)
{
    static const char *dirs[] = {"graph", "eager", "tracer", "optimize", "formats",
                                 "formats/onnx", "replay", "cli", "replay/opencl"};
    int files = 0, found = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/../../%s", TG_TEST_DATA, dirs[d]);
        DIR *dp = opendir(dir);
        CHECK_MSG(dp != NULL, "opens %s", dir);
        for (struct dirent *e; dp && (e = readdir(dp)) != NULL;) {
            size_t n = strlen(e->d_name);
            if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h")))
                continue;
            if ((!strcmp(dirs[d], "graph") || !strcmp(dirs[d], "cli")) &&
                !strcmp(e->d_name, "alloc.c"))
                continue; /* the entry point itself, and the tool's (libc's or it) */
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            int k = raw_calls(path, 1);
            CHECK_MSG(k >= 0, "reads %s", path);
            files++;
            found += k > 0 ? k : 0;
        }
        if (dp)
            closedir(dp);
    }
    CHECK_MSG(files > 100, "%d library sources scanned", files);
    CHECK(found == 0);
    /* the scanner itself finds a call (it is not vacuous) */
    char self[1024];
    snprintf(self, sizeof self, "%s/../../graph/alloc.c", TG_TEST_DATA);
    int k = raw_calls(self, 0);
    check_report(k >= 4, __FILE__, __LINE__, "the scanner sees graph/alloc.c's %d calls", k);
}

/* The hook itself: the n-th allocation from now fails, once; counts. */
static void test_hook(void)
{
    tg_alloc_hook(3);
    void *a = tg_malloc(8), *b = tg_calloc(2, 8), *c = tg_malloc(8), *d = tg_strdup("x");
    CHECK(a && b && !c && d);
    CHECK(tg_alloc_hook_fired() == 1);
    CHECK(tg_alloc_hook_count() == 4);
    void *e = tg_aligned_alloc(64, 100);
    CHECK(e && ((uintptr_t)e & 63) == 0);
    tg_alloc_hook(-1);
    CHECK(tg_alloc_hook_fired() == 0 && tg_alloc_hook_count() == 0);
    void *f = tg_malloc(8);
    CHECK(f != NULL);
    CHECK(tg_alloc_hook_count() == 0); /* off: not counted */
    tg_free(a), tg_free(b), tg_free(d), tg_free(e), tg_free(f);
    /* a failed realloc leaves the block */
    char *p = tg_malloc(4);
    strcpy(p, "abc");
    tg_alloc_hook(1);
    CHECK(tg_realloc(p, 1 << 20) == NULL);
    tg_alloc_hook(-1);
    CHECK(strcmp(p, "abc") == 0);
    tg_free(p);
}

/* eager_pool_push past the levels that need no memory reports a failure and stays paired. */
static void test_pool_push(void)
{
    long live0 = eager_live_tensors();
    for (int i = 0; i < 8; i++)
        CHECK(eager_pool_push() == TG_OK);
    eager_tensor *outer = eager_scalar(1);
    tg_alloc_hook(1);
    tg_status st = eager_pool_push();
    tg_alloc_hook(-1);
    CHECK(st == TG_ERR_NOMEM);
    CHECK_ERROR("eager_pool_push: out of memory");
    eager_tensor *inner = eager_scalar(2); /* lands in the 8th pool */
    CHECK(inner != NULL);
    eager_pool_pop(); /* the failed push's: closes nothing */
    CHECK(eager_status() == TG_OK);
    CHECK(eager_item(inner) == 2 && eager_item(outer) == 1); /* both alive */
    CHECK(eager_pool_push() == TG_OK); /* a real 9th level now */
    eager_tensor *t9 = eager_scalar(3);
    CHECK(t9 != NULL);
    eager_pool_pop();
    for (int i = 0; i < 8; i++)
        eager_pool_pop();
    CHECK(eager_status() == TG_OK);
    CHECK(eager_live_tensors() == live0);
    eager_pool_pop(); /* none open: still an error */
    CHECK_ERROR("no pool is open");
    eager_clear_error();
    /* an op whose pool cannot adopt its output fails and frees it */
    CHECK(eager_pool_push() == TG_OK);
    eager_tensor *a = eager_scalar(1);
    for (int i = 1; i < 64; i++) /* the pool's first 64 slots are taken */
        eager_scalar(i);
    int ops = 0;
    for (int n = 1; n < 200; n++) {
        eager_clear_error();
        tg_alloc_hook(n);
        eager_tensor *s = eager_add(a, a);
        int fired = tg_alloc_hook_fired();
        tg_alloc_hook(-1);
        if (!fired) {
            CHECK(s != NULL && eager_item(s) == 2);
            break;
        }
        ops++;
        CHECK_MSG(s == NULL && eager_status() == TG_ERR_NOMEM, "add with allocation %d "
                  "failing: %s", n, eager_error() ? eager_error() : "(no error)");
    }
    CHECK(ops >= 1);
    eager_clear_error();
    eager_pool_pop();
    CHECK(eager_live_tensors() == live0);
}

/* ---- the tool: cli_main run / check / train ---- */

/* cli_main with stdout and stderr to files; the exit code. */
static int cli_quiet(int argc, char **argv, const char *errpath)
{
    fflush(stdout);
    fflush(stderr);
    FILE *out = stdout, *err = stderr;
    FILE *o = fopen("/dev/null", "w"), *e = fopen(errpath, "w");
    if (!o || !e) {
        if (o)
            fclose(o);
        if (e)
            fclose(e);
        return -1;
    }
    stdout = o;
    stderr = e;
    int rc = cli_main(argc, argv);
    fflush(o);
    fflush(e);
    stdout = out;
    stderr = err;
    fclose(o);
    fclose(e);
    return rc;
}

/* Fails each allocation of `tracegraph ARGV...` in turn: each run exits 0
 * with out (the file it writes, if any) as in the clean run, or fails
 * saying it ran out of memory. */
static void walk_cli_argv(const char *dir, const char *cmd, char **argv, int argc,
                          const char *out)
{
    char errp[600];
    snprintf(errp, sizeof errp, "%s/err.txt", dir);
    size_t reflen = 0, len = 0;
    if (out)
        remove(out);
    int rc0 = cli_quiet(argc, argv, errp);
    char *ref = out ? slurp(out, &reflen) : NULL;
    CHECK_MSG(rc0 == 0 && (!out || ref), "tracegraph %s: exit %d", cmd, rc0);
    tg_alloc_hook(0);
    cli_quiet(argc, argv, errp);
    uint64_t total = tg_alloc_hook_count();
    tg_alloc_hook(-1);
    int failed = 0, complete = 0;
    for (uint64_t n = 1; n <= total; n++) {
        if (out)
            remove(out);
        tg_alloc_hook((int64_t)n);
        int rc = cli_quiet(argc, argv, errp);
        tg_alloc_hook(-1);
        char *msg = slurp(errp, &len);
        if (rc == 0) {
            char *got = out ? slurp(out, &len) : NULL;
            int ok = !out || (got && len == reflen && memcmp(got, ref, len) == 0);
            complete += ok;
            CHECK_MSG(ok, "tracegraph %s, allocation %llu failed: exit 0 with another "
                      "output", cmd, (unsigned long long)n);
            free(got);
        } else {
            int ok = msg && says_oom(msg);
            failed += ok;
            CHECK_MSG(ok, "tracegraph %s, allocation %llu failed: exit %d, \"%s\" (want "
                      "out of memory)", cmd, (unsigned long long)n, rc, msg ? msg : "");
        }
        free(msg);
    }
    printf("fault test, tracegraph %s: %llu allocation points, %d failed cleanly, "
           "%d succeeded complete\n", cmd, (unsigned long long)total, failed, complete);
    CHECK(failed > 0);
    free(ref);
}

static void walk_cli(const char *dir, const char *cmd)
{
    char model[600], x[600], y[600];
    snprintf(model, sizeof model, "%s/m.tgraph", dir);
    snprintf(x, sizeof x, "%s/x.npy", dir);
    snprintf(y, sizeof y, "%s/y.npy", dir);
    char *run_argv[] = {"tracegraph", "run", model, "-i", x, "-o", y, NULL};
    char *check_argv[] = {"tracegraph", "check", model, "-i", x, NULL};
    if (!strcmp(cmd, "run"))
        walk_cli_argv(dir, cmd, run_argv, 7, y);
    else
        walk_cli_argv(dir, cmd, check_argv, 5, NULL);
}

/* `tracegraph train` of a small SGD step (text IR) from a checkpoint,
 * saving one: the checkpoint it writes must be the clean run's. */
static void walk_cli_train(const char *dir)
{
    static const char step[] = "graph step(%x: f32[2,3]) -> (loss: f32[]) {\n"
                               "  %w: f32[3] = state [0.5, -0.25, 1]\n"
                               "  %lr: f32[] = state [0.1]\n"
                               "  %y: f32[2,3] = mul(%x, %w)\n"
                               "  %loss: f32[] = reduce_mean(%y)\n"
                               "  %g: f32[3] = reduce_sum(%x) {axes=[0]}\n"
                               "  %d: f32[3] = mul(%lr, %g)\n"
                               "  %w2: f32[3] = sub(%w, %d)\n"
                               "  return loss = %loss\n"
                               "  next %w = %w2\n"
                               "  next %lr = %lr\n"
                               "}\n";
    char model[600], x[600], data[620], in[600], out[600], err[512];
    snprintf(model, sizeof model, "%s/t.tgraph", dir);
    snprintf(x, sizeof x, "%s/tx.npy", dir);
    snprintf(data, sizeof data, "x=%s", x);
    snprintf(in, sizeof in, "%s/in.ckpt", dir);
    snprintf(out, sizeof out, "%s/out.ckpt", dir);
    graph *g = graph_parse(step, strlen(step), err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    float xd[15];
    for (int i = 0; i < 15; i++)
        xd[i] = (float)(i % 7) - 2.5f;
    graph_type xt = {GRAPH_F32, 2, {5, 3}};
    CHECK(g && format_save(g, model, NULL, err, sizeof err) == TG_OK);
    CHECK(format_npy_save(x, &xt, xd, err, sizeof err) == TG_OK);
    /* the starting checkpoint: one step from the traced state */
    char *first[] = {"tracegraph", "train", model, "--steps", "1", "--data", data, "--save", in,
                     NULL};
    char errp[600];
    snprintf(errp, sizeof errp, "%s/err.txt", dir);
    CHECK(cli_quiet(9, first, errp) == 0);
    char *argv[] = {"tracegraph", "train", model, "--steps", "3", "--start", "1", "--data", data,
                    "--state", in, "--lr", "0.25", "--save", out, "--print-state", NULL};
    walk_cli_argv(dir, "train", argv, 16, out);
    graph_free(g);
    remove(model);
    remove(x);
    remove(in);
    remove(out);
}

int main(void)
{
    test_hook();
    test_no_raw_allocation();
    test_pool_push();

    world wd;
    wd.x = eager_rand_uniform(TG_SHAPE(2, 6), 1, -1, 1);
    wd.w = eager_rand_normal(TG_SHAPE(4, 6), 2, 0, 0.5f);
    wd.b = eager_rand_uniform(TG_SHAPE(4), 3, 0.5f, 1.0f);
    wd.xr = eager_rand_uniform(TG_SHAPE(3, 6), 4, -1, 1);
    walk_scenario(&wd);

    /* the loaders on small valid files: what the scenario traced */
    eager_pool_push();
    trace_begin(NULL);
    trace_input(wd.x, "x");
    trace_dynamic(wd.x, 0, "B");
    trace_param(wd.w, "w");
    trace_param(wd.b, "b");
    trace_output(forward(wd.x, wd.w, wd.b), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK(g != NULL);
    void *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    if (g && format_save_mem(g, NULL, &buf, &len, err, sizeof err) == TG_OK)
        walk_loader("tgraph", load_tgraph, buf, len);
    else
        CHECK_MSG(0, "save: %s", err);
    free(buf);
    buf = NULL;
    format_onnx_save_opts oo = {0};
    oo.drop_guards = 1;
    if (g && format_onnx_save_mem(g, &oo, &buf, &len, err, sizeof err) == TG_OK)
        walk_loader("onnx", load_onnx, buf, len);
    else
        CHECK_MSG(0, "onnx save: %s", err);
    free(buf);

    /* the tool, on files in a temporary directory */
    char dir[] = "/tmp/tg_alloc_failXXXXXX";
    if (g && mkdtemp(dir)) {
        char path[600];
        snprintf(path, sizeof path, "%s/m.tgraph", dir);
        CHECK(format_save(g, path, NULL, err, sizeof err) == TG_OK);
        snprintf(path, sizeof path, "%s/x.npy", dir);
        CHECK(format_npy_save(path, eager_type(wd.xr), eager_peek(wd.xr), err, sizeof err) ==
              TG_OK);
        walk_cli(dir, "run");
        walk_cli(dir, "check");
        walk_cli_train(dir);
        const char *files[] = {"m.tgraph", "x.npy", "y.npy", "err.txt"};
        for (int i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            remove(path);
        }
        rmdir(dir);
    } else
        CHECK_MSG(0, "mkdtemp");
    graph_free(g);

    eager_release(wd.x);
    eager_release(wd.w);
    eager_release(wd.b);
    eager_release(wd.xr);
    eager_trim_cache();
    CHECK(eager_live_tensors() == 0);
    return check_done();
}
