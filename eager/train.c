/*
 * train.c - the thread's random generator and the eager wrappers of the
 * training-mode ops (eager.h, "training-mode ops"): eager_manual_seed,
 * eager_rng_get, eager_rng_set, eager_dropout, eager_batch_norm_train.
 *
 * The generator is a tensor, i64 [2] {seed, offset}, one per thread, held
 * by one reference of the thread's own (never a pool's).  It is never
 * written: eager_dropout runs dropout with it, then rng_advance makes the
 * next generator and the thread moves on to that one.  A recorded dropout
 * (autograd) saves the generator it read, and its backward draws the same
 * mask from it; a tracer sees both ops and which tensor each read.
 *
 * eager_batch_norm_train runs the op (out of place, as every op), then
 * writes the new running statistics, and the batch count + 1, into the
 * caller's tensors with eager_assign, which a tracer sees as writes.
 */
#include "../graph/alloc.h"
#include "internal.h"

static _Thread_local eager_tensor *tl_gen;

/* Releases t, or the reference eager_keep gave us when a pool owns it. */
static void drop(eager_tensor *t, const eager_site *s)
{
    if (t)
        eager_release_at(s->file, s->line, s->func, eager_keep_at(s->file, s->line, s->func, t));
}

/* Makes t (one reference of ours) the thread's generator. */
static void gen_take(eager_tensor *t, const eager_site *s)
{
    eager_tensor *old = tl_gen;
    tl_gen = t;
    if (old)
        eager_release_at(s->file, s->line, s->func, old);
}

/* A new generator {seed, offset} holding one reference of ours; NULL and
 * an error when out of memory. */
static eager_tensor *gen_new(uint64_t seed, uint64_t offset, const eager_site *s)
{
    int64_t v[2] = {(int64_t)seed, (int64_t)offset};
    eager_tensor *t = eager_from_data_at(s->file, s->line, s->func, GRAPH_I64, TG_SHAPE(2), v);
    return t ? eager_keep_at(s->file, s->line, s->func, t) : NULL;
}

void eager_rng_thread_exit(void)
{
    eager_tensor *t = tl_gen;
    tl_gen = NULL;
    if (t)
        eager_release(t);
}

tg_status eager_manual_seed_at(EAGER_SITE_PARAMS, uint64_t seed)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_tensor *t = gen_new(seed, 0, &site);
    if (!t)
        return eager_status() != TG_OK ? eager_status() : TG_ERR_NOMEM;
    gen_take(t, &site);
    return TG_OK;
}

eager_tensor *eager_rng_get_at(EAGER_SITE_PARAMS)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!tl_gen)
        tl_gen = gen_new(0, 0, &site);
    return tl_gen;
}

eager_tensor *eager_rng_peek(void) { return tl_gen; }

tg_status eager_rng_set_at(EAGER_SITE_PARAMS, eager_tensor *gen)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (gen == EAGER_NONE) {
        gen_take(NULL, &site);
        return TG_OK;
    }
    if (eager_check(gen, "eager_rng_set", &site) < 0)
        return gen ? TG_ERR_STATE : TG_ERR_NULL;
    if (gen->type.dtype != GRAPH_I64 || gen->type.ndim != 1 || gen->type.dim[0] != 2) {
        char s[160];
        eager_set_error(TG_ERR_SHAPE, &site,
                        "eager_rng_set: a generator is an i64 [2] tensor {seed, offset}, got %s %s",
                        graph_dtype_name(gen->type.dtype), graph_shape_str(&gen->type, s, sizeof s));
        return TG_ERR_SHAPE;
    }
    if (gen == tl_gen)
        return TG_OK;
    if (!eager_retain_at(site_file_, site_line_, site_func_, gen))
        return eager_status();
    gen_take(gen, &site);
    return TG_OK;
}

