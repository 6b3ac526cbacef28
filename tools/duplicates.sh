#!/bin/sh
# tools/duplicates.sh - count the duplicated blocks of the C sources, the
# figure issue 28 compares before and after: lizard's duplicate extension
# over server/, protocol/, client-c/, client-php/ and bpf/, run from the
# top of the source tree.  Prints lizard's list of duplicate blocks, then
# one last line "duplicate blocks: N".
#     sh tools/duplicates.sh [SRCDIR]
# Needs lizard (pip install lizard, e.g. in a venv): $LIZARD, else lizard
# on the PATH.  Not part of the test suite or CI: the count is a figure to
# watch, not a gate (some repetition, e.g. of a protocol table, is meant).
# The PHP extension's build copy (client-php/ext/, made by an in-tree
# build) is left out, so in-tree and out-of-tree builds count the same.
set -u
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 2
LIZARD=${LIZARD:-lizard}
command -v "$LIZARD" >/dev/null 2>&1 || {
    echo "tools/duplicates.sh: lizard not found (pip install lizard; or set LIZARD)" >&2
    exit 2
}
out=$("$LIZARD" -Eduplicate -x 'client-php/ext/*' \
    server protocol client-c client-php bpf) || {
    # lizard exits non-zero when a function passes its complexity warnings:
    # only the duplicate list matters here, so go on if it printed one
    case $out in *Duplicates*) ;; *) echo "$out" >&2; exit 2 ;; esac
}
printf '%s\n' "$out" | sed -n '/^Duplicates$/,$p'
printf 'duplicate blocks: %s\n' \
    "$(printf '%s\n' "$out" | grep -c '^Duplicate block:')"
