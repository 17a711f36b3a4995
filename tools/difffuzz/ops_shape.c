/*
 * ops_shape.c - the generator's data-movement ops (ops.h): Transpose,
 * Reshape, Flatten, Concat, Split, Slice, Gather, GatherElements,
 * Squeeze, Unsqueeze, Tile, Expand, Cast, DepthToSpace, SpaceToDepth,
 * Trilu, Shape, Size, Pad.
 */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

/* Makes the first node input of n a fresh f32 input when x has none. */
static void need_any(df_gen *g, df_cur *x, int lo, int hi)
{
    if (x->name[0] && x->nd >= lo && x->nd <= hi)
        return;
    df_need(g, x, DF_F32, lo, hi);
}

int df_gen_transpose(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 1, 5);
    int64_t perm[DF_MAX_DIMS], o[DF_MAX_DIMS];
    for (int k = 0; k < x->nd; k++)
        perm[k] = k;
    for (int k = x->nd - 1; k > 0; k--) {
        int j = df_rnd(g, k + 1);
        int64_t t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    int given = df_chance(g, 80);
    if (!given)
        for (int k = 0; k < x->nd; k++)
            perm[k] = x->nd - 1 - k;
    if (g->invalid && x->nd > 1) {
        perm[0] = perm[1];
        given = 1;
        g->m->invalid = 1;
    }
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, "Transpose", 1, in, 1);
    if (given)
        df_attr_ints(n, "perm", x->nd, perm);
    for (int k = 0; k < x->nd; k++)
        o[k] = x->dims[perm[k]];
    df_set(x, n, 0, x->dtype, x->nd, o, x->dyn && perm[0] == 0);
    return g->m->invalid ? -1 : 0;
}

/* Splits total into nd random factors (the last takes what is left). */
static void factor(df_gen *g, int64_t total, int nd, int64_t *d)
{
    for (int k = 0; k < nd - 1; k++) {
        int64_t f = 1;
        for (int t = 0; t < 4; t++) {
            int64_t c = df_range(g, 1, 6);
            if (total % c == 0) {
                f = c;
                break;
            }
        }
        d[k] = f;
        total /= f;
    }
    d[nd - 1] = total;
}

/* Reshape (arg 0) or Flatten (arg 1). */
int df_gen_reshape(df_gen *g, df_cur *x, int arg)
{
    need_any(g, x, 0, 5);
    int64_t numel = 1, o[DF_MAX_DIMS], shape[DF_MAX_DIMS];
    for (int k = 0; k < x->nd; k++)
        numel *= x->dims[k];
    const char *in[2] = {x->name, NULL};
    if (arg == 1) {
        if (x->nd == 0)
            return -1;
        int64_t a = df_range(g, g->m->opset >= 11 ? -x->nd : 0, x->nd);
        int ax = (int)(a < 0 ? a + x->nd : a);
        o[0] = o[1] = 1;
        for (int k = 0; k < x->nd; k++)
            o[k >= ax] *= x->dims[k];
        df_node *n = df_node_new(g, "Flatten", 1, in, 1);
        if (a != 1 || df_chance(g, 30))
            df_attr_i(n, "axis", a);
        df_set(x, n, 0, x->dtype, 2, o, x->dyn && ax == 1);
        return 0;
    }
    int nd = df_range(g, 1, 4), dyn = 0, keep0 = x->dyn && x->nd > 1 && df_chance(g, 60);
    if (numel == 0) { /* the same dims in reverse: no -1 is determined */
        nd = x->nd;
        for (int k = 0; k < nd; k++)
            o[k] = x->dims[nd - 1 - k];
    } else if (keep0) {
        if (nd < 2)
            nd = 2;
        o[0] = x->dims[0];
        factor(g, numel / x->dims[0], nd - 1, o + 1);
        dyn = 1;
    } else {
        factor(g, numel, nd, o);
    }
    memcpy(shape, o, sizeof shape);
    if (keep0)
        shape[0] = 0;
    int allowzero = g->m->opset >= 14 && !keep0 && df_chance(g, 20);
    for (int k = keep0; k < nd && numel > 0; k++) {
        if (df_chance(g, 15) && k < x->nd && x->dims[k] == o[k] && !allowzero)
            shape[k] = 0;
    }
    if (numel > 0 && df_chance(g, 40)) {
        int k = df_range(g, keep0, nd - 1);
        if (shape[k] != 0 || !keep0)
            shape[k] = -1;
    }
    if (g->invalid) {
        shape[nd - 1] = o[nd - 1] + 1;
        for (int k = 0; k < nd - 1; k++)
            if (shape[k] == -1)
                shape[k] = o[k];
        g->m->invalid = 1;
    }
    char sn[DF_NAME];
    in[1] = sn;
    df_init_i64(g, sn, nd, shape);
    df_node *n;
    if (g->m->opset >= 5) {
        n = df_node_new(g, "Reshape", 2, in, 1);
    } else {
        n = df_node_new(g, "Reshape", 1, in, 1);
    }
    if (allowzero)
        df_attr_i(n, "allowzero", 1);
    df_set(x, n, 0, x->dtype, nd, o, dyn);
    return g->m->invalid ? -1 : 0;
}

