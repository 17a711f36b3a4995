#!/usr/bin/env bash
# ort_install.sh - ONNX Runtime for the tests that compare with it
# (tests/test_onnx_ort.sh, tests/difffuzz.sh): prints the directory of the
# installed onnxruntime-node package on stdout, or fails saying why.
#
#   ort=$(scripts/ort_install.sh NAME)     (NAME prefixes the messages)
#
# ONNX Runtime is the npm package onnxruntime-node at the version
# bench/peers/ort pins (package.json + package-lock.json), installed with
# `npm ci --ignore-scripts` (the CPU build is in the package; its install
# script only fetches CUDA parts) into a cache outside the repo:
# ${TG_ORT_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tracegraph/ort}, reused while
# its lock file equals the pinned one.  Node.js and npm come from Debian
# (scripts/deps.sh nodejs npm).  Progress goes to stderr.
set -euo pipefail

name=${1:-ort_install}
src=$(cd "$(dirname "$0")/.." && pwd)
pin=$src/bench/peers/ort
ort_dir=${TG_ORT_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tracegraph/ort}

fail() {
    echo "$name: FAIL: $*" >&2
    exit 1
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "$name: Node.js/npm missing, installing them (scripts/deps.sh nodejs npm)" >&2
    "$src/scripts/deps.sh" nodejs npm >&2 ||
        fail "Node.js and npm are needed to run ONNX Runtime and could not be installed" \
             "(scripts/deps.sh nodejs npm failed; as non-root, run the apt-get command it printed)"
fi

if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ] ||
   ! cmp -s "$pin/package-lock.json" "$ort_dir/package-lock.json"; then
    echo "$name: installing onnxruntime-node (pinned in bench/peers/ort) into $ort_dir" >&2
    mkdir -p "$ort_dir" || fail "cannot create $ort_dir (set TG_ORT_DIR to a writable place)"
    rm -rf "$ort_dir/node_modules"
    cp "$pin/package.json" "$pin/package-lock.json" "$ort_dir/" || fail "cannot copy the pins to $ort_dir"
    (cd "$ort_dir" && npm ci --ignore-scripts --no-audit --no-fund >&2) ||
        fail "npm ci of onnxruntime-node failed in $ort_dir (no network or registry access?);" \
             "ONNX Runtime is required: nothing was compared"
fi
[ -d "$ort_dir/node_modules/onnxruntime-node" ] ||
    fail "onnxruntime-node is not in $ort_dir/node_modules after npm ci"
echo "$ort_dir/node_modules/onnxruntime-node"
