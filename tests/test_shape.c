/*
 * test_shape.c - reshape, flatten, squeeze, unsqueeze (views), transpose,
 * concat and split against naive references written here (index
 * arithmetic in shape_util.h), their error messages, and the view ops'
 * kernels called directly: the eager dispatcher shares storage for view
 * ops and never runs their kernels, but the replay runtime does.
 * (Slice, pad, expand and gather are in test_shape2.c.)
 */
#include "eager/kernel.h"
#include "shape_util.h"

#define MAXD GRAPH_MAX_DIMS

/* ---- views ---- */

/* A view op keeps every element in order: same bits, new shape. */
static void check_view(eager_tensor *x, eager_tensor *y, graph_ints shape,
                       int line)
{
    CHECK_MSG(has_shape(y, shape), "line %d: wrong shape", line);
    if (x && y)
        check_data(y, eager_peek(x), eager_numel(x), __FILE__, line, "view");
}

static void test_reshape(void)
{
    eager_pool_push();
    for (int d = 0; d < 4; d++) {
        eager_tensor *x = make_seq(all_dtypes[d], TG_SHAPE(2, 3, 4), d);
        check_view(x, eager_reshape(x, TG_SHAPE(4, -1)), TG_SHAPE(4, 6), __LINE__);
        check_view(x, eager_reshape(x, TG_SHAPE(24)), TG_SHAPE(24), __LINE__);
        check_view(x, eager_reshape(x, TG_SHAPE(-1, 2, 1, 3)), TG_SHAPE(4, 2, 1, 3), __LINE__);
    }
    eager_tensor *s = eager_scalar(3.5);
    check_view(s, eager_reshape(s, TG_SHAPE(1, 1)), TG_SHAPE(1, 1), __LINE__);
    check_view(s, eager_reshape(s, TG_SHAPE(-1)), TG_SHAPE(1), __LINE__);
    eager_tensor *one = make_seq(GRAPH_I32, TG_SHAPE(1, 1), 5);
    eager_tensor *back = eager_reshape(one, TG_NOINTS);
    CHECK(back && eager_ndim(back) == 0 && eager_item(back) == 5.0);
    /* 0 is a real zero dim, not "copy the input's dim". */
    eager_tensor *z = eager_zeros(GRAPH_F32, TG_SHAPE(2, 0, 3));
    CHECK_SHAPE(eager_reshape(z, TG_SHAPE(0, 5)), TG_SHAPE(0, 5));
    CHECK_SHAPE(eager_reshape(z, TG_SHAPE(3, 0)), TG_SHAPE(3, 0));
    CHECK_SHAPE(eager_reshape(z, TG_SHAPE(0)), TG_SHAPE(0));
    eager_pool_pop();
}

static void test_flatten(void)
{
    eager_pool_push();
    eager_tensor *x = make_seq(GRAPH_I64, TG_SHAPE(2, 3, 4, 5), 1);
    check_view(x, eager_flatten(x, 1, 2), TG_SHAPE(2, 12, 5), __LINE__);
    check_view(x, eager_flatten(x, 0, -1), TG_SHAPE(120), __LINE__);
    check_view(x, eager_flatten(x, -2, -1), TG_SHAPE(2, 3, 20), __LINE__);
    check_view(x, eager_flatten(x, 2, 2), TG_SHAPE(2, 3, 4, 5), __LINE__);
    check_view(x, eager_flatten(x, 0, 1), TG_SHAPE(6, 4, 5), __LINE__);
    eager_tensor *s = eager_scalar(1.5); /* 0-d -> [1], as PyTorch */
    check_view(s, eager_flatten(s, 0, -1), TG_SHAPE(1), __LINE__);
    eager_tensor *z = eager_zeros(GRAPH_BOOL, TG_SHAPE(2, 0, 3));
    CHECK_SHAPE(eager_flatten(z, 0, 1), TG_SHAPE(0, 3));
    CHECK_SHAPE(eager_flatten(z, 1, 2), TG_SHAPE(2, 0));
    eager_pool_pop();
}

