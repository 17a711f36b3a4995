/*
 * test_onnx_einsum.c - ONNX Einsum (formats/onnx/onnx_read_einsum.c) on
 * one-node models built here in memory: each equation interpreted as
 * imported and replayed at -O3, against a naive evaluation of the
 * equation in this file (every assignment of the letters, products summed
 * into the output, size-1 dims broadcast); and the refusals with their
 * messages.  ONNX's own Einsum node tests are float64, which tracegraph
 * does not have.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "formats/onnx/onnx_read_impl.h"
#include "onnx_test_util.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#include "graph/graph_impl.h"

enum { MAXOP = 9 };

typedef struct ecase {
    const char *eq;
    int nops;
    int nd[MAXOP];
    int64_t dims[MAXOP][6];
    int last_const; /* the last operand an initializer, not a graph input */
} ecase;

/* Letters of term k of eq, ellipsis expanded (as the importer aligns it:
 * right, letters '0'..); out gets the output's (implicit: ellipsis, then
 * the letters seen once, sorted). */
static void terms(const ecase *c, char sub[][16], char *out)
{
    char raw[MAXOP + 1][32];
    int nr = 0, len = 0, arrow = 0, emax = 0, ne[MAXOP + 1];
    for (const char *p = c->eq;; p++) {
        if (*p == ' ')
            continue;
        if (*p == ',' || !*p || *p == '-') {
            raw[nr++][len] = 0;
            len = 0;
            if (!*p)
                break;
            if (*p == '-') {
                arrow = 1;
                p++;
            }
            continue;
        }
        raw[nr][len++] = *p;
    }
    for (int k = 0; k < c->nops; k++) {
        int letters = 0;
        for (const char *q = raw[k]; *q; q++)
            letters += *q != '.';
        ne[k] = c->nd[k] - letters;
        if (ne[k] > emax)
            emax = ne[k];
    }
    for (int k = 0; k < nr; k++) {
        int e = k < c->nops ? ne[k] : emax, n = 0;
        char *d = k < c->nops ? sub[k] : out;
        for (const char *q = raw[k]; *q; q++) {
            if (*q == '.') {
                for (int i = 0; i < e; i++)
                    d[n++] = (char)('0' + emax - e + i);
                q += 2;
            } else {
                d[n++] = *q;
            }
        }
        d[n] = 0;
    }
    if (!arrow) {
        int n = 0;
        for (int i = 0; i < emax; i++)
            out[n++] = (char)('0' + i);
        for (int ch = 'a'; ch <= 'z'; ch++) {
            int count = 0;
            for (int k = 0; k < c->nops; k++)
                count += strchr(sub[k], ch) != NULL;
            if (count == 1)
                out[n++] = (char)ch;
        }
        out[n] = 0;
    }
}

/* The naive einsum: y (allocated, *yn elements, shape yd of strlen(out)). */
static float *naive(const ecase *c, float *const *x, int64_t *yd, int64_t *yn)
{
    char sub[MAXOP][16], out[16], all[40] = "";
    terms(c, sub, out);
    int64_t size[128];
    for (int i = 0; i < 128; i++)
        size[i] = 1;
    int na = 0;
    for (int k = 0; k < c->nops; k++)
        for (int i = 0; sub[k][i]; i++) {
            char ch = sub[k][i];
            if (!strchr(all, ch)) {
                all[na++] = ch;
                all[na] = 0;
            }
            if (c->dims[k][i] > size[(int)ch])
                size[(int)ch] = c->dims[k][i];
        }
    int no = (int)strlen(out);
    *yn = 1;
    for (int i = 0; i < no; i++) {
        yd[i] = size[(int)out[i]];
        *yn *= yd[i];
    }
    float *y = calloc((size_t)*yn + 1, sizeof *y);
    int64_t idx[128] = {0};
    for (;;) {
        double p = 1;
        for (int k = 0; k < c->nops; k++) {
            int64_t off = 0;
            for (int i = 0; sub[k][i]; i++) {
                int64_t d = c->dims[k][i], v = idx[(int)sub[k][i]];
                off = off * d + (d == 1 ? 0 : v);
            }
            p *= x[k][off];
        }
        int64_t yo = 0;
        for (int i = 0; i < no; i++)
            yo = yo * yd[i] + idx[(int)out[i]];
        y[yo] += (float)p;
        int i = na - 1;
        for (; i >= 0; i--) {
            if (++idx[(int)all[i]] < size[(int)all[i]])
                break;
            idx[(int)all[i]] = 0;
        }
        if (i < 0)
            break;
    }
    return y;
}

