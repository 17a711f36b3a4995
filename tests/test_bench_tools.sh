#!/usr/bin/env bash
# test_bench_tools.sh SOURCE_DIR BUILD_DIR - the benchmark tooling end to end,
# never a time: bench/suite (--quick, two workloads, one thread, no OpenCL)
# writes a result file with every field the issue asks for; bench/table.sh
# turns it into the Markdown tables without a peer file (and says why) and
# with a hand-written one (the peer and peak tables); bench/compare.sh
# compares the file with itself (every ratio 1.000); bench/plot.sh draws
# the chart when gnuplot is installed; table.sh embeds its tables between a
# document's bench markers.  Helpers: checks.sh.
# Prints "N passed, M failed"; exits non-zero on any failure.
set -u
SRC=${1:?usage: test_bench_tools.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: test_bench_tools.sh SOURCE_DIR BUILD_DIR}
. "$(dirname "$0")/checks.sh"

expect 0 "$BUILD/suite" --quick --threads 1 --workloads mlp,tiny --no-opencl --out a.json \
    --save-dir . --commit 0123abc+changes
# the fields of issue 6 and the peak and work of the compute-bound records
for key in '"eager_ms": {"median"' '"trace_ms"' '"optimize_ms"' '"tgraph_bytes"' \
    '"load_ms"' '"nodes_before"' '"nodes_after"' '"naive"' '"lower_bound"' '"planned"' \
    '"max_abs_err"' '"max_rel_err"' '"replay_ms": {"median"' '"gflop": 0.08559' \
    '"fma_peak_gflops"' '"loadavg"' '"commit": "0123abc+changes"'; do
    has a.json "$key"
done
[ -s mlp-O3.tgraph ] && [ -s tiny-O2.tgraph ] && good || bad "--save-dir wrote no graphs"

# tables without a peer file: says why the peers are missing
expect 0 sh "$SRC/bench/table.sh" a.json a.md README.none none.json
has a.md "| tiny | 1 |"
has a.md "Measured by \`make bench\` at commit 0123abc+changes on"
has a.md "PyTorch and ONNX Runtime were not measured in this run (no none.json"
has a.md "**Compute-bound rows against this machine's measured peak.**"

# with a peer file: PyTorch and ONNX Runtime measured (figures made up here)
cat >peers.json <<'EOF'
{"schema": "tracegraph-peers-1", "ok": true, "error": "",
 "machine": {"cpu": "test", "cores": 2, "date": "2026-01-01T00:00:00Z", "loadavg": 0.5},
 "torch": {"version": "1.13.0", "python": "3.11", "blas": "none", "capability": "AVX2",
           "mkldnn": true, "cpu_fuser": false},
 "config": {"min_runs": 5, "budget_ms": 50, "rel_tolerance": 0.001}, "total_s": 1,
 "records": [
  {"workload": "mlp", "threads": 1, "ok": true, "error": "",
   "torch_eager_ms": {"median": 2.0, "min": 1.9, "max": 2.5, "runs": 5},
   "torch_jit_ms": {"median": 1.0, "min": 0.9, "max": 1.5, "runs": 5},
   "max_abs_err": 1e-6, "max_rel_err": 2e-6,
   "ort_ms": {"median": 0.5, "min": 0.4, "max": 0.6, "runs": 15}, "ort_version": "1.30.0",
   "ort_max_rel_err": 3e-7, "ort_error": "",
   "ours_alone_ms": {"median": 0.25, "min": 0.2, "max": 0.3, "runs": 15},
   "ours_onnx_ms": {"median": 0.3, "min": 0.28, "max": 0.4, "runs": 15},
   "ours_onnx_nodes": "5 -> 3", "ours_onnx_max_rel_err": 4e-7, "ours_onnx_error": ""},
  {"workload": "tiny", "threads": 1, "ok": true, "error": "",
   "torch_eager_ms": {"median": 1.0, "min": 0.9, "max": 1.5, "runs": 5},
   "torch_jit_ms": {"median": 1.0, "min": 0.9, "max": 1.5, "runs": 5},
   "max_abs_err": 0, "max_rel_err": 0, "ort_error": "no node on PATH",
   "ours_onnx_ms": null, "ours_onnx_error": "tracegraph opt exited 1: boom"}]}
EOF
expect 0 sh "$SRC/bench/table.sh" a.json b.md README.none peers.json
has b.md "ONNX Runtime 1.30.0 (npm package"
has b.md "| 0.250 | 2.00 | 1.00 | 0.500 |"   # mlp: ours alone, PyTorch eager, jit, ORT
has b.md "| 0.50× | 2.0e-06 / 3.0e-07 |"    # ours alone / ORT; jit and ORT errors
has b.md "could not be measured (no node on PATH)"
has b.md "*(issue)*"                          # tiny: the issue's ORT figure, marked
has b.md "**The same ONNX file in both engines.**"
has b.md "| mlp | 1 | 0.500 | 0.300 | 0.250 | 0.60× | 5 -> 3 | 4.0e-07 |"
has b.md "| tiny | 1 | - | FAIL: tracegraph opt exited 1: boom | - | - | - | - |"

# embedded in a document between the bench markers (as make bench does in
# docs/PERFORMANCE.md): the text around them kept, what was between them
# replaced, the chart linked relative to each file (a.png next to b.md)
mkdir -p sub/docs
printf 'before\n<!-- bench:begin -->\nold table\n<!-- bench:end -->\nafter\n' >sub/docs/P.md
expect 0 sh "$SRC/bench/table.sh" a.json b.md sub/docs/P.md peers.json
has b.md "![eager vs replay per level](b.png)"
has sub/docs/P.md "![eager vs replay per level](../../b.png)"
has sub/docs/P.md "| 0.50× | 2.0e-06 / 3.0e-07 |"
lacks sub/docs/P.md "old table"
if [ "$(head -n2 sub/docs/P.md)" = "$(printf 'before\n<!-- bench:begin -->')" ] &&
    [ "$(tail -n2 sub/docs/P.md)" = "$(printf '<!-- bench:end -->\nafter')" ]; then
    good
else
    bad "table.sh did not keep the text around the markers of sub/docs/P.md"
fi

# compare: a file against itself
expect 0 sh "$SRC/bench/compare.sh" a.json a.json
has out "mlp/t1/eager_ms.median"
has out "NEW: a.json (commit 0123abc+changes, "
if grep -E '^(mlp|tiny)/' out | awk '{print $NF}' | grep -qv '^1\.000$'; then
    bad "compare.sh of a file with itself gives a ratio other than 1.000"
else
    good
fi

if command -v gnuplot >/dev/null; then
    expect 0 sh "$SRC/bench/plot.sh" a.json a.png
    [ -s a.png ] && good || bad "plot.sh wrote no a.png"
fi

checks_done