int df_gen_concat(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 1, 4);
    int nin = df_range(g, 2, 3);
    int64_t a = df_axis(g, x->nd, 11), ax = a < 0 ? a + x->nd : a, o[DF_MAX_DIMS];
    memcpy(o, x->dims, sizeof o);
    char names[3][DF_NAME];
    const char *in[3] = {x->name, names[1], names[2]};
    int empty = 0; /* ORT checks the other dims only when there are elements (7001/2962) */
    for (int d = 0; d < x->nd; d++)
        empty |= d != ax && x->dims[d] == 0;
    for (int i = 1; i < nin; i++) {
        int64_t d[DF_MAX_DIMS];
        memcpy(d, x->dims, sizeof d);
        d[ax] = df_dim(g, 4, 1);
        if (g->invalid && i == 1 && x->nd > 1 && !empty) {
            d[ax == 0 ? 1 : 0] += 1;
            g->m->invalid = 1;
        }
        o[ax] += d[ax];
        df_cur y;
        if (df_chance(g, 30) && !(x->dyn && ax != 0)) {
            df_init(g, names[i], x->dtype, x->nd, d, NULL);
        } else {
            df_input(g, &y, x->dtype, x->nd, d, x->dyn && ax != 0);
            memcpy(names[i], y.name, DF_NAME);
        }
    }
    if (df_chance(g, 30)) { /* x in another place */
        const char *t = in[0];
        in[0] = in[nin - 1];
        in[nin - 1] = t;
    }
    df_node *n = df_node_new(g, "Concat", nin, in, 1);
    df_attr_i(n, "axis", a);
    df_set(x, n, 0, x->dtype, x->nd, o, x->dyn && ax != 0);
    return g->m->invalid ? -1 : 0;
}

int df_gen_split(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 1, 4);
    int64_t a = df_axis(g, x->nd, 11), ax = a < 0 ? a + x->nd : a, d = x->dims[ax];
    int nout = df_range(g, 1, 3), given = df_chance(g, 60);
    int64_t sz[3] = {0, 0, 0}, left = d;
    for (int k = 0; k < nout - 1; k++) {
        sz[k] = df_range(g, 0, (int)left);
        left -= sz[k];
    }
    sz[nout - 1] = left;
    if (!given) { /* equal parts (opset 18: the last smaller, num_outputs) */
        if (g->m->opset >= 18) {
            int64_t part = (d + nout - 1) / nout;
            if (part * (nout - 1) >= d && d > 0)
                nout = 1;
            for (int k = 0; k < nout; k++)
                sz[k] = k < nout - 1 ? part : d - part * (nout - 1);
        } else {
            if (d % nout)
                nout = 1;
            for (int k = 0; k < nout; k++)
                sz[k] = d / nout;
        }
    }
    if (g->invalid && given) {
        sz[0]++;
        g->m->invalid = 1;
    }
    char sn[DF_NAME];
    const char *in[2] = {x->name, sn};
    int nin = 1;
    if (given && g->m->opset >= 13) {
        df_init_i64(g, sn, nout, sz);
        nin = 2;
    }
    df_node *n = df_node_new(g, "Split", nin, in, nout);
    if (a != 0 || df_chance(g, 30))
        df_attr_i(n, "axis", a);
    if (given && g->m->opset < 13)
        df_attr_ints(n, "split", nout, sz);
    if (!given && g->m->opset >= 18)
        df_attr_i(n, "num_outputs", nout);
    int64_t o[DF_MAX_DIMS];
    memcpy(o, x->dims, sizeof o);
    o[ax] = sz[0];
    df_set(x, n, 0, x->dtype, x->nd, o, x->dyn && ax != 0);
    return g->m->invalid ? -1 : 0;
}

