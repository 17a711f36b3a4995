/*
 * onnx_read_rnn.c - the ONNX recurrent ops RNN, GRU and LSTM, unrolled
 * over the sequence into tracegraph's own ops (linear, slice, add, mul,
 * sigmoid, tanh, relu, clip, concat), by the equations of the ONNX spec.
 * The sequence length is fixed by the model (a dynamic one is refused,
 * and so is one past RNN_MAX_STEPS: each step is some 30 nodes); the
 * batch may be dynamic.
 *
 * Per direction d (forward, reverse, or both for bidirectional) and gate
 * count G (RNN 1, GRU 3: z r h, LSTM 4: i o f c):
 *   xp = linear(X, W[d], b)          [S, B, G*H], once for every step
 *   per step t: rp = linear(H, R[d]) [B, G*H], and the gates as the spec
 *   writes them, each a slice of xp[t] + rp
 * b is Wb + Rb, except GRU's Rbh with linear_before_reset (it is added
 * inside the reset product, as the spec says).  An absent initial_h /
 * initial_c is zeros, so the first step's recurrent terms are left out
 * rather than computed on zeros.
 *
 * W, R, B and the peepholes P must be constants (as a model holds its
 * weights); the weights enter the graph as constants.  Refused with
 * UNSUPPORTED, naming the reason: sequence_lens shorter than the
 * sequence, LSTM input_forget, activations other than Sigmoid, Tanh and
 * Relu, activation_alpha / _beta.
 */
#include <stdlib.h>
#include <string.h>

#include "../../graph/alloc.h"
#include "onnx_read_impl.h"
#include "../../graph/graph_impl.h"

enum { RNN_MAX_GATES = 4, RNN_MAX_STEPS = 4096 };

typedef struct rnn {
    onnx_reader *r;
    int gates;               /* G */
    int lstm, gru, lbr;      /* kind; GRU's linear_before_reset */
    int64_t h, in, seq;      /* hidden, input size, sequence length */
    graph_op act[3];         /* f, g, h of the spec (per direction, the same) */
    int nact;
    float clip;              /* 0: none */
    const float *w, *rw, *b, *p; /* constants' data (b, p may be NULL) */
} rnn;

static tg_status add1(rnn *n, graph_op op, int32_t a, int32_t b, const void *attrs, int32_t *y)
{
    int32_t in[2] = {a, b};
    return onnx_add(n->r, op, in, b < 0 ? 1 : 2, attrs, y, 1);
}

static tg_status squeeze0(rnn *n, int32_t x, int32_t *y)
{
    graph_squeeze_attrs a;
    memset(&a, 0, sizeof a);
    a.axes = (graph_ints){1, {0}};
    return onnx_add(n->r, GRAPH_OP_squeeze, &x, 1, &a, y, 1);
}

static tg_status unsqueeze(rnn *n, int32_t x, int ax, int32_t *y)
{
    graph_unsqueeze_attrs a;
    memset(&a, 0, sizeof a);
    a.axes = (graph_ints){1, {ax}};
    return onnx_add(n->r, GRAPH_OP_unsqueeze, &x, 1, &a, y, 1);
}

static tg_status concat(rnn *n, const int32_t *in, int k, int ax, int32_t *y)
{
    if (k == 1) {
        *y = in[0];
        return TG_OK;
    }
    graph_concat_attrs a = {ax};
    return onnx_add(n->r, GRAPH_OP_concat, in, k, &a, y, 1);
}

/* act(clip(x)) (the spec clips every activation's input). */
static tg_status activate(rnn *n, graph_op act, int32_t x, int32_t *y)
{
    tg_status st = TG_OK;
    if (n->clip > 0) {
        graph_clip_attrs c = {-n->clip, n->clip};
        st = add1(n, GRAPH_OP_clip, x, -1, &c, &x);
    }
    return st == TG_OK ? add1(n, act, x, -1, NULL, y) : st;
}

/* A constant [rows, cols] from data. */
static tg_status matrix(rnn *n, const float *data, int64_t rows, int64_t cols, int32_t *v)
{
    graph_type t = {GRAPH_F32, cols ? 2 : 1, {rows, cols}};
    return onnx_const_value(n->r, &t, data, v);
}

