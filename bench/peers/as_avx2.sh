#!/bin/sh
# as_avx2.sh - run a command as on an AVX2-only x86-64 CPU (issue 30), on a
# machine that has AVX-512: every process of the command, ONNX Runtime's and
# PyTorch's included, sees CPUID without AVX-512, AMX and AVX-VNNI, so that
# each library picks the kernels it would pick on a Zen 3 or a Haswell..Alder
# Lake core (bench/peers/cpuid_avx2.c says how).  TG_CPU=avx2 and
# ONEDNN_MAX_CPU_ISA=AVX2 are set as well, for what reads them.
#
#   bench/peers/as_avx2.sh CMD [ARGS...]
#   e.g. bench/peers/as_avx2.sh build/tracegraph version
#        make bench-real-avx2      (the real models against ONNX Runtime)
#
# It changes the code paths, not the core: the timings are those of each
# program's AVX2 path on this core.  Fails (exit 3) where the kernel or the
# CPU offers no CPUID faulting: nothing would be masked.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/bench/peers/cpuid_avx2.c
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tracegraph
so=$cache/cpuid_avx2-$(cksum <"$src" | cut -d' ' -f1).so
[ $# -ge 1 ] || { echo "usage: bench/peers/as_avx2.sh CMD [ARGS...]" >&2; exit 2; }
case $(uname -m) in
x86_64) ;;
*) echo "as_avx2: x86-64 only (this is $(uname -m))" >&2; exit 3 ;;
esac
if [ ! -f "$so" ]; then
    mkdir -p "$cache" &&
        ${CC:-cc} -O2 -Wall -shared -fPIC -o "$so.tmp" "$src" -ldl &&
        mv "$so.tmp" "$so" || { echo "as_avx2: could not build $src" >&2; exit 3; }
fi
# the check: a masked process must not see AVX-512F (CPUID.7.0:EBX bit 16)
probe=$(TG_CPUID_MASK_CHECK=1 LD_AUDIT=$so /bin/true 2>&1)
case $probe in
*"AVX-512 hidden"*) ;;
*) echo "as_avx2: the CPUID mask does not hold here: ${probe:-no answer from $so}" >&2; exit 3 ;;
esac
# LD_AUDIT loads it before the program's libraries (their CPU detection at
# load time sees the mask); LD_PRELOAD puts its sigaction() in front of the
# program's, so that a SIGSEGV handler the program installs is chained.
LD_AUDIT=$so${LD_AUDIT:+:$LD_AUDIT}
LD_PRELOAD=$so${LD_PRELOAD:+:$LD_PRELOAD}
TG_CPU=avx2
ONEDNN_MAX_CPU_ISA=AVX2
export LD_AUDIT LD_PRELOAD TG_CPU ONEDNN_MAX_CPU_ISA
exec "$@"
