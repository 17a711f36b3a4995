#!/bin/bash
# callcycles.sh [-q] [-v] DIR[,DIR...] OBJECT... - the leaf rule of
# docs/ARCHITECTURE.md ("Leaves"): among the source files of the folders DIR
# (each a path relative to the source root, e.g. replay/opencl), no file
# calls a function defined in a file that calls back into it, directly or
# through others: the file-level call graph has no cycle.
#
# The graph comes from the build's object files, no parser: a file's
# undefined symbols (nm -u) resolved to the object that defines them
# (nm --defined-only -g), an edge A -> B for each.  A global function or
# table used across files is an edge; a static one, a macro or an inline
# function of a header is not (it belongs to the file that compiles it).
# An object stands for its source by its path below CMake's "<target>.dir/"
# (CMakeFiles/tg_obj.dir/replay/opencl/prep.c.o is replay/opencl/prep.c);
# objects outside the folders are ignored, and so are edges that leave them.
#
# Exit status 0 when the folders' graph has no cycle; 1 with each cycle on
# stderr, one edge a line with the symbols that make it:
#   call cycle among 2 files:
#     replay/opencl/prep.c -> replay/opencl/ops_nn.c via ocl_register_nn
#     replay/opencl/ops_nn.c -> replay/opencl/prep.c via ocl_kernel, ocl_set_args
# then every other edge inside the same strongly connected set ("also:"),
# since breaking the one cycle shown may leave another.  2 on bad usage or
# a missing object.  -q: no summary line on success; -v: every edge of the
# graph on stdout first ("A -> B via f, g"), cycle or not.
# OBJECT may also be @LIST, a file of object paths one a line
# (CMake's $<TARGET_OBJECTS:...> written out).
set -u
quiet=0
verbose=0
while [ "${1:-}" = "-q" ] || [ "${1:-}" = "-v" ]; do
    [ "$1" = "-q" ] && quiet=1
    [ "$1" = "-v" ] && verbose=1
    shift
