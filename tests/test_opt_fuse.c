/*
 * test_opt_fuse.c - the -O2 passes conv-bn, transpose-absorb and
 * horizontal (the epilogue pass and the models through -O2:
 * test_opt_epilogue.c).
 *
 * Each rule: a text IR graph written by hand (constants inlined through
 * @R(n) / @P(n), see opt_fuse_util.h) run through the one pass, then
 * checked structurally (op counts, the new node's op, attributes, inputs,
 * provenance), numerically (the interpreter on the rewritten graph vs on
 * the original, normalized error <= 1e-4 on seeded inputs), for
 * idempotence (a second run changes nothing), and the cases that must not
 * fire, with their --explain reason.
 */
#include "opt_fuse_util.h"
#include "graph/graph_impl.h"

/* ---- conv-bn ---- */

static const char conv_bn_text[] =
    "graph t(%x: f32[B,3,6,6]) -> (y: f32[B,4,6,6]) {\n"
    "  sym B = 2\n"
    "  %w: f32[4,3,3,3] = const @R(108)\n"
    "  %s: f32[4] = const @P(4)\n"
    "  %b: f32[4] = const @R(4)\n"
    "  %m: f32[4] = const @R(4)\n"
    "  %v: f32[4] = const @P(4)\n"
    "  %c: f32[B,4,6,6] = conv2d(%x, %w) {padding=[1]} !p0\n"
    "  %y: f32[B,4,6,6] = batch_norm(%c, %s, %b, %m, %v) {eps=0.001} !p1\n"
    "  return y = %y\n"
    "}\n" PROV;

static void test_conv_bn(void)
{
    graph *g = PARSE(conv_bn_text), *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_conv_bn));
    int32_t c = find_op(g, GRAPH_OP_conv2d);
    CHECK(count_op(g, GRAPH_OP_batch_norm) == 0 && count_op(g, GRAPH_OP_conv2d) == 1);
    if (c >= 0) {
        const graph_node *n = &g->nodes[c];
        const graph_conv2d_attrs *at = tg_node_attrs(n);
        CHECK(n->nin == 3 && g->values[n->in[1]].kind == GRAPH_VALUE_CONST &&
              g->values[n->in[2]].kind == GRAPH_VALUE_CONST);
        CHECK(at->padding.n == 1 && at->padding.v[0] == 1);
        CHECK_MSG(has_provs(g, c, 2) && n->prov[0] == 0, "conv keeps p0 first, gains p1");
        CHECK_MSG(g->values[n->out[0]].dyn == 1u, "the batch dim stays dynamic");
        CHECK(g->outputs[0].value == n->out[0]);
    }
    check_rest(__FILE__, __LINE__, g, ref, &opt_pass_conv_bn);
    graph_free(g);
    graph_free(ref);
}

/* Grouped, strided conv with a bias; conv2d_ep without steps; linear. */
static void test_conv_bn_variants(void)
{
    static const char *const texts[] = {
        "graph t(%x: f32[1,4,7,7]) -> (y: f32[1,6,4,4]) {\n"
        "  %w: f32[6,2,3,3] = const @R(108)\n  %cb: f32[6] = const @R(6)\n"
        "  %s: f32[6] = const @P(6)\n  %b: f32[6] = const @R(6)\n"
        "  %m: f32[6] = const @R(6)\n  %v: f32[6] = const @P(6)\n"
        "  %c: f32[1,6,4,4] = conv2d(%x, %w, %cb) {stride=[2], padding=[1], groups=2} !p0\n"
        "  %y: f32[1,6,4,4] = batch_norm(%c, %s, %b, %m, %v) !p1\n"
        "  return y = %y\n}\n" PROV,
        "graph t(%x: f32[1,3,5,5]) -> (y: f32[1,2,5,5]) {\n"
        "  %w: f32[2,3,1,1] = const @R(6)\n  %cb: f32[2] = const @R(2)\n"
        "  %s: f32[2] = const @P(2)\n  %b: f32[2] = const @R(2)\n"
        "  %m: f32[2] = const @R(2)\n  %v: f32[2] = const @P(2)\n"
        "  %c: f32[1,2,5,5] = conv2d_ep(%x, %w, %cb) !p0\n"
        "  %y: f32[1,2,5,5] = batch_norm(%c, %s, %b, %m, %v) !p1\n"
        "  return y = %y\n}\n" PROV,
        "graph t(%x: f32[B,8]) -> (y: f32[B,5]) {\n  sym B = 3\n"
        "  %w: f32[5,8] = const @R(40)\n"
        "  %s: f32[5] = const @P(5)\n  %b: f32[5] = const @R(5)\n"
        "  %m: f32[5] = const @R(5)\n  %v: f32[5] = const @P(5)\n"
        "  %c: f32[B,5] = linear(%x, %w) !p0\n"
        "  %y: f32[B,5] = batch_norm(%c, %s, %b, %m, %v) {eps=0.01} !p1\n"
        "  return y = %y\n}\n" PROV,
    };
    const graph_op want[] = {GRAPH_OP_conv2d, GRAPH_OP_conv2d_ep, GRAPH_OP_linear};
    for (int i = 0; i < 3; i++) {
        graph *g = parse_at(__FILE__, __LINE__ + i * 1000, texts[i]), *ref = g ? graph_clone(g) : NULL;
        if (!g)
            continue;
        CHECK_MSG(RUN(g, opt_pass_conv_bn), "case %d fires", i);
        int32_t n = find_op(g, want[i]);
        CHECK_MSG(n >= 0 && count_op(g, GRAPH_OP_batch_norm) == 0 && g->nodes[n].nin == 3 &&
                      has_provs(g, n, 2),
                  "case %d: one %s with folded weights and bias", i, graph_ops[want[i]].name);
        check_rest(__FILE__, __LINE__ + i * 1000, g, ref, &opt_pass_conv_bn);
        graph_free(g);
        graph_free(ref);
    }
}

