#!/usr/bin/env bash
# ab.sh - the GPU run of issue 20 in one command, for a short loan of a GPU:
#   1. run.sh: ours against PyTorch's CUDA eager and CUDA graphs, default
#      settings (the table of docs/PERFORMANCE.md); skipped with --no-main;
#   2. the settings that choose how the OpenCL replay runs, each as gpu_bench
#      rounds without the peer, in passes (pass 1 in order, pass 2 reversed,
#      ...), next to "default" (nothing set) in the same passes;
#   3. one profiled round with default settings (TG_OPENCL_PROFILE: each
#      node's way, the launches per run, the costliest nodes);
#   4. the table of bench/gpu/ab.py, printed last: each setting's best
#      device-resident median per workload against the default's.
#
#   bench/gpu/ab.sh [--device N|NAME] [--workloads a,b,...] [--passes P]
#                   [--set NAME=VAR=VALUE[:VAR=VALUE...]]... [--no-main] [--out DIR]
#
# --set replaces the settings compared (give it once per setting); without
# it: split2 TG_OPENCL_SPLITK=on, onepass TG_OPENCL_SPLITK=off, fixup
# TG_OPENCL_SPLITK=fixup, clblast TG_OPENCL_GEMM=clblast, notail
# TG_OPENCL_TAIL=off, nohead TG_OPENCL_HEAD=off, noattn TG_OPENCL_ATTN=off,
# noargcache TG_OPENCL_ARGCACHE=0.  --passes: default 2.
# DIR: --out, else $OUT/gpu-ab when $OUT is set (the GPU machine's folder
# that comes back; run.sh then writes $OUT/gpu), else ./gpu-ab-results.
# DIR gets ab.md (the table), profile.txt and rounds.tar.gz (every round's
# gpu_bench and merge.py files).  Works from a bundle (make
# bench-gpu-bundle) or the build tree, as run.sh.  About 5 minutes on a GPU
# with the defaults (run.sh's 3 rounds, then 18 quick rounds).
# Exit status: 1 when a round failed or differed from the CPU replay, 2 on a
# bad command line.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
device= workloads= passes=2 out= main=1 sets=()
while [ $# -gt 0 ]; do
    case $1 in
        --device) device=${2:?--device wants N or NAME}; shift 2 ;;
        --workloads) workloads=${2:?--workloads wants a list}; shift 2 ;;
        --passes) passes=${2:?--passes wants a number}; shift 2 ;;
        --set) sets+=("${2:?--set wants NAME=VAR=VALUE}"); shift 2 ;;
        --no-main) main=0; shift ;;
        --out) out=${2:?--out wants a directory}; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "ab.sh: unknown option $1 (--help says which there are)" >&2; exit 2 ;;
    esac
done
case $passes in *[!0-9]*|0*|'') echo "ab.sh: --passes wants a positive number, not '$passes'" >&2; exit 2 ;; esac
[ ${#sets[@]} -gt 0 ] || sets=(split2=TG_OPENCL_SPLITK=on onepass=TG_OPENCL_SPLITK=off
                               fixup=TG_OPENCL_SPLITK=fixup clblast=TG_OPENCL_GEMM=clblast
                               notail=TG_OPENCL_TAIL=off nohead=TG_OPENCL_HEAD=off
                               noattn=TG_OPENCL_ATTN=off noargcache=TG_OPENCL_ARGCACHE=0)
names=(default) envs=("")
for s in "${sets[@]}"; do
    name=${s%%=*} assign=${s#*=}
    case $name in ''|*[!A-Za-z0-9_-]*|default)
        echo "ab.sh: --set $s: the name must be letters, digits, _ or - (not 'default')" >&2; exit 2 ;; esac
    case $assign in TG_*=*) ;; *) echo "ab.sh: --set $s: want NAME=TG_VAR=VALUE[:TG_VAR=VALUE]" >&2; exit 2 ;; esac
    names+=("$name") envs+=("${assign//:/ }")
done

if [ -x "$root/bin/gpu_bench" ] && [ -f "$root/env.sh" ]; then
    # shellcheck disable=SC1091
    source "$root/env.sh"
    bench=$root/bin/gpu_bench
else
    bench=${BUILD:-$root/build}/gpu_bench
    [ -x "$bench" ] || { echo "ab.sh: no $bench: build it first (make build)" >&2; exit 2; }
fi
py=${PYTHON:-python3}
export TG_OPENCL_CACHE=${TG_OPENCL_CACHE:-/tmp/tracegraph-gpu-bench-cache}
: "${out:=${OUT:+$OUT/gpu-ab}}"
: "${out:=$PWD/gpu-ab-results}"
mkdir -p "$out" || exit 2
work=$(mktemp -d) || exit 2
rm -f "$out/ab.md" "$out/profile.txt" "$out/rounds.tar.gz"
flags=()
[ -z "$device" ] || flags+=(--device "$device")
[ -z "$workloads" ] || flags+=(--workloads "$workloads")
st=0 t0=$(date +%s)

if [ $main = 1 ]; then
    mainflags=("${flags[@]}")
    # under $OUT run.sh writes $OUT/gpu (its own default), else DIR/main
    [ -n "${OUT:-}" ] && [ "$out" = "$OUT/gpu-ab" ] || mainflags+=(--out "$out/main")
    "$here/run.sh" "${mainflags[@]}" || st=1
fi

# One gpu_bench round of setting i into $work/<name>-<pass>.json.
round() {
    local i=$1 p=$2 f
    f=$work/${names[$i]}-$p.json
    # shellcheck disable=SC2086
    env ${envs[$i]} "$bench" "${flags[@]}" --quick --out "$f" > "$work/${names[$i]}-$p.log" 2>&1 || {
        echo "ab.sh: ${names[$i]} pass $p failed (${names[$i]}-$p.log in rounds.tar.gz)" >&2; st=1; }
}
n=${#names[@]}
for p in $(seq 1 "$passes"); do
    echo "ab.sh: pass $p of $passes: ${names[*]}" >&2
    for k in $(seq 0 $((n - 1))); do
        i=$k
        [ $((p % 2)) = 1 ] || i=$((n - 1 - k))
        round "$i" "$p"
    done
done
TG_OPENCL_PROFILE=1 "$bench" "${flags[@]}" --quick --out "$work/profile.json" \
    > "$out/profile.txt" 2>&1 || st=1

merged=()
for i in $(seq 0 $((n - 1))); do
    files=()
    for p in $(seq 1 "$passes"); do
        [ -s "$work/${names[$i]}-$p.json" ] && files+=("$work/${names[$i]}-$p.json")
    done
    if [ ${#files[@]} -eq 0 ]; then
        echo "ab.sh: ${names[$i]}: no round wrote a result" >&2; st=1; continue
    fi
    "$py" "$here/merge.py" "$work/${names[$i]}.merged.json" "$work/${names[$i]}.merged.md" \
        "${files[@]}" > /dev/null || st=1
    [ "$i" = 0 ] || merged+=("${names[$i]}=$work/${names[$i]}.merged.json")
done
echo "ab.sh: $(( $(date +%s) - t0 )) s" >&2
if [ -s "$work/default.merged.json" ]; then
    "$py" "$here/ab.py" "$work/default.merged.json" "${merged[@]}" > "$out/ab.md" || st=1
fi
tar -czf "$out/rounds.tar.gz" -C "$work" . || st=1
rm -rf "$work"
[ -s "$out/ab.md" ] && cat "$out/ab.md"
exit $st
