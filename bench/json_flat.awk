# json_flat.awk - flattens a bench/suite.c result file into "key<TAB>value"
# lines, one per scalar, for compare.sh, table.sh and plot.sh (plain POSIX
# awk: no jq or python needed).
#
# Keys are dotted paths, except that a record is named by its workload and
# thread count and a level by its number:
#   machine.cpu                      AMD ...
#   mlp/t1/eager_ms.median           0.512
#   mlp/t1/O2/replay_ms.median       0.401
#   mlp/t1/O2/arena_bytes.planned    1048576
# Strings are printed without quotes (escapes reduced to the escaped
# character); null stays null.  Records come out in file order.
#
# A small recursive-descent reader: enough for any JSON without \u escapes
# that matter (suite writes none but control characters).

{ text = text $0 "\n" }

function skip_ws() {
    while (pos <= len && index(" \t\r\n", substr(text, pos, 1)))
        pos++
}

function read_string(    out, c) {
    pos++ # the opening quote
    out = ""
    while (pos <= len) {
        c = substr(text, pos, 1)
        if (c == "\\") {
            c = substr(text, pos + 1, 1)
            if (c == "u") { out = out "?"; pos += 6; continue }
            out = out (c == "n" ? " " : c == "t" ? " " : c)
            pos += 2
            continue
        }
        pos++
        if (c == "\"")
            return out
        out = out c
    }
    return out
}

function emit(path, v) {
    keys[nkeys++] = path
    val[path] = v
}

function read_value(path,    c, k, idx, start) {
    skip_ws()
    c = substr(text, pos, 1)
    if (c == "{" || c == "[") {
        pos++
        skip_ws()
        if (substr(text, pos, 1) == (c == "{" ? "}" : "]")) { pos++; return }
        for (idx = 0; pos <= len; idx++) {
            skip_ws()
            if (c == "{") {
                k = read_string()
                skip_ws()
                pos++ # the colon
            } else {
                k = idx
            }
            read_value(path == "" ? k : path "." k)
            skip_ws()
            if (substr(text, pos++, 1) != ",")
                return
        }
        return
    }
    if (c == "\"") {
        emit(path, read_string())
        return
    }
    start = pos
    while (pos <= len && !index(",}] \t\r\n", substr(text, pos, 1)))
        pos++
    emit(path, substr(text, start, pos - start))
}

# records.N.levels.M.rest -> <workload>/t<threads>/O<level>/rest
function rename(path,    p, n, m, rest) {
    if (path !~ /^records\.[0-9]+\./)
        return path
    p = substr(path, 9)
    n = substr(p, 1, index(p, ".") - 1)
    rest = substr(p, index(p, ".") + 1)
    p = val["records." n ".workload"] "/t" val["records." n ".threads"]
    if (rest ~ /^levels\.[0-9]+\./) {
        rest = substr(rest, 8)
        m = substr(rest, 1, index(rest, ".") - 1)
        rest = substr(rest, index(rest, ".") + 1)
        return p "/O" val["records." n ".levels." m ".level"] "/" rest
    }
    return p "/" rest
}

END {
    len = length(text)
    pos = 1
    read_value("")
    for (i = 0; i < nkeys; i++)
        printf "%s\t%s\n", rename(keys[i]), val[keys[i]]
}