static void test_conv_bn_declined(void)
{
#define BN_HEAD "graph t(%x: f32[1,2,4,4]) -> (y: f32[1,2,4,4]) {\n" \
                "  %w: f32[2,2,1,1] = const @R(4)\n  %s: f32[2] = const @P(2)\n" \
                "  %b: f32[2] = const @R(2)\n  %m: f32[2] = const @R(2)\n"
    NO_FIRE(BN_HEAD "  %v: f32[2] = param [1, 1]\n"
            "  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %y: f32[1,2,4,4] = batch_norm(%c, %s, %b, %m, %v)\n  return y = %y\n}\n",
            opt_pass_conv_bn, "batch_norm var is not a constant");
    NO_FIRE(BN_HEAD "  %v: f32[2] = const [1, 1]\n  %wp: f32[2,2,1,1] = param [1, 2, 3, 4]\n"
            "  %c: f32[1,2,4,4] = conv2d(%x, %wp)\n"
            "  %y: f32[1,2,4,4] = batch_norm(%c, %s, %b, %m, %v)\n  return y = %y\n}\n",
            opt_pass_conv_bn, "conv weights are not a constant");
    NO_FIRE(BN_HEAD "  %v: f32[2] = const [1, 1]\n"
            "  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %y0: f32[1,2,4,4] = batch_norm(%c, %s, %b, %m, %v)\n"
            "  %y: f32[1,2,4,4] = add(%y0, %c)\n  return y = %y\n}\n",
            opt_pass_conv_bn, "conv output has 2 users");
    NO_FIRE("graph t(%x: f32[1,2,4,4]) -> (y: f32[1,2,4,4], c: f32[1,2,4,4]) {\n"
            "  %w: f32[2,2,1,1] = const @R(4)\n  %s: f32[2] = const @P(2)\n"
            "  %b: f32[2] = const @R(2)\n  %m: f32[2] = const @R(2)\n"
            "  %v: f32[2] = const [1, 1]\n  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %y: f32[1,2,4,4] = batch_norm(%c, %s, %b, %m, %v)\n"
            "  return y = %y\n  return c = %c\n}\n",
            opt_pass_conv_bn, "conv output is a graph output or guarded");
    NO_FIRE(BN_HEAD "  %v: f32[2] = const [1, -1]\n"
            "  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %y: f32[1,2,4,4] = batch_norm(%c, %s, %b, %m, %v)\n  return y = %y\n}\n",
            opt_pass_conv_bn, "var + eps is not positive for channel 1");
    NO_FIRE(BN_HEAD "  %v: f32[2] = const [1, 1]\n"
            "  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %y: f32[1,2,4,4] = batch_norm(%c, %s, %b, %m, %v)\n"
            "  guard value %y[3] == 0 strict\n  return y = %y\n}\n",
            opt_pass_conv_bn, "batch_norm output is guarded");
    NO_FIRE("graph t(%x: f32[2,3,4]) -> (y: f32[2,3,2]) {\n"
            "  %w: f32[2,4] = const @R(8)\n  %s: f32[3] = const @P(3)\n"
            "  %b: f32[3] = const @R(3)\n  %m: f32[3] = const @R(3)\n  %v: f32[3] = const @P(3)\n"
            "  %c: f32[2,3,2] = linear(%x, %w)\n"
            "  %y: f32[2,3,2] = batch_norm(%c, %s, %b, %m, %v)\n  return y = %y\n}\n",
            opt_pass_conv_bn, "batch_norm channel axis is not the linear's feature dim");
    /* not a candidate at all: batch_norm after a relu */
    NO_FIRE(BN_HEAD "  %v: f32[2] = const [1, 1]\n  %r: f32[1,2,4,4] = relu(%x)\n"
            "  %y: f32[1,2,4,4] = batch_norm(%r, %s, %b, %m, %v)\n  return y = %y\n}\n",
            opt_pass_conv_bn, NULL);
#undef BN_HEAD
}

