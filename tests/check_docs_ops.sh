#!/bin/bash
# check_docs_ops.sh TRACEGRAPH [--write] - docs/ONNX.md's table of the ONNX
# ops read is `tracegraph ops --onnx --markdown`, the importer's own table:
# fails (showing the diff) when they disagree; --write puts the tool's
# table into the page.
set -euo pipefail
tool=$1
doc=$(dirname "$0")/../docs/ONNX.md
begin='<!-- ops --onnx --markdown: begin -->'
end='<!-- ops --onnx --markdown: end -->'
want=$(mktemp)
page=$(mktemp)
trap 'rm -f "$want" "$page"' EXIT
"$tool" ops --onnx --markdown > "$want"
grep -qxF "$begin" "$doc" && grep -qxF "$end" "$doc" || {
    echo "check_docs_ops: $doc lacks the lines '$begin' / '$end'" >&2
    exit 1
}
if [ "${2:-}" = --write ]; then
    awk -v b="$begin" -v e="$end" -v f="$want" '
        $0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
        $0 == e { skip = 0 }
        !skip' "$doc" > "$page"
    cp "$page" "$doc"
    echo "check_docs_ops: wrote the table into $doc"
    exit 0
fi
awk -v b="$begin" -v e="$end" '$0 == e { on = 0 } on; $0 == b { on = 1 }' "$doc" > "$page"
if ! cmp -s "$want" "$page"; then
    echo "check_docs_ops: docs/ONNX.md's op table differs from the importer's table" >&2
    echo "(run: tests/check_docs_ops.sh build/tracegraph --write)" >&2
    diff -u "$page" "$want" | head -40 >&2
    exit 1
fi
echo "check_docs_ops: docs/ONNX.md lists the $(($(wc -l < "$want") - 2)) ONNX ops of the importer's table"
