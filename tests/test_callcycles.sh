#!/bin/bash
# test_callcycles.sh SRC LIBLIST FIXTURELIST - the leaf rule
# (docs/ARCHITECTURE.md, "Leaves"), checked by tools/callcycles.sh on the
# library's objects (LIBLIST: every object of tg_obj, one path a line):
# no call cycle among the files of replay/opencl and of formats/onnx, and
# the op files of each folder never call one another.  Then the checker
# itself, on the objects of tests/callcycles/ (FIXTURELIST): bad/ holds a
# cycle of two files and one of three beside a leaf, ok/ none; it must
# fail on the first with each cycle's edges and functions, pass the
# second, and refuse bad usage.
set -u
src=$(realpath "$1")
lib=$(realpath "$2")
fix=$(realpath "$3")
tool=$src/tools/callcycles.sh
. "$(dirname "$0")/checks.sh"
command -v nm >/dev/null || { echo "SKIP: no nm"; exit 77; }

# ---- the library ----
for d in replay/opencl formats/onnx tracer; do
    expect 0 bash "$tool" "$d" "@$lib"
    has out "callcycles: $d: "
    has out "no cycle"
done
# the op files' own rule: an op file (an OpenCL op, an ONNX converter)
# calls helpers only, never another op file; only the table's file calls
# them all
check_ops() {
    local d=$1 a arrow b rest n=0
    shift
    expect 0 bash "$tool" -v "$d" "@$lib"
    grep ' -> ' out >edges
    for f in "$@"; do
        grep -q "^$d/$f -> " edges || bad "$d/$f calls no helper: not in the graph?"
    done
    while read -r a arrow b rest; do
        case " $* " in *" $(basename "$a") "*) ;; *) continue ;; esac
        case " $* " in *" $(basename "$b") "*) ;; *) continue ;; esac
        bad "op file calls op file: $a -> $b $rest"
        n=$((n + 1))
    done <edges
    [ "$n" -eq 0 ] && good
}
check_ops replay/opencl $(cd "$src/replay/opencl" && echo ops_*.c)
check_ops formats/onnx onnx_read_compose.c onnx_read_conv.c onnx_read_einsum.c \
    onnx_read_gridsample.c onnx_read_pad.c onnx_read_pool.c onnx_read_resize.c \
    onnx_read_rnn.c onnx_read_shape.c

# ---- the checker on its fixture ----
expect 1 bash "$tool" tests/callcycles/bad "@$fix"
f=tests/callcycles/bad
has err "call cycle among 2 files:"
has err "  $f/a.c -> $f/b.c via cc_b_one, cc_b_two"
has err "  $f/b.c -> $f/a.c via cc_a"
has err "call cycle among 3 files:"
has err "  $f/x.c -> $f/y.c via cc_y"
has err "  $f/y.c -> $f/z.c via cc_z"
has err "  $f/z.c -> $f/x.c via cc_x"
has err "callcycles: 2 call cycle(s) among the files of tests/callcycles/bad"
lacks err "w.c"
lacks err "also:"
# -v lists every edge, the leaf's too, on stdout
expect 1 bash "$tool" -v tests/callcycles/bad "@$fix"
has out "$f/z.c -> $f/w.c via cc_w"
# ok/ alone has one edge and no cycle; q's call into bad/ is outside it
expect 0 bash "$tool" tests/callcycles/ok "@$fix"
has out "callcycles: tests/callcycles/ok: 2 files, 1 cross-file edges, no cycle"
expect 0 bash "$tool" -q tests/callcycles/ok "@$fix"
[ -s out ] && bad "-q printed: $(cat out)" || good
# both folders at once: still the two cycles of bad/
expect 1 bash "$tool" tests/callcycles/ok,tests/callcycles/bad "@$fix"
has err "callcycles: 2 call cycle(s)"
# bad usage
expect 2 bash "$tool" tests/callcycles/bad
has err "usage: callcycles.sh"
expect 2 bash "$tool" tests/callcycles/bad /nonexistent/x.c.o
has err "no object /nonexistent/x.c.o"
expect 2 bash "$tool" tests/callcycles/none "@$fix"
has err "no object of tests/callcycles/none"
expect 2 bash "$tool" tests/callcycles/bad @/nonexistent/list
has err "cannot read object list /nonexistent/list"
checks_done
