#!/bin/sh
# table.sh - the Markdown tables of a bench/suite.c result file, embedded in
# docs/PERFORMANCE.md between <!-- bench:begin --> and <!-- bench:end -->.
#
#   bench/table.sh [RESULT.json [OUT.md [DOC.md [PEERS.json]]]]
#
# Defaults: bench/results/latest.json, bench/results/latest.md,
# docs/PERFORMANCE.md, and PEERS.json = peers.json next to RESULT.json
# (paths from the repository root).  The tables end with a link to the
# chart that bench/plot.sh draws next to OUT.md (OUT.png), relative to the
# file holding it (OUT.md, DOC.md).  PEERS.json (bench/peers/
# torch_workloads.py: PyTorch and ONNX Runtime measured in the same
# `make bench` run) gives the peer table; where ONNX Runtime could not be
# measured it quotes the issue's figure (bench/peers/issue6_reported.json,
# another machine), marked so; without PEERS.json the peer table says why
# it is missing.
# DOC.md is only rewritten when it holds both markers; everything
# between them is replaced.  POSIX sh + awk.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
json=${1:-$root/bench/results/latest.json}
out=${2:-$root/bench/results/latest.md}
doc=${3:-$root/docs/PERFORMANCE.md}
peers=${4:-$(dirname "$json")/peers.json}
reported=$root/bench/peers/issue6_reported.json
[ -r "$json" ] || { echo "table.sh: cannot read $json" >&2; exit 1; }
have_peers=0
[ ! -r "$peers" ] || have_peers=1

