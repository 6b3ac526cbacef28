#!/bin/sh
# missratio.sh - bench/missratio's tools on a tiny trace (the bench itself,
# bench/missratio/run.sh, is never run by make check): mr-gen writes the
# same bytes for the same seed and other bytes for another; replayed
# read-through into an mdcached large enough for all of it, every distinct
# object misses exactly once and is then held, key + value bytes as the
# trace's header counts them.  Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
B=${MDC_BUILDDIR:-.}/bench/missratio
for p in mr-gen mr-replay; do
    [ -x "$B/$p" ] || { echo "FAIL: $B/$p not built"; exit 1; }
done
info() { "$B/mr-gen" --info "$1" | sed -n "s/^$2=//p"; }

"$B/mr-gen" -o "$RC_TMP/a" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 7
check "mr-gen ran" 0 $?
"$B/mr-gen" -o "$RC_TMP/b" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 7
if cmp -s "$RC_TMP/a" "$RC_TMP/b"; then ok "same seed, same trace"
else fail "same seed, different traces"; fi
"$B/mr-gen" -o "$RC_TMP/c" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 8
if cmp -s "$RC_TMP/a" "$RC_TMP/c"; then fail "another seed, the same trace"
else ok "another seed, another trace"; fi
check "96-byte header + 8 bytes a request" $((96 + 8 * 20000)) "$(wc -c <"$RC_TMP/a")"
"$B/mr-gen" -o "$RC_TMP/d" -n 10 -a x 2>/dev/null
check "a bad alpha is refused" 64 $?

start_mdc D
distinct=$(info "$RC_TMP/a" distinct)
ws=$(info "$RC_TMP/a" working_set_bytes)
for proto_b in 1 64; do
    r=$("$B/mr-replay" -t "$RC_TMP/a" -p "$D_PORT" -w 0 -b "$proto_b" -x)
    check "mr-replay -b $proto_b ran" 0 $?
    f() { echo "$r" | sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p"; }
    check "-b $proto_b: requests" 20000 "$(f requests)"
    if [ "$proto_b" = 1 ]; then
        check "every distinct object misses once" "$distinct" "$(f misses)"
    else
        check "the second replay hits everything" 0 "$(f misses)"
    fi
    check "-b $proto_b: all of it held" "$distinct" "$(f held_records)"
    check "-b $proto_b: key + value bytes held" "$ws" "$(f held_bytes)"
done
rc_finish
