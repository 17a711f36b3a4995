/*
 * workloads.h - the benchmark workloads of issue 6, written with the eager
 * API (seeded random weights, float32), shared by the suite (bench/suite.c)
 * and by tests/test_workloads.c, which builds them small so they cannot rot.
 *
 *   mlp            x[64,784] -> linear 512 -> relu -> linear 512 -> relu -> linear 10
 *   resblock       x[1,64,56,56] -> conv3x3 (no bias) -> batch_norm -> relu ->
 *                  conv3x3 -> batch_norm -> + x -> relu
 *   encoder        x[1,128,256], pre-LayerNorm transformer block, 4 heads, with
 *                  layer_norm and GELU written out of primitive ops (what the
 *                  pattern fusions of -O2 have to find)
 *   encoder_fused  the same block with the layer_norm and gelu ops
 *   chain          x[4194304]: tanh(x*sigmoid(x) + 0.5*x)*2 - 1 (memory-bound)
 *   tiny           x[16]: 100 x (x = relu(x*1.01 + 0.01) - x*0.5 + sigmoid(x))
 *                  (dispatch-bound)
 *
 * The primitive forms are the ones PyTorch code exports to ONNX, which
 * ONNX Runtime's LayerNormFusion and GeluFusion match:
 *   layer_norm  m = mean(x, -1, keepdim); d = x - m; v = mean(d*d, -1, keepdim);
 *               y = d / sqrt(v + eps) * gamma + beta
 *   gelu        y = x * (erf(x / sqrt(2)) + 1) * 0.5
 *
 * Weights are traced as params (named like a PyTorch state dict), so -O2's
 * param folding has something to do; scalars (0.5, eps, ...) are made
 * before tracing and become constants.  Weights are scaled by
 * 1/sqrt(fan_in) so activations stay O(1) and relative errors mean
 * something.
 */
#ifndef TG_BENCH_WORKLOADS_H
#define TG_BENCH_WORKLOADS_H

#include "eager/eager.h"
#include "graph/graph.h"

typedef enum workload_kind {
    WL_MLP,
    WL_RESBLOCK,
    WL_ENCODER,       /* layer_norm and gelu written with primitive ops */
    WL_ENCODER_FUSED, /* the same block with the layer_norm and gelu ops */
    WL_CHAIN,
    WL_TINY,
    WL_COUNT
} workload_kind;

/* Sizes; each workload reads the fields its comment names. */
typedef struct workload_size {
    int64_t batch; /* mlp: rows of x (64); resblock: N (1); encoder: batch (1) */
    int64_t in;    /* mlp: input features (784); resblock: H = W (56);
                      encoder: sequence length (128); chain, tiny: elements */
    int64_t width; /* mlp: hidden width (512); resblock: channels (64);
                      encoder: model width (256) */
    int64_t out;   /* mlp: classes (10); encoder: heads (4) */
    int64_t ffn;   /* encoder: feed-forward width (1024) */
    int64_t iters; /* tiny: iterations (100) */
} workload_size;

#define WORKLOAD_MAX_PARAMS 16
#define WORKLOAD_MAX_CONSTS 8

typedef struct workload {
    workload_kind kind;
    const char *name;
    workload_size size;
    eager_tensor *x; /* the seeded input, traced as "x" */
    int nparams;
    eager_tensor *param[WORKLOAD_MAX_PARAMS]; /* traced as params */
    const char *param_name[WORKLOAD_MAX_PARAMS];
    int nconsts;
    eager_tensor *cst[WORKLOAD_MAX_CONSTS]; /* scalars: constants when traced */
} workload;

/* "mlp", "resblock", ...; NULL for an out-of-range kind. */
const char *workload_name(workload_kind k);
/* The kind named name, or -1. */
int workload_find(const char *name);
/* One line saying what k computes at size s (for tables). */
void workload_describe(workload_kind k, const workload_size *s, char *buf, size_t len);
/* The sizes of issue 6. */
workload_size workload_default_size(workload_kind k);
/* Floating-point operations of k's matrix products at size s (linear,
 * conv, attention's two batched matmuls: 2 per multiply-add), the work
 * that bounds the compute-bound workloads; 0 for chain and tiny, whose
 * bounds are memory and dispatch. */
double workload_flops(workload_kind k, const workload_size *s);

/*
 * Builds workload k at size s (NULL: the default size) into *w, with seeded
 * input and weights.  Call it outside any eager pool: w owns its tensors
 * until workload_free.  Returns TG_OK, or the eager error's status (bad
 * sizes give TG_ERR_ARG with eager_error() set).
 */
tg_status workload_make(workload *w, workload_kind k, const workload_size *s);
void workload_free(workload *w);

/*
 * Runs the workload on x eagerly.  The result belongs to the innermost
 * pool (callers push one); NULL with eager_error() on failure.
 */
eager_tensor *workload_forward(const workload *w, eager_tensor *x);

/*
 * Traces one forward on w->x: input "x", the params by name, output "y".
 * capture_stack as trace_opts.  Returns the frozen graph (graph_free) or
 * NULL with eager_error().
 */
graph *workload_trace(const workload *w, int capture_stack);

#endif
