/*
 * test_cost_rates.c - the layout cost model's machine rates
 * (graph_cost_rates, eager/cost_rates.c): TG_COST_RATES pins them
 * (builtin, or name=value pairs) and a bad one is refused with a message
 * naming it, also by -O3; unpinned, the CPU target measures them once,
 * writes them to the cache ($TG_RATES_CACHE, a temporary file here,
 * never the user's ~/.cache), and the next process (the in-memory copy
 * dropped) reads them back without measuring; values written into the
 * file by hand are the ones used; hostile lines (NaN, out of range, a
 * rate missing or twice, binary bytes, a key with a space, a line over
 * 512 bytes) are refused with the line's number and reason, and the
 * file is rewritten without them, other machines' lines kept; an
 * unwritable cache is reported, not fatal.  The rates reach the layout
 * decision: two 3x3 convs go blocked with the built-in rates and stay
 * plain with a pinned blocked rate of 0.01 MACs/ns, and --explain says
 * which rates were used, as replay_plan_layout does for a graph re-planned
 * for this machine.  Nothing here depends on what the timing
 * measured (only that it is within the parse's range).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "eager/cost_rates.h"
#include "eager/eager.h"
#include "graph/graph_impl.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "tracer/trace.h"

static char g_dir[] = "/tmp/tg_test_rates_XXXXXX";
static char g_cache[256];
static char err[1024];

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_all(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(s, 1, strlen(s), f) == strlen(s));
    if (f)
        fclose(f);
}

/* The rates of this machine's CPU target at `threads`: TG_OK or not. */
static tg_status rates_at(int threads, graph_cost_rates *r)
{
    graph_target t;
    replay_opts o = REPLAY_OPTS_INIT;
    o.threads = threads;
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_OK && t.rates);
    err[0] = '\0';
    return t.rates ? t.rates(&t, r, err, sizeof err) : TG_ERR_STATE;
}

/* The key the CPU target's rates are cached under (cost_rates.c's form). */
static void our_key(int threads, char *buf, size_t len)
{
    graph_target t;
    replay_opts o = REPLAY_OPTS_INIT;
    o.threads = threads;
    CHECK(replay_target(&o, &t, err, sizeof err) == TG_OK);
    char *f = read_all(g_cache);
    /* the line written for (model, block, threads): find it by its parts */
    char want[96];
    snprintf(want, sizeof want, ";block=%d;threads=%d;bench=", t.block, threads);
    buf[0] = '\0';
    for (char *l = f; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *tab = strchr(l, '\t'), *tab2 = tab ? strchr(tab + 1, '\t') : NULL;
        if (strncmp(l, "r1\t", 3) == 0 && tab2 && strstr(l, want) &&
            strstr(l, eager_cpu_model())) {
            snprintf(buf, len, "%.*s", (int)(tab2 - tab - 1), tab + 1);
            break;
        }
        l = nl ? nl + 1 : l + strlen(l);
    }
    free(f);
}

static int same_rates(const graph_cost_rates *a, const graph_cost_rates *b)
{
    return a->gemm == b->gemm && a->im2col == b->im2col && a->blk_1x1 == b->blk_1x1 &&
           a->blk_1x1_padded == b->blk_1x1_padded && a->blk_kxk == b->blk_kxk &&
           a->copy == b->copy && a->step == b->step && a->plain_call == b->plain_call;
}

