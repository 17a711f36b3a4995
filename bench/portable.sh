#!/bin/bash
# portable.sh - the portable default build (kernels picked at run time,
# eager/isa.h) against a native one (-DTG_NATIVE=ON: -march=native
# everywhere), on the workload suite, same machine, alternating rounds:
#
#   bench/portable.sh [ROUNDS]        (default 3; run from the repository root)
#
# Builds build-native/ (TG_NATIVE=ON) when it has no suite yet, then runs
# build/suite and build-native/suite in turn ROUNDS times (1 thread, no
# OpenCL), and prints bench/compare.sh of each round (OLD: native, NEW:
# default; NEW/OLD above 1: the default build is slower) and the geometric
# means of every round.  The JSON files stay in ${OUT:-/tmp/tracegraph-portable}.
set -eu
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/tracegraph-portable}
mkdir -p "$out"
cd "$root"
[ -x build/suite ] || { echo "portable.sh: build/suite missing (make build)" >&2; exit 1; }
if [ ! -x build-native/suite ]; then
    cmake -S . -B build-native -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTG_NATIVE=ON >/dev/null
    cmake --build build-native -j "$(nproc)" --target suite >/dev/null
fi
for r in $(seq 1 "$rounds"); do
    for b in build-native build; do
        echo "portable.sh: round $r: $b/suite" >&2
        "$b/suite" --out "$out/$b.$r.json" --threads 1 --no-opencl >/dev/null
    done
done
for r in $(seq 1 "$rounds"); do
    echo "== round $r: OLD native, NEW default"
    bench/compare.sh "$out/build-native.$r.json" "$out/build.$r.json"
done | tee "$out/compare.txt"
echo "== geometric means of default/native per round"
grep -E "^  (eager|O[0-3]) " "$out/compare.txt"
