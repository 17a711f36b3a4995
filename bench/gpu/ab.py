#!/usr/bin/env python3
"""ab.py - the table of bench/gpu/ab.sh: each setting's best device-resident
median per workload against the default's, from merge.py's results.

    python3 bench/gpu/ab.py DEFAULT.json NAME=VARIANT.json... > table.md

Each file is merge.py's OUT.json (schema tracegraph-gpu-1) of the same
workloads on the same device.  A cell is the setting's best device-resident
median over the levels (ms), its ratio to the default's (below 1: faster),
the kernels + CLBlast calls one run of that level enqueued and the host time
enqueueing one run (us; near the median, the run waits on the host).  A workload
that failed or differs from the CPU replay by more than the tolerance shows
FAIL.  Standard library only.  Exit status 1 when any cell failed.
"""
import json
import sys


def best(rec):
    """(ms, launches text, level, enqueue us) of the record's best level, or None
    when it failed."""
    if not rec or not rec.get("ok") or rec.get("best_device_ms") is None:
        return None
    lv = [x for x in rec.get("levels", []) if x.get("level") == rec.get("best_level")]
    k = lv[0].get("kernels_per_run") if lv else None
    b = lv[0].get("blas_calls_per_run") if lv else None
    launches = "?" if k is None else ("%d" % k if not b else "%d+%d" % (k, b))
    us = lv[0].get("enqueue_us_per_run") if lv else None
    return rec["best_device_ms"], launches, rec.get("best_level"), us


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    sets = [("default", argv[1])]
    for a in argv[2:]:
        name, _, path = a.partition("=")
        if not path:
            print("ab.py: want NAME=FILE, not %r" % a, file=sys.stderr)
            return 2
        sets.append((name, path))
    data = []
    for name, path in sets:
        with open(path) as f:
            d = json.load(f)
        data.append((name, {r["workload"]: r for r in d.get("records", [])}, d))
    names = []
    for _, recs, _ in data:
        for w in recs:
            if w not in names:
                names.append(w)
    dev = data[0][2].get("device") or "?"
    print("Best device-resident median per workload (ms; ratio to the default; level; "
          "launches per run; host us enqueueing a run), device %s\n" % dev)
    print("| workload | " + " | ".join(n for n, _, _ in data) + " |")
    print("|---|" + "---:|" * len(data))
    failed = False
    for w in names:
        base = best(data[0][1].get(w))
        cells = []
        for i, (_, recs, _) in enumerate(data):
            b = best(recs.get(w))
            if b is None:
                cells.append("FAIL" if w in recs else "–")
                failed |= w in recs
                continue
            ms, launches, level, us = b
            ratio = "" if i == 0 or base is None else " (%.2f)" % (ms / base[0])
            cells.append("%.4g%s O%s %s %s" % (ms, ratio, level, launches,
                                              "?" if us is None else "%.0fus" % us))
        print("| %s | %s |" % (w, " | ".join(cells)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
