#!/usr/bin/python3
"""run.py - the real-model benchmark of issue 17 (`make bench-real`): for
each model that bench/real/export.py wrote into DIR, imports it with
`tracegraph opt -O0` and `-O3`, checks both replays against PyTorch's
output, and times them against ONNX Runtime on the same model.onnx.

    /usr/bin/python3 bench/real/run.py DIR --tracegraph build/tracegraph
        [--threads 1,2] [--rounds 3] [--budget-ms 1000] [--json OUT.json]
        [--md OUT.md] [--update] [MODEL...]

Check: `tracegraph run X.tgraph -i x.npy -o out.npy` against y.npy; the
error is max|ours - torch| (abs) and that over max|torch| (rel, as
bench/suite.c).  A replay passes at rel <= 1e-3 (float32 sums in other
orders through 50-150 layers; a wrong kernel is off by O(1)).

Timing, per thread count: ROUNDS rounds, each timing -O0, -O3 and ONNX
Runtime in turn (alternating, so that load from other processes on a
shared machine falls on all three alike); a round is one process each,
`tracegraph bench X.tgraph -i x.npy --runs N --warmup W --threads T` and
`node bench/peers/ort/ort_workloads.js` (graph optimizations all, T intra-op
threads, a median of runs until both RUNS and BUDGET_MS are spent).  The
first round (1 run after 1 warm-up) sizes N so that the later rounds
take about BUDGET_MS each (2 warm-up runs, then at least 1).  The figure is the median of the rounds' medians; the ratio
-O3/ORT above 1 means tracegraph is slower.

Where it ran (issue 30): every record names the CPU model and the
instruction sets in use, `tracegraph version`'s "CPU kernels" (TG_CPU lowers
it) and "oneDNN ISA" (ONEDNN_MAX_CPU_ISA caps it), in "isa"; the Markdown
says them above the table and in an ISA column.

Writes the results as JSON (--json) and as a Markdown table (--md, and on
stdout); --update keeps the records of the models not run now from the
--json file (a rerun of a few).  A model that fails to import, run or time keeps its row, with the
error message: that is data for the issue.  Exit status 0 unless the
command line is wrong.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_JS = os.path.join(ROOT, "bench", "peers", "ort", "ort_workloads.js")
REL_TOL = 1e-3


def first_error(text):
    """The line of a tool's stderr that says what went wrong."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l[:300]
    return (lines[-1] if lines else "no message")[:300]


def sh(cmd, timeout=900):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s: %s" % (timeout, " ".join(cmd)), time.time() - t0
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def compare(got_path, ref):
    got = np.load(got_path)
    if got.shape != ref.shape:
        return None, None, "output shape %s, PyTorch's %s" % (got.shape, ref.shape)
    if np.isnan(got).any() != np.isnan(ref).any():
        return None, None, "NaN where PyTorch has none (or the reverse)"
    d = float(np.abs(got.astype(np.float64) - ref).max())
    scale = float(np.abs(ref).max())
    return d, d / scale if scale > 0 else d, None


def bench_ours(tg, tgraph, x, threads, runs, warmup):
    rc, out, err, _ = sh([tg, "bench", tgraph, "-i", x, "--runs", str(runs), "--warmup",
                          str(warmup), "--threads", str(threads)])
    m = re.search(r"median ([0-9.eE+-]+) ms", out)
    if rc != 0 or not m:
        raise RuntimeError("tracegraph bench: " + first_error(err or out))
    return float(m.group(1))


def bench_ort(d, dims, threads, runs, budget_ms):
    rc, out, err, _ = sh(["node", ORT_JS, os.path.join(d, "model.onnx"), os.path.join(d, "x.bin"),
                          ",".join(map(str, dims)), os.path.join(d, "y.bin"), str(threads),
                          str(runs), str(budget_ms)])
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError("ort_workloads.js: " + first_error(err or out))
    if not r.get("ok"):
        raise RuntimeError("ONNX Runtime: " + first_error(str(r.get("error"))))
    return r["ort_ms"]["median"], r


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def where(tg):
    """The CPU and the instruction sets tracegraph runs at here (as the
    timed processes inherit this environment: TG_CPU, ONEDNN_MAX_CPU_ISA)."""
    rc, out, err, _ = sh([tg, "version"], timeout=60)
    def field(name):
        m = re.search(r"^%s: *(\S+)" % name, out, re.M)
        return m.group(1) if m else "?"
    return {"cpu": cpu_model(), "cpu_kernels": field("CPU kernels"),
            "onednn_isa": field("oneDNN ISA")}


