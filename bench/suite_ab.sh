#!/bin/sh
# suite_ab.sh - two builds' bench/suite, alternating rounds: the medians
# of the one-shot figures (trace, load and compile at each level), which a
# single suite run gives once each.
#
#   bench/suite_ab.sh OLD_SUITE NEW_SUITE ROUNDS [suite options...]
#
# e.g. bench/suite_ab.sh /tmp/base/build/suite build/suite 9 --quick
# --threads 1 --no-opencl.  Each round runs OLD then NEW (NEW then OLD in
# odd rounds); prints per workload the median over the rounds of trace_ms,
# and at -O0..-O3 of load_ms and compile_ms, old -> new (ms).
set -u
old=${1:?usage: bench/suite_ab.sh OLD_SUITE NEW_SUITE ROUNDS [suite options...]}
new=${2:?usage}
rounds=${3:?usage}
shift 3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for v in $order; do
        if [ "$v" = old ]; then s=$old; else s=$new; fi
        "$s" "$@" --out "$tmp/$v.$r.json" 2>/dev/null >/dev/null ||
            echo "suite_ab: $v round $r failed" >&2
    done
done
python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
fig = {}  # (workload, threads, what) -> {old: [...], new: [...]}
for v in ("old", "new"):
    for r in range(1, rounds + 1):
        try:
            d = json.load(open(f"{tmp}/{v}.{r}.json"))
        except (OSError, ValueError):
            continue
        for rec in d["records"]:
            key = (rec["workload"], rec["threads"])
            def put(what, x):
                if x is not None:
                    fig.setdefault(key + (what,), {"old": [], "new": []})[v].append(x)
            put("trace", rec.get("trace_ms"))
            for lv in rec.get("levels", []):
                put("load -O%d" % lv["level"], lv.get("load_ms"))
                put("compile -O%d" % lv["level"], lv.get("compile_ms"))
def med(xs):
    return statistics.median(xs) if xs else float("nan")
print("%-14s %2s %-12s %10s %10s %7s" % ("workload", "t", "figure", "old ms", "new ms", "new/old"))
for key in fig:
    o, n = med(fig[key]["old"]), med(fig[key]["new"])
    print("%-14s %2d %-12s %10.4f %10.4f %7.2f" % (key[0], key[1], key[2], o, n, n / o if o else float("nan")))
PY