static void test_squeeze_unsqueeze(void)
{
    eager_pool_push();
    eager_tensor *x = make_seq(GRAPH_F32, TG_SHAPE(1, 3, 1, 2), 2);
    check_view(x, eager_squeeze(x, TG_NOINTS), TG_SHAPE(3, 2), __LINE__);
    check_view(x, eager_squeeze(x, TG_INTS(-2)), TG_SHAPE(1, 3, 2), __LINE__);
    check_view(x, eager_squeeze(x, TG_INTS(2, 0)), TG_SHAPE(3, 2), __LINE__);
    eager_tensor *o = make_seq(GRAPH_BOOL, TG_SHAPE(1, 1), 0);
    eager_tensor *so = eager_squeeze(o, TG_NOINTS);
    CHECK(so && eager_ndim(so) == 0);
    CHECK_SHAPE(eager_squeeze(eager_zeros(GRAPH_I32, TG_SHAPE(0, 1)), TG_NOINTS), TG_SHAPE(0));

    eager_tensor *y = make_seq(GRAPH_I32, TG_SHAPE(3, 2), 3);
    /* ONNX: axes name positions in the output rank. */
    check_view(y, eager_unsqueeze(y, TG_INTS(0)), TG_SHAPE(1, 3, 2), __LINE__);
    check_view(y, eager_unsqueeze(y, TG_INTS(-1)), TG_SHAPE(3, 2, 1), __LINE__);
    check_view(y, eager_unsqueeze(y, TG_INTS(0, 3)), TG_SHAPE(1, 3, 2, 1), __LINE__);
    check_view(y, eager_unsqueeze(y, TG_INTS(-1, 1)), TG_SHAPE(3, 1, 2, 1), __LINE__);
    check_view(y, eager_unsqueeze(y, TG_INTS(2, 1)), TG_SHAPE(3, 1, 1, 2), __LINE__);
    eager_tensor *s = eager_scalar(4.0);
    check_view(s, eager_unsqueeze(s, TG_INTS(0)), TG_SHAPE(1), __LINE__);
    check_view(s, eager_unsqueeze(s, TG_INTS(-1, 0)), TG_SHAPE(1, 1), __LINE__);
    eager_pool_pop();
}

/*
 * Views share storage: writing through eager_data_mut on the base changes
 * every view of it (and writing through a view changes the base), and a
 * view keeps the storage alive after the base is released.
 */
static void test_view_storage(void)
{
    eager_tensor *x = make_seq(GRAPH_F32, TG_SHAPE(2, 3), 0);
    eager_tensor *r = eager_reshape(x, TG_SHAPE(3, 2));
    eager_tensor *f = eager_flatten(r, 0, -1); /* a view of a view */
    eager_tensor *u = eager_unsqueeze(f, TG_INTS(0));
    eager_tensor *s = eager_squeeze(u, TG_NOINTS);
    CHECK(r && f && u && s);
    CHECK(eager_peek(r) == eager_peek(x) && eager_peek(s) == eager_peek(x));
    ((float *)eager_data_mut(x))[4] = 99.0f;
    CHECK(((const float *)eager_peek(r))[4] == 99.0f);
    CHECK(eager_get(r, TG_INTS(2, 0)) == 99.0);
    CHECK(((const float *)eager_peek(s))[4] == 99.0f);
    ((float *)eager_data_mut(s))[0] = -5.0f;
    CHECK(eager_get(x, TG_INTS(0, 0)) == -5.0);
    eager_release(x); /* the views still hold the storage */
    eager_release(r);
    eager_release(f);
    eager_release(u);
    CHECK(((const float *)eager_peek(s))[4] == 99.0f);
    eager_release(s);
}

/* The view kernels, called as the replay runtime calls them. */
static void run_view_kernel(graph_op op, const void *attrs, graph_dtype dt,
                            graph_ints shape, int line)
{
    graph_type in_t = {dt, shape.n, {0}}, out_t;
    for (int i = 0; i < shape.n; i++)
        in_t.dim[i] = shape.v[i];
    int nout = 0;
    char err[256] = "";
    tg_status st = graph_infer(op, &in_t, 1, attrs, &out_t, 1, &nout, err,
                               sizeof err);
    CHECK_MSG(st == TG_OK && nout == 1, "line %d: infer: %s", line, err);
    int64_t n = ints_numel(shape);
    size_t bytes = (size_t)n * dt_size(dt);
    char *in = malloc(bytes + 1), *out = malloc(bytes + 1);
    fill_seq(dt, in, n, 7);
    memset(out, 0xAB, bytes + 1);
    const void *ins[1] = {in};
    void *outs[1] = {out};
    eager_kargs ka = {&in_t, ins, 1, attrs, &out_t, outs, 1, 2, err,
                      sizeof err};
    st = eager_kernels[op](&ka);
    CHECK_MSG(st == TG_OK, "line %d: kernel: %s", line, err);
    CHECK_MSG(memcmp(in, out, bytes) == 0 && (unsigned char)out[bytes] == 0xAB,
              "line %d: kernel output differs", line);
    free(in);
    free(out);
}