/* Slice output length along a dim of size d (ONNX Slice-10 clamping). */
static int64_t slice_len(int64_t d, int64_t s, int64_t e, int64_t st)
{
    s = s < 0 ? s + d : s;
    e = e < 0 ? e + d : e;
    if (st > 0) {
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        return e > s ? (e - s + st - 1) / st : 0;
    }
    s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
    e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
    return s > e ? (s - e + (-st) - 1) / (-st) : 0;
}

int df_gen_slice(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 1, 4);
    int na = df_range(g, 1, x->nd), used[DF_MAX_DIMS] = {0}, axes_given = df_chance(g, 70);
    int64_t st[DF_MAX_DIMS], en[DF_MAX_DIMS], sp[DF_MAX_DIMS], ax[DF_MAX_DIMS], o[DF_MAX_DIMS];
    int dyn = x->dyn;
    memcpy(o, x->dims, sizeof o);
    for (int i = 0; i < na; i++) {
        int a = i;
        if (axes_given)
            do
                a = df_rnd(g, x->nd);
            while (used[a]);
        used[a] = 1;
        ax[i] = g->m->opset >= 11 && df_chance(g, 30) ? a - x->nd : a;
        int d = (int)x->dims[a];
        st[i] = df_range(g, -d - 1, d + 1);
        en[i] = df_range(g, -d - 1, d + 1);
        sp[i] = 1;
        if (g->m->opset >= 10 && df_chance(g, 40) && d > 0)
            sp[i] = df_chance(g, 50) ? -1 : df_chance(g, 50) ? 2 : -2;
        /* "to the end" as exporters write it: INT64_MAX forwards, INT64_MIN
         * backwards (ONNX Runtime reads INT64_MAX with a negative step as
         * the start of the dim, where the spec clamps it to the last one) */
        if (g->edge && df_chance(g, 40))
            en[i] = sp[i] > 0 ? INT64_MAX : INT64_MIN;
        if (g->invalid && i == 0 && g->m->opset >= 10) {
            sp[i] = 0;
            g->m->invalid = 1;
        }
        if (!g->m->invalid)
            o[a] = slice_len(d, st[i], en[i], sp[i]);
        if (a == 0)
            dyn = 0;
    }
    int steps = 0;
    for (int i = 0; i < na; i++)
        steps |= sp[i] != 1;
    steps |= g->m->opset >= 10 && df_chance(g, 20);
    const char *in[5] = {x->name};
    df_node *n;
    if (g->m->opset < 10) {
        n = df_node_new(g, "Slice", 1, in, 1);
        df_attr_ints(n, "starts", na, st);
        df_attr_ints(n, "ends", na, en);
        if (axes_given)
            df_attr_ints(n, "axes", na, ax);
    } else {
        char names[4][DF_NAME];
        df_init_i64(g, names[0], na, st);
        df_init_i64(g, names[1], na, en);
        int nin = 3;
        if (axes_given || steps) {
            df_init_i64(g, names[2], na, ax);
            nin = 4;
        }
        if (steps) {
            df_init_i64(g, names[3], na, sp);
            nin = 5;
        }
        for (int k = 1; k < nin; k++)
            in[k] = names[k - 1];
        n = df_node_new(g, "Slice", nin, in, 1);
    }
    df_set(x, n, 0, x->dtype, x->nd, o, dyn);
    return g->m->invalid ? -1 : 0;
}

/* nidx indices of a dim of size d into v: in [-d, d) (g->invalid: one = d). */
static void indices(df_gen *g, int64_t *v, int64_t nidx, int64_t d)
{
    for (int64_t i = 0; i < nidx; i++)
        v[i] = df_range(g, -(int)d, (int)d - 1);
    if (g->invalid && nidx > 0) {
        v[0] = d;
        g->m->invalid = 1;
    }
}

