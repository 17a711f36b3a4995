#!/bin/sh
# run.sh - the peer measurements of `make bench` (issue 6): installs Debian's
# PyTorch if it can (scripts/deps.sh python3-torch libopenblas0-openmp, i.e.
# only when benchmarking; `make test` never needs it), then times the
# workloads in PyTorch with torch_workloads.py under Debian's /usr/bin/python3.
#
#   bench/peers/run.sh OUT.json [torch_workloads.py flags...]
#
# It never fails `make bench`: when PyTorch cannot be installed (not root,
# no network) or a peer record fails, OUT.json says why ("ok": false,
# "error") and bench/table.sh prints that instead of the peer columns.
# OpenBLAS: python3-torch only depends on some libblas.so.3, which on Debian
# is the reference BLAS unless an optimized one is installed; the reference
# one makes PyTorch's linear layers 20-30x slower: not a fair peer.
# ONNX Runtime is not packaged in Debian 12 and PyPI is not reachable
# here, but its npm package (onnxruntime-node, the CPU build included) is:
# bench/peers/ort/package.json pins it, and it is installed here with npm
# (Node.js from Debian when there is none), then torch_workloads.py exports
# each workload to ONNX and times it with bench/peers/ort/ort_workloads.js.
# When that cannot be installed, the records say why and table.sh quotes
# the issue's ONNX Runtime figures instead.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: bench/peers/run.sh OUT.json [flags...]}
shift
py=/usr/bin/python3

# A result file that only says why nothing was measured.
fail() {
    msg=$(printf '%s' "$1" | tr -d '"\\' | tr '\n' ' ')
    printf '{"schema": "tracegraph-peers-1", "ok": false, "error": "%s",\n  "machine": {"date": "%s"}, "records": []}\n' \
        "$msg" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$out"
    echo "peers: not measured: $msg" >&2
    exit 0
}

deps=$("$root/scripts/deps.sh" python3-torch libopenblas0-openmp 2>&1) ||
    fail "PyTorch not installed and scripts/deps.sh could not install it: $(printf '%s' "$deps" | tail -n 1)"
[ -x "$py" ] || fail "no $py (Debian's python3, which python3-torch is built for)"

# ONNX Runtime (best effort: torch_workloads.py records why it is missing).
ort=$root/bench/peers/ort
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    "$root/scripts/deps.sh" nodejs npm >/dev/null 2>&1 ||
        echo "peers: Node.js/npm not installed (scripts/deps.sh nodejs npm failed)" >&2
fi
if command -v npm >/dev/null && [ ! -d "$ort/node_modules/onnxruntime-node" ]; then
    # --ignore-scripts: the CPU build is in the package; its install script
    # only fetches CUDA parts from NuGet, which is not reachable here
    (cd "$ort" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) ||
        echo "peers: npm could not install onnxruntime-node into $ort" >&2
fi
rm -f "$out" # never leave an older run's figures behind
st=0
"$py" "$root/bench/peers/torch_workloads.py" --out "$out" "$@" || st=$?
[ -s "$out" ] || fail "bench/peers/torch_workloads.py exited $st without writing $out"
[ $st -eq 0 ] || echo "peers: a PyTorch record failed (see $out); the table marks it" >&2
exit 0