/* ---- transpose-absorb ---- */

/*
 * conv-taps: kernel rows / columns that read only padding are dropped.
 * Each case: the kernel left, its padding and dilation, then numerics.
 */
static void check_taps(int line, const char *text, int64_t kh, int64_t kw, graph_ints pad,
                       graph_ints dil)
{
    graph *g = parse_at(__FILE__, line, text), *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    check_report(run_pass_at(__FILE__, line, g, &opt_pass_conv_taps, why_buf, sizeof why_buf),
                 __FILE__, line, "conv-taps fires");
    int32_t c = find_op(g, GRAPH_OP_conv2d);
    if (c < 0)
        c = find_op(g, GRAPH_OP_conv2d_ep);
    check_report(c >= 0, __FILE__, line, "a conv is left");
    if (c >= 0) {
        const graph_node *n = &g->nodes[c];
        const graph_type *w = &g->values[n->in[1]].type;
        const graph_conv2d_attrs *at = tg_node_attrs(n); /* ep: same leading fields */
        int ok = w->dim[2] == kh && w->dim[3] == kw && at->padding.n == pad.n &&
                 at->dilation.n == dil.n;
        for (int i = 0; ok && i < pad.n; i++)
            ok = at->padding.v[i] == pad.v[i];
        for (int i = 0; ok && i < dil.n; i++)
            ok = at->dilation.v[i] == dil.v[i];
        check_report(ok, __FILE__, line, "kernel %lldx%lld, padding and dilation as expected",
                     (long long)w->dim[2], (long long)w->dim[3]);
    }
    check_rest(__FILE__, line, g, ref, &opt_pass_conv_taps);
    graph_free(g);
    graph_free(ref);
}