def isa_text(isa):
    return "%s / %s" % (isa.get("cpu_kernels", "?"), isa.get("onednn_isa", "?")) if isa else "?"


def run_model(name, d, tg, threads_list, rounds, budget_ms, isa):
    # the 1-minute load average when the model starts: above 0, other work
    # shared the cores during its timings
    rec = {"model": name, "error": None, "levels": {}, "timing": {},
           "loadavg": round(os.getloadavg()[0], 2), "isa": isa}
    err_file = d.rstrip("/") + ".export-error"
    if os.path.exists(err_file):
        rec["error"] = "export: " + open(err_file).read().strip()
        return rec
    onnx = os.path.join(d, "model.onnx")
    missing = [f for f in ("model.onnx", "x.npy", "y.npy", "x.bin", "y.bin")
               if not os.path.exists(os.path.join(d, f))]
    if missing:
        rec["error"] = "not exported: no %s in %s (bench/real/export.py writes them)" % (
            ", ".join(missing), d)
        return rec
    x, ref = os.path.join(d, "x.npy"), np.load(os.path.join(d, "y.npy")).astype(np.float64)
    rec["onnx_mb"] = round(os.path.getsize(onnx) / 1e6, 2)
    rec["dims"] = list(np.load(x).shape)
    for lvl in ("O0", "O3"):
        L = rec["levels"][lvl] = {"error": None}
        tgraph = os.path.join(d, lvl + ".tgraph")
        rc, out, err, dt = sh([tg, "opt", "-" + lvl, onnx, tgraph])
        L["opt_s"] = round(dt, 2)
        if rc != 0:
            L["error"] = "opt -%s: %s" % (lvl, first_error(err or out))
            continue
        outp = os.path.join(d, lvl + ".out.npy")
        rc, out, err, dt = sh([tg, "run", tgraph, "-i", x, "-o", outp])
        if rc != 0:
            L["error"] = "run: " + first_error(err or out)
            continue
        a, r, why = compare(outp, ref)
        L["abs_err"], L["rel_err"] = a, r
        if why:
            L["error"] = why
        elif r > REL_TOL:
            L["error"] = "differs from PyTorch: max rel err %.3g" % r
    ok_levels = [l for l in ("O0", "O3") if rec["levels"][l]["error"] is None]
    for t in threads_list:
        T = rec["timing"][str(t)] = {"error": None}
        samples = {l: [] for l in ok_levels + ["ort"]}
        runs = {l: 1 for l in ok_levels}
        errors = {}
        for r in range(rounds):
            for l in ok_levels + ["ort"]:
                if l in errors:
                    continue
                try:
                    if l == "ort":
                        ms, o = bench_ort(d, rec["dims"], t, 3, budget_ms if r else 0)
                        if r == 0:
                            T["ort_rel_err"] = o.get("max_rel_err")
                            T["ort_version"] = o.get("version")
                    else:
                        ms = bench_ours(tg, os.path.join(d, l + ".tgraph"), x, t, runs[l],
                                        1 if r == 0 else 2)
                        if r == 0:  # size the next rounds to about budget_ms
                            runs[l] = max(1, min(200, int(budget_ms / max(ms, 1e-3))))
                    samples[l].append(ms)
                except RuntimeError as e:
                    errors[l] = str(e)
        if errors:
            T["error"] = "; ".join(errors.values())
        for l, s in samples.items():
            if s:
                T[l + "_ms"] = statistics.median(s)
                T[l + "_rounds"] = s
    return rec


def fmt_ms(v):
    if v is None:
        return "—"
    return "%.3g" % v if v < 100 else "%.0f" % v


def fmt_err(L):
    if L.get("rel_err") is None:
        return "—"
    return "%.1e" % L["rel_err"]


