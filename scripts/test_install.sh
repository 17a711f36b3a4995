#!/usr/bin/env bash
# test_install.sh BUILD_DIR - installs tracegraph into a temporary prefix and
# builds consumers against it: a CMake project using find_package (a C and a
# C++ program) and plain compiles using pkg-config (C with cc, C++ with c++:
# the public headers declare everything extern "C").  Each must build, run
# and print the right number.  Then the examples: each installed header's
# "// example" block compiled as a function body, a program passing const
# input data to replay_run without a cast, and last the two examples of
# README.md (a replay, a training loop), extracted, built with the
# README's own command and as C++, and run; all of them with -Wall -Wextra -Wpedantic -Werror by gcc and
# g++, and by clang and clang++ where installed.
#
# Before that it checks the installed surface (graph/api.h): the headers
# installed are exactly tracegraph.h and what it includes, each compiles
# alone as C and as C++, and libtracegraph.so exports exactly the functions
# and variables those headers declare (GCC's -aux-info lists the declared
# functions; extern variables are read from the preprocessed headers).  A
# doctored copy of the prefix (an internal header added, a declaration
# removed) must make the same checks fail.
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"

# The installed tool is a client of the installed library (its RUNPATH
# finds lib/ from bin/): it runs with no LD_LIBRARY_PATH and lists the CPU.
if ! env -u LD_LIBRARY_PATH "$prefix/bin/tracegraph" devices > "$tmp/devices.txt" 2>&1 ||
   ! grep -q '^cpu  ' "$tmp/devices.txt" ||
   ! ldd "$prefix/bin/tracegraph" | grep -q "$prefix/.*libtracegraph.so"; then
    echo "install check: the installed bin/tracegraph does not run on the installed library:" >&2
    cat "$tmp/devices.txt" >&2
    ldd "$prefix/bin/tracegraph" >&2 || true
    exit 1
fi
echo "install check: bin/tracegraph runs on the installed libtracegraph.so OK"

# The flags every example is built with, in C and C++.
strict="-Wall -Wextra -Wpedantic -Werror"
# cxx_quirks COMPILER: -Wno-missing-field-initializers where COMPILER is a
# C++ compiler that warns about the fields a C++20 designated initializer
# leaves out (g++ before 14: GCC bug 96868; C and clang++ do not warn, and
# the fields left out are zero-initialized all the same); nothing elsewhere.
# Probed once per compiler, here, outside the $(...) that calls it.
declare -A quirks=()
for comp in g++ clang++; do
    command -v "$comp" > /dev/null || continue
    printf 'struct s { int a, b; };\nstruct s v = {.a = 1};\n' |
        $comp -std=c++20 -Wextra -Werror -fsyntax-only -x c++ - 2> /dev/null ||
        quirks[$comp]="-Wno-missing-field-initializers"
done
cxx_quirks() { echo "${quirks[$1]:-}"; }

