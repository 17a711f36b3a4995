#!/usr/bin/python3
"""torch_workloads.py - the five workloads of workloads/workloads.c in PyTorch,
and the same modules exported to ONNX in ONNX Runtime, timed on this machine
as the peers of issue 6 (run by `make bench` through bench/peers/run.sh, in
the same run as bench/suite.c).

    /usr/bin/python3 bench/peers/torch_workloads.py [--out FILE] [--threads 1,2]
        [--runs N] [--budget-ms MS] [--workloads mlp,tiny,...] [--quick]

Use Debian's /usr/bin/python3 (3.11, with python3-torch 1.13), not a pyenv
python3 that comes first on PATH.

Workloads (same shapes, ops and weight scales as workloads/workloads.c; float32,
weights from torch.manual_seed, so the values differ from ours but the work
does not): mlp, resblock (conv/batch_norm in eval mode: running statistics,
as our batch_norm), encoder (layer_norm and the erf GELU written out of
primitive ops), encoder_fused (F.layer_norm, F.gelu), chain, tiny.

Each workload x thread count is measured in a child process (a fresh
interpreter: torch.set_num_threads once, before any parallel region, and a
crash costs one record).  Two variants, both called under
torch.inference_mode():
  eager  the nn.Module's forward
  jit    torch.jit.trace (under no_grad) -> torch.jit.freeze ->
         torch.jit.optimize_for_inference (conv+bn folding, oneDNN layouts
         for conv, ...), the recipe of the issue's table
Timing as bench/suite.c: warm-up (>= 5 runs, the profiling executor
specializes a TorchScript graph after its first runs, and >= 20 ms each),
then rounds of one run of each variant, interleaved so that load from
elsewhere hits both alike, until each has >= --runs runs (default 21) and
the rounds took --budget-ms (default 1000) per variant, at most 5000.  A
run is one Python call of the module including the Python dispatch, the
result dropped: what a user's loop pays.  The two outputs are compared
(max_rel_err = max|jit - eager| / max|eager|, as suite.c's); above 1e-3
the record is not ok.

ONNX Runtime (unless --no-ort): the module is exported with
torch.onnx.export (opset 17, traced on the same input), its input and eager
output are written as raw float32, and bench/peers/ort/ort_workloads.js
times the model in onnxruntime-node (installed by run.sh from the npm
registry; graph optimizations "all", the record's thread count) with the
same warm-up, runs and budget, back to back (a separate process cannot
join the rounds), in ORT_ROUNDS rounds that alternate with our own best
level (the faster of -O2 and -O3 in the suite's rounds, from the graphs
the suite saved: --tgraph-dir, --suite-json) timed the same way by
`tracegraph bench`, so that both see the machine in the same state; and
compares its output with PyTorch eager's.  The same exported .onnx file is
also imported by tracegraph (`tracegraph opt -O3 model.onnx`, formats/onnx.h)
and that replay timed in the same turns (ours_onnx_*): what a user who
brings a PyTorch model as ONNX gets.  A failure there costs the ONNX
Runtime fields only (ort_error, ours_alone_error, ours_onnx_error say why).

Output (--out, default bench/results/peers.json), schema
"tracegraph-peers-1"; times in ms, null for what could not be measured:

{ "schema": "tracegraph-peers-1",
  "ok": true|false, "error": "" (why not: e.g. torch not importable),
  "machine": {"cpu", "cores", "date" (UTC), "loadavg" (1-minute, at start)},
  "torch": {"version", "python", "blas" (the libblas.so.3 torch loaded and,
            for OpenBLAS, its version and kernels), "capability" (the SIMD
            level of ATen's kernels, e.g. AVX2), "mkldnn": true|false,
            "cpu_fuser": whether TorchScript can fuse elementwise ops on the
            CPU (NNC needs LLVM; Debian's build has none)},
  "config": {"min_runs", "budget_ms", "rel_tolerance"},
  "total_s": seconds,
  "records": [ one per workload x threads:
    { "workload": "mlp", "threads": 1, "ok": true, "error": "",
      "loadavg": at the record's start,
      "torch_eager_ms": {"median", "min", "max", "runs"},
      "torch_jit_ms": {"median", "min", "max", "runs"},
      "jit_prepare_ms": trace + freeze + optimize_for_inference,
      "max_abs_err", "max_rel_err": jit vs eager,
      "ort_ms": {"median", "min", "max", "runs"} or null, "ort_version",
      "ort_export_ms": torch.onnx.export, "ort_prepare_ms": session creation
      (graph optimization included), "ort_max_abs_err", "ort_max_rel_err":
      ONNX Runtime vs PyTorch eager, "ort_error": "" or why not measured,
      "ours_alone_ms": {...} our best level by `tracegraph bench` in turns
      with ONNX Runtime, "ours_alone_file", "ours_alone_error",
      "ours_onnx_ms": {...} the exported .onnx imported and optimized at -O3
      by tracegraph, timed in the same turns, "ours_onnx_nodes" (nodes
      imported -> -O3), "ours_onnx_max_rel_err" (its output vs PyTorch
      eager), "ours_onnx_error" } ] }

bench/json_flat.awk names a record "<workload>/t<threads>", so table.sh
reads e.g. mlp/t1/torch_jit_ms.median and compare.sh works on two such
files.  This script never fails on a time; it exits 1 if a record fails.
"""
import argparse
import ctypes
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