static void test_conv_taps(void)
{
    /* DeepLabV3's ASPP: a 3x3 conv at dilation 24 on a 14x14 map is its
     * centre tap (with a bias and a relu epilogue) */
    check_taps(__LINE__,
               "graph t(%x: f32[B,4,14,14]) -> (y: f32[B,3,14,14]) {\n  sym B = 2\n"
               "  %w: f32[3,4,3,3] = const @R(108)\n  %b: f32[3] = const @R(3)\n"
               "  %y: f32[B,3,14,14] = conv2d_ep(%x, %w, %b) {padding=[24], dilation=[24], "
               "post=[2]} !p0\n  return y = %y\n}\n" PROV,
               1, 1, TG_INTS(0, 0, 0, 0), TG_INTS(1, 1));
    /* one axis only: a 5x3 kernel on a 2-row map with padding 3 on H: rows
     * 0 and 4 read only padding; W keeps its 3 taps and dilation 2 */
    check_taps(__LINE__,
               "graph t(%x: f32[1,2,2,9]) -> (y: f32[1,2,2,5]) {\n"
               "  %w: f32[2,2,5,3] = const @R(60)\n"
               "  %y: f32[1,2,2,5] = conv2d(%x, %w) {padding=[2,0], dilation=[1,2]} !p0\n"
               "  return y = %y\n}\n" PROV,
               3, 3, TG_INTS(1, 0, 1, 0), TG_INTS(1, 2));
    /* grouped, strided, asymmetric padding: the last row reads only padding */
    check_taps(__LINE__,
               "graph t(%x: f32[1,4,2,3]) -> (y: f32[1,4,1,2]) {\n"
               "  %w: f32[4,2,3,2] = const @R(48)\n"
               "  %y: f32[1,4,1,2] = conv2d(%x, %w) {stride=[2], padding=[0,0,2,1], groups=2} !p0\n"
               "  return y = %y\n}\n" PROV,
               2, 2, TG_INTS(0, 0, 1, 1), TG_INTS(1, 1));
    /* declined: every tap live; non-finite weights; a dynamic H */
    NO_FIRE("graph t(%x: f32[1,2,5,5]) -> (y: f32[1,2,5,5]) {\n"
            "  %w: f32[2,2,3,3] = const @R(36)\n"
            "  %y: f32[1,2,5,5] = conv2d(%x, %w) {padding=[1]}\n  return y = %y\n}\n",
            opt_pass_conv_taps, NULL);
    NO_FIRE("graph t(%x: f32[1,1,2,2]) -> (y: f32[1,1,2,2]) {\n"
            "  %w: f32[1,1,3,3] = const [1, 2, 3, 4, 5, 6, 7, 8, inf]\n"
            "  %y: f32[1,1,2,2] = conv2d(%x, %w) {padding=[4], dilation=[4]}\n"
            "  return y = %y\n}\n",
            opt_pass_conv_taps, "taps read only padding, but the weights are not finite");
    NO_FIRE("graph t(%x: f32[1,1,H,2]) -> (y: f32[1,1,H,2]) {\n  sym H = 2\n"
            "  %w: f32[1,1,3,3] = const @R(9)\n"
            "  %y: f32[1,1,H,2] = conv2d(%x, %w) {padding=[4], dilation=[4]}\n"
            "  return y = %y\n}\n",
            opt_pass_conv_taps, NULL);
}

/*
 * conv-taps' split: a dilated conv whose taps mostly read padding becomes
 * 1x1 convs over the positions each tap reads, padded and added; no
 * dilated conv is left, and the values are the conv's (check_rest).
 */
static void check_split(int line, const char *text, int convs, int pads)
{
    graph *g = parse_at(__FILE__, line, text), *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    check_report(run_pass_at(__FILE__, line, g, &opt_pass_conv_taps, why_buf, sizeof why_buf),
                 __FILE__, line, "conv-taps fires");
    int ok = count_op(g, GRAPH_OP_conv2d) == convs && count_op(g, GRAPH_OP_pad) == pads &&
             count_op(g, GRAPH_OP_add) == convs - 1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (!(n->flags & GRAPH_NODE_DEAD) && n->op == GRAPH_OP_conv2d)
            ok &= g->values[n->in[1]].type.dim[2] == 1 && g->values[n->in[1]].type.dim[3] == 1;
    }
    check_report(ok, __FILE__, line, "%d 1x1 convs, %d pads, %d adds (got %d, %d, %d)", convs,
                 pads, convs - 1, count_op(g, GRAPH_OP_conv2d), count_op(g, GRAPH_OP_pad),
                 count_op(g, GRAPH_OP_add));
    check_rest(__FILE__, line, g, ref, &opt_pass_conv_taps);
    graph_free(g);
    graph_free(ref);
}