# check_headers INCLUDE_DIR: every installed header is reached from
# tracegraph.h and compiles alone (C11 and C++17, -Wall -Wextra -Wpedantic
# -Werror): a file holding its #include and a typedef (so that a header of
# macros only is not an empty translation unit).
check_headers() {
    local inc=$1 work=$tmp/hdr ok=0 h f
    rm -rf "$work" && mkdir -p "$work"
    (cd "$inc" && find . -type f | sed 's|^\./||' | sort) \
        > "$work/installed"
    printf '#include <tracegraph.h>\n' > "$work/umbrella.c"
    gcc -std=c11 -M -I"$inc" "$work/umbrella.c" > "$work/deps"
    tr -s ' \\' '\n\n' < "$work/deps" | grep -v ':$' | grep . | xargs realpath -s \
        | sed -n "s|^$inc/||p" | sort -u > "$work/reached"
    if ! cmp -s "$work/installed" "$work/reached"; then
        echo "install check: installed headers not reached from tracegraph.h (internal?):" >&2
        comm -23 "$work/installed" "$work/reached" | sed 's/^/  /' >&2
        ok=1
    fi
    while read -r h; do
        case $h in *.h) ;; *) continue ;; esac
        f=$work/$(echo "$h" | tr / _)
        printf '#include <%s>\ntypedef int tg_alone_check;\n' "$h" > "$f.c"
        cp "$f.c" "$f.cpp"
    done < "$work/installed"
    local flags="-Wall -Wextra -Wpedantic -Werror -fsyntax-only -I$inc"
    gcc -std=c11 $flags "$work"/*.h.c 2> "$work/c.log" ||
        { echo "install check: installed headers that do not compile alone (C):" >&2
          cat "$work/c.log" >&2; ok=1; }
    g++ -std=c++17 $flags "$work"/*.h.cpp 2> "$work/cxx.log" ||
        { echo "install check: installed headers that do not compile alone (C++):" >&2
          cat "$work/cxx.log" >&2; ok=1; }
    return $ok
}

# check_symbols INCLUDE_DIR LIB: the dynamic symbols LIB defines are the
# functions and variables the headers under INCLUDE_DIR declare.
check_symbols() {
    local inc=$1 lib=$2 work=$tmp/sym
    rm -rf "$work" && mkdir -p "$work"
    printf '#include <tracegraph.h>\n' > "$work/all.c"
    gcc -std=c11 -fsyntax-only -I"$inc" -aux-info "$work/aux" "$work/all.c"
    # Declared functions: "/* FILE:LINE:NC */ extern TYPE NAME (ARGS);"
    # (static inline definitions are :NF and not exported).
    INC=$inc perl -ne 'print "$2\n" if m{^/\* (\S+):\d+:NC \*/ extern\s+[^(]*?([A-Za-z_]\w*) \(}
                       && index($1, $ENV{INC} . "/") == 0' "$work/aux" > "$work/declared"
    # Declared variables: "extern TYPE NAME[...], NAME2;" in those headers.
    gcc -std=c11 -E -I"$inc" "$work/all.c" | INC=$inc perl -ne '
        if (/^# \d+ "([^"]*)"/) { $in = index($1, $ENV{INC} . "/") == 0; next }
        $t .= $_ if $in;
        END {
            $t =~ s/__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)//g;
            while ($t =~ /\bextern\s+([^;{}()"]*);/g) {
                for my $d (split /,/, $1) {
                    $d =~ s/[\[=].*//s;
                    print "$1\n" if $d =~ /(\w+)\s*$/;
                }
            }
        }' >> "$work/declared"
    sort -u "$work/declared" -o "$work/declared"
    nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' \
        | grep -vxE '_init|_fini|_edata|_end|__bss_start' | sort -u > "$work/exported"
    if [ "$(wc -l < "$work/declared")" -lt 100 ]; then
        echo "install check: only $(wc -l < "$work/declared") declarations found in $inc" >&2
        return 1
    fi
    comm -13 "$work/declared" "$work/exported" > "$work/extra"
    comm -23 "$work/declared" "$work/exported" > "$work/missing"
    if [ -s "$work/extra" ]; then
        echo "install check: libtracegraph.so exports symbols no installed header declares" \
             "(internal: declare them without TG_API):" >&2
        sed 's/^/  /' "$work/extra" >&2
    fi
    if [ -s "$work/missing" ]; then
        echo "install check: installed headers declare symbols libtracegraph.so does not export" \
             "(TG_API missing, or not defined):" >&2
        sed 's/^/  /' "$work/missing" >&2
    fi
    [ ! -s "$work/extra" ] && [ ! -s "$work/missing" ]
}

inc=$prefix/include
lib=$(find "$prefix" -name 'libtracegraph.so' | head -n1)
check_headers "$inc"
check_symbols "$inc" "$lib"
echo "install check: $(find "$inc" -name '*.h' | wc -l) headers compile alone (C, C++)," \
     "$(wc -l < "$tmp/sym/exported") exported symbols = the declared ones OK"

# The checks must fail on a doctored prefix: an internal header installed,
# one public declaration removed.
cp -r "$inc" "$tmp/bad"
cp "$src/eager/internal.h" "$tmp/bad/tracegraph/eager/"
if check_headers "$tmp/bad" 2> "$tmp/bad.log" || ! grep -q 'eager/internal.h' "$tmp/bad.log"; then
    echo "install check: an installed internal header was not caught" >&2
    exit 1
fi
rm "$tmp/bad/tracegraph/eager/internal.h"
bad_h=$tmp/bad/tracegraph/replay/replay.h
grep -q '^TG_API int replay_num_steps(.*);$' "$bad_h"
sed -i '/^TG_API int replay_num_steps(/d' "$bad_h"
if check_symbols "$tmp/bad" "$lib" 2> "$tmp/bad.log" || ! grep -qx '  replay_num_steps' "$tmp/bad.log"; then
    echo "install check: an exported symbol no header declares was not caught" >&2
    exit 1
fi
echo "install check: a doctored prefix fails both checks OK"

mkdir -p "$tmp/consumer"
cat > "$tmp/consumer/main.c" <<'C'
#include <stdio.h>
#include <tracegraph.h>

int main(void)
{
    eager_pool_push();
    eager_tensor *x = eager_arange(GRAPH_F32, 0, 4, 1);
    eager_tensor *y = eager_reduce_sum(eager_mul(x, x), TG_NOINTS, 0);
    double v = y ? eager_item(y) : -1;
    eager_pool_pop();
    printf("sum of squares 0..3 = %g\n", v);
    return v == 14.0 ? 0 : 1;
}
C
# The same from C++, plus a trace replayed: every call links (extern "C").
cat > "$tmp/consumer/main.cpp" <<'CXX'
#include <cstdio>
#include <tracegraph.h>

int main()
{
    eager_pool_push();
    eager_tensor *x = eager_arange(GRAPH_F32, 0, 4, 1);
    trace_begin(nullptr);
    trace_input(x, "x");
    eager_tensor *y = eager_reduce_sum(eager_mul(x, x), TG_NOINTS, 0);
    trace_output(y, "y");
    graph *g = trace_freeze();
    char err[256] = "";
    replay_plan *p = g ? replay_compile(g, nullptr, err, sizeof err) : nullptr;
    replay_session *s = p ? replay_session_new(p, nullptr, 0) : nullptr;
    const float in[4] = {1, 2, 3, 4};
    float out = -1;
    replay_tensor ri{}, ro{}; /* C++17 has no designated initializers: zero, then by name */
    ri.name = "x";
    ri.type = *eager_type(x);
    ri.input = in; /* const: inputs are only read */
    ro.name = "y";
    ro.data = &out;
    ro.size = sizeof out; /* any type that fits: the run sets ro.type */
    tg_status st = s ? replay_run(s, &ri, 1, &ro, 1) : TG_ERR_NULL;
    double v = eager_item(y);
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
    std::printf("C++: sum of squares 0..3 = %g, replayed on 1..4 = %g (%s)\n", v, (double)out,
                st == TG_OK ? "ok" : err);
    return v == 14.0 && out == 30.0f ? 0 : 1;
}
CXX
cat > "$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(consumer C CXX)
find_package(tracegraph REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE tracegraph::tracegraph)
add_executable(consumer_cxx main.cpp)
target_link_libraries(consumer_cxx PRIVATE tracegraph::tracegraph)
add_executable(consumer_static main.c)
target_link_libraries(consumer_static PRIVATE tracegraph::tracegraph_static)
CM
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/cmake.log"
cmake --build "$tmp/consumer/build" > "$tmp/build.log"
LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer/build/consumer"
LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer/build/consumer_cxx"
# The static library carries every kernel set (eager/isa.h): the program
# runs at each level this CPU has.
"$tmp/consumer/build/consumer_static"
for level in baseline avx2 avx512; do
    TG_CPU=$level "$tmp/consumer/build/consumer_static" 2> "$tmp/static.err" > /dev/null || {
        cat "$tmp/static.err" >&2; exit 1; }
done
echo "install check: find_package(tracegraph) consumers (C, C++, static at every CPU level) OK"

# TG_SHAPE / TG_INTS / TG_NOINTS / TG_STR from C++: C's compound literals
# are not C++ (-Wpedantic: "ISO C++ forbids compound-literals"), so the
# header gives C++ its own; the program builds warning-free with g++ and
# clang++ (where installed) and checks the values it built.
cat > "$tmp/literals.cpp" <<'CXX'
#include <tracegraph.h>

int main()
{
    size_t n = 3;
    int k = 2;
    graph_ints a = TG_SHAPE(2, n, k), none = TG_NOINTS, one = TG_INTS(-1);
    graph_str s = TG_STR("relu");
    eager_pool_push();
    eager_tensor *y = eager_reduce_sum(eager_ones(GRAPH_F32, TG_SHAPE(2, 3)), TG_INTS(0, 1), 0);
    double v = eager_item(y);
    eager_pool_pop();
    return !(a.n == 3 && a.v[0] == 2 && a.v[1] == 3 && a.v[2] == 2 && none.n == 0 && one.n == 1 &&
             one.v[0] == -1 && s.s[0] == 'r' && s.s[4] == 0 && v == 6.0);
}
CXX
for cxx in g++ clang++; do
    command -v $cxx > /dev/null || continue
    $cxx -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$prefix/include" "$tmp/literals.cpp" \
        -L"$prefix/lib" -ltracegraph -o "$tmp/literals_$cxx" 2> "$tmp/literals.log" ||
        { echo "install check: TG_SHAPE/TG_INTS/TG_STR from C++ ($cxx -Wpedantic):" >&2
          cat "$tmp/literals.log" >&2; exit 1; }
    LD_LIBRARY_PATH="$prefix/lib" "$tmp/literals_$cxx" ||
        { echo "install check: the C++ literals built wrong values ($cxx)" >&2; exit 1; }
done
echo "install check: TG_SHAPE/TG_INTS/TG_NOINTS/TG_STR from C++ (-Wpedantic -Werror) OK"

# Every options struct of the installed headers (typedef struct X_opts or
# X_options) has its X_INIT initializer giving the defaults, in C11 and
# C++17 alike (C++ has no designated initializers: the header gives it
# the *_default_* call or a value-initialized struct).  The program uses
# each at -Wall -Wextra -Wpedantic -Werror with gcc/g++ and clang/clang++
# and checks the values against the documented defaults and the
# *_default_* functions.
cat > "$tmp/inits.c" <<'C'
#include <string.h>
#include <tracegraph.h>

static const trace_opts static_trace = TRACE_OPTS_INIT; /* an initializer at file scope */

int main(void)
{
    replay_opts ro = REPLAY_OPTS_INIT;
    opt_options oo = OPT_OPTIONS_INIT;
    trace_opts to = TRACE_OPTS_INIT;
    format_save_opts so = FORMAT_SAVE_OPTS_INIT;
    format_onnx_save_opts xs = FORMAT_ONNX_SAVE_OPTS_INIT;
    format_onnx_load_opts xl = FORMAT_ONNX_LOAD_OPTS_INIT;
    graph_print_opts po = GRAPH_PRINT_OPTS_INIT;
    eager_sgd_opts sg = EAGER_SGD_OPTS_INIT;
    eager_adamw_opts aw = EAGER_ADAMW_OPTS_INIT;
    eager_sgd_opts sgd = eager_sgd_default_opts();
    eager_adamw_opts awd = eager_adamw_default_opts();
    opt_options od = opt_default_options();
    trace_opts td = trace_default_opts();
    int bad = 0;
    bad |= !(ro.backend == 0 && ro.threads == 0 && !ro.no_inplace && !ro.device &&
             !ro.guard_warn && !ro.guard_warn_ctx && ro.max_memory == 0);
    bad |= !(oo.level == 2 && oo.level == od.level && oo.keep_params == od.keep_params &&
             oo.finite_math == od.finite_math && oo.verify == 1 && oo.verify == od.verify &&
             oo.verify_each == od.verify_each && oo.verify_rtol == od.verify_rtol &&
             oo.verify_seed == od.verify_seed && !oo.print_after_each && !oo.explain &&
             oo.fold_budget == od.fold_budget) << 1;
    bad |= !(!strcmp(to.name, "main") && !strcmp(td.name, "main") && to.capture_stack == 1 &&
             to.capture_stack == td.capture_stack && to.max_depth == 16 &&
             to.max_depth == td.max_depth && to.value_reads == GRAPH_GUARD_STRICT &&
             to.value_reads == td.value_reads && static_trace.max_depth == 16) << 2;
    bad |= !(so.level == 3 && so.level == format_save_default_opts().level) << 3;
    bad |= !(xs.drop_guards == 0 && xl.params == 0 && xl.dim_default == 0 && !xl.warn &&
             !xl.warn_ctx) << 4;
    bad |= !(po.inline_max == 16 && po.inline_all == 0 && po.provenance == 1 &&
             po.comments == 1 && GRAPH_PRINT_DEFAULTS.inline_max == 16) << 5;
    bad |= !(sg.lr == 1e-3 && sg.lr == sgd.lr && sg.momentum == 0 && sg.weight_decay == 0 &&
             sg.nesterov == 0 && !sg.prefix && sgd.momentum == 0 && !sgd.prefix &&
             aw.lr == 1e-3 && aw.lr == awd.lr && aw.beta1 == 0.9 && aw.beta1 == awd.beta1 &&
             aw.beta2 == 0.999 && aw.beta2 == awd.beta2 && aw.eps == 1e-8 && aw.eps == awd.eps &&
             aw.weight_decay == 1e-2 && aw.weight_decay == awd.weight_decay && !aw.prefix &&
             !awd.prefix) << 6;
    return bad;
}
C
cp "$tmp/inits.c" "$tmp/inits.cpp"
# every options struct the headers declare, and the program uses its _INIT
for s in $(cat "$inc"/tracegraph/*/*.h | sed -n 's/^typedef struct \([a-z_]*_\(opts\|options\)\) {.*/\1/p'); do
    m=$(echo "$s" | tr a-z A-Z)_INIT
    if ! grep -q "^#define $m\b" -r "$inc" || ! grep -q "$m" "$tmp/inits.c"; then
        echo "install check: $s has no $m in the installed headers, or the check does not use it" >&2
        exit 1
    fi
done
for cc in gcc:c11 clang:c11 g++:c++17 clang++:c++17; do
    comp=${cc%%:*} std=${cc#*:} prog=$tmp/inits.c
    command -v "$comp" > /dev/null || continue
    [ "$std" = c++17 ] && prog=$tmp/inits.cpp
    $comp -std=$std -Wall -Wextra -Wpedantic -Werror -I"$inc" "$prog" -L"$prefix/lib" \
        -ltracegraph -o "$tmp/inits_$comp" 2> "$tmp/inits.log" ||
        { echo "install check: the *_INIT initializers ($comp -std=$std -Wpedantic):" >&2
          cat "$tmp/inits.log" >&2; exit 1; }
    st=0
    LD_LIBRARY_PATH="$prefix/lib" "$tmp/inits_$comp" || st=$?
    if [ $st -ne 0 ]; then
        echo "install check: the *_INIT initializers give wrong defaults ($comp, mask $st)" >&2
        exit 1
    fi
done
echo "install check: each options struct's *_INIT (C11, C++17; -Wpedantic -Werror) OK"

# An op called from its installed documentation alone: the generated
# header names batch_norm's inputs and says what each one is.  The program
# passes them by those roles (not PyTorch's F.batch_norm order) and checks
# every element against a naive loop.
ops_h=$inc/tracegraph/eager/eager_ops.h
bn_proto='TG_API eager_tensor *eager_batch_norm_at(EAGER_SITE_PARAMS, eager_tensor *x, eager_tensor *scale, eager_tensor *bias, eager_tensor *mean, eager_tensor *var, float eps);'
for want in "$bn_proto" ' *   scale        gamma [C] (nn.BatchNorm2d'"'"'s weight)' \
            ' *   var          running variance [C]' ' *   eps          added to var; finite, >= 0; default 1e-5'; do
    if ! grep -qxF -- "$want" "$ops_h"; then
        echo "install check: $ops_h lacks the line: $want" >&2
        exit 1
    fi
done
if grep -q 'eager_tensor \*x[0-9]' "$ops_h"; then
    echo "install check: $ops_h has unnamed inputs (x0, x1, ...):" >&2
    grep -n 'eager_tensor \*x[0-9]' "$ops_h" | head -5 >&2
    exit 1
fi
cat > "$tmp/consumer/bn.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <tracegraph.h>

int main(void)
{
    enum { N = 2, C = 3, HW = 4 };
    float xd[N * C * HW], scd[C] = {0.5f, -2, 1.5f}, bd[C] = {0.25f, 1, -3},
          md[C] = {1, -0.5f, 4}, vd[C] = {0.25f, 2, 9}, eps = 1e-3f;
    for (int i = 0; i < N * C * HW; i++)
        xd[i] = (float)((i * 7) % 11) - 5.0f;
    eager_pool_push();
    eager_tensor *x = eager_from_data(GRAPH_F32, TG_INTS(N, C, 2, 2), xd);
    eager_tensor *scale = eager_from_data(GRAPH_F32, TG_INTS(C), scd);
    eager_tensor *bias = eager_from_data(GRAPH_F32, TG_INTS(C), bd);
    eager_tensor *mean = eager_from_data(GRAPH_F32, TG_INTS(C), md);
    eager_tensor *var = eager_from_data(GRAPH_F32, TG_INTS(C), vd);
    eager_tensor *y = eager_batch_norm(x, scale, bias, mean, var, eps);
    const float *yd = y ? eager_data(y) : NULL;
    int bad = !yd;
    if (!yd)
        fprintf(stderr, "batch_norm: %s\n", eager_error());
    for (int i = 0; yd && i < N * C * HW; i++) {
        int c = i / HW % C;
        double want = (xd[i] - md[c]) / sqrt((double)vd[c] + eps) * scd[c] + bd[c];
        if (fabs(yd[i] - want) > 1e-5 * (1 + fabs(want))) {
            fprintf(stderr, "batch_norm: y[%d] = %g, want %g\n", i, yd[i], want);
            bad = 1;
        }
    }
    eager_pool_pop();
    printf("batch_norm from the installed header: %s\n", bad ? "WRONG" : "ok");
    return bad;
}
C
libdir=$(dirname "$(find "$prefix" -name tracegraph.pc | head -n1)")
PKG_CONFIG_PATH="$libdir" cc -std=c11 -Wall -Wextra -Werror "$tmp/consumer/bn.c" -o "$tmp/consumer/bn" \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph) -lm
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/bn"

PKG_CONFIG_PATH="$libdir" cc -std=c11 "$tmp/consumer/main.c" -o "$tmp/consumer/pc" \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph)
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/pc"
PKG_CONFIG_PATH="$libdir" c++ -std=c++17 "$tmp/consumer/main.cpp" -o "$tmp/consumer/pcxx" \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph)
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/pcxx"
echo "install check: pkg-config consumers (C, C++) OK"

# The device-resident OpenCL example (examples/opencl_device_resident.c)
# uses the installed headers only, plus the OpenCL API it calls itself
# (-lOpenCL): cl_mem inputs and outputs in the plan's context, N runs with
# no host copy, one read back compared with the CPU replay.  It must build
# here; it must run and match where an OpenCL platform exists (PoCL in CI),
# and says it skipped (exit 77) where none does.
PKG_CONFIG_PATH="$libdir" cc -std=c11 -Wall -Wextra -Werror "$src/examples/opencl_device_resident.c" \
    -o "$tmp/consumer/device_resident" $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph) \
    -lOpenCL -lm