/* a + b, where a value < 0 is zero (returns the other). */
static tg_status add_opt(rnn *n, int32_t a, int32_t b, int32_t *y)
{
    if (a < 0 || b < 0) {
        *y = a < 0 ? b : a;
        return TG_OK;
    }
    return add1(n, GRAPH_OP_add, a, b, NULL, y);
}

/*
 * One direction: its outputs H_t for t = 0..S-1 (in time order) into
 * hs[], the last H and C into *hl, *cl.  x: [S, B, I]; h0, c0: [B, H]
 * or -1 (zeros).
 */
static tg_status direction(rnn *n, int d, int reverse, int32_t x, int32_t h0, int32_t c0,
                           int32_t *hs, int32_t *hl, int32_t *cl)
{
    int64_t gh = n->gates * n->h, H = n->h;
    int32_t w, rw, xb, rb = -1, xp, p[3] = {-1, -1, -1};
    float *bias = tg_calloc((size_t)(2 * gh + 1), sizeof *bias), *rbias = bias + gh;
    if (!bias)
        return onnx_fail(n->r, TG_ERR_NOMEM, "out of memory");
    int rb_used = 0;
    for (int64_t k = 0; n->b && k < gh; k++) {
        const float *wb = n->b + (size_t)d * 2 * gh, *bb = wb + gh;
        if (n->gru && n->lbr && k >= 2 * H) { /* Rbh: inside the reset product */
            bias[k] = wb[k];
            rbias[k] = bb[k];
            rb_used = 1;
        } else {
            bias[k] = wb[k] + bb[k];
        }
    }
    tg_status st = matrix(n, n->w + (size_t)d * gh * n->in, gh, n->in, &w);
    if (st == TG_OK)
        st = matrix(n, n->rw + (size_t)d * gh * H, gh, H, &rw);
    if (st == TG_OK)
        st = matrix(n, bias, gh, 0, &xb);
    if (st == TG_OK && rb_used)
        st = matrix(n, rbias, gh, 0, &rb);
    for (int k = 0; st == TG_OK && n->p && k < 3; k++) /* peepholes i, o, f */
        st = matrix(n, n->p + (size_t)d * 3 * H + k * H, H, 0, &p[k]);
    tg_free(bias);
    int32_t in3[3] = {x, w, xb};
    if (st == TG_OK)
        st = onnx_add(n->r, GRAPH_OP_linear, in3, 3, NULL, &xp, 1);
    /* GRU without linear_before_reset: Rh alone, for (r * H) Rh^T */
    int32_t rh = -1, rzr = rw;
    if (st == TG_OK && n->gru && !n->lbr) {
        st = onnx_slice_axis(n->r, rw, 0, 2 * H, 3 * H, 1, &rh);
        if (st == TG_OK)
            st = onnx_slice_axis(n->r, rw, 0, 0, 2 * H, 1, &rzr);
    }
    int32_t h = h0, c = c0;
    for (int64_t s = 0; st == TG_OK && s < n->seq; s++) {
        int64_t t = reverse ? n->seq - 1 - s : s;
        int32_t xt, rp = -1, g[RNN_MAX_GATES];
        st = onnx_slice_axis(n->r, xp, 0, t, t + 1, 1, &xt);
        if (st == TG_OK)
            st = squeeze0(n, xt, &xt);
        if (st == TG_OK && h >= 0) { /* the recurrent term (absent on zeros) */
            int32_t in[3] = {h, n->gru && !n->lbr ? rzr : rw, rb};
            st = onnx_add(n->r, GRAPH_OP_linear, in, rb >= 0 ? 3 : 2, NULL, &rp, 1);
        }
        /* gates of xp[t] (+ rp): GRU's h gate takes rp apart */
        int pre = n->gru ? 2 : n->gates;
        for (int k = 0; st == TG_OK && k < n->gates; k++) {
            int32_t a, b = -1;
            st = onnx_slice_axis(n->r, xt, 1, k * H, (k + 1) * H, 1, &a);
            if (st == TG_OK && rp >= 0 && k < pre)
                st = onnx_slice_axis(n->r, rp, 1, k * H, (k + 1) * H, 1, &b);
            if (st == TG_OK)
                st = add_opt(n, a, b, &g[k]);
        }
        if (st != TG_OK)
            break;
        int32_t hn = -1, cn = -1;
        if (n->lstm) { /* i o f c; f, g, h = act[0..2] */
            int32_t i = g[0], o = g[1], f = g[2], cc = g[3], pc;
            if (c >= 0 && p[0] >= 0 && (st = add1(n, GRAPH_OP_mul, p[0], c, NULL, &pc)) == TG_OK)
                st = add1(n, GRAPH_OP_add, i, pc, NULL, &i);
            if (st == TG_OK && c >= 0 && p[2] >= 0 &&
                (st = add1(n, GRAPH_OP_mul, p[2], c, NULL, &pc)) == TG_OK)
                st = add1(n, GRAPH_OP_add, f, pc, NULL, &f);
            if (st == TG_OK)
                st = activate(n, n->act[0], i, &i);
            if (st == TG_OK)
                st = activate(n, n->act[0], f, &f);
            if (st == TG_OK)
                st = activate(n, n->act[1], cc, &cc);
            if (st == TG_OK)
                st = add1(n, GRAPH_OP_mul, i, cc, NULL, &cn);
            if (st == TG_OK && c >= 0 && (st = add1(n, GRAPH_OP_mul, f, c, NULL, &pc)) == TG_OK)
                st = add1(n, GRAPH_OP_add, pc, cn, NULL, &cn);
            if (st == TG_OK && p[1] >= 0 &&
                (st = add1(n, GRAPH_OP_mul, p[1], cn, NULL, &pc)) == TG_OK)
                st = add1(n, GRAPH_OP_add, o, pc, NULL, &o);
            if (st == TG_OK)
                st = activate(n, n->act[0], o, &o);
            if (st == TG_OK)
                st = activate(n, n->act[2], cn, &hn);
            if (st == TG_OK)
                st = add1(n, GRAPH_OP_mul, o, hn, NULL, &hn);
        } else if (n->gru) { /* z r h; f, g = act[0..1] */
            int32_t z = g[0], rr = g[1], hh = g[2], q;
            st = activate(n, n->act[0], z, &z);
            if (st == TG_OK)
                st = activate(n, n->act[0], rr, &rr);
            if (st == TG_OK && h >= 0) {
                if (n->lbr) { /* r * (H Rh^T + Rbh) */
                    st = onnx_slice_axis(n->r, rp, 1, 2 * H, 3 * H, 1, &q);
                    if (st == TG_OK)
                        st = add1(n, GRAPH_OP_mul, rr, q, NULL, &q);
                } else { /* (r * H) Rh^T */
                    st = add1(n, GRAPH_OP_mul, rr, h, NULL, &q);
                    int32_t in[2] = {q, rh};
                    if (st == TG_OK)
                        st = onnx_add(n->r, GRAPH_OP_linear, in, 2, NULL, &q, 1);
                }
                if (st == TG_OK)
                    st = add1(n, GRAPH_OP_add, hh, q, NULL, &hh);
            } else if (h < 0 && n->lbr && rb >= 0) { /* H = 0: r * Rbh */
                int32_t rbh;
                st = onnx_slice_axis(n->r, rb, 0, 2 * H, 3 * H, 1, &rbh);
                if (st == TG_OK)
                    st = add1(n, GRAPH_OP_mul, rr, rbh, NULL, &q);
                if (st == TG_OK)
                    st = add1(n, GRAPH_OP_add, hh, q, NULL, &hh);
            }
            if (st == TG_OK)
                st = activate(n, n->act[1], hh, &hh);
            /* H = (1 - z) * h + z * H = h - z * h (+ z * H) */
            if (st == TG_OK)
                st = add1(n, GRAPH_OP_mul, z, hh, NULL, &q);
            if (st == TG_OK)
                st = add1(n, GRAPH_OP_sub, hh, q, NULL, &hn);
            if (st == TG_OK && h >= 0 && (st = add1(n, GRAPH_OP_mul, z, h, NULL, &q)) == TG_OK)
                st = add1(n, GRAPH_OP_add, hn, q, NULL, &hn);
        } else {
            st = activate(n, n->act[0], g[0], &hn);
        }
        if (st != TG_OK)
            break;
        hs[t] = h = hn;
        c = cn;
    }
    *hl = h;
    *cl = c;
    return st;
}

