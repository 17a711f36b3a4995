#!/usr/bin/env python3
"""merge.py - pools the rounds of bench/gpu/run.sh into one result and its table.

    python3 bench/gpu/merge.py OUT.json OUT.md OURS_ROUND.json... [--peer PEER_ROUND.json...]

OURS_ROUND files are gpu_bench's (schema tracegraph-gpu-round-1), PEER_ROUND
files torch_cuda.py's (tracegraph-torch-cuda-round-1).  Every run's time of
every round is pooled: a median is the median of all of them.  An error is
the largest of any round.  Standard library only.  Writes OUT.json (schema
"tracegraph-gpu-1", below), OUT.md (the Markdown table) and prints the table
last on stdout.  Exit status 1 when a workload or level failed or an error
is above the tolerance (1e-4 against the CPU replay), 0 otherwise.

OUT.json: {"schema", "device", "cpu", "cores", "threads", "date", "rounds",
  "peer": {"device", "torch", "rounds", "error"} ,
  "ok", "records": [{"workload", "desc", "ok", "errors": [...],
     "eager_ms": {"median", "min", "runs"},
     "levels": [{"level", "ok", "compile_ms", "host_ms": {...}, "device_ms": {...},
                 "host_rel_err", "device_rel_err", "kernels_per_run", "blas_calls_per_run",
                 "args_set_per_run", "enqueue_us_per_run" (host us enqueueing a run, the
                 median of the rounds)}],
     "best_device_ms", "best_level",
     "torch_eager_ms": {...} or null, "torch_graph_ms": {...} or null,
     "torch_rel_err", "vs_cuda_graph": best_device_ms / torch graph median}]}
"""
import json
import sys

TOL = 1e-4
NLEVELS = 4


