#!/bin/sh
# mdc_load_rate.sh - bench/mdc-load's open loop (--rate): the schedule, not
# the replies, sets the pace -- rate x duration requests fall due within the
# measured window, whatever the server's speed -- and they are answered
# without error; the closed loop at the same settings is not held to a rate
# (and has no schedule).  Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
LOAD=${MDC_BUILDDIR:-.}/bench/mdc-load
[ -x "$LOAD" ] || { echo "FAIL: $LOAD not built"; exit 1; }

# the generator keeps its buffers to the end (exit frees them): no leak
# report for it from the sanitizer builds (the daemon keeps its checks)
load() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$LOAD" "$@"; }
start_mdc D
A=127.0.0.1:$D_PORT
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2" | head -1; }

# a window that answered nothing (a busy machine can leave the daemon or
# the generator without a CPU for all of it) is run again, twice as long
# each time, up to 16 s: only a loop that never answers fails
for d in 1 2 4 8 16; do
    load -P text -s "$A" -c 4 -k 1000 -f -R 2000 -D $d -w 0.2 -q -j "$RC_TMP/open.json"
    rc=$?
    got=$(field requests "$RC_TMP/open.json")
    [ $rc -ne 0 ] || [ "${got:-0}" -gt 0 ] && break
    echo "note: open loop: no request answered in a window of $d s; its report:"
    cat "$RC_TMP/open.json"
done
check "mdc-load --rate 2000 ran" 0 $rc
n=$(field scheduled "$RC_TMP/open.json")
e=$(field errors "$RC_TMP/open.json")
r=$(field rate "$RC_TMP/open.json")
check "open loop: no errors" 0 "$e"
check "open loop: offered rate in the report" 2000 "$r"
due=$((2000 * d))
if [ "${n:-0}" -ge $((due - 2)) ] && [ "${n:-0}" -le $((due + 2)) ]; then
    ok "open loop: $n requests due in $d s at 2000/s"
else
    fail "open loop: $n requests due in $d s at 2000/s (expected $due)"
fi
if [ "${got:-0}" -gt 0 ]; then ok "open loop: $got answered in the window"
else fail "open loop: no request answered in the window"; fi

load -P text -s "$A" -c 4 -k 1000 -D 1 -w 0.2 -q -j "$RC_TMP/closed.json"
check "closed loop: no schedule" 0 "$(field scheduled "$RC_TMP/closed.json")"
check "closed loop: no errors" 0 "$(field errors "$RC_TMP/closed.json")"
rc_finish