/* The activations attribute: per direction, nact names. */
static tg_status activations(rnn *n, int ndir)
{
    static const char *const lstm_def[] = {"Sigmoid", "Tanh", "Tanh"};
    static const char *const gru_def[] = {"Sigmoid", "Tanh"};
    static const char *const rnn_def[] = {"Tanh"};
    const char *const *def = n->lstm ? lstm_def : n->gru ? gru_def : rnn_def;
    n->nact = n->lstm ? 3 : n->gru ? 2 : 1;
    const Onnx__AttributeProto *a = onnx_attr(n->r, "activations");
    if (onnx_attr(n->r, "activation_alpha") || onnx_attr(n->r, "activation_beta"))
        return onnx_fail(n->r, TG_ERR_UNSUPPORTED,
                         "activation_alpha / activation_beta are not supported");
    if (a && a->n_strings != (size_t)(n->nact * ndir))
        return onnx_fail(n->r, TG_ERR_FORMAT, "activations has %zu names, want %d", a->n_strings,
                         n->nact * ndir);
    for (int k = 0; k < n->nact; k++) {
        const char *name = def[k];
        char buf[32] = "";
        for (int d = 0; a && d < ndir; d++) {
            const ProtobufCBinaryData *s = &a->strings[d * n->nact + k];
            char this[32];
            snprintf(this, sizeof this, "%.*s", (int)(s->len < 31 ? s->len : 31),
                     (const char *)s->data);
            if (d > 0 && strcmp(this, buf))
                return onnx_fail(n->r, TG_ERR_UNSUPPORTED,
                                 "activations differ between the directions (%s, %s)", buf,
                                 this);
            snprintf(buf, sizeof buf, "%s", this);
            name = buf;
        }
        if (!strcmp(name, "Sigmoid"))
            n->act[k] = GRAPH_OP_sigmoid;
        else if (!strcmp(name, "Tanh"))
            n->act[k] = GRAPH_OP_tanh;
        else if (!strcmp(name, "Relu"))
            n->act[k] = GRAPH_OP_relu;
        else
            return onnx_fail(n->r, TG_ERR_UNSUPPORTED,
                             "activation '%s' is not supported (Sigmoid, Tanh, Relu are)", name);
    }
    return TG_OK;
}