def markdown(recs, threads_list):
    isas = {tuple((r.get("isa") or {}).get(k, "?") for k in ("cpu", "cpu_kernels", "onednn_isa"))
            for r in recs}
    if len(isas) == 1:
        cpu, k, o = isas.pop()
        pre = ("**Ran on** %s: tracegraph CPU kernels **%s**, oneDNN ISA **%s** "
               "(`TG_CPU` and `ONEDNN_MAX_CPU_ISA` lower them; ONNX Runtime picks its own).\n\n"
               % (cpu, k, o))
    else:
        pre = ("**Ran on** more than one CPU or instruction set (`--update` kept older rows): "
               "see the ISA column (tracegraph kernels / oneDNN).\n\n")
    head = (pre + "| model | .onnx MB | rel err -O0 / -O3 | threads | -O0 ms | -O3 ms | ORT ms "
            "| -O3/-O0 | -O3/ORT | ISA (kernels / oneDNN) | notes |\n"
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n")
    rows = []
    for rec in recs:
        isa = isa_text(rec.get("isa"))
        if rec["error"]:
            rows.append("| %s | — | — | — | — | — | — | — | — | %s | %s |" %
                        (rec["model"], isa, rec["error"].replace("|", "/")))
            continue
        lv = rec["levels"]
        errs = "%s / %s" % (fmt_err(lv["O0"]), fmt_err(lv["O3"]))
        notes = [lv[l]["error"] for l in ("O0", "O3") if lv[l]["error"]]
        for i, t in enumerate(threads_list):
            T = rec["timing"].get(str(t), {})
            o0, o3, ort = T.get("O0_ms"), T.get("O3_ms"), T.get("ort_ms")
            n = list(notes) if i == 0 else []
            if T.get("error"):
                n.append(T["error"])
            if o0 and o3 and o3 > o0 * 1.05:
                n.append("-O3 slower than -O0")
            rows.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                rec["model"] if i == 0 else "", rec["onnx_mb"] if i == 0 else "",
                errs if i == 0 else "", t, fmt_ms(o0), fmt_ms(o3), fmt_ms(ort),
                "%.2f" % (o3 / o0) if o0 and o3 else "—",
                "**%.2f**" % (o3 / ort) if o3 and ort else "—", isa,
                "; ".join(x.replace("|", "/") for x in n)))
    return head + "\n".join(rows) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description="the real-model benchmark of issue 17")
    ap.add_argument("dir")
    ap.add_argument("models", nargs="*")
    ap.add_argument("--tracegraph", default=os.path.join(ROOT, "build", "tracegraph"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget-ms", type=float, default=1000)
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--update", action="store_true",
                    help="keep the other models' records of the --json file (rerun some)")
    a = ap.parse_intermixed_args(argv)
    try:
        threads_list = [int(t) for t in a.threads.split(",")]
    except ValueError:
        ap.error("--threads: a comma-separated list of counts, not %r" % a.threads)
    if a.rounds < 1 or any(t < 1 for t in threads_list):
        ap.error("--rounds and --threads must be >= 1")
    names = a.models
    if not names:
        names = sorted({f[:-len(".export-error")] if f.endswith(".export-error") else f
                        for f in os.listdir(a.dir)
                        if f.endswith(".export-error")
                        or os.path.exists(os.path.join(a.dir, f, "y.npy"))})
        from_export = os.path.join(a.dir, "order.txt")
        if os.path.exists(from_export):
            order = open(from_export).read().split()
            names = [n for n in order if n in names] + [n for n in names if n not in order]
    isa = where(a.tracegraph)
    print("real: on %s; CPU kernels %s, oneDNN ISA %s" % (isa["cpu"], isa["cpu_kernels"],
                                                           isa["onednn_isa"]),
          file=sys.stderr, flush=True)
    recs = []
    for name in names:
        t0 = time.time()
        rec = run_model(name, os.path.join(a.dir, name), a.tracegraph, threads_list,
                        a.rounds, a.budget_ms, isa)
        rec["wall_s"] = round(time.time() - t0, 1)
        recs.append(rec)
        short = {t: (v.get("O0_ms"), v.get("O3_ms"), v.get("ort_ms"), v.get("error"))
                 for t, v in rec["timing"].items()}
        print("real %-30s %5.1f s  err %s  %s" % (
            name, rec["wall_s"], rec["error"] or
            {l: (v.get("rel_err"), v["error"]) for l, v in rec["levels"].items()}, short),
            file=sys.stderr, flush=True)
    if a.update and a.json and os.path.exists(a.json):
        # the models run now replace theirs; the others keep the file's order
        old = json.load(open(a.json))["records"]
        new = {r["model"]: r for r in recs}
        recs = [new.pop(r["model"], r) for r in old] + list(new.values())
    md = markdown(recs, threads_list)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"schema": "tracegraph-real-1", "machine": isa, "threads": threads_list,
                       "rounds": a.rounds, "budget_ms": a.budget_ms, "records": recs}, f,
                      indent=1)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
