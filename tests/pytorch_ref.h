/*
 * pytorch_ref.h - what the tests of models exported by PyTorch share
 * (test_onnx_pytorch.c: tests/data/pytorch, test_onnx_real.c:
 * tests/data/real): PyTorch's input and output .npy files of a model, and
 * one output checked against PyTorch's through the reference interpreter
 * or a replay.  Each test sets its data folder and tolerance.
 */
#ifndef TG_TESTS_PYTORCH_REF_H
#define TG_TESTS_PYTORCH_REF_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "eager/interp.h"
#include "formats/npy.h"
#include "replay/replay.h"

#ifndef TG_TEST_DATA
#define TG_TEST_DATA "tests/data"
#endif

typedef struct pt_ref {
    const char *dir; /* under TG_TEST_DATA: "pytorch", "real" */
    double tol;      /* normalized error allowed on f32 outputs */
    int threads;     /* replay threads (0: 1) */
} pt_ref;

/* DIR/NAME_SUFFIX.npy (NULL and a failed check if it does not load). */
static inline void *pt_load_npy(const pt_ref *r, const char *name, const char *suffix,
                                graph_type *t)
{
    char path[512], err[1024] = "";
    void *data = NULL;
    snprintf(path, sizeof path, "%s/%s/%s_%s.npy", TG_TEST_DATA, r->dir, name, suffix);
    tg_status st = format_npy_load(path, t, &data, err, sizeof err);
    CHECK_MSG(st == TG_OK, "%s: %s", path, err);
    return data;
}

/* PyTorch's output within r->tol normalized error (float sums in another
 * order); an int64 output (ArgMax's) exactly. */
static inline void pt_check_output(const pt_ref *r, const char *what, const graph_type *got_t,
                                   const void *got, const graph_type *want_t, const void *want)
{
    int same_shape = got_t->ndim == want_t->ndim && got_t->dtype == want_t->dtype;
    for (int d = 0; same_shape && d < got_t->ndim; d++)
        same_shape = got_t->dim[d] == want_t->dim[d];
    CHECK_MSG(same_shape, "%s: output shape and dtype as PyTorch's", what);
    if (!same_shape)
        return;
    if (want_t->dtype == GRAPH_I64) {
        int64_t n = graph_type_numel(want_t), bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += ((const int64_t *)got)[i] != ((const int64_t *)want)[i];
        CHECK_MSG(bad == 0, "%s: %lld of %lld indices differ from PyTorch's", what,
                  (long long)bad, (long long)n);
        return;
    }
    double e = check_normalized_error(got, want, graph_type_numel(want_t));
    CHECK_MSG(e <= r->tol, "%s: normalized error %.3g vs PyTorch", what, e);
}

/* g on input x through the reference interpreter, against y. */
static inline void pt_run_interp(const pt_ref *r, const graph *g, const char *what,
                                 const graph_type *xt, void *x, const graph_type *yt,
                                 const void *y)
{
    graph_ints shape = {xt->ndim, {0}};
    for (int d = 0; d < xt->ndim; d++)
        shape.v[d] = xt->dim[d];
    eager_pool_push();
    eager_tensor *xin = eager_from_data(xt->dtype, shape, x);
    eager_tensor *out = NULL;
    tg_status st = eager_interpret(g, &xin, 1, &out, 1, NULL);
    CHECK_MSG(st == TG_OK && out, "%s: interpreter: %s", what, eager_error());
    if (st == TG_OK && out)
        pt_check_output(r, what, eager_type(out), eager_peek(out), yt, y);
    eager_release(out);
    eager_pool_pop();
    eager_clear_error();
}

/* g replayed on the CPU (input "x", output "y"), against y. */
static inline void pt_run_replay(const pt_ref *r, const graph *g, const char *what,
                                 const graph_type *xt, void *x, const graph_type *yt,
                                 const void *y)
{
    char err[1024] = "";
    replay_opts ro = {.threads = r->threads > 0 ? r->threads : 1};
    replay_plan *p = replay_compile(g, &ro, err, sizeof err);
    CHECK_MSG(p != NULL, "%s: compile: %s", what, err);
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    if (s) {
        replay_tensor in = {.name = "x", .type = *xt, .input = x}, out = {.name = "y"};
        tg_status st = replay_run(s, &in, 1, &out, 1);
        CHECK_MSG(st == TG_OK, "%s: replay: %s", what, replay_session_error(s));
        if (st == TG_OK)
            pt_check_output(r, what, &out.type, out.data, yt, y);
    }
    replay_session_free(s);
    replay_plan_free(p);
}

#endif
