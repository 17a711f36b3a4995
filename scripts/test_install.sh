#!/usr/bin/env bash
# test_install.sh BUILD_DIR - installs tracegraph into a temporary prefix and
# builds two consumers against it: a CMake project using find_package and a
# plain compile using pkg-config.  Both must build, run and print the right
# number.
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
cat > "$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(tracegraph REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE tracegraph::tracegraph)
CM
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/cmake.log"
cmake --build "$tmp/consumer/build" > "$tmp/build.log"
LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer/build/consumer"
echo "install check: find_package(tracegraph) consumer OK"

libdir=$(dirname "$(find "$prefix" -name tracegraph.pc | head -n1)")
PKG_CONFIG_PATH="$libdir" cc -std=c11 "$tmp/consumer/main.c" -o "$tmp/consumer/pc" \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs tracegraph)
LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/consumer/pc"
echo "install check: pkg-config consumer OK"