typedef struct model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node, *nodes[1];
    Onnx__AttributeProto at, *ats[1];
    Onnx__ValueInfoProto in[MAXOP], out, *ins[MAXOP], *outs[1];
    onnx_test_tensor type[MAXOP];
    Onnx__TensorProto init, *inits[1];
    char *node_in[MAXOP], *node_out[1];
} model;

static const char *const names[MAXOP] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};

static graph *load(const ecase *c, float *const *x, char *err, size_t errlen, tg_status *st)
{
    model md;
    memset(&md, 0, sizeof md);
    onnx_test_header_init(&md.m, &md.g, &md.opset, md.opsets);
    md.node = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    md.node.op_type = "Einsum";
    md.node.name = "e";
    for (int k = 0; k < c->nops; k++)
        md.node_in[k] = (char *)names[k];
    md.node.n_input = (size_t)c->nops;
    md.node.input = md.node_in;
    md.node_out[0] = "y";
    md.node.n_output = 1;
    md.node.output = md.node_out;
    md.at = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    md.at.name = "equation";
    md.at.has_type = 1;
    md.at.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    md.at.has_s = 1;
    md.at.s.data = (uint8_t *)c->eq;
    md.at.s.len = strlen(c->eq);
    md.ats[0] = &md.at;
    md.node.n_attribute = 1;
    md.node.attribute = md.ats;
    md.nodes[0] = &md.node;
    md.g.n_node = 1;
    md.g.node = md.nodes;
    int ninputs = c->nops - c->last_const;
    for (int k = 0; k < ninputs; k++) {
        md.in[k] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
        md.in[k].name = (char *)names[k];
        md.in[k].type = onnx_test_tensor_type(&md.type[k], 1, c->nd[k], c->dims[k], NULL);
        md.ins[k] = &md.in[k];
    }
    md.g.n_input = (size_t)ninputs;
    md.g.input = md.ins;
    if (c->last_const) {
        int k = c->nops - 1;
        int64_t n = 1;
        for (int i = 0; i < c->nd[k]; i++)
            n *= c->dims[k][i];
        md.init = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
        md.init.name = (char *)names[k];
        md.init.has_data_type = 1;
        md.init.data_type = 1;
        md.init.n_dims = (size_t)c->nd[k];
        md.init.dims = (int64_t *)c->dims[k];
        md.init.n_float_data = (size_t)n;
        md.init.float_data = x[k];
        md.inits[0] = &md.init;
        md.g.n_initializer = 1;
        md.g.initializer = md.inits;
    }
    onnx_test_output(&md.g, &md.out, md.outs, "y");
    size_t len = onnx__model_proto__get_packed_size(&md.m);
    uint8_t *buf = malloc(len + 1);
    onnx__model_proto__pack(&md.m, buf);
    graph *g = onnx_read_mem(buf, len, "mem.onnx", NULL, st, err, errlen);
    free(buf);
    return g;
}

static void check_y(const char *what, const graph_type *t, const float *got,
                    const int64_t *yd, int no, const float *want, int64_t yn)
{
    int same = t->ndim == no;
    for (int i = 0; same && i < no; i++)
        same = t->dim[i] == yd[i];
    CHECK_MSG(same, "%s: output of %d dims, want %d", what, t->ndim, no);
    if (same)
        CHECK_FLOATS(got, want, yn, 1e-5);
}