static void test_pinned(void)
{
    graph_cost_rates r, built = GRAPH_COST_RATES_BUILTIN;
    setenv("TG_COST_RATES", "builtin", 1);
    CHECK(rates_at(1, &r) == TG_OK && same_rates(&r, &built) && strstr(r.from, "built-in"));
    setenv("TG_COST_RATES", "gemm=12.5,copy=3;plaincall=0", 1);
    CHECK_MSG(rates_at(1, &r) == TG_OK && r.gemm == 12.5 && r.copy == 3 && r.plain_call == 0 &&
                  r.im2col == built.im2col && r.step == built.step &&
                  strstr(r.from, "pinned by TG_COST_RATES"),
              "%s", err);
    static const struct {
        const char *env, *want;
    } bad[] = {
        {"gemm=abc", "TG_COST_RATES: gemm=abc: not a number from 0.01 to 100000"},
        {"gemm=nan", "gemm=nan: not a number"},
        {"copy=-1", "copy=-1: not a number from 0.01"},
        {"step=1e99", "step=1e99: not a number from 0 to 1e+07"},
        {"blkkxk=", "blkkxk=: not a number"},
        {"bogus=1", "'bogus=1': not name=value of a rate"},
        {"gemm", "'gemm': not name=value"},
        {"gemm=1,,copy=2", "'': not name=value"},
        {"gemm=1,gemm=2", "gemm given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TG_COST_RATES", bad[i].env, 1);
        CHECK_MSG(rates_at(1, &r) == TG_ERR_ARG && strstr(err, bad[i].want), "%s: %s",
                  bad[i].env, err);
    }
    /* the file form wants every rate */
    graph_cost_rates p = built;
    CHECK(!eager_cost_rates_parse("gemm=1;im2col=2", 1, &p, err, sizeof err) &&
          strstr(err, "blk1x1 missing") && same_rates(&p, &built));
    char s[256];
    p.gemm = 1.25;
    eager_cost_rates_str(&p, s, sizeof s);
    graph_cost_rates q = built;
    CHECK_MSG(eager_cost_rates_parse(s, 1, &q, err, sizeof err) && same_rates(&p, &q), "%s: %s",
              s, err);
}

/* Two 3x3 convs 32 -> 32 on 16x16 with a relu between, a softmax after. */
static graph *two_convs(void)
{
    eager_pool_push();
    eager_tensor *x = eager_rand_uniform(TG_SHAPE(1, 32, 16, 16), 1, -1, 1);
    eager_tensor *w1 = eager_rand_uniform(TG_SHAPE(32, 32, 3, 3), 2, -0.1f, 0.1f);
    eager_tensor *w2 = eager_rand_uniform(TG_SHAPE(32, 32, 3, 3), 3, -0.1f, 0.1f);
    eager_tensor *b = eager_rand_uniform(TG_SHAPE(32), 4, -0.1f, 0.1f);
    trace_begin(NULL);
    trace_input(x, "x");
    eager_tensor *y = eager_relu(eager_conv2d(x, w1, b, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1));
    y = eager_conv2d(y, w2, b, TG_INTS(1), TG_INTS(1), TG_NOINTS, 1);
    trace_output(eager_softmax(y, 1), "y");
    graph *g = trace_freeze();
    eager_pool_pop();
    CHECK_MSG(g != NULL, "trace: %s", eager_error());
    return g;
}

/* -O3 of g under TG_COST_RATES=env: the number of conv2d_blk nodes (-1:
 * failed, err says why), the --explain text into ex. */
static int blocked_convs(const graph *g, const char *env, char *ex, size_t exlen)
{
    setenv("TG_COST_RATES", env, 1);
    graph *h = graph_clone(g);
    FILE *f = tmpfile();
    opt_options o = OPT_OPTIONS_INIT;
    o.level = 3;
    o.explain = f;
    int n = -1;
    if (h && f && opt_optimize(h, &o, NULL, err, sizeof err) == TG_OK) {
        n = 0;
        for (int32_t i = 0; i < h->nnodes; i++)
            n += !(h->nodes[i].flags & GRAPH_NODE_DEAD) && h->nodes[i].op == GRAPH_OP_conv2d_blk;
    }
    ex[0] = '\0';
    if (f) {
        rewind(f);
        size_t k = fread(ex, 1, exlen - 1, f);
        ex[k] = '\0';
        fclose(f);
    }
    graph_free(h);
    return n;
}

