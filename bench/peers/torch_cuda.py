#!/usr/bin/env python3
"""torch_cuda.py - the GPU peer of issue 20: the workloads of workloads/workloads.c
(as bench/peers/torch_workloads.py defines them: same shapes, ops and weight
scales) timed in PyTorch on CUDA, one round (bench/gpu/run.sh alternates
rounds of this script with rounds of gpu_bench and merges them).

    python3 bench/peers/torch_cuda.py [--out FILE] [--workloads mlp,tiny,...]
        [--runs N] [--budget-ms MS] [--quick] [--device cuda|cpu]

Only torch (and the standard library) is needed: no build tree; the script
imports build() from torch_workloads.py beside it.  fp32 throughout, TF32
off (torch.backends.cuda.matmul.allow_tf32 = False, cudnn.allow_tf32 =
False).  Two variants per workload, under torch.inference_mode():
  eager  the module's forward, then torch.cuda.synchronize()
  graph  the forward captured once in a torch.cuda.CUDAGraph (after warm-up
         runs on a side stream, as PyTorch's documentation does it), then
         g.replay() and torch.cuda.synchronize() per run
Input and output stay on the device (the device-resident case).  Timing as
gpu_bench: warm-up (>= 3 runs and >= 20 ms each), then rounds of one run
of each variant until each has --runs runs (default 21, --quick 10) and the
rounds took --budget-ms per variant (default 300, --quick 20).  Every run's
time is written.  Each output is also compared with the same module run on
the CPU in fp32: max |gpu - cpu| / max |cpu| (eager_rel_err, graph_rel_err).

--device cpu runs the eager variant on the CPU and skips the graph (no
CUDA graphs there): a cheap check of this script's code path on a machine
without CUDA.  Without CUDA and without --device cpu the script writes a
file saying "no CUDA" and exits 0.

Output (--out, default torch-cuda-round.json), schema
"tracegraph-torch-cuda-round-1", times in ms:
{ "schema", "ok", "error", "device": "NVIDIA H100 ..." or "cpu", "torch",
  "records": [ {"workload", "ok", "error", "eager_ms": [...], "graph_ms": [...],
                "eager_rel_err", "graph_rel_err"} ] }
"""
import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_workloads import WORKLOADS, build  # noqa: E402

MAX_RUNS = 2000


def now_ms():
    return time.perf_counter_ns() / 1e6


def measure(fns, min_runs, budget_ms):
    """Warm-up, then rounds of one run of each fn; a list of times per fn."""
    for fn in fns:
        t0, i = now_ms(), 0
        while i < 3 or now_ms() - t0 < 20:
            fn()
            i += 1
    times = [[] for _ in fns]
    t0 = now_ms()
    while len(times[0]) < MAX_RUNS and (len(times[0]) < min_runs or
                                        now_ms() - t0 < budget_ms * len(fns)):
        for k, fn in enumerate(fns):
            s = now_ms()
            fn()
            times[k].append(now_ms() - s)
    return times


def rel_err(a, b):
    """max |a - b| / max |b| on the CPU, as gpu_bench's."""
    a, b = a.detach().float().cpu().reshape(-1), b.detach().float().cpu().reshape(-1)
    diff = (a - b).abs().max().item()
    scale = b.abs().max().item()
    if diff != diff:  # NaN
        return None
    return diff / (scale if scale > 0 else 1e-30) if diff else 0.0


def run_record(torch, name, dev, args):
    rec = {"workload": name, "ok": False, "error": "", "eager_ms": [], "graph_ms": [],
           "eager_rel_err": None, "graph_rel_err": None}
    module, x = build(name, torch)
    module.eval()
    with torch.inference_mode():
        ref = module(x)  # fp32 on the CPU
    module = module.to(dev)
    xd = x.to(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    with torch.inference_mode():
        def eager():
            module(xd)
            sync()
        fns = [eager]
        if dev.type == "cuda":
            static_x = xd.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    module(static_x)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_y = module(static_x)

            def graph():
                g.replay()
                sync()
            fns.append(graph)
        times = measure(fns, args.runs, args.budget_ms)
        rec["eager_ms"] = times[0]
        rec["eager_rel_err"] = rel_err(module(xd), ref)
        if dev.type == "cuda":
            rec["graph_ms"] = times[1]
            g.replay()
            sync()
            rec["graph_rel_err"] = rel_err(static_y, ref)
    errs = [e for e in (rec["eager_rel_err"], rec["graph_rel_err"]) if e is not None]
    rec["ok"] = len(errs) == (2 if dev.type == "cuda" else 1)
    if not rec["ok"]:
        rec["error"] = "an output was NaN where the CPU's is not"
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="torch-cuda-round.json")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--quick", action="store_true", help="--runs 10 --budget-ms 20")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.budget_ms = 10, 20.0
    names = [w for w in args.workloads.split(",") if w]
    bad = [w for w in names if w not in WORKLOADS]
    if bad:
        ap.error("unknown workload %s (known: %s)" % (", ".join(bad), ", ".join(WORKLOADS)))
    out = {"schema": "tracegraph-torch-cuda-round-1", "ok": False, "error": "",
           "device": None, "torch": None, "records": []}

    def write():
        with open(args.out, "w") as f:
            json.dump(out, f)
            f.write("\n")

    try:
        import torch
    except ImportError as e:
        out["error"] = "torch not importable: %s" % e
        write()
        print("torch_cuda: %s" % out["error"], file=sys.stderr)
        return 0
    out["torch"] = torch.__version__
    if args.device == "cuda" and not torch.cuda.is_available():
        out["error"] = "no CUDA (torch %s)" % torch.__version__
        write()
        print("torch_cuda: %s, peer skipped" % out["error"], file=sys.stderr)
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.device)
    out["device"] = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    ok = True
    for name in names:
        t0 = time.time()
        try:
            rec = run_record(torch, name, dev, args)
        except Exception as e:  # one workload's failure costs that record only
            rec = {"workload": name, "ok": False, "error": "%s: %s" % (type(e).__name__, e),
                   "eager_ms": [], "graph_ms": [], "eager_rel_err": None, "graph_rel_err": None}
            traceback.print_exc()
        ok = ok and rec["ok"]
        out["records"].append(rec)

        def med(t):
            return "%.3f" % sorted(t)[len(t) // 2] if t else "-"
        print("torch_cuda: %-13s eager %s graph %s ms | %.1f s%s" % (
            name, med(rec["eager_ms"]), med(rec["graph_ms"]), time.time() - t0,
            "" if rec["ok"] else " FAILED: " + rec["error"]), file=sys.stderr)
    out["ok"] = ok
    write()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
