#!/bin/bash
# test_portable.sh OBJLIST KERNEL_OBJ... - the portable build's promise
# (eager/isa.h): the library's own objects (OBJLIST: one path a line, every
# object of tg_obj) hold no instruction beyond the x86-64 baseline, i.e. no
# VEX/EVEX-encoded instruction and no ymm/zmm/mask register, while each
# kernel-set object (tg_kern_avx2.o, tg_kern_avx512.o) does use its level
# and exports nothing but its table.
set -u
list=$(realpath "$1")
shift
kobjs=()
for k in "$@"; do kobjs+=("$(realpath "$k")"); done
. "$(dirname "$0")/checks.sh"
command -v objdump >/dev/null || { echo "SKIP: no objdump"; exit 77; }
n=0
while read -r obj; do
    [ -n "$obj" ] || continue
    n=$((n + 1))
    hits=$(objdump -d --no-show-raw-insn "$obj" | awk '$2 ~ /^v[a-z]/ || /%[yz]mm|%k[0-7]/' | head -3)
    if [ -n "$hits" ]; then
        bad "$(basename "$obj") has instructions above the x86-64 baseline:"
        echo "$hits" | sed 's/^/  | /'
    else
        good
    fi
done <"$list"
[ "$n" -gt 50 ] && good || bad "only $n objects listed in $list"
for kobj in "${kobjs[@]}"; do
    case $kobj in
    *avx512*) reg='%zmm' ;;
    *avx2*) reg='%ymm' ;;
    *) bad "unknown kernel object $kobj"; continue ;;
    esac
    if objdump -d --no-show-raw-insn "$kobj" | grep -q "$reg"; then good; else
        bad "$(basename "$kobj") never uses $reg"
    fi
    globals=$(nm --defined-only -g "$kobj" | awk '{print $3}' | tr '\n' ' ')
    level=$(basename "$kobj" .o)
    level=${level#tg_kern_}
    if [ "$globals" = "eager_isa_$level " ]; then good; else
        bad "$(basename "$kobj") defines global symbols other than eager_isa_$level: $globals"
    fi
done
checks_done