# abspath FILE: FILE with an absolute directory (the directory must exist).
abspath() { printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")"; }
# relpath FILE DIR: the path of FILE (absolute) as seen from DIR (absolute).
relpath() {
    base=$2 up=
    while [ "$base" != / ]; do
        case $1 in "$base"/*) printf '%s%s\n' "$up" "${1#"$base"/}"; return ;; esac
        base=$(dirname "$base") up=../$up
    done
    printf '%s%s\n' "$up" "${1#/}"
}
chart=$(abspath "${out%.md}").png

# One key<TAB>value stream: the suite's keys as they are, the peers' and
# the issue's prefixed with "peers:" and "issue:".
{
    awk -f "$root/bench/json_flat.awk" "$json"
    [ $have_peers = 0 ] || awk -f "$root/bench/json_flat.awk" "$peers" | sed 's/^/peers:/'
    [ ! -r "$reported" ] || awk -f "$root/bench/json_flat.awk" "$reported" | sed 's/^/issue:/'
} | awk -F '\t' -v have_peers=$have_peers -v peers_file="$peers" \
    -v chart="$(relpath "$chart" "$(dirname "$(abspath "$out")")")" '
function ms(x) {
    if (x == "" || x == "null") return "FAIL"
    x += 0
    return sprintf(x >= 100 ? "%.0f" : x >= 10 ? "%.1f" : x >= 1 ? "%.2f" : x >= 0.01 ? "%.3f" : "%.4f", x)
}
function kb(x) { return x == "" || x == "null" ? "-" : sprintf("%.0f", x / 1024) }
function mb(x) {
    if (x == "" || x == "null") return "-"
    return x >= 1048576 ? sprintf("%.1f MB", x / 1048576) : x >= 1024 ? sprintf("%.0f KB", x / 1024) : sprintf("%d B", x)
}
# A peer time: "-" when not measured, FAIL when measuring failed (null).
function pms(x) { return x == "" ? "-" : ms(x) }
# ours / peer time as "0.62×" (below 1: ours is faster); "-" if either is missing.
function ratio(a, b) {
    if (a == "" || a == "null" || b == "" || b == "null" || b + 0 <= 0) return "-"
    return sprintf(a / b >= 0.1 ? "%.2f×" : "%.2g×", a / b)
}
# The faster of -O2 and -O3 of record r ("" if neither ran).
function best_replay(r,    l, t, best) {
    best = ""
    for (l = 2; l < 4; l++) {
        t = v[r "/O" l "/replay_ms.median"]
        if (t != "null" && t != "" && (best == "" || t + 0 < best + 0)) best = t
    }
    return best
}
# PyTorch here over the PyTorch figure of the issue: geometric mean over the rows
# both have (how this machine and build compare with those of the issue).
function machine_factor(key,    i, r, a, b, s, c) {
    for (i = 0; i < n; i++) {
        r = rec[i]
        a = v["peers:" r "/" key ".median"]; b = v["issue:" r "/" key]
        if (a != "" && a != "null" && b + 0 > 0) { s += log(a / b); c++ }
    }
    return c ? sprintf("%.2f×", exp(s / c)) : "-"
}
# The ONNX Runtime median of record r: measured in this run (peers file),
# else the figure of the issue, from another machine (quoted[r] = 1).
# An error cell: "-" not measured, FAIL null, else the value.
function ort_ms(r, quoted,    t) {
    t = v["peers:" r "/ort_ms.median"]
    if (t != "" && t != "null") { quoted[r] = 0; return t }
    quoted[r] = 1
    return v["issue:" r "/ort_ms"]
}
function err_text(x) { return x == "" ? "-" : x == "null" ? "FAIL" : x + 0 == 0 ? "0" : sprintf("%.1e", x) }
function peer_table(    i, r, p, e, b, a, pe, pj, ort, q, nq, nort, why) {
    print ""
    if (!have_peers) {
        printf "**Peers:** PyTorch and ONNX Runtime were not measured in this run (no %s; `make bench` writes it with `bench/peers/run.sh`).\n", peers_file
        return
    }
    if (v["peers:torch.version"] == "") {
        printf "**Peers:** PyTorch (and ONNX Runtime, which is timed on the PyTorch modules exported to ONNX) could not be measured in this run: %s. The issue reports ONNX Runtime (1 thread, another machine) at", v["peers:error"]
        for (i = 0; i < n; i++) if (v["issue:" rec[i] "/ort_ms"] != "") { split(rec[i], p, "/"); printf " %s %s ms;", p[1], v["issue:" rec[i] "/ort_ms"] }
        print " not comparable with this machine."
        return
    }
    for (i = 0; i < n; i++) {
        ort_ms(rec[i], q)
        if (v["peers:" rec[i] "/ort_version"] != "") nort++
        if (q[rec[i]] && v["issue:" rec[i] "/ort_ms"] != "") nq++
        if (v["peers:" rec[i] "/ort_error"] != "" && why == "") why = v["peers:" rec[i] "/ort_error"]
    }
    printf "**Peers, measured on this machine in the same run** (issue 6): PyTorch %s from Debian 12 (`python3-torch` under /usr/bin/python3 %s; BLAS: %s; ATen kernels: %s; oneDNN %s; TorchScript CPU fusion %s), by `bench/peers/torch_workloads.py` at %s, right after the suite (load average %s then, %s when the suite started: other work on the machine slows both, not necessarily alike). The same workloads written with torch ops (same shapes and weight scales, own seeded weights), the module run eagerly and as `torch.jit.trace` + `torch.jit.freeze` + `torch.jit.optimize_for_inference`, under `torch.inference_mode()`, in interleaved rounds as the suite times ours (medians of at least %s runs; a run includes the Python call). ",
        v["peers:torch.version"], v["peers:torch.python"], v["peers:torch.blas"], v["peers:torch.capability"],
        v["peers:torch.mkldnn"] == "true" ? "enabled" : "disabled",
        v["peers:torch.cpu_fuser"] == "true" ? "available" : "unavailable (built without LLVM)", v["peers:machine.date"],
        v["peers:machine.loadavg"], v["machine.loadavg"], v["peers:config.min_runs"]
    if (nort)
        printf "ONNX Runtime %s (npm package `onnxruntime-node`, its CPU build; installed by `bench/peers/run.sh`) runs the same PyTorch modules exported to ONNX (opset 17), all graph optimizations, the record'"'"'s thread count, timed back to back in its own process (`bench/peers/ort/ort_workloads.js`; a run is one synchronous call through its Node binding). A separate process cannot join the rounds, so like is compared with like another way: *ours alone* is our faster of -O2 and -O3 (the .tgraph the suite saved) timed back to back too, by `tracegraph bench`, in 3 rounds that alternate with 3 of ONNX Runtime (medians of the round medians for both). ", v["peers:" rec[0] "/ort_version"]
    if (nq)
        printf "ONNX Runtime %s: the rows marked *(issue)* quote the issue'"'"'s figure, **from another machine**; as a yardstick, PyTorch here takes %s (eager) and %s (jit) of the time the issue reports for it (geometric mean over its rows). ",
            why != "" ? "could not be measured (" why ")" : "was not measured", machine_factor("torch_eager_ms"), machine_factor("torch_jit_ms")
    print "Ours / peer: our time over the peer'"'"'s median; below 1, ours is faster. Errors: max rel err of PyTorch jit and of ONNX Runtime against PyTorch eager.\n"
    if (v["peers:ok"] != "true")
        printf "PyTorch columns incomplete: %s\n\n", v["peers:error"] != "" ? v["peers:error"] : "see " peers_file
    where()
    print "| workload | threads | ours eager | ours replay | ours alone | PyTorch eager | PyTorch jit | ONNX Runtime | ours / PyTorch eager | ours / PyTorch jit | ours alone / ONNX Runtime | err jit / ORT |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 0; i < n; i++) {
        r = rec[i]; split(r, p, "/")
        e = v[r "/eager_ms.median"]; b = best_replay(r); a = v["peers:" r "/ours_alone_ms.median"]
        pe = v["peers:" r "/torch_eager_ms.median"]; pj = v["peers:" r "/torch_jit_ms.median"]
        ort = ort_ms(r, q)
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", p[1], substr(p[2], 2),
            ms(e), b == "" ? "FAIL" : ms(b), pms(a), pms(pe), pms(pj),
            ort == "" ? "-" : ms(ort) (q[r] ? " *(issue)*" : ""),
            ratio(b, pe), ratio(b, pj), ratio(q[r] ? b : a, ort) (q[r] && ort != "" ? " *(issue)*" : ""),
            err_text(v["peers:" r "/max_rel_err"]), err_text(v["peers:" r "/ort_max_rel_err"])
    }
}
# The .onnx files PyTorch exported for ONNX Runtime, imported by tracegraph:
# both engines on the same file, timed in the same turns.
function onnx_table(    i, r, p, o, ort, a, q, any, e) {
    for (i = 0; i < n; i++)
        if (v["peers:" rec[i] "/ours_onnx_ms.median"] != "" || v["peers:" rec[i] "/ours_onnx_error"] != "") any = 1
    if (!any) return
    print ""
    print "**The same ONNX file in both engines.** The model PyTorch exported for ONNX Runtime (opset 17) imported by tracegraph and optimized at -O3 (`tracegraph opt -O3 model.onnx`, `formats/onnx.h`), timed by `tracegraph bench` in the turns that time ONNX Runtime and *ours alone* (our own trace of the workload): what a user who brings a PyTorch model as ONNX gets. Err: its output against PyTorch eager (max rel err)."
    print ""
    print "| workload | threads | ONNX Runtime | tracegraph, imported .onnx | ours alone (our trace) | imported / ONNX Runtime | nodes imported → -O3 | err |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 0; i < n; i++) {
        r = rec[i]; split(r, p, "/")
        o = v["peers:" r "/ours_onnx_ms.median"]; a = v["peers:" r "/ours_alone_ms.median"]
        ort = v["peers:" r "/ort_ms.median"]; e = v["peers:" r "/ours_onnx_error"]
        if (o == "" && e == "") continue
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", p[1], substr(p[2], 2), pms(ort),
            e != "" ? "FAIL: " e : pms(o), pms(a), ratio(o, ort),
            v["peers:" r "/ours_onnx_nodes"] == "" ? "-" : v["peers:" r "/ours_onnx_nodes"],
            err_text(v["peers:" r "/ours_onnx_max_rel_err"])
    }
}
# The instruction sets of record r: "avx2 / avx2" (tracegraph kernels /
# oneDNN); files from before issue 30 have only machine.cpu_kernels.
function isa_of(r,    k, d) {
    k = v[r "/cpu_kernels"]; d = v[r "/onednn_isa"]
    if (k == "") k = v["machine.cpu_kernels"]
    if (k == "") k = "?"
    if (d == "") d = v["machine.onednn_isa"] == "" ? "?" : v["machine.onednn_isa"]
    return k " / " d
}
# The line above a table: the machine and the instruction sets its rows ran
# at (issue 30), or where each row ran when they differ.
function where(    i, r, c, first, same, list) {
    c = v[rec[0] "/cpu"]; if (c == "") c = v["machine.cpu"]
    first = isa_of(rec[0]); same = 1
    for (i = 1; i < n; i++) if (isa_of(rec[i]) != first) same = 0
    if (same) {
        split(first, p2, " / ")
        printf "**Ran on** %s: tracegraph CPU kernels **%s**, oneDNN ISA **%s** (`TG_CPU` and `ONEDNN_MAX_CPU_ISA` lower them; `bench/bench_isa.h`).\n\n", c, p2[1], p2[2]
        return
    }
    for (i = 0; i < n; i++) { r = rec[i]; list = list (i ? "; " : "") r " " isa_of(r) }
    printf "**Ran on** %s; the rows ran at different instruction sets (tracegraph kernels / oneDNN): %s.\n\n", c, list
}
# GFLOP/s of gflop in t ms, with its share of the peak: "95.1 (83%)".
function rate(gflop, t, peak,    g) {
    if (t == "" || t == "null" || t + 0 <= 0) return "-"
    g = gflop / (t / 1000)
    return peak + 0 > 0 ? sprintf("%.1f (%.0f%%)", g, 100 * g / peak) : sprintf("%.1f", g)
}
function roofline_table(    i, r, p, gf, pk, a, pj, ort, q, any) {
    for (i = 0; i < n; i++) if (v[rec[i] "/gflop"] + 0 > 0) any = 1
    if (!any) return
    print ""
    print "**Compute-bound rows against this machine'"'"'s measured peak.** GFLOP: the matrix products'"'"' work (linear, conv, attention; 2 per multiply-add; `workload_flops` in workloads/workloads.c). Peak: fp32 multiply-add throughput on that many threads, measured as the record starts (`bench/suite/peak.c`: independent FMA chains, nothing else). A rate is GFLOP / median time (ours and ONNX Runtime timed back to back, PyTorch jit in rounds), with its share of the peak; resblock'"'"'s -O3 convolutions are Winograd, which does fewer multiplications than counted, so it can pass 100%. A figure marked *(issue)* is the rate the issue'"'"'s ONNX Runtime time (another machine) stands for against this machine'"'"'s peak: above 100%, that time is out of reach here for any implementation that does the counted multiply-adds."
    print ""
    where()
    print "| workload | threads | GFLOP | peak GFLOP/s | ours alone GFLOP/s (% of peak) | PyTorch jit GFLOP/s (% of peak) | ONNX Runtime GFLOP/s (% of peak) | ISA: kernels / oneDNN / peak loop |"
    print "|---|---:|---:|---:|---:|---:|---:|---|"
    for (i = 0; i < n; i++) {
        r = rec[i]; split(r, p, "/")
        gf = v[r "/gflop"]; pk = v[r "/fma_peak_gflops"]
        if (gf + 0 <= 0) continue
        a = v["peers:" r "/ours_alone_ms.median"]; pj = v["peers:" r "/torch_jit_ms.median"]; ort = ort_ms(r, q)
        printf "| %s | %s | %.3f | %s | %s | %s | %s | %s / %s |\n", p[1], substr(p[2], 2), gf,
            pk == "" || pk == "null" ? "-" : sprintf("%.0f", pk), rate(gf, a, pk), rate(gf, pj, pk),
            ort == "" ? "-" : rate(gf, ort, pk) (q[r] ? " *(issue)*" : ""), isa_of(r),
            v[r "/fma_peak_isa"] == "" ? "?" : v[r "/fma_peak_isa"]
    }
}
{ v[$1] = $2 }
$1 ~ /\/eager_ms\.median$/ { r = $1; sub(/\/eager_ms\.median$/, "", r); rec[n++] = r }
END {
    printf "Measured by `make bench`%s on %s (%s cores), %s, %s, %s; load average %s at the start",
        v["machine.commit"] == "" ? "" : " at commit " v["machine.commit"],
        v["machine.cpu"], v["machine.cores"], v["machine.compiler"], v["machine.os"],
        v["machine.date"], v["machine.loadavg"]
    printf " (the machine is shared: compare ratios within one run; eager and the levels of a row are timed in interleaved rounds). Medians in ms of at least %s timed runs after warm-up; min and max are in `bench/results/latest.json`. Speedup: eager / the faster of -O2 and -O3. `encoder` writes layer_norm and GELU as primitive ops (what -O2 pattern fusion must find); `encoder_fused` is the same block with the fused ops.\n\n", v["config.min_runs"]
    where()
    print "| workload | threads | eager | -O0 | -O1 | -O2 | -O3 | speedup | nodes traced → -O3 | arena planned / lower bound (-O3) | max rel err |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 0; i < n; i++) {
        r = rec[i]; split(r, p, "/")
        e = v[r "/eager_ms.median"]
        line = sprintf("| %s | %s | %s", p[1], substr(p[2], 2), ms(e))
        best = ""; err = 0
        for (l = 0; l < 4; l++) {
            t = v[r "/O" l "/replay_ms.median"]
            line = line " | " ms(t)
            if (l >= 2 && t != "null" && t != "" && (best == "" || t + 0 < best + 0)) best = t
            x = v[r "/O" l "/max_rel_err"]
            if (x == "null") err = "FAIL"
            else if (err != "FAIL" && x + 0 > err + 0) err = x
        }
        lb = v[r "/O3/arena_bytes.lower_bound"]; pl = v[r "/O3/arena_bytes.planned"]
        line = line sprintf(" | %s | %s → %s | %s / %s (%.2f×) | %s |",
            best == "" ? "-" : sprintf("%.2f×", e / best), v[r "/traced_nodes"],
            v[r "/O3/nodes_after"], mb(pl), mb(lb), lb > 0 ? pl / lb : 1,
            err == "FAIL" ? "FAIL" : err + 0 == 0 ? "0" : sprintf("%.1e", err))
        print line
    }
    peer_table()
    onnx_table()
    roofline_table()
    print ""
    print "| workload | threads | trace | optimize -O1 / -O2 / -O3 | .tgraph -O0 → -O3 (KB) | load -O3 | compile -O3 |"
    print "|---|---:|---:|---:|---:|---:|---:|"
    for (i = 0; i < n; i++) {
        r = rec[i]; split(r, p, "/")
        printf "| %s | %s | %s | %s / %s / %s | %s → %s | %s | %s |\n", p[1], substr(p[2], 2),
            ms(v[r "/trace_ms"]), ms(v[r "/O1/optimize_ms"]), ms(v[r "/O2/optimize_ms"]),
            ms(v[r "/O3/optimize_ms"]), kb(v[r "/O0/tgraph_bytes"]), kb(v[r "/O3/tgraph_bytes"]),
            ms(v[r "/O3/load_ms"]), ms(v[r "/O3/compile_ms"])
    }
    dev = ""
    for (i = 0; i < n; i++) if (v[rec[i] "/opencl_device"] != "" && v[rec[i] "/opencl_device"] != "null") dev = v[rec[i] "/opencl_device"]
    if (dev != "") {
        print ""
        printf "OpenCL replay (issue 7) of the same optimized graphs on %s (it runs on every core whatever the thread count; measured in the records of the first thread count). Max rel err: against the CPU replay of the same level (the suite fails above 1e-4).\n\n", dev
        print "| workload | eager | OpenCL -O0 | -O1 | -O2 | -O3 | OpenCL / CPU replay time -O2 | compile -O2 | max rel err vs CPU |"
        print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        for (i = 0; i < n; i++) {
            r = rec[i]; split(r, p, "/")
            if (v[r "/O0/opencl.ok"] == "") continue
            line = sprintf("| %s | %s", p[1], ms(v[r "/eager_ms.median"]))
            err = 0
            for (l = 0; l < 4; l++) {
                line = line " | " ms(v[r "/O" l "/opencl.replay_ms.median"])
                x = v[r "/O" l "/opencl.rel_err_vs_cpu"]
                if (x == "null" || x == "") err = "FAIL"
                else if (err != "FAIL" && x + 0 > err + 0) err = x
            }
            o2 = v[r "/O2/opencl.replay_ms.median"]; c2 = v[r "/O2/replay_ms.median"]
            line = line sprintf(" | %s | %s | %s |",
                o2 == "" || o2 == "null" || c2 == "" || c2 == "null" ? "-" : sprintf("%.2f×", o2 / c2),
                ms(v[r "/O2/opencl.compile_ms"]),
                err == "FAIL" ? "FAIL" : err + 0 == 0 ? "0" : sprintf("%.1e", err))
            print line
        }
    }
    print ""
    printf "![eager vs replay per level](%s)\n", chart
}' >"$out"
echo "table.sh: wrote $out"

if [ -w "$doc" ] && grep -q '<!-- bench:begin -->' "$doc" &&
    grep -q '<!-- bench:end -->' "$doc"; then
    doc=$(abspath "$doc")
    tmp=$doc.tmp.$$
    # The chart's link, relative to DOC.md instead of OUT.md.
    awk -v table="$out" -v chart="$(relpath "$chart" "$(dirname "$doc")")" '
        /<!-- bench:begin -->/ {
            print
            while ((getline l < table) > 0) {
                if (l ~ /^!\[eager vs replay per level\]\(/) l = "![eager vs replay per level](" chart ")"
                print l
            }
            skip = 1; next
        }
        /<!-- bench:end -->/ { skip = 0 }
        !skip' "$doc" >"$tmp" && mv "$tmp" "$doc"
    echo "table.sh: embedded it in $doc"
fi