WORKLOADS = ["mlp", "resblock", "encoder", "encoder_fused", "chain", "tiny"]
ORT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort")
REL_TOL = 1e-3
MAX_RUNS = 5000
RECORD_TIMEOUT_S = 300


def now_ms():
    return time.perf_counter_ns() / 1e6


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_name():
    """'model name (family F model M, AVX-512)', as bench/suite.c writes it."""
    name, family, model, flags = "?", "?", "?", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if key == "model name" and name == "?":
                    name = val
                elif key == "cpu family" and family == "?":
                    family = val
                elif key == "model" and model == "?":
                    model = val
                elif key == "flags" and not flags:
                    flags = val
    except OSError:
        pass
    simd = "AVX-512" if "avx512f" in flags.split() else "AVX2" if "avx2" in flags.split() else "SSE"
    return "%s (family %s model %s, %s)" % (name, family, model, simd)


# ---- the workloads (see workloads/workloads.c) ----

def build(name, torch):
    """(module, input) of workload name, seeded, float32, in eval mode."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(1000 * (WORKLOADS.index(name if name != "encoder_fused" else "encoder") + 1))

    def weight(*shape):  # std 1/sqrt(fan_in), as workloads.c's weight()
        fan = math.prod(shape[1:])
        return torch.randn(*shape) / math.sqrt(fan)

    def small(n):
        return torch.randn(n) * 0.1

    def around_one(n):
        return torch.rand(n) + 0.5

    def uniform(shape, lo, hi):
        return torch.rand(*shape) * (hi - lo) + lo

    def param(t):
        return nn.Parameter(t, requires_grad=False)

    if name == "mlp":
        class Mlp(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.ModuleList(nn.Linear(i, o) for i, o in ((784, 512), (512, 512), (512, 10)))
                for fc in self.fc:
                    fc.weight, fc.bias = param(weight(fc.out_features, fc.in_features)), param(small(fc.out_features))

            def forward(self, x):
                h = F.relu(self.fc[0](x))
                h = F.relu(self.fc[1](h))
                return self.fc[2](h)
        return Mlp(), uniform((64, 784), 0.0, 1.0)

    if name == "resblock":
        class ResBlock(nn.Module):
            def __init__(self, c=64):
                super().__init__()
                self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(c, eps=1e-5)
                self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(c, eps=1e-5)
                for conv, bn in ((self.conv1, self.bn1), (self.conv2, self.bn2)):
                    conv.weight = param(weight(c, c, 3, 3))
                    bn.weight, bn.bias = param(around_one(c)), param(small(c))
                    bn.running_mean.copy_(small(c))
                    bn.running_var.copy_(around_one(c))

            def forward(self, x):
                y = F.relu(self.bn1(self.conv1(x)))
                y = self.bn2(self.conv2(y))
                return F.relu(y + x)
        return ResBlock(), uniform((1, 64, 56, 56), -1.0, 1.0)

    if name in ("encoder", "encoder_fused"):
        return make_encoder(torch, name == "encoder", weight, small, around_one, param), \
            uniform((1, 128, 256), -1.0, 1.0)

    if name == "chain":
        class Chain(nn.Module):
            def forward(self, x):
                return torch.tanh(x * torch.sigmoid(x) + x * 0.5) * 2.0 - 1.0
        return Chain(), uniform((4194304,), -3.0, 3.0)

    class Tiny(nn.Module):
        def forward(self, x):
            for _ in range(100):
                a = F.relu(x * 1.01 + 0.01)
                x = (a - x * 0.5) + torch.sigmoid(x)
            return x
    return Tiny(), uniform((16,), -1.0, 1.0)


def make_encoder(torch, primitive, weight, small, around_one, param):
    """The pre-LN block of workloads.c: d 256, 4 heads, ffn 1024."""
    nn, F = torch.nn, torch.nn.functional
    d, nh, ffn = 256, 4, 1024

    def layer_norm_prim(x, g, b):
        m = x.mean(-1, keepdim=True)
        dx = x - m
        v = (dx * dx).mean(-1, keepdim=True)
        return dx / torch.sqrt(v + 1e-5) * g + b

    def gelu_prim(x):
        return x * (torch.erf(x / math.sqrt(2.0)) + 1.0) * 0.5

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1_w, self.ln1_b = param(around_one(d)), param(small(d))
            self.qkv_w, self.qkv_b = param(weight(3 * d, d)), param(small(3 * d))
            self.out_w, self.out_b = param(weight(d, d)), param(small(d))
            self.ln2_w, self.ln2_b = param(around_one(d)), param(small(d))
            self.fc1_w, self.fc1_b = param(weight(ffn, d)), param(small(ffn))
            self.fc2_w, self.fc2_b = param(weight(d, ffn)), param(small(d))

        def norm(self, x, g, b):
            return layer_norm_prim(x, g, b) if primitive else F.layer_norm(x, (d,), g, b, 1e-5)

        def forward(self, x):
            bsz, n = x.shape[0], x.shape[1]
            qkv = F.linear(self.norm(x, self.ln1_w, self.ln1_b), self.qkv_w, self.qkv_b)
            q, k, v = (t.reshape(bsz, n, nh, d // nh).transpose(1, 2) for t in qkv.split(d, -1))
            score = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // nh)
            a = torch.matmul(torch.softmax(score, -1), v).transpose(1, 2).reshape(bsz, n, d)
            r = F.linear(a, self.out_w, self.out_b) + x
            f = F.linear(self.norm(r, self.ln2_w, self.ln2_b), self.fc1_w, self.fc1_b)
            f = gelu_prim(f) if primitive else F.gelu(f)
            return F.linear(f, self.fc2_w, self.fc2_b) + r
    return Block()


# ---- one record (in a child process) ----

def sig(x):
    """x to 6 significant digits, as suite.c's %.6g (None stays None)."""
    return None if x is None else float("%.6g" % x)


