#!/usr/bin/env bash
# difffuzz.sh - differential fuzzing against ONNX Runtime (docs/TESTING.md):
# a batch of generated ONNX models (tools/difffuzz) run by ours in one
# process and by ONNX Runtime in one Node process (tests/difffuzz_ort.js),
# then compared.
#
#   tests/difffuzz.sh DIFFFUZZ_BIN [--seed S] [--models N] [--index I] [--op OP]
#
#   --seed S     the run's seed (default 1); models are deterministic in (S, index)
#   --models N   how many (default $DIFFFUZZ_MODELS, else 300)
#   --index I    only model I of seed S (a finding's reproduction)
#   --op OP      only that row of the op table (tools/difffuzz/ops.c)
#
# Prints the summary line ("difffuzz: N models, A agree, B both refuse, C
# refused by us only (by reason), D differ only past NaN in ORT's max/min,
# F findings"; tests/difffuzz_ort.js says when a difference is that) and for each finding its
# seed, index, ops, what differed and the command that reproduces it; the
# finding's files (model, inputs, our outputs) are kept under
# $DIFFFUZZ_FINDINGS (default ./difffuzz-findings)/s<seed>-m<index>/, with
# its manifest line: `difffuzz run DIR` then `node tests/difffuzz_ort.js
# ORT_MODULE_DIR DIR` replay it from those files with any later build.
# Ours crashing (a sanitizer report included) or hanging on a model
# (DIFFFUZZ_MODEL_SECONDS, default 60) is a finding; the run goes on
# after it.  Exits 1 if there is a finding, or if ONNX Runtime cannot be
# installed or nothing was compared: it never passes without comparing.
set -euo pipefail

if [ $# -lt 1 ]; then
    sed -n '2,25p' "$0" >&2
    exit 2
fi
bin=$1
shift
seed=1
models=${DIFFFUZZ_MODELS:-300}
first=0
op=
while [ $# -gt 0 ]; do
    case $1 in
    --seed) seed=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --index) first=$2; models=1; shift 2 ;;
    --op) op=$2; shift 2 ;;
    *) echo "difffuzz: unknown option $1" >&2; exit 2 ;;
    esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
findings_dir=${DIFFFUZZ_FINDINGS:-$PWD/difffuzz-findings}

ort=$("$src/scripts/ort_install.sh" difffuzz) || exit 1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/difffuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "difffuzz: seed $seed, models $first..$((first + models - 1))${op:+, op $op}"
"$bin" gen "$tmp" "$seed" "$models" "$first" $op || { echo "difffuzz: FAIL: generation failed" >&2; exit 1; }

# Ours over the batch in one process; a crash or hang names its model in
# $tmp/current: recorded as that model's result, then the run goes on.
# Exiting non-zero after the last model (LeakSanitizer's report at exit)
# is a finding of the batch, not of a model: printed, and the run fails
# after comparing.
from=$first
after=
while :; do
    rc=0
    "$bin" run "$tmp" "$from" 2>"$tmp/stderr" || rc=$?
    [ $rc -eq 0 ] && break
    if [ ! -f "$tmp/current" ]; then
        after="ours exited $rc after the last model: $(grep -m1 -E 'ERROR|SUMMARY' "$tmp/stderr" || tail -n1 "$tmp/stderr")"
        mkdir -p "$findings_dir" && cp "$tmp/stderr" "$findings_dir/s$seed-exit.stderr.txt"
        break
    fi
    idx=$(cat "$tmp/current")
    kind=crash
    [ $rc -eq 142 ] && kind=hang
    what=$(grep -m1 -E 'ERROR: AddressSanitizer|runtime error|SUMMARY|Assertion|signal' "$tmp/stderr" || tail -n1 "$tmp/stderr" || true)
    for v in O0 O3 O0alt O3alt; do
        echo "$idx $v $kind exit $rc: ${what//$'\n'/ }" >>"$tmp/ours.txt"
    done
    cp "$tmp/stderr" "$tmp/m$idx.stderr.txt"
    rm -f "$tmp/current"
    from=$((idx + 1))
done

# ONNX Runtime over the batch in one Node process; ORT itself crashing on
# a model (a segfault or SIGFPE inside onnxruntime-node) or spending more
# than DIFFFUZZ_MODEL_SECONDS on it (stopped here: it does not return to
# JavaScript) counts as its refusal of that model, and the run goes on
# from there.
from=$first
secs=${DIFFFUZZ_MODEL_SECONDS:-60}
while :; do
    rc=0
    node "$src/tests/difffuzz_ort.js" "$ort" "$tmp" "$from" &
    pid=$!
    last= since=$SECONDS
    while kill -0 $pid 2>/dev/null; do
        sleep 0.2
        cur=$(cat "$tmp/ort_current" 2>/dev/null || true)
        if [ "$cur" != "$last" ]; then
            last=$cur since=$SECONDS
        elif [ $((SECONDS - since)) -gt "$secs" ]; then
            kill $pid 2>/dev/null || true
        fi
    done
    wait $pid || rc=$?
    [ $rc -gt 128 ] && [ -f "$tmp/ort_current" ] || break
    idx=$(cat "$tmp/ort_current")
    if grep -q "^$idx " "$tmp/ort_crashed.txt" 2>/dev/null; then
        echo "difffuzz: FAIL: the ORT side crashed twice on model $idx" >&2
        exit 1
    fi
    echo "$idx signal $((rc - 128))" >>"$tmp/ort_crashed.txt"
    rm -f "$tmp/ort_current"
    from=$idx
done
if [ -n "$after" ]; then
    echo "FINDING seed $seed: $after (stderr: $findings_dir/s$seed-exit.stderr.txt)"
    rc=1
fi
[ -s "$tmp/findings.txt" ] || exit $rc
mkdir -p "$findings_dir"
while read -r idx label why; do
    keep=$findings_dir/s$seed-m$idx
    mkdir -p "$keep"
    cp "$tmp"/m"$idx".* "$keep/"
    echo "$why" >"$keep/why.txt"
    grep "^$idx " "$tmp/ours.txt" >"$keep/ours.txt" || true
    grep "^$idx " "$tmp/models.txt" >"$keep/models.txt" || true
    echo "FINDING seed $seed model $idx ($label): $why"
    echo "  reproduce: tests/difffuzz.sh $bin --seed $seed --index $idx${op:+ --op $op}  (files: $keep)"
done <"$tmp/findings.txt"
exit 1
