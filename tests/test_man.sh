#!/bin/sh
# tests/test_man.sh - the manual pages stay true:
#  - mdcached(8) documents exactly the options of `mdcached -h` (the option
#    table), with the same short flag, argument name and default;
#  - mdcached.conf(5) names every option a config file may set;
#  - the libmdcached(3) group pages are what tools/gen-man3.py writes from
#    client-c/mdcached.h today (so every function has a page);
#  - the example of libmdcached(3) compiles against the built library and
#    works against a daemon;
#  - `man --warnings` reports nothing on any page.
set -u
S=${srcdir:-.}
B=${MDC_BUILDDIR:-.}
D="$B/server/mdcached"
if ! command -v man >/dev/null 2>&1 || ! command -v groff >/dev/null 2>&1; then
    echo "SKIP: man or groff not installed"; exit 77
fi
. "$(dirname "$0")/harness.sh"
T=$H_TMP
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
render() { MANWIDTH=200 man -l "$1" 2>/dev/null | col -b; }

# --- mdcached(8) against mdcached -h ------------------------------------
# one line per option: "-n, --threads=N default" (default "-" when none)
"$D" -h | sed -n 's/^  \(-., \)\{0,1\} *\(--[^ ]*\) .*(default: \([^)]*\))$/\1\2 \3/p; t; s/^  \(-., \)\{0,1\} *\(--[^ ]*\) .*$/\1\2 -/p' |
    sed 's/ auto = [0-9]*$/ auto/; s/ none$/ -/' | sort >"$T/help"
[ "$(wc -l <"$T/help")" -ge 30 ] || fail "could not read the options of mdcached -h"
render "$S/man/mdcached.8" | awk '
    /^OPTIONS/ { on = 1; next }
    /^[A-Z]/ { on = 0 }
    on && /^       -/ { if (head != "") print head, (dflt == "" ? "-" : dflt);
                        head = $0; sub(/^ +/, "", head); dflt = ""; next }
    on && /Default: / { d = $0; sub(/.*Default: /, "", d); sub(/\.$/, "", d); dflt = d }
    END { if (head != "") print head, (dflt == "" ? "-" : dflt) }' |
    sed 's/ none$/ -/' | sort >"$T/man"
if ! diff -u "$T/help" "$T/man" >"$T/diff"; then
    fail "mdcached(8) OPTIONS differ from mdcached -h (- help, + man):"
    cat "$T/diff"
fi

# --- mdcached.conf(5): every long option but help, version, config ------
render "$S/man/mdcached.conf.5" >"$T/conf"
for name in $(sed -n 's/^.*--\([a-z0-9-]*\).*$/\1/p' "$T/help"); do
    case $name in help | version | config) continue ;; esac
    grep -q -- "\\b$name\\b" "$T/conf" || fail "mdcached.conf(5) does not name '$name'"
done

# --- the group pages are today's output of tools/gen-man3.py -------------
mkdir -p "$T/gen/man" "$T/gen/client-c" "$T/gen/tools"
cp "$S/client-c/mdcached.h" "$T/gen/client-c/"
cp "$S/tools/gen-man3.py" "$T/gen/tools/"
if python3 "$T/gen/tools/gen-man3.py" "$T/gen" >"$T/genout" 2>&1; then
    for f in "$T"/gen/man/*; do
        b=$(basename "$f")
        cmp -s "$f" "$S/man/$b" ||
            fail "man/$b is stale: run python3 tools/gen-man3.py"
    done
else
    fail "tools/gen-man3.py: $(cat "$T/genout")"
fi
# every function declared in the header has a page or a link
for fn in $(sed -n 's/^[a-z].*\b\(mdc_[a-z_0-9]*\)(.*/\1/p' "$S/client-c/mdcached.h" | sort -u); do
    grep -q "^$fn\\.3:" "$S/man/links.txt" || [ -f "$S/man/$fn.3" ] ||
        fail "$fn has no manual page"
done

# --- man --warnings on every page ----------------------------------------
for p in "$S"/man/*.[0-9]; do
    w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
    [ -z "$w" ] || fail "man --warnings $(basename "$p"): $w"
done

# --- the libmdcached(3) example compiles and runs ------------------------
sed -n '/^\.SH EXAMPLES/,/^\.EE/p' "$S/man/libmdcached.3" | sed '1,2d;$d' |
    sed 's/\\en/\\n/g; s/\\-/-/g' >"$T/ex.c"
LIBDIR="$B/client-c/.libs"
# a sanitizer build's library needs its runtime in the program too
SAN=
grep -q '^#define MDC_ASAN 1' "$B/config.h" 2>/dev/null && SAN="-fsanitize=address,undefined"
grep -q '^#define MDC_TSAN 1' "$B/config.h" 2>/dev/null && SAN="-fsanitize=thread"
cc() { command cc $SAN "$@"; }
if cc -I"$S/client-c" -o "$T/ex" "$T/ex.c" -L"$LIBDIR" -lmdcached \
    -Wl,-rpath,"$(cd "$LIBDIR" && pwd)" 2>"$T/cc.err"; then
    # -p auto: the kernel picks the port (no probe another test could race)
    mdc_start D -n 1 -v 0 || fail "mdcached did not start"
    PORT=${D_PORT:-0}
    sed "s/127.0.0.1:11311/127.0.0.1:$PORT/" "$T/ex.c" >"$T/ex2.c"
    cc -I"$S/client-c" -o "$T/ex2" "$T/ex2.c" -L"$LIBDIR" -lmdcached \
        -Wl,-rpath,"$(cd "$LIBDIR" && pwd)"
    "$T/ex2" >"$T/exout" 2>&1
    grep -q "^1 records$" "$T/exout" || fail "libmdcached(3) example: $(cat "$T/exout")"
    mdc_stop D || fail "mdcached: exit $? after SIGTERM"
else
    fail "the libmdcached(3) example does not compile: $(cat "$T/cc.err")"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "PASS: manual pages"