static void test_view_kernels(void)
{
    graph_reshape_attrs ra = {TG_INTS(6, -1)};
    graph_flatten_attrs fa = {1, -1};
    graph_squeeze_attrs sa = {TG_NOINTS};
    graph_unsqueeze_attrs ua = {TG_INTS(0, -1)};
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        run_view_kernel(GRAPH_OP_reshape, &ra, dt, TG_SHAPE(2, 3, 5), __LINE__);
        run_view_kernel(GRAPH_OP_flatten, &fa, dt, TG_SHAPE(2, 3, 5), __LINE__);
        run_view_kernel(GRAPH_OP_squeeze, &sa, dt, TG_SHAPE(1, 7, 1), __LINE__);
        run_view_kernel(GRAPH_OP_unsqueeze, &ua, dt, TG_SHAPE(4, 3), __LINE__);
    }
    /* Large enough for the parallel copy (nthreads 2 above). */
    run_view_kernel(GRAPH_OP_reshape, &ra, GRAPH_I64, TG_SHAPE(600, 1000), __LINE__);
    run_view_kernel(GRAPH_OP_flatten, &fa, GRAPH_F32, TG_SHAPE(3, 0, 2), __LINE__);
    graph_reshape_attrs r0 = {TG_NOINTS};
    run_view_kernel(GRAPH_OP_reshape, &r0, GRAPH_F32, TG_SHAPE(1), __LINE__);
}

/* ---- transpose ---- */

static void ref_transpose(const void *in, const int64_t *idims, int nd,
                          const int *perm, size_t es, void *out)
{
    int64_t odims[MAXD], oi[MAXD], ii[MAXD], n = 1;
    for (int k = 0; k < nd; k++) {
        odims[k] = idims[perm[k]];
        n *= odims[k];
    }
    for (int64_t f = 0; f < n; f++) {
        unravel_idx(f, odims, nd, oi);
        for (int k = 0; k < nd; k++)
            ii[perm[k]] = oi[k];
        put_elem(out, f, in, ravel_idx(ii, idims, nd), es);
    }
}

static void check_transpose(graph_dtype dt, graph_ints shape, graph_ints perm,
                            int line)
{
    eager_pool_push();
    int nd = shape.n, p[MAXD];
    graph_ints oshape = {nd, {0}};
    for (int k = 0; k < nd; k++) {
        p[k] = perm.n ? (int)(perm.v[k] < 0 ? perm.v[k] + nd : perm.v[k])
                      : nd - 1 - k;
        oshape.v[k] = shape.v[p[k]];
    }
    eager_tensor *x = make_seq(dt, shape, line);
    eager_tensor *y = eager_transpose(x, perm);
    int64_t n = ints_numel(shape);
    void *want = malloc((size_t)n * 8 + 8);
    ref_transpose(eager_peek(x), shape.v, nd, p, dt_size(dt), want);
    CHECK_MSG(has_shape(y, oshape), "line %d: transpose shape", line);
    check_data(y, want, n, __FILE__, line, "transpose");
    free(want);
    eager_pool_pop();
}