def median(values):
    t = sorted(values)
    n = len(t)
    return t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])


def stats(times):
    return {"median": sig(median(times)), "min": sig(min(times)), "max": sig(max(times)),
            "runs": len(times)}


def measure(fns, min_runs, budget_ms):
    """Times fns in interleaved rounds after warm-up (bench/suite.c's measure)."""
    for fn in fns:
        t0, i = now_ms(), 0
        while i < 5 or now_ms() - t0 < 20:
            fn()
            i += 1
    times = [[] for _ in fns]
    t0, runs = now_ms(), 0
    while runs < MAX_RUNS and (runs < min_runs or now_ms() - t0 < budget_ms * len(fns)):
        for fn, t in zip(fns, times):
            s = time.perf_counter_ns()
            fn()
            t.append((time.perf_counter_ns() - s) / 1e6)
        runs += 1
    return [stats(t) for t in times]


def compare(a, b):
    """max|a - b| and that over max|b| (suite.c's compare; NaN mismatch: inf)."""
    a, b = a.double().flatten(), b.double().flatten()
    nan_a, nan_b = a.isnan(), b.isnan()
    if bool((nan_a != nan_b).any()):
        return math.inf, math.inf
    keep = ~nan_b
    diff = float((a[keep] - b[keep]).abs().max()) if bool(keep.any()) else 0.0
    scale = float(b[keep].abs().max()) if bool(keep.any()) else 0.0
    return diff, (0.0 if diff == 0 else diff / (scale if scale > 0 else 1e-30))


