#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer targets (tests/fuzz_*.c) with clang,
# -fsanitize=fuzzer,address,undefined, against the library sources and the
# generated eager_ops.c of a build directory, then runs each one for a
# bounded time.  Fails if any target crashes, leaks, times out or runs out
# of memory; the input that did it is kept under $FUZZ_DIR/artifacts.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR]     (defaults: 35, build)
#
# Targets and their seeds:
#   fuzz_tgraph   .tgraph loader      tests/corpus/tgraph
#   fuzz_text_ir  text IR parser      tests/corpus/text_ir (+ text_ir.dict)
#   fuzz_npy      .npy reader         tests/corpus/npy (+ npy.dict)
#   fuzz_ckpt     state checkpoints   tests/corpus/ckpt
#   fuzz_idx      IDX reader, plain   tests/corpus/idx (+ idx.dict)
#                 and gzip, and the
#                 dataset
#   fuzz_onnx     ONNX import         small node-test models of libonnx-testdata
#                                     and of tests/data/pytorch, copied into
#                                     $FUZZ_DIR/seeds/onnx at run time
#   fuzz_run      past loading: load, tests/corpus/run and the .tgraph and
#                 optimize, compile,  ONNX seeds above with fuzz_run.c's
#                 replay and the      header, in $FUZZ_DIR/seeds/run
#                 interpreter at fuzzed dynamic sizes
#                 (fuzz_run.c and fuzz_ocl.c share the input layout, the
#                 loading and the run of both sides: tests/fuzz_graph.h)
#   fuzz_ocl      the OpenCL backend: tests/corpus/ocl, and the fuzz_run
#                 compile (attention  seeds with fuzz_ocl.c's third header
#                 matcher, fused and  byte (the backend's switches: 0) in
#                 GEMM/conv sources,  $FUZZ_DIR/seeds/ocl
#                 the memory pool), a
#                 run on PoCL, the
#                 interpreter compared
#   fuzz_cli      the tracegraph tool tests/corpus/cli (+ cli.dict): a graph,
#                 (run, check, bench,  .npy inputs and -i/-o specs from the
#                 info, dump, dot)     bytes, cli_main in-process, files in a
#                                     temporary directory only
# FUZZ_TARGETS="fuzz_ocl fuzz_run" runs only the targets named (default: all).
# Each target holds its time: libFuzzer checks -max_total_time only between
# mutations, not while it runs the corpus it starts from, so the slow
# targets (fuzz_run, fuzz_ocl) stop doing work once it is spent
# (fuzz_budget_init in tests/fuzz_graph.h); each prints the time it took.
# fuzz_onnx and fuzz_run mutate ONNX models by their structure
# (tests/fuzz_onnx_mutate.h).
# New inputs go to a scratch corpus in $FUZZ_DIR (default build-fuzz/), never
# into the repository, and so do the OpenCL program caches (PoCL's and the
# backend's TG_OPENCL_CACHE, $FUZZ_DIR/cache).  The OpenCL driver's own
# leaks are suppressed as in the sanitized ctest run, plus the unnamed operator new
# stacks of PoCL compiling new sources (tests/lsan_fuzz.supp).
# Needs clang and libclang-rt-14-dev (scripts/deps.sh).
set -euo pipefail

secs=${1:-35}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
out=${FUZZ_DIR:-$root/build-fuzz}
CC=${FUZZ_CC:-clang}

command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (scripts/deps.sh)" >&2; exit 1; }
# The generated sources, brought up to date every time: a build directory
# older than the .cl files would otherwise embed the old kernels.
echo "fuzz.sh: the op API and the embedded OpenCL sources in $build/gen, up to date"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" >/dev/null
cmake --build "$build" --target tg_gen_sources >/dev/null

# OpenMP with clang needs libomp's omp.h (libomp-dev); without it the
# sources that use OpenMP are left out, which the loaders do not need.
omp=(-fopenmp)
printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() < 0; }\n' |
    "$CC" -fopenmp -x c - -o /dev/null 2>/dev/null || omp=()
# TG_ASSERTS: the library's internal asserts on, as in every sanitized build
# (graph/errors.h): no input may reach one.
flags=(-g -O1 -std=c11 -D_GNU_SOURCE -DTG_IN_TREE -DTG_ASSERTS "${omp[@]}" -fno-omit-frame-pointer
       -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -I"$root" -I"$build/gen")
mkdir -p "$out/obj" "$out/artifacts"