static void test_conv_split(void)
{
    /* DeepLabV3's ASPP at dilation 12 on a 14x14 map (with a bias, a
     * dynamic batch): the centre tap everywhere, the others on 2 rows or
     * columns; 18% of taps x positions live */
    check_split(__LINE__,
                "graph t(%x: f32[B,4,14,14]) -> (y: f32[B,3,14,14]) {\n  sym B = 2\n"
                "  %w: f32[3,4,3,3] = const @R(108)\n  %b: f32[3] = const @R(3)\n"
                "  %y: f32[B,3,14,14] = conv2d(%x, %w, %b) {padding=[12], dilation=[12]} !p0\n"
                "  return y = %y\n}\n" PROV,
                9, 8);
    /* rectangular map, per-axis dilation and padding, no bias: 31% live */
    check_split(__LINE__,
                "graph t(%x: f32[1,3,6,9]) -> (y: f32[1,2,6,9]) {\n"
                "  %w: f32[2,3,3,3] = const @R(54)\n"
                "  %y: f32[1,2,6,9] = conv2d(%x, %w) {padding=[5,4], dilation=[5,4]} !p0\n"
                "  return y = %y\n}\n" PROV,
                9, 8);
    /* declined: half the positions live or more (dilation 2 on 5x5); grouped;
     * strided */
    NO_FIRE("graph t(%x: f32[1,2,5,5]) -> (y: f32[1,2,5,5]) {\n"
            "  %w: f32[2,2,3,3] = const @R(36)\n"
            "  %y: f32[1,2,5,5] = conv2d(%x, %w) {padding=[2], dilation=[2]}\n"
            "  return y = %y\n}\n",
            opt_pass_conv_taps, NULL);
    NO_FIRE("graph t(%x: f32[1,4,14,14]) -> (y: f32[1,4,14,14]) {\n"
            "  %w: f32[4,2,3,3] = const @R(72)\n"
            "  %y: f32[1,4,14,14] = conv2d(%x, %w) {padding=[12], dilation=[12], groups=2}\n"
            "  return y = %y\n}\n",
            opt_pass_conv_taps, NULL);
    NO_FIRE("graph t(%x: f32[1,2,14,14]) -> (y: f32[1,2,7,7]) {\n"
            "  %w: f32[2,2,3,3] = const @R(36)\n"
            "  %y: f32[1,2,7,7] = conv2d(%x, %w) {stride=[2], padding=[12], dilation=[12]}\n"
            "  return y = %y\n}\n",
            opt_pass_conv_taps, NULL);
}

static void test_transpose_matmul(void)
{
    /* transpose of a's last two dims, batch dim dynamic -> transpose_a */
    graph *g = PARSE("graph t(%a: f32[B,5,3], %b: f32[B,5,4]) -> (y: f32[B,3,4]) {\n"
                     "  sym B = 2\n"
                     "  %at: f32[B,3,5] = transpose(%a) {perm=[0,2,1]} !p0\n"
                     "  %y: f32[B,3,4] = matmul(%at, %b) !p1\n  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_transpose_absorb));
        int32_t m = find_op(g, GRAPH_OP_matmul);
        CHECK(count_op(g, GRAPH_OP_transpose) == 0 && m >= 0);
        if (m >= 0) {
            const graph_matmul_attrs *at = tg_node_attrs(&g->nodes[m]);
            CHECK(at->transpose_a == 1 && at->transpose_b == 0 && g->nodes[m].in[0] == 0);
            CHECK(g->values[g->nodes[m].out[0]].dyn == 1u);
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_transpose_absorb);
    }
    graph_free(g);
    graph_free(ref);

    /* both operands transposed; b's transpose also read elsewhere (stays) */
    g = PARSE("graph t(%a: f32[4,3], %b: f32[2,5,4]) -> (y: f32[2,3,5], z: f32[2,4,5]) {\n"
              "  %at: f32[3,4] = transpose(%a) {perm=[1,0]} !p0\n"
              "  %bt: f32[2,4,5] = transpose(%b) {perm=[0,2,1]} !p1\n"
              "  %y: f32[2,3,5] = matmul(%at, %bt) !p2\n"
              "  %z: f32[2,4,5] = relu(%bt)\n"
              "  return y = %y\n  return z = %z\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_transpose_absorb));
        int32_t m = find_op(g, GRAPH_OP_matmul);
        CHECK_MSG(count_op(g, GRAPH_OP_transpose) == 1, "the shared transpose stays");
        if (m >= 0) {
            const graph_matmul_attrs *at = tg_node_attrs(&g->nodes[m]);
            CHECK(at->transpose_a == 1 && at->transpose_b == 1 && g->nodes[m].in[0] == 0 &&
                  g->nodes[m].in[1] == 1 && has_provs(g, m, 3));
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_transpose_absorb);
    }
    graph_free(g);
    graph_free(ref);
}