ORT_ROUNDS = 3


def merge_stats(parts):
    """One stats dict of several rounds: median of the medians, min of the
    mins, max of the maxes, runs summed."""
    return {"median": sig(median([p["median"] for p in parts])),
            "min": min(p["min"] for p in parts), "max": max(p["max"] for p in parts),
            "runs": sum(p["runs"] for p in parts)}


def bench_ours(tracegraph, tgraph, threads, min_runs, budget_ms):
    """`tracegraph bench` on our saved graph: its stats dict, or an error."""
    def once(runs, warmup):
        p = subprocess.run([tracegraph, "bench", tgraph, "--runs", str(runs), "--warmup",
                            str(warmup), "--threads", str(threads)], capture_output=True,
                           text=True, timeout=RECORD_TIMEOUT_S)
        m = re.search(r"min ([0-9.e+-]+) ms\s+median ([0-9.e+-]+) ms\s+mean [0-9.e+-]+ ms\s+"
                      r"max ([0-9.e+-]+) ms", p.stdout)
        if p.returncode != 0 or not m:
            tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError("tracegraph bench %s exited %d: %s" % (tgraph, p.returncode, tail))
        return {"median": sig(float(m.group(2))), "min": sig(float(m.group(1))),
                "max": sig(float(m.group(3))), "runs": runs}
    est = once(5, 2)["median"]  # how many runs fill the budget, as the other timings
    runs = int(min(MAX_RUNS, max(min_runs, budget_ms / max(est, 1e-6))))
    return once(runs, max(5, runs // 20))


def import_onnx(tracegraph, onnx, tmp, x, y):
    """The exported model imported and optimized by tracegraph (-O3):
    (path of the .tgraph, "N -> M" nodes, max rel err of its output on x
    against y); raises RuntimeError with the tool's message."""
    import numpy as np
    out, xn, yn = (os.path.join(tmp, f) for f in ("imported.tgraph", "x.npy", "ours.npy"))
    np.save(xn, x.numpy().astype(np.float32))
    for cmd in ([tracegraph, "opt", "-O3", onnx, out], [tracegraph, "run", out, "-i", xn, "-o", yn]):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RECORD_TIMEOUT_S)
        if p.returncode != 0:
            tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError("tracegraph %s exited %d: %s" % (cmd[1], p.returncode, tail))
        if cmd[1] == "opt":
            m = re.search(r"-O3: (\d+) nodes -> (\d+)", p.stdout)
            nodes = "%s -> %s" % m.groups() if m else None
    import torch
    _, rel = compare(torch.from_numpy(np.load(yn)), y)
    return out, nodes, (sig(rel) if math.isfinite(rel) else None)


def run_ort(model, x, y, threads, min_runs, budget_ms, ours):
    """ONNX Runtime on the module exported to ONNX (ort/ort_workloads.js),
    in ORT_ROUNDS rounds alternating with our replay of ours (a saved
    .tgraph, or None) through `tracegraph bench`; the record's ort_* and
    ours_alone_* fields."""
    import torch
    node = shutil.which("node")
    if not node:
        return {"ort_error": "no node on PATH (bench/peers/run.sh installs nodejs)"}
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        return {"ort_error": "onnxruntime-node is not installed in %s (bench/peers/run.sh "
                             "installs it)" % ORT_DIR}
    with tempfile.TemporaryDirectory(prefix="tg_ort_") as tmp:
        onnx, xb, yb = (os.path.join(tmp, f) for f in ("model.onnx", "x.bin", "y.bin"))
        t0 = now_ms()
        with torch.no_grad():
            torch.onnx.export(model, (x,), onnx, input_names=["x"], output_names=["y"],
                              opset_version=17)
        export_ms = now_ms() - t0
        x.numpy().astype("float32").tofile(xb)
        y.numpy().astype("float32").tofile(yb)
        cmd = [node, os.path.join(ORT_DIR, "ort_workloads.js"), onnx, xb,
               ",".join(str(d) for d in x.shape), yb, str(threads), str(min_runs),
               str(budget_ms / ORT_ROUNDS)]
        rounds, mine, ours_error = [], [], ""
        imported, from_onnx, onnx_error, onnx_nodes, onnx_err = None, [], "", None, None
        if ours:
            try:
                imported, onnx_nodes, onnx_err = import_onnx(ours[0], onnx, tmp, x, y)
            except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
                onnx_error = str(e)
        for _ in range(ORT_ROUNDS):
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=RECORD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return {"ort_error": "timed out after %d s" % RECORD_TIMEOUT_S}
            try:
                r = json.loads(p.stdout)
            except ValueError:
                tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
                return {"ort_error": "ort_workloads.js exited %d: %s" % (p.returncode, tail)}
            if not r.get("ok"):
                break
            rounds.append(r["ort_ms"])
            if ours and not ours_error:
                try:
                    mine.append(bench_ours(ours[0], ours[1], threads, min_runs,
                                           budget_ms / ORT_ROUNDS))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    ours_error = str(e)
            if imported and not onnx_error:
                try:
                    from_onnx.append(bench_ours(ours[0], imported, threads, min_runs,
                                                budget_ms / ORT_ROUNDS))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    onnx_error = str(e)
    if rounds:
        r["ort_ms"] = merge_stats(rounds)
    out = {"ort_ms": r.get("ort_ms"), "ort_prepare_ms": r.get("prepare_ms"),
           "ort_export_ms": sig(export_ms), "ort_max_abs_err": r.get("max_abs_err"),
           "ort_max_rel_err": r.get("max_rel_err"), "ort_version": r.get("version"),
           "ort_error": r.get("error", "")}
    err = r.get("max_rel_err")
    if r.get("ok") and (err is None or err > REL_TOL):
        out["ort_error"] = "ONNX Runtime's output differs from PyTorch eager: max rel err %s" % err
    elif not r.get("ok") and not out["ort_error"]:
        out["ort_error"] = "ort_workloads.js failed"
    if ours:
        out["ours_alone_ms"] = merge_stats(mine) if mine and not ours_error else None
        out["ours_alone_file"] = os.path.basename(ours[1])
        out["ours_alone_error"] = ours_error
        out["ours_onnx_ms"] = merge_stats(from_onnx) if from_onnx and not onnx_error else None
        out["ours_onnx_nodes"] = onnx_nodes
        out["ours_onnx_max_rel_err"] = onnx_err
        out["ours_onnx_error"] = onnx_error
        if not onnx_error and (onnx_err is None or onnx_err > REL_TOL):
            out["ours_onnx_error"] = "tracegraph's replay of the .onnx differs from PyTorch " \
                                     "eager: max rel err %s" % onnx_err
    return out


def ours_graph(args, name, threads):
    """(tracegraph, saved .tgraph) of our best level for this record, from
    the suite's result file and --tgraph-dir; None when either is missing."""
    if not args.tgraph_dir or not args.suite_json:
        return None
    level = 3  # the faster of -O2 and -O3 in the suite's rounds
    try:
        with open(args.suite_json) as f:
            for rec in json.load(f)["records"]:
                if rec["workload"] == name and rec["threads"] == threads:
                    t = {lv["level"]: lv["replay_ms"]["median"] for lv in rec["levels"]}
                    if t.get(2) is not None and (t.get(3) is None or t[2] < t[3]):
                        level = 2
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = os.path.join(args.tgraph_dir, "%s-O%d.tgraph" % (name, level))
    return (args.tracegraph, path) if os.path.exists(path) and args.tracegraph else None


def run_record(name, threads, min_runs, budget_ms, ort=True, ours=None):
    import torch
    torch.set_num_threads(threads)
    rec = {"workload": name, "threads": threads, "ok": False, "error": "",
           "loadavg": load_average()}
    model, x = build(name, torch)
    model.eval()
    t0 = now_ms()
    with torch.no_grad():
        jit = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x)))
    rec["jit_prepare_ms"] = sig(now_ms() - t0)

    def eager():
        with torch.inference_mode():
            model(x)

    def jitted():
        with torch.inference_mode():
            jit(x)

    rec["torch_eager_ms"], rec["torch_jit_ms"] = measure([eager, jitted], min_runs, budget_ms)
    with torch.inference_mode():
        ya, yb = model(x), jit(x)
    err_abs, err_rel = compare(yb, ya)
    rec["ok"] = err_rel <= REL_TOL
    if not rec["ok"]:
        rec["error"] = "jit output differs from eager: max rel err %.3g" % err_rel
    # JSON has no inf: a NaN mismatch is null, as in suite.c
    rec["max_abs_err"] = sig(err_abs) if math.isfinite(err_abs) else None
    rec["max_rel_err"] = sig(err_rel) if math.isfinite(err_rel) else None
    if ort:
        try:
            rec.update(run_ort(model, x, ya, threads, min_runs, budget_ms, ours))
        except Exception as e:  # an export or ORT failure costs the ORT column only
            rec["ort_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return rec


def torch_info():
    import torch
    blas = "?"
    try:
        with open("/proc/self/maps") as f:  # which libblas.so.3 the loader picked
            libs = {os.path.realpath(l.split()[-1]) for l in f if "blas" in l.split()[-1]}
        blas = ", ".join(sorted("/".join(p.split("/")[-2:]) for p in libs)) or "none loaded"
        for p in libs:  # OpenBLAS says which kernels it picked (Haswell = AVX2)
            if "openblas" in os.path.basename(p):
                lib = ctypes.CDLL(p)
                lib.openblas_get_config.restype = lib.openblas_get_corename.restype = ctypes.c_char_p
                conf = lib.openblas_get_config().decode().split()
                blas = "%s (%s, %s kernels)" % (" ".join(conf[:2]), os.path.basename(
                    os.path.dirname(p)), lib.openblas_get_corename().decode())
    except (OSError, AttributeError):
        pass
    cap = [l.split(":")[-1].strip() for l in torch.__config__.show().splitlines()
           if "CPU capability" in l]
    return {"version": torch.__version__, "python": sys.version.split()[0], "blas": blas,
            "capability": cap[0] if cap else "?", "mkldnn": torch.backends.mkldnn.is_available(),
            "cpu_fuser": torch._C._llvm_enabled() and torch._C._jit_texpr_fuser_enabled()}


# ---- the parent: one child per record, JSON out ----

def child_main(args):
    rec = run_record(args.child, args.child_threads, args.runs, args.budget_ms, not args.no_ort,
                     ours_graph(args, args.child, args.child_threads))
    if args.child_info:
        rec["torch"] = torch_info()
    json.dump(rec, sys.stdout)
    return 0


def run_child(args, name, threads, info):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--child-threads",
           str(threads), "--runs", str(args.runs), "--budget-ms", str(args.budget_ms)]
    if args.no_ort:
        cmd.append("--no-ort")
    for flag, val in (("--tgraph-dir", args.tgraph_dir), ("--suite-json", args.suite_json),
                      ("--tracegraph", args.tracegraph)):
        if val:
            cmd += [flag, val]
    if info:
        cmd.append("--child-info")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RECORD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"workload": name, "threads": threads, "ok": False,
                "error": "timed out after %d s" % RECORD_TIMEOUT_S}
    if p.returncode == 0:
        try:
            return json.loads(p.stdout)
        except ValueError:
            pass
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"workload": name, "threads": threads, "ok": False,
            "error": "child exited %d: %s" % (p.returncode, tail)}


