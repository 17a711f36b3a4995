#!/usr/bin/env bash
# test_install.sh BUILD_DIR - installs tracegraph into a temporary prefix and
# builds consumers against it: a CMake project using find_package (a C and a
# C++ program) and plain compiles using pkg-config (C with cc, C++ with c++:
# the public headers declare everything extern "C").  Each must build, run
# and print the right number.
set -euo pipefail
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"

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
    float in[4] = {1, 2, 3, 4}, out = -1;
    replay_tensor ri = {"x", *eager_type(x), in, nullptr};
    replay_tensor ro = {"y", *eager_type(y), &out, nullptr};
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
CM
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/cmake.log"
cmake --build "$tmp/consumer/build" > "$tmp/build.log"
LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer/build/consumer"
LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer/build/consumer_cxx"
echo "install check: find_package(tracegraph) consumers (C, C++) OK"

libdir=$(dirname "$(find "$prefix" -name tracegraph.pc | head -n1)")
PKG_CONFIG_PATH="$libdir" cc -std=c11 "$tmp/consumer/main.c" -o "$tmp/consumer/pc" \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph)
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/pc"
PKG_CONFIG_PATH="$libdir" c++ -std=c++17 "$tmp/consumer/main.cpp" -o "$tmp/consumer/pcxx" \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph)
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/pcxx"
echo "install check: pkg-config consumers (C, C++) OK"