static void test_layout_uses_rates(void)
{
    graph_target t;
    CHECK(replay_target(NULL, &t, err, sizeof err) == TG_OK);
    if (t.block == 0) {
        printf("the CPU target has no blocked layout here: the layout decision not checked\n");
        return;
    }
    graph *g = two_convs();
    if (!g)
        return;
    static char ex[1 << 16];
    CHECK_MSG(blocked_convs(g, "builtin", ex, sizeof ex) == 2, "%s", err);
    CHECK_MSG(strstr(ex, "cost rates for cpu ") && strstr(ex, "built-in (TG_COST_RATES=builtin") &&
                  strstr(ex, "blocked kxk 90.0 MACs/ns"),
              "%s", ex);
    /* blocked made (almost) worthless: the same convs stay plain */
    CHECK_MSG(blocked_convs(g, "blkkxk=0.01,blk1x1=0.01,blk1x1pad=0.01", ex, sizeof ex) == 0,
              "%s", err);
    CHECK_MSG(strstr(ex, "pinned by TG_COST_RATES") && strstr(ex, "kept plain") &&
                  strstr(ex, "blocked kxk 0.0 MACs/ns"),
              "%s", ex);
    CHECK(blocked_convs(g, "blkkxk=zero", ex, sizeof ex) == -1 &&
          strstr(err, "TG_COST_RATES: blkkxk=zero: not a number"));
    /* laid out elsewhere: replay_compile re-plans with this machine's
     * rates and says which */
    graph_target other = t;
    snprintf(other.name, sizeof other.name, "elsewhere");
    other.impl_of = NULL;
    other.rates = NULL; /* built-in there */
    graph *h = graph_clone(g);
    opt_options o = OPT_OPTIONS_INIT;
    o.level = 3;
    o.target = &other;
    setenv("TG_COST_RATES", "blkkxk=95", 1);
    CHECK_MSG(h && opt_optimize(h, &o, NULL, err, sizeof err) == TG_OK, "%s", err);
    replay_plan *p = h ? replay_compile(h, NULL, err, sizeof err) : NULL;
    const char *lay = p ? replay_plan_layout(p) : err;
    CHECK_MSG(p && strstr(lay, "re-planned for cpu ") &&
                  strstr(lay, "; cost rates pinned by TG_COST_RATES"),
              "%s", lay);
    replay_plan_free(p);
    graph_free(h);
    graph_free(g);
}