/* x @ transpose(w) -> linear(x, w); x @ C -> linear(x, Cᵀ). */
static void test_transpose_linear(void)
{
    graph *g = PARSE("graph t(%x: f32[B,3], %w: f32[5,3]) -> (y: f32[B,5]) {\n  sym B = 4\n"
                     "  %wt: f32[3,5] = transpose(%w) {perm=[1,0]} !p0\n"
                     "  %y: f32[B,5] = matmul(%x, %wt) !p1\n  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_transpose_absorb));
        int32_t l = find_op(g, GRAPH_OP_linear);
        CHECK(l >= 0 && count_op(g, GRAPH_OP_matmul) == 0 && count_op(g, GRAPH_OP_transpose) == 0);
        CHECK(l >= 0 && g->nodes[l].in[1] == 1 && g->nodes[l].nin == 2 && has_provs(g, l, 2));
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_transpose_absorb);
    }
    graph_free(g);
    graph_free(ref);

    g = PARSE("graph t(%x: f32[2,3,2]) -> (y: f32[2,3,3]) {\n"
              "  %c: f32[2,3] = const [1, 2, 3, 4, 5, 6]\n"
              "  %y: f32[2,3,3] = matmul(%x, %c) !p0\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_transpose_absorb));
        int32_t l = find_op(g, GRAPH_OP_linear);
        CHECK(l >= 0 && count_op(g, GRAPH_OP_matmul) == 0);
        if (l >= 0) {
            const graph_value *w = &g->values[g->nodes[l].in[1]];
            const float *d = w->data, want[6] = {1, 4, 2, 5, 3, 6};
            CHECK(w->kind == GRAPH_VALUE_CONST && w->type.dim[0] == 3 && w->type.dim[1] == 2);
            CHECK(d && !memcmp(d, want, sizeof want));
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_transpose_absorb);
    }
    graph_free(g);
    graph_free(ref);

    /* linear(x, transpose(t)) without a bias -> matmul(x, t) */
    g = PARSE("graph t(%x: f32[4], %t: f32[4,6]) -> (y: f32[6]) {\n"
              "  %w: f32[6,4] = transpose(%t) {perm=[1,0]} !p0\n"
              "  %y: f32[6] = linear(%x, %w) !p1\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_transpose_absorb));
        int32_t m = find_op(g, GRAPH_OP_matmul);
        CHECK(m >= 0 && count_op(g, GRAPH_OP_transpose) == 0 && count_op(g, GRAPH_OP_linear) == 0);
        CHECK(m >= 0 && g->nodes[m].in[1] == 1 && has_provs(g, m, 1));
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_transpose_absorb);
    }
    graph_free(g);
    graph_free(ref);
}

static void test_transpose_declined(void)
{
    NO_FIRE("graph t(%a: f32[2,3,4], %b: f32[3,4,5]) -> (y: f32[3,2,5]) {\n"
            "  %at: f32[3,2,4] = transpose(%a) {perm=[1,0,2]}\n"
            "  %y: f32[3,2,5] = matmul(%at, %b)\n  return y = %y\n}\n",
            opt_pass_transpose_absorb, NULL);
    NO_FIRE("graph t(%x: f32[2,3], %t: f32[3,4], %b: f32[4]) -> (y: f32[2,4]) {\n"
            "  %w: f32[4,3] = transpose(%t) {perm=[1,0]}\n"
            "  %y: f32[2,4] = linear(%x, %w, %b)\n  return y = %y\n}\n",
            opt_pass_transpose_absorb, "linear has a bias: the transpose of its weights stays");
    NO_FIRE("graph t(%x: f32[2,3], %w: f32[3,4]) -> (y: f32[2,4]) {\n"
            "  %y: f32[2,4] = matmul(%x, %w)\n  return y = %y\n}\n",
            opt_pass_transpose_absorb, "weights are not a constant: x @ w stays a matmul");
    NO_FIRE("graph t(%x: f32[2,3]) -> (y: f32[2,4], z: f32[4,3]) {\n"
            "  %c: f32[3,4] = const @R(12)\n"
            "  %y: f32[2,4] = matmul(%x, %c)\n  %z: f32[4,3] = transpose(%c) {perm=[1,0]}\n"
            "  return y = %y\n  return z = %z\n}\n",
            opt_pass_transpose_absorb,
            "weights also read by node 1 (transpose): linear would hold them twice");
    NO_FIRE("graph t(%x: f32[3,2]) -> (y: f32[2,4]) {\n"
            "  %c: f32[3,4] = const @R(12)\n"
            "  %y: f32[2,4] = matmul(%x, %c) {transpose_a=1}\n  return y = %y\n}\n",
            opt_pass_transpose_absorb, "first operand transposed: not linear's x @ wT");
    NO_FIRE("graph t(%x: f32[2,3]) -> (y: f32[2,4], c: f32[3,4]) {\n"
            "  %c: f32[3,4] = const @R(12)\n"
            "  %y: f32[2,4] = matmul(%x, %c)\n  return y = %y\n  return c = %c\n}\n",
            opt_pass_transpose_absorb, "weights are a graph output: x @ w stays a matmul");
}