/* A constant f32 input of exactly the dims want[0..nd) (NULL if optional and absent). */
static tg_status weights(rnn *n, int i, const char *what, const int64_t *want, int nd,
                         const float **out)
{
    const onnx_entry *e;
    *out = NULL;
    if (!onnx_has_input(n->r, i))
        return TG_OK;
    tg_status st = onnx_const_input(n->r, i, what, &e);
    if (st != TG_OK)
        return st;
    int ok = e->type.dtype == GRAPH_F32 && e->type.ndim == nd;
    for (int d = 0; ok && d < nd; d++)
        ok = e->type.dim[d] == want[d];
    if (!ok)
        return onnx_fail(n->r, e->type.dtype == GRAPH_F32 ? TG_ERR_FORMAT : TG_ERR_UNSUPPORTED,
                         "%s must be f32 [%lld, %lld%s%s], got %s of %d dims", what,
                         LL(want[0]), LL(want[1]), nd > 2 ? ", " : "",
                         nd > 2 ? "..." : "", graph_dtype_name(e->type.dtype), e->type.ndim);
    *out = e->data;
    return TG_OK;
}

/* initial_h / initial_c of direction d as [B, H], or -1 when absent. */
static tg_status initial(rnn *n, int i, int d, int ndir, int32_t *v)
{
    *v = -1;
    if (!onnx_has_input(n->r, i))
        return TG_OK;
    int32_t x;
    tg_status st = onnx_input(n->r, i, &x);
    if (st == TG_OK && onnx_vtype(n->r, x)->ndim != 3)
        return onnx_fail(n->r, TG_ERR_FORMAT, "initial state %d must be [%d, B, H]", i, ndir);
    if (st == TG_OK)
        st = onnx_slice_axis(n->r, x, 0, d, d + 1, 1, &x);
    if (st == TG_OK)
        st = squeeze0(n, x, v);
    return st;
}