static void test_transpose(void)
{
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        check_transpose(dt, TG_SHAPE(5, 7), TG_NOINTS, __LINE__);
        check_transpose(dt, TG_SHAPE(67, 45), TG_INTS(1, 0), __LINE__);
        check_transpose(dt, TG_SHAPE(3, 50, 70), TG_INTS(0, 2, 1), __LINE__);
        check_transpose(dt, TG_SHAPE(2, 3, 4, 5), TG_INTS(3, 1, 0, 2), __LINE__);
        check_transpose(dt, TG_SHAPE(2, 3, 4, 5), TG_INTS(0, 2, 1, 3), __LINE__);
    }
    check_transpose(GRAPH_F32, TG_SHAPE(2, 3, 4, 5), TG_INTS(1, 0, 2, 3), __LINE__);
    check_transpose(GRAPH_F32, TG_SHAPE(2, 3, 4), TG_INTS(-1, 0, -2), __LINE__);
    check_transpose(GRAPH_I32, TG_SHAPE(2, 3, 4, 5, 6), TG_NOINTS, __LINE__);
    check_transpose(GRAPH_F32, TG_SHAPE(1, 5), TG_INTS(1, 0), __LINE__);
    check_transpose(GRAPH_F32, TG_SHAPE(4, 1, 6), TG_INTS(2, 1, 0), __LINE__);
    check_transpose(GRAPH_F32, TG_SHAPE(0, 3), TG_INTS(1, 0), __LINE__);
    check_transpose(GRAPH_I64, TG_SHAPE(7), TG_NOINTS, __LINE__);
    check_transpose(GRAPH_BOOL, TG_SHAPE(2, 3, 2, 3, 2, 3, 2, 3),
                    TG_INTS(7, 5, 3, 1, 6, 4, 2, 0), __LINE__);
    eager_set_threads(2); /* the parallel tile and row paths */
    check_transpose(GRAPH_F32, TG_SHAPE(300, 200), TG_INTS(1, 0), __LINE__);
    check_transpose(GRAPH_I64, TG_SHAPE(4, 130, 97), TG_INTS(0, 2, 1), __LINE__);
    check_transpose(GRAPH_F32, TG_SHAPE(8, 64, 16, 8), TG_INTS(0, 2, 1, 3), __LINE__);
    check_transpose(GRAPH_BOOL, TG_SHAPE(2, 40000), TG_INTS(1, 0), __LINE__);
    eager_set_threads(1);
    /* 0-d: the empty perm is the identity. */
    eager_tensor *s = eager_scalar(2.0);
    eager_tensor *t = eager_transpose(s, TG_NOINTS);
    CHECK(t && eager_ndim(t) == 0 && eager_item(t) == 2.0);
    eager_release(s);
    eager_release(t);
}

/* ---- concat and split ---- */

/* Reference concat: each output index finds its input by the axis coord. */
static void ref_concat(eager_tensor *const *xs, int n, int ax, void *out,
                       const eager_tensor *y)
{
    int nd = eager_ndim(y);
    size_t es = dt_size(eager_dtype(y));
    int64_t odims[MAXD], idx[MAXD], idims[MAXD];
    for (int k = 0; k < nd; k++)
        odims[k] = eager_dim(y, k);
    for (int64_t f = 0; f < eager_numel(y); f++) {
        unravel_idx(f, odims, nd, idx);
        int i = 0;
        while (idx[ax] >= eager_dim(xs[i], ax))
            idx[ax] -= eager_dim(xs[i++], ax);
        for (int k = 0; k < nd; k++)
            idims[k] = eager_dim(xs[i], k);
        put_elem(out, f, eager_peek(xs[i]), ravel_idx(idx, idims, nd), es);
    }
}

static void check_concat(eager_tensor *const *xs, int n, int64_t axis,
                         graph_ints want_shape, int line)
{
    eager_tensor *y = eager_concat(n, xs, axis);
    CHECK_MSG(has_shape(y, want_shape), "line %d: concat shape", line);
    if (!y)
        return;
    void *want = malloc((size_t)eager_numel(y) * 8 + 8);
    ref_concat(xs, n, (int)(axis < 0 ? axis + eager_ndim(y) : axis), want, y);
    check_data(y, want, eager_numel(y), __FILE__, line, "concat");
    free(want);
}

