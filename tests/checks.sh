# checks.sh - the helpers of the shell tests (test_cli.sh, test_bench_tools.sh),
# sourced by them: each runs in a fresh temporary directory, counts checks,
# scans every command's stderr for sanitizer reports, and ends with
# checks_done ("N passed, M failed"; non-zero status on any failure).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0
fail=0

good() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL (line ${BASH_LINENO[1]}): $*"
}

# expect RC CMD...: runs CMD (stdout to out, stderr to err), checks its exit code.
expect() {
    local want=$1 rc
    shift
    "$@" >out 2>err
    rc=$?
    if grep -qE "Sanitizer|runtime error:" err; then
        bad "sanitizer report from: $*"
        sed 's/^/  | /' err | head -40
    elif [ "$rc" -eq "$want" ]; then
        good
    else
        bad "exit $rc (want $want): $*"
        sed 's/^/  | /' err out | head -20
    fi
}
# has FILE TEXT: FILE contains TEXT (fixed string).
has() {
    if grep -qF -- "$2" "$1"; then good; else
        bad "$1 lacks \"$2\""
        sed 's/^/  | /' "$1" | head -20
    fi
}
lacks() {
    if grep -qF -- "$2" "$1"; then bad "$1 has \"$2\""; else good; fi
}
same() {
    if cmp -s "$1" "$2"; then good; else bad "$1 differs from $2"; fi
}

# checks_done: the summary line; the status of the script.
checks_done() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
