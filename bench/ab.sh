#!/bin/sh
# ab.sh - two tracegraph builds on the same real models, alternating rounds
# (issue 30's before/after table in docs/PERFORMANCE.md, "AVX2").
#
#   bench/ab.sh OLD_TRACEGRAPH NEW_TRACEGRAPH ROUNDS MODEL...
#
# Each model's REAL_DIR/MODEL/model.onnx (bench/real/run.sh exports them;
# default REAL_DIR /tmp/tracegraph-real) is optimized at -O0 and -O3 by
# each build, and once more at -O3 by the new build with TG_CPU and
# ONEDNN_MAX_CPU_ISA unset (the file an AVX-512 machine would make, which a
# plan on a lower ISA re-plans: "new.O3x").  Then ROUNDS rounds, each
# timing every file in turn (`tracegraph bench --runs 10 --warmup 3`, one
# process each), and prints per model and file the median of the rounds'
# medians, ms.  The environment applies to every run: TG_CPU=avx2
# ONEDNN_MAX_CPU_ISA=AVX2 bench/ab.sh ... times the AVX2 path.
set -u
old=${1:?usage: bench/ab.sh OLD_TRACEGRAPH NEW_TRACEGRAPH ROUNDS MODEL...}
new=${2:?usage}
rounds=${3:?usage}
shift 3
dir=${REAL_DIR:-/tmp/tracegraph-real}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for m in "$@"; do
    onnx=$dir/$m/model.onnx
    for lv in 0 3; do
        "$old" opt -O$lv "$onnx" "$tmp/$m.old.O$lv.tgraph" >/dev/null || exit 1
        "$new" opt -O$lv "$onnx" "$tmp/$m.new.O$lv.tgraph" >/dev/null || exit 1
    done
    env -u TG_CPU -u ONEDNN_MAX_CPU_ISA "$new" opt -O3 "$onnx" "$tmp/$m.new.O3x.tgraph" \
        >/dev/null || exit 1
done
for r in $(seq "$rounds"); do
    for m in "$@"; do
        for v in old.O0 old.O3 new.O0 new.O3 new.O3x; do
            case $v in old*) tg=$old ;; *) tg=$new ;; esac
            t=$("$tg" bench "$tmp/$m.$v.tgraph" --runs 10 --warmup 3 2>/dev/null |
                sed -n 's/.*median \([0-9.e+-]*\) ms.*/\1/p')
            echo "$m $v $r ${t:-fail}"
        done
    done
done >"$tmp/times"
awk '{k = $1 " " $2; n[k]++; v[k, n[k]] = $4}
     END {for (k in n) {m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i];
                        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
                            if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
                        print k, a[int((m + 1) / 2)]}}' "$tmp/times" | sort
