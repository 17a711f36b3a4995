#!/usr/bin/env bash
# deps.sh - installs the Debian packages tracegraph needs, if any is missing.
# As root it runs apt-get itself; otherwise it prints the exact command and
# fails, so `make` never half-builds.  Usage: scripts/deps.sh [extra-pkg...]
set -euo pipefail

# Why each is here is in docs/GUIDE.md ("Dependencies").  Packages only a
# target needs come as arguments: `make demo` and `make bench` add the
# Fashion-MNIST data set (dataset-fashion-mnist), `make bench` gnuplot.
PKGS=(build-essential cmake pkg-config libzstd-dev zlib1g-dev libunwind-dev uthash-dev
      libdnnl-dev clang libclang-rt-14-dev
      ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd libclblast-dev
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata)
PKGS+=("$@")

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tracegraph: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "Run as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
