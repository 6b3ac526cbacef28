#!/bin/sh
# mdc_load_rate.sh - bench/mdc-load's open loop (--rate): at a fixed
# offered rate far below what any server sustains, the measured window
# holds rate x duration requests (the schedule, not the replies, sets the
# pace), all answered without error; the closed loop at the same settings is
# not held to that rate.  Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
LOAD=${MDC_BUILDDIR:-.}/bench/mdc-load
[ -x "$LOAD" ] || { echo "FAIL: $LOAD not built"; exit 1; }

start_mdc D
A=127.0.0.1:$D_PORT
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2" | head -1; }

"$LOAD" -P text -s "$A" -c 4 -k 1000 -f -R 2000 -D 1 -w 0.2 -q -j "$RC_TMP/open.json"
check "mdc-load --rate 2000 ran" 0 $?
n=$(field requests "$RC_TMP/open.json")
e=$(field errors "$RC_TMP/open.json")
r=$(field rate "$RC_TMP/open.json")
check "open loop: no errors" 0 "$e"
check "open loop: offered rate in the report" 2000 "$r"
if [ "${n:-0}" -ge 1700 ] && [ "${n:-0}" -le 2300 ]; then
    ok "open loop: $n requests in 1 s at 2000/s"
else
    fail "open loop: $n requests in 1 s at 2000/s (expected 1700-2300)"
fi

"$LOAD" -P text -s "$A" -c 4 -k 1000 -D 1 -w 0.2 -q -j "$RC_TMP/closed.json"
n=$(field requests "$RC_TMP/closed.json")
if [ "${n:-0}" -gt 2300 ]; then
    ok "closed loop: $n requests in 1 s, not held to a rate"
else
    fail "closed loop: only $n requests in 1 s"
fi
rc_finish