st=0
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/device_resident" > "$tmp/dr.out" || st=$?
cat "$tmp/dr.out"
if [ $st -eq 77 ]; then
    echo "install check: SKIP the device-resident OpenCL example: no OpenCL platform"
elif [ $st -ne 0 ] || ! grep -q "device-resident replay matches the CPU replay" "$tmp/dr.out"; then
    echo "install check: examples/opencl_device_resident.c built against the prefix failed (exit $st)" >&2
    exit 1
else
    echo "install check: the device-resident OpenCL example (installed headers only) OK"
fi

# The usage example at the top of each installed header: in its first
# comment, the block of " *   " lines opened by a line "// example" or
# "// example (given: DECL; DECL ...)", to the end of that paragraph.  Each
# becomes the body of a function whose parameters are the givens (with
# stdio.h, stdlib.h and tracegraph.h included), compiled as C11 and C++20
# ($strict) by each compiler there is.  The headers below must have one.
hx=$tmp/hdrex
mkdir -p "$hx"
(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort) | while read -r h; do
    perl -e '
        my ($given, @body, $on);
        while (<>) {
            last if m{\*/};
            if (!$on && m{^ \*   // example(?: \(given: (.*)\))?\s*$}) {
                ($on, $given) = (1, $1 // "");
                next;
            }
            next unless $on;
            last unless m{^ \*   (.*)$};
            push @body, "    $1\n";
        }
        exit 0 unless $on;
        my $params = join(", ", split(/;\s*/, $given)) || "void";
        print "#include <stdio.h>\n#include <stdlib.h>\n#include <tracegraph.h>\n\n",
              "int tg_example($params);\nint tg_example($params)\n{\n", @body,
              "    return 0;\n}\n";' "$inc/$h" > "$hx/$(echo "$h" | tr / _).c"
    [ -s "$hx/$(echo "$h" | tr / _).c" ] || rm "$hx/$(echo "$h" | tr / _).c"
done
for h in replay/replay.h tracer/trace.h formats/tgraph.h formats/onnx.h formats/npy.h formats/ckpt.h formats/idx.h optimize/opt.h \
    graph/target.h graph/graph.h eager/optim.h; do
    if [ ! -s "$hx/tracegraph_$(echo "$h" | tr / _).c" ]; then
        echo "install check: $inc/tracegraph/$h has no \"// example\" block at its top" >&2
        exit 1
    fi
done
for f in "$hx"/*.c; do cp "$f" "${f%.c}.cpp"; done
hdr_built=""
for cc in gcc:c11 clang:c11 g++:c++20 clang++:c++20; do
    comp=${cc%%:*} std=${cc#*:} files=("$hx"/*.c)
    command -v "$comp" > /dev/null || continue
    [ "$std" = c++20 ] && files=("$hx"/*.cpp)
    if ! $comp -std=$std $strict $(cxx_quirks $comp) -fsyntax-only -I"$inc" "${files[@]}" \
            2> "$tmp/hdrex.log"; then
        echo "install check: a header's example does not compile ($comp -std=$std $strict):" >&2
        cat "$tmp/hdrex.log" >&2
        exit 1
    fi
    hdr_built="$hdr_built $comp"
done
# The check must be able to fail: replay.h's example with its input given
# as .data, a void *, from const data (a warning in C, an error in C++).
sed 's/\.input = xdata/.data = xdata/' "$hx/tracegraph_replay_replay.h.c" > "$hx/bad.c"
grep -q '\.data = xdata' "$hx/bad.c"
if gcc -std=c11 $strict -fsyntax-only -I"$inc" "$hx/bad.c" 2> /dev/null; then
    echo "install check: replay.h's example with const data as .data was not caught" >&2
    exit 1
fi
echo "install check: $(ls "$hx"/*.h.c | wc -l) header examples compile ($strict;" \
     "C11 and C++20 by$hdr_built) OK"

# Const input data, no cast: a const float[] and eager_peek's pointer as
# replay_tensor.input, built with -Wcast-qual too as C11 and C++20 by each
# compiler there is, run at two batch sizes and checked.
cat > "$tmp/const_input.c" <<'C'
#include <stdio.h>
#include <tracegraph.h>

static const float xs[6] = {1, -2, 3, -4, 5, -6};

int main(void)
{
    eager_pool_push();
    eager_tensor *x = eager_zeros(GRAPH_F32, TG_SHAPE(2, 3));
    trace_begin(NULL);
    trace_input(x, "x");
    trace_dynamic(x, 0, "batch");
    trace_output(eager_add(eager_relu(x), x), "y");
    graph *g = trace_freeze();
    char err[256] = "";
    replay_plan *p = g ? replay_compile(g, NULL, err, sizeof err) : NULL;
    replay_session *s = p ? replay_session_new(p, NULL, 0) : NULL;
    graph_type t = *eager_type(x);
    float y[6] = {0}, y1[3] = {0};
    replay_tensor in = {.name = "x", .type = t, .input = xs};
    replay_tensor out = {.name = "y", .data = y, .size = sizeof y};
    int bad = !s || replay_run(s, &in, 1, &out, 1) != TG_OK;
    eager_tensor *x1 = eager_from_data(GRAPH_F32, TG_SHAPE(1, 3), xs + 3);
    replay_tensor in1 = {.name = "x", .type = *eager_type(x1), .input = eager_peek(x1)};
    replay_tensor out1 = {.name = "y", .data = y1, .size = sizeof y1};
    bad |= !s || replay_run(s, &in1, 1, &out1, 1) != TG_OK || out1.type.dim[0] != 1;
    for (int i = 0; i < 6; i++) {
        float want = (xs[i] > 0 ? xs[i] : 0) + xs[i];
        bad |= y[i] != want || (i >= 3 && y1[i - 3] != want);
    }
    if (bad)
        fprintf(stderr, "const input: %s%s\n", err, s ? replay_session_error(s) : "");
    replay_session_free(s);
    replay_plan_free(p);
    graph_free(g);
    eager_pool_pop();
    return bad;
}
C
cp "$tmp/const_input.c" "$tmp/const_input.cpp"
ci_built=""
for cc in gcc:c11 clang:c11 g++:c++20 clang++:c++20; do
    comp=${cc%%:*} std=${cc#*:} prog=$tmp/const_input.c
    command -v "$comp" > /dev/null || continue
    [ "$std" = c++20 ] && prog=$tmp/const_input.cpp
    $comp -std=$std $strict -Wcast-qual $(cxx_quirks $comp) -I"$inc" "$prog" -L"$prefix/lib" \
        -ltracegraph -o "$tmp/const_input_$comp" 2> "$tmp/const_input.log" ||
        { echo "install check: const input data ($comp -std=$std $strict -Wcast-qual):" >&2
          cat "$tmp/const_input.log" >&2; exit 1; }
    LD_LIBRARY_PATH="$prefix/lib" "$tmp/const_input_$comp" ||
        { echo "install check: const input data gave the wrong output ($comp)" >&2; exit 1; }
    ci_built="$ci_built $comp"
done
echo "install check: const input data, no cast ($strict -Wcast-qual; C11 and C++20 by$ci_built) OK"

# The README's examples, as a newcomer would build them: the C block
# between <!-- example:begin --> and <!-- example:end --> (trace, save,
# load, replay) and the one between <!-- example-train:begin --> and
# <!-- example-train:end --> (a training loop: eager steps, one traced,
# the rest replayed), each compiled with the README's pkg-config command
# (-Wl,-rpath to the prefix's libdir, so it runs without LD_LIBRARY_PATH:
# the run-time path note) and run in a directory of its own.  Each checks
# its own result (replay against eager; the loss falling under replay); a
# non-zero exit, or no file written (model.tgraph; train.tgstate), fails.
readme=$src/README.md
# readme_example MARKER FILE: builds and runs the block between MARKER's
# markers, which must write FILE.
readme_example() {
    local marker=$1 product=$2 dir=$tmp/readme-$1 cc comp std d lang built=""
    mkdir -p "$dir"
    awk -v b="<!-- $marker:begin -->" -v e="<!-- $marker:end -->" '
         index($0, b) { on = 1; next }
         index($0, e) { on = 0 }
         on && !/^```/' "$readme" > "$dir/example.c"
    if ! grep -q 'int main' "$dir/example.c"; then
        echo "install check: no C example between <!-- $marker:begin --> and" \
             "<!-- $marker:end --> in $readme" >&2
        exit 1
    fi
    # The same text as C (the README's command) and as C++20, by each
    # compiler there is; each build runs in a directory of its own.
    for cc in gcc:c11 clang:c11 g++:c++20 clang++:c++20; do
        comp=${cc%%:*} std=${cc#*:}
        command -v "$comp" > /dev/null || continue
        d=$dir/$comp
        mkdir -p "$d"
        lang=c
        [ "$std" = c++20 ] && lang=c++
        if ! (cd "$d" && export PKG_CONFIG_PATH="$libdir" &&
              $comp -std=$std -x $lang $strict $(cxx_quirks $comp) ../example.c -x none -o example \
                  $(pkg-config --cflags --libs tracegraph) \
                  -Wl,-rpath,"$(pkg-config --variable=libdir tracegraph)") 2> "$tmp/readme.log"; then
            echo "install check: the README's example (README.md, between the $marker markers)" \
                 "does not compile against the installed prefix ($comp -std=$std $strict):" >&2
            cat "$tmp/readme.log" >&2
            exit 1
        fi
        if ! (cd "$d" && env -u LD_LIBRARY_PATH ./example > out.txt) || [ ! -s "$d/$product" ]; then
            cat "$d/out.txt" >&2
            echo "install check: the README's example ($marker) failed when run ($comp -std=$std," \
                 "above)" >&2
            exit 1
        fi
        built="$built $comp"
    done
    tail -n1 "$dir/gcc/out.txt"
    echo "install check: the README's example ($marker) builds ($strict; C11 and C++20" \
         "by$built) and runs OK"
}
readme_example example model.tgraph
readme_example example-train train.tgstate
for comp in "${!quirks[@]}"; do
    echo "install check: (C++ by $comp with ${quirks[$comp]}: it warns about the fields" \
         "a designated initializer leaves out, GCC bug 96868)"
done
