#!/bin/sh
# rc_libmemcached.sh - Debian's libmemcached against mdcached over the
# memcached text protocol: its command-line tools (libmemcached-tools:
# memccp, memccat, memcexist, memctouch, memcrm, memcflush, memcstat,
# memcping) with their outputs compared, then tests/realclients/lmc_ops, a
# C program on the library itself (set/add/replace/append/prepend, mget,
# gets+cas and a cas mismatch, incr/decr, delete, exist, touch, noreply,
# stats, version, verbosity, flush_all).  Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/realclients/common.sh"
need memccp memccat memcexist memctouch memcrm memcflush memcstat memcping

start_mdc D
S="--servers=127.0.0.1:$D_PORT"
echo "mdcached pid $D_PID on 127.0.0.1:$D_PORT"

# files to store: key = file name
in="$RC_TMP/in"
out="$RC_TMP/out"
mkdir -p "$in" "$out"
printf 'hello, world\n' >"$in/rc.text"
printf 'no newline' >"$in/rc.nonl"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 64 + b"\r\nEND\r\n")' >"$in/rc.binary"
printf 'short' >"$in/rc.touch"

(cd "$in" && memccp "$S" --set --flag=17 rc.text rc.nonl rc.binary rc.touch)
check "memccp --set 4 files" 0 $?

# memccat --file=PATH writes the value to PATH byte for byte
for k in rc.text rc.nonl rc.binary; do
    rm -f "$out/$k"
    memccat "$S" --file="$out/$k" "$k"
    r=$?
    if [ $r -eq 0 ] && cmp -s "$in/$k" "$out/$k"; then ok "memccat $k byte for byte"
    else fail "memccat $k (exit $r) differs from what memccp stored"; fi
done
got=$(memccat "$S" --flags rc.text)
check "memccat --flags rc.text" "$(printf '17\nhello, world\n')" "$got"
got=$(memccat "$S" rc.nonl rc.text)
check "memccat two keys" "$(printf 'no newline\nhello, world\n')" "$got"
memccat "$S" rc.missing >/dev/null 2>&1
check "memccat missing key exits 1" 1 $?

# add / replace semantics
printf 'other' >"$in/rc.new"
(cd "$in" && memccp "$S" --add rc.text) 2>/dev/null
check "memccp --add existing key refused" 1 $?
(cd "$in" && memccp "$S" --replace rc.new) 2>/dev/null
check "memccp --replace missing key refused" 1 $?
(cd "$in" && memccp "$S" --add rc.new)
check "memccp --add new key" 0 $?
check "memccat rc.new" other "$(memccat "$S" rc.new)"

memcexist "$S" rc.text
check "memcexist rc.text" 0 $?
memcexist "$S" rc.missing
check "memcexist rc.missing" 1 $?
memccat "$S" rc.missing >/dev/null 2>&1
check "memcexist did not create rc.missing" 1 $?

# touch: rc.touch to 1 s, then it must vanish; touching a missing key fails
memctouch "$S" --expire=1 rc.touch
check "memctouch --expire=1 rc.touch" 0 $?
memctouch "$S" --expire=10 rc.missing 2>/dev/null
check "memctouch missing key exits 1" 1 $?
i=0
while memccat "$S" rc.touch >/dev/null 2>&1 && [ $i -lt 300 ]; do # 30 s: a hang
    sleep 0.1
    i=$((i + 1))
done
memccat "$S" rc.touch >/dev/null 2>&1
check "rc.touch expired after memctouch" 1 $?
check "rc.text did not expire" "hello, world" "$(memccat "$S" rc.text)"

memcrm "$S" rc.nonl
check "memcrm rc.nonl" 0 $?
memccat "$S" rc.nonl >/dev/null 2>&1
check "rc.nonl gone" 1 $?
memcrm "$S" rc.nonl 2>/dev/null
check "memcrm missing key exits 1" 1 $?

memcping "$S" >"$RC_TMP/ping" 2>&1
r=$?
check "memcping" 0 $r
[ $r -eq 0 ] || cat "$RC_TMP/ping"
memcstat "$S" >"$RC_TMP/stat" 2>&1
r=$?
check "memcstat" 0 $r
if grep -q 'pid: *'"$D_PID" "$RC_TMP/stat"; then ok "memcstat shows the daemon's pid"
else fail "memcstat output lacks 'pid: $D_PID':"; head -5 "$RC_TMP/stat"; fi

memcflush "$S"
check "memcflush" 0 $?
memccat "$S" rc.text >/dev/null 2>&1
check "rc.text gone after memcflush" 1 $?
memccat "$S" rc.binary >/dev/null 2>&1
check "rc.binary gone after memcflush" 1 $?

# the library itself (built by make check when libmemcached-dev is there)
LMC=${MDC_BUILDDIR:-.}/tests/realclients/lmc_ops
if [ -x "$LMC" ]; then
    "$LMC" "127.0.0.1:$D_PORT"
    check "lmc_ops (libmemcached C API)" 0 $?
elif [ "${CI:-}" = true ]; then
    fail "$LMC not built (configure found no libmemcached-dev)"
else
    echo "note: $LMC not built (no libmemcached-dev): C API checks skipped"
fi

alive "$D_PID"
check "daemon still running" 0 $?
rc_finish