static void run_case(const ecase *c)
{
    float *x[MAXOP];
    eager_tensor *in[MAXOP];
    replay_tensor rin[MAXOP];
    for (int k = 0; k < c->nops; k++) {
        int64_t n = 1;
        graph_ints s = {c->nd[k], {0}};
        for (int i = 0; i < c->nd[k]; i++) {
            n *= c->dims[k][i];
            s.v[i] = c->dims[k][i];
        }
        x[k] = malloc(sizeof(float) * (size_t)(n + 1));
        check_fill(x[k], n, 11 + (uint64_t)k, -1, 1);
        in[k] = eager_from_data(GRAPH_F32, s, x[k]);
        graph_type t = {GRAPH_F32, (uint8_t)c->nd[k], {0}};
        memcpy(t.dim, c->dims[k], sizeof(int64_t) * (size_t)c->nd[k]);
        rin[k] = (replay_tensor){.name = names[k], .type = t, .input = x[k]};
    }
    int64_t yd[8], yn;
    char sub[MAXOP][16], out[16];
    terms(c, sub, out);
    float *want = naive(c, x, yd, &yn);
    char err[1024] = "", what[160];
    tg_status st;
    graph *g = load(c, x, err, sizeof err, &st);
    CHECK_MSG(g != NULL, "'%s' imports: %s", c->eq, err);
    int nin = c->nops - c->last_const;
    if (g) {
        eager_tensor *o = NULL;
        snprintf(what, sizeof what, "'%s' interpreted", c->eq);
        st = eager_interpret(g, in, nin, &o, 1, NULL);
        CHECK_MSG(st == TG_OK && o, "%s: %s", what, eager_error());
        if (st == TG_OK && o)
            check_y(what, eager_type(o), eager_peek(o), yd, (int)strlen(out), want, yn);
        eager_release(o);
        eager_clear_error();
        graph *o3 = graph_clone(g);
        opt_options oo = opt_default_options();
        oo.level = 3;
        st = o3 ? opt_optimize(o3, &oo, NULL, err, sizeof err) : TG_ERR_NOMEM;
        CHECK_MSG(st == TG_OK, "'%s' -O3: %s", c->eq, err);
        replay_opts ro = {.threads = 1};
        replay_plan *pl = st == TG_OK ? replay_compile(o3, &ro, err, sizeof err) : NULL;
        CHECK_MSG(pl != NULL, "'%s' compile: %s", c->eq, err);
        replay_session *s = pl ? replay_session_new(pl, NULL, 0) : NULL;
        if (s) {
            replay_tensor rout = {.name = "y"};
            snprintf(what, sizeof what, "'%s' -O3 replay", c->eq);
            st = replay_run(s, rin, nin, &rout, 1);
            CHECK_MSG(st == TG_OK, "%s: %s", what, replay_session_error(s));
            if (st == TG_OK)
                check_y(what, &rout.type, rout.data, yd, (int)strlen(out), want, yn);
        }
        replay_session_free(s);
        replay_plan_free(pl);
        graph_free(o3);
    }
    graph_free(g);
    free(want);
    for (int k = 0; k < c->nops; k++) {
        eager_release(in[k]);
        free(x[k]);
    }
}

static void expect_refused(const ecase *c, tg_status want_st, const char *want)
{
    float *x[MAXOP] = {NULL};
    char err[512] = "";
    tg_status st;
    graph *g = load(c, x, err, sizeof err, &st);
    CHECK_MSG(!g && st == want_st && !strcmp(err, want), "'%s': got %d \"%s\", want %d \"%s\"",
              c->eq, (int)st, err, (int)want_st, want);
    graph_free(g);
}

/* The largest value of g, in elements. */
static int64_t largest_value(const graph *g)
{
    int64_t m = 0;
    for (int32_t v = 0; v < g->nvalues; v++) {
        int64_t e = graph_type_numel(&g->values[v].type);
        m = e > m ? e : m;
    }
    return m;
}

/*
 * a,b,c,d,e,f,ab,cd,ef-> at N = 40: contracted left to right it made a
 * [N]^6 outer product (16 GiB); by size no value has more than N*N
 * elements, and the scalar is (a.AB.b)(c.CD.d)(e.EF.f), computed here.
 * Then an equation that needs an outer product past the budget whatever
 * the order is refused with its size.
 */
