#!/bin/sh
# run.sh - the real-model benchmark of issue 17 (`make bench-real`):
# installs Debian's PyTorch and torchvision (scripts/deps.sh python3-torch
# python3-torchvision libopenblas0-openmp: only when benchmarking, `make
# test` never needs them) and ONNX Runtime from npm (as bench/peers/run.sh),
# exports the models with bench/real/export.py into a scratch directory,
# then imports, checks and times them with bench/real/run.py, and writes the
# table into docs/PERFORMANCE.md between the real-models markers.
#
#   bench/real/run.sh TRACEGRAPH [run.py flags...] [MODEL...]
#
# Environment: REAL_DIR, the scratch directory (default
# /tmp/tracegraph-real: vit_b_16 alone is 330 MB; a model already exported
# there by the same export.py is not exported again); REAL_DOC, the file to
# update (default docs/PERFORMANCE.md; empty: print only); REAL_OUT, where
# the results go (default bench/results/real: .json and .md); REAL_MARK, the
# name of the markers of the section it writes (default real-models; make
# bench-real-avx2 writes real-models-avx2).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
tg=${1:?usage: bench/real/run.sh TRACEGRAPH [run.py flags...] [MODEL...]}
shift
py=/usr/bin/python3
dir=${REAL_DIR:-/tmp/tracegraph-real}
doc=${REAL_DOC-$root/docs/PERFORMANCE.md}
res=$root/bench/results
out=${REAL_OUT:-$res/real}
mark=${REAL_MARK:-real-models}

deps=$("$root/scripts/deps.sh" python3-torch python3-torchvision libopenblas0-openmp 2>&1) || {
    echo "bench-real: PyTorch/torchvision not installed and scripts/deps.sh could not install them:" >&2
    printf '%s\n' "$deps" | tail -n 2 >&2
    exit 1
}
ort=$root/bench/peers/ort
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    "$root/scripts/deps.sh" nodejs npm >/dev/null 2>&1 || {
        echo "bench-real: Node.js/npm not installed (scripts/deps.sh nodejs npm failed)" >&2
        exit 1
    }
fi
if [ ! -d "$ort/node_modules/onnxruntime-node" ]; then
    # --ignore-scripts: the CPU build is in the package (bench/peers/run.sh)
    (cd "$ort" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) || {
        echo "bench-real: npm could not install onnxruntime-node into $ort" >&2
        exit 1
    }
fi

# The models to export: those named after the flags, else export.py's list.
models=
skip=0
for a in "$@"; do
    if [ $skip -eq 1 ]; then skip=0; continue; fi
    case $a in
    --threads|--rounds|--budget-ms|--json|--md|--tracegraph) skip=1 ;;
    -*) ;;
    *) models="$models $a" ;;
    esac
done
mkdir -p "$dir" "$res" || exit 1
# A stamp of export.py: a model exported by another version is exported again.
stamp=$(cksum <"$root/bench/real/export.py" | cut -d' ' -f1)
if [ "$(cat "$dir/export.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "${dir:?}"/*
fi
# shellcheck disable=SC2086
"$py" "$root/bench/real/export.py" "$dir" $models || exit 1
echo "$stamp" >"$dir/export.stamp"

md=$out.md
"$py" "$root/bench/real/run.py" "$dir" --tracegraph "$tg" --json "$out.json" --md "$md" "$@" ||
    exit 1

[ -n "$doc" ] || exit 0
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
ncpu=$(nproc)
load=$(cut -d' ' -f1-3 /proc/loadavg)
ortv=$(node -e "console.log(require('$ort/node_modules/onnxruntime-node/package.json').version)" 2>/dev/null)
torchv=$("$py" -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__)' 2>/dev/null)
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null)
section=$(mktemp) || exit 1
{
    echo "<!-- $mark:begin (bench/real/run.sh writes this section) -->"
    echo "Measured $(date -u +%Y-%m-%d) by \`make bench-real\` (\`bench/real/run.sh $tg $*\`) at $rev,"
    echo "on ${cpu:-an unknown CPU}, $ncpu cores, load average $load at the end (above 0: other work"
    echo "shared the cores, and the figures are noisy: the 2-thread ones most), PyTorch/torchvision"
    echo "${torchv:-?}, ONNX Runtime ${ortv:-?} (onnxruntime-node).  ms: median of the rounds' medians;"
    echo "-O3/ORT above 1: tracegraph is slower.  Errors are max |ours - PyTorch| / max |PyTorch|."
    echo
    cat "$md"
    echo "<!-- $mark:end -->"
} >"$section"
if grep -q "<!-- $mark:begin" "$doc"; then
    awk -v f="$section" -v b="<!-- $mark:begin" -v e="<!-- $mark:end" '
        index($0, b) == 1 { while ((getline l < f) > 0) print l; skip = 1; next }
        index($0, e) == 1 { skip = 0; next }
        !skip' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
else
    { echo; cat "$section"; } >>"$doc"
fi
rm -f "$section"
echo "bench-real: table in $md and $doc"