/* Weights shared by several matmuls (layers sharing parameters): every one
 * becomes a linear, all reading one transposed constant. */
static void test_transpose_shared(void)
{
    graph *g = PARSE("graph t(%x: f32[2,3]) -> (y: f32[2,3]) {\n"
                     "  %c: f32[3,3] = const [1, 2, 3, 4, 5, 6, 7, 8, 9]\n"
                     "  %h: f32[2,3] = matmul(%x, %c) !p0\n  %r: f32[2,3] = relu(%h) !p1\n"
                     "  %y: f32[2,3] = matmul(%r, %c) !p2\n  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_transpose_absorb));
        CHECK(count_op(g, GRAPH_OP_matmul) == 0 && count_op(g, GRAPH_OP_linear) == 2);
        int32_t w = -1, nlin = 0;
        for (int32_t i = 0; i < g->nnodes; i++) {
            const graph_node *n = &g->nodes[i];
            if ((n->flags & GRAPH_NODE_DEAD) || n->op != GRAPH_OP_linear)
                continue;
            CHECK_MSG(w < 0 || n->in[1] == w, "both linears read one transposed constant");
            w = n->in[1];
            nlin++;
        }
        CHECK(nlin == 2 && w >= 0);
        if (w >= 0) {
            const float *d = g->values[w].data, want[9] = {1, 4, 7, 2, 5, 8, 3, 6, 9};
            CHECK(g->values[w].kind == GRAPH_VALUE_CONST && d && !memcmp(d, want, sizeof want));
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_transpose_absorb);
    }
    graph_free(g);
    graph_free(ref);
}

/* A guarded matmul keeps its transpose; its unguarded sibling does not. */
static void test_transpose_guarded(void)
{
    graph *g = PARSE("graph t(%x: f32[2,3], %w: f32[3,4]) -> (y: f32[2,3]) {\n"
                     "  %wt: f32[4,3] = transpose(%w) {perm=[1,0]}\n"
                     "  %y: f32[2,4] = matmul(%x, %wt) {transpose_b=1}\n"
                     "  guard value %y[0] == 0 strict\n"
                     "  %z: f32[2,3] = matmul(%y, %wt)\n  return y = %z\n}\n");
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_transpose_absorb));
    CHECK_MSG(strstr(why_buf, "output is guarded: computed as traced"), "%s", why_buf);
    int32_t m = find_op(g, GRAPH_OP_matmul), l = find_op(g, GRAPH_OP_linear);
    CHECK(count_op(g, GRAPH_OP_transpose) == 1 && m >= 0 && l >= 0);
    if (m >= 0 && l >= 0) {
        const graph_matmul_attrs *at = tg_node_attrs(&g->nodes[m]);
        CHECK(at->transpose_b == 1 && g->values[g->nodes[m].in[1]].kind == GRAPH_VALUE_INTER);
        CHECK(g->nodes[l].in[1] == 1 && g->nodes[l].in[0] == g->nodes[m].out[0]);
        CHECK(g->nguards == 1 && g->guards[0].value == g->nodes[m].out[0]);
    }
    graph_free(g);
}

/* ---- horizontal ---- */

