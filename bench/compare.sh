#!/bin/sh
# compare.sh - per-metric ratios between two bench/suite.c result files, so a
# change can be judged against the last run:
#
#   bench/compare.sh OLD.json NEW.json [--all]
#
# Prints, for every metric both files have, OLD, NEW and NEW/OLD (below 1:
# NEW is smaller, i.e. faster or leaner), then the geometric mean of NEW/OLD
# of eager and of each level's replay median over all records.  By default
# the main metrics only (medians, trace/optimize/load/compile times, node
# counts, .tgraph and planned arena bytes, errors); --all: every number.
# Each file's header line names its CPU and instruction sets (tracegraph
# kernels / oneDNN, issue 30), and a note says when they differ: then the
# ratios compare machines or ISAs, not code.
# Plain POSIX sh + awk.
set -eu

usage() {
    echo "usage: bench/compare.sh OLD.json NEW.json [--all]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
old=$1
new=$2
all=0
[ $# -ge 3 ] && { [ "$3" = "--all" ] || usage; all=1; }
for f in "$old" "$new"; do
    [ -r "$f" ] || { echo "compare.sh: cannot read $f" >&2; exit 1; }
done
here=$(dirname "$0")
tmp=${TMPDIR:-/tmp}/tg_compare.$$
trap 'rm -f "$tmp.a" "$tmp.b"' EXIT INT TERM
awk -f "$here/json_flat.awk" "$old" >"$tmp.a"
awk -f "$here/json_flat.awk" "$new" >"$tmp.b"

awk -F '\t' -v all="$all" -v old="$old" -v new="$new" '
function num(v) { return v ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
function main_metric(k) {
    if (k !~ /\//) return 0 # machine, config, totals
    if (k ~ /\.(min|max|runs)$/ || k ~ /arena_bytes\.(naive|lower_bound)$/) return 0
    return k ~ /(_ms\.median|trace_ms|optimize_ms|load_ms|compile_ms|nodes_after|traced_nodes|tgraph_bytes|arena_bytes\.planned|max_rel_err|speedup)$/
}
NR == FNR { a[$1] = $2; next }
{
    k = $1
    if (!(k in a)) { only_new++; next }
    seen[k] = 1
    if (!num(a[k]) || !num($2) || (!all && !main_metric(k))) next
    ratio = a[k] + 0 != 0 ? sprintf("%.3f", $2 / a[k]) : ($2 + 0 == 0 ? "1.000" : "-")
    printf "%-44s %14s %14s %9s\n", k, a[k], $2, ratio
    if (k ~ /\/(eager_ms|O[0-3]\/replay_ms)\.median$/ && a[k] > 0 && $2 > 0) {
        g = k; sub(/^[^\/]*\/[^\/]*\//, "", g); sub(/\/?(replay|eager)_ms\.median$/, "", g)
        g = g == "" ? "eager" : g
        logsum[g] += log($2 / a[k]); cnt[g]++
    }
}
END {
    for (k in a) if (!(k in seen)) only_old++
    printf "\ngeometric mean of NEW/OLD medians (below 1: NEW faster):\n"
    split("eager O0 O1 O2 O3", order, " ")
    for (i = 1; i <= 5; i++)
        if (cnt[order[i]])
            printf "  %-6s %.3f over %d records\n", order[i], exp(logsum[order[i]] / cnt[order[i]]), cnt[order[i]]
    if (only_old + only_new)
        printf "metrics only in %s: %d, only in %s: %d\n", old, only_old + 0, new, only_new + 0
}' "$tmp.a" "$tmp.b" | {
    for s in "OLD $old $tmp.a" "NEW $new $tmp.b"; do
        set -- $s
        awk -F '\t' -v tag="$1" -v file="$2" '
            { v[$1] = $2 }
            END { printf "%s: %s (%s%s; %s, ISA %s / %s)\n", tag, file,
                      v["machine.commit"] == "" ? "" : "commit " v["machine.commit"] ", ",
                      v["machine.date"] == "" ? "no date" : v["machine.date"],
                      v["machine.cpu"] == "" ? "?" : v["machine.cpu"],
                      v["machine.cpu_kernels"] == "" ? "?" : v["machine.cpu_kernels"],
                      v["machine.onednn_isa"] == "" ? "?" : v["machine.onednn_isa"] }' "$3"
    done
    # rows measured at other instruction sets or on another CPU
    awk -F '\t' '
        $1 ~ /^machine\.(cpu|cpu_kernels|onednn_isa)$/ || $1 ~ /\/(cpu_kernels|onednn_isa)$/ {
            if (FNR == NR) a[$1] = $2; else if (($1 in a) && a[$1] != $2) d[++n] = $1 ": " a[$1] " -> " $2
        }
        END { if (n) { printf "note: OLD and NEW ran on other CPUs or instruction sets (ratios compare those, not only code):"
                       for (i = 1; i <= n && i <= 4; i++) printf " %s;", d[i]
                       printf "%s\n", n > 4 ? " ..." : "" } }' "$tmp.a" "$tmp.b"
    printf "%-44s %14s %14s %9s\n" metric OLD NEW NEW/OLD
    cat
}