static void test_concat(void)
{
    eager_pool_push();
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        eager_tensor *a = make_seq(dt, TG_SHAPE(2, 3, 4), 1);
        eager_tensor *b = make_seq(dt, TG_SHAPE(2, 5, 4), 2);
        eager_tensor *c = make_seq(dt, TG_SHAPE(2, 0, 4), 3);
        eager_tensor *e = make_seq(dt, TG_SHAPE(2, 1, 4), 4);
        eager_tensor *xs[4] = {a, b, c, e};
        check_concat(xs, 4, 1, TG_SHAPE(2, 9, 4), __LINE__);
        check_concat(xs, 4, -2, TG_SHAPE(2, 9, 4), __LINE__);
        eager_tensor *ys[2] = {a, make_seq(dt, TG_SHAPE(2, 3, 7), 5)};
        check_concat(ys, 2, -1, TG_SHAPE(2, 3, 11), __LINE__);
        eager_tensor *zs[3] = {a, a, make_seq(dt, TG_SHAPE(1, 3, 4), 6)};
        check_concat(zs, 3, 0, TG_SHAPE(5, 3, 4), __LINE__);
        check_concat(&a, 1, 2, TG_SHAPE(2, 3, 4), __LINE__);
    }
    eager_tensor *v[2] = {make_seq(GRAPH_F32, TG_SHAPE(3), 0),
                          make_seq(GRAPH_F32, TG_SHAPE(2), 9)};
    check_concat(v, 2, 0, TG_SHAPE(5), __LINE__);
    eager_tensor *zz[2] = {eager_zeros(GRAPH_I32, TG_SHAPE(0, 2)),
                           eager_zeros(GRAPH_I32, TG_SHAPE(0, 3))};
    check_concat(zz, 2, 1, TG_SHAPE(0, 5), __LINE__);
    eager_set_threads(2);
    eager_tensor *big[2] = {make_seq(GRAPH_F32, TG_SHAPE(100, 300), 1),
                            make_seq(GRAPH_F32, TG_SHAPE(100, 200), 2)};
    check_concat(big, 2, 1, TG_SHAPE(100, 500), __LINE__);
    eager_tensor *longs[2] = {make_seq(GRAPH_I64, TG_SHAPE(1, 40000), 3),
                              make_seq(GRAPH_I64, TG_SHAPE(1, 50000), 4)};
    check_concat(longs, 2, 1, TG_SHAPE(1, 90000), __LINE__);
    eager_set_threads(1);
    eager_pool_pop();
}

/* Reference split: output i, index j reads the input at j + offset_i. */
static void check_split(eager_tensor *x, int64_t axis, graph_ints sizes,
                        graph_ints want_sizes, int line)
{
    eager_tensor *out[16];
    int n = eager_split(x, axis, sizes, out, 16);
    CHECK_MSG(n == want_sizes.n, "line %d: split made %d outputs", line, n);
    if (n != want_sizes.n)
        return;
    int nd = eager_ndim(x), ax = (int)(axis < 0 ? axis + nd : axis);
    size_t es = dt_size(eager_dtype(x));
    int64_t idims[MAXD], odims[MAXD], idx[MAXD], off = 0;
    for (int k = 0; k < nd; k++)
        idims[k] = eager_dim(x, k);
    for (int i = 0; i < n; i++) {
        graph_ints ws = {nd, {0}};
        for (int k = 0; k < nd; k++)
            ws.v[k] = odims[k] = k == ax ? want_sizes.v[i] : idims[k];
        CHECK_MSG(has_shape(out[i], ws), "line %d: split output %d shape",
                  line, i);
        int64_t m = ints_numel(ws);
        char *want = malloc((size_t)m * es + 1);
        for (int64_t f = 0; f < m; f++) {
            unravel_idx(f, odims, nd, idx);
            idx[ax] += off;
            put_elem(want, f, eager_peek(x), ravel_idx(idx, idims, nd), es);
        }
        check_data(out[i], want, m, __FILE__, line, "split");
        free(want);
        off += want_sizes.v[i];
    }
}

static void test_split(void)
{
    eager_pool_push();
    for (int d = 0; d < 4; d++) {
        graph_dtype dt = all_dtypes[d];
        eager_tensor *x = make_seq(dt, TG_SHAPE(10, 4, 3), d);
        check_split(x, 0, TG_INTS(3, -1, 2), TG_INTS(3, 5, 2), __LINE__);
        check_split(x, -2, TG_INTS(1, 3), TG_INTS(1, 3), __LINE__);
        check_split(x, 2, TG_INTS(0, 3, 0), TG_INTS(0, 3, 0), __LINE__);
        check_split(x, 1, TG_INTS(-1), TG_INTS(4), __LINE__);
        check_split(x, 2, TG_INTS(1, 1, 1), TG_INTS(1, 1, 1), __LINE__);
    }
    eager_tensor *z = eager_zeros(GRAPH_F32, TG_SHAPE(0, 6));
    check_split(z, 1, TG_INTS(2, 4), TG_INTS(2, 4), __LINE__);
    check_split(z, 0, TG_INTS(0, -1), TG_INTS(0, 0), __LINE__);
    eager_set_threads(2);
    eager_tensor *big = make_seq(GRAPH_I64, TG_SHAPE(300, 250), 3);
    check_split(big, 1, TG_INTS(100, 150), TG_INTS(100, 150), __LINE__);
    eager_set_threads(1);
    eager_pool_pop();
}