int df_gen_gather(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 1, 4);
    int64_t a = df_axis(g, x->nd, 11), ax = a < 0 ? a + x->nd : a, d = x->dims[ax];
    int ind = df_range(g, 0, 2);
    int64_t id[2] = {df_range(g, d ? 1 : 0, 3), df_range(g, 1, 3)}, nidx = 1, o[DF_MAX_DIMS];
    if (d == 0)
        id[0] = 0;
    for (int k = 0; k < ind; k++)
        nidx *= id[k];
    int64_t v[9];
    indices(g, v, nidx, d);
    char iname[DF_NAME];
    if (df_chance(g, 30)) { /* run-time indices */
        df_cur y;
        df_input(g, &y, DF_I64, ind, id, 0);
        memcpy(g->m->val[g->m->nvals - 1].data, v, sizeof *v * (size_t)nidx);
        memcpy(iname, y.name, DF_NAME);
    } else {
        df_init(g, iname, DF_I64, ind, id, v);
    }
    const char *in[2] = {x->name, iname};
    df_node *n = df_node_new(g, "Gather", 2, in, 1);
    if (a != 0 || df_chance(g, 30))
        df_attr_i(n, "axis", a);
    int r = 0;
    for (int k = 0; k < x->nd; k++) {
        if (k == ax)
            for (int j = 0; j < ind; j++)
                o[r++] = id[j];
        else
            o[r++] = x->dims[k];
    }
    if (r > DF_MAX_DIMS)
        return -1;
    df_set(x, n, 0, x->dtype, r, o, x->dyn && ax != 0);
    return g->m->invalid ? -1 : 0;
}

int df_gen_gather_elements(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 1, 4);
    int64_t a = df_axis(g, x->nd, 11), ax = a < 0 ? a + x->nd : a, id[DF_MAX_DIMS], nidx = 1;
    for (int k = 0; k < x->nd; k++) {
        id[k] = k == ax ? df_range(g, x->dims[k] ? 1 : 0, 3) : df_range(g, x->dims[k] ? 1 : 0, (int)x->dims[k]);
        if (x->dims[ax] == 0 && k == ax)
            id[k] = 0;
        nidx *= id[k];
    }
    int64_t *v = malloc(sizeof *v * (size_t)(nidx ? nidx : 1));
    if (!v)
        return -1;
    indices(g, v, nidx, x->dims[ax]);
    char iname[DF_NAME];
    df_init(g, iname, DF_I64, x->nd, id, v);
    free(v);
    const char *in[2] = {x->name, iname};
    df_node *n = df_node_new(g, "GatherElements", 2, in, 1);
    df_attr_i(n, "axis", a);
    df_set(x, n, 0, x->dtype, x->nd, id, 0);
    return g->m->invalid ? -1 : 0;
}

/* Squeeze (arg 0 drawn with Unsqueeze). */
int df_gen_squeeze(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 0, 4);
    int unsq = df_chance(g, 50) || x->nd == 0;
    int64_t axes[DF_MAX_DIMS], o[DF_MAX_DIMS];
    int na = 0, r = 0, dyn = x->dyn;
    if (unsq) {
        int add = df_range(g, 1, 2), on = x->nd + add, mark[DF_MAX_DIMS + 2] = {0};
        if (on > DF_MAX_DIMS)
            return -1;
        for (int i = 0; i < add; i++) {
            int p;
            do
                p = df_rnd(g, on);
            while (mark[p]);
            mark[p] = 1;
            axes[na++] = g->m->opset >= 11 && df_chance(g, 30) ? p - on : p;
        }
        for (int k = 0, j = 0; k < on; k++)
            o[r++] = mark[k] ? 1 : x->dims[j++];
        dyn = x->dyn && !mark[0];
    } else {
        int all = df_chance(g, 20);
        for (int k = 0; k < x->nd; k++) {
            if (x->dims[k] == 1 && (all || df_chance(g, 60)) && !(k == 0 && x->dyn)) {
                axes[na++] = g->m->opset >= 11 && df_chance(g, 30) ? k - x->nd : k;
                continue;
            }
            o[r++] = x->dims[k];
        }
        if (g->invalid) {
            for (int k = 0; k < x->nd; k++)
                if (x->dims[k] > 1) {
                    axes[na++] = k;
                    g->m->invalid = 1;
                    break;
                }
        }
        if (na == 0) { /* no axes: every 1 goes */
            if (x->dyn && x->dims[0] == 1)
                return -1; /* would squeeze N, which differs at the other size */
            r = 0;
            for (int k = 0; k < x->nd; k++)
                if (x->dims[k] != 1)
                    o[r++] = x->dims[k];
        }
    }
    const char *op = unsq ? "Unsqueeze" : "Squeeze";
    char an[DF_NAME];
    const char *in[2] = {x->name, an};
    df_node *n;
    if (g->m->opset >= 13 && na > 0) {
        df_init_i64(g, an, na, axes);
        n = df_node_new(g, op, 2, in, 1);
    } else {
        n = df_node_new(g, op, 1, in, 1);
        if (na > 0)
            df_attr_ints(n, "axes", na, axes);
    }
    df_set(x, n, 0, x->dtype, r, o, dyn && r > 0 && o[0] == x->dims[0]);
    return g->m->invalid ? -1 : 0;
}