static void test_horizontal(void)
{
    graph *g = PARSE(
        "graph t(%x: f32[B,8]) -> (q: f32[B,4], k: f32[B,5], v: f32[B,6]) {\n  sym B = 3\n"
        "  %wq: f32[4,8] = const @R(32)\n  %bq: f32[4] = const @R(4)\n"
        "  %wk: f32[5,8] = const @R(40)\n  %bk: f32[5] = const @R(5)\n"
        "  %wv: f32[6,8] = const @R(48)\n  %bv: f32[6] = const @R(6)\n"
        "  %q: f32[B,4] = linear(%x, %wq, %bq) !p0\n"
        "  %k: f32[B,5] = linear(%x, %wk, %bk) !p1\n"
        "  %v: f32[B,6] = linear(%x, %wv, %bv) !p2\n"
        "  %kr: f32[B,5] = relu(%k)\n"
        "  return q = %q\n  return k = %kr\n  return v = %v\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_horizontal));
    int32_t l = find_op(g, GRAPH_OP_linear), s = find_op(g, GRAPH_OP_split);
    CHECK(count_op(g, GRAPH_OP_linear) == 1 && count_op(g, GRAPH_OP_split) == 1);
    if (l >= 0 && s >= 0) {
        const graph_node *ln = &g->nodes[l], *sn = &g->nodes[s];
        const graph_split_attrs *at = tg_node_attrs(sn);
        const graph_value *w = &g->values[ln->in[1]];
        CHECK(ln->nin == 3 && w->type.dim[0] == 15 && w->type.dim[1] == 8);
        CHECK(at->axis == 1 && at->sizes.n == 3 && at->sizes.v[0] == 4 && at->sizes.v[1] == 5 &&
              at->sizes.v[2] == 6 && sn->nout == 3 && sn->in[0] == ln->out[0]);
        CHECK_MSG(has_provs(g, l, 3) && has_provs(g, s, 3), "both carry p0, p1, p2");
        CHECK(g->outputs[0].value == sn->out[0] && g->outputs[2].value == sn->out[2]);
        CHECK_MSG(g->values[sn->out[1]].dyn == 1u, "split outputs keep the dynamic batch");
    }
    check_rest(__FILE__, __LINE__, g, ref, &opt_pass_horizontal);
    graph_free(g);
    graph_free(ref);
}

/* Two without a bias fuse, the one with a bias stays; a 1-D x. */
static void test_horizontal_mixed(void)
{
    graph *g = PARSE("graph t(%x: f32[8]) -> (a: f32[3], b: f32[2], c: f32[4]) {\n"
                     "  %wa: f32[3,8] = const @R(24)\n  %wb: f32[2,8] = const @R(16)\n"
                     "  %wc: f32[4,8] = const @R(32)\n  %bc: f32[4] = const @R(4)\n"
                     "  %a: f32[3] = linear(%x, %wa) !p0\n"
                     "  %c: f32[4] = linear(%x, %wc, %bc) !p2\n"
                     "  %b: f32[2] = linear(%x, %wb) !p1\n"
                     "  return a = %a\n  return b = %b\n  return c = %c\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_horizontal));
    CHECK_MSG(strstr(why_buf, "but has a bias"), "explained: %s", why_buf);
    CHECK(count_op(g, GRAPH_OP_linear) == 2 && count_op(g, GRAPH_OP_split) == 1);
    int32_t s = find_op(g, GRAPH_OP_split);
    CHECK(s >= 0 && ((const graph_split_attrs *)tg_node_attrs(&g->nodes[s]))->axis == 0);
    check_rest(__FILE__, __LINE__, g, ref, &opt_pass_horizontal);
    graph_free(g);
    graph_free(ref);
}

static void test_horizontal_declined(void)
{
    NO_FIRE("graph t(%x: f32[2,8]) -> (a: f32[2,3], b: f32[2,2]) {\n"
            "  %wa: f32[3,8] = const @R(24)\n  %wb: f32[2,8] = param @R(16)\n"
            "  %a: f32[2,3] = linear(%x, %wa)\n  %b: f32[2,2] = linear(%x, %wb)\n"
            "  return a = %a\n  return b = %b\n}\n",
            opt_pass_horizontal, NULL);
    NO_FIRE("graph t(%x: f32[2,8], %z: f32[2,8]) -> (a: f32[2,3], b: f32[2,2]) {\n"
            "  %wa: f32[3,8] = const @R(24)\n  %wb: f32[2,8] = const @R(16)\n"
            "  %a: f32[2,3] = linear(%x, %wa)\n  %b: f32[2,2] = linear(%z, %wb)\n"
            "  return a = %a\n  return b = %b\n}\n",
            opt_pass_horizontal, NULL);
    NO_FIRE("graph t(%x: f32[2,8]) -> (a: f32[2,3], b: f32[2,2]) {\n"
            "  %wa: f32[3,8] = const @R(24)\n  %wb: f32[2,8] = const @R(16)\n"
            "  %a: f32[2,3] = linear(%x, %wa)\n  guard value %a[0] == 0 strict\n"
            "  %b: f32[2,2] = linear(%x, %wb)\n"
            "  return a = %a\n  return b = %b\n}\n",
            opt_pass_horizontal, "output is guarded: computed as traced");
}

int main(void)
{
    long live = eager_live_tensors();
    test_conv_bn();
    test_conv_bn_variants();
    test_conv_bn_declined();
    test_conv_taps();
    test_conv_split();
    test_transpose_matmul();
    test_transpose_linear();
    test_transpose_declined();
    test_transpose_shared();
    test_transpose_guarded();
    test_horizontal();
    test_horizontal_mixed();
    test_horizontal_declined();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