/* split then concat gives the input back, for every dtype and axis. */
static void test_split_concat_roundtrip(void)
{
    eager_pool_push();
    for (int d = 0; d < 4; d++) {
        eager_tensor *x = make_seq(all_dtypes[d], TG_SHAPE(6, 5, 4), 11 + d);
        for (int ax = -3; ax < 3; ax++) {
            int64_t len = eager_dim(x, ax);
            eager_tensor *parts[16];
            int n = eager_split(x, ax, TG_INTS(1, len - 3, 0, -1), parts, 16);
            CHECK(n == 4);
            if (n != 4)
                continue;
            eager_tensor *y = eager_concat(n, parts, ax);
            CHECK_SHAPE(y, TG_SHAPE(6, 5, 4));
            CHECK_DATA(y, eager_peek(x), 120);
        }
    }
    eager_pool_pop();
}

/* ---- errors: the message and the test's own file:line ---- */

static void test_view_errors(void)
{
    eager_pool_push();
    eager_tensor *x = make_seq(GRAPH_F32, TG_SHAPE(2, 3), 0);
    CHECK_FAILS(eager_reshape(x, TG_SHAPE(4, 2)), "reshape: [2,3]: cannot reshape [2,3] (6 elements) to [4,2] (8 elements)");
    CHECK_FAILS(eager_reshape(x, TG_SHAPE(-1, -1)), "more than one -1 in shape [-1,-1]");
    CHECK_FAILS(eager_reshape(x, TG_SHAPE(-2, -3)), "bad dim -2 in shape [-2,-3] (only -1 may be negative)");
    CHECK_FAILS(eager_reshape(x, TG_SHAPE(4, -1)), "cannot reshape [2,3] (6 elements) to [4,-1]");
    CHECK_FAILS(eager_reshape(x, TG_SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 6)), "shape has 9 entries (at most 8)");
    CHECK_FAILS(eager_reshape(x, TG_SHAPE(1LL << 32, 1LL << 32, 4)), "shape [4294967296,4294967296,4] has too many elements");
    eager_tensor *z = eager_zeros(GRAPH_F32, TG_SHAPE(0, 3));
    CHECK_FAILS(eager_reshape(z, TG_SHAPE(0, -1)), "-1 is ambiguous when the other dims multiply to 0");
    CHECK_FAILS(eager_flatten(x, 2, -1), "flatten: [2,3]: start 2 out of range for 2 dims");
    CHECK_FAILS(eager_flatten(x, 0, -3), "end -3 out of range for 2 dims");
    CHECK_FAILS(eager_flatten(x, 1, 0), "start 1 (dim 1) is after end 0 (dim 0)");
    eager_tensor *s = eager_scalar(1.0);
    CHECK_FAILS(eager_flatten(s, 1, -1), "start 1 out of range for 0 dims");
    eager_tensor *y = make_seq(GRAPH_I64, TG_SHAPE(1, 3, 1), 0);
    CHECK_FAILS(eager_squeeze(y, TG_INTS(3)), "squeeze: i64[1,3,1]: axis 3 out of range for 3 dims");
    CHECK_FAILS(eager_squeeze(y, TG_INTS(0, -3)), "axis -3 listed twice");
    CHECK_FAILS(eager_squeeze(y, TG_INTS(1)), "cannot squeeze axis 1 of size 3 (must be 1)");
    CHECK_FAILS(eager_squeeze(y, (graph_ints){-1, {0}}), "axes has -1 entries (at most 8)");
    CHECK_FAILS(eager_unsqueeze(x, TG_NOINTS), "unsqueeze: [2,3]: axes is empty");
    CHECK_FAILS(eager_unsqueeze(x, TG_INTS(3)), "axis 3 out of range for 3 output dims");
    CHECK_FAILS(eager_unsqueeze(x, TG_INTS(1, -3)), "axis -3 listed twice");
    eager_tensor *d7 = eager_zeros(GRAPH_F32, TG_SHAPE(1, 1, 1, 1, 1, 1, 1));
    CHECK_FAILS(eager_unsqueeze(d7, TG_INTS(0, 1)), "result would have 9 dims (at most 8)");
    eager_pool_pop();
}