# Objects are rebuilt when their source changes, and all of them when a
# header or the flags change (a stale struct layout would be a false bug).
stamp=$out/obj/.stamp
dirs=("$root"/{graph,eager,tracer,optimize,formats,formats/onnx,replay,replay/opencl,cli} "$build/gen")
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${flags[*]}" ] ||
   [ -n "$(find "${dirs[@]}" \( -name '*.h' -o -name '*.def' \) -newer "$stamp" \
           -print -quit 2>/dev/null)" ]; then
    rm -f "$out"/obj/*.o
    echo "${flags[*]}" >"$stamp"
fi

# The library and the tool (but its main(), cli/entry.c) as an
# archive: each target pulls in only what it uses.
objs=()
for src in "$root"/{graph,eager,tracer,optimize,formats,formats/onnx,replay,replay/opencl,cli}/*.c \
           "$build/gen/eager_ops.c" "$build/gen/onnx.pb-c.c" "$build/gen/ocl_sources.c"; do
    [ -f "$src" ] || continue
    [ "$src" = "$root/cli/entry.c" ] && continue
    obj=$out/obj/$(echo "${src#"$root"/}" | tr '/' '_').o
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
        if ! "$CC" "${flags[@]}" -w -fsanitize=fuzzer-no-link -c "$src" -o "$obj"; then
            echo "fuzz.sh: left out ${src#"$root"/} (does not build with $CC here)" >&2
            rm -f "$obj"
            continue
        fi
    fi
    objs+=("$obj")
done
rm -f "$out/libtg_fuzz.a"
ar rcs "$out/libtg_fuzz.a" "${objs[@]}"
libs=($(pkg-config --libs libzstd zlib libunwind libprotobuf-c) -ldnnl -lOpenCL -lclblast -lm -lpthread)

# The OpenCL targets' program caches: in the scratch directory only.
mkdir -p "$out/cache/pocl" "$out/cache/tracegraph-opencl"
export POCL_CACHE_DIR=$out/cache/pocl XDG_CACHE_HOME=$out/cache
export TG_OPENCL_CACHE=$out/cache/tracegraph-opencl
# BLIS (a tuning candidate, loaded only when a plan is tuned) crashes LeakSanitizer at exit
# (google/sanitizers#1322): kept out of the sanitized fuzzers, as ctest does.
export TG_BLIS=off

run() { # name seed-dir max-len [extra libFuzzer flags...]
    local name=$1 seeds=$2 maxlen=$3
    shift 3
    case " ${FUZZ_TARGETS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    local src=$root/tests/$name.c
    if [ ! -f "$src" ]; then
        echo "fuzz.sh: $name: no tests/$name.c, skipped"
        return 0
    fi
    "$CC" "${flags[@]}" -fsanitize=fuzzer "$src" "$out/libtg_fuzz.a" "${libs[@]}" \
        -o "$out/$name"
    mkdir -p "$out/corpus/$name"
    [ -d "$seeds" ] && cp -n "$seeds"/* "$out/corpus/$name/" 2>/dev/null || true
    echo "fuzz.sh: running $name for ${secs}s"
    local t0=$SECONDS try
    for try in 1 2; do
        if OMP_NUM_THREADS=1 TG_COST_RATES=builtin ASAN_OPTIONS=detect_leaks=1 \
                LSAN_OPTIONS=suppressions=$root/tests/lsan_fuzz.supp "$out/$name" \
                -max_total_time="$secs" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 \
                -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" "$@" \
                "$out/corpus/$name" >"$out/$name.log" 2>&1; then
            break
        fi
        # LeakSanitizer's own thread-stopping tracer can crash at exit, after
        # the fuzzing is DONE, with PoCL's threads about ("Tracer caught
        # signal 11 ... LeakSanitizer has encountered a fatal error", no
        # finding: the artifact is the empty input); seen once in fuzz_ocl.
        # That, and only that, is run again, once; a finding fails at once.
        if [ "$try" = 1 ] && grep -q "Tracer caught signal" "$out/$name.log" &&
                grep -q "LeakSanitizer has encountered a fatal error" "$out/$name.log" &&
                grep -q "^#[0-9]*[[:space:]]*DONE" "$out/$name.log" &&
                ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error" \
                    "$out/$name.log"; then
            echo "fuzz.sh: $name: LeakSanitizer's tracer crashed at exit (no finding), running it again" >&2
            continue
        fi
        tail -n 60 "$out/$name.log" >&2
        echo "fuzz.sh: $name FAILED (log: $out/$name.log)" >&2
        return 1
    done
    grep -E "stat::number_of_executed_units|cov:" "$out/$name.log" | tail -n 2
    echo "fuzz.sh: $name took $((SECONDS - t0))s"
}

status=0
run fuzz_tgraph "$root/tests/corpus/tgraph" 16384 || status=1
dict=()
[ -f "$root/tests/corpus/text_ir.dict" ] && dict=(-dict="$root/tests/corpus/text_ir.dict")
run fuzz_text_ir "$root/tests/corpus/text_ir" 4096 "${dict[@]}" || status=1
run fuzz_npy "$root/tests/corpus/npy" 4096 -dict="$root/tests/corpus/npy.dict" || status=1
run fuzz_ckpt "$root/tests/corpus/ckpt" 4096 || status=1
run fuzz_idx "$root/tests/corpus/idx" 4096 -dict="$root/tests/corpus/idx.dict" || status=1
onnx_node=${TG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
mkdir -p "$out/seeds/onnx"
for t in test_relu test_add_bcast test_constant test_conv_with_strides_padding \
         test_maxpool_2d_pads test_gemm_all_attributes test_reshape_negative_dim \
         test_slice_neg_steps test_split_variable_parts_2d test_layer_normalization_4d_axis1 \
         test_softmax_axis_1_expanded test_constantofshape_int_zeros test_shape_start_1 \
         test_layer_normalization_4d_axis1_expanded test_range_float_type_positive_delta \
         test_resize_upsample_scales_cubic test_resize_downsample_sizes_linear_pytorch_half_pixel \
         test_upsample_nearest test_tril test_depthtospace_crd_mode test_hardmax_axis_0 \
         test_argmax_keepdims_random test_averagepool_1d_default test_gather_elements_1 \
         test_scatter_elements_with_duplicate_indices test_scatter_with_axis \
         test_tile test_edge_pad test_reflect_pad test_scatternd test_mod_mixed_sign_int64; do
    [ -f "$onnx_node/$t/model.onnx" ] && cp "$onnx_node/$t/model.onnx" "$out/seeds/onnx/$t.onnx"
done
# and the small models PyTorch exported (tests/data/pytorch: shape arithmetic,
# 1-D convolutions, Resize with sizes from Shape, Trilu, ArgMax, GatherElements and
# ScatterElements)
for m in conv1d pixel masked upsample classify resblock gatherscatter; do
    cp "$root/tests/data/pytorch/$m.onnx" "$out/seeds/onnx/pytorch_$m.onnx"
done
run fuzz_onnx "$out/seeds/onnx" 8192 || status=1
# Past loading: tests/corpus/run (text IR graphs with dynamic dims at sizes
# that probe the size cap), and the .tgraph and ONNX seeds above behind the
# two header bytes fuzz_run.c reads (tests/fuzz_graph.h: format; no sizes /
# ONNX at -O2 with dim_param sizes 7 and 0).
mkdir -p "$out/seeds/run"
cp "$root"/tests/corpus/run/* "$out/seeds/run/"
for f in "$root"/tests/corpus/tgraph/*.tg; do
    { printf '\001\000'; cat "$f"; } >"$out/seeds/run/tgraph_$(basename "$f")"
done
for f in "$out"/seeds/onnx/*.onnx; do
    { printf '\002\000'; cat "$f"; } >"$out/seeds/run/$(basename "$f")"
    { printf '\012\002\007\000'; cat "$f"; } >"$out/seeds/run/dyn_$(basename "$f")"
done
run fuzz_run "$out/seeds/run" 16384 "${dict[@]}" || status=1
# The OpenCL backend: tests/corpus/ocl (attention, epilogues, depthwise,
# fused chains, views), and fuzz_run's seeds with the switch byte 0
# inserted after its two header bytes.
mkdir -p "$out/seeds/ocl"
cp "$root"/tests/corpus/ocl/* "$out/seeds/ocl/"
for f in "$out"/seeds/run/*; do
    { head -c 2 "$f"; printf '\000'; tail -c +3 "$f"; } >"$out/seeds/ocl/run_$(basename "$f")"
done
# -timeout=60: an input may take a CLBlast routine or local size PoCL has not
# built yet, whose first enqueue compiles it (over 15 s seen for strided-
# batched GEMM under the sanitizers); a hang still stops it.
run fuzz_ocl "$out/seeds/ocl" 16384 "${dict[@]}" -timeout=60 || status=1
run fuzz_cli "$root/tests/corpus/cli" 20000 -dict="$root/tests/corpus/cli.dict" || status=1
[ $status -eq 0 ] && echo "fuzz.sh: all targets ran ${secs}s without a failure"
exit $status
