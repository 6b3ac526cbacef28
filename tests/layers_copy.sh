# tests/layers_copy.sh - sourced by tests/check_layers.sh and
# tests/check_store_levels.sh, the tests of tools/check-layers.sh on a
# copy of the tree with planted breaches:
#   . "$(dirname "$0")/layers_copy.sh"; layers_setup NAME
# sets S (the source tree), B (the build), CHECK (the script), T (a
# temporary directory, removed on exit; NAME in its name), fails and
# fail(); layers_copy copies the tree's C files to $T/src and the build's
# objects to $T/build, where the check is run on them.
layers_setup() {
    S=$(cd "${srcdir:-.}" && pwd)
    B=$(cd "${MDC_BUILDDIR:-.}" && pwd)
    CHECK="$S/tools/check-layers.sh"
    command -v nm >/dev/null 2>&1 ||
        { echo "FAIL: nm (binutils) not installed"; exit 1; }
    T=$(mktemp -d "/tmp/mdc-$1-XXXXXX")
    trap 'rm -rf "$T"' EXIT
    fails=0
}

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

layers_copy() {
    mkdir -p "$T/src" "$T/build"
    (cd "$S" && find protocol server bpf client-c client-php tests bench \
        -type f \( -name '*.c' -o -name '*.h' \)) >"$T/srcs"
    tar -C "$S" -cf - -T "$T/srcs" | tar -C "$T/src" -xf - ||
        { echo "FAIL: cannot copy the sources"; exit 1; }
    (cd "$B" && find protocol server bpf client-c -name '*.o' ! -name '*.bpf.o') \
        >"$T/objs"
    [ -s "$T/objs" ] || { echo "FAIL: no objects under $B"; exit 1; }
    tar -C "$B" -cf - -T "$T/objs" | tar -C "$T/build" -xf - ||
        { echo "FAIL: cannot copy the objects"; exit 1; }
}
