/*
 * optim.h - optimizers for eager training: SGD (momentum, Nesterov,
 * weight decay) and AdamW, as PyTorch's torch.optim has them, and
 * gradient clipping by global norm.
 *
 *   // example (given: eager_tensor *w; eager_tensor *b; eager_tensor *x; eager_tensor *y)
 *   eager_requires_grad(w, 1);
 *   eager_requires_grad(b, 1);
 *   eager_tensor *params[] = {w, b};
 *   eager_sgd_opts o = EAGER_SGD_OPTS_INIT;
 *   o.lr = 0.1;
 *   o.momentum = 0.9;
 *   eager_optim *opt = eager_sgd_new(params, 2, &o);
 *   for (int step = 0; opt && step < 100; step++) {
 *       eager_pool_push();
 *       eager_tensor *loss = eager_mse_loss(eager_linear(x, w, b), y);
 *       if (eager_backward(loss) != TG_OK || eager_optim_step(opt) != TG_OK)
 *           fprintf(stderr, "%s\n", eager_error());
 *       eager_optim_zero_grad(opt);
 *       eager_pool_pop();
 *   }
 *   eager_optim_free(opt);
 *
 * An optimizer keeps a reference to each parameter and owns its moment
 * buffers (zeros like each parameter), its hyperparameters (one-element
 * f32 tensors: learning rate, momentum, betas, eps, weight decay) and,
 * for AdamW, one i64 step count per parameter.  eager_optim_step updates
 * every parameter that has a gradient (eager_grad) by one op, sgd_step or
 * adamw_step (docs/OPS.md), whose results it copies into the parameter
 * and the buffers with eager_assign, under eager_no_grad_begin/end.  The
 * hyperparameters being tensors, not numbers baked into the op, a traced
 * step serves every learning rate: a schedule calls eager_optim_set_lr
 * (or writes the state of a replayed step) and needs no new trace.
 *
 * State.  Each step declares (eager_declare_state) what it reads and
 * writes across steps, so a tracer recording the step knows them:
 * "<prefix>.<hyper>" for each hyperparameter ("sgd.lr", "adamw.beta1"),
 * and for parameter i "<prefix>.param.<i>" (a name the user gave with
 * trace_state wins), "<prefix>.momentum_buffer.<i>" (SGD),
 * "<prefix>.m.<i>", "<prefix>.v.<i>" and "<prefix>.step.<i>" (AdamW).
 * The prefix is the options' (default "sgd", "adamw"): two optimizers in
 * one step need two prefixes.
 *
 * Differences from PyTorch, none of which changes a result: SGD always
 * keeps a momentum buffer (with momentum 0 it holds the last update);
 * PyTorch starts the buffer at the first update where this one starts
 * from zeros, the same value with dampening 0 (the only dampening here).
 *
 * Threads: an optimizer, like its tensors, belongs to the thread that
 * made it.  Errors are eager errors (eager_error()) naming the caller's
 * call site, and a status.
 */
#ifndef TG_EAGER_OPTIM_H
#define TG_EAGER_OPTIM_H

#include "eager.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eager_optim eager_optim;

/* SGD's settings (torch.optim.SGD with dampening 0). */
typedef struct eager_sgd_opts {
    double lr;           /* learning rate, finite, >= 0 (default 1e-3) */
    double momentum;     /* momentum factor, finite, >= 0 (default 0) */
    double weight_decay; /* L2 penalty added to the gradient, finite, >= 0 (default 0) */
    int nesterov;        /* 0 or 1: Nesterov momentum; needs momentum > 0 (default 0) */
    const char *prefix;  /* the state names' prefix (NULL: "sgd") */
} eager_sgd_opts;

/* AdamW's settings (torch.optim.AdamW, amsgrad off). */
typedef struct eager_adamw_opts {
    double lr;           /* learning rate, finite, >= 0 (default 1e-3) */
    double beta1, beta2; /* the moments' decay, each in [0, 1) (default 0.9, 0.999) */
    double eps;          /* added to the denominator, finite, >= 0 (default 1e-8) */
    double weight_decay; /* decoupled weight decay, finite, >= 0 (default 1e-2) */
    const char *prefix;  /* the state names' prefix (NULL: "adamw") */
} eager_adamw_opts;

/* The defaults: PyTorch's (lr 1e-3 for both, as PyTorch 2's SGD). */
TG_API eager_sgd_opts eager_sgd_default_opts(void);
TG_API eager_adamw_opts eager_adamw_default_opts(void);

/*
 * The same defaults as initializers (eager_sgd_opts o = EAGER_SGD_OPTS_INIT;
 * o.lr = 0.1;): fields by name in C, the functions above in C++17, which
 * has no designated initializers.  Both structs may grow at the end.
 */
#ifdef __cplusplus
#define EAGER_SGD_OPTS_INIT eager_sgd_default_opts()
#define EAGER_ADAMW_OPTS_INIT eager_adamw_default_opts()
#else
#define EAGER_SGD_OPTS_INIT {.lr = 1e-3}
#define EAGER_ADAMW_OPTS_INIT                                                  \
    {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2}