def stats(times):
    if not times:
        return None
    t = sorted(times)
    return {"median": t[len(t) // 2], "min": t[0], "runs": len(t)}


def worst(values):
    """The largest error; None (not measured) when any is missing."""
    if not values or any(v is None for v in values):
        return None
    return max(values)


def first_measured(values):
    """The first value measured (a count every round agrees on), or None."""
    return next((v for v in values if v is not None), None)


def median_measured(values):
    """The median of the values measured (upper middle), or None."""
    v = sorted(x for x in values if x is not None)
    return v[len(v) // 2] if v else None


def fmt(ms):
    if ms is None:
        return "–"
    return "%.3g" % ms if ms < 100 else "%.0f" % ms


def fmt_err(e):
    return "–" if e is None else ("0" if e == 0 else "%.1e" % e)


def main(argv):
    if len(argv) < 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out_json, out_md, rest = argv[1], argv[2], argv[3:]
    ours_files, peer_files, target = [], [], None
    for a in rest:
        if a == "--peer":
            target = peer_files
        else:
            (target if target is not None else ours_files).append(a)
    ours = [json.load(open(f)) for f in ours_files]
    peers = [json.load(open(f)) for f in peer_files]
    if not ours:
        print("merge.py: no gpu_bench round to merge", file=sys.stderr)
        return 2
    first = ours[0]
    names = []
    for r in ours:
        for rec in r["records"]:
            if rec["workload"] not in names:
                names.append(rec["workload"])
    peer_ok = [p for p in peers if p.get("device")]
    peer_error = "" if peer_ok else (peers[0]["error"] if peers else "not run")
    result = {"schema": "tracegraph-gpu-1", "device": first.get("device"), "cpu": first.get("cpu"),
              "cores": first.get("cores"), "threads": first.get("threads"),
              "date": first.get("date"), "rounds": len(ours),
              "peer": {"device": peer_ok[0]["device"] if peer_ok else None,
                       "torch": peers[0].get("torch") if peers else None,
                       "rounds": len(peer_ok), "error": peer_error},
              "ok": True, "records": []}
    for name in names:
        recs = [rec for r in ours for rec in r["records"] if rec["workload"] == name]
        out = {"workload": name, "desc": recs[0].get("desc", ""), "ok": all(r["ok"] for r in recs),
               "errors": sorted({r["error"] for r in recs if r["error"]}),
               "eager_ms": stats([t for r in recs for t in r["eager_ms"]]), "levels": []}
        best = None
        for l in range(NLEVELS):
            lv = [r["levels"][l] for r in recs if len(r["levels"]) > l]
            host = stats([t for x in lv for t in x["host_ms"]])
            dev = stats([t for x in lv for t in x["device_ms"]])
            comp = stats([x["compile_ms"] for x in lv if x["compile_ms"] is not None])
            he = worst([x["host_rel_err"] for x in lv])
            de = worst([x["device_rel_err"] for x in lv])
            ok = all(x["ok"] for x in lv) and he is not None and de is not None and \
                he <= TOL and de <= TOL
            for x in lv:
                if x["error"] and ("-O%d: %s" % (l, x["error"])) not in out["errors"]:
                    out["errors"].append("-O%d: %s" % (l, x["error"]))
            launches = [(x.get("kernels_per_run"), x.get("blas_calls_per_run")) for x in lv]
            launches = [k for k in launches if k[0] is not None and k[1] is not None]
            out["levels"].append({"level": l, "ok": ok,
                                  "compile_ms": comp["median"] if comp else None,
                                  "host_ms": host, "device_ms": dev,
                                  "host_rel_err": he, "device_rel_err": de,
                                  "kernels_per_run": launches[0][0] if launches else None,
                                  "blas_calls_per_run": launches[0][1] if launches else None,
                                  "args_set_per_run": first_measured(
                                      [x.get("args_set_per_run") for x in lv]),
                                  "enqueue_us_per_run": median_measured(
                                      [x.get("enqueue_us_per_run") for x in lv])})
            out["ok"] = out["ok"] and ok
            if dev and (best is None or dev["median"] < best[1]):
                best = (l, dev["median"])
        out["best_level"], out["best_device_ms"] = (best if best else (None, None))
        precs = [rec for p in peer_ok for rec in p["records"] if rec["workload"] == name]
        te = stats([t for r in precs for t in r["eager_ms"]])
        tg = stats([t for r in precs for t in r["graph_ms"]])
        errs = [e for r in precs for e in (r["eager_rel_err"], r["graph_rel_err"]) if e is not None]
        out["torch_eager_ms"], out["torch_graph_ms"] = te, tg
        out["torch_rel_err"] = max(errs) if errs else None
        out["torch_errors"] = sorted({r["error"] for r in precs if r["error"]})
        out["vs_cuda_graph"] = best[1] / tg["median"] if best and tg else None
        result["ok"] = result["ok"] and out["ok"]
        result["records"].append(out)
    with open(out_json, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    table = render(result)
    with open(out_md, "w") as f:
        f.write(table)
    problems = [(r["workload"], e) for r in result["records"] for e in r["errors"]]
    problems += [(r["workload"], "peer: " + e) for r in result["records"] for e in r["torch_errors"]]
    for w, e in problems:
        print("merge.py: %s: %s" % (w, e), file=sys.stderr)
    sys.stdout.write("\n" + table)
    sys.stdout.flush()
    return 0 if result["ok"] else 1


def render(r):
    peer = r["peer"]
    lines = [
        "GPU benchmark (bench/gpu/run.sh, issue 20): OpenCL device %s; CPU %s (%s cores, eager "
        "on %s threads); %s; %d round%s%s. Times in ms, medians of every run of every round; "
        "host: inputs written and outputs read back each run, dev: inputs and outputs as cl_mem "
        "on the device (replay_tensor.buffer), no host copies. Max rel err: the largest of "
        "every level and both ways against the CPU replay of the same level (limit 1e-4)."
        % (r["device"], r["cpu"], r["cores"], r["threads"], r["date"], r["rounds"],
           "s" if r["rounds"] != 1 else "",
           ("; PyTorch %s on the CPU (--peer-device cpu: a check of the peer's code, not a GPU "
            "figure; its columns are CPU eager times)" % peer["torch"] if peer["device"] == "cpu"
            else "; PyTorch %s CUDA on %s, fp32, TF32 off, same rounds alternating"
            % (peer["torch"], peer["device"]))
           if peer["device"] else "; PyTorch CUDA peer: %s" % (peer["error"] or "not run")),
        "",
        "| workload | CPU eager | -O0 host / dev | -O1 host / dev | -O2 host / dev | -O3 host / dev "
        "| max rel err | launches | CUDA eager | CUDA graph | best dev / CUDA graph |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rec in r["records"]:
        cells = [rec["workload"] + ("" if rec["ok"] else " ✗"), fmt(rec["eager_ms"]["median"] if rec["eager_ms"] else None)]
        errs = []
        for lv in rec["levels"]:
            h, d = lv["host_ms"], lv["device_ms"]
            if h is None and d is None:
                cells.append("FAILED")
            else:
                c = "%s / %s" % (fmt(h["median"] if h else None), fmt(d["median"] if d else None))
                if d and rec["best_level"] == lv["level"]:
                    c = "%s / **%s**" % (fmt(h["median"] if h else None), fmt(d["median"]))
                cells.append(c + ("" if lv["ok"] else " ✗"))
            errs += [lv["host_rel_err"], lv["device_rel_err"]]
        e = worst(errs)
        cells.append(fmt_err(e) + (" ✗" if e is None or e > TOL else ""))
        bl = [lv for lv in rec["levels"] if lv["level"] == rec["best_level"]]
        k = bl[0].get("kernels_per_run") if bl else None
        b = bl[0].get("blas_calls_per_run") if bl else None
        cells.append("–" if k is None else "%d" % k + (" + %d CLBlast" % b if b else ""))
        te, tg = rec["torch_eager_ms"], rec["torch_graph_ms"]
        cells += [fmt(te["median"] if te else None), fmt(tg["median"] if tg else None),
                  "%.2f×" % rec["vs_cuda_graph"] if rec["vs_cuda_graph"] else "–"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("✗: failed or above the tolerance (the reasons are printed above the table). "
                 "Bold: the fastest device-resident level, which the ratio uses. Launches: what "
                 "one run of that level enqueues, our kernels (+ CLBlast calls, each one or more "
                 "kernels of its own); through NVIDIA's OpenCL each launch costs microseconds of "
                 "host time.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