done
if [ $# -lt 2 ]; then
    echo "usage: callcycles.sh [-q] [-v] DIR[,DIR...] OBJECT|@LIST..." >&2
    exit 2
fi
dirs=$1
shift
command -v nm >/dev/null || { echo "callcycles.sh: no nm (binutils)" >&2; exit 2; }

objs=()
for a in "$@"; do
    if [ "${a#@}" != "$a" ]; then
        [ -r "${a#@}" ] || { echo "callcycles.sh: cannot read object list ${a#@}" >&2; exit 2; }
        while read -r o; do [ -n "$o" ] && objs+=("$o"); done <"${a#@}"
    else
        objs+=("$a")
    fi
done

# One line per symbol: "D <source> <symbol>" (defined, global) or
# "U <source> <symbol>" (undefined), for the objects inside the folders.
table=$(mktemp)
trap 'rm -f "$table"' EXIT
n=0
for o in "${objs[@]}"; do
    [ -r "$o" ] || { echo "callcycles.sh: no object $o" >&2; exit 2; }
    src=${o#*CMakeFiles/*.dir/}
    [ "$src" != "$o" ] || src=${o#*.dir/}
    [ "$src" != "$o" ] || src=$(basename "$o")
    src=${src%.o}
    inside=0
    IFS=, read -ra ds <<<"$dirs"
    for d in "${ds[@]}"; do
        d=${d%/}
        case $src in "$d"/*) rest=${src#"$d"/}; [ "${rest#*/}" = "$rest" ] && inside=1 ;; esac
    done
    [ $inside = 1 ] || continue
    n=$((n + 1))
    nm --defined-only -g "$o" | awk -v s="$src" 'NF >= 3 { print "D", s, $3 }' >>"$table" || exit 2
    nm -u "$o" | awk -v s="$src" '{ print "U", s, $NF }' >>"$table" || exit 2
done
if [ $n -eq 0 ]; then
    echo "callcycles.sh: no object of $dirs among the ${#objs[@]} given" >&2
    exit 2
fi

awk -v quiet=$quiet -v verbose=$verbose -v nobj=$n -v dirs="$dirs" '
$1 == "D" { def[$3] = $2; files[$2] = 1; next }
$1 == "U" { use[++nu] = $2 SUBSEP $3; files[$2] = 1 }
END {
    # edges, with their symbols in the order nm lists them
    for (i = 1; i <= nu; i++) {
        split(use[i], p, SUBSEP)
        a = p[1]; s = p[2]
        if (!(s in def)) continue
        b = def[s]
        if (a == b) continue
        if ((a, b) in via) via[a, b] = via[a, b] ", " s
        else { via[a, b] = s; nedge++ }
    }
    # files in a fixed order, then reachability (Floyd-Warshall: tens of files)
    nf = 0
    for (f in files) name[++nf] = f
    for (i = 1; i <= nf; i++)
        for (j = i + 1; j <= nf; j++)
            if (name[j] < name[i]) { t = name[i]; name[i] = name[j]; name[j] = t }
    for (i = 1; i <= nf; i++)
        for (j = 1; j <= nf; j++)
            if ((name[i], name[j]) in via) reach[i, j] = 1
    for (k = 1; k <= nf; k++)
        for (i = 1; i <= nf; i++)
            if ((i, k) in reach)
                for (j = 1; j <= nf; j++)
                    if ((k, j) in reach) reach[i, j] = 1
    if (verbose)
        for (i = 1; i <= nf; i++)
            for (j = 1; j <= nf; j++)
                if ((name[i], name[j]) in via)
                    printf "%s -> %s via %s\n", name[i], name[j], via[name[i], name[j]]
    ncyc = 0
    for (i = 1; i <= nf; i++) {
        if (!((i, i) in reach) || (i in done)) continue
        # the strongly connected set of name[i]: i reaches j and j reaches i
        m = 0
        for (j = 1; j <= nf; j++)
            if (((i, j) in reach) && ((j, i) in reach)) { member[++m] = j; done[j] = 1; in_scc[j] = i }
        ncyc++
        # a shortest cycle through name[i] (breadth-first inside the set)
        delete prev; delete seen
        qh = 1; qt = 0; found = 0
        for (j = 1; j <= nf; j++)
            if (in_scc[j] == i && ((name[i], name[j]) in via)) { q[++qt] = j; seen[j] = 1; prev[j] = i }
        while (qh <= qt && !found) {
            u = q[qh++]
            if (u == i) { found = 1; break }
            for (j = 1; j <= nf; j++)
                if (in_scc[j] == i && !(j in seen) && ((name[u], name[j]) in via)) {
                    seen[j] = 1; prev[j] = u; q[++qt] = j
                }
        }
        # walk back from i to i
        len = 0; v = i
        do { path[++len] = v; v = prev[v] } while (v != i)
        printf "call cycle among %d files:\n", m > "/dev/stderr"
        delete onpath
        for (k = len; k >= 1; k--) {
            to = path[k]; from = (k == len) ? i : path[k + 1]
            printf "  %s -> %s via %s\n", name[from], name[to], via[name[from], name[to]] > "/dev/stderr"
            onpath[from, to] = 1
        }
        for (a = 1; a <= m; a++)
            for (b = 1; b <= m; b++) {
                x = member[a]; y = member[b]
                if (x != y && ((name[x], name[y]) in via) && !((x, y) in onpath))
                    printf "  also: %s -> %s via %s\n", name[x], name[y], via[name[x], name[y]] > "/dev/stderr"
            }
    }
    if (ncyc) {
        printf "callcycles: %d call cycle(s) among the files of %s (the leaf rule: docs/ARCHITECTURE.md, \"Leaves\")\n", ncyc, dirs > "/dev/stderr"
        exit 1
    }
    if (!quiet) printf "callcycles: %s: %d files, %d cross-file edges, no cycle\n", dirs, nobj, nedge
}' "$table"
