#!/usr/bin/env bash
# test_onnx_ort.sh - ONNX export checked by ONNX Runtime: test_onnx_export
# --ort-cases writes every case (one graph per op of ops.def and the traced
# models at -O0 and -O3) with its inputs and the reference interpreter's
# outputs; tests/onnx_ort_check.js runs them in onnxruntime-node and
# compares.
#
#   tests/test_onnx_ort.sh TEST_ONNX_EXPORT BUILD_DIR
#
# ONNX Runtime is the npm package onnxruntime-node that bench/peers/ort
# pins, installed on first use into a cache outside the repo by
# scripts/ort_install.sh (which says where, and how to get Node.js).
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

fail() {
    echo "test_onnx_ort: FAIL: $*" >&2
    exit 1
}

ort=$("$src/scripts/ort_install.sh" test_onnx_ort) || exit 1

tmp=$(mktemp -d "$build/onnx_ort.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$bin" --ort-cases "$tmp" || fail "$bin --ort-cases failed"
node "$src/tests/onnx_ort_check.js" "$ort" "$tmp"