tg_status onnx_cv_rnn(onnx_reader *r, const onnx_op *op)
{
    rnn n = {r, 1, 0, 0, 0, 0, 0, 0, {GRAPH_OP_tanh}, 1, 0, NULL, NULL, NULL, NULL};
    n.lstm = !strcmp(op->name, "LSTM");
    n.gru = !strcmp(op->name, "GRU");
    n.gates = n.lstm ? 4 : n.gru ? 3 : 1;
    char dir[32];
    int64_t hidden, layout, lbr = 0, forget = 0;
    tg_status st = onnx_attr_str(r, "direction", "forward", dir, sizeof dir);
    if (st == TG_OK)
        st = onnx_attr_int(r, "hidden_size", 0, &hidden);
    if (st == TG_OK)
        st = onnx_attr_int(r, "layout", 0, &layout);
    if (st == TG_OK)
        st = onnx_attr_float(r, "clip", 0.0f, &n.clip);
    if (st == TG_OK && n.gru)
        st = onnx_attr_int(r, "linear_before_reset", 0, &lbr);
    if (st == TG_OK && n.lstm)
        st = onnx_attr_int(r, "input_forget", 0, &forget);
    if (st != TG_OK)
        return st;
    int ndir = !strcmp(dir, "bidirectional") ? 2 : 1, rev = !strcmp(dir, "reverse");
    if (ndir == 1 && !rev && strcmp(dir, "forward"))
        return onnx_fail(r, TG_ERR_FORMAT, "direction '%s' is not forward, reverse or "
                         "bidirectional", dir);
    if (forget)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "input_forget is not supported");
    if (layout != 0 && layout != 1)
        return onnx_fail(r, TG_ERR_FORMAT, "layout must be 0 or 1, got %lld", LL(layout));
    if (!(n.clip >= 0))
        return onnx_fail(r, TG_ERR_FORMAT, "clip must be positive");
    n.lbr = lbr != 0;
    if ((st = activations(&n, ndir)) != TG_OK)
        return st;
    int32_t x;
    if ((st = onnx_input(r, 0, &x)) != TG_OK)
        return st;
    const graph_type *xt = onnx_vtype(r, x);
    if (xt->ndim != 3 || xt->dtype != GRAPH_F32)
        return onnx_fail(r, xt->dtype == GRAPH_F32 ? TG_ERR_FORMAT : TG_ERR_UNSUPPORTED,
                         "X must be f32 [seq, batch, input] (layout %lld), got %s of %d dims",
                         LL(layout), graph_dtype_name(xt->dtype), xt->ndim);
    int seq_axis = layout ? 1 : 0;
    if (onnx_dynamic_dims(r, x) >> seq_axis & 1)
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "a dynamic sequence length: the recurrence is unrolled at load time");
    n.seq = xt->dim[seq_axis];
    n.in = xt->dim[2];
    /* every step is some 30 nodes: a crafted sequence length must not
     * make the importer build millions of them */
    if (n.seq < 1 || n.seq * ndir > RNN_MAX_STEPS)
        return onnx_fail(r, TG_ERR_UNSUPPORTED,
                         "a sequence of %lld steps%s (unrolled at load time: 1 to %d)",
                         LL(n.seq), ndir > 1 ? " in both directions" : "", RNN_MAX_STEPS);
    n.h = hidden;
    /* bounded before the gate sizes multiply it (W's dims are below 2^40) */
    if (hidden <= 0 || hidden > GRAPH_MAX_NUMEL)
        return onnx_fail(r, TG_ERR_FORMAT, "hidden_size must be in 1..2^40, got %lld",
                         LL(hidden));
    int64_t gh = n.gates * hidden;
    int64_t ws[3] = {ndir, gh, n.in}, rs[3] = {ndir, gh, hidden}, bs[2] = {ndir, 2 * gh};
    int64_t ps[2] = {ndir, 3 * hidden};
    st = weights(&n, 1, "W", ws, 3, &n.w);
    if (st == TG_OK)
        st = weights(&n, 2, "R", rs, 3, &n.rw);
    if (st == TG_OK)
        st = weights(&n, 3, "B", bs, 2, &n.b);
    if (st == TG_OK && n.lstm)
        st = weights(&n, 7, "P", ps, 2, &n.p);
    if (st != TG_OK)
        return st;
    if (!n.w || !n.rw)
        return onnx_fail(r, TG_ERR_FORMAT, "W and R are required");
    if (onnx_has_input(r, 4)) { /* sequence_lens: only the whole sequence */
        graph_ints lens;
        if ((st = onnx_const_ints(r, 4, "sequence_lens", &lens, GRAPH_MAX_INTS)) != TG_OK)
            return st;
        for (int k = 0; k < lens.n; k++)
            if (lens.v[k] != n.seq)
                return onnx_fail(r, TG_ERR_UNSUPPORTED,
                                 "sequence_lens[%d] = %lld: only sequences of the full length "
                                 "%lld are supported", k, LL(lens.v[k]), LL(n.seq));
    }
    if (layout) { /* [B, S, I] -> [S, B, I] */
        graph_transpose_attrs ta = {{3, {1, 0, 2}}};
        int32_t in = x;
        if ((st = onnx_add(r, GRAPH_OP_transpose, &in, 1, &ta, &x, 1)) != TG_OK)
            return st;
    }
    int32_t *hs = tg_calloc((size_t)(n.seq * ndir + 1), sizeof *hs), yh[2], yc[2];
    if (!hs)
        return onnx_fail(r, TG_ERR_NOMEM, "out of memory");
    for (int d = 0; st == TG_OK && d < ndir; d++) {
        int32_t h0, c0 = -1;
        st = initial(&n, 5, d, ndir, &h0);
        if (st == TG_OK && n.lstm)
            st = initial(&n, 6, d, ndir, &c0);
        if (st == TG_OK)
            st = direction(&n, d, rev || d == 1, x, h0, c0, hs + d * n.seq, &yh[d], &yc[d]);
    }
    /* Y [S, D, B, H]: each H_t as [1, 1, B, H] */
    int32_t y = -1, hh = -1, cc = -1, parts[2];
    for (int d = 0; st == TG_OK && d < ndir; d++) {
        for (int64_t t = 0; st == TG_OK && t < n.seq; t++)
            st = unsqueeze(&n, hs[d * n.seq + t], 0, &hs[d * n.seq + t]);
        if (st == TG_OK)
            st = concat(&n, hs + d * n.seq, (int)n.seq, 0, &parts[d]);
        if (st == TG_OK)
            st = unsqueeze(&n, parts[d], 1, &parts[d]);
    }
    if (st == TG_OK)
        st = concat(&n, parts, ndir, 1, &y);
    for (int d = 0; st == TG_OK && d < ndir; d++) {
        st = unsqueeze(&n, yh[d], 0, &yh[d]);
        if (st == TG_OK && n.lstm)
            st = unsqueeze(&n, yc[d], 0, &yc[d]);
    }
    if (st == TG_OK)
        st = concat(&n, yh, ndir, 0, &hh);
    if (st == TG_OK && n.lstm)
        st = concat(&n, yc, ndir, 0, &cc);
    tg_free(hs);
    if (st == TG_OK && layout) { /* [B, S, D, H], [B, D, H] */
        graph_transpose_attrs ty = {{4, {2, 0, 1, 3}}}, th = {{3, {1, 0, 2}}};
        int32_t in[3] = {y, hh, cc};
        st = onnx_add(r, GRAPH_OP_transpose, &in[0], 1, &ty, &y, 1);
        if (st == TG_OK)
            st = onnx_add(r, GRAPH_OP_transpose, &in[1], 1, &th, &hh, 1);
        if (st == TG_OK && n.lstm)
            st = onnx_add(r, GRAPH_OP_transpose, &in[2], 1, &th, &cc, 1);
    }
    if (st == TG_OK)
        st = onnx_bind(r, 0, y);
    if (st == TG_OK)
        st = onnx_bind(r, 1, hh);
    if (st == TG_OK && n.lstm)
        st = onnx_bind(r, 2, cc);
    return st;
}