static void test_cache(void)
{
    graph_cost_rates r, r2, built = GRAPH_COST_RATES_BUILTIN;
    char key[512], key2[512];
    unsetenv("TG_COST_RATES");
    eager_cost_rates_forget();
    unlink(g_cache);
    /* measured, written */
    CHECK_MSG(rates_at(1, &r) == TG_OK && strncmp(r.from, "measured here in ", 17) == 0 &&
                  strstr(r.from, "saved to ") && strstr(r.from, g_cache),
              "%s %s", err, r.from);
    graph_cost_rates range = built;
    char s[256];
    eager_cost_rates_str(&r, s, sizeof s); /* within the parse's range, as the file keeps */
    CHECK_MSG(eager_cost_rates_parse(s, 1, &range, err, sizeof err), "%s: %s", s, err);
    our_key(1, key, sizeof key);
    CHECK_MSG(key[0] && strstr(key, "cpu=") && strstr(key, ";onednn=") && strstr(key, ";kernels="),
              "no line for this machine in the cache");
    /* the same process: the same rates, not measured again */
    CHECK(rates_at(1, &r2) == TG_OK && same_rates(&r, &r2) && strcmp(r.from, r2.from) == 0);
    /* a new process (forgotten): read back from the file */
    eager_cost_rates_forget();
    CHECK_MSG(rates_at(1, &r2) == TG_OK && strncmp(r2.from, "cached (", 8) == 0 &&
                  strstr(r2.from, g_cache),
              "%s", r2.from);
    CHECK(fabs(r2.gemm - r.gemm) <= 0.006 && fabs(r2.copy - r.copy) <= 0.006 &&
          fabs(r2.plain_call - r.plain_call) <= 0.006);
    /* values put in the file by hand are the ones used */
    char text[4096];
    snprintf(text, sizeof text,
             "# hand-written\nr1\t%s\tgemm=11;im2col=12;blk1x1=13;blk1x1pad=14;blkkxk=15;"
             "copy=16;step=17;plaincall=18\n",
             key);
    write_all(g_cache, text);
    eager_cost_rates_forget();
    CHECK_MSG(rates_at(1, &r2) == TG_OK && r2.gemm == 11 && r2.im2col == 12 && r2.blk_1x1 == 13 &&
                  r2.blk_1x1_padded == 14 && r2.blk_kxk == 15 && r2.copy == 16 &&
                  r2.step == 17 && r2.plain_call == 18 && strstr(r2.from, "cached ("),
              "%s", r2.from);
    /* another thread count is another key: measured, the first line kept */
    CHECK(rates_at(2, &r2) == TG_OK && strstr(r2.from, "measured here"));
    our_key(2, key2, sizeof key2);
    char *f = read_all(g_cache);
    CHECK_MSG(f && key2[0] && strcmp(key, key2) != 0 && strstr(f, key) && strstr(f, key2) &&
                  strstr(f, "gemm=11.00;im2col=12.00"),
              "%s", f ? f : "(no file)");
    free(f);

    /* hostile lines: refused, named, rewritten without them */
    char longl[700];
    memset(longl, 'a', sizeof longl - 1);
    longl[sizeof longl - 1] = '\0';
    snprintf(text, sizeof text,
             "# hostile\n"
             "r1\t%s\tgemm=nan;im2col=12;blk1x1=13;blk1x1pad=14;blkkxk=15;copy=16;step=17;"
             "plaincall=18\n"
             "r1\tcpu=Other;onednn=avx2;kernels=avx2;block=8;threads=1;bench=1\tgemm=1;"
             "im2col=2;blk1x1=3;blk1x1pad=4;blkkxk=5;copy=6;step=7;plaincall=8\n"
             "r1\t%s\tgemm=1e300;im2col=12;blk1x1=13;blk1x1pad=14;blkkxk=15;copy=16;step=17;"
             "plaincall=18\n"
             "r1\t%s\tgemm=1;gemm=2;im2col=12;blk1x1=13;blk1x1pad=14;blkkxk=15;copy=16;"
             "step=17;plaincall=18\n"
             "r1\t%s\tgemm=1;im2col=12\n"
             "r1\tkey with space\tgemm=1;im2col=2;blk1x1=3;blk1x1pad=4;blkkxk=5;copy=6;step=7;"
             "plaincall=8\n"
             "\x01\x02\xff binary\n"
             "%s\n"
             "v1\t%s\tonednn\t1\t2\n",
             key, key, key, key, longl, key);
    write_all(g_cache, text);
    eager_cost_rates_forget();
    CHECK_MSG(rates_at(1, &r2) == TG_OK && strstr(r2.from, "measured here") &&
                  strstr(r2.from, "cache line 2 refused: gemm=nan: not a number from 0.01 to "
                                  "100000 (rewritten without it)"),
              "%s", r2.from);
    CHECK(r2.gemm != 1 && r2.gemm != 11); /* none of the refused lines' values */
    f = read_all(g_cache);
    CHECK_MSG(f && strstr(f, "cpu=Other;onednn=avx2") && !strstr(f, "nan") &&
                  !strstr(f, "1e300") && !strstr(f, "binary") && !strstr(f, "key with space") &&
                  !strstr(f, "aaaa") && !strstr(f, "v1\t") && strstr(f, key),
              "%s", f ? f : "(no file)");
    free(f);
    /* a key of the file refused only once: the others as found */
    eager_cost_rates_forget();
    CHECK(rates_at(1, &r) == TG_OK && strstr(r.from, "cached (") && !strstr(r.from, "refused"));

    /* a cache that cannot be written: reported, the rates still measured */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/no/such/folder/rates.txt", g_dir);
    setenv("TG_RATES_CACHE", bad, 1);
    eager_cost_rates_forget();
    CHECK_MSG(rates_at(1, &r) == TG_OK && strstr(r.from, "measured here") &&
                  strstr(r.from, "not saved to ") && strstr(r.from, "No such file"),
              "%s", r.from);
    /* a folder as the cache: not read, not written */
    setenv("TG_RATES_CACHE", g_dir, 1);
    eager_cost_rates_forget();
    CHECK_MSG(rates_at(1, &r) == TG_OK && strstr(r.from, "not a regular file") &&
                  strstr(r.from, "not saved to "),
              "%s", r.from);
    setenv("TG_RATES_CACHE", g_cache, 1);
    eager_cost_rates_forget();
}

int main(void)
{
    /* never the user's ~/.cache */
    CHECK(mkdtemp(g_dir) != NULL);
    snprintf(g_cache, sizeof g_cache, "%s/rates.txt", g_dir);
    setenv("TG_RATES_CACHE", g_cache, 1);
    test_pinned();
    test_layout_uses_rates();
    test_cache();
    setenv("TG_COST_RATES", "builtin", 1);
    unlink(g_cache);
    rmdir(g_dir);
    return check_done();
}
