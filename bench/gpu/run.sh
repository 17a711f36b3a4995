#!/usr/bin/env bash
# run.sh - the GPU benchmark of issue 20: the workloads (workloads/workloads.c)
# on one OpenCL device, CPU eager vs OpenCL replay at -O0..-O3, host-copy and
# device-resident, each checked against the CPU replay (1e-4), next to
# PyTorch on CUDA (eager and CUDA graphs, fp32, TF32 off) when it is there.
#
#   bench/gpu/run.sh [--device N|NAME] [--quick] [--rounds R] [--workloads a,b,...]
#                    [--out DIR] [--no-peer] [--peer-device cpu]
#
# Works from the build tree (build/gpu_bench; BUILD=dir for another) and
# from a bundle made by `make bench-gpu-bundle` (../shared/gpu/bundle.sh:
# BUNDLE/bin/gpu_bench, BUNDLE/env.sh, and this script with merge.py and
# the peer scripts under BUNDLE/bench/): no cmake, no compiler, no Python
# package but torch (for the peer) is needed; merge.py uses the standard
# library only.
#
# R rounds (default 3; --quick: 2 rounds of fewer runs, about 2-3 minutes on
# a GPU): each round runs gpu_bench over every workload (a process per
# workload, see bench/gpu_bench.c), then, where `python3 -c 'import torch;
# assert torch.cuda.is_available()'` succeeds, torch_cuda.py over the same
# workloads: ours, torch, ours, torch...  merge.py pools every run of every
# round into medians and writes DIR/gpu.json and DIR/gpu.md (the rounds'
# own files stay in DIR/rounds/, or travel as DIR/rounds.tar.gz under $OUT);
# the table is printed last.
# DIR: --out, else $OUT/gpu when $OUT is set (the GPU machine's folder that
# comes back), else bench/results/gpu in the build tree, ./gpu-results in a
# bundle.  PYTHON: the interpreter for the peer and merge.py (default python3).
# --peer-device cpu: run the peer's eager variant on the CPU (checks its code
# path on a machine without CUDA; not a GPU figure).
# Built OpenCL programs are cached on disk between rounds (TG_OPENCL_CACHE,
# default /tmp/tracegraph-gpu-bench-cache).
# Exit status: 1 when a workload fails or differs from the CPU replay by more
# than 1e-4 (the table is written anyway), 2 on a bad command line.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
device= quick= rounds= workloads= out= peer=1 peer_device=cuda
while [ $# -gt 0 ]; do
    case $1 in
        --device) device=${2:?--device wants N or NAME}; shift 2 ;;
        --quick) quick=--quick; shift ;;
        --rounds) rounds=${2:?--rounds wants a number}; shift 2 ;;
        --workloads) workloads=${2:?--workloads wants a list}; shift 2 ;;
        --out) out=${2:?--out wants a directory}; shift 2 ;;
        --no-peer) peer=0; shift ;;
        --peer-device) peer_device=${2:?--peer-device wants cuda or cpu}; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (--help says which there are)" >&2; exit 2 ;;
    esac
done
[ -n "$rounds" ] || rounds=$([ -n "$quick" ] && echo 2 || echo 3)
case $rounds in *[!0-9]*|0*) echo "run.sh: --rounds wants a positive number, not '$rounds'" >&2; exit 2 ;; esac
case $peer_device in cuda|cpu) ;; *) echo "run.sh: --peer-device is cuda or cpu" >&2; exit 2 ;; esac

# The programs: a bundle (bin/ and env.sh beside bench/) or the build tree.
if [ -x "$root/bin/gpu_bench" ] && [ -f "$root/env.sh" ]; then
    # shellcheck disable=SC1091
    source "$root/env.sh"
    bench=$root/bin/gpu_bench
    where="bundle $root"
    : "${out:=${OUT:+$OUT/gpu}}"
    : "${out:=$PWD/gpu-results}"
else
    build=${BUILD:-$root/build}
    bench=$build/gpu_bench
    where="build tree $build"
    [ -x "$bench" ] || { echo "run.sh: no $bench: build it first (make build, or make bench-gpu)" >&2; exit 2; }
    : "${out:=${OUT:+$OUT/gpu}}"
    : "${out:=$root/bench/results/gpu}"
fi
py=${PYTHON:-python3}
export TG_OPENCL_CACHE=${TG_OPENCL_CACHE:-/tmp/tracegraph-gpu-bench-cache}
rdir=$out/rounds
case $out in "${OUT:-/nonexistent}"/*) rdir=$(mktemp -d) ;; esac
mkdir -p "$out" "$rdir" || exit 2
rm -f "$rdir"/*.json "$out/gpu.json" "$out/gpu.md" "$out/rounds.tar.gz" # never mix in an older run's rounds

# The peer: CUDA through PyTorch, or why not.
peer_why=
if [ $peer = 0 ]; then
    peer_why="--no-peer"
elif ! command -v "$py" >/dev/null; then
    peer_why="no $py"
elif [ "$peer_device" = cuda ] &&
     ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    peer_why="no CUDA (python3 -c 'import torch; torch.cuda.is_available()' is not true)"
fi
[ -z "$peer_why" ] || echo "run.sh: $peer_why, peer skipped" >&2

flags=()
[ -z "$device" ] || flags+=(--device "$device")
[ -z "$workloads" ] || flags+=(--workloads "$workloads")
[ -z "$quick" ] || flags+=("$quick")
echo "run.sh: $where, OpenCL device ${device:-0 (the first)}, $rounds rounds -> $out" >&2
t0=$(date +%s)
st=0
ours=() peers=()
for r in $(seq 1 "$rounds"); do
    f=$rdir/ours-$r.json
    "$bench" "${flags[@]}" --out "$f" || st=1
    [ -s "$f" ] && ours+=("$f")
    if [ -z "$peer_why" ]; then
        f=$rdir/torch-$r.json
        "$py" "$here/../peers/torch_cuda.py" --device "$peer_device" \
            ${workloads:+--workloads "$workloads"} $quick --out "$f" ||
            echo "run.sh: the peer's round $r failed (its records say why)" >&2
        [ -s "$f" ] && peers+=("$f")
    fi
done
echo "run.sh: $rounds rounds in $(( $(date +%s) - t0 )) s" >&2
[ ${#ours[@]} -gt 0 ] || { echo "run.sh: gpu_bench wrote no result" >&2; exit 1; }
if [ ${#peers[@]} -eq 0 ]; then
    why=${peer_why:-the peer wrote no result}
    printf '{"schema": "tracegraph-torch-cuda-round-1", "ok": false, "error": "%s", "device": null, "torch": null, "records": []}\n' \
        "$(printf '%s' "$why" | tr -d '"\\')" > "$rdir/torch-none.json"
    peers=("$rdir/torch-none.json")
fi
# Under $OUT (the GPU machine's folder that comes back, at most 8 files) the
# rounds travel as one archive, made before the table is printed.
"$py" "$here/merge.py" "$out/gpu.json" "$out/gpu.md" "${ours[@]}" --peer "${peers[@]}" \
    > "$rdir/table.txt" || st=1
if [ "$rdir" != "$out/rounds" ]; then
    tar -czf "$out/rounds.tar.gz" -C "$rdir" --exclude table.txt . || st=1
fi
cat "$rdir/table.txt"
rm -f "$rdir/table.txt"
[ "$rdir" = "$out/rounds" ] || rm -rf "$rdir"
exit $st
