#!/bin/sh
# plot.sh - the PNG chart of a bench/suite.c result file: per workload, the
# eager median and the replay median at each level, one panel per thread
# count, log-scale milliseconds.  Needs gnuplot (Debian: gnuplot-nox, which
# `make bench` installs through scripts/deps.sh).
#
#   bench/plot.sh [RESULT.json [OUT.png]]
#
# Defaults: bench/results/latest.json, bench/results/latest.png.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
json=${1:-$root/bench/results/latest.json}
png=${2:-$root/bench/results/latest.png}
[ -r "$json" ] || { echo "plot.sh: cannot read $json" >&2; exit 1; }
command -v gnuplot >/dev/null || {
    echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2
    exit 1
}
tmp=${TMPDIR:-/tmp}/tg_plot.$$
trap 'rm -f "$tmp".*' EXIT INT TERM

# One data file per thread count: workload eager O0 O1 O2 O3 OpenCL-O2
# (NaN: failed or not measured).
awk -f "$root/bench/json_flat.awk" "$json" | awk -F '\t' -v tmp="$tmp" '
function num(x) {
    if (x == "" || x == "null") return "NaN"
    if (x + 0 > 0 && (ymin == "" || x + 0 < ymin)) ymin = x + 0
    return x
}
{ v[$1] = $2 }
$1 ~ /\/eager_ms\.median$/ { r = $1; sub(/\/eager_ms\.median$/, "", r); rec[n++] = r }
END {
    for (i = 0; i < n; i++) {
        split(rec[i], p, "/"); t = substr(p[2], 2)
        f = tmp ".t" t
        if (!(t in started)) {
            started[t] = 1; threads = threads " " t
            print "workload eager -O0 -O1 -O2 -O3 OpenCL-O2" > f
        }
        line = p[1] " " num(v[rec[i] "/eager_ms.median"])
        for (l = 0; l < 4; l++) line = line " " num(v[rec[i] "/O" l "/replay_ms.median"])
        o = v[rec[i] "/O2/opencl.replay_ms.median"]
        line = line " " num(o)
        if (o != "" && o != "null") ocl[t] = 1
        print line > f
    }
    print threads > (tmp ".threads")
    # the last column to plot per thread count: without OpenCL figures
    # (measured at the first thread count only) it is left out
    for (t in started) print (t in ocl) ? 7 : 6 > (tmp ".last" t)
    lo = 1 # the axis starts at the power of ten below the smallest time
    while (ymin != "" && lo > ymin) lo /= 10
    print lo > (tmp ".ymin")
    print v["machine.cpu"] ", " v["machine.date"] > (tmp ".title")
}'

threads=$(cat "$tmp.threads")
count=$(echo $threads | wc -w)
[ "$count" -ge 1 ] || { echo "plot.sh: no records in $json" >&2; exit 1; }
{
    echo "set terminal pngcairo noenhanced size $((560 * count + 160)),520 font 'sans,10'"
    echo "set output '$png'"
    echo "set multiplot layout 1,$count title 'tracegraph: eager vs replay (median ms, log scale) - $(sed "s/'//g" "$tmp.title")'"
    echo "set style data histograms"
    echo "set style histogram clustered gap 1"
    echo "set style fill solid 0.85 border -1"
    echo "set boxwidth 0.9"
    echo "set logscale y"
    echo "set yrange [$(cat "$tmp.ymin"):*]"
    echo "set grid ytics"
    echo "set ylabel 'ms'"
    echo "set xtics rotate by -25"
    echo "set key top left"
    echo "set datafile missing 'NaN'"
    for t in $threads; do
        echo "set title '$t thread(s)'"
        echo "plot for [c=2:$(cat "$tmp.last$t")] '$tmp.t$t' using c:xtic(1) title columnheader(c)"
    done
    echo "unset multiplot"
} >"$tmp.gp"
gnuplot "$tmp.gp"
echo "plot.sh: wrote $png"
