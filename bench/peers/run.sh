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
# ONNX Runtime is not packaged in Debian 12 (and PyPI is not reachable
# here), so it is not measured; table.sh quotes the issue's figures.
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
rm -f "$out" # never leave an older run's figures behind
st=0
"$py" "$root/bench/peers/torch_workloads.py" --out "$out" "$@" || st=$?
[ -s "$out" ] || fail "bench/peers/torch_workloads.py exited $st without writing $out"
[ $st -eq 0 ] || echo "peers: a PyTorch record failed (see $out); the table marks it" >&2
exit 0
