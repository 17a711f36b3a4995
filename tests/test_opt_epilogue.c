/*
 * test_opt_epilogue.c - the -O2 epilogue pass (linear / conv2d followed
 * by a bias add, a residual add and activations -> linear_ep / conv2d_ep),
 * then the shared test models through opt_optimize -O2: the conv block
 * ends up as conv2d_ep with its batch_norm folded, and every optimized
 * model matches the original in the interpreter and replayed (prepared
 * kernels), at the traced and another batch; -O2 twice changes nothing.
 *
 * Rule tests as in test_opt_fuse.c: text IR in (opt_fuse_util.h),
 * structure, numerics <= 1e-4, idempotence, declined cases and why.
 */
#include "models.h"
#include "opt_fuse_util.h"
#include "replay/replay.h"
#include "tracer/trace.h"
#include "graph/graph_impl.h"

/* ---- epilogue ---- */

/* The single node of op, with post list want (n entries) and nin inputs. */
static int32_t check_ep(int line, const graph *g, graph_op op, const int64_t *want, int n,
                        int nin)
{
    int32_t e = find_op(g, op);
    check_report(e >= 0 && count_op(g, op) == 1, __FILE__, line, "one %s", graph_ops[op].name);
    if (e < 0)
        return e;
    const graph_ints *post = op == GRAPH_OP_linear_ep
                                 ? &((const graph_linear_ep_attrs *)tg_node_attrs(&g->nodes[e]))->post
                                 : &((const graph_conv2d_ep_attrs *)tg_node_attrs(&g->nodes[e]))->post;
    int ok = post->n == n && g->nodes[e].nin == nin;
    for (int i = 0; ok && i < n; i++)
        ok = post->v[i] == want[i];
    check_report(ok, __FILE__, line, "post list and %d inputs (got %d steps, %d inputs)", nin,
                 (int)post->n, (int)g->nodes[e].nin);
    return e;
}
#define CHECK_EP(g, op, nin, ...)                                                 \
    check_ep(__LINE__, (g), (op), (int64_t[]){__VA_ARGS__},                      \
             (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (nin))

static void test_epilogue_linear(void)
{
    /* bias add (a [N] const into a linear without bias), residual, gelu;
     * the residual has the dynamic batch like the output; the result is
     * a graph output */
    graph *g = PARSE("graph t(%x: f32[B,8], %r: f32[B,4]) -> (y: f32[B,4]) {\n  sym B = 3\n"
                     "  %w: f32[4,8] = const @R(32)\n  %b: f32[4] = const @R(4)\n"
                     "  %l: f32[B,4] = linear(%x, %w) !p0\n"
                     "  %lb: f32[B,4] = add(%b, %l) !p1\n"
                     "  %s: f32[B,4] = add(%lb, %r) !p2\n"
                     "  %y: f32[B,4] = gelu(%s) !p3\n  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_epilogue));
    int32_t e = CHECK_EP(g, GRAPH_OP_linear_ep, 4, GRAPH_POST_ADD, GRAPH_POST_GELU);
    CHECK(g->nnodes == 1 && count_op(g, GRAPH_OP_add) == 0);
    if (e >= 0) {
        const graph_node *n = &g->nodes[e];
        CHECK(n->in[0] == 0 && n->in[3] == 1 && n->in[2] == 3 && n->prov[0] == 0 &&
              has_provs(g, e, 4));
        CHECK(g->outputs[0].value == n->out[0]);
    }
    check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    graph_free(g);
    graph_free(ref);

    /* only a bias: a param [N] becomes linear's bias input directly */
    g = PARSE("graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n"
              "  %w: f32[4,8] = param @R(32)\n  %b: f32[4] = param @R(4)\n"
              "  %l: f32[2,4] = linear(%x, %w) !p0\n"
              "  %y: f32[2,4] = add(%l, %b) !p1\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        int32_t l = find_op(g, GRAPH_OP_linear);
        CHECK(g->nnodes == 1 && l >= 0 && g->nodes[l].nin == 3 && g->nodes[l].in[2] == 2);
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);

    /* a one-element constant (a zero bias folded to a splat) is a bias:
     * summed with linear's own constant bias, then the gelu fuses; a
     * [1,1] one into a conv's [C] bias; the values as the unfused ops */
    g = PARSE("graph t(%x: f32[2,3,8]) -> (y: f32[2,3,4]) {\n"
              "  %w: f32[4,8] = const @R(32)\n  %b: f32[4] = const @R(4)\n"
              "  %c: f32[] = const [0.25]\n"
              "  %l: f32[2,3,4] = linear(%x, %w, %b) !p0\n"
              "  %lb: f32[2,3,4] = add(%c, %l) !p1\n"
              "  %y: f32[2,3,4] = gelu(%lb) !p2\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        int32_t e = CHECK_EP(g, GRAPH_OP_linear_ep, 3, GRAPH_POST_GELU);
        CHECK(count_op(g, GRAPH_OP_add) == 0);
        const graph_type *bt = e >= 0 ? &g->values[g->nodes[e].in[2]].type : NULL;
        CHECK_MSG(bt && bt->ndim == 1 && bt->dim[0] == 4, "the bias is [4]");
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);
    g = PARSE("graph t(%x: f32[1,2,5,5]) -> (y: f32[1,3,3,3]) {\n"
              "  %w: f32[3,2,3,3] = const @R(54)\n  %b: f32[3] = const @R(3)\n"
              "  %c: f32[1,1] = const [-0.5]\n"
              "  %l: f32[1,3,3,3] = conv2d(%x, %w, %b) !p0\n"
              "  %lb: f32[1,3,3,3] = add(%l, %c) !p1\n"
              "  %y: f32[1,3,3,3] = relu(%lb) !p2\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        CHECK_EP(g, GRAPH_OP_conv2d_ep, 3, GRAPH_POST_RELU);
        CHECK(count_op(g, GRAPH_OP_add) == 0);
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);
    /* not a bias: a one-element value that is not a constant */
    NO_FIRE("graph t(%x: f32[2,8], %c: f32[]) -> (y: f32[2,4]) {\n"
            "  %w: f32[4,8] = const @R(32)\n"
            "  %l: f32[2,4] = linear(%x, %w) !p0\n"
            "  %y: f32[2,4] = add(%l, %c) !p1\n  return y = %y\n}\n" PROV,
            opt_pass_epilogue, NULL);

    /* a linear_ep grows: its relu is followed by a tanh and a sigmoid */
    g = PARSE("graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n"
              "  %w: f32[4,8] = const @R(32)\n  %b: f32[4] = const @R(4)\n"
              "  %l: f32[2,4] = linear_ep(%x, %w, %b) {post=[2]} !p0\n"
              "  %t: f32[2,4] = tanh(%l) !p1\n"
              "  %y: f32[2,4] = sigmoid(%t) !p2\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        CHECK_EP(g, GRAPH_OP_linear_ep, 3, GRAPH_POST_RELU, GRAPH_POST_TANH, GRAPH_POST_SIGMOID);
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);
}

static void test_epilogue_conv(void)
{
    /* conv without bias + [1,C,1,1] constant + residual + leaky twice + silu */
    graph *g = PARSE("graph t(%x: f32[2,3,6,6], %r: f32[2,4,6,6]) -> (y: f32[2,4,6,6]) {\n"
                     "  %w: f32[4,3,3,3] = const @R(108)\n  %b: f32[1,4,1,1] = const @R(4)\n"
                     "  %c: f32[2,4,6,6] = conv2d(%x, %w) {padding=[1]} !p0\n"
                     "  %cb: f32[2,4,6,6] = add(%c, %b) !p1\n"
                     "  %s: f32[2,4,6,6] = add(%r, %cb) !p2\n"
                     "  %l1: f32[2,4,6,6] = leaky_relu(%s) {alpha=0.1} !p3\n"
                     "  %l2: f32[2,4,6,6] = leaky_relu(%l1) {alpha=0.1}\n"
                     "  %y: f32[2,4,6,6] = silu(%l2)\n  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (!g)
        return;
    CHECK(RUN(g, opt_pass_epilogue));
    int32_t e = CHECK_EP(g, GRAPH_OP_conv2d_ep, 4, GRAPH_POST_ADD, GRAPH_POST_LEAKY_RELU,
                         GRAPH_POST_LEAKY_RELU, GRAPH_POST_SILU);
    if (e >= 0) {
        const graph_conv2d_ep_attrs *at = tg_node_attrs(&g->nodes[e]);
        const graph_value *b = &g->values[g->nodes[e].in[2]];
        CHECK(at->alpha == 0.1f && at->padding.n == 1 && at->padding.v[0] == 1);
        CHECK(b->kind == GRAPH_VALUE_CONST && b->type.ndim == 1 && b->type.dim[0] == 4);
        CHECK(g->nodes[e].in[3] == 1 && has_provs(g, e, 4) && g->nnodes == 1);
    }
    check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    graph_free(g);
    graph_free(ref);

    /* conv with a bias + relu: zeros are not needed, the bias is kept */
    g = PARSE("graph t(%x: f32[1,2,5,5]) -> (y: f32[1,3,3,3]) {\n"
              "  %w: f32[3,2,3,3] = const @R(54)\n  %b: f32[3] = const @R(3)\n"
              "  %c: f32[1,3,3,3] = conv2d(%x, %w, %b) !p0\n"
              "  %y: f32[1,3,3,3] = relu(%c) !p1\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        e = CHECK_EP(g, GRAPH_OP_conv2d_ep, 3, GRAPH_POST_RELU);
        CHECK(e >= 0 && g->nodes[e].in[2] == 2);
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);

    /* a linear without bias + sigmoid gets a zeros bias */
    g = PARSE("graph t(%x: f32[3,8]) -> (y: f32[3,4]) {\n"
              "  %w: f32[4,8] = const @R(32)\n"
              "  %l: f32[3,4] = linear(%x, %w)\n"
              "  %y: f32[3,4] = sigmoid(%l)\n  return y = %y\n}\n");
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        e = CHECK_EP(g, GRAPH_OP_linear_ep, 3, GRAPH_POST_SIGMOID);
        if (e >= 0) {
            const float *z = g->values[g->nodes[e].in[2]].data;
            CHECK(z && z[0] == 0 && z[3] == 0);
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);
}

/* ReLU6 after a conv, hardtanh after a linear: CLIP steps with their
 * bounds; a second clip with the same bounds joins. */
static void test_epilogue_clip(void)
{
    graph *g = PARSE("graph t(%x: f32[1,3,6,6]) -> (y: f32[1,4,4,4]) {\n"
                     "  %w: f32[4,3,3,3] = const @R(108)\n  %b: f32[4] = const @R(4)\n"
                     "  %c: f32[1,4,4,4] = conv2d(%x, %w, %b) !p0\n"
                     "  %y: f32[1,4,4,4] = clip(%c) {min=0, max=6} !p1\n"
                     "  return y = %y\n}\n" PROV);
    graph *ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        int32_t e = CHECK_EP(g, GRAPH_OP_conv2d_ep, 3, GRAPH_POST_CLIP);
        if (e >= 0) {
            const graph_conv2d_ep_attrs *at = tg_node_attrs(&g->nodes[e]);
            CHECK(at->clip_min == 0 && !signbit(at->clip_min) && at->clip_max == 6);
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);
    g = PARSE("graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n"
              "  %l: f32[2,4] = linear(%x, %w) !p0\n  %a: f32[2,4] = relu(%l) !p1\n"
              "  %h: f32[2,4] = clip(%a) {min=-1, max=1} !p2\n"
              "  %y: f32[2,4] = clip(%h) {min=-1, max=1} !p3\n  return y = %y\n}\n" PROV);
    ref = g ? graph_clone(g) : NULL;
    if (g) {
        CHECK(RUN(g, opt_pass_epilogue));
        int32_t e = CHECK_EP(g, GRAPH_OP_linear_ep, 3, GRAPH_POST_RELU, GRAPH_POST_CLIP,
                             GRAPH_POST_CLIP);
        if (e >= 0) {
            const graph_linear_ep_attrs *at = tg_node_attrs(&g->nodes[e]);
            CHECK(at->clip_min == -1 && at->clip_max == 1);
        }
        check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
    }
    graph_free(g);
    graph_free(ref);
}

/* hardsigmoid / hardswish written as several ops, in the forms ONNX's
 * HardSigmoid / HardSwish import as and PyTorch's relu6(x + 3) / 6: one
 * step each, the chain going on after it. */
static void test_epilogue_hard(void)
{
#define CONV_HEAD "graph t(%x: f32[1,3,6,6]) -> (y: f32[1,4,4,4]) {\n" \
                  "  %w: f32[4,3,3,3] = const @R(108)\n  %b: f32[4] = const @R(4)\n" \
                  "  %k6: f32[] = const [0.16666667]\n  %half: f32[] = const [0.5]\n" \
                  "  %three: f32[1,1,1,1] = const [3]\n  %six: f32[] = const [6]\n" \
                  "  %c: f32[1,4,4,4] = conv2d(%x, %w, %b) !p0\n"
#define LIN_HEAD "graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n" \
                 "  %k6: f32[] = const [0.16666667]\n  %half: f32[] = const [0.5]\n" \
                 "  %three: f32[] = const [3]\n  %six: f32[] = const [6]\n" \
                 "  %c: f32[2,4] = linear(%x, %w) !p0\n"
#define T4 "f32[1,4,4,4]"
#define T2 "f32[2,4]"
    static const struct {
        int line, conv;
        const char *text;
        int64_t post[2];
        int npost;
    } cases[] = {
        {__LINE__, 1, /* ONNX HardSwish */
         CONV_HEAD "  %m: " T4 " = mul(%c, %k6) !p1\n  %a: " T4 " = add(%m, %half) !p1\n"
         "  %h: " T4 " = clip(%a) {min=0, max=1} !p1\n  %y: " T4 " = mul(%c, %h) !p1\n"
         "  return y = %y\n}\n" PROV,
         {GRAPH_POST_HARDSWISH}, 1},
        {__LINE__, 1, /* relu6(x + 3) / 6 */
         CONV_HEAD "  %a: " T4 " = add(%c, %three) !p1\n"
         "  %r: " T4 " = clip(%a) {min=0, max=6} !p1\n  %y: " T4 " = div(%r, %six) !p1\n"
         "  return y = %y\n}\n" PROV,
         {GRAPH_POST_HARDSIGMOID}, 1},
        {__LINE__, 0, /* h * x, h from x / 6 */
         LIN_HEAD "  %m: " T2 " = div(%c, %six) !p1\n  %a: " T2 " = add(%half, %m) !p1\n"
         "  %h: " T2 " = clip(%a) {min=0, max=1} !p1\n  %s: " T2 " = mul(%h, %c) !p1\n"
         "  %y: " T2 " = tanh(%s) !p2\n  return y = %y\n}\n" PROV,
         {GRAPH_POST_HARDSWISH, GRAPH_POST_TANH}, 2},
        {__LINE__, 0, /* (3 + x) clipped, times 1/6, then relu */
         LIN_HEAD "  %a: " T2 " = add(%three, %c) !p1\n"
         "  %r: " T2 " = clip(%a) {min=0, max=6} !p1\n  %h: " T2 " = mul(%k6, %r) !p1\n"
         "  %y: " T2 " = relu(%h) !p2\n  return y = %y\n}\n" PROV,
         {GRAPH_POST_HARDSIGMOID, GRAPH_POST_RELU}, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        graph *g = parse_at(__FILE__, cases[i].line, cases[i].text), *ref = g ? graph_clone(g) : NULL;
        if (!g)
            continue;
        check_report(run_pass_at(__FILE__, cases[i].line, g, &opt_pass_epilogue, NULL, 0) &&
                         graph_live_nodes(g) == 1,
                     __FILE__, cases[i].line, "fused into one node (%d live)",
                     (int)graph_live_nodes(g));
        int32_t e = find_op(g, cases[i].conv ? GRAPH_OP_conv2d_ep : GRAPH_OP_linear_ep);
        const graph_ints *post = e < 0 ? NULL
                                 : cases[i].conv
                                     ? &((const graph_conv2d_ep_attrs *)tg_node_attrs(
                                            &g->nodes[e]))->post
                                     : &((const graph_linear_ep_attrs *)tg_node_attrs(
                                            &g->nodes[e]))->post;
        check_report(post && post->n == cases[i].npost &&
                         !memcmp(post->v, cases[i].post, sizeof(int64_t) * (size_t)post->n),
                     __FILE__, cases[i].line, "post steps as expected");
        check_rest(__FILE__, cases[i].line, g, ref, &opt_pass_epilogue);
        graph_free(g);
        graph_free(ref);
    }
    /* not PyTorch's slope (ONNX's default HardSigmoid alpha 0.2): stays */
    NO_FIRE(LIN_HEAD "  %k: f32[] = const [0.2]\n  %m: " T2 " = mul(%c, %k)\n"
            "  %a: " T2 " = add(%m, %half)\n  %y: " T2 " = clip(%a) {min=0, max=1}\n"
            "  return y = %y\n}\n" PROV,
            opt_pass_epilogue, NULL);
    /* a -0 bound: clip gives -0 below it, the step +0: no hardsigmoid
     * step (the + 3, a one-element constant, still becomes the bias, and
     * the clip a clip step) */
    {
        graph *g = PARSE(LIN_HEAD "  %y: " T2 " = add(%c, %three)\n"
                         "  %r: " T2 " = clip(%y) {min=-0, max=6}\n  %h: " T2
                         " = div(%r, %six)\n  return y = %h\n}\n" PROV);
        graph *ref = g ? graph_clone(g) : NULL;
        if (g) {
            CHECK(RUN(g, opt_pass_epilogue));
            int32_t e = find_op(g, GRAPH_OP_linear_ep);
            const graph_ints *post =
                e < 0 ? NULL : &((const graph_linear_ep_attrs *)tg_node_attrs(&g->nodes[e]))->post;
            CHECK_MSG(post && post->n == 1 && post->v[0] == GRAPH_POST_CLIP,
                      "the -0 clip is a clip step, not a hardsigmoid");
            CHECK(count_op(g, GRAPH_OP_add) == 0 && count_op(g, GRAPH_OP_div) == 1);
            check_rest(__FILE__, __LINE__, g, ref, &opt_pass_epilogue);
        }
        graph_free(g);
        graph_free(ref);
    }
    /* h also a graph output: the hardswish cannot swallow it */
    NO_FIRE("graph t(%x: f32[2,8]) -> (y: f32[2,4], h: f32[2,4]) {\n"
            "  %w: f32[4,8] = const @R(32)\n  %k6: f32[] = const [0.16666667]\n"
            "  %half: f32[] = const [0.5]\n  %c: f32[2,4] = linear(%x, %w)\n"
            "  %m: " T2 " = mul(%c, %k6)\n  %a: " T2 " = add(%m, %half)\n"
            "  %h: " T2 " = clip(%a) {min=0, max=1}\n  %y: " T2 " = mul(%c, %h)\n"
            "  return y = %y\n  return h = %h\n}\n",
            opt_pass_epilogue, "hardswish not fused: its hardsigmoid is also read elsewhere");
#undef CONV_HEAD
#undef LIN_HEAD
#undef T4
#undef T2
}

/* Chains that stop early, with the reason. */
static void test_epilogue_partial(void)
{
    static const struct {
        int line;
        const char *text;
        int nodes; /* live nodes after */
        const char *why;
    } cases[] = {
        {__LINE__,
         "graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n"
         "  %l: f32[2,4] = linear(%x, %w)\n  %a: f32[2,4] = leaky_relu(%l) {alpha=0.1}\n"
         "  %y: f32[2,4] = leaky_relu(%a) {alpha=0.2}\n  return y = %y\n}\n",
         2, "leaky_relu slope 0.2 differs from the earlier 0.1"},
        {__LINE__,
         "graph t(%x: f32[2,8], %r: f32[2,4]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n"
         "  %l: f32[2,4] = linear(%x, %w)\n  %a: f32[2,4] = add(%l, %r)\n"
         "  %y: f32[2,4] = add(%a, %r)\n  return y = %y\n}\n",
         2, "second residual add: one residual slot"},
        {__LINE__,
         "graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n"
         "  %l: f32[2,4] = linear(%x, %w)\n  %a: f32[2,4] = relu(%l)\n"
         "  %y: f32[2,4] = abs(%a)\n  return y = %y\n}\n",
         2, "activation abs not supported"},
        {__LINE__,
         "graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n"
         "  %l: f32[2,4] = linear(%x, %w)\n  %a: f32[2,4] = clip(%l) {min=0, max=6}\n"
         "  %y: f32[2,4] = clip(%a) {min=-1, max=1}\n  return y = %y\n}\n",
         2, "clip bounds [-1, 1] differ from the earlier [0, 6]"},
        {__LINE__,
         "graph t(%x: f32[2,8]) -> (y: f32[2,4], a: f32[2,4]) {\n"
         "  %w: f32[4,8] = const @R(32)\n"
         "  %l: f32[2,4] = linear(%x, %w)\n  %a: f32[2,4] = relu(%l)\n"
         "  %y: f32[2,4] = tanh(%a)\n  return y = %y\n  return a = %a\n}\n",
         2, "its input is a graph output or guarded"},
        {__LINE__,
         "graph t(%x: f32[2,8]) -> (y: f32[2,4]) {\n  %w: f32[4,8] = const @R(32)\n"
         "  %l: f32[2,4] = linear(%x, %w)\n  %a: f32[2,4] = relu(%l)\n"
         "  %y: f32[2,4] = tanh(%a)\n  guard value %y[1] == 0 off\n  return y = %y\n}\n",
         2, "output is guarded: computed as traced"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        graph *g = parse_at(__FILE__, cases[i].line, cases[i].text), *ref = g ? graph_clone(g) : NULL;
        if (!g)
            continue;
        char why[2048];
        int changed = run_pass_at(__FILE__, cases[i].line, g, &opt_pass_epilogue, why, sizeof why);
        check_report(changed && graph_live_nodes(g) == cases[i].nodes &&
                         find_op(g, GRAPH_OP_linear_ep) >= 0,
                     __FILE__, cases[i].line, "fused up to the stop (%d nodes)",
                     (int)graph_live_nodes(g));
        check_report(strstr(why, cases[i].why) != NULL, __FILE__, cases[i].line,
                     "explained \"%s\", want \"%s\"", why, cases[i].why);
        check_rest(__FILE__, cases[i].line, g, ref, &opt_pass_epilogue);
        graph_free(g);
        graph_free(ref);
    }
}

static void test_epilogue_declined(void)
{
    NO_FIRE("graph t(%x: f32[1,2,4,4]) -> (y: f32[1,2,4,4]) {\n"
            "  %w: f32[2,2,1,1] = const @R(4)\n  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %r: f32[1,2,4,4] = relu(%c)\n  %y: f32[1,2,4,4] = add(%r, %c)\n"
            "  return y = %y\n}\n",
            opt_pass_epilogue, "conv output has 2 users");
    NO_FIRE("graph t(%x: f32[1,2,4,4], %s: f32[2,1,1]) -> (y: f32[1,2,4,4]) {\n"
            "  %w: f32[2,2,1,1] = const @R(4)\n  %c: f32[1,2,4,4] = conv2d(%x, %w)\n"
            "  %y: f32[1,2,4,4] = add(%c, %s)\n  return y = %y\n}\n",
            opt_pass_epilogue, "residual shape differs ([2,1,1] vs [1,2,4,4])");
    NO_FIRE("graph t(%x: f32[2,3], %r: f32[4,2,4]) -> (y: f32[4,2,4]) {\n"
            "  %w: f32[4,3] = const @R(12)\n  %l: f32[2,4] = linear(%x, %w)\n"
            "  %y: f32[4,2,4] = add(%l, %r)\n  return y = %y\n}\n",
            opt_pass_epilogue, "add broadcasts the linear output to [4,2,4]");
    NO_FIRE("graph t(%x: f32[B,3], %r: f32[2,4]) -> (y: f32[B,4]) {\n  sym B = 2\n"
            "  %w: f32[4,3] = const @R(12)\n  %l: f32[B,4] = linear(%x, %w)\n"
            "  %y: f32[B,4] = add(%l, %r)\n  return y = %y\n}\n",
            opt_pass_epilogue, "residual dims are not dynamic like the linear output's");
    NO_FIRE("graph t(%x: f32[2,3]) -> (y: f32[2,4], l: f32[2,4]) {\n"
            "  %w: f32[4,3] = const @R(12)\n  %l: f32[2,4] = linear(%x, %w)\n"
            "  %y: f32[2,4] = relu(%l)\n  return y = %y\n  return l = %l\n}\n",
            opt_pass_epilogue, "its input is a graph output or guarded");
    NO_FIRE("graph t(%x: f32[2,3]) -> (y: f32[2,4]) {\n"
            "  %w: f32[4,3] = const @R(12)\n  %l: f32[2,4] = linear(%x, %w)\n"
            "  %a: f32[2,4] = relu(%l)\n  guard value %a[1] == 0 strict\n"
            "  %y: f32[2,4] = tanh(%a)\n  return y = %y\n}\n",
            opt_pass_epilogue, "output is guarded: computed as traced");
    NO_FIRE("graph t(%x: f32[2,3]) -> (y: f32[2,4]) {\n"
            "  %w: f32[4,3] = const @R(12)\n  %l: f32[2,4] = linear(%x, %w)\n"
            "  %y: f32[2,4] = exp(%l)\n  return y = %y\n}\n",
            opt_pass_epilogue, "activation exp not supported");
    NO_FIRE("graph t(%x: f32[2,3], %b: f32[4]) -> (y: f32[2,4]) {\n"
            "  %w: f32[4,3] = const @R(12)\n  %cb: f32[4] = const @R(4)\n"
            "  %l: f32[2,4] = linear(%x, %w, %cb)\n"
            "  %y: f32[2,4] = add(%l, %b)\n  return y = %y\n}\n",
            opt_pass_epilogue, "residual shape differs ([4] vs [2,4])");
}

/* ---- the test models through -O2 ---- */

static void test_models(void)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        model m = model_make(k);
        eager_tensor *x = model_input(&m, m.input_shape.v[0], 900 + (uint64_t)k);
        eager_tensor *x7 = model_input(&m, 7, 950 + (uint64_t)k);
        graph *g = model_trace(&m, x), *ref = g ? graph_clone(g) : NULL;
        opt_report rep;
        char err[512] = "";
        CHECK_MSG(g && opt_optimize(g, NULL, &rep, err, sizeof err) == TG_OK, "%s -O2: %s",
                  m.name, err);
        if (g && k == MODEL_CONV) {
            int32_t e = find_op(g, GRAPH_OP_conv2d_ep);
            CHECK_MSG(count_op(g, GRAPH_OP_batch_norm) == 0 && count_op(g, GRAPH_OP_relu) == 0,
                      "conv block: batch_norm folded, relu fused");
            CHECK_MSG(e >= 0 && g->nodes[e].nin == 3, "conv block uses conv2d_ep");
            if (e >= 0) {
                const graph_conv2d_ep_attrs *at = tg_node_attrs(&g->nodes[e]);
                CHECK(at->post.n == 1 && at->post.v[0] == GRAPH_POST_RELU);
                CHECK_MSG(g->nodes[e].nprov >= 3, "conv2d_ep keeps conv, bn, relu provenance");
            }
        }
        if (g && k == MODEL_MLP)
            CHECK_MSG(count_op(g, GRAPH_OP_linear_ep) == 1, "mlp: linear + relu fused");
        if (g && k == MODEL_ATTENTION)
            CHECK_MSG(count_op(g, GRAPH_OP_linear_ep) == 1, "attention: out proj + residual");
        for (int b = 0; g && b < 2; b++) {
            double e = compare(g, ref, 40 + (uint64_t)b);
            CHECK_MSG(e >= 0 && e <= 1e-4, "%s -O2 vs original: normalized error %g", m.name, e);
            e = replay_error(g, ref, b ? x7 : x);
            CHECK_MSG(e >= 0 && e <= 1e-4, "%s -O2 replayed (batch %d): error %g", m.name,
                      b ? 7 : (int)m.input_shape.v[0], e);
        }
        /* idempotent: a second -O2 changes nothing */
        char *once = g ? graph_print_str(g, NULL, NULL) : NULL;
        CHECK(g && opt_optimize(g, NULL, &rep, err, sizeof err) == TG_OK);
        char *twice = g ? graph_print_str(g, NULL, NULL) : NULL;
        CHECK_MSG(once && twice && !strcmp(once, twice), "%s: -O2 twice == once", m.name);
        free(once);
        free(twice);
        graph_free(g);
        graph_free(ref);
        eager_release(x);
        eager_release(x7);
        model_free(&m);
    }
}

int main(void)
{
    long live = eager_live_tensors();
    test_epilogue_linear();
    test_epilogue_conv();
    test_epilogue_clip();
    test_epilogue_hard();
    test_epilogue_partial();
    test_epilogue_declined();
    test_models();
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors", eager_live_tensors() - live);
    return check_done();
}