static void reorder(void)
{
    enum { N = 40 };
    ecase c = {"a,b,c,d,e,f,ab,cd,ef->", 9, {1, 1, 1, 1, 1, 1, 2, 2, 2},
               {{N}, {N}, {N}, {N}, {N}, {N}, {N, N}, {N, N}, {N, N}}, 0};
    float *x[MAXOP];
    replay_tensor rin[MAXOP];
    for (int k = 0; k < 9; k++) {
        int64_t n = k < 6 ? N : N * N;
        x[k] = malloc(sizeof(float) * (size_t)n);
        check_fill(x[k], n, 31 + (uint64_t)k, -1, 1);
        graph_type t = {GRAPH_F32, (uint8_t)c.nd[k], {N, N}};
        rin[k] = (replay_tensor){.name = names[k], .type = t, .input = x[k]};
    }
    double want = 1;
    for (int p = 0; p < 3; p++) {
        double q = 0;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                q += (double)x[2 * p][i] * x[6 + p][i * N + j] * x[2 * p + 1][j];
        want *= q;
    }
    char err[512] = "";
    tg_status st;
    graph *g = load(&c, x, err, sizeof err, &st);
    CHECK_MSG(g != NULL, "N = %d imports: %s", N, err);
    if (g) {
        int64_t most = largest_value(g);
        CHECK_MSG(most <= N * N, "N = %d: a value of %lld elements", N, (long long)most);
        if (most > N * N) { /* not run: it would take gigabytes */
            graph_free(g);
            g = NULL;
        }
    }
    if (g) {
        opt_options oo = opt_default_options();
        oo.level = 3;
        st = opt_optimize(g, &oo, NULL, err, sizeof err);
        CHECK_MSG(st == TG_OK, "N = %d -O3: %s", N, err);
        replay_opts ro = {.threads = 1};
        replay_plan *pl = st == TG_OK ? replay_compile(g, &ro, err, sizeof err) : NULL;
        CHECK_MSG(pl != NULL, "N = %d compile: %s", N, err);
        replay_session *s = pl ? replay_session_new(pl, NULL, 0) : NULL;
        if (s) {
            replay_tensor rout = {.name = "y"};
            st = replay_run(s, rin, 9, &rout, 1);
            CHECK_MSG(st == TG_OK, "N = %d replay: %s", N, replay_session_error(s));
            if (st == TG_OK) {
                float got = *(const float *)rout.data;
                CHECK_MSG(fabs(got - want) <= 1e-3 * (1 + fabs(want)), "N = %d: %g, want %g",
                          N, got, want);
            }
        }
        replay_session_free(s);
        replay_plan_free(pl);
    }
    graph_free(g);
    for (int k = 0; k < 9; k++)
        free(x[k]);
    static const ecase big = {"i,j->ij", 2, {1, 1}, {{32768}, {32768}}, 0};
    expect_refused(&big, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'e' (Einsum): equation "
                   "'i,j->ij': its smallest next contraction makes 1073741824 elements, over "
                   "the bound of 268435456 (2^28, or its largest operand's)");
}

