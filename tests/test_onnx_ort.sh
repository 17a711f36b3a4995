#!/usr/bin/env bash
# test_onnx_ort.sh - ONNX export checked by ONNX Runtime: test_onnx_export
# --ort-cases writes every case (one graph per op of ops.def and the traced
# models at -O0 and -O3) with its inputs and the reference interpreter's
# outputs; tests/onnx_ort_check.js runs them in onnxruntime-node and
# compares.
#
#   tests/test_onnx_ort.sh TEST_ONNX_EXPORT BUILD_DIR
#
# ONNX Runtime is the npm package onnxruntime-node at the version
# bench/peers/ort pins (package.json + package-lock.json), installed with
# `npm ci --ignore-scripts` (the CPU build is in the package; its install
# script only fetches CUDA parts) into a cache outside the repo:
# ${TG_ORT_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tracegraph/ort}, reused while
# its lock file equals the pinned one.  Node.js and npm come from Debian
# (scripts/deps.sh nodejs npm).
#
# This test never passes without comparing: if ONNX Runtime cannot be
# installed or loaded, it fails and says why.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 TEST_ONNX_EXPORT BUILD_DIR" >&2
    exit 2
fi
bin=$1
build=$2
src=$(cd "$(dirname "$0")/.." && pwd)
pin=$src/bench/peers/ort
ort_dir=${TG_ORT_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tracegraph/ort}

fail() {
    echo "test_onnx_ort: FAIL: $*" >&2
    exit 1
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "test_onnx_ort: Node.js/npm missing, installing them (scripts/deps.sh nodejs npm)"
    "$src/scripts/deps.sh" nodejs npm ||
        fail "Node.js and npm are needed to run ONNX Runtime and could not be installed" \
             "(scripts/deps.sh nodejs npm failed; as non-root, run the apt-get command it printed)"
fi

if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ] ||
   ! cmp -s "$pin/package-lock.json" "$ort_dir/package-lock.json"; then
    echo "test_onnx_ort: installing onnxruntime-node (pinned in bench/peers/ort) into $ort_dir"
    mkdir -p "$ort_dir" || fail "cannot create $ort_dir (set TG_ORT_DIR to a writable place)"
    rm -rf "$ort_dir/node_modules"
    cp "$pin/package.json" "$pin/package-lock.json" "$ort_dir/" || fail "cannot copy the pins to $ort_dir"
    (cd "$ort_dir" && npm ci --ignore-scripts --no-audit --no-fund) ||
        fail "npm ci of onnxruntime-node failed in $ort_dir (no network or registry access?);" \
             "ONNX Runtime is required: nothing was compared"
fi
[ -d "$ort_dir/node_modules/onnxruntime-node" ] ||
    fail "onnxruntime-node is not in $ort_dir/node_modules after npm ci"

tmp=$(mktemp -d "$build/onnx_ort.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$bin" --ort-cases "$tmp" || fail "$bin --ort-cases failed"
node "$src/tests/onnx_ort_check.js" "$ort_dir/node_modules/onnxruntime-node" "$tmp"