static void test_move_errors(void)
{
    eager_pool_push();
    eager_tensor *x = make_seq(GRAPH_F32, TG_SHAPE(2, 3), 0);
    CHECK_FAILS(eager_transpose(x, TG_INTS(0)), "transpose: [2,3]: perm [0] has 1 entries, input has 2 dims");
    CHECK_FAILS(eager_transpose(x, TG_INTS(0, 2)), "perm [0,2]: entry 2 out of range for 2 dims");
    CHECK_FAILS(eager_transpose(x, TG_INTS(1, -1)), "perm [1,-1] is not a permutation (dim 1 repeats)");
    CHECK_FAILS(eager_transpose(x, (graph_ints){17, {0}}), "perm has 17 entries (at most 16)");

    eager_tensor *xi = make_seq(GRAPH_I64, TG_SHAPE(2, 3), 0);
    eager_tensor *c1[2] = {x, xi};
    CHECK_FAILS(eager_concat(2, c1, 0), "concat: [2,3] x i64[2,3]: input 1 has dtype i64, input 0 has f32");
    eager_tensor *c2[2] = {x, make_seq(GRAPH_F32, TG_SHAPE(6), 0)};
    CHECK_FAILS(eager_concat(2, c2, 0), "input 1 has 1 dims, input 0 has 2");
    eager_tensor *c3[3] = {x, x, make_seq(GRAPH_F32, TG_SHAPE(2, 4), 0)};
    CHECK_FAILS(eager_concat(3, c3, 0), "input 2 differs from input 0 in dim 1 (4 vs 3)");
    CHECK_FAILS(eager_concat(1, &x, 2), "axis 2 out of range for 2 dims");
    CHECK_FAILS(eager_concat(1, &x, -3), "axis -3 out of range for 2 dims");
    CHECK_FAILS(eager_concat(0, c1, 0), "concat: : takes 1 or more inputs, got 0");
    eager_tensor *sc[2] = {eager_scalar(1.0), eager_scalar(2.0)};
    CHECK_FAILS(eager_concat(2, sc, 0), "axis 0 out of range for 0 dims");

    eager_tensor *out[4];
    CHECK_FAILS_N(eager_split(x, 1, TG_NOINTS, out, 4), "split: [2,3]: sizes is empty (give one size per output)");
    CHECK_FAILS_N(eager_split(x, 1, TG_INTS(1, 1), out, 4), "sizes [1,1] add up to 2, dim 1 has 3");
    CHECK_FAILS_N(eager_split(x, 1, TG_INTS(2, 2), out, 4), "sizes [2,2] add up to more than dim 1 (3)");
    CHECK_FAILS_N(eager_split(x, -1, TG_INTS(4, -1), out, 4), "sizes [4,-1] add up to more than dim 1 (3)");
    CHECK_FAILS_N(eager_split(x, 1, TG_INTS(-1, -1), out, 4), "more than one -1 in sizes [-1,-1]");
    CHECK_FAILS_N(eager_split(x, 1, TG_INTS(-2, 5), out, 4), "negative size in sizes [-2,5]");
    CHECK_FAILS_N(eager_split(x, 2, TG_INTS(3), out, 4), "axis 2 out of range for 2 dims");
    CHECK_FAILS_N(eager_split(x, 1, TG_INTS(1, 1, 1), out, 2), "split: makes 3 outputs, room for 2");
    CHECK_FAILS_N(eager_split(eager_scalar(1.0), 0, TG_INTS(1), out, 4), "axis 0 out of range for 0 dims");
    eager_pool_pop();
}

int main(void)
{
    long live = eager_live_tensors();
    test_reshape();
    test_flatten();
    test_squeeze_unsqueeze();
    test_view_storage();
    test_view_kernels();
    test_transpose();
    test_concat();
    test_split();
    test_split_concat_roundtrip();
    test_view_errors();
    test_move_errors();
    CHECK_MSG(eager_status() == TG_OK, "stray error: %s", eager_error());
    CHECK_MSG(eager_live_tensors() == live, "leaked %ld tensors",
              eager_live_tensors() - live);
    return check_done();
}