int main(void)
{
    long live = eager_live_tensors();
    static const ecase cases[] = {
        /* maxvit_t's attention: one matmul, one transpose */
        {"bhid,bhjd->bhij", 2, {4, 4}, {{2, 3, 5, 4}, {2, 3, 6, 4}}, 0},
        {"bhij,bhjd->bhid", 2, {4, 4}, {{2, 3, 5, 6}, {2, 3, 6, 4}}, 0},
        {"ij,jk->ik", 2, {2, 2}, {{3, 4}, {4, 5}}, 0},
        {"ij,jk", 2, {2, 2}, {{3, 4}, {4, 5}}, 0},         /* implicit output: ik */
        {"ij->ji", 1, {2}, {{3, 4}}, 0},                   /* a transpose */
        {"ij->", 1, {2}, {{3, 4}}, 0},                     /* the sum */
        {"ijk->ki", 1, {3}, {{2, 3, 4}}, 0},               /* sum over j, transpose */
        {"i,i->", 2, {1, 1}, {{7}, {7}}, 0},               /* inner product */
        {"i,j->ij", 2, {1, 1}, {{3}, {4}}, 0},             /* outer product */
        {"ijk,jl->il", 2, {3, 2}, {{2, 3, 4}, {3, 5}}, 0}, /* k summed out before */
        {"bij,bjk->bik", 2, {3, 3}, {{1, 3, 4}, {3, 4, 2}}, 0}, /* batch broadcast */
        {"bik,bkj->bji", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, 0}, /* output transposed */
        {"...ij,...jk->...ik", 2, {4, 3}, {{2, 3, 4, 5}, {3, 5, 6}}, 0}, /* ellipsis */
        {"b...d,bd->b...", 2, {4, 2}, {{2, 3, 4, 5}, {2, 5}}, 0},
        {"ij,jk,kl->il", 3, {2, 2, 2}, {{2, 3}, {3, 4}, {4, 5}}, 1}, /* three, one constant */
        {"abcd,cdef->abef", 2, {4, 4}, {{2, 3, 4, 5}, {4, 5, 2, 3}}, 0}, /* grouped K */
        {"a b c , c d -> d a b", 2, {3, 2}, {{2, 3, 4}, {4, 3}}, 0},    /* spaces */
        /* the contraction order by size: left to right would make a 6-D
         * outer product, or ijkl */
        {"a,b,c,d,e,f,ab,cd,ef->", 9, {1, 1, 1, 1, 1, 1, 2, 2, 2},
         {{3}, {4}, {2}, {3}, {4}, {2}, {3, 4}, {2, 3}, {4, 2}}, 0},
        {"ab,cd,ef,a,b,c,d,e,f->", 9, {2, 2, 2, 1, 1, 1, 1, 1, 1},
         {{3, 4}, {2, 3}, {4, 2}, {3}, {4}, {2}, {3}, {4}, {2}}, 1},
        {"ij,kl,jk->li", 3, {2, 2, 2}, {{2, 3}, {4, 5}, {3, 4}}, 0},
        {"a,b,ab,bc", 4, {1, 1, 2, 2}, {{3}, {4}, {3, 4}, {4, 5}}, 0}, /* implicit: c */
        {"bi,bj,bk,bij->bk", 4, {2, 2, 2, 3}, {{2, 3}, {2, 4}, {2, 5}, {2, 3, 4}}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    static const ecase diag = {"ii->i", 1, {2}, {{3, 3}}, 0};
    expect_refused(&diag, TG_ERR_UNSUPPORTED, "mem.onnx: node 0 'e' (Einsum): equation "
                   "'ii->i': subscript 'i' twice in operand 0 (a diagonal) is not supported");
    static const ecase none = {"ij,jk->ix", 2, {2, 2}, {{3, 4}, {4, 5}}, 0};
    expect_refused(&none, TG_ERR_FORMAT, "mem.onnx: node 0 'e' (Einsum): equation "
                   "'ij,jk->ix': output subscript 'x' in no operand");
    static const ecase rank = {"ijk,jk->i", 2, {2, 2}, {{3, 4}, {4, 5}}, 0};
    expect_refused(&rank, TG_ERR_FORMAT, "mem.onnx: node 0 'e' (Einsum): equation "
                   "'ijk,jk->i': term 'ijk' has 3 subscripts for input 0 of rank 2");
    static const ecase size = {"ij,jk->ik", 2, {2, 2}, {{3, 4}, {5, 6}}, 0};
    expect_refused(&size, TG_ERR_SHAPE, "mem.onnx: node 0 'e' (Einsum): subscript 'j' is 4 "
                   "in one operand and 5 in the other");
    static const ecase count = {"ij->ji", 2, {2, 2}, {{3, 4}, {4, 5}}, 0};
    expect_refused(&count, TG_ERR_FORMAT, "mem.onnx: node 0 'e' (Einsum): equation "
                   "'ij->ji': '->' must follow the 2 operands' subscripts, once");
    /* an ellipsis after output letters wrote past the output's letters */
    static const ecase over = {"...->abc...", 1, {6}, {{1, 1, 1, 1, 1, 1}}, 0};
    expect_refused(&over, TG_ERR_FORMAT, "mem.onnx: node 0 'e' (Einsum): equation "
                   "'...->abc...': more than 8 dims in term 'abc...'");
    reorder();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    eager_trim_cache();
    return check_done();
}
