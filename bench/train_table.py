#!/usr/bin/python3
"""train_table.py - the table of the training benchmark (bench/train_compare.sh):
reads the JSON lines of bench/train.c (--ours), bench/peers/train_torch.py
(--torch) and the epoch runs (--epoch), prints a Markdown table and the
issue 32 targets met or missed, and writes --json (everything) and --md.

Times: each round's record holds the median of its timed steps; the table
gives the median over the rounds of those medians (ms), and min..max of
the round medians in the JSON.  Ratios are the median over the rounds of
each round's ratio (PyTorch's record of round r against ours of round r:
adjacent in time), so that load from elsewhere that changes between rounds
cancels out.  The arena ratio is the -O2 plan's arena
over the sum of the -O2 graph's intermediates (each in its own buffer);
the -O0 graph's sum is shown too.
"""
import argparse
import json
import statistics
import sys


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=2):
    return "—" if x is None else "%.*f" % (nd, x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--torch", required=True)
    ap.add_argument("--torch-auto")
    ap.add_argument("--epoch")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--isa", default="")
    ap.add_argument("--onednn", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args()
    ours, theirs = lines(a.ours), lines(a.torch)
    auto = lines(a.torch_auto) if a.torch_auto else []
    epoch = lines(a.epoch) if a.epoch else []
    models = []
    for r in ours + theirs:
        if r["model"] not in models:
            models.append(r["model"])
    rows = []
    for m in models:
        o = [r for r in ours if r["model"] == m]
        t = [r for r in theirs if r["model"] == m]
        row = {"model": m, "desc": o[0]["desc"] if o else "", "rounds": len(o),
               "torch_rounds": len(t)}
        for key in ("eager_ms", "replay_o0_ms", "replay_o2_ms"):
            row[key] = med([r[key]["median"] for r in o])
            row[key + "_range"] = [min((r[key]["median"] for r in o), default=None),
                                   max((r[key]["median"] for r in o), default=None)]
        row["torch_ms"] = med([r["torch_ms"]["median"] for r in t])
        row["torch_auto_ms"] = med([r["torch_ms"]["median"] for r in auto if r["model"] == m])
        row["torch_ms_range"] = [min((r["torch_ms"]["median"] for r in t), default=None),
                                 max((r["torch_ms"]["median"] for r in t), default=None)]
        # ratios: the median over the rounds of each round's ratio (ours and
        # PyTorch's runs of a round are adjacent in time, so a change of the
        # machine's load between rounds cancels out), not the ratio of the
        # medians
        row["torch_over_o2"] = med([s["torch_ms"]["median"] / r["replay_o2_ms"]["median"]
                                    for r, s in zip(o, t)])
        row["eager_over_o2"] = med([r["eager_ms"]["median"] / r["replay_o2_ms"]["median"]
                                    for r in o])
        row["loss_gap_o0"] = max((r["loss_gap_o0"] for r in o), default=None)
        row["loss_gap_o2"] = max((r["loss_gap_o2"] for r in o), default=None)
        row["state_gap_o0"] = max((r.get("state_gap_o0") or 0 for r in o), default=None)
        row["state_gap_o2"] = max((r.get("state_gap_o2") or 0 for r in o), default=None)
        if o and t:
            row["loss0_vs_torch"] = max(abs(r["loss0"] - s["loss0"]) / abs(s["loss0"])
                                        for r in o for s in t)
        else:
            row["loss0_vs_torch"] = None
        if o:
            for k in ("naive_o0_bytes", "arena_o0_bytes", "naive_o2_bytes", "arena_o2_bytes",
                      "workspace_o2_bytes", "lower_bound_o2_bytes", "nodes_o0", "nodes_o2",
                      "states"):
                row[k] = o[0].get(k)
            row["arena_ratio"] = row["arena_o2_bytes"] / row["naive_o2_bytes"]
            row["arena_ratio_vs_o0"] = row["arena_o2_bytes"] / row["naive_o0_bytes"]
        rows.append(row)

    md = []
    md.append("Machine: %s, 1 thread; our kernels: %s, oneDNN: %s; PyTorch %s (its matrix "
              "products on OpenBLAS with OPENBLAS_CORETYPE=%s; \"as installed\": OpenBLAS's own "
              "choice); commit %s; %d alternating rounds; times are medians over the rounds of "
              "each round's median step, ratios medians of each round's ratio." % (
                  a.cpu, a.isa, a.onednn, theirs[0]["torch_version"] if theirs else "—",
                  theirs[0].get("openblas_coretype", "?") if theirs else "—", a.commit,
                  a.rounds))
    md.append("")
    md.append("| model | ours eager ms | replay -O0 ms | replay -O2 ms | PyTorch ms | "
              "PyTorch as installed ms | PyTorch / -O2 | eager / -O2 | arena MB | "
              "naive MB (-O2; -O0) | arena / naive | "
              "replay vs eager: loss, state (-O0; -O2) | first loss vs PyTorch |")
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        md.append(("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s; %s | %s "
                   "| %.1g, %.1g; %.1g, %.1g | %.1g |") % (
            r["model"], fmt(r["eager_ms"]), fmt(r["replay_o0_ms"]), fmt(r["replay_o2_ms"]),
            fmt(r["torch_ms"]), fmt(r["torch_auto_ms"]), fmt(r["torch_over_o2"]) + "x",
            fmt(r["eager_over_o2"]) + "x",
            fmt(r.get("arena_o2_bytes", 0) / 1e6, 1), fmt(r.get("naive_o2_bytes", 0) / 1e6, 1),
            fmt(r.get("naive_o0_bytes", 0) / 1e6, 1), fmt(r.get("arena_ratio"), 3),
            r["loss_gap_o0"] or 0, r["state_gap_o0"] or 0, r["loss_gap_o2"] or 0,
            r["state_gap_o2"] or 0, r["loss0_vs_torch"] or 0))
    ep = {}
    for r in epoch:
        if "torch_test_acc" in r:
            ep.update({"torch_test_acc": r["torch_test_acc"], "seconds_torch": r["seconds"],
                       "loss_last_torch": r["loss_last"], "loss_first_torch": r["loss_first"]})
        else:
            ep.update(r)
    if ep:
        md.append("")
        md.append("Fashion-MNIST, one epoch of the MLP (937 batches of 64, same initial weights "
                  "and batch order): ours (1 eager step, 1 traced, 935 replayed at -O2) test "
                  "accuracy %s in %s s, PyTorch %s in %s s; difference %s points." % (
                      fmt(ep.get("test_acc", 0) * 100), fmt(ep.get("seconds"), 1),
                      fmt(ep.get("torch_test_acc", 0) * 100), fmt(ep.get("seconds_torch"), 1),
                      fmt(abs(ep.get("test_acc", 0) - ep.get("torch_test_acc", 0)) * 100)))
    md.append("")
    md.append("Targets (issue 32):")
    for r in rows:
        t1 = r["torch_over_o2"]
        md.append("- %s: replay -O2 >= 1.3x faster than PyTorch eager: %s (%sx)" % (
            r["model"], "met" if t1 and t1 >= 1.3 else "MISSED", fmt(t1, 3)))
        if r["model"] != "mlp":
            t2 = r["eager_over_o2"]
            md.append("- %s: replay -O2 >= 1.3x faster than our eager: %s (%sx)" % (
                r["model"], "met" if t2 and t2 >= 1.3 else "MISSED", fmt(t2, 3)))
        ar = r.get("arena_ratio")
        md.append("- %s: arena <= 0.6x the sum of intermediates: %s (%s)" % (
            r["model"], "met" if ar is not None and ar <= 0.6 else "MISSED", fmt(ar, 3)))
    if ep:
        d = abs(ep.get("test_acc", 0) - ep.get("torch_test_acc", 0)) * 100
        md.append("- epoch test accuracy within 1 point of PyTorch's: %s (%s points)" % (
            "met" if d <= 1 else "MISSED", fmt(d)))
    text = "\n".join(md) + "\n"
    sys.stdout.write(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    if a.json:
        top = json.dumps({"schema": "tracegraph-train-1", "cpu": a.cpu, "cpu_kernels": a.isa,
                          "onednn_isa": a.onednn, "commit": a.commit, "rounds": a.rounds,
                          "models": rows, "epoch": ep}, indent=1)
        # the raw records one per line
        parts = [top[:-2]]
        for key, recs in (("ours_records", ours), ("torch_records", theirs),
                          ("torch_auto_records", auto)):
            parts.append(',\n "%s": [\n  %s\n ]' % (key, ",\n  ".join(json.dumps(r) for r in recs)))
        with open(a.json, "w") as f:
            f.write("".join(parts) + "\n}\n")
    bad = [r for r in rows if max(r["loss_gap_o0"] or 0, r["loss_gap_o2"] or 0,
                                  r["state_gap_o0"] or 0, r["state_gap_o2"] or 0) > 1e-3]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