eager_tensor *eager_dropout_at(EAGER_SITE_PARAMS, eager_tensor *x, double p)
{
    eager_site site = {site_file_, site_line_, site_func_};
    if (!x)
        return NULL;
    if (x == EAGER_NONE) {
        eager_set_error(TG_ERR_NULL, &site, "eager_dropout: no tensor (EAGER_NONE) as x");
        return NULL;
    }
    if (eager_check(x, "dropout", &site) < 0)
        return NULL;
    eager_tensor *gen = eager_rng_get_at(site_file_, site_line_, site_func_);
    if (!gen)
        return NULL;
    graph_dropout_attrs da;
    graph_attrs_default(GRAPH_OP_dropout, &da);
    da.p = (float)p;
    eager_tensor *in[2] = {x, gen}, *y = NULL, *next = NULL;
    if (eager_dispatch(GRAPH_OP_dropout, in, 2, &da, &y, 1, &site) < 0)
        return NULL;
    graph_rng_advance_attrs ra;
    graph_attrs_default(GRAPH_OP_rng_advance, &ra);
    ra.n = x->numel;
    if (eager_dispatch(GRAPH_OP_rng_advance, &gen, 1, &ra, &next, 1, &site) < 0) {
        drop(y, &site);
        return NULL;
    }
    gen_take(eager_keep_at(site_file_, site_line_, site_func_, next), &site);
    return y;
}

eager_tensor *eager_batch_norm_train_at(EAGER_SITE_PARAMS, eager_tensor *x, eager_tensor *scale,
                                        eager_tensor *bias, eager_tensor *running_mean,
                                        eager_tensor *running_var,
                                        eager_tensor *num_batches_tracked, double eps,
                                        double momentum)
{
    eager_site site = {site_file_, site_line_, site_func_};
    eager_tensor *nbt = num_batches_tracked;
    if (!nbt)
        return NULL;
    if (nbt != EAGER_NONE) {
        if (eager_check(nbt, "batch_norm_train", &site) < 0)
            return NULL;
        if (nbt->type.dtype != GRAPH_I64 || nbt->numel != 1) {
            char s[160];
            eager_set_error(TG_ERR_DTYPE, &site,
                            "eager_batch_norm_train: num_batches_tracked must be one i64 "
                            "element (or EAGER_NONE), got %s %s",
                            graph_dtype_name(nbt->type.dtype),
                            graph_shape_str(&nbt->type, s, sizeof s));
            return NULL;
        }
    }
    graph_batch_norm_train_attrs at;
    graph_attrs_default(GRAPH_OP_batch_norm_train, &at);
    at.eps = (float)eps;
    at.momentum = (float)momentum;
    eager_tensor *in[5] = {x, scale, bias, running_mean, running_var}, *out[5] = {0};
    if (eager_dispatch(GRAPH_OP_batch_norm_train, in, 5, &at, out, 5, &site) < 0)
        return NULL;
    /* the running statistics are no part of the gradient: written under
     * no-grad, as PyTorch's buffers are */
    eager_no_grad_begin();
    tg_status st = eager_assign_at(site_file_, site_line_, site_func_, running_mean, out[1]);
    if (st == TG_OK)
        st = eager_assign_at(site_file_, site_line_, site_func_, running_var, out[2]);
    if (st == TG_OK && nbt != EAGER_NONE) {
        eager_tensor *one = eager_full_at(site_file_, site_line_, site_func_, GRAPH_I64,
                                          TG_NOINTS, 1.0);
        eager_tensor *add_in[2] = {nbt, one}, *inc = NULL;
        if (!one || eager_dispatch(GRAPH_OP_add, add_in, 2, NULL, &inc, 1, &site) < 0)
            st = eager_status() != TG_OK ? eager_status() : TG_ERR_NOMEM;
        /* one is 0-d: the sum has nbt's shape */
        if (st == TG_OK)
            st = eager_assign_at(site_file_, site_line_, site_func_, nbt, inc);
        drop(inc, &site);
        drop(one, &site);
    }
    eager_no_grad_end();
    for (int k = 1; k < 5; k++)
        drop(out[k], &site);
    if (st != TG_OK) {
        drop(out[0], &site);
        return NULL;
    }
    return out[0];
}