/* Tile (arg 0) or Expand (arg 1). */
int df_gen_tile(df_gen *g, df_cur *x, int arg)
{
    need_any(g, x, arg ? 0 : 1, 4);
    int64_t rep[DF_MAX_DIMS], o[DF_MAX_DIMS];
    int nd = x->nd, dyn = x->dyn;
    char rn[DF_NAME];
    const char *in[2] = {x->name, rn};
    if (!arg) {
        for (int k = 0; k < nd; k++) {
            rep[k] = df_range(g, g->edge ? 0 : 1, 3);
            if (k == 0 && x->dyn)
                rep[k] = 1;
            o[k] = x->dims[k] * rep[k];
        }
        if (g->invalid) {
            rep[0] = -1;
            g->m->invalid = 1;
        }
        df_init_i64(g, rn, nd, rep);
        df_node *n = df_node_new(g, "Tile", 2, in, 1);
        df_set(x, n, 0, x->dtype, nd, o, dyn);
        return g->m->invalid ? -1 : 0;
    }
    int extra = nd < 4 ? df_range(g, 0, 1) : 0, r = nd + extra;
    for (int k = 0; k < extra; k++)
        rep[k] = o[k] = df_range(g, 1, 3);
    for (int k = 0; k < nd; k++) {
        int64_t d = x->dims[k];
        rep[extra + k] = d == 1 ? df_range(g, 1, 3) : df_chance(g, 30) ? 1 : d;
        o[extra + k] = d == 1 ? rep[extra + k] : d;
    }
    if (x->dyn && extra == 0)
        rep[0] = df_chance(g, 50) ? 1 : x->dims[0];
    if (g->invalid && r > 0) {
        rep[r - 1] = o[r - 1] + 1;
        if (o[r - 1] == 1)
            rep[r - 1] = 1; /* 1 broadcasts: not invalid */
        else
            g->m->invalid = 1;
    }
    df_init_i64(g, rn, r, rep);
    df_node *n = df_node_new(g, "Expand", 2, in, 1);
    df_set(x, n, 0, x->dtype, r, o, dyn && extra == 0);
    return g->m->invalid ? -1 : 0;
}

int df_gen_cast(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    static const int to[] = {DF_F32, DF_I32, DF_I64, DF_BOOL};
    if (!x->name[0])
        df_input_rand(g, x, to[df_rnd(g, 4)], df_range(g, 0, 4), 4);
    int t = to[df_rnd(g, 4)];
    /* a computed f32 may be NaN or infinite, whose cast to an integer
     * ONNX leaves undefined: only an input's values go to integers */
    if (x->dtype == DF_F32 && x->name[0] == 'y' && (t == DF_I32 || t == DF_I64))
        t = DF_BOOL;
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, "Cast", 1, in, 1);
    df_attr_i(n, "to", g->invalid ? 99 /* no dtype */ : t);
    g->m->invalid |= g->invalid;
    df_set(x, n, 0, t, x->nd, x->dims, x->dyn);
    return g->m->invalid ? -1 : 0;
}

/* DepthToSpace or SpaceToDepth on a fresh 4-D input that fits. */
int df_gen_depth_space(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    int64_t b = df_range(g, 1, 3), d[4], o[4];
    int d2s = df_chance(g, 50);
    d[0] = df_dim(g, 2, 0);
    d[1] = d2s ? b * b * df_range(g, 1, 2) : df_range(g, 1, 3);
    d[2] = d2s ? df_range(g, 1, 3) : b * df_range(g, 1, 3);
    d[3] = d2s ? df_range(g, 1, 3) : b * df_range(g, 1, 2);
    if (g->invalid && b > 1) {
        d[d2s ? 1 : 2] += 1;
        g->m->invalid = 1;
    }
    df_input(g, x, DF_F32, 4, d, 1);
    const char *in[1] = {x->name};
    df_node *n = df_node_new(g, d2s ? "DepthToSpace" : "SpaceToDepth", 1, in, 1);
    df_attr_i(n, "blocksize", b);
    if (d2s && g->m->opset >= 11 && df_chance(g, 60))
        df_attr_s(n, "mode", df_chance(g, 50) ? "DCR" : "CRD");
    o[0] = d[0];
    o[1] = d2s ? d[1] / (b * b) : d[1] * b * b;
    o[2] = d2s ? d[2] * b : d[2] / b;
    o[3] = d2s ? d[3] * b : d[3] / b;
    df_set(x, n, 0, DF_F32, 4, o, x->dyn);
    return g->m->invalid ? -1 : 0;
}

