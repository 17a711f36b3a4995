/*
 * tracegraph.h - the umbrella header: everything a user of tracegraph
 * needs.  Installed headers live under tracegraph/<module>/.
 *
 *   eager/eager.h      tensors, ops (eager_<op>), pools, errors, autograd
 *   eager/optim.h      optimizers (SGD, AdamW), gradient clipping
 *   tracer/trace.h     trace_begin ... trace_freeze, guards, dynamic dims
 *   graph/graph.h      the graph IR; graph/text.h text IR and DOT
 *   formats/tgraph.h   .tgraph save/load; formats/onnx.h ONNX export and
 *                      import; formats/npy.h .npy files; formats/ckpt.h
 *                      state checkpoints (training); formats/idx.h
 *                      IDX files (MNIST, Fashion-MNIST) and their datasets
 *   optimize/opt.h     the optimizer
 *   replay/replay.h    compiled plans and sessions
 *   eager/interp.h     the reference interpreter
 */
#ifndef TRACEGRAPH_H
#define TRACEGRAPH_H

#if defined(TG_IN_TREE)
#include "eager/eager.h"
#include "eager/optim.h"
#include "eager/interp.h"
#include "graph/graph.h"
#include "graph/text.h"
#include "tracer/trace.h"
#include "formats/tgraph.h"
#include "formats/onnx.h"
#include "formats/npy.h"
#include "formats/ckpt.h"
#include "formats/idx.h"
#include "optimize/opt.h"
#include "replay/replay.h"
#else
#include "tracegraph/eager/eager.h"
#include "tracegraph/eager/optim.h"
#include "tracegraph/eager/interp.h"
#include "tracegraph/graph/graph.h"
#include "tracegraph/graph/text.h"
#include "tracegraph/tracer/trace.h"
#include "tracegraph/formats/tgraph.h"
#include "tracegraph/formats/onnx.h"
#include "tracegraph/formats/npy.h"
#include "tracegraph/formats/ckpt.h"
#include "tracegraph/formats/idx.h"
#include "tracegraph/optimize/opt.h"
#include "tracegraph/replay/replay.h"
#endif

#endif