#endif

/*
 * A new optimizer over params[0..n) (n >= 1, distinct live f32 tensors;
 * each keeps a reference), with opts (NULL: the defaults).  Returns NULL
 * with an eager error for a bad argument (naming the parameter or the
 * setting) or no memory.  Free it with eager_optim_free.
 */
TG_API eager_optim *eager_sgd_new_at(EAGER_SITE_PARAMS, eager_tensor *const *params, int n,
                                     const eager_sgd_opts *opts);
TG_API eager_optim *eager_adamw_new_at(EAGER_SITE_PARAMS, eager_tensor *const *params, int n,
                                       const eager_adamw_opts *opts);
#define eager_sgd_new(params, n, opts) eager_sgd_new_at(EAGER_SITE, params, n, opts)
#define eager_adamw_new(params, n, opts) eager_adamw_new_at(EAGER_SITE, params, n, opts)

/*
 * One update of every parameter that has a gradient (the others are left
 * as they are, with their buffers and step counts, as PyTorch skips a
 * parameter whose .grad is None).  AdamW first adds 1 to the parameter's
 * step count.  A gradient whose type is not its parameter's is an error
 * before anything is written; TG_OK otherwise, unless an op fails (no
 * memory), which leaves the parameters before it updated.
 */
TG_API tg_status eager_optim_step_at(EAGER_SITE_PARAMS, eager_optim *opt);
#define eager_optim_step(opt) eager_optim_step_at(EAGER_SITE, opt)
/* Drops every parameter's gradient (eager_zero_grad; PyTorch's
 * zero_grad(set_to_none=True)). */
TG_API tg_status eager_optim_zero_grad_at(EAGER_SITE_PARAMS, eager_optim *opt);
#define eager_optim_zero_grad(opt) eager_optim_zero_grad_at(EAGER_SITE, opt)

/*
 * A hyperparameter by name: "lr", "weight_decay", and "momentum" (SGD) or
 * "beta1", "beta2", "eps" (AdamW).  eager_optim_set writes value into its
 * tensor (eager_assign, so a tracer sees the write), checked as the
 * options are (a refusal changes nothing); eager_optim_get reads it (the
 * f32 value held: set 0.1, get 0.100000001), NaN with an error for an
 * unknown name.
 */
TG_API tg_status eager_optim_set_at(EAGER_SITE_PARAMS, eager_optim *opt, const char *name,
                                    double value);
TG_API double eager_optim_get_at(EAGER_SITE_PARAMS, const eager_optim *opt, const char *name);
#define eager_optim_set(opt, name, value) eager_optim_set_at(EAGER_SITE, opt, name, value)
#define eager_optim_get(opt, name) eager_optim_get_at(EAGER_SITE, opt, name)
#define eager_optim_set_lr(opt, lr) eager_optim_set_at(EAGER_SITE, opt, "lr", lr)
#define eager_optim_lr(opt) eager_optim_get_at(EAGER_SITE, opt, "lr")

/*
 * A tensor the optimizer owns, by its state name without the prefix: a
 * hyperparameter ("lr"), or parameter i's "param.<i>",
 * "momentum_buffer.<i>" (SGD), "m.<i>", "v.<i>", "step.<i>" (AdamW).
 * Borrowed (eager_retain to keep it past eager_optim_free); NULL with an
 * error for a name the optimizer has not.  To save or restore a run:
 * read or eager_assign these.
 */
TG_API eager_tensor *eager_optim_tensor_at(EAGER_SITE_PARAMS, const eager_optim *opt,
                                           const char *name);
#define eager_optim_tensor(opt, name) eager_optim_tensor_at(EAGER_SITE, opt, name)
/* Drops the optimizer's tensors and its references to the parameters.
 * NULL is a no-op. */
TG_API void eager_optim_free(eager_optim *opt);

/*
 * Clips the gradients of params[0..n) by their global 2-norm, as PyTorch's
 * torch.nn.utils.clip_grad_norm_(params, max_norm): total = the 2-norm of
 * the parameters' gradient norms; every gradient is multiplied by
 * min(max_norm / (total + 1e-6), 1), written into the gradient tensor
 * itself (eager_assign).  Parameters without a gradient are skipped (none
 * at all: total 0, nothing written).  max_norm is a one-element f32 tensor
 * (eager_scalar(1.0); a tensor, so a traced step can take it as state).
 * Made of registry ops under eager_no_grad_begin, so a tracer records it.
 * *total_norm (if total_norm is not NULL) gets total as a new 0-d f32
 * tensor (one reference, as an op's result: the caller's pool owns it
 * if one is open).  TG_OK, or an eager error with no gradient written.
 */
TG_API tg_status eager_clip_grad_norm_at(EAGER_SITE_PARAMS, eager_tensor *const *params, int n,
                                         eager_tensor *max_norm, eager_tensor **total_norm);
#define eager_clip_grad_norm(params, n, max_norm, total_norm)                  \
    eager_clip_grad_norm_at(EAGER_SITE, params, n, max_norm, total_norm)

#ifdef __cplusplus
}
#endif

#endif