int df_gen_trilu(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 2, 4);
    char kn[DF_NAME];
    const char *in[2] = {x->name, kn};
    int nin = 1;
    if (df_chance(g, 60)) {
        int64_t k = df_range(g, -4, 4);
        df_init_i64(g, kn, -1, &k);
        nin = 2;
    }
    df_node *n = df_node_new(g, "Trilu", nin, in, 1);
    if (df_chance(g, 60))
        df_attr_i(n, "upper", df_rnd(g, 2));
    df_set(x, n, 0, x->dtype, x->nd, x->dims, x->dyn);
    return 0;
}

/* Shape (with start/end from 15) or Size. */
int df_gen_shape(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    need_any(g, x, 0, 4);
    const char *in[1] = {x->name};
    if (df_chance(g, 30)) {
        df_node *n = df_node_new(g, "Size", 1, in, 1);
        df_set(x, n, 0, DF_I64, 0, NULL, 0);
        return 0;
    }
    df_node *n = df_node_new(g, "Shape", 1, in, 1);
    int64_t s = 0, e = x->nd;
    if (g->m->opset >= 15 && df_chance(g, 50)) {
        s = df_range(g, -x->nd - 1, x->nd + 1);
        e = df_range(g, -x->nd - 1, x->nd + 1);
        df_attr_i(n, "start", s);
        if (df_chance(g, 70))
            df_attr_i(n, "end", e);
        else
            e = x->nd;
    }
    int64_t r = x->nd;
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    int64_t len = e > s ? e - s : 0;
    df_set(x, n, 0, DF_I64, 1, &len, 0);
    return 0;
}

int df_gen_pad(df_gen *g, df_cur *x, int arg)
{
    (void)arg;
    if (g->m->opset < 11) /* Pad-2 takes floats only */
        df_need(g, x, DF_F32, 1, 4);
    need_any(g, x, 1, 4);
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    int mode = df_rnd(g, g->m->opset >= 19 ? 4 : 3);
    int nd = x->nd;
    int64_t pads[2 * DF_MAX_DIMS], o[DF_MAX_DIMS];
    for (int k = 0; k < nd; k++) {
        int64_t d = x->dims[k];
        for (int e = 0; e < 2; e++) {
            int64_t p = df_chance(g, 50) ? 0 : df_range(g, 1, 2);
            if (g->edge && mode == 0 && df_chance(g, 30))
                p = df_chance(g, 50) ? df_range(g, 5, 9) : -df_range(g, 0, (int)(d / 2));
            if (mode == 1 && p > d - 1)
                p = d > 1 ? d - 1 : 0; /* reflect: at most dim - 1 */
            if ((mode == 2 || mode == 3) && d == 0)
                p = 0;
            if (mode == 3 && p > d) /* ORT leaves wrap's second lap zeros */
                p = d;
            if (k == 0 && x->dyn && mode != 0)
                p = 0;
            pads[e * nd + k] = p;
        }
        o[k] = d + pads[k] + pads[nd + k];
    }
    int pn = 2 * nd;
    if (g->invalid) {
        pn--;
        g->m->invalid = 1;
    }
    const char *in[3] = {x->name};
    char pname[DF_NAME], vname[DF_NAME];
    df_node *n;
    float val = df_chance(g, 50) ? 0.0f : df_unif(g, -2.0f, 2.0f);
    if (x->dtype != DF_F32)
        val = 0.0f;
    if (g->m->opset >= 11) {
        df_init_i64(g, pname, pn, pads);
        in[1] = pname;
        int nin = 2;
        if (mode == 0 && val != 0.0f) {
            df_init_f32(g, vname, val);
            in[2] = vname;
            nin = 3;
        }
        n = df_node_new(g, "Pad", nin, in, 1);
    } else {
        n = df_node_new(g, "Pad", 1, in, 1);
        df_attr_ints(n, "pads", pn, pads);
        if (val != 0.0f && mode == 0)
            df_attr_f(n, "value", val);
    }
    if (mode || df_chance(g, 30))
        df_attr_s(n, "mode", modes[mode]);
    df_set(x, n, 0, x->dtype, nd, o, x->dyn && pads[0] == 0 && pads[nd] == 0);
    return g->m->invalid ? -1 : 0;
}