def fmt_ms(s):
    return "%8.3f" % s["median"] if s else "    FAIL"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench/results/peers.json")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--budget-ms", type=float, default=1000.0)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="--runs 5 --budget-ms 50")
    ap.add_argument("--no-ort", action="store_true", help="do not measure ONNX Runtime")
    ap.add_argument("--tgraph-dir", help="the suite's saved graphs (suite --save-dir): our "
                    "best level is timed in turn with ONNX Runtime")
    ap.add_argument("--suite-json", help="the suite's result file (which level is best)")
    ap.add_argument("--tracegraph", help="the tracegraph CLI that times them")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--child-info", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.runs, args.budget_ms = 5, 50.0
    if args.child:
        return child_main(args)

    names = [w for w in args.workloads.split(",") if w]
    bad = [w for w in names if w not in WORKLOADS]
    try:
        threads = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        threads = []
    if bad:
        print("torch_workloads: unknown workload %s (known: %s)"
              % (",".join(bad), ",".join(WORKLOADS)), file=sys.stderr)
        return 2
    if not threads or min(threads) < 1 or args.runs < 1:
        print("torch_workloads: --threads wants counts >= 1 like 1,2 (got %s), --runs >= 1"
              % args.threads, file=sys.stderr)
        return 2
    out = {"schema": "tracegraph-peers-1", "ok": False, "error": "",
           "machine": {"cpu": cpu_name(), "cores": os.cpu_count(),
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "loadavg": load_average()},
           "torch": None,
           "config": {"min_runs": args.runs, "budget_ms": args.budget_ms, "rel_tolerance": REL_TOL},
           "total_s": None, "records": []}
    t0 = now_ms()
    try:
        import torch  # noqa: F401  (only to fail early with a clear message)
    except ImportError as e:
        out["error"] = "PyTorch is not importable by %s: %s" % (sys.executable, e)
        print("torch_workloads: " + out["error"], file=sys.stderr)
    else:
        for t in threads:
            for w in names:
                rec = run_child(args, w, t, info=out["torch"] is None)
                if "torch" in rec:
                    out["torch"] = rec.pop("torch")
                out["records"].append(rec)
                print("peers %-13s %d thr | torch eager %s ms | jit %s ms | rel err %s | ort %s ms%s%s" % (
                    w, t, fmt_ms(rec.get("torch_eager_ms")), fmt_ms(rec.get("torch_jit_ms")),
                    "%.1e" % rec["max_rel_err"] if rec.get("max_rel_err") is not None else "-",
                    fmt_ms(rec.get("ort_ms")),
                    " (%s)" % rec["ort_error"] if rec.get("ort_error") else "",
                    "" if rec["ok"] else " | FAILED: " + rec["error"]), file=sys.stderr)
        out["ok"] = all(r["ok"] for r in out["records"])
        if not out["ok"]:
            out["error"] = "; ".join("%s/t%d: %s" % (r["workload"], r["threads"], r["error"])
                                     for r in out["records"] if not r["ok"])
    out["total_s"] = round((now_ms() - t0) / 1000, 1)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, allow_nan=False, default=str)
        f.write("\n")
    print("torch_workloads: wrote %s" % args.out, file=sys.stderr)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
